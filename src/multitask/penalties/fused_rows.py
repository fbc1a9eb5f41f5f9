"""Exact finite algorithms on one row of the fused sparse group lasso (compiled).

For strengths ``a`` (l1), ``b`` (l2) and ``c`` (fused) the row penalty is::

    r(w) = a ||w||_1 + b ||w||_2 + c ||D w||_1,

``D`` the difference matrix of one chain (``(D w)_t = w_{t+1} - w_t``) or, with ``K`` weight
columns per task (``n_classes``), of ``K`` interleaved chains (class ``k`` holds the entries
``k, k + K, k + 2K, ...``). Two functions a solver needs beyond the plain prox
(:func:`~multitask.penalties.row_operators.fsgl_row_prox`):

* :func:`fsgl_row_gauge`, the dual norm of ``r`` at a row ``g``: the smallest ``s`` with
  ``g in s dr(0) = s (a B_inf + b B_2 + c D^T B_inf)`` (an infimal convolution of the three
  dual balls). With ``u(s) = prox_{s c TV}(g)`` (the 1-D total-variation prox) the prox of
  ``s r`` at ``g`` is ``group_soft(soft(u(s), s a), s b)``, zero exactly when ``g in s
  dr(0)``, so the gauge is the smallest ``s`` with ``||soft(u(s), s a)||_2 <= s b``.
  The total-variation path ``lambda -> prox_{lambda TV}(g)`` of one chain is piecewise
  linear and its segments only merge as ``lambda`` grows (Friedman, Hastie, Hoefling &
  Tibshirani, "Pathwise coordinate optimization"): a segment of ``n`` entries with sum
  ``S`` has the value ``S / n + lambda (sigma_r - sigma_l) / n``, ``sigma_l`` and
  ``sigma_r`` the signs of the jumps to its neighbours (``w_next - w`` and ``w - w_prev``;
  0 at a chain's end), which do not change until the neighbours merge. Between two merges
  every entry of ``soft(u(s), s a)`` is linear in ``s`` on pieces bounded by the ``s``
  where ``|u_t(s)| = s a``; on the piece that holds the answer
  ``||soft(u(s), s a)||^2 - s^2 b^2`` is a quadratic in ``s``, solved in closed form. At
  most ``m - 1`` merges of ``O(m)`` work each: ``O(m^2)`` per row, exact in real arithmetic.
* :func:`fsgl_weighted_row_min`, the minimizer of a separable quadratic with unequal
  curvatures plus ``r`` (the exact row update of block coordinate descent).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from multitask.penalties.row_operators import tv1d_row

__all__ = ["fsgl_gauge_rows", "fsgl_row_gauge", "fsgl_weighted_row_min"]


@njit(cache=True)
def _excess(val_a, val_k, cnt, alive, s, a, b, c):  # pragma: no cover - compiled
    """``||soft(u(s), s a)||_2^2 - (s b)^2`` for the segments' values ``u = val_a + s c
    val_k`` (``cnt`` entries each, ``alive`` flags)."""
    tot = 0.0
    for i in range(val_a.shape[0]):
        if alive[i]:
            x = abs(val_a[i] + s * c * val_k[i]) - s * a
            if x > 0.0:
                tot += cnt[i] * x * x
    return tot - (s * b) ** 2


@njit(cache=True)
def _root_on_piece(val_a, val_k, cnt, alive, lo, hi, a, b, c):  # pragma: no cover
    """The ``s`` in ``[lo, hi]`` (``hi`` may be ``inf``) where :func:`_excess` vanishes, the
    segments' signs and active set fixed on the piece (read at an inner point): the root of
    ``sum_i n_i (alpha_i + beta_i s)^2 - b^2 s^2``."""
    mid = 0.5 * (lo + hi) if np.isfinite(hi) else lo + max(1.0, lo)
    p2 = -b * b
    p1 = 0.0
    p0 = 0.0
    for i in range(val_a.shape[0]):
        if not alive[i]:
            continue
        x = val_a[i] + mid * c * val_k[i]
        if abs(x) - mid * a <= 0.0:
            continue
        sg = 1.0 if x > 0.0 else -1.0
        al = sg * val_a[i]
        be = sg * c * val_k[i] - a
        p2 += cnt[i] * be * be
        p1 += cnt[i] * al * be
        p0 += cnt[i] * al * al
    if p0 == 0.0 and p1 == 0.0:
        return lo
    # roots of p2 s^2 + 2 p1 s + p0 (the larger one: the excess is positive before it)
    disc = max(p1 * p1 - p2 * p0, 0.0)
    q = -(p1 + (np.sqrt(disc) if p1 >= 0.0 else -np.sqrt(disc)))
    best = hi
    found = False
    for r in ((q / p2) if p2 != 0.0 else np.inf, (p0 / q) if q != 0.0 else np.inf):
        if np.isfinite(r) and lo - 1e-12 * abs(lo) <= r <= hi * (1.0 + 1e-12):
            if not found or r > best:
                best = r
                found = True
    if not found:
        return hi
    return min(max(best, lo), hi)


@njit(cache=True)
def fsgl_row_gauge(g, a, b, c, n_classes):  # pragma: no cover - compiled
    """The dual norm of ``r`` (module docstring) at the row ``g``: ``min {s >= 0 : g in s
    dr(0)}``, ``inf`` when ``g`` is in no multiple of ``dr(0)`` and 0 when ``g = 0``.

    ``g`` of length ``m`` holds ``n_classes`` interleaved chains. The value is rounded up by
    a few units in the last place, so that ``-g / s`` lies in ``dr(0)`` in floating point as
    well.
    """
    m = g.shape[0]
    top = 0.0
    for t in range(m):
        top = max(top, abs(g[t]))
    if top == 0.0:
        return 0.0
    if c <= 0.0:
        c = 0.0
    # segments: per chain, runs of equal entries; linked within their chain
    val_a = np.zeros(m)   # S / n
    val_k = np.zeros(m)   # (sigma_r - sigma_l) / n, the slope in lambda
    ssum = np.zeros(m)
    cnt = np.zeros(m)
    nxt = -np.ones(m, dtype=np.int64)
    prv = -np.ones(m, dtype=np.int64)
    sgn = np.zeros(m)     # sign of (next value - this value) at the segment's right end
    alive = np.zeros(m, dtype=np.bool_)
    n_seg = 0
    K = max(n_classes, 1)
    for k in range(K):
        last = -1
        t = k
        while t < m:
            if last >= 0 and c > 0.0 and g[t] == val_a[last]:
                ssum[last] += g[t]
                cnt[last] += 1.0
            else:
                i = n_seg
                n_seg += 1
                ssum[i] = g[t]
                cnt[i] = 1.0
                val_a[i] = g[t]
                alive[i] = True
                if last >= 0 and c > 0.0:
                    nxt[last] = i
                    prv[i] = last
                    sgn[last] = 1.0 if g[t] > val_a[last] else -1.0
                last = i
            t += K
    for i in range(n_seg):
        val_a[i] = ssum[i] / cnt[i]
        left = sgn[prv[i]] if prv[i] >= 0 else 0.0
        val_k[i] = (sgn[i] - left) / cnt[i]
    tol = 1e-26 * top * top * m
    s = 0.0
    while True:
        # the next merge: adjacent segments i, nxt[i] meet at s_ev
        s_ev = np.inf
        i_ev = -1
        if c > 0.0:
            for i in range(n_seg):
                j = nxt[i]
                if not alive[i] or j < 0:
                    continue
                gap = val_a[j] - val_a[i]
                rate = c * (val_k[j] - val_k[i])
                if gap * rate < 0.0:
                    ev = -gap / rate
                    if ev < s_ev:
                        s_ev = ev
                        i_ev = i
                elif gap == 0.0:
                    s_ev = s
                    i_ev = i
            if i_ev >= 0 and s_ev < s:
                s_ev = s
        if np.isfinite(s_ev) and _excess(val_a, val_k, cnt, alive, s_ev, a, b, c) > tol:
            # no answer up to the merge: merge the pair and go on
            i = i_ev
            j = nxt[i]
            ssum[i] += ssum[j]
            cnt[i] += cnt[j]
            alive[j] = False
            nxt[i] = nxt[j]
            if nxt[j] >= 0:
                prv[nxt[j]] = i
            sgn[i] = sgn[j]
            val_a[i] = ssum[i] / cnt[i]
            left = sgn[prv[i]] if prv[i] >= 0 else 0.0
            val_k[i] = (sgn[i] - left) / cnt[i]
            s = s_ev
            continue
        # the answer lies in [s, s_ev]: the pieces between the s where |u_i| = s a
        cuts = np.empty(2 * n_seg + 1)
        n_cut = 0
        for i in range(n_seg):
            if not alive[i]:
                continue
            ck = c * val_k[i]
            for den in (a - ck, -(a + ck)):
                if den != 0.0:
                    r = val_a[i] / den  # |val_a + s ck| = s a
                    if s < r < s_ev:
                        cuts[n_cut] = r
                        n_cut += 1
        cuts[n_cut] = s_ev
        n_cut += 1
        pts = np.sort(cuts[:n_cut])
        lo = s
        for e in range(n_cut):
            hi = pts[e]
            if not np.isfinite(hi) or _excess(val_a, val_k, cnt, alive, hi, a, b, c) <= tol:
                if b <= 0.0 and np.isfinite(hi):
                    return hi * (1.0 + 8e-16)
                root = _root_on_piece(val_a, val_k, cnt, alive, lo, hi, a, b, c)
                return root * (1.0 + 8e-16)
            lo = hi
        return np.inf  # (rounding only: the excess at s_ev was at most tol)


@njit(cache=True)
def _excess_at(g, s, a, b, c, n_classes, work, res):  # pragma: no cover - compiled
    """``||soft(prox_{s c TV}(g), s a)||_2^2 - (s b)^2``: at most 0 exactly when the gauge of
    ``g`` is at most ``s`` (the prox of ``s r`` at ``g`` is 0); ``work`` and ``res`` are work
    arrays of ``g``'s length."""
    m = g.shape[0]
    K = max(n_classes, 1)
    tot = 0.0
    for k in range(K):
        n = (m - k + K - 1) // K
        for i in range(n):
            work[i] = g[k + i * K]
        tv1d_row(work[:n], s * c, res[:n])
        for i in range(n):
            x = abs(res[i]) - s * a
            if x > 0.0:
                tot += x * x
    return tot - (s * b) ** 2


