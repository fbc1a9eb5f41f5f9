"""The linear program with a polyhedral norm as the penalty, and its dual program.

The l1 and l1,inf norms declare ``"lp"`` with a cost on their bound variables
(:meth:`~multitask.penalties.base.Penalty.lp_cost`), so that the pinball loss with those
penalties is solved exactly by :class:`~multitask.solvers.lp.LinearProgram`, on the primal
program or on its dual (a row per weight instead of a row per data row; the weights are the
marginals of its equality rows). Pinned here: both programs reach scikit-learn's
``QuantileRegressor`` and cvxpy's optimum, the dual's weights are a vertex as sparse as the
primal's, the certificate is the model's objective against the dual program's, and
``solver="auto"`` takes the linear program for quantile regression with an l1 penalty beyond
the primal's size bound when the dual is small.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import QuantileRegressor

import multitask as mt
from multitask.data import as_multitask_data
from multitask.losses import get_datafit
from multitask.penalties import L1
from multitask.penalties.dirty import L1InfNorm
from multitask.penalties.l1inf import L1InfBall
from multitask.solvers.lp import (
    LP_AUTO_MAX_ENTRIES,
    LP_DUAL_AUTO_MAX_ENTRIES,
    LinearProgram,
    build_lp,
)


def _tasks(seed=0, sizes=(40, 75, 55), d=5):
    rng = np.random.default_rng(seed)
    W = 0.5 * rng.standard_normal((d, len(sizes)))
    Xs = [rng.standard_normal((n, d)) for n in sizes]
    ys = [X @ W[:, t] + rng.standard_t(3, len(X)) for t, X in enumerate(Xs)]
    return Xs, ys


def _pinball(Xs, ys, W, b, tau):
    out = 0.0
    for t, (X, y) in enumerate(zip(Xs, ys, strict=True)):
        r = y - X @ W[:, t] - b[t]
        out += float(np.mean(np.where(r >= 0, tau * r, (tau - 1.0) * r)))
    return out


@pytest.mark.parametrize("form", ["primal", "dual"])
@pytest.mark.parametrize("tau", [0.2, 0.5, 0.9])
def test_l1_penalty_is_quantile_regressor_per_task(form, tau):
    """Independent l1 penalties decouple: each task is scikit-learn's ``QuantileRegressor``
    (HiGHS on its own program), the same objective to 1e-9 and a certified gap below 1e-9."""
    Xs, ys = _tasks()
    alpha = 0.02
    data, _ = as_multitask_data(Xs, ys)
    datafit = get_datafit("quantile", data, True, quantile=tau)
    res = LinearProgram(form=form, tol=1e-9).solve(datafit, L1(alpha))
    assert res.info["form"] == form
    assert res.converged and res.optimality <= 1e-9
    ours = _pinball(Xs, ys, res.W, res.intercept_variable, tau) + alpha * np.abs(res.W).sum()
    peer = 0.0
    for X, y in zip(Xs, ys, strict=True):
        sk = QuantileRegressor(alpha=alpha, quantile=tau, solver="highs").fit(X, y)
        peer += _pinball([X], [y], sk.coef_[:, None], [sk.intercept_], tau)
        peer += alpha * float(np.abs(sk.coef_).sum())
    assert ours == pytest.approx(peer, rel=1e-9)
    assert res.info["best_objective"] == pytest.approx(ours, rel=1e-12)


def test_dual_program_recovers_the_primal_vertex():
    """The dual program's equality marginals are the primal's weights and intercepts: the same
    point as the primal program's (a unique optimum), with its exact zeros."""
    Xs, ys = _tasks(1)
    data, _ = as_multitask_data(Xs, ys)
    datafit = get_datafit("quantile", data, True, quantile=0.4)
    pen = L1(0.05)
    primal = LinearProgram(form="primal", method="highs-ds").solve(datafit, pen)
    dual = LinearProgram(form="dual").solve(datafit, pen)
    assert dual.info["lp_shape"][0] < primal.info["lp_shape"][0]
    np.testing.assert_allclose(dual.W, primal.W, atol=1e-9)
    np.testing.assert_allclose(dual.intercept_variable, primal.intercept_variable, atol=1e-9)
    np.testing.assert_array_equal(dual.W == 0, primal.W == 0)
    assert 0 < np.count_nonzero(dual.W) < dual.W.size


