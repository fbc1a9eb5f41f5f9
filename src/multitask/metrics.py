"""Multi-task evaluation metrics.

Every function accepts the three layouts of :mod:`multitask.data`: 2-D arrays ``(n, m)`` (a
shared design, one column per task), 1-D arrays with ``task`` ids (long format), or lists of
per-task arrays. Definitions (``T`` = set of tasks, ``n_t`` test rows of task ``t``,
``N = sum_t n_t``):

* ``nmse(average="pooled")`` = ``(1/N) sum_t ||y_t - f_t||^2 / Var(y)`` with ``Var(y)`` the
  variance of all test targets pooled: the "total squared error over the test targets'
  variance" used in the multi-task literature.
* ``nmse(average="task")`` = ``amse`` = ``(1/m) sum_t (||y_t - f_t||^2 / n_t) / Var(y_t)``.
* ``rmse`` = ``sqrt((1/N) sum_t ||y_t - f_t||^2)``.
* ``mean_task_auc`` = ``(1/m) sum_t AUC_t`` (ROC AUC of the scores of task ``t``).
* ``error_rate`` = fraction of misclassified (row, task) pairs.
* ``macro_f1`` = ``(1/m) sum_t F1_t``; ``micro_f1`` = F1 of the pooled true/false positives.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.metrics import f1_score, roc_auc_score

__all__ = [
    "per_task",
    "nmse",
    "amse",
    "rmse",
    "mse",
    "mean_task_auc",
    "error_rate",
    "macro_f1",
    "micro_f1",
]


def per_task(y_true, y_pred, task=None) -> list[tuple[np.ndarray, np.ndarray]]:
    """Split targets and predictions into per-task pairs ``[(y_t, f_t), ...]``.

    Parameters
    ----------
    y_true, y_pred : array (n, m), array (n,) with ``task``, or lists of per-task arrays
    task : array (n,), optional
        Task id of each row for 1-D inputs.
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
            pairs = [(yt[task == t], yp[task == t]) for t in np.unique(task)]
    for t, (a, b) in enumerate(pairs):
        if len(a) != len(b):
            raise ValueError(f"Task {t}: y_true has {len(a)} entries but y_pred has {len(b)}.")
        if len(a) == 0:
            raise ValueError(f"Task {t} has no rows.")
    return pairs


def mse(y_true, y_pred, task=None) -> float:
    """Pooled mean squared error ``(1/N) sum_t ||y_t - f_t||^2``."""
    pairs = per_task(y_true, y_pred, task)
    sse = sum(float(np.sum((a - b) ** 2)) for a, b in pairs)
    return sse / sum(len(a) for a, _ in pairs)


def rmse(y_true, y_pred, task=None) -> float:
    """Pooled root mean squared error."""
    return float(np.sqrt(mse(y_true, y_pred, task)))


def nmse(y_true, y_pred, task=None, *, average: str = "pooled") -> float:
    """Normalized mean squared error.

    ``average="pooled"``: pooled MSE over the variance of all test targets pooled.
    ``average="task"``: mean over tasks of ``MSE_t / Var(y_t)`` (see :func:`amse`).
    """
    pairs = per_task(y_true, y_pred, task)
    if average == "pooled":
        allv = np.concatenate([a for a, _ in pairs])
        var = float(np.var(allv))
        if var == 0:
            raise ValueError("The test targets are constant: nMSE is undefined.")
        return mse(y_true, y_pred, task) / var
    if average == "task":
        vals = []
        for t, (a, b) in enumerate(pairs):
            v = float(np.var(a))
            if v == 0:
                raise ValueError(f"Task {t} has constant test targets: its nMSE is undefined.")
            vals.append(float(np.mean((a - b) ** 2)) / v)
        return float(np.mean(vals))
    raise ValueError(f"average must be 'pooled' or 'task', got {average!r}.")


def amse(y_true, y_pred, task=None) -> float:
    """Task-averaged normalized MSE ``(1/m) sum_t MSE_t / Var(y_t)``."""
    return nmse(y_true, y_pred, task, average="task")


def mean_task_auc(y_true, scores, task=None) -> float:
    """Mean over tasks of the ROC AUC of each task's scores.

    Tasks whose test labels hold a single class have no AUC: they are left out with a
    ``UserWarning`` naming them; if no task is left a ValueError is raised.
    """
    vals, skipped = [], []
    for t, (a, b) in enumerate(per_task(y_true, scores, task)):
        if len(np.unique(a)) < 2:
            skipped.append(t)
            continue
        vals.append(roc_auc_score(a, b))
    if skipped:
        warnings.warn(
            f"AUC undefined for task(s) {skipped} (one class in y_true); averaged over "
            f"{len(vals)} task(s).",
            UserWarning,
            stacklevel=2,
        )
    if not vals:
        raise ValueError("No task has both classes in y_true: the mean AUC is undefined.")
    return float(np.mean(vals))


def error_rate(y_true, y_pred, task=None) -> float:
    """Fraction of misclassified (row, task) pairs."""
    pairs = per_task(y_true, y_pred, task)
    wrong = sum(int(np.sum(a != b)) for a, b in pairs)
    return wrong / sum(len(a) for a, _ in pairs)


def macro_f1(y_true, y_pred, task=None, *, pos_label=1) -> float:
    """Mean over tasks of the F1 score of the positive class ``pos_label``."""
    pairs = per_task(y_true, y_pred, task)
    return float(np.mean([f1_score(a, b, pos_label=pos_label, zero_division=0.0)
                          for a, b in pairs]))


def micro_f1(y_true, y_pred, task=None, *, pos_label=1) -> float:
    """F1 of the positive class with true/false positives and negatives pooled over tasks."""
    pairs = per_task(y_true, y_pred, task)
    tp = sum(int(np.sum((a == pos_label) & (b == pos_label))) for a, b in pairs)
    fp = sum(int(np.sum((a != pos_label) & (b == pos_label))) for a, b in pairs)
    fn = sum(int(np.sum((a == pos_label) & (b != pos_label))) for a, b in pairs)
    denom = 2 * tp + fp + fn
    return 2.0 * tp / denom if denom else 0.0
