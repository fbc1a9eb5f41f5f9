"""Temporal group lasso (MALSAR TGL) and fused sparse group lasso (MALSAR cFSGL).

* The 1-D total-variation prox (Condat's algorithm) against an exact optimality certificate
  on many random rows (ties, constant rows, extreme scales) and against cvxpy; the fused
  sparse group lasso prox (TV, then l1, then group) against cvxpy.
* For both losses and three random problems with per-task designs of unequal sizes, the
  objective reached at ``tol=1e-8`` is within 1e-6 (relative) of cvxpy's optimum of the same
  formula, and ``optimality_ <= tol``.
* MALSAR's ``Least_TGL`` / ``Logistic_TGL`` and ``Least_CFGLasso`` / ``Logistic_CFGLasso``
  through the documented conversions, against cvxpy.
* Planted temporal patterns: smooth trajectories (TGL), change points (cFSGL).
* alpha_max, grids, time order of long-format labels, sparse X, CV, model files.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from wide_cases import wide_tasks

import multitask as mt
from multitask.penalties import (
    FusedSparseGroupLasso,
    TemporalGroupLasso,
    prox_fused_sparse_group_lasso,
    prox_tv1d,
    temporal_difference_matrix,
)
from multitask.solvers import WorkingSet

cp = pytest.importorskip("cvxpy")

TOL = 1e-8
REL = 1e-6
SEEDS = (0, 1, 2)
#: tight tolerances of the interior-point reference for the prox comparisons
PRECISE = {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12}


def _problem(seed, classification, sizes=(24, 31, 18, 27, 22), d=5):
    rng = np.random.default_rng(400 + seed)
    W = rng.standard_normal((d, 2)) @ rng.standard_normal((2, len(sizes)))
    Xs = [rng.standard_normal((n, d)) + 0.3 * rng.standard_normal(d) for n in sizes]
    ys = [X @ W[:, t] + 0.5 + 0.7 * rng.standard_normal(len(X)) for t, X in enumerate(Xs)]
    if classification:
        ys = [np.where(y > np.median(y), 1, 0) for y in ys]
    return Xs, ys


def _signed(est, ys):
    if not hasattr(est, "classes_"):
        return [np.asarray(y, dtype=float) for y in ys]
    return [np.where(np.asarray(y) == est.classes_[1], 1.0, -1.0) for y in ys]


def _loss_cvx(loss, X, y, w, b):
    z = X @ w + b
    if loss == "squared":
        return cp.sum_squares(z - y) / (2 * X.shape[0])
    return cp.sum(cp.logistic(-cp.multiply(y, z))) / X.shape[0]


def _loss_np(loss, X, y, w, b):
    z = X @ w + b
    if loss == "squared":
        return float(np.sum((z - y) ** 2) / (2 * X.shape[0]))
    return float(np.sum(np.logaddexp(0.0, -y * z)) / X.shape[0])


# penalties written as sums over consecutive time points (not through H)
def _tgl_pen(a_smooth, a_group):
    def cvx(W):
        return (a_smooth * sum(cp.sum_squares(W[:, t] - W[:, t + 1])
                               for t in range(W.shape[1] - 1))
                + a_group * cp.sum(cp.norm(W, 2, axis=1)))

    def value(W):
        return (a_smooth * float(np.sum((W[:, :-1] - W[:, 1:]) ** 2))
                + a_group * np.linalg.norm(W, axis=1).sum())

    return cvx, value


def _fsgl_pen(a_l1, a_fused, a_group):
    def cvx(W):
        return (a_l1 * cp.sum(cp.abs(W))
                + a_fused * sum(cp.sum(cp.abs(W[:, t] - W[:, t + 1]))
                                for t in range(W.shape[1] - 1))
                + a_group * cp.sum(cp.norm(W, 2, axis=1)))

    def value(W):
        return (a_l1 * np.abs(W).sum() + a_fused * np.abs(W[:, :-1] - W[:, 1:]).sum()
                + a_group * np.linalg.norm(W, axis=1).sum())

    return cvx, value


def _cvx_optimum(loss, pen, Xs, ys, alpha_l2=0.0, intercept=True):
    d, m = Xs[0].shape[1], len(Xs)
    W = cp.Variable((d, m))
    b = cp.Variable(m) if intercept else np.zeros(m)
    obj = sum(_loss_cvx(loss, Xs[t], ys[t], W[:, t], b[t]) for t in range(m))
    prob = cp.Problem(cp.Minimize(obj + pen(W) + 0.5 * alpha_l2 * cp.sum_squares(W)))
    prob.solve(solver=cp.CLARABEL)
    assert prob.status in ("optimal", "optimal_inaccurate"), prob.status
    return float(prob.value)


def _our_objective(est, loss, pen_value, Xs, ys, alpha_l2=0.0):
    ys = _signed(est, ys)
    W, b = est.coef_.T, est.intercept_
    value = sum(_loss_np(loss, Xs[t], ys[t], W[:, t], b[t]) for t in range(len(Xs)))
    return value + pen_value(W) + 0.5 * alpha_l2 * float(np.sum(W * W))


# ----------------------------------------------------------------------------- the TV prox
def _tv_certificate(y, x, lam):
    """x = argmin 0.5 ||x - y||^2 + lam TV(x) iff the running sums c_k = sum_{i <= k}
    (y_i - x_i) satisfy |c_k| <= lam, c_{n-1} = 0, and c_k = -lam sign(x_{k+1} - x_k) where x
    jumps (the dual variable of the difference operator)."""
    c = np.cumsum(y - x)
    scale = max(1.0, float(np.abs(y).max())) * len(y) * 1e-11
    if abs(c[-1]) > scale or np.any(np.abs(c[:-1]) > lam + scale):
        return False
    jumps = np.diff(x)
    moving = np.abs(jumps) > 1e-12 * max(1.0, float(np.abs(y).max()))
    return bool(np.all(np.abs(c[:-1][moving] + lam * np.sign(jumps[moving])) <= scale))


def test_tv_prox_satisfies_the_optimality_certificate():
    rng = np.random.default_rng(0)
    for k in range(1500):
        n = int(rng.integers(1, 15))
        scale = float(rng.choice([1e-8, 1e-3, 1.0, 1e3, 1e8]))
        y = rng.standard_normal(n) * scale
        if k % 4 == 0:
            y = np.round(y / scale) * scale  # ties and constant runs
        lam = float(rng.choice([0.0, 0.01, 0.3, 1.0, 10.0])) * scale
        y0 = y.copy()
        x = prox_tv1d(y, lam)
        np.testing.assert_array_equal(y, y0)
        assert _tv_certificate(y, x, lam), (y, lam, x)
    # special cases: lam = 0, a constant row, lam above the total variation's dual bound
    y = rng.standard_normal(7)
    np.testing.assert_array_equal(prox_tv1d(y, 0.0), y)
    np.testing.assert_allclose(prox_tv1d(np.full(5, 2.0), 1.0), np.full(5, 2.0))
    np.testing.assert_allclose(prox_tv1d(y, 1e3), np.full(7, y.mean()))
    # row by row
    V = rng.standard_normal((4, 6))
    np.testing.assert_allclose(prox_tv1d(V, 0.4), np.vstack([prox_tv1d(v, 0.4) for v in V]))


def test_tv_and_fused_sparse_group_lasso_prox_against_cvxpy():
    rng = np.random.default_rng(1)
    for _ in range(4):
        v = rng.standard_normal(9)
        x = cp.Variable(9)
        cp.Problem(cp.Minimize(0.5 * cp.sum_squares(x - v) + 0.5 * cp.norm1(cp.diff(x)))).solve(
            solver=cp.CLARABEL, **PRECISE)
        np.testing.assert_allclose(prox_tv1d(v, 0.5), x.value, atol=1e-7)
    for lams in [(0.1, 0.3, 0.5), (0.0, 0.5, 0.2), (0.4, 0.0, 0.3), (0.05, 0.2, 3.0)]:
        V = 2 * rng.standard_normal((5, 7))
        out = prox_fused_sparse_group_lasso(V, *lams)
        U = cp.Variable(V.shape)
        _, value = _fsgl_pen(*lams)
        cvx, _ = _fsgl_pen(*lams)
        prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(U - V) + cvx(U)))
        prob.solve(solver=cp.CLARABEL, **PRECISE)
        ours = 0.5 * np.sum((out - V) ** 2) + value(out)
        assert ours <= prob.value + 1e-9 * max(1.0, prob.value)
        np.testing.assert_allclose(out, U.value, atol=1e-6)
    assert FusedSparseGroupLasso(*lams).prox(V, 2.0) == pytest.approx(
        prox_fused_sparse_group_lasso(V, *(2 * np.array(lams))))


def test_tv_prox_errors():
    with pytest.raises(ValueError, match="lam"):
        prox_tv1d(np.ones(3), -1.0)
    with pytest.raises(ValueError, match="finite"):
        prox_tv1d(np.array([1.0, np.nan]), 1.0)
    with pytest.raises(ValueError, match="1-D or 2-D"):
        prox_tv1d(np.ones((2, 2, 2)), 1.0)


def test_penalties_against_their_formulas():
    rng = np.random.default_rng(2)
    W = rng.standard_normal((4, 6))
    H = temporal_difference_matrix(6)
    np.testing.assert_allclose(W @ H, W[:, :-1] - W[:, 1:])
    tgl = TemporalGroupLasso(0.3, 0.2, 6)
    _, tgl_value = _tgl_pen(0.3, 0.2)
    assert tgl.value(W) == pytest.approx(tgl_value(W))
    g, G = tgl.smooth_value_and_grad(W)
    assert g == pytest.approx(0.3 * np.sum((W @ H) ** 2))
    np.testing.assert_allclose(G, 0.6 * W @ H @ H.T)
    fsgl = FusedSparseGroupLasso(0.1, 0.2, 0.3)
    _, fsgl_value = _fsgl_pen(0.1, 0.2, 0.3)
    assert fsgl.value(W) == pytest.approx(fsgl_value(W))
    assert temporal_difference_matrix(1).shape == (1, 0)
    with pytest.raises(ValueError, match="alpha_fused"):
        FusedSparseGroupLasso(0.1, -0.2, 0.3)


# ----------------------------------------------------------------------------- vs cvxpy
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("classification", [False, True], ids=["squared", "logistic"])
def test_tgl_matches_cvxpy(classification, seed):
    Xs, ys = _problem(seed, classification)
    ag, asm, al2 = (0.02, 0.05, 0.01) if classification else (0.15, 0.3, 0.05)
    cls = mt.TemporalGroupLassoClassifier if classification else mt.TemporalGroupLassoRegressor
    est = cls(ag, asm, alpha_l2=al2, tol=TOL, max_iter=100_000).fit(Xs, ys)
    assert est.optimality_ <= TOL
    loss = "logistic" if classification else "squared"
    cvx, value = _tgl_pen(asm, ag)
    ref = _cvx_optimum(loss, cvx, Xs, _signed(est, ys), alpha_l2=al2)
    ours = _our_objective(est, loss, value, Xs, ys, alpha_l2=al2)
    assert abs(ours - ref) <= REL * max(1.0, abs(ref)), (ours, ref)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("classification", [False, True], ids=["squared", "logistic"])
def test_fsgl_matches_cvxpy(classification, seed):
    Xs, ys = _problem(seed, classification)
    ag, af, al = (0.02, 0.01, 0.005) if classification else (0.15, 0.1, 0.03)
    cls = (mt.FusedSparseGroupLassoClassifier if classification
           else mt.FusedSparseGroupLassoRegressor)
    est = cls(ag, af, al, tol=TOL, max_iter=100_000).fit(Xs, ys)
    assert est.optimality_ <= TOL
    loss = "logistic" if classification else "squared"
    cvx, value = _fsgl_pen(al, af, ag)
    ref = _cvx_optimum(loss, cvx, Xs, _signed(est, ys))
    ours = _our_objective(est, loss, value, Xs, ys)
    assert abs(ours - ref) <= REL * max(1.0, abs(ref)), (ours, ref)


def _wide_problem(classification, d=40, sizes=(30, 26, 34, 28)):
    """Per-task designs of 40 features, 4 of them carrying a signal that drifts over the
    tasks; ``(Xs, ys, G)`` with ``G`` the loss gradient at ``W = 0`` and the best intercepts
    (labels 0/1 for the logistic loss)."""
    rng = np.random.default_rng(9)
    W = np.zeros((d, len(sizes)))
    W[:4] = 1.0 + np.cumsum(0.3 * rng.standard_normal((4, len(sizes))), axis=1)
    return wide_tasks(rng, W, sizes, classification)


@pytest.mark.parametrize("model", ["tgl", "fsgl"])
@pytest.mark.parametrize("classification", [False, True], ids=["squared", "logistic"])
def test_working_sets_reach_cvxpys_optimum_on_many_features(model, classification):
    """Working sets (a first working set of 8 of 40 rows) at half of the group strength's
    ``alpha_max``: the certified objective matches cvxpy's within 1e-6 and rows were left
    out of the working set."""
    Xs, ys, G = _wide_problem(classification)
    top = float(np.linalg.norm(G, axis=1).max())  # the group norm's alpha_max (smooth terms
    solver = WorkingSet(p0=8, tol=TOL, max_iter=100_000)  # vanish at W = 0)
    if model == "tgl":
        cls = mt.TemporalGroupLassoClassifier if classification else \
            mt.TemporalGroupLassoRegressor
        ag, asm = 0.5 * top, 0.05
        est = cls(ag, asm, solver=solver, tol=TOL, max_iter=100_000).fit(Xs, ys)
        cvx, value = _tgl_pen(asm, ag)
    else:
        cls = mt.FusedSparseGroupLassoClassifier if classification else \
            mt.FusedSparseGroupLassoRegressor
        ag, af, al = 0.3 * top, 0.02, 0.1 * float(np.abs(G).max())
        est = cls(ag, af, al, solver=solver, tol=TOL, max_iter=100_000).fit(Xs, ys)
        cvx, value = _fsgl_pen(al, af, ag)
    assert est.solver_.name == "working_set" and est.optimality_ <= TOL
    assert est.solver_info_["working_set"] < Xs[0].shape[1]
    loss = "logistic" if classification else "squared"
    ref = _cvx_optimum(loss, cvx, Xs, _signed(est, ys))
    ours = _our_objective(est, loss, value, Xs, ys)
    assert abs(ours - ref) <= REL * max(1.0, abs(ref)), (ours, ref)


def test_plain_proximal_gradient():
    Xs, ys = _problem(0, False)
    for est, (cvx, value) in (
            (mt.TemporalGroupLassoRegressor(0.15, 0.3, solver="pg"), _tgl_pen(0.3, 0.15)),
            (mt.FusedSparseGroupLassoRegressor(0.15, 0.1, 0.03, solver="pg"),
             _fsgl_pen(0.03, 0.1, 0.15))):
        est.set_params(tol=TOL, max_iter=200_000).fit(Xs, ys)
        assert est.optimality_ <= TOL and est.solver_.accelerated is False
        ref = _cvx_optimum("squared", cvx, Xs, ys)
        assert abs(_our_objective(est, "squared", value, Xs, ys) - ref) <= REL * max(1.0, ref)


# ----------------------------------------------------------------------------- MALSAR
def _malsar_least(Xs, ys, pen):
    """MALSAR's least squares: sum_t 0.5 ||y_t - X_t w_t||^2 + penalty, no intercept."""
    d, m = Xs[0].shape[1], len(Xs)
    W = cp.Variable((d, m))
    obj = sum(0.5 * cp.sum_squares(ys[t] - Xs[t] @ W[:, t]) for t in range(m))
    prob = cp.Problem(cp.Minimize(obj + pen[0](W)))
    prob.solve(solver=cp.CLARABEL)

    def value(Wv):
        return sum(0.5 * float(np.sum((ys[t] - Xs[t] @ Wv[:, t]) ** 2)) for t in range(m)) + \
            pen[1](Wv)

    return float(prob.value), value


