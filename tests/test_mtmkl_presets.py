"""Task-similarity presets: the parameter choices of the specification's special-case table.

Each preset is checked against its closed form and, where a known method has an explicit
feature map, against scikit-learn's LinearSVC on those features.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.svm import LinearSVC

from multitask.estimators.mtmkl import MultiTaskKernelClassifier
from multitask.kernels import (
    balanced_binary_tree,
    check_task_kernel,
    cluster_task_kernel,
    feda_task_kernel,
    graph_laplacian,
    graph_task_kernel,
    make_task_kernels,
    psd_project,
    regularized_task_kernel,
    smooth_task_kernels,
    tree_task_kernels,
)


def test_feda_matches_the_paper_and_its_inverse():
    B = feda_task_kernel(2)
    np.testing.assert_array_equal(B, [[2, 1], [1, 2]])
    np.testing.assert_allclose(np.linalg.inv(B), [[2 / 3, -1 / 3], [-1 / 3, 2 / 3]])
    # task clustering with one cluster, lam = 0, rho = 1 gives the same kernel
    np.testing.assert_allclose(cluster_task_kernel(np.ones((1, 2)), rho=1.0), B)


@pytest.mark.parametrize("T,rho", [(3, 0.5), (5, 2.0)])
def test_regularized_mtl_is_sherman_morrison(T, rho):
    B = regularized_task_kernel(T, rho)
    Q = np.eye(T) - np.ones((T, T)) / (rho + T)
    np.testing.assert_allclose(B @ Q, np.eye(T), atol=1e-12)
    np.testing.assert_allclose(cluster_task_kernel(np.ones((1, T)), rho=rho), B)


def test_graph_kernel_conventions_and_factor_two():
    rng = np.random.default_rng(0)
    A = rng.uniform(0, 1, (4, 4))
    A = np.triu(A, 1) + np.triu(A, 1).T
    L = graph_laplacian(A)
    W = rng.standard_normal((3, 4))
    ordered = sum(A[s, t] * np.sum((W[:, s] - W[:, t]) ** 2) for s in range(4) for t in range(4))
    np.testing.assert_allclose(ordered, 2 * np.trace(W @ L @ W.T))
    np.testing.assert_allclose(graph_task_kernel(A), np.linalg.inv(np.eye(4) + L))
    np.testing.assert_allclose(
        graph_task_kernel(A, convention="ordered_pairs"), np.linalg.inv(np.eye(4) + 2 * L)
    )
    np.testing.assert_allclose(graph_task_kernel(A, lam=0.3), np.linalg.inv(0.3 * np.eye(4) + L))
    with pytest.warns(UserWarning, match="pseudo-inverse"):
        P = graph_task_kernel(A, pinv=True)
    np.testing.assert_allclose(P @ np.ones(4), 0.0, atol=1e-12)


def test_tree_kernel_kinds_match_closed_forms():
    tree = ((0, 1), (2, (3, 4)))
    masks, info = tree_task_kernels(tree, return_info=True)
    assert len(masks) == 4  # inner nodes, root included
    np.testing.assert_array_equal(masks[0], np.ones((5, 5)))
    # vanilla: the sum of the inner-node masks is depth(lca) + 1
    depth_lca = np.array(
        [[2, 2, 1, 1, 1], [2, 2, 1, 1, 1], [1, 1, 2, 2, 2], [1, 1, 2, 3, 3], [1, 1, 2, 3, 3]]
    )
    np.testing.assert_array_equal(sum(masks), depth_lca)
    assert len(tree_task_kernels(tree, nodes="all")) == 9
    rho = 0.7
    for (leaves, _, _), Bp, Bi in zip(
        info,
        tree_task_kernels(tree, kind="cluster_pinv", rho=rho),
        tree_task_kernels(tree, kind="I_plus_G", rho=rho),
        strict=True,
    ):
        s = np.zeros(5)
        s[leaves] = 1.0
        G = np.diag(s) - np.outer(s, s) / (rho + s.sum())
        np.testing.assert_allclose(Bp, np.linalg.pinv(G), atol=1e-10)
        closed = np.diag(1 - 0.5 * s) + np.outer(s, s) / (2 * (2 * rho + s.sum()))
        np.testing.assert_allclose(Bi, closed, atol=1e-12)
        np.testing.assert_allclose(Bi, np.linalg.inv(np.eye(5) + G), atol=1e-12)


def test_tree_labels_map_to_task_order():
    tree = (("b", "a"), "c")
    (root, node) = tree_task_kernels(tree, ["a", "b", "c"])
    np.testing.assert_array_equal(node, [[1, 1, 0], [1, 1, 0], [0, 0, 0]])
    with pytest.raises(ValueError, match="differ"):
        tree_task_kernels(tree, ["a", "b", "z"])
    assert balanced_binary_tree(range(4)) == ((0, 1), (2, 3))


def test_smooth_kernels_use_negative_distances():
    D = np.array([[0, 1, 3], [1, 0, 2], [3, 2, 0]], dtype=float)
    Bs = smooth_task_kernels(D, [0.5, 2.0])
    np.testing.assert_allclose(Bs[1], np.exp(-D / 2.0))
    assert all(np.linalg.eigvalsh(B).min() > 0 for B in Bs)


def test_psd_checks():
    with pytest.raises(ValueError, match="positive semidefinite"):
        check_task_kernel(np.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="symmetric"):
        check_task_kernel(np.array([[1.0, 0.5], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="tasks"):
        check_task_kernel(np.eye(3), n_tasks=2)
    P = psd_project(np.array([[1.0, 2.0], [2.0, 1.0]]))
    assert np.linalg.eigvalsh(P).min() >= -1e-12
    with pytest.raises(ValueError, match="Unknown task_similarity"):
        make_task_kernels("nope", [0, 1])
    with pytest.raises(ValueError, match="adjacency"):
        make_task_kernels("graph", [0, 1])


# ----------------------------------------------------------------- explicit feature maps
def _two_task_data(T=2, n=120, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    task = np.arange(n) % T
    W = rng.standard_normal((d, 1)) + 0.8 * rng.standard_normal((d, T))
    y = np.where(np.einsum("ij,ji->i", X, W[:, task]) + 0.5 * rng.standard_normal(n) > 0, 1, -1)
    return X, y, task


def _ours(X, y, task, preset, params=None, loss="hinge", C=0.5):
    est = MultiTaskKernelClassifier(
        alpha=1 / C,  # the SVM's C
        loss=loss,
        task_similarity=preset,
        similarity_params=params,
        fit_intercept=False,
        tol=1e-11,
        max_iter=10**6,
        random_state=0,
    )
    return est.fit(X, y, task=task).decision_function(X, task=task)


def _liblinear(Z, y, loss="hinge", C=0.5):
    ref = LinearSVC(C=C, loss=loss, fit_intercept=False, tol=1e-9, max_iter=10**6).fit(Z, y)
    return ref.decision_function(Z)


def test_feda_equals_augmented_features():
    X, y, task = _two_task_data()
    Z = np.hstack([X, X * (task == 0)[:, None], X * (task == 1)[:, None]])
    np.testing.assert_allclose(_ours(X, y, task, "feda"), _liblinear(Z, y), atol=1e-4)


@pytest.mark.parametrize("rho", [0.5, 3.0])
def test_regularized_mtl_equals_shared_plus_task_features(rho):
    T = 3
    X, y, task = _two_task_data(T=T, seed=1)
    Z = np.hstack([X / np.sqrt(rho)] + [X * (task == t)[:, None] for t in range(T)])
    ours = _ours(X, y, task, "regularized", {"rho": rho}, loss="squared_hinge")
    np.testing.assert_allclose(ours, _liblinear(Z, y, loss="squared_hinge"), atol=1e-4)


def test_graph_preset_equals_its_factor_features():
    T = 3
    X, y, task = _two_task_data(T=T, seed=2)
    A = np.array([[0, 1, 0], [1, 0, 2], [0, 2, 0]], dtype=float)
    B = graph_task_kernel(A)
    lam, U = np.linalg.eigh(B)
    R = np.sqrt(lam)[:, None] * U.T  # B = R^T R
    Z = np.hstack([X * R[k, task][:, None] for k in range(T)])
    ours = _ours(X, y, task, "graph", {"adjacency": A})
    np.testing.assert_allclose(ours, _liblinear(Z, y), atol=1e-4)
