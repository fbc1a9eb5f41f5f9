"""Majorization-minimization for smooth losses of bounded curvature: the quadratic bound of
the loss, with its fixed Hessian, is minimized with the penalty by ADMM with cached per-task
eigendecompositions (insensitive to the scaling of the features, as for the squared loss).

A loss ``ell(y, z)`` with ``ell'' <= c`` (logistic ``c = 1/4``, squared hinge ``c = 2``)
satisfies, per task, with ``A_t = [X_t, 1]`` and ``z = (w_t, b_t)``::

    F(z) <= F(z_k) + grad F(z_k)^T (z - z_k) + (1/2) (z - z_k)^T Ht (z - z_k),
    Ht = c A_t^T A_t / n_t + diag(alpha_l2 I, 0)

(Boehning & Lindsay, "Monotonicity of quadratic-approximation algorithms", Annals of the
Institute of Statistical Mathematics, 1988). Minimizing the bound over the intercept ``b_t``
in closed form leaves a quadratic in ``w_t`` whose Hessian is the centred Gram matrix::

    H_t = c Xc_t^T Xc_t / n_t + alpha_l2 I,        Xc_t = X_t - 1 mu_t^T,
    b_t - b_t,k = -g_b,t / c - mu_t^T (w_t - w_t,k),
    linear term C_t = H_t w_t,k - (g_w,t - mu_t g_b,t),

so each step solves ``min_V sum_t 0.5 w_t^T H_t w_t - C_t^T w_t + h(V)`` (``W = A(V)``) with
:class:`~multitask.solvers.admm.QuadraticADMM`, whose eigendecompositions of the ``H_t`` are
computed once for the whole run (``H_t`` does not change). Each step decreases the objective
when solved exactly (the bound touches the loss at ``z_k``); the inner tolerance starts at
``inner_tol`` and follows a tenth of the outer measure, and is tightened tenfold whenever an
inexact step fails to decrease the objective (the step is then redone). The iteration count
depends on how far the loss's curvature at the solution is from the bound ``c``, not on the
conditioning of the features, which is what slows accelerated gradient on raw data.

Stopping: the library's relative optimality measure (:mod:`multitask.solvers.base`) of the
original problem, after every step.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from multitask.data import MultiTaskData
from multitask.losses import Datafit
from multitask.penalties.base import Penalty
from multitask.solvers.admm import EigenSystem, QuadraticADMM, curvature_ratio
from multitask.solvers.base import (
    Solver,
    apply_per_task,
    check_int,
    check_tol,
    measure_lipschitz,
)
from multitask.solvers.iteration import IterationRecord
from multitask.solvers.problem import Problem
from multitask.solvers.result import SolverResult

__all__ = ["ILL_CONDITIONED_BOUND", "MajorizedADMM", "QuadraticBound",
           "bound_condition_number", "few_rows_per_weight", "multinomial_separable",
           "prefer_majorized"]

#: ``solver="auto"`` prefers :class:`MajorizedADMM` to accelerated gradient for a smooth
#: non-quadratic loss when :func:`bound_condition_number` is at least this (measured by
#: ``benchmarks/bench_majorized.py``).
ILL_CONDITIONED_BOUND = 10.0
#: Largest number of entries of the bound's Hessians (``m d^2``, or ``d^2`` shared) for which
#: ``solver="auto"`` considers :class:`MajorizedADMM` (the squared loss's Gram-matrix limit).
MAX_BOUND_ENTRIES = 5e7


def bound_condition_number(datafit: Datafit) -> float:
    """``kappa = max_t lambda_max(H_t) / median_{j, t: H_t[j, j] > 0} H_t[j, j]`` of the bound's
    Hessians (:meth:`~multitask.losses.Datafit.bound_hessian`): how much a gradient method's
    step (the inverse of the largest curvature) lags behind the typical feature's curvature;
    the measure :func:`~multitask.solvers.admm.condition_number` takes of the squared loss."""
    H, _ = datafit.bound_hessian()
    top = float(np.linalg.eigvalsh(H)[:, -1].max()) if H.size else 0.0
    return curvature_ratio(top, np.diagonal(H, axis1=1, axis2=2))


def prefer_majorized(datafit: Datafit, penalty: Penalty,
                     threshold: float = ILL_CONDITIONED_BOUND) -> bool:
    """Whether ``solver="auto"`` should take :class:`MajorizedADMM` over accelerated gradient:
    a smooth loss without the ``"quadratic"`` capability (the squared loss has ADMM itself),
    at least twice as many rows per task as features on average (with fewer, the classes of
    a task are likely separable (Cover's function-counting theorem): the loss's curvature
    then vanishes at the solution, far below its bound, and majorization takes thousands of
    short steps where accelerated gradient takes hundreds), Hessians of at most
    :data:`MAX_BOUND_ENTRIES` entries, and :func:`bound_condition_number` at least
    ``threshold``."""
    if "quadratic" in datafit.capabilities or not MajorizedADMM().supports(datafit, penalty):
        return False
    data = datafit.data
    d, m = data.n_features, data.n_tasks
    if data.n_rows < 2 * d * m or (1 if data.shares_gram else m) * d * d > MAX_BOUND_ENTRIES:
        return False
    if data.shared or data.is_sparse:  # one d x d matrix (or a rare sparse per-task design)
        return bound_condition_number(datafit) >= threshold
    return _condition_estimate(datafit) >= threshold


def multinomial_separable(datafit: Datafit) -> bool:
    """Whether ``datafit`` is the multinomial loss with fewer than ``2 d K`` rows per task on
    average (``d`` features, ``K`` classes): a task's softmax model has ``d K`` weights, and
    with fewer than twice as many rows its classes are likely separable (Cover's
    function-counting theorem, as in :func:`prefer_majorized`), so that the loss's curvature
    vanishes at the solution, far below its bound."""
    if datafit.name != "multinomial":
        return False
    raw = getattr(datafit, "raw", None)
    if raw is None or not raw.n_tasks:
        return False
    n_classes = int(getattr(datafit, "n_classes", 2))
    return raw.n_rows < 2 * raw.n_features * n_classes * raw.n_tasks


def few_rows_per_weight(datafit: Datafit) -> bool:
    """Whether the tasks hold fewer than ``2 d K`` rows each on average (``d`` features, ``K``
    scores per row: the classes of the multinomial loss, one otherwise): fewer than twice a
    task's weights. A classifier's classes are then likely separable (Cover's
    function-counting theorem, :func:`multinomial_separable`) and the loss's curvature at the
    solution far below its bound; a regression's per-task Gram matrices are singular or
    nearly so. Either way the bound's steps are short (:func:`prefer_majorized`)."""
    if multinomial_separable(datafit):
        return True
    raw = getattr(datafit, "raw", None)
    data = datafit.data if raw is None else raw
    if not data.n_tasks:
        return False
    return data.n_rows < 2 * data.n_features * data.n_tasks


def _condition_estimate(datafit: Datafit) -> float:
    """:func:`bound_condition_number` of a dense per-task design without the Gram matrices
    (a fit that keeps accelerated gradient should not pay for them): the largest curvature
    from the loss's own constant for ``W`` (``c max_t ||X_t||_2^2 / n_t + alpha_l2``, an upper
    bound of the exact one when the features are not centred), the diagonals from one pass
    over the (implicitly centred) design."""
    data = datafit.data
    if datafit.has_intercept_variable and data.x_offset is None:
        data = data.centred_implicitly()[0]
    n = data.task_weight_sums  # n_t (the tasks' total row weights)
    diag = (datafit.curvature() * data.task_column_sq_norms() / n[None, :]
            + datafit.alpha_l2)
    return curvature_ratio(float(datafit.measure_constants()[0]), diag)


class QuadraticBound(Datafit):
    """``F(W) = sum_t 0.5 w_t^T H_t w_t - C_t^T w_t``: one step's quadratic model (the bound
    of :class:`MajorizedADMM`, the second-order model of
    :class:`~multitask.solvers.newton_admm.NewtonADMM`), as a datafit with the
    ``"quadratic"`` capability (no intercept), measured on the original problem's scale."""

    name = "quadratic_bound"
    capabilities = frozenset({"gradient", "quadratic"})

    def __init__(self, data: MultiTaskData, H: np.ndarray, C: np.ndarray, top: float,
                 scale: float):
        super().__init__(data, fit_intercept=False)
        self.H, self.C = H, C
        self._top, self._scale = top, scale

    def _loss_value_and_grad(self, W, b=None):
        HW = apply_per_task(self.H, W)
        return float(np.vdot(W, 0.5 * HW - self.C)), HW - self.C, None

    def _loss_value(self, W, b=None):
        return self._loss_value_and_grad(W)[0]

    def quadratic_form(self):
        return self.H, self.C

    def quadratic_diagonal(self) -> np.ndarray:
        return np.diagonal(self.H, axis1=1, axis2=2).copy()

    def lipschitz(self) -> float:
        return self._top

    def gradient_scale(self) -> float:
        return self._scale


class MajorizedADMM(Solver):
    """Majorization-minimization with a fixed quadratic bound, each step by ADMM (module
    docstring).

    Parameters
    ----------
    max_iter : int, default=500
        Budget of majorization steps.
    tol : float, default=1e-4
        Tolerance on the relative optimality measure (:mod:`multitask.solvers.base`).
    inner_tol : float, default=1e-2
        Tolerance of the first step's ADMM (then a tenth of the outer measure, at least
        ``tol / 10``).
    inner_max_iter : int, default=1000
        Iteration budget of each step's ADMM.
    warn : bool, default=True
        Warn with ``ConvergenceWarning`` when ``max_iter`` is reached.
    """

    name = "mm"
    max_preference = 60.0
    #: the loss's curvature bound makes the fixed quadratic a majorant
    datafit_requires = frozenset({"gradient", "curvature_bound"})
    penalty_requires = frozenset()

    @classmethod
    def preference(cls, problem: Problem, **settings) -> float | None:
        """60 for a split model (behind ADMM, which a quadratic loss takes) or an
        ill-conditioned bound (:func:`prefer_majorized`): ahead of accelerated gradient. No
        claim on a split model whose tasks hold fewer than twice as many rows as weights
        (:func:`few_rows_per_weight`): the bound's steps are then short, as
        :func:`prefer_majorized` says, and accelerated gradient, linearized ADMM or
        Newton-ADMM certify the same tolerance first (with the multinomial loss: the robust
        and the sparse + low-rank classifiers on Deterding's vowels, the main job's
        ``multitask benchmark vowel``, docs/benchmark.md; with the squared and logistic losses:
        the robust feature learning, robust MTL and sparse + low-rank models from 10 to 1,000
        tasks of 40 rows and 40 or 300 features, ``benchmarks/bench_auto_choice.py``, and on
        the wide and sparse cases of ``tests/test_solver_choice.py``)."""
        split = problem.split and not few_rows_per_weight(problem.datafit)
        wanted = split or problem.fact(
            "mm_ill_conditioned", lambda: prefer_majorized(problem.datafit, problem.penalty))
        return 60.0 if wanted else None

    def __init__(self, *, max_iter: int = 500, tol: float = 1e-4, inner_tol: float = 1e-2,
                 inner_max_iter: int = 1000, warn: bool = True):
        super().__init__(max_iter=max_iter, tol=tol, warn=warn)
        self.inner_tol = check_tol(inner_tol, "inner_tol")
        self.inner_max_iter = check_int(inner_max_iter, "inner_max_iter")

    def solve(self, datafit: Datafit, penalty: Penalty, *, coef_init=None, intercept_init=None,
              callback: Callable | None = None) -> SolverResult:
        """Run the majorization steps from ``(coef_init, intercept_init)`` (zeros by
        default)."""
        run = IterationRecord(self, datafit, penalty, callback)
        A = penalty.linear_map
        V, b = run.start(coef_init, intercept_init)
        data = datafit.data
        c = float(datafit.curvature())
        H, mu = datafit.bound_hessian()
        eig = EigenSystem(H, np.zeros((data.n_features, data.n_tasks)))
        top = float(eig.lam.max()) if eig.lam.size else 0.0
        inner = QuadraticADMM(max_iter=self.inner_max_iter, tol=self.inner_tol, warn=False)
        inner.reuse_eigen(H, eig)
        scale = datafit.gradient_scale()
        L = measure_lipschitz(datafit, penalty)  # the measure's constant, as every solver's

        W = A.forward(V)
        F = datafit.value(W, b) + penalty.value(V)
        run.record(F)
        inner_tol = self.inner_tol
        floor = self.tol / 10
        n_iter = inner_total = 0
        t = 1.0  # momentum (accelerated steps in the metric of H)
        Vy, by, Wy = V, b, W
        measure = run.certify(0, V, b, L=L)
        converged = measure <= self.tol  # a warm start at the solution
        while not converged and n_iter < self.max_iter:
            _, gW, gb = datafit.value_and_grad(Wy, by)
            reduced = gW if mu is None else gW - mu * gb[None, :]
            model = QuadraticBound(data, H, apply_per_task(H, Wy) - reduced, top, scale)
            inner.tol = inner_tol
            res = inner.solve(model, penalty, coef_init=Vy)
            inner_total += int(res.n_iter)
            V_new = res.coef
            W_new = A.forward(V_new)
            b_new = None
            if by is not None and mu is not None:
                b_new = by - gb / c - np.einsum("jt,jt->t", mu, W_new - Wy)
            F_new = datafit.value(W_new, b_new) + penalty.value(V_new)
            if not F_new <= F + 1e-12 * abs(F):
                if t > 1.0:  # the momentum overshot: restart from the last iterate
                    t, Vy, by, Wy = 1.0, V, b, W
                    continue
                if inner_tol <= 1e-14:  # an inexact step that did not descend
                    break
                inner_tol = max(inner_tol * 0.1, 1e-14)
                continue
            n_iter += 1
            t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
            beta = (t - 1.0) / t_new
            Vy = V_new + beta * (V_new - V)
            by = None if b_new is None or b is None else b_new + beta * (b_new - b)
            Wy = A.forward(Vy)
            V, W, b, F, t = V_new, W_new, b_new, F_new, t_new
            run.record(F)
            measure = run.certify(n_iter, V, b, L=L)
            if measure <= self.tol:
                converged = True
                break
            if run.notify(n_iter, F, V, b):
                break
            inner_tol = max(min(inner_tol, 0.1 * measure), floor)
        inner.reuse_eigen(None, None)
        return run.finish(V, b, n_iter=n_iter, converged=converged, measure=measure,
                          info={"inner_iterations": inner_total, "curvature_bound": c,
                                "best_objective": F})
