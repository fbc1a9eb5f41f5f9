"""Model selection on small tasks: the selection rules of the CV engine.

``selection="auto"`` (the default) leaves one row of each task out per fold, and scores the
out-of-fold predictions pooled over folds, when the median task has at most
``SMALL_TASK_ROWS`` rows; the measurements behind it are in benchmarks/bench_small_tasks.py.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.model_selection import KFold

from multitask import (
    IndependentLassoRegressor,
    IndependentRidgeRegressor,
    L21Classifier,
    L21Regressor,
    MultiTaskCV,
    TraceNormRegressor,
)
from multitask.datasets import make_low_rank_tasks
from multitask.metrics import nmse
from multitask.model_selection import (
    SMALL_TASK_ROWS,
    cross_validate_grid,
    pooled_metric,
    to_long_format,
)


def _tasks(sizes, d=5, seed=0):
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((d, 2)) @ rng.standard_normal((2, len(sizes)))
    Xs = [rng.standard_normal((n, d)) for n in sizes]
    ys = [X @ W[:, t] + 0.5 * rng.standard_normal(len(X)) + t for t, X in enumerate(Xs)]
    return Xs, ys


def test_auto_takes_leave_one_out_for_small_tasks_and_kfold_otherwise():
    # widen=0: the rule is decided before the grid is searched; widening the grid at its
    # edges (tests/test_model_selection*.py) only adds fits here
    small = _tasks([6, 8, 7, 8])
    cv = MultiTaskCV(L21Regressor(), n_alphas=3, widen=0).fit(*small)
    assert cv.selection_ == "loo" and cv.n_splits_ == 8  # the largest task's rows
    big = _tasks([SMALL_TASK_ROWS + 10] * 3)
    cv = MultiTaskCV(L21Regressor(), n_alphas=3, widen=0).fit(*big)
    assert cv.selection_ == "kfold" and cv.n_splits_ == 5
    # the median decides; auto never makes more than SMALL_TASK_ROWS folds
    mixed = _tasks([5, 6, 7, 3 * SMALL_TASK_ROWS])
    cv = MultiTaskCV(L21Regressor(), n_alphas=3, widen=0).fit(*mixed)
    assert cv.selection_ == "loo" and cv.n_splits_ == SMALL_TASK_ROWS
    # the old rule on demand
    cv = MultiTaskCV(L21Regressor(), n_alphas=3, selection="kfold", widen=0).fit(*small)
    assert cv.selection_ == "kfold" and cv.n_splits_ == 5


def test_leave_one_out_folds_hold_one_row_of_each_task():
    Xs, ys = _tasks([4, 6, 5])
    res = cross_validate_grid(L21Regressor(), Xs, ys, param_grid={"alpha": [0.1]},
                              selection="loo")
    X, _ = to_long_format(Xs, ys)
    task = X[:, -1].astype(int)
    seen = np.concatenate([te for _, te in res.splits])
    assert np.array_equal(np.sort(seen), np.arange(len(task)))  # each row held out once
    for train, test in res.splits:
        assert np.bincount(task[test], minlength=3).max() == 1
        assert set(task[train]) == {0, 1, 2}


def test_the_pooled_score_is_the_nmse_of_the_out_of_fold_predictions():
    Xs, ys = _tasks([5, 7, 6, 6], seed=3)
    grid = [0.5, 0.05]
    res = cross_validate_grid(TraceNormRegressor(tol=1e-10, max_iter=20000), Xs, ys,
                              param_grid={"alpha": grid}, selection="loo", widen=0)
    X, y = to_long_format(Xs, ys)
    for i, alpha in enumerate(grid):
        pred = np.full(len(y), np.nan)
        for train, test in res.splits:  # cold fits on the same folds
            est = TraceNormRegressor(alpha=alpha, task_column=-1, tol=1e-10, max_iter=20000)
            est.fit(X[train], y[train])
            pred[test] = est.predict(X[test])
        assert res.mean_scores[i] == pytest.approx(-nmse(y, pred), rel=1e-6)
    # the per-fold scores are kept too (one row per task in each fold); their mean is another
    # number, which the choice does not use
    assert res.scores.shape == (len(res.splits), 2)
    assert not np.allclose(np.nanmean(res.scores, axis=0), res.mean_scores, rtol=1e-3)


def test_shared_design_and_long_format_get_the_rule_too():
    data = make_low_rank_tasks(n_tasks=4, n_features=3, n_samples=9, rank=1, shared_X=True,
                               random_state=0)
    cv = MultiTaskCV(L21Regressor(), n_alphas=3).fit(data.X, data.Y)
    assert cv.selection_ == "loo" and cv.n_splits_ == 9  # one row out per fold
    Xs, ys = _tasks([6, 7, 8])
    X, y = to_long_format(Xs, ys)
    by_column = MultiTaskCV(L21Regressor(task_column=-1), n_alphas=3).fit(X, y)
    by_list = MultiTaskCV(L21Regressor(), n_alphas=3).fit(Xs, ys)
    np.testing.assert_allclose(by_column.cv_results_["mean_test_score"],
                               by_list.cv_results_["mean_test_score"])


def test_classifiers_keep_stratified_kfold_and_refuse_pooled_auc():
    data = make_low_rank_tasks(n_tasks=4, n_features=4, n_samples=10, rank=1, noise=0.3,
                               task_type="classification", ensure_both_classes=True,
                               random_state=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cv = MultiTaskCV(L21Classifier(), n_alphas=3, cv=3).fit(data.X, data.y)
    assert cv.selection_ == "kfold"
    with pytest.raises(ValueError, match="needs a regressor scored by a mean over rows"):
        MultiTaskCV(L21Classifier(), n_alphas=3, selection="loo").fit(data.X, data.y)
    assert pooled_metric(lambda est, X, y: 0.0) is None


def test_invalid_selection_and_loo_with_a_splitter_are_refused():
    Xs, ys = _tasks([6, 6])
    with pytest.raises(ValueError, match="selection"):
        MultiTaskCV(L21Regressor(), selection="best").fit(Xs, ys)
    with pytest.raises(ValueError, match="selection must be one of"):
        cross_validate_grid(L21Regressor(), Xs, ys, selection="LOO")
    with pytest.raises(ValueError, match="draws its own folds"):
        cross_validate_grid(L21Regressor(), Xs, ys, selection="loo", cv=KFold(3))
    with pytest.raises(ValueError, match="needs a regressor scored by a mean over rows"):
        cross_validate_grid(L21Regressor(), Xs, ys, selection="loo", scoring="r2")
    # an explicit splitter or a scikit-learn scorer: auto keeps K-fold
    assert cross_validate_grid(L21Regressor(), Xs, ys, cv=KFold(3, shuffle=True,
                                                                random_state=0),
                               n_alphas=2).selection == "kfold"
    assert cross_validate_grid(L21Regressor(), Xs, ys, scoring="r2",
                               n_alphas=2).selection == "kfold"


def test_a_failed_fold_is_left_out_of_the_pooled_score():
    Xs, ys = _tasks([5, 6, 6])
    X, y = to_long_format(Xs, ys)

    class Fragile(L21Regressor):
        def fit(self, X, y, task=None):
            if X.shape[0] == len(y) and len(y) % 2 == 1 and self.alpha < 0.01:
                raise RuntimeError("odd training part")
            return super().fit(X, y, task)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = cross_validate_grid(Fragile(task_column=-1), X, y,
                                  param_grid={"alpha": [0.1, 0.001]}, selection="loo")
        assert np.isfinite(res.mean_scores).all()
        low = cross_validate_grid(Fragile(task_column=-1), X, y,
                                  param_grid={"alpha": [0.1, 0.001]}, selection="loo",
                                  error_score=-10.0)
    assert low.mean_scores[1] == -10.0 and low.mean_scores[0] == res.mean_scores[0]


# ----------------------------------------------------------------------------- the point
def _draw(n_rows, seed):
    rng = np.random.default_rng(seed)
    return make_low_rank_tasks(n_tasks=40, n_features=15, n_samples=n_rows, rank=2, noise=3.0,
                               n_test=30, intercept=2.0 * rng.standard_normal(40),
                               random_state=seed)


def _test_nmse(search, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(data.X, data.y)
    return nmse(np.concatenate(data.y_test), np.concatenate(search.predict(data.X_test)))


@pytest.mark.slow  # an experiment: 3 draws x 3 searches of 8 strengths on 40 tasks
@pytest.mark.parametrize("n_rows", [8, 16])
def test_with_few_rows_per_task_the_low_rank_model_beats_the_independent_baselines(n_rows):
    """Planted rank 2 among 40 tasks of 15 features: under the default rule the trace-norm
    model beats independent ridge and lasso (the same rule), on average over draws."""
    scores = {name: [] for name in ("trace", "ridge", "lasso")}
    for seed in range(3):
        data = _draw(n_rows, seed)
        scores["trace"].append(_test_nmse(MultiTaskCV(TraceNormRegressor(), n_alphas=8), data))
        scores["ridge"].append(_test_nmse(MultiTaskCV(IndependentRidgeRegressor(), n_alphas=8),
                                          data))
        scores["lasso"].append(_test_nmse(MultiTaskCV(IndependentLassoRegressor(), n_alphas=8),
                                          data))
    mean = {k: float(np.mean(v)) for k, v in scores.items()}
    assert mean["trace"] < mean["ridge"] and mean["trace"] < mean["lasso"], mean
