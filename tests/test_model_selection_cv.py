"""Cross-validated models: MultiTaskCV and every model inside GridSearchCV on long-format data."""

from __future__ import annotations

import pickle
import time
import warnings

import numpy as np
import pytest
from sklearn.base import clone, is_classifier
from sklearn.exceptions import FitFailedWarning
from sklearn.model_selection import GridSearchCV, cross_val_score

import multitask.estimators as E
from multitask import (
    IndependentRidgeRegressor,
    L21Classifier,
    L21Regressor,
    MultiTaskCV,
    TraceNormRegressor,
)
from multitask.estimators.capped_trace import CappedTraceRegressor
from multitask.estimators.mtmkl import MultiTaskKernelClassifier
from multitask.model_selection import (
    TaskKFold,
    default_param_grid,
    get_scorer,
    nmse_scorer,
    relative_grid,
    to_long_format,
)

# the deprecated alias MultitaskKernelClassifier is the same class as MultiTaskKernelClassifier
# (its own tests: tests/test_mtmkl_estimator.py); searching it twice only doubles the time
MODELS = [name for name in E.__all__ if name not in ("MultiTaskCV", "MultitaskKernelClassifier")]


def _is_clf(cls) -> bool:
    return is_classifier(cls())


def _grid(est, X, y):
    """The model's default grid (3 points): every model has one."""
    return {k: list(v) for k, v in default_param_grid(est, X, y, n_alphas=3).items()}


@pytest.fixture
def long_regression(datagen):
    Xs, ys = datagen.regression_lists(sizes=(24, 30, 18), d=4)
    return to_long_format(Xs, ys)


@pytest.fixture
def long_classification(datagen):
    Xs, ys = datagen.classification_lists(sizes=(30, 36, 30), d=4)
    return to_long_format(Xs, ys)


