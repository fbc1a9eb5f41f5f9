"""Active-set Newton for a quadratic loss, a quadratic task coupling and elastic-net rows.

The model is that of block coordinate descent (:mod:`multitask.solvers.bcd`) for the
elastic-net row family::

    min_W  F(W) = sum_t (0.5 w_t^T H_t w_t - C_t^T w_t) + tr(W K W^T) / 2
                  + sum_j (a_j ||W_j.||_1 + b_j ||W_j.||_2 + (c_j / 2) ||W_j.||_2^2)

(``H_t`` the loss's per-task Gram matrices, ``K`` the penalty's ``"task_coupling"``, ``2 alpha
L`` for the graph term ``alpha tr(W L W^T)`` and the temporal term of the temporal group
lasso). Where the coupling dominates the data's curvature, coordinate steps crawl: each entry
or row moves by what the others allow. Here the whole quadratic is solved at once on a guess
of the support, the iterate's nonzero entries (the nonzero rows of the group rows, ``a_j = 0
< b_j``), and the guess is corrected until the certificate holds:

1. **Support.** With ``G = H W - C + W K + c W`` the smooth gradient, a zero entry of an l1
   row enters when ``|G_jt| > a_j`` (with the sign ``-sign(G_jt)``), a zero group row when
   ``||soft(G_j., a_j)||_2 > b_j`` (at the best multiple of the row's minimizer without its
   group term, the others fixed, :meth:`_Steps._entering_row`, halved until ``F`` falls;
   the falls of ``F`` are computed as differences, :meth:`_Model.change`); a nonzero group row
   leaves when zero is its exact minimizer with the others fixed,
   ``||soft(A_j w_j - G_j., a_j)||_2 <= b_j`` (``A_j = diag_t(H_t[j, j]) + K + c_j I``, the
   row's block of the Hessian), kept when ``F`` falls. For a chain of tasks whose rows'
   blocks dominate (the last step preconditioned by rows, step 2, and its conjugate gradients
   converged within :data:`SWITCH_CG` iterations), the nonzero group rows (without
   l1 term) that the last Newton direction turned by more than :data:`ROTATION` times their
   norm are set to their exact minimizers with the others fixed (:meth:`_Model.
   row_minimizer`, all at once, kept when ``F`` falls): the Newton model prices a turn of a
   small row at its curvature ``b_j / ||w_j||``, where the norm grows by much less than that
   once the turn passes the row's norm, and the rows would turn by a fraction of the way per
   step.
2. **Newton step on the support** ``E`` (signs ``s`` fixed): the reduced objective
   ``F_E(W) = q(W) + sum a_j s^T W_j. + b_j ||W_j.||_2`` is smooth there (a quadratic for l1
   rows), with gradient ``g = (G + a s + b W_j. / ||W_j.||) on E`` and Hessian ``H + K + c +
   (b_j / ||w_j||) (I - u_j u_j^T)`` (``u_j = w_j / ||w_j||``). The direction ``D`` solves
   ``Hess D = -g`` on ``E`` by conjugate gradients preconditioned by the exact inverses of
   the rows' blocks (``A_j`` plus the group term, restricted to the row's support): the
   coupling of the tasks lies inside a block, and what couples the blocks is the data's
   correlation of the features, so the iterations stay few however strong the coupling.
   Where the coupling is weaker than the typical feature's curvature (``lambda_max(K) <
   median_j mean_t H_t[j, j]``) the tasks' blocks ``H_t + K_tt I + diag(c + beta)`` on the
   task's support precondition instead (the data's correlations inside a block). The rows'
   blocks are applied in closed form for the complete graph of equal weights (Sherman-Morrison)
   and by one tridiagonal factorization for a chain of tasks (the temporal group lasso); the
   tasks' blocks are inverted all at once (:func:`~multitask.solvers.masked_inverse.
   masked_inverses`), again only for the tasks whose support changed, and by rank-one updates
   where a task's support moved by at most :data:`UPDATE_CHANGES` features (a thread's next
   run on the same ``H``, the next fit of a path, starts from them: :data:`KEEP_INVERSES`);
   the group terms ``-beta_j u_j u_j^T``, which couple a row's tasks, are put back into the
   tasks' preconditioner by Woodbury's identity (:meth:`_Steps._group_corrected`). Where a
   step's
   conjugate gradients pass :data:`SWITCH_CG` iterations, the step is solved again with the
   other preconditioner for as many iterations; the run of the smaller residual goes on, and
   the preconditioner of fewer iterations per step is kept. For the complete graph of equal
   weights without group rows (the default graph model) neither is needed: its coupling
   ``k_0 I - k_1 11^T`` is the tasks' blocks less a term of rank ``d``, and Woodbury's
   identity gives the Hessian's inverse from the tasks' inverses
   (:meth:`_Steps._complete_inverse`; up to :data:`WOODBURY_FEATURES` features): one or two
   iterations per step. The conjugate gradients stop at a relative residual ``eta``, 0.3 at
   first, then 0.3 times the last certified gap (inexact Newton: the support and the group
   rows, not the accuracy of the direction, set the number of steps), a hundred times
   smaller after a step that could not lower ``F``.
3. **Line search**: ``W + s D`` with the entries whose sign leaves ``s`` set to zero (the
   orthant projection) and the group rows that turn through zero (``<w_j + s d_j, w_j> <=
   0``) set to zero, ``s`` halved from 1 until ``F`` falls (Armijo), or until the fall the
   slope promises, ``s |<g, D>|``, is below the rounding of the rows' terms (no step).

With ``head_start`` the run begins with that many epochs of block coordinate descent (its
own certificate; the run ends there when it holds) and the Newton steps start from their
point: ``solver="auto"`` takes it so where it claims a model for its data's conditioning.

The certified relative duality gap (:mod:`multitask.solvers.base`) is computed after every
step that left the support unchanged and took the full Newton step (on l1 rows: the exact
minimizer on the support), and at least every :data:`CERTIFY_EVERY` steps; the run stops when
it is at most ``tol``, or, unconverged and with a warning, after :data:`STALL_STEPS` steps
without a fall of ``F`` (rounding). A step that cannot lower ``F`` hands over to
:data:`FALLBACK_EPOCHS` epochs of block coordinate descent
(:func:`~multitask.solvers.bcd.quadratic_row_descent`), which move the support where the
guess was wrong. The method is the primal-dual active set strategy of Hintermueller, Ito &
Kunisch ("The primal-dual active set strategy as a semismooth Newton method"), globalized by
the line search.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import scipy.linalg
import scipy.linalg.lapack
import scipy.sparse

from multitask.losses import Datafit
from multitask.penalties.base import Penalty
from multitask.solvers.base import (
    Solver,
    apply_per_task,
    check_int,
    measure_lipschitz,
)
from multitask.solvers.bcd import BlockCoordinateDescent, quadratic_row_descent, row_strengths
from multitask.solvers.iteration import IterationRecord
from multitask.solvers.masked_inverse import (
    add_feature,
    drop_feature,
    inverse_psd,
    inverse_psd_conditioned,
    masked_inverses_exact,
)
from multitask.solvers.problem import Problem, median
from multitask.solvers.result import SolverResult

__all__ = ["CERTIFY_EVERY", "COUPLING_RATIO", "CURVATURE_SPREAD", "FALLBACK_EPOCHS",
           "HEAD_START", "KEEP_INVERSES", "MIN_TASKS", "REFRESH_UPDATES", "ROTATION",
           "STALL_STEPS",
           "SWITCH_CG", "UPDATE_CHANGES", "WOODBURY_FEATURES", "ActiveSetNewton",
           "coupling_ratio", "curvature_spread"]

#: Newton steps between two certificates at most (they are also computed after every step
#: that kept the support and took the full step).
CERTIFY_EVERY = 10

#: Epochs of block coordinate descent when a Newton step cannot lower the objective.
FALLBACK_EPOCHS = 20

#: Steps in a row without a fall of the objective (nor a change of the support) after which
#: the run stops: rounding bounds what the steps can still gain.
STALL_STEPS = 5

#: Conjugate-gradient iterations of a Newton step above which the other preconditioner (by
#: tasks instead of by rows, or the reverse) is tried on the next step.
SWITCH_CG = 30

#: Features up to which the Newton steps of the complete graph (without group rows) take the
#: Hessian's inverse by Woodbury's identity (:meth:`_Steps._complete_inverse`): its set-up
#: inverts one ``d x d`` block per task, about ``d`` products by the Hessian, and keeps ``m d^2``
#: numbers; beyond, the preconditioners by rows or by tasks and their conjugate gradients.
WOODBURY_FEATURES = 64

#: Relative residual of the first Newton steps' conjugate gradients, and the factor of the
#: certified gap that bounds it after a certificate (inexact Newton's forcing term).
_FORCING_START = 0.3
_FORCING = 0.3

#: Factor of the forcing term after a step that could not lower ``F`` (a direction too rough
#: near the rounding of ``F``).
_TIGHTEN = 1e-2

#: Features by which a task's support may have moved for its block's inverse to follow by
#: rank-one updates (:meth:`_Steps._task_inverses`) rather than be computed again.
UPDATE_CHANGES = 4

#: Rank-one updates after which a task's inverse is computed again (the rounding they add).
REFRESH_UPDATES = 32

#: Turn of a group row by the Newton direction (the part of ``d_j`` orthogonal to ``w_j``,
#: relative to ``||w_j||``) above which the next support update sets the row to its exact
#: minimizer with the others fixed (a chain of tasks; module docstring, step 1).
ROTATION = 0.3

#: Newton iterations on a row's secular equation at most (:meth:`_Model.row_minimizer`).
_ROW_ITERATIONS = 50

#: Halvings of the step of the line search before it gives up.
_MAX_HALVINGS = 40


class _Model:
    """The quadratic model of the module docstring: ``H``, ``C``, ``K`` and the rows'
    strengths ``(a, b, c)``, with the objective, the smooth gradient and the rows' blocks."""

    def __init__(self, datafit: Datafit, penalty: Penalty, d: int, m: int):
        H, C = datafit.quadratic_form()
        self.H = np.ascontiguousarray(H, dtype=np.float64)
        self.C = np.ascontiguousarray(C, dtype=np.float64)
        if "task_coupling" in penalty.capabilities:
            self.K = np.ascontiguousarray(penalty.task_coupling(), dtype=np.float64)
        else:
            self.K = np.zeros((m, m))
        if self.K.shape != (m, m):
            raise ValueError(f"The {penalty.name} penalty's task coupling has shape "
                             f"{self.K.shape}, expected ({m}, {m}).")
        _, params = row_strengths(penalty, d)
        self.a, self.b, self.c = (np.ascontiguousarray(params[:, k]) for k in range(3))
        self.diag = np.broadcast_to(np.diagonal(self.H, axis1=1, axis2=2), (m, d)).T.copy()
        self.k_top = _coupling_top(penalty, self.K)
        self.l1_rows = self.a > 0
        self.group_rows = self.b > 0
        self.any_l1, self.any_group = bool(self.l1_rows.any()), bool(self.group_rows.any())
        #: whether ``K`` is tridiagonal (a chain of tasks)
        self.tridiagonal = m > 2 and not np.any(np.triu(self.K, 2))
        self._k_main, self._k_off = np.diag(self.K).copy(), np.diag(self.K, 1).copy()
        #: ``K^T`` as a sparse matrix for a chain's coupling (:meth:`times_K`)
        self._chain_T = scipy.sparse.csr_array(self.K.T) if self.tridiagonal else None
        #: ``(k_0, k_1)`` of a coupling ``K = k_0 I - k_1 11^T``, else None
        self.complete: tuple[float, float] | None = None
        if m > 1:
            k1 = -float(self.K[0, 1])
            k0 = float(self.K[0, 0]) + k1
            rebuilt = k0 * np.eye(m) - k1
            if np.allclose(self.K, rebuilt, rtol=1e-12, atol=1e-14 * abs(self.K[0, 0])):
                self.complete = (k0, k1)

    def times_K(self, V: np.ndarray) -> np.ndarray:
        """``V K``: ``k_0 V - k_1 (V 1) 1^T`` for the complete graph's coupling, ``(K^T
        V^T)^T`` by a sparse product for a chain's, a dense product otherwise."""
        if self.complete is not None:
            k0, k1 = self.complete
            return k0 * V - k1 * V.sum(axis=1, keepdims=True)
        if self._chain_T is not None:
            return (self._chain_T @ V.T).T
        return V @ self.K

    def smooth(self, W: np.ndarray) -> tuple[float, np.ndarray]:
        """``(q(W), grad q(W))`` with ``q(W) = sum_t 0.5 w_t^T H_t w_t - C_t^T w_t + tr(W K
        W^T) / 2 + sum_j (c_j / 2) ||W_j.||^2``."""
        HW = apply_per_task(self.H, W) + self.times_K(W) + self.c[:, None] * W
        return 0.5 * float(np.vdot(W, HW)) - float(np.vdot(self.C, W)), HW - self.C

    def rows_value(self, W: np.ndarray) -> float:
        """``sum_j a_j ||W_j.||_1 + b_j ||W_j.||_2``."""
        out = float(self.a @ np.abs(W).sum(axis=1)) if self.any_l1 else 0.0
        return out + float(self.b @ np.linalg.norm(W, axis=1)) if self.any_group else out

    def value(self, W: np.ndarray) -> float:
        return self.smooth(W)[0] + self.rows_value(W)

    def change(self, W: np.ndarray, G: np.ndarray, step: np.ndarray,
               rows_W: float | None = None) -> float:
        """``F(W + step) - F(W)`` for ``G`` the smooth gradient at ``W``: ``<G, step> +
        q_2(step) / 2`` (``q_2`` the quadratic form of ``q``) plus the change of the rows'
        terms, without the cancellation of the difference of two values of ``F`` (whose
        terms grow with the coupling)."""
        Hs = apply_per_task(self.H, step) + self.times_K(step) + self.c[:, None] * step
        return (float(np.vdot(G, step)) + 0.5 * float(np.vdot(step, Hs))
                + self.rows_value(W + step)
                - (self.rows_value(W) if rows_W is None else rows_W))

    def row_minimizer(self, j: int, p: np.ndarray, start: float) -> np.ndarray | None:
        """``argmin_w 0.5 w^T A_j w - p^T w + b_j ||w||_2`` for a chain's coupling (``A_j``
        tridiagonal, :meth:`block`): zero where ``||p|| <= b_j``, else ``w = (A_j + lam
        I)^{-1} p`` with ``lam = b_j / ||w||``, the root of the concave ``psi(lam) = 1 / ||w(lam)||
        - lam / b_j`` by Newton's method safeguarded by bisection, from ``lam = b_j /
        start``. None where a factorization fails or the root is not reached."""
        b = float(self.b[j])
        if not float(np.linalg.norm(p)) > b:
            return np.zeros_like(p)
        main = self.diag[j] + self.c[j] + self._k_main
        lam, low, high = b / start, 0.0, np.inf
        for _ in range(_ROW_ITERATIONS):
            dl, ll, info = scipy.linalg.lapack.dpttrf(main + lam, self._k_off)
            if info != 0:
                return None
            w, _ = scipy.linalg.lapack.dpttrs(dl, ll, p)
            norm = float(np.linalg.norm(w))
            psi = 1.0 / norm - lam / b
            if abs(psi) * norm <= 1e-12:
                return w
            if psi > 0:
                low = lam
            else:
                high = lam
            q, _ = scipy.linalg.lapack.dpttrs(dl, ll, w)
            slope = float(w @ q) / norm ** 3 - 1.0 / b
            lam = lam - psi / slope if slope < 0 else np.nan
            if not low < lam < high:
                lam = 0.5 * (low + high) if np.isfinite(high) else 2.0 * max(low, lam, 1e-300)
        return None

    def row_solve(self, j: int, s: np.ndarray) -> tuple[np.ndarray, float]:
        """``(v, v^T A_j v)`` with ``v = A_j^{-1} s`` (:meth:`block`, all tasks): by a
        tridiagonal factorization for a chain's coupling, else a dense one (the
        pseudo-inverse where ``A_j`` is singular)."""
        if self.tridiagonal:
            main = self.diag[j] + self.c[j] + self._k_main
            dl, ll, info = scipy.linalg.lapack.dpttrf(main, self._k_off)
            if info == 0:
                v, _ = scipy.linalg.lapack.dpttrs(dl, ll, s)
                Av = main * v
                Av[1:] += self._k_off * v[:-1]
                Av[:-1] += self._k_off * v[1:]
                return v, float(v @ Av)
        A = self.block(j, np.arange(len(s)))
        v = _solve_psd(A, s)
        return v, float(v @ A @ v)

    def block(self, j: int, tasks: np.ndarray) -> np.ndarray:
        """``A_j = diag_t(H_t[j, j]) + K + c_j I`` restricted to ``tasks``."""
        A = self.K[np.ix_(tasks, tasks)].copy()
        A[np.diag_indices_from(A)] += self.diag[j, tasks] + self.c[j]
        return A


