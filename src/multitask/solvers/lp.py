"""Exact solver of a piecewise-linear loss over a polyhedral set, as a linear program.

With the scaling of :mod:`multitask.losses`, the problem

    min_{W, b}  sum_t (1 / n_t) sum_{i in t} max(0, 1 - y_i (x_i^T w_t + b_t))
    subject to  W in K

is a linear program when ``K`` is a polyhedron. Hinge slacks ``xi_i >= 0`` and
``xi_i >= 1 - y_i (x_i^T w_t + b_t)`` replace the loss, and bound variables ``a >= |W|`` replace
the norm:

* l1,inf ball (Quattoni, Carreras, Collins & Darrell), one bound per feature:
  ``-a_j <= W_jt <= a_j`` for every task ``t``, ``sum_j a_j <= C``;
* per-task l1 balls, one bound per coefficient:
  ``-a_jt <= W_jt <= a_jt``, ``sum_j a_jt <= C_t`` for every task ``t``.

The variables are ``(W, a, b, xi)`` with ``W`` and ``b`` free (``W`` need not be split into
positive and negative parts, so the loss rows hold each entry of ``X`` once). The program is
solved by HiGHS through :func:`scipy.optimize.linprog`, by interior point followed by HiGHS's
crossover (default) or by dual simplex; both return a vertex (a basic solution): as many
linearly independent constraints are active there as there are variables, so few entries of
``W`` are nonzero. An interior-point solution without crossover lies in the relative interior
of the optimal face (the largest support of any optimum), and a projected subgradient iterate
approximates the optimum without its exact zeros. The per-task l2 balls are not polyhedral,
hence not an LP.

The solver needs a loss of the form ``ell(y_i, z) = max(0, a_i z + c_i) + l_i z + k_i``
(``"max_affine"``: the hinge has ``a_i = -y_i``, ``c_i = 1`` and no linear part; the pinball loss
of quantile regression ``a_i = 1``, ``c_i = -y_i``, ``l_i = -tau``, ``k_i = tau y_i``, whose
linear part enters the objective, :meth:`~multitask.losses.Datafit.max_affine_linear`) and a
set given by linear inequalities on ``W`` and auxiliary variables (``"lp"``:
:meth:`~multitask.penalties.base.Penalty.lp_constraints`). The
constraint matrix is assembled with :mod:`scipy.sparse` from shared or per-task designs,
dense or sparse; for ``N`` stacked rows it has ``N + 2 d m + (1 or m)`` rows and
``nnz(stacked X) + N (+ N with intercepts) + 4 d m + (d or d m)`` entries (a shared design is
repeated once per task).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog
from sklearn.exceptions import ConvergenceWarning

from multitask.data import MultiTaskData
from multitask.losses import Datafit
from multitask.penalties.base import Penalty
from multitask.solvers.base import Solver
from multitask.solvers.iteration import IterationRecord
from multitask.solvers.problem import Problem
from multitask.solvers.result import SolverResult

__all__ = ["LP_AUTO_MAX_ENTRIES", "LP_METHODS", "LinearProgram", "build_lp", "design_scale"]

#: HiGHS methods: interior point followed by HiGHS's crossover to a vertex (``"highs-ipm"``),
#: dual simplex (``"highs-ds"``), or HiGHS's choice (``"highs"``).
LP_METHODS = ("highs-ipm", "highs-ds", "highs")


def _stacked_csr(data: MultiTaskData) -> sp.csr_matrix:
    """The stacked design ``(N, d)`` as CSR (a shared design repeated once per task)."""
    X = data.X
    Xc = sp.csr_matrix(X, dtype=np.float64)
    if data.shared:
        Xc = sp.vstack([Xc] * data.n_tasks, format="csr")
    return Xc


def _loss_block(data: MultiTaskData, a: np.ndarray, scale: float = 1.0) -> sp.csr_matrix:
    """``A[i, t(i) d + j] = a_i X_ij``: the score part of the loss rows, shape ``(N, d m)``.

    ``W`` is vectorized task by task (``W.T.ravel()``), so row ``i`` lives in the column block
    of its task: the column indices of the stacked CSR design are shifted by ``t(i) d``.
    """
    Xc = _stacked_csr(data)
    d, m = data.n_features, data.n_tasks
    counts = np.diff(Xc.indptr)
    shift = np.repeat(data.task_of_row * d, counts)
    vals = Xc.data * np.repeat(a, counts) / scale
    return sp.csr_matrix((vals, Xc.indices + shift, Xc.indptr), shape=(data.n_rows, d * m))


def largest_magnitude(X) -> float:
    """``max |X_ij|`` of a dense or sparse design (its stored values; 0 for an empty one)."""
    values = np.asarray(X.data) if sp.issparse(X) else np.asarray(X)
    return float(np.max(np.abs(values))) if values.size else 0.0


def design_scale(data: MultiTaskData) -> float:
    """The largest magnitude of the design, or 1 when it lies in ``[1e-3, 1e3]`` (or is 0)."""
    top = largest_magnitude(data.X)
    return top if top > 0 and not 1e-3 <= top <= 1e3 else 1.0


def build_lp(datafit: Datafit, penalty: Penalty, scale: float = 1.0):
    """Assemble the linear program in ``linprog``'s form.

    Variables ``z = (vec W', u', b, xi)``: ``vec W' = scale * W.T.ravel()``, the penalty's
    auxiliary variables ``u' >= 0`` (scaled alike), the intercepts ``b`` (free, when fitted) and
    the loss slacks ``xi >= 0`` with ``xi_i >= a_i (x_i^T w_t + b_t) + c_i``. The design enters
    divided by ``scale`` and the set's right-hand side multiplied by it: a polyhedron
    ``{A z <= c}`` scaled by ``scale`` is ``{A z' <= scale c}``, so the program is the same
    while HiGHS sees entries of moderate size.

    A linear part ``l_i z_i + k_i`` of the rows' losses
    (:meth:`~multitask.losses.Datafit.max_affine_linear`) adds ``sum_i w_i l_i x_i / scale`` to
    the objective's coefficients of the task's weights and ``sum_i w_i l_i`` to its intercept's;
    ``sum_i w_i k_i`` is a constant (``sizes["constant"]``).

    Returns
    -------
    c : ndarray
        Objective: ``1 / n_t`` on the slack of each row (the row weights), the linear part on
        the weights and intercepts, 0 elsewhere.
    A_ub : scipy.sparse.csr_matrix
        Inequality rows ``A_ub z <= b_ub``: the loss rows, then the penalty's rows.
    b_ub : ndarray
    bounds : ndarray of shape (n_variables, 2)
    sizes : dict
        Lengths of the blocks ``W``, ``u``, ``b`` and ``xi`` of ``z``, and the objective's
        ``"constant"`` (the model's objective is the program's plus it).
    """
    data = datafit.data
    if data.x_offset is not None:
        raise ValueError("The LP solver does not handle implicitly centred data (x_offset).")
    d, m, N = data.n_features, data.n_tasks, data.n_rows
    dm = d * m
    a, c0 = datafit.max_affine_pieces()
    A_w, A_u, c_set, n_u = penalty.lp_constraints(d, m)
    n_b = m if datafit.has_intercept_variable else 0

    # loss rows: a_i x_i^T w_t + a_i b_t - xi_i <= -c_i
    blocks = [_loss_block(data, a, scale), sp.csr_matrix((N, n_u))]
    if n_b:
        blocks.append(sp.csr_matrix((a, (np.arange(N), data.task_of_row)), shape=(N, m)))
    blocks.append(-sp.identity(N, format="csr"))
    A_loss = sp.hstack(blocks, format="csr")
    k_set = A_w.shape[0]
    A_set = sp.hstack([A_w, A_u, sp.csr_matrix((k_set, n_b + N))], format="csr")
    A_ub = sp.vstack([A_loss, A_set], format="csr")
    b_ub = np.concatenate([-np.asarray(c0, dtype=np.float64), scale * np.asarray(c_set)])
    c = np.concatenate([np.zeros(dm + n_u + n_b), data.row_weights])
    constant = 0.0
    linear = datafit.max_affine_linear()
    if linear is not None:
        wl = data.row_weights * np.asarray(linear[0], dtype=np.float64)
        c[:dm] += np.asarray(_loss_block(data, wl, scale).sum(axis=0)).ravel()
        if n_b:
            c[dm + n_u : dm + n_u + n_b] += data.task_sum(wl)
        constant = float(data.row_weights @ np.asarray(linear[1], dtype=np.float64))
    bounds = np.empty((dm + n_u + n_b + N, 2))
    bounds[:, 0], bounds[:, 1] = 0.0, np.inf
    bounds[:dm, 0] = -np.inf
    bounds[dm + n_u : dm + n_u + n_b, 0] = -np.inf
    return c, A_ub, b_ub, bounds, {"W": dm, "u": n_u, "b": n_b, "xi": N, "constant": constant}


def _dual_objective(res, b_ub: np.ndarray, bounds: np.ndarray) -> float:
    """The dual objective ``b_ub^T lambda + l^T mu_l + u^T mu_u`` from HiGHS's marginals."""
    val = float(b_ub @ res.ineqlin.marginals)
    lo, hi = bounds[:, 0], bounds[:, 1]
    fin = np.isfinite(lo)
    val += float(lo[fin] @ res.lower.marginals[fin])
    fin = np.isfinite(hi)
    val += float(hi[fin] @ res.upper.marginals[fin])
    return val


#: Largest number of stored entries of the stacked design (``m`` times a shared design's) for
#: which ``solver="auto"`` solves a piecewise-linear loss exactly as a linear program (larger
#: problems go to the subgradient method).
LP_AUTO_MAX_ENTRIES = 200_000

class LinearProgram(Solver):
    """Exact solution of a piecewise-linear loss over a polyhedral set (HiGHS).

    Parameters
    ----------
    method : {"highs-ipm", "highs-ds", "highs"}, default="highs-ipm"
        HiGHS method: interior point followed by HiGHS's crossover to a vertex (the fastest on
        the l1,inf problems measured), dual simplex (a vertex), or HiGHS's choice.
    zero_tol : float, default=1e-12
        Entries of ``W`` with ``|W_jt| <= zero_tol * max(1, max |W|)`` are set to 0 (rounding
        left in basic variables that are zero at the vertex).
    options : dict, optional
        Extra options passed to ``linprog`` (``time_limit``, ``presolve``, ...).
    max_iter, tol, warn
        ``max_iter`` is HiGHS's iteration limit (``ConvergenceWarning`` when reached);
        ``converged`` means HiGHS reported an optimum whose relative duality gap
        ``(primal - dual) / |primal|`` (from HiGHS's dual solution: a certificate of the model,
        which the linear program is exactly), the reported optimality measure, is at most
        ``tol`` (HiGHS's own tolerances decide when it stops).

    Notes
    -----
    The returned ``W`` is made feasible by the penalty's projection when the LP tolerance left
    it outside the set (by a relative ~1e-9).
    """

    name = "lp"
    datafit_requires = frozenset({"max_affine"})
    penalty_requires = frozenset({"lp"})

    @classmethod
    def preference(cls, problem: Problem, **settings) -> float | None:
        """40 up to :data:`LP_AUTO_MAX_ENTRIES` stored entries of the stacked design (an exact
        solve); beyond, not taken automatically."""
        return 40.0 if problem.stored_entries <= LP_AUTO_MAX_ENTRIES else None

    def __init__(self, *, method: str = "highs-ipm", zero_tol: float = 1e-12,
                 options: dict | None = None, max_iter: int = 1000, tol: float = 1e-4,
                 warn: bool = True):
        super().__init__(max_iter=max_iter, tol=tol, warn=warn)
        if method not in LP_METHODS:
            raise ValueError(f"method must be one of {LP_METHODS}, got {method!r}.")
        self.method = method
        self.zero_tol = float(zero_tol)
        self.options = options

    def solve(self, datafit: Datafit, penalty: Penalty, *, coef_init=None, intercept_init=None,
              callback: Callable | None = None) -> SolverResult:
        """Solve the program (warm starts and callbacks do not apply)."""
        run = IterationRecord(self, datafit, penalty)
        data = datafit.data
        d, m = data.n_features, data.n_tasks
        scale = design_scale(data)
        c, A_ub, b_ub, bounds, sizes = build_lp(datafit, penalty, scale)
        options = {"maxiter": self.max_iter, **(self.options or {})}
        res = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=bounds, method=self.method,
                      options=options)
        if res.x is None and res.status == 4:
            raise ValueError(
                "The linear program could not be solved: HiGHS reports numerical difficulties "
                f"({res.message}). The design is probably degenerate or badly scaled (largest "
                f"feature entry {largest_magnitude(data.X):.3g}): standardize the features, or "
                "choose a first-order solver (see the estimator's 'solver' parameter).")
        if res.x is None and res.status != 1:
            raise RuntimeError(f"HiGHS returned no solution (status {res.status}): "
                               f"{res.message}")
        if res.status != 0 and self.warn:
            warnings.warn(f"HiGHS stopped before optimality (status {res.status}): "
                          f"{res.message} Increase max_iter (now {self.max_iter}).",
                          ConvergenceWarning, stacklevel=2)
        if res.x is None:  # the iteration limit before any feasible point: W = 0 is feasible
            z = np.zeros(c.shape[0])
        else:
            z = res.x
        W = z[: sizes["W"]].reshape(m, d).T.copy()  # the scaled weights W' = scale * W
        W[np.abs(W) <= self.zero_tol * max(1.0, float(np.abs(W).max(initial=0.0)))] = 0.0
        W /= scale
        if not np.isfinite(penalty.value(W)):
            W = penalty.prox(W, 0.0)
        off = sizes["W"] + sizes["u"]
        b = z[off : off + sizes["b"]].copy() if sizes["b"] else None
        F = datafit.value(W, b)
        try:
            dual = _dual_objective(res, b_ub, bounds) + sizes["constant"]
            fun = float(res.fun) + sizes["constant"]
            gap = max(fun - dual, 0.0) / max(abs(fun), np.finfo(float).tiny)
        except (AttributeError, TypeError, ValueError):
            gap = float("nan")
        if res.x is None:
            gap = float("nan")
        converged = bool(res.status == 0) and not gap > self.tol
        run.record(F)
        # HiGHS's dual solution certifies the linear program, which is the model itself: its
        # relative gap is the certificate (the subgradient dual point of the generic one is
        # loose at the hinge's kinks, where a vertex solution puts many rows)
        return run.finish(W, b, n_iter=int(getattr(res, "nit", 0)), converged=converged,
                          measure=gap, certify_model=False, certified=bool(np.isfinite(gap)),
                          exhausted=False,  # HiGHS's own warning above says why it stopped
                          info={"best_objective": F, "status": int(res.status),
                                "message": str(res.message),
                                "lp_objective": (float("nan") if res.fun is None
                                                 else float(res.fun)),
                                "lp_shape": A_ub.shape, "method": self.method,
                                "crossover_nit": getattr(res, "crossover_nit", None)})
