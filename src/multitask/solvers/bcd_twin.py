"""The numpy twin of block coordinate descent's compiled epochs
(:func:`multitask.solvers.bcd._bcd_epochs`) for the rows it covers (:func:`twin_covers`): the
same updates and extrapolations, vectorized over the tasks where a row's entries are
independent, run while numba's start-up is not worth paying (:mod:`multitask.compiled`)."""

from __future__ import annotations

import time

import numpy as np

from multitask.penalties.base import ROW_PROX_FAMILIES
from multitask.solvers.anderson import anderson_point
from multitask.solvers.base import apply_per_task

__all__ = ["TWIN_ROW_SECONDS", "bcd_epochs_numpy", "twin_covers"]

_ELASTIC_NET = ROW_PROX_FAMILIES.index("elastic_net")


def _objective_numpy(C, W, P, R, params):
    """:func:`~multitask.solvers.bcd._objective` of the elastic-net family, in numpy."""
    total = float(np.sum(W * (0.5 * P - C)))
    if R.shape[0]:
        total += 0.5 * float(np.sum(W * R))
    sq = np.einsum("jt,jt->j", W, W)
    return total + float(params[:, 0] @ np.abs(W).sum(axis=1) + params[:, 1] @ np.sqrt(sq)
                         + 0.5 * params[:, 2] @ sq)


def _extrapolate_numpy(H, C, W, P, K, R, params, hist):
    """:func:`~multitask.solvers.bcd._extrapolate` in numpy (elastic-net family)."""
    We = anderson_point(hist)
    if We is None:
        return False
    Pe = apply_per_task(H, We)
    Re = We @ K if K.shape[0] else R
    before = _objective_numpy(C, W, P, R, params)
    after = _objective_numpy(C, We, Pe, Re, params)
    if not after < before - 1e-15 * abs(before):
        return False
    W[:] = We
    P[:] = Pe
    if K.shape[0]:
        R[:] = Re
    return True


def twin_covers(family: int, params: np.ndarray, coupled: bool) -> bool:
    """Whether :func:`bcd_epochs_numpy` takes the kernel's steps on these rows: the
    elastic-net family, without a group row (``a_j = 0 < b_j``) under a task coupling."""
    if family != _ELASTIC_NET:
        return False
    return not (coupled and bool(np.any((params[:, 0] == 0.0) & (params[:, 1] > 0.0))))


def bcd_epochs_numpy(H, C, W, P, K, R, family, params, k_top, hist, n_hist, max_epochs, tol,
                     budget):
    """The epochs of :func:`~multitask.solvers.bcd._bcd_epochs` in numpy for the elastic-net family
    without group rows under a task coupling (:func:`twin_covers`; the same updates and
    extrapolations, vectorized over the tasks where a row's entries are independent), for at most
    ``budget`` seconds.

    Returns ``(epochs done, converged, seconds spent)``; when the budget runs out the epochs stop
    after the current one, unconverged, and :func:`~multitask.solvers.bcd._bcd_epochs` continues
    from ``W``, ``P``, ``R`` and the extrapolation state ``hist``, ``n_hist``.
    """
    if family != _ELASTIC_NET:
        raise ValueError("The interpreted twin covers the elastic-net row family only.")
    if not twin_covers(family, params, K.shape[0] > 0):
        raise ValueError("The interpreted twin does not cover group rows under a task "
                         "coupling (the kernel minimizes them exactly).")
    t0 = time.perf_counter()
    d, m = W.shape
    shared = H.shape[0] == 1
    coupled = K.shape[0] > 0
    A = hist.shape[0] - 1
    if A > 0 and n_hist[0] == 0:
        hist[0] = W
        n_hist[0] = 1
    diag = np.diagonal(H, axis1=1, axis2=2)  # (m or 1, d)
    n_epochs = 0
    for epoch in range(max_epochs):
        n_epochs = epoch + 1
        max_change = 0.0
        max_coef = 0.0
        for j in range(d):
            a, b, c = params[j]
            old = W[j].copy()
            if b == 0.0 and coupled:  # exact entries in task order (R couples them)
                for t in range(m):
                    gt = 0 if shared else t
                    h = H[gt, j, j] + K[t, t]
                    if h + c <= 0.0 and not a > 0.0:
                        continue
                    u = h * W[j, t] - (P[j, t] - C[j, t] + R[j, t])
                    nw = 0.0  # also where w_jt is unseen (h + c <= 0): the l1 term's minimizer
                    if h + c > 0.0 and u > a:
                        nw = (u - a) / (h + c)
                    elif h + c > 0.0 and u < -a:
                        nw = (u + a) / (h + c)
                    delta = nw - W[j, t]
                    if delta != 0.0:
                        W[j, t] = nw
                        P[:, t] += H[gt, :, j] * delta
                        R[j] += delta * K[t]
                        max_change = max(max_change, abs(delta))
                    max_coef = max(max_coef, abs(nw))
                continue
            if b == 0.0:  # exact entries, independent (entries with H_t[j,j] + c <= 0 kept,
                # or at 0 where the l1 term has its minimizer there)
                hjj = diag[:, j]
                denom = hjj + c
                u = hjj * old - (P[j] - C[j])
                new = np.sign(u) * np.maximum(np.abs(u) - a, 0.0)
                if (denom > 0.0).all():
                    new /= denom
                    updated = new
                else:
                    keep = np.broadcast_to(denom <= 0.0, new.shape)
                    new = np.where(keep, old * (a <= 0.0), new / np.where(keep, 1.0, denom))
                    updated = new[~keep]  # the kernel skips the kept entries altogether
            else:  # proximal step on the row with the curvature bound L_j
                Lj = float(diag[:, j].max()) + k_top
                if Lj <= 0.0 and not (a > 0.0 or b > 0.0 or c > 0.0):
                    continue
                if Lj > 0.0:
                    g = P[j] - C[j]
                    if coupled:
                        g = g + R[j]
                    v = old - g / Lj
                    step = 1.0 / Lj
                    den = 1.0 + step * c
                    u = v / den
                    u = np.sign(u) * np.maximum(np.abs(u) - step * a / den, 0.0)
                    nrm = float(np.sqrt(u @ u))
                    tb = step * b / den
                    new = u * (1.0 - tb / nrm) if nrm > tb else np.zeros(m)
                else:
                    new = np.zeros(m)
                updated = new
            delta = new - old
            if delta.any():
                W[j] = new
                if shared:
                    P += np.outer(H[0, :, j], delta)
                else:
                    P += H[:, :, j].T * delta
                if coupled:
                    for t in np.flatnonzero(delta):
                        R[j] += delta[t] * K[t]
                max_change = max(max_change, float(np.abs(delta).max()))
            if updated.size:
                max_coef = max(max_coef, float(np.abs(updated).max()))
        if max_change <= tol * max(max_coef, 1e-300):
            return n_epochs, True, time.perf_counter() - t0
        if A > 0:
            hist[n_hist[0]] = W
            n_hist[0] += 1
            if n_hist[0] == A + 1:
                _extrapolate_numpy(H, C, W, P, K, R, params, hist)
                hist[0] = W
                n_hist[0] = 1
        if time.perf_counter() - t0 >= budget:
            break
    return n_epochs, False, time.perf_counter() - t0


#: Seconds the numpy twin takes per row update, beyond ``1e-9`` per entry of ``W`` it
#: touches (the figure it comes from: docs/tuning_constants.md).
TWIN_ROW_SECONDS = 1e-5
