"""FISTA: optimal objectives against cvxpy, monotone ISTA, max_iter, warm starts, stopping.

Objectives follow the scaling convention
``sum_t (1 / n_t) sum_i ell(y_i, x_i^T w_t + b_t) + lam * Omega(W)`` with unpenalized
intercepts; the cvxpy problems below are written from that formula on the user's arrays. The
solver is ``ProximalGradient(...).solve(datafit, penalty)``; it stops when the relative
optimality measure (``multitask.solvers.optimality``) is at most ``tol``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from multitask.data import as_multitask_data
from multitask.estimators import L21Regressor, TraceNormClassifier, TraceNormRegressor
from multitask.losses import Logistic, Squared
from multitask.penalties import L1, L21, L1Ball, SumOfParts, TraceBall, TraceNorm
from multitask.solvers import ProximalGradient, SolverResult, optimality
from multitask.solvers.certificate import duality_gap

cp = pytest.importorskip("cvxpy")

OMEGA = {
    "trace": (TraceNorm, lambda W: cp.normNuc(W)),
    "l21": (L21, lambda W: cp.sum(cp.norm(W, 2, axis=1))),
}
MODEL = {"trace": TraceNormRegressor, "l21": L21Regressor}


def fista(datafit, penalty, *, coef_init=None, intercept_init=None, callback=None,
          **settings):
    """``ProximalGradient(**settings).solve(...)``: the solver of this file, in one call."""
    return ProximalGradient(**settings).solve(datafit, penalty, coef_init=coef_init,
                                              intercept_init=intercept_init,
                                              callback=callback)


def _alpha_max(datafit, penalty_cls):
    """The penalty's alpha_max from the loss gradient at zero."""
    return penalty_cls(1.0).alpha_max(datafit.grad_at_zero())


def _cvx_squared(Xs, ys, W, b):
    return sum(cp.sum_squares(X @ W[:, t] + b[t] - y) / (2 * len(y))
               for t, (X, y) in enumerate(zip(Xs, ys, strict=True)))


def _cvx_logistic(Xs, ys, W, b):
    """ys in {-1, +1}."""
    return sum(cp.sum(cp.logistic(-cp.multiply(y, X @ W[:, t] + b[t]))) / len(y)
               for t, (X, y) in enumerate(zip(Xs, ys, strict=True)))


def _solve_cvx(Xs, ys, lam, omega, loss=_cvx_squared, constraint=None):
    d, m = Xs[0].shape[1], len(Xs)
    W, b = cp.Variable((d, m)), cp.Variable(m)
    if constraint is None:
        prob = cp.Problem(cp.Minimize(loss(Xs, ys, W, b) + lam * omega(W)))
    else:
        prob = cp.Problem(cp.Minimize(loss(Xs, ys, W, b)), [constraint(W)])
    prob.solve(solver=cp.CLARABEL)
    assert prob.status == cp.OPTIMAL
    return prob.value, W.value


def _assert_same_optimum(ours, theirs, rtol=1e-6):
    """Our objective is within rtol of cvxpy's optimum (and not meaningfully below it)."""
    assert abs(ours - theirs) <= rtol * abs(theirs), (ours, theirs, (ours - theirs) / theirs)


# ----------------------------------------------------------------------------- vs cvxpy


@pytest.mark.parametrize("name", ["trace", "l21"])
def test_school_subset_reaches_cvxpy_optimum(name, school_subset):
    """15 schools (per-task X), squared loss, intercepts: the model's objective = cvxpy's."""
    Xs, ys = school_subset
    data, _ = as_multitask_data(Xs, ys)
    df = Squared(data)
    pen_cls, omega = OMEGA[name]
    lam = 0.3 * _alpha_max(df, pen_cls)
    F_cvx, W_cvx = _solve_cvx(Xs, ys, lam, omega)
    est = MODEL[name](alpha=lam, tol=1e-9, max_iter=20000).fit(Xs, ys)
    assert est.converged_ and est.optimality_ <= 1e-9
    F_ours = df.value(est.coef_.T) + pen_cls(lam).value(est.coef_.T)
    _assert_same_optimum(F_ours, F_cvx)
    assert est.solver_info_["best_objective"] == pytest.approx(F_ours, rel=1e-12)
    np.testing.assert_allclose(est.coef_.T, W_cvx, atol=1e-3 * np.abs(W_cvx).max())
    # and with the default tolerance the objective is already within 1e-5
    default = MODEL[name](alpha=lam).fit(Xs, ys)
    assert default.tol == 1e-4 and default.optimality_ <= 1e-4
    _assert_same_optimum(df.value(default.coef_.T) + pen_cls(lam).value(default.coef_.T),
                         F_cvx, rtol=1e-5)


