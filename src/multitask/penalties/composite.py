"""Composite variables: ``W`` as a linear image of a stacked variable.

Models such as sparse + low-rank (``W = P + Q``) or low-rank + outlier tasks (``W = L + E``)
optimize a stacked variable ``V`` of shape ``(k, d, m)`` with a separable penalty
``sum_i Omega_i(V[i])``; the loss sees ``W = A(V)``. The solvers only need the map ``A``, its
adjoint and ``||A||^2`` (which multiplies the loss's Lipschitz constant).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from multitask.penalties.base import Penalty

__all__ = ["IdentityMap", "SumMap", "BlockPenalty"]


class IdentityMap:
    """``A(V) = V``."""

    norm_sq = 1.0

    def variable_shape(self, d: int, m: int) -> tuple[int, ...]:
        return (d, m)

    def forward(self, V: np.ndarray) -> np.ndarray:
        return V

    def adjoint(self, G: np.ndarray) -> np.ndarray:
        return G


class SumMap:
    """``A(V) = sum_i V[i]`` for ``V`` of shape ``(k, d, m)``; ``A^T(G) = [G, ..., G]``.

    ``||A||^2 = k``.
    """

    def __init__(self, k: int = 2):
        self.k = int(k)
        self.norm_sq = float(k)

    def variable_shape(self, d: int, m: int) -> tuple[int, ...]:
        return (self.k, d, m)

    def forward(self, V: np.ndarray) -> np.ndarray:
        return V.sum(axis=0)

    def adjoint(self, G: np.ndarray) -> np.ndarray:
        return np.broadcast_to(G, (self.k, *G.shape)).copy()


class BlockPenalty(Penalty):
    """Separable penalty ``sum_i P_i(V[i])`` on a stacked variable ``V`` ``(k, d, m)``.

    The prox is the blockwise prox (projection for constraint blocks).
    """

    def __init__(self, penalties: Sequence[Penalty]):
        self.penalties = list(penalties)

    @property
    def is_constraint(self) -> bool:  # type: ignore[override]
        return all(p.is_constraint for p in self.penalties)

    def value(self, V):
        return float(sum(p.value(V[i]) for i, p in enumerate(self.penalties)))

    def prox(self, V, step):
        return np.stack([p.prox(V[i], step) for i, p in enumerate(self.penalties)])
