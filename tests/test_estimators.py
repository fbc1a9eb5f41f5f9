"""Baseline estimators: parameters, persistence, equivalences with scikit-learn.

Alpha mappings from the scaling convention (``(1 / n_t)`` per task):

* ridge per task: ``(1/(2 n_t)) ||X w + b - y||^2 + (alpha/2) ||w||^2`` is scikit-learn's
  ``Ridge(alpha=alpha * n_t)`` (which minimizes ``||X w + b - y||^2 + alpha_sk ||w||^2``);
* lasso per task: scikit-learn's ``Lasso(alpha=alpha)`` (same ``1/(2n)`` scaling);
* l2,1 on a shared X: scikit-learn's ``MultiTaskLasso(alpha=alpha)``;
* logistic ridge per task: ``LogisticRegression(C=1 / (alpha * n_t))``.
"""

from __future__ import annotations

import io
import pickle

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso, LogisticRegression, MultiTaskLasso, Ridge
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils._param_validation import InvalidParameterError

import multitask.estimators as E
from multitask.estimators import (
    IndependentLassoRegressor,
    IndependentRidgeClassifier,
    IndependentRidgeRegressor,
    L21Classifier,
    L21Regressor,
    MultiTaskClassifier,
    MultiTaskRegressor,
    PooledClassifier,
    PooledRegressor,
    TraceNormClassifier,
    TraceNormRegressor,
)

BASELINES = [getattr(E, name) for name in E.__all__
             if getattr(E, name).__module__ == "multitask.estimators.baselines"]
REGRESSORS = [c for c in BASELINES if not c._is_classifier]
CLASSIFIERS = [c for c in BASELINES if c._is_classifier]


def test_baseline_list_is_complete():
    assert len(REGRESSORS) == 6 and len(CLASSIFIERS) == 6
    assert TraceNormRegressor in REGRESSORS and PooledClassifier in CLASSIFIERS


# ----------------------------------------------------------------------------- sklearn
# scikit-learn's estimator checks run over every public estimator in tests/test_sklearn_compat.py


@pytest.mark.parametrize("cls", BASELINES)
def test_clone_and_params(cls):
    est = cls(alpha=0.123, max_iter=77)
    c = clone(est)
    assert c.get_params() == est.get_params()
    assert c.alpha == 0.123 and c.max_iter == 77
    assert not hasattr(c, "coef_")


# ----------------------------------------------------------------------------- persistence


def _fit_any(cls, regression_lists, classification_lists):
    Xs, ys = classification_lists if cls._is_classifier else regression_lists
    return cls(alpha=0.05).fit(Xs, ys), Xs


@pytest.mark.parametrize("cls", BASELINES)
def test_pickle_and_joblib_round_trip_predict_identically(cls, regression_lists,
                                                          classification_lists):
    est, Xs = _fit_any(cls, regression_lists, classification_lists)
    buf = io.BytesIO()
    joblib.dump(est, buf)
    buf.seek(0)
    for loaded in (pickle.loads(pickle.dumps(est)), joblib.load(buf)):
        for a, b in zip(est.predict(Xs), loaded.predict(Xs), strict=True):
            np.testing.assert_array_equal(a, b)
        if cls._is_classifier:
            for a, b in zip(est.decision_function(Xs), loaded.decision_function(Xs),
                            strict=True):
                np.testing.assert_array_equal(a, b)
            for a, b in zip(est.predict_proba(Xs), loaded.predict_proba(Xs), strict=True):
                np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(est.coef_, loaded.coef_)
        np.testing.assert_array_equal(est.tasks_, loaded.tasks_)


# ----------------------------------------------------------------------------- classifiers


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_predict_proba_and_decision_function(cls, classification_lists, datagen):
    Xs, ys = classification_lists
    labels = np.array(["ham", "spam"])
    ys_str = [labels[y] for y in ys]
    X, y, task = datagen.lists_to_long(Xs, ys_str, labels=["p", "q", "r"])
    est = cls(alpha=0.02).fit(X, y, task=task)
    np.testing.assert_array_equal(est.classes_, labels)
    dec = est.decision_function(X, task=task)
    proba = est.predict_proba(X, task=task)
    assert dec.shape == (len(y),) and proba.shape == (len(y), 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-15)
    np.testing.assert_allclose(proba[:, 1], expit(dec), atol=1e-15)
    assert np.all((proba >= 0) & (proba <= 1))
    pred = est.predict(X, task=task)
    np.testing.assert_array_equal(pred, np.where(dec > 0, "spam", "ham"))
    np.testing.assert_array_equal(pred, labels[proba.argmax(axis=1)])
    assert est.score(X, y, task=task) == pytest.approx(accuracy_score(y, pred))
    if cls is not PooledClassifier:  # one model for tasks with different weights is weak
        assert est.score(X, y, task=task) > 0.7
    # decision function is x^T w_t + b_t for the row's task
    rows = [list(est.tasks_).index(t) for t in task]
    np.testing.assert_allclose(dec, np.einsum("ij,ij->i", X, est.coef_[rows])
                               + est.intercept_[rows], atol=1e-12)


