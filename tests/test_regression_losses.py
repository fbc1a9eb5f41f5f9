"""The regressors' ``loss=``: agreement with scikit-learn, predictions, scores, input checks,
weights, missing targets, warm starts, model files, scales and numerical robustness.

The optimum against cvxpy on every structure is ``tests/test_glm_losses.py``'s.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from loss_cases import loss_tasks
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import (
    GammaRegressor,
    HuberRegressor,
    PoissonRegressor,
    QuantileRegressor,
    TweedieRegressor,
)
from sklearn.metrics import d2_tweedie_score, r2_score

import multitask as mt
from multitask.data import as_multitask_data
from multitask.losses import Gamma, Huber, Pinball, Poisson, Tweedie, get_datafit
from multitask.persistence import load_model, save_model


def _one_task(seed=0, n=60, d=4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    w = 0.3 * rng.standard_normal(d)
    return rng, X, w


def _tasks(loss, seed=0, sizes=(30, 45, 25), d=4):
    return loss_tasks(loss, sizes, d, seed)


LOSSES = ("poisson", "gamma", "tweedie", "huber", "quantile")


# ----------------------------------------------------------------------------- scikit-learn
@pytest.mark.parametrize("loss,peer", [("poisson", PoissonRegressor), ("gamma", GammaRegressor),
                                       ("tweedie", TweedieRegressor)])
def test_one_task_is_scikit_learns_glm(loss, peer):
    """One task with the ridge penalty: scikit-learn's GLM with the same ``alpha`` (both are
    ``mean half deviance + (alpha / 2) ||w||^2``), the same D^2 score."""
    rng, X, w = _one_task()
    y = (rng.gamma(2.0, np.exp(X @ w) / 2.0) if loss == "gamma"
         else rng.poisson(np.exp(X @ w + 0.5)).astype(float))
    extra = {"power": 1.5, "link": "log"} if loss == "tweedie" else {}
    sk = peer(alpha=0.1, tol=1e-12, max_iter=10_000, **extra).fit(X, y)
    ours = mt.IndependentRidgeRegressor(0.1, loss=loss, power=1.5, tol=1e-12,
                                        max_iter=10_000).fit([X], [y])
    np.testing.assert_allclose(ours.coef_[0], sk.coef_, atol=1e-7)
    assert ours.intercept_[0] == pytest.approx(sk.intercept_, abs=1e-7)
    assert ours.score([X], [y]) == pytest.approx(sk.score(X, y), abs=1e-8)
    np.testing.assert_allclose(ours.predict([X])[0], sk.predict(X), rtol=1e-6)


def test_one_task_is_huber_regressor_with_its_scale():
    """HuberRegressor's ``alpha ||w||^2`` on a sum over rows is our ridge ``(alpha_l2 / 2)
    ||w||^2`` on the mean with ``alpha = 2 alpha_sk / n``; the same weights and scale."""
    rng, X, w = _one_task(1)
    y = X @ w + rng.standard_t(2, len(X))
    sk = HuberRegressor(alpha=0.5, epsilon=1.35, tol=1e-12, max_iter=10_000).fit(X, y)
    ours = mt.IndependentRidgeRegressor(2 * 0.5 / len(X), loss="huber", tol=1e-12,
                                        max_iter=100_000).fit([X], [y])

    def objective(w, b, sigma):  # HuberRegressor's
        u = np.abs(X @ w + b - y) / sigma
        h = np.where(u <= 1.35, u * u, 2 * 1.35 * u - 1.35**2)
        return np.sum(sigma + sigma * h) + 0.5 * np.sum(w * w)

    ours_f = objective(ours.coef_[0], ours.intercept_[0], ours.scale_[0])
    sk_f = objective(sk.coef_, sk.intercept_, sk.scale_)
    assert ours_f <= sk_f * (1 + 1e-10)  # scikit-learn's L-BFGS stops a little earlier
    assert ours_f == pytest.approx(sk_f, rel=1e-9)
    np.testing.assert_allclose(ours.coef_[0], sk.coef_, atol=1e-4)
    assert ours.scale_.shape == (1,)
    assert ours.scale_[0] == pytest.approx(sk.scale_, rel=1e-4)
    assert ours.score([X], [y]) == pytest.approx(r2_score(y, ours.predict([X])[0]))


@pytest.mark.parametrize("quantile", [0.3, 0.7])
def test_one_task_is_quantile_regressor(quantile):
    """QuantileRegressor's ``(1 / n) sum pinball + alpha ||w||_1``: the same ``alpha``."""
    rng, X, w = _one_task(2)
    y = X @ w + rng.standard_normal(len(X))
    sk = QuantileRegressor(alpha=0.05, quantile=quantile, solver="highs").fit(X, y)
    ours = mt.IndependentLassoRegressor(0.05, loss="quantile", quantile=quantile, tol=1e-10,
                                        max_iter=200_000).fit([X], [y])
    np.testing.assert_allclose(ours.coef_[0], sk.coef_, atol=1e-6)
    assert ours.intercept_[0] == pytest.approx(sk.intercept_, abs=1e-6)
    assert ours.converged_ and ours.certified_


