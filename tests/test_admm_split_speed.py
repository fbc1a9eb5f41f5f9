"""ADMM's iteration counts on the split models and the dirty model (Anderson's extrapolation
and the residual-balancing fallback of :mod:`multitask.solvers.admm`), and the optimum they
reach: the same as without them.

The problems are School's first 20 schools, z-scored features plus a constant column, rows
scaled as ``benchmarks/bench_certified.py --sweep`` scales them, at the sweep points where
ADMM was slowest: sparse + low rank at ``(0.00473, 0.106)`` (4,135 iterations to a certified
1e-8 before these changes) and the dirty model (q = inf) at ``(0.00473, 0.00473)`` (12,460).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from multitask import DirtyModelRegressor, SparseLowRankRegressor
from multitask.solvers.admm import QuadraticADMM, _balanced_rho
from multitask.solvers.admm_anderson import AndersonADMM

TOL = 1e-8


def _school_zscored(c: float) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The first 20 schools, z-scored features and the constant column, the rows of task
    ``t`` multiplied by ``sqrt(c n_t)`` (the library's loss is then MALSAR's ``sum_t (c / 2)
    ||y_t - X_t w_t||^2``)."""
    from multitask.datasets import load_school

    school = load_school(include_bias=True)
    Xs = [np.asarray(X, dtype=np.float64) for X in school.X[:20]]
    ys = [np.asarray(y, dtype=np.float64) for y in school.y[:20]]
    stacked = np.vstack(Xs)
    mu, sd = stacked[:, :-1].mean(axis=0), stacked[:, :-1].std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    Xs = [np.column_stack([(X[:, :-1] - mu) / sd, X[:, -1]]) for X in Xs]
    scale = [np.sqrt(c * len(y)) for y in ys]
    return [s * X for s, X in zip(scale, Xs, strict=True)], [s * y for s, y in
                                                            zip(scale, ys, strict=True)]