@pytest.mark.parametrize("name", ["trace", "l21"])
def test_shared_design_reaches_cvxpy_optimum(name, datagen):
    X, Y = datagen.shared(n=60, d=8, m=5, seed=11)
    data, _ = as_multitask_data(X, Y)
    df = Squared(data)
    pen_cls, omega = OMEGA[name]
    lam = 0.2 * _alpha_max(df, pen_cls)
    F_cvx, _ = _solve_cvx([X] * 5, [Y[:, t] for t in range(5)], lam, omega)
    est = MODEL[name](alpha=lam, tol=1e-9, max_iter=20000).fit(X, Y)
    assert est.optimality_ <= 1e-9
    _assert_same_optimum(df.value(est.coef_.T) + pen_cls(lam).value(est.coef_.T), F_cvx)


@pytest.mark.parametrize("name", ["trace", "l21"])
def test_sarcos_subset_reaches_cvxpy_optimum(name, sarcos_subset):
    X, Y = sarcos_subset
    m = Y.shape[1]
    data, _ = as_multitask_data(X, Y)
    df = Squared(data)
    pen_cls, omega = OMEGA[name]
    lam = 0.1 * _alpha_max(df, pen_cls)
    F_cvx, _ = _solve_cvx([X] * m, [Y[:, t] for t in range(m)], lam, omega)
    est = MODEL[name](alpha=lam, tol=1e-10, max_iter=50000).fit(X, Y)
    assert est.optimality_ <= 1e-10
    _assert_same_optimum(df.value(est.coef_.T) + pen_cls(lam).value(est.coef_.T), F_cvx)


def test_logistic_trace_norm_reaches_cvxpy_optimum(classification_lists):
    Xs, ys = classification_lists
    data, _ = as_multitask_data(Xs, ys, classification=True)
    df = Logistic(data)
    lam = 0.2 * _alpha_max(df, TraceNorm)
    ypm = [np.where(y == 1, 1.0, -1.0) for y in ys]
    F_cvx, _ = _solve_cvx(Xs, ypm, lam, cp.normNuc, loss=_cvx_logistic)
    est = TraceNormClassifier(alpha=lam, tol=1e-10, max_iter=20000).fit(Xs, ys)
    assert est.optimality_ <= 1e-10
    F_ours = df.value(est.coef_.T, est.intercept_) + TraceNorm(lam).value(est.coef_.T)
    _assert_same_optimum(F_ours, F_cvx)


@pytest.mark.parametrize("ball", ["trace", "l1"])
def test_projected_gradient_reaches_cvxpy_optimum(ball, regression_lists):
    """Constraint sets (projection instead of prox): ||W||_* <= r and ||W||_1 <= r."""
    Xs, ys = regression_lists
    data, _ = as_multitask_data(Xs, ys)
    if ball == "trace":
        radius, pen, con = 2.0, TraceBall(2.0), (lambda W: cp.normNuc(W) <= 2.0)
    else:
        radius, pen, con = 3.0, L1Ball(3.0), (lambda W: cp.sum(cp.abs(W)) <= 3.0)
    F_cvx, _ = _solve_cvx(Xs, ys, 0.0, None, constraint=con)
    res = fista(Squared(data), pen, tol=1e-10, max_iter=20000)
    assert res.converged and res.optimality <= 1e-10
    assert pen.norm(res.W) <= radius * (1 + 1e-9)
    _assert_same_optimum(res.final_objective, F_cvx)


def test_composite_sparse_plus_low_rank_reaches_cvxpy_optimum(regression_lists):
    """W = P + Q with l1 on P and trace norm on Q, through the linear map of the penalty."""
    Xs, ys = regression_lists
    data, _ = as_multitask_data(Xs, ys)
    d, m = Xs[0].shape[1], len(Xs)
    P, Q, b = cp.Variable((d, m)), cp.Variable((d, m)), cp.Variable(m)
    prob = cp.Problem(cp.Minimize(_cvx_squared(Xs, ys, P + Q, b) + 0.05 * cp.sum(cp.abs(P))
                                  + 0.3 * cp.normNuc(Q)))
    prob.solve(solver=cp.CLARABEL)
    res = fista(Squared(data), SumOfParts([L1(0.05), TraceNorm(0.3)]), tol=1e-10,
                max_iter=50000)
    assert res.converged and res.optimality <= 1e-10
    assert res.coef.shape == (2, d, m)
    np.testing.assert_allclose(res.W, res.coef.sum(axis=0))
    _assert_same_optimum(res.final_objective, prob.value)


# ----------------------------------------------------------------------------- behaviour