def test_classifier_shared_design_outputs(datagen):
    X, Y = datagen.shared(n=50, d=5, m=3, seed=4)
    Yc = (Y > np.median(Y, axis=0)).astype(int)
    est = TraceNormClassifier(alpha=0.01).fit(X, Yc)
    dec = est.decision_function(X)
    assert dec.shape == Yc.shape
    np.testing.assert_allclose(est.predict_proba(X), expit(dec))
    np.testing.assert_array_equal(est.predict(X), (dec > 0).astype(int))
    assert est.score(X, Yc) == pytest.approx(np.mean(est.predict(X) == Yc))


def test_squared_hinge_classifier_has_no_predict_proba(classification_lists):
    Xs, ys = classification_lists
    est = L21Classifier(alpha=0.01, loss="squared_hinge").fit(Xs, ys)
    assert not hasattr(est, "predict_proba")
    pred = est.predict(Xs)
    assert np.mean(np.concatenate(pred) == np.concatenate(ys)) > 0.7
    with pytest.raises(InvalidParameterError, match="'loss' parameter of L21Classifier must be"):
        L21Classifier(loss="hinge").fit(Xs, ys)


# ----------------------------------------------------------------------------- scores


@pytest.mark.parametrize("cls", REGRESSORS)
def test_regressor_score_is_pooled_r2(cls, regression_lists, datagen):
    Xs, ys = regression_lists
    est = cls(alpha=0.01).fit(Xs, ys)
    pred = est.predict(Xs)
    assert est.score(Xs, ys) == pytest.approx(r2_score(np.concatenate(ys), np.concatenate(pred)))
    X, y, task = datagen.lists_to_long(Xs, ys)
    assert est.score(X, y, task=task) == pytest.approx(r2_score(y, est.predict(X, task=task)))


# ----------------------------------------------------------------------------- intercepts


@pytest.mark.parametrize("cls", [c for c in REGRESSORS if c is not PooledRegressor])
def test_huge_alpha_leaves_only_the_task_means(cls, regression_lists):
    """Intercepts are not penalized: alpha -> inf gives W = 0 and b_t = mean(y_t)."""
    Xs, ys = regression_lists
    est = cls(alpha=1e10).fit(Xs, ys)
    assert np.abs(est.coef_).max() <= 1e-8
    np.testing.assert_allclose(est.intercept_, [np.mean(y) for y in ys], atol=1e-7)


def test_huge_alpha_pooled_regressor_gives_the_pooled_mean(regression_lists):
    Xs, ys = regression_lists
    est = PooledRegressor(alpha=1e10).fit(Xs, ys)
    assert np.abs(est.coef_).max() <= 1e-8
    np.testing.assert_allclose(est.intercept_, np.mean(np.concatenate(ys)), atol=1e-7)


@pytest.mark.parametrize("cls", [c for c in CLASSIFIERS if c is not PooledClassifier])
def test_huge_alpha_classifier_gives_the_task_log_odds(cls, classification_lists):
    Xs, ys = classification_lists
    est = cls(alpha=1e10, tol=1e-12).fit(Xs, ys)
    assert np.abs(est.coef_).max() <= 1e-8
    p = np.array([np.mean(y) for y in ys])
    np.testing.assert_allclose(est.intercept_, np.log(p / (1 - p)), atol=1e-5)


@pytest.mark.parametrize("cls", REGRESSORS)
def test_shifting_each_task_shifts_only_its_intercept(cls, regression_lists):
    """An unpenalized intercept absorbs any per-task offset of y; W does not move.

    The pooled model has one intercept for all rows: only a common offset is absorbed.
    """
    Xs, ys = regression_lists
    shifts = np.array([30.0] * 3 if cls is PooledRegressor else [100.0, -40.0, 7.5])
    base = cls(alpha=0.05, tol=1e-10, max_iter=20000).fit(Xs, ys)
    moved = cls(alpha=0.05, tol=1e-10, max_iter=20000).fit(
        Xs, [y + c for y, c in zip(ys, shifts, strict=True)])
    np.testing.assert_allclose(moved.coef_, base.coef_, atol=1e-6)
    np.testing.assert_allclose(moved.intercept_, base.intercept_ + shifts, atol=1e-6)


