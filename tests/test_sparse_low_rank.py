"""Tests of the sparse + low-rank model (Chen, Liu & Ye) and its PG / AG solvers.

The model is the :class:`~multitask.penalties.SparseLowRank` penalty (``alpha ||P||_1`` plus
the trace-norm ball ``||Q||_* <= radius`` on ``V = [P, Q]``, ``W = P + Q``); the paper's
projected gradient (PG) and accelerated projected gradient (AG) are
:class:`~multitask.solvers.ProximalGradient` with ``accelerated=False`` and
``accelerated=True, restart=False``, their step search started at a secant estimate.

References: cvxpy (CLARABEL) solves of the same convex problems, the exact Hessian of the
squared loss for the Lipschitz constant, scikit-learn's Lasso for the ``radius = 0`` special
case.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from multitask import SparseLowRankClassifier, SparseLowRankRegressor
from multitask.data import as_multitask_data
from multitask.losses import Logistic, Squared
from multitask.penalties import SparseLowRank, SumMap
from multitask.solvers import ProximalGradient
from multitask.solvers.fista import secant_lipschitz

cp = pytest.importorskip("cvxpy")

ALGOS = [("pg", True), ("pg", False), ("ag", True), ("ag", False)]


def _solver(algorithm="ag", line_search=True, **kw):
    """The paper's PG (``"pg"``) or AG (``"ag"``), with or without the step search."""
    return ProximalGradient(accelerated=algorithm == "ag", restart=False,
                            line_search=line_search, lipschitz_init="secant", **kw)


def _objective(df, pen, res):
    """``f(P + Q, b) + alpha ||P||_1`` at a result (``inf`` when ``Q`` is outside the ball)."""
    return df.value(res.W, res.intercept_variable) + pen.value(res.coef)


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


def _cvx_sparse_low_rank(Xs, ys, alpha, radius, loss="squared", intercept=True):
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
    obj = cp.sum(cp.hstack(terms)) + alpha * cp.sum(cp.abs(P))
    prob = cp.Problem(cp.Minimize(obj), [cp.normNuc(Q) <= radius])
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
    pen = SparseLowRank(0.1, 1.0)
    assert isinstance(pen.linear_map, SumMap)
    l_used = df.lipschitz() * pen.linear_map.norm_sq  # what the fixed-step variants use
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
    res = _solver(line_search=False, max_iter=5, warn=False).solve(df, SparseLowRank(0.05, 1.0))
    assert res.info["lipschitz"] == pytest.approx(2 * df.lipschitz())


# --------------------------------------------------------------------------- building blocks
def test_composite_prox_matches_cvxpy():
    rng = np.random.default_rng(3)
    V = rng.standard_normal((2, 6, 4)) * 2
    alpha, radius, step = 0.7, 1.5, 0.4
    out = SparseLowRank(alpha, radius).prox(V, step)
    P, Q = cp.Variable((6, 4)), cp.Variable((6, 4))
    obj = 0.5 * cp.sum_squares(P - V[0]) + 0.5 * cp.sum_squares(Q - V[1])
    obj = obj + step * alpha * cp.sum(cp.abs(P))
    cp.Problem(cp.Minimize(obj), [cp.normNuc(Q) <= radius]).solve(solver="CLARABEL")
    np.testing.assert_allclose(out[0], P.value, atol=1e-6)
    np.testing.assert_allclose(out[1], Q.value, atol=1e-6)
    assert np.linalg.svd(out[1], compute_uv=False).sum() == pytest.approx(radius, rel=1e-9)


