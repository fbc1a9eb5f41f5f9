"""Block coordinate descent (l1 / l2,1 least squares on Gram matrices) against cvxpy."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from multitask.data import as_multitask_data
from multitask.estimators import IndependentLassoRegressor, L21Regressor
from multitask.losses import Squared
from multitask.penalties import L1, L21
from multitask.solvers.bcd import bcd_squared, supports_bcd


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


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("pen", ["l1", "l21"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bcd_reaches_cvxpy_objective(shared, pen, seed):
    """Relative objective gap below 1e-6 (shared and per-task designs)."""
    X, Y, Xs, ys = _problem(shared, seed)
    data, _ = as_multitask_data(X, Y)
    df = Squared(data)
    lam = 0.1 * df.lambda_max(pen)
    penalty = L1(lam) if pen == "l1" else L21(lam)
    assert supports_bcd(df, penalty)
    res = bcd_squared(df, penalty, tol=1e-10, max_iter=200000)
    ref = _cvxpy_objective(Xs, ys, pen, lam)
    assert res.converged
    assert (res.final_objective - ref) / abs(ref) < 1e-6
    assert res.info["residual"] < 1e-5


def test_estimators_choose_bcd_and_match_fista():
    X, Y, _, _ = _problem(True, 3)
    a = L21Regressor(alpha=0.05, tol=1e-10, max_iter=100000).fit(X, Y)
    b = L21Regressor(alpha=0.05, tol=1e-12, max_iter=100000, solver="fista").fit(X, Y)
    assert a.solver_result_.info.get("solver") == "bcd"
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-6)
    np.testing.assert_allclose(a.intercept_, b.intercept_, atol=1e-6)
    Xs, ys, _, _ = _problem(False, 4)
    c = IndependentLassoRegressor(alpha=0.05, tol=1e-10, max_iter=100000).fit(Xs, ys)
    assert c.solver_result_.info.get("solver") == "bcd"


def test_bcd_warm_start_and_max_iter_warning():
    X, Y, _, _ = _problem(True, 5)
    data, _ = as_multitask_data(X, Y)
    df = Squared(data)
    pen = L21(0.01 * df.lambda_max("l21"))
    full = bcd_squared(df, pen, tol=1e-10, max_iter=100000)
    warm = bcd_squared(df, pen, coef_init=full.W, tol=1e-10, max_iter=100000)
    assert warm.n_iter <= 2
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        bcd_squared(df, pen, tol=1e-14, max_iter=2)


def test_bcd_refuses_unsupported_problems():
    X, Y, _, _ = _problem(True, 6)
    data, _ = as_multitask_data(X, Y)
    with pytest.raises(ValueError, match="l1 or"):
        bcd_squared(Squared(data), _Trace(), tol=1e-6)
    with pytest.raises(ValueError, match="solver"):
        L21Regressor(solver="newton").fit(X, Y)


class _Trace(L21):
    name = "trace"

    def __init__(self):
        super().__init__(0.1)
