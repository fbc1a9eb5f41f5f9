"""Multi-task evaluation metrics.

Layouts
-------
Every function of targets, labels or scores accepts the three layouts of
:mod:`multitask.data`: 2-D arrays ``(n, m)`` (a shared design or multi-label data, one column
per task), 1-D arrays with ``task`` ids (long format; tasks in the order of the sorted unique
ids), or lists of per-task arrays. Example-based (``average="samples"``) metrics need the 2-D
layout: one row per example, one column per task (label).

Row weights: :func:`mse`, :func:`rmse`, :func:`nmse`, :func:`amse`, :func:`roc_auc`,
:func:`mean_task_auc`, :func:`f1` and :func:`error_rate` take ``sample_weight`` in the layout of
``y_true`` (for 2-D ``y_true`` also ``(n,)``, one weight per row for every task): sums,
means and variances become weighted, so integer weights give the figure of the repeated rows
and pairs of weight zero are left out (how the scorers of :mod:`multitask.model_selection` skip
missing targets).

Notation: ``T`` = the tasks, ``m = |T|``, ``n_t`` test rows of task ``t``,
``N = sum_t n_t``; ``y_t`` targets or labels and ``f_t`` predictions or scores of task ``t``.

Regression
----------
* ``mse`` = ``(1/N) sum_t ||y_t - f_t||^2``; ``rmse = sqrt(mse)``.
* ``nmse(average="pooled")`` = ``mse / Var(y)`` with ``Var(y)`` the variance of all test
  targets pooled: the "total squared error over the test targets' variance" used in the
  multi-task literature.
* ``nmse(average="task")`` = ``amse`` = ``(1/m) sum_t (||y_t - f_t||^2 / n_t) / Var(y_t)``.
* ``design_mse(W_true, W, X)`` = ``(1/N) sum_t ||X_t (w_t - w*_t)||^2``: the error of the
  weights measured on a design (Han & Zhang's ``MSE(W)`` with equal task sizes).

Classification (binary labels per task; ``pos_label`` marks the positive class)
-------------------------------------------------------------------------------
* ``roc_auc(average="macro")`` = ``mean_task_auc`` = ``(1/m') sum_t AUC_t``, ``AUC_t`` the ROC
  AUC of task ``t``'s scores, over the ``m'`` tasks whose test labels hold both classes.
* ``roc_auc(average="micro")``: one ROC AUC over all (row, task) pairs pooled.
* ``roc_auc(average="samples")`` (example-based): for every row ``i``, the ROC AUC of its
  scores ``S[i, :]`` against its labels ``Y[i, :]`` over the tasks, averaged over the rows
  that hold both classes.
* ``f1(average="macro")`` = ``(1/m) sum_t F1_t``; ``"micro"``: the F1 of the true positives,
  false positives and false negatives pooled over all (row, task) pairs; ``"samples"``
  (example-based): ``(1/n) sum_i 2 |Y_i & P_i| / (|Y_i| + |P_i|)`` over the rows, ``Y_i`` and
  ``P_i`` the sets of true and predicted positive tasks of row ``i``. From scores, a pair is
  predicted positive when its score is strictly above the threshold of its task: a fixed one
  (:func:`threshold_scores`, 0 by default) or per-task thresholds chosen on other data by
  :func:`tune_thresholds`.
* ``multilabel_scores``: all six of a multi-label table at once (2-D layout): ROC AUC macro,
  micro and example-based, and F1 macro, micro and example-based at one threshold rule.
* ``error_rate(average="micro")``: the fraction of misclassified (row, task) pairs;
  ``"macro"``: the mean over tasks of the per-task fraction.

Structure recovery (weights of shape ``(n_features, n_tasks)``, as the ``W_true`` of
:mod:`multitask.datasets.synthetic`; pass ``estimator.coef_.T``)
--------------------------------------------------------------------------------------------
* ``support_recovery``: precision, recall, F1 and specificity of the selected entries,
  features (rows) or tasks (columns) against the nonzero ones of ``W_true``.
* ``weight_error`` = ``||W - W_true||`` (Frobenius, nuclear, spectral or entrywise l1),
  optionally relative to ``||W_true||``.
* ``numerical_rank``: the number of singular values above ``rtol * sigma_max``.
* ``subspace_distance``: ``sin`` of the largest principal angle between the leading
  ``rank``-dimensional column spaces of two matrices.
* ``similarity_correlation``: the Pearson correlation of the off-diagonal entries of two task
  similarity matrices.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.linalg import subspace_angles
from sklearn.metrics import f1_score, precision_recall_fscore_support, roc_auc_score

__all__ = [
    "per_task",
    "mse",
    "rmse",
    "nmse",
    "amse",
    "design_mse",
    "roc_auc",
    "mean_task_auc",
    "f1",
    "macro_f1",
    "micro_f1",
    "threshold_scores",
    "tune_thresholds",
    "multilabel_scores",
    "error_rate",
    "support_mask",
    "support_recovery",
    "weight_error",
    "numerical_rank",
    "subspace_distance",
    "similarity_correlation",
]

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
            pairs = [(yt[task == t], yp[task == t]) for t in np.unique(task)]
    for t, (a, b) in enumerate(pairs):
        if len(a) != len(b):
            raise ValueError(f"Task {t}: y_true has {len(a)} entries but y_pred has {len(b)}.")
        if len(a) == 0:
            raise ValueError(f"Task {t} has no rows.")
    return pairs


def _task_weights(sample_weight: Layout, y_true: Layout, task, n_pairs: int) -> list[np.ndarray]:
    """``sample_weight`` split like :func:`per_task` splits ``y_true``: one array per task.

    The layouts: a list of per-task arrays (per-task lists), ``(n,)`` with 1-D ``y_true`` (and
    ``task``), ``(n,)`` (a weight per row, for every task) or ``(n, m)`` (one per row and task)
    with 2-D ``y_true``. Weights must be finite and non-negative.
    """
    if isinstance(y_true, (list, tuple)):
        if isinstance(sample_weight, (list, tuple)):
            parts = [np.asarray(w, dtype=np.float64).ravel() for w in sample_weight]
        else:
            w = np.asarray(sample_weight, dtype=np.float64).ravel()
            sizes = [len(np.ravel(a)) for a in y_true]
            if w.size != sum(sizes):
                raise ValueError(f"sample_weight has {w.size} weights but the {len(sizes)} "
                                 f"tasks of y_true hold {sum(sizes)} targets.")
            parts = np.split(w, np.cumsum(sizes)[:-1])
    else:
        yt = np.asarray(y_true)
        w = np.asarray(sample_weight, dtype=np.float64)
        if yt.ndim == 2 and w.shape == yt.shape[:1]:
            parts = [w] * yt.shape[1]
        elif yt.ndim == 2 and w.shape == yt.shape:
            parts = [w[:, t] for t in range(yt.shape[1])]
        elif yt.ndim == 1 and w.shape == yt.shape:
            parts = ([w] if task is None else
                     [w[np.asarray(task) == t] for t in np.unique(np.asarray(task))])
        else:
            raise ValueError(f"sample_weight has shape {w.shape} but y_true has shape "
                             f"{yt.shape}: give one weight per row (or, for 2-D y_true, one per "
                             "row and task).")
    if len(parts) != n_pairs:
        raise ValueError(f"sample_weight holds {len(parts)} tasks but y_true {n_pairs}.")
    for t, w in enumerate(parts):
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError(f"sample_weight of task {t} holds a negative, NaN or infinite "
                             "weight: weights must be finite numbers >= 0.")
    return parts


def _weighted_pairs(y_true: Layout, y_pred: Layout, task, sample_weight,
                    drop_empty: bool = True):
    """:func:`per_task` pairs with their weights, ``[(y_t, f_t, w_t)]`` (``w_t`` None without
    ``sample_weight``); with weights, the entries of weight zero are left out (a missing
    target of a scorer), and a task left without any is left out (kept, empty, when not
    ``drop_empty``)."""
    pairs = per_task(y_true, y_pred, task)
    if sample_weight is None:
        return [(a, b, None) for a, b in pairs]
    out = []
    for (a, b), w in zip(pairs, _task_weights(sample_weight, y_true, task, len(pairs)),
                         strict=True):
        if len(w) != len(a):
            raise ValueError(f"sample_weight has {len(w)} weights for a task of {len(a)} rows.")
        keep = w > 0
        if keep.any() or not drop_empty:
            out.append((a[keep], b[keep], w[keep]))
    if not any(len(a) for a, _, _ in out):
        raise ValueError("sample_weight is zero everywhere: there is nothing to score.")
    return out


def _wmean(v: np.ndarray, w: np.ndarray | None) -> float:
    """``mean(v)``, or ``sum_i w_i v_i / sum_i w_i``."""
    return float(np.mean(v)) if w is None else float(np.average(v, weights=w))


def _wvar(v: np.ndarray, w: np.ndarray | None) -> float:
    """``var(v)``, or the weighted variance ``sum_i w_i (v_i - mean_w)^2 / sum_i w_i``."""
    if w is None:
        return float(np.var(v))
    v = np.asarray(v, dtype=np.float64)
    return _wmean((v - _wmean(v, w)) ** 2, w)


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


# ----------------------------------------------------------------------------- regression
def mse(y_true: Layout, y_pred: Layout, task: ArrayLike | None = None, *,
        sample_weight: Layout | None = None) -> float:
    """Pooled mean squared error ``(1/N) sum_t ||y_t - f_t||^2``.

    With ``sample_weight``, ``sum_t sum_i w_i (y_i - f_i)^2 / sum_t sum_i w_i`` (integer
    weights give the error of the repeated rows, zero weights leave pairs out).

    Parameters
    ----------
    y_true, y_pred : array (n, m), array (n,) with ``task``, or lists of per-task arrays
    task : array (n,), optional
    sample_weight : the layout of ``y_true`` (or ``(n,)`` for 2-D ``y_true``), optional
        Non-negative weights (see :func:`nmse`).

    Returns
    -------
    float
    """
    if sample_weight is not None:
        trip = _weighted_pairs(y_true, y_pred, task, sample_weight)
        return (sum(float(w @ (a - b) ** 2) for a, b, w in trip)
                / sum(float(w.sum()) for _, _, w in trip))
    pairs = per_task(y_true, y_pred, task)
    sse = sum(float(np.sum((a - b) ** 2)) for a, b in pairs)
    return sse / sum(len(a) for a, _ in pairs)


def rmse(y_true: Layout, y_pred: Layout, task: ArrayLike | None = None, *,
         sample_weight: Layout | None = None) -> float:
    """Pooled root mean squared error ``sqrt((1/N) sum_t ||y_t - f_t||^2)`` (weighted as
    :func:`mse`)."""
    return float(np.sqrt(mse(y_true, y_pred, task, sample_weight=sample_weight)))


def nmse(
    y_true: Layout, y_pred: Layout, task: ArrayLike | None = None, *, average: str = "pooled",
    skip_undefined: bool = False, sample_weight: Layout | None = None,
) -> float:
    """Normalized mean squared error.

    ``average="pooled"``: ``mse / Var(y)``, the pooled MSE over the variance of all test
    targets pooled. ``average="task"``: ``(1/m) sum_t MSE_t / Var(y_t)`` (see :func:`amse`).

    Parameters
    ----------
    y_true, y_pred : array (n, m), array (n,) with ``task``, or lists of per-task arrays
    task : array (n,), optional
    average : {"pooled", "task"}, default="pooled"
    skip_undefined : bool, default=False
        ``average="task"``: leave out the tasks whose test targets are constant
        (``Var(y_t) = 0``: their term is undefined) and average over the others, with a
        ``UserWarning`` saying how many and which were left out (``m`` is then the number
        of tasks kept). Default: such a task raises.
    sample_weight : the layout of ``y_true``, optional
        Non-negative weights of the (row, task) pairs: ``(n,)`` with 1-D ``y_true``; ``(n,)``
        (a weight per row, for every task) or ``(n, m)`` with 2-D ``y_true``; a list of
        per-task arrays with lists. Means and variances become weighted (``sum_i w_i v_i /
        sum_i w_i``): integer weights give the figure of the repeated rows; pairs of weight
        zero are left out (the scorers pass the missing targets that way).

    Raises
    ------
    ValueError
        When the variance in the denominator is 0 (constant targets; with
        ``skip_undefined``, when every task's targets are constant).
    """
    trip = _weighted_pairs(y_true, y_pred, task, sample_weight)
    pairs = [(a, b) for a, b, _ in trip]
    if average == "pooled":
        allv = np.concatenate([a for a, _ in pairs])
        allw = None if sample_weight is None else np.concatenate([w for _, _, w in trip])
        var = _wvar(allv, allw)
        if var == 0:
            raise ValueError("The test targets are constant: nMSE is undefined.")
        if sample_weight is None:
            return mse(y_true, y_pred, task) / var
        return _wmean(np.concatenate([(a - b) ** 2 for a, b in pairs]), allw) / var
    if average == "task":
        vals, skipped = [], []
        for t, (a, b, w) in enumerate(trip):
            v = _wvar(a, w)
            if v == 0:
                if skip_undefined:
                    skipped.append(t)
                    continue
                raise ValueError(f"Task {t} has constant test targets: its nMSE is undefined "
                                 "(skip_undefined=True leaves such tasks out).")
            vals.append(_wmean((a - b) ** 2, w) / v)
        if skipped:
            _say_skipped("nMSE", skipped, len(pairs), "constant test targets")
        return float(np.mean(vals))
    raise ValueError(f"average must be 'pooled' or 'task', got {average!r}.")


def amse(y_true: Layout, y_pred: Layout, task: ArrayLike | None = None, *,
         skip_undefined: bool = False, sample_weight: Layout | None = None) -> float:
    """Task-averaged normalized MSE ``(1/m) sum_t MSE_t / Var(y_t)``.

    ``skip_undefined=True`` leaves out the tasks whose test targets are constant (with a
    ``UserWarning`` giving their number); by default such a task raises a ValueError. See
    :func:`nmse` (also for ``sample_weight``).
    """
    return nmse(y_true, y_pred, task, average="task", skip_undefined=skip_undefined,
                sample_weight=sample_weight)


def _say_skipped(metric: str, skipped: list[int], n_tasks: int, why: str) -> None:
    """One warning: ``len(skipped)`` of ``n_tasks`` tasks were left out of ``metric``."""
    if len(skipped) == n_tasks:
        raise ValueError(f"Every task has {why}: the {metric} is undefined.")
    shown = ", ".join(map(str, skipped[:10])) + (", ..." if len(skipped) > 10 else "")
    warnings.warn(f"{metric}: {len(skipped)} of {n_tasks} tasks left out ({why}): task(s) "
                  f"{shown} (positions in task order); averaged over the "
                  f"{n_tasks - len(skipped)} others.", UserWarning, stacklevel=3)


def _check_weights(W_true: ArrayLike, W: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    A, B = np.asarray(W_true, dtype=np.float64), np.asarray(W, dtype=np.float64)
    if A.ndim != 2:
        raise ValueError(f"W_true must be a 2-D array (n_features, n_tasks), got shape {A.shape}.")
    if A.shape != B.shape:
        raise ValueError(f"W_true has shape {A.shape} but W has shape {B.shape}; both are "
                         "(n_features, n_tasks) (pass estimator.coef_.T).")
    return A, B


def design_mse(
    W_true: ArrayLike, W: ArrayLike, X: Any, task: ArrayLike | None = None
) -> float:
    """Error of the weights on a design: ``(1/N) sum_t ||X_t (w_t - w*_t)||^2``.

    Han & Zhang, "Multi-stage multi-task learning with reduced rank", write it
    ``(1/(m n)) sum_t (w_t - w*_t)^T X_t^T X_t (w_t - w*_t)`` for ``n`` rows per task; it is
    the pooled MSE of the predictions ``X_t w_t`` against the noiseless targets
    ``X_t w*_t``.

    Parameters
    ----------
    W_true, W : array-like of shape (n_features, n_tasks)
        True and estimated weights, one column per task.
    X : list of per-task designs (n_t, n_features), or an array (n, n_features)
        A 2-D array is the design of every task (shared), or with ``task`` the rows of all
        tasks in long format. Sparse matrices are accepted.
    task : array (n,), optional
        Task of each row of ``X``; the sorted unique ids are the columns of ``W``.

    Returns
    -------
    float
    """
    A, B = _check_weights(W_true, W)
    m = A.shape[1]
    if isinstance(X, (list, tuple)):
        designs, cols = list(X), list(range(len(X)))
    elif task is None:
        designs, cols = [X] * m, list(range(m))
    else:
        task = np.asarray(task)
        ids = np.unique(task)
        designs, cols = [X[task == t] for t in ids], list(range(len(ids)))
    if len(designs) != m:
        raise ValueError(f"X holds {len(designs)} tasks but W has {m} columns.")
    sse, n_rows = 0.0, 0
    for X_t, t in zip(designs, cols, strict=True):
        if X_t.shape[1] != A.shape[0]:
            raise ValueError(f"Task {t}: X has {X_t.shape[1]} features but W has {A.shape[0]}.")
        sse += float(np.sum(np.asarray(X_t @ (B[:, t] - A[:, t])).ravel() ** 2))
        n_rows += X_t.shape[0]
    if n_rows == 0:
        raise ValueError("X has no rows.")
    return sse / n_rows


# ----------------------------------------------------------------------------- ranking
def roc_auc(
    y_true: Layout, y_score: Layout, task: ArrayLike | None = None, *,
    average: str | None = "macro", pos_label: Any = 1, skip_undefined: bool = True,
    sample_weight: Layout | None = None,
) -> float | np.ndarray:
    """ROC AUC of multi-task scores: per task, pooled or per example.

    ``average="macro"``: ``(1/m') sum_t AUC_t`` over the ``m'`` tasks whose labels hold both
    classes (the others are left out with a ``UserWarning`` naming them).
    ``average="micro"``: the ROC AUC of all (row, task) pairs pooled (one ranking of all
    scores).
    ``average="samples"`` (example-based, 2-D layout only): for every row ``i`` the ROC AUC of
    ``y_score[i, :]`` against ``y_true[i, :]`` over the tasks, averaged over the rows whose
    labels hold both classes; rows whose labels are all positive or all negative have no AUC
    and are left out, with a ``UserWarning`` giving their number.
    ``average=None``: the array of the per-task AUCs, NaN for tasks with one class.

    Every ROC AUC is scikit-learn's :func:`~sklearn.metrics.roc_auc_score` (ties count one
    half); the per-task AUCs (macro and ``None``) are the same number computed from one sort
    of each task's scores, without its per-call checks (which cost most of the
    cross-validation of a small classifier).

    Parameters
    ----------
    y_true : array (n, m), array (n,) with ``task``, or list of per-task arrays
        Labels; ``pos_label`` is the positive class, every other value negative.
    y_score : same layout as ``y_true``
        Scores, larger for the positive class.
    task : array (n,), optional
    average : {"macro", "micro", "samples"} or None, default="macro"
    pos_label : default=1
    skip_undefined : bool, default=True
        ``average="macro"``: leave out the tasks whose labels hold one class (their AUC is
        undefined), with a ``UserWarning`` naming them and the number of tasks averaged;
        ``False`` raises a ValueError naming the first such task instead.
    sample_weight : the layout of ``y_true``, optional
        Non-negative weights of the (row, task) pairs, as in :func:`nmse` (scikit-learn's
        weighted ROC AUC; pairs of weight zero are left out); ``(n,)``, one per row, for
        ``average="samples"``.

    Returns
    -------
    float, or ndarray of shape (m,) for ``average=None``

    Raises
    ------
    ValueError
        When no task (macro), no row (samples) or the pooled labels (micro) hold both
        classes.
    """
    _check_average(average)
    if average == "samples":
        Yt, S = _matrix_pair(y_true, y_score, 'average="samples"')
        P = Yt == pos_label
        S = _scores(S)
        n_pos = P.sum(axis=1)
        keep = (n_pos > 0) & (n_pos < P.shape[1])
        if not np.any(keep):
            raise ValueError("No row has both classes in y_true: the example-based AUC is "
                             "undefined.")
        if not np.all(keep):
            warnings.warn(f"Example-based AUC: {int(np.sum(~keep))} of {len(keep)} rows hold "
                          "one class only and are left out.", UserWarning, stacklevel=2)
        w = None
        if sample_weight is not None:
            w = np.asarray(sample_weight, dtype=np.float64)
            if w.shape != (Yt.shape[0],):
                raise ValueError(f'average="samples" takes one weight per row ({Yt.shape[0]}), '
                                 f"got sample_weight of shape {w.shape}.")
            w = w[keep]
        return float(roc_auc_score(P[keep].astype(np.int64), S[keep], average="samples",
                                   sample_weight=w))
    trip = [(a == pos_label, _scores(b), w) for a, b, w in
            _weighted_pairs(y_true, y_score, task, sample_weight, drop_empty=False)]
    pairs = [(a, b) for a, b, _ in trip]
    if average == "micro":
        pos = np.concatenate([a for a, _ in pairs])
        if pos.all() or not pos.any():
            raise ValueError("y_true holds one class only: the pooled AUC is undefined.")
        allw = None if sample_weight is None else np.concatenate([w for _, _, w in trip])
        return float(roc_auc_score(pos, np.concatenate([b for _, b in pairs]),
                                   sample_weight=allw))
    vals = np.full(len(pairs), np.nan)
    for t, (a, b, w) in enumerate(trip):
        if a.any() and not a.all():
            vals[t] = (_binary_auc(a, b, w) if np.all(np.isfinite(b))
                       else roc_auc_score(a, b, sample_weight=w))  # its error on infinity
    if average is None:
        return vals
    skipped = np.flatnonzero(np.isnan(vals)).tolist()
    if skipped and not skip_undefined:
        raise ValueError(f"Task {skipped[0]} holds one class only in y_true: its AUC is "
                         "undefined (skip_undefined=True leaves such tasks out).")
    if skipped:
        warnings.warn(
            f"AUC undefined for task(s) {skipped} (one class in y_true); averaged over "
            f"{len(vals) - len(skipped)} task(s).",
            UserWarning,
            stacklevel=2,
        )
    if len(skipped) == len(vals):
        raise ValueError("No task has both classes in y_true: the mean AUC is undefined.")
    return float(np.nanmean(vals))


def _binary_auc(positive: np.ndarray, score: np.ndarray,
               sample_weight: np.ndarray | None = None) -> float:
    """ROC AUC of one binary task, ties counting one half: the weighted Mann-Whitney
    statistic

        AUC = sum_{i pos, j neg} w_i w_j (1[s_i > s_j] + 1[s_i = s_j] / 2)
              / (sum_{i pos} w_i  sum_{j neg} w_j),

    the area under the ROC curve that scikit-learn's :func:`~sklearn.metrics.roc_auc_score`
    integrates (equal to rounding), from one sort of the scores.

    Parameters
    ----------
    positive : ndarray of bool of shape (n,)
        Whether each row is positive (both classes present).
    score : ndarray of shape (n,)
        Finite scores.
    sample_weight : ndarray of shape (n,), optional
        Non-negative weights of the rows.
    """
    order = np.argsort(score, kind="mergesort")
    s = np.asarray(score, dtype=np.float64)[order]
    pos = np.asarray(positive, dtype=bool)[order]
    w = np.ones(s.size) if sample_weight is None else np.asarray(
        sample_weight, dtype=np.float64)[order]
    wp = np.where(pos, w, 0.0)
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])  # groups of tied scores
    gp = np.add.reduceat(wp, starts)
    gn = np.add.reduceat(w - wp, starts)
    below = np.cumsum(gn) - gn  # negative weight strictly below each group
    return float(gp @ (below + 0.5 * gn)) / (float(gp.sum()) * float(gn.sum()))


def mean_task_auc(y_true: Layout, scores: Layout, task: ArrayLike | None = None, *,
                  sample_weight: Layout | None = None) -> float:
    """Mean over tasks of the ROC AUC of each task's scores: ``roc_auc(average="macro")``.

    Tasks whose test labels hold a single class have no AUC: they are left out with a
    ``UserWarning`` naming them; if no task is left a ValueError is raised. The positive
    class is the label 1. ``sample_weight`` as in :func:`roc_auc`.
    """
    return roc_auc(y_true, scores, task, average="macro", sample_weight=sample_weight)


# ----------------------------------------------------------------------------- F1
def threshold_scores(
    y_score: Layout, threshold: ArrayLike = 0.0, task: ArrayLike | None = None, *,
    labels: tuple[Any, Any] = (0, 1),
) -> np.ndarray | list[np.ndarray]:
    """Labels from scores: positive where the score is strictly above its task's threshold.

    ``label = labels[1]`` where ``score > threshold_t``, else ``labels[0]``.

    Parameters
    ----------
    y_score : array (n, m), array (n,) with ``task``, or list of per-task arrays
    threshold : float or array-like of shape (m,), default=0.0
        One threshold for all tasks, or one per task (in the task order of :func:`per_task`,
        for example from :func:`tune_thresholds`).
    task : array (n,), optional
    labels : (negative, positive), default=(0, 1)

    Returns
    -------
    labels : the layout of ``y_score`` (array or list of arrays)
    """
    neg, pos = labels
    if isinstance(y_score, (list, tuple)):
        thr = _task_thresholds(threshold, len(y_score))
        return [np.where(_scores(s) > c, pos, neg) for s, c in zip(y_score, thr, strict=True)]
    S = _scores(y_score)
    if S.ndim == 2:
        return np.where(S > _task_thresholds(threshold, S.shape[1])[None, :], pos, neg)
    if S.ndim != 1:
        raise ValueError(f"y_score must be 1-D or 2-D, got shape {S.shape}.")
    if task is None:
        return np.where(S > _task_thresholds(threshold, 1)[0], pos, neg)
    task = np.asarray(task)
    if len(task) != len(S):
        raise ValueError(f"task has {len(task)} entries but y_score has {len(S)}.")
    ids, inverse = np.unique(task, return_inverse=True)
    return np.where(S > _task_thresholds(threshold, len(ids))[inverse], pos, neg)


def tune_thresholds(
    y_true: Layout, y_score: Layout, task: ArrayLike | None = None, *, pos_label: Any = 1
) -> np.ndarray:
    """Per-task thresholds that maximize the F1 of ``score > threshold`` (the "SCut" rule).

    For each task, the rows are sorted by decreasing score; among the cuts between two
    distinct consecutive scores (and the cut below all of them), the one with the largest F1
    ``2 TP / (k + n_pos)`` (``k`` rows predicted positive) is chosen, the fewest positives on
    ties. The threshold is the midpoint of the two scores around the cut, or the smallest
    score minus 1 when every row is predicted positive. A task without positives gets
    ``+inf`` (never predicted positive). Choose them on validation (or out-of-fold) scores and
    apply them to test scores with :func:`threshold_scores` or ``f1(..., threshold=...)``.

    Parameters
    ----------
    y_true : array (n, m), array (n,) with ``task``, or list of per-task arrays
    y_score : same layout as ``y_true``
    task : array (n,), optional
    pos_label : default=1

    Returns
    -------
    thresholds : ndarray of shape (m,)
        In the task order of :func:`per_task`.
    """
    out = []
    for a, b in per_task(y_true, y_score, task):
        y = (a == pos_label).astype(np.int64)
        s = _scores(b)
        n, n_pos = len(y), int(y.sum())
        if n_pos == 0:
            out.append(np.inf)
            continue
        order = np.argsort(-s, kind="stable")
        so = s[order]
        f1_k = 2 * np.cumsum(y[order]) / (np.arange(1, n + 1) + n_pos)
        valid = np.r_[so[:-1] > so[1:], True]  # cut only between distinct scores
        j = int(np.argmax(np.where(valid, f1_k, -1.0)))
        out.append(0.5 * (so[j] + so[j + 1]) if j + 1 < n else so[j] - 1.0)
    return np.asarray(out, dtype=np.float64)


def f1(
    y_true: Layout, y_pred: Layout, task: ArrayLike | None = None, *,
    average: str | None = "macro", threshold: ArrayLike | None = None, pos_label: Any = 1,
    zero_division: float = 0.0, sample_weight: Layout | None = None,
) -> float | np.ndarray:
    """F1 score of multi-task binary predictions: per task, pooled or per example.

    With ``TP``, ``FP``, ``FN`` the true positives, false positives and false negatives and
    ``F1 = 2 TP / (2 TP + FP + FN)`` (``zero_division`` where ``2 TP + FP + FN = 0``):

    * ``average="macro"``: ``(1/m) sum_t F1_t``, every task counted;
    * ``average="micro"``: the F1 of ``TP``, ``FP``, ``FN`` summed over all (row, task) pairs;
    * ``average="samples"`` (example-based, 2-D layout only):
      ``(1/n) sum_i 2 |Y_i & P_i| / (|Y_i| + |P_i|)``, ``Y_i`` / ``P_i`` the true / predicted
      positive tasks of row ``i``;
    * ``average=None``: the array of the per-task ``F1_t``.

    These are scikit-learn's :func:`~sklearn.metrics.f1_score` on the positive-class
    indicators.

    Parameters
    ----------
    y_true : array (n, m), array (n,) with ``task``, or list of per-task arrays
        Labels; ``pos_label`` is the positive class, every other value negative.
    y_pred : same layout as ``y_true``
        Predicted labels (``threshold=None``) or scores.
    task : array (n,), optional
    average : {"macro", "micro", "samples"} or None, default="macro"
    threshold : None, float or array-like of shape (m,), default=None
        ``None``: ``y_pred`` holds labels, positive where equal to ``pos_label``. A number or
        one number per task: ``y_pred`` holds scores and a pair is predicted positive where
        its score is strictly above its task's threshold (0 for sign decisions; per-task
        thresholds from :func:`tune_thresholds` on other data).
    pos_label : default=1
    zero_division : float, default=0.0
        The F1 of a task (macro) or row (samples) without true or predicted positives, and
        the micro F1 without any.
    sample_weight : the layout of ``y_true``, optional
        Non-negative weights of the (row, task) pairs, as in :func:`nmse` (the counts ``TP``,
        ``FP``, ``FN`` become sums of weights); ``(n,)``, one per row, for
        ``average="samples"``.

    Returns
    -------
    float, or ndarray of shape (m,) for ``average=None``
    """
    _check_average(average)
    if average == "samples":
        Yt, Yp = _matrix_pair(y_true, y_pred, 'average="samples"')
        if Yt.shape[1] < 2:
            raise ValueError("The example-based F1 needs at least 2 tasks (columns).")
        pairs = _binary_pairs(Yt, Yp, None, pos_label, threshold)
        T = np.column_stack([a for a, _ in pairs]).astype(np.int64)
        P = np.column_stack([b for _, b in pairs]).astype(np.int64)
        return float(f1_score(T, P, average="samples", zero_division=zero_division,
                              sample_weight=sample_weight))
    pairs = _binary_pairs(y_true, y_pred, task, pos_label, threshold)
    ws = ([None] * len(pairs) if sample_weight is None
          else _task_weights(sample_weight, y_true, task, len(pairs)))
    if average == "micro":
        return float(f1_score(np.concatenate([a for a, _ in pairs]),
                              np.concatenate([b for _, b in pairs]),
                              zero_division=zero_division,
                              sample_weight=None if sample_weight is None
                              else np.concatenate(ws)))
    vals = np.array([f1_score(a, b, zero_division=zero_division, sample_weight=w)
                     for (a, b), w in zip(pairs, ws, strict=True)], dtype=np.float64)
    return vals if average is None else float(np.mean(vals))


def macro_f1(
    y_true: Layout, y_pred: Layout, task: ArrayLike | None = None, *, pos_label: Any = 1
) -> float:
    """Mean over tasks of the F1 score of the positive class: ``f1(average="macro")``."""
    return f1(y_true, y_pred, task, average="macro", pos_label=pos_label)


def micro_f1(
    y_true: Layout, y_pred: Layout, task: ArrayLike | None = None, *, pos_label: Any = 1
) -> float:
    """F1 with true/false positives and negatives pooled over tasks: ``f1(average="micro")``."""
    return f1(y_true, y_pred, task, average="micro", pos_label=pos_label)


def multilabel_scores(
    y_true: ArrayLike, y_score: ArrayLike, *, threshold: ArrayLike = 0.0, pos_label: Any = 1,
    zero_division: float = 0.0,
) -> dict[str, float]:
    """ROC AUC and F1 of multi-label scores under every averaging, in one call.

    The six figures a multi-label table should report side by side, because they can
    disagree by many points on the same scores (a pooled ranking rewards scores that separate
    frequent from rare labels, which a per-label ranking ignores):

    * ``auc_macro`` = ``roc_auc(average="macro")``: the mean over labels of the per-label AUC
      (labels whose ``y_true`` holds one class are left out, with a ``UserWarning``);
    * ``auc_micro`` = ``roc_auc(average="micro")``: one AUC of all (row, label) pairs pooled;
    * ``auc_samples`` = ``roc_auc(average="samples")``: the mean over rows of the AUC of the
      row's scores against its labels (rows with one class left out, with a ``UserWarning``);
    * ``f1_macro``, ``f1_micro``, ``f1_samples`` = :func:`f1` with that ``average``, a pair
      predicted positive when its score is strictly above its label's threshold.

    Parameters
    ----------
    y_true : array-like of shape (n, m)
        Labels, one column per label (task); ``pos_label`` is the positive class.
    y_score : array-like of shape (n, m)
        Scores, larger for the positive class.
    threshold : float or array-like of shape (m,), default=0.0
        The threshold rule of the F1 figures: one number (0 for the sign of a decision
        function), or one per label, for example from :func:`tune_thresholds` on training or
        validation scores.
    pos_label : default=1
    zero_division : float, default=0.0
        As in :func:`f1`.

    Returns
    -------
    dict
        ``auc_macro``, ``auc_micro``, ``auc_samples``, ``f1_macro``, ``f1_micro``,
        ``f1_samples`` (floats in [0, 1]).

    Raises
    ------
    ValueError
        Unless both are 2-D arrays of the same shape with at least 2 columns; as
        :func:`roc_auc` when an AUC is undefined.
    """
    Yt, S = _matrix_pair(y_true, y_score, "multilabel_scores")
    if Yt.shape[1] < 2:
        raise ValueError("multilabel_scores needs at least 2 labels (columns).")
    out: dict[str, float] = {}
    for avg in ("macro", "micro", "samples"):
        out[f"auc_{avg}"] = float(roc_auc(Yt, S, average=avg, pos_label=pos_label))
    for avg in ("macro", "micro", "samples"):
        out[f"f1_{avg}"] = float(f1(Yt, S, average=avg, threshold=threshold,
                                    pos_label=pos_label, zero_division=zero_division))
    return out


def error_rate(
    y_true: Layout, y_pred: Layout, task: ArrayLike | None = None, *, average: str = "micro",
    threshold: ArrayLike | None = None, pos_label: Any = 1,
    sample_weight: Layout | None = None,
) -> float:
    """Misclassification rate.

    ``average="micro"``: the fraction of misclassified (row, task) pairs,
    ``(1/N) sum_t #{i : y_ti != f_ti}``. ``average="macro"``: the mean over tasks of the
    per-task fraction, ``(1/m) sum_t #{i : y_ti != f_ti} / n_t``.

    Parameters
    ----------
    y_true : array (n, m), array (n,) with ``task``, or list of per-task arrays
    y_pred : same layout
        Predicted labels (any values, compared with ``y_true``), or scores when
        ``threshold`` is given: then a pair is predicted positive where its score is strictly
        above its task's threshold and is wrong where that disagrees with
        ``y_true == pos_label``.
    task : array (n,), optional
    average : {"micro", "macro"}, default="micro"
    threshold : None, float or array-like of shape (m,), default=None
    pos_label : default=1
        Used with ``threshold`` only.
    sample_weight : the layout of ``y_true``, optional
        Non-negative weights of the (row, task) pairs, as in :func:`nmse`: the fractions
        become weighted (``sum w_i [y_i != f_i] / sum w_i``).

    Returns
    -------
    float
    """
    _check_average(average, ("micro", "macro"))
    if threshold is None:
        wrong = [a != b for a, b in per_task(y_true, y_pred, task)]
    else:
        wrong = [a != b for a, b in _binary_pairs(y_true, y_pred, task, pos_label, threshold)]
    if sample_weight is not None:
        ws = _task_weights(sample_weight, y_true, task, len(wrong))
        kept = [(v, w) for v, w in zip(wrong, ws, strict=True) if w.sum() > 0]
        if not kept:
            raise ValueError("sample_weight is zero everywhere: there is nothing to score.")
        if average == "macro":
            return float(np.mean([_wmean(v, w) for v, w in kept]))
        return (sum(float(w @ v) for v, w in kept) / sum(float(w.sum()) for _, w in kept))
    if average == "macro":
        return float(np.mean([np.mean(w) for w in wrong]))
    return sum(int(np.sum(w)) for w in wrong) / sum(len(w) for w in wrong)


# ----------------------------------------------------------------------------- structure
_LEVELS = ("entries", "features", "tasks")


def support_mask(W: ArrayLike, *, level: str = "entries", threshold: float = 0.0,
                 relative: bool = False) -> np.ndarray:
    """Selected entries, features (rows) or tasks (columns) of a weight matrix.

    The magnitude of an entry is ``|W_jt|``, of a feature the l2 norm of its row, of a task
    the l2 norm of its column; an item is selected when its magnitude is strictly above
    ``c = threshold`` (``relative=True``: ``c = threshold * the largest magnitude``). With
    ``c = 0`` an item is selected when any of its entries is nonzero.

    Parameters
    ----------
    W : array-like of shape (n_features, n_tasks)
        Any shape for ``level="entries"``.
    level : {"entries", "features", "tasks"}, default="entries"
    threshold : float, default=0.0
    relative : bool, default=False

    Returns
    -------
    mask : ndarray of bool
        Shape of ``W`` (entries), ``(n_features,)`` or ``(n_tasks,)``.
    """
    if level not in _LEVELS:
        raise ValueError(f"level must be one of {_LEVELS}, got {level!r}.")
    A = np.asarray(W, dtype=np.float64)
    if level != "entries" and A.ndim != 2:
        raise ValueError(f"level={level!r} needs a 2-D W (n_features, n_tasks), got shape "
                         f"{A.shape}.")
    if not threshold >= 0:
        raise ValueError(f"threshold must be >= 0, got {threshold!r}.")
    if level == "entries":
        mag, nonzero = np.abs(A), A != 0
    else:
        axis = 1 if level == "features" else 0
        mag, nonzero = np.linalg.norm(A, axis=axis), np.any(A != 0, axis=axis)
    c = threshold * (float(mag.max()) if mag.size else 0.0) if relative else threshold
    return nonzero if c == 0 else mag > c


def support_recovery(
    W_true: ArrayLike, W: ArrayLike, *, level: str = "entries", threshold: float = 0.0,
    relative: bool = False, zero_division: float = 0.0,
) -> dict[str, float]:
    """How well the selected items of ``W`` match the nonzero items of ``W_true``.

    The true items are the nonzero entries, rows or columns of ``W_true``; the selected ones
    those of :func:`support_mask` of ``W`` (``threshold``, ``relative``). With ``TP``, ``FP``,
    ``FN``, ``TN`` the counts of selected-and-true, selected-but-zero, missed and rightly
    unselected items: ``precision = TP / (TP + FP)``, ``recall = TP / (TP + FN)``,
    ``f1 = 2 TP / (2 TP + FP + FN)``, ``specificity = TN / (TN + FP)`` (each
    ``zero_division`` when its denominator is 0), computed by scikit-learn's
    :func:`~sklearn.metrics.precision_recall_fscore_support`.

    Parameters
    ----------
    W_true, W : array-like of the same shape
        ``(n_features, n_tasks)``; any shape for ``level="entries"`` (for example the entries
        of a block, ``W_true[mask]``).
    level : {"entries", "features", "tasks"}, default="entries"
    threshold : float, default=0.0
    relative : bool, default=False
    zero_division : float, default=0.0

    Returns
    -------
    scores : dict
        ``precision``, ``recall``, ``f1``, ``specificity``, ``n_selected`` and ``n_true``.
    """
    A, B = np.asarray(W_true, dtype=np.float64), np.asarray(W, dtype=np.float64)
    if A.shape != B.shape:
        raise ValueError(f"W_true has shape {A.shape} but W has shape {B.shape}.")
    true = support_mask(A, level=level).ravel()
    sel = support_mask(B, level=level, threshold=threshold, relative=relative).ravel()
    if true.size == 0:
        raise ValueError("W_true is empty.")
    p, r, f, _ = precision_recall_fscore_support(true, sel, average="binary", pos_label=True,
                                                 zero_division=zero_division)
    tn, fp = int(np.sum(~true & ~sel)), int(np.sum(~true & sel))
    return {"precision": float(p), "recall": float(r), "f1": float(f),
            "specificity": tn / (tn + fp) if tn + fp else float(zero_division),
            "n_selected": int(sel.sum()), "n_true": int(true.sum())}


_NORMS = {"fro": "fro", "nuclear": "nuc", "spectral": 2}


def weight_error(
    W_true: ArrayLike, W: ArrayLike, *, norm: str = "fro", relative: bool = False
) -> float:
    """Estimation error of the weights, ``||W - W_true||`` (over ``||W_true||`` if relative).

    Parameters
    ----------
    W_true, W : array-like of shape (n_features, n_tasks)
    norm : {"fro", "nuclear", "spectral", "l1"}, default="fro"
        Frobenius, nuclear (sum of singular values), spectral (largest singular value) or
        entrywise l1 norm.
    relative : bool, default=False

    Returns
    -------
    float
    """
    A, B = _check_weights(W_true, W)
    if norm not in (*_NORMS, "l1"):
        raise ValueError(f"norm must be one of {(*_NORMS, 'l1')}, got {norm!r}.")

    def size(M: np.ndarray) -> float:
        return float(np.sum(np.abs(M))) if norm == "l1" else float(np.linalg.norm(M, _NORMS[norm]))

    err = size(B - A)
    if not relative:
        return err
    ref = size(A)
    if ref == 0:
        raise ValueError("W_true is zero: the relative error is undefined.")
    return err / ref


def numerical_rank(W: ArrayLike, *, rtol: float | None = None) -> int:
    """Number of singular values of ``W`` strictly above ``rtol * sigma_max``.

    Parameters
    ----------
    W : array-like of shape (n_features, n_tasks)
    rtol : float, optional
        Relative tolerance; default ``max(W.shape) * eps`` (as :func:`numpy.linalg.matrix_rank`).

    Returns
    -------
    int
        0 for a zero or empty matrix.
    """
    A = np.asarray(W, dtype=np.float64)
    if A.ndim != 2:
        raise ValueError(f"W must be a 2-D array, got shape {A.shape}.")
    if A.size == 0:
        return 0
    s = np.linalg.svd(A, compute_uv=False)
    if s[0] == 0:
        return 0
    tol = max(A.shape) * np.finfo(np.float64).eps if rtol is None else float(rtol)
    return int(np.sum(s > tol * s[0]))


def subspace_distance(W_true: ArrayLike, W: ArrayLike, *, rank: int | None = None) -> float:
    """``sin`` of the largest principal angle between two leading column spaces.

    ``U*`` and ``U`` are the ``rank`` leading left singular vectors of ``W_true`` and ``W``;
    the distance ``||U U^T - U* U*^T||_2 = sin(theta_max)`` is 0 when the spaces coincide and
    1 when some direction of one is orthogonal to the other.

    Parameters
    ----------
    W_true, W : array-like of shape (n_features, n_tasks)
    rank : int, optional
        Dimension compared; default :func:`numerical_rank` of ``W_true``.

    Returns
    -------
    float in [0, 1]
    """
    A, B = _check_weights(W_true, W)
    r = numerical_rank(A) if rank is None else rank
    if not isinstance(r, (int, np.integer)) or not 1 <= r <= min(A.shape):
        raise ValueError(f"rank must be an integer in [1, {min(A.shape)}], got {r!r}.")
    Ua = np.linalg.svd(A, full_matrices=False)[0][:, :r]
    Ub = np.linalg.svd(B, full_matrices=False)[0][:, :r]
    return float(min(1.0, np.sin(np.max(subspace_angles(Ua, Ub)))))


def similarity_correlation(S_true: ArrayLike, S: ArrayLike) -> float:
    """Pearson correlation of the off-diagonal entries of two task-similarity matrices.

    ``corr({S*_st : s != t}, {S_st : s != t})``; NaN with a ``UserWarning`` when either set of
    entries is constant (the correlation is undefined).

    Parameters
    ----------
    S_true, S : array-like of shape (n_tasks, n_tasks)

    Returns
    -------
    float in [-1, 1], or NaN
    """
    A, B = np.asarray(S_true, dtype=np.float64), np.asarray(S, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape != B.shape or A.shape[0] < 2:
        raise ValueError(f"S_true and S must be square matrices of the same size >= 2, got "
                         f"shapes {A.shape} and {B.shape}.")
    mask = ~np.eye(A.shape[0], dtype=bool)
    a, b = A[mask], B[mask]
    if np.std(a) == 0 or np.std(b) == 0:
        warnings.warn("A similarity matrix has constant off-diagonal entries: their correlation "
                      "is undefined.", UserWarning, stacklevel=2)
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])
