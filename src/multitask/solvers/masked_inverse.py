"""Inverses of symmetric positive semi-definite blocks, one block per matrix of a stack, each
on its own support.

The active-set Newton solver (:mod:`multitask.solvers.active_newton`) preconditions by the
inverses of the tasks' blocks ``A_k`` restricted to the task's support ``S_k`` (the features
of the task's nonzero weights). One support per matrix makes the blocks of different sizes;
:func:`masked_inverses` inverts them all at once through matrices of one size, the block
completed by the identity off its support,

    B_k = P_k A_k P_k + (I - P_k),   P_k = diag(1[j in S_k]),

whose inverse is ``(A_k restricted to S_k)^{-1}`` on ``S_k x S_k``, the identity off it and
zero between (a block-diagonal matrix up to a permutation): multiplied by the mask of ``S_k x
S_k`` it is the block's inverse embedded in zeros.

Where a support changes by a feature, the inverse follows by a rank-one update instead
(:func:`drop_feature`, :func:`add_feature`): the Schur complement of the feature's pivot,
``d^2`` operations per block instead of ``d^3``; in place by compiled kernels
(:mod:`multitask.solvers._masked_inverse_numba`) once numba is set up in the process, by their
numpy twins before (:mod:`multitask.compiled`).
"""

from __future__ import annotations

import time

import numpy as np
import scipy.linalg

from multitask.compiled import charge_interpreted, interpreted_budget
from multitask.solvers._masked_inverse_numba import add_feature_kernel, drop_feature_kernel

__all__ = ["COND_LIMIT", "MIN_PIVOT", "add_feature", "drop_feature", "inverse_psd",
           "inverse_psd_conditioned", "masked_inverses", "masked_inverses_exact",
           "pseudo_inverse_psd"]


def inverse_psd(A: np.ndarray) -> np.ndarray:
    """``A^{-1}`` of a symmetric positive semi-definite block (Cholesky), or its
    pseudo-inverse (:func:`pseudo_inverse_psd`) where it is singular (a feature without
    curvature in the block)."""
    try:
        L = scipy.linalg.cho_factor(A, lower=True, check_finite=False)
        return scipy.linalg.cho_solve(L, np.eye(A.shape[0]), check_finite=False)
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
        return pseudo_inverse_psd(A)


#: Bound on ``max|A^{-1}| max|A|`` below which :func:`inverse_psd_conditioned` keeps the
#: inverse: it lies between ``cond(A) / d^2`` and ``cond(A)``.
COND_LIMIT = 1e8


def inverse_psd_conditioned(A: np.ndarray) -> np.ndarray:
    """``A^{-1}`` of a symmetric positive semi-definite ``A`` (LU) where it is well
    conditioned (``max|A^{-1}| max|A| < COND_LIMIT``), else :func:`pseudo_inverse_psd`: the
    eigenvalues at the rounding of zero left out also where rounding kept the factorization
    from failing."""
    try:
        inv = np.linalg.inv(A)
    except np.linalg.LinAlgError:
        return pseudo_inverse_psd(A)
    if np.all(np.isfinite(inv)) and np.abs(inv).max() * np.abs(A).max() < COND_LIMIT:
        return inv
    return pseudo_inverse_psd(A)


def pseudo_inverse_psd(A: np.ndarray) -> np.ndarray:
    """``sum_{lambda_i > 1e-12 lambda_max} q_i q_i^T / lambda_i`` over the eigenpairs
    ``(lambda_i, q_i)`` of a symmetric positive semi-definite ``A``: its pseudo-inverse, the
    eigenvalues at the rounding of zero left out. A zero row (and column) of ``A`` (a feature
    without curvature) is left out of the eigendecomposition, so that its row and column of
    the result are exactly zero, whatever the rounding of the eigenvectors."""
    A = np.asarray(A, dtype=np.float64)
    live = np.flatnonzero(np.any(A != 0.0, axis=1))
    out = np.zeros_like(A)
    if live.size == 0:
        return out
    lam, Q = np.linalg.eigh(A[np.ix_(live, live)])
    top = float(lam[-1])
    keep = lam > 1e-12 * max(top, np.finfo(float).tiny)
    out[np.ix_(live, live)] = (Q[:, keep] / lam[keep]) @ Q[:, keep].T
    return out


