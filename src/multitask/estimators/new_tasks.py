"""Learning new tasks after fit: the small per-task problems and their strength.

``MultiTaskEstimator.fit_new_tasks`` (:mod:`multitask.estimators.base`) asks the fitted
penalty for its new-task prior ``R`` (:func:`multitask.penalties.new_task.new_task_prior`)
and solves, for each new task ``t``
alone (its ``n_t`` rows; the fitted tasks are not touched)::

    min_{w, b}  sum_{i in t} r_i ell(y_i, x_i^T w + b) + c_t [(alpha_l2 / 2) ||w||^2 + R(w)]

(``r_i = 1 / n_t``, the scaling of :mod:`multitask.losses`; ``b`` unpenalized, or fixed where
the prior fixes it). The strength ``c_t`` (:func:`strength_scales`):

* ``"scaled"``: ``c_t = nbar / n_t``, ``nbar`` the mean number of rows of the fitted tasks.
  In the library's scaling a task's loss is a mean over its rows, so in ``fit`` the prior
  weighs ``alpha n_t`` against the *sum* of a task's losses; with ``c_t = nbar / n_t`` it
  weighs ``alpha nbar`` against the new task's sum, as against a typical fitted task's (a
  prior whose weight does not grow with the task's size, like a Bayesian prior against a
  likelihood): a task with 2 rows is shrunk much more than by the fitted ``alpha``.
* ``"fitted"``: ``c_t = 1``: exactly the fitted objective's conditional on the new column
  (what a refit including the task would do to it, were the other tasks to stay fixed).
* ``"cv"``: ``c_t = g nbar / n_t`` with ``g`` in :data:`CV_GRID` chosen by cross-validation
  on the new rows, pooled over the new tasks (every new task needs :data:`CV_MIN_ROWS` rows):
  exact leave-one-out for the closed-form problems, for the whole grid in one batched solve
  (:meth:`GaussianSystem.loo_losses`); :data:`CV_FOLDS` folds within each task otherwise
  (rows dealt round-robin in their order).
* ``"auto"`` (the default): ``"cv"`` where it is cheap and the rows allow it
  (:func:`cv_applies`: a closed-form problem, every new task with :data:`CV_MIN_ROWS` rows,
  :data:`CV_MIN_TOTAL` rows in all), ``"scaled"`` otherwise.
* a number ``c``: ``c_t = c`` (a multiple of the fitted strength).

Constraint sets (balls) have no strength: ``c_t`` does not change them.

Solvers: the squared loss with a :class:`~multitask.penalties.new_task.GaussianPrior` has a
closed form (:func:`closed_form`): in the prior's standard form ``w = m0 + T v``
(:meth:`~multitask.penalties.new_task.GaussianPrior.standard_form`) each task is a plain ridge
regression, which a compiled kernel solves for every task and every strength of the grid in one
pass (:class:`StandardRidge`: one ``k x k`` Cholesky factorization per task and strength, ``k``
the dimension of the prior's subspace or ``d``, or one ``n_t x n_t`` in the space of the task's
rows when it has fewer); its numpy twin :class:`GaussianSystem` runs while numba's start-up is
not worth paying (:mod:`multitask.compiled`). A split prior with one Gaussian part is screened
first (:func:`_screened_sum`: the norm parts at zero where that is optimal; the sparse part of
sparse + low rank solved exactly otherwise); every other problem goes to the library's
accelerated proximal gradient (``"fista"``; the projected subgradient method for the hinge
loss) with the model's ``max_iter`` and ``tol``, all new tasks in one call. A
:class:`~multitask.penalties.new_task.PriorChoice` (the nearest cluster) is solved once per
option, and the option with the lowest objective is kept.

The structure (the validated hyper-parameters, the prior, ``nbar``) is computed at the first
call after a fit and kept for the next calls (:func:`fitted_structure`).
"""

from __future__ import annotations

import threading
import time
import warnings
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from multitask.compiled import charge_interpreted, interpreted_budget
from multitask.data import MultiTaskData
from multitask.losses import get_datafit
from multitask.penalties.new_task import (
    ColumnNormPrior,
    ColumnPrior,
    ElementwisePrior,
    GaussianPrior,
    PriorChoice,
    SumOfPriors,
)
from multitask.solvers import make_solver

__all__ = [
    "CV_FOLDS",
    "CV_GRID",
    "CV_MIN_ROWS",
    "STRENGTHS",
    "FittedStructure",
    "NewTaskFit",
    "StandardRidge",
    "clear_fitted_structure",
    "closed_form",
    "fit_new_task_columns",
    "fitted_structure",
    "loss_values",
    "strength_scales",
]

#: The named strength rules of ``fit_new_tasks`` (a positive number is also accepted).
STRENGTHS = ("auto", "scaled", "fitted", "cv")
#: Multipliers of the ``"scaled"`` strength tried by ``strength="cv"``, strongest first.
CV_GRID: tuple[float, ...] = tuple(float(g) for g in np.logspace(2, -2, 9))
#: Largest number of folds of ``strength="cv"`` within each new task.
CV_FOLDS = 5
#: Largest number of features for which an unconfined Gaussian prior is solved in closed
#: form (a ``d x d`` system); beyond, by the iterative solver.
CLOSED_FORM_MAX_FEATURES = 2000
#: New rows in all from which ``strength="auto"`` cross-validates (with every task at
#: ``CV_MIN_ROWS`` rows or more and a closed-form new-task problem).
CV_MIN_TOTAL = 30
#: Rows each new task needs for ``strength="cv"`` (a fold's training part then keeps at
#: least two rows, which an intercept and a slope need).
CV_MIN_ROWS = 3


@dataclass
class NewTaskFit:
    """The new tasks' fitted values (``m_new`` new tasks).

    Attributes
    ----------
    W : ndarray of shape (n_features, m_new)
    intercept : ndarray of shape (m_new,)
    coef : ndarray
        The solver's variable, ``(n_features, m_new)`` or ``(k, n_features, m_new)``.
    intercept_variable : ndarray of shape (m_new,) or None
        The solver's intercept variable where the loss keeps one.
    scales : ndarray of shape (m_new,)
        ``c_t``, the multiple of the fitted strength used for each task.
    choice : list
        The option of a :class:`~multitask.penalties.new_task.PriorChoice` each task took
        (its label), or ``None``.
    grid_multiplier : float or None
        ``g`` chosen by ``strength="cv"``.
    """

    W: np.ndarray
    intercept: np.ndarray
    coef: np.ndarray
    intercept_variable: np.ndarray | None
    scales: np.ndarray
    choice: list
    grid_multiplier: float | None = None