# ----------------------------------------------------------------------------- predictions
@pytest.mark.parametrize("loss", ["poisson", "gamma", "tweedie"])
def test_log_link_predicts_the_mean_and_scores_d2(loss):
    Xs, ys = _tasks(loss)
    est = mt.L21Regressor(0.02, loss=loss).fit(Xs, ys)
    pred = est.predict(Xs)
    for t, X in enumerate(Xs):
        np.testing.assert_allclose(pred[t], np.exp(X @ est.coef_[t] + est.intercept_[t]))
    power = {"poisson": 1.0, "gamma": 2.0, "tweedie": 1.5}[loss]
    y, p = np.concatenate(ys), np.concatenate(pred)
    assert est.score(Xs, ys) == pytest.approx(d2_tweedie_score(y, p, power=power))
    assert 0.0 < est.score(Xs, ys) < 1.0


@pytest.mark.parametrize("loss", ["huber", "quantile"])
def test_identity_link_predicts_the_scores_and_scores_r2(loss):
    Xs, ys = _tasks(loss)
    est = mt.L21Regressor(0.02, loss=loss).fit(Xs, ys)
    pred = est.predict(Xs)
    for t, X in enumerate(Xs):
        np.testing.assert_allclose(pred[t], X @ est.coef_[t] + est.intercept_[t])
    assert est.score(Xs, ys) == pytest.approx(r2_score(np.concatenate(ys),
                                                       np.concatenate(pred)))


def test_shared_design_scores_average_over_the_tasks():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((50, 3))
    Y = rng.poisson(np.exp(X @ (0.3 * rng.standard_normal((3, 2))) + 0.5)).astype(float)
    est = mt.L21Regressor(0.01, loss="poisson").fit(X, Y)
    P = est.predict(X)
    assert P.shape == Y.shape and np.all(P > 0)
    expect = np.mean([d2_tweedie_score(Y[:, t], P[:, t], power=1.0) for t in range(2)])
    assert est.score(X, Y) == pytest.approx(expect)


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("loss,bad,match", [
    ("poisson", -1.0, r"poisson loss needs non-negative targets.*task 1"),
    ("tweedie", -0.5, r"tweedie loss needs non-negative targets.*task 1"),
    ("gamma", 0.0, r"gamma loss needs positive targets.*task 1"),
    ("gamma", -2.0, r"gamma loss needs positive targets.*task 1"),
])
def test_targets_outside_the_domain_are_refused_naming_the_task(loss, bad, match):
    Xs, ys = _tasks("gamma" if loss == "gamma" else "poisson")
    ys = [y.copy() for y in ys]
    ys[1][3] = bad
    before = [y.copy() for y in ys]
    with pytest.raises(ValueError, match=match):
        mt.L21Regressor(0.01, loss=loss).fit(Xs, ys)
    for y, y0 in zip(ys, before, strict=True):  # nothing modified in place
        np.testing.assert_array_equal(y, y0)


@pytest.mark.parametrize("value", [np.nan, np.inf])
@pytest.mark.parametrize("loss", LOSSES)
def test_nan_and_infinite_targets_are_refused_naming_the_task(loss, value):
    Xs, ys = _tasks("gamma" if loss == "gamma" else "poisson")
    ys = [y.copy() for y in ys]
    ys[2][0] = value
    with pytest.raises(ValueError, match=r"task 2|task '2'|task"):
        mt.L21Regressor(0.01, loss=loss).fit(Xs, ys)


def test_all_zero_counts_are_refused():
    Xs, ys = _tasks("poisson")
    with pytest.raises(ValueError, match="every target is 0"):
        mt.L21Regressor(0.01, loss="poisson").fit(Xs, [np.zeros_like(y) for y in ys])


@pytest.mark.parametrize("params,match", [
    ({"loss": "tweedie", "power": 2.5}, "power"),
    ({"loss": "tweedie", "power": 0.5}, "power"),
    ({"loss": "quantile", "quantile": 1.0}, "quantile"),
    ({"loss": "quantile", "quantile": 0.0}, "quantile"),
    ({"loss": "huber", "epsilon": 0.9}, "epsilon"),
    ({"loss": "huber", "epsilon": 1.0}, "least absolute deviation"),
    ({"loss": "logistic"}, "loss"),
])
def test_bad_loss_parameters_are_refused(params, match):
    Xs, ys = _tasks("huber")
    with pytest.raises(ValueError, match=match):
        mt.L21Regressor(0.01, **params).fit(Xs, ys)