def _tgl_malsar_pen(rho1, rho2, rho3):
    """rho1 ||W||_F^2 + rho2 ||W R||_F^2 + rho3 ||W||_{2,1} (R: MALSAR's difference matrix)."""
    cvx, value = _tgl_pen(rho2, rho3)
    return (lambda W: rho1 * cp.sum_squares(W) + cvx(W),
            lambda W: rho1 * float(np.sum(W ** 2)) + value(W))


def test_malsar_least_tgl_and_cfglasso_through_the_documented_conversion():
    """Least_TGL(rho1, rho2, rho3): alpha_l2 = 2 rho1 / n, alpha_smooth = rho2 / n,
    alpha_group = rho3 / n for n rows per task; Least_CFGLasso(rho1, rho2, rho3):
    alpha_l1 = rho1 / n, alpha_fused = rho2 / n, alpha_group = rho3 / n. Unequal sizes: rows
    scaled by sqrt(n_t) and the rho's themselves."""
    n = 30
    Xs, ys = _problem(3, False, sizes=(n,) * 5)
    Xu, yu = _problem(4, False)
    scale = [np.sqrt(len(y)) for y in yu]
    Xs_scaled = [s * X for s, X in zip(scale, Xu, strict=True)]
    ys_scaled = [s * y for s, y in zip(scale, yu, strict=True)]
    rho = (2.0, 6.0, 4.0)
    pen = _tgl_malsar_pen(*rho)
    ref, value = _malsar_least(Xs, ys, pen)
    est = mt.TemporalGroupLassoRegressor(rho[2] / n, rho[1] / n, alpha_l2=2 * rho[0] / n,
                                         fit_intercept=False, tol=TOL).fit(Xs, ys)
    assert abs(value(est.coef_.T) - ref) <= REL * ref
    ref, value = _malsar_least(Xu, yu, pen)
    est = mt.TemporalGroupLassoRegressor(rho[2], rho[1], alpha_l2=2 * rho[0],
                                         fit_intercept=False, tol=TOL).fit(Xs_scaled, ys_scaled)
    assert abs(value(est.coef_.T) - ref) <= REL * ref
    pen = _fsgl_pen(*rho)
    ref, value = _malsar_least(Xs, ys, pen)
    est = mt.FusedSparseGroupLassoRegressor(rho[2] / n, rho[1] / n, rho[0] / n,
                                            fit_intercept=False, tol=TOL).fit(Xs, ys)
    assert abs(value(est.coef_.T) - ref) <= REL * ref
    ref, value = _malsar_least(Xu, yu, pen)
    est = mt.FusedSparseGroupLassoRegressor(rho[2], rho[1], rho[0], fit_intercept=False,
                                            tol=TOL).fit(Xs_scaled, ys_scaled)
    assert abs(value(est.coef_.T) - ref) <= REL * ref


