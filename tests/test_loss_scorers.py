"""The default scorer of each regression loss in model selection: minus the mean deviance
(Poisson, Gamma, Tweedie at the model's power), minus the pinball loss at the model's
quantile, minus the mean absolute error for the Huber loss; by name, with weights and missing
targets, pooled over leave-one-out folds, and through MultiTaskCV."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from loss_cases import loss_tasks
from sklearn import metrics as skm

import multitask as mt
from multitask.model_selection import (
    LossScorer,
    MultiTaskCV,
    get_scorer,
    nmse_scorer,
    pooled_metric,
)

LOSSES = ("poisson", "gamma", "tweedie", "huber", "quantile")
POWER, QUANTILE = 1.3, 0.8


def _tasks(loss, sizes=(24, 30, 20), d=3, seed=0):
    return loss_tasks(loss, sizes, d, seed)


def _model(loss, alpha=0.02, **kw):
    return mt.L21Regressor(alpha, loss=loss, power=POWER, quantile=QUANTILE, **kw)


def _expected(loss, y, pred, w=None):
    """The pooled mean loss by scikit-learn."""
    if loss == "poisson":
        return skm.mean_poisson_deviance(y, pred, sample_weight=w)
    if loss == "gamma":
        return skm.mean_gamma_deviance(y, pred, sample_weight=w)
    if loss == "tweedie":
        return skm.mean_tweedie_deviance(y, pred, power=POWER, sample_weight=w)
    if loss == "quantile":
        return skm.mean_pinball_loss(y, pred, alpha=QUANTILE, sample_weight=w)
    return skm.mean_absolute_error(y, pred, sample_weight=w)


@pytest.mark.parametrize("loss", LOSSES)
def test_the_default_scorer_is_the_losss_mean_loss(loss):
    Xs, ys = _tasks(loss)
    est = _model(loss).fit(Xs, ys)
    scorer = get_scorer(None, _model(loss))
    assert isinstance(scorer, LossScorer)
    pred = np.concatenate(est.predict(Xs))
    value = scorer(est, Xs, ys)
    assert value == pytest.approx(-_expected(loss, np.concatenate(ys), pred), rel=1e-12)
    # leave-one-out folds pool the out-of-fold predictions with the same measure
    method, metric = pooled_metric(scorer)
    assert method == "predict"
    assert metric(ys, est.predict(Xs), None) == pytest.approx(value, rel=1e-12)


def test_the_squared_loss_keeps_nmse():
    assert get_scorer(None, mt.L21Regressor()) is nmse_scorer
    assert get_scorer(None, mt.L21Regressor(loss="squared")) is nmse_scorer


@pytest.mark.parametrize("name,loss", [("poisson_deviance", "poisson"),
                                       ("neg_mean_gamma_deviance", "gamma"),
                                       ("tweedie_deviance", "tweedie"),
                                       ("pinball_loss", "quantile"),
                                       ("neg_mean_absolute_error", "huber"),
                                       ("mae", "huber")])
def test_loss_scorers_by_name_bind_the_models_parameter(name, loss):
    Xs, ys = _tasks(loss)
    est = _model(loss).fit(Xs, ys)
    scorer = get_scorer(name, _model(loss))
    pred = np.concatenate(est.predict(Xs))
    assert scorer(est, Xs, ys) == pytest.approx(-_expected(loss, np.concatenate(ys), pred),
                                                rel=1e-12)


@pytest.mark.parametrize("loss", ["poisson", "quantile"])
def test_weights_and_missing_targets(loss):
    Xs, ys = _tasks(loss)
    X = np.vstack(Xs[:2])[:20]
    Y = np.column_stack([ys[0][:20], ys[1][:20]])
    rng = np.random.default_rng(1)
    sw = rng.integers(1, 4, 20).astype(float)
    Ym = Y.copy()
    Ym[[2, 5], 0] = np.nan
    est = _model(loss, missing_targets="ignore").fit(X, Ym)
    scorer = get_scorer(None, est)
    pred = est.predict(X)
    seen = ~np.isnan(Ym)
    W = np.repeat(sw[:, None], 2, axis=1)
    want = _expected(loss, Y[seen], pred[seen], W[seen])
    before = Ym.copy()
    assert scorer(est, X, Ym, sample_weight=sw) == pytest.approx(-want, rel=1e-12)
    np.testing.assert_array_equal(Ym, before)


def test_a_log_link_prediction_that_underflows_is_a_positive_mean():
    Xs, ys = _tasks("poisson")
    est = _model("poisson").fit(Xs, ys)
    est.intercept_ = est.intercept_ - 800.0  # exp(z) underflows to 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value = get_scorer(None, est)(est, Xs, ys)
    assert value < -1e3  # the worst score (-inf where the deviance overflows), not an error


@pytest.mark.parametrize("loss", LOSSES)
def test_multitask_cv_selects_on_the_losss_scorer(loss):
    Xs, ys = _tasks(loss)
    cv = MultiTaskCV(_model(loss, alpha=1.0, tol=1e-5), cv=2, n_alphas=3).fit(Xs, ys)
    assert cv.selection_ == "kfold"
    assert np.isfinite(cv.best_score_) and cv.best_score_ < 0
    assert np.all(np.isfinite(cv.cv_results_["mean_test_score"]))
    best = np.nanmax(cv.cv_results_["mean_test_score"])
    assert cv.best_score_ == best


def test_leave_one_out_selection_pools_the_deviance():
    Xs, ys = _tasks("poisson", sizes=(6, 7, 5))
    cv = MultiTaskCV(_model("poisson", tol=1e-5), n_alphas=3).fit(Xs, ys)
    assert cv.selection_ == "loo"
    assert np.isfinite(cv.best_score_) and cv.best_score_ < 0
