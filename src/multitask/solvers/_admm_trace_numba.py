"""The compiled ADMM iteration of the trace norm (:class:`multitask.solvers.admm.QuadraticADMM`
with the identity map and :class:`multitask.penalties.norms.TraceNorm`).

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
    shared = Q.shape[0] == 1
    W = np.empty((d, m))
    S = np.empty(d)
    T = np.empty(d)
    for t in range(m):
        q = 0 if shared else t
        for j in range(d):
            T[j] = AV[j, t] - U[j, t]
        for i in range(d):  # S = (Q^T C + rho Q^T T) / (lambda + rho), rows of Q^T contiguous
            acc = 0.0
            for j in range(d):
                acc += QT[q, i, j] * T[j]
            S[i] = (QtC[i, t] + rho * acc) / (lam[q, i] + rho)
        for j in range(d):  # W_t = Q S, rows of Q contiguous
            acc = 0.0
            for i in range(d):
                acc += Q[q, j, i] * S[i]
            W[j, t] = acc
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
    if wide:
        G = Z @ Z.T
    else:
        G = Z.T @ Z
    ev, E = np.linalg.eigh(G)
    k = ev.shape[0]
    top = np.sqrt(max(ev[k - 1], 0.0))
    floor = gram_rtol * top
    smallest = np.sqrt(max(ev[0], 0.0))
    first_kept = max(k - keep, 0)  # ev is ascending: the last keep values are kept
    if smallest < floor:  # a kept singular value may be unresolved
        if floor > thresh or (keep > 0 and np.sqrt(max(ev[first_kept], 0.0)) < floor):
            return False, W, AV, 0.0, 0.0, 0.0
    M = np.zeros((k, k))
    norm = 0.0
    for i in range(k):
        s = np.sqrt(max(ev[i], 0.0))
        if i >= first_kept and s > 0.0:
            scale = 1.0
        elif i < first_kept and s > thresh:
            norm += s - thresh
            scale = (s - thresh) / s
        else:
            continue
        for a in range(k):
            f = E[a, i] * scale
            for b in range(k):
                M[a, b] += f * E[b, i]
    if wide:
        V = M @ Z
    else:
        V = Z @ M
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
    res_dual = np.sqrt(n_dual) / max(np.sqrt(n_u), tiny)
    return True, W, V, res_pri, res_dual, norm
