"""ADMM with exact per-task solves for quadratic losses: insensitive to feature scaling.

For a quadratic datafit (``"quadratic"``: cached per-task Gram matrices)::

    f(W) = sum_t 0.5 w_t^T H_t w_t - C_t^T w_t + const,    H_t = X_t^T X_t / n_t + alpha_l2 I,

a penalty ``h`` with a prox and its linear map ``W = A(V)`` (the identity, or ``W = sum_i V[i]``
for the split models), the solver splits ``min_V f(A V) + h(V)`` as
``min f(W) + h(V)`` subject to ``W = A V`` and runs the (scaled, over-relaxed) alternating
direction method of multipliers (Boyd, Parikh, Chu, Peleato & Eckstein, "Distributed
optimization and statistical learning via the alternating direction method of multipliers",
2011, Sections 3.1, 3.4.3 and 3.4.1)::

    W     = argmin_W f(W) + (rho / 2) ||W - A V + U||^2
          : w_t = (H_t + rho I)^{-1} (C_t + rho (A V - U)_t)       (exact, task by task)
    W^    = r W + (1 - r) A V                                      (over-relaxation, r = 1.6)
    V     = prox_{h / (rho tau)}(V - A^T (A V - W^ - U) / tau)    (tau = ||A||^2; for the
                                                                    identity: prox(W^ + U))
    U     = U + W^ - A V

The W-step is an exact minimization whatever the conditioning of ``H_t``: it uses one
eigendecomposition ``H_t = Q_t diag(lambda_t) Q_t^T`` per task (one for a shared design),
computed once, so that ``(H_t + rho I)^{-1} = Q_t diag(1 / (lambda_t + rho)) Q_t^T`` for every
``rho`` and the penalty parameter can adapt at no cost. For the identity map the V-step is
the exact prox of ``h`` (standard ADMM). For a split model ``h(V) = sum_i h_i(V[i])``,
``W = sum_i V[i]``, the V-step is one Gauss-Seidel sweep over the parts (``split_passes``):
``V[i] = prox_{h_i / rho}(W^ + U - sum_{j != i} V[j])`` in turn, each exact, which makes the
iteration the direct extension of ADMM to the blocks ``(W, V[0], V[1], ...)``. That extension
has no convergence guarantee in general (Chen, He, Ye & Yuan, "The direct extension of ADMM
for multi-block convex minimization problems is not necessarily convergent", 2016); here the
certified gap decides when a run has converged, and it did on every problem tried. On
School in MALSAR's setting (z-scored features, strengths at 1% of their thresholds) it
reached a relative gap of 1e-8 in 1,720, 2,810 and 780 iterations for sparse + low rank,
robust MTL and rMTFL, against 6,611, 8,770 and 5,886 for the linearized V-step
(``split_passes=0``: Yang & Yuan, "Linearized augmented Lagrangian and alternating direction
methods for nuclear norm minimization", 2013, with ``tau = 1.01 ||A||^2``) and 15,108, 12,098
and 37,958 for accelerated gradient on the stacked variable; more sweeps per iteration did not
lower the iteration counts (``benchmarks/bench_split_admm.py``). One iteration costs two
products with the ``Q_t`` (``2 m d^2``) and one prox, like one step of a gradient method.
The loss enters exactly, so the iteration count does not follow the spread of the
eigenvalues of ``H_t`` as accelerated gradient's (``sqrt(L / mu)``) does: with the adaptive
penalty parameter below it stayed between 20 and 320 iterations (``tol=1e-6``) on
standardized and raw School, SARCOS, Yeast and synthetic problems whose condition numbers
(:func:`condition_number`) range over ``3`` to ``3e6`` (measured; ADMM has no condition-free
guarantee in general).

Penalty parameter: ``rho_0`` is the median of the positive eigenvalues of the ``H_t`` (unless
given); then ``rho`` follows the spectral rule of adaptive ADMM (Xu, Figueiredo & Goldstein,
"Adaptive ADMM with spectral penalty parameter selection", AISTATS 2017): every
``adapt_every`` iterations, Barzilai-Borwein estimates ``a`` of the curvature of ``f`` (from the
changes of ``W`` and of ``grad f(W) = rho (A V - U - W)``) and ``b`` of that of ``h`` (from the
changes of ``A V`` and of the multiplier ``-rho U``) give ``rho = sqrt(a b)``, or the one of the
two whose correlation is above ``0.2`` (``rho`` unchanged when neither is), with the paper's
safeguard ``1 / (1 + 1e10 / k^2) <= rho_new / rho <= 1 + 1e10 / k^2`` that keeps the
convergence of ADMM with a fixed parameter; the scaled dual ``U`` is rescaled accordingly. (The
residual balancing of Boyd et al., Sec. 3.4.1, needed up to 100 times more iterations, or never
converged, on features of very different scales.) Where neither curvature is estimated the
spectral rule would leave ``rho`` where it is, which could be far off (on School's sparse +
low-rank paths it stayed at a value that took thousands of iterations): residual balancing is
then the fallback for the split models and the dirty model's norm (``balance``: ``rho``
doubled or halved when one relative residual exceeds ``balance`` times the other). The dual
starts at
``U = -grad f(A V_0) / rho``, the fixed point's dual when the start is optimal (warm starts).

Anderson acceleration (``anderson``): for the split models and the dirty model's norm on ``W`` (by
default; :data:`ANDERSON_MEMORY` pairs), ``rho`` stays fixed from iteration ``anderson_after`` on
and the iterates ``(V, U)`` of the fixed-point map are extrapolated
(:class:`~multitask.solvers.admm_anderson.AndersonADMM`, safeguarded: an extrapolation that raises
the fixed-point residual is dropped; the balancing fallback still runs every :data:`REBALANCE_EVERY`
iterations). These problems end in a long linear tail (the parts' degenerate direction, the
polyhedral norms' faces) that extrapolation shortens: the iterations to a certified gap of 1e-8 fell
from 12,460 to 1,260 for the dirty model (q = inf) at z-scored ``(0.00473, 0.00473)`` and from 6,370
to 440 (q = 2) at MALSAR's example raw, and a School path of sparse + low rank took a fifth of the
iterations (``benchmarks/bench_certified.py --sweep``, ``benchmarks/bench_dirty_solvers.py
--plain``, ``benchmarks/bench_cv_two_param.py``).

The objective is recorded at each check of the measure and at the last iterate (at every
iteration when a ``callback`` is given, which receives it).

Stopping: the library's relative optimality measure (:mod:`multitask.solvers.base`) at the
current ``V`` (a prox output: sparse or low rank as the penalty makes it), computed every
``check_every`` iterations, and every ``check_every // 5`` while both relative ADMM residuals
are at most ``tol`` (at most every ``min(COMPILED_CHECK_GAP, k // 4)`` iterations after
iteration ``k`` while a compiled iteration runs); the run stops when the measure is at most
``tol``. Each check costs about one interpreted iteration, or 3 to 4 compiled ones.

Compiled iterations (numba, :mod:`._admm_trace_numba`, under the ski-rental rule of
:mod:`multitask.compiled`, for at most :data:`COMPILED_TRACE_MAX_FEATURES` features): the
trace norm (its singular value thresholding through the small Gram matrix) and sparse + low
rank (the W-step, the l1 part's soft-thresholding and the trace ball's projection, one
Gauss-Seidel sweep); each falls back to the interpreted step where its Gram route cannot
resolve a singular value it keeps.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable

import numpy as np

from multitask.losses import Datafit
from multitask.penalties.base import IdentityMap, Penalty
from multitask.penalties.prox import GRAM_RTOL, SAFE_EXPONENT
from multitask.solvers.admm_anderson import AndersonADMM
from multitask.solvers.base import (
    Solver,
    check_int,
    check_tol,
    lipschitz_bound,
    optimality,
)
from multitask.solvers.conditioning import (
    ILL_CONDITIONED,
    condition_number,
    curvature_ratio,
    ill_conditioned,
)
from multitask.solvers.iteration import CertificateSchedule, IterationRecord
from multitask.solvers.problem import Problem
from multitask.solvers.result import SolverResult
from multitask.solvers.seen_rows import on_seen_rows, seen_rows

__all__ = ["COMPILED_TRACE_MAX_FEATURES", "CompiledTraceStep", "DIRTY_MIN_FEATURES",
           "EigenSystem", "QuadraticADMM", "SkiRental", "TRACE_STRONG_RATIO", "TRACE_STRONG_TASKS",
           "condition_number", "curvature_ratio", "ill_conditioned", "prefer_admm",
           "prefer_admm_split"]

#: The trace norm with the squared loss on at least this many tasks at ``alpha >=``
#: :data:`TRACE_STRONG_RATIO` ``alpha_max`` is left to accelerated gradient: with
#: ``benchmarks/bench_auto_choice.py --only TraceNorm --loss squared`` (40 rows per task) it
#: was the faster at 16 of 18 points of 1,000 and 3,000 tasks of 10 to 40 features at
#: ``alpha_max`` times 0.5 to 0.9, ADMM at two, by little; ADMM the faster at most points from
#: ``0.3 alpha_max`` down and on 100 tasks (the figures: docs/scale.md).
TRACE_STRONG_TASKS = 1000
#: See :data:`TRACE_STRONG_TASKS`.
TRACE_STRONG_RATIO = 0.5


class EigenSystem:
    """The per-task eigendecompositions ``H_t = Q_t diag(lambda_t) Q_t^T`` of a quadratic
    datafit, and the exact solves ``(H_t + rho I)^{-1} (C_t + rho T_t)`` for any ``rho``.

    Parameters
    ----------
    H : ndarray of shape (m, d, d) or (1, d, d), or None
        Symmetric positive semi-definite matrices (one shared by all tasks when ``(1, d, d)``);
        None when ``eigen`` is given.
    C : ndarray of shape (d, m)
        Linear terms.
    eigen : tuple of ndarray, optional
        ``(lam, Q)``, the eigendecompositions of ``H`` already computed (as
        :meth:`multitask.losses.Datafit.quadratic_eigen` caches them); ``H`` is then unused.
    """

    def __init__(self, H: np.ndarray | None, C: np.ndarray,
                 eigen: tuple[np.ndarray, np.ndarray] | None = None):
        if eigen is None:
            if H is None:
                raise ValueError("EigenSystem needs H or its eigendecompositions (eigen).")
            lam, Q = np.linalg.eigh(np.asarray(H, dtype=np.float64))
        else:
            lam, Q = eigen
        self.shared = Q.shape[0] == 1
        #: Eigenvalues ``(m or 1, d)``, clipped at zero (rounding makes tiny negatives).
        self.lam = np.maximum(lam, 0.0)
        #: Orthonormal eigenvectors ``(m or 1, d, d)`` (columns).
        self.Q = np.ascontiguousarray(Q)
        self._QT = np.ascontiguousarray(np.swapaxes(Q, 1, 2))
        #: ``Q_t^T C_t`` ``(d, m)``, C-contiguous (the compiled trace-norm step reads it).
        self.QtC = np.ascontiguousarray(self.rotate(np.asarray(C, dtype=np.float64)))
        # positive_median's value, shared with the copies of with_linear_term
        self._median: list[float] = []

    def with_linear_term(self, C: np.ndarray) -> EigenSystem:
        """The same eigendecompositions with the linear terms ``C`` (no new decomposition)."""
        new = copy.copy(self)
        new.QtC = np.ascontiguousarray(self.rotate(np.asarray(C, dtype=np.float64)))
        return new

    def rotate(self, T: np.ndarray) -> np.ndarray:
        """``Q_t^T T_t`` for every task ``t`` (columns of ``T``), shape ``(d, m)``."""
        if self.shared:
            return self._QT[0] @ T
        return np.matmul(self._QT, T.T[:, :, None])[:, :, 0].T

    def unrotate(self, S: np.ndarray) -> np.ndarray:
        """``Q_t S_t`` for every task ``t``, shape ``(d, m)``."""
        if self.shared:
            return self.Q[0] @ S
        return np.matmul(self.Q, S.T[:, :, None])[:, :, 0].T

    def solve(self, T: np.ndarray, rho: float) -> np.ndarray:
        """``w_t = (H_t + rho I)^{-1} (C_t + rho T_t)`` for every task, shape ``(d, m)``."""
        S = (self.QtC + rho * self.rotate(T)) / (self.lam.T + rho)
        return self.unrotate(S)

    def positive_median(self) -> float:
        """The median of the positive eigenvalues (1 when there is none); computed once for
        these eigendecompositions."""
        if not self._median:
            lam = self.lam
            top = float(lam.max()) if lam.size else 0.0
            pos = lam[lam > 1e-12 * top]
            self._median.append(float(np.median(pos)) if pos.size and top > 0 else 1.0)
        return self._median[0]


#: ``solver="auto"`` takes ADMM for the dirty model (its norm on ``W``, the squared loss)
#: from this many features, block coordinate descent below: with
#: ``benchmarks/bench_auto_choice.py --only DirtyModel --loss squared`` ADMM was the faster at
#: every point of 40 features (10 to 1,000 tasks; coordinate descent past the benchmark's cap
#: on 300 and 1,000 tasks) and within noise of it at 10 features; on School's 28 (raw and
#: z-scored, ``benchmarks/bench_dirty_solvers.py``) its worst point is the better one (the
#: figures: docs/tuning_constants.md).
DIRTY_MIN_FEATURES = 20
# (below it, ADMM too where the tasks have fewer rows than features: on the survey problem of
# benchmarks/bench_cv_two_param.py, 7 or 8 rows of a shared design and 10 features, block
# coordinate descent took 1,000 to 10,000 epochs, not converging at the weak end, where ADMM
# took 110 to 800 iterations: docs/tuning_constants.md)


def prefer_admm(datafit: Datafit, penalty: Penalty,
                threshold: float = ILL_CONDITIONED) -> bool:
    """Whether ``solver="auto"`` should take :class:`QuadraticADMM` over accelerated gradient.

    True when ADMM applies to ``(datafit, penalty)`` and :func:`condition_number` is at least
    ``threshold`` (default :data:`ILL_CONDITIONED`, ``10``). Measured (``tol=1e-6``): ADMM
    needed 20-320 iterations on School, SARCOS, Yeast and synthetic problems standardized or
    raw, accelerated gradient 29-20,500 (over 1,000 on every raw School problem). At the
    default ``tol`` on standardized problems (``benchmarks/bench_auto_solver.py``; the
    figures: docs/tuning_constants.md), ADMM was faster on School (``kappa`` 13 and 27) and on
    Yeast's trace norm (``kappa`` 11), and slower on generated per-task problems with i.i.d.
    features (``kappa`` 2.4 to 3.9), where accelerated gradient needs 16 to 32 iterations and
    ADMM's per-task eigendecompositions do not pay (SARCOS, ``kappa`` 4.1 with a shared design:
    ADMM faster for the trace norm, but kept on accelerated gradient).
    """
    return QuadraticADMM().supports(datafit, penalty) and ill_conditioned(datafit, threshold)


def prefer_admm_split(datafit: Datafit, penalty: Penalty) -> bool:
    """Whether ``solver="auto"`` should take :class:`QuadraticADMM` for a split model
    (``W = sum_i V[i]``): whenever it applies. Its Gauss-Seidel V-step handles the parts'
    degenerate direction ``(D, -D)`` that makes accelerated gradient on the stacked variable
    slow even on well-conditioned data (module docstring: 3 to 48 times fewer iterations to a
    gap of 1e-8 on School, raw or z-scored)."""
    return bool(penalty.parts) and QuadraticADMM().supports(datafit, penalty)


def _norm(a: np.ndarray) -> float:
    """The Frobenius norm ``sqrt(sum a_ij^2)`` (as :func:`numpy.linalg.norm`, without its
    dispatch: the residuals of every iteration)."""
    v = a.ravel(order="K")
    return math.sqrt(float(v @ v))


def _bb_curvature(dx: np.ndarray, dy: np.ndarray) -> tuple[float, float]:
    """Hybrid Barzilai-Borwein curvature of ``dy`` against ``dx`` and their correlation
    (Xu, Figueiredo & Goldstein, 2017, eqs. (26)-(27)); ``(nan, 0)`` when undefined."""
    xy, xx, yy = float(np.vdot(dx, dy)), float(np.vdot(dx, dx)), float(np.vdot(dy, dy))
    if not (xy > 0 and xx > 0 and yy > 0):
        return float("nan"), 0.0
    steepest, minimum_gradient = yy / xy, xy / xx
    if 2.0 * minimum_gradient > steepest:
        curvature = minimum_gradient
    else:
        curvature = steepest - 0.5 * minimum_gradient
    return curvature, xy / np.sqrt(xx * yy)


def _part_passes(penalty: Penalty, V: np.ndarray, c: np.ndarray, step: float,
                 passes: int) -> np.ndarray:
    """``passes`` Gauss-Seidel sweeps over the parts of ``min_V sum_i h_i(V_i) + ||sum_i V_i -
    c||^2 / (2 step)``: each part replaced by its exact prox given the others."""
    V = np.array(V, copy=True)
    total = V.sum(axis=0)
    for _ in range(passes):
        for i, part in enumerate(penalty.parts):
            rest = total - V[i]
            V[i] = part.prox(c - rest, step)
            total = rest + V[i]
    return V


def _spectral_rho(rho: float, old: tuple, new: tuple, k: int, correlation: float = 0.2,
                  safeguard: float = 1e10) -> float | None:
    """The spectral penalty parameter from two states ``(W, grad f(W), A V, multiplier)``:
    ``sqrt(a b)`` with ``a``, ``b`` the curvatures of ``f`` and ``h`` (module docstring);
    None when neither curvature is estimated (correlation at most ``correlation``, or a
    proposal that is not a positive number)."""
    a, a_cor = _bb_curvature(new[0] - old[0], new[1] - old[1])
    # the multiplier is minus a subgradient of h at A V: its change against A V's
    b, b_cor = _bb_curvature(new[2] - old[2], old[3] - new[3])
    if a_cor > correlation and b_cor > correlation:
        proposal = np.sqrt(a * b)
    elif a_cor > correlation:
        proposal = a
    elif b_cor > correlation:
        proposal = b
    else:
        return None
    if not (np.isfinite(proposal) and proposal > 0):
        return None
    bound = 1.0 + safeguard / (k * k)
    return float(np.clip(proposal, rho / bound, rho * bound))


def _balanced_rho(rho: float, res_pri: float, res_dual: float, ratio: float,
                  factor: float = 2.0) -> float:
    """Residual balancing (Boyd et al., Sec. 3.4.1): ``rho factor`` when the relative primal
    residual exceeds ``ratio`` times the relative dual one, ``rho / factor`` in the opposite
    case, ``rho`` otherwise (and when ``ratio`` is 0)."""
    if not ratio or not (np.isfinite(res_pri) and np.isfinite(res_dual)):
        return rho
    if res_pri > ratio * res_dual:
        return rho * factor
    if res_dual > ratio * res_pri:
        return rho / factor
    return rho


#: Pairs kept by Anderson's extrapolation
#: (:class:`~multitask.solvers.admm_anderson.AndersonADMM`) where ``anderson=None`` takes it:
#: the split models and the dirty model's norm on ``W``.
ANDERSON_MEMORY = 20
#: While ``rho`` is fixed for the extrapolation, the balancing fallback still runs every this
#: many iterations (the memory restarts where ``rho`` changes): a run can otherwise drift for
#: thousands of iterations at a ``rho`` whose residuals stay ten times apart (the dirty model,
#: q = inf, at MALSAR's example z-scored: 3,450 iterations to 1e-8, 1,700 with it).
REBALANCE_EVERY = 100


#: The residual ratio of the balancing fallback where ``balance=None`` takes it (the split
#: models and the dirty model's norm).
BALANCE_RATIO = 10.0

#: The split models' V-step (``split_passes`` Gauss-Seidel sweeps over the parts) is not the
#: exact prox of the sum, and over-relaxed ADMM with it can circle instead of converging (the
#: same residuals for thousands of iterations: docs/tuning_constants.md,
#: ``benchmarks/diagnose_admm_plateau.py``). There, once the larger relative residual has not
#: halved over this many iterations at one ``rho``, the run goes on with ``r = 1`` (plain
#: ADMM).
PLATEAU_SPAN = 200


def _accelerated_family(penalty: Penalty) -> bool:
    """Whether ``penalty`` is a split model (``penalty.parts``) or the dirty model's norm
    (row-prox family ``"dirty_inf"`` or ``"dirty_2"``): where ``anderson=None`` and
    ``balance=None`` take Anderson's extrapolation and the balancing fallback."""
    family = getattr(penalty, "row_prox_family", None)
    return bool(penalty.parts) or family in ("dirty_inf", "dirty_2")