@njit(cache=True)
def fsgl_gauge_rows(G, a, b, c, n_classes):  # pragma: no cover - compiled
    """``max_j`` :func:`fsgl_row_gauge` of the rows of ``G``: the dual norm of ``sum_j
    r(W_j.)``. The rows are visited by decreasing Euclidean norm; a row whose prox at the
    largest gauge so far is zero (one total-variation prox, ``O(m)``) cannot raise it and is
    skipped."""
    d, m = G.shape
    norms = np.empty(d)
    for j in range(d):
        acc = 0.0
        for t in range(m):
            acc += G[j, t] * G[j, t]
        norms[j] = -acc
    order = np.argsort(norms)
    work = np.empty(m)
    res = np.empty(m)
    out = 0.0
    for j in order:
        row = np.ascontiguousarray(G[j])
        if out > 0.0 and _excess_at(row, out, a, b, c, n_classes, work, res) <= 0.0:
            continue
        val = fsgl_row_gauge(row, a, b, c, n_classes)
        if val > out:
            out = val
        if not np.isfinite(out):
            break
    return out


@njit(cache=True)
def _clip_left(kx, kds, kj, head, tail, A0, S0, v):  # pragma: no cover - compiled
    """Clip the nondecreasing piecewise-linear function ``D`` (left piece ``A0 + S0 x``, knots
    ``kx[head:tail]`` with slope changes ``kds`` and jumps ``kj``) from below at ``v``:
    ``max(D, v)``. Returns ``(x_v, head)``, ``x_v`` the point where ``D`` crosses ``v``; the
    new left piece is the constant ``v`` (the caller sets ``A0, S0 = v, 0``)."""
    A = A0
    S = S0
    i = head
    while i < tail:
        xk = kx[i]
        left = A + S * xk
        if left >= v:
            break
        right = left + kj[i]
        if right >= v:  # the crossing is the jump at xk: one knot replaces it
            kx[i] = xk
            kds[i] = S + kds[i]
            kj[i] = right - v
            return xk, i
        A = A + kj[i] - kds[i] * xk
        S = S + kds[i]
        i += 1
    x_v = (v - A) / S
    i -= 1  # a new knot in front of the kept ones (head >= 1 leaves room)
    kx[i] = x_v
    kds[i] = S
    kj[i] = 0.0
    return x_v, i


