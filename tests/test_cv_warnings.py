"""Model selection says what it did: one warning each for unconverged CV fits, single-class
fold parts, and a task order or graph the user did not give; per-task metrics skip undefined
tasks on request and say how many. Before, each of these passed silently (or, for the
metrics, raised with no way to skip)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from multitask import (
    FusedSparseGroupLassoRegressor,
    GraphRegularizedRegressor,
    L21Classifier,
    MultiTaskCV,
    TemporalGroupLassoRegressor,
    TraceNormRegressor,
)
from multitask.estimators.base import TaskStructureWarning
from multitask.metrics import amse, nmse, roc_auc


def _long(seed=0, labels=("c", "a", "b", "d"), sizes=(20, 20, 25, 25)):
    rng = np.random.default_rng(seed)
    task = np.repeat(np.array(labels), sizes)
    X = rng.standard_normal((task.size, 4))
    y = X @ rng.standard_normal(4) + rng.standard_normal(task.size)
    return X, y, task


def _record(fn):
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        out = fn()
    return out, got


def test_unconverged_cv_fits_give_one_warning_with_counts():
    X, y, task = _long()
    est = TraceNormRegressor(solver="fista", max_iter=2)
    cv, got = _record(lambda: MultiTaskCV(est, n_alphas=4, cv=2).fit(X, y, task))
    ours = [w for w in got if "cross-validation fits" in str(w.message)]
    assert len(ours) == 1 and issubclass(ours[0].category, ConvergenceWarning)
    msg = str(ours[0].message)
    n_bad = int(cv.cv_results_["n_not_converged"].sum())
    assert n_bad > 0 and msg.startswith(f"{n_bad} of ")
    assert "converged_" in msg and "max_iter=2" in msg
    _, quiet = _record(lambda: MultiTaskCV(TraceNormRegressor(), n_alphas=4, cv=2)
                       .fit(X, y, task))
    assert not [w for w in quiet if "cross-validation fits" in str(w.message)]


def test_a_fold_part_with_one_class_is_reported_once():
    X, y, task = _long()
    labels = (y > np.quantile(y, 0.85)).astype(int)
    for t in np.unique(task):  # both classes in every task, few positives
        labels[np.flatnonzero(task == t)[:2]] = [0, 1]
    _, got = _record(lambda: MultiTaskCV(L21Classifier(), n_alphas=3, cv=5)
                     .fit(X, labels, task))
    ours = [w for w in got if "one class only" in str(w.message)]
    assert len(ours) == 1
    assert "test parts" in str(ours[0].message) and "5 folds x 4 tasks" in str(ours[0].message)


def test_temporal_order_by_text_labels_is_said_once():
    X, y, task = _long()
    _, got = _record(lambda: MultiTaskCV(FusedSparseGroupLassoRegressor(), n_alphas=2, cv=2)
                     .fit(X, y, task))
    ours = [w for w in got if issubclass(w.category, TaskStructureWarning)]
    assert len(ours) == 1 and "'a', 'b', 'c', 'd'" in str(ours[0].message)
    # numbers sort in time, lists give their order: nothing to say
    codes = np.searchsorted(np.unique(task), task) * 6  # months 0, 6, 12, 18
    for args in ((X, y, codes), ([X[task == t] for t in "abcd"], [y[task == t] for t in "abcd"])):
        _, got = _record(lambda args=args: TemporalGroupLassoRegressor().fit(*args))
        assert not [w for w in got if issubclass(w.category, TaskStructureWarning)]


def test_graph_model_without_a_graph_warns():
    X, y, task = _long()
    with pytest.warns(TaskStructureWarning, match="graph=None"):
        GraphRegularizedRegressor().fit(X, y, task)
    ring = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a")]
    _, got = _record(lambda: GraphRegularizedRegressor(graph=ring).fit(X, y, task))
    assert not [w for w in got if issubclass(w.category, TaskStructureWarning)]
    _, got = _record(lambda: MultiTaskCV(GraphRegularizedRegressor(), n_alphas=2, cv=2)
                     .fit(X, y, task))
    assert len([w for w in got if issubclass(w.category, TaskStructureWarning)]) == 1


def test_per_task_metrics_skip_undefined_tasks_on_request():
    y_true = [np.array([1.0, 2.0, 3.0]), np.array([5.0, 5.0]), np.array([0.0, 1.0])]
    y_pred = [np.array([1.5, 2.0, 2.5]), np.array([4.0, 6.0]), np.array([0.0, 2.0])]
    with pytest.raises(ValueError, match="Task 1 has constant test targets.*skip_undefined"):
        amse(y_true, y_pred)
    with pytest.warns(UserWarning, match="1 of 3 tasks left out"):
        value = amse(y_true, y_pred, skip_undefined=True)
    keep = [0, 2]
    expected = np.mean([np.mean((y_true[t] - y_pred[t]) ** 2) / np.var(y_true[t])
                        for t in keep])
    assert value == pytest.approx(expected)
    with pytest.warns(UserWarning, match="1 of 3"):
        assert nmse(y_true, y_pred, average="task", skip_undefined=True) == value
    with pytest.raises(ValueError, match="Every task"):
        amse([np.ones(2)], [np.zeros(2)], skip_undefined=True)
    labels = [np.array([0, 1, 1]), np.array([1, 1]), np.array([0, 1])]
    scores = [np.array([0.1, 0.9, 0.8]), np.array([0.3, 0.4]), np.array([0.7, 0.2])]
    with pytest.raises(ValueError, match="Task 1 holds one class"):
        roc_auc(labels, scores, skip_undefined=False)
    with pytest.warns(UserWarning, match=r"task\(s\) \[1\]"):
        assert roc_auc(labels, scores) == pytest.approx(0.5)
