"""Anderson's extrapolation of the iterates of a coordinate descent.

Given the iterates ``x_0, ..., x_A`` since the last extrapolation and their differences
``u_k = x_k - x_{k-1}`` (``U`` of shape ``(A, size)``), the extrapolated point is
``sum_k c_k x_k`` with ``c = z / sum(z)`` and ``z`` the solution of
``(U U^T + 1e-10 tr(U U^T) I) z = 1`` (the regularized, normalized least-squares
combination of the differences: Anderson, "Iterative procedures for nonlinear integral
equations", 1965; as used for coordinate descent by Bertrand & Massias, "Anderson
acceleration of coordinate descent", 2021). The solvers keep the point only when it lowers
their objective.
"""

from __future__ import annotations

import numpy as np

__all__ = ["anderson_point"]


def anderson_point(hist: np.ndarray) -> np.ndarray | None:
    """The extrapolated point ``sum_{k >= 1} c_k hist[k]`` of the stacked iterates ``hist``
    (shape ``(A + 1, ...)``), or ``None`` when the differences vanish or the combination is
    not defined (a singular or non-finite system)."""
    A = hist.shape[0] - 1
    U = np.diff(hist, axis=0).reshape(A, -1)
    G = U @ U.T
    trace = float(np.trace(G))
    if not trace > 0.0:
        return None
    G[np.diag_indices(A)] += 1e-10 * trace
    try:
        z = np.linalg.solve(G, np.ones(A))
    except np.linalg.LinAlgError:
        return None
    total = float(z.sum())
    if not (np.isfinite(total) and total != 0.0):
        return None
    return np.tensordot(z / total, hist[1:], axes=1)