def _anderson_memory(penalty: Penalty) -> int:
    """The memory ``anderson=None`` gives: :data:`ANDERSON_MEMORY` for
    :func:`_accelerated_family`, 0 (no extrapolation) otherwise."""
    return ANDERSON_MEMORY if _accelerated_family(penalty) else 0


#: Least iterations between two certificates while the compiled iteration runs: a
#: certificate (the duality gap, interpreted) costs about one interpreted iteration but 3 to 4
#: compiled ones (sparse + low rank on the survey problem of
#: ``benchmarks/bench_cv_two_param.py``), so that checking as often as the interpreted loop
#: would spend more than half the run in certificates.
COMPILED_CHECK_GAP = 10

#: Most features for which the compiled trace-norm step runs: its per-task products are plain
#: loops, which beat BLAS's batched products on small matrices only: one step against the
#: interpreted one (``benchmarks/bench_admm_compiled.py``) wins up to ``d = 32`` and loses from
#: ``d = 50`` on (the figures, and those of whole School fits: docs/tuning_constants.md).
COMPILED_TRACE_MAX_FEATURES = 32


class SkiRental:
    """A compiled ADMM iteration run under the ski-rental rule of :mod:`multitask.compiled`:
    while numba's start-up is not worth paying, the interpreted steps run and their time is
    charged against it (:meth:`charge`, :meth:`close`); :meth:`iterate` is the compiled
    iteration, ``None`` where its kernel declines."""

    #: The name of the kernel in :mod:`._admm_trace_numba` (imported on first use).
    _KERNEL = ""
    #: The kernel's last output ``V`` and the nuclear norm it computed there.
    _last: tuple[np.ndarray, float] | None = None

    def __init__(self) -> None:
        from multitask.compiled import interpreted_budget

        self._budget = interpreted_budget()
        self._spent = 0.0
        self._charged = False
        self._kernel: Callable | None = None

    def ready(self) -> bool:
        """Whether the compiled step runs now (the interpreted steps have spent the
        start-up cost, or numba is already set up)."""
        return self._spent >= self._budget

    def charge(self, seconds: float) -> None:
        """Count an interpreted step's time; once it reaches the budget, charge it to the
        process (:func:`multitask.compiled.charge_interpreted`)."""
        self._spent += seconds
        if self._spent >= self._budget:
            self.close()

    def close(self) -> None:
        """Charge the interpreted steps' time to the process (once)."""
        from multitask.compiled import charge_interpreted

        if not self._charged:
            charge_interpreted(self._spent)
            self._charged = True

    def kernel(self) -> Callable:
        """The compiled kernel :data:`_KERNEL`, imported once (numba's import cost is paid
        only by a run that reaches the compiled step)."""
        if self._kernel is None:
            import multitask.solvers._admm_trace_numba as kernels

            self._kernel = getattr(kernels, self._KERNEL)
        return self._kernel

    def iterate(self, penalty: Penalty, eig: EigenSystem, V: np.ndarray, AV: np.ndarray,
                U: np.ndarray, rho: float, r: float):
        """``(W, V, A V, res_pri, res_dual)`` of one compiled iteration (``U`` updated in
        place), or None where the kernel declines (nothing changed)."""
        raise NotImplementedError

    def remember(self, penalty: Penalty, V: np.ndarray) -> None:
        """Before the penalty is evaluated at ``V`` (a certificate, a recorded objective):
        where ``V`` is the kernel's last output, hand the penalty the nuclear norm the kernel
        computed there (:meth:`_hand_over`), so that its value costs no SVD."""
        last = self._last
        if last is not None and last[0] is V:
            self._hand_over(penalty, V, last[1])

    def _hand_over(self, penalty: Penalty, V: np.ndarray, nuclear: float) -> None:
        """Record ``nuclear``, the nuclear norm the kernel computed for its output ``V``,
        in the penalty."""
        raise NotImplementedError


