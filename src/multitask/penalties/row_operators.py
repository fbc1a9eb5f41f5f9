"""The row operators of the ``"row_prox"`` families, as compiled plain functions on one row.

A ``"row_prox"`` penalty is ``sum_j r_j(W_j.)`` over the feature rows, ``r_j`` the row operator
of its family (:data:`~multitask.penalties.base.ROW_PROX_FAMILIES`, code = position there)
with the row's strengths ``(a, b, c)``. The functions here are what a solver needs of ``r``
on one row ``w`` of length ``m`` (numba, callable from compiled kernels and from Python):
:func:`row_prox` (``prox_{step r}``) and :func:`row_penalty` (``r(w)``), dispatching on the
family code to

* ``0``, elastic net, ``a ||w||_1 + b ||w||_2 + (c / 2) ||w||^2``: soft-thresholding, then
  group soft-thresholding, after the ridge's shrink (:func:`elastic_net_row_prox`);
* ``1``, fused sparse group lasso, ``a ||w||_1 + b ||w||_2 + c sum_t |w_t - w_{t+1}|``: the
  1-D total-variation prox (:func:`tv1d_row`, Condat's direct algorithm), then soft-, then
  group soft-thresholding (:func:`fsgl_row_prox`);
* ``2``, ``3``, the dirty norm with ``s = inf`` or ``s = 2`` (below): ``v`` minus the
  projection onto the dual ball (:func:`dirty_project_row`) and the support function
  (:func:`dirty_row_value`).

The dirty norm. For strengths ``a = alpha_group > 0`` and ``c = alpha_l1 > 0`` (the family's
``a`` and ``b``) and ``s in {inf, 2}`` (``s*`` its dual exponent, 1 or 2)::

    N(w) = min_{p + q = w} a ||p||_s + c ||q||_1 = max_{u in B} <u, w>,
    B = {u : ||u||_{s*} <= a} cap {u : ||u||_inf <= c}

(the conjugate of an infimal convolution of two norms is the sum of the indicators of their
dual balls). Everything is exact, by sorting ``|w|`` (``O(m log m)`` per row), but for the
projection's level with ``s* = 1`` (the prox of the default ``s = inf``), found by a search
over the linear pieces of its equation, ``O(m)`` per pass and a few passes
(:func:`_l1_cap_level`; block coordinate descent's exact row minimization with each task's
curvature, :func:`dirty_weighted_row_min`, finds its level the same way for ``s* = 1``,
:func:`_weighted_l1_cap_level`, and by Newton's steps for ``s* = 2``,
:func:`_weighted_l2_cap_level`, from the row's previous level):

* :func:`dirty_project_row` (the projection onto ``B``): ``u_i = sign(v_i) clip(|v_i| - tau,
  0, c)`` (``s* = 1``) or ``u_i = sign(v_i) min(t |v_i|, c)`` (``s* = 2``, ``t = 1 / (1 +
  mu)``) with the Lagrange multiplier of the first ball (``tau >= 0`` smallest, ``t <= 1``
  largest) that makes ``u`` feasible: on each interval between consecutive breakpoints of
  ``|v|`` the constraint is a linear (``s* = 1``) or quadratic (``s* = 2``) equation in it;
* :func:`dirty_row_value` (``N(w)``, the support function of ``B``): ``s* = 1``: a fractional
  knapsack, ``c`` on the ``k = floor(a / c)`` largest ``|w_i|`` and ``a - k c`` on the next;
  ``s* = 2``: ``u_i = min(beta |w_i|, c)`` with ``beta`` the largest scale inside the
  Euclidean ball, ``N = c (sum of the capped |w_i|) + beta (sum of the other w_i^2)``;
* :func:`dirty_split_threshold` (the group part of an optimal split): ``p = sign(w) min(|w|,
  tau)``, ``q = w - p``, with ``tau`` the ``(k + 1)``-th largest ``|w_i|`` (``s = inf``; then
  ``a tau + c sum (|w_i| - tau)_+ = N(w)``) or ``tau = c / beta`` (``s = 2``: the optimality
  conditions ``u in a d||p||_2 cap c d||q||_1`` give ``p = u / beta``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = [
    "dirty_project_row",
    "dirty_prox_rows",
    "dirty_row_value",
    "dirty_split_rows",
    "dirty_split_threshold",
    "dirty_weighted_row_min",
    "dirty_values_rows",
    "elastic_net_row_prox",
    "fsgl_row_prox",
    "row_penalty",
    "row_prox",
    "tv1d_row",
]


@njit(cache=True)
def _write_segment(out, k0, last, value):  # pragma: no cover - compiled
    """``out[k0] = ... = out[last] = value`` (``out[k0]`` at least): a segment of
    :func:`tv1d_row`'s answer; returns the index after it."""
    while True:
        out[k0] = value
        k0 += 1
        if k0 > last:
            return k0


