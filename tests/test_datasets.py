"""Tests of multitask.datasets: School, the loaders of the data folder, splits, generators.

Expected sizes and counts come from the README of each folder of ``shared/data``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.sparse as sp

from multitask.datasets import (
    LETTER_PAIRS,
    _paths,
    find_data_dir,
    load_letters,
    load_newsgroups,
    load_sarcos,
    load_scene,
    load_school,
    load_splice,
    load_yeast,
    make_joint_sparse_tasks,
    make_low_rank_tasks,
    make_outlier_tasks,
    make_sparse_low_rank_tasks,
    split_shared,
    split_tasks,
)

# --------------------------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def data_root():
    """The data folder. Skip only when it is truly absent (a wrong MULTITASK_DATA fails)."""
    if os.environ.get("MULTITASK_DATA", "").strip():
        return find_data_dir()
    try:
        return find_data_dir()
    except FileNotFoundError as exc:
        pytest.skip(f"data folder not available: {exc}")


@pytest.fixture(scope="module")
def school():
    return load_school()


# --------------------------------------------------------------------------------------------
# find_data_dir
# --------------------------------------------------------------------------------------------


def test_find_data_dir_explicit(tmp_path, monkeypatch):
    monkeypatch.setenv("MULTITASK_DATA", str(tmp_path / "elsewhere"))
    assert find_data_dir(tmp_path) == tmp_path.resolve()
    with pytest.raises(FileNotFoundError, match="data_dir"):
        find_data_dir(tmp_path / "missing")


def test_find_data_dir_env(tmp_path, monkeypatch):
    monkeypatch.setenv("MULTITASK_DATA", str(tmp_path))
    assert find_data_dir() == tmp_path.resolve()
    monkeypatch.setenv("MULTITASK_DATA", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="MULTITASK_DATA"):
        find_data_dir()


def test_find_data_dir_search_beside_clone(tmp_path, monkeypatch):
    monkeypatch.delenv("MULTITASK_DATA", raising=False)
    (tmp_path / "shared" / "data").mkdir(parents=True)
    inside = tmp_path / "clone" / "src" / "pkg"
    inside.mkdir(parents=True)
    monkeypatch.chdir(inside)
    assert find_data_dir() == (tmp_path / "shared" / "data").resolve()


def test_find_data_dir_not_found(tmp_path, monkeypatch):
    monkeypatch.delenv("MULTITASK_DATA", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(_paths, "__file__", str(tmp_path / "pkg" / "_paths.py"))
    if any((p / "shared" / "data").is_dir() for p in (tmp_path, *tmp_path.parents)):
        pytest.skip("a shared/data folder exists above the temporary folder")
    with pytest.raises(FileNotFoundError, match="MULTITASK_DATA") as info:
        find_data_dir()
    assert "data_dir" in str(info.value)


@pytest.mark.parametrize(
    "loader, missing",
    [
        (load_sarcos, "sarcos_inv_test.mat"),
        (load_yeast, "yeast-train.arff"),
        (load_scene, "scene-train.arff"),
        (load_letters, "ocr_taskar.mat"),
        (load_newsgroups, "task1.mat"),
        (load_splice, "C_elegans_acc_seq.arff"),
    ],
)
def test_loaders_name_the_missing_file(tmp_path, loader, missing):
    with pytest.raises(FileNotFoundError, match=missing):
        loader(data_dir=tmp_path)


# --------------------------------------------------------------------------------------------
# School (shipped with the package)
# --------------------------------------------------------------------------------------------


def test_school_sizes(school):
    assert len(school.X) == len(school.y) == len(school.task_names) == 139
    sizes = np.array([len(y) for y in school.y])
    assert sizes.sum() == 15362
    assert sizes.min() == 22 and sizes.max() == 251
    assert all(
        X.shape == (n, 27) and X.dtype == np.float64 for X, n in zip(school.X, sizes, strict=True)
    )
    assert all(
        y.dtype == np.float64 and y.shape == (n,) for y, n in zip(school.y, sizes, strict=True)
    )
    assert len(school.feature_names) == 27
    assert school.task_names[0] == "school_0" and school.task_names[-1] == "school_138"
    y = np.concatenate(school.y)
    assert y.min() == 1 and y.max() == 70 and abs(y.mean() - 20.6) < 0.05
    assert "Goldstein" in school.DESCR and "Convex multi-task feature learning" in school.DESCR


def test_school_bias_and_long_format(school):
    biased = load_school(include_bias=True)
    assert biased.X[5].shape[1] == 28 and biased.feature_names[-1] == "bias"
    assert np.all(biased.X[5][:, -1] == 1.0)
    np.testing.assert_array_equal(biased.X[5][:, :-1], school.X[5])
    long = load_school(return_long=True)
    assert long.X.shape == (15362, 27) and long.y.shape == (15362,)
    np.testing.assert_array_equal(np.bincount(long.task), [len(y) for y in school.y])
    t = 17
    rows = slice(long.offsets[t], long.offsets[t + 1])
    np.testing.assert_array_equal(long.X[rows], school.X[t])
    assert np.all(long.task[rows] == t)


def test_school_splits_partition_each_task(school):
    assert len(school.splits) == 10
    sizes = [len(y) for y in school.y]
    first_train = None
    for split in school.splits:
        assert len(split["train"]) == len(split["test"]) == 139
        n_train = 0
        for train, test, n in zip(split["train"], split["test"], sizes, strict=True):
            both = np.concatenate([train, test])
            np.testing.assert_array_equal(np.sort(both), np.arange(n))
            assert 0.7 <= len(train) / n <= 0.76
            n_train += len(train)
        assert n_train == 11472
        if first_train is None:
            first_train = split["train"]
    # the splits differ from each other
    assert not all(
        np.array_equal(a, b) for a, b in zip(first_train, school.splits[1]["train"], strict=True)
    )


def test_school_npz_matches_source(data_root, tmp_path):
    """Rebuilding the shipped file from the source .mat files gives the same arrays."""
    from multitask.datasets import _build_school, _school

    rebuilt = _build_school.build(data_root, tmp_path / "school.npz")
    shipped = _school._read_npz()
    assert set(rebuilt) == set(shipped)
    for key in shipped:
        np.testing.assert_array_equal(rebuilt[key], shipped[key])
    assert _build_school.OUTPUT.stat().st_size < 200_000


# --------------------------------------------------------------------------------------------
# Loaders of the data folder
# --------------------------------------------------------------------------------------------


def test_sarcos(data_root):
    data = load_sarcos(data_root)
    assert data.X.shape == (4449, 21) and data.Y.shape == (4449, 7)
    assert data.X.dtype == np.float64
    assert len(data.feature_names) == 21 and len(data.task_names) == 7
    assert "4,449" in data.DESCR


YEAST_TRAIN = [476, 645, 598, 532, 441, 378, 261, 289, 98, 161, 198, 1128, 1116, 21]
YEAST_ALL = [762, 1038, 983, 862, 722, 597, 428, 480, 178, 253, 289, 1816, 1799, 34]
SCENE_TRAIN = [227, 165, 197, 196, 277, 224]
SCENE_ALL = [427, 364, 397, 433, 533, 431]


@pytest.mark.parametrize(
    "loader, n_train, n_test, d, counts_train, counts_all",
    [
        (load_yeast, 1500, 917, 103, YEAST_TRAIN, YEAST_ALL),
        (load_scene, 1211, 1196, 294, SCENE_TRAIN, SCENE_ALL),
    ],
)
def test_multilabel(data_root, loader, n_train, n_test, d, counts_train, counts_all):
    full = loader(data_root)
    m = len(counts_all)
    assert full.X.shape == (n_train + n_test, d) and full.Y.shape == (n_train + n_test, m)
    assert set(np.unique(full.Y)) == {0, 1}
    np.testing.assert_array_equal(full.Y.sum(axis=0), counts_all)
    np.testing.assert_array_equal(full.Y[full.train_index].sum(axis=0), counts_train)
    assert len(full.test_index) == n_test and len(full.task_names) == m
    train = loader(data_root, subset="train")
    np.testing.assert_array_equal(train.X, full.X[full.train_index])
    test = loader(data_root, subset="test")
    np.testing.assert_array_equal(test.Y, full.Y[full.test_index])
    assert "train_index" not in test
    with pytest.raises(ValueError, match="subset"):
        loader(data_root, subset="validation")


def test_letters(data_root):
    data = load_letters(data_root)
    assert len(data.X) == len(data.y) == 7
    assert list(data.task_names) == [f"{a}/{b}" for a, b in LETTER_PAIRS]
    for X, y in zip(data.X, data.y, strict=True):
        assert X.shape == (len(y), 128) and X.dtype == np.float64
        assert set(np.unique(y)) == {0, 1}
        assert set(np.unique(X)) <= {0.0, 1.0}
    # per-letter counts from the README: c=2114, e=4955, g=2472, y=1221
    assert np.bincount(data.y[0]).tolist() == [4955, 2114]
    assert np.bincount(data.y[1]).tolist() == [1221, 2472]
    one = load_letters(data_root, pairs=[("e", "c")])
    np.testing.assert_array_equal(one.y[0], 1 - data.y[0])
    with pytest.raises(ValueError):
        load_letters(data_root, pairs=[("a", "a")])


def test_newsgroups(data_root):
    data = load_newsgroups(data_root)
    assert list(data.task_names) == [
        "comp.vs.sci/task1",
        "comp.vs.sci/task2",
        "rec.vs.talk/task1",
        "rec.vs.talk/task2",
    ]
    assert [X.shape for X in data.X] == [(n, 2000) for n in (1875, 1827, 1844, 1545)]
    assert all(sp.issparse(X) and X.format == "csr" and X.dtype == np.float64 for X in data.X)
    assert np.bincount(data.y[0]).tolist() == [967, 908]
    assert np.bincount(data.y[3]).tolist() == [860, 685]
    one = load_newsgroups(data_root, pairs="rec.vs.talk")
    assert len(one.X) == 2


def test_splice(data_root):
    root = data_root
    data = load_splice(root)
    assert len(data.sequences) == 2200 and data.y.shape == (2200,)
    assert (data.y == 1).sum() == 200 and (data.y == -1).sum() == 2000
    assert all(len(s) == 82 and set(s) <= set("ACGT") for s in data.sequences)
    fasta = load_splice(root, source="fasta", n_max=300)
    assert len(fasta.sequences) == 300 and all(len(s) == 398 for s in fasta.sequences)
    assert set(np.unique(fasta.y)) <= {-1, 1}
    sub1 = load_splice(root, n_max=100, random_state=0)
    sub2 = load_splice(root, n_max=100, random_state=0)
    assert sub1.sequences == sub2.sequences and len(sub1.sequences) == 100
    assert sub1.sequences != data.sequences[:100]
    with pytest.raises(ValueError, match="source"):
        load_splice(root, source="csv")


# --------------------------------------------------------------------------------------------
# split_tasks and split_shared
# --------------------------------------------------------------------------------------------


def _toy_tasks(sizes, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = [rng.standard_normal((n, d)) for n in sizes]
    y = [np.arange(n, dtype=float) for n in sizes]
    return X, y


def test_split_tasks_ratio_and_determinism():
    sizes = [4, 10, 22, 251]
    X, y = _toy_tasks(sizes)
    Xtr, ytr, Xte, yte, itr, ite = split_tasks(
        X, y, train_ratio=0.1, random_state=3, return_indices=True
    )
    assert [len(v) for v in ytr] == [1, 1, 2, 25]
    for t, n in enumerate(sizes):
        assert len(ytr[t]) + len(yte[t]) == n
        np.testing.assert_array_equal(np.sort(np.concatenate([itr[t], ite[t]])), np.arange(n))
        np.testing.assert_array_equal(Xtr[t], X[t][itr[t]])
        np.testing.assert_array_equal(yte[t], y[t][ite[t]])
    again = split_tasks(X, y, train_ratio=0.1, random_state=3)
    for a, b in zip(again[1], ytr, strict=True):
        np.testing.assert_array_equal(a, b)
    other = split_tasks(X, y, train_ratio=0.1, random_state=4)
    assert any(not np.array_equal(a, b) for a, b in zip(other[1], ytr, strict=True))
    # ratio 0.75: round half up, capped to leave min_test rows
    counts = [len(v) for v in split_tasks(X, y, train_ratio=0.75, random_state=0)[1]]
    assert counts == [3, 8, 17, 188]
    counts = [len(v) for v in split_tasks(X, y, train_ratio=0.9, min_test=2, random_state=0)[1]]
    assert counts == [2, 8, 20, 226]


def test_split_tasks_fixed_counts_and_errors():
    X, y = _toy_tasks([5, 12, 30])
    counts = [len(v) for v in split_tasks(X, y, n_train=10, random_state=0)[1]]
    assert counts == [4, 10, 10]
    counts = [len(v) for v in split_tasks(X, y, n_train=[1, 2, 3], random_state=0)[1]]
    assert counts == [1, 2, 3]
    counts = [len(v) for v in split_tasks(X, y, train_ratio=0.01, min_train=3, random_state=0)[1]]
    assert counts == [3, 3, 3]
    with pytest.raises(ValueError, match="exactly one"):
        split_tasks(X, y, train_ratio=0.5, n_train=3)
    with pytest.raises(ValueError, match="exactly one"):
        split_tasks(X, y)
    with pytest.raises(ValueError, match="train_ratio"):
        split_tasks(X, y, train_ratio=1.5)
    with pytest.raises(ValueError, match="task 0"):
        split_tasks(X, y, train_ratio=0.5, min_train=3, min_test=3)
    with pytest.raises(ValueError, match="tasks"):
        split_tasks(X, y[:2], train_ratio=0.5)


def test_split_tasks_sparse_input():
    X, y = _toy_tasks([8, 9])
    Xs = [sp.csr_matrix(x) for x in X]
    Xtr, _, Xte, _ = split_tasks(Xs, y, train_ratio=0.5, random_state=1)
    Xtr_d, _, Xte_d, _ = split_tasks(X, y, train_ratio=0.5, random_state=1)
    for a, b in zip(Xtr + Xte, Xtr_d + Xte_d, strict=True):
        assert sp.issparse(a)
        np.testing.assert_array_equal(a.toarray(), b)


def test_split_tasks_stratify_keeps_both_classes():
    rng = np.random.default_rng(0)
    n = 40
    X = [rng.standard_normal((n, 2)) for _ in range(30)]
    y = [np.r_[np.ones(2, int), np.zeros(n - 2, int)] for _ in range(30)]
    _, ytr, _, yte = split_tasks(X, y, train_ratio=0.1, stratify=True, random_state=0)
    assert all(len(v) == 4 for v in ytr)
    assert all(set(v) == {0, 1} for v in ytr)
    assert all(set(v) == {0, 1} for v in yte)
    _, ytr_plain, _, _ = split_tasks(X, y, train_ratio=0.1, random_state=0)
    assert any(set(v) != {0, 1} for v in ytr_plain)
    # proportional when there is room: 20% positives in 50 rows, 20 training rows -> 4 positive
    y2 = [np.r_[np.ones(10, int), np.zeros(40, int)]]
    X2 = [np.zeros((50, 1))]
    _, ytr2, _, _ = split_tasks(X2, y2, n_train=20, stratify=True, random_state=0)
    assert ytr2[0].sum() == 4


def test_split_shared():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 4))
    Y = rng.standard_normal((50, 3))
    Xtr, Ytr, Xte, Yte, itr, ite = split_shared(
        X, Y, train_ratio=0.3, random_state=0, return_indices=True
    )
    assert Xtr.shape == (15, 4) and Ytr.shape == (15, 3) and Xte.shape == (35, 4)
    np.testing.assert_array_equal(np.sort(np.r_[itr, ite]), np.arange(50))
    np.testing.assert_array_equal(Ytr, Y[itr])
    again = split_shared(X, Y, train_ratio=0.3, random_state=0)
    np.testing.assert_array_equal(again[0], Xtr)
    Xtr_s, _, _, _ = split_shared(sp.csr_matrix(X), Y, n_train=10, random_state=2)
    assert sp.issparse(Xtr_s) and Xtr_s.shape == (10, 4)
    with pytest.raises(ValueError, match="n_train"):
        split_shared(X, Y, n_train=50)
    with pytest.raises(ValueError, match="rows"):
        split_shared(X, Y[:10], train_ratio=0.5)


# --------------------------------------------------------------------------------------------
# Synthetic generators
# --------------------------------------------------------------------------------------------

GENERATORS = [
    make_low_rank_tasks,
    make_joint_sparse_tasks,
    make_sparse_low_rank_tasks,
    make_outlier_tasks,
]


@pytest.mark.parametrize("make", GENERATORS)
def test_generators_shapes_and_determinism(make):
    a = make(n_tasks=6, n_features=8, n_samples=[5, 6, 7, 8, 9, 10], random_state=0)
    b = make(n_tasks=6, n_features=8, n_samples=[5, 6, 7, 8, 9, 10], random_state=0)
    c = make(n_tasks=6, n_features=8, n_samples=[5, 6, 7, 8, 9, 10], random_state=1)
    assert a.W_true.shape == (8, 6)
    assert [X.shape for X in a.X] == [(n, 8) for n in range(5, 11)]
    assert [y.shape for y in a.y] == [(n,) for n in range(5, 11)]
    np.testing.assert_array_equal(a.W_true, b.W_true)
    for u, v in zip(a.y, b.y, strict=True):
        np.testing.assert_array_equal(u, v)
    assert not np.array_equal(a.W_true, c.W_true)
    # noiseless regression: y = X w exactly
    clean = make(n_tasks=6, n_features=8, n_samples=12, noise=0.0, random_state=2)
    for t, (X, y) in enumerate(zip(clean.X, clean.y, strict=True)):
        np.testing.assert_allclose(y, X @ clean.W_true[:, t])


@pytest.mark.parametrize("make", GENERATORS)
def test_generators_shared_and_classification(make):
    data = make(
        n_tasks=5,
        n_features=7,
        n_samples=40,
        shared_X=True,
        task_type="classification",
        random_state=0,
    )
    assert data.X.shape == (40, 7) and data.Y.shape == (40, 5) and "y" not in data
    assert set(np.unique(data.Y)) <= {0, 1}
    clean = make(n_tasks=5, n_features=7, n_samples=40, shared_X=True, noise=0, random_state=0)
    np.testing.assert_allclose(clean.Y, clean.X @ clean.W_true)
    labels = make(
        n_tasks=5, n_features=7, n_samples=40, noise=0, task_type="classification", random_state=0
    )
    for t, (X, y) in enumerate(zip(labels.X, labels.y, strict=True)):
        np.testing.assert_array_equal(y, (X @ labels.W_true[:, t] > 0).astype(int))
    with pytest.raises(ValueError, match="shared_X"):
        make(n_tasks=3, n_samples=[3, 4, 5], shared_X=True)
    with pytest.raises(ValueError, match="task_type"):
        make(task_type="ranking")


def test_generator_structures():
    low = make_low_rank_tasks(n_tasks=12, n_features=15, rank=4, random_state=0)
    assert np.linalg.matrix_rank(low.W_true) == 4
    np.testing.assert_allclose(low.W_true, low.U @ low.V.T / 2.0)

    js = make_joint_sparse_tasks(n_tasks=10, n_features=20, n_relevant=6, random_state=0)
    nonzero_rows = np.flatnonzero(np.abs(js.W_true).sum(axis=1))
    np.testing.assert_array_equal(nonzero_rows, js.support)
    assert len(js.support) == 6 and np.all(js.W_true[js.support] != 0)

    slr = make_sparse_low_rank_tasks(
        n_tasks=10, n_features=20, rank=2, sparsity=0.05, random_state=0
    )
    assert np.count_nonzero(slr.P) == 10
    assert np.linalg.matrix_rank(slr.Q) == 2
    np.testing.assert_allclose(slr.W_true, slr.P + slr.Q)

    out = make_outlier_tasks(n_tasks=10, n_features=20, rank=2, n_outliers=3, random_state=0)
    assert len(out.outlier_tasks) == 3
    np.testing.assert_array_equal(np.flatnonzero(np.abs(out.E).sum(axis=0)), out.outlier_tasks)
    assert np.linalg.matrix_rank(out.L) == 2
    np.testing.assert_allclose(out.W_true, out.L + out.E)
    with pytest.raises(ValueError, match="rank"):
        make_low_rank_tasks(n_tasks=3, n_features=10, rank=4)


def test_generators_accept_numpy_generator():
    a = make_low_rank_tasks(n_tasks=3, n_features=4, random_state=np.random.default_rng(5))
    b = make_low_rank_tasks(n_tasks=3, n_features=4, random_state=np.random.default_rng(5))
    np.testing.assert_array_equal(a.X[0], b.X[0])
