"""Norm penalties ``alpha * Omega(W)`` with closed-form proximal operators.

``W`` has shape ``(n_features, n_tasks)`` (one column per task). For each norm the zero matrix
is optimal exactly when the loss gradient at zero ``G`` satisfies ``Omega^*(G) <= alpha``
(``Omega^*`` the dual norm), which gives :meth:`~multitask.penalties.base.Penalty.alpha_max`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from multitask.penalties.base import (
    DualBound,
    Penalty,
    RemembersProx,
    check_strength,
    norm_bound,
    recalled,
)
from multitask.penalties.class_columns import check_classes
from multitask.penalties.prox import (
    group_soft_threshold,
    r_factor,
    soft_threshold,
    spectral_norm,
    spectral_shrink_matrix,
    svt_with_values,
    trace_norm,
)

__all__ = ["L1", "L21", "ColumnL2", "NoPenalty", "Ridge", "TraceNorm"]


class _Scaled(Penalty):
    """A penalty ``alpha * Omega`` with a strength ``alpha >= 0``."""

    def __init__(self, alpha: float):
        self.alpha = check_strength(alpha)

    def _repr_params(self) -> dict:
        return {"alpha": self.alpha}


class L1(_Scaled):
    """``alpha * sum_jt |W_jt|``; prox: soft-thresholding at ``step * alpha``.

    ``alpha_max = max_jt |G_jt|``.
    """

    name = "l1"
    capabilities = frozenset({"row_prox", "blockwise", "lp"})

    def value(self, W):
        return self.alpha * float(np.abs(W).sum())

    def prox(self, V, step):
        return soft_threshold(V, step * self.alpha)

    def alpha_max(self, grad):
        return float(np.max(np.abs(grad))) if grad.size else 0.0

    def dual_bound(self, G):
        """``s_max = alpha / ||G||_inf`` (the dual norm of l1)."""
        return norm_bound(self.alpha, self.alpha_max(G))

    def row_prox_params(self):
        return (self.alpha, 0.0, 0.0)

    def lp_constraints(self, d: int, m: int):
        """``-u_jt <= W_jt <= u_jt``: ``n_aux = d m`` bounds in the order of ``vec(W) =
        W.T.ravel()`` (task-major, index ``t d + j``), of cost ``alpha`` each
        (:meth:`lp_cost`): ``alpha sum u = alpha ||W||_1`` at the optimum."""
        n = d * m
        eye = sp.identity(n, format="csr")
        A_w = sp.vstack([eye, -eye], format="csr")
        A_u = sp.vstack([-eye, -eye], format="csr")
        return A_w, A_u, np.zeros(2 * n), n

    def lp_cost(self, d: int, m: int) -> np.ndarray:
        """``alpha`` on each bound ``u_jt >= |W_jt|`` (:meth:`lp_constraints`)."""
        return np.full(d * m, self.alpha)


class L21(_Scaled):
    """``alpha * sum_j ||W_j.||_2`` over feature rows (joint feature selection).

    prox: each row ``v_j`` scaled by ``max(1 - step * alpha / ||v_j||_2, 0)``;
    ``alpha_max = max_j ||G_j.||_2``.
    """

    name = "l21"
    capabilities = frozenset({"row_prox", "blockwise"})

    def value(self, W):
        return self.alpha * float(np.linalg.norm(W, axis=1).sum())

    def prox(self, V, step):
        return group_soft_threshold(V, step * self.alpha, axis=1)

    def alpha_max(self, grad):
        # the largest squared row norm, then one square root (no d x m temporary)
        return float(np.sqrt(np.max(np.einsum("jt,jt->j", grad, grad)))) if grad.size else 0.0

    def dual_bound(self, G):
        """``s_max = alpha / max_j ||G_j.||_2`` (the dual norm of l2,1)."""
        return norm_bound(self.alpha, self.alpha_max(G))

    def row_prox_params(self):
        return (0.0, self.alpha, 0.0)

    # "blockwise": the squared row norms are summed over the task blocks (d numbers)
    def block_stats(self, V):
        """``sum_t V_jt^2`` over the block's tasks, shape ``(d,)``."""
        return np.einsum("jt,jt->j", V, V)

    def combine_stats(self, a, b):
        """Sum (the squared row norms of the whole ``V``)."""
        return b if a is None else (a if b is None else a + b)

    def block_plan(self, stats, step):
        """Row scales ``max(1 - step alpha / ||v_j||, 0)`` and the value
        ``alpha sum_j (||v_j|| - step alpha)_+`` of the prox output."""
        norms = np.sqrt(np.asarray(stats, dtype=np.float64))
        t = step * self.alpha
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(norms > t, 1.0 - t / np.where(norms > 0, norms, 1.0), 0.0)
        return scale, self.alpha * float(np.sum(norms * scale))

    def block_prox(self, V, plan, step):
        return V * plan[:, None]

    def block_value(self, U, plan):
        return 0.0

    def block_alpha_stats(self, grad):
        return self.block_stats(grad)

    def alpha_max_from_stats(self, stats):
        """``max_j ||G_j.||_2`` from the summed squared row norms."""
        return float(np.sqrt(np.max(stats))) if stats is not None and np.size(stats) else 0.0


