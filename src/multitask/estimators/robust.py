"""Robust multi-task learning: a low-rank part shared by the tasks plus outlier tasks.

``W = L + E`` (``(n_features, n_tasks)``, one column per task) with ``L`` low-rank (trace norm)
and ``E`` column-sparse (``l2`` norm of each task column): tasks that do not fit the shared
subspace get a nonzero column of ``E`` and are reported as outliers (Chen, Zhou & Ye,
"Integrating low-rank and group-sparse structures for robust multi-task learning", KDD 2011;
Pan, Xia, Yin & Liu, "A divide-and-conquer method for scalable robust multitask learning",
IEEE TNNLS 2015). The models minimize (library scaling, ``F = sum_t (1/n_t) sum_i ell``)::

    F(L + E, b) + alpha * (||L||_* + lam * sum_t ||E_.t||_2)

with the squared loss (:class:`RobustMTLRegressor`) or the squared hinge
(:class:`RobustMTLClassifier`); the penalty is
:class:`~multitask.penalties.composite.LowRankOutlier`. The regressor also offers the paper's
equality-constrained model ``min ||L||_* + lam ||E||_{1,2}  s.t.  X_t w_t + b_t = y_t``
(``formulation="constrained"``; it interpolates the data, and in general has no solution when
``n_t > n_features``).

Solvers: ADMM with exact per-task solves (``solver="admm"``,
:class:`~multitask.solvers.admm.QuadraticADMM`, which ``"auto"`` takes for the squared loss),
linearized ADMM (``solver="ladm"``, :class:`~multitask.solvers.ladm.LinearizedADMM`, the
paper's algorithm, which ``"auto"`` takes for the other losses, the constrained formulation and
divide-and-conquer; pass ``LinearizedADMM(schedule="paper")`` for the paper's constants and
stopping rule), majorization-minimization (``"mm"``) or the accelerated proximal gradient
(``solver="fista"``); ``n_groups > 1`` (or ``"auto"``) runs the
divide-and-conquer scheme (:class:`~multitask.solvers.divide_conquer.DivideAndConquer`)
serially, on joblib workers or on a Dask cluster, with the combine step ``combine``.

With more than two classes (``loss="logistic"``: one multinomial model per task, ``m K``
task-class columns of ``W``; :mod:`multitask.losses.multinomial`) the trace norm acts on all the
task-class columns and the outlier group of a task is its ``K`` columns of ``E`` together (a
task is an outlier for all its classes at once: ``outlier_task_norms_`` has one entry per
task); the components have the shape of ``coef_``. Divide-and-conquer splits tasks apart and
is not available then (``n_groups=1``).
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions

from multitask.estimators.base import (
    GridSpan,
    MultiTaskClassifierBase,
    MultiTaskRegressorBase,
    Param,
    nonnegative,
    positive,
)
from multitask.estimators.fitted_state import (
    Fitted,
    derived,
    in_range,
)
from multitask.estimators.multiclass import (
    by_task,
    column_classes,
    task_count,
    task_norms,
)
from multitask.estimators.split_state import OUTLIER_TASK_NORMS, split_parts
from multitask.losses import Datafit
from multitask.penalties import LowRankOutlier
from multitask.solvers import DivideAndConquer, Solver
from multitask.solvers.base import make_solver
from multitask.solvers.divide_conquer import COMBINES, DEFAULT_COMBINE, REFINE_ITER

#: Smallest number of tasks at which ``n_groups="auto"`` divides (fewer: the full problem is
#: solved, with a warning); an integer ``n_groups`` is used as given.
MIN_TASKS_TO_DIVIDE = 40
#: ``n_groups="auto"`` keeps groups of at least ``AUTO_GROUP_FACTOR`` times the estimated rank.
AUTO_GROUP_FACTOR = 2
#: ``n_groups="auto"`` uses at most this many groups.
AUTO_MAX_GROUPS = 10

__all__ = ["RobustMTLClassifier", "RobustMTLRegressor"]


def _outlier_tasks(est, sizes) -> np.ndarray:
    """The outlier tasks ``_store_extra`` finds from ``outlier_task_norms_``."""
    norms = np.asarray(est.outlier_task_norms_, dtype=np.float64)
    top = float(norms.max()) if norms.size else 0.0
    return (np.flatnonzero(norms > float(est.outlier_threshold) * top) if top > 0
            else np.zeros(0, dtype=np.int64))


def _partition_of_tasks(est, groups, sizes) -> str | None:
    """``task_groups_`` splits the tasks of the fit: each position once."""
    t = sizes.get("t", sizes.get("m"))
    flat = np.sort(np.concatenate([np.asarray(g).ravel() for g in groups])) if len(
        groups) else np.zeros(0)
    if t is not None and not np.array_equal(flat, np.arange(t)):
        return f"must split the {t} tasks of the fit into groups (each task once)"
    return None


class _Robust:
    """Shared fit logic of the robust MTL presets."""

    _params = {
        "alpha": Param(0.1, [positive], keyword_only=False),
        "lam": Param(1.0, [nonnegative], keyword_only=False),
        "n_groups": Param(1, [Interval(Integral, 1, None, closed="left"),
                              StrOptions({"auto"})]),
        "combine": Param(DEFAULT_COMBINE, [StrOptions(set(COMBINES))]),
        "refine_iter": Param(REFINE_ITER, [Interval(Integral, 0, None, closed="left")]),
        "lam_scale": Param(1.0, [positive, StrOptions({"sqrt"})]),
        "backend": Param("serial", [StrOptions({"serial", "joblib", "dask"}),
                                     HasMethods(["submit", "scatter", "gather"])]),
        "n_jobs": Param(None, [Integral, None]),
        "blas_threads": Param(1, [Interval(Integral, 1, None, closed="left"), None]),
        "random_state": Param(None, ["random_state"]),
        "outlier_threshold": Param(0.1, [Interval(Real, 0, 1, closed="both")]),
    }
    _task_components = ("low_rank_component_", "outlier_component_")
    _max_iter = 10000
    _renamed = {"mode": "the schedule of linearized ADMM is a setting of the solver: "
                        "mode='exact' is the default solver='ladm', mode='paper' is "
                        "solver=LinearizedADMM(schedule='paper') (multitask.solvers)"}

    def _formulation(self) -> str:
        return getattr(self, "formulation", "penalized")

    def _check_params(self) -> None:
        if self._formulation() == "constrained" and self.solver not in ("auto", "ladm") and not (
                isinstance(self.solver, Solver) and getattr(self.solver, "constrained", False)):
            raise ValueError(
                "formulation='constrained' (an equality-constrained problem) needs "
                "solver='ladm': the accelerated gradient cannot handle it."
            )

    def _make_penalty(self, datafit: Datafit):
        alpha = 1.0 if self._formulation() == "constrained" else float(self.alpha)
        return LowRankOutlier(alpha, float(self.lam), n_classes=column_classes(datafit))

    def _grid_tops(self, datafit, penalty):
        """``alpha`` (the path) and ``lam``: for ``lam >= 1`` the outlier part is zero (a
        column norm of the gradient never exceeds its spectral norm: the trace-norm model),
        for ``lam <= 1 / sqrt(m)`` the low-rank part is (the Frobenius norm, at most ``sqrt(m)``
        times the largest column norm, bounds the spectral norm), so ``lam`` runs from 1 down
        that span, its lower end left out. The path starts at ``alpha_max`` of the smallest
        ``lam``, where every candidate's fit is zero."""
        low = 1.0 / np.sqrt(max(task_count(datafit), 1))
        grad = datafit.grad_at_zero()
        top = (LowRankOutlier(1.0, low, n_classes=column_classes(datafit)).alpha_max(grad)
               if grad.size else 0.0)
        return {"alpha": (top, 1.0), "lam": GridSpan(1.0, low, endpoint=False)}

    def _solver_settings(self, name: str) -> dict:
        settings = super()._solver_settings(name)
        if name == "ladm":
            settings["constrained"] = self._formulation() == "constrained"
        return settings

    def _estimated_rank(self, datafit, penalty) -> int:
        """The rank the data call for, estimated before any solve: the number of singular
        values of the loss gradient at zero (best intercepts) above ``alpha``, the trace
        norm's threshold (the rank of the first proximal step from zero; ``alpha_max`` is the
        largest of them)."""
        G = datafit.grad_at_zero()
        if not G.size:
            return 0
        s = np.linalg.svd(G, compute_uv=False)
        return int(np.count_nonzero(s > float(penalty.alpha)))

    def _choose_groups(self, datafit, penalty) -> tuple[int, int | None]:
        """``(t, estimated rank)``: the number of groups to use (1: the full problem).

        ``n_groups="auto"``: ``t = min(AUTO_MAX_GROUPS, m // (AUTO_GROUP_FACTOR r))`` for the
        estimated rank ``r``, and ``t = 1`` with a warning (declined) below
        ``MIN_TASKS_TO_DIVIDE`` tasks or when no two groups of that size fit. An integer is
        used as given, with a warning when its groups hold fewer tasks than ``r``.
        """
        m = datafit.data.n_tasks
        auto = isinstance(self.n_groups, str)
        if not auto and self.n_groups == 1:
            return 1, None
        if column_classes(datafit) > 1:
            if auto:  # no split of a task's class columns: the full problem
                return 1, None
            raise ValueError(
                f"{type(self).__name__}: divide-and-conquer (n_groups={self.n_groups!r}) "
                "splits the tasks' columns into groups, which a multinomial model of more "
                "than two classes does not allow (a task's class columns share one softmax): "
                "use n_groups=1.")
        if not auto and self.n_groups > m:
            raise ValueError(f"n_groups={self.n_groups} exceeds the number of tasks ({m}).")
        r = self._estimated_rank(datafit, penalty)
        t_auto = max(1, min(AUTO_MAX_GROUPS, m // max(AUTO_GROUP_FACTOR * r, 1)))
        if auto:
            why = None
            if m < MIN_TASKS_TO_DIVIDE:
                why = (f"{m} tasks are fewer than {MIN_TASKS_TO_DIVIDE}: the full problem is "
                       "cheap and groups of a few tasks cannot estimate the shared subspace")
            elif t_auto < 2:
                why = (f"groups of at least {AUTO_GROUP_FACTOR} x {r} tasks are needed and "
                       f"{m} tasks do not make two of them")
            if why is not None:
                warnings.warn(
                    f"Divide-and-conquer declined (n_groups='auto'): {why} (rank about {r}: "
                    "singular values of the loss gradient at zero above alpha); the full "
                    "problem is solved (n_groups=1).",
                    UserWarning, stacklevel=4,
                )
                return 1, r
            return t_auto, r
        t = int(self.n_groups)
        l = m // t
        if l < r:
            warnings.warn(
                f"Divide-and-conquer: groups of {l} tasks (n_groups={t}, {m} tasks) are below "
                f"the rank the data call for (about {r}: singular values of the loss gradient "
                "at zero above alpha), so the groups cannot show that rank; use fewer groups "
                f"(n_groups='auto' takes {t_auto if m >= MIN_TASKS_TO_DIVIDE else 1})"
                + (" or combine='refine'" if self.combine != "refine" else "") + ".",
                UserWarning, stacklevel=4,
            )
        return t, r

    def _auto_candidates(self, datafit, penalty):
        """The equality-constrained formulation, which only linearized ADMM solves (with
        ``constrained=True``; accelerated gradient would solve the penalized model at
        ``alpha = 1``), and the subproblems of divide-and-conquer (whose combine steps were
        measured with it) keep linearized ADMM at any strength; the subproblems take
        accelerated gradient where linearized ADMM does not apply to the loss. The penalized
        model takes what every split model takes."""
        if self._formulation() == "constrained":
            return ("ladm",)
        if getattr(self, "_dividing", False):
            return ("fista",) if make_solver("ladm").missing(datafit, penalty) else ("ladm",)
        return super()._auto_candidates(datafit, penalty)

    def _make_solver(self, datafit, penalty):
        t, r = self._choose_groups(datafit, penalty)
        self._dividing = t > 1  # the subproblems keep linearized ADMM (see above)
        try:
            solver = super()._make_solver(datafit, penalty)
        finally:
            del self._dividing
        self.n_groups_ = t
        self.estimated_rank_ = r
        if t == 1:
            return solver
        return DivideAndConquer(solver, n_groups=t, combine=self.combine,
                                refine_iter=int(self.refine_iter),
                                random_state=self.random_state, backend=self.backend,
                                n_jobs=self.n_jobs, blas_threads=self.blas_threads,
                                check_rank=False)

    def _run_solver(self, solver, datafit, penalty, coef_init, intercept_init):
        if isinstance(solver, DivideAndConquer):
            scale = (np.sqrt(solver.n_groups) if isinstance(self.lam_scale, str)
                     else float(self.lam_scale))
            group = LowRankOutlier(penalty.alpha, penalty.lam * scale)
            return solver.solve(datafit, penalty, group_penalty=group)
        return super()._run_solver(solver, datafit, penalty, coef_init, intercept_init)

    _fitted_state = {
        "n_groups_": Fitted("int", nonnegative=True),
        "estimated_rank_": Fitted("int", nonnegative=True, optional=True),
        **split_parts("low_rank_component_", "outlier_component_"),
        "outlier_task_norms_": OUTLIER_TASK_NORMS,
        "outlier_tasks_": Fitted("indices", bound="t", check=derived(
            _outlier_tasks, "the tasks whose outlier norm passes outlier_threshold")),
        "task_groups_": Fitted("list", item=Fitted("array", shape=(None,), dtype="iu",
                                                   check=in_range("t")),
                               check=_partition_of_tasks),
    }

    def _store_extra(self, result, penalty, datafit) -> None:
        L, E = result.coef[0], result.coef[1]
        self.low_rank_component_ = by_task(self, np.ascontiguousarray(L.T))
        self.outlier_component_ = by_task(self, np.ascontiguousarray(E.T))
        norms = task_norms(E, column_classes(datafit))
        top = float(norms.max()) if norms.size else 0.0
        self.outlier_task_norms_ = norms
        self.outlier_tasks_ = (np.flatnonzero(norms > self.outlier_threshold * top)
                               if top > 0 else np.zeros(0, dtype=np.int64))
        self.task_groups_ = result.info.get("groups", [np.arange(task_count(datafit))])


_DOC = """
    Parameters
    ----------
    alpha : float, default=0.1
        Weight of the regularizer (``> 0``).
    lam : float, default=1.0
        Weight of ``sum_t ||E_.t||_2`` relative to ``||L||_*`` (the paper's lambda); large
        values make ``E`` zero (a pure trace-norm model), small values make every task an
        outlier.
{formulation}    n_groups : int or "auto", default=1
        ``t`` of divide-and-conquer: tasks split at random into ``t`` groups of
        ``floor(m / t)`` (plus a remainder group), each solved on its own by the solver, then
        combined (``combine``). ``1`` solves the full problem. ``"auto"`` estimates the rank
        ``r`` the data call for (singular values of the loss gradient at zero above
        ``alpha``) and takes ``min(10, m // (2 r))`` groups; it declines to divide (warning,
        full problem) below 40 tasks or when two such groups do not fit. An integer whose
        groups hold fewer than ``r`` tasks warns. The number used is ``n_groups_``.
    combine : {{"refine", "project", "concatenate", "svd", "anchor"}}, default="refine"
        The combine step (:mod:`multitask.solvers.divide_conquer`): ``"refine"`` refines the
        groups' solutions on the full problem with the solver for at most ``refine_iter``
        iterations (the default, chosen by ``benchmarks/bench_dc_combine.py``);
        ``"project"`` is the paper's Algorithm 2 (the low-rank parts projected on the column
        space of the first group's); ``"svd"`` projects on the leading singular vectors of all
        groups' blocks; ``"anchor"`` adds anchor tasks shared by every group, then ``"svd"``;
        ``"concatenate"`` keeps the blocks as solved.
    refine_iter : int, default=1000
        Iteration budget of the refinement (``combine="refine"``).
    lam_scale : float or "sqrt", default=1.0
        Multiplier of ``lam`` inside the groups (``"sqrt"``: ``sqrt(n_groups)``).
    backend : {{"serial", "joblib", "dask"}} or dask.distributed.Client, default="serial"
        Where the groups run: in this process, in joblib workers, or on the current
        (``"dask"``) or given Dask client. The result does not depend on it.
    n_jobs : int, optional
        joblib workers (joblib's convention).
    blas_threads : int or None, default=1
        BLAS threads of each group's solve (capped so that workers x threads <= cores).
    random_state : int, RandomState instance or None, default=None
        Seed of the random partition into groups.
    outlier_threshold : float, default=0.1
        A task is an outlier when ``||E_.t||_2 > outlier_threshold * max_s ||E_.s||_2``
        (below ``lam = 1`` the inlier columns of ``E`` are often small but not zero: they
        absorb noise).
{loss}    {{common_parameters}}

    Attributes
    ----------
    coef_ : ndarray of shape (n_tasks, n_features)
        ``low_rank_component_ + outlier_component_``.
    intercept_ : ndarray of shape (n_tasks,)
    low_rank_component_ : ndarray of shape (n_tasks, n_features)
        ``L^T``.
    outlier_component_ : ndarray of shape (n_tasks, n_features)
        ``E^T`` (nonzero rows are outlier tasks).
    outlier_tasks_ : ndarray of int
        Positions (in ``tasks_``) of the detected outlier tasks.
    outlier_task_norms_ : ndarray of shape (n_tasks,)
        ``||E_.t||_2``.
    task_groups_ : list of ndarray
        Task positions of each divide-and-conquer group (one group when ``n_groups=1``).
    n_groups_ : int
        The number of groups used (``n_groups``, or the automatic choice; 1 when declined).
    estimated_rank_ : int or None
        The rank estimate behind ``n_groups="auto"`` and the group-size warning (None when
        ``n_groups=1``).
    tasks_, n_iter_, objective_, converged_, optimality_, solver_
        See :mod:`multitask.estimators.base` (for divide-and-conquer, ``n_iter_`` is the
        largest over the groups and ``optimality_`` that of the combined solution on the full
        problem).
"""


class RobustMTLRegressor(_Robust, MultiTaskRegressorBase):
    __doc__ = (
        """Robust multi-task least squares: low-rank ``L`` plus outlier tasks ``E``.

    Minimizes ``sum_t 1/(2 n_t) ||X_t (l_t + e_t) + b_t - y_t||^2 + alpha * (||L||_* + lam *
    sum_t ||e_t||_2)`` (``formulation="penalized"``), or ``||L||_* + lam sum_t ||e_t||_2``
    subject to ``X_t (l_t + e_t) + b_t = y_t`` (``formulation="constrained"``, the paper's
    eq. (2), LADM only; ``alpha`` is then unused and the run stops on the ADMM residuals).
""" + _DOC.format(formulation='''    formulation : {"penalized", "constrained"}, default="penalized"
        See above.
''', loss="")
    )

    _params = {**_Robust._params,
               "formulation": Param("penalized", [StrOptions({"penalized", "constrained"})])}


class RobustMTLClassifier(_Robust, MultiTaskClassifierBase):
    __doc__ = (
        """Robust multi-task classification (squared hinge): low-rank ``L`` plus outlier tasks.

    Minimizes ``sum_t (1/n_t) sum_i max(0, 1 - y_i (x_i^T (l_t + e_t) + b_t))^2 + alpha *
    (||L||_* + lam * sum_t ||e_t||_2)`` with labels mapped to -1/+1 per task; the paper's
    eq. (3) with ``beta = 1 / (alpha n)`` for ``n`` rows per task.
""" + _DOC.format(formulation="", loss='''    loss : {"squared_hinge", "logistic"}, \
default="squared_hinge"
        ``max(0, 1 - y z)^2`` (the paper's; linearized ADMM needs its prox) or logistic
        (accelerated gradient).
''')
    )

    _losses = ("squared_hinge", "logistic")