@njit(cache=True)
def _clip_right(kx, kds, kj, head, tail, AR, SR, v):  # pragma: no cover - compiled
    """``min(D, v)`` (:func:`_clip_left` from the right, ``AR + SR x`` the right piece):
    returns ``(x_v, tail)``; the new right piece is the constant ``v``."""
    A = AR
    S = SR
    i = tail - 1
    while i >= head:
        xk = kx[i]
        right = A + S * xk
        if right <= v:
            break
        left = right - kj[i]
        if left <= v:
            kds[i] = -(S - kds[i])
            kj[i] = v - left
            return xk, i + 1
        A = A - kj[i] + kds[i] * xk
        S = S - kds[i]
        i -= 1
    x_v = (v - A) / S
    i += 1
    kx[i] = x_v
    kds[i] = -S
    kj[i] = 0.0
    return x_v, i + 1


@njit(cache=True)
def _root(kx, kds, kj, head, tail, A0, S0, v):  # pragma: no cover - compiled
    """The ``x`` with ``D(x-) <= v <= D(x+)`` (:func:`_clip_left`'s crossing, no change)."""
    A = A0
    S = S0
    for i in range(head, tail):
        xk = kx[i]
        left = A + S * xk
        if left >= v:
            break
        if left + kj[i] >= v:
            return xk
        A = A + kj[i] - kds[i] * xk
        S = S + kds[i]
    return (v - A) / S


