"""Fits with row weights multiplied by a common factor give the model of the weights themselves,
at every scale of the float range (the data layer rescales weights outside [2^-64, 2^64] by a
power of two)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from multitask import (
    IndependentRidgeRegressor,
    L21Classifier,
    L21Regressor,
    MeanRegularizedRegressor,
    PooledRegressor,
)

MODELS = [L21Regressor, IndependentRidgeRegressor, MeanRegularizedRegressor, PooledRegressor,
          L21Classifier]


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    task = np.repeat([0, 1, 2], 20)
    y = X @ rng.normal(size=4) + rng.normal(size=60)
    return X, y, task, rng.integers(1, 4, 60).astype(float)


@pytest.mark.parametrize("cls", MODELS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("factor", [2.0 ** -1074, 1e-300, 2.0 ** -70, 2.0 ** 70, 1e300,
                                    2.0 ** 1020])
def test_a_common_factor_of_the_weights_changes_no_model(cls, factor):
    """Weights times 2^-1074 gave another model (products with the data underflowed), weights
    times 2^1020 no model (SVD or eigenvalues did not converge, or NaN)."""
    X, y, task, w = _data()
    target = (y > 0).astype(int) if cls is L21Classifier else y
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = cls().fit(X, target, task, sample_weight=w)
        got = cls().fit(X, target, task, sample_weight=w * factor)
    np.testing.assert_allclose(got.coef_, ref.coef_, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got.intercept_, ref.intercept_, rtol=1e-9, atol=1e-9)


def test_weights_between_tasks_keep_their_ratio_for_the_pooled_model():
    X, y, task, _ = _data()
    w = np.where(task == 0, 3.0, 1.0)
    ref = PooledRegressor().fit(X, y, task, sample_weight=w)
    got = PooledRegressor().fit(X, y, task, sample_weight=w * 2.0 ** -1074)
    np.testing.assert_array_equal(got.coef_, ref.coef_)


def test_weights_whose_ratio_leaves_the_float_range_are_refused():
    X, y, task, _ = _data()
    w = np.where(task == 1, 1e-320, 1e300)
    with pytest.raises(ValueError, match="task 1 is more than 2\\^1074 times below"):
        L21Regressor().fit(X, y, task, sample_weight=w)
