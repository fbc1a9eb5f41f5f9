"""Projected gradient (PG) and accelerated projected gradient (AG) of Chen, Liu & Ye.

J. Chen, J. Liu, J. Ye, "Learning incoherent sparse and low-rank patterns from multiple tasks"
(ACM TKDD 5(4), 2012). The paper minimizes a smooth loss plus a non-smooth penalty over a
closed convex set, ``F(T) = f(T) + g(T)``, ``T in M``, with

* **PG** (Algorithm 1): ``T_{k+1} = argmin_{T in M} (L/2) ||T - (T_k - grad f(T_k) / L)||^2
  + g(T)``; monotone, ``F(T_k) - F* <= L ||T_0 - T*||^2 / (2k)``;
* **AG** (Algorithm 2): the same composite step taken at the search point
  ``S_k = T_k + alpha_k (T_k - T_{k-1})``, ``alpha_k = (t_{k-2} - 1) / t_{k-1}``,
  ``t_k = (1 + sqrt(1 + 4 t_{k-1}^2)) / 2``, ``t_{-1} = 0``, ``t_0 = 1``; not monotone,
  ``F(T_{k+1}) - F* <= 2 L ||T_0 - T*||^2 / (k + 1)^2``;

each with the step-size search of Section 3.2 (``L`` doubled until
``f(T^) <= f(S) + <grad f(S), T^ - S> + (L/2) ||T^ - S||^2``, never decreased), or, for the
least-squares Algorithms 3 and 4, a fixed step ``1 / L`` with ``L`` the Lipschitz constant of
the joint gradient.

Both are the proximal gradient iterations of :func:`multitask.solvers.fista.fista` (AG is
FISTA with the paper's index shift: the momentum sequences coincide), so they run there with
momentum restart switched off; this module adds the paper's stopping rules (``|Delta F|``
absolute or relative, or a KKT certificate), feasibility of the starting point, and the
certificate of the sparse + low-rank model.

The sparse + low-rank model (:func:`solve_sparse_low_rank`) is, in the scaling convention of
:mod:`multitask.losses` (internal ``W`` of shape ``(n_features, n_tasks)``)::

    min_{P, Q, b}  sum_t (1/n_t) sum_i ell(y_i, x_i^T (p_t + q_t) + b_t) + gamma ||P||_1
    subject to     ||Q||_* <= tau,

a stacked variable ``V = [P, Q]`` of shape ``(2, d, m)`` with ``W = P + Q``
(:class:`~multitask.penalties.composite.SumMap`), the block penalty
``gamma ||P||_1 + indicator(||Q||_* <= tau)`` whose prox is soft-thresholding of ``P`` at
``gamma / L`` and the projection of ``Q`` onto the trace-norm ball (Eqs. (47)-(48)).

Scaling (shared design, ``n`` rows, squared loss): the paper's Eq. (45) objective
``||(P + Q)^T X - Y||_F^2 + gamma_paper ||P||_1`` equals ``2 n`` times ours with
``gamma = gamma_paper / (2 n)``; ``tau`` is unchanged. The paper's joint Lipschitz constant
``4 sigma_max(X)^2`` (the spec's correction of Lemma 6.1) becomes ``2 sigma_max(X)^2 / n``
here, and ``2 max_t sigma_max(X_t)^2 / n_t`` with per-task designs: the datafit's bound times
``||A||^2 = 2`` for the map ``(P, Q) -> P + Q`` (verified against the exact Hessian in the
tests).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from multitask.losses import Datafit
from multitask.penalties import L1, TraceBall
from multitask.penalties.base import Penalty
from multitask.penalties.composite import BlockPenalty, IdentityMap, SumMap
from multitask.solvers.fista import fista
from multitask.solvers.result import SolverResult

__all__ = [
    "ALGORITHMS",
    "projected_gradient",
    "solve_sparse_low_rank",
    "sparse_low_rank_certificate",
    "secant_lipschitz",
]

#: Algorithm names accepted by :func:`projected_gradient`.
ALGORITHMS = ("pg", "ag")


def secant_lipschitz(datafit: Datafit, linear_map, x: np.ndarray, b: np.ndarray | None,
                     seed: int = 0) -> float:
    """A lower estimate of the gradient's Lipschitz constant, to start the step search.

    Returns ``||grad(x + e) - grad(x)|| / ||e||`` for a random direction ``e`` of norm
    ``1e-3 * max(1, ||x||)`` (``grad`` with respect to the variable and the intercepts). It is
    at most the best constant ``L_f``, so the search of Section 3.2 can only increase it; it
    replaces the paper's unspecified ``L_0`` (MALSAR starts at 1) by a scale-free value.
    """
    A = linear_map
    rng = np.random.default_rng(seed)
    e = rng.standard_normal(x.shape)
    scale = 1e-3 * max(1.0, float(np.linalg.norm(x)))
    e *= scale / max(float(np.linalg.norm(e)), np.finfo(float).tiny)
    eb = None
    if b is not None:
        eb = rng.standard_normal(b.shape)
        eb *= scale / max(float(np.linalg.norm(eb)), np.finfo(float).tiny)
    _, g0, gb0 = datafit.value_and_grad(A.forward(x), b)
    _, g1, gb1 = datafit.value_and_grad(A.forward(x + e), None if b is None else b + eb)
    num = float(np.sum((A.adjoint(g1) - A.adjoint(g0)) ** 2))
    den = float(np.sum(e * e))
    if b is not None:
        num += float(np.sum((gb1 - gb0) ** 2))
        den += float(np.sum(eb * eb))
    L = np.sqrt(num / den) if den > 0 else 0.0
    return float(L) if np.isfinite(L) and L > 0 else 1.0


def projected_gradient(
    datafit: Datafit,
    penalty: Penalty,
    *,
    algorithm: str = "ag",
    linear_map=None,
    coef_init: np.ndarray | None = None,
    intercept_init: np.ndarray | None = None,
    line_search: bool = True,
    lipschitz: float | None = None,
    max_iter: int = 10000,
    tol: float = 1e-6,
    tol_type: str = "relative",
    criterion: str = "objective",
    certificate: Callable | None = None,
    callback: Callable | None = None,
    warn: bool = True,
) -> SolverResult:
    """Minimize ``f(A(V), b) + h(V)`` by the paper's PG or AG method.

    Parameters
    ----------
    datafit : Datafit
        Smooth loss bound to the training data (:mod:`multitask.losses`).
    penalty : Penalty
        ``h``: a penalty with a prox, a constraint set with a projection, or a
        :class:`~multitask.penalties.composite.BlockPenalty` mixing both.
    algorithm : {"pg", "ag"}, default="ag"
        ``"pg"``: projected gradient (Algorithms 1 / 3); ``"ag"``: accelerated projected
        gradient (Algorithms 2 / 4).
    linear_map : object, optional
        ``A`` from the variable to ``W`` (:mod:`multitask.penalties.composite`); identity by
        default.
    coef_init, intercept_init : ndarray, optional
        Starting point (zeros by default). ``coef_init`` is made feasible first:
        ``h``'s constraint blocks are projected (``prox`` with step 0).
    line_search : bool, default=True
        The step-size search of Section 3.2 (Algorithms 1 / 2): ``L`` doubles until the
        quadratic upper bound holds at the new point and is never decreased. ``False``: fixed
        step ``1 / L`` with ``L = datafit.lipschitz() * ||A||^2`` (Algorithms 3 / 4), or
        ``lipschitz`` when given.
    lipschitz : float, optional
        ``L_0`` of the search (default: :func:`secant_lipschitz`, a lower estimate), or the
        fixed ``L`` when ``line_search`` is false.
    max_iter : int, default=10000
        Iteration budget; reaching it warns with ``ConvergenceWarning`` and returns the best
        iterate.
    tol : float, default=1e-6
        Stopping tolerance (> 0).
    tol_type : {"relative", "absolute"}, default="relative"
        ``"absolute"``: stop when the measure is ``<= tol`` (the paper's rule
        ``|F_{k+1} - F_k| < 1e-5``); ``"relative"``: when it is ``<= tol * |F_{k+1}|``.
    criterion : {"objective", "kkt"}, default="objective"
        The measure: ``|F_{k+1} - F_k|``, or ``certificate(V, b)`` (see
        :func:`sparse_low_rank_certificate`; costs one more gradient per iteration).
    certificate : callable, optional
        ``certificate(V, b) -> (bound, intercept_gradient_norm)``; required for
        ``criterion="kkt"``. The run stops when both are within the tolerance.
    callback : callable, optional
        ``callback(k, objective, V, b)``; returning ``True`` stops the run.
    warn : bool, default=True
        Warn with ``ConvergenceWarning`` when ``max_iter`` is reached.

    Returns
    -------
    SolverResult
        The best iterate (for PG, the last: the objective never increases; with
        ``criterion="kkt"``, the iterate whose certificate met the tolerance), the objective
        after each iteration (``objective[k-1] = F(T_k)``), elapsed times, and in ``info``:
        ``algorithm``, ``lipschitz`` (final ``L``), ``objective_init`` (``F(T_0)``),
        ``certificate`` (the last value computed, or None), ``stopped_by`` (``"objective"``,
        ``"kkt"``, ``"stagnation"``: the objective repeated exactly three times, so no
        tolerance can be met in floating point, ``"callback"`` or ``"max_iter"``).
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}.")
    if tol_type not in ("relative", "absolute"):
        raise ValueError(f"tol_type must be 'relative' or 'absolute', got {tol_type!r}.")
    if criterion not in ("objective", "kkt"):
        raise ValueError(f"criterion must be 'objective' or 'kkt', got {criterion!r}.")
    if criterion == "kkt" and certificate is None:
        raise ValueError("criterion='kkt' needs a certificate function.")
    if not (np.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be a finite number > 0, got {tol!r}.")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter!r}.")
    A = linear_map if linear_map is not None else IdentityMap()
    d, m = datafit.data.n_features, datafit.data.n_tasks
    shape = A.variable_shape(d, m)
    x0 = np.zeros(shape) if coef_init is None else np.array(coef_init, dtype=np.float64)
    if x0.shape != shape:
        raise ValueError(f"coef_init has shape {x0.shape}, expected {shape}.")
    x0 = penalty.prox(x0, 0.0)  # feasible start: project the constraint blocks only
    use_b = datafit.has_intercept_variable
    if use_b:
        b0 = (datafit.init_intercept() if intercept_init is None
              else np.array(intercept_init, dtype=np.float64))
    else:
        b0 = None
    if lipschitz is not None:
        L0 = float(lipschitz)
        if not (np.isfinite(L0) and L0 > 0):
            raise ValueError(f"lipschitz must be a finite number > 0, got {lipschitz!r}.")
    elif line_search:
        L0 = secant_lipschitz(datafit, A, x0, b0)
    else:
        L0 = None  # fista uses datafit.lipschitz() * ||A||^2

    F0 = datafit.value(A.forward(x0), b0) + penalty.value(x0)
    state = {"prev": F0, "converged": False, "cert": None}

    def _threshold(F: float) -> float:
        return tol if tol_type == "absolute" else tol * max(abs(F), np.finfo(float).tiny)

    def _callback(k, F, V, b):
        if callback is not None and callback(k, F, V, b):
            state["stopped_by"] = "callback"
            return True
        thr = _threshold(F)
        if criterion == "objective":
            change = abs(F - state["prev"])
            state["prev"] = F
            if change <= thr:
                state["converged"] = True
                state["stopped_by"] = "objective"
                return True
        else:
            bound, gb = certificate(V, b)
            state["cert"] = float(bound)
            if bound <= thr and gb <= thr:
                state["converged"] = True
                state["stopped_by"] = "kkt"
                state["certified"] = (np.array(V, copy=True),
                                      None if b is None else np.array(b, copy=True), F)
                return True
        return False

    res = fista(
        datafit,
        penalty,
        coef_init=x0,
        intercept_init=b0,
        linear_map=A,
        max_iter=int(max_iter),
        tol=0.0,  # the stopping rule is ours (the callback); fista stops only at a fixed point
        criterion="objective",
        accelerated=(algorithm == "ag"),
        restart=False,
        line_search=line_search,
        lipschitz=L0,
        callback=_callback,
        warn=False,
    )
    converged = state["converged"] or res.converged
    if "certified" in state:  # return the certified iterate, not the lowest objective seen
        V, b, F = state["certified"]
        W = A.forward(V)
        res.coef, res.W = V, np.array(W, copy=True)
        res.intercept = datafit.intercept(W, b)
        res.info.update(best_objective=F, intercept_variable=b)
    if not converged and res.n_iter >= max_iter and warn:
        warnings.warn(
            f"{algorithm.upper()} did not reach the {criterion} tolerance {tol:g} "
            f"({tol_type}) in max_iter={max_iter} iterations; returning the best iterate. "
            "Increase max_iter or tol.",
            ConvergenceWarning,
            stacklevel=2,
        )
    if "stopped_by" not in state:
        state["stopped_by"] = "stagnation" if res.converged else "max_iter"
    res.converged = bool(converged)
    res.info.update(algorithm=algorithm, stopped_by=state["stopped_by"], objective_init=F0,
                    certificate=state["cert"], line_search=bool(line_search))
    return res