def _coupling_top(penalty: Penalty, K: np.ndarray) -> float:
    """``lambda_max(K)``: the Lipschitz constant of the penalty's smooth part where it declares
    one (the task coupling is that part), else from the eigenvalues of ``K``."""
    if "smooth" in penalty.capabilities and "task_coupling" in penalty.capabilities:
        top = float(penalty.smooth_lipschitz())
        if np.isfinite(top):
            return max(top, 0.0)
    return max(float(np.linalg.eigvalsh(K)[-1]), 0.0) if K.size else 0.0


def _solve_psd(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``A^{-1} b`` for a symmetric positive semi-definite ``A`` (Cholesky; the pseudo-inverse
    where it is singular)."""
    try:
        L = scipy.linalg.cho_factor(A, lower=True, check_finite=False)
        return scipy.linalg.cho_solve(L, b, check_finite=False)
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
        return inverse_psd(A) @ b


class ActiveSetNewton(Solver):
    """Active-set Newton with preconditioned conjugate gradients for a quadratic loss, a
    quadratic task coupling and elastic-net rows (module docstring).

    Parameters
    ----------
    max_iter : int, default=1000
        Newton steps (each with its line search; the fallback epochs count one step).
    tol : float, default=1e-4
        Tolerance on the certified relative duality gap.
    cg_max_iter : int, default=500
        Conjugate-gradient iterations per Newton step at most.
    head_start : int, default=0
        Epochs of block coordinate descent (:class:`~multitask.solvers.bcd.
        BlockCoordinateDescent`, its own certificates, the same ``tol``) before the first
        Newton step: where coordinate descent converges within them the run stops there, at
        coordinate descent's cost; where it crawls the Newton steps take over from its
        point (they count as one step; at most ``max_iter`` epochs).
        ``solver="auto"`` sets :data:`HEAD_START` where it claims a model for its data's
        conditioning (:meth:`preference`), 0 where it claims one for its coupling.
    warn : bool, default=True
    """

    name = "active_newton"
    max_preference = 75.0
    datafit_requires = frozenset({"quadratic"})
    penalty_requires = frozenset({"row_prox"})
    handles_smooth_part = True

    @classmethod
    def preference_ceiling(cls, problem: Problem, **settings) -> float:
        """The highest score :meth:`preference` can give ``problem``: 75 for a whole model
        with a task coupling, ``-inf`` (no claim) otherwise (read before its requirements
        and its curvature facts)."""
        if problem.role != "model" or not problem.penalty_has("task_coupling"):
            return float("-inf")
        return 75.0

    @classmethod
    def preference(cls, problem: Problem, **settings) -> float | None:
        """75 (ahead of block coordinate descent) for a whole model whose rows are l1 rows
        or group rows (``a_j b_j = 0``: the graph model, the temporal group lasso) where
        coordinate steps crawl; no claim otherwise. Two cases:

        * **the coupling**: a task coupling that dominates the typical feature's curvature,
          ``lambda_max(K) >= COUPLING_RATIO * median_j mean_t H_t[j, j]`` (the features of
          zero curvature left out), with at least :data:`MIN_TASKS` tasks. Measured
          (``benchmarks/bench_cv_two_param.py``, and the paths of the default grids at each
          coupling strength on School's raw features and on generated tasks of standardized
          features): on School faster than block coordinate descent at every strength above
          the threshold for both models (the graph model alike near the threshold, slower
          below it); on generated tasks faster or alike from 100 tasks on, slower for 30
          tasks and fewer (whose coordinate descent needs few epochs whatever the coupling)
          and on the small data sets of the solver-choice table.
        * **the data's conditioning**, with a head start of :data:`HEAD_START` epochs of
          coordinate descent (:meth:`auto_settings`): features whose curvatures spread over
          orders of magnitude, ``max_j h_j >= CURVATURE_SPREAD * median_j h_j`` with ``h_j =
          mean_t H_t[j, j]`` (raw features of different units, an uncentred column of ones),
          where coordinate descent can take thousands of epochs through the features'
          correlations. Measured (the temporal group lasso on School's first 20 schools,
          the strengths of ``benchmarks/bench_certified.py --sweep``): at MALSAR's example on
          raw features coordinate descent takes 1,157 epochs, the Newton steps 10; at the
          other 25 raw points coordinate descent converges within its head start.
        """
        if problem.role != "model" or not problem.penalty_has("task_coupling"):
            return None
        family, (a, b, _) = problem.row_prox or ("elastic_net", (0, 0, 0))
        if family != "elastic_net" or bool(np.any(np.asarray(a) * np.asarray(b))):
            return None
        if _coupled_claim(problem):
            return 75.0
        spread = problem.fact("curvature_spread", lambda: curvature_spread(problem))
        return 75.0 if spread >= CURVATURE_SPREAD else None

    def __init__(self, *, max_iter: int = 1000, tol: float = 1e-4, cg_max_iter: int = 500,
                 head_start: int = 0, warn: bool = True):
        super().__init__(max_iter=max_iter, tol=tol, warn=warn)
        self.cg_max_iter = check_int(cg_max_iter, "cg_max_iter")
        self.head_start = check_int(head_start, "head_start", low=0)

    @classmethod
    def auto_settings(cls, problem: Problem, **settings) -> dict:
        """``head_start=HEAD_START`` where :meth:`preference` claims the model for its data's
        conditioning rather than for its coupling."""
        return {"head_start": 0 if _coupled_claim(problem) else HEAD_START}

    def missing(self, datafit: Datafit, penalty: Penalty) -> list[str]:
        out = super().missing(datafit, penalty)
        if "smooth" in penalty.capabilities and "task_coupling" not in penalty.capabilities:
            out.append(f"the {penalty.name} penalty has a smooth part that is not a task "
                       f"coupling ('task_coupling'), which {self.name!r} does not handle")
        if not getattr(penalty.linear_map, "norm_sq", 1.0) == 1.0 or penalty.parts:
            out.append(f"the {penalty.name} penalty acts on a split variable, not on W")
        family = getattr(penalty, "row_prox_family", "elastic_net")
        if "row_prox" in penalty.capabilities and family != "elastic_net":
            out.append(f"the {penalty.name} penalty's rows are of the {family!r} family, not "
                       "the elastic net")
        return out

    def solve(self, datafit: Datafit, penalty: Penalty, *, coef_init=None, intercept_init=None,
              callback: Callable | None = None) -> SolverResult:
        """Run the head start, then the Newton steps (``callback`` after each Newton step,
        not during the head start); ``intercept_init`` is unused (the quadratic datafit
        eliminates the intercepts)."""
        run = IterationRecord(self, datafit, penalty, callback)
        W, _ = run.start(coef_init, None)
        W = np.ascontiguousarray(W, dtype=np.float64)
        head_epochs = 0
        if self.head_start:
            head = BlockCoordinateDescent(max_iter=min(self.head_start, self.max_iter),
                                          tol=self.tol,
                                          warn=False).solve(datafit, penalty, coef_init=W)
            head_epochs = int(head.n_iter)
            if head.converged:  # certified by coordinate descent itself: its result
                head.info.update(solver=self.name, newton_steps=0, fallback_steps=0,
                                 cg_iterations=0, head_start_epochs=head_epochs)
                return head
            W = np.ascontiguousarray(head.coef, dtype=np.float64)
            run.record(datafit.value(W) + penalty.value(W))
        d, m = W.shape
        model = _Model(datafit, penalty, d, m)
        steps = _Steps(model, self.cg_max_iter)
        L = measure_lipschitz(datafit, penalty)
        F = model.value(W)
        # F and the objective differ by a constant (the loss's terms without W): the history
        # records F plus it, and the objective itself at the end
        offset = datafit.value(W) + penalty.value(W) - F
        converged, k, since, stalled = False, 0, 0, 0
        counts = {"newton": 0, "fallback": 0, "cg": 0, "head_start": head_epochs}
        eta = _FORCING_START
        first = 2 if self.head_start else 1  # the head start counts as one step
        k = first - 1
        for k in range(first, self.max_iter + 1):
            W, F, changed = steps.support(W, F)
            W_new, F_new, full, n_cg = steps.newton(W, F, eta)
            counts["cg"] += n_cg
            if W_new is None:  # no descent on this support: certify, else coordinate epochs
                since = 0
                measure = run.certify(k, W, None, L=L, target=self.tol)
                if measure <= self.tol:
                    converged = True
                    run.record(F + offset)
                    break
                eta = max(_TIGHTEN * eta, 1e-13)  # the direction may have been too rough
                W_new = np.array(W, order="C")
                quadratic_row_descent(model.H, model.C, W_new, penalty,
                                      max_epochs=FALLBACK_EPOCHS, tol=1e-16)
                F_new, full = F + model.change(W, model.smooth(W)[1], W_new - W), False
                counts["fallback"] += 1
            else:
                counts["newton"] += 1
            stalled = stalled + 1 if F_new >= F and not changed else 0
            if stalled:
                eta = max(_TIGHTEN * eta, 1e-13)
            W, F = W_new, F_new
            run.record(F + offset)
            since += 1
            if (full and not changed) or since >= CERTIFY_EVERY or stalled >= STALL_STEPS:
                since = 0
                measure = run.certify(k, W, None, L=L, target=self.tol)
                if measure <= self.tol:
                    converged = True
                    break
                eta = max(min(eta, _FORCING * measure), 1e-13)
            if stalled >= STALL_STEPS or run.notify(k, run.history[-1], W, None):
                break
        if run.measure is None or run.certified_at != k:
            converged = run.certify(k, W, None, L=L, target=self.tol) <= self.tol
        if len(run.history) > (1 if self.head_start else 0):
            run.history[-1] = datafit.value(W) + penalty.value(W)
        return run.finish(W, None, n_iter=k, converged=converged, measure=run.measure,
                          exhausted=not converged and (k >= self.max_iter
                                                       or stalled >= STALL_STEPS),
                          what="the objective stopped falling: rounding bounds the accuracy"
                          if stalled >= STALL_STEPS else "",
                          info={"best_objective": run.history[-1] if run.history else np.nan,
                                "newton_steps": counts["newton"],
                                "fallback_steps": counts["fallback"],
                                "cg_iterations": counts["cg"],
                                "head_start_epochs": counts["head_start"]})


#: ``lambda_max(K)`` over the typical feature's curvature from which
#: :class:`ActiveSetNewton` claims a coupled model (:func:`coupling_ratio`).
COUPLING_RATIO = 5.0

#: Tasks from which :class:`ActiveSetNewton` claims a coupled model.
MIN_TASKS = 50


#: Epochs of block coordinate descent before the Newton steps where ``solver="auto"`` takes
#: :class:`ActiveSetNewton` for the data's conditioning (``head_start``).
HEAD_START = 100

#: ``max_j h_j / median_j h_j`` (``h_j`` the mean curvature of feature ``j`` over the tasks)
#: from which :class:`ActiveSetNewton` claims a coupled model for its data's conditioning.
CURVATURE_SPREAD = 100.0


def _coupled_claim(problem: Problem) -> bool:
    """Whether the coupling case of :meth:`ActiveSetNewton.preference` holds."""
    if problem.n_tasks < MIN_TASKS:
        return False
    return problem.fact("coupling_ratio", lambda: coupling_ratio(problem)) >= COUPLING_RATIO


def _feature_curvatures(problem: Problem) -> np.ndarray:
    """``h_j = mean_t H_t[j, j]`` over the features of positive curvature (a fact of the
    problem, read by :func:`curvature_spread` and :func:`coupling_ratio`)."""
    def compute() -> np.ndarray:
        h = np.asarray(problem.datafit.quadratic_diagonal(), dtype=np.float64).mean(axis=0)
        return h[h > 0]
    return problem.fact("feature_curvatures", compute)


def curvature_spread(problem: Problem) -> float:
    """``max_j h_j / median_j h_j`` with ``h_j = mean_t H_t[j, j]`` over the features of
    positive curvature (1 when there are none): how far the features' curvatures spread."""
    h = _feature_curvatures(problem)
    return float(h.max() / median(h)) if h.size else 1.0


def coupling_ratio(problem: Problem) -> float:
    """``lambda_max(K) / median_j h_j`` with ``h_j = mean_t H_t[j, j]`` over the features of
    positive curvature (``inf`` when there are none): how much the task coupling ``K`` of the
    penalty dominates the curvature of a typical feature of the loss."""
    top = _coupling_top(problem.penalty, np.asarray(problem.penalty.task_coupling(),
                                                    dtype=np.float64))
    h = _feature_curvatures(problem)
    return top / median(h) if h.size else float("inf")


#: Entries ``m d^2`` of the tasks' inverses up to which a thread keeps its last run's
#: (:func:`_adopt_task_inverses`).
KEEP_INVERSES = 1 << 22

_recent = threading.local()


def _adopt_task_inverses(steps: _Steps) -> None:
    """Give ``steps`` the tasks' inverses of this thread's last run where its ``H`` is the
    same (equal entries: the fits of a path, or of a grid, on one fold), and keep ``steps``
    as the last run. The inverses carry the supports, shifts and ``c + beta`` they were
    computed for (:meth:`_Steps._task_inverses`), so a task's inverse is reused exactly where
    its block is the same and computed again otherwise."""
    H = steps.model.H
    if H.shape[0] * H.shape[1] ** 2 > KEEP_INVERSES:
        return
    last = getattr(_recent, "steps", None)
    _recent.steps = steps
    if (last is None or last._task_inv is None or last.model.H.shape != H.shape
            or last.model.C.shape != steps.model.C.shape
            or not np.array_equal(last.model.H, H)):
        return
    steps._task_inv, steps._task_E = last._task_inv, last._task_E
    steps._task_extra, steps._task_shift = last._task_extra, last._task_shift
    steps._task_exact, steps._task_updates = last._task_exact, last._task_updates
    last._task_inv = None  # one owner at a time: the arrays are updated in place


class _Steps:
    """The support updates and the Newton steps of :class:`ActiveSetNewton` on a model."""

    def __init__(self, model: _Model, cg_max_iter: int):
        self.model = model
        self.cg_max_iter = cg_max_iter
        self.signs = np.zeros_like(model.C)
        self._cache: dict[int, tuple[bytes, np.ndarray]] = {}
        #: the tasks' blocks' inverses, with the supports and ``c + beta`` they were
        #: computed for (:meth:`_task_inverses`)
        self._task_inv: np.ndarray | None = None
        self._task_E = np.zeros((0, 0), dtype=bool)
        self._task_extra = np.zeros((0, 0))
        self._task_shift = np.zeros(0)
        self._task_exact = np.zeros(0, dtype=bool)
        self._task_updates = np.zeros(0, dtype=np.int64)
        _adopt_task_inverses(self)
        #: precondition by the rows' blocks (the coupling at least the typical feature's
        #: curvature), else by the tasks' (module docstring)
        h = model.diag.mean(axis=1)
        h = h[h > 0]
        self.by_rows = not h.size or model.k_top >= float(np.median(h))
        #: conjugate-gradient iterations of the steps under each preconditioner (by rows:
        #: True, by tasks: False), for :meth:`_choose_preconditioner`
        self._cg_counts: dict[bool, list[int]] = {True: [], False: []}
        #: changes of the tasks' inverses so far, and the Woodbury capacitance's inverse with
        #: the ``(version, k_1)`` it was computed for (:meth:`_complete_inverse`)
        self._task_version = 0
        self._capacitance: tuple[tuple[int, float], np.ndarray] | None = None
        #: ``(W, G)``: the smooth gradient the last support update left at its point
        self._known: tuple[np.ndarray, np.ndarray] | None = None
        #: the group rows the last Newton direction turned by more than ROTATION (a chain)
        self._turned = np.zeros(0, dtype=np.int64)

    # ------------------------------------------------------------------ support
    def support(self, W: np.ndarray, F: float) -> tuple[np.ndarray, float, bool]:
        """Rows that leave, entries and rows that enter (module docstring, step 1); returns
        ``(W, F, whether the support changed)``."""
        md = self.model
        _, G = md.smooth(W)
        changed, fresh = False, True  # fresh: G is the gradient at W
        nrm = np.linalg.norm(W, axis=1)
        # group rows whose exact row minimizer is zero
        leave = np.flatnonzero(md.group_rows & (nrm > 0))
        if leave.size:
            own = md.diag * W + md.times_K(W) + md.c[:, None] * W  # A_j w_j, row by row
            V = own[leave] - G[leave]
            soft = np.sign(V) * np.maximum(np.abs(V) - md.a[leave, None], 0.0)
            leave = leave[np.linalg.norm(soft, axis=1) <= md.b[leave]]
            if leave.size:
                step = np.zeros_like(W)
                step[leave] = -W[leave]
                dF = md.change(W, G, step)
                if dF <= 0:
                    W, F, changed = W + step, F + dF, True
                    _, G = md.smooth(W)
                    nrm = np.linalg.norm(W, axis=1)
        # zero group rows that enter (module docstring, step 1)
        enter = np.zeros(0, dtype=np.int64)
        if md.any_group:
            S = np.sign(G) * np.maximum(np.abs(G) - md.a[:, None], 0.0)
            snrm = np.linalg.norm(S, axis=1)
            enter = np.flatnonzero(md.group_rows & (nrm == 0) & (snrm > md.b))
        if enter.size:
            step = np.zeros_like(W)
            for j in enter:
                step[j] = self._entering_row(int(j), S[j], float(snrm[j]))
            for _ in range(_MAX_HALVINGS):
                dF = md.change(W, G, step)
                if dF < 0:
                    W, F, changed, fresh = W + step, F + dF, True, False
                    break
                step = 0.5 * step
        turned, self._turned = self._turned, np.zeros(0, dtype=np.int64)
        if turned.size:
            if not fresh:
                _, G = md.smooth(W)
            W, F, moved = self._row_minimizers(W, F, G, turned)
            fresh = not moved
            if moved:  # the support changed where a row went to zero
                changed |= bool(np.any(np.linalg.norm(W[turned], axis=1) == 0))
                if md.l1_rows.any():
                    _, G = md.smooth(W)
                    fresh = True
        # signs of the l1 entries: those of W, and -sign(G) where a zero entry enters
        zero = W == 0
        enter_entries = zero & md.l1_rows[:, None] & (np.abs(G) > md.a[:, None])
        enter_entries &= ~(md.group_rows[:, None] & (np.linalg.norm(W, axis=1) == 0)[:, None])
        self.signs = np.sign(W)
        if enter_entries.any():
            self.signs[enter_entries] = -np.sign(G[enter_entries])
            changed = True
        self._known = (W, G) if fresh else None
        return W, F, changed

    def _row_minimizers(self, W: np.ndarray, F: float, G: np.ndarray,
                        rows: np.ndarray) -> tuple[np.ndarray, float, bool]:
        """Set the nonzero group rows ``rows`` (of a chain, without l1 term) to their exact
        minimizers with the others fixed, all at once, where ``F`` falls (``G`` the smooth
        gradient at ``W``): ``(W, F, whether W moved)``."""
        md = self.model
        rows = rows[(md.a[rows] == 0) & (np.linalg.norm(W[rows], axis=1) > 0)]
        if not rows.size:
            return W, F, False
        Wr = W[rows]
        P = md.diag[rows] * Wr + md.times_K(Wr) + md.c[rows, None] * Wr - G[rows]
        step = np.zeros_like(W)
        for r, j in enumerate(rows):
            w = md.row_minimizer(int(j), P[r], float(np.linalg.norm(Wr[r])))
            if w is not None:
                step[j] = w - Wr[r]
        if not step.any():
            return W, F, False
        dF = md.change(W, G, step)
        if dF < 0:
            return W + step, F + dF, True
        return W, F, False

    def _entering_row(self, j: int, s: np.ndarray, s_norm: float) -> np.ndarray:
        """The start of a zero group row ``j`` that enters, ``s = soft(G_j., a_j)``: without
        l1 term, the best multiple ``tau v`` of ``v = -A_j^{-1} s`` (the row's minimizer
        without its group term, the others fixed), ``tau = 1 - b_j ||v|| / (v^T A_j v)``,
        where it is positive; else one proximal step on the row with the curvature bound
        ``max_t H_t[j, j] + c_j + lambda_max(K)``."""
        md = self.model
        if md.a[j] == 0:
            v, curv = md.row_solve(j, s)
            v = -v
            tau = 1.0 - md.b[j] * float(np.linalg.norm(v)) / curv if curv > 0 else 0.0
            if tau > 0 and np.all(np.isfinite(v)):
                return tau * v
        bound = float(md.diag[j].max()) + md.c[j] + md.k_top
        return -s * (1.0 - md.b[j] / s_norm) / (bound if bound > 0 else 1.0)

    def active(self, W: np.ndarray) -> np.ndarray:
        """The support ``E``: the l1 entries with a sign, every entry of a nonzero group row
        without l1 term, every entry of a row without l1 nor group term."""
        md = self.model
        nonzero_row = np.linalg.norm(W, axis=1) > 0
        E = np.broadcast_to((~md.l1_rows & (nonzero_row | ~md.group_rows))[:, None],
                            W.shape).copy()
        E |= md.l1_rows[:, None] & (self.signs != 0)
        return E

    # ------------------------------------------------------------------ Newton step
    def newton(self, W: np.ndarray, F: float, eta: float):
        """One Newton step on the support with its line search (module docstring, steps 2
        and 3): ``(W, F, full step, CG iterations)``, or ``(None, F, False, iterations)``
        when no step lowers ``F``."""
        md = self.model
        E = self.active(W)
        if not E.any():
            return W, F, True, 0
        rows = np.flatnonzero(E.any(axis=1))
        nrm = np.linalg.norm(W, axis=1)
        group = md.group_rows & (nrm > 0)
        beta = np.where(group, md.b / np.where(nrm > 0, nrm, 1.0), 0.0)
        U = np.where(group[:, None], W / np.where(nrm > 0, nrm, 1.0)[:, None], 0.0)
        known = self._known
        G = known[1] if known is not None and known[0] is W else md.smooth(W)[1]
        g = (G + md.a[:, None] * self.signs + beta[:, None] * W) * E

        any_group = bool(group.any())
        scale = (md.c + beta)[:, None]

        def hess(V: np.ndarray) -> np.ndarray:
            out = apply_per_task(md.H, V)
            out += md.times_K(V)
            out += scale * V
            if any_group:  # beta_j (I - u_j u_j^T) on the group rows
                out -= (beta * np.einsum("jt,jt->j", U, V))[:, None] * U
            out *= E
            return out

        exact = None if any_group else self._complete_inverse(E, beta)
        if exact is not None:  # the Hessian's inverse: one or two iterations
            D, n_cg = _conjugate_gradients(hess, exact, -g, eta, self.cg_max_iter)
            return self._line_search(W, F, E, G, g, D, group, n_cg)
        first = self.by_rows
        precondition = self._preconditioner(rows, E, beta, U, any_group)
        untried = not self._cg_counts[not first]
        limit = min(SWITCH_CG, self.cg_max_iter) if untried else self.cg_max_iter
        run = _CGRun(hess, precondition, -g, eta).go(limit)
        n_cg = run.n
        if untried and not run.done:  # slow: this step again with the other preconditioner
            self.by_rows = not first
            precondition = self._preconditioner(rows, E, beta, U, any_group)
            other = _CGRun(hess, precondition, -g, eta).go(limit)
            if other.done or other.best <= run.best:  # the other goes on
                self._cg_counts[first].append(run.n)
                n_first, run = run.n, other.go(self.cg_max_iter)
                n_cg = n_first + run.n
            else:  # the other is behind: the first goes on, the other counts as failed
                self._cg_counts[not first].append(self.cg_max_iter)
                self.by_rows = first
                n_cg = run.go(self.cg_max_iter).n + other.n
            self._choose_preconditioner(run.n)
        else:
            self._choose_preconditioner(n_cg)
        D = run.best_X
        if any_group and md.tridiagonal and self.by_rows and n_cg <= SWITCH_CG:
            self._turned = _turned_rows(D, U, nrm, group)
        return self._line_search(W, F, E, G, g, D, group, n_cg)

    def _line_search(self, W: np.ndarray, F: float, E: np.ndarray, G: np.ndarray,
                     g: np.ndarray, D: np.ndarray, group: np.ndarray, n_cg: int):
        """The line search of :meth:`newton` along ``D`` (module docstring, step 3), ``G`` the
        smooth gradient at ``W`` and ``g`` the reduced gradient on the support ``E``."""
        md = self.model
        slope = float(np.vdot(g, D))
        if not slope < 0:
            return None, F, False, n_cg
        fixed = md.l1_rows[:, None] & E
        any_group = bool(group.any())
        rows_W = md.rows_value(W)
        # the rounding of the rows' terms in change(): a fall below it cannot be told
        floor = 16 * np.finfo(float).eps * rows_W
        s = 1.0
        for _ in range(_MAX_HALVINGS):
            if s * -slope <= floor:
                break
            W2 = W + s * D
            flip = fixed & (np.sign(W2) != self.signs)
            W2[flip] = 0.0
            if any_group:  # rows through zero
                W2[group & (np.einsum("jt,jt->j", W2, W) <= 0)] = 0.0
            dF = md.change(W, G, W2 - W, rows_W)
            if dF <= 1e-4 * s * slope:
                return W2, F + dF, s == 1.0, n_cg
            s *= 0.5
        return None, F, False, n_cg

    def _choose_preconditioner(self, n_cg: int) -> None:
        """After a step that took ``n_cg`` conjugate-gradient iterations with the current
        preconditioner, keep the one of fewer iterations per step on average once both were
        tried (:meth:`newton` tries the other, on the same step, when the first passes
        :data:`SWITCH_CG` iterations). The rule of the module docstring (the coupling against
        the median feature's curvature) picks the first; where the curvatures of the
        features spread over orders of magnitude (raw features of different units) the median
        says little about which part of the Hessian dominates, and the iterations tell."""
        counts = self._cg_counts
        counts[self.by_rows].append(n_cg)
        other = not self.by_rows
        if not counts[other]:
            return  # tried by the step itself once it passes SWITCH_CG iterations
        if np.mean(counts[other]) < np.mean(counts[self.by_rows]):
            self.by_rows = other

    def _preconditioner(self, rows: np.ndarray, E: np.ndarray, beta: np.ndarray,
                        U: np.ndarray, any_group: bool) -> Callable:
        """``R -> Z``: the exact inverses of the rows' blocks (of the tasks' blocks at weak
        coupling) applied on the support ``E``. For a coupling ``K = k_0 I - k_1 11^T`` (the
        complete graph of equal weights: the default graph, the mean model) without group
        term a row's block is a diagonal ``D_j`` less ``k_1 11^T`` on its support, applied
        by Sherman-Morrison for all rows at once: ``z = D_j^{-1} r + k_1 D_j^{-1} 1 (1^T
        D_j^{-1} r) / (1 - k_1 1^T D_j^{-1} 1)``."""
        md = self.model
        if not self.by_rows:
            inv_t = np.ascontiguousarray(self._task_inverses(E, beta))

            def by_tasks(R: np.ndarray) -> np.ndarray:
                return np.matmul(inv_t, R.T[:, :, None])[:, :, 0].T

            if not any_group:
                return by_tasks
            return self._group_corrected(by_tasks, inv_t, E, beta, U)
        if md.complete is not None and not any_group:
            k0, k1 = md.complete
            den = md.diag + k0 + md.c[:, None]
            Dinv = np.where(E & (den > 0), 1.0 / np.where(den > 0, den, 1.0), 0.0)
            ones = Dinv.sum(axis=1)
            scale = np.where(1.0 - k1 * ones > 0, k1 / np.maximum(1.0 - k1 * ones, 1e-300),
                             0.0)

            def complete(R: np.ndarray) -> np.ndarray:
                Z = Dinv * R
                return Z + (scale * Z.sum(axis=1))[:, None] * Dinv

            return complete
        if md.tridiagonal:
            chain = self._chain_preconditioner(rows, E, beta, U, any_group)
            if chain is not None:
                return chain
        inv = self._block_inverses(rows, E, beta, U)

        def by_rows(R: np.ndarray) -> np.ndarray:
            Z = np.zeros_like(R)
            Z[rows] = np.matmul(inv, R[rows][:, :, None])[:, :, 0]
            return Z

        return by_rows

    @staticmethod
    def _group_corrected(by_tasks: Callable, inv: np.ndarray, E: np.ndarray,
                         beta: np.ndarray, U: np.ndarray) -> Callable:
        """The tasks' preconditioner with the group terms' ``- beta_j u_j u_j^T`` (which couple
        a group row's tasks) put back by Woodbury's identity: with ``B`` the tasks' blocks
        (``beta_j`` on their diagonals, ``inv`` their inverses) and ``Ut`` the ``r`` group
        rows' directions, one column per row (``u_j`` on row ``j``, zero elsewhere),

            (B - Ut diag(beta) Ut^T)^{-1} R = Z + Y C^{-1} Ut^T Z,   Z = B^{-1} R,
            Y = B^{-1} Ut,   C = diag(1 / beta) - Ut^T Y

        (``C`` is ``r x r``; :func:`~multitask.solvers.masked_inverse.
        inverse_psd_conditioned`): the exact inverse of the Hessian less the coupling of
        the tasks off its diagonal, where the tasks' blocks alone leave one eigenvalue per
        group row far from 1 (``beta_j`` large against the row's curvature: small rows)."""
        g = np.flatnonzero(beta > 0)
        Ug = U[g] * E[g]  # (r, m)
        Y = inv[:, :, g] * Ug.T[:, None, :]  # (m, d, r): B_t^{-1} on the columns of Ut
        C = np.diag(1.0 / beta[g]) - np.einsum("it,tij,jt->ij", Ug, inv[:, g][:, :, g], Ug)
        C_inv = inverse_psd_conditioned(0.5 * (C + C.T))

        def corrected(R: np.ndarray) -> np.ndarray:
            Z = by_tasks(R)
            w = C_inv @ np.einsum("it,it->i", Ug, Z[g])
            return Z + np.einsum("tdi,i->dt", Y, w)

        return corrected

    def _chain_preconditioner(self, rows: np.ndarray, E: np.ndarray, beta: np.ndarray,
                              U: np.ndarray, any_group: bool) -> Callable | None:
        """For a tridiagonal coupling (a chain of tasks: the temporal group lasso's) the rows'
        blocks ``T_j - beta_j u_j u_j^T`` with ``T_j = diag(H_t[j, j] + c_j + beta_j) + K``
        tridiagonal (the tasks off the row's support cut out of the chain): one
        ``L D L^T`` factorization of all the rows' ``T_j`` stacked (a tridiagonal matrix of
        ``len(rows) m`` unknowns, LAPACK's ``dpttrf``), and Sherman-Morrison for the group
        terms. None where the factorization fails (a block that is not positive definite: the
        dense blocks' pseudo-inverses then)."""
        md = self.model
        n, m = len(rows), E.shape[1]
        on = E[rows]
        main = md.diag[rows] + md.c[rows, None] + beta[rows, None] + md._k_main[None, :]
        upper = np.zeros((n, m))
        upper[:, 1:] = md._k_off[None, :] * (on[:, :-1] & on[:, 1:])
        # D and the subdiagonal of L
        dl, ll, info = scipy.linalg.lapack.dpttrf(np.where(on, main, 1.0).ravel(),
                                                  upper.ravel()[1:])
        if info != 0:
            return None

        def solve(Rr: np.ndarray) -> np.ndarray:
            """``T^{-1} R`` on the support, ``Rr`` (a fresh array) overwritten."""
            out, _ = scipy.linalg.lapack.dpttrs(dl, ll, Rr.ravel(), overwrite_b=True)
            return out.reshape(n, m) * on

        if any_group:
            Ur = U[rows] * on
            Y = solve(Ur.copy())
            den = 1.0 - beta[rows] * np.einsum("rt,rt->r", Ur, Y)
            coef = np.where(den > 0, beta[rows] / np.where(den > 0, den, 1.0), 0.0)

        def chain(R: np.ndarray) -> np.ndarray:
            Z = np.zeros_like(R)
            Zr = solve(R[rows] * on)
            if any_group:
                Zr += (coef * np.einsum("rt,rt->r", Ur, Zr))[:, None] * Y
            Z[rows] = Zr
            return Z

        return chain

    def _task_inverses(self, E: np.ndarray, beta: np.ndarray,
                       shift: np.ndarray | None = None) -> np.ndarray:
        """The inverses of the tasks' blocks ``H_t + s_t I + diag(c + beta)`` on the task's
        support, embedded in ``(m, d, d)`` zeros (:func:`~multitask.solvers.masked_inverse.
        masked_inverses`); ``s_t = K_tt`` unless ``shift`` gives them. A task's inverse is
        kept while its support, its ``s_t`` and the rows' ``c + beta`` on it stay; where only
        the support moved, by at most :data:`UPDATE_CHANGES` features, it follows by rank-one
        updates (:meth:`_update_task_inverses`); the others are computed again, all at once.
        The array is the solver's own and is updated in place by the next call."""
        md = self.model
        d, m = E.shape
        extra = md.c + beta
        shift = md._k_main if shift is None else shift
        if self._task_inv is None:
            self._task_inv = np.zeros((m, d, d))
            self._task_E = np.zeros((d, m), dtype=bool)
            self._task_extra = np.full((d, m), np.nan)
            self._task_shift = np.full(m, np.nan)
            self._task_exact = np.zeros(m, dtype=bool)
            self._task_updates = np.zeros(m, dtype=np.int64)
        moved = (E != self._task_E).sum(axis=0)
        kept = (shift == self._task_shift)
        kept &= ~((extra[:, None] != self._task_extra) & E & self._task_E).any(axis=0)
        stale = (moved > 0) | ~kept
        stale |= ((extra[:, None] != self._task_extra) & E).any(axis=0)
        update = (stale & kept & self._task_exact & (moved <= UPDATE_CHANGES)
                  & (self._task_updates + moved <= REFRESH_UPDATES))
        if stale.any():
            self._task_version += 1
        if update.any():
            done = self._update_task_inverses(np.flatnonzero(update), E, extra, shift)
            self._task_E[:, done] = E[:, done]
            self._task_extra[:, done] = extra[:, None]
            self._task_updates[done] += moved[done]
            stale[done] = False
        tasks = np.flatnonzero(stale)
        if tasks.size:  # on the features of their supports
            feats = np.flatnonzero(E[:, tasks].any(axis=1))
            which = np.zeros_like(tasks) if md.H.shape[0] == 1 else tasks
            blocks = md.H[which][:, feats[:, None], feats]
            diagonal = np.arange(feats.size)
            blocks[:, diagonal, diagonal] += shift[tasks, None] + extra[feats]
            full = np.zeros((tasks.size, d, d))
            inv, exact = masked_inverses_exact(blocks, E[feats][:, tasks].T)
            full[:, feats[:, None], feats] = inv
            self._task_inv[tasks] = full
            self._task_E[:, tasks] = E[:, tasks]
            self._task_extra[:, tasks] = extra[:, None]
            self._task_shift[tasks] = shift[tasks]
            self._task_exact[tasks] = exact
            self._task_updates[tasks] = 0
        return self._task_inv

    def _update_task_inverses(self, tasks: np.ndarray, E: np.ndarray, extra: np.ndarray,
                              shift: np.ndarray) -> np.ndarray:
        """Move the inverses of ``tasks`` (exact, with the same ``s_t`` and ``c + beta`` on
        the features they keep) to the supports ``E`` by rank-one updates: the features that
        leave first (:func:`~multitask.solvers.masked_inverse.drop_feature`), then those
        that enter (:func:`~multitask.solvers.masked_inverse.add_feature`), one feature of
        every task at a time. Returns the tasks whose updates all went through (the others,
        at a pivot too small, are computed again by the caller)."""
        md = self.model
        inv = self._task_inv
        if inv is None:  # pragma: no cover - called once the inverses exist
            return np.zeros(0, dtype=np.int64)
        shared = md.H.shape[0] == 1
        old = self._task_E[:, tasks]
        new = E[:, tasks]
        failed = np.zeros(tasks.size, dtype=bool)
        current = old.T.copy()
        for leaving in (True, False):
            pos, feat = np.nonzero((old & ~new).T if leaving else (new & ~old).T)
            rank = np.arange(pos.size) - np.searchsorted(pos, pos)
            for r in range(int(rank.max()) + 1 if rank.size else 0):
                sel = (rank == r) & ~failed[pos]
                p, k = pos[sel], feat[sel]
                which = tasks[p]
                h = 0 if shared else which
                if leaving:
                    ok = drop_feature(inv, which, k, md.H[h, k, k] + shift[which] + extra[k])
                else:
                    cols = np.array(md.H[h, :, k], dtype=np.float64).reshape(p.size, -1)
                    cols[np.arange(p.size), k] += shift[which] + extra[k]
                    ok = add_feature(inv, which, k, cols, current[p])
                current[p[ok], k[ok]] = not leaving
                failed[p[~ok]] = True
        return tasks[~failed]

    def _complete_inverse(self, E: np.ndarray, beta: np.ndarray) -> Callable | None:
        """``R -> Hess^{-1} R`` on the support ``E`` for a coupling ``K = k_0 I - k_1 11^T``
        (the complete graph of equal weights) without group term and with at most
        :data:`WOODBURY_FEATURES` features, else None.

        The Hessian on ``E`` is ``B - k_1 J J^T``: ``B`` block diagonal over the tasks, the
        blocks ``B_t = H_t + k_0 I + diag(c)`` on the task's support, and ``J^T V = V 1`` (the
        sums over the tasks, one per feature) of rank ``d``. By Woodbury,

            Hess^{-1} R = Z + k_1 B^{-1} J S^{-1} J^T Z,   Z = B^{-1} R,
            S = I - k_1 J^T B^{-1} J = I - k_1 sum_t B_t^{-1}

        (``B_t^{-1}`` embedded in zeros, :meth:`_task_inverses`): two products by the tasks'
        inverses and one by a ``d x d`` matrix. ``S`` is positive semi-definite, singular
        where the Hessian is (a feature without curvature in any task, on the support of
        every task: its weights' mean is free); its pseudo-inverse keeps the preconditioner
        positive definite and conjugate gradients solve in the Hessian's range (its inverse
        where ``S`` is well conditioned, :func:`~multitask.solvers.masked_inverse.
        inverse_psd_conditioned`)."""
        md = self.model
        d, m = E.shape
        if md.complete is None or d > WOODBURY_FEATURES:
            return None
        k0, k1 = md.complete
        inv = np.ascontiguousarray(self._task_inverses(E, beta, np.full(m, k0)))
        if self._capacitance is None or self._capacitance[0] != (self._task_version, k1):
            S = np.eye(d) - k1 * inv.sum(axis=0)
            self._capacitance = ((self._task_version, k1), inverse_psd_conditioned(S))
        S_pinv = self._capacitance[1]

        def woodbury(R: np.ndarray) -> np.ndarray:
            Z = np.matmul(inv, R.T[:, :, None])[:, :, 0].T
            return Z + k1 * (inv @ (S_pinv @ Z.sum(axis=1))).T

        return woodbury

    def _block_inverses(self, rows: np.ndarray, E: np.ndarray, beta: np.ndarray,
                        U: np.ndarray) -> np.ndarray:
        """The inverses of the rows' blocks ``A_j + beta_j (I - u_j u_j^T)`` on the row's
        support, embedded in ``(len(rows), m, m)`` zeros (cached for rows without group term,
        whose block changes only with the support)."""
        md = self.model
        m = E.shape[1]
        inv = np.zeros((len(rows), m, m))
        for r, j in enumerate(rows):
            tasks = np.flatnonzero(E[j])
            key = tasks.tobytes()
            cached = self._cache.get(j)
            if beta[j] == 0 and cached is not None and cached[0] == key:
                inv[r][np.ix_(tasks, tasks)] = cached[1]
                continue
            A = md.block(j, tasks)
            if beta[j] > 0:
                u = U[j, tasks]
                A += beta[j] * (np.eye(len(tasks)) - np.outer(u, u))
            block_inv = inverse_psd(A)
            if beta[j] == 0:
                self._cache[j] = (key, block_inv)
            inv[r][np.ix_(tasks, tasks)] = block_inv
        return inv


def _turned_rows(D: np.ndarray, U: np.ndarray, nrm: np.ndarray,
                 group: np.ndarray) -> np.ndarray:
    """The nonzero group rows ``j`` whose direction ``d_j`` turns them by more than
    :data:`ROTATION`: ``||d_j - <d_j, u_j> u_j|| > ROTATION ||w_j||``."""
    along = np.einsum("jt,jt->j", D, U)
    across = np.linalg.norm(D - along[:, None] * U, axis=1)
    return np.flatnonzero(group & (across > ROTATION * nrm))


class _CGRun:
    """Preconditioned conjugate gradients on ``apply(X) = B`` from ``X = 0`` (the iteration of
    :class:`~multitask.solvers.base.ConjugateGradients`), run by :meth:`go` up to a number of
    iterations in all (a later call goes on where the last stopped), stopped at a residual of
    at most ``eta ||B||``; the residual that meets it is not preconditioned (with the exact
    inverse as preconditioner, one product by the Hessian and one by the inverse per Newton
    step). Attributes: ``best_X`` (the iterate of smallest residual), ``best`` (its
    residual's norm), ``n`` (iterations), ``done`` (converged, or no further iteration
    possible)."""

    def __init__(self, apply: Callable, precondition: Callable, B: np.ndarray, eta: float):
        self.apply, self.precondition = apply, precondition
        self.X = np.zeros_like(B)
        self.R = B.copy()
        self.target = eta * float(np.linalg.norm(B))
        self.best, self.best_X = float(np.linalg.norm(self.R)), self.X
        self.rz = 1.0
        if self.best > self.target:
            self.P = precondition(self.R).copy()
            self.rz = float(np.vdot(self.R, self.P))
        self.n = 0
        self._broken = False

    @property
    def done(self) -> bool:
        return self._broken or self.best <= self.target or not self.rz > 0

    def go(self, max_iter: int) -> _CGRun:
        """Iterate until ``max_iter`` iterations in all, or :attr:`done`."""
        while self.n < max_iter and not self.done:
            AP = self.apply(self.P)
            pAp = float(np.vdot(self.P, AP))
            if not pAp > 0:  # no positive curvature along P: a breakdown
                self._broken = True
                break
            self.n += 1
            step = self.rz / pAp
            self.X = self.X + step * self.P
            self.R = self.R - step * AP
            res = float(np.linalg.norm(self.R))
            if res < self.best:
                self.best, self.best_X = res, self.X
            if res <= self.target:
                break
            Z = self.precondition(self.R)
            rz = float(np.vdot(self.R, Z))
            self.P = Z + (rz / self.rz) * self.P
            self.rz = rz
        return self


def _conjugate_gradients(apply: Callable, precondition: Callable, B: np.ndarray, eta: float,
                         max_iter: int) -> tuple[np.ndarray, int]:
    """:class:`_CGRun` for at most ``max_iter`` iterations: ``(the iterate of smallest
    residual, iterations)``."""
    run = _CGRun(apply, precondition, B, eta).go(max_iter)
    return run.best_X, run.n
