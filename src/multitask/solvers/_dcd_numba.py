"""Numba kernels of the multi-task dual coordinate descent (private; see ``dcd.py``).

The linear kernel solves, for a fixed effective task kernel ``B = R^T R`` (``R`` of shape
``(r, T)``, stored by columns as ``rptr``, ``rind``, ``rval``), the bias-free SVM dual

    max_{0 <= alpha_i <= U_i}  sum_i alpha_i - (1/2) ||Vt||_F^2 - (1/2) ||bt||^2
                                - sum_i D_i alpha_i^2 / 2,

    Vt[k, :] = sum_i alpha_i y_i R[k, tau_i] x_i      (shape (r, d)),
    bt[t]    = c sum_{i in task t} alpha_i y_i          (per-task bias, c = bias_scale),

whose primal is ``(1/2) ||Vt||^2 + (1/2) ||bt||^2 + sum_i C_i loss(y_i f_i)`` with
``f_i = x_i^T Vt^T R[:, tau_i] + c bt[tau_i]``: hinge (``U_i = C_i``, ``D_i = 0``) or squared
hinge (``U_i = inf``, ``D_i = 1 / (2 C_i)``). Rows of ``X`` are given either dense (``Xd``) or
as CSR arrays; the unused representation is a dummy.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _row_dot(dense, Xd, indptr, indices, data, i, V, k):
    """``x_i^T V[k]``.

    Loop counters are unsigned and no array views are made: numba then skips the
    negative-index wraparound test and the reference counting in the hot loop (about twice as
    fast as signed counters).
    """
    s = 0.0
    if dense:
        for j in range(np.uint64(Xd.shape[1])):
            s += Xd[i, j] * V[k, j]
    else:
        for p in range(np.uint64(indptr[i]), np.uint64(indptr[i + 1])):
            s += data[p] * V[k, indices[p]]
    return s


@njit(cache=True)
def _row_axpy(dense, Xd, indptr, indices, data, i, a, V, k):
    """``V[k] += a x_i``."""
    if dense:
        for j in range(np.uint64(Xd.shape[1])):
            V[k, j] += a * Xd[i, j]
    else:
        for p in range(np.uint64(indptr[i]), np.uint64(indptr[i + 1])):
            V[k, indices[p]] += a * data[p]


@njit(cache=True)
def _decision(dense, Xd, indptr, indices, data, i, t, rptr, rind, rval, Vt, bt, bias_scale):
    """``f_i = sum_k R[k, t] x_i^T Vt[k] + c bt[t]`` for row ``i`` of task ``t``."""
    f = 0.0
    for j in range(rptr[t], rptr[t + 1]):
        f += rval[j] * _row_dot(dense, Xd, indptr, indices, data, i, Vt, rind[j])
    return f + bias_scale * bt[t]


@njit(cache=True)
def _shuffle(index, active):
    """Fisher-Yates shuffle of ``index[:active]`` in place, from numba's global generator."""
    for s in range(active - 1, 0, -1):
        j = np.random.randint(0, s + 1)  # noqa: NPY002 (numba supports the legacy API)
        tmp = index[s]
        index[s] = index[j]
        index[j] = tmp


@njit(cache=True)
def _clipped_step(ai, G, h, ui):
    """Exact maximization over one coordinate: ``clip(alpha_i - G / h, 0, U_i)``.

    ``h = 0`` (a row of zero curvature) moves ``alpha_i`` to the bound the gradient points to.
    """
    if h > 0.0:
        na = ai - G / h
    else:
        na = ui if G < 0.0 else 0.0
    if na < 0.0:
        na = 0.0
    elif na > ui:
        na = ui
    return na


@njit(cache=True)
def _projected_gradient(G, ai, ui):
    """``G`` with the components that point out of the box ``[0, U_i]`` at a bound set to 0."""
    if ai == 0.0:
        return G if G < 0.0 else 0.0
    if ai == ui:
        return G if G > 0.0 else 0.0
    return G


