"""Baseline multi-task models: independent ridge / lasso, pooled, l2,1, trace norm.

Each model minimizes (scaling convention of :mod:`multitask.losses`)::

    sum_t (1 / n_t) sum_{i in t} ell(y_i, x_i^T w_t + b_t) + alpha * Omega(W)

* independent ridge: ``Omega = 0.5 ||W||_F^2`` (tasks decouple; closed form for regression);
* independent lasso: ``Omega = sum |W_jt|`` (tasks decouple);
* l2,1 (joint feature selection): ``Omega = sum_j ||W_j.||_2``;
* trace norm (low rank): ``Omega = ||W||_*``;
* pooled: one weight vector and one intercept for all rows, ``(1/N) sum_i ell + alpha/2 ||w||^2``.

Regressors use the squared loss, classifiers the logistic loss (or ``loss="squared_hinge"``).
The generic :class:`MultiTaskRegressor` / :class:`MultiTaskClassifier` take the penalty by
name or as a :class:`~multitask.penalties.base.Penalty` object.

With more than two classes the classifiers fit one multinomial model per task
(:mod:`multitask.losses.multinomial`) on the ``m K`` task-class columns of ``W``: the norms act
on all of them (an l2,1 row selects a feature for every task and class, the trace norm sees
the ``m K`` columns, l1 and ridge every entry), ``"column_l2"`` groups each task's ``K``
columns (a task keeps or drops its weights for all its classes), and the pooled model is one
multinomial model of all rows, repeated for every task. A :class:`~multitask.penalties.base.
Penalty` object is used as given, on the ``(n_features, m K)`` columns.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from sklearn.utils._param_validation import StrOptions

from multitask.data import MultiTaskData
from multitask.estimators.base import (
    MultiTaskClassifierBase,
    MultiTaskRegressorBase,
    Param,
    nonnegative,
)
from multitask.estimators.fitted_state import Fitted
from multitask.estimators.multiclass import class_shape, column_classes
from multitask.losses import Datafit
from multitask.penalties import L1, L21, ColumnL2, Penalty, Ridge, TraceNorm
from multitask.solvers.result import SolverResult

__all__ = [
    "IndependentLassoClassifier",
    "IndependentLassoRegressor",
    "IndependentRidgeClassifier",
    "IndependentRidgeRegressor",
    "L21Classifier",
    "L21Regressor",
    "MultiTaskClassifier",
    "MultiTaskRegressor",
    "PooledClassifier",
    "PooledRegressor",
    "TraceNormClassifier",
    "TraceNormRegressor",
]

#: Penalties of the generic models, by name.
PENALTIES: dict[str, type[Penalty]] = {"l1": L1, "l21": L21, "trace": TraceNorm,
                                       "ridge": Ridge, "column_l2": ColumnL2}


def _alpha(default: float, classifier_default: float) -> Param:
    return Param(default, [nonnegative], keyword_only=False,
                 classifier_default=classifier_default)


class _NormModel:
    """A norm penalty ``alpha * Omega`` chosen by ``_penalty`` (or the ``penalty`` param)."""

    _penalty: str = "trace"

    def _make_penalty(self, datafit: Datafit) -> Penalty:
        p = getattr(self, "penalty", self._penalty)
        if isinstance(p, Penalty):
            return p
        if p == "column_l2":  # a task's K class columns together (a multinomial model)
            return ColumnL2(float(self.alpha), n_classes=column_classes(datafit))
        return PENALTIES[p](float(self.alpha))


class _GenericModel(_NormModel):
    _params = {
        "penalty": Param("trace", [StrOptions(set(PENALTIES)), Penalty], keyword_only=False),
        "alpha": _alpha(0.1, 0.01),
    }


class MultiTaskRegressor(_GenericModel, MultiTaskRegressorBase):
    """Multi-task least squares with a structured penalty (the generic model).

    Minimizes ``sum_t 1/(2 n_t) ||X_t w_t + b_t - y_t||^2 + alpha * Omega(W)``.

    Parameters
    ----------
    penalty : {"trace", "l21", "l1", "ridge", "column_l2"} or Penalty, default="trace"
        ``Omega``: trace norm, l2,1 over feature rows, l1, ``0.5 ||W||_F^2``, l2 over task
        columns; or any :class:`~multitask.penalties.base.Penalty` object (then ``alpha`` is
        unused: the object holds its strength).
    alpha : float, default=0.1
        Regularization strength (>= 0).
    {common_parameters}

    Attributes
    ----------
    coef_ : ndarray of shape (n_tasks, n_features)
    intercept_ : ndarray of shape (n_tasks,)
    tasks_ : ndarray of shape (n_tasks,)
    n_iter_, objective_, converged_, optimality_, solver_
        See :mod:`multitask.estimators.base`.
    """


class MultiTaskClassifier(_GenericModel, MultiTaskClassifierBase):
    """Multi-task binary classification with a structured penalty (the generic model).

    Minimizes ``sum_t (1/n_t) sum_i ell(y_i, x_i^T w_t + b_t) + alpha * Omega(W)`` with the
    logistic loss (default) or the squared hinge ``max(0, 1 - y z)^2``.

    Parameters
    ----------
    penalty : {"trace", "l21", "l1", "ridge", "column_l2"} or Penalty, default="trace"
    alpha : float, default=0.01
    loss : {"logistic", "squared_hinge"}, default="logistic"
    {common_parameters}
    """


class _L21(_NormModel):
    _penalty = "l21"
    _params = {"alpha": _alpha(0.1, 0.01)}


class _Trace(_NormModel):
    _penalty = "trace"
    _params = {"alpha": _alpha(0.1, 0.01)}


class _Lasso(_NormModel):
    _penalty = "l1"
    _params = {"alpha": _alpha(0.1, 0.01)}


class _Ridge(_NormModel):
    _penalty = "ridge"
    _params = {"alpha": _alpha(1.0, 0.01)}


class L21Regressor(_L21, MultiTaskRegressorBase):
    """Joint feature selection: least squares + ``alpha * sum_j ||W_j.||_2`` (l2,1 norm).

    With a shared design this is scikit-learn's ``MultiTaskLasso`` (same ``alpha``) plus
    unpenalized per-task intercepts.

    Parameters
    ----------
    alpha : float, default=0.1
        Regularization strength (>= 0).
    {common_parameters}
    """


class TraceNormRegressor(_Trace, MultiTaskRegressorBase):
    """Low-rank multi-task least squares: ``alpha * ||W||_*`` (trace / nuclear norm).

    Parameters
    ----------
    alpha : float, default=0.1
        Regularization strength (>= 0).
    {common_parameters}
    """


class IndependentLassoRegressor(_Lasso, MultiTaskRegressorBase):
    """One lasso per task: ``alpha * sum |W_jt|`` (the tasks do not interact).

    Parameters
    ----------
    alpha : float, default=0.1
        Regularization strength (>= 0).
    {common_parameters}
    """


class IndependentRidgeRegressor(_Ridge, MultiTaskRegressorBase):
    """One ridge regression per task: ``(alpha / 2) ||W||_F^2``, solved in closed form.

    Each task solves ``(X_t^T X_t / n_t + alpha I) w_t = X_t^T y_t / n_t`` on centred data.

    Parameters
    ----------
    alpha : float, default=1.0
        Regularization strength (>= 0).
    {common_parameters}
    """


class L21Classifier(_L21, MultiTaskClassifierBase):
    """Joint feature selection for classification: logistic + ``alpha * sum_j ||W_j.||_2``.

    Parameters
    ----------
    alpha : float, default=0.01
    loss : {"logistic", "squared_hinge"}, default="logistic"
    {common_parameters}
    """


class TraceNormClassifier(_Trace, MultiTaskClassifierBase):
    """Low-rank multi-task classification: logistic + ``alpha * ||W||_*``.

    Parameters
    ----------
    alpha : float, default=0.01
    loss : {"logistic", "squared_hinge"}, default="logistic"
    {common_parameters}
    """


class IndependentLassoClassifier(_Lasso, MultiTaskClassifierBase):
    """One l1-penalized logistic regression per task: ``alpha * sum |W_jt|``.

    Parameters
    ----------
    alpha : float, default=0.01
    loss : {"logistic", "squared_hinge"}, default="logistic"
    {common_parameters}
    """


class IndependentRidgeClassifier(_Ridge, MultiTaskClassifierBase):
    """One l2-penalized logistic regression per task: ``(alpha / 2) ||W||_F^2``.

    Parameters
    ----------
    alpha : float, default=0.01
    loss : {"logistic", "squared_hinge"}, default="logistic"
    {common_parameters}
    """


# ----------------------------------------------------------------------------- pooled
def _pooled_data(data: MultiTaskData) -> MultiTaskData:
    """All rows of all tasks as one task (a shared design is repeated once per task), with
    their row weights (the pairs of weight zero of a shared design left out)."""
    X = data.X
    if data.shared:
        import scipy.sparse as sp

        X = sp.vstack([X] * data.n_tasks, format="csr") if sp.issparse(X) else np.tile(
            X, (data.n_tasks, 1))
    y, w = data.y, data.sample_weight
    if w is not None and not np.all(w > 0):
        keep = np.flatnonzero(w > 0)
        X, y, w = X[keep], y[keep], w[keep]
    return MultiTaskData(X, y, np.array([0, len(y)], dtype=np.int64), np.array([0]), False,
                         sample_weight=w)


def _pooled_rows(est, V, sizes) -> str | None:
    """The rows of ``coef_`` of the tasks of the fit are the common weights ``V[:, 0]``
    (``V.T``, one row per class, for more than two classes)."""
    coef = getattr(est, "coef_", None)
    if not isinstance(coef, np.ndarray) or coef.ndim not in (2, 3):
        return None  # reported on coef_ itself
    rows = coef[: sizes.get("t", sizes.get("m"))]
    common = V[:, 0] if coef.ndim == 2 else V.T
    if common.shape != rows.shape[1:] or not np.array_equal(
            rows, np.broadcast_to(common, rows.shape)):
        return "does not match coef_ (every row of a task of the fit is the common weights)"
    return None


class _Pooled(_NormModel):
    """One model for all tasks: the data pooled into one task, the weights repeated."""

    _penalty = "ridge"
    _params = {"alpha": _alpha(1e-3, 1e-3)}
    #: one weight vector (and intercept) for all tasks, repeated in coef_ (and intercept_)
    _fitted_state = {
        "coef_variable_": Fitted("array", shape=class_shape(("d", 1), ("d", "K")),
                                 check=_pooled_rows),
        "intercept_variable_": Fitted("array", shape=class_shape((1,), ("K",)),
                                      optional=True),
    }

    def _make_datafit(self, data):
        return super()._make_datafit(_pooled_data(data))

    def _store_result(self, result: SolverResult, penalty, data, solver) -> None:
        # the common weights (one column, or one per class) for every task, task by task
        m = data.n_tasks
        result.W = np.tile(result.W, (1, m))
        result.intercept = np.tile(result.intercept, m)
        super()._store_result(result, penalty, data, solver)

    def _store_loss_state(self, result: SolverResult, datafit: Datafit) -> None:
        # the loss's state of the one pooled task (W is tiled by now), repeated for each task
        one = dataclasses.replace(result, W=result.W[:, :1])
        super()._store_loss_state(one, datafit)
        if getattr(self, "scale_", None) is not None:
            self.scale_ = np.repeat(self.scale_, len(self.tasks_))

    def _warm_start_point(self, data, shape):
        return None, None

    def _new_task_prior(self):
        """The population model: a new task gets the common weights and intercept (the
        pooled model has no per-task parameter to learn from its rows)."""
        from multitask.penalties.new_task import GaussianPrior

        return GaussianPrior(self.coef_[0], complement=np.inf,
                             fixed_intercept=float(self.intercept_[0]))


class PooledRegressor(_Pooled, MultiTaskRegressorBase):
    """One model for all tasks: ``(1/(2N)) sum_i (x_i^T w + b - y_i)^2 + (alpha/2) ||w||^2``.

    ``coef_`` repeats the common ``w`` for every task so that predictions work per task.

    Parameters
    ----------
    alpha : float, default=1e-3
        Ridge strength (>= 0).
    {common_parameters}
    """


class PooledClassifier(_Pooled, MultiTaskClassifierBase):
    """One logistic model for all tasks (l2 penalty ``(alpha / 2) ||w||^2``).

    Parameters
    ----------
    alpha : float, default=1e-3
    loss : {"logistic", "squared_hinge"}, default="logistic"
    {common_parameters}
    """
