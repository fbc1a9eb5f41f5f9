"""Accelerated proximal / projected gradient (FISTA) for every smooth loss and penalty.

Minimizes ``f(A(V), b) + h(V)`` where ``f`` is a smooth datafit, ``h`` a penalty with a prox or a
constraint set with a projection, ``A = h.linear_map`` (identity, or ``W = sum_i V[i]`` for
the split models) and ``b`` the unpenalized intercepts. Iteration (Beck & Teboulle, "A fast
iterative shrinkage-thresholding algorithm for linear inverse problems")::

    x_{k+1} = prox_{h / L}(y_k - A^T grad f(y_k) / L)           (b: plain gradient step)
    t_{k+1} = (1 + sqrt(1 + 4 t_k^2)) / 2
    y_{k+1} = x_{k+1} + ((t_k - 1) / t_{k+1}) (x_{k+1} - x_k)

with backtracking on ``L`` (doubled until
``f(x+) <= f(y) + <grad f(y), x+ - y> + L/2 ||x+ - y||^2``, never above the datafit's bound)
and the adaptive restart of O'Donoghue & Candes ("Adaptive restart for accelerated gradient
schemes"): the momentum is reset whenever the objective increases. ``accelerated=False`` is the
plain proximal gradient method (monotone). The projected gradient (PG) and accelerated
projected gradient (AG) methods of Chen, Liu & Ye ("Learning incoherent sparse and low-rank
patterns from multiple tasks", ACM TKDD 2012) are ``accelerated=False`` and
``accelerated=True, restart=False``, with their step search started at a secant estimate
(``lipschitz_init="secant"``).

Stopping: the certified relative duality gap (:mod:`multitask.solvers.base`) is computed at
``x_{k+1}`` every :data:`CHECK_PERIOD` iterations, and sooner when the prox-gradient residual
of the step, ``||(L (y_k - x_{k+1}), grad_b f(y_k))||`` (free), falls below ``tol``; the run
stops at the first point where it is at most ``tol``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from multitask.losses import Datafit
from multitask.penalties.base import Penalty
from multitask.solvers.base import (
    Solver,
    finish,
    initial_point,
    lipschitz_bound,
    measure_lipschitz,
    optimality,
    safe_norm,
    smooth_value_and_grad,
    smooth_value_pair_and_grad,
)
from multitask.solvers.problem import Problem
from multitask.solvers.result import SolverResult

__all__ = ["ProximalGradient", "secant_lipschitz"]

_LIPSCHITZ_INITS = ("bound", "secant")
#: Iterations between two certificates near the tolerance (each costs about one gradient and
#: the dual norm), besides the checks that a small prox-gradient residual triggers.
CHECK_PERIOD = 10


def check_period(k: int, measure: float, tol: float,
                 previous: tuple[int, float] | None = None) -> int:
    """Iterations until the next certificate after the one at iteration ``k``.

    ``k // 2`` (at least 1) in the first iterations, then at least :data:`CHECK_PERIOD`.
    With the previous certificate ``(k0, m0)`` and a measure that fell from ``m0`` to ``m``,
    the rate ``rho = ln(m0 / m) / (k - k0)`` predicts ``ln(m / tol) / rho`` more iterations
    to ``tol``: the next certificate comes after 80% of them, at most ``k // 10`` iterations
    on (at most about 10% more iterations than needed where the prediction is too long).
    Without a rate: up to ``k // 20`` while the measure is more than ten times ``tol``,
    :data:`CHECK_PERIOD` near it.
    """
    base = min(CHECK_PERIOD, max(1, k // 2))
    if previous is not None:
        k0, m0 = previous
        if k > k0 and tol < measure < m0 and tol > 0.0:
            rate = np.log(m0 / measure) / (k - k0)
            need = np.log(measure / tol) / rate
            return int(max(base, min(0.8 * need, k // 10)))
    if measure > 10.0 * tol:
        return max(base, k // 20)
    return base


def _inner(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.vdot(a, b))


def secant_lipschitz(datafit: Datafit, penalty: Penalty, V: np.ndarray, b: np.ndarray | None,
                     seed: int = 0) -> float:
    """A lower estimate of the gradient's Lipschitz constant, to start a step search.

    Returns ``||grad(V + e) - grad(V)|| / ||e||`` for a random direction ``e`` of norm
    ``1e-3 * max(1, ||V||)`` (gradients with respect to the variable and the intercepts). It is
    at most the best constant, so a doubling search can only increase it; it replaces an
    arbitrary ``L_0`` by a scale-free value.
    """
    rng = np.random.default_rng(seed)
    e = rng.standard_normal(V.shape)
    scale = 1e-3 * max(1.0, float(np.linalg.norm(V)))
    e *= scale / max(float(np.linalg.norm(e)), np.finfo(float).tiny)
    eb = None
    if b is not None:
        eb = rng.standard_normal(b.shape)
        eb *= scale / max(float(np.linalg.norm(eb)), np.finfo(float).tiny)
    _, g0, gb0 = smooth_value_and_grad(datafit, penalty, V, b)
    _, g1, gb1 = smooth_value_and_grad(datafit, penalty, V + e, None if b is None else b + eb)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):  # checked below
        num = float(np.sum((g1 - g0) ** 2))
        den = float(np.sum(e * e))
        if b is not None and eb is not None:
            num += float(np.sum((gb1 - gb0) ** 2))
            den += float(np.sum(eb * eb))
        L = np.sqrt(num / den) if den > 0 else 0.0
    if not (np.isfinite(L) and L > 0):
        # squares beyond the float range (gradients of data near 1e100): the same ratio
        # from norms computed with scaling
        dg = [safe_norm(g1 - g0)] + ([safe_norm(gb1 - gb0)] if eb is not None else [])
        de = [safe_norm(e)] + ([safe_norm(eb)] if eb is not None else [])
        L = safe_norm(np.asarray(dg)) / max(safe_norm(np.asarray(de)), np.finfo(float).tiny)
    return float(L) if np.isfinite(L) and L > 0 else 1.0


class ProximalGradient(Solver):
    """Accelerated proximal gradient (FISTA), or plain proximal gradient.

    Parameters
    ----------
    max_iter : int, default=5000
        Iteration budget.
    tol : float, default=1e-4
        Tolerance on the relative optimality measure (:mod:`multitask.solvers.base`).
    accelerated : bool, default=True
        FISTA momentum; ``False`` gives proximal gradient (ISTA), which is monotone.
    restart : bool, default=True
        Adaptive (function-value) restart of the momentum.
    line_search : bool, default=True
        Backtracking on ``L``; when false the step is ``1 / L`` with ``L`` the datafit's bound
        times ``||A||^2``.
    lipschitz_init : {"bound", "secant"}, default="bound"
        First ``L`` of the search: the datafit's bound, or :func:`secant_lipschitz` (a lower
        estimate; the step then grows by doubling, as in Chen, Liu & Ye's Section 3.2).
    warn : bool, default=True
        Warn with ``ConvergenceWarning`` when ``max_iter`` is reached.
    """

    name = "fista"
    variants = {"pg": {"accelerated": False}}
    roles = frozenset({"model", "inner"})
    handles_smooth_part = True
    datafit_requires = frozenset({"gradient"})

    @classmethod
    def preference(cls, problem: Problem, accelerated: bool = True, **settings) -> float:
        """50, the default of every smooth loss with a prox; 10 without momentum (``"pg"``,
        never ahead of FISTA)."""
        return 50.0 if accelerated else 10.0

    def __init__(self, *, max_iter: int = 5000, tol: float = 1e-4, accelerated: bool = True,
                 restart: bool = True, line_search: bool = True,
                 lipschitz_init: str = "bound", warn: bool = True):
        super().__init__(max_iter=max_iter, tol=tol, warn=warn)
        if lipschitz_init not in _LIPSCHITZ_INITS:
            raise ValueError(f"lipschitz_init must be one of {_LIPSCHITZ_INITS}, got "
                             f"{lipschitz_init!r}.")
        self.accelerated = bool(accelerated)
        self.restart = bool(restart)
        self.line_search = bool(line_search)
        self.lipschitz_init = lipschitz_init

    @property
    def label(self) -> str:
        return "fista" if self.accelerated else "pg"

    def solve(self, datafit: Datafit, penalty: Penalty, *, coef_init=None, intercept_init=None,
              callback: Callable | None = None) -> SolverResult:
        self.check(datafit, penalty)
        t0 = time.perf_counter()
        A = penalty.linear_map
        x, b = initial_point(datafit, penalty, coef_init, intercept_init)
        use_b = b is not None
        L_bound = lipschitz_bound(datafit, penalty)
        L_measure = measure_lipschitz(datafit, penalty)
        s_b = datafit.measure_constants()[1] if use_b else 0.0
        if self.lipschitz_init == "secant" and self.line_search:
            L = min(secant_lipschitz(datafit, penalty, x, b), L_bound)
        else:
            L = L_bound
        scale = max(datafit.gradient_scale() * np.sqrt(A.norm_sq), np.finfo(float).tiny)
        tol = self.tol

        smooth_part = "smooth" in penalty.capabilities

        def loss_and_grad(V, bb):
            return smooth_value_and_grad(datafit, penalty, V, bb)

        def loss_value(V, bb):
            f = datafit.value(A.forward(V), bb)
            return f + penalty.smooth_value_and_grad(V)[0] if smooth_part else f

        fx = datafit.value(A.forward(x), b) + penalty.value(x)  # the objective F at the start
        best = (fx, x, b)
        y, yb = x, b
        t_k = 1.0
        history: list[float] = []
        times: list[float] = []
        converged = False
        measure = None
        next_check = 1  # the certificate at the first iterate, then every CHECK_PERIOD
        previous: tuple[int, float] | None = None  # the last certificate (k, measure)
        next_cheap = 0
        n_iter = 0
        stopped_by = "max_iter"
        db = None
        # where the datafit reads the data once for two points, the objective at the new
        # point and the gradient at the next extrapolated one come from one pass (when the
        # step is accepted whatever the objective: no line search, or L at its bound)
        fuse = getattr(datafit, "fuses_value_pairs", False)
        ahead = None  # (f, grad W, grad b) at y, computed by the previous iteration's pass

        def extrapolate(x_new, b_new, x, b, t_k):
            if not self.accelerated:
                return x_new, b_new, t_k
            t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t_k * t_k))
            beta = (t_k - 1.0) / t_next
            y = x_new + beta * (x_new - x)
            yb = b_new + beta * (b_new - b) if use_b else None
            return y, yb, t_next

        for k in range(1, self.max_iter + 1):
            n_iter = k
            if ahead is None:
                fy, gy, gby = loss_and_grad(y, yb)
            else:
                fy, gy, gby = ahead
            ahead = None
            while True:
                x_new = penalty.prox(y - gy / L, 1.0 / L)
                b_new = yb - gby / L if use_b else None
                dx = x_new - y
                if fuse and (not self.line_search or L >= L_bound):
                    nxt = extrapolate(x_new, b_new, x, b, t_k)
                    f_new, *grads = smooth_value_pair_and_grad(datafit, penalty, x_new, b_new,
                                                               nxt[0], nxt[1])
                    ahead = tuple(grads)
                    break
                f_new = loss_value(x_new, b_new)
                if not self.line_search:
                    break
                quad = _inner(gy, dx) + 0.5 * L * _inner(dx, dx)
                if use_b:
                    db = b_new - yb
                    quad += _inner(gby, db) + 0.5 * L * _inner(db, db)
                if f_new <= fy + quad + 1e-12 * max(1.0, abs(fy)):
                    break
                # at or above the bound the descent test holds mathematically: a failure is
                # rounding, which must not make the step run away
                if L >= L_bound:
                    break
                L = min(2.0 * L, L_bound)
            F_new = f_new + penalty.prox_value(x_new)
            history.append(F_new)
            times.append(time.perf_counter() - t0)
            if F_new < best[0]:
                best = (F_new, x_new, b_new)
            cheap = np.sqrt(L * L * _inner(dx, dx) + (s_b * s_b * _inner(gby, gby) if use_b
                                                       else 0.0))
            if not cheap < np.inf:  # squares beyond the float range (data near 1e100)
                cheap = safe_norm(np.array([L * safe_norm(dx)] + (
                    [s_b * safe_norm(gby)] if use_b else [])))
            if k >= next_check or (cheap <= tol * scale and k >= next_cheap):
                measure = optimality(datafit, penalty, x_new, b_new, L_measure, tol)
                if measure <= tol:
                    converged, stopped_by = True, "tol"
                    best = (F_new, x_new, b_new)
                    break
                next_check = k + check_period(k, measure, tol, previous)
                previous = (k, measure)
                next_cheap = k + max(5, k // 10)
            if callback is not None and callback(k, F_new, x_new, b_new):
                stopped_by = "callback"
                best = (F_new, x_new, b_new)
                break
            if self.accelerated and self.restart and F_new > fx and t_k > 1.0:
                # restart: drop the momentum, restart from x. Without momentum (t_k == 1) the
                # step was a plain prox-gradient step from x, which cannot increase F except
                # by rounding: accept it, or the same step would be rejected forever.
                t_k = 1.0
                y, yb = x, b
                ahead = None
                continue
            y, yb, t_k = nxt if ahead is not None else extrapolate(x_new, b_new, x, b, t_k)
            x, b, fx = x_new, b_new, F_new

        F_best, x_best, b_best = best
        if not converged or measure is None:
            measure = optimality(datafit, penalty, x_best, b_best, L_measure, tol)
            converged = converged or measure <= tol
        return finish(self, datafit, penalty, x_best, b_best, n_iter=n_iter, objective=history,
                      times=times, converged=converged, t0=t0, measure=measure,
                      info={"lipschitz": L, "best_objective": F_best, "stopped_by": stopped_by,
                            "accelerated": self.accelerated})
