"""Coordinate descent task by task (:class:`multitask.solvers.task_cd.TaskCoordinateDescent`)
against cvxpy and scikit-learn's ``Lasso`` fitted task by task: the independent lasso and
elastic net on per-task and shared designs, with row weights, features constant within a
task, more features than rows; its certificate, its warm start and its refusals."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso

from multitask.data import as_multitask_data
from multitask.estimators import IndependentLassoRegressor, MultiTaskRegressor
from multitask.losses import Squared
from multitask.penalties import L1, L21
from multitask.solvers import optimality
from multitask.solvers.task_cd import TaskCoordinateDescent


def _per_task(seed=0, m=5, d=8, wide=False):
    """Per-task designs of unequal sizes (fewer rows than features where ``wide``), features
    far from zero, a feature constant within the first task."""
    rng = np.random.default_rng(seed)
    Xs, ys = [], []
    for t in range(m):
        n = int(rng.integers(4, 7)) if wide else int(rng.integers(12, 30))
        X = rng.standard_normal((n, d)) * rng.uniform(0.2, 5, d) + 1.5
        if t == 0:
            X[:, 2] = 3.0
        Xs.append(X)
        ys.append(X @ rng.standard_normal(d) + 2.0 + rng.standard_normal(n))
    return Xs, ys


def _cvxpy(Xs, ys, lam, alpha_l2=0.0, weights=None):
    """``sum_t sum_i w_i (x_i^T w_t + b_t - y_i)^2 / (2 sum_i w_i) + lam ||W||_1 +
    alpha_l2 ||W||_F^2 / 2`` by Clarabel."""
    d, m = Xs[0].shape[1], len(Xs)
    W, b = cp.Variable((d, m)), cp.Variable(m)
    fit = 0
    for t in range(m):
        w = np.ones(len(ys[t])) if weights is None else weights[t]
        r = Xs[t] @ W[:, t] + b[t] - ys[t]
        fit = fit + cp.sum(cp.multiply(w, cp.square(r))) / (2 * w.sum())
    prob = cp.Problem(cp.Minimize(fit + lam * cp.sum(cp.abs(W))
                                  + 0.5 * alpha_l2 * cp.sum_squares(W)))
    prob.solve(solver="CLARABEL")
    return prob.value


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("alpha_l2", [0.0, 0.3])
def test_reaches_the_cvxpy_objective(wide, seed, alpha_l2):
    """Relative objective within 1e-7 of Clarabel's (more rows than features and fewer, the
    elastic net by the datafit's ridge), the certified gap at most tol."""
    Xs, ys = _per_task(seed, wide=wide)
    data, _ = as_multitask_data(Xs, ys)
    df = Squared(data, alpha_l2=alpha_l2)
    lam = 0.05 * L1(1.0).alpha_max(df.grad_at_zero())
    solver = TaskCoordinateDescent(tol=1e-10, max_iter=100000)
    assert solver.missing(df, L1(lam)) == []
    res = solver.solve(df, L1(lam))
    ref = _cvxpy(Xs, ys, lam, alpha_l2)
    assert res.converged and res.optimality <= 1e-10
    assert abs(res.final_objective - ref) / abs(ref) < 1e-7
    assert optimality(df, L1(lam), res.W, None) <= 1e-10 * (1 + 1e-6)


def test_row_weights_against_cvxpy():
    """The weighted loss ``sum_i w_i ell_i / sum_i w_i`` of each task."""
    Xs, ys = _per_task(3)
    rng = np.random.default_rng(3)
    weights = [rng.uniform(0.2, 3.0, len(y)) for y in ys]
    est = IndependentLassoRegressor(alpha=0.05, solver="task_cd", tol=1e-10,
                                    max_iter=100000).fit(Xs, ys, sample_weight=weights)
    assert est.converged_
    ref = _cvxpy(Xs, ys, 0.05, weights=weights)
    assert abs(est.objective_ - ref) / abs(ref) < 1e-7


def test_matches_scikit_learn_lasso_task_by_task():
    """Each task's coefficients and intercept are scikit-learn's ``Lasso`` on that task (more
    features than rows), to the accuracy both reach."""
    Xs, ys = _per_task(4, m=6, d=30, wide=True)
    alpha = 0.05
    est = IndependentLassoRegressor(alpha=alpha, solver="task_cd", tol=1e-12,
                                    max_iter=100000).fit(Xs, ys)
    for t, (X, y) in enumerate(zip(Xs, ys, strict=True)):
        sk = Lasso(alpha=alpha, tol=1e-12, max_iter=1_000_000).fit(X, y)
        np.testing.assert_allclose(est.coef_[t], sk.coef_, atol=1e-7)
        assert est.intercept_[t] == pytest.approx(sk.intercept_, abs=1e-6)


