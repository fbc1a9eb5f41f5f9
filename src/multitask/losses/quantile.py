"""The pinball loss of quantile regression, ``quantile`` ``tau`` in ``(0, 1)``.

For a target ``y`` and a score ``z``::

    ell(y, z) = tau (y - z)          if y >= z,
                (1 - tau) (z - y)    if y < z,
              = tau (y - z) + max(0, z - y),

so that the minimizer of ``sum_i w_i ell(y_i, b)`` over a constant ``b`` is the weighted
``tau``-quantile of the targets (:meth:`Pinball.optimal_intercept_at_zero`). With the row
weights of :mod:`multitask.losses` (``1 / n_t``) the loss of one task is scikit-learn's
``QuantileRegressor`` objective ``(1 / n) sum_i ell(y_i, z_i)``, and its ``alpha ||w||_1`` is
the same ``alpha`` of an l1 penalty here.

The loss is piecewise linear and not smooth: it offers a subgradient (``-tau`` below the
target, ``1 - tau`` above, 0 at the kink), its prox in score space (``"prox_scores"``, for
linearized ADMM), the pieces of a linear program (``"max_affine"``: the hinge ``max(0, z - y)``
plus the linear part ``tau (y - z)``, :meth:`Pinball.max_affine_linear`) and its conjugate
``ell^*(a) = a y`` on ``-tau <= a <= 1 - tau`` (``+inf`` outside): the certificate's dual points
have their score derivatives in that box (it holds 0, so the per-task balancing keeps them
there).
"""

from __future__ import annotations

import numpy as np

from multitask.data import MultiTaskData
from multitask.losses.base import Datafit
from multitask.losses.registry import register_loss

__all__ = ["Pinball", "check_quantile", "weighted_quantiles"]


def check_quantile(quantile) -> float:
    """``quantile`` as a float in ``(0, 1)`` (``ValueError`` otherwise)."""
    try:
        tau = float(quantile)
    except (TypeError, ValueError):
        raise ValueError(f"quantile must be a number in (0, 1), got {quantile!r}.") from None
    if not 0.0 < tau < 1.0:  # NaN fails too
        raise ValueError(f"quantile must be in (0, 1) (0.5: the median), got {quantile!r}.")
    return tau


def weighted_quantiles(data: MultiTaskData, values: np.ndarray, tau: float) -> np.ndarray:
    """The lower weighted ``tau``-quantile of ``values`` (stacked like ``data.y``) in each task,
    with the row weights of ``data`` (rows of weight zero left out): the smallest value ``v`` of
    the task with ``sum_{i: v_i <= v} w_i >= tau sum_i w_i``, shape ``(n_tasks,)``."""
    w = data.row_weights
    task = data.task_of_row
    order = np.lexsort((values, task))
    v_s, w_s, t_s = values[order], w[order], task[order]
    cs = np.cumsum(w_s)
    starts = data.offsets[:-1]
    sizes = np.diff(data.offsets)
    before = np.concatenate([[0.0], cs])[starts]
    cum = cs - np.repeat(before, sizes)
    total = cum[data.offsets[1:] - 1]
    hit = (cum >= tau * total[t_s] * (1.0 - 1e-12)) & (w_s > 0)
    first = np.flatnonzero(hit)
    _, at = np.unique(t_s[first], return_index=True)
    out = np.zeros(data.n_tasks)
    out[t_s[first[at]]] = v_s[first[at]]
    return out