class CompiledTraceStep(SkiRental):
    """The compiled ADMM iteration of the trace norm (:mod:`._admm_trace_numba`), under the
    ski-rental rule (:class:`SkiRental`)."""

    _KERNEL = "trace_admm_step"

    @classmethod
    def applies(cls, penalty: Penalty, identity: bool,
                eig: EigenSystem) -> CompiledTraceStep | None:
        """An instance where the compiled step applies (a ``"spectral_threshold"`` penalty,
        the trace norm; the identity map; at most :data:`COMPILED_TRACE_MAX_FEATURES`
        features), else None."""
        if not identity or "spectral_threshold" not in penalty.capabilities:
            return None
        if eig.QtC.shape[0] > COMPILED_TRACE_MAX_FEATURES:
            return None
        return cls()

    def iterate(self, penalty: Penalty, eig: EigenSystem, V: np.ndarray, AV: np.ndarray,
                U: np.ndarray, rho: float, r: float):
        step = self.step(eig, AV, U, rho, r, penalty.spectral_strength() / rho,
                         int(getattr(penalty, "spectral_kept", 0)))
        if step is None:
            return None
        W, V_new, res_pri, res_dual, norm = step
        self._last = (V_new, norm)
        return W, V_new, V_new, res_pri, res_dual

    def _hand_over(self, penalty: Penalty, V: np.ndarray, nuclear: float) -> None:
        penalty.remember_prox(V, nuclear)

    def step(self, eig: EigenSystem, AV: np.ndarray, U: np.ndarray, rho: float, r: float,
             thresh: float, keep: int = 0):
        """``(W, V, res_pri, res_dual, ||V||_*)`` of one iteration (``U`` updated in place),
        or None where the Gram route cannot resolve a kept singular value or the entries
        lie outside the band where their squares are safe (nothing changed)."""
        ok, W, V, res_pri, res_dual, norm = self.kernel()(
            eig.Q, eig._QT, eig.lam, eig.QtC, np.ascontiguousarray(AV), U, rho, r, thresh,
            GRAM_RTOL, 2.0**SAFE_EXPONENT, keep)
        if not ok:
            return None
        return W, V, float(res_pri), float(res_dual), float(norm)


