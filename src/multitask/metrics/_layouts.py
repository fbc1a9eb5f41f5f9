"""The three layouts of targets and predictions, split into per-task pairs; binary pairs and
thresholds; the argument checks shared by the metrics."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

_AVERAGES = ("macro", "micro", "samples", None)

#: Targets, labels, predictions or scores in one of the three layouts.
Layout = ArrayLike | Sequence[ArrayLike]

# ----------------------------------------------------------------------------- layouts
def per_task(
    y_true: Layout, y_pred: Layout, task: ArrayLike | None = None
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Split targets and predictions into per-task pairs ``[(y_t, f_t), ...]``.

    Parameters
    ----------
    y_true, y_pred : array (n, m), array (n,) with ``task``, or lists of per-task arrays
    task : array (n,), optional
        Task id of each row for 1-D inputs; the pairs follow the sorted unique ids.

    Returns
    -------
    pairs : list of (ndarray, ndarray)
        One pair per task: column ``t`` of 2-D inputs, the rows of task ``t`` of long-format
        inputs, or the ``t``-th arrays of lists.
    """
    if isinstance(y_true, (list, tuple)):
        if not isinstance(y_pred, (list, tuple)) or len(y_pred) != len(y_true):
            raise ValueError("y_true is a list of tasks: y_pred must be a list of the same length.")
        pairs = [(np.asarray(a).ravel(), np.asarray(b).ravel()) for a, b in zip(y_true, y_pred,
                                                                             strict=True)]
    else:
        yt = np.asarray(y_true)
        yp = np.asarray(y_pred)
        if yt.shape != yp.shape:
            raise ValueError(f"y_true has shape {yt.shape} but y_pred has shape {yp.shape}.")
        if yt.ndim == 2:
            pairs = [(yt[:, t], yp[:, t]) for t in range(yt.shape[1])]
        elif task is None:
            pairs = [(yt, yp)]
        else:
            task = np.asarray(task)
            if len(task) != len(yt):
                raise ValueError(f"task has {len(task)} entries but y_true has {len(yt)}.")
            pairs = _split_by_task(yt, yp, task)
    for t, (a, b) in enumerate(pairs):
        if len(a) != len(b):
            raise ValueError(f"Task {t}: y_true has {len(a)} entries but y_pred has {len(b)}.")
        if len(a) == 0:
            raise ValueError(f"Task {t} has no rows.")
    return pairs


def _split_by_task(yt: np.ndarray, yp: np.ndarray, task: np.ndarray
                   ) -> list[tuple[np.ndarray, np.ndarray]]:
    """``[(yt[task == t], yp[task == t]) for t in np.unique(task)]`` from one stable sort of
    the rows by task (the rows of each task in their order, as the masks give them) instead
    of one pass over every row per task. Ids that do not equal themselves (NaN) take the
    masks, which never select them."""
    if not len(task) or task.ndim != 1 or (task.dtype.kind in "fc"
                                            and bool(np.isnan(task).any())):
        return [(yt[task == t], yp[task == t]) for t in np.unique(task)]
    order = np.argsort(task, kind="stable")
    ids = task[order]
    if ids.dtype.kind != "O":
        starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    else:
        starts = np.unique(ids, return_index=True)[1]
    yt_sorted, yp_sorted = yt[order], yp[order]
    return list(zip(np.split(yt_sorted, starts[1:]), np.split(yp_sorted, starts[1:]),
                    strict=True))


def _matrix_pair(y_true: Layout, y_pred: Layout, what: str) -> tuple[np.ndarray, np.ndarray]:
    """The 2-D ``(n, m)`` arrays needed by example-based metrics, or a clear error."""
    if isinstance(y_true, (list, tuple)) or isinstance(y_pred, (list, tuple)):
        raise ValueError(f"{what} needs 2-D arrays (n, m), one row per example and one column "
                         "per task; lists of per-task arrays have no common rows.")
    yt, yp = np.asarray(y_true), np.asarray(y_pred)
    if yt.ndim != 2:
        raise ValueError(f"{what} needs 2-D arrays (n, m), one row per example and one column "
                         f"per task; got y_true of shape {yt.shape}.")
    if yt.shape != yp.shape:
        raise ValueError(f"y_true has shape {yt.shape} but y_pred has shape {yp.shape}.")
    return yt, yp


def _check_average(average: str | None, allowed: tuple = _AVERAGES) -> None:
    if average not in allowed:
        raise ValueError(f"average must be one of {allowed}, got {average!r}.")


def _task_thresholds(threshold: ArrayLike, n_tasks: int) -> np.ndarray:
    thr = np.asarray(threshold, dtype=np.float64)
    if thr.ndim == 0:
        thr = np.full(n_tasks, float(thr))
    if thr.shape != (n_tasks,) or np.any(np.isnan(thr)):
        raise ValueError(f"threshold must be a number or one number per task ({n_tasks} tasks), "
                         f"got shape {thr.shape}.")
    return thr


def _binary_pairs(
    y_true: Layout, y_pred: Layout, task: ArrayLike | None, pos_label: Any,
    threshold: ArrayLike | None,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per task ``(true positive mask, predicted positive mask)``.

    ``threshold=None``: ``y_pred`` holds labels, predicted positive where equal to
    ``pos_label``; otherwise ``y_pred`` holds scores, predicted positive where strictly above
    the task's threshold.
    """
    pairs = per_task(y_true, y_pred, task)
    if threshold is None:
        return [(a == pos_label, b == pos_label) for a, b in pairs]
    thr = _task_thresholds(threshold, len(pairs))
    return [(a == pos_label, _scores(b) > c) for (a, b), c in zip(pairs, thr, strict=True)]


def _scores(s: ArrayLike) -> np.ndarray:
    s = np.asarray(s, dtype=np.float64)
    if np.any(np.isnan(s)):
        raise ValueError("The scores contain NaN.")
    return s


def _say_skipped(metric: str, skipped: list[int], n_tasks: int, why: str) -> None:
    """One warning: ``len(skipped)`` of ``n_tasks`` tasks were left out of ``metric``."""
    if len(skipped) == n_tasks:
        raise ValueError(f"Every task has {why}: the {metric} is undefined.")
    shown = ", ".join(map(str, skipped[:10])) + (", ..." if len(skipped) > 10 else "")
    warnings.warn(f"{metric}: {len(skipped)} of {n_tasks} tasks left out ({why}): task(s) "
                  f"{shown} (positions in task order); averaged over the "
                  f"{n_tasks - len(skipped)} others.", UserWarning, stacklevel=3)


def _weight_matrices(W_true: ArrayLike, W: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    A, B = np.asarray(W_true, dtype=np.float64), np.asarray(W, dtype=np.float64)
    if A.ndim != 2:
        raise ValueError(f"W_true must be a 2-D array (n_features, n_tasks), got shape {A.shape}.")
    if A.shape != B.shape:
        raise ValueError(f"W_true has shape {A.shape} but W has shape {B.shape}; both are "
                         "(n_features, n_tasks) (pass estimator.coef_.T).")
    return A, B

