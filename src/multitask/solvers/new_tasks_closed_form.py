"""The squared loss with a Gaussian prior in closed form, for every new task at once: the
systems behind :func:`multitask.solvers.new_tasks.closed_form`.

For task ``t`` at strength ``c`` the new-task problem (:mod:`multitask.solvers.new_tasks`) with
the squared loss and a :class:`~multitask.penalties.new_task.GaussianPrior` is a linear system
``(G_t + c Q) x = r0_t + c r1_t``. :class:`StandardRidge` solves it in the prior's standard
form ``w = m0 + T v`` as a plain ridge regression with the compiled kernel
(:mod:`multitask.solvers._new_tasks_numba`: one ``k x k`` or ``n_t x n_t`` Cholesky
factorization per task and strength); :class:`GaussianSystem` is its numpy twin (batched
solves in the space of the unknowns or of each task's rows, and the exact limit for
strengths below what a factorization resolves, :data:`RESOLVED_STRENGTH`). Both give the
exact leave-one-out losses of a grid of strengths without a refit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from multitask.data import MultiTaskData
from multitask.penalties.new_task import GaussianPrior

__all__ = [
    "RESOLVED_STRENGTH",
    "GaussianSystem",
    "StandardRidge",
    "dense",
    "null_tolerance",
    "stacked_arrays",
    "task_arrays",
]


def dense(X) -> np.ndarray:
    """``X`` as a dense float array (a sparse matrix converted)."""
    return X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)


def task_arrays(data: MultiTaskData, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(X_t, y_t, r_t)`` of task ``t``: dense rows, targets, weights summing to 1."""
    X = dense(data.task_X(t))
    y = data.task_y(t)
    sw = data.task_row_weights(t) if hasattr(data, "task_row_weights") else None
    if sw is None:
        return X, y, np.full(len(y), 1.0 / len(y))
    sw = np.asarray(sw, dtype=np.float64)
    return X, y, sw / float(sw.sum())


#: A strength ``c`` at most this multiple of a task's curvature (the trace of its Gram matrix
#: in the prior's metric) is below what a factorization of ``G + c Q`` resolves: the closed
#: forms then use an eigen-decomposition, exact down to ``c = 0`` (the limit: the fit of the
#: task's rows closest to the prior), rather than a factorization that rounds ``c`` away.
RESOLVED_STRENGTH = 1e-10


def null_tolerance(lam: np.ndarray) -> np.ndarray:
    """The eigenvalues of each symmetric positive semi-definite matrix (last axis of ``lam``)
    counted as zero: at most ``n eps lam_max`` (rounding)."""
    top = np.max(lam, axis=-1, keepdims=True, initial=0.0)
    return lam.shape[-1] * np.finfo(np.float64).eps * np.maximum(top, 0.0)


#: The per-task matrices come from one batched product over the rows padded to the largest
#: task when the padding holds at most this many times the rows (tasks of similar sizes);
#: otherwise from one product per task.
_PAD_FACTOR = 4


def stacked_arrays(data: MultiTaskData):
    """``(X, y, r, starts)``: the dense stacked rows of every task (a shared design repeated
    per task), the targets, the weights ``r`` (summing to 1 in each task) and the first row
    of each task."""
    if data.shared:
        parts = [task_arrays(data, t) for t in range(data.n_tasks)]
        X = np.vstack([p[0] for p in parts])
        y = np.concatenate([p[1] for p in parts])
        r = np.concatenate([p[2] for p in parts])
    else:
        X = dense(data.X)
        y = np.asarray(data.y, dtype=np.float64)
        sw = getattr(data, "sample_weight", None)
        sizes = np.asarray(data.task_sizes)
        if sw is None:
            r = np.repeat(1.0 / sizes, sizes)
        else:
            sums = np.add.reduceat(np.asarray(sw, dtype=np.float64), data.offsets[:-1])
            r = np.asarray(sw, dtype=np.float64) / np.repeat(sums, sizes)
    return X, y, r, np.asarray(data.offsets[:-1], dtype=np.int64)


