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

Quadratic smooth parts: where ``s(W) = f(W) + g(W)`` is quadratic with a cheap Hessian
product (a datafit whose ``hessian_product`` reads cached Gram matrices,
``hessian_from_grams``, no intercept variables, the weights as the variable, and a penalty
whose smooth part is ``tr(W K W^T) / 2``, ``"task_coupling"``), one product with its
Hessian ``H`` per iteration gives what the two evaluations of ``s`` would: with ``dx =
x_{k+1} - y_k`` and ``beta`` the momentum weight of ``y_{k+1} = (1 + beta) x_{k+1} - beta
x_k``::

    grad s(x_{k+1}) = grad s(y_k) + H dx
    s(x_{k+1})      = s(y_k) + <grad s(y_k), dx> + <dx, H dx> / 2
    grad s(y_{k+1}) = (1 + beta) grad s(x_{k+1}) - beta grad s(x_k)
    s(y_{k+1})      = (1 + beta) s(x_{k+1}) - beta s(x_k)
                      + beta (1 + beta) <x_{k+1} - x_k, grad s(x_{k+1}) - grad s(x_k)> / 2

The rounding of these updates is bounded by evaluating ``s`` from scratch at ``x_{k+1}`` and
then at ``y_{k+1}`` (which resets both points the recursion reads) at every certificate, after
the last iteration and at least every :data:`EXACT_PERIOD` iterations, and at ``x_k`` where
the momentum restarts. :data:`QUADRATIC_STEPS` switches the updates off (every step then
evaluates ``s`` twice, as for the other models).

Stopping: the certified relative duality gap (:mod:`multitask.solvers.base`) is computed at
``x_{k+1}`` every :data:`CHECK_PERIOD` iterations, and sooner when the prox-gradient residual
of the step, ``||(L (y_k - x_{k+1}), grad_b f(y_k))||`` (free), falls below ``tol``; the run
stops at the first point where it is at most ``tol``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from multitask.losses import Datafit
from multitask.penalties.base import IdentityMap, Penalty
from multitask.solvers.base import (
    Solver,
    lipschitz_bound,
    measure_lipschitz,
    optimality,
    safe_norm,
    smooth_value_and_grad,
    smooth_value_pair_and_grad,
)
from multitask.solvers.iteration import CertificateSchedule, IterationRecord
from multitask.solvers.problem import Problem
from multitask.solvers.result import SolverResult

__all__ = ["ProximalGradient", "secant_lipschitz"]

_LIPSCHITZ_INITS = ("bound", "secant")
#: Iterations between two certificates near the tolerance (each costs about one gradient and
#: the dual norm), besides the checks that a small prox-gradient residual triggers.
CHECK_PERIOD = 10
#: Most iterations between two evaluations of a quadratic smooth part from scratch (module
#: docstring), besides those at the certificates.
EXACT_PERIOD = 50
#: Whether a quadratic smooth part is updated by one Hessian product per iteration (module
#: docstring); False evaluates it twice per iteration as for every other model.
QUADRATIC_STEPS = True


