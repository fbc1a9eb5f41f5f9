"""The rows of new tasks, checked against a fitted model and converted.

``fit_new_tasks`` (:mod:`multitask.estimators.new_tasks`) takes the new tasks' rows in any of
the three input formats; they are validated like ``fit``'s, against what the model was
fitted on (a :class:`FittedInputs` record: its number of features, task column, classes and
missing-target rule), and labelled: by the ids given (long format), or, for per-task lists
and shared designs, by the integers after the model's largest integer id.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from multitask.data.container import MultiTaskData
from multitask.data.formats import as_multitask_data, is_task_list
from multitask.data.task_ids import _id_family

__all__ = ["FittedInputs", "as_new_task_data", "new_task_ids"]


@dataclass(frozen=True)
class FittedInputs:
    """What the rows of new tasks are checked against: the inputs a model was fitted on.

    Attributes
    ----------
    n_features : int
        The number of features of fit.
    task_column : int or None
        The column of ``X`` holding the task ids (long format), if the model has one.
    classes : ndarray of shape (2,) or None
        A classifier's classes (new tasks are learned with the classes of fit); ``None`` for
        a regressor.
    missing_targets : str or None
        The model's rule for missing targets (``None``: the data layer's default).
    model : str
        The model's name, for the messages.
    feature_names : bool
        Whether the model was fitted with feature names.
    check_X : callable
        ``check_X(X)``: the model's own check of a matrix against the features of fit
        (scikit-learn's, feature names included), returning the checked matrix.
    """

    n_features: int
    task_column: int | None
    classes: np.ndarray | None
    missing_targets: str | None
    model: str
    feature_names: bool
    check_X: Callable[[Any], Any]


def _raw_labels(y) -> np.ndarray:
    """The distinct observed labels of ``y`` (any layout), for the class check."""
    if isinstance(y, (list, tuple)) and len(y) and np.ndim(y[0]) >= 1:
        values = np.concatenate([np.asarray(v, dtype=object).ravel() for v in y])
    else:
        values = np.asarray(y, dtype=object).ravel()
    keep = [v for v in values.tolist()
            if v is not None and not (isinstance(v, float) and np.isnan(v))]
    return np.asarray(keep, dtype=object)


def _check_classes(classes: np.ndarray, y) -> None:
    """Raise when a label of ``y`` is not one of ``classes`` (those of fit)."""
    known = set(classes.tolist())
    unknown = [v for v in dict.fromkeys(_raw_labels(y).tolist()) if v not in known]
    if unknown:
        raise ValueError(f"The new tasks' labels {unknown[:5]} are not among the model's "
                         f"classes {classes.tolist()}: a new task is learned with the classes "
                         "of fit.")


def _checked_matrix(fitted: FittedInputs, X):
    """``X`` checked against the fitted features: a plain 2-D float64 array of a model fitted
    without feature names needs only its number of columns checked (the data layer checks
    its values); anything else goes through the model's checks (:attr:`FittedInputs.check_X`).
    """
    if (type(X) is np.ndarray and X.ndim == 2 and X.dtype == np.float64 and X.shape[0] >= 1
            and not fitted.feature_names):
        if X.shape[1] != fitted.n_features:
            raise ValueError(f"X has {X.shape[1]} features, but {fitted.model} is "
                             f"expecting {fitted.n_features} features as input.")
        return X
    return fitted.check_X(X)


def as_new_task_data(fitted: FittedInputs, X, y, task, sample_weight
                     ) -> tuple[MultiTaskData, bool]:
    """The new tasks' rows as :class:`MultiTaskData` (validated like ``fit``'s, against the
    fitted features and classes), and whether their labels are positional (per-task lists,
    shared designs and long-format rows without ids)."""
    classes = None
    if fitted.classes is not None:
        _check_classes(fitted.classes, y)
        classes = fitted.classes
    options: dict[str, Any] = {"classification": fitted.classes is not None,
                               "classes": classes, "sample_weight": sample_weight}
    if fitted.missing_targets is not None:
        options["missing_targets"] = fitted.missing_targets
    if is_task_list(X):
        data, _ = as_multitask_data(X, y, task, n_features=fitted.n_features, **options)
        return data, True
    X = _checked_matrix(fitted, X)
    data, _ = as_multitask_data(X, y, task, task_column=fitted.task_column, **options)
    positional = task is None and fitted.task_column is None
    return data, positional


def new_task_ids(fitted_tasks: np.ndarray, data: MultiTaskData, positional: bool
                 ) -> np.ndarray:
    """The ids of the new tasks of ``data`` next to the model's ``fitted_tasks``: the ids
    given (long format) or, for positional labels, the integers after the model's largest
    integer id. Ids of another family than the model's, or of a fitted task, are refused."""
    fitted = np.asarray(fitted_tasks)
    if positional:
        if fitted.dtype.kind not in "iu":
            raise ValueError(
                f"The model's tasks have {_id_family(fitted.dtype.kind)} ids "
                f"({fitted.tolist()[:3]}...): give the new tasks' ids with task= (long "
                "format) rather than as per-task lists or target columns.")
        start = int(fitted.max()) + 1 if fitted.size else 0
        return np.arange(start, start + data.n_tasks, dtype=fitted.dtype)
    labels = np.asarray(data.tasks)
    if _id_family(labels.dtype.kind) != _id_family(fitted.dtype.kind):
        raise ValueError(
            f"The new task ids are {_id_family(labels.dtype.kind)} ({labels.tolist()[:3]}) but "
            f"the model's are {_id_family(fitted.dtype.kind)} ({fitted.tolist()[:3]}): give "
            "them as in training.")
    known = set(fitted.tolist())
    taken = [v for v in labels.tolist() if v in known]
    if taken:
        raise ValueError(
            f"Task id {taken[0]!r} is already a task of the model: fit_new_tasks learns tasks "
            "the model has not seen and never changes a fitted one (refit to update it).")
    return labels