# ----------------------------------------------------------------------------- helpers
def task_sizes(data: MultiTaskData) -> np.ndarray:
    """The size of each task: its number of rows, or the sum of its sample weights."""
    if getattr(data, "sample_weight", None) is not None:
        return np.asarray(data.task_weight_sums, dtype=np.float64)
    return np.asarray(data.task_sizes, dtype=np.float64)


def _one_task(data: MultiTaskData, t: int, rows: np.ndarray | None = None) -> MultiTaskData:
    """Task ``t`` of ``data`` (optionally some of its rows) as a one-task data set."""
    X = data.task_X(t)
    y = data.task_y(t)
    sw = data.task_row_weights(t) if hasattr(data, "task_row_weights") else None
    if rows is not None:
        X, y = X[rows], y[rows]
        sw = None if sw is None else sw[rows]
    X = X.tocsr() if sp.issparse(X) else np.ascontiguousarray(X)
    kwargs: dict[str, Any] = {}
    if sw is not None:
        kwargs["sample_weight"] = np.asarray(sw, dtype=np.float64)
    return MultiTaskData(X, np.asarray(y, dtype=np.float64),
                         np.array([0, len(y)], dtype=np.int64), data.tasks[t : t + 1], False,
                         **kwargs)


def _task_arrays(data: MultiTaskData, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(X_t, y_t, r_t)`` of task ``t``: dense rows, targets, weights summing to 1."""
    X = _dense(data.task_X(t))
    y = data.task_y(t)
    sw = data.task_row_weights(t) if hasattr(data, "task_row_weights") else None
    if sw is None:
        return X, y, np.full(len(y), 1.0 / len(y))
    sw = np.asarray(sw, dtype=np.float64)
    return X, y, sw / float(sw.sum())


def _row_weights(data: MultiTaskData) -> np.ndarray:
    """``r_i`` of the one-task ``data`` (summing to 1)."""
    sw = getattr(data, "sample_weight", None)
    n = data.n_rows
    if sw is None:
        return np.full(n, 1.0 / n)
    return np.asarray(sw, dtype=np.float64) / float(np.sum(sw))


def loss_values(loss: str, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``ell(y_i, z_i)`` per row for the loss ``loss`` (labels -1/+1 for classification)."""
    if loss == "squared":
        return 0.5 * (z - y) ** 2
    if loss == "logistic":
        return np.logaddexp(0.0, -y * z)
    if loss == "squared_hinge":
        return np.maximum(0.0, 1.0 - y * z) ** 2
    if loss == "hinge":
        return np.maximum(0.0, 1.0 - y * z)
    raise ValueError(f"Unknown loss {loss!r}.")


def _dense(X) -> np.ndarray:
    return X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)


