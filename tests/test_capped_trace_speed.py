"""The non-convex stages of the capped trace norm by ADMM at a fixed penalty parameter
(:class:`multitask.solvers.truncated_admm.TruncatedStageADMM`, taken by
:class:`multitask.solvers.Multistage` for an adaptive ADMM inner solver)."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import multitask.solvers.truncated_admm as truncated_admm
from multitask.data import as_multitask_data
from multitask.losses import Squared
from multitask.penalties import CappedTraceNorm, TraceNorm, TruncatedTraceNorm
from multitask.solvers import Multistage
from multitask.solvers.admm import QuadraticADMM
from multitask.solvers.truncated_admm import TruncatedStageADMM


def _singular_problem(seed, m=30, d=10, n=12, scale=30.0):
    """Per-task designs with one feature on a larger scale and two features absent from every
    other task (singular ``H_t``, as School's schools): the shape of problem on which the
    adaptive penalty parameter made the truncated stages rise and fall back."""
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((d, 2)) @ rng.standard_normal((2, m))
    Xs, ys = [], []
    for t in range(m):
        X = rng.standard_normal((n, d))
        X[:, 0] *= scale
        if t % 2:
            X[:, -2:] = 0.0
        Xs.append(X)
        ys.append(X @ B[:, t] + 0.5 * rng.standard_normal(n))
    data, _ = as_multitask_data(Xs, ys)
    return Squared(data, True, use_gram=True)


def _penalty(df, frac, tau):
    return CappedTraceNorm(frac * TraceNorm(1.0).alpha_max(df.grad_at_zero()), tau)


def _first_stage(df, pen, tol=1e-6):
    """The first stage's result (the trace norm), the stages after it not run."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return Multistage(n_stages=1, inner=QuadraticADMM(tol=tol)).solve(df, pen)


@pytest.mark.parametrize("frac, tau", [(0.1, 0.5), (0.2, 1.0)])
def test_truncated_stages_converge_within_the_budget(frac, tau):
    """With the adaptive ADMM the truncated stage of these problems rose above its start, fell
    back to accelerated gradient and ran past the budget (2,000 + 473 iterations); at a fixed
    penalty parameter it converges in a few hundred, to the objective of a long run of
    accelerated gradient."""
    df = _singular_problem(2)
    pen = _penalty(df, frac, tau)
    inner = QuadraticADMM(max_iter=2000, tol=1e-4)
    res = Multistage(max_iter=2000, tol=1e-4, inner=inner).solve(df, pen)
    assert res.converged and res.optimality <= 1e-4
    iters = res.info["stage_iters"]
    assert len(iters) >= 2 and all(k < 1000 for k in iters[1:])
    assert not any(res.info["stage_stalled"])
    ref = Multistage(max_iter=20000, tol=1e-7).solve(df, pen)
    assert ref.converged
    assert res.objective[-1] <= ref.objective[-1] * (1 + 1e-5)
    assert np.all(np.diff(res.objective) <= 1e-12 * abs(res.objective[0]))


def test_a_stalled_stage_is_reported_and_warned(monkeypatch):
    df = _singular_problem(2)
    pen = _penalty(df, 0.1, 0.5)
    # a tolerance out of reach, and no condition on the measure's fall: the stage stops on
    # its objective, which decreases by less than stall_tol over a window
    monkeypatch.setattr(truncated_admm, "STALL_MEASURE_RATIO", 0.0)
    solver = Multistage(max_iter=2000, tol=1e-12,
                        inner=QuadraticADMM(max_iter=2000, tol=1e-12), stall_tol=1e-3)
    with pytest.warns(ConvergenceWarning, match="stall_tol"):
        res = solver.solve(df, pen)
    assert not res.converged and res.info["stage_stalled"][-1]
    assert res.info["stage_iters"][-1] < 2000
    first = _first_stage(df, pen, tol=1e-4)
    assert res.objective[-1] <= first.objective[-1]  # still a descent from the trace norm


def test_the_stage_objective_never_rises_above_the_start():
    df = _singular_problem(0)
    pen = _penalty(df, 0.05, 0.5)
    W0 = _first_stage(df, pen).W
    stage = pen.stage_penalty(W0)
    assert isinstance(stage, TruncatedTraceNorm) and stage.rank >= 1
    start = df.value(W0) + stage.value(W0)
    for rho_scale in (0.01, 2.0, 100.0):
        res = TruncatedStageADMM(rho_scale=rho_scale, max_iter=300, warn=False).solve(
            df, stage, coef_init=W0)
        value = df.value(res.W) + stage.value(res.W)
        assert value <= start * (1 + 1e-12)
        assert np.all(np.diff(res.objective) <= 1e-12 * abs(start))


def test_compiled_and_interpreted_steps_agree(monkeypatch):
    df = _singular_problem(1)
    pen = _penalty(df, 0.1, 0.5)
    W0 = _first_stage(df, pen).W
    stage = pen.stage_penalty(W0)
    solver = TruncatedStageADMM(max_iter=400, tol=1e-8, stall_tol=0.0, warn=False)
    fast = solver.solve(df, stage, coef_init=W0)
    monkeypatch.setattr(truncated_admm, "COMPILED_TRACE_MAX_FEATURES", 0)
    slow = solver.solve(df, stage, coef_init=W0)
    assert fast.n_iter == slow.n_iter
    np.testing.assert_allclose(fast.W, slow.W, atol=1e-8 * np.abs(slow.W).max())


def test_a_configured_admm_keeps_its_own_iteration():
    """An inner ADMM with a given penalty parameter is run as configured (the stages of the
    previous behaviour)."""
    df = _singular_problem(2)
    pen = _penalty(df, 0.1, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = Multistage(max_iter=300, tol=1e-4,
                         inner=QuadraticADMM(max_iter=300, tol=1e-4, rho=1.0)).solve(df, pen)
    assert res.info["stage_stalled"] == [False] * len(res.info["stage_keys"])


@pytest.mark.parametrize("kw", [{"rho_scale": 0.0}, {"relaxation": 2.0}, {"window": 0},
                                {"stall_tol": -1.0}, {"max_rises": -1}])
def test_bad_settings_are_refused(kw):
    with pytest.raises(ValueError):
        TruncatedStageADMM(**kw)


def test_bad_stall_tol_is_refused():
    with pytest.raises(ValueError, match="stall_tol"):
        Multistage(stall_tol=-1.0)


def test_a_converging_stage_is_not_taken_for_stalled():
    """The objective barely moves over a window near the solution, but the measure falls
    geometrically there: the stage goes on to the tolerance, whatever stall_tol."""
    df = _singular_problem(2)
    pen = _penalty(df, 0.1, 0.5)
    res = Multistage(max_iter=2000, tol=1e-9, inner=QuadraticADMM(max_iter=2000, tol=1e-9),
                     stall_tol=0.5).solve(df, pen)
    assert res.converged and res.optimality <= 1e-9
    assert not any(res.info["stage_stalled"])


def test_a_stage_left_early_for_the_next_one():
    """With leave_stages a truncated stage ends at the first window whose point has another
    stage key (the next stage's penalty taken there): no more iterations in the stages before
    the last, the same model here, the objective still non-increasing."""
    df = _singular_problem(0)
    pen = _penalty(df, 0.05, 0.5)
    inner = QuadraticADMM(max_iter=2000, tol=1e-4)
    runs = {leave: Multistage(max_iter=2000, tol=1e-4, inner=inner, leave_stages=leave)
            .solve(df, pen) for leave in (True, False)}
    early, full = runs[True], runs[False]
    assert early.converged and full.converged
    assert len(early.info["stage_keys"]) >= 3  # a truncated stage before the last
    assert early.info["stage_keys"] == full.info["stage_keys"]
    assert all(a <= b for a, b in zip(early.info["stage_iters"][1:-1],
                                      full.info["stage_iters"][1:-1], strict=True))
    assert early.objective[-1] == pytest.approx(full.objective[-1], rel=1e-6)
    assert np.all(np.diff(early.objective) <= 1e-12 * abs(early.objective[0]))
    assert Multistage().leave_stages and not Multistage(leave_stages=False).leave_stages
