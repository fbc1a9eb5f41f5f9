"""Robust MTL (W = L + E): LADM and APG against cvxpy, KKT certificates, the paper's constants,
divide-and-conquer (partition, projection, order), estimators.

The backend-equality test (serial / joblib / Dask) is in ``test_robust_dc.py``.
"""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import check_estimator

from multitask.data import as_multitask_data
from multitask.datasets import make_outlier_tasks
from multitask.estimators.robust import RobustMTLClassifier, RobustMTLRegressor
from multitask.losses import Squared, SquaredHinge
from multitask.penalties._prox import svt, svt_with_values
from multitask.solvers.divide_conquer import (
    apg_rmtl,
    column_projection,
    divide_and_conquer,
    make_rmtl_datafit,
    partition_tasks,
    solve_rmtl,
)
from multitask.solvers.ladm import ladm_rmtl, rmtl_kkt_residuals, rmtl_objective

REL = 1e-5  # acceptance: relative objective gap to cvxpy


# ----------------------------------------------------------------------------- references
def cvx_rmtl(data, alpha, lam, kind, fit_intercept=False):
    """cvxpy/Clarabel optimum of robust MTL on per-task data (library scaling)."""
    d, m = data.n_features, data.n_tasks
    L = cp.Variable((d, m))
    E = cp.Variable((d, m))
    b = cp.Variable(m) if fit_intercept else None
    reg = cp.normNuc(L) + lam * cp.sum(cp.norm(E, 2, axis=0))
    terms, cons = [], []
    for t in range(m):
        X, y = data.task_X(t), data.task_y(t)
        z = X @ (L[:, t] + E[:, t]) + (b[t] if fit_intercept else 0)
        if kind == "constrained":
            cons.append(z == y)
        elif kind == "squared":
            terms.append(cp.sum_squares(z - y) / (2 * len(y)))
        else:
            terms.append(cp.sum(cp.square(cp.pos(1 - cp.multiply(y, z)))) / len(y))
    obj = reg if kind == "constrained" else sum(terms) + alpha * reg
    prob = cp.Problem(cp.Minimize(obj), cons)
    prob.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    return prob.value


def _both_parts_active(L, E):
    """The instance exercises both penalties: L nonzero and E with some, not all, columns."""
    en = np.linalg.norm(E, axis=0)
    assert np.linalg.norm(L) > 1e-3
    assert 0 < np.count_nonzero(en) < E.shape[1]


@pytest.fixture(scope="module")
def feasible_ls():
    """n_t < d: the constrained least-squares model is feasible."""
    b = make_outlier_tasks(n_tasks=16, n_features=24, n_samples=12, rank=2, n_outliers=2,
                           noise=0.1, random_state=0)
    data, _ = as_multitask_data(b.X, b.y)
    return data


@pytest.fixture(scope="module")
def ls_data():
    b = make_outlier_tasks(n_tasks=12, n_features=15, n_samples=25, rank=2, n_outliers=2,
                           noise=0.3, random_state=1)
    data, _ = as_multitask_data(b.X, b.y)
    return data


@pytest.fixture(scope="module")
def hinge_data():
    b = make_outlier_tasks(n_tasks=10, n_features=12, n_samples=40, rank=2, n_outliers=2,
                           noise=0.5, task_type="classification", random_state=2)
    data, _ = as_multitask_data(b.X, b.y, classification=True)
    return data


# ----------------------------------------------------------------------------- core additions
def test_svt_with_values_matches_svt_and_trace_norm():
    rng = np.random.default_rng(0)
    V = rng.standard_normal((9, 6))
    out, s = svt_with_values(V, 0.7)
    np.testing.assert_array_equal(out, svt(V, 0.7))
    assert len(s) == svt(V, 0.7, return_rank=True)[1]
    np.testing.assert_allclose(s.sum(), np.linalg.svd(out, compute_uv=False).sum(), rtol=1e-12)


