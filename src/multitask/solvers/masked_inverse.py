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
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

__all__ = ["inverse_psd", "masked_inverses", "pseudo_inverse_psd"]


def inverse_psd(A: np.ndarray) -> np.ndarray:
    """``A^{-1}`` of a symmetric positive semi-definite block (Cholesky), or its
    pseudo-inverse (:func:`pseudo_inverse_psd`) where it is singular (a feature without
    curvature in the block)."""
    try:
        L = scipy.linalg.cho_factor(A, lower=True, check_finite=False)
        return scipy.linalg.cho_solve(L, np.eye(A.shape[0]), check_finite=False)
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
        return pseudo_inverse_psd(A)


def pseudo_inverse_psd(A: np.ndarray) -> np.ndarray:
    """``sum_{lambda_i > 1e-12 lambda_max} q_i q_i^T / lambda_i`` over the eigenpairs
    ``(lambda_i, q_i)`` of a symmetric positive semi-definite ``A``: its pseudo-inverse, the
    eigenvalues at the rounding of zero left out."""
    lam, Q = np.linalg.eigh(A)
    top = float(lam[-1]) if lam.size else 0.0
    keep = lam > 1e-12 * max(top, np.finfo(float).tiny)
    return (Q[:, keep] / lam[keep]) @ Q[:, keep].T


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
    A = np.asarray(A, dtype=np.float64)
    mask = np.asarray(mask, dtype=bool)
    if A.ndim != 3 or A.shape[1] != A.shape[2] or mask.shape != A.shape[:2]:
        raise ValueError(f"masked_inverses needs blocks of shape (n, d, d) and a mask of shape "
                         f"(n, d), got {A.shape} and {mask.shape}.")
    both = mask[:, :, None] & mask[:, None, :]
    B = np.where(both, A, 0.0)
    diagonal = np.arange(A.shape[1])
    B[:, diagonal, diagonal] += ~mask
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
                support = np.flatnonzero(mask[k])
                out[k][np.ix_(support, support)] = inverse_psd(A[k][np.ix_(support, support)])
    out *= both
    return out
