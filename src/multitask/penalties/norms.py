"""Norm penalties ``lam * Omega(W)`` with closed-form proximal operators.

``W`` has shape ``(n_features, n_tasks)``.
"""

from __future__ import annotations

import numpy as np

from multitask.penalties._prox import group_soft_threshold, soft_threshold, svt
from multitask.penalties.base import Penalty

__all__ = ["L1", "L21", "TraceNorm", "ColumnL2", "Ridge", "NoPenalty"]


class _Scaled(Penalty):
    def __init__(self, lam: float):
        self.lam = float(lam)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(lam={self.lam!r})"


class L1(_Scaled):
    """``lam * sum_jt |W_jt|``; prox: soft-thresholding at ``step * lam``."""

    name = "l1"

    def value(self, W):
        return self.lam * float(np.abs(W).sum())

    def prox(self, V, step):
        return soft_threshold(V, step * self.lam)


class L21(_Scaled):
    """``lam * sum_j ||W_j.||_2`` over feature rows (joint feature selection).

    prox: each row ``v_j`` scaled by ``max(1 - step * lam / ||v_j||_2, 0)``.
    """

    name = "l21"

    def value(self, W):
        return self.lam * float(np.linalg.norm(W, axis=1).sum())

    def prox(self, V, step):
        return group_soft_threshold(V, step * self.lam, axis=1)


class ColumnL2(_Scaled):
    """``lam * sum_t ||W_.t||_2`` over task columns (a few tasks with their own weights).

    prox: each column scaled by ``max(1 - step * lam / ||v_t||_2, 0)``.
    """

    name = "column_l2"

    def value(self, W):
        return self.lam * float(np.linalg.norm(W, axis=0).sum())

    def prox(self, V, step):
        return group_soft_threshold(V, step * self.lam, axis=0)


class TraceNorm(_Scaled):
    """``lam * ||W||_* = lam * sum_i sigma_i(W)``; prox: singular value thresholding."""

    name = "trace"

    def value(self, W):
        if W.size == 0:
            return 0.0
        return self.lam * float(np.linalg.svd(W, compute_uv=False).sum())

    def prox(self, V, step):
        return svt(V, step * self.lam)


class Ridge(_Scaled):
    """``(lam / 2) * ||W||_F^2``; prox: ``V / (1 + step * lam)``."""

    name = "ridge"

    def value(self, W):
        return 0.5 * self.lam * float(np.sum(W * W))

    def prox(self, V, step):
        return V / (1.0 + step * self.lam)


class NoPenalty(Penalty):
    """The zero penalty (prox is the identity)."""

    name = "none"

    def value(self, W):
        return 0.0

    def prox(self, V, step):
        return np.array(V, copy=True)
