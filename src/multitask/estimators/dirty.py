"""Split models ``W = P + Q``: the dirty model and robust multi-task feature learning.

Both minimize (library scaling, ``F = sum_t (1/n_t) sum_{i in t} ell(y_i, x_i^T w_t + b_t)``
plus the ridge term ``(alpha_l2 / 2) ||W||_F^2``)::

    dirty:  F(P + Q, b) + alpha_group sum_j ||P_j.||_q + alpha_l1 ||Q||_1       (q = inf or 2)
    rMTFL:  F(P + Q, b) + alpha_group sum_j ||P_j.||_2 + alpha_outlier sum_t ||Q_.t||_2

(``P``, ``Q`` of shape ``(n_features, n_tasks)``; the public components are transposed like
``coef_``). The dirty model (Jalali, Ravikumar, Sanghavi & Ruan, "A dirty model for
multi-task learning", NIPS 2010) separates the features all tasks share (rows of ``P``) from
task-specific exceptions (entries of ``Q``); robust multi-task feature learning (Gong, Ye &
Zhang, "Robust multi-task feature learning", KDD 2012) separates the shared features from
outlier tasks (columns of ``Q``). Penalties:
:class:`~multitask.penalties.dirty.DirtyModel` and
:class:`~multitask.penalties.dirty.RobustFeatureLearning`.

The dirty model is solved on ``W = P + Q`` alone: minimizing over the split of a fixed ``W``
leaves the norm :class:`~multitask.penalties.dirty.DirtyNorm` (the infimal convolution of the
two norms, separable over the feature rows, with an exact prox), so the problem is ``min_W
F(W, b) + N(W)`` without the degenerate direction ``(D, -D)`` of the stacked variable; the
fitted ``(P, Q)`` is the closed-form split of the solution (:meth:`~multitask.penalties.dirty.
DirtyNorm.split`), stored in ``coef_variable_`` (shape ``(2, n_features, n_tasks)``) and the
components (a warm start resumes from their sum). Solvers: block coordinate descent with the
norm's row prox (``"bcd"``, the default for least squares), ADMM with exact per-task solves
(``"admm"``), accelerated or plain proximal gradient (``"fista"``, ``"pg"``: the default for
classification, or majorization-minimization ``"mm"`` on ill-conditioned data). Outside
Jalali et al.'s range ``alpha_l1 < alpha_group < m alpha_l1`` (``sqrt(m) alpha_l1`` for ``q =
2``) one part is zero and the norm is the lasso's (or, for ``q = 2``, the l2,1 norm):
``solver="auto"`` then solves that norm with its own solvers (coordinate descent with support
steps for the lasso; :meth:`~multitask.penalties.dirty.DirtyNorm.reduced`). rMTFL keeps
the stacked variable and accelerated proximal gradient (``"fista"``, ``"pg"``).

Relation to MALSAR (``Least_Dirty``, ``Least_rMTFL``: ``||X(P+Q) - Y||_F^2`` summed over all
rows, no factor 1/2, no intercept): with ``n`` rows per task, ``rho = 2 n alpha`` for each
strength; with unequal sizes MALSAR's objective is ours on rows scaled by ``sqrt(2 n_t)``
with ``alpha = rho``. The logistic versions (per-task mean loss, free intercept) use
``rho = alpha``. See ``docs/models/dirty.md`` and ``docs/models/rmtfl.md``.

With more than two classes (one multinomial model per task, ``m K`` task-class columns of
``W``; :mod:`multitask.losses.multinomial`) the dirty model's block rows span every task and
class (a shared feature serves all of them) and its l1 part every entry; rMTFL's outlier group
of a task is its ``K`` columns of ``Q`` together (a task is an outlier for all its classes:
``outlier_task_norms_`` has one entry per task). The components have the shape of ``coef_``.
"""

from __future__ import annotations

import dataclasses
from numbers import Real

import numpy as np

from multitask.estimators.base import (
    MultiTaskClassifierBase,
    MultiTaskRegressorBase,
    Param,
    nonnegative,
)
from multitask.estimators.fitted_state import (
    Fitted,
    derived,
    fit_part,
)
from multitask.estimators.multiclass import by_task, column_classes, task_norms
from multitask.estimators.split_state import OUTLIER_TASK_NORMS, split_parts
from multitask.losses import Datafit
from multitask.penalties.base import Penalty
from multitask.penalties.dirty import DirtyModel, DirtyNorm, RobustFeatureLearning
from multitask.solvers.base import Solver
from multitask.solvers.result import SolverResult

