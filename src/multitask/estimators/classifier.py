"""The base of the multi-task classifiers (:class:`MultiTaskClassifierBase`): one binary
problem per task for two classes, one multinomial model per task for more (the logistic
loss), with the fitted state of both, ``decision_function``, ``predict``, ``predict_proba``
and the accuracy ``score``."""

from __future__ import annotations

import numpy as np
from scipy.special import expit
from sklearn.base import ClassifierMixin
from sklearn.metrics import accuracy_score
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from multitask.data import MultiTaskData, is_task_list
from multitask.data.class_columns import class_scores_by_row
from multitask.estimators.estimator import MultiTaskEstimator
from multitask.estimators.fitted_state import Fitted, matches_coef
from multitask.estimators.inputs import (
    distributed_solvers,
    is_distributed,
    refuse_distributed_weights,
)
from multitask.estimators.multiclass import (
    class_count,
    class_shape,
    is_multiclass,
    softmax_scores,
)
from multitask.estimators.scoring import flat_scored, map_output
from multitask.losses import Datafit
from multitask.losses.multinomial import Multinomial
from multitask.penalties.base import Penalty
from multitask.solvers import Solver
from multitask.solvers.result import SolverResult

__all__ = ["MultiTaskClassifierBase"]

def _class_axis(est, value, sizes) -> str | None:
    """``coef_`` of more than two classes holds more than two per task."""
    if np.ndim(value) == 3 and np.shape(value)[1] <= 2:
        return (f"has shape {np.shape(value)}: a model of two classes has a coef_ of shape "
                "(n_tasks, n_features)")
    return None


def _class_labels(est, value, sizes) -> str | None:
    """``classes_``: two labels for a ``coef_`` of shape ``(m, d)``, ``K`` for ``(m, K, d)``."""
    coef = getattr(est, "coef_", None)
    want = coef.shape[1] if isinstance(coef, np.ndarray) and coef.ndim == 3 else 2
    if len(value) != want:
        return (f"holds {len(value)} classes but coef_ has shape {np.shape(coef)} ({want} "
                "classes)")
    return None


def _intercepts(est, value, sizes) -> str | None:
    """``intercept_``: finite, but ``-inf`` for a class a task never saw (more than two
    classes), each task keeping a finite intercept."""
    a = np.asarray(value, dtype=np.float64)
    if np.any(np.isnan(a)) or np.any(a == np.inf):
        return "holds NaN or +inf"
    if a.ndim < 2:
        return None if np.all(np.isfinite(a)) else "holds NaN or infinity"
    if a.size and not np.all(np.any(np.isfinite(a), axis=1)):
        return "has a task without any class (every intercept -inf)"
    return None