# ----------------------------------------------------------------------------- every model
@pytest.mark.parametrize("name", MODELS)
def test_every_model_in_gridsearchcv_and_multitaskcv_on_long_format(
        name, long_regression, long_classification):
    cls = getattr(E, name)
    X, y = long_classification if _is_clf(cls) else long_regression
    est = cls(task_column=-1)
    grid = _grid(est, X, y)
    cv = TaskKFold(3, task_column=-1, stratify=_is_clf(cls), random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence on tiny folds is not the point here
        gs = GridSearchCV(est, grid, cv=cv, error_score="raise").fit(X, y)
        mcv = MultiTaskCV(est, param_grid=grid, cv=cv, error_score="raise").fit(X, y)
    assert gs.best_params_.keys() == mcv.best_params_.keys()
    assert np.all(np.isfinite(mcv.cv_results_["mean_test_score"]))
    # the grid's candidates first, then 3 per widening of the path (best value at an edge)
    n_grid = int(np.prod([len(v) for v in grid.values()]))
    n_cand = len(mcv.cv_results_["params"])
    assert n_cand == n_grid + 3 * mcv.n_widened_ and mcv.scores_.shape == (3, n_cand)
    pred = mcv.predict(X)
    assert pred.shape == y.shape
    np.testing.assert_allclose(pred, mcv.best_estimator_.predict(X))
    assert np.isfinite(mcv.score(X, y))


# ----------------------------------------------------------------------------- formats
def test_lists_task_argument_and_task_column_give_the_same_cross_validation(regression_lists):
    Xs, ys = regression_lists
    Xl, yl = to_long_format(Xs, ys)
    task = Xl[:, -1].astype(int)
    a = MultiTaskCV(TraceNormRegressor(), n_alphas=4, cv=3).fit(Xs, ys)
    b = MultiTaskCV(TraceNormRegressor(), n_alphas=4, cv=3).fit(Xl[:, :-1], yl, task)
    c = MultiTaskCV(TraceNormRegressor(task_column=-1), n_alphas=4, cv=3).fit(Xl, yl)
    np.testing.assert_allclose(a.scores_, b.scores_, rtol=1e-12)
    np.testing.assert_allclose(a.scores_, c.scores_, rtol=1e-12)
    assert a.best_params_ == b.best_params_ == c.best_params_
    # predictions follow each input's layout
    assert isinstance(a.predict(Xs), list)
    np.testing.assert_allclose(np.concatenate(a.predict(Xs)), c.predict(Xl))
    np.testing.assert_allclose(b.predict(Xl[:, :-1], task), c.predict(Xl))


def test_string_task_labels_and_shared_design(regression_lists, shared_regression):
    Xs, ys = regression_lists
    Xl, yl = to_long_format(Xs, ys)
    labels = np.array(["north", "south", "west"])[Xl[:, -1].astype(int)]
    cv = MultiTaskCV(L21Regressor(), n_alphas=3, cv=3).fit(Xl[:, :-1], yl, labels)
    assert list(cv.tasks_) == ["north", "south", "west"]
    X, Y = shared_regression
    sh = MultiTaskCV(L21Regressor(), n_alphas=3, cv=4).fit(X, Y)
    assert sh.n_splits_ == 4 and sh.predict(X).shape == Y.shape


def test_default_grid_starts_at_alpha_max_and_follows_alpha_ratio(long_regression):
    X, y = long_regression
    est = TraceNormRegressor(task_column=-1)
    grid = default_param_grid(est, X, y, n_alphas=6, alpha_ratio=1e-2)["alpha"]
    amax = est.alpha_max(X, y)
    np.testing.assert_allclose(grid, relative_grid(amax, 6, 1e-2))
    # zero at alpha_max to rounding: exactly at the boundary the top singular value of the
    # solver's own gradient may exceed alpha by an ulp (ADMM there leaves 1e-17 entries)
    top = np.abs(est.set_params(alpha=grid[0]).fit(X, y).coef_).max()
    below = np.abs(est.set_params(alpha=grid[1]).fit(X, y).coef_).max()
    assert below > 0 and top <= 1e-12 * below
    # ridge-type: no alpha_max, a grid around the curvature scale, wider
    rg = default_param_grid(IndependentRidgeRegressor(task_column=-1), X, y, n_alphas=5,
                            alpha_ratio=1e-3)["alpha"]
    np.testing.assert_allclose(rg[-1] / rg[0], 1e-6)
    assert np.all(np.diff(rg) < 0)


def test_models_without_a_default_grid_ask_for_param_grid(long_regression):
    X, y = long_regression

    class NoAlpha(TraceNormRegressor):
        def __init__(self, task_column=None):
            self.task_column = task_column

        def _check_params(self):
            pass

    with pytest.raises(ValueError, match="param_grid"):
        MultiTaskCV(NoAlpha(task_column=-1)).fit(X, y)
    with pytest.raises(ValueError, match="not a parameter"):
        MultiTaskCV(L21Regressor(task_column=-1), param_grid={"beta": [1]}).fit(X, y)
    with pytest.raises(ValueError, match="list of values"):
        MultiTaskCV(L21Regressor(task_column=-1), param_grid={"alpha": 0.1}).fit(X, y)


# ----------------------------------------------------------------------------- the path
def test_warm_started_path_scores_equal_independent_cold_fits(long_regression):
    X, y = long_regression
    cv = TaskKFold(3, task_column=-1, random_state=1)
    est = TraceNormRegressor(task_column=-1, tol=1e-10, max_iter=20000)
    mcv = MultiTaskCV(est, n_alphas=5, cv=cv).fit(X, y)
    assert mcv.path_param_ == "alpha"
    alphas = [p["alpha"] for p in mcv.cv_results_["params"]]
    assert np.all(np.diff(alphas) < 0)  # strongest regularization first
    for k, (tr, te) in enumerate(cv.split(X, y)):
        for i, a in enumerate(alphas):
            cold = clone(est).set_params(alpha=a).fit(X[tr], y[tr])
            np.testing.assert_allclose(mcv.scores_[k, i], nmse_scorer(cold, X[te], y[te]),
                                       rtol=1e-4)
    mean = mcv.scores_.mean(axis=0)
    assert mcv.best_index_ == int(np.argmax(mean))
    assert mcv.best_score_ == pytest.approx(mean.max())
    assert mcv.cv_results_["rank_test_score"][mcv.best_index_] == 1
    refit = clone(est).set_params(**mcv.best_params_).fit(X, y)
    np.testing.assert_allclose(mcv.coef_, refit.coef_)


def test_two_parameter_grid_runs_the_path_inside_each_outer_point(long_regression):
    X, y = long_regression
    est = CappedTraceRegressor(task_column=-1, n_stages=3)
    grid = {"tau": [0.5, 2.0], "alpha": [0.01, 0.1, 1.0]}
    mcv = MultiTaskCV(est, param_grid=grid, cv=3, widen=0).fit(X, y)
    params = mcv.cv_results_["params"]
    assert len(params) == 6 and mcv.path_param_ == "alpha"
    assert [p["alpha"] for p in params[:3]] == [1.0, 0.1, 0.01]
    assert {p["tau"] for p in params[:3]} == {0.5}
    assert mcv.scores_.shape == (3, 6)
    # list of grids: searched one after the other
    both = MultiTaskCV(est, param_grid=[{"alpha": [0.1]}, {"alpha": [1.0], "tau": [1.0]}],
                       cv=3).fit(X, y)
    assert len(both.cv_results_["params"]) == 2


# ----------------------------------------------------------------------------- widening
@pytest.fixture
def sparse_signal():
    """4 relevant features of 15, moderate noise: the best alpha is far below alpha_max."""
    rng = np.random.default_rng(0)
    d, m = 15, 4
    W = np.zeros((d, m))
    W[:4] = rng.standard_normal((4, m))
    Xs = [rng.standard_normal((40, d)) for _ in range(m)]
    ys = [X @ W[:, t] + 0.7 * rng.standard_normal(40) for t, X in enumerate(Xs)]
    return to_long_format(Xs, ys)


@pytest.mark.parametrize("default", [True, False])
def test_grid_widening_finds_a_better_interior_value(sparse_signal, default):
    """The grid alpha_max * (1, 1/2, 1/4) is best at its weak end: the path goes on with 3
    values of the same spacing, and one of them is a better, interior choice. widen=0 keeps
    the edge."""
    X, y = sparse_signal
    est = L21Regressor(task_column=-1, tol=1e-8)
    amax = est.alpha_max(X, y)
    grid = amax * np.array([1.0, 0.5, 0.25])
    cv = TaskKFold(3, task_column=-1, random_state=0)
    kw = {"n_alphas": 3, "alpha_ratio": 0.25} if default else {"param_grid": {"alpha": grid}}
    calls = []
    narrow = MultiTaskCV(est, cv=cv, widen=0, **kw).fit(X, y)
    wide = MultiTaskCV(est, cv=cv, callback=lambda d, t: calls.append((d, t)), **kw).fit(X, y)
    # without widening: the weak edge, and the grid only
    assert narrow.n_widened_ == 0 and narrow.best_index_ == 2
    np.testing.assert_allclose([p["alpha"] for p in narrow.cv_results_["params"]], grid)
    # widened once: 3 more values continuing the log spacing, scored on the same folds
    assert wide.n_widened_ >= 1
    alphas = np.array([p["alpha"] for p in wide.cv_results_["params"]])
    n = len(alphas)
    assert n == 3 + 3 * wide.n_widened_
    np.testing.assert_allclose(alphas, amax * 0.5 ** np.arange(n))
    np.testing.assert_allclose(wide.scores_[:, :3], narrow.scores_, rtol=1e-10)
    mean = wide.cv_results_["mean_test_score"]
    best = wide.best_index_
    assert 3 <= best < n - 1  # a widened value, inside the widened path
    assert mean[best] > mean[best - 1] and mean[best] > mean[best + 1]
    assert wide.best_score_ > narrow.best_score_ + 1e-3
    assert wide.best_params_ == {"alpha": pytest.approx(alphas[best])}
    assert wide.best_estimator_.alpha == pytest.approx(alphas[best])
    # the widened candidates score as independent cold fits on the same folds
    for i in range(3, n):
        cold = cross_val_score(clone(est).set_params(alpha=alphas[i]), X, y, cv=cv,
                               scoring=nmse_scorer)
        np.testing.assert_allclose(wide.scores_[:, i], cold, rtol=1e-6)
    # progress: the widening's jobs (one per fold) come after the first 3
    assert [d for d, _ in calls] == list(range(1, 4 + 3 * wide.n_widened_))
    assert calls[2] == (3, 3) and calls[-1][1] == 3 + 3 * wide.n_widened_


def test_explicit_grid_widens_at_its_strong_end(sparse_signal):
    """Targets without signal: the strongest value of an explicit grid wins, so 3 stronger
    values (same spacing) are tried; a default grid starts at alpha_max and is not widened
    upward."""
    X, _ = sparse_signal
    y = np.random.default_rng(1).standard_normal(X.shape[0])
    est = L21Regressor(task_column=-1)
    amax = est.alpha_max(X, y)
    grid = amax * np.array([1e-2, 1e-3, 1e-4])
    cv = TaskKFold(3, task_column=-1, random_state=0)
    mcv = MultiTaskCV(est, param_grid={"alpha": grid}, cv=cv, widen=1).fit(X, y)
    alphas = np.array([p["alpha"] for p in mcv.cv_results_["params"]])
    assert mcv.n_widened_ == 1 and len(alphas) == 6
    np.testing.assert_allclose(np.sort(alphas[3:]), amax * np.array([1e-1, 1.0, 1e1]))
    assert mcv.best_params_["alpha"] > grid.max()
    default = MultiTaskCV(est, n_alphas=3, alpha_ratio=1e-4, cv=cv, widen=1).fit(X, y)
    assert default.best_index_ == 0 and default.n_widened_ == 0


def test_widen_is_validated(long_regression):
    X, y = long_regression
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="widen"):
            MultiTaskCV(L21Regressor(task_column=-1), widen=bad).fit(X, y)


