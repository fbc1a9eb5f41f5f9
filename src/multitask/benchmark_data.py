"""The data of the main job, ``multitask benchmark``: a named data set or the user's arrays.

:class:`BenchmarkData` holds one multi-task data set as the benchmark needs it: per-task
arrays (long format grouped by task) or a design shared by all tasks with one target column
per task, the kind of problem (regression, binary or multi-class classification, counts with
an optional exposure, a quantile, heavy tails: :mod:`multitask.benchmark_kinds`), the task
names, and what the user said about the tasks (their order in time, a graph between them).
:func:`make_benchmark_data` builds it from arrays in the library's three layouts and detects
the kind of problem; :func:`load_benchmark_data` loads a data set of
:mod:`multitask.datasets` by name (:data:`DATASETS`); :func:`benchmark_splits` draws the
train/test splits the benchmark scores on and standardizes the features.

Splits (the School protocol made general):

* School's official splits by default (``train_ratio=None``);
* per-task data (long format, lists): every task split at random with
  ``round(train_ratio * n_t)`` training rows (:func:`~multitask.datasets.split_tasks`),
  stratified by class within each task for classification;
* a shared design: the rows split once for all tasks (:func:`~multitask.datasets.split_shared`:
  a row is one example of every task, and the design stays stored once), every task's
  training part checked to hold both classes for classification;
* features standardized with the training part's pooled mean and standard deviation (a sparse
  design is only scaled, which keeps it sparse; every model fits an intercept per task).

Examples
--------
>>> import numpy as np
>>> from multitask.benchmark_data import make_benchmark_data
>>> rng = np.random.default_rng(0)
>>> X = rng.standard_normal((40, 3))
>>> data = make_benchmark_data(X, rng.standard_normal((40, 2)), name="toy")
>>> data.kind, data.n_tasks, data.shared
('regression', 2, True)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from multitask.benchmark_kinds import KINDS as _KINDS

__all__ = [
    "DATASETS",
    "DEFAULT_TRAIN_RATIO",
    "KINDS",
    "BenchmarkData",
    "benchmark_splits",
    "detect_kind",
    "kind_hint",
    "load_benchmark_data",
    "make_benchmark_data",
    "match_task_ids",
    "order_tasks",
]

#: Training fraction of the random splits of data sets without official splits
#: (``--train-ratio``; School's official splits are about 75% / 25% too).
DEFAULT_TRAIN_RATIO = 0.75

#: The kinds of problem the benchmark runs (:mod:`multitask.benchmark_kinds`).
KINDS = _KINDS

#: The data sets :func:`load_benchmark_data` loads by name, and what they are. Only School is
#: shipped with the package; the others are read from the data folder
#: (:func:`multitask.datasets.find_data_dir`). The splice-site data are left out: one task
#: of DNA strings, nothing to share between tasks.
DATASETS: dict[str, str] = {
    "school": "School exam scores: 139 schools, 15,362 students, 27 features, regression "
              "(shipped; 10 official splits)",
    "sarcos": "SARCOS robot arm: 7 joint torques, 4,449 rows, 21 features, regression, "
              "shared design",
    "yeast": "Yeast gene functions: 14 labels, 2,417 rows, 103 features, classification, "
             "shared design",
    "scene": "Scene images: 6 labels, 2,407 rows, 294 features, classification, shared design",
    "letters": "Handwritten letters: 7 letter pairs, 128 pixels, classification, per-task rows",
    "newsgroups": "20 Newsgroups: 4 tasks, 2,000 sparse term features, classification, "
                  "per-task rows",
    "be_mtpl97": "Belgian motor insurance claims: 80 postal districts, 163,212 policies, 10 "
                 "features, counts with exposure (Poisson)",
    "vowel": "Deterding vowels: 15 speakers, 990 rows, 10 features, 11 classes (multinomial)",
}


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
        its name as written (see :func:`match_task_ids`).
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
        Said under the table (e.g. :func:`kind_hint`).
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
    (:func:`kind_hint` says when they look like counts). A given kind is checked against the
    values: ``"regression"``, ``"quantile"`` and ``"robust"`` need numbers, ``"count"``
    non-negative numbers, ``"classification"`` exactly two distinct values,
    ``"multiclass"`` at least two.

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
        One of :data:`KINDS`.

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
    """Build :class:`BenchmarkData` from arrays in one of the library's layouts.

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
        See :func:`detect_kind` (``"auto"`` with an exposure is ``"count"``); class labels
        are coded ``0 .. K-1`` in sorted order (0 / 1 for two).
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