def _problems():
    """(datafit, penalty) pairs: squared + trace, logistic + l1 (intercepts), squared + ball."""
    rng = np.random.default_rng(5)
    Xs = [rng.standard_normal((n, 6)) * np.linspace(0.2, 3, 6) for n in (25, 40, 30)]
    ys = [X @ rng.standard_normal(6) + rng.standard_normal(len(X)) for X in Xs]
    reg, _ = as_multitask_data(Xs, ys)
    clf, _ = as_multitask_data(Xs, [(y > 0).astype(int) for y in ys], classification=True)
    return [(Squared(reg), TraceNorm(0.2)), (Logistic(clf), L1(0.01)),
            (Squared(reg), TraceBall(1.0))]


@pytest.mark.parametrize("case", range(3))
def test_ista_objective_never_increases(case):
    df, pen = _problems()[case]
    res = fista(df, pen, accelerated=False, tol=1e-12, max_iter=300, warn=False)
    h = res.objective
    assert len(h) == res.n_iter
    increases = np.diff(h)
    assert np.all(increases <= 1e-12 * np.abs(h[1:])), increases.max()


@pytest.mark.parametrize("case", range(3))
def test_max_iter_warns_and_returns_the_best_iterate(case):
    """Without restart FISTA is not monotone: the returned iterate is the best one seen."""
    df, pen = _problems()[case]
    with pytest.warns(ConvergenceWarning, match="max_iter=15"):
        res = fista(df, pen, max_iter=15, tol=1e-14, restart=False)
    assert not res.converged and res.n_iter == 15
    assert res.final_objective == pytest.approx(res.objective.min(), rel=1e-14)
    b = res.intercept_variable
    again = df.value(res.W, b) + pen.value(res.W)
    assert again == pytest.approx(res.objective.min(), rel=1e-12)
    np.testing.assert_allclose(res.intercept, df.intercept(res.W, b))
    # the reported measure is that of the returned iterate
    assert res.optimality == pytest.approx(optimality(df, pen, res.coef, b), rel=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fista(df, pen, max_iter=15, tol=1e-14, warn=False)  # warn=False is silent


def test_non_monotone_run_returns_best_not_last():
    """A case where the last iterate is worse than an earlier one: the best is returned."""
    for df, pen in _problems():
        res = fista(df, pen, max_iter=60, tol=1e-15, restart=False, warn=False)
        if res.objective[-1] > res.objective.min():
            assert res.final_objective == res.objective.min()
            return
    pytest.skip("no non-monotone run in these problems")


@pytest.mark.parametrize("case", range(3))
def test_warm_start_from_the_solution_converges_at_once(case):
    df, pen = _problems()[case]
    cold = fista(df, pen, tol=1e-10, max_iter=20000)
    assert cold.converged
    warm = fista(df, pen, coef_init=cold.coef, intercept_init=cold.intercept_variable,
                 tol=1e-6, max_iter=1000)
    assert warm.converged and warm.optimality <= 1e-6
    assert warm.n_iter <= 5
    assert warm.final_objective <= cold.final_objective * (1 + 1e-10)


def test_warm_start_along_a_path_is_cheaper_than_a_cold_start():
    """The next alpha of a path needs fewer iterations from the previous solution."""
    df, _ = _problems()[0]
    lam_max = _alpha_max(df, TraceNorm)
    prev = fista(df, TraceNorm(0.3 * lam_max), tol=1e-8)
    cold = fista(df, TraceNorm(0.25 * lam_max), tol=1e-8)
    warm = fista(df, TraceNorm(0.25 * lam_max), tol=1e-8, coef_init=prev.coef)
    assert cold.converged and warm.converged
    assert warm.n_iter < cold.n_iter
    assert warm.final_objective == pytest.approx(cold.final_objective, rel=1e-8)


def _gradient_mapping(df, pen, V, b):
    """The relative optimality measure written out from its formula (not the library's): L is
    the Lipschitz constant with respect to W alone (largest squared singular value of a task's
    centred design over n_t, times the loss curvature), and the intercept gradient counts times
    the root mean square s of the centred feature entries."""
    X = [df.data.task_X(t) for t in range(df.data.n_tasks)]
    if df.data.x_offset is not None:
        X = [Xt - df.data.x_offset[:, t] for t, Xt in enumerate(X)]
    n = df.data.task_sizes
    norms = [np.linalg.norm(Xt, 2) ** 2 / nt for Xt, nt in zip(X, n, strict=True)]
    L_W = df.curvature() * max(norms) + df.alpha_l2
    L = L_W * pen.linear_map.norm_sq
    s = np.sqrt(sum(np.sum(Xt**2) for Xt in X) / (n.sum() * X[0].shape[1]))
    _, gW, gb = df.value_and_grad(pen.linear_map.forward(V), b)
    G = pen.linear_map.adjoint(gW)
    step = L * (V - pen.prox(V - G / L, 1.0 / L))
    num = np.sum(step**2) + (0.0 if gb is None else s * s * np.sum(gb**2))
    b0 = df.optimal_intercept_at_zero() if df.has_intercept_variable else None
    g0 = df.value_and_grad(np.zeros_like(gW), b0)[1]
    return np.sqrt(num) / (np.linalg.norm(g0) * np.sqrt(pen.linear_map.norm_sq))


@pytest.mark.parametrize("case", range(3))
def test_stops_when_the_optimality_measure_reaches_tol(case):
    """The one stopping rule: the certified relative duality gap at the returned point is at
    most tol (recomputed), and the objective is that of a much tighter run."""
    df, pen = _problems()[case]
    res = fista(df, pen, tol=1e-10, max_iter=20000)
    assert res.converged
    b = res.intercept_variable
    assert (b is None) == (not df.has_intercept_variable)
    # the reported measure is the certified gap at the returned point, recomputed here
    cert = duality_gap(df, pen, res.coef, b)
    assert cert is not None and cert.relative_gap <= 1e-10
    assert res.optimality == pytest.approx(cert.relative_gap, rel=1e-6, abs=1e-14)
    # the prox-gradient residual there is small too (the models without a certificate)
    assert _gradient_mapping(df, pen, res.coef, b) <= 1e-4
    ref = fista(df, pen, tol=1e-13, max_iter=20000, warn=False)
    assert res.final_objective == pytest.approx(ref.final_objective, rel=1e-9)
    # a looser tolerance stops earlier, still at a point that meets it
    loose = fista(df, pen, tol=1e-3, max_iter=20000)
    assert loose.converged and loose.optimality <= 1e-3 and loose.n_iter < res.n_iter


def test_tight_tolerances_do_not_stall():
    """Rounding must not freeze the iterate: a relative measure of 1e-12 is reachable."""
    df, pen = _problems()[0]
    res = fista(df, pen, tol=1e-12, max_iter=5000)
    assert res.converged and res.n_iter < 5000 and res.optimality <= 1e-12


@pytest.mark.parametrize("init", ["bound", "secant"])
def test_rounding_does_not_inflate_the_lipschitz_estimate(init):
    """A near-perfect fit: the Gram form of the squared loss loses digits, and the line search
    must not read that as curvature (L above the datafit's true bound), also when the search
    starts from a low secant estimate."""
    rng = np.random.default_rng(0)
    Xs = [rng.standard_normal((60, 8)) for _ in range(4)]
    W = rng.standard_normal((8, 2)) @ rng.standard_normal((2, 4)) * 10
    ys = [X @ W[:, t] + 1e-5 * rng.standard_normal(60) for t, X in enumerate(Xs)]
    df = Squared(as_multitask_data(Xs, ys)[0])
    assert df.use_gram
    res = fista(df, TraceNorm(1e-8), tol=1e-14, max_iter=300, warn=False,
                lipschitz_init=init)
    assert res.info["lipschitz"] <= df.lipschitz() * (1 + 1e-12)
    np.testing.assert_allclose(res.W, W, atol=1e-4)


def test_line_search_off_with_the_datafit_bound():
    df, pen = _problems()[0]
    a = fista(df, pen, line_search=False, tol=1e-10, max_iter=20000)
    b = fista(df, pen, tol=1e-10, max_iter=20000)
    assert a.info["lipschitz"] == pytest.approx(df.lipschitz())
    assert a.final_objective == pytest.approx(b.final_objective, rel=1e-8)


def test_result_record_and_callback():
    df, pen = _problems()[1]
    seen = []

    def callback(k, F, V, b):
        seen.append((k, F))
        return k == 7

    res = fista(df, pen, callback=callback, tol=1e-14)
    assert isinstance(res, SolverResult)
    assert res.n_iter == 7 and [k for k, _ in seen] == list(range(1, 8))
    assert len(res.objective) == len(res.times) == 7
    assert np.all(np.diff(res.times) >= 0) and res.time >= res.times[-1]
    assert res.W.shape == (df.data.n_features, df.data.n_tasks)
    assert res.intercept.shape == (df.data.n_tasks,)
    assert res.intercept_variable.shape == (df.data.n_tasks,)
    assert res.info["solver"] == "fista" and res.info["stopped_by"] == "callback"
    assert np.isfinite(res.optimality) and res.optimality > 0


def test_bad_arguments():
    df, pen = _problems()[0]
    with pytest.raises(ValueError, match="lipschitz_init"):
        fista(df, pen, lipschitz_init="gap")
    with pytest.raises(ValueError, match="max_iter"):
        fista(df, pen, max_iter=0)
    with pytest.raises(ValueError, match="tol"):
        fista(df, pen, tol=0.0)
    with pytest.raises(ValueError, match="coef_init has shape"):
        fista(df, pen, coef_init=np.zeros((2, 2)))
