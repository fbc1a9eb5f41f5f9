"""The dirty model on ``W`` alone: the infimal-convolution norm and the estimators that use it.

``N(W) = sum_j min_{p + q = W_j.} a ||p||_s + c ||q||_1`` (``s = inf`` or 2) is checked
against references that do not use its formulas:

* its value against cvxpy's minimum over the split and against cvxpy's maximum of ``<u, w>``
  over the intersection of the two dual balls, and against random splits (none is cheaper);
* its split ``(P, Q)``: ``P + Q = W`` and the parts cost ``N(W)``;
* its prox against cvxpy's solve of the prox problem on ``(x, p)``, and through Moreau's
  identity with an optimality certificate: ``u = (v - x) / step`` lies in the dual ball and
  ``<u, x> = N(x)`` (so ``v - x`` is in ``step dN(x)``);
* the projection onto the intersection of the balls against cvxpy;
* its dual norm against the gauge found by bisection on the prox
  (:func:`~multitask.penalties.base.gauge_by_prox`), and ``alpha_max``.

The estimators: the fitted ``(P, Q)`` attains the stacked problem's optimum (cvxpy), the
components and ``coef_variable_`` keep their shapes and sum to ``coef_``, warm starts resume
from the parts, the solver choice, and ``converged_`` is False when ``max_iter`` stops first.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import multitask as mt
from multitask.penalties import DirtyModel, DirtyNorm
from multitask.penalties.base import gauge_by_prox
from multitask.penalties.row_operators import dirty_project_row

cp = pytest.importorskip("cvxpy")

PRECISE = {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12}
QS = (np.inf, 2.0)


def _rows(seed: int, m: int = 7, n: int = 6) -> np.ndarray:
    """Rows with ties, zeros and mixed scales."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((n, m)) * rng.uniform(0.1, 3.0, (n, 1))
    W[0, :3] = 1.5  # ties
    W[1, ::2] = 0.0  # zeros
    W[2] = -W[2, 0]  # one constant row
    W[3] = 0.0
    return W


# (alpha_group, alpha_l1): a / c below 1, an integer, between 1 and m (sqrt(m) for q = 2),
# and above m: every regime of the intersection of the two balls
STRENGTHS = [(0.3, 1.0), (2.0, 1.0), (2.5, 1.0), (4.7, 0.9), (20.0, 1.0)]


def _cost(a, c, q, P, Q):
    return a * float(np.linalg.norm(P, np.inf if q == np.inf else 2, axis=1).sum()) + c * float(
        np.abs(Q).sum())


@pytest.mark.parametrize("q", QS)
@pytest.mark.parametrize("a,c", STRENGTHS)
def test_value_is_the_infimal_convolution_and_the_support_function(q, a, c):
    W = _rows(1)
    N = DirtyNorm(a, c, q)
    qn = "inf" if q == np.inf else 2
    for j, w in enumerate(W):
        p = cp.Variable(len(w))
        low = cp.Problem(cp.Minimize(a * cp.norm(p, qn) + c * cp.norm(w - p, 1)))
        low.solve(solver=cp.CLARABEL, **PRECISE)
        u = cp.Variable(len(w))
        dual_q = 1 if q == np.inf else 2
        high = cp.Problem(cp.Maximize(u @ w), [cp.norm(u, dual_q) <= a, cp.norm(u, "inf") <= c])
        high.solve(solver=cp.CLARABEL, **PRECISE)
        value = N.value(w[None, :])
        scale = max(1.0, abs(low.value))
        assert abs(value - low.value) <= 1e-8 * scale, (j, value, low.value)
        assert abs(value - high.value) <= 1e-8 * scale, (j, value, high.value)
    assert N.value(W) == pytest.approx(sum(N.value(w[None, :]) for w in W), rel=1e-14)