@njit(cache=True)
def _weighted_tv_l1(z, q, a, c, lo, hi, kx, kds, kj, out):  # pragma: no cover - compiled
    """``out = argmin_w sum_t (q_t / 2) w_t^2 - z_t w_t + a |w_t| + c sum_t |w_{t+1} -
    w_t|`` (``q_t > 0``), exactly, by dynamic programming on the derivatives of the messages
    (Johnson, "A dynamic programming algorithm for the fused lasso and L0-segmentation"):
    ``D_1 = f_1'``, ``D_t = f_t' + clip(D_{t-1}, -c, c)``, then ``w_m = D_m^{-1}(0)`` and
    ``w_t = clip(w_{t+1}, lo_t, hi_t)`` with ``D_t(lo_t) = -c``, ``D_t(hi_t) = c``. A
    derivative is a nondecreasing piecewise-linear function with jumps, kept as its left
    and right pieces and its knots (``kx``, slope changes ``kds``, jumps ``kj``: work arrays
    of length ``4 m + 4``); each step adds at most three knots. ``lo``, ``hi``: work arrays of
    length ``m``."""
    m = z.shape[0]
    if c <= 0.0 or m == 1:
        for t in range(m):
            u = z[t]
            u = u - a if u > a else (u + a if u < -a else 0.0)
            out[t] = u / q[t]
        return
    head = 2 * m + 2
    tail = head
    A0 = -z[0] - a
    S0 = q[0]
    AR = -z[0] + a
    SR = q[0]
    if a > 0.0:
        kx[tail] = 0.0
        kds[tail] = 0.0
        kj[tail] = 2.0 * a
        tail += 1
    for t in range(1, m):
        lo[t - 1], head = _clip_left(kx, kds, kj, head, tail, A0, S0, -c)
        A0 = -c
        S0 = 0.0
        hi[t - 1], tail = _clip_right(kx, kds, kj, head, tail, AR, SR, c)
        AR = c
        SR = 0.0
        A0 += -z[t] - a
        S0 += q[t]
        AR += -z[t] + a
        SR += q[t]
        if a > 0.0:  # the jump of a |x| at 0: merged into a knot at 0 or inserted in order
            pos = head
            while pos < tail and kx[pos] < 0.0:
                pos += 1
            if pos < tail and kx[pos] == 0.0:
                kj[pos] += 2.0 * a
            else:
                for i in range(tail, pos, -1):
                    kx[i] = kx[i - 1]
                    kds[i] = kds[i - 1]
                    kj[i] = kj[i - 1]
                kx[pos] = 0.0
                kds[pos] = 0.0
                kj[pos] = 2.0 * a
                tail += 1
        if head < 2 or tail > kx.shape[0] - 2:  # recentre the knots in the work arrays
            n = tail - head
            start = (kx.shape[0] - n) // 2
            if start < head:
                for i in range(n):
                    kx[start + i] = kx[head + i]
                    kds[start + i] = kds[head + i]
                    kj[start + i] = kj[head + i]
            else:
                for i in range(n - 1, -1, -1):
                    kx[start + i] = kx[head + i]
                    kds[start + i] = kds[head + i]
                    kj[start + i] = kj[head + i]
            head = start
            tail = start + n
    x = _root(kx, kds, kj, head, tail, A0, S0, 0.0)
    out[m - 1] = x
    for t in range(m - 2, -1, -1):
        x = min(max(x, lo[t]), hi[t])
        out[t] = x


