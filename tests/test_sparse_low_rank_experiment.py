"""Tests of the sparse-low-rank reproduction (``multitask reproduce sparse-low-rank``)."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from multitask.experiments import discover
from multitask.experiments.sparse_low_rank import (
    EXTRA_METRICS,
    METRICS,
    PAPER_TABLE_II,
    SCUT_METRICS,
    _comparison_table,
    _TraceBallRegressor,
    make_fig2_data,
    make_planted_data,
    method_paths,
    run,
    run_split,
    select_by_cv,
)


def _multilabel(seed=0, n=300, d=12, m=4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    W = rng.standard_normal((d, 2)) @ rng.standard_normal((2, m))
    Y = (X @ W + 0.5 * rng.standard_normal((n, m)) > 0.8).astype(int)
    return X, Y


def test_registered_with_the_three_datasets():
    exp = discover()["sparse-low-rank"]
    assert exp.datasets == ("yeast", "scene", "synthetic")


def test_run_split_metrics_and_choices():
    X, Y = _multilabel()
    res = run_split(X[:100], Y[:100], X[100:], Y[100:],
                    methods=["MixedNorm", "TraceNorm", "OneNorm", "IndLogistic"], n_grid=3,
                    n_folds=2)
    assert set(res) == {"MixedNorm", "TraceNorm", "OneNorm", "IndLogistic"}
    for metrics, seconds, _best in res.values():
        assert set(metrics) == set(METRICS + SCUT_METRICS + EXTRA_METRICS)
        assert all(0 <= v <= 100 for v in metrics.values())
        assert seconds > 0
    # the low-rank signal is learnable: better than chance
    assert res["MixedNorm"][0]["AUC"] > 60
    assert {"tau", "gamma", "rank", "nnz_P"} <= set(res["MixedNorm"][2])


def test_mixednorm_grid_contains_onenorm():
    """The tau = 0 row of MixedNorm's CV grid is OneNorm's path: same validation AUCs."""
    X, Y = _multilabel(1)
    Xs = (X - X.mean(0)) / X.std(0)
    Ypm = np.where(Y > 0, 1.0, -1.0)
    est, paths = method_paths("MixedNorm", Xs, Ypm, 4, 1e-8)
    assert paths[0][0]["tau"] == 0.0
    _, s_mixed = select_by_cv(est, paths[:1], Xs, Ypm, n_folds=2)
    est1, paths1 = method_paths("OneNorm", Xs, Ypm, 4, 1e-8)
    _, s_one = select_by_cv(est1, paths1, Xs, Ypm, n_folds=2)
    np.testing.assert_allclose(s_mixed, s_one, atol=2e-3)


def test_trace_ball_regressor_is_feasible_and_binding():
    X, Y = _multilabel(2)
    est = _TraceBallRegressor(tau=0.3, tol=1e-8).fit(X, Y * 2.0 - 1.0)
    nuc = np.linalg.svd(est.coef_, compute_uv=False).sum()
    assert nuc == pytest.approx(0.3, rel=1e-6)


def test_synthetic_generators():
    d = make_fig2_data(random_state=0)
    assert d["P"].shape == (100, 30)
    assert np.all(d["P"][:30, :10] == 0)
    assert np.linalg.matrix_rank(d["Q"]) == 10
    assert len(d["X_train"]) == 30 and d["X_train"][0].shape == (60, 100)
    p = make_planted_data(random_state=0)
    assert np.count_nonzero(p["P"]) == 60 and np.linalg.matrix_rank(p["Q"]) == 2


def test_comparison_table_lists_paper_values():
    rows = [{"method": "MixedNorm", "metric": m, "mean": 50.0, "std": 1.0} for m in METRICS]
    text = _comparison_table(rows, "scene")
    assert "91.60" in text and "50.00 ± 1.00" in text
    assert set(PAPER_TABLE_II) == {"scene", "yeast"}


def test_bad_dataset_raises():
    args = argparse.Namespace(dataset="mediamill", quick=True, repeats=None, random_state=0,
                              out=None, data_dir=None, n_jobs=None)
    with pytest.raises(ValueError, match="dataset"):
        run(args)


@pytest.mark.slow
@pytest.mark.parametrize("dataset", ["yeast", "scene"])
def test_quick_reproduction_runs(dataset):
    args = argparse.Namespace(dataset=dataset, quick=True, repeats=None, random_state=0,
                              out=None, data_dir=None, n_jobs=1)
    rows = run(args)
    methods = {r["method"] for r in rows}
    assert {"MixedNorm", "TraceNorm", "OneNorm", "RidgeReg"} <= methods
    auc = {r["method"]: r["mean"] for r in rows if r["metric"] == "AUC"}
    assert auc["MixedNorm"] > 55


def test_scut_thresholds_maximize_training_f1():
    from sklearn.metrics import f1_score

    from multitask.experiments.sparse_low_rank import scut_thresholds

    rng = np.random.default_rng(3)
    Y = (rng.random((80, 3)) < 0.3).astype(int)
    S = Y + rng.standard_normal((80, 3))
    thr = scut_thresholds(Y, S)
    for t in range(3):
        best = f1_score(Y[:, t], S[:, t] > thr[t])
        brute = max(f1_score(Y[:, t], S[:, t] > c) for c in np.r_[S[:, t] - 1e-9, np.inf])
        assert best == pytest.approx(brute)
    Y[:, 0] = 0
    assert scut_thresholds(Y, S)[0] == np.inf