def certificate_schedule() -> CertificateSchedule:
    """The certificates of the gradient methods: after the first iteration, then at intervals
    predicted from the measure's rate (at least :data:`CHECK_PERIOD` past the first
    iterations; :func:`~multitask.solvers.iteration.predicted_period`), and sooner when the
    prox-gradient residual of a step falls below ``tol``, ``max(5, k // 10)`` iterations
    after the last certificate at the soonest."""
    return CertificateSchedule(period=CHECK_PERIOD, first=1, adaptive=True, early_gap=5,
                               early_fraction=10)


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
    max_preference = 50.0
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
        run = IterationRecord(self, datafit, penalty, callback, certificate_schedule())
        x, b = run.start(coef_init, intercept_init)
        model = _SmoothPart(datafit, penalty, b is not None)
        quadratic = _QuadraticPart.of(model)
        L_measure = measure_lipschitz(datafit, penalty)
        s_b = datafit.measure_constants()[1] if model.use_b else 0.0
        if self.lipschitz_init == "secant" and self.line_search:
            L = min(secant_lipschitz(datafit, penalty, x, b), model.L_bound)
        else:
            L = model.L_bound
        scale = max(datafit.gradient_scale() * np.sqrt(penalty.linear_map.norm_sq),
                    np.finfo(float).tiny)
        tol = self.tol
        fx = datafit.value(penalty.linear_map.forward(x), b) + penalty.value(x)  # F at the start
        run.keep(fx, x, b)
        y, yb = x, b
        t_k = 1.0
        n_iter = 0
        # (f, grad W, grad b) at y and the extrapolated point they belong to, computed by the
        # previous iteration's fused pass (_Step.ahead)
        ahead = None
        # quadratic smooth part: (s, grad s) at x, and the last iteration evaluated from scratch
        sx: tuple = (None, None)
        exact_at = 0
        for k in range(1, self.max_iter + 1):
            n_iter = k
            fy, gy, gby = model.value_and_grad(y, yb) if ahead is None else ahead.grads
            if not np.isfinite(fy) and y is not x:
                # the extrapolated point overflowed the loss (an exponential beyond the float
                # range, losses without a curvature bound): restart from x
                t_k, y, yb = 1.0, x, b
                fy, gy, gby = model.value_and_grad(y, yb)
            if quadratic is not None and y is x:
                sx = (fy, gy)
            step = self._step(model, y, yb, fy, gy, gby, L, x, b, t_k, quadratic)
            L, ahead = step.L, step.ahead
            x_new, b_new = step.x, step.b
            cheap = _step_residual(L, step.dx, s_b, gby if model.use_b else None)
            due = run.due(k, small=cheap <= tol * scale)
            if quadratic is not None:
                exact = due or k == self.max_iter or k - exact_at >= EXACT_PERIOD
                if exact:
                    exact_at = k
                s_new = (model.value_and_grad(x_new, None)[:2] if exact
                         else quadratic.moved(fy, gy, step))
                f_new = s_new[0]
            else:
                assert step.f is not None  # evaluated by every step outside the quadratic part
                f_new = step.f
            F_new = f_new + penalty.prox_value(x_new)
            run.record(F_new)
            run.offer(F_new, x_new, b_new)
            if due and run.certify(k, x_new, b_new, L=L_measure, target=tol) <= tol:
                run.stopped_by = "tol"
            if run.stopped_by == "tol" or run.notify(k, F_new, x_new, b_new):
                run.keep(F_new, x_new, b_new)
                break
            if self.accelerated and self.restart and F_new > fx and t_k > 1.0:
                # restart: drop the momentum, restart from x. Without momentum (t_k == 1) the
                # step was a plain prox-gradient step from x, which cannot increase F except
                # by rounding: accept it, or the same step would be rejected forever.
                t_k = 1.0
                y, yb = x, b
                ahead = None
                exact_at = k  # s from scratch at x next
                continue
            if ahead is not None:
                y, yb, t_k = ahead.point
            else:
                t_prev = t_k
                y, yb, t_k = _extrapolate(self.accelerated, x_new, b_new, x, b, t_k)
                if quadratic is not None:
                    if not exact:  # else s from scratch at y next
                        beta = _beta(self.accelerated, t_prev, t_k)
                        ahead = _Ahead((y, yb, t_k),
                                       quadratic.extrapolated(s_new, sx, x_new, x, beta))
                    sx = s_new
            x, b, fx = x_new, b_new, F_new

        assert run.best is not None
        F_best, x_best, b_best = run.best
        if quadratic is not None:  # the returned point's objective from scratch, not updated
            F_best = model.value(x_best, b_best) + penalty.prox_value(x_best)
        converged = run.stopped_by == "tol"
        measure = run.measure
        if not converged or measure is None:
            measure = optimality(datafit, penalty, x_best, b_best, L_measure, tol)
            converged = converged or measure <= tol
        return run.finish(x_best, b_best, n_iter=n_iter, converged=converged, measure=measure,
                          info={"lipschitz": L, "best_objective": F_best,
                                "stopped_by": run.stopped_by,
                                "accelerated": self.accelerated})

    def _step(self, model: _SmoothPart, y: np.ndarray, yb, fy: float, gy: np.ndarray, gby,
              L: float, x: np.ndarray, b, t_k: float,
              quadratic: _QuadraticPart | None = None) -> _Step:
        """``x+ = prox_{h / L}(y - grad f(y) / L)`` (``b+ = b_y - grad_b f(y) / L``), with
        ``L`` doubled (up to the bound) until the descent test of the module docstring holds
        (``line_search``). Where the datafit reads the data once for two points
        (``fuses_value_pairs``) and the step is accepted whatever the objective (no line
        search, or ``L`` at its bound), the loss at ``x+`` and its gradient at the next
        extrapolated point (from ``x``, ``b`` and ``t_k``) come from one pass. A quadratic
        smooth part (``quadratic``) is not evaluated here: the descent test, where it decides
        (``L`` below the bound), reads ``s(x+) - s(y) - <grad s(y), dx> = <dx, H dx> / 2``;
        the step's ``f`` is then set (with ``H dx``), else None."""
        penalty, use_b, L_bound = model.penalty, model.use_b, model.L_bound
        while True:
            x_new = penalty.prox(y - gy / L, 1.0 / L)
            b_new = yb - gby / L if use_b else None
            dx = x_new - y
            if model.fuse and (not self.line_search or L >= L_bound):
                nxt = _extrapolate(self.accelerated, x_new, b_new, x, b, t_k)
                f_new, *grads = smooth_value_pair_and_grad(model.datafit, penalty, x_new, b_new,
                                                           nxt[0], nxt[1])
                return _Step(x_new, b_new, f_new, dx, L, _Ahead(nxt, tuple(grads)))
            hdx = None
            if quadratic is not None:
                # the loss declares its curvature bound (capped): at the bound the test
                # cannot reject the step
                if not self.line_search or L >= L_bound:
                    return _Step(x_new, b_new, None, dx, L, None)
                hdx = quadratic.product(dx)
                f_new = fy + _inner(gy, dx) + 0.5 * _inner(dx, hdx)
            else:
                f_new = model.value(x_new, b_new)
            if not self.line_search:
                break
            quad = _inner(gy, dx) + 0.5 * L * _inner(dx, dx)
            if use_b:
                db = b_new - yb
                quad += _inner(gby, db) + 0.5 * L * _inner(db, db)
            if f_new <= fy + quad + 1e-12 * max(1.0, abs(fy)):
                break
            # at or above the bound the descent test holds mathematically: a failure is
            # rounding, which must not make the step run away. A loss without a curvature
            # bound (no "curvature_bound") gives an estimate, not a bound: L keeps doubling
            if (L >= L_bound and model.capped) or not np.isfinite(2.0 * L):
                break
            L = min(2.0 * L, L_bound) if model.capped else 2.0 * L
        return _Step(x_new, b_new, f_new, dx, L, None, hdx)


