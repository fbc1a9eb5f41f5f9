"""Row weights (``sample_weight``): integer weights repeat rows, zero weights drop them.

The loss of task ``t`` is ``sum_{i in t} w_i ell_i / sum_{i in t} w_i`` (``multitask.losses``);
repeating row ``i`` ``w_i`` times gives ``n_t' = sum_i w_i`` rows and ``(1 / n_t') sum_i w_i
ell_i``, the same objective, so every estimator must return the model of the repeated rows
(to 1e-8, fitted at a tight ``tol``). Zero weights are among the weights, so the same fits also
check that a zero weight drops its row. Bad weights are ValueErrors naming the problem and,
where it applies, the row and the task.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator

import multitask as mt
from multitask.data import as_multitask_data
from multitask.losses import get_datafit

TOL = 1e-10
MAX_ITER = 200_000
#: Agreement of the weighted fit and the fit on the repeated rows, relative to the size of
#: the coefficients.
AGREE = 1e-8


def _estimator_classes():
    out = []
    for name in sorted(mt.__all__):
        obj = getattr(mt, name)
        if not (inspect.isclass(obj) and issubclass(obj, BaseEstimator)):
            continue
        if name in ("MultiTaskCV", "MultitaskKernelClassifier"):  # a wrapper; an alias
            continue
        out.append(obj)
    return out


def _cases():
    """Every estimator with its default loss; every classifier of the generic base also with
    a second smooth loss (squared hinge, or logistic where that is not the default)."""
    cases = []
    for cls in _estimator_classes():
        cases.append((cls, None))
        losses = getattr(cls, "_losses", ())
        if cls.__name__.endswith("Classifier") and cls is not mt.MultiTaskKernelClassifier:
            other = [x for x in ("squared_hinge", "logistic") if x in losses and x != losses[0]]
            if other:
                cases.append((cls, other[0]))
    return cases


CASES = _cases()


def _problem():
    rng = np.random.default_rng(5)
    sizes, d = (14, 17, 12), 4
    W = rng.standard_normal((d, 3))
    Xs = [rng.standard_normal((n, d)) + 0.2 for n in sizes]
    yr = [X @ W[:, t] + 0.3 + 0.5 * rng.standard_normal(len(X)) for t, X in enumerate(Xs)]
    # labels of a noisy score (not separable: the classifiers' optima stay finite and near)
    yc = [np.where(y + 1.5 * rng.standard_normal(len(y)) > np.median(y), 1, 0) for y in yr]
    ws = [rng.integers(0, 4, n) for n in sizes]  # zeros included: those rows are dropped
    for w, y in zip(ws, yc, strict=True):  # both classes keep a row of positive weight
        w[np.argmax(y == 1)] = 1
        w[np.argmax(y == 0)] = 1
    return Xs, yr, yc, ws


XS, Y_REG, Y_CLF, WS = _problem()


def _repeat(arrays):
    return [np.repeat(a, w, axis=0) for a, w in zip(arrays, WS, strict=True)]


#: Stronger structure penalties for the two composite families (the split of W into two
#: parts converges slowly when they are weak); the weights are what the test is about.
STRENGTHS = {"RobustFeatureLearning": {"alpha_group": 0.1, "alpha_outlier": 0.1},
             "SparseLowRank": {"alpha": 0.1}}


def _make(cls, loss):
    est = cls()
    for family, strengths in STRENGTHS.items():
        if cls.__name__.startswith(family):
            est.set_params(**strengths)
    params = est.get_params()
    # a light ridge keeps every problem strongly convex (well conditioned: fast to solve to
    # TOL); the weights enter the loss, which it leaves as it is
    settings = {k: v for k, v in {"tol": TOL, "max_iter": MAX_ITER, "alpha_l2": 0.05}.items()
                if k in params}
    if loss is not None:
        settings["loss"] = loss
    if (loss or params.get("loss")) == "hinge":  # the exact LP (a ridge would leave it)
        settings.pop("alpha_l2", None)
    if cls is mt.MultiTaskKernelClassifier:
        # one fixed task kernel: the weights act on the dual coordinate descent's box
        # constraints C w_i exactly; the MKL alternation's own stop would blur the comparison
        settings.update(task_similarity="individual", tol=1e-12)
    return est.set_params(**settings)


def _hinge_objective(est, Xs, ys):
    """The weighted hinge loss the LP minimizes, evaluated on the repeated rows."""
    out = 0.0
    for t, (X, y) in enumerate(zip(Xs, ys, strict=True)):
        z = X @ est.coef_[t] + est.intercept_[t]
        out += float(np.mean(np.maximum(0.0, 1.0 - np.where(y == est.classes_[1], 1, -1) * z)))
    return out


@pytest.mark.parametrize("cls, loss", CASES,
                         ids=[f"{c.__name__}-{loss or 'default'}" for c, loss in CASES])
def test_integer_weights_equal_repeated_rows(cls, loss):
    """Weighted fit == fit on the rows repeated ``w_i`` times (rows of weight 0 dropped)."""
    classifier = cls.__name__.endswith("Classifier")
    ys = Y_CLF if classifier else Y_REG
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # task order / graph notes of the temporal models
        if cls is mt.MultiTaskKernelClassifier:  # its own sample_weight: long format only
            task = np.concatenate([np.full(len(X), t) for t, X in enumerate(XS)])
            weighted = _make(cls, loss).fit(np.vstack(XS), np.concatenate(ys), task,
                                            sample_weight=np.concatenate(WS))
            repeated = _make(cls, loss).fit(np.vstack(_repeat(XS)), np.concatenate(_repeat(ys)),
                                            np.repeat(task, np.concatenate(WS)))
        else:
            weighted = _make(cls, loss).fit(XS, ys, sample_weight=WS)
            repeated = _make(cls, loss).fit(_repeat(XS), _repeat(ys))
    scale = max(1.0, float(np.abs(repeated.coef_).max()))
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, rtol=0, atol=AGREE * scale)
    if weighted._loss_name() == "hinge" and cls is not mt.MultiTaskKernelClassifier:
        # the hinge LP: the intercept of a task may lie anywhere on a flat stretch of the
        # piecewise-linear objective (both are optimal): compare the objective instead
        a = _hinge_objective(weighted, _repeat(XS), _repeat(ys))
        b = _hinge_objective(repeated, _repeat(XS), _repeat(ys))
        assert a == pytest.approx(b, rel=1e-10, abs=1e-12)
    else:
        np.testing.assert_allclose(weighted.intercept_, repeated.intercept_, rtol=0,
                                   atol=AGREE * scale)


# ----------------------------------------------------------------------------- other layouts
def test_zero_weights_drop_rows_in_long_format_and_shared_designs():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((30, 3))
    task = np.repeat(["a", "b", "c"], 10)
    y = X @ [1.0, -2.0, 0.5] + rng.standard_normal(30)
    w = np.ones(30)
    w[[2, 11, 25]] = 0.0
    keep = w > 0
    for cls in (mt.TraceNormRegressor, mt.L21Regressor):
        a = cls(tol=TOL, max_iter=MAX_ITER).fit(X, y, task, sample_weight=w)
        b = cls(tol=TOL, max_iter=MAX_ITER).fit(X[keep], y[keep], task[keep])
        np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-9)
        np.testing.assert_allclose(a.intercept_, b.intercept_, atol=1e-9)
    Y = np.column_stack([y, -y + rng.standard_normal(30)])
    a = mt.L21Regressor(tol=TOL, max_iter=MAX_ITER).fit(X, Y, sample_weight=w)
    b = mt.L21Regressor(tol=TOL, max_iter=MAX_ITER).fit(X[keep], Y[keep])
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-9)
    np.testing.assert_allclose(a.intercept_, b.intercept_, atol=1e-9)


def test_shared_design_weights_per_row_and_task_equal_long_format():
    """``(n, m)`` weights of a shared design == each task's rows with their own weights."""
    rng = np.random.default_rng(2)
    n, m = 25, 3
    X = rng.standard_normal((n, 4)) + 1.0
    Y = X @ rng.standard_normal((4, m)) + rng.standard_normal((n, m))
    Wt = rng.integers(1, 4, (n, m)).astype(float)
    long_X = np.vstack([X] * m)
    long_y = Y.T.ravel()
    long_t = np.repeat(np.arange(m), n)
    for cls in (mt.TraceNormRegressor, mt.MeanRegularizedRegressor):
        a = cls(tol=1e-12, max_iter=MAX_ITER).fit(X, Y, sample_weight=Wt)
        b = cls(tol=1e-12, max_iter=MAX_ITER).fit(long_X, long_y, long_t,
                                                  sample_weight=Wt.T.ravel())
        np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-9)
        np.testing.assert_allclose(a.intercept_, b.intercept_, atol=1e-9)
    # (n,) weights apply to every task: the same as (n, m) with equal columns
    w = Wt[:, 0]
    a = mt.L21Regressor(tol=TOL).fit(X, Y, sample_weight=w)
    b = mt.L21Regressor(tol=TOL).fit(X, Y, sample_weight=np.repeat(w[:, None], m, axis=1))
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-12)


