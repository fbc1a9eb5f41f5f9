"""MultiTaskKernelClassifier: reductions to LinearSVC, input validation, the kernel paths.

The estimator's strength is ``alpha = 1 / C`` of the SVM convention (LinearSVC's ``C``).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.svm import LinearSVC

from multitask.estimators.mtmkl import MultiTaskKernelClassifier, MultitaskKernelClassifier


def _data(T=3, n=180, d=6, seed=0, labels=("neg", "pos")):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    names = np.array([f"task{t}" for t in range(T)])
    tid = np.arange(n) % T
    W = rng.standard_normal((d, 1)) + 0.8 * rng.standard_normal((d, T))
    s = np.einsum("ij,ji->i", X, W[:, tid]) + 0.2 * tid + 0.6 * rng.standard_normal(n)
    y = np.where(s > 0, labels[1], labels[0])
    return X, y, names[tid]


def _fit(preset, X, y, task, **kw):
    kw = {"tol": 1e-11, "max_iter": 10**6, "random_state": 0, **kw}
    est = MultiTaskKernelClassifier(task_similarity=preset, **kw)
    return est.fit(X, y, task=task)


LSVC = dict(tol=1e-9, max_iter=10**6, dual=True)


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_union_predicts_like_pooled_linearsvc(loss):
    X, y, task = _data()
    est = _fit("union", X, y, task, alpha=1 / 0.4, loss=loss, fit_intercept=False)
    ref = LinearSVC(C=0.4, loss=loss, fit_intercept=False, **LSVC).fit(X, y)
    np.testing.assert_allclose(
        est.decision_function(X, task=task), ref.decision_function(X), atol=1e-4
    )
    assert np.array_equal(est.predict(X, task=task), ref.predict(X))
    np.testing.assert_allclose(est.coef_, np.repeat(ref.coef_, 3, axis=0), atol=1e-4)


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_individual_predicts_like_per_task_linearsvc(loss, fit_intercept):
    X, y, task = _data(seed=1)
    est = _fit(
        "individual",
        X,
        y,
        task,
        alpha=1 / 0.4,
        loss=loss,
        fit_intercept=fit_intercept,
        intercept_scaling=2.0,
    )
    scores = est.decision_function(X, task=task)
    for t in np.unique(task):
        m = task == t
        ref = LinearSVC(
            C=0.4, loss=loss, fit_intercept=fit_intercept, intercept_scaling=2.0, **LSVC
        ).fit(X[m], y[m])
        np.testing.assert_allclose(scores[m], ref.decision_function(X[m]), atol=1e-4)


def test_union_with_intercept_equals_task_indicator_features():
    X, y, task = _data(seed=2)
    est = _fit("union", X, y, task, alpha=1 / 0.4, fit_intercept=True, intercept_scaling=1.5)
    onehot = (task[:, None] == np.unique(task)[None, :]) * 1.5
    Z = np.hstack([X, onehot])
    ref = LinearSVC(C=0.4, loss="hinge", fit_intercept=False, **LSVC).fit(Z, y)
    np.testing.assert_allclose(
        est.decision_function(X, task=task), ref.decision_function(Z), atol=1e-4
    )


def test_sparse_input_and_learned_weights():
    X, y, task = _data(seed=3)
    dense = _fit("shared-individual", X, y, task, alpha=2.0)
    sparse = _fit("shared-individual", sp.csr_matrix(X), y, task, alpha=2.0)
    np.testing.assert_allclose(dense.theta_, sparse.theta_, atol=1e-6)
    np.testing.assert_allclose(dense.coef_, sparse.coef_, atol=1e-5)
    assert dense.theta_.shape == (2,) and np.all(dense.theta_ > 0)
    np.testing.assert_allclose(np.sum(dense.theta_**2), 1.0)
    np.testing.assert_allclose(
        dense.task_similarity_, dense.theta_[0] * np.eye(3) + dense.theta_[1] * np.ones((3, 3))
    )
    assert dense.duality_gap_ <= 1e-9 * dense.objective_[-1]
    assert set(dense.history_) >= {"objective_w", "objective_theta", "theta", "gap"}


def test_labels_any_two_values_and_row_order():
    X, y, task = _data(seed=4, labels=(3, 7))
    perm = np.random.default_rng(0).permutation(len(y))
    est = _fit("individual", X, y, task, alpha=1.0)
    est2 = _fit("individual", X[perm], y[perm], task[perm], alpha=1.0)
    assert list(est.classes_) == [3, 7]
    assert set(np.unique(est.predict(X, task=task))) <= {3, 7}
    np.testing.assert_allclose(
        est2.decision_function(X, task=task), est.decision_function(X, task=task), atol=1e-5
    )
    assert est.alpha_.shape == (len(y),)
    assert est.score(X, y, task=task) > 0.7


def test_kernel_paths_agree_with_linear():
    X, y, task = _data(n=120, seed=5)
    kw = dict(alpha=2.0, p=2.0, tol=1e-9)
    lin = _fit("shared-individual", X, y, task, **kw)
    pre = _fit("shared-individual", X @ X.T, y, task, kernel="precomputed", **kw)
    via = _fit("shared-individual", X, y, task, kernel="linear", solver="dcd", **kw)
    np.testing.assert_allclose(pre.theta_, lin.theta_, atol=1e-5)
    Xt = X[:40] + 0.1
    np.testing.assert_allclose(
        pre.decision_function(Xt @ X.T, task=task[:40]),
        lin.decision_function(Xt, task=task[:40]),
        atol=1e-4,
    )
    np.testing.assert_allclose(
        via.decision_function(Xt, task=task[:40]),
        lin.decision_function(Xt, task=task[:40]),
        atol=1e-4,
    )


def test_rbf_kernel_and_svc_solver_fit():
    X, y, task = _data(n=150, seed=6)
    rbf = MultiTaskKernelClassifier(
        kernel="rbf", kernel_params={"gamma": 0.2}, alpha=1.0, random_state=0
    ).fit(X, y, task=task)
    assert rbf.score(X, y, task=task) > 0.8
    svc = MultiTaskKernelClassifier(
        kernel="rbf", kernel_params={"gamma": 0.2}, alpha=1.0, solver="svc"
    ).fit(X, y, task=task)
    assert svc.score(X, y, task=task) > 0.8
    assert not hasattr(svc, "coef_")


def test_fixed_theta_and_p_infinity():
    X, y, task = _data(seed=7)
    van = _fit("shared-individual", X, y, task, p=np.inf)
    fix = _fit("shared-individual", X, y, task, theta=[1.0, 1.0])
    np.testing.assert_array_equal(van.theta_, [1.0, 1.0])
    np.testing.assert_allclose(van.coef_, fix.coef_, atol=1e-6)
    feda = _fit("feda", X, y, task)
    np.testing.assert_allclose(feda.coef_, van.coef_, atol=1e-5)  # I + 11^T


# ----------------------------------------------------------------- validation
def test_errors_name_the_problem_and_the_task():
    X, y, task = _data(seed=8)
    est = MultiTaskKernelClassifier(task_similarity="individual").fit(X, y, task=task)
    Xn = X.copy()
    Xn[4, 2] = np.nan
    with pytest.raises(ValueError, match=r"NaN.*row 4.*task1"):
        MultiTaskKernelClassifier().fit(Xn, y, task=task)
    with pytest.raises(ValueError, match="Unknown task id 'zzz'"):
        est.predict(X[:2], task=["zzz", "task0"])
    y1 = y.copy()
    y1[task == "task2"] = "pos"
    with pytest.raises(ValueError, match="task2.*one class"):
        MultiTaskKernelClassifier().fit(X, y1, task=task)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :4], task=task)
    with pytest.raises(ValueError, match="alpha must be > 0"):
        MultiTaskKernelClassifier(alpha=-1.0).fit(X, y, task=task)
    with pytest.raises(TypeError):
        MultiTaskKernelClassifier(C=1.0)  # now alpha = 1 / C
    with pytest.raises(ValueError, match="p must be >= 1"):
        MultiTaskKernelClassifier(p=0.5).fit(X, y, task=task)
    with pytest.raises(ValueError, match="loss"):
        MultiTaskKernelClassifier(loss="logistic").fit(X, y, task=task)
    with pytest.raises(ValueError, match="theta has shape"):
        MultiTaskKernelClassifier(theta=[1.0]).fit(X, y, task=task)
    with pytest.raises(ValueError, match="task kernel 0 of task_similarity has shape"):
        MultiTaskKernelClassifier(task_similarity=np.eye(2)).fit(X, y, task=task)
    with pytest.raises(ValueError, match="positive semidefinite"):
        MultiTaskKernelClassifier(task_similarity=-np.eye(3)).fit(X, y, task=task)


def test_deprecated_alias_warns_and_fits_the_same_model():
    X, y, task = _data(seed=9)
    with pytest.warns(FutureWarning, match="MultiTaskKernelClassifier"):
        old = MultitaskKernelClassifier(alpha=2.0, tol=1e-9, random_state=0)
    assert isinstance(old, MultiTaskKernelClassifier)
    new = MultiTaskKernelClassifier(alpha=2.0, tol=1e-9, random_state=0)
    np.testing.assert_array_equal(old.fit(X, y, task=task).coef_,
                                  new.fit(X, y, task=task).coef_)


def test_check_estimator():
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(
            MultiTaskKernelClassifier(task_similarity="individual", tol=1e-10), on_fail=None
        )
    failed = [
        (r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"
    ]
    assert not failed
