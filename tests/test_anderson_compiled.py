"""The compiled Anderson step (:mod:`multitask.solvers._anderson_numba`) against its
interpreted twin (:class:`multitask.solvers.admm.AndersonADMM` with ``compiled=False``)."""

from __future__ import annotations

import numpy as np
import pytest

from multitask.solvers._anderson_numba import solve_ones
from multitask.solvers.admm import QuadraticADMM
from multitask.solvers.admm_anderson import AndersonADMM


def _linear_map(seed: int, n: int = 24):
    rng = np.random.default_rng(seed)
    Qm, _ = np.linalg.qr(rng.standard_normal((n, n)))
    M = Qm @ np.diag(np.linspace(-0.5, 0.995, n)) @ Qm.T
    return M, rng.standard_normal(n)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("memory", [2, 5, 20])
def test_compiled_steps_match_the_interpreted_ones(seed, memory):
    """The same sequence of extrapolations (and of safeguard decisions) over the iterations of a
    linear fixed-point map, to rounding, until the residual falls to 1e-6 of the iterate (from
    there on, rounding decides the safeguard)."""
    M, b = _linear_map(seed)
    runs = {}
    for compiled in (False, True):
        accel = AndersonADMM(memory=memory, after=0, compiled=compiled)
        V, U = np.zeros((2, 2, 3)), np.zeros((2, 6))
        points = []
        for k in range(1, 120):
            z = np.concatenate([V.ravel(), U.ravel()])
            out = M @ z + b
            V_new, U_new = out[:12].reshape(V.shape), out[12:].reshape(U.shape)
            if np.linalg.norm(out - z) <= 1e-6 * np.linalg.norm(out):
                break
            moved = accel.step(k, V, U, V_new, U_new)
            points.append(None if moved is None else np.concatenate(
                [moved[0].ravel(), moved[1].ravel()]))
            V, U = (V_new, U_new) if moved is None else moved
        runs[compiled] = points
    assert len(runs[False]) == len(runs[True])
    assert [p is None for p in runs[False]] == [p is None for p in runs[True]]
    for a, c in zip(runs[False], runs[True], strict=True):
        if a is not None:
            np.testing.assert_allclose(c, a, rtol=0, atol=1e-9 * max(1.0, np.abs(a).max()))
    assert sum(p is not None for p in runs[True]) > 10


def test_gaussian_elimination_solves_and_reports_singular_systems():
    rng = np.random.default_rng(3)
    A = rng.standard_normal((7, 7))
    G = A @ A.T + 1e-3 * np.eye(7)
    ok, z = solve_ones(G.copy())
    assert ok
    np.testing.assert_allclose(G @ z, np.ones(7), rtol=1e-9)
    ok, _ = solve_ones(np.zeros((3, 3)))
    assert not ok
    ok, _ = solve_ones(np.full((2, 2), np.nan))
    assert not ok


def test_zero_residuals_skip_the_extrapolation():
    """A fixed point reached exactly (zero residuals, no positive trace): no extrapolation."""
    accel = AndersonADMM(memory=4, after=0, compiled=True)
    z = np.ones((2, 2))
    assert accel.step(1, z, z, z, z) is None
    assert accel.step(2, z, z, z, z) is None


def test_admm_fits_agree_with_either_anderson():
    """A sparse + low-rank fit with the compiled and with the interpreted extrapolation reaches
    the same certified solution."""
    from multitask import SparseLowRankRegressor

    rng = np.random.default_rng(0)
    X = [rng.standard_normal((30, 6)) for _ in range(5)]
    y = [x @ rng.standard_normal(6) + 0.1 * rng.standard_normal(30) for x in X]
    coefs = []
    for compiled in (False, True):
        original = AndersonADMM.__init__

        def init(self, memory, after, compiled=compiled, _orig=original):
            _orig(self, memory, after, compiled)

        AndersonADMM.__init__ = init
        try:
            m = SparseLowRankRegressor(alpha=0.05, radius=1.0, solver=QuadraticADMM(tol=1e-9))
            coefs.append(m.fit(X, y).coef_)
            assert m.converged_
        finally:
            AndersonADMM.__init__ = original
    np.testing.assert_allclose(coefs[0], coefs[1], atol=1e-6 * np.abs(coefs[0]).max())


def test_trace_ball_norm_recalls_a_remembered_projection():
    """The nuclear norm a compiled step hands over is the ball's norm at that very array, and
    only there (a changed array takes the SVD)."""
    from multitask.penalties.balls import TraceBall

    rng = np.random.default_rng(0)
    L = rng.standard_normal((4, 6))
    ball = TraceBall(3.0)
    exact = np.linalg.svd(L, compute_uv=False).sum()
    ball.remember_prox(L, 123.0)
    assert ball.norm(L.copy()) == 123.0
    assert ball.norm(L + 1e-3) == pytest.approx(np.linalg.svd(L + 1e-3,
                                                              compute_uv=False).sum())
    ball.remember_prox(L, exact)
    L[0, 0] += 1.0  # the remembered array was copied: an in-place change is not recalled
    assert ball.norm(L) == pytest.approx(np.linalg.svd(L, compute_uv=False).sum())


def test_anderson_combination_is_the_interpreted_point():
    """The compiled combination of flat iterates equals ``anderson_point``'s, and declines where
    the differences vanish."""
    from multitask.solvers._anderson_numba import anderson_combination
    from multitask.solvers.anderson import anderson_point

    rng = np.random.default_rng(3)
    hist = np.cumsum(rng.standard_normal((6, 9)) * 0.5 ** np.arange(6)[:, None], axis=0)
    out = np.empty(9)
    assert anderson_combination(hist, out)
    np.testing.assert_allclose(out, anderson_point(hist), rtol=1e-10, atol=1e-12)
    assert not anderson_combination(np.ones((6, 9)), out)
