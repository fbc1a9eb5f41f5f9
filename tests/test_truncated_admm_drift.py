"""The drift rule of the capped trace norm's non-convex stages
(:mod:`multitask.solvers.truncated_admm`): a window whose change lies mostly in the entries of
``W`` the loss does not see ends the run at a larger decrease than the stall rule's."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import multitask
from multitask.penalties.capped_trace import TruncatedTraceNorm
from multitask.solvers import truncated_admm
from multitask.solvers.truncated_admm import TruncatedStageADMM, _drift_share, _unseen_entries


def _tasks(constant: int, seed: int = 0, m: int = 60, d: int = 10, n: int = 12):
    """Per-task designs with ``constant`` features constant within each task's rows (unseen
    by the loss once centred), rank-3 weights, noise 0.5."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((d, 3)) @ rng.standard_normal((3, m))
    Xs, ys = [], []
    for t in range(m):
        X = rng.standard_normal((n, d))
        if constant:
            cols = rng.choice(d, constant, replace=False)
            X[:, cols] = rng.standard_normal(constant)
        Xs.append(X)
        ys.append(X @ W[:, t] + 0.5 * rng.standard_normal(n))
    return Xs, ys


def _stage(constant: int):
    """The datafit, the first (trace-norm) stage's solution and the truncated stage with the
    4 leading singular values kept, at ``alpha = 0.5``: with 5 constant features of 10 the
    stage's solution has rank 4, its tail at zero, and the stage drifts."""
    Xs, ys = _tasks(constant)
    est = multitask.CappedTraceRegressor(alpha=0.5, tau=2.0, n_stages=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(Xs, ys)
    datafit = est._make_datafit(est._convert(Xs, ys, None, None)[0])
    return datafit, est.coef_.T.copy(), TruncatedTraceNorm(0.5, 4)


def _run(datafit, W0, penalty, factor, monkeypatch):
    monkeypatch.setattr(truncated_admm, "DRIFT_FACTOR", factor)
    res = TruncatedStageADMM(max_iter=3000, warn=False).solve(datafit, penalty, coef_init=W0)
    return res, float(datafit.value(res.coef) + penalty.value(res.coef))


def test_unseen_entries_and_drift_share():
    H = np.zeros((2, 3, 3))
    H[0, :2, :2] = np.eye(2)  # task 0 sees features 0 and 1
    H[1] = np.eye(3)
    unseen = _unseen_entries(H, (3, 2))
    assert unseen.tolist() == [[False, False], [False, False], [True, False]]
    assert _unseen_entries(np.broadcast_to(np.eye(3), (1, 3, 3)), (3, 2)) is None
    change = np.zeros((3, 2))
    change[2, 0], change[0, 1] = 3.0, 4.0
    assert _drift_share(change, unseen) == pytest.approx(9.0 / 25.0, rel=1e-15)
    assert _drift_share(np.zeros((3, 2)), unseen) == 0.0
    assert _drift_share(change, None) == 0.0


def test_drift_ends_the_stage_earlier(monkeypatch):
    datafit, W0, penalty = _stage(constant=5)
    start = float(datafit.value(W0) + penalty.value(W0))
    drift, F_drift = _run(datafit, W0, penalty, truncated_admm.DRIFT_FACTOR, monkeypatch)
    whole, F_whole = _run(datafit, W0, penalty, 0.0, monkeypatch)
    assert drift.info["drifting"] and drift.info["stalled"] and not drift.converged
    assert not whole.info["drifting"]
    assert drift.n_iter <= 0.6 * whole.n_iter
    # the objective never rises from the start; what the rest of the run gains is small
    assert F_drift <= start
    assert F_whole <= F_drift <= F_whole * (1.0 + 1e-2)


def test_no_drift_where_the_loss_sees_every_entry(monkeypatch):
    datafit, W0, penalty = _stage(constant=0)
    a, F_a = _run(datafit, W0, penalty, truncated_admm.DRIFT_FACTOR, monkeypatch)
    b, F_b = _run(datafit, W0, penalty, 0.0, monkeypatch)
    assert not a.info["drifting"]
    assert a.n_iter == b.n_iter
    np.testing.assert_array_equal(a.coef, b.coef)
    assert F_a == F_b


def test_a_drifting_fit_says_so():
    Xs, ys = _tasks(constant=5)
    with pytest.warns(ConvergenceWarning, match="entries of W that the loss does not see"):
        est = multitask.CappedTraceRegressor(alpha=0.5, tau=2.0).fit(Xs, ys)
    assert not est.converged_
    assert est.solver_info_["stage_stalled"][-1]


@pytest.mark.parametrize("constant", [5, 0])
def test_the_rules_are_rates_whatever_the_window(constant):
    """The stall and drift rules ask a rate per ``STALL_SPAN`` iterations: on this small
    problem windows of 25, 50 and 100 iterations end the drifting stage alike (within a tenth
    of the iterations and 0.1% of the objective) and converge on the stage with every entry
    seen alike (on School's fits a shorter window ends stages sooner: module docstring)."""
    datafit, W0, pen = _stage(constant)
    runs = []
    for window in (25, 50, 100):
        res = TruncatedStageADMM(max_iter=3000, window=window, warn=False).solve(
            datafit, pen, coef_init=W0)
        runs.append((res, float(datafit.value(res.coef) + pen.value(res.coef))))
    for res, F in runs:
        assert res.info["drifting"] == bool(constant) and res.converged == (not constant)
        assert F == pytest.approx(runs[-1][1], rel=1e-3)
        assert abs(res.n_iter - runs[-1][0].n_iter) <= 0.1 * runs[-1][0].n_iter
    assert truncated_admm.STALL_SPAN == 100


def test_the_measure_is_computed_at_the_checks_only(monkeypatch):
    """Windows shorter than ``check_every`` compare objectives (drift rule, stage key) without
    computing the prox-gradient residual: it is computed every ``check_every`` iterations (and
    once at the end)."""
    datafit, W0, pen = _stage(5)
    calls = []
    real = truncated_admm.kkt_residual

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(truncated_admm, "kkt_residual", counted)
    res = TruncatedStageADMM(max_iter=3000, window=25, check_every=100, warn=False).solve(
        datafit, pen, coef_init=W0)
    assert res.info["drifting"]
    assert len(calls) <= res.n_iter // 100 + 1
    assert res.n_iter % 25 == 0


@pytest.mark.parametrize("constant", [5, 0])
@pytest.mark.parametrize("keep", [0, 2, 4, 10])
def test_compiled_residual_is_kkt_residual(constant, keep):
    """The stage's compiled prox-gradient residual (through the R factor and the SVD) equals
    :func:`multitask.solvers.base.kkt_residual` to 1e-10, at the stage's start and at
    perturbed points (a shared and per-task ``H``)."""
    from multitask.solvers._admm_trace_numba import truncated_stage_residual
    from multitask.solvers.base import kkt_residual, lipschitz_bound

    datafit, W0, _ = _stage(constant)
    pen = TruncatedTraceNorm(0.5, keep)
    H, C = datafit.quadratic_form()
    L = lipschitz_bound(datafit, pen)
    rng = np.random.default_rng(keep)
    for V in (W0, W0 + 0.1 * rng.standard_normal(W0.shape), 0.0 * W0):
        ok, norm = truncated_stage_residual(H, np.ascontiguousarray(C), np.ascontiguousarray(V),
                                            L, 0.5 / L, keep, 2.0**400)
        assert ok
        expected = kkt_residual(datafit, pen, V, None, L)
        assert L * norm / datafit.gradient_scale() == pytest.approx(expected, rel=1e-10,
                                                                    abs=1e-14)
    # a shared H (one design for every task)
    Hs = np.ascontiguousarray(H[:1])
    Cs = np.ascontiguousarray(C)
    ok, norm = truncated_stage_residual(Hs, Cs, np.ascontiguousarray(W0), L, 0.5 / L, keep,
                                        2.0**400)
    G = Hs[0] @ W0 - Cs
    Z = W0 - G / L
    U, s, Vt = np.linalg.svd(Z, full_matrices=False)
    s_new = s.copy()
    s_new[keep:] = np.maximum(s[keep:] - 0.5 / L, 0.0)
    assert ok and norm == pytest.approx(np.linalg.norm(W0 - (U * s_new) @ Vt), rel=1e-10)
    # out of the safe band: declined
    assert truncated_stage_residual(H, C, np.full_like(W0, np.nan), L, 0.5 / L, keep,
                                    2.0**400)[0] is False