@njit(cache=True)
def tv1d_row(y, lam, out):  # pragma: no cover - compiled
    """Condat's direct algorithm: ``out = argmin_x 0.5 ||x - y||^2 + lam sum |x_{k+1} - x_k|``.

    The taut-string bounds ``vmin <= x <= vmax`` of the current segment are extended one
    sample at a time; ``umin``/``umax`` track the dual variable at the current sample for the
    lower and upper candidate values, and a segment is written out when one of them leaves
    ``[-lam, lam]`` (L. Condat, "A direct algorithm for 1-D total variation denoising", IEEE
    Signal Processing Letters, 2013).
    """
    n = y.shape[0]
    if n == 0:
        return
    if lam <= 0.0 or n == 1:
        for i in range(n):
            out[i] = y[i]
        return
    k = 0
    k0 = 0
    kplus = 0
    kminus = 0
    umin = lam
    umax = -lam
    vmin = y[0] - lam
    vmax = y[0] + lam
    while True:
        while k == n - 1:
            if umin < 0.0:
                k0 = _write_segment(out, k0, kminus, vmin)
                k = k0
                kminus = k0
                vmin = y[k0]
                umin = lam
                umax = vmin + umin - vmax
            elif umax > 0.0:
                k0 = _write_segment(out, k0, kplus, vmax)
                k = k0
                kplus = k0
                vmax = y[k0]
                umax = -lam
                umin = vmax + umax - vmin
            else:
                vmin += umin / (k - k0 + 1)
                k0 = _write_segment(out, k0, k, vmin)
                return
        umin += y[k + 1] - vmin
        if umin < -lam:
            k0 = _write_segment(out, k0, kminus, vmin)
            k = k0
            kminus = k0
            kplus = k0
            vmin = y[k0]
            vmax = vmin + 2.0 * lam
            umin = lam
            umax = -lam
            continue
        umax += y[k + 1] - vmax
        if umax > lam:
            k0 = _write_segment(out, k0, kplus, vmax)
            k = k0
            kminus = k0
            kplus = k0
            vmax = y[k0]
            vmin = vmax - 2.0 * lam
            umin = lam
            umax = -lam
            continue
        k += 1
        if umin >= lam:
            kminus = k
            vmin += (umin - lam) / (k - k0 + 1)
            umin = lam
        if umax <= -lam:
            kplus = k
            vmax += (umax + lam) / (k - k0 + 1)
            umax = -lam



@njit(cache=True)
def fsgl_row_prox(v, lam_l1, lam_group, lam_fused, out):  # pragma: no cover - compiled
    """``out = prox`` of ``lam_l1 ||w||_1 + lam_group ||w||_2 + lam_fused sum_t |w_t -
    w_{t+1}|`` at the row ``v`` (:func:`~multitask.penalties.temporal.
    prox_fused_sparse_group_lasso` on one row; the total-variation step on ``v`` divided by
    its largest magnitude, as :func:`~multitask.penalties.temporal.prox_tv1d`)."""
    m = v.shape[0]
    scale = 0.0
    for t in range(m):
        scale = max(scale, abs(v[t]))
    if scale == 0.0:
        for t in range(m):
            out[t] = 0.0
        return
    if lam_fused > 0.0:
        y = np.empty(m)
        for t in range(m):
            y[t] = v[t] / scale
        tv1d_row(y, lam_fused / scale, out)
        for t in range(m):
            out[t] *= scale
    else:
        for t in range(m):
            out[t] = v[t]
    elastic_net_row_prox(out, 1.0, lam_l1, lam_group, 0.0, out)  # soft, then group shrink


