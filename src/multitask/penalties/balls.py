"""Constraint sets ``{W : Omega(W) <= radius}`` with Euclidean projections.

``W`` has shape ``(n_features, n_tasks)``. The per-task balls accept one radius for all tasks
or one radius per task.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from multitask.penalties._l1ball_numba import column_l1ball_thresholds
from multitask.penalties.base import Constraint, RemembersProx, recalled
from multitask.penalties.prox import (
    _rescaling,
    project_l1_ball,
    project_trace_ball,
    soft_threshold,
    spectral_norm,
)

__all__ = ["ColumnL1Balls", "ColumnL2Balls", "L1Ball", "TraceBall"]


def _check_scalar_radius(radius) -> float:
    r = float(radius)
    if not np.isfinite(r) or r < 0:
        raise ValueError(f"radius must be finite and >= 0, got {radius!r}.")
    return r


class L1Ball(Constraint):
    """``{W : sum_jt |W_jt| <= radius}``."""

    name = "l1_ball"

    def __init__(self, radius: float):
        super().__init__(_check_scalar_radius(radius))

    def norm(self, W):
        return float(np.abs(W).sum())

    def support(self, G):
        """``radius ||G||_inf``."""
        return self.radius * float(np.abs(G).max()) if G.size else 0.0

    def project(self, V):
        return project_l1_ball(V, self.radius)


class TraceBall(RemembersProx, Constraint):
    """``{W : ||W||_* <= radius}``: SVD, then the singular values onto the l1 ball.

    A projection computed elsewhere (the compiled ADMM step of sparse + low rank) can record
    its output's nuclear norm (:meth:`remember_prox`), so that :meth:`norm` there costs no SVD.
    """

    name = "trace_ball"
    capabilities = frozenset({"low_rank"})

    def __init__(self, radius: float):
        super().__init__(_check_scalar_radius(radius))

    def norm(self, W):
        if not W.size:
            return 0.0
        cached = recalled(self._last, W)
        return float(np.linalg.svd(W, compute_uv=False).sum()) if cached is None else cached

    def remember_prox(self, out: np.ndarray, value: float,
                      singular_values: np.ndarray | None = None) -> None:
        """Record that ``out`` (a projection computed outside the ball) has nuclear norm
        ``value``."""
        self._last = (np.array(out, dtype=np.float64, copy=True), float(value))

    def support(self, G):
        """``radius ||G||_2`` (the spectral norm)."""
        return self.radius * spectral_norm(G) if G.size else 0.0

    def project(self, V):
        return project_trace_ball(V, self.radius)


class _ColumnBalls(Constraint):
    """Independent per-task balls ``{W : Omega(W_.t) <= radius_t for every task t}``."""

    def __init__(self, radius):
        r = np.asarray(radius, dtype=np.float64)
        if r.ndim > 1 or not np.all(np.isfinite(r)) or np.any(r < 0):
            raise ValueError(
                f"radius must be a number >= 0 or a 1-D array of per-task radii >= 0, got "
                f"{radius!r}."
            )
        super().__init__(float(r) if r.ndim == 0 else r)

    def _radii(self, m: int) -> np.ndarray:
        r = np.asarray(self.radius, dtype=np.float64)
        if r.ndim == 1 and r.shape[0] != m:
            raise ValueError(f"radius holds {r.shape[0]} per-task radii but W has {m} tasks.")
        return np.ascontiguousarray(np.broadcast_to(r, (m,)))

    def _column_norms(self, W) -> np.ndarray:
        raise NotImplementedError

    def _dual_column_norms(self, G) -> np.ndarray:
        raise NotImplementedError

    def support(self, G):
        """``sum_t radius_t Omega^*(G_.t)``."""
        if G.size == 0:
            return 0.0
        return float(self._radii(G.shape[1]) @ self._dual_column_norms(G))

    def norm(self, W):
        """``max_t Omega(W_.t) / radius_t`` (``<= 1`` on the set; the largest norm when all
        radii are equal and one number was given)."""
        if W.size == 0:
            return 0.0
        norms = self._column_norms(W)
        if np.ndim(self.radius) == 0:
            return float(norms.max())
        return float(np.max(norms / np.maximum(self._radii(W.shape[1]), 1e-300)))

    def value(self, W):
        if W.size == 0:
            return 0.0
        ok = self._column_norms(W) <= self._radii(W.shape[1]) * (1 + 1e-9) + 1e-12
        return 0.0 if np.all(ok) else np.inf

    def _repr_params(self) -> dict:
        r = self.radius
        return {"radius": r.tolist() if isinstance(r, np.ndarray) else r}


class ColumnL1Balls(_ColumnBalls):
    """``{W : ||W_.t||_1 <= radius_t for every task t}`` (independent l1 constraints).

    The projection ``sign(V_.t) * max(|V_.t| - theta_t, 0)`` uses per-column thresholds from
    one compiled loop.
    """

    name = "column_l1_balls"
    capabilities = frozenset({"lp"})

    def _column_norms(self, W):
        return np.abs(W).sum(axis=0)

    def _dual_column_norms(self, G):
        return np.abs(G).max(axis=0)

    def project(self, V):
        V = np.asarray(V, dtype=np.float64)
        # positively homogeneous: entries outside the safe band are rescaled by a power of
        # two first (prox.SAFE_EXPONENT), so that the compiled sums neither overflow nor vanish
        c = _rescaling(V, "ColumnL1Balls.project")
        if c != 1.0:
            return self._project_radii(V * c, self._radii(V.shape[1]) * c) / c
        return self._project_radii(V, self._radii(V.shape[1]))

    @staticmethod
    def _project_radii(V, radii):
        theta = column_l1ball_thresholds(V, radii)
        return soft_threshold(V, theta[None, :])

    def lp_constraints(self, d: int, m: int):
        """``-s_jt <= W_jt <= s_jt`` and ``sum_j s_jt <= radius_t``: ``n_aux = d m``.

        ``vec(W) = W.T.ravel()`` (task-major, index ``t d + j``), and ``s`` in the same order.
        """
        n = d * m
        eye = sp.identity(n, format="csr")
        A_w = sp.vstack([eye, -eye, sp.csr_matrix((m, n))], format="csr")
        k = np.arange(n)
        ball = sp.csr_matrix((np.ones(n), (k // d, k)), shape=(m, n))
        A_u = sp.vstack([-eye, -eye, ball], format="csr")
        c = np.concatenate([np.zeros(2 * n), self._radii(m)])
        return A_w, A_u, c, n


class ColumnL2Balls(_ColumnBalls):
    """``{W : ||W_.t||_2 <= radius_t for every task t}`` (independent l2 constraints)."""

    name = "column_l2_balls"

    def _column_norms(self, W):
        return np.linalg.norm(W, axis=0)

    def _dual_column_norms(self, G):
        return np.linalg.norm(G, axis=0)

    def project(self, V):
        V = np.asarray(V, dtype=np.float64)
        norms = np.linalg.norm(V, axis=0)
        scale = np.minimum(1.0, self._radii(V.shape[1]) / np.where(norms > 0, norms, 1.0))
        return V * scale[None, :]
