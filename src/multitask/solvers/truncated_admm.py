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
  most ``stall_tol``, while the optimality measure fell by less than half over it
  (:data:`STALL_MEASURE_RATIO`), ends the run, not converged (``info["stalled"]``). The
  returned point is the last accepted one, so the stage objective never increases from the
  start.

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
    window : int, default=100
        Iterations between two comparisons of the objective.
    stall_tol : float, default=1e-4
        A window that decreases the objective by at most this (relative), and the measure by
        less than half, ends the run.
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
                 relaxation: float = 1.6, window: int = 100, stall_tol: float = 1e-4,
                 check_every: int = 50, max_rises: int = 3, warn: bool = True):
        super().__init__(max_iter=max_iter, tol=tol, warn=warn)
        self.rho_scale = check_tol(rho_scale, "rho_scale")
        r = float(relaxation)
        if not 0.0 < r < 2.0:
            raise ValueError(f"relaxation must be in (0, 2), got {relaxation!r}.")
        self.relaxation = r
        self.window = check_int(window, "window")
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
        steps = _Steps(self.relaxation, eig, H, C, penalty)

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
            measure = kkt_residual(datafit, penalty, V, None, L)
            if measure <= self.tol:
                best_V, best_F = V, F
                run.record(F)
                converged = True
                break
            if compare:
                decrease = best_F - F
                best_V, best_F = V, F
                run.record(F)
                if run.notify(n_iter, F, V, None):
                    break
                slow = decrease <= self.stall_tol * max(abs(F), np.finfo(float).tiny)
                if slow and measure > STALL_MEASURE_RATIO * last_measure:
                    stalled = True
                    break
                last_measure = measure
        steps.close()
        if not converged:
            measure = kkt_residual(datafit, penalty, best_V, None, L)
            converged = measure <= self.tol
        return run.finish(best_V, None, n_iter=n_iter, converged=converged, measure=measure,
                          exhausted=not (converged or stalled),
                          info={"rho": rho, "stalled": stalled and not converged,
                                "rises": rises, "best_objective": best_F})

    @staticmethod
    def _dual(datafit: Datafit, V: np.ndarray, rho: float) -> np.ndarray:
        """``U = -grad f(V) / rho``: the fixed point's scaled dual when ``V`` is stationary."""
        _, G, _ = datafit.value_and_grad(V)
        return np.ascontiguousarray(-G / rho)


class _Steps:
    """The iterations of :class:`TruncatedStageADMM` at a fixed ``rho``: compiled
    (:func:`~multitask.solvers._admm_trace_numba.truncated_admm_run`, several iterations per
    call, with the per-task inverses ``(H_t + rho I)^{-1}`` formed once per ``rho``) for at
    most :data:`~multitask.solvers.admm.COMPILED_TRACE_MAX_FEATURES` features and a penalty
    that remembers a prox output, under the ski-rental rule of ADMM's compiled steps (the
    interpreted iterations while numba's start-up is not worth paying, their time charged
    against it), else interpreted."""

    def __init__(self, relaxation: float, eig: EigenSystem, H: np.ndarray, C: np.ndarray,
                 penalty: Penalty):
        self.r = relaxation
        self.eig = eig
        self.H = H
        self.C = np.asarray(C, dtype=np.float64)
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
            done, V_new, norm = compiled.kernel()(
                M, idx, cnt, B, V, U, rho, self.r, self.strength / rho, self.keep, n,
                GRAM_RTOL, 2.0**SAFE_EXPONENT)
            if done:
                V = V_new
                self.penalty.remember_prox(V, float(norm))
                n -= int(done)
            if n > 0:  # the kernel declined the next iteration: the interpreted one
                V = self.interpreted(V, U, rho)
                n -= 1
        return V

    def _inverses(self, rho: float) -> tuple:
        """``(rho, M, idx, cnt, B)`` of :func:`truncated_admm_run` at ``rho``: per task the
        features whose row of ``H_t`` is not zero (``idx[t, :cnt[t]]``), ``(H_t + rho I)^{-1}``
        on them (``M[t]``, from the eigendecompositions) and ``B_t = (H_t + rho I)^{-1} C_t``;
        computed once per ``rho``."""
        if self._system is not None and self._system[0] == rho:
            return self._system
        eig = self.eig
        Q, lam = eig.Q, eig.lam
        inv = np.matmul(Q / (lam + rho)[:, None, :], eig._QT)  # (m or 1, d, d)
        B = np.ascontiguousarray(np.einsum("tij,jt->it", inv, self.C) if not eig.shared
                                 else inv[0] @ self.C)
        seen = np.any(self.H != 0.0, axis=2)  # (m or 1, d)
        # per task the seen features first (in order), then the others
        idx = np.ascontiguousarray(np.argsort(~seen, axis=1, kind="stable"), dtype=np.int64)
        cnt = seen.sum(axis=1).astype(np.int64)
        tasks = np.arange(seen.shape[0])[:, None, None]
        M = np.ascontiguousarray(inv[tasks, idx[:, :, None], idx[:, None, :]])
        self._system = (rho, M, idx, cnt, B)
        return self._system

    def close(self) -> None:
        """Charge the interpreted iterations' time (ski-rental rule) at the end of a run."""
        if self.compiled is not None:
            self.compiled.close()


class _CompiledRun(SkiRental):
    """:func:`~multitask.solvers._admm_trace_numba.truncated_admm_run` under the ski-rental
    rule of ADMM's compiled steps."""

    _KERNEL = "truncated_admm_run"
