"""Metrics against direct numpy / scikit-learn computations, in the three layouts.

Layouts: 2-D arrays ``(n, m)`` (shared design), 1-D arrays with ``task`` ids (long format,
rows shuffled), lists of per-task arrays.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import pearsonr
from sklearn.metrics import (
    confusion_matrix,
    f1_score,
    mean_squared_error,
    precision_score,
    recall_score,
    roc_auc_score,
)

from multitask.metrics import (
    amse,
    design_mse,
    error_rate,
    f1,
    macro_f1,
    mean_task_auc,
    micro_f1,
    mse,
    multilabel_scores,
    nmse,
    numerical_rank,
    per_task,
    rmse,
    roc_auc,
    similarity_correlation,
    subspace_distance,
    support_mask,
    support_recovery,
    threshold_scores,
    tune_thresholds,
    weight_error,
)


def _regression(n=20, m=3, seed=0):
    rng = np.random.default_rng(seed)
    Y = rng.standard_normal((n, m)) * [1.0, 3.0, 0.5][:m] + [0.0, 5.0, -2.0][:m]
    F = Y + rng.standard_normal((n, m)) * 0.7
    return Y, F


def _classification(n=30, m=3, seed=1):
    rng = np.random.default_rng(seed)
    Y = (rng.standard_normal((n, m)) > 0).astype(int)
    S = Y + rng.standard_normal((n, m))  # scores
    P = (rng.standard_normal((n, m)) + Y > 0.5).astype(int)  # predictions
    Y[:2] = [[0] * m, [1] * m]
    return Y, S, P


def _layouts(*arrays, seed=2):
    """The same per-task values in the three layouts: 2-D, long (shuffled, labels), lists."""
    n, m = arrays[0].shape
    task = np.repeat(np.array([f"t{t:02d}" for t in range(m)]), n)  # sorted = column order
    perm = np.random.default_rng(seed).permutation(n * m)
    longs = [a.T.ravel()[perm] for a in arrays]
    lists = [[a[:, t] for t in range(m)] for a in arrays]
    return {
        "2d": (arrays, {}),
        "long": (longs, {"task": task[perm]}),
        "lists": (lists, {}),
    }


# ----------------------------------------------------------------------------- regression


def _direct_regression(Y, F):
    sse = np.sum((Y - F) ** 2, axis=0)
    n, m = Y.shape
    return {
        "mse": sse.sum() / (n * m),
        "rmse": np.sqrt(sse.sum() / (n * m)),
        "nmse_pooled": sse.sum() / (n * m) / np.var(Y),
        "nmse_task": np.mean([mean_squared_error(Y[:, t], F[:, t]) / np.var(Y[:, t])
                              for t in range(m)]),
    }


@pytest.mark.parametrize("layout", ["2d", "long", "lists"])
def test_regression_metrics_match_direct_computation(layout):
    Y, F = _regression()
    ref = _direct_regression(Y, F)
    (y, f), kw = _layouts(Y, F)[layout]
    assert mse(y, f, **kw) == pytest.approx(ref["mse"], rel=1e-12)
    assert rmse(y, f, **kw) == pytest.approx(ref["rmse"], rel=1e-12)
    assert nmse(y, f, **kw) == pytest.approx(ref["nmse_pooled"], rel=1e-12)
    assert nmse(y, f, **kw, average="pooled") == pytest.approx(ref["nmse_pooled"], rel=1e-12)
    assert nmse(y, f, **kw, average="task") == pytest.approx(ref["nmse_task"], rel=1e-12)
    assert amse(y, f, **kw) == pytest.approx(ref["nmse_task"], rel=1e-12)


def test_unequal_task_sizes_weight_rows_in_the_pooled_variant():
    """Pooled nMSE weights every row equally; the task variant weights every task equally."""
    rng = np.random.default_rng(3)
    ys = [rng.standard_normal(n) * s for n, s in ((5, 1.0), (40, 2.0), (12, 0.3))]
    fs = [y + rng.standard_normal(len(y)) * 0.5 for y in ys]
    yall, fall = np.concatenate(ys), np.concatenate(fs)
    assert nmse(ys, fs) == pytest.approx(np.mean((yall - fall) ** 2) / np.var(yall), rel=1e-12)
    assert nmse(ys, fs, average="task") == pytest.approx(
        np.mean([np.mean((y - f) ** 2) / np.var(y) for y, f in zip(ys, fs, strict=True)]))
    assert nmse(ys, fs) != pytest.approx(nmse(ys, fs, average="task"), rel=1e-3)


def test_nmse_variants_coincide_when_tasks_share_their_targets():
    """Same targets in every task (equal sizes): pooled variance = task variance, same nMSE."""
    rng = np.random.default_rng(4)
    y = rng.standard_normal(25)
    Y = np.column_stack([y, y, y])
    F = Y + rng.standard_normal(Y.shape)
    assert nmse(Y, F) == pytest.approx(nmse(Y, F, average="task"), rel=1e-12)


def test_nmse_reference_points_and_scale_invariance():
    Y, F = _regression(seed=5)
    assert nmse(Y, Y) == 0.0 and nmse(Y, Y, average="task") == 0.0
    assert nmse(Y, np.full_like(Y, Y.mean())) == pytest.approx(1.0)
    assert nmse(Y, np.broadcast_to(Y.mean(axis=0), Y.shape), average="task") == pytest.approx(1.0)
    assert nmse(3.0 * Y + 1, 3.0 * F + 1) == pytest.approx(nmse(Y, F), rel=1e-12)


def test_regression_metric_errors():
    Y, F = _regression()
    with pytest.raises(ValueError, match="constant"):
        nmse(np.ones((4, 2)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="Task 1 has constant test targets"):
        nmse([np.arange(3.0), np.ones(3)], [np.zeros(3), np.zeros(3)], average="task")
    with pytest.raises(ValueError, match="average"):
        nmse(Y, F, average="macro")
    with pytest.raises(ValueError, match="shape"):
        mse(Y, F[:-1])
    with pytest.raises(ValueError, match="Task 1: y_true has 3 entries but y_pred has 2"):
        mse([np.zeros(2), np.zeros(3)], [np.zeros(2), np.zeros(2)])
    with pytest.raises(ValueError, match="list of the same length"):
        mse([np.zeros(2)], np.zeros(2))
    with pytest.raises(ValueError, match="Task 0 has no rows"):
        mse([np.zeros(0)], [np.zeros(0)])
    with pytest.raises(ValueError, match="task has 3 entries"):
        mse(np.zeros(4), np.zeros(4), task=np.zeros(3))


# ----------------------------------------------------------------------------- classification


@pytest.mark.parametrize("layout", ["2d", "long", "lists"])
def test_classification_metrics_match_sklearn(layout):
    Y, S, P = _classification()
    m = Y.shape[1]
    ref_auc = np.mean([roc_auc_score(Y[:, t], S[:, t]) for t in range(m)])
    ref_err = np.mean(Y != P)
    ref_macro = np.mean([f1_score(Y[:, t], P[:, t]) for t in range(m)])
    ref_micro = f1_score(Y.ravel(), P.ravel())
    (y, s, p), kw = _layouts(Y, S, P)[layout]
    assert mean_task_auc(y, s, **kw) == pytest.approx(ref_auc, rel=1e-12)
    assert error_rate(y, p, **kw) == pytest.approx(ref_err, rel=1e-12)
    assert macro_f1(y, p, **kw) == pytest.approx(ref_macro, rel=1e-12)
    assert micro_f1(y, p, **kw) == pytest.approx(ref_micro, rel=1e-12)


def test_f1_with_another_positive_label_and_no_positives():
    y = [np.array(["a", "b", "b"]), np.array(["b", "a", "a"])]
    p = [np.array(["a", "a", "b"]), np.array(["b", "b", "a"])]
    ref_macro = np.mean([f1_score(a, b, pos_label="b") for a, b in zip(y, p, strict=True)])
    assert macro_f1(y, p, pos_label="b") == pytest.approx(ref_macro)
    assert micro_f1(y, p, pos_label="b") == pytest.approx(
        f1_score(np.concatenate(y), np.concatenate(p), pos_label="b"))
    assert micro_f1([np.zeros(3)], [np.zeros(3)]) == 0.0


def test_mean_task_auc_skips_single_class_tasks_with_a_warning():
    Y, S, _ = _classification()
    Y[:, 1] = 1
    with pytest.warns(UserWarning, match=r"task\(s\) \[1\]"):
        got = mean_task_auc(Y, S)
    assert got == pytest.approx(np.mean([roc_auc_score(Y[:, t], S[:, t]) for t in (0, 2)]))
    with pytest.raises(ValueError, match="No task has both classes"), \
            pytest.warns(UserWarning):
        mean_task_auc(np.ones((5, 2)), np.zeros((5, 2)))


def test_per_task_splits_by_sorted_task_label():
    pairs = per_task(np.array([1.0, 2, 3, 4]), np.array([5.0, 6, 7, 8]),
                     task=np.array(["b", "a", "b", "a"]))
    np.testing.assert_array_equal(pairs[0][0], [2, 4])
    np.testing.assert_array_equal(pairs[1][1], [5, 7])
    assert len(per_task(np.zeros(3), np.zeros(3))) == 1


# ----------------------------------------------------------------------------- ROC AUC


def _multilabel(n=40, m=5, seed=6):
    """Labels (n, m) with some rows all-negative or all-positive, noisy scores with ties."""
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, m)) < 0.4).astype(int)
    Y[0], Y[1] = 0, 1
    S = np.round(Y + rng.standard_normal((n, m)), 1)  # rounding makes ties
    return Y, S


@pytest.mark.parametrize("layout", ["2d", "long", "lists"])
def test_roc_auc_macro_micro_per_task_match_sklearn(layout):
    Y, S = _multilabel()
    per = np.array([roc_auc_score(Y[:, t], S[:, t]) for t in range(Y.shape[1])])
    (y, s), kw = _layouts(Y, S)[layout]
    np.testing.assert_allclose(roc_auc(y, s, **kw, average=None), per, rtol=1e-12)
    assert roc_auc(y, s, **kw) == pytest.approx(per.mean(), rel=1e-12)
    assert mean_task_auc(y, s, **kw) == pytest.approx(per.mean(), rel=1e-12)
    assert roc_auc(y, s, **kw, average="micro") == pytest.approx(
        roc_auc_score(Y.ravel(), S.ravel()), rel=1e-12)


def test_roc_auc_samples_is_the_row_mean_over_rows_with_both_classes():
    Y, S = _multilabel()
    both = [i for i in range(len(Y)) if 0 < Y[i].sum() < Y.shape[1]]
    assert len(both) < len(Y)  # rows 0 and 1 hold one class
    ref = np.mean([roc_auc_score(Y[i], S[i]) for i in both])
    with pytest.warns(UserWarning, match=rf"{len(Y) - len(both)} of {len(Y)} rows hold one"):
        got = roc_auc(Y, S, average="samples")
    assert got == pytest.approx(ref, rel=1e-12)
    # the three definitions differ on these data
    macro, micro = roc_auc(Y, S), roc_auc(Y, S, average="micro")
    assert len({round(got, 10), round(macro, 10), round(micro, 10)}) == 3


def test_roc_auc_labels_positive_class_and_errors():
    Y, S = _multilabel()
    pm = np.where(Y == 1, 1, -1)
    assert roc_auc(pm, S, average="micro") == pytest.approx(roc_auc(Y, S, average="micro"))
    names = np.where(Y == 1, "yes", "no")
    assert roc_auc(names, S, pos_label="yes") == pytest.approx(roc_auc(Y, S))
    with pytest.raises(ValueError, match="2-D arrays"):
        roc_auc([Y[:, 0]], [S[:, 0]], average="samples")
    (y, s), kw = _layouts(Y, S)["long"]
    with pytest.raises(ValueError, match="2-D arrays"):
        roc_auc(y, s, **kw, average="samples")
    with pytest.raises(ValueError, match="No row has both classes"):
        roc_auc(Y[:, :1], S[:, :1], average="samples")
    with pytest.raises(ValueError, match="one class only"):
        roc_auc(np.zeros((4, 2)), S[:4, :2], average="micro")
    with pytest.raises(ValueError, match="average must be one of"):
        roc_auc(Y, S, average="weighted")
    with pytest.raises(ValueError, match="NaN"):
        roc_auc(Y, np.full(Y.shape, np.nan))


def test_roc_auc_single_class_task_is_nan_per_task_and_skipped_in_macro():
    Y, S = _multilabel()
    Y[:, 2] = 0
    per = roc_auc(Y, S, average=None)
    assert np.isnan(per[2]) and np.all(np.isfinite(np.delete(per, 2)))
    with pytest.warns(UserWarning, match=r"task\(s\) \[2\]"):
        assert roc_auc(Y, S) == pytest.approx(np.nanmean(per))


# ----------------------------------------------------------------------------- F1 and thresholds


@pytest.mark.parametrize("layout", ["2d", "long", "lists"])
def test_f1_from_labels_and_from_scores_match_sklearn(layout):
    Y, S = _multilabel(seed=8)
    m = Y.shape[1]
    thr = np.linspace(-0.3, 0.9, m)
    for threshold, P in ((None, (S > 0.5).astype(int)), (0.0, (S > 0).astype(int)),
                         (thr, (S > thr[None, :]).astype(int))):
        ref_macro = np.mean([f1_score(Y[:, t], P[:, t]) for t in range(m)])
        ref_micro = f1_score(Y.ravel(), P.ravel())
        pred = P if threshold is None else S
        (y, p), kw = _layouts(Y, pred)[layout]
        got = f1(y, p, **kw, threshold=threshold)
        assert got == pytest.approx(ref_macro, rel=1e-12)
        assert f1(y, p, **kw, threshold=threshold, average="micro") == pytest.approx(
            ref_micro, rel=1e-12)
        np.testing.assert_allclose(
            f1(y, p, **kw, threshold=threshold, average=None),
            [f1_score(Y[:, t], P[:, t]) for t in range(m)], rtol=1e-12)
        if layout == "2d":
            assert f1(Y, pred, threshold=threshold, average="samples") == pytest.approx(
                f1_score(Y, P, average="samples", zero_division=0.0), rel=1e-12)


def test_example_based_f1_direct_formula_and_zero_division():
    Y = np.array([[1, 0, 1], [0, 0, 0], [1, 1, 0], [0, 0, 0]])
    P = np.array([[1, 1, 0], [0, 0, 0], [1, 1, 0], [1, 0, 0]])
    # rows: 2*1/(2+2), 0/0, 2*2/(2+2), 2*0/(0+1)
    assert f1(Y, P, average="samples") == pytest.approx((0.5 + 0.0 + 1.0 + 0.0) / 4)
    assert f1(Y, P, average="samples", zero_division=1.0) == pytest.approx(2.5 / 4)
    # macro: the task without positives and without predictions scores zero_division
    Yz, Pz = Y.copy(), P.copy()
    Yz[:, 2], Pz[:, 2] = 0, 0
    assert f1(Yz, Pz, average=None)[2] == 0.0
    assert f1(Yz, Pz, average=None, zero_division=1.0)[2] == 1.0
    # a task with one class (no positives) but positive predictions: F1 = 0, as scikit-learn
    Pz[0, 2] = 1
    assert f1(Yz, Pz, average=None, zero_division=1.0)[2] == 0.0 == f1_score(
        Yz[:, 2], Pz[:, 2], zero_division=1.0)
    # a task whose labels are all positive has an F1 like any other
    Yo = np.ones_like(Y)
    assert f1(Yo, P, average=None)[0] == pytest.approx(f1_score(Yo[:, 0], P[:, 0]))
    with pytest.raises(ValueError, match="at least 2 tasks"):
        f1(Y[:, :1], P[:, :1], average="samples")
    with pytest.raises(ValueError, match="2-D arrays"):
        f1([Y[:, 0]], [P[:, 0]], average="samples")
    with pytest.raises(ValueError, match="one number per task"):
        f1(Y, P, threshold=[0.0, 1.0])


def _best_f1_by_brute_force(y, s):
    """The largest F1 of ``s > c`` over every cut ``c`` (below, between and above the scores)."""
    u = np.unique(s)
    cuts = np.r_[u[0] - 1.0, (u[:-1] + u[1:]) / 2, u[-1] + 1.0]
    return max(f1_score(y, (s > c).astype(int), zero_division=0.0) for c in cuts)


@pytest.mark.parametrize("layout", ["2d", "long", "lists"])
def test_tune_thresholds_reach_the_best_f1(layout):
    Y, S = _multilabel(n=30, seed=9)
    Y[:, 3] = 0  # no positives: never predicted
    Y[:, 4] = 1  # all positive: predicted everywhere
    (y, s), kw = _layouts(Y, S)[layout]
    thr = tune_thresholds(y, s, **kw)
    assert thr.shape == (5,)
    assert thr[3] == np.inf and thr[4] < S[:, 4].min()
    for t in range(3):
        got = f1_score(Y[:, t], (S[:, t] > thr[t]).astype(int))
        assert got == pytest.approx(_best_f1_by_brute_force(Y[:, t], S[:, t]), rel=1e-12)
        # the threshold lies strictly between two scores: no score sits on it
        assert not np.any(S[:, t] == thr[t])
    # applied to other data through f1 and threshold_scores
    Y2, S2 = _multilabel(n=25, seed=10)
    (y2, s2), kw2 = _layouts(Y2, S2)[layout]
    P2 = (S2 > thr[None, :]).astype(int)
    assert f1(y2, s2, **kw2, threshold=thr) == pytest.approx(
        np.mean([f1_score(Y2[:, t], P2[:, t], zero_division=0.0) for t in range(5)]))


def test_multilabel_scores_are_the_six_definitions():
    """AUC macro / micro / example-based and F1 macro / micro / example-based, each equal to
    scikit-learn's on the same scores, at one threshold or per-label thresholds."""
    Y, S = _multilabel(n=60, m=5, seed=30)
    keep = (Y.sum(axis=1) > 0) & (Y.sum(axis=1) < Y.shape[1])  # rows with an example AUC
    with pytest.warns(UserWarning, match="Example-based AUC"):
        got = multilabel_scores(Y, S)
    assert set(got) == {f"{k}_{a}" for k in ("auc", "f1") for a in ("macro", "micro", "samples")}
    assert got["auc_macro"] == pytest.approx(roc_auc_score(Y, S, average="macro"), rel=1e-12)
    assert got["auc_micro"] == pytest.approx(roc_auc_score(Y, S, average="micro"), rel=1e-12)
    assert got["auc_samples"] == pytest.approx(
        roc_auc_score(Y[keep], S[keep], average="samples"), rel=1e-12)
    P = (S > 0).astype(int)
    for avg in ("macro", "micro", "samples"):
        assert got[f"f1_{avg}"] == pytest.approx(
            f1_score(Y, P, average=avg, zero_division=0.0), rel=1e-12)
    # per-label thresholds tuned on other rows, then applied here
    Y2, S2 = _multilabel(n=50, m=5, seed=31)
    thr = tune_thresholds(Y2, S2)
    with pytest.warns(UserWarning):
        tuned = multilabel_scores(Y, S, threshold=thr)
    P = (S > thr[None, :]).astype(int)
    for avg in ("macro", "micro", "samples"):
        assert tuned[f"f1_{avg}"] == pytest.approx(
            f1_score(Y, P, average=avg, zero_division=0.0), rel=1e-12)
    assert {k: tuned[k] for k in tuned if k.startswith("auc")} == {
        k: got[k] for k in got if k.startswith("auc")}  # the AUCs ignore the thresholds
    with pytest.raises(ValueError, match="2-D"):
        multilabel_scores(Y[:, 0], S[:, 0])
    with pytest.raises(ValueError, match="at least 2 labels"):
        multilabel_scores(Y[:, :1], S[:, :1])


