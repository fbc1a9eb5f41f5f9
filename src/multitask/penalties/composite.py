"""Split models ``W = V[0] + ... + V[k-1]``, each part with its own penalty, as one penalty.

The sparse + low-rank model (``W = P + Q``) and robust multi-task learning (``W = L + E``)
optimize a stacked variable ``V`` of shape ``(k, d, m)`` with a separable penalty
``h(V) = sum_i h_i(V[i])``; the loss sees ``W = A(V) = sum_i V[i]``
(:class:`~multitask.penalties.base.SumMap`, ``||A||^2 = k``). The prox is the blockwise prox
(a projection for constraint blocks). A new split model is a :class:`SumOfParts` of existing
penalties; the named presets below add their ``alpha_max`` and, where one exists, a
certificate of optimality.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from multitask.penalties.balls import TraceBall
from multitask.penalties.base import DualBound, LinearMap, Penalty, SumMap, check_strength
from multitask.penalties.norms import L1, ColumnL2, TraceNorm
from multitask.penalties.prox import spectral_norm

__all__ = ["LowRankOutlier", "SparseLowRank", "SumOfParts"]


class SumOfParts(Penalty):
    """``h(V) = sum_i parts[i](V[i])`` on ``V`` of shape ``(k, d, m)``, with ``W = sum_i V[i]``.

    Parameters
    ----------
    parts : sequence of Penalty
        One convex penalty (or constraint set) per part of ``W``.
    """

    name = "sum_of_parts"
    capabilities = frozenset({"blocks"})

    def __init__(self, parts: Sequence[Penalty]):
        parts = tuple(parts)
        if len(parts) < 1 or not all(isinstance(p, Penalty) for p in parts):
            raise ValueError("parts must be a non-empty sequence of Penalty objects.")
        self.parts = parts
        self._map = SumMap(len(parts))
        if all("blockwise" in p.capabilities for p in parts):  # every part combines blockwise
            vars(self)["capabilities"] = type(self).capabilities | {"blockwise"}

    @property
    def linear_map(self) -> LinearMap:
        return self._map

    @property
    def is_constraint(self) -> bool:  # type: ignore[override]
        return all(p.is_constraint for p in self.parts)

    def _repr_params(self) -> dict:
        return {"parts": list(self.parts)}

    @property
    def dual_ball_part(self) -> Penalty | None:
        """The one part that is not a constraint set, where every other part is one (sparse +
        low rank: the l1 norm beside the trace-norm ball), else ``None``. A constraint part's
        conjugate (its support function) is finite everywhere: it adds a cost to a dual point
        but no condition on it, so the dual ball of the model is that of this part (the
        certificate projects onto it). Several norm parts have the intersection of their dual
        balls, which has no projection in closed form."""
        norms = [p for p in self.parts if not p.is_constraint]
        return norms[0] if len(norms) == 1 and not norms[0].parts else None

    def value(self, V):
        return float(sum(p.value(V[i]) for i, p in enumerate(self.parts)))

    def prox_value(self, V):
        return float(sum(p.prox_value(V[i]) for i, p in enumerate(self.parts)))

    def prox(self, V, step):
        return np.stack([p.prox(V[i], step) for i, p in enumerate(self.parts)])

    def dual_bound(self, G):
        """The conjugate of the infimal convolution ``min_{sum V_i = W} sum_i h_i(V_i)`` is
        ``sum_i h_i^*``, each at the same ``U = -s G`` (``G`` in the shape of ``W``): the
        parts' bounds added (the smallest ``s_max``)."""
        total: DualBound | None = None
        for p in self.parts:
            b = p.dual_bound(G)
            if b is None:
                return None
            total = b if total is None else total + b
        return total

    # "blockwise" (when every part is): the parts' reductions side by side
    def block_stats(self, V):
        """The tuple of the parts' reductions of their blocks ``V[i]``."""
        return tuple(p.block_stats(V[i]) for i, p in enumerate(self.parts))

    def combine_stats(self, a, b):
        if a is None or b is None:
            return b if a is None else a
        return tuple(p.combine_stats(x, y) for p, x, y in zip(self.parts, a, b, strict=True))

    def block_plan(self, stats, step):
        plans = [p.block_plan(s, step) for p, s in zip(self.parts, stats, strict=True)]
        return tuple(pl for pl, _ in plans), float(sum(v for _, v in plans))

    def block_prox(self, V, plan, step):
        return np.stack([p.block_prox(V[i], plan[i], step) for i, p in enumerate(self.parts)])

    def block_value(self, U, plan):
        return float(sum(p.block_value(U[i], plan[i]) for i, p in enumerate(self.parts)))

    def block_alpha_stats(self, grad):
        """The parts' reductions of the loss gradient (each part sees the same ``G``)."""
        return tuple(p.block_alpha_stats(grad) for p in self.parts)

    def alpha_max_from_stats(self, stats):
        """``inf`` (no general rule for a sum of parts; the presets override it)."""
        return float("inf")