class _CompiledSparseLowRankStep(SkiRental):
    """The compiled ADMM iteration of sparse + low rank
    (:func:`._admm_trace_numba.sparse_low_rank_admm_step`: the W-step and one Gauss-Seidel
    sweep over the l1 part and the trace ball), under the ski-rental rule
    (:class:`SkiRental`)."""

    _KERNEL = "sparse_low_rank_admm_step"

    @classmethod
    def applies_split(cls, penalty: Penalty, eig: EigenSystem,
                      split_passes: int) -> _CompiledSparseLowRankStep | None:
        """An instance for :class:`~multitask.penalties.composite.SparseLowRank` (the penalty
        named ``"sparse_low_rank"``: an l1 part of strength ``alpha`` and a trace ball of
        ``radius``) with one sweep over its parts and at most
        :data:`COMPILED_TRACE_MAX_FEATURES` features, else None."""
        if getattr(penalty, "name", None) != "sparse_low_rank" or split_passes != 1:
            return None
        if eig.QtC.shape[0] > COMPILED_TRACE_MAX_FEATURES:
            return None
        return cls()

    def iterate(self, penalty: Penalty, eig: EigenSystem, V: np.ndarray, AV: np.ndarray,
                U: np.ndarray, rho: float, r: float):
        radius = float(penalty.radius)  # type: ignore[attr-defined]
        if radius <= 0.0:
            return None
        alpha = float(penalty.alpha)  # type: ignore[attr-defined]
        ok, W, V_new, AV_new, res_pri, res_dual, nuclear = self.kernel()(
            eig.Q, eig._QT, eig.lam, eig.QtC, np.ascontiguousarray(V[0]),
            np.ascontiguousarray(V[1]), U, rho, r, alpha / rho, radius, GRAM_RTOL,
            2.0**SAFE_EXPONENT)
        if not ok:
            return None
        self._last = (V_new, float(nuclear))
        return W, V_new, AV_new, float(res_pri), float(res_dual)

    def _hand_over(self, penalty: Penalty, V: np.ndarray, nuclear: float) -> None:
        penalty.parts[1].remember_prox(V[1], nuclear)  # the trace ball's part


