"""Row weights of the metrics: split like the targets, checked, and rescaled.

Every weighted figure is a ratio of weighted sums (``sum_i w_i v_i / sum_i w_i``, an ROC AUC's
``sum_{i, j} w_i w_j [...] / (sum_i w_i sum_j w_j)``), unchanged when the weights are
multiplied by a constant ``c > 0``. In floating point it is not: weights near the smallest
subnormal number lose their digits in the products ``w_i v_i`` (constant weights ``5e-324``
gave another nMSE than no weights), and sums or products of weights near the largest float
overflow. So the weights are divided by ``2^e``, the power of two with
``2^(e-1) <= max_i w_i < 2^e``, before any sum: an exact operation for every weight that does
not underflow, which leaves the largest weight in ``[1/2, 1)``; a weight below ``2^-1074`` times
the largest becomes 0, which changes the figure by less than rounding.
"""

from __future__ import annotations

import numpy as np

from multitask.metrics._layouts import Layout, per_task


def _task_weights(sample_weight: Layout, y_true: Layout, task, n_pairs: int) -> list[np.ndarray]:
    """``sample_weight`` split like :func:`per_task` splits ``y_true``: one array per task.

    The layouts: a list of per-task arrays (per-task lists), ``(n,)`` with 1-D ``y_true`` (and
    ``task``), ``(n,)`` (a weight per row, for every task) or ``(n, m)`` (one per row and task)
    with 2-D ``y_true``. Weights must be finite and non-negative (not rescaled: see
    :func:`rescaled`).
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


def unit_scale(w: np.ndarray) -> np.ndarray:
    """``w / 2^e`` with ``2^(e-1) <= max(w) < 2^e`` (module docstring): the largest weight in
    ``[1/2, 1)``, the ratios of the others kept exactly (down to underflow). Weights that are
    all zero, or an empty array, are returned as they are."""
    w = np.asarray(w, dtype=np.float64)
    top = float(np.max(w)) if w.size else 0.0
    if not top > 0.0:
        return w
    exponent = int(np.frexp(top)[1])
    return np.ldexp(w, -exponent)


def rescaled(parts: list, per_task: bool) -> list:
    """The per-task weights ``parts`` (None entries kept) rescaled by :func:`unit_scale`: each
    task by its own largest weight (``per_task``: figures computed task by task, whose value a
    task's common factor does not change), or all by the largest over every task (pooled
    figures, where the ratios between tasks count)."""
    if per_task:
        return [None if w is None else unit_scale(w) for w in parts]
    present = [np.asarray(w, dtype=np.float64) for w in parts if w is not None]
    if not present:
        return list(parts)
    top = max((float(np.max(w)) if w.size else 0.0) for w in present)
    if not top > 0.0:
        return list(parts)
    exponent = int(np.frexp(top)[1])
    return [None if w is None else np.ldexp(np.asarray(w, dtype=np.float64), -exponent)
            for w in parts]


def _weighted_pairs(y_true: Layout, y_pred: Layout, task, sample_weight,
                    drop_empty: bool = True, scale: str = "pooled"):
    """:func:`per_task` pairs with their weights, ``[(y_t, f_t, w_t)]`` (``w_t`` None without
    ``sample_weight``); with weights, the entries of weight zero are left out (a missing
    target of a scorer), and a task left without any is left out (kept, empty, when not
    ``drop_empty``). The weights kept are :func:`rescaled`: ``scale="pooled"`` by the
    largest over every task, ``"task"`` task by task, ``"none"`` not (the caller rescales)."""
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
    if scale == "none":
        return out
    scaled = rescaled([w for _, _, w in out], per_task=scale == "task")
    return [(a, b, w) for (a, b, _), w in zip(out, scaled, strict=True)]


def _wmean(v: np.ndarray, w: np.ndarray | None) -> float:
    """``mean(v)``, or ``sum_i w_i v_i / sum_i w_i``."""
    return float(np.mean(v)) if w is None else float(np.average(v, weights=w))


def _wvar(v: np.ndarray, w: np.ndarray | None) -> float:
    """``var(v)``, or the weighted variance ``sum_i w_i (v_i - mean_w)^2 / sum_i w_i``."""
    if w is None:
        return float(np.var(v))
    v = np.asarray(v, dtype=np.float64)
    return _wmean((v - _wmean(v, w)) ** 2, w)
