"""The compiled ADMM iteration of sparse + low rank against its interpreted twin."""

from __future__ import annotations

import numpy as np
import pytest
from test_admm_compiled import spy_compiled_steps

from multitask import SparseLowRankRegressor
from multitask.penalties.composite import SparseLowRank
from multitask.penalties.prox import GRAM_RTOL, SAFE_EXPONENT
from multitask.solvers import QuadraticADMM, admm
from multitask.solvers._admm_trace_numba import sparse_low_rank_admm_step
from multitask.solvers.admm import EigenSystem, _norm, _part_passes

SAFE = 2.0**SAFE_EXPONENT


def _system(d: int, m: int, shared: bool, seed: int):
    rng = np.random.default_rng(seed)
    k = 1 if shared else m
    B = rng.standard_normal((k, d, d // 2 + 1))  # rank-deficient Gram matrices
    H = B @ np.swapaxes(B, 1, 2) / B.shape[2]
    eig = EigenSystem(H, rng.standard_normal((d, m)))
    P = rng.standard_normal((d, m)) * (rng.random((d, m)) < 0.2)
    L = rng.standard_normal((d, 2)) @ rng.standard_normal((2, m))
    U = 0.3 * rng.standard_normal((d, m))
    return eig, P, L, U


def _interpreted(penalty, eig, P, L, U, rho, r):
    U = U.copy()
    AV = P + L
    W = eig.solve(AV - U, rho)
    Wr = r * W + (1.0 - r) * AV
    V = _part_passes(penalty, np.stack((P, L)), Wr + U, 1.0 / rho, 1)
    AV_new = V.sum(axis=0)
    U += Wr - AV_new
    res_pri = _norm(W - AV_new) / max(_norm(W), _norm(AV_new))
    res_dual = _norm(AV_new - AV) / _norm(U)
    return W, V, U, res_pri, res_dual


@pytest.mark.parametrize("d, m", [(6, 9), (9, 6), (28, 20)])
@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("ball", ["binding", "loose"])
def test_compiled_step_takes_the_interpreted_step(d, m, shared, ball):
    eig, P, L, U = _system(d, m, shared, seed=d + m)
    rho, r, alpha = 0.7, 1.6, 0.05
    # the radius: half the trace norm of the projection's argument (the ball binds), or twice
    W = eig.solve(P + L - U, rho)
    Z = r * W + (1.0 - r) * (P + L) + U
    from multitask.penalties.prox import soft_threshold

    s = np.linalg.svd(Z - soft_threshold(Z - L, alpha / rho), compute_uv=False).sum()
    radius = 0.5 * s if ball == "binding" else 2.0 * s
    penalty = SparseLowRank(alpha, radius)
    W0, V0, U0, p0, q0 = _interpreted(penalty, eig, P, L, U, rho, r)
    U1 = U.copy()
    ok, W1, V1, AV1, p1, q1, nuclear1 = sparse_low_rank_admm_step(
        eig.Q, eig._QT, eig.lam, np.ascontiguousarray(eig.QtC), P, L, U1, rho, r, alpha / rho,
        radius, GRAM_RTOL, SAFE)
    assert ok
    P1, L1 = V1
    np.testing.assert_array_equal(AV1, P1 + L1)
    scale = max(np.abs(W0).max(), 1.0)
    np.testing.assert_allclose(W1, W0, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(P1, V0[0], rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(L1, V0[1], rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(U1, U0, rtol=0, atol=1e-10 * scale)
    assert p1 == pytest.approx(p0, rel=1e-9)
    if ball == "binding":  # (a loose ball leaves U at rounding: its ratio is noise)
        assert q1 == pytest.approx(q0, rel=1e-9)
    else:
        assert _norm(U1) < 1e-12 * scale and _norm(U0) < 1e-12 * scale
    nuclear = np.linalg.svd(L1, compute_uv=False).sum()
    assert nuclear1 == pytest.approx(nuclear, rel=1e-9)
    if ball == "binding":
        assert nuclear == pytest.approx(radius, rel=1e-9)
    else:
        assert nuclear < radius


@pytest.mark.parametrize("scale", [1e-200, 1e200, np.nan])
def test_compiled_step_declines_entries_outside_the_safe_band(scale):
    eig, P, L, U = _system(6, 9, False, 0)
    U1 = U * scale
    ok, *_ = sparse_low_rank_admm_step(
        eig.Q, eig._QT, eig.lam, np.ascontiguousarray(eig.QtC) * scale, P * scale, L * scale,
        U1, 1.0, 1.6, 1e-3, 1.0, GRAM_RTOL, SAFE)
    assert not ok
    np.testing.assert_array_equal(U1, U * scale)


def _fit(monkeypatch, budget: float, calls: list, shared: bool):
    spy_compiled_steps(monkeypatch, budget, calls, admm._CompiledSparseLowRankStep, "iterate")
    rng = np.random.default_rng(2)
    W = rng.standard_normal((8, 2)) @ rng.standard_normal((2, 15))
    W[rng.random(W.shape) < 0.1] += 3.0
    if shared:
        X = rng.standard_normal((12, 8))
        Y = X @ W + 0.3 * rng.standard_normal((12, 15))
        data = (X, Y)
    else:
        Xs = [rng.standard_normal((int(rng.integers(10, 30)), 8)) for _ in range(15)]
        data = (Xs, [X @ W[:, t] + 0.3 * rng.standard_normal(len(X))
                     for t, X in enumerate(Xs)])
    return SparseLowRankRegressor(alpha=0.05, radius=3.0, tol=1e-9, max_iter=20_000,
                                  solver=QuadraticADMM(tol=1e-9, max_iter=20_000)).fit(*data)


@pytest.mark.parametrize("shared", [False, True])
def test_compiled_and_interpreted_fits_agree(monkeypatch, shared):
    calls_c: list = []
    fast = _fit(monkeypatch, 0.0, calls_c, shared)
    calls_i: list = []
    slow = _fit(monkeypatch, np.inf, calls_i, shared)
    assert fast.converged_ and slow.converged_
    assert ("compiled", True) in calls_c
    assert not any(c[0] == "compiled" for c in calls_i)  # the twin ran throughout
    np.testing.assert_allclose(fast.coef_, slow.coef_, atol=1e-6)
    assert abs(fast.n_iter_ - slow.n_iter_) <= 0.1 * slow.n_iter_ + 10


def test_the_compiled_step_applies_to_sparse_low_rank_only():
    eig, *_ = _system(6, 9, False, 0)
    assert admm._CompiledSparseLowRankStep.applies_split(SparseLowRank(0.1, 1.0), eig, 1)
    assert admm._CompiledSparseLowRankStep.applies_split(SparseLowRank(0.1, 1.0), eig, 2) \
        is None
    big, *_ = _system(admm.COMPILED_TRACE_MAX_FEATURES + 2, 4, True, 0)
    assert admm._CompiledSparseLowRankStep.applies_split(SparseLowRank(0.1, 1.0), big, 1) \
        is None
