"""The multi-task MKL reproduction (``python -m reproductions mtmkl``), reduced."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from multitask.kernels import balanced_binary_tree, tree_leaves  # noqa: E402
from reproductions import mtmkl  # noqa: E402
from reproductions.common import RESULT_COLUMNS  # noqa: E402


def _args(**kw):
    base = dict(dataset="synthetic", repeats=1, random_state=0, out=None, quick=True,
                data_dir=None)
    base.update(kw)
    return argparse.Namespace(**base)


def test_synthetic_reduced_individual_worst_and_similarity_beats_control(tmp_path):
    """16 tasks, sigma = 5: individual SVMs are the worst of the learned models, and the
    similarity learned on the true tree correlates with the truth, on a shuffled tree not."""
    rows = mtmkl.run(_args(n_leaves=16, n_features=50, noise=5.0, n_test=100, n_train=10,
                           p_values=[1.0, 2.0, 3.0], C_grid=[1e-4, 1e-3, 1e-2],
                           out=str(tmp_path)))
    assert all(set(r) == set(RESULT_COLUMNS) for r in rows)
    auc = {r["method"]: r["mean"] for r in rows if r["metric"] == "mean_task_auc"}
    corr = {r["method"]: r["mean"] for r in rows if r["metric"] == "similarity_corr_true"}
    learned = ["individual", "union", "vanilla", "mtmkl-p1", "mtmkl-p2", "mtmkl-p3"]
    assert min(learned, key=auc.get) == "individual"
    assert auc["oracle (true mu_t)"] > max(auc[m] for m in learned)
    for p in ("1", "2", "3"):
        assert corr[f"mtmkl-p{p}"] > corr[f"mtmkl-p{p}-shuffled-tree"] + 0.3
    theta = (tmp_path / "theta.csv").read_text().splitlines()
    assert theta[0] == "node,depth,n_leaves,mtmkl-p1,mtmkl-p2,mtmkl-p3" and len(theta) == 16


def test_shuffled_tree_keeps_the_shape():
    tree = balanced_binary_tree(list(range(8)))
    shuf = mtmkl.shuffled_tree(tree, 0)
    assert sorted(tree_leaves(shuf)) == list(range(8)) and tree_leaves(shuf) != list(range(8))
    assert str(shuf).count("(") == str(tree).count("(")


def test_every_method_is_the_estimator_with_its_task_kernels():
    tree = balanced_binary_tree(list(range(4)))
    methods = dict(mtmkl.methods(tree, mtmkl.shuffled_tree(tree, 1), [2.0], 4))
    assert set(methods) == {"individual", "union", "vanilla", "mtmkl-p2",
                            "mtmkl-p2-shuffled-tree"}
    assert methods["vanilla"]["p"] == np.inf and len(methods["vanilla"]["task_similarity"]) == 3


def test_splice_sanity_against_linearsvc():
    from multitask.datasets import find_data_dir

    try:
        find_data_dir()
    except FileNotFoundError:
        pytest.skip("shared data folder not found")
    rows = mtmkl.run(_args(dataset="splice", wd_degree=4))
    auc = {r["method"]: r["mean"] for r in rows if r["metric"] == "test_auc"}
    diff = [r["mean"] for r in rows if r["metric"] == "max_abs_decision_diff"][0]
    assert auc["sklearn LinearSVC"] > 0.9
    assert abs(auc["MultiTaskKernelClassifier (union, T=1)"] - auc["sklearn LinearSVC"]) < 1e-3
    assert diff < 1e-2