__all__ = [
    "DirtyModelClassifier",
    "DirtyModelRegressor",
    "RobustFeatureLearningClassifier",
    "RobustFeatureLearningRegressor",
]


_COMPONENT_DOC = """
    Attributes
    ----------
    coef_ : ndarray of shape (n_tasks, n_features)
        ``(P + Q)^T``.
    intercept_ : ndarray of shape (n_tasks,)
{components}    tasks_, n_iter_, objective_, converged_, optimality_, solver_
        See :mod:`multitask.estimators.base`.
"""


# ----------------------------------------------------------------------------- dirty model
class _Dirty:
    _task_components = ("group_component_", "sparse_component_")
    _params = {
        "alpha_group": Param(0.1, [nonnegative], keyword_only=False,
                             classifier_default=0.01),
        "alpha_l1": Param(0.1, [nonnegative], keyword_only=False, classifier_default=0.01),
        "q": Param(np.inf, [Real], finite=False),
    }
    _solvers = ("bcd", "working_set", "fista", "admm", "pg", "mm", "newton")
    _max_iter = 10000
    _path_param = "alpha_group"

    def _check_params(self) -> None:
        if float(self.q) not in (2.0, np.inf):
            raise ValueError(f"The 'q' parameter of {type(self).__name__} must be 2 or inf "
                             f"(the l1,2 or l1,inf norm of the group part), got {self.q!r}.")

    def _split_penalty(self) -> DirtyModel:
        return DirtyModel(float(self.alpha_group), float(self.alpha_l1), float(self.q))

    def _make_penalty(self, datafit: Datafit) -> DirtyNorm:
        """The model on ``W`` alone (module docstring)."""
        return self._split_penalty().on_weights()

    def _fitted_penalty(self) -> Penalty:
        """The split penalty on the stored parts ``coef_variable_`` (new tasks get each
        part's prior)."""
        return self._split_penalty()

    def _warm_start_point(self, data, shape):
        """The stored parts ``(2, d, m)`` resume as their sum ``W``."""
        V, b = super()._warm_start_point(data, (2, *shape))
        return (None, None) if V is None else (np.sum(V, axis=0), b)

    def _solved_penalty(self, datafit: Datafit, penalty: Penalty) -> Penalty:
        """The penalty the solver minimizes: with ``solver="auto"``, the single norm the
        dirty norm equals outside Jalali et al.'s range (:meth:`~multitask.penalties.dirty.
        DirtyNorm.reduced`: the lasso where ``alpha_group >= m alpha_l1``, the l2,1 norm
        where ``q = 2`` and ``alpha_l1 >= alpha_group``), whose solvers (coordinate descent
        with support steps for the lasso) are faster on it; else the dirty norm."""
        if self.solver != "auto":
            return penalty
        reduced = penalty.reduced(datafit.data.n_tasks)  # type: ignore[attr-defined]
        return penalty if reduced is None else reduced

    def _make_solver(self, datafit: Datafit, penalty: Penalty) -> Solver:
        return super()._make_solver(datafit,  # type: ignore[misc]
                                    self._solved_penalty(datafit, penalty))

    def _run_solver(self, solver: Solver, datafit: Datafit, penalty: Penalty, coef_init,
                    intercept_init) -> SolverResult:
        """Solve on ``W`` (the dirty norm, or the single norm it equals:
        :meth:`_solved_penalty`); the record's variable is the split ``[P, Q]`` of the
        solution."""
        result = super()._run_solver(solver, datafit,  # type: ignore[misc]
                                     self._solved_penalty(datafit, penalty), coef_init,
                                     intercept_init)
        P, Q = penalty.split(result.W)  # type: ignore[attr-defined]
        return dataclasses.replace(result, coef=np.stack([P, Q]))

    def _grid_tops(self, datafit, penalty):
        grad = datafit.grad_at_zero()
        top_l1 = float(np.abs(grad).max()) if grad.size else 0.0
        return {"alpha_group": (penalty.dual_group_norm(grad), 1.0), "alpha_l1": (top_l1, 1.0)}

    _fitted_state = {
        **split_parts("group_component_", "sparse_component_"),
        "shared_features_": Fitted("indices", bound="d", check=derived(
            lambda est, s: np.flatnonzero(np.any(fit_part(0)(est, s) != 0, axis=1)),
            "the nonzero rows of the block part")),
    }

    def _store_extra(self, result, penalty, datafit) -> None:
        P, Q = result.coef[0], result.coef[1]
        self.group_component_ = by_task(self, np.ascontiguousarray(P.T))
        self.sparse_component_ = by_task(self, np.ascontiguousarray(Q.T))
        self.shared_features_ = np.flatnonzero(np.any(P != 0, axis=1))