# --------------------------------------------------------------------------- the model
class _ProjectedTraceBall(TraceBall):
    """The trace-norm ball whose ``value`` skips the SVD of the feasibility check.

    Valid inside :func:`projected_gradient` only: the start is projected and every iterate is
    the output of :meth:`project`, so the indicator is 0 at every point where it is evaluated.
    """

    def value(self, W: np.ndarray) -> float:
        return 0.0


def sparse_low_rank_penalty(gamma: float, tau: float, *, checked: bool = True) -> BlockPenalty:
    """``gamma ||P||_1 + indicator(||Q||_* <= tau)`` on the stacked ``V = [P, Q]``.

    ``checked=False`` drops the SVD that evaluates the indicator (for the solver, whose
    iterates are projections).
    """
    ball = TraceBall(tau) if checked else _ProjectedTraceBall(tau)
    return BlockPenalty([L1(gamma), ball])


def sparse_low_rank_certificate(
    datafit: Datafit,
    P: np.ndarray,
    Q: np.ndarray,
    b: np.ndarray | None,
    gamma: float,
    tau: float,
) -> dict:
    """KKT residuals and a certified bound on the sub-optimality of a feasible ``(P, Q)``.

    With ``G = grad_W f(P + Q, b)`` (shape ``(d, m)``; ``grad_P f = grad_Q f = G``), the
    optimality conditions are ``||G||_inf <= gamma``, ``<G, P> + gamma ||P||_1 = 0``,
    ``<G, Q> + tau ||G||_2 = 0`` and ``grad_b f = 0``. By convexity, Hoelder's inequalities
    for (l1, l_inf) and (trace, spectral) norms, and ``gamma ||P*||_1 <= F* <= F(P, Q, b)``
    (every loss here is nonnegative; ``P*`` a minimizer for this ``b``),

        F(P, Q, b) - min_{P', Q'} F(P', Q', b)
            <= [<G, P> + gamma ||P||_1] + [<G, Q> + tau ||G||_2]
               + max(0, ||G||_inf - gamma) * F(P, Q, b) / gamma,

    which is the bound returned (for ``b`` fixed: with an intercept variable the residual
    ``||grad_b f||_inf`` is returned beside it and must vanish too).

    Parameters
    ----------
    datafit : Datafit
    P, Q : ndarray of shape (n_features, n_tasks)
        Feasible point (``||Q||_* <= tau``).
    b : ndarray of shape (n_tasks,) or None
        Intercept variable (None when the datafit has none).
    gamma, tau : float

    Returns
    -------
    dict
        ``bound`` (the sub-optimality bound above), ``sparse_term``, ``low_rank_term``,
        ``dual_infeasibility`` (``max(0, ||G||_inf - gamma)``), ``intercept_gradient``
        (``||grad_b f||_inf``, 0 without intercept variable), ``grad_inf`` (``||G||_inf``).
    """
    f, G, gb = datafit.value_and_grad(P + Q, b)
    # gamma ||P*||_1 <= F* <= F(P, Q, b) because f >= 0: a bound on ||P*||_1
    F_cur = f + gamma * float(np.abs(P).sum())
    g_inf = float(np.max(np.abs(G))) if G.size else 0.0
    sparse_term = float(np.vdot(G, P)) + gamma * float(np.abs(P).sum())
    spec = float(np.linalg.norm(G, 2)) if G.size else 0.0
    low_rank_term = float(np.vdot(G, Q)) + tau * spec
    infeas = max(0.0, g_inf - gamma)
    if infeas > 0:
        third = np.inf if gamma <= 0 else infeas * F_cur / gamma
    else:
        third = 0.0
    bound = sparse_term + low_rank_term + third
    gb_norm = float(np.max(np.abs(gb))) if gb is not None and gb.size else 0.0
    return {"bound": float(max(bound, 0.0)), "sparse_term": sparse_term,
            "low_rank_term": low_rank_term, "dual_infeasibility": infeas,
            "intercept_gradient": gb_norm, "grad_inf": g_inf}