@njit(cache=True)
def _l2_cap_scale(xs, a, c):  # pragma: no cover - compiled
    """``(k, t)`` for ``xs`` (non-negative, sorted in decreasing order, some entry ``> 0``)
    with ``(#{xs > 0}) c^2 > a^2``: the ``t > 0`` solving ``sum_i min(t xs_i, c)^2 = a^2``
    and the number ``k`` of entries it caps (``t xs_i >= c`` for ``i < k``)."""
    m = xs.shape[0]
    rest = 0.0
    for i in range(m):
        rest += xs[i] * xs[i]
    t = 0.0
    for k in range(m):
        room = a * a - k * c * c
        if rest <= 0.0 or room <= 0.0:
            # rounding at the last breakpoint: the k capped entries already fill the ball
            return k, c / xs[k - 1] if k > 0 else 0.0
        t = np.sqrt(room / rest)
        if t * xs[k] <= c:
            return k, t
        rest -= xs[k] * xs[k]
    return m, t


#: Passes of the piece search (:func:`_weighted_l1_cap_level`) before it sorts the breakpoints.
_LEVEL_PASSES = 64


@njit(cache=True)
def _l1_cap_level(v, a, c, inside):  # pragma: no cover - compiled
    """The level ``tau > 0`` with ``g(tau) = sum_i clip(|v_i| - tau, 0, c) - a = 0``, where
    ``g(0) = inside - a > 0`` and ``c > 0``: :func:`_weighted_l1_cap_level` with unit
    curvatures (its search over the linear pieces between the breakpoints ``|v_i| - c`` and
    ``|v_i|``, ``O(m)`` per pass, sorting after :data:`_LEVEL_PASSES` passes), from 0."""
    return _weighted_l1_cap_level(v, np.ones(v.shape[0]), a, c, inside, 0.0)


@njit(cache=True)
def _scan_breakpoints(pos, step, n, f, slope, a):  # pragma: no cover - compiled
    """The ``t >= 0`` where ``f(t)``, decreasing piecewise linearly from ``f(0) = f > a``
    with slope ``-slope`` until the first breakpoint, reaches ``a``; at breakpoint
    ``pos[e]`` (of the first ``n``, in any order) the slope's magnitude changes by
    ``step[e]``. The breakpoints are sorted and scanned."""
    order = np.argsort(pos[:n])
    prev = 0.0
    t = pos[order[n - 1]]  # (reached only through rounding: f vanishes there)
    for e in range(n):
        p = pos[order[e]]
        fp = f - slope * (p - prev)
        if fp <= a:
            t = prev + (f - a) / slope
            break
        f = fp
        prev = p
        slope += step[order[e]]
    return t


@njit(cache=True)
def dirty_project_row(v, a, c, group_inf, out):  # pragma: no cover - compiled
    """``out = argmin_{u in B} ||u - v||_2`` (module docstring, the dirty norm), ``B`` the
    intersection of the ``s*`` ball of radius ``a`` (``group_inf``: ``s = inf``, ``s* = 1``;
    else ``s* = 2``) and the ``l_inf`` ball of radius ``c``."""
    m = v.shape[0]
    if a <= 0.0 or c <= 0.0:
        for i in range(m):
            out[i] = 0.0
        return
    inside = 0.0
    for i in range(m):
        x = min(abs(v[i]), c)
        inside += x if group_inf else x * x
    if inside <= (a if group_inf else a * a):  # the box projection is in the first ball
        for i in range(m):
            out[i] = min(max(v[i], -c), c)
        return
    if group_inf:
        tau = _l1_cap_level(v, a, c, inside)
        for i in range(m):
            x = min(max(abs(v[i]) - tau, 0.0), c)
            out[i] = x if v[i] >= 0.0 else -x
        return
    xs = np.sort(np.abs(v))[::-1]
    _, t = _l2_cap_scale(xs, a, c)
    for i in range(m):
        x = min(t * abs(v[i]), c)
        out[i] = x if v[i] >= 0.0 else -x


