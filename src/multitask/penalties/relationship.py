"""Multi-task relationship learning (MTRL): a learned task covariance, as a squared trace norm.

Zhang & Yeung ("A convex formulation for learning task relationships in multi-task learning",
UAI 2010) penalize ``W`` (``n_features x n_tasks``) jointly with a task covariance ``Omega``
(``n_tasks x n_tasks``)::

    (alpha / 2) * min_{Omega >= 0, tr Omega = 1} tr(W Omega^{-1} W^T)

(``tr(W Omega^{-1} W^T) = +inf`` when the rows of ``W`` leave the range of ``Omega``). The
minimizer is ``Omega(W) = (W^T W)^{1/2} / tr((W^T W)^{1/2})`` and, with the singular values
``s_i`` of ``W``, the minimum is ``(sum_i s_i)^2 = ||W||_*^2`` (Cauchy-Schwarz:
``sum_i s_i^2 / o_i >= (sum_i s_i)^2`` for ``sum_i o_i = 1``, with equality at
``o_i = s_i / sum s``). So the joint penalty is the convex function
``(alpha / 2) ||W||_*^2`` of ``W`` alone (:class:`TaskRelationship`), whose prox is exact
(:func:`prox_squared_l1`, applied to the singular values); the joint minimizer over
``(W, Omega)`` is ``(W*, Omega(W*))`` (:func:`task_covariance`). The paper's ``||W||_F^2`` term
is the library's common ridge term ``alpha_l2``.
"""

from __future__ import annotations

import numpy as np

from multitask.penalties.base import DualBound, Penalty, RemembersProx
from multitask.penalties.class_columns import check_classes, stack_classes, unstack_classes
from multitask.penalties.prox import safe_svd

__all__ = ["TaskRelationship", "prox_squared_l1", "task_correlation", "task_covariance"]


def prox_squared_l1(s: np.ndarray, mu: float) -> np.ndarray:
    """Prox of ``(mu / 2) (sum_i x_i)^2`` over ``x >= 0`` at a non-negative vector ``s``.

    ``argmin_{x >= 0} 0.5 ||x - s||^2 + (mu / 2) (sum_i x_i)^2``: the optimality conditions
    give ``x_i = max(s_i - mu S, 0)`` with ``S = sum_i x_i``; with ``s`` sorted decreasingly
    and the ``j`` largest values active, ``S = (s_1 + ... + s_j) / (1 + j mu)``, and ``j`` is
    the largest index with ``s_j > mu S_j``. (For ``s >= 0`` this is also the prox of
    ``(mu / 2) ||x||_1^2``, the squared trace norm on singular values.)

    Parameters
    ----------
    s : ndarray of shape (R,)
        Non-negative values, in any order.
    mu : float
        ``>= 0``.

    Returns
    -------
    x : ndarray of shape (R,)
        In the order of ``s``.
    """
    s = np.asarray(s, dtype=np.float64)
    if s.size == 0 or mu == 0:
        return s.copy()
    order = np.argsort(-s, kind="stable")
    ss = s[order]
    j = np.arange(1, ss.size + 1)
    S = np.cumsum(ss) / (1.0 + j * mu)
    active = ss - mu * S > 0
    if not active.any():
        return np.zeros_like(s)
    jstar = int(np.flatnonzero(active)[-1])
    x = np.zeros_like(s)
    x[order] = np.maximum(ss - mu * S[jstar], 0.0)
    return x


def task_covariance(W: np.ndarray) -> np.ndarray:
    """The optimal task covariance ``Omega(W) = (W^T W)^{1/2} / tr((W^T W)^{1/2})``.

    Computed from the SVD ``W = U diag(s) Q^T`` as ``Q diag(s / sum s) Q^T``. At ``W = 0``
    every feasible ``Omega`` is optimal; ``I / n_tasks`` is returned.

    Parameters
    ----------
    W : ndarray of shape (n_features, n_tasks)

    Returns
    -------
    ndarray of shape (n_tasks, n_tasks)
        Symmetric, positive semi-definite, trace 1.
    """
    W = np.asarray(W, dtype=np.float64)
    m = W.shape[1]
    if W.size == 0:
        return np.eye(m) / max(m, 1)
    _, s, Qt = safe_svd(W)
    total = float(s.sum())
    if not total > 0:
        return np.eye(m) / m
    Omega = (Qt.T * (s / total)) @ Qt
    return 0.5 * (Omega + Omega.T)