_DIRTY_PARAMS = """
    Parameters
    ----------
    alpha_group : float, default={group}
        Weight of the block norm ``sum_j ||P_j.||_q`` (>= 0; the path parameter).
    alpha_l1 : float, default={l1}
        Weight of ``||Q||_1`` (>= 0). Jalali et al. recommend ``alpha_l1 < alpha_group <
        m alpha_l1`` for ``q = inf`` (``sqrt(m) alpha_l1`` for ``q = 2``): outside that range
        one of the parts is zero (``m`` tasks).
    q : {{2, inf}}, default=inf
        Inner norm of the block part: ``inf`` (the paper's and MALSAR's) or 2.
{loss}    {{common_parameters}}
"""

_DIRTY_COMPONENTS = """    group_component_ : ndarray of shape (n_tasks, n_features)
        ``P^T``: the block part (zero rows of ``P`` are zero columns here).
    sparse_component_ : ndarray of shape (n_tasks, n_features)
        ``Q^T``: the elementwise sparse part.
    shared_features_ : ndarray of int
        The features used by the block part (nonzero rows of ``P``).
"""


class DirtyModelRegressor(_Dirty, MultiTaskRegressorBase):
    __doc__ = """Dirty multi-task least squares: shared features ``P`` plus exceptions ``Q``.

    Minimizes ``sum_t 1/(2 n_t) ||X_t (p_t + q_t) + b_t - y_t||^2 + alpha_group sum_j
    ||P_j.||_q + alpha_l1 ||Q||_1`` (Jalali, Ravikumar, Sanghavi & Ruan, "A dirty model for
    multi-task learning"). ``alpha_max(X, y)`` is the smallest ``alpha_group`` with
    ``coef_ = 0`` for the given ``alpha_l1`` (``inf`` when ``alpha_l1 < max |G|``, ``G`` the
    loss gradient at zero); the default grid runs ``alpha_group`` from ``max_j ||G_j.||_{q*}``
    and ``alpha_l1`` from ``max |G|``, each over ``log10(1 / alpha_ratio)`` decades.
""" + _DIRTY_PARAMS.format(group=0.1, l1=0.1, loss="") + _COMPONENT_DOC.format(
        components=_DIRTY_COMPONENTS)


class DirtyModelClassifier(_Dirty, MultiTaskClassifierBase):
    __doc__ = """Dirty multi-task classification (logistic): shared features plus exceptions.

    Minimizes ``sum_t (1/n_t) sum_i ell(y_i, x_i^T (p_t + q_t) + b_t) + alpha_group sum_j
    ||P_j.||_q + alpha_l1 ||Q||_1`` with labels mapped to -1/+1 per task.
""" + _DIRTY_PARAMS.format(group=0.01, l1=0.01, loss='''    loss : {"logistic", \
"squared_hinge"}, default="logistic"
''') + _COMPONENT_DOC.format(components="""    classes_ : ndarray of shape (2,)
        ``classes_[1]`` is the positive class (score > 0).
""" + _DIRTY_COMPONENTS)