@pytest.mark.parametrize("loss", ["squared", "squared_hinge"])
def test_prox_scores_matches_scalar_minimizer(loss):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((7, 3))
    Y = rng.standard_normal((7, 2))
    if loss == "squared":
        data, _ = as_multitask_data(X, Y)
        df = Squared(data, fit_intercept=False)
        ell = lambda y, z: 0.5 * (y - z) ** 2  # noqa: E731
    else:
        data, _ = as_multitask_data(X, (Y > 0).astype(int), classification=True)
        df = SquaredHinge(data, fit_intercept=False)
        ell = lambda y, z: max(0.0, 1.0 - y * z) ** 2  # noqa: E731
    v = 2.0 * rng.standard_normal(data.n_rows)
    step = 0.8
    z = df.prox_scores(v, step)
    w, y = data.row_weights, data.y
    for i in range(data.n_rows):
        ref = minimize_scalar(
            lambda t, i=i: w[i] * ell(y[i], t) + (t - v[i]) ** 2 / (2 * step),
            bracket=(-10, 10), tol=1e-12).x
        assert abs(z[i] - ref) < 1e-7
    assert df.value_scores(data.matvec(np.ones((3, 2)))) == pytest.approx(
        df.value(np.ones((3, 2))), rel=1e-12)


# ----------------------------------------------------------------------------- LADM vs cvxpy
def test_ladm_constrained_least_squares_matches_cvxpy_and_kkt(feasible_ls):
    lam = 0.9
    ref = cvx_rmtl(feasible_ls, None, lam, "constrained")
    df = Squared(feasible_ls, fit_intercept=False)
    res = ladm_rmtl(df, 1.0, lam, formulation="constrained", tol=1e-6)
    assert res.converged
    L, E = res.coef
    _both_parts_active(L, E)
    obj = rmtl_objective(df, L, E, None, 1.0, lam, "constrained")
    assert abs(obj - ref) <= REL * abs(ref)
    # feasibility: X_t w_t = y_t
    resid = np.linalg.norm(feasible_ls.matvec(res.W) - feasible_ls.y)
    assert resid <= 1e-5 * np.linalg.norm(feasible_ls.y)
    # KKT certificate from the multiplier: Z = -A^T c in d||L||_* and in lam d||E||_{1,2}
    kkt = rmtl_kkt_residuals(L, E, -res.info["multiplier_grad"], lam)
    assert kkt["max"] < 1e-4, kkt


def test_ladm_penalized_least_squares_matches_cvxpy_and_kkt(ls_data):
    alpha, lam = 0.05, 0.95
    ref = cvx_rmtl(ls_data, alpha, lam, "squared")
    df = Squared(ls_data, fit_intercept=False)
    res = ladm_rmtl(df, alpha, lam, tol=1e-6)
    assert res.converged
    L, E = res.coef
    _both_parts_active(L, E)
    assert abs(res.final_objective - ref) <= REL * ref
    _, G, _ = df.value_and_grad(res.W)
    kkt = rmtl_kkt_residuals(L, E, -G / alpha, lam)
    assert kkt["max"] < 1e-4, kkt


def test_ladm_squared_hinge_with_intercept_matches_cvxpy_and_kkt(hinge_data):
    alpha, lam = 0.05, 0.95
    ref = cvx_rmtl(hinge_data, alpha, lam, "hinge", fit_intercept=True)
    df = SquaredHinge(hinge_data, fit_intercept=True)
    res = ladm_rmtl(df, alpha, lam, tol=1e-6)
    assert res.converged
    L, E = res.coef
    _both_parts_active(L, E)
    b = res.info["intercept_variable"]
    assert abs(rmtl_objective(df, L, E, b, alpha, lam) - ref) <= REL * ref
    _, G, gb = df.value_and_grad(res.W, b)
    assert np.max(np.abs(gb)) < 1e-5  # intercepts are optimal
    kkt = rmtl_kkt_residuals(L, E, -G / alpha, lam)
    assert kkt["max"] < 1e-4, kkt
    # the multiplier certifies the same point
    kkt_c = rmtl_kkt_residuals(L, E, -res.info["multiplier_grad"], lam)
    assert kkt_c["max"] < 1e-4, kkt_c


