"""Truncated Newton (``"newton_cg"``) for a smooth loss with a pure ridge.

``solver="auto"`` takes it for the multinomial loss with a ridge (the loss couples a row's
``K`` scores: no row-by-row second derivative for proximal Newton, and accelerated gradient took
hundreds of iterations where it takes a handful of steps). Pinned: the choice, scikit-learn's
multinomial ``LogisticRegression`` per task reached, the certified gap, a few steps, the
agreement with proximal Newton on a loss that has both, and what it refuses.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

import multitask as mt
from multitask.data import as_multitask_data
from multitask.losses import get_datafit
from multitask.penalties import L1, Ridge
from multitask.penalties.norms import NoPenalty
from multitask.solvers import ProximalGradient, ProxNewton, make_solver
from multitask.solvers.newton_cg import NewtonCG, pure_ridge


def _classes(seed=0, sizes=(60, 90, 45), d=5, K=4):
    rng = np.random.default_rng(seed)
    B = 1.5 * rng.standard_normal((d, K))
    Xs, ys = [], []
    for n in sizes:
        X = rng.standard_normal((n, d))
        ys.append(np.argmax(X @ B + rng.gumbel(size=(n, K)), axis=1))
        Xs.append(X)
    return Xs, ys


def _log_loss(Xs, ys, coef, intercept, alpha):
    total = 0.0
    for t, (X, y) in enumerate(zip(Xs, ys, strict=True)):
        z = X @ coef[t].T + intercept[t]
        zmax = z.max(axis=1, keepdims=True)
        lse = np.log(np.exp(z - zmax).sum(axis=1)) + zmax[:, 0]
        total += float(np.mean(lse - z[np.arange(len(y)), y]))
        total += 0.5 * alpha * float(np.sum(coef[t] ** 2))
    return total


def test_multinomial_ridge_takes_newton_cg_and_is_logistic_regression():
    """One multinomial model per task with the ridge: ``LogisticRegression(C = 1 / (alpha
    n_t))`` per task, the same objective to 1e-9, certified, in a few steps."""
    Xs, ys = _classes()
    alpha = 0.02
    est = mt.IndependentRidgeClassifier(alpha, tol=1e-10).fit(Xs, ys)
    assert isinstance(est.solver_, NewtonCG)
    assert est.converged_ and est.optimality_ <= 1e-10
    assert est.n_iter_ <= 15
    ours = _log_loss(Xs, ys, est.coef_, est.intercept_, alpha)
    coef, b = [], []
    for X, y in zip(Xs, ys, strict=True):
        sk = LogisticRegression(C=1.0 / (alpha * len(y)), tol=1e-12, max_iter=10_000).fit(X, y)
        coef.append(sk.coef_)
        b.append(sk.intercept_)
    peer = _log_loss(Xs, ys, np.array(coef), np.array(b), alpha)
    assert ours == pytest.approx(peer, rel=1e-9)
    assert ours <= peer * (1 + 1e-12)


def test_accelerated_gradient_takes_many_more_iterations():
    """What the choice rests on: the same fit by accelerated gradient takes several times more
    iterations (two passes over the design each, as a conjugate-gradient iteration or a Newton
    step's gradient takes), the more so as the classes separate."""
    Xs, ys = _classes(1)
    Xs = [2.0 * X for X in Xs]  # better separated classes
    fits = {}
    for solver in ("auto", "fista"):
        est = mt.IndependentRidgeClassifier(0.01, tol=1e-8, max_iter=100_000, solver=solver)
        fits[solver] = est.fit(Xs, ys)
    cg = fits["auto"].solver_info_["cg_iterations"] + fits["auto"].n_iter_
    assert 3 * cg < fits["fista"].n_iter_
    np.testing.assert_allclose(fits["auto"].coef_, fits["fista"].coef_, atol=1e-4)


@pytest.mark.parametrize("intercept", [True, False])
def test_agrees_with_proximal_newton_on_the_logistic_loss(intercept):
    """Two classes, the logistic loss (``"hessian"``): the same optimum as proximal Newton."""
    rng = np.random.default_rng(2)
    Xs = [rng.standard_normal((n, 4)) for n in (50, 80)]
    ys = [np.where(X[:, 0] + rng.standard_normal(len(X)) > 0, 1, -1) for X in Xs]
    data, _ = as_multitask_data(Xs, ys)
    datafit = get_datafit("logistic", data, intercept)
    res_cg = NewtonCG(tol=1e-11).solve(datafit, Ridge(0.05))
    res_pn = ProxNewton(tol=1e-11).solve(datafit, Ridge(0.05))
    assert res_cg.converged
    np.testing.assert_allclose(res_cg.W, res_pn.W, atol=1e-7)
    if intercept:
        np.testing.assert_allclose(res_cg.intercept_variable, res_pn.intercept_variable,
                                   atol=1e-7)


def test_what_it_refuses():
    rng = np.random.default_rng(3)
    Xs = [rng.standard_normal((30, 3))]
    data, _ = as_multitask_data(Xs, [rng.standard_normal(30)])
    squared = get_datafit("squared", data, True)
    assert any("quadratic" in m for m in NewtonCG().missing(squared, Ridge(1.0)))
    labels, _ = as_multitask_data(Xs, [np.where(rng.standard_normal(30) > 0, 1, -1)])
    hinge = get_datafit("hinge", labels, True, center=False)
    assert any("Hessian in score space" in m for m in NewtonCG().missing(hinge, Ridge(1.0)))
    logistic = get_datafit("logistic", labels, True)
    assert any("pure ridge" in m for m in NewtonCG().missing(logistic, L1(0.1)))
    assert pure_ridge(Ridge(0.3)) and pure_ridge(NoPenalty()) and not pure_ridge(L1(0.1))
    assert isinstance(make_solver("newton_cg"), NewtonCG)
    assert not isinstance(make_solver("fista"), NewtonCG)
    assert isinstance(make_solver("fista"), ProximalGradient)
