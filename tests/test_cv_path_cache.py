"""The fits of a path (and of one fold of a cross-validation) share one conversion of their
input and the per-data quantities cached on it: the results are those of independent fits,
the caches never cross data sets, and the user's input is not modified."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone

from multitask import (
    ClusteredMTLRegressor,
    L21Classifier,
    L21Regressor,
    MultiTaskCV,
)
from multitask.data import as_multitask_data
from multitask.data.converted_inputs import ConvertedInputs, serving_conversions
from multitask.estimators.estimator import MultiTaskEstimator
from multitask.losses import Datafit, get_datafit
from multitask.model_selection import _engine, default_param_grid, fit_path


def _per_task(seed=0, m=6, d=5, n=30):
    """Per-task lists with enough rows per task for the squared loss's Gram matrices."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((d, m)) * (rng.random((d, 1)) < 0.6)
    X = [rng.standard_normal((n + t, d)) * np.linspace(1, 6, d) for t in range(m)]
    y = [x @ W[:, t] + 0.5 * rng.standard_normal(len(x)) + t for t, x in enumerate(X)]
    return X, y


def _no_reuse(monkeypatch):
    """Every lookup misses: each fit converts its input and computes its own caches."""
    monkeypatch.setattr(ConvertedInputs, "get", lambda self, inputs, options: None)


def _path_by_hand(est, X, y, points):
    """The warm-started path without the memo: one conversion per fit."""
    est = clone(est).set_params(warm_start=True)
    out = []
    for point in points:
        est.set_params(**point)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y)
        out.append((est.coef_.copy(), est.intercept_.copy(), est.n_iter_))
    return out


@pytest.mark.parametrize("model", [L21Regressor(), ClusteredMTLRegressor(solver="admm"),
                                   ClusteredMTLRegressor()])
def test_path_fits_equal_independent_fits(model):
    X, y = _per_task()
    name, values = next(iter(default_param_grid(model, X, y, n_alphas=4).items()))
    points = [{name: v} for v in values]

    def keep(est, point):
        return est.coef_.copy(), est.intercept_.copy(), est.n_iter_

    memo = ConvertedInputs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = fit_path(model, X, y, points, on_fit=keep, converted=memo)
    assert memo.stored == 1 and memo.hits == len(points) - 1  # converted once
    for (kept, _, _, err), (coef, icpt, n_iter) in zip(fits, _path_by_hand(model, X, y, points),
                                                       strict=True):
        assert err is None
        np.testing.assert_array_equal(kept[0], coef)  # bitwise
        np.testing.assert_array_equal(kept[1], icpt)
        assert kept[2] == n_iter


@pytest.mark.parametrize("model, n_alphas", [(ClusteredMTLRegressor(), 4),
                                             (L21Regressor(), 5)])
def test_cv_scores_and_choice_with_and_without_reuse(model, n_alphas, monkeypatch):
    X, y = _per_task(1)
    kw = {"n_alphas": n_alphas, "cv": 3, "widen": 1}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        shared = MultiTaskCV(model, **kw).fit(X, y)
        with monkeypatch.context() as mp:
            _no_reuse(mp)
            alone = MultiTaskCV(model, **kw).fit(X, y)
    assert shared.cv_results_["params"] == alone.cv_results_["params"]
    np.testing.assert_allclose(shared.scores_, alone.scores_, rtol=1e-12, atol=0)
    assert np.array_equal(np.isnan(shared.scores_), np.isnan(alone.scores_))
    assert shared.best_params_ == alone.best_params_
    np.testing.assert_array_equal(shared.best_estimator_.coef_, alone.best_estimator_.coef_)


def test_cv_converts_each_fold_once(monkeypatch):
    """The sequential engine fits the paths of a fold on one data object: one conversion
    and one eigendecomposition per fold, whatever the number of paths and fits."""
    X, y = _per_task(2)
    seen: list = []
    eigen_calls = []
    make = MultiTaskEstimator._make_datafit
    eigen = Datafit.quadratic_eigen

    def record(self, data):
        seen.append(data)
        return make(self, data)

    def count(self):
        eigen_calls.append(self.data)
        return eigen(self)

    monkeypatch.setattr(MultiTaskEstimator, "_make_datafit", record)
    monkeypatch.setattr(Datafit, "quadratic_eigen", count)
    model = ClusteredMTLRegressor(solver="admm")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cv = MultiTaskCV(model, param_grid={"alpha": [100.0, 1.0, 0.01], "eta": [1.0, 0.1]},
                         cv=3, widen=0, halving=False, refit=False).fit(X, y)
    n_fits = int(np.isfinite(cv.scores_).sum())
    assert n_fits == 3 * 6  # two paths per fold
    assert len(seen) == n_fits
    assert len({id(d) for d in seen}) == 3  # one data object per fold
    assert len(eigen_calls) == 3  # the ADMM's eigendecompositions once per fold


