"""FISTA's steps on a quadratic smooth part: one Hessian product per iteration.

Where the smooth part ``s = f + g`` is quadratic (the squared loss in its Gram form and a
task-coupling penalty such as the graph one), :class:`~multitask.solvers.ProximalGradient`
updates ``s`` and its gradient at the new and the next extrapolated point from one product
with the Hessian (:mod:`multitask.solvers.fista`). These tests check the products, that the
iterates are those of the steps that evaluate ``s`` from scratch
(``fista.QUADRATIC_STEPS = False``) to rounding over a few hundred iterations, that certified
solutions are cvxpy's, and that the other models do not take these steps.
"""

from __future__ import annotations

import numpy as np
import pytest

import multitask as mt
from multitask.data import as_multitask_data
from multitask.losses import Logistic, Squared
from multitask.penalties import (
    L21,
    GraphRegularization,
    MeanRegularization,
    TemporalGroupLasso,
)
from multitask.solvers import ProximalGradient, fista

D, M = 6, 5
#: column scales of the designs: an ill-conditioned problem that 300 iterations do not solve to
#: machine precision (there, rounding alone decides the restarts of either kind of step)
SCALES = np.logspace(0, -2, D)
SIZES = (14, 20, 9, 16, 25)
N_ITER = 300


def _data(kind: str, classification: bool = False, seed: int = 0):
    rng = np.random.default_rng(seed)
    if kind == "shared":
        X = rng.standard_normal((12, D)) * SCALES
        Y = rng.standard_normal((12, M))
        if classification:
            Y = np.where(Y > 0, 1, 0)
        return as_multitask_data(X, Y, classification=classification)[0]
    Xs = [rng.standard_normal((n, D)) * SCALES for n in SIZES]
    ys = [rng.standard_normal(n) for n in SIZES]
    if classification:
        ys = [np.where(y > 0, 1, 0) for y in ys]
    weights = ([rng.uniform(0.5, 2.0, n) for n in SIZES] if kind == "weighted" else None)
    return as_multitask_data(Xs, ys, classification=classification,
                             sample_weight=weights)[0]