def test_test_tuned_thresholds_give_the_largest_macro_f1():
    """Per-label thresholds tuned on the evaluation labels reach the largest Macro-F1 of any
    per-label thresholds (each label's F1 is maximized on its own): the bound the
    sparse + low-rank page reports."""
    Y, S = _multilabel(n=35, m=4, seed=32)
    best = f1(Y, S, threshold=tune_thresholds(Y, S), average="macro")
    brute = np.mean([_best_f1_by_brute_force(Y[:, t], S[:, t]) for t in range(4)])
    assert best == pytest.approx(brute, rel=1e-12)
    rng = np.random.default_rng(33)
    for _ in range(50):  # no other thresholds do better
        thr = rng.uniform(S.min() - 1, S.max() + 1, size=4)
        assert f1(Y, S, threshold=thr, average="macro") <= best + 1e-12


def test_threshold_scores_layouts_and_labels():
    _, S = _multilabel(n=10, m=3, seed=11)
    thr = np.array([0.0, 0.5, -0.5])
    ref = np.where(S > thr[None, :], 1, -1)
    np.testing.assert_array_equal(threshold_scores(S, thr, labels=(-1, 1)), ref)
    (s,), kw = _layouts(S)["long"]
    (r,), _ = _layouts(ref)["long"]
    np.testing.assert_array_equal(threshold_scores(s, thr, **kw, labels=(-1, 1)), r)
    lists = threshold_scores([S[:, t] for t in range(3)], thr)
    for t in range(3):
        np.testing.assert_array_equal(lists[t], (S[:, t] > thr[t]).astype(int))
    np.testing.assert_array_equal(threshold_scores(S[:, 0]), (S[:, 0] > 0).astype(int))
    with pytest.raises(ValueError, match="task has 3 entries"):
        threshold_scores(S[:, 0], 0.0, task=np.zeros(3))


