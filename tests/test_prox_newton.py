"""Proximal Newton (solvers/newton.py) and the fast per-task ROC AUC of the classifiers' CV.

* cvxpy's optimum of logistic and squared-hinge models with l2,1 / l1 rows, intercepts or
  not, row weights, a ridge, per-task, shared and sparse designs (1e-6 relative);
* accelerated gradient's objective on more row families (1e-9 relative at a gap of 1e-11);
* ill-conditioned (nearly separable) problems converge in few steps, a warm start at the
  solution takes none, and the estimators take it where it pays (few features);
* the per-task ROC AUC of ``roc_auc`` equals scikit-learn's (ties, weights).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from multitask import L21Classifier
from multitask.data import as_multitask_data
from multitask.losses import Logistic, Squared, SquaredHinge
from multitask.penalties import L1, L21, FusedSparseGroupLasso, GraphRegularization
from multitask.penalties.dirty import DirtyNorm
from multitask.solvers import ProximalGradient, ProxNewton
from multitask.solvers.certificate import duality_gap
from multitask.solvers.newton import prefer_newton


def _lists(seed=0, m=4, d=6, sparse=False, positives=None):
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((d, 2)) @ rng.standard_normal((2, m))
    Xs, ys = [], []
    for t in range(m):
        n = 30 + 5 * t
        X = rng.standard_normal((n, d)) + 0.5
        if sparse:
            X = X * (rng.random(X.shape) < 0.5)
        s = X @ B[:, t] + 0.7 * rng.standard_normal(n)
        k = n // 2 if positives is None else positives
        y = -np.ones(n)
        y[np.argsort(-s)[:k]] = 1.0
        Xs.append(sp.csr_matrix(X) if sparse else X)
        ys.append(y)
    return Xs, ys


def _objective(df, pen, res):
    return float(df.value(res.W, res.intercept_variable)) + float(pen.value(res.coef))


def _cvxpy(loss, Xs, ys, alpha, kind, intercept, weights=None, alpha_l2=0.0):
    cp = pytest.importorskip("cvxpy")
    d, m = Xs[0].shape[1], len(Xs)
    W = cp.Variable((d, m))
    b = cp.Variable(m) if intercept else None
    obj = 0
    for t, (X, y) in enumerate(zip(Xs, ys, strict=True)):
        X = X.toarray() if sp.issparse(X) else X
        w = np.ones(len(y)) if weights is None else weights[t]
        z = X @ W[:, t] + (b[t] if intercept else 0)
        if loss is Logistic:
            obj += cp.sum(cp.multiply(w, cp.logistic(-cp.multiply(y, z)))) / w.sum()
        else:
            obj += cp.sum(cp.multiply(w, cp.square(cp.pos(1 - cp.multiply(y, z))))) / w.sum()
    obj += alpha_l2 / 2 * cp.sum_squares(W)
    obj += alpha * (cp.sum(cp.norm(W, 2, axis=1)) if kind == "l21" else cp.sum(cp.abs(W)))
    prob = cp.Problem(cp.Minimize(obj))
    try:
        prob.solve(solver=cp.CLARABEL)
    except cp.error.SolverError:
        pass
    if prob.status != "optimal":  # the interior point stalls on a few squared hinges
        prob.solve(solver=cp.SCS, eps=1e-11, max_iters=10**6)
    assert prob.status == "optimal", prob.status
    return float(prob.value)


@pytest.mark.parametrize("loss", [Logistic, SquaredHinge])
@pytest.mark.parametrize("kind", ["l21", "l1"])
@pytest.mark.parametrize("intercept,weights,sparse,alpha_l2", [
    (True, False, False, 0.0), (True, True, False, 0.0), (False, False, True, 0.0),
    (True, False, True, 0.05)])
def test_reaches_the_cvxpy_optimum(loss, kind, intercept, weights, sparse, alpha_l2):
    Xs, ys = _lists(1, sparse=sparse)
    rng = np.random.default_rng(2)
    sw = [rng.uniform(0.2, 3.0, len(y)) for y in ys] if weights else None
    data, _ = as_multitask_data(Xs, ys, classification=True, sample_weight=sw)
    df = loss(data, fit_intercept=intercept, center=intercept, alpha_l2=alpha_l2)
    g = df.grad_at_zero()
    pen = L21(0.05 * L21(1).alpha_max(g)) if kind == "l21" else L1(0.05 * L1(1).alpha_max(g))
    res = ProxNewton(tol=1e-10).solve(df, pen)
    assert res.converged and res.optimality <= 1e-10
    ref = _cvxpy(loss, Xs, ys, pen.alpha, kind, intercept, sw, alpha_l2)
    assert abs(_objective(df, pen, res) - ref) <= 1e-6 * max(1.0, abs(ref))


@pytest.mark.parametrize("loss", [Logistic, SquaredHinge])
@pytest.mark.parametrize("make", [
    lambda g: L21(0.1 * L21(1).alpha_max(g)),
    lambda g: FusedSparseGroupLasso(0.02 * L1(1).alpha_max(g), 0.02, 0.05 * L21(1).alpha_max(g)),
    lambda g: DirtyNorm(0.3 * L21(1).alpha_max(g), 0.5 * L1(1).alpha_max(g), 2.0),
    lambda g: GraphRegularization(0.05, np.eye(4) - np.full((4, 4), 0.25),
                                  0.1 * L1(1).alpha_max(g)),
], ids=["l21", "fused", "dirty", "graph"])
def test_same_objective_as_accelerated_gradient(loss, make):
    """Row families beyond the elastic net and a task coupling: the objective of accelerated
    gradient at a gap of 1e-11, on a shared design."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((80, 7))
    Y = np.where(X[:, :2] @ rng.standard_normal((2, 4)) + rng.standard_normal((80, 4)) > 0,
                 1, 0)
    data, _ = as_multitask_data(X, Y, classification=True)
    df = loss(data, center=True)
    pen = make(df.grad_at_zero())
    res = ProxNewton(tol=1e-11).solve(df, pen)
    ref = ProximalGradient(tol=1e-11, max_iter=500_000).solve(df, pen)
    assert res.converged and ref.converged
    p, q = _objective(df, pen, res), _objective(df, pen, ref)
    assert abs(p - q) <= 1e-9 * abs(q)
    cert = duality_gap(df, pen, res.coef, res.intercept_variable)
    assert cert.relative_gap <= 1e-11


