"""The rows of new tasks, checked against a fitted model and converted.

``fit_new_tasks`` (:mod:`multitask.estimators.new_tasks`) takes the new tasks' rows in any of
the three input formats; they are validated like ``fit``'s, against what the model was
fitted on (a :class:`FittedInputs` record: its number of features, task column, classes and
missing-target rule), and labelled: by the ids given (long format), or, for per-task lists
and shared designs, by the integers after the model's largest integer id. The model's ids and
the new ones are then held by one array (:func:`append_task_ids`) of a type that holds every
id exactly, or refused: no two ids may become one, and no fitted id may change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from multitask.data.container import MultiTaskData
from multitask.data.formats import as_multitask_data, is_task_list
from multitask.data.task_ids import _id_family

__all__ = ["FittedInputs", "append_task_ids", "as_new_task_data", "new_task_ids"]


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
        stop = start + data.n_tasks  # Python integers: no overflow of the fitted dtype
        if stop - 1 >= 2**64:
            raise ValueError(
                f"The new tasks would be numbered {start} to {stop - 1}, after the model's "
                f"largest id {start - 1}, beyond the largest integer id (2**64 - 1): give the "
                "new tasks' ids with task= (long format).")
        labels = np.arange(start, stop, dtype=np.int64 if stop - 1 < 2**63 else np.uint64)
        append_task_ids(fitted, labels)  # refused here, before any solve, when not exact
        return labels
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
    append_task_ids(fitted, labels)  # refused here, before any solve, when not exact
    return labels


#: The dtypes tried, after the model's own and numpy's common one, for ids that must be held
#: exactly by one array (the fitted ids and the new ones).
_EXACT_DTYPES = (np.dtype(np.int64), np.dtype(np.uint64), np.dtype(np.float64))


def _holds_exactly(values: np.ndarray, dtype: np.dtype) -> bool:
    """Whether every id of ``values`` keeps its value in ``dtype`` (compared as Python numbers:
    ``2**53 + 1`` and ``float(2**53)`` differ; a wrapped negative integer differs)."""
    if values.dtype == dtype:
        return True
    with np.errstate(invalid="ignore", over="ignore"):
        cast = values.astype(dtype)
    return bool(cast.tolist() == values.tolist())


def append_task_ids(fitted_tasks: np.ndarray, new_ids: np.ndarray) -> np.ndarray:
    """The model's ids followed by the new tasks' ids, in one array that holds each exactly.

    ``np.concatenate`` would promote, say, ``int64`` ids and ``uint64`` ids of ``2**63`` or
    more to ``float64``, and ``int64`` ids of ``2**53`` or more beside float ids too: distinct
    ids would become one and fitted ids would change. Here the dtype of the result is the
    first of the model's dtype, numpy's common dtype, ``int64``, ``uint64`` and ``float64``
    that holds every id of both arrays with its value (strings: the wider string dtype), so
    that ``result[:m]`` equals the fitted ids and ``result[m:]`` the new ones as numbers.

    Parameters
    ----------
    fitted_tasks : ndarray of shape (m,)
        The model's ids (``tasks_``).
    new_ids : ndarray of shape (m_new,)
        The new tasks' ids, of the family of the model's (numeric, boolean or string), none of
        them an id of the model.

    Returns
    -------
    ndarray of shape (m + m_new,)

    Raises
    ------
    ValueError
        When no such dtype exists (for example negative ``int64`` ids beside ``uint64`` ids of
        ``2**63`` or more, or ``int64`` ids beyond ``2**53`` beside fractional float ids),
        naming the ids that would change.
    """
    fitted, new = np.asarray(fitted_tasks), np.asarray(new_ids)
    if fitted.dtype.kind in "US" or new.dtype.kind in "US" or fitted.dtype == new.dtype:
        return np.concatenate([fitted, new])
    common = np.result_type(fitted.dtype, new.dtype)
    for dtype in dict.fromkeys((fitted.dtype, common, *_EXACT_DTYPES)):
        if dtype.kind in "iuf" and _holds_exactly(fitted, dtype) and _holds_exactly(new, dtype):
            return np.concatenate([fitted.astype(dtype, copy=False),
                                   new.astype(dtype, copy=False)])
    both = np.concatenate([fitted.astype(object), new.astype(object)])
    lost = "; ".join(f"{dtype} cannot hold {_changed(both, dtype)[:3]}" for dtype in _EXACT_DTYPES)
    raise ValueError(
        f"The new task ids ({new.dtype}, {new.tolist()[:3]}) and the model's task ids "
        f"({fitted.dtype}, {fitted.tolist()[:3]}) have no numeric type that holds them all "
        f"exactly ({lost}): two ids could become one. Give the new tasks ids that "
        f"{fitted.dtype} holds, like the model's.")


def _changed(values: np.ndarray, dtype: np.dtype) -> list:
    """The values of the object array ``values`` that ``dtype`` does not hold exactly."""
    out = []
    for v in values.tolist():
        try:
            with np.errstate(invalid="ignore", over="ignore"):
                kept = np.array([v]).astype(dtype)[0].item()
        except (OverflowError, ValueError):
            kept = None
        if kept != v:
            out.append(v)
    return out
