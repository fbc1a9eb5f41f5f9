"""Newton steps of the fused sparse group lasso on the structure of an iterate
(``multitask.solvers.fused_newton``), and block coordinate descent that uses them."""

from __future__ import annotations

import numpy as np
import pytest

from multitask.data import as_multitask_data
from multitask.losses import Squared
from multitask.penalties.temporal import FusedSparseGroupLasso
from multitask.solvers import ProximalGradient
from multitask.solvers.bcd import BlockCoordinateDescent
from multitask.solvers.fused_newton import fused_newton_point, fused_structure


def _collinear_problem(seed=0, m=8):
    """Raw features: scales from 0.1 to 30 with an offset, the constant column and two
    task-level columns (constant within each task, so collinear with it there), a sparse
    binary one: the flat directions where coordinate descent crawls."""
    rng = np.random.default_rng(seed)
    d = 7
    scale = np.array([1.0, 30.0, 0.1, 1.0, 1.0, 1.0, 1.0])
    shift = np.array([0.0, 50.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    W0 = rng.standard_normal((d, m)) + 1.0
    Xs, ys = [], []
    for t in range(m):
        n = int(rng.integers(15, 40))
        X = rng.standard_normal((n, d)) * scale + shift
        X[:, 3] = 1.0
        X[:, 4] = rng.uniform(0.5, 2.0)
        X[:, 5] = rng.uniform(10.0, 20.0)
        X[:, 6] = rng.random(n) < 0.2
        Xs.append(X)
        ys.append(X @ W0[:, t] + 0.5 * rng.standard_normal(n))
    return Squared(as_multitask_data(Xs, ys)[0], fit_intercept=False)


def test_structure_lists_the_runs_of_equal_nonzero_entries():
    W = np.array([[1.0, 1.0, 0.0, 0.0, -2.0], [0.0, 0.0, 0.0, 0.0, 0.0],
                  [3.0, 3.0, 3.0, 4.0, 4.0]])
    seg, value = fused_structure(W)
    assert seg.tolist() == [[0, 0, -1, -1, 1], [-1] * 5, [2, 2, 2, 3, 3]]
    assert value.tolist() == [1.0, -2.0, 3.0, 4.0]


def _objective(df, pen, W):
    return df.value(W) + pen.value(W)


@pytest.mark.parametrize("f", [1e-4, 1e-3, 0.01])
def test_newton_point_lowers_the_objective_and_keeps_zeros_and_merges(f):
    df = _collinear_problem()
    top = float(np.abs(df.grad_at_zero()).max())
    pen = FusedSparseGroupLasso(f * top, f * top, f * top)
    H, C = df.quadratic_form()
    rough = BlockCoordinateDescent(tol=1e-14, max_iter=10, warn=False).solve(df, pen).W
    new, work = fused_newton_point(np.ascontiguousarray(H), np.ascontiguousarray(C), rough,
                                   pen.alpha_l1, pen.alpha_group, pen.alpha_fused, 10_000)
    assert new is not None and work > 0
    before, after = _objective(df, pen, rough), _objective(df, pen, new)
    assert after <= before * (1 + 1e-14)
    if f == 1e-4:  # far from the optimum there: a real decrease
        assert after < before * (1 - 1e-9)
    # the steps only set segments to zero or merge them: never split a run or revive a zero
    assert np.all(new[rough == 0.0] == 0.0)
    same = rough[:, 1:] == rough[:, :-1]
    assert np.all(new[:, 1:][same] == new[:, :-1][same])
    assert fused_newton_point(H, C, np.zeros_like(rough), 1.0, 1.0, 1.0, 10_000)[0] is None
    assert fused_newton_point(H, C, rough, 1.0, 1.0, 1.0, 0)[0] is None


@pytest.mark.parametrize("f", [1e-4, 1e-3, 0.01])
def test_block_coordinate_descent_with_newton_steps_keeps_the_optimum(f):
    df = _collinear_problem(1)
    top = float(np.abs(df.grad_at_zero()).max())
    pen = FusedSparseGroupLasso(f * top, 2 * f * top, f * top)
    fit = BlockCoordinateDescent(tol=1e-10, max_iter=200_000).solve(df, pen)
    ref = ProximalGradient(tol=1e-10, max_iter=500_000).solve(df, pen)
    assert fit.converged and ref.converged
    Ff, Fr = _objective(df, pen, fit.W), _objective(df, pen, ref.W)
    assert abs(Ff - Fr) <= 2e-10 * abs(Fr)


def test_newton_steps_cut_the_epochs(monkeypatch):
    import multitask.solvers.bcd as bcd

    df = _collinear_problem(0)
    top = float(np.abs(df.grad_at_zero()).max())
    pen = FusedSparseGroupLasso(1e-4 * top, 1e-4 * top, 1e-4 * top)
    calls = []
    newton = bcd.fused_newton_point

    def counted(*args, **kwargs):
        out = newton(*args, **kwargs)
        calls.append(out[0] is not None)
        return out

    monkeypatch.setattr(bcd, "fused_newton_point", counted)
    fit = BlockCoordinateDescent(tol=1e-10, max_iter=200_000).solve(df, pen)
    assert any(calls)
    monkeypatch.setattr(bcd, "fused_newton_point", lambda *args, **kwargs: (None, 0.0))
    plain = BlockCoordinateDescent(tol=1e-10, max_iter=200_000).solve(df, pen)
    assert fit.converged and plain.converged
    assert fit.n_iter < plain.n_iter
    assert abs(_objective(df, pen, fit.W) - _objective(df, pen, plain.W)) <= 1e-9 * abs(
        _objective(df, pen, plain.W))


def test_a_degenerate_step_is_passed_over_not_raised():
    """Entries so small that the group norm's square underflows make the model's gradient and
    Hessian non-finite (as on School z-scored at the weakest strengths, where the least-squares
    fallback's SVD then failed and the fit raised): no step, the epochs go on."""
    rng = np.random.default_rng(0)
    d, m = 3, 4
    A = rng.standard_normal((m, 6, d))
    H = np.einsum("tni,tnj->tij", A, A) / 6
    C = rng.standard_normal((d, m))
    W = np.zeros((d, m))
    W[0] = [1e-170, 2e-170, 2e-170, -1e-170]
    assert fused_newton_point(H, C, W, 0.1, 0.5, 0.1, max_segments=50)[0] is None
    with np.errstate(all="ignore"):
        # the matrix itself may hold NaN: the guard answers before any factorization
        from multitask.solvers.fused_newton import _newton_step

        seg, beta = fused_structure(W)
        assert _newton_step(H, C, W, 0.1, 0.5, 0.1, seg, beta) is None


@pytest.mark.parametrize("shared", [False, True])
def test_the_segment_hessian_is_e_transpose_h_e(shared):
    """The quadratic part's Hessian on the segment values (all tasks at once) equals ``E^T
    blockdiag(H_t) E`` built from the one-hot map of entries to segments."""
    from multitask.solvers.fused_newton import _segment_hessian

    rng = np.random.default_rng(3)
    d, m = 6, 5
    W = np.round(rng.standard_normal((d, m)))  # runs of equal entries and zeros
    W[2] = 0.0
    A = rng.standard_normal((1 if shared else m, d, d))
    H = A @ A.transpose(0, 2, 1)
    seg, beta = fused_structure(W)
    p = beta.size
    E = np.zeros((d * m, p))  # entry (t, j) -> its segment
    for t in range(m):
        for j in range(d):
            if seg[j, t] >= 0:
                E[t * d + j, seg[j, t]] = 1.0
    blocks = np.zeros((d * m, d * m))
    for t in range(m):
        blocks[t * d:(t + 1) * d, t * d:(t + 1) * d] = H[0 if shared else t]
    np.testing.assert_allclose(_segment_hessian(H, seg, p), E.T @ blocks @ E, rtol=1e-12,
                               atol=1e-12)