def test_malsar_logistic_tgl_and_cfglasso_are_our_scaling():
    """Logistic_TGL / Logistic_CFGLasso: per-task mean logistic loss, free intercept:
    alpha_l2 = 2 rho1 (TGL), the other strengths equal to the rho's."""
    Xs, ys = _problem(5, True)
    ysg = [np.where(y == 1, 1.0, -1.0) for y in ys]
    rho = (0.01, 0.05, 0.02)
    est = mt.TemporalGroupLassoClassifier(rho[2], rho[1], alpha_l2=2 * rho[0], tol=TOL,
                                          max_iter=100_000).fit(Xs, ys)
    cvx, value = _tgl_malsar_pen(*rho)
    ref = _cvx_optimum("logistic", cvx, Xs, ysg)
    assert abs(_our_objective(est, "logistic", value, Xs, ys) - ref) <= REL * ref
    rho = (0.005, 0.01, 0.02)
    est = mt.FusedSparseGroupLassoClassifier(rho[2], rho[1], rho[0], tol=TOL,
                                             max_iter=100_000).fit(Xs, ys)
    cvx, value = _fsgl_pen(*rho)
    ref = _cvx_optimum("logistic", cvx, Xs, ysg)
    assert abs(_our_objective(est, "logistic", value, Xs, ys) - ref) <= REL * ref


