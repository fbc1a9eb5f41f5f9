"""The Tweedie datafit's conjugate (its cached targets, the zero-target rows apart) against the
free function, and a long-format design whose rows are already grouped by task: kept as given
(no copy), unchanged by a fit, and fitted as its shuffled rows are."""

from __future__ import annotations

import numpy as np
import pytest

import multitask as mt
from multitask.data import as_multitask_data
from multitask.losses.glm import tweedie_conjugate
from multitask.losses.registry import get_datafit


@pytest.mark.parametrize("power", [1.0, 1.3, 1.5, 1.9, 2.0])
@pytest.mark.parametrize("zeros", [False, True])
def test_tweedie_datafit_conjugate_is_the_free_function(power, zeros):
    rng = np.random.default_rng(int(10 * power) + zeros)
    n, d = 400, 3
    X = rng.standard_normal((n, d))
    y = rng.gamma(1.5, 1.0, n)
    if zeros and power < 2.0:
        y[rng.random(n) < 0.4] = 0.0
        y[0] = 0.0  # where a = -0.5: outside the domain a >= 0 of a zero target
    task = np.repeat([0, 1], n // 2)
    data, _ = as_multitask_data(X, y, task)
    datafit = get_datafit("tweedie", data, power=power)
    z = 0.3 * rng.standard_normal(n)
    datafit._dloss(z)  # the conjugate's roots start at these scores
    # a dual point as the certificate makes one: the gradient, one sign scaled down per task
    _, a = datafit._dloss(z)
    a = np.where(a > 0, 0.7 * a, a)
    a[:5] = [-0.5, 0.0, 1e-12, 3.0, -1e3]  # off the gradient, one outside Gamma's domain
    got = datafit._score_conjugate(a)
    want = tweedie_conjugate(a, data.y, power)
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
    fin = np.isfinite(want)
    np.testing.assert_allclose(got[fin], want[fin], rtol=1e-12, atol=1e-14)
    # the domain's edge is seen: a >= -y (Poisson), a <= 1 (Gamma), a >= 0 where y = 0
    assert np.isinf(want).any() == (power in (1.0, 2.0) or zeros)


def test_long_format_grouped_rows_are_kept_as_given():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((300, 4))
    y = rng.standard_normal(300)
    task = np.repeat([0, 1, 2], 100)
    data, _ = as_multitask_data(X, y, task)
    assert np.shares_memory(data.X, X)
    shuffled = np.concatenate([np.arange(0, 300, 2), np.arange(1, 300, 2)])
    other, _ = as_multitask_data(X[shuffled], y[shuffled], task[shuffled])
    assert not np.shares_memory(other.X, X)
    grouped = np.argsort(task[shuffled], kind="stable")  # the stacked rows: a stable grouping
    np.testing.assert_array_equal(other.X, X[shuffled][grouped])


def test_a_fit_on_grouped_rows_leaves_them_unchanged_and_matches_shuffled_rows():
    rng = np.random.default_rng(4)
    n = 600
    X = rng.standard_normal((n, 5))
    task = np.repeat([0, 1, 2], n // 3)
    y = rng.poisson(np.exp(0.3 * X[:, 0] + 0.2)).astype(float)
    w = rng.uniform(0.5, 2.0, n)
    X0, y0, w0 = X.copy(), y.copy(), w.copy()
    est = mt.L21Regressor(alpha=0.01, loss="poisson", tol=1e-10).fit(X, y, task,
                                                                      sample_weight=w)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
    np.testing.assert_array_equal(w, w0)
    perm = rng.permutation(n)
    other = mt.L21Regressor(alpha=0.01, loss="poisson", tol=1e-10).fit(
        X[perm], y[perm], task[perm], sample_weight=w[perm])
    np.testing.assert_allclose(est.coef_, other.coef_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(est.intercept_, other.intercept_, rtol=1e-7, atol=1e-9)
