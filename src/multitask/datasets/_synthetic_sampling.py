"""The machinery of the synthetic generators (:mod:`multitask.datasets.synthetic`): checks
of their arguments, the low-rank weight matrices, and the draw of the designs, noise and
targets of every part for given true weights (the order of the random draws is said in the
docstring of :mod:`multitask.datasets.synthetic`)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from numbers import Integral, Real

import numpy as np
from numpy.typing import ArrayLike
from sklearn.utils import Bunch

_TASK_TYPES = ("regression", "classification")
_LOW_RANK_KINDS = ("gaussian", "orthonormal", "truncated_svd")
_SPARSE_VALUES = ("gaussian", "signed_uniform")
_MAX_REDRAWS = 100

Rng = np.random.RandomState | np.random.Generator


# ----------------------------------------------------------------------------- validation
def _check_int(name: str, value: object, low: int, high: int | None = None) -> int:
    if (
        not isinstance(value, Integral)
        or isinstance(value, bool)
        or value < low
        or (high is not None and value > high)
    ):
        bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be an integer {bound}, got {value!r}")
    return int(value)


def _check_real(name: str, value: object, low: float = 0.0) -> float:
    if not isinstance(value, Real) or isinstance(value, bool) or not value >= low:
        raise ValueError(f"{name} must be a number >= {low:g}, got {value!r}")
    return float(value)


def _check_common(
    n_tasks: int, n_features: int, noise: float, task_type: str
) -> tuple[int, int, float]:
    m = _check_int("n_tasks", n_tasks, 1)
    d = _check_int("n_features", n_features, 1)
    if not isinstance(noise, Real) or noise < 0:
        raise ValueError(f"noise must be a number >= 0, got {noise!r}")
    if task_type not in _TASK_TYPES:
        raise ValueError(f"task_type must be one of {_TASK_TYPES}, got {task_type!r}")
    return m, d, float(noise)


def _sample_sizes(
    n_samples: int | Sequence[int],
    n_tasks: int,
    shared_X: bool,
    name: str = "n_samples",
    allow_zero: bool = False,
) -> np.ndarray | None:
    """Rows per task as an int64 array, or None for an absent part (``allow_zero`` and 0)."""
    sizes = np.asarray(n_samples)
    if allow_zero and sizes.ndim == 0 and np.issubdtype(sizes.dtype, np.integer) and sizes == 0:
        return None
    if sizes.ndim == 0:
        sizes = np.full(n_tasks, sizes)
    if sizes.shape != (n_tasks,) or not np.issubdtype(sizes.dtype, np.integer):
        raise ValueError(f"{name} must be an int or a sequence of {n_tasks} ints")
    if np.any(sizes < 1):
        raise ValueError(f"{name} must be positive")
    if shared_X and np.any(sizes != sizes[0]):
        raise ValueError(f"shared_X=True needs the same {name} for every task")
    return sizes.astype(np.int64)


def _integers(rng: Rng, low: int, high: int) -> int:
    """One integer uniform in ``{low, ..., high - 1}`` from either kind of generator."""
    if isinstance(rng, np.random.Generator):
        return int(rng.integers(low, high))
    return int(rng.randint(low, high))


def _uniform(rng: Rng, size: int) -> np.ndarray:
    """``size`` uniform numbers in ``[0, 1)`` from either kind of generator."""
    if isinstance(rng, np.random.Generator):
        return rng.random(size)
    return rng.random_sample(size)


# ----------------------------------------------------------------------------- weights
def _low_rank(
    d: int, m: int, rank: int, rng: Rng, kind: str = "gaussian", scale: float = 1.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A ``(d, m)`` matrix of rank ``rank`` and its factors ``U`` (d, rank), ``V`` (m, rank).

    ``"gaussian"``: ``scale * U @ V.T / sqrt(rank)``, ``U`` then ``V`` standard normal.
    ``"orthonormal"``: ``scale * U @ V.T``, ``U`` and ``V`` the Q factors of standard normal
    ``(d, rank)`` and ``(m, rank)`` matrices (drawn in this order): all ``rank`` nonzero
    singular values equal ``scale``.
    ``"truncated_svd"``: a standard normal ``(d, m)`` matrix with all but its ``rank`` largest
    singular values set to zero, times ``scale``; ``U``, ``V`` its leading singular vectors.
    """
    if kind not in _LOW_RANK_KINDS:
        raise ValueError(f"low_rank must be one of {_LOW_RANK_KINDS}, got {kind!r}")
    if kind == "gaussian":
        U = rng.standard_normal((d, rank))
        V = rng.standard_normal((m, rank))
        Q = U @ V.T / np.sqrt(rank)
        if scale != 1.0:
            Q = scale * Q
    elif kind == "orthonormal":
        U = np.linalg.qr(rng.standard_normal((d, rank)))[0]
        V = np.linalg.qr(rng.standard_normal((m, rank)))[0]
        Q = scale * U @ V.T
    else:
        Uf, s, Vt = np.linalg.svd(rng.standard_normal((d, m)), full_matrices=False)
        s[rank:] = 0.0
        Q = (Uf * s) @ Vt
        if scale != 1.0:
            Q = scale * Q
        U, V = Uf[:, :rank], Vt[:rank].T
    return Q, U, V


def _check_low_rank(low_rank: str, low_rank_scale: float) -> float:
    if low_rank not in _LOW_RANK_KINDS:
        raise ValueError(f"low_rank must be one of {_LOW_RANK_KINDS}, got {low_rank!r}")
    return _check_real("low_rank_scale", low_rank_scale)


