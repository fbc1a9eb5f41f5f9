"""The capped-trace reproduction: synthetic advantage over the trace norm, CV helpers, smoke
runs. The full School acceptance run is marked slow (``pytest -m slow``)."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from multitask.estimators.baselines import IndependentRidgeRegressor
from multitask.experiments import capped_trace as ex
from multitask.experiments.registry import RESULT_COLUMNS, discover


def _args(**kw):
    base = dict(dataset="synthetic", repeats=None, random_state=0, out=None, quick=True,
                data_dir=None, n_jobs=1, tau_grid="paper", n_lambdas=None, lambda_ratio=None,
                folds=None, intercept="auto", stage_solver="psvt")
    base.update(kw)
    return argparse.Namespace(**base)


def test_synthetic_ramusa_beats_trace_norm_at_every_omega():
    """Seeded, small: 2 simulations per omega, parameters chosen on the validation rows."""
    cfg = ex.Config(n_lams=8, lam_ratio=1e-3, final_max_iter=1000, final_tol=1e-6)
    for omega in ex.OMEGAS:
        res = [ex.synthetic_trial(omega, seed, cfg, None, None,
                                  sizes={"n_val": 100, "n_test": 50}) for seed in (0, 1)]
        ramusa = np.mean([r["methods"]["RAMUSA"]["mse_train"] for r in res])
        trace = np.mean([r["methods"]["MTFL"]["mse_train"] for r in res])
        ols = np.mean([r["methods"]["OLS"]["mse_train"] for r in res])
        assert ramusa < trace < ols, (omega, ramusa, trace, ols)


def test_make_synthetic_and_design_mse():
    rng = np.random.default_rng(0)
    data = ex.make_synthetic(10.0, rng, n_tasks=6, n_train=20, n_val=5, n_test=7)
    W = data["W"]
    assert W.shape == (15, 6) and np.all(W[5:] == 0) and np.linalg.matrix_rank(W) == 5
    Xs, ys = data["train"]
    assert len(Xs) == 6 and Xs[0].shape == (20, 15) and ys[0].shape == (20,)
    W2 = W + 0.1
    direct = np.mean([np.mean((X @ (W2[:, t] - W[:, t])) ** 2) for t, X in enumerate(Xs)])
    assert ex.design_mse(Xs, W2, W) == pytest.approx(direct)


def test_fold_indices():
    rng = np.random.default_rng(0)
    sizes = [1, 2, 3, 11]
    folds = ex._fold_indices(sizes, 5, False, rng)
    for t, n in enumerate(sizes):
        val = np.concatenate([f[t][1] for f in folds])
        for f in folds:
            assert len(f[t][0]) >= 1  # every task keeps training rows in every fold
            assert np.intersect1d(f[t][0], f[t][1]).size == 0
        if n > 1:
            np.testing.assert_array_equal(np.sort(val), np.arange(n))
    shared = ex._fold_indices([10, 10, 10], 3, True, rng)
    for f in shared:
        assert all(np.array_equal(f[0][1], g[1]) for g in f)


def test_select_breaks_ties_towards_the_trace_norm():
    params = [{"alpha": 1.0, "tau": 0.1}, {"alpha": 1.0, "tau": np.inf},
              {"alpha": 2.0, "tau": 10.0}, {"alpha": 0.5, "tau": 1.0}]
    scores = np.array([[3.0, 3.0], [3.0, 3.0], [4.0, 4.0], [3.0, 3.0]])
    assert ex._select(scores, params)["tau"] == np.inf
    scores[3] = [2.0, 2.0]
    assert ex._select(scores, params) == params[3]
    # classification: errors first, squared error breaks ties
    scores = np.array([[5.0, 9.0], [5.0, 8.0], [6.0, 1.0], [7.0, 1.0]])
    assert ex._select(scores, params) == params[1]


def test_ridge_path_matches_the_estimator(regression_lists):
    Xs, ys = regression_lists
    df = ex._datafit(Xs, ys, True)
    alphas = np.array([3.0, 0.1])
    W, b = ex._ridge_path(df, alphas)
    for k, a in enumerate(alphas):
        est = IndependentRidgeRegressor(alpha=a).fit(Xs, ys)
        np.testing.assert_allclose(W[k].T, est.coef_, atol=1e-10)
        np.testing.assert_allclose(b[k], est.intercept_, atol=1e-10)


def test_registered_for_the_cli():
    exps = discover()
    assert "capped-trace" in exps
    assert exps["capped-trace"].datasets == ex.DATASETS


def test_synthetic_quick_run_writes_rows_and_figures(tmp_path):
    rows = ex.run(_args(repeats=1, out=str(tmp_path)))
    assert all(set(RESULT_COLUMNS) <= set(r) for r in rows)
    methods = {r["method"] for r in rows}
    assert {"Lasso", "RR", "OLS", "MTFL", "RAMUSA"} <= methods
    paper = [r for r in rows if r["metric"].endswith("[paper]")]
    assert len(paper) == 16 and {r["setting"] for r in paper} == {f"omega={w}"
                                                                   for w in ex.OMEGAS}
    for name in ("capped_trace_tau_curve.csv", "capped_trace_stages.csv",
                 "capped_trace_synthetic.png"):
        assert (tmp_path / name).stat().st_size > 0


def test_school_quick_run_structure(tmp_path):
    rows = ex.run(_args(dataset="school", repeats=1, out=str(tmp_path)))
    ours = [r for r in rows if r["metric"] == ex.NMSE_POOLED]
    assert {r["setting"] for r in ours} == {"10%", "20%", "30%"}
    assert {r["method"] for r in ours} == set(ex.METHODS)
    assert all(0 < r["mean"] < 2 for r in ours)
    assert (tmp_path / "capped_trace_splits.csv").stat().st_size > 0
    with pytest.raises(ValueError, match="dataset"):
        ex.run(_args(dataset="traffic"))


@pytest.mark.slow
def test_school_acceptance_full_protocol():
    """Acceptance: RAMUSA's mean pooled nMSE is below MTFL's at 10%, 20% and 30% training
    (15 repetitions, the default protocol; about 8-10 minutes on 2 cores)."""
    rows = ex.run(_args(dataset="school", quick=False, n_jobs=2))
    mean = {(r["setting"], r["method"]): r["mean"] for r in rows
            if r["metric"] == ex.NMSE_POOLED}
    for s in ("10%", "20%", "30%"):
        assert mean[(s, "RAMUSA")] < mean[(s, "MTFL")], (s, mean)
