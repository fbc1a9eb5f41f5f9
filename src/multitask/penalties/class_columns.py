"""The task-class columns of a multinomial model seen from the task side.

A multinomial model of ``K`` classes per task (:mod:`multitask.losses.multinomial`) has the
weights ``W`` of shape ``(n_features, m K)``, column ``t K + k`` for class ``k`` of task ``t``.
A task-side structure (a task graph, clusters of tasks, a task covariance, a time order)
extends to those columns as ``M kron I_K``: class ``k`` of task ``t`` is related to class ``k``
of task ``t'`` as the tasks are, and the classes of one task are not related to each other.
Since ``sum_k tr(W_k A W_k^T) = tr(W~ A W~^T)`` for the class-``k`` columns ``W_k`` stacked
in ``W~`` (shape ``(n_features K, m)``, row ``j K + k`` for feature ``j`` and class ``k``), a
task-side penalty of ``W~`` is that extension: :func:`stack_classes` and
:func:`unstack_classes` map between the two arrays (a permutation of the entries: norms, proxes
and conjugates carry over unchanged).
"""

from __future__ import annotations

import numpy as np

__all__ = ["check_classes", "stack_classes", "unstack_classes"]


def check_classes(n_classes) -> int:
    """The number of weight columns per task: an integer >= 1 (a ``ValueError`` otherwise)."""
    if isinstance(n_classes, bool) or not isinstance(n_classes, (int, np.integer)) \
            or n_classes < 1:
        raise ValueError(f"n_classes must be an integer >= 1, got {n_classes!r}.")
    return int(n_classes)


def stack_classes(W: np.ndarray, n_classes: int) -> np.ndarray:
    """``W~`` of shape ``(d K, m)`` from ``W`` of shape ``(d, m K)`` (module docstring); ``W``
    itself for ``K = 1``."""
    if n_classes == 1:
        return W
    d = W.shape[0]
    return np.ascontiguousarray(
        np.asarray(W).reshape(d, -1, n_classes).transpose(0, 2, 1)).reshape(d * n_classes, -1)


def unstack_classes(S: np.ndarray, n_classes: int) -> np.ndarray:
    """The inverse of :func:`stack_classes`: ``W`` of shape ``(d, m K)`` from ``(d K, m)``."""
    if n_classes == 1:
        return S
    d = S.shape[0] // n_classes
    return np.ascontiguousarray(
        np.asarray(S).reshape(d, n_classes, -1).transpose(0, 2, 1)).reshape(d, -1)