class QuadraticADMM(Solver):
    """ADMM with exact per-task solves for quadratic losses (module docstring).

    Parameters
    ----------
    max_iter, tol : int, float, default=5000, 1e-4
        Iteration budget and tolerance on the relative optimality measure, as in
        :class:`~multitask.solvers.fista.ProximalGradient`.
    rho : float, optional
        Initial penalty parameter (default: the median positive eigenvalue of the ``H_t``).
    relaxation : float, default=1.6
        Over-relaxation ``r`` in ``(0, 2)`` (1 is plain ADMM).
    adaptive : bool, default=True
        Adapt ``rho`` by the spectral rule every ``adapt_every`` iterations.
    adapt_every : int, default=5
        Iterations between two adaptations of ``rho``. Measured on School's 20 schools
        (``benchmarks/bench_certified.py``; iterations to a certified 1e-8, raw / z-scored
        features): every 2 iterations, sparse + low rank took 522 / 149 and rMTFL 112 / 5,210;
        every 5, 203 / 118 and 130 / 4,720 (the other split and norm models within 20% either
        way); every 8, 619 / 130 for sparse + low rank.
    check_every : int, default=10
        Compute the optimality measure at least this often.
    split_passes : int, default=1
        Split models (``W = sum_i V[i]``): the number of Gauss-Seidel sweeps of the V-step over
        the parts (each part's exact prox given the others); ``0`` takes the linearized
        V-step instead (one prox-gradient step on the stacked variable).
    balance : float or None, default=None
        Residual balancing where the spectral rule estimates no curvature: ``rho`` doubled
        (halved) when the relative primal (dual) residual exceeds ``balance`` (at least 1)
        times the other; ``0`` leaves ``rho`` unchanged there; None takes
        :data:`BALANCE_RATIO` for split models and the dirty model's norm, 0 otherwise.
    anderson : int or None, default=None
        Pairs kept by Anderson's extrapolation of the iterates (module docstring); ``0``
        turns it off; None takes :data:`ANDERSON_MEMORY` for split models and the dirty
        model's norm, 0 otherwise.
    anderson_after : int, default=50
        The iteration from which the extrapolation runs (when it does) and ``rho`` stays
        fixed but for the balancing fallback every :data:`REBALANCE_EVERY` iterations.
    warn : bool, default=True
        Warn with ``ConvergenceWarning`` when ``max_iter`` is reached.
    """

    name = "admm"
    max_preference = 72.0
    datafit_requires = frozenset({"quadratic"})
    penalty_requires = frozenset()

    @staticmethod
    def _dirty_claim(problem: Problem) -> bool:
        """Whether :meth:`preference` gives 72: the dirty model's norm on ``W`` with the
        squared loss from :data:`DIRTY_MIN_FEATURES` features or on tasks of fewer rows than
        features."""
        family = problem.row_prox[0] if problem.row_prox else None
        return (family in ("dirty_inf", "dirty_2") and problem.datafit.name == "squared"
                and problem.role == "model"
                and (problem.n_features >= DIRTY_MIN_FEATURES
                     or problem.fewer_rows_than_features))

    @classmethod
    def preference_ceiling(cls, problem: Problem, **settings) -> float:
        """The highest score :meth:`preference` can give ``problem``: 72 for the dirty
        model's claim, 62 otherwise (read before the conditioning estimate)."""
        return 72.0 if cls._dirty_claim(problem) else 62.0

    @classmethod
    def preference(cls, problem: Problem, **settings) -> float | None:
        """62 for a split model (:func:`prefer_admm_split`) or ill-conditioned Gram matrices
        (:func:`prefer_admm`): ahead of accelerated gradient, behind the coordinate descents
        and the closed form; 72 (ahead of block coordinate descent) for the dirty model's norm
        on ``W`` with the squared loss from :data:`DIRTY_MIN_FEATURES` features, or on tasks
        of fewer rows than features (singular Gram matrices: a shared design of ``d / 2 <= n
        < d`` rows, where coordinate descent crawls); 56 with the
        squared loss otherwise for a low-rank penalty (the
        trace norm) or a ``"spectral"`` one (the task-structure relaxations of
        clustered MTL and convex ASO, the task-relationship term), where it applies (few
        features): ahead of accelerated gradient, measured slower there
        (``benchmarks/bench_auto_choice.py``; the figures: docs/tuning_constants.md), but for
        the trace norm on at least :data:`TRACE_STRONG_TASKS` tasks at ``alpha >=``
        :data:`TRACE_STRONG_RATIO` ``alpha_max`` (no claim: accelerated gradient measured
        faster there)."""
        if cls._dirty_claim(problem):
            return 72.0  # ahead of block coordinate descent (70)
        # (the chooser asks a solver that applies: prefer_admm's test without its check)
        wanted = problem.split or problem.fact(
            "admm_ill_conditioned", lambda: ill_conditioned(problem.datafit))
        if wanted:
            return 62.0
        # the trace norm and the task-structure relaxations (clustered MTL, convex ASO, task
        # relationship)
        spectral = problem.penalty_has("low_rank") or problem.penalty_has("spectral")
        if not (spectral and problem.datafit.name == "squared"):
            return None
        strong = (problem.penalty_has("low_rank") and problem.n_tasks >= TRACE_STRONG_TASKS
                  and (problem.strength_ratio or 0.0) >= TRACE_STRONG_RATIO)
        return None if strong else 56.0

    def __init__(self, *, max_iter: int = 5000, tol: float = 1e-4, rho: float | None = None,
                 relaxation: float = 1.6, adaptive: bool = True, adapt_every: int = 5,
                 check_every: int = 10, split_passes: int = 1, balance: float | None = None,
                 anderson: int | None = None, anderson_after: int = 50, warn: bool = True):
        super().__init__(max_iter=max_iter, tol=tol, warn=warn)
        self.split_passes = check_int(split_passes, "split_passes", low=0)
        self.rho = None if rho is None else check_tol(rho, "rho")
        r = float(relaxation)
        if not 0.0 < r < 2.0:
            raise ValueError(f"relaxation must be in (0, 2), got {relaxation!r}.")
        self.relaxation = r
        self.adaptive = bool(adaptive)
        self.adapt_every = check_int(adapt_every, "adapt_every")
        self.check_every = check_int(check_every, "check_every")
        if balance is not None and not (float(balance) >= 1.0 or float(balance) == 0.0):
            raise ValueError(f"balance must be None, 0 or at least 1, got {balance!r}.")
        self.balance = None if balance is None else float(balance)
        self.anderson = None if anderson is None else check_int(anderson, "anderson", low=0)
        self.anderson_after = check_int(anderson_after, "anderson_after", low=0)
        self._eigen: tuple | None = None

    def reuse_eigen(self, H: np.ndarray | None, eig: EigenSystem | None) -> None:
        """Solve the problems whose quadratic form has this very ``H`` (the same array object)
        with the eigendecompositions ``eig`` instead of computing them (a sequence of
        problems that differ in ``C`` only); ``None`` forgets them."""
        self._eigen = None if H is None else (H, eig)

    def solve(self, datafit: Datafit, penalty: Penalty, *, coef_init=None, intercept_init=None,
              callback: Callable | None = None) -> SolverResult:
        """Run ADMM from ``coef_init`` (zeros by default); ``intercept_init`` is unused (the
        quadratic datafit eliminates the intercepts). Where the loss sees no entry of some
        feature rows and the penalty offers ``"row_monotone"`` (sparse + low rank), the run
        is that on the other rows, padded with zero rows
        (:mod:`multitask.solvers.seen_rows`)."""
        rows = seen_rows(datafit, penalty)
        if rows is not None:  # this method again, on the restricted loss
            return on_seen_rows(self.solve, rows, datafit, penalty, coef_init=coef_init,
                                intercept_init=intercept_init, callback=callback)
        # every check_every iterations, and every check_every // 5 while both relative
        # residuals are at most tol
        early = max(1, self.check_every // 5)
        run = IterationRecord(self, datafit, penalty, callback, CertificateSchedule(
            period=self.check_every, early_gap=early, early_start=early))
        A = penalty.linear_map
        identity = isinstance(A, IdentityMap)
        # the V-step makes every iterate feasible: the start needs no projection (a warm start's
        # low-rank part on the trace ball's boundary would take the slow SVD route)
        V, _ = run.start(coef_init, None, project=False)
        eig = self._eigen_system(datafit)
        rho = float(self.rho) if self.rho is not None else eig.positive_median()
        L = lipschitz_bound(datafit, penalty)
        tol = self.tol

        AV = A.forward(V)
        _, gW, _ = datafit.value_and_grad(AV)
        U = np.ascontiguousarray(-gW / rho)
        n_iter = 0
        res_pri = res_dual = np.inf
        anchor = None  # (W, grad f(W), A V, multiplier) at the last adaptation
        W = None  # the W-step iterate: the certificate also builds its dual point from it
        compiled = (CompiledTraceStep.applies(penalty, identity, eig)
                    or _CompiledSparseLowRankStep.applies_split(penalty, eig,
                                                                self.split_passes))
        memory = _anderson_memory(penalty) if self.anderson is None else self.anderson
        ratio = self.balance
        if ratio is None:
            ratio = BALANCE_RATIO if _accelerated_family(penalty) else 0.0
        accel = AndersonADMM(memory, self.anderson_after) if memory else None
        V_out = V  # the last prox output (the iterate reported and certified)
        relax = self.relaxation
        # inexact V-steps (module docstring, PLATEAU_SPAN): (iteration, residual level, rho)
        plateau = ((0, np.inf, rho) if relax > 1.0 and self.split_passes and penalty.parts
                   and not identity else None)
        for k in range(1, self.max_iter + 1):
            n_iter = k
            adapting = self.adaptive and (anchor is None or k % self.adapt_every == 0)
            if accel is not None and accel.frozen(k):
                adapting = False
            if compiled is not None and compiled.ready():
                run.schedule.min_gap = COMPILED_CHECK_GAP
            target = AV - U if adapting else None  # for grad f(W) = rho (A V - U - W)
            V_in, U_in = V, U.copy() if accel is not None else U
            W, V, AV_new, res_pri, res_dual = self._iteration(penalty, eig, compiled, V, AV, U,
                                                              rho, target, relax)
            AV = AV_new
            if plateau is not None:
                level = max(res_pri, res_dual)
                if level <= 0.5 * plateau[1] or rho != plateau[2]:
                    plateau = (k, level, rho)
                elif k - plateau[0] >= PLATEAU_SPAN:
                    relax, plateau = 1.0, None
                    if accel is not None:
                        accel.reset()
            V_out = V
            check = run.due(k, small=res_pri <= tol and res_dual <= tol)
            if compiled is not None and (check or callback is not None):
                compiled.remember(penalty, V)
            if check and run.certify(k, V, None, L=L, target=tol, dual_weights=W) <= tol:
                run.stopped_by = "tol"
            F = float("nan")
            if check or callback is not None:
                # the certificate's primal value is the objective (one pass over the data less)
                cert = run.certificate
                if check and cert is not None and np.isfinite(cert.primal):
                    F = cert.primal
                else:
                    F = datafit.value(AV) + penalty.prox_value(V)
                run.record(F)
            if run.stopped_by == "tol" or run.notify(k, F, V, None):
                break
            if accel is not None and not adapting:
                if accel.frozen(k) and k % REBALANCE_EVERY == 0:
                    balanced = _balanced_rho(rho, res_pri, res_dual, ratio)
                    if balanced != rho:
                        U *= rho / balanced
                        rho = balanced
                        accel.reset()
                        continue
                # Anderson's extrapolation of the fixed-point map (V, U) -> (V', U')
                moved = accel.step(k, V_in, U_in, V, U)
                if moved is not None:
                    V, U = moved
                    AV = A.forward(V)
            if not adapting:
                continue
            grad_W = rho * (target - W)  # = grad f(W): the W-step's optimality condition
            if anchor is None:
                anchor = (W, grad_W, AV, -rho * U)
            else:
                new = _spectral_rho(rho, anchor, (W, grad_W, AV, -rho * U), k)
                if new is None:
                    new = _balanced_rho(rho, res_pri, res_dual, ratio)
                if new != rho:
                    U *= rho / new
                    rho = new
                anchor = (W, grad_W, AV, -rho * U)
            if accel is not None:
                accel.reset()

        if compiled is not None:
            compiled.close()
            compiled.remember(penalty, V_out)
        V = V_out
        converged = run.stopped_by == "tol"
        measure = run.measure
        if not converged:
            measure = optimality(datafit, penalty, V, None, L, self.tol, dual_weights=W)
            converged = measure <= tol
            if run.certified_at != n_iter and callback is None:
                run.record(datafit.value(AV) + penalty.value(V))
        return run.finish(V, None, n_iter=n_iter, converged=converged, measure=measure,
                          dual_weights=W, certificate=run.certificate if run.stopped_by == "tol"
                          else None,
                          info={"rho": rho, "relaxation": relax,
                                "best_objective": run.history[-1] if run.history else np.nan,
                                "stopped_by": run.stopped_by, "primal_residual": res_pri,
                                "dual_residual": res_dual, "identity_map": identity})

    def _eigen_system(self, datafit: Datafit) -> EigenSystem:
        """The eigendecompositions of the datafit's ``H_t`` with its linear terms: those given
        to :meth:`reuse_eigen` for this very ``H``, else the datafit's cached ones (shared
        along a path; they also give the Lipschitz constant)."""
        H, C = datafit.quadratic_form()
        if self._eigen is not None and self._eigen[0] is H:
            return self._eigen[1].with_linear_term(C)
        return EigenSystem(None, C, eigen=datafit.quadratic_eigen())

    def _iteration(self, penalty: Penalty, eig: EigenSystem,
                   compiled: SkiRental | None, V: np.ndarray, AV: np.ndarray,
                   U: np.ndarray, rho: float, target: np.ndarray | None,
                   relax: float | None = None):
        """One iteration of the module docstring, compiled where it runs
        (:class:`CompiledTraceStep`): ``(W, V, A V, relative primal residual, relative dual
        residual)``, the scaled dual ``U`` updated in place. ``target``: ``A V - U`` when
        computed already; ``relax``: the over-relaxation (default ``relaxation``)."""
        r = self.relaxation if relax is None else relax
        if compiled is not None and compiled.ready():
            # the compiled twin of the steps below (trace norm, sparse + low rank)
            out = compiled.iterate(penalty, eig, V, AV, U, rho, r)
            if out is not None:
                return out
        started = time.perf_counter()
        A = penalty.linear_map
        W = eig.solve(target if target is not None else AV - U, rho)
        Wr = r * W + (1.0 - r) * AV
        if isinstance(A, IdentityMap):
            V_new = penalty.prox(Wr + U, 1.0 / rho)
        elif self.split_passes and penalty.parts:
            V_new = _part_passes(penalty, V, Wr + U, 1.0 / rho, self.split_passes)
        else:
            tau = 1.01 * A.norm_sq
            V_new = penalty.prox(V - A.adjoint(AV - Wr - U) / tau, 1.0 / (rho * tau))
        AV_new = A.forward(V_new)
        U += Wr - AV_new
        # residuals of W = A V (Boyd et al., Sec. 3.3), relative to the iterates' scale
        tiny = np.finfo(float).tiny
        res_pri = _norm(W - AV_new) / max(_norm(W), _norm(AV_new), tiny)
        change, n_u = _norm(AV_new - AV), _norm(U)
        # a zero multiplier (a zero penalty): no relative scale, infinite unless no change
        res_dual = change / n_u if n_u > tiny else (0.0 if change == 0 else np.inf)
        if compiled is not None:
            compiled.charge(time.perf_counter() - started)
        return W, V_new, AV_new, res_pri, res_dual