# ----------------------------------------------------------------------------- APG vs cvxpy
@pytest.mark.parametrize("kind", ["squared", "hinge"])
def test_apg_matches_cvxpy_and_kkt(kind, ls_data, hinge_data):
    data = ls_data if kind == "squared" else hinge_data
    alpha, lam = 0.05, 0.95
    ref = cvx_rmtl(data, alpha, lam, kind, fit_intercept=True)
    df = make_rmtl_datafit("squared" if kind == "squared" else "squared_hinge", data, True, "apg")
    res = apg_rmtl(df, alpha, lam, tol=1e-12, max_iter=50000)
    L, E = res.coef
    b = res.info["intercept_variable"]
    assert abs(rmtl_objective(df, L, E, b, alpha, lam) - ref) <= REL * ref
    _, G, _ = df.value_and_grad(res.W, b)
    kkt = rmtl_kkt_residuals(L, E, -G / alpha, lam)
    assert kkt["max"] < 1e-3, kkt
    # LADM solves the same problem: same weights
    lres = ladm_rmtl(make_rmtl_datafit(df.name, data, True, "ladm"), alpha, lam, tol=1e-7)
    assert np.linalg.norm(lres.W - res.W) <= 1e-3 * np.linalg.norm(res.W)


# ----------------------------------------------------------------------------- paper constants
def test_paper_rho_stops_far_from_optimum_and_exact_mode_does_not(feasible_ls, hinge_data):
    """Spec note P2: the printed rho = 1.9 freezes the iterates far from the optimum."""
    lam = 0.9
    ref = cvx_rmtl(feasible_ls, None, lam, "constrained")
    df = Squared(feasible_ls, fit_intercept=False)

    def gap(**kw):
        r = ladm_rmtl(df, 1.0, lam, formulation="constrained", **kw)
        obj = rmtl_objective(df, r.coef[0], r.coef[1], None, 1.0, lam, "constrained")
        return (obj - ref) / ref, r

    g19, r19 = gap(mode="paper")
    g102, _ = gap(mode="paper", rho=1.02)
    assert r19.converged and g19 > 0.05  # stops more than 5% above the optimum
    assert abs(g102) < 1e-4
    # the multiplier of the rho = 1.9 run is far from a certificate (||A^T c||_2 >> 1)
    assert rmtl_kkt_residuals(r19.coef[0], r19.coef[1], -r19.info["multiplier_grad"],
                              lam)["spectral"] > 1e3
    # squared hinge: same story
    alpha = 0.05
    href = cvx_rmtl(hinge_data, alpha, 1.0, "hinge")
    hdf = SquaredHinge(hinge_data, fit_intercept=False)
    h19 = ladm_rmtl(hdf, alpha, 1.0, mode="paper")
    assert (h19.final_objective - href) / href > 0.05


def test_literal_stopping_rule_stops_at_iteration_one(feasible_ls):
    """Spec note P1: eq. (25) taken literally returns zeros after one iteration."""
    df = Squared(feasible_ls, fit_intercept=False)
    lit = ladm_rmtl(df, 1.0, 0.9, formulation="constrained", mode="paper", guard=False)
    assert lit.n_iter == 1 and not np.any(lit.W)
    guarded = ladm_rmtl(df, 1.0, 0.9, formulation="constrained", mode="paper")
    assert guarded.n_iter > 10 and np.linalg.norm(guarded.W) > 0.1


def test_constrained_ls_is_per_task_ols_when_infeasible():
    """Spec note P3: with n_t > d the constrained model tends to each task's OLS fit."""
    rng = np.random.default_rng(3)
    Xs = [rng.standard_normal((40, 8)) for _ in range(6)]
    ys = [X @ rng.standard_normal(8) + 0.5 * rng.standard_normal(40) for X in Xs]
    data, _ = as_multitask_data(Xs, ys)
    ols = np.column_stack([np.linalg.lstsq(X, y, rcond=None)[0] for X, y in zip(Xs, ys,
                                                                               strict=True)])
    for lam in (0.1, 10.0):
        with pytest.warns(UserWarning, match="infeasible"):
            res = ladm_rmtl(Squared(data, fit_intercept=False), 1.0, lam,
                            formulation="constrained", mode="paper", rho=1.1)
        assert res.converged
        assert np.linalg.norm(res.W - ols) <= 1e-6 * np.linalg.norm(ols)
    # the exact mode cannot reach feasibility: it says so instead of claiming convergence
    with pytest.warns(ConvergenceWarning):
        ladm_rmtl(Squared(data, fit_intercept=False), 1.0, 1.0, formulation="constrained",
                  max_iter=300)


