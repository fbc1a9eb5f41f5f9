"""Model selection: folds within tasks, and long-format data inside scikit-learn's tools.

How to use long format with scikit-learn (documented by these tests): put the task id in a
column of ``X`` (``to_long_format`` puts it last), give the model ``task_column=-1``, and split
with ``TaskKFold`` so that every task is in every training fold. ``GridSearchCV``,
``cross_val_score`` and a ``Pipeline`` whose ``ColumnTransformer`` scales the features and
passes the task column through (``remainder="passthrough"`` puts it last) need no other code.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from multitask.estimators import TraceNormClassifier, TraceNormRegressor
from multitask.metrics import mean_task_auc, nmse
from multitask.model_selection import (
    SharedKFold,
    TaskKFold,
    cross_validate_grid,
    mean_auc_scorer,
    nmse_scorer,
    regularization_path,
    relative_grid,
    to_long_format,
)


@pytest.fixture
def long_regression(datagen):
    """Long format with the task id as the last column; features on different scales."""
    Xs, ys = datagen.regression_lists(sizes=(30, 45, 22, 9), d=5, seed=20)
    Xs = [X * [1.0, 4.0, 0.5, 2.0, 1.0] + 5.0 for X in Xs]
    X, y = to_long_format(Xs, ys)
    return X, y


@pytest.fixture
def long_classification(datagen):
    Xs, ys = datagen.classification_lists(sizes=(40, 55, 35), d=5, seed=21)
    return to_long_format(Xs, ys)


def _scaled_pipeline(model, d):
    ct = ColumnTransformer([("scale", StandardScaler(), list(range(d)))],
                           remainder="passthrough")  # the task column comes out last
    return Pipeline([("prep", ct), ("model", model)])


# ----------------------------------------------------------------------------- TaskKFold


def test_to_long_format_inserts_the_task_column():
    Xs = [np.ones((2, 3)), 2 * np.ones((3, 3))]
    ys = [np.zeros(2), np.ones(3)]
    X, y = to_long_format(Xs, ys)
    np.testing.assert_array_equal(X[:, -1], [0, 0, 1, 1, 1])
    np.testing.assert_array_equal(X[:, :3], np.vstack(Xs))
    np.testing.assert_array_equal(y, [0, 0, 1, 1, 1])
    X0, _ = to_long_format(Xs, ys, task_column=0)
    np.testing.assert_array_equal(X0[:, 0], [0, 0, 1, 1, 1])
    np.testing.assert_array_equal(X0[:, 1:], np.vstack(Xs))


def test_task_kfold_puts_every_task_in_every_fold():
    rng = np.random.default_rng(0)
    sizes = {0: 23, 1: 5, 2: 11, 7: 3}  # task 7 has fewer rows than folds
    task = rng.permutation(np.concatenate([np.full(n, t) for t, n in sizes.items()]))
    X = np.column_stack([rng.standard_normal(len(task)), task])
    cv = TaskKFold(5, random_state=0)
    folds = list(cv.split(X))
    assert len(folds) == cv.get_n_splits() == 5
    counts = np.zeros(len(task), int)
    for train, test in folds:
        counts[test] += 1
        assert len(np.intersect1d(train, test)) == 0
        assert len(train) + len(test) == len(task)
        for t, n in sizes.items():
            n_test = np.sum(task[test] == t)
            if n >= 5:
                assert np.floor(n / 5) <= n_test <= np.ceil(n / 5)  # balanced within the task
                assert np.sum(task[train] == t) > 0
            else:
                assert n_test <= 1
    np.testing.assert_array_equal(counts, 1)  # a partition of the rows
    # same folds from groups=, and reproducible with a seed
    again = list(TaskKFold(5, random_state=0).split(X[:, :1], groups=task))
    for (a, b), (c, d) in zip(folds, again, strict=True):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)


def test_stratified_task_kfold_keeps_both_classes():
    rng = np.random.default_rng(1)
    task = np.repeat([0, 1, 2], [30, 24, 40])
    y = np.concatenate([rng.permutation(np.r_[np.ones(8), np.zeros(22)]),
                        rng.permutation(np.r_[np.ones(12), np.zeros(12)]),
                        rng.permutation(np.r_[np.ones(5), np.zeros(35)])]).astype(int)
    X = np.column_stack([rng.standard_normal(len(y)), task])
    for train, test in TaskKFold(4, stratify=True, random_state=3).split(X, y):
        for t in range(3):
            for c in (0, 1):
                n_c = np.sum((task == t) & (y == c))
                in_test = np.sum((task[test] == t) & (y[test] == c))
                assert np.floor(n_c / 4) <= in_test <= np.ceil(n_c / 4)
                assert np.sum((task[train] == t) & (y[train] == c)) > 0


@pytest.mark.parametrize("stratify", [False, True])
def test_task_kfold_without_shuffle_is_deterministic_and_balanced(stratify):
    """shuffle=False uses no randomness: every call gives the same folds, of balanced sizes."""
    task = np.repeat([0, 1, 2, 3], [10, 10, 7, 5])
    y = np.arange(len(task)) % 2
    X = np.column_stack([np.zeros(len(task)), task])
    cv = TaskKFold(3, shuffle=False, stratify=stratify)
    runs = [[test for _, test in cv.split(X, y)] for _ in range(3)]
    for other in runs[1:]:
        for a, b in zip(runs[0], other, strict=True):
            np.testing.assert_array_equal(a, b)
    sizes = [len(test) for test in runs[0]]
    assert max(sizes) - min(sizes) <= 1


def test_shared_kfold_is_plain_kfold():
    cv = SharedKFold(4, random_state=0)
    assert isinstance(cv, KFold) and cv.get_n_splits() == 4


# ----------------------------------------------------------------------------- sklearn tools


def test_grid_search_on_long_format(long_regression):
    """GridSearchCV with task_column=-1 and TaskKFold; its scores equal a manual CV loop."""
    X, y = long_regression
    cv = TaskKFold(3, random_state=0)
    grid = [0.01, 0.1, 1.0]
    search = GridSearchCV(TraceNormRegressor(task_column=-1), {"alpha": grid}, cv=cv,
                          scoring=nmse_scorer).fit(X, y)
    manual = []
    for alpha in grid:
        scores = []
        for train, test in cv.split(X, y):
            est = TraceNormRegressor(alpha=alpha, task_column=-1).fit(X[train], y[train])
            scores.append(-nmse(y[test], est.predict(X[test])))
        manual.append(np.mean(scores))
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], manual, rtol=1e-12)
    assert search.best_params_["alpha"] == grid[int(np.argmax(manual))]
    assert search.best_estimator_.predict(X).shape == y.shape
    np.testing.assert_array_equal(search.best_estimator_.tasks_, [0, 1, 2, 3])


def test_cross_val_score_on_long_format(long_regression):
    X, y = long_regression
    cv = TaskKFold(3, random_state=1)
    r2 = cross_val_score(TraceNormRegressor(alpha=0.1, task_column=-1), X, y, cv=cv)
    assert r2.shape == (3,) and np.all(r2 > 0.5)
    neg = cross_val_score(TraceNormRegressor(alpha=0.1, task_column=-1), X, y, cv=cv,
                          scoring=nmse_scorer)
    assert np.all(neg < 0) and np.all(neg > -0.5)


def test_pipeline_scales_features_and_passes_the_task_column(long_regression):
    """The pipeline's model equals the model fitted on standardized features."""
    X, y = long_regression
    d = X.shape[1] - 1
    pipe = _scaled_pipeline(TraceNormRegressor(alpha=0.1, task_column=-1), d).fit(X, y)
    Xz = X.copy()
    Xz[:, :d] = StandardScaler().fit_transform(X[:, :d])
    direct = TraceNormRegressor(alpha=0.1, task_column=-1).fit(Xz, y)
    np.testing.assert_allclose(pipe.named_steps["model"].coef_, direct.coef_, atol=1e-12)
    np.testing.assert_allclose(pipe.predict(X), direct.predict(Xz), atol=1e-10)
    search = GridSearchCV(pipe, {"model__alpha": [0.01, 0.1]}, cv=TaskKFold(3, random_state=0))
    search.fit(X, y)
    assert search.best_params_["model__alpha"] in (0.01, 0.1)
    assert cross_val_score(pipe, X, y, cv=TaskKFold(3, random_state=0)).mean() > 0.5


