"""ADMM at a fixed penalty parameter for the non-convex stages of the capped trace norm.

The later stages of :class:`~multitask.solvers.multistage.Multistage` on the capped trace norm
minimize ``f(W) + alpha ||W||_{r-}`` (the truncated trace norm, not convex) for a quadratic
datafit ``f(W) = sum_t 0.5 w_t^T H_t w_t - C_t^T w_t + const``. This solver runs the
iteration of :class:`~multitask.solvers.admm.QuadraticADMM` (exact per-task W-step, the
partial singular value thresholding as V-step, over-relaxation ``r``)::

    W = (H_t + rho I)^{-1} (C_t + rho (V - U)_t),   W^ = r W + (1 - r) V,
    V = psvt(W^ + U, alpha / rho, r),               U = U + W^ - V

with two differences that the non-convex penalty asks for:

* the penalty parameter ``rho`` is fixed (``rho_scale`` times the median positive eigenvalue
  of the ``H_t``) instead of adapted by the spectral rule, whose changes made the iterates of
  these stages diverge on School (nonconvex ADMM converges for a large enough fixed ``rho``:
  Wang, Yin & Zeng, "Global convergence of ADMM in nonconvex nonsmooth optimization", 2019);
* the objective is compared every ``window`` iterations with the last accepted point's: a
  window that raises it is dropped, and the run goes on from the accepted point with a four
  times larger ``rho`` (at most ``max_rises`` times); a window whose relative decrease is at
  most ``stall_tol`` per 100 iterations (:data:`STALL_SPAN`), while the optimality measure fell
  by less than half per 100 iterations (:data:`STALL_MEASURE_RATIO`), ends the run, not
  converged (``info["stalled"]``). The measure is computed every ``check_every`` iterations;
  the stall rule applies at the windows that end on such a check (the drift rule and the
  stage key, which need no measure, at every window). The rules are rates, so that another
  window asks the same decrease per iteration; but a shorter window sees the objective of
  these non-monotone iterations over fewer of them, and ends stages sooner: windows of 25
  iterations instead of 100 (:data:`WINDOW`) took a quarter off the capped trace norm's
  iterations in School's cross-validation, with the same choice, but its single fits then
  stop after fewer stages, at a lower rank and up to 2.6% higher in objective (held-out error
  lower): another fit, not the default (docs/tuning_constants.md). The returned point is the
  last accepted one, so the stage objective never increases from the start.

**Drift.** Where some entries of ``W`` are unseen by the loss (``w_tj`` for a feature ``j``
constant within task ``t``'s rows, centred away: a zero row of ``H_t``), a stage whose kept
singular values are all of ``W``'s may have no minimizer: with the tail at zero, the
objective keeps decreasing, slowly and without end, as those entries grow (on School's
training rows, 49% of the entries are unseen; over 6,000 more iterations of such a stage
``||W||_F`` grew from 393 to 756 while the objective fell by 0.5%, and 87 to 90% of the change
lay in the unseen entries: ``benchmarks/diagnose_capped_trace_drift.py``). A window whose
change lies at least half (:data:`DRIFT_SHARE`, in squared norm) in those entries ends the run
once its relative decrease is at most :data:`DRIFT_FACTOR` times the stall rule's
(``info["stalled"]`` and ``info["drifting"]``): what it gains is mostly the growth of entries
that the task's training rows say nothing about.

The iterations between two checks run in one compiled call
(:func:`~multitask.solvers._admm_trace_numba.truncated_admm_run`) with the per-task inverses
``(H_t + rho I)^{-1}`` formed once per ``rho``: a feature whose row of ``H_t`` is zero (constant
within the task's rows: the loss does not see ``w_tj``) decouples, ``W_tj = (V - U)_tj +
C_tj / rho``, and the inverse is applied on the other features only.

The run converges when the prox-gradient residual of the stage
(:func:`~multitask.solvers.base.kkt_residual`), computed every ``check_every`` iterations, is
at most ``tol`` at a point whose objective is at most the accepted one's.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from multitask.losses import Datafit
from multitask.penalties.base import Penalty
from multitask.penalties.prox import GRAM_RTOL, SAFE_EXPONENT
from multitask.solvers.admm import COMPILED_TRACE_MAX_FEATURES, EigenSystem, SkiRental
from multitask.solvers.base import Solver, check_int, check_tol, kkt_residual, lipschitz_bound
from multitask.solvers.iteration import IterationRecord
from multitask.solvers.result import SolverResult

__all__ = ["TruncatedStageADMM"]

#: A window ends the run as stalled only where the optimality measure also fell by less than
#: this factor over it (a run that converges, its measure falling geometrically, goes on).
STALL_MEASURE_RATIO = 0.5

#: The stall and drift rules' rates are per this many iterations: a window of ``w``
#: iterations stalls where its relative decrease is at most ``stall_tol * w / STALL_SPAN``
#: and the measure fell by less than the factor ``STALL_MEASURE_RATIO ** (k / STALL_SPAN)``
#: over the ``k = max(w, check_every)`` iterations since it was last computed (the same rates
#: whatever the window; a shorter window still ends stages sooner: module docstring).
STALL_SPAN = 100

#: The default window: iterations between two comparisons of the objective (module docstring).
WINDOW = 100

#: A window whose change of ``W`` lies at least this share (in squared norm) in the entries the
#: loss does not see is a drift (module docstring).
DRIFT_SHARE = 0.5

#: A drifting window ends the run where its relative decrease is at most this times
#: ``stall_tol`` (module docstring). On School's cross-validation
#: (``benchmarks/bench_cv_two_param.py``) 10 took a third off the capped trace norm's CPU, with
#: the same choice and held-out error; the figures: docs/tuning_constants.md.
DRIFT_FACTOR = 10.0


class TruncatedStageADMM(Solver):
    """ADMM at a fixed penalty parameter for a non-convex spectral stage (module docstring).

    Parameters
    ----------
    max_iter : int, default=2000
    tol : float, default=1e-4
        Tolerance on the stage's prox-gradient residual.
    rho_scale : float, default=2.0
        ``rho`` as a multiple of the median positive eigenvalue of the ``H_t``.
    relaxation : float, default=1.6
    window : int, optional
        Iterations between two comparisons of the objective. Default: :data:`WINDOW`.
    stall_tol : float, default=1e-4
        A window that decreases the objective by at most this (relative) per
        :data:`STALL_SPAN` iterations, and the measure by less than half per as many, ends the
        run; a drifting window (module docstring), by at most :data:`DRIFT_FACTOR` times this.
        ``0`` turns both rules off.
    check_every : int, default=50
        Iterations between two computations of the residual.
    max_rises : int, default=3
        Windows that may raise the objective before the run stops.
    warn : bool, default=True
    """

    name = "truncated_stage_admm"
    by_name = False  # an inner solver of Multistage, not a solver of a model
    datafit_requires = frozenset({"quadratic"})
    penalty_requires = frozenset({"spectral_threshold"})

    def __init__(self, *, max_iter: int = 2000, tol: float = 1e-4, rho_scale: float = 2.0,
                 relaxation: float = 1.6, window: int | None = None, stall_tol: float = 1e-4,
                 check_every: int = 50, max_rises: int = 3, warn: bool = True):
        super().__init__(max_iter=max_iter, tol=tol, warn=warn)
        self.rho_scale = check_tol(rho_scale, "rho_scale")
        r = float(relaxation)
        if not 0.0 < r < 2.0:
            raise ValueError(f"relaxation must be in (0, 2), got {relaxation!r}.")
        self.relaxation = r
        self.window = check_int(WINDOW if window is None else window, "window")
        self.stall_tol = check_tol(stall_tol, "stall_tol", allow_zero=True)
        self.check_every = check_int(check_every, "check_every")
        self.max_rises = check_int(max_rises, "max_rises", low=0)

    def solve(self, datafit: Datafit, penalty: Penalty, *, coef_init=None, intercept_init=None,
              callback: Callable | None = None) -> SolverResult:
        """Run from ``coef_init``; ``intercept_init`` is unused (the quadratic datafit
        eliminates the intercepts)."""
        run = IterationRecord(self, datafit, penalty, callback)
        V, _ = run.start(coef_init, None, project=False)
        H, C = datafit.quadratic_form()
        eig = EigenSystem(None, C, eigen=datafit.quadratic_eigen())
        rho = self.rho_scale * eig.positive_median()
        L = lipschitz_bound(datafit, penalty)
        steps = _Steps(self.relaxation, eig, H, C, penalty,
                       cache=(datafit.data, (datafit.name, float(datafit.alpha_l2))))

        def objective(X: np.ndarray) -> float:
            return float(datafit.value(X) + penalty.value(X))

        V = np.ascontiguousarray(V, dtype=np.float64)
        best_V, best_F = V, objective(V)
        run.record(best_F)
        U = self._dual(datafit, V, rho)
        rises = 0
        converged = stalled = False
        measure = np.nan
        n_iter = 0
        since = 0  # iterations since the last accepted point (or restart)
        last_measure = np.inf  # the measure at the last accepted window's end
        unseen = _unseen_entries(H, V.shape, steps.seen)
        drifting = False
        # the rules' rates are per STALL_SPAN iterations: a window's share of them
        share = self.window / STALL_SPAN
        per_window = self.stall_tol * share
        # the measure is computed at the checks: its fall is compared over their span
        span = max(self.check_every, self.window) / STALL_SPAN
        measure_ratio = STALL_MEASURE_RATIO**span
        while n_iter < self.max_iter:
            # the iterations up to the next residual check, window end or the budget
            n = min(self.check_every - since % self.check_every,
                    self.window - since % self.window, self.max_iter - n_iter)
            V = steps.advance(V, U, rho, n)
            n_iter += n
            since += n
            check = since % self.check_every == 0
            compare = since % self.window == 0 or n_iter == self.max_iter
            if not (check or compare):
                continue
            F = objective(V)
            if not F <= best_F + 1e-12 * abs(best_F):
                if not compare:
                    continue
                rises += 1  # the window raised the objective: from the accepted point again
                if rises > self.max_rises:
                    break
                rho *= 4.0
                last_measure = np.inf
                V = best_V
                U = self._dual(datafit, V, rho)
                since = 0
                continue
            if check:
                measure = steps.measure(datafit, V, L)
                if measure <= self.tol:
                    best_V, best_F = V, F
                    run.record(F)
                    converged = True
                    break
            if compare:
                decrease = best_F - F
                drift = unseen is not None and _drift_share(V - best_V, unseen) >= DRIFT_SHARE
                best_V, best_F = V, F
                run.record(F)
                if run.notify(n_iter, F, V, None):
                    break
                scale = max(abs(F), np.finfo(float).tiny)
                slow = decrease <= per_window * scale
                if check and slow and measure > measure_ratio * last_measure:
                    stalled = True
                    break
                if drift and decrease <= DRIFT_FACTOR * per_window * scale:
                    stalled = drifting = True
                    break
                if check:
                    last_measure = measure
        steps.close()
        if not converged:
            measure = steps.measure(datafit, best_V, L)
            converged = measure <= self.tol
        return run.finish(best_V, None, n_iter=n_iter, converged=converged, measure=measure,
                          exhausted=not (converged or stalled),
                          info={"rho": rho, "stalled": stalled and not converged,
                                "drifting": drifting and not converged,
                                "rises": rises, "best_objective": best_F})

    @staticmethod
    def _dual(datafit: Datafit, V: np.ndarray, rho: float) -> np.ndarray:
        """``U = -grad f(V) / rho``: the fixed point's scaled dual when ``V`` is stationary."""
        _, G, _ = datafit.value_and_grad(V)
        return np.ascontiguousarray(-G / rho)