# ----------------------------------------------------------------------------- named sets
def _school(data_dir) -> BenchmarkData:
    from multitask.datasets import load_school

    school = load_school()
    return BenchmarkData(name="School", X=list(school.X), y=list(school.y), kind="regression",
                         task_names=[str(n) for n in school.task_names],
                         official_splits=list(school.splits), task_word="schools")


def _be_mtpl97(data_dir) -> BenchmarkData:
    from multitask.datasets import load_be_mtpl97

    d = load_be_mtpl97(data_dir)
    data = make_benchmark_data(d.X, d.y, d.task, name="beMTPL97", kind="count",
                               task_word="districts", feature_names=list(d.feature_names),
                               exposure=d.exposure, exposure_name="expo")
    return replace(data, **NAMED_DEFAULTS["be_mtpl97"])


def _vowel(data_dir) -> BenchmarkData:
    from multitask.datasets import load_vowel

    d = load_vowel(data_dir)
    data = make_benchmark_data(d.X, d.y, d.task, name="Vowel", kind="multiclass",
                               task_word="speakers", feature_names=list(d.feature_names))
    return replace(data, **NAMED_DEFAULTS["vowel"])


#: What a named data set's run does by default when it differs from the main job's defaults
#: (:class:`BenchmarkData`'s ``default_leave_out`` and ``default_splits``), so that
#: ``multitask benchmark NAME`` ends in minutes on two cores; ``--models`` and ``--splits``
#: run the rest.
NAMED_DEFAULTS: dict[str, dict] = {
    "be_mtpl97": {"default_leave_out": {
        "CappedTrace": "non-convex, fitted in stages: about 10 times the time of the others "
                       "on these 122,000 training rows",
        "CappedL1": "non-convex, fitted in stages: about 10 times the time of the others",
        "ConvexASO": "the clustered model's relaxation, with its fit on these data",
    }},
    "vowel": {},
}


def _loader(name: str) -> Callable[[Any], Any]:
    import multitask.datasets as ds

    return {"sarcos": ds.load_sarcos, "yeast": ds.load_yeast, "scene": ds.load_scene,
            "letters": ds.load_letters, "newsgroups": ds.load_newsgroups}[name]


def load_benchmark_data(name: str, data_dir: str | os.PathLike | None = None) -> BenchmarkData:
    """Load a data set of :data:`DATASETS` by name.

    Parameters
    ----------
    name : str
        A key of :data:`DATASETS` (any case).
    data_dir : str or path-like, optional
        The data folder of the data sets other than School (see
        :func:`multitask.datasets.find_data_dir`).

    Returns
    -------
    BenchmarkData

    Raises
    ------
    ValueError
        On an unknown name (listing the known ones).
    FileNotFoundError
        When the data folder or a file of the data set is missing.
    """
    key = str(name).strip().lower()
    if key not in DATASETS:
        raise ValueError(f"Unknown data set {name!r}: choose among {', '.join(DATASETS)}, or "
                         "give a file with --input.")
    if key == "school":
        return _school(data_dir)
    if key == "be_mtpl97":
        return _be_mtpl97(data_dir)
    if key == "vowel":
        return _vowel(data_dir)
    bunch = _loader(key)(data_dir)
    Y = bunch.Y if "Y" in bunch else None
    return make_benchmark_data(bunch.X if Y is not None else list(bunch.X),
                               Y if Y is not None else list(bunch.y), name=key.capitalize(),
                               task_names=list(bunch.task_names))