# ----------------------------------------------------------------------------- solves
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
        X, y, r, starts = _stacked_arrays(data)
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

    def _kernel_form(self):
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
        of shape ``(..., m)``."""
        _, _, tpad, S = self._kernel
        n = self.nmax
        A = S + c[..., None, None] * np.eye(n)
        rhs = np.broadcast_to(tpad[..., None], (*c.shape, n, 1))
        if with_inverse:
            rhs = np.concatenate([np.broadcast_to(np.eye(n), (*c.shape, n, n)), rhs], axis=-1)
        sol = np.linalg.solve(A, rhs)
        return sol[..., -1], (np.diagonal(sol[..., :n], axis1=-2, axis2=-1)
                              if with_inverse else None)

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
            alpha, _ = self._kernel_solve(scales, with_inverse=False)
            x = np.einsum("tik,ti->tk", Xpad, alpha) @ Linv  # L^{-T} Xt^T alpha, row-wise
            if not self.prior.confined:
                x = x + self.prior.mean[None]
            return self._finish(x)
        G, r0 = self._primal_form()
        A = G + scales[:, None, None] * self.Q[None]
        rhs = r0 + scales[:, None] * self.r1
        try:
            x = np.linalg.solve(A, rhs[..., None])[..., 0]
            if not np.all(np.isfinite(x)):
                raise np.linalg.LinAlgError
        except np.linalg.LinAlgError:  # a singular system: each on its own, least squares
            x = np.stack([_spd_solve(A[t], rhs[t]) for t in range(self.m)]) if self.m else rhs
        return self._finish(x)

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
            alpha, inv_diag = self._kernel_solve(scales_grid, with_inverse=True)
            c = scales_grid[:, rows]
            lev = intercept * r[None] + 1.0 - c * inv_diag[:, rows, pos]
            resid = c * alpha[:, rows, pos] / np.sqrt(r)[None]
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
    ``data``, solved by the compiled kernel (:mod:`multitask.estimators._new_tasks_numba`).

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
            Z = _dense(X) * T
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
        from multitask.estimators._new_tasks_numba import kernel_solution, ridge_grid

        C = np.ascontiguousarray(C, dtype=np.float64)
        G, m = C.shape
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

    def weights(self, V: np.ndarray) -> np.ndarray:
        """``W = m0 + T V^T`` (``(d, m)``) from the solutions ``V`` (``(m, k)``)."""
        T = self.T
        return self.m0[:, None] + (T * V.T if isinstance(T, float) else T @ V.T)


def closed_form(data: MultiTaskData, prior: GaussianPrior, fit_intercept: bool,
                alpha_l2: float, scales: np.ndarray, grid: Sequence[float] | None = None
                ) -> tuple[np.ndarray, np.ndarray, float | None]:
    """``(W (d, m), b (m,), g)``: the squared loss with a Gaussian prior in closed form, for
    every task of ``data``, at strengths ``scales`` (one per task), or, with ``grid``, at
    ``g * scales`` for the multiplier ``g`` of ``grid`` with the lowest exact leave-one-out
    loss pooled over the tasks (the first one on ties; ``g`` is ``None`` without a grid).

    :class:`StandardRidge` (the compiled kernel) when the prior has a standard form; the
    numpy twin :class:`GaussianSystem` while numba's start-up is not worth paying
    (:mod:`multitask.compiled`: its time counts against that start-up), and for priors without
    a standard form (a singular ``Q``, solved by least squares) or when a factorization fails.
    """
    scales = np.asarray(scales, dtype=np.float64)
    C = scales[None] if grid is None else np.asarray(grid, dtype=np.float64)[:, None] * scales
    form = prior.standard_form(alpha_l2) if np.all(C > 0) else None
    if form is not None and interpreted_budget() == 0.0:
        system = StandardRidge(data, form, fit_intercept)
        out = system.solve_grid(C, loo=grid is not None)
        if out is not None:
            losses, solution = out
            i = int(np.argmin(losses)) if losses is not None else 0
            V, b = solution(i)
            W = system.weights(V)
            return W, b, None if grid is None else float(np.asarray(grid)[i])
    t0 = time.perf_counter()
    twin = GaussianSystem(data, prior, fit_intercept, alpha_l2)
    i = 0
    if grid is not None:
        losses = twin.loo_losses(C)
        i = int(np.argmin(np.where(np.isfinite(losses), losses, np.inf)))
    W, b = twin.solve(C[i])
    if form is not None:
        charge_interpreted(time.perf_counter() - t0)
    return W, b, None if grid is None else float(np.asarray(grid)[i])


def _gaussian_closed_form_all(data: MultiTaskData, prior: GaussianPrior, fit_intercept: bool,
                              scales: np.ndarray, alpha_l2: float
                              ) -> tuple[np.ndarray, np.ndarray]:
    """``(W (d, m), b (m,))`` of the squared loss with a Gaussian prior at strengths
    ``scales`` (:func:`closed_form`)."""
    W, b, _ = closed_form(data, prior, fit_intercept, alpha_l2, scales)
    return W, b


#: The per-task matrices come from one batched product over the rows padded to the largest
#: task when the padding holds at most this many times the rows (tasks of similar sizes);
#: otherwise from one product per task.
_PAD_FACTOR = 4


def _stacked_arrays(data: MultiTaskData):
    """``(X, y, r, starts)``: the dense stacked rows of every task (a shared design repeated
    per task), the targets, the weights ``r`` (summing to 1 in each task) and the first row
    of each task."""
    if data.shared:
        parts = [_task_arrays(data, t) for t in range(data.n_tasks)]
        X = np.vstack([p[0] for p in parts])
        y = np.concatenate([p[1] for p in parts])
        r = np.concatenate([p[2] for p in parts])
    else:
        X = _dense(data.X)
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


def _objective(est, data: MultiTaskData, prior: ColumnPrior, c: float, w, b) -> float:
    """The new-task objective of the one-task ``data`` at ``(w, b)`` (strength ``c``)."""
    X, y, r = _task_arrays(data, 0)
    loss = float(r @ loss_values(est._loss_name(), y, X @ w + b))
    ridge = c * float(getattr(est, "alpha_l2", 0.0))
    return loss + 0.5 * ridge * float(w @ w) + prior.scaled(c).value(np.asarray(w)[:, None])


def _closed_form_applies(est, prior: ColumnPrior, d: int) -> bool:
    """Whether the squared loss and a Gaussian prior (with a fitted intercept) meet."""
    return (isinstance(prior, GaussianPrior) and est._loss_name() == "squared"
            and prior.fixed_intercept is None
            and (prior.confined or d <= CLOSED_FORM_MAX_FEATURES))


def _fixed_model(prior: ColumnPrior) -> bool:
    """Whether the prior fixes the whole model (the pooled model's population model)."""
    return (isinstance(prior, GaussianPrior) and prior.fixed_intercept is not None
            and prior.confined and prior.basis.shape[1] == 0)


def solve_new_tasks(est, data: MultiTaskData, prior: ColumnPrior, scales: np.ndarray,
                    screen: bool = True, coef_init: np.ndarray | None = None,
                    intercept_init: np.ndarray | None = None) -> NewTaskFit:
    """Solve the new-task problem of every task of ``data``, task ``t`` at strength
    ``scales[t]`` (``prior`` unscaled).

    The squared loss with a Gaussian prior: :func:`_gaussian_closed_form_all`. A choice of
    priors: each task and option alone, the best objective kept. Otherwise one call of the
    iterative solver on all the new tasks together (the prior is separable over them, with
    one strength per column), or one call per task when ``alpha_l2`` needs a strength per
    task; a split prior with one Gaussian part is first screened (:func:`_screened_sum`,
    unless ``screen`` is false).
    """
    scales = np.asarray(scales, dtype=np.float64)
    m, d = data.n_tasks, data.n_features
    none = [None] * m
    if _fixed_model(prior):
        W = np.repeat(prior.mean[:, None], m, axis=1)
        return NewTaskFit(W, np.full(m, float(prior.fixed_intercept)), W.copy(), None, scales,
                          none)
    fit_intercept = bool(getattr(est, "fit_intercept", True))
    alpha_l2 = float(getattr(est, "alpha_l2", 0.0))
    if _closed_form_applies(est, prior, d):
        W, b = _gaussian_closed_form_all(data, prior, fit_intercept, scales, alpha_l2)
        return NewTaskFit(W, b, W.copy(), None, scales, none)
    if screen and isinstance(prior, SumOfPriors) and m:
        screened = _screened_sum(est, data, prior, scales, fit_intercept, alpha_l2)
        if screened is not None:
            return screened
    if isinstance(prior, PriorChoice) or (alpha_l2 and np.ptp(scales) > 0):
        parts = [_solve_task(est, _one_task(data, t), prior, float(scales[t]))
                 for t in range(m)]
        return NewTaskFit(np.column_stack([f.W[:, 0] for f in parts]),
                          np.array([f.intercept[0] for f in parts]),
                          np.concatenate([f.coef for f in parts], axis=-1),
                          None if any(f.intercept_variable is None for f in parts)
                          else np.concatenate([f.intercept_variable for f in parts]),
                          scales, [f.choice[0] for f in parts])
    return _iterative(est, data, prior, scales, coef_init, intercept_init)


def _iterative(est, data: MultiTaskData, prior: ColumnPrior, scales: np.ndarray,
               coef_init: np.ndarray | None = None, intercept_init: np.ndarray | None = None
               ) -> NewTaskFit:
    """The library's iterative solver on all the tasks of ``data`` at once (``alpha_l2``
    times ``scales[0]``: callers give equal scales when ``alpha_l2`` is not zero), started
    from ``coef_init`` and ``intercept_init`` when given (the solver's variable)."""
    m = data.n_tasks
    fit_intercept = bool(getattr(est, "fit_intercept", True))
    options = dict(est._datafit_options())
    options["alpha_l2"] = float(getattr(est, "alpha_l2", 0.0)) * (float(scales[0]) if m else 1.0)
    datafit = get_datafit(est._loss_name(), data, fit_intercept, **options)
    name = "fista" if "gradient" in datafit.capabilities else "subgradient"
    solver = make_solver(name, max_iter=int(getattr(est, "max_iter", 5000)),
                         tol=float(getattr(est, "tol", 1e-4)))
    result = solver.solve(datafit, prior.scaled(scales), coef_init=coef_init,
                          intercept_init=intercept_init)
    b = np.asarray(result.intercept, dtype=np.float64).copy()
    if prior.fixed_intercept is not None:
        b[:] = prior.fixed_intercept
    ivar = (None if result.intercept_variable is None
            else np.asarray(result.intercept_variable, dtype=np.float64).copy())
    return NewTaskFit(np.array(result.W, copy=True), b, np.array(result.coef, copy=True), ivar,
                      scales, [None] * m)


def _zero_at_zero(part: ColumnPrior) -> str | None:
    """``"l1"`` or ``"l2"`` when ``part`` is a norm ``s a ||.||`` (an l1 norm with weights,
    or the column norm) whose zero is optimal iff the loss gradient ``g`` satisfies
    ``|g_j| <= s a_j`` or ``||g|| <= s alpha``; ``None`` otherwise."""
    if isinstance(part, ColumnNormPrior):
        return "l2"
    if (isinstance(part, ElementwisePrior) and not np.any(part.mean) and not np.any(part.quad)
            and not np.any(part.free) and np.all(np.isfinite(part.l1))):
        return "l1"
    return None


def _screened_sum(est, data: MultiTaskData, prior: SumOfPriors, scales: np.ndarray,
                  fit_intercept: bool, alpha_l2: float) -> NewTaskFit | None:
    """A split prior with one Gaussian part and norm parts (robust MTL, rMTFL, sparse + low
    rank) under the squared loss: the Gaussian part alone in closed form, the norm parts at
    zero, kept for every task where zero satisfies the norm parts' optimality condition
    (exact: the condition is the KKT condition of the whole problem at that point); the other
    tasks go to the iterative solver. ``None`` when the prior is not of that shape."""
    parts = list(prior.parts)
    kinds = [_zero_at_zero(p) for p in parts]  # type: ignore[arg-type]
    gauss = [i for i, k in enumerate(kinds) if k is None]
    if len(gauss) != 1 or not _closed_form_applies(est, parts[gauss[0]], data.n_features):
        return None
    if any(p.fixed_intercept is not None for p in parts):  # type: ignore[attr-defined]
        return None
    g_part = parts[gauss[0]]
    W, b = _gaussian_closed_form_all(data, g_part, fit_intercept, scales,  # type: ignore[arg-type]
                                     alpha_l2)
    # the loss gradient at (W, b) per task: sum_i r_i (x_i^T w + b - y_i) x_i + c alpha_l2 w
    X, y, r, starts = _stacked_arrays(data)
    rows = np.repeat(np.arange(data.n_tasks), np.diff(np.append(starts, len(r))))
    resid = r * (np.einsum("nd,dn->n", X, W[:, rows]) + b[rows] - y)
    G = np.add.reduceat(X * resid[:, None], starts, axis=0).T + alpha_l2 * scales * W
    ok = np.ones(data.n_tasks, dtype=bool)
    slack = 1.0 + 1e-9
    for i, (part, kind) in enumerate(zip(parts, kinds, strict=True)):
        if i == gauss[0]:
            continue
        if kind == "l2":
            ok &= np.linalg.norm(G, axis=0) <= slack * scales * part.alpha  # type: ignore
        else:
            ok &= np.all(np.abs(G) <= slack * scales[None, :] * part.l1[:, None], axis=0)  # type: ignore
    coef = np.zeros((len(parts), *W.shape))
    coef[gauss[0]] = W
    fit = NewTaskFit(W, b, coef, None, scales, [None] * data.n_tasks)
    rest = np.flatnonzero(~ok)
    l1_parts = [i for i, k in enumerate(kinds) if k == "l1"]
    if rest.size and alpha_l2 == 0 and len(parts) == 2 and len(l1_parts) == 1:
        from sklearn import config_context

        solved = []
        # the inputs of lars_path_gram are valid by construction: its checks are skipped
        with config_context(skip_parameter_validation=True):
            for t in rest:  # sparse + low rank: the exact lasso of the sparse part
                point = _split_lasso(data, t, g_part, parts[l1_parts[0]],  # type: ignore[arg-type]
                                     float(scales[t]), fit_intercept)
                if point is None:
                    continue
                (fit.coef[l1_parts[0], :, t], fit.coef[gauss[0], :, t],
                 fit.intercept[t]) = point
                fit.W[:, t] = point[0] + point[1]
                solved.append(t)
        rest = np.setdiff1d(rest, solved)
    if rest.size:  # the iterative solver on the other tasks whose norm parts are not zero,
        # started from the screened point (their norm parts at zero, the Gaussian part optimal)
        sub = solve_new_tasks(est, data.subset_tasks(rest), prior, scales[rest], screen=False,
                              coef_init=fit.coef[..., rest], intercept_init=fit.intercept[rest])
        fit.W[:, rest], fit.intercept[rest] = sub.W, sub.intercept
        fit.coef[..., rest] = sub.coef
    return fit


#: Relative slack of the exact test of :func:`_split_lasso` (the optimality conditions of the
#: new-task problem, relative to the l1 strengths).
_KKT_RTOL = 1e-8


def _split_lasso(data: MultiTaskData, t: int, gauss: GaussianPrior, l1: ElementwisePrior,
                 c: float, fit_intercept: bool
                 ) -> tuple[np.ndarray, np.ndarray, float] | None:
    """Task ``t`` of a split prior ``w = p + q``, Gaussian ``q`` and weighted-l1 ``p``, exactly.

    The problem ``min sum_i r_i (y_i - x_i^T (p + q) - b)^2 / 2 + c [R_G(q) + sum_j a_j
    |p_j|]`` (no ``alpha_l2``) is minimized over ``q`` and ``b`` in closed form for a fixed
    ``p``: with the standard form ``q = m0 + T v`` of ``R_G``, the centred rows and targets
    scaled by ``sqrt(r_i)`` (``E``, ``e``, ``tc`` shifted by ``m0``) and ``S = E T``, the
    partial minimum over ``v`` is ``1/2 (e - E p)^T N (e - E p)`` with
    ``N = I - S (S^T S + c I)^{-1} S^T = c (S S^T + c I)^{-1}``. What is left is a lasso with
    the Gram matrix ``M = E^T N E`` and ``h = E^T N e``::

        min_p  1/2 p^T M p - h^T p + c sum_j a_j |p_j|,

    solved exactly by scikit-learn's LARS-lasso homotopy (``lars_path_gram``, features
    rescaled to one strength), then ``v = (S^T S + c I)^{-1} S^T (e - E p)`` and
    ``b = ybar - xbar^T (p + q)``. The result is kept only if it passes the exact test: the
    optimality conditions of the whole problem, ``|g_j| <= c a_j`` where ``p_j = 0`` and
    ``g_j = -c a_j sign(p_j)`` elsewhere (``g`` the loss gradient in ``w``; ``q`` and ``b``
    are optimal by construction), to :data:`_KKT_RTOL` relative.

    Returns
    -------
    (p, q, b) or None
        ``None`` when the weights are not all positive and finite, when ``R_G`` has no
        standard form, or when the result fails the exact test (the caller then iterates).
    """
    from sklearn.linear_model import lars_path_gram

    a = c * np.asarray(l1.l1, dtype=np.float64)
    form = gauss.standard_form(0.0)
    if form is None or not (np.all(np.isfinite(a)) and np.all(a > 0)):
        return None
    m0, T = form
    X, y, r = _task_arrays(data, t)
    if fit_intercept:
        xbar, ybar = r @ X, float(r @ y)
    else:
        xbar, ybar = np.zeros(X.shape[1]), 0.0
    sr = np.sqrt(r)
    E = sr[:, None] * (X - xbar)
    e = sr * (y - ybar) - E @ m0
    S = E * T if isinstance(T, float) else E @ T
    N = c * np.linalg.inv(S @ S.T + c * np.eye(len(r)))
    NE = N @ E
    M, h = E.T @ NE, NE.T @ e
    scale = a.min() / a  # p = scale * u: one strength a.min() for u
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LARS's notes on degenerate paths: the test decides
        u = lars_path_gram(h * scale, M * np.outer(scale, scale), n_samples=1,
                           alpha_min=float(a.min()), method="lasso", return_path=False)[2]
    p = scale * np.asarray(u, dtype=np.float64).ravel()
    resid = e - E @ p
    v = np.linalg.solve(S.T @ S + c * np.eye(S.shape[1]), S.T @ resid)
    q = m0 + (T * v if isinstance(T, float) else T @ v)
    g = -E.T @ (resid - S @ v)  # the loss gradient (centred: b optimal)
    nz = p != 0
    ok = (np.all(np.abs(g[~nz]) <= (1.0 + _KKT_RTOL) * a[~nz])
          and np.all(np.abs(g[nz] + a[nz] * np.sign(p[nz])) <= _KKT_RTOL * a[nz]))
    if not ok or not np.all(np.isfinite(q)):
        return None
    return p, q, ybar - float(xbar @ (p + q))


def _solve_task(est, data: MultiTaskData, prior: ColumnPrior, c: float) -> NewTaskFit:
    """One task at strength ``c``; over the options of a :class:`PriorChoice`, the option
    with the lowest objective (ties: the first), its label in ``choice``."""
    if not isinstance(prior, PriorChoice):
        return solve_new_tasks(est, data, prior, np.array([c]))
    best, best_value = None, np.inf
    for option, name in zip(prior.options, prior.labels, strict=True):
        fit = solve_new_tasks(est, data, option, np.array([c]))
        value = _objective(est, data, option, c, fit.W[:, 0], float(fit.intercept[0]))
        if best is None or value < best_value:
            best, best_value = fit, value
            best.choice = [name]
    assert best is not None
    return best


# ----------------------------------------------------------------------------- strength
def _check_strength(strength) -> str | float:
    if isinstance(strength, str):
        if strength not in STRENGTHS:
            raise ValueError(f"strength must be one of {list(STRENGTHS)} or a positive number, "
                             f"got {strength!r}.")
        return strength
    try:
        c = float(strength)
    except (TypeError, ValueError):
        raise ValueError(f"strength must be one of {list(STRENGTHS)} or a positive number, "
                         f"got {strength!r}.") from None
    if isinstance(strength, bool) or not (np.isfinite(c) and c > 0):
        raise ValueError(f"strength must be one of {list(STRENGTHS)} or a finite number > 0, "
                         f"got {strength!r}.")
    return c


def strength_scales(strength, sizes: np.ndarray, fitted_mean_size: float) -> np.ndarray:
    """``c_t`` for new tasks of sizes ``sizes`` (module docstring; ``"cv"`` gives the
    ``"scaled"`` values, which the chosen multiplier then multiplies)."""
    rule = _check_strength(strength)
    sizes = np.asarray(sizes, dtype=np.float64)
    if rule == "fitted":
        return np.ones_like(sizes)
    if rule == "auto":
        raise ValueError("strength='auto' is resolved by fit_new_task_columns.")
    if isinstance(rule, float):
        return np.full_like(sizes, rule)
    return float(fitted_mean_size) / sizes


def _folds(n: int) -> list[np.ndarray]:
    k = min(CV_FOLDS, n)
    return [np.arange(f, n, k) for f in range(k)]


def _check_cv_rows(data: MultiTaskData) -> None:
    small = np.flatnonzero(data.task_sizes < CV_MIN_ROWS)
    if small.size:
        t = small[0]
        raise ValueError(
            f"strength='cv' needs at least {CV_MIN_ROWS} rows in every new task; task "
            f"{data.tasks[t]!r} has {int(data.task_sizes[t])}: use strength='scaled'.")


def _cv_multiplier(est, data: MultiTaskData, prior: ColumnPrior, nbar: float) -> float:
    """``g`` of :data:`CV_GRID` with the lowest held-out loss pooled over the new tasks.

    The closed-form problems use exact leave-one-out (:meth:`GaussianSystem.loo_losses`);
    the others ``K``-fold cross-validation, fold ``f`` holding out rows ``f, f + K, ...`` of
    every task (``K = min(CV_FOLDS, n_t)``; a classifier's task whose training part lacks a
    class sits that fold out).
    """
    _check_cv_rows(data)
    nbar_scales = nbar / task_sizes(data)
    if _closed_form_applies(est, prior, data.n_features):  # exact leave-one-out
        g = closed_form(data, prior,  # type: ignore[arg-type]
                        bool(getattr(est, "fit_intercept", True)),
                        float(getattr(est, "alpha_l2", 0.0)), nbar_scales, CV_GRID)[2]
        assert g is not None
        return g
    m = data.n_tasks
    X, y, _, starts = _stacked_arrays(data)
    sizes = np.diff(np.append(starts, len(y)))
    sw = getattr(data, "sample_weight", None)
    sw = None if sw is None else np.asarray(sw, dtype=np.float64)  # per stacked row
    task_of = np.repeat(np.arange(m), sizes)
    K = np.minimum(CV_FOLDS, sizes)
    fold = (np.arange(len(y)) - starts[task_of]) % K[task_of]
    losses = np.zeros(len(CV_GRID))
    loss = est._loss_name()
    counted = 0
    for f in range(int(K.max())):
        valid = K > f
        train = valid[task_of] & (fold != f)
        if est._is_classifier:
            pos = np.bincount(task_of[train & (y > 0)], minlength=m)
            neg = np.bincount(task_of[train & (y <= 0)], minlength=m)
            valid &= (pos > 0) & (neg > 0)  # a training part with one class cannot fit
            train &= valid[task_of]
        held = valid[task_of] & (fold == f)
        tasks = np.flatnonzero(valid)
        if not tasks.size:
            continue
        offsets = np.concatenate([[0], np.cumsum(np.bincount(task_of[train], minlength=m)[
            tasks])]).astype(np.int64)
        kwargs: dict[str, Any] = {} if sw is None else {"sample_weight": sw[train]}
        part = MultiTaskData(X[train], y[train], offsets, np.asarray(data.tasks)[tasks], False,
                             **kwargs)
        where = np.full(m, -1)
        where[tasks] = np.arange(tasks.size)
        rows = where[task_of[held]]
        Xte, yte = X[held], y[held]
        base = nbar / task_sizes(part)
        sols = [(fit.W, fit.intercept) for fit in
                (solve_new_tasks(est, part, prior, g * base) for g in CV_GRID)]
        weight = None if sw is None else sw[held]
        for g_i, (W, b) in enumerate(sols):
            z = np.einsum("nd,dn->n", Xte, W[:, rows]) + b[rows]
            values = loss_values(loss, yte, z)
            losses[g_i] += float(np.sum(values) if weight is None else weight @ values)
        counted += tasks.size
    if counted == 0:
        raise ValueError("strength='cv' found no fold whose training rows hold both classes: "
                         "use strength='scaled'.")
    return float(CV_GRID[int(np.argmin(losses))])


def cv_applies(est, data: MultiTaskData, prior: ColumnPrior) -> bool:
    """Whether ``strength="auto"`` cross-validates: the new-task problem has a closed form
    (the squared loss with a Gaussian prior: the whole strength grid costs one
    eigen-decomposition per fold), every new task has at least :data:`CV_MIN_ROWS` rows and
    there are at least :data:`CV_MIN_TOTAL` in all."""
    return (_closed_form_applies(est, prior, data.n_features)
            and int(np.min(data.task_sizes)) >= CV_MIN_ROWS
            and int(data.n_rows) >= CV_MIN_TOTAL)


def fit_new_task_columns(est, data: MultiTaskData, prior: ColumnPrior, strength,
                         fitted_mean_size: float) -> NewTaskFit:
    """Solve the new-task problem of every task of ``data`` (module docstring).

    Parameters
    ----------
    est : MultiTaskEstimator
        The fitted model (its loss, ``fit_intercept``, ``alpha_l2``, ``max_iter``, ``tol``).
    data : MultiTaskData
        The new tasks' rows (classification labels -1/+1).
    prior : ColumnPrior
        The fitted structure's new-task prior.
    strength : {"auto", "scaled", "fitted", "cv"} or float
    fitted_mean_size : float
        ``nbar``, the mean size of the fitted tasks.

    Returns
    -------
    NewTaskFit
    """
    rule = _check_strength(strength)
    if rule == "auto":
        rule = "cv" if cv_applies(est, data, prior) else "scaled"
    sizes = task_sizes(data)
    scales = strength_scales("scaled" if rule == "cv" else rule, sizes, fitted_mean_size)
    g = None
    if _closed_form_applies(est, prior, data.n_features):  # one pass for both steps
        if rule == "cv":
            _check_cv_rows(data)
        W, b, g = closed_form(data, prior,  # type: ignore[arg-type]
                              bool(getattr(est, "fit_intercept", True)),
                              float(getattr(est, "alpha_l2", 0.0)), scales,
                              CV_GRID if rule == "cv" else None)
        if g is not None:
            scales = g * scales
        return NewTaskFit(W, b, W, None, scales, [None] * data.n_tasks, g)
    if rule == "cv":
        g = _cv_multiplier(est, data, prior, float(fitted_mean_size))
        scales = g * scales
    fit = solve_new_tasks(est, data, prior, scales)
    fit.grid_multiplier = g
    return fit


# ----------------------------------------------------------------------------- the estimator
def _raw_labels(y) -> np.ndarray:
    """The distinct observed labels of ``y`` (any layout), for the class check."""
    if isinstance(y, (list, tuple)) and len(y) and np.ndim(y[0]) >= 1:
        values = np.concatenate([np.asarray(v, dtype=object).ravel() for v in y])
    else:
        values = np.asarray(y, dtype=object).ravel()
    keep = [v for v in values.tolist()
            if v is not None and not (isinstance(v, float) and np.isnan(v))]
    return np.asarray(keep, dtype=object)


def _check_classes(est, y) -> None:
    classes = np.asarray(est.classes_)
    known = set(classes.tolist())
    unknown = [v for v in dict.fromkeys(_raw_labels(y).tolist()) if v not in known]
    if unknown:
        raise ValueError(f"The new tasks' labels {unknown[:5]} are not among the model's "
                         f"classes {classes.tolist()}: a new task is learned with the classes "
                         "of fit.")


def _id_family(kind: str) -> str:
    return {"i": "numeric", "u": "numeric", "f": "numeric", "b": "boolean"}.get(kind, "string")


def new_task_labels(est, data: MultiTaskData, positional: bool) -> np.ndarray:
    """The labels of the new tasks of ``data``: the ids given (long format) or, for per-task
    lists and shared designs, the integers after the model's largest integer id."""
    fitted = np.asarray(est.tasks_)
    if positional:
        if fitted.dtype.kind not in "iu":
            raise ValueError(
                f"The model's tasks have {_id_family(fitted.dtype.kind)} ids "
                f"({fitted.tolist()[:3]}...): give the new tasks' ids with task= (long "
                "format) rather than as per-task lists or target columns.")
        start = int(fitted.max()) + 1 if fitted.size else 0
        return np.arange(start, start + data.n_tasks, dtype=fitted.dtype)
    labels = np.asarray(data.tasks)
    if _id_family(labels.dtype.kind) != _id_family(fitted.dtype.kind):
        raise ValueError(
            f"The new task ids are {_id_family(labels.dtype.kind)} ({labels.tolist()[:3]}) but "
            f"the model's are {_id_family(fitted.dtype.kind)} ({fitted.tolist()[:3]}): give "
            "them as in training.")
    known = set(fitted.tolist())
    taken = [v for v in labels.tolist() if v in known]
    if taken:
        raise ValueError(
            f"Task id {taken[0]!r} is already a task of the model: fit_new_tasks learns tasks "
            "the model has not seen and never changes a fitted one (refit to update it).")
    return labels


def _checked_matrix(est, X):
    """``X`` checked against the fitted features: a plain 2-D float64 array of a model fitted
    without feature names needs only its number of columns checked (the data layer checks
    its values); anything else goes through scikit-learn's checks (``_validate_X``)."""
    if (type(X) is np.ndarray and X.ndim == 2 and X.dtype == np.float64 and X.shape[0] >= 1
            and not hasattr(est, "feature_names_in_")):
        if X.shape[1] != est.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(est).__name__} is "
                             f"expecting {est.n_features_in_} features as input.")
        return X
    return est._validate_X(X, reset=False)


