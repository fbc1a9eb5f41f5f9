"""The scores of the estimators' ``score`` methods from predictions: the scored (row, task)
pairs flattened or per task (a shared design's columns), their weights, the missing targets
left out, and predictions mapped over the layout of the input (a list of per-task arrays or
one array)."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import r2_score

from multitask.data import observed_mask


def map_output(scores, fn):
    if isinstance(scores, list):
        return [fn(s) for s in scores]
    return fn(scores)



def r2(y, pred, w) -> float:
    return float(r2_score(y, pred, sample_weight=w))


def _score_weights(sample_weight, shape: tuple[int, ...]) -> np.ndarray | None:
    """Weights of scored targets of ``shape`` (``(n,)`` or ``(n, m)``): ``(n,)`` weights apply
    to every task of a row; ``(n, m)`` ones to one (row, task) pair each. None without."""
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight, dtype=np.float64)
    if len(shape) == 2 and w.shape == shape[:1]:
        w = np.repeat(w[:, None], shape[1], axis=1)
    if w.shape != shape:
        raise ValueError(f"sample_weight has shape {w.shape} but the targets have shape "
                         f"{shape}.")
    return w


def flat_scored(y, pred, sample_weight, ignore_missing: bool, keep_shape: bool = False):
    """``(y, pred, w)`` of the scored (row, task) pairs, flattened (per-task lists
    concatenated), the missing targets left out with ``ignore_missing``. With ``keep_shape``
    and no missing target the arrays keep their shape (scikit-learn's multi-output
    metrics)."""
    if isinstance(pred, list):
        yt = np.concatenate([np.ravel(v) for v in y])
        pt = np.concatenate([np.ravel(v) for v in pred])
        w = None
        if sample_weight is not None:
            w = (np.concatenate([np.ravel(v) for v in sample_weight])
                 if isinstance(sample_weight, (list, tuple)) else np.ravel(sample_weight))
            w = _score_weights(w, yt.shape)
    else:
        yt, pt = np.asarray(y), np.asarray(pred)
        if yt.ndim == 2 and yt.shape[1] == 1 and pt.ndim == 1:
            yt = yt[:, 0]
        w = _score_weights(sample_weight, yt.shape)
    seen = observed_mask(yt) if ignore_missing else None
    if seen is not None and not seen.all():
        return yt[seen], pt[seen], _unit_weights(None if w is None else w[seen])
    if keep_shape:  # (n,) weights of an (n, m) table: scikit-learn repeats them per column
        return yt, pt, _unit_weights(None if w is None else (w[:, 0] if w.ndim == 2 else w))
    return yt.ravel(), pt.ravel(), _unit_weights(None if w is None else w.ravel())


def _unit_weights(w: np.ndarray | None) -> np.ndarray | None:
    """``w / 2^e`` with ``2^(e-1) <= max(w) < 2^e``: a score is a ratio of weighted sums, which
    a common factor does not change, and the largest weight in ``[1/2, 1)`` keeps those sums
    clear of overflow (weights near the largest float gave NaN) and underflow. Exact (a power
    of two)."""
    if w is None or not w.size:
        return w
    top = float(np.max(w))
    return np.ldexp(w, -int(np.frexp(top)[1])) if np.isfinite(top) and top > 0 else w


def column_scored(y, pred, sample_weight, ignore_missing: bool):
    """``(y_t, pred_t, w_t)`` per task (column) of a shared design, each on its observed
    rows with ``ignore_missing``."""
    Y, P = np.asarray(y), np.asarray(pred)
    w = _score_weights(sample_weight, Y.shape)
    seen = observed_mask(Y) if ignore_missing else np.ones(Y.shape, dtype=bool)
    out = []
    for t in range(Y.shape[1]):
        rows = seen[:, t]
        out.append((Y[rows, t].astype(np.float64), P[rows, t],
                    _unit_weights(None if w is None else w[rows, t])))
    return out

