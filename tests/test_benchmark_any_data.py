"""The main job on any data: ``multitask benchmark --input FILE`` and named data sets, the kind
of problem, the splits, the verdict."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from multitask import benchmark as bench
from multitask.benchmark_data import (
    BenchmarkData,
    benchmark_splits,
    detect_kind,
    load_benchmark_data,
    make_benchmark_data,
    order_tasks,
)
from multitask.cli import main

pd = pytest.importorskip("pandas")

FAST = ["--splits", "1", "--grid-size", "3", "--cv-folds", "2", "--n-jobs", "1", "--quiet"]


def _read(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def school_csv(tmp_path_factory):
    """School in long format, written from the shipped data: 27 features, score, school."""
    from multitask.datasets import load_school

    school = load_school()
    frames = []
    for t, (x, y) in enumerate(zip(school.X, school.y, strict=True)):
        df = pd.DataFrame(x, columns=list(school.feature_names))
        df["score"] = y
        df["school"] = t + 1
        frames.append(df)
    path = tmp_path_factory.mktemp("school") / "school_long.csv"
    pd.concat(frames).to_csv(path, index=False)
    return path


def test_a_long_format_file_of_school_gives_the_nmse_of_benchmark_school(school_csv, tmp_path,
                                                                         capsys):
    models = ["--models", "IndependentRidge", "Pooled", "L21", "--train-ratio", "0.75"]
    assert main(["benchmark", "school", *models, *FAST, "--out", str(tmp_path / "a")]) == 0
    named = capsys.readouterr().out
    assert main(["benchmark", "--input", str(school_csv), "--target", "score", "--task",
                 "school", *models, *FAST, "--out", str(tmp_path / "b")]) == 0
    from_file = capsys.readouterr().out
    a = {r["model"]: r for r in _read(tmp_path / "a" / "results.csv")}
    b = {r["model"]: r for r in _read(tmp_path / "b" / "results.csv")}
    assert sorted(a) == sorted(b) == ["IndependentRidgeRegressor", "L21Regressor",
                                      "PooledRegressor"]
    for name in a:
        for key in ("nmse_mean", "amse_mean"):
            assert round(float(a[name][key]), 4) == round(float(b[name][key]), 4)
            assert 0.3 < float(a[name][key]) < 1.2
    for out, folder in ((named, "a"), (from_file, "b")):
        verdict = [ln for ln in out.splitlines() if ln.startswith("verdict:")]
        assert len(verdict) == 1 and "L21Regressor" in verdict[0]
        assert (tmp_path / folder / "results.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "school_long.csv: 1 random split" in from_file


def _binary_shared(path, n=160, d=5, m=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    W = rng.standard_normal(d)[:, None] + 0.3 * rng.standard_normal((d, m))
    Y = X @ W + 0.5 * rng.standard_normal((n, m)) > 0
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(d)])
    for t in range(m):
        df[f"label{t}"] = np.where(Y[:, t], "yes", "no")
    df.to_csv(path, index=False)
    return [f"label{t}" for t in range(m)]


def test_a_binary_shared_design_file_reports_auc_and_the_verdict(tmp_path, capsys):
    targets = _binary_shared(tmp_path / "labels.csv")
    out = tmp_path / "out"
    assert main(["benchmark", "--input", str(tmp_path / "labels.csv"), "--targets", *targets,
                 "--models", "IndependentRidge", "Pooled", "TraceNorm", *FAST, "--splits", "2",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    rows = _read(out / "results.csv")
    assert list(rows[0]) == list(bench.result_columns("classification"))
    assert sorted(r["model"] for r in rows) == ["IndependentRidgeClassifier",
                                                "PooledClassifier", "TraceNormClassifier"]
    auc = [float(r["auc_mean"]) for r in rows]
    assert auc == sorted(auc, reverse=True)  # best first
    assert all(0.8 < v <= 1.0 for v in auc)  # the labels follow the features closely
    assert all(0.5 < float(r["accuracy_mean"]) <= 1.0 for r in rows)
    splits = _read(out / "splits.csv")
    assert list(splits[0]) == list(bench.split_columns("classification")) and len(splits) == 6
    assert "AUC" in printed and "positive class: 'yes'" in printed
    assert "3 models" in printed and "2 random splits of the rows" in printed
    (verdict,) = [ln for ln in printed.splitlines() if ln.startswith("verdict:")]
    assert "TraceNormClassifier" in verdict
    assert (out / "results.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("values, kind", [
    ([0, 1, 1, 0], "classification"),
    (["no", "yes", "no"], "classification"),
    ([-1.0, 1.0], "classification"),
    ([0.5, 1.5, 2.5], "regression"),
    (np.arange(10), "regression"),
])
def test_the_kind_of_problem_is_detected_from_the_targets(values, kind):
    assert detect_kind(values) == kind


def test_targets_that_fit_no_kind_are_refused_by_name():
    assert detect_kind(["a", "b", "c"]) == "multiclass"  # three labels: more than two classes
    with pytest.raises(ValueError, match="not numbers"):
        detect_kind(["a", "b", "c"], "count")
    with pytest.raises(ValueError, match="single value"):
        detect_kind([1, 1, 1])
    with pytest.raises(ValueError, match="not numbers"):
        detect_kind(["a", "b"], "regression")
    with pytest.raises(ValueError, match="exactly two"):
        detect_kind([1.0, 2.0, 3.0], "classification")
    assert detect_kind([0.0, 1.0], "regression") == "regression"


def test_long_format_keeps_the_tasks_in_the_order_of_their_first_row():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((7, 2))
    task = np.array(["b", "a", "b", "c", "a", "c", "c"])
    y = rng.standard_normal(7)
    data = make_benchmark_data(X, y, task)
    assert data.task_names == ["b", "a", "c"] and not data.shared
    np.testing.assert_array_equal(data.X[2], X[[3, 5, 6]])
    np.testing.assert_array_equal(data.y[1], y[[1, 4]])
    with pytest.raises(ValueError, match="single task"):
        make_benchmark_data(X, y)
    with pytest.raises(ValueError, match="needs at least two tasks"):
        make_benchmark_data(X, y, np.zeros(7))


def test_labels_are_coded_with_the_second_sorted_label_positive():
    X = np.arange(12.0).reshape(6, 2)
    data = make_benchmark_data(X, np.array([["no", "yes"], ["yes", "no"]] * 3), name="t")
    assert data.kind == "classification" and data.classes == ("no", "yes")
    np.testing.assert_array_equal(data.y[:, 0], [0, 1, 0, 1, 0, 1])
    with pytest.raises(ValueError, match="Task 'task_1' holds only the label 'yes'"):
        make_benchmark_data(X, np.array([["no", "yes"], ["yes", "yes"]] * 3))
    with pytest.raises(ValueError, match="missing value.*long format"):
        make_benchmark_data(X, np.array([[1.0, 2.0], [np.nan, 1.0], [3.0, 4.0]] * 2))


def test_classification_splits_are_stratified_within_each_task():
    rng = np.random.default_rng(2)
    X = [rng.standard_normal((n, 3)) for n in (12, 30, 9)]
    y = [np.r_[np.ones(2, int), np.zeros(n - 2, int)] for n in (12, 30, 9)]  # rare positives
    data = make_benchmark_data(X, y)
    for X_tr, y_tr, _, y_te in benchmark_splits(data, 4, 0.5, random_state=3):
        for t in range(3):
            assert set(y_tr[t]) == {0, 1} and set(y_te[t]) == {0, 1}
            assert len(y_tr[t]) + len(y_te[t]) == len(y[t])
        pooled = np.vstack(X_tr)  # standardized on the training part
        np.testing.assert_allclose(pooled.mean(axis=0), 0, atol=1e-12)
        np.testing.assert_allclose(pooled.std(axis=0), 1)


def test_shared_design_splits_the_rows_once_for_all_tasks():
    rng = np.random.default_rng(4)
    X, Y = rng.standard_normal((40, 3)), rng.standard_normal((40, 2))
    data = make_benchmark_data(X, Y)
    ((X_tr, Y_tr, X_te, Y_te),) = benchmark_splits(data, 1, 0.75, random_state=0)
    assert X_tr.shape == (30, 3) and Y_tr.shape == (30, 2) and X_te.shape == (10, 3)
    # every test row is a row of the data, standardized with the training part's moments
    rows = np.flatnonzero(np.isin(Y[:, 0], Y_te[:, 0]))
    mu, sd = np.delete(X, rows, axis=0).mean(axis=0), np.delete(X, rows, axis=0).std(axis=0)
    np.testing.assert_allclose(X_te, (X[rows] - mu) / sd)


def test_the_official_splits_are_school_only_and_bounded():
    school = load_benchmark_data("school")
    assert school.n_tasks == 139 and school.n_rows == 15362 and school.task_word == "schools"
    with pytest.raises(ValueError, match="--splits must be between 1 and 10"):
        benchmark_splits(school, 11)
    with pytest.raises(ValueError, match="--train-ratio"):
        benchmark_splits(school, 1, 1.5)
    with pytest.raises(ValueError, match="Unknown data set 'nope'.*school"):
        load_benchmark_data("nope")


def test_a_task_order_reorders_the_tasks_and_adds_the_temporal_models():
    rng = np.random.default_rng(5)
    X, task = rng.standard_normal((30, 2)), np.repeat(["10", "9", "11"], 10)
    data = make_benchmark_data(X, rng.standard_normal(30), task)
    ordered = order_tasks(data, "sorted")
    assert ordered.task_names == ["9", "10", "11"] and ordered.ordered and not data.ordered
    np.testing.assert_array_equal(ordered.X[0], data.X[1])
    assert order_tasks(data, ["11", "10", "9"]).task_names == ["11", "10", "9"]
    for bad, needle in ((["9", "10"], "misses 1"), (["9", "9", "10", "11"], "twice"),
                        (["9", "10", "12"], "'12', which is not a task")):
        with pytest.raises(ValueError, match=needle):
            order_tasks(data, bad)
    plain = bench.benchmark_models("regression")
    temporal = bench.benchmark_models("regression", ordered=True)
    assert set(temporal) - set(plain) == {"TemporalGroupLassoRegressor",
                                          "FusedSparseGroupLassoRegressor"}
    graph = bench.benchmark_models("classification", graph=True)
    assert set(graph) - set(bench.benchmark_models("classification")) == {
        "GraphRegularizedClassifier"}


def test_the_graph_and_temporal_models_run_when_the_user_gives_what_they_need(tmp_path,
                                                                               capsys):
    rng = np.random.default_rng(6)
    n, tasks = 90, ["q1", "q2", "q3"]
    df = pd.DataFrame(rng.standard_normal((n, 3)), columns=["a", "b", "c"])
    df["quarter"] = np.repeat(tasks, n // 3)
    df["y"] = df["a"] - df["b"] + 0.3 * rng.standard_normal(n)
    df.to_csv(tmp_path / "q.csv", index=False)
    pd.DataFrame({"from": ["q1", "q2"], "to": ["q2", "q3"]}).to_csv(tmp_path / "g.csv",
                                                                    index=False)
    argv = ["benchmark", "--input", str(tmp_path / "q.csv"), "--target", "y", "--task",
            "quarter", *FAST, "--out", str(tmp_path / "out")]
    assert main([*argv, "--models", "GraphRegularized"]) == 2
    assert "needs a task graph" in capsys.readouterr().err
    assert main([*argv, "--graph", str(tmp_path / "g.csv"), "--task-order", "q3", "q2", "q1",
                 "--models", "GraphRegularized", "TemporalGroupLasso", "Pooled"]) == 0
    names = {r["model"] for r in _read(tmp_path / "out" / "results.csv")}
    assert names == {"GraphRegularizedRegressor", "TemporalGroupLassoRegressor",
                     "PooledRegressor"}
    pd.DataFrame({"from": ["q1"], "to": ["q7"]}).to_csv(tmp_path / "bad.csv", index=False)
    assert main([*argv, "--graph", str(tmp_path / "bad.csv")]) == 2
    assert "names 'q7', which is not a task of the data" in capsys.readouterr().err


def test_file_errors_are_one_line_and_name_the_problem(tmp_path, capsys):
    targets = _binary_shared(tmp_path / "labels.csv", n=20)
    df = pd.read_csv(tmp_path / "labels.csv")
    df.loc[4, "label2"] = np.nan
    df.to_csv(tmp_path / "missing.csv", index=False)
    df = pd.read_csv(tmp_path / "labels.csv")
    df["label0"] = ["a", "b", "c", "d"] * 5
    df.to_csv(tmp_path / "multiclass.csv", index=False)
    out = str(tmp_path / "never")
    for argv, needle in (
            (["--input", str(tmp_path / "missing.csv"), "--targets", *targets],
             "row 5 (line 6), column 'label2': missing target"),
            (["--input", str(tmp_path / "multiclass.csv"), "--targets", *targets, "--kind",
              "classification"], "distinct values"),
            (["--input", str(tmp_path / "labels.csv"), "--target", "label0"], "--task COL"),
            (["school", "--input", str(tmp_path / "labels.csv")], "not both"),
            (["school", "--targets", "y1", "y2"], "--targets goes with --input"),
            (["school", "--kind", "classification"], "regression problem"),
            ([], "give a data set name"),
            (["nope"], "Unknown data set 'nope'"),
            (["--input", str(tmp_path / "labels.csv"), "--targets", *targets, "--models",
              "TraceNormRegressor"], "classification problem")):
        assert main(["benchmark", *argv, *FAST, "--out", out]) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("multitask: error:") and "\n" not in err, err
        assert needle in err, err
    assert not (tmp_path / "never").exists()


def _result(gains_a, gains_b, kind="regression"):
    """A result with a multi-task model M and baselines, per-split metrics given."""
    key = bench.METRICS[kind][0][0]
    per = {"M": gains_a, "IndependentRidgeRegressor": gains_b,
           "PooledRegressor": [g + 0.1 for g in gains_b]}
    split_rows = [{"model": m, "split": s, key: v} for m, vals in per.items()
                  for s, v in enumerate(vals)]
    rows = [{"model": m, f"{key}_mean": float(np.mean(v))} for m, v in per.items()]
    return bench.BenchmarkResult(rows=rows, split_rows=split_rows, kind=kind)


def test_the_verdict_is_the_paired_gain_over_the_splits():
    res = _result([0.60, 0.62, 0.61], [0.65, 0.64, 0.60])
    v = bench.verdict(res)
    assert v["best"] == "M"
    ind, pooled = v["comparisons"]
    assert ind["baseline"] == "IndependentRidgeRegressor" and pooled["role"] == "pooled baseline"
    np.testing.assert_allclose(ind["gains"], [0.05, 0.02, -0.01])
    assert ind["mean"] == pytest.approx(0.02) and ind["std"] == pytest.approx(np.std(
        [0.05, 0.02, -0.01]))
    assert (ind["n_better"], ind["n_splits"]) == (2, 3)
    assert pooled["n_better"] == 3
    assert v["holds"] == "on average"
    text = bench.format_verdict(res)
    assert text.startswith("verdict: multi-task learning helps on average but not on every")
    assert "gain +0.0200 on average" in text and "better on 2 of 3" in text
    assert bench.verdict(_result([0.6, 0.6], [0.7, 0.7]))["holds"] == "every split"
    assert bench.verdict(_result([0.7, 0.7], [0.6, 0.6]))["holds"] == "no"
    # larger is better for AUC: the signs turn
    clf = _result([0.9, 0.8], [0.85, 0.85], kind="classification")
    np.testing.assert_allclose(bench.verdict(clf)["comparisons"][0]["gains"], [0.05, -0.05])


def test_no_verdict_without_a_multitask_model_or_a_baseline():
    res = _result([0.6], [0.7])
    res.rows = [r for r in res.rows if r["model"] != "M"]
    assert bench.verdict(res) is None
    assert bench.format_verdict(res).startswith("verdict: none")


def test_named_data_sets_of_the_data_folder_load_with_their_kind():
    try:
        sarcos = load_benchmark_data("sarcos")
        yeast = load_benchmark_data("yeast")
    except FileNotFoundError:
        pytest.skip("the data folder is not here")
    assert (sarcos.kind, sarcos.n_tasks, sarcos.shared) == ("regression", 7, True)
    assert (yeast.kind, yeast.n_tasks, yeast.n_rows) == ("classification", 14, 2417)
    assert yeast.classes == (0, 1) and isinstance(yeast, BenchmarkData)


def test_plotting_and_table_reading_are_in_the_base_install():
    """``pip install .`` brings matplotlib, pandas and pyarrow; the old extras stay aliases."""
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    from pathlib import Path

    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())[
        "project"]
    base = {d.split(">")[0].split("=")[0].split("[")[0] for d in project["dependencies"]}
    assert {"matplotlib", "pandas", "pyarrow"} <= base
    extras = project["optional-dependencies"]
    assert "matplotlib>=3.7" in extras["plot"] and "pandas>=2.0" in extras["io"]
