"""Working sets and gap-safe screening: a solver over other solvers for row-separable penalties.

When the features far outnumber the rows and the solution has few nonzero feature rows, most
of the work of a solver on the whole problem is spent on rows that stay zero. This solver
(skglm's and celer's working sets, with the gap-safe rules of Ndiaye, Fercoq, Gramfort &
Salmon, "Gap safe screening rules for sparsity enforcing penalties") works on a few rows at a
time:

1. **Certify on the whole problem.** At the current point ``(W, b)``, whose nonzero rows lie
   in the working set ``S``, the scores ``z = X_S W_S + b`` give the loss's dual point
   (:meth:`multitask.losses.Datafit.dual_point_at_scores`: ``theta`` and ``G = X^T theta``,
   one product with the whole design) and the certified relative duality gap of
   :mod:`multitask.solvers.certificate` (the same dual point, rescaled by ``s``). The run
   stops when it is at most ``tol``.
2. **Screen (gap-safe).** The dual ``D`` is ``gamma``-strongly concave in ``theta``, so the
   optimal dual point lies in the sphere of centre ``s theta`` and radius ``R = sqrt(2 gap /
   gamma)``. For the loss convention ``F(z) = sum_i w_i ell(y_i, z_i)`` (row weights ``w_i``,
   :attr:`~multitask.data.MultiTaskData.row_weights`) with ``ell`` ``L``-smooth (``L`` =
   :meth:`~multitask.losses.Datafit.curvature`: 1 squared, 1/4 logistic, 2 squared hinge),
   ``F^*(theta) = sum_i w_i ell^*(theta_i / w_i)`` and ``ell^*`` is ``1/L``-strongly convex,
   so the ``i``-th term has curvature ``(1 / w_i^2) w_i / L = 1 / (L w_i)`` and

       gamma = 1 / (L max_i w_i)                (over the rows with w_i > 0),

   (rows of weight zero have ``theta_i = 0`` in the domain of ``F^*``). The gradient row
   ``G_j = (x_{j,t}^T theta_t)_t`` then moves by at most ``rho_j = R max_t ||x_{j,t}||``
   (``x_{j,t}`` the column of feature ``j`` over task ``t``'s rows, centred where the loss
   centres: :func:`column_norms`), and row ``j`` is zero at the optimum when the zero test
   of the penalty's row (:mod:`multitask.penalties.row_blocks`) holds strictly on that whole
   ball: ``v_j(s G_j) + rho_j < 0``. Such rows leave the problem for the rest of the run
   (**dynamic** screening); a warm start from the solution at a stronger regularization
   (a path) screens before the first inner solve (**sequential** screening).
3. **Grow the working set.** The remaining rows are ranked by ``v_j(G_j) / ||x_j||``, the
   distance of the dual point to the row's constraint (celer's score); the rows of the
   current support and the free rows come first; the working set is the ``max(p0, 2 |support|)``
   best (skglm's rule).
4. **Solve on the working set** with an inner solver (default, for the squared loss: block
   coordinate descent on the working set's Gram matrices, :mod:`multitask.solvers.bcd`, with
   Anderson acceleration, or coordinate descent on the residuals, :mod:`multitask.solvers.cd`,
   whichever reads less per epoch: the residuals for sparse designs and large working sets;
   accelerated proximal gradient for the other losses) to a relative gap of ``max(0.3 gap^2,
   0.3 tol)`` of the subproblem (its objective at ``W_S`` is the whole problem's at ``W``),
   warm-started from ``W_S``. A working set of at least half the rows still in the problem
   becomes all of them, solved to ``tol / 2`` at once.

The restricted problem (:meth:`~multitask.losses.Datafit.on_columns`) reads the columns of the
design in the working set only: a sparse design is kept in CSC form by the solver (column
slices cost their own entries) and never densified; the whole design is read once per outer
iteration, for ``G``. The returned point is certified once more on the whole problem with
:func:`~multitask.solvers.certificate.duality_gap` (:func:`~multitask.solvers.base.finish`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from multitask.data import MultiTaskData
from multitask.losses import Datafit
from multitask.penalties.base import Penalty
from multitask.penalties.row_blocks import restrict_rows, row_blocks
from multitask.solvers.base import Solver, check_int, make_solver
from multitask.solvers.certificate import (
    Certificate,
    duality_gap,
    has_dual,
    ray_certificate,
)
from multitask.solvers.choice import make_auto_solver
from multitask.solvers.iteration import IterationRecord
from multitask.solvers.problem import Problem
from multitask.solvers.result import SolverResult

__all__ = ["COUPLED_FREE_MAX_TASKS", "DesignColumns", "ENTRYWISE_MIN_RATIO", "ENTRYWISE_SHARE_MAX",
           "ENTRYWISE_SPARSE", "GRAM_FEATURES_PER_ROW", "WORKING_SET_MIN_FEATURES",
           "WorkingSet", "column_norms", "coupled_free_rows", "dual_strong_concavity",
           "gap_safe_rows", "prefer_working_set"]

_TINY = np.finfo(float).tiny
#: Inner tolerance: this fraction of the square of the outer relative gap (and of ``tol``).
INNER_FRACTION = 0.3
#: Largest growth of the working set from one outer iteration to the next.
GROWTH = 4
#: A working set of at least this fraction of the rows still in the problem becomes all of
#: them (solved to ``tol / 2`` at once).
WHOLE_FRACTION = 0.5
#: Most entries of the Gram matrices of a working set (beyond, the subproblem goes to the
#: inner solver without them).
WHOLE_GRAM_ENTRIES = 5e7


#: Features from which ``solver="auto"`` takes the working sets for a row-separable penalty
#: (:func:`prefer_working_set`). With ``benchmarks/bench_high_dim.py --rule`` (l2,1, shared
#: dense designs, ``tol=1e-6``; the figures: docs/tuning_constants.md): at
#: ``alpha = 0.05 alpha_max`` (10 of ``d`` rows active) they beat coordinate descent on the
#: whole Gram matrix from ``d = 200`` on (and accelerated gradient by far where ``d`` exceeds
#: the rows), and stay close to it at ``alpha = 10^-3 alpha_max`` (every row active); below
#: ``d = 200`` the whole Gram matrix is cheap and coordinate descent on it wins.
WORKING_SET_MIN_FEATURES = 200


#: Most feature rows of a working set per row of its tasks (on average) for which a subproblem
#: whose inner solver is not coordinate descent on the residuals takes the Gram form: beyond,
#: the Gram matrices are far from full rank, a product with them costs more than one with the
#: design, and block coordinate descent on them crawls. The dirty model on 8 tasks of 100 rows
#: and 1,000 or 5,000 features (working sets of 1,000 and about 1,200 rows, 10 and 12 per row)
#: had its working sets' subproblems solved in Gram form many times slower than accelerated
#: gradient on the whole problem; the composite models' working sets at up to 7.5 rows per row
#: (10 tasks of 40 rows, 300 features) gained by it (docs/tuning_constants.md, "Working sets for
#: the coupled models").
GRAM_FEATURES_PER_ROW = 8.0

#: A penalty whose rows are all free with a task coupling (the mean-regularized model, the
#: graph model without its l1 part) on least squares whose loss did not take the Gram form
#: (tasks of fewer rows than features), with at most this many tasks: working sets take it,
#: their one subproblem the whole problem in Gram form, solved by block coordinate descent:
#: ahead of accelerated gradient up to 50 tasks, behind it on 100, where each coupled row solve
#: costs ``m^2`` (docs/tuning_constants.md, "Working sets for the coupled models").
COUPLED_FREE_MAX_TASKS = 50

#: ``solver="auto"`` and an entrywise l1 penalty (the independent lasso): the working sets
#: where the estimated share of nonzero rows
#: (:attr:`~multitask.solvers.problem.Problem.entrywise_share`) is at most
#: ``ENTRYWISE_SPARSE``, or at most ``ENTRYWISE_SHARE_MAX`` with ``alpha`` at least
#: ``ENTRYWISE_MIN_RATIO`` times ``alpha_max``. A working set's rows hold mostly zero entries,
#: which coordinate descent on the subproblem passes over; but at weak strengths on tasks of
#: fewer rows than features the rows' tests keep failing, the set grows to most rows and
#: coordinate descent crawls on the nearly interpolating lasso. Measured with least squares
#: (``benchmarks/bench_auto_choice.py`` data, 4 to 30 tasks of 40 rows, 300 and 1,000 features;
#: docs/tuning_constants.md, "Working sets for the lasso family"): the working sets were the
#: fastest or within 1.4 of it up to an estimate of 0.55 at ``alpha_max / 10`` and above,
#: slower from ``alpha_max / 20`` down wherever the estimate exceeded 0.25, and the fastest by
#: far at 10^4 features (estimates up to 0.04).
ENTRYWISE_SPARSE = 0.1
ENTRYWISE_SHARE_MAX = 0.6
ENTRYWISE_MIN_RATIO = 0.07

def coupled_free_rows(problem: Problem) -> bool:
    """Whether ``problem`` is one of :data:`COUPLED_FREE_MAX_TASKS`'s: a whole model on at
    least :data:`WORKING_SET_MIN_FEATURES` features and at least as many rows in all (with
    fewer, the free directions leave no computable certificate, and the working sets fall back
    to the inner solver on the whole problem), least squares without the Gram form, a task
    coupling, every row free, at most that many tasks, and the solver applies."""
    d = problem.n_features
    if (problem.role != "model" or d < WORKING_SET_MIN_FEATURES or problem.n_rows < d
            or problem.n_tasks > COUPLED_FREE_MAX_TASKS
            or not problem.penalty_has("task_coupling")
            or not problem.loss_has("least_squares") or problem.loss_has("quadratic")):
        return False
    blocks = row_blocks(problem.penalty, d)
    if blocks is None or not bool(np.all(blocks.free())):
        return False
    return WorkingSet().supports(problem.datafit, problem.penalty)


def prefer_working_set(datafit: Datafit, penalty: Penalty) -> bool:
    """Whether ``solver="auto"`` takes :class:`WorkingSet`: the penalty's rows are blocks
    (not all free), the solver applies, and there are at least
    :data:`WORKING_SET_MIN_FEATURES` features."""
    d = datafit.data.n_features
    if d < WORKING_SET_MIN_FEATURES:
        return False
    blocks = row_blocks(penalty, d)
    if blocks is None or bool(np.all(blocks.free())):
        return False
    return WorkingSet().supports(datafit, penalty)


def dual_strong_concavity(datafit: Datafit) -> float:
    """``gamma = 1 / (L max_i w_i)``: the strong concavity of the dual in ``theta`` (module
    docstring), ``L`` the loss's curvature bound and ``w_i > 0`` the row weights."""
    w = datafit.data.row_weights
    top = float(np.max(w)) if w.size else 0.0
    curvature = float(datafit.curvature())
    if not (top > 0 and curvature > 0):
        return np.inf
    return 1.0 / (curvature * top)