class Pinball(Datafit):
    """Pinball (quantile) loss ``sum_t sum_{i in t} w_i ell_tau(y_i, x_i^T w_t + b_t)``
    (module docstring).

    Parameters
    ----------
    data, fit_intercept, alpha_l2, center
        As in :class:`~multitask.losses.base.Datafit`.
    quantile : float, default=0.5
        ``tau`` in ``(0, 1)``: the quantile of the targets the scores model (0.5: the median).
    """

    name = "quantile"
    starts_at_best_intercept = True
    capabilities = frozenset({"subgradient", "prox_scores", "max_affine", "dual"})

    def __init__(self, data: MultiTaskData, fit_intercept: bool = True, alpha_l2: float = 0.0,
                 center: bool = False, quantile: float = 0.5):
        self.quantile = check_quantile(quantile)
        super().__init__(data, fit_intercept, alpha_l2, center)

    def get_params(self) -> dict:
        return {**super().get_params(), "quantile": self.quantile}

    def _dloss(self, z):
        tau = self.quantile
        r = self.data.y - np.asarray(z, dtype=np.float64)
        vals = np.maximum(tau * r, (tau - 1.0) * r)
        d1 = np.where(r > 0, -tau, np.where(r < 0, 1.0 - tau, 0.0))
        return vals, d1

    def lipschitz(self) -> float:
        raise ValueError("The pinball loss is not smooth: it has no Lipschitz gradient.")

    def prox_scores(self, v, step):
        """Row by row, with ``s_i = step w_i`` (``step`` a number or per-row array): ``v_i + s_i
        tau`` below ``y_i - s_i tau``, ``v_i - s_i (1 - tau)`` above ``y_i + s_i (1 - tau)``,
        ``y_i`` between."""
        tau = self.quantile
        v = np.asarray(v, dtype=np.float64)
        s = np.asarray(step, dtype=np.float64) * self.data.row_weights
        y = self.data.y
        return np.where(v < y - s * tau, v + s * tau,
                        np.where(v > y + s * (1.0 - tau), v - s * (1.0 - tau), y))

    def max_affine_pieces(self):
        """``a = 1``, ``c = -y``: the hinge ``max(0, z - y)`` (the linear part is
        :meth:`max_affine_linear`'s)."""
        return np.ones(self.data.n_rows), -self.data.y.copy()

    def max_affine_linear(self):
        """``l = -tau``, ``k = tau y``: ``ell(y_i, z) = tau (y_i - z) + max(0, z - y_i)``."""
        tau = self.quantile
        return np.full(self.data.n_rows, -tau), tau * self.data.y

    def optimal_intercept_at_zero(self):
        """The weighted ``tau``-quantile of each task's targets (:func:`weighted_quantiles`)."""
        return weighted_quantiles(self.data, self.data.y, self.quantile)

    def grad_at_zero(self) -> np.ndarray:
        """The gradient at ``W = 0`` and the optimal intercepts (the quantiles) with the
        subgradient that balances each task at its kink: the rows at the task's quantile (where
        ``ell`` has a kink) share the derivative in ``[-tau, 1 - tau]`` that makes the task's
        weighted sum zero (the intercepts' optimality, which a dual point needs); with one
        such row per task (continuous targets) it is the only one, so ``alpha_max`` is exact
        there."""
        data = self.data
        w = data.row_weights
        b0 = self.optimal_intercept_at_zero() if self.has_intercept_variable else None
        z = np.zeros(data.n_rows) if b0 is None else data.expand(b0)
        _, a = self._dloss(z)
        if b0 is not None:
            kink = (data.y == z) & (w > 0)
            rest = data.task_sum(w * a * ~kink)
            share = data.task_sum(w * kink)
            with np.errstate(divide="ignore", invalid="ignore"):
                at = np.clip(-rest / np.where(share > 0, share, 1.0), -self.quantile,
                             1.0 - self.quantile)
            a = np.where(kink, data.expand(at), a)
        G = data.rmatvec(w * a)
        return G

    def _score_conjugate(self, a):
        """``a y`` on ``-tau <= a <= 1 - tau``, ``inf`` outside."""
        a = np.asarray(a, dtype=np.float64)
        tau = self.quantile
        inside = (a >= -tau) & (a <= 1.0 - tau)
        return np.where(inside, a * self.data.y, np.inf)

    def dual_domain(self, a: np.ndarray) -> np.ndarray:
        """``a`` clipped to ``[-tau, 1 - tau]`` (a dual point from a solver's multiplier)."""
        return np.clip(np.asarray(a, dtype=np.float64), -self.quantile, 1.0 - self.quantile)


register_loss(Pinball)