def test_fit_intercept_false_fits_through_the_origin(regression_lists):
    Xs, ys = regression_lists
    est = IndependentRidgeRegressor(alpha=0.1, fit_intercept=False).fit(Xs, ys)
    np.testing.assert_array_equal(est.intercept_, 0.0)
    for t, (X, y) in enumerate(zip(Xs, ys, strict=True)):
        ref = Ridge(alpha=0.1 * len(y), fit_intercept=False).fit(X, y)
        np.testing.assert_allclose(est.coef_[t], ref.coef_, atol=1e-10)


# ----------------------------------------------------------------------------- vs sklearn


@pytest.mark.parametrize("layout", ["lists", "csr-lists", "long", "shared"])
def test_independent_ridge_equals_sklearn_ridge_per_task(layout, regression_lists,
                                                         shared_regression, datagen):
    """alpha_sklearn = alpha * n_t, to 1e-8 (closed form on centred Gram matrices)."""
    if layout == "shared":
        X, Y = shared_regression
        Xs, ys = [X] * Y.shape[1], [Y[:, t] for t in range(Y.shape[1])]
        est = IndependentRidgeRegressor(alpha=0.3).fit(X, Y)
        order = np.arange(len(ys))
    else:
        Xs, ys = regression_lists
        if layout.endswith("lists"):
            to = sp.csr_matrix if layout == "csr-lists" else np.asarray
            est = IndependentRidgeRegressor(alpha=0.3).fit([to(X) for X in Xs], ys)
            order = np.arange(3)
        else:
            X, y, task = datagen.lists_to_long(Xs, ys, labels=["c", "a", "b"])
            est = IndependentRidgeRegressor(alpha=0.3).fit(X, y, task=task)
            order = [list(est.tasks_).index(lab) for lab in ["c", "a", "b"]]
    for t, (X, y) in enumerate(zip(Xs, ys, strict=True)):
        ref = Ridge(alpha=0.3 * len(y)).fit(X, y)
        np.testing.assert_allclose(est.coef_[order[t]], ref.coef_, atol=1e-8)
        np.testing.assert_allclose(est.intercept_[order[t]], ref.intercept_, atol=1e-8)


def test_independent_lasso_equals_sklearn_lasso_per_task(regression_lists, precise):
    Xs, ys = regression_lists
    n_zero = 0
    # tight tolerances: 1e-8; the default tol=1e-4 (relative optimality measure, the same
    # meaning for both solvers) leaves coefficients of size ~3 about 1e-4 to 1e-3 from the
    # optimum, and the intercepts (through the feature means) a few 1e-3
    for cls, kw, atol in [(precise(IndependentLassoRegressor), {}, 1e-8),
                          (IndependentLassoRegressor, {"solver": "bcd", "tol": 1e-10}, 1e-8),
                          (IndependentLassoRegressor, {"solver": "fista", "tol": 1e-10}, 1e-8),
                          (IndependentLassoRegressor, {"solver": "bcd"}, 5e-3),
                          (IndependentLassoRegressor, {"solver": "fista"}, 5e-3)]:
        est = cls(alpha=0.5, **kw).fit(Xs, ys)
        assert est.optimality_ <= est.tol
        for t, (X, y) in enumerate(zip(Xs, ys, strict=True)):
            ref = Lasso(alpha=0.5, tol=1e-14, max_iter=100_000).fit(X, y)
            n_zero += np.sum(ref.coef_ == 0)
            np.testing.assert_allclose(est.coef_[t], ref.coef_, atol=atol)
            np.testing.assert_allclose(est.intercept_[t], ref.intercept_, atol=atol)
    assert n_zero > 0  # the l1 term is active


def test_l21_on_shared_design_equals_sklearn_multitask_lasso(shared_regression):
    X, Y = shared_regression
    alpha = 0.3 * L21Regressor().alpha_max(X, Y)
    ref = MultiTaskLasso(alpha=alpha, tol=1e-12, max_iter=100_000).fit(X, Y)
    assert np.any(np.all(ref.coef_ == 0, axis=0))  # some features dropped
    for kw, atol in [({"tol": 1e-10, "solver": "fista"}, 1e-8),
                     ({"tol": 1e-10, "solver": "bcd"}, 1e-8),
                     ({"solver": "bcd"}, 1e-3), ({}, 1e-3),
                     ({"solver": "fista"}, 1e-3)]:  # default tol=1e-4: see above
        est = L21Regressor(alpha=alpha, **kw).fit(X, Y)
        assert est.optimality_ <= est.tol
        np.testing.assert_allclose(est.coef_, ref.coef_, atol=atol)
        np.testing.assert_allclose(est.intercept_, ref.intercept_, atol=atol)
    zero_rows = np.all(ref.coef_ == 0, axis=0)
    np.testing.assert_array_equal(est.coef_[:, zero_rows], 0.0)