# ----------------------------------------------------------------------------- tasks
def _as_number(value: Any) -> float | None:
    """The value of a task id written as a number (``"01"``, ``" 1.0"``, ``1``), else None."""
    if isinstance(value, (bool, np.bool_)):
        return None
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        return None
    return number if np.isfinite(number) else None


def _id_text(value: Any) -> str:
    return str(value.item() if isinstance(value, np.generic) else value)


def match_task_ids(given: Sequence[Any], task_names: Sequence[str], *, numeric: bool = False,
                   what: str = "The list of task ids") -> list[int]:
    """The position in ``task_names`` of each id of ``given``, matched as the data keep ids.

    With ``numeric=False`` (ids read as text, the default of the data readers) an id matches
    the task whose name is the same text: ``"01"`` and ``"1"`` are two tasks, and ``1``
    (a number given in Python) is the text ``"1"``. With ``numeric=True`` (ids read as
    numbers: :attr:`BenchmarkData.numeric_ids`) an id matches the task of the same value:
    ``1``, ``"01"`` and ``"1.0"`` are task ``1``. Nothing is matched by guessing: an id that
    matches no task, or (numeric) several, is an error.

    Parameters
    ----------
    given : sequence
        Task ids (text or numbers), e.g. the ends of a graph's edges or a task order.
    task_names : sequence of str
        The data's task names.
    numeric : bool, default=False
        Match by value.
    what : str, default="The list of task ids"
        The subject of the error message (what named the ids).

    Returns
    -------
    list of int

    Raises
    ------
    ValueError
        Naming every id that is not a task of the data (with, for each, a task it differs
        from only in how it is written, when there is one) or that matches several tasks.
    """
    names = [str(n) for n in task_names]
    keys: list[Any]
    if numeric:
        values = [_as_number(n) for n in names]
        where: dict = {}
        for i, v in enumerate(values):
            where.setdefault(v, []).append(i)
        keys = [_as_number(g) for g in given]
    else:
        where = {}
        for i, n in enumerate(names):
            where.setdefault(n, []).append(i)
        keys = [_id_text(g) for g in given]
    unknown = list(dict.fromkeys(_id_text(g) for g, k in zip(given, keys, strict=True)
                                 if k is None or k not in where))
    if unknown:
        alike = {}
        for u in unknown:
            value = _as_number(u)
            twins = [n for n in names if n != u and (n.strip() == u.strip() or (
                value is not None and _as_number(n) == value))]
            if twins:
                alike[u] = twins[0]
        listed = ", ".join(repr(u) for u in unknown[:8]) + (
            f" and {len(unknown) - 8} more" if len(unknown) > 8 else "")
        shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
        hint = ""
        if alike:
            pairs = "; ".join(f"{u!r} is written {t!r} in the data"
                              for u, t in list(alike.items())[:3])
            by_value = any(_as_number(u) is not None and _as_number(u) == _as_number(t)
                           for u, t in alike.items())
            how = ("by their value" if numeric else "as written" + (
                "; read the ids as numbers (--numeric-task-ids) to make 1 and 01 one task"
                if by_value else ""))
            hint = f" ({pairs}: task ids are matched {how})"
        word = "is not a task" if len(unknown) == 1 else "are not tasks"
        raise ValueError(f"{what} names {listed}, which {word} of the data{hint} (tasks: "
                         f"{shown}).")
    for g, k in zip(given, keys, strict=True):
        if len(where[k]) > 1:
            both = ", ".join(repr(names[i]) for i in where[k])
            raise ValueError(f"{what} names {_id_text(g)!r}, which matches the tasks {both} "
                             "of the data: give the data one id per task.")
    return [where[k][0] for k in keys]


