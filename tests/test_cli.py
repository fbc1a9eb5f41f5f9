"""The command line: ``benchmark``, ``fit`` and ``predict`` only, cheap to import, one-line
errors; the benchmark's output files."""

from __future__ import annotations

import csv
import subprocess
import sys

import pytest

from multitask.benchmark import RESULT_COLUMNS, SPLIT_COLUMNS
from multitask.cli import main


def _read(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_benchmark_school_prints_the_sorted_table_and_writes_its_files(tmp_path, capsys,
                                                                        monkeypatch):
    monkeypatch.setenv("MULTITASK_PROGRESS", "lines")
    rc = main(["benchmark", "school", "--models", "TraceNorm", "IndependentRidgeRegressor",
               "Pooled", "--splits", "2", "--grid-size", "4", "--cv-folds", "2",
               "--n-jobs", "1", "--out", str(tmp_path)])
    assert rc == 0
    captured = capsys.readouterr()
    rows = _read(tmp_path / "results.csv")
    assert list(rows[0]) == list(RESULT_COLUMNS)
    names = [r["model"] for r in rows]
    assert sorted(names) == ["IndependentRidgeRegressor", "PooledRegressor",
                             "TraceNormRegressor"]
    nmse = [float(r["nmse_mean"]) for r in rows]
    assert nmse == sorted(nmse)  # the table is sorted by nMSE
    assert all(0.3 < v < 1.2 for v in nmse)
    assert all(int(r["n_splits"]) == 2 for r in rows)
    # the printed table lists the models in the same order
    table = captured.out
    assert [table.index(n) for n in names] == sorted(table.index(n) for n in names)
    splits = _read(tmp_path / "splits.csv")
    assert list(splits[0]) == list(SPLIT_COLUMNS) and len(splits) == 6
    # progress went through multitask.progress, on stderr
    assert "School benchmark: 6/6 (100%)" in captured.err
    pytest.importorskip("matplotlib")
    assert (tmp_path / "results.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_benchmark_errors_are_one_line(capsys, tmp_path):
    out = str(tmp_path / "never")
    for argv, needle in (
            (["--splits", "11"], "--splits"),
            (["--models", "NoSuchModel"], "NoSuchModel"),
            (["--models", "MultiTaskRegressor"], "generic model"),
            (["--train-ratio", "1.5"], "--train-ratio"),
            (["--cv-folds", "1"], "folds")):
        assert main(["benchmark", "school", *argv, "--out", out]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("multitask: error:") and "\n" not in err, err
        assert needle in err
    assert not (tmp_path / "never").exists()


def test_reproduce_says_in_one_line_where_the_reproductions_went(capsys):
    for argv in (["reproduce", "--list"], ["reproduce", "capped-trace", "--dataset", "school"]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err
        assert "python -m reproductions NAME" in err


def test_only_benchmark_fit_and_predict(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for command in ("benchmark", "fit", "predict"):
        assert command in out
    assert "reproduce " not in out and "reproduce\n" not in out
    for argv in (["benchmark", "--help"], ["fit", "--help"], ["predict", "--help"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 0
        assert "usage" in capsys.readouterr().out.lower()


def test_importing_the_command_line_loads_neither_the_benchmark_nor_plotting():
    """Each command imports what it needs when it runs (scikit-learn itself loads pandas)."""
    code = ("import sys, multitask.cli; "
            "print(sorted(m for m in sys.modules if m.startswith(('multitask.benchmark', "
            "'multitask.plotting', 'matplotlib', 'reproductions', 'multitask.experiments'))))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"
