"""Constraint sets ``{W : Omega(W) <= radius}`` with Euclidean projections.

``W`` has shape ``(n_features, n_tasks)``.
"""

from __future__ import annotations

import numpy as np

from multitask.penalties._l1ball_numba import _column_l1ball_thresholds
from multitask.penalties._prox import project_l1_ball, project_trace_ball, soft_threshold
from multitask.penalties.base import Constraint

__all__ = ["L1Ball", "TraceBall", "ColumnL1Balls", "ColumnL2Balls"]


class L1Ball(Constraint):
    """``{W : sum_jt |W_jt| <= radius}``."""

    name = "l1_ball"

    def norm(self, W):
        return float(np.abs(W).sum())

    def project(self, V):
        return project_l1_ball(V, self.radius)


class TraceBall(Constraint):
    """``{W : ||W||_* <= radius}``: SVD, then the singular values onto the l1 ball."""

    name = "trace_ball"

    def norm(self, W):
        return float(np.linalg.svd(W, compute_uv=False).sum()) if W.size else 0.0

    def project(self, V):
        return project_trace_ball(V, self.radius)


class ColumnL1Balls(Constraint):
    """``{W : ||W_.t||_1 <= radius for every task t}`` (independent l1 constraints).

    ``radius`` is one number, or (subclasses) one value per task: the projection
    ``sign(V_.t) * max(|V_.t| - theta_t, 0)`` uses per-column thresholds from one compiled
    loop.
    """

    name = "column_l1_balls"

    def norm(self, W):
        return float(np.abs(W).sum(axis=0).max()) if W.size else 0.0

    def project(self, V):
        V = np.asarray(V, dtype=np.float64)
        radius = np.broadcast_to(np.asarray(self.radius, dtype=np.float64), (V.shape[1],))
        if np.any(radius < 0) or not np.all(np.isfinite(radius)):
            raise ValueError(f"radius must be finite and >= 0, got {self.radius!r}.")
        theta = _column_l1ball_thresholds(V, np.ascontiguousarray(radius))
        return soft_threshold(V, theta[None, :])


class ColumnL2Balls(Constraint):
    """``{W : ||W_.t||_2 <= radius for every task t}`` (independent l2 constraints)."""

    name = "column_l2_balls"

    def norm(self, W):
        return float(np.linalg.norm(W, axis=0).max()) if W.size else 0.0

    def project(self, V):
        norms = np.linalg.norm(V, axis=0, keepdims=True)
        scale = np.minimum(1.0, self.radius / np.where(norms > 0, norms, 1.0))
        return V * scale
