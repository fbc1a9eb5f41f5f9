"""The public generators reproduce the synthetic data of the paper reproductions bit for bit.

Each test embeds, as the reference, a verbatim copy of a generator that a reproduction (or the
test suite's ``conftest.py``) wrote for itself, and checks that one call of a public generator
of :mod:`multitask.datasets.synthetic` returns the same arrays for the same seed (exactly,
unless stated), at reduced sizes. The copies live only here.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.utils import Bunch, check_random_state

from multitask.datasets import (
    make_joint_sparse_tasks,
    make_linear_tasks,
    make_multilabel_tasks,
    make_sparse_low_rank_tasks,
    make_tree_tasks,
)


def assert_lists_equal(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u, v)
        assert np.asarray(u).dtype == np.asarray(v).dtype


# ----------------------------------------------------------------------------- capped trace
def ref_capped_trace_synthetic(omega: float, rng, *, n_tasks: int = 20, n_train: int = 50,
                               n_val: int = 200, n_test: int = 200,
                               n_irrelevant: int = 10) -> dict:
    # verbatim: experiments/capped_trace.py, make_synthetic
    scales = np.sqrt(omega) * np.array([1.0, 0.8, 0.7, 0.6, 0.5])
    d = 5 + n_irrelevant
    W = np.zeros((d, n_tasks))
    W[:5] = scales[:, None] * rng.standard_normal((5, n_tasks))
    out = {"W": W}
    for part, n in (("train", n_train), ("val", n_val), ("test", n_test)):
        Xs = [rng.standard_normal((n, d)) for _ in range(n_tasks)]
        ys = [X @ W[:, t] + rng.standard_normal(n) for t, X in enumerate(Xs)]
        out[part] = (Xs, ys)
    return out


@pytest.mark.parametrize("omega", [5, 20])
def test_capped_trace_synthetic(omega):
    sizes = {"n_tasks": 6, "n_train": 7, "n_val": 9, "n_test": 11, "n_irrelevant": 4}
    ref = ref_capped_trace_synthetic(omega, np.random.default_rng(omega), **sizes)
    new = make_joint_sparse_tasks(
        n_tasks=6, n_features=5 + 4, n_samples=7, n_val=9, n_test=11, n_relevant=5,
        support=np.arange(5), feature_scale=np.sqrt(omega) * np.array([1.0, 0.8, 0.7, 0.6, 0.5]),
        noise=1.0, random_state=np.random.default_rng(omega))
    np.testing.assert_array_equal(new.W_true, ref["W"])
    for part, suffix in (("train", ""), ("val", "_val"), ("test", "_test")):
        assert_lists_equal(new["X" + suffix], ref[part][0])
        assert_lists_equal(new["y" + suffix], ref[part][1])
    np.testing.assert_array_equal(new.support, np.arange(5))


# ----------------------------------------------------------------------------- l1,inf
def ref_l1inf_paper_synthetic(n_train: int, n_test: int, *, n_features: int = 200,
                              n_tasks: int = 60, frac_relevant: float = 0.1,
                              W: np.ndarray | None = None, rng=None):
    # verbatim: experiments/l1inf.py, make_paper_synthetic
    rng = np.random.default_rng(rng)
    d, m = n_features, n_tasks
    if W is None:
        k = max(1, int(round(frac_relevant * d)))
        V = rng.choice(d, size=k, replace=False)
        W = np.zeros((d, m))
        G = rng.standard_normal((d, m))
        for t in range(m):
            size = int(rng.integers((k + 1) // 2, k + 1))
            v = rng.choice(V, size=size, replace=False)
            W[v, t] = G[v, t]
    relevant = np.flatnonzero(np.any(W != 0, axis=1))

    def draw(n):
        Xs, ys = [], []
        for t in range(m):
            for _ in range(100):  # redraw a sample with one class only (tiny n)
                X = rng.standard_normal((n, d))
                X /= np.linalg.norm(X, axis=1, keepdims=True)
                y = (X @ W[:, t] > 0).astype(np.int64)
                if n < 2 or 0 < y.sum() < n:
                    break
            Xs.append(X)
            ys.append(y)
        return Xs, ys

    Xtr, ytr = draw(n_train)
    Xte, yte = draw(n_test)
    return {"W": W, "relevant": relevant, "Xtr": Xtr, "ytr": ytr, "Xte": Xte, "yte": yte}


def test_l1inf_paper_synthetic():
    """The calling sequence of ``run_synthetic``: W and a test set, then training sets."""
    d, m, n_test, frac = 40, 12, 30, 0.1
    k = max(1, int(round(frac * d)))
    rng = np.random.default_rng(3)
    base = ref_l1inf_paper_synthetic(1, n_test, n_features=d, n_tasks=m, rng=rng)
    refs = [ref_l1inf_paper_synthetic(n, 1, n_features=d, n_tasks=m, W=base["W"], rng=rng)
            for n in (2, 5)]

    gen = np.random.default_rng(3)
    sampling = {"normalize_rows": True, "noise": 0.0, "task_type": "classification",
                "ensure_both_classes": True, "random_state": gen}
    new = make_joint_sparse_tasks(n_tasks=m, n_features=d, n_samples=1, n_test=n_test,
                                  n_relevant=k, min_task_support=(k + 1) // 2, **sampling)
    np.testing.assert_array_equal(new.W_true, base["W"])
    np.testing.assert_array_equal(new.support, base["relevant"])
    assert_lists_equal(new.X, base["Xtr"])
    assert_lists_equal(new.X_test, base["Xte"])
    assert_lists_equal(new.y_test, base["yte"])
    for n, ref in zip((2, 5), refs, strict=True):
        tr = make_linear_tasks(new.W_true, n, n_test=1, **sampling)
        assert_lists_equal(tr.X, ref["Xtr"])
        assert_lists_equal(tr.y, ref["ytr"])
        assert_lists_equal(tr.X_test, ref["Xte"])
    # with 2 rows about half of the first draws hold one class: the redraws were exercised
    assert all(0 < y.sum() < len(y) for y in refs[0]["ytr"])


# ----------------------------------------------------------------------------- MT-MKL tree
def _ref_mutate_tree(node, mu, rng, n_flips, mutate_leaves, out):
    # verbatim: experiments/mtmkl.py, _mutate_tree
    if not isinstance(node, tuple):
        out[node] = mu
        return
    for child in node:
        mc = mu.copy()
        if isinstance(child, tuple) or mutate_leaves:
            idx = rng.choice(mu.shape[0], size=n_flips, replace=False)
            mc[idx] = -mc[idx]
        _ref_mutate_tree(child, mc, rng, n_flips, mutate_leaves, out)


def ref_make_tree_tasks(n_leaves=32, n_features=100, n_flips=5, sigma=20.0, n_train=10,
                        n_test=1000, n_val=0, reading="A", random_state=None) -> Bunch:
    # verbatim: experiments/mtmkl.py, make_tree_tasks (docstring left out)
    from multitask.kernels.task_similarity import balanced_binary_tree

    if reading not in ("A", "B"):
        raise ValueError(f"reading must be 'A' or 'B', got {reading!r}.")
    rng = check_random_state(random_state)
    tree = balanced_binary_tree(list(range(int(n_leaves))))
    mus: dict = {}
    _ref_mutate_tree(tree, np.ones(int(n_features)), rng, int(n_flips), reading == "A", mus)
    mu = np.stack([mus[t] for t in range(int(n_leaves))])

    def sample(n_per_class):
        if n_per_class == 0:
            return np.zeros((0, mu.shape[1])), np.zeros(0), np.zeros(0, dtype=int)
        X, y, task = [], [], []
        for t in range(mu.shape[0]):
            for lab in (1.0, -1.0):
                X.append(
                    0.5 * lab * mu[t] + sigma * rng.standard_normal((n_per_class, mu.shape[1]))
                )
                y.append(np.full(n_per_class, lab))
                task.append(np.full(n_per_class, t))
        return np.vstack(X), np.concatenate(y), np.concatenate(task)

    from scipy.stats import norm

    out = Bunch(mu=mu, tree=tree, S_true=mu @ mu.T)
    out.X_train, out.y_train, out.task_train = sample(int(n_train))
    out.X_test, out.y_test, out.task_test = sample(int(n_test))
    out.X_val, out.y_val, out.task_val = sample(int(n_val))
    out.bayes_auc = float(norm.cdf(np.linalg.norm(mu[0]) / (sigma * np.sqrt(2.0))))
    return out


@pytest.mark.parametrize("reading", ["A", "B"])
def test_mtmkl_tree_tasks(reading):
    ref = ref_make_tree_tasks(n_leaves=7, n_features=12, n_flips=3, sigma=2.5, n_train=4,
                              n_test=6, n_val=5, reading=reading, random_state=11)
    new = make_tree_tasks(n_tasks=7, n_features=12, n_samples=4, n_test=6, n_val=5, n_flips=3,
                          noise=2.5, mutate_leaves=reading == "A", random_state=11)
    for key in ("mu", "S_true"):
        np.testing.assert_array_equal(new[key], ref[key])
    assert new.tree == ref.tree and new.bayes_auc == ref.bayes_auc
    for old, suffix in (("_train", ""), ("_test", "_test"), ("_val", "_val")):
        for name in ("X", "y", "task"):
            np.testing.assert_array_equal(new[name + suffix], ref[name + old])
    np.testing.assert_allclose(new.W_true, ref["mu"].T / 2.5**2)


# ----------------------------------------------------------------------------- robust / EUR-Lex
def ref_make_eurlex_synthetic(n_samples=19348, n_features=5000, n_tasks=412, *,
                              mean_tokens=60.0, rank=20, n_outliers=20, noise=0.25,
                              mean_positives=55.0, min_positives=20, random_state=0):
    # verbatim: experiments/robust_dc.py, make_eurlex_synthetic (docstring and DESCR left out)
    rng = np.random.default_rng(random_state)
    pop = 1.0 / (np.arange(n_features) + 20.0) ** 0.9
    pop = rng.permutation(pop / pop.sum())
    lens = 1 + rng.poisson(max(mean_tokens - 1.0, 0.0), size=n_samples)
    rows = np.repeat(np.arange(n_samples), lens)
    cols = rng.choice(n_features, size=rows.size, p=pop)
    C = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n_samples, n_features))
    C.sum_duplicates()
    df = np.bincount(C.indices, minlength=n_features)
    idf = np.log((1.0 + n_samples) / (1.0 + df)) + 1.0
    X = C.copy()
    X.data = np.log1p(X.data) * idf[X.indices]
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = (sp.diags(1.0 / np.maximum(norms, 1e-12)) @ X).tocsr()
    U = rng.standard_normal((n_features, rank))
    V = rng.standard_normal((n_tasks, rank))
    outliers = np.sort(rng.choice(n_tasks, n_outliers, replace=False))
    S = (X @ U) @ V.T / np.sqrt(rank)
    S[:, outliers] = X @ rng.standard_normal((n_features, n_outliers))
    S = (S - S.mean(axis=0)) / np.maximum(S.std(axis=0), 1e-12)
    S += noise * rng.standard_normal(S.shape)
    k = rng.lognormal(np.log(mean_positives) - 0.5, 1.0, n_tasks)
    k = np.clip(np.round(k), min_positives, n_samples // 4).astype(np.int64)
    thr = -np.sort(-S, axis=0)[k - 1, np.arange(n_tasks)]
    Y = (S >= thr).astype(np.int64)
    return Bunch(X=X, Y=Y, outlier_tasks=outliers)


def test_robust_eurlex_synthetic():
    shape = {"n_samples": 300, "n_features": 120, "n_tasks": 25}
    opts = {"mean_tokens": 30.0, "rank": 4, "n_outliers": 3, "noise": 0.25,
            "mean_positives": 20.0, "min_positives": 5}
    ref = ref_make_eurlex_synthetic(**shape, **opts, random_state=4)
    new = make_multilabel_tasks(**shape, **opts, random_state=np.random.default_rng(4))
    assert sp.isspmatrix_csr(new.X) or sp.issparse(new.X)
    np.testing.assert_array_equal(new.X.toarray(), ref.X.toarray())
    np.testing.assert_array_equal(new.Y, ref.Y)
    np.testing.assert_array_equal(new.outlier_tasks, ref.outlier_tasks)
    np.testing.assert_array_equal(np.flatnonzero(np.any(new.E != 0, axis=0)), ref.outlier_tasks)


def test_robust_warm_up_data():
    # verbatim: experiments/robust_dc.py, _warm_up (the data part)
    n_jobs = 2
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 5))
    Y = (rng.standard_normal((40, 2 * n_jobs)) > 0).astype(int)
    new = make_linear_tasks(np.zeros((5, 2 * n_jobs)), 40, shared_X=True, noise=1.0,
                            task_type="classification", random_state=np.random.default_rng(0))
    np.testing.assert_array_equal(new.X, X)
    np.testing.assert_array_equal(new.Y, Y)


# ----------------------------------------------------------------------------- sparse + low rank
def ref_make_fig2_data(n_tasks=30, n_features=100, n_train=60, n_test=200, rank=10, noise=0.1,
                       random_state=0):
    # verbatim: experiments/sparse_low_rank.py, make_fig2_data
    rng = np.random.default_rng(random_state)
    d, m = n_features, n_tasks
    P = rng.standard_normal((d, m))
    P[:30, :10] = 0.0
    U, s, Vt = np.linalg.svd(rng.standard_normal((d, m)), full_matrices=False)
    s[rank:] = 0.0
    Q = (U * s) @ Vt
    W = P + Q

    def draw(n):
        Xs = [rng.standard_normal((n, d)) for _ in range(m)]
        ys = [Xs[t] @ W[:, t] + noise * rng.standard_normal(n) for t in range(m)]
        return Xs, ys

    Xtr, ytr = draw(n_train)
    Xte, yte = draw(n_test)
    return {"P": P, "Q": Q, "X_train": Xtr, "y_train": ytr, "X_test": Xte, "y_test": yte}


def ref_make_planted_data(n_tasks=40, n_features=50, n_train=150, n_test=200, rank=2,
                          n_nonzero=60, singular_value=5.0, noise=0.05, random_state=0):
    # verbatim: experiments/sparse_low_rank.py, make_planted_data
    rng = np.random.default_rng(random_state)
    d, m = n_features, n_tasks
    U = np.linalg.qr(rng.standard_normal((d, rank)))[0]
    V = np.linalg.qr(rng.standard_normal((m, rank)))[0]
    Q = singular_value * U @ V.T
    P = np.zeros(d * m)
    pos = rng.choice(d * m, n_nonzero, replace=False)
    P[pos] = rng.choice([-1.0, 1.0], n_nonzero) * (1.0 + rng.random(n_nonzero))
    P = P.reshape(d, m)
    W = P + Q

    def draw(n):
        Xs = [rng.standard_normal((n, d)) for _ in range(m)]
        ys = [Xs[t] @ W[:, t] + noise * rng.standard_normal(n) for t in range(m)]
        return Xs, ys

    Xtr, ytr = draw(n_train)
    Xte, yte = draw(n_test)
    return {"P": P, "Q": Q, "X_train": Xtr, "y_train": ytr, "X_test": Xte, "y_test": yte}


def _check_train_test(new, ref):
    np.testing.assert_array_equal(new.P, ref["P"])
    np.testing.assert_array_equal(new.Q, ref["Q"])
    assert_lists_equal(new.X, ref["X_train"])
    assert_lists_equal(new.y, ref["y_train"])
    assert_lists_equal(new.X_test, ref["X_test"])
    assert_lists_equal(new.y_test, ref["y_test"])


def test_sparse_low_rank_fig2():
    ref = ref_make_fig2_data(n_tasks=14, n_features=40, n_train=9, n_test=12, rank=4,
                             random_state=2)
    new = make_sparse_low_rank_tasks(
        n_tasks=14, n_features=40, n_samples=9, n_test=12, rank=4, sparsity=1.0,
        zero_block=(30, 10), low_rank="truncated_svd", sparse_first=True, noise=0.1,
        random_state=np.random.default_rng(2))
    _check_train_test(new, ref)
    assert np.all(new.P[:30, :10] == 0) and new.rank == 4


def test_sparse_low_rank_planted():
    ref = ref_make_planted_data(n_tasks=10, n_features=12, n_train=8, n_test=5, rank=2,
                                n_nonzero=15, random_state=5)
    new = make_sparse_low_rank_tasks(
        n_tasks=10, n_features=12, n_samples=8, n_test=5, rank=2, n_nonzero=15,
        low_rank="orthonormal", low_rank_scale=5.0, sparse_values="signed_uniform", noise=0.05,
        random_state=np.random.default_rng(5))
    _check_train_test(new, ref)
    assert np.count_nonzero(new.P) == 15
    np.testing.assert_allclose(np.linalg.svd(new.Q, compute_uv=False)[:2], [5.0, 5.0])


# ----------------------------------------------------------------------------- conftest.py
def _ref_low_rank_weights(rng, d, m, rank=2):
    # verbatim: tests/conftest.py
    return rng.standard_normal((d, rank)) @ rng.standard_normal((rank, m))


def ref_make_regression_lists(sizes=(30, 45, 22), d=6, seed=0):
    # verbatim: tests/conftest.py, make_regression_lists
    rng = np.random.default_rng(seed)
    W = _ref_low_rank_weights(rng, d, len(sizes))
    Xs = [rng.standard_normal((n, d)) + rng.standard_normal(d) for n in sizes]
    ys = [X @ W[:, t] + 2.0 * t - 1.0 + 0.5 * rng.standard_normal(len(X))
          for t, X in enumerate(Xs)]
    return Xs, ys


def ref_make_classification_lists(sizes=(40, 55, 35), d=5, seed=1):
    # verbatim: tests/conftest.py, make_classification_lists
    rng = np.random.default_rng(seed)
    W = _ref_low_rank_weights(rng, d, len(sizes))
    Xs, ys = [], []
    for t, n in enumerate(sizes):
        X = rng.standard_normal((n, d))
        score = X @ W[:, t] + 0.3 * t + 0.8 * rng.standard_normal(n)
        y = (score > 0).astype(int)
        y[:2] = [0, 1]  # both classes present whatever the draw
        Xs.append(X)
        ys.append(y)
    return Xs, ys


def test_conftest_regression_lists():
    """Designs exact; targets within rounding (the old code adds ``2t`` and ``-1`` apart)."""
    Xs, ys = ref_make_regression_lists()
    rng = np.random.default_rng(0)
    W = rng.standard_normal((6, 2)) @ rng.standard_normal((2, 3))
    new = make_linear_tasks(W, (30, 45, 22), noise=0.5, intercept=2.0 * np.arange(3) - 1.0,
                            design_shift=1.0, random_state=rng)
    assert_lists_equal(new.X, Xs)
    for a, b in zip(new.y, ys, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-13)


def test_conftest_classification_lists():
    """Designs exact; labels exact except the first two of each task, which the old code
    overwrites with 0, 1 (the public generator redraws a one-class task instead)."""
    Xs, ys = ref_make_classification_lists()
    rng = np.random.default_rng(1)
    W = rng.standard_normal((5, 2)) @ rng.standard_normal((2, 3))
    new = make_linear_tasks(W, (40, 55, 35), noise=0.8, intercept=0.3 * np.arange(3),
                            task_type="classification", ensure_both_classes=True,
                            random_state=rng)
    assert_lists_equal(new.X, Xs)
    for a, b in zip(new.y, ys, strict=True):
        np.testing.assert_array_equal(a[2:], b[2:])
        assert 0 < a.sum() < len(a)
