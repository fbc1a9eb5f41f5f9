"""Convex relaxations of clustered multi-task learning (CMTL) and of alternating structure
optimization (cASO): one penalty, ``M`` over the tasks or over the features.

``W`` has shape ``(n_features, n_tasks)``. For ``eta > 0`` and an integer ``k``, the joint
problems of Zhou, Chen & Ye ("Clustered multi-task learning via alternating structure
optimization", NIPS 2011) and of Chen, Tang, Liu & Ye ("A convex formulation for learning
shared structures from multiple tasks", ICML 2009) penalize ``W`` by

    CMTL:  alpha * eta (1 + eta) * min_M tr(W (eta I + M)^{-1} W^T),   M  (n_tasks x n_tasks),
    cASO:  alpha * eta (1 + eta) * min_M tr(W^T (eta I + M)^{-1} W),   M  (n_features x n_features),

over ``M`` in ``{M symmetric : tr M = k, 0 <= M <= I}`` (eigenvalues in ``[0, 1]``). The
matrix-fractional function ``(W, M) -> tr(W (eta I + M)^{-1} W^T)`` is jointly convex, so its
minimum over the convex set is a convex function of ``W``: these are convex penalties of
``W`` alone, and the joint minimizer over ``(W, M)`` is ``(W*, M(W*))``.

**The minimum over M in closed form.** With the singular values ``s_1 >= ... >= s_R`` of ``W``
(``R = min(n_features, n_tasks)``), padded with zeros to the size ``p`` of ``M``, von Neumann's
trace inequality makes the optimal ``M`` share the singular vectors of ``W`` (right ones for
CMTL, left ones for cASO), with eigenvalues ``gamma`` solving the water-filling problem

    min_{gamma in [0, 1]^p, sum gamma = k}  sum_i s_i^2 / (eta + gamma_i),

whose solution is ``gamma_i = clip(theta s_i - eta, 0, 1)`` with the ``theta > 0`` making the
sum equal to ``k`` (:func:`structure_eigenvalues`, exact: ``theta`` is found among the
breakpoints of a piecewise-linear function). The penalty is therefore a function of the
singular values of ``W``: the same function for CMTL and cASO, which differ only in ``p``
(``n_tasks`` or ``n_features``) and in the side on which ``M`` lives.

**The proximal operator** of ``h = c * phi(sigma(W))``, ``c = alpha eta (1 + eta)``, is exact:
with ``V = U diag(s) Q^T`` and ``tau = 2 step c``,

    min_{x, gamma} 0.5 ||x - s||^2 + step * c * sum_i x_i^2 / (eta + gamma_i)

is, for fixed ``gamma``, solved by ``x_i = s_i (eta + gamma_i) / (eta + gamma_i + tau)`` with
value ``step * c * sum_i s_i^2 / (eta + tau + gamma_i)``; minimizing that over ``gamma`` is the
water-filling problem with ``eta + tau`` in place of ``eta``. So
``prox(V) = U diag(x) Q^T`` costs one SVD and a sort, and ``gamma`` is also optimal for the
output ``x``, which gives the penalty's value there without a second SVD. Proximal gradient
(FISTA) on ``loss + h`` therefore minimizes the joint problem over ``(W, M)`` directly.

**More than two classes.** For a multinomial model of ``K`` classes per task (``W`` of shape
``(n_features, m K)``, :mod:`multitask.losses.multinomial`), CMTL's ``M`` stays over the tasks
and acts as ``M kron I_K`` (``n_classes=K``): the penalty is the same function of the stacked
``W~`` of shape ``(n_features K, m)`` (:mod:`multitask.penalties.class_columns`), so the tasks
are clustered by their weights of every class together. cASO's ``M`` over the features acts
on all ``m K`` columns as it is (one shared feature subspace for every task and class).
"""

from __future__ import annotations

import numpy as np

from multitask.penalties.base import DualBound, Penalty, RemembersProx
from multitask.penalties.class_columns import check_classes, stack_classes, unstack_classes
from multitask.penalties.prox import safe_svd

__all__ = [
    "ClusterRelaxation",
    "SubspaceRelaxation",
    "structure_eigenvalues",
]


