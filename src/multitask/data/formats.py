"""The three user formats, each converted by one function into :class:`MultiTaskData`.

:func:`as_multitask_data` recognizes the format and hands it to its converter, which checks
the rows and stacks them task by task (:class:`_Stacked`); one finishing step then applies the
row weights and the missing targets, encodes the class labels and builds the container:

(a) shared design (:func:`_from_shared_design`): one ``X`` for every task, ``Y`` with a column
    per task;
(b) per-task lists (:func:`_from_task_lists`): ``X = [X_1, ..., X_m]``, ``y = [y_1, ...,
    y_m]``;
(c) long format (:func:`_from_long_format`): one ``X`` and ``y`` with a task id per row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from multitask.data.checks import (
    _as_2d_float,
    _check_finite,
    _check_scale,
    _check_tasks,
    _label,
)
from multitask.data.container import MultiTaskData, _offsets_of
from multitask.data.targets import _binary_targets, _TargetRules
from multitask.data.task_ids import _task_index, split_task_column
from multitask.data.weights import _apply_weights, _list_weights, _long_weights, _shared_weights


def is_task_list(X) -> bool:
    """Whether ``X`` is a list of per-task designs (format b): a non-empty list or tuple whose
    items are all 2-D blocks (arrays, nested lists or sparse matrices)."""
    return (
        isinstance(X, (list, tuple))
        and len(X) > 0
        and all(sp.issparse(x) or np.ndim(x) == 2 for x in X)
    )


@dataclass
class _Stacked:
    """The rows of every task stacked task by task, checked, before the weights are applied.

    ``X`` (the shared design itself when ``shared``), the stacked targets ``y`` and the
    per-task targets ``ys`` (empty at predict time), the number of rows of each task
    ``sizes``, the task ``labels``, the user's row of each stacked row ``order`` (long format),
    the stacked user weights and mask of observed targets (None: none given, none missing).
    """

    X: np.ndarray | sp.csr_matrix
    y: np.ndarray
    ys: list
    sizes: np.ndarray
    labels: np.ndarray
    shared: bool = False
    order: np.ndarray | None = None
    weights: np.ndarray | None = None
    observed: np.ndarray | None = None


def as_multitask_data(
    X,
    y=None,
    task=None,
    *,
    task_column: int | None = None,
    classification: bool = False,
    classes: np.ndarray | None = None,
    known_tasks: np.ndarray | None = None,
    n_features: int | None = None,
    sample_weight=None,
    missing_targets: str | None = None,
) -> tuple[MultiTaskData, np.ndarray | None]:
    """Convert any of the three user formats into :class:`MultiTaskData`, validating it.

    Parameters
    ----------
    X : array-like (n, d), sparse matrix, or list of per-task arrays
        Shared design (format a), per-task designs (format b), or long format (format c).
    y : array-like (n,), (n, m), list of per-task targets, or None (prediction)
        Targets. A 2-D ``y`` with a single ``X`` means a shared design with one task per column.
        A 1-D ``y`` with no ``task`` means a single task.
    task : array-like (n,), optional
        Task id of each row (long format).
    task_column : int, optional
        Column of ``X`` holding the task ids (long format inside scikit-learn tools).
    classification : bool
        Targets are class labels, mapped to -1/+1 per task (binary).
    classes : ndarray of shape (2,), optional
        Known classes (at predict time, or to force the positive class ``classes[-1]``).
    known_tasks : ndarray, optional
        Task labels seen during fit: at predict time the tasks of ``X`` must be among them and
        the internal order follows ``known_tasks``.
    n_features : int, optional
        Expected number of features (predict time).
    sample_weight : array-like, optional
        Non-negative finite weights of the training rows (scikit-learn's ``sample_weight``):
        shape ``(n,)`` in long format (user order); for a shared design ``(n,)`` (each row
        weighs the same in every task) or ``(n, m)`` (one weight per row and task); for
        per-task lists a list of per-task arrays or one array of all rows in order. The loss
        of task ``t`` becomes ``sum_{i in t} w_i ell_i / sum_{i in t} w_i``: integer weights
        repeat rows, a zero weight drops one (:class:`MultiTaskData`); weights that are all
        equal change nothing and are not stored.
    missing_targets : {"error", "ignore"} or None, default=None
        What a missing target (NaN, ``None``) means: an error (``"error"``, whose message says
        how to mark it as missing; ``None``: the same error without that advice, for callers
        that offer no option) or a target that was not observed (``"ignore"``): the pair
        (row, task) then weighs zero, so the row counts only for the tasks whose target is
        observed (in long format and per-task lists the row is dropped).

    Returns
    -------
    data : MultiTaskData
    classes : ndarray or None
        The two class labels (classification) or None.

    Raises
    ------
    ValueError
        With a message naming the problem and the task: NaN or infinity, mismatched lengths, a
        task with no rows, a classification task with one class, a wrong number of features,
        an unknown task id; a weight that is negative, NaN, infinite or of the wrong shape, a
        task whose rows all weigh zero or whose targets are all missing.
    """
    predicting = y is None
    rules = _TargetRules.of(classification, missing_targets, predicting)
    if isinstance(X, (list, tuple)) and len(X) == 0:
        raise ValueError("X is an empty list: at least one task is needed.")
    if is_task_list(X):
        stacked = _from_task_lists(X, y, task, known_tasks, sample_weight, rules)
    else:
        Xa, task, Y = _one_design(X, y, task, task_column)
        if Y is not None or (predicting and task is None and known_tasks is not None
                             and len(known_tasks) > 1):
            stacked = _from_shared_design(Xa, Y, known_tasks, sample_weight, rules)
        else:
            stacked = _from_long_format(Xa, y, task, known_tasks, sample_weight, rules)
    return _finish(stacked, predicting, classification, classes, n_features, task_column)


# --------------------------------------------------------------------------- (b) lists
def _from_task_lists(X, y, task, known_tasks, sample_weight, rules: _TargetRules) -> _Stacked:
    """Format (b): the per-task designs ``X`` and targets ``y`` (None at predict time), checked
    and stacked in the order of the lists (dense ones checked once stacked)."""
    Xs, any_sparse = _task_designs(X)
    if task is not None:
        raise ValueError("Pass either lists of per-task arrays or task=, not both.")
    ys, observed = ([], None) if y is None else _task_targets(y, Xs, rules)
    labels = np.arange(len(Xs)) if known_tasks is None else np.asarray(known_tasks)
    if known_tasks is not None and len(Xs) != len(known_tasks):
        raise ValueError(
            f"X is a list of {len(Xs)} tasks but the model was fitted on {len(known_tasks)}."
        )
    sizes = np.array([Xt.shape[0] for Xt in Xs], dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    if any_sparse:
        X_all = sp.vstack(Xs, format="csr")
    else:
        X_all = np.vstack(Xs)
        _check_tasks(X_all, starts, [f"X of task {t}" for t in range(len(Xs))])
    if y is None:
        return _Stacked(X_all, np.zeros(int(sizes.sum())), [], sizes, labels)
    y_all = np.concatenate(ys)
    if not rules.classification:
        _check_tasks(y_all, starts, [f"y of task {t}" for t in range(len(ys))], rules.hint)
    weights = None if sample_weight is None else _list_weights(sample_weight, sizes)
    return _Stacked(X_all, y_all, ys, sizes, labels, weights=weights, observed=observed)


def _task_designs(X) -> tuple[list, bool]:
    """The per-task designs as float64 arrays or CSR matrices, of one number of features and
    at least one row each (sparse or mixed lists checked here for NaN and scale, dense ones
    once stacked), and whether any is sparse."""
    any_sparse = any(sp.issparse(Xt) for Xt in X)
    Xs = [_as_2d_float(Xt, f"X of task {t}", check_finite=any_sparse)
          for t, Xt in enumerate(X)]
    d = Xs[0].shape[1]
    for t, Xt in enumerate(Xs):
        if Xt.shape[1] != d:
            raise ValueError(
                f"Task {t} has {Xt.shape[1]} features but task 0 has {d}: all tasks must "
                "have the same features."
            )
        if Xt.shape[0] == 0:
            raise ValueError(f"Task {t} has no rows.")
    return Xs, any_sparse


def _task_targets(y, Xs: list, rules: _TargetRules) -> tuple[list, np.ndarray | None]:
    """The 1-D targets of each task (regression targets checked once stacked) and the stacked
    mask of the observed ones (None when none is missing); one target per row of ``Xs``."""
    if not isinstance(y, (list, tuple)) or len(y) != len(Xs):
        raise ValueError(
            f"With a list of {len(Xs)} per-task designs, y must be a list of "
            f"{len(Xs)} per-task targets."
        )
    ys, seen = [], []
    for t, yt in enumerate(y):
        yt, obs_t = rules.read(yt, f"y of task {t}", check=rules.classification)
        ys.append(yt)
        seen.append(obs_t)
    observed = None
    if any(o is not None for o in seen):
        observed = np.concatenate([np.ones(len(yt), dtype=bool) if o is None else o
                                   for yt, o in zip(ys, seen, strict=True)])
    for t, (Xt, yt) in enumerate(zip(Xs, ys, strict=True)):
        if Xt.shape[0] != len(yt):
            raise ValueError(
                f"Task {t}: X has {Xt.shape[0]} rows but y has {len(yt)} entries."
            )
    return ys, observed


# --------------------------------------------------------------------------- one design
def _one_design(X, y, task, task_column: int | None) -> tuple:
    """``(X, task, Y)`` of formats (a) and (c): ``X`` as float64 (NaN and scale checked by the
    converter, naming the row's task), the task ids taken out of column ``task_column``, and
    ``Y = y`` when ``y`` has a column per task and no task ids are given (a shared design),
    else None; ``y`` must have one entry (row) per row of ``X``."""
    Xa = _as_2d_float(X, "X", check_finite=False)  # checked by the converter, naming the task
    if task_column is not None:
        if task is not None:
            raise ValueError("Pass task ids either as task= or through task_column, not both.")
        Xa, task = split_task_column(Xa, task_column)
    n = Xa.shape[0]
    if n == 0:
        raise ValueError("X has no rows.")
    if y is None:
        return Xa, task, None
    y_arr = np.asarray(y)
    Y = None
    if y_arr.ndim == 2 and y_arr.shape[1] > 1 and task is None:
        Y = y_arr
    elif y_arr.ndim not in (1, 2):
        raise ValueError(f"y must be 1-D or 2-D, got shape {y_arr.shape}.")
    if y_arr.shape[0] != n:
        raise ValueError(f"X has {n} rows but y has {y_arr.shape[0]}.")
    return Xa, task, Y


# --------------------------------------------------------------------------- (a) shared X
def _from_shared_design(Xa, Y, known_tasks, sample_weight, rules: _TargetRules) -> _Stacked:
    """Format (a): one design ``Xa`` for every task and a column of ``Y`` per task (``Y``
    None at predict time: the model's tasks); the targets are stacked task by task."""
    n = Xa.shape[0]
    observed = None
    if Y is not None:
        m = Y.shape[1]
        cols, seen = [], []
        for t in range(m):
            col, obs_t = rules.read(Y[:, t], f"y of task {t}")
            cols.append(col)
            seen.append(np.ones(n, dtype=bool) if obs_t is None else obs_t)
        if rules.allow_missing:
            observed = np.concatenate(seen)
    else:
        assert known_tasks is not None
        m = len(known_tasks)
        cols = [np.zeros(n) for _ in range(m)]
    if known_tasks is not None and m != len(known_tasks):
        raise ValueError(
            f"y has {m} task columns but the model was fitted on {len(known_tasks)} tasks."
        )
    labels = np.arange(m) if known_tasks is None else np.asarray(known_tasks)
    _check_finite(Xa, "X")
    _check_scale(Xa, "X")
    y_all = np.concatenate(cols) if Y is not None else np.zeros(n * m)
    weights = None
    if Y is not None and sample_weight is not None:
        weights = _shared_weights(sample_weight, n, m, labels)
    return _Stacked(Xa, y_all, cols, np.full(m, n, dtype=np.int64), labels, shared=True,
                    weights=weights, observed=observed)


# --------------------------------------------------------------------------- (c) long format
def _from_long_format(Xa, y, task, known_tasks, sample_weight,
                      rules: _TargetRules) -> _Stacked:
    """Format (c): the rows of ``Xa`` and ``y`` (None at predict time) with a task id each
    (``task``; none: one task), grouped by task in a stable order (``order[k]`` is the user's
    row at stacked position ``k``); every task of the model needs a row when fitting."""
    n = Xa.shape[0]
    task, labels, inv = _task_index(task, n, known_tasks)
    _check_finite(Xa, "X", task)
    _check_scale(Xa, "X", task)
    order = np.argsort(inv, kind="stable")
    sizes = np.bincount(inv, minlength=len(labels)).astype(np.int64)
    # rows already grouped by task: the design as given (no copy; never written to, as a
    # shared design)
    Xs = Xa if bool(np.all(inv[1:] >= inv[:-1])) else Xa[order]
    if y is None:
        return _Stacked(Xs, np.zeros(n), [], sizes, labels, order=order)
    y1, observed = rules.read(np.asarray(y), "y", task)
    weights = None if sample_weight is None else _long_weights(sample_weight, n, task)[order]
    empty = np.flatnonzero(sizes == 0)
    if empty.size:
        raise ValueError(f"Task {_label(labels[empty[0]])} has no rows.")
    y_all = y1[order]
    ys = [y_all[o:e] for o, e in zip(np.r_[0, np.cumsum(sizes)[:-1]], np.cumsum(sizes),
                                     strict=True)]
    return _Stacked(Xs, y_all, ys, sizes, labels, order=order, weights=weights,
                    observed=None if observed is None else observed[order])


# --------------------------------------------------------------------------- finishing
def _finish(s: _Stacked, predicting: bool, classification: bool, classes: np.ndarray | None,
            n_features: int | None,
            task_column: int | None) -> tuple[MultiTaskData, np.ndarray | None]:
    """The common last step of every format: check the number of features, apply the row
    weights and the missing targets (:func:`~multitask.data.weights._apply_weights`), map
    class labels to ``-1 / +1``, build the container; returns ``(data, classes)``."""
    d = s.X.shape[1]
    if d == 0:
        raise ValueError("X has no feature columns" + (" besides the task column" if
                         task_column is not None else "") + ": at least one is needed.")
    if n_features is not None and d != n_features:
        raise ValueError(f"X has {d} features, but the model was fitted with {n_features}.")
    X, y, ys, sizes, order, weights = s.X, s.y, s.ys, s.sizes, s.order, s.weights
    if not predicting and (weights is not None or s.observed is not None):
        X, y, ys, sizes, order, weights = _apply_weights(
            X, y, ys, sizes, order, weights, s.observed, s.shared, s.labels)
    if classification and not predicting:
        y, classes = _binary_targets(ys, sizes, weights, s.labels, classes)
    data = MultiTaskData(X, np.asarray(y, dtype=np.float64), _offsets_of(sizes),
                         np.asarray(s.labels), s.shared, row_order=order,
                         sample_weight=weights)
    return data, (classes if classification else None)


def unstack_predictions(data: MultiTaskData, z: np.ndarray) -> np.ndarray:
    """Return stacked predictions ``z`` in the user's layout.

    Long format: rows back in the user's order, shape ``(n,)``; shared design: ``(n, m)``;
    per-task lists: the stacked ``(N,)`` vector (split with ``data.offsets``).
    """
    if data.shared:
        return z.reshape(data.n_tasks, -1).T.copy()
    order = data.row_order
    if order is None:
        return z
    out = np.empty_like(z)
    out[order] = z
    return out
