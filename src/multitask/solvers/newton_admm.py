"""Proximal Newton for smooth classification losses with any penalty ADMM solves: each step's
second-order model is minimized with the penalty by :class:`~multitask.solvers.admm.
QuadraticADMM`, on the split variable of the composite models (``W = P + Q``).

The model is that of :mod:`multitask.solvers.newton` (a loss with a second derivative, row
weights, per-task intercepts, the ridge term), with a penalty ``h(V)`` on the solver's
variable ``V`` and ``W = A(V)`` (the sum of the parts for the split models, the identity
otherwise). Each step takes, at the current ``(W, b)``, the Hessian of the loss with the
intercept step eliminated in closed form (:func:`multitask.solvers.newton.task_hessians`)::

    H_t = G_t - s_t s_t^T / S_t + alpha_l2 I,        g~_t = g_w,t - (s_t / S_t) g_b,t,

and solves ``min_V sum_t 0.5 (w_t - w_t^k)^T H_t (w_t - w_t^k) + g~_t^T (w_t - w_t^k) +
h(V)`` (``w_t = A(V)_t``) by ADMM with exact per-task solves, from the current ``V``, to an
inner tolerance that follows the outer gap. The direction ``(dV, db)``, ``db_t = -(g_b,t +
s_t^T dw_t) / S_t``, is damped by backtracking (Armijo, as :class:`~multitask.solvers.newton.
ProxNewton`). Where :class:`~multitask.solvers.majorized.MajorizedADMM` keeps the loss's
global bound (``ell'' <= c``) and crawls when the curvature at the solution is far below it
(the separable classes of small tasks: thousands of steps), these steps follow the curvature
where it is (tens of steps). Each costs a pass over the design for the ``G_t`` and the
eigendecompositions of the ``m`` matrices ``d x d``: for a few features
(:func:`prefer_newton_admm`).

Stopping: the certified relative duality gap of :mod:`multitask.solvers.certificate` (the
prox-gradient residual where the model has no dual), after every step.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from multitask.losses import Datafit
from multitask.penalties.base import Penalty
from multitask.solvers.admm import EigenSystem, QuadraticADMM
from multitask.solvers.base import Solver, check_int, check_tol, measure_lipschitz
from multitask.solvers.iteration import IterationRecord
from multitask.solvers.majorized import MajorizedADMM, QuadraticBound
from multitask.solvers.newton import (
    NEWTON_SCALE,
    DampedStep,
    damped_step,
    newton_applies,
    newton_model,
    newton_objective,
)
from multitask.solvers.newton_cg import SCALE_SPREAD, feature_scale_spread
from multitask.solvers.problem import Problem
from multitask.solvers.result import SolverResult

__all__ = ["SPLIT_WIDE_ENTRIES", "SPLIT_WIDE_FEATURES", "WEAK_GROUP_ROWS",
           "WEAK_GROUP_ROWS_TASKS", "NewtonADMM", "prefer_newton_admm"]

#: ``solver="auto"`` also takes Newton-ADMM for a split model with the logistic or squared
#: hinge loss under proximal Newton's ``wide`` data rule (up to
#: :data:`~multitask.solvers.newton.NEWTON_WIDE_FEATURES` features) while the steps' Hessians
#: hold at most this many entries (``m d^2``): with ``benchmarks/bench_auto_choice.py --grid
#: others --only RobustFeatureLearning RobustMTL SparseLowRank --loss logistic`` (the robust
#: MTL classifier's default loss is the squared hinge) it was the fastest solver or close to
#: it on 10 tasks of 40 and 64 features at ``alpha_max`` / 2, / 10 and / 100, not on 100
#: tasks (linearized ADMM on the robust MTL model, accelerated gradient on the sparse +
#: low-rank one at ``alpha_max / 2``; the figures: docs/scale.md). Not measured with the
#: regression losses, which keep accelerated gradient there.
SPLIT_WIDE_ENTRIES = 1e5
#: The features up to which that rule holds (issue 32's fifth round; it was proximal Newton's
#: :data:`~multitask.solvers.newton.NEWTON_WIDE_FEATURES`): on 10 tasks of 80 and 100
#: features at ``alpha_max`` times 0.3, 0.1 and 0.03 Newton-ADMM was the fastest of the
#: three split classifiers' solvers at 13 of 18 points and close to the fastest at the others
#: (majorization or accelerated gradient at ``0.3 alpha_max``), where the solvers taken before
#: were far behind; on 20 tasks of 100 features (``m d^2 = 2 10^5``) it was slower (the
#: figures: docs/scale.md).
SPLIT_WIDE_FEATURES = 100
#: ``alpha / alpha_max`` at or below which ``solver="auto"`` takes Newton-ADMM ahead of
#: proximal Newton for the l2,1 norm with the logistic loss: the first on any number of tasks,
#: the second on at least :data:`WEAK_GROUP_ROWS_TASKS` tasks. With ``--only L21 --loss
#: logistic`` of ``benchmarks/bench_auto_choice.py`` and its data at other shapes, Newton-ADMM
#: was the faster of the two from 10 to 1,000 tasks of 10 features at ``alpha_max / 1000``,
#: on 100 and 1,000 tasks at ``alpha_max / 300`` and ``/ 100`` (on par on 100 tasks), and
#: the slower on 10 tasks at ``alpha_max / 100`` and on 1,000 tasks from ``alpha_max / 20``
#: (on par at ``/ 30``; the figures: docs/scale.md).
WEAK_GROUP_ROWS = (0.005, 0.02)
WEAK_GROUP_ROWS_TASKS = 100


def prefer_newton_admm(datafit: Datafit, penalty: Penalty) -> bool:
    """Whether ``solver="auto"`` takes :class:`NewtonADMM` for a model it would otherwise give
    majorization-minimization: the data side of proximal Newton
    (:func:`~multitask.solvers.newton.newton_applies`: a classification loss, at most 32
    features, feature magnitudes the Hessians hold) and a penalty ADMM solves."""
    return newton_applies(datafit) and NewtonADMM().supports(datafit, penalty)


def _weak_group_rows(problem: Problem) -> bool:
    """Whether the penalty is the l2,1 norm (the elastic-net row family with a group part and
    no l1 part) at ``alpha <= WEAK_GROUP_ROWS[0] alpha_max``, or at ``alpha <=
    WEAK_GROUP_ROWS[1] alpha_max`` on at least :data:`WEAK_GROUP_ROWS_TASKS` tasks
    (:attr:`~multitask.solvers.problem.Problem.strength_ratio`), on data proximal Newton's
    rule takes (:func:`~multitask.solvers.newton.newton_applies`) whose features' variances
    spread by at most :data:`~multitask.solvers.newton_cg.SCALE_SPREAD`
    (:func:`~multitask.solvers.newton_cg.feature_scale_spread`: on the raw-scale cases of
    ``tests/test_solver_choice.py`` proximal Newton was the faster)."""
    family, (a, b, _) = problem.row_prox or ("", (0, 0, 0))
    if family != "elastic_net" or not np.any(np.asarray(b)) or np.any(np.asarray(a)):
        return False
    ratio = problem.strength_ratio
    if ratio is None:
        return False
    weakest, weak = WEAK_GROUP_ROWS
    if not (ratio <= weakest or (ratio <= weak and problem.n_tasks >= WEAK_GROUP_ROWS_TASKS)):
        return False
    if not problem.fact("newton", lambda: newton_applies(problem.datafit)):
        return False
    spread = problem.fact("feature_scale_spread", lambda: feature_scale_spread(problem.datafit))
    return spread <= SCALE_SPREAD


def _hessian_scale(datafit: Datafit) -> bool:
    """Whether the features' largest magnitude lies in
    :data:`~multitask.solvers.newton.NEWTON_SCALE` (the Hessians' entries, squares of the
    features, stay in the float range): the scale condition of
    :func:`~multitask.solvers.newton.newton_applies`."""
    X = datafit.data.X
    top = float(abs(X).max()) if X.shape[0] and X.shape[1] else 0.0
    return NEWTON_SCALE[0] <= top <= NEWTON_SCALE[1]


class NewtonADMM(Solver):
    """Proximal Newton with ADMM on each step's model (module docstring).

    Parameters
    ----------
    max_iter : int, default=500
        Most steps, Newton's and majorization's together (``ConvergenceWarning`` when
        reached). When the Newton steps stop without the certificate (a step that lowers the
        objective by no more than its rounding, or none that descends at the tightest inner
        tolerance), the run goes on with :class:`~multitask.solvers.majorized.MajorizedADMM`
        from the last point for the steps left: on nearly separable classes the loss is flat
        along directions the certificate still needs (the sparse + low-rank classifier at
        ``1e-3 alpha_max`` on ``benchmarks/bench_classifier_cv.py``'s problem, ``tol=1e-6``:
        91 Newton steps reach the objective to ``2e-12`` and stop at a gap of ``3e-5``;
        majorization from there certifies ``1e-6`` in 6 steps, where from zero it took
        8,184). Handing over earlier, after a few steps that lower the objective by less
        than ``1e-3 tol``, made the cross-validation of that classifier slower
        (docs/tuning_constants.md): majorization then took thousands of steps. The result's
        ``info`` then keeps ``"solver": "newton_admm"`` and adds ``"newton_iter"`` and
        ``"handed_over_to"``.
    tol : float, default=1e-4
        Tolerance on the certified relative duality gap.
    inner_tol : float, default=1e-3
        Tolerance of the first step's ADMM; then a hundredth of the outer gap (at least
        ``1e-10``), tightened a hundredfold when a step does not descend.
    inner_max_iter : int, default=1000
        Iteration budget of each step's ADMM.
    warn : bool, default=True
        Warn with ``ConvergenceWarning`` when ``max_iter`` is reached.
    """

    name = "newton_admm"
    max_preference = 82.0

    @classmethod
    def preference(cls, problem: Problem, **settings) -> float | None:
        """65 for a split model (``W = sum_i V[i]``) with the logistic or squared hinge loss,
        or a low-rank penalty (the trace norm) with the logistic loss (the squared hinge's
        second derivative jumps: its Newton steps stalled near 1e-6 on the trace norm, where
        the tight fits of ``tests/test_missing_targets.py`` need 1e-12), where proximal
        Newton's data conditions hold
        (:func:`~multitask.solvers.newton.newton_applies`; for a split model with the logistic
        or squared hinge loss also up to :data:`SPLIT_WIDE_FEATURES` features while the
        Hessians hold at most :data:`SPLIT_WIDE_ENTRIES` entries): ahead of
        majorization-minimization, which it hands over to when its steps stall, of linearized
        ADMM and of accelerated gradient (measured slower on the trace norm with few
        features, ``benchmarks/bench_auto_choice.py``; the figures:
        docs/tuning_constants.md; on the split models of up to 64 features: docs/scale.md).

        82, ahead of proximal Newton, for the l2,1 norm (group rows, no l1 part) with the
        logistic loss where proximal Newton's data conditions hold and the penalty is weak,
        on features of one scale (:func:`_weak_group_rows`): the coordinate descent of
        proximal Newton's steps then crawls on the rows that couple many tasks, where each
        ADMM iteration solves the tasks' systems from their eigendecompositions."""
        measured = problem.datafit.name == "logistic"  # the trace norm's
        if measured and not problem.split and _weak_group_rows(problem):
            return 82.0
        if not (problem.split or (measured and problem.penalty_has("low_rank"))):
            return None
        if problem.fact("newton", lambda: newton_applies(problem.datafit)):
            return 65.0
        # a split model on more features with a classification loss (measured): up to
        # SPLIT_WIDE_FEATURES features, few Hessian entries, features of a scale the Hessians
        # hold
        wide = (problem.split and problem.datafit.name in ("logistic", "squared_hinge")
                and problem.n_features <= SPLIT_WIDE_FEATURES
                and problem.n_tasks * float(problem.n_features) ** 2 <= SPLIT_WIDE_ENTRIES
                and problem.fact("newton_scale", lambda: _hessian_scale(problem.datafit)))
        return 65.0 if wide else None
    datafit_requires = frozenset({"gradient", "hessian"})
    penalty_requires = frozenset()

    def __init__(self, *, max_iter: int = 500, tol: float = 1e-4, inner_tol: float = 1e-3,
                 inner_max_iter: int = 1000, warn: bool = True):
        super().__init__(max_iter=max_iter, tol=tol, warn=warn)
        self.inner_tol = check_tol(inner_tol, "inner_tol")
        self.inner_max_iter = check_int(inner_max_iter, "inner_max_iter")

    def missing(self, datafit: Datafit, penalty: Penalty) -> list[str]:
        out = super().missing(datafit, penalty)
        if "quadratic" in datafit.capabilities:
            out.append(f"the {datafit.name} loss is quadratic (ADMM solves it in one run)")
        return out

    def solve(self, datafit: Datafit, penalty: Penalty, *, coef_init=None, intercept_init=None,
              callback: Callable | None = None) -> SolverResult:
        """Run the Newton steps from ``(coef_init, intercept_init)`` (zeros, and the best
        intercepts at zero, by default)."""
        run = IterationRecord(self, datafit, penalty, callback)
        A = penalty.linear_map
        V, b = run.start(coef_init, intercept_init, intercept_at_zero=True)
        scale = datafit.gradient_scale()
        L = measure_lipschitz(datafit, penalty)
        inner = QuadraticADMM(max_iter=self.inner_max_iter, tol=self.inner_tol, warn=False)
        objective = newton_objective(datafit, penalty)
        W = A.forward(V)
        z = datafit.scores(W, b)
        vals, a, h = datafit.score_derivatives(z, second=True)
        P = objective(vals, V, W)
        run.record(P)
        gap = run.certify(0, V, b, L=L)
        converged = gap <= self.tol
        n_iter = inner_total = 0
        inner_tol = self.inner_tol
        while not converged and n_iter < self.max_iter:
            model = newton_model(datafit, W, b, a, h, datafit.task_hessian_correction(z))
            if model is None:
                break  # the step's model left the float range: stop, not converged
            G = model.hessian
            eig = EigenSystem(G, np.zeros_like(W))
            top = float(eig.lam.max()) if eig.lam.size else 0.0
            inner.reuse_eigen(G, eig)
            inner.tol = inner_tol
            res = inner.solve(QuadraticBound(datafit.data, G, model.linear, top, scale),
                              penalty, coef_init=V)
            inner_total += int(res.n_iter)
            dV = res.coef - V
            dW = A.forward(dV)

            def along(v: np.ndarray, t: float, V: np.ndarray = V, W: np.ndarray = W,
                      dV: np.ndarray = dV, dW: np.ndarray = dW) -> float:
                return objective(v, V + t * dV, W + t * dW)

            out = damped_step(datafit, model, W, b, dW, bool(np.any(dV)),
                              float(penalty.value(res.coef)) - float(penalty.value(V)), P,
                              along, inner_tol)
            if not isinstance(out, DampedStep):
                if out is None:
                    break
                inner_tol = out
                continue
            V, W = V + out.t * dV, W + out.t * dW
            b = out.intercept(b)
            z, (vals, a, h), P = out.z, out.derivs, out.P
            n_iter += 1
            run.record(P)
            gap = run.certify(n_iter, V, b, L=L, target=self.tol)
            if gap <= self.tol:
                converged = True
                break
            if out.polish:  # the objective is converged to rounding, the certificate is not
                break
            if run.notify(n_iter, P, V, b):
                break
            inner_tol = float(np.clip(1e-2 * gap, 1e-10, inner_tol))
        inner.reuse_eigen(None, None)
        if not (converged or run.stop_requested) and n_iter < self.max_iter:
            return self._hand_over(datafit, penalty, V, b, n_iter, inner_total)
        return run.finish(V, b, n_iter=n_iter, converged=converged, measure=gap,
                          info={"inner_iterations": inner_total, "best_objective": P})

    def _hand_over(self, datafit: Datafit, penalty: Penalty, V: np.ndarray, b, n_iter: int,
                   inner_total: int) -> SolverResult:
        """Majorization-minimization from ``(V, b)`` for the ``max_iter - n_iter`` steps left
        (see the class docstring); accelerated gradient for a loss without a curvature bound
        (majorization needs one)."""
        mm: Solver = MajorizedADMM(max_iter=self.max_iter - n_iter, tol=self.tol,
                                   inner_max_iter=self.inner_max_iter, warn=self.warn)
        if not mm.supports(datafit, penalty):
            from multitask.solvers.fista import ProximalGradient

            mm = ProximalGradient(max_iter=self.max_iter - n_iter, tol=self.tol, warn=self.warn)
        out = mm.solve(datafit, penalty, coef_init=V, intercept_init=b)
        out.n_iter += n_iter
        out.info = {**out.info, "solver": self.name, "newton_iter": n_iter,
                    "newton_inner_iterations": inner_total,
                    "handed_over_to": out.info.get("solver", mm.name)}
        return out
