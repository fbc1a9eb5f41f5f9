"""A Newton step of the fused sparse group lasso on the structure of the current iterate.

For the quadratic model of block coordinate descent (:mod:`multitask.solvers.bcd`)::

    min_W  sum_t 0.5 w_t^T H_t w_t - C_t^T w_t + sum_j a ||W_j.||_1 + b ||W_j.||_2
           + c sum_t |W_jt - W_j,t+1|

the penalty is smooth on the set of ``W`` that share the structure of the iterate: the same
zero rows, in each row the same runs of equal entries (segments) with the same zero runs,
signs and jump signs. There ``W = E beta`` with ``beta`` the values of the nonzero segments,
the l1 and fused terms are linear in ``beta`` (``a sum_s n_s sigma_s beta_s`` and ``c
sum tau (beta_next - beta)`` over the jumps, ``sigma`` and ``tau`` the fixed signs) and the
objective is a quadratic plus ``b sum_j ||W_j.||_2``, smooth where the rows are nonzero. One
Newton step on ``beta`` (the Hessian ``E^T H E`` plus the l2 terms' ``b (N / ||w|| - N beta
beta^T N / ||w||^3)`` per row, ``N`` the segment sizes; a least-squares solve where it is
singular) is exact for the quadratic part; the step is shortened so that no sign or jump
changes. Block coordinate descent converges linearly, slowly along the flat directions of
raw, collinear features; once the structure has settled, a few such steps reach the optimum
to rounding, and the epochs after them confirm it (manifold identification, then Newton: the
idea of the active-set refinements of coordinate descent solvers).
"""

from __future__ import annotations

import numpy as np

__all__ = ["fused_newton_point", "fused_structure"]

#: The interpreted work of one Newton step (the numpy calls that build the reduced Hessian
#: and the l2 blocks row by row), in the units of a dense factorization's multiply-adds.
_STEP_WORK = 2e5


