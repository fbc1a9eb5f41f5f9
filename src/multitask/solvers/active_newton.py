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
   (:meth:`~multitask.solvers.active_newton_steps.NewtonSteps._complete_inverse`; up to
   :data:`WOODBURY_FEATURES` features): one or two
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

from collections.abc import Callable

import numpy as np
import scipy.linalg
import scipy.linalg.lapack
import scipy.sparse

from multitask.losses import Datafit
from multitask.penalties.base import Penalty
from multitask.solvers.active_newton_steps import (
    KEEP_INVERSES,
    REFRESH_UPDATES,
    ROTATION,
    SWITCH_CG,
    UPDATE_CHANGES,
    WOODBURY_FEATURES,
    CGRun,
    NewtonSteps,
)
from multitask.solvers.base import (
    Solver,
    apply_per_task,
    check_int,
    measure_lipschitz,
)
from multitask.solvers.bcd import BlockCoordinateDescent, quadratic_row_descent, row_strengths
from multitask.solvers.iteration import IterationRecord
from multitask.solvers.masked_inverse import (
    inverse_psd,
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



#: Relative residual of the first Newton steps' conjugate gradients, and the factor of the
#: certified gap that bounds it after a certificate (inexact Newton's forcing term).
_FORCING_START = 0.3
_FORCING = 0.3

#: Factor of the forcing term after a step that could not lower ``F`` (a direction too rough
#: near the rounding of ``F``).
_TIGHTEN = 1e-2




#: Newton iterations on a row's secular equation at most (:meth:`_Model.row_minimizer`).
_ROW_ITERATIONS = 50



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
        steps = NewtonSteps(model, self.cg_max_iter)
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


# the names the tests and earlier code reach the steps by
_Steps = NewtonSteps
_CGRun = CGRun