# ----------------------------------------------------------------------------- sampling
def _sampling(
    n_tasks: int,
    task_type: str,
    shared_X: bool,
    n_samples: int | Sequence[int],
    n_val: int | Sequence[int],
    n_test: int | Sequence[int],
    intercept: ArrayLike,
    design_shift: float,
    ensure_both_classes: bool,
) -> dict:
    """The checked sampling options of a linear generator: ``{"parts": [(suffix, rows per
    task)], "intercept", "design_shift", "ensure_both_classes"}``, the parts in the order
    they are drawn (training, validation, test; an absent part left out)."""
    parts = [("", _sample_sizes(n_samples, n_tasks, shared_X))]
    for name, value in (("val", n_val), ("test", n_test)):
        sizes = _sample_sizes(value, n_tasks, shared_X, f"n_{name}", allow_zero=True)
        if sizes is not None:
            parts.append((f"_{name}", sizes))
    b = np.array(intercept, dtype=np.float64)  # a copy: returned in the bunch
    if b.ndim == 0:
        b = np.full(n_tasks, float(b))
    if b.shape != (n_tasks,) or not np.all(np.isfinite(b)):
        raise ValueError(f"intercept must be a finite number or {n_tasks} finite numbers")
    shift = _check_real("design_shift", design_shift)
    if not isinstance(ensure_both_classes, (bool, np.bool_)):
        raise ValueError(f"ensure_both_classes must be a bool, got {ensure_both_classes!r}")
    if ensure_both_classes and task_type != "classification":
        raise ValueError("ensure_both_classes=True needs task_type='classification'")
    return {"parts": parts, "intercept": b, "design_shift": shift,
            "ensure_both_classes": bool(ensure_both_classes)}


def _design(n: int, d: int, shift: float, normalize_rows: bool, rng: Rng) -> np.ndarray:
    """Standard normal ``(n, d)`` rows, plus a random shift, optionally of unit norm."""
    X = rng.standard_normal((n, d))
    if shift > 0:
        X = X + shift * rng.standard_normal(d)
    if normalize_rows:
        norms = np.linalg.norm(X, axis=1, keepdims=True)
        X = X / np.where(norms > 0, norms, 1.0)
    return X


def _respond(score: np.ndarray, task_type: str) -> np.ndarray:
    return score if task_type == "regression" else (score > 0).astype(np.int64)


def _both_classes(y: np.ndarray) -> bool:
    """True when every column (task) of ``y`` holds both labels, or has fewer than 2 rows."""
    n = y.shape[0]
    if n < 2:
        return True
    pos = np.sum(y, axis=0)
    return bool(np.all((pos > 0) & (pos < n)))


def _draw_part(
    W: np.ndarray,
    b: np.ndarray,
    sizes: np.ndarray,
    noise: float,
    shared_X: bool,
    task_type: str,
    shift: float,
    normalize_rows: bool,
    ensure: bool,
    rng: Rng,
) -> tuple:
    """One part (training, validation or test): ``(X, Y)`` shared or ``(Xs, ys)`` lists."""
    d = W.shape[0]
    add_b = bool(np.any(b != 0))

    def respond(X: np.ndarray, cols: int | slice) -> np.ndarray:
        score = X @ W[:, cols]
        if add_b:
            score = score + b[cols]
        if noise > 0:
            score = score + noise * rng.standard_normal(score.shape)
        return _respond(score, task_type)

    def redrawn(n: int, cols: int | slice, where: str) -> tuple[np.ndarray, np.ndarray]:
        for _ in range(_MAX_REDRAWS if ensure else 1):
            X = _design(n, d, shift, normalize_rows, rng)
            Y = respond(X, cols)
            if not ensure or _both_classes(Y):
                return X, Y
        _warn_one_class(where)
        return X, Y

    if shared_X:
        return redrawn(int(sizes[0]), slice(None), "the shared design")
    if ensure:
        Xs, ys = [], []
        for t, n in enumerate(sizes):  # a loop, not a comprehension: the warning's stacklevel
            X_t, y_t = redrawn(int(n), t, f"task {t}")
            Xs.append(X_t)
            ys.append(y_t)
        return Xs, ys
    Xs = [_design(int(n), d, shift, normalize_rows, rng) for n in sizes]
    return Xs, [respond(X_t, t) for t, X_t in enumerate(Xs)]


def _warn_one_class(where: str) -> None:
    warnings.warn(
        f"ensure_both_classes: {where} still holds one class after {_MAX_REDRAWS} draws; "
        "the last draw is kept.",
        UserWarning,
        stacklevel=6,
    )


def _simulate(
    W: np.ndarray,
    rng: Rng,
    noise: float,
    shared_X: bool,
    task_type: str,
    normalize_rows: bool,
    sampling: dict,
) -> Bunch:
    """Draw every part for the true weights ``W`` (d, m); see the module docstring."""
    b = sampling["intercept"]
    bunch = Bunch(task_type=task_type, noise=noise, intercept=b)
    for suffix, sizes in sampling["parts"]:
        X, Y = _draw_part(W, b, sizes, noise, shared_X, task_type, sampling["design_shift"],
                          normalize_rows, sampling["ensure_both_classes"], rng)
        bunch["X" + suffix] = X
        bunch[("Y" if shared_X else "y") + suffix] = Y
    bunch.W_true = W
    return bunch