def _laplacian(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    A = rng.random((M, M))
    A = (A + A.T) * (1.0 - np.eye(M))
    return np.diag(A.sum(axis=1)) - A


def _penalty(name: str):
    if name == "graph":
        return GraphRegularization(0.01, _laplacian(), alpha_l1=0.001)
    if name == "complete_graph":  # the closed-form products of a complete graph
        return GraphRegularization(0.02, M * np.eye(M) - np.ones((M, M)), alpha_l1=0.001)
    if name == "mean":
        return MeanRegularization(0.05, M)
    return TemporalGroupLasso(0.02, 0.001, M)


class _Counted:
    """A datafit method that counts its calls (set on the instance)."""

    def __init__(self, method):
        self.method, self.calls = method, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.method(*args, **kwargs)


def _run(loss, penalty, quadratic: bool, monkeypatch, **settings):
    """300 iterations (``tol`` out of reach) with or without the quadratic steps: the result,
    the iterates ``(F, V)`` the callback saw and the calls of the loss's evaluation from
    scratch and of its Hessian product."""
    monkeypatch.setattr(fista, "QUADRATIC_STEPS", quadratic)
    counts = {}
    for name in ("value_and_grad", "hessian_product"):
        if hasattr(loss, name):  # on this run's own loss: counted on the instance
            counts[name] = _Counted(getattr(loss, name))
            setattr(loss, name, counts[name])
    seen = []

    def callback(k, F, V, b):
        seen.append((F, V.copy()))
        return False

    res = ProximalGradient(max_iter=N_ITER, tol=1e-15, warn=False, **settings).solve(
        loss, penalty, callback=callback)
    return res, seen, {k: c.calls for k, c in counts.items()}


# ----------------------------------------------------------------------------- the products
@pytest.mark.parametrize("kind", ["shared", "per_task", "weighted"])
def test_the_loss_hessian_product_is_the_gradient_difference(kind):
    rng = np.random.default_rng(1)
    loss = Squared(_data(kind), use_gram=True, alpha_l2=0.05)
    assert loss.hessian_from_grams
    W, Dir = rng.standard_normal((D, M)), rng.standard_normal((D, M))
    diff = loss.value_and_grad(W + Dir)[1] - loss.value_and_grad(W)[1]
    np.testing.assert_allclose(loss.hessian_product(Dir), diff, rtol=1e-10, atol=1e-12)
    # s(W + D) = s(W) + <grad s(W), D> + <D, H D> / 2 exactly for a quadratic
    f0, g0, _ = loss.value_and_grad(W)
    pred = f0 + np.vdot(g0, Dir) + 0.5 * np.vdot(Dir, loss.hessian_product(Dir))
    assert pred == pytest.approx(loss.value(W + Dir), rel=1e-12)
    assert not Squared(_data(kind), use_gram=False).hessian_from_grams


@pytest.mark.parametrize("name", ["graph", "complete_graph", "mean", "temporal"])
def test_the_penalty_hessian_product_is_the_gradient_difference(name):
    rng = np.random.default_rng(2)
    pen = _penalty(name)
    W, Dir = rng.standard_normal((D, M)), rng.standard_normal((D, M))
    diff = pen.smooth_value_and_grad(W + Dir)[1] - pen.smooth_value_and_grad(W)[1]
    np.testing.assert_allclose(pen.smooth_hessian_product(Dir), diff, rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(pen.smooth_hessian_product(Dir), Dir @ pen.task_coupling(),
                               rtol=1e-12, atol=1e-14)


# ----------------------------------------------------------------------------- the iterates
@pytest.mark.parametrize("init", ["bound", "secant"])
@pytest.mark.parametrize("name", ["graph", "complete_graph", "mean", "temporal"])
@pytest.mark.parametrize("kind", ["shared", "per_task", "weighted"])
def test_quadratic_steps_follow_the_exact_iterates(kind, name, init, monkeypatch):
    runs = {}
    for quadratic in (False, True):
        loss = Squared(_data(kind), use_gram=True, alpha_l2=1e-4)
        runs[quadratic] = _run(loss, _penalty(name), quadratic, monkeypatch,
                               lipschitz_init=init)
    (res0, seen0, calls0), (res1, seen1, calls1) = runs[False], runs[True]
    assert res0.n_iter == res1.n_iter == len(seen0) == len(seen1) == N_ITER
    # the quadratic steps ran: one product per iteration, and far fewer evaluations
    assert calls0["hessian_product"] == 0 and calls1["hessian_product"] >= N_ITER // 2
    assert calls1["value_and_grad"] < 0.5 * calls0["value_and_grad"]
    for (F0, V0), (F1, V1) in zip(seen0, seen1, strict=True):
        assert np.linalg.norm(V1 - V0) <= 1e-10 * np.linalg.norm(V0)
        assert F1 == pytest.approx(F0, rel=1e-10)
    np.testing.assert_allclose(res1.W, res0.W, rtol=1e-10, atol=1e-14)
    assert res1.info["lipschitz"] == pytest.approx(res0.info["lipschitz"], rel=1e-12)
    # the returned point's objective is evaluated from scratch
    loss = Squared(_data(kind), use_gram=True, alpha_l2=1e-4)
    pen = _penalty(name)
    assert res1.final_objective == pytest.approx(loss.value(res1.W) + pen.value(res1.W),
                                                 rel=1e-14)


def test_plain_proximal_gradient_follows_the_exact_iterates(monkeypatch):
    runs = {}
    for quadratic in (False, True):
        loss = Squared(_data("per_task"), use_gram=True)
        runs[quadratic] = _run(loss, _penalty("graph"), quadratic, monkeypatch,
                               accelerated=False)
    (_, seen0, _), (_, seen1, calls1) = runs[False], runs[True]
    assert calls1["hessian_product"] >= N_ITER // 2
    for (F0, V0), (F1, V1) in zip(seen0, seen1, strict=True):
        assert np.linalg.norm(V1 - V0) <= 1e-10 * np.linalg.norm(V0)
        assert F1 == pytest.approx(F0, rel=1e-10)


# ----------------------------------------------------------------------------- vs cvxpy
@pytest.mark.parametrize("kind", ["shared", "per_task"])
def test_certified_solutions_match_cvxpy(kind, monkeypatch):
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(3)
    if kind == "shared":
        X = rng.standard_normal((30, D))
        Y = X @ rng.standard_normal((D, M)) + rng.standard_normal((30, M))
        Xs, ys = [X] * M, [Y[:, t] for t in range(M)]
        fit_args = (X, Y)
    else:
        Xs = [rng.standard_normal((n + 10, D)) for n in SIZES]
        w = rng.standard_normal(D)
        ys = [X @ w + rng.standard_normal(len(X)) for X in Xs]
        fit_args = (Xs, ys)
    lap, alpha, alpha_l1 = _laplacian(1), 0.3, 0.02
    products = _Counted(fista._QuadraticPart.product)
    monkeypatch.setattr(fista._QuadraticPart, "product",
                        lambda self, Dir: products(self, Dir))
    est = mt.GraphRegularizedRegressor(lap, alpha, alpha_l1, solver="fista", tol=1e-9,
                                       max_iter=100_000).fit(*fit_args)
    assert est.optimality_ <= 1e-9 and products.calls > 0
    W, b = cp.Variable((D, M)), cp.Variable(M)
    loss = sum(cp.sum_squares(Xs[t] @ W[:, t] + b[t] - ys[t]) / (2 * len(ys[t]))
               for t in range(M))
    # tr(W L W^T) = sum_{s < t} a_st ||w_s - w_t||^2 for the Laplacian L = diag(A 1) - A
    graph = sum(-lap[s, t] * cp.sum_squares(W[:, s] - W[:, t])
                for s in range(M) for t in range(s + 1, M))
    prob = cp.Problem(cp.Minimize(loss + alpha * graph + alpha_l1 * cp.sum(cp.abs(W))))
    prob.solve(solver=cp.CLARABEL)
    Wh, bh = est.coef_.T, est.intercept_
    ours = (sum(float(np.sum((Xs[t] @ Wh[:, t] + bh[t] - ys[t]) ** 2)) / (2 * len(ys[t]))
                for t in range(M))
            + alpha * float(np.trace(Wh @ lap @ Wh.T)) + alpha_l1 * float(np.abs(Wh).sum()))
    assert ours == pytest.approx(prob.value, rel=1e-7)
    np.testing.assert_allclose(Wh, W.value, atol=1e-4)


# ----------------------------------------------------------------------------- other models
def test_intercept_variables_take_the_general_steps():
    loss, pen = Squared(_data("per_task"), use_gram=True), _penalty("graph")
    assert fista._QuadraticPart.of(fista._SmoothPart(loss, pen, True)) is None
    assert fista._QuadraticPart.of(fista._SmoothPart(loss, pen, False)) is not None


@pytest.mark.parametrize("case", ["logistic", "squared_without_grams", "no_smooth_part"])
def test_other_models_take_the_general_steps(case, monkeypatch):
    if case == "logistic":
        make = (lambda: Logistic(_data("per_task", classification=True)),
                lambda: _penalty("graph"))
    elif case == "squared_without_grams":
        make = (lambda: Squared(_data("per_task"), use_gram=False), lambda: _penalty("graph"))
    else:
        make = (lambda: Squared(_data("per_task"), use_gram=True), lambda: L21(0.01))
    model = fista._SmoothPart(make[0](), make[1](), False)
    assert fista._QuadraticPart.of(model) is None
    runs = {}
    for quadratic in (False, True):
        runs[quadratic] = _run(make[0](), make[1](), quadratic, monkeypatch)
    (res0, seen0, calls0), (res1, seen1, calls1) = runs[False], runs[True]
    assert calls1.get("hessian_product", 0) == 0
    assert calls1["value_and_grad"] == calls0["value_and_grad"] > 0
    assert res1.n_iter == res0.n_iter
    for (F0, V0), (F1, V1) in zip(seen0, seen1, strict=True):  # the same steps, bit for bit
        assert F1 == F0
        np.testing.assert_array_equal(V1, V0)