@pytest.mark.parametrize("cls,args", [(Poisson, {}), (Tweedie, {"power": 3}),
                                      (Huber, {"epsilon": 0.5}), (Pinball, {"quantile": 2})])
def test_datafits_check_their_parameters(cls, args):
    data, _ = as_multitask_data([np.ones((3, 1))], [np.array([1.0, 2.0, -1.0])])
    with pytest.raises(ValueError):
        cls(data, True, **args)


def test_a_pair_no_solver_handles_is_refused_naming_model_loss_and_why():
    Xs, ys = _tasks("quantile")
    with pytest.raises(ValueError, match=r"MeanRegularizedRegressor cannot fit the 'quantile' "
                                         r"loss: .*gradient"):
        mt.MeanRegularizedRegressor(alpha=0.1, loss="quantile").fit(Xs, ys)
    with pytest.raises(ValueError, match=r"cannot fit the 'quantile' loss: .*alpha_l2 > 0"):
        mt.L21Regressor(0.1, loss="quantile", alpha_l2=0.1).fit(Xs, ys)
    with pytest.raises(ValueError, match=r"RobustMTLRegressor cannot fit the 'poisson' loss with "
                                         r"formulation='constrained'"):
        mt.RobustMTLRegressor(0.1, loss="poisson", formulation="constrained").fit(
            *_tasks("poisson"))


def test_dask_input_refuses_the_pinball_loss():
    est = mt.L21Regressor(0.05, loss="quantile")
    with pytest.raises(ValueError, match="not supported with Dask.*smooth losses"):
        est._check_distributed_loss()
    for loss in ("squared", "poisson", "gamma", "tweedie", "huber"):  # the smooth ones are
        mt.L21Regressor(0.05, loss=loss)._check_distributed_loss()


# ----------------------------------------------------------------------------- weights
@pytest.mark.parametrize("loss", LOSSES)
def test_integer_weights_are_repeated_rows(loss):
    Xs, ys = _tasks("gamma" if loss == "gamma" else "poisson" if loss != "huber" else loss)
    rng = np.random.default_rng(5)
    sw = [rng.integers(0, 3, len(y)).astype(float) for y in ys]
    for s in sw:
        s[:2] = 1.0
    rep_X = [np.repeat(X, s.astype(int), axis=0) for X, s in zip(Xs, sw, strict=True)]
    rep_y = [np.repeat(y, s.astype(int)) for y, s in zip(ys, sw, strict=True)]
    kw = {"loss": loss, "tol": 1e-10, "max_iter": 200_000}
    a = mt.L21Regressor(0.02, **kw).fit(Xs, ys, sample_weight=sw)
    b = mt.L21Regressor(0.02, **kw).fit(rep_X, rep_y)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-6)
    np.testing.assert_allclose(a.intercept_, b.intercept_, atol=1e-6)


@pytest.mark.parametrize("loss", ["poisson", "huber", "quantile"])
def test_missing_targets_are_left_out(loss):
    rng = np.random.default_rng(6)
    X = rng.standard_normal((40, 3))
    Y = rng.poisson(np.exp(X @ (0.3 * rng.standard_normal((3, 2))) + 0.5)).astype(float)
    Y[[1, 5, 7], 0] = np.nan
    Y[[2, 9], 1] = np.nan
    kw = {"loss": loss, "tol": 1e-10, "max_iter": 200_000}
    est = mt.L21Regressor(0.02, missing_targets="ignore", **kw).fit(X, Y)
    seen = [~np.isnan(Y[:, t]) for t in range(2)]
    ref = mt.L21Regressor(0.02, **kw).fit([X[s] for s in seen],
                                         [Y[s, t] for t, s in enumerate(seen)])
    np.testing.assert_allclose(est.coef_, ref.coef_, atol=1e-6)
    assert np.isfinite(est.score(X, Y))


# ----------------------------------------------------------------------------- warm starts
@pytest.mark.parametrize("loss", LOSSES)
def test_warm_start_resumes_from_the_solution(loss):
    Xs, ys = _tasks("gamma" if loss == "gamma" else "poisson" if loss != "huber" else loss)
    est = mt.L21Regressor(0.03, loss=loss, warm_start=True, tol=1e-8, max_iter=100_000)
    est.fit(Xs, ys)
    first, n_first = est.coef_.copy(), est.n_iter_
    est.fit(Xs, ys)
    np.testing.assert_allclose(est.coef_, first, atol=1e-6)
    assert est.n_iter_ <= max(n_first, 1)


