"""alpha_max, default grids, regularization paths, warm starts, row weights and missing targets
for every loss: every regressor with each regression loss (or the refusal ``fit`` gives, with
the same message), and the classifiers with more than two classes."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from loss_cases import loss_tasks

import multitask as mt
from multitask.model_selection import regularization_path

LOSSES = ("poisson", "gamma", "tweedie", "huber", "quantile")
REGRESSORS = sorted(n for n in mt.__all__ if n.endswith("Regressor") and n != "MultiTaskRegressor")
#: Norm models whose coef_ is all zero from alpha_max up (the sparse + low-rank model keeps
#: its low-rank part, a ball, at any alpha).
ZERO_AT_TOP = {"CappedL1Regressor", "CappedTraceRegressor", "IndependentLassoRegressor",
               "L21Regressor", "RobustMTLRegressor", "TraceNormRegressor"}


def _tasks(loss, sizes=(20, 26, 17), d=3, seed=0):
    return loss_tasks(loss, sizes, d, seed)


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


@pytest.mark.parametrize("name", REGRESSORS)
@pytest.mark.parametrize("loss", LOSSES)
def test_alpha_max_and_the_default_grid(loss, name):
    Xs, ys = _tasks(loss)
    model = getattr(mt, name)
    try:
        _quiet(model(loss=loss, max_iter=50).fit, Xs, ys)
    except ValueError as exc:  # a pair the model refuses: its grid says the same
        assert f"cannot fit the {loss!r} loss" in str(exc)
        with pytest.raises(ValueError, match=f"{name} cannot fit the {loss!r} loss"):
            model(loss=loss).default_grid(Xs, ys)
        return
    grid = model(loss=loss).default_grid(Xs, ys, n_alphas=4)
    first, values = next(iter(grid.items()))
    for v in grid.values():
        assert np.all(np.isfinite(v)) and np.all(v > 0)
    top = model(loss=loss).alpha_max(Xs, ys)
    assert top > 0
    if np.isfinite(top) and first == "alpha":
        assert values[0] == pytest.approx(top) or name == "RobustMTLRegressor"
        if name in ZERO_AT_TOP:
            est = _quiet(model(loss=loss, alpha=1.001 * top).fit, Xs, ys)
            assert not np.any(est.coef_)
            est = _quiet(model(loss=loss, alpha=0.5 * top).fit, Xs, ys)
            assert np.any(est.coef_)


@pytest.mark.parametrize("loss", LOSSES)
def test_a_warm_started_path_is_the_cold_fits(loss):
    Xs, ys = _tasks(loss)
    kw = {"loss": loss, "tol": 1e-9, "max_iter": 100_000}
    path = _quiet(regularization_path, mt.L21Regressor(**kw), Xs, ys, n_alphas=4)
    assert path.param == "alpha" and np.all(np.diff(path.grid) < 0)
    if loss != "quantile":  # the pinball loss is flat: at alpha_max zero is one optimum of many
        assert not np.any(path.coefs[0])
    for alpha, coef, b in zip(path.grid[1:], path.coefs[1:], path.intercepts[1:], strict=True):
        cold = _quiet(mt.L21Regressor(alpha, **kw).fit, Xs, ys)
        np.testing.assert_allclose(coef, cold.coef_, atol=2e-5)
        np.testing.assert_allclose(b, cold.intercept_, atol=2e-5)


@pytest.mark.parametrize("loss", LOSSES)
def test_warm_start_from_another_strength(loss):
    Xs, ys = _tasks(loss)
    kw = {"loss": loss, "tol": 1e-9, "max_iter": 100_000}
    est = _quiet(mt.TraceNormRegressor(0.05, warm_start=True, **kw).fit, Xs, ys)
    est.set_params(alpha=0.02)
    _quiet(est.fit, Xs, ys)
    cold = _quiet(mt.TraceNormRegressor(0.02, **kw).fit, Xs, ys)
    np.testing.assert_allclose(est.coef_, cold.coef_, atol=2e-5)


# ----------------------------------------------------------------------------- weights
@pytest.mark.parametrize("loss", LOSSES)
def test_weights_per_row_and_task_of_a_shared_design(loss):
    """``(n, m)`` weights of a shared design: a zero drops the pair from its task only,
    integers repeat it (the per-task lists of the same rows as reference)."""
    Xs, ys = _tasks(loss, sizes=(24, 24))
    X, Y = Xs[0], np.column_stack(ys)
    rng = np.random.default_rng(2)
    sw = rng.integers(0, 3, Y.shape).astype(float)
    sw[:3] = 1.0
    kw = {"loss": loss, "tol": 1e-9, "max_iter": 100_000}
    a = _quiet(mt.L21Regressor(0.02, **kw).fit, X, Y, sample_weight=sw)
    reps = [sw[:, t].astype(int) for t in range(2)]
    b = _quiet(mt.L21Regressor(0.02, **kw).fit, [np.repeat(X, r, axis=0) for r in reps],
               [np.repeat(Y[:, t], r) for t, r in enumerate(reps)])
    np.testing.assert_allclose(a.coef_, b.coef_, atol=2e-6)
    np.testing.assert_allclose(a.intercept_, b.intercept_, atol=2e-6)
    # the weights also weigh alpha_max and the grid
    assert mt.L21Regressor(**kw).alpha_max(X, Y, sample_weight=sw) == pytest.approx(
        mt.L21Regressor(**kw).alpha_max([np.repeat(X, r, axis=0) for r in reps],
                                        [np.repeat(Y[:, t], r) for t, r in enumerate(reps)]),
        rel=1e-10)


@pytest.mark.parametrize("loss", ["gamma", "tweedie"])
def test_missing_targets_are_left_out(loss):
    Xs, ys = _tasks(loss, sizes=(30, 30))
    X, Y = Xs[0], np.column_stack(ys)
    Y[[1, 5, 7], 0] = np.nan
    kw = {"loss": loss, "tol": 1e-9, "max_iter": 100_000}
    est = _quiet(mt.L21Regressor(0.02, missing_targets="ignore", **kw).fit, X, Y)
    seen = [~np.isnan(Y[:, t]) for t in range(2)]
    ref = _quiet(mt.L21Regressor(0.02, **kw).fit, [X[s] for s in seen],
                 [Y[s, t] for t, s in enumerate(seen)])
    np.testing.assert_allclose(est.coef_, ref.coef_, atol=1e-6)
    assert np.isfinite(est.score(X, Y))
    assert mt.L21Regressor(missing_targets="ignore", **kw).alpha_max(X, Y) == pytest.approx(
        mt.L21Regressor(**kw).alpha_max([X[s] for s in seen],
                                        [Y[s, t] for t, s in enumerate(seen)]), rel=1e-10)


# ----------------------------------------------------------------------------- classes
def _classes(seed=1):
    rng = np.random.default_rng(seed)
    Xs = [rng.standard_normal((30, 3)) for _ in range(3)]
    ys = [np.array(["a", "b", "c"])[rng.integers(0, 3, 30)] for _ in range(3)]
    ys[2] = np.where(ys[2] == "c", "a", ys[2])
    return Xs, ys


@pytest.mark.parametrize("model", [mt.L21Classifier, mt.IndependentLassoClassifier,
                                   mt.TraceNormClassifier])
def test_more_than_two_classes_alpha_max_grid_and_path(model):
    Xs, ys = _classes()
    top = model().alpha_max(Xs, ys)
    assert np.isfinite(top) and top > 0
    assert not np.any(_quiet(model(1.001 * top).fit, Xs, ys).coef_)
    assert np.any(_quiet(model(0.5 * top).fit, Xs, ys).coef_)
    grid = model().default_grid(Xs, ys, n_alphas=3)
    assert grid["alpha"][0] == pytest.approx(top)
    path = _quiet(regularization_path, model(tol=1e-8), Xs, ys, n_alphas=3)
    assert path.coefs.shape == (3, 3, 3, 3)  # values, tasks, classes, features
    cold = _quiet(model(path.grid[-1], tol=1e-8).fit, Xs, ys)
    np.testing.assert_allclose(path.coefs[-1], cold.coef_, atol=1e-4)