@pytest.mark.parametrize("layout", ["2d", "long", "lists"])
def test_error_rate_averages_and_thresholds(layout):
    Y, S = _multilabel(seed=12)
    P = (S > 0.5).astype(int)
    (y, p, s), kw = _layouts(Y, P, S)[layout]
    assert error_rate(y, p, **kw) == pytest.approx(np.mean(Y != P), rel=1e-12)
    assert error_rate(y, p, **kw, average="macro") == pytest.approx(
        np.mean([np.mean(Y[:, t] != P[:, t]) for t in range(Y.shape[1])]), rel=1e-12)
    assert error_rate(y, s, **kw, threshold=0.5) == pytest.approx(np.mean(Y != P), rel=1e-12)
    with pytest.raises(ValueError, match="average must be one of"):
        error_rate(y, p, **kw, average="samples")


def test_error_rate_macro_weights_tasks_not_rows():
    y = [np.array([0, 1]), np.array([0] * 8)]
    p = [np.array([1, 1]), np.array([0] * 8)]
    assert error_rate(y, p) == pytest.approx(1 / 10)
    assert error_rate(y, p, average="macro") == pytest.approx((0.5 + 0.0) / 2)


# ----------------------------------------------------------------------------- weights


def _weights(d=7, m=4, seed=13):
    rng = np.random.default_rng(seed)
    W_true = rng.standard_normal((d, m)) * (rng.random((d, m)) < 0.5)
    W = W_true + 0.3 * rng.standard_normal((d, m)) * (rng.random((d, m)) < 0.4)
    return W_true, W


