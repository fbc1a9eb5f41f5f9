"""Exact steps on the support of an elastic-net iterate without group rows or task coupling.

For the quadratic model of block coordinate descent (:mod:`multitask.solvers.bcd`) whose rows
carry no l2 group term and whose tasks are not coupled,

    min_W  sum_t [ 0.5 w_t^T H_t w_t - C_t^T w_t + sum_j (a_j |w_jt| + (c_j / 2) w_jt^2) ],

the tasks separate into weighted elastic nets (the lasso, the capped-l1 stages). On the
support ``A_t`` of ``w_t`` with its signs ``s_t`` fixed the objective is the quadratic
``0.5 w^T (H_t + diag c)_AA w - (C_t - a s_t)_A^T w``, whose minimizer solves

    (H_t + diag c)_AA  w_A = (C_t - a s_t)_A

where that matrix is regular (solved through its eigendecomposition). Coordinate descent
reaches that point only linearly, slowly where the support's Gram matrix is ill-conditioned
(more features than rows, correlated features); one solve reaches it. The step from ``w_t``
towards the solve's point is cut where the first entry would change sign (that entry set to
zero: the objective, a convex quadratic on the orthant face, falls along the whole segment).
Where the matrix is singular (a support of more features than the task's rows) and the face's
gradient has a component ``g_0`` in its null space (that of the penalty's term ``a s_t``: the
loss's term ``H_t w - C_t`` has none, ``C_t`` lying in the range of ``H_t``), the objective
falls linearly along ``-g_0``: the step follows it to the first change of sign, which removes
a feature from the support (the step of the homotopy methods, Osborne, Presnell & Turlach, "A
new approach to variable selection in least squares problems"). The steps repeat on the
smaller support, at most ``max_steps`` times; a task's point is kept only where its objective
fell. The entries that should enter the support are left to the epochs of coordinate descent,
which follow. This is the support step of an active-set method (as the fused model's
:mod:`multitask.solvers.fused_newton`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["support_point", "violations"]

#: Eigenvalues of a support's Hessian at most this share of its largest are taken as zero.
_NULL_RTOL = 1e-10


def _task_objectives(H: np.ndarray, C: np.ndarray, W: np.ndarray, a: np.ndarray,
                     c: np.ndarray) -> np.ndarray:
    """``f_t(w_t)`` of every task (module docstring), shape ``(m,)``."""
    HW = np.einsum("tij,jt->it", H, W) if H.shape[0] > 1 else H[0] @ W
    return (np.einsum("jt,jt->t", W, 0.5 * HW - C) + a @ np.abs(W)
            + 0.5 * c @ (W * W))


def violations(C: np.ndarray, W: np.ndarray, P: np.ndarray, a: np.ndarray,
               c: np.ndarray) -> np.ndarray:
    """Each task's largest violation of the optimality conditions, shape ``(m,)``: with ``g =
    P - C + c W`` (``P = H W``), ``|g_jt + a_j sign(W_jt)|`` on the support and ``(|g_jt| -
    a_j)_+`` off it."""
    g = P - C + c[:, None] * W
    on = np.abs(g + a[:, None] * np.sign(W))
    off = np.maximum(np.abs(g) - a[:, None], 0.0)
    return np.where(W != 0.0, on, off).max(axis=0, initial=0.0)


def support_point(H: np.ndarray, C: np.ndarray, W: np.ndarray, a: np.ndarray,
                  c: np.ndarray, max_rows: int, tasks: np.ndarray | None = None,
                  max_steps: int = 4) -> tuple[np.ndarray | None, float]:
    """Support steps from ``W`` (module docstring).

    Parameters
    ----------
    H : ndarray of shape (m, d, d) or (1, d, d)
        The tasks' Gram matrices (one for a shared design).
    C : ndarray of shape (d, m)
    W : ndarray of shape (d, m)
        The iterate (not modified).
    a, c : ndarray of shape (d,)
        The rows' l1 and ridge strengths.
    max_rows : int
        The most feature rows nonzero in some task for which the steps are taken.
    tasks : ndarray of bool of shape (m,), optional
        The tasks that take the steps (default: all); the others keep their column of ``W``.
    max_steps : int, default=4

    Returns
    -------
    point : ndarray of shape (d, m) or None
        The new iterate, ``None`` when no task's objective fell (or ``W = 0``, or more than
        ``max_rows`` rows are nonzero).
    work : float
        ``sum m (10 k^3 + 2000) + m d^2`` over the steps on ``k`` rows (multiply-adds: an
        eigendecomposition and numpy's calls per task).
    """
    d, m = W.shape
    point = np.array(W, dtype=np.float64, copy=True)
    if tasks is not None:
        if not np.any(tasks):
            return None, 0.0
        if H.shape[0] > 1:
            H = H[tasks]
        point, C = point[:, tasks], C[:, tasks]
        m = point.shape[1]
    full, before = W, _task_objectives(H, C, point, a, c)
    W = point.copy()
    work = 0.0
    for _ in range(max_steps):
        rows = np.flatnonzero(np.any(point != 0.0, axis=1))
        k = rows.size
        if k == 0 or k > max_rows:
            break
        work += m * (10.0 * k ** 3 + 2000.0) + m * float(d) ** 2
        mask = (point[rows] != 0.0).T  # (m, k): each task's support
        sign = np.sign(point[rows]).T
        now = point[rows].T
        Hk = H[:, rows][:, :, rows] + np.diag(c[rows])
        M = np.where(mask[:, :, None] & mask[:, None, :], Hk, 0.0)
        # the face's gradient at the iterate, zero off the support
        grad = np.where(mask, np.einsum("tij,tj->ti", M, now) - C[rows].T + a[rows] * sign,
                        0.0)
        # off the support, the largest curvature of the support on the diagonal: the zero
        # eigenvalues are then those of the support's block alone
        top = np.max(np.where(mask, np.diagonal(Hk, axis1=1, axis2=2), 0.0), axis=1)
        top = np.maximum(top, np.finfo(float).tiny)
        M[:, np.arange(k), np.arange(k)] += np.where(mask, 0.0, top[:, None])
        lam, Q = np.linalg.eigh(M)
        if not np.all(np.isfinite(lam)):
            break
        zero = lam <= _NULL_RTOL * top[:, None]
        g = np.einsum("tik,ti->tk", Q, grad)
        # the gradient's component in the null space, from the penalty's term alone: the
        # loss's part (H w - C, C = X^T y in the range of H = X^T X) has none, and taking
        # it from the computed gradient would follow its rounding far along the null space
        pull = np.where(mask, a[rows] * sign, 0.0)
        null = np.where(zero, np.einsum("tik,ti->tk", Q, pull), 0.0)
        flat = np.sqrt(np.einsum("tk,tk->t", null, null)) > _NULL_RTOL * np.maximum(
            np.sqrt(np.einsum("tk,tk->t", pull, pull)), np.finfo(float).tiny)
        # Newton's step on the face where it is curved; along the null space (the objective
        # falls linearly there) to the first change of sign where it is flat
        coeff = np.where(flat[:, None], -null,
                         -np.where(zero, 0.0, g / np.where(zero, 1.0, lam)))
        step = np.einsum("tik,tk->ti", Q, coeff) * mask
        cross = mask & (step * sign < 0.0)  # the entries the step moves towards zero
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(cross, -now / step, np.inf)
        tau = ratio.min(axis=1)
        tau = np.where(flat, np.where(np.isfinite(tau), tau, 0.0), np.minimum(tau, 1.0))
        new = now + tau[:, None] * step
        hit = cross & (ratio <= tau[:, None])
        new[hit | ~mask] = 0.0
        point[rows] = new.T
        if not np.any(hit):
            break
    after = _task_objectives(H, C, point, a, c)
    better = after < before
    if not np.any(better):
        return None, work
    point[:, ~better] = W[:, ~better]
    if tasks is None:
        return point, work
    out = np.array(full, dtype=np.float64, copy=True)
    out[:, tasks] = point
    return out, work