def column_norms(data: MultiTaskData) -> np.ndarray:
    """``max_t ||x_{j,t} - mu_{jt} 1||_2`` for every feature ``j``, shape ``(d,)``: the largest
    norm over the tasks of the feature's column on the task's rows (unweighted), centred by
    the implicit offsets ``mu = x_offset`` where the data have them; a data set that computes
    them itself (``data.column_norms()``: the task-class columns of a multinomial model, whose
    stacked rows are not those of ``X``) is asked for them.

    From the column sums and sums of squares (one pass over the entries; ``||x - mu 1||^2 =
    S2 - 2 mu S1 + n mu^2``), with a margin of ``1e-10 S2`` for the rounding of that
    difference (an upper bound is what the screening needs).
    """
    own = getattr(data, "column_norms", None)
    if callable(own):  # a view whose stacked rows are not X's (multinomial task-class columns)
        return np.asarray(own(), dtype=np.float64)
    X, d, m = data.X, data.n_features, data.n_tasks
    out = np.zeros(d)
    if data.shared:
        groups = [(slice(None), X.shape[0], None if data.x_offset is None else
                   (data.x_offset[:, :1] if data.shares_gram else data.x_offset))]
    else:
        off = data.offsets
        groups = [(slice(off[t], off[t + 1]), int(off[t + 1] - off[t]),
                   None if data.x_offset is None else data.x_offset[:, t : t + 1])
                  for t in range(m)]
    for rows, n, mu in groups:
        S1, S2 = _column_sums(X[rows] if not data.shared else X, d)
        if mu is None:
            sq = S2
        else:
            sq = np.max(S2[:, None] - 2.0 * mu * S1[:, None] + n * mu * mu, axis=1)
            sq = np.maximum(sq, 0.0) + 1e-10 * S2
        np.maximum(out, sq, out=out)
    return np.sqrt(out)


