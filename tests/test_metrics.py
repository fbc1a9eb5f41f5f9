"""Metrics against direct numpy / scikit-learn computations, in the three layouts.

Layouts: 2-D arrays ``(n, m)`` (shared design), 1-D arrays with ``task`` ids (long format,
rows shuffled), lists of per-task arrays.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import f1_score, mean_squared_error, roc_auc_score

from multitask.metrics import (
    amse,
    error_rate,
    macro_f1,
    mean_task_auc,
    micro_f1,
    mse,
    nmse,
    per_task,
    rmse,
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
    task = np.repeat(np.array(["t0", "t1", "t2", "t3"][:m]), n)
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
