"""``MultiTaskKernelClassifier`` checks its row weights as every other model does: numeric strings
and a task whose rows all weigh zero are refused, naming the problem."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from multitask import L21Classifier, MultiTaskKernelClassifier

MODELS = [MultiTaskKernelClassifier, L21Classifier]


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    task = np.repeat([0, 1, 2], 20)
    return X, (X[:, 0] + 0.3 * rng.normal(size=60) > 0).astype(int), task


@pytest.mark.parametrize("cls", MODELS)
def test_zero_weight_on_a_whole_task_is_refused(cls):
    X, y, task = _data()
    with pytest.raises(ValueError, match="zero on every row of task 1"):
        cls().fit(X, y, task, sample_weight=np.where(task == 1, 0.0, 1.0))


@pytest.mark.parametrize("cls", MODELS)
@pytest.mark.parametrize("weights", [np.array(["1.5"] * 60), np.array(["1"] * 60, dtype=object)],
                         ids=["text", "object"])
def test_numeric_strings_are_refused(cls, weights):
    X, y, task = _data()
    with pytest.raises(ValueError, match="only real numbers"):
        cls().fit(X, y, task, sample_weight=weights)


def test_bad_weights_are_named():
    X, y, task = _data()
    w = np.ones(60)
    w[7] = -1.0
    with pytest.raises(ValueError, match="row 7"):
        MultiTaskKernelClassifier().fit(X, y, task, sample_weight=w)
    with pytest.raises(ValueError, match="shape"):
        MultiTaskKernelClassifier().fit(X, y, task, sample_weight=np.ones(59))


def test_weights_of_one_row_out_of_order_follow_their_row():
    """Rows given out of task order: the weights follow their rows (a zero weight drops the
    row, as fitting without it does)."""
    X, y, task = _data()
    order = np.random.default_rng(3).permutation(60)
    w = np.ones(60)
    w[[2, 25, 44]] = 0.0
    keep = w > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        weighted = MultiTaskKernelClassifier(tol=1e-8).fit(X[order], y[order], task[order],
                                                           sample_weight=w[order])
        dropped = MultiTaskKernelClassifier(tol=1e-8).fit(X[keep], y[keep], task[keep])
    np.testing.assert_allclose(weighted.decision_function(X, task),
                               dropped.decision_function(X, task), atol=1e-4)