def test_sparse_design_weights_equal_repeated_rows():
    rng = np.random.default_rng(3)
    X = sp.random(40, 6, density=0.5, random_state=3, format="csr")
    task = np.repeat([0, 1], 20)
    y = np.asarray(X @ rng.standard_normal(6)).ravel() + 0.1 * rng.standard_normal(40)
    w = rng.integers(0, 3, 40)
    w[[0, 20]] = 1
    rep = np.repeat(np.arange(40), w)
    for cls in (mt.L21Regressor, mt.IndependentLassoRegressor):
        a = cls(alpha=0.01, tol=TOL, max_iter=MAX_ITER).fit(X, y, task, sample_weight=w)
        b = cls(alpha=0.01, tol=TOL, max_iter=MAX_ITER).fit(X[rep], y[rep], task[rep])
        np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-8)
        np.testing.assert_allclose(a.intercept_, b.intercept_, atol=1e-8)


def test_weights_equal_for_every_row_change_nothing():
    """One weight for every row is the unweighted model, bit for bit (not even stored)."""
    X, y = XS, Y_REG
    a = mt.TraceNormRegressor().fit(X, y)
    b = mt.TraceNormRegressor().fit(X, y, sample_weight=[np.full(len(v), 2.5) for v in y])
    np.testing.assert_array_equal(a.coef_, b.coef_)
    data, _ = as_multitask_data(X, y, sample_weight=[np.full(len(v), 2.5) for v in y])
    assert data.sample_weight is None


