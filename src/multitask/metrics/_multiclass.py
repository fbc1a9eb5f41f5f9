"""Metrics of classifiers with any number of classes: the log-loss of predicted
probabilities and the accuracy of predicted labels, per task, averaged or pooled.

Each figure is scikit-learn's (:func:`~sklearn.metrics.log_loss`,
:func:`~sklearn.metrics.accuracy_score`) applied per task, averaged over the tasks
(``average="macro"``), or applied once to every scored (row, task) pair pooled
(``average="pooled"``); ``average=None`` gives the per-task array. Row weights and missing
labels as in :func:`multitask.metrics.nmse`: pairs of weight zero are left out (how the
scorers of :mod:`multitask.model_selection` skip missing labels), a task without any scored
pair is left out of the average (NaN in the per-task array).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from sklearn import metrics as skm

from multitask.metrics._deviance import check_average
from multitask.metrics._layouts import Layout
from multitask.metrics._weights import _task_weights, _weighted_pairs, rescaled

__all__ = ["accuracy", "log_loss"]


def _proba_parts(y_true: Layout, y_proba, task) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per task ``(labels, probabilities)``: the probabilities ``(n_t, K)``, or ``(n_t,)`` of
    the second class of two. The layouts of the models' ``predict_proba``: per-task lists;
    1-D labels with ``(n, K)`` (long format with ``task``, or one task); ``(n, m)`` labels
    with ``(n, m, K)``, or ``(n, m)`` of the second class of two (a shared design)."""
    if isinstance(y_true, (list, tuple)):
        if not isinstance(y_proba, (list, tuple)) or len(y_proba) != len(y_true):
            raise ValueError("y_true is a list of tasks: y_proba must be a list of the same "
                             "length.")
        parts = [(np.asarray(a).ravel(), np.asarray(p, dtype=np.float64))
                 for a, p in zip(y_true, y_proba, strict=True)]
    else:
        yt = np.asarray(y_true)
        P = np.asarray(y_proba, dtype=np.float64)
        if yt.ndim == 2:
            if P.shape[:2] != yt.shape or P.ndim not in (2, 3):
                raise ValueError(f"y_true has shape {yt.shape}: y_proba must have shape "
                                 f"{yt.shape} (two classes) or {yt.shape} + (n_classes,), got "
                                 f"{P.shape}.")
            parts = [(yt[:, t], P[:, t]) for t in range(yt.shape[1])]
        elif yt.ndim == 1:
            if P.ndim not in (1, 2) or P.shape[0] != yt.shape[0]:
                raise ValueError(f"y_true has {yt.shape[0]} labels: y_proba must have shape "
                                 f"({yt.shape[0]},) or ({yt.shape[0]}, n_classes), got "
                                 f"{P.shape}.")
            if task is None:
                parts = [(yt, P)]
            else:
                task = np.asarray(task)
                if len(task) != len(yt):
                    raise ValueError(f"task has {len(task)} entries but y_true has {len(yt)}.")
                parts = [(yt[task == t], P[task == t]) for t in np.unique(task)]
        else:
            raise ValueError(f"y_true must be 1-D or 2-D, got shape {yt.shape}.")
    for t, (a, p) in enumerate(parts):
        if p.ndim not in (1, 2) or p.shape[0] != len(a):
            raise ValueError(f"Task {t}: {len(a)} labels but probabilities of shape {p.shape}.")
        if len(a) == 0:
            raise ValueError(f"Task {t} has no rows.")
    return parts