@pytest.mark.parametrize("layout", ["lists", "shared"])
def test_pooled_regressor_equals_sklearn_ridge_on_all_rows(layout, regression_lists,
                                                           shared_regression):
    if layout == "lists":
        Xs, ys = regression_lists
    else:
        X, Y = shared_regression
        Xs, ys = [X] * Y.shape[1], [Y[:, t] for t in range(Y.shape[1])]
    X_all, y_all = np.vstack(Xs), np.concatenate(ys)
    fit_on = (Xs, ys) if layout == "lists" else (X, Y)
    est = PooledRegressor(alpha=0.02, tol=1e-13, max_iter=20000).fit(*fit_on)
    ref = Ridge(alpha=0.02 * len(y_all)).fit(X_all, y_all)
    for t in range(len(Xs)):
        np.testing.assert_allclose(est.coef_[t], ref.coef_, atol=1e-7)
        np.testing.assert_allclose(est.intercept_[t], ref.intercept_, atol=1e-7)


def test_independent_ridge_classifier_close_to_sklearn_logistic(classification_lists):
    Xs, ys = classification_lists
    alpha = 0.02
    est = IndependentRidgeClassifier(alpha=alpha, tol=1e-12, max_iter=20000).fit(Xs, ys)
    for t, (X, y) in enumerate(zip(Xs, ys, strict=True)):
        ref = LogisticRegression(C=1.0 / (alpha * len(y)), tol=1e-12, max_iter=10_000).fit(X, y)
        np.testing.assert_allclose(est.coef_[t], ref.coef_[0], atol=1e-5)
        np.testing.assert_allclose(est.intercept_[t], ref.intercept_[0], atol=1e-5)


def test_pooled_classifier_close_to_sklearn_logistic_on_all_rows(classification_lists):
    Xs, ys = classification_lists
    alpha = 0.01
    X_all, y_all = np.vstack(Xs), np.concatenate(ys)
    est = PooledClassifier(alpha=alpha, tol=1e-12, max_iter=20000).fit(Xs, ys)
    ref = LogisticRegression(C=1.0 / (alpha * len(y_all)), tol=1e-12,
                             max_iter=10_000).fit(X_all, y_all)
    for t in range(len(Xs)):
        np.testing.assert_allclose(est.coef_[t], ref.coef_[0], atol=1e-5)
        np.testing.assert_allclose(est.intercept_[t], ref.intercept_[0], atol=1e-5)


# ----------------------------------------------------------------------------- generic


@pytest.mark.parametrize("penalty, preset", [("trace", TraceNormRegressor),
                                             ("l21", L21Regressor),
                                             ("l1", IndependentLassoRegressor)])
def test_presets_equal_the_generic_model(penalty, preset, regression_lists):
    Xs, ys = regression_lists
    a = MultiTaskRegressor(penalty=penalty, alpha=0.1).fit(Xs, ys)
    b = preset(alpha=0.1).fit(Xs, ys)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)


def test_solver_choice_is_validated(regression_lists):
    with pytest.raises(ValueError, match="'solver' parameter of L21Regressor must be"):
        L21Regressor(solver="lbfgs").fit(*regression_lists)
    with pytest.raises(ValueError, match="Solver 'bcd' cannot solve this model: the trace "
                                         "penalty offers no 'row_prox'"):
        TraceNormRegressor(solver="bcd").fit(*regression_lists)
    with pytest.raises(ValueError, match="'exact'.*not a pure ridge"):
        L21Regressor(solver="exact").fit(*regression_lists)


def test_generic_models_reject_unknown_penalty(regression_lists, classification_lists):
    with pytest.raises(InvalidParameterError, match="'penalty' parameter of MultiTaskRegressor"
                                                    ".*Got 'l0' instead"):
        MultiTaskRegressor(penalty="l0").fit(*regression_lists)
    with pytest.raises(InvalidParameterError, match="'penalty' parameter of MultiTaskClassifier"
                                                    ".*Got 'l0' instead"):
        MultiTaskClassifier(penalty="l0").fit(*classification_lists)