# ----------------------------------------------------------------------------- planted
def _smooth_trajectories(seed, m=10, d=20, n=10, noise=0.5):
    """Three features with smooth trajectories over m time points (rising, slowly
    curving, a half cosine); 10 rows per time point for 20 features."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, m)
    W = np.zeros((d, m))
    W[0], W[1], W[2] = 1.0 + t, -1.5 + 0.5 * t ** 2, np.cos(np.pi * t)
    Xs = [rng.standard_normal((n, d)) for _ in range(m)]
    ys = [X @ W[:, k] + noise * rng.standard_normal(n) for k, X in enumerate(Xs)]
    return Xs, ys, W


def _total_variation(C):
    return float(np.abs(np.diff(C, axis=1)).sum())


@pytest.mark.parametrize("seed", [0, 1])
def test_planted_smooth_trajectories_recovered_by_tgl(seed):
    """With fewer rows per time point than features, each time point alone is poorly
    determined; the temporal term borrows from neighbouring time points.

    Thresholds: TGL's estimation error is below 0.75 times that of the best l2,1 model (10
    strengths, the best chosen with the truth: the comparison favours l2,1), the total
    variation over time of the true features' estimated trajectories is within 30% of the
    truth's, while l2,1's (no temporal coupling) is above 1.5 times the truth's, and every
    true feature is selected. (Measured over 5 seeds: ratios 0.54-0.65, 0.80-0.98 and 1.9-2.6.)
    """
    Xs, ys, W = _smooth_trajectories(seed)
    err = lambda est: np.linalg.norm(est.coef_.T - W) / np.linalg.norm(W)  # noqa: E731
    l21 = min((mt.L21Regressor(a).fit(Xs, ys) for a in np.logspace(-3, 0, 10)), key=err)
    tgl = mt.TemporalGroupLassoRegressor(0.2, 0.3).fit(Xs, ys)
    assert err(tgl) < 0.75 * err(l21)
    truth = _total_variation(W[:3])
    assert 0.7 * truth < _total_variation(tgl.coef_.T[:3]) < 1.3 * truth
    assert _total_variation(l21.coef_.T[:3]) > 1.5 * truth
    assert {0, 1, 2} <= set(tgl.selected_features_)


def _change_points(seed, m=8, d=20, n=20, noise=0.5):
    """Feature 0 steps from 1 to 2 after time 3, feature 1 is constant (-1.5), feature 2
    appears after time 5 (1.5); the 17 other features are irrelevant."""
    rng = np.random.default_rng(seed)
    W = np.zeros((d, m))
    W[0] = np.where(np.arange(m) < 4, 1.0, 2.0)
    W[1] = -1.5
    W[2] = np.where(np.arange(m) < 6, 0.0, 1.5)
    Xs = [rng.standard_normal((n, d)) for _ in range(m)]
    ys = [X @ W[:, k] + noise * rng.standard_normal(n) for k, X in enumerate(Xs)]
    return Xs, ys, W


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_planted_change_points_recovered_by_cfsgl(seed):
    """The fused term makes trajectories piecewise constant: the constant feature has no
    jump, the two stepping features have their largest jump at the true change point, the
    selected features are exactly the true ones; without the fused term (alpha_fused = 0)
    the rows jump at almost every time point.

    alpha_group = 0.2 is near the noise level of a gradient row (sigma sqrt(m / n) ~ 0.3,
    reduced by the l1 and fused terms); alpha_fused = 0.4 is below the true steps (1 and
    1.5, times the loss curvature 1 of standardized features), so they survive while
    noise-level jumps are fused. (Measured over 6 seeds: all pass.)
    """
    Xs, ys, W = _change_points(seed)
    est = mt.FusedSparseGroupLassoRegressor(0.2, 0.4, 0.05).fit(Xs, ys)
    C = est.coef_.T
    assert list(est.selected_features_) == [0, 1, 2]
    assert np.all(np.diff(C[1]) == 0)
    assert int(np.argmax(np.abs(np.diff(C[0])))) == 3
    assert int(np.argmax(np.abs(np.diff(C[2])))) == 5
    unfused = mt.FusedSparseGroupLassoRegressor(0.2, 0.0, 0.05).fit(Xs, ys).coef_.T
    assert min(np.count_nonzero(np.diff(unfused[j])) for j in range(3)) >= 5


# ----------------------------------------------------------------------------- alpha_max
@pytest.mark.parametrize("classification", [False, True])
def test_alpha_max_and_default_grids(classification):
    Xs, ys = _problem(0, classification)
    tgl = mt.TemporalGroupLassoClassifier if classification else mt.TemporalGroupLassoRegressor
    fsgl = (mt.FusedSparseGroupLassoClassifier if classification
            else mt.FusedSparseGroupLassoRegressor)
    # every strength is searched: cFSGL's alpha_l1 too (it stayed at its set value)
    # about n_alphas / 3 outer points: 3 values of one other strength, 2 x 2 of two
    for est, others, n_each in ((tgl(alpha_smooth=0.5), ["alpha_smooth"], 3),
                                (fsgl(alpha_fused=0.02, alpha_l1=0.01),
                                 ["alpha_fused", "alpha_l1"], 2)):
        top = est.alpha_max(Xs, ys)
        at = est.set_params(alpha_group=top * (1 + 1e-9), tol=1e-10).fit(Xs, ys)
        assert np.all(at.coef_ == 0)
        assert np.any(est.set_params(alpha_group=0.9 * top).fit(Xs, ys).coef_ != 0)
        grid = est.default_grid(Xs, ys, n_alphas=10)
        assert list(grid) == ["alpha_group", *others]
        assert grid["alpha_group"][0] == pytest.approx(top)
        assert all(len(grid[o]) == n_each for o in others)
        if "alpha_l1" in grid:
            # the l1 term alone zeroes W at every alpha_group from max |G| on: not searched
            top_l1 = mt.IndependentLassoClassifier().alpha_max(Xs, ys) if classification \
                else mt.IndependentLassoRegressor().alpha_max(Xs, ys)
            assert np.all(grid["alpha_l1"] < 0.1 * top_l1)
            assert np.all(est.set_params(alpha_l1=top_l1 * (1 + 1e-9), alpha_group=0.0)
                          .fit(Xs, ys).coef_ == 0)


def test_warm_started_path_and_multitask_cv_on_long_format(datagen):
    Xs, ys = _problem(1, False)
    est = mt.FusedSparseGroupLassoRegressor(alpha_fused=0.1, alpha_l1=0.03, tol=1e-10,
                                            max_iter=100_000)
    path = mt.model_selection.regularization_path(est, Xs, ys, n_alphas=4)
    assert path.param == "alpha_group" and np.all(path.coefs[0] == 0)
    cold = mt.FusedSparseGroupLassoRegressor(path.grid[-1], 0.1, 0.03, tol=1e-10,
                                             max_iter=100_000).fit(Xs, ys)
    np.testing.assert_allclose(path.coefs[-1], cold.coef_, atol=1e-7)
    X, y, task = datagen.lists_to_long(Xs, ys)
    cv = mt.MultiTaskCV(mt.TemporalGroupLassoRegressor(), n_alphas=3, cv=3).fit(X, y, task=task)
    assert cv.path_param_ == "alpha_group"
    assert set(cv.best_params_) == {"alpha_group", "alpha_smooth"}


# ----------------------------------------------------------------------------- formats
def test_time_order_of_long_format_labels_and_formats(datagen):
    """Long format orders the time points by their sorted labels (tasks_), whatever the
    order of the rows; per-task lists keep the list order."""
    Xs, ys = _problem(2, False)
    months = [0, 6, 12, 24, 36]
    ref = mt.TemporalGroupLassoRegressor(0.1, 0.3, tol=1e-10).fit(Xs, ys)
    X, y, task = datagen.lists_to_long(Xs, ys, labels=months)
    long = mt.TemporalGroupLassoRegressor(0.1, 0.3, tol=1e-10).fit(X, y, task=task)
    assert list(long.tasks_) == months
    np.testing.assert_allclose(long.coef_, ref.coef_, atol=1e-7)
    sparse = mt.FusedSparseGroupLassoRegressor(0.1, 0.1, 0.01, tol=1e-10).fit(
        sp.csr_matrix(X), y, task=task)
    dense = mt.FusedSparseGroupLassoRegressor(0.1, 0.1, 0.01, tol=1e-10).fit(Xs, ys)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, atol=1e-7)
    np.testing.assert_allclose(sparse.intercept_, dense.intercept_, atol=1e-7)
    assert np.any(dense.intercept_ != 0)
    Xsh, Y = datagen.shared()
    assert mt.TemporalGroupLassoRegressor().fit(Xsh, Y).predict(Xsh).shape == Y.shape


def test_grid_search_on_long_format_and_model_files(tmp_path, datagen):
    from sklearn.model_selection import GridSearchCV

    from multitask.persistence import load_model, save_model

    Xs, ys = datagen.classification_lists()
    X, y, task = datagen.lists_to_long(Xs, ys)
    Xt = np.column_stack([X, task])
    gs = GridSearchCV(mt.FusedSparseGroupLassoClassifier(task_column=-1),
                      {"alpha_group": [0.001, 0.05], "alpha_fused": [0.001, 0.1]}, cv=3)
    gs.fit(Xt, y)
    assert set(gs.best_params_) == {"alpha_group", "alpha_fused"}
    for est in (mt.TemporalGroupLassoClassifier().fit(X, y, task=task),
                mt.FusedSparseGroupLassoClassifier().fit(X, y, task=task)):
        back = load_model(save_model(est, tmp_path / f"{type(est).__name__}.skops"))
        np.testing.assert_array_equal(back.predict_proba(X, task=task),
                                      est.predict_proba(X, task=task))