class ColumnL2(_Scaled):
    """``alpha * sum_t ||W_.t||_2`` over task columns (a few tasks with their own weights).

    prox: each column scaled by ``max(1 - step * alpha / ||v_t||_2, 0)``;
    ``alpha_max = max_t ||G_.t||_2``. With ``n_classes=K`` (a multinomial model, ``K``
    columns per task, column ``t K + k``) the group of task ``t`` is its ``K`` columns
    together, ``||W_{.,tK:(t+1)K}||_F``: a task is an outlier for all its classes at once.
    """

    name = "column_l2"
    capabilities = frozenset({"blockwise"})

    def __init__(self, alpha: float, n_classes: int = 1):
        super().__init__(alpha)
        self.n_classes = check_classes(n_classes)
        if self.n_classes > 1:  # the distributed blocks split tasks, not class groups
            vars(self)["capabilities"] = frozenset()

    def _repr_params(self) -> dict:
        out = super()._repr_params()
        return out if self.n_classes == 1 else {**out, "n_classes": self.n_classes}

    def group_norms(self, W: np.ndarray) -> np.ndarray:
        """The norm of each task's group of columns, shape ``(m,)``."""
        if self.n_classes == 1:
            return np.linalg.norm(W, axis=0)
        W3 = np.asarray(W).reshape(W.shape[0], -1, self.n_classes)
        return np.sqrt(np.einsum("jtk,jtk->t", W3, W3))

    def value(self, W):
        return self.alpha * float(self.group_norms(W).sum())

    def prox(self, V, step):
        if self.n_classes == 1:
            return group_soft_threshold(V, step * self.alpha, axis=0)
        V = np.asarray(V, dtype=np.float64)
        norms = self.group_norms(V)
        t = step * self.alpha
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(norms > t, 1.0 - t / np.where(norms > 0, norms, 1.0), 0.0)
        return V * np.repeat(scale, self.n_classes)[None, :]

    def alpha_max(self, grad):
        return float(np.max(self.group_norms(grad))) if grad.size else 0.0

    def dual_bound(self, G):
        """``s_max = alpha / max_t ||G_.t||_2`` (over each task's group of columns)."""
        return norm_bound(self.alpha, self.alpha_max(G))


