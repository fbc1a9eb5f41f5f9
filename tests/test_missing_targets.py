"""Missing targets (``missing_targets="ignore"``): NaN in ``Y`` means "not observed".

A shared design whose ``Y`` has missing entries is the long-format data of its observed
(row, task) pairs: the same model (1e-10, fitted at a tight ``tol``), for estimators of
different families, regression and classification. In the data layer the missing pairs weigh
zero (each task then has its own Gram matrix, centring and constant columns). The default stays
an error whose message names the option; CV splits the rows and scores each task on its observed
rows; the scorers and ``score`` skip them; ``multitask fit --missing-targets ignore`` reads
empty cells.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import multitask as mt
from multitask.cli import main
from multitask.cli_fit import load_model
from multitask.data import as_multitask_data, observed_mask
from multitask.model_selection import get_scorer, mean_auc_scorer, nmse_scorer

TOL = 1e-12
AGREE = 1e-10


def _same_model(a, b, Xl, yl, tl):
    """``a`` (fitted with missing targets) is the model of the long-format data ``b`` was
    fitted on: its fitted point is certified optimal for that problem to AGREE (relative
    duality gap, the library's own meaning of accuracy), and the weights agree to the
    accuracy such an objective gap gives (flat directions of a weakly regularized loss leave
    weights about the square root of the gap apart, whatever the data layout)."""
    from multitask.solvers.certificate import duality_gap

    data, _, _ = b._convert(Xl, yl, tl)
    datafit = b._make_datafit(data)
    penalty = b._make_penalty(datafit)
    b_var = a.intercept_variable_ if datafit.has_intercept_variable else None
    cert = duality_gap(datafit, penalty, a.coef_variable_, b_var)
    assert cert is not None and cert.relative_gap <= AGREE, cert
    scale = max(1.0, float(np.abs(b.coef_).max()))
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=0, atol=1e-6 * scale)
    np.testing.assert_allclose(a.intercept_, b.intercept_, rtol=0, atol=1e-6 * scale)


def _shared(seed=0, n=40, d=4, m=3, frac=0.25):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) + 0.5
    Y = X @ rng.standard_normal((d, m)) + 0.3 + rng.standard_normal((n, m))
    miss = rng.random((n, m)) < frac
    miss[0] = False  # every task keeps rows
    return X, Y, miss


def _long_of(X, Y, miss):
    """The observed pairs of a shared design as long-format data (tasks in order)."""
    rows, tasks = np.nonzero(~miss.T)[::-1]
    order = np.lexsort((rows, tasks))
    rows, tasks = rows[order], tasks[order]
    return X[rows], Y[rows, tasks], tasks


CASES = [
    (mt.L21Regressor, {"alpha": 0.05}, False),
    (mt.TraceNormRegressor, {"alpha": 0.1}, False),
    (mt.MeanRegularizedRegressor, {}, False),
    (mt.RobustMTLRegressor, {"alpha": 0.05}, False),  # linearized ADMM: the weighted metric
    (mt.L21Classifier, {"alpha": 0.01}, True),
    (mt.TraceNormClassifier, {"alpha": 0.02, "loss": "squared_hinge"}, True),
    (mt.ClusteredMTLClassifier, {}, True),
    (mt.PooledClassifier, {}, True),
]


@pytest.mark.parametrize("cls, params, classifier", CASES,
                         ids=[c.__name__ for c, _, _ in CASES])
def test_missing_targets_give_the_model_of_the_long_format_data(cls, params, classifier):
    X, Y, miss = _shared()
    if classifier:
        Y = (Y > np.median(Y, axis=0)).astype(float)
    Ym = Y.copy()
    Ym[miss] = np.nan
    Xl, yl, tl = _long_of(X, Y, miss)
    a = cls(**params, tol=TOL, max_iter=200_000, missing_targets="ignore").fit(X, Ym)
    b = cls(**params, tol=TOL, max_iter=200_000).fit(Xl, yl, tl)
    _same_model(a, b, Xl, yl, tl)
    assert a.input_format_ == "shared"  # predictions keep the (n, m) layout
    assert a.predict(X).shape == Y.shape


def test_missing_class_labels_and_sparse_designs():
    """Object labels with None and a sparse shared design: the same model as long format."""
    X, Y, miss = _shared(seed=1)
    labels = np.where(Y > np.median(Y, axis=0), "yes", "no").astype(object)
    labels[miss] = None
    Xl, yl, tl = _long_of(X, np.where(Y > np.median(Y, axis=0), "yes", "no"), miss)
    a = mt.L21Classifier(alpha=0.01, tol=TOL, max_iter=200_000,
                         missing_targets="ignore").fit(X, labels)
    b = mt.L21Classifier(alpha=0.01, tol=TOL, max_iter=200_000).fit(Xl, yl, tl)
    _same_model(a, b, Xl, yl, tl)
    np.testing.assert_array_equal(a.classes_, b.classes_)
    Xs = sp.csr_matrix(np.where(np.abs(X) > 0.8, X, 0.0))
    Ym = Y.copy()
    Ym[miss] = np.nan
    Xl, yl, tl = _long_of(Xs.toarray(), Y, miss)
    a = mt.TraceNormRegressor(0.1, tol=TOL, max_iter=200_000,
                              missing_targets="ignore").fit(Xs, Ym)
    b = mt.TraceNormRegressor(0.1, tol=TOL, max_iter=200_000).fit(sp.csr_matrix(Xl), yl, tl)
    _same_model(a, b, sp.csr_matrix(Xl), yl, tl)


def test_a_column_constant_on_a_tasks_observed_rows_is_centred_exactly():
    """A feature constant over the observed rows of one task (not over all rows) is an exactly
    zero centred column for that task, as in long format (no rounding noise to fit)."""
    X, Y, miss = _shared(seed=2, n=30)
    miss[:] = False
    miss[15:, 1] = True
    X[:15, 2] = 3.7  # constant over task 1's observed rows only
    Ym = Y.copy()
    Ym[miss] = np.nan
    data, _ = as_multitask_data(X, Ym, missing_targets="ignore")
    mu, constant = data.x_means_and_constant()
    assert constant[2, 1] and not constant[2, 0] and mu[2, 1] == 3.7
    Xl, yl, tl = _long_of(X, Y, miss)
    a = mt.L21Regressor(1e-6, tol=TOL, max_iter=200_000, missing_targets="ignore").fit(X, Ym)
    b = mt.L21Regressor(1e-6, tol=TOL, max_iter=200_000).fit(Xl, yl, tl)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-9)
    assert a.coef_[1, 2] == 0.0


def test_the_data_layer_keeps_the_shared_design_with_a_mask():
    X, Y, miss = _shared(seed=3)
    Ym = Y.copy()
    Ym[miss] = np.nan
    data, _ = as_multitask_data(X, Ym, missing_targets="ignore")
    assert data.shared and data.X.shape == X.shape and not data.shares_gram
    np.testing.assert_array_equal(data.row_weights.reshape(Y.shape[1], -1).T == 0, miss)
    np.testing.assert_allclose(data.task_sum(data.row_weights), 1.0)
    long, _ = as_multitask_data(*_long_of(X, Y, miss))
    np.testing.assert_allclose(data.centered()[0].gram(), long.centered()[0].gram(), atol=1e-9)
    np.testing.assert_allclose(data.x_means(), long.x_means(), atol=1e-12)
    for intercept in (False, True):
        np.testing.assert_allclose(data.task_spectral_norms_sq(intercept, weighted=True),
                                   long.task_spectral_norms_sq(intercept), rtol=1e-10)


def test_long_format_and_lists_leave_out_the_rows_of_missing_targets():
    X, Y, miss = _shared(seed=4)
    Xl, yl, tl = _long_of(X, Y, np.zeros_like(miss))
    drop = miss.T.ravel()
    ym = yl.copy()
    ym[drop] = np.nan
    a = mt.TraceNormRegressor(0.1, tol=TOL, max_iter=200_000, missing_targets="ignore")
    b = mt.TraceNormRegressor(0.1, tol=TOL, max_iter=200_000)
    np.testing.assert_allclose(a.fit(Xl, ym, tl).coef_, b.fit(Xl[~drop], yl[~drop],
                                                              tl[~drop]).coef_, atol=AGREE)
    Xs = [Xl[tl == t] for t in range(3)]
    ys = [ym[tl == t] for t in range(3)]
    a.fit(Xs, ys)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=AGREE)


# ----------------------------------------------------------------------------- errors
def test_the_default_error_names_the_option():
    X, Y, miss = _shared()
    Ym = Y.copy()
    Ym[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"y of task 1 contains NaN or infinity \(first at row "
                                         r"3\)\. If NaN marks a target that was not observed, "
                                         r"pass missing_targets='ignore'"):
        mt.L21Regressor().fit(X, Ym)
    labels = np.where(Y > 0, "a", "b").astype(object)
    labels[5, 0] = None
    with pytest.raises(ValueError, match=r"missing \(None\).*missing_targets='ignore'"):
        mt.L21Classifier().fit(X, labels)


def test_a_task_without_observed_targets_is_an_error():
    X, Y, _ = _shared()
    Ym = Y.copy()
    Ym[:, 2] = np.nan
    with pytest.raises(ValueError, match="Task 2 has no observed target"):
        mt.L21Regressor(missing_targets="ignore").fit(X, Ym)
    with pytest.raises(ValueError, match="missing_targets"):
        mt.L21Regressor(missing_targets="maybe").fit(X, Y)


def test_infinity_is_still_an_error():
    X, Y, _ = _shared()
    Ym = Y.copy()
    Ym[2, 0] = np.inf
    with pytest.raises(ValueError, match="y of task 0 contains NaN or infinity"):
        mt.L21Regressor(missing_targets="ignore").fit(X, Ym)


# ----------------------------------------------------------------------------- scoring, CV
def test_score_and_scorers_skip_the_missing_targets():
    X, Y, miss = _shared(seed=5)
    Ym = Y.copy()
    Ym[miss] = np.nan
    est = mt.L21Regressor(0.05, missing_targets="ignore").fit(X, Ym)
    pred = est.predict(X)
    from sklearn.metrics import r2_score

    r2 = np.mean([r2_score(Y[~miss[:, t], t], pred[~miss[:, t], t]) for t in range(3)])
    assert est.score(X, Ym) == pytest.approx(r2)
    Xl, yl, tl = _long_of(X, Y, miss)
    rows, tasks = np.nonzero(~miss)
    assert nmse_scorer(est, X, Ym) == pytest.approx(
        -mt.metrics.nmse(Y[rows, tasks], pred[rows, tasks]))
    labels = (Y > np.median(Y, axis=0)).astype(float)
    lm = labels.copy()
    lm[miss] = np.nan
    clf = mt.L21Classifier(0.01, missing_targets="ignore").fit(X, lm)
    S = clf.decision_function(X)
    expected = np.mean([mt.metrics.roc_auc(labels[~miss[:, t], t], S[~miss[:, t], t])
                        for t in range(3)])
    assert mean_auc_scorer(clf, X, lm) == pytest.approx(expected)
    seen = ~miss
    assert clf.score(X, lm) == pytest.approx(np.mean(clf.predict(X)[seen] == labels[seen]))
    with pytest.raises(ValueError, match="cannot leave out the missing targets"):
        get_scorer("r2", est)(est, X, Ym)


def test_cross_validation_splits_rows_and_scores_observed_targets():
    X, Y, miss = _shared(seed=6, n=60)
    Ym = Y.copy()
    Ym[miss] = np.nan
    est = mt.L21Regressor(missing_targets="ignore", tol=1e-8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cv = mt.MultiTaskCV(est, n_alphas=4, cv=3, selection="kfold", widen=0).fit(X, Ym)
    assert np.all(np.isfinite(cv.cv_results_["mean_test_score"]))
    # fold k of the CV scores its fit on the observed test targets only
    from sklearn.model_selection import KFold

    folds = list(KFold(3, shuffle=True, random_state=0).split(X))
    alpha = cv.cv_results_["params"][0]["alpha"]
    scores = []
    for tr, te in folds:
        fitted = mt.L21Regressor(alpha, missing_targets="ignore", tol=1e-8).fit(X[tr], Ym[tr])
        scores.append(nmse_scorer(fitted, X[te], Ym[te]))
    assert cv.cv_results_["mean_test_score"][0] == pytest.approx(np.mean(scores), rel=1e-6)
    best = mt.L21Regressor(missing_targets="ignore", tol=1e-8).set_params(**cv.best_params_)
    np.testing.assert_allclose(cv.coef_, best.fit(X, Ym).coef_, atol=1e-12)
    from sklearn.model_selection import GridSearchCV

    search = GridSearchCV(mt.L21Regressor(missing_targets="ignore"),
                          {"alpha": [0.01, 0.1]}, cv=3).fit(X, Ym)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


def test_stratified_folds_of_a_classifier_with_missing_labels():
    X, Y, miss = _shared(seed=7, n=60)
    labels = np.where(Y > np.median(Y, axis=0), 1.0, 0.0)
    labels[miss] = np.nan
    rng = np.random.default_rng(0)
    task = rng.integers(0, 2, 60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cv = mt.MultiTaskCV(mt.L21Classifier(missing_targets="ignore"), n_alphas=3,
                            cv=3, widen=0).fit(X, labels[:, 0], task)
    assert np.isfinite(cv.best_score_)


# ----------------------------------------------------------------------------- command line
def test_command_line_reads_empty_target_cells_as_missing(tmp_path, capsys):
    X, Y, miss = _shared(seed=8)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    Ym = Y.copy()
    Ym[miss] = np.nan
    for t in range(3):
        frame[f"y{t}"] = Ym[:, t]
    path = tmp_path / "wide.csv"
    frame.to_csv(path, index=False)
    model = tmp_path / "m.skops"
    args = ["fit", "--input", str(path), "--targets", "y0", "y1", "y2", "--model",
            "L21Regressor", "--param", "alpha=0.05", "--model-file", str(model)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "missing value" in err and "--missing-targets ignore" in err
    assert main([*args, "--missing-targets", "ignore"]) == 0
    fitted = load_model(model)["model"]
    direct = mt.L21Regressor(0.05, missing_targets="ignore").fit(X, Ym)
    np.testing.assert_array_equal(fitted.coef_, direct.coef_)
    assert observed_mask(Ym).sum() == (~miss).sum()