def _column_sums(X, d: int) -> tuple[np.ndarray, np.ndarray]:
    """``(sum_i X_ij, sum_i X_ij^2)`` over the rows of ``X`` (dense or sparse, never
    densified)."""
    if sp.issparse(X):
        A = sp.csr_matrix(X) if not sp.isspmatrix_csc(X) else X
        if sp.isspmatrix_csc(A):
            cols = np.repeat(np.arange(d), np.diff(A.indptr))
        else:
            cols = A.indices
        vals = A.data
        return (np.bincount(cols, weights=vals, minlength=d),
                np.bincount(cols, weights=vals * vals, minlength=d))
    Xd = np.asarray(X, dtype=np.float64)
    return Xd.sum(axis=0), np.einsum("ij,ij->j", Xd, Xd)


class DesignColumns:
    """The design the loss sees, column by column: a sparse design is converted once to CSC
    (the working sets slice columns; for a shared design the product ``X^T theta`` also reads
    it column by column, twice as fast as from CSR), a dense one is sliced as it is."""

    def __init__(self, data: MultiTaskData):
        self.data = data
        own = getattr(data, "restrict_columns", None)  # a view restricts itself (no copy)
        self.own = own if callable(own) else None
        self.csc = (sp.csc_matrix(data.X) if sp.issparse(data.X) and self.own is None
                    else None)
        #: the data for the products with the whole design
        self.full = data if self.csc is None or not data.shared else self._with(self.csc)

    def _with(self, X, cols=None) -> MultiTaskData:
        data = self.data
        sel = slice(None) if cols is None else cols
        return MultiTaskData(
            X, data.y, data.offsets, data.tasks, data.shared,
            None if data.x_offset is None else np.ascontiguousarray(data.x_offset[sel]),
            x_constant=None if data.x_constant is None else data.x_constant[sel],
            sample_weight=data.sample_weight)

    def restrict(self, cols: np.ndarray) -> MultiTaskData:
        """The data on the columns ``cols`` (sorted), the same rows, targets and weights (a
        data set with ``restrict_columns``, the task-class columns of a multinomial model,
        restricts itself: no CSC copy of its design)."""
        if self.own is not None:
            return self.own(cols)
        if self.csc is not None:
            return self._with(self.csc[:, cols].tocsr(), cols)
        return self._with(np.ascontiguousarray(self.data.X[:, cols]), cols)