# --------------------------------------------------------------------------- cvxpy agreement
@pytest.mark.parametrize("algorithm,line_search", ALGOS)
@pytest.mark.parametrize("shared", [True, False])
def test_squared_loss_matches_cvxpy(algorithm, line_search, shared):
    X, Y = _regression(4, shared=shared)
    Xs, ys = _as_lists(X, Y) if shared else (X, Y)
    alpha, radius = 0.08, 2.0
    ref = _cvx_sparse_low_rank(Xs, ys, alpha, radius)
    data, _ = as_multitask_data(X, Y)
    df, pen = Squared(data), SparseLowRank(alpha, radius)
    res = _solver(algorithm, line_search, tol=1e-8, max_iter=30000).solve(df, pen)
    assert res.converged and res.optimality <= 1e-8
    assert res.final_objective == pytest.approx(_objective(df, pen, res), rel=1e-12)
    assert res.final_objective == pytest.approx(ref, rel=1e-6)
    # never meaningfully below the reference either (a wrong objective could be lower)
    assert res.final_objective >= ref * (1 - 1e-6)
    assert np.linalg.svd(res.coef[1], compute_uv=False).sum() <= radius * (1 + 1e-9)


@pytest.mark.parametrize("algorithm,line_search", ALGOS)
def test_logistic_loss_matches_cvxpy(algorithm, line_search):
    Xs, ys = _classification(5)
    alpha, radius = 0.02, 1.5
    ref = _cvx_sparse_low_rank(Xs, ys, alpha, radius, loss="logistic")
    data, _ = as_multitask_data(Xs, ys, classification=True)
    df, pen = Logistic(data), SparseLowRank(alpha, radius)
    res = _solver(algorithm, line_search, tol=1e-8, max_iter=30000).solve(df, pen)
    assert res.converged and res.optimality <= 1e-8
    assert _objective(df, pen, res) == pytest.approx(ref, rel=1e-6)
    assert _objective(df, pen, res) >= ref * (1 - 1e-6)


def test_certificate_and_optimality_with_intercept_variable_logistic():
    """The former KKT stopping criterion is the shared optimality measure now: at tol = 1e-8
    the returned point's measure is below tol, its intercepts are optimal, its objective is
    cvxpy's, and the certificate of the model bounds the remaining gap."""
    Xs, ys = _classification(21)
    alpha, radius = 0.02, 1.5
    ref = _cvx_sparse_low_rank(Xs, ys, alpha, radius, loss="logistic")
    data, _ = as_multitask_data(Xs, ys, classification=True)
    df, pen = Logistic(data), SparseLowRank(alpha, radius)
    res = _solver(tol=1e-8, max_iter=50000).solve(df, pen)
    assert res.converged and res.info["stopped_by"] == "tol" and res.optimality <= 1e-8
    f, G, gb = df.value_and_grad(res.W, res.intercept_variable)
    assert np.max(np.abs(gb)) <= 1e-7
    F = _objective(df, pen, res)
    assert F == pytest.approx(ref, rel=1e-6)
    kkt = pen.certificate(res.coef, G, f)
    assert F - ref <= kkt["bound"] + 1e-7 * abs(ref)
    assert kkt["bound"] <= 1e-6 * F


def test_paper_scaling_mapping():
    """Eq. (45) without intercept: F_paper = 2 n F_ours with alpha = gamma_paper / (2 n)."""
    X, Y = _regression(6, n=20, d=8, m=4)
    n = X.shape[0]
    g_paper, radius = 3.0, 1.5
    P, Q = cp.Variable((8, 4)), cp.Variable((8, 4))
    obj = cp.sum_squares(X @ (P + Q) - Y) + g_paper * cp.sum(cp.abs(P))
    prob = cp.Problem(cp.Minimize(obj), [cp.normNuc(Q) <= radius])
    prob.solve(solver="CLARABEL")
    est = SparseLowRankRegressor(alpha=g_paper / (2 * n), radius=radius, fit_intercept=False,
                                 tol=1e-8, max_iter=30000).fit(X, Y)
    assert est.optimality_ <= 1e-8
    Pe, Qe = est.sparse_component_.T, est.low_rank_component_.T
    assert np.linalg.svd(Qe, compute_uv=False).sum() <= radius * (1 + 1e-9)
    F_paper = np.sum((X @ (Pe + Qe) - Y) ** 2) + g_paper * np.abs(Pe).sum()
    assert F_paper == pytest.approx(prob.value, rel=1e-6)
    assert 2 * n * est.solver_info_["best_objective"] == pytest.approx(F_paper, rel=1e-10)


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
    pen = SparseLowRank(0.03, 1.0)
    res = _solver("pg", line_search, tol=1e-14, max_iter=3000, warn=False).solve(df, pen)
    d, m = data.n_features, data.n_tasks
    F0 = df.value(np.zeros((d, m)), df.init_intercept())  # F(T_0), T_0 = 0
    F = np.concatenate([[F0], res.objective])
    assert len(F) > 50
    assert np.all(np.diff(F) <= 1e-12 * np.abs(F[1:]))
    # the accelerated method is not monotone in general: it is not tested for this