def convert_new_rows(est, X, y, task, sample_weight) -> tuple[MultiTaskData, bool]:
    """The new tasks' rows as :class:`MultiTaskData` (validated like ``fit``'s, against the
    fitted features and classes), and whether their labels are positional."""
    from multitask.data import as_multitask_data
    from multitask.estimators.base import is_task_list

    missing = getattr(est, "missing_targets", None)
    classes = None
    if est._is_classifier:
        _check_classes(est, y)
        classes = np.asarray(est.classes_)
    options: dict[str, Any] = {"classification": est._is_classifier, "classes": classes,
                               "sample_weight": sample_weight}
    if missing is not None:
        options["missing_targets"] = missing
    if is_task_list(X):
        data, _ = as_multitask_data(X, y, task, n_features=est.n_features_in_, **options)
        return data, True
    X = _checked_matrix(est, X)
    data, _ = as_multitask_data(X, y, task, task_column=est.task_column, **options)
    positional = task is None and est.task_column is None
    return data, positional


def _append(a: np.ndarray, b: np.ndarray, axis: int) -> np.ndarray:
    return np.ascontiguousarray(np.concatenate([np.asarray(a), np.asarray(b)], axis=axis))


def append_new_tasks(est, labels: np.ndarray, fit: NewTaskFit) -> None:
    """Append the new tasks to the fitted attributes (the fitted tasks' values untouched).

    ``tasks_``, ``coef_``, ``intercept_``; ``coef_variable_`` and ``intercept_variable_`` when
    they hold one column per task; the per-task components a split model declares
    (``_task_components``, parts of ``coef_variable_``); and the arrays of ``solver_result_``
    (a copy: the fit's record of iterations and objective is kept).
    """
    import dataclasses

    m_old = len(est.tasks_)
    est.tasks_ = np.concatenate([np.asarray(est.tasks_), labels])
    est.coef_ = _append(est.coef_, fit.W.T, axis=0)
    est.intercept_ = _append(est.intercept_, fit.intercept, axis=0)
    V = np.asarray(est.coef_variable_)
    per_task = V.shape[-1] == m_old and V.ndim == fit.coef.ndim
    if per_task:
        est.coef_variable_ = _append(V, fit.coef, axis=-1)
        for i, name in enumerate(getattr(est, "_task_components", ())):
            if hasattr(est, name):
                setattr(est, name, _append(getattr(est, name), fit.coef[i].T, axis=0))
    bvar = getattr(est, "intercept_variable_", None)
    if bvar is not None and per_task and np.shape(bvar) == (m_old,):
        extra = (fit.intercept_variable if fit.intercept_variable is not None
                 else fit.intercept)
        est.intercept_variable_ = _append(bvar, extra, axis=0)
    result = getattr(est, "solver_result_", None)
    if result is not None and dataclasses.is_dataclass(result):
        changes: dict[str, Any] = {"W": est.coef_.T.copy(), "intercept": est.intercept_.copy()}
        if per_task:
            changes["coef"] = np.array(est.coef_variable_, copy=True)
            changes["intercept_variable"] = (None if getattr(est, "intercept_variable_", None)
                                             is None else est.intercept_variable_.copy())
        est.solver_result_ = dataclasses.replace(result, **changes)