@njit(cache=True)
def _pattern_root(h, w, mu, b):  # pragma: no cover - compiled
    """The root of ``nu ||w(nu)|| = b`` on the pattern of ``w = w(mu)`` (the minimizer of
    :func:`fsgl_weighted_row_min`'s problem without its l2 term, curvatures ``h + mu``), or
    ``-1`` where it has none.

    On a pattern (the runs of equal entries of ``w``, their signs and their order against
    their neighbours) the subgradients of the l1 and total-variation terms are fixed, so a
    run ``k`` of ``n_k`` entries and total curvature ``H_k`` has the value ``r_k / (H_k + n_k
    nu)`` with ``r_k = w_k (H_k + n_k mu)``: ``nu ||w(nu)||`` is increasing, with the limit
    ``sqrt(sum_k r_k^2 / n_k)``, and its root is found by Newton's steps kept in a bracket.
    The caller checks it with an evaluation of ``w`` there (the pattern may change between
    ``mu`` and the root)."""
    m = w.shape[0]
    n_runs = 0
    r = np.empty(m)
    hk = np.empty(m)
    nk = np.empty(m)
    t = 0
    limit = 0.0
    while t < m:
        start = t
        total = 0.0
        while t < m and w[t] == w[start]:
            total += h[t]
            t += 1
        if w[start] != 0.0:
            n = float(t - start)
            r[n_runs] = w[start] * (total + n * mu)
            hk[n_runs] = total
            nk[n_runs] = n
            limit += r[n_runs] * r[n_runs] / n
            n_runs += 1
    if n_runs == 0 or not np.sqrt(limit) > b:
        return -1.0
    lo = 0.0
    hi = np.inf
    nu = mu
    for _ in range(100):
        s2 = 0.0
        ds2 = 0.0
        for k in range(n_runs):
            den = hk[k] + nk[k] * nu
            x = r[k] * r[k] * nk[k] / (den * den)
            s2 += x
            ds2 -= 2.0 * x * nk[k] / den
        norm = np.sqrt(s2)
        g = nu * norm - b
        if g > 0.0:
            hi = nu
        else:
            lo = nu
        slope = norm + nu * 0.5 * ds2 / norm
        step = nu - g / slope if slope > 0.0 else -1.0
        if not (lo < step < hi):
            step = 0.5 * (lo + hi) if hi < np.inf else 2.0 * max(lo, nu)
        if abs(step - nu) <= 1e-16 * nu:
            return step
        nu = step
    return nu


