"""The sparse + low-rank reproduction's tables under every AUC and F1 definition and its
scikit-learn single-task baselines (``python -m reproductions sparse-low-rank --dataset
table2``), on small generated data."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from test_reproductions_sparse_low_rank import _multilabel as generated_labels  # noqa: E402

from multitask import IndependentRidgeClassifier, IndependentRidgeRegressor  # noqa: E402
from reproductions import sparse_low_rank as slr  # noqa: E402
from reproductions.__main__ import build_parser  # noqa: E402
from reproductions.common import summarize  # noqa: E402


def _multilabel(seed=0):
    """The reproduction tests' generated labels (smaller), standardized features."""
    X, Y = generated_labels(seed, n=240, d=10)
    return (X - X.mean(0)) / X.std(0), Y


def test_sklearn_baselines_are_the_library_models_in_sklearn_scaling():
    """``Ridge(alpha = n alpha)`` and ``LogisticRegression(C = 1 / (n alpha))`` per label are
    the library's independent ridge regressor and logistic classifier (the user guide's
    conversions), so the grids are the same models."""
    X, Y = _multilabel(1)
    n, alpha = X.shape[0], 0.05
    sk = slr.sklearn_scores("sklearn-Ridge", {"alpha": n * alpha}, X, Y, X)
    ours = IndependentRidgeRegressor(alpha=alpha, tol=1e-10).fit(X, np.where(Y > 0, 1.0, -1.0))
    np.testing.assert_allclose(sk, ours.predict(X), atol=1e-6)
    sk = slr.sklearn_scores("sklearn-LogReg", {"C": 1.0 / (n * alpha)}, X, Y, X)
    clf = IndependentRidgeClassifier(alpha=alpha, loss="logistic", tol=1e-10).fit(X, Y)
    np.testing.assert_allclose(sk, clf.decision_function(X), atol=1e-4)
    prior = slr.sklearn_scores("sklearn-Prior", {}, X, Y, X[:5])
    freq = Y.mean(axis=0)
    np.testing.assert_allclose(prior, np.log(freq / (1 - freq))[None, :].repeat(5, 0))


def test_sklearn_grids_run_from_most_to_least_regularized():
    X, _ = _multilabel(2)
    ridge = [c["alpha"] for c in slr.sklearn_grid("sklearn-Ridge", X, 5)]
    logreg = [c["C"] for c in slr.sklearn_grid("sklearn-LogReg", X, 5)]
    assert ridge == sorted(ridge, reverse=True) and logreg == sorted(logreg)
    assert slr.sklearn_grid("sklearn-Prior", X, 5) == [{}]
    with pytest.raises(ValueError, match="Unknown"):
        slr.sklearn_grid("sklearn-SVC", X, 5)


def test_run_split_reports_every_definition_for_the_sklearn_baselines():
    X, Y = _multilabel(3)
    res = slr.run_split(X[:80], Y[:80], X[80:], Y[80:], methods=["RidgeReg", *slr.SKLEARN_METHODS],
                        n_grid=3, n_folds=2)
    names = set(slr.METRICS + slr.SCUT_METRICS + slr.EXTRA_METRICS)
    for metrics, seconds, info in res.values():
        assert set(metrics) == names and seconds > 0 and "cv_auc" in info
        assert all(0 <= v <= 100 for v in metrics.values())
        assert metrics["Macro-F1 (test-tuned)"] >= metrics["Macro-F1 (SCut)"] - 1e-9
        assert metrics["Macro-F1 (test-tuned)"] >= metrics["Macro-F1"] - 1e-9
    # the same alpha (in each package's scaling) on the same folds: the same test AUC
    assert res["sklearn-Ridge"][0]["AUC"] == pytest.approx(res["RidgeReg"][0]["AUC"], abs=1e-6)
    assert res["sklearn-Prior"][0]["AUC"] == 50.0  # one score per label: no ranking


def _rows():
    rng = np.random.default_rng(0)
    rows = []
    for dataset in ("yeast", "scene"):
        for m in slr.METHODS:
            for k in slr.METRICS + slr.SCUT_METRICS + slr.EXTRA_METRICS:
                rows.append(summarize(slr.NAME, dataset, "10% train, 5-fold CV", m, k,
                                      rng.uniform(40, 90, 3)))
    return rows


def test_markdown_tables_hold_every_definition_and_the_papers_rows():
    text = slr.markdown_tables(_rows(), {"yeast": 12.0, "scene": 34.0})
    for piece in ("**Yeast**: AUC", "**Scene**: F1", "micro (pooled)", "example-based (per row)",
                  "Macro SCut", "Example @0", "Macro, test-tuned", "79.87", "91.60",
                  "55.62", "64.39", "MTRL (not implemented)", "scikit-learn `Ridge`",
                  "scikit-learn `LogisticRegression`", "12 s wall", "over 3 splits"):
        assert piece in text, piece
    # every table row has as many cells as its header
    for block in text.split("\n\n"):
        lines = [ln for ln in block.splitlines() if ln.startswith("|")]
        if lines:
            assert len({ln.count(" | ") for ln in lines if not ln.startswith("|---")}) == 1


def test_claims_table_margins():
    rows = [summarize(slr.NAME, "yeast", "s", m, k, [v]) for m, v in
            (("MixedNorm", 80.0), ("TraceNorm", 79.0), ("OneNorm", 70.0), ("RidgeReg", 81.0))
            for k in slr.METRICS + slr.SCUT_METRICS + slr.EXTRA_METRICS]
    text = slr.claims_table(rows, "yeast")
    first = next(ln for ln in text.splitlines() if ln.startswith("| 1."))
    assert "no (−1.00) vs RidgeReg" in first
    assert "yes (+9.00)" in next(ln for ln in text.splitlines() if ln.startswith("| 2."))
    near = next(ln for ln in text.splitlines() if ln.startswith("| MixedNorm within"))
    assert "yes (+0.13)" in near  # 80.00 against the paper's 79.871
    gap = next(ln for ln in text.splitlines() if ln.startswith("| MixedNorm − RidgeReg"))
    assert "−1.00 (paper +14.38)" in gap


def test_table2_is_a_dataset_choice():
    args = build_parser("sparse-low-rank").parse_args(["--dataset", "table2"])
    assert args.dataset == "table2"