@njit(cache=True)
def _coordinate_curvatures(task, xsq, rptr, rval, n_tasks, bias_scale, diag):
    """``H_i = B[tau_i, tau_i] ||x_i||^2 + c^2 + D_i`` with ``B[t, t] = ||R[:, t]||^2``."""
    btt = np.zeros(n_tasks)
    for t in range(n_tasks):
        for j in range(rptr[t], rptr[t + 1]):
            btt[t] += rval[j] * rval[j]
    qd = np.empty(task.shape[0])
    for i in range(task.shape[0]):
        qd[i] = btt[task[i]] * xsq[i] + bias_scale * bias_scale + diag[i]
    return qd


@njit(cache=True)
def linear_objectives(dense, Xd, indptr, indices, data, y, task, rptr, rind, rval, Vt, bt,
                      bias_scale, alpha, cw, diag, squared):
    """Primal, dual and loss of the fixed-kernel problem (see the module docstring).

    Returns ``(primal, dual, loss_sum, decision values f (n,))``.
    """
    n = y.shape[0]
    reg = 0.0
    for k in range(Vt.shape[0]):
        for j in range(Vt.shape[1]):
            reg += Vt[k, j] * Vt[k, j]
    for t in range(bt.shape[0]):
        reg += bt[t] * bt[t]
    reg *= 0.5
    loss = 0.0
    asum = 0.0
    aq = 0.0
    f = np.empty(n)
    for i in range(n):
        fi = _decision(dense, Xd, indptr, indices, data, i, task[i], rptr, rind, rval, Vt, bt,
                       bias_scale)
        f[i] = fi
        m = 1.0 - y[i] * fi
        if m > 0.0:
            if squared:
                loss += cw[i] * m * m
            else:
                loss += cw[i] * m
        asum += alpha[i]
        aq += diag[i] * alpha[i] * alpha[i]
    primal = reg + loss
    dual = asum - reg - 0.5 * aq
    return primal, dual, loss, f


@njit(cache=True)
def _linear_epoch(dense, Xd, indptr, indices, data, y, task, rptr, rind, rval, Vt, bt,
                  bias_scale, alpha, upper, diag, qd, index, active, shrinking, pgmax_old,
                  pgmin_old):
    """One pass of coordinate steps over ``index[:active]`` (see :func:`dcd_linear`).

    With ``shrinking``, a coordinate at its lower (upper) bound whose gradient exceeds
    ``pgmax_old`` (is below ``pgmin_old``) is moved behind the active ones. Returns
    ``(active, max PG, min PG)`` over the coordinates visited and kept.
    """
    pgmax_new = -np.inf
    pgmin_new = np.inf
    s = 0
    while s < active:
        i = index[s]
        t = task[i]
        ai = alpha[i]
        ui = upper[i]
        f = _decision(dense, Xd, indptr, indices, data, i, t, rptr, rind, rval, Vt, bt,
                      bias_scale)
        G = y[i] * f - 1.0 + diag[i] * ai
        if shrinking and (
            (ai == 0.0 and G > pgmax_old) or (ai != 0.0 and ai == ui and G < pgmin_old)
        ):
            active -= 1
            index[s] = index[active]
            index[active] = i
            continue
        PG = _projected_gradient(G, ai, ui)
        if PG > pgmax_new:
            pgmax_new = PG
        if PG < pgmin_new:
            pgmin_new = PG
        if abs(PG) > 1e-12:
            na = _clipped_step(ai, G, qd[i], ui)
            delta = (na - ai) * y[i]
            if delta != 0.0:
                alpha[i] = na
                for j in range(rptr[t], rptr[t + 1]):
                    _row_axpy(dense, Xd, indptr, indices, data, i, delta * rval[j], Vt, rind[j])
                bt[t] += delta * bias_scale
        s += 1
    return active, pgmax_new, pgmin_new


