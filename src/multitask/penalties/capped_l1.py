"""Capped l1,l1 penalty of multi-stage multi-task feature learning (MSMTFL) and its stages.

Gong, Ye & Zhang, "Multi-stage multi-task feature learning", NIPS 2012. ``W`` has shape
``(n_features, n_tasks)``; ``W_j.`` is the row of feature ``j``.

* :class:`CappedL1`: ``alpha * sum_j min(||W_j.||_1, theta)`` (non-convex; value only). Rows
  whose l1 norm reaches ``theta`` cost the constant ``alpha theta``: large, shared features
  are not shrunk, unlike the lasso.
* :class:`RowWeightedL1`: ``sum_j c_j ||W_j.||_1``, the stage penalty; prox: soft-thresholding
  of row ``j`` at ``step * c_j``.

The multi-stage argument: for every ``W`` and reference ``W_ref``, with
``capped_j = [||W_ref,j.||_1 >= theta]``,

    min(a_j, theta) <= (1 - capped_j) a_j + capped_j theta,     a_j = ||W_j.||_1,

with equality at ``W = W_ref``. So ``RowWeightedL1(alpha (1 - capped))`` majorizes the capped
penalty up to the constant ``alpha theta #capped`` and is tight at ``W_ref``: the
``"stages"`` capability, solved by :class:`multitask.solvers.Multistage` (the stage ``l``
problem is MSMTFL's weighted lasso with weights ``lambda * [||W^(l-1)_j.||_1 < theta]``).
"""

from __future__ import annotations

import numpy as np

from multitask.penalties.base import DualBound, Penalty

__all__ = ["CappedL1", "RowWeightedL1"]


class RowWeightedL1(Penalty):
    """``sum_j c_j ||W_j.||_1`` with a non-negative weight ``c_j`` per feature row (convex).

    prox: ``sign(V_jt) max(|V_jt| - step c_j, 0)``. ``alpha_max`` is the smallest factor
    ``a`` for which ``W = 0`` minimizes ``f + a * sum_j c_j ||W_j.||_1``:
    ``max_j max_t |G_jt| / c_j`` (``inf`` when a row with ``c_j = 0`` has a non-zero gradient).
    ``"row_prox"``: the elastic-net row operators with per-row strengths ``(c, 0, 0)`` (block
    coordinate descent minimizes each entry exactly; the rows with ``c_j = 0`` are free).

    Parameters
    ----------
    weights : array-like of shape (n_features,)
        ``c_j >= 0``.
    """

    name = "row_weighted_l1"
    capabilities = frozenset({"row_prox"})

    def __init__(self, weights):
        self.weights = np.asarray(weights, dtype=np.float64).ravel()
        if not (np.all(np.isfinite(self.weights)) and np.all(self.weights >= 0)):
            raise ValueError("weights must be finite and >= 0.")

    def _repr_params(self) -> dict:
        return {"weights.shape": self.weights.shape}

    def _check(self, W: np.ndarray) -> None:
        if W.shape[0] != self.weights.size:
            raise ValueError(f"RowWeightedL1 has {self.weights.size} weights but W has "
                             f"{W.shape[0]} rows.")

    def value(self, W):
        self._check(W)
        return float(self.weights @ np.abs(W).sum(axis=1))

    def prox(self, V, step):
        V = np.asarray(V, dtype=np.float64)
        self._check(V)
        thresh = (step * self.weights)[:, None]
        return np.sign(V) * np.maximum(np.abs(V) - thresh, 0.0)

    def row_prox_params(self):
        """``(weights, 0, 0)``: a per-row l1 strength."""
        return (self.weights, 0.0, 0.0)

    def alpha_max(self, grad):
        self._check(grad)
        g = np.max(np.abs(grad), axis=1) if grad.size else np.zeros(self.weights.size)
        free = self.weights == 0
        if np.any(g[free] > 0):
            return float("inf")
        ratio = g[~free] / self.weights[~free]
        return float(ratio.max()) if ratio.size else 0.0

    def dual_bound(self, G):
        """``s_max = min_j c_j / ||G_j.||_inf``; a row with ``c_j = 0`` (not penalized)
        needs ``G_j. = 0`` (else ``s_max = 0``: the certificate then re-optimizes those rows
        first, see :meth:`free_directions`)."""
        self._check(G)
        g = np.max(np.abs(G), axis=1) if G.size else np.zeros(self.weights.size)
        free = self.weights == 0
        if np.any(g[free] > 0):
            return DualBound(0.0)
        pos = (~free) & (g > 0)
        return DualBound(float(np.min(self.weights[pos] / g[pos])) if pos.any()
                         else float("inf"))

    def free_directions(self, shape: tuple[int, ...], ridge: float = 0.0):
        """``(rows, None)``: the rows the penalty leaves free (weight 0), every entry of them
        (``None``: each task on its own); ``None`` when every row is penalized."""
        free = self.weights == 0
        return (free, None) if free.any() else None

    def restrict_rows(self, rows) -> RowWeightedL1:
        """The penalty on the feature rows ``rows`` alone (a working set's subproblem)."""
        return RowWeightedL1(self.weights[np.asarray(rows, dtype=np.int64)])


