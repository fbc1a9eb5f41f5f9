"""The compiled ADMM iterations of the trace norm (:class:`multitask.solvers.admm.QuadraticADMM`
with the identity map and :class:`multitask.penalties.norms.TraceNorm`) and of sparse + low
rank (:class:`multitask.penalties.composite.SparseLowRank`, :func:`sparse_low_rank_admm_step`).

One call takes one iteration of the module docstring of :mod:`multitask.solvers.admm`, fused::

    W   = Q diag(1 / (lambda + rho)) (Q^T C + rho Q^T (A V - U))     (per task)
    Wr  = r W + (1 - r) A V
    V   = svt(Wr + U, alpha / rho)                                    (Gram route)
          (or its partial twin leaving the ``keep`` leading singular values untouched)
    U  += Wr - V

with the singular value thresholding through the eigendecomposition of the small Gram matrix
of ``Z = Wr + U`` (``Z Z^T`` or ``Z^T Z``), as :func:`multitask.penalties.prox.spectral_shrink`
takes it: where a kept singular value lies below ``gram_rtol`` times the largest (too
inaccurate from the square), or the entries lie outside the band where the square is safe,
the kernel reports it and changes nothing, and the solver takes the interpreted step, which
falls back to the ``R`` factor or the SVD, or rescales. The interpreted loop of
:class:`~multitask.solvers.admm.QuadraticADMM` is this kernel's twin: the same updates
(``tests/test_admm_compiled.py`` checks the iterates against it to ``1e-10``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: Eigenvalues of ``H_t`` at most this times its largest are taken as zero by :func:`_w_step`
#: (a feature constant within a task's rows, centred away: its direction is unseen by the
#: loss).
NULL_EIGEN_RTOL = 1e-13


@njit(cache=True, nogil=True)
def _w_step(Q, QT, lam, QtC, AV, U, rho):  # pragma: no cover - compiled
    """``W_t = Q_t diag(1 / (lambda_t + rho)) (Q_t^T C_t + rho Q_t^T (A V - U)_t)`` for every
    task: the W-step of both iterations (rows of ``Q^T`` and ``Q`` contiguous).

    On the null space of ``H_t`` (eigenvalues at most :data:`NULL_EIGEN_RTOL` times the
    largest) the step is ``T + (Q_z^T C_t) / rho`` with ``T = (A V - U)_t``, so it is computed
    as ``W_t = T + Q_r (S_r - Q_r^T T) + Q_z Q_z^T C_t / rho`` with ``S_r = (Q_r^T C_t + rho
    Q_r^T T) / (lambda_r + rho)`` over the ``r`` other eigenvectors, and the last term only
    for the entries of ``Q_z^T C_t`` above rounding (``1e-14`` times the largest entry of
    ``Q_t^T C_t``: a loss's ``C_t`` lies in the range of ``H_t``, where they vanish): about
    ``2 r d`` operations per task instead of ``2 d^2`` (School's tasks have ``r`` of 4 to 14
    for ``d = 27``)."""
    d, m = AV.shape
    shared = Q.shape[0] == 1
    W = np.empty((d, m))
    S = np.empty(d)
    T = np.empty(d)
    seen = np.empty(d, dtype=np.int64)
    n_seen = 0
    last_q = -1
    for t in range(m):
        q = 0 if shared else t
        if q != last_q:
            top = 0.0
            for i in range(d):
                top = max(top, lam[q, i])
            n_seen = 0
            for i in range(d):
                if lam[q, i] > NULL_EIGEN_RTOL * top:
                    seen[n_seen] = i
                    n_seen += 1
            last_q = q
        for j in range(d):
            T[j] = AV[j, t] - U[j, t]
        for k in range(n_seen):
            i = seen[k]
            acc = 0.0
            for j in range(d):
                acc += QT[q, i, j] * T[j]
            S[k] = (QtC[i, t] + rho * acc) / (lam[q, i] + rho) - acc
        for j in range(d):
            W[j, t] = T[j]
        for k in range(n_seen):
            i = seen[k]
            sk = S[k]
            for j in range(d):
                W[j, t] += QT[q, i, j] * sk
        if n_seen < d:  # the linear term's part in the null space, where it is not rounding
            cmax = 0.0
            for i in range(d):
                cmax = max(cmax, abs(QtC[i, t]))
            k = 0
            for i in range(d):
                if k < n_seen and seen[k] == i:
                    k += 1
                    continue
                ci = QtC[i, t]
                if abs(ci) > 1e-14 * cmax:
                    ci /= rho
                    for j in range(d):
                        W[j, t] += QT[q, i, j] * ci
    return W


@njit(cache=True, nogil=True)
def _small_gram_eigh(Z, wide):  # pragma: no cover - compiled
    """The eigendecomposition (ascending) of the Gram matrix of the small side of ``Z``:
    ``Z Z^T`` where ``wide`` (``d <= m``), else ``Z^T Z``."""
    G = Z @ Z.T if wide else Z.T @ Z
    return np.linalg.eigh(G)


@njit(cache=True, nogil=True)
def _gram_map(E, scale):  # pragma: no cover - compiled
    """``M = E diag(scale) E^T`` over the columns of ``E`` with a nonzero ``scale``: the map
    that takes the prox's argument to its output through the small Gram matrix."""
    k = E.shape[0]
    M = np.zeros((k, k))
    for i in range(scale.shape[0]):
        if scale[i] == 0.0:
            continue
        for a in range(k):
            f = E[a, i] * scale[i]
            for b in range(k):
                M[a, b] += f * E[b, i]
    return M


@njit(cache=True, nogil=True)
def _psvt_gram_scale(ev, thresh, keep, gram_rtol):  # pragma: no cover - compiled
    """``(ok, scale, norm)`` of the partial singular value thresholding through the small
    Gram matrix with eigenvalues ``ev`` (ascending): ``scale[i]`` multiplies the ``i``-th
    eigenvector's part (1 for the last ``keep``, ``(s_i - thresh)_+ / s_i`` for the others,
    ``s_i = sqrt(ev_i)``), ``norm = sum`` of the thresholded ``(s_i - thresh)_+``; ``ok`` is
    False where a kept singular value may lie below ``gram_rtol`` times the largest (the Gram
    route cannot resolve it)."""
    k = ev.shape[0]
    top = np.sqrt(max(ev[k - 1], 0.0))
    floor = gram_rtol * top
    smallest = np.sqrt(max(ev[0], 0.0))
    first_kept = max(k - keep, 0)  # ev is ascending: the last keep values are kept
    scale = np.zeros(k)
    if smallest < floor:  # a kept singular value may be unresolved
        if floor > thresh or (keep > 0 and np.sqrt(max(ev[first_kept], 0.0)) < floor):
            return False, scale, 0.0
    norm = 0.0
    for i in range(k):
        s = np.sqrt(max(ev[i], 0.0))
        if i >= first_kept and s > 0.0:
            scale[i] = 1.0
        elif i < first_kept and s > thresh:
            norm += s - thresh
            scale[i] = (s - thresh) / s
    return True, scale, norm


@njit(cache=True, nogil=True)
def _dual_step(W, V, Wr, AV, U):  # pragma: no cover - compiled
    """``U += Wr - V`` in place, and the relative residuals ``(||W - V|| / max(||W||, ||V||),
    ||V - A V|| / ||U||)`` of the interpreted loop (the second 0 or infinity where ``U`` is
    zero)."""
    d, m = W.shape
    n_w = 0.0
    n_v = 0.0
    n_pri = 0.0
    n_dual = 0.0
    n_u = 0.0
    for j in range(d):
        for t in range(m):
            w = W[j, t]
            v = V[j, t]
            U[j, t] += Wr[j, t] - v
            n_w += w * w
            n_v += v * v
            n_pri += (w - v) * (w - v)
            n_dual += (v - AV[j, t]) * (v - AV[j, t])
            n_u += U[j, t] * U[j, t]
    tiny = 2.2250738585072014e-308
    res_pri = np.sqrt(n_pri) / max(np.sqrt(max(n_w, n_v)), tiny)
    norm_u = np.sqrt(n_u)
    if norm_u > tiny:
        res_dual = np.sqrt(n_dual) / norm_u
    elif n_dual == 0.0:
        res_dual = 0.0
    else:
        res_dual = np.inf
    return res_pri, res_dual


@njit(cache=True, nogil=True)
def trace_admm_step(Q, QT, lam, QtC, AV, U, rho, r, thresh, gram_rtol,
                    safe, keep=0):  # pragma: no cover - compiled
    """One fused ADMM iteration (module docstring), ``U`` updated in place.

    Parameters
    ----------
    Q, QT : ndarray of shape (m or 1, d, d)
        Eigenvectors of the ``H_t`` (columns) and their transposes, C-contiguous; one shared
        matrix when the first axis is 1.
    lam : ndarray of shape (m or 1, d)
        Their eigenvalues (clipped at zero).
    QtC : ndarray of shape (d, m)
        ``Q_t^T C_t``.
    AV, U : ndarray of shape (d, m)
        The current ``V`` (identity map) and scaled dual; ``U`` is overwritten.
    rho, r, thresh, gram_rtol : float
        Penalty parameter, over-relaxation, threshold ``alpha / rho`` and
        :data:`multitask.penalties.prox.GRAM_RTOL`.
    safe : float
        ``2**SAFE_EXPONENT`` (:data:`multitask.penalties.prox.SAFE_EXPONENT`): where the
        largest entry of the prox's argument lies outside ``[1 / safe, safe]`` (its Gram matrix
        could overflow or underflow; NaN included) the kernel declines, and the interpreted
        step rescales it first.
    keep : int, default=0
        The number of leading singular values left unthresholded: the V-step is then the
        partial singular value thresholding of the truncated trace norm ``thresh * rho *
        sum_{i > keep} sigma_i`` (:func:`multitask.penalties.capped_trace.psvt`); ``0`` is
        the trace norm.

    Returns
    -------
    ok : bool
        False when the Gram route cannot resolve a kept singular value, or the entries lie
        outside the safe band (nothing changed).
    W, V : ndarray of shape (d, m)
        The W-step iterate and the new ``V``.
    res_pri, res_dual : float
        ``||W - V|| / max(||W||, ||V||)`` and ``||V - AV|| / ||U||`` (the new ``U``).
    trace_norm : float
        ``||V||_* = sum_i (s_i - thresh)_+`` (with ``keep``: the sum of the thresholded
        values only, ``sum_{i > keep} sigma_i(V)``).
    """
    d, m = AV.shape
    W = _w_step(Q, QT, lam, QtC, AV, U, rho)
    Wr = r * W + (1.0 - r) * AV
    Z = Wr + U
    big = 0.0
    for j in range(d):
        for t in range(m):
            a = abs(Z[j, t])
            if not a <= big:  # NaN included
                big = a
    if not (big == 0.0 or 1.0 / safe <= big <= safe):
        return False, W, AV, 0.0, 0.0, 0.0
    wide = d <= m
    ev, E = _small_gram_eigh(Z, wide)
    ok, scale, norm = _psvt_gram_scale(ev, thresh, keep, gram_rtol)
    if not ok:
        return False, W, AV, 0.0, 0.0, 0.0
    M = _gram_map(E, scale)
    if wide:
        V = M @ Z
    else:
        V = Z @ M
    res_pri, res_dual = _dual_step(W, V, Wr, AV, U)
    return True, W, V, res_pri, res_dual, norm


@njit(cache=True, nogil=True)
def _l1_ball_threshold(s, radius):  # pragma: no cover - compiled
    """``theta >= 0`` with ``sum_i (s_i - theta)_+ = radius`` for ``s >= 0`` of sum above
    ``radius > 0`` (sorting, Duchi et al.)."""
    u = np.sort(s)[::-1]
    total = 0.0
    theta = 0.0
    for j in range(u.shape[0]):
        total += u[j]
        candidate = (total - radius) / (j + 1)
        if u[j] > candidate:
            theta = candidate
    return max(theta, 0.0)


@njit(cache=True, nogil=True)
def sparse_low_rank_admm_step(Q, QT, lam, QtC, P, L, U, rho, r, l1_thresh, radius,
                              gram_rtol, safe):  # pragma: no cover - compiled
    """One fused ADMM iteration of sparse + low rank (``h(P, L) = alpha ||P||_1 +
    indicator(||L||_* <= radius)``, ``W = P + L``) with one Gauss-Seidel sweep over the parts,
    ``U`` updated in place::

        W   = the W-step of trace_admm_step at A V = P + L
        Z   = r W + (1 - r) (P + L) + U
        P   = soft(Z - L, alpha / rho)
        L   = projection of Z - P onto {||L||_* <= radius}   (Gram route)
        U  += r W + (1 - r) (P_old + L_old) - (P + L)

    The projection takes the eigendecomposition of the small Gram matrix of ``Z - P`` and
    projects its singular values onto the l1 ball of radius ``radius``; where a singular value
    the projection could keep lies below ``gram_rtol`` times the largest, or the entries lie
    outside ``[1 / safe, safe]``, the kernel declines (nothing changed) and the solver takes
    the interpreted step (:func:`multitask.penalties.prox.project_trace_ball`).

    Returns
    -------
    ok : bool
    W : ndarray of shape (d, m)
        The W-step iterate.
    V : ndarray of shape (2, d, m)
        The new parts ``(P, L)``.
    AV : ndarray of shape (d, m)
        Their sum ``P + L``.
    res_pri, res_dual : float
        ``||W - (P + L)|| / max(||W||, ||P + L||)`` and ``||(P + L) - A V|| / ||U||`` (the new
        ``U``).
    nuclear : float
        ``||L||_*`` of the new ``L`` (from the singular values the projection computed).
    """
    d, m = P.shape
    AV = P + L
    W = _w_step(Q, QT, lam, QtC, AV, U, rho)
    Wr = r * W + (1.0 - r) * AV
    Zc = Wr + U
    Vn = np.empty((2, d, m))
    Pn = Vn[0]
    Z = np.empty((d, m))
    big = 0.0
    for j in range(d):
        for t in range(m):
            v = Zc[j, t] - L[j, t]
            a = abs(v)
            Pn[j, t] = np.sign(v) * (a - l1_thresh) if a > l1_thresh else 0.0
            z = Zc[j, t] - Pn[j, t]
            Z[j, t] = z
            az = abs(z)
            if not az <= big:  # NaN included
                big = az
    if not (big == 0.0 or 1.0 / safe <= big <= safe):
        return False, W, Vn, AV, 0.0, 0.0, 0.0
    wide = d <= m
    ev, E = _small_gram_eigh(Z, wide)
    k = ev.shape[0]
    s = np.empty(k)
    total = 0.0
    for i in range(k):
        s[i] = np.sqrt(max(ev[i], 0.0))
        total += s[i]
    nuclear = total
    if total <= radius:
        Vn[1] = Z
    else:
        theta = _l1_ball_threshold(s, radius)
        floor = gram_rtol * s[k - 1]
        if s[0] < floor and floor > theta:  # a kept singular value may be unresolved
            return False, W, Vn, AV, 0.0, 0.0, 0.0
        scale = np.zeros(k)
        nuclear = 0.0
        for i in range(k):
            if s[i] > theta and s[i] > 0.0:
                scale[i] = (s[i] - theta) / s[i]
                nuclear += s[i] - theta
        M = _gram_map(E, scale)
        if wide:
            Vn[1] = M @ Z
        else:
            Vn[1] = Z @ M
    AVn = Pn + Vn[1]
    res_pri, res_dual = _dual_step(W, AVn, Wr, AV, U)
    return True, W, Vn, AVn, res_pri, res_dual, nuclear


@njit(cache=True, nogil=True)
def truncated_admm_run(M, idx, cnt, B, V, U, rho, r, thresh, keep, n_steps, gram_rtol,
                       safe):  # pragma: no cover - compiled
    """Up to ``n_steps`` ADMM iterations at a fixed ``rho`` of a non-convex spectral stage
    (:class:`multitask.solvers.truncated_admm.TruncatedStageADMM`), ``U`` updated in place::

        W   = (H_t + rho I)^{-1} (C_t + rho (V - U)_t) = B_t + rho M_t (V - U)_t   (per task)
        Wr  = r W + (1 - r) V
        V   = psvt(Wr + U, thresh, keep)                                    (Gram route)
        U  += Wr - V

    with ``M_t = (H_t + rho I)^{-1}`` and ``B_t = M_t C_t`` computed once for the stage. The
    features ``j`` whose row of ``H_t`` is zero (constant within the task's rows: the loss does
    not see ``w_tj``) decouple, ``W_tj = B_tj + (V - U)_tj``: ``M_t`` is stored on the other
    features only, ``idx[t, :cnt[t]]``, as a dense ``cnt[t] x cnt[t]`` block. The partial
    singular value thresholding is that of :func:`trace_admm_step` with ``keep``, and declines
    where it does: the run then stops before that iteration.

    Parameters
    ----------
    M : ndarray of shape (m or 1, d, d)
        ``M[t, :n, :n]`` (``n = cnt[t]``) is ``(H_t + rho I)^{-1}`` on the features
        ``idx[t, :n]`` (symmetric); one shared block when the first axis is 1.
    idx : ndarray of int64, shape (m or 1, d)
    cnt : ndarray of int64, shape (m or 1,)
    B : ndarray of shape (d, m)
        ``(H_t + rho I)^{-1} C_t``.
    V, U : ndarray of shape (d, m)
        The current ``V`` and scaled dual; ``U`` is overwritten.
    rho, r, thresh : float
        Penalty parameter, over-relaxation, threshold ``alpha / rho``.
    keep : int
        Leading singular values left unthresholded.
    n_steps : int
    gram_rtol, safe : float
        As in :func:`trace_admm_step`.

    Returns
    -------
    done : int
        Iterations taken (fewer than ``n_steps`` where the Gram route declined the next one).
    V : ndarray of shape (d, m)
        The ``V`` after them (the input where ``done`` is 0).
    norm : float
        ``sum_{i > keep} sigma_i(V)`` of the last iteration's output (0 where ``done`` is 0).
    sv : ndarray of shape (min(d, m),)
        The singular values of that output, non-increasing (``scale_i sqrt(ev_i)`` of the
        Gram route; zeros where ``done`` is 0).
    """
    d, m = V.shape
    shared = M.shape[0] == 1
    wide = d <= m
    # one row per task: the per-task loops read contiguous memory
    VT = np.ascontiguousarray(V.T)
    UT = np.ascontiguousarray(U.T)
    BT = np.ascontiguousarray(B.T)
    T = np.empty(d)
    out = np.empty(d)
    g = np.empty(d)  # rho T on the seen features, gathered (the product reads M[q] in order)
    o = np.empty(d)
    ZT = np.empty((m, d))
    WrT = np.empty((m, d))
    norm = 0.0
    k = min(d, m)
    sv = np.zeros(k)
    done = n_steps
    for step in range(n_steps):
        big = 0.0
        for t in range(m):
            q = 0 if shared else t
            n = cnt[q]
            for j in range(d):
                T[j] = VT[t, j] - UT[t, j]
                out[j] = BT[t, j] + T[j]  # the decoupled features
            for a in range(n):
                g[a] = rho * T[idx[q, a]]
                o[a] = 0.0
            for b in range(n):
                tb = g[b]
                for a in range(n):
                    o[a] += M[q, b, a] * tb
            for a in range(n):
                out[idx[q, a]] = BT[t, idx[q, a]] + o[a]
            for j in range(d):
                w = r * out[j] + (1.0 - r) * VT[t, j]
                WrT[t, j] = w
                z = w + UT[t, j]
                ZT[t, j] = z
                az = abs(z)
                if not az <= big:  # NaN included
                    big = az
        if not (big == 0.0 or 1.0 / safe <= big <= safe):
            done = step
            break
        if wide:
            ev, E = np.linalg.eigh(ZT.T @ ZT)
        else:
            ev, E = np.linalg.eigh(ZT @ ZT.T)
        ok, scale, step_norm = _psvt_gram_scale(ev, thresh, keep, gram_rtol)
        if not ok:
            done = step
            break
        norm = step_norm
        for i in range(k):  # ev ascending: the output's singular values, non-increasing
            sv[k - 1 - i] = scale[i] * np.sqrt(max(ev[i], 0.0))
        G = _gram_map(E, scale)
        if wide:
            VT = ZT @ G  # V = G Z, G symmetric
        else:
            VT = G @ ZT  # V = Z G
        for t in range(m):
            for j in range(d):
                UT[t, j] += WrT[t, j] - VT[t, j]
    U[:, :] = UT.T
    if done == 0:
        return 0, V, 0.0, np.zeros(k)
    return done, np.ascontiguousarray(VT.T), norm, sv


@njit(cache=True, nogil=True)
def truncated_stage_residual(H, C, V, L, thresh, keep, safe):  # pragma: no cover - compiled
    """``(ok, ||V - psvt(V - G / L, thresh, keep)||_F)`` with ``G_t = H_t v_t - C_t``: the
    prox-gradient step of a non-convex spectral stage
    (:class:`multitask.solvers.truncated_admm.TruncatedStageADMM`) whose norm, times ``L`` over
    the loss's gradient scale, is :func:`multitask.solvers.base.kkt_residual`.

    The partial singular value thresholding ``psvt`` (the ``keep`` leading singular values
    kept, the others soft-thresholded at ``thresh``) goes through the ``R`` factor of the long
    side of ``Z = V - G / L`` and the SVD of ``R`` (:func:`multitask.penalties.prox.
    spectral_shrink_matrix`'s route, exact to rounding). ``ok`` is False, and the norm 0,
    where an entry of ``Z`` lies outside the band where its square is safe (``1 / safe`` to
    ``safe``, or NaN): the caller then computes the residual by the interpreted route, which
    rescales.

    Parameters
    ----------
    H : ndarray of shape (m or 1, d, d)
        The loss's ``H_t`` (one shared when the first axis is 1).
    C : ndarray of shape (d, m)
    V : ndarray of shape (d, m)
    L : float
        The step's Lipschitz constant.
    thresh : float
        ``alpha / L``.
    keep : int
    safe : float
    """
    d, m = V.shape
    shared = H.shape[0] == 1
    Z = np.empty((d, m))
    big = 0.0
    for t in range(m):
        q = 0 if shared else t
        for a in range(d):
            g = -C[a, t]
            for b in range(d):
                g += H[q, a, b] * V[b, t]
            z = V[a, t] - g / L
            Z[a, t] = z
            az = abs(z)
            if not az <= big:  # NaN included
                big = az
    if not (big == 0.0 or 1.0 / safe <= big <= safe):
        return False, 0.0
    wide = d <= m
    R = np.linalg.qr(np.ascontiguousarray(Z.T) if wide else Z)[1]
    _, s, Qt = np.linalg.svd(R)  # Z Z^T (or Z^T Z) = Qt^T diag(s^2) Qt
    n = Qt.shape[1]
    M = np.zeros((n, n))
    for i in range(s.shape[0]):
        if not s[i] > 0.0:
            continue
        new = s[i] if i < keep else max(s[i] - thresh, 0.0)
        if new == 0.0:
            continue
        f = new / s[i]
        for a in range(n):
            fa = f * Qt[i, a]
            for b in range(n):
                M[a, b] += fa * Qt[i, b]
    P = M @ Z if wide else Z @ M
    total = 0.0
    for a in range(d):
        for t in range(m):
            r = V[a, t] - P[a, t]
            total += r * r
    return True, np.sqrt(total)
