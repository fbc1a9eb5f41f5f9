"""Numba kernel of the new tasks' closed form (private; see
:mod:`multitask.solvers.new_tasks`).

Every new task ``j`` (rows ``starts[j]:starts[j + 1]``) of a new-task problem with the squared
loss and a Gaussian prior is, in the prior's standard form
(:meth:`multitask.penalties.new_task.GaussianPrior.standard_form`), a ridge regression with
the identity as penalty and an unpenalized intercept::

    v_j(c), b_j(c) = argmin_{v, b}  sum_i r_i (t_i - z_i^T v - b)^2 / 2 + (c / 2) ||v||^2

(``z_i`` the whitened row, ``t_i`` the shifted target, ``r_i = s_i / sum_{i in j} s_i`` from
the row's sample weight ``s_i``). With the weighted means ``zbar, tbar`` (zero without
intercept), the centred rows ``a_i = sqrt(r_i) (z_i - zbar)`` and targets
``e_i = sqrt(r_i) (t_i - tbar)``, :func:`ridge_grid` solves it for a grid of strengths
``c = C[g, j]`` (``b = tbar - zbar^T v``) and adds up the exact leave-one-out loss of each
grid row ``0.5 sum_i s_i (res_i / (1 - h_i))^2``: ``res_i`` the residual of row ``i``,
``h_i = f r_i + a_i^T (A^T A + c I)^{-1} a_i`` its leverage (``f = 1`` with the intercept).
Per task, the smaller of two Cholesky factorizations:

* the *kernel form* (``n_j < k`` and every ``r_i > 0``): ``K = A A^T + c I`` (``n_j x n_j``),
  ``alpha = K^{-1} e``: ``v = A^T alpha``, ``res_i = c alpha_i / sqrt(r_i)`` and
  ``1 - h_i = c [K^{-1}]_ii - f r_i``;
* the *primal form* otherwise: ``H = A^T A + c I = L L^T`` (``k x k``), ``v = H^{-1} A^T e``,
  ``h_i = f r_i + ||L^{-1} a_i||^2``.

The problems are tiny (a few rows; ``k`` at most the number of features) and many: the tasks
of one size and form are solved together, every (task, strength) pair a *lane* of the same
arithmetic, the lane the innermost, contiguous index of every array and loop (so the compiler
gives the loops SIMD lanes). That costs a fraction of one LAPACK call per pair.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: Reassociated sums (SIMD lanes); no assumption on NaN or infinity (a leverage may be 1).
_REASSOC = {"reassoc", "contract"}
#: Most lanes (tasks times strengths) solved together (bounds the work arrays).
_MAX_LANES = 1024


#: The helpers of :func:`_solve_group` are inlined into it (the loops compile as one function).
_STEP = {"cache": True, "fastmath": _REASSOC, "error_model": "numpy", "inline": "always"}


@njit(**_STEP)
def _centre(Z, t, s, starts, f, tasks, n, A, Zc, e, tc, r, sr, zbar, tbar):
    """The rows of the tasks ``tasks`` (``n`` each), the task the innermost index: weights
    ``r_i`` and ``sqrt(r_i)``, weighted means ``zbar``, ``tbar`` (with ``f > 0``), centred rows
    ``Zc`` and targets ``tc``, and their scaled twins ``A = sqrt(r) Zc``, ``e = sqrt(r) tc``;
    ``False`` when a task weighs nothing."""
    k = Z.shape[1]
    mg = tasks.shape[0]
    for jl in range(mg):
        a0 = starts[tasks[jl]]
        total = 0.0
        for i in range(n):
            total += s[a0 + i]
        if not total > 0.0:
            return False
        for i in range(n):
            ri = s[a0 + i] / total
            r[i, jl] = ri
            sr[i, jl] = np.sqrt(ri)
            if f > 0.0:
                tbar[jl] += ri * t[a0 + i]
                for p in range(k):
                    zbar[p, jl] += ri * Z[a0 + i, p]
    for i in range(n):
        for jl in range(mg):
            a0 = starts[tasks[jl]]
            tc[i, jl] = t[a0 + i] - tbar[jl]
            e[i, jl] = sr[i, jl] * tc[i, jl]
        for p in range(k):
            for jl in range(mg):
                zc = Z[starts[tasks[jl]] + i, p] - zbar[p, jl]
                Zc[i, p, jl] = zc
                A[i, p, jl] = sr[i, jl] * zc
    return True


@njit(**_STEP)
def _gram(A, e, kernel, P, q):
    """The lower triangle of each task's Gram matrix into ``P``: ``A A^T`` (kernel form) or
    ``A^T A`` and ``q = A^T e`` (primal form)."""
    n, k, mg = A.shape
    if kernel:
        for i in range(n):
            for i2 in range(i + 1):
                for p in range(k):
                    for jl in range(mg):
                        P[i, i2, jl] += A[i, p, jl] * A[i2, p, jl]
    else:
        for i in range(n):
            for p in range(k):
                for p2 in range(p + 1):
                    for jl in range(mg):
                        P[p, p2, jl] += A[i, p, jl] * A[i, p2, jl]
                for jl in range(mg):
                    q[p, jl] += A[i, p, jl] * e[i, jl]


@njit(**_STEP)
def _cholesky(P, c, G, F, dinv, acc):
    """``F = P + c I`` per lane (lane ``l = g * mg + jl``: strength ``c[l]``, task ``jl``) and
    its Cholesky factor in place (lower triangle; ``dinv`` the inverse diagonal); ``False``
    when a pivot is not positive."""
    nn = F.shape[0]
    L = F.shape[2]
    mg = P.shape[2]
    for a in range(nn):
        for b in range(a + 1):
            for g in range(G):
                for jl in range(mg):
                    F[a, b, g * mg + jl] = P[a, b, jl]
        for ln in range(L):
            F[a, a, ln] += c[ln]
    for a in range(nn):
        for ln in range(L):
            acc[ln] = F[a, a, ln]
        for b in range(a):
            for ln in range(L):
                acc[ln] -= F[a, b, ln] * F[a, b, ln]
        for ln in range(L):
            if not acc[ln] > 0.0:
                return False
        for ln in range(L):
            dg = np.sqrt(acc[ln])
            F[a, a, ln] = dg
            dinv[a, ln] = 1.0 / dg
        for a2 in range(a + 1, nn):
            for ln in range(L):
                acc[ln] = F[a2, a, ln]
            for b in range(a):
                for ln in range(L):
                    acc[ln] -= F[a2, b, ln] * F[a, b, ln]
            for ln in range(L):
                F[a2, a, ln] = acc[ln] * dinv[a, ln]
    return True


@njit(**_STEP)
def _substitute(F, dinv, rhs, G, u, x, acc):
    """``x = F^{-1} rhs`` per lane by forward then back substitution (``u`` the forward
    solution), ``rhs`` (``(nn, mg)``) the same for every strength."""
    nn = F.shape[0]
    L = F.shape[2]
    mg = rhs.shape[1]
    for a in range(nn):
        for g in range(G):
            for jl in range(mg):
                u[a, g * mg + jl] = rhs[a, jl]
        for b in range(a):
            for ln in range(L):
                u[a, ln] -= F[a, b, ln] * u[b, ln]
        for ln in range(L):
            u[a, ln] *= dinv[a, ln]
    for a in range(nn - 1, -1, -1):
        for ln in range(L):
            acc[ln] = u[a, ln]
        for b in range(a + 1, nn):
            for ln in range(L):
                acc[ln] -= F[b, a, ln] * x[b, ln]
        for ln in range(L):
            x[a, ln] = acc[ln] * dinv[a, ln]


@njit(**_STEP)
def _store(x, starts, tasks, f, kernel, zbar, tbar, V, B, alpha):
    """The solutions out: the rows' ``alpha`` (kernel form; ``v = A^T alpha`` is formed for
    the strength kept) or ``v`` and ``b = tbar - zbar^T v`` (primal form)."""
    G = V.shape[0]
    mg = tasks.shape[0]
    if kernel:
        for i in range(x.shape[0]):
            for g in range(G):
                for jl in range(mg):
                    alpha[g, starts[tasks[jl]] + i] = x[i, g * mg + jl]
    else:
        for g in range(G):
            for jl in range(mg):
                bv = tbar[jl]
                for p in range(x.shape[0]):
                    V[g, tasks[jl], p] = x[p, g * mg + jl]
                    bv -= zbar[p, jl] * x[p, g * mg + jl]
                B[g, tasks[jl]] = bv if f > 0.0 else 0.0


@njit(**_STEP)
def _loo_kernel(F, dinv, x, c, r, sr, s, starts, tasks, f, G, u, acc, lane_tot):
    """The leave-one-out losses of the kernel form, per lane into ``lane_tot``:
    ``[K^{-1}]_ii = ||L^{-1} e_i||^2`` (zero above row ``i``), then ``res_i / (1 - h_i)``."""
    n = F.shape[0]
    L = F.shape[2]
    mg = tasks.shape[0]
    h = np.empty(L)
    for i in range(n):
        for ln in range(L):
            u[i, ln] = dinv[i, ln]
            h[ln] = dinv[i, ln] * dinv[i, ln]
        for a in range(i + 1, n):
            for ln in range(L):
                acc[ln] = 0.0
            for b in range(i, a):
                for ln in range(L):
                    acc[ln] -= F[a, b, ln] * u[b, ln]
            for ln in range(L):
                u[a, ln] = acc[ln] * dinv[a, ln]
                h[ln] += u[a, ln] * u[a, ln]
        for g in range(G):
            for jl in range(mg):
                ln = g * mg + jl
                out = (c[ln] * x[i, ln] / sr[i, jl]) / (c[ln] * h[ln] - f * r[i, jl])
                lane_tot[ln] += s[starts[tasks[jl]] + i] * out * out


@njit(**_STEP)
def _loo_primal(F, dinv, x, A, Zc, tc, r, s, starts, tasks, f, G, u, acc, lane_tot):
    """The leave-one-out losses of the primal form, per lane into ``lane_tot``: the residual
    of each row and its leverage ``f r_i + ||L^{-1} a_i||^2``."""
    n, k, mg = A.shape
    L = F.shape[2]
    h = np.empty(L)
    for i in range(n):
        for g in range(G):
            for jl in range(mg):
                acc[g * mg + jl] = tc[i, jl]
        h[:] = 0.0
        for p in range(k):
            for g in range(G):
                for jl in range(mg):
                    ln = g * mg + jl
                    acc[ln] -= Zc[i, p, jl] * x[p, ln]
                    u[p, ln] = A[i, p, jl]
            for b in range(p):
                for ln in range(L):
                    u[p, ln] -= F[p, b, ln] * u[b, ln]
            for ln in range(L):
                u[p, ln] *= dinv[p, ln]
                h[ln] += u[p, ln] * u[p, ln]
        for g in range(G):
            for jl in range(mg):
                ln = g * mg + jl
                wi = s[starts[tasks[jl]] + i]
                if wi > 0.0:  # a pair of weight zero does not count (nor its leverage)
                    out = acc[ln] / (1.0 - f * r[i, jl] - h[ln])
                    lane_tot[ln] += wi * out * out


@njit(cache=True, fastmath=_REASSOC, error_model="numpy")
def _solve_group(Z, t, s, starts, C, f, tasks, n, kernel, loo, V, B, alpha, tot):
    """The tasks ``tasks`` (all with ``n`` rows, all in the kernel form or all in the primal
    form) at every strength: fills ``V[:, tasks]`` and ``B[:, tasks]`` (primal form) or the
    rows' ``alpha`` (kernel form) and, with ``loo``, adds the leave-one-out losses to ``tot``
    (per strength); ``False`` when a pivot is not positive."""
    k = Z.shape[1]
    G = C.shape[0]
    mg = tasks.shape[0]
    L = G * mg
    nn = n if kernel else k
    # per task (the task the innermost index): centred, scaled rows and targets
    A = np.empty((n, k, mg))
    Zc = np.empty((n, k, mg))
    e = np.empty((n, mg))
    tc = np.empty((n, mg))
    r = np.empty((n, mg))
    sr = np.empty((n, mg))
    zbar = np.zeros((k, mg))
    tbar = np.zeros(mg)
    if not _centre(Z, t, s, starts, f, tasks, n, A, Zc, e, tc, r, sr, zbar, tbar):
        return False
    # the Gram matrix of each task (lower triangle) and, in the primal form, A^T e
    P = np.zeros((nn, nn, mg))
    q = np.zeros((k, mg))
    _gram(A, e, kernel, P, q)
    # lanes l = g * mg + jl: F = P + c I, its Cholesky factor in place
    c = np.empty(L)
    for g in range(G):
        for jl in range(mg):
            c[g * mg + jl] = C[g, tasks[jl]]
    F = np.empty((nn, nn, L))
    dinv = np.empty((nn, L))
    acc = np.empty(L)
    if not _cholesky(P, c, G, F, dinv, acc):
        return False
    # x = F^{-1} rhs (rhs = e in the kernel form, q in the primal form)
    u = np.empty((nn, L))
    x = np.empty((nn, L))
    _substitute(F, dinv, e if kernel else q, G, u, x, acc)
    _store(x, starts, tasks, f, kernel, zbar, tbar, V, B, alpha)
    if not loo:
        return True
    # leave-one-out losses, row by row (a leverage of 1 gives inf or nan: error_model numpy)
    lane_tot = np.zeros(L)
    if kernel:
        _loo_kernel(F, dinv, x, c, r, sr, s, starts, tasks, f, G, u, acc, lane_tot)
    else:
        _loo_primal(F, dinv, x, A, Zc, tc, r, s, starts, tasks, f, G, u, acc, lane_tot)
    for g in range(G):
        for jl in range(mg):
            tot[g] += lane_tot[g * mg + jl]
    return True


@njit(cache=True)
def ridge_grid(Z, t, s, starts, C, intercept, loo, V, B, alpha, kernel_form, losses):
    """Solve every task at every grid strength and, with ``loo``, add up the leave-one-out
    losses.

    Parameters
    ----------
    Z : ndarray of shape (N, k)
        The whitened rows ``z_i``, stacked by task.
    t : ndarray of shape (N,)
        The shifted targets ``t_i``.
    s : ndarray of shape (N,)
        Sample weights ``s_i >= 0`` (ones without weights).
    starts : ndarray of int64 of shape (m + 1,)
        Task boundaries.
    C : ndarray of shape (G, m)
        Strengths ``c > 0`` per grid row and task.
    intercept : bool
        Whether the tasks have an unpenalized intercept.
    loo : bool
        Whether to compute the leave-one-out losses (``losses`` is left as it is without).
    V : ndarray of shape (G, m, k)
        Output: ``v`` of the tasks solved in the primal form, at every strength.
    B : ndarray of shape (G, m)
        Output: their intercepts ``b``.
    alpha : ndarray of shape (G, N)
        Output: ``alpha`` of the rows of the tasks solved in the kernel form, at every
        strength (:func:`kernel_solution` forms their ``v`` and ``b``).
    kernel_form : ndarray of bool of shape (m,)
        Output: whether each task was solved in the kernel form.
    losses : ndarray of shape (G,)
        Output: the pooled leave-one-out losses (``inf`` where a leverage reaches 1 or a
        loss is not finite).

    Returns
    -------
    bool
        ``False`` when a factorization failed or a task weighs nothing (the caller then
        solves otherwise).
    """
    k = Z.shape[1]
    G, m = C.shape
    f = 1.0 if intercept else 0.0
    # group the tasks by size and form: key = 2 n + (kernel form)
    keys = np.empty(m, dtype=np.int64)
    for j in range(m):
        n = starts[j + 1] - starts[j]
        kernel = n < k
        for i in range(starts[j], starts[j + 1]):
            kernel = kernel and s[i] > 0.0
        keys[j] = 2 * n + (1 if kernel else 0)
        kernel_form[j] = kernel
    order = np.argsort(keys, kind="mergesort")
    tot = np.zeros(G)
    per = max(1, _MAX_LANES // G)
    a = 0
    while a < m:
        key = keys[order[a]]
        b = a
        while b < m and keys[order[b]] == key and b - a < per:
            b += 1
        if not _solve_group(Z, t, s, starts, C, f, order[a:b].copy(), key // 2, key % 2 == 1,
                            loo, V, B, alpha, tot):
            return False
        a = b
    if loo:
        for g in range(G):
            losses[g] = 0.5 * tot[g] if np.isfinite(tot[g]) else np.inf
    return True


@njit(cache=True, fastmath=_REASSOC)
def kernel_solution(Z, t, s, starts, intercept, alpha, kernel_form, V, B):
    """``v = A^T alpha`` and ``b = tbar - zbar^T v`` of the tasks solved in the kernel form,
    into ``V`` (``(m, k)``) and ``B`` (``(m,)``), from their rows' ``alpha`` (``(N,)``, one
    strength of :func:`ridge_grid`)."""
    k = Z.shape[1]
    m = starts.shape[0] - 1
    zbar = np.empty(k)
    for j in range(m):
        if not kernel_form[j]:
            continue
        a0 = starts[j]
        a1 = starts[j + 1]
        total = 0.0
        for i in range(a0, a1):
            total += s[i]
        zbar[:] = 0.0
        tbar = 0.0
        if intercept:
            for i in range(a0, a1):
                ri = s[i] / total
                tbar += ri * t[i]
                for p in range(k):
                    zbar[p] += ri * Z[i, p]
        for p in range(k):
            V[j, p] = 0.0
        for i in range(a0, a1):
            wa = np.sqrt(s[i] / total) * alpha[i]
            for p in range(k):
                V[j, p] += wa * (Z[i, p] - zbar[p])
        bv = tbar
        for p in range(k):
            bv -= zbar[p] * V[j, p]
        B[j] = bv if intercept else 0.0