def order_tasks(data: BenchmarkData, order: Sequence[Any] | str) -> BenchmarkData:
    """The data with its tasks in time order, marked ``ordered`` (the temporal models run).

    Parameters
    ----------
    data : BenchmarkData
    order : sequence of str or numbers, ``"sorted"`` or ``"given"``
        Every task once, in time order, named as :func:`match_task_ids` matches ids (by
        value when ``data.numeric_ids``, else as written); ``"sorted"``: the names sorted (as
        numbers when they all are); ``"given"``: the order of the data as it is.

    Returns
    -------
    BenchmarkData
        A new object (``data`` is not modified); its graph, if any, is permuted alike.

    Raises
    ------
    ValueError
        When ``order`` misses a task, repeats one, or names tasks the data do not have
        (naming them all).
    """
    names = list(data.task_names)
    if isinstance(order, str):
        if order == "given":
            perm = list(range(len(names)))
        elif order == "sorted":
            try:
                keys: list = [float(n) for n in names]
            except ValueError:
                keys = names
            perm = sorted(range(len(names)), key=lambda i: keys[i])
        else:
            raise ValueError(f"The task order must list the tasks, or be 'sorted' or 'given', "
                             f"got {order!r}.")
    else:
        perm = match_task_ids(list(order), names, numeric=data.numeric_ids,
                              what="The task order")
        twice = sorted({i for i in perm if perm.count(i) > 1})
        if twice:
            raise ValueError(f"The task order names task {names[twice[0]]!r} twice.")
        missing = [n for i, n in enumerate(names) if i not in set(perm)]
        if missing:
            raise ValueError(f"The task order must name every task once; it misses "
                             f"{len(missing)}, e.g. {missing[0]!r}.")
    if data.shared:
        X, y = data.X, data.y[:, perm]
    else:
        X, y = [data.X[i] for i in perm], [data.y[i] for i in perm]
    splits = None
    if data.official_splits is not None:
        splits = [{k: [s[k][i] for i in perm] for k in s} for s in data.official_splits]
    graph = None if data.graph is None else data.graph[np.ix_(perm, perm)]
    exposure = data.exposure
    if exposure is not None and not data.shared:
        exposure = [exposure[i] for i in perm]
    return replace(data, X=X, y=y, task_names=[names[i] for i in perm], ordered=True,
                   official_splits=splits, graph=graph, exposure=exposure)


# ----------------------------------------------------------------------------- splits
def _power_of_two_scale(absmax: np.ndarray) -> np.ndarray:
    """Per column, the power of two ``2**-e`` that brings its largest magnitude into
    ``[0.5, 1)`` (1 for a column of zeros; ``e`` is kept within ``[-1000, 1000]``).

    Multiplying by a power of two is exact (no rounding, away from the subnormal range), so
    moments computed on the scaled columns and scaled back are those of the columns
    themselves, without the overflow of squares of entries above about ``1e154`` or the
    underflow of squares below about ``1e-154``.
    """
    _, exponent = np.frexp(absmax)
    return np.ldexp(1.0, np.clip(-exponent.astype(np.int64), -1000, 1000))


def _feature_name(names: list[str] | None, j: int) -> str:
    return repr(names[j]) if names is not None else f"{j} (position, from 0)"