def _spd_solve(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``A^{-1} b`` for a symmetric positive semi-definite ``A`` (least squares when it is
    singular: the minimum-norm minimizer)."""
    if A.shape[0] == 0:
        return np.zeros(0)
    A = 0.5 * (A + A.T)
    try:
        return scipy.linalg.solve(A, b, assume_a="pos", check_finite=False)
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
        return scipy.linalg.lstsq(A, b, check_finite=False)[0]
    except scipy.linalg.LinAlgWarning:  # pragma: no cover - warnings as errors
        return scipy.linalg.lstsq(A, b, check_finite=False)[0]


class GaussianSystem:
    """The squared loss with a Gaussian prior, in closed form, for every task of ``data``.

    For task ``t`` at strength ``c``, with weights ``r_i`` (summing to 1), the weighted means
    ``xbar, ybar`` (zero without intercept), centred ``Xc, yc``, ``G = Xc^T diag(r) Xc`` and
    ``C = Xc^T diag(r) yc``, the optimum of the new-task problem solves
    ``(G + c (alpha_l2 I + P)) w = C + c P mu``; for a prior confined to ``mu + range(B)``,
    ``w = mu + B a`` with ``(B^T G B + c (alpha_l2 I + diag(p))) a = B^T (C - G mu) -
    c alpha_l2 B^T mu``; then ``b = ybar - xbar^T w``. Both are ``(G_t + c Q) x = r0_t +
    c r1_t`` with ``k`` unknowns (``k = d``, or the dimension of the subspace).

    Two ways to solve them, the cheaper one is used: in the space of the unknowns (one batched
    ``k x k`` solve), or, when every task has fewer rows than unknowns, ``alpha_l2 = 0`` and
    ``Q = L L^T`` is positive definite, in the space of each task's rows (kernel form): with
    ``Xt = diag(sqrt(r)) Z L^{-T}`` (the centred rows in the prior's metric, ``Z = Xc`` or
    ``Xc B``), ``tt = diag(sqrt(r)) (target - Z mu)`` and ``S = Xt Xt^T`` (``n_t x n_t``), the
    unknowns are ``mu + L^{-T} Xt^T (S + c I)^{-1} tt``. :meth:`loo_losses` gives the exact
    leave-one-out loss for a whole grid of strengths the same way, in one batched solve.
    """

    def __init__(self, data: MultiTaskData, prior: GaussianPrior, fit_intercept: bool,
                 alpha_l2: float):
        m, d = data.n_tasks, data.n_features
        B, mu = prior.basis, prior.mean
        self.prior, self.m = prior, m
        confined = prior.confined
        k = B.shape[1] if confined else d
        X, y, r, starts = stacked_arrays(data)
        if fit_intercept and len(r):
            means = np.add.reduceat(X * r[:, None], starts, axis=0)
            ybar = np.add.reduceat(r * y, starts)
        else:
            means, ybar = np.zeros((m, d)), np.zeros(m)
        rows = np.repeat(np.arange(m), np.diff(np.append(starts, len(r))))
        Xc = X - means[rows]
        yc = y - ybar[rows]
        if confined:
            Z = Xc @ B
            target = yc - Xc @ mu
            Q = alpha_l2 * np.eye(k) + np.diag(prior.precision)
            r1 = -alpha_l2 * (B.T @ mu)
        else:
            Z, target = Xc, yc
            P = prior.precision_matrix()
            Q = alpha_l2 * np.eye(d) + P
            r1 = P @ mu
        sizes = np.diff(np.append(starts, len(r)))
        pos = np.arange(len(r)) - starts[rows] if len(r) else rows
        self.k, self.starts, self.nmax = k, starts, int(sizes.max()) if len(r) else 0
        self.Q, self.r1 = Q, np.broadcast_to(r1, (m, k))
        self.alpha_l2 = float(alpha_l2)
        self.fit_intercept = bool(fit_intercept)
        self.means, self.ybar = means, ybar
        self._rows = (Z, target, r, rows, pos)
        self._padded = m * self.nmax <= _PAD_FACTOR * len(r) + 1024
        sw = getattr(data, "sample_weight", None)
        self._weights = None if sw is None else np.asarray(sw, dtype=np.float64)
        self._primal: tuple[np.ndarray, np.ndarray] | None = None
        self._kernel = self._kernel_form() if (len(r) and self.nmax < k and alpha_l2 == 0
                                               and np.all(r > 0) and self._padded) else None

    # ----------------------------------------------------------------- the two forms
    def _primal_form(self) -> tuple[np.ndarray, np.ndarray]:
        """``(G, r0)``: the per-task ``k x k`` matrices and right-hand sides (computed once)."""
        if self._primal is None:
            Z, target, r, rows, pos = self._rows
            m, k = self.m, self.k
            Zr = Z * r[:, None]
            if not len(r):
                G, r0 = np.zeros((m, k, k)), np.zeros((m, k))
            elif self._padded:  # tasks of similar sizes: padded rows, one batched product
                Zpad = np.zeros((m, self.nmax, k))
                Zpad[rows, pos] = Z
                Zrpad = np.zeros((m, self.nmax, k))
                Zrpad[rows, pos] = Zr
                G = Zrpad.transpose(0, 2, 1) @ Zpad
                r0 = np.add.reduceat(Zr * target[:, None], self.starts, axis=0)
            else:  # one product per task
                ends = np.append(self.starts[1:], len(r))
                G = np.stack([Zr[a:e].T @ Z[a:e]
                              for a, e in zip(self.starts, ends, strict=True)])
                r0 = np.add.reduceat(Zr * target[:, None], self.starts, axis=0)
            self._primal = (G, r0)
        return self._primal

    def _kernel_form(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """``(Linv, Xpad, tpad, S)`` of the kernel form, or ``None`` (``Q`` not definite)."""
        try:
            L = np.linalg.cholesky(self.Q)
        except np.linalg.LinAlgError:
            return None
        Z, target, r, rows, pos = self._rows
        prior = self.prior
        if not prior.confined:  # the unknowns are w - mu: shift the targets
            target = target - Z @ prior.mean
        Linv = scipy.linalg.solve_triangular(L, np.eye(self.k), lower=True)
        sr = np.sqrt(r)
        Xt = (Z @ Linv.T) * sr[:, None]
        Xpad = np.zeros((self.m, self.nmax, self.k))
        Xpad[rows, pos] = Xt
        tpad = np.zeros((self.m, self.nmax))
        tpad[rows, pos] = sr * target
        # padded rows are zero: the identity added below keeps their block invertible
        return Linv, Xpad, tpad, Xpad @ Xpad.transpose(0, 2, 1)

    def _kernel_solve(self, c: np.ndarray, with_inverse: bool):
        """``(S + c I)^{-1} tt`` (and the diagonal of ``(S + c I)^{-1}``) for strengths ``c``
        of shape ``(..., m)``; only with the kernel form."""
        assert self._kernel is not None
        _, _, tpad, S = self._kernel
        n = self.nmax
        A = S + c[..., None, None] * np.eye(n)
        rhs = np.broadcast_to(tpad[..., None], (*c.shape, n, 1))
        if with_inverse:
            rhs = np.concatenate([np.broadcast_to(np.eye(n), (*c.shape, n, n)), rhs], axis=-1)
        sol = np.linalg.solve(A, rhs)
        return sol[..., -1], (np.diagonal(sol[..., :n], axis1=-2, axis2=-1)
                              if with_inverse else None)

    def _kernel_unresolved(self, c: np.ndarray) -> bool:
        """Whether a strength of ``c`` (shape ``(..., m)``) lies below what ``S + c I`` resolves
        (:data:`RESOLVED_STRENGTH` times the task's ``trace(S)``): the eigen-decomposition of
        :meth:`_kernel_eigen` then gives the solution instead of a factorization."""
        assert self._kernel is not None
        trace = np.trace(self._kernel[3], axis1=-2, axis2=-1)
        return bool(np.any(c <= RESOLVED_STRENGTH * trace))

    def _kernel_eigen(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(alpha, c alpha, c diag((S + c I)^{-1}))`` for strengths ``c`` of shape ``(..., m)``
        by the eigen-decomposition ``S = U diag(lam) U^T`` of each task (exact for every
        ``c >= 0``, the limit ``c -> 0`` included).

        ``alpha = sum_{lam_j > 0} u_j (u_j^T tt) / (lam_j + c)``: the directions of the null
        space of ``S`` (``lam_j`` at most :func:`null_tolerance`) are left out, since
        ``Xt^T u_j = 0`` there and they do not change the weights; ``c alpha`` and
        ``c diag((S + c I)^{-1})`` (the leave-one-out residuals and leverages) weigh them by
        ``c / (0 + c) = 1``.
        """
        assert self._kernel is not None
        _, _, tpad, S = self._kernel
        lam, U = np.linalg.eigh(S)  # (m, n), (m, n, n)
        null = lam <= null_tolerance(lam)
        proj = np.einsum("tij,ti->tj", U, tpad)  # u_j^T tt
        cc = c[..., None]
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = np.where(null, 0.0, 1.0 / (lam + cc))
            ratio = np.where(null, 1.0, cc / (lam + cc))
        alpha = np.einsum("tij,...tj->...ti", U, inv * proj)
        c_alpha = np.einsum("tij,...tj->...ti", U, ratio * proj)
        c_inv_diag = np.einsum("tij,...tj->...ti", U * U, ratio)
        return alpha, c_alpha, c_inv_diag

    # ----------------------------------------------------------------- solutions
    def _finish(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        prior = self.prior
        W = (prior.mean[:, None] + prior.basis @ x.T) if prior.confined else x.T
        return W, self.ybar - np.einsum("td,dt->t", self.means, W)

    def solve(self, scales: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(W (d, m), b (m,))`` at strengths ``scales`` (one per task)."""
        scales = np.asarray(scales, dtype=np.float64)
        if self._kernel is not None and np.all(scales > 0):
            Linv, Xpad, _, _ = self._kernel
            alpha = None
            if not self._kernel_unresolved(scales):
                try:
                    alpha, _ = self._kernel_solve(scales, with_inverse=False)
                except np.linalg.LinAlgError:
                    alpha = None
            if alpha is None or not np.all(np.isfinite(alpha)):  # below rounding: exactly
                alpha = self._kernel_eigen(scales)[0]
            x = np.einsum("tik,ti->tk", Xpad, alpha) @ Linv  # L^{-T} Xt^T alpha, row-wise
            if not self.prior.confined:
                x = x + self.prior.mean[None]
            return self._finish(x)
        G, r0 = self._primal_form()
        A = G + scales[:, None, None] * self.Q[None]
        rhs = r0 + scales[:, None] * self.r1
        # tasks whose strength is below what G + c Q resolves: the limit, exactly
        tiny = scales * np.abs(self.Q).max(initial=0.0) <= RESOLVED_STRENGTH * np.trace(
            G, axis1=-2, axis2=-1) if self.m else np.zeros(0, dtype=bool)
        try:
            x = np.linalg.solve(A, rhs[..., None])[..., 0]
            if not np.all(np.isfinite(x)):
                raise np.linalg.LinAlgError
        except np.linalg.LinAlgError:  # a singular system: each on its own
            tiny = np.ones(self.m, dtype=bool)
            x = np.zeros_like(rhs)
        if np.any(tiny):
            x[tiny] = self._primal_limit(G[tiny], r0[tiny], scales[tiny], A[tiny], rhs[tiny])
        return self._finish(x)

    def _primal_limit(self, G: np.ndarray, r0: np.ndarray, c: np.ndarray, A: np.ndarray,
                      rhs: np.ndarray) -> np.ndarray:
        """The solutions of ``(G_t + c_t Q) x = r0_t + c_t r1`` for these tasks, exact for every
        ``c_t >= 0`` when ``Q = L L^T`` is positive definite: with ``u = L^T x``,
        ``(L^{-1} G_t L^{-T} + c_t I) u = L^{-1} (r0_t + c_t r1)``; along the eigenvectors
        ``v_j`` of ``L^{-1} G_t L^{-T}`` (eigenvalues ``lam_j``), ``u_j = v_j^T L^{-1} (r0_t +
        c_t r1) / (lam_j + c_t)``, and ``u_j = v_j^T L^{-1} r1`` where ``lam_j`` is zero (there
        ``v_j^T L^{-1} r0_t = 0``: the data say nothing and the prior decides, as in the limit
        ``c_t -> 0``). Least squares, task by task, when ``Q`` is singular."""
        try:
            L = np.linalg.cholesky(self.Q)
        except np.linalg.LinAlgError:
            return np.stack([_spd_solve(A[t], rhs[t]) for t in range(len(c))])
        Linv = scipy.linalg.solve_triangular(L, np.eye(self.k), lower=True)
        Gw = Linv @ G @ Linv.T
        lam, V = np.linalg.eigh(0.5 * (Gw + Gw.transpose(0, 2, 1)))
        r1 = self.r1[: len(c)]
        p0 = np.einsum("tkj,tk->tj", V, r0 @ Linv.T)
        p1 = np.einsum("tkj,tk->tj", V, r1 @ Linv.T)
        null = lam <= null_tolerance(lam)
        cc = c[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            u = np.where(null, p1, (p0 + cc * p1) / (lam + cc))
        return np.einsum("tkj,tj->tk", V, u) @ Linv

    def loo_losses(self, scales_grid: np.ndarray) -> np.ndarray:
        """The leave-one-out loss ``sum_i w_i (e_i / (1 - h_ii))^2 / 2`` at each row
        ``scales_grid[g]`` (shape ``(n_grid, m)``), pooled over the tasks: exact leave-one-out
        cross-validation of the ``"scaled"`` rule without a refit.

        With ``c_t = g nbar / n_t`` the prior weighs ``g nbar Q`` against the *sum* of the
        task's losses whatever its number of rows, so the fit without row ``i`` is the
        penalized least squares of the other rows at the same weight, and the
        leave-one-out lemma gives its residual on row ``i`` as ``e_i / (1 - h_ii)``: ``e_i``
        the residual of the fit on all rows, ``h_ii = r_i + r_i z_i^T (G + c Q)^{-1} z_i`` the
        leverage (``r_i`` for the intercept, when there is one, the rest for the centred row
        ``z_i``; in the kernel form ``1 - c [(S + c I)^{-1}]_ii`` and the residual
        ``c [(S + c I)^{-1} tt]_i / sqrt(r_i)``). One batched solve for the whole grid.
        """
        Z, target, r, rows, pos = self._rows
        scales_grid = np.asarray(scales_grid, dtype=np.float64)
        n_grid, m, k = scales_grid.shape[0], self.m, self.k
        intercept = float(self.fit_intercept)
        if self._kernel is not None and np.all(scales_grid > 0):
            try:
                if self._kernel_unresolved(scales_grid):
                    raise np.linalg.LinAlgError
                alpha, inv_diag = self._kernel_solve(scales_grid, with_inverse=True)
                c_alpha, c_inv_diag = scales_grid[..., None] * alpha, (
                    scales_grid[..., None] * inv_diag)
            except np.linalg.LinAlgError:  # strengths below rounding: exactly
                _, c_alpha, c_inv_diag = self._kernel_eigen(scales_grid)
            lev = intercept * r[None] + 1.0 - c_inv_diag[:, rows, pos]
            resid = c_alpha[:, rows, pos] / np.sqrt(r)[None]
        else:
            G, r0 = self._primal_form()
            nmax = self.nmax
            Zpad = np.zeros((m, k, nmax))
            Zpad[rows, :, pos] = Z
            A = G[None] + scales_grid[:, :, None, None] * self.Q[None, None]
            rhs = np.concatenate([(r0[None] + scales_grid[:, :, None] * self.r1[None])[
                ..., None], np.broadcast_to(Zpad, (n_grid, m, k, nmax))], axis=-1)
            try:
                sol = np.linalg.solve(A, rhs)
            except np.linalg.LinAlgError:  # singular systems: least squares, one by one
                sol = np.stack([np.stack([scipy.linalg.lstsq(A[g, t], rhs[g, t])[0]
                                          for t in range(m)]) for g in range(n_grid)])
            a = sol[..., 0]  # (n_grid, m, k)
            MZ = sol[..., 1:]  # (n_grid, m, k, nmax)
            resid = target[None] - np.einsum("nk,gnk->gn", Z, a[:, rows])
            # MZ[:, rows, :, pos] puts the row axis first (advanced indices apart)
            lev = r[None] * (intercept + np.einsum("nk,ngk->gn", Z, MZ[:, rows, :, pos]))
        with np.errstate(divide="ignore", invalid="ignore"):
            loo = resid / (1.0 - lev)
        loo = np.where(np.isfinite(loo), loo, np.inf)
        w = np.ones(len(r)) if self._weights is None else self._weights
        return 0.5 * np.sum(w[None] * loo * loo, axis=1)


class StandardRidge:
    """The squared loss with a Gaussian prior in the prior's standard form, for every task of
    ``data``, solved by the compiled kernel (:mod:`multitask.solvers._new_tasks_numba`).

    With the standard form ``w = m0 + T v`` of the prior plus the ridge term
    (:meth:`~multitask.penalties.new_task.GaussianPrior.standard_form`), task ``t`` at
    strength ``c`` solves the plain ridge regression with an unpenalized intercept::

        min_{v, b}  sum_i r_i (t_i - z_i^T v - b)^2 / 2 + (c / 2) ||v||^2,
        z_i = T^T x_i,  t_i = y_i - x_i^T m0,

    then ``w = m0 + T v`` (``b`` is the task's intercept): the new-task problem itself, with
    the optimum of :class:`GaussianSystem` and the same exact leave-one-out losses
    (:meth:`solve_grid`), for a whole grid of strengths in one pass over the tasks, each
    factorized in the smaller of its two forms (``n_t x n_t`` or ``k x k``). A shared design
    is whitened once.
    """

    def __init__(self, data: MultiTaskData, form: tuple[np.ndarray, Any], fit_intercept: bool):
        m0, T = form
        X = data.X
        if isinstance(T, float):  # a multiple of the identity
            Z = dense(X) * T
        else:
            Z = np.asarray(X @ T)
        t = -np.asarray(X @ m0).ravel() if np.any(m0) else np.zeros(X.shape[0])
        y = np.asarray(data.y, dtype=np.float64)
        if data.shared:  # the rows once per task, task-major like the targets
            reps = data.n_tasks
            Z, t = np.tile(Z, (reps, 1)), np.tile(t, reps)
        self.Z = np.ascontiguousarray(Z, dtype=np.float64)
        self.t = t + y
        sw = getattr(data, "sample_weight", None)
        self.s = (np.ones(len(y)) if sw is None
                  else np.ascontiguousarray(sw, dtype=np.float64))
        self.offsets = np.asarray(data.offsets, dtype=np.int64)
        self.m0, self.T = m0, T
        self.fit_intercept = bool(fit_intercept)

    def solve_grid(self, C: np.ndarray, loo: bool = True
                   ) -> tuple[np.ndarray | None, Any] | None:
        """``(losses (G,), solution)``: the leave-one-out loss pooled over the tasks at each
        row of strengths ``C`` (``(G, m)``, all ``> 0``; ``None`` without ``loo``), and
        ``solution(g)``, the solutions ``(V (m, k), b (m,))`` at row ``g``; ``None`` when a
        factorization fails (rounding: the caller then solves otherwise)."""
        from multitask.solvers._new_tasks_numba import kernel_solution, ridge_grid

        C = np.ascontiguousarray(C, dtype=np.float64)
        G, m = C.shape
        if np.any(C <= RESOLVED_STRENGTH * self.curvature()):
            return None  # strengths below what a factorization resolves: the exact twin
        V = np.empty((G, m, self.Z.shape[1]))
        B = np.empty((G, m))
        alpha = np.empty((G, len(self.t)))
        kernel = np.empty(m, dtype=np.bool_)
        losses = np.empty(G)
        if not ridge_grid(self.Z, self.t, self.s, self.offsets, C, self.fit_intercept,
                          bool(loo), V, B, alpha, kernel, losses):
            return None

        def solution(g: int) -> tuple[np.ndarray, np.ndarray]:
            if kernel.any():
                kernel_solution(self.Z, self.t, self.s, self.offsets, self.fit_intercept,
                                alpha[g], kernel, V[g], B[g])
            return V[g], B[g]

        return (losses if loo else None), solution

    def curvature(self) -> np.ndarray:
        """An upper bound of each task's ``trace(Z_t^T diag(r) Z_t)`` (its rows in the prior's
        metric, weights ``r`` summing to 1; not centred), the scale against which a strength
        is compared (:data:`RESOLVED_STRENGTH`)."""
        starts = self.offsets[:-1]
        s = self.s if len(self.s) == len(self.Z) else np.tile(self.s, len(self.Z) // len(self.s))
        sq = s * np.einsum("ij,ij->i", self.Z, self.Z)
        return np.add.reduceat(sq, starts) / np.add.reduceat(s, starts)

    def weights(self, V: np.ndarray) -> np.ndarray:
        """``W = m0 + T V^T`` (``(d, m)``) from the solutions ``V`` (``(m, k)``)."""
        T = self.T
        return self.m0[:, None] + (T * V.T if isinstance(T, float) else T @ V.T)
