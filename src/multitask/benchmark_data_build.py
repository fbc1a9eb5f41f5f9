"""The data of ``multitask benchmark`` built from arrays: :class:`BenchmarkData`, the kind
of problem detected from the targets, and the checks of the three layouts
(:func:`~multitask.benchmark_data.make_benchmark_data`). Every public name here is
importable from :mod:`multitask.benchmark_data`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from multitask.benchmark_kinds import KINDS

__all__ = ["BenchmarkData", "detect_kind", "kind_hint", "make_benchmark_data"]


@dataclass
class BenchmarkData:
    """One multi-task data set, as the benchmark runs it.

    Attributes
    ----------
    name : str
        Shown in the table's title and the figure (``"School"``, a file name).
    X : list of m arrays of shape (n_t, d), or array of shape (n, d)
        Per-task designs (dense or scipy.sparse), or one design shared by all tasks.
    y : list of m arrays of shape (n_t,), or array of shape (n, m)
        Per-task targets, or one column per task for a shared design. Classification targets
        are coded 0 / 1 (1 is ``classes[1]``), multi-class ones ``0 .. K-1`` (the position in
        ``classes``); counts are the counts (not the rates).
    kind : {"regression", "classification", "count", "multiclass", "quantile", "robust"}
        See :mod:`multitask.benchmark_kinds`.
    task_names : list of str
        One per task, in the order of the tasks.
    classes : tuple or None
        Classification: the labels as given, sorted: ``(negative, positive)`` for two.
    official_splits : list of dict or None
        Per-task row indices ``{"train": [...], "test": [...]}`` (School's splits).
    task_word : str
        What a task is called in the table (``"schools"``; default ``"tasks"``).
    ordered : bool
        The order of the tasks is meaningful (time points): the temporal models run.
    graph : ndarray of shape (m, m) or None
        Symmetric non-negative weights between the tasks (a task graph): the
        graph-regularized model runs with it.
    numeric_ids : bool
        The task ids were numbers (``task_names`` are their text): a task order or a graph
        names a task by its value (``1``, ``"01"`` and ``"1.0"`` are task ``1``); otherwise by
        its name as written (see :func:`~multitask.benchmark_data.match_task_ids`).
    feature_names : list of str or None
        One per feature column (the file's column names), used to name a feature in error
        messages; None: features are named by their position.
    exposure : list of m arrays of shape (n_t,), array of shape (n,), or None
        ``count`` only: the exposure of each row (> 0; one per row of a shared design, the
        same for every task). The models fit the rate ``y / exposure`` with
        ``sample_weight=exposure``.
    exposure_name : str or None
        What the exposure is called (its column), for the table's header.
    notes : list of str
        Said under the table (e.g. :func:`~multitask.benchmark_data.kind_hint`).
    default_leave_out : dict or None
        The models a run leaves out when none are named (a named data set's defaults), by
        name without ``Regressor`` / ``Classifier``, with why; None: every model that applies
        runs. ``--models`` runs them.
    default_splits : int or None
        The splits a run draws when their number is not given; None:
        :data:`multitask.benchmark.DEFAULT_SPLITS`.
    """

    name: str
    X: Any
    y: Any
    kind: str
    task_names: list[str]
    classes: tuple | None = None
    official_splits: list[dict] | None = None
    task_word: str = "tasks"
    ordered: bool = False
    graph: np.ndarray | None = field(default=None, repr=False)
    numeric_ids: bool = False
    feature_names: list[str] | None = field(default=None, repr=False)
    exposure: Any = field(default=None, repr=False)
    exposure_name: str | None = None
    notes: list[str] = field(default_factory=list)
    default_leave_out: dict[str, str] | None = None
    default_splits: int | None = None

    @property
    def shared(self) -> bool:
        """Whether the design is shared by all tasks (``y`` is one 2-D array)."""
        return not isinstance(self.X, list)

    @property
    def n_tasks(self) -> int:
        return len(self.task_names)

    @property
    def n_rows(self) -> int:
        """Rows of the data: of the shared design, or of all tasks together."""
        return int(self.X.shape[0]) if self.shared else sum(int(x.shape[0]) for x in self.X)

    @property
    def n_features(self) -> int:
        return int((self.X if self.shared else self.X[0]).shape[1])

    def describe(self) -> str:
        """One line: ``139 tasks, 15362 rows, 27 features, regression``."""
        layout = ", shared design" if self.shared else ""
        return (f"{self.n_tasks} tasks, {self.n_rows} rows, {self.n_features} features, "
                f"{self.kind}{layout}")


# ----------------------------------------------------------------------------- the kind
def _is_number(values: np.ndarray) -> bool:
    if values.dtype.kind in "biuf":
        return True
    try:
        np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return not any(isinstance(v, (str, bytes)) for v in values.tolist())


def detect_kind(values: Any, kind: str = "auto", what: str = "the targets") -> str:
    """The kind of problem, from the target values.

    ``"auto"``: two distinct values are a binary classification problem, three or more
    labels that are not numbers a multi-class problem, more numbers a regression problem
    (:func:`~multitask.benchmark_data.kind_hint` says when they look like counts). A given
    kind is checked against the values: ``"regression"``, ``"quantile"`` and ``"robust"``
    need numbers, ``"count"`` non-negative numbers, ``"classification"`` exactly two
    distinct values, ``"multiclass"`` at least two.

    Parameters
    ----------
    values : array-like
        Every target value (all tasks together).
    kind : {"auto", "regression", "classification", "count", "multiclass", "quantile", \
"robust"}, default="auto"
    what : str
        Names the targets in error messages.

    Returns
    -------
    str
        One of :data:`~multitask.benchmark_data.KINDS`.

    Raises
    ------
    ValueError
        Naming the values when they fit no kind, or not the given one.
    """
    if kind not in ("auto", *KINDS):
        raise ValueError(f"The kind of problem must be 'auto' or one of {', '.join(KINDS)}, "
                         f"got {kind!r}.")
    values = np.asarray(values).ravel()
    if values.size == 0:
        raise ValueError(f"{what} hold no value.")
    numbers = _is_number(values)
    distinct = np.unique(values.astype(np.float64) if numbers else values.astype(str))
    shown = ", ".join(repr(v.item() if isinstance(v, np.generic) else v)
                      for v in distinct[:5]) + (", ..." if distinct.size > 5 else "")
    if distinct.size < 2:
        raise ValueError(f"{what} hold a single value ({shown}): nothing to predict.")
    if kind in ("regression", "count", "quantile", "robust") and not numbers:
        raise ValueError(f"{what} are not numbers ({shown}): a {kind} problem needs numbers.")
    if kind == "count" and float(distinct[0]) < 0:
        raise ValueError(f"{what} hold a negative value ({float(distinct[0]):g}): counts are "
                         ">= 0.")
    if kind == "classification" and distinct.size != 2:
        raise ValueError(f"{what} hold {distinct.size} distinct values ({shown}): a binary "
                         "classification needs exactly two (--kind multiclass for more).")
    if kind != "auto":
        return kind
    if distinct.size == 2:
        return "classification"
    if not numbers:
        return "multiclass"
    return "regression"


def kind_hint(values: Any, kind: str) -> str | None:
    """A note when the detected kind may not be the one meant: regression targets that are
    all non-negative integers (counts: ``--kind count``; class codes: ``--kind multiclass``).
    """
    if kind != "regression":
        return None
    v = np.asarray(values, dtype=np.float64).ravel()
    if v.size and np.all(v >= 0) and np.all(v == np.round(v)):
        top = int(v.max())
        return (f"the targets are non-negative integers (0 to {top}): if they are counts, "
                "--kind count fits Poisson models (with --exposure COL for counts over "
                "different exposures); if they are class codes, --kind multiclass")
    return None


def _classes(values: np.ndarray) -> tuple:
    """The labels, sorted (numbers by value): ``(negative, positive)`` for two."""
    if _is_number(values):
        labels = np.unique(values.astype(np.float64))
        out = tuple(int(v) if float(v).is_integer() else float(v) for v in labels)
    else:
        out = tuple(str(v) for v in np.unique(values.astype(str)))
    return out


def _encode(values: np.ndarray, classes: tuple) -> np.ndarray:
    """Codes of labels: the position of each label in ``classes`` (0 / 1 for two classes,
    1 for ``classes[1]``)."""
    if isinstance(classes[0], str):
        keys = np.asarray(values).astype(str)
        lookup = np.asarray(classes, dtype=str)
    else:
        keys = np.asarray(values, dtype=np.float64)
        lookup = np.asarray(classes, dtype=np.float64)
    return np.searchsorted(lookup, keys).astype(np.int64)


# ----------------------------------------------------------------------------- building
def _as_design(X: Any, what: str) -> Any:
    if sp.issparse(X):
        return sp.csr_matrix(X, dtype=np.float64)
    arr = np.asarray(X, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"{what} must be 2-D (rows, features), got shape {arr.shape}.")
    return arr


def _missing(v: np.ndarray) -> np.ndarray:
    """Where a target array holds NaN or None."""
    if v.dtype.kind == "f":
        return np.isnan(v)
    if v.dtype == object:
        return np.array([x is None or (isinstance(x, float) and np.isnan(x)) for x in v.tolist()],
                        dtype=bool)
    return np.zeros(v.shape, dtype=bool)


def _check_finite(X: Any, what: str) -> None:
    vals = X.data if sp.issparse(X) else X
    if not np.all(np.isfinite(vals)):
        raise ValueError(f"{what} holds NaN or infinite values.")


def make_benchmark_data(X: Any, y: Any, task: Any = None, *, name: str = "data",
                        task_names: Sequence[str] | None = None, kind: str = "auto",
                        task_word: str = "tasks",
                        feature_names: Sequence[str] | None = None, exposure: Any = None,
                        exposure_name: str | None = None) -> BenchmarkData:
    """Build :class:`~multitask.benchmark_data.BenchmarkData` from arrays in one of the
    library's layouts.

    * lists of per-task ``X_t`` and ``y_t``;
    * long format: ``X`` ``(n, d)``, ``y`` ``(n,)`` and ``task`` ``(n,)``; the tasks are
      kept in the order of their first row;
    * a shared design: ``X`` ``(n, d)`` and ``y`` ``(n, m)``.

    Parameters
    ----------
    X, y, task : see above
    name : str, default="data"
    task_names : sequence of str, optional
        Default: the task ids (long format), ``task_0``, ... otherwise.
    kind : {"auto", "regression", "classification", "count", "multiclass", "quantile", \
"robust"}, default="auto"
        See :func:`~multitask.benchmark_data.detect_kind` (``"auto"`` with an exposure is
        ``"count"``); class labels are coded ``0 .. K-1`` in sorted order (0 / 1 for two).
    task_word : str, default="tasks"
    feature_names : sequence of str, optional
        One per feature column; errors about a feature name it (default: its position).
    exposure : array-like, optional
        ``count`` only: the exposure of each row, in the layout of ``y`` (per-task lists, one
        value per row of the long format or of a shared design), every value > 0 and finite.
    exposure_name : str, optional
        What the exposure is called (its column).

    Returns
    -------
    BenchmarkData

    Raises
    ------
    ValueError
        On fewer than two tasks, a task without rows, inconsistent shapes, values that are
        not finite, regression targets beyond :data:`multitask.data.MAX_ABS_VALUE` in
        magnitude, negative counts, exposures that are not positive, or targets that fit no
        kind (naming the task).
    """
    if exposure is not None and kind == "auto":
        kind = "count"
    if exposure is not None and kind != "count":
        raise ValueError(f"An exposure goes with counts (kind 'count'), not with a {kind} "
                         "problem.")
    Xs, ys, names, exposure, numeric_ids = _tasks_of(X, y, task, exposure, task_names)
    shared = not isinstance(Xs, list)
    feature_names, names = _check_tasks(Xs, ys, names, exposure, feature_names, task_names)
    kind, ys, classes, notes = _targets(ys, names, kind, exposure, shared)
    return BenchmarkData(name=name, X=Xs, y=ys, kind=kind, task_names=names, classes=classes,
                         task_word=task_word, numeric_ids=numeric_ids,
                         feature_names=feature_names, exposure=exposure,
                         exposure_name=None if exposure is None else (exposure_name
                                                                      or "exposure"),
                         notes=notes)


def _tasks_of(X: Any, y: Any, task: Any, exposure: Any,
              task_names: Sequence[str] | None) -> tuple:
    """The tasks of the three layouts of :func:`make_benchmark_data`: ``(Xs, ys, names,
    exposure, numeric_ids)``, lists of per-task arrays (lists given, or the long format
    grouped by task in the order of each task's first row), or the shared design ``X``
    ``(n, d)`` with ``Y`` ``(n, m)``."""
    if isinstance(X, (list, tuple)):
        return (*_from_lists(X, y, task, exposure), False)
    Xa = _as_design(X, "X")
    ya = np.asarray(y)
    if task is not None:
        return _from_long(Xa, ya, np.asarray(task), exposure, task_names)
    if ya.ndim == 2:
        if ya.shape[0] != Xa.shape[0]:
            raise ValueError(f"X has {Xa.shape[0]} rows but Y has {ya.shape[0]}.")
        names = [f"task_{t}" for t in range(ya.shape[1])]
        if exposure is not None:
            exposure = np.asarray(exposure, dtype=np.float64).ravel()
            if exposure.shape != (Xa.shape[0],):
                raise ValueError(f"The exposure has shape {exposure.shape}; the shared "
                                 f"design has {Xa.shape[0]} rows (one exposure per row).")
        return Xa, ya, names, exposure, False
    raise ValueError("One target column and no task ids is a single task: give the "
                     "task of each row (long format) or one target column per task.")


def _from_lists(X: Sequence, y: Any, task: Any, exposure: Any) -> tuple:
    """Per-task lists: ``(Xs, ys, names, exposure)``."""
    if task is not None:
        raise ValueError("Give either per-task lists or task ids, not both.")
    if not isinstance(y, (list, tuple)) or len(y) != len(X):
        raise ValueError(f"X is a list of {len(X)} tasks: y must be a list of as many "
                         "target arrays.")
    Xs = [_as_design(x, f"X of task {t}") for t, x in enumerate(X)]
    ys = [np.asarray(v).ravel() for v in y]
    names = [f"task_{t}" for t in range(len(Xs))]
    if exposure is not None:
        if not isinstance(exposure, (list, tuple)) or len(exposure) != len(Xs):
            raise ValueError(f"X is a list of {len(Xs)} tasks: the exposure must be a "
                             "list of as many arrays.")
        exposure = [np.asarray(e, dtype=np.float64).ravel() for e in exposure]
    return Xs, ys, names, exposure


def _from_long(Xa: Any, ya: np.ndarray, task: np.ndarray, exposure: Any,
               task_names: Sequence[str] | None) -> tuple:
    """The long format grouped by task, in the order of each task's first row: ``(Xs, ys,
    names, exposure, numeric_ids)``."""
    if ya.ndim != 1 or task.shape != (Xa.shape[0],) or ya.shape[0] != Xa.shape[0]:
        raise ValueError(f"Long format needs y and task of shape ({Xa.shape[0]},), "
                         f"got {ya.shape} and {task.shape}.")
    labels, first, inverse = np.unique(task, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    ea = None if exposure is None else np.asarray(exposure, dtype=np.float64).ravel()
    if ea is not None and ea.shape != (Xa.shape[0],):
        raise ValueError(f"The exposure has shape {ea.shape}; the data have "
                         f"{Xa.shape[0]} rows.")
    Xs, ys, es = [], [], []
    for code in order:
        rows = np.flatnonzero(inverse == code)
        Xs.append(Xa[rows])
        ys.append(ya[rows])
        if ea is not None:
            es.append(ea[rows])
    names = [str(v.item() if isinstance(v, np.generic) else v) for v in labels[order]]
    numeric_ids = task_names is None and task.dtype.kind in "iuf"
    return Xs, ys, names, es if ea is not None else None, numeric_ids


def _check_tasks(Xs: Any, ys: Any, names: list[str], exposure: Any,
                 feature_names: Sequence[str] | None,
                 task_names: Sequence[str] | None) -> tuple[list[str] | None, list[str]]:
    """Check the names, the number of tasks and each task's rows, features and exposures;
    ``(feature_names, names)`` as text (``task_names`` replace the names when given)."""
    shared = not isinstance(Xs, list)
    m = ys.shape[1] if shared else len(Xs)
    d = int((Xs if shared else Xs[0]).shape[1])
    if feature_names is not None:
        feature_names = [str(f) for f in feature_names]
        if len(feature_names) != d:
            raise ValueError(f"{len(feature_names)} feature names for {d} features.")
    if task_names is not None:
        if len(task_names) != m:
            raise ValueError(f"{len(task_names)} task names for {m} tasks.")
        names = [str(n) for n in task_names]
    if m < 2:
        raise ValueError(f"The data hold {m} task: the benchmark compares multi-task models "
                         "with independent ones and needs at least two tasks.")
    if shared:
        _check_finite(Xs, "X")
        return feature_names, names
    for t, (x, v) in enumerate(zip(Xs, ys, strict=True)):
        if x.shape[0] != v.shape[0] or x.shape[0] == 0:
            raise ValueError(f"Task {names[t]!r}: {x.shape[0]} rows in X and {v.shape[0]} "
                             "targets.")
        if x.shape[1] != Xs[0].shape[1]:
            raise ValueError(f"Task {names[t]!r} has {x.shape[1]} features, task "
                             f"{names[0]!r} {Xs[0].shape[1]}.")
        _check_finite(x, f"X of task {names[t]!r}")
        if exposure is not None and exposure[t].shape[0] != x.shape[0]:
            raise ValueError(f"Task {names[t]!r}: {x.shape[0]} rows in X and "
                             f"{exposure[t].shape[0]} exposures.")
    return feature_names, names


def _targets(ys: Any, names: list[str], kind: str, exposure: Any,
             shared: bool) -> tuple[str, Any, tuple | None, list[str]]:
    """Check the targets and the exposures, detect or check the kind, and code the targets:
    ``(kind, ys, classes, notes)``: class labels coded ``0 .. K-1`` (:func:`_encode`), other
    targets as float64 within :data:`multitask.data.MAX_ABS_VALUE`."""
    m = ys.shape[1] if shared else len(ys)
    columns = [ys[:, t] for t in range(m)] if shared else ys
    for t, v in enumerate(columns):
        if _missing(v).any():
            raise ValueError(f"The targets of task {names[t]!r} hold a missing value (NaN): "
                             "the benchmark needs every target observed; give the data in long "
                             "format, one row per observed (row, task) pair.")
    numeric = all(v.dtype.kind in "biuf" for v in columns)
    values = np.concatenate([np.asarray(v, dtype=np.float64 if numeric else object)
                             for v in columns])
    if kind == "count" and numeric:
        _check_counts(columns, names)
    if exposure is not None:
        _check_exposure(exposure, names, len(ys) if shared else None)
    asked = kind
    kind = detect_kind(values, kind)
    hint = kind_hint(values, kind) if numeric and asked == "auto" else None
    notes = [] if hint is None else [hint]
    if kind in ("classification", "multiclass"):
        classes = _classes(values)
        coded = [_encode(v, classes) for v in columns]
        for t, v in enumerate(coded):
            if kind == "classification" and v.min() == v.max():
                raise ValueError(f"Task {names[t]!r} holds only the label "
                                 f"{classes[int(v[0])]!r}: a classification task needs both "
                                 "classes.")
        return kind, (np.column_stack(coded) if shared else coded), classes, notes
    from multitask.data import MAX_ABS_VALUE

    ys = ys.astype(np.float64) if shared else [v.astype(np.float64) for v in ys]
    for t, v in enumerate(ys.T if shared else ys):
        if not np.all(np.isfinite(v)):
            raise ValueError(f"The targets of task {names[t]!r} hold infinite values.")
        top = float(np.max(np.abs(v))) if v.size else 0.0
        if top > MAX_ABS_VALUE:  # the test MSE and variance would overflow
            raise ValueError(f"The targets of task {names[t]!r} reach {top:.3g} in "
                             f"magnitude, beyond the {MAX_ABS_VALUE:g} that the solvers "
                             "and the test metrics handle without overflow: rescale them "
                             "(nMSE does not depend on the targets' scale).")
    return kind, ys, None, notes


def _check_counts(columns: list, names: list[str]) -> None:
    """Refuse negative (or infinite) counts, naming the task."""
    for t, v in enumerate(columns):
        v = np.asarray(v, dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(v) | (v < 0))
        if bad.size:
            raise ValueError(f"The targets of task {names[t]!r} hold {v[bad[0]]:g} (row "
                             f"{int(bad[0])} of the task, from 0): counts must be finite and "
                             ">= 0 (the Poisson loss).")


def _check_exposure(exposure: Any, names: list[str], n_rows: int | None) -> None:
    """Refuse exposures that are not finite and > 0, naming the task (or the row of a shared
    design)."""
    parts = [exposure] if n_rows is not None else exposure
    for t, e in enumerate(parts):
        e = np.asarray(e, dtype=np.float64)
        bad = np.flatnonzero(~(np.isfinite(e) & (e > 0)))
        if bad.size:
            where = (f"row {int(bad[0])} (from 0)" if n_rows is not None else
                     f"task {names[t]!r}, row {int(bad[0])} of the task (from 0)")
            raise ValueError(f"The exposure of {where} is {e[bad[0]]:g}: an exposure must be "
                             "finite and > 0.")

