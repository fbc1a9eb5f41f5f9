"""More than two classes: what the classifiers and the model families need of the multinomial
model's task-class columns.

A classifier fitted on ``K > 2`` classes solves one multinomial model per task
(:class:`~multitask.losses.multinomial.Multinomial`) whose weights are the columns of ``W``,
shape ``(n_features, m K)``, column ``t K + k`` for class ``k`` of task ``t``. Its public
``coef_`` is ``W.T`` reshaped to ``(n_tasks, n_classes, n_features)`` and ``intercept_`` is
``(n_tasks, n_classes)``, with ``-inf`` for a class a task never saw. The helpers here read
the number of classes from the data or the datafit, expand a task structure to the columns,
and turn the scores of the columns into the outputs of ``LogisticRegression``
(``decision_function`` and ``predict_proba`` of shape ``(n, K)``).
"""

from __future__ import annotations

import numpy as np
from scipy.special import softmax

from multitask.data import MultiTaskData

__all__ = ["by_task", "class_count", "class_shape", "column_classes", "is_multiclass",
           "softmax_scores", "task_count", "task_labels", "task_norms"]


def class_count(data: MultiTaskData) -> int:
    """``K`` when the targets of ``data`` are the class codes ``0 .. K-1`` of more than two
    classes (:mod:`multitask.data`'s encoding), else 2 (the labels ``-1 / +1``)."""
    y = np.asarray(data.y)
    if y.size and (float(y.min()) == 0.0 or float(y.max()) > 1.0):
        return int(y.max()) + 1
    return 2


def column_classes(datafit) -> int:
    """The number of columns per task of the datafit's weights: ``K`` for the multinomial
    loss, 1 for the others."""
    return int(getattr(datafit, "n_classes", 1))


def task_count(datafit) -> int:
    """The number of tasks of the datafit's data (its columns divided by the classes)."""
    return int(datafit.data.n_tasks) // column_classes(datafit)


def task_labels(datafit) -> np.ndarray:
    """The task labels, one per task (the view's columns repeat them per class)."""
    return np.asarray(datafit.data.tasks)[:: column_classes(datafit)]


def is_multiclass(est) -> bool:
    """Whether the fitted classifier ``est`` has more than two classes."""
    classes = getattr(est, "classes_", None)
    return classes is not None and len(classes) > 2


def softmax_scores(scores):
    """The class probabilities from scores whose last axis holds the classes (``-inf``: a class
    the task never saw, probability 0); a list of arrays maps element-wise."""
    if isinstance(scores, list):
        return [softmax_scores(s) for s in scores]
    return softmax(np.asarray(scores, dtype=np.float64), axis=-1)


def by_task(est, A: np.ndarray) -> np.ndarray:
    """An array whose first axis runs over the weight columns (``m K`` of them for more than
    two classes) with that axis split into ``(n_tasks, n_classes)``: the public orientation of
    ``coef_``; ``A`` itself for one column per task."""
    if not is_multiclass(est):
        return A
    K = len(est.classes_)
    return np.ascontiguousarray(A.reshape(-1, K, *A.shape[1:]))


def class_shape(binary: tuple, multiclass: tuple):
    """A fitted shape (:mod:`multitask.estimators.fitted_state`) that depends on the number of
    classes: ``multiclass`` when ``coef_`` is 3-D (``(n_tasks, n_classes, n_features)``),
    else ``binary``."""

    def shape(est) -> tuple:
        return multiclass if np.ndim(getattr(est, "coef_", None)) == 3 else binary

    return shape


def task_norms(W: np.ndarray, n_classes: int) -> np.ndarray:
    """The Euclidean norm of each task's columns of ``W`` (``(n_features, m K)``: the ``K``
    columns of a task together), shape ``(m,)``; the column norms for one column per task."""
    W = np.asarray(W, dtype=np.float64)
    if n_classes == 1:
        return np.linalg.norm(W, axis=0)
    W3 = W.reshape(W.shape[0], -1, n_classes)
    return np.sqrt(np.einsum("jtk,jtk->t", W3, W3))