def test_weights_within_a_task_are_relative():
    """Weights constant within each task (different across tasks) give the unweighted model of
    every per-task loss (each task's loss is normalized by its total weight)."""
    ws = [np.full(len(v), float(t + 1)) for t, v in enumerate(Y_REG)]
    a = mt.L21Regressor(tol=TOL, max_iter=MAX_ITER).fit(XS, Y_REG)
    b = mt.L21Regressor(tol=TOL, max_iter=MAX_ITER).fit(XS, Y_REG, sample_weight=ws)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-9)


# ----------------------------------------------------------------------------- data layer
def test_weighted_data_layer_quantities_equal_the_repeated_rows():
    """Gram matrices, X^T y, means, spectral norms, Lipschitz constants and the gradient at zero
    of weighted data equal those of the repeated rows (per task, divided by the total weight)."""
    Xs, ys = XS, Y_REG
    dw, _ = as_multitask_data(Xs, ys, sample_weight=WS)
    dr, _ = as_multitask_data(_repeat(Xs), _repeat(ys))
    np.testing.assert_allclose(dw.task_weight_sums, dr.task_sizes)
    np.testing.assert_allclose(dw.task_sum(dw.row_weights), 1.0)
    np.testing.assert_allclose(dw.x_means(), dr.x_means(), atol=1e-12)
    np.testing.assert_allclose(dw.y_means(), dr.y_means(), atol=1e-12)
    np.testing.assert_allclose(dw.gram(), dr.gram(), rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(dw.xty(), dr.xty(), rtol=1e-12, atol=1e-10)
    for intercept in (False, True):
        np.testing.assert_allclose(dw.task_spectral_norms_sq(intercept, weighted=True),
                                   dr.task_spectral_norms_sq(intercept), rtol=1e-10)
    for loss, yy in (("squared", ys), ("logistic", Y_CLF), ("squared_hinge", Y_CLF)):
        dw, _ = as_multitask_data(Xs, yy, sample_weight=WS, classification=loss != "squared")
        dr, _ = as_multitask_data(_repeat(Xs), _repeat(yy), classification=loss != "squared")
        fw, fr = get_datafit(loss, dw), get_datafit(loss, dr)
        assert fw.lipschitz() == pytest.approx(fr.lipschitz(), rel=1e-9)
        np.testing.assert_allclose(fw.measure_constants(), fr.measure_constants(), rtol=1e-9)
        np.testing.assert_allclose(fw.grad_at_zero(), fr.grad_at_zero(), atol=1e-12)
        np.testing.assert_allclose(fw.bound_hessian()[0], fr.bound_hessian()[0], atol=1e-10)
        if loss != "squared":
            np.testing.assert_allclose(fw.optimal_intercept_at_zero(),
                                       fr.optimal_intercept_at_zero(), atol=1e-12)
        W = np.random.default_rng(0).standard_normal((Xs[0].shape[1], len(Xs)))
        b = None if loss == "squared" else np.zeros(len(Xs))
        assert fw.value(W, b) == pytest.approx(fr.value(W, b), rel=1e-12)


def test_shared_design_with_weights_per_task_has_a_gram_matrix_per_task():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((20, 3)) + 2.0
    Y = rng.standard_normal((20, 2))
    same, _ = as_multitask_data(X, Y, sample_weight=rng.integers(1, 3, 20))
    assert same.shares_gram and same.gram().shape[0] == 1
    per_task = rng.integers(1, 3, (20, 2))
    data, _ = as_multitask_data(X, Y, sample_weight=per_task)
    assert not data.shares_gram
    dc = data.centered()[0]
    G = dc.gram()
    assert G.shape == (2, 3, 3)
    for t in range(2):
        w = per_task[:, t]
        mu = w @ X / w.sum()
        np.testing.assert_allclose(G[t], (X - mu).T @ ((X - mu) * w[:, None]), atol=1e-10)


# ----------------------------------------------------------------------------- bad weights
BAD = [
    ("negative", lambda w: np.where(np.arange(len(w)) == 7, -1.0, w),
     r"negative weight -1 \(first at row 7, task 'b'\)"),
    ("nan", lambda w: np.where(np.arange(len(w)) == 3, np.nan, w),
     r"sample_weight contains NaN \(first at row 3, task 'a'\)"),
    ("inf", lambda w: np.where(np.arange(len(w)) == 12, np.inf, w),
     r"sample_weight contains an infinite weight \(first at row 12, task 'c'\)"),
    ("short", lambda w: w[:-1], r"sample_weight has shape \(14,\) but X has 15 rows"),
    ("2-D", lambda w: np.column_stack([w, w]), r"sample_weight has shape \(15, 2\)"),
    ("text", lambda w: np.array(["1"] * len(w)), r"sample_weight has text dtype"),
    ("zero task", lambda w: np.where(np.arange(len(w)) >= 10, 0.0, w),
     r"sample_weight is zero on every row of task 'c'"),
]


@pytest.mark.parametrize("transform, message", [(t, m) for _, t, m in BAD],
                         ids=[b[0] for b in BAD])
def test_bad_weights_are_value_errors_naming_the_problem(transform, message):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((15, 2))
    task = np.repeat(["a", "b", "c"], 5)
    y = rng.standard_normal(15)
    with pytest.raises(ValueError, match=message):
        mt.L21Regressor().fit(X, y, task, sample_weight=transform(np.ones(15)))


def test_bad_weights_of_shared_designs_and_lists_name_the_task():
    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((8, 2)), rng.standard_normal((8, 3))
    W = np.ones((8, 3))
    W[5, 2] = -2.0
    with pytest.raises(ValueError, match=r"negative weight -2 \(first at row 5, task 2\)"):
        mt.L21Regressor().fit(X, Y, sample_weight=W)
    with pytest.raises(ValueError, match=r"one weight per row, shape \(8,\), or one per row and "
                                         r"task, shape \(8, 3\)"):
        mt.L21Regressor().fit(X, Y, sample_weight=np.ones((8, 2)))
    ws = [np.ones(len(v)) for v in Y_REG]
    ws[1] = ws[1].copy()
    ws[1][4] = np.nan
    with pytest.raises(ValueError, match=r"NaN \(first at row 4 of task 1\)"):
        mt.L21Regressor().fit(XS, Y_REG, sample_weight=ws)
    with pytest.raises(ValueError, match=r"sample_weight of task 0 has 13 weights but the task "
                                         r"has 14 rows"):
        mt.L21Regressor().fit(XS, Y_REG, sample_weight=[w[:-1] if t == 0 else w
                                                        for t, w in enumerate(ws)])


def test_the_weights_are_not_modified():
    w = [np.asarray(v, dtype=float) for v in WS]
    before = [v.copy() for v in w]
    mt.TraceNormRegressor().fit(XS, Y_REG, sample_weight=w)
    for a, b in zip(w, before, strict=True):
        np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------------- scoring
def test_score_and_metrics_with_integer_weights_equal_repeated_rows():
    rng = np.random.default_rng(6)
    X = rng.standard_normal((30, 3))
    Y = X @ rng.standard_normal((3, 2)) + rng.standard_normal((30, 2))
    w = rng.integers(0, 4, 30)
    rep = np.repeat(np.arange(30), w)
    est = mt.L21Regressor(alpha=0.01).fit(X, Y)
    assert est.score(X, Y, sample_weight=w) == pytest.approx(est.score(X[rep], Y[rep]))
    pred = est.predict(X)
    for fn in (mt.metrics.nmse, mt.metrics.amse, mt.metrics.mse):
        assert fn(Y, pred, sample_weight=w) == pytest.approx(fn(Y[rep], pred[rep]))
    Yb = (Y > 0).astype(int)
    clf = mt.L21Classifier(alpha=0.01).fit(X, Yb)
    assert clf.score(X, Yb, sample_weight=w) == pytest.approx(clf.score(X[rep], Yb[rep]))
    S = clf.decision_function(X)
    for avg in ("macro", "micro"):
        assert mt.metrics.roc_auc(Yb, S, average=avg, sample_weight=w) == pytest.approx(
            mt.metrics.roc_auc(Yb[rep], S[rep], average=avg))
    assert mt.metrics.error_rate(Yb, clf.predict(X), sample_weight=w) == pytest.approx(
        mt.metrics.error_rate(Yb[rep], clf.predict(X)[rep]))
    from multitask.model_selection import mean_auc_scorer, nmse_scorer

    assert nmse_scorer(est, X, Y, sample_weight=w) == pytest.approx(nmse_scorer(est, X[rep],
                                                                                Y[rep]))
    assert mean_auc_scorer(clf, X, Yb, sample_weight=w) == pytest.approx(
        mean_auc_scorer(clf, X[rep], Yb[rep]))


# ----------------------------------------------------------------------------- model selection
def test_multitask_cv_with_weights_equals_the_repeated_rows():
    """MultiTaskCV: the same folds (of the original rows) give the same scores, choice and
    refitted model with integer weights as with the rows repeated."""
    rng = np.random.default_rng(0)
    n = 45
    X = rng.standard_normal((n, 3))
    Y = X @ rng.standard_normal((3, 2)) + rng.standard_normal((n, 2))
    w = rng.integers(0, 4, n)
    w[:6] = 1
    rep = np.repeat(np.arange(n), w)
    folds = [(np.flatnonzero(np.arange(n) % 3 != k), np.flatnonzero(np.arange(n) % 3 == k))
             for k in range(3)]
    folds_rep = [(np.flatnonzero(np.isin(rep, tr)), np.flatnonzero(np.isin(rep, te)))
                 for tr, te in folds]
    est = mt.L21Regressor(tol=TOL, max_iter=MAX_ITER)
    a = mt.MultiTaskCV(est, cv=folds, n_alphas=4, widen=0).fit(X, Y, sample_weight=w)
    b = mt.MultiTaskCV(est, cv=folds_rep, n_alphas=4, widen=0).fit(X[rep], Y[rep])
    np.testing.assert_allclose(a.cv_results_["mean_test_score"],
                               b.cv_results_["mean_test_score"], rtol=1e-8)
    assert a.best_index_ == b.best_index_
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-8)


