"""Projected subgradient method for a (possibly non-smooth) loss over a constraint set.

Solves ``min_{W in K, b} F(W, b)``, ``F(W, b) = sum_t (1 / n_t) sum_{i in t} ell(y_i, x_i^T w_t
+ b_t)`` (the scaling of :mod:`multitask.losses`), with ``K = {W : Omega(W) <= C}`` any
:class:`~multitask.penalties.base.Constraint` (the l1,inf ball
:class:`~multitask.penalties.l1inf.L1InfBall`, or the per-task balls
:class:`~multitask.penalties.balls.ColumnL1Balls` /
:class:`~multitask.penalties.balls.ColumnL2Balls`),
as in Quattoni, Carreras, Collins & Darrell, "A projected subgradient method for scalable
multi-task learning" (MIT-CSAIL-TR-2008-045)::

    eta_k   = eta0 / sqrt(k)
    W_k     = P_K(W_{k-1} - eta_k * G_{k-1}),    G = dF/dW, a subgradient (d, m)
    b_k     = b_{k-1} - eta_k * g_{k-1},         g = dF/db (m,), unconstrained

starting from ``W_0 = P_K(coef_init)`` (zeros by default). Every iterate is feasible (it is a
projection). For the hinge loss the subgradient of task ``t`` is
``-(1 / n_t) sum_{i in t, y_i z_i < 1} y_i x_i`` (0 is taken at the kink).

Guarantee (Bertsekas, "Nonlinear programming"; textbook): with ``D`` the distance from the
start to a minimizer and ``G`` a bound of the subgradient norms,
``min_{k <= T} F_k - F* <= (D^2 + eta0^2 G^2 (1 + ln T)) / (2 eta0 (2 sqrt(T + 1) - 2))``,
i.e. ``O(log T / sqrt T)`` for the best (or the step-weighted average) iterate; the last iterate
has no such guarantee, which is why the best iterate is returned by default.

Stopping: for a smooth loss the run stops when the optimality measure of
:mod:`multitask.solvers.base` is at most ``tol`` (checked every ``window`` iterations). For a
non-smooth loss (hinge) no optimality measure is computable, so the rule is heuristic: the run
stops when the best objective improved by at most ``window_tol * |F_best|`` over the last
``window`` iterations (``window_tol=0``, the default, runs exactly ``max_iter`` iterations, as
in the paper's 200-iteration runs); the reported measure is then NaN.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from multitask.losses import Datafit
from multitask.penalties.base import Penalty
from multitask.solvers.base import Solver, check_tol, optimality
from multitask.solvers.iteration import CertificateSchedule, IterationRecord
from multitask.solvers.problem import Problem
from multitask.solvers.result import SolverResult

__all__ = ["ITERATES", "ProjectedSubgradient", "default_eta0"]

ITERATES = ("best", "average", "last")


def _max_diameter(constraint: Penalty, n_tasks: int) -> float:
    """Largest Frobenius norm in the set: ``C sqrt(m)`` for the l1,inf and per-task balls."""
    radius = np.asarray(getattr(constraint, "radius", np.inf), dtype=np.float64)
    if radius.ndim == 0:
        return float(radius) * np.sqrt(n_tasks)
    return float(np.sqrt(np.sum(radius * radius)))


def default_eta0(datafit: Datafit, constraint: Penalty, max_iter: int) -> float:
    """The step scale minimizing the textbook bound: ``eta0 = D / (G sqrt(1 + ln T))``.

    ``D = sup_{W in K} ||W||_F`` (``C sqrt(m)`` for the l1,inf ball and for per-task balls of
    radius ``C``) bounds the distance from ``W = 0`` to a minimizer, and
    ``G = sqrt(sum_t R_t^2)``, ``R_t = max_{i in t} ||(x_i, 1)||_2`` over the rows of positive
    weight (the 1 only with an intercept variable), bounds the norm of the subgradient of the
    hinge and logistic losses (``|ell'| <= 1``). For unit-norm inputs without intercept this
    is the specification's ``C / sqrt(1 + ln T)``. Returns 1.0 when ``D`` or ``G`` is 0.
    """
    data = datafit.data
    X = data.X
    if hasattr(X, "multiply"):
        sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    else:
        sq = np.einsum("ij,ij->i", X, X)
    if data.shared:
        sq = np.tile(sq, data.n_tasks)
    if datafit.has_intercept_variable:
        sq = sq + 1.0
    sq = np.where(data.row_weights > 0, sq, 0.0)  # a pair of weight zero adds no subgradient
    R2 = np.array([sq[data.offsets[t] : data.offsets[t + 1]].max(initial=0.0)
                   for t in range(data.n_tasks)])
    G = float(np.sqrt(R2.sum()))
    D = _max_diameter(constraint, data.n_tasks)
    if not (G > 0 and D > 0 and np.isfinite(G) and np.isfinite(D)):
        return 1.0
    return D / (G * np.sqrt(1.0 + np.log(max(int(max_iter), 1))))


class ProjectedSubgradient(Solver):
    """Projected subgradient steps ``eta0 / sqrt(k)`` over a constraint set (module docstring).

    Parameters
    ----------
    max_iter : int, default=1000
        Number of steps at most.
    tol : float, default=1e-4
        Tolerance on the optimality measure (smooth losses only).
    eta0 : float, sequence of float or None, default=None
        Step scale. ``None``: :func:`default_eta0`. A sequence: one run per value, the run
        whose returned point has the lowest objective is kept (the paper chooses ``eta0`` by
        the training objective); ``info["eta0_objectives"]`` holds the objective of each.
    window : int, default=50
        Iterations between checks (smooth losses) and length of the heuristic window rule.
    window_tol : float, default=0.0
        Non-smooth losses: stop when the best objective improved by at most
        ``window_tol * |F_best|`` over the last ``window`` iterations (``0``: never).
    iterate : {"best", "average", "last"}, default="best"
        Returned point: the iterate of lowest objective; the step-weighted average
        ``sum_k eta_k W_k / sum_k eta_k`` (feasible by convexity, not exactly sparse; the
        point of the textbook guarantee); or the last iterate.
    warn : bool, default=True
        Warn when ``max_iter`` is reached before a stopping rule that can fire.
    """

    name = "subgradient"
    max_preference = 5.0
    datafit_requires = frozenset({"subgradient"})

    @classmethod
    def preference(cls, problem: Problem, **settings) -> float:
        """5: the fallback of constraint sets where no faster solver applies."""
        return 5.0

    def __init__(self, *, max_iter: int = 1000, tol: float = 1e-4, eta0=None, window: int = 50,
                 window_tol: float = 0.0, iterate: str = "best", warn: bool = True):
        super().__init__(max_iter=max_iter, tol=tol, warn=warn)
        if iterate not in ITERATES:
            raise ValueError(f"iterate must be one of {ITERATES}, got {iterate!r}.")
        if isinstance(window, bool) or int(window) < 1:
            raise ValueError(f"window must be an integer >= 1, got {window!r}.")
        if eta0 is not None:
            etas = np.atleast_1d(np.asarray(eta0, dtype=float))
            if etas.size == 0 or etas.ndim > 1 or not np.all(np.isfinite(etas)) or np.any(
                    etas <= 0):
                raise ValueError(f"eta0 must be None, a number > 0 or a sequence of them, got "
                                 f"{eta0!r}.")
            eta0 = float(etas[0]) if np.ndim(eta0) == 0 else [float(e) for e in etas]
        self.eta0 = eta0
        self.window = int(window)
        self.window_tol = check_tol(window_tol, "window_tol", allow_zero=True)
        self.iterate = iterate

    def missing(self, datafit: Datafit, penalty: Penalty) -> list[str]:
        out = super().missing(datafit, penalty)
        if not penalty.is_constraint:
            out.append(f"the {penalty.name} penalty is not a constraint set (projected "
                       "subgradient needs a projection)")
        return out

    def solve(self, datafit: Datafit, penalty: Penalty, *, coef_init=None, intercept_init=None,
              callback: Callable | None = None) -> SolverResult:
        """Run the method; with a sequence of ``eta0`` keep the best run."""
        self.check(datafit, penalty)
        if isinstance(self.eta0, list):
            runs = [self.with_params(eta0=e, warn=False).solve(
                datafit, penalty, coef_init=coef_init, intercept_init=intercept_init,
                callback=callback) for e in self.eta0]
            objs = [r.final_objective for r in runs]
            best = runs[int(np.nanargmin(objs))]
            best.info["eta0_objectives"] = np.asarray(objs)
            if self.warn and not best.converged and best.n_iter >= self.max_iter and (
                    self._can_stop(datafit)):
                _warn(self.max_iter, self.tol)
            return best
        return self._run(datafit, penalty, coef_init, intercept_init, callback)

    def _can_stop(self, datafit: Datafit) -> bool:
        return "gradient" in datafit.capabilities or self.window_tol > 0

    def _run(self, datafit, penalty, coef_init, intercept_init, callback) -> SolverResult:
        # smooth losses: the measure at the best iterate every window iterations
        run = IterationRecord(self, datafit, penalty, callback,
                              CertificateSchedule(period=self.window), check=False)
        W, b = run.start(coef_init, intercept_init)
        eta0 = self.eta0 if self.eta0 is not None else default_eta0(datafit, penalty,
                                                                   self.max_iter)
        smooth = "gradient" in datafit.capabilities
        use_b = b is not None
        m = datafit.data.n_tasks
        f, gW, gb = datafit.value_and_grad(W, b)
        run.keep(f, W, b)
        avg_W = np.zeros_like(W) if self.iterate == "average" else None
        avg_b = np.zeros(m) if (self.iterate == "average" and use_b) else None
        eta_sum = 0.0
        best_hist: list[float] = []
        converged = False
        n_iter = 0
        window = self.window
        for k in range(1, self.max_iter + 1):
            n_iter = k
            eta = eta0 / np.sqrt(k)
            W = penalty.prox(W - eta * gW, eta)
            if use_b:
                b = b - eta * gb
            f, gW, gb = datafit.value_and_grad(W, b)
            run.record(f)
            run.offer(f, W, b)
            best = run.best
            assert best is not None
            best_hist.append(best.objective)
            if avg_W is not None:
                eta_sum += eta
                avg_W += eta * W
                if use_b:
                    avg_b += eta * b
            if run.notify(k, f, W, b):
                break
            if smooth and run.due(k):
                if run.certify(k, best.V, best.b) <= self.tol:
                    converged = True
                    break
            elif not smooth and self.window_tol > 0 and k > window:
                old = best_hist[k - 1 - window]
                if old - best.objective <= self.window_tol * max(abs(best.objective),
                                                                 np.finfo(float).tiny):
                    converged = True
                    break

        if self.iterate == "best":
            assert run.best is not None
            F_ret, W_ret, b_ret = run.best
        elif self.iterate == "last":
            F_ret, W_ret, b_ret = f, W, b
        else:
            assert avg_W is not None
            W_ret = avg_W / eta_sum if eta_sum > 0 else W
            b_ret = None
            if use_b:
                b_ret = avg_b / eta_sum if (eta_sum > 0 and avg_b is not None) else b
            F_ret = datafit.value(W_ret, b_ret)
        measure = optimality(datafit, penalty, W_ret, b_ret) if smooth else float("nan")
        if smooth:
            converged = converged or measure <= self.tol
        exhausted = (not converged and n_iter >= self.max_iter and self._can_stop(datafit))
        return run.finish(W_ret, b_ret, n_iter=n_iter, converged=converged, measure=measure,
                          exhausted=exhausted,
                          info={"best_objective": float(F_ret), "eta0": eta0,
                                "iterate": self.iterate})


def _warn(max_iter: int, tol: float) -> None:
    warnings.warn(
        f"Solver 'subgradient' did not meet its stopping rule in max_iter={max_iter} "
        f"iterations (tol={tol}); returning the chosen iterate. Increase max_iter or tol.",
        ConvergenceWarning,
        stacklevel=3,
    )
