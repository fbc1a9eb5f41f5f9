"""The generic multi-task estimator every model is a preset of.

A model chooses a loss, a penalty (or constraint) and a solver; this base converts the input
(any of the three formats of :mod:`multitask.data`), validates the parameters, calls the
solver and stores the scikit-learn attributes:

* ``coef_`` of shape ``(n_tasks, n_features)`` (row ``t`` is task ``tasks_[t]``),
* ``intercept_`` of shape ``(n_tasks,)``,
* ``tasks_`` (task labels), ``n_features_in_``, ``n_iter_``, ``objective_`` (history),
* ``classes_`` for classifiers (the two labels; ``classes_[1]`` is the positive class).

Predictions follow the layout of the training input: a shared design (2-D ``Y``) predicts an
``(n, m)`` array; long format (``task=`` or ``task_column``) predicts one value per row; a list
of per-task designs predicts a list of per-task arrays.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

from multitask.data import MultiTaskData, as_multitask_data, check_scalar_param
from multitask.losses import Datafit, get_datafit
from multitask.penalties.base import Penalty
from multitask.solvers.fista import fista
from multitask.solvers.result import SolverResult

__all__ = ["MultiTaskEstimator", "MultiTaskRegressorBase", "MultiTaskClassifierBase"]


class MultiTaskEstimator(BaseEstimator):
    """Base of every multi-task model (not used directly).

    Subclasses define ``_is_classifier``, ``_default_loss`` and implement
    :meth:`_make_penalty` (and, when a solver other than FISTA is used, :meth:`_solve`).
    Hyper-parameters shared by all: ``fit_intercept``, ``max_iter``, ``tol``, ``task_column``,
    ``warm_start``.
    """

    _is_classifier = False
    _default_loss = "squared"

    # ------------------------------------------------------------------ hooks
    def _loss_name(self) -> str:
        return getattr(self, "loss", self._default_loss)

    def _check_params(self) -> None:
        """Validate hyper-parameters (raise ValueError naming the parameter)."""
        for name in ("alpha", "radius", "tau", "gamma"):
            if name in self.get_params(deep=False):
                check_scalar_param(getattr(self, name), name)
        if "max_iter" in self.get_params(deep=False):
            if int(self.max_iter) < 1:
                raise ValueError(f"max_iter must be >= 1, got {self.max_iter!r}.")
        if "tol" in self.get_params(deep=False):
            check_scalar_param(self.tol, "tol", allow_zero=False)

    def _make_penalty(self, datafit: Datafit) -> Penalty:
        raise NotImplementedError

    def _make_datafit(self, data: MultiTaskData) -> Datafit:
        return get_datafit(self._loss_name(), data, self.fit_intercept)

    def _solve(self, datafit: Datafit, data: MultiTaskData) -> SolverResult:
        coef_init = intercept_init = None
        if getattr(self, "warm_start", False) and hasattr(self, "coef_"):
            if self.coef_.shape == (data.n_tasks, data.n_features):
                coef_init = self.coef_.T
                if datafit.has_intercept_variable:
                    intercept_init = self.intercept_
        return fista(
            datafit,
            self._make_penalty(datafit),
            coef_init=coef_init,
            intercept_init=intercept_init,
            max_iter=self.max_iter,
            tol=self.tol,
        )

    # ------------------------------------------------------------------ input handling
    def _validate_X(self, X, reset: bool):
        """Run scikit-learn's checks on a single matrix (sets n_features_in_ and names).

        NaN and infinity are left to :func:`~multitask.data.as_multitask_data`, whose message
        names the row and its task.
        """
        return validate_data(
            self,
            X,
            reset=reset,
            accept_sparse="csr",
            dtype=np.float64,
            ensure_min_samples=1,
            ensure_all_finite=False,
        )

    def _to_data(self, X, y, task):
        if self._is_classifier and y is not None and not isinstance(y, (list, tuple)):
            _check_classification_targets(y)
        if is_task_list(X):
            data, classes = as_multitask_data(X, y, task, classification=self._is_classifier)
            self.n_features_in_ = data.n_features
            fmt = "list"
        else:
            X = self._validate_X(X, reset=True)
            data, classes = as_multitask_data(
                X, y, task, task_column=self.task_column, classification=self._is_classifier
            )
            fmt = "shared" if data.shared else "long"
        return data, classes, fmt

    # ------------------------------------------------------------------ fit
    def fit(self, X, y, task=None):
        """Fit the model.

        Parameters
        ----------
        X : array-like (n, d), sparse matrix, or list of per-task arrays
            Shared design with 2-D ``y``; long format with ``task`` (or ``task_column``);
            or a list of per-task designs with a list of per-task targets.
        y : array-like (n,), (n, m), or list of arrays
            Targets (class labels for classifiers: two classes, both present in each task).
        task : array-like (n,), optional
            Task id of each row (long format).

        Returns
        -------
        self
        """
        self._check_params()
        data, classes, fmt = self._to_data(X, y, task)
        self.input_format_ = fmt
        self.tasks_ = data.tasks
        if self._is_classifier:
            self.classes_ = classes
        datafit = self._make_datafit(data)
        result = self._solve(datafit, data)
        self._store_result(result, data)
        return self

    def _store_result(self, result: SolverResult, data: MultiTaskData) -> None:
        self.coef_ = np.ascontiguousarray(result.W.T)
        self.intercept_ = np.asarray(result.intercept, dtype=np.float64).copy()
        self.n_iter_ = int(result.n_iter)
        self.objective_ = np.asarray(result.objective)
        self.converged_ = bool(result.converged)
        self.solver_result_ = result

    # ------------------------------------------------------------------ predict
    def _scores(self, X, task=None):
        check_is_fitted(self, "coef_")
        fmt = self.input_format_
        if is_task_list(X):
            data, _ = as_multitask_data(
                X, None, known_tasks=self.tasks_, n_features=self.n_features_in_
            )
        else:
            X = self._validate_X(X, reset=False)
            if (fmt == "long" and task is None and self.task_column is None
                    and len(self.tasks_) > 1):
                raise ValueError(
                    "This model was fitted on long-format data with several tasks: pass the "
                    "task id of each row as task=, or use task_column."
                )
            data, _ = as_multitask_data(
                X,
                None,
                task,
                task_column=self.task_column,
                known_tasks=self.tasks_,
            )
        z = data.matvec(self.coef_.T) + data.expand(self.intercept_)
        return self._user_layout(X, data, z)

    @staticmethod
    def _user_layout(X, data: MultiTaskData, z: np.ndarray):
        """Stacked scores ``z`` in the layout of the input ``X``.

        A list of per-task designs gives a list of per-task arrays; a shared design an
        ``(n, m)`` array; long format one value per row, in the user's row order.
        """
        if is_task_list(X):
            return [z[data.offsets[t] : data.offsets[t + 1]] for t in range(data.n_tasks)]
        if data.shared:
            return z.reshape(data.n_tasks, -1).T.copy()
        order = data.row_order
        if order is not None:
            out = np.empty_like(z)
            out[order] = z
            z = out
        return z

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.multi_output = True
        return tags


def _map_output(scores, fn):
    if isinstance(scores, list):
        return [fn(s) for s in scores]
    return fn(scores)


class MultiTaskRegressorBase(RegressorMixin, MultiTaskEstimator):
    """Base of multi-task regressors (squared loss)."""

    _is_classifier = False
    _default_loss = "squared"

    def predict(self, X, task=None):
        """Predicted targets, in the layout of the training input (see module doc)."""
        return self._scores(X, task)

    def score(self, X, y, task=None, sample_weight=None):
        """Coefficient of determination R^2 of the pooled predictions.

        For shared-design data, R^2 is averaged uniformly over tasks (scikit-learn's
        multi-output convention).
        """
        pred = self.predict(X, task)
        if isinstance(pred, list):
            return r2_score(np.concatenate(y), np.concatenate(pred))
        return r2_score(y, pred, sample_weight=sample_weight)


class MultiTaskClassifierBase(ClassifierMixin, MultiTaskEstimator):
    """Base of multi-task binary classifiers (one binary problem per task)."""

    _is_classifier = True
    _default_loss = "logistic"

    def decision_function(self, X, task=None):
        """Scores ``x^T w_t + b_t``; positive means ``classes_[1]``."""
        return self._scores(X, task)

    def predict(self, X, task=None):
        """Predicted class labels, in the layout of the training input."""
        scores = self.decision_function(X, task)
        return _map_output(scores, lambda s: self.classes_[(s > 0).astype(int)])

    def _has_proba(self) -> bool:
        return self._loss_name() == "logistic"

    @available_if(_has_proba)
    def predict_proba(self, X, task=None):
        """Class probabilities ``[1 - p, p]`` with ``p = sigmoid(score)`` (logistic loss only).

        Shape ``(n, 2)`` for long format (a list of those for per-task lists); for a shared
        design, shape ``(n, m)`` holding ``P(classes_[1])`` per task (scikit-learn's multilabel
        convention).
        """
        scores = self.decision_function(X, task)

        def proba(s):
            p = expit(s)
            return np.stack([1.0 - p, p], axis=-1)

        if isinstance(scores, np.ndarray) and scores.ndim == 2:  # shared design
            return expit(scores)
        return _map_output(scores, proba)

    def score(self, X, y, task=None, sample_weight=None):
        """Mean accuracy over all (row, task) predictions."""
        pred = self.predict(X, task)
        if isinstance(pred, list):
            return accuracy_score(np.concatenate(y), np.concatenate(pred))
        y = np.asarray(y)
        return accuracy_score(y.ravel(), np.asarray(pred).ravel(), sample_weight=sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.target_tags.multi_output = True
        return tags


def is_task_list(X) -> bool:
    """Whether ``X`` is a list of per-task designs (format b): a list of 2-D blocks."""
    return (
        isinstance(X, (list, tuple))
        and len(X) > 0
        and all(sp.issparse(x) or np.ndim(x) == 2 for x in X)
    )


def _check_classification_targets(y) -> None:
    """Raise the scikit-learn style error for continuous or multi-class targets."""
    from sklearn.utils.multiclass import type_of_target

    y = np.asarray(y)
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        return  # left to the data layer, which names the row and its task
    kind = type_of_target(y)
    if kind in ("continuous", "continuous-multioutput"):
        raise ValueError(
            f"Unknown label type: {kind}. Classifiers need class labels, not continuous values."
        )
    if kind == "multiclass":
        raise ValueError(
            "Only binary classification is supported per task; got a multiclass target "
            f"with {len(np.unique(y))} classes (give one task per class with a shared X)."
        )


def is_sparse_input(X) -> bool:
    """Whether ``X`` (or any per-task block) is a scipy sparse matrix."""
    if isinstance(X, (list, tuple)):
        return any(sp.issparse(x) for x in X)
    return sp.issparse(X)
