"""Row weights (scikit-learn's ``sample_weight``) in the three layouts, and their application.

The loss of task ``t`` is ``sum_{i in t} w_i ell_i / sum_{i in t} w_i``: integer weights repeat
rows and a zero weight drops one. Weights are finite numbers ``>= 0``, given per row (long
format), per row or per (row, task) pair (shared design), or per task (per-task lists).
"""

from __future__ import annotations

import numpy as np

from multitask.data.checks import _label, _real_array
from multitask.data.container import _offsets_of


def _weight_values(sample_weight, what: str = "sample_weight") -> np.ndarray:
    """``sample_weight`` as a float64 array (real numbers only, any shape; not checked)."""
    return _real_array(sample_weight, what, "an array").astype(np.float64)


def _check_weight_values(w: np.ndarray, locate) -> None:
    """Raise a ValueError naming the first NaN, infinite or negative weight of ``w`` (any
    shape) and where it is: ``locate(index)`` gives the place of a position of ``w``."""
    bad = np.argwhere(~np.isfinite(w))
    if bad.size:
        where = tuple(int(i) for i in bad[0])
        kind = "NaN" if np.isnan(w[where]) else "an infinite weight"
        raise ValueError(f"sample_weight contains {kind} (first at {locate(where)}): weights "
                         "must be finite numbers >= 0.")
    bad = np.argwhere(w < 0)
    if bad.size:
        where = tuple(int(i) for i in bad[0])
        raise ValueError(f"sample_weight has a negative weight {w[where]:g} (first at "
                         f"{locate(where)}): weights must be >= 0.")


def _list_weights(sample_weight, sizes: np.ndarray) -> np.ndarray:
    """Stacked weights of per-task lists: a list of one array per task, or one array of
    ``N = sum_t n_t`` weights in the stacked order."""
    m = len(sizes)
    if isinstance(sample_weight, (list, tuple)) and len(sample_weight) == m and all(
            np.ndim(v) == 1 for v in sample_weight):
        parts = [_weight_values(v, f"sample_weight of task {t}")
                 for t, v in enumerate(sample_weight)]
        for t, (v, n_t) in enumerate(zip(parts, sizes, strict=True)):
            if v.shape != (n_t,):
                raise ValueError(f"sample_weight of task {t} has {v.size} weights but the task "
                                 f"has {n_t} rows: give one weight per row.")
            _check_weight_values(v, lambda k, t=t: f"row {k[0]} of task {t}")
        return np.concatenate(parts)
    w = _weight_values(sample_weight)
    N = int(np.sum(sizes))
    if w.shape != (N,):
        raise ValueError(f"sample_weight has shape {w.shape}; with per-task lists give a list "
                         f"of {m} per-task arrays of weights, or one array of {N} weights (the "
                         "rows of all tasks in order).")
    starts = np.cumsum(sizes)

    def locate(k):
        t = int(np.searchsorted(starts, k[0], side="right"))
        return f"row {k[0] - (starts[t - 1] if t else 0)} of task {t}"

    _check_weight_values(w, locate)
    return w


def _long_weights(sample_weight, n: int, task) -> np.ndarray:
    """The ``(n,)`` weights of long-format rows (user order), checked."""
    w = _weight_values(sample_weight)
    if w.shape != (n,):
        raise ValueError(f"sample_weight has shape {w.shape} but X has {n} rows: give one "
                         f"weight per row, shape ({n},).")
    _check_weight_values(w, lambda k: f"row {k[0]}" + (
        f", task {_label(task[k[0]])}" if task is not None else ""))
    return w


def _shared_weights(sample_weight, n: int, m: int, labels) -> np.ndarray:
    """The stacked (task-major) weights of a shared design from ``(n,)`` (every task) or
    ``(n, m)`` (one per row and task) weights, checked."""
    w = _weight_values(sample_weight)
    if w.ndim == 2 and w.shape[1] == 1 and m == 1:
        w = w[:, 0]
    if w.shape == (n,):
        _check_weight_values(w, lambda k: f"row {k[0]}")
        return np.tile(w, m)
    if w.shape == (n, m):
        _check_weight_values(w, lambda k: f"row {k[0]}, task {_label(labels[k[1]])}")
        return np.ascontiguousarray(w.T).ravel()
    raise ValueError(f"sample_weight has shape {w.shape}; with a shared design of {n} rows and "
                     f"{m} tasks give one weight per row, shape ({n},), or one per row and "
                     f"task, shape ({n}, {m}).")