def test_scorers_read_the_task_column_through_a_pipeline(long_regression, long_classification):
    """Task-averaged scores need the task ids: a Pipeline must not hide them."""
    X, y = long_regression
    d = X.shape[1] - 1
    pipe = _scaled_pipeline(TraceNormRegressor(alpha=0.1, task_column=-1), d).fit(X, y)
    task = X[:, -1]
    task_nmse = partial(nmse_scorer, average="task")
    assert task_nmse(pipe, X, y) == pytest.approx(
        -nmse(y, pipe.predict(X), task, average="task"), rel=1e-12)
    assert nmse_scorer(pipe, X, y) == pytest.approx(-nmse(y, pipe.predict(X)), rel=1e-12)

    Xc, yc = long_classification
    clf = _scaled_pipeline(TraceNormClassifier(alpha=0.01, task_column=-1), d).fit(Xc, yc)
    expected = mean_task_auc(yc, clf.decision_function(Xc), Xc[:, -1])
    assert mean_auc_scorer(clf, Xc, yc) == pytest.approx(expected, rel=1e-12)
    bare = TraceNormClassifier(alpha=0.01, task_column=-1).fit(Xc, yc)
    assert mean_auc_scorer(bare, Xc, yc) == pytest.approx(
        mean_task_auc(yc, bare.decision_function(Xc), Xc[:, -1]), rel=1e-12)