def _scores(sub: Datafit | None, n_rows: int, W_ws: np.ndarray, b, datafit: Datafit):
    """Stacked scores of ``(W, b)`` from its working-set rows (``sub`` the restricted loss,
    ``None`` for an empty working set)."""
    if sub is None:
        z = np.zeros(n_rows)
        if b is not None:
            z += datafit.data.expand(b)
        return z
    return sub.scores(W_ws, b)


def _certificate(datafit: Datafit, penalty: Penalty, pen_ws: Penalty, W_ws: np.ndarray,
                 ws: np.ndarray, b, z: np.ndarray, ridge: float,
                 design: MultiTaskData | _KnownProduct | None = None):
    """``(certificate, G, s)`` at the point whose nonzero rows are ``W_ws`` (rows ``ws``) with
    scores ``z``: ``G = X^T theta`` (the loss part of the gradient, at the unscaled dual
    point; products with ``design`` when given) and ``s`` the scale of the certified dual
    point ``s theta`` (``None`` when the free rows of the penalty needed the correction of
    :func:`~multitask.solvers.certificate.duality_gap`, done on the whole ``W``)."""
    dp = datafit.dual_point_at_scores(z, b, design=design)  # type: ignore[arg-type]
    G = dp.grad
    Q = 0.0
    extra = None
    sq = float(np.vdot(W_ws, W_ws))
    if ridge:
        Q += 0.5 * ridge * sq
        extra = ridge * W_ws
    if "smooth" in penalty.capabilities:
        g, gg = pen_ws.smooth_value_and_grad(W_ws)
        Q += float(g)
        extra = gg if extra is None else extra + gg
    primal = dp.loss + 0.5 * ridge * sq + float(pen_ws.value(W_ws))
    if extra is not None and len(ws):
        saved = G[ws].copy()
        G[ws] += extra
    bound = penalty.dual_bound(G)
    if extra is not None and len(ws):
        G[ws] = saved
    if bound is None or (bound.s_max <= 0.0 and np.any(G)):
        W = np.zeros_like(G)
        W[ws] = W_ws
        cert = duality_gap(datafit, penalty, W, b)
        return cert, G, None
    cert = ray_certificate(primal, dp, Q, bound)
    return cert, G, cert.scale


class _KnownProduct:
    """Stands in for the design (only ``rmatvec`` is asked of it) where its one product
    ``X^T theta`` is known: the gradient at ``W = 0`` with the
    best intercepts, which is ``X^T theta`` of the dual point there (``grad_at_zero``)."""

    def __init__(self, grad: np.ndarray):
        self.grad = np.array(grad, dtype=np.float64)

    def rmatvec(self, theta: np.ndarray) -> np.ndarray:
        return self.grad