def test_penalized_ls_tends_to_constrained_as_alpha_vanishes(feasible_ls):
    """As alpha -> 0 the penalized optimum's regularizer approaches the constrained optimum."""
    lam = 0.9
    ref = cvx_rmtl(feasible_ls, None, lam, "constrained")
    df = Squared(feasible_ls, fit_intercept=False)
    gaps = []
    for alpha in (1e-1, 1e-2, 1e-3):
        r = ladm_rmtl(df, alpha, lam, tol=1e-7, max_iter=50000)
        reg = rmtl_objective(df, r.coef[0], r.coef[1], None, alpha, lam, "constrained")
        gaps.append(abs(reg - ref))
    assert gaps[0] > gaps[1] > gaps[2]
    assert gaps[2] < 0.05 * ref


def test_tau_rules_and_validation(ls_data):
    df = Squared(ls_data, fit_intercept=False)
    r_max = ladm_rmtl(df, 0.05, 0.8, mode="paper")
    r_st = ladm_rmtl(df, 0.05, 0.8, mode="paper", tau_rule="stacked")
    assert r_st.info["tau"] < r_max.info["tau"]
    with pytest.raises(ValueError, match="formulation"):
        ladm_rmtl(df, 0.1, 1.0, formulation="eq")
    with pytest.raises(ValueError, match="squared loss"):
        ladm_rmtl(SquaredHinge(as_multitask_data(
            [np.eye(3)], [np.array([0, 1, 1])], classification=True)[0]), 1.0, 1.0,
            formulation="constrained")
    with pytest.raises(ValueError, match="lam"):
        ladm_rmtl(df, 0.1, -1.0)
    with pytest.raises(ValueError, match="alpha"):
        ladm_rmtl(df, 0.0, 1.0)
    with pytest.raises(ValueError, match="rho"):
        ladm_rmtl(df, 0.1, 1.0, rho=0.5)
    with pytest.raises(ValueError, match="coef_init"):
        ladm_rmtl(df, 0.1, 1.0, coef_init=np.zeros((2, 3, 3)))
    with pytest.raises(ValueError, match="cannot handle"):
        solve_rmtl(df, "apg", 0.1, 1.0, formulation="constrained")
    with pytest.raises(ValueError, match="solver"):
        solve_rmtl(df, "newton", 0.1, 1.0)


def test_max_iter_warns_and_returns_best(ls_data):
    df = Squared(ls_data, fit_intercept=False)
    with pytest.warns(ConvergenceWarning, match="LADM"):
        r = ladm_rmtl(df, 0.05, 0.8, max_iter=5)
    assert r.n_iter == 5 and not r.converged
    assert r.final_objective == pytest.approx(np.min(r.objective))
    with pytest.warns(ConvergenceWarning):
        apg_rmtl(df, 0.05, 0.8, max_iter=3)
    with pytest.warns(ConvergenceWarning, match="group"):
        divide_and_conquer(ls_data, alpha=0.05, lam=0.8, n_groups=2, random_state=0,
                           solver_options={"max_iter": 3})


def test_inputs_not_modified(ls_data):
    y0, X0 = ls_data.y.copy(), ls_data.X.copy()
    init = np.ones((2, ls_data.n_features, ls_data.n_tasks))
    init0 = init.copy()
    ladm_rmtl(Squared(ls_data, fit_intercept=True), 0.05, 0.8, coef_init=init, max_iter=50,
              warn=False)
    divide_and_conquer(ls_data, alpha=0.05, lam=0.8, n_groups=3, random_state=0,
                       solver_options={"max_iter": 50}, warn=False)
    np.testing.assert_array_equal(ls_data.y, y0)
    np.testing.assert_array_equal(ls_data.X, X0)
    np.testing.assert_array_equal(init, init0)


