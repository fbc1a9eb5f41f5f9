"""The sparse + low-rank reproduction (``python -m reproductions sparse-low-rank``), reduced."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from multitask import MultiTaskRegressor, SparseLowRankRegressor  # noqa: E402
from multitask.penalties import TraceBall  # noqa: E402
from reproductions import sparse_low_rank as slr  # noqa: E402
from reproductions.__main__ import main  # noqa: E402
from reproductions.common import RESULT_COLUMNS  # noqa: E402


def _multilabel(seed=0, n=300, d=12, m=4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    W = rng.standard_normal((d, 2)) @ rng.standard_normal((2, m))
    Y = (X @ W + 0.5 * rng.standard_normal((n, m)) > 0.8).astype(int)
    return X, Y


def _standardized(seed):
    X, Y = _multilabel(seed)
    return (X - X.mean(0)) / X.std(0), np.where(Y > 0, 1.0, -1.0)


def test_run_split_nests_the_special_cases_and_reports_every_metric():
    """MixedNorm's candidates are TraceNorm's, OneNorm's and its interior: its best mean
    validation AUC is at least theirs; a special case selected gives that method's metrics."""
    X, Y = _multilabel(0)
    res = slr.run_split(X[:100], Y[:100], X[100:], Y[100:],
                        methods=["MixedNorm", "TraceNorm", "OneNorm", "IndLogistic"], n_grid=3,
                        n_folds=2)
    assert set(res) == {"MixedNorm", "TraceNorm", "OneNorm", "IndLogistic"}
    for metrics, seconds, _ in res.values():
        assert set(metrics) == set(slr.METRICS + slr.SCUT_METRICS + slr.EXTRA_METRICS)
        assert all(0 <= v <= 100 for v in metrics.values()) and seconds > 0
    mixed = res["MixedNorm"]
    assert mixed[0]["AUC"] > 60  # the low-rank signal is learnable
    assert {"tau", "gamma", "rank", "nnz_P", "face", "cv_auc"} <= set(mixed[2])
    assert mixed[2]["cv_auc"] >= max(res["TraceNorm"][2]["cv_auc"], res["OneNorm"][2]["cv_auc"])
    same = {"P=0": "TraceNorm", "Q=0": "OneNorm"}.get(mixed[2]["face"])
    if same is not None:
        assert mixed[0] == res[same][0]


def test_interior_gammas_lie_below_gamma_top():
    """At gamma_top(tau) the estimator's sparse part is zero; at the first interior gamma
    (0.91 gamma_top here, the top of the grid) it is not."""
    Xs, Ypm = _standardized(1)
    search = slr.searches("MixedNorm", Xs, Ypm, 4)
    point = search.grid[0]
    tau, first = point["radius"][0], point["alpha"][0]
    top = slr.gamma_top(Xs, Ypm, [tau], 1e-10)[0]
    assert first == pytest.approx(top * slr.sparse_factors(3)[0], rel=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        inner = SparseLowRankRegressor(alpha=first, radius=tau, tol=1e-8).fit(Xs, Ypm)
        at_top = SparseLowRankRegressor(alpha=1.01 * top, radius=tau, tol=1e-10,
                                        max_iter=50000).fit(Xs, Ypm)
    assert np.count_nonzero(inner.sparse_component_) > 0
    assert np.count_nonzero(at_top.sparse_component_) == 0
    ball = MultiTaskRegressor(penalty=TraceBall(tau), tol=1e-10, max_iter=50000).fit(Xs, Ypm)
    assert np.linalg.norm(at_top.coef_ - ball.coef_) <= 1e-6 * np.linalg.norm(ball.coef_)


def test_trace_ball_model_is_feasible_and_binding():
    X, Y = _multilabel(2)
    est = slr.trace_ball(0.3, tol=1e-8).fit(X, Y * 2.0 - 1.0)
    assert np.linalg.svd(est.coef_, compute_uv=False).sum() == pytest.approx(0.3, rel=1e-6)


@pytest.mark.slow  # an experiment (the planted instance, searched by CV)
def test_synthetic_planted_recovery_and_prediction():
    """The planted instance (seed 0): support F1 >= 90 %, rank 2, and the CV-chosen MixedNorm
    predicts better than the per-task lasso."""
    out, secs, arrays = slr.run_synthetic("planted", 0, n_grid=2, n_folds=2)
    key = "MixedNorm (fixed)"
    assert out[(key, "support F1 of P (%)")] >= 90
    assert out[(key, "rank of Q")] == out[(key, "true rank of Q")] == 2
    assert out[("MixedNorm", "test nMSE")] < out[("OneNorm", "test nMSE")]
    assert arrays["P"].shape == arrays["P_hat"].shape == (50, 40)
    assert set(secs) == {key, "MixedNorm", "OneNorm", "TraceNorm"}


def test_fig2_data_shape():
    data = slr.synthetic_data("fig2", 0)
    assert data.P.shape == (100, 30) and np.all(data.P[:30, :10] == 0)
    assert np.linalg.matrix_rank(data.Q) == 10
    assert len(data.X) == 30 and data.X[0].shape == (60, 100)


def test_comparison_table_lists_paper_values():
    rows = [{"method": "MixedNorm", "metric": m, "mean": 50.0, "std": 1.0} for m in slr.METRICS]
    text = slr.comparison_table(rows, "scene")
    assert "91.60" in text and "50.00 ± 1.00" in text


def test_entry_point_writes_rows_and_the_figure(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    assert main(["sparse-low-rank", "--dataset", "synthetic", "--quick", "--grid-size", "2",
                 "--cv-folds", "2", "--out", str(tmp_path)]) == 0
    header = (tmp_path / "results.csv").read_text().splitlines()[0]
    assert header.split(",") == list(RESULT_COLUMNS)
    assert (tmp_path / "fig2_planted.png").exists()
    assert "support F1 of P" in capsys.readouterr().out


def test_bad_dataset_raises():
    with pytest.raises(SystemExit):
        main(["sparse-low-rank", "--dataset", "mediamill"])


@pytest.mark.slow
@pytest.mark.parametrize("dataset", ["yeast", "scene"])
def test_quick_reproduction_on_the_data(dataset):
    from multitask.datasets import find_data_dir

    try:
        find_data_dir()
    except FileNotFoundError:
        pytest.skip("shared data folder not found")
    import argparse

    args = argparse.Namespace(dataset=dataset, quick=True, repeats=None, random_state=0,
                              out=None, data_dir=None, n_jobs=1)
    rows = slr.run(args)
    auc = {r["method"]: r["mean"] for r in rows if r["metric"] == "AUC"}
    assert {"MixedNorm", "TraceNorm", "OneNorm", "RidgeReg"} <= set(auc)
    assert auc["MixedNorm"] > 55
