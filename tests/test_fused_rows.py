"""The exact row algorithms of the fused sparse group lasso (``multitask.penalties.fused_rows``).

* the dual norm (:func:`fsgl_row_gauge`, along the total-variation path) against the bisection
  on the exact prox (``gauge_by_prox``, what the penalty used before) and against cvxpy's
  ``max <g, w> s.t. r(w) <= 1``;
* the weighted row minimization (:func:`fsgl_weighted_row_min`) against cvxpy and, with equal
  curvatures, against the exact prox; from any guess of its multiplier; strongly fused rows;
* block coordinate descent with the exact fused rows against accelerated gradient (another
  solver, the exact prox) at ``tol=1e-10``.
"""

from __future__ import annotations

import numpy as np
import pytest

from multitask.penalties.base import gauge_by_prox
from multitask.penalties.fused_rows import (
    fsgl_gauge_rows,
    fsgl_row_gauge,
    fsgl_weighted_row_min,
)
from multitask.penalties.row_operators import fsgl_row_prox
from multitask.penalties.temporal import FusedSparseGroupLasso


def _strengths(rng):
    return [0.0 if rng.random() < 0.25 else float(10 ** rng.uniform(-2, 1)) for _ in range(3)]


def _row_objective(w, z, h, a, b, c):
    return (0.5 * np.sum(h * w * w) - z @ w + a * np.abs(w).sum() + b * np.linalg.norm(w)
            + c * np.abs(np.diff(w)).sum())


def test_gauge_equals_the_bisection_on_the_prox():
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(600):
        K = int(rng.choice([1, 1, 2, 3]))
        m = int(rng.integers(1, 12)) * K
        g = rng.standard_normal(m) * 10 ** rng.uniform(-3, 3)
        if rng.random() < 0.3:
            g = np.round(g)  # ties: runs of equal entries
        a, b, c = _strengths(rng)
        if a == b == 0.0:
            b = 0.5  # (the fused term alone: finite only for rows of zero mean)
        ref = gauge_by_prox(FusedSparseGroupLasso(a, c, b, n_classes=K), g[None, :],
                            rtol=1e-14)
        got = fsgl_row_gauge(g, a, b, c, K)
        assert got == pytest.approx(ref, rel=1e-10, abs=1e-300)
        assert got >= ref * (1 - 1e-13)  # rounded up: -g / gauge stays dual feasible
        checked += 1
    assert checked == 600


def test_gauge_of_the_fused_term_alone_is_infinite_off_zero_mean_rows():
    g = np.array([1.0, -2.0, 0.5])
    assert fsgl_row_gauge(g, 0.0, 0.0, 1.0, 1) == np.inf
    g0 = g - g.mean()
    # the largest |partial sum| of a zero-mean row is its dual norm for c = 1
    assert fsgl_row_gauge(g0, 0.0, 0.0, 1.0, 1) == pytest.approx(
        np.abs(np.cumsum(g0)[:-1]).max(), rel=1e-14)


