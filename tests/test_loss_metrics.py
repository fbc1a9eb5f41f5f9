"""Metrics of the losses beyond least squares and of more than two classes: scikit-learn's
function per task, the mean over tasks and the pooled figure, in every layout, with weights
and missing targets."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn import metrics as skm

from multitask import metrics as M

RNG = np.random.default_rng(0)
N, T = 14, 3


def _regression(kind: str):
    """``(Y, P)`` of shape ``(N, T)``: targets in the domain of ``kind`` and positive
    predictions."""
    rng = np.random.default_rng(1)
    P = rng.uniform(0.5, 3.0, (N, T))
    if kind == "count":
        Y = rng.poisson(2.0, (N, T)).astype(float)
    elif kind == "positive":
        Y = rng.gamma(2.0, 1.0, (N, T))
    else:
        Y = rng.standard_normal((N, T)) * 2 + 1
    return Y, P


# (our function, its scikit-learn twin, keyword of ours, keyword of scikit-learn's, targets)
MEANS = [
    (M.mean_poisson_deviance, skm.mean_poisson_deviance, {}, {}, "count"),
    (M.mean_gamma_deviance, skm.mean_gamma_deviance, {}, {}, "positive"),
    (M.mean_tweedie_deviance, skm.mean_tweedie_deviance, {"power": 1.5}, {"power": 1.5},
     "count"),
    (M.mean_pinball_loss, skm.mean_pinball_loss, {"quantile": 0.8}, {"alpha": 0.8}, "real"),
    (M.mean_absolute_error, skm.mean_absolute_error, {}, {}, "real"),
    (M.d2_tweedie_score, skm.d2_tweedie_score, {"power": 1.0}, {"power": 1.0}, "count"),
    (M.d2_pinball_score, skm.d2_pinball_score, {"quantile": 0.3}, {"alpha": 0.3}, "real"),
    (M.d2_absolute_error_score, skm.d2_absolute_error_score, {}, {}, "real"),
]


def _ids(case):
    return case[0].__name__


@pytest.mark.parametrize("case", MEANS, ids=_ids)
def test_per_task_macro_and_pooled_are_scikit_learns(case):
    ours, theirs, kw, skw, kind = case
    Y, P = _regression(kind)
    per = np.array([theirs(Y[:, t], P[:, t], **skw) for t in range(T)])
    np.testing.assert_allclose(ours(Y, P, average=None, **kw), per, rtol=1e-12)
    assert ours(Y, P, **kw) == pytest.approx(per.mean(), rel=1e-12)
    pooled = theirs(Y.ravel(), P.ravel(), **skw)
    assert ours(Y, P, average="pooled", **kw) == pytest.approx(pooled, rel=1e-12)
    assert ours(Y, P, average="micro", **kw) == ours(Y, P, average="pooled", **kw)
    # the same figures in the other layouts: per-task lists and long format
    lists = ([Y[:, t] for t in range(T)], [P[:, t] for t in range(T)])
    assert ours(*lists, **kw) == pytest.approx(per.mean(), rel=1e-12)
    task = np.repeat(np.arange(T), N)
    assert ours(Y.T.ravel(), P.T.ravel(), task, **kw) == pytest.approx(per.mean(), rel=1e-12)


@pytest.mark.parametrize("case", MEANS, ids=_ids)
def test_weights_and_missing_targets(case):
    ours, theirs, kw, skw, kind = case
    Y, P = _regression(kind)
    rng = np.random.default_rng(2)
    w = rng.integers(1, 4, (N, T)).astype(float)
    w[:3, 0] = 0.0  # missing targets: weight zero, any value
    Ym = Y.copy()
    Ym[:3, 0] = np.nan
    seen = w > 0
    per = np.array([theirs(Y[seen[:, t], t], P[seen[:, t], t], sample_weight=w[seen[:, t], t],
                           **skw) for t in range(T)])
    before = Ym.copy()
    assert ours(Ym, P, sample_weight=w, **kw) == pytest.approx(per.mean(), rel=1e-12)
    np.testing.assert_array_equal(Ym, before)  # inputs unchanged
    # integer weights are repeated rows
    rep = [np.repeat(Y[:, t], w[:, t].astype(int)) for t in range(T)]
    rep_p = [np.repeat(P[:, t], w[:, t].astype(int)) for t in range(T)]
    assert ours(rep, rep_p, average="pooled", **kw) == pytest.approx(
        ours(Ym, P, average="pooled", sample_weight=w, **kw), rel=1e-10)
    # a common factor changes nothing, at any scale
    for c in (2.0 ** -1000, 2.0 ** 1000):
        assert ours(Ym, P, sample_weight=w * c, **kw) == pytest.approx(
            ours(Ym, P, sample_weight=w, **kw), rel=1e-12)


def test_deviance_domains_are_refused_naming_the_task():
    Y, P = _regression("count")
    Y[4, 1] = -1.0
    with pytest.raises(ValueError, match=r"Task 1: .*power 1 needs non-negative targets"):
        M.mean_poisson_deviance(Y, P)
    Y, P = _regression("count")
    with pytest.raises(ValueError, match=r"Task 0: .*power 2 needs strictly positive targets"):
        M.mean_gamma_deviance(Y, P)  # counts hold zeros
    P[2, 2] = 0.0
    with pytest.raises(ValueError, match=r"Task 2: .*strictly positive predictions"):
        M.mean_tweedie_deviance(Y, P, power=1.5)
    with pytest.raises(ValueError, match="power must be"):
        M.mean_tweedie_deviance(Y, P, power=0.5)
    with pytest.raises(ValueError, match="quantile must be in"):
        M.mean_pinball_loss(Y, P, quantile=1.5)
    with pytest.raises(ValueError, match="average must be one of"):
        M.mean_absolute_error(Y, P, average="task")
    P[2, 2] = np.nan
    with pytest.raises(ValueError, match="Task 2: y_pred holds NaN"):
        M.mean_absolute_error(Y, P)


@pytest.mark.parametrize("fn", [M.d2_tweedie_score, M.d2_pinball_score,
                                M.d2_absolute_error_score])
def test_undefined_d2_is_refused_or_skipped(fn):
    Y, P = _regression("count")
    Y[:, 1] = 2.0  # constant targets: the null model's deviance is 0
    with pytest.raises(ValueError, match="Task 1 has constant targets"):
        fn(Y, P)
    with pytest.warns(UserWarning, match="1 of 3 tasks left out"):
        value = fn(Y, P, skip_undefined=True)
    per = fn(Y, P, average=None)
    assert np.isnan(per[1]) and value == pytest.approx(np.nanmean(per))
    with pytest.raises(ValueError, match="pooled targets have constant targets"):
        fn(np.full((4, 2), 2.0), np.ones((4, 2)), average="pooled")


# ----------------------------------------------------------------------------- classes
def _classes(K=3):
    rng = np.random.default_rng(3)
    labels = np.array(["a", "b", "c", "d"][:K])
    Y = labels[rng.integers(0, K, (N, T))]
    Y[:, 2] = np.where(Y[:, 2] == "c", "a", Y[:, 2])  # task 2 lacks a class
    P = rng.dirichlet(np.ones(K), (N, T))
    return labels, Y, P


def test_log_loss_per_task_macro_pooled_and_layouts():
    labels, Y, P = _classes()
    per = np.array([skm.log_loss(Y[:, t], P[:, t], labels=labels) for t in range(T)])
    np.testing.assert_allclose(M.log_loss(Y, P, average=None), per, rtol=1e-12)
    assert M.log_loss(Y, P) == pytest.approx(per.mean(), rel=1e-12)
    pooled = skm.log_loss(Y.ravel(), P.reshape(-1, 3), labels=labels)
    assert M.log_loss(Y, P, average="pooled") == pytest.approx(pooled, rel=1e-12)
    lists = [Y[:, t] for t in range(T)], [P[:, t] for t in range(T)]
    assert M.log_loss(*lists, labels=labels) == pytest.approx(per.mean(), rel=1e-12)
    task = np.repeat(np.arange(T), N)
    long = M.log_loss(Y.T.ravel(), P.transpose(1, 0, 2).reshape(-1, 3), task)
    assert long == pytest.approx(per.mean(), rel=1e-12)


def test_log_loss_two_classes_from_the_positive_probability():
    rng = np.random.default_rng(4)
    Y = rng.integers(0, 2, (N, T))
    p = rng.uniform(0.05, 0.95, (N, T))
    per = [skm.log_loss(Y[:, t], p[:, t]) for t in range(T)]
    assert M.log_loss(Y, p) == pytest.approx(np.mean(per), rel=1e-12)


def test_log_loss_weights_missing_labels_and_checks():
    labels, Y, P = _classes()
    Ym = Y.astype(object)
    Ym[:2, 1] = None
    w = np.ones((N, T))
    w[:2, 1] = 0.0
    keep = w[:, 1] > 0
    per1 = skm.log_loss(Y[keep, 1], P[keep, 1], labels=labels)
    assert M.log_loss(Ym, P, labels=labels, sample_weight=w, average=None)[1] == pytest.approx(
        per1, rel=1e-12)
    with pytest.raises(ValueError, match="Task 0: y_proba has 3 columns but there are 4"):
        M.log_loss(Y, P, labels=["a", "b", "c", "d"])
    with pytest.raises(ValueError, match=r"Task 0: the label '\w' is not one of"):
        M.log_loss(Y, P, labels=["x", "y", "z"])
    bad = P.copy()
    bad[0, 0, 0] = 1.5
    with pytest.raises(ValueError, match="outside"):
        M.log_loss(Y, bad)


def test_accuracy_any_number_of_classes():
    labels, Y, P = _classes(4)
    pred = labels[P.argmax(-1)]
    per = np.array([skm.accuracy_score(Y[:, t], pred[:, t]) for t in range(T)])
    np.testing.assert_allclose(M.accuracy(Y, pred, average=None), per)
    assert M.accuracy(Y, pred) == pytest.approx(per.mean())
    assert M.accuracy(Y, pred, average="pooled") == pytest.approx(
        1.0 - M.error_rate(Y, pred, average="micro"))
    w = np.ones((N, T))
    w[:5, 0] = 0.0
    assert M.accuracy(Y, pred, sample_weight=w, average=None)[0] == pytest.approx(
        skm.accuracy_score(Y[5:, 0], pred[5:, 0]))


def test_a_task_without_scored_pairs_is_left_out():
    Y, P = _regression("count")
    w = np.ones((N, T))
    w[:, 1] = 0.0
    per = M.mean_poisson_deviance(Y, P, sample_weight=w, average=None)
    assert np.isnan(per[1]) and np.all(np.isfinite(per[[0, 2]]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert M.mean_poisson_deviance(Y, P, sample_weight=w) == pytest.approx(
            np.nanmean(per))
