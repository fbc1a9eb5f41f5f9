"""Options of the synthetic generators: the formulas of their docstrings, checked directly.

(Bit-for-bit agreement with the reproductions' former generators: test_synthetic_reproductions.)
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import roc_auc_score

from multitask.datasets import (
    make_joint_sparse_tasks,
    make_linear_tasks,
    make_low_rank_tasks,
    make_multilabel_tasks,
    make_outlier_tasks,
    make_sparse_low_rank_tasks,
    make_tree_tasks,
)

# ----------------------------------------------------------------------------- make_linear_tasks


def test_linear_tasks_noiseless_scores_intercepts_and_parts():
    rng = np.random.default_rng(0)
    W = rng.standard_normal((4, 3))
    W0 = W.copy()
    b = np.array([1.0, -2.0, 0.5])
    data = make_linear_tasks(W, [5, 6, 7], n_val=3, n_test=[2, 3, 4], noise=0.0, intercept=b,
                             random_state=1)
    np.testing.assert_array_equal(W, W0)  # input untouched
    assert data.W_true is not W
    for suffix, sizes in (("", [5, 6, 7]), ("_val", [3, 3, 3]), ("_test", [2, 3, 4])):
        assert [len(y) for y in data["y" + suffix]] == sizes
        for t, (X, y) in enumerate(zip(data["X" + suffix], data["y" + suffix], strict=True)):
            np.testing.assert_allclose(y, X @ W[:, t] + b[t], rtol=1e-12)
    np.testing.assert_array_equal(data.intercept, b)
    assert "X_val" in data and "Y" not in data
    assert "X_test" not in make_linear_tasks(W, 5, random_state=0)


def test_linear_tasks_shared_design_noise_level():
    W = np.zeros((3, 2))
    data = make_linear_tasks(W, 4000, shared_X=True, noise=0.5, intercept=[1.0, -1.0],
                             n_test=10, random_state=0)
    assert data.X.shape == (4000, 3) and data.Y.shape == (4000, 2)
    assert data.X_test.shape == (10, 3) and data.Y_test.shape == (10, 2)
    np.testing.assert_allclose(data.Y.mean(axis=0), [1.0, -1.0], atol=0.05)
    np.testing.assert_allclose(data.Y.std(axis=0), [0.5, 0.5], rtol=0.05)


def test_linear_tasks_design_shift_and_unit_rows():
    W = np.ones((3, 2))
    shifted = make_linear_tasks(W, 3000, design_shift=5.0, random_state=0)
    means = [X.mean(axis=0) for X in shifted.X]
    # a per-task mean of standard deviation 5: far from 0 and different between tasks
    assert max(np.abs(m).max() for m in means) > 1.0
    assert not np.allclose(means[0], means[1], atol=0.5)
    for X, m in zip(shifted.X, means, strict=True):
        np.testing.assert_allclose(X.std(axis=0), 1.0, rtol=0.1)
        assert np.all(np.abs(m - m.mean()) < 20)
    unit = make_linear_tasks(W, 20, normalize_rows=True, shared_X=True, random_state=0)
    np.testing.assert_allclose(np.linalg.norm(unit.X, axis=1), 1.0)


def test_linear_tasks_continue_one_stream():
    """A Generator shared by two calls continues one sequence: test part = a second call."""
    one = make_low_rank_tasks(n_tasks=4, n_features=5, n_samples=6, n_test=7,
                              random_state=np.random.default_rng(9))
    gen = np.random.default_rng(9)
    first = make_low_rank_tasks(n_tasks=4, n_features=5, n_samples=6, random_state=gen)
    second = make_linear_tasks(first.W_true, 7, random_state=gen)
    for a, b in zip(one.X_test + one.y_test, second.X + second.y, strict=True):
        np.testing.assert_array_equal(a, b)


def test_ensure_both_classes_redraws_and_warns():
    rng = np.random.default_rng(0)
    W = rng.standard_normal((30, 12))
    plain = make_linear_tasks(W, 2, noise=0.0, task_type="classification", random_state=1)
    assert any(y.sum() in (0, 2) for y in plain.y)  # one class happens at 2 rows
    fixed = make_linear_tasks(W, 2, noise=0.0, task_type="classification",
                              ensure_both_classes=True, random_state=1)
    assert all(y.sum() == 1 for y in fixed.y)
    shared = make_linear_tasks(W, 3, shared_X=True, noise=0.0, task_type="classification",
                               ensure_both_classes=True, random_state=1)
    assert np.all((shared.Y.sum(axis=0) > 0) & (shared.Y.sum(axis=0) < 3))
    with pytest.warns(UserWarning, match="task 0 still holds one class after 100 draws") as rec:
        never = make_linear_tasks(np.zeros((2, 1)), 5, intercept=1.0,
                                  task_type="classification", noise=0.0,
                                  ensure_both_classes=True, random_state=0)
    assert never.y[0].tolist() == [1] * 5
    assert rec[0].filename == __file__  # the warning points at the caller
    with pytest.warns(UserWarning, match="the shared design still holds one class") as rec:
        make_linear_tasks(np.zeros((2, 2)), 5, intercept=-1.0, shared_X=True,
                          task_type="classification", noise=0.0, ensure_both_classes=True,
                          random_state=0)
    assert rec[0].filename == __file__
    one_row = make_linear_tasks(W, 1, task_type="classification", ensure_both_classes=True,
                                random_state=0)
    assert all(len(y) == 1 for y in one_row.y)


def test_linear_tasks_errors():
    W = np.ones((3, 2))
    with pytest.raises(ValueError, match="W_true must be a finite 2-D array"):
        make_linear_tasks(np.ones(3))
    with pytest.raises(ValueError, match="W_true must be a finite 2-D array"):
        make_linear_tasks(np.array([[np.nan, 1.0]]))
    with pytest.raises(ValueError, match="intercept"):
        make_linear_tasks(W, intercept=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="n_test must be an int or a sequence of 2 ints"):
        make_linear_tasks(W, n_test=[1, 2, 3])
    with pytest.raises(ValueError, match="n_val must be positive"):
        make_linear_tasks(W, n_val=-1)
    with pytest.raises(ValueError, match="shared_X=True needs the same n_test"):
        make_linear_tasks(W, 5, n_test=[1, 2], shared_X=True)
    with pytest.raises(ValueError, match="design_shift"):
        make_linear_tasks(W, design_shift=-1.0)
    with pytest.raises(ValueError, match="ensure_both_classes=True needs task_type"):
        make_linear_tasks(W, ensure_both_classes=True)
    with pytest.raises(ValueError, match="noise"):
        make_linear_tasks(W, noise=-0.1)


# ----------------------------------------------------------------------------- weight structures


@pytest.mark.parametrize("make", [make_low_rank_tasks, make_outlier_tasks,
                                  make_sparse_low_rank_tasks])
def test_low_rank_kinds(make):
    kw = {"n_tasks": 9, "n_features": 12, "rank": 3, "n_samples": 4, "random_state": 0}
    part = {make_low_rank_tasks: "W_true", make_outlier_tasks: "L",
            make_sparse_low_rank_tasks: "Q"}[make]
    for kind in ("gaussian", "orthonormal", "truncated_svd"):
        Q = make(low_rank=kind, **kw)[part]
        s = np.linalg.svd(Q, compute_uv=False)
        assert np.sum(s > 1e-10 * s[0]) == 3
        if kind == "orthonormal":
            np.testing.assert_allclose(s[:3], 1.0)
        Q2 = make(low_rank=kind, low_rank_scale=2.5, **kw)[part]
        np.testing.assert_allclose(Q2, 2.5 * Q, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="low_rank must be one of"):
        make(low_rank="sparse", **kw)
    with pytest.raises(ValueError, match="low_rank_scale"):
        make(low_rank_scale=-1.0, **kw)


def test_low_rank_factors():
    d = make_low_rank_tasks(n_tasks=6, n_features=8, rank=2, low_rank="orthonormal",
                            low_rank_scale=3.0, random_state=0)
    np.testing.assert_allclose(d.W_true, 3.0 * d.U @ d.V.T)
    np.testing.assert_allclose(d.U.T @ d.U, np.eye(2), atol=1e-12)
    t = make_low_rank_tasks(n_tasks=6, n_features=8, rank=2, low_rank="truncated_svd",
                            random_state=0)
    s = np.linalg.svd(t.W_true, compute_uv=False)[:2]
    np.testing.assert_allclose(t.W_true, t.U * s @ t.V.T, atol=1e-12)


def test_joint_sparse_support_scales_and_task_subsets():
    scale = np.array([0.0, 1.0, 10.0])
    d = make_joint_sparse_tasks(n_tasks=400, n_features=8, n_relevant=3, support=[6, 1, 3],
                                feature_scale=scale, n_samples=2, random_state=0)
    assert np.all(d.W_true[[0, 2, 4, 5, 7]] == 0)
    assert np.all(d.W_true[6] == 0)  # scale 0
    np.testing.assert_array_equal(d.support, [1, 3])
    np.testing.assert_allclose(d.W_true[[1, 3]].std(axis=1), [1.0, 10.0], rtol=0.15)

    sub = make_joint_sparse_tasks(n_tasks=50, n_features=30, n_relevant=6, min_task_support=3,
                                  n_samples=2, random_state=1)
    per_task = np.count_nonzero(sub.W_true, axis=0)
    assert per_task.min() >= 3 and per_task.max() <= 6
    assert len(set(per_task.tolist())) > 1  # sizes vary between tasks
    assert set(np.flatnonzero(np.any(sub.W_true != 0, axis=1))) == set(sub.support.tolist())
    assert len(sub.support) <= 6


def test_joint_sparse_errors():
    with pytest.raises(ValueError, match="support must hold n_relevant=3 distinct"):
        make_joint_sparse_tasks(n_relevant=3, support=[0, 1])
    with pytest.raises(ValueError, match="support must hold"):
        make_joint_sparse_tasks(n_relevant=2, support=[1, 1])
    with pytest.raises(ValueError, match="support must hold"):
        make_joint_sparse_tasks(n_features=5, n_relevant=2, support=[1, 5])
    with pytest.raises(ValueError, match="feature_scale"):
        make_joint_sparse_tasks(n_relevant=2, feature_scale=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="min_task_support"):
        make_joint_sparse_tasks(n_relevant=2, min_task_support=3)


def test_sparse_part_options():
    kw = {"n_tasks": 10, "n_features": 12, "rank": 2, "n_samples": 3}
    sig = make_sparse_low_rank_tasks(n_nonzero=17, sparse_values="signed_uniform",
                                     random_state=0, **kw)
    vals = sig.P[sig.P != 0]
    assert vals.size == 17 and np.all((np.abs(vals) >= 1) & (np.abs(vals) < 2))
    assert np.any(vals > 0) and np.any(vals < 0)
    dense = make_sparse_low_rank_tasks(sparsity=1.0, zero_block=(4, 3), random_state=0, **kw)
    assert np.all(dense.P[:4, :3] == 0)
    assert np.count_nonzero(dense.P) == 12 * 10 - 12
    a = make_sparse_low_rank_tasks(random_state=3, **kw)
    b = make_sparse_low_rank_tasks(sparse_first=True, random_state=3, **kw)
    assert not np.array_equal(a.P, b.P)
    assert np.count_nonzero(a.P) == np.count_nonzero(b.P) == 12
    with pytest.raises(ValueError, match="sparse_values"):
        make_sparse_low_rank_tasks(sparse_values="laplace", **kw)
    with pytest.raises(ValueError, match="n_nonzero"):
        make_sparse_low_rank_tasks(n_nonzero=121, **kw)
    with pytest.raises(ValueError, match="zero_block"):
        make_sparse_low_rank_tasks(zero_block=(1, 2, 3), **kw)
    with pytest.raises(ValueError, match=r"zero_block\[1\]"):
        make_sparse_low_rank_tasks(zero_block=(1, 11), **kw)


# ----------------------------------------------------------------------------- tree tasks


def test_tree_tasks_structure():
    d = make_tree_tasks(n_tasks=4, n_features=20, n_samples=3, n_test=5, n_flips=2, noise=1.0,
                        random_state=0)
    assert d.tree == ((0, 1), (2, 3))
    assert d.X.shape == (2 * 3 * 4, 20) and d.X_test.shape == (2 * 5 * 4, 20)
    assert "X_val" not in d
    assert set(d.y.tolist()) == {-1.0, 1.0}
    np.testing.assert_array_equal(np.bincount(d.task), [6] * 4)
    np.testing.assert_array_equal(d.S_true, d.mu @ d.mu.T)
    assert np.all(np.abs(d.mu) == 1)
    # two mutated nodes (depth 1, then the leaf) of 2 flips each: at most 4 signs differ from
    # the root; reading A mutates the leaves, so siblings differ
    assert np.all(np.sum(d.mu != 1, axis=1) <= 4) and np.all(np.sum(d.mu != 1, axis=1) > 0)
    assert not np.array_equal(d.mu[0], d.mu[1])
    b = make_tree_tasks(n_tasks=4, n_features=20, n_samples=3, n_flips=2, mutate_leaves=False,
                        random_state=0)
    np.testing.assert_array_equal(b.mu[0], b.mu[1])
    np.testing.assert_array_equal(b.mu[2], b.mu[3])


def test_tree_tasks_bayes_auc():
    d = make_tree_tasks(n_tasks=2, n_features=10, n_samples=2000, n_flips=2, noise=2.0,
                        random_state=1)
    for t in range(2):
        rows = d.task == t
        auc = roc_auc_score(d.y[rows], d.X[rows] @ d.W_true[:, t])
        assert abs(auc - d.bayes_auc) < 0.02
    with pytest.raises(ValueError, match="n_flips"):
        make_tree_tasks(n_features=3, n_flips=4)
    with pytest.raises(ValueError, match="noise must be > 0"):
        make_tree_tasks(noise=0.0)


# ----------------------------------------------------------------------------- multi-label


def test_multilabel_tasks_structure():
    d = make_multilabel_tasks(n_samples=400, n_features=150, n_tasks=12, rank=3, n_outliers=2,
                              mean_positives=30.0, min_positives=10, random_state=0)
    assert sp.issparse(d.X) and d.X.shape == (400, 150)
    np.testing.assert_allclose(sp.linalg.norm(d.X, axis=1), 1.0)
    assert d.Y.shape == (400, 12) and set(np.unique(d.Y)) <= {0, 1}
    pos = d.Y.sum(axis=0)
    assert pos.min() >= 10 and pos.max() <= 400 // 4
    np.testing.assert_array_equal(np.flatnonzero(np.any(d.E != 0, axis=0)), d.outlier_tasks)
    np.testing.assert_array_equal(d.W_true, d.L + d.E)
    assert np.linalg.matrix_rank(d.L) <= 3
    # the labels follow the scores of W_true: positives score higher
    S = np.asarray(d.X @ d.W_true)
    aucs = [roc_auc_score(d.Y[:, t], S[:, t]) for t in range(12)]
    assert np.mean(aucs) > 0.8
    with pytest.raises(ValueError, match="n_outliers"):
        make_multilabel_tasks(n_tasks=3, n_outliers=4)
    with pytest.raises(ValueError, match="n_samples"):
        make_multilabel_tasks(n_samples=3)