def structure_eigenvalues(s: np.ndarray, eta: float, k: float, size: int) -> np.ndarray:
    """Eigenvalues of the optimal ``M``: the exact solution of the water-filling problem.

    Solves ::

        min_{gamma in [0, 1]^size, sum_i gamma_i = k}  sum_i s_i^2 / (eta + gamma_i)

    where ``s`` (length ``R <= size``) is padded with zeros to ``size``. The KKT conditions
    give ``gamma_i = clip(theta s_i - eta, 0, 1)`` with ``theta > 0`` such that the sum is
    ``k``; ``sum_i clip(theta s_i - eta, 0, 1)`` is piecewise linear and non-decreasing in
    ``theta`` with breakpoints ``eta / s_i`` and ``(1 + eta) / s_i``, so ``theta`` is found
    exactly on the segment where the sum crosses ``k``. When fewer than ``k`` of the ``s_i``
    are positive, each of those gets ``gamma_i = 1`` and the remaining budget is spread evenly
    over the ``size - r`` zero values (any split of it is optimal: they cost nothing).

    Parameters
    ----------
    s : ndarray of shape (R,)
        Non-negative values (the singular values of ``W``), ``R <= size``.
    eta : float
        ``> 0``.
    k : float
        ``0 <= k <= size``: the trace of ``M``.
    size : int
        The size ``p`` of ``M``.

    Returns
    -------
    gamma : ndarray of shape (R,)
        The eigenvalues paired with ``s``; the ``size - R`` implicit zero values each get
        ``(k - gamma.sum()) / (size - R)`` (see :func:`leftover_eigenvalue`).
    """
    s = np.asarray(s, dtype=np.float64)
    if s.ndim != 1 or s.size > size:
        raise ValueError(f"s must be 1-D with at most size={size} values, got shape {s.shape}.")
    if not (np.isfinite(eta) and eta > 0):
        raise ValueError(f"eta must be finite and > 0, got {eta!r}.")
    if not (0 <= k <= size):
        raise ValueError(f"k must lie in [0, size={size}], got {k!r}.")
    gamma = np.zeros_like(s)
    if k == 0:
        return gamma
    pos = s > 0
    r = int(np.count_nonzero(pos))
    if r <= k:
        gamma[pos] = 1.0
        if size > r:
            gamma[~pos] = (k - r) / (size - r)
        return gamma
    sp = s[pos]
    events = np.concatenate([eta / sp, (1.0 + eta) / sp])
    d_slope = np.concatenate([sp, -sp])  # a value becomes free / saturated
    d_const = np.concatenate([np.full(r, -eta), np.full(r, 1.0 + eta)])
    order = np.argsort(events, kind="stable")
    t = events[order]
    slope = np.cumsum(d_slope[order])
    const = np.cumsum(d_const[order])
    # the sum at each breakpoint, from the state after the event (continuous)
    g = slope * t + const
    reached = g >= k
    j = int(np.argmax(reached)) if reached.any() else g.size - 1  # first breakpoint at k
    j = max(j, 1)
    # on the segment [t_{j-1}, t_j] the sum is slope * theta + const (state after event j-1)
    theta = (k - const[j - 1]) / slope[j - 1] if slope[j - 1] > 0 else t[j]
    gamma[pos] = np.clip(theta * sp - eta, 0.0, 1.0)
    return gamma


def leftover_eigenvalue(gamma: np.ndarray, k: float, size: int) -> float:
    """The eigenvalue of ``M`` on the directions where ``W`` vanishes (outside the ``R``
    singular vectors): ``(k - sum(gamma)) / (size - R)``, and 0 when ``size == R``."""
    extra = size - gamma.size
    return max(float(k - gamma.sum()), 0.0) / extra if extra > 0 else 0.0