def solve_sparse_low_rank(
    datafit: Datafit,
    gamma: float,
    tau: float,
    *,
    algorithm: str = "ag",
    line_search: bool = True,
    coef_init: np.ndarray | None = None,
    intercept_init: np.ndarray | None = None,
    max_iter: int = 10000,
    tol: float = 1e-6,
    tol_type: str = "relative",
    criterion: str = "objective",
    lipschitz: float | None = None,
    callback: Callable | None = None,
    warn: bool = True,
) -> SolverResult:
    """Fit ``W = P + Q``: ``min f(P + Q, b) + gamma ||P||_1`` s.t. ``||Q||_* <= tau``.

    Runs :func:`projected_gradient` on the stacked variable ``V = [P, Q]`` (shape
    ``(2, n_features, n_tasks)``); parameters as there. ``criterion="kkt"`` stops on the
    certificate of :func:`sparse_low_rank_certificate`.

    Returns
    -------
    SolverResult
        ``coef`` is ``V`` (``coef[0] = P``, ``coef[1] = Q``), ``W = P + Q``; ``info`` also
        holds ``rank`` (rank of ``Q``) and ``kkt`` (the certificate at the returned point).
    """
    gamma = float(gamma)
    tau = float(tau)
    if not (np.isfinite(gamma) and gamma >= 0):
        raise ValueError(f"gamma must be a finite number >= 0, got {gamma!r}.")
    if not (np.isfinite(tau) and tau >= 0):
        raise ValueError(f"tau must be a finite number >= 0, got {tau!r}.")
    penalty = sparse_low_rank_penalty(gamma, tau, checked=False)

    def cert(V, b):
        c = sparse_low_rank_certificate(datafit, V[0], V[1], b, gamma, tau)
        return c["bound"], c["intercept_gradient"]

    res = projected_gradient(
        datafit, penalty, algorithm=algorithm, linear_map=SumMap(2), coef_init=coef_init,
        intercept_init=intercept_init, line_search=line_search, lipschitz=lipschitz,
        max_iter=max_iter, tol=tol, tol_type=tol_type, criterion=criterion, certificate=cert,
        callback=callback, warn=warn,
    )
    P, Q = res.coef[0], res.coef[1]
    b = res.info.get("intercept_variable")
    res.info["kkt"] = sparse_low_rank_certificate(datafit, P, Q, b, gamma, tau)
    res.info["rank"] = low_rank_rank(Q)
    return res


def low_rank_rank(Q: np.ndarray) -> int:
    """Numerical rank of ``Q``: singular values above ``max(d, m) * eps * sigma_max``.

    The trace-ball projection sets the discarded singular values to exactly zero, so the
    returned iterates have an exact rank up to rounding in ``U diag(s) V^T``.
    """
    if Q.size == 0:
        return 0
    s = np.linalg.svd(Q, compute_uv=False)
    if s[0] == 0:
        return 0
    return int(np.sum(s > max(Q.shape) * np.finfo(float).eps * s[0]))
