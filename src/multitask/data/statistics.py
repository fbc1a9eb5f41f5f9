"""Per-task statistics of a stacked data set: Gram matrices, spectral norms, feature means.

Each function reads a :class:`~multitask.data.MultiTaskData` (its implicit centring
``x_offset`` and its row weights ``w_i`` included) and returns arrays; the container caches
them (:meth:`~multitask.data.MultiTaskData.gram`,
:meth:`~multitask.data.MultiTaskData.task_spectral_norms_sq`) and builds the centred data sets
from them (:meth:`~multitask.data.MultiTaskData.centered`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from multitask.data.operators import (
    _centred_dense_gram,
    _centred_operator,
    _dense_task_sums_constant,
    _gram,
    _sparse_norm_sq,
    _weighted_gram,
)
from multitask.data.stacked import StackedData

#: Entries of a dense design from which its spectral norm comes from Lanczos (``svds``, a
#: few dozen products with the matrix) instead of a full SVD (``O(n d^2)`` with a large
#: constant): ``benchmarks/bench_spectral_norm.py`` measures both.
SPECTRAL_LANCZOS_ENTRIES = 10**6


# --------------------------------------------------------------------------- Gram matrices
def gram_matrices(data: StackedData) -> np.ndarray:
    """Per-task Gram matrices ``X_t^T D_t X_t`` (implicit centring applied), ``D_t`` the
    diagonal of the task's weights (the identity without weights).

    Returns shape ``(m, d, d)``, or ``(1, d, d)`` when the design is shared and its tasks
    weigh the rows alike (:attr:`~multitask.data.MultiTaskData.shares_gram`).
    """
    if data.shared:
        return _shared_grams(data)
    d, m = data.n_features, data.n_tasks
    G = np.empty((m, d, d))
    for t in range(m):
        mu = None if data.x_offset is None else data.x_offset[:, t]
        w = data.task_row_weights(t)
        G[t] = _gram(data.task_X(t), mu) if w is None else _weighted_gram(data.task_X(t), mu, w)
    return G


def _shared_grams(data: StackedData) -> np.ndarray:
    """:func:`gram_matrices` of a shared design: one matrix ``(1, d, d)`` when its tasks weigh
    the rows alike (implicit centring by the column means, the same for every task), else one
    per task over the task's rows of positive weight."""
    X, w = data.X, data.sample_weight
    n = X.shape[0]
    if not data.shares_gram:  # a Gram matrix per task, observed rows only
        d, m = data.n_features, data.n_tasks
        assert w is not None
        W2 = w.reshape(m, n)
        G = np.empty((m, d, d))
        for t in range(m):
            rows = np.flatnonzero(W2[t] > 0)
            mu = None if data.x_offset is None else data.x_offset[:, t]
            G[t] = _weighted_gram(X[rows], mu, W2[t, rows])
        return G
    mu = None if data.x_offset is None else data.x_offset[:, 0]
    if w is not None:
        return _weighted_gram(X, mu, w[:n])[None]
    if mu is not None and not sp.issparse(X):
        # a dense shared design centred implicitly: centred explicitly chunk by chunk
        # (X^T X - n mu mu^T would lose features far from zero to rounding)
        return _centred_dense_gram(X, mu)[None]
    return _gram(X, mu)[None]


# --------------------------------------------------------------------------- spectral norms
def spectral_norm_sq(data: StackedData, t: int, intercept: bool,
                     weighted: bool = False) -> float:
    """``||D^(1/2) [X_t - 1 x_offset[:, t]^T, 1]||_2^2`` (the ones only with ``intercept``;
    ``D`` the task's weights with ``weighted``, else the identity), over the task's rows of
    positive weight."""
    Xt = data.task_X(t)
    mu = None if data.x_offset is None else data.x_offset[:, t]
    if weighted:
        w = data.task_row_weights(t)
        assert w is not None
        rows = np.flatnonzero(w > 0)
        if rows.size < Xt.shape[0]:
            Xt, w = Xt[rows], w[rows]
        return _weighted_norm_sq(Xt, mu, intercept, np.sqrt(w))
    return _norm_sq(Xt, mu, intercept)


def _by_lanczos(Xt) -> bool:
    """Whether the largest singular value of ``Xt`` comes from ``svds`` (Lanczos): a sparse
    block of more than 200 columns, a dense one of :data:`SPECTRAL_LANCZOS_ENTRIES` entries
    or more (and more than 2 rows and columns)."""
    n_t, d = Xt.shape
    if sp.issparse(Xt):
        return d > 200
    return n_t * d >= SPECTRAL_LANCZOS_ENTRIES and min(n_t, d) > 2


