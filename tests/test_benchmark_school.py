"""The main job's module, multitask.benchmark: which models it finds, what it reports."""

from __future__ import annotations

import numpy as np
import pytest

import multitask
from multitask import benchmark as bench
from multitask.estimators.baselines import IndependentRidgeRegressor

PAPER_MODELS = ("SparseLowRankRegressor", "RobustMTLRegressor", "CappedTraceRegressor",
                "L1InfRegressor")
BASELINES = ("IndependentRidgeRegressor", "IndependentLassoRegressor", "PooledRegressor",
             "L21Regressor", "TraceNormRegressor")


def test_every_school_capable_regressor_is_found():
    found = bench.school_regressors()
    for name in (*PAPER_MODELS, *BASELINES):
        assert name in found
    assert not set(found) & set(bench.SKIPPED)
    public = {n for n in multitask.__all__ if n.endswith("Regressor")}
    # everything public is either run or skipped with a reason
    assert public == set(found) | (set(bench.SKIPPED) & public)
    assert all(found[n].__name__ == n for n in found)  # no deprecated alias twice
    assert len(found) >= 9


class BrandNewRegressor(IndependentRidgeRegressor):
    """Stands for a model added to the library later."""


class NeedsGraphRegressor(IndependentRidgeRegressor):
    """A model whose default grid cannot work on School."""

    def default_grid(self, X, y, task=None, **kwargs):
        raise ValueError("needs a task graph")


def test_a_new_model_appears_without_editing_the_benchmark(monkeypatch):
    monkeypatch.setattr(multitask, "BrandNewRegressor", BrandNewRegressor, raising=False)
    monkeypatch.setattr(multitask, "__all__", [*multitask.__all__, "BrandNewRegressor"])
    assert "BrandNewRegressor" in bench.school_regressors()


def test_a_model_whose_grid_fails_on_school_is_reported_as_skipped(monkeypatch):
    monkeypatch.setattr(multitask, "NeedsGraphRegressor", NeedsGraphRegressor, raising=False)
    monkeypatch.setattr(multitask, "__all__", [*multitask.__all__, "NeedsGraphRegressor"])
    res = bench.run_school(1, ["Pooled", "NeedsGraph"], n_alphas=2, cv=2, n_jobs=1,
                           show_progress=False)
    assert [r["model"] for r in res.rows] == ["PooledRegressor"]
    assert "needs a task graph" in res.skipped["NeedsGraphRegressor"]
    assert "skipped NeedsGraphRegressor" in bench.format_table(res)


@pytest.fixture(scope="module")
def small_run():
    return bench.run_school(2, ["IndependentRidge", "PooledRegressor"], n_alphas=3, cv=2,
                            n_jobs=1, show_progress=False)


def test_rows_are_sorted_and_summarize_the_splits(small_run):
    rows = small_run.rows
    assert [r["nmse_mean"] for r in rows] == sorted(r["nmse_mean"] for r in rows)
    assert len(small_run.split_rows) == 4
    for r in rows:
        per_split = [s["nmse"] for s in small_run.split_rows if s["model"] == r["model"]]
        assert r["nmse_mean"] == pytest.approx(np.mean(per_split))
        assert r["nmse_std"] == pytest.approx(np.std(per_split))
        assert r["n_splits"] == 2 and r["params"].startswith("alpha=")
    assert small_run.trace_coef is None  # the trace-norm model did not run
    assert "2 official 75/25 splits" in small_run.setting


def test_parallel_jobs_give_the_serial_results(small_run):
    par = bench.run_school(2, ["PooledRegressor"], n_alphas=3, cv=2, n_jobs=2,
                           show_progress=False)
    serial = [r for r in small_run.split_rows if r["model"] == "PooledRegressor"]
    assert [r["nmse"] for r in par.split_rows] == [r["nmse"] for r in serial]
    # joblib's process pool still works in this process afterwards: the run's workers were its
    # own, not loky's process-wide executor, which joblib would take over and fail on
    from joblib import Parallel, delayed

    assert Parallel(n_jobs=2)(delayed(abs)(-i) for i in range(4)) == [0, 1, 2, 3]


def test_the_figure_has_the_bars_and_the_spectrum(small_run):
    pytest.importorskip("matplotlib")
    fig = bench.plot_school(small_run)
    assert len(fig.axes) == 1  # no trace-norm model: bars only
    rng = np.random.default_rng(0)
    small_run.trace_coef = rng.standard_normal((6, 3)) @ rng.standard_normal((3, 5))
    fig = bench.plot_school(small_run)
    bars, spectrum = fig.axes
    assert len(bars.patches) == len(small_run.rows)
    (line,) = [ln for ln in spectrum.get_lines() if len(ln.get_xdata()) == 5]
    np.testing.assert_allclose(np.sort(line.get_ydata())[::-1][:3],
                               np.linalg.svd(small_run.trace_coef, compute_uv=False)[:3])


def test_invalid_arguments_name_the_problem():
    with pytest.raises(ValueError, match="Unknown model 'Nope'"):
        bench.run_school(1, ["Nope"], show_progress=False)
    with pytest.raises(ValueError, match="generic model"):
        bench.run_school(1, ["MultiTaskRegressor"], show_progress=False)
    with pytest.raises(ValueError, match="--splits"):
        bench.run_school(0, ["Pooled"], show_progress=False)
    with pytest.raises(ValueError, match="grid size"):
        bench.run_school(1, ["Pooled"], n_alphas=0, show_progress=False)
