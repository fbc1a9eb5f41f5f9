"""The main job says exactly what it did (issue 33): no silent wrong answer from the user's
file, the cross-validation rule and the noise of the comparison stated, a figure that does not
mislead, and results that survive a stopped run (``--resume``)."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import time
import types

import numpy as np
import pytest

from multitask import benchmark as bench
from multitask.benchmark_data import BenchmarkData, benchmark_splits, make_benchmark_data
from multitask.cli import main

pd = pytest.importorskip("pandas")

FAST = ["--splits", "1", "--grid-size", "2", "--cv-folds", "2", "--n-jobs", "1", "--quiet"]


def _read(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _long_csv(path, rows_per_task=12, m=4, scale=None, seed=0):
    """A long-format file: features a, b, c, target y, task g (``scale``: column -> factor)."""
    rng = np.random.default_rng(seed)
    n = rows_per_task * m
    df = pd.DataFrame(rng.standard_normal((n, 3)), columns=["a", "b", "c"])
    df["y"] = df["a"] - 0.5 * df["b"] + 0.3 * rng.standard_normal(n)
    df["g"] = np.repeat([f"t{t}" for t in range(m)], rows_per_task)
    for col, factor in (scale or {}).items():
        df[col] = df[col] * factor
    df.to_csv(path, index=False)
    return path


def _run(args, out):
    return main(["benchmark", *args, "--out", str(out)])


# ----------------------------------------------------------------------------- item 3
SCALE_ARGS = ["--models", "Pooled", "--target", "y", "--task", "g", *FAST]


@pytest.fixture(scope="module")
def plain_nmse(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plain")
    assert _run(["--input", str(_long_csv(folder / "plain.csv")), *SCALE_ARGS],
                folder / "out") == 0
    return {r["model"]: float(r["nmse_mean"]) for r in _read(folder / "out" / "results.csv")}


@pytest.mark.parametrize("factor", [1e155, 1e-170])
def test_a_feature_at_an_extreme_scale_gives_the_answer_of_the_plain_file(tmp_path, factor,
                                                                         plain_nmse, capsys):
    """A column of magnitude 1e155 once overflowed the standardization and was dropped."""
    scaled = _long_csv(tmp_path / "scaled.csv", scale={"a": factor})
    assert _run(["--input", str(scaled), *SCALE_ARGS], tmp_path / "s") == 0
    assert "RuntimeWarning" not in capsys.readouterr().err
    got = {r["model"]: float(r["nmse_mean"]) for r in _read(tmp_path / "s" / "results.csv")}
    assert got.keys() == plain_nmse.keys()
    for name, value in plain_nmse.items():
        assert got[name] == pytest.approx(value, rel=1e-6), name
        assert got[name] < 0.5  # the column that carries the signal was kept


def test_the_standardized_design_does_not_depend_on_the_scale_of_a_column():
    rng = np.random.default_rng(1)
    X, y = rng.standard_normal((40, 3)), rng.standard_normal((40, 2))
    big = X * [1.0, 1e300, 1e-300]
    (ref,) = benchmark_splits(make_benchmark_data(X, y), 1, 0.75)
    (out,) = benchmark_splits(make_benchmark_data(big, y), 1, 0.75)
    for a, b in ((ref[0], out[0]), (ref[2], out[2])):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)
    # ordinary data: the very numbers of the plain formula (x - mean) / std
    data = BenchmarkData("d", [X[:20], X[20:]], [y[:20, 0], y[20:, 0]], "regression",
                         ["a", "b"], official_splits=[{"train": [np.arange(15)] * 2,
                                                       "test": [np.arange(15, 20)] * 2}])
    ((X_tr, _, X_te, _),) = benchmark_splits(data, 1)
    pooled = np.vstack([X[:15], X[20:35]])
    mu, sd = pooled.mean(axis=0), pooled.std(axis=0)
    np.testing.assert_array_equal(X_tr[1], (X[20:35] - mu) / sd)
    np.testing.assert_array_equal(X_te[0], (X[15:20] - mu) / sd)


def test_a_test_value_beyond_the_float_range_once_standardized_is_refused_by_name():
    X = [np.array([[1e-300, 1.0], [2e-300, 2.0], [1e300, 3.0]]),
         np.array([[3e-300, 1.0], [1e-300, 0.0], [2e-300, 5.0]])]
    y = [np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 3.0])]
    data = BenchmarkData("d", X, y, "regression", ["a", "b"], feature_names=["tiny", "f"],
                         official_splits=[{"train": [[0, 1], [0, 1]], "test": [[2], [2]]}])
    with pytest.raises(ValueError, match="Feature .tiny.: a value of the test part of split 0"):
        benchmark_splits(data, 1)


def test_a_target_beyond_the_solvers_range_is_refused_by_task_not_scored_as_nan():
    """Found by the benchmark file fuzz: a test target of 1e300 made every nMSE NaN."""
    rng = np.random.default_rng(6)
    Y = rng.standard_normal((12, 2))
    Y[5, 1] = 1e300
    with pytest.raises(ValueError, match="task 'task_1' reach 1e\\+300 in magnitude"):
        make_benchmark_data(rng.standard_normal((12, 2)), Y)


# ----------------------------------------------------------------------------- item 8
def test_two_rows_per_task_is_refused_in_rows_per_task(tmp_path, capsys):
    path = _long_csv(tmp_path / "two.csv", rows_per_task=2, m=5)
    rc = _run(["--input", str(path), "--target", "y", "--task", "g", "--models", "Pooled",
               *FAST], tmp_path / "out")
    err = capsys.readouterr().err
    assert rc == 2
    assert "every task has 1 training row" in err and "2 rows each" in err, err
    assert "at least 3 rows per task" in err and "Leave-one-out" not in err, err


def test_a_duplicated_header_name_is_refused_naming_it(tmp_path, capsys):
    path = _long_csv(tmp_path / "d.csv")
    lines = path.read_text().splitlines()
    lines[0] = lines[0].replace("c,", "a,", 1)  # a, b, a, y, g
    assert lines[0].startswith("a,b,a,")
    path.write_text("\n".join(lines) + "\n")
    rc = _run(["--input", str(path), "--target", "y", "--task", "g", *FAST], tmp_path / "o")
    err = capsys.readouterr().err
    assert rc == 2 and "names column 'a' twice (columns 1 and 3)" in err, err
    assert not (tmp_path / "o").exists()


# ----------------------------------------------------------------------------- item 11
def _tasks(rows, m=3, seed=2):
    rng = np.random.default_rng(seed)
    X = [rng.standard_normal((rows, 3)) for _ in range(m)]
    y = [x[:, 0] + 0.3 * rng.standard_normal(rows) for x in X]
    return X, y


def test_the_header_says_which_cross_validation_rule_was_applied():
    X, y = _tasks(20)  # 15 training rows per task: leave-one-out (the default rule)
    res = bench.run_benchmark(make_benchmark_data(X, y, name="small"), 1, ["Pooled"],
                              n_alphas=2, cv=3, n_jobs=1, show_progress=False)
    head = bench.format_table(res).splitlines()[0]
    assert "leave-one-out CV within tasks (15 folds" in head, head
    assert "15 training rows per task" in head and "3-fold" not in head, head
    assert res.split_rows[0]["cv_rule"] == "leave-one-out: 15 folds"
    X, y = _tasks(40)  # 30 training rows per task: K-fold
    res = bench.run_benchmark(make_benchmark_data(X, y, name="large"), 1, ["Pooled"],
                              n_alphas=2, cv=3, n_jobs=1, show_progress=False)
    assert "by 3-fold CV within tasks inside" in bench.format_table(res).splitlines()[0]


# ----------------------------------------------------------------------------- item 12
def test_amse_says_which_tasks_it_left_out_and_that_it_is_unstable():
    X, y = _tasks(12, m=4)
    y[2] = np.full(12, 3.0)  # a task whose test targets are all equal
    res = bench.run_benchmark(make_benchmark_data(X, y, name="d"), 2, ["Pooled"], n_alphas=2,
                              cv=2, n_jobs=1, show_progress=False)
    assert res.left_out == {0: 1, 1: 1}
    text = bench.format_table(res)
    assert "aMSE leaves out the tasks whose test targets are all equal" in text
    assert "1 of 4 tasks on split 0, 1 tasks on split 1" in text
    assert "aMSE is unstable here" in text and "from 3 test rows per task" in text
    assert all(r["amse_tasks_left_out"] == 1 for r in res.split_rows)
    X, y = _tasks(120, m=2)  # 30 test rows per task: no warning about aMSE
    res = bench.run_benchmark(make_benchmark_data(X, y), 1, ["Pooled"], n_alphas=2, cv=2,
                              n_jobs=1, show_progress=False)
    text = bench.format_table(res)
    assert "aMSE leaves out" not in text and "aMSE is unstable" not in text


# ----------------------------------------------------------------------------- items 13, 17
def _result(mt, base, kind="regression", shared=False):
    key = bench.METRICS[kind][0][0]
    per = {"L21Regressor": mt, "IndependentRidgeRegressor": base,
           "PooledRegressor": [b + 0.3 for b in base]}
    split_rows = [{"model": m, "split": s, key: v} for m, vals in per.items()
                  for s, v in enumerate(vals)]
    rows = [{"model": m, f"{key}_mean": float(np.mean(v)), f"{key}_std": float(np.std(v))}
            for m, v in per.items()]
    return bench.BenchmarkResult(rows=rows, split_rows=split_rows, kind=kind, shared=shared)


def test_a_small_gain_below_the_split_to_split_spread_is_within_the_noise():
    base = [0.0200, 0.0260, 0.0170]
    res = _result([b - 0.0004 for b in base], base)  # 2% better on every split
    v = bench.verdict(res)
    ind = v["comparisons"][0]
    assert v["holds"] == "every split" and not v["clear"] and not ind["clear"]
    assert ind["relative"] == pytest.approx(0.0004 / np.mean(base))
    assert ind["spread"] == pytest.approx(np.std(base))
    text = bench.format_verdict(res)
    first = text.splitlines()[0]
    assert "within the noise" in first and "multi-task learning helps:" not in first, first
    assert "by 1.9%" in first
    assert "+1.9% of its nMSE" in text and "the two models' split-to-split std" in text


def test_a_gain_larger_than_the_noise_is_clear():
    base = [0.65, 0.66, 0.64]
    res = _result([b - 0.05 for b in base], base, shared=True)
    v = bench.verdict(res)
    assert v["clear"] and all(c["clear"] for c in v["comparisons"])
    text = bench.format_verdict(res)
    assert text.startswith("verdict: multi-task learning helps: L21Regressor has a lower nMSE")
    assert "by 7.7%" in text and "clear of the noise" in text
    assert "a shared design: each split draws the rows once for all tasks" in text
    one = bench.format_verdict(_result([0.6], [0.65]))
    assert "may help" in one and "noise is not measured" in one


# ----------------------------------------------------------------------------- item 14
def _figure_result(means):
    rows = [{"model": f"M{i}Regressor", "nmse_mean": m, "nmse_std": 0.1 * m}
            for i, m in enumerate(means)]
    return bench.BenchmarkResult(rows=rows, split_rows=[], setting="1 split")


def test_the_bars_start_at_zero_and_a_model_far_off_does_not_flatten_the_others():
    pytest.importorskip("matplotlib")
    fig = bench.plot_benchmark(_figure_result([0.60, 0.62, 0.65]))
    lo, hi = fig.axes[0].get_xlim()
    assert lo == 0.0 and hi < 1.0
    fig = bench.plot_benchmark(_figure_result([0.018, 0.019, 0.020, 0.83]))
    ax = fig.axes[0]
    lo, hi = ax.get_xlim()
    assert lo == 0.0 and hi < 0.05  # the axis fits the three close models
    texts = [t.get_text() for t in ax.texts]
    assert any(t.startswith("0.83") and "off scale" in t for t in texts), texts
    assert len(ax.patches) == 4 and max(p.get_width() for p in ax.patches) <= hi


def test_zero_singular_values_are_marked_at_zero_with_integer_ticks():
    pytest.importorskip("matplotlib")
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from multitask.plotting import plot_singular_values

    rng = np.random.default_rng(3)
    W = rng.standard_normal((6, 2)) @ rng.standard_normal((2, 4))  # rank 2 of 4
    fig = plot_singular_values(W)
    ax = fig.axes[0]
    (line,) = ax.get_lines()
    s = np.linalg.svd(W, compute_uv=False)
    np.testing.assert_allclose(line.get_ydata()[:2], s[:2])
    assert list(line.get_ydata()[2:]) == [0.0, 0.0]  # at zero, not at a floor
    (marks,) = ax.collections
    np.testing.assert_array_equal(marks.get_offsets(), [[3, 0.0], [4, 0.0]])
    assert "2 zero" in marks.get_label() and ax.get_yscale() == "symlog"
    FigureCanvasAgg(fig).draw()
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks), ticks
    full = plot_singular_values(rng.standard_normal((5, 3))).axes[0]
    assert full.get_yscale() == "log" and not full.collections


def test_the_spectrum_names_the_split_as_splits_csv_does():
    pytest.importorskip("matplotlib")
    res = _figure_result([0.6, 0.7])
    res.trace_coef = np.random.default_rng(4).standard_normal((4, 3))
    assert bench.plot_benchmark(res).axes[1].get_title().endswith("(split 0)")


# ----------------------------------------------------------------------------- item 15
def _counting_job(monkeypatch, stop_at=None, clock=None):
    """Count the jobs run; raise KeyboardInterrupt at job ``stop_at``; advance ``clock``."""
    calls = []
    real = bench._job

    def job(*args):
        calls.append((args[0], args[1]))
        if stop_at is not None and len(calls) == stop_at:
            raise KeyboardInterrupt
        out = real(*args)
        if clock is not None:
            clock[0] += 10.0
        return out

    monkeypatch.setattr(bench, "_job", job)
    return calls


RESUME = ["--splits", "2", "--grid-size", "2", "--cv-folds", "2", "--n-jobs", "1", "--quiet",
          "--models", "Pooled", "L21", "--target", "y", "--task", "g"]


def test_a_run_stopped_by_ctrl_c_keeps_its_jobs_and_resume_completes_it(tmp_path, capsys,
                                                                        monkeypatch):
    path = _long_csv(tmp_path / "d.csv", rows_per_task=40)
    out = tmp_path / "out"
    calls = _counting_job(monkeypatch, stop_at=3)
    assert main(["benchmark", "--input", str(path), *RESUME, "--out", str(out)]) == 130
    err = capsys.readouterr().err
    assert "stopped after 2 of 4 jobs" in err and "--resume" in err, err
    assert len(_read(out / "splits.csv")) == 2
    assert sum(int(r["n_splits"]) for r in _read(out / "results.csv")) == 2
    assert not (out / "results.png").exists()
    stopped = {(r["model"], r["split"]) for r in _read(out / "splits.csv")}

    calls = _counting_job(monkeypatch)
    assert main(["benchmark", "--input", str(path), *RESUME, "--out", str(out),
                 "--resume"]) == 0
    assert len(calls) == 2 and not {(m, str(s)) for m, s in calls} & stopped
    resumed = _read(out / "results.csv")
    assert all(r["n_splits"] == "2" for r in resumed) and (out / "results.png").exists()

    from multitask.cli import build_parser
    from multitask.cli_benchmark import read_benchmark_file

    args = build_parser().parse_args(["benchmark", "--input", str(path), *RESUME])
    fresh = bench.run_benchmark(read_benchmark_file(args), 2, args.models, n_alphas=2, cv=2,
                                n_jobs=1, show_progress=False)  # the same run, never stopped
    assert {r["model"]: float(r["nmse_mean"]) for r in resumed} == pytest.approx(
        {r["model"]: r["nmse_mean"] for r in fresh.rows}, rel=1e-5)

    calls = _counting_job(monkeypatch)  # a complete run: nothing left to do
    assert main(["benchmark", "--input", str(path), *RESUME, "--out", str(out),
                 "--resume"]) == 0
    assert calls == []
    capsys.readouterr()
    assert main(["benchmark", "--input", str(path), *RESUME, "--out", str(out), "--resume",
                 "--random-state", "1"]) == 2
    assert "--random-state" in capsys.readouterr().err


def test_a_time_limit_stops_starting_jobs_and_resume_completes_the_run(tmp_path, capsys,
                                                                       monkeypatch):
    path = _long_csv(tmp_path / "d.csv", rows_per_task=40)
    out = tmp_path / "out"
    clock = [0.0]
    monkeypatch.setattr(bench, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
    calls = _counting_job(monkeypatch, clock=clock)
    rc = main(["benchmark", "--input", str(path), *RESUME, "--out", str(out),
               "--time-limit", "15"])
    printed = capsys.readouterr().out
    assert rc == 3 and len(calls) == 2, printed
    assert "partial run: 2 of 4" in printed and "verdict: none yet" in printed
    assert "gain" not in printed
    assert len(_read(out / "splits.csv")) == 2
    journal = (out / "jobs.jsonl").read_text().splitlines()
    assert len(journal) == 3 and "settings" in json.loads(journal[0])
    calls = _counting_job(monkeypatch, clock=clock)
    assert main(["benchmark", "--input", str(path), *RESUME, "--out", str(out),
                 "--resume"]) == 0
    assert len(calls) == 2 and len(_read(out / "splits.csv")) == 4


@pytest.mark.slow
def test_ctrl_c_in_a_real_process_keeps_the_finished_jobs(tmp_path):
    """SIGINT to a real ``multitask benchmark`` process (slow: the child imports every model,
    a few seconds; the in-process test above covers the same path by default)."""
    path = _long_csv(tmp_path / "d.csv", rows_per_task=8, m=3)
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "multitask.cli", "benchmark", "--input", str(path),
            "--target", "y", "--task", "g", "--splits", "4", "--grid-size", "2",
            "--cv-folds", "2", "--n-jobs", "1", "--quiet", "--models", "Pooled",
            "--out", str(out)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    journal = out / "jobs.jsonl"
    start = time.monotonic()
    while time.monotonic() - start < 60 and proc.poll() is None:
        if journal.exists() and len(journal.read_text().splitlines()) >= 2:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "stopped after" in err and "--resume" in err, err
    done = _read(out / "splits.csv")
    assert 1 <= len(done) < 4
    assert main(["benchmark", "--input", str(path), "--target", "y", "--task", "g",
                 "--splits", "4", "--grid-size", "2", "--cv-folds", "2", "--n-jobs", "1",
                 "--quiet", "--models", "Pooled", "--out", str(out), "--resume"]) == 0
    rows = {(r["model"], r["split"]): r["nmse"] for r in _read(out / "splits.csv")}
    assert len(rows) == 4
    assert all(rows[(r["model"], r["split"])] == r["nmse"] for r in done)


# ----------------------------------------------------------------------------- item 16
def _wide_csv(path):
    rng = np.random.default_rng(5)
    df = pd.DataFrame(rng.standard_normal((30, 2)), columns=["x1", "x2"])
    for t in ("a", "b", "c"):
        df[f"y_{t}"] = df["x1"] + 0.2 * rng.standard_normal(30)
    df.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("columns", [["--targets", "y_*"],
                                     ["--features", "x1", "x2", "--targets", "*"],
                                     ["--features", "x*", "--targets", "*"],
                                     ["--targets", "y_[ab]", "y_c"]])
def test_targets_take_a_pattern_or_every_column_but_the_features(tmp_path, capsys, columns):
    from multitask.cli import build_parser
    from multitask.cli_benchmark import read_benchmark_file

    path = _wide_csv(tmp_path / "w.csv")
    args = build_parser().parse_args(["benchmark", "--input", str(path), *columns])
    data = read_benchmark_file(args)
    assert data.task_names == ["y_a", "y_b", "y_c"] and data.n_features == 2
    assert data.feature_names == ["x1", "x2"]
    assert main(["benchmark", "--input", str(path), *columns, "--models", "Pooled",
                 *FAST, "--out", str(tmp_path / "o")]) == 0


def test_a_pattern_that_matches_no_column_is_refused_naming_it(tmp_path, capsys):
    path = _wide_csv(tmp_path / "w.csv")
    assert main(["benchmark", "--input", str(path), "--targets", "z_*", *FAST,
                 "--out", str(tmp_path / "o")]) == 2
    assert "the --targets pattern 'z_*' matches no column" in capsys.readouterr().err
    assert main(["benchmark", "--input", str(path), "--targets", "*", *FAST,
                 "--out", str(tmp_path / "o")]) == 2
    assert "no feature columns left" in capsys.readouterr().err
