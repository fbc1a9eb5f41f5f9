"""Structure recovery: the support, the error and the rank of estimated weights, subspaces and
task similarities against the true ones."""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import ArrayLike
from scipy.linalg import subspace_angles
from sklearn.metrics import precision_recall_fscore_support

from multitask.metrics._layouts import _weight_matrices

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
    A, B = _weight_matrices(W_true, W)
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
    A, B = _weight_matrices(W_true, W)
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
