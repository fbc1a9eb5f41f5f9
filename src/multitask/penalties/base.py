"""Base classes of penalties and constraint sets.

A penalty ``lam * Omega(W)`` exposes its value and its proximal operator

    prox(V, step) = argmin_W  0.5 * ||W - V||_F^2 + step * lam * Omega(W);

a constraint set ``{W : Omega(W) <= radius}`` exposes the Euclidean projection as ``prox`` (the
step is ignored) and a value that is 0 inside the set and ``inf`` outside. Solvers need nothing
else: their optimality measure is the prox-gradient fixed-point residual

    r(W) = ||W - prox(W - G / L, 1 / L)||_F * L,   G = gradient of the loss at W,

which vanishes exactly at the minimizers, for every penalty and every constraint set.
"""

from __future__ import annotations

import numpy as np


class Penalty:
    """A convex penalty ``lam * Omega(W)`` with a proximal operator.

    Subclasses implement :meth:`value` and :meth:`prox`; ``W`` has shape
    ``(n_features, n_tasks)`` (one column per task).
    """

    is_constraint = False
    #: whether ``value`` is differentiable (then ``grad`` is defined and ``prox`` is optional)
    is_smooth = False

    def value(self, W: np.ndarray) -> float:
        """Return ``lam * Omega(W)``."""
        raise NotImplementedError

    def prox(self, V: np.ndarray, step: float) -> np.ndarray:
        """Return ``argmin_W 0.5 ||W - V||_F^2 + step * lam * Omega(W)`` (a new array)."""
        raise NotImplementedError

    def fixed_point_residual(self, W: np.ndarray, G: np.ndarray, L: float = 1.0) -> float:
        """Return ``L * ||W - prox(W - G / L, 1 / L)||_F``: zero iff ``W`` is optimal.

        ``G`` is the gradient of the smooth part at ``W``; ``L`` any positive step inverse.
        """
        return float(L * np.linalg.norm(W - self.prox(W - G / L, 1.0 / L)))


class Constraint(Penalty):
    """The indicator of a closed convex set ``{W : Omega(W) <= radius}``.

    :meth:`prox` is the Euclidean projection; :meth:`value` is 0 on the set and ``inf`` outside
    (with a relative slack of ``1e-9`` for rounding); :meth:`norm` returns ``Omega(W)``.
    """

    is_constraint = True

    def __init__(self, radius: float):
        self.radius = radius

    def norm(self, W: np.ndarray) -> float:
        """Return ``Omega(W)``."""
        raise NotImplementedError

    def project(self, V: np.ndarray) -> np.ndarray:
        """Return the Euclidean projection of ``V`` onto the set (a new array)."""
        raise NotImplementedError

    def value(self, W: np.ndarray) -> float:
        return 0.0 if self.norm(W) <= self.radius * (1 + 1e-9) + 1e-12 else np.inf

    def prox(self, V: np.ndarray, step: float) -> np.ndarray:
        return self.project(V)
