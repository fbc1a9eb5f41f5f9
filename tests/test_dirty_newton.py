"""Newton steps of the dirty model on the face of an iterate (``multitask.solvers.
dirty_newton``), and block coordinate descent that uses them."""

from __future__ import annotations

import numpy as np
import pytest

from multitask.data import as_multitask_data
from multitask.losses import Squared
from multitask.penalties.dirty import DirtyNorm
from multitask.solvers import bcd
from multitask.solvers.bcd import BlockCoordinateDescent
from multitask.solvers.dirty_newton import (
    ABOVE,
    BELOW,
    FIXED,
    TIED,
    dirty_face,
    dirty_newton_point,
)


def _collinear_problem(seed=0, m=6, d=6):
    """Raw features: scales from 0.1 to 30 with an offset, the constant column, a task-level
    column (constant within each task, so collinear with it there), a sparse binary one: the
    flat directions where coordinate descent crawls."""
    rng = np.random.default_rng(seed)
    scale = np.array([1.0, 30.0, 0.1, 1.0, 1.0, 1.0])[:d]
    shift = np.array([0.0, 50.0, 0.0, 0.0, 0.0, 0.0])[:d]
    W0 = rng.standard_normal((d, m)) + 1.0
    Xs, ys = [], []
    for t in range(m):
        n = int(rng.integers(15, 40))
        X = rng.standard_normal((n, d)) * scale + shift
        X[:, 3] = 1.0
        X[:, 4] = rng.uniform(0.5, 2.0)
        X[:, 5] = rng.random(n) < 0.2
        Xs.append(X)
        ys.append(X @ W0[:, t] + 0.5 * rng.standard_normal(n))
    return Squared(as_multitask_data(Xs, ys)[0], fit_intercept=False)


def _objective(df, pen, W):
    return df.value(W) + pen.value(W)


def _cvxpy_optimum(df, pen):
    """The optimum of ``F(P + Q) + a ||P||_{1,s} + c ||Q||_1`` by cvxpy (the split form)."""
    cp = pytest.importorskip("cvxpy")
    H, C = df.quadratic_form()
    d, m = C.shape
    P = cp.Variable((d, m))
    Q = cp.Variable((d, m))
    W = P + Q
    quad = 0
    for t in range(m):
        Ht = H[0] if H.shape[0] == 1 else H[t]
        L = np.linalg.cholesky(Ht + 1e-12 * np.eye(d) * np.trace(Ht))
        quad += 0.5 * cp.sum_squares(L.T @ W[:, t]) - C[:, t] @ W[:, t]
    group = (cp.sum(cp.max(cp.abs(P), axis=1)) if pen.q == np.inf
             else cp.sum(cp.norm(P, 2, axis=1)))
    prob = cp.Problem(cp.Minimize(quad + pen.alpha_group * group
                                  + pen.alpha_l1 * cp.sum(cp.abs(Q))))
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    return float(prob.value) + df.value(np.zeros((d, m))), (P.value + Q.value)


def test_face_parts_each_row():
    pen = DirtyNorm(2.5, 1.0, np.inf)  # k = floor(2.5 / 1) = 2 entries over the threshold
    W = np.array([[5.0, -3.0, 2.0, -2.0, 1.0],   # A, A, T, T, B
                  [0.0, 0.0, 0.0, 0.0, 0.0],     # a zero row
                  [0.0, 4.0, 0.0, -1.0, 0.0]])   # two entries: a lasso row
    face = dirty_face(W, pen.alpha_group, pen.alpha_l1, True)
    assert face.kind[0].tolist() == [ABOVE, ABOVE, TIED, TIED, BELOW]
    assert face.kind[1].tolist() == [FIXED] * 5
    assert face.kind[2].tolist() == [FIXED, ABOVE, FIXED, ABOVE, FIXED]
    assert face.group.tolist() == [True, False, False]
    assert face.tau[0] == 2.0


