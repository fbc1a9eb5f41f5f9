"""``multitask fit`` / ``multitask predict`` on files: exact agreement with the Python API, and
one-line errors (exit status 2) naming the file, the row or column and the problem."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import multitask.estimators as E
from multitask import L21Regressor, MultiTaskCV, TraceNormClassifier, TraceNormRegressor
from multitask.cli import main
from multitask.cli_fit import read_table
from multitask.datasets import load_school


@pytest.fixture(scope="module")
def school_files(tmp_path_factory):
    """School as CSV files in long format: official split 0, string school ids."""
    school = load_school()
    split = school.splits[0]
    names = list(school.feature_names)

    def frame(part):
        rows = []
        for t, (X, y) in enumerate(zip(school.X, school.y, strict=True)):
            idx = split[part][t]
            df = pd.DataFrame(X[idx], columns=names)
            df.insert(0, "school", f"school_{t}")
            df["score"] = y[idx]
            rows.append(df)
        return pd.concat(rows, ignore_index=True)

    d = tmp_path_factory.mktemp("school")
    train, test = frame("train"), frame("test")
    train.to_csv(d / "train.csv", index=False)
    test.drop(columns="score").to_csv(d / "test.csv", index=False)
    return d, train, test, names


def _one_line_error(capsys, *needles):
    err = capsys.readouterr().err.strip()
    assert err.startswith("multitask: error:"), err
    assert "\n" not in err, err
    for n in needles:
        assert n in err, (n, err)
    return err


# ----------------------------------------------------------------------------- agreement
def test_fit_then_predict_reproduces_the_python_api_exactly(school_files, tmp_path, capsys):
    d, train, test, names = school_files
    model = tmp_path / "trace.skops"
    rc = main(["fit", "--input", str(d / "train.csv"), "--target", "score", "--task", "school",
               "--model", "TraceNormRegressor", "--param", "alpha=2.5", "--model-file",
               str(model)])
    assert rc == 0
    assert "wrote" in capsys.readouterr().out
    out = tmp_path / "pred.csv"
    assert main(["predict", "--model-file", str(model), "--input", str(d / "test.csv"),
                 "--output", str(out)]) == 0
    got = read_table(out)
    ref = TraceNormRegressor(alpha=2.5).fit(train[names].to_numpy(), train["score"].to_numpy(),
                                             train["school"].to_numpy())
    expected = ref.predict(test[names].to_numpy(), test["school"].to_numpy())
    np.testing.assert_array_equal(got["prediction"].to_numpy(), expected)
    assert list(got.columns) == [*test.drop(columns="score").columns, "prediction"]


def test_cross_validated_fit_matches_multitaskcv(school_files, tmp_path, capsys):
    d, train, test, names = school_files
    sub = train[train["school"].isin([f"school_{t}" for t in range(25)])]
    sub.to_csv(tmp_path / "sub.csv", index=False)
    model = tmp_path / "cv.skops"
    assert main(["fit", "--input", str(tmp_path / "sub.csv"), "--target", "score", "--task",
                 "school", "--features", *names[:10], "--model", "L21Regressor", "--cv",
                 "--n-alphas", "4", "--cv-folds", "3", "--model-file", str(model)]) == 0
    captured = capsys.readouterr()
    assert "best alpha=" in captured.out
    # progress through multitask.progress: plain lines on a captured stderr, ending at 3/3
    assert "L21Regressor cross-validation: 3/3 (100%)" in captured.err
    ref = MultiTaskCV(L21Regressor(), n_alphas=4, cv=3).fit(
        sub[names[:10]].to_numpy(), sub["score"].to_numpy(), sub["school"].to_numpy())
    from multitask.cli_fit import load_model

    bundle = load_model(model)
    assert bundle["model"].best_params_ == ref.best_params_
    np.testing.assert_array_equal(bundle["model"].coef_, ref.coef_)
    assert bundle["features"] == names[:10] and bundle["task"] == "school"


def test_shared_design_parquet_and_given_grid(tmp_path, shared_regression):
    pytest.importorskip("pyarrow")
    X, Y = shared_regression
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    for t in range(Y.shape[1]):
        df[f"y{t}"] = Y[:, t]
    df.to_parquet(tmp_path / "wide.parquet")
    targets = [f"y{t}" for t in range(Y.shape[1])]
    model = tmp_path / "m.skops"
    assert main(["fit", "--input", str(tmp_path / "wide.parquet"), "--targets", *targets,
                 "--model", "IndependentRidgeRegressor", "--cv", "--grid", "alpha=0.01,0.1,1",
                 "--cv-folds", "3", "--quiet", "--model-file", str(model)]) == 0
    out = tmp_path / "p.csv"
    assert main(["predict", "--model-file", str(model), "--input",
                 str(tmp_path / "wide.parquet"), "--output", str(out)]) == 0
    got = read_table(out)
    ref = MultiTaskCV(E.IndependentRidgeRegressor(), param_grid={"alpha": [0.01, 0.1, 1.0]},
                      cv=3).fit(X, Y)
    np.testing.assert_array_equal(got[[f"prediction_{t}" for t in targets]].to_numpy(),
                                  ref.predict(X))


def test_classifier_with_text_labels_and_probabilities(tmp_path, classification_lists):
    Xs, ys = classification_lists
    rows = []
    for t, (X, y) in enumerate(zip(Xs, ys, strict=True)):
        df = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
        df["task"] = t
        df["label"] = np.where(y == 1, "yes", "no")
        rows.append(df)
    df = pd.concat(rows, ignore_index=True)
    df.to_csv(tmp_path / "c.csv", index=False)
    model = tmp_path / "c.skops"
    assert main(["fit", "--input", str(tmp_path / "c.csv"), "--target", "label", "--task",
                 "task", "--model", "tracenormclassifier", "--param", "alpha=0.01",
                 "--model-file", str(model)]) == 0
    out = tmp_path / "p.csv"
    assert main(["predict", "--model-file", str(model), "--input", str(tmp_path / "c.csv"),
                 "--output", str(out), "--proba"]) == 0
    got = read_table(out)
    feats = [c for c in df.columns if c.startswith("f")]
    # the command line reads the columns into a row-major matrix; a long-format design whose
    # rows are grouped by task is used as given, and the rounding of its matrix products
    # follows its memory layout, so the reference takes the same layout as the command line
    X = np.ascontiguousarray(df[feats].to_numpy())
    ref = TraceNormClassifier(alpha=0.01).fit(X, df["label"].to_numpy(), df["task"].to_numpy())
    assert list(got["prediction"]) == list(ref.predict(X, df["task"].to_numpy()))
    np.testing.assert_array_equal(got["probability_yes"].to_numpy(),
                                  ref.predict_proba(X, df["task"].to_numpy())[:, 1])


# ----------------------------------------------------------------------------- bad files
def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


GOOD = "a,b,task,y\n1,2,s1,3.0\n2,1,s1,1.0\n0,1,s2,2.0\n1,1,s2,0.5\n"


def _fit(path, model, *extra):
    return main(["fit", "--input", path, "--target", "y", "--task", "task", "--model",
                 "L21Regressor", "--param", "alpha=0.01", "--model-file", str(model), *extra])


@pytest.mark.parametrize(
    ("text", "extra", "needles"),
    [
        (GOOD.replace("task,y", "task,z"), (), ["bad.csv", "'y'", "not found"]),
        (GOOD, ("--features", "a", "c"), ["bad.csv", "feature column 'c' not found"]),
        (GOOD.replace("0,1,s2", "0,abc,s2"), (), ["bad.csv", "row 3 (line 4)", "'b'",
                                                   "'abc' is not a number"]),
        (GOOD.replace("2,1,s1,1.0", "2,1,s1,high"), (), ["bad.csv", "row 2 (line 3)", "'y'",
                                                         "'high' is not a number"]),
        (GOOD.replace("0,1,s2", "0,1,"), (), ["bad.csv", "row 3 (line 4)", "'task'",
                                               "empty task id"]),
        (GOOD.replace("1,1,s2,0.5", "1,,s2,0.5"), (), ["bad.csv", "row 4 (line 5)", "'b'",
                                                       "missing value"]),
        ("a,b,task,y\n", (), ["bad.csv", "no data rows"]),
        ("", (), ["bad.csv", "empty"]),
    ],
)
def test_malformed_files_give_one_line_errors_and_write_nothing(tmp_path, capsys, text, extra,
                                                                needles):
    path = _write(tmp_path, "bad.csv", text)
    model = tmp_path / "m.skops"
    assert _fit(path, model, *extra) == 2
    _one_line_error(capsys, *needles)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv"]  # no model, no temp file


def test_empty_task_in_a_shared_design(tmp_path, capsys):
    path = _write(tmp_path, "wide.csv", "a,y1,y2\n1,2,\n2,3,\n3,1,\n")
    assert main(["fit", "--input", path, "--targets", "y1", "y2", "--model", "L21Regressor",
                 "--model-file", str(tmp_path / "m.skops")]) == 2
    _one_line_error(capsys, "wide.csv", "'y2'", "no rows")


def test_a_task_with_one_class_is_named(tmp_path, capsys):
    path = _write(tmp_path, "c.csv", "a,task,y\n1,u,0\n2,u,1\n3,v,1\n4,v,1\n")
    assert main(["fit", "--input", path, "--target", "y", "--task", "task", "--model",
                 "L21Classifier", "--model-file", str(tmp_path / "m.skops")]) == 2
    _one_line_error(capsys, "c.csv", "Task 'v'", "one class")


def test_missing_files_and_bad_arguments(tmp_path, capsys):
    good = _write(tmp_path, "good.csv", GOOD)
    model = tmp_path / "m.skops"
    assert _fit(str(tmp_path / "nope.csv"), model) == 2
    _one_line_error(capsys, "nope.csv", "file not found")
    assert main(["fit", "--input", good, "--target", "y", "--task", "task", "--model",
                 "NoSuchModel", "--model-file", str(model)]) == 2
    _one_line_error(capsys, "unknown model 'NoSuchModel'", "TraceNormRegressor")
    assert _fit(good, model, "--param", "beta=1") == 2
    _one_line_error(capsys, "no parameter 'beta'")
    assert _fit(good, model, "--param", "alpha") == 2
    _one_line_error(capsys, "key=value")
    assert _fit(good, tmp_path / "no_dir" / "m.skops") == 2
    _one_line_error(capsys, "does not exist")
    assert main(["predict", "--model-file", good, "--input", good, "--output",
                 str(tmp_path / "p.csv")]) == 2
    _one_line_error(capsys, "good.csv", "not a model file")
    assert not model.exists() and not (tmp_path / "p.csv").exists()


def test_unknown_task_at_predict_time(tmp_path, capsys):
    good = _write(tmp_path, "good.csv", GOOD)
    model = tmp_path / "m.skops"
    assert _fit(good, model) == 0
    new = _write(tmp_path, "new.csv", "a,b,task\n1,2,s1\n3,4,s9\n")
    out = tmp_path / "p.csv"
    assert main(["predict", "--model-file", str(model), "--input", new, "--output",
                 str(out)]) == 2
    _one_line_error(capsys, "new.csv", "row 2 (line 3)", "unknown task 's9'", "'s1', 's2'")
    assert not out.exists()
    missing = _write(tmp_path, "missing.csv", "a,task\n1,s1\n")
    assert main(["predict", "--model-file", str(model), "--input", missing, "--output",
                 str(out)]) == 2
    _one_line_error(capsys, "missing.csv", "feature column 'b' not found")
    assert main(["predict", "--model-file", str(model), "--input", good, "--output", str(out),
                 "--proba"]) == 2
    _one_line_error(capsys, "--proba", "no probabilities")


def test_a_failing_write_keeps_the_previous_model_file(tmp_path, capsys, monkeypatch):
    good = _write(tmp_path, "good.csv", GOOD)
    model = tmp_path / "m.skops"
    model.write_bytes(b"previous")

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr("os.fsync", boom)  # the last step before the rename fails
    assert _fit(good, model) == 2
    _one_line_error(capsys, "m.skops", "cannot write", "disk full")
    assert model.read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.csv", "m.skops"]


# ----------------------------------------------------------------------------- help
def test_help_with_examples_everywhere(capsys):
    for argv in (["fit", "--help"], ["predict", "--help"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 0
        out = capsys.readouterr().out
        assert "examples:" in out and f"  multitask {argv[0]} --" in out
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "fit" in out and "predict" in out


def test_list_models_names_every_public_estimator(capsys):
    assert main(["fit", "--list-models"]) == 0
    out = capsys.readouterr().out
    for name in E.__all__:
        if name != "MultiTaskCV":
            assert name in out
