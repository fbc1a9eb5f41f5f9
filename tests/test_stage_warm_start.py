"""Warm starts of the multi-stage models (``multitask.estimators._stage_solvers``): a
warm-started fit starts its first (convex) stage from the previous fit's first-stage solution,
reaches the fit of a cold start, and the shortcut stays out of copies and pickles."""

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


@pytest.mark.parametrize("make, second", [
    (lambda a: CappedL1Regressor(alpha=a, theta=0.8, tol=1e-8, max_iter=20000), 0.25),
    (lambda a: CappedTraceRegressor(alpha=a, tau=0.5, tol=1e-8, max_iter=20000), 0.25),
], ids=["capped_l1", "capped_trace"])
def test_warm_start_takes_the_first_stage_and_equals_a_cold_fit(make, second):
    X, Y = _problem()
    warm = make(1.0)
    warm.set_params(warm_start=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warm.fit(X, Y)
        first = warm._first_stage_point
        # the first stage's solution of that fit: the stage problem at W = 0 solved alone
        alone = make(1.0).set_params(solver=Multistage(n_stages=1, tol=1e-8, max_iter=20000))
        alone.fit(X, Y)
        # (two solvers to a relative gap of 1e-8: the weights agree to about its root)
        np.testing.assert_allclose(first[0], alone.coef_.T, rtol=0, atol=2e-4)
        start, _ = warm._warm_start_point(warm._convert(X, Y, None, None)[0], first[0].shape)
        assert start is first[0]
        warm.set_params(alpha=second).fit(X, Y)
        cold = make(second).fit(X, Y)
    np.testing.assert_allclose(warm.coef_, cold.coef_, rtol=0, atol=1e-5)
    assert float(np.ravel(warm.objective_)[-1]) == pytest.approx(
        float(np.ravel(cold.objective_)[-1]), rel=1e-7)


def test_the_first_stage_point_stays_out_of_copies_and_pickles():
    X, Y = _problem(1)
    est = CappedL1Regressor(alpha=0.5, theta=0.8, warm_start=True).fit(X, Y)
    assert est._first_stage_point is not None
    assert not hasattr(pickle.loads(pickle.dumps(est)), "_first_stage_point")
    assert not hasattr(copy.deepcopy(est), "_first_stage_point")
    # a cold start of the same estimator afterwards ignores it
    cold = CappedL1Regressor(alpha=0.5, theta=0.8).fit(X, Y)
    np.testing.assert_allclose(est.coef_, cold.coef_, rtol=0, atol=1e-6)
