"""The two-class losses (labels -1/+1): logistic, squared hinge (LIBLINEAR's L2-loss SVM) and
hinge."""

from __future__ import annotations

import numpy as np
from scipy.special import expit, log1p
from scipy.special import xlogy as _xlogy  # private: its ufunc docstring is not ours

from multitask.losses.base import Datafit
from multitask.losses.registry import register_loss

__all__ = ["Hinge", "Logistic", "SquaredHinge"]

class Logistic(Datafit):
    """Logistic loss ``sum_t (1 / n_t) sum_i log(1 + exp(-y_i z_i))``, labels -1/+1."""

    name = "logistic"
    capabilities = frozenset({"gradient", "subgradient", "dual", "hessian",
                              "curvature_bound"})

    def curvature(self) -> float:
        return 0.25

    def _dloss(self, z):
        yz = self.data.y * z
        vals = np.logaddexp(0.0, -yz)  # log(1 + exp(-yz)), computed stably
        dz = -self.data.y * expit(-yz)
        return vals, dz

    def _d2loss(self, z):
        p = expit(self.data.y * z)
        return p * (1.0 - p)

    def optimal_intercept_at_zero(self):
        p = self.data.task_mean((self.data.y > 0).astype(float))  # (weighted) class share
        p = np.clip(p, 1e-12, 1 - 1e-12)
        return np.log(p) - log1p(-p)

    def _score_conjugate(self, a):
        """``q log q + (1 - q) log(1 - q)`` with ``q = -y a`` in ``[0, 1]`` (``inf`` outside)."""
        q = -self.data.y * a
        with np.errstate(invalid="ignore"):
            out = _xlogy(q, q) + _xlogy(1.0 - q, 1.0 - q)
        return np.where((q >= 0.0) & (q <= 1.0), out, np.inf)


class SquaredHinge(Datafit):
    """Squared hinge ``sum_t (1 / n_t) sum_i max(0, 1 - y_i z_i)^2``, labels -1/+1."""

    name = "squared_hinge"
    capabilities = frozenset({"gradient", "subgradient", "prox_scores", "dual", "hessian",
                              "curvature_bound"})

    def curvature(self) -> float:
        return 2.0

    def _dloss(self, z):
        y = self.data.y
        m = np.maximum(0.0, 1.0 - y * z)
        return m * m, -2.0 * y * m

    def _d2loss(self, z):
        return np.where(1.0 - self.data.y * z > 0.0, 2.0, 0.0)

    def prox_scores(self, v, step):
        """With the margin ``u = 1 - y v``: ``u`` kept where ``u <= 0``, else shrunk to
        ``u / (1 + 2 step w_i)``; then ``z = y (1 - u)``."""
        y = self.data.y
        u = 1.0 - y * np.asarray(v, dtype=np.float64)
        u = np.where(u > 0.0, u / (1.0 + 2.0 * step * self.data.row_weights), u)
        return y * (1.0 - u)

    def optimal_intercept_at_zero(self):
        p = self.data.task_mean((self.data.y > 0).astype(float))  # (weighted) class share
        return 2.0 * p - 1.0

    def _score_conjugate(self, a):
        """``-c + c^2 / 4`` with ``c = -y a >= 0`` (``inf`` for ``c < 0``)."""
        c = -self.data.y * a
        return np.where(c >= 0.0, -c + 0.25 * c * c, np.inf)


class Hinge(Datafit):
    """Hinge ``sum_t (1 / n_t) sum_i max(0, 1 - y_i z_i)``: value and a subgradient.

    Not smooth: no ``"gradient"`` capability (``lipschitz`` raises); solved by subgradient
    methods or, over polyhedral sets, as a linear program.
    """

    name = "hinge"
    capabilities = frozenset({"subgradient", "max_affine", "dual"})

    def _dloss(self, z):
        y = self.data.y
        m = 1.0 - y * z
        return np.maximum(0.0, m), np.where(m > 0, -y, 0.0)

    def lipschitz(self) -> float:
        raise ValueError("The hinge loss is not smooth: it has no Lipschitz gradient.")

    def value_and_grad(self, W, b=None):
        """Value and a subgradient (the derivative 0 is taken at the kink)."""
        return super().value_and_grad(W, b)

    def max_affine_pieces(self):
        """``a = -y``, ``c = 1``: ``ell(y_i, z) = max(0, 1 - y_i z)``."""
        return -self.data.y.copy(), np.ones(self.data.n_rows)

    def optimal_intercept_at_zero(self):
        p = self.data.task_mean((self.data.y > 0).astype(float))  # (weighted) class share
        return np.where(p >= 0.5, 1.0, -1.0)

    def _score_conjugate(self, a):
        """``-c`` with ``c = -y a`` in ``[0, 1]`` (``inf`` outside): the subgradient
        ``a = -y`` on the rows inside the margin, ``0`` outside."""
        c = -self.data.y * a
        return np.where((c >= 0.0) & (c <= 1.0), -c, np.inf)


for _cls in (Logistic, SquaredHinge, Hinge):
    register_loss(_cls)