# ----------------------------------------------------------------------------- the structure
@dataclass(frozen=True)
class FittedStructure:
    """What new tasks take from a fitted model: computed once per fit (:func:`fitted_structure`).

    Attributes
    ----------
    prior : ColumnPrior
        The new-task prior of the fitted penalty at the fitted weights of the tasks of fit
        (its standard forms, once computed, are kept with it).
    nbar : float
        The mean size of the tasks of fit (:func:`fitted_mean_size`).
    """

    prior: ColumnPrior
    nbar: float


@dataclass
class _CacheEntry:
    structure: FittedStructure
    fit: Any  # the fitted attribute that a fit replaces (fit_task_sizes_), by identity
    state: dict[str, Any]  # what the prior is made of (:func:`_state`), copied


#: One entry per live fitted model (weak keys: a model that is deleted leaves the cache; a
#: copy or a model loaded from a file starts without one, nothing is added to the model).
_STRUCTURES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_STRUCTURES_LOCK = threading.Lock()
_PARAM_NAMES: dict[type, tuple[str, ...]] = {}
_IMMUTABLE = (bool, int, float, str, type(None))


def _param_names(est) -> tuple[str, ...]:
    cls = type(est)
    if cls not in _PARAM_NAMES:
        _PARAM_NAMES[cls] = tuple(cls._all_params())
    return _PARAM_NAMES[cls]


