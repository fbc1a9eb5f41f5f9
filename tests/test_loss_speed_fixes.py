"""What the speed of the Huber, Tweedie and GLM fits relies on, pinned.

* The Huber loss takes proximal Newton's steps: its Hessian in score space is the diagonal
  ``w_i h_i`` with a rank-one term per task from the fitted scale
  (:meth:`~multitask.losses.Huber.task_hessian_correction`), which the Newton model subtracts
  from each task's ``X^T D X``; checked against finite differences of the gradient.
* The Huber loss keeps the rows of its last scores (one sort of each task's residuals per
  point), and the Newton line search computes its trial scores as the certificate does, so that
  a Newton step evaluates the scales about once.
* The best intercepts of the Huber loss by safeguarded Newton steps (a few evaluations).
* The rows sorted by task then by residual: each task apart, or two passes for many small
  tasks, both :func:`numpy.lexsort`'s order.
* The Tweedie conjugate's root: a start from the leading term and Newton steps on the roots not
  yet converged, to rounding (the closed form ``2 asinh(t / 2)`` at power 1.5).
"""

from __future__ import annotations

import numpy as np
import pytest

import multitask as mt
from multitask.data import as_multitask_data
from multitask.losses import Huber
from multitask.losses import huber as huber_module
from multitask.losses.glm import _tweedie_root
from multitask.solvers.newton import ProxNewton, newton_model


def _huber_data(seed=0, sizes=(30, 45, 25), d=4, center=True):
    rng = np.random.default_rng(seed)
    W = 0.5 * rng.standard_normal((d, len(sizes)))
    Xs = [rng.standard_normal((n, d)) for n in sizes]
    ys = [X @ W[:, t] + rng.standard_t(2, len(X)) for t, X in enumerate(Xs)]
    data, _ = as_multitask_data(Xs, ys)
    return Huber(data, True, center=center), rng


def test_huber_hessian_is_the_gradients_derivative():
    """``diag(w h) - k_t c_t c_t^T`` is the derivative of the score gradient ``w_i ell'_i``
    (central differences), task by task."""
    huber, rng = _huber_data()
    data = huber.data
    z = data.y + 0.3 * rng.standard_normal(data.n_rows)
    w = data.row_weights
    _, _, h = huber.score_derivatives(z, second=True)
    c, k = huber.task_hessian_correction(z)
    H = np.diag(w * h)
    for t in range(data.n_tasks):
        rows = slice(data.offsets[t], data.offsets[t + 1])
        H[rows, rows] -= k[t] * np.outer(c[rows], c[rows])
    step = 1e-6
    for i in rng.choice(data.n_rows, 8, replace=False):
        e = np.zeros(data.n_rows)
        e[i] = step
        fd = (w * huber.score_derivatives(z + e)[1] - w * huber.score_derivatives(z - e)[1])
        np.testing.assert_allclose(fd / (2 * step), H[:, i], atol=1e-6)
    v = rng.standard_normal(data.n_rows)
    np.testing.assert_allclose(huber.score_hessian(z)(v), H @ v, atol=1e-12)


def test_newton_model_holds_the_rank_one_term():
    """Without intercepts the step's Hessian of task ``t`` is ``X_t^T H_t X_t`` with the
    score-space Hessian of the loss (rank-one term included)."""
    rng = np.random.default_rng(1)
    Xs = [rng.standard_normal((n, 3)) for n in (20, 35)]
    ys = [X[:, 0] + rng.standard_t(2, len(X)) for X in Xs]
    data, _ = as_multitask_data(Xs, ys)
    huber = Huber(data, False)
    W = 0.2 * rng.standard_normal((3, 2))
    z = huber.scores(W, None)
    _, a, h = huber.score_derivatives(z, second=True)
    model = newton_model(huber, W, None, a, h, huber.task_hessian_correction(z))
    w = data.row_weights
    c, k = huber.task_hessian_correction(z)
    for t, X in enumerate(Xs):
        rows = slice(data.offsets[t], data.offsets[t + 1])
        Ht = np.diag(w[rows] * h[rows]) - k[t] * np.outer(c[rows], c[rows])
        np.testing.assert_allclose(model.hessian[t], X.T @ Ht @ X, rtol=1e-10, atol=1e-12)


def test_huber_takes_newton_and_converges_in_few_steps():
    """The automatic choice for a row-separable penalty and few features is proximal Newton,
    which certifies a tight tolerance in a few steps (accelerated gradient took tens)."""
    rng = np.random.default_rng(2)
    Xs = [rng.standard_normal((n, 6)) for n in (200, 350, 120)]
    ys = [X @ rng.standard_normal(6) + rng.standard_t(2, len(X)) for X in Xs]
    est = mt.IndependentRidgeRegressor(0.01, loss="huber", tol=1e-10).fit(Xs, ys)
    assert isinstance(est.solver_, ProxNewton)
    assert est.converged_ and est.n_iter_ <= 15