def test_nearly_separable_tasks_take_few_steps_and_a_warm_start_none():
    """A few positives per task and a weak penalty (curvature far below the loss's bound,
    where accelerated gradient crawls): a few dozen steps to a gap of 1e-9; restarted from
    its solution, no step."""
    Xs, ys = _lists(4, m=8, d=9, positives=4)
    data, _ = as_multitask_data(Xs, ys, classification=True)
    df = Logistic(data, center=True)
    pen = L21(1e-3 * L21(1).alpha_max(df.grad_at_zero()))
    res = ProxNewton(tol=1e-9).solve(df, pen)
    assert res.converged and res.n_iter <= 40
    again = ProxNewton(tol=1e-9).solve(df, pen, coef_init=res.coef,
                                       intercept_init=res.intercept_variable)
    assert again.converged and again.n_iter == 0
    hist = np.asarray(res.objective)
    assert np.all(np.diff(hist) <= 1e-12 * np.abs(hist[1:]))  # descent


def test_squared_hinge_task_beyond_its_margins():
    """A task whose rows all lie beyond the squared hinge's margin at the start has no
    curvature there (the floor keeps the step defined); the run still converges (to 1e-6:
    the optimum sits a few 1e-9 inside the margin, where the generalized Hessian jumps)."""
    rng = np.random.default_rng(5)
    Xs, ys = _lists(5, m=3, d=4)
    Xs[0] = np.column_stack([50.0 * ys[0], rng.standard_normal((len(ys[0]), 3))])
    data, _ = as_multitask_data(Xs, ys, classification=True)
    df = SquaredHinge(data, fit_intercept=False)
    pen = L21(1e-3)
    res = ProxNewton(tol=1e-6).solve(df, pen, coef_init=np.r_[[[1.0, 0.0, 0.0]],
                                                              np.zeros((3, 3))])
    assert res.converged
    ref = ProximalGradient(tol=1e-6, max_iter=500_000).solve(df, pen)
    assert _objective(df, pen, res) <= _objective(df, pen, ref) * (1 + 1e-6)