class SparseLowRank(SumOfParts):
    """``alpha ||P||_1 + indicator(||Q||_* <= radius)`` on ``V = [P, Q]``, ``W = P + Q``.

    The incoherent sparse + low-rank model of Chen, Liu & Ye ("Learning incoherent sparse and
    low-rank patterns from multiple tasks", ACM TKDD 2012): the prox soft-thresholds ``P`` at
    ``step * alpha`` and projects ``Q`` onto the trace-norm ball.

    Parameters
    ----------
    alpha : float
        Weight of the entrywise l1 norm of the sparse part (the paper's ``gamma``).
    radius : float
        Radius of the trace-norm ball of the low-rank part (the paper's ``tau``).
    """

    name = "sparse_low_rank"
    #: Zeroing feature rows of ``P`` and ``Q`` raises neither part (the l1 norm; the trace
    #: norm, by interlacing): a run may leave out the rows the loss does not see.
    capabilities = SumOfParts.capabilities | {"row_monotone"}

    def __init__(self, alpha: float, radius: float):
        self.alpha = check_strength(alpha)
        self.radius = check_strength(radius, "radius")
        super().__init__([L1(self.alpha), TraceBall(self.radius)])

    def _repr_params(self) -> dict:
        return {"alpha": self.alpha, "radius": self.radius}

    def alpha_max(self, grad):
        """``||G||_inf``: above it ``P = 0`` when ``radius = 0``. For ``radius > 0`` the
        threshold is ``||grad f(Q_radius)||_inf`` at the trace-ball fit, usually smaller."""
        return float(np.max(np.abs(grad))) if grad.size else 0.0

    def certificate(self, V: np.ndarray, grad: np.ndarray, loss: float) -> dict:
        """KKT residuals and a certified bound on the sub-optimality of a feasible ``V``.

        With ``G = grad_W f(P + Q)`` (``grad_P f = grad_Q f = G``) the optimality conditions
        are ``||G||_inf <= alpha``, ``<G, P> + alpha ||P||_1 = 0`` and
        ``<G, Q> + radius ||G||_2 = 0``. By convexity, Hoelder's inequalities for the pairs
        (l1, l_inf) and (trace, spectral), and ``alpha ||P*||_1 <= F* <= F(P, Q)`` (the losses
        are nonnegative),

            F(P, Q) - F* <= [<G, P> + alpha ||P||_1] + [<G, Q> + radius ||G||_2]
                            + max(0, ||G||_inf - alpha) * F(P, Q) / alpha

        (for fixed intercepts).

        Parameters
        ----------
        V : ndarray of shape (2, d, m)
            ``[P, Q]`` with ``||Q||_* <= radius``.
        grad : ndarray of shape (d, m)
            ``G``.
        loss : float
            ``f(P + Q)``.

        Returns
        -------
        dict
            ``bound``, ``sparse_term``, ``low_rank_term``, ``dual_infeasibility``
            (``max(0, ||G||_inf - alpha)``), ``grad_inf``.
        """
        P, Q = V[0], V[1]
        l1 = float(np.abs(P).sum())
        F_cur = loss + self.alpha * l1
        g_inf = float(np.max(np.abs(grad))) if grad.size else 0.0
        sparse_term = float(np.vdot(grad, P)) + self.alpha * l1
        spec = spectral_norm(grad) if grad.size else 0.0
        low_rank_term = float(np.vdot(grad, Q)) + self.radius * spec
        infeas = max(0.0, g_inf - self.alpha)
        third = 0.0 if infeas == 0 else (np.inf if self.alpha <= 0 else infeas * F_cur / self.alpha)
        bound = sparse_term + low_rank_term + third
        return {"bound": float(max(bound, 0.0)), "sparse_term": sparse_term,
                "low_rank_term": low_rank_term, "dual_infeasibility": infeas,
                "grad_inf": g_inf}


class LowRankOutlier(SumOfParts):
    """``alpha (||L||_* + lam sum_t ||E_.t||_2)`` on ``V = [L, E]``, ``W = L + E``.

    Robust multi-task learning (Chen, Zhou & Ye, "Integrating low-rank and group-sparse
    structures for robust multi-task learning", KDD 2011; Pan, Xia, Yin & Liu, "A
    divide-and-conquer method for scalable robust multitask learning", IEEE TNNLS 2015): a
    low-rank part shared by the tasks plus a column-sparse part whose nonzero columns are the
    outlier tasks.

    Parameters
    ----------
    alpha : float
        Overall strength.
    lam : float
        Weight of the outlier part relative to the trace norm.
    n_classes : int, default=1
        Weight columns per task (``K`` of a multinomial model): the outlier group of task
        ``t`` is then its ``K`` columns together (a task is an outlier for all its classes),
        and the trace norm acts on all the task-class columns.
    """

    name = "low_rank_outlier"

    def __init__(self, alpha: float, lam: float, n_classes: int = 1):
        self.alpha = check_strength(alpha)
        self.lam = check_strength(lam, "lam")
        self.n_classes = int(n_classes)
        self._outlier = ColumnL2(self.alpha * self.lam, n_classes=self.n_classes)
        super().__init__([TraceNorm(self.alpha), self._outlier])

    def _repr_params(self) -> dict:
        out = {"alpha": self.alpha, "lam": self.lam}
        return out if self.n_classes == 1 else {**out, "n_classes": self.n_classes}

    def alpha_max(self, grad):
        """``max(||G||_2, max_t ||G_.t||_2 / lam)`` (``inf`` when ``lam = 0`` and ``G != 0``;
        ``G_.t`` the task's group of columns)."""
        if not grad.size:
            return 0.0
        col = float(np.max(self._outlier.group_norms(grad)))
        return self._alpha_max(spectral_norm(grad), col)

    def _alpha_max(self, spec: float, col: float) -> float:
        if self.lam <= 0:
            return spec if col == 0 else float("inf")
        return max(spec, col / self.lam)

    def alpha_max_from_stats(self, stats):
        """``alpha_max`` from the parts' reductions: the spectral norm from the trace part's
        ``R`` factor, the largest column norm (over ``alpha lam``) from the column part's."""
        spec = self.parts[0].alpha_max_from_stats(stats[0])
        col = self.parts[1].alpha_max_from_stats(stats[1])
        return self._alpha_max(spec, col)