class _StructureRelaxation(RemembersProx, Penalty):
    """``alpha eta (1 + eta) min_{tr M = k, 0 <= M <= I} tr(W-side (eta I + M)^{-1} ...)``:
    the penalty shared by CMTL (``M`` over tasks) and cASO (``M`` over features)."""

    #: The side of ``W`` on which ``M`` acts: "tasks" (columns) or "features" (rows).
    side: str = "tasks"
    #: The prox solves for ``M`` from the eigendecomposition of ``W^T W`` (or ``W W^T``).
    capabilities = frozenset({"spectral"})

    def __init__(self, alpha: float, eta: float, k: float, n_classes: int = 1):
        self.n_classes = check_classes(n_classes) if self.side == "tasks" else 1
        self.alpha = float(alpha)
        self.eta = float(eta)
        self.k = float(k)
        if not (np.isfinite(self.alpha) and self.alpha >= 0):
            raise ValueError(f"alpha must be finite and >= 0, got {alpha!r}.")
        if not (np.isfinite(self.eta) and self.eta > 0):
            raise ValueError(f"eta must be finite and > 0, got {eta!r}.")
        if not (np.isfinite(self.k) and self.k >= 0):
            raise ValueError(f"k must be finite and >= 0, got {k!r}.")
        self._last: tuple[np.ndarray, float] | None = None

    def _repr_params(self) -> dict:
        out = {"alpha": self.alpha, "eta": self.eta, "k": self.k}
        return out if self.n_classes == 1 else {**out, "n_classes": self.n_classes}

    def _stacked(self, W: np.ndarray) -> np.ndarray:
        """The matrix the structure reads: ``W``, or ``W~`` (``(d K, m)``) for ``K`` columns
        per task (module docstring)."""
        return stack_classes(np.asarray(W, dtype=np.float64), self.n_classes)

    @property
    def scale(self) -> float:
        """``c = alpha * eta * (1 + eta)``."""
        return self.alpha * self.eta * (1.0 + self.eta)

    def size(self, shape: tuple[int, ...]) -> int:
        """The size ``p`` of ``M`` for ``W`` of shape ``(d, m)`` (``(d, m K)`` with ``K``
        columns per task): ``m`` (tasks) or ``d``."""
        return int(shape[1] // self.n_classes if self.side == "tasks" else shape[0])

    def check_size(self, shape: tuple[int, ...]) -> None:
        """Raise a clear error when ``k`` exceeds the size of ``M`` (the set is empty)."""
        p = self.size(shape)
        if self.k > p:
            what = "n_tasks" if self.side == "tasks" else "n_features"
            raise ValueError(
                f"k={self.k:g} exceeds {what}={p}: M is {p} x {p} with eigenvalues in [0, 1] "
                f"and trace k, so k must be <= {what}."
            )

    def _values(self, W: np.ndarray, eta: float):
        """``(U, s, Qt, gamma)`` of ``W`` with the water-filling eigenvalues at ``eta``."""
        self.check_size(W.shape)
        U, s, Qt = safe_svd(self._stacked(W))
        return U, s, Qt, structure_eigenvalues(s, eta, self.k, self.size(W.shape))

    def value(self, W):
        return self._value_at(W, self._fresh_value)

    def _fresh_value(self, W):
        _, s, _, gamma = self._values(W, self.eta)
        return self.scale * float(np.sum(s * s / (self.eta + gamma)))

    def prox(self, V, step):
        V = np.asarray(V, dtype=np.float64)
        if V.size == 0 or self.alpha == 0 or step == 0:
            return V.copy()
        tau = 2.0 * step * self.scale
        U, s, Qt, gamma = self._values(V, self.eta + tau)
        x = s * (self.eta + gamma) / (self.eta + gamma + tau)
        out = unstack_classes((U * x) @ Qt, self.n_classes)
        # gamma is also the optimal M for the output: its value without a second SVD
        self._last = (out.copy(), self.scale * float(np.sum(x * x / (self.eta + gamma))))
        return out

    def alpha_max(self, grad):
        """``inf``: the penalty is at least ``alpha eta ||W||_F^2`` (a ridge), so no finite
        strength makes ``W = 0`` optimal unless the gradient vanishes."""
        return float("inf")

    def dual_bound(self, G):
        """The conjugate in closed form: ``c tr(W A^{-1} W^T)`` with ``A = eta I + M`` has
        conjugate ``tr(U A U^T) / (4 c)``, and the conjugate of the minimum over ``M`` is the
        maximum of the conjugates: ``h^*(U) = (eta ||U||_F^2 + sum of the k largest
        sigma_i(U)^2) / (4 c)`` (``tr(U M U^T)`` over ``tr M = k``, ``0 <= M <= I``, is at
        most the sum of the ``k`` largest eigenvalues of ``U^T U``, a fractional ``k`` taking
        that share of the next one), ``c = alpha eta (1 + eta)``. Quadratic along the ray:
        ``c2 = h^*(G)``."""
        G = self._stacked(G)
        sq = float(np.vdot(G, G))
        if self.alpha == 0:
            return DualBound(float("inf") if sq == 0 else 0.0)
        s2 = np.linalg.svd(G, compute_uv=False) ** 2 if G.size else np.zeros(0)
        whole = int(np.floor(self.k))
        top = float(s2[:whole].sum())
        if whole < s2.size:
            top += (self.k - whole) * float(s2[whole])
        return DualBound(float("inf"), 0.0, (self.eta * sq + top) / (4.0 * self.scale))

    def structure_matrix(self, W: np.ndarray) -> np.ndarray:
        """The optimal ``M`` at ``W``: ``Q diag(gamma) Q^T + g0 (I - Q Q^T)``.

        ``Q`` holds the singular vectors of ``W`` on the side of ``M`` (right singular vectors
        for tasks, left ones for features), ``gamma`` = :func:`structure_eigenvalues` and
        ``g0`` = :func:`leftover_eigenvalue` (``M`` is unique up to that split of the budget
        when ``W`` has fewer than ``k`` non-zero singular values, and up to rotations within
        repeated singular values). Shape ``(p, p)``, ``p`` = ``n_tasks`` or ``n_features``
        (the tasks' ``M``, of the stacked ``W~``, for ``K`` columns per task).
        """
        W = np.asarray(W, dtype=np.float64)
        p = self.size(W.shape)
        if W.size == 0:
            return np.eye(p) * (self.k / p if p else 0.0)
        U, s, Qt, gamma = self._values(W, self.eta)
        Q = Qt.T if self.side == "tasks" else U
        g0 = leftover_eigenvalue(gamma, self.k, p)
        M = (Q * (gamma - g0)) @ Q.T + g0 * np.eye(p)
        return 0.5 * (M + M.T)


class ClusterRelaxation(_StructureRelaxation):
    """Convex clustered multi-task penalty (CMTL, ``M`` over tasks).

    ``h(W) = alpha * eta (1 + eta) * min_M tr(W (eta I + M)^{-1} W^T)`` over ``M``
    (``n_tasks x n_tasks``) with ``tr M = k`` and ``0 <= M <= I``: the convex
    relaxation of k-means clustering of the task weight vectors (Zhou, Chen & Ye, "Clustered
    multi-task learning via alternating structure optimization", NIPS 2011). Directions of the
    task space that ``M`` selects (``gamma = 1``) cost ``alpha eta ||.||^2``, the others
    ``alpha (1 + eta) ||.||^2``. Convex, with the exact prox of the module docstring.

    Parameters
    ----------
    alpha : float
        The strength, ``>= 0``.
    eta : float
        ``> 0``: the cost of the task directions ``M`` selects, relative to ``1 + eta`` for
        the others (the smaller, the tighter the clusters).
    k : float
        The trace of ``M`` (``<= n_tasks``): the number of task clusters.
    """

    name = "clustered"
    side = "tasks"


class SubspaceRelaxation(_StructureRelaxation):
    """Convex alternating structure optimization penalty (cASO, ``M`` over features).

    ``h(W) = alpha * eta (1 + eta) * min_M tr(W^T (eta I + M)^{-1} W)`` over ``M``
    (``n_features x n_features``) with ``tr M = k`` and ``0 <= M <= I``: the convex
    relaxation of ``M = Theta^T Theta`` for a shared ``k``-dimensional
    subspace ``Theta`` of the feature space (Chen, Tang, Liu & Ye, "A convex formulation for
    learning shared structures from multiple tasks", ICML 2009). Weights in the subspace cost
    ``alpha eta ||.||^2``, weights outside it ``alpha (1 + eta) ||.||^2``. Convex, with the
    exact prox of the module docstring.

    Parameters
    ----------
    alpha : float
        ``>= 0``.
    eta : float
        ``> 0``.
    k : float
        The trace of ``M`` (``<= n_features``): the dimension of the shared subspace.
    """

    name = "subspace"
    side = "features"
