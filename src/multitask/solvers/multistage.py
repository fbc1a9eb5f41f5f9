"""Multi-stage solver of the capped trace norm model (RAMUSA).

Minimizes, for a smooth datafit ``f`` (:mod:`multitask.losses`) with unpenalized intercepts
``b``::

    F(W, b) = f(W, b) + lam * sum_i min(sigma_i(W), tau),      W of shape (d, m),

by the majorization-minimization scheme of Han & Zhang ("Multi-stage multi-task learning with
reduced rank", AAAI 2016, Algorithm 1). With ``r_0 = 0`` (or ``rank_init``), stage ``l``
solves, warm-started at the previous stage's solution,

    (S_l)   min_{W, b}  f(W, b) + lam * ||W||_{r-},   ||W||_{r-} = sum_{i > r} sigma_i(W),
            r = r_{l-1},

then sets ``r_l = #{i : sigma_i(W^(l)) >= tau}``. Stage 1 is the trace-norm problem. Since
``sum_i min(sigma_i, tau) <= r tau + ||W||_{r-}`` with equality at ``W^(l-1)`` for
``r = r_{l-1}``, any stage solver that does not increase the stage objective from its start
does not increase ``F``: the objective is non-increasing across stages.

Stage solvers (``stage_solver``):

* ``"psvt"`` (default): accelerated proximal gradient (:func:`multitask.solvers.fista`, with
  adaptive restart and backtracking) on the non-convex stage problem, whose prox is the
  partial singular value thresholding :func:`multitask.penalties.capped_trace.psvt`. FISTA
  returns its best iterate, which includes the warm start, so the stage objective never
  increases. Measured faster than ``"dc"`` at equal objective
  (``benchmarks/bench_capped_trace.py``).
* ``"dc"``: the paper's Algorithm 2, a difference-of-convex (alternating) method: with
  ``P_t = U_r V_r^T`` from the top-``r`` singular vectors of ``W_t``, solve the convex problem
  ``min f(W, b) + lam ||W||_* - lam <P_t, W>`` by FISTA with singular value thresholding
  (Algorithm 3, Beck-Teboulle form) and repeat until ``W`` stops changing.

Stages stop when ``r`` repeats (the next stage would restart at its own solution), when ``F``
stops decreasing (relative decrease below ``stage_tol``), or after ``n_stages`` stages.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from multitask.losses import Datafit
from multitask.penalties.capped_trace import (
    LinearizedTruncatedTraceNorm,
    TruncatedTraceNorm,
    capped_rank,
    singular_values,
    top_singular_projector,
)
from multitask.solvers.fista import fista
from multitask.solvers.result import SolverResult

__all__ = [
    "STAGE_SOLVERS",
    "MultistagePath",
    "capped_trace_objective",
    "multistage",
    "multistage_path",
    "solve_stage",
]

STAGE_SOLVERS = ("psvt", "dc")


def capped_trace_objective(datafit: Datafit, W: np.ndarray, b: np.ndarray | None, lam: float,
                           tau: float) -> float:
    """``F(W, b) = f(W, b) + lam * sum_i min(sigma_i(W), tau)``.

    Parameters
    ----------
    datafit : Datafit
    W : ndarray of shape (d, m)
    b : ndarray of shape (m,) or None
        Intercept variables (None when the datafit has none).
    lam, tau : float
    """
    s = singular_values(W)
    return datafit.value(W, b) + lam * float(np.minimum(s, tau).sum())


def _check_common(lam, tau, n_stages, stage_solver, max_iter, tol, dc_max_iter, dc_tol):
    if not np.isfinite(lam) or lam < 0:
        raise ValueError(f"lam must be finite and >= 0, got {lam!r}.")
    if np.isnan(tau) or tau < 0:
        raise ValueError(f"tau must be >= 0 (inf allowed), got {tau!r}.")
    if int(n_stages) != n_stages or n_stages < 1:
        raise ValueError(f"n_stages must be an integer >= 1, got {n_stages!r}.")
    if stage_solver not in STAGE_SOLVERS:
        raise ValueError(f"stage_solver must be one of {STAGE_SOLVERS}, got {stage_solver!r}.")
    if max_iter < 1 or dc_max_iter < 1:
        raise ValueError("max_iter and dc_max_iter must be >= 1.")
    if not tol > 0 or not dc_tol > 0:
        raise ValueError("tol and dc_tol must be > 0.")


def solve_stage(
    datafit: Datafit,
    lam: float,
    rank: int,
    *,
    coef_init: np.ndarray | None = None,
    intercept_init: np.ndarray | None = None,
    stage_solver: str = "psvt",
    max_iter: int = 2000,
    tol: float = 1e-7,
    dc_max_iter: int = 50,
    dc_tol: float = 1e-6,
) -> SolverResult:
    """Solve one stage ``min_{W, b} f(W, b) + lam * ||W||_{rank-}`` from a warm start.

    Parameters
    ----------
    datafit : Datafit
        Smooth loss.
    lam : float
        ``>= 0``.
    rank : int
        ``r``: the leading singular values left unpenalized (``0``: the trace norm, convex).
    coef_init : ndarray of shape (d, m), optional
        Warm start (zeros by default); ``intercept_init`` (m,) likewise for the intercept
        variables.
    stage_solver : {"psvt", "dc"}
        See the module docstring.
    max_iter, tol : int, float
        Budget and relative-objective tolerance of each FISTA run.
    dc_max_iter, dc_tol : int, float
        ``"dc"`` only: at most ``dc_max_iter`` convex subproblems; stop when
        ``||W_{t+1} - W_t||_F <= dc_tol * max(1, ||W_t||_F)`` or the stage objective decreases
        by less than ``tol`` (relative).

    Returns
    -------
    SolverResult
        ``objective`` holds the stage objective ``f + lam ||W||_{r-}`` after each FISTA
        iteration (``"psvt"``) or after each convex subproblem (``"dc"``); ``info`` has
        ``"intercept_variable"``, ``"best_objective"`` and, for ``"dc"``, ``"dc_iter"``.
    """
    d, m = datafit.data.n_features, datafit.data.n_tasks
    W = np.zeros((d, m)) if coef_init is None else np.array(coef_init, dtype=np.float64)
    b = intercept_init
    if datafit.has_intercept_variable and b is None:
        b = datafit.init_intercept()
    if not datafit.has_intercept_variable:
        b = None
    R = min(d, m)
    if stage_solver == "psvt" or rank == 0 or rank >= R:
        res = fista(datafit, TruncatedTraceNorm(lam, rank), coef_init=W, intercept_init=b,
                    max_iter=max_iter, tol=tol, warn=False)
        res.info["dc_iter"] = 0
        return res

    t0 = time.perf_counter()
    stage_pen = TruncatedTraceNorm(lam, rank)
    Q = datafit.value(W, b) + stage_pen.value(W)
    history = [Q]
    times = [0.0]
    n_iter = 0
    converged = False
    inner_converged = True
    dc_iter = 0
    for t in range(1, dc_max_iter + 1):
        dc_iter = t
        P = top_singular_projector(W, rank)
        res = fista(datafit, LinearizedTruncatedTraceNorm(lam, P), coef_init=W,
                    intercept_init=b, max_iter=max_iter, tol=tol, warn=False)
        n_iter += res.n_iter
        inner_converged = res.converged
        W_new, b_new = res.W, res.info["intercept_variable"]
        Q_new = datafit.value(W_new, b_new) + stage_pen.value(W_new)
        if Q_new > Q:  # safeguard: keep the monotone sequence (rounding only)
            converged = True
            break
        change = np.linalg.norm(W_new - W) / max(1.0, np.linalg.norm(W))
        decrease = (Q - Q_new) / max(abs(Q_new), np.finfo(float).tiny)
        W, b, Q = W_new, b_new, Q_new
        history.append(Q)
        times.append(time.perf_counter() - t0)
        if change <= dc_tol or decrease <= tol:
            converged = True
            break
    return SolverResult(
        coef=W,
        W=np.array(W, copy=True),
        intercept=datafit.intercept(W, b),
        n_iter=n_iter,
        objective=np.asarray(history),
        converged=converged and inner_converged,
        time=time.perf_counter() - t0,
        times=np.asarray(times),
        info={"intercept_variable": b, "best_objective": Q, "dc_iter": dc_iter},
    )


def multistage(
    datafit: Datafit,
    lam: float,
    tau: float,
    *,
    n_stages: int = 20,
    stage_solver: str = "psvt",
    coef_init: np.ndarray | None = None,
    intercept_init: np.ndarray | None = None,
    rank_init: int = 0,
    max_iter: int = 2000,
    tol: float = 1e-7,
    dc_max_iter: int = 50,
    dc_tol: float = 1e-6,
    stage_tol: float = 1e-10,
    keep_stages: bool = False,
    warn: bool = True,
) -> SolverResult:
    """Minimize ``f(W, b) + lam * sum_i min(sigma_i(W), tau)`` by the multi-stage method.

    Parameters
    ----------
    datafit : Datafit
        Smooth loss bound to the training data.
    lam : float
        Regularization strength ``>= 0``.
    tau : float
        Cap ``>= 0``; ``inf`` (or any value above ``sigma_1`` of the stage-1 solution) gives
        the trace-norm solution after one stage; ``0`` leaves nothing penalized after stage 1.
    n_stages : int, default=20
        Maximal number of stages.
    stage_solver : {"psvt", "dc"}, default="psvt"
        Solver of each stage (see the module docstring).
    coef_init, intercept_init : ndarray, optional
        Starting point of stage 1 (``(d, m)`` and ``(m,)``).
    rank_init : int, default=0
        ``r`` of the first stage run (``0``: stage 1 is the trace-norm problem). Giving the
        trace-norm solution as ``coef_init`` and its capped rank here resumes at stage 2.
    max_iter, tol, dc_max_iter, dc_tol
        Passed to :func:`solve_stage`.
    stage_tol : float, default=1e-10
        Stop when ``F`` decreases by less than this (relative) from one stage to the next.
    keep_stages : bool, default=False
        Also return every stage's solution ``W^(l)`` as ``info["stage_coefs"]``.
    warn : bool, default=True
        Warn (``ConvergenceWarning``) when the stages or the last stage's solver did not
        converge within their budgets.

    Returns
    -------
    SolverResult
        ``W`` and ``intercept`` of the last stage; ``objective`` holds ``F`` after each stage
        and ``times`` the elapsed seconds after each stage; ``n_iter`` counts all FISTA
        iterations. ``info``: ``"ranks"`` (the ``r`` each stage used), ``"final_rank"``
        (``#{sigma_i >= tau}`` at the solution), ``"stage_iters"``, ``"stage_times"``,
        ``"stage_converged"``, ``"n_stages"``, ``"singular_values"``, ``"intercept_variable"``,
        ``"best_objective"``.
    """
    lam = float(lam)
    tau = float(tau)
    _check_common(lam, tau, n_stages, stage_solver, max_iter, tol, dc_max_iter, dc_tol)
    d, m = datafit.data.n_features, datafit.data.n_tasks
    W = np.zeros((d, m)) if coef_init is None else np.array(coef_init, dtype=np.float64)
    if W.shape != (d, m):
        raise ValueError(f"coef_init has shape {W.shape}, expected {(d, m)}.")
    b = None
    if datafit.has_intercept_variable:
        b = datafit.init_intercept() if intercept_init is None else np.array(intercept_init,
                                                                              dtype=np.float64)
    r = int(rank_init)
    t0 = time.perf_counter()
    ranks, objectives, iters, stage_times, stage_conv, times = [], [], [], [], [], []
    stage_coefs = []
    converged = False
    F_prev = np.inf
    s = singular_values(W)
    for _ in range(int(n_stages)):
        ts = time.perf_counter()
        res = solve_stage(datafit, lam, r, coef_init=W, intercept_init=b,
                          stage_solver=stage_solver, max_iter=max_iter, tol=tol,
                          dc_max_iter=dc_max_iter, dc_tol=dc_tol)
        W, b = res.W, res.info["intercept_variable"]
        if keep_stages:
            stage_coefs.append(W)
        s = singular_values(W)
        F = datafit.value(W, b) + lam * float(np.minimum(s, tau).sum())
        ranks.append(r)
        objectives.append(F)
        iters.append(res.n_iter)
        stage_conv.append(bool(res.converged))
        stage_times.append(time.perf_counter() - ts)
        times.append(time.perf_counter() - t0)
        r_new = capped_rank(s, tau)
        small = np.isfinite(F_prev) and (F_prev - F) <= stage_tol * max(abs(F), 1e-300)
        F_prev = F
        if r_new == r or small:
            converged = True
            break
        r = r_new
    final_rank = capped_rank(s, tau)
    if warn and not (converged and stage_conv[-1]):
        what = ("the stage solver reached max_iter in the last stage" if converged else
                f"the capped rank still changed after n_stages={n_stages} stages")
        warnings.warn(
            f"Multi-stage capped trace norm did not converge: {what}; returning the last "
            "stage's solution. Increase n_stages or max_iter, or loosen tol.",
            ConvergenceWarning,
            stacklevel=2,
        )
    info = {
        "ranks": ranks,
        "final_rank": final_rank,
        "stage_iters": iters,
        "stage_times": stage_times,
        "stage_converged": stage_conv,
        "n_stages": len(ranks),
        "singular_values": s,
        "intercept_variable": b,
        "best_objective": objectives[-1],
    }
    if keep_stages:
        info["stage_coefs"] = stage_coefs
    return SolverResult(
        coef=W,
        W=np.array(W, copy=True),
        intercept=datafit.intercept(W, b),
        n_iter=int(sum(iters)),
        objective=np.asarray(objectives),
        converged=converged and stage_conv[-1],
        time=time.perf_counter() - t0,
        times=np.asarray(times),
        info=info,
    )


@dataclass
class MultistagePath:
    """Solutions of the capped trace norm model on a grid of ``(lam, tau)``.

    Attributes
    ----------
    lams : ndarray of shape (n_lams,)
    taus : ndarray of shape (n_taus,)
    coefs : ndarray of shape (n_lams, n_taus, d, m)
        ``W`` for each pair.
    intercepts : ndarray of shape (n_lams, n_taus, m)
        Fitted intercepts (``datafit.intercept``).
    trace_coefs : ndarray of shape (n_lams, d, m)
        The stage-1 (trace-norm) solutions; ``trace_intercepts`` ``(n_lams, m)`` likewise.
    final_ranks : ndarray of shape (n_lams, n_taus)
        ``#{sigma_i >= tau}`` at each solution.
    n_stages : ndarray of shape (n_lams, n_taus)
        Stages run for each pair (1 when ``tau`` caps nothing).
    n_stage_solves : int
        Distinct stage problems solved (pairs with the same rank history share them).
    """

    lams: np.ndarray
    taus: np.ndarray
    coefs: np.ndarray
    intercepts: np.ndarray
    trace_coefs: np.ndarray
    trace_intercepts: np.ndarray
    final_ranks: np.ndarray
    n_stages: np.ndarray
    n_stage_solves: int = 0
    info: dict = field(default_factory=dict)


def multistage_path(
    datafit: Datafit,
    lams,
    taus,
    *,
    n_stages: int = 20,
    stage_solver: str = "psvt",
    max_iter: int = 2000,
    tol: float = 1e-7,
    dc_max_iter: int = 50,
    dc_tol: float = 1e-6,
    stage_tol: float = 1e-10,
) -> MultistagePath:
    """Fit the capped trace norm model for every ``(lam, tau)`` of a grid, sharing work.

    Stage 1 (the trace norm) depends on ``lam`` only: it is solved once per ``lam``,
    warm-started along ``lams`` in the order given (pass them decreasing). For each ``tau``
    the later stages start from it; two ``tau`` with the same history of capped ranks
    ``(r_1, r_2, ...)`` share their stage solutions, so a fine ``tau`` grid costs only the
    distinct rank histories. Each pair's result is what :func:`multistage` returns when
    started at the previous ``lam``'s trace-norm solution (same stage problems, same warm
    starts; stage 1 therefore agrees with a cold start up to the solver's tolerance).

    Parameters
    ----------
    datafit : Datafit
    lams : array-like of shape (n_lams,)
        Values ``>= 0``.
    taus : array-like of shape (n_taus,)
        Values ``>= 0`` (``inf`` allowed).
    n_stages, stage_solver, max_iter, tol, dc_max_iter, dc_tol, stage_tol
        As in :func:`multistage`.

    Returns
    -------
    MultistagePath
    """
    lams = np.atleast_1d(np.asarray(lams, dtype=np.float64))
    taus = np.atleast_1d(np.asarray(taus, dtype=np.float64))
    for lam in lams:
        _check_common(lam, 0.0, n_stages, stage_solver, max_iter, tol, dc_max_iter, dc_tol)
    for tau in taus:
        _check_common(0.0, tau, n_stages, stage_solver, max_iter, tol, dc_max_iter, dc_tol)
    d, m = datafit.data.n_features, datafit.data.n_tasks
    nl, nt = len(lams), len(taus)
    coefs = np.empty((nl, nt, d, m))
    intercepts = np.empty((nl, nt, m))
    trace_coefs = np.empty((nl, d, m))
    trace_intercepts = np.empty((nl, m))
    final_ranks = np.empty((nl, nt), dtype=np.int64)
    stages = np.empty((nl, nt), dtype=np.int64)
    kw = dict(stage_solver=stage_solver, max_iter=max_iter, tol=tol, dc_max_iter=dc_max_iter,
              dc_tol=dc_tol)
    W = np.zeros((d, m))
    b = datafit.init_intercept() if datafit.has_intercept_variable else None
    n_solves = 0
    for i, lam in enumerate(lams):
        res1 = solve_stage(datafit, lam, 0, coef_init=W, intercept_init=b, **kw)
        n_solves += 1
        W, b = res1.W, res1.info["intercept_variable"]
        trace_coefs[i] = W
        trace_intercepts[i] = datafit.intercept(W, b)
        s1 = singular_values(W)
        f1 = datafit.value(W, b)
        # memo: rank history (r_1, ..., r_k) -> (W, b, singular values, datafit value)
        memo: dict[tuple, tuple] = {(): (W, b, s1, f1)}
        for j, tau in enumerate(taus):
            hist: tuple = ()
            Wc, bc, s, f = memo[()]
            F_prev = f + lam * float(np.minimum(s, tau).sum())
            r = 0
            n_run = 1
            while n_run < n_stages:
                r_new = capped_rank(s, tau)
                if r_new == r:
                    break
                hist = (*hist, r_new)
                r = r_new
                if hist not in memo:
                    res = solve_stage(datafit, lam, r, coef_init=Wc, intercept_init=bc, **kw)
                    n_solves += 1
                    Wn, bn = res.W, res.info["intercept_variable"]
                    memo[hist] = (Wn, bn, singular_values(Wn), datafit.value(Wn, bn))
                Wc, bc, s, f = memo[hist]
                n_run += 1
                F = f + lam * float(np.minimum(s, tau).sum())
                if (F_prev - F) <= stage_tol * max(abs(F), 1e-300):
                    break
                F_prev = F
            coefs[i, j] = Wc
            intercepts[i, j] = datafit.intercept(Wc, bc)
            final_ranks[i, j] = capped_rank(s, tau)
            stages[i, j] = n_run
    return MultistagePath(lams, taus, coefs, intercepts, trace_coefs, trace_intercepts,
                          final_ranks, stages, n_solves)