class _SmoothPart:
    """The smooth part ``f(A V, b) + g(V)`` of the model (the loss, plus the penalty's smooth
    part ``g`` when it declares one), with what a step needs of it."""

    def __init__(self, datafit: Datafit, penalty: Penalty, use_b: bool):
        self.datafit, self.penalty, self.use_b = datafit, penalty, use_b
        self.L_bound = lipschitz_bound(datafit, penalty)
        # L_bound bounds the step's constant where the loss declares its curvature bound
        self.capped = "curvature_bound" in datafit.capabilities
        self.smooth = "smooth" in penalty.capabilities
        # where the datafit reads the data once for two points, the objective at the new
        # point and the gradient at the next extrapolated one come from one pass (when the
        # step is accepted whatever the objective: no line search, or L at its bound)
        self.fuse = getattr(datafit, "fuses_value_pairs", False)

    def value_and_grad(self, V: np.ndarray, b):
        return smooth_value_and_grad(self.datafit, self.penalty, V, b)

    def value(self, V: np.ndarray, b) -> float:
        f = self.datafit.value(self.penalty.linear_map.forward(V), b)
        return f + self.penalty.smooth_value_and_grad(V)[0] if self.smooth else f


class _QuadraticPart:
    """The Hessian product of a quadratic smooth part ``s(V) = f(A V) + g(V)`` and the updates
    of its value and gradient along the iterates (module docstring)."""

    def __init__(self, model: _SmoothPart):
        # declared by the datafits with "hessian_from_grams" (not part of every Datafit)
        self._loss_product: Callable[[np.ndarray], np.ndarray] = (
            model.datafit.hessian_product)  # type: ignore[attr-defined]
        # declared by the task-coupling penalties (GraphRegularization and its subclasses)
        self._penalty_product: Callable[[np.ndarray], np.ndarray] = (
            model.penalty.smooth_hessian_product)  # type: ignore[attr-defined]

    @classmethod
    def of(cls, model: _SmoothPart) -> _QuadraticPart | None:
        """The quadratic part of ``model``, or None where its smooth part is not a quadratic
        with a cheap Hessian product: a datafit without ``hessian_from_grams`` (or without its
        curvature bound), intercept variables, a penalty smooth part that is not a task
        coupling ``tr(W K W^T) / 2`` with its ``smooth_hessian_product`` (penalties without
        one are left to the general steps), a variable other than the weights
        (``linear_map``), or :data:`QUADRATIC_STEPS` off."""
        caps = model.penalty.capabilities
        if (not QUADRATIC_STEPS or model.use_b or not model.capped or model.fuse
                or not isinstance(model.penalty.linear_map, IdentityMap)
                or not getattr(model.datafit, "hessian_from_grams", False)
                or not ("smooth" in caps and "task_coupling" in caps)
                or not hasattr(model.penalty, "smooth_hessian_product")):
            return None
        return cls(model)

    def product(self, D: np.ndarray) -> np.ndarray:
        """``H D = H_f D + H_g D`` (the datafit's ``hessian_product`` and the penalty's
        ``smooth_hessian_product``, ``D K`` for ``g = tr(W K W^T) / 2``)."""
        return self._loss_product(D) + self._penalty_product(D)

    def moved(self, fy: float, gy: np.ndarray, step: _Step) -> tuple[float, np.ndarray]:
        """``(s(x+), grad s(x+))`` from ``(s(y), grad s(y))`` and ``H dx`` (the step's, or one
        product)."""
        hdx = step.hdx if step.hdx is not None else self.product(step.dx)
        return fy + _inner(gy, step.dx) + 0.5 * _inner(step.dx, hdx), gy + hdx

    @staticmethod
    def extrapolated(s_new: tuple, s_x: tuple, x_new: np.ndarray, x: np.ndarray,
                     beta: float) -> tuple:
        """``(s(y), grad s(y), None)`` at ``y = (1 + beta) x+ - beta x`` from ``s`` and its
        gradient at ``x+`` and ``x``."""
        f_new, g_new = s_new
        if beta == 0.0:
            return f_new, g_new, None
        f_x, g_x = s_x
        dg = g_new - g_x
        f_y = ((1.0 + beta) * f_new - beta * f_x
               + 0.5 * beta * (1.0 + beta) * _inner(x_new - x, dg))
        return f_y, g_new + beta * dg, None