# ----------------------------------------------------------------------------- rMTFL
class _RobustFeatures:
    _task_components = ("feature_component_", "outlier_component_")
    _params = {
        "alpha_group": Param(0.1, [nonnegative], keyword_only=False,
                             classifier_default=0.01),
        "alpha_outlier": Param(0.1, [nonnegative], keyword_only=False,
                               classifier_default=0.01),
    }
    _solvers = ("fista", "pg", "admm", "mm", "newton_admm")
    # solver="auto" takes ADMM for a quadratic loss, as the other split models do (on School's
    # 20 schools, raw and z-scored, it reaches a certified 1e-8 at every point of
    # benchmarks/bench_certified.py --sweep where majorization-minimization stalls at some),
    # majorization-minimization or Newton's ADMM for the other losses
    _auto_solvers = ("fista", "pg", "admm", "mm", "newton_admm")
    _max_iter = 10000
    _path_param = "alpha_group"

    def _make_penalty(self, datafit: Datafit) -> RobustFeatureLearning:
        """For ``K`` classes (a multinomial model) the outlier group of a task is its ``K``
        columns of ``Q`` (a task is an outlier for all its classes), the feature rows of
        ``P`` span every task and class."""
        return RobustFeatureLearning(float(self.alpha_group), float(self.alpha_outlier),
                                     n_classes=column_classes(datafit))

    def _grid_tops(self, datafit, penalty):
        grad = datafit.grad_at_zero()
        if not grad.size:
            return {"alpha_group": (0.0, 1.0), "alpha_outlier": (0.0, 1.0)}
        return {"alpha_group": (float(np.linalg.norm(grad, axis=1).max()), 1.0),
                "alpha_outlier": (float(task_norms(grad, column_classes(datafit)).max()), 1.0)}

    _fitted_state = {
        **split_parts("feature_component_", "outlier_component_"),
        "outlier_task_norms_": OUTLIER_TASK_NORMS,
        "outlier_tasks_": Fitted("indices", bound="t", check=derived(
            lambda est, s: np.flatnonzero(np.asarray(est.outlier_task_norms_) > 0),
            "the tasks of nonzero outlier_task_norms_")),
        "shared_features_": Fitted("indices", bound="d", check=derived(
            lambda est, s: np.flatnonzero(np.linalg.norm(fit_part(0)(est, s), axis=1) > 0),
            "the nonzero rows of the feature part")),
    }

    def _store_extra(self, result, penalty, datafit) -> None:
        P, Q = result.coef[0], result.coef[1]
        self.feature_component_ = by_task(self, np.ascontiguousarray(P.T))
        self.outlier_component_ = by_task(self, np.ascontiguousarray(Q.T))
        self.outlier_task_norms_ = task_norms(Q, column_classes(datafit))
        self.outlier_tasks_ = np.flatnonzero(self.outlier_task_norms_ > 0)
        self.shared_features_ = np.flatnonzero(np.linalg.norm(P, axis=1) > 0)


_RMTFL_PARAMS = """
    Parameters
    ----------
    alpha_group : float, default={group}
        Weight of ``sum_j ||P_j.||_2`` over the feature rows (>= 0; the path parameter).
    alpha_outlier : float, default={outlier}
        Weight of ``sum_t ||Q_.t||_2`` over the task columns (>= 0): large values leave no
        outlier task (the l2,1 model), small ones make every task an outlier.
{loss}    {{common_parameters}}
"""

_RMTFL_COMPONENTS = """    feature_component_ : ndarray of shape (n_tasks, n_features)
        ``P^T``: the shared features (nonzero rows of ``P``).
    outlier_component_ : ndarray of shape (n_tasks, n_features)
        ``Q^T``: the nonzero rows here are the outlier tasks.
    outlier_task_norms_ : ndarray of shape (n_tasks,)
        ``||Q_.t||_2``.
    outlier_tasks_ : ndarray of int
        Positions (in ``tasks_``) of the tasks with ``Q_.t != 0`` (the prox sets the others
        exactly to zero).
    shared_features_ : ndarray of int
        Nonzero rows of ``P``.
"""


class RobustFeatureLearningRegressor(_RobustFeatures, MultiTaskRegressorBase):
    __doc__ = """Robust multi-task feature learning (rMTFL), least squares.

    Minimizes ``sum_t 1/(2 n_t) ||X_t (p_t + q_t) + b_t - y_t||^2 + alpha_group sum_j
    ||P_j.||_2 + alpha_outlier sum_t ||Q_.t||_2`` (Gong, Ye & Zhang, "Robust multi-task
    feature learning"). ``alpha_max(X, y)`` is the smallest ``alpha_group`` with ``coef_ = 0``
    for the given ``alpha_outlier`` (``inf`` when ``alpha_outlier < max_t ||G_.t||_2``); the
    default grid runs ``alpha_group`` from ``max_j ||G_j.||_2`` and ``alpha_outlier`` from
    ``max_t ||G_.t||_2``.
""" + _RMTFL_PARAMS.format(group=0.1, outlier=0.1, loss="") + _COMPONENT_DOC.format(
        components=_RMTFL_COMPONENTS)


class RobustFeatureLearningClassifier(_RobustFeatures, MultiTaskClassifierBase):
    __doc__ = """Robust multi-task feature learning (rMTFL), logistic loss.

    Minimizes ``sum_t (1/n_t) sum_i ell(y_i, x_i^T (p_t + q_t) + b_t) + alpha_group sum_j
    ||P_j.||_2 + alpha_outlier sum_t ||Q_.t||_2`` with labels mapped to -1/+1 per task.
""" + _RMTFL_PARAMS.format(group=0.01, outlier=0.01, loss='''    loss : {"logistic", \
"squared_hinge"}, default="logistic"
''') + _COMPONENT_DOC.format(components="""    classes_ : ndarray of shape (2,)
        ``classes_[1]`` is the positive class (score > 0).
""" + _RMTFL_COMPONENTS)
