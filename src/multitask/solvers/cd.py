"""Coordinate descent on the residuals for least squares and elastic-net rows (any design).

The model: the least-squares datafit of the data it sees (``"least_squares"``: ``F(W) =
sum_i w_i r_i^2 / 2`` with ``r_i = (x_i - mu_t)^T w_t - y_i`` for row ``i`` of task ``t``,
``w_i`` the row weights, ``mu_t`` the implicit centring offsets, plus ``(alpha_l2 / 2)
||W||_F^2``) and a penalty of the elastic-net row family (``"row_prox"``: ``a_j ||W_j.||_1 +
b_j ||W_j.||_2 + (c_j / 2) ||W_j.||_2^2``; l1, l2,1, the sparse group lasso, the weighted l1
of the capped-l1 stages)::

    min_W  F(W) + sum_j r_j(W_j.)

Unlike :mod:`multitask.solvers.bcd`, which works on Gram matrices (``d^2`` numbers per task,
an update of a row costs ``d m``), this solver keeps the residuals: an update of row ``j``
reads and writes the stored entries of column ``j`` only (``nnz_j`` per task, ``nnz_j m`` for
a shared design), the choice of scikit-learn's and skglm's coordinate descent. It wins where
the Gram matrices would be large against the data: sparse designs, or more active rows than
design rows (the working sets of :mod:`multitask.solvers.working_set` take it there).

The residuals without the centring are kept, ``u_i = x_i^T w_t - y_i``, with per task the
offset ``s_t = mu_t^T w_t`` and ``U_t = sum_{i in t} w_i u_i``, so that an update never touches
the rows a sparse column does not store:

    g_jt = sum_{i in t} w_i (x_ij - mu_jt) (u_i - s_t)
         = sum_{i in t} w_i x_ij u_i - s_t A_jt - mu_jt (U_t - s_t w_t),

``A_jt = sum_{i in t} w_i x_ij`` and ``w_t = sum_{i in t} w_i``; the curvature of entry
``(j, t)`` is ``H_jt = sum_{i in t} w_i (x_ij - mu_jt)^2``. Rows with ``b_j = 0`` are minimized
entry by entry exactly (``soft(H w - g, a) / (H + c)``); the others take one proximal step
with ``L_j = max_t H_jt`` (group soft-thresholding after soft-thresholding), as in block
coordinate descent.

Anderson extrapolation (skglm's and celer's acceleration of coordinate descent, as in
:mod:`multitask.solvers.bcd`): after every ``A`` epochs (``anderson``, default 5) the last
``A + 1`` iterates ``W^0 .. W^A`` give the combination ``sum_i c_i W^i`` (``sum_i c_i = 1``)
whose combined differences ``sum_i c_i (W^i - W^{i-1})`` have the least norm; it replaces
``W`` (its residuals recomputed: one pass over the columns) when it lowers the objective. Where
the columns outnumber the rows that carry them (more active rows than data rows, small
``alpha``), plain coordinate descent crawls and this cuts the epochs several times.

Epochs run until the largest change of an epoch is at most ``inner_tol`` times the largest
coefficient; then the certified relative duality gap of :mod:`multitask.solvers.base` is
computed (from the residuals: one product ``X^T theta``), and the run stops at ``tol`` (else
the inner criterion is tightened tenfold).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
from numba import njit

from multitask.losses import Datafit
from multitask.penalties.base import Penalty
from multitask.penalties.row_operators import elastic_net_row_prox
from multitask.solvers.anderson import anderson_point
from multitask.solvers.base import Solver, check_int
from multitask.solvers.iteration import IterationRecord, inner_tolerances
from multitask.solvers.problem import Problem
from multitask.solvers.result import SolverResult

__all__ = ["ResidualCoordinateDescent"]


@njit(cache=True)
def _cd_epochs(indptr, indices, data, shared, n, task_of_row, rw, u, s, U, wsum, mu, A, H, W,
               params, max_epochs, tol):  # pragma: no cover - compiled
    """Epochs of coordinate descent on the residuals (module docstring), in place on ``W``
    ``(k, m)``, ``u`` ``(N,)``, ``s`` and ``U`` ``(m,)``. Column ``j`` of the design is
    ``data[indptr[j]:indptr[j+1]]`` at rows ``indices[...]`` (design rows: ``0..n-1`` for a
    shared design, whose stacked row of task ``t`` is ``t n + i``; stacked rows else).
    Returns ``(epochs, converged)``."""
    k, m = W.shape
    g = np.empty(m)
    new = np.empty(m)
    v_row = np.empty(m)
    n_epochs = 0
    for epoch in range(max_epochs):
        n_epochs = epoch + 1
        max_change = 0.0
        max_coef = 0.0
        for j in range(k):
            for t in range(m):
                g[t] = 0.0
            if shared:
                for p in range(indptr[j], indptr[j + 1]):
                    i = indices[p]
                    x = data[p]
                    for t in range(m):
                        q = t * n + i
                        g[t] += rw[q] * x * u[q]
            else:
                for p in range(indptr[j], indptr[j + 1]):
                    i = indices[p]
                    g[task_of_row[i]] += rw[i] * data[p] * u[i]
            for t in range(m):
                g[t] -= s[t] * A[j, t] + mu[j, t] * (U[t] - s[t] * wsum[t])
            a = params[j, 0]
            b = params[j, 1]
            c = params[j, 2]
            if b == 0.0:
                for t in range(m):
                    h = H[j, t]
                    old = W[j, t]
                    if h + c <= 0.0:  # w_jt unseen: the l1 term's minimizer, 0
                        new[t] = 0.0 if a > 0.0 else old
                        continue
                    v = h * old - g[t]
                    if v > a:
                        new[t] = (v - a) / (h + c)
                    elif v < -a:
                        new[t] = (v + a) / (h + c)
                    else:
                        new[t] = 0.0
            else:
                Lj = 0.0
                for t in range(m):
                    if H[j, t] > Lj:
                        Lj = H[j, t]
                if Lj <= 0.0:
                    for t in range(m):
                        new[t] = W[j, t] if c <= 0.0 else 0.0
                else:
                    step = 1.0 / Lj
                    for t in range(m):
                        v_row[t] = W[j, t] - g[t] * step
                    elastic_net_row_prox(v_row, step, a, b, c, new)
            moved = False
            for t in range(m):
                delta = new[t] - W[j, t]
                if delta != 0.0:
                    moved = True
                    if abs(delta) > max_change:
                        max_change = abs(delta)
                if abs(new[t]) > max_coef:
                    max_coef = abs(new[t])
            if not moved:
                continue
            for t in range(m):
                delta = new[t] - W[j, t]
                g[t] = delta  # reuse: the changes of the row
                if delta != 0.0:
                    W[j, t] = new[t]
                    s[t] += mu[j, t] * delta
                    U[t] += A[j, t] * delta
            if shared:
                for p in range(indptr[j], indptr[j + 1]):
                    i = indices[p]
                    x = data[p]
                    for t in range(m):
                        if g[t] != 0.0:
                            u[t * n + i] += x * g[t]
            else:
                for p in range(indptr[j], indptr[j + 1]):
                    i = indices[p]
                    d_t = g[task_of_row[i]]
                    if d_t != 0.0:
                        u[i] += data[p] * d_t
        if max_change <= tol * max(max_coef, 1e-300):
            return n_epochs, True
    return n_epochs, False


class _Columns:
    """The columns of a design as CSC arrays (a dense design as a full CSC pattern, column
    major) with the per-task statistics the kernel reads."""

    def __init__(self, datafit: Datafit):
        data = datafit.data
        X = data.X
        if sp.issparse(X):
            C = sp.csc_matrix(X)
            C.sort_indices()
            self.indptr = C.indptr.astype(np.int64)
            self.indices = C.indices.astype(np.int64)
            self.values = np.asarray(C.data, dtype=np.float64)
        else:
            Xd = np.asarray(X, dtype=np.float64)
            rows, k = Xd.shape
            self.indptr = np.arange(0, rows * k + 1, rows, dtype=np.int64)
            self.indices = np.tile(np.arange(rows, dtype=np.int64), k)
            self.values = np.asfortranarray(Xd).ravel(order="F")
        self.shared = bool(data.shared)
        self.n = int(X.shape[0])
        m, k = data.n_tasks, data.n_features
        self.task_of_row = np.asarray(data.task_of_row, dtype=np.int64)
        self.rw = np.ascontiguousarray(data.row_weights, dtype=np.float64)
        self.wsum = np.asarray(data.task_sum(self.rw), dtype=np.float64)
        self.mu = (np.zeros((k, m)) if data.x_offset is None
                   else np.ascontiguousarray(data.x_offset, dtype=np.float64))
        # A_jt = sum_{i in t} w_i x_ij and S2_jt = sum_{i in t} w_i x_ij^2
        self.A = np.ascontiguousarray(self._weighted_sums(self.rw))
        S2 = self._weighted_sums(self.rw, square=True)
        H = S2 - 2.0 * self.mu * self.A + self.mu * self.mu * self.wsum[None, :]
        self.H = np.ascontiguousarray(np.maximum(H, 0.0))

    def _weighted_sums(self, rw: np.ndarray, square: bool = False) -> np.ndarray:
        """``sum_{i in t} rw_i x_ij`` (or ``x_ij^2``) for every column and task, ``(k, m)``."""
        k = self.indptr.size - 1
        m = self.wsum.size
        vals = self.values * self.values if square else self.values
        col = np.repeat(np.arange(k), np.diff(self.indptr))
        out = np.zeros((k, m))
        if self.shared:
            R = rw.reshape(m, self.n)  # (m, n)
            for t in range(m):
                out[:, t] = np.bincount(col, weights=vals * R[t, self.indices], minlength=k)
        else:
            tor = self.task_of_row[self.indices]
            np.add.at(out, (col, tor), vals * rw[self.indices])
        return out

    def objective(self, W: np.ndarray, u: np.ndarray, params: np.ndarray) -> float:
        """``sum_i rw_i (u_i - s_t)^2 / 2 + sum_j (a_j ||W_j||_1 + b_j ||W_j||_2 + c_j
        ||W_j||^2 / 2)``: the model's objective at ``W`` with residuals ``u`` (``params``
        with the datafit's ridge in ``c``), up to the constant the centring drops."""
        s = np.einsum("jt,jt->t", self.mu, W)
        k, m = W.shape
        r = u.reshape(m, -1) - s[:, None] if self.shared else u - s[self.task_of_row]
        sq = np.einsum("jt,jt->j", W, W)
        return (0.5 * float(self.rw @ (r.ravel() * r.ravel()))
                + float(params[:, 0] @ np.abs(W).sum(axis=1) + params[:, 1] @ np.sqrt(sq)
                        + 0.5 * params[:, 2] @ sq))

    def residual(self, W: np.ndarray, y: np.ndarray) -> np.ndarray:
        """``u_i = x_i^T w_t - y_i`` (uncentred scores), stacked ``(N,)``."""
        k, m = W.shape
        col = np.repeat(np.arange(k), np.diff(self.indptr))
        if self.shared:
            Z = np.zeros((m, self.n))
            for t in range(m):
                Z[t] = np.bincount(self.indices, weights=self.values * W[col, t],
                                   minlength=self.n)
            return Z.ravel() - y
        N = y.size
        z = np.bincount(self.indices, weights=self.values * W[col, self.task_of_row[self.indices]],
                        minlength=N)
        return z - y