def test_design_mse_matches_pooled_mse_of_noiseless_predictions():
    W_true, W = _weights()
    rng = np.random.default_rng(14)
    Xs = [rng.standard_normal((n, 7)) for n in (5, 9, 3, 6)]
    ref = mean_squared_error(np.concatenate([X @ W_true[:, t] for t, X in enumerate(Xs)]),
                             np.concatenate([X @ W[:, t] for t, X in enumerate(Xs)]))
    assert design_mse(W_true, W, Xs) == pytest.approx(ref, rel=1e-12)
    X, task = np.vstack(Xs), np.repeat(["a", "b", "c", "d"], [5, 9, 3, 6])
    perm = rng.permutation(len(task))
    assert design_mse(W_true, W, X[perm], task=task[perm]) == pytest.approx(ref, rel=1e-12)
    shared = Xs[1]
    ref_shared = mean_squared_error(shared @ W_true, shared @ W)
    assert design_mse(W_true, W, shared) == pytest.approx(ref_shared, rel=1e-12)
    assert design_mse(W_true, W, sp.csr_matrix(shared)) == pytest.approx(ref_shared, rel=1e-12)
    assert design_mse(W_true, W_true, Xs) == 0.0
    with pytest.raises(ValueError, match="pass estimator.coef_.T"):
        design_mse(W_true, W.T, Xs)
    with pytest.raises(ValueError, match="X holds 3 tasks but W has 4"):
        design_mse(W_true, W, Xs[:3])
    with pytest.raises(ValueError, match="Task 0: X has 6 features"):
        design_mse(W_true, W, [X[:, :6] for X in Xs])


