"""Tests of the sparse + low-rank model (Chen, Liu & Ye) and its PG / AG solvers.

References: cvxpy (CLARABEL) solves of the same convex problems, the exact Hessian of the
squared loss for the Lipschitz constant, scikit-learn's Lasso for the ``tau = 0`` special case.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from multitask import SparseLowRankClassifier, SparseLowRankRegressor
from multitask.data import as_multitask_data
from multitask.losses import Logistic, Squared
from multitask.penalties.composite import SumMap
from multitask.solvers.projected_gradient import (
    projected_gradient,
    solve_sparse_low_rank,
    sparse_low_rank_certificate,
    sparse_low_rank_penalty,
)

cp = pytest.importorskip("cvxpy")

ALGOS = [("pg", True), ("pg", False), ("ag", True), ("ag", False)]


# --------------------------------------------------------------------------- problems
def _regression(seed=0, n=30, d=10, m=5, shared=True):
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((d, m))
    if shared:
        X = rng.standard_normal((n, d)) + 0.3
        Y = X @ W + 0.5 * rng.standard_normal((n, m)) + 1.0
        return X, Y
    Xs = [rng.standard_normal((n + 5 * t, d)) for t in range(m)]
    ys = [Xs[t] @ W[:, t] + 0.5 * rng.standard_normal(len(Xs[t])) for t in range(m)]
    return Xs, ys


def _classification(seed=0, n=40, d=6, m=4):
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((d, m))
    Xs = [rng.standard_normal((n, d)) for _ in range(m)]
    ys = []
    for t in range(m):
        p = 1.0 / (1.0 + np.exp(-(Xs[t] @ W[:, t] + 0.3)))
        yt = np.where(rng.random(n) < p, 1, -1)
        yt[:2] = [1, -1]
        ys.append(yt)
    return Xs, ys


def _cvx_sparse_low_rank(Xs, ys, gamma, tau, loss="squared", intercept=True):
    """cvxpy reference: our scaling, per-task designs, unpenalized intercepts."""
    d, m = Xs[0].shape[1], len(Xs)
    P = cp.Variable((d, m))
    Q = cp.Variable((d, m))
    b = cp.Variable(m) if intercept else None
    terms = []
    for t in range(m):
        z = Xs[t] @ (P[:, t] + Q[:, t]) + (b[t] if intercept else 0.0)
        n_t = len(ys[t])
        if loss == "squared":
            terms.append(cp.sum_squares(z - ys[t]) / (2 * n_t))
        else:
            terms.append(cp.sum(cp.logistic(-cp.multiply(ys[t], z))) / n_t)
    obj = cp.sum(cp.hstack(terms)) + gamma * cp.sum(cp.abs(P))
    prob = cp.Problem(cp.Minimize(obj), [cp.normNuc(Q) <= tau])
    prob.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    return prob.value


def _as_lists(X, Y):
    return [X] * Y.shape[1], [Y[:, t] for t in range(Y.shape[1])]


# --------------------------------------------------------------------------- Lipschitz
@pytest.mark.parametrize("shared", [True, False])
def test_joint_lipschitz_constant_matches_exact_hessian(shared):
    """The spec's corrected constant: 4 sigma_max(X)^2 in the paper's scaling for (P, Q)."""
    X, Y = _regression(1, n=25, d=7, m=3, shared=shared)
    data, _ = as_multitask_data(X, Y)
    df = Squared(data, fit_intercept=False)
    d, m = data.n_features, data.n_tasks
    # exact Hessian of f(P, Q) = F(P + Q): [[H, H], [H, H]] with H block-diagonal over tasks
    H = np.zeros((d * m, d * m))
    Xs = [X] * m if shared else X
    for t in range(m):
        H[t * d:(t + 1) * d, t * d:(t + 1) * d] = Xs[t].T @ Xs[t] / len(Xs[t])
    joint = np.block([[H, H], [H, H]])
    l_exact = np.linalg.eigvalsh(joint)[-1]
    l_used = df.lipschitz() * SumMap(2).norm_sq  # what the fixed-step variants use
    assert l_used == pytest.approx(l_exact, rel=1e-10)
    # per-block constant is half of it: too small for the joint step
    assert df.lipschitz() == pytest.approx(l_exact / 2, rel=1e-10)
    if shared:
        # paper's scaling ||(P+Q)^T X - Y||_F^2 is 2n times ours: L_paper = 4 sigma_max(X)^2
        n = X.shape[0]
        assert 2 * n * l_exact == pytest.approx(4 * np.linalg.norm(X, 2) ** 2, rel=1e-10)


def test_fixed_step_uses_verified_constant():
    X, Y = _regression(2)
    data, _ = as_multitask_data(X, Y)
    df = Squared(data)
    res = solve_sparse_low_rank(df, 0.05, 1.0, line_search=False, max_iter=5, warn=False)
    assert res.info["lipschitz"] == pytest.approx(2 * df.lipschitz())


# --------------------------------------------------------------------------- building blocks
def test_composite_prox_matches_cvxpy():
    rng = np.random.default_rng(3)
    V = rng.standard_normal((2, 6, 4)) * 2
    gamma, tau, step = 0.7, 1.5, 0.4
    out = sparse_low_rank_penalty(gamma, tau).prox(V, step)
    P, Q = cp.Variable((6, 4)), cp.Variable((6, 4))
    obj = 0.5 * cp.sum_squares(P - V[0]) + 0.5 * cp.sum_squares(Q - V[1])
    obj = obj + step * gamma * cp.sum(cp.abs(P))
    cp.Problem(cp.Minimize(obj), [cp.normNuc(Q) <= tau]).solve(solver="CLARABEL")
    np.testing.assert_allclose(out[0], P.value, atol=1e-6)
    np.testing.assert_allclose(out[1], Q.value, atol=1e-6)
    assert np.linalg.svd(out[1], compute_uv=False).sum() == pytest.approx(tau, rel=1e-9)


# --------------------------------------------------------------------------- cvxpy agreement
@pytest.mark.parametrize("algorithm,line_search", ALGOS)
@pytest.mark.parametrize("shared", [True, False])
def test_squared_loss_matches_cvxpy(algorithm, line_search, shared):
    X, Y = _regression(4, shared=shared)
    Xs, ys = _as_lists(X, Y) if shared else (X, Y)
    gamma, tau = 0.08, 2.0
    ref = _cvx_sparse_low_rank(Xs, ys, gamma, tau)
    data, _ = as_multitask_data(X, Y)
    res = solve_sparse_low_rank(Squared(data), gamma, tau, algorithm=algorithm,
                                line_search=line_search, tol=1e-13, max_iter=30000)
    assert res.converged
    assert res.final_objective == pytest.approx(ref, rel=1e-6)
    # never meaningfully below the reference either (a wrong objective could be lower)
    assert res.final_objective >= ref * (1 - 1e-6)
    assert np.linalg.svd(res.coef[1], compute_uv=False).sum() <= tau * (1 + 1e-9)


@pytest.mark.parametrize("algorithm,line_search", ALGOS)
def test_logistic_loss_matches_cvxpy(algorithm, line_search):
    Xs, ys = _classification(5)
    gamma, tau = 0.02, 1.5
    ref = _cvx_sparse_low_rank(Xs, ys, gamma, tau, loss="logistic")
    data, _ = as_multitask_data(Xs, ys, classification=True)
    res = solve_sparse_low_rank(Logistic(data), gamma, tau, algorithm=algorithm,
                                line_search=line_search, tol=1e-13, max_iter=30000)
    assert res.final_objective == pytest.approx(ref, rel=1e-6)
    assert res.final_objective >= ref * (1 - 1e-6)


def test_kkt_criterion_with_intercept_variable_logistic():
    Xs, ys = _classification(21)
    gamma, tau = 0.02, 1.5
    ref = _cvx_sparse_low_rank(Xs, ys, gamma, tau, loss="logistic")
    data, _ = as_multitask_data(Xs, ys, classification=True)
    res = solve_sparse_low_rank(Logistic(data), gamma, tau, criterion="kkt", tol=1e-7,
                                max_iter=50000)
    assert res.converged
    kkt = res.info["kkt"]
    if res.info["stopped_by"] == "kkt":
        assert kkt["bound"] <= 1e-7 * res.final_objective
        assert kkt["intercept_gradient"] <= 1e-7 * res.final_objective
    assert res.final_objective == pytest.approx(ref, rel=1e-6)


def test_paper_scaling_mapping():
    """Eq. (45) without intercept: F_paper = 2 n F_ours with gamma = gamma_paper / (2 n)."""
    X, Y = _regression(6, n=20, d=8, m=4)
    n = X.shape[0]
    g_paper, tau = 3.0, 1.5
    P, Q = cp.Variable((8, 4)), cp.Variable((8, 4))
    obj = cp.sum_squares(X @ (P + Q) - Y) + g_paper * cp.sum(cp.abs(P))
    prob = cp.Problem(cp.Minimize(obj), [cp.normNuc(Q) <= tau])
    prob.solve(solver="CLARABEL")
    est = SparseLowRankRegressor(gamma=g_paper / (2 * n), tau=tau, fit_intercept=False,
                                 tol=1e-13, max_iter=30000).fit(X, Y)
    assert 2 * n * est.solver_result_.final_objective == pytest.approx(prob.value, rel=1e-6)


# --------------------------------------------------------------------------- properties
@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("line_search", [True, False])
def test_pg_objective_never_increases(loss, line_search):
    if loss == "squared":
        X, Y = _regression(7)
        data, _ = as_multitask_data(X, Y)
        df = Squared(data)
    else:
        Xs, ys = _classification(7)
        data, _ = as_multitask_data(Xs, ys, classification=True)
        df = Logistic(data)
    res = solve_sparse_low_rank(df, 0.03, 1.0, algorithm="pg", line_search=line_search,
                                tol=1e-14, max_iter=3000, warn=False)
    F = np.concatenate([[res.info["objective_init"]], res.objective])
    assert len(F) > 50
    assert np.all(np.diff(F) <= 1e-12 * np.abs(F[1:]))
    # the accelerated method is not monotone in general: it is not tested for this


def test_rate_bounds_of_theorems_5_1_and_5_2():
    """F(T_k) - F* <= L ||T_0 - T*||^2 / (2k) (PG), <= 2 L ||T_0 - T*||^2 / (k+1)^2 (AG)."""
    X, Y = _regression(8, n=40, d=12, m=6)
    data, _ = as_multitask_data(X, Y)
    df = Squared(data)
    gamma, tau = 0.05, 1.0
    star = solve_sparse_low_rank(df, gamma, tau, tol=1e-15, max_iter=50000, warn=False)
    F_star = star.final_objective
    R2 = float(np.sum(star.coef ** 2))  # T_0 = 0
    L = 2 * df.lipschitz()
    pg = solve_sparse_low_rank(df, gamma, tau, algorithm="pg", line_search=False, tol=1e-15,
                               max_iter=400, warn=False)
    ag = solve_sparse_low_rank(df, gamma, tau, algorithm="ag", line_search=False, tol=1e-15,
                               max_iter=400, warn=False)
    k = np.arange(1, len(pg.objective) + 1)
    assert np.all(pg.objective - F_star <= L * R2 / (2 * k) + 1e-12)
    k = np.arange(1, len(ag.objective) + 1)
    assert np.all(ag.objective - F_star <= 2 * L * R2 / (k + 1) ** 2 + 1e-12)
    # and AG is far ahead of PG after 400 iterations on this problem
    assert ag.objective[-1] - F_star < 0.1 * (pg.objective[-1] - F_star)


def test_line_search_lipschitz_bounded():
    X, Y = _regression(9)
    data, _ = as_multitask_data(X, Y)
    df = Squared(data)
    for alg in ("pg", "ag"):
        res = solve_sparse_low_rank(df, 0.05, 1.0, algorithm=alg, lipschitz=1e-3, tol=1e-10)
        assert 1e-3 <= res.info["lipschitz"] <= 2 * (2 * df.lipschitz())


def test_certificate_bounds_true_gap_and_vanishes():
    X, Y = _regression(10)
    data, _ = as_multitask_data(X, Y)
    df = Squared(data)
    gamma, tau = 0.05, 1.5
    F_star = solve_sparse_low_rank(df, gamma, tau, tol=1e-15, max_iter=50000,
                                   warn=False).final_objective
    iterates = []

    def keep(k, F, V, b):
        if k % 5 == 1:
            iterates.append((F, V.copy()))

    solve_sparse_low_rank(df, gamma, tau, algorithm="pg", tol=1e-14, max_iter=600,
                          callback=keep, warn=False)
    assert len(iterates) > 50
    for F, V in iterates:
        c = sparse_low_rank_certificate(df, V[0], V[1], None, gamma, tau)
        assert c["bound"] >= F - F_star - 1e-10
    res = solve_sparse_low_rank(df, gamma, tau, criterion="kkt", tol=1e-7, max_iter=50000)
    assert res.converged and res.info["stopped_by"] in ("kkt", "stagnation")
    assert res.final_objective - F_star <= 1e-7 * abs(F_star) + 1e-12
    if res.info["stopped_by"] == "kkt":
        assert res.info["kkt"]["bound"] <= 1e-7 * abs(res.final_objective)


def test_tau_zero_is_independent_lasso():
    from sklearn.linear_model import Lasso

    X, Y = _regression(11, n=40, d=8, m=3)
    gamma = 0.05
    est = SparseLowRankRegressor(gamma=gamma, tau=0.0, tol=1e-13, max_iter=30000).fit(X, Y)
    assert np.all(est.low_rank_component_ == 0) and est.rank_ == 0
    for t in range(3):
        ref = Lasso(alpha=gamma, tol=1e-12, max_iter=100000).fit(X, Y[:, t])
        np.testing.assert_allclose(est.coef_[t], ref.coef_, atol=1e-6)
        assert est.intercept_[t] == pytest.approx(ref.intercept_, abs=1e-6)


def test_large_gamma_is_trace_constrained_least_squares():
    X, Y = _regression(12, n=30, d=8, m=4)
    tau = 1.0
    est = SparseLowRankRegressor(gamma=1e3, tau=tau, tol=1e-13, max_iter=30000).fit(X, Y)
    assert np.all(est.sparse_component_ == 0)
    Xc, Yc = X - X.mean(0), Y - Y.mean(0)
    W = cp.Variable((8, 4))
    prob = cp.Problem(cp.Minimize(cp.sum_squares(Xc @ W - Yc) / (2 * 30)),
                      [cp.normNuc(W) <= tau])
    prob.solve(solver="CLARABEL")
    assert est.solver_result_.final_objective == pytest.approx(prob.value, rel=1e-6)


# --------------------------------------------------------------------------- recovery
def _planted(seed, d=50, m=40, rank=2, k=60, n=150, noise=0.05, sv=5.0):
    """Incoherent rank-2 ``Q`` (equal singular values) plus ``k`` entries of magnitude 1-2."""
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((d, rank)))[0]
    V = np.linalg.qr(rng.standard_normal((m, rank)))[0]
    Q = sv * U @ V.T
    P = np.zeros(d * m)
    pos = rng.choice(d * m, k, replace=False)
    P[pos] = rng.choice([-1.0, 1.0], k) * (1.0 + rng.random(k))
    P = P.reshape(d, m)
    Xs = [rng.standard_normal((n, d)) for _ in range(m)]
    ys = [Xs[t] @ (P[:, t] + Q[:, t]) + noise * rng.standard_normal(n) for t in range(m)]
    return Xs, ys, P, Q


@pytest.mark.parametrize("seed", [0, 1])
def test_synthetic_structure_recovery(seed):
    """Support of P (F1 >= 0.9) and the rank of Q exactly, tau = 0.9 ||Q_true||_*."""
    Xs, ys, P, Q = _planted(seed)
    tau = 0.9 * np.linalg.svd(Q, compute_uv=False).sum()
    est = SparseLowRankRegressor(gamma=0.1, tau=tau, tol=1e-9).fit(Xs, ys)
    found = est.sparse_component_.T != 0
    true = P != 0
    f1 = 2 * np.sum(found & true) / (found.sum() + true.sum())
    assert f1 >= 0.9
    assert est.rank_ == 2
    # the recovered column space is the planted one (principal angles)
    U_hat = np.linalg.svd(est.low_rank_component_.T)[0][:, :2]
    U_true = np.linalg.svd(Q)[0][:, :2]
    assert np.linalg.svd(U_hat.T @ U_true, compute_uv=False).min() > 0.99


# --------------------------------------------------------------------------- estimators
def test_estimator_attributes_and_shapes():
    X, Y = _regression(13)
    est = SparseLowRankRegressor(gamma=0.05, tau=1.0).fit(X, Y)
    m, d = Y.shape[1], X.shape[1]
    for a in ("coef_", "sparse_component_", "low_rank_component_"):
        assert getattr(est, a).shape == (m, d)
    np.testing.assert_allclose(est.coef_, est.sparse_component_ + est.low_rank_component_)
    assert est.rank_ == np.linalg.matrix_rank(est.low_rank_component_)
    assert est.predict(X).shape == Y.shape
    assert est.converged_
    assert est.gamma_max(X, Y) > 0


def test_gamma_max_zeroes_p_when_tau_is_zero():
    X, Y = _regression(14)
    est = SparseLowRankRegressor(tau=0.0)
    gmax = est.gamma_max(X, Y)
    est.set_params(gamma=gmax * 1.0001).fit(X, Y)
    assert np.all(est.sparse_component_ == 0)
    est.set_params(gamma=gmax * 0.9).fit(X, Y)
    assert np.any(est.sparse_component_ != 0)


@pytest.mark.parametrize("algorithm", ["pg", "ag"])
def test_classifier_losses_and_predictions(algorithm):
    Xs, ys = _classification(15)
    for loss in ("logistic", "squared_hinge", "squared"):
        clf = SparseLowRankClassifier(gamma=0.01, tau=1.0, loss=loss, algorithm=algorithm,
                                      tol=1e-8).fit(Xs, ys)
        acc = np.mean(np.concatenate(clf.predict(Xs)) == np.concatenate(ys))
        assert acc > 0.7
        assert clf.low_rank_component_.shape == (4, 6)
    assert hasattr(clf, "decision_function")


def test_warm_start_reuses_solution():
    X, Y = _regression(16)
    est = SparseLowRankRegressor(gamma=0.05, tau=1.0, tol=1e-13, max_iter=50000,
                                 warm_start=True).fit(X, Y)
    n_cold = est.n_iter_
    coef = est.coef_.copy()
    est.fit(X, Y)
    assert est.n_iter_ < n_cold / 10
    np.testing.assert_allclose(est.coef_, coef, atol=1e-5)


def test_max_iter_warns_and_returns_best_iterate():
    X, Y = _regression(17)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        est = SparseLowRankRegressor(gamma=0.01, tau=2.0, max_iter=3, tol=1e-12).fit(X, Y)
    assert not est.converged_
    assert est.solver_result_.final_objective == pytest.approx(est.objective_.min())


@pytest.mark.parametrize(
    "params,match",
    [
        ({"gamma": -1.0}, "gamma"),
        ({"tau": np.nan}, "tau"),
        ({"algorithm": "fista"}, "algorithm"),
        ({"criterion": "gap"}, "criterion"),
        ({"tol_type": "rel"}, "tol_type"),
        ({"tol": 0.0}, "tol"),
        ({"max_iter": 0}, "max_iter"),
        ({"line_search": "yes"}, "line_search"),
    ],
)
def test_bad_parameters_raise(params, match):
    X, Y = _regression(18)
    with pytest.raises(ValueError, match=match):
        SparseLowRankRegressor(**params).fit(X, Y)


def test_bad_loss_and_solver_arguments():
    Xs, ys = _classification(19)
    with pytest.raises(ValueError, match="loss"):
        SparseLowRankClassifier(loss="hinge").fit(Xs, ys)
    X, Y = _regression(19)
    data, _ = as_multitask_data(X, Y)
    pen = sparse_low_rank_penalty(0.1, 1.0)
    with pytest.raises(ValueError, match="certificate"):
        projected_gradient(Squared(data), pen, linear_map=SumMap(2), criterion="kkt")
    with pytest.raises(ValueError, match="coef_init"):
        projected_gradient(Squared(data), pen, linear_map=SumMap(2),
                           coef_init=np.zeros((3, 3)))
    with pytest.raises(ValueError, match="X has"):
        SparseLowRankRegressor().fit(X, Y).predict(X[:, :3])


def test_inputs_not_modified_and_infeasible_start_projected():
    X, Y = _regression(20)
    X0, Y0 = X.copy(), Y.copy()
    data, _ = as_multitask_data(X, Y)
    df = Squared(data)
    V0 = np.random.default_rng(0).standard_normal((2, X.shape[1], Y.shape[1])) * 5
    V0_copy = V0.copy()
    res = solve_sparse_low_rank(df, 0.05, 1.0, coef_init=V0, tol=1e-10)
    np.testing.assert_array_equal(V0, V0_copy)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(Y, Y0)
    ref = solve_sparse_low_rank(df, 0.05, 1.0, tol=1e-10)
    assert res.final_objective == pytest.approx(ref.final_objective, rel=1e-6)


@pytest.mark.parametrize("est", [SparseLowRankRegressor(), SparseLowRankClassifier()],
                         ids=lambda e: type(e).__name__)
def test_check_estimator(est):
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(est, on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results
              if r["status"] == "failed"]
    assert not failed
