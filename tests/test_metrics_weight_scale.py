"""Weighted metrics with weights that differ by a constant factor give the figure of no weights,
at every scale of the float range (weights are rescaled by a power of two before any sum)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from multitask.metrics import amse, error_rate, f1, mse, nmse, roc_auc

SCALES = [5e-324, 1e-310, 1e-300, 1e-150, 1.0, 1e150, 1e300, 1.7e308]


def _data():
    rng = np.random.default_rng(0)
    y = rng.normal(size=40)
    pred = y + rng.normal(size=40)
    task = np.repeat([0, 1], 20)
    return y, pred, task, (y > 0).astype(int)


def _figures(w):
    y, pred, task, lab = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow, underflow to NaN
        return np.array([
            nmse(y, pred, task, sample_weight=w),
            amse(y, pred, task, sample_weight=w),
            mse(y, pred, task, sample_weight=w),
            roc_auc(lab, pred, task, sample_weight=w),
            roc_auc(lab, pred, task, average="micro", sample_weight=w),
            *roc_auc(lab, pred, task, average=None, sample_weight=w),
            f1(lab, pred, task, threshold=0.0, sample_weight=w),
            f1(lab, pred, task, average="micro", threshold=0.0, sample_weight=w),
            error_rate(lab, (pred > 0).astype(int), task, sample_weight=w),
            error_rate(lab, (pred > 0).astype(int), task, average="macro", sample_weight=w),
        ])


@pytest.mark.parametrize("scale", SCALES)
def test_constant_weights_change_nothing_at_any_scale(scale):
    """nMSE with weights 5e-324 was 0.024 instead of 0.090; roc_auc raised ZeroDivisionError at
    1e-300 and "No task has both classes" at 1e300."""
    np.testing.assert_allclose(_figures(np.full(40, scale)), _figures(None), rtol=1e-12)


def test_a_common_factor_keeps_weighted_figures():
    w = np.random.default_rng(1).integers(1, 4, 40).astype(float)
    ref = _figures(w)
    for c in (2.0 ** -1070, 1e-300, 1e300):
        np.testing.assert_allclose(_figures(w * c), ref, rtol=1e-12)


def test_per_class_extremes_keep_the_auc():
    """An ROC AUC does not change when the positives' weights and the negatives' weights are
    multiplied by different factors: positives at 1e-300, negatives at 1e300 give the
    unweighted AUC."""
    y, pred, task, lab = _data()
    w = np.where(lab == 1, 1e-300, 1e300)
    for avg in ("macro", "micro"):
        assert roc_auc(lab, pred, task, average=avg, sample_weight=w) == pytest.approx(
            roc_auc(lab, pred, task, average=avg), rel=1e-12)


def test_per_task_extremes_keep_task_averaged_figures():
    """A task-averaged figure is a mean of per-task ratios: one task's weights at 1e-300 and
    the other's at 1e300 give the unweighted aMSE and macro AUC."""
    y, pred, task, lab = _data()
    w = np.where(task == 0, 1e-300, 1e300)
    assert amse(y, pred, task, sample_weight=w) == pytest.approx(amse(y, pred, task),
                                                                 rel=1e-12)
    assert roc_auc(lab, pred, task, sample_weight=w) == pytest.approx(
        roc_auc(lab, pred, task), rel=1e-12)
