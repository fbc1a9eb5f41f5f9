"""The container of a multi-task data set: the rows of every task stacked, grouped by task.

:class:`MultiTaskData` holds the stacked design and targets, the task boundaries, the row
weights and an implicit per-task centring; it computes the per-task products (scores
``x_i^T w_{t(i)}``, gradients ``X_t^T r_t``) and caches what the solvers reuse (Gram matrices,
``X_t^T y_t``, spectral norms, :mod:`multitask.data.statistics`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from multitask.data.operators import (
    _SPARSE_BLOCK,
    _csr_matvec,
    _csr_rmatvec,
    _dense_matvec,
    _dense_rmatvec,
    _dense_squared_pass,
    _dense_task_sq_sums,
)
from multitask.data.statistics import (
    dense_means,
    gram_matrices,
    means_and_constant,
    spectral_norm_sq,
)


def _offsets_of(sizes: np.ndarray) -> np.ndarray:
    """Task offsets ``[0, n_0, n_0 + n_1, ...]`` (int64) from the task sizes."""
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


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
        offsets = _offsets_of(sizes)
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
    def cached(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """The quantity ``key`` of these data, ``compute()`` the first time it is asked for.

        What is derived from the data alone (a centred view, Gram matrices, their
        eigendecompositions at a given ridge) is computed once however many losses and fits
        read it: a path of fits on the same data (:mod:`multitask.data.converted_inputs`)
        shares it. The data are not to be modified once converted (nothing in the library
        writes to them); the keys name what is kept, and the caller's key must hold every
        option the value depends on.
        """
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def cached_latest(self, key: Hashable, version: Hashable,
                      compute: Callable[[], Any]) -> Any:
        """:meth:`cached` keeping one value per ``key``: that of the last ``version`` asked
        for (a quantity that changes with an option, as an eigendecomposition with the
        ridge, where the fits of a path ask for the same option again and again)."""
        kept = self._cache.get(key)
        if kept is None or kept[0] != version:
            kept = (version, compute())
            self._cache[key] = kept
        return kept[1]

    def gram(self) -> np.ndarray:
        """Per-task Gram matrices ``X_t^T D_t X_t`` (implicit centring applied), ``D_t`` the
        diagonal of the task's :attr:`sample_weight` (the identity without weights); cached.

        Returns shape ``(m, d, d)``, or ``(1, d, d)`` when the design is shared and its tasks
        weigh the rows alike (:attr:`shares_gram`).
        """
        if "gram" not in self._cache:
            self._cache["gram"] = gram_matrices(self)
        return self._cache["gram"]

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
            out[t] = spectral_norm_sq(self, t, intercept, weighted)
        if one and self.n_tasks:
            out[:] = out[0]
        self._cache[key] = out
        return out

    def centred_implicitly(self) -> tuple[MultiTaskData, np.ndarray, np.ndarray]:
        """``(data_c, x_mean, y_mean)``: a dense per-task design centred per task without a
        copy of ``X`` (``x_offset``), from one pass that also caches the centred ``X_t^T y_t``
        (the gradient at zero, what ``alpha_max`` needs). Cached: every loss on these data
        shares the one view (and what is cached on it).

        ``centered`` makes an explicit centred copy of a dense per-task design instead (twice
        the memory, a pass before the first gradient).
        """
        if self.shared or self.is_sparse:
            raise ValueError("centred_implicitly needs a dense per-task design.")
        return self.cached("centred_implicitly", self._centred_implicitly)

    def _centred_implicitly(self) -> tuple[MultiTaskData, np.ndarray, np.ndarray]:
        y_mean = self.y_means()
        yc = self.y - self.expand(y_mean)
        x_mean, constant, xty = dense_means(self, yc)
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
        return means_and_constant(self)

    def centered(self) -> tuple[MultiTaskData, np.ndarray, np.ndarray]:
        """Per-task centred copy: ``(data_c, x_mean, y_mean)``.

        ``x_mean`` has shape ``(d, m)`` and ``y_mean`` ``(m,)``. Dense per-task designs are
        centred explicitly; sparse or shared designs keep ``X`` and centre implicitly through
        ``x_offset``, so that sparsity and sharing survive. Cached, as
        :meth:`centred_implicitly`.
        """
        return self.cached("centered", self._centered)

    def _centered(self) -> tuple[MultiTaskData, np.ndarray, np.ndarray]:
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