@njit(cache=True)
def dcd_linear(dense, Xd, indptr, indices, data, y, task, xsq, rptr, rind, rval, Vt, bt,
               bias_scale, alpha, upper, cw, diag, squared, tol, max_epochs, shrinking, stop_gap,
               seed, gap_every):
    """Dual coordinate descent epochs (LIBLINEAR's L1/L2-loss dual solver, multi-task).

    Each coordinate step is the exact maximization over ``alpha_i`` (the specification's
    corrected eq. 24):

        G   = y_i f_i - 1 + D_i alpha_i,        H = B[t, t] ||x_i||^2 + c^2 + D_i,
        alpha_i <- clip(alpha_i - G / H, 0, U_i),

    followed by ``Vt[k] += delta y_i R[k, t] x_i`` and ``bt[t] += delta y_i c``. Coordinates
    are visited in a fresh random permutation each epoch. With ``shrinking`` LIBLINEAR's
    heuristic removes bound coordinates whose projected gradient exceeds the previous epoch's
    extremes. Stopping: ``stop_gap`` -- relative duality gap ``(P - D) / P <= tol``, evaluated
    whenever LIBLINEAR's rule ``max PG - min PG <= eps`` holds on all coordinates (``eps``
    starts at 0.1 and shrinks tenfold after each unsuccessful check) and at least every
    ``gap_every`` epochs; otherwise LIBLINEAR's rule with ``eps = tol``.

    Returns
    -------
    epochs : int
    converged : bool
    primal, dual, loss : float
        Objective values and ``sum_i C_i loss_i`` at the returned point (``nan`` with the
        projected-gradient rule, which never evaluates them).
    pg_spread : float
    """
    n = y.shape[0]
    np.random.seed(seed)  # noqa: NPY002 (numba supports the legacy API)
    qd = _coordinate_curvatures(task, xsq, rptr, rval, bt.shape[0], bias_scale, diag)
    index = np.arange(n)
    active = n
    inf = np.inf
    pgmax_old = inf
    pgmin_old = -inf
    primal = np.nan
    dual = np.nan
    loss = np.nan
    spread = inf
    eps = tol if not stop_gap else 0.1
    converged = False
    epoch = 0
    last_check = 0
    while epoch < max_epochs:
        _shuffle(index, active)
        active, pgmax_new, pgmin_new = _linear_epoch(
            dense, Xd, indptr, indices, data, y, task, rptr, rind, rval, Vt, bt, bias_scale,
            alpha, upper, diag, qd, index, active, shrinking, pgmax_old, pgmin_old)
        epoch += 1
        if active == 0:
            spread = 0.0
        else:
            spread = pgmax_new - pgmin_new
        full = active == n
        # LIBLINEAR's rule at tolerance eps (= tol for stop="pg"; adaptive for the gap rule)
        pg_done = spread <= eps
        if stop_gap and ((pg_done and full) or epoch - last_check >= gap_every):
            primal, dual, loss, _ = linear_objectives(
                dense, Xd, indptr, indices, data, y, task, rptr, rind, rval, Vt, bt, bias_scale,
                alpha, cw, diag, squared)
            last_check = epoch
            if primal - dual <= tol * max(abs(primal), 1e-300):
                converged = True
                break
            if pg_done and full:
                # projected gradients are small but the gap is not: ask for more accuracy
                eps = 0.1 * min(eps, spread)
                pg_done = False
        if pg_done:
            if full:
                converged = True
                break
            # converged on the shrunk problem: re-activate all coordinates (LIBLINEAR)
            active = n
            pgmax_old = inf
            pgmin_old = -inf
            continue
        pgmax_old = pgmax_new if pgmax_new > 0.0 else inf
        pgmin_old = pgmin_new if pgmin_new < 0.0 else -inf
    if stop_gap and last_check != epoch:
        # the budget ran out between two checks: the objectives of the returned point
        primal, dual, loss, _ = linear_objectives(
            dense, Xd, indptr, indices, data, y, task, rptr, rind, rval, Vt, bt, bias_scale,
            alpha, cw, diag, squared)
    return epoch, converged, primal, dual, loss, spread