def task_correlation(Omega: np.ndarray) -> np.ndarray:
    """Correlation matrix of a task covariance: ``Omega_st / sqrt(Omega_ss Omega_tt)``.

    Rows and columns of a task with ``Omega_tt = 0`` (a task whose weights are all zero) are 0;
    the other diagonal entries are 1.
    """
    Omega = np.asarray(Omega, dtype=np.float64)
    dvals = np.sqrt(np.clip(np.diag(Omega), 0.0, None))
    ok = dvals > 0
    safe = np.where(ok, dvals, 1.0)
    C = Omega / np.outer(safe, safe)
    C[~ok, :] = 0.0
    C[:, ~ok] = 0.0
    C[np.flatnonzero(ok), np.flatnonzero(ok)] = 1.0
    return np.clip(C, -1.0, 1.0)


class TaskRelationship(RemembersProx, Penalty):
    """``(alpha / 2) min_{Omega >= 0, tr Omega = 1} tr(W Omega^{-1} W^T) = (alpha / 2) ||W||_*^2``.

    The task-relationship term of MTRL (module docstring); convex. Its prox is
    ``U diag(prox_squared_l1(s, step * alpha)) Q^T`` for ``V = U diag(s) Q^T``. Zero is
    optimal only where the loss gradient vanishes (the penalty is differentiable at 0 with
    zero gradient), so :meth:`alpha_max` is ``inf``. :meth:`task_covariance` gives the
    ``Omega`` that attains the minimum.

    With ``n_classes=K`` (a multinomial model, ``W`` of shape ``(n_features, m K)``) the task
    covariance ``Omega`` stays over the ``m`` tasks and acts as ``Omega kron I_K``: class ``k``
    of task ``t`` relates to class ``k`` of task ``t'`` as the tasks relate, and the penalty is
    ``(alpha / 2) ||W~||_*^2`` of the stacked ``W~`` of shape ``(n_features K, m)``
    (:mod:`multitask.penalties.class_columns`); :meth:`task_covariance` is then ``m x m``.

    Parameters
    ----------
    alpha : float
        ``>= 0``.
    n_classes : int, default=1
        Weight columns per task.
    """

    name = "task_relationship"
    #: The prox thresholds the singular values of ``V``.
    capabilities = frozenset({"spectral"})

    def __init__(self, alpha: float, n_classes: int = 1):
        self.alpha = float(alpha)
        if not (np.isfinite(self.alpha) and self.alpha >= 0):
            raise ValueError(f"alpha must be finite and >= 0, got {alpha!r}.")
        self.n_classes = check_classes(n_classes)
        self._last: tuple[np.ndarray, float] | None = None

    def _repr_params(self) -> dict:
        out = {"alpha": self.alpha}
        return out if self.n_classes == 1 else {**out, "n_classes": self.n_classes}

    def value(self, W):
        return self._value_at(W, self._fresh_value)

    def _fresh_value(self, W):
        S = stack_classes(np.asarray(W, dtype=np.float64), self.n_classes)
        s = np.linalg.svd(S, compute_uv=False)
        return 0.5 * self.alpha * float(s.sum()) ** 2

    def prox(self, V, step):
        V = np.asarray(V, dtype=np.float64)
        if V.size == 0 or self.alpha == 0 or step == 0:
            return V.copy()
        U, s, Qt = safe_svd(stack_classes(V, self.n_classes))
        x = prox_squared_l1(s, step * self.alpha)
        r = int(np.count_nonzero(x))
        out = unstack_classes((U[:, :r] * x[:r]) @ Qt[:r], self.n_classes)
        self._last = (out.copy(), 0.5 * self.alpha * float(x.sum()) ** 2)
        return out

    def alpha_max(self, grad):
        return float("inf")

    def dual_bound(self, G):
        """``((alpha/2) ||.||_*^2)^*(U) = ||U||_2^2 / (2 alpha)`` (the squared spectral norm):
        ``c2 = ||G||_2^2 / (2 alpha)``."""
        G = stack_classes(np.asarray(G, dtype=np.float64), self.n_classes)
        spec = float(np.linalg.norm(G, 2)) if G.size else 0.0
        if self.alpha == 0:
            return DualBound(float("inf") if spec == 0 else 0.0)
        return DualBound(float("inf"), 0.0, spec * spec / (2.0 * self.alpha))

    def task_covariance(self, W: np.ndarray) -> np.ndarray:
        """The minimizing ``Omega`` at ``W`` (:func:`task_covariance`; of the stacked ``W~``
        for ``K`` columns per task: ``m x m``)."""
        return task_covariance(stack_classes(np.asarray(W, dtype=np.float64), self.n_classes))
