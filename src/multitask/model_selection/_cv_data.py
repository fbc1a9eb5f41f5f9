"""The engine's view of the data: one long-format array with integer task codes (or a shared
design, or a single task), split by rows; the row weights and task labels in that view."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone

from multitask.data import is_task_list, split_task_column


def _cv_view(base, X, y, task):
    """Data in a form scikit-learn splitters and scorers handle, and the estimator for it.

    Returns ``(X, y, groups, estimator, layout)``. Per-task lists and ``task=`` input become
    long format with integer task codes appended as the last column of ``X`` (the estimator
    gets ``task_column=-1``); long format with ``task_column`` is used as is; a shared design
    (2-D ``y``) and a single task are split on rows.
    """
    est = clone(base)
    params = est.get_params(deep=False)
    if is_task_list(X):
        if task is not None:
            raise ValueError("Pass either lists of per-task arrays or task=, not both.")
        if not isinstance(y, (list, tuple)) or len(y) != len(X):
            raise ValueError(f"With a list of {len(X)} per-task designs, y must be a list of "
                             f"{len(X)} per-task targets.")
        # per-task blocks may be Python lists of lists or DataFrames, targets columns
        blocks = [sp.csr_matrix(a) if sp.issparse(a) else np.asarray(a) for a in X]
        codes = np.concatenate([np.full(a.shape[0], t) for t, a in enumerate(blocks)])
        Xs = sp.vstack(blocks, format="csr") if any(sp.issparse(a) for a in blocks) \
            else np.vstack(blocks)
        ys = np.concatenate([_one_column(v) for v in y])
        return _append_codes(Xs, codes), ys, codes, _with_task_column(est, params), "long"
    if task is not None:
        if params.get("task_column") is not None:
            raise ValueError("Pass task ids either as task= or through task_column, not both.")
        task = np.asarray(task)
        Xs = sp.csr_matrix(X) if sp.issparse(X) else np.asarray(X)
        if task.ndim != 1 or Xs.ndim != 2 or task.shape[0] != Xs.shape[0]:
            raise ValueError(f"task must be 1-D with one id per row of X ({Xs.shape[0]}), got "
                             f"shape {task.shape}.")
        _, codes = np.unique(task, return_inverse=True)
        return (_append_codes(Xs, codes), _one_column(y), codes,
                _with_task_column(est, params), "long")
    y_arr = np.asarray(y)
    if params.get("task_column") is not None:
        Xa = sp.csr_matrix(X) if sp.issparse(X) else np.asarray(X)
        _, tids = split_task_column(Xa, params["task_column"])
        return Xa, _one_column(y), tids, est, "long"
    Xa = sp.csr_matrix(X) if sp.issparse(X) else np.asarray(X)
    if y_arr.ndim == 2 and y_arr.shape[1] == 1:  # one task given as a column
        y_arr = y_arr.ravel()
    layout = "shared" if y_arr.ndim == 2 else "single"
    return Xa, y_arr, None, est, layout


def _one_column(y) -> np.ndarray:
    """Targets of long-format rows (or of one task) as a 1-D array: a one-column array or
    DataFrame is flattened, as the estimators do; any other shape is left for them to refuse."""
    y = np.asarray(y)
    return y.ravel() if y.ndim == 2 and y.shape[1] == 1 else y


def _append_codes(X, codes):
    col = np.asarray(codes, dtype=np.float64)[:, None]
    if sp.issparse(X):
        return sp.hstack([X, sp.csr_matrix(col)], format="csr")
    return np.hstack([np.asarray(X, dtype=np.float64), col])


def _with_task_column(est, params):
    if "task_column" not in params:
        raise ValueError(f"{type(est).__name__} has no task_column parameter: pass a shared "
                         "design or per-task lists it accepts.")
    return est.set_params(task_column=-1)


def _rows(X, idx):
    return X[idx]


def _cv_weights(sample_weight, X, ycv):
    """The row weights in the engine's view of the data (:func:`_cv_view`): per-task lists
    stacked like their rows (a list of per-task arrays, or one array of all rows); otherwise
    as given, one weight per row (or, for a shared design, per row and task). None without.
    """
    if sample_weight is None:
        return None
    if is_task_list(X) and isinstance(sample_weight, (list, tuple)):
        w = np.concatenate([np.asarray(v, dtype=np.float64).ravel() for v in sample_weight])
    else:
        w = np.asarray(sample_weight, dtype=np.float64)
    n = np.shape(ycv)[0]
    if w.shape[:1] != (n,):
        raise ValueError(f"sample_weight has shape {w.shape} but the data have {n} rows: give "
                         "one weight per row (a shared design: per row, or per row and task).")
    return w


def _known_mask(est, X):
    """Boolean mask of the rows of ``X`` whose task the fitted ``est`` knows (None: all)."""
    tc = getattr(est, "task_column", None)
    if tc is None or not hasattr(est, "tasks_"):
        return None
    _, tids = split_task_column(X, tc)
    known = np.isin(tids, np.asarray(est.tasks_))
    return None if known.all() else known


#: Models whose default grid was noted as holding parameters (once per model and process).


def _task_labels(X, y, task, groups, layout: str) -> np.ndarray:
    """The task labels in the order of the fitted model's ``tasks_``."""
    if is_task_list(X):
        return np.arange(len(X))
    if task is not None:
        return np.unique(np.asarray(task))
    if layout == "long":
        return np.unique(np.asarray(groups))
    y = np.asarray(y)
    return np.arange(y.shape[1] if y.ndim == 2 else 1)