@pytest.mark.parametrize("q", QS)
@pytest.mark.parametrize("a,c", STRENGTHS)
def test_split_attains_the_norm_and_no_random_split_is_cheaper(q, a, c):
    W = _rows(2)
    N = DirtyNorm(a, c, q)
    P, Q = N.split(W)
    np.testing.assert_allclose(P + Q, W, rtol=0, atol=1e-15 * np.abs(W).max())
    value = N.value(W)
    assert _cost(a, c, q, P, Q) == pytest.approx(value, rel=1e-12, abs=1e-14)
    rng = np.random.default_rng(3)
    for _ in range(200):
        Pr = P + rng.standard_normal(W.shape) * rng.choice([1e-3, 1e-1, 1.0])
        assert _cost(a, c, q, Pr, W - Pr) >= value * (1 - 1e-12)


def test_split_edge_strengths():
    W = _rows(4)
    P, Q = DirtyNorm(1.0, 0.0).split(W)  # no price on Q: everything is Q
    assert not P.any() and np.array_equal(Q, W)
    P, Q = DirtyNorm(0.0, 1.0, 2.0).split(W)  # no price on P: everything is P
    assert np.array_equal(P, W) and not Q.any()
    assert DirtyNorm(0.0, 1.0).value(W) == 0.0 == DirtyNorm(1.0, 0.0).value(W)