@pytest.mark.parametrize("level", ["entries", "features", "tasks"])
def test_support_recovery_matches_sklearn(level):
    W_true, W = _weights()
    true = support_mask(W_true, level=level)
    sel = support_mask(W, level=level)
    assert true.shape == {"entries": (7, 4), "features": (7,), "tasks": (4,)}[level]
    got = support_recovery(W_true, W, level=level)
    t, s = true.ravel(), sel.ravel()
    assert got["precision"] == pytest.approx(precision_score(t, s, zero_division=0.0))
    assert got["recall"] == pytest.approx(recall_score(t, s, zero_division=0.0))
    assert got["f1"] == pytest.approx(f1_score(t, s, zero_division=0.0))
    tn, fp, _, _ = confusion_matrix(t, s, labels=[False, True]).ravel()
    assert got["specificity"] == pytest.approx(tn / (tn + fp) if tn + fp else 0.0)
    assert got["n_selected"] == s.sum() and got["n_true"] == t.sum()


def test_support_mask_thresholds():
    W = np.array([[0.0, 0.0], [1e-3, 0.0], [3.0, 4.0], [0.0, -0.5]])
    np.testing.assert_array_equal(support_mask(W, level="features"), [0, 1, 1, 1])
    np.testing.assert_array_equal(support_mask(W, level="features", threshold=0.01), [0, 0, 1, 1])
    # relative: row norms 0, 1e-3, 5, 0.5 -> above 0.2 * 5 = 1
    np.testing.assert_array_equal(
        support_mask(W, level="features", threshold=0.2, relative=True), [0, 0, 1, 0])
    np.testing.assert_array_equal(support_mask(W, level="tasks", threshold=4.5), [False, False])
    assert not support_mask(np.zeros((3, 2)), level="tasks", threshold=0.1, relative=True).any()
    np.testing.assert_array_equal(support_mask(W), W != 0)
    with pytest.raises(ValueError, match="level must be one of"):
        support_mask(W, level="rows")
    with pytest.raises(ValueError, match="needs a 2-D W"):
        support_mask(np.ones(3), level="tasks")
    with pytest.raises(ValueError, match="threshold must be >= 0"):
        support_mask(W, threshold=-1.0)


