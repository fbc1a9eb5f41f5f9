"""The command line: the main benchmark, the experiment list, output files."""

from __future__ import annotations

import csv

import pytest

from multitask.cli import main, write_results_csv
from multitask.experiments.registry import RESULT_COLUMNS, discover


def _read(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_benchmark_school_writes_results_and_multitask_models_beat_ridge(tmp_path, capsys):
    """Two official splits: every model reported; trace norm and l2,1 beat independent ridge."""
    rc = main(["benchmark", "school", "--splits", "2", "--grid-size", "6",
               "--out", str(tmp_path)])
    assert rc == 0
    out = capsys.readouterr().out
    for method in ("IndependentRidge", "IndependentLasso", "Pooled", "L21", "TraceNorm"):
        assert method in out
    rows = _read(tmp_path / "results.csv")
    assert list(rows[0]) == list(RESULT_COLUMNS)
    nmse = {r["method"]: float(r["mean"]) for r in rows if r["metric"] == "nMSE"}
    assert set(nmse) == {"IndependentRidge", "IndependentLasso", "Pooled", "L21", "TraceNorm"}
    assert all(0.3 < v < 1.2 for v in nmse.values())
    assert nmse["TraceNorm"] < nmse["IndependentRidge"]
    assert nmse["L21"] < nmse["IndependentRidge"]
    assert all(int(r["repeats"]) == 2 for r in rows)


def test_benchmark_rejects_bad_split_count(capsys):
    assert main(["benchmark", "school", "--splits", "11"]) == 2
    assert "--splits" in capsys.readouterr().err


def test_reproduce_list_names_every_registered_experiment(capsys):
    assert main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    for name in discover():
        assert name in out


def test_help_everywhere(capsys):
    for argv in (["--help"], ["benchmark", "--help"], ["reproduce", "--help"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 0
        assert "usage" in capsys.readouterr().out.lower()


def test_results_csv_is_written_atomically(tmp_path):
    """A failing write leaves no partial file behind."""
    target = tmp_path / "results.csv"

    class Boom(dict):
        def __getitem__(self, k):
            raise RuntimeError("boom")

        def get(self, k, default=None):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_results_csv([Boom(a=1)], target)
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []
