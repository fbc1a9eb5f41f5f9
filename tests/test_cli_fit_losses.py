"""``multitask fit`` / ``predict`` with every loss: --loss (and --power, --epsilon,
--quantile), --exposure, and files with more than two classes, end to end on small files."""

from __future__ import annotations

import numpy as np
import pytest

import multitask
from multitask.cli import main
from multitask.cli_fit import load_model

pd = pytest.importorskip("pandas")

FEATURES = ["--features", "x1", "x2", "x3"]


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    rng = np.random.default_rng(0)
    n = 150
    task = np.repeat(["north", "south", "west"], n // 3)
    X = rng.standard_normal((n, 3))
    expo = rng.uniform(0.3, 1.0, n)
    df = pd.DataFrame(X, columns=["x1", "x2", "x3"])
    df["region"] = task
    df["years"] = expo
    df["claims"] = rng.poisson(expo * np.exp(0.4 * X[:, 0]))
    df["amount"] = rng.gamma(2.0, np.exp(0.3 * X[:, 1]))
    df["price"] = X @ [0.6, -0.3, 0.1] + rng.standard_t(2, n)
    df["vowel"] = np.array(["a", "e", "i", "o"])[rng.integers(0, 4, n)]
    path = tmp_path_factory.mktemp("losses") / "data.csv"
    df.to_csv(path, index=False)
    return path


def _fit(path, tmp_path, *args, model="L21Regressor", param="alpha=0.05"):
    out = tmp_path / "m.skops"
    argv = ["fit", "--input", str(path), "--task", "region", *FEATURES, "--model", model,
            "--model-file", str(out), "--quiet", *args]
    if param is not None and "--cv" not in args:
        argv += ["--param", param]
    return main(argv), out


def _predict(path, model_file, tmp_path, *args):
    out = tmp_path / "p.csv"
    code = main(["predict", "--model-file", str(model_file), "--input", str(path),
                 "--output", str(out), *args])
    return code, (pd.read_csv(out) if code == 0 else None)


def _by_hand(path, **params):
    """The same model fitted in Python on the long-format file."""
    df = pd.read_csv(path)
    X = df[["x1", "x2", "x3"]].to_numpy()
    return df, X, df["region"].to_numpy()


@pytest.mark.parametrize("target, args, params", [
    ("amount", ["--loss", "gamma"], {"loss": "gamma"}),
    ("amount", ["--loss", "tweedie", "--power", "1.3"], {"loss": "tweedie", "power": 1.3}),
    ("price", ["--loss", "huber", "--epsilon", "1.6"], {"loss": "huber", "epsilon": 1.6}),
    ("price", ["--loss", "quantile", "--quantile", "0.8"], {"loss": "quantile",
                                                             "quantile": 0.8}),
    ("claims", ["--loss", "poisson"], {"loss": "poisson"}),
    ("price", ["--param", "loss=huber"], {"loss": "huber"}),
])
def test_every_regression_loss_fits_and_predicts_as_in_python(data_file, tmp_path, capsys,
                                                              target, args, params):
    code, model_file = _fit(data_file, tmp_path, "--target", target, *args)
    assert code == 0, capsys.readouterr().err
    assert f"with the {params['loss']} loss" in capsys.readouterr().out
    bundle = load_model(model_file)
    assert bundle["loss"] == params["loss"] and bundle["exposure"] is None
    for k, v in params.items():
        assert getattr(bundle["model"], k) == v
    code, pred = _predict(data_file, model_file, tmp_path)
    assert code == 0
    df, X, task = _by_hand(data_file)
    est = multitask.L21Regressor(alpha=0.05, **params).fit(X, df[target].to_numpy(), task)
    assert np.allclose(pred["prediction"], est.predict(X, task), rtol=1e-6, atol=1e-9)
    if params["loss"] in ("gamma", "tweedie", "poisson"):
        assert (pred["prediction"] > 0).all()  # the mean through the log link


def test_an_exposure_fits_the_rate_and_predicts_counts(data_file, tmp_path, capsys):
    code, model_file = _fit(data_file, tmp_path, "--target", "claims", "--loss", "poisson",
                            "--exposure", "years")
    assert code == 0, capsys.readouterr().err
    assert "the rate per unit of 'years', weighted by it" in capsys.readouterr().out
    bundle = load_model(model_file)
    assert bundle["exposure"] == "years"
    df, X, task = _by_hand(data_file)
    e = df["years"].to_numpy()
    est = multitask.L21Regressor(alpha=0.05, loss="poisson").fit(
        X, df["claims"].to_numpy() / e, task, sample_weight=e)
    assert np.allclose(bundle["model"].coef_, est.coef_, rtol=1e-6, atol=1e-10)
    code, pred = _predict(data_file, model_file, tmp_path)
    assert code == 0
    rate = est.predict(X, task)
    assert np.allclose(pred["prediction_rate"], rate, rtol=1e-6)
    assert np.allclose(pred["prediction"], rate * e, rtol=1e-6)
    # the exposure column is not a feature: the model has the three features only
    assert bundle["features"] == ["x1", "x2", "x3"]


def test_an_exposure_with_default_features_leaves_the_column_out(tmp_path, capsys):
    rng = np.random.default_rng(1)
    df = pd.DataFrame(rng.standard_normal((60, 2)), columns=["u", "v"])
    df["g"] = np.repeat(["a", "b"], 30)
    df["t"] = rng.uniform(0.5, 2, 60)
    df["n"] = rng.poisson(df["t"])
    df.to_csv(tmp_path / "d.csv", index=False)
    assert main(["fit", "--input", str(tmp_path / "d.csv"), "--target", "n", "--task", "g",
                 "--exposure", "t", "--loss", "poisson", "--model", "IndependentRidgeRegressor",
                 "--model-file", str(tmp_path / "m.skops")]) == 0
    assert load_model(tmp_path / "m.skops")["features"] == ["u", "v"]


def test_predict_needs_the_exposure_column(data_file, tmp_path, capsys):
    code, model_file = _fit(data_file, tmp_path, "--target", "claims", "--loss", "poisson",
                            "--exposure", "years")
    assert code == 0
    df = pd.read_csv(data_file).drop(columns=["years"])
    df.to_csv(tmp_path / "new.csv", index=False)
    capsys.readouterr()
    code, _ = _predict(tmp_path / "new.csv", model_file, tmp_path)
    assert code == 2
    err = capsys.readouterr().err
    assert "exposure column 'years' not found" in err and "a column of 1 gives the rates" in err


def test_more_than_two_classes_fit_and_give_one_probability_per_class(data_file, tmp_path,
                                                                      capsys):
    code, model_file = _fit(data_file, tmp_path, "--target", "vowel", model="L21Classifier")
    assert code == 0, capsys.readouterr().err
    code, pred = _predict(data_file, model_file, tmp_path, "--proba")
    assert code == 0
    cols = [f"probability_{c}" for c in "aeio"]
    assert list(pred.columns[-5:]) == ["prediction", *cols]
    P = pred[cols].to_numpy()
    assert np.allclose(P.sum(axis=1), 1.0)
    assert (np.array(list("aeio"))[P.argmax(axis=1)] == pred["prediction"]).all()
    df, X, task = _by_hand(data_file)
    est = multitask.L21Classifier(alpha=0.05).fit(X, df["vowel"].to_numpy(), task)
    assert np.allclose(P, est.predict_proba(X, task), rtol=1e-6, atol=1e-9)


def test_cross_validation_scores_by_the_loss(data_file, tmp_path, capsys):
    for target, args, words in (
            ("claims", ["--loss", "poisson", "--exposure", "years"],
             "minus the mean poisson deviance"),
            ("amount", ["--loss", "gamma"], "minus the mean gamma deviance"),
            ("amount", ["--loss", "tweedie", "--power", "1.2"],
             "minus the mean Tweedie deviance (power 1.2)"),
            ("price", ["--loss", "quantile", "--quantile", "0.9"],
             "minus the mean pinball loss (quantile 0.9)"),
            ("price", ["--loss", "huber"], "minus the mean absolute error"),
            ("vowel", [], "minus the log-loss")):
        model = "L21Classifier" if target == "vowel" else "L21Regressor"
        code, model_file = _fit(data_file, tmp_path, "--target", target, *args, "--cv",
                                "--n-alphas", "3", "--cv-folds", "2", model=model)
        assert code == 0, capsys.readouterr().err
        out = capsys.readouterr().out
        assert f"({words}" in out, out
        bundle = load_model(model_file)
        assert bundle["cv_scoring"] == words
        assert bundle["model"].scoring is None  # the library's default follows the loss
        assert _predict(data_file, model_file, tmp_path)[0] == 0


@pytest.mark.parametrize("args, needle", [
    (["--target", "price", "--power", "1.2"], "--power goes with --loss tweedie"),
    (["--target", "price", "--loss", "huber", "--quantile", "0.5"],
     "--quantile goes with --loss quantile"),
    (["--target", "price", "--loss", "huber", "--param", "loss=quantile"],
     "--loss or --param loss=, not both"),
    (["--target", "price", "--exposure", "years"], "--exposure goes with a count or size "
                                                   "loss"),
    (["--target", "claims", "--loss", "poisson", "--exposure", "nope"],
     "exposure column 'nope' not found"),
    (["--target", "price", "--loss", "quantile", "--quantile", "1.5"], "quantile"),
    (["--target", "amount", "--loss", "tweedie", "--power", "3"], "power"),
    (["--target", "price", "--loss", "poisson"], "negative"),
    (["--target", "price", "--loss", "gamma"], "positive targets"),
    (["--target", "price", "--loss", "squared_hinge"], "loss"),
])
def test_bad_loss_options_are_one_line_errors(data_file, tmp_path, capsys, args, needle):
    code, model_file = _fit(data_file, tmp_path, *args)
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("multitask: error:") and "\n" not in err, err
    assert needle in err, err
    assert not model_file.exists()


def test_a_classifier_refuses_regression_options(data_file, tmp_path, capsys):
    code, _ = _fit(data_file, tmp_path, "--target", "vowel", "--epsilon", "1.5",
                   model="L21Classifier")
    assert code == 2
    assert "L21Classifier has no epsilon parameter" in capsys.readouterr().err
    code, _ = _fit(data_file, tmp_path, "--target", "vowel", "--exposure", "years",
                   model="L21Classifier")
    assert code == 2
    assert "--exposure goes with a count or size loss" in capsys.readouterr().err