def test_huber_scales_once_per_point(monkeypatch):
    """The rows of the last scores are kept (read-only): a Newton fit computes them about
    once per step, plus the intercepts' few evaluations."""
    calls = []
    original = Huber._compute_rows

    def counted(self, z):
        calls.append(1)
        return original(self, z)

    monkeypatch.setattr(Huber, "_compute_rows", counted)
    huber, rng = _huber_data(3)
    z = huber.data.y + rng.standard_normal(huber.data.n_rows)
    first = huber.score_derivatives(z, second=True)
    n = len(calls)
    huber.task_hessian_correction(z.copy())
    huber.dual_point_at_scores(z, None)
    assert len(calls) == n  # the same scores (an equal copy): no new sort
    assert not first[1].flags.writeable
    huber.score_derivatives(z + 1e-9)
    assert len(calls) == n + 1
    calls.clear()
    rng = np.random.default_rng(4)
    Xs = [rng.standard_normal((n, 5)) for n in (300, 250)]
    ys = [X @ rng.standard_normal(5) + rng.standard_t(2, len(X)) for X in Xs]
    est = mt.IndependentRidgeRegressor(0.01, loss="huber", tol=1e-8).fit(Xs, ys)
    assert isinstance(est.solver_, ProxNewton)
    assert len(calls) <= 3 * est.n_iter_ + 25


def test_huber_best_intercepts_by_newton(monkeypatch):
    """The intercept-only minimizer: the task's slope vanishes there (to rounding), reached in
    a few evaluations."""
    calls = []
    original = Huber._compute_rows

    def counted(self, z):
        calls.append(1)
        return original(self, z)

    monkeypatch.setattr(Huber, "_compute_rows", counted)
    huber, _ = _huber_data(5, sizes=(40, 400, 7))
    b = huber.optimal_intercept_at_zero()
    assert len(calls) <= 20
    data = huber.data
    w = data.row_weights
    slope = data.task_sum(w * huber.score_derivatives(data.expand(b))[1])
    assert np.all(np.abs(slope) <= 1e-12)
    for t in range(data.n_tasks):  # no better constant nearby
        for shift in (-1e-6, 1e-6):
            bb = b.copy()
            bb[t] += shift
            assert huber.value(np.zeros((data.n_features, data.n_tasks)), bb) >= \
                huber.value(np.zeros((data.n_features, data.n_tasks)), b)


@pytest.mark.parametrize("sizes", [(500, 300, 800), tuple([3] * 40 + [5] * 20)])
def test_task_order_is_lexsort(sizes):
    rng = np.random.default_rng(6)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    task = np.repeat(np.arange(len(sizes)), sizes)
    a = rng.random(offsets[-1])
    a[::7] = a[1::7][: a[::7].size]  # ties
    order = huber_module._task_order(a, task, offsets)
    expected = np.lexsort((a, task))
    np.testing.assert_array_equal(task[order], task[expected])
    np.testing.assert_array_equal(a[order], a[expected])


@pytest.mark.parametrize("q", [-0.5, -0.01, -0.3, -0.8, -0.99])
def test_tweedie_root_to_rounding(q):
    """``e^{(1+q) r} - e^{q r} = t`` to a relative 1e-13 over 16 decades of ``t``."""
    rng = np.random.default_rng(7)
    t = np.concatenate([rng.standard_normal(2000) * 10, np.logspace(-8, 8, 40),
                        -np.logspace(-8, 8, 40), [0.0]])
    r = _tweedie_root(t, q)
    with np.errstate(over="ignore", invalid="ignore"):  # np.where computes both branches
        k = np.where(r > 0, np.exp((1 + q) * r) * -np.expm1(-r), np.exp(q * r) * np.expm1(r))
    nz = t != 0
    assert np.all(np.abs(k[nz] - t[nz]) <= 1e-13 * np.abs(t[nz]))
    assert r[~nz] == 0.0
    if q == -0.5:  # k = 2 sinh(r / 2)
        np.testing.assert_allclose(r, 2 * np.arcsinh(t / 2), rtol=1e-14, atol=1e-300)


def test_tweedie_root_beyond_the_exponential_range():
    """Large ``t`` (``e^r`` itself would overflow): the root of ``e^{(1+q) r} (1 - e^{-r})``."""
    t = np.array([1e150, 1e250])
    np.testing.assert_allclose(_tweedie_root(t, -0.5), 2 * np.arcsinh(t / 2), rtol=1e-14)
