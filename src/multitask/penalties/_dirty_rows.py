"""Row operators of the dirty norm (numba): projections onto the intersection of two balls,
its support function and the split of a row into its two parts.

For a row ``w`` (length ``m``), strengths ``a = alpha_group > 0`` and ``c = alpha_l1 > 0``
and ``s in {inf, 2}`` (``s*`` its dual exponent, 1 or 2), the dirty norm of the row is the
infimal convolution

    N(w) = min_{p + q = w} a ||p||_s + c ||q||_1 = max_{u in B} <u, w>,
    B = {u : ||u||_{s*} <= a} cap {u : ||u||_inf <= c}

(the conjugate of an infimal convolution of two norms is the sum of the indicators of their
dual balls). Everything below is exact, by sorting ``|w|`` (``O(m log m)`` per row):

* :func:`project_row` (the projection onto ``B``): ``u_i = sign(v_i) clip(|v_i| - tau, 0,
  c)`` (``s* = 1``) or ``u_i = sign(v_i) min(t |v_i|, c)`` (``s* = 2``, ``t = 1 / (1 + mu)``)
  with the Lagrange multiplier of the first ball (``tau >= 0`` smallest, ``t <= 1`` largest)
  that makes ``u`` feasible: on each interval between consecutive breakpoints of ``|v|``
  the constraint is a linear (``s* = 1``) or quadratic (``s* = 2``) equation in it;
* :func:`row_value` (``N(w)``, the support function of ``B``): ``s* = 1``: a fractional
  knapsack, ``c`` on the ``k = floor(a / c)`` largest ``|w_i|`` and ``a - k c`` on the next;
  ``s* = 2``: ``u_i = min(beta |w_i|, c)`` with ``beta`` the largest scale inside the
  Euclidean ball, ``N = c (sum of the capped |w_i|) + beta (sum of the other w_i^2)``;
* :func:`split_threshold` (the group part of an optimal split): ``p = sign(w) min(|w|,
  tau)``, ``q = w - p``, with ``tau`` the ``(k + 1)``-th largest ``|w_i|`` (``s = inf``; then
  ``a tau + c sum (|w_i| - tau)_+ = N(w)``) or ``tau = c / beta`` (``s = 2``: the optimality
  conditions ``u in a d||p||_2 cap c d||q||_1`` give ``p = u / beta``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["project_row", "row_value", "split_threshold"]


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


@njit(cache=True)
def project_row(v, a, c, group_inf, out):  # pragma: no cover - compiled
    """``out = argmin_{u in B} ||u - v||_2`` (module docstring), ``B`` the intersection of
    the ``s*`` ball of radius ``a`` (``group_inf``: ``s = inf``, ``s* = 1``; else ``s* = 2``)
    and the ``l_inf`` ball of radius ``c``."""
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
        # f(tau) = sum_i clip(x_i - tau, 0, c) decreases piecewise linearly from f(0) > a;
        # its slope changes by -1 at x_i - c (the entry leaves the cap) and +1 at x_i
        pos = np.empty(2 * m)
        step = np.empty(2 * m)
        n = 0
        active = 0
        for i in range(m):
            x = abs(v[i])
            if x > c:
                pos[n] = x - c
                step[n] = 1.0
                n += 1
            elif x > 0.0:
                active += 1
            if x > 0.0:
                pos[n] = x
                step[n] = -1.0
                n += 1
        order = np.argsort(pos[:n])
        f = inside
        prev = 0.0
        tau = pos[order[n - 1]]  # (reached only through rounding: f vanishes there)
        for e in range(n):
            p = pos[order[e]]
            fp = f - active * (p - prev)
            if fp <= a:
                tau = prev + (f - a) / active
                break
            f = fp
            prev = p
            active += int(step[order[e]])
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
def row_value(w, a, c, group_inf):  # pragma: no cover - compiled
    """``N(w)`` (module docstring): ``group_inf`` for ``s = inf`` (``s* = 1``), else
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
def split_threshold(w, a, c, group_inf):  # pragma: no cover - compiled
    """``tau`` with ``p = sign(w) min(|w|, tau)`` the group part of an optimal split of
    ``w`` (module docstring): ``inf`` when ``a = 0`` (the group part is free), ``0`` when
    ``c = 0`` or the split puts everything in the sparse part."""
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
def prox_rows(V, a, c, group_inf):  # pragma: no cover - compiled
    """``V - P_B(V)`` row by row (the prox of the dirty norm with strengths ``a``, ``c``
    already multiplied by the step; Moreau's decomposition)."""
    d, m = V.shape
    out = np.empty((d, m))
    row = np.empty(m)
    proj = np.empty(m)
    for j in range(d):
        for t in range(m):
            row[t] = V[j, t]
        project_row(row, a, c, group_inf, proj)
        for t in range(m):
            out[j, t] = V[j, t] - proj[t]
    return out


@njit(cache=True)
def values_rows(W, a, c, group_inf):  # pragma: no cover - compiled
    """``N(W_j.)`` for every row ``j``, shape ``(d,)``."""
    d = W.shape[0]
    out = np.empty(d)
    for j in range(d):
        out[j] = row_value(np.ascontiguousarray(W[j]), a, c, group_inf)
    return out


@njit(cache=True)
def split_rows(W, a, c, group_inf):  # pragma: no cover - compiled
    """The thresholds :func:`split_threshold` of every row, shape ``(d,)``."""
    d = W.shape[0]
    out = np.empty(d)
    for j in range(d):
        out[j] = split_threshold(np.ascontiguousarray(W[j]), a, c, group_inf)
    return out