def test_folds_do_not_share_caches():
    """Two folds (two data objects) get their own centring, Gram matrices and
    eigendecompositions, equal to those of fresh conversions."""
    X, y = _per_task(3)
    data_a, _ = as_multitask_data(X, y)
    data_b, _ = as_multitask_data([x[5:] for x in X], [v[5:] for v in y])
    fa = get_datafit("squared", data_a, True)
    fb = get_datafit("squared", data_b, True)
    lam_a, Q_a = fa.quadratic_eigen()
    lam_b, Q_b = fb.quadratic_eigen()
    assert fa.data is not fb.data
    assert lam_a.shape == lam_b.shape and not np.allclose(lam_a, lam_b)
    for data, lam, datafit in ((data_a, lam_a, fa), (data_b, lam_b, fb)):
        fresh, _ = as_multitask_data(X if data is data_a else [x[5:] for x in X],
                                     y if data is data_a else [v[5:] for v in y])
        lam_ref, _ = get_datafit("squared", fresh, True).quadratic_eigen()
        np.testing.assert_array_equal(lam, lam_ref)
        # the same data: the same centred view and eigendecomposition for a second loss
        again = get_datafit("squared", data, True)
        assert again.data is datafit.data
        assert again.quadratic_eigen()[0] is lam


def test_eigen_cache_follows_the_ridge():
    """A loss with another ``alpha_l2`` on the same data decomposes its own ``H_t``."""
    X, y = _per_task(4)
    data, _ = as_multitask_data(X, y)
    plain = get_datafit("squared", data, True)
    ridge = get_datafit("squared", data, True, alpha_l2=0.3)
    lam0, _ = plain.quadratic_eigen()
    lam1, Q1 = ridge.quadratic_eigen()
    H1 = ridge.quadratic_form()[0]
    ref_lam, ref_Q = np.linalg.eigh(H1)
    np.testing.assert_array_equal(lam1, np.maximum(ref_lam, 0.0))
    np.testing.assert_allclose(lam1 - 0.3, lam0, atol=1e-12)
    # back to the first ridge on the same data: its own decomposition again
    again = get_datafit("squared", data, True).quadratic_eigen()[0]
    np.testing.assert_array_equal(again, lam0)


def test_memo_serves_its_owner_and_the_same_objects_only():
    X, y = _per_task(5)
    memo = ConvertedInputs(size=2)
    owner, other = L21Regressor(), L21Regressor()
    with memo.serving(owner):
        assert serving_conversions(owner) is memo
        assert serving_conversions(other) is None
        memo.put((X, y, None, None), ("opts",), "value")
        assert memo.get((X, y, None, None), ("opts",)) == "value"
        assert memo.get(([x.copy() for x in X], y, None, None), ("opts",)) is None
        assert memo.get((list(X), y, None, None), ("opts",)) is None  # equal, not the same
        assert memo.get((X, y, None, None), ("other",)) is None
    assert serving_conversions(owner) is None
    memo.put((1,), "a", 1)
    memo.put((2,), "b", 2)
    assert memo.get((X, y, None, None), ("opts",)) is None  # the oldest entry dropped
    with pytest.raises(ValueError, match="size"):
        ConvertedInputs(size=0)


