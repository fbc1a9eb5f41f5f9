"""fit_new_tasks with the regression losses beyond least squares (Poisson, Gamma, Tweedie,
Huber, the pinball loss): the new task's problem is the fit's per-task problem (independent
models: the new task equals a fit on its rows alone), the fitted tasks are untouched, the
Huber scales are appended, weights are repeated rows, missing targets are left out, every
strength rule runs, and the model files keep the new tasks."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
from loss_cases import loss_targets

import multitask as mt
from multitask.data import as_multitask_data
from multitask.losses import get_datafit
from multitask.persistence import load_model, save_model
from multitask.solvers.new_tasks import loss_values

LOSSES = ("poisson", "gamma", "tweedie", "huber", "quantile")
POWER, QUANTILE = 1.4, 0.7


def _tasks(loss, sizes=(30, 45, 25, 22), d=4, seed=0):
    rng = np.random.default_rng(seed)
    W = 0.3 * rng.standard_normal((d, 2)) @ rng.standard_normal((2, len(sizes)))
    Xs = [rng.standard_normal((n, d)) for n in sizes]
    eta = [X @ W[:, t] + 0.4 for t, X in enumerate(Xs)]
    ys = loss_targets(loss, eta, rng)
    return Xs, ys


def _kw(loss, **extra):
    return {"loss": loss, "power": POWER, "quantile": QUANTILE, **extra}


@pytest.mark.parametrize("model,alpha", [(mt.IndependentRidgeRegressor, 0.05),
                                         (mt.IndependentLassoRegressor, 0.02)])
@pytest.mark.parametrize("loss", LOSSES)
def test_a_new_task_of_an_independent_model_is_its_own_fit(loss, model, alpha):
    """The prior of an independent model is its penalty: at strength 1 a new task solves
    the problem ``fit`` solves for it alone."""
    Xs, ys = _tasks(loss)
    kw = _kw(loss, tol=1e-8, max_iter=100_000)
    est = model(alpha, **kw).fit(Xs[:3], ys[:3])
    before = (est.coef_.copy(), est.intercept_.copy())
    est.fit_new_tasks(Xs[3:], ys[3:], strength="fitted")
    alone = model(alpha, **kw).fit(Xs[3:], ys[3:])
    np.testing.assert_array_equal(est.coef_[:3], before[0])  # the fitted tasks: the same bits
    np.testing.assert_array_equal(est.intercept_[:3], before[1])
    # both certified to 1e-8 (a flat optimum: the weights agree to about its square root)
    np.testing.assert_allclose(est.coef_[3], alone.coef_[0], atol=5e-5)
    assert est.intercept_[3] == pytest.approx(alone.intercept_[0], abs=5e-5)
    if loss == "huber":
        assert est.scale_.shape == (4,)
        assert est.scale_[3] == pytest.approx(alone.scale_[0], rel=1e-5)
    pred = est.predict(Xs)
    np.testing.assert_allclose(pred[3], alone.predict(Xs[3:])[0], rtol=1e-4)


STRUCTURED = [(mt.L21Regressor, {"alpha": 0.05}), (mt.TraceNormRegressor, {"alpha": 0.1}),
              (mt.RobustMTLRegressor, {"alpha": 0.1, "lam": 0.5}),
              (mt.ClusteredMTLRegressor, {"alpha": 0.05}), (mt.PooledRegressor, {})]


@pytest.mark.parametrize("model,params", STRUCTURED, ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("loss", LOSSES)
def test_structured_models_learn_new_tasks(loss, model, params):
    Xs, ys = _tasks(loss)
    try:
        est = model(**params, **_kw(loss)).fit(Xs[:3], ys[:3])
    except ValueError as exc:  # a (model, loss) pair the library refuses, naming why
        assert "cannot fit" in str(exc)
        return
    coef, scale = est.coef_.copy(), getattr(est, "scale_", None)
    X_new, y_new = [X.copy() for X in Xs[3:]], [y.copy() for y in ys[3:]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no solver left unconverged on the new task
        est.fit_new_tasks(X_new, y_new)
    for a, b in zip(X_new + y_new, Xs[3:] + ys[3:], strict=True):
        np.testing.assert_array_equal(a, b)  # inputs unchanged
    np.testing.assert_array_equal(est.coef_[:3], coef)
    assert est.coef_.shape == (4, 4) and np.all(np.isfinite(est.coef_))
    assert np.isfinite(est.new_task_strength_[0]) or model is mt.PooledRegressor
    mean = est.predict(Xs)[3]
    assert np.all(np.isfinite(mean))
    if loss in ("poisson", "gamma", "tweedie"):
        assert np.all(mean > 0)
    if loss == "huber":
        assert est.scale_.shape == (4,) and np.all(est.scale_ > 0)
        np.testing.assert_array_equal(est.scale_[:3], scale)
    else:
        assert not hasattr(est, "scale_")


@pytest.mark.parametrize("loss", LOSSES)
def test_every_strength_rule_runs(loss):
    Xs, ys = _tasks(loss)
    # the pinball loss's cross-validation refits 45 problems: fewer rows keep it short
    rows = 8 if loss == "quantile" else len(ys[3])
    fitted = mt.L21Regressor(0.05, **_kw(loss)).fit(Xs[:3], ys[:3])
    grid = {}
    for strength in ("auto", "scaled", "cv", 3.0):
        est = copy.deepcopy(fitted)
        est.fit_new_tasks(Xs[3][:rows], ys[3][:rows], strength=strength)
        assert np.all(np.isfinite(est.coef_[3]))
        grid[strength] = est.new_task_strength_[0]
    assert grid["auto"] == grid["scaled"]  # no closed form: not cross-validated by "auto"
    assert grid[3.0] == 3.0
    assert np.isfinite(grid["cv"]) and grid["cv"] > 0
    assert fitted.coef_.shape == (3, 4)


@pytest.mark.parametrize("loss", LOSSES)
def test_integer_weights_are_repeated_rows(loss):
    Xs, ys = _tasks(loss)
    rng = np.random.default_rng(3)
    sw = rng.integers(1, 4, len(ys[3])).astype(float)
    kw = _kw(loss, tol=1e-9, max_iter=100_000)
    a = mt.IndependentRidgeRegressor(0.05, **kw).fit(Xs[:3], ys[:3])
    b = mt.IndependentRidgeRegressor(0.05, **kw).fit(Xs[:3], ys[:3])
    a.fit_new_tasks(Xs[3], ys[3], sample_weight=sw, strength=2.0)
    b.fit_new_tasks(np.repeat(Xs[3], sw.astype(int), axis=0), np.repeat(ys[3], sw.astype(int)),
                    strength=2.0)
    np.testing.assert_allclose(a.coef_[3], b.coef_[3], atol=1e-6)
    assert a.intercept_[3] == pytest.approx(b.intercept_[3], abs=1e-6)


@pytest.mark.parametrize("loss", ["poisson", "huber", "quantile"])
def test_missing_targets_are_left_out(loss):
    Xs, ys = _tasks(loss, sizes=(30, 30, 30, 30))
    X = Xs[0]
    Y = np.column_stack(ys)
    Y_new = Y[:, 2:].copy()
    Y_new[[1, 4, 9], 0] = np.nan
    kw = _kw(loss, tol=1e-9, max_iter=100_000, missing_targets="ignore")
    est = mt.IndependentRidgeRegressor(0.05, **kw).fit(X, Y[:, :2])
    est.fit_new_tasks(X, Y_new, strength="fitted")
    seen = ~np.isnan(Y_new[:, 0])
    alone = mt.IndependentRidgeRegressor(0.05, **kw).fit(X[seen], Y_new[seen, 0])
    np.testing.assert_allclose(est.coef_[2], alone.coef_[0], atol=1e-6)


@pytest.mark.parametrize("loss", LOSSES)
def test_model_files_keep_the_new_tasks(loss, tmp_path):
    Xs, ys = _tasks(loss)
    est = mt.L21Regressor(0.05, **_kw(loss)).fit(Xs[:3], ys[:3]).fit_new_tasks(Xs[3:], ys[3:])
    back = load_model(save_model(est, tmp_path / "m.skops"))
    for a, b in zip(back.predict(Xs), est.predict(Xs), strict=True):
        np.testing.assert_array_equal(a, b)
    if loss == "huber":
        np.testing.assert_array_equal(back.scale_, est.scale_)


def test_the_pooled_huber_model_has_one_scale():
    Xs, ys = _tasks("huber")
    est = mt.PooledRegressor(loss="huber").fit(Xs[:3], ys[:3])
    assert est.scale_.shape == (3,) and np.ptp(est.scale_) == 0.0
    pooled = mt.IndependentRidgeRegressor(1e-3, loss="huber").fit(np.vstack(Xs[:3]),
                                                                  np.concatenate(ys[:3]))
    assert est.scale_[0] == pytest.approx(pooled.scale_[0], rel=1e-4)


@pytest.mark.parametrize("loss", ["poisson", "gamma", "tweedie"])
def test_held_out_losses_are_the_datafits(loss):
    """The held-out losses of strength='cv' are the datafit's per-row losses."""
    Xs, ys = _tasks(loss)
    data, _ = as_multitask_data(Xs[:1], ys[:1])
    fit = get_datafit(loss, data, True, power=POWER) if loss == "tweedie" else get_datafit(
        loss, data, True)
    z = np.random.default_rng(5).normal(size=len(ys[0]))
    np.testing.assert_allclose(loss_values(loss, ys[0], z, power=POWER),
                               fit.score_derivatives(z)[0], rtol=1e-12, atol=1e-300)
    r = ys[0] - z
    np.testing.assert_allclose(loss_values("quantile", ys[0], z, quantile=0.3),
                               np.maximum(0.3 * r, -0.7 * r))