def fused_structure(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(seg, value)``: ``seg[j, t]`` the index of the nonzero segment that holds ``W[j, t]``
    (``-1`` for a zero entry), ``value[s]`` the segment's value. Segments are the runs of
    equal consecutive entries of a row."""
    d, m = W.shape
    seg = -np.ones((d, m), dtype=np.int64)
    if not W.size:
        return seg, np.zeros(0)
    new = np.ones((d, m), dtype=bool)
    new[:, 1:] = W[:, 1:] != W[:, :-1]
    nonzero = W != 0.0
    starts = new & nonzero
    ids = np.cumsum(starts.ravel()).reshape(d, m) - 1
    seg[nonzero] = ids[nonzero]
    return seg, W[starts]


def _segment_hessian(H: np.ndarray, seg: np.ndarray, p: int) -> np.ndarray:
    """``E^T H E``: the quadratic part's Hessian on the segment values, ``E`` the map from
    segment values to ``W`` (``seg``, :func:`fused_structure`); every task's pairs of
    entries in nonzero segments added at once (one ``bincount`` over the task-row-row grid of
    the rows with a nonzero entry: at most ``p`` rows).
    """
    m = seg.shape[1]
    rows = np.flatnonzero((seg >= 0).any(axis=1))  # at most p of them
    S = seg[rows].T  # (m, r): the segment of each task's entries on those rows
    HR = H[:, rows][:, :, rows]
    inner = (S[:, :, None] >= 0) & (S[:, None, :] >= 0)
    I1 = np.broadcast_to(S[:, :, None], inner.shape)[inner]
    I2 = np.broadcast_to(S[:, None, :], inner.shape)[inner]
    values = np.broadcast_to(HR, (m,) + HR.shape[1:])[inner]
    return np.bincount(I1 * p + I2, weights=values, minlength=p * p).reshape(p, p)


def _newton_step(H, C, W, a, b, c, seg, beta):
    """``(step, boundary)``: the Newton step on ``beta`` for the structure ``seg`` of ``W``
    (module docstring) and the jumps ``(tau, left segment, right segment)`` of the rows;
    ``None`` when the step is not finite."""
    d, m = W.shape
    p = beta.size
    shared = H.shape[0] == 1
    HW = (H[0] @ W) if shared else np.einsum("tij,jt->it", H, W)
    grad_full = HW - C
    active = seg >= 0
    flat_seg = seg[active]
    grad = np.bincount(flat_seg, weights=grad_full[active], minlength=p)
    hess = _segment_hessian(H, seg, p)
    sizes = np.bincount(flat_seg, minlength=p).astype(np.float64)
    grad += a * sizes * np.sign(beta)
    jump = W[:, 1:] != W[:, :-1]
    tau = np.sign(W[:, 1:] - W[:, :-1])[jump]
    s_left = seg[:, :-1][jump]
    s_right = seg[:, 1:][jump]
    if c > 0.0:
        has_r = s_right >= 0
        has_l = s_left >= 0
        grad += np.bincount(s_right[has_r], weights=c * tau[has_r], minlength=p)
        grad -= np.bincount(s_left[has_l], weights=c * tau[has_l], minlength=p)
    if b > 0.0:
        # a row's nonzero segments are consecutive in the numbering (fused_structure): its
        # l2 term adds a block on their range
        first = np.where(active, seg, p).min(axis=1)
        last = seg.max(axis=1)  # -1 on a zero row
        with np.errstate(divide="ignore", invalid="ignore"):  # a zero norm: no step
            for j in np.flatnonzero(last >= 0):
                lo, hi = int(first[j]), int(last[j]) + 1
                n = sizes[lo:hi]
                nb = n * beta[lo:hi]
                norm = np.sqrt(np.float64(nb @ beta[lo:hi]))
                grad[lo:hi] += b * nb / norm
                block = hess[lo:hi, lo:hi]
                block -= (b / norm ** 3) * np.outer(nb, nb)
                block[np.diag_indices(hi - lo)] += b * n / norm
    if not (np.all(np.isfinite(hess)) and np.all(np.isfinite(grad))):
        return None  # a zero group norm or an overflow: no step (the epochs go on)
    try:
        step = -np.linalg.solve(hess, grad)
        if not np.all(np.isfinite(step)):
            raise np.linalg.LinAlgError
    except np.linalg.LinAlgError:
        try:
            step = -np.linalg.lstsq(hess, grad, rcond=None)[0]
        except np.linalg.LinAlgError:  # the SVD of a degenerate system did not converge
            return None
    if not np.all(np.isfinite(step)):
        return None
    return step, (tau, s_left, s_right)


def fused_newton_point(H: np.ndarray, C: np.ndarray, W: np.ndarray, a: float, b: float,
                       c: float, max_segments: int,
                       max_steps: int = 8) -> tuple[np.ndarray | None, float]:
    """Newton steps of the model (module docstring) from ``W`` on its structure; a step that
    would change a sign or a jump stops where the first one vanishes, that segment is set to
    0 or merged with its neighbour (the structure shrinks), and the steps go on (an
    active-set method on the structure), at most ``max_steps`` of them. Returns ``(point,
    work)``: the point (``None`` when there is nothing to do, ``W = 0``, or more than
    ``max_segments`` nonzero segments) and the steps' work, ``sum p^3 / 3 + m d^2 +``
    :data:`_STEP_WORK` over the steps of ``p`` segments.

    ``H`` of shape ``(m, d, d)`` or ``(1, d, d)`` (a shared design), ``C`` and ``W`` of shape
    ``(d, m)``; ``a``, ``b``, ``c`` the strengths of the l1, l2 and fused terms (one value for
    all rows). Each step lowers the objective (the model is convex and smooth on the
    structure; at a boundary the merged point has the same value).
    """
    W = np.array(W, dtype=np.float64, copy=True)
    d, m = W.shape
    work = 0.0
    for _ in range(max_steps):
        seg, beta = fused_structure(W)
        p = beta.size
        if p == 0 or p > max_segments:
            return None, work
        work += p ** 3 / 3.0 + m * float(d) ** 2 + _STEP_WORK
        found = _newton_step(H, C, W, a, b, c, seg, beta)
        if found is None:
            return None, work
        step, (tau, s_left, s_right) = found
        # the longest step t <= 1 that keeps the signs of the segments and of the jumps
        t_max = 1.0
        block: tuple[str, int, int] | None = None  # what stops the step first
        cross = np.sign(beta) * step < 0.0
        if np.any(cross):
            ratios = -beta[cross] / step[cross]
            k = int(np.argmin(ratios))
            if ratios[k] < t_max:
                t_max = float(ratios[k])
                block = ("zero", int(np.nonzero(cross)[0][k]), -1)
        if c > 0.0 and tau.size:
            safe_l = np.maximum(s_left, 0)
            safe_r = np.maximum(s_right, 0)
            vl = np.where(s_left >= 0, beta[safe_l], 0.0)
            vr = np.where(s_right >= 0, beta[safe_r], 0.0)
            rate = tau * (np.where(s_right >= 0, step[safe_r], 0.0)
                          - np.where(s_left >= 0, step[safe_l], 0.0))
            closing = rate < 0.0
            if np.any(closing):
                ratios = -(tau * (vr - vl))[closing] / rate[closing]
                k = int(np.argmin(ratios))
                if ratios[k] < t_max:
                    t_max = float(ratios[k])
                    i = int(np.nonzero(closing)[0][k])
                    block = ("merge", int(s_left[i]), int(s_right[i]))
        new_beta = beta + max(t_max, 0.0) * step
        if block is not None and block[0] == "zero":
            new_beta[block[1]] = 0.0
        elif block is not None:  # the two segments meet: one value (0 when one is a zero run)
            left, right = block[1], block[2]
            value = 0.0 if left < 0 or right < 0 else new_beta[left]
            if left >= 0:
                new_beta[left] = value
            if right >= 0:
                new_beta[right] = value
        active = seg >= 0
        W[active] = new_beta[seg[active]]
        if block is None and np.max(np.abs(step)) <= 1e-15 * np.max(np.abs(new_beta)):
            break
    return W, work