def masked_inverses(A: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The inverses of the blocks ``A[k]`` restricted to the supports ``mask[k]``, embedded in
    zeros: ``out[k][S, S] = inverse_psd(A[k][S, S])`` with ``S = flatnonzero(mask[k])``, zero
    elsewhere (zero for an empty support).

    Parameters
    ----------
    A : ndarray of shape (n, d, d)
        Symmetric matrices, positive semi-definite on their supports (read only there).
    mask : ndarray of bool, shape (n, d)
        The support of each block.

    Returns
    -------
    ndarray of shape (n, d, d)

    Notes
    -----
    All at once from the completed blocks ``B_k`` of the module docstring: one batched
    Cholesky factorization checks that every block is positive definite (the condition under
    which :func:`inverse_psd` takes the exact inverse), one batched inverse of the ``B_k``
    follows. Where a block is singular the batch is taken block by block, and the singular
    ones get :func:`inverse_psd`'s pseudo-inverse of the block itself.
    """
    return masked_inverses_exact(A, mask)[0]


def masked_inverses_exact(A: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`masked_inverses` and, per block, whether its inverse is exact (the block is
    positive definite on its support) rather than a pseudo-inverse: ``(out, exact)``, ``exact``
    of shape ``(n,)``. Only exact inverses may be updated by :func:`drop_feature` and
    :func:`add_feature`."""
    A = np.asarray(A, dtype=np.float64)
    mask = np.asarray(mask, dtype=bool)
    if A.ndim != 3 or A.shape[1] != A.shape[2] or mask.shape != A.shape[:2]:
        raise ValueError(f"masked_inverses needs blocks of shape (n, d, d) and a mask of shape "
                         f"(n, d), got {A.shape} and {mask.shape}.")
    both = mask[:, :, None] & mask[:, None, :]
    B = np.where(both, A, 0.0)
    diagonal = np.arange(A.shape[1])
    B[:, diagonal, diagonal] += ~mask
    exact = np.ones(A.shape[0], dtype=bool)
    try:
        np.linalg.cholesky(B)
        out = np.linalg.inv(B)
    except np.linalg.LinAlgError:  # a singular block: block by block
        out = np.zeros_like(B)
        for k in range(B.shape[0]):
            try:
                np.linalg.cholesky(B[k])
                out[k] = np.linalg.inv(B[k])
            except np.linalg.LinAlgError:
                exact[k] = False
                support = np.flatnonzero(mask[k])
                out[k][np.ix_(support, support)] = inverse_psd(A[k][np.ix_(support, support)])
    out *= both
    return out, exact


def _compiled(M: np.ndarray) -> bool:
    """Whether the rank-one updates run compiled (:mod:`multitask.compiled`: once numba is
    set up in the process, or the interpreted twins have spent its start-up cost; ``M`` a
    C-contiguous float64 stack, updated in place)."""
    return (interpreted_budget() == 0.0 and M.dtype == np.float64
            and M.flags.c_contiguous and M.flags.writeable)


#: Smallest pivot of a rank-one update, relative to the feature's diagonal entry, below which
#: :func:`drop_feature` and :func:`add_feature` decline (the block nearly singular on the new
#: support: its inverse is computed again instead).
MIN_PIVOT = 1e-8


def drop_feature(M: np.ndarray, which: np.ndarray, k: np.ndarray,
                 diag: np.ndarray) -> np.ndarray:
    """Remove feature ``k[i]`` from the support of block ``which[i]``, in place:
    ``M_i <- M_i - M_i[:, k] M_i[k, :] / M_i[k, k]``, then row and column ``k`` zero (the
    inverse of the block on the smaller support, by the Schur complement of the pivot).

    Parameters
    ----------
    M : ndarray of shape (n, d, d)
        Exact inverses embedded in zeros (:func:`masked_inverses_exact`), updated in place.
    which : ndarray of int, shape (p,)
        Distinct blocks.
    k : ndarray of int, shape (p,)
        A feature of each block's support.
    diag : ndarray of shape (p,)
        The blocks' diagonal entries ``A_i[k, k]`` (the scale of the pivot's test).

    Returns
    -------
    ndarray of bool, shape (p,)
        Where the update was made; elsewhere (a pivot ``M_i[k, k] <= 1 / (MIN_PIVOT
        A_i[k, k])`` fails: the remaining block is nearly singular, or rounding) the block is
        left as it was.
    """
    if _compiled(M):
        return drop_feature_kernel(M, np.asarray(which, dtype=np.int64),
                                   np.asarray(k, dtype=np.int64),
                                   np.asarray(diag, dtype=np.float64), MIN_PIVOT)
    started = time.perf_counter()
    ok = _drop_feature_numpy(M, which, k, diag)
    charge_interpreted(time.perf_counter() - started)
    return ok


def _drop_feature_numpy(M: np.ndarray, which: np.ndarray, k: np.ndarray,
                        diag: np.ndarray) -> np.ndarray:
    """:func:`drop_feature` by numpy (the interpreted twin)."""
    p = np.arange(len(which))
    Mw = M[which]
    col = Mw[p, :, k]
    piv = col[p, k]
    ok = (piv > 0) & (piv * diag * MIN_PIVOT < 1.0)
    Mw -= col[:, :, None] * (col / np.where(ok, piv, 1.0)[:, None])[:, None, :]
    Mw[p, k, :] = 0.0
    Mw[p, :, k] = 0.0
    M[which[ok]] = Mw[ok]
    return ok


def add_feature(M: np.ndarray, which: np.ndarray, k: np.ndarray, cols: np.ndarray,
                mask: np.ndarray) -> np.ndarray:
    """Add feature ``k[i]`` to the support ``mask[i]`` of block ``which[i]``, in place: with
    ``b = A_i[S, k]``, ``v = M_i b`` and the pivot ``s = A_i[k, k] - b^T v``,

        M_i <- M_i + v v^T / s,   M_i[:, k] = M_i[k, :] = -v / s,   M_i[k, k] = 1 / s

    (the block inverse of the support ``S + {k}``).

    Parameters
    ----------
    M : ndarray of shape (n, d, d)
        Exact inverses embedded in zeros, updated in place.
    which : ndarray of int, shape (p,)
        Distinct blocks.
    k : ndarray of int, shape (p,)
        A feature off each block's support.
    cols : ndarray of shape (p, d)
        The blocks' columns ``A_i[:, k]`` (all features).
    mask : ndarray of bool, shape (p, d)
        The supports before the update (``k`` off them).

    Returns
    -------
    ndarray of bool, shape (p,)
        Where the update was made; elsewhere (a pivot ``s <= MIN_PIVOT A_i[k, k]``: the block
        nearly singular on the new support) the block is left as it was.
    """
    if _compiled(M):
        return add_feature_kernel(M, np.asarray(which, dtype=np.int64),
                                  np.asarray(k, dtype=np.int64),
                                  np.asarray(cols, dtype=np.float64),
                                  np.asarray(mask, dtype=np.bool_), MIN_PIVOT)
    started = time.perf_counter()
    ok = _add_feature_numpy(M, which, k, cols, mask)
    charge_interpreted(time.perf_counter() - started)
    return ok


def _add_feature_numpy(M: np.ndarray, which: np.ndarray, k: np.ndarray, cols: np.ndarray,
                       mask: np.ndarray) -> np.ndarray:
    """:func:`add_feature` by numpy (the interpreted twin)."""
    p = np.arange(len(which))
    b = np.where(mask, cols, 0.0)
    Mw = M[which]
    v = np.matmul(Mw, b[:, :, None])[:, :, 0]
    top = cols[p, k]
    s = top - np.einsum("ij,ij->i", b, v)
    ok = (top > 0) & (s > MIN_PIVOT * top)
    u = v / np.where(ok, s, 1.0)[:, None]
    Mw += v[:, :, None] * u[:, None, :]
    Mw[p, k, :] = -u
    Mw[p, :, k] = -u
    Mw[p, k, k] = 1.0 / np.where(ok, s, 1.0)
    M[which[ok]] = Mw[ok]
    return ok