def test_gridsearchcv_routes_the_weights_to_fit_and_score():
    """scikit-learn's metadata routing: set_fit_request / set_score_request."""
    import sklearn
    from sklearn.model_selection import GridSearchCV, KFold

    rng = np.random.default_rng(1)
    X = rng.standard_normal((36, 3))
    Y = X @ rng.standard_normal((3, 2)) + rng.standard_normal((36, 2))
    w = rng.integers(1, 4, 36).astype(float)
    folds = list(KFold(3).split(X))
    with sklearn.config_context(enable_metadata_routing=True):
        est = mt.L21Regressor().set_fit_request(sample_weight=True)
        est = est.set_score_request(sample_weight=True)
        search = GridSearchCV(est, {"alpha": [0.01, 0.1]}, cv=folds).fit(X, Y, sample_weight=w)
    for i, alpha in enumerate([0.01, 0.1]):
        scores = []
        for tr, te in folds:
            fitted = mt.L21Regressor(alpha=alpha).fit(X[tr], Y[tr], sample_weight=w[tr])
            scores.append(fitted.score(X[te], Y[te], sample_weight=w[te]))
        assert search.cv_results_["mean_test_score"][i] == pytest.approx(np.mean(scores))


def test_distributed_input_refuses_weights():
    dd = pytest.importorskip("dask.dataframe")
    import pandas as pd

    frame = pd.DataFrame({"a": np.arange(6.0), "y": np.arange(6.0), "t": [0, 0, 0, 1, 1, 1]})
    ddf = dd.from_pandas(frame, npartitions=1)
    with pytest.raises(ValueError, match="sample_weight is not supported with Dask"):
        mt.L21Regressor().fit(ddf[["a"]], ddf["y"], ddf["t"], sample_weight=np.ones(6))
