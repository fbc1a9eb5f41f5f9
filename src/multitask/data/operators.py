"""The per-task linear operators of a stacked data set: compiled kernels and their helpers.

With the rows of task ``t`` stacked in ``X`` and ``t(i)`` the task of row ``i``, the kernels
compute the scores ``z_i = x_i^T w_{t(i)}``, the per-task gradients ``G[t] = sum_{i in t} r_i
x_i`` and the per-task sums that the means and the squared loss need, for dense and CSR
designs; the helpers give the (weighted, implicitly centred) Gram matrices and operators
``diag(root) [X - 1 mu^T, 1]`` whose spectral norms the Lipschitz constants need.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit

#: Floating-point flags of the dense per-task kernels: reassociating the dot products lets
#: them use SIMD lanes (no assumption on NaN or infinity, which the input checks exclude).
_REASSOC = {"reassoc", "contract"}
# The per-task products take and return the weights task by task, ``Wt`` of shape ``(m, d)``
# (C order): row ``i`` of task ``t`` then reads one contiguous row of ``Wt``, where a ``(d, m)``
# operand is read with a stride of ``m`` numbers (a cache miss per feature once ``m`` is in
# the thousands; the figure at 10^5 tasks: docs/tuning_constants.md).
@njit(cache=True, fastmath=_REASSOC)
def _dense_matvec(X, Wt, task_of_row):
    n, d = X.shape
    out = np.empty(n, dtype=np.float64)
    for i in range(n):
        t = task_of_row[i]
        s = 0.0
        for j in range(d):
            s += X[i, j] * Wt[t, j]
        out[i] = s
    return out


@njit(cache=True)
def _dense_rmatvec(X, R, task_of_row, n_tasks):
    n, d = X.shape
    Gt = np.zeros((n_tasks, d), dtype=np.float64)
    for i in range(n):
        t = task_of_row[i]
        r = R[i]
        if r != 0.0:
            for j in range(d):
                Gt[t, j] += X[i, j] * r
    return Gt


@njit(cache=True, fastmath=_REASSOC)
def _dense_squared_pass(X, Wt, shift, y, weights, task_of_row, n_tasks, Vt, shift_v, with_v):
    """One pass for the squared loss: with ``r_i = x_i^T w_t - shift_t - y_i``, returns
    ``(sum_i weights_i r_i^2 / 2, Gt, rsum, value at V)`` with ``Gt[t] = sum_{i in t}
    weights_i r_i x_i`` and ``rsum[t] = sum_{i in t} weights_i r_i``; with ``with_v``, the
    last is the loss at ``V`` (residuals ``x_i^T v_t - shift_v_t - y_i``) from the same pass,
    else 0. Each row is read once."""
    n, d = X.shape
    Gt = np.zeros((n_tasks, d), dtype=np.float64)
    rsum = np.zeros(n_tasks, dtype=np.float64)
    val_v = 0.0
    val = 0.0
    for i in range(n):
        t = task_of_row[i]
        s = 0.0
        for j in range(d):
            s += X[i, j] * Wt[t, j]
        if with_v:
            sv = 0.0
            for j in range(d):
                sv += X[i, j] * Vt[t, j]
            rv = sv - shift_v[t] - y[i]
            val_v += 0.5 * weights[i] * rv * rv
        r = s - shift[t] - y[i]
        wr = weights[i] * r
        val += 0.5 * wr * r
        rsum[t] += wr
        if wr != 0.0:
            for j in range(d):
                Gt[t, j] += X[i, j] * wr
    return val, Gt, rsum, val_v


@njit(cache=True)
def _dense_task_sq_sums(X, offt, task_of_row, n_tasks, weights):
    """``S[t, j] = sum_{i in t} w_i (X[i, j] - offt[t, j])^2``, shape ``(m, d)``, in one pass
    (``w_i = 1`` when ``weights`` is empty)."""
    n, d = X.shape
    S = np.zeros((n_tasks, d), dtype=np.float64)
    with_w = weights.shape[0] == n
    for i in range(n):
        t = task_of_row[i]
        if with_w:
            wi = weights[i]
            for j in range(d):
                v = X[i, j] - offt[t, j]
                S[t, j] += wi * v * v
        else:
            for j in range(d):
                v = X[i, j] - offt[t, j]
                S[t, j] += v * v
    return S


@njit(cache=True, fastmath=_REASSOC)
def _dense_task_sums_constant(X, offsets, yc, weights):
    """One pass over a design whose tasks are the row blocks ``offsets[t]:offsets[t + 1]``:
    per-task weighted column sums ``sum_i w_i x_i``, whether each column is constant within
    the task (equal to the task's first row: the sum of ``|x - first|`` is then exactly
    zero), and ``X_t^T (w_t * yc_t)`` when ``yc`` has one entry per row (zeros when it is
    empty); each of shape ``(m, d)`` (task-major, see above), with the first rows. ``w_i = 1``
    when ``weights`` is empty."""
    n, d = X.shape
    m = offsets.shape[0] - 1
    sums = np.zeros((m, d), dtype=np.float64)
    first = np.zeros((m, d), dtype=np.float64)
    differ = np.zeros((m, d), dtype=np.float64)
    xty = np.zeros((m, d), dtype=np.float64)
    with_y = yc.shape[0] == n
    with_w = weights.shape[0] == n
    s = np.empty(d)
    a = np.empty(d)
    p = np.empty(d)
    for t in range(m):
        if offsets[t + 1] == offsets[t]:
            continue
        f = X[offsets[t]]
        s[:] = 0.0
        a[:] = 0.0
        p[:] = 0.0
        for i in range(offsets[t], offsets[t + 1]):
            r = yc[i] if with_y else 0.0
            if with_w:
                wi = weights[i]
                r = r * wi
                for j in range(d):
                    x = X[i, j]
                    s[j] += wi * x
                    a[j] += abs(x - f[j])
                    p[j] += x * r
                continue
            for j in range(d):
                x = X[i, j]
                s[j] += x
                a[j] += abs(x - f[j])
                p[j] += x * r
        sums[t] = s
        first[t] = f
        differ[t] = a
        xty[t] = p
    return sums, first, differ == 0.0, xty


@njit(cache=True)
def _csr_matvec(data, indices, indptr, Wt, task_of_row):
    n = indptr.shape[0] - 1
    out = np.empty(n, dtype=np.float64)
    for i in range(n):
        t = task_of_row[i]
        s = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            s += data[k] * Wt[t, indices[k]]
        out[i] = s
    return out


@njit(cache=True)
def _csr_rmatvec(data, indices, indptr, R, task_of_row, n_features, n_tasks):
    n = indptr.shape[0] - 1
    Gt = np.zeros((n_tasks, n_features), dtype=np.float64)
    for i in range(n):
        t = task_of_row[i]
        r = R[i]
        if r != 0.0:
            for k in range(indptr[i], indptr[i + 1]):
                Gt[t, indices[k]] += data[k] * r
    return Gt


# Tasks per block in products with a shared sparse design: scipy's sparse x dense product
# streams the dense operand once per nonzero, so a (d, 64) block that stays in cache beats
# the whole (d, m) matrix when m is in the hundreds (docs/tuning_constants.md).
_SPARSE_BLOCK = 64

#: Entries of the centred chunk of rows from which the Gram matrix of a dense shared design
#: is accumulated (32 MiB).
_GRAM_CHUNK_ENTRIES = 1 << 22


def _centred_operator(Xt, mu: np.ndarray, intercept: bool, root: np.ndarray | None = None):
    """``diag(root) [Xt - 1 mu^T, 1]`` (the ones column only with ``intercept``; no row
    scaling when ``root`` is None) as a LinearOperator."""
    from scipy.sparse.linalg import LinearOperator

    n, d = Xt.shape

    def matvec(v):
        v = np.ravel(v)
        z = Xt @ v[:d] - mu @ v[:d]
        z = z + v[d] if intercept else z
        return z if root is None else root * z

    def rmatvec(u):
        u = np.ravel(u)
        if root is not None:
            u = root * u
        g = Xt.T @ u - mu * u.sum()
        return np.append(g, u.sum()) if intercept else g

    return LinearOperator((n, d + int(intercept)), matvec=matvec, rmatvec=rmatvec,
                          dtype=np.float64)


def _sparse_norm_sq(X, mu: np.ndarray | None, intercept: bool,
                    root: np.ndarray | None) -> float:
    """``||diag(root) [X - 1 mu^T, 1]||_2^2`` (the ones only with ``intercept``; ``root``
    None: no scaling) of a sparse block with few columns: the largest eigenvalue of its
    ``(d + 1) x (d + 1)`` Gram matrix, from sparse products (a dense copy of the rows would
    cost ``n d`` numbers)."""
    n, d = X.shape
    w = np.ones(n) if root is None else root * root
    G = _weighted_gram(X, mu, w)
    if intercept:
        s = np.asarray(X.T @ w).ravel()
        if mu is not None:
            s = s - float(w.sum()) * mu
        G = np.block([[G, s[:, None]], [s[None, :], np.full((1, 1), float(w.sum()))]])
    return float(max(np.linalg.eigvalsh(G)[-1], 0.0)) if G.size else 0.0


def _weighted_gram(X, mu: np.ndarray | None, w: np.ndarray) -> np.ndarray:
    """``(X - 1 mu^T)^T diag(w) (X - 1 mu^T)``, shape ``(d, d)`` (``mu`` None: no centring).

    A dense design is centred explicitly chunk by chunk (accurate for features far from
    zero); a sparse one through ``X^T D X - mu s^T - s mu^T + (sum w) mu mu^T`` with
    ``s = X^T w``.
    """
    n, d = X.shape
    if sp.issparse(X):
        G = X.T @ sp.csr_matrix(X.multiply(w[:, None]))
        G = G.toarray() if sp.issparse(G) else np.asarray(G)
        if mu is not None:
            s = np.asarray(X.T @ w).ravel()
            G = G - np.outer(mu, s) - np.outer(s, mu) + float(w.sum()) * np.outer(mu, mu)
        return G
    step = max(1, _GRAM_CHUNK_ENTRIES // max(d, 1))
    G = np.zeros((d, d))
    for start in range(0, n, step):
        Xc = X[start:start + step]
        if mu is not None:
            Xc = Xc - mu[None, :]
        G += Xc.T @ (Xc * w[start:start + step, None])
    return G


def _gram(X, mu: np.ndarray | None) -> np.ndarray:
    """``(X - 1 mu^T)^T (X - 1 mu^T) = X^T X - mu s^T - s mu^T + n mu mu^T``, shape
    ``(d, d)``, with ``s`` the column sums of the ``n`` rows (``X^T X`` when ``mu`` is None),
    from the products of ``X`` itself: a sparse design stays sparse."""
    G = X.T @ X
    G = G.toarray() if sp.issparse(G) else np.asarray(G)
    if mu is not None:
        s = np.asarray(X.sum(axis=0)).ravel()
        G = G - np.outer(mu, s) - np.outer(s, mu) + X.shape[0] * np.outer(mu, mu)
    return G


def _centred_dense_gram(X: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """``(X - 1 mu^T)^T (X - 1 mu^T)``, shape ``(d, d)``, of a dense design centred
    explicitly chunk by chunk of rows (``X^T X - n mu mu^T`` would lose features far from
    zero to rounding)."""
    n, d = X.shape
    step = max(1, _GRAM_CHUNK_ENTRIES // max(d, 1))
    G = np.zeros((d, d))
    for start in range(0, n, step):
        Xc = X[start:start + step] - mu[None, :]
        G += Xc.T @ Xc
    return G
