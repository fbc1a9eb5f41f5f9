"""The default grid of every model searches each parameter that changes the fitted model.

``MultiTaskCV(Model())`` tuned only ``alpha`` of robust MTL (``lam`` stayed 1, where the outlier
part is always zero: the trace-norm model to every digit), sparse + low rank (``radius`` stayed
1), the capped trace norm (``tau``), the capped l1 (``theta``), clustered MTL and convex ASO
(``eta``, ``k``), and cFSGL (``alpha_l1``). Each is now searched over a range read from the
problem, or declared held (``_grid_held``) with a reason that MultiTaskCV states once.
"""

from __future__ import annotations

import warnings
from numbers import Real

import numpy as np
import pytest

import multitask.estimators as E
from multitask import (
    ClusteredMTLRegressor,
    IndependentLassoRegressor,
    MultiTaskCV,
    RobustMTLRegressor,
    SparseLowRankRegressor,
    TraceNormRegressor,
)
from multitask.estimators._grid_scales import free_weights
from multitask.estimators.base import GridSpan
from multitask.metrics import nmse
from multitask.model_selection import _search

#: Keyword-only parameters that change the fitted model (the positional ones are the strengths).
KEYWORD_STRENGTHS = {"ClusteredMTL": {"eta", "k"}, "ConvexASO": {"eta", "k"},
                     "MultiTaskKernelClassifier": {"p"}}

MODELS = [n for n in E.__all__ if n not in ("MultitaskKernelClassifier", "MultiTaskRegressor",
                                             "MultiTaskClassifier")]


def _must_search(cls) -> set[str]:
    est = cls()
    params = est.get_params(deep=False)
    declared = getattr(cls, "_all_params", None)
    out = set()
    if declared is not None and cls.__name__ != "MultiTaskKernelClassifier":
        for name, p in cls._all_params().items():
            if not p.keyword_only and isinstance(params[name], Real):
                out.add(name)
    else:
        out.add("alpha")
    for stem, extra in KEYWORD_STRENGTHS.items():
        if cls.__name__.startswith(stem):
            out |= extra
    return out


@pytest.mark.parametrize("name", MODELS)
def test_default_grid_covers_every_strength_or_says_why(name, long_regression_data,
                                                        long_classification_data):
    cls = getattr(E, name)
    clf = name.endswith("Classifier")
    X, y, task = long_classification_data if clf else long_regression_data
    est = cls()
    if "graph" in est.get_params():
        est.set_params(graph=np.ones((3, 3)) - np.eye(3))
    grid = est.default_grid(X, y, task, n_alphas=4)
    held = getattr(cls, "_grid_held", {})
    missing = _must_search(cls) - set(grid) - set(held)
    assert not missing, f"{name}: the default grid leaves {missing} at their set value"
    for k, why in held.items():
        assert k in est.get_params() and len(why) > 20, (name, k)
    for k, values in grid.items():
        values = np.asarray(values, dtype=float)
        assert values.size >= 1 and np.all(np.isfinite(values)) and np.all(values >= 0), (name, k)


@pytest.fixture
def long_regression_data(datagen):
    Xs, ys = datagen.regression_lists(sizes=(24, 30, 18), d=4)
    X, y, task = datagen.lists_to_long(Xs, ys)
    return X, y, task


@pytest.fixture
def long_classification_data(datagen):
    Xs, ys = datagen.classification_lists(sizes=(30, 36, 30), d=4)
    X, y, task = datagen.lists_to_long(Xs, ys)
    return X, y, task


def test_grid_span_values():
    np.testing.assert_allclose(GridSpan(1.0, 0.01).values(3), [1.0, 0.1, 0.01])
    np.testing.assert_allclose(GridSpan(1.0, 0.01, endpoint=False).values(2), [1.0, 0.1])
    np.testing.assert_allclose(GridSpan(100.0, 1.0, interior=True).values(1), [10.0])
    np.testing.assert_allclose(GridSpan(1.0, 1.0, endpoint=False).values(3), [1.0])
    np.testing.assert_array_equal(GridSpan(1, 4, integer=True).values(5), [1, 2, 3, 4])
    with pytest.raises(ValueError, match="finite positive"):
        GridSpan(0.0, 1.0).values(2)


def test_secondary_ranges_come_from_the_problem(long_regression_data):
    """Caps and radii scale with the weights: multiplying the targets by 100 multiplies them
    by 100 (a constant range would not follow); lam lies in (1/sqrt(m), 1]."""
    X, y, task = long_regression_data
    for cls, name in ((SparseLowRankRegressor, "radius"), (E.CappedTraceRegressor, "tau"),
                      (E.CappedL1Regressor, "theta")):
        g1 = cls().default_grid(X, y, task, n_alphas=6)
        g100 = cls().default_grid(X, 100 * y, task, n_alphas=6)
        assert len(g1[name]) == 2
        np.testing.assert_allclose(g100[name], 100 * g1[name], rtol=1e-6)
        np.testing.assert_allclose(g100["alpha"], 100 * g1["alpha"], rtol=1e-6)
    est = SparseLowRankRegressor()
    data, _, _ = est._convert(X, y, task)
    R = np.linalg.svd(free_weights(est._make_datafit(data)), compute_uv=False).sum()
    radius = est.default_grid(X, y, task, n_alphas=6)["radius"]
    assert np.all((radius < R) & (radius > R / 100))
    lam = RobustMTLRegressor().default_grid(X, y, task, n_alphas=9)["lam"]
    assert lam[0] == 1.0 and len(lam) == 3 and np.all(lam > 1 / np.sqrt(3))