def _radius(cert: Certificate, gamma: float) -> float:
    """``sqrt(2 gap / gamma)``: the gap-safe sphere's radius (``inf`` when unknown)."""
    if not (np.isfinite(cert.gap) and np.isfinite(gamma) and gamma > 0):
        return np.inf
    return float(np.sqrt(2.0 * max(cert.gap, 0.0) / gamma))


def gap_safe_rows(datafit: Datafit, penalty: Penalty, W: np.ndarray,
                  b: np.ndarray | None = None) -> np.ndarray:
    """The feature rows proven zero at the optimum by the gap-safe sphere at ``(W, b)``.

    The certificate of :mod:`multitask.solvers.certificate` at ``(W, b)`` gives the dual
    point ``s theta`` and the gap; the rows whose zero test holds on the whole sphere of
    radius ``sqrt(2 gap / gamma)`` (:func:`dual_strong_concavity`) are returned (module
    docstring, step 2). ``W`` of shape ``(n_features, n_tasks)``; returns a boolean mask of
    shape ``(n_features,)`` (all False where the penalty offers no row blocks or the
    certificate needs no dual point of its own).
    """
    d = datafit.data.n_features
    blocks = row_blocks(penalty, d)
    W = np.asarray(W, dtype=np.float64)
    if blocks is None or "dual" not in datafit.capabilities or not has_dual(penalty):
        return np.zeros(d, dtype=bool)
    ws = np.flatnonzero(np.any(W != 0, axis=1))
    pen_ws = restrict_rows(penalty, ws)
    if pen_ws is None:
        return np.zeros(d, dtype=bool)
    z = datafit.scores(W, b)
    ridge = float(getattr(datafit, "alpha_l2", 0.0) or 0.0)
    cert, G, s = _certificate(datafit, penalty, pen_ws, W[ws], ws, b, z, ridge)
    if s is None or cert is None:
        return np.zeros(d, dtype=bool)
    rho = _radius(cert, dual_strong_concavity(datafit)) * column_norms(datafit.data)
    return blocks.safe(G, rho, s) & ~blocks.free()


