"""Split models ``W = P + Q`` with a group-sparse part and an element- or task-sparse part.

* The dirty model of Jalali, Ravikumar, Sanghavi & Ruan ("A dirty model for multi-task
  learning", NIPS 2010): ``alpha_group ||P||_{1,q} + alpha_l1 ||Q||_1`` with
  ``||P||_{1,q} = sum_j ||P_j.||_q`` over the feature rows, ``q = inf`` (the paper's and
  MALSAR's ``Least_Dirty``) or ``q = 2``. ``P`` holds the features shared by the tasks,
  ``Q`` the task-specific exceptions.
* Robust multi-task feature learning of Gong, Ye & Zhang ("Robust multi-task feature
  learning", KDD 2012; MALSAR's ``rMTFL``): ``alpha_group sum_j ||P_j.||_2 + alpha_outlier
  sum_t ||Q_.t||_2``: the features shared by the tasks in ``P``, the outlier tasks as the
  nonzero columns of ``Q``.

Both are :class:`~multitask.penalties.composite.SumOfParts` of norm penalties (``W`` has shape
``(n_features, n_tasks)``, the solver's variable ``V = [P, Q]`` shape ``(2, n_features,
n_tasks)``). The one new norm is :class:`L1InfNorm`, ``alpha sum_j max_t |W_jt|``, whose prox
is ``V`` minus the projection of ``V`` onto the dual ball ``{U : ||U_j.||_1 <= step * alpha
for every row j}`` (Moreau's decomposition), one l1-ball projection per row.

The dirty model on ``W`` alone (:class:`DirtyNorm`). Minimizing over ``(P, Q)`` with
``P + Q = W`` fixed leaves the infimal convolution of the two norms, a norm separable over
the feature rows::

    N(W) = sum_j min_{p + q = W_j.} alpha_group ||p||_q + alpha_l1 ||q||_1
         = sum_j max {<u, W_j.> : ||u||_{q*} <= alpha_group, ||u||_inf <= alpha_l1}

so that ``min_{P, Q} F(P + Q) + alpha_group ||P||_{1,q} + alpha_l1 ||Q||_1 = min_W F(W) +
N(W)``, and an optimal ``(P, Q)`` is the split of an optimal ``W`` (in closed form,
:meth:`DirtyNorm.split`). The stacked problem has the degenerate direction ``(D, -D)``,
which slows first-order methods on ``(P, Q)``; the norm on ``W`` has none, and its prox,
value and split are exact (:mod:`multitask.penalties.row_operators`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

import multitask.penalties.row_operators as row_operators
from multitask.penalties.balls import ColumnL1Balls
from multitask.penalties.base import Penalty, check_strength, norm_bound
from multitask.penalties.composite import SumOfParts
from multitask.penalties.norms import L1, L21, ColumnL2

__all__ = ["DirtyModel", "DirtyNorm", "L1InfNorm", "RobustFeatureLearning"]


class L1InfNorm(Penalty):
    """``alpha * ||W||_{1,inf} = alpha * sum_j max_t |W_jt|`` over the feature rows ``j``.

    The prox is ``prox_{step alpha ||.||_{1,inf}}(V) = V - P(V)`` with ``P`` the Euclidean
    projection onto the dual-norm ball ``{U : sum_t |U_jt| <= step * alpha for every j}``: each
    row of ``V`` onto the l1 ball of radius ``step * alpha``. ``alpha_max = max_j sum_t
    |G_jt|`` (the dual norm of the gradient at zero).

    Parameters
    ----------
    alpha : float
        Strength (>= 0).
    """

    name = "l1inf_norm"
    capabilities = frozenset({"lp"})

    def __init__(self, alpha: float):
        self.alpha = check_strength(alpha, "alpha")

    def _repr_params(self) -> dict:
        return {"alpha": self.alpha}

    def value(self, W: np.ndarray) -> float:
        if W.size == 0:
            return 0.0
        return self.alpha * float(np.abs(W).max(axis=1).sum())

    def prox(self, V: np.ndarray, step: float) -> np.ndarray:
        V = np.asarray(V, dtype=np.float64)
        radius = float(step) * self.alpha
        if radius <= 0 or V.size == 0:
            return V.copy()
        rows_projected = ColumnL1Balls(radius).project(np.ascontiguousarray(V.T)).T
        return V - rows_projected

    def alpha_max(self, grad: np.ndarray) -> float:
        return float(np.abs(grad).sum(axis=1).max()) if grad.size else 0.0

    def dual_bound(self, G):
        """``s_max = alpha / max_j ||G_j.||_1`` (the dual of l1,inf is l_inf,1)."""
        return norm_bound(self.alpha, self.alpha_max(G))

    def lp_constraints(self, d: int, m: int):
        """``-u_j <= W_jt <= u_j`` for every task ``t``: ``n_aux = d`` bounds, one per feature
        row, of cost ``alpha`` each (:meth:`lp_cost`): ``alpha sum_j u_j = alpha
        ||W||_{1,inf}`` at the optimum. ``vec(W) = W.T.ravel()`` (task-major, index ``t d +
        j``)."""
        n = d * m
        k = np.arange(n)
        eye = sp.identity(n, format="csr")
        bound = sp.csr_matrix((np.full(n, -1.0), (k, k % d)), shape=(n, d))
        A_w = sp.vstack([eye, -eye], format="csr")
        A_u = sp.vstack([bound, bound], format="csr")
        return A_w, A_u, np.zeros(2 * n), d

    def lp_cost(self, d: int, m: int) -> np.ndarray:
        """``alpha`` on each row bound ``u_j >= max_t |W_jt|`` (:meth:`lp_constraints`)."""
        return np.full(d, self.alpha)

    def row_blocks(self, n_features: int):
        """The feature rows as blocks (:mod:`multitask.penalties.row_blocks`): row ``j`` is
        zero at the optimum when ``||G_j.||_1 <= alpha`` (kind ``"l1inf"``)."""
        from multitask.penalties.row_blocks import RowBlocks

        a = np.full(n_features, self.alpha)
        return RowBlocks("l1inf", a, np.zeros(n_features), np.zeros(n_features), uniform=True)


def _group_norm(q) -> float:
    q = float(q)
    if q not in (2.0, np.inf):
        raise ValueError(f"q must be 2 or inf (the l1,2 or l1,inf norm of P), got {q!r}.")
    return q


class DirtyModel(SumOfParts):
    """``alpha_group ||P||_{1,q} + alpha_l1 ||Q||_1`` on ``V = [P, Q]``, ``W = P + Q``.

    Jalali, Ravikumar, Sanghavi & Ruan, "A dirty model for multi-task learning": the block
    part ``P`` (``||P||_{1,q} = sum_j ||P_j.||_q`` over feature rows, ``q = inf`` as in the
    paper, or ``q = 2``) holds the features the tasks share; the elementwise sparse part ``Q``
    the features only some tasks use. The prox is blockwise: :class:`L1InfNorm` or
    :class:`~multitask.penalties.norms.L21` on ``P``, soft-thresholding on ``Q``.

    Parameters
    ----------
    alpha_group : float
        Weight of ``||P||_{1,q}`` (>= 0).
    alpha_l1 : float
        Weight of ``||Q||_1`` (>= 0).
    q : {2, inf}, default=inf
        The inner norm of the block part.
    """

    name = "dirty"

    def __init__(self, alpha_group: float, alpha_l1: float, q: float = np.inf):
        self.alpha_group = check_strength(alpha_group, "alpha_group")
        self.alpha_l1 = check_strength(alpha_l1, "alpha_l1")
        self.q = _group_norm(q)
        group = L1InfNorm(self.alpha_group) if self.q == np.inf else L21(self.alpha_group)
        super().__init__([group, L1(self.alpha_l1)])

    def _repr_params(self) -> dict:
        return {"alpha_group": self.alpha_group, "alpha_l1": self.alpha_l1, "q": self.q}

    def dual_group_norm(self, grad: np.ndarray) -> float:
        """``max_j ||G_j.||_{q*}``: ``q* = 1`` for ``q = inf``, ``q* = 2`` for ``q = 2``."""
        if not grad.size:
            return 0.0
        if self.q == np.inf:
            return float(np.abs(grad).sum(axis=1).max())
        return float(np.linalg.norm(grad, axis=1).max())

    def alpha_max(self, grad: np.ndarray) -> float:
        """Smallest ``alpha_group`` at which ``W = 0`` for the given ``alpha_l1``.

        Both parts see the same gradient ``G``, so zero is optimal iff
        ``max_j ||G_j.||_{q*} <= alpha_group`` and ``max |G_jt| <= alpha_l1``. Returns the
        first bound when the second holds and ``inf`` otherwise (``Q`` is then nonzero
        whatever ``alpha_group``).
        """
        if not grad.size:
            return 0.0
        if float(np.abs(grad).max()) > self.alpha_l1:
            return float("inf")
        return self.dual_group_norm(grad)

    def on_weights(self) -> DirtyNorm:
        """The same model on ``W`` alone: :class:`DirtyNorm` with these strengths."""
        return DirtyNorm(self.alpha_group, self.alpha_l1, self.q)


class DirtyNorm(Penalty):
    """The dirty model's penalty on ``W = P + Q`` alone: ``N(W) = sum_j min_{p + q = W_j.}
    alpha_group ||p||_q + alpha_l1 ||q||_1`` (module docstring), a norm separable over the
    feature rows.

    * value: the support function of the row's dual ball ``B = {||u||_{q*} <=
      alpha_group} cap {||u||_inf <= alpha_l1}`` (exact, by sorting);
    * prox: ``prox_{step N}(V) = V - P_{step B}(V)`` row by row (Moreau's decomposition), with
      the exact projection onto the intersection of the two balls;
    * dual norm: ``N^*(G) = max_j max(||G_j.||_{q*} / alpha_group, ||G_j.||_inf /
      alpha_l1)``, which gives ``alpha_max`` and the certificate;
    * :meth:`split`: the parts ``(P, Q)`` of an optimal split of ``W``.

    Capability ``"row_prox"`` (family ``"dirty_inf"`` or ``"dirty_2"``): block coordinate
    descent takes proximal steps on its rows. With ``alpha_group = 0`` or ``alpha_l1 = 0``
    the norm is zero (the free part takes all of ``W``).

    Parameters
    ----------
    alpha_group : float
        Weight of the group part's norm ``||P_j.||_q`` (>= 0).
    alpha_l1 : float
        Weight of ``||Q||_1`` (>= 0).
    q : {2, inf}, default=inf
    """

    name = "dirty_norm"
    capabilities = frozenset({"row_prox"})

    def __init__(self, alpha_group: float, alpha_l1: float, q: float = np.inf):
        self.alpha_group = check_strength(alpha_group, "alpha_group")
        self.alpha_l1 = check_strength(alpha_l1, "alpha_l1")
        self.q = _group_norm(q)
        self.row_prox_family = "dirty_inf" if self.q == np.inf else "dirty_2"

    def _repr_params(self) -> dict:
        return {"alpha_group": self.alpha_group, "alpha_l1": self.alpha_l1, "q": self.q}

    @property
    def _group_inf(self) -> bool:
        return self.q == np.inf

    def _is_zero(self) -> bool:
        return self.alpha_group == 0 or self.alpha_l1 == 0

    def value(self, W: np.ndarray) -> float:
        W = np.ascontiguousarray(W, dtype=np.float64)
        if W.size == 0 or self._is_zero():
            return 0.0
        return float(row_operators.dirty_values_rows(W, self.alpha_group, self.alpha_l1,
                                             self._group_inf).sum())

    def prox(self, V: np.ndarray, step: float) -> np.ndarray:
        V = np.ascontiguousarray(V, dtype=np.float64)
        s = float(step)
        if V.size == 0 or self._is_zero() or s <= 0:
            return V.copy()
        return row_operators.dirty_prox_rows(V, s * self.alpha_group, s * self.alpha_l1,
                                     self._group_inf)

    def row_prox_params(self):
        """``(alpha_group, alpha_l1, 0)``."""
        return (self.alpha_group, self.alpha_l1, 0.0)

    def dual_group_norm(self, grad: np.ndarray) -> float:
        """``max_j ||G_j.||_{q*}``: ``q* = 1`` for ``q = inf``, ``q* = 2`` for ``q = 2``."""
        if not grad.size:
            return 0.0
        if self._group_inf:
            return float(np.abs(grad).sum(axis=1).max())
        return float(np.linalg.norm(grad, axis=1).max())

    def dual_norm(self, G: np.ndarray) -> float:
        """``N^*(G) = max_j max(||G_j.||_{q*} / alpha_group, ||G_j.||_inf / alpha_l1)`` (``inf``
        when a strength is 0 and ``G != 0``)."""
        G = np.asarray(G, dtype=np.float64)
        if not G.size or not np.any(G):
            return 0.0
        if self._is_zero():
            return float("inf")
        group = (np.abs(G).sum(axis=1) if self._group_inf else np.linalg.norm(G, axis=1))
        return float(np.max(np.maximum(group / self.alpha_group,
                                       np.abs(G).max(axis=1) / self.alpha_l1)))

    def alpha_max(self, grad: np.ndarray) -> float:
        """Smallest ``alpha_group`` at which ``W = 0`` for the given ``alpha_l1``: ``max_j
        ||G_j.||_{q*}`` when ``max |G| <= alpha_l1``, ``inf`` otherwise (as
        :meth:`DirtyModel.alpha_max`)."""
        if not grad.size:
            return 0.0
        if float(np.abs(grad).max()) > self.alpha_l1:
            return float("inf")
        return self.dual_group_norm(grad)

    def dual_bound(self, G):
        """A norm: ``s_max = 1 / N^*(G)``."""
        return norm_bound(1.0, self.dual_norm(G))

    def free_directions(self, shape: tuple[int, ...], ridge: float = 0.0):
        """Every entry is free when a strength is 0 (the norm vanishes); ``None`` else."""
        return (np.ones(shape[0], dtype=bool), None) if self._is_zero() else None

    def reduced(self, n_columns: int) -> Penalty | None:
        """The single norm this one equals on weights of ``n_columns`` columns, or None.

        Per row, ``N(w) = alpha_l1 ||w||_1`` exactly when ``alpha_group >= alpha_l1
        n^(1 - 1/q)`` (``n`` columns: ``n`` for ``q = inf``, ``sqrt(n)`` for ``q = 2``; the
        largest ratio ``||p||_1 / ||p||_q``): moving part of a row to ``P`` never lowers the
        sum, and at a smaller ``alpha_group`` a row of equal magnitudes costs less in ``P``.
        Likewise ``N(w) = alpha_group ||w||_2`` when ``alpha_l1 >= alpha_group`` and ``q = 2``
        (``||p||_2 <= ||p||_1``): the l2,1 norm. Those are the bounds of Jalali et al.'s
        recommended range ``alpha_l1 < alpha_group < n alpha_l1``; outside it one part is zero
        and the model is the lasso (:class:`~multitask.penalties.norms.L1`, ``P = 0``) or the
        group lasso (:class:`~multitask.penalties.norms.L21`, ``Q = 0``). (The l1,inf norm
        of ``q = inf`` below the range is left to this norm, whose row prox the solvers take.)
        None inside the range, or where a strength is 0.
        """
        if self._is_zero():
            return None
        n = max(int(n_columns), 1)
        widest = float(n) if self._group_inf else float(np.sqrt(n))
        if self.alpha_group >= self.alpha_l1 * widest:
            return L1(self.alpha_l1)
        if not self._group_inf and self.alpha_l1 >= self.alpha_group:
            return L21(self.alpha_group)
        return None

    def split(self, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(P, Q)`` with ``P + Q = W`` and ``alpha_group ||P||_{1,q} + alpha_l1 ||Q||_1 =
        N(W)``: row by row ``P_j. = sign(W_j.) min(|W_j.|, tau_j)`` with ``tau_j`` the
        ``(k + 1)``-th largest ``|W_jt|``, ``k = floor(alpha_group / alpha_l1)`` (``q = inf``),
        or ``alpha_l1 / beta_j`` with ``beta_j`` the scale of the row's dual maximizer
        (``q = 2``; :mod:`multitask.penalties.row_operators`). ``Q = W - P``, exactly zero where
        ``|W_jt| <= tau_j``. With ``alpha_l1 = 0`` all of ``W`` is ``Q``, with ``alpha_group = 0``
        (and ``alpha_l1 > 0``) all of it is ``P``.
        """
        W = np.ascontiguousarray(W, dtype=np.float64)
        if W.size == 0:
            return W.copy(), W.copy()
        tau = row_operators.dirty_split_rows(W, self.alpha_group, self.alpha_l1, self._group_inf)
        P = np.clip(W, -tau[:, None], tau[:, None])
        Q = W - P
        Q[np.abs(W) <= tau[:, None]] = 0.0
        return P, Q


class RobustFeatureLearning(SumOfParts):
    """``alpha_group sum_j ||P_j.||_2 + alpha_outlier sum_t ||Q_.t||_2``, ``W = P + Q``.

    Gong, Ye & Zhang, "Robust multi-task feature learning": the l2,1 norm over the feature
    rows of ``P`` selects the features the tasks share, the l2,1 norm over the task columns
    of ``Q`` (``||Q^T||_{2,1}``) lets a few outlier tasks have their own weights. The prox is
    blockwise group soft-thresholding (rows of ``P``, columns of ``Q``).

    Parameters
    ----------
    alpha_group : float
        Weight of the row l2,1 norm of ``P`` (>= 0).
    alpha_outlier : float
        Weight of the column l2,1 norm of ``Q`` (>= 0).
    n_classes : int, default=1
        Weight columns per task (``K`` of a multinomial model): the outlier group of task
        ``t`` is then its ``K`` columns of ``Q`` together, the row groups of ``P`` span every
        task and class.
    """

    name = "robust_feature_learning"

    def __init__(self, alpha_group: float, alpha_outlier: float, n_classes: int = 1):
        self.alpha_group = check_strength(alpha_group, "alpha_group")
        self.alpha_outlier = check_strength(alpha_outlier, "alpha_outlier")
        self.n_classes = int(n_classes)
        self._outlier = ColumnL2(self.alpha_outlier, n_classes=self.n_classes)
        super().__init__([L21(self.alpha_group), self._outlier])

    def _repr_params(self) -> dict:
        out = {"alpha_group": self.alpha_group, "alpha_outlier": self.alpha_outlier}
        return out if self.n_classes == 1 else {**out, "n_classes": self.n_classes}

    def alpha_max(self, grad: np.ndarray) -> float:
        """Smallest ``alpha_group`` at which ``W = 0`` for the given ``alpha_outlier``.

        Zero is optimal iff ``max_j ||G_j.||_2 <= alpha_group`` and ``max_t ||G_.t||_2 <=
        alpha_outlier``: the first bound when the second holds, ``inf`` otherwise.
        """
        if not grad.size:
            return 0.0
        if float(self._outlier.group_norms(grad).max()) > self.alpha_outlier:
            return float("inf")
        return float(np.linalg.norm(grad, axis=1).max())