def test_robust_path_starts_at_zero_for_every_lam(long_regression_data):
    X, y, task = long_regression_data
    grid = RobustMTLRegressor().default_grid(X, y, task, n_alphas=6)
    for lam in grid["lam"]:
        fit = RobustMTLRegressor(alpha=grid["alpha"][0] * (1 + 1e-9), lam=lam,
                                 tol=1e-10).fit(X, y, task)
        assert np.abs(fit.coef_).max() < 1e-8


def test_held_parameters_are_noted_once_per_model(long_regression_data):
    X, y, task = long_regression_data
    _search._HELD_NOTED.discard("ClusteredMTLRegressor")

    def notes(**kw):
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            MultiTaskCV(ClusteredMTLRegressor(), n_alphas=3, cv=2, **kw).fit(X, y, task)
        return [str(w.message) for w in got if "holds k=1" in str(w.message)]

    first = notes()
    assert len(first) == 1 and "eta" in first[0] and "param_grid" in first[0]
    assert notes() == []  # once per model and process
    _search._HELD_NOTED.discard("ClusteredMTLRegressor")
    assert notes(param_grid={"alpha": [0.1, 1.0]}) == []  # an explicit grid says it all


def _outlier_problem(seed=1, m=20, d=10, n=20, n_out=3, noise=2.0):
    """Rank-1 weights shared by most tasks, ``n_out`` tasks with their own (4x larger).

    Seeds 0 to 4 give test-error ratios robust / trace norm of 0.77, 0.92, 0.94, 0.93, 0.95,
    the outlier tasks found exactly each time."""
    rng = np.random.default_rng(seed)
    W = np.outer(rng.standard_normal(d), rng.uniform(0.5, 1.5, m))
    out = np.sort(rng.choice(m, n_out, replace=False))
    W[:, out] = 4 * rng.standard_normal((d, n_out))

    def draw(k):
        Xs = [rng.standard_normal((k, d)) for _ in range(m)]
        return Xs, [x @ W[:, t] + noise * rng.standard_normal(k) for t, x in enumerate(Xs)]

    return draw(n), draw(200), out


def test_held_out_robust_mtl_with_defaults_finds_the_outlier_tasks():
    """With the default grid, cross-validation keeps an outlier part (lam < 1) whose largest
    columns are the outlier tasks, and the refitted model predicts new rows better than the
    cross-validated trace-norm model. Before, lam stayed 1: the outlier part was zero and the
    model was the trace-norm model, with the same test error."""
    (Xs, ys), (Xt, yt), out = _outlier_problem()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robust = MultiTaskCV(RobustMTLRegressor()).fit(Xs, ys)
        trace = MultiTaskCV(TraceNormRegressor()).fit(Xs, ys)
    best = robust.best_estimator_
    assert robust.best_params_["lam"] < 1.0
    norms = best.outlier_task_norms_
    assert np.all(norms[out] > 0)
    np.testing.assert_array_equal(np.sort(np.argsort(norms)[-len(out):]), out)
    y_all = np.concatenate(yt)
    err_robust = nmse(y_all, np.concatenate(robust.predict(Xt)))
    err_trace = nmse(y_all, np.concatenate(trace.predict(Xt)))
    assert err_robust < 0.97 * err_trace, (err_robust, err_trace)


def test_held_out_sparse_low_rank_with_defaults_beats_the_lasso():
    """A shared rank-1 part plus a few large task-specific entries: the default grid searches
    the radius of the low-rank part (it stayed 1, far below this problem's scale, and the model
    was the independent lasso), and the refitted model beats the cross-validated lasso."""
    rng = np.random.default_rng(0)
    m, d, n = 10, 12, 25
    W = np.outer(rng.standard_normal(d), rng.uniform(2.0, 4.0, m))
    W[rng.integers(0, d, 8), rng.integers(0, m, 8)] += 6.0

    def draw(k):
        Xs = [rng.standard_normal((k, d)) for _ in range(m)]
        return Xs, [x @ W[:, t] + 2.0 * rng.standard_normal(k) for t, x in enumerate(Xs)]

    (Xs, ys), (Xt, yt) = draw(n), draw(200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        slr = MultiTaskCV(SparseLowRankRegressor()).fit(Xs, ys)
        lasso = MultiTaskCV(IndependentLassoRegressor()).fit(Xs, ys)
    best = slr.best_estimator_
    assert np.abs(best.low_rank_component_).max() > 0
    y_all = np.concatenate(yt)
    err_slr = nmse(y_all, np.concatenate(slr.predict(Xt)))
    err_lasso = nmse(y_all, np.concatenate(lasso.predict(Xt)))
    assert err_slr < 0.9 * err_lasso, (err_slr, err_lasso)

