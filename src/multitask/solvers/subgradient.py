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

Stopping: a subgradient method has no computable optimality measure, so the rule is
heuristic. The run stops when the best objective improved by at most ``tol * |F_best|`` over
the last ``window`` iterations (``tol=0`` disables it: exactly ``max_iter`` iterations, as in
the paper's 200-iteration runs), or at ``max_iter`` with a ``ConvergenceWarning``.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from multitask.losses import Datafit
from multitask.penalties.base import Constraint
from multitask.solvers.result import SolverResult

__all__ = ["projected_subgradient", "default_eta0", "ITERATES"]

ITERATES = ("best", "average", "last")


def _max_diameter(constraint: Constraint, n_tasks: int) -> float:
    """Largest Frobenius norm in the set: ``C sqrt(m)`` for the l1,inf and per-task balls."""
    radius = np.asarray(constraint.radius, dtype=float)
    if radius.ndim == 0:
        return float(radius) * np.sqrt(n_tasks)
    return float(np.sqrt(np.sum(radius**2)))


def default_eta0(datafit: Datafit, constraint: Constraint, max_iter: int) -> float:
    """The step scale minimizing the textbook bound: ``eta0 = D / (G sqrt(1 + ln T))``.

    ``D = sup_{W in K} ||W||_F`` (``C sqrt(m)`` for the l1,inf ball and for per-task balls of
    radius ``C``) bounds the distance from ``W = 0`` to a minimizer, and
    ``G = sqrt(sum_t R_t^2)``, ``R_t = max_{i in t} ||(x_i, 1)||_2`` (the 1 only with an
    intercept variable), bounds the norm of the subgradient of the hinge and logistic losses
    (``|ell'| <= 1``). For unit-norm inputs without intercept this is the specification's
    ``C / sqrt(1 + ln T)``. Returns 1.0 when ``D`` or ``G`` is 0.
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
    R2 = np.array([sq[data.offsets[t] : data.offsets[t + 1]].max(initial=0.0)
                   for t in range(data.n_tasks)])
    G = float(np.sqrt(R2.sum()))
    D = _max_diameter(constraint, data.n_tasks)
    if not (G > 0 and D > 0 and np.isfinite(G) and np.isfinite(D)):
        return 1.0
    return D / (G * np.sqrt(1.0 + np.log(max(int(max_iter), 1))))


def projected_subgradient(
    datafit: Datafit,
    constraint: Constraint,
    *,
    coef_init: np.ndarray | None = None,
    intercept_init: np.ndarray | None = None,
    eta0: float | Sequence[float] | None = None,
    max_iter: int = 1000,
    tol: float = 1e-5,
    window: int = 50,
    iterate: str = "best",
    callback: Callable | None = None,
    warn: bool = True,
) -> SolverResult:
    """Minimize ``datafit`` over ``constraint`` by projected subgradient steps ``eta0 / sqrt(k)``.

    Parameters
    ----------
    datafit : Datafit
        Loss bound to the training data; only ``value_and_grad`` is used, so the non-smooth
        :class:`~multitask.losses.Hinge` works (its "gradient" is a subgradient).
    constraint : Constraint
        Feasible set ``K`` of ``W`` (shape ``(n_features, n_tasks)``), with a Euclidean
        projection ``constraint.project``.
    coef_init : ndarray of shape (n_features, n_tasks), optional
        Start (projected onto ``K``); zeros by default.
    intercept_init : ndarray of shape (n_tasks,), optional
        Starting intercepts (when the datafit has intercept variables); zeros by default.
    eta0 : float, sequence of float or None, default=None
        Step scale. ``None``: :func:`default_eta0`. A sequence: run the method once per value
        and keep the run whose returned iterate has the lowest objective (the paper chooses
        ``eta0`` by the training objective); ``info["eta0"]`` holds the chosen value and
        ``info["eta0_objectives"]`` the objective of each.
    max_iter : int, default=1000
        Number of projected subgradient steps at most.
    tol : float, default=1e-5
        Stop when the best objective improved by at most ``tol * |F_best|`` over the last
        ``window`` iterations (``0`` runs exactly ``max_iter`` steps).
    window : int, default=50
        Length of the window of the stopping rule.
    iterate : {"best", "average", "last"}, default="best"
        Returned point: the iterate of lowest objective; the step-weighted average
        ``sum_k eta_k W_k / sum_k eta_k`` (feasible by convexity, not exactly sparse; the
        point of the textbook guarantee); or the last iterate.
    callback : callable, optional
        ``callback(k, objective, W, b)`` after each step (``W`` the feasible iterate ``W_k``);
        returning ``True`` stops.
    warn : bool, default=True
        Warn with ``ConvergenceWarning`` when ``max_iter`` is reached before the stopping rule
        (never when ``tol == 0``, which asks for exactly ``max_iter`` steps).

    Returns
    -------
    SolverResult
        ``objective[k-1] = F(W_k, b_k)``; ``info`` has ``best_objective`` (objective of the
        returned point), ``eta0``, ``iterate``, ``intercept_variable``.

    Raises
    ------
    ValueError
        On a non-positive ``eta0``, ``max_iter < 1``, negative ``tol``, ``window < 1`` or an
        unknown ``iterate``.
    """
    if iterate not in ITERATES:
        raise ValueError(f"iterate must be one of {ITERATES}, got {iterate!r}.")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter!r}.")
    if not np.isfinite(tol) or tol < 0:
        raise ValueError(f"tol must be a finite number >= 0, got {tol!r}.")
    if int(window) < 1:
        raise ValueError(f"window must be >= 1, got {window!r}.")
    if not getattr(constraint, "is_constraint", False):
        raise ValueError("projected_subgradient needs a constraint set (is_constraint=True).")
    if eta0 is not None and np.ndim(eta0) == 1:
        etas = [float(e) for e in eta0]
        if not etas:
            raise ValueError("eta0 is an empty sequence.")
        runs = [
            projected_subgradient(
                datafit, constraint, coef_init=coef_init, intercept_init=intercept_init,
                eta0=e, max_iter=max_iter, tol=tol, window=window, iterate=iterate,
                callback=callback, warn=False,
            )
            for e in etas
        ]
        objs = [r.final_objective for r in runs]
        best = runs[int(np.nanargmin(objs))]
        best.info["eta0_objectives"] = np.asarray(objs)
        if warn and not best.converged and tol > 0:
            _warn(max_iter, tol)
        return best
    if eta0 is None:
        eta0 = default_eta0(datafit, constraint, max_iter)
    eta0 = float(eta0)
    if not np.isfinite(eta0) or eta0 <= 0:
        raise ValueError(f"eta0 must be a finite number > 0, got {eta0!r}.")

    d, m = datafit.data.n_features, datafit.data.n_tasks
    W = np.zeros((d, m)) if coef_init is None else np.array(coef_init, dtype=np.float64)
    if W.shape != (d, m):
        raise ValueError(f"coef_init has shape {W.shape}, expected {(d, m)}.")
    W = constraint.project(W)
    use_b = datafit.has_intercept_variable
    if use_b:
        b = np.zeros(m) if intercept_init is None else np.array(intercept_init, dtype=float)
    else:
        b = None

    t0 = time.perf_counter()
    f, gW, gb = datafit.value_and_grad(W, b)
    best = (f, W, b)
    avg_W = np.zeros_like(W) if iterate == "average" else None
    avg_b = np.zeros(m) if (iterate == "average" and use_b) else None
    eta_sum = 0.0
    history: list[float] = []
    times: list[float] = []
    best_hist: list[float] = []
    converged = False
    n_iter = 0
    for k in range(1, int(max_iter) + 1):
        n_iter = k
        eta = eta0 / np.sqrt(k)
        W = constraint.project(W - eta * gW)
        if use_b:
            b = b - eta * gb
        f, gW, gb = datafit.value_and_grad(W, b)
        history.append(f)
        times.append(time.perf_counter() - t0)
        if f < best[0]:
            best = (f, W, b)
        best_hist.append(best[0])
        if avg_W is not None:
            eta_sum += eta
            avg_W += eta * W
            if use_b:
                avg_b += eta * b
        if callback is not None and callback(k, f, W, b):
            break
        if tol > 0 and k > window:
            old = best_hist[k - 1 - window]
            if old - best[0] <= tol * max(abs(best[0]), np.finfo(float).tiny):
                converged = True
                break

    if iterate == "best":
        F_ret, W_ret, b_ret = best
    elif iterate == "last":
        F_ret, W_ret, b_ret = f, W, b
    else:
        W_ret = avg_W / eta_sum if eta_sum > 0 else W
        b_ret = (avg_b / eta_sum if eta_sum > 0 else b) if use_b else None
        F_ret = datafit.value(W_ret, b_ret)
    elapsed = time.perf_counter() - t0
    if warn and not converged and n_iter >= max_iter and tol > 0:
        _warn(max_iter, tol)
    return SolverResult(
        coef=W_ret,
        W=np.array(W_ret, copy=True),
        intercept=datafit.intercept(W_ret, b_ret),
        n_iter=n_iter,
        objective=np.asarray(history),
        converged=converged,
        time=elapsed,
        times=np.asarray(times),
        info={"best_objective": float(F_ret), "eta0": eta0, "iterate": iterate,
              "intercept_variable": b_ret},
    )


def _warn(max_iter: int, tol: float) -> None:
    warnings.warn(
        f"Projected subgradient did not meet its stopping rule in max_iter={max_iter} "
        f"iterations (best objective still improving by more than tol={tol} relative over the "
        "window); returning the chosen iterate. Increase max_iter or tol.",
        ConvergenceWarning,
        stacklevel=3,
    )
