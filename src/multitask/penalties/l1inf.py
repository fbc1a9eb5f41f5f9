"""The l1,inf norm and the exact Euclidean projection onto its ball.

For ``W`` of shape ``(n_features, n_tasks)`` (one column per task)

    ||W||_{1,inf} = sum_j max_k |W_jk|,

the sum over features (rows) of the largest absolute coefficient across tasks.  Its ball
``{W : ||W||_{1,inf} <= C}`` promotes row sparsity: a feature is used by all tasks or by none.

The projection ``P_C(W) = argmin_B 0.5 ||B - W||_F^2 s.t. ||B||_{1,inf} <= C`` clips every row
at its own threshold, ``P_C(W)_jk = sign(W_jk) min(|W_jk|, mu_j)``, where the thresholds solve

    sum_k (|W_jk| - mu_j)_+ = theta  for mu_j > 0,    sum_k |W_jk| <= theta  for mu_j = 0,
    sum_j mu_j = C,

for one scalar ``theta > 0`` (Quattoni, Carreras, Collins & Darrell, "An efficient projection
for l1,inf regularization", ICML 2009).  Two exact solvers are available (see
:mod:`multitask.penalties._l1inf_numba`): the paper's sort/merge algorithm, corrected for rows
that vanish at the solution, and a Newton root search on ``theta`` that needs no sort.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

import multitask.penalties._l1inf_numba as _nb
from multitask.penalties.base import Constraint

__all__ = ["L1InfBall", "l1inf_norm", "project_l1inf_ball"]

_METHODS = ("auto", "sort", "newton")
#: the method used by ``method="auto"`` (the faster one in
#: ``benchmarks/bench_l1inf_projection.py``)
_AUTO_METHOD = "newton"
#: inputs are rescaled by a power of two when ``max |W_jk| > _HUGE / W.size`` (row sums could
#: overflow) or ``max |W_jk| < _TINY`` (thresholds could underflow)
_HUGE = 2.0**1000
_TINY = 2.0**-900
#: passes of Michelot's iteration for one task before falling back to the general Newton method
_SINGLE_TASK_MAX_PASSES = 100


class L1InfProjectionInfo(NamedTuple):
    """Details of one projection (for tests and benchmarks).

    Attributes
    ----------
    B : ndarray of shape (n_features, n_tasks)
        The projection.
    mu : ndarray of shape (n_features,)
        Row thresholds, ``|B_jk| = min(|W_jk|, mu_j)``; ``mu_j = max_k |W_jk|`` when ``W`` is
        inside the ball.
    theta : float
        Multiplier of the constraint, the l1 mass removed from every surviving row (0 inside).
    n_iter : int
        Newton iterations or merge steps (0 when no solver ran).
    method : str
        ``"sort"``, ``"newton"``, or ``"none"`` when the answer needed no solver.
    """

    B: np.ndarray
    mu: np.ndarray
    theta: float
    n_iter: int
    method: str


def _check_matrix(W: np.ndarray, name: str = "W") -> np.ndarray:
    """Return ``W`` as a C-contiguous float64 2-D array (no copy when it already is one)."""
    W = np.asarray(W)
    if W.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array of shape (n_features, n_tasks), got {W.ndim} dimension(s)"
        )
    if not (
        np.issubdtype(W.dtype, np.floating)
        or np.issubdtype(W.dtype, np.integer)
        or W.dtype == np.bool_
    ):
        raise ValueError(f"{name} must hold real numbers, got dtype {W.dtype}")
    return np.ascontiguousarray(W, dtype=np.float64)


def _check_radius(radius: float) -> float:
    try:
        r = float(radius)
    except (TypeError, ValueError):
        raise ValueError(f"radius must be a real number, got {radius!r}") from None
    if not np.isfinite(r):
        raise ValueError(f"radius must be finite, got {r}")
    if r < 0:
        raise ValueError(f"radius must be non-negative, got {r}")
    return r


def l1inf_norm(W: np.ndarray) -> float:
    """Return ``||W||_{1,inf} = sum_j max_k |W_jk|`` (rows ``j`` = features).

    Parameters
    ----------
    W : array-like of shape (n_features, n_tasks)

    Returns
    -------
    float
        The norm; 0 for an empty matrix, NaN or inf when ``W`` holds NaN or inf.
    """
    W = _check_matrix(W)
    if W.size == 0:
        return 0.0
    rowmax, _, finite = _nb.row_stats(W)
    if not finite:  # let NaN and inf propagate as numpy does
        return float(np.abs(W).max(axis=1).sum())
    return float(rowmax.sum())


def _project(W: np.ndarray, radius: float, method: str = "auto") -> L1InfProjectionInfo:
    """Validate the input and project; return :class:`L1InfProjectionInfo`."""
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    W = _check_matrix(W)
    radius = _check_radius(radius)
    d, m = W.shape
    if W.size == 0:
        return L1InfProjectionInfo(W.copy(), np.zeros(d), 0.0, 0, "none")
    if m == 1 and method != "sort":
        info = _project_single_task(W, radius)
        if info is not None:
            return info
    if method == "auto":
        method = _AUTO_METHOD
    if method == "newton" and m >= _nb._LEVELS_MIN_LENGTH:
        rowmax, rowsum, levels, finite = _nb.row_stats_levels(W)
    else:
        rowmax, rowsum, finite = _nb.row_stats(W)
        levels = np.empty((0, 4))
    if not finite:
        raise ValueError("W contains NaN or infinite values")
    amax = float(rowmax.max())
    if amax > 0.0 and (amax > _HUGE / W.size or amax < _TINY):
        return _project_rescaled(W, radius, method, amax)
    norm = float(rowmax.sum())
    if norm <= radius:
        return L1InfProjectionInfo(W.copy(), rowmax, 0.0, 0, "none")
    if radius == 0.0:
        return L1InfProjectionInfo(np.zeros((d, m)), np.zeros(d), float(rowsum.max()), 0, "none")
    if method == "sort":
        mu, theta, n_iter = _nb.thresholds_sort(W, rowmax, radius)
    else:
        mu, theta, n_iter = _nb.thresholds_newton(W, rowmax, rowsum, levels, radius)
    B = _nb.clip_rows(W, mu)
    return L1InfProjectionInfo(B, mu, float(theta), int(n_iter), method)


def _project_single_task(W: np.ndarray, radius: float) -> L1InfProjectionInfo | None:
    """One task: the l1-ball projection of the column, without per-row arrays.

    Returns None when the kernel asks for the general method (more than
    ``_SINGLE_TASK_MAX_PASSES`` passes over the column).
    """
    norm, amax, finite = _nb.column_stats(W)
    if not finite:
        raise ValueError("W contains NaN or infinite values")
    if amax > 0.0 and (amax > _HUGE / W.size or amax < _TINY):
        return _project_rescaled(W, radius, "newton", amax)
    # inside the ball as l1inf_norm sums it (NumPy's pairwise sum; the kernel's vectorized
    # sum can differ in the last bits right at the boundary)
    if norm <= radius or (norm <= radius * (1.0 + 1e-12)
                          and float(np.abs(W[:, 0]).sum()) <= radius):
        return L1InfProjectionInfo(W.copy(), np.abs(W[:, 0]), 0.0, 0, "none")
    if radius == 0.0:
        return L1InfProjectionInfo(np.zeros(W.shape), np.zeros(W.shape[0]), amax, 0, "none")
    theta, n_iter = _nb.threshold_single_task(W, radius, norm, amax, _SINGLE_TASK_MAX_PASSES)
    if n_iter < 0:
        return None
    B = _nb.soft_threshold_column(W, theta)
    return L1InfProjectionInfo(B, np.abs(B[:, 0]), float(theta), int(n_iter), "newton")


def _project_rescaled(W: np.ndarray, radius: float, method: str, amax: float):
    """Project ``2^-e W`` onto the ball of radius ``2^-e radius`` (``2^e ~ amax``), scale back.

    ``P_C(W) = s P_{C/s}(W / s)`` for ``s > 0``; a power of two keeps the scaling exact (up to
    subnormal results) and keeps the row sums and ``theta`` away from overflow and underflow.
    """
    e = int(np.frexp(amax)[1])
    with np.errstate(over="ignore", under="ignore"):
        Ws = np.ldexp(W, -e)
        rs = float(np.ldexp(radius, -e))
    if not np.isfinite(rs):  # radius / 2^e overflows: far outside the scaled norm (<= W.size)
        rs = float(np.finfo(np.float64).max)
    info = _project(Ws, rs, method)
    with np.errstate(over="ignore", under="ignore"):
        return L1InfProjectionInfo(
            np.ldexp(info.B, e),
            np.ldexp(info.mu, e),
            float(np.ldexp(info.theta, e)),
            info.n_iter,
            info.method,
        )


def project_l1inf_ball(W: np.ndarray, radius: float, method: str = "auto") -> np.ndarray:
    """Euclidean projection onto the l1,inf ball ``{B : sum_j max_k |B_jk| <= radius}``.

    Computes

        P(W) = argmin_B 0.5 ||B - W||_F^2  s.t.  sum_j max_k |B_jk| <= radius,

    which is ``P(W)_jk = sign(W_jk) min(|W_jk|, mu_j)`` with row thresholds ``mu_j >= 0``,
    ``sum_j mu_j = radius`` when ``W`` is outside the ball (see the module docstring).  Rows
    whose l1 mass is at most the multiplier ``theta`` become exactly zero.

    Parameters
    ----------
    W : array-like of shape (n_features, n_tasks)
        Rows are features, columns are tasks.  Not modified.
    radius : float
        Radius ``C >= 0`` of the ball.  ``radius = 0`` gives the zero matrix.
    method : {"auto", "sort", "newton"}, default="auto"
        ``"sort"``: the paper's sort/merge algorithm with the vanishing-row correction,
        ``O(n log n)`` for ``n = n_features * n_tasks``.  ``"newton"``: Newton root search on
        the multiplier, no sort (faster in our benchmark).  ``"auto"`` uses ``"newton"``.

    Returns
    -------
    ndarray of shape (n_features, n_tasks), float64
        A new array; a copy of ``W`` when ``W`` is already inside the ball.

    Raises
    ------
    ValueError
        If ``W`` is not 2-D or holds NaN/inf, if ``radius`` is negative or not finite, or if
        ``method`` is unknown.

    Notes
    -----
    With one task (``n_tasks = 1``) this is the projection onto the l1 ball of the column; with
    one feature (``n_features = 1``) it is ``clip(W, -radius, radius)``.
    """
    return _project(W, radius, method).B


class L1InfBall(Constraint):
    """The l1,inf ball ``{W : sum_j max_k |W_jk| <= radius}`` as a constraint set.

    Parameters
    ----------
    radius : float
        Radius ``C >= 0`` (finite).
    method : {"auto", "sort", "newton"}, default="auto"
        Projection algorithm, see :func:`project_l1inf_ball`.

    Raises
    ------
    ValueError
        If ``radius`` is negative or not finite, or ``method`` is unknown.
    """

    name = "l1inf_ball"
    capabilities = frozenset({"lp"})

    def __init__(self, radius: float, method: str = "auto"):
        if method not in _METHODS:
            raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
        super().__init__(_check_radius(radius))
        self.method = method

    def norm(self, W: np.ndarray) -> float:
        """Return ``||W||_{1,inf} = sum_j max_k |W_jk|``."""
        return l1inf_norm(W)

    def support(self, G: np.ndarray) -> float:
        """``radius max_j ||G_j.||_1`` (the dual of l1,inf is l_inf,1)."""
        if G.size == 0:
            return 0.0
        return self.radius * float(np.abs(G).sum(axis=1).max())

    def project(self, V: np.ndarray) -> np.ndarray:
        """Return the Euclidean projection of ``V`` (shape ``(n_features, n_tasks)``)."""
        return project_l1inf_ball(V, self.radius, self.method)

    def lp_constraints(self, d: int, m: int):
        """``-a_j <= W_jt <= a_j`` for every task and ``sum_j a_j <= radius``: ``n_aux = d``.

        ``vec(W) = W.T.ravel()`` (task-major, index ``t d + j``).
        """
        n = d * m
        k = np.arange(n)
        eye = sp.identity(n, format="csr")
        bound = sp.csr_matrix((np.full(n, -1.0), (k, k % d)), shape=(n, d))
        A_w = sp.vstack([eye, -eye, sp.csr_matrix((1, n))], format="csr")
        A_u = sp.vstack([bound, bound, sp.csr_matrix(np.ones((1, d)))], format="csr")
        c = np.concatenate([np.zeros(2 * n), [float(self.radius)]])
        return A_w, A_u, c, d