class WorkingSet(Solver):
    """Working sets with gap-safe screening over an inner solver (module docstring).

    Parameters
    ----------
    max_iter : int, default=10000
        Budget of the inner solver's iterations over the whole run (epochs of block
        coordinate descent, iterations of the gradient methods); ``ConvergenceWarning`` when
        reached.
    tol : float, default=1e-4
        Tolerance on the certified relative duality gap of the whole problem.
    inner : {"auto", "bcd", "cd", "fista", "mm"} or Solver, default="auto"
        The solver of the subproblems: ``"auto"`` takes, for the squared loss, coordinate
        descent on the working set's Gram matrices (``"bcd"``) or on the residuals
        (``"cd"``, elastic-net rows), whichever reads less per epoch (:meth:`_gram`), and
        accelerated proximal gradient for the other losses.
    p0 : int, default=50
        Smallest working set.
    max_outer : int, default=100
        Most outer iterations (certificates of the whole problem).
    screening : bool, default=True
        Gap-safe screening (dynamic, and sequential from a warm start).
    warn : bool, default=True
    """

    name = "working_set"
    max_preference = 90.0
    datafit_requires = frozenset({"gradient", "dual"})
    handles_smooth_part = True

    @classmethod
    def preference_ceiling(cls, problem: Problem, **settings) -> float:
        """The highest score :meth:`preference` can give ``problem``: 90 for a whole model of
        at least :data:`WORKING_SET_MIN_FEATURES` features, ``-inf`` (no claim) otherwise
        (read before its requirements, which build the penalty's row blocks)."""
        if problem.role != "model" or problem.n_features < WORKING_SET_MIN_FEATURES:
            return float("-inf")
        return 90.0

    @classmethod
    def preference(cls, problem: Problem, **settings) -> float | None:
        """90 for a whole model with many feature rows (:func:`prefer_working_set`) whose
        solution is expected sparse: an estimated share of nonzero rows
        (:attr:`~multitask.solvers.problem.Problem.active_share`) of at most one half, or, on
        data with at most twice as many rows as features, ``alpha`` at least ``alpha_max /
        20`` (:attr:`~multitask.solvers.problem.Problem.strength_ratio`); for an entrywise l1
        penalty, the estimate from its columns
        (:attr:`~multitask.solvers.problem.Problem.entrywise_share`) of at most
        :data:`ENTRYWISE_SPARSE`, or of at most :data:`ENTRYWISE_SHARE_MAX` with ``alpha`` at
        least :data:`ENTRYWISE_MIN_RATIO` times ``alpha_max`` (least squares on a dense design
        goes to :class:`~multitask.solvers.task_cd.TaskCoordinateDescent` first, score 95).
        Where most rows
        end up active the screening drops none and the working sets cost more than a solver
        on the whole problem (``benchmarks/bench_auto_choice.py``: 450 tasks x 300 features x
        40 rows at ``alpha_max / 10``, where they were stopped past the fastest solver,
        linearized ADMM). 90 also for a penalty of free rows with a
        task coupling on least squares over at most :data:`COUPLED_FREE_MAX_TASKS` tasks
        (:func:`coupled_free_rows`)."""
        if problem.role != "model":
            return None
        if problem.fact("coupled_free_rows", lambda: coupled_free_rows(problem)):
            return 90.0
        wanted = problem.fact("working_set", lambda: prefer_working_set(problem.datafit,
                                                                        problem.penalty))
        if not wanted:
            return None
        share = problem.active_share
        entrywise = problem.entrywise_share
        if entrywise is not None:  # the lasso family: its own estimate (the active share)
            sparse = entrywise <= ENTRYWISE_SPARSE or (
                entrywise <= ENTRYWISE_SHARE_MAX
                and (problem.strength_ratio or 0.0) >= ENTRYWISE_MIN_RATIO)
            return 90.0 if sparse else None
        sparse = (share is None or share <= 0.5
                  or (problem.n_rows <= 2 * problem.n_features
                      and (problem.strength_ratio or 0.0) >= 0.05))
        return 90.0 if sparse else None

    def __init__(self, *, max_iter: int = 10000, tol: float = 1e-4, inner="auto", p0: int = 50,
                 max_outer: int = 100, screening: bool = True, warn: bool = True):
        super().__init__(max_iter=max_iter, tol=tol, warn=warn)
        if not (isinstance(inner, Solver) or inner in ("auto", "bcd", "cd", "fista", "mm")):
            raise ValueError(f"inner must be 'auto', 'bcd', 'cd', 'fista', 'mm' or a Solver, "
                             f"got {inner!r}.")
        self.inner = inner
        self.p0 = check_int(p0, "p0")
        self.max_outer = check_int(max_outer, "max_outer")
        self.screening = bool(screening)

    def missing(self, datafit: Datafit, penalty: Penalty) -> list[str]:
        out = super().missing(datafit, penalty)
        if penalty.parts or getattr(penalty.linear_map, "norm_sq", 1.0) != 1.0:
            out.append(f"the {penalty.name} penalty acts on a split variable, not on W")
            return out
        if "smooth" in penalty.capabilities and "task_coupling" not in penalty.capabilities:
            out.append(f"the {penalty.name} penalty has a smooth part that is not a task "
                       "coupling ('task_coupling')")
        d = datafit.data.n_features
        if row_blocks(penalty, d) is None:
            out.append(f"the {penalty.name} penalty is not separable over feature rows with a "
                       "known zero test (multitask.penalties.row_blocks)")
        elif restrict_rows(penalty, np.arange(min(d, 1))) is None:
            out.append(f"the {penalty.name} penalty's rows differ and it has no "
                       "restrict_rows")
        if not has_dual(penalty):
            out.append(f"the {penalty.name} penalty has no certified duality gap")
        return out

    # ------------------------------------------------------------------ pieces
    def _inner_solver(self, sub: Datafit, pen: Penalty, tol: float, budget: int) -> Solver:
        if isinstance(self.inner, Solver):
            return self.inner.with_params(tol=tol, max_iter=budget, warn=False)
        if self.inner == "auto":
            return make_auto_solver(sub, pen, role="inner", tol=tol, max_iter=budget,
                                    warn=False)
        return make_solver(self.inner, tol=tol, max_iter=budget, warn=False)

    def _gram(self, datafit: Datafit, penalty: Penalty, data: MultiTaskData) -> bool:
        """Whether the subproblem on ``data`` (the working set's columns) forms Gram matrices.

        Coordinate descent on the Gram matrices (:mod:`multitask.solvers.bcd`) costs ``m k^2``
        per epoch for ``k`` rows, on the residuals (:mod:`multitask.solvers.cd`: least squares
        and elastic-net rows without a task coupling) the stored entries of the ``k`` columns
        (``m`` times for a shared design): the Gram matrices where they are the smaller, and
        at most :data:`WHOLE_GRAM_ENTRIES` numbers in any case. Where coordinate descent on
        the residuals does not apply (the dirty, fused and coupled rows), the Gram matrices
        also need a working set of at most :data:`GRAM_FEATURES_PER_ROW` rows per row of a
        task: beyond, their products cost more than the design's and block coordinate descent
        crawls on them (module constant)."""
        k, m = data.n_features, data.n_tasks
        n_mats = 1 if data.shares_gram else m
        affordable = n_mats * float(k) ** 2 <= WHOLE_GRAM_ENTRIES
        if isinstance(self.inner, Solver) or self.inner != "auto":
            name = self.inner if isinstance(self.inner, str) else self.inner.name
            return affordable and name != "cd"
        if not make_solver("cd").supports(datafit, penalty):
            return affordable and k <= GRAM_FEATURES_PER_ROW * data.n_rows / max(m, 1)
        X = data.X
        stored = float(getattr(X, "nnz", X.shape[0] * X.shape[1]))
        per_epoch = stored if data.shared else stored / max(m, 1)
        return affordable and float(k) ** 2 < per_epoch

    def _subproblem(self, datafit: Datafit, penalty: Penalty, columns: DesignColumns,
                    rows: np.ndarray) -> tuple[Datafit, Penalty]:
        """The loss and the penalty on the feature rows ``rows`` (sorted; all of them: the
        datafit itself where its own form serves)."""
        pen = restrict_rows(penalty, rows)
        assert pen is not None
        whole = rows.size == datafit.data.n_features
        data = datafit.data if whole else columns.restrict(rows)
        gram = self._gram(datafit, penalty, data)
        if whole and (gram == ("quadratic" in datafit.capabilities)
                      or "quadratic" not in type(datafit).capabilities):
            return datafit, pen
        return datafit.on_columns(data, gram=gram), pen

    def solve(self, datafit: Datafit, penalty: Penalty, *, coef_init=None, intercept_init=None,
              callback: Callable | None = None) -> SolverResult:
        """Run the outer iterations (``callback(k, objective, W, b)`` after each)."""
        run = IterationRecord(self, datafit, penalty, callback)
        # a cold start takes the best intercepts at zero
        W, b = run.start(coef_init, intercept_init, intercept_at_zero=coef_init is None)
        d, m = W.shape
        blocks = row_blocks(penalty, d)
        assert blocks is not None
        free = blocks.free()
        columns = DesignColumns(datafit.data)
        ridge = float(getattr(datafit, "alpha_l2", 0.0) or 0.0)
        norms = column_norms(datafit.data)
        gamma = dual_strong_concavity(datafit)
        n_rows = datafit.data.n_rows
        keep = np.ones(d, dtype=bool)  # rows not screened out
        ws = np.flatnonzero(np.any(W != 0, axis=1))
        sub, pen_ws = (self._subproblem(datafit, penalty, columns, ws) if ws.size
                       else (None, restrict_rows(penalty, ws)))
        assert pen_ws is not None
        gaps: list[float] = []
        n_inner = n_outer = n_screened = 0
        converged = whole = False
        inner_name = ""
        cert = None
        # a cold start's first point is W = 0 with the best intercepts: its gradient is the
        # datafit's grad_at_zero, which the solver choice has usually computed already (a
        # loss with one score per row: the multinomial's class columns are laid out apart)
        at_zero = (coef_init is None and intercept_init is None and ws.size == 0
                   and bool({"hessian", "quadratic", "least_squares"} & datafit.capabilities))
        while True:
            z = _scores(sub, n_rows, W[ws], b, datafit)
            design = _KnownProduct(datafit.grad_at_zero()) if at_zero else columns.full
            at_zero = False
            cert, G, s = _certificate(datafit, penalty, pen_ws, W[ws], ws, b, z, ridge,
                                      design)
            if cert is None:
                # no certificate at this point (a penalty whose free rows the dual cannot
                # re-optimize under this loss: the mean model's logistic fit): the whole
                # problem by the inner solver, judged by its own optimality measure
                return self._without_certificate(run, datafit, penalty, W, b, n_inner,
                                                 n_outer, gaps)
            if whole and cert.relative_gap > self.tol:
                # the whole problem was solved: its own certificate may correct the dual
                # point where the ray above scales it down
                W_full = np.zeros((d, m))
                W_full[ws] = W[ws]
                better = duality_gap(datafit, penalty, W_full, b, target=self.tol)
                if better is not None and better.relative_gap < cert.relative_gap:
                    cert, s = better, None
            run.certified(n_outer, cert.relative_gap, cert)
            run.record(cert.primal)
            gaps.append(cert.relative_gap)
            if cert.relative_gap <= self.tol:
                converged = True
                break
            if n_outer >= self.max_outer or n_inner >= self.max_iter:
                break
            if run.notify(n_outer, cert.primal, W, b):
                break
            screen = self.screening and s is not None
            v = blocks.violations(G, (1.0, s) if screen else (1.0,))
            if screen:  # gap-safe screening of the rows still in the problem
                out = keep & ~free & blocks.safe_from(v[1], _radius(cert, gamma) * norms)
                out = np.flatnonzero(out)
                if out.size:
                    keep[out] = False
                    W[out] = 0.0
                    n_screened += out.size
            new_ws, whole, inner_tol = self._next_working_set(W, ws, v[0], norms, keep, free,
                                                              cert.relative_gap)
            if sub is None or not np.array_equal(new_ws, ws):  # else: its Gram matrices kept
                sub, pen_ws = self._subproblem(datafit, penalty, columns, new_ws)
            inner = self._inner_solver(sub, pen_ws, inner_tol, max(self.max_iter - n_inner, 1))
            inner_name = inner.label
            res = inner.solve(sub, pen_ws, coef_init=W[new_ws], intercept_init=b)
            W[ws] = 0.0
            W[new_ws] = res.coef
            ws = new_ws
            b = res.intercept_variable
            n_inner += int(res.n_iter)
            n_outer += 1
        info = {"inner": inner_name, "n_outer": n_outer, "screened": n_screened,
                "working_set": int(ws.size), "gaps": np.asarray(gaps),
                "best_objective": run.history[-1] if run.history else np.nan}
        # the last certificate was computed at the returned point: finish reuses it
        return run.finish(W, b, n_iter=n_inner, converged=converged, info=info,
                          exhausted=not (converged or run.stop_requested), certificate=cert)

    def _without_certificate(self, run: IterationRecord, datafit: Datafit, penalty: Penalty,
                             W: np.ndarray, b, n_inner: int, n_outer: int,
                             gaps: list[float]) -> SolverResult:
        """The whole problem solved by the inner solver from ``(W, b)``, where the working
        sets' certificate cannot be computed: the result and convergence are the inner
        solver's (its optimality measure), ``info["fallback"]`` True."""
        inner = self._inner_solver(datafit, penalty, self.tol, max(self.max_iter - n_inner, 1))
        res = inner.solve(datafit, penalty, coef_init=W, intercept_init=b)
        info = {"inner": inner.label, "n_outer": n_outer, "screened": 0,
                "working_set": int(W.shape[0]), "gaps": np.asarray(gaps), "fallback": True,
                "best_objective": res.info.get("best_objective", np.nan)}
        return run.finish(res.W, res.intercept_variable, n_iter=n_inner + int(res.n_iter),
                          converged=bool(res.converged), measure=res.optimality, info=info,
                          exhausted=not res.converged)

    def _next_working_set(self, W: np.ndarray, ws: np.ndarray, violation: np.ndarray,
                          norms: np.ndarray, keep: np.ndarray, free: np.ndarray,
                          gap: float) -> tuple[np.ndarray, bool, float]:
        """``(rows, whole, inner tolerance)`` of the next subproblem (module docstring, step
        3): the support and the free rows, then the rows of the best scores ``violation /
        norms`` among those kept; ``whole`` when that is at least :data:`WHOLE_FRACTION` of
        the rows kept (all of them then, solved to ``tol / 2``), else solved to
        :data:`INNER_FRACTION` times the square of the relative ``gap``."""
        support = ws[np.any(W[ws] != 0, axis=1)] if ws.size else ws
        score = np.where(keep, violation / np.maximum(norms, _TINY), -np.inf)
        score[support] = np.inf
        score[free & keep] = np.inf
        n_first = int(np.count_nonzero(np.isposinf(score)))
        n_keep = int(np.count_nonzero(keep))
        # skglm's rule (twice the support), or the support and every row that violates
        # its zero test once there is a support (at zero, where all rows may violate,
        # the count says little; from a solution it predicts the next support), at most
        # GROWTH times the last working set
        p = max(self.p0, 2 * n_first)
        if support.size:
            violating = int(np.count_nonzero(np.isfinite(score) & (score > 0)))
            p = max(p, min(n_first + violating, GROWTH * max(ws.size, self.p0)))
        if p >= WHOLE_FRACTION * n_keep:  # the whole problem (of the rows kept), to tol at once
            return np.flatnonzero(keep), True, 0.5 * self.tol
        new_ws = np.sort(np.argpartition(-score, p - 1)[:p])
        return new_ws, False, max(INNER_FRACTION * min(gap, 1.0) ** 2,
                                  INNER_FRACTION * self.tol)