@pytest.mark.parametrize("q", [np.inf, 2.0])
@pytest.mark.parametrize("f", [0.01, 0.05, 0.2])
def test_bcd_with_newton_steps_agrees_with_cvxpy(q, f, monkeypatch):
    monkeypatch.setattr(bcd, "DIRTY_NEWTON", True)  # taken for q = 2
    df = _collinear_problem()
    top = float(np.abs(df.grad_at_zero()).max())
    pen = DirtyNorm(2.0 * f * top, f * top, q)
    result = BlockCoordinateDescent(tol=1e-10, max_iter=100_000).solve(df, pen)
    assert result.converged
    reference, _ = _cvxpy_optimum(df, pen)
    ours = _objective(df, pen, result.W)
    assert abs(ours - reference) <= 1e-6 * abs(reference)
    assert ours <= reference + 1e-9 * abs(reference)  # certified: not above the solver's


@pytest.mark.parametrize("q", [np.inf, 2.0])
def test_newton_point_lowers_the_objective_from_rough_epochs(q):
    df = _collinear_problem(seed=1)
    top = float(np.abs(df.grad_at_zero()).max())
    pen = DirtyNorm(0.02 * top, 0.01 * top, q)
    H, C = df.quadratic_form()
    rough = BlockCoordinateDescent(tol=1e-14, max_iter=20, warn=False).solve(df, pen).W
    new, work = dirty_newton_point(np.ascontiguousarray(H), np.ascontiguousarray(C), rough,
                                   pen.alpha_group, pen.alpha_l1, q == np.inf, 10_000)
    assert new is not None and work > 0
    assert _objective(df, pen, new) <= _objective(df, pen, rough)


@pytest.mark.parametrize("q", [np.inf, 2.0])
def test_a_degenerate_face_does_not_raise(q):
    # exact ties, a zero row, a zero column of the design and a singular Gram matrix
    rng = np.random.default_rng(3)
    d, m = 4, 3
    H = np.zeros((m, d, d))
    for t in range(m):
        X = rng.standard_normal((2, d))
        X[:, 2] = 0.0  # a feature the task never sees
        H[t] = X.T @ X  # rank 2
    C = rng.standard_normal((d, m))
    W = np.array([[1.0, -1.0, 1.0], [0.0, 0.0, 0.0], [2.0, 2.0, -2.0], [0.5, 0.0, 0.0]])
    for a, c in [(1.0, 1.0), (1.5, 1.0), (10.0, 1.0), (0.1, 1.0)]:
        new, _ = dirty_newton_point(H, C, W, a, c, q == np.inf, 10_000)
        assert new is None or np.all(np.isfinite(new))
    assert dirty_newton_point(H, C, np.zeros((d, m)), 1.0, 1.0, q == np.inf, 10)[0] is None
    assert dirty_newton_point(H, C, W, 0.0, 1.0, q == np.inf, 10_000)[0] is None
    assert dirty_newton_point(H, C, W, 1.0, 1.0, q == np.inf, 1)[0] is None  # too many


def test_newton_steps_cut_the_epochs(monkeypatch):
    # q = 2 (block coordinate descent takes the Newton steps for it): every row a lasso row
    df = _collinear_problem(seed=2, m=8)
    top = float(np.abs(df.grad_at_zero()).max())
    pen = DirtyNorm(1e-4 * top, 1e-5 * top, 2.0)
    monkeypatch.setattr(bcd, "DIRTY_NEWTON", False)
    plain = BlockCoordinateDescent(tol=1e-8, max_iter=100_000).solve(df, pen)
    monkeypatch.setattr(bcd, "DIRTY_NEWTON", True)
    newton = BlockCoordinateDescent(tol=1e-8, max_iter=100_000).solve(df, pen)
    assert plain.converged and newton.converged
    assert plain.n_iter >= 200  # the problem is one where the epochs crawl
    assert newton.n_iter <= plain.n_iter / 10
    reference = _objective(df, pen, plain.W)
    assert abs(_objective(df, pen, newton.W) - reference) <= 1e-8 * abs(reference)