def _standardize(X_tr: Any, X_te: Any, feature_names: list[str] | None = None,
                 split: int = 0) -> tuple[Any, Any]:
    """Scale (and, dense, center) both parts with the training part's pooled moments.

    Dense: ``(x - mu) / sd`` with ``mu``, ``sd`` the mean and standard deviation of each
    feature over the pooled training rows (``sd = 1`` for a constant feature). Sparse: ``x / sd``
    (centering would fill the matrix). The moments are computed on each column scaled by a
    power of two (:func:`_power_of_two_scale`): the same numbers as on the column itself, and
    no overflow for entries up to the largest float.

    Raises
    ------
    ValueError
        When a standardized entry is not finite or exceeds
        :data:`multitask.data.MAX_ABS_VALUE` in magnitude (a test value that far from a
        training part that is nearly constant), naming the feature and the split.
    """
    lists = isinstance(X_tr, list)
    pooled = (sp.vstack(X_tr, format="csr") if sp.issparse(X_tr[0]) else np.vstack(X_tr)) \
        if lists else X_tr
    if sp.issparse(pooled):
        absmax = np.asarray(abs(pooled).max(axis=0).todense()).ravel().astype(np.float64)
        c = _power_of_two_scale(absmax)
        scaled = pooled @ sp.diags(c)
        mean = np.asarray(scaled.mean(axis=0)).ravel()
        sq = np.asarray(scaled.multiply(scaled).mean(axis=0)).ravel()
        sd = np.sqrt(np.maximum(sq - mean ** 2, 0.0))
        sd[sd == 0] = c[sd == 0]  # a constant column keeps its values (sd = 1)
        scale = sp.diags(c / sd)

        def f(x):
            with np.errstate(over="ignore", invalid="ignore"):  # checked below
                return sp.csr_matrix(x @ scale)
    else:
        absmax = np.max(np.abs(pooled), axis=0) if pooled.shape[0] else np.zeros(
            pooled.shape[1])
        c = _power_of_two_scale(absmax)
        scaled = pooled * c
        mu, sd = scaled.mean(axis=0), scaled.std(axis=0)
        sd[sd == 0] = c[sd == 0]  # a constant column: (x - mu) / 1

        def f(x):
            with np.errstate(over="ignore", invalid="ignore"):  # checked below
                return (x * c - mu) / sd
    if lists:
        out_tr, out_te = [f(x) for x in X_tr], [f(x) for x in X_te]
    else:
        out_tr, out_te = f(X_tr), f(X_te)
    from multitask.data import MAX_ABS_VALUE

    parts: list[Any] = [*out_tr, *out_te] if lists else [out_tr, out_te]
    for part in parts:
        vals = part.data if sp.issparse(part) else part
        with np.errstate(invalid="ignore"):
            fine = np.isfinite(vals) & (np.abs(vals) <= MAX_ABS_VALUE)
        if not np.all(fine):
            dense = part.toarray() if sp.issparse(part) else part
            with np.errstate(invalid="ignore"):
                bad = np.flatnonzero(~(np.isfinite(dense) & (np.abs(dense) <= MAX_ABS_VALUE)
                                       ).all(axis=0))
            raise ValueError(f"Feature {_feature_name(feature_names, int(bad[0]))}: a value of "
                             f"the test part of split {split} (numbered from 0, as in "
                             f"splits.csv) lies more than {MAX_ABS_VALUE:g} standard deviations "
                             "of the training part from its mean, beyond what the solvers "
                             "handle: the training part of that column is (nearly) constant "
                             "next to it; rescale or drop the column.")
    return out_tr, out_te


def _check_both_classes(y_tr: Any, names: list[str], split: int) -> None:
    columns = y_tr.T if not isinstance(y_tr, list) else y_tr
    for t, v in enumerate(columns):
        if v.min() == v.max():
            raise ValueError(f"Task {names[t]!r}: the training part of split {split} (numbered "
                             "from 0, as in splits.csv) holds one class only; raise "
                             "--train-ratio or leave the task out.")


def _check_some_test_auc(y_te: Any, split: int) -> None:
    """Refuse a split where no task's test part holds both classes (every AUC undefined)."""
    columns = y_te.T if not isinstance(y_te, list) else y_te
    if not any(v.size and v.min() != v.max() for v in columns):
        raise ValueError(f"Split {split} (numbered from 0, as in splits.csv): no task's test "
                         "part holds both classes, so every task's ROC AUC, and the AUC of "
                         "the table, is undefined; lower --train-ratio or give the tasks more "
                         "rows of the rarer class.")