@njit(cache=True)
def _fused_row_min(z, h, a, b, c, out):  # pragma: no cover - compiled
    """The minimizer of :func:`fsgl_weighted_row_min`'s problem when it is fused (every entry
    equal), written to ``out``: returns its multiplier ``mu = b / ||w|| > 0``, or 0 (``out``
    untouched) when the fused candidate is zero or not optimal.

    The fused candidate ``w = s 1`` minimizes ``(H / 2) s^2 - Z s + (a m + b sqrt(m)) |s|``
    (``H = sum_t h_t``, ``Z = sum_t z_t``): ``s = soft(Z, a m + b sqrt(m)) / H``. For ``s != 0``
    it is the minimizer exactly when the chain's total-variation subgradient can absorb the
    rest: the prefix sums of ``g_t = h_t s - z_t + sign(s) (a + b / sqrt(m))`` lie in ``[-c,
    c]`` (their total is zero by the choice of ``s``). Rows fused by a strong ``c`` (the
    fused sparse group lasso at the upper end of its grid) are solved in one pass."""
    m = z.shape[0]
    H = 0.0
    Z = 0.0
    for t in range(m):
        H += h[t]
        Z += z[t]
    if not H > 0.0:
        return 0.0
    root = np.sqrt(m)
    shrink = abs(Z) - (a * m + b * root)
    if not shrink > 0.0:
        return 0.0
    sign = 1.0 if Z > 0.0 else -1.0
    s = sign * shrink / H
    pull = sign * (a + b / root)
    slack = c * (1.0 + 1e-12) + 1e-14 * (abs(Z) + H * abs(s))
    acc = 0.0
    for t in range(m - 1):
        acc += h[t] * s - z[t] + pull
        if abs(acc) > slack:
            return 0.0
    for t in range(m):
        out[t] = s
    return b / (abs(s) * root)


