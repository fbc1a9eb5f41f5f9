"""The main job's grid ratio: ``run_school(alpha_ratio=...)`` and ``--grid-ratio``."""

from __future__ import annotations

import pytest

from multitask import benchmark as bench
from multitask.cli import main


@pytest.mark.parametrize("ratio", [0.0, 1.0, 2.0, -0.1])
def test_a_grid_ratio_outside_the_open_unit_interval_is_refused(ratio):
    with pytest.raises(ValueError, match="grid ratio"):
        bench.run_school(1, ["Pooled"], alpha_ratio=ratio, show_progress=False)


def test_the_cli_passes_the_grid_ratio_and_defaults_to_the_module_constant(monkeypatch,
                                                                            tmp_path):
    seen = []

    def fake_run(*args, **kwargs):
        seen.append(kwargs)
        row = {"model": "PooledRegressor", "nmse_mean": 0.6, "nmse_std": 0.0,
               "amse_mean": 0.8, "amse_std": 0.0, "n_splits": 1, "fit_seconds": 0.1,
               "params": "alpha=1"}
        return bench.SchoolBenchmark(rows=[row], split_rows=[{**row, "split": 0}],
                                     setting="a stand-in")

    monkeypatch.setattr(bench, "run_benchmark", fake_run)
    monkeypatch.setattr("multitask.cli_benchmark._save_figure", lambda res, path: None)
    assert main(["benchmark", "school", "--quiet", "--out", str(tmp_path)]) == 0
    assert main(["benchmark", "school", "--quiet", "--grid-ratio", "0.001",
                 "--out", str(tmp_path)]) == 0
    assert seen[0]["alpha_ratio"] == bench.DEFAULT_ALPHA_RATIO
    assert seen[0]["n_alphas"] == bench.DEFAULT_N_ALPHAS
    assert seen[1]["alpha_ratio"] == 0.001


def test_the_grid_ratio_reaches_the_search():
    """A wider ratio moves the weak end of the grid: the chosen values differ or agree, but
    both runs complete and report one row per model."""
    wide = bench.run_school(1, ["IndependentRidge"], n_alphas=3, alpha_ratio=1e-3, n_jobs=1,
                            show_progress=False)
    narrow = bench.run_school(1, ["IndependentRidge"], n_alphas=3, alpha_ratio=0.5, n_jobs=1,
                              show_progress=False)
    assert len(wide.rows) == len(narrow.rows) == 1
    assert wide.rows[0]["params"] != narrow.rows[0]["params"]
