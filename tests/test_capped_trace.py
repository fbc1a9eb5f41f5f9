"""Capped trace norm (RAMUSA): penalties, the multi-stage solver, estimators.

The model is the :class:`~multitask.penalties.CappedTraceNorm` penalty solved by
:class:`~multitask.solvers.Multistage` (stage solvers ``"prox"``, partial singular value
thresholding, and ``"dc"``, the paper's difference-of-convex Algorithm 2). A single stage is a
``Multistage`` run with ``n_stages=1`` (from zero: the trace norm; from a start point
``first_stage="start"``: the stage penalty of that point).

References: cvxpy (CLARABEL) for the convex problems (stage 1 and the DC inner problem Eq. 4 of
Han & Zhang), closed forms (per-task least squares, perturbation tests of the prox), the
majorization inequality. Tolerances are stated at each assertion.
"""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from multitask.data import as_multitask_data
from multitask.estimators.baselines import TraceNormRegressor
from multitask.estimators.capped_trace import CappedTraceClassifier, CappedTraceRegressor
from multitask.losses import Logistic, Squared
from multitask.model_selection import regularization_path
from multitask.penalties import TraceNorm, svt
from multitask.penalties.capped_trace import (
    CappedTraceNorm,
    LinearizedTruncatedTraceNorm,
    TruncatedTraceNorm,
    capped_rank,
    psvt,
    singular_values,
    top_singular_projector,
)
from multitask.solvers import Multistage, ProximalGradient


def _low_rank_lists(seed=0, sizes=(40, 35, 50, 45, 30), d=6, rank=2, noise=0.3, shift=True):
    rng = np.random.default_rng(seed)
    m = len(sizes)
    W = 2.0 * rng.standard_normal((d, rank)) @ rng.standard_normal((rank, m))
    Xs = [rng.standard_normal((n, d)) + (0.5 * rng.standard_normal(d) if shift else 0)
          for n in sizes]
    ys = [X @ W[:, t] + (t - 2.0 if shift else 0.0) + noise * rng.standard_normal(len(X))
          for t, X in enumerate(Xs)]
    return Xs, ys, W


def _datafit(Xs, ys, fit_intercept=True, loss=Squared):
    data, _ = as_multitask_data(Xs, ys, classification=loss is not Squared)
    return loss(data, fit_intercept)


def _trace_max(df):
    """The smallest trace-norm strength with ``W = 0`` optimal (``||grad f(0)||_2``)."""
    return TraceNorm(1.0).alpha_max(df.grad_at_zero())


def _capped_objective(df, W, b, lam, tau):
    return df.value(W, b) + CappedTraceNorm(lam, tau).value(W)


