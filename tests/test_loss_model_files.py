"""Model files of every loss: the regressors with each regression loss and the classifiers
with more than two classes round-trip and predict alike; the loss's own fitted state (the
Huber scales) and hyper-parameters are checked on loading like every other attribute
(tests/test_hardening_model_files.py: a tampered value is refused naming it)."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
from loss_cases import loss_tasks

import multitask as mt
from multitask.persistence import ModelFileError, load_model, save_model

LOSSES = ("poisson", "gamma", "tweedie", "huber", "quantile")
REGRESSORS = [(mt.L21Regressor, {"alpha": 0.05}), (mt.TraceNormRegressor, {"alpha": 0.1}),
              (mt.IndependentLassoRegressor, {"alpha": 0.02}),
              (mt.RobustMTLRegressor, {"alpha": 0.1, "lam": 0.5}),
              (mt.PooledRegressor, {})]


def _tasks(loss, sizes=(20, 26, 17), d=3, seed=0):
    return loss_tasks(loss, sizes, d, seed)


def _fit(est, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(*args)


@pytest.mark.parametrize("model,params", REGRESSORS, ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("loss", LOSSES)
def test_every_loss_round_trips(loss, model, params, tmp_path):
    Xs, ys = _tasks(loss)
    try:
        est = _fit(model(**params, loss=loss, power=1.3, quantile=0.6), Xs, ys)
    except ValueError as exc:  # a pair the library refuses, naming why
        assert "cannot fit" in str(exc)
        return
    back = load_model(save_model(est, tmp_path / "m.skops"))
    assert (back.loss, back.power, back.quantile) == (loss, 1.3, 0.6)
    for a, b in zip(back.predict(Xs), est.predict(Xs), strict=True):
        np.testing.assert_array_equal(a, b)
    assert back.score(Xs, ys) == est.score(Xs, ys)
    if loss == "huber":
        np.testing.assert_array_equal(back.scale_, est.scale_)


@pytest.mark.parametrize("model", [mt.L21Classifier, mt.TraceNormClassifier,
                                   mt.IndependentLassoClassifier, mt.PooledClassifier])
def test_more_than_two_classes_round_trip(model, tmp_path):
    rng = np.random.default_rng(1)
    Xs = [rng.standard_normal((30, 3)) for _ in range(3)]
    ys = [np.array(["a", "b", "c"])[rng.integers(0, 3, 30)] for _ in range(3)]
    ys[2] = np.where(ys[2] == "c", "a", ys[2])  # a task without one class
    est = _fit(model(0.01), Xs, ys)
    back = load_model(save_model(est, tmp_path / "m.skops"))
    np.testing.assert_array_equal(back.classes_, ["a", "b", "c"])
    for a, b in zip(back.predict_proba(Xs), est.predict_proba(Xs), strict=True):
        np.testing.assert_array_equal(a, b)
    if model is not mt.PooledClassifier:  # one model for all tasks: every class everywhere
        assert np.all(back.predict_proba(Xs)[2][:, 2] == 0.0)


@pytest.fixture(scope="module")
def huber_model():
    return _fit(mt.L21Regressor(0.05, loss="huber"), *_tasks("huber"))


@pytest.fixture(scope="module")
def poisson_model():
    return _fit(mt.L21Regressor(0.05, loss="poisson"), *_tasks("poisson"))


TAMPERED = [
    ("huber", "scale_", np.ones(5), r"scale_: .*shape \(5,\)"),
    ("huber", "scale_", np.full(3, np.nan), "scale_: holds NaN"),
    ("huber", "scale_", -np.ones(3), "scale_: must be >= 0"),
    ("huber", "scale_", np.ones(3).astype(str), "scale_: must hold floats"),
    ("huber", "scale_", None, "scale_: is missing"),
    ("huber", "loss", "squared", "scale_: is not an attribute of this configuration"),
    ("huber", "epsilon", 0.5, "'epsilon' parameter"),
    ("poisson", "loss", "huber", "scale_: is missing"),
    ("poisson", "loss", "bogus", "'loss' parameter"),
    ("poisson", "power", 5.0, "'power' parameter"),
    ("poisson", "scale_", np.ones(3), "scale_: is not an attribute of this configuration"),
]


@pytest.mark.parametrize("loss,attr,value,match", TAMPERED,
                         ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(TAMPERED)])
def test_tampered_loss_state_is_refused_by_name(loss, attr, value, match, huber_model,
                                                poisson_model, tmp_path):
    est = copy.deepcopy(huber_model if loss == "huber" else poisson_model)
    if value is None:
        delattr(est, attr)
    else:
        setattr(est, attr, value)
    path = save_model(est, tmp_path / "m.skops")
    with pytest.raises(ModelFileError, match=match):
        load_model(path)