def test_rate_bounds_of_theorems_5_1_and_5_2():
    """F(T_k) - F* <= L ||T_0 - T*||^2 / (2k) (PG), <= 2 L ||T_0 - T*||^2 / (k+1)^2 (AG)."""
    X, Y = _regression(8, n=40, d=12, m=6)
    data, _ = as_multitask_data(X, Y)
    df = Squared(data)
    pen = SparseLowRank(0.05, 1.0)
    star = ProximalGradient(tol=1e-10, max_iter=50000).solve(df, pen)
    assert star.converged
    F_star = star.final_objective
    R2 = float(np.sum(star.coef ** 2))  # T_0 = 0
    L = 2 * df.lipschitz()
    pg = _solver("pg", False, tol=1e-15, max_iter=400, warn=False).solve(df, pen)
    ag = _solver("ag", False, tol=1e-15, max_iter=400, warn=False).solve(df, pen)
    k = np.arange(1, len(pg.objective) + 1)
    assert np.all(pg.objective - F_star <= L * R2 / (2 * k) + 1e-12)
    k = np.arange(1, len(ag.objective) + 1)
    assert np.all(ag.objective - F_star <= 2 * L * R2 / (k + 1) ** 2 + 1e-12)
    # and AG is far ahead of PG after 400 iterations on this problem
    assert ag.objective[-1] - F_star < 0.1 * (pg.objective[-1] - F_star)


def test_line_search_lipschitz_bounded():
    """The search starts at the secant estimate, only doubles, and never passes the bound."""
    X, Y = _regression(9)
    data, _ = as_multitask_data(X, Y)
    df = Squared(data)
    pen = SparseLowRank(0.05, 1.0)
    d, m = data.n_features, data.n_tasks
    L0 = secant_lipschitz(df, pen, np.zeros((2, d, m)), None)
    assert L0 < 2 * df.lipschitz()  # a lower estimate: the search has room to grow
    for alg in ("pg", "ag"):
        res = _solver(alg, tol=1e-10).solve(df, pen)
        assert L0 <= res.info["lipschitz"] <= 2 * df.lipschitz() * (1 + 1e-12)


def test_certificate_bounds_true_gap_and_vanishes():
    X, Y = _regression(10)
    data, _ = as_multitask_data(X, Y)
    df = Squared(data)
    pen = SparseLowRank(0.05, 1.5)
    F_star = ProximalGradient(tol=1e-10, max_iter=50000).solve(df, pen).final_objective
    iterates = []

    def keep(k, F, V, b):
        if k % 5 == 1:
            iterates.append((F, V.copy()))

    _solver("pg", tol=1e-14, max_iter=600, warn=False).solve(df, pen, callback=keep)
    assert len(iterates) > 50

    def bound(V):
        f, G, _ = df.value_and_grad(V.sum(axis=0))
        return pen.certificate(V, G, f)["bound"]

    for F, V in iterates:
        assert bound(V) >= F - F_star - 1e-10
    # it vanishes as the optimality measure does
    loose = _solver(tol=1e-3).solve(df, pen)
    tight = _solver(tol=1e-8, max_iter=50000).solve(df, pen)
    assert tight.converged and tight.optimality <= 1e-8
    assert bound(tight.coef) < 1e-3 * bound(loose.coef)
    assert bound(tight.coef) <= 1e-6 * abs(F_star)
    assert tight.final_objective - F_star <= 1e-7 * abs(F_star) + 1e-12