class TraceNorm(RemembersProx, _Scaled):
    """``alpha * ||W||_* = alpha * sum_i sigma_i(W)``; prox: singular value thresholding.

    ``alpha_max = ||G||_2`` (the largest singular value). The singular values of the last prox
    output are kept, so evaluating the penalty there (as every solver iteration does) costs no
    second SVD.
    """

    name = "trace"
    capabilities = frozenset({"low_rank", "blockwise", "spectral_threshold"})

    def __init__(self, alpha: float):
        super().__init__(alpha)
        self._last: tuple | None = None

    def value(self, W):
        if W.size == 0:
            return 0.0
        cached = recalled(self._last, W)
        return self.alpha * (trace_norm(W) if cached is None else cached)

    def spectral_strength(self) -> float:
        return self.alpha

    def remember_prox(self, out: np.ndarray, value: float,
                      singular_values: np.ndarray | None = None) -> None:
        """Record that ``out`` (a prox output computed elsewhere, such as the compiled ADMM
        step of :mod:`multitask.solvers.admm`) has trace norm ``value``, so that
        :meth:`value` there costs no SVD."""
        self._last = (np.array(out, dtype=np.float64, copy=True), float(value))

    def prox(self, V, step):
        out, s = svt_with_values(V, step * self.alpha)
        self._last = (out.copy(), float(s.sum()))
        return out

    def alpha_max(self, grad):
        return spectral_norm(grad) if grad.size else 0.0

    def dual_bound(self, G):
        """``s_max = alpha / ||G||_2`` (the spectral norm, dual of the trace norm)."""
        return norm_bound(self.alpha, self.alpha_max(G))

    # "blockwise": the R factor of V^T (R^T R = V V^T, d(d+1)/2 numbers) is combined over the
    # task blocks; the prox is then V -> M V with a d x d matrix M, whatever the number of tasks
    def block_stats(self, V):
        """The triangular factor ``R`` of ``V^T`` (:func:`~multitask.penalties.prox.r_factor`)."""
        return r_factor(V)

    def combine_stats(self, a, b):
        """``R`` of the stacked factors (tall-skinny QR): ``R^T R = V_a V_a^T + V_b V_b^T``."""
        if a is None or b is None:
            return b if a is None else a
        return np.asarray(np.linalg.qr(np.vstack([a, b]), mode="r"))

    def block_plan(self, stats, step):
        """``M = Z_k diag((s_k - step alpha) / s_k) Z_k^T`` from the SVD of ``R`` and the value
        ``alpha sum_k (s_k - step alpha)`` of the prox output (singular value thresholding)."""
        t = step * self.alpha
        M, s_new = spectral_shrink_matrix(np.asarray(stats, dtype=np.float64),
                                          lambda s: np.maximum(s - t, 0.0))
        return M, self.alpha * float(s_new.sum())

    def block_prox(self, V, plan, step):
        return plan @ V

    def block_value(self, U, plan):
        return 0.0

    def block_alpha_stats(self, grad):
        return r_factor(grad)

    def alpha_max_from_stats(self, stats):
        """``||G||_2``: the largest singular value of ``R``."""
        if stats is None or np.size(stats) == 0:
            return 0.0
        return float(np.linalg.svd(stats, compute_uv=False)[0])


class Ridge(_Scaled):
    """``(alpha / 2) * ||W||_F^2``; prox: ``V / (1 + step * alpha)``. No ``alpha_max``."""

    name = "ridge"
    capabilities = frozenset({"row_prox", "blockwise"})
    is_smooth = True

    def value(self, W):
        return 0.5 * self.alpha * float(np.sum(W * W))

    def prox(self, V, step):
        return V / (1.0 + step * self.alpha)

    def dual_bound(self, G):
        """``r^*(U) = ||U||_F^2 / (2 alpha)``: ``c2 = ||G||_F^2 / (2 alpha)`` (for
        ``alpha = 0`` the indicator of ``{0}``)."""
        sq = float(np.vdot(G, G))
        if self.alpha == 0:
            return DualBound(float("inf") if sq == 0 else 0.0)
        return DualBound(float("inf"), 0.0, sq / (2.0 * self.alpha))

    def free_directions(self, shape, ridge: float = 0.0):
        """Every entry is free when ``alpha = 0`` (least squares)."""
        return (np.ones(shape[0], dtype=bool), None) if self.alpha == 0 else None

    def row_prox_params(self):
        return (0.0, 0.0, self.alpha)


class NoPenalty(Penalty):
    """The zero penalty (prox is the identity); ``alpha_max = 0``."""

    name = "none"
    capabilities = frozenset({"row_prox", "blockwise"})

    def value(self, W):
        return 0.0

    def prox(self, V, step):
        return np.array(V, copy=True)

    def alpha_max(self, grad):
        return 0.0

    def dual_bound(self, G):
        """The conjugate of zero is the indicator of ``{0}``: ``s_max = 0`` unless
        ``G = 0``."""
        return DualBound(0.0 if np.any(G) else float("inf"))

    def free_directions(self, shape, ridge: float = 0.0):
        """Every entry is free."""
        return np.ones(shape[0], dtype=bool), None

    def row_prox_params(self):
        return (0.0, 0.0, 0.0)
