"""The internal representation of a multi-task data set, its three input formats, validation.

Every user format is converted here, once, into :class:`MultiTaskData`, and every check of user
input lives here too:

(a) shared design: one ``X`` of shape ``(n_samples, n_features)`` for all tasks and ``Y`` of
    shape ``(n_samples, n_tasks)`` (multi-output, like scikit-learn's ``MultiTaskLasso``);
(b) per-task lists: ``X = [X_1, ..., X_m]``, ``y = [y_1, ..., y_m]`` with different ``n_t``
    (like MALSAR);
(c) long format: one ``X`` and ``y`` with a task id per row, given as ``task=`` or stored in a
    column of ``X`` (``task_column=``), which is what lets scikit-learn's ``cross_val_score``,
    ``GridSearchCV`` and ``Pipeline`` split and pass the data without custom code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from numba import njit

__all__ = [
    "MAX_ABS_VALUE",
    "MISSING_TARGETS",
    "MultiTaskData",
    "as_multitask_data",
    "as_task_ids",
    "check_scalar_param",
    "check_not_complex",
    "check_sparse_structure",
    "check_task_column",
    "observed_mask",
    "split_task_column",
]


# --------------------------------------------------------------------------- numba kernels
#: Floating-point flags of the dense per-task kernels: reassociating the dot products lets
#: them use SIMD lanes (no assumption on NaN or infinity, which the input checks exclude).
_REASSOC = {"reassoc", "contract"}
# The per-task products take and return the weights task by task, ``Wt`` of shape ``(m, d)``
# (C order): row ``i`` of task ``t`` then reads one contiguous row of ``Wt``, where a ``(d, m)``
# operand is read with a stride of ``m`` numbers (a cache miss per feature once ``m`` is in
# the thousands: 2x slower products at 10^5 tasks, measured).
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
# streams the dense operand once per nonzero, so a (d, 64) block that stays in cache is 2-3x
# faster than the whole (d, m) matrix when m is in the hundreds.
_SPARSE_BLOCK = 64

#: Entries of a dense design from which its spectral norm comes from Lanczos (``svds``, a
#: few dozen products with the matrix) instead of a full SVD (``O(n d^2)`` with a large
#: constant): ``benchmarks/bench_spectral_norm.py`` measures both.
SPECTRAL_LANCZOS_ENTRIES = 10**6


# --------------------------------------------------------------------------- the container
@dataclass
class MultiTaskData:
    """Rows of ``m`` tasks stacked and grouped by task.

    Parameters
    ----------
    X : ndarray of shape (N, d) or scipy.sparse CSR matrix
        Stacked design; rows of task ``t`` are ``X[offsets[t]:offsets[t+1]]``. When ``shared``
        is true, ``X`` is the ``(n, d)`` design common to all tasks, stored once, and the
        stacked order of targets is task-major (``y = Y.T.ravel()``).
    y : ndarray of shape (N,)
        Stacked targets (float64; for classification the labels are mapped to -1/+1).
    offsets : ndarray of shape (m + 1,)
        Task boundaries in the stacked order.
    tasks : ndarray of shape (m,)
        The user's task labels, in the internal order.
    shared : bool
        Whether all tasks share ``X``.
    x_offset : ndarray of shape (d, m) or None
        Implicit per-task centring: the scores are ``X_t w_t - x_offset[:, t] . w_t``. Used to
        centre sparse designs without densifying them.
    row_order : ndarray of shape (N,) or None
        Long format only: ``row_order[k]`` is the user's row stored at stacked position ``k``
        (the stacked rows are the user's rows grouped by task); ``None`` when the stacked
        order is the user's order.
    x_constant : ndarray of bool of shape (d, m) or None
        With ``x_offset``: the (feature, task) cells whose column is constant within the
        task, so that the implicitly centred column is zero; :meth:`rmatvec` returns exact
        zeros there (``X_t^T r - mu_t sum(r)`` would leave rounding noise).
    sample_weight : ndarray of shape (N,) or None
        The weight ``w_i >= 0`` of each stacked (row, task) pair; ``None``: every pair weighs
        1. The loss of task ``t`` is ``sum_{i in t} w_i ell_i / sum_{i in t} w_i``
        (:attr:`row_weights`), so integer weights repeat rows and a zero weight drops one.
        The conversion (:func:`as_multitask_data`) drops the rows of weight zero of per-task
        and long-format data, so their weights are positive; a shared design keeps its rows,
        and a zero weight there is a (row, task) pair that is not observed (a missing target)
        or weighs nothing. Every quantity derived from the data (centring, Gram matrices,
        ``X_t^T y_t``, spectral norms) is weighted alike.
    """

    X: np.ndarray | sp.csr_matrix
    y: np.ndarray
    offsets: np.ndarray
    tasks: np.ndarray
    shared: bool = False
    x_offset: np.ndarray | None = None
    row_order: np.ndarray | None = None
    x_constant: np.ndarray | None = None
    sample_weight: np.ndarray | None = None
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    # ----------------------------------------------------------------- sizes
    @property
    def n_tasks(self) -> int:
        return len(self.offsets) - 1

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def n_rows(self) -> int:
        """Number of stacked (task, row) pairs ``N``."""
        return int(self.offsets[-1])

    @property
    def task_sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def is_sparse(self) -> bool:
        return sp.issparse(self.X)

    @property
    def task_of_row(self) -> np.ndarray:
        """Index of the task of each stacked row, shape ``(N,)``."""
        if "task_of_row" not in self._cache:
            self._cache["task_of_row"] = np.repeat(
                np.arange(self.n_tasks, dtype=np.int64), self.task_sizes
            )
        return self._cache["task_of_row"]

    @property
    def row_weights(self) -> np.ndarray:
        """``w_i / W_t`` for each stacked row ``i`` of task ``t``, ``W_t = sum_{i in t} w_i``
        (:attr:`task_weight_sums`; ``1 / n_t`` without :attr:`sample_weight`): the weights of
        the scaling convention, summing to 1 over each task. The one place where the losses
        read the row weights; zero for a pair of a shared design that is not observed."""
        if "row_weights" not in self._cache:
            if self.sample_weight is None:
                rw = np.repeat(1.0 / self.task_sizes, self.task_sizes)
            else:
                rw = self.sample_weight / self.expand(self.task_weight_sums)
            self._cache["row_weights"] = rw
        return self._cache["row_weights"]

    @property
    def task_weight_sums(self) -> np.ndarray:
        """``W_t = sum_{i in t} w_i``, shape ``(m,)``: the total weight of each task, the
        divisor of its loss (``n_t`` as floats without :attr:`sample_weight`)."""
        if "task_weight_sums" not in self._cache:
            self._cache["task_weight_sums"] = (
                self.task_sizes.astype(np.float64) if self.sample_weight is None
                else self.task_sum(self.sample_weight))
        return self._cache["task_weight_sums"]

    @property
    def shares_gram(self) -> bool:
        """Whether one Gram matrix serves every task: a shared design whose tasks weigh its
        rows alike (no :attr:`sample_weight`, or the same weight of each row in every task;
        a missing target makes the tasks differ)."""
        if not self.shared:
            return False
        if "shares_gram" not in self._cache:
            w = self.sample_weight
            self._cache["shares_gram"] = w is None or self.n_tasks <= 1 or bool(
                np.all(w.reshape(self.n_tasks, -1) == w[None, : self.X.shape[0]]))
        return self._cache["shares_gram"]

    def weigh(self, v: np.ndarray) -> np.ndarray:
        """``w_i v_i`` for a stacked vector ``v`` of shape ``(N,)`` (``v`` itself without
        :attr:`sample_weight`)."""
        return v if self.sample_weight is None else self.sample_weight * v

    def task_mean(self, v: np.ndarray) -> np.ndarray:
        """Per-task weighted means ``sum_{i in t} w_i v_i / W_t`` of a stacked vector, shape
        ``(m,)`` (plain means without :attr:`sample_weight`)."""
        if self.sample_weight is None:
            return self.task_sum(v) / self.task_sizes
        return self.task_sum(self.sample_weight * v) / self.task_weight_sums

    def square_sum(self) -> tuple[float, float]:
        """``(sum_i w_i ||x_i||^2, sum_i w_i)`` over the stacked (row, task) pairs (a row of a
        shared design once per task; ``w_i = 1`` without :attr:`sample_weight`), before any
        implicit centring: what the root mean square of the entries needs."""
        X = self.X
        if self.sample_weight is None:
            if sp.issparse(X):
                total = float(np.sum(np.square(X.data)))
            else:
                Xd = np.asarray(X)
                total = float(np.einsum("ij,ij->", Xd, Xd))  # no N x d temporary
            if self.shared:
                total *= self.n_tasks  # the shared rows stand once per task
            return total, float(self.n_rows)
        if sp.issparse(X):
            Xs = sp.csr_matrix(X)
            sq = np.asarray(Xs.multiply(Xs).sum(axis=1)).ravel()
        else:
            sq = np.einsum("ij,ij->i", X, X)
        w = self.sample_weight
        total = float(w @ (np.tile(sq, self.n_tasks) if self.shared else sq))
        return total, float(w.sum())

    def task_row_weights(self, t: int) -> np.ndarray | None:
        """The :attr:`sample_weight` of the rows of task ``t`` (None without weights)."""
        if self.sample_weight is None:
            return None
        return self.sample_weight[self.offsets[t] : self.offsets[t + 1]]

    # ----------------------------------------------------------------- per-task views
    def task_X(self, t: int):
        """Design of task ``t`` (a view for dense data; explicit centring is not applied)."""
        if self.shared:
            return self.X
        return self.X[self.offsets[t] : self.offsets[t + 1]]

    def task_y(self, t: int) -> np.ndarray:
        """Targets of task ``t``."""
        return self.y[self.offsets[t] : self.offsets[t + 1]]

    def subset_tasks(self, tasks: Sequence[int] | np.ndarray) -> MultiTaskData:
        """A new data set holding the tasks at positions ``tasks`` (in that order)."""
        idx = np.asarray(tasks, dtype=np.int64)
        sizes = self.task_sizes[idx]
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        y = np.concatenate([self.task_y(t) for t in idx]) if len(idx) else self.y[:0]
        x_off = None if self.x_offset is None else self.x_offset[:, idx].copy()
        x_const = None if self.x_constant is None else self.x_constant[:, idx].copy()
        sw = None
        if self.sample_weight is not None:
            sw = (np.concatenate([self.task_row_weights(t) for t in idx]) if len(idx)
                  else self.sample_weight[:0])
        if self.shared:
            X = self.X
        else:
            rows = np.concatenate([np.arange(self.offsets[t], self.offsets[t + 1]) for t in idx])
            X = self.X[rows]
        return MultiTaskData(X, y, offsets, self.tasks[idx], self.shared, x_off,
                             x_constant=x_const, sample_weight=sw)

    # ----------------------------------------------------------------- linear algebra
    def matvec(self, W: np.ndarray) -> np.ndarray:
        """Stacked scores ``z_i = x_i^T w_{t(i)}``, shape ``(N,)``; ``W`` is ``(d, m)``.

        A ``W`` of another shape is a ``ValueError`` (the compiled kernels do not check
        bounds)."""
        W = np.asarray(W, dtype=np.float64)
        if W.shape != (self.n_features, self.n_tasks):
            raise ValueError(f"W has shape {W.shape} but the data have {self.n_features} "
                             f"features and {self.n_tasks} tasks.")
        if self.shared:
            if self.is_sparse:  # blocks of tasks keep the dense operand in cache
                Zt = np.empty((W.shape[1], self.X.shape[0]))
                for c in range(0, W.shape[1], _SPARSE_BLOCK):
                    Zt[c : c + _SPARSE_BLOCK] = (
                        self.X @ np.ascontiguousarray(W[:, c : c + _SPARSE_BLOCK])).T
            else:
                Zt = np.ascontiguousarray((self.X @ W).T)  # (m, n)
            if self.x_offset is not None:
                Zt -= np.einsum("jt,jt->t", self.x_offset, W)[:, None]
            return Zt.ravel()
        Wt, shift = self._task_major(W)
        if self.is_sparse:
            Xs = sp.csr_matrix(self.X)  # already CSR: no copy
            z = _csr_matvec(Xs.data, Xs.indices, Xs.indptr, Wt, self.task_of_row)
        else:
            z = _dense_matvec(self.X, Wt, self.task_of_row)
        if self.x_offset is not None:
            z -= self.expand(shift)
        return z

    def _task_major(self, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(W^T, shift)`` for the per-task kernels: the weights task by task, C order, and
        ``shift_t = x_offset[:, t] . w_t`` (zeros without ``x_offset``)."""
        W = np.asarray(W, dtype=np.float64)
        shift = (np.einsum("jt,jt->t", self.x_offset, W) if self.x_offset is not None
                 else np.zeros(self.n_tasks))
        return np.ascontiguousarray(W.T), shift

    def rmatvec(self, R: np.ndarray) -> np.ndarray:
        """``G[:, t] = X_t^T R_t``, shape ``(d, m)``, for stacked ``R`` of shape ``(N,)``
        (another shape is a ``ValueError``: the compiled kernels do not check bounds)."""
        R = np.asarray(R, dtype=np.float64)
        if R.shape != (self.n_rows,):
            raise ValueError(f"R has shape {R.shape} but the data have {self.n_rows} rows.")
        m = self.n_tasks
        if self.shared:
            R2 = R.reshape(m, -1)
            if self.is_sparse and m <= _SPARSE_BLOCK:  # one block: the product itself
                G = np.asarray(self.X.T @ np.ascontiguousarray(R2.T))
            elif self.is_sparse:  # blocks of tasks keep the dense operand in cache
                XT = self.X.T
                G = np.empty((self.X.shape[1], m))
                for c in range(0, m, _SPARSE_BLOCK):
                    G[:, c : c + _SPARSE_BLOCK] = XT @ np.ascontiguousarray(
                        R2[c : c + _SPARSE_BLOCK].T)
            else:
                G = np.asarray(self.X.T @ R2.T)
        elif self.is_sparse:
            Xs = sp.csr_matrix(self.X)  # already CSR: no copy
            G = np.ascontiguousarray(_csr_rmatvec(Xs.data, Xs.indices, Xs.indptr, R,
                                                  self.task_of_row, Xs.shape[1], m).T)
        else:
            G = np.ascontiguousarray(_dense_rmatvec(self.X, R, self.task_of_row, m).T)
        if self.x_offset is not None:
            G = G - self.x_offset * self.task_sum(R)[None, :]
            if self.x_constant is not None:
                G[self.x_constant] = 0.0
        return G

    def squared_residual_pass(self, W: np.ndarray, y: np.ndarray, weights: np.ndarray, *,
                              value_at: np.ndarray | None = None):
        """The squared loss and its gradient in one pass over a dense per-task design.

        With ``r_i = x_i^T w_{t(i)} - y_i`` (``x_i`` centred implicitly where the design is),
        returns ``(sum_i weights_i r_i^2 / 2, G)`` with ``G[:, t] = sum_{i in t} weights_i r_i
        x_i``: what ``rmatvec(weights * (matvec(W) - y))`` gives, reading each row once.
        With ``value_at=V``, returns ``(loss at V, loss at W, G)`` from the same pass (an
        accelerated gradient method's objective at its new point and gradient at the next
        extrapolated one). Shared or sparse designs are refused (their products are BLAS
        calls already).
        """
        if self.shared or self.is_sparse:
            raise ValueError("squared_residual_pass needs a dense per-task design.")
        m = self.n_tasks
        y = np.asarray(y, dtype=np.float64)
        weights = np.asarray(weights, dtype=np.float64)
        Wt, shift = self._task_major(W)
        Vt, shift_v = (Wt, shift) if value_at is None else self._task_major(value_at)
        val, Gt, rsum, val_v = _dense_squared_pass(self.X, Wt, shift, y, weights,
                                                   self.task_of_row, m, Vt, shift_v,
                                                   value_at is not None)
        head: tuple[float, ...] = () if value_at is None else (float(val_v),)
        G = np.ascontiguousarray(Gt.T)
        if self.x_offset is not None:
            G -= self.x_offset * rsum[None, :]
            if self.x_constant is not None:
                G[self.x_constant] = 0.0
        return (*head, float(val), G)

    def task_column_sq_norms(self) -> np.ndarray:
        """``sum_{i in t} w_i (X[i, j] - x_offset[j, t])^2`` for every feature ``j`` and task
        ``t``, shape ``(d, m)``, of a dense per-task design (``w_i = 1`` without
        :attr:`sample_weight`): the diagonals of the (implicitly centred, weighted) per-task
        Gram matrices, in one pass over the data without forming them."""
        if self.shared or self.is_sparse:
            raise ValueError("task_column_sq_norms needs a dense per-task design.")
        m, d = self.n_tasks, self.n_features
        offt = (np.zeros((m, d)) if self.x_offset is None
                else np.ascontiguousarray(self.x_offset.T))
        w = np.zeros(0) if self.sample_weight is None else self.sample_weight
        return np.ascontiguousarray(_dense_task_sq_sums(self.X, offt, self.task_of_row, m, w).T)

    def task_sum(self, R: np.ndarray) -> np.ndarray:
        """Per-task sums of a stacked vector, shape ``(m,)``."""
        if self.shared:
            return R.reshape(self.n_tasks, -1).sum(axis=1)
        return np.add.reduceat(R, self.offsets[:-1]) if self.n_rows else np.zeros(self.n_tasks)

    def expand(self, b: np.ndarray) -> np.ndarray:
        """Stacked vector ``b_{t(i)}``, shape ``(N,)``, from per-task values ``b`` ``(m,)``."""
        return np.repeat(np.asarray(b, dtype=np.float64), self.task_sizes)

    # ----------------------------------------------------------------- caches
    def gram(self) -> np.ndarray:
        """Per-task Gram matrices ``X_t^T D_t X_t`` (implicit centring applied), ``D_t`` the
        diagonal of the task's :attr:`sample_weight` (the identity without weights).

        Returns shape ``(m, d, d)``, or ``(1, d, d)`` when the design is shared and its tasks
        weigh the rows alike (:attr:`shares_gram`).
        """
        if "gram" in self._cache:
            return self._cache["gram"]
        if self.shared and not self.shares_gram:  # a Gram matrix per task, observed rows only
            n = self.X.shape[0]
            d, m = self.n_features, self.n_tasks
            assert self.sample_weight is not None
            W2 = self.sample_weight.reshape(m, n)
            G = np.empty((m, d, d))
            for t in range(m):
                rows = np.flatnonzero(W2[t] > 0)
                mu = None if self.x_offset is None else self.x_offset[:, t]
                G[t] = _weighted_gram(self.X[rows], mu, W2[t, rows])
        elif self.shared and self.sample_weight is not None:
            mu = None if self.x_offset is None else self.x_offset[:, 0]
            w = self.sample_weight
            G = _weighted_gram(self.X, mu, w[: self.X.shape[0]])[None]
        elif not self.shared and self.sample_weight is not None:
            d, m = self.n_features, self.n_tasks
            G = np.empty((m, d, d))
            for t in range(m):
                mu = None if self.x_offset is None else self.x_offset[:, t]
                G[t] = _weighted_gram(self.task_X(t), mu, self.sample_weight[
                    self.offsets[t] : self.offsets[t + 1]])
        elif self.shared and self.x_offset is not None and not sp.issparse(self.X):
            # a dense shared design centred implicitly: centred explicitly chunk by chunk
            # (X^T X - n mu mu^T would lose features far from zero to rounding)
            mu = self.x_offset[:, 0]
            n, d = self.X.shape
            step = max(1, _GRAM_CHUNK_ENTRIES // max(d, 1))
            G = np.zeros((d, d))
            for start in range(0, n, step):
                Xc = self.X[start:start + step] - mu[None, :]
                G += Xc.T @ Xc
            G = G[None]
        elif self.shared:
            G = self.X.T @ self.X
            G = G.toarray() if sp.issparse(G) else np.asarray(G)
            if self.x_offset is not None:  # identical offsets for all tasks (column means)
                mu = self.x_offset[:, 0]
                s = np.asarray(self.X.sum(axis=0)).ravel()
                n = self.X.shape[0]
                G = G - np.outer(mu, s) - np.outer(s, mu) + n * np.outer(mu, mu)
            G = G[None]
        else:
            d, m = self.n_features, self.n_tasks
            G = np.empty((m, d, d))
            for t in range(m):
                Xt = self.task_X(t)
                Gt = Xt.T @ Xt
                Gt = Gt.toarray() if sp.issparse(Gt) else np.asarray(Gt)
                if self.x_offset is not None:
                    n_t = self.task_sizes[t]
                    mu = self.x_offset[:, t]
                    s = np.asarray(Xt.sum(axis=0)).ravel()
                    Gt = Gt - np.outer(mu, s) - np.outer(s, mu) + n_t * np.outer(mu, mu)
                G[t] = Gt
        self._cache["gram"] = G
        return G

    def xty(self) -> np.ndarray:
        """``X_t^T D_t y_t`` for every task, shape ``(d, m)`` (``D_t`` as in :meth:`gram`)."""
        if "xty" not in self._cache:
            self._cache["xty"] = self.rmatvec(self.weigh(self.y))
        return self._cache["xty"]

    def task_spectral_norms_sq(self, intercept: bool = False,
                               weighted: bool = False) -> np.ndarray:
        """``||X_t||_2^2`` per task (with a column of ones appended when ``intercept``); with
        ``weighted``, ``||D_t^(1/2) X_t||_2^2`` (``D_t`` the diagonal of the task's
        :attr:`sample_weight`: the norm the losses' Lipschitz constants need; the same as
        unweighted without weights).

        Implicit centring (``x_offset``) is applied. Returns shape ``(m,)``; cached. A shared
        design is one matrix for every task (its offsets are the same column means, as
        :meth:`gram` assumes): one norm, not ``m`` (weighted: when :attr:`shares_gram`). The
        largest singular value comes from ``svds`` (Lanczos, a few dozen products with the
        matrix) for sparse designs with more than 200 features and for dense ones of at least
        :data:`SPECTRAL_LANCZOS_ENTRIES` entries, else from a dense SVD.
        """
        weighted = bool(weighted) and self.sample_weight is not None
        key = ("spec", intercept, weighted)
        if key in self._cache:
            return self._cache[key]
        out = np.empty(self.n_tasks)
        one = self.shared and (not weighted or self.shares_gram)
        for t in range(min(1, self.n_tasks) if one else self.n_tasks):
            out[t] = self._spectral_norm_sq(t, intercept, weighted)
        if one and self.n_tasks:
            out[:] = out[0]
        self._cache[key] = out
        return out

    def _spectral_norm_sq(self, t: int, intercept: bool, weighted: bool = False) -> float:
        """``||D^(1/2) [X_t - 1 x_offset[:, t]^T, 1]||_2^2`` (the ones only with
        ``intercept``; ``D`` the task's weights with ``weighted``, else the identity)."""
        Xt = self.task_X(t)
        if weighted:
            w = self.task_row_weights(t)
            assert w is not None
            rows = np.flatnonzero(w > 0)
            if rows.size < Xt.shape[0]:
                Xt, w = Xt[rows], w[rows]
            root = np.sqrt(w)
            return self._scaled_norm_sq(Xt, t, intercept, root)
        return self._scaled_norm_sq(Xt, t, intercept, None)

    def _scaled_norm_sq(self, Xt, t: int, intercept: bool, root: np.ndarray | None) -> float:
        """``||diag(root) [Xt - 1 x_offset[:, t]^T, 1]||_2^2`` (``root`` None: no scaling)."""
        from scipy.sparse.linalg import svds

        n_t, d = Xt.shape
        mu = None if self.x_offset is None else self.x_offset[:, t]
        if root is not None:  # the weighted operator, from the same kinds of computations
            if sp.issparse(Xt):
                lanczos = d > 200
            else:
                lanczos = n_t * d >= SPECTRAL_LANCZOS_ENTRIES and min(n_t, d) > 2
            if lanczos:
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
        if sp.issparse(Xt):
            lanczos = d > 200
        else:
            lanczos = n_t * d >= SPECTRAL_LANCZOS_ENTRIES and min(n_t, d) > 2
        if lanczos:
            if mu is not None:  # the implicit centring, as in gram()
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

    def _dense_means(self, yc: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(mu, constant, X^T D yc)`` of a dense per-task design in one pass (the last zeros
        when ``yc`` is empty; ``D`` the weights); see :meth:`x_means_and_constant`."""
        sizes = self.task_sizes
        w = np.zeros(0) if self.sample_weight is None else self.sample_weight
        sums, first, const, xty = (A.T for A in _dense_task_sums_constant(
            np.ascontiguousarray(self.X, dtype=np.float64),
            np.asarray(self.offsets, dtype=np.int64), np.asarray(yc, dtype=np.float64), w))
        # a task of weighted data always weighs more than zero (as_multitask_data)
        total = (np.maximum(sizes, 1) if self.sample_weight is None
                 else self.task_weight_sums)
        x_mean = np.ascontiguousarray(sums) / total[None, :]
        const = np.ascontiguousarray(const & (sizes > 0)[None, :])
        x_mean[const] = first[const]
        return x_mean, const, np.ascontiguousarray(xty)

    def centred_implicitly(self) -> tuple[MultiTaskData, np.ndarray, np.ndarray]:
        """``(data_c, x_mean, y_mean)``: a dense per-task design centred per task without a
        copy of ``X`` (``x_offset``), from one pass that also caches the centred ``X_t^T y_t``
        (the gradient at zero, what ``alpha_max`` needs).

        ``centered`` makes an explicit centred copy of a dense per-task design instead (twice
        the memory, a pass before the first gradient).
        """
        if self.shared or self.is_sparse:
            raise ValueError("centred_implicitly needs a dense per-task design.")
        y_mean = self.y_means()
        yc = self.y - self.expand(y_mean)
        x_mean, constant, xty = self._dense_means(yc)
        data_c = MultiTaskData(self.X, yc, self.offsets, self.tasks, False, x_mean,
                               x_constant=constant, sample_weight=self.sample_weight)
        # rmatvec(D yc) of the view, from the same pass: X^T D yc - mu sum(D yc), constant
        # cells 0
        xty = xty - x_mean * data_c.task_sum(self.weigh(yc))[None, :]
        xty[constant] = 0.0
        data_c._cache["xty"] = xty
        return data_c, x_mean, y_mean

    def x_means(self) -> np.ndarray:
        """Per-task feature means ``(d, m)`` (:meth:`x_means_and_constant`)."""
        return self.x_means_and_constant()[0]

    def y_means(self) -> np.ndarray:
        """Per-task (weighted) target means ``sum_{i in t} w_i y_i / W_t``, shape ``(m,)``."""
        return self.task_mean(self.y)

    def x_means_and_constant(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-task feature means ``mu[:, t] = (1/W_t) sum_{i in task t} w_i x_i``, shape
        ``(d, m)`` (``w_i = 1``, ``W_t = n_t`` without :attr:`sample_weight`).

        A feature that is constant within a task gets that constant exactly (``min == max``
        of the column over the task's rows), so its centred column ``X_t[:, j] - mu_jt`` is
        exactly zero; the sum divided by ``n_t`` may miss it by an ulp, and a centred column of
        rounding noise (about ``1e-16`` of the feature's size) would let a weakly regularized
        fit grow coefficients of ``1 / 1e-16``. For a shared design the means are the
        columns' means over all rows, repeated for every task (per task when the tasks weigh
        the rows differently: a missing target; a column is then constant within a task when
        it is over the task's rows of positive weight). Returns ``(mu, constant)``,
        ``constant`` the boolean ``(d, m)`` mask of those cells.
        """
        m, d = self.n_tasks, self.n_features
        if self.shared and not self.shares_gram:
            return self._shared_task_means()
        if self.shared:
            if self.sample_weight is None:
                mu = np.asarray(self.X.mean(axis=0)).ravel()
            else:
                w = self.sample_weight[: self.X.shape[0]]
                mu = np.asarray(self.X.T @ w).ravel() / float(w.sum())
            const1 = np.zeros(d, dtype=bool)
            if self.n_rows and d:
                X = self.X
                lo = np.asarray(X.min(axis=0).toarray() if sp.issparse(X)
                                else X.min(axis=0)).ravel()
                hi = np.asarray(X.max(axis=0).toarray() if sp.issparse(X)
                                else X.max(axis=0)).ravel()
                const1 = lo == hi
                mu = np.where(const1, lo, mu)
            return (np.repeat(mu[:, None], m, axis=1), np.repeat(const1[:, None], m, axis=1))
        constant = np.zeros((d, m), dtype=bool)
        if not d:
            return np.zeros((d, m)), constant
        sizes = self.task_sizes
        if not sp.issparse(self.X):  # one pass: sums and constancy together
            return self._dense_means(np.zeros(0))[:2]
        if self.sample_weight is None:
            x_mean = self.rmatvec(np.ones(self.n_rows)) / np.maximum(sizes, 1)[None, :]
        else:  # the rows of per-task data weigh more than zero (as_multitask_data)
            x_mean = self.rmatvec(self.sample_weight) / self.task_weight_sums[None, :]
        if np.any(sizes > 0):  # sparse: (task, feature) cells whose n_t stored values are all equal
            coo = sp.coo_matrix(self.X)
            key = self.task_of_row[coo.row].astype(np.int64) * d + coo.col
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

    def _shared_task_means(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`x_means_and_constant` of a shared design whose tasks weigh the rows
        differently: weighted means per task from one product ``X^T W``; a column constant
        over all rows is constant in every task, and a column whose weighted spread within a
        task is below ``1e-8`` of its mean square is checked exactly (``min == max``) on the
        task's rows of positive weight."""
        X = self.X
        n = X.shape[0]
        m, d = self.n_tasks, self.n_features
        assert self.sample_weight is not None
        W2 = self.sample_weight.reshape(m, n)
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

    def centered(self) -> tuple[MultiTaskData, np.ndarray, np.ndarray]:
        """Per-task centred copy: ``(data_c, x_mean, y_mean)``.

        ``x_mean`` has shape ``(d, m)`` and ``y_mean`` ``(m,)``. Dense per-task designs are
        centred explicitly; sparse or shared designs keep ``X`` and centre implicitly through
        ``x_offset``, so that sparsity and sharing survive.
        """
        y_mean = self.y_means()
        yc = self.y - self.expand(y_mean)
        x_mean, constant = self.x_means_and_constant()
        sw = self.sample_weight
        if self.shared:  # one X for every task: centred through x_offset, never copied
            data_c = MultiTaskData(self.X, yc, self.offsets, self.tasks, True, x_mean,
                                   x_constant=constant, sample_weight=sw)
            return data_c, x_mean, y_mean
        if self.is_sparse:
            data_c = MultiTaskData(self.X, yc, self.offsets, self.tasks, False, x_mean,
                                   x_constant=constant, sample_weight=sw)
        else:
            Xc = self.X - x_mean.T[self.task_of_row]
            data_c = MultiTaskData(Xc, yc, self.offsets, self.tasks, False, None,
                                   sample_weight=sw)
        return data_c, x_mean, y_mean


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


# --------------------------------------------------------------------------- validation
def check_scalar_param(value, name: str, *, allow_zero: bool = True, upper=None) -> float:
    """Return ``value`` as a float after checking that it is finite and non-negative.

    Raises
    ------
    ValueError
        Naming the parameter, when ``value`` is not a finite number >= 0 (> 0 when
        ``allow_zero`` is false) or exceeds ``upper``.
    """
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}.") from None
    if not np.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}.")
    if v < 0 or (v == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be {bound}, got {value!r}.")
    if upper is not None and v > upper:
        raise ValueError(f"{name} must be <= {upper}, got {value!r}.")
    return v


#: Largest magnitude accepted for a feature or a regression target. Sums of squares over all
#: entries (Gram matrices, spectral norms, objectives) stay below 1e200 times the number of
#: entries, far from the float64 overflow at 1.8e308 whatever the size of the data; measured:
#: every estimator fits small problems with finite coefficients up to 1e140 and fails (NaN, a
#: LAPACK error or a crash) from 1e160 on (see docs/model_files.md, "Input checks").
MAX_ABS_VALUE = 1e100
#: Smallest largest-magnitude accepted for a design or a regression target that is not all
#: zero: products of such entries underflow to subnormal numbers, where LAPACK's SVD stops
#: converging (measured at 1e-160).
MIN_MAX_ABS_VALUE = 1e-100

_REAL_KINDS = "fiub"
_KIND_NAMES = {"c": "complex", "O": "object", "U": "text", "S": "bytes", "M": "datetime",
               "m": "timedelta", "V": "structured"}


#: Entries of the centred chunk of rows from which the Gram matrix of a dense shared design
#: is accumulated (32 MiB).
_GRAM_CHUNK_ENTRIES = 1 << 22


def _label(v) -> str:
    """A task label as the user wrote it (``'b'``, ``3``), not as numpy prints it."""
    return repr(v.item() if isinstance(v, np.generic) else v)


def _check_finite(A, what: str, task=None, hint: str = "") -> None:
    """Raise a ValueError locating the first NaN or infinity of ``A`` (and its row's task);
    ``hint`` is appended to the message."""
    if sp.issparse(A):
        bad = np.flatnonzero(~np.isfinite(A.data))
        if not bad.size:
            return
        where = [int(np.searchsorted(A.indptr, bad[0], side="right") - 1), int(A.indices[bad[0]])]
    else:
        if A.dtype.kind not in "fc" or not A.size:
            return
        with np.errstate(over="ignore", invalid="ignore"):
            if np.isfinite(A.sum()):  # one pass: every entry is finite (scikit-learn's test)
                return
        cells = np.argwhere(~np.isfinite(A))
        if not cells.size:
            return
        where = [int(i) for i in cells[0]]
    loc = f"row {where[0]}" + (f", column {where[1]}" if len(where) > 1 else "")
    if task is not None:
        loc += f", task {_label(task[where[0]])}"
    raise ValueError(f"{what} contains NaN or infinity (first at {loc}).{hint}")


def _check_scale(A, what: str, task=None) -> None:
    """Raise a ValueError when an entry of ``A`` exceeds :data:`MAX_ABS_VALUE` in magnitude.

    The message names the row (and column, and the row's task) of the largest entry.
    """
    values = A.data if sp.issparse(A) else A
    if not values.size:
        return
    hi, lo = float(np.max(values)), float(np.min(values))
    top = max(hi, -lo)
    if 0.0 < top < MIN_MAX_ABS_VALUE:
        raise ValueError(
            f"{what} has no entry larger than {top:.3g} in magnitude, below the "
            f"{MIN_MAX_ABS_VALUE:g} that the solvers handle without underflow: rescale it (e.g. "
            "divide by its largest absolute value, or use sklearn.preprocessing.StandardScaler)."
        )
    if top <= MAX_ABS_VALUE:
        return
    k = int(np.argmax(np.abs(values)))
    if sp.issparse(A):
        where = [int(np.searchsorted(A.indptr, k, side="right") - 1), int(A.indices[k])]
        value = A.data[k]
    else:
        where = [int(i) for i in np.unravel_index(k, A.shape)]
        value = A[tuple(where)]
    loc = f"row {where[0]}" + (f", column {where[1]}" if len(where) > 1 else "")
    if task is not None:
        loc += f", task {_label(task[where[0]])}"
    raise ValueError(
        f"{what} has an entry of magnitude {abs(value):.3g} (at {loc}), beyond the "
        f"{MAX_ABS_VALUE:g} that the solvers handle without overflow: rescale it (e.g. divide "
        "by its largest "
        "absolute value, or use sklearn.preprocessing.StandardScaler)."
    )


def _dtype_error(what: str, dtype, hint: str = "") -> ValueError:
    if dtype.kind == "c":
        return _complex_error(what, f"complex dtype {dtype}", hint)
    kind = _KIND_NAMES.get(dtype.kind, "unsupported")
    return ValueError(f"{what} has {kind} dtype {dtype}: only real numbers (float, int or bool) "
                      f"are accepted{hint}.")


def _complex_error(what: str, detail: str, hint: str = "") -> ValueError:
    """The one message for complex input, whether a complex array or a complex number inside
    an object array or a list."""
    return ValueError(f"{what} holds complex numbers ({detail}). Complex data not supported: "
                      f"only real numbers (float, int or bool) are accepted{hint}.")


def check_not_complex(X, what: str = "X") -> None:
    """Refuse complex values in one design matrix before anything converts it.

    A complex dtype, complex numbers inside an object array or a pandas column of objects,
    or in nested lists, are refused with the message of every other complex input (scikit-
    learn's conversion would raise a ``TypeError``, or print the whole array). Sparse
    matrices and real arrays pass at the cost of a dtype test; object arrays are scanned.
    """
    if sp.issparse(X):
        return
    if isinstance(X, (list, tuple)):
        try:
            X = np.asarray(X)
        except (ValueError, TypeError):
            return  # ragged input: left to the conversion's own message
    columns = getattr(X, "dtypes", None)
    if columns is not None and hasattr(X, "columns"):  # a DataFrame, column by column
        for name, dtype in zip(X.columns, columns, strict=True):
            kind = getattr(dtype, "kind", "O")
            if kind in "cO":
                check_not_complex(np.asarray(X[name]), f"{what} column {name!r}")
        return
    dtype = getattr(X, "dtype", None)
    if dtype is None or not isinstance(X, np.ndarray):
        return
    if dtype.kind == "c":
        raise _dtype_error(what, dtype)
    if dtype.kind == "O":
        for k, v in enumerate(X.ravel().tolist()):
            if isinstance(v, (complex, np.complexfloating)):
                pos = ", ".join(map(str, np.unravel_index(k, X.shape)))
                raise _complex_error(what, f"object dtype: {v!r} at position ({pos})")


def _real_from_object(A: np.ndarray, what: str) -> np.ndarray:
    """An object array holding only real numbers (int, float, bool) as float64.

    Any other element (None, a string, a complex number, a list) is refused, naming its
    position: object arrays are not parsed or guessed.
    """
    flat = A.ravel()
    for k, v in enumerate(flat.tolist()):
        if _python_kind(v) not in ("int", "float", "bool"):
            pos = ", ".join(map(str, np.unravel_index(k, A.shape)))
            if isinstance(v, (complex, np.complexfloating)):
                raise _complex_error(what, f"object dtype: {v!r} at position ({pos})")
            raise ValueError(f"{what} has object dtype and holds {v!r} ({type(v).__name__}) "
                             f"at position ({pos}): only real numbers (float, int or bool) "
                             "are accepted.")
    return A.astype(np.float64)


def _sparse_entry_row(indptr: np.ndarray, k: int) -> int:
    return int(np.searchsorted(indptr, k, side="right") - 1)


def check_sparse_structure(X, what: str = "X") -> sp.csr_matrix:
    """Check the whole structure of a scipy sparse matrix; return a canonical float64 CSR copy.

    scipy builds a compressed matrix from user arrays without checking its index arrays, and
    the compiled products (scipy's and this library's) index memory with them: an index out of
    range reads or writes outside the arrays (the interpreter crashes, or a negative index
    silently wraps around). Every sparse input is checked here before anything else sees it:

    * CSR / CSC / BSR: ``indptr`` has one entry per row (column, block row) plus one, starts
      at 0, never decreases and ends at ``nnz <= len(indices) == len(data)``; every index
      ``j`` of ``indices[:nnz]`` satisfies ``0 <= j < n_minor``;
    * COO: ``row``, ``col`` and ``data`` have one length, ``0 <= row < n_rows`` and
      ``0 <= col < n_cols``;
    * other formats (LIL, DOK, DIA) are converted by scipy's pure-Python code, then checked
      as CSR;
    * the values are real numbers (float, int or bool): complex, object and other dtypes are
      refused.

    The returned matrix is a new CSR ``float64`` matrix with sorted indices and duplicate
    entries summed (the meaning scipy gives them), sharing no array with ``X``; ``X`` itself
    is never modified.

    Parameters
    ----------
    X : scipy sparse matrix or array
        Any format.
    what : str, default="X"
        How the messages name the input (``"X"``, ``"X of task 2"``).

    Returns
    -------
    scipy.sparse.csr_matrix of dtype float64

    Raises
    ------
    ValueError
        Naming the input, the broken array, and the row or column of the first bad entry.
    """
    fmt = X.format
    label = f"{what} (sparse {fmt.upper()})"
    n_rows, n_cols = X.shape
    if X.dtype.kind not in _REAL_KINDS:
        raise _dtype_error(label, X.dtype)
    if fmt in ("csr", "csc", "bsr", "coo"):
        data = np.asarray(X.data)
    if fmt in ("csr", "csc", "bsr"):
        indptr, indices = np.asarray(X.indptr), np.asarray(X.indices)
        for name, arr in (("indptr", indptr), ("indices", indices)):
            if arr.ndim != 1 or arr.dtype.kind not in "iu":
                raise ValueError(f"{label}: {name} must be a 1-D integer array, got dtype "
                                 f"{arr.dtype} and shape {arr.shape}.")
        if fmt == "bsr":
            r, c = X.blocksize
            major, minor, unit = n_rows // r, n_cols // c, ("block row", "block column")
        elif fmt == "csr":
            major, minor, unit = n_rows, n_cols, ("row", "column")
        else:
            major, minor, unit = n_cols, n_rows, ("column", "row")
        if len(indptr) != major + 1:
            raise ValueError(f"{label}: indptr has {len(indptr)} entries for {major} "
                             f"{unit[0]}s (expected {major + 1}).")
        if indptr[0] != 0:
            raise ValueError(f"{label}: indptr must start at 0, got {indptr[0]}.")
        steps = np.diff(indptr)
        if steps.size and steps.min() < 0:
            i = int(np.argmax(steps < 0))
            raise ValueError(f"{label}: indptr decreases at {unit[0]} {i} ({indptr[i]} then "
                             f"{indptr[i + 1]}); it must never decrease.")
        nnz = int(indptr[-1])
        if len(indices) != len(data):
            raise ValueError(f"{label}: indices has {len(indices)} entries but data has "
                             f"{len(data)}; they must have the same length.")
        if nnz > len(indices):
            raise ValueError(f"{label}: indptr ends at {nnz} but there are only {len(indices)} "
                             "stored entries.")
        idx = indices[:nnz]
        bad = np.flatnonzero((idx < 0) | (idx >= minor))
        if bad.size:
            k = int(bad[0])
            sign = "negative " if idx[k] < 0 else ""
            raise ValueError(f"{label}: {sign}{unit[1]} index {int(idx[k])} at {unit[0]} "
                             f"{_sparse_entry_row(indptr, k)} is out of range (indices must "
                             f"be in [0, {minor}) for {minor} {unit[1]}s).")
        src = X
    elif fmt == "coo":
        coords = getattr(X, "coords", None) or (X.row, X.col)
        row, col = (np.asarray(a) for a in coords)
        if not (len(row) == len(col) == len(data)):
            raise ValueError(f"{label}: row, col and data have lengths {len(row)}, {len(col)} "
                             f"and {len(data)}; they must have the same length.")
        for name, arr, size in (("row", row, n_rows), ("column", col, n_cols)):
            if arr.dtype.kind not in "iu":
                raise ValueError(f"{label}: {name} indices must be integers, got {arr.dtype}.")
            bad = np.flatnonzero((arr < 0) | (arr >= size))
            if bad.size:
                k = int(bad[0])
                raise ValueError(f"{label}: {name} index {int(arr[k])} of entry {k} is out of "
                                 f"range (indices must be in [0, {size}) for {size} {name}s).")
        src = X
    else:  # lil, dok, dia: converted by numpy / Python code, then checked as CSR
        if fmt == "lil" and (len(X.rows) != n_rows or len(X.data) != n_rows or any(
                len(r) != len(v) for r, v in zip(X.rows, X.data, strict=True))):
            raise ValueError(f"{label}: rows and data must hold one list per row, of equal "
                             "lengths.")
        try:
            src = X.tocsr()
        except (ValueError, IndexError, TypeError) as exc:
            raise ValueError(f"{label}: inconsistent structure ({exc}).") from None
        return check_sparse_structure(src, what)
    # the checked structure: copy it into a new CSR matrix that the caller owns
    if fmt == "csr":
        nnz = int(src.indptr[-1])
        out = sp.csr_matrix(
            (np.array(src.data[:nnz], dtype=np.float64), np.array(src.indices[:nnz]),
             np.array(src.indptr)), shape=src.shape, copy=False)
    else:
        out = sp.csr_matrix(src.copy(), dtype=np.float64)
    out.sum_duplicates()  # sorts the indices and adds duplicate entries, on the copy
    return out


def _as_2d_float(X, what: str, accept_sparse: bool = True, check_finite: bool = True):
    """``X`` as a float64 array (a checked canonical CSR copy for sparse input).

    Dense input must hold real numbers (float, int or bool dtype); complex, object, text and
    datetime arrays are refused rather than converted (which would drop imaginary parts or
    parse text).
    """
    if sp.issparse(X):
        if not accept_sparse:
            raise ValueError(f"{what}: sparse input is not supported here.")
        X = check_sparse_structure(X, what)
        if check_finite:
            _check_finite(X, what)
            _check_scale(X, what)
        return X
    try:
        A = np.asarray(X)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be a 2-D array of numbers: {exc}") from None
    if A.dtype.kind == "O":
        A = _real_from_object(A, what)
    elif A.dtype.kind not in _REAL_KINDS:
        raise _dtype_error(what, A.dtype)
    if A.ndim == 1:
        raise ValueError(
            f"{what} must be 2-D (n_samples, n_features), got a 1-D array of shape {A.shape}; "
            "reshape with X.reshape(-1, 1) for a single feature."
        )
    if A.ndim != 2:
        raise ValueError(f"{what} must be 2-D, got shape {A.shape}.")
    A = A.astype(np.float64, copy=False)
    if check_finite:
        _check_finite(A, what)
        _check_scale(A, what)
    return A


def _check_tasks(A: np.ndarray, starts: np.ndarray, whats: list[str], hint: str = "") -> None:
    """:func:`_check_finite` and :func:`_check_scale` on the rows of every task of the dense
    float stack ``A`` (task ``t``'s rows start at ``starts[t]``; every task has rows), in one
    pass over ``A``; only when a task fails do the per-task checks run, to raise their message
    (named by ``whats[t]``)."""
    if not A.size:
        return
    top = np.abs(A).max(axis=1) if A.ndim == 2 else np.abs(A)
    top = np.maximum.reduceat(top, starts)  # each task's largest magnitude (NaN if any)
    if ((top <= MAX_ABS_VALUE) & ~((top > 0.0) & (top < MIN_MAX_ABS_VALUE))).all():
        return
    for A_t, what in zip(np.split(A, starts[1:]), whats, strict=True):
        _check_finite(A_t, what, hint=hint)
        _check_scale(A_t, what)


def _as_1d_target(y, what: str, classification: bool, task=None, check: bool = True,
                  hint: str = ""):
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"{what} must be 1-D, got shape {y.shape}.")
    if classification:
        try:
            y = _as_labels(y, what)
        except ValueError as exc:  # a missing label (None): say how to mark it as such
            if hint and _missing_mask(y) is not None:
                raise ValueError(f"{exc}{hint}") from None
            raise
    elif y.dtype.kind == "O":
        y = _real_from_object(y, what)
    else:
        if y.dtype.kind not in _REAL_KINDS:
            raise _dtype_error(what, y.dtype, " for regression targets")
        y = y.astype(np.float64)
    if check:
        _check_finite(y, what, task, hint)
        if not classification:
            _check_scale(y, what, task)
    return y


# --------------------------------------------------------------------------- missing targets
#: The values of the ``missing_targets`` option: a NaN target is an error (``"error"``) or a
#: target that was not observed (``"ignore"``: the (row, task) pair weighs zero).
MISSING_TARGETS = ("error", "ignore")

_MISSING_HINT = (" If NaN marks a target that was not observed, pass missing_targets='ignore' "
                 "(the row then counts only for the tasks whose target is observed).")


def _is_missing(v) -> bool:
    """Whether a target value marks a missing target: NaN, None, pandas' NA or NaT."""
    if v is None:
        return True
    if isinstance(v, (float, np.floating)):
        return bool(np.isnan(v))
    return type(v).__name__ in ("NAType", "NaTType")


def _missing_mask(y) -> np.ndarray | None:
    """The entries of ``y`` that are missing (:func:`_is_missing`), or None when none is."""
    a = np.asarray(y)
    if a.dtype.kind == "f":
        miss = np.isnan(a)
    elif a.dtype.kind == "O":
        miss = np.fromiter((_is_missing(v) for v in a.ravel().tolist()), dtype=bool,
                           count=a.size).reshape(a.shape)
    else:
        return None
    return miss if miss.any() else None


def observed_mask(y) -> np.ndarray:
    """The observed entries of targets ``y`` (any shape): ``False`` where an entry is missing
    (NaN, ``None``, pandas' NA), the meaning ``missing_targets="ignore"`` gives it.

    Parameters
    ----------
    y : array-like

    Returns
    -------
    ndarray of bool, the shape of ``y``
    """
    miss = _missing_mask(y)
    return np.ones(np.shape(y), dtype=bool) if miss is None else ~miss


def _observed_targets(y, allow: bool):
    """``(y, observed)``: with ``allow`` and missing entries, ``y`` with each missing entry
    replaced by the first observed value (a placeholder the weights of zero ignore) and the
    1-D mask of the observed entries; else ``(y, None)``."""
    if not allow:
        return y, None
    miss = _missing_mask(y)
    if miss is None:
        return y, None
    a = np.array(y, copy=True)
    seen = a[~miss]
    a[miss] = seen[0] if seen.size else 0.0
    return a, ~miss.reshape(-1)


# --------------------------------------------------------------------------- row weights
def _weight_values(sample_weight, what: str = "sample_weight") -> np.ndarray:
    """``sample_weight`` as a float64 array (real numbers only, any shape; not checked)."""
    try:
        A = np.asarray(sample_weight)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be an array of numbers: {exc}") from None
    if A.dtype.kind == "O":
        A = _real_from_object(A, what)
    elif A.dtype.kind not in _REAL_KINDS:
        raise _dtype_error(what, A.dtype)
    return A.astype(np.float64)


def _check_weight_values(w: np.ndarray, locate) -> None:
    """Raise a ValueError naming the first NaN, infinite or negative weight of ``w`` (any
    shape) and where it is: ``locate(index)`` gives the place of a position of ``w``."""
    bad = np.argwhere(~np.isfinite(w))
    if bad.size:
        where = tuple(int(i) for i in bad[0])
        kind = "NaN" if np.isnan(w[where]) else "an infinite weight"
        raise ValueError(f"sample_weight contains {kind} (first at {locate(where)}): weights "
                         "must be finite numbers >= 0.")
    bad = np.argwhere(w < 0)
    if bad.size:
        where = tuple(int(i) for i in bad[0])
        raise ValueError(f"sample_weight has a negative weight {w[where]:g} (first at "
                         f"{locate(where)}): weights must be >= 0.")


def _list_weights(sample_weight, sizes: np.ndarray) -> np.ndarray:
    """Stacked weights of per-task lists: a list of one array per task, or one array of
    ``N = sum_t n_t`` weights in the stacked order."""
    m = len(sizes)
    if isinstance(sample_weight, (list, tuple)) and len(sample_weight) == m and all(
            np.ndim(v) == 1 for v in sample_weight):
        parts = [_weight_values(v, f"sample_weight of task {t}")
                 for t, v in enumerate(sample_weight)]
        for t, (v, n_t) in enumerate(zip(parts, sizes, strict=True)):
            if v.shape != (n_t,):
                raise ValueError(f"sample_weight of task {t} has {v.size} weights but the task "
                                 f"has {n_t} rows: give one weight per row.")
            _check_weight_values(v, lambda k, t=t: f"row {k[0]} of task {t}")
        return np.concatenate(parts)
    w = _weight_values(sample_weight)
    N = int(np.sum(sizes))
    if w.shape != (N,):
        raise ValueError(f"sample_weight has shape {w.shape}; with per-task lists give a list "
                         f"of {m} per-task arrays of weights, or one array of {N} weights (the "
                         "rows of all tasks in order).")
    starts = np.cumsum(sizes)

    def locate(k):
        t = int(np.searchsorted(starts, k[0], side="right"))
        return f"row {k[0] - (starts[t - 1] if t else 0)} of task {t}"

    _check_weight_values(w, locate)
    return w


def _long_weights(sample_weight, n: int, task) -> np.ndarray:
    """The ``(n,)`` weights of long-format rows (user order), checked."""
    w = _weight_values(sample_weight)
    if w.shape != (n,):
        raise ValueError(f"sample_weight has shape {w.shape} but X has {n} rows: give one "
                         f"weight per row, shape ({n},).")
    _check_weight_values(w, lambda k: f"row {k[0]}" + (
        f", task {_label(task[k[0]])}" if task is not None else ""))
    return w


def _shared_weights(sample_weight, n: int, m: int, labels) -> np.ndarray:
    """The stacked (task-major) weights of a shared design from ``(n,)`` (every task) or
    ``(n, m)`` (one per row and task) weights, checked."""
    w = _weight_values(sample_weight)
    if w.ndim == 2 and w.shape[1] == 1 and m == 1:
        w = w[:, 0]
    if w.shape == (n,):
        _check_weight_values(w, lambda k: f"row {k[0]}")
        return np.tile(w, m)
    if w.shape == (n, m):
        _check_weight_values(w, lambda k: f"row {k[0]}, task {_label(labels[k[1]])}")
        return np.ascontiguousarray(w.T).ravel()
    raise ValueError(f"sample_weight has shape {w.shape}; with a shared design of {n} rows and "
                     f"{m} tasks give one weight per row, shape ({n},), or one per row and "
                     f"task, shape ({n}, {m}).")


def _python_kind(v) -> str | None:
    """``'str'``, ``'bool'``, ``'int'``, ``'float'`` for a scalar id or label, else None."""
    if isinstance(v, (str, np.str_)):
        return "str"
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if isinstance(v, (int, np.integer)):
        return "int"
    if isinstance(v, (float, np.floating)):
        return "float"
    return None


def _uniform_values(values: np.ndarray, what: str, noun: str) -> np.ndarray:
    """An object array of ids or labels as an array of one plain type (str, bool, int, float).

    Raises a ValueError naming the row of a missing value (``None``), of a value of another
    type (a list, a date), or of the first value whose type differs from the first row's:
    mixing ``1`` and ``'1'`` or ``1`` and ``1.0`` would merge or reorder them silently.
    """
    kinds = [_python_kind(v) for v in values.tolist()]
    for i, k in enumerate(kinds):
        if k is None:
            v = values[i]
            if v is None or (isinstance(v, float) and np.isnan(v)):
                raise ValueError(f"{what}: the {noun} of row {i} is missing ({v!r}).")
            raise ValueError(f"{what}: the {noun} of row {i} is a {type(v).__name__} ({v!r}); "
                             f"{noun}s must be strings, integers, floats or booleans.")
    first = kinds[0] if kinds else "str"
    other = next((i for i, k in enumerate(kinds) if k != first), None)
    if other is not None:
        raise ValueError(
            f"{what}: {noun}s of different types, row 0 holds {values[0]!r} ({first}) and row "
            f"{other} holds {values[other]!r} ({kinds[other]}); give all {noun}s one type (e.g. "
            "all strings), so that none are merged or reordered."
        )
    dtype = {"str": str, "bool": bool, "int": np.int64, "float": np.float64}[first or "str"]
    try:
        return np.array(values.tolist(), dtype=dtype)
    except OverflowError:
        raise ValueError(f"{what}: an integer {noun} does not fit in 64 bits.") from None


def _as_labels(y: np.ndarray, what: str) -> np.ndarray:
    """Class labels of one plain type (numbers, booleans or strings)."""
    if y.dtype.kind == "O":
        return _uniform_values(y, what, "label")
    if y.dtype.kind not in _REAL_KINDS + "US":
        raise ValueError(f"{what} has {_KIND_NAMES.get(y.dtype.kind, 'unsupported')} dtype "
                         f"{y.dtype}: class labels must be numbers, booleans or strings.")
    return y


def as_task_ids(task, what: str = "task") -> np.ndarray:
    """The task id of each row as a 1-D array of one plain type, each id kept as written.

    Ids are strings, integers, floats or booleans, all of one type: ``'01'`` and ``'1'`` are
    two tasks, and a list mixing ``1`` and ``'1'`` (or ``1`` and ``1.0``, or holding ``None``)
    is refused rather than merged. Float ids that are whole numbers below ``2**53`` in
    magnitude become ``int64`` (a task column of a float matrix holds ``1.0`` for task ``1``);
    larger or fractional floats stay floats, so that no two ids become one.

    Parameters
    ----------
    task : array-like of shape (n,)
    what : str
        How the messages name the ids.

    Returns
    -------
    ndarray of shape (n,) with dtype str, int64, float64 or bool

    Raises
    ------
    ValueError
        Naming the row of a missing id, of an id of another type, of NaN or infinity; or the
        dtype when it is complex, datetime or another non-id type.
    """
    if isinstance(task, (list, tuple)):
        task = np.array(task, dtype=object) if len(task) else np.array([], dtype=np.int64)
    task = np.asarray(task)
    if task.ndim != 1:
        raise ValueError(f"{what} ids must be 1-D (one id per row), got shape {task.shape}.")
    kind = task.dtype.kind
    if kind == "O":
        task = _uniform_values(task, f"{what} ids", "task id")
        kind = task.dtype.kind
    if kind == "S":
        task = task.astype(str)
    elif kind not in "fiubU":
        raise ValueError(f"{what} ids have {_KIND_NAMES.get(kind, 'unsupported')} dtype "
                         f"{task.dtype}: give strings, integers, floats or booleans.")
    if kind == "f":
        bad = np.flatnonzero(~np.isfinite(task))
        if bad.size:
            raise ValueError(f"{what} ids contain NaN or infinity (first at row {bad[0]}).")
        if np.all(task == np.round(task)) and np.all(np.abs(task) < 2.0**53):
            task = task.astype(np.int64)
    return task


def _id_family(kind: str) -> str:
    return {"i": "numeric", "u": "numeric", "f": "numeric", "b": "boolean"}.get(kind, "string")


def check_task_column(task_column, n_cols: int) -> int:
    """The column index ``task_column`` as a non-negative int, checked against ``n_cols``.

    Raises
    ------
    ValueError
        When ``task_column`` is not an integer (floats such as ``-1.0`` and booleans are
        refused) or is out of range.
    """
    if isinstance(task_column, (bool, np.bool_)) or not isinstance(task_column,
                                                                    (int, np.integer)):
        raise ValueError(f"task_column must be an integer column index, got {task_column!r} "
                         f"({type(task_column).__name__}).")
    col = int(task_column)
    if not -n_cols <= col < n_cols:
        raise ValueError(f"task_column={col} is out of range for X with {n_cols} columns.")
    return col % n_cols


def split_task_column(X, task_column: int):
    """Split long-format ``X`` into (features, task ids) where the ids are column ``task_column``.

    Sparse input goes through :func:`check_sparse_structure` first. Returns copies; ``X`` is
    not modified.
    """
    if sp.issparse(X):
        X = check_sparse_structure(X)
        col = check_task_column(task_column, X.shape[1])
        X = X.tocsc()
        task = X[:, col].toarray().ravel()
        keep = [j for j in range(X.shape[1]) if j != col]
        return X[:, keep].tocsr(), task
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D to hold a task column, got shape {X.shape}.")
    col = check_task_column(task_column, X.shape[1])
    task = X[:, col].copy()
    return np.delete(X, col, axis=1), task


def _encode_binary(y, what: str, classes: np.ndarray | None):
    """Map labels to -1/+1 given (or learning) the two classes."""
    if classes is None:
        classes = np.unique(y)
        if len(classes) > 2:
            raise ValueError(
                f"{what} has {len(classes)} classes {classes[:5].tolist()}...; multi-task "
                "classifiers here are binary per task (encode multi-class data as one task per "
                "class, shared X)."
            )
    return np.where(y == classes[-1], 1.0, -1.0), classes


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
    if missing_targets not in (None, *MISSING_TARGETS):
        raise ValueError(f"missing_targets must be 'error' or 'ignore', got {missing_targets!r}.")
    allow_missing = missing_targets == "ignore" and not predicting
    hint = _MISSING_HINT if missing_targets == "error" else ""
    weights = None  # stacked user weights (checked), or None
    observed = None  # stacked mask of the observed targets, or None
    # ---------------------------------------------------------------- format (b): lists
    if isinstance(X, (list, tuple)) and (
        len(X) == 0 or all(sp.issparse(x) or np.ndim(x) == 2 for x in X)
    ):
        if len(X) == 0:
            raise ValueError("X is an empty list: at least one task is needed.")
        # dense lists are checked together once stacked (below), sparse or mixed ones here
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
        if task is not None:
            raise ValueError("Pass either lists of per-task arrays or task=, not both.")
        if not predicting:
            if not isinstance(y, (list, tuple)) or len(y) != len(Xs):
                raise ValueError(
                    f"With a list of {len(Xs)} per-task designs, y must be a list of "
                    f"{len(Xs)} per-task targets."
                )
            # regression targets are checked together once stacked (below)
            ys, seen = [], []
            for t, yt in enumerate(y):
                yt, obs_t = _observed_targets(yt, allow_missing)
                ys.append(_as_1d_target(yt, f"y of task {t}", classification,
                                        check=classification, hint=hint))
                seen.append(obs_t)
            if any(o is not None for o in seen):
                observed = np.concatenate([np.ones(len(yt), dtype=bool) if o is None else o
                                           for yt, o in zip(ys, seen, strict=True)])
            for t, (Xt, yt) in enumerate(zip(Xs, ys, strict=True)):
                if Xt.shape[0] != len(yt):
                    raise ValueError(
                        f"Task {t}: X has {Xt.shape[0]} rows but y has {len(yt)} entries."
                    )
        task_labels = np.arange(len(Xs)) if known_tasks is None else np.asarray(known_tasks)
        if known_tasks is not None and len(Xs) != len(known_tasks):
            raise ValueError(
                f"X is a list of {len(Xs)} tasks but the model was fitted on {len(known_tasks)}."
            )
        sizes = np.array([Xt.shape[0] for Xt in Xs], dtype=np.int64)
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        if any_sparse:
            Xall = sp.vstack(Xs, format="csr")
        else:
            Xall = np.vstack(Xs)
            _check_tasks(Xall, starts, [f"X of task {t}" for t in range(len(Xs))])
        if predicting:
            yall = np.zeros(int(sizes.sum()))
        else:
            yall = np.concatenate(ys)
            if not classification:
                _check_tasks(yall, starts, [f"y of task {t}" for t in range(len(ys))], hint)
            if sample_weight is not None:
                weights = _list_weights(sample_weight, sizes)
        order = None
        shared = False
    else:
        Xa = _as_2d_float(X, "X", check_finite=False)  # checked below, naming the task
        if task_column is not None:
            if task is not None:
                raise ValueError("Pass task ids either as task= or through task_column, not both.")
            Xa, task = split_task_column(Xa, task_column)
        d = Xa.shape[1]
        n = Xa.shape[0]
        if n == 0:
            raise ValueError("X has no rows.")
        y2d = None
        if not predicting:
            y_arr = np.asarray(y)
            if y_arr.ndim == 2 and y_arr.shape[1] > 1 and task is None:
                y2d = y_arr
            elif y_arr.ndim not in (1, 2):
                raise ValueError(f"y must be 1-D or 2-D, got shape {y_arr.shape}.")
            if y_arr.shape[0] != n:
                raise ValueError(f"X has {n} rows but y has {y_arr.shape[0]}.")
        if y2d is not None or (predicting and task is None and known_tasks is not None
                               and len(known_tasks) > 1):
            # ------------------------------------------------------ format (a): shared X
            shared = True
            if y2d is not None:
                m = y2d.shape[1]
                cols, seen = [], []
                for t in range(m):
                    col, obs_t = _observed_targets(y2d[:, t], allow_missing)
                    cols.append(_as_1d_target(col, f"y of task {t}", classification,
                                              hint=hint))
                    seen.append(np.ones(n, dtype=bool) if obs_t is None else obs_t)
                if allow_missing:
                    observed = np.concatenate(seen)
            else:
                assert known_tasks is not None
                m = len(known_tasks)
                cols = [np.zeros(n) for _ in range(m)]
            if known_tasks is not None and m != len(known_tasks):
                raise ValueError(
                    f"y has {m} task columns but the model was fitted on {len(known_tasks)} tasks."
                )
            task_labels = np.arange(m) if known_tasks is None else np.asarray(known_tasks)
            sizes = np.full(m, n, dtype=np.int64)
            _check_finite(Xa, "X")
            _check_scale(Xa, "X")
            Xall = Xa
            ys = cols
            yall = np.concatenate(cols) if not predicting else np.zeros(n * m)
            if not predicting and sample_weight is not None:
                weights = _shared_weights(sample_weight, n, m, task_labels)
            order = None
        else:
            # ------------------------------------------------------ format (c): long format
            shared = False
            if task is None:
                if known_tasks is not None and len(known_tasks) == 1:
                    task = np.repeat(np.asarray(known_tasks)[:1], n)
                else:
                    task = np.zeros(n, dtype=np.int64)
            if np.ndim(task) != 1 or len(task) != n:
                raise ValueError(f"task must be 1-D with one id per row of X ({n}), got shape "
                                 f"{np.shape(task)}.")
            task = as_task_ids(task)
            if known_tasks is None:
                task_labels, inv = np.unique(task, return_inverse=True)
            else:
                task_labels = np.asarray(known_tasks)
                fitted, given = _id_family(task_labels.dtype.kind), _id_family(task.dtype.kind)
                if fitted != given:
                    raise ValueError(
                        f"The task ids are {given} ({_label(task[0])}, ...) but the model was "
                        f"fitted on {fitted} ids {task_labels.tolist()[:10]}: give the ids as "
                        "in training."
                    )
                try:
                    lookup = {v: i for i, v in enumerate(task_labels.tolist())}
                    inv = np.array([lookup[v] for v in task.tolist()], dtype=np.int64)
                except KeyError as exc:
                    raise ValueError(
                        f"Unknown task id {exc.args[0]!r}: the model was fitted on tasks "
                        f"{task_labels.tolist()[:10]}{'...' if len(task_labels) > 10 else ''}."
                    ) from None
            _check_finite(Xa, "X", task)
            _check_scale(Xa, "X", task)
            order = np.argsort(inv, kind="stable")
            sizes = np.bincount(inv, minlength=len(task_labels)).astype(np.int64)
            if not predicting:
                y_raw, obs_long = _observed_targets(np.asarray(y), allow_missing)
                y1 = _as_1d_target(y_raw, "y", classification, task, hint=hint)
                if obs_long is not None:
                    observed = obs_long[order]
                if sample_weight is not None:
                    weights = _long_weights(sample_weight, n, task)[order]
                empty = np.flatnonzero(sizes == 0)
                if empty.size:
                    raise ValueError(f"Task {_label(task_labels[empty[0]])} has no rows.")
                yall = y1[order]
                ys = [yall[o:e] for o, e in zip(np.r_[0, np.cumsum(sizes)[:-1]],
                                                 np.cumsum(sizes), strict=True)]
            else:
                yall = np.zeros(n)
            Xall = Xa[order]
    if d == 0:
        raise ValueError("X has no feature columns" + (" besides the task column" if
                         task_column is not None else "") + ": at least one is needed.")
    if n_features is not None and d != n_features:
        raise ValueError(f"X has {d} features, but the model was fitted with {n_features}.")

    if not predicting and (weights is not None or observed is not None):
        Xall, yall, ys, sizes, order, weights = _apply_weights(
            Xall, yall, ys, sizes, order, weights, observed, shared, task_labels)

    if classification and not predicting:
        allv = np.concatenate([np.asarray(v) for v in ys])
        if classes is None:
            classes = np.unique(allv)
            if len(classes) > 2:
                raise ValueError(
                    f"y has {len(classes)} classes; multi-task classifiers here are binary per "
                    "task (give one task per class with a shared X for one-vs-rest)."
                )
            if len(classes) < 2:
                raise ValueError(
                    f"y has one class only ({classes.tolist()}): need two classes."
                )
        cuts = _offsets_of(sizes)
        for t, yt in enumerate(ys):
            if weights is not None:  # the class of a pair of weight zero does not count
                yt = yt[weights[cuts[t]:cuts[t + 1]] > 0]
            if len(np.unique(yt)) < 2:
                raise ValueError(
                    f"Task {_label(task_labels[t])} has one class only ({np.unique(yt).tolist()}): "
                    "each classification task needs both classes in its training rows."
                )
        yall, classes = _encode_binary(allv, "y", classes)

    offsets = _offsets_of(sizes)
    data = MultiTaskData(Xall, np.asarray(yall, dtype=np.float64), offsets,
                         np.asarray(task_labels), shared, row_order=order,
                         sample_weight=weights)
    return data, (classes if classification else None)


def _offsets_of(sizes: np.ndarray) -> np.ndarray:
    """Task offsets ``[0, n_0, n_0 + n_1, ...]`` (int64) from the task sizes."""
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def _apply_weights(X, y, ys, sizes, order, weights, observed, shared: bool, labels):
    """Combine the user's weights and the observed targets into the stacked weights of the
    data; drop what weighs zero everywhere; check that every task weighs something.

    Returns ``(X, y, ys, sizes, order, weights)`` with ``weights`` None when every pair
    weighs the same (that changes nothing). Per-task and long-format rows of
    weight zero are dropped (the same data as without them); a shared design drops the rows
    that weigh zero in every task and keeps the other zeros (pairs not observed).
    """
    N = int(np.sum(sizes))
    w = np.ones(N) if weights is None else np.asarray(weights, dtype=np.float64)
    if observed is not None:
        w = np.where(observed, w, 0.0)
    offsets = _offsets_of(sizes)
    totals = np.add.reduceat(w, offsets[:-1]) if N else np.zeros(len(sizes))
    empty = np.flatnonzero(~(totals > 0))
    if empty.size:
        t = int(empty[0])
        if observed is not None and not observed[offsets[t]:offsets[t + 1]].any():
            raise ValueError(f"Task {_label(labels[t])} has no observed target: every target "
                             "of the task is missing (NaN), so there is nothing to fit.")
        raise ValueError(f"sample_weight is zero on every row of task {_label(labels[t])}: "
                         "the task has nothing to fit (drop it, or give a row a positive "
                         "weight).")
    m = len(sizes)
    if shared:
        n = X.shape[0]
        W2 = w.reshape(m, n)
        keep = W2.max(axis=0) > 0
        if not keep.all():
            X = X[np.flatnonzero(keep)]
            W2 = W2[:, keep]
            ys = [v[keep] for v in ys]
            sizes = np.full(m, int(keep.sum()), dtype=np.int64)
            y = np.concatenate(ys)
        w = W2.ravel()
    else:
        keep = w > 0
        if not keep.all():
            task_of = np.repeat(np.arange(m), sizes)[keep]
            rows = np.flatnonzero(keep)
            X = X[rows]
            y = y[keep]
            w = w[keep]
            order = None if order is None else order[keep]
            sizes = np.bincount(task_of, minlength=m).astype(np.int64)
            ys = np.split(y, np.cumsum(sizes)[:-1])
    if np.all(w == w[0]):  # one weight for every pair: the same model as no weights
        return X, y, ys, sizes, order, None
    return X, y, ys, sizes, order, w


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