def _seen_features(H: np.ndarray) -> np.ndarray:
    """Boolean ``(m or 1, d)``: the features whose row of ``H_t`` is not zero (``H`` of shape
    ``(m or 1, d, d)``), those the loss of task ``t`` sees."""
    return np.any(H != 0.0, axis=2)


def _unseen_entries(H: np.ndarray, shape: tuple[int, ...],
                    seen: np.ndarray | None = None) -> np.ndarray | None:
    """Boolean ``(d, m)`` mask of the entries ``w_tj`` the loss does not see (a zero row ``j``
    of ``H_t``; ``H`` of shape ``(m or 1, d, d)``; ``seen``: :func:`_seen_features` of it, when
    computed already), or None where it sees every entry."""
    unseen = ~(_seen_features(H) if seen is None else seen).T  # (d, m or 1)
    if not unseen.any():
        return None
    return np.broadcast_to(unseen, shape)


def _drift_share(change: np.ndarray, unseen: np.ndarray | None) -> float:
    """``||change[unseen]||^2 / ||change||^2`` (0 without unseen entries or change)."""
    if unseen is None:
        return 0.0
    total = float(np.vdot(change, change))
    if not total > 0.0:
        return 0.0
    part = change[unseen]
    return float(np.vdot(part, part)) / total