def _weighted_norm_sq(Xt, mu: np.ndarray | None, intercept: bool, root: np.ndarray) -> float:
    """``||diag(root) [Xt - 1 mu^T, 1]||_2^2`` (the ones only with ``intercept``; ``mu`` None:
    no centring)."""
    from scipy.sparse.linalg import svds

    n_t, d = Xt.shape
    if _by_lanczos(Xt):
        op = _centred_operator(Xt, np.zeros(d) if mu is None else mu, intercept, root)
        if min(op.shape) - 1 >= 1:
            return float(svds(op, k=1, return_singular_vectors=False,
                              random_state=0)[0] ** 2)
    if sp.issparse(Xt):
        return _sparse_norm_sq(Xt, mu, intercept, root)
    Xd = np.asarray(Xt)
    if mu is not None:
        Xd = Xd - mu[None, :]
    if intercept:
        Xd = np.hstack([Xd, np.ones((n_t, 1))])
    Xd = Xd * root[:, None]
    return float(np.linalg.norm(Xd, 2) ** 2) if Xd.size else 0.0


def _norm_sq(Xt, mu: np.ndarray | None, intercept: bool) -> float:
    """``||[Xt - 1 mu^T, 1]||_2^2`` (the ones only with ``intercept``; ``mu`` None: no
    centring), the centring applied implicitly as in :func:`gram_matrices`."""
    from scipy.sparse.linalg import svds

    n_t, d = Xt.shape
    if _by_lanczos(Xt):
        if mu is not None:  # the implicit centring, as in gram_matrices()
            op = _centred_operator(Xt, mu, intercept)
        elif intercept:
            op = (sp.hstack([Xt, np.ones((n_t, 1))]).tocsr() if sp.issparse(Xt)
                  else _centred_operator(Xt, np.zeros(d), True))
        else:
            op = Xt
        if min(op.shape) - 1 >= 1:
            return float(svds(op, k=1, return_singular_vectors=False,
                              random_state=0)[0] ** 2)
    if sp.issparse(Xt):
        return _sparse_norm_sq(Xt, mu, intercept, None)
    if mu is not None:
        Xt = Xt - mu[None, :]
    if intercept:
        Xt = np.hstack([Xt, np.ones((n_t, 1))])
    return float(np.linalg.norm(Xt, 2) ** 2) if Xt.size else 0.0


