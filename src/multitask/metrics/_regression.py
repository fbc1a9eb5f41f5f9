"""Regression metrics: the pooled MSE, the nMSE pooled or averaged over tasks, the error of
weights on a design."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from multitask.metrics._layouts import Layout, _say_skipped, _weight_matrices, per_task
from multitask.metrics._weights import _weighted_pairs, _wmean, _wvar


def mse(y_true: Layout, y_pred: Layout, task: ArrayLike | None = None, *,
        sample_weight: Layout | None = None) -> float:
    """Pooled mean squared error ``(1/N) sum_t ||y_t - f_t||^2``.

    With ``sample_weight``, ``sum_t sum_i w_i (y_i - f_i)^2 / sum_t sum_i w_i`` (integer
    weights give the error of the repeated rows, zero weights leave pairs out).

    Parameters
    ----------
    y_true, y_pred : array (n, m), array (n,) with ``task``, or lists of per-task arrays
    task : array (n,), optional
    sample_weight : the layout of ``y_true`` (or ``(n,)`` for 2-D ``y_true``), optional
        Non-negative weights (see :func:`nmse`).

    Returns
    -------
    float
    """
    if sample_weight is not None:
        trip = _weighted_pairs(y_true, y_pred, task, sample_weight)
        return (sum(float(w @ (a - b) ** 2) for a, b, w in trip)
                / sum(float(w.sum()) for _, _, w in trip))
    rows = _pooled_rows(y_true, y_pred, task)
    if rows is not None:
        return float(np.sum((rows[0] - rows[1]) ** 2)) / len(rows[0])
    pairs = per_task(y_true, y_pred, task)
    sse = sum(float(np.sum((a - b) ** 2)) for a, b in pairs)
    return sse / sum(len(a) for a, _ in pairs)


def _pooled_rows(y_true: Layout, y_pred: Layout, task: ArrayLike | None
                 ) -> tuple[np.ndarray, np.ndarray] | None:
    """``(y_true, y_pred)`` as 1-D arrays of numbers when the pooled figures need no per-task
    split: one value per row (one task, or long format with ``task``, every task with a row:
    its ids all equal themselves) or a 2-D array of a column per task (with a row), as
    :func:`per_task` would check; ``None`` for the other layouts and for input
    :func:`per_task` refuses (it then says why)."""
    if isinstance(y_true, (list, tuple)) or isinstance(y_pred, (list, tuple)):
        return None
    yt, yp = np.asarray(y_true), np.asarray(y_pred)
    if (yt.ndim not in (1, 2) or yt.shape != yp.shape or not yt.size
            or yt.dtype.kind not in "fiu" or yp.dtype.kind not in "fiu"):
        return None
    if yt.ndim == 2:  # a column per task: the task ids are not read
        return yt.ravel(), yp.ravel()
    if task is not None:
        ids = np.asarray(task)
        if (ids.shape != yt.shape or ids.dtype.kind == "O"
                or (ids.dtype.kind in "fc" and bool(np.isnan(ids).any()))):
            return None
    return yt, yp


def rmse(y_true: Layout, y_pred: Layout, task: ArrayLike | None = None, *,
         sample_weight: Layout | None = None) -> float:
    """Pooled root mean squared error ``sqrt((1/N) sum_t ||y_t - f_t||^2)`` (weighted as
    :func:`mse`)."""
    return float(np.sqrt(mse(y_true, y_pred, task, sample_weight=sample_weight)))


def nmse(
    y_true: Layout, y_pred: Layout, task: ArrayLike | None = None, *, average: str = "pooled",
    skip_undefined: bool = False, sample_weight: Layout | None = None,
) -> float:
    """Normalized mean squared error.

    ``average="pooled"``: ``mse / Var(y)``, the pooled MSE over the variance of all test
    targets pooled. ``average="task"``: ``(1/m) sum_t MSE_t / Var(y_t)`` (see :func:`amse`).

    Parameters
    ----------
    y_true, y_pred : array (n, m), array (n,) with ``task``, or lists of per-task arrays
    task : array (n,), optional
    average : {"pooled", "task"}, default="pooled"
    skip_undefined : bool, default=False
        ``average="task"``: leave out the tasks whose test targets are constant
        (``Var(y_t) = 0``: their term is undefined) and average over the others, with a
        ``UserWarning`` saying how many and which were left out (``m`` is then the number
        of tasks kept). Default: such a task raises.
    sample_weight : the layout of ``y_true``, optional
        Non-negative weights of the (row, task) pairs: ``(n,)`` with 1-D ``y_true``; ``(n,)``
        (a weight per row, for every task) or ``(n, m)`` with 2-D ``y_true``; a list of
        per-task arrays with lists. Means and variances become weighted (``sum_i w_i v_i /
        sum_i w_i``): integer weights give the figure of the repeated rows; pairs of weight
        zero are left out (the scorers pass the missing targets that way).

    Raises
    ------
    ValueError
        When the variance in the denominator is 0 (constant targets; with
        ``skip_undefined``, when every task's targets are constant).
    """
    rows = (_pooled_rows(y_true, y_pred, task)
            if average == "pooled" and sample_weight is None else None)
    if rows is not None:  # one pass over the rows: no per-task split
        var = _wvar(rows[0], None)
        if var == 0:
            raise ValueError("The test targets are constant: nMSE is undefined.")
        return mse(y_true, y_pred, task) / var
    trip = _weighted_pairs(y_true, y_pred, task, sample_weight,
                           scale="task" if average == "task" else "pooled")
    pairs = [(a, b) for a, b, _ in trip]
    if average == "pooled":
        allv = np.concatenate([a for a, _ in pairs])
        allw = None if sample_weight is None else np.concatenate([w for _, _, w in trip])
        var = _wvar(allv, allw)
        if var == 0:
            raise ValueError("The test targets are constant: nMSE is undefined.")
        if sample_weight is None:
            return mse(y_true, y_pred, task) / var
        return _wmean(np.concatenate([(a - b) ** 2 for a, b in pairs]), allw) / var
    if average == "task":
        vals, skipped = [], []
        for t, (a, b, w) in enumerate(trip):
            v = _wvar(a, w)
            if v == 0:
                if skip_undefined:
                    skipped.append(t)
                    continue
                raise ValueError(f"Task {t} has constant test targets: its nMSE is undefined "
                                 "(skip_undefined=True leaves such tasks out).")
            vals.append(_wmean((a - b) ** 2, w) / v)
        if skipped:
            _say_skipped("nMSE", skipped, len(pairs), "constant test targets")
        return float(np.mean(vals))
    raise ValueError(f"average must be 'pooled' or 'task', got {average!r}.")


def amse(y_true: Layout, y_pred: Layout, task: ArrayLike | None = None, *,
         skip_undefined: bool = False, sample_weight: Layout | None = None) -> float:
    """Task-averaged normalized MSE ``(1/m) sum_t MSE_t / Var(y_t)``.

    ``skip_undefined=True`` leaves out the tasks whose test targets are constant (with a
    ``UserWarning`` giving their number); by default such a task raises a ValueError. See
    :func:`nmse` (also for ``sample_weight``).
    """
    return nmse(y_true, y_pred, task, average="task", skip_undefined=skip_undefined,
                sample_weight=sample_weight)



def design_mse(
    W_true: ArrayLike, W: ArrayLike, X: Any, task: ArrayLike | None = None
) -> float:
    """Error of the weights on a design: ``(1/N) sum_t ||X_t (w_t - w*_t)||^2``.

    Han & Zhang, "Multi-stage multi-task learning with reduced rank", write it
    ``(1/(m n)) sum_t (w_t - w*_t)^T X_t^T X_t (w_t - w*_t)`` for ``n`` rows per task; it is
    the pooled MSE of the predictions ``X_t w_t`` against the noiseless targets
    ``X_t w*_t``.

    Parameters
    ----------
    W_true, W : array-like of shape (n_features, n_tasks)
        True and estimated weights, one column per task.
    X : list of per-task designs (n_t, n_features), or an array (n, n_features)
        A 2-D array is the design of every task (shared), or with ``task`` the rows of all
        tasks in long format. Sparse matrices are accepted.
    task : array (n,), optional
        Task of each row of ``X``; the sorted unique ids are the columns of ``W``.

    Returns
    -------
    float
    """
    A, B = _weight_matrices(W_true, W)
    m = A.shape[1]
    if isinstance(X, (list, tuple)):
        designs, cols = list(X), list(range(len(X)))
    elif task is None:
        designs, cols = [X] * m, list(range(m))
    else:
        task = np.asarray(task)
        ids = np.unique(task)
        designs, cols = [X[task == t] for t in ids], list(range(len(ids)))
    if len(designs) != m:
        raise ValueError(f"X holds {len(designs)} tasks but W has {m} columns.")
    sse, n_rows = 0.0, 0
    for X_t, t in zip(designs, cols, strict=True):
        if X_t.shape[1] != A.shape[0]:
            raise ValueError(f"Task {t}: X has {X_t.shape[1]} features but W has {A.shape[0]}.")
        sse += float(np.sum(np.asarray(X_t @ (B[:, t] - A[:, t])).ravel() ** 2))
        n_rows += X_t.shape[0]
    if n_rows == 0:
        raise ValueError("X has no rows.")
    return sse / n_rows