@njit(cache=True)
def _weighted_l1_cap_level(z, h, a, c, inside, guess):  # pragma: no cover - compiled
    """The ``lam > 0`` with ``g(lam) = sum_{h_i > 0} clip(|z_i| - lam h_i, 0, c) - a = 0``,
    where ``g(0) = inside - a > 0`` and ``c > 0``: the weighted twin of :func:`_l1_cap_level`.

    ``g`` decreases piecewise linearly between the breakpoints ``(|z_i| - c) / h_i`` and
    ``|z_i| / h_i``. A pass at ``t`` classifies every entry for the piece ``[left, right]``
    that holds ``t`` (zero: ``|z_i| <= t h_i``; capped: ``|z_i| - c > t h_i``, contributing
    ``c``; active otherwise, contributing ``|z_i| - lam h_i``), which gives ``g`` on that piece
    exactly, ``g(lam) = K + S - lam T - a``, and its root ``(K + S - a) / T``: returned where
    it lies in the piece; else the next pass is at it (Newton's step on the piecewise linear
    ``g``) or, where it leaves the bracket of the root, at the bracket's midpoint. The first
    pass is at ``guess`` where it lies inside the bracket (a previous root: block coordinate
    descent's last one for the row), else at 0. Each pass is ``O(m)``; after
    :data:`_LEVEL_PASSES` passes the breakpoints are sorted and scanned instead."""
    m = z.shape[0]
    lo = 0.0
    hi = 0.0
    for i in range(m):
        if h[i] > 0.0:
            hi = max(hi, abs(z[i]) / h[i])
    t = guess if lo < guess < hi else 0.0
    for _ in range(_LEVEL_PASSES):
        K = 0.0
        S = 0.0
        T = 0.0
        left = lo
        right = hi
        for i in range(m):
            hi_ = h[i]
            if hi_ <= 0.0:
                continue
            x = abs(z[i])
            if x <= t * hi_:
                left = max(left, x / hi_)
            elif x - c > t * hi_:
                K += c
                right = min(right, (x - c) / hi_)
            else:
                S += x
                T += hi_
                left = max(left, (x - c) / hi_)
                right = min(right, x / hi_)
        if T > 0.0:
            root = (K + S - a) / T
            slack = 1e-13 * max(right, 1e-300)
            if left - slack <= root <= right + slack:
                return min(max(root, left), right)
            if root > right:
                lo = right
            else:
                hi = left
        elif K - a > 0.0:  # g is the constant K - a on the piece
            root = np.inf
            lo = right
        elif K - a < 0.0:
            root = np.inf
            hi = left
        else:
            return left  # g vanishes on the whole piece
        if not lo < hi:
            return lo
        t = root if lo < root < hi else 0.5 * (lo + hi)
    return _weighted_l1_cap_level_sorted(z, h, a, c, inside)


@njit(cache=True)
def _weighted_l1_cap_level_sorted(z, h, a, c, inside):  # pragma: no cover - compiled
    """:func:`_weighted_l1_cap_level` by sorting the ``2 m`` breakpoints and scanning them."""
    m = z.shape[0]
    # f(lam) = sum_i clip(x_i - lam h_i, 0, c): slope changes by -h_i at (x_i - c) / h_i
    # (the entry leaves the cap) and by +h_i at x_i / h_i (it reaches 0)
    pos = np.empty(2 * m)
    step = np.empty(2 * m)
    n = 0
    slope = 0.0
    for i in range(m):
        if h[i] <= 0.0:
            continue
        x = abs(z[i])
        if x > c:
            pos[n] = (x - c) / h[i]
            step[n] = h[i]
            n += 1
        elif x > 0.0:
            slope += h[i]
        if x > 0.0:
            pos[n] = x / h[i]
            step[n] = -h[i]
            n += 1
    return _scan_breakpoints(pos, step, n, inside, slope, a)


#: Newton passes of :func:`_weighted_l2_cap_level` before it bisects to the end instead.
_L2_NEWTON_PASSES = 60


@njit(cache=True)
def _weighted_l2_cap_level(z, h, a, c, guess):  # pragma: no cover - compiled
    """The ``lam > 0`` with ``g(lam) = sum_{h_i > 0} min(|z_i| / (1 + lam h_i), c)^2 - a^2 =
    0`` (``g(0) > 0``, ``c > 0``), to a relative ``1e-15``, on its feasible side (``g <= 0``
    up to rounding).

    ``g`` decreases, convex between the points where an entry leaves the cap. Newton's steps
    from ``guess`` (where it lies in the bracket ``(0, sqrt(sum (z_i / h_i)^2) / a]`` of the
    root, else from 0), each ``O(m)``, inside the bracket that every pass narrows (a step
    that leaves it goes to the bracket's midpoint), until a step moves ``lam`` by at most a
    relative ``1e-15`` or the bracket is that narrow; after :data:`_L2_NEWTON_PASSES` passes
    the bracket is bisected to the end."""
    m = z.shape[0]
    lo = 0.0
    hi = 0.0
    for i in range(m):
        if h[i] > 0.0:
            hi += (z[i] / h[i]) ** 2
    hi = np.sqrt(hi) / a
    a2 = a * a
    t = guess if lo < guess < hi else 0.0
    for _ in range(_L2_NEWTON_PASSES):
        g = -a2
        dg = 0.0
        for i in range(m):
            if h[i] <= 0.0:
                continue
            q = 1.0 / (1.0 + t * h[i])
            x = abs(z[i]) * q
            if x < c:
                g += x * x
                dg -= 2.0 * x * x * h[i] * q
            else:
                g += c * c
        if g > 0.0:
            lo = t
        else:
            hi = t
            if g == 0.0:
                return t
        if hi - lo <= 1e-15 * hi:
            return hi
        nxt = t - g / dg if dg < 0.0 else -1.0
        if not lo < nxt < hi:
            nxt = 0.5 * (lo + hi)
        if abs(nxt - t) <= 1e-15 * nxt:
            return t if g <= 0.0 else nxt
        t = nxt
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        tot = 0.0
        for i in range(m):
            if h[i] > 0.0:
                x = min(abs(z[i]) / (1.0 + mid * h[i]), c)
                tot += x * x
        if tot > a2:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * hi:
            break
    return hi