def _fit(est, X, y, **settings):
    est.set_params(solver=QuadraticADMM(tol=TOL, max_iter=30000, **settings),
                   fit_intercept=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a ConvergenceWarning fails the test
        est.fit(X, y)
    assert est.converged_ and est.certified_
    return est


def _objective(est) -> float:
    return float(np.ravel(est.objective_)[-1])


@pytest.mark.parametrize("make, c, bound", [
    (lambda: SparseLowRankRegressor(alpha=49.75, radius=13.62), 1.0, 1000),
    (lambda: DirtyModelRegressor(alpha_group=477.6, alpha_l1=99.5), 2.0, 4000),
], ids=["sparse_low_rank", "dirty_inf"])
def test_default_admm_is_fast_and_reaches_the_same_optimum(make, c, bound):
    X, y = _school_zscored(c)
    fast = _fit(make(), X, y)
    plain = _fit(make(), X, y, anderson=0, balance=0)
    # before the extrapolation and the fallback: 4,135 and 12,460 iterations
    assert fast.n_iter_ <= bound < plain.n_iter_
    F, F_plain = _objective(fast), _objective(plain)
    assert abs(F - F_plain) <= 1e-7 * abs(F_plain)


def test_the_defaults_apply_to_split_and_dirty_models_only():
    from multitask.penalties import L21, SparseLowRank
    from multitask.penalties.dirty import DirtyNorm
    from multitask.solvers.admm import _anderson_memory

    assert _anderson_memory(SparseLowRank(0.1, 1.0)) > 0
    assert _anderson_memory(DirtyNorm(0.1, 0.1)) > 0
    assert _anderson_memory(L21(0.1)) == 0


def test_anderson_extrapolation_speeds_up_a_linear_fixed_point_map():
    """``z -> M z + b`` with ``M`` of spectral radius 0.99: plain iteration needs about 2,000
    steps to 1e-8, the extrapolation far fewer, to the same fixed point."""
    rng = np.random.default_rng(0)
    Qm, _ = np.linalg.qr(rng.standard_normal((12, 12)))
    M = Qm @ np.diag(np.linspace(0.2, 0.99, 12)) @ Qm.T
    b = rng.standard_normal(12)
    fixed = np.linalg.solve(np.eye(12) - M, b)
    accel = AndersonADMM(memory=6, after=0)
    V, U = np.zeros((2, 3)), np.zeros((2, 3))
    for k in range(1, 400):
        z = np.concatenate([V.ravel(), U.ravel()])
        out = M @ z + b
        V_new, U_new = out[:6].reshape(2, 3), out[6:].reshape(2, 3)
        if np.linalg.norm(out - fixed) <= 1e-8 * np.linalg.norm(fixed):
            break
        moved = accel.step(k, V, U, V_new, U_new)
        V, U = (V_new, U_new) if moved is None else moved
    assert k < 200
    np.testing.assert_allclose(out, fixed, rtol=1e-7)


@pytest.mark.parametrize("compiled", [False, True])
def test_a_worse_extrapolation_is_dropped_for_the_kept_iterate(compiled):
    """The safeguard, in the interpreted steps and in the compiled ones
    (:mod:`multitask.solvers._anderson_numba`)."""
    accel = AndersonADMM(memory=3, after=0, compiled=compiled)
    z0, z1, z2 = np.zeros((1, 2)), np.ones((1, 2)), np.full((1, 2), 1.5)
    assert accel.step(1, z0, z0, z1, z1) is None  # one pair: nothing to combine
    moved = accel.step(2, z1, z1, z2, z2)
    assert moved is not None
    # from the extrapolated point, a step with a residual larger than the last one (0.5)
    far = moved[0] + 10.0
    back = accel.step(3, moved[0], moved[1], far, far)
    np.testing.assert_array_equal(back[0], z2)
    np.testing.assert_array_equal(back[1], z2)


def test_residual_balancing_fallback():
    assert _balanced_rho(1.0, 1.0, 0.01, 10.0) == 2.0
    assert _balanced_rho(1.0, 0.01, 1.0, 10.0) == 0.5
    assert _balanced_rho(1.0, 1.0, 0.5, 10.0) == 1.0
    assert _balanced_rho(1.0, 1.0, 0.01, 0.0) == 1.0


@pytest.mark.parametrize("kw", [{"balance": 0.5}, {"anderson": -1}, {"anderson_after": -2}])
def test_bad_settings_are_refused(kw):
    with pytest.raises(ValueError):
        QuadraticADMM(**kw)


def _survey_fold() -> tuple[np.ndarray, np.ndarray]:
    """The generated survey of ``benchmarks/bench_cv_two_param.py`` (one shared design of 8
    rows and 10 features, 190 tasks) without its fifth row: one leave-one-out fold."""
    rng = np.random.default_rng(0)
    d, m = 10, 190
    X = rng.standard_normal((208, d))
    B = np.zeros((d, 2))
    B[:4] = rng.standard_normal((4, 2))
    W = B @ rng.standard_normal((2, m))
    W += rng.standard_normal((d, m)) * (rng.random((d, m)) < 0.05)
    Y = X @ W + rng.standard_normal(m) + 0.5 * rng.standard_normal((X.shape[0], m))
    keep = np.arange(8) != 4
    return X[:8][keep], Y[:8][keep]


def test_over_relaxation_is_dropped_where_the_split_iteration_circles(monkeypatch):
    """On this fold over-relaxed ADMM with the Gauss-Seidel V-step circled (the same residuals
    from iteration 400 to about 5,900); once the residuals stop halving it goes on with
    ``r = 1`` and converges, to the optimum of a tightly certified run."""
    from multitask.solvers import admm

    X, Y = _survey_fold()
    est = SparseLowRankRegressor(alpha=0.0574, radius=7.34)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est.fit(X, Y)
    assert est.solver_info_["solver"] == "admm" and est.converged_
    assert est.solver_info_["relaxation"] == 1.0
    assert est.n_iter_ <= 2000
    ref = SparseLowRankRegressor(alpha=0.0574, radius=7.34,
                                 solver=QuadraticADMM(tol=1e-10, max_iter=50000)).fit(X, Y)
    assert ref.converged_
    F, F_ref = _objective(est), _objective(ref)
    assert F_ref <= F <= F_ref * (1 + 1e-4)
    # without the rule: still circling after 4,000 iterations
    monkeypatch.setattr(admm, "PLATEAU_SPAN", 10**9)
    stuck = SparseLowRankRegressor(alpha=0.0574, radius=7.34,
                                   solver=QuadraticADMM(max_iter=4000, warn=False)).fit(X, Y)
    assert not stuck.converged_ and stuck.solver_info_["relaxation"] == 1.6
