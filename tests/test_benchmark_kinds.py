"""The main job's kinds beyond regression and two classes: counts (with an exposure), more
than two classes, a quantile, heavy tails; their losses, scores, metrics, detection, options,
and the named data sets be_mtpl97 and vowel."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from multitask import benchmark as bench
from multitask import benchmark_kinds as bk
from multitask.benchmark_data import (
    benchmark_splits,
    detect_kind,
    kind_hint,
    load_benchmark_data,
    make_benchmark_data,
)
from multitask.cli import main

pd = pytest.importorskip("pandas")

FAST = ["--splits", "2", "--grid-size", "3", "--cv-folds", "2", "--n-jobs", "1", "--quiet"]
RUN = {"n_splits": 2, "n_alphas": 3, "cv": 2, "n_jobs": 1, "show_progress": False}


def _read(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _counts(seed=0, m=4, n=60, d=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m * n, d))
    task = np.repeat(np.arange(m), n)
    exposure = rng.uniform(0.2, 1.0, m * n)
    y = rng.poisson(exposure * np.exp(0.4 * X[:, 0] + 0.2 * task)).astype(float)
    return X, y, task, exposure


def _classes(seed=0, m=4, n=60, d=3, k=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m * n, d))
    task = np.repeat(np.arange(m), n)
    z = X @ rng.standard_normal((d, k)) * 2
    labels = np.array(["do", "re", "mi", "fa"][:k])[np.argmax(z + rng.gumbel(size=z.shape), 1)]
    return X, labels, task


def _heavy(seed=0, m=4, n=60, d=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m * n, d))
    task = np.repeat(np.arange(m), n)
    y = X @ np.array([1.0, -0.5, 0.2]) + rng.standard_t(2, m * n)
    return X, y, task


# ----------------------------------------------------------------------------- kinds
@pytest.mark.parametrize("values, kind", [
    (["a", "b", "c"], "multiclass"),
    (["x", "y", "z", "x", "w"], "multiclass"),
    (["no", "yes"], "classification"),
    ([0, 1, 2, 3, 7], "regression"),
])
def test_three_labels_that_are_not_numbers_are_a_multiclass_problem(values, kind):
    assert detect_kind(values) == kind


def test_a_given_kind_is_checked_against_the_targets():
    assert detect_kind([0, 1, 2], "count") == "count"
    assert detect_kind([1, 2, 3], "multiclass") == "multiclass"
    assert detect_kind([0.5, 1.5, 9.0], "quantile") == "quantile"
    assert detect_kind([0.5, 1.5, 9.0], "robust") == "robust"
    with pytest.raises(ValueError, match="negative value.*counts are >= 0"):
        detect_kind([0, 1, -2], "count")
    with pytest.raises(ValueError, match="not numbers"):
        detect_kind(["a", "b", "c"], "quantile")
    with pytest.raises(ValueError, match="--kind multiclass for more"):
        detect_kind(["a", "b", "c"], "classification")
    with pytest.raises(ValueError, match="one of"):
        detect_kind([0, 1, 2], "poisson")


def test_non_negative_integer_targets_get_a_hint_to_pass_kind_count():
    hint = kind_hint([0, 1, 3, 0, 2], "regression")
    assert "--kind count" in hint and "0 to 3" in hint
    assert kind_hint([0, 1.5, 3], "regression") is None
    assert kind_hint([-1, 1, 3], "regression") is None
    assert kind_hint([0, 1, 3], "count") is None
    X, y, task, _ = _counts()
    data = make_benchmark_data(X, y, task)
    assert data.kind == "regression" and "--kind count" in data.notes[0]
    assert make_benchmark_data(X, y, task, kind="count").notes == []
    assert make_benchmark_data(X, y, task, kind="regression").notes == []  # asked for


def test_kind_options_are_checked():
    assert bk.kind_options("quantile") == {"quantile": bk.DEFAULT_QUANTILE}
    assert bk.kind_options("quantile", quantile=0.9) == {"quantile": 0.9}
    assert bk.kind_options("robust") == {"epsilon": bk.DEFAULT_EPSILON}
    assert bk.kind_options("count") == {}
    for q in (0.0, 1.0, 1.5, -0.1):
        with pytest.raises(ValueError, match=r"quantile must be in \(0, 1\)"):
            bk.kind_options("quantile", quantile=q)
    for e in (1.0, 0.5, float("inf")):
        with pytest.raises(ValueError, match="Epsilon must be a finite number > 1"):
            bk.kind_options("robust", epsilon=e)
    with pytest.raises(ValueError, match="goes with the kind 'quantile'"):
        bk.kind_options("count", quantile=0.5)
    with pytest.raises(ValueError, match="goes with the kind 'robust'"):
        bk.kind_options("regression", epsilon=1.5)
    assert bk.loss_params("count", {}) == {"loss": "poisson"}
    assert bk.loss_params("multiclass", {}) == {"loss": "logistic"}
    assert bk.loss_params("quantile", {"quantile": 0.9}) == {"loss": "quantile",
                                                             "quantile": 0.9}
    assert bk.loss_params("regression", {}) == {}


def test_the_huber_function_and_the_robust_scale():
    r = np.array([-3.0, -1.0, 0.0, 0.5, 2.0])
    assert bk.huber_loss(r, 1.35).tolist() == pytest.approx(
        [1.35 * 3 - 1.35 ** 2 / 2, 0.5, 0.0, 0.125, 1.35 * 2 - 1.35 ** 2 / 2])
    # the deviations from each task's median: task 0 |y - 2| = 1, 0, 1; task 1 |y - 10| = 4, 0, 4
    assert bk.robust_scale([np.array([1.0, 2.0, 3.0]), np.array([6.0, 10.0, 14.0])]) == \
        pytest.approx(1.4826 * 1.0)
    assert bk.robust_scale(np.array([[1.0, 6.0], [2.0, 10.0], [3.0, 14.0]])) == \
        pytest.approx(1.4826)
    # more than half of the targets at their median: the mean absolute deviation instead
    assert bk.robust_scale([np.array([0.0, 0.0, 0.0, 4.0])]) == pytest.approx(1.2533 * 1.0)
    assert bk.robust_scale([np.zeros(5)]) == 1.0


# ----------------------------------------------------------------------------- data
def test_an_exposure_means_counts_and_is_checked():
    X, y, task, e = _counts()
    data = make_benchmark_data(X, y, task, exposure=e, exposure_name="years")
    assert data.kind == "count" and data.exposure_name == "years"
    assert [len(v) for v in data.exposure] == [len(v) for v in data.y]
    assert np.array_equal(np.concatenate(data.exposure), e)  # tasks 0..3 in row order
    with pytest.raises(ValueError, match="goes with counts"):
        make_benchmark_data(X, y, task, exposure=e, kind="regression")
    bad = e.copy()
    bad[65] = 0.0
    with pytest.raises(ValueError, match="exposure of task '1', row 5 .* finite and > 0"):
        make_benchmark_data(X, y, task, exposure=bad)
    neg = y.copy()
    neg[130] = -1.0
    with pytest.raises(ValueError, match="targets of task '2' hold -1 .*counts must be"):
        make_benchmark_data(X, neg, task, exposure=e)
    with pytest.raises(ValueError, match="shape"):
        make_benchmark_data(X, y, task, exposure=e[:-1])


def test_splits_carry_the_exposure_of_their_rows():
    X, y, task, e = _counts()
    data = make_benchmark_data(X, y, task, exposure=e)
    plain = benchmark_splits(data, 2, random_state=3)
    split = benchmark_splits(data, 2, random_state=3, with_exposure=True)
    for a, b in zip(plain, split, strict=True):
        assert len(a) == 4 and len(b) == 6
        for t in range(4):
            assert np.array_equal(a[1][t], b[1][t]) and np.array_equal(a[3][t], b[3][t])
            # each part's rows keep their exposure: rows are matched by the count and feature
            rows = {(float(v), float(w)) for v, w in zip(data.y[t], data.exposure[t],
                                                        strict=True)}
            assert {(float(v), float(w)) for v, w in zip(b[1][t], b[4][t], strict=True)} <= rows
            assert len(b[4][t]) == len(b[1][t]) and len(b[5][t]) == len(b[3][t])
        assert sum(len(w) for w in b[4]) + sum(len(w) for w in b[5]) == len(e)


def test_multiclass_labels_are_coded_in_sorted_order():
    X, labels, task = _classes()
    data = make_benchmark_data(X, labels, task)
    assert data.kind == "multiclass" and data.classes == ("do", "mi", "re")
    for t in range(4):
        assert np.array_equal(np.asarray(data.classes)[data.y[t]], labels[task == t])


# ----------------------------------------------------------------------------- runs
def test_counts_with_an_exposure_of_one_are_the_counts_without_one():
    X, y, task, _ = _counts()
    models = ["IndependentRidge", "L21"]
    a = bench.run_benchmark(make_benchmark_data(X, y, task, kind="count"), models=models,
                            **RUN)
    b = bench.run_benchmark(make_benchmark_data(X, y, task, exposure=np.ones_like(y)),
                            models=models, **RUN)
    for ra, rb in zip(a.split_rows, b.split_rows, strict=True):
        assert ra["model"] == rb["model"]
        assert ra["deviance"] == pytest.approx(rb["deviance"], rel=1e-9)
        assert ra["d2"] == pytest.approx(rb["d2"], rel=1e-9, abs=1e-12)


def test_count_metrics_are_the_deviance_of_the_predicted_counts():
    import multitask

    X, y, task, e = _counts(seed=2)
    data = make_benchmark_data(X, y, task, exposure=e)
    X_tr, y_tr, X_te, y_te, e_tr, e_te = benchmark_splits(data, 1, with_exposure=True)[0]
    est = multitask.L21Regressor(loss="poisson", alpha=0.05).fit(
        X_tr, [v / w for v, w in zip(y_tr, e_tr, strict=True)], sample_weight=e_tr)
    got = bk.test_scores("count", {}, est, X_te, y_te, e_te)
    yy = np.concatenate(y_te)
    mu = np.concatenate([r * w for r, w in zip(est.predict(X_te), e_te, strict=True)])
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.where(yy > 0, yy * np.log(yy / mu), 0.0)
    deviance = np.mean(2 * (term - yy + mu))
    rate0 = yy.sum() / np.concatenate(e_te).sum()
    mu0 = rate0 * np.concatenate(e_te)
    with np.errstate(divide="ignore", invalid="ignore"):
        term0 = np.where(yy > 0, yy * np.log(yy / mu0), 0.0)
    assert got["deviance"] == pytest.approx(deviance, rel=1e-10)
    assert got["d2"] == pytest.approx(1 - deviance / np.mean(2 * (term0 - yy + mu0)),
                                      rel=1e-9)


def test_a_count_run_fits_every_model_with_the_poisson_loss(monkeypatch):
    import multitask
    from multitask.model_selection import get_scorer

    seen = []
    fit = multitask.MultiTaskCV.fit

    def spy(self, X, y, task=None, sample_weight=None):
        seen.append((type(self.estimator).__name__, self.estimator.loss, sample_weight,
                     type(self.scoring).__name__))
        return fit(self, X, y, task, sample_weight)

    monkeypatch.setattr(multitask.MultiTaskCV, "fit", spy)
    X, y, task, e = _counts()
    res = bench.run_benchmark(make_benchmark_data(X, y, task, exposure=e),
                              models=["IndependentRidge", "Pooled", "MeanRegularized"], **RUN)
    assert len(seen) == 6
    assert {s[1] for s in seen} == {"poisson"}
    assert {s[3] for s in seen} == {"NoneType"}  # the library's default for the loss:
    scorer = get_scorer(None, multitask.PooledRegressor(loss="poisson"))
    assert scorer.name == "mean poisson deviance"
    assert all(s[2] is not None and len(s[2]) == 4 for s in seen)
    assert [c for _, _, c in bench.METRICS["count"]] == [False, True]
    assert res.verdict is not None and res.verdict["metric"] == "deviance"
    assert {c["role"] for c in res.verdict["comparisons"]} == {"best independent baseline",
                                                              "pooled baseline"}
    table = bench.format_table(res)
    assert "Poisson loss" in table and "rate y / exposure" in table
    assert "deviance" in table.splitlines()[4] and "D^2" in table.splitlines()[4]


def test_a_multiclass_run_scores_log_loss_and_both_accuracies():
    X, labels, task = _classes(seed=1)
    data = make_benchmark_data(X, labels, task)
    res = bench.run_benchmark(data, models=["IndependentRidge", "Pooled", "L21",
                                            "MultiTaskKernel"], **RUN)
    assert "MultiTaskKernelClassifier" in res.skipped  # the hinge loss only
    assert "logistic" in res.skipped["MultiTaskKernelClassifier"]
    assert [r["model"] for r in res.rows] == sorted(
        (r["model"] for r in res.rows), key=lambda m: next(
            x["log_loss_mean"] for x in res.rows if x["model"] == m))
    for r in res.split_rows:
        assert 0 < r["log_loss"] < np.log(3) * 1.5
        assert 0 <= r["accuracy"] <= 1
        # every task has 15 test rows: the mean over tasks is the pooled accuracy
        assert r["accuracy_macro"] == pytest.approx(r["accuracy"], abs=1e-12)
    table = bench.format_table(res)
    assert "multinomial logistic loss" in table and "3 classes" in table
    assert "(skipped MultiTaskKernelClassifier:" in table
    assert "log-loss" in bench.format_verdict(res)


def test_a_quantile_run_covers_about_its_quantile_and_leaves_out_models_that_refuse_it():
    X, y, task = _heavy(seed=3, n=120)
    data = make_benchmark_data(X, y, task, kind="quantile")
    res = bench.run_benchmark(data, models=["IndependentRidge", "Pooled", "MeanRegularized"],
                              quantile=0.9, **RUN)
    assert "MeanRegularizedRegressor" in res.skipped
    assert "cannot fit the 'quantile' loss" in res.skipped["MeanRegularizedRegressor"]
    for r in res.split_rows:
        assert 0.75 < r["coverage"] < 1.0
        assert r["pinball"] > 0
    table = bench.format_table(res)
    assert "pinball loss at q = 0.9" in table and "(skipped MeanRegularizedRegressor:" in table
    with pytest.raises(ValueError, match="goes with the kind 'quantile'"):
        bench.run_benchmark(make_benchmark_data(X, y, task), quantile=0.9, **RUN)


def test_a_robust_run_scores_the_huber_loss_with_one_scale_per_split():
    X, y, task = _heavy(seed=4)
    data = make_benchmark_data(X, y, task, kind="robust")
    res = bench.run_benchmark(data, models=["IndependentRidge", "L21"], epsilon=1.5, **RUN)
    splits = benchmark_splits(data, 2, with_exposure=True)
    for r in res.split_rows:
        assert r["huber_scale"] == pytest.approx(bk.robust_scale(splits[r["split"]][1]))
        assert 0 < r["huber"] < r["mae"] / r["huber_scale"] * 1.5
    assert "epsilon = 1.5" in bench.format_table(res)
    assert "huber_scale" in bench.split_columns("robust")


def test_the_figure_draws_a_panel_per_metric(tmp_path):
    X, labels, task = _classes(seed=5)
    res = bench.run_benchmark(make_benchmark_data(X, labels, task),
                              models=["IndependentRidge", "TraceNorm"], **RUN)
    fig = bench.plot_benchmark(res)
    axes = fig.get_axes()
    assert len(axes) == 4  # log-loss, accuracy, macro accuracy, spectrum
    assert "log-loss" in axes[0].get_xlabel() and "macro accuracy" in axes[2].get_xlabel()
    assert res.trace_coef.shape == (4 * 3, 3)  # the task-class columns
    fig.savefig(tmp_path / "f.png")


# ----------------------------------------------------------------------------- the command
@pytest.fixture
def count_csv(tmp_path):
    X, y, task, e = _counts()
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    df["claims"], df["region"], df["years"] = y, task, e
    path = tmp_path / "claims.csv"
    df.to_csv(path, index=False)
    return path


def test_the_command_takes_an_exposure_column(count_csv, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["benchmark", "--input", str(count_csv), "--target", "claims", "--task", "region",
            "--exposure", "years", "--models", "IndependentRidge", "Pooled", *FAST,
            "--out", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "the rate y / years with sample_weight=years" in text
    rows = _read(out / "results.csv")
    assert [k for k in rows[0] if k.endswith("_mean")] == ["deviance_mean", "d2_mean"]
    assert "verdict: none" in text  # no multi-task model among the two baselines
    # the exposure column is not a feature: the same run with the features named
    assert main([*argv[:-2], "--features", "a", "b", "c", "--out", str(tmp_path / "o2")]) == 0
    def metrics(table):
        return [{k: v for k, v in r.items() if k != "fit_seconds"} for r in table]

    assert metrics(_read(tmp_path / "o2" / "results.csv")) == metrics(rows)


def test_the_command_refuses_bad_kind_options(count_csv, tmp_path, capsys):
    base = ["benchmark", "--input", str(count_csv), "--target", "claims", "--task", "region",
            *FAST, "--out", str(tmp_path / "never")]
    df = pd.read_csv(count_csv)
    df.loc[7, "years"] = -0.5
    df.to_csv(tmp_path / "bad.csv", index=False)
    for extra, needle in (
            (["--quantile", "0.9"], "--quantile goes with --kind quantile"),
            (["--kind", "robust", "--quantile", "0.9"], "--quantile goes with --kind"),
            (["--kind", "quantile", "--quantile", "1.5"], "quantile must be in (0, 1)"),
            (["--kind", "robust", "--epsilon", "1"], "Epsilon must be a finite number > 1"),
            (["--exposure", "years", "--kind", "regression"], "goes with counts"),
            (["--exposure", "nope"], "exposure column 'nope' not found"),
            (["--exposure", "claims"], "both the exposure and a target"),
            (["--exposure", "years", "--features", "a", "years"], "both a feature and the "
                                                                   "exposure")):
        assert main([*base, *extra]) == 2, extra
        err = capsys.readouterr().err.strip()
        assert err.startswith("multitask: error:") and "\n" not in err, err
        assert needle in err, err
    bad = ["benchmark", "--input", str(tmp_path / "bad.csv"), "--target", "claims", "--task",
           "region", "--exposure", "years", *FAST, "--out", str(tmp_path / "never")]
    assert main(bad) == 2
    assert "row 8 (line 9), column 'years': the exposure -0.5 is not positive" in \
        capsys.readouterr().err
    assert not (tmp_path / "never").exists()


def test_integer_targets_get_the_count_hint_on_stderr_and_under_the_table(count_csv, tmp_path,
                                                                          capsys):
    assert main(["benchmark", "--input", str(count_csv), "--target", "claims", "--task",
                 "region", "--features", "a", "b", "c", "--models", "IndependentRidge",
                 *FAST, "--out", str(tmp_path / "o")]) == 0
    captured = capsys.readouterr()
    assert "multitask: note: the targets are non-negative integers" in captured.err
    assert "--kind count" in captured.err
    assert "(note: the targets are non-negative integers" in captured.out


def test_resume_refuses_another_quantile(tmp_path, capsys):
    X, y, task = _heavy()
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    df["y"], df["g"] = y, task
    df.to_csv(tmp_path / "d.csv", index=False)
    argv = ["benchmark", "--input", str(tmp_path / "d.csv"), "--target", "y", "--task", "g",
            "--kind", "quantile", "--models", "IndependentRidge", *FAST,
            "--out", str(tmp_path / "o")]
    assert main([*argv, "--quantile", "0.8"]) == 0
    capsys.readouterr()
    assert main([*argv, "--quantile", "0.7", "--resume"]) == 2
    assert "--quantile differs: 0.8 in the stopped run, 0.7 now" in capsys.readouterr().err
    assert main([*argv, "--quantile", "0.8", "--resume"]) == 0


# ----------------------------------------------------------------------------- named sets
@pytest.fixture(scope="module")
def data_root():
    import os

    from multitask.datasets import find_data_dir

    if os.environ.get("MULTITASK_DATA", "").strip():
        return find_data_dir()
    try:
        return find_data_dir()
    except FileNotFoundError as exc:
        pytest.skip(f"data folder not available: {exc}")


def test_be_mtpl97_is_a_count_problem_with_its_exposure(data_root):
    data = load_benchmark_data("be_mtpl97", data_root)
    assert data.kind == "count" and data.n_tasks == 80 and data.n_rows == 163_212
    assert data.exposure_name == "expo" and data.task_word == "districts"
    total = sum(float(v.sum()) for v in data.y) / sum(float(e.sum()) for e in data.exposure)
    assert total == pytest.approx(0.139, abs=5e-4)
    for name in ("IndependentRidge", "IndependentLasso", "Pooled", "MeanRegularized"):
        assert name not in (data.default_leave_out or {})


def test_vowel_is_a_multiclass_problem_of_15_speakers(data_root):
    data = load_benchmark_data("vowel", data_root)
    assert data.kind == "multiclass" and data.n_tasks == 15 and data.n_rows == 990
    assert data.classes == tuple(range(11)) and data.task_word == "speakers"
    assert all(np.bincount(v, minlength=11).tolist() == [6] * 11 for v in data.y)


def test_a_data_set_s_own_defaults_leave_out_models_and_say_so():
    from dataclasses import replace

    X, y, task, e = _counts()
    data = replace(make_benchmark_data(X, y, task, exposure=e),
                   default_leave_out={"CappedTrace": "slow here", "CappedL1": "slow too"},
                   default_splits=2)
    found = bench.benchmark_models("count")
    res = bench.run_benchmark(data, models=None, n_alphas=3, cv=2, n_jobs=1,
                              show_progress=False, time_limit=0)
    assert res.n_jobs_total == 2 * (len(found) - 2)
    note = res.defaults_note
    assert note.startswith(f"defaults of data: {len(found) - 2} of the {len(found)} models")
    assert "left out: CappedL1: slow too; CappedTrace: slow here" in note
    assert "and 2 splits (--splits N for more)" in note
    assert f"({note})" in bench.format_table(res)
    named = bench.run_benchmark(data, n_splits=1, models=["CappedL1"], n_alphas=3, cv=2,
                                n_jobs=1, show_progress=False, time_limit=0)
    assert named.n_jobs_total == 1 and named.defaults_note is None