def _stage(df, lam, W_ref=None, **kw):
    """One stage of the multi-stage method: the stage penalty of ``W_ref`` (the trace norm
    when ``W_ref`` is None), solved from ``W_ref``. The cap ``tau`` is placed between the
    singular values so that the stage keeps ``r`` of them, ``r`` given by ``rank=``."""
    rank = kw.pop("rank", 0)
    if W_ref is None:
        tau = np.inf
        solver = Multistage(n_stages=1, **kw)
        return solver.solve(df, CappedTraceNorm(lam, tau))
    s = singular_values(W_ref)
    tau = np.sqrt(s[rank - 1] * s[rank]) if rank else np.inf
    pen = CappedTraceNorm(lam, tau)
    assert pen.stage_key(W_ref) == rank
    solver = Multistage(n_stages=1, first_stage="start", **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # one stage: the key may change
        return solver.solve(df, pen, coef_init=W_ref)


# ----------------------------------------------------------------------------- prox operators
def test_psvt_is_the_global_prox_by_perturbation():
    rng = np.random.default_rng(0)
    V = rng.standard_normal((7, 5))
    mu, r = 0.8, 2
    X = psvt(V, mu, r)

    def h(Z):
        return 0.5 * np.sum((Z - V) ** 2) + mu * singular_values(Z)[r:].sum()

    h0 = h(X)
    gaps = [h(X + eps * rng.standard_normal(X.shape)) - h0
            for eps in (1e-4, 1e-2, 1e-1, 1.0) for _ in range(100)]
    assert min(gaps) >= -1e-12
    # closed form on the singular values
    s = singular_values(V)
    expected = np.r_[s[:r], np.maximum(s[r:] - mu, 0)]
    np.testing.assert_allclose(np.sort(singular_values(X))[::-1], expected, atol=1e-12)


def test_psvt_limits():
    rng = np.random.default_rng(1)
    V = rng.standard_normal((4, 6))
    np.testing.assert_allclose(psvt(V, 0.7, 0), svt(V, 0.7), atol=1e-13)
    np.testing.assert_array_equal(psvt(V, 0.7, 4), V)
    V0 = V.copy()
    psvt(V, 0.7, 2)
    np.testing.assert_array_equal(V, V0)  # input not modified
    with pytest.raises(ValueError, match="rank"):
        psvt(V, 0.1, -1)


def test_linearized_prox_matches_cvxpy():
    rng = np.random.default_rng(2)
    V = rng.standard_normal((5, 4))
    P = top_singular_projector(rng.standard_normal((5, 4)), 2)
    pen = LinearizedTruncatedTraceNorm(0.6, P)
    X = pen.prox(V, 0.5)  # argmin 0.5||X - V||^2 + 0.3 (||X||_* - <P, X>)
    Z = cp.Variable((5, 4))
    obj = 0.5 * cp.sum_squares(Z - V) + 0.3 * (cp.normNuc(Z) - cp.sum(cp.multiply(P, Z)))
    cp.Problem(cp.Minimize(obj)).solve(solver=cp.CLARABEL)
    np.testing.assert_allclose(X, Z.value, atol=1e-6)


def test_majorization_and_ky_fan():
    rng = np.random.default_rng(3)
    for _ in range(20):
        W = rng.standard_normal((6, 4)) * rng.uniform(0.1, 3)
        s = singular_values(W)
        tau = rng.uniform(0.1, 3)
        capped = np.minimum(s, tau).sum()
        for r in range(5):
            assert capped <= r * tau + s[r:].sum() + 1e-12
        r = capped_rank(W, tau)
        assert capped == pytest.approx(r * tau + s[r:].sum(), rel=1e-12)
        # Lemma 1: <U_r V_r^T, W> = ||W||_{r+} and <P, Z> <= ||Z||_{r+}
        P = top_singular_projector(W, 2)
        assert np.vdot(P, W) == pytest.approx(s[:2].sum(), rel=1e-12)
        Z = rng.standard_normal((6, 4))
        assert np.vdot(P, Z) <= singular_values(Z)[:2].sum() + 1e-12


def test_penalty_values():
    rng = np.random.default_rng(4)
    W = rng.standard_normal((5, 3))
    s = singular_values(W)
    assert CappedTraceNorm(2.0, 0.9).value(W) == pytest.approx(2 * np.minimum(s, 0.9).sum())
    assert CappedTraceNorm(2.0, np.inf).value(W) == pytest.approx(2 * s.sum())
    assert TruncatedTraceNorm(2.0, 1).value(W) == pytest.approx(2 * s[1:].sum())
    # value after prox uses the cached singular values: must equal a fresh computation
    pen = TruncatedTraceNorm(1.5, 1)
    X = pen.prox(W, 0.3)
    assert pen.value(X) == pytest.approx(1.5 * singular_values(X)[1:].sum(), rel=1e-12)
    X2 = X.copy()
    X2[0, 0] += 1.0
    assert pen.value(X2) == pytest.approx(1.5 * singular_values(X2)[1:].sum(), rel=1e-12)
    with pytest.raises(NotImplementedError):
        CappedTraceNorm(1.0, 1.0).prox(W, 1.0)
    with pytest.raises(ValueError, match="rank"):
        TruncatedTraceNorm(1.0, -2)


# ----------------------------------------------------------------------------- vs cvxpy
def _cvxpy_squared(Xs, ys, lam, P):
    d, m = Xs[0].shape[1], len(Xs)
    W = cp.Variable((d, m))
    b = cp.Variable(m)
    loss = sum(cp.sum_squares(X @ W[:, t] + b[t] - y) / (2 * len(y))
               for t, (X, y) in enumerate(zip(Xs, ys, strict=True)))
    obj = loss + lam * cp.normNuc(W) - lam * cp.sum(cp.multiply(P, W))
    prob = cp.Problem(cp.Minimize(obj))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return prob.value, W.value


@pytest.mark.parametrize("rank", [0, 1, 2])
def test_inner_convex_problem_matches_cvxpy(rank):
    """Eq. (4): min f(W) + lam ||W||_* - lam <U_r V_r^T, W>, P from a stage iterate."""
    Xs, ys, _ = _low_rank_lists(seed=5)
    df = _datafit(Xs, ys)
    lam = 0.3 * _trace_max(df)
    W_t = _stage(df, lam, tol=1e-9).W  # a realistic point: the trace-norm solution
    P = top_singular_projector(W_t, rank)
    pen = LinearizedTruncatedTraceNorm(lam, P)
    res = ProximalGradient(tol=1e-10, max_iter=20000).solve(df, pen, coef_init=W_t)
    assert res.converged and res.optimality <= 1e-10
    ours = df.value(res.W) + pen.value(res.W)
    ref, W_ref = _cvxpy_squared(Xs, ys, lam, P)
    assert abs(ours - ref) <= 1e-6 * abs(ref)
    assert ours <= ref + 1e-7 * abs(ref)  # a first-order method should not be worse
    np.testing.assert_allclose(res.W, W_ref, atol=1e-4 * np.abs(W_ref).max())


def test_stage_one_logistic_matches_cvxpy():
    rng = np.random.default_rng(6)
    d, sizes = 5, (40, 50, 45)
    W0 = rng.standard_normal((d, 1)) @ rng.standard_normal((1, 3))
    Xs = [rng.standard_normal((n, d)) for n in sizes]
    ys = [(X @ W0[:, t] + rng.standard_normal(len(X)) > 0).astype(int) for t, X in enumerate(Xs)]
    df = _datafit(Xs, ys, loss=Logistic)
    lam = 0.2 * _trace_max(df)
    res = _stage(df, lam, tol=1e-10, max_iter=20000)
    assert res.info["stage_keys"] == [0] and res.optimality <= 1e-10
    ours = df.value(res.W, res.intercept_variable) + lam * singular_values(res.W).sum()
    W = cp.Variable((d, 3))
    b = cp.Variable(3)
    loss = sum(cp.sum(cp.logistic(-cp.multiply(2 * y - 1, X @ W[:, t] + b[t]))) / len(y)
               for t, (X, y) in enumerate(zip(Xs, ys, strict=True)))
    prob = cp.Problem(cp.Minimize(loss + lam * cp.normNuc(W)))
    prob.solve(solver=cp.CLARABEL)
    assert abs(ours - prob.value) <= 1e-6 * abs(prob.value)


class _Recording(ProximalGradient):
    """FISTA that keeps every solution it returns: the DC iterates of a stage."""

    solutions: list = []

    def solve(self, datafit, penalty, **kw):
        res = super().solve(datafit, penalty, **kw)
        _Recording.solutions.append(res.W.copy())
        return res


def test_dc_stage_is_a_fixed_point_of_the_inner_problem():
    """After the DC stage solver, W^(l) solves Eq. (4) with P from itself (cvxpy)."""
    Xs, ys, _ = _low_rank_lists(seed=7)
    df = _datafit(Xs, ys)
    lam = 0.3 * _trace_max(df)
    W1 = _stage(df, lam, tol=1e-10).W
    r = 1
    _Recording.solutions = []
    inner = _Recording(tol=1e-12, max_iter=20000)
    res = _stage(df, lam, W1, rank=r, stage_solver="dc", inner=inner, tol=1e-12,
                 dc_tol=1e-10, dc_max_iter=200)
    assert res.info["stage_keys"] == [r] and res.info["stage_dc_iters"][0] >= 2
    P = top_singular_projector(res.W, r)
    ref, W_ref = _cvxpy_squared(Xs, ys, lam, P)
    ours = df.value(res.W) + LinearizedTruncatedTraceNorm(lam, P).value(res.W)
    assert abs(ours - ref) <= 1e-6 * abs(ref)
    np.testing.assert_allclose(res.W, W_ref, atol=1e-3 * np.abs(W_ref).max())
    # the stage objective never increased along the DC iterations
    stage = TruncatedTraceNorm(lam, r)
    Q = np.array([df.value(W) + stage.value(W) for W in [W1, *_Recording.solutions]])
    assert len(Q) == res.info["stage_dc_iters"][0] + 1
    assert np.all(np.diff(Q) <= 1e-12 * abs(Q[0]))


def test_dc_and_psvt_reach_the_same_stage_solution():
    Xs, ys, _ = _low_rank_lists(seed=8, sizes=(60, 70, 80, 65, 75))
    df = _datafit(Xs, ys)
    lam = 0.2 * _trace_max(df)
    W1 = _stage(df, lam, tol=1e-10).W
    a = _stage(df, lam, W1, rank=1, stage_solver="prox", tol=1e-10, max_iter=20000)
    b = _stage(df, lam, W1, rank=1, stage_solver="dc", tol=1e-10, max_iter=20000,
               dc_tol=1e-10, dc_max_iter=200)
    obj_a = df.value(a.W) + TruncatedTraceNorm(lam, 1).value(a.W)
    obj_b = df.value(b.W) + TruncatedTraceNorm(lam, 1).value(b.W)
    assert obj_a == pytest.approx(obj_b, rel=1e-7)
    np.testing.assert_allclose(a.W, b.W, atol=1e-4 * np.abs(a.W).max())
    # the prox stage stops on the optimality measure of its (non-convex) stage problem
    assert a.optimality <= 1e-10


# ----------------------------------------------------------------------------- multi-stage
@pytest.mark.parametrize("solver", ["prox", "dc"])
@pytest.mark.parametrize("tau_rel", [0.05, 0.3, 0.7])
def test_objective_non_increasing_across_stages(solver, tau_rel):
    Xs, ys, _ = _low_rank_lists(seed=9, noise=1.0)
    df = _datafit(Xs, ys)
    lam = 0.15 * _trace_max(df)
    s1 = singular_values(_stage(df, lam).W)
    tau = tau_rel * s1[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = Multistage(stage_solver=solver, n_stages=10).solve(df, CappedTraceNorm(lam, tau))
    F = res.objective
    assert len(F) >= 2  # tau below sigma_1 of stage 1: at least one more stage
    assert np.all(np.diff(F) <= 1e-12 * abs(F[0]))
    assert F[-1] < F[0]  # a stage after the first one improved the capped objective
    assert F[-1] == pytest.approx(_capped_objective(df, res.W, None, lam, tau), rel=1e-12)
    assert res.info["stage_keys"][0] == 0


def test_large_tau_is_the_trace_norm_model():
    Xs, ys, _ = _low_rank_lists(seed=10)
    X_long = np.vstack(Xs)
    y_long = np.concatenate(ys)
    task = np.repeat(np.arange(len(Xs)), [len(x) for x in Xs])
    df = _datafit(Xs, ys)
    lam = 0.2 * _trace_max(df)
    ref, W_ref = _cvxpy_squared(Xs, ys, lam, np.zeros((6, 5)))
    tr = TraceNormRegressor(alpha=lam, tol=1e-10, max_iter=50000).fit(X_long, y_long, task)
    s1 = singular_values(tr.coef_.T)
    for tau in (1.01 * s1[0], 10 * s1[0], np.inf):
        model = CappedTraceRegressor(alpha=lam, tau=tau, tol=1e-10, max_iter=50000)
        model.fit(X_long, y_long, task)
        assert model.n_stages_ == 1 and model.rank_ == 0
        assert model.converged_ and model.optimality_ <= 1e-10
        np.testing.assert_allclose(model.coef_, tr.coef_, atol=1e-6 * np.abs(tr.coef_).max())
        np.testing.assert_allclose(model.intercept_, tr.intercept_, atol=1e-6)
        np.testing.assert_allclose(model.coef_.T, W_ref, atol=1e-4 * np.abs(W_ref).max())


def test_tau_zero_gives_per_task_least_squares():
    Xs, ys, _ = _low_rank_lists(seed=11)
    model = CappedTraceRegressor(alpha=0.5, tau=0.0, tol=1e-10, max_iter=50000).fit(Xs, ys)
    # tau = 0 caps every singular value, zero included: the stage penalty at W = 0 is already
    # zero (r = R = 5), so the first stage is the unpenalized fit
    assert model.ranks_[-1] == 5 and model.rank_ == 5
    for t, (X, y) in enumerate(zip(Xs, ys, strict=True)):
        A = np.hstack([X, np.ones((len(X), 1))])
        coef = np.linalg.lstsq(A, y, rcond=None)[0]
        np.testing.assert_allclose(model.coef_[t], coef[:-1], atol=1e-6)
        assert model.intercept_[t] == pytest.approx(coef[-1], abs=1e-6)


def test_regularization_path_matches_cold_fits():
    """Paths go through the estimator (warm starts along alpha, strongest first): every point
    is the solution of a cold multi-stage fit at that alpha, with the same final rank."""
    Xs, ys, _ = _low_rank_lists(seed=12, noise=1.0)
    df = _datafit(Xs, ys)
    alphas = _trace_max(df) * np.array([0.5, 0.2, 0.1])
    kw = {"tol": 1e-10, "max_iter": 20000}
    for tau in (1e-3, 0.5, 2.0, 5.0, np.inf):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            path = regularization_path(CappedTraceRegressor(tau=tau, **kw), Xs, ys,
                                       param_name="alpha", values=alphas)
            for i, alpha in enumerate(alphas):
                cold = CappedTraceRegressor(alpha=alpha, tau=tau, **kw).fit(Xs, ys)
                scale = max(1.0, np.abs(cold.coef_).max())
                np.testing.assert_allclose(path.coefs[i], cold.coef_, atol=1e-5 * scale)
                np.testing.assert_allclose(path.intercepts[i], cold.intercept_,
                                           atol=1e-5 * scale)
                assert capped_rank(path.coefs[i], tau) == cold.rank_


def test_keep_stages_and_warning():
    Xs, ys, _ = _low_rank_lists(seed=13, noise=1.0)
    df = _datafit(Xs, ys)
    lam = 0.1 * _trace_max(df)
    res = Multistage(keep_stages=True, n_stages=10).solve(df, CappedTraceNorm(lam, 0.5))
    assert len(res.info["stage_coefs"]) == res.info["n_stages"]
    np.testing.assert_array_equal(res.info["stage_coefs"][-1], res.W)
    with pytest.warns(ConvergenceWarning):
        Multistage(max_iter=2).solve(df, CappedTraceNorm(lam, 0.5))


# ----------------------------------------------------------------------------- estimators
def test_estimator_formats_and_attributes(regression_lists, shared_regression):
    Xs, ys = regression_lists
    m = CappedTraceRegressor(alpha=0.05, tau=1.0).fit(Xs, ys)
    assert m.coef_.shape == (3, 6) and m.intercept_.shape == (3,)
    assert m.objective_.shape == (m.n_stages_,) and m.ranks_[0] == 0
    assert m.rank_ == int(np.sum(m.singular_values_ >= 1.0))
    X, Y = shared_regression
    X0, Y0 = X.copy(), Y.copy()
    m2 = CappedTraceRegressor(alpha=0.05, tau=1.0).fit(X, Y)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(Y, Y0)
    assert m2.predict(X).shape == Y.shape
    assert m2.alpha_max(X, Y) > 0
    big = CappedTraceRegressor(alpha=1.001 * m2.alpha_max(X, Y), tau=0.1).fit(X, Y)
    np.testing.assert_allclose(big.coef_, 0.0, atol=1e-10)


def test_classifier_fits(classification_lists):
    Xs, ys = classification_lists
    for loss in ("squared", "logistic", "squared_hinge"):
        clf = CappedTraceClassifier(alpha=0.05, tau=0.5, loss=loss, max_iter=500)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf.fit(Xs, ys)
        acc = np.mean(np.concatenate(clf.predict(Xs)) == np.concatenate(ys))
        assert acc > 0.75


@pytest.mark.parametrize(
    "params, match",
    [
        ({"alpha": -1.0}, "alpha"),
        ({"tau": -0.5}, "tau"),
        ({"tau": np.nan}, "tau"),
        ({"tau": "big"}, "tau"),
        ({"n_stages": 0}, "n_stages"),
        ({"n_stages": 2.5}, "n_stages"),
        ({"stage_solver": "admm"}, "stage_solver"),
        ({"max_iter": 0}, "max_iter"),
        ({"tol": 0.0}, "tol"),
    ],
)
def test_bad_parameters(params, match, shared_regression):
    X, Y = shared_regression
    with pytest.raises(ValueError, match=match):
        CappedTraceRegressor(**params).fit(X, Y)


def test_bad_loss(classification_lists):
    Xs, ys = classification_lists
    with pytest.raises(ValueError, match="loss"):
        CappedTraceClassifier(loss="hinge").fit(Xs, ys)