class CappedL1(Penalty):
    """``alpha * sum_j min(||W_j.||_1, theta)``: the capped l1,l1 penalty (non-convex).

    ``theta = inf`` is the lasso ``alpha ||W||_1``; ``theta = 0`` the zero penalty. It has no
    simple prox; it offers the ``"stages"`` capability (module docstring): the stage penalty at
    ``W_ref`` is :class:`RowWeightedL1` with weights ``alpha`` on the rows whose l1 norm is
    below ``theta`` and 0 on the others. Solved by :class:`multitask.solvers.Multistage`.

    Parameters
    ----------
    alpha : float
        ``>= 0``.
    theta : float
        Cap ``>= 0`` (``inf`` allowed), on the scale of the row l1 norms of ``W``.
    """

    name = "capped_l1"
    is_convex = False
    has_prox = False
    capabilities = frozenset({"stages"})

    def __init__(self, alpha: float, theta: float):
        self.alpha = float(alpha)
        self.theta = float(theta)
        if not (np.isfinite(self.alpha) and self.alpha >= 0):
            raise ValueError(f"alpha must be finite and >= 0, got {alpha!r}.")
        if np.isnan(self.theta) or self.theta < 0:
            raise ValueError(f"theta must be >= 0 (inf allowed), got {theta!r}.")

    def _repr_params(self) -> dict:
        return {"alpha": self.alpha, "theta": self.theta}

    def value(self, W):
        return self.alpha * float(np.minimum(np.abs(W).sum(axis=1), self.theta).sum())

    def prox(self, V, step):
        raise NotImplementedError(
            "CappedL1 has no prox: solve it stage by stage (multitask.solvers.Multistage), "
            "whose stages use RowWeightedL1."
        )

    def capped(self, W: np.ndarray) -> np.ndarray:
        """Boolean mask of the rows with ``||W_j.||_1 >= theta`` (not penalized next stage)."""
        return np.abs(W).sum(axis=1) >= self.theta

    def stage_key(self, W):
        """The capped rows, as a tuple of indices (equal keys: equal stage problems)."""
        return tuple(int(j) for j in np.flatnonzero(self.capped(W)))

    def stage_penalty(self, W):
        return RowWeightedL1(self.alpha * (~self.capped(W)))

    def stage_offset(self, W) -> float:
        """``alpha theta #capped``: the constant by which the stage penalty at ``W`` differs
        from the capped penalty at ``W``."""
        n = int(np.count_nonzero(self.capped(W)))
        return self.alpha * n * self.theta if n else 0.0

    def alpha_max(self, grad):
        """``max |G|`` (the lasso's): the first stage, from ``W = 0``, is the lasso, whose
        solution is then 0, and no row reaches ``theta > 0``. ``inf`` when ``theta = 0``
        (nothing is penalized)."""
        if self.theta == 0:
            return float("inf")
        return float(np.max(np.abs(grad))) if grad.size else 0.0
