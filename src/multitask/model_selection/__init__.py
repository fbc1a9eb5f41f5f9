"""Model selection for multi-task models: one cross-validation engine, paths, folds, scorers.

* :class:`MultiTaskCV`, the cross-validated form of every model, on the engine
  :func:`cross_validate_grid` (grids, warm-started paths, grid widening, joblib or Dask);
* :func:`regularization_path`, the one path mechanism (warm-started refits of an estimator);
* :class:`TaskKFold`, folds drawn within each task (stratified for classifiers);
* the selection rule: K-fold, or leave-one-out within tasks with pooled scores, chosen by the
  size of the tasks (``selection="auto"``, see :data:`SMALL_TASK_ROWS`);
* scorers by name (``"nmse"``, ``"amse"``, ``"auc"``, ``"log_loss"``, the mean losses of
  :class:`LossScorer`: deviances, pinball loss, absolute error) or scikit-learn's; the
  default follows the model's loss (:func:`loss_scorer`).

Long-format data (a task id per row, kept in a column of ``X`` via ``task_column``) passes
through scikit-learn's ``cross_val_score``, ``GridSearchCV`` and ``Pipeline`` unchanged.
"""

from multitask.model_selection._cv_estimator import MultiTaskCV
from multitask.model_selection._engine import cross_validate_grid
from multitask.model_selection._folds import SELECTION_RULES, SMALL_TASK_ROWS
from multitask.model_selection._path import (
    PATH_PARAMETERS,
    default_param_grid,
    fit_path,
    log_grid,
    order_path,
    regularization_path,
    relative_grid,
)
from multitask.model_selection._scoring import (
    LossScorer,
    amse_scorer,
    classifier_scorer,
    get_scorer,
    log_loss_scorer,
    loss_scorer,
    mean_auc_scorer,
    nmse_scorer,
    pooled_metric,
)
from multitask.model_selection._split import SharedKFold, TaskKFold, to_long_format

__all__ = [
    "LossScorer",
    "PATH_PARAMETERS",
    "SELECTION_RULES",
    "SMALL_TASK_ROWS",
    "MultiTaskCV",
    "SharedKFold",
    "TaskKFold",
    "amse_scorer",
    "classifier_scorer",
    "cross_validate_grid",
    "default_param_grid",
    "fit_path",
    "get_scorer",
    "log_grid",
    "log_loss_scorer",
    "loss_scorer",
    "mean_auc_scorer",
    "nmse_scorer",
    "order_path",
    "pooled_metric",
    "regularization_path",
    "relative_grid",
    "to_long_format",
]
