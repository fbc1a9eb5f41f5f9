"""``MultiTaskCV`` learns new tasks and predicts unknown ones as its refitted model does:
``fit_new_tasks`` and ``predict(..., unknown_tasks=...)`` delegate to ``best_estimator_``."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

from multitask import L21Classifier, L21Regressor, MultiTaskCV, MultiTaskKernelClassifier
from multitask.persistence import load_model, save_model


def _data(seed=0):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=4)
    X = rng.normal(size=(90, 4))
    task = np.repeat([0, 1, 2], 30)
    y = X @ w + 0.3 * rng.normal(size=90)
    Xn = rng.normal(size=(12, 4))
    tn = np.repeat([7, 8], 6)
    yn = Xn @ w + 0.3 * rng.normal(size=12)
    return X, y, task, Xn, yn, tn


@pytest.fixture(scope="module")
def search():
    X, y, task, *_ = _data()
    return MultiTaskCV(L21Regressor(), n_alphas=4).fit(X, y, task)


def test_the_unknown_task_hint_points_to_keywords_that_work(search):
    """The error names fit_new_tasks and unknown_tasks='population', which the search refused
    before (no fit_new_tasks; predict took no unknown_tasks)."""
    cv = copy.deepcopy(search)
    _, _, _, Xn, yn, tn = _data()
    with pytest.raises(ValueError, match="unknown_tasks='population'") as err:
        cv.predict(Xn, tn)
    assert "fit_new_tasks" in str(err.value)
    expected = cv.best_estimator_.predict(Xn, tn, unknown_tasks="population")
    np.testing.assert_array_equal(cv.predict(Xn, tn, unknown_tasks="population"), expected)
    cv.fit_new_tasks(Xn, yn, tn)
    assert list(cv.tasks_) == [0, 1, 2, 7, 8]
    assert np.all(np.isfinite(cv.predict(Xn, tn)))


def test_fit_new_tasks_matches_the_refitted_model_and_keeps_the_search(search):
    X, y, task, Xn, yn, tn = _data()
    cv = copy.deepcopy(search)
    model = copy.deepcopy(search.best_estimator_).fit_new_tasks(Xn, yn, tn)
    record = (dict(cv.best_params_), cv.best_score_, cv.scores_.copy())
    fitted_rows = cv.predict(X, task)
    assert cv.fit_new_tasks(Xn, yn, tn) is cv
    np.testing.assert_array_equal(cv.coef_, model.coef_)
    np.testing.assert_array_equal(cv.predict(Xn, tn), model.predict(Xn, tn))
    np.testing.assert_array_equal(cv.predict(X, task), fitted_rows)  # fitted tasks unchanged
    assert (cv.best_params_, cv.best_score_) == record[:2]
    np.testing.assert_array_equal(cv.scores_, record[2])


def test_a_failed_fit_new_tasks_leaves_the_search_as_it_was(search):
    cv = copy.deepcopy(search)
    before = cv.best_estimator_
    coef = cv.coef_.copy()
    X, y, task, *_ = _data()
    with pytest.raises(ValueError, match="already a task"):
        cv.fit_new_tasks(X[:30], y[:30], task[:30])
    assert cv.best_estimator_ is before
    np.testing.assert_array_equal(cv.coef_, coef)


def test_a_search_with_new_tasks_saves_and_loads(search, tmp_path):
    _, _, _, Xn, yn, tn = _data()
    cv = copy.deepcopy(search).fit_new_tasks(Xn, yn, tn)
    save_model(cv, tmp_path / "cv.skops")
    back = load_model(tmp_path / "cv.skops")
    np.testing.assert_array_equal(back.predict(Xn, tn), cv.predict(Xn, tn))


def test_classifier_search_delegates_every_method():
    X, y, task, Xn, yn, tn = _data(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cv = MultiTaskCV(L21Classifier(), n_alphas=3).fit(X, y > 0, task)
    scores = cv.decision_function(Xn, tn, unknown_tasks="population")
    proba = cv.predict_proba(Xn, tn, unknown_tasks="population")
    np.testing.assert_array_equal(scores, cv.best_estimator_.decision_function(
        Xn, tn, unknown_tasks="population"))
    assert proba.shape == (12, 2)
    cv.fit_new_tasks(Xn, yn > 0, tn)
    assert cv.predict(Xn, tn).dtype == bool


def test_a_model_without_a_population_model_says_so():
    """The kernel model has no linear task weights: both delegations end in its own error."""
    X, y, task, Xn, yn, tn = _data(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cv = MultiTaskCV(MultiTaskKernelClassifier(), param_grid={"alpha": [0.1, 1.0]}).fit(
            X, y > 0, task)
    with pytest.raises(NotImplementedError, match="unknown_tasks='population'"):
        cv.predict(Xn, tn, unknown_tasks="population")
    with pytest.raises(NotImplementedError, match="fit_new_tasks"):
        cv.fit_new_tasks(Xn, yn > 0, tn)