# --------------------------------------------------------------------------- feature means
def dense_means(data: StackedData,
                yc: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(mu, constant, X^T D yc)`` of a dense per-task design in one pass (the last zeros
    when ``yc`` is empty; ``D`` the weights); see :func:`means_and_constant`."""
    sizes = data.task_sizes
    w = np.zeros(0) if data.sample_weight is None else data.sample_weight
    sums, first, const, xty = (A.T for A in _dense_task_sums_constant(
        np.ascontiguousarray(data.X, dtype=np.float64),
        np.asarray(data.offsets, dtype=np.int64), np.asarray(yc, dtype=np.float64), w))
    # a task of weighted data always weighs more than zero (as_multitask_data)
    total = (np.maximum(sizes, 1) if data.sample_weight is None
             else data.task_weight_sums)
    x_mean = np.ascontiguousarray(sums) / total[None, :]
    const = np.ascontiguousarray(const & (sizes > 0)[None, :])
    x_mean[const] = first[const]
    return x_mean, const, np.ascontiguousarray(xty)


def means_and_constant(data: StackedData) -> tuple[np.ndarray, np.ndarray]:
    """Per-task feature means ``mu[:, t] = (1/W_t) sum_{i in task t} w_i x_i``, shape
    ``(d, m)`` (``w_i = 1``, ``W_t = n_t`` without weights), and the boolean ``(d, m)`` mask
    of the (feature, task) cells whose column is constant within the task, where ``mu`` is
    that constant exactly.

    See :meth:`~multitask.data.MultiTaskData.x_means_and_constant`.
    """
    m, d = data.n_tasks, data.n_features
    if data.shared and not data.shares_gram:
        return _shared_task_means(data)
    if data.shared:
        return _shared_means(data)
    if not d:
        return np.zeros((d, m)), np.zeros((d, m), dtype=bool)
    if not sp.issparse(data.X):  # one pass: sums and constancy together
        return dense_means(data, np.zeros(0))[:2]
    return _sparse_task_means(data)


def _shared_means(data: StackedData) -> tuple[np.ndarray, np.ndarray]:
    """:func:`means_and_constant` of a shared design whose tasks weigh the rows alike: the
    columns' (weighted) means over all rows, a constant column's exactly, for every task."""
    m, d = data.n_tasks, data.n_features
    X = data.X
    if data.sample_weight is None:
        mu = np.asarray(X.mean(axis=0)).ravel()
    else:
        w = data.sample_weight[: X.shape[0]]
        mu = np.asarray(X.T @ w).ravel() / float(w.sum())
    const1 = np.zeros(d, dtype=bool)
    if data.n_rows and d:
        lo = np.asarray(X.min(axis=0).toarray() if sp.issparse(X)
                        else X.min(axis=0)).ravel()
        hi = np.asarray(X.max(axis=0).toarray() if sp.issparse(X)
                        else X.max(axis=0)).ravel()
        const1 = lo == hi
        mu = np.where(const1, lo, mu)
    return (np.repeat(mu[:, None], m, axis=1), np.repeat(const1[:, None], m, axis=1))


def _sparse_task_means(data: StackedData) -> tuple[np.ndarray, np.ndarray]:
    """:func:`means_and_constant` of a sparse per-task design: the means from one product
    ``X^T w``; a cell is constant when the task's ``n_t`` stored values of the column are all
    equal, or when the column stores no value in the task (a zero column)."""
    m, d = data.n_tasks, data.n_features
    sizes = data.task_sizes
    constant = np.zeros((d, m), dtype=bool)
    if data.sample_weight is None:
        x_mean = data.rmatvec(np.ones(data.n_rows)) / np.maximum(sizes, 1)[None, :]
    else:  # the rows of per-task data weigh more than zero (as_multitask_data)
        x_mean = data.rmatvec(data.sample_weight) / data.task_weight_sums[None, :]
    if np.any(sizes > 0):  # sparse: (task, feature) cells whose n_t stored values are all equal
        coo = sp.coo_matrix(data.X)
        key = data.task_of_row[coo.row].astype(np.int64) * d + coo.col
        order = np.argsort(key, kind="stable")
        key, vals = key[order], coo.data[order]
        cells, starts = np.unique(key, return_index=True)
        lo = np.minimum.reduceat(vals, starts)
        hi = np.maximum.reduceat(vals, starts)
        counts = np.diff(np.append(starts, key.size))
        t_of, j_of = np.divmod(cells, d)
        const = (lo == hi) & (counts == sizes[t_of])
        x_mean[j_of[const], t_of[const]] = lo[const]
        constant[j_of[const], t_of[const]] = True
        stored = np.zeros((d, m), dtype=bool)  # cells with no stored value: zero columns
        stored[j_of, t_of] = True
        constant |= ~stored & (sizes > 0)[None, :]
    return x_mean, constant


def _shared_task_means(data: StackedData) -> tuple[np.ndarray, np.ndarray]:
    """:func:`means_and_constant` of a shared design whose tasks weigh the rows
    differently: weighted means per task from one product ``X^T W``; a column constant
    over all rows is constant in every task, and a column whose weighted spread within a
    task is below ``1e-8`` of its mean square is checked exactly (``min == max``) on the
    task's rows of positive weight."""
    X = data.X
    n = X.shape[0]
    m, d = data.n_tasks, data.n_features
    assert data.sample_weight is not None
    W2 = data.sample_weight.reshape(m, n)
    total = W2.sum(axis=1)
    mu = np.asarray(X.T @ W2.T) / total[None, :]
    constant = np.zeros((d, m), dtype=bool)
    if not (n and d):
        return mu, constant
    lo = np.asarray(X.min(axis=0).toarray() if sp.issparse(X) else X.min(axis=0)).ravel()
    hi = np.asarray(X.max(axis=0).toarray() if sp.issparse(X) else X.max(axis=0)).ravel()
    everywhere = lo == hi
    constant[everywhere] = True
    mu[everywhere] = lo[everywhere][:, None]
    X2 = sp.csr_matrix(X).multiply(X) if sp.issparse(X) else X * X
    mean_sq = np.asarray(X2.T @ W2.T) / total[None, :]
    spread = mean_sq - mu * mu
    candidate = ~everywhere[:, None] & (spread <= 1e-8 * mean_sq)
    for t in np.flatnonzero(candidate.any(axis=0)):
        cols = np.flatnonzero(candidate[:, t])
        sub = X[np.flatnonzero(W2[t] > 0)][:, cols]
        sub = sp.csr_matrix(sub).toarray() if sp.issparse(sub) else np.asarray(sub)
        same = sub.min(axis=0) == sub.max(axis=0)
        constant[cols[same], t] = True
        mu[cols[same], t] = sub[0, same]
    return mu, constant
