"""Classification metrics: ROC AUC (per task, pooled, per example), F1 and its thresholds, the
error rate, the multi-label table."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.metrics import f1_score, roc_auc_score

from multitask.metrics._layouts import (
    Layout,
    _binary_pairs,
    _check_average,
    _matrix_pair,
    _scores,
    _task_thresholds,
    per_task,
)
from multitask.metrics._weights import (
    _task_weights,
    _weighted_pairs,
    _wmean,
    rescaled,
    unit_scale,
)


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
    float or ndarray of shape (m,)
        The AUC averaged as ``average`` says; the AUC of each task for ``average=None``.

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
            w = unit_scale(w[keep])
        return float(roc_auc_score(P[keep].astype(np.int64), S[keep], average="samples",
                                   sample_weight=w))
    trip = [(a == pos_label, _scores(b), w) for a, b, w in
            _weighted_pairs(y_true, y_score, task, sample_weight, drop_empty=False,
                            scale="none")]  # each class of each task rescaled below
    pairs = [(a, b) for a, b, _ in trip]
    if average == "micro":
        pos = np.concatenate([a for a, _ in pairs])
        if pos.all() or not pos.any():
            raise ValueError("y_true holds one class only: the pooled AUC is undefined.")
        allw = None if sample_weight is None else _class_scaled(
            pos, np.concatenate([w for _, _, w in trip]))
        return float(roc_auc_score(pos, np.concatenate([b for _, b in pairs]),
                                   sample_weight=allw))
    vals = np.full(len(pairs), np.nan)
    for t, (a, b, w) in enumerate(trip):
        if a.any() and not a.all():
            w = None if w is None else _class_scaled(a, w)
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


def _class_scaled(positive: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The weights of the positives and of the negatives each rescaled by
    :func:`~multitask.metrics._weights.unit_scale`: an ROC AUC is a ratio of sums of products
    ``w_i w_j`` (one positive, one negative) over ``sum_pos w * sum_neg w``, unchanged by a
    factor on either class, and the products neither underflow nor overflow."""
    out = np.asarray(w, dtype=np.float64).copy()
    for part in (positive, ~positive):
        out[part] = unit_scale(out[part])
    return out


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
    float or ndarray of shape (m,)
        The F1 score averaged as ``average`` says; each task's for ``average=None``.
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
                              sample_weight=None if sample_weight is None
                              else unit_scale(sample_weight)))
    pairs = _binary_pairs(y_true, y_pred, task, pos_label, threshold)
    ws = ([None] * len(pairs) if sample_weight is None
          else rescaled(_task_weights(sample_weight, y_true, task, len(pairs)),
                        per_task=average != "micro"))
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
        ws = rescaled(_task_weights(sample_weight, y_true, task, len(wrong)),
                      per_task=average == "macro")
        kept = [(v, w) for v, w in zip(wrong, ws, strict=True) if w.sum() > 0]
        if not kept:
            raise ValueError("sample_weight is zero everywhere: there is nothing to score.")
        if average == "macro":
            return float(np.mean([_wmean(v, w) for v, w in kept]))
        return (sum(float(w @ v) for v, w in kept) / sum(float(w.sum()) for _, w in kept))
    if average == "macro":
        return float(np.mean([np.mean(w) for w in wrong]))
    return sum(int(np.sum(w)) for w in wrong) / sum(len(w) for w in wrong)

