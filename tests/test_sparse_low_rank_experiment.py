"""Tests of the sparse-low-rank reproduction (``multitask reproduce sparse-low-rank``)."""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from multitask.estimators import IndependentLassoRegressor
from multitask.experiments import discover
from multitask.experiments.sparse_low_rank import (
    EXTRA_METRICS,
    METRICS,
    PAPER_TABLE_II,
    SCUT_METRICS,
    _comparison_table,
    _MixedNormPath,
    _TraceBallRegressor,
    gamma_top,
    make_fig2_data,
    make_planted_data,
    method_paths,
    run,
    run_split,
    select_by_cv,
    sparse_factors,
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
    assert {"tau", "gamma", "rank", "nnz_P", "face", "cv_auc"} <= set(res["MixedNorm"][2])


def _standardized(seed):
    X, Y = _multilabel(seed)
    Xs = (X - X.mean(0)) / X.std(0)
    return Xs, np.where(Y > 0, 1.0, -1.0)


def test_mixednorm_grid_nests_tracenorm_and_onenorm_exactly():
    """MixedNorm's first two paths are TraceNorm's and OneNorm's: identical validation AUCs,
    so its best mean CV AUC is at least theirs (no tolerance: the same computations)."""
    Xs, Ypm = _standardized(1)
    est, paths = method_paths("MixedNorm", Xs, Ypm, 4, 1e-8)
    assert all(np.isinf(s["gamma"]) for s in paths[0])
    assert all(s["tau"] == 0.0 for s in paths[1])
    assert len(paths) > 2 and all(np.isfinite(s["gamma"]) and s["tau"] > 0
                                  for p in paths[2:] for s in p)
    _, s_mixed = select_by_cv(est, paths, Xs, Ypm, n_folds=3)
    est_t, paths_t = method_paths("TraceNorm", Xs, Ypm, 4, 1e-8)
    _, s_trace = select_by_cv(est_t, paths_t, Xs, Ypm, n_folds=3)
    est_o, paths_o = method_paths("OneNorm", Xs, Ypm, 4, 1e-8)
    _, s_one = select_by_cv(est_o, paths_o, Xs, Ypm, n_folds=3)
    k_t, k_o = len(paths[0]), len(paths[1])
    np.testing.assert_array_equal(s_mixed[:, :k_t], s_trace)
    np.testing.assert_array_equal(s_mixed[:, k_t:k_t + k_o], s_one)
    best = np.nanmax(np.nanmean(s_mixed, axis=0))
    assert best >= np.nanmax(s_trace.mean(0)) and best >= np.nanmax(s_one.mean(0))


def test_interior_gammas_lie_below_gamma_top():
    """Interior settings start just below gamma_top(tau), where P = 0 stops being optimal:
    the sparse part of the fit at the first interior gamma is nonzero, at gamma_top it is 0."""
    Xs, Ypm = _standardized(1)
    est, paths = method_paths("MixedNorm", Xs, Ypm, 4, 1e-8)
    tau = paths[2][0]["tau"]
    top = gamma_top(Xs, Ypm, [tau], 1e-10)[0]
    assert paths[2][0]["gamma"] == pytest.approx(top * sparse_factors(3)[0], rel=1e-3)
    inner = _MixedNormPath(gamma=paths[2][0]["gamma"], tau=tau).fit(Xs, Ypm)
    assert np.count_nonzero(inner.sparse_component_) > 0
    at_top = _MixedNormPath(gamma=1.01 * top, tau=tau).fit(Xs, Ypm)
    assert np.count_nonzero(at_top.sparse_component_) == 0


def test_mixednorm_at_p_zero_is_the_tracenorm_model():
    """Independent of the experiment's shortcut: the accelerated projected gradient of the
    mixed model at gamma just above gamma_top(tau) returns P = 0 and the trace-ball
    solution (reference: FISTA to a 1e-13 fixed-point residual), to 1e-7 relative."""
    from multitask.data import as_multitask_data
    from multitask.estimators import SparseLowRankRegressor
    from multitask.losses import get_datafit
    from multitask.penalties import TraceBall
    from multitask.solvers.fista import fista

    Xs, Ypm = _standardized(1)
    tau = 2.0
    data, _ = as_multitask_data(Xs, Ypm)
    ref = fista(get_datafit("squared", data, True), TraceBall(tau), criterion="residual",
                tol=1e-13, max_iter=100000)
    assert ref.converged
    Xc, Yc = Xs - Xs.mean(0), Ypm - Ypm.mean(0)
    top = float(np.max(np.abs(Xc.T @ (Xc @ ref.W - Yc)))) / len(Xs)
    ag = SparseLowRankRegressor(gamma=1.001 * top, tau=tau, criterion="kkt", tol=1e-14,
                                max_iter=100000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ag.fit(Xs, Ypm)
    assert np.count_nonzero(ag.sparse_component_) == 0
    W = ag.coef_.T
    assert np.linalg.norm(W - ref.W) <= 1e-7 * np.linalg.norm(ref.W)


def test_refit_at_a_special_case_equals_that_method():
    """Where the CV picks P = 0, MixedNorm's refit *is* TraceNorm's (coefficients equal to
    1e-12 relative, metrics identical); the tau = 0 end refits exactly as OneNorm."""
    X, Y = _multilabel(0)
    res, fits = run_split(X[:100], Y[:100], X[100:], Y[100:],
                          methods=["MixedNorm", "TraceNorm", "OneNorm"], n_grid=4, n_folds=3,
                          return_estimators=True)
    mixed, trace = res["MixedNorm"], res["TraceNorm"]
    assert mixed[2]["face"] == "P=0" and mixed[2]["nnz_P"] == 0
    assert mixed[2]["tau"] == trace[2]["tau"]
    W_m, W_t = fits["MixedNorm"].coef_, fits["TraceNorm"].coef_
    assert np.linalg.norm(W_m - W_t) <= 1e-12 * np.linalg.norm(W_t)
    assert mixed[0] == trace[0]
    assert mixed[2]["cv_auc"] == trace[2]["cv_auc"] >= res["OneNorm"][2]["cv_auc"]
    # the lasso end of the mixed model is OneNorm's estimator at alpha = gamma
    Xs = (X[:100] - X[:100].mean(0)) / X[:100].std(0)
    Ypm = np.where(Y[:100] > 0, 1.0, -1.0)
    alpha = res["OneNorm"][2]["alpha"]
    lasso_end = _MixedNormPath(gamma=alpha, tau=0.0, tol=1e-10).fit(Xs, Ypm)
    one = IndependentLassoRegressor(alpha=alpha, tol=1e-10, max_iter=3000).fit(Xs, Ypm)
    assert np.linalg.norm(lasso_end.coef_ - one.coef_) <= 1e-12 * np.linalg.norm(one.coef_)
    assert not np.any(lasso_end.low_rank_component_) and lasso_end.rank_ == 0


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