def test_reused_conversion_sets_the_input_attributes():
    """A fit served from the memo sets ``n_features_in_`` and ``feature_names_in_`` as its
    own conversion would (and removes names the input does not have)."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(6)
    frame = pd.DataFrame(rng.standard_normal((40, 3)), columns=["a", "b", "c"])
    Y = rng.standard_normal((40, 4))
    est = L21Regressor()
    memo = ConvertedInputs()
    with memo.serving(est):
        est.fit(frame, Y)
        est.feature_names_in_ = np.array(["x", "y", "z"], dtype=object)  # to be restored
        est.set_params(alpha=0.5 * est.alpha).fit(frame, Y)
    assert memo.hits == 1
    assert list(est.feature_names_in_) == ["a", "b", "c"] and est.n_features_in_ == 3
    arr = frame.to_numpy()
    with memo.serving(est):
        est.fit(arr, Y)
        est.fit(arr, Y)
    assert memo.hits == 2 and not hasattr(est, "feature_names_in_")


def test_inputs_not_modified():
    X, y = _per_task(7)
    w = [np.linspace(0.5, 2.0, len(v)) for v in y]
    X0, y0, w0 = [x.copy() for x in X], [v.copy() for v in y], [v.copy() for v in w]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        MultiTaskCV(ClusteredMTLRegressor(), n_alphas=3, cv=3, widen=0).fit(
            X, y, sample_weight=w)
        fit_path(L21Regressor(), X, y, [{"alpha": 1.0}, {"alpha": 0.1}], sample_weight=w)
    for a, b in zip(X + y + w, X0 + y0 + w0, strict=True):
        np.testing.assert_array_equal(a, b)
    # long format with task ids and a shared design
    rng = np.random.default_rng(8)
    Xl, yl = rng.standard_normal((90, 4)), rng.standard_normal(90)
    task = np.repeat(np.arange(3), 30)
    Xs, Ys = rng.standard_normal((40, 4)), rng.standard_normal((40, 3))
    copies = [a.copy() for a in (Xl, yl, task, Xs, Ys)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        MultiTaskCV(L21Regressor(), n_alphas=3, cv=3, widen=0).fit(Xl, yl, task)
        MultiTaskCV(L21Regressor(), n_alphas=3, cv=3, widen=0).fit(Xs, Ys)
    for a, b in zip((Xl, yl, task, Xs, Ys), copies, strict=True):
        np.testing.assert_array_equal(a, b)


def test_classifier_path_with_and_without_reuse(monkeypatch):
    rng = np.random.default_rng(9)
    X = [rng.standard_normal((40, 4)) for _ in range(4)]
    y = [(x[:, 0] + 0.5 * rng.standard_normal(40) > 0).astype(int) for x in X]
    kw = {"n_alphas": 3, "cv": 3, "widen": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        shared = MultiTaskCV(L21Classifier(), **kw).fit(X, y)
        with monkeypatch.context() as mp:
            _no_reuse(mp)
            alone = MultiTaskCV(L21Classifier(), **kw).fit(X, y)
    np.testing.assert_allclose(shared.scores_, alone.scores_, rtol=1e-12, atol=0)
    assert shared.best_params_ == alone.best_params_


def test_sequential_runner_keeps_the_job_order(monkeypatch):
    """The jobs run fold after fold but come back in the order they were given, each fold's
    paths on the fold's own arrays."""
    X, y = _per_task(10)
    calls = []
    job = _engine._job

    def spy(k, *args, fold=None, **kw):
        calls.append((k, fold.k, fold))
        return job(k, *args, fold=fold, **kw)

    monkeypatch.setattr(_engine, "_job", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = _engine.cross_validate_grid(ClusteredMTLRegressor(), X, y, n_alphas=3, cv=3,
                                          widen=0, halving=False)
    assert all(k == fk for k, fk, _ in calls)
    assert [k for k, _, _ in calls] == sorted(k for k, _, _ in calls)  # fold after fold
    assert len({id(f) for _, _, f in calls}) == 3  # held by calls: distinct ids
    assert np.all(np.isfinite(res.scores))


@pytest.mark.parametrize("use_gram", [None, False])
def test_lipschitz_bound_shared_by_the_losses_on_one_data_set(use_gram):
    """The squared loss's Lipschitz bound is cached on the data: another loss on the same
    data (another ridge) reads it, equal to that of a fresh conversion."""
    X, y = _per_task(11)
    data, _ = as_multitask_data(X, y)
    fresh, _ = as_multitask_data(X, y)
    first = get_datafit("squared", data, True, use_gram=use_gram)
    ridge = get_datafit("squared", data, True, alpha_l2=0.25, use_gram=use_gram)
    alone = get_datafit("squared", fresh, True, use_gram=use_gram)
    assert first.lipschitz() == alone.lipschitz()
    assert ridge.lipschitz() == alone.lipschitz() + 0.25
    assert get_datafit("squared", data, False, use_gram=use_gram).lipschitz() == \
        get_datafit("squared", fresh, False, use_gram=use_gram).lipschitz()


def test_other_estimators_get_the_arrays_of_each_job(monkeypatch):
    """A Pipeline (whose steps may write to their input) shares no fold arrays between
    jobs; a multi-task model does."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(12)
    X, Y = rng.standard_normal((60, 4)), rng.standard_normal((60, 3))
    folds = []
    job = _engine._job

    def spy(k, *args, fold=None, **kw):
        folds.append(fold)
        return job(k, *args, fold=fold, **kw)

    monkeypatch.setattr(_engine, "_job", spy)
    grid = {"l21regressor__alpha": [1.0, 0.1], "l21regressor__tol": [1e-4, 1e-5]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _engine.cross_validate_grid(make_pipeline(StandardScaler(), L21Regressor()), X, Y,
                                    param_grid=grid, cv=3, widen=0, halving=False)
        assert folds and all(f is None for f in folds)
        folds.clear()
        _engine.cross_validate_grid(L21Regressor(), X, Y, param_grid={
            "alpha": [1.0, 0.1], "tol": [1e-4, 1e-5]}, cv=3, widen=0, halving=False)
    assert len(folds) == 6 and len({id(f) for f in folds}) == 3
