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

__all__ = ["class_count", "column_classes", "is_multiclass", "softmax_scores",
           "task_count", "task_labels"]


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
    return len(getattr(est, "classes_", ())) > 2


def softmax_scores(scores):
    """The class probabilities from scores whose last axis holds the classes (``-inf``: a class
    the task never saw, probability 0); a list of arrays maps element-wise."""
    if isinstance(scores, list):
        return [softmax_scores(s) for s in scores]
    return softmax(np.asarray(scores, dtype=np.float64), axis=-1)
