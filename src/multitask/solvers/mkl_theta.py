"""The lp-norm MKL weight step (theta step) and the objective values of multi-task MKL.

Notation (Widmer, Kloft, Sreedharan & Rätsch, arXiv:1506.09153, Algorithm 1): ``M`` task
kernels ``B_m`` of shape ``(T, T)``, weights ``theta`` in the lp ball
``{theta >= 0, ||theta||_p <= 1}``, ``p >= 1``. For dual variables ``alpha`` (``n,``), the
unmixed per-task sums ``V[:, t] = sum_{i in task t} alpha_i y_i phi(x_i)`` (shape ``(d, T)``)
and ``q_m = <B_m, V^T V>_F = (alpha y)^T (B_m[tau, tau] o K) (alpha y)``. The representer
weights are ``W_m = theta_m V B_m`` and ``||W_m||^2_{Q_m} = theta_m^2 q_m``.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "dual_norm",
    "initial_theta",
    "mkl_dual_regularizer",
    "mkl_primal_regularizer",
    "theta_step",
]


def initial_theta(n_kernels: int, p: float) -> np.ndarray:
    """Uniform start on the lp sphere: ``theta_m = M^{-1/p}`` (``1`` for ``p = inf``).

    Parameters
    ----------
    n_kernels : int
        ``M``.
    p : float >= 1 or ``inf``

    Returns
    -------
    ndarray of shape (M,)
    """
    M = int(n_kernels)
    if np.isinf(p):
        return np.ones(M)
    return np.full(M, float(M) ** (-1.0 / float(p)))


def theta_step(a: np.ndarray, p: float, *, floor: float = 0.0) -> np.ndarray:
    """Closed-form theta step: ``argmin_{theta >= 0, ||theta||_p <= 1} sum_m a_m / theta_m``.

    With ``a_m = ||W_m||^2_{Q_m} >= 0`` (the paper's eq. 22):

        theta_m = a_m^{1/(p+1)} / (sum_k a_k^{p/(p+1)})^{1/p}.

    For ``p = 1`` this is ``sqrt(a_m) / sum_k sqrt(a_k)``; for ``p = inf`` all weights are 1.
    The minimum value is ``sum_m a_m / theta_m = ||a||_{p/(p+1)}``.

    Parameters
    ----------
    a : ndarray of shape (M,)
        Non-negative block norms ``a_m``.
    p : float >= 1 or ``inf``
    floor : float
        Weights below ``floor * max(theta)`` are raised to it and the vector is rescaled to
        ``||theta||_p = 1`` (guards against a weight stuck at zero by underflow; ``0`` keeps the
        exact closed form, which the default does).

    Returns
    -------
    ndarray of shape (M,)
        ``theta`` with ``||theta||_p = 1``; if all ``a_m = 0`` the uniform start
        :func:`initial_theta`.
    """
    a = np.maximum(np.asarray(a, dtype=np.float64), 0.0)
    M = a.shape[0]
    if np.isinf(p):
        return np.ones(M)
    p = float(p)
    if not np.any(a > 0):
        return initial_theta(M, p)
    # work with a / max(a) for range safety; the result is scale invariant
    s = a / a.max()
    num = s ** (1.0 / (p + 1.0))
    den = np.sum(s ** (p / (p + 1.0))) ** (1.0 / p)
    theta = num / den
    if floor > 0:
        theta = np.maximum(theta, floor * theta.max())
        theta = theta / np.sum(theta**p) ** (1.0 / p)
    return theta


def dual_norm(q: np.ndarray, p: float) -> float:
    """``||q||_{p*}`` with ``p* = p / (p - 1)`` (``max`` for ``p = 1``, ``sum`` for ``p = inf``).

    ``sup_{theta in lp ball} <theta, q> = ||q||_{p*}`` for ``q >= 0``.
    """
    q = np.maximum(np.asarray(q, dtype=np.float64), 0.0)
    if p == 1.0:
        return float(q.max())
    if np.isinf(p):
        return float(q.sum())
    ps = p / (p - 1.0)
    m = q.max()
    if m == 0:
        return 0.0
    return float(m * np.sum((q / m) ** ps) ** (1.0 / ps))


def mkl_primal_regularizer(theta: np.ndarray, q: np.ndarray) -> float:
    """``R_theta(W) = (1/2) sum_m ||W_m||^2_{Q_m} / theta_m = (1/2) sum_m theta_m q_m``.

    Valid for the representer weights ``W_m = theta_m V B_m`` (terms with ``theta_m = 0``
    vanish).
    """
    return 0.5 * float(np.dot(theta, q))


def mkl_dual_regularizer(q: np.ndarray, p: float) -> float:
    """``(1/2) ||q||_{p*}``, the regularizer of the fully dualized problem (Problem 3)."""
    return 0.5 * dual_norm(q, p)