def benchmark_splits(data: BenchmarkData, n_splits: int, train_ratio: float | None = None,
                     random_state: int = 0, *, with_exposure: bool = False) -> list[tuple]:
    """The train/test splits of the benchmark, features standardized.

    Parameters
    ----------
    data : BenchmarkData
    n_splits : int
        Number of splits (at most the number of official splits when those are used).
    train_ratio : float in (0, 1), optional
        Random splits with this training fraction; default: the official splits when the
        data have them, else :data:`DEFAULT_TRAIN_RATIO`.
    random_state : int, default=0
        Seed: split ``s`` is drawn with the ``s``-th integer of
        ``numpy.random.default_rng(random_state)``.
    with_exposure : bool, default=False
        Add the exposures of both parts to each split (None for data without one).

    Returns
    -------
    list of (X_train, y_train, X_test, y_test)
        Per-task lists, or arrays for a shared design; with ``with_exposure``,
        ``(X_train, y_train, X_test, y_test, exposure_train, exposure_test)``. Classification
        splits are drawn class by class within each task (binary and multi-class).

    Raises
    ------
    ValueError
        On a number of splits or a training fraction out of range, a task too small to split,
        or (classification) a training part with one class, or a split where no task's test
        part holds both classes (the AUC undefined).
    """
    if isinstance(n_splits, bool) or not isinstance(n_splits, (int, np.integer)):
        raise ValueError(f"--splits must be an integer, got {n_splits!r}.")
    official = data.official_splits if train_ratio is None else None
    if official is not None and not 1 <= n_splits <= len(official):
        raise ValueError(f"--splits must be between 1 and {len(official)} for the official "
                         f"splits, got {n_splits}.")
    if train_ratio is not None and not 0 < train_ratio < 1:
        raise ValueError(f"--train-ratio must be in (0, 1), got {train_ratio}.")
    if n_splits < 1:
        raise ValueError(f"--splits must be at least 1, got {n_splits}.")
    ratio = DEFAULT_TRAIN_RATIO if train_ratio is None else float(train_ratio)
    if official is None and not data.shared:
        small = [n for n, x in zip(data.task_names, data.X, strict=True) if x.shape[0] < 2]
        if small:
            raise ValueError(f"Task {small[0]!r} has one row: it cannot be split into a "
                             "training and a test part.")
    from multitask.datasets import split_shared, split_tasks

    classification = data.kind in ("classification", "multiclass")
    rng = np.random.default_rng(random_state)
    out = []
    for s in range(int(n_splits)):
        e_tr = e_te = None
        if official is not None:
            sp_ = official[s]
            X_tr = [x[i] for x, i in zip(data.X, sp_["train"], strict=True)]
            y_tr = [v[i] for v, i in zip(data.y, sp_["train"], strict=True)]
            X_te = [x[i] for x, i in zip(data.X, sp_["test"], strict=True)]
            y_te = [v[i] for v, i in zip(data.y, sp_["test"], strict=True)]
        elif data.shared:
            X_tr, y_tr, X_te, y_te, i_tr, i_te = split_shared(
                data.X, data.y, train_ratio=ratio, random_state=int(rng.integers(2**31)),
                return_indices=True)
            if data.exposure is not None:
                e_tr, e_te = data.exposure[i_tr], data.exposure[i_te]
        else:
            X_tr, y_tr, X_te, y_te, i_tr, i_te = split_tasks(
                data.X, data.y, train_ratio=ratio, random_state=int(rng.integers(2**31)),
                stratify=classification, return_indices=True)
            y_tr, y_te = list(y_tr), list(y_te)
            if data.exposure is not None:
                e_tr = [e[i] for e, i in zip(data.exposure, i_tr, strict=True)]
                e_te = [e[i] for e, i in zip(data.exposure, i_te, strict=True)]
        if data.kind == "classification":
            _check_both_classes(y_tr, data.task_names, s)
            _check_some_test_auc(y_te, s)
        X_tr, X_te = _standardize(X_tr, X_te, data.feature_names, s)
        out.append((X_tr, y_tr, X_te, y_te, e_tr, e_te) if with_exposure
                   else (X_tr, y_tr, X_te, y_te))
    return out