def test_shared_design_agrees_with_block_coordinate_descent():
    """A design common to the tasks (2-D targets): the optimum of block coordinate descent."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((40, 7)) * rng.uniform(0.5, 3, 7) + 1
    Y = X @ rng.standard_normal((7, 4)) + rng.standard_normal((40, 4))
    a = IndependentLassoRegressor(alpha=0.1, solver="task_cd", tol=1e-11,
                                  max_iter=100000).fit(X, Y)
    b = IndependentLassoRegressor(alpha=0.1, solver="bcd", tol=1e-11,
                                  max_iter=100000).fit(X, Y)
    assert a.converged_ and b.converged_
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-7)
    np.testing.assert_allclose(a.intercept_, b.intercept_, atol=1e-7)


def test_extrapolation_keeps_the_optimum_and_input_untouched():
    """With and without Anderson's extrapolation: the same optimum; the data and the warm
    start are not modified."""
    Xs, ys = _per_task(6, wide=True)
    data, _ = as_multitask_data(Xs, ys)
    df = Squared(data)
    lam = 0.02 * L1(1.0).alpha_max(df.grad_at_zero())
    start = np.full((data.n_features, data.n_tasks), 0.1)
    kept = start.copy()
    X_before = [X.copy() for X in Xs]
    fits = [TaskCoordinateDescent(tol=1e-11, max_iter=100000, anderson=k).solve(
        df, L1(lam), coef_init=start) for k in (0, 5)]
    assert all(f.converged for f in fits)
    np.testing.assert_allclose(fits[0].W, fits[1].W, atol=1e-7)
    np.testing.assert_array_equal(start, kept)
    for X, Xb in zip(Xs, X_before, strict=True):
        np.testing.assert_array_equal(X, Xb)


def test_constant_feature_gets_no_weight():
    """A feature constant within a task's rows (centred away) keeps a zero coefficient in
    that task."""
    Xs, ys = _per_task(7)
    est = IndependentLassoRegressor(alpha=1e-4, solver="task_cd", tol=1e-10,
                                    max_iter=100000).fit(Xs, ys)
    assert est.coef_[0, 2] == 0.0


def test_budget_warns_and_reports_not_converged():
    Xs, ys = _per_task(8, wide=True)
    est = IndependentLassoRegressor(alpha=1e-3, solver="task_cd", tol=1e-14, max_iter=3)
    with pytest.warns(ConvergenceWarning):
        est.fit(Xs, ys)
    assert not est.converged_ and est.n_iter_ <= 3  # the passes share the budget


def test_refuses_what_it_cannot_solve():
    """A sparse design and a penalty coupling the tasks are refused with the reason."""
    Xs, ys = _per_task(9)
    data, _ = as_multitask_data([sp.csr_matrix(X) for X in Xs], ys)
    miss = TaskCoordinateDescent().missing(Squared(data), L1(0.1))
    assert any("sparse" in m for m in miss)
    data, _ = as_multitask_data(Xs, ys)
    miss = TaskCoordinateDescent().missing(Squared(data), L21(0.1))
    assert any("not separable over the entries" in m for m in miss)
    with pytest.raises(ValueError, match="not separable over the entries"):
        MultiTaskRegressor(penalty="l21", solver="task_cd").fit(Xs, ys)


def test_shared_design_with_missing_targets_agrees_with_block_coordinate_descent():
    """A shared design whose targets have gaps (``missing_targets="ignore"``: the pairs weigh
    nothing): each task's fit on its observed rows, as block coordinate descent's."""
    rng = np.random.default_rng(10)
    X = rng.standard_normal((30, 6)) + 0.5
    Y = X @ rng.standard_normal((6, 5)) + rng.standard_normal((30, 5))
    Y[rng.random(Y.shape) < 0.2] = np.nan
    fits = [IndependentLassoRegressor(alpha=0.05, solver=s, tol=1e-11, max_iter=100000,
                                      missing_targets="ignore").fit(X, Y)
            for s in ("task_cd", "bcd")]
    assert all(f.converged_ for f in fits)
    np.testing.assert_allclose(fits[0].coef_, fits[1].coef_, atol=1e-7)
    np.testing.assert_allclose(fits[0].intercept_, fits[1].intercept_, atol=1e-7)


def test_the_tasks_own_scales_certify_at_least_as_tightly():
    """The certificate from the dual point scaled task by task is no looser than the one
    whose single scale the task farthest from its optimum sets."""
    Xs, ys = _per_task(11, m=8, d=30, wide=True)
    data, _ = as_multitask_data(Xs, ys)
    df = Squared(data)
    lam = 0.01 * L1(1.0).alpha_max(df.grad_at_zero())
    res = TaskCoordinateDescent(tol=1e-4).solve(df, L1(lam))
    assert res.converged
    single = optimality(df, L1(lam), res.W, None, target=1e-4)
    assert res.optimality <= single * (1 + 1e-9)
