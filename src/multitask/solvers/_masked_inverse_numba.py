"""Compiled twins of the rank-one support updates of :mod:`multitask.solvers.masked_inverse`.

:func:`drop_feature_kernel` and :func:`add_feature_kernel` make the updates of
:func:`~multitask.solvers.masked_inverse.drop_feature` and
:func:`~multitask.solvers.masked_inverse.add_feature` block by block, in place: no copy of the
selected blocks (the numpy twins gather them, update the copy and scatter it back), ``d^2``
operations per block. The same pivots and tests; the results agree to rounding
(``tests/test_masked_inverse_compiled.py``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["add_feature_kernel", "drop_feature_kernel"]


@njit(cache=True, nogil=True)
def drop_feature_kernel(M, which, k, diag, min_pivot):  # pragma: no cover - compiled
    """:func:`~multitask.solvers.masked_inverse.drop_feature` in place: ``M_i <- M_i -
    M_i[:, k] M_i[k, :] / M_i[k, k]``, row and column ``k`` zero, where the pivot passes
    (``M_i[k, k] > 0`` and ``M_i[k, k] A_i[k, k] min_pivot < 1``). Returns where it did."""
    p = which.shape[0]
    d = M.shape[1]
    ok = np.zeros(p, dtype=np.bool_)
    col = np.empty(d)
    for i in range(p):
        w = which[i]
        kk = k[i]
        piv = M[w, kk, kk]
        if not (piv > 0.0 and piv * diag[i] * min_pivot < 1.0):
            continue
        ok[i] = True
        for a in range(d):
            col[a] = M[w, a, kk]
        for a in range(d):
            f = col[a] / piv
            if f != 0.0:
                for b in range(d):
                    M[w, a, b] -= f * col[b]
        for a in range(d):
            M[w, kk, a] = 0.0
            M[w, a, kk] = 0.0
    return ok


@njit(cache=True, nogil=True)
def add_feature_kernel(M, which, k, cols, mask, min_pivot):  # pragma: no cover - compiled
    """:func:`~multitask.solvers.masked_inverse.add_feature` in place: with ``b = A_i[S, k]``,
    ``v = M_i b`` and ``s = A_i[k, k] - b^T v``, ``M_i <- M_i + v v^T / s``, ``M_i[:, k] =
    M_i[k, :] = -v / s``, ``M_i[k, k] = 1 / s``, where ``A_i[k, k] > 0`` and ``s > min_pivot
    A_i[k, k]``. Returns where it did."""
    p = which.shape[0]
    d = M.shape[1]
    ok = np.zeros(p, dtype=np.bool_)
    v = np.empty(d)
    for i in range(p):
        w = which[i]
        kk = k[i]
        top = cols[i, kk]
        s = top
        for a in range(d):
            acc = 0.0
            for b in range(d):
                if mask[i, b]:
                    acc += M[w, a, b] * cols[i, b]
            v[a] = acc
            if mask[i, a]:
                s -= cols[i, a] * acc
        if not (top > 0.0 and s > min_pivot * top):
            continue
        ok[i] = True
        for a in range(d):
            f = v[a] / s
            if f != 0.0:
                for b in range(d):
                    M[w, a, b] += f * v[b]
        for a in range(d):
            M[w, kk, a] = -v[a] / s
            M[w, a, kk] = -v[a] / s
        M[w, kk, kk] = 1.0 / s
    return ok