#: The weights are kept as given while the largest lies in ``[2^-WEIGHT_BAND, 2^WEIGHT_BAND]``.
WEIGHT_BAND = 64


def _unit_scaled(w: np.ndarray, offsets: np.ndarray, labels) -> np.ndarray:
    """Weights whose largest lies outside ``[2^-64, 2^64]`` (:data:`WEIGHT_BAND`) divided by
    ``2^e``, ``2^(e-1) <= max(w) < 2^e``: a common factor changes no model, and the largest
    weight in ``[1/2, 1)`` keeps the products of the weights with squared data clear of
    underflow (weights near ``5e-324`` gave another model) and overflow (near ``1.8e308``, no
    model). Exact (a power of two) for every weight that does not underflow against the
    largest; a task whose weights all would (more than ``2^1074`` times below the largest: a
    ratio beyond the float range) is refused, naming it. Weights in the band are kept."""
    top = float(w.max()) if w.size else 0.0
    if not top > 0.0 or 2.0 ** -WEIGHT_BAND <= top <= 2.0 ** WEIGHT_BAND:
        return w
    out = np.ldexp(w, -int(np.frexp(top)[1]))
    for t, (a, b) in enumerate(zip(offsets[:-1], offsets[1:], strict=True)):
        if np.any(w[a:b] > 0) and not np.any(out[a:b] > 0):
            raise ValueError(f"sample_weight of task {_label(labels[t])} is more than 2^1074 "
                             "times below the largest weight: the ratio leaves the range of "
                             "floating-point numbers; give weights within a narrower range.")
    return out


def _apply_weights(X, y, ys, sizes, order, weights, observed, shared: bool, labels):
    """Combine the user's weights and the observed targets into the stacked weights of the
    data; drop what weighs zero everywhere; check that every task weighs something.

    Returns ``(X, y, ys, sizes, order, weights)`` with ``weights`` None when every pair
    weighs the same (that changes nothing). Per-task and long-format rows of
    weight zero are dropped (the same data as without them); a shared design drops the rows
    that weigh zero in every task and keeps the other zeros (pairs not observed).
    """
    N = int(np.sum(sizes))
    w = np.ones(N) if weights is None else np.asarray(weights, dtype=np.float64)
    if observed is not None:
        w = np.where(observed, w, 0.0)
    offsets = _offsets_of(sizes)
    totals = np.add.reduceat(w, offsets[:-1]) if N else np.zeros(len(sizes))
    empty = np.flatnonzero(~(totals > 0))
    if empty.size:
        t = int(empty[0])
        if observed is not None and not observed[offsets[t]:offsets[t + 1]].any():
            raise ValueError(f"Task {_label(labels[t])} has no observed target: every target "
                             "of the task is missing (NaN), so there is nothing to fit.")
        raise ValueError(f"sample_weight is zero on every row of task {_label(labels[t])}: "
                         "the task has nothing to fit (drop it, or give a row a positive "
                         "weight).")
    w = _unit_scaled(w, offsets, labels)
    m = len(sizes)
    if shared:
        n = X.shape[0]
        W2 = w.reshape(m, n)
        keep = W2.max(axis=0) > 0
        if not keep.all():
            X = X[np.flatnonzero(keep)]
            W2 = W2[:, keep]
            ys = [v[keep] for v in ys]
            sizes = np.full(m, int(keep.sum()), dtype=np.int64)
            y = np.concatenate(ys)
        w = W2.ravel()
    else:
        keep = w > 0
        if not keep.all():
            task_of = np.repeat(np.arange(m), sizes)[keep]
            rows = np.flatnonzero(keep)
            X = X[rows]
            y = y[keep]
            w = w[keep]
            order = None if order is None else order[keep]
            sizes = np.bincount(task_of, minlength=m).astype(np.int64)
            ys = np.split(y, np.cumsum(sizes)[:-1])
    if np.all(w == w[0]):  # one weight for every pair: the same model as no weights
        return X, y, ys, sizes, order, None
    return X, y, ys, sizes, order, w
