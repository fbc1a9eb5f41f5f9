"""The one-pass products of dense per-task designs against the two-pass route they replace.

``MultiTaskData.squared_residual_pass`` computes the squared loss and its gradient (and, with
``value_at``, the loss at a second point) reading each row once; accelerated gradient uses it
to get the objective at its new point and the gradient at the next extrapolated point in one
pass (``Datafit.fuses_value_pairs``). The references are the separate ``matvec`` /
``rmatvec`` products, the Gram matrices, and the same solver with the fusion switched off.
"""

from __future__ import annotations

import numpy as np
import pytest

from multitask.data import as_multitask_data
from multitask.losses import GRAM_ROWS_PER_FEATURE, Datafit, Squared
from multitask.penalties import L21, TraceNorm
from multitask.solvers import ProximalGradient


def _per_task(sizes, d, seed=0, shift=0.0):
    rng = np.random.default_rng(seed)
    Xs = [rng.standard_normal((n, d)) * 3.0 + shift for n in sizes]
    Xs[1][:, 2] = 7.0  # a feature constant within one task: centred to exact zeros
    ys = [X @ rng.standard_normal(d) + rng.standard_normal(len(X)) for X in Xs]
    return as_multitask_data(Xs, ys)[0]


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_the_one_pass_loss_and_gradient_equal_the_two_pass_products(fit_intercept):
    data = _per_task([5, 9, 4, 11], 6, shift=20.0)
    f = Squared(data, fit_intercept=fit_intercept, use_gram=False)
    assert f.fuses_value_pairs
    rng = np.random.default_rng(1)
    V, W = rng.standard_normal((2, 6, 4))
    d_ = f.data
    w = d_.row_weights
    r_v, r_w = d_.matvec(V) - d_.y, d_.matvec(W) - d_.y
    ref_v, ref_w = 0.5 * float(r_v**2 @ w), 0.5 * float(r_w**2 @ w)
    ref_g = d_.rmatvec(w * r_w)
    val, G = d_.squared_residual_pass(W, d_.y, w)
    fv, fw, G2 = d_.squared_residual_pass(W, d_.y, w, value_at=V)
    scale = max(1.0, abs(ref_w))
    assert abs(val - ref_w) <= 1e-12 * scale and abs(fw - ref_w) <= 1e-12 * scale
    assert abs(fv - ref_v) <= 1e-12 * max(1.0, abs(ref_v))
    np.testing.assert_allclose(G, ref_g, rtol=0, atol=1e-11 * np.abs(ref_g).max())
    np.testing.assert_array_equal(G, G2)
    if fit_intercept:  # the constant feature of task 1 has a zero gradient, exactly
        assert G[2, 1] == 0.0
    # the datafit's pair: values and gradient of the loss with its ridge term
    f2 = Squared(data, fit_intercept=fit_intercept, alpha_l2=0.7, use_gram=False)
    pv, pw, pg, pb = f2.value_pair_and_grad(V, None, W, None)
    gv, gg, _ = Datafit.value_and_grad(f2, W, None)
    assert pb is None
    assert abs(pv - f2.value(V)) <= 1e-12 * max(1.0, abs(pv))
    assert abs(pw - gv) <= 1e-12 * max(1.0, abs(pw))
    np.testing.assert_allclose(pg, gg, rtol=0, atol=1e-11 * np.abs(gg).max())


def test_the_gram_diagonals_come_from_one_pass():
    data = _per_task([5, 9, 4, 11], 6, shift=50.0)
    fused = Squared(data, use_gram=None, alpha_l2=0.2)
    assert fused.fuses_value_pairs and "quadratic" in fused.capabilities
    H, _ = Squared(data, use_gram=True, alpha_l2=0.2).quadratic_form()
    ref = np.diagonal(H, axis1=1, axis2=2)
    np.testing.assert_allclose(fused.quadratic_diagonal(), ref, rtol=1e-10)
    assert fused._gram is None  # no Gram matrix was formed


def test_gram_form_only_from_twice_as_many_rows_as_features():
    d = 5
    few = _per_task([d, d + 2, d + 1], d)
    many = _per_task([int(GRAM_ROWS_PER_FEATURE * d) + k for k in range(3)], d)
    assert not Squared(few).use_gram and Squared(few).fuses_value_pairs
    assert Squared(many).use_gram and not Squared(many).fuses_value_pairs
    shared = as_multitask_data(np.random.default_rng(0).standard_normal((8, d)),
                               np.random.default_rng(1).standard_normal((8, 3)))[0]
    assert not Squared(shared).fuses_value_pairs
    with pytest.raises(ValueError, match="dense per-task"):
        shared.squared_residual_pass(np.zeros((d, 3)), shared.y, shared.row_weights)


@pytest.mark.parametrize("penalty", [TraceNorm(0.05), L21(0.05)], ids=["trace", "l21"])
@pytest.mark.parametrize("line_search", [False, True])
def test_accelerated_gradient_takes_the_same_steps_with_the_fused_pass(penalty, line_search):
    data = _per_task([12, 9, 15, 10, 11], 8, seed=3)
    fused = Squared(data, use_gram=False)
    # its own data: the data cache their centred view, which the counters below patch
    plain = Squared(_per_task([12, 9, 15, 10, 11], 8, seed=3), use_gram=False)
    plain.fuses_value_pairs = False
    solver = ProximalGradient(tol=1e-8, max_iter=5000, line_search=line_search)
    passes = {"pair": 0, "other": 0}
    pair_pass, matvec = fused.data.squared_residual_pass, fused.data.matvec

    def counted_pair(*args, **kwargs):
        passes["pair" if "value_at" in kwargs else "other"] += 1
        return pair_pass(*args, **kwargs)

    def counted_matvec(*args):
        passes["other"] += 1
        return matvec(*args)

    fused.data.squared_residual_pass, fused.data.matvec = counted_pair, counted_matvec
    a = solver.solve(fused, penalty)
    b = solver.solve(plain, penalty)
    assert a.converged and b.converged
    # one pass over the data per iteration (a few more at the start, restarts, line-search
    # trials and certificates: the trace norm restarts in about 28% of its iterations here,
    # each restart a pass; the certificates take about 3% of the passes)
    assert passes["pair"] >= 0.8 * a.n_iter and passes["other"] <= 0.35 * a.n_iter
    # the same steps: the same objective at every iteration both ran (where the runs stop
    # depends on when the certificates fall, whose schedule follows the measured gaps)
    n = min(a.n_iter, b.n_iter)
    np.testing.assert_allclose(a.objective[:n], b.objective[:n], rtol=1e-9)
    assert abs(a.n_iter - b.n_iter) <= max(2, 0.2 * b.n_iter)
    # both certified to 1e-8 in objective: weights within about its square root
    np.testing.assert_allclose(a.coef, b.coef, rtol=0, atol=1e-4 * np.abs(b.coef).max())
    fa = fused.value(a.coef) + penalty.value(a.coef)
    fb = plain.value(b.coef) + penalty.value(b.coef)
    assert abs(fa - fb) <= 2e-8 * abs(fb)
