"""Elementary proximal operators and projections, as plain functions.

These are the building blocks of the penalty objects; each returns a new array and never
modifies its input.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from multitask.penalties._l1ball_numba import l1ball_threshold

__all__ = [
    "project_l1_ball",
    "safe_svd",
    "soft_threshold",
    "svt",
    "svt_with_values",
    "project_trace_ball",
    "group_soft_threshold",
]


def soft_threshold(V: np.ndarray, thresh: float) -> np.ndarray:
    """Entrywise soft-thresholding ``sign(V) * max(|V| - thresh, 0)``.

    This is the prox of ``thresh * ||.||_1``.
    """
    return np.sign(V) * np.maximum(np.abs(V) - thresh, 0.0)


def group_soft_threshold(V: np.ndarray, thresh: float, axis: int) -> np.ndarray:
    """Block soft-thresholding ``v_g * max(1 - thresh / ||v_g||_2, 0)`` over groups.

    ``axis=1`` makes the rows the groups (l2,1 over features), ``axis=0`` the columns (tasks).
    """
    norms = np.linalg.norm(V, axis=axis, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(norms > thresh, 1.0 - thresh / np.where(norms > 0, norms, 1.0), 0.0)
    return V * scale


def safe_svd(V: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Thin SVD ``V = U diag(s) Vt`` with LAPACK ``gesdd``, falling back to ``gesvd``."""
    try:
        return scipy.linalg.svd(V, full_matrices=False, check_finite=False, lapack_driver="gesdd")
    except np.linalg.LinAlgError:
        return scipy.linalg.svd(V, full_matrices=False, check_finite=False, lapack_driver="gesvd")


def svt(V: np.ndarray, thresh: float, return_rank: bool = False):
    """Singular value thresholding ``U diag(max(s - thresh, 0)) Vt``: prox of ``thresh*||.||_*``."""
    out, s = svt_with_values(V, thresh)
    return (out, len(s)) if return_rank else out


def svt_with_values(V: np.ndarray, thresh: float) -> tuple[np.ndarray, np.ndarray]:
    """Singular value thresholding that also returns the kept singular values.

    Returns ``(U_r diag(s_r) Vt_r, s_r)`` with ``s_r = (s - thresh)_+`` restricted to its positive
    entries (so ``s_r.sum()`` is the trace norm of the result and ``len(s_r)`` its rank).
    """
    if V.size == 0:
        return V.copy(), np.zeros(0)
    U, s, Vt = safe_svd(V)
    s = np.maximum(s - thresh, 0.0)
    r = int(np.count_nonzero(s))
    return (U[:, :r] * s[:r]) @ Vt[:r], s[:r].copy()


def project_l1_ball(v: np.ndarray, radius: float, *, seed: int = 0) -> np.ndarray:
    """Euclidean projection of ``v`` (any shape, flattened) onto ``{x : ||x||_1 <= radius}``.

    ``x = sign(v) * max(|v| - theta, 0)`` with ``theta >= 0`` the smallest value making
    ``||x||_1 <= radius``; ``theta`` is found by randomized pivoting in expected linear time
    (Duchi, Shalev-Shwartz, Singer & Chandra, "Efficient projections onto the l1-ball for
    learning in high dimensions").
    """
    v = np.asarray(v, dtype=np.float64)
    if radius < 0 or not np.isfinite(radius):
        raise ValueError(f"radius must be finite and >= 0, got {radius!r}.")
    if radius == 0:
        return np.zeros_like(v)
    if np.abs(v).sum() <= radius:
        return v.copy()
    theta = l1ball_threshold(v.ravel(), float(radius), seed)
    return soft_threshold(v, theta)


def project_trace_ball(V: np.ndarray, radius: float, return_rank: bool = False):
    """Projection onto ``{W : ||W||_* <= radius}``.

    SVD, then the singular values onto the l1 ball.
    """
    if radius < 0 or not np.isfinite(radius):
        raise ValueError(f"radius must be finite and >= 0, got {radius!r}.")
    U, s, Vt = safe_svd(V)
    if s.sum() <= radius:
        out = V.copy()
        r = int(np.count_nonzero(s > 0))
    else:
        s = project_l1_ball(s, radius)
        r = int(np.count_nonzero(s))
        out = (U[:, :r] * s[:r]) @ Vt[:r]
    return (out, r) if return_rank else out
