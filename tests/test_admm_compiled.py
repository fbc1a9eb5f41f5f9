"""The compiled ADMM iteration of the trace norm against its interpreted twin."""

from __future__ import annotations

import numpy as np
import pytest

import multitask.compiled as compiled
from multitask import TraceNormRegressor
from multitask.penalties.norms import TraceNorm
from multitask.penalties.prox import GRAM_RTOL, SAFE_EXPONENT
from multitask.solvers import admm
from multitask.solvers._admm_trace_numba import trace_admm_step
from multitask.solvers.admm import EigenSystem, _norm

SAFE = 2.0**SAFE_EXPONENT


def _system(d: int, m: int, shared: bool, seed: int) -> tuple[EigenSystem, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    k = 1 if shared else m
    B = rng.standard_normal((k, d, d // 2 + 1))  # rank-deficient Gram matrices, as raw School
    H = B @ np.swapaxes(B, 1, 2) / B.shape[2]
    eig = EigenSystem(H, rng.standard_normal((d, m)))
    # a low-rank V and a scaled dual of the size of the gradient, as in a run
    AV = rng.standard_normal((d, 2)) @ rng.standard_normal((2, m))
    U = 0.3 * rng.standard_normal((d, m))
    return eig, AV, U


def _interpreted(eig, AV, U, rho, r, alpha):
    U = U.copy()
    W = eig.solve(AV - U, rho)
    Wr = r * W + (1.0 - r) * AV
    V = TraceNorm(alpha).prox(Wr + U, 1.0 / rho)
    U += Wr - V
    res_pri = _norm(W - V) / max(_norm(W), _norm(V))
    res_dual = _norm(V - AV) / _norm(U)
    return W, V, U, res_pri, res_dual


@pytest.mark.parametrize("d, m", [(6, 9), (9, 6), (28, 20)])
@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_compiled_step_takes_the_interpreted_step(d, m, shared, seed):
    eig, AV, U = _system(d, m, shared, seed)
    rho, r = 0.7, 1.6
    # a threshold between the 2nd and 3rd singular values of the prox's argument: rank 2
    W = eig.solve(AV - U, rho)
    s = np.linalg.svd(r * W + (1.0 - r) * AV + U, compute_uv=False)
    alpha = rho * 0.5 * (s[1] + s[2])
    W0, V0, U0, p0, q0 = _interpreted(eig, AV, U, rho, r, alpha)
    U1 = U.copy()
    ok, W1, V1, p1, q1, norm = trace_admm_step(
        eig.Q, eig._QT, eig.lam, np.ascontiguousarray(eig.QtC), AV, U1, rho, r, alpha / rho,
        GRAM_RTOL, SAFE)
    assert ok
    scale = max(np.abs(W0).max(), 1.0)
    np.testing.assert_allclose(W1, W0, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(V1, V0, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(U1, U0, rtol=0, atol=1e-10 * scale)
    assert p1 == pytest.approx(p0, rel=1e-9) and q1 == pytest.approx(q0, rel=1e-9)
    # the trace norm it reports is the output's
    assert norm == pytest.approx(np.linalg.svd(V1, compute_uv=False).sum(), rel=1e-9)
    assert np.linalg.matrix_rank(V1, tol=1e-8 * scale) == 2  # the threshold bites


def test_compiled_step_declines_an_unresolved_singular_value():
    """A kept singular value below GRAM_RTOL times the largest: the Gram route cannot resolve
    it, the kernel changes nothing and says so (the solver then takes the interpreted
    step)."""
    eig, AV, _ = _system(8, 12, False, 3)
    U = np.zeros_like(AV)
    # rho = 1e9: W = A V + O(1e-9), so the prox's argument is the rank-2 A V plus singular
    # values near 1e-9 of its scale, which a threshold of 1e-12 keeps
    U1 = U.copy()
    ok, *_ = trace_admm_step(eig.Q, eig._QT, eig.lam, np.ascontiguousarray(eig.QtC), AV, U1,
                             1e9, 1.6, 1e-12, GRAM_RTOL, SAFE)
    assert not ok
    np.testing.assert_array_equal(U1, U)
    # with a threshold above GRAM_RTOL times the largest it proceeds
    top = np.linalg.svd(AV, compute_uv=False)[0]
    ok, *_ = trace_admm_step(eig.Q, eig._QT, eig.lam, np.ascontiguousarray(eig.QtC), AV, U1,
                             1e9, 1.6, 1e-2 * top, GRAM_RTOL, SAFE)
    assert ok


@pytest.mark.parametrize("scale", [1e-200, 1e200, np.nan])
def test_compiled_step_declines_entries_outside_the_safe_band(scale):
    """Entries whose squares overflow or underflow (or NaN): the kernel declines and the
    interpreted step, which rescales (or raises a clear error), takes over."""
    eig, AV, U = _system(6, 9, False, 0)
    U1 = U * scale
    ok, *_ = trace_admm_step(eig.Q, eig._QT, eig.lam, np.ascontiguousarray(eig.QtC) * scale,
                             AV * scale, U1, 1.0, 1.6, 1e-3, GRAM_RTOL, SAFE)
    assert not ok
    np.testing.assert_array_equal(U1, U * scale)


def _school_like(seed: int = 0):
    """Per-task designs with a bias column and constant school-level columns (rank-deficient
    Gram matrices: the ill-conditioned case where ADMM is the automatic choice)."""
    rng = np.random.default_rng(seed)
    Xs, ys = [], []
    W = rng.standard_normal((7, 2)) @ rng.standard_normal((2, 12))
    for t in range(12):
        n = int(rng.integers(30, 60))
        X = np.column_stack([np.ones(n), 50 + 20 * rng.standard_normal((n, 4)),
                             np.full((n, 2), rng.standard_normal(2) * 10)])
        Xs.append(X)
        ys.append(X @ W[:, t] / 20 + rng.standard_normal(n))
    return Xs, ys


def spy_compiled_steps(monkeypatch, budget: float, calls: list, cls, method: str) -> None:
    """Give the interpreted steps the budget ``budget`` (0: compiled at once) and record in
    ``calls`` each charge (``("charge", seconds)``) and each compiled step of ``cls.method``
    (``("compiled", taken)``)."""
    monkeypatch.setattr(compiled, "interpreted_budget", lambda: budget)
    monkeypatch.setattr(compiled, "charge_interpreted", lambda s: calls.append(("charge", s)))
    original = getattr(cls, method)

    def spy(self, *args):
        out = original(self, *args)
        calls.append(("compiled", out is not None))
        return out

    monkeypatch.setattr(cls, method, spy)


def _fit(monkeypatch, budget: float, calls: list):
    """A trace-norm fit with the interpreted budget ``budget`` (0: compiled at once)."""
    spy_compiled_steps(monkeypatch, budget, calls, admm.CompiledTraceStep, "step")
    Xs, ys = _school_like()
    return TraceNormRegressor(alpha=0.5, fit_intercept=False, tol=1e-9, max_iter=20_000,
                              solver="admm").fit(Xs, ys)


def test_compiled_and_interpreted_fits_agree(monkeypatch):
    calls_c: list = []
    fast = _fit(monkeypatch, 0.0, calls_c)
    calls_i: list = []
    slow = _fit(monkeypatch, np.inf, calls_i)
    assert fast.converged_ and slow.converged_
    assert ("compiled", True) in calls_c
    assert not any(c[0] == "compiled" for c in calls_i)  # the twin ran throughout
    assert fast.n_iter_ == slow.n_iter_
    np.testing.assert_allclose(fast.coef_, slow.coef_, rtol=0,
                               atol=1e-8 * np.abs(slow.coef_).max())
    assert fast.optimality_ <= 1e-9


def test_interpreted_steps_are_charged_then_the_compiled_step_takes_over(monkeypatch):
    calls: list = []
    _fit(monkeypatch, 1e-3, calls)  # a budget of a few interpreted iterations
    kinds = [c[0] for c in calls]
    assert "compiled" in kinds
    first = kinds.index("compiled")
    charges = [c for c in calls if c[0] == "charge"]
    assert len(charges) == 1 and charges[0][1] >= 1e-3  # charged once, at the hand-over
    assert kinds.index("charge") < first