@njit(cache=True)
def dirty_weighted_row_min(z, h, a, c, group_inf, out, guess=0.0):  # pragma: no cover
    """``out = argmin_w sum_t (h_t / 2) (w_t - z_t / h_t)^2 + N(w)``: the exact minimizer of
    a separable quadratic with curvatures ``h_t >= 0`` plus the dirty norm (strengths ``a``,
    ``c``). By duality ``w_t = (z_t - u_t) / h_t`` with ``u`` the projection of ``z`` onto
    ``B`` in the metric ``diag(1 / h)``: ``u_t = sign(z_t) clip(|z_t| - lam h_t, 0, c)``
    (``s* = 1``, :func:`_weighted_l1_cap_level`) or ``u_t = clip(z_t / (1 + lam h_t), -c, c)``
    (``s* = 2``, :func:`_weighted_l2_cap_level`) with ``lam >= 0`` the smallest that makes
    ``u`` feasible, searched from ``guess`` (a previous ``lam`` of the row). An entry with
    ``h_t = 0`` is 0. Returns ``lam``."""
    m = z.shape[0]
    if a <= 0.0 or c <= 0.0:
        for i in range(m):
            out[i] = z[i] / h[i] if h[i] > 0.0 else 0.0
        return 0.0
    inside = 0.0
    for i in range(m):
        if h[i] > 0.0:
            x = min(abs(z[i]), c)
            inside += x if group_inf else x * x
    lam = 0.0
    if inside > (a if group_inf else a * a):
        if group_inf:
            lam = _weighted_l1_cap_level(z, h, a, c, inside, guess)
        else:
            lam = _weighted_l2_cap_level(z, h, a, c, guess)
    for i in range(m):
        if h[i] <= 0.0:
            out[i] = 0.0
            continue
        if group_inf:
            x = min(max(abs(z[i]) - lam * h[i], 0.0), c)
        else:
            x = min(abs(z[i]) / (1.0 + lam * h[i]), c)
        u = x if z[i] >= 0.0 else -x
        out[i] = (z[i] - u) / h[i]
    return lam


@njit(cache=True)
def dirty_row_value(w, a, c, group_inf):  # pragma: no cover - compiled
    """``N(w)`` (module docstring, the dirty norm): ``group_inf`` for ``s = inf`` (``s* = 1``), else
    ``s = 2``."""
    m = w.shape[0]
    if a <= 0.0 or c <= 0.0 or m == 0:
        return 0.0
    xs = np.sort(np.abs(w))[::-1]
    if group_inf:
        k = int(np.floor(a / c))
        if k >= m:
            return c * np.sum(xs)
        return c * np.sum(xs[:k]) + (a - k * c) * xs[k]
    nonzero = 0
    for i in range(m):
        if xs[i] > 0.0:
            nonzero += 1
    if nonzero * c * c <= a * a:
        return c * np.sum(xs)
    k, t = _l2_cap_scale(xs, a, c)
    return c * np.sum(xs[:k]) + t * np.sum(xs[k:] * xs[k:])