def test_stratified_grid_search_for_a_classifier(long_classification):
    X, y = long_classification
    search = GridSearchCV(TraceNormClassifier(task_column=-1), {"alpha": [0.001, 0.1]},
                          cv=TaskKFold(3, stratify=True, random_state=0),
                          scoring=mean_auc_scorer).fit(X, y)
    assert np.all(search.cv_results_["mean_test_score"] > 0.6)


# ----------------------------------------------------------------------------- grids, paths


def test_relative_grid():
    g = relative_grid(2.0, n=5, ratio=1e-2)
    assert len(g) == 5 and g[0] == pytest.approx(2.0) and g[-1] == pytest.approx(0.02)
    ratios = g[1:] / g[:-1]
    np.testing.assert_allclose(ratios, ratios[0])  # log-spaced
    assert np.all(ratios < 1)  # decreasing
    for bad in (0.0, -1.0, np.inf, np.nan):
        with pytest.raises(ValueError, match="lam_max"):
            relative_grid(bad)


def test_cv_engine_path_matches_cold_fits_on_the_same_folds(long_regression):
    """Warm-started paths give the same fold scores as independent fits.

    Both stop on the relative optimality measure (tol=1e-8), which leaves the scores a few 1e-6
    apart (relative) on these ill-conditioned features; the engine is cross_validate_grid
    (what MultiTaskCV runs).
    """
    X, y = long_regression
    est = TraceNormRegressor(task_column=-1, tol=1e-8, max_iter=20000)
    lam_max = est.alpha_max(X, y)
    grid = relative_grid(lam_max, n=4, ratio=1e-2)
    cv = TaskKFold(3, random_state=2)
    res = cross_validate_grid(est, X, y, param_grid={"alpha": list(grid)}, cv=cv,
                              scoring=nmse_scorer, widen=0)
    assert res.scores.shape == (3, 4) and res.path_param == "alpha" and res.n_widened == 0
    assert [c["alpha"] for c in res.candidates] == list(grid)
    for j, alpha in enumerate(grid):
        cold = cross_val_score(est.set_params(alpha=alpha), X, y, cv=cv, scoring=nmse_scorer)
        np.testing.assert_allclose(res.scores[:, j], cold, rtol=1e-4)
    np.testing.assert_allclose(res.mean_scores, res.scores.mean(axis=0))


def test_regularization_path_equals_independent_fits(long_regression):
    """The one path mechanism: warm-started refits along the default grid equal cold fits."""
    X, y = long_regression
    est = TraceNormRegressor(task_column=-1, tol=1e-10, max_iter=20000)
    path = regularization_path(est, X, y, n_alphas=5, alpha_ratio=1e-2)
    assert path.param == "alpha"
    np.testing.assert_allclose(path.grid, relative_grid(est.alpha_max(X, y), 5, 1e-2))
    assert path.coefs.shape == (5, 4, X.shape[1] - 1)
    assert np.all(path.optimality <= 1e-10)
    scale = np.abs(path.coefs[1]).max()
    assert scale > 1e-3 and np.abs(path.coefs[0]).max() <= 1e-12 * scale  # alpha_max: zero
    for k, alpha in enumerate(path.grid):
        cold = TraceNormRegressor(task_column=-1, tol=1e-10, max_iter=20000,
                                  alpha=alpha).fit(X, y)
        np.testing.assert_allclose(path.coefs[k], cold.coef_, atol=1e-7)
        np.testing.assert_allclose(path.intercepts[k], cold.intercept_, atol=1e-7)
    assert path.n_iter[1:].sum() > 0