class MultiTaskClassifierBase(ClassifierMixin, MultiTaskEstimator):
    """Base of multi-task classifiers: one binary problem per task for two classes, one
    multinomial model per task for more.

    Two classes (labels mapped to ``-1 / +1``, ``classes_[1]`` positive): ``coef_`` of shape
    ``(n_tasks, n_features)``, ``intercept_`` ``(n_tasks,)``, the losses of the model
    (``loss=``). ``K > 2`` classes (the label set the tasks share; a task may lack some): the
    logistic loss becomes the multinomial loss of :mod:`multitask.losses.multinomial`, one
    softmax model per task whose ``K`` weight columns are columns of the solver's ``W``
    (``(n_features, n_tasks K)``, column ``t K + k``), so the structure penalty acts on all
    the tasks' and classes' columns (each model family says how its task structure extends to
    them); ``coef_`` has shape ``(n_tasks, n_classes, n_features)`` and ``intercept_``
    ``(n_tasks, n_classes)``, ``-inf`` for a class a task never saw (its probability there is
    0); ``decision_function`` and ``predict_proba`` give ``(n, n_classes)`` per row, as
    scikit-learn's ``LogisticRegression``. The hinge-type losses stay binary (a
    ``ValueError`` says so).
    """

    _abstract = True
    _is_classifier = True
    _fitted_state = {
        "classes_": Fitted("labels", shape=(None,), check=_class_labels),
        "coef_": Fitted("array", shape=class_shape(("m", "d"), ("m", "K", "d")),
                        check=_class_axis),
        "intercept_": Fitted("array", shape=class_shape(("m",), ("m", "K")), finite=False,
                             check=_intercepts),
        "coef_variable_": Fitted("array", shape=("d", "c"), check=matches_coef(
            lambda V, _: V.T, "coef_ is its transpose")),
        "intercept_variable_": Fitted("array", shape=("c",), optional=True),
    }

    # ------------------------------------------------------------------ more than two classes
    def _make_datafit(self, data: MultiTaskData) -> Datafit:
        """The model's loss, or for ``K > 2`` classes (the data layer's class codes) the
        multinomial loss, which only the logistic loss extends to."""
        n_classes = class_count(data)
        if n_classes <= 2:
            return super()._make_datafit(data)
        loss = self._loss_name()
        if loss != "logistic":
            raise ValueError(
                f"Only binary classification is supported. {type(self).__name__} got "
                f"{n_classes} classes: more than two classes are fitted by the multinomial "
                f"model of the logistic loss, and the {loss!r} loss is a two-class loss. Pass "
                "loss='logistic'.")
        options = {k: v for k, v in self._datafit_options().items()
                   if k in ("alpha_l2", "center")}
        return Multinomial(data, bool(self.fit_intercept), n_classes=n_classes, **options)

    def _warm_start_point(self, data: MultiTaskData, shape: tuple[int, ...]):
        n_classes = class_count(data) if isinstance(data, MultiTaskData) else 2
        if n_classes > 2:  # the solver's variable has a column per (task, class)
            shape = (*shape[:-1], shape[-1] * n_classes)
            if not is_multiclass(self) or len(self.classes_) != n_classes:
                return None, None
        return super()._warm_start_point(data, shape)

    def _store_result(self, result: SolverResult, penalty: Penalty, data: MultiTaskData,
                      solver: Solver) -> None:
        super()._store_result(result, penalty, data, solver)
        if not is_multiclass(self):
            return
        n_classes = len(self.classes_)
        m = len(self.tasks_)
        if self.coef_.shape[0] != m * n_classes:
            raise ValueError(f"{type(self).__name__}: more than two classes are not supported "
                             "on distributed input (Dask collections or TaskBlocks): fit in "
                             "memory.")
        self.coef_ = np.ascontiguousarray(self.coef_.reshape(m, n_classes, -1))
        self.intercept_ = self.intercept_.reshape(m, n_classes)

    def fit_new_tasks(self, X, y, task=None, sample_weight=None, *, strength="auto"):
        if is_multiclass(self):
            raise ValueError(
                f"fit_new_tasks learns new tasks of two-class models only: this "
                f"{type(self).__name__} has {len(self.classes_)} classes (a new task's "
                "multinomial model is not available yet). Refit with the new tasks' rows.")
        return super().fit_new_tasks(X, y, task, sample_weight, strength=strength)

    fit_new_tasks.__doc__ = MultiTaskEstimator.fit_new_tasks.__doc__

    def _scores_or_population(self, X, task, unknown_tasks):
        if is_multiclass(self) and unknown_tasks != "error":
            raise ValueError(
                f"unknown_tasks={unknown_tasks!r}: the population model is available for "
                f"two-class models only; this {type(self).__name__} has "
                f"{len(self.classes_)} classes.")
        return super()._scores_or_population(X, task, unknown_tasks)

    def _scores(self, X, task=None):
        """The scores of the rows (two classes: ``x^T w_t + b_t``; more: ``(n, K)`` per row of
        ``x^T w_{t,k} + b_{t,k}``), in the layout of the training input."""
        if not is_multiclass(self) or is_distributed(X):
            return super()._scores(X, task)
        check_is_fitted(self, "coef_")
        data = self._prediction_data(X, task)
        n_classes = len(self.classes_)
        m, d = data.n_tasks, data.n_features
        self._check_prediction_state(data, n_classes)
        W = self.coef_.reshape(m * n_classes, d).T
        Z = class_scores_by_row(data, W, self.intercept_.ravel(), n_classes)
        if is_task_list(X):
            return [Z[data.offsets[t]:data.offsets[t + 1]] for t in range(m)]
        if data.shared:
            return np.ascontiguousarray(Z.reshape(m, -1, n_classes).transpose(1, 0, 2))
        if data.row_order is None:
            return Z
        out = np.empty_like(Z)
        out[data.row_order] = Z
        return out

    # ------------------------------------------------------------------ predictions
    def decision_function(self, X, task=None, *, unknown_tasks="error"):
        """Scores ``x^T w_t + b_t``; positive means ``classes_[1]``. With more than two
        classes, the scores ``x^T w_{t,k} + b_{t,k}`` of every class (``-inf`` for a class
        the row's task never saw): shape ``(n, n_classes)`` for long format (a list of those
        for per-task lists), ``(n, n_tasks, n_classes)`` for a shared design.

        ``unknown_tasks="population"`` scores the rows (long format) of a task the model has
        not seen with the population model, the mean of the fitted tasks' models (two
        classes); the default, ``"error"``, refuses them (learn such a task with
        :meth:`fit_new_tasks`)."""
        return self._scores_or_population(X, task, unknown_tasks)

    def predict(self, X, task=None, *, unknown_tasks="error"):
        """Predicted class labels, in the layout of the training input (``unknown_tasks`` as
        in :meth:`decision_function`)."""
        if is_distributed(X) and unknown_tasks == "error":
            return distributed_solvers().estimator_predict(self, "predict", X, task)
        scores = self.decision_function(X, task, unknown_tasks=unknown_tasks)
        if is_multiclass(self):
            return map_output(scores, lambda s: self.classes_[np.argmax(s, axis=-1)])
        return map_output(scores, lambda s: self.classes_[(s > 0).astype(int)])

    def _has_proba(self) -> bool:
        return self._loss_name() == "logistic"

    @available_if(_has_proba)
    def predict_proba(self, X, task=None, *, unknown_tasks="error"):
        """Class probabilities ``[1 - p, p]`` with ``p = sigmoid(score)`` (logistic loss only).

        Shape ``(n, 2)`` for long format (a list of those for per-task lists); for a shared
        design, shape ``(n, m)`` holding ``P(classes_[1])`` per task (scikit-learn's multilabel
        convention). With more than two classes, the softmax of the task's scores over the
        classes (0 for a class the task never saw), in the layout of
        :meth:`decision_function`: ``(n, n_classes)``, or ``(n, n_tasks, n_classes)`` for a
        shared design. ``unknown_tasks`` as in :meth:`decision_function`.
        """
        if is_distributed(X) and unknown_tasks == "error":
            return distributed_solvers().estimator_predict(self, "predict_proba", X, task)
        scores = self.decision_function(X, task, unknown_tasks=unknown_tasks)
        if is_multiclass(self):
            return softmax_scores(scores)

        def proba(s):
            p = expit(s)
            return np.stack([1.0 - p, p], axis=-1)

        if isinstance(scores, np.ndarray) and scores.ndim == 2:  # shared design
            return expit(scores)
        return map_output(scores, proba)

    def score(self, X, y, task=None, sample_weight=None):
        """Mean accuracy over all (row, task) predictions, weighted by ``sample_weight`` (as in
        :meth:`fit`; a weight per row counts for each of its tasks); with
        ``missing_targets="ignore"`` over the observed targets only."""
        if is_distributed(X):
            refuse_distributed_weights(sample_weight)
            return distributed_solvers().estimator_score(self, X, y, task)
        pred = self.predict(X, task)
        ignore = getattr(self, "missing_targets", "error") == "ignore"
        yt, pt, w = flat_scored(y, pred, sample_weight, ignore)
        return accuracy_score(yt, pt, sample_weight=w)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # more than two classes: the multinomial model of the logistic loss
        tags.classifier_tags.multi_class = self._loss_name() == "logistic"
        tags.target_tags.multi_output = True
        return tags