def test_support_recovery_zero_division_and_blocks():
    W_true = np.zeros((4, 3))
    W_true[2:, 1:] = 1.0
    none = support_recovery(W_true, np.zeros((4, 3)), level="tasks")
    assert none["precision"] == 0.0 and none["recall"] == 0.0 and none["n_selected"] == 0
    assert support_recovery(W_true, np.zeros((4, 3)), zero_division=1.0)["precision"] == 1.0
    # a known zero block: the fraction recovered as zero is the specificity on the block
    W_hat = W_true.copy()
    W_hat[0, 0] = 0.1
    block = np.zeros((4, 3), dtype=bool)
    block[:2, :1] = True
    res = support_recovery(W_true[block], W_hat[block])
    assert res["specificity"] == pytest.approx(np.mean(W_hat[block] == 0))
    with pytest.raises(ValueError, match="shape"):
        support_recovery(W_true, W_hat[:3])


def test_weight_error_norms():
    W_true, W = _weights()
    D = W - W_true
    assert weight_error(W_true, W) == pytest.approx(np.linalg.norm(D))
    assert weight_error(W_true, W, norm="nuclear") == pytest.approx(
        np.linalg.svd(D, compute_uv=False).sum())
    assert weight_error(W_true, W, norm="spectral") == pytest.approx(np.linalg.norm(D, 2))
    assert weight_error(W_true, W, norm="l1") == pytest.approx(np.abs(D).sum())
    assert weight_error(W_true, W, relative=True) == pytest.approx(
        np.linalg.norm(D) / np.linalg.norm(W_true))
    with pytest.raises(ValueError, match="W_true is zero"):
        weight_error(np.zeros((2, 2)), np.ones((2, 2)), relative=True)
    with pytest.raises(ValueError, match="norm must be one of"):
        weight_error(W_true, W, norm="max")