def test_trace_norm_model_is_low_rank_and_l21_is_row_sparse(regression_lists):
    Xs, ys = regression_lists
    tr = TraceNormRegressor(alpha=0.5 * TraceNormRegressor().alpha_max(Xs, ys)).fit(Xs, ys)
    s = np.linalg.svd(tr.coef_, compute_uv=False)
    assert np.sum(s > 1e-8 * s[0]) < min(tr.coef_.shape)
    l21 = L21Regressor(alpha=0.5 * L21Regressor().alpha_max(Xs, ys)).fit(Xs, ys)
    zero_features = np.all(l21.coef_ == 0, axis=0)
    assert zero_features.any() and not zero_features.all()
    assert IndependentRidgeRegressor().alpha_max(Xs, ys) == np.inf
    assert PooledRegressor().alpha_max(Xs, ys) == np.inf


def test_warm_start_reuses_the_previous_solution(regression_lists):
    Xs, ys = regression_lists
    est = TraceNormRegressor(alpha=0.1, tol=1e-9, warm_start=True).fit(Xs, ys)
    n_cold, coef = est.n_iter_, est.coef_.copy()
    est.fit(Xs, ys)
    assert est.n_iter_ <= 10 < n_cold
    # a few steps from a point certified to 1e-9 in objective: weights within about its root
    np.testing.assert_allclose(est.coef_, coef, atol=1e-4 * np.abs(coef).max())
    cold = TraceNormRegressor(alpha=0.1, tol=1e-9).fit(Xs, ys)
    cold.fit(Xs, ys)
    assert cold.n_iter_ == n_cold


def test_attributes_and_convergence_warning(regression_lists):
    Xs, ys = regression_lists
    with pytest.warns(ConvergenceWarning):
        est = TraceNormRegressor(alpha=0.01, max_iter=2, tol=1e-12).fit(Xs, ys)
    assert not est.converged_ and est.n_iter_ == 2
    assert est.coef_.shape == (3, Xs[0].shape[1]) and est.intercept_.shape == (3,)
    assert est.n_features_in_ == Xs[0].shape[1]
    np.testing.assert_array_equal(est.tasks_, [0, 1, 2])
    # the history has at most one value per iteration: accelerated gradient records every
    # one, ADMM (which solver="auto" takes for the trace norm with the squared loss since it
    # was measured faster there, docs/scale.md) its checks and its last iterate
    assert 1 <= len(est.objective_) <= est.n_iter_
    assert np.all(np.isfinite(est.objective_))
    for bad in ({"max_iter": 0}, {"tol": 0.0}, {"tol": -1.0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            TraceNormRegressor(**bad).fit(Xs, ys)


@pytest.mark.parametrize("cls", [c for c in BASELINES if c not in (PooledRegressor,
                                                                   PooledClassifier)])
def test_fitted_solver_attributes(cls, regression_lists, classification_lists):
    """optimality_ (<= tol when converged, recomputed from the solver's variables), solver_
    (one of the model's solvers), coef_variable_ / intercept_variable_ (the solver's variables:
    W itself here; an intercept variable only for losses that keep one)."""
    from multitask.data import as_multitask_data
    from multitask.solvers import optimality

    Xs, ys = classification_lists if cls._is_classifier else regression_lists
    est = cls(alpha=0.05).fit(Xs, ys)
    assert est.converged_ and est.optimality_ <= est.tol == 1e-4
    assert est.solver_.name in cls._accepted_solvers() and est.solver_.tol == est.tol
    np.testing.assert_array_equal(est.coef_variable_, est.coef_.T)
    if cls._is_classifier:
        assert est.intercept_variable_.shape == (len(Xs),)
    else:
        assert est.intercept_variable_ is None
    data, _ = as_multitask_data(Xs, ys, classification=cls._is_classifier)
    datafit = est._make_datafit(data)
    penalty = est._make_penalty(datafit)
    recomputed = optimality(datafit, penalty, est.coef_variable_, est.intercept_variable_,
                            target=est.tol)
    if est.solver_.name in ("admm", "task_cd"):
        # ADMM's certificate also builds a dual point from its W-step iterate, which the
        # fitted attributes do not keep (solvers.base.finish's dual_weights): the gap from the
        # variables alone is another certificate of the same point, to the same tolerance.
        # solver="auto" takes ADMM for the trace norm with the squared loss since it was
        # measured faster there (docs/scale.md, "The automatic solver choice, measured").
        # task_cd's dual point scales each task's residual on its own (solvers/task_cd.py):
        # the certificate from the variables alone scales them all by one factor.
        assert recomputed <= est.tol
    else:
        assert recomputed == pytest.approx(est.optimality_, rel=1e-6, abs=1e-12)
