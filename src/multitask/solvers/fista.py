"""Accelerated proximal / projected gradient (FISTA) for every smooth loss and penalty.

Minimizes ``f(A(V), b) + h(V)`` where ``f`` is a smooth datafit (:mod:`multitask.losses`), ``h``
a penalty with a prox or a constraint set with a projection (:mod:`multitask.penalties`), ``A``
a linear map from the variable to ``W`` (identity by default) and ``b`` the unpenalized
intercepts. Iteration (Beck & Teboulle, "A fast iterative shrinkage-thresholding algorithm for
linear inverse problems")::

    x_{k+1} = prox_{h / L}(y_k - grad f(y_k) / L)           (b: plain gradient step)
    t_{k+1} = (1 + sqrt(1 + 4 t_k^2)) / 2
    y_{k+1} = x_{k+1} + ((t_k - 1) / t_{k+1}) (x_{k+1} - x_k)

with backtracking on ``L`` (doubling until
``f(x+) <= f(y) + <grad f(y), x+ - y> + L/2 ||x+ - y||^2``) and, optionally, the adaptive
restart of O'Donoghue & Candès ("Adaptive restart for accelerated gradient schemes"): the
momentum is reset whenever the objective increases. ``accelerated=False`` gives the plain
proximal gradient method (monotone).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from multitask.losses import Datafit
from multitask.penalties.base import Penalty
from multitask.penalties.composite import IdentityMap
from multitask.solvers.result import SolverResult

__all__ = ["fista"]


def _inner(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.vdot(a, b))


def fista(
    datafit: Datafit,
    penalty: Penalty,
    *,
    coef_init: np.ndarray | None = None,
    intercept_init: np.ndarray | None = None,
    linear_map=None,
    max_iter: int = 1000,
    tol: float = 1e-6,
    criterion: str = "objective",
    accelerated: bool = True,
    restart: bool = True,
    line_search: bool = True,
    lipschitz: float | None = None,
    callback: Callable | None = None,
    warn: bool = True,
) -> SolverResult:
    """Run accelerated proximal gradient on ``datafit(A(V), b) + penalty(V)``.

    Parameters
    ----------
    datafit : Datafit
        Smooth loss bound to the training data.
    penalty : Penalty
        Penalty (prox) or constraint set (projection) on the variable ``V``.
    coef_init, intercept_init : ndarray, optional
        Warm start; ``coef_init`` has the variable's shape (``(d, m)`` for the identity map).
    linear_map : object, optional
        ``A`` with ``forward``, ``adjoint``, ``norm_sq`` and ``variable_shape``
        (:mod:`multitask.penalties.composite`). Identity by default.
    max_iter : int, default=1000
        Iteration budget; reaching it warns with ``ConvergenceWarning``.
    tol : float, default=1e-6
        Stopping tolerance. ``criterion="objective"``: ``|F_k - F_{k-1}| <= tol * |F_k|`` on
        three consecutive iterations, the last change not larger than the one before (after
        a warm start the momentum builds up and the first decreases are small but growing).
        ``criterion="residual"``: the prox-gradient fixed-point residual
        ``L ||x_{k+1} - y_k||`` falls below ``tol`` times its first value (with a warm start:
        times the larger of its first value and that of a cold start from zero).
    criterion : {"objective", "residual"}
    accelerated : bool, default=True
        FISTA momentum; ``False`` gives proximal gradient (ISTA), which is monotone.
    restart : bool, default=True
        Adaptive (function-value) restart of the momentum.
    line_search : bool, default=True
        Backtracking on ``L``; when false the step is ``1 / L`` with ``L`` the bound of
        ``datafit.lipschitz() * ||A||^2`` (or ``lipschitz``).
    lipschitz : float, optional
        Initial Lipschitz estimate; defaults to the datafit's bound.
    callback : callable, optional
        ``callback(k, objective, V, b)`` after each iteration; returning ``True`` stops.
    warn : bool, default=True
        Warn when ``max_iter`` is reached.

    Returns
    -------
    SolverResult
        The best iterate seen (lowest objective), with the objective history.
    """
    if criterion not in ("objective", "residual"):
        raise ValueError(f"criterion must be 'objective' or 'residual', got {criterion!r}.")
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}.")
    A = linear_map if linear_map is not None else IdentityMap()
    d, m = datafit.data.n_features, datafit.data.n_tasks
    shape = A.variable_shape(d, m)
    use_b = datafit.has_intercept_variable
    x = np.zeros(shape) if coef_init is None else np.array(coef_init, dtype=np.float64)
    if x.shape != shape:
        raise ValueError(f"coef_init has shape {x.shape}, expected {shape}.")
    if use_b:
        b = datafit.init_intercept() if intercept_init is None else np.array(intercept_init, float)
    else:
        b = None
    if penalty.is_constraint:
        x = penalty.prox(x, 1.0)

    L = float(lipschitz) if lipschitz is not None else datafit.lipschitz() * A.norm_sq
    if not np.isfinite(L) or L <= 0:
        L = 1.0
    # the datafit's bound is a true Lipschitz constant: at or above it the descent test holds
    # mathematically, and a failure is rounding (the Gram form of the squared loss loses
    # digits on near-perfect fits), which must not make L, hence the step, run away
    L_bound = L if lipschitz is None else None  # else computed at the first failed test

    def obj_parts(V, bb):
        f, gW, gb = datafit.value_and_grad(A.forward(V), bb)
        return f, A.adjoint(gW), gb

    t0 = time.perf_counter()
    res_cold = 0.0
    if criterion == "residual" and (coef_init is not None or intercept_init is not None):
        # scale of the residual test: a warm start near the solution has a tiny first residual
        # and must not be asked to shrink it tol-fold again; use a cold start's as well
        x0 = np.zeros(shape)
        if penalty.is_constraint:
            x0 = penalty.prox(x0, 1.0)
        b0 = datafit.init_intercept() if use_b else None
        _, g0, gb0 = obj_parts(x0, b0)
        dx0 = penalty.prox(x0 - g0 / L, 1.0 / L) - x0
        res_cold = float(np.sqrt(L * L * _inner(dx0, dx0) + (_inner(gb0, gb0) if use_b else 0.0)))
    fx = datafit.value(A.forward(x), b) + penalty.value(x)
    best = (fx, x, b)
    y, yb = x, b
    t_k = 1.0
    history: list[float] = []
    times: list[float] = []
    converged = False
    small = 0
    rel = prev_rel = np.inf
    res0 = None
    res = np.nan
    n_iter = 0
    for k in range(1, max_iter + 1):
        n_iter = k
        fy, gy, gby = obj_parts(y, yb)
        while True:
            x_new = penalty.prox(y - gy / L, 1.0 / L)
            b_new = yb - gby / L if use_b else None
            dx = x_new - y
            quad = _inner(gy, dx) + 0.5 * L * _inner(dx, dx)
            if use_b:
                db = b_new - yb
                quad += _inner(gby, db) + 0.5 * L * _inner(db, db)
            f_new = datafit.value(A.forward(x_new), b_new)
            if not line_search or f_new <= fy + quad + 1e-12 * max(1.0, abs(fy)):
                break
            if L_bound is None:
                L_bound = datafit.lipschitz() * A.norm_sq
            if L >= L_bound:
                break
            L *= 2.0
        F_new = f_new + penalty.value(x_new)
        step_norm = float(np.sqrt(_inner(dx, dx) + (_inner(db, db) if use_b else 0.0)))
        res = L * step_norm
        if res0 is None:
            res0 = max(res, res_cold, np.finfo(float).tiny)
        history.append(F_new)
        times.append(time.perf_counter() - t0)
        if F_new < best[0]:
            best = (F_new, x_new, b_new)

        if accelerated and restart and F_new > fx and t_k > 1.0:
            # restart: drop the momentum, keep the better of the two points. Without momentum
            # (t_k == 1) the step was a plain prox-gradient step from x, which cannot increase
            # F except by rounding: accept it, or the same step would be rejected forever.
            t_k = 1.0
            y, yb = x, b
            small = 0
            if callback is not None and callback(k, F_new, x_new, b_new):
                break
            continue
        if accelerated:
            t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t_k * t_k))
            beta = (t_k - 1.0) / t_next
            y = x_new + beta * (x_new - x)
            yb = b_new + beta * (b_new - b) if use_b else None
            t_k = t_next
        else:
            y, yb = x_new, b_new
        prev_rel, rel = rel, abs(fx - F_new) / max(abs(F_new), np.finfo(float).tiny)
        x, b, fx = x_new, b_new, F_new
        if callback is not None and callback(k, F_new, x_new, b_new):
            break
        if criterion == "objective":
            small = small + 1 if rel <= tol else 0
            # three small changes in a row, the last not larger than the one before: after a
            # warm start the momentum builds up from zero and the first decreases are small
            # but growing, which is not convergence
            if small >= 3 and rel <= prev_rel:
                converged = True
                break
        elif res <= tol * res0:
            converged = True
            break

    elapsed = time.perf_counter() - t0
    if not converged and n_iter >= max_iter and warn:
        warnings.warn(
            f"FISTA did not converge in max_iter={max_iter} iterations (last relative "
            f"objective change above tol={tol}); returning the best iterate. Increase max_iter "
            "or tol.",
            ConvergenceWarning,
            stacklevel=2,
        )
    F_best, x_best, b_best = best
    W = A.forward(x_best)
    return SolverResult(
        coef=x_best,
        W=np.array(W, copy=True),
        intercept=datafit.intercept(W, b_best),
        n_iter=n_iter,
        objective=np.asarray(history),
        converged=converged,
        time=elapsed,
        times=np.asarray(times),
        info={"lipschitz": L, "best_objective": F_best, "residual": res,
              "intercept_variable": b_best},
    )
