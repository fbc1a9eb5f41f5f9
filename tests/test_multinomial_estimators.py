"""More than two classes through the estimators: every linear classifier fits one multinomial
model per task (coef_ (n_tasks, n_classes, n_features)), in every input layout, with weights,
missing targets, warm starts, cross-validation and model files; what stays binary says so."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import multitask as mt
from multitask.persistence import ModelFileError, load_model, save_model

LABELS = np.array(["ant", "bee", "cat"])


def _lists(seed=0, sizes=(40, 55, 30, 45), d=6, K=3):
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((d, K))
    Xs = [rng.standard_normal((n, d)) for n in sizes]
    ys = [np.argmax(X @ B + 0.5 * rng.standard_normal((len(X), K)), axis=1) for X in Xs]
    ys[1][ys[1] == K - 1] = 0  # task 1 never sees the last class
    return Xs, [LABELS[y] for y in ys]


def _long(seed=0):
    Xs, ys = _lists(seed)
    task = np.repeat(np.arange(len(Xs)), [len(y) for y in ys])
    return np.vstack(Xs), np.concatenate(ys), task


def _classifiers():
    out = []
    for name in sorted(mt.__all__):
        obj = getattr(mt, name)
        if (inspect.isclass(obj) and name.endswith("Classifier") and name not in (
                "MultiTaskKernelClassifier", "MultitaskKernelClassifier")):
            out.append(obj)
    return out


@pytest.mark.parametrize("cls", _classifiers(), ids=lambda c: c.__name__)
def test_every_classifier_fits_three_classes(cls):
    X, y, task = _long()
    est = cls()
    if est.get_params().get("loss") != "logistic":
        est.set_params(loss="logistic")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence of the capped models' defaults
        est.fit(X, y, task)
    assert list(est.classes_) == list(LABELS)
    assert est.coef_.shape == (4, 3, 6) and est.intercept_.shape == (4, 3)
    P = est.predict_proba(X, task)
    assert P.shape == (len(y), 3) and np.allclose(P.sum(axis=1), 1.0)
    D = est.decision_function(X, task)
    assert D.shape == (len(y), 3)
    pred = est.predict(X, task)
    assert set(pred) <= set(LABELS)
    if cls is not mt.PooledClassifier:  # one model of every row: every class everywhere
        # the class task 1 never saw: intercept -inf, probability 0, never predicted
        assert np.isneginf(est.intercept_[1, 2])
        assert np.all(np.isfinite(np.delete(est.intercept_, 5)))
        assert np.all(P[task == 1, 2] == 0.0) and np.all(np.isneginf(D[task == 1, 2]))
        assert not np.any(pred[task == 1] == "cat")
    assert np.array_equal(pred, LABELS[np.argmax(P, axis=1)])
    assert est.score(X, y, task) > 0.7


def test_layouts_of_the_predictions():
    Xs, ys = _lists()
    est = mt.L21Classifier(alpha=0.01).fit(Xs, ys)
    P = est.predict_proba(Xs)
    assert isinstance(P, list) and [p.shape for p in P] == [(len(y), 3) for y in ys]
    long = mt.L21Classifier(alpha=0.01).fit(*_long())
    X, y, task = _long()
    order = np.random.default_rng(1).permutation(len(y))  # rows in any order
    assert np.allclose(long.predict_proba(X[order], task[order]),
                       long.predict_proba(X, task)[order])
    assert np.allclose(np.concatenate(P), long.predict_proba(X, task), atol=1e-6)
    rng = np.random.default_rng(2)
    Xsh = rng.standard_normal((50, 6))
    Y = LABELS[np.stack([np.argmax(Xsh @ rng.standard_normal((6, 3)), axis=1)
                         for _ in range(3)], axis=1)]
    shared = mt.TraceNormClassifier(alpha=0.01).fit(Xsh, Y)
    assert shared.coef_.shape == (3, 3, 6)
    assert shared.predict_proba(Xsh).shape == (50, 3, 3)
    assert shared.decision_function(Xsh).shape == (50, 3, 3)
    assert shared.predict(Xsh).shape == (50, 3) and shared.score(Xsh, Y) > 0.8


def test_two_classes_keep_their_shapes():
    X, y, task = _long()
    two = np.where(y == "cat", "bee", y)
    est = mt.L21Classifier(alpha=0.01).fit(X, two, task)
    assert est.coef_.shape == (4, 6) and est.intercept_.shape == (4,)
    assert est.predict_proba(X, task).shape == (len(y), 2)
    assert est.decision_function(X, task).shape == (len(y),)


def test_what_stays_binary_says_so():
    X, y, task = _long()
    with pytest.raises(ValueError, match="one class only"):
        mt.L21Classifier().fit(X, np.full(len(y), "ant"), task)
    with pytest.raises(ValueError, match=r"squared_hinge.*two-class loss.*loss='logistic'"):
        mt.L21Classifier(loss="squared_hinge").fit(X, y, task)
    with pytest.raises(ValueError, match="two-class loss"):
        mt.RobustMTLClassifier().fit(X, y, task)  # its default loss is the squared hinge
    with pytest.raises(ValueError, match="two-class model"):
        mt.MultiTaskKernelClassifier().fit(X, y, task)
    with pytest.raises(ValueError, match="divide-and-conquer"):
        mt.RobustMTLClassifier(loss="logistic", n_groups=2).fit(X, y, task)


def test_new_tasks_and_the_population_model_are_refused_clearly():
    X, y, task = _long()
    est = mt.TraceNormClassifier(alpha=0.01).fit(X, y, task)
    with pytest.raises(ValueError, match="two-class models only.*3 classes"):
        est.fit_new_tasks(X[task == 0], y[task == 0], np.full(np.sum(task == 0), 9))
    with pytest.raises(ValueError, match="population model"):
        est.predict(X, np.where(task == 0, 9, task), unknown_tasks="population")


def test_weights_repeat_rows_and_missing_targets_are_left_out():
    X, y, task = _long()
    rng = np.random.default_rng(3)
    k = rng.integers(0, 3, size=len(y))
    k[np.flatnonzero(task == 1)[:3]] = 1  # keep every class of every task
    k[[np.flatnonzero(y[task == t] == c)[0] + np.flatnonzero(task == t)[0]
       for t in range(4) for c in np.unique(y[task == t])]] = 1
    weighted = mt.L21Classifier(alpha=0.01, tol=1e-10).fit(X, y, task, sample_weight=k)
    rep = np.repeat(np.arange(len(y)), k)
    repeated = mt.L21Classifier(alpha=0.01, tol=1e-10).fit(X[rep], y[rep], task[rep])
    assert np.allclose(weighted.coef_, repeated.coef_, atol=1e-6)
    # a shared design with missing targets: each task fitted on its observed rows
    Xsh = rng.standard_normal((60, 6))
    Y = LABELS[np.stack([np.argmax(Xsh @ rng.standard_normal((6, 3)), axis=1)
                         for _ in range(2)], axis=1)].astype(object)
    Y[::7, 0] = None
    est = mt.L21Classifier(alpha=0.01, missing_targets="ignore").fit(Xsh, Y)
    assert est.coef_.shape == (2, 3, 6) and 0.7 < est.score(Xsh, Y) <= 1.0


def test_warm_start_resumes_and_alpha_max_zeroes_the_model():
    X, y, task = _long()
    est = mt.L21Classifier(alpha=0.05, warm_start=True, tol=1e-8).fit(X, y, task)
    first = est.n_iter_
    est.fit(X, y, task)
    assert est.n_iter_ < first
    top = mt.L21Classifier().alpha_max(X, y, task)
    zero = mt.L21Classifier(alpha=1.0001 * top).fit(X, y, task)
    assert not np.any(zero.coef_) and np.isfinite(top)
    inside = mt.L21Classifier(alpha=0.9 * top).fit(X, y, task)
    assert np.any(inside.coef_)
    grid = mt.L21Classifier().default_grid(X, y, task, n_alphas=4)["alpha"]
    assert grid[0] == pytest.approx(top)


def test_cross_validation_scores_the_log_loss_by_default():
    from multitask.model_selection import get_scorer, log_loss_scorer

    X, y, task = _long()
    Xt = np.column_stack([X, task])  # the task ids in a column: scorers see them
    cv = mt.MultiTaskCV(mt.L21Classifier(task_column=-1), n_alphas=4, cv=3).fit(Xt, y)
    best = cv.best_estimator_
    assert best.coef_.shape == (4, 3, 6)
    assert cv.predict_proba(Xt).shape == (len(y), 3)
    assert get_scorer(None, best)(best, Xt, y) == pytest.approx(log_loss_scorer(best, Xt, y))
    P = best.predict_proba(Xt)
    expected = -np.mean(-np.log(P[np.arange(len(y)), np.searchsorted(LABELS, y)]))
    assert log_loss_scorer(best, Xt, y) == pytest.approx(expected)
    assert np.all(np.isfinite(cv.scores_)) and np.max(cv.scores_) < 0
    with pytest.raises(ValueError, match="two classes"):
        mt.MultiTaskCV(mt.L21Classifier(task_column=-1), n_alphas=2, cv=2,
                       scoring="auc").fit(Xt, y)


@pytest.mark.parametrize("cls", [mt.L21Classifier, mt.DirtyModelClassifier,
                                 mt.MeanRegularizedClassifier, mt.ClusteredMTLClassifier,
                                 mt.RobustFeatureLearningClassifier, mt.PooledClassifier])
def test_model_files_keep_a_multiclass_model(cls, tmp_path):
    X, y, task = _long()
    est = cls().fit(X, y, task)
    path = tmp_path / "m.skops"
    save_model(est, path)
    back = load_model(path)
    assert np.array_equal(back.predict_proba(X, task), est.predict_proba(X, task))
    est.classes_ = est.classes_[:2]  # a file whose classes do not match coef_
    save_model(est, path)
    with pytest.raises(ModelFileError, match="classes_"):
        load_model(path)


def test_pooled_model_is_one_multinomial_logistic_regression():
    from sklearn.linear_model import LogisticRegression

    X, y, task = _long()
    alpha = 1e-2
    est = mt.PooledClassifier(alpha=alpha, tol=1e-12, max_iter=100000).fit(X, y, task)
    lr = LogisticRegression(C=1.0 / (alpha * len(y)), tol=1e-12, max_iter=10000).fit(X, y)
    assert np.allclose(est.coef_[2], lr.coef_, atol=1e-6)
    assert np.allclose(est.predict_proba(X, task), lr.predict_proba(X), atol=1e-6)


def test_solvers_that_need_one_score_per_row_do_not_apply():
    from multitask.solvers import Problem, explain

    X, y, task = _long()
    est = mt.L1InfClassifier(loss="logistic")
    data, _, _ = est._convert(X, y, task)
    datafit = est._make_datafit(data)
    rows = {r["solver"]: r for r in explain(Problem(datafit, est._make_penalty(datafit)))}
    for name in ("newton", "subgradient", "ladm", "bcd", "exact"):
        assert not rows[name]["applies"], name
    assert rows["fista"]["applies"]


def test_distributed_input_with_more_than_two_classes_is_refused():
    distributed = pytest.importorskip("distributed")
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y, task = _long()
    cols = [f"f{j}" for j in range(X.shape[1])]
    ddf = dd.from_pandas(pd.DataFrame(X, columns=cols).assign(y=y, task=task), npartitions=1)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        with pytest.raises(ValueError, match="more than two classes are not supported on "
                                             "distributed input"):
            mt.L21Classifier().fit(ddf[cols], ddf["y"], task=ddf["task"])