def _extrapolate(cols: _Columns, W: np.ndarray, u: np.ndarray, y: np.ndarray,
                 params: np.ndarray, hist: list[np.ndarray]):
    """Anderson's combination of the iterates ``hist`` (module docstring): ``(W, u)`` at it
    when it lowers the objective below that of ``W`` (residuals ``u``), else ``None``."""
    point = anderson_point(np.stack(hist))
    if point is None:
        return None
    We = np.ascontiguousarray(point)
    ue = cols.residual(We, y)
    before = cols.objective(W, u, params)
    after = cols.objective(We, ue, params)
    if not after < before - 1e-15 * abs(before):
        return None
    return We, ue


class ResidualCoordinateDescent(Solver):
    """Coordinate descent on the residuals (least squares, elastic-net rows; module
    docstring).

    Parameters
    ----------
    max_iter : int, default=10000
        Maximum number of epochs (``ConvergenceWarning`` when reached).
    tol : float, default=1e-4
        Tolerance on the certified relative duality gap.
    anderson : int, default=5
        Anderson extrapolation every ``anderson`` epochs, from the last ``anderson + 1``
        iterates, kept when it lowers the objective (0 turns it off).
    warn : bool, default=True
    """

    name = "cd"
    max_preference = 60.0
    roles = frozenset({"model", "inner"})

    @classmethod
    def preference_ceiling(cls, problem: Problem, **settings) -> float:
        """The highest score :meth:`preference` can give ``problem``: 60 for an inner
        problem, ``-inf`` (no claim) for a whole model."""
        return 60.0 if problem.role == "inner" else float("-inf")

    @classmethod
    def preference(cls, problem: Problem, **settings) -> float | None:
        """60 for a working set's subproblems (behind coordinate descent on Gram matrices,
        which applies where the subproblem forms them); a whole model is not given to it
        automatically (block coordinate descent or the working sets take those)."""
        return 60.0 if problem.role == "inner" else None

    def __init__(self, *, max_iter: int = 10000, tol: float = 1e-4, anderson: int = 5,
                 warn: bool = True):
        super().__init__(max_iter=max_iter, tol=tol, warn=warn)
        self.anderson = check_int(anderson, "anderson", low=0)
    datafit_requires = frozenset({"least_squares"})
    penalty_requires = frozenset({"row_prox"})

    def missing(self, datafit: Datafit, penalty: Penalty) -> list[str]:
        out = super().missing(datafit, penalty)
        if getattr(penalty, "row_prox_family", "elastic_net") != "elastic_net":
            out.append(f"the {penalty.name} penalty's rows are not of the elastic-net family")
        if penalty.parts or getattr(penalty.linear_map, "norm_sq", 1.0) != 1.0:
            out.append(f"the {penalty.name} penalty acts on a split variable, not on W")
        return out

    def solve(self, datafit: Datafit, penalty: Penalty, *, coef_init=None, intercept_init=None,
              callback: Callable | None = None) -> SolverResult:
        """Run the epochs (``callback`` after each batch); ``intercept_init`` is unused (the
        least-squares datafit eliminates the intercepts)."""
        from multitask.penalties.row_blocks import row_blocks
        from multitask.solvers.certificate import duality_gap

        run = IterationRecord(self, datafit, penalty, callback)
        W, _ = run.start(coef_init, None)
        W = np.ascontiguousarray(W, dtype=np.float64)
        k, m = W.shape
        cols = _Columns(datafit)
        blocks = row_blocks(penalty, k)
        assert blocks is not None and blocks.kind == "elastic_net"
        params = np.ascontiguousarray(np.column_stack([blocks.a, blocks.b, blocks.c]))
        a2 = float(getattr(datafit, "alpha_l2", 0.0) or 0.0)
        if a2:
            params[:, 2] += a2  # the datafit's ridge is a ridge on every row
        y = np.asarray(datafit.data.y, dtype=np.float64)
        u = cols.residual(W, y)
        s = np.einsum("jt,jt->t", cols.mu, W)
        U = np.asarray(datafit.data.task_sum(cols.rw * u), dtype=np.float64)
        n_epochs = 0
        converged = False
        cert = None
        A = self.anderson
        for inner_tol in inner_tolerances(self.tol):
            if n_epochs >= self.max_iter:
                break
            hist = [W.copy()]
            while n_epochs < self.max_iter:  # epochs, one at a time with extrapolation
                done, inner_done = _cd_epochs(
                    cols.indptr, cols.indices, cols.values, cols.shared, cols.n,
                    cols.task_of_row, cols.rw, u, s, U, cols.wsum, cols.mu, cols.A, cols.H,
                    W, params, 1 if A else self.max_iter - n_epochs, inner_tol)
                n_epochs += int(done)
                if inner_done or not A:
                    break
                hist.append(W.copy())
                if len(hist) == A + 1:
                    better = _extrapolate(cols, W, u, y, params, hist)
                    if better is not None:
                        W[:], u = better
                        s = np.einsum("jt,jt->t", cols.mu, W)
                        U = np.asarray(datafit.data.task_sum(cols.rw * u), dtype=np.float64)
                    hist = [W.copy()]
            # the residuals drift by rounding over many updates: recomputed before certifying
            u = cols.residual(W, y)
            s = np.einsum("jt,jt->t", cols.mu, W)
            U = np.asarray(datafit.data.task_sum(cols.rw * u), dtype=np.float64)
            cert = duality_gap(datafit, penalty, W, None, target=self.tol)
            if cert is None:  # pragma: no cover - every elastic-net penalty has a dual
                break
            if run.gap_met(n_epochs, cert):
                converged = True
                break
            if run.notify(n_epochs, cert.primal, W, None):
                break
        return run.finish(W, None, n_iter=n_epochs, converged=converged, certificate=cert,
                          info={"best_objective": run.history[-1] if run.history else np.nan})
