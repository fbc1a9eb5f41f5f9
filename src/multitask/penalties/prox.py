"""Elementary proximal operators and projections, as plain functions.

These are the building blocks of the penalty objects; each returns a new array and never
modifies its input.

Spectral operators on wide matrices
-----------------------------------
The trace-norm family maps the singular values of ``V`` (shape ``(d, m)``) through a function
``shrink`` and keeps the singular vectors: ``out = sum_i shrink(s_i) u_i v_i^T``. When
``m >> d`` (many tasks, few features) this equals ``M V`` with the ``d x d`` matrix
``M = U_k diag(shrink(s_k) / s_k) U_k^T`` over the kept directions (``shrink(s_k) > 0``), and
``U``, ``s`` come from a ``d x d`` problem (:func:`spectral_shrink`):

* ``"gram"``: the eigendecomposition of ``V V^T`` (``m d^2 / 2 + O(d^3)`` flops). Squaring
  loses the accuracy of singular values far below the largest one, so it is used only when
  ``shrink`` zeroes every singular value below :data:`GRAM_RTOL` times the largest, even
  raised to that bound (the error of the output is then below ``1e-12`` relative,
  measured); otherwise
* ``"qr"``: the SVD of the ``R`` factor of ``V^T = Q R`` (``2 m d^2`` flops, backward stable,
  ``Q`` never formed);
* ``"svd"``: LAPACK's thin SVD of ``V`` (nearly square matrices whose kept singular values
  are too small for the Gram route).

The Gram route beats the thin SVD from ``m = d / 2`` on, by more the more tasks; the
``R``-factor route beats it only from ``m = 4 d`` (``benchmarks/bench_scale.py``; the figures:
docs/tuning_constants.md). Tall matrices (``d > m``) are handled
through ``V^T``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.linalg
from scipy.linalg.lapack import dsyevd as _dsyevd

from multitask.penalties._l1ball_numba import l1ball_threshold

__all__ = [
    "GRAM_RTOL",
    "WIDE_RATIO",
    "project_l1_ball",
    "safe_svd",
    "soft_threshold",
    "spectral_norm",
    "spectral_shrink",
    "spectral_shrink_matrix",
    "svt",
    "svt_with_values",
    "symmetric_eigh",
    "project_trace_ball",
    "group_soft_threshold",
    "r_factor",
    "trace_ball_shrink",
    "trace_norm",
]

#: ``max(d, m) / min(d, m)`` from which the trace and spectral norms work on the small side
#: (the shrinking operators always try the Gram route first: it was faster at every width).
WIDE_RATIO = 2.0
#: The Gram route is used only when every kept singular value is at least this fraction of
#: the largest (else the ``R``-factor route, exact to rounding).
GRAM_RTOL = 1e-4
#: Width ratio from which the ``R``-factor route beats the thin SVD (measured, one core).
QR_RATIO = 4.0
#: Entries of largest magnitude outside ``[2**-SAFE_EXPONENT, 2**SAFE_EXPONENT]`` (about
#: ``1e-90`` to ``1e90``) are first rescaled by a power of two (exact): the Gram route squares
#: the entries and the l1-ball threshold sums them, which overflow (or lose every digit to
#: underflow) far inside the ``[1e-100, 1e100]`` range of data the estimators accept, whose
#: gradients reach ``1e200``. Inside the band nothing is rescaled (bitwise the same results).
SAFE_EXPONENT = 300


def _rescaling(V: np.ndarray, what: str) -> float:
    """``2**-k`` with ``2**k`` near ``max |V|`` when that is outside the safe band, else ``1.0``.

    Multiplying by a power of two is exact (no rounding), so ``f(V) = f(V c) / c`` holds to the
    last bit for the positively homogeneous operations here.

    Raises
    ------
    ValueError
        When ``V`` holds NaN or infinity (``what`` names the routine).
    """
    # max |V| without the array of absolute values (NaN propagates through max and min)
    top = max(float(V.max()), -float(V.min())) if V.size else 0.0
    if not np.isfinite(top):
        raise ValueError(f"{what}: the input holds NaN or infinity.")
    if top == 0.0 or 2.0**-SAFE_EXPONENT <= top <= 2.0**SAFE_EXPONENT:
        return 1.0
    # 2^-e with top = f 2^e, 0.5 <= f < 1; at most 2^1000 (subnormal tops: 2^-e overflows)
    return float(2.0 ** min(-int(np.frexp(top)[1]), 1000))


def symmetric_eigh(S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(lam, Q)`` with ``S = Q diag(lam) Q^T``, ``lam`` ascending, for a symmetric ``S``.

    LAPACK's divide-and-conquer ``dsyevd`` (the routine of :func:`numpy.linalg.eigh`) called
    directly: for the small matrices of the spectral proxes, numpy's wrapper costs about a
    fifth of the call (the figures: docs/tuning_constants.md). Falls back to
    :func:`numpy.linalg.eigh` when LAPACK reports a failure.
    """
    lam, Q, info = _dsyevd(S, compute_v=1, lower=1)
    if info != 0:
        return np.linalg.eigh(S)
    return lam, Q


