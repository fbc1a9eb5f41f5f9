"""Scales of the default grids of secondary parameters, read from the problem.

A strength of a norm penalty gets its scale from the loss gradient at zero (``alpha_max``).
The caps, radii and ratios of the composite and non-convex models are on the scale of the
weights themselves: a cap ``tau`` compares with the singular values of ``W``, a radius with its
trace norm, a cap ``theta`` with the l1 norms of its feature rows. :func:`free_weights` gives
that scale: the weights of the lightly ridged, otherwise unpenalized fit, beyond which a
constraint no longer binds and a cap no longer caps anything.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from multitask.losses import Datafit
from multitask.penalties import Ridge
from multitask.solvers import make_auto_solver, make_solver

__all__ = ["FREE_FIT_RIDGE", "SPAN_DECADES", "free_weights", "ridge_grid_top"]

#: Ridge of :func:`free_weights`, relative to the Lipschitz constant of the loss gradient (the
#: largest curvature): small enough to leave a well-posed fit almost unchanged, large enough to
#: keep the weights finite on separable classes or tasks with fewer rows than features.
FREE_FIT_RIDGE = 1e-3

#: Decades below the free fit's scale spanned by a secondary grid of caps or radii (its ends
#: are left out: at the top the cap or constraint is inactive, two decades below it is as good
#: as zero).
SPAN_DECADES = 2.0


def ridge_grid_top(datafit: Datafit) -> float:
    """The top of the default grid of a ridge-type strength (a quadratic coupling: ridge,
    mean or graph regularization, the cluster relaxations).

    ``10 L`` with ``L`` the Lipschitz constant of the loss gradient (the strength that
    dominates the loss's largest curvature); for a loss without gradient (the pinball loss,
    whose curvature is zero or infinite) the spectral norm of its subgradient at zero,
    ``||G_0||_2``, the strength whose ridge gradient at weights of unit norm matches the
    loss's. 1 where neither is a positive finite number.
    """
    if "gradient" in datafit.capabilities:
        scale = 10.0 * float(datafit.lipschitz())
    else:
        scale = float(np.linalg.norm(datafit.grad_at_zero(), 2))
    return scale if np.isfinite(scale) and scale > 0 else 1.0


def free_weights(datafit: Datafit) -> np.ndarray:
    """``W`` (``(n_features, n_tasks)``) minimizing ``F(W, b) + (r / 2) ||W||_F^2``.

    ``r = FREE_FIT_RIDGE * L`` with ``L`` the Lipschitz constant of the gradient of ``F`` (the
    loss of ``datafit``, its own ridge ``alpha_l2`` included). Solved in closed form for the
    squared loss, by accelerated gradient (tolerance ``1e-3``, at most 500 iterations: a scale,
    not a model) otherwise, or for a loss without gradient by the solver the library chooses
    for it (with the same budget).
    """
    lip = float(datafit.lipschitz()) if "gradient" in datafit.capabilities else 1.0
    lip = lip if np.isfinite(lip) and lip > 0 else 1.0
    penalty = Ridge(FREE_FIT_RIDGE * lip)
    exact = make_solver("exact")
    if exact.supports(datafit, penalty):
        solver = exact
    elif "gradient" in datafit.capabilities:
        solver = make_solver("fista", max_iter=500, tol=1e-3)
    else:  # a loss without gradient (the pinball loss): the solver the library takes for it
        solver = make_auto_solver(datafit, penalty, max_iter=500, tol=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a scale, not a model
        result = solver.solve(datafit, penalty)
    W = np.asarray(result.W, dtype=np.float64)
    return np.where(np.isfinite(W), W, 0.0)
