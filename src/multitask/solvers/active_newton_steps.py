"""The Newton steps of active-set Newton (:mod:`multitask.solvers.active_newton`).

:class:`NewtonSteps` holds, for one run of :class:`~multitask.solvers.active_newton.
ActiveSetNewton` on its model (the quadratic loss, the task coupling and the rows' terms), the
support updates and the Newton steps: the tasks' block inverses (kept between the runs of one
thread on the same data, moved by rank-one updates where a task's support moves by a few
features), the preconditioners by rows and by tasks and the choice between them, the
complete graph's exact inverse by Woodbury's identity, and the exact minimizers of the group
rows a Newton direction turns. :class:`CGRun` is the preconditioned conjugate gradients the
steps run, resumable. The solver's module docstring gives the method.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import scipy.linalg
import scipy.linalg.lapack
import scipy.sparse

from multitask.solvers.base import (
    apply_per_task,
)
from multitask.solvers.masked_inverse import (
    add_feature,
    drop_feature,
    inverse_psd,
    inverse_psd_conditioned,
    masked_inverses_exact,
)

__all__ = ["KEEP_INVERSES", "REFRESH_UPDATES", "ROTATION", "SWITCH_CG", "UPDATE_CHANGES",
           "WOODBURY_FEATURES", "CGRun", "NewtonSteps", "conjugate_gradients"]

#: Conjugate-gradient iterations of a Newton step above which the other preconditioner (by
#: tasks instead of by rows, or the reverse) is tried on the next step.
SWITCH_CG = 30

#: Features up to which the Newton steps of the complete graph (without group rows) take the
#: Hessian's inverse by Woodbury's identity (:meth:`NewtonSteps._complete_inverse`): its set-up
#: inverts one ``d x d`` block per task, about ``d`` products by the Hessian, and keeps ``m d^2``
#: numbers; beyond, the preconditioners by rows or by tasks and their conjugate gradients.
WOODBURY_FEATURES = 64

#: Features by which a task's support may have moved for its block's inverse to follow by
#: rank-one updates (:meth:`NewtonSteps._task_inverses`) rather than be computed again.
UPDATE_CHANGES = 4

#: Rank-one updates after which a task's inverse is computed again (the rounding they add).
REFRESH_UPDATES = 32

#: Turn of a group row by the Newton direction (the part of ``d_j`` orthogonal to ``w_j``,
#: relative to ``||w_j||``) above which the next support update sets the row to its exact
#: minimizer with the others fixed (a chain of tasks; module docstring, step 1).
ROTATION = 0.3

#: Halvings of the step of the line search before it gives up.
_MAX_HALVINGS = 40


#: Entries ``m d^2`` of the tasks' inverses up to which a thread keeps its last run's
#: (:func:`_adopt_task_inverses`).
KEEP_INVERSES = 1 << 22

_recent = threading.local()


def _adopt_task_inverses(steps: NewtonSteps) -> None:
    """Give ``steps`` the tasks' inverses of this thread's last run where its ``H`` is the
    same (equal entries: the fits of a path, or of a grid, on one fold), and keep ``steps``
    as the last run. The inverses carry the supports, shifts and ``c + beta`` they were
    computed for (:meth:`NewtonSteps._task_inverses`), so a task's inverse is reused exactly where
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


class NewtonSteps:
    """The support updates and the Newton steps of :class:`ActiveSetNewton` on a model."""

    def __init__(self, model, cg_max_iter: int):
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
            D, n_cg = conjugate_gradients(hess, exact, -g, eta, self.cg_max_iter)
            return self._line_search(W, F, E, G, g, D, group, n_cg)
        first = self.by_rows
        precondition = self._preconditioner(rows, E, beta, U, any_group)
        untried = not self._cg_counts[not first]
        limit = min(SWITCH_CG, self.cg_max_iter) if untried else self.cg_max_iter
        run = CGRun(hess, precondition, -g, eta).go(limit)
        n_cg = run.n
        if untried and not run.done:  # slow: this step again with the other preconditioner
            self.by_rows = not first
            precondition = self._preconditioner(rows, E, beta, U, any_group)
            other = CGRun(hess, precondition, -g, eta).go(limit)
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


class CGRun:
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

    def go(self, max_iter: int) -> CGRun:
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


def conjugate_gradients(apply: Callable, precondition: Callable, B: np.ndarray, eta: float,
                         max_iter: int) -> tuple[np.ndarray, int]:
    """:class:`CGRun` for at most ``max_iter`` iterations: ``(the iterate of smallest
    residual, iterations)``."""
    run = CGRun(apply, precondition, B, eta).go(max_iter)
    return run.best_X, run.n
