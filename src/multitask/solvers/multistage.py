"""Multi-stage (majorization-minimization) solver of non-convex capped penalties.

Minimizes ``F(W, b) = f(W, b) + h(W)`` for a smooth datafit ``f`` and a non-convex penalty
``h`` that offers stages (``"stages"``): at any ``W_ref``, ``h.stage_penalty(W_ref)`` is a
penalty ``h_ref`` with an exact prox that majorizes ``h`` up to a constant and is tight at
``W_ref``. The capped trace norm ``alpha sum_i min(sigma_i(W), tau)`` has the stage penalty
``alpha ||W||_{r-}`` with ``r = #{i : sigma_i(W_ref) >= tau}`` (Han & Zhang, "Multi-stage
multi-task learning with reduced rank", AAAI 2016, Algorithm 1); a capped l1 penalty has a
reweighted l1 stage penalty. Stage ``l`` solves, warm-started at the previous stage's
solution,

    (S_l)   min_{W, b}  f(W, b) + h.stage_penalty(W^(l-1))(W),

and any stage solver that does not increase the stage objective from its start does not
increase ``F``: the objective is non-increasing across stages. Stage 1 uses the stage penalty
at ``W = 0`` (for the capped trace norm: the trace norm), whatever the starting point
(``first_stage="zero"``), or at the starting point (``"start"``).

Stage solvers (``stage_solver``):

* ``"prox"`` (default): the inner solver (accelerated proximal gradient by default) directly
  on the stage problem, with the stage penalty's exact prox (for the capped trace norm the
  partial singular value thresholding, non-convex); accelerated gradient returns its best
  iterate, which includes the warm start, so the stage objective never increases. An inner
  solver that returns its last iterate (ADMM with exact per-task solves, which the capped
  trace models take for least squares: :class:`~multitask.solvers.admm.QuadraticADMM`, whose
  iterations do not follow the conditioning of the loss) is checked: where its result has a
  higher stage objective than the warm start, the stage is solved again from the warm start
  by accelerated proximal gradient (:meth:`Multistage._monotone`). The non-convex stages of
  the capped trace norm (the truncated trace norm) with such an ADMM (its penalty parameter
  adaptive) are solved by :class:`~multitask.solvers.truncated_admm.TruncatedStageADMM`
  instead: the same iteration at a fixed penalty parameter, which keeps the best point of
  every window of iterations (the stage objective never increases) and stops a stage whose
  objective decreases by at most ``stall_tol`` (relative) per 100 iterations over a window,
  not converged. On
  School the spectral rule's changes of the penalty parameter made these stages diverge (and
  fall back to accelerated gradient); their objective decreases slowly for thousands of
  iterations, mostly through the entries of ``W`` that the loss does not see (the directions
  of each school's features without data, which only the penalty sets), so the stages
  reached the iteration budget before the optimality measure reached ``tol``. Such a stage
  whose change lies mostly in those entries, and whose objective decreases slowly, ends there
  (its drift rule: the stage may have no minimizer along them). With
  ``leave_stages`` such a stage also ends at the first window whose point has another stage
  key: the next stage's penalty, taken there, majorizes the objective more tightly than the
  current one does (the stages before the last need only decrease the objective).
* ``"dc"``: the difference-of-convex method (the paper's Algorithm 2): repeatedly solve the
  convex problem with the stage penalty's ``convex_majorant`` at the current iterate, until
  ``W`` stops changing.

The later stages of the capped trace norm are not convex (the truncated trace norm). Their
convex majorant of the ``"dc"`` solver (the trace norm minus a linear term) holds the leading
singular vectors of the current iterate, so a sequence of such convex problems can stop at a
stationary point of the stage problem with a higher objective than the partial thresholding
reaches, which may exchange the singular directions it leaves unpenalized; the ``"prox"``
stages are therefore solved with the stage penalty's own prox, by whichever inner solver.

Stages stop when the stage key repeats (the next stage would be the same problem), when ``F``
stops decreasing (relative decrease below ``stage_tol``), or after ``n_stages`` stages. The
reported optimality measure is that of the last stage problem at the returned point: its
certified relative duality gap where the stage problem is convex and has a dual (the
weighted-l1 stages of the capped l1 penalty; ``info["certified"]``), else the prox-gradient
residual of the stage (the truncated trace norm's stages are not convex).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from multitask.losses import Datafit
from multitask.penalties.base import Penalty
from multitask.solvers.base import Solver, check_int, check_tol
from multitask.solvers.fista import ProximalGradient
from multitask.solvers.iteration import EXTRA_FRAMES, IterationRecord
from multitask.solvers.problem import Problem
from multitask.solvers.result import SolverResult
from multitask.solvers.seen_rows import on_seen_rows, seen_rows
from multitask.solvers.truncated_admm import DRIFT_FACTOR, TruncatedStageADMM

__all__ = ["STAGE_SOLVERS", "Multistage"]

STAGE_SOLVERS = ("prox", "dc")
_FIRST_STAGES = ("zero", "start")


def _fixed_rho_stage(inner: Solver, stage_pen: Penalty) -> bool:
    """Whether a stage is solved by :meth:`Multistage._admm_stage`: a non-convex stage
    penalty and ADMM with exact per-task solves (an adaptive one, whose penalty parameter
    this replaces by a fixed one)."""
    return (not stage_pen.is_convex and "spectral_threshold" in stage_pen.capabilities
            and getattr(inner, "name", None) == "admm" and getattr(inner, "adaptive", False)
            and getattr(inner, "rho", 0) is None)


def _known_start(starts: dict | None, key, stage_pen: Penalty, W: np.ndarray, b):
    """``(W, b)`` to start a stage from: the point ``starts`` holds for ``key`` where the
    stage is convex and the point fits (same shapes), else ``(W, b)``."""
    if not starts or not stage_pen.is_convex:
        return W, b
    try:
        known = starts.get(key)
    except TypeError:  # an unhashable key
        return W, b
    if known is None or np.shape(known[0]) != W.shape:
        return W, b
    kb = known[1]
    if (kb is None) != (b is None) or (b is not None and np.shape(kb) != np.shape(b)):
        return known[0], b
    return known[0], kb


def _stage_value(datafit: Datafit, stage_pen: Penalty, res: SolverResult | None,
                 W: np.ndarray | None = None, b=None, tolerance: bool = False) -> float:
    """The stage objective ``f(W, b) + h_ref(W)`` at a result's point (or at ``(W, b)``);
    with ``tolerance``, plus a relative ``1e-12`` (rounding)."""
    if res is not None:
        W, b = res.coef, res.intercept_variable
    assert W is not None
    value = float(datafit.value(W, b) + stage_pen.value(W))
    return value + 1e-12 * abs(value) if tolerance else value


def _remember(points: dict, key, W: np.ndarray, b) -> None:
    """Keep a convex stage's solution by its key (unhashable keys are not kept)."""
    try:
        points[key] = (W.copy(), None if b is None else np.array(b, copy=True))
    except TypeError:
        pass


