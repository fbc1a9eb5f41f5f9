"""Successive halving in MultiTaskCV: the schedule, who survives, and what the search reports.

Halving takes the folds in rounds for a grid with several outer points (a second parameter):
every candidate on the first fold; the candidates among the better half of all of them and of
the better half of the outer points on the second; the same cut of those on the rest. The first
round screens: its fits take three times the estimator's ``tol``. The other fits of a candidate
on a fold are the same with and without halving (a path is always fitted from its strongest
value), so the scores of the candidates scored on every fold are the whole grid's there, and
the choice is the best of them.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from multitask import L21Regressor, MultiTaskCV
from multitask.model_selection import cross_validate_grid
from multitask.model_selection._halving import (
    HALVING_AFTER,
    SCREENING_TOL_FACTOR,
    fold_rounds,
    round_jobs,
    screening_settings,
    survivors,
    warm_start_settings,
)

ALPHAS = [1.0, 0.3, 0.1, 0.03, 0.01]
GRID = {"alpha": ALPHAS, "alpha_l2": [0.0, 0.1, 1.0, 10.0]}  # alpha_l2: an outer parameter


def _fit(X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return MultiTaskCV(L21Regressor(), **kw).fit(X, y)


@pytest.fixture
def long_data(datagen):
    Xs, ys = datagen.regression_lists(sizes=(30, 36, 24), d=5)
    return Xs, ys


def test_fold_rounds():
    assert fold_rounds(5, 1) == [5]  # one outer point: no halving
    assert fold_rounds(5, 3) == [*HALVING_AFTER, 5]
    assert fold_rounds(8, 9) == [1, 2, 8]
    assert fold_rounds(2, 3) == [1, 2]


def test_survivors_keeps_the_better_half_nan_last_ties_first():
    partial = np.array([0.1, np.nan, 0.5, 0.5, -1.0, 0.2])
    alive = np.array([True, True, True, True, True, False])
    keep = survivors(partial, alive)
    assert keep.tolist() == [True, False, True, True, False, False]  # ceil(5 / 2) = 3
    keep = survivors(np.array([0.5, 0.5, 0.5]), np.ones(3, dtype=bool))
    assert keep.tolist() == [True, True, False]
    assert not survivors(partial, np.zeros(6, dtype=bool)).any()


def test_survivors_with_outer_points_keep_the_better_half_of_the_points():
    # 3 outer points of 4 candidates; point 1 holds the best candidate, point 2 the second
    partial = np.array([0.1, 0.2, 0.3, 0.4, 0.9, 0.5, 0.0, 0.0, 0.8, 0.7, 0.6, np.nan])
    outer = np.repeat([0, 1, 2], 4)
    alive = np.ones(12, dtype=bool)
    plain = survivors(partial, alive)
    keep = survivors(partial, alive, outer=outer)
    # the better half of the candidates (6), then only those of the 2 better points (1, 2)
    assert plain.sum() == 6 and plain[:4].any()
    assert keep.tolist() == [False] * 4 + [True, True, False, False, True, True, True, False]
    # a second cut leaves the candidates of one point, the best candidate among them
    again = survivors(partial, keep, outer=outer)
    assert set(outer[again]) == {1} and again[4]
    # a point whose alive candidates all scored NaN ranks last
    nan_point = np.where(outer == 1, np.nan, partial)
    assert not survivors(nan_point, alive, outer=outer)[outer == 1].any()


def test_round_jobs_fit_each_path_down_to_its_last_survivor():
    chunks = [[0, 1, 2], [3, 4, 5]]
    alive = np.array([False, True, False, False, False, False])
    cands = [{"a": i} for i in range(6)]
    jobs = round_jobs(chunks, alive, [2, 3], cands)
    assert [(k, c) for k, c, _, _ in jobs] == [(2, [0, 1]), (3, [0, 1])]
    assert jobs[0][2] == [{"a": 0}, {"a": 1}]


def test_round_jobs_fit_the_candidates_left_behind_with_the_warm_start_settings():
    chunks = [[0, 1, 2, 3]]
    alive = np.array([False, True, False, True])
    cands = [{"a": i} for i in range(4)]
    jobs = round_jobs(chunks, alive, [1], cands, ({"n_stages": 1}, {"n_stages": 20}))
    assert len(jobs) == 1
    k, part, points, left = jobs[0]
    assert (k, part, left) == (1, [0, 1, 2, 3], (0, 2))
    assert points == [{"a": 0, "n_stages": 1}, {"n_stages": 20, "a": 1},
                      {"a": 2, "n_stages": 1}, {"n_stages": 20, "a": 3}]
    # a candidate's own value of a setting wins over the estimator's
    cands[1]["n_stages"] = 5
    assert round_jobs(chunks, alive, [1], cands, ({"n_stages": 1}, {"n_stages": 20}))[0][2][1] \
        == {"n_stages": 5, "a": 1}
    # without settings every candidate is fitted as it is, and scored
    assert round_jobs(chunks, alive, [1], cands)[0][3] == ()


def test_round_jobs_screen_the_candidates_in_the_running():
    chunks = [[0, 1, 2]]
    alive = np.array([True, False, True])
    cands = [{"a": i} for i in range(3)]
    points = round_jobs(chunks, alive, [0], cands, None, {"tol": 3e-4})[0][2]
    assert points == [{"a": 0, "tol": 3e-4}, {"a": 1}, {"a": 2, "tol": 3e-4}]
    # over the warm-start settings' base values
    points = round_jobs(chunks, alive, [0], cands, ({"tol": 1e-2}, {"tol": 1e-4}),
                        {"tol": 3e-4})[0][2]
    assert points == [{"tol": 3e-4, "a": 0}, {"a": 1, "tol": 1e-2}, {"tol": 3e-4, "a": 2}]


def test_screening_settings_scale_the_estimator_tol():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    assert screening_settings(L21Regressor(tol=1e-6), [{"alpha": 1.0}]) == {
        "tol": SCREENING_TOL_FACTOR * 1e-6}
    # a grid that searches tol itself, a tolerance too loose to screen, no tolerance at all
    assert screening_settings(L21Regressor(), [{"alpha": 1.0, "tol": 1e-3}]) is None
    assert screening_settings(L21Regressor(tol=0.01), [{"alpha": 1.0}]) is None
    assert screening_settings(make_pipeline(StandardScaler(), L21Regressor()), [{}]) is None


def test_warm_start_settings_are_the_estimator_declaration_with_its_own_values():
    from multitask import CappedTraceRegressor, SparseLowRankRegressor

    assert warm_start_settings(CappedTraceRegressor(n_stages=7)) == ({"n_stages": 1},
                                                                     {"n_stages": 7})
    # a looser tolerance, never a tighter one than the model's
    assert warm_start_settings(SparseLowRankRegressor(tol=1e-6)) == ({"tol": 1e-2},
                                                                     {"tol": 1e-6})
    assert warm_start_settings(SparseLowRankRegressor(tol=0.1)) == ({"tol": 0.1},
                                                                    {"tol": 0.1})
    assert warm_start_settings(L21Regressor()) is None


@pytest.mark.parametrize("kind", ["Regressor", "Classifier"])
def test_capped_trace_cv_fits_the_candidates_left_behind_for_the_warm_starts_only(
        datagen, monkeypatch, kind):
    """The capped trace norm's candidates that halving left behind are fitted with one stage
    (the warm start of the next fit): the candidates still in the running get the same scores
    as when every candidate of a path is fitted whole, and the same choice."""
    import multitask
    from multitask.estimators.capped_trace import _CappedTrace

    if kind == "Regressor":
        Xs, ys = datagen.regression_lists(sizes=(30,) * 8, d=6, seed=3)
        grid = {"alpha": np.geomspace(3.0, 0.003, 8), "tau": [0.3, 1.0, 3.0]}
    else:  # a problem whose survivors after the second fold lie apart on a path
        Xs, ys = datagen.classification_lists(sizes=(30,) * 8, d=6, seed=2)
        grid = {"alpha": np.geomspace(30.0, 0.003, 8), "tau": [0.3, 1.0, 3.0]}
    model = getattr(multitask, "CappedTrace" + kind)()

    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return MultiTaskCV(model, param_grid=grid, widen=0).fit(Xs, ys)

    new = run()
    monkeypatch.setattr(_CappedTrace, "_warm_start_settings", lambda self: None)
    old = run()
    k = new.n_splits_
    fitted_new = new.cv_results_["n_splits_fitted"]
    fitted_old = old.cv_results_["n_splits_fitted"]
    assert np.all(fitted_new <= fitted_old) and np.any(fitted_new < fitted_old)
    # every fit of a candidate in the running is the same: its scores and the choice
    ran = ~np.isnan(new.scores_)
    np.testing.assert_array_equal(new.scores_[ran], old.scores_[ran])
    assert np.all(np.isnan(new.scores_[~ran & ~np.isnan(old.scores_)]))
    complete = fitted_new == k
    np.testing.assert_array_equal(new.cv_results_["mean_test_score"][complete],
                                  old.cv_results_["mean_test_score"][complete])
    assert new.best_params_ == old.best_params_


@pytest.mark.parametrize("layout", ["lists", "shared"])
def test_halving_scores_the_same_fits_and_chooses_among_the_complete(layout, long_data,
                                                                      datagen):
    if layout == "lists":
        X, y = long_data
        extra = {"cv": 4}
    else:  # a shared design of 10 rows: leave-one-out, pooled scores
        X, y = datagen.shared(n=10, d=5, m=6)
        extra = {}
    full = _fit(X, y, param_grid=GRID, halving=False, widen=0, **extra)
    half = _fit(X, y, param_grid=GRID, widen=0, **extra)
    # the whole grid at the first round's screening tolerance
    screened = _fit(X, y, param_grid={**GRID, "tol": [L21Regressor().tol * SCREENING_TOL_FACTOR]},
                    halving=False, widen=0, **extra)
    k = full.n_splits_
    n_cand = len(GRID["alpha"]) * len(GRID["alpha_l2"])
    assert full.cv_results_["n_splits_fitted"].tolist() == [k] * n_cand
    fitted = half.cv_results_["n_splits_fitted"]
    done = fitted == k
    # every candidate on the first fold; on the second, candidates of half of the 4 outer
    # points (alpha_l2 values); on all folds, candidates of one outer point
    l2 = np.array([c["alpha_l2"] for c in full.cv_results_["params"]])
    assert fitted.min() >= 1
    assert len(set(l2[fitted >= 2])) == 2 and len(set(l2[done])) == 1
    assert 1 <= done.sum() <= len(ALPHAS) and not done.all()
    # the same fits: the first fold's scores those of the screening tolerance, the others of
    # a complete candidate those of the estimator's
    np.testing.assert_array_equal(half.scores_[0], screened.scores_[0])
    assert not np.array_equal(half.scores_[0], full.scores_[0])
    np.testing.assert_array_equal(half.scores_[1:, done], full.scores_[1:, done])
    mean_half = half.cv_results_["mean_test_score"]
    if layout == "lists":  # the mean of the folds' scores
        np.testing.assert_allclose(mean_half[done], np.mean(half.scores_[:, done], axis=0),
                                   rtol=1e-14)
    np.testing.assert_allclose(mean_half[done], full.cv_results_["mean_test_score"][done],
                               rtol=1e-3)
    assert np.all(np.isnan(mean_half[~done]))
    # a candidate left behind: NaN on the folds it did not reach, ranked after the others
    left = np.flatnonzero(~done)
    assert np.all(np.isnan(half.scores_[fitted[left[0]]:, left[0]]))
    assert half.cv_results_["rank_test_score"][~done].min() > done.sum()
    # the choice is the best complete candidate; its score is at most the whole grid's best,
    # but for the first fold's screening
    assert done[half.best_index_]
    assert half.best_score_ == np.nanmax(mean_half)
    assert half.best_score_ <= full.best_score_ + 1e-3 * abs(full.best_score_)
    np.testing.assert_allclose(half.predict(X) if layout == "shared" else
                               np.concatenate(half.predict(X)),
                               half.best_estimator_.predict(X) if layout == "shared" else
                               np.concatenate(half.best_estimator_.predict(X)))


def test_one_parameter_grid_is_searched_whole(long_data):
    X, y = long_data
    grid = {"alpha": ALPHAS}
    a = _fit(X, y, param_grid=grid, cv=3, widen=0)
    b = _fit(X, y, param_grid=grid, cv=3, widen=0, halving=False)
    np.testing.assert_array_equal(a.scores_, b.scores_)
    assert a.cv_results_["n_splits_fitted"].tolist() == [3] * len(ALPHAS)


def test_halving_is_deterministic_and_reports_progress(long_data):
    X, y = long_data
    calls = []
    a = _fit(X, y, param_grid=GRID, cv=4, callback=lambda d, t: calls.append((d, t)))
    b = _fit(X, y, param_grid=GRID, cv=4)
    np.testing.assert_array_equal(a.scores_, b.scores_)
    assert a.best_params_ == b.best_params_
    assert calls and calls[-1][0] == calls[-1][1]
    assert [d for d, _ in calls] == list(range(1, len(calls) + 1))


def test_widening_after_halving_scores_the_new_values_on_every_fold(long_data, monkeypatch):
    from multitask.model_selection import _engine

    batches = []
    run = _engine._Runner.run

    def recorded(self, jobs):
        batches.append(list(jobs))
        return run(self, jobs)

    monkeypatch.setattr(_engine._Runner, "run", recorded)
    X, y = long_data
    grid = {"alpha": [10.0, 5.0, 2.0], "alpha_l2": [0.0, 1.0, 100.0]}  # best at the weak end
    cv = _fit(X, y, param_grid=grid, cv=3, widen=1)
    assert cv.n_widened_ == 1
    assert cv.cv_results_["n_splits_fitted"][-3:].tolist() == [3, 3, 3]
    assert np.all(np.isfinite(cv.cv_results_["mean_test_score"][-3:]))
    # the first fold screens, in the first round and in the widening alike; no other fit does
    screen = L21Regressor().tol * SCREENING_TOL_FACTOR
    first_round, widening = batches[0], batches[-1]
    for jobs in (first_round, widening):
        for k, _, points, _ in jobs:
            assert all(p.get("tol") == (screen if k == 0 else None) for p in points)
    assert {k for k, *_ in first_round} == {0} and {k for k, *_ in widening} == {0, 1, 2}
    assert all("tol" not in p for jobs in batches[1:-1] for _, _, points, _ in jobs
               for p in points)


def test_halving_must_be_a_boolean(long_data):
    X, y = long_data
    with pytest.raises(ValueError, match="halving"):
        MultiTaskCV(L21Regressor(), halving="yes").fit(X, y)
    with pytest.raises(ValueError, match="halving must be True or False"):
        cross_validate_grid(L21Regressor(), X, y, halving=1)


def test_widening_stops_where_the_score_has_flattened():
    """A path whose best value is its weakest is continued (3 more values per fold) unless
    its mean score beats the neighbour's by less than WIDEN_MIN_GAIN standard errors of the
    edge's fold scores; without per-fold scores (pooled leave-one-out) it is continued."""
    from multitask.model_selection._grids import WIDEN_MIN_GAIN, _widen

    def setup(gain):
        candidates = [{"alpha": a} for a in (1.0, 0.1, 0.01)]
        paths = [("alpha", [0, 1, 2], [1.0, 0.1, 0.01])]
        folds = np.array([[-0.60, -0.50, -0.50 + gain],
                          [-0.70, -0.60, -0.60 + gain],
                          [-0.65, -0.52, -0.52 + gain]])
        return candidates, paths, folds

    error = np.std([-0.50, -0.60, -0.52], ddof=1) / np.sqrt(3)
    for gain, continued in ((0.5 * WIDEN_MIN_GAIN * error, False),
                            (2.0 * WIDEN_MIN_GAIN * error, True)):
        candidates, paths, folds = setup(gain)
        jobs = _widen(candidates, paths, folds.mean(axis=0), True, 3, folds)
        assert bool(jobs) is continued
        if continued:
            assert len(jobs) == 3 and len(candidates) == 6
            assert paths[0][2][-1] == pytest.approx(1e-5)
    candidates, paths, folds = setup(0.5 * WIDEN_MIN_GAIN * error)
    assert len(_widen(candidates, paths, folds.mean(axis=0), True, 3, None)) == 3


@pytest.mark.parametrize("model", ["SparseLowRankRegressor", "CappedL1Regressor"])
def test_cv_warm_starts_the_candidates_in_the_running_from_cheaper_fits(datagen, monkeypatch,
                                                                        model):
    """Sparse + low rank fits the candidates halving left behind to a looser tolerance, the
    capped l1 model with one stage (the warm starts of the next fits only): the candidates in
    the running are scored on the same folds, within the fits' tolerance of the scores the
    whole paths give, and chosen the same."""
    import multitask

    cls = getattr(multitask, model)
    Xs, ys = datagen.regression_lists(sizes=(30,) * 8, d=6, seed=3)

    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return MultiTaskCV(cls(), widen=0).fit(Xs, ys)

    new = run()
    monkeypatch.setattr(cls, "_warm_start_settings", lambda self: None)
    old = run()
    ran = ~np.isnan(new.scores_)
    assert np.any(ran != ~np.isnan(old.scores_))  # candidates left behind were not scored
    np.testing.assert_allclose(new.scores_[ran], old.scores_[ran], rtol=1e-3)
    assert new.best_params_ == old.best_params_