class _Ahead(NamedTuple):
    """The next extrapolated point ``(y, b_y, t)`` and ``(f, grad W, grad b)`` there."""

    point: tuple
    grads: tuple


class _Step(NamedTuple):
    """A prox-gradient step: the new point ``(x, b)``, the smooth part ``f`` there, the move
    ``dx = x - y``, the step's ``L`` and, from a fused pass, what the next iteration needs."""

    x: np.ndarray
    b: np.ndarray | None
    f: float | None
    dx: np.ndarray
    L: float
    ahead: _Ahead | None
    hdx: np.ndarray | None = None


def _extrapolate(accelerated: bool, x_new: np.ndarray, b_new, x: np.ndarray, b, t_k: float):
    """``(y, b_y, t_{k+1})``: ``y = x+ + ((t_k - 1) / t_{k+1}) (x+ - x)`` with ``t_{k+1} = (1
    + sqrt(1 + 4 t_k^2)) / 2`` (the same for the intercepts); ``(x+, b+, t_k)`` without
    momentum."""
    if not accelerated:
        return x_new, b_new, t_k
    t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t_k * t_k))
    beta = _beta(True, t_k, t_next)
    y = x_new + beta * (x_new - x)
    yb = b_new + beta * (b_new - b) if b_new is not None else None
    return y, yb, t_next


def _beta(accelerated: bool, t_k: float, t_next: float) -> float:
    """The momentum weight ``(t_k - 1) / t_{k+1}`` of :func:`_extrapolate` (0 without
    momentum)."""
    return (t_k - 1.0) / t_next if accelerated else 0.0


def _step_residual(L: float, dx: np.ndarray, s_b: float, gby) -> float:
    """``||(L dx, s_b grad_b f(y))||``: the prox-gradient residual of a step (free), computed
    with scaling where the squares leave the float range (data near 1e100)."""
    cheap = np.sqrt(L * L * _inner(dx, dx) + (s_b * s_b * _inner(gby, gby) if gby is not None
                                               else 0.0))
    if not cheap < np.inf:
        cheap = safe_norm(np.array([L * safe_norm(dx)] + (
            [s_b * safe_norm(gby)] if gby is not None else [])))
    return cheap