@njit(cache=True)
def dirty_split_threshold(w, a, c, group_inf):  # pragma: no cover - compiled
    """``tau`` with ``p = sign(w) min(|w|, tau)`` the group part of an optimal split of
    ``w`` (module docstring, the dirty norm): ``inf`` when ``a = 0`` (the group part is
    free), ``0`` when ``c = 0`` or the split puts everything in the sparse part."""
    m = w.shape[0]
    if c <= 0.0:
        return 0.0
    if a <= 0.0:
        return np.inf
    if m == 0:
        return 0.0
    xs = np.sort(np.abs(w))[::-1]
    if group_inf:
        k = int(np.floor(a / c))
        return xs[k] if k < m else 0.0
    nonzero = 0
    for i in range(m):
        if xs[i] > 0.0:
            nonzero += 1
    if nonzero * c * c <= a * a:
        return 0.0
    _, t = _l2_cap_scale(xs, a, c)
    return c / t


@njit(cache=True)
def dirty_prox_rows(V, a, c, group_inf):  # pragma: no cover - compiled
    """``V - P_B(V)`` row by row (the prox of the dirty norm with strengths ``a``, ``c``
    already multiplied by the step; Moreau's decomposition)."""
    d, m = V.shape
    out = np.empty((d, m))
    row = np.empty(m)
    proj = np.empty(m)
    for j in range(d):
        for t in range(m):
            row[t] = V[j, t]
        dirty_project_row(row, a, c, group_inf, proj)
        for t in range(m):
            out[j, t] = V[j, t] - proj[t]
    return out


@njit(cache=True)
def _dirty_per_row(W, a, c, group_inf, split):  # pragma: no cover - compiled
    """:func:`dirty_split_threshold` (``split``) or :func:`dirty_row_value` of every row,
    shape ``(d,)``."""
    d = W.shape[0]
    out = np.empty(d)
    for j in range(d):
        row = np.ascontiguousarray(W[j])
        if split:
            out[j] = dirty_split_threshold(row, a, c, group_inf)
        else:
            out[j] = dirty_row_value(row, a, c, group_inf)
    return out


@njit(cache=True)
def dirty_values_rows(W, a, c, group_inf):  # pragma: no cover - compiled
    """``N(W_j.)`` for every row ``j``, shape ``(d,)``."""
    return _dirty_per_row(W, a, c, group_inf, False)


@njit(cache=True)
def dirty_split_rows(W, a, c, group_inf):  # pragma: no cover - compiled
    """The thresholds :func:`dirty_split_threshold` of every row, shape ``(d,)``."""
    return _dirty_per_row(W, a, c, group_inf, True)


@njit(cache=True)
def elastic_net_row_prox(v, step, a, b, c, out):  # pragma: no cover - compiled
    """``out = prox`` of ``step (a ||w||_1 + b ||w||_2 + (c / 2) ||w||^2)`` at ``v``:
    ``group_soft(soft(v / (1 + step c), step a / (1 + step c)), step b / (1 + step c))``."""
    m = v.shape[0]
    den = 1.0 + step * c
    ta = step * a / den
    tb = step * b / den
    nrm = 0.0
    for t in range(m):
        u = v[t] / den
        if u > ta:
            u -= ta
        elif u < -ta:
            u += ta
        else:
            u = 0.0
        out[t] = u
        nrm += u * u
    nrm = np.sqrt(nrm)
    scale = 1.0 - tb / nrm if nrm > tb else 0.0
    for t in range(m):
        out[t] *= scale


@njit(cache=True)
def row_prox(family, v, step, a, b, c, out):  # pragma: no cover - compiled
    """``out = prox_{step r}(v)`` for the row operator ``r`` of ``family`` (module
    docstring) with strengths ``(a, b, c)``."""
    if family == 0:
        elastic_net_row_prox(v, step, a, b, c, out)
    elif family == 1:
        fsgl_row_prox(v, step * a, step * b, step * c, out)
    else:  # the dirty norm: v minus the projection onto the scaled dual ball
        dirty_project_row(v, step * a, step * b, family == 2, out)
        for t in range(v.shape[0]):
            out[t] = v[t] - out[t]


@njit(cache=True)
def row_penalty(family, w, a, b, c):  # pragma: no cover - compiled
    """``r(w)``: the row operator of ``family`` with strengths ``(a, b, c)`` at the row
    ``w``."""
    m = w.shape[0]
    if family >= 2:
        return dirty_row_value(w, a, b, family == 2)
    l1 = 0.0
    sq = 0.0
    fused = 0.0
    for t in range(m):
        l1 += abs(w[t])
        sq += w[t] * w[t]
        if t + 1 < m:
            fused += abs(w[t + 1] - w[t])
    if family == 0:
        return a * l1 + b * np.sqrt(sq) + 0.5 * c * sq
    return a * l1 + b * np.sqrt(sq) + c * fused
