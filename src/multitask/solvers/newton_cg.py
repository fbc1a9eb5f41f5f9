"""Truncated Newton (Newton-CG) for a smooth loss with a ridge penalty.

The model: a smooth loss whose Hessian in score space is known as a product
(:meth:`~multitask.losses.Datafit.score_hessian`: the multinomial loss, whose ``K`` scores of a
row are coupled; every loss with ``"hessian"``), per-task intercepts ``b`` as variables, the
ridge ``(alpha_l2 / 2) ||W||_F^2`` and a penalty that is a pure ridge ``sum_j c_j ||W_j.||^2 /
2`` (``"row_prox"`` of the elastic-net family with no l1 or l2 part) or none::

    min_{W, b}  F(W, b) + sum_j c_j ||W_j.||^2 / 2.

Each step solves the Newton system ``H [dW; db] = -g`` by conjugate gradients (Nocedal &
Wright, "Numerical Optimization", the line-search Newton-CG method) with the Hessian applied as
``H [V; v] = [X^T S (X V + v) + (alpha_l2 + c) V; sum_t S (X V + v)]`` (``S`` the score-space
Hessian): two passes over the design per product, never a ``d x d`` matrix, so that it scales
with the features where proximal Newton's Hessians do not. The inner iterations stop at a
relative residual ``min(1/2, sqrt(||g|| / ||g_0||))`` (superlinear convergence) or at negative
curvature; the direction is damped by Armijo backtracking (``sigma = 10^-4``, ``t`` halved).
It converges in a handful of steps where accelerated gradient takes hundreds (the multinomial
model of well-separated classes, whose curvature far from the optimum is far below its bound).

Stopping: the certified relative duality gap of :mod:`multitask.solvers.certificate`, after
every step.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from multitask.losses import Datafit
from multitask.penalties.base import Penalty
from multitask.solvers.base import Solver, check_int
from multitask.solvers.iteration import IterationRecord
from multitask.solvers.problem import Problem
from multitask.solvers.result import SolverResult

__all__ = ["SCALE_SPREAD", "NewtonCG", "feature_scale_spread", "pure_ridge"]

#: Armijo's constant and the smallest step of the backtracking.
SIGMA = 1e-4
#: ``solver="auto"`` takes truncated Newton ahead of proximal Newton for a pure ridge on
#: features whose variances spread by at most this factor (:func:`feature_scale_spread`;
#: the raw-scale cases of ``tests/test_solver_choice.py`` spread by 10^5 and more, standard
#: normal features by a few).
SCALE_SPREAD = 100.0
MIN_STEP = 2.0**-30


def pure_ridge(penalty: Penalty) -> bool:
    """Whether ``penalty`` is a pure ridge ``sum_j c_j ||W_j.||^2 / 2`` (or none): the
    elastic-net row family with no l1 and no l2 part, and no smooth part of its own."""
    if "row_prox" not in penalty.capabilities or "smooth" in penalty.capabilities:
        return False
    if getattr(penalty, "row_prox_family", "elastic_net") != "elastic_net":
        return False
    a, b, _ = penalty.row_prox_params()
    return not (np.any(np.asarray(a)) or np.any(np.asarray(b)))


def feature_scale_spread(datafit: Datafit) -> float:
    """``max_j v_j / min_j v_j`` over the features of positive variance ``v_j`` (the
    variance of column ``j`` of the stacked design; 1 where fewer than two columns vary): a
    lower bound of the condition number of the loss's Hessian with equal row weights, which
    sets how many conjugate-gradient iterations a step takes. One pass over the design."""
    X = datafit.data.X
    if X.shape[0] == 0 or X.shape[1] == 0:
        return 1.0
    if sp.issparse(X):
        Xs = sp.csr_matrix(X)  # already CSR: no copy
        mean = np.asarray(Xs.mean(axis=0)).ravel()
        var = np.asarray(Xs.multiply(Xs).mean(axis=0)).ravel() - mean**2
    else:
        var = np.var(np.asarray(X), axis=0)
    var = var[var > 0]
    return float(var.max() / var.min()) if var.size > 1 else 1.0


def has_score_hessian(datafit: Datafit) -> bool:
    """Whether the loss gives its Hessian in score space (``"hessian"`` row by row, or
    ``"score_hessian"``, a product coupling the scores of a row)."""
    return bool({"hessian", "score_hessian"} & datafit.capabilities)


class NewtonCG(Solver):
    """Truncated Newton with conjugate gradients on each step's system (module docstring).

    Parameters
    ----------
    max_iter, tol : int, float, default=100, 1e-4
        Most Newton steps and the tolerance on the certified relative duality gap, as in
        :class:`~multitask.solvers.newton.ProxNewton`.
    max_cg : int, default=200
        Most conjugate-gradient iterations per step (a step stopped there is damped like any
        other).
    warn : bool, default=True
    """

    name = "newton_cg"
    datafit_requires = frozenset({"gradient"})
    penalty_requires = frozenset({"row_prox"})

    max_preference = 85.0

    @classmethod
    def preference_ceiling(cls, problem: Problem, **settings) -> float:
        """The highest score :meth:`preference` can give ``problem``, from the loss's
        capabilities alone: 85 for the logistic loss, 75 for a loss with ``"score_hessian"``
        only, ``-inf`` (no claim, or it does not apply: a quadratic loss, no Hessian) for the
        others."""
        caps = problem.datafit.capabilities
        if "quadratic" in caps:
            return float("-inf")
        if "hessian" not in caps:
            return 75.0 if "score_hessian" in caps else float("-inf")
        return 85.0 if problem.datafit.name == "logistic" else float("-inf")

    @classmethod
    def preference(cls, problem: Problem, **settings) -> float | None:
        """For a pure ridge (where it applies) and a loss that is not quadratic:

        * 85 for the logistic loss on features whose variances spread by at most
          :data:`SCALE_SPREAD` (:func:`feature_scale_spread`): ahead of proximal Newton, whose
          steps form the ``d x d`` Hessians and solve them by coordinate descent where these
          steps take a few products with the design;
        * 75 for the logistic loss on features of spread scales (proximal Newton, whose
          coordinate descent is insensitive to the features' scales, keeps the problems it
          takes; the conjugate gradients, without a preconditioner, take many iterations) and
          for the multinomial loss (whose ``"score_hessian"`` couples a row's scores): ahead
          of block coordinate descent and the gradient methods;
        * no claim for the other losses with ``"hessian"``: with the squared hinge (whose
          second derivative jumps) truncated Newton was slower than accelerated gradient on
          tasks of fewer rows than features and than proximal Newton on a few features.

        Measured with ``benchmarks/bench_auto_choice.py --grid others --only IndependentRidge
        Pooled`` (10 to 1,000 tasks of 40 rows, 10 to 300 features) and on the cases of
        ``tests/test_solver_choice.py``: with the logistic loss truncated Newton was the
        fastest at every point with features of one scale, proximal Newton on the raw-scale
        cases (the figures: docs/scale.md)."""
        datafit = problem.datafit
        if "hessian" not in datafit.capabilities:
            return 75.0 if "score_hessian" in datafit.capabilities else None
        if datafit.name != "logistic":
            return None
        spread = problem.fact("feature_scale_spread", lambda: feature_scale_spread(datafit))
        return 85.0 if spread <= SCALE_SPREAD else 75.0

    def __init__(self, *, max_iter: int = 100, tol: float = 1e-4, max_cg: int = 200,
                 warn: bool = True):
        super().__init__(max_iter=max_iter, tol=tol, warn=warn)
        self.max_cg = check_int(max_cg, "max_cg")

    def missing(self, datafit: Datafit, penalty: Penalty) -> list[str]:
        out = super().missing(datafit, penalty)
        if not has_score_hessian(datafit):
            out.append(f"the {datafit.name} loss offers no Hessian in score space ('hessian' "
                       "or 'score_hessian')")
        if "quadratic" in datafit.capabilities:
            out.append(f"the {datafit.name} loss is quadratic (one linear system solves it)")
        if not out and not pure_ridge(penalty):
            out.append(f"the {penalty.name} penalty is not a pure ridge")
        return out

    def solve(self, datafit: Datafit, penalty: Penalty, *, coef_init=None, intercept_init=None,
              callback: Callable | None = None) -> SolverResult:
        """Run the truncated Newton steps, each system solved by conjugate gradients, from
        ``(coef_init, intercept_init)`` (zeros and the best intercepts at zero by default)."""
        run = IterationRecord(self, datafit, penalty, callback)
        W, b = run.start(coef_init, intercept_init, intercept_at_zero=True)
        W = np.ascontiguousarray(W, dtype=np.float64)
        data = datafit.data
        d = W.shape[0]
        c = np.broadcast_to(np.asarray(penalty.row_prox_params()[2], dtype=np.float64),
                            (d,))[:, None] + float(datafit.alpha_l2)

        def objective(W: np.ndarray, b) -> float:
            return float(datafit.value(W, b)) + float(penalty.value(W))

        def gradient(W: np.ndarray, b):
            f, gW, gb = datafit.value_and_grad(W, b)
            pen = float(penalty.value(W))
            return float(f) + pen, gW + (c - float(datafit.alpha_l2)) * W, gb

        P, gW, gb = gradient(W, b)
        run.record(P)
        gap = run.certify(0, W, b, target=self.tol, lazy=False)
        converged = gap <= self.tol
        g0 = None
        n_iter = n_cg = 0
        while not converged and n_iter < self.max_iter:
            g_norm = np.sqrt(float(np.vdot(gW, gW)) + (float(gb @ gb) if gb is not None
                                                         else 0.0))
            if not np.isfinite(g_norm) or g_norm == 0.0:
                break
            g0 = g_norm if g0 is None else g0
            curv = datafit.score_hessian(datafit.scores(W, b))

            def hvp(V: np.ndarray, v, curv=curv):
                u = curv(datafit.scores(V, v))
                return data.rmatvec(u) + c * V, (data.task_sum(u) if v is not None else None)

            forcing = min(0.5, np.sqrt(g_norm / g0)) * g_norm
            dW, db, k = _conjugate_gradients(hvp, gW, gb, forcing, self.max_cg)
            n_cg += k
            delta = float(np.vdot(gW, dW)) + (float(gb @ db) if gb is not None else 0.0)
            if not delta < 0:
                break
            t = 1.0
            noise = 1e-13 * abs(P)
            while True:
                Wt = W + t * dW
                bt = None if b is None else b + t * db
                Pt = objective(Wt, bt)
                if Pt <= P + SIGMA * t * delta or t <= MIN_STEP:
                    break
                t *= 0.5
            if not Pt <= P + noise:
                break
            polish = Pt >= P - noise
            W, b = np.ascontiguousarray(Wt), bt
            P, gW, gb = gradient(W, b)
            n_iter += 1
            run.record(P)
            last = gap
            gap = run.certify(n_iter, W, b, target=self.tol, lazy=False)
            if gap <= self.tol:
                converged = True
                break
            if polish and not gap < last:  # the objective is converged to rounding
                break
            if run.notify(n_iter, P, W, b):
                break
        cert = run.certificate
        return run.finish(W, b, n_iter=n_iter, converged=converged, certificate=cert,
                          measure=None if cert is not None else gap,
                          info={"cg_iterations": n_cg, "best_objective": P})


def _conjugate_gradients(hvp: Callable, gW: np.ndarray, gb, tol: float, max_iter: int):
    """``(dW, db, iterations)``: conjugate gradients on ``H d = -g`` from ``d = 0``, stopped at
    a residual norm ``<= tol``, at ``max_iter`` or at a direction of non-positive curvature
    (then the iterate so far, or the steepest descent at the first iteration)."""
    dW = np.zeros_like(gW)
    db = None if gb is None else np.zeros_like(gb)
    rW, rb = -gW, (None if gb is None else -gb)
    pW, pb = rW.copy(), (None if rb is None else rb.copy())

    def dot(aW, ab, cW, cb) -> float:
        return float(np.vdot(aW, cW)) + (float(ab @ cb) if ab is not None else 0.0)

    rr = dot(rW, rb, rW, rb)
    k = 0
    while k < max_iter and np.sqrt(rr) > tol:
        HW, Hb = hvp(pW, pb)
        pHp = dot(pW, pb, HW, Hb)
        if not pHp > 0:
            if k == 0:
                return rW, rb, 1
            break
        step = rr / pHp
        dW = dW + step * pW
        rW = rW - step * HW
        if db is not None and pb is not None and rb is not None and Hb is not None:
            db = db + step * pb
            rb = rb - step * Hb
        rr_new = dot(rW, rb, rW, rb)
        beta = rr_new / rr
        pW = rW + beta * pW
        if pb is not None:
            pb = rb + beta * pb
        rr = rr_new
        k += 1
    return dW, db, k
