"""Coordinate descent task by task, for least squares with a penalty separable over the
entries of ``W`` (the independent lasso and elastic net).

The model: the least-squares datafit of the data it sees (``"least_squares"``: ``F(W) =
sum_i w_i r_i^2 / 2`` with ``r_i = (x_i - mu_t)^T w_t - y_i`` for row ``i`` of task ``t``,
``w_i`` the row weights, ``mu_t`` the centring offsets, plus ``(alpha_l2 / 2) ||W||_F^2``) and
a penalty of the elastic-net row family without group term (``a_j ||W_j.||_1 + (c_j / 2)
||W_j.||_2^2``)::

    min_W  F(W) + sum_jt (a_j |W_jt| + (c_j / 2) W_jt^2)  =  sum_t  P_t(w_t)

separates into one elastic net per task. Each task is solved on its own: its centred,
weighted columns ``Xc_t = D_t^{1/2} (X_t - 1 mu_t^T)`` (``n_t x d``, built once per call) and
its residual ``r = D_t^{1/2} y_t - Xc_t w_t``, by cyclic
coordinate descent (the entry ``j`` minimized exactly: ``soft(h_j w_j + Xc_j^T r, a_j) / (h_j +
c_j)``, ``h_j = ||Xc_j||^2``), until the task's own relative duality gap is at most
``inner_tol`` (computed every :data:`GAP_EVERY` epochs, and after an epoch that changed no
coefficient by more than ``inner_tol`` times the largest), with Anderson's extrapolation of
its iterates. This is scikit-learn's ``Lasso`` task by task, run in one compiled call: a
task's columns stay in cache over its epochs (coordinate descent over all the tasks at once,
:mod:`multitask.solvers.cd`, reads the whole design every epoch), and each task takes the
epochs it needs, not the slowest task's.

After the tasks, the certified relative duality gap of :mod:`multitask.solvers.base` is
computed for the whole model, from the dual point each task's residual gives, scaled task by
task into its constraints (the dual of a separable model is a sum over the tasks: one scale for
all of them, the certificate's own dual point, is held back by the task farthest from its
optimum); where it is above ``tol``, the inner criterion is tightened
tenfold and the tasks run again from where they stopped (as the other coordinate descents).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit

from multitask.losses import Datafit
from multitask.penalties.base import Penalty
from multitask.solvers._anderson_numba import anderson_combination
from multitask.solvers.base import Solver, check_int
from multitask.solvers.iteration import IterationRecord, inner_tolerances
from multitask.solvers.problem import Problem
from multitask.solvers.result import SolverResult

__all__ = ["TaskCoordinateDescent"]


#: Epochs between two duality gaps of a task (each costs about an epoch).
GAP_EVERY = 10


@njit(cache=True, nogil=True)
def _dual_scale(Xc, r, a, c, n_t, g):  # pragma: no cover - compiled
    """The largest ``s <= 1`` that puts the dual point ``s r`` inside the l1 rows'
    constraints ``|Xc_j^T s r| <= a_j`` (``c_j = 0``), with ``g_j = Xc_j^T r`` written into
    ``g``. A free row (``a_j = c_j = 0``, a stage of the capped l1 penalty) asks ``Xc_j^T s r =
    0``, which the exact coordinate minimization meets up to rounding: it is left out of
    ``s`` (the model's certificate re-optimizes such rows before it builds its dual point)."""
    s = 1.0
    for j in range(Xc.shape[0]):
        acc = 0.0
        for i in range(n_t):
            acc += Xc[j, i] * r[i]
        g[j] = acc
        if c[j] == 0.0 and a[j] > 0.0 and abs(acc) > a[j]:
            s = min(s, a[j] / abs(acc))
    return s


@njit(cache=True, nogil=True)
def _task_gap(Xc, r, w, a, c, n_t, ytilde, g):  # pragma: no cover - compiled
    """``(gap, s)``: the relative duality gap ``(P - D) / P`` of one task's elastic net at
    ``w`` (residual ``r = ytilde - Xc^T w``), from the dual point ``s r`` of
    :func:`_dual_scale` (``g`` its work array)::

        P = ||r||^2 / 2 + sum_j (a_j |w_j| + c_j w_j^2 / 2)        (:func:`_task_objective`)
        D = ||ytilde||^2 / 2 - ||ytilde - s r||^2 / 2 - sum_{c_j > 0} (|s Xc_j^T r| - a_j)_+^2
            / (2 c_j)

    With a free row the gap is a stopping rule, not a bound (:func:`_dual_scale`)."""
    primal = _task_objective(r, w, a, c, n_t)
    s = _dual_scale(Xc, r, a, c, n_t, g)
    dual = 0.0
    for i in range(n_t):
        e = ytilde[i] - s * r[i]
        dual += 0.5 * (ytilde[i] * ytilde[i] - e * e)
    for j in range(w.shape[0]):
        if c[j] > 0.0:
            excess = abs(s * g[j]) - a[j]
            if excess > 0.0:
                dual -= 0.5 * excess * excess / c[j]
    if not primal > 0.0:
        return 0.0, s
    return max(primal - dual, 0.0) / primal, s


@njit(cache=True, nogil=True)
def _task_objective(r, w, a, c, n_t):  # pragma: no cover - compiled
    """``||r||^2 / 2 + sum_j (a_j |w_j| + c_j w_j^2 / 2)``: a task's objective."""
    value = 0.0
    for i in range(n_t):
        value += 0.5 * r[i] * r[i]
    for j in range(w.shape[0]):
        value += a[j] * abs(w[j]) + 0.5 * c[j] * w[j] * w[j]
    return value


@njit(cache=True, nogil=True)
def _extrapolate(Xc, r, W, t, a, c, n_t, ytilde, hist, trial,
                 r_trial):  # pragma: no cover - compiled
    """Anderson's extrapolation of task ``t``'s iterates ``hist`` (skglm's acceleration of
    coordinate descent, as :mod:`multitask.solvers.cd`): their combination
    (:func:`~multitask.solvers._anderson_numba.anderson_combination`) replaces ``W[:, t]``
    (and its residual ``r``) where it lowers the task's objective."""
    if not anderson_combination(hist, trial):
        return
    d = W.shape[0]
    for i in range(n_t):
        r_trial[i] = ytilde[i]
    for j in range(d):
        v = trial[j]
        if v != 0.0:
            for i in range(n_t):
                r_trial[i] -= Xc[j, i] * v
    before = _task_objective(r, W[:, t], a, c, n_t)
    if _task_objective(r_trial, trial, a, c, n_t) < before - 1e-15 * abs(before):
        for j in range(d):
            W[j, t] = trial[j]
        for i in range(n_t):
            r[i] = r_trial[i]


@njit(cache=True, nogil=True)
def _task_epochs(X, y, offsets, shared, rw, mu, constant, W, a, c, max_epochs, tol,
                 anderson, scores):  # pragma: no cover - compiled
    """Coordinate descent on each task in turn (module docstring), in place on ``W``
    ``(d, m)``.

    Parameters
    ----------
    X : ndarray of shape (N, d) or (n, d)
        The stacked dense design (the design common to every task where ``shared``).
    y, rw : ndarray of shape (N,)
        Stacked targets and row weights (task-major for a shared design: row ``i`` of task
        ``t`` at ``t n + i``).
    offsets : ndarray of shape (m + 1,)
        The tasks' stacked rows.
    mu : ndarray of shape (d, m)
        Centring offsets (zeros where the design is centred already).
    constant : ndarray of bool, shape (d, m)
        Cells whose centred column is zero (their rounding noise dropped).
    a, c : ndarray of shape (d,)
        l1 and ridge strengths of the rows.
    max_epochs : int
        Epochs per task.
    tol : float
        A task stops when its relative duality gap (:func:`_task_gap`) is at most ``tol``,
        computed every :data:`GAP_EVERY` epochs and after an epoch whose largest change is at
        most ``tol`` times the task's largest coefficient.
    anderson : int
        Anderson extrapolation of each task's iterates every ``anderson`` epochs
        (:func:`_extrapolate`; 0: none).
    scores : ndarray of shape (N,)
        Filled with the score derivatives of a dual point, stacked like ``y``: each task's
        residuals ``(x_i - mu_t)^T w_t - y_i`` at the end, times the largest ``s_t <= 1``
        that puts them inside its l1 rows' constraints (the dual of a separable model is a
        sum over the tasks, each scaled on its own).

    Returns
    -------
    epochs : ndarray of int64, shape (m,)
        Epochs each task took.
    converged : bool
        Whether every task met ``tol``.
    """
    d, m = W.shape
    epochs = np.zeros(m, dtype=np.int64)
    converged = True
    n_max = 0
    for t in range(m):
        n_max = max(n_max, offsets[t + 1] - offsets[t])
    Xc = np.empty((d, n_max))  # the task's centred, weighted columns, one per row
    h = np.empty(d)
    r = np.empty(n_max)
    ytilde = np.empty(n_max)
    hist = np.empty((anderson + 1, d))  # the task's last iterates, for the extrapolation
    trial = np.empty(d)
    r_trial = np.empty(n_max)
    g_work = np.empty(d)  # the columns' products with the residual, at a gap check
    scale = 1.0
    for t in range(m):
        lo = offsets[t]
        n_t = offsets[t + 1] - lo
        _load_task(X, y, rw, mu, constant, W, t, lo, n_t, 0 if shared else lo, Xc, h, r,
                   ytilde)
        done = False
        stored = 0
        for j in range(d):
            hist[0, j] = W[j, t]
        for epoch in range(max_epochs):
            epochs[t] = epoch + 1
            max_change = 0.0
            max_coef = 0.0
            for j in range(d):
                old = W[j, t]
                hj = h[j]
                if hj + c[j] <= 0.0:  # the loss does not see w_jt: the penalty's minimizer
                    if a[j] > 0.0 and old != 0.0:
                        W[j, t] = 0.0
                        max_change = max(max_change, abs(old))
                    continue
                g = 0.0
                for i in range(n_t):
                    g += Xc[j, i] * r[i]
                v = hj * old + g
                if v > a[j]:
                    new = (v - a[j]) / (hj + c[j])
                elif v < -a[j]:
                    new = (v + a[j]) / (hj + c[j])
                else:
                    new = 0.0
                if new != old:
                    delta = new - old
                    for i in range(n_t):
                        r[i] -= Xc[j, i] * delta
                    W[j, t] = new
                    if abs(delta) > max_change:
                        max_change = abs(delta)
                if abs(new) > max_coef:
                    max_coef = abs(new)
            small = max_change <= tol * max(max_coef, 1e-300)
            if small or (epoch + 1) % GAP_EVERY == 0:
                gap, scale = _task_gap(Xc, r, W[:, t], a, c, n_t, ytilde, g_work)
                if gap <= tol:
                    done = True
                    break
            if anderson > 0:
                stored += 1
                for j in range(d):
                    hist[stored, j] = W[j, t]
                if stored == anderson:
                    _extrapolate(Xc, r, W, t, a, c, n_t, ytilde, hist, trial, r_trial)
                    stored = 0
                    for j in range(d):
                        hist[0, j] = W[j, t]
        if not done:  # the scale at the last point (a stopping check computed it there)
            converged = False
            scale = _dual_scale(Xc, r, a, c, n_t, g_work)
        _task_scores(r, rw, lo, n_t, scale, scores)
    return epochs, converged


@njit(cache=True, nogil=True)
def _load_task(X, y, rw, mu, constant, W, t, lo, n_t, first, Xc, h, r,
               ytilde):  # pragma: no cover - compiled
    """Task ``t``'s centred, weighted columns ``Xc[j, :n_t] = D^{1/2} (X_t[:, j] - mu_jt)``
    (zero where ``constant``; ``first``: its first design row), their squared norms ``h``,
    ``ytilde = D^{1/2} y_t`` and the residual ``r = ytilde - Xc^T w_t``, into the given
    arrays."""
    d = W.shape[0]
    for i in range(n_t):
        sq = np.sqrt(rw[lo + i])
        r[i] = sq * y[lo + i]
        ytilde[i] = r[i]
        for j in range(d):
            Xc[j, i] = sq * (X[first + i, j] - mu[j, t])
    for j in range(d):
        if constant[j, t]:
            for i in range(n_t):
                Xc[j, i] = 0.0
        s = 0.0
        for i in range(n_t):
            s += Xc[j, i] * Xc[j, i]
        h[j] = s
    for j in range(d):
        w = W[j, t]
        if w != 0.0:
            for i in range(n_t):
                r[i] -= Xc[j, i] * w


@njit(cache=True, nogil=True)
def _task_scores(r, rw, lo, n_t, scale, scores):  # pragma: no cover - compiled
    """The task's part of the dual point (:func:`_task_epochs`' ``scores``): its residuals
    ``-r_i / sqrt(w_i)`` times ``scale``, the largest ``s <= 1`` of :func:`_dual_scale` at
    them."""
    for i in range(n_t):
        sq = np.sqrt(rw[lo + i])
        scores[lo + i] = -scale * r[i] / sq if sq > 0.0 else 0.0


def _entrywise_strengths(penalty: Penalty, d: int):
    """``(a, c)`` of a penalty of the elastic-net row family without group term (``b = 0``
    on every row), or None."""
    from multitask.penalties.row_blocks import row_blocks

    if penalty.parts or getattr(penalty.linear_map, "norm_sq", 1.0) != 1.0:
        return None
    blocks = row_blocks(penalty, d)
    if blocks is None or blocks.kind != "elastic_net" or np.any(blocks.b != 0.0):
        return None
    return blocks.a, blocks.c


class TaskCoordinateDescent(Solver):
    """Coordinate descent task by task (least squares, a penalty separable over the entries
    of ``W``; module docstring).

    Parameters
    ----------
    max_iter : int, default=10000
        Maximum number of epochs of a task, over the passes that tighten the inner criterion
        (``ConvergenceWarning`` when reached).
    tol : float, default=1e-4
        Tolerance on the certified relative duality gap.
    anderson : int, default=5
        Anderson extrapolation of each task's iterates every ``anderson`` epochs, kept when
        it lowers the task's objective (0 turns it off).
    warn : bool, default=True
    """

    name = "task_cd"
    max_preference = 95.0
    datafit_requires = frozenset({"least_squares"})
    penalty_requires = frozenset({"row_prox"})

    def __init__(self, *, max_iter: int = 10000, tol: float = 1e-4, anderson: int = 5,
                 warn: bool = True):
        super().__init__(max_iter=max_iter, tol=tol, warn=warn)
        self.anderson = check_int(anderson, "anderson", low=0)

    @classmethod
    def preference(cls, problem: Problem, **settings) -> float | None:
        """95 for a whole model with an l1 term (where it applies: least squares, a dense
        design, a penalty separable over the entries): ahead of the working sets (90) and
        block coordinate descent (70), which solve the same problem over all the tasks at
        once (``benchmarks/bench_auto_choice.py``; docs/scale.md). No claim on a pure ridge:
        coordinate descent crawls where a weak ridge is all that holds a task of fewer rows
        than features (accelerated gradient or the closed form take it)."""
        if problem.role != "model":
            return None
        strengths = _entrywise_strengths(problem.penalty, problem.datafit.data.n_features)
        if strengths is None or not np.any(strengths[0] > 0.0):
            return None
        if np.any((strengths[0] == 0.0) & (strengths[1] == 0.0)):
            return None  # free rows (a stage of the capped l1 penalty): not measured
        return 95.0

    def missing(self, datafit: Datafit, penalty: Penalty) -> list[str]:
        out = super().missing(datafit, penalty)
        if datafit.data.is_sparse:
            out.append("the design is sparse (coordinate descent on the residuals, 'cd', "
                       "reads its stored entries only)")
        if "row_prox" in penalty.capabilities and _entrywise_strengths(
                penalty, datafit.data.n_features) is None:
            out.append(f"the {penalty.name} penalty is not separable over the entries of W "
                       "(an elastic net without group term)")
        return out

    def solve(self, datafit: Datafit, penalty: Penalty, *, coef_init=None, intercept_init=None,
              callback: Callable | None = None) -> SolverResult:
        """Run the tasks (``callback`` after each pass over them); ``intercept_init`` is
        unused (the least-squares datafit eliminates the intercepts)."""
        from multitask.solvers.certificate import duality_gap

        run = IterationRecord(self, datafit, penalty, callback)
        W, _ = run.start(coef_init, None)
        W = np.array(W, dtype=np.float64, order="C")
        data = datafit.data
        d, m = W.shape
        strengths = _entrywise_strengths(penalty, d)
        assert strengths is not None
        a = np.ascontiguousarray(strengths[0], dtype=np.float64)
        c = np.array(strengths[1], dtype=np.float64)
        c += float(getattr(datafit, "alpha_l2", 0.0) or 0.0)  # the datafit's ridge
        X = np.ascontiguousarray(data.X, dtype=np.float64)
        y = np.ascontiguousarray(data.y, dtype=np.float64)
        rw = np.ascontiguousarray(data.row_weights, dtype=np.float64)
        offsets = np.asarray(data.offsets, dtype=np.int64)
        mu = (np.zeros((d, m)) if data.x_offset is None
              else np.ascontiguousarray(data.x_offset, dtype=np.float64))
        constant = (np.zeros((d, m), dtype=np.bool_) if data.x_constant is None
                    else np.ascontiguousarray(data.x_constant, dtype=np.bool_))
        scores = np.empty(y.shape[0])
        n_epochs = 0
        converged = False
        cert = None
        for inner_tol in inner_tolerances(self.tol):
            # the passes share the budget: n_epochs counts the slowest task's epochs of each
            epochs, _ = _task_epochs(X, y, offsets, bool(data.shared), rw, mu, constant, W,
                                     a, c, self.max_iter - n_epochs, inner_tol, self.anderson,
                                     scores)
            n_epochs += int(epochs.max(initial=0))
            cert = duality_gap(datafit, penalty, W, None, target=self.tol, dual_scores=scores)
            if cert is None:  # pragma: no cover - every elastic-net penalty has a dual
                break
            if run.gap_met(n_epochs, cert):
                converged = True
                break
            if n_epochs >= self.max_iter:
                break
            if run.notify(n_epochs, cert.primal, W, None):
                break
        return run.finish(W, None, n_iter=n_epochs, converged=converged, certificate=cert,
                          info={"best_objective": run.history[-1] if run.history else np.nan})
