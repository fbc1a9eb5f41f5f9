"""Multi-task relationship learning (MTRL): tasks related through a learned task covariance.

Zhang & Yeung, "A convex formulation for learning task relationships in multi-task learning",
UAI 2010. The models minimize (scaling convention of :mod:`multitask.losses`; ``W`` is
``(n_features, n_tasks)``, ``coef_ = W.T``)::

    sum_t (1 / n_t) sum_{i in t} ell(y_i, x_i^T w_t + b_t) + (alpha_l2 / 2) ||W||_F^2
        + (alpha / 2) * min_{Omega >= 0, tr Omega = 1} tr(W Omega^{-1} W^T)

The minimum over the task covariance ``Omega`` is ``(alpha / 2) ||W||_*^2`` (squared trace
norm), attained at ``Omega = (W^T W)^{1/2} / tr((W^T W)^{1/2})``: the penalty
:class:`~multitask.penalties.relationship.TaskRelationship` is a convex function of ``W`` with
an exact prox, solved by accelerated proximal gradient, and the joint minimizer is
``(W*, Omega(W*))``. ``task_covariance_`` is that ``Omega`` and ``task_correlation_`` its
correlation matrix: positive, negative or no correlation between tasks, learned from the data.

Relation to the paper's problem (squared loss ``sum_t (1/n_t) sum_i (y_i - w_t^T x_i - b_t)^2``,
twice ours, plus ``(lambda1 / 2) tr(W W^T) + (lambda2 / 2) tr(W Omega^{-1} W^T)``):
``alpha = lambda2 / 2`` and ``alpha_l2 = lambda1 / 2``.

With more than two classes (one multinomial model per task, ``m K`` task-class columns of
``W``; :mod:`multitask.losses.multinomial`) the task covariance stays over the ``m`` tasks and
acts as ``Omega kron I_K``: class ``k`` of task ``t`` relates to class ``k`` of task ``t'`` as the
tasks relate. The penalty is then ``(alpha / 2) ||W~||_*^2`` of the stacked ``W~`` of shape
``(n_features K, m)`` (:mod:`multitask.penalties.class_columns`), and ``task_covariance_`` is
``m x m``.
"""

from __future__ import annotations

from multitask.estimators.base import (
    MultiTaskClassifierBase,
    MultiTaskRegressorBase,
    Param,
    nonnegative,
)
from multitask.estimators.docstrings import pair_doc
from multitask.estimators.fitted_state import Fitted
from multitask.estimators.multiclass import column_classes
from multitask.losses import Datafit
from multitask.penalties.class_columns import stack_classes
from multitask.penalties.relationship import TaskRelationship, task_correlation, task_covariance

__all__ = ["TaskRelationshipClassifier", "TaskRelationshipRegressor"]


class _TaskRelationship:
    _params = {
        "alpha": Param(0.1, [nonnegative], keyword_only=False, classifier_default=0.01),
    }
    _max_iter = 5000

    def _make_penalty(self, datafit: Datafit):
        return TaskRelationship(float(self.alpha), n_classes=column_classes(datafit))

    _fitted_state = {
        "task_covariance_": Fitted("array", shape=("t", "t")),
        "task_correlation_": Fitted("array", shape=("t", "t")),
    }

    def _store_extra(self, result, penalty, datafit) -> None:
        self.task_covariance_ = task_covariance(stack_classes(result.W,
                                                              column_classes(datafit)))
        self.task_correlation_ = task_correlation(self.task_covariance_)


_DOC = """
    Minimizes ``{loss} + (alpha_l2 / 2) ||W||_F^2 + (alpha / 2) min_Omega tr(W Omega^{{-1}}
    W^T)`` over task covariances ``Omega >= 0`` with ``tr Omega = 1``, which equals
    ``(alpha / 2) ||W||_*^2`` (Zhang & Yeung, UAI 2010). The penalty is
    :class:`~multitask.penalties.relationship.TaskRelationship` (convex, exact prox), solved by
    accelerated proximal gradient.

    Parameters
    ----------
    alpha : float, default={alpha}
        Weight of the task-relationship term (>= 0): the paper's ``lambda2 / 2``. The
        paper's ``lambda1 / 2`` (its ``||W||_F^2`` term) is ``alpha_l2``.
{loss_param}    {{common_parameters}}

    Attributes
    ----------
    coef_ : ndarray of shape (n_tasks, n_features)
    intercept_ : ndarray of shape (n_tasks,)
    tasks_ : ndarray of shape (n_tasks,)
    task_covariance_ : ndarray of shape (n_tasks, n_tasks)
        The learned ``Omega = (W^T W)^{{1/2}} / tr((W^T W)^{{1/2}})`` (``I / n_tasks`` when
        ``W = 0``), in the order of ``tasks_``.
    task_correlation_ : ndarray of shape (n_tasks, n_tasks)
        ``Omega_st / sqrt(Omega_ss Omega_tt)`` (rows of all-zero tasks are 0).
    n_iter_, objective_, converged_, optimality_, solver_
        See :mod:`multitask.estimators.base`.
"""


class TaskRelationshipRegressor(_TaskRelationship, MultiTaskRegressorBase):
    __doc__ = pair_doc(
        "Multi-task least squares with a learned task covariance (MTRL).", _DOC,
        classifier=False, alpha="0.1", examples="""
    Examples
    --------
    >>> import numpy as np
    >>> from multitask import TaskRelationshipRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((60, 5))
    >>> w = rng.standard_normal(5)
    >>> Y = X @ np.column_stack([w, w, -w]) + 0.1 * rng.standard_normal((60, 3))
    >>> model = TaskRelationshipRegressor(alpha=0.01).fit(X, Y)
    >>> np.round(model.task_correlation_, 1)
    array([[ 1.,  1., -1.],
           [ 1.,  1., -1.],
           [-1., -1.,  1.]])
    """
    )


class TaskRelationshipClassifier(_TaskRelationship, MultiTaskClassifierBase):
    __doc__ = pair_doc(
        "Multi-task binary classification with a learned task covariance (MTRL).", _DOC,
        classifier=True, alpha="0.01")
