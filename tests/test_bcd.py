"""Block coordinate descent (l1 / l2,1 least squares on Gram matrices) against cvxpy.

``BlockCoordinateDescent`` needs a ``"quadratic"`` datafit and a ``"row_prox"`` penalty; it stops,
like every solver, when the relative optimality measure is at most ``tol``.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from multitask.data import as_multitask_data
from multitask.estimators import IndependentLassoRegressor, L21Regressor
from multitask.losses import Logistic, Squared
from multitask.penalties import L1, L21, TraceNorm
from multitask.solvers import BlockCoordinateDescent, optimality


def _problem(shared, seed):
    rng = np.random.default_rng(seed)
    d, m = 6, 4
    if shared:
        X = rng.standard_normal((40, d)) * rng.uniform(0.2, 5, d) + 2
        Y = X @ rng.standard_normal((d, m)) + rng.standard_normal((40, m))
        return X, Y, [X] * m, [Y[:, t] for t in range(m)]
    Xs = [rng.standard_normal((rng.integers(12, 30), d)) * rng.uniform(0.2, 5, d) + 1
          for _ in range(m)]
    ys = [X @ rng.standard_normal(d) + 3 + rng.standard_normal(len(X)) for X in Xs]
    return Xs, ys, Xs, ys


def _cvxpy_objective(Xs, ys, pen, lam):
    d, m = Xs[0].shape[1], len(Xs)
    W, b = cp.Variable((d, m)), cp.Variable(m)
    fit = sum(cp.sum_squares(Xs[t] @ W[:, t] + b[t] - ys[t]) / (2 * len(ys[t])) for t in range(m))
    reg = cp.sum(cp.abs(W)) if pen == "l1" else cp.sum(cp.norm(W, 2, axis=1))
    prob = cp.Problem(cp.Minimize(fit + lam * reg))
    prob.solve(solver="CLARABEL")
    return prob.value


def _alpha_max(df, pen):
    return (L1 if pen == "l1" else L21)(1.0).alpha_max(df.grad_at_zero())


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("pen", ["l1", "l21"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bcd_reaches_cvxpy_objective(shared, pen, seed):
    """Relative objective gap below 1e-6 (shared and per-task designs); the optimality
    measure at the returned point is at most tol."""
    X, Y, Xs, ys = _problem(shared, seed)
    data, _ = as_multitask_data(X, Y)
    df = Squared(data)
    lam = 0.1 * _alpha_max(df, pen)
    penalty = L1(lam) if pen == "l1" else L21(lam)
    solver = BlockCoordinateDescent(tol=1e-10, max_iter=200000)
    assert solver.supports(df, penalty) and solver.missing(df, penalty) == []
    res = solver.solve(df, penalty)
    ref = _cvxpy_objective(Xs, ys, pen, lam)
    assert res.converged
    assert abs(res.final_objective - ref) / abs(ref) < 1e-6
    assert res.optimality <= 1e-10
    # the reported gap is the certificate computed with the solver's tol as its target (the
    # costlier corrections are skipped once the first dual point meets it)
    assert optimality(df, penalty, res.W, None, target=solver.tol) == pytest.approx(
        res.optimality, rel=1e-9)
    assert optimality(df, penalty, res.W, None) <= res.optimality * (1 + 1e-9)


def test_estimators_choose_bcd_and_match_fista():
    X, Y, _, _ = _problem(True, 3)
    a = L21Regressor(alpha=0.05, tol=1e-10, max_iter=100000).fit(X, Y)
    b = L21Regressor(alpha=0.05, tol=1e-12, max_iter=100000, solver="fista").fit(X, Y)
    assert a.solver_.name == "bcd" and b.solver_.name == "fista"
    assert a.optimality_ <= 1e-10 and b.optimality_ <= 1e-12
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-6)
    np.testing.assert_allclose(a.intercept_, b.intercept_, atol=1e-6)
    # the independent lasso, separable over the tasks, goes task by task (task_cd); block
    # coordinate descent reaches the same optimum
    Xs, ys, _, _ = _problem(False, 4)
    c = IndependentLassoRegressor(alpha=0.05, tol=1e-10, max_iter=100000).fit(Xs, ys)
    d = IndependentLassoRegressor(alpha=0.05, tol=1e-10, max_iter=100000,
                                  solver="bcd").fit(Xs, ys)
    assert c.solver_.name == "task_cd" and d.solver_.name == "bcd"
    np.testing.assert_allclose(c.coef_, d.coef_, atol=1e-6)


def test_bcd_warm_start_and_max_iter_warning():
    X, Y, _, _ = _problem(True, 5)
    data, _ = as_multitask_data(X, Y)
    df = Squared(data)
    pen = L21(0.01 * _alpha_max(df, "l21"))
    full = BlockCoordinateDescent(tol=1e-10, max_iter=100000).solve(df, pen)
    warm = BlockCoordinateDescent(tol=1e-10, max_iter=100000).solve(df, pen, coef_init=full.W)
    assert warm.converged and warm.n_iter <= 2
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        BlockCoordinateDescent(tol=1e-14, max_iter=2).solve(df, pen)


def test_bcd_refuses_unsupported_problems():
    """The solver checks declared capabilities and names what is missing."""
    X, Y, _, _ = _problem(True, 6)
    data, _ = as_multitask_data(X, Y)
    bcd = BlockCoordinateDescent(tol=1e-6)
    with pytest.raises(ValueError, match="trace penalty offers no 'row_prox'"):
        bcd.solve(Squared(data), TraceNorm(0.1))
    no_gram = Squared(data, use_gram=False)
    assert bcd.missing(no_gram, L21(0.1)) == ["the squared loss offers no 'quadratic'"]
    clf, _ = as_multitask_data(X, (Y > Y.mean(axis=0)).astype(int), classification=True)
    with pytest.raises(ValueError, match="logistic loss offers no 'quadratic'"):
        bcd.solve(Logistic(clf), L1(0.1))
    with pytest.raises(ValueError, match="solver"):
        L21Regressor(solver="lbfgs").fit(X, Y)


@pytest.mark.parametrize("solver", ["bcd", "cd", "task_cd"])
def test_warm_start_on_an_unseen_entry_does_not_stall(solver):
    """A warm start whose coefficient on a feature constant within a task's rows is not zero
    (a refit with ``warm_start=True`` on data where the feature became constant): the loss
    does not see that entry, the l1 term's minimizer is 0, and the coordinate descents set it
    there at once (block coordinate descent kept it and ran its whole ``max_iter``)."""
    rng = np.random.default_rng(0)
    Xs = [rng.standard_normal((20, 6)) + 1 for _ in range(4)]
    ys = [X @ rng.standard_normal(6) + rng.standard_normal(20) for X in Xs]
    Xb = [X.copy() for X in Xs]
    Xb[0][:, 2] = 3.0
    est = IndependentLassoRegressor(alpha=0.01, warm_start=True, solver=solver).fit(Xs, ys)
    assert est.coef_[0, 2] != 0.0
    est.fit(Xb, ys)
    assert est.converged_ and est.n_iter_ <= 100
    assert est.coef_[0, 2] == 0.0
