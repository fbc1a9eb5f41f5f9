"""The squared loss on a shared design gives its one Gram matrix from ``d <= 2 n`` features
(``SHARED_GRAM_ROWS_PER_FEATURE``): a product with it costs at most the two with the design,
and it opens the Gram-based solvers (block coordinate descent, ADMM) to multi-output data
with a few more features than rows."""

from __future__ import annotations

import numpy as np
import pytest

import multitask as mt
from multitask.data.formats import as_multitask_data
from multitask.losses.squared import SHARED_GRAM_ROWS_PER_FEATURE, Squared


def _shared(n, d, m, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    W = np.zeros((d, m))
    W[:3] = rng.standard_normal((3, m))
    return X, X @ W + 0.3 * rng.standard_normal((n, m))


@pytest.mark.parametrize(("n", "d", "offers"), [(8, 10, True), (8, 16, True), (8, 17, False),
                                                (30, 10, True)])
def test_quadratic_from_half_a_row_per_feature(n, d, offers):
    assert SHARED_GRAM_ROWS_PER_FEATURE == 0.5
    X, Y = _shared(n, d, 12)
    data = as_multitask_data(X, Y)[0]
    assert data.shares_gram
    assert ("quadratic" in Squared(data).capabilities) is offers


def test_per_task_designs_keep_a_row_per_feature():
    rng = np.random.default_rng(1)
    Xs = [rng.standard_normal((8, 10)) for _ in range(5)]
    ys = [rng.standard_normal(8) for _ in range(5)]
    data = as_multitask_data(Xs, ys)[0]
    assert "quadratic" not in Squared(data).capabilities


def test_the_gram_solvers_reach_the_gradient_solvers_optimum():
    X, Y = _shared(8, 10, 40, seed=2)
    auto = mt.L21Regressor(alpha=0.05, tol=1e-10, max_iter=100_000).fit(X, Y)
    assert auto.solver_.name != "fista"  # a Gram-based solver now applies
    ref = mt.L21Regressor(alpha=0.05, solver="fista", tol=1e-10,
                          max_iter=200_000).fit(X, Y)
    assert auto.converged_ and ref.converged_
    np.testing.assert_allclose(auto.objective_[-1], ref.objective_[-1], rtol=1e-8)
    np.testing.assert_allclose(auto.coef_, ref.coef_, atol=1e-5 * np.abs(ref.coef_).max())


def test_the_dirty_model_takes_admm_where_the_tasks_have_fewer_rows_than_features():
    # singular Gram matrices: block coordinate descent crawls there (1,000 to 10,000 epochs
    # on the survey problem of benchmarks/bench_cv_two_param.py), ADMM does not
    X, Y = _shared(8, 10, 40, seed=3)
    fitted = mt.DirtyModelRegressor(alpha_group=0.1, alpha_l1=0.1, tol=1e-8).fit(X, Y)
    assert fitted.solver_.name == "admm" and fitted.converged_
    ref = mt.DirtyModelRegressor(alpha_group=0.1, alpha_l1=0.1, solver="bcd", tol=1e-9,
                                 max_iter=200_000).fit(X, Y)
    np.testing.assert_allclose(fitted.objective_[-1], ref.objective_[-1], rtol=1e-7)
    # as many rows as features: block coordinate descent, as before
    X, Y = _shared(12, 10, 40, seed=3)
    assert mt.DirtyModelRegressor(alpha_group=0.1, alpha_l1=0.1).fit(X, Y).solver_.name == "bcd"


@pytest.mark.parametrize("make", [
    lambda s: mt.GraphRegularizedRegressor(alpha=0.1, alpha_l1=0.1, solver=s),
    lambda s: mt.TemporalGroupLassoRegressor(alpha_group=0.5, alpha_smooth=0.1, solver=s),
], ids=["graph", "temporal"])
def test_coupled_models_keep_accelerated_gradient_where_the_tasks_have_fewer_rows(make):
    # the coupled row solves of block coordinate descent cost more than a gradient step there
    X, Y = _shared(8, 10, 40, seed=4)
    auto = make("auto").set_params(tol=1e-9, max_iter=100_000).fit(X, Y)
    assert auto.solver_.name == "fista"
    ref = make("bcd").set_params(tol=1e-10, max_iter=200_000).fit(X, Y)
    assert auto.converged_ and ref.converged_
    np.testing.assert_allclose(auto.objective_[-1], ref.objective_[-1], rtol=1e-7)
    # as many rows as features: block coordinate descent, as before
    X, Y = _shared(12, 10, 40, seed=4)
    assert make("auto").fit(X, Y).solver_.name == "bcd"