def _state(est) -> dict[str, Any]:
    """Everything the new-task prior and ``nbar`` are read from: the hyper-parameters, the
    sizes, fitted variable, weights, intercepts and labels of the tasks of fit, the number of
    features, and the context of the prior's rule (``_new_task_context``: clusters,
    multipliers, the stored structure)."""
    m = n_fit_tasks(est)
    return {"params": {n: getattr(est, n, None) for n in _param_names(est)},
            "sizes": np.asarray(est.fit_task_sizes_), "d": int(est.n_features_in_),
            "variable": np.asarray(est.coef_variable_)[..., :m],
            "coef": np.asarray(est.coef_)[:m], "intercept": np.asarray(est.intercept_)[:m],
            "tasks": np.asarray(est.tasks_)[:m], "context": est._new_task_context()}


def _snapshot(value):
    """A copy of ``value`` that in-place changes of the value do not reach (arrays and
    containers copied, other objects kept)."""
    if isinstance(value, _IMMUTABLE):
        return value
    if isinstance(value, np.ndarray) or sp.issparse(value):
        return value.copy()
    if isinstance(value, dict):
        return {k: _snapshot(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_snapshot(v) for v in value)
    if isinstance(value, set):
        return set(value)
    return value


def _same(a, b) -> bool:
    """Whether ``b`` still equals the snapshot ``a``: arrays (dense or sparse) by shape, dtype
    and values, containers item by item, other values by ``==`` (values without a usable
    ``==`` are not known to be the same; an object compared by identity is not known to have
    kept its content)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape
                and a.dtype == b.dtype and bool(np.array_equal(a, b)))
    if sp.issparse(a) or sp.issparse(b):
        return (sp.issparse(a) and sp.issparse(b) and a.shape == b.shape
                and a.dtype == b.dtype and (a != b).nnz == 0)
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - values without a usable ==: not known to be the same
        return False


def fitted_structure(est) -> FittedStructure:
    """The fitted structure of ``est`` for new tasks, its hyper-parameters validated.

    Computed at the first call after a fit (``est._validate_params()``,
    ``est._new_task_prior()``, :func:`fitted_mean_size`) and kept for the model's later calls
    while it stays the same fit: the entry is dropped when the model is refitted
    (``fit_task_sizes_`` replaced), or when anything the prior is read from changed since,
    compared by value (:func:`_state`: a hyper-parameter changed by ``set_params`` or
    assignment, the fitted weights, intercepts or variable of the tasks of fit, the rule's
    context; arrays and containers by their content, other objects by ``==``, which for most
    is identity: an object parameter changed in place is not seen, call
    :func:`clear_fitted_structure`). The cache lives beside the model (weak references), never
    in its attributes: copies and models loaded from files start without it.
    """
    fit = getattr(est, "fit_task_sizes_", None)
    with _STRUCTURES_LOCK:
        entry = _STRUCTURES.get(est)
    if entry is not None and fit is not None and entry.fit is fit:
        if _same(entry.state, _state(est)):
            return entry.structure
    est._validate_params()
    structure = FittedStructure(est._new_task_prior(), fitted_mean_size(est))
    entry = _CacheEntry(structure, fit, _snapshot(_state(est)))
    with _STRUCTURES_LOCK:
        _STRUCTURES[est] = entry
    return structure


def clear_fitted_structure(est) -> None:
    """Drop the cached structure of ``est`` (the next ``fit_new_tasks`` computes it again)."""
    with _STRUCTURES_LOCK:
        _STRUCTURES.pop(est, None)


def fitted_mean_size(est) -> float:
    """``nbar``: the mean size of the tasks of fit (:attr:`fit_task_sizes_`)."""
    sizes = getattr(est, "fit_task_sizes_", None)
    if sizes is None or not np.size(sizes):
        raise ValueError(
            f"This {type(est).__name__} does not record the sizes of its fitted tasks "
            "(fit_task_sizes_: a distributed fit or a model saved by an older version): refit "
            "it in memory to learn new tasks.")
    return float(np.mean(sizes))


#: Appended to the data layer's "Unknown task id" error at prediction.
UNKNOWN_TASK_HINT = (
    " To predict a task the model has not seen, learn it from a few of its rows with "
    "fit_new_tasks(X_new, y_new, task=ids_new), or predict it with the population model "
    "(the mean of the fitted tasks' models): unknown_tasks='population'.")

#: The accepted values of ``unknown_tasks``.
UNKNOWN_TASKS = ("error", "population")


def check_unknown_tasks(unknown_tasks) -> str:
    if not isinstance(unknown_tasks, str) or unknown_tasks not in UNKNOWN_TASKS:
        raise ValueError(f"unknown_tasks must be one of {list(UNKNOWN_TASKS)}, got "
                         f"{unknown_tasks!r}.")
    return unknown_tasks


def n_fit_tasks(est) -> int:
    """The number of tasks of fit (the first rows of ``coef_``; later ones were added by
    ``fit_new_tasks``)."""
    sizes = getattr(est, "fit_task_sizes_", None)
    return len(est.tasks_) if sizes is None else int(np.size(sizes))


def population_model(est) -> tuple[np.ndarray, float]:
    """``(w, b)``: the mean of the fitted tasks' weights and intercepts (the tasks of fit;
    for the pooled model, its common model)."""
    m = n_fit_tasks(est)
    coef = np.asarray(est.coef_)[:m]
    return coef.mean(axis=0), float(np.mean(np.asarray(est.intercept_)[:m]))


def population_scores(est, X, task) -> np.ndarray:
    """Scores of long-format rows: each row of a fitted task by its task's model, each row of
    an unknown task by :func:`population_model`."""
    from multitask.data import (
        as_multitask_data,
        as_task_ids,
        split_task_column,
        unstack_predictions,
    )
    from multitask.estimators.base import is_task_list

    if is_task_list(X):
        raise ValueError("unknown_tasks='population' applies to long-format rows with task ids "
                         "(task= or task_column): per-task lists and shared designs address "
                         "the model's tasks by position.")
    X = est._validate_X(X, reset=False)
    if est.task_column is not None:
        if task is not None:
            raise ValueError("Pass task ids either as task= or through task_column, not both.")
        features, ids = split_task_column(X, est.task_column)
    elif task is None:
        raise ValueError("unknown_tasks='population' needs the task id of each row (task=, or "
                         "task_column).")
    else:
        features, ids = X, task
    ids = as_task_ids(ids)
    n = X.shape[0]
    if ids.shape != (n,):
        raise ValueError(f"task must be 1-D with one id per row of X ({n}), got shape "
                         f"{ids.shape}.")
    fitted = np.asarray(est.tasks_)
    if n and _id_family(ids.dtype.kind) != _id_family(fitted.dtype.kind):
        raise ValueError(
            f"The task ids are {_id_family(ids.dtype.kind)} ({ids.tolist()[:3]}) but the model "
            f"was fitted on {_id_family(fitted.dtype.kind)} ids {fitted.tolist()[:10]}: give "
            "the ids as in training.")
    known_set = set(fitted.tolist())
    known = np.fromiter((v in known_set for v in ids.tolist()), dtype=bool, count=n)
    out = np.empty(n)
    if known.any():
        rows = np.flatnonzero(known)
        out[rows] = est._scores(X[rows], None if est.task_column is not None else ids[rows])
    if not known.all():
        rows = np.flatnonzero(~known)
        # the features were checked against the fitted ones by _validate_X
        data, _ = as_multitask_data(features[rows], None, np.zeros(rows.size, dtype=np.int64))
        w, b = population_model(est)
        out[rows] = unstack_predictions(data, data.matvec(w[:, None]) + b)
    return out
