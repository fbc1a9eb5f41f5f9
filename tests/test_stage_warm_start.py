"""Warm starts of the multi-stage models (``multitask.estimators._stage_solvers`` and
``Multistage.solve(stage_starts=...)``): a warm-started fit starts its convex stages from the
previous fit's solutions of the same stages, reaches the fit of a cold start, and the kept
points stay out of copies, pickles and ``solver_info_``."""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest

from multitask import CappedL1Regressor, CappedTraceRegressor
from multitask.solvers import Multistage


def _problem(seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((12, 8))
    W = np.zeros((8, 30))
    W[:3] = rng.standard_normal((3, 30))
    Y = X @ W + 0.3 * rng.standard_normal((12, 30))
    return X, Y


@pytest.mark.parametrize("make", [
    lambda a: CappedL1Regressor(alpha=a, theta=0.8, tol=1e-8, max_iter=20000),
    lambda a: CappedTraceRegressor(alpha=a, tau=0.5, tol=1e-8, max_iter=20000),
], ids=["capped_l1", "capped_trace"])
def test_a_warm_path_keeps_the_convex_stages_and_equals_cold_fits(make):
    X, Y = _problem()
    warm = make(1.0).set_params(warm_start=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for alpha in (1.0, 0.5, 0.25):
            warm.set_params(alpha=alpha).fit(X, Y)
            cold = make(alpha).fit(X, Y)
            np.testing.assert_allclose(warm.coef_, cold.coef_, rtol=0, atol=1e-5)
            assert float(np.ravel(warm.objective_)[-1]) == pytest.approx(
                float(np.ravel(cold.objective_)[-1]), rel=1e-7)
            points = warm._stage_points
            assert points and "stage_points" not in warm.solver_info_
            # the points kept are the convex stages' solutions: the first stage's alone
            first = warm.solver_info_["stage_keys"][0]
            alone = make(alpha).set_params(
                solver=Multistage(n_stages=1, tol=1e-10, max_iter=50000)).fit(X, Y)
            np.testing.assert_allclose(points[first][0], alone.coef_.T, rtol=0, atol=2e-4)


def test_a_stage_starts_from_the_known_point_of_its_key():
    """``stage_starts`` gives a convex stage its start: from the solution itself, the stage
    ends at once; a point of another shape or a non-convex stage is ignored."""
    from multitask.penalties import L1
    from multitask.penalties.capped_trace import TruncatedTraceNorm
    from multitask.solvers.multistage import _known_start

    W, b = np.zeros((3, 4)), np.zeros(4)
    P = np.ones((3, 4))
    assert _known_start({(): (P, None)}, (), L1(1.0), W, b)[0] is P
    assert _known_start({(): (np.ones((2, 4)), None)}, (), L1(1.0), W, b)[0] is W
    assert _known_start({1: (P, None)}, 1, TruncatedTraceNorm(1.0, 1), W, b)[0] is W
    assert _known_start(None, (), L1(1.0), W, b)[0] is W

    X, Y = _problem(2)
    est = CappedL1Regressor(alpha=0.5, theta=0.8, tol=1e-8, max_iter=20000).fit(X, Y)
    solver = est._make_solver(*_model_of(est, X, Y))
    datafit, penalty = _model_of(est, X, Y)
    again = solver.solve(datafit, penalty, coef_init=est.coef_.T.copy(),
                         stage_starts=est._stage_points)
    before = sum(est.solver_info_["stage_iters"])
    assert sum(again.info["stage_iters"]) < before
    np.testing.assert_allclose(again.coef, est.coef_.T, rtol=0, atol=1e-6)


def _model_of(est, X, Y):
    data = est._convert(X, Y, None, None)[0]
    datafit = est._make_datafit(data)
    return datafit, est._make_penalty(datafit)


def test_the_kept_points_stay_out_of_copies_and_pickles():
    X, Y = _problem(1)
    est = CappedL1Regressor(alpha=0.5, theta=0.8, warm_start=True).fit(X, Y)
    assert est._stage_points
    assert not hasattr(pickle.loads(pickle.dumps(est)), "_stage_points")
    assert not hasattr(copy.deepcopy(est), "_stage_points")
    # a cold start of another estimator is not affected
    cold = CappedL1Regressor(alpha=0.5, theta=0.8).fit(X, Y)
    np.testing.assert_allclose(est.coef_, cold.coef_, rtol=0, atol=1e-6)


def test_a_known_start_that_ends_higher_is_solved_again_from_the_run_s_own():
    """A convex stage started from a known point that ends above this run's own start (here
    a far point and a budget of one iteration) is solved again from that start: the capped
    objective never increases across the stages."""
    from multitask.solvers.fista import ProximalGradient

    X, Y = _problem(3)
    est = CappedL1Regressor(alpha=0.5, theta=0.8, tol=1e-8, max_iter=20000).fit(X, Y)
    datafit, penalty = _model_of(est, X, Y)
    far = {key: (np.full_like(est.coef_.T, 50.0), None)
           for key in est.solver_info_["stage_keys"]}
    solver = Multistage(inner=ProximalGradient(max_iter=1, tol=1e-8), n_stages=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = solver.solve(datafit, penalty, coef_init=est.coef_.T.copy(), stage_starts=far)
        plain = solver.solve(datafit, penalty, coef_init=est.coef_.T.copy())
    F = np.asarray(res.objective)
    assert np.all(np.diff(F) <= 1e-12 * np.abs(F[:-1]))
    # every stage solved again from the run's own start: the plain run's fit, and one more
    # (the far start's) iteration per stage
    np.testing.assert_allclose(res.coef, plain.coef, rtol=0, atol=1e-12)
    assert res.info["stage_keys"] == plain.info["stage_keys"]
    assert sum(res.info["stage_iters"]) == sum(plain.info["stage_iters"]) + len(
        res.info["stage_keys"])
