"""Reliability suite: every public estimator under hostile inputs, solvers at their limits."""

from __future__ import annotations

import numpy as np

from multitask.data import as_multitask_data
from multitask.losses import get_datafit
from multitask.model_selection import relative_grid
from multitask.penalties import TraceNorm
from multitask.solvers.fista import fista


def test_fista_warm_start_does_not_stop_before_its_momentum_builds_up():
    """A warm start from the neighbouring path point reaches the cold start's objective.

    On School (raw features: ill-conditioned), the first steps from a warm start decrease the
    objective by less than ``tol`` relative but accelerate; the objective-change rule used to
    stop after three such steps, 0.5% above the optimum.
    """
    from multitask.datasets import load_school

    school = load_school()
    data, _ = as_multitask_data(school.X, school.y)
    datafit = get_datafit("squared", data)
    grid = relative_grid(datafit.lambda_max("trace"), 10, 1e-3)
    prev = fista(datafit, TraceNorm(grid[6]), max_iter=5000, tol=1e-6)
    warm = fista(datafit, TraceNorm(grid[7]), coef_init=prev.W, max_iter=5000, tol=1e-6)
    cold = fista(datafit, TraceNorm(grid[7]), max_iter=5000, tol=1e-6)
    assert warm.n_iter > 10
    assert warm.final_objective <= cold.final_objective * (1 + 1e-4)
