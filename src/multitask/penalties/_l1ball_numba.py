"""Numba kernel: Euclidean projection onto the l1 ball in expected linear time."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def l1ball_threshold(a, radius, seed):
    """Threshold ``theta >= 0`` with ``sum(max(|a| - theta, 0)) = radius``.

    Randomized pivot selection on ``|a|`` (expected O(n)); assumes ``sum |a| > radius``.
    """
    u = np.abs(a).copy()
    n = u.shape[0]
    np.random.seed(seed)  # noqa: NPY002 (numba's per-thread generator inside njit)
    lo = 0
    hi = n  # active candidates are u[lo:hi]
    s_acc = 0.0  # sum of elements known to be above theta
    c_acc = 0  # their count
    while lo < hi:
        k = lo + np.random.randint(hi - lo)  # noqa: NPY002
        pivot = u[k]
        # partition u[lo:hi] into >= pivot (front) and < pivot (back)
        i = lo
        j = hi - 1
        s_big = 0.0
        d_big = 0.0  # sum of (u - pivot) over the front: exactly 0 for ties with the pivot
        while i <= j:
            if u[i] >= pivot:
                s_big += u[i]
                d_big += u[i] - pivot
                i += 1
            else:
                tmp = u[i]
                u[i] = u[j]
                u[j] = tmp
                j -= 1
        c_big = i - lo
        # sum(max(u - pivot, 0)) < radius; written so that the largest value (c_acc == 0) gives
        # exactly 0 < radius: rounding in sum(u) - count * pivot could drop every element
        if (s_acc - c_acc * pivot) + d_big < radius:
            # theta < pivot: all of the front part is above theta
            s_acc += s_big
            c_acc += c_big
            lo = i
        else:
            # theta >= pivot: drop the pivot value(s) and everything below; keep strictly greater
            # elements of the front part (excluding the pivot itself)
            # move elements equal to pivot out of the front
            new_hi = lo
            for q in range(lo, i):
                if u[q] > pivot:
                    tmp = u[new_hi]
                    u[new_hi] = u[q]
                    u[q] = tmp
                    new_hi += 1
            hi = new_hi
    return (s_acc - radius) / c_acc


@njit(cache=True)
def column_l1ball_thresholds(V, radius):  # pragma: no cover - compiled
    """Per-column l1-ball thresholds ``theta_t`` (0 inside the ball, ``inf`` for radius 0).

    One compiled loop over the columns calling :func:`l1ball_threshold` (the threshold of
    :func:`~multitask.penalties.project_l1_ball`); the projection of every column onto its
    ball is ``sign(V) * max(|V| - theta, 0)``.
    """
    d, m = V.shape
    theta = np.zeros(m)
    for t in range(m):
        s = 0.0
        for j in range(d):
            s += abs(V[j, t])
        if s > radius[t]:
            if radius[t] > 0:
                theta[t] = l1ball_threshold(np.ascontiguousarray(V[:, t]), radius[t], 0)
            else:
                theta[t] = np.inf
    return theta
