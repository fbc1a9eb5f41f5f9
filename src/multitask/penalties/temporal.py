"""Temporal multi-task models: tasks are time points, weights change smoothly or by jumps.

Zhou, Yuan, Liu & Ye, "A multi-task learning formulation for predicting disease
progression" (KDD 2011; MALSAR's ``TGL``) and Zhou, Liu, Narayan & Ye, "Modeling disease
progression via fused sparse group lasso" (KDD 2012; MALSAR's ``cFSGL``). The tasks
``t = 1..m`` are ordered in time; ``H`` is the ``(m, m - 1)`` difference matrix
(``H[t, t] = 1``, ``H[t + 1, t] = -1``), so ``W H = [w_1 - w_2, ..., w_{m-1} - w_m]`` for ``W``
of shape ``(n_features, n_tasks)``.

* Temporal group lasso (:class:`TemporalGroupLasso`)::

      alpha_smooth ||W H||_F^2 + alpha_group sum_j ||W_j.||_2

  the first term is the penalty's ``"smooth"`` part (the graph term of
  :class:`~multitask.penalties.graph.GraphRegularization` for the chain graph, ``H H^T`` its
  Laplacian); the prox is the row group soft-thresholding. (MALSAR's ``rho1 ||W||_F^2`` is the
  estimators' ridge term ``alpha_l2``.)
* Fused sparse group lasso (:class:`FusedSparseGroupLasso`)::

      alpha_l1 ||W||_1 + alpha_fused ||W H||_1 + alpha_group sum_j ||W_j.||_2

  non-smooth and not separable over the entries, but separable over the feature rows. Its
  prox is exact, row by row: the 1-D total-variation prox (:func:`prox_tv1d`, Condat's direct
  algorithm), then soft-thresholding at ``step * alpha_l1`` (Friedman, Hastie, Hoefling &
  Tibshirani, "Pathwise coordinate optimization": the prox of l1 + TV), then the group
  soft-thresholding of the row at ``step * alpha_group``. The last step is exact because
  ``l1 + TV`` is positively homogeneous: at ``w = c u`` with ``c in [0, 1]`` its
  subdifferential contains that at ``u`` (:func:`prox_fused_sparse_group_lasso`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from multitask.penalties.base import Penalty, check_strength, norm_bound
from multitask.penalties.class_columns import check_classes, stack_classes, unstack_classes
from multitask.penalties.fused_rows import fsgl_gauge_rows
from multitask.penalties.graph import GraphRegularization
from multitask.penalties.prox import group_soft_threshold, soft_threshold
from multitask.penalties.row_operators import tv1d_row

__all__ = [
    "FusedSparseGroupLasso",
    "TemporalGroupLasso",
    "chain_laplacian",
    "prox_fused_sparse_group_lasso",
    "prox_tv1d",
    "temporal_difference_matrix",
]


def temporal_difference_matrix(n_tasks: int) -> np.ndarray:
    """The ``(m, m - 1)`` matrix ``H`` with ``(W H)_.t = w_t - w_{t+1}`` (MALSAR's ``R``)."""
    m = int(n_tasks)
    if m < 1:
        raise ValueError(f"n_tasks must be >= 1, got {n_tasks!r}.")
    H = np.zeros((m, max(m - 1, 0)))
    idx = np.arange(m - 1)
    H[idx, idx] = 1.0
    H[idx + 1, idx] = -1.0
    return H


def chain_laplacian(n_tasks: int) -> np.ndarray:
    """``H H^T``: the Laplacian of the path graph ``1 - 2 - ... - m`` (unit weights)."""
    H = temporal_difference_matrix(n_tasks)
    return H @ H.T


@njit(cache=True)
def _tv1d_rows(V, lam):  # pragma: no cover - compiled
    d, m = V.shape
    out = np.empty((d, m))
    row = np.empty(m)
    res = np.empty(m)
    for j in range(d):
        for t in range(m):
            row[t] = V[j, t]
        tv1d_row(row, lam, res)
        for t in range(m):
            out[j, t] = res[t]
    return out


def prox_tv1d(V: np.ndarray, lam: float) -> np.ndarray:
    """Prox of the 1-D total variation along the last axis, row by row.

    Each row ``v`` of ``V`` (a 1-D array is one row) is mapped to
    ``argmin_x 0.5 ||x - v||_2^2 + lam * sum_k |x_{k+1} - x_k|`` (the fused lasso signal
    approximator), computed exactly by Condat's direct algorithm ("A direct algorithm for 1-D
    total variation denoising", 2013). Returns a new array.

    Parameters
    ----------
    V : array-like of shape (n,) or (n_rows, n)
    lam : float
        ``>= 0``.

    Returns
    -------
    ndarray of the shape of ``V``
    """
    lam = check_strength(lam, "lam")
    A = np.asarray(V, dtype=np.float64)
    if A.ndim not in (1, 2):
        raise ValueError(f"V must be 1-D or 2-D, got {A.ndim} dimensions.")
    if not np.all(np.isfinite(A)):
        raise ValueError("V must hold finite numbers.")
    rows = np.ascontiguousarray(A.reshape(1, -1) if A.ndim == 1 else A)
    if rows.size == 0 or lam == 0:
        return np.array(A, copy=True)
    # scale-free arithmetic: the algorithm is exact in real arithmetic; divide by the largest
    # magnitude so that tiny or huge inputs round like ordinary ones
    scale = float(np.abs(rows).max())
    if scale == 0:
        return np.zeros_like(A)
    out = _tv1d_rows(rows / scale, lam / scale) * scale
    return out.reshape(A.shape)


def prox_fused_sparse_group_lasso(V: np.ndarray, lam_l1: float, lam_fused: float,
                                  lam_group: float, n_classes: int = 1) -> np.ndarray:
    """Prox of ``lam_l1 ||W||_1 + lam_fused ||W H||_1 + lam_group sum_j ||W_j.||_2``.

    Row by row: ``group_soft(soft(prox_tv1d(v, lam_fused), lam_l1), lam_group)``. The first
    composition is the prox of ``l1 + TV`` (Friedman, Hastie, Hoefling & Tibshirani); the
    second holds because ``f = l1 + TV`` is positively homogeneous: with ``u = prox_f(v)``
    and ``w = c u`` (``c in [0, 1]``) the group step's output, ``v - u in df(u) subset
    df(w)`` and ``u - w in lam_group d||.||_2(w)``, so ``v - w in d(f + lam_group ||.||_2)(w)``.

    Parameters
    ----------
    V : ndarray of shape (n_features, n_tasks)
    lam_l1, lam_fused, lam_group : float
        ``>= 0``.
    n_classes : int, default=1
        Weight columns per task (``K`` of a multinomial model, ``V`` of shape ``(n_features,
        n_tasks K)``): the fused term runs along the time points of each class separately
        (the total variation of a sum of chains is separable), the group term over the
        whole row.

    Returns
    -------
    ndarray of shape (n_features, n_tasks)
    """
    if lam_fused > 0 and n_classes > 1:
        V = np.asarray(V, dtype=np.float64)
        U = unstack_classes(prox_tv1d(stack_classes(V, n_classes), lam_fused), n_classes)
    elif lam_fused > 0:
        U = prox_tv1d(V, lam_fused)
    else:
        U = np.array(V, dtype=np.float64, copy=True)
    if lam_l1 > 0:
        U = soft_threshold(U, lam_l1)
    if lam_group > 0:
        U = group_soft_threshold(U, lam_group, axis=1)
    return U


class TemporalGroupLasso(GraphRegularization):
    """``alpha_smooth ||W H||_F^2 + alpha_group sum_j ||W_j.||_2`` (temporal group lasso).

    Zhou, Yuan, Liu & Ye, "A multi-task learning formulation for predicting disease
    progression" (MALSAR's ``TGL``; its ``rho1 ||W||_F^2`` is the estimators' ridge term).
    The temporal term ``alpha_smooth tr(W H H^T W^T)`` is the ``"smooth"`` part (as in
    :class:`~multitask.penalties.graph.GraphRegularization` for the chain graph); the prox is
    the group soft-thresholding of the feature rows. ``alpha_max`` is the smallest
    ``alpha_group`` with ``W = 0``: ``max_j ||G_j.||_2``. ``"task_coupling"``: ``K = 2
    alpha_smooth H H^T``; ``"row_prox"``: the elastic-net row operator ``(0, alpha_group, 0)``.

    Parameters
    ----------
    alpha_smooth : float
        Weight of ``||W H||_F^2`` (>= 0).
    alpha_group : float
        Weight of the row l2,1 norm (>= 0).
    n_tasks : int
        Number of time points ``m``.
    n_classes : int, default=1
        Weight columns per task (``K`` of a multinomial model): the temporal term then ties
        each class to the same class at the neighbouring time points (``H kron I_K``), and
        the group term selects a feature for every time point and class.
    """

    name = "temporal_group_lasso"

    def __init__(self, alpha_smooth: float, alpha_group: float, n_tasks: int,
                 n_classes: int = 1):
        # the path graph's Laplacian is valid by construction and its largest eigenvalue
        # known, 2 + 2 cos(pi / m): the parent's check and eigendecomposition are not needed
        m = int(n_tasks)
        self._set(check_strength(alpha_smooth, "alpha_smooth"), chain_laplacian(m), 0.0,
                  n_classes, 2.0 + 2.0 * float(np.cos(np.pi / m)) if m > 1 else 0.0,
                  chain=True)
        self.alpha_smooth = self.alpha
        self.alpha_group = check_strength(alpha_group, "alpha_group")

    def _repr_params(self) -> dict:
        out = {"alpha_smooth": self.alpha_smooth, "alpha_group": self.alpha_group,
               "n_tasks": self.laplacian.shape[0]}
        return out if self.n_classes == 1 else {**out, "n_classes": self.n_classes}

    def prox_value(self, W: np.ndarray) -> float:
        return self.alpha_group * float(np.linalg.norm(W, axis=1).sum()) if W.size else 0.0

    def prox(self, V: np.ndarray, step: float) -> np.ndarray:
        return group_soft_threshold(np.asarray(V, dtype=np.float64),
                                    float(step) * self.alpha_group, axis=1)

    def row_prox_params(self):
        """``(0, alpha_group, 0)``: the row l2,1 norm."""
        return (0.0, self.alpha_group, 0.0)

    def alpha_max(self, grad: np.ndarray) -> float:
        return float(np.linalg.norm(grad, axis=1).max()) if grad.size else 0.0

    def dual_bound(self, G):
        """Of the prox part ``alpha_group sum_j ||W_j.||_2``: ``s_max = alpha_group / max_j
        ||G_j.||_2`` (``G`` includes the smooth part's gradient)."""
        return norm_bound(self.alpha_group, self.alpha_max(G))

    def prox_part_is_zero(self) -> bool:
        return self.alpha_group == 0


class FusedSparseGroupLasso(Penalty):
    """``alpha_l1 ||W||_1 + alpha_fused ||W H||_1 + alpha_group sum_j ||W_j.||_2``.

    The convex fused sparse group lasso of Zhou, Liu, Narayan & Ye ("Modeling disease
    progression via fused sparse group lasso"; MALSAR's ``cFSGL``): features selected for
    all time points at once (l2,1), sparse (l1), with weights constant over runs of time
    points (the fused term ``sum_j sum_t |W_jt - W_j,t+1|``). The prox is exact
    (:func:`prox_fused_sparse_group_lasso`). ``alpha_max`` is the smallest ``alpha_group``
    with ``W = 0`` for the given ``alpha_l1`` and ``alpha_fused``: ``max_j ||soft(prox_tv(G_j.,
    alpha_fused), alpha_l1)||_2``, the largest distance of a row of ``G`` to the subdifferential
    at zero of the other two terms (Moreau's decomposition).

    Parameters
    ----------
    alpha_l1 : float
        Weight of the entrywise l1 norm (>= 0).
    alpha_fused : float
        Weight of the fused term ``||W H||_1`` (>= 0).
    alpha_group : float
        Weight of the row l2,1 norm (>= 0).
    n_classes : int, default=1
        Weight columns per task (``K`` of a multinomial model): the fused term then runs along
        the time points of each class (``W H`` per class), the l1 and group terms over the
        whole row. Its rows are no longer one chain: the penalty then offers no
        ``"row_prox"`` (block coordinate descent, working sets), only its exact prox.
    """

    name = "fused_sparse_group_lasso"
    capabilities = frozenset({"row_prox"})
    row_prox_family = "fused_sparse_group_lasso"

    def __init__(self, alpha_l1: float, alpha_fused: float, alpha_group: float,
                 n_classes: int = 1):
        self.alpha_l1 = check_strength(alpha_l1, "alpha_l1")
        self.alpha_fused = check_strength(alpha_fused, "alpha_fused")
        self.alpha_group = check_strength(alpha_group, "alpha_group")
        self.n_classes = check_classes(n_classes)
        if self.n_classes > 1:
            vars(self)["capabilities"] = frozenset()

    def _repr_params(self) -> dict:
        out = {"alpha_l1": self.alpha_l1, "alpha_fused": self.alpha_fused,
               "alpha_group": self.alpha_group}
        return out if self.n_classes == 1 else {**out, "n_classes": self.n_classes}

    def _fused(self, W: np.ndarray) -> float:
        """``||W H||_1`` (per class for ``K`` columns per task)."""
        if self.n_classes == 1:
            return float(np.abs(np.diff(W, axis=1)).sum())
        W3 = W.reshape(W.shape[0], -1, self.n_classes)
        return float(np.abs(np.diff(W3, axis=1)).sum())

    def value(self, W: np.ndarray) -> float:
        if W.size == 0:
            return 0.0
        return (self.alpha_l1 * float(np.abs(W).sum())
                + self.alpha_fused * self._fused(W)
                + self.alpha_group * float(np.linalg.norm(W, axis=1).sum()))

    def prox(self, V: np.ndarray, step: float) -> np.ndarray:
        s = float(step)
        return prox_fused_sparse_group_lasso(V, s * self.alpha_l1, s * self.alpha_fused,
                                             s * self.alpha_group, self.n_classes)

    def row_prox_params(self):
        """``(alpha_l1, alpha_group, alpha_fused)``: the row operator of the family
        ``"fused_sparse_group_lasso"`` (:func:`~multitask.penalties.row_operators.
        fsgl_row_prox`)."""
        return (self.alpha_l1, self.alpha_group, self.alpha_fused)

    def alpha_max(self, grad: np.ndarray) -> float:
        if not grad.size:
            return 0.0
        inner = prox_fused_sparse_group_lasso(grad, self.alpha_l1, self.alpha_fused, 0.0,
                                              self.n_classes)
        return float(np.linalg.norm(inner, axis=1).max())

    def dual_norm(self, G: np.ndarray) -> float:
        """``gamma(G) = min {s >= 0 : G in s dh(0)}``, the dual norm of the penalty: the
        largest of the rows' gauges, each computed exactly along the total-variation path
        (:func:`~multitask.penalties.fused_rows.fsgl_row_gauge`); ``inf`` when ``G`` is in no
        multiple of ``dh(0)``."""
        G = np.ascontiguousarray(G, dtype=np.float64)
        if not G.size:
            return 0.0
        return float(fsgl_gauge_rows(G, self.alpha_l1, self.alpha_group, self.alpha_fused,
                                     self.n_classes))

    def dual_bound(self, G):
        """The penalty is a norm (positively homogeneous), whose conjugate is the indicator of
        ``dh(0)``: ``s_max = 1 / gamma(G)`` with ``gamma`` the dual norm
        (:meth:`dual_norm`)."""
        return norm_bound(1.0, self.dual_norm(G))
