"""The compiled twin of one step of Anderson's extrapolation of ADMM's fixed-point map
(:class:`multitask.solvers.admm_anderson.AndersonADMM`), in two calls so that the safeguard
stays in the interpreted class.

With ``z_k = (V_k, U_k)`` flattened, ``T`` the map and the ring buffers ``out[j] = T(z_j)``,
``res[j] = T(z_j) - z_j`` (``c`` pairs kept, the newest in slot ``i``) and their Gram matrix
``gram[j, l] = <res[j], res[l]>``:

* :func:`anderson_record` stores the newest pair in slot ``i`` and returns ``||res[i]||``;
* :func:`anderson_mix` updates row and column ``i`` of the Gram matrix and returns the type-II
  extrapolation ``sum_j a_j out[j]`` with ``a = G^{-1} 1 / (1^T G^{-1} 1)``, ``G`` the Gram
  matrix plus ``1e-10`` times its trace on the diagonal (a solve by Gaussian elimination with
  partial pivoting).

The interpreted class takes the same updates with numpy (``tests/test_anderson_compiled.py``
checks one against the other).

:func:`anderson_combination` is the extrapolation of a coordinate descent's iterates (the
compiled twin of :func:`multitask.solvers.anderson.anderson_point` on flat iterates).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def anderson_record(out, res, i, v, u, v_in, u_in):  # pragma: no cover - compiled
    """Store ``out[i] = (v, u)`` and ``res[i] = (v - v_in, u - u_in)``; return
    ``||res[i]||``."""
    n = v.shape[0]
    total = 0.0
    for j in range(n):
        out[i, j] = v[j]
        r = v[j] - v_in[j]
        res[i, j] = r
        total += r * r
    for j in range(u.shape[0]):
        out[i, n + j] = u[j]
        r = u[j] - u_in[j]
        res[i, n + j] = r
        total += r * r
    return np.sqrt(total)


@njit(cache=True, nogil=True)
def solve_ones(G):  # pragma: no cover - compiled
    """``(ok, z)`` with ``G z = 1`` by Gaussian elimination with partial pivoting (``G`` is
    overwritten); ``ok`` False where a pivot is zero or not finite."""
    c = G.shape[0]
    z = np.ones(c)
    for k in range(c):
        p = k
        best = abs(G[k, k])
        for r in range(k + 1, c):
            if abs(G[r, k]) > best:
                best = abs(G[r, k])
                p = r
        if not (best > 0.0 and best < np.inf):
            return False, z
        if p != k:
            for col in range(c):
                tmp = G[k, col]
                G[k, col] = G[p, col]
                G[p, col] = tmp
            tmp = z[k]
            z[k] = z[p]
            z[p] = tmp
        for r in range(k + 1, c):
            f = G[r, k] / G[k, k]
            if f != 0.0:
                for col in range(k, c):
                    G[r, col] -= f * G[k, col]
                z[r] -= f * z[k]
    for k in range(c - 1, -1, -1):
        s = z[k]
        for col in range(k + 1, c):
            s -= G[k, col] * z[col]
        z[k] = s / G[k, k]
    return True, z


@njit(cache=True, nogil=True)
def anderson_mix(out, res, gram, i, c):  # pragma: no cover - compiled
    """Update the Gram matrix's row and column ``i`` over the ``c`` kept pairs and return
    ``(status, point)``: status 0 with the extrapolated point, 1 where one pair is kept or the
    Gram matrix has no positive trace (go on from ``T(z_i)``), 2 where the solve fails or its
    weights do not sum to a finite nonzero number (forget the pairs)."""
    row = np.dot(res[:c], res[i])
    for j in range(c):
        gram[i, j] = row[j]
        gram[j, i] = row[j]
    point = np.empty(0)
    if c < 2:
        return 1, point
    G = np.empty((c, c))
    trace = 0.0
    for j in range(c):
        trace += gram[j, j]
        for col in range(c):
            G[j, col] = gram[j, col]
    if not trace > 0.0:
        return 1, point
    for j in range(c):
        G[j, j] += 1e-10 * trace
    ok, z = solve_ones(G)
    if not ok:
        return 2, point
    total = 0.0
    for j in range(c):
        total += z[j]
    if not (np.isfinite(total) and total != 0.0):
        return 2, point
    return 0, np.dot(z / total, out[:c])


@njit(cache=True, nogil=True)
def anderson_combination(hist, out):  # pragma: no cover - compiled
    """Anderson's combination of the iterates ``hist[0..A]`` (rows, flat), into ``out``:
    ``sum_{k >= 1} z_k hist[k]`` with ``sum_k z_k = 1`` whose combined differences
    ``sum_k z_k (hist[k] - hist[k - 1])`` have the least norm (their Gram matrix plus ``1e-10``
    times its trace on the diagonal, solved by :func:`solve_ones`). Returns False, ``out``
    unchanged, where the differences vanish or the system is singular or not finite."""
    A = hist.shape[0] - 1
    n = hist.shape[1]
    G = np.empty((A, A))
    for p in range(A):
        for q in range(p + 1):
            acc = 0.0
            for j in range(n):
                acc += (hist[p + 1, j] - hist[p, j]) * (hist[q + 1, j] - hist[q, j])
            G[p, q] = acc
            G[q, p] = acc
    trace = 0.0
    for p in range(A):
        trace += G[p, p]
    if not trace > 0.0:
        return False
    for p in range(A):
        G[p, p] += 1e-10 * trace
    ok, z = solve_ones(G)
    total = z.sum()
    if not (ok and np.isfinite(total) and total != 0.0):
        return False
    for j in range(n):
        acc = 0.0
        for p in range(A):
            acc += z[p] * hist[p + 1, j]
        out[j] = acc / total
    return True
