"""Tests of the Euclidean projection onto the l1,inf ball (``multitask.penalties.l1inf``).

References used here, independent of the implementation under test:

* cvxpy (Clarabel): ``min ||X - A||_F^2  s.t.  sum_j t_j <= C, |X_jk| <= t_j``;
* a numpy bisection on the multiplier ``theta`` with the closed form
  ``mu_j(theta) = max(0, max_k (S_jk - theta) / k)`` (``S_jk`` = sum of the ``k`` largest
  ``|A_jk|`` of row ``j``);
* the l1-ball projection of Duchi et al. (2008) for one task, and clipping for one feature;
* a literal transcription of Figure 1 of Quattoni et al. (2009), which is wrong when a row
  vanishes; it is used only to check that the tests tell it apart.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from multitask.data import as_multitask_data
from multitask.losses import Squared
from multitask.penalties.base import Constraint
from multitask.penalties.l1inf import (
    L1InfBall,
    _project,
    l1inf_norm,
    project_l1inf_ball,
)
from multitask.solvers import optimality

METHODS = ("sort", "newton")


# ----------------------------------------------------------------------------------------------
# references
# ----------------------------------------------------------------------------------------------


def ref_bisection(A: np.ndarray, C: float, n_iter: int = 200) -> np.ndarray:
    """Projection by bisection on theta (numpy, O(n log m) per step; small inputs only)."""
    A = np.asarray(A, dtype=float)
    absA = np.abs(A)
    if absA.max(axis=1).sum() <= C:
        return A.copy()
    if C == 0:
        return np.zeros_like(A)
    srt = -np.sort(-absA, axis=1)
    S = np.cumsum(srt, axis=1)
    k = np.arange(1, A.shape[1] + 1)

    def mu(theta):
        return np.maximum(0.0, ((S - theta) / k).max(axis=1))

    lo, hi = 0.0, absA.sum(axis=1).max()
    for _ in range(n_iter):
        mid = 0.5 * (lo + hi)
        if mu(mid).sum() > C:
            lo = mid
        else:
            hi = mid
    m_ = mu(0.5 * (lo + hi))
    return np.sign(A) * np.minimum(absA, m_[:, None])


def ref_cvxpy(A: np.ndarray, C: float) -> np.ndarray:
    import cvxpy as cp

    d, m = A.shape
    X = cp.Variable((d, m))
    t = cp.Variable(d)
    cons = [cp.sum(t) <= C, cp.abs(X) <= cp.reshape(t, (d, 1), order="F") @ np.ones((1, m))]
    prob = cp.Problem(cp.Minimize(cp.sum_squares(X - A)), cons)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prob.solve(
            solver="CLARABEL",
            tol_gap_abs=1e-12,
            tol_gap_rel=1e-12,
            tol_feas=1e-12,
            tol_ktratio=1e-10,
            max_iter=500,
        )
    assert prob.status == "optimal", prob.status
    return X.value


def ref_l1_ball(v: np.ndarray, C: float) -> np.ndarray:
    """Duchi et al. (2008) projection of a vector onto the l1 ball of radius C."""
    a = np.abs(v)
    if a.sum() <= C:
        return v.copy()
    u = np.sort(a)[::-1]
    css = np.cumsum(u)
    k = np.arange(1, len(u) + 1)
    rho = np.nonzero(u * k > css - C)[0][-1]
    tau = (css[rho] - C) / (rho + 1)
    return np.sign(v) * np.maximum(a - tau, 0.0)


def literal_figure1(A: np.ndarray, C: float) -> np.ndarray:
    """Figure 1 of the paper read literally (slope 1/k kept after a row vanishes).

    Breakpoint lists with ``m + 1`` entries; returns ``sign(A) * min(|A|, mu)``.
    """
    absA = np.abs(A)
    d, m = A.shape
    delta = absA.max(axis=1).sum() - C
    events, s, r = [], [], []
    for i in range(d):
        si = np.append(np.sort(absA[i])[::-1], 0.0)
        ri = [si[:k].sum() - k * si[k] for k in range(m + 1)]
        s.append(si)
        r.append(ri)
        events += [(v, i) for v in ri]
    events.sort()
    g = np.zeros(d)
    cnt = np.zeros(d, dtype=int)
    n, r_prev, theta = 0.0, 0.0, None
    for t, (v, i) in enumerate(events):
        n += g.sum() * (v - r_prev)
        r_prev = v
        cnt[i] += 1
        g[i] = 1.0 / cnt[i]
        nxt = events[t + 1][0] if t + 1 < len(events) else np.inf
        if n + g.sum() * (nxt - v) > delta:
            theta = v + (delta - n) / g.sum()
            break
    mu = np.array(
        [max(s[i][cnt[i] - 1] - (theta - r[i][cnt[i] - 1]) / cnt[i], 0.0) for i in range(d)]
    )
    return np.sign(A) * np.minimum(absA, mu[:, None])


# ----------------------------------------------------------------------------------------------
# random instances
# ----------------------------------------------------------------------------------------------

RATIOS = (0.01, 0.1, 0.3, 0.5, 0.9, 0.999, 1.5)
FAMILIES = ("gaussian", "integer", "mixed_scale", "nonnegative", "zero_rows")


def random_instance(rng: np.random.Generator, family: str, d: int, m: int) -> np.ndarray:
    if family == "gaussian":
        return rng.standard_normal((d, m))
    if family == "integer":  # heavy ties
        return rng.integers(-3, 4, size=(d, m)).astype(float)
    if family == "mixed_scale":  # small rows next to large ones: small rows vanish
        scale = rng.choice([0.01, 0.1, 10.0], size=(d, 1))
        return rng.standard_normal((d, m)) * scale
    if family == "nonnegative":
        return rng.exponential(size=(d, m))
    if family == "zero_rows":
        A = rng.standard_normal((d, m)) * np.exp(rng.uniform(-3, 2, size=(d, 1)))
        A[rng.random(d) < 0.3] = 0.0
        A[rng.random((d, m)) < 0.2] = 0.0
        return A
    raise ValueError(family)


def cvxpy_cases(n_cases: int = 210, seed: int = 0):
    rng = np.random.default_rng(seed)
    cases = []
    for c in range(n_cases):
        family = FAMILIES[c % len(FAMILIES)]
        d = int(rng.integers(1, 9))
        m = int(rng.integers(1, 7))
        if c % 23 == 0:  # a few larger shapes up to 15
            d, m = int(rng.integers(8, 16)), int(rng.integers(8, 16))
        A = random_instance(rng, family, d, m)
        ratio = RATIOS[(c // len(FAMILIES)) % len(RATIOS)]
        cases.append((family, A, ratio * l1inf_norm(A)))
    return cases


def _objective(B, A):
    return float(np.sum((B - A) ** 2))


# ----------------------------------------------------------------------------------------------
# the paper's counterexample
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ("auto",) + METHODS)
def test_counterexample_vanishing_row(method):
    A = np.array([[10.0, 10.0], [1.0, 0.0]])
    info = _project(A, 5.0, method)
    np.testing.assert_array_equal(info.B, [[5.0, 5.0], [0.0, 0.0]])
    np.testing.assert_allclose(info.mu, [5.0, 0.0], atol=1e-14)
    if method != "auto":
        assert info.theta == pytest.approx(10.0, abs=1e-12)
    np.testing.assert_array_equal(project_l1inf_ball(-A, 5.0, method), [[-5, -5], [0, 0]])


def test_literal_figure1_is_wrong_and_detected():
    """The printed algorithm gives mu = (6.8, 0) on the counterexample, off the ball."""
    A = np.array([[10.0, 10.0], [1.0, 0.0]])
    B_lit = literal_figure1(A, 5.0)
    np.testing.assert_allclose(B_lit, [[6.8, 6.8], [0.0, 0.0]])
    assert l1inf_norm(B_lit) > 5.0 + 1
    B_ref = ref_cvxpy(A, 5.0)
    np.testing.assert_allclose(B_ref, [[5, 5], [0, 0]], atol=1e-6)
    assert np.abs(B_lit - B_ref).max() > 1.0


# ----------------------------------------------------------------------------------------------
# agreement with cvxpy
# ----------------------------------------------------------------------------------------------


def test_agrees_with_cvxpy():
    pytest.importorskip("cvxpy")
    cases = cvxpy_cases()
    assert len(cases) >= 200
    n_vanish = n_inside = n_literal_wrong = 0
    for family, A, C in cases:
        X = ref_cvxpy(A, C)
        for method in METHODS:
            info = _project(A, C, method)
            B = info.B
            err = np.abs(B - X).max()
            assert err <= 1e-6, (family, A, C, method, err)
            # ours is at least as good as the solver, and feasible to rounding
            assert _objective(B, A) <= _objective(X, A) * (1 + 1e-8) + 1e-12
            assert l1inf_norm(B) <= C * (1 + 1e-12) + 1e-15
        absA = np.abs(A)
        n_inside += l1inf_norm(A) <= C
        vanished = (absA.max(axis=1) > 0) & (np.abs(X).max(axis=1) < 1e-7)
        if vanished.any() and l1inf_norm(A) > C > 0:
            n_vanish += 1
            n_literal_wrong += np.abs(literal_figure1(A, C) - X).max() > 1e-4
    # the generator covers the cases the tests are meant for
    assert n_vanish >= 50
    assert n_inside >= 20
    # and the comparison tells the printed algorithm apart on those cases
    assert n_literal_wrong >= 0.9 * n_vanish


# ----------------------------------------------------------------------------------------------
# the two methods, the bisection reference, KKT conditions
# ----------------------------------------------------------------------------------------------


def test_sort_and_newton_agree_many_random():
    rng = np.random.default_rng(1)
    n_active = 0
    for c in range(3000):
        family = FAMILIES[c % len(FAMILIES)]
        d = int(rng.integers(1, 30))
        m = int(rng.integers(1, 30))
        A = random_instance(rng, family, d, m)
        C = rng.uniform(0.0, 1.2) * l1inf_norm(A)
        Bs = project_l1inf_ball(A, C, "sort")
        Bn = project_l1inf_ball(A, C, "newton")
        scale = max(1.0, np.abs(A).max())
        assert np.abs(Bs - Bn).max() <= 1e-10 * scale, (A, C)
        n_active += l1inf_norm(A) > C
    assert n_active > 2000


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("shape", [(200, 50), (50, 200), (1000, 3), (3, 1000), (300, 64)])
def test_agrees_with_bisection_medium(method, shape):
    rng = np.random.default_rng(hash(shape) % 2**32)
    for family in FAMILIES:
        A = random_instance(rng, family, *shape)
        for ratio in (0.001, 0.05, 0.5, 0.99):
            C = ratio * l1inf_norm(A)
            B = project_l1inf_ball(A, C, method)
            R = ref_bisection(A, C)
            assert np.abs(B - R).max() <= 1e-9 * max(1.0, np.abs(A).max()), (family, ratio)


@pytest.mark.parametrize("method", METHODS)
def test_kkt_conditions(method):
    rng = np.random.default_rng(2)
    for c in range(300):
        d, m = rng.integers(1, 40, size=2)
        A = random_instance(rng, FAMILIES[c % 5], int(d), int(m))
        norm = l1inf_norm(A)
        if norm == 0:
            continue
        C = rng.uniform(0.01, 0.99) * norm
        info = _project(A, C, method)
        absA = np.abs(A)
        tol = 1e-11 * max(1.0, absA.sum(axis=1).max())
        assert info.theta > 0
        assert info.mu.sum() == pytest.approx(C, rel=1e-12, abs=1e-14)
        removed = np.maximum(absA - info.mu[:, None], 0.0).sum(axis=1)
        alive = info.mu > 0
        np.testing.assert_allclose(removed[alive], info.theta, rtol=1e-11, atol=tol)
        assert np.all(absA.sum(axis=1)[~alive] <= info.theta + tol)
        np.testing.assert_array_equal(info.B, np.sign(A) * np.minimum(absA, info.mu[:, None]))


def test_newton_iterations_stay_few():
    rng = np.random.default_rng(3)
    for d, m in [(2000, 50), (100, 2000), (20000, 5)]:
        A = rng.standard_normal((d, m))
        for ratio in (0.01, 0.1, 0.5, 0.9):
            info = _project(A, ratio * l1inf_norm(A), "newton")
            assert info.n_iter <= 15, (d, m, ratio, info.n_iter)


# ----------------------------------------------------------------------------------------------
# special cases
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ("auto",) + METHODS)
def test_single_task_is_l1_ball_projection(method):
    rng = np.random.default_rng(4)
    for _ in range(200):
        v = rng.standard_normal(int(rng.integers(1, 40))) * rng.choice([0.1, 1, 10])
        C = rng.uniform(0.0, 1.2) * np.abs(v).sum()
        B = project_l1inf_ball(v[:, None], C, method)
        np.testing.assert_allclose(B[:, 0], ref_l1_ball(v, C), atol=1e-12 * max(1, abs(v).max()))


def test_single_task_fallback_to_general_newton(monkeypatch):
    """With one task, the column kernel hands over to the general method when it needs more
    passes than allowed; both give the l1-ball projection."""
    import multitask.penalties.l1inf as mod

    rng = np.random.default_rng(10)
    v = rng.standard_normal(500) * np.exp(rng.uniform(-3, 3, 500))
    C = 0.2 * np.abs(v).sum()
    calls = []
    general = mod._nb.thresholds_newton

    def counting(*args):
        calls.append(1)
        return general(*args)

    monkeypatch.setattr(mod._nb, "thresholds_newton", counting)
    fast = mod._project(v[:, None], C, "newton")
    assert not calls
    monkeypatch.setattr(mod, "_SINGLE_TASK_MAX_PASSES", 1)
    slow = mod._project(v[:, None], C, "newton")
    assert len(calls) == 1
    for info in (fast, slow):
        np.testing.assert_allclose(info.B[:, 0], ref_l1_ball(v, C), atol=1e-12 * abs(v).max())
        np.testing.assert_allclose(info.mu, np.abs(info.B[:, 0]), atol=1e-12 * abs(v).max())
        assert info.theta == pytest.approx(fast.theta, rel=1e-12)


@pytest.mark.parametrize("method", ("auto",) + METHODS)
def test_single_feature_is_clipping(method):
    rng = np.random.default_rng(5)
    for _ in range(200):
        w = rng.standard_normal((1, int(rng.integers(1, 40))))
        C = rng.uniform(0.0, 1.2) * np.abs(w).max()
        B = project_l1inf_ball(w, C, method)
        np.testing.assert_allclose(B, np.clip(w, -C, C), atol=1e-14)


@pytest.mark.parametrize("method", ("auto",) + METHODS)
def test_inside_ball_returns_copy(method):
    A = np.array([[1.0, -2.0], [0.5, 0.0]])
    B = project_l1inf_ball(A, 2.5, method)
    np.testing.assert_array_equal(B, A)
    assert B is not A and not np.shares_memory(A, B)
    B = project_l1inf_ball(A, 100.0, method)
    np.testing.assert_array_equal(B, A)


@pytest.mark.parametrize("method", ("auto",) + METHODS)
def test_zero_matrix_and_zero_radius(method):
    Z = np.zeros((4, 3))
    np.testing.assert_array_equal(project_l1inf_ball(Z, 1.0, method), Z)
    np.testing.assert_array_equal(project_l1inf_ball(Z, 0.0, method), Z)
    A = np.arange(12.0).reshape(4, 3) - 5
    B = project_l1inf_ball(A, 0.0, method)
    np.testing.assert_array_equal(B, np.zeros((4, 3)))
    assert B.dtype == np.float64


@pytest.mark.parametrize("method", METHODS)
def test_ties_rows_stay_flat(method):
    A = np.array([[3.0, 3.0, 3.0, 1.0], [2.0, 2.0, -2.0, 2.0], [1.0, 1.0, 1.0, 1.0]])
    for C in (0.5, 1.0, 2.0, 3.0, 4.0, 5.0):
        B = project_l1inf_ball(A, C, method)
        np.testing.assert_allclose(B, ref_bisection(A, C), atol=1e-12)
        # entries equal in a row stay equal
        np.testing.assert_allclose(np.abs(B[1]), np.abs(B[1, 0]), atol=0)
        np.testing.assert_allclose(B[0, :3], B[0, 0], atol=0)


@pytest.mark.parametrize("method", METHODS)
def test_extreme_scales(method):
    """P_{sC}(sW) = s P_C(W), also where row sums overflow or thresholds underflow."""
    rng = np.random.default_rng(6)
    for shape in [(30, 7), (30, 100)]:
        A = rng.standard_normal(shape)
        C = 1.5  # C * s stays finite; row sums of A * 1e307 with 100 tasks overflow
        B = project_l1inf_ball(A, C, method)
        for s in (2.0**-1000, 1e-300, 1e-200, 1e200, 2.0**600, 1e306, 1e307):
            with np.errstate(over="ignore"):
                Bs = project_l1inf_ball(A * s, C * s, method)
            assert np.all(np.isfinite(Bs))
            np.testing.assert_allclose(Bs / s, B, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_radius_close_to_norm(method):
    rng = np.random.default_rng(7)
    for c in range(100):
        d, m = rng.integers(1, 20, size=2)
        A = random_instance(rng, FAMILIES[c % 5], int(d), int(m))
        norm = l1inf_norm(A)
        for eps in (1e-15, 1e-12, 1e-8):
            C = norm * (1 - eps)
            B = project_l1inf_ball(A, C, method)
            assert l1inf_norm(B) <= C * (1 + 1e-14)
            assert np.abs(B - A).max() <= 10 * eps * norm + 1e-15


def test_input_not_modified_and_layouts():
    rng = np.random.default_rng(8)
    A = rng.standard_normal((20, 6))
    C = 0.2 * l1inf_norm(A)
    expected = ref_bisection(A, C)
    for method in METHODS:
        A_ro = A.copy()
        A_ro.setflags(write=False)
        B = project_l1inf_ball(A_ro, C, method)
        np.testing.assert_allclose(B, expected, atol=1e-12)
        np.testing.assert_array_equal(A_ro, A)
        # Fortran order, non-contiguous slice, integer dtype, nested lists
        np.testing.assert_allclose(
            project_l1inf_ball(np.asfortranarray(A), C, method), expected, atol=1e-12
        )
        big = np.zeros((40, 12))
        big[::2, ::2] = A
        np.testing.assert_allclose(
            project_l1inf_ball(big[::2, ::2], C, method), expected, atol=1e-12
        )
        Ai = rng.integers(-5, 6, size=(6, 4))
        np.testing.assert_allclose(
            project_l1inf_ball(Ai, 4.0, method), ref_bisection(Ai.astype(float), 4.0), atol=1e-12
        )
        np.testing.assert_allclose(
            project_l1inf_ball(Ai.tolist(), 4.0, method),
            ref_bisection(Ai.astype(float), 4.0),
            atol=1e-12,
        )


def test_empty_matrices():
    for shape in [(0, 3), (3, 0), (0, 0)]:
        B = project_l1inf_ball(np.zeros(shape), 1.0)
        assert B.shape == shape
        assert l1inf_norm(np.zeros(shape)) == 0.0


# ----------------------------------------------------------------------------------------------
# input validation
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "radius, match",
    [
        (-1.0, "non-negative"),
        (np.nan, "finite"),
        (np.inf, "finite"),
        (-np.inf, "finite"),
        ("abc", "real number"),
        (None, "real number"),
    ],
)
def test_bad_radius(radius, match):
    with pytest.raises(ValueError, match=match):
        project_l1inf_ball(np.ones((2, 2)), radius)
    with pytest.raises(ValueError, match=match):
        L1InfBall(radius)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nonfinite_input(bad):
    A = np.ones((3, 4))
    A[1, 2] = bad
    for method in ("auto",) + METHODS:
        with pytest.raises(ValueError, match="NaN or infinite"):
            project_l1inf_ball(A, 1.0, method)
        # also when the point would be inside the ball
        with pytest.raises(ValueError, match="NaN or infinite"):
            project_l1inf_ball(A, 1e300, method)


@pytest.mark.parametrize("X", [np.ones(3), np.ones((2, 2, 2)), np.float64(1.0)])
def test_wrong_dimension(X):
    with pytest.raises(ValueError, match="2-D"):
        project_l1inf_ball(X, 1.0)
    with pytest.raises(ValueError, match="2-D"):
        l1inf_norm(X)


def test_bad_method_and_dtype():
    with pytest.raises(ValueError, match="method"):
        project_l1inf_ball(np.ones((2, 2)), 1.0, method="heap")
    with pytest.raises(ValueError, match="real numbers"):
        project_l1inf_ball(np.ones((2, 2), dtype=complex), 1.0)


# ----------------------------------------------------------------------------------------------
# the constraint object
# ----------------------------------------------------------------------------------------------


def test_l1inf_ball_constraint():
    rng = np.random.default_rng(9)
    A = rng.standard_normal((10, 4))
    ball = L1InfBall(2.0)
    assert isinstance(ball, Constraint) and ball.is_constraint
    assert ball.norm(A) == pytest.approx(np.abs(A).max(axis=1).sum())
    P = ball.project(A)
    np.testing.assert_allclose(P, ref_bisection(A, 2.0), atol=1e-12)
    np.testing.assert_array_equal(ball.prox(A, 123.0), P)
    assert ball.value(P) == 0.0
    assert ball.value(A) == np.inf
    # the shared optimality measure (the projected-gradient mapping) vanishes at the
    # projection, the minimizer of 0.5 ||W - A||^2 over the ball, and nowhere else: the
    # squared loss with the design sqrt(d) I and targets sqrt(d) A is that distance
    d, m = A.shape
    data, _ = as_multitask_data(np.sqrt(d) * np.eye(d), np.sqrt(d) * A)
    df = Squared(data, fit_intercept=False)
    assert df.value(P) == pytest.approx(0.5 * np.sum((P - A) ** 2), rel=1e-12)
    assert optimality(df, ball, P, None) <= 1e-12
    assert optimality(df, ball, 0.5 * P, None) > 1e-2
    for method in METHODS:
        np.testing.assert_allclose(L1InfBall(2.0, method=method).project(A), P, atol=1e-12)


def test_l1inf_norm_values():
    A = np.array([[1.0, -3.0], [0.0, 0.0], [-2.0, 2.0]])
    assert l1inf_norm(A) == 5.0
    assert l1inf_norm(A.T) == 2.0 + 3.0
    assert l1inf_norm(A.tolist()) == 5.0
    A[1, 0] = np.nan
    assert np.isnan(l1inf_norm(A))
    A[1, 0] = -np.inf
    assert l1inf_norm(A) == np.inf
    rng = np.random.default_rng(11)
    B = rng.standard_normal((50, 7))
    assert l1inf_norm(B) == pytest.approx(np.abs(B).max(axis=1).sum(), rel=1e-15)


# ----------------------------------------------------------------------------------------------
# property-based tests
# ----------------------------------------------------------------------------------------------

_values = st.one_of(
    st.floats(-100, 100, allow_nan=False, allow_infinity=False, allow_subnormal=False),
    st.sampled_from([0.0, 1.0, -1.0, 2.0, 0.5]),  # zeros and ties
)


@st.composite
def instances(draw):
    d = draw(st.integers(1, 15))
    m = draw(st.integers(1, 15))
    A = draw(arrays(np.float64, (d, m), elements=_values))
    ratio = draw(st.one_of(st.floats(0.0, 1.5), st.sampled_from([0.0, 1e-9, 0.999999, 1.0])))
    method = draw(st.sampled_from(METHODS))
    return A, ratio * l1inf_norm(A), method


_settings = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _scale(A):
    return max(1.0, float(np.abs(A).max()))


@_settings
@given(instances())
def test_prop_feasible_and_sign_preserving(inst):
    A, C, method = inst
    B = project_l1inf_ball(A, C, method)
    assert B.shape == A.shape
    assert l1inf_norm(B) <= C * (1 + 1e-12) + 1e-12
    assert np.all(B * A >= 0)
    assert np.all(B[A == 0] == 0)
    assert np.all(np.abs(B) <= np.abs(A))
    if l1inf_norm(A) <= C:
        np.testing.assert_array_equal(B, A)


@_settings
@given(instances())
def test_prop_idempotent(inst):
    A, C, method = inst
    B = project_l1inf_ball(A, C, method)
    np.testing.assert_allclose(project_l1inf_ball(B, C, method), B, atol=1e-10 * _scale(A))


@_settings
@given(instances(), st.integers(0, 2**32 - 1))
def test_prop_nonexpansive(inst, seed):
    A, C, method = inst
    rng = np.random.default_rng(seed)
    A2 = A + rng.standard_normal(A.shape) * rng.choice([1e-3, 1.0, 30.0])
    B1 = project_l1inf_ball(A, C, method)
    B2 = project_l1inf_ball(A2, C, method)
    assert np.linalg.norm(B1 - B2) <= np.linalg.norm(A - A2) * (1 + 1e-10) + 1e-10 * _scale(A)


@_settings
@given(instances(), st.integers(0, 2**32 - 1))
def test_prop_variational_inequality(inst, seed):
    """<A - P(A), Z - P(A)> <= 0 for every Z in the ball (P(A) is the nearest point)."""
    A, C, method = inst
    rng = np.random.default_rng(seed)
    P = project_l1inf_ball(A, C, method)
    for _ in range(5):
        Z = rng.standard_normal(A.shape) * rng.choice([0.1, 1.0, 100.0])
        Z[rng.random(A.shape) < 0.3] = 0.0
        nz = l1inf_norm(Z)
        if nz > C:
            Z *= C / nz * rng.uniform(0.0, 1.0)
        if rng.random() < 0.3:  # points on the boundary too
            Z = project_l1inf_ball(Z * 10.0, C, method)
        inner = float(np.sum((A - P) * (Z - P)))
        bound = 1e-8 * max(1.0, np.linalg.norm(A - P) * np.linalg.norm(Z - P))
        assert inner <= bound


@_settings
@given(instances(), st.floats(0.01, 100.0), st.integers(0, 2**32 - 1))
def test_prop_invariances(inst, a, seed):
    """Positive homogeneity, sign symmetry, and row/column permutation equivariance."""
    A, C, method = inst
    rng = np.random.default_rng(seed)
    B = project_l1inf_ball(A, C, method)
    tol = 1e-10 * _scale(A)
    np.testing.assert_allclose(project_l1inf_ball(a * A, a * C, method), a * B, atol=tol * a)
    np.testing.assert_allclose(project_l1inf_ball(-A, C, method), -B, atol=tol)
    pr = rng.permutation(A.shape[0])
    pc = rng.permutation(A.shape[1])
    np.testing.assert_allclose(project_l1inf_ball(A[pr][:, pc], C, method), B[pr][:, pc], atol=tol)


@_settings
@given(instances())
def test_prop_matches_bisection(inst):
    A, C, method = inst
    B = project_l1inf_ball(A, C, method)
    np.testing.assert_allclose(B, ref_bisection(A, C), atol=1e-9 * _scale(A))


def test_a_single_task_on_the_boundary_is_returned_unchanged():
    """A column whose l1 norm, as ``l1inf_norm`` sums it, equals the radius is inside the ball:
    the single-task kernel's vectorized sum can exceed it in the last bit (found by a property
    test), and the column must still come back unchanged."""
    from multitask.penalties._l1inf_numba import column_stats

    rng = np.random.default_rng(0)
    for _ in range(1000):  # a column whose kernel sum exceeds the pairwise one
        A = rng.random((200, 1)) * rng.choice([1.0, 64.0, 1e3], size=(200, 1))
        if column_stats(A)[0] > l1inf_norm(A):
            break
    else:
        pytest.fail("no column with a larger kernel sum found")
    C = l1inf_norm(A)
    for method in ("auto", "newton"):
        np.testing.assert_array_equal(project_l1inf_ball(A, C, method), A)