def test_radius_zero_is_independent_lasso():
    from sklearn.linear_model import Lasso

    X, Y = _regression(11, n=40, d=8, m=3)
    alpha = 0.05
    est = SparseLowRankRegressor(alpha=alpha, radius=0.0, tol=1e-10, max_iter=30000).fit(X, Y)
    assert np.all(est.low_rank_component_ == 0) and est.rank_ == 0
    for t in range(3):
        ref = Lasso(alpha=alpha, tol=1e-12, max_iter=100000).fit(X, Y[:, t])
        np.testing.assert_allclose(est.coef_[t], ref.coef_, atol=1e-6)
        assert est.intercept_[t] == pytest.approx(ref.intercept_, abs=1e-6)


def test_large_alpha_is_trace_constrained_least_squares():
    X, Y = _regression(12, n=30, d=8, m=4)
    radius = 1.0
    est = SparseLowRankRegressor(alpha=1e3, radius=radius, tol=1e-10,
                                 max_iter=30000).fit(X, Y)
    assert np.all(est.sparse_component_ == 0)
    Xc, Yc = X - X.mean(0), Y - Y.mean(0)
    W = cp.Variable((8, 4))
    prob = cp.Problem(cp.Minimize(cp.sum_squares(Xc @ W - Yc) / (2 * 30)),
                      [cp.normNuc(W) <= radius])
    prob.solve(solver="CLARABEL")
    ours = np.sum((X @ est.coef_.T + est.intercept_ - Y) ** 2) / (2 * 30)
    assert ours == pytest.approx(prob.value, rel=1e-6)


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
    """Support of P (F1 >= 0.9) and the rank of Q exactly, radius = 0.9 ||Q_true||_*."""
    Xs, ys, P, Q = _planted(seed)
    radius = 0.9 * np.linalg.svd(Q, compute_uv=False).sum()
    est = SparseLowRankRegressor(alpha=0.1, radius=radius, tol=1e-6).fit(Xs, ys)
    assert est.converged_
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
    est = SparseLowRankRegressor(alpha=0.05, radius=1.0).fit(X, Y)
    m, d = Y.shape[1], X.shape[1]
    for a in ("coef_", "sparse_component_", "low_rank_component_"):
        assert getattr(est, a).shape == (m, d)
    np.testing.assert_allclose(est.coef_, est.sparse_component_ + est.low_rank_component_)
    assert est.rank_ == np.linalg.matrix_rank(est.low_rank_component_)
    assert est.predict(X).shape == Y.shape
    assert est.converged_ and est.optimality_ <= est.tol
    assert est.coef_variable_.shape == (2, d, m)
    assert est.alpha_max(X, Y) > 0
    # the KKT certificate of the fitted point is reported
    assert set(est.kkt_) >= {"bound", "sparse_term", "low_rank_term", "dual_infeasibility",
                             "intercept_gradient"}
    assert est.kkt_["bound"] >= 0


def test_alpha_max_zeroes_p_when_radius_is_zero():
    X, Y = _regression(14)
    est = SparseLowRankRegressor(radius=0.0)
    amax = est.alpha_max(X, Y)
    est.set_params(alpha=amax * 1.0001).fit(X, Y)
    assert np.all(est.sparse_component_ == 0)
    est.set_params(alpha=amax * 0.9).fit(X, Y)
    assert np.any(est.sparse_component_ != 0)


@pytest.mark.parametrize("solver", ["pg", "fista"])
def test_classifier_losses_and_predictions(solver):
    Xs, ys = _classification(15)
    for loss in ("logistic", "squared_hinge", "squared"):
        # plain proximal gradient (the paper's PG) needs far more iterations than the
        # accelerated one: a certified gap of 1e-3 within its budget
        clf = SparseLowRankClassifier(alpha=0.01, radius=1.0, loss=loss, solver=solver,
                                      tol=1e-3 if solver == "pg" else 1e-4).fit(Xs, ys)
        assert clf.converged_ and clf.solver_.accelerated == (solver == "fista")
        acc = np.mean(np.concatenate(clf.predict(Xs)) == np.concatenate(ys))
        assert acc > 0.7
        assert clf.low_rank_component_.shape == (4, 6)
    assert hasattr(clf, "decision_function")