def test_estimators_take_it_with_few_features():
    Xs, ys = _lists(6, m=5, d=9)
    clf = L21Classifier(alpha=0.01).fit(Xs, [(y > 0).astype(int) for y in ys])
    assert isinstance(clf.solver_, ProxNewton) and clf.converged_
    data, _ = as_multitask_data(Xs, ys, classification=True)
    assert prefer_newton(Logistic(data, center=True), L21(0.1))
    assert not prefer_newton(Squared(data), L21(0.1))  # the squared loss has its own
    rng = np.random.default_rng(0)
    wide = [rng.standard_normal((40, 100)) for _ in range(3)]
    data, _ = as_multitask_data(wide, [np.sign(X[:, 0] + 0.1) for X in wide],
                                classification=True)
    assert not prefer_newton(Logistic(data, center=True), L21(0.1))
    with pytest.raises(ValueError, match="hessian"):
        ProxNewton().check(Squared(data), L21(0.1))


def test_binary_auc_is_scikit_learns():
    """The per-task AUCs ``roc_auc`` computes without scikit-learn's per-call checks equal
    ``roc_auc_score`` (ties, weights with zeros), and infinite scores still raise its
    error."""
    from sklearn.metrics import roc_auc_score

    from multitask.metrics import roc_auc

    rng = np.random.default_rng(0)
    for k in range(300):
        n = int(rng.integers(3, 40))
        y = (rng.random(n) < rng.uniform(0.1, 0.9)).astype(int)
        y[:2] = [0, 1]
        s = np.round(rng.standard_normal(n), int(rng.integers(0, 3)))  # ties
        w = None if k % 2 else rng.uniform(0.0, 2.0, n) * (rng.random(n) < 0.8)
        if w is not None:
            w[:2] = 1.0
        got = roc_auc([y], [s], average=None, sample_weight=None if w is None else [w])
        assert got[0] == pytest.approx(roc_auc_score(y, s, sample_weight=w), abs=1e-14)
    with pytest.raises(ValueError), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        roc_auc([np.array([0, 1, 1])], [np.array([0.0, np.inf, 1.0])])


def test_auto_newton_hands_over_to_gradient_on_a_problem_without_a_minimizer():
    """Mean regularization leaves the mean task free: on separable classes the logistic loss
    has no minimizer along it. solver='auto' takes Newton (few features), which must not spend
    its whole budget in costly steps: after NEWTON_AUTO_MAX_ITER it hands over to
    accelerated gradient, and the fit says it did not converge."""
    import time
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from multitask import MeanRegularizedClassifier
    from multitask.estimators.base import NEWTON_AUTO_MAX_ITER
    from multitask.persistence import check_model

    rng = np.random.default_rng(0)
    Xs = [rng.standard_normal((20, 5)) for _ in range(3)]
    ys = [(X[:, 0] > 0).astype(int) for X in Xs]  # separable in every task
    t0 = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = MeanRegularizedClassifier(max_iter=2000).fit(Xs, ys)
    cpu = time.process_time() - t0
    assert est.solver_.name == "newton"
    assert est.solver_info_["newton_iter"] == NEWTON_AUTO_MAX_ITER
    assert est.solver_info_["handed_over_to"] == "fista"
    check_model(est)  # a model file of it loads: its info still names solver_
    assert est.n_iter_ == 2000 and not est.converged_
    assert any(issubclass(w.category, ConvergenceWarning) for w in caught)
    assert cpu < 10.0  # 2,000 Newton steps took about 20 s