def test_l1inf_norm_penalty_reaches_cvxpy():
    """The penalized l1,inf norm (a bound per feature row, of cost ``alpha``): both programs
    reach cvxpy's optimum of ``pinball + alpha sum_j max_t |W_jt|``."""
    cp = pytest.importorskip("cvxpy")
    Xs, ys = _tasks(2)
    tau, alpha = 0.3, 0.03
    data, _ = as_multitask_data(Xs, ys)
    datafit = get_datafit("quantile", data, True, quantile=tau)
    d, m = Xs[0].shape[1], len(Xs)
    W, b = cp.Variable((d, m)), cp.Variable(m)
    loss = 0
    for t, (X, y) in enumerate(zip(Xs, ys, strict=True)):
        r = y - X @ W[:, t] - b[t]
        loss += cp.sum(cp.maximum(tau * r, (tau - 1) * r)) / len(y)
    prob = cp.Problem(cp.Minimize(loss + alpha * cp.sum(cp.max(cp.abs(W), axis=1))))
    prob.solve(solver=cp.CLARABEL)
    for form in ("primal", "dual"):
        res = LinearProgram(form=form, tol=1e-9).solve(datafit, L1InfNorm(alpha))
        F = _pinball(Xs, ys, res.W, res.intercept_variable, tau)
        F += alpha * float(np.abs(res.W).max(axis=1).sum())
        assert F == pytest.approx(prob.value, rel=1e-6)
        assert F <= prob.value * (1 + 1e-9)  # an exact vertex: no worse than the interior point
        assert res.converged


def test_ball_constraint_gives_the_same_optimum_in_both_programs():
    """A set (no cost) in the dual program: the radius enters the dual's objective; the hinge
    loss in an l1,inf ball reaches the primal's optimum."""
    rng = np.random.default_rng(3)
    Xs = [rng.standard_normal((n, 4)) for n in (50, 70)]
    ys = [np.where(X[:, 0] + 0.5 * rng.standard_normal(len(X)) > 0, 1, -1) for X in Xs]
    data, _ = as_multitask_data(Xs, ys)
    datafit = get_datafit("hinge", data, True, center=False)
    ball = L1InfBall(0.7)
    values = []
    for form in ("primal", "dual"):
        res = LinearProgram(form=form, tol=1e-8).solve(datafit, ball)
        assert np.isfinite(ball.value(res.W)) and res.converged
        values.append(datafit.value(res.W, res.intercept_variable))
    assert values[1] == pytest.approx(values[0], rel=1e-9)


def test_lp_cost_is_the_norm():
    """``k^T u`` at the smallest feasible bounds ``u`` is the penalty's value."""
    rng = np.random.default_rng(4)
    W = rng.standard_normal((3, 4))
    for pen, u in ((L1(0.3), np.abs(W.T.ravel())), (L1InfNorm(0.3), np.abs(W).max(axis=1))):
        A_w, A_u, c, n_aux = pen.lp_constraints(3, 4)
        assert n_aux == u.size
        assert np.all(A_w @ W.T.ravel() + A_u @ u <= c + 1e-15)
        assert pen.lp_cost(3, 4) @ u == pytest.approx(pen.value(W))
    assert L1InfBall(1.0).lp_cost(3, 4) is None


def test_program_objective_holds_the_penalty_cost():
    """:func:`build_lp` puts ``alpha`` (over the design's scale) on the bound variables."""
    Xs, ys = _tasks(5, sizes=(10, 12), d=3)
    data, _ = as_multitask_data([1e4 * X for X in Xs], ys)
    datafit = get_datafit("quantile", data, True, quantile=0.5)
    c, _, _, _, sizes = build_lp(datafit, L1(0.2), scale=1e4)
    np.testing.assert_allclose(c[sizes["W"] : sizes["W"] + sizes["u"]], 0.2 / 1e4)


def test_auto_takes_the_dual_program_beyond_the_primal_bound():
    """Quantile regression with an l1 penalty on more stored entries than the primal program's
    bound: ``solver="auto"`` still takes the linear program (its dual: a row per weight), and
    the fit is certified."""
    rng = np.random.default_rng(6)
    d, m = 10, 4
    n = LP_AUTO_MAX_ENTRIES // (d * m) + 500
    assert n * d * m <= LP_DUAL_AUTO_MAX_ENTRIES
    Xs = [rng.standard_normal((n, d)) for _ in range(m)]
    ys = [X[:, 0] + rng.standard_normal(n) for X in Xs]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = mt.IndependentLassoRegressor(0.01, loss="quantile", quantile=0.7).fit(Xs, ys)
    assert type(est.solver_) is LinearProgram
    assert est.solver_info_["form"] == "dual"
    assert est.converged_ and est.optimality_ <= est.tol


def test_sparse_design_in_the_dual_program():
    """A sparse design gives the dense design's solution."""
    Xs, ys = _tasks(7)
    Xs_sparse = []
    for X in Xs:
        X = X.copy()
        X[np.abs(X) < 0.8] = 0.0
        Xs_sparse.append(X)
    dense = mt.IndependentLassoRegressor(0.01, loss="quantile").fit(Xs_sparse, ys)
    sparse = mt.IndependentLassoRegressor(0.01, loss="quantile").fit(
        [sp.csr_matrix(X) for X in Xs_sparse], ys)
    assert sparse.solver_info_["form"] == "dual"
    np.testing.assert_allclose(sparse.coef_, dense.coef_, atol=1e-9)


def test_bad_form_is_refused():
    with pytest.raises(ValueError, match="form must be one of"):
        LinearProgram(form="both")