def test_gauge_equals_cvxpy():
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(1)
    for _ in range(15):
        K = int(rng.choice([1, 2]))
        m = int(rng.integers(2, 8)) * K
        g = rng.standard_normal(m)
        a, b, c = (float(10 ** rng.uniform(-1, 0.5)) for _ in range(3))
        w = cp.Variable(m)
        W3 = cp.reshape(w, (m // K, K), order="C")
        fused = cp.sum(cp.abs(W3[1:, :] - W3[:-1, :]))
        prob = cp.Problem(cp.Maximize(g @ w),
                          [a * cp.norm1(w) + b * cp.norm2(w) + c * fused <= 1])
        prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
        assert fsgl_row_gauge(g, a, b, c, K) == pytest.approx(prob.value, rel=1e-8)


def test_gauge_of_rows_is_the_largest_row_gauge():
    rng = np.random.default_rng(2)
    for _ in range(50):
        G = rng.standard_normal((int(rng.integers(1, 9)), 15)) * rng.uniform(0.1, 3, (1, 1))
        a, b, c = (float(10 ** rng.uniform(-2, 0.5)) for _ in range(3))
        rows = max(fsgl_row_gauge(np.ascontiguousarray(r), a, b, c, 1) for r in G)
        assert fsgl_gauge_rows(G, a, b, c, 1) == pytest.approx(rows, rel=1e-12)
        pen = FusedSparseGroupLasso(a, c, b)
        assert pen.dual_bound(G).s_max == pytest.approx(1.0 / rows, rel=1e-12)


def test_weighted_row_min_with_equal_curvatures_is_the_prox():
    rng = np.random.default_rng(3)
    for _ in range(200):
        m = int(rng.integers(1, 30))
        z = rng.standard_normal(m) * 3
        hh = float(10 ** rng.uniform(-1, 1))
        a, b, c = _strengths(rng)
        out = np.empty(m)
        fsgl_weighted_row_min(z, np.full(m, hh), a, b, c, out)
        ref = np.empty(m)
        fsgl_row_prox(z / hh, a / hh, b / hh, c / hh, ref)
        np.testing.assert_allclose(out, ref, rtol=1e-10, atol=1e-12 * np.abs(z).max() / hh)


def test_weighted_row_min_equals_cvxpy():
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(4)
    for _ in range(40):
        m = int(rng.integers(1, 12))
        z = rng.standard_normal(m) * 3
        if rng.random() < 0.3:
            z = np.round(z)
        h = 10 ** rng.uniform(-1, 1, m)
        a, b, c = _strengths(rng)
        out = np.empty(m)
        fsgl_weighted_row_min(z, h, a, b, c, out)
        w = cp.Variable(m)
        expr = (0.5 * cp.sum(cp.multiply(h, cp.square(w))) - z @ w + a * cp.norm1(w)
                + b * cp.norm2(w))
        if m > 1:
            expr = expr + c * cp.norm1(cp.diff(w))
        cp.Problem(cp.Minimize(expr)).solve(solver=cp.CLARABEL)
        mine = _row_objective(out, z, h, a, b, c)
        ref = _row_objective(w.value, z, h, a, b, c)
        assert mine <= ref + 1e-12 * max(1.0, abs(ref))
        np.testing.assert_allclose(out, w.value, atol=1e-4 * max(1.0, np.abs(out).max()))


def test_weighted_row_min_meets_its_optimality_conditions():
    # z - h w - a s1 - b w / ||w|| must lie in c D^T [-1, 1]^(m-1) with s1 in d||w||_1:
    # checked through the row objective: no direction of a random small step lowers it
    rng = np.random.default_rng(5)
    for _ in range(100):
        m = int(rng.integers(2, 40))
        z = rng.standard_normal(m) * 3
        h = 10 ** rng.uniform(-1, 1, m)
        a, b, c = (float(10 ** rng.uniform(-1.5, 0.3)) for _ in range(3))
        out = np.empty(m)
        fsgl_weighted_row_min(z, h, a, b, c, out)
        f0 = _row_objective(out, z, h, a, b, c)
        for _ in range(20):
            step = rng.standard_normal(m) * 10 ** rng.uniform(-6, -2)
            assert _row_objective(out + step, z, h, a, b, c) >= f0 - 1e-12 * max(1, abs(f0))


def test_weighted_row_min_does_not_depend_on_the_guess():
    """The multiplier of a previous epoch (``mu0``) starts the search (one evaluation there,
    the root on its pattern, one evaluation to check it): the minimizer is the cold start's
    from any guess, weak and strong fusion alike, and meets the optimality test."""
    rng = np.random.default_rng(11)
    for _ in range(60):
        m = int(rng.integers(2, 150))
        z = rng.standard_normal(m) * 3 + rng.standard_normal()
        h = 10 ** rng.uniform(-1, 1, m)
        a, b = (float(10 ** rng.uniform(-2, 0)) for _ in range(2))
        c = float(10 ** rng.uniform(-2, 2))
        ref = np.empty(m)
        mu = fsgl_weighted_row_min(z, h, a, b, c, ref)
        f0 = _row_objective(ref, z, h, a, b, c)
        for _ in range(10):
            step = rng.standard_normal(m) * 10 ** rng.uniform(-6, -3)
            assert _row_objective(ref + step, z, h, a, b, c) >= f0 - 1e-12 * max(1, abs(f0))
        for factor in (1.0, 0.3, 3.0, 1e-3, 1e3):
            out = np.empty(m)
            got = fsgl_weighted_row_min(z, h, a, b, c, out, mu * factor)
            np.testing.assert_allclose(out, ref, rtol=1e-9,
                                       atol=1e-12 * max(1.0, np.abs(ref).max()))
            assert got == pytest.approx(mu, rel=1e-8, abs=1e-300)


def test_strongly_fused_rows_are_the_fused_minimizer():
    """A fusion strong enough to make every entry equal: the row is ``s 1`` with ``s =
    soft(sum z, a m + b sqrt(m)) / sum h``, its multiplier ``b / ||w||``; the same from cvxpy."""
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(12)
    for _ in range(10):
        m = int(rng.integers(2, 12))
        z = rng.standard_normal(m) + 3.0
        h = 10 ** rng.uniform(-1, 1, m)
        a, b, c = 0.1, 0.2, 100.0
        out = np.empty(m)
        mu = fsgl_weighted_row_min(z, h, a, b, c, out)
        s = max(abs(z.sum()) - (a * m + b * np.sqrt(m)), 0.0) * np.sign(z.sum()) / h.sum()
        np.testing.assert_allclose(out, np.full(m, s), rtol=1e-12)
        assert mu == pytest.approx(b / (abs(s) * np.sqrt(m)), rel=1e-12)
        w = cp.Variable(m)
        expr = (0.5 * cp.sum(cp.multiply(h, cp.square(w))) - z @ w + a * cp.norm1(w)
                + b * cp.norm2(w) + c * cp.norm1(cp.diff(w)))
        cp.Problem(cp.Minimize(expr)).solve(solver=cp.CLARABEL)
        np.testing.assert_allclose(out, w.value, atol=1e-5 * max(1.0, abs(s)))


@pytest.mark.parametrize("shared", [False, True])
def test_block_coordinate_descent_reaches_the_optimum_of_accelerated_gradient(shared):
    from multitask.data import as_multitask_data
    from multitask.losses import Squared
    from multitask.solvers import ProximalGradient
    from multitask.solvers.bcd import BlockCoordinateDescent

    rng = np.random.default_rng(6)
    d, m = 6, 5
    scales = np.logspace(-1, 1, d)
    W0 = rng.standard_normal((d, m))
    if shared:
        X = rng.standard_normal((40, d)) * scales
        Xs = [X] * m
    else:
        Xs = [rng.standard_normal((n, d)) * scales for n in (12, 30, 25, 50, 18)]
    ys = [X @ W0[:, t] + 0.3 * rng.standard_normal(len(X)) for t, X in enumerate(Xs)]
    df = Squared(as_multitask_data(Xs, ys)[0])
    top = float(np.abs(df.grad_at_zero()).max())
    for f in (0.01, 0.05, 0.2):
        pen = FusedSparseGroupLasso(f * top, f * top, 2 * f * top)
        bcd = BlockCoordinateDescent(tol=1e-10, max_iter=100_000).solve(df, pen)
        ref = ProximalGradient(tol=1e-10, max_iter=200_000).solve(df, pen)
        assert bcd.converged and ref.converged
        Fb = df.value(bcd.W) + pen.value(bcd.W)
        Fr = df.value(ref.W) + pen.value(ref.W)
        assert abs(Fb - Fr) <= 2e-10 * abs(Fr)


def test_weighted_row_min_with_zero_curvatures_and_an_l2_part_equals_cvxpy():
    # an entry the loss does not see (h_t = 0, z_t = 0) is still tied to its neighbours
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(7)
    for _ in range(30):
        m = int(rng.integers(2, 12))
        h = 10 ** rng.uniform(-1, 1, m)
        zero = rng.random(m) < 0.4
        h[zero] = 0.0
        z = rng.standard_normal(m) * 3
        z[zero] = 0.0
        a, _, c = _strengths(rng)
        b = float(10 ** rng.uniform(-1.5, 0.5))
        out = np.empty(m)
        fsgl_weighted_row_min(z, h, a, b, c, out)
        assert np.all(np.isfinite(out))
        w = cp.Variable(m)
        expr = (0.5 * cp.sum(cp.multiply(h, cp.square(w))) - z @ w + a * cp.norm1(w)
                + b * cp.norm2(w) + c * cp.norm1(cp.diff(w)))
        cp.Problem(cp.Minimize(expr)).solve(solver=cp.CLARABEL)
        ref = _row_objective(w.value, z, h, a, b, c)
        assert _row_objective(out, z, h, a, b, c) <= ref + 1e-10 * max(1.0, abs(ref))