def test_numerical_rank_and_subspace_distance():
    rng = np.random.default_rng(15)
    U = rng.standard_normal((9, 3))
    L = U @ rng.standard_normal((3, 6))
    assert numerical_rank(L) == np.linalg.matrix_rank(L) == 3
    L2 = L + 1e-9 * rng.standard_normal(L.shape)
    assert numerical_rank(L2) == 6 and numerical_rank(L2, rtol=1e-6) == 3
    assert numerical_rank(np.zeros((3, 4))) == 0 and numerical_rank(np.zeros((0, 2))) == 0
    # same column space, other basis and coefficients: distance 0
    same = U @ rng.standard_normal((3, 6))
    assert subspace_distance(L, same) == pytest.approx(0.0, abs=1e-7)
    # direct formula ||P_A - P_B||_2 for another matrix
    other = rng.standard_normal((9, 6))
    Ua = np.linalg.svd(L)[0][:, :3]
    Ub = np.linalg.svd(other)[0][:, :3]
    ref = np.linalg.norm(Ua @ Ua.T - Ub @ Ub.T, 2)
    assert subspace_distance(L, other) == pytest.approx(ref, rel=1e-8)
    e = np.eye(4)
    assert subspace_distance(e[:, :2], e[:, 2:], rank=2) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="rank must be an integer"):
        subspace_distance(L, other, rank=7)


def test_similarity_correlation():
    rng = np.random.default_rng(16)
    A = rng.standard_normal((5, 5))
    A = A + A.T
    B = A + rng.standard_normal((5, 5))
    mask = ~np.eye(5, dtype=bool)
    assert similarity_correlation(A, B) == pytest.approx(pearsonr(A[mask], B[mask])[0])
    # the diagonal does not count
    C = B.copy()
    np.fill_diagonal(C, 100.0)
    assert similarity_correlation(A, C) == pytest.approx(similarity_correlation(A, B))
    with pytest.warns(UserWarning, match="constant"):
        assert np.isnan(similarity_correlation(A, np.eye(5)))
    with pytest.raises(ValueError, match="square matrices"):
        similarity_correlation(A, B[:4, :4])


# ----------------------------------------------------------------------------- reproductions
# Verbatim copies of metrics that the paper reproductions computed by hand (the references
# live only here): the public functions give the same numbers.


def ref_scut_thresholds(Y01: np.ndarray, S: np.ndarray) -> np.ndarray:
    # verbatim: experiments/sparse_low_rank.py, scut_thresholds (docstring left out)
    n, m = S.shape
    out = np.empty(m)
    for t in range(m):
        y, s = Y01[:, t], S[:, t]
        n_pos = int(y.sum())
        if n_pos == 0:
            out[t] = np.inf
            continue
        order = np.argsort(-s, kind="stable")
        tp = np.cumsum(y[order])
        k = np.arange(1, n + 1)
        f1 = 2 * tp / (k + n_pos)
        # only cut between distinct scores
        valid = np.r_[s[order][:-1] > s[order][1:], True]
        f1 = np.where(valid, f1, -1.0)
        j = int(np.argmax(f1))
        out[t] = 0.5 * (s[order][j] + s[order][j + 1]) if j + 1 < n else s[order][j] - 1.0
    return out


def ref_selection_scores(W: np.ndarray, relevant: np.ndarray) -> dict:
    # verbatim: experiments/l1inf.py, selection_scores
    sel = np.flatnonzero(np.any(W != 0, axis=1))
    hit = np.intersect1d(sel, relevant).size
    return {"precision": hit / sel.size if sel.size else 0.0,
            "recall": hit / relevant.size if relevant.size else 1.0,
            "n_selected": float(sel.size)}


