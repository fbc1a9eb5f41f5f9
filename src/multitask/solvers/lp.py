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

A polyhedral norm as a penalty, ``min_W loss + alpha Omega(W)``, is the same program with the
bounds' cost in the objective instead of a radius (:meth:`~multitask.penalties.base.Penalty.
lp_cost`):

* l1 (quantile regression's lasso, scikit-learn's ``QuantileRegressor``): ``-a_jt <= W_jt <=
  a_jt``, cost ``alpha sum_jt a_jt``;
* l1,inf: ``-a_j <= W_jt <= a_j``, cost ``alpha sum_j a_j``.

The variables are ``(W, a, b, xi)`` with ``W`` and ``b`` free (``W`` need not be split into
positive and negative parts, so the loss rows hold each entry of ``X`` once). The program is
solved by HiGHS through :func:`scipy.optimize.linprog`, by interior point followed by HiGHS's
crossover or by dual simplex; both return a vertex (a basic solution): as many linearly
independent constraints are active there as there are variables, so few entries of ``W`` are
nonzero. An interior-point solution without crossover lies in the relative interior of the
optimal face (the largest support of any optimum), and a projected subgradient iterate
approximates the optimum without its exact zeros. The per-task l2 balls are not polyhedral,
hence not an LP.

**The dual program.** The primal has a row per data row (``N + 2 d m + ...`` rows), so a
simplex basis of that size. Its dual (:func:`dual_program`) has a variable ``lambda_i in [0,
w_i]`` per data row (the slack ``xi_i``'s column becomes a bound) and a row per weight,
intercept and bound variable (``d m + m + n_aux`` rows)::

    min_{lambda, mu >= 0}  b^T (lambda, mu)
    s.t.  A_free^T (lambda, mu) = -c_free     (W and b: free in the primal)
          -A_a^T (lambda, mu) <= c_a          (the bounds a >= 0)
          lambda_i <= w_i                      (the slacks xi_i >= 0)

with the primal's ``(c, A, b)`` of :func:`build_lp`. Where the data rows outnumber the
weights (the usual case) its basis is far smaller, and the dual simplex on it is several times
faster than either method on the primal (quantile regression with an l1 penalty; it is what
``form="auto"`` takes for a norm as penalty when the dual has fewer rows; a set such as
the l1,inf ball keeps the primal). The primal ``(W, b)`` are the marginals
of its equality rows (LP duality: the sensitivity of the optimum to ``c_free``), a vertex of the
primal's optimal set as the simplex's basis is one of the dual's.

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

__all__ = ["LP_AUTO_MAX_ENTRIES", "LP_DUAL_AUTO_MAX_ENTRIES", "LP_FORMS", "LP_METHODS",
           "LinearProgram", "build_lp", "design_scale", "dual_program"]

#: HiGHS methods: interior point followed by HiGHS's crossover to a vertex (``"highs-ipm"``),
#: dual simplex (``"highs-ds"``), HiGHS's choice (``"highs"``), or ``"auto"``: interior point
#: on the primal program, dual simplex on the dual one.
LP_METHODS = ("auto", "highs-ipm", "highs-ds", "highs")

#: The program handed to HiGHS: the primal of :func:`build_lp`, its dual (:func:`dual_program`),
#: or ``"auto"``: the one with fewer rows.
LP_FORMS = ("auto", "primal", "dual")


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
        the weights and intercepts, a norm's cost on its bound variables
        (:meth:`~multitask.penalties.base.Penalty.lp_cost`), 0 elsewhere.
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
    cost = penalty.lp_cost(d, m)
    k_set = A_w.shape[0]
    A_set = sp.hstack([A_w, A_u, sp.csr_matrix((k_set, n_b + N))], format="csr")
    A_ub = sp.vstack([A_loss, A_set], format="csr")
    b_ub = np.concatenate([-np.asarray(c0, dtype=np.float64), scale * np.asarray(c_set)])
    c = np.concatenate([np.zeros(dm + n_u + n_b), data.row_weights])
    if cost is not None:  # a norm's bounds u' = scale u: alpha sum u = (alpha / scale) sum u'
        c[dm : dm + n_u] = np.asarray(cost, dtype=np.float64) / scale
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


def dual_program(c: np.ndarray, A_ub: sp.csr_matrix, b_ub: np.ndarray, sizes: dict):
    """The dual of :func:`build_lp`'s program (module docstring), in ``linprog``'s form.

    Variables ``y = (lambda, mu) >= 0``: one per row of ``A_ub`` (the ``N`` loss rows first),
    ``lambda_i <= c_xi_i`` (the row weights) as bounds.

    Returns
    -------
    f : ndarray
        ``b_ub``: the dual's objective, minimized (its optimum is minus the primal's).
    A_eq, b_eq : scipy.sparse.csr_matrix, ndarray
        ``A_free^T y = -c_free`` over the primal's free columns (``W`` then ``b``): their
        marginals are the primal's ``(W, b)``.
    A_ub, b_ub : scipy.sparse.csr_matrix or None, ndarray or None
        ``-A_a^T y <= c_a`` over the bound variables (None without them).
    bounds : ndarray of shape (N + k, 2)
    """
    dm, n_u, n_b, N = sizes["W"], sizes["u"], sizes["b"], sizes["xi"]
    At = A_ub.T.tocsr()  # rows: the primal's columns
    free = np.r_[0:dm, dm + n_u : dm + n_u + n_b]
    A_eq = At[free]
    b_eq = -c[free]
    A_in = b_in = None
    if n_u:
        A_in = -At[dm : dm + n_u]
        b_in = c[dm : dm + n_u]
    bounds = np.zeros((A_ub.shape[0], 2))
    bounds[:, 1] = np.inf
    bounds[:N, 1] = c[dm + n_u + n_b :]
    return b_ub, A_eq, b_eq, A_in, b_in, bounds


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

#: The same bound for a program whose dual ``form="auto"`` solves (far fewer rows than data
#: rows: the dual simplex's basis grows with the weights, not with the rows).
LP_DUAL_AUTO_MAX_ENTRIES = 5_000_000

def _dual_is_smaller(d: int, m: int, n_rows: int, n_aux: int | None = None) -> bool:
    """Whether the dual program has fewer rows than the primal: ``d m + m + n_aux`` against
    ``N + 2 d m`` (``n_aux`` unknown: at most ``d m``)."""
    aux = d * m if n_aux is None else n_aux
    return d * m + m + aux < n_rows + 2 * d * m


def _is_penalized(penalty: Penalty, d: int, m: int) -> bool:
    """Whether ``penalty`` is a norm with a cost on its bound variables (not a set)."""
    return penalty.lp_cost(d, m) is not None


class LinearProgram(Solver):
    """Exact solution of a piecewise-linear loss over a polyhedral set, or with a polyhedral
    norm as its penalty (HiGHS).

    Parameters
    ----------
    method : {"auto", "highs-ipm", "highs-ds", "highs"}, default="auto"
        HiGHS method: interior point followed by HiGHS's crossover to a vertex (the fastest on
        the primal l1,inf problems measured), dual simplex (a vertex), HiGHS's choice, or
        ``"auto"``: interior point on the primal program, dual simplex on the dual one.
    form : {"auto", "primal", "dual"}, default="auto"
        The program solved: the primal (module docstring), its dual (a row per weight instead
        of a row per data row; the weights are its equality rows' marginals), or
        ``"auto"``: for a norm as penalty the one with fewer rows, for a set the primal.
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
        ``tol`` (HiGHS's own tolerances decide when it stops). With the dual program the
        primal value is the model's objective at the returned ``(W, b)`` and the dual value
        the dual program's.

    Notes
    -----
    The returned ``W`` is made feasible by the penalty's projection when the LP tolerance left
    it outside the set (by a relative ~1e-9).
    """

    name = "lp"
    max_preference = 40.0
    datafit_requires = frozenset({"max_affine"})
    penalty_requires = frozenset({"lp"})

    @classmethod
    def preference(cls, problem: Problem, **settings) -> float | None:
        """40 up to :data:`LP_AUTO_MAX_ENTRIES` stored entries of the stacked design, or up to
        :data:`LP_DUAL_AUTO_MAX_ENTRIES` where the dual program has fewer rows (an exact
        solve); beyond, not taken automatically."""
        entries = problem.stored_entries
        if entries <= LP_AUTO_MAX_ENTRIES:
            return 40.0
        d, m = problem.n_features, problem.n_tasks
        small_dual = (_is_penalized(problem.penalty, d, m)
                      and _dual_is_smaller(d, m, problem.n_rows))
        return 40.0 if small_dual and entries <= LP_DUAL_AUTO_MAX_ENTRIES else None

    def __init__(self, *, method: str = "auto", form: str = "auto", zero_tol: float = 1e-12,
                 options: dict | None = None, max_iter: int = 1000, tol: float = 1e-4,
                 warn: bool = True):
        super().__init__(max_iter=max_iter, tol=tol, warn=warn)
        if method not in LP_METHODS:
            raise ValueError(f"method must be one of {LP_METHODS}, got {method!r}.")
        if form not in LP_FORMS:
            raise ValueError(f"form must be one of {LP_FORMS}, got {form!r}.")
        self.method = method
        self.form = form
        self.zero_tol = float(zero_tol)
        self.options = options

    def _form(self, sizes: dict, primal_rows: int, penalized: bool) -> str:
        """The program to solve: ``form``, or for ``"auto"`` the one with fewer rows where
        the penalty is a norm (its cost in the objective) and the primal for a set (a ball).

        The dual program by dual simplex was measured on penalized programs (quantile
        regression with an l1 penalty); on the l1,inf and l1 balls of the paper's
        experiment it stopped at ``max_iter`` simplex iterations with ``W = 0``, where
        interior point on the primal (the choice for sets before the dual program existed)
        solves them."""
        if self.form != "auto":
            return self.form
        if not penalized:
            return "primal"
        dual_rows = sizes["W"] + sizes["b"] + sizes["u"]
        return "dual" if dual_rows < primal_rows else "primal"

    def _method(self, form: str) -> str:
        if self.method != "auto":
            return self.method
        return "highs-ds" if form == "dual" else "highs-ipm"

    def solve(self, datafit: Datafit, penalty: Penalty, *, coef_init=None, intercept_init=None,
              callback: Callable | None = None) -> SolverResult:
        """Solve the program (warm starts and callbacks do not apply)."""
        run = IterationRecord(self, datafit, penalty)
        data = datafit.data
        d, m = data.n_features, data.n_tasks
        scale = design_scale(data)
        c, A_ub, b_ub, bounds, sizes = build_lp(datafit, penalty, scale)
        form = self._form(sizes, A_ub.shape[0], _is_penalized(penalty, d, m))
        method = self._method(form)
        options = {"maxiter": self.max_iter, **(self.options or {})}
        if form == "dual":
            f, A_eq, b_eq, A_in, b_in, dual_bounds = dual_program(c, A_ub, b_ub, sizes)
            res = linprog(f, A_ub=A_in, b_ub=b_in, A_eq=A_eq, b_eq=b_eq, bounds=dual_bounds,
                          method=method, options=options)
            shape = (A_eq.shape[0] + (0 if A_in is None else A_in.shape[0]), A_eq.shape[1])
        else:
            res = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=bounds, method=method,
                          options=options)
            shape = A_ub.shape
        self._check_status(res, data)
        n_free = sizes["W"] + sizes["u"] + sizes["b"]
        if res.x is None:  # the iteration limit before any feasible point: W = 0 is feasible
            z = np.zeros(n_free)
        elif form == "dual":  # (W', b) are the marginals of the equality rows
            marg = np.asarray(res.eqlin.marginals, dtype=np.float64)
            z = np.concatenate([marg[: sizes["W"]], np.zeros(sizes["u"]), marg[sizes["W"]:]])
        else:
            z = res.x
        W = z[: sizes["W"]].reshape(m, d).T.copy()  # the scaled weights W' = scale * W
        W[np.abs(W) <= self.zero_tol * max(1.0, float(np.abs(W).max(initial=0.0)))] = 0.0
        W /= scale
        if not np.isfinite(penalty.value(W)):
            W = penalty.prox(W, 0.0)
        off = sizes["W"] + sizes["u"]
        b = z[off : off + sizes["b"]].copy() if sizes["b"] else None
        F = datafit.value(W, b) + penalty.value(W)  # a set's value: 0 (W is feasible)
        gap = self._gap(res, form, F, b_ub, bounds, sizes["constant"])
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
                                "lp_shape": shape, "method": method, "form": form,
                                "crossover_nit": getattr(res, "crossover_nit", None)})

    def _check_status(self, res, data: MultiTaskData) -> None:
        """Raise where HiGHS gave no solution; warn where it stopped before optimality."""
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
                          ConvergenceWarning, stacklevel=3)

    @staticmethod
    def _gap(res, form: str, F: float, b_ub: np.ndarray, bounds: np.ndarray,
             constant: float) -> float:
        """The relative duality gap ``(primal - dual) / |primal|``: HiGHS's primal value and
        the dual objective from its marginals (primal program), or the model's objective ``F``
        at the returned point and minus the dual program's optimum (dual program); NaN without
        a solution."""
        if res.x is None:
            return float("nan")
        try:
            if form == "dual":
                primal, dual = F, constant - float(res.fun)
            else:
                dual = _dual_objective(res, b_ub, bounds) + constant
                primal = float(res.fun) + constant
        except (AttributeError, TypeError, ValueError):
            return float("nan")
        return max(primal - dual, 0.0) / max(abs(primal), np.finfo(float).tiny)