def test_estimator_uses_the_papers_step_search():
    """``solver="pg"`` / ``"fista"`` are the paper's PG and AG (no restart, secant start)."""
    X, Y = _regression(22)
    for name, accelerated in (("pg", False), ("fista", True)):
        est = SparseLowRankRegressor(alpha=0.05, radius=1.0, solver=name, tol=1e-6).fit(X, Y)
        s = est.solver_
        assert (s.accelerated, s.restart, s.lipschitz_init) == (accelerated, False, "secant")
        data, _ = as_multitask_data(X, Y)
        ref = _solver("ag" if accelerated else "pg", tol=1e-6).solve(Squared(data),
                                                                  SparseLowRank(0.05, 1.0))
        np.testing.assert_array_equal(est.coef_variable_, ref.coef)


def test_warm_start_reuses_solution():
    X, Y = _regression(16)
    est = SparseLowRankRegressor(alpha=0.05, radius=1.0, tol=1e-10, max_iter=50000,
                                 warm_start=True).fit(X, Y)
    n_cold = est.n_iter_
    coef = est.coef_.copy()
    est.fit(X, Y)
    assert est.n_iter_ < n_cold / 10
    np.testing.assert_allclose(est.coef_, coef, atol=1e-5)


def test_max_iter_warns_and_returns_best_iterate():
    X, Y = _regression(17)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        est = SparseLowRankRegressor(alpha=0.01, radius=2.0, max_iter=3, tol=1e-12).fit(X, Y)
    assert not est.converged_ and est.optimality_ > 1e-12
    assert est.solver_info_["best_objective"] == pytest.approx(est.objective_.min())


@pytest.mark.parametrize(
    "params,match",
    [
        ({"alpha": -1.0}, "alpha"),
        ({"radius": -1.0}, "radius"),
        ({"radius": np.nan}, "radius"),
        ({"solver": "lp"}, "solver"),  # no linear program for a trace-norm ball
        ({"solver": "ag"}, "solver"),  # the old algorithm name
        ({"tol": 0.0}, "tol"),
        ({"max_iter": 0}, "max_iter"),
    ],
)
def test_bad_parameters_raise(params, match):
    X, Y = _regression(18)
    with pytest.raises(ValueError, match=match):
        SparseLowRankRegressor(**params).fit(X, Y)


@pytest.mark.parametrize("old", ["gamma", "tau", "algorithm", "criterion", "tol_type"])
def test_removed_parameters_are_not_accepted(old):
    with pytest.raises(TypeError):
        SparseLowRankRegressor(**{old: 1.0})


def test_bad_loss_and_solver_arguments():
    Xs, ys = _classification(19)
    with pytest.raises(ValueError, match="loss"):
        SparseLowRankClassifier(loss="hinge").fit(Xs, ys)
    X, Y = _regression(19)
    data, _ = as_multitask_data(X, Y)
    pen = SparseLowRank(0.1, 1.0)
    with pytest.raises(ValueError, match="lipschitz_init"):
        ProximalGradient(lipschitz_init="one")
    with pytest.raises(ValueError, match="coef_init"):
        ProximalGradient().solve(Squared(data), pen, coef_init=np.zeros((3, 3)))
    with pytest.raises(ValueError, match="X has"):
        SparseLowRankRegressor().fit(X, Y).predict(X[:, :3])


def test_inputs_not_modified_and_infeasible_start_projected():
    X, Y = _regression(20)
    X0, Y0 = X.copy(), Y.copy()
    data, _ = as_multitask_data(X, Y)
    df = Squared(data)
    pen = SparseLowRank(0.05, 1.0)
    V0 = np.random.default_rng(0).standard_normal((2, X.shape[1], Y.shape[1])) * 5
    V0_copy = V0.copy()
    assert not np.isfinite(pen.value(V0))  # Q0 outside the trace ball
    res = _solver(tol=1e-8).solve(df, pen, coef_init=V0)
    np.testing.assert_array_equal(V0, V0_copy)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(Y, Y0)
    assert np.isfinite(res.objective).all()  # every iterate feasible, the first included
    ref = _solver(tol=1e-8).solve(df, pen)
    assert res.final_objective == pytest.approx(ref.final_objective, rel=1e-6)