# ----------------------------------------------------------------------------- DC pieces
def test_partition_covers_every_task_once_with_remainder_group():
    groups = partition_tasks(10, 4, random_state=0)
    assert [len(g) for g in groups] == [2, 2, 2, 2, 2]  # 4 groups of 2 + remainder of 2
    assert sorted(np.concatenate(groups).tolist()) == list(range(10))
    again = partition_tasks(10, 4, random_state=0)
    assert all(np.array_equal(a, b) for a, b in zip(groups, again, strict=True))
    other = partition_tasks(10, 4, random_state=1)
    assert not all(np.array_equal(a, b) for a, b in zip(groups, other, strict=True))
    assert [len(g) for g in partition_tasks(12, 4, random_state=0)] == [3, 3, 3, 3]
    np.testing.assert_array_equal(partition_tasks(5, 1, random_state=0)[0], np.arange(5))
    with pytest.raises(ValueError, match="exceeds"):
        partition_tasks(3, 4)
    with pytest.raises(ValueError, match="n_groups"):
        partition_tasks(3, 0)


def test_column_projection_properties():
    rng = np.random.default_rng(4)
    L = rng.standard_normal((20, 3)) @ rng.standard_normal((3, 12))
    L += 0.01 * rng.standard_normal(L.shape)  # full rank, approximately rank 3
    first = np.array([0, 5, 7, 9])
    L_hat, r = column_projection(L, first)
    assert r == 4 and np.linalg.matrix_rank(L_hat) <= r
    np.testing.assert_allclose(L_hat[:, first], L[:, first], atol=1e-12)
    again, _ = column_projection(L_hat, first)
    np.testing.assert_allclose(again, L_hat, atol=1e-12)  # idempotent
    zero, r0 = column_projection(np.zeros((4, 3)), np.array([0]))
    assert r0 == 0 and not np.any(zero)


def test_dc_blocks_are_the_group_solutions_in_the_original_order(ls_data):
    kw = {"alpha": 0.05, "lam": 0.8}
    res = divide_and_conquer(ls_data, n_groups=3, random_state=5, fit_intercept=False, **kw)
    for g in res.info["groups"]:
        sub = make_rmtl_datafit("squared", ls_data.subset_tasks(g), False, "ladm")
        own = ladm_rmtl(sub, **kw)
        np.testing.assert_array_equal(res.info["L_concat"][:, g], own.coef[0])
        np.testing.assert_array_equal(res.coef[1][:, g], own.coef[1])
    # the first group's low-rank block is unchanged by the projection
    g0 = res.info["groups"][0]
    np.testing.assert_allclose(res.coef[0][:, g0], res.info["L_concat"][:, g0], atol=1e-10)
    assert np.linalg.matrix_rank(res.coef[0], tol=1e-8) <= res.info["rank"] <= len(g0)


def test_dc_with_one_group_is_the_base_solver(ls_data, hinge_data):
    for data, loss in ((ls_data, "squared"), (hinge_data, "squared_hinge")):
        for solver in ("ladm", "apg"):
            dc = divide_and_conquer(data, loss=loss, solver=solver, alpha=0.05, lam=0.8,
                                    n_groups=1)
            base = solve_rmtl(make_rmtl_datafit(loss, data, True, solver), solver, 0.05, 0.8)
            np.testing.assert_array_equal(dc.W, base.W)
            np.testing.assert_array_equal(dc.intercept, base.intercept)


def test_theorem1_bound_on_random_partitions():
    """||L_hat - L0|| <= (2 + eps) ||L_concat - L0|| (Theorem 1, eps = 0.5) on most partitions."""
    b = make_outlier_tasks(n_tasks=24, n_features=20, n_samples=15, rank=2, n_outliers=2,
                           noise=0.0, random_state=6)
    data, _ = as_multitask_data(b.X, b.y)
    ok = 0
    for seed in range(5):
        res = divide_and_conquer(data, alpha=1.0, lam=1.0, n_groups=3, random_state=seed,
                                 fit_intercept=False,
                                 solver_options={"formulation": "constrained"})
        lhs = np.linalg.norm(res.coef[0] - b.L)
        rhs = np.linalg.norm(res.info["L_concat"] - b.L)
        ok += lhs <= 2.5 * rhs
    assert ok >= 4


