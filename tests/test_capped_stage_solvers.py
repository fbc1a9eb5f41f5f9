"""The stage solvers of the multi-stage models under ``solver="auto"``.

The capped trace models take ADMM with exact per-task solves for their stages where the loss
is quadratic (:mod:`multitask.estimators._stage_solvers`); the solution must be the one of
accelerated proximal gradient (the stage solver before), checked at ``tol=1e-10`` on small
problems. The first stage is the trace norm (a convex problem with a certified gap). An inner
solver that returns a worse point than its warm start is replaced by accelerated proximal
gradient (the objective never increases across stages). The certificate of the capped l1
stages re-optimizes the unpenalized rows of every task at once (:func:`_sym_eig` on a stack).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from multitask.data import as_multitask_data
from multitask.estimators.capped_trace import CappedTraceRegressor
from multitask.losses import Squared
from multitask.penalties import CappedTraceNorm, TraceNorm, singular_values
from multitask.penalties.capped_trace import TruncatedTraceNorm
from multitask.penalties.prox import GRAM_RTOL, SAFE_EXPONENT
from multitask.solvers import Multistage, ProximalGradient, QuadraticADMM
from multitask.solvers._admm_trace_numba import trace_admm_step
from multitask.solvers.admm import EigenSystem
from multitask.solvers.base import Solver
from multitask.solvers.certificate import _eig_solve, _eig_solve_tasks, _sym_eig


def _low_rank_lists(seed=0, sizes=(40, 35, 50, 45, 30, 55), d=6, rank=2, noise=0.3):
    rng = np.random.default_rng(seed)
    m = len(sizes)
    W = 2.0 * rng.standard_normal((d, rank)) @ rng.standard_normal((rank, m))
    Xs = [rng.standard_normal((n, d)) + 0.5 * rng.standard_normal(d) for n in sizes]
    ys = [X @ W[:, t] + t + noise * rng.standard_normal(len(X)) for t, X in enumerate(Xs)]
    return Xs, ys


def _datafit(Xs, ys):
    data, _ = as_multitask_data(Xs, ys)
    return Squared(data, True)


@pytest.mark.parametrize("seed, alpha_rel, tau_rel", [(0, 0.1, 0.3), (1, 0.05, 0.1),
                                                      (2, 0.2, 0.6), (3, 0.02, 0.05)])
def test_admm_stages_reach_the_solution_of_accelerated_gradient(seed, alpha_rel, tau_rel):
    Xs, ys = _low_rank_lists(seed)
    df = _datafit(Xs, ys)
    alpha = alpha_rel * TraceNorm(1.0).alpha_max(df.grad_at_zero())
    trace = CappedTraceNorm(alpha, np.inf)  # one stage: the trace norm
    W1 = Multistage(n_stages=1, tol=1e-10, max_iter=50000).solve(df, trace).W
    tau = tau_rel * singular_values(W1)[0]
    pen = CappedTraceNorm(alpha, tau)
    ref = Multistage(tol=1e-10, max_iter=100000).solve(df, pen)
    new = Multistage(tol=1e-10, max_iter=100000,
                     inner=QuadraticADMM(tol=1e-10, max_iter=100000)).solve(df, pen)
    assert ref.converged and new.converged
    assert len(ref.info["stage_keys"]) >= 2  # a stage after the trace norm
    assert new.info["stage_keys"] == ref.info["stage_keys"]
    scale = np.abs(ref.W).max()
    np.testing.assert_allclose(new.W, ref.W, atol=1e-6 * scale)
    assert new.objective[-1] == pytest.approx(ref.objective[-1], rel=1e-10)
    # the estimator takes ADMM for the stages of the squared loss and finds the same model
    X = np.vstack(Xs)
    y = np.concatenate(ys)
    task = np.repeat(np.arange(len(Xs)), [len(x) for x in Xs])
    est = CappedTraceRegressor(alpha=alpha, tau=tau, tol=1e-10, max_iter=100000)
    est.fit(X, y, task)
    assert isinstance(est._make_solver(df, pen).inner, QuadraticADMM)
    np.testing.assert_allclose(est.coef_.T, ref.W, atol=1e-6 * scale)


def test_first_stage_is_the_trace_norm_with_a_certificate():
    Xs, ys = _low_rank_lists(4)
    df = _datafit(Xs, ys)
    pen = CappedTraceNorm(0.1 * TraceNorm(1.0).alpha_max(df.grad_at_zero()), np.inf)
    assert isinstance(pen.stage_penalty(np.zeros((6, 6))), TraceNorm)
    W = np.diag(np.arange(6.0, 0.0, -1.0))
    assert isinstance(CappedTraceNorm(1.0, 3.5).stage_penalty(W), TruncatedTraceNorm)
    res = Multistage(inner=QuadraticADMM(tol=1e-8)).solve(df, pen)
    # tau = inf: one stage, the trace norm, certified by its duality gap
    assert res.info["n_stages"] == 1 and res.info["stage_certified"]
    assert res.optimality <= 1e-8


class _Worse(Solver):
    """An inner solver that returns a point worse than its start (the last iterate of a
    solver that does not descend)."""

    name = "worse_for_tests"
    by_name = False  # not registered: the library's solvers (and trusted model files) stay its own

    def solve(self, datafit, penalty, *, coef_init=None, intercept_init=None, callback=None):
        res = ProximalGradient(max_iter=5, tol=1e-30, warn=False).solve(
            datafit, penalty, coef_init=coef_init)
        res.coef = res.W = np.asarray(coef_init) + 10.0
        return res


def test_a_stage_solver_that_increases_the_objective_is_replaced():
    Xs, ys = _low_rank_lists(5)
    df = _datafit(Xs, ys)
    alpha = 0.1 * TraceNorm(1.0).alpha_max(df.grad_at_zero())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = Multistage(inner=_Worse(), n_stages=4).solve(df, CappedTraceNorm(alpha, 0.5))
    F = res.objective
    assert np.all(np.diff(F) <= 1e-12 * abs(F[0]))
    ref = Multistage(n_stages=4).solve(df, CappedTraceNorm(alpha, 0.5))
    assert F[-1] <= ref.objective[0]  # not the worse points


def test_stacked_free_direction_solves_match_one_task_at_a_time():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((7, 4, 3))
    H = A @ np.swapaxes(A, 1, 2)  # rank 3 of 4
    H[2] = 0.0  # a task that does not see the rows
    r = rng.standard_normal((4, 7))
    eig = _sym_eig(H)
    one = np.stack([_eig_solve(_sym_eig(H[t]), r[:, t]) for t in range(7)], axis=1)
    np.testing.assert_allclose(_eig_solve_tasks(eig, r), one, atol=1e-12)
    assert not np.any(_eig_solve_tasks(eig, r)[:, 2])


@pytest.mark.parametrize("d, m, keep", [(6, 9, 1), (9, 6, 2), (28, 20, 3)])
@pytest.mark.parametrize("shared", [False, True])
def test_compiled_admm_step_takes_the_partial_thresholding(d, m, keep, shared):
    """The compiled ADMM step with ``keep`` leading singular values left untouched is the
    interpreted step with the truncated trace norm's prox (psvt)."""
    rng = np.random.default_rng(d + keep)
    k = 1 if shared else m
    B = rng.standard_normal((k, d, d))
    eig = EigenSystem(B @ np.swapaxes(B, 1, 2) / d, rng.standard_normal((d, m)))
    AV = rng.standard_normal((d, 4)) @ rng.standard_normal((4, m))
    U = 0.3 * rng.standard_normal((d, m))
    rho, r = 0.7, 1.6
    W = eig.solve(AV - U, rho)
    Wr = r * W + (1.0 - r) * AV
    s = np.linalg.svd(Wr + U, compute_uv=False)
    alpha = rho * 0.5 * (s[keep + 1] + s[keep + 2])  # thresholds values after the kept ones
    pen = TruncatedTraceNorm(alpha, keep)
    V0 = pen.prox(Wr + U, 1.0 / rho)
    U0 = U + Wr - V0
    U1 = U.copy()
    ok, W1, V1, _, _, tail = trace_admm_step(
        eig.Q, eig._QT, eig.lam, np.ascontiguousarray(eig.QtC), AV, U1, rho, r, alpha / rho,
        GRAM_RTOL, 2.0**SAFE_EXPONENT, keep)
    assert ok
    scale = max(np.abs(W).max(), 1.0)
    np.testing.assert_allclose(W1, W, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(V1, V0, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(U1, U0, rtol=0, atol=1e-10 * scale)
    # the reported figure is the penalized tail of the output
    assert alpha * tail == pytest.approx(pen.value(V0), rel=1e-9)
    # the kept values and the two thresholded ones above the threshold
    assert np.linalg.matrix_rank(V1, tol=1e-8 * scale) == keep + 2
    pen.remember_prox(V1, tail)
    assert pen.value(V1) == alpha * tail


def test_compiled_admm_stages_match_the_interpreted_ones(monkeypatch):
    """A whole capped trace fit with the compiled step and without it (the interpreted
    steps only): the same solution."""
    import multitask.solvers.admm as admm

    Xs, ys = _low_rank_lists(6)
    df = _datafit(Xs, ys)
    alpha = 0.05 * TraceNorm(1.0).alpha_max(df.grad_at_zero())
    pen = CappedTraceNorm(alpha, 0.5)
    monkeypatch.setattr(admm.CompiledTraceStep, "ready", lambda self: True)
    fast = Multistage(tol=1e-10, inner=QuadraticADMM(tol=1e-10, max_iter=100000)).solve(df, pen)
    monkeypatch.setattr(admm.CompiledTraceStep, "applies", classmethod(lambda *a: None))
    slow = Multistage(tol=1e-10, inner=QuadraticADMM(tol=1e-10, max_iter=100000)).solve(df, pen)
    assert fast.converged and slow.converged and len(fast.info["stage_keys"]) >= 2
    assert fast.info["stage_keys"] == slow.info["stage_keys"]
    np.testing.assert_allclose(fast.W, slow.W, atol=1e-7 * np.abs(slow.W).max())
