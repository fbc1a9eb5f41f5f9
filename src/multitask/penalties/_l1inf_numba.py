"""Numba kernels of the Euclidean projection onto the l1,inf ball.

For ``A = |W|`` of shape ``(d, m)`` (rows ``i`` = features, columns ``j`` = tasks) and a radius
``0 < C < ||A||_{1,inf} = sum_i max_j A_ij``, the projection clips every row at its own
threshold, ``B_ij = min(A_ij, mu_i)``.  The thresholds are coupled by one scalar ``theta >= 0``,
the mass that every surviving row loses (Quattoni, Carreras, Collins & Darrell, 2009):

    R_i(mu_i) = sum_j (A_ij - mu_i)_+ = theta   if mu_i > 0,
    sum_j A_ij <= theta                         if mu_i = 0,
    sum_i mu_i = C.

Equivalently ``mu_i(theta) = max(0, max_k (S_ik - theta) / k)`` with ``S_ik`` the sum of the
``k`` largest entries of row ``i``, and ``theta`` is the root of the convex, decreasing,
piecewise-linear ``h(theta) = sum_i mu_i(theta) - C``.

Two exact solvers of this scalar equation are implemented:

* :func:`thresholds_sort`: the sort/merge algorithm of the paper (Figure 1) with the slope of a
  row set to 0 once the merge passes the row's l1 mass (the row vanishes).  The algorithm as
  printed keeps the slope ``1/k`` of a vanished row and returns a wrong ``theta`` whenever a
  nonzero row is zeroed.  ``O(n log n)`` for ``n = d m``.
* :func:`thresholds_newton`: Newton's method on ``h``, started at the root of a minorant of
  ``h`` built from the row maxima and row sums (a lower bound of the root).  Each iterate is a
  lower bound of the root (convexity), so each row's support ``{j : A_ij > mu_i}`` only grows
  and rows only vanish; the iteration stops, exactly, when no support changed.  A row's
  threshold is found by Michelot's fixed point (vectorized counting passes, no sort), and a
  row is only re-scanned when its largest unclipped entry exceeds the lower bound
  ``(S_i - theta) / k_i`` of its new threshold, so late iterations touch few rows.  Expected
  time about linear in ``n`` (a few passes over ``W``); 2 to 9 iterations in our tests.

Both return ``mu`` (shape ``(d,)``) and ``theta``; :func:`clip_rows` builds the projection
``sign(W) * min(|W|, mu)`` from the original (signed) ``W``.  Inputs are C-contiguous float64
arrays and are never modified.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# fast-math flags of the counting passes, which LLVM vectorizes only with all four
# (``benchmarks/bench_l1inf_projection.py``; the figure: docs/tuning_constants.md).
# "nnan"/"ninf" are safe there: the entries are checked finite before any kernel runs
# and every threshold passed to these passes is finite.
_FM = {"reassoc", "nsz", "nnan", "ninf"}
#: mask clearing the sign bit of a float64 bit pattern
_ABS_BITS = np.int64(0x7FFFFFFFFFFFFFFF)
#: bit pattern of the largest finite float64; larger patterns (sign cleared) are inf or NaN
_MAX_FINITE_BITS = np.int64(0x7FEFFFFFFFFFFFFF)


@njit(cache=True, fastmath={"reassoc"})
def _row_stat(W, Wb, i):  # pragma: no cover - compiled
    """Bit pattern of ``max_j |W_ij|`` and ``sum_j |W_ij|`` for row ``i`` (``Wb``: int64 view).

    The maximum is taken on the bit patterns of ``|W_ij|`` (they order like the values for
    non-negative doubles, and inf/NaN patterns are larger than every finite one), so the loop
    vectorizes and finiteness is one comparison per row.
    """
    mb = 0
    s = 0.0
    for j in range(W.shape[1]):
        s += abs(W[i, j])
        mb = max(mb, Wb[i, j] & _ABS_BITS)
    return mb, s


@njit(cache=True)
def row_stats(W):  # pragma: no cover - compiled
    """Row maxima and row l1 masses of ``|W|``, and a finiteness flag.

    Parameters
    ----------
    W : ndarray of shape (d, m), float64, C-contiguous

    Returns
    -------
    rowmax : ndarray of shape (d,)
        ``max_j |W_ij|``.
    rowsum : ndarray of shape (d,)
        ``sum_j |W_ij|``.
    finite : bool
        False if ``W`` holds a NaN or an infinite entry (then the other outputs are meaningless).
    """
    d = W.shape[0]
    Wb = W.view(np.int64)
    rowmax = np.empty(d)
    rowsum = np.empty(d)
    finite = True
    for i in range(d):
        mb, s = _row_stat(W, Wb, i)
        if mb > _MAX_FINITE_BITS:
            finite = False
        rowmax[i] = np.int64(mb).view(np.float64)
        rowsum[i] = s
    return rowmax, rowsum, finite


@njit(cache=True, fastmath=_FM)
def clip_rows(W, mu):  # pragma: no cover - compiled
    """Return ``B`` with ``B_ij = sign(W_ij) * min(|W_ij|, mu_i)``, shape ``(d, m)``.

    Computed as ``min(max(W_ij, -mu_i), mu_i)`` (exact: entries inside ``[-mu_i, mu_i]`` are
    copied); rows with ``mu_i = 0`` are set to ``+0.0``.  ``W`` must be finite.
    """
    d, m = W.shape
    B = np.empty((d, m))
    for i in range(d):
        t = mu[i]
        if t <= 0.0:
            for j in range(m):
                B[i, j] = 0.0
            continue
        lo = -t
        for j in range(m):
            w = W[i, j]
            w = w if w > lo else lo
            B[i, j] = w if w < t else t
    return B


# --------------------------------------------------------------------------------------------
# Sort / merge (corrected Figure 1)
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def _sift_down(hr, hv, hc, size, pos):  # pragma: no cover - compiled
    """Restore the min-heap order (keys ``hr``, payloads ``hv``, ``hc``) below ``pos``.

    The heap holds ``size`` items.
    """
    r = hr[pos]
    v = hv[pos]
    cv = hc[pos]
    last = size - 1
    while True:
        c = 2 * pos + 1
        if c > last:
            break
        if c < last and hr[c + 1] < hr[c]:
            c += 1
        rc = hr[c]
        if rc < r:
            hr[pos] = rc
            hv[pos] = hv[c]
            hc[pos] = hc[c]
            pos = c
        else:
            break
    hr[pos] = r
    hv[pos] = v
    hc[pos] = cv


@njit(cache=True)
def thresholds_sort(W, rowmax, radius):  # pragma: no cover - compiled
    """Row thresholds by the corrected sort/merge algorithm (Figure 1 of the paper).

    Requires ``0 < radius < sum(rowmax)``.  Each nonzero row ``i`` of ``A = |W|`` is sorted
    decreasingly, ``s_i1 >= ... >= s_im >= s_i,m+1 := 0``, with breakpoints
    ``r_ik = S_i,k-1 - (k - 1) s_ik`` (``k = 1..m+1``, ``r_i,m+1`` = row l1 mass).  The ``d``
    increasing lists ``r_i`` are merged with a heap; the norm reduction
    ``n(theta) = sum_i (max_j A_ij - mu_i(theta))`` grows on ``[r^{t-1}, r^t]`` with slope
    ``sum_i g_i``, where ``g_i = 1/k`` after visiting ``r_ik`` for ``k <= m`` and ``g_i = 0`` after
    visiting ``r_i,m+1`` (the row vanished; this is the correction of the printed algorithm).
    The merge stops on the piece where ``n`` reaches ``delta = sum(rowmax) - radius``; ``theta``
    is then computed in closed form from that piece's supports,

        theta = (sum_{i active} S_ik_i / k_i - radius) / sum_{i active} 1 / k_i,

    and ``mu_i = max(0, (S_ik_i - theta) / k_i)`` (``mu_i = 0`` for vanished and zero rows).

    Parameters
    ----------
    W : ndarray of shape (d, m), float64, C-contiguous
    rowmax : ndarray of shape (d,)
        ``max_j |W_ij|``.
    radius : float

    Returns
    -------
    mu : ndarray of shape (d,)
    theta : float
    n_steps : int
        Number of merge steps (breakpoints visited).
    """
    d, m = W.shape
    rows = np.empty(d, np.int64)
    nr = 0
    norm = 0.0
    for i in range(d):
        norm += rowmax[i]
        if rowmax[i] > 0.0:
            rows[nr] = i
            nr += 1
    delta = norm - radius
    if delta <= 0.0:
        # inside the ball up to the rounding of this sum (the caller's sum, in another order,
        # put it just outside): the projection is the identity
        return rowmax.copy(), 0.0, 0

    # rows sorted increasingly; the k-th largest entry (1-based) of row p is s[p, m - k]
    s = np.empty((nr, m))
    for p in range(nr):
        i = rows[p]
        for j in range(m):
            s[p, j] = abs(W[i, j])
        s[p].sort()

    # heap of the next unvisited breakpoint of every row p: key r_p,k, payload p * (m + 2) + k
    # (k 1-based) and S_p,k-1 (sum of the k - 1 largest entries, i.e. of the visited ones)
    stride = m + 2
    hr = np.zeros(nr)
    hv = np.arange(nr) * stride + 1
    hc = np.zeros(nr)
    size = nr
    G = 0.0  # slope of the norm reduction n(theta) = sum_i g_i on the current interval
    n = 0.0
    r_prev = 0.0
    n_steps = 0
    while size > 0:
        rv = hr[0]
        p = hv[0] // stride
        k = hv[0] - p * stride
        n_steps += 1
        n += G * (rv - r_prev)
        r_prev = rv
        if k > 1:
            G -= 1.0 / (k - 1)  # slope of row p before this breakpoint
        if k <= m:
            G += 1.0 / k
            cum = hc[0] + s[p, m - k]  # S_p,k
            # next breakpoint r_p,k+1 = S_p,k+1 - (k+1) s_p,k+1 = S_p,k - k s_p,k+1
            nxt = s[p, m - k - 1] if k < m else 0.0
            hr[0] = cum - k * nxt
            hv[0] += 1
            hc[0] = cum
        else:
            # k = m + 1: the row is zero from here on and its slope drops to 0 (the
            # correction of the printed algorithm, which keeps 1/k); it leaves the heap
            size -= 1
            hr[0] = hr[size]
            hv[0] = hv[size]
            hc[0] = hc[size]
        if size > 0:
            _sift_down(hr, hv, hc, size, 0)
            if G > 0.0 and n + G * (hr[0] - rv) > delta:
                break

    # last visited index k_p and S_p,k_p: rows still in the heap; the others vanished
    lastk = np.full(nr, m + 1)
    cum = np.zeros(nr)
    for q in range(size):
        p = hv[q] // stride
        lastk[p] = hv[q] - p * stride - 1
        cum[p] = hc[q]

    # closed-form theta on the final piece
    sum_inv = 0.0
    sum_sk = 0.0
    for p in range(nr):
        k = lastk[p]
        if k <= m:
            sum_inv += 1.0 / k
            sum_sk += cum[p] / k
    mu = np.zeros(d)
    if sum_inv == 0.0:  # cannot happen for 0 < radius < norm; defensive
        return mu, r_prev, n_steps
    theta = (sum_sk - radius) / sum_inv
    for p in range(nr):
        k = lastk[p]
        if k <= m:
            v = (cum[p] - theta) / k
            if v > 0.0:
                mu[rows[p]] = v
    return mu, theta, n_steps


# --------------------------------------------------------------------------------------------
# Newton root search on theta
# --------------------------------------------------------------------------------------------


#: rows at least this long get the two extra levels of :func:`row_stats_levels` (for short
#: rows, many of them, the extra work costs more than the iterations it saves; measured)
_LEVELS_MIN_LENGTH = 48


@njit(cache=True, fastmath=_FM)
def _row_levels(W, i, va, vb):  # pragma: no cover - compiled
    """Counts and sums of the entries ``|W_ij| > va`` and ``|W_ij| > vb`` of row ``i``."""
    ca = 0
    sa = 0.0
    cb = 0
    sb = 0.0
    for j in range(W.shape[1]):
        x = abs(W[i, j])
        above_a = x > va
        above_b = x > vb
        ca += above_a
        sa += x if above_a else 0.0
        cb += above_b
        sb += x if above_b else 0.0
    return ca, sa, cb, sb


@njit(cache=True)
def row_stats_levels(W):  # pragma: no cover - compiled
    """:func:`row_stats` plus two levels per row for the starting bound of the Newton method.

    Returns ``rowmax, rowsum, lv, finite`` with ``lv`` of shape ``(d, 4)``: columns
    ``S_a, 1 / c_a, S_b, 1 / c_b`` for the ``c_a`` entries ``|W_ij| > rowmax_i / 2`` and the
    ``c_b`` entries ``|W_ij| > rowsum_i / m`` (above the row mean; ``1 / c = 0`` when there is
    none).  Each pair gives the lower bound ``(S - theta) / c <= mu_i(theta)`` (any subset of
    the row does), tighter than the row maximum and the row sum alone when ``mu_i`` lies in
    between.  The second pass over a row runs while the row is in cache.
    """
    d, m = W.shape
    Wb = W.view(np.int64)
    rowmax = np.empty(d)
    rowsum = np.empty(d)
    lv = np.empty((d, 4))
    inv_m = 1.0 / m
    finite = True
    for i in range(d):
        mb, s = _row_stat(W, Wb, i)
        rmax = np.int64(mb).view(np.float64)
        rowmax[i] = rmax
        rowsum[i] = s
        if mb > _MAX_FINITE_BITS:
            finite = False
            continue
        ca, sa, cb, sb = _row_levels(W, i, 0.5 * rmax, s * inv_m)
        lv[i, 0] = sa
        lv[i, 1] = 1.0 / ca if ca > 0 else 0.0
        lv[i, 2] = sb
        lv[i, 3] = 1.0 / cb if cb > 0 else 0.0
    return rowmax, rowsum, lv, finite


@njit(cache=True, fastmath=_FM)
def _minorant2(rowmax, rowsum, theta, inv_m):  # pragma: no cover - compiled
    """Value and slope pattern of ``sum_i max(0, rowmax_i - theta, (rowsum_i - theta) / m)``.

    Returns the sum and the numbers of rows on the slope ``-1`` and on the slope ``-1/m`` piece.
    """
    val = 0.0
    n1 = 0
    n2 = 0
    for i in range(rowmax.shape[0]):
        a = rowmax[i] - theta
        b = (rowsum[i] - theta) * inv_m
        first = a >= b
        n1 += first and a > 0.0
        n2 += (not first) and b > 0.0
        val += max(max(a, b), 0.0)
    return val, n1, n2


@njit(cache=True, fastmath=_FM)
def _minorant(rowmax, rowsum, lv, theta, inv_m):  # pragma: no cover - compiled
    """Value and slope of ``sum_i max(0, rowmax_i - theta, (rowsum_i - theta) / m,
    (S_a,i - theta) / c_a,i, (S_b,i - theta) / c_b,i)`` (branch-free, vectorizes)."""
    val = 0.0
    slope = 0.0
    for i in range(rowmax.shape[0]):
        best = rowmax[i] - theta
        sl = 1.0
        v = (rowsum[i] - theta) * inv_m
        sl = inv_m if v > best else sl
        best = v if v > best else best
        g = lv[i, 1]
        v = (lv[i, 0] - theta) * g
        sl = g if v > best else sl
        best = v if v > best else best
        g = lv[i, 3]
        v = (lv[i, 2] - theta) * g
        sl = g if v > best else sl
        best = v if v > best else best
        pos = best > 0.0
        val += best if pos else 0.0
        slope += sl if pos else 0.0
    return val, slope


@njit(cache=True)
def theta_lower_bound(rowmax, rowsum, lv, radius, m):  # pragma: no cover - compiled
    """A lower bound of the root ``theta*`` of ``h(theta) = sum_i mu_i(theta) - radius``.

    Since ``(S_K - theta) / |K| <= mu_i(theta)`` for every subset ``K`` of row ``i``, the row
    maximum, the whole row and the two levels of :func:`row_stats_levels` give the minorant

        L(theta) = sum_i max(0, rowmax_i - theta, (rowsum_i - theta) / m,
                             (S_a,i - theta) / c_a,i, (S_b,i - theta) / c_b,i) - radius,

    convex, decreasing and piecewise linear, with ``L <= h``, so its root is at most ``theta*``
    (without levels, ``lv`` of shape ``(0, 4)``, the last two terms are left out).
    The root is found by Newton's method from ``theta = 0`` (whose first step is the bound
    ``delta / (number of nonzero rows)`` of the paper's analysis); every iterate is a lower bound
    of ``theta*``, and the loop stops when the slope repeats (the step was exact), when ``L``
    is no longer positive, or after 100 steps.

    Parameters
    ----------
    rowmax, rowsum : ndarray of shape (d,)
    lv : ndarray of shape (d, 4) or (0, 4)
        Levels of :func:`row_stats_levels`, or none.
    radius : float
        ``0 < radius < sum(rowmax)``.
    m : int
        Row length (number of tasks).

    Returns
    -------
    float
    """
    inv_m = 1.0 / m
    theta = 0.0
    prev = -1.0
    for _ in range(100):
        if lv.shape[0] > 0:
            val, slope = _minorant(rowmax, rowsum, lv, theta, inv_m)
        else:
            val, n1, n2 = _minorant2(rowmax, rowsum, theta, inv_m)
            slope = n1 + n2 * inv_m
        val -= radius
        if not val > 0.0 or slope == 0.0:
            break
        theta_new = theta + val / slope
        if not theta_new > theta:
            break
        theta = theta_new
        if slope == prev:
            break
        prev = slope
    return theta


@njit(cache=True, fastmath=_FM)
def _row_pass(W, Wb, i, t):  # pragma: no cover - compiled
    """One pass over row ``i`` of ``A = |W|`` at a level ``t`` (vectorized).

    ``Wb`` is ``W`` viewed as int64.  Returns ``#{j : A_ij > t}``, ``sum_{A_ij > t} A_ij`` and
    ``max({A_ij : A_ij <= t} + {0})``.  The max is taken on the bit patterns: those of
    non-negative doubles order like the doubles, and an integer max reduction vectorizes where a
    float one does not.
    """
    m = W.shape[1]
    c = 0
    s = 0.0
    ub = 0
    for j in range(m):
        x = abs(W[i, j])
        above = x > t
        if above:
            c += 1
            s += x
        y = 0 if above else Wb[i, j] & _ABS_BITS
        ub = max(ub, y)
    return c, s, np.int64(ub).view(np.float64)


@njit(cache=True)
def _row_threshold(W, Wb, i, theta, t):  # pragma: no cover - compiled
    """Threshold ``mu_i(theta)`` of row ``i`` (``sum_j |W_ij| > theta > 0``) from a lower bound.

    Michelot's fixed point ``t <- (sum_{A_ij > t} A_ij - theta) / #{j : A_ij > t}`` increases
    monotonically from any lower bound ``t <= mu_i(theta)`` (every subset ``K`` gives
    ``(sum_K A_ij - theta) / |K| <= mu_i(theta)``) and reaches the threshold when the set
    ``{A_ij > t}`` repeats.

    Returns
    -------
    k, S : int, float
        Size and sum of the support ``{j : A_ij > mu_i}``.
    u : float
        Largest entry outside the support (0 if none).
    """
    c, s, u = _row_pass(W, Wb, i, t)
    if c == 0:  # t rounded up to the row maximum (theta negligible): 0 is a lower bound too
        t = 0.0
        c, s, u = _row_pass(W, Wb, i, t)
    while c > 0:
        tn = (s - theta) / c
        if not tn > t:
            break
        cn, sn, un = _row_pass(W, Wb, i, tn)
        if cn == 0:  # rounding only: keep the last nonempty set
            break
        t = tn
        done = cn >= c
        c, s, u = cn, sn, un
        if done:  # the set repeated: t is the fixed point
            break
    return c, s, u


#: rows shorter than this are evaluated in blocks, vectorized across rows (the per-row
#: vectorized pass wins on longer rows: docs/tuning_constants.md)
_BLOCK_MAX_LENGTH = 48
#: entries of a transposed block (fits the L1 cache)
_BLOCK_ENTRIES = 2048


@njit(cache=True, fastmath=_FM)
def _block_pass(T, nb, t, c, s, u, u2):  # pragma: no cover - compiled
    """One pass over a transposed block ``T`` (shape ``(m, B)``, rows ``r < nb`` used).

    For every row ``r``: ``c_r = #{j : T_jr > t_r}``, ``s_r = sum_{T_jr > t_r} T_jr``, and
    ``u_r >= u2_r``, the two largest of ``{T_jr : T_jr <= t_r}`` (0 where there are fewer); the
    inner loop runs across rows and vectorizes.
    """
    m = T.shape[0]
    for r in range(nb):
        c[r] = 0.0
        s[r] = 0.0
        u[r] = 0.0
        u2[r] = 0.0
    for j in range(m):
        for r in range(nb):
            x = T[j, r]
            above = x > t[r]
            c[r] += 1.0 if above else 0.0
            s[r] += x if above else 0.0
            y = 0.0 if above else x
            ur = u[r]
            lo = y if y < ur else ur
            u2[r] = lo if lo > u2[r] else u2[r]
            u[r] = y if y > ur else ur


@njit(cache=True)
def _start_bound(rmax, rsum, lv, i, theta, inv_m):  # pragma: no cover - compiled
    """Lower bound of ``mu_i(theta)`` from the subsets of row ``i`` known before any pass.

    ``max(rowmax_i - theta, (rowsum_i - theta) / m, (S_a - theta) / c_a, (S_b - theta) / c_b)``:
    the maximum, the whole row, and the levels of :func:`row_stats_levels` if ``lv`` has rows.
    """
    t = max(rmax - theta, (rsum - theta) * inv_m)
    if lv.shape[0] > 0:
        g = lv[i, 1]
        if g > 0.0:
            t = max(t, (lv[i, 0] - theta) * g)
        g = lv[i, 3]
        if g > 0.0:
            t = max(t, (lv[i, 2] - theta) * g)
    return t


@njit(cache=True)
def _eval_blocked(W, ids, plist, n, first, theta, rowmax, rowsum, st):  # pragma: no cover
    """Thresholds of the rows at state positions ``plist[:n]`` (short rows, blocked).

    The rows are processed in blocks of ``B`` rows, transposed into an ``(m, B)`` buffer, and
    Michelot's fixed point (see :func:`_row_threshold`) runs on all rows of a block at once,
    one :func:`_block_pass` per step, until every row of the block has converged.  Writes
    ``st[p] = (S_i, umax_i, k_i, u2_i)`` (``u2_i``: second largest entry outside the support)
    and returns the number of rows whose support size changed.  The fixed point starts from
    ``max(rowmax_i - theta, (rowsum_i - theta) / m)`` when ``first``, else from
    ``(S_i - theta) / k_i``.
    """
    m = W.shape[1]
    inv_m = 1.0 / m
    B = max(8, _BLOCK_ENTRIES // m)
    T = np.empty((m, B))
    t = np.empty(B)
    c = np.empty(B)
    s = np.empty(B)
    u = np.empty(B)
    u2 = np.empty(B)
    cprev = np.empty(B)
    fin = np.empty(B, np.bool_)
    out = np.empty((B, 4))
    n_changed = 0
    for b0 in range(0, n, B):
        nb = min(B, n - b0)
        for r in range(nb):
            p = plist[b0 + r]
            i = ids[p]
            for j in range(m):
                T[j, r] = abs(W[i, j])
            if first:
                t[r] = max(rowmax[i] - theta, (rowsum[i] - theta) * inv_m)
            else:
                t[r] = (st[p, 0] - theta) / st[p, 2]
            cprev[r] = m + 1.0
            fin[r] = False
            for q in range(4):
                out[r, q] = st[p, q]
        left = nb
        while left > 0:
            _block_pass(T, nb, t, c, s, u, u2)
            for r in range(nb):
                if fin[r]:
                    continue
                cr = c[r]
                if cr == 0.0:
                    if cprev[r] > m:  # first pass, t rounded up to the row maximum: restart at 0
                        t[r] = 0.0
                        continue
                    fin[r] = True  # rounding only: keep the last nonempty set
                    left -= 1
                    continue
                out[r, 0] = s[r]
                out[r, 1] = u[r]
                out[r, 2] = cr
                out[r, 3] = u2[r]
                tn = (s[r] - theta) / cr
                if cr >= cprev[r] or not tn > t[r]:  # the set repeated: fixed point
                    fin[r] = True
                    left -= 1
                    continue
                cprev[r] = cr
                t[r] = tn
        for r in range(nb):
            p = plist[b0 + r]
            if first or out[r, 2] != st[p, 2]:
                n_changed += 1
            for q in range(4):
                st[p, q] = out[r, q]
    return n_changed


@njit(cache=True)
def _eval_rows(W, Wb, ids, plist, n, first, theta, rowmax, rowsum, lv, st):  # pragma: no cover
    """Thresholds ``mu_i(theta)`` of the rows at state positions ``plist[:n]``.

    Row ``i = ids[p]`` has state ``st[p] = (S_i, umax_i, k_i, u2_i)``: sum and size of its
    support ``{j : |W_ij| > mu_i}``, its largest entry outside the support, and the second
    largest (blocked path; -1 = unknown on the long-row path).  The fixed point starts from
    :func:`_start_bound` when ``first`` (long rows use the levels ``lv``; short rows, in
    blocks, do not get levels), else from ``(S_i - theta) / k_i``.  Overwrites the states and
    returns the number of rows whose support size changed (all rows when ``first``).
    """
    m = W.shape[1]
    if m < _BLOCK_MAX_LENGTH:
        return _eval_blocked(W, ids, plist, n, first, theta, rowmax, rowsum, st)
    inv_m = 1.0 / m
    n_changed = 0
    for q in range(n):
        p = plist[q]
        i = ids[p]
        if first:
            t = _start_bound(rowmax[i], rowsum[i], lv, i, theta, inv_m)
        else:
            t = (st[p, 0] - theta) / st[p, 2]
        c, sc, u = _row_threshold(W, Wb, i, theta, t)
        if first or c != st[p, 2]:
            n_changed += 1
        st[p, 0] = sc
        st[p, 1] = u
        st[p, 2] = c
        st[p, 3] = -1.0
    return n_changed


@njit(cache=True)
def thresholds_newton(W, rowmax, rowsum, lv, radius):  # pragma: no cover - compiled
    """Row thresholds by Newton's method on ``h(theta) = sum_i mu_i(theta) - radius``.

    Requires ``0 < radius < sum(rowmax)``.  ``h`` is convex, decreasing and piecewise linear;
    on the piece where row ``i`` has support ``K_i = {j : A_ij > mu_i}`` (``k_i = |K_i|``,
    ``S_i = sum_{j in K_i} A_ij``) and the rows ``i`` in ``I`` are alive (``sum_j A_ij > theta``)

        h(theta) = sum_{i in I} (S_i - theta) / k_i - radius,

    so a Newton step is ``theta <- (sum_{i in I} S_i / k_i - radius) / sum_{i in I} 1 / k_i``.
    Started at the lower bound of :func:`theta_lower_bound`, every iterate is a lower bound of
    the root (convexity), supports only grow and rows only vanish; the iteration ends, exact up
    to rounding, at the first iterate where no support and no alive set changed (or, against
    rounding, when ``theta`` stops increasing).  The returned ``theta`` is the root of the
    linear piece of the final supports, so ``sum_i mu_i = radius`` up to rounding.

    Each evaluation computes ``mu_i(theta)`` by Michelot's fixed point on the row (vectorized
    passes along long rows, across blocks of rows for short ones).  After the first evaluation a
    row is skipped when its largest entry outside the support does not exceed
    ``(S_i - theta) / k_i``, a lower bound of its new threshold (equivalently
    ``theta <= S_i - k_i umax_i``): its support cannot change.  Short rows also keep the second
    largest entry ``u2_i`` outside the support, so a row whose support gains exactly ``umax_i``
    (``theta <= S_i + umax_i - (k_i + 1) u2_i``) is updated without reading ``W``.  No sort, no
    copy of ``W``; the state is kept for the rows alive at the starting point only.

    Parameters
    ----------
    W : ndarray of shape (d, m), float64, C-contiguous
    rowmax, rowsum : ndarray of shape (d,)
        ``max_j |W_ij|`` and ``sum_j |W_ij|``.
    lv : ndarray of shape (d, 4) or (0, 4)
        Row levels of :func:`row_stats_levels` for a tighter start, or none.
    radius : float

    Returns
    -------
    mu : ndarray of shape (d,)
    theta : float
    n_iter : int
        Number of evaluations of ``h`` (Newton iterations).
    """
    d, m = W.shape
    theta = theta_lower_bound(rowmax, rowsum, lv, radius, m)
    theta *= 1.0 - 1e-12  # stay on the left of the root despite rounding
    Wb = W.view(np.int64)

    # rows alive at the start (rows with l1 mass <= theta are zero at the solution)
    na = 0
    for i in range(d):
        if rowmax[i] > 0.0 and rowsum[i] > theta:
            na += 1
    ids = np.empty(na, np.int64)
    na = 0
    for i in range(d):
        if rowmax[i] > 0.0 and rowsum[i] > theta:
            ids[na] = i
            na += 1
    st = np.empty((na, 4))  # per alive row: S_i, umax_i, k_i, u2_i (see _eval_rows)
    pos = np.arange(na)  # state positions of the rows still alive
    todo = np.empty(na, np.int64)

    # np.int64 / np.bool_: plain argument types, one compiled signature of _eval_rows (a
    # constant or a counter still being inferred would compile literal variants)
    _eval_rows(W, Wb, ids, pos, np.int64(na), np.bool_(True), theta, rowmax, rowsum, lv, st)
    sum_inv = 0.0
    sum_sk = 0.0
    for p in range(na):
        sum_inv += 1.0 / st[p, 2]
        sum_sk += st[p, 0] / st[p, 2]

    n_iter = 1
    changed = True
    while True:
        if sum_inv == 0.0:  # defensive: cannot happen for 0 < radius < sum(rowmax)
            break
        theta_new = (sum_sk - radius) / sum_inv
        if not changed or not theta_new > theta or n_iter >= 1000:
            theta = theta_new
            break
        theta = theta_new
        n_iter += 1
        # one sweep: drop vanished rows, list the rows whose support may grow, and sum the
        # terms of the others
        sum_inv = 0.0
        sum_sk = 0.0
        w = 0
        nt = 0
        n_dead = 0
        n_grown = 0
        for q in range(na):
            p = pos[q]
            if rowsum[ids[p]] <= theta:  # the row vanishes, for this and every larger theta
                n_dead += 1
                continue
            pos[w] = p
            w += 1
            S = st[p, 0]
            u = st[p, 1]
            k = st[p, 2]
            if theta > S - k * u:  # umax_i > (S_i - theta) / k_i: the support grows
                u2 = st[p, 3]
                if u2 >= 0.0 and theta <= S + u - (k + 1.0) * u2:
                    # exactly umax_i enters: (S_i + umax_i - theta) / (k_i + 1) >= u2_i
                    S += u
                    k += 1.0
                    st[p, 0] = S
                    st[p, 1] = u2
                    st[p, 2] = k
                    st[p, 3] = -1.0
                    n_grown += 1
                else:
                    todo[nt] = p
                    nt += 1
                    continue
            sum_inv += 1.0 / k
            sum_sk += S / k
        na = w
        n_changed = _eval_rows(W, Wb, ids, todo, np.int64(nt), np.bool_(False), theta,
                               rowmax, rowsum, lv, st)
        for q in range(nt):
            p = todo[q]
            sum_inv += 1.0 / st[p, 2]
            sum_sk += st[p, 0] / st[p, 2]
        changed = n_changed > 0 or n_dead > 0 or n_grown > 0
    mu = np.zeros(d)
    for q in range(na):
        p = pos[q]
        v = (st[p, 0] - theta) / st[p, 2]
        mu[ids[p]] = v if v > 0.0 else 0.0
    return mu, theta, n_iter


# --------------------------------------------------------------------------------------------
# One task (m = 1): the l1-ball projection of the column
# --------------------------------------------------------------------------------------------


@njit(cache=True, fastmath={"reassoc"})
def column_stats(W):  # pragma: no cover - compiled
    """``sum_i |W_i0|``, ``max_i |W_i0|`` and a finiteness flag of a ``(d, 1)`` array, no copy."""
    Wb = W.view(np.int64)
    s = 0.0
    mb = 0
    for i in range(W.shape[0]):
        s += abs(W[i, 0])
        mb = max(mb, Wb[i, 0] & _ABS_BITS)
    return s, np.int64(mb).view(np.float64), mb <= _MAX_FINITE_BITS


@njit(cache=True, fastmath=_FM)
def _column_pass(W, t):  # pragma: no cover - compiled
    """Count and sum of the entries ``|W_i0| > t``."""
    c = 0
    s = 0.0
    for i in range(W.shape[0]):
        x = abs(W[i, 0])
        if x > t:
            c += 1
            s += x
    return c, s


@njit(cache=True)
def threshold_single_task(W, radius, norm, amax, max_passes):  # pragma: no cover - compiled
    """Multiplier ``theta`` of the projection of a ``(d, 1)`` array (``0 < radius < norm``).

    With one task every row is one entry ``a_i = |W_i0|`` with ``mu_i = (a_i - theta)_+``, so
    ``h(theta) = sum_i (a_i - theta)_+ - radius`` and the Newton step of
    :func:`thresholds_newton` is Michelot's step for the l1 ball,
    ``theta <- (sum_{a_i > theta} a_i - radius) / #{i : a_i > theta}``, here on vectorized
    passes over the column without any per-row state.  It starts at the lower bound
    ``max((norm - radius) / d, amax - radius)`` and stops when the set ``{a_i > theta}``
    repeats.

    Returns
    -------
    theta : float
    n_iter : int
        Number of passes, or -1 if ``max_passes`` did not suffice (the caller then falls back
        to :func:`thresholds_newton`).
    """
    d = W.shape[0]
    t = max((norm - radius) / d, amax - radius)
    c, s = _column_pass(W, t)
    if c == 0:  # t rounded up to the maximum: 0 is a lower bound too
        t = 0.0
        c, s = _column_pass(W, t)
    for it in range(1, max_passes):
        tn = (s - radius) / c
        if not tn > t:
            return tn, it
        cn, sn = _column_pass(W, tn)
        if cn == 0:  # rounding only: keep the last nonempty set
            return tn, it
        t = tn
        done = cn >= c
        c, s = cn, sn
        if done:
            return (s - radius) / c, it + 1
    return t, -1


@njit(cache=True, fastmath=_FM)
def soft_threshold_column(W, theta):  # pragma: no cover - compiled
    """``B_i0 = sign(W_i0) * max(|W_i0| - theta, 0)`` for ``W`` of shape ``(d, 1)``."""
    d = W.shape[0]
    B = np.empty((d, 1))
    for i in range(d):
        w = W[i, 0]
        v = abs(w) - theta
        v = v if v > 0.0 else 0.0
        B[i, 0] = v if w > 0.0 else -v
    return B
