"""The capped-trace reproduction (``python -m reproductions capped-trace``), reduced; the full
School protocol is marked slow (``pytest -m slow``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reproductions import capped_trace as ct  # noqa: E402
from reproductions.__main__ import main  # noqa: E402
from reproductions.common import RESULT_COLUMNS  # noqa: E402


def _args(**kw):
    base = dict(dataset="synthetic", repeats=None, random_state=0, out=None, quick=True,
                data_dir=None, n_jobs=None, tau_grid="paper", n_lambdas=None, lambda_ratio=None,
                folds=None, intercept="auto", stage_solver="prox")
    base.update(kw)
    return argparse.Namespace(**base)


def _have_data() -> bool:
    from multitask.datasets import find_data_dir

    try:
        find_data_dir()
    except FileNotFoundError:
        return False
    return True


@pytest.mark.slow  # an experiment (the paper's synthetic setup, reduced)
def test_synthetic_ramusa_beats_trace_norm_at_every_omega():
    """Seeded, reduced: 2 simulations for the smallest and the largest omega, parameters chosen
    on the validation rows; RAMUSA's design MSE is below the trace norm's, which is below least
    squares."""
    cfg = ct.Config(n_lams=5, lam_ratio=1e-3, final_max_iter=1000, final_tol=1e-6)
    for omega in (5, 20):
        res = [ct.synthetic_trial(omega, seed, cfg, None, None,
                                  sizes={"n_val": 100, "n_test": 50}) for seed in (0, 1)]
        ramusa = np.mean([r["methods"]["RAMUSA"]["mse_train"] for r in res])
        trace = np.mean([r["methods"]["MTFL"]["mse_train"] for r in res])
        ols = np.mean([r["methods"]["OLS"]["mse_train"] for r in res])
        assert ramusa < trace < ols, (omega, ramusa, trace, ols)


def test_synthetic_data_and_holdout_split():
    data = ct.synthetic_data(10.0, np.random.default_rng(0), n_tasks=6, n_train=20, n_val=5,
                             n_test=7)
    W = data.W_true
    assert W.shape == (15, 6) and np.all(W[5:] == 0) and np.linalg.matrix_rank(W) == 5
    X, y, cv = ct.holdout(data.X, data.y, data.X_val, data.y_val)
    (train, test), = cv
    assert len(X) == 6 and X[0].shape == (25, 15)
    assert len(train) == 6 * 20 and len(test) == 6 * 5
    stacked = np.concatenate(y)
    np.testing.assert_array_equal(stacked[test[:5]], data.y_val[0])
    np.testing.assert_array_equal(stacked[train[20:40]], data.y[1])


def test_grids_list_taus_from_inf_down_and_alphas_from_strong_to_weak(regression_lists):
    Xs, ys = regression_lists
    g = ct.grids(Xs, ys, True, ct.Config())
    taus = g["RAMUSA"]["tau"]
    assert taus[0] == np.inf and taus == sorted(taus, reverse=True)
    for name in ("Lasso", "MTFL", "RR"):
        assert np.all(np.diff(g[name]["alpha"]) < 0)
    assert len(g["MTFL"]["alpha"]) == 8 and len(g["RR"]["alpha"]) == 12


def test_error_scorer_counts_errors_first():
    class Fixed:
        def __init__(self, pred):
            self.pred = np.asarray(pred, dtype=float)

        def predict(self, X):
            return self.pred

    y = np.array([1.0, -1.0, 1.0, -1.0])
    one_error = Fixed([0.9, -0.9, -0.1, -1.0])
    no_error_far = Fixed([5.0, -5.0, 5.0, -5.0])
    assert ct.error_scorer(no_error_far, None, y) > ct.error_scorer(one_error, None, y)
    close = Fixed([1.0, -1.0, 0.9, -1.0])
    assert ct.error_scorer(close, None, y) > ct.error_scorer(no_error_far, None, y)


@pytest.mark.skipif(not _have_data(), reason="shared data folder not found")
def test_sarcos_quick_run_structure(tmp_path):
    rows = ct.run(_args(dataset="sarcos", repeats=1, n_lambdas=3, folds=2, out=str(tmp_path)))
    assert all(set(r) == set(RESULT_COLUMNS) for r in rows)
    ours = [r for r in rows if r["metric"] == ct.NMSE_TASK]
    assert {r["setting"] for r in ours} == {"100", "200", "300"}
    assert {r["method"] for r in ours} == set(ct.METHODS)
    assert all(0 < r["mean"] < 1 for r in ours)
    splits = (tmp_path / "capped_trace_splits.csv").read_text().splitlines()
    assert len(splits) == 1 + 3 * len(ct.METHODS) and "tau" in splits[0]


def test_entry_point_synthetic_writes_the_figures(tmp_path):
    pytest.importorskip("matplotlib")
    assert main(["capped-trace", "--dataset", "synthetic", "--quick", "--repeats", "1",
                 "--n-lambdas", "3", "--omegas", "5", "--out", str(tmp_path)]) == 0
    for name in ("results.csv", "capped_trace_tau_curve.csv", "capped_trace_stages.csv",
                 "capped_trace_synthetic.png"):
        assert (tmp_path / name).exists(), name
    stages = (tmp_path / "capped_trace_stages.csv").read_text().splitlines()
    assert stages[0] == "omega,stage,err_trace_norm,std" and len(stages) >= 3
    curve = (tmp_path / "capped_trace_tau_curve.csv").read_text().splitlines()
    assert len(curve) == 1 + 7  # tau from 1e-3 to 1e3 (--quick: decades)


@pytest.mark.slow
@pytest.mark.skipif(not _have_data(), reason="shared data folder not found")
def test_school_acceptance_full_protocol():
    """The paper's School protocol (15 splits, 5-fold CV): RAMUSA's mean nMSE below MTFL's."""
    rows = ct.run(_args(dataset="school", quick=False))
    pooled = {(r["setting"], r["method"]): r["mean"] for r in rows
              if r["metric"] == ct.NMSE_POOLED}
    for s in ("10%", "20%", "30%"):
        assert pooled[s, "RAMUSA"] < pooled[s, "MTFL"]