def soft_threshold(V: np.ndarray, thresh: float) -> np.ndarray:
    """Entrywise soft-thresholding ``sign(V) * max(|V| - thresh, 0)``.

    This is the prox of ``thresh * ||.||_1``.
    """
    return np.sign(V) * np.maximum(np.abs(V) - thresh, 0.0)


def group_soft_threshold(V: np.ndarray, thresh: float, axis: int) -> np.ndarray:
    """Block soft-thresholding ``v_g * max(1 - thresh / ||v_g||_2, 0)`` over groups.

    ``axis=1`` makes the rows the groups (l2,1 over features), ``axis=0`` the columns (tasks).
    """
    norms = np.linalg.norm(V, axis=axis, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(norms > thresh, 1.0 - thresh / np.where(norms > 0, norms, 1.0), 0.0)
    return V * scale


def safe_svd(V: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Thin SVD ``V = U diag(s) Vt`` with LAPACK ``gesdd``, falling back to ``gesvd``."""
    try:
        return scipy.linalg.svd(V, full_matrices=False, check_finite=False, lapack_driver="gesdd")
    except np.linalg.LinAlgError:
        return scipy.linalg.svd(V, full_matrices=False, check_finite=False, lapack_driver="gesvd")


def r_factor(V: np.ndarray) -> np.ndarray:
    """The triangular factor ``R`` of ``V^T = Q R`` for ``V`` of shape ``(d, m)``.

    ``R`` has shape ``(min(d, m), d)`` and ``R^T R = V V^T``: the singular values and left
    singular vectors of ``V`` are those of ``R^T``, obtained from a problem of size ``d``
    whatever ``m``. ``R`` factors of column blocks combine by another QR:
    ``r_factor([V_1, V_2]) = r_factor([R_1^T, R_2^T])`` up to the signs of its rows.
    """
    V = np.asarray(V, dtype=np.float64)
    if V.shape[1] == 0:
        return np.zeros((0, V.shape[0]))
    return np.asarray(np.linalg.qr(V.T, mode="r"))


def spectral_shrink_matrix(R: np.ndarray, shrink: Callable[[np.ndarray], np.ndarray]
                           ) -> tuple[np.ndarray, np.ndarray]:
    """The ``d x d`` matrix ``M`` with ``spectral_shrink(V, shrink) = M V``, from ``V``'s ``R``.

    With ``R`` the triangular factor of ``V^T`` (:func:`r_factor`, or any ``R`` with
    ``R^T R = V V^T``) and ``R = P diag(s) Z^T`` its SVD, ``Z`` holds the left singular vectors
    of ``V`` and::

        M = Z_k diag(shrink(s)_k / s_k) Z_k^T,   k = {i : shrink(s)_i > 0}.

    Parameters
    ----------
    R : ndarray of shape (r, d)
    shrink : callable
        Maps the singular values (non-increasing) to new ones, ``>= 0``, zero where ``s = 0``.

    Returns
    -------
    M : ndarray of shape (d, d)
    s_new : ndarray
        The positive new singular values (``s_new.sum()`` is the trace norm of ``M V``).
    """
    d = R.shape[1]
    if R.size == 0:
        return np.zeros((d, d)), np.zeros(0)
    _, s, Zt = safe_svd(R)
    s_new = np.asarray(shrink(s), dtype=np.float64)
    keep = (s_new > 0) & (s > 0)
    Zk = Zt[keep].T
    return (Zk * (s_new[keep] / s[keep])) @ Zk.T, s_new[keep].copy()


def _shrink_gram(V: np.ndarray, shrink) -> tuple[np.ndarray, np.ndarray] | None:
    """``spectral_shrink`` through ``eigh(V V^T)``; None when a singular value below
    ``GRAM_RTOL`` times the largest (too inaccurate from the square, possibly rounded to 0)
    is, or could be, kept: ``shrink`` must zero it even when raised to that bound."""
    lam, U = symmetric_eigh(V @ V.T)
    lam, U = lam[::-1], U[:, ::-1]
    s = np.sqrt(np.maximum(lam, 0.0))
    s_new = np.asarray(shrink(s), dtype=np.float64)
    keep = (s_new > 0) & (s > 0)
    if s[-1] < GRAM_RTOL * s[0]:  # s is non-increasing: some singular value is unresolved
        unresolved = s < GRAM_RTOL * s[0]
        s_bound = np.where(unresolved, GRAM_RTOL * s[0], s)
        if (np.asarray(shrink(s_bound), dtype=np.float64)[unresolved] > 0).any():
            return None
    if not keep.any():
        return np.zeros_like(V), np.zeros(0)
    Uk = U[:, keep]
    return (Uk * (s_new[keep] / s[keep])) @ (Uk.T @ V), s_new[keep].copy()


def _shrink_svd(V: np.ndarray, shrink) -> tuple[np.ndarray, np.ndarray]:
    U, s, Vt = safe_svd(V)
    s_new = np.asarray(shrink(s), dtype=np.float64)
    keep = (s_new > 0) & (s > 0)
    return (U[:, keep] * s_new[keep]) @ Vt[keep], s_new[keep].copy()


def spectral_shrink(V: np.ndarray, shrink: Callable[[np.ndarray], np.ndarray], *,
                    method: str = "auto") -> tuple[np.ndarray, np.ndarray]:
    """``sum_i shrink(s_i) u_i v_i^T`` for the SVD ``V = sum_i s_i u_i v_i^T``.

    Parameters
    ----------
    V : ndarray of shape (d, m)
    shrink : callable
        Maps the singular values (a 1-D array, non-increasing) to the new ones: ``>= 0`` and
        zero where ``s = 0`` (soft-thresholding, projection on the l1 ball, ...).
    method : {"auto", "gram", "qr", "svd"}
        ``"auto"`` is ``"gram"`` (the eigendecomposition of the small Gram matrix), falling
        back, where a kept singular value is below ``GRAM_RTOL`` times the largest, to
        ``"qr"`` when the matrix is at least ``QR_RATIO`` times wider than high (or higher
        than wide), else to ``"svd"``. See the module docstring.

    Entries beyond about ``1e90`` in magnitude (or all below ``1e-90``) are rescaled by a
    power of two first (:data:`SAFE_EXPONENT`); ``shrink`` still sees the true singular
    values. NaN or infinity in ``V`` is a ``ValueError``.

    Returns
    -------
    out : ndarray of shape (d, m)
        A new C-contiguous array.
    s_new : ndarray
        The positive new singular values (``s_new.sum()`` is the trace norm of ``out`` and
        ``len(s_new)`` its rank).
    """
    V = np.asarray(V, dtype=np.float64)
    if method not in ("auto", "gram", "qr", "svd"):
        raise ValueError(f"method must be 'auto', 'gram', 'qr' or 'svd', got {method!r}.")
    if V.size == 0:
        return V.copy(), np.zeros(0)
    c = _rescaling(V, "spectral_shrink")
    if c != 1.0:  # shrink sees the true singular values: s -> shrink(s / c) c
        out, s_new = spectral_shrink(
            V * c, lambda s: np.asarray(shrink(s / c), dtype=np.float64) * c, method=method)
        return out / c, s_new / c
    if V.shape[0] > V.shape[1]:  # work on the small side
        out, s_new = _shrink_wide(V.T, shrink, method)
        return np.ascontiguousarray(out.T), s_new
    return _shrink_wide(V, shrink, method)


def _shrink_wide(V: np.ndarray, shrink, method: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`spectral_shrink` of a matrix with ``d <= m`` whose entries are in the safe band
    (its validation and rescaling done)."""
    d, m = V.shape
    if method == "auto":
        method = "gram"
    if method == "gram":
        res = _shrink_gram(V, shrink)
        if res is not None:
            return res
        method = "qr" if m >= QR_RATIO * d else "svd"
    if method == "qr":
        M, s_new = spectral_shrink_matrix(r_factor(V), shrink)
        return M @ V, s_new
    return _shrink_svd(V, shrink)


def trace_norm(V: np.ndarray) -> float:
    """``||V||_* = sum_i sigma_i(V)``, through the ``R`` factor of the long side when ``V`` is
    at least ``WIDE_RATIO`` times wider than high (or higher than wide)."""
    V = np.asarray(V, dtype=np.float64)
    if V.size == 0:
        return 0.0
    d, m = V.shape
    if max(d, m) >= WIDE_RATIO * min(d, m):
        V = r_factor(V if d <= m else V.T)
    try:
        return float(np.linalg.svd(V, compute_uv=False).sum())
    except np.linalg.LinAlgError:
        return float(safe_svd(V)[1].sum())


def spectral_norm(V: np.ndarray) -> float:
    """``||V||_2 = sigma_max(V)``, from the top eigenvalue of the Gram matrix of the small side
    (``lambda_max(V V^T)`` or ``lambda_max(V^T V)``: relative accuracy ``eps``, squaring hurts
    only the small singular values; entries outside the safe band are rescaled first, see
    :data:`SAFE_EXPONENT`). Cheaper than the SVD's singular values even for square matrices
    (the figures: docs/tuning_constants.md)."""
    V = np.asarray(V, dtype=np.float64)
    if V.size == 0:
        return 0.0
    c = _rescaling(V, "spectral_norm")
    if c != 1.0:
        return spectral_norm(V * c) / c
    d, m = V.shape
    C = V @ V.T if d <= m else V.T @ V
    return float(np.sqrt(max(float(np.linalg.eigvalsh(C)[-1]), 0.0)))


def svt(V: np.ndarray, thresh: float, return_rank: bool = False):
    """Singular value thresholding ``U diag(max(s - thresh, 0)) Vt``: prox of ``thresh*||.||_*``."""
    out, s = svt_with_values(V, thresh)
    return (out, len(s)) if return_rank else out


def svt_with_values(V: np.ndarray, thresh: float) -> tuple[np.ndarray, np.ndarray]:
    """Singular value thresholding that also returns the kept singular values.

    Returns ``(U_r diag(s_r) Vt_r, s_r)`` with ``s_r = (s - thresh)_+`` restricted to its positive
    entries (so ``s_r.sum()`` is the trace norm of the result and ``len(s_r)`` its rank).
    Computed by :func:`spectral_shrink` (a ``d x d`` problem when ``m >> d``).
    """
    thresh = float(thresh)
    return spectral_shrink(V, lambda s: np.maximum(s - thresh, 0.0))


def project_l1_ball(v: np.ndarray, radius: float, *, seed: int = 0) -> np.ndarray:
    """Euclidean projection of ``v`` (any shape, flattened) onto ``{x : ||x||_1 <= radius}``.

    ``x = sign(v) * max(|v| - theta, 0)`` with ``theta >= 0`` the smallest value making
    ``||x||_1 <= radius``; ``theta`` is found by randomized pivoting in expected linear time
    (Duchi, Shalev-Shwartz, Singer & Chandra, "Efficient projections onto the l1-ball for
    learning in high dimensions"). The projection is positively homogeneous,
    ``P_r(v) = P_(r c)(v c) / c``: entries outside the safe band (:data:`SAFE_EXPONENT`) are
    rescaled by a power of two first, so that the sums of the threshold search neither
    overflow nor vanish. NaN or infinity in ``v`` is a ``ValueError``.
    """
    v = np.asarray(v, dtype=np.float64)
    if radius < 0 or not np.isfinite(radius):
        raise ValueError(f"radius must be finite and >= 0, got {radius!r}.")
    if radius == 0:
        return np.zeros_like(v)
    c = _rescaling(v, "project_l1_ball")
    if np.abs(v).sum() <= radius:  # an overflowing sum (inf) is outside
        return v.copy()
    if c != 1.0:  # outside the ball: radius * c < sum |v c|, no overflow
        return project_l1_ball(v * c, float(radius) * c, seed=seed) / c
    theta = l1ball_threshold(v.ravel(), float(radius), seed)
    return soft_threshold(v, theta)


def project_trace_ball(V: np.ndarray, radius: float, return_rank: bool = False):
    """Projection onto ``{W : ||W||_* <= radius}``.

    SVD, then the singular values onto the l1 ball.
    """
    if radius < 0 or not np.isfinite(radius):
        raise ValueError(f"radius must be finite and >= 0, got {radius!r}.")
    out, s = spectral_shrink(V, trace_ball_shrink(radius))
    return (out, len(s)) if return_rank else out


def trace_ball_shrink(radius: float) -> Callable[[np.ndarray], np.ndarray]:
    """The map of singular values of the projection onto ``{||W||_* <= radius}``: the
    identity inside the ball, else the projection onto the l1 ball of radius ``radius``."""
    radius = float(radius)

    def shrink(s: np.ndarray) -> np.ndarray:
        return s.copy() if s.sum() <= radius else project_l1_ball(s, radius)

    return shrink