@njit(cache=True)
def dcd_kernel(K, y, alpha, f, upper, cw, diag, squared, tol, max_epochs, seed):
    """Dual coordinate descent on a precomputed joint kernel ``K`` (n, n).

    Solves ``max_{0 <= alpha <= U} sum alpha - (1/2) (alpha y)^T K (alpha y) - sum D alpha^2 / 2``
    maintaining ``f = K (alpha y)`` (``O(n)`` per coordinate). Stops when the relative duality
    gap ``(P - D) / P`` with ``P = (1/2)(alpha y)^T f + sum C_i loss(y_i f_i)`` is ``<= tol``
    (evaluated after every epoch, ``O(n)``).

    Returns ``(epochs, converged, primal, dual)``.
    """
    n = y.shape[0]
    np.random.seed(seed)  # noqa: NPY002 (numba supports the legacy API)
    index = np.arange(n)
    converged = False
    epoch = 0
    primal = np.nan
    dual = np.nan
    while epoch < max_epochs:
        _shuffle(index, n)
        for s in range(n):
            i = index[s]
            ai = alpha[i]
            G = y[i] * f[i] - 1.0 + diag[i] * ai
            na = _clipped_step(ai, G, K[i, i] + diag[i], upper[i])
            delta = (na - ai) * y[i]
            if delta != 0.0:
                alpha[i] = na
                # K is symmetric: read row i (contiguous) instead of column i
                for j in range(np.uint64(n)):
                    f[j] += delta * K[i, j]
        epoch += 1
        reg = 0.0
        loss = 0.0
        asum = 0.0
        aq = 0.0
        for i in range(n):
            reg += alpha[i] * y[i] * f[i]
            m = 1.0 - y[i] * f[i]
            if m > 0.0:
                loss += cw[i] * (m * m if squared else m)
            asum += alpha[i]
            aq += diag[i] * alpha[i] * alpha[i]
        reg *= 0.5
        primal = reg + loss
        dual = asum - reg - 0.5 * aq
        if primal - dual <= tol * max(abs(primal), 1e-300):
            converged = True
            break
    return epoch, converged, primal, dual


@njit(cache=True)
def task_sums(dense, Xd, indptr, indices, data, coef, task, n_tasks, d):
    """``VT`` of shape ``(T, d)``: ``VT[t] = sum_{i in task t} coef_i x_i`` (one pass)."""
    VT = np.zeros((n_tasks, d))
    for i in range(coef.shape[0]):
        if coef[i] != 0.0:
            _row_axpy(dense, Xd, indptr, indices, data, i, coef[i], VT, task[i])
    return VT


@njit(cache=True)
def compress_columns(indptr, indices, data, lut):
    """Renumber the used columns of a CSR matrix ``0..d_c-1`` in increasing order.

    ``lut`` is scratch space of length ``n_features`` (int32 or int64). Returns
    ``(used (d_c,) int64, new_indices (nnz,) uint64, row squared norms (n,))``. Unsigned column
    indices spare numba the negative-index wraparound test in the hot loops.
    """
    n_features = lut.shape[0]
    mark = np.zeros(n_features, dtype=np.uint8)
    for p in range(indices.shape[0]):
        mark[indices[p]] = 1
    count = 0
    for j in range(n_features):
        if mark[j]:
            lut[j] = count
            count += 1
    used = np.empty(count, dtype=np.int64)
    for j in range(n_features):
        if mark[j]:
            used[lut[j]] = j
    new = np.empty(indices.shape[0], dtype=np.uint64)
    n = indptr.shape[0] - 1
    xsq = np.zeros(n)
    for i in range(n):
        s = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            new[p] = lut[indices[p]]
            s += data[p] * data[p]
        xsq[i] = s
    return used, new, xsq
