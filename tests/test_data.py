"""The data layer: the three input formats, dense vs CSR algebra, validation, no mutation.

Formats: (a) shared ``X`` with 2-D ``Y``; (b) lists of per-task arrays; (c) long format with a
task id per row, given as ``task=`` or in a column of ``X`` (``task_column``).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import scipy.sparse as sp

from multitask.data import (
    MultiTaskData,
    as_multitask_data,
    check_scalar_param,
    split_task_column,
    unstack_predictions,
)
from multitask.estimators import (
    IndependentRidgeRegressor,
    L21Regressor,
    TraceNormClassifier,
    TraceNormRegressor,
)

MODELS = [TraceNormRegressor, L21Regressor]


# ----------------------------------------------------------------------------- formats


@pytest.mark.parametrize("model", MODELS)
def test_shared_design_formats_give_the_same_model(model, precise, shared_regression):
    """Shared X with 2-D Y = m copies in lists = long format (task=, task_column), to 1e-8."""
    X, Y = shared_regression
    n, m = Y.shape
    cls = precise(model)
    ref = cls(alpha=0.3).fit(X, Y)
    fits = {
        "shared-csr": (cls(alpha=0.3).fit(sp.csr_matrix(X), Y), np.arange(m)),
        "lists": (cls(alpha=0.3).fit([X] * m, [Y[:, t] for t in range(m)]), np.arange(m)),
    }
    labels = np.array(["d", "b", "c", "a"])[:m]  # user labels, not in sorted order
    Xl = np.tile(X, (m, 1))
    yl = Y.T.ravel()
    tl = np.repeat(labels, n)
    perm = np.random.default_rng(0).permutation(n * m)
    fits["long-task"] = (cls(alpha=0.3).fit(Xl[perm], yl[perm], task=tl[perm]), labels)
    num = np.array([30.0, 10.0, 20.0, 40.0])[:m]
    Xtc = np.column_stack([Xl, np.repeat(num, n)])[perm]
    fits["long-column"] = (cls(alpha=0.3, task_column=-1).fit(Xtc, yl[perm]), num)
    for name, (est, user_labels) in fits.items():
        # map the fitted task order to the columns of Y
        idx = [list(est.tasks_).index(lab) for lab in user_labels]
        np.testing.assert_allclose(est.coef_[idx], ref.coef_, atol=1e-8, err_msg=name)
        np.testing.assert_allclose(est.intercept_[idx], ref.intercept_, atol=1e-8, err_msg=name)


@pytest.mark.parametrize("model", MODELS)
def test_per_task_formats_give_the_same_model(model, precise, regression_lists, datagen):
    """Per-task lists (dense and CSR) = long format with task= and with task_column, to 1e-8."""
    Xs, ys = regression_lists
    cls = precise(model)
    ref = cls(alpha=0.2).fit(Xs, ys)
    labels = np.array([7, -2, 5])
    X, y, task = datagen.lists_to_long(Xs, ys, labels=labels)
    fits = {
        "lists-csr": (cls(alpha=0.2).fit([sp.csr_matrix(x) for x in Xs], ys), np.arange(3)),
        "long-task": (cls(alpha=0.2).fit(X, y, task=task), labels),
        "long-task-csr": (cls(alpha=0.2).fit(sp.csr_matrix(X), y, task=task), labels),
        "long-column-first": (cls(alpha=0.2, task_column=0).fit(np.column_stack([task, X]), y),
                              labels),
    }
    for name, (est, user_labels) in fits.items():
        idx = [list(est.tasks_).index(lab) for lab in user_labels]
        np.testing.assert_allclose(est.coef_[idx], ref.coef_, atol=1e-8, err_msg=name)
        np.testing.assert_allclose(est.intercept_[idx], ref.intercept_, atol=1e-8, err_msg=name)


def test_long_format_predictions_come_back_in_user_row_order(regression_lists, datagen):
    Xs, ys = regression_lists
    X, y, task = datagen.lists_to_long(Xs, ys, labels=["x", "y", "z"], seed=5)
    est = TraceNormRegressor(alpha=0.1).fit(X, y, task=task)
    rows = [list(est.tasks_).index(t) for t in task]
    expected = np.einsum("ij,ij->i", X, est.coef_[rows]) + est.intercept_[rows]
    np.testing.assert_allclose(est.predict(X, task=task), expected, atol=1e-12)
    # new rows in another order, a subset of the tasks, and one row
    perm = np.random.default_rng(1).permutation(len(y))[:17]
    np.testing.assert_allclose(est.predict(X[perm], task=task[perm]), expected[perm], atol=1e-12)
    np.testing.assert_allclose(est.predict(X[:1], task=task[:1]), expected[:1], atol=1e-12)
    # the same through a task column and through per-task lists
    codes = np.array([{"x": 0.0, "y": 1.0, "z": 2.0}[t] for t in task])
    est_c = TraceNormRegressor(alpha=0.1, task_column=-1).fit(np.column_stack([X, codes]), y)
    np.testing.assert_allclose(est_c.predict(np.column_stack([X, codes])), expected, atol=1e-10)
    est_l = TraceNormRegressor(alpha=0.1).fit(Xs, ys)
    np.testing.assert_allclose(est_l.predict(X, task=codes.astype(int)), expected, atol=1e-10)
    pred_l = est_l.predict(Xs)
    assert isinstance(pred_l, list)
    for t, Xt in enumerate(Xs):
        np.testing.assert_allclose(pred_l[t], Xt @ est_l.coef_[t] + est_l.intercept_[t],
                                   atol=1e-12)


def test_shared_format_predicts_one_column_per_task(shared_regression):
    X, Y = shared_regression
    est = TraceNormRegressor(alpha=0.1).fit(X, Y)
    pred = est.predict(X)
    assert pred.shape == Y.shape
    np.testing.assert_allclose(pred, X @ est.coef_.T + est.intercept_, atol=1e-12)


# ----------------------------------------------------------------------------- algebra


def _reference_algebra(Xs, W, R):
    """Per-task loops: scores, X_t^T R_t, Gram matrices, X_t^T y_t."""
    offs = np.concatenate([[0], np.cumsum([len(X) for X in Xs])])
    z = np.concatenate([X @ W[:, t] for t, X in enumerate(Xs)])
    G = np.column_stack([X.T @ R[offs[t]:offs[t + 1]] for t, X in enumerate(Xs)])
    gram = np.stack([X.T @ X for X in Xs])
    return z, G, gram


def _sparse_lists(rng, sizes, d):
    Xs = [rng.standard_normal((n, d)) for n in sizes]
    return [np.where(np.abs(X) > 0.7, X, 0.0) for X in Xs]


@pytest.mark.parametrize("layout", ["lists", "shared", "shared-many"])
def test_dense_and_csr_algebra_agree_with_per_task_loops(layout):
    """shared-many: more tasks than one block of the shared sparse products."""
    rng = np.random.default_rng(2)
    d, m = 5, (150 if layout == "shared-many" else 3)
    if layout == "lists":
        Xs = _sparse_lists(rng, (8, 11, 4), d)
        ys = [rng.standard_normal(len(X)) for X in Xs]
        dense, _ = as_multitask_data(Xs, ys)
        csr, _ = as_multitask_data([sp.csr_matrix(X) for X in Xs], ys)
    else:
        X = _sparse_lists(rng, (9,), d)[0]
        Xs = [X] * m
        Y = rng.standard_normal((9, m))
        ys = [Y[:, t] for t in range(m)]
        dense, _ = as_multitask_data(X, Y)
        csr, _ = as_multitask_data(sp.csr_matrix(X), Y)
        assert dense.shared and csr.shared and dense.X.shape == (9, d)  # stored once
    assert csr.is_sparse and not dense.is_sparse
    W = rng.standard_normal((d, m))
    R = rng.standard_normal(dense.n_rows)
    z, G, gram = _reference_algebra(Xs, W, R)
    for data in (dense, csr):
        np.testing.assert_allclose(data.matvec(W), z, atol=1e-12)
        np.testing.assert_allclose(data.rmatvec(R), G, atol=1e-12)
        g = data.gram()
        np.testing.assert_allclose(g[0] if g.shape[0] == 1 else g,
                                   gram[0] if g.shape[0] == 1 else gram, atol=1e-12)
        np.testing.assert_allclose(data.xty(), _reference_algebra(Xs, W, data.y)[1], atol=1e-12)
        np.testing.assert_allclose(data.y, np.concatenate(ys), atol=0)
        sums = [R[o:e].sum() for o, e in zip(data.offsets[:-1], data.offsets[1:], strict=True)]
        np.testing.assert_allclose(data.task_sum(R), sums, atol=1e-12)
        np.testing.assert_array_equal(data.expand(np.arange(m)), data.task_of_row)

    # centred data: X_t - mean(X_t), y_t - mean(y_t), per task
    Xcs = [X - X.mean(axis=0) for X in Xs]
    zc, Gc, gramc = _reference_algebra(Xcs, W, R)
    for data in (dense, csr):
        c, x_mean, y_mean = data.centered()
        np.testing.assert_allclose(x_mean, np.column_stack([X.mean(axis=0) for X in Xs]),
                                   atol=1e-12)
        np.testing.assert_allclose(y_mean, [v.mean() for v in ys], atol=1e-12)
        np.testing.assert_allclose(c.y, np.concatenate([v - v.mean() for v in ys]), atol=1e-12)
        np.testing.assert_allclose(c.matvec(W), zc, atol=1e-12)
        np.testing.assert_allclose(c.rmatvec(R), Gc, atol=1e-12)
        g = c.gram()
        np.testing.assert_allclose(g[0] if g.shape[0] == 1 else g,
                                   gramc[0] if g.shape[0] == 1 else gramc, atol=1e-12)
        spec = [np.linalg.norm(X, 2) ** 2 for X in Xcs]
        np.testing.assert_allclose(c.task_spectral_norms_sq(), spec, rtol=1e-10)
        assert c.is_sparse == data.is_sparse and c.shared == data.shared


def test_container_bookkeeping(regression_lists):
    Xs, ys = regression_lists
    data, classes = as_multitask_data(Xs, ys)
    assert classes is None
    sizes = [len(X) for X in Xs]
    assert data.n_tasks == 3 and data.n_features == Xs[0].shape[1]
    assert data.n_rows == sum(sizes)
    np.testing.assert_array_equal(data.task_sizes, sizes)
    np.testing.assert_array_equal(data.offsets, np.concatenate([[0], np.cumsum(sizes)]))
    np.testing.assert_array_equal(data.task_of_row, np.repeat(np.arange(3), sizes))
    np.testing.assert_allclose(data.row_weights, np.repeat(1.0 / np.array(sizes), sizes))
    for t in range(3):
        np.testing.assert_array_equal(data.task_X(t), Xs[t])
        np.testing.assert_array_equal(data.task_y(t), ys[t])
    sub = data.subset_tasks([2, 0])
    np.testing.assert_array_equal(sub.task_X(0), Xs[2])
    np.testing.assert_array_equal(sub.task_y(1), ys[0])
    np.testing.assert_array_equal(sub.tasks, [2, 0])
    assert isinstance(sub, MultiTaskData)


def test_unstack_predictions_inverts_the_stacking(regression_lists, datagen):
    Xs, ys = regression_lists
    X, y, task = datagen.lists_to_long(Xs, ys, seed=9)
    data, _ = as_multitask_data(X, y, task)
    np.testing.assert_array_equal(unstack_predictions(data, data.y), y)
    Xsh = np.random.default_rng(0).standard_normal((6, 2))
    Y = np.arange(18.0).reshape(6, 3)
    shared, _ = as_multitask_data(Xsh, Y)
    np.testing.assert_array_equal(unstack_predictions(shared, shared.y), Y)


def test_classification_labels_are_encoded_per_task():
    rng = np.random.default_rng(3)
    Xs = [rng.standard_normal((6, 2)) for _ in range(2)]
    ys = [np.array(["no", "yes", "yes", "no", "no", "yes"]), np.array(["yes", "no"] * 3)]
    data, classes = as_multitask_data(Xs, ys, classification=True)
    np.testing.assert_array_equal(classes, ["no", "yes"])
    np.testing.assert_array_equal(data.y, np.where(np.concatenate(ys) == "yes", 1.0, -1.0))


# ----------------------------------------------------------------------------- validation


def _lists(seed=4, sizes=(6, 7, 5), d=4):
    rng = np.random.default_rng(seed)
    Xs = [rng.standard_normal((n, d)) for n in sizes]
    return Xs, [rng.standard_normal(n) for n in sizes]


def _long(seed=4):
    Xs, ys = _lists(seed)
    task = np.repeat(["a", "b", "c"], [len(x) for x in Xs])
    return np.vstack(Xs), np.concatenate(ys), task


def _with(a, idx, value):
    a = np.array(a, dtype=float)
    a[idx] = value
    return a


def _fit_long_bad_x():
    X, y, task = _long()
    TraceNormRegressor().fit(_with(X, (8, 1), np.nan), y, task=task)


def _fit_long_bad_x_csr():
    X, y, task = _long()
    TraceNormRegressor().fit(sp.csr_matrix(_with(X, (8, 1), np.inf)), y, task=task)


def _fit_long_bad_y():
    X, y, task = _long()
    TraceNormRegressor().fit(X, _with(y, 15, -np.inf), task=task)


def _fit_long_bad_y_classifier():
    X, y, task = _long()
    TraceNormClassifier().fit(X, _with((y > 0).astype(float), 8, np.nan), task=task)


def _fit_column_bad_x():
    X, y, task = _long()
    codes = np.repeat([0.0, 1.0, 2.0], [6, 7, 5])
    TraceNormRegressor(task_column=-1).fit(np.column_stack([_with(X, (14, 0), np.nan), codes]),
                                           y)


def _fit_lists_bad_x():
    Xs, ys = _lists()
    Xs[1] = _with(Xs[1], (2, 3), np.nan)
    TraceNormRegressor().fit(Xs, ys)


def _fit_lists_bad_y():
    Xs, ys = _lists()
    ys[2] = _with(ys[2], 1, np.inf)
    TraceNormRegressor().fit(Xs, ys)


def _fit_shared_bad_y():
    Xs, _ = _lists(sizes=(8,))
    Y = _with(np.ones((8, 3)) + np.arange(8)[:, None], (3, 2), np.nan)
    TraceNormRegressor().fit(Xs[0], Y)


def _fit_shared_bad_x():
    Xs, _ = _lists(sizes=(8,))
    TraceNormRegressor().fit(_with(Xs[0], (5, 2), np.inf), np.ones((8, 3)))


def _predict_long_bad_x():
    X, y, task = _long()
    est = TraceNormRegressor().fit(X, y, task=task)
    est.predict(_with(X, (2, 0), np.nan), task=task)


def _data_long_bad_x():
    X, y, task = _long()
    as_multitask_data(_with(X, (8, 1), np.nan), y, task)


NAN_CASES = {
    "long X": (_fit_long_bad_x, r"X contains NaN or infinity.*row 8, column 1, task 'b'"),
    "long X csr": (_fit_long_bad_x_csr, r"X contains NaN or infinity.*row 8, column 1, task 'b'"),
    "long y": (_fit_long_bad_y, r"y contains NaN or infinity.*row 15, task 'c'"),
    "long y classifier": (_fit_long_bad_y_classifier, r"y contains NaN.*row 8, task 'b'"),
    "task column X": (_fit_column_bad_x, r"X contains NaN or infinity.*row 14.*task 2"),
    "lists X": (_fit_lists_bad_x, r"X of task 1 contains NaN or infinity.*row 2, column 3"),
    "lists y": (_fit_lists_bad_y, r"y of task 2 contains NaN or infinity.*row 1"),
    "shared Y": (_fit_shared_bad_y, r"y of task 2 contains NaN or infinity.*row 3"),
    "shared X": (_fit_shared_bad_x, r"X contains NaN or infinity.*row 5, column 2"),
    "predict long X": (_predict_long_bad_x, r"X contains NaN or infinity.*row 2.*task 'a'"),
    "data layer": (_data_long_bad_x, r"X contains NaN or infinity.*task 'b'"),
}


@pytest.mark.parametrize("case", sorted(NAN_CASES))
def test_nan_or_inf_is_rejected_naming_row_and_task(case):
    func, match = NAN_CASES[case]
    with pytest.raises(ValueError, match=match):
        func()


def _mismatch_long():
    X, y, task = _long()
    TraceNormRegressor().fit(X, y[:-1], task=task)


def _mismatch_task():
    X, y, task = _long()
    TraceNormRegressor().fit(X, y, task=task[:-1])


def _mismatch_lists():
    Xs, ys = _lists()
    ys[1] = ys[1][:-1]
    TraceNormRegressor().fit(Xs, ys)


def _mismatch_list_count():
    Xs, ys = _lists()
    TraceNormRegressor().fit(Xs, ys[:2])


def _mismatch_shared():
    Xs, _ = _lists(sizes=(8,))
    TraceNormRegressor().fit(Xs[0], np.ones((7, 3)))


def _mismatch_features_between_tasks():
    Xs, ys = _lists()
    Xs[2] = Xs[2][:, :3]
    TraceNormRegressor().fit(Xs, ys)


def _empty_task_lists():
    Xs, ys = _lists()
    Xs[1], ys[1] = Xs[1][:0], ys[1][:0]
    TraceNormRegressor().fit(Xs, ys)


def _empty_task_known_tasks():
    X, y, task = _long()
    as_multitask_data(X, y, task, known_tasks=np.array(["a", "b", "c", "zz"]))


def _one_class(layout):
    def run():
        Xs, ys = _lists()
        yc = [(v > 0).astype(int) for v in ys]
        yc[1][:] = 1
        if layout == "lists":
            TraceNormClassifier().fit(Xs, yc)
        elif layout == "long":
            task = np.repeat(["a", "b", "c"], [len(x) for x in Xs])
            TraceNormClassifier().fit(np.vstack(Xs), np.concatenate(yc), task=task)
        else:
            X = Xs[0]
            Y = np.column_stack([np.arange(6) % 2, np.zeros(6, int), np.arange(6) % 2])
            TraceNormClassifier().fit(X, Y)
    return run


def _fitted_long():
    X, y, task = _long()
    return TraceNormRegressor().fit(X, y, task=task), X, task


def _wrong_features_long():
    est, X, task = _fitted_long()
    est.predict(X[:, :3], task=task)


def _wrong_features_lists():
    Xs, ys = _lists()
    TraceNormRegressor().fit(Xs, ys).predict([x[:, :3] for x in Xs])


def _wrong_features_shared():
    Xs, _ = _lists(sizes=(8,))
    TraceNormRegressor().fit(Xs[0], np.arange(24.0).reshape(8, 3) ** 2).predict(Xs[0][:, :2])


def _wrong_task_count_lists():
    Xs, ys = _lists()
    TraceNormRegressor().fit(Xs, ys).predict(Xs[:2])


def _unknown_task():
    est, X, task = _fitted_long()
    est.predict(X, task=np.where(task == "b", "q", task))


def _unknown_task_column():
    X, y, _ = _long()
    codes = np.repeat([0.0, 1.0, 2.0], [6, 7, 5])
    est = TraceNormRegressor(task_column=-1).fit(np.column_stack([X, codes]), y)
    est.predict(np.column_stack([X, np.where(codes == 1.0, 9.0, codes)]))


def _missing_task_ids():
    est, X, _ = _fitted_long()
    est.predict(X)


INPUT_CASES = {
    "mismatch long": (_mismatch_long, "X has 18 rows but y has 17"),
    "mismatch task": (_mismatch_task, r"task must be 1-D with one id per row of X \(18\)"),
    "mismatch lists": (_mismatch_lists, "Task 1: X has 7 rows but y has 6"),
    "mismatch list count": (_mismatch_list_count, "list of 3 per-task targets"),
    "mismatch shared": (_mismatch_shared, "X has 8 rows but y has 7"),
    "features between tasks": (_mismatch_features_between_tasks, "Task 2 has 3 features"),
    "empty task lists": (_empty_task_lists, "Task 1 has no rows"),
    "empty task known": (_empty_task_known_tasks, "Task 'zz' has no rows"),
    "one class lists": (_one_class("lists"), "Task 1 has one class only"),
    "one class long": (_one_class("long"), "Task 'b' has one class only"),
    "one class shared": (_one_class("shared"), "Task 1 has one class only"),
    "features long": (_wrong_features_long, "X has 3 features.*expecting 4"),
    "features lists": (_wrong_features_lists, "X has 3 features.*fitted with 4"),
    "features shared": (_wrong_features_shared, "X has 2 features.*expecting 4"),
    "task count lists": (_wrong_task_count_lists, "list of 2 tasks.*fitted on 3"),
    "unknown task": (_unknown_task, r"Unknown task id 'q'.*\['a', 'b', 'c'\]"),
    "unknown task column": (_unknown_task_column, r"Unknown task id 9"),
    "missing task ids": (_missing_task_ids, "pass the task id of each row"),
}


@pytest.mark.parametrize("case", sorted(INPUT_CASES))
def test_bad_input_is_rejected_with_a_clear_message(case):
    func, match = INPUT_CASES[case]
    with pytest.raises(ValueError, match=match):
        func()


@pytest.mark.parametrize("bad, match", [
    (-1.0, r"'alpha' parameter .* must be a float in the range \[0.0, inf\)"),
    (-1e-300, r"'alpha' parameter .* in the range \[0.0, inf\)"),
    (np.nan, r"'alpha' parameter .* Got nan"),
    (np.inf, r"'alpha' parameter .* Got inf"),
    (-np.inf, r"'alpha' parameter .* Got -inf"),
    ("big", r"'alpha' parameter .* Got 'big'"),
    (None, r"'alpha' parameter .* Got None"),
])
def test_bad_alpha_is_rejected(bad, match, shared_regression):
    X, Y = shared_regression
    for model in (TraceNormRegressor, L21Regressor, IndependentRidgeRegressor):
        with pytest.raises(ValueError, match=match):
            model(alpha=bad).fit(X, Y)


def test_check_scalar_param():
    assert check_scalar_param(2, "tau") == 2.0
    assert check_scalar_param(0, "tau") == 0.0
    with pytest.raises(ValueError, match="tau must be > 0"):
        check_scalar_param(0, "tau", allow_zero=False)
    with pytest.raises(ValueError, match="tau must be <= 1"):
        check_scalar_param(1.5, "tau", upper=1)


def test_split_task_column_dense_and_sparse():
    X = np.array([[1.0, 0.0, 2.0], [3.0, 1.0, 0.0]])
    X0 = X.copy()
    feats, task = split_task_column(X, 1)
    np.testing.assert_array_equal(feats, X[:, [0, 2]])
    np.testing.assert_array_equal(task, [0.0, 1.0])
    np.testing.assert_array_equal(X, X0)
    feats_s, task_s = split_task_column(sp.csr_matrix(X), -2)
    np.testing.assert_array_equal(feats_s.toarray(), X[:, [0, 2]])
    np.testing.assert_array_equal(task_s, [0.0, 1.0])
    for col in (3, -4):
        with pytest.raises(ValueError, match="out of range"):
            split_task_column(X, col)
        with pytest.raises(ValueError, match="out of range"):
            split_task_column(sp.csr_matrix(X), col)


# ----------------------------------------------------------------------------- no mutation


def _snapshot(obj):
    if sp.issparse(obj):
        return ("csr", obj.data.copy(), obj.indices.copy(), obj.indptr.copy(), obj.shape,
                obj.dtype)
    if isinstance(obj, list):
        return [_snapshot(o) for o in obj]
    return copy.deepcopy(np.asarray(obj))


def _assert_same(before, after):
    if isinstance(before, tuple):
        assert sp.issparse(after) and after.shape == before[4] and after.dtype == before[5]
        for a, b in zip(before[1:4], (after.data, after.indices, after.indptr), strict=True):
            np.testing.assert_array_equal(a, b)
    elif isinstance(before, list):
        assert len(before) == len(after)
        for b, a in zip(before, after, strict=True):
            _assert_same(b, a)
    else:
        assert before.dtype == np.asarray(after).dtype
        np.testing.assert_array_equal(before, after)


def _unsorted_csr(X):
    """A CSR matrix with unsorted column indices (tempting to sort in place)."""
    S = sp.csr_matrix(X)
    for i in range(S.shape[0]):
        a, b = S.indptr[i], S.indptr[i + 1]
        S.indices[a:b] = S.indices[a:b][::-1].copy()
        S.data[a:b] = S.data[a:b][::-1].copy()
    S.has_sorted_indices = False
    return S


def _inputs(kind):
    rng = np.random.default_rng(6)
    X = rng.standard_normal((24, 4))
    X[np.abs(X) < 0.5] = 0.0
    task = np.repeat([3, 1, 2], 8)
    y = X @ rng.standard_normal(4) + task
    Y = np.column_stack([y, -y + 1.0, 2 * y])
    return {
        "dense-shared": ((X, Y), {}),
        "csr-shared": ((_unsorted_csr(X), Y), {}),
        "int-shared": (((X * 10).astype(np.int64), Y), {}),
        "lists": (([X[:8], X[8:16], X[16:]], [y[:8], y[8:16], y[16:]]), {}),
        "csr-lists": (([_unsorted_csr(X[:8]), sp.csr_matrix(X[8:])], [y[:8], y[8:]]), {}),
        "long-task": ((X, y), {"task": task}),
        "long-csr": ((_unsorted_csr(X), y), {"task": task}),
        "long-column": ((np.column_stack([X, task]), y), {}),
    }[kind]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("kind", ["dense-shared", "csr-shared", "int-shared", "lists",
                                  "csr-lists", "long-task", "long-csr", "long-column"])
@pytest.mark.parametrize("model", [TraceNormRegressor, IndependentRidgeRegressor,
                                   TraceNormClassifier])
def test_inputs_are_never_modified(kind, model):
    """Copy the inputs, fit, predict and score, then compare every array exactly."""
    (X, y), kw = _inputs(kind)
    if model is TraceNormClassifier:  # alternating labels: both classes in every task
        y = ([np.arange(len(v)) % 2 for v in y] if isinstance(y, list)
             else (np.arange(y.size).reshape(y.shape) // y[0].size) % 2)
    est = model(max_iter=200, task_column=-1 if kind == "long-column" else None)
    before = [_snapshot(X), _snapshot(y)] + [_snapshot(v) for v in kw.values()]
    est.fit(X, y, **kw)
    est.predict(X, **kw)
    est.score(X, y, **kw)
    after = [X, y] + list(kw.values())
    for b, a in zip(before, after, strict=True):
        _assert_same(b, a)


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("intercept", [False, True])
def test_spectral_norms_of_large_dense_designs_by_lanczos(shared, intercept, monkeypatch):
    """From ``SPECTRAL_LANCZOS_ENTRIES`` entries on, the spectral norms of dense designs come
    from Lanczos (``svds``), implicit centring and the column of ones included, equal to the
    full SVD's to 1e-10; a shared design computes one norm for all its tasks."""
    import scipy.sparse.linalg as spla

    import multitask.data.statistics as statistics  # the module whose code reads it

    monkeypatch.setattr(statistics, "SPECTRAL_LANCZOS_ENTRIES", 2000)
    rng = np.random.default_rng(3)
    n, d, m = 300, 12, 4
    if shared:
        X = rng.standard_normal((n, d)) * np.linspace(0.5, 3.0, d) + 5.0
        data, _ = as_multitask_data(X, rng.standard_normal((n, m)))
        designs = [X] * m
    else:
        Xs = [rng.standard_normal((n, d)) + t for t in range(m)]
        data, _ = as_multitask_data(Xs, [rng.standard_normal(n) for _ in range(m)])
        designs = Xs
    calls = []
    svds = spla.svds
    monkeypatch.setattr(spla, "svds", lambda *a, **k: (calls.append(1), svds(*a, **k))[1])
    for view in (data, data.centred_implicitly()[0] if not shared else data.centered()[0]):
        calls.clear()
        got = view.task_spectral_norms_sq(intercept=intercept)
        centred = view is not data
        expected = []
        for X in designs:
            Xt = X - X.mean(axis=0) if centred else X
            if intercept:
                Xt = np.hstack([Xt, np.ones((n, 1))])
            expected.append(np.linalg.norm(Xt, 2) ** 2)
        np.testing.assert_allclose(got, expected, rtol=1e-10)
        assert len(calls) == (1 if shared else m)