def ref_task_error(W: np.ndarray, Xs, ys, b=None) -> float:
    # verbatim: experiments/l1inf.py, task_error
    errs = []
    for t, (X, y) in enumerate(zip(Xs, ys, strict=True)):
        s = X @ W[:, t] + (0.0 if b is None else b[t])
        errs.append(np.mean((np.asarray(s).ravel() > 0).astype(int) != y))
    return float(np.mean(errs))


def ref_design_mse(Xs, W: np.ndarray, W_true: np.ndarray) -> float:
    # verbatim: experiments/capped_trace.py, design_mse
    m = W.shape[1]
    n = np.mean([len(X) for X in Xs])
    return float(sum(np.sum((X @ (W[:, t] - W_true[:, t])) ** 2)
                     for t, X in enumerate(Xs)) / (m * n))


def ref_offdiag_corr(A: np.ndarray, B: np.ndarray) -> float:
    # verbatim: experiments/mtmkl.py, offdiag_corr
    mask = ~np.eye(A.shape[0], dtype=bool)
    a, b = A[mask], B[mask]
    if np.std(a) == 0 or np.std(b) == 0:
        return 0.0
    return float(np.corrcoef(a, b)[0, 1])


def test_reproduction_metrics_unchanged():
    Y, S = _multilabel(n=50, m=6, seed=20)
    Y[:, 5] = 0
    np.testing.assert_array_equal(tune_thresholds(Y, S), ref_scut_thresholds(Y, S))

    W_true, W = _weights(d=12, m=5, seed=21)
    W[3] = 0.0
    relevant = np.flatnonzero(np.any(W_true != 0, axis=1))
    ref = ref_selection_scores(W, relevant)
    got = support_recovery(W_true, W, level="features")
    assert (got["precision"], got["recall"]) == (ref["precision"], ref["recall"])
    assert support_mask(W, level="features").sum() == ref["n_selected"]

    rng = np.random.default_rng(22)
    Xs = [rng.standard_normal((8, 12)) for _ in range(5)]
    ys = [(rng.random(8) < 0.5).astype(int) for _ in range(5)]
    b = rng.standard_normal(5)
    scores = [X @ W[:, t] + b[t] for t, X in enumerate(Xs)]
    assert error_rate(ys, scores, threshold=0.0, average="macro") == ref_task_error(W, Xs, ys, b)
    assert design_mse(W_true, W, Xs) == ref_design_mse(Xs, W, W_true)

    A = rng.standard_normal((6, 6))
    B = A + rng.standard_normal((6, 6))
    assert similarity_correlation(A, B) == ref_offdiag_corr(A, B)


def test_outlier_detection_and_sparse_pattern_scores():
    """The robust reproduction's outlier-task detection and the sparse + low-rank one's
    support F1, zero-block and rank figures, from the public functions."""
    rng = np.random.default_rng(23)
    E_true = np.zeros((10, 8))
    truth = {1, 4, 6}
    E_true[:, sorted(truth)] = rng.standard_normal((10, 3))
    E = E_true.copy()
    E[:, 4] = 0.0
    E[:, 2] = 0.05 * rng.standard_normal(10)  # small: under 0.1 of the largest column
    E[:, 7] = rng.standard_normal(10)  # a false alarm
    en = np.linalg.norm(E, axis=0)
    found = set(np.flatnonzero(en > 0.1 * en.max()).tolist())
    tp = len(found & truth)
    got = support_recovery(E_true, E, level="tasks", threshold=0.1, relative=True,
                           zero_division=1.0)
    assert got["precision"] == pytest.approx(tp / len(found))
    assert got["recall"] == pytest.approx(tp / len(truth))
    none = support_recovery(E_true, np.zeros_like(E), level="tasks", threshold=0.1,
                            relative=True, zero_division=1.0)
    assert none["precision"] == 1.0 and none["recall"] == 0.0

    P = rng.standard_normal((12, 6))
    P[:4, :3] = 0.0
    P_hat = P * (rng.random(P.shape) < 0.7)
    P_hat[0, 0] = 0.3
    found, true = P_hat != 0, P != 0
    ref_f1 = 2 * np.sum(found & true) / max(found.sum() + true.sum(), 1)
    assert support_recovery(P, P_hat)["f1"] == pytest.approx(ref_f1, rel=1e-12)
    block = np.zeros_like(P, dtype=bool)
    block[:4, :3] = True
    assert support_recovery(P[block], P_hat[block])["specificity"] == pytest.approx(
        np.mean(~found[block]))
    assert support_recovery(P[~block], P_hat[~block])["recall"] == pytest.approx(
        np.mean(found[~block]))