# ----------------------------------------------------------------------------- estimators
def test_outlier_tasks_recovered_exactly():
    """Well-separated synthetic instance: the detected outlier tasks are the planted ones."""
    b = make_outlier_tasks(n_tasks=30, n_features=40, n_samples=60, rank=2, n_outliers=3,
                           noise=0.05, random_state=0)
    est = RobustMTLRegressor(alpha=0.01, lam=0.9, fit_intercept=False).fit(b.X, b.y)
    np.testing.assert_array_equal(est.outlier_tasks_, b.outlier_tasks)
    np.testing.assert_allclose(est.coef_, est.low_rank_component_ + est.outlier_component_)
    assert np.linalg.norm(est.low_rank_component_.T - b.L) < 0.3 * np.linalg.norm(b.L)
    # the accelerated gradient finds the same outliers
    apg = RobustMTLRegressor(alpha=0.01, lam=0.9, solver="apg", tol=1e-9, fit_intercept=False)
    np.testing.assert_array_equal(apg.fit(b.X, b.y).outlier_tasks_, b.outlier_tasks)


def test_classifier_recovers_outlier_tasks():
    """Squared hinge: tasks labelled by their own models are the detected outliers."""
    b = make_outlier_tasks(n_tasks=20, n_features=10, n_samples=200, rank=1, n_outliers=2,
                           noise=0.1, random_state=8, task_type="classification")
    clf = RobustMTLClassifier(alpha=0.01, lam=0.9).fit(b.X, b.y)
    np.testing.assert_array_equal(clf.outlier_tasks_, b.outlier_tasks)
    acc = np.mean([np.mean(p == y) for p, y in zip(clf.predict(b.X), b.y, strict=True)])
    assert acc > 0.95


def test_estimator_divide_and_conquer_and_groups():
    b = make_outlier_tasks(n_tasks=12, n_features=8, n_samples=30, rank=2, n_outliers=1,
                           random_state=8, shared_X=True)
    est = RobustMTLRegressor(alpha=0.05, lam=1.0, n_groups=4, random_state=0).fit(b.X, b.Y)
    assert len(est.task_groups_) == 4
    assert est.coef_.shape == (12, 8) and est.predict(b.X).shape == (30, 12)
    again = RobustMTLRegressor(alpha=0.05, lam=1.0, n_groups=4, random_state=0).fit(b.X, b.Y)
    np.testing.assert_array_equal(est.coef_, again.coef_)
    # with a squared loss the intercepts are refitted for the projected weights
    Xm = b.X.mean(axis=0)
    np.testing.assert_allclose(est.intercept_, b.Y.mean(axis=0) - est.coef_ @ Xm, atol=1e-10)
    with pytest.raises(ValueError, match="n_groups"):
        RobustMTLRegressor(n_groups=13).fit(b.X, b.Y)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"solver": "newton"}, "solver"),
        ({"mode": "fast"}, "mode"),
        ({"formulation": "eq"}, "formulation"),
        ({"formulation": "constrained", "solver": "apg"}, "cannot handle"),
        ({"lam": -1.0}, "lam"),
        ({"alpha": 0.0}, "alpha"),
        ({"n_groups": 0}, "n_groups"),
        ({"lam_scale": "cube"}, "lam_scale"),
        ({"n_groups": 2, "backend": "spark"}, "backend"),
        ({"n_groups": 2, "blas_threads": 0}, "blas_threads"),
        ({"outlier_threshold": 2.0}, "outlier_threshold"),
    ],
)
def test_estimator_bad_parameters(params, match):
    X = np.random.default_rng(0).standard_normal((20, 3))
    Y = X @ np.ones((3, 4))
    with pytest.raises(ValueError, match=match):
        RobustMTLRegressor(**params).fit(X, Y)


def test_classifier_constrained_is_not_a_parameter():
    with pytest.raises(TypeError):
        RobustMTLClassifier(formulation="constrained")


@pytest.mark.parametrize("est", [RobustMTLRegressor(), RobustMTLClassifier()],
                         ids=["regressor", "classifier"])
def test_check_estimator(est):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        results = check_estimator(est, on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results
              if r["status"] == "failed"]
    assert not failed, failed


@pytest.mark.slow
@pytest.mark.parametrize(
    "est",
    [RobustMTLRegressor(solver="apg"), RobustMTLClassifier(solver="apg"),
     RobustMTLRegressor(mode="paper"), RobustMTLClassifier(mode="paper")],
    ids=["reg-apg", "clf-apg", "reg-paper", "clf-paper"],
)
def test_check_estimator_other_solvers(est):
    test_check_estimator(est)
