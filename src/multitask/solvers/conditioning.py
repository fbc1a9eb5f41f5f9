"""How ill-conditioned a quadratic datafit is for gradient methods, as the automatic solver
choice reads it (:func:`condition_number`, :func:`ill_conditioned`): ADMM's claim on the
quadratic models (:func:`~multitask.solvers.admm.prefer_admm`) and majorization's bound
(:mod:`multitask.solvers.majorized`) use it.
"""

from __future__ import annotations

import numpy as np

from multitask.losses import Datafit
from multitask.solvers.problem import median

__all__ = ["GERSHGORIN_MAX_ENTRIES", "ILL_CONDITIONED", "condition_number", "curvature_ratio",
           "ill_conditioned"]

#: ``solver="auto"`` prefers ADMM to accelerated gradient when :func:`condition_number` is
#: at least this (see :func:`~multitask.solvers.admm.prefer_admm`; measured by
#: ``benchmarks/bench_auto_solver.py``).
ILL_CONDITIONED = 10.0
#: Up to this many entries of the per-task Gram matrices (``m d^2``), :func:`ill_conditioned`
#: first bounds their largest eigenvalue from above by their rows' absolute sums (one more
#: read of matrices that small) and computes it only where the bound does not decide.
GERSHGORIN_MAX_ENTRIES = 100_000
_TINY = float(np.finfo(float).tiny)


def condition_number(datafit: Datafit) -> float:
    """A cheap measure of how ill-conditioned a quadratic datafit is for gradient methods.

    ``kappa = max_t lambda_max(H_t) / median_{j, t: H_t[j, j] > 0} H_t[j, j]``: the largest
    curvature (the step of a gradient method is its inverse) over the typical curvature of one
    feature. It needs the diagonals of the cached Gram matrices and the largest eigenvalue,
    which the datafit's Lipschitz constant computes anyway. Standardized features give a
    ``kappa`` of the order of the number of strongly correlated features (SARCOS 4, Yeast 11,
    School 25-27); raw features of different units (percentages next to 0/1 indicators) or an
    uncentred column of ones without intercept give hundreds and more (SARCOS raw 890, School
    raw with a bias column 1.3e4-1.9e4).
    Returns 1 for a datafit without ``"quadratic"``.
    """
    if "quadratic" not in datafit.capabilities:
        return 1.0
    return curvature_ratio(float(datafit.lipschitz()), datafit.quadratic_diagonal())


def curvature_ratio(top: float, diag: np.ndarray) -> float:
    """``top / median(diag)`` over the diagonal curvatures above ``1e-12 top`` (1 when there
    is none): the conditioning measure of :func:`condition_number`, from the largest curvature
    ``top`` and the per-feature curvatures ``diag``."""
    pos = diag[diag > 1e-12 * max(top, _TINY)]
    if not pos.size or not top > 0:
        return 1.0
    return top / median(pos)


def ill_conditioned(datafit: Datafit, threshold: float = ILL_CONDITIONED) -> bool:
    """Whether :func:`condition_number` of the quadratic ``datafit`` is at least ``threshold``
    (the test of :func:`~multitask.solvers.admm.prefer_admm`, for a datafit ADMM applies to),
    read from the cheapest facts that decide it.

    Two bounds of ``lambda_max(H_t)`` often decide without the eigenvalues: from below
    ``max_j H_t[j, j]`` (raw features of different scales: ill-conditioned), from above
    ``max_j sum_k |H_t[j, k]|`` (Gershgorin, :func:`_gershgorin_bound`, for small per-task
    Gram matrices: well-conditioned when it is under ``threshold`` times the median of the
    positive diagonals, which is at most :func:`curvature_ratio`'s median, whose mask may
    drop the tiniest); else the largest eigenvalue (the datafit's Lipschitz constant).
    """
    diag = datafit.quadratic_diagonal()
    # the upper bound first: where it decides, the lower one cannot say otherwise
    # (max_j H_t[j, j] <= the bound, over a median no lower than the one it is compared to)
    upper = _gershgorin_bound(datafit)
    if upper is not None:
        pos = diag[diag > 0]
        if not pos.size or upper < threshold * median(pos):
            return False
    if diag.size and curvature_ratio(float(diag.max()), diag) >= threshold:
        return True
    # condition_number's measure, on the diagonals already read
    return curvature_ratio(float(datafit.lipschitz()), diag) >= threshold


def _gershgorin_bound(datafit: Datafit) -> float | None:
    """``max_t max_j sum_k |H_t[j, k]|`` (a relative ``1e-8`` added for rounding) for the
    ``H_t`` of the squared loss's per-task Gram matrices (``use_gram``), an upper bound of its
    :meth:`~multitask.losses.Squared.lipschitz` (their largest eigenvalue); ``None`` for other
    datafits, a shared Gram matrix (whose bound divides by the smallest task's rows) or past
    :data:`GERSHGORIN_MAX_ENTRIES` entries."""
    data = datafit.data
    m, d = int(data.n_tasks), int(data.n_features)
    if (datafit.name != "squared" or not getattr(datafit, "use_gram", False) or d == 0
            or m * d * d > GERSHGORIN_MAX_ENTRIES):
        return None
    H = datafit.quadratic_form()[0]
    if H.shape[0] != m:
        return None
    return float(np.max(np.abs(H).sum(axis=2))) * (1.0 + 1e-8)