@njit(cache=True)
def fsgl_weighted_row_min(z, h, a, b, c, out, mu0=0.0):  # pragma: no cover - compiled
    """``out = argmin_w sum_t (h_t / 2) (w_t - z_t / h_t)^2 + a ||w||_1 + b ||w||_2 + c
    sum_t |w_t - w_{t+1}|`` (one chain), exactly up to rounding, for curvatures ``h_t > 0``,
    or ``h_t >= 0`` when ``b > 0`` (an entry the loss does not see has ``z_t = 0``, read
    ``sum_t (h_t / 2) w_t^2 - z_t w_t``).

    ``w = 0`` exactly when ``z in dr(0)``, that is when ``||soft(prox_{c TV}(z), a)||_2 <=
    b`` (the unweighted prox of the row penalty at ``z`` is 0). Otherwise, with ``mu = b /
    ||w||``, ``w`` is the minimizer ``w(mu)`` of the weighted problem without the l2 term and
    with curvatures ``h_t + mu`` (:func:`_weighted_tv_l1`, exact), and ``mu`` is the root of
    ``mu ||w(mu)|| = b`` (increasing in ``mu``: the minimizer of the problem with the l2
    strength ``b`` is unique), found by regula falsi (Illinois) on ``1 / ||w(mu)|| - mu / b``,
    which is linear in ``mu`` when the curvatures are equal: ``w(mu) = u / (h + mu)`` with
    ``u = soft(prox_{c TV}(z), a)``; its bracket starts around ``mu0`` when given (``> 0``:
    the multiplier of a nearby problem, the row's at the previous epoch).

    Returns ``mu`` (0 when ``w = 0`` or ``b = 0``).
    """
    m = z.shape[0]
    kx = np.empty(4 * m + 4)
    kds = np.empty(4 * m + 4)
    kj = np.empty(4 * m + 4)
    lo = np.empty(m)
    hi = np.empty(m)
    if b <= 0.0:
        _weighted_tv_l1(z, h, a, c, lo, hi, kx, kds, kj, out)
        return 0.0
    # the unweighted prox of (a l1 + c TV) at z: w = 0 when its norm is at most b
    u = np.empty(m)
    scale = 0.0
    for t in range(m):
        scale = max(scale, abs(z[t]))
    if scale == 0.0:
        for t in range(m):
            out[t] = 0.0
        return 0.0
    y = np.empty(m)
    for t in range(m):
        y[t] = z[t] / scale
    tv1d_row(y, c / scale, u)
    big = 0.0
    for t in range(m):
        x = abs(u[t] * scale) - a
        big += x * x if x > 0.0 else 0.0
    big = np.sqrt(big)
    if big <= b:
        for t in range(m):
            out[t] = 0.0
        return 0.0
    fused = _fused_row_min(z, h, a, b, c, out)
    if fused > 0.0:
        return fused
    hmin = h[0]
    hmax = h[0]
    for t in range(m):
        hmin = min(hmin, h[t])
        hmax = max(hmax, h[t])
    q = np.empty(m)

    def psi(mu):
        for t in range(m):
            q[t] = h[t] + mu
        _weighted_tv_l1(z, q, a, c, lo, hi, kx, kds, kj, out)
        nrm = 0.0
        for t in range(m):
            nrm += out[t] * out[t]
        nrm = np.sqrt(nrm)
        return (1.0 / nrm - mu / b) if nrm > 0.0 else np.inf

    if hmax <= 0.0:  # (the loss does not see the row: z = 0, answered above)
        for t in range(m):
            out[t] = 0.0
        return 0.0
    # one evaluation at a guess (the caller's, else the equal-curvature root at the mean
    # curvature), the root on its pattern, one evaluation there: done where the pattern held
    guess = mu0 if mu0 > 0.0 else b * 0.5 * (hmin + hmax) / (big - b)
    f_g = psi(guess)
    if abs(f_g) <= 1e-15 * guess / b:
        return guess
    root = _pattern_root(h, out, guess, b) if f_g < np.inf else -1.0
    if root > 0.0:
        if abs(psi(root)) <= 1e-15 * root / b:
            return root
        mu0 = root
    if mu0 > 0.0:  # a bracket around the caller's guess (the row's last multiplier)
        m_lo = mu0 * 0.95
        m_hi = mu0 * 1.05
    else:  # the equal-curvature roots b h / (big - b) at h = hmin and hmax (the curvatures
        # h + mu of the inner problems are positive for mu > 0)
        m_hi = b * hmax / (big - b)
        m_lo = b * hmin / (big - b) if hmin > 0.0 else 1e-6 * m_hi
    f_lo = psi(m_lo)
    while f_lo < 0.0:
        m_hi = m_lo
        m_lo *= 0.25
        f_lo = psi(m_lo)
        if m_lo < 1e-300:
            break
    f_hi = psi(m_hi) if m_hi > m_lo else -1.0
    grow = 0
    while f_hi > 0.0:
        grow += 1
        if grow > 200 or not f_hi < np.inf:
            # w(mu) = 0 or no root in reach: the zero test above was decided by rounding
            # (||soft(prox_{c TV}(z), a)|| within rounding of b), where w = 0 is optimal to
            # rounding as well
            for t in range(m):
                out[t] = 0.0
            return 0.0
        m_lo = m_hi
        f_lo = f_hi
        m_hi *= 4.0
        f_hi = psi(m_hi)
    side = 0
    mu = m_hi
    for _ in range(100):
        if f_lo == f_hi:
            mu = 0.5 * (m_lo + m_hi)
        else:
            mu = (m_lo * f_hi - m_hi * f_lo) / (f_hi - f_lo)
            if not (m_lo < mu < m_hi):
                mu = 0.5 * (m_lo + m_hi)
        f = psi(mu)
        if f == 0.0 or m_hi - m_lo <= 4e-16 * m_hi:
            break
        if f > 0.0:
            m_lo = mu
            f_lo = f
            if side == 1:
                f_hi *= 0.5
            side = 1
        else:
            m_hi = mu
            f_hi = f
            if side == -1:
                f_lo *= 0.5
            side = -1
        if abs(f) <= 1e-15 * (1.0 / b) * mu:
            break
    return mu  # (out holds w(mu): the last evaluation was at mu)