# ----------------------------------------------------------------------------- default grids
def test_default_grid_of_each_model_family(long_regression, long_classification):
    """Norm penalties: alpha_max down to alpha_ratio * alpha_max (zero fit at the first value,
    not at the second); ridge-type (no alpha_max): from 10 L down over twice the decades;
    balls: radii up to the norm of the unconstrained fit; the kernel SVM: alpha = 1/C from 10."""
    from multitask.estimators import (
        CappedTraceRegressor,
        IndependentLassoRegressor,
        L1InfRegressor,
        MultiTaskKernelClassifier,
        MultiTaskRegressor,
        PooledRegressor,
        RobustMTLRegressor,
        SparseLowRankRegressor,
    )

    X, y = long_regression
    Xs, ys = X[:, :-1], y
    task = X[:, -1]
    # the composite models' paths start where every candidate of their second parameter is
    # zero: robust MTL at the smallest lam of its span, 1 / sqrt(m) (m = 3 tasks)
    norm_models = [TraceNormRegressor(), L21Regressor(), IndependentLassoRegressor(),
                   MultiTaskRegressor(penalty="column_l2"),
                   RobustMTLRegressor(lam=1 / np.sqrt(3)), SparseLowRankRegressor(radius=0.0),
                   CappedTraceRegressor(tau=np.inf)]
    for est in norm_models:
        name = type(est).__name__
        grid = est.default_grid(Xs, ys, task, n_alphas=4, alpha_ratio=1e-2)
        assert list(grid)[0] == "alpha", name
        amax = est.alpha_max(Xs, ys, task)
        assert np.isfinite(amax) and amax > 0, name
        np.testing.assert_allclose(grid["alpha"], relative_grid(amax, 4, 1e-2), err_msg=name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            top = clone(est).set_params(alpha=grid["alpha"][0], tol=1e-8).fit(Xs, ys, task)
            below = clone(est).set_params(alpha=grid["alpha"][1], tol=1e-8).fit(Xs, ys, task)
        scale = np.abs(below.coef_).max()
        assert scale > 1e-3, name
        assert np.abs(top.coef_).max() <= 1e-8 * scale, name
    # ridge-type: 10 L down over twice the decades (L: the loss's Lipschitz constant)
    for est in (IndependentRidgeRegressor(), PooledRegressor()):
        grid = est.default_grid(Xs, ys, task, n_alphas=5, alpha_ratio=1e-3)["alpha"]
        assert est.alpha_max(Xs, ys, task) == np.inf
        np.testing.assert_allclose(grid[-1] / grid[0], 1e-6)
        np.testing.assert_allclose(grid / grid[0], np.logspace(0, -6, 5))
    Xr = [Xs[task == t] for t in range(3)]
    L = max(np.linalg.eigvalsh(np.cov(x.T, bias=True))[-1] for x in Xr)
    ridge_grid = IndependentRidgeRegressor().default_grid(Xs, ys, task, n_alphas=5)["alpha"]
    assert ridge_grid[0] == pytest.approx(10 * L, rel=1e-8)
    # balls: radii up to the norm of the (lightly ridged) unconstrained fit, smallest first
    ball = L1InfRegressor(constraint="l1")
    radii = ball.default_grid(Xs, ys, task, n_alphas=4, alpha_ratio=1e-2)["radius"]
    free = IndependentRidgeRegressor(alpha=1e-6).fit(Xs, ys, task)
    np.testing.assert_allclose(radii[-1], np.abs(free.coef_).sum(axis=1).max(), rtol=1e-8)
    np.testing.assert_allclose(radii / radii[-1], np.logspace(-2, 0, 4))
    # the kernel SVM: alpha = 1/C from 10 down
    Xc, yc = long_classification
    kgrid = MultiTaskKernelClassifier().default_grid(Xc[:, :-1], yc, Xc[:, -1], n_alphas=3,
                                                      alpha_ratio=1e-2)["alpha"]
    np.testing.assert_allclose(kgrid, [10.0, 1.0, 0.1])


# ----------------------------------------------------------------------------- folds
def test_classifier_folds_are_stratified_within_each_task(long_classification):
    X, y = long_classification
    seen = []

    class Spy(L21Classifier):
        def fit(self, X, y, task=None):
            t = X[:, -1]
            for g in np.unique(t):
                seen.append(set(np.unique(y[t == g])))
            return super().fit(X, y, task)

    mcv = MultiTaskCV(Spy(task_column=-1), n_alphas=2, cv=3).fit(X, y)
    assert seen and all(s == {0, 1} for s in seen)
    assert 0.5 <= mcv.best_score_ <= 1.0  # mean per-task AUC


def test_tasks_missing_from_a_training_fold_are_not_scored(long_regression):
    X, y = long_regression
    X = np.vstack([X, np.r_[np.ones(4), 7.0]])  # task 7 has one row
    y = np.r_[y, 1.0]
    mcv = MultiTaskCV(L21Regressor(task_column=-1), n_alphas=3, cv=3).fit(X, y)
    assert np.all(np.isfinite(mcv.scores_))
    assert 7 in mcv.tasks_


# ----------------------------------------------------------------------------- scoring, errors
def test_named_scorers(long_regression, long_classification):
    X, y = long_regression
    est = L21Regressor(task_column=-1)
    for name in ("nmse", "amse", "r2", "neg_mean_squared_error"):
        mcv = MultiTaskCV(est, n_alphas=3, cv=3, scoring=name).fit(X, y)
        assert np.all(np.isfinite(mcv.scores_))
    Xc, yc = long_classification
    mcv = MultiTaskCV(L21Classifier(task_column=-1), n_alphas=3, cv=3, scoring="accuracy")
    assert 0.5 <= mcv.fit(Xc, yc).best_score_ <= 1.0
    # classifiers: the mean AUC for two classes, minus the log-loss for more
    assert get_scorer(None, L21Classifier()).__name__ == "classifier_scorer"
    with pytest.raises(ValueError, match="Unknown scoring"):
        get_scorer("no-such-score", est)


class FragileL21(L21Regressor):
    """An l2,1 model whose fit fails at alpha = 1 (a failure inside the fit, not a bad value)."""

    def fit(self, X, y, task=None):
        if self.alpha == 1.0:
            raise ValueError("this fit fails on purpose")
        return super().fit(X, y, task)


def test_invalid_grid_values_are_refused_before_any_fit(long_regression):
    X, y = long_regression
    calls = []
    with pytest.raises(ValueError, match=r"param_grid\['alpha'\] holds an invalid value -1.0: "
                                         r"The 'alpha' parameter of L21Regressor must be"):
        MultiTaskCV(L21Regressor(task_column=-1), param_grid={"alpha": [0.1, -1.0]}, cv=3,
                    callback=lambda d, t: calls.append(d)).fit(X, y)
    assert calls == []


def test_failed_fits_score_error_score_or_raise(long_regression):
    X, y = long_regression
    grid = {"alpha": [0.1, 1.0]}
    with pytest.warns(FitFailedWarning, match="fails on purpose"):
        mcv = MultiTaskCV(FragileL21(task_column=-1), param_grid=grid, cv=3, widen=0).fit(X, y)
    bad = [p["alpha"] for p in mcv.cv_results_["params"]].index(1.0)
    assert np.all(np.isnan(mcv.scores_[:, bad])) and np.all(np.isfinite(mcv.scores_[:, 1 - bad]))
    assert mcv.cv_results_["rank_test_score"][bad] == 2
    assert mcv.best_params_ == {"alpha": 0.1}
    # the fit after a failed one starts cold: its scores equal independent fits
    good = [p["alpha"] for p in mcv.cv_results_["params"]].index(0.1)
    cold = cross_val_score(L21Regressor(task_column=-1, alpha=0.1), X, y, scoring=nmse_scorer,
                           cv=TaskKFold(3, task_column=-1, random_state=0))
    np.testing.assert_allclose(mcv.scores_[:, good], cold, rtol=1e-10)
    with pytest.raises(ValueError, match="fails on purpose"):
        MultiTaskCV(FragileL21(task_column=-1), param_grid=grid, cv=3,
                    error_score="raise").fit(X, y)


def test_unfitted_and_refit_false(long_regression):
    X, y = long_regression
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        MultiTaskCV(L21Regressor(task_column=-1)).predict(X)
    mcv = MultiTaskCV(L21Regressor(task_column=-1), n_alphas=2, cv=2, refit=False).fit(X, y)
    assert "alpha" in mcv.best_params_
    with pytest.raises(AttributeError, match="refit=False"):
        mcv.predict(X)


# ----------------------------------------------------------------------------- progress
def test_progress_callback_and_verbose(long_regression, capsys):
    X, y = long_regression
    calls = []
    MultiTaskCV(L21Regressor(task_column=-1), n_alphas=3, cv=3, widen=0,
                callback=lambda d, t: calls.append((d, t))).fit(X, y)
    assert calls == [(1, 3), (2, 3), (3, 3)]  # one job per fold (the warm-started path)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""  # silent unless asked
    MultiTaskCV(L21Regressor(task_column=-1), n_alphas=3, cv=3, widen=0,
                verbose=True).fit(X, y)
    err = capsys.readouterr().err
    assert err.count("jobs done") == 3 and "3/3" in err


def test_without_warm_start_every_grid_point_is_a_job(long_classification):
    X, y = long_classification
    calls = []
    fast = MultiTaskKernelClassifier(task_column=-1, max_mkl_iter=3, max_iter=50, random_state=0)
    assert "warm_start" not in fast.get_params()
    MultiTaskCV(fast, param_grid={"alpha": [10.0, 1.0]}, cv=3, widen=0,
                callback=lambda d, t: calls.append(t)).fit(X, y)
    assert calls and set(calls) == {6}


# ----------------------------------------------------------------------------- parallel
def test_joblib_workers_give_the_serial_result(long_regression):
    """Threads here (process workers start slowly; they run in the slow School test)."""
    from joblib import parallel_config

    X, y = long_regression
    a = MultiTaskCV(TraceNormRegressor(task_column=-1), n_alphas=4, cv=3).fit(X, y)
    with parallel_config(backend="threading"):
        b = MultiTaskCV(TraceNormRegressor(task_column=-1), n_alphas=4, cv=3,
                        n_jobs=2).fit(X, y)
    np.testing.assert_allclose(a.scores_, b.scores_, rtol=1e-10)
    assert a.best_params_ == b.best_params_


def test_dask_cluster_gives_the_same_choice_as_joblib(long_regression):
    distributed = pytest.importorskip("distributed")
    X, y = long_regression
    est = TraceNormRegressor(task_column=-1)
    ref = MultiTaskCV(est, n_alphas=4, cv=3).fit(X, y)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        calls = []
        mcv = MultiTaskCV(est, n_alphas=4, cv=3, client=client,
                          callback=lambda d, t: calls.append(d)).fit(X, y)
        assert clone(mcv).client is client  # shared, not copied
        blob = pickle.dumps(mcv)
    assert mcv.best_params_ == ref.best_params_
    np.testing.assert_allclose(mcv.scores_, ref.scores_, rtol=1e-10)
    assert sorted(calls) == [1, 2, 3]
    back = pickle.loads(blob)
    assert back.client is None
    np.testing.assert_array_equal(back.predict(X), mcv.predict(X))


# ----------------------------------------------------------------------------- sklearn tools
def test_multitaskcv_inside_gridsearchcv_and_cross_val_score(long_regression):
    X, y = long_regression
    inner = MultiTaskCV(L21Regressor(task_column=-1), n_alphas=3, cv=3)
    outer = TaskKFold(3, task_column=-1, random_state=0)
    gs = GridSearchCV(inner, {"estimator__fit_intercept": [True, False]}, cv=outer).fit(X, y)
    assert gs.best_params_["estimator__fit_intercept"] in (True, False)
    assert hasattr(gs.best_estimator_, "best_params_")
    scores = cross_val_score(inner, X, y, cv=outer, scoring=nmse_scorer)
    assert scores.shape == (3,) and np.all(scores < 0)
    assert is_classifier(MultiTaskCV(L21Classifier()))
    assert not is_classifier(inner)


def test_pickle_round_trip(long_classification):
    X, y = long_classification
    mcv = MultiTaskCV(L21Classifier(task_column=-1), n_alphas=3, cv=3).fit(X, y)
    back = pickle.loads(pickle.dumps(mcv))
    np.testing.assert_array_equal(back.predict_proba(X), mcv.predict_proba(X))
    np.testing.assert_array_equal(back.decision_function(X), mcv.decision_function(X))
    assert back.best_params_ == mcv.best_params_


# ----------------------------------------------------------------------------- School timing
@pytest.mark.slow
def test_school_cross_validation_with_the_default_grid_takes_under_a_minute():
    """Trace norm (the slowest baseline) on all of School: 5 folds x 10 alphas, 2 workers.

    The serial run's CPU time is the machine-independent figure (the machine may be shared);
    the two-worker wall time gets a generous bound.
    """
    from threadpoolctl import threadpool_limits

    from multitask.datasets import load_school

    school = load_school()
    with threadpool_limits(1):
        c0 = time.process_time()
        serial = MultiTaskCV(TraceNormRegressor()).fit(school.X, school.y)
        cpu = time.process_time() - c0
    t0 = time.perf_counter()
    par = MultiTaskCV(TraceNormRegressor(), n_jobs=2).fit(school.X, school.y)
    wall = time.perf_counter() - t0
    print(f"\nSchool trace-norm CV: serial CPU {cpu:.1f} s, 2 workers wall {wall:.1f} s")
    assert par.best_params_ == serial.best_params_
    assert cpu < 60.0
    assert wall < 120.0
    assert 0 < par.best_index_ < 9  # an interior choice of the default grid