@pytest.mark.parametrize("loss", LOSSES)
def test_alpha_max_zeroes_the_weights_and_default_grids_work(loss):
    Xs, ys = _tasks("gamma" if loss == "gamma" else "huber" if loss == "quantile" else loss)
    est = mt.L21Regressor(loss=loss)
    top = est.alpha_max(Xs, ys)
    assert np.isfinite(top) and top > 0
    assert not np.any(mt.L21Regressor(top * 1.001, loss=loss).fit(Xs, ys).coef_)
    assert np.any(mt.L21Regressor(top * 0.5, loss=loss).fit(Xs, ys).coef_)
    grid = est.default_grid(Xs, ys, n_alphas=4)
    assert grid["alpha"][0] == pytest.approx(top)


# ----------------------------------------------------------------------------- model files
@pytest.mark.parametrize("loss", LOSSES)
def test_model_files_keep_the_loss(loss, tmp_path):
    Xs, ys = _tasks("gamma" if loss == "gamma" else "poisson" if loss != "huber" else loss)
    est = mt.L21Regressor(0.02, loss=loss).fit(Xs, ys)
    path = save_model(est, tmp_path / "m.skops")
    back = load_model(path)
    assert back.loss == loss
    for a, b in zip(back.predict(Xs), est.predict(Xs), strict=True):
        np.testing.assert_array_equal(a, b)
    if loss == "huber":
        np.testing.assert_array_equal(back.scale_, est.scale_)
    else:
        assert not hasattr(back, "scale_")


def test_huber_scales_are_per_task():
    rng = np.random.default_rng(8)
    Xs = [rng.standard_normal((60, 3)) for _ in range(3)]
    ys = [X @ np.ones(3) + s * rng.standard_normal(60) for X, s in zip(Xs, (0.1, 1.0, 5.0),
                                                                     strict=True)]
    est = mt.IndependentRidgeRegressor(1e-3, loss="huber").fit(Xs, ys)
    assert est.scale_.shape == (3,)
    assert est.scale_[0] < est.scale_[1] < est.scale_[2]
    refit = mt.IndependentRidgeRegressor(1e-3).fit(Xs, ys)
    assert not hasattr(refit, "scale_")


# ----------------------------------------------------------------------------- numerics
@pytest.mark.parametrize("loss", ["poisson", "tweedie", "gamma"])
def test_large_counts_and_features_give_no_nan(loss):
    """Counts up to 1e6 and features of magnitude 1e3: the fit converges or warns, and every
    fitted number is finite."""
    rng = np.random.default_rng(9)
    Xs = [1e3 * rng.standard_normal((40, 3)) for _ in range(3)]
    ys = [np.minimum(rng.poisson(np.exp(10 + 1e-3 * X @ np.ones(3))), 1e6).astype(float) + 1.0
          for X in Xs]
    ys[0][0] = 1e6
    for solver in ("auto", "fista"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            with np.errstate(all="raise"):
                est = mt.L21Regressor(1e-3, loss=loss, solver=solver, max_iter=3000).fit(Xs, ys)
        assert np.all(np.isfinite(est.coef_)) and np.all(np.isfinite(est.intercept_))
        assert np.isfinite(est.optimality_)
        assert all(np.all(np.isfinite(p)) for p in est.predict(Xs))


def test_overflowing_scores_are_rejected_by_the_line_search():
    """A loss whose exponential overflows at the trial point: the value is inf (no warning),
    the step is rejected, the fit stays finite."""
    data, _ = as_multitask_data([np.array([[1.0], [2.0]])], [np.array([1.0, 3.0])])
    df = get_datafit("poisson", data, True)
    with np.errstate(all="raise"):
        vals, d1 = df._dloss(np.array([800.0, 1.0]))
    assert np.isinf(vals[0]) and np.isfinite(vals[1])
    assert df.value(np.array([[400.0]]), np.array([0.0])) == np.inf


def test_a_task_of_zero_counts_gets_a_finite_floor():
    Xs, ys = _tasks("poisson")
    ys = [y.copy() for y in ys]
    ys[1][:] = 0.0
    est = mt.L21Regressor(0.05, loss="poisson").fit(Xs, ys)
    assert np.all(np.isfinite(est.intercept_))
    mean = np.mean(np.concatenate(ys))
    assert np.all(est.predict(Xs)[1] < 1e-6 * mean)
    assert est.converged_


def test_unbounded_losses_refuse_majorization():
    Xs, ys = _tasks("poisson")
    with pytest.raises(ValueError, match="curvature_bound"):
        mt.TraceNormRegressor(0.1, loss="poisson", solver="mm").fit(Xs, ys)
    assert Gamma.curvature(None) == np.inf  # type: ignore[arg-type]
