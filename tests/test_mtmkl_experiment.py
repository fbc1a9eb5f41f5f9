"""The mtmkl reproduction: reduced synthetic tree experiment and the splice sanity check."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from multitask.experiments.mtmkl import make_tree_tasks, offdiag_corr, run
from multitask.experiments.registry import RESULT_COLUMNS, discover


def _args(**kw):
    base = dict(dataset="synthetic", repeats=1, random_state=0, out=None, quick=True, data_dir=None)
    base.update(kw)
    return SimpleNamespace(**base)


def test_generator_reading_a_and_b():
    a = make_tree_tasks(n_leaves=8, n_features=30, n_train=3, n_test=4, random_state=0)
    assert a.X_train.shape == (8 * 6, 30) and a.X_test.shape == (8 * 8, 30)
    assert len({tuple(m) for m in a.mu}) == 8  # every leaf its own vector
    np.testing.assert_allclose(np.diag(a.S_true), 30.0)  # sign flips keep the norm
    b = make_tree_tasks(n_leaves=8, n_features=30, reading="B", random_state=0)
    assert len({tuple(m) for m in b.mu}) == 4  # siblings share their parent's vector
    paper = make_tree_tasks(random_state=0, n_test=1)
    assert paper.mu.shape == (32, 100)
    assert abs(paper.bayes_auc - 0.638) < 1e-3


def test_synthetic_reduced_individual_worst_and_similarity_beats_control(tmp_path):
    args = _args(
        n_leaves=16,
        n_features=50,
        noise=5.0,
        n_test=100,
        n_train=10,
        p_values=[1.0, 2.0, 3.0],
        C_grid=[1e-4, 1e-3, 1e-2],
        out=str(tmp_path),
    )
    rows = run(args)
    assert all(set(r) == set(RESULT_COLUMNS) for r in rows)
    auc = {r["method"]: r["mean"] for r in rows if r["metric"] == "mean_task_auc"}
    corr = {r["method"]: r["mean"] for r in rows if r["metric"] == "similarity_corr_true"}
    learned = ["individual", "union", "vanilla", "mtmkl-p1", "mtmkl-p2", "mtmkl-p3"]
    assert min(learned, key=auc.get) == "individual"
    for p in ("1", "2", "3"):
        assert corr[f"mtmkl-p{p}"] > corr[f"mtmkl-p{p}-shuffled-tree"] + 0.3
    assert (tmp_path / "theta.csv").exists()


def test_offdiag_corr():
    A = np.array([[5.0, 1, 2], [1, 5, 3], [2, 3, 5]])
    assert offdiag_corr(A, 2 * A + np.eye(3)) == pytest.approx(1.0)


def test_registered():
    exp = discover()["mtmkl"]
    assert exp.datasets == ("synthetic", "splice")


def test_splice_sanity_against_linearsvc():
    from multitask.datasets import find_data_dir

    try:
        find_data_dir()
    except FileNotFoundError:
        pytest.skip("shared data folder not found")
    rows = run(_args(dataset="splice", wd_degree=4))
    auc = {r["method"]: r["mean"] for r in rows if r["metric"] == "test_auc"}
    diff = [r["mean"] for r in rows if r["metric"] == "max_abs_decision_diff"][0]
    assert auc["sklearn LinearSVC"] > 0.9
    assert abs(auc["mtmkl-dcd (union, T=1)"] - auc["sklearn LinearSVC"]) < 1e-3
    assert diff < 1e-2