def log_loss(y_true: Layout, y_proba, task: ArrayLike | None = None, *, labels=None,
             average: str | None = "macro",
             sample_weight: Layout | None = None) -> float | np.ndarray:
    """Mean log-loss of predicted class probabilities, any number of classes.

    ``LL_t = - sum_i w_i log p_i(y_i) / sum_i w_i`` over the scored pairs of task ``t``, with
    ``p_i(k)`` the probability of class ``k`` given to row ``i`` (clipped to ``[eps, 1 -
    eps]``, ``eps`` the float spacing of 1: a class a task never saw has probability 0 in the
    models): scikit-learn's :func:`~sklearn.metrics.log_loss` with ``labels``. A task may
    lack some classes.

    Parameters
    ----------
    y_true : array (n, m), array (n,) with ``task``, or list of per-task arrays
        Labels.
    y_proba : the models' ``predict_proba`` layouts
        A list of per-task ``(n_t, K)`` arrays; ``(n, K)`` for 1-D ``y_true``; ``(n, m, K)``
        for 2-D ``y_true``. For two classes also the probability of ``labels[1]`` alone:
        ``(n_t,)``, ``(n,)`` or ``(n, m)`` (a two-class model's ``predict_proba`` on a
        shared design).
    task : array (n,), optional
    labels : array-like of shape (K,), optional
        The classes of the probability columns, in order (a model's ``classes_``); default
        the sorted labels of ``y_true`` (every class must then appear somewhere).
    average : {"macro", "pooled", "micro"} or None, default="macro"
        ``"macro"``: the mean over the tasks with a scored pair of ``LL_t``; ``"pooled"`` (or
        ``"micro"``): the log-loss of all scored pairs together; ``None``: the array of the
        ``LL_t`` (NaN for a task without a scored pair).
    sample_weight : the layout of ``y_true``, optional
        Non-negative weights of the (row, task) pairs, as in :func:`nmse` (pairs of weight
        zero are left out: missing labels).

    Returns
    -------
    float or ndarray of shape (m,)
        The log-loss; the ``LL_t`` of the tasks for ``average=None``.

    Raises
    ------
    ValueError
        Probabilities whose columns do not match the classes, outside ``[0, 1]`` or not
        finite, a label outside ``labels`` (naming the task).
    """
    pooled = check_average(average)
    parts = _proba_parts(y_true, y_proba, task)
    if sample_weight is None:
        weights: list = [None] * len(parts)
    else:
        weights = _task_weights(sample_weight, y_true, task, len(parts))
    kept = []
    for t, ((a, p), w) in enumerate(zip(parts, weights, strict=True)):
        if w is not None:
            if len(w) != len(a):
                raise ValueError(f"sample_weight has {len(w)} weights for task {t} of "
                                 f"{len(a)} rows.")
            keep = w > 0
            a, p, w = a[keep], p[keep], w[keep]
        kept.append((a, p, w))
    if not any(len(a) for a, _, _ in kept):
        raise ValueError("sample_weight is zero everywhere: there is nothing to score.")
    if sample_weight is not None:
        scaled = rescaled([w for _, _, w in kept], per_task=not pooled)
        kept = [(a, p, w) for (a, p, _), w in zip(kept, scaled, strict=True)]
    classes = (np.unique(np.concatenate([a for a, _, _ in kept])) if labels is None
               else np.asarray(labels))
    n_classes = len(classes)
    if n_classes < 2:
        raise ValueError("The log-loss needs at least two classes: pass labels= (the model's "
                         "classes_).")
    known = set(classes.tolist())
    for t, (a, p, _) in enumerate(kept):
        width = 2 if p.ndim == 1 else p.shape[1]
        if width != n_classes:
            raise ValueError(f"Task {t}: y_proba has {width} columns but there are "
                             f"{n_classes} classes {classes.tolist()}: pass labels= (the "
                             "model's classes_).")
        if p.size and (not np.all(np.isfinite(p)) or np.any(p < 0) or np.any(p > 1)):
            raise ValueError(f"Task {t}: y_proba holds values outside [0, 1] or NaN.")
        unknown = [v for v in a.tolist() if v not in known]
        if unknown:
            raise ValueError(f"Task {t}: the label {unknown[0]!r} is not one of the classes "
                             f"{classes.tolist()}.")
    kept = [(a, np.column_stack([1.0 - p, p]) if p.ndim == 1 else p, w) for a, p, w in kept]

    def figure(a, p, w) -> float:
        return float(skm.log_loss(a, p, labels=classes, sample_weight=w))

    if pooled:
        a = np.concatenate([a for a, _, _ in kept])
        p = np.concatenate([p for _, p, _ in kept])
        w = None if sample_weight is None else np.concatenate([w for _, _, w in kept])
        return figure(a, p, w)
    vals = np.array([figure(a, p, w) if len(a) else np.nan for a, p, w in kept])
    return vals if average is None else float(np.nanmean(vals))


def accuracy(y_true: Layout, y_pred: Layout, task: ArrayLike | None = None, *,
             average: str | None = "macro",
             sample_weight: Layout | None = None) -> float | np.ndarray:
    """Accuracy of predicted labels, any number of classes, per task, averaged or pooled.

    ``A_t = sum_i w_i [y_i = f_i] / sum_i w_i`` over the scored pairs of task ``t``
    (scikit-learn's :func:`~sklearn.metrics.accuracy_score`); ``"macro"``: the mean over the
    tasks with a scored pair; ``"pooled"`` (or ``"micro"``): the fraction of all scored pairs
    that are right (``1 -`` :func:`error_rate`); ``None``: the array of the ``A_t`` (NaN for
    a task without a scored pair).

    Parameters
    ----------
    y_true, y_pred : array (n, m), array (n,) with ``task``, or lists of per-task arrays
        Labels and predicted labels.
    task : array (n,), optional
    average : {"macro", "pooled", "micro"} or None, default="macro"
    sample_weight : the layout of ``y_true``, optional
        As in :func:`log_loss`.

    Returns
    -------
    float or ndarray of shape (m,)
        The accuracy; the ``A_t`` of the tasks for ``average=None``.
    """
    pooled = check_average(average)
    trip = _weighted_pairs(y_true, y_pred, task, sample_weight, drop_empty=False,
                           scale="pooled" if pooled else "task")
    if pooled:
        a = np.concatenate([a for a, _, _ in trip])
        b = np.concatenate([b for _, b, _ in trip])
        w = None if sample_weight is None else np.concatenate([w for _, _, w in trip])
        return float(skm.accuracy_score(a, b, sample_weight=w))
    vals = np.array([float(skm.accuracy_score(a, b, sample_weight=w)) if len(a) else np.nan
                     for a, b, w in trip])
    return vals if average is None else float(np.nanmean(vals))