@pytest.mark.parametrize("q", QS)
@pytest.mark.parametrize("a,c", STRENGTHS)
@pytest.mark.parametrize("step", [0.3, 1.7])
def test_prox_against_cvxpy_and_its_optimality_certificate(q, a, c, step):
    V = 2.0 * _rows(5)
    N = DirtyNorm(a, c, q)
    X = N.prox(V, step)
    qn = "inf" if q == np.inf else 2
    for j, v in enumerate(V):
        x, p = cp.Variable(len(v)), cp.Variable(len(v))
        prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(x - v)
                                      + step * (a * cp.norm(p, qn) + c * cp.norm(x - p, 1))))
        prob.solve(solver=cp.CLARABEL, **PRECISE)
        np.testing.assert_allclose(X[j], x.value, rtol=0, atol=2e-6 * max(1.0, np.abs(v).max()))
    # Moreau: u = (V - X) / step is in the dual ball and <u, X_j> = N(X_j): V - X in step dN(X)
    U = (V - X) / step
    dual = np.abs(U).sum(axis=1) if q == np.inf else np.linalg.norm(U, axis=1)
    assert np.all(dual <= a * (1 + 1e-12)) and np.all(np.abs(U) <= c * (1 + 1e-12))
    for j in range(V.shape[0]):
        assert float(U[j] @ X[j]) == pytest.approx(N.value(X[j:j + 1]), rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("q", QS)
@pytest.mark.parametrize("a,c", STRENGTHS)
def test_projection_onto_the_intersection_against_cvxpy(q, a, c):
    """Ours is feasible and no farther from ``v`` than cvxpy's point (whose distance to the
    projection is at most the square root of the difference of the squared distances, the
    objective being 2-strongly convex)."""
    V = 1.5 * _rows(6)
    out = np.empty(V.shape[1])
    dual_q = 1 if q == np.inf else 2
    for v in V:
        dirty_project_row(v, a, c, q == np.inf, out)
        assert np.linalg.norm(out, dual_q) <= a * (1 + 1e-13) + 1e-15
        assert np.abs(out).max() <= c
        u = cp.Variable(len(v))
        prob = cp.Problem(cp.Minimize(cp.sum_squares(u - v)),
                          [cp.norm(u, dual_q) <= a, cp.norm(u, "inf") <= c])
        prob.solve(solver=cp.CLARABEL, **PRECISE)
        ours, theirs = float(np.sum((out - v) ** 2)), float(np.sum((u.value - v) ** 2))
        assert ours <= theirs + 1e-10
        np.testing.assert_allclose(out, u.value, rtol=0, atol=1e-5)


@pytest.mark.parametrize("q", QS)
def test_dual_norm_alpha_max_and_certificate_bound(q):
    rng = np.random.default_rng(7)
    G = rng.standard_normal((5, 6))
    N = DirtyNorm(1.3, 0.4, q)
    assert N.dual_norm(G) == pytest.approx(gauge_by_prox(N, G), rel=1e-9)
    assert N.dual_bound(G).s_max == pytest.approx(1.0 / N.dual_norm(G), rel=1e-14)
    # alpha_max: zero is optimal exactly when the gradient is in the dual ball
    top = float(np.abs(G).max())
    model = DirtyModel(1.0, top, q)
    at = DirtyNorm(model.alpha_max(G), top, q)
    assert at.dual_norm(G) == pytest.approx(1.0, rel=1e-12)
    assert DirtyNorm(1.0, 0.5 * top, q).alpha_max(G) == np.inf
    assert np.isinf(DirtyNorm(0.0, 1.0).dual_norm(G)) and DirtyNorm(0.0, 1.0).dual_norm(0 * G) == 0


# ----------------------------------------------------------------------------- estimators
def _problem(seed, sizes=(24, 31, 18, 12), d=5):
    rng = np.random.default_rng(900 + seed)
    scales = np.logspace(-1, 1.5, d)
    P = np.zeros((d, len(sizes)))
    P[:2] = rng.standard_normal((2, len(sizes)))
    Q = np.where(rng.random((d, len(sizes))) < 0.15, 3 * rng.standard_normal((d, len(sizes))), 0)
    Xs = [rng.standard_normal((n, d)) * scales + scales for n in sizes]
    ys = [X @ ((P + Q)[:, t] / scales) + 0.5 + 0.3 * rng.standard_normal(len(X))
          for t, X in enumerate(Xs)]
    return Xs, ys


def _stacked_optimum(Xs, ys, a, c, q):
    d, m = Xs[0].shape[1], len(Xs)
    P, Q, b = cp.Variable((d, m)), cp.Variable((d, m)), cp.Variable(m)
    loss = sum(cp.sum_squares(X @ (P[:, t] + Q[:, t]) + b[t] - y) / (2 * len(y))
               for t, (X, y) in enumerate(zip(Xs, ys, strict=True)))
    pen = a * cp.sum(cp.norm(P, "inf" if q == np.inf else 2, axis=1)) + c * cp.sum(cp.abs(Q))
    prob = cp.Problem(cp.Minimize(loss + pen))
    prob.solve(solver=cp.CLARABEL, **PRECISE)
    return float(prob.value)


def _objective(est, Xs, ys):
    P, Q = est.group_component_.T, est.sparse_component_.T
    loss = sum(float(np.sum((X @ (P[:, t] + Q[:, t]) + est.intercept_[t] - y) ** 2)) / (2 * len(y))
               for t, (X, y) in enumerate(zip(Xs, ys, strict=True)))
    return loss + _cost(est.alpha_group, est.alpha_l1, est.q, P, Q)


@pytest.mark.parametrize("q", QS)
@pytest.mark.parametrize("solver", ["bcd", "admm"])
def test_estimator_parts_attain_the_stacked_optimum(q, solver):
    """Both parts nonzero: ``alpha_l1 < alpha_group < m alpha_l1`` (``sqrt(m)`` for q = 2)."""
    Xs, ys = _problem(0)
    a = 0.6 if q == np.inf else 0.4
    est = mt.DirtyModelRegressor(alpha_group=a, alpha_l1=0.25, q=q, tol=1e-10,
                                 solver=solver, max_iter=200_000).fit(Xs, ys)
    assert est.converged_ and est.certified_ and est.solver_.name == solver
    ref = _stacked_optimum(Xs, ys, a, 0.25, q)
    assert abs(_objective(est, Xs, ys) - ref) <= 1e-8 * abs(ref)
    d, m = 5, len(Xs)
    assert est.coef_variable_.shape == (2, d, m)
    np.testing.assert_array_equal(est.coef_variable_[0].T, est.group_component_)
    np.testing.assert_array_equal(est.coef_variable_[1].T, est.sparse_component_)
    np.testing.assert_allclose(est.group_component_ + est.sparse_component_, est.coef_,
                               rtol=1e-12, atol=1e-14)
    assert np.any(est.group_component_) and np.any(est.sparse_component_)
    np.testing.assert_array_equal(est.shared_features_,
                                  np.flatnonzero(np.any(est.group_component_ != 0, axis=0)))


def test_solver_choice_and_warm_start():
    Xs, ys = _problem(1)
    reg = mt.DirtyModelRegressor(alpha_group=0.6, alpha_l1=0.25).fit(Xs, ys)
    assert reg.solver_.name == "bcd" and reg.converged_
    yc = [(y > np.median(y)).astype(int) for y in ys]
    clf = mt.DirtyModelClassifier(alpha_group=0.02, alpha_l1=0.01).fit(Xs, yc)
    assert clf.solver_.name in ("fista", "mm", "newton") and clf.converged_
    assert clf.coef_variable_.shape == (2, 5, len(Xs))
    warm = mt.DirtyModelRegressor(alpha_group=0.6, alpha_l1=0.25, warm_start=True, tol=1e-9)
    warm.fit(Xs, ys)
    first = warm.n_iter_
    warm.fit(Xs, ys)  # resumes from the sum of the stored parts, already optimal
    assert warm.converged_ and warm.n_iter_ < first
    warm.set_params(alpha_group=0.5).fit(Xs, ys)
    assert warm.converged_


@pytest.mark.parametrize("q", QS)
def test_max_iter_first_means_not_converged(q):
    Xs, ys = _problem(2)
    with pytest.warns(ConvergenceWarning):
        est = mt.DirtyModelRegressor(alpha_group=0.6, alpha_l1=0.25, q=q, tol=1e-14,
                                     max_iter=2).fit(Xs, ys)
    assert not est.converged_ and est.optimality_ > 1e-14


def test_new_tasks_get_the_parts_priors():
    Xs, ys = _problem(3)
    est = mt.DirtyModelRegressor(alpha_group=0.6, alpha_l1=0.25).fit(Xs[:3], ys[:3])
    est.fit_new_tasks([Xs[3]], [ys[3]])
    assert est.coef_.shape == (4, 5) and est.coef_variable_.shape == (2, 5, 4)
    np.testing.assert_allclose(est.group_component_ + est.sparse_component_, est.coef_,
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("q", QS)
def test_reduced_norm_outside_the_recommended_range(q):
    """``reduced(n)``: the lasso from ``alpha_group = alpha_l1 n^(1 - 1/q)`` on, the l2,1 norm
    for ``q = 2`` from ``alpha_l1 = alpha_group`` on, equal to the dirty norm there (random
    rows, ties, zeros); inside the range None, and a row of equal magnitudes then costs less
    than either single norm (the bound is tight)."""
    from multitask.penalties import L1, L21

    n, c = 6, 0.7
    widest = n if q == np.inf else np.sqrt(n)
    W = _rows(5, m=n)
    top = DirtyNorm(c * widest, c, q)
    assert isinstance(top.reduced(n), L1) and top.reduced(n).alpha == c
    np.testing.assert_allclose(top.value(W), c * np.abs(W).sum(), rtol=1e-12)
    inside = DirtyNorm(c * widest * (1 - 1e-6), c, q)
    assert inside.reduced(n) is None
    flat = np.ones((1, n))
    assert inside.value(flat) < c * n * (1 - 1e-7)
    low = DirtyNorm(c, c, q)
    if q == 2:
        assert isinstance(low.reduced(n), L21) and low.reduced(n).alpha == c
        np.testing.assert_allclose(low.value(W), c * np.linalg.norm(W, axis=1).sum(),
                                   rtol=1e-12)
        assert DirtyNorm(c * 1.001, c, q).reduced(n) is None
    else:
        assert low.reduced(n) is None  # the l1,inf norm stays with the dirty norm's row prox
    assert DirtyNorm(0.0, c, q).reduced(n) is None and DirtyNorm(c, 0.0, q).reduced(n) is None


@pytest.mark.parametrize("q", QS)
def test_auto_solves_the_reduced_norm_to_the_same_optimum(q):
    """Outside Jalali et al.'s range ``solver="auto"`` minimizes the single norm the dirty
    norm equals (the lasso's or the l2,1 norm's solver) and stores the split with one part
    zero; the objective is the stacked problem's optimum (cvxpy), as with ADMM on the dirty
    norm itself."""
    Xs, ys = _problem(4)
    m = len(Xs)
    widest = m if q == np.inf else np.sqrt(m)
    cases = [(0.25 * widest * 1.5, 0.25, "group_component_")]
    if q == 2:
        cases.append((0.2, 0.3, "sparse_component_"))
    for a, c, zero_part in cases:
        auto = mt.DirtyModelRegressor(alpha_group=a, alpha_l1=c, q=q, tol=1e-10,
                                      max_iter=200_000).fit(Xs, ys)
        admm = mt.DirtyModelRegressor(alpha_group=a, alpha_l1=c, q=q, tol=1e-10,
                                      solver="admm", max_iter=200_000).fit(Xs, ys)
        assert auto.converged_ and auto.certified_ and admm.converged_
        assert not np.any(getattr(auto, zero_part))
        ref = _stacked_optimum(Xs, ys, a, c, q)
        assert abs(_objective(auto, Xs, ys) - ref) <= 1e-8 * abs(ref)
        assert abs(_objective(admm, Xs, ys) - ref) <= 1e-8 * abs(ref)
        np.testing.assert_allclose(auto.group_component_ + auto.sparse_component_,
                                   auto.coef_, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("a", [0.3, 1.0, 2.5])
def test_projection_with_tied_breakpoints_against_cvxpy(a):
    """The l1 ball's level is found by merging two sorted sets of breakpoints (``|v_i| - c``
    and ``|v_i|``): rows where they tie (repeated magnitudes, entries at the cap or at ``c``
    above another, zeros) give cvxpy's projection too."""
    c = 0.5
    rows = [np.array([1.0, -1.0, 1.0, 0.5, -0.5, 0.0, 0.0, 1.5, 1.5, -1.5]),
            np.array([0.5, 0.5, 0.5, -0.5, 0.5, 0.5, 0.5, 0.5]),
            np.array([2.0, 1.5, 1.0, 0.5, 0.0, -0.5, -1.0, -1.5, -2.0])]
    out = np.empty(10)
    for v in rows:
        o = out[:v.size]
        dirty_project_row(v, a, c, True, o)
        u = cp.Variable(v.size)
        prob = cp.Problem(cp.Minimize(cp.sum_squares(u - v)),
                          [cp.norm(u, 1) <= a, cp.norm(u, "inf") <= c])
        prob.solve(solver=cp.CLARABEL, **PRECISE)
        np.testing.assert_allclose(o, u.value, rtol=0, atol=1e-6)
        assert np.abs(o).sum() <= a * (1 + 1e-13) and np.abs(o).max() <= c


def test_the_level_search_equals_the_sorted_scan():
    """The projection's l1 level by the piece search (``_l1_cap_level``, no sorting) equals
    the scan of the sorted breakpoints (its fallback after too many passes) on random rows
    with ties, zeros, tiny and extreme ``a``."""
    from multitask.penalties import row_operators as R

    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(3000):
        m = int(rng.integers(1, 200))
        v = rng.standard_normal(m) * rng.choice([1e-3, 1.0, 1e3])
        if rng.random() < 0.3:
            v = np.round(v, 1)
        if rng.random() < 0.2:
            v[rng.random(m) < 0.5] = 0.0
        c = float(np.abs(v).max()) * rng.choice([0.01, 0.1, 0.5, 1.0, 2.0])
        inside = float(np.minimum(np.abs(v), c).sum())
        a = inside * rng.choice([rng.random(), 1 - 1e-12, 1e-9])
        if not (c > 0 and a > 0):
            continue
        t_fast = R._l1_cap_level(v, a, c, inside)
        t_sort = R._weighted_l1_cap_level_sorted(v, np.ones(m), a, c, inside)
        u_fast = np.clip(np.abs(v) - t_fast, 0, c)
        u_sort = np.clip(np.abs(v) - t_sort, 0, c)
        np.testing.assert_allclose(u_fast, u_sort, rtol=0, atol=1e-12 * np.abs(v).max())
        checked += 1
    assert checked > 2500