class _Steps:
    """The iterations of :class:`TruncatedStageADMM` at a fixed ``rho``: compiled
    (:func:`~multitask.solvers._admm_trace_numba.truncated_admm_run`, several iterations per
    call, with the per-task inverses ``(H_t + rho I)^{-1}`` formed once per ``rho``) for at
    most :data:`~multitask.solvers.admm.COMPILED_TRACE_MAX_FEATURES` features and a penalty
    that remembers a prox output, under the ski-rental rule of ADMM's compiled steps (the
    interpreted iterations while numba's start-up is not worth paying, their time charged
    against it), else interpreted."""

    def __init__(self, relaxation: float, eig: EigenSystem, H: np.ndarray, C: np.ndarray,
                 penalty: Penalty, cache: tuple | None = None):
        self.r = relaxation
        self.eig = eig
        #: ``(data, version)``: the data the loss sees and the loss's name and ridge (the
        #: ``H_t`` and ``C_t`` are the data's for them), on which the seen
        #: features and the inverses at a ``rho`` are cached (the fits of a path share them:
        #: ``rho`` depends on the ``H_t`` alone)
        self.cache = cache
        self.seen = (_seen_features(H) if cache is None else cache[0].cached_latest(
            "truncated_admm_seen", cache[1], lambda: _seen_features(H)))  # (m or 1, d)
        self.H = np.ascontiguousarray(H, dtype=np.float64)
        self.C = np.ascontiguousarray(C, dtype=np.float64)
        self.penalty = penalty
        self.keep = int(getattr(penalty, "spectral_kept", 0))
        self.strength = float(penalty.spectral_strength())
        applies = (eig.QtC.shape[0] <= COMPILED_TRACE_MAX_FEATURES
                   and hasattr(penalty, "remember_prox"))
        self.compiled = _CompiledRun() if applies else None
        self._system: tuple | None = None  # (rho, M, idx, cnt, B)

    def interpreted(self, V: np.ndarray, U: np.ndarray, rho: float) -> np.ndarray:
        """One iteration (module docstring) by the eigendecompositions and the penalty's prox;
        ``U`` updated in place."""
        r = self.r
        W = self.eig.solve(V - U, rho)
        Wr = r * W + (1.0 - r) * V
        V_new = self.penalty.prox(Wr + U, 1.0 / rho)
        U += Wr - V_new
        return V_new

    def advance(self, V: np.ndarray, U: np.ndarray, rho: float, n: int) -> np.ndarray:
        """``V`` after ``n`` iterations at ``rho`` (``U`` updated in place)."""
        compiled = self.compiled
        while n > 0:
            if compiled is None:
                V = self.interpreted(V, U, rho)
                n -= 1
                continue
            if not compiled.ready():
                started = time.perf_counter()
                V = self.interpreted(V, U, rho)
                compiled.charge(time.perf_counter() - started)
                n -= 1
                continue
            _, M, idx, cnt, B = self._inverses(rho)
            done, V_new, norm, sv = compiled.kernel()(
                M, idx, cnt, B, V, U, rho, self.r, self.strength / rho, self.keep, n,
                GRAM_RTOL, 2.0**SAFE_EXPONENT)
            if done:
                V = V_new
                self.penalty.remember_prox(V, float(norm), sv)
                n -= int(done)
            if n > 0:  # the kernel declined the next iteration: the interpreted one
                V = self.interpreted(V, U, rho)
                n -= 1
        return V

    def measure(self, datafit: Datafit, V: np.ndarray, L: float) -> float:
        """:func:`~multitask.solvers.base.kkt_residual` of the stage at ``V``: compiled
        (:func:`~multitask.solvers._admm_trace_numba.truncated_stage_residual`) where the
        iterations are, else (or where the kernel declines) interpreted."""
        compiled = self.compiled
        if compiled is not None and compiled.ready() and not datafit.has_intercept_variable:
            from multitask.solvers._admm_trace_numba import truncated_stage_residual

            ok, norm = truncated_stage_residual(
                self.H, self.C, np.ascontiguousarray(V, dtype=np.float64), float(L),
                self.strength / L, self.keep, 2.0**SAFE_EXPONENT)
            if ok:
                scale = datafit.gradient_scale() * np.sqrt(self.penalty.linear_map.norm_sq)
                return float(L * norm / max(scale, np.finfo(float).tiny))
        return kkt_residual(datafit, self.penalty, V, None, L)

    def _inverses(self, rho: float) -> tuple:
        """``(rho, M, idx, cnt, B)`` of :func:`truncated_admm_run` at ``rho``: per task the
        features whose row of ``H_t`` is not zero (``idx[t, :cnt[t]]``), ``(H_t + rho I)^{-1}``
        on them (``M[t]``, from the eigendecompositions) and ``B_t = (H_t + rho I)^{-1} C_t``;
        computed once per ``rho``."""
        if self._system is not None and self._system[0] == rho:
            return self._system
        if self.cache is None:
            self._system = self._compute_inverses(rho)
        else:
            data, version = self.cache
            self._system = data.cached_latest("truncated_admm_inverses", (version, rho),
                                              lambda: self._compute_inverses(rho))
        return self._system

    def _compute_inverses(self, rho: float) -> tuple:
        """:meth:`_inverses`' arrays at ``rho``, computed."""
        eig = self.eig
        Q, lam = eig.Q, eig.lam
        inv = np.matmul(Q / (lam + rho)[:, None, :], eig._QT)  # (m or 1, d, d)
        B = np.ascontiguousarray(np.einsum("tij,jt->it", inv, self.C) if not eig.shared
                                 else inv[0] @ self.C)
        seen = self.seen
        # per task the seen features first (in order), then the others
        idx = np.ascontiguousarray(np.argsort(~seen, axis=1, kind="stable"), dtype=np.int64)
        cnt = seen.sum(axis=1).astype(np.int64)
        tasks = np.arange(seen.shape[0])[:, None, None]
        M = np.ascontiguousarray(inv[tasks, idx[:, :, None], idx[:, None, :]])
        return (rho, M, idx, cnt, B)

    def close(self) -> None:
        """Charge the interpreted iterations' time (ski-rental rule) at the end of a run."""
        if self.compiled is not None:
            self.compiled.close()


class _CompiledRun(SkiRental):
    """:func:`~multitask.solvers._admm_trace_numba.truncated_admm_run` under the ski-rental
    rule of ADMM's compiled steps."""

    _KERNEL = "truncated_admm_run"