class Multistage(Solver):
    """Majorization-minimization over stage penalties (module docstring).

    Parameters
    ----------
    max_iter : int, default=2000
        Iteration budget of each inner solve.
    tol : float, default=1e-5
        Tolerance of each inner solve (optimality measure of the stage problem).
    n_stages : int, default=20
        Maximal number of stages.
    stage_solver : {"prox", "dc"}, default="prox"
    inner : Solver, optional
        The inner solver (default :class:`~multitask.solvers.fista.ProximalGradient` with
        ``max_iter`` and ``tol``).
    dc_max_iter : int, default=50
        ``"dc"``: at most this many convex subproblems per stage.
    dc_tol : float, default=1e-6
        ``"dc"``: stop a stage when ``||W_{t+1} - W_t||_F <= dc_tol * max(1, ||W_t||_F)``.
    stage_tol : float, default=1e-10
        Stop when ``F`` decreases by less than this (relative) from one stage to the next.
    first_stage : {"zero", "start"}, default="zero"
        Where stage 1's penalty is taken (module docstring).
    keep_stages : bool, default=False
        Also return every stage's solution as ``info["stage_coefs"]``.
    stall_tol : float, optional
        Non-convex stages solved by ADMM (module docstring): stop a stage, not converged, when
        its objective decreases by at most ``stall_tol`` (relative) per 100 iterations over a
        window of iterations (:class:`~multitask.solvers.truncated_admm.TruncatedStageADMM`).
        Default: ``tol``.
    leave_stages : bool, default=True
        Non-convex stages solved by ADMM: end a stage at the first window whose point has
        left the stage's key (another number of singular values at or above the cap), where
        the next stage's penalty is taken (an inexact majorization step: the objective still
        decreases); the last stage, whose key repeats, runs to its tolerance or stall.
    warn : bool, default=True
    """

    name = "multistage"
    max_preference = 50.0
    handles_smooth_part = True
    datafit_requires = frozenset({"gradient"})
    penalty_requires = frozenset({"stages"})
    needs_prox = False

    @classmethod
    def preference(cls, problem: Problem, **settings) -> float:
        """50: the solver of the non-convex stage penalties (the only one that applies)."""
        return 50.0

    def __init__(self, *, max_iter: int = 2000, tol: float = 1e-5, n_stages: int = 20,
                 stage_solver: str = "prox", inner: Solver | None = None,
                 dc_max_iter: int = 50, dc_tol: float = 1e-6, stage_tol: float = 1e-10,
                 first_stage: str = "zero", keep_stages: bool = False,
                 stall_tol: float | None = None, leave_stages: bool = True,
                 warn: bool = True):
        super().__init__(max_iter=max_iter, tol=tol, warn=warn)
        if stage_solver not in STAGE_SOLVERS:
            raise ValueError(f"stage_solver must be one of {STAGE_SOLVERS}, got "
                             f"{stage_solver!r}.")
        if first_stage not in _FIRST_STAGES:
            raise ValueError(f"first_stage must be one of {_FIRST_STAGES}, got "
                             f"{first_stage!r}.")
        if inner is not None and not isinstance(inner, Solver):
            raise ValueError(f"inner must be a Solver, got {inner!r}.")
        self.n_stages = check_int(n_stages, "n_stages")
        self.stage_solver = stage_solver
        self.inner = inner
        self.dc_max_iter = check_int(dc_max_iter, "dc_max_iter")
        self.dc_tol = check_tol(dc_tol, "dc_tol")
        self.stage_tol = check_tol(stage_tol, "stage_tol", allow_zero=True)
        self.first_stage = first_stage
        self.keep_stages = bool(keep_stages)
        self.stall_tol = None if stall_tol is None else check_tol(stall_tol, "stall_tol",
                                                                   allow_zero=True)
        self.leave_stages = bool(leave_stages)

    def _inner(self) -> Solver:
        if self.inner is not None:
            return self.inner.with_params(warn=False)
        return ProximalGradient(max_iter=self.max_iter, tol=self.tol, warn=False)

    def _solve_stage(self, datafit, stage_pen, W, b, moved=None):
        """One stage from ``(W, b)``: returns ``(result, inner iterations, dc iterations)``.
        ``moved(V)``: whether ``V`` has left the stage's key (a non-convex ADMM stage then
        stops at the end of that window)."""
        inner = self._inner()
        if self.stage_solver == "prox" or "majorant" not in stage_pen.capabilities:
            if _fixed_rho_stage(inner, stage_pen):
                return self._admm_stage(datafit, stage_pen, W, b, inner, moved)
            res = inner.solve(datafit, stage_pen, coef_init=W, intercept_init=b)
            res, extra = self._monotone(datafit, stage_pen, W, b, res)
            return res, res.n_iter + extra, 0
        Q = datafit.value(W, b) + stage_pen.value(W)
        n_iter = 0
        accepted = None
        for t in range(1, self.dc_max_iter + 1):
            res = inner.solve(datafit, stage_pen.convex_majorant(W), coef_init=W,
                              intercept_init=b)
            n_iter += res.n_iter
            W_new, b_new = res.W, res.intercept_variable
            Q_new = datafit.value(W_new, b_new) + stage_pen.value(W_new)
            if Q_new > Q and accepted is not None:
                # safeguard: keep the monotone sequence (a rise is rounding): return the last
                # accepted subproblem's solution
                return accepted, n_iter, t
            change = np.linalg.norm(W_new - W) / max(1.0, np.linalg.norm(W))
            decrease = (Q - Q_new) / max(abs(Q_new), np.finfo(float).tiny)
            W, b, Q = W_new, b_new, Q_new
            accepted = res
            if change <= self.dc_tol or decrease <= self.tol:
                return res, n_iter, t
        assert accepted is not None
        return accepted, n_iter, self.dc_max_iter

    def _stall(self) -> float:
        """The relative decrease per 100 iterations below which a non-convex ADMM stage
        stops."""
        return self.tol if self.stall_tol is None else self.stall_tol

    def _admm_stage(self, datafit, stage_pen, W, b, inner,
                    moved=None) -> tuple[SolverResult, int, int]:
        """A non-convex stage by :class:`~multitask.solvers.truncated_admm.TruncatedStageADMM`
        (ADMM at a fixed penalty parameter, the objective compared every window; module
        docstring) with the inner ADMM's budget and tolerance: ``(result, iterations, 0)``.
        With ``moved``, the stage also ends at the first accepted window whose point has left
        the stage's key (an inexact majorization step: the next stage's penalty is then taken
        there)."""
        stage = TruncatedStageADMM(max_iter=inner.max_iter, tol=inner.tol,
                                   stall_tol=self._stall(), warn=False)
        callback = None if moved is None else (lambda k, F, V, b_: bool(moved(V)))
        res = stage.solve(datafit, stage_pen, coef_init=W, intercept_init=b, callback=callback)
        return res, res.n_iter, 0

    def _monotone(self, datafit, stage_pen, W, b, res) -> tuple[SolverResult, int]:
        """``(result, iterations spent before it)``: ``res`` where its stage objective
        ``f(W', b') + h_ref(W')`` is at most the warm start's ``f(W, b) + h_ref(W)`` (up to a
        relative ``1e-12``: rounding), else the stage solved again from the warm start by
        accelerated proximal gradient, which returns its best iterate (the warm start
        included): the stage objective never increases, whichever inner solver ran."""
        if isinstance(self._inner(), ProximalGradient):
            return res, 0
        Q0 = datafit.value(W, b) + stage_pen.value(W)
        b_new = res.intercept_variable if res.intercept_variable is not None else b
        Q1 = datafit.value(res.coef, b_new) + stage_pen.value(res.coef)
        if Q1 <= Q0 + 1e-12 * abs(Q0):
            return res, 0
        again = ProximalGradient(max_iter=self.max_iter, tol=self.tol, warn=False)
        return again.solve(datafit, stage_pen, coef_init=W, intercept_init=b), res.n_iter

    def solve(self, datafit: Datafit, penalty: Penalty, *, coef_init=None, intercept_init=None,
              callback: Callable | None = None,
              stage_starts: dict | None = None) -> SolverResult:
        """Run the stages; ``callback(stage, objective, W, b)`` after each stage.

        ``stage_starts``: starting points ``{stage key: (W, b)}`` of the convex stages (a
        previous fit's ``info["stage_points"]``, on the same data: a path's warm start). A
        convex stage whose key is there starts from that point instead of the previous
        stage's solution (the start of stage 1 is ``coef_init`` otherwise); its solution does
        not depend on the start, so neither does the fit. Where a stage so started ends with a
        higher stage objective than this run's own start of it (a solve stopped early), it is
        solved again from that start: ``F`` stays non-increasing across the stages. The
        non-convex stages always start from the previous stage's solution.
        ``info["stage_points"]`` holds the solutions of this run's convex stages by key.

        Where the loss sees no entry of some feature rows and the penalty offers
        ``"row_monotone"`` (the capped trace norm), the run is that on the other rows,
        padded with zero rows (:mod:`multitask.solvers.seen_rows`: on a smaller matrix, and
        without a ridge term the same iterates).
        """
        rows = seen_rows(datafit, penalty)
        if rows is not None:  # this method again, on the restricted loss (it sees every row)
            return on_seen_rows(self.solve, rows, datafit, penalty, coef_init=coef_init,
                                intercept_init=intercept_init, callback=callback,
                                stage_starts=stage_starts)
        run = IterationRecord(self, datafit, penalty, callback)
        W, b = run.start(coef_init, intercept_init, project=False)
        ref = np.zeros_like(W) if self.first_stage == "zero" else W
        key = penalty.stage_key(ref)
        stage_pen = penalty.stage_penalty(ref)
        keys, iters, stage_times, stage_conv = [], [], [], []
        stage_coefs = []
        points: dict = {}
        converged = False
        F_prev = np.inf
        res = None
        n_dc = []
        stalled: list[bool] = []
        for stage in range(self.n_stages):
            ts = time.perf_counter()
            moved = ((lambda V, key=key: penalty.stage_key(V) != key) if self.leave_stages
                     else None)
            W0, b0 = _known_start(stage_starts, key, stage_pen, W, b)
            res, n_inner, n_dc_stage = self._solve_stage(datafit, stage_pen, W0, b0, moved)
            if W0 is not W and _stage_value(datafit, stage_pen, res) > _stage_value(
                    datafit, stage_pen, None, W, b, tolerance=True):
                # from the known point the stage ended above this run's own start (a solve
                # stopped early): solve it from there instead, so that F cannot increase
                again, n_again, n_dc_again = self._solve_stage(datafit, stage_pen, W, b, moved)
                res, n_inner, n_dc_stage = again, n_inner + n_again, n_dc_stage + n_dc_again
            W, b = res.coef, res.intercept_variable
            if stage_pen.is_convex:
                _remember(points, key, W, b)
            if self.keep_stages:
                stage_coefs.append(W.copy())
            F = datafit.value(W, b) + penalty.value(W)
            keys.append(key)
            iters.append(n_inner)
            n_dc.append(n_dc_stage)
            stage_conv.append(bool(res.converged))
            stalled.append(bool(res.info.get("stalled", False)))
            stage_times.append(time.perf_counter() - ts)
            run.record(F)
            if run.notify(stage + 1, F, W, b):
                break
            key_new = penalty.stage_key(W)
            small = np.isfinite(F_prev) and (F_prev - F) <= self.stage_tol * max(abs(F), 1e-300)
            F_prev = F
            if key_new == key or small:
                converged = True
                break
            key = key_new
            stage_pen = penalty.stage_penalty(W)
        assert res is not None
        last_ok = stage_conv[-1]
        if self.warn and not (converged and last_ok):
            if not converged:
                what = f"the stage key still changed after n_stages={self.n_stages} stages"
            elif res.info.get("drifting", False):
                what = ("the last stage's objective decreased mostly through entries of W that "
                        "the loss does not see (features constant within a task's rows, along "
                        "which the stage has no minimizer), by less than "
                        f"{DRIFT_FACTOR * self._stall():g} (relative) per 100 iterations over "
                        "a window of iterations")
            elif stalled[-1]:
                what = (f"the last stage's objective decreased by less than {self._stall():g} "
                        "(relative) per 100 iterations over a window before its optimality "
                        f"measure reached tol={self.tol:g}")
            else:
                what = "the inner solver reached max_iter in the last stage"
            advice = "lower stall_tol, " if converged and stalled[-1] else ""
            warnings.warn(f"Solver 'multistage' did not converge: {what}; returning the last "
                          f"stage's solution. Increase n_stages or max_iter, {advice}or loosen "
                          "tol.", ConvergenceWarning, stacklevel=2 + EXTRA_FRAMES.get())
        info = {"stage_keys": keys, "final_key": penalty.stage_key(W), "stage_points": points,
                "stage_iters": iters, "stage_dc_iters": n_dc, "stage_times": stage_times,
                "stage_converged": stage_conv, "stage_stalled": stalled,
                "n_stages": len(keys),
                "best_objective": run.history[-1]}
        if self.keep_stages:
            info["stage_coefs"] = stage_coefs
        info["stage_certified"] = bool(res.info.get("certified", False))
        return run.finish(W, b, n_iter=int(sum(iters)), converged=converged and last_ok,
                          measure=res.optimality, exhausted=False, info=info,
                          certified=bool(res.info.get("certified", False)))
