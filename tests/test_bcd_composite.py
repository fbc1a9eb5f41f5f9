"""Block coordinate descent beyond l1 and l2,1, and the exact quadratic solver, against cvxpy.

* Every row family and the task coupling of :class:`~multitask.solvers.BlockCoordinateDescent`
  (the graph + l1 model with exact entries, the temporal group lasso with proximal rows, the
  fused sparse group lasso, the dirty norm with ``q = inf`` and ``q = 2``, per-row l1
  strengths with unpenalized rows, mean regularization) and the coupled linear systems of
  :class:`~multitask.solvers.QuadraticExact` (shared designs: the eigenbasis of the coupling;
  per-task designs: dense and preconditioned conjugate gradients) reach cvxpy's optimum of
  the same formula to 1e-8 relative in objective, on raw unscaled features (column scales
  from 0.01 to 100 with offsets) with unequal task sizes, with and without intercept, with
  per-task and shared designs. The reference writes each task's least squares on the thin SVD
  of its (centred, with an intercept) design, which keeps the interior-point solve accurate.
* The interpreted twin takes the compiled kernel's steps with coupling, per-row strengths and
  Anderson extrapolation, and refuses the group rows under a coupling that the kernel
  minimizes exactly; an epoch budget that stops the solver first leaves ``converged_`` False.
* The dirty rows' exact minimization with per-task curvatures against cvxpy.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from multitask.data import as_multitask_data
from multitask.losses import Squared
from multitask.penalties import (
    FusedSparseGroupLasso,
    GraphRegularization,
    MeanRegularization,
    TemporalGroupLasso,
    temporal_difference_matrix,
)
from multitask.penalties.base import Penalty
from multitask.penalties.capped_l1 import RowWeightedL1
from multitask.penalties.dirty import DirtyNorm
from multitask.penalties.row_operators import dirty_weighted_row_min
from multitask.solvers import BlockCoordinateDescent, QuadraticExact
from multitask.solvers import exact as exact_module
from multitask.solvers.base import apply_per_task
from multitask.solvers.bcd import _bcd_epochs, _run_epochs, row_strengths
from multitask.solvers.bcd_twin import bcd_epochs_numpy

cp = pytest.importorskip("cvxpy")

PRECISE = {"tol_gap_abs": 1e-13, "tol_gap_rel": 1e-13, "tol_feas": 1e-13,
           "tol_ktratio": 1e-10, "max_iter": 500}
REL = 1e-8
D, SIZES = 6, (14, 23, 9, 17)  # one task with fewer rows than features


def _raw_problem(seed: int, shared: bool):
    """Raw unscaled features: columns of scales 0.01 to 100 with offsets."""
    rng = np.random.default_rng(700 + seed)
    m = len(SIZES)
    scales = np.logspace(-2, 2, D)
    rng.shuffle(scales)
    offsets = rng.uniform(-3, 3, D) * scales
    W0 = rng.standard_normal((D, m)) / scales[:, None]
    W0[rng.random((D, m)) < 0.3] = 0.0
    if shared:
        X = rng.standard_normal((30, D)) * scales + offsets
        Y = X @ W0 + 1.5 + 0.5 * rng.standard_normal((30, m))
        return (X, Y), [X] * m, [Y[:, t] for t in range(m)]
    Xs = [rng.standard_normal((n, D)) * scales + offsets for n in SIZES]
    ys = [X @ W0[:, t] + 1.5 + 0.5 * rng.standard_normal(n) for t, (X, n) in
          enumerate(zip(Xs, SIZES, strict=True))]
    return (Xs, ys), Xs, ys


def _cvx_loss(Xs, ys, W, intercept: bool):
    """``sum_t ||X_t w_t + b_t - y_t||^2 / (2 n_t)`` minimized over ``b`` (when
    ``intercept``), written on the thin SVD of each (centred) design."""
    total = 0
    for t, (X, y) in enumerate(zip(Xs, ys, strict=True)):
        if intercept:
            X, y = X - X.mean(axis=0), y - y.mean()
        U, s, Vt = np.linalg.svd(X, full_matrices=False)
        z = U.T @ y
        rest = max(float(y @ y - z @ z), 0.0)
        total = total + (cp.sum_squares(np.diag(s) @ Vt @ W[:, t] - z) + rest) / (2 * len(y))
    return total


def _chain(m):
    return temporal_difference_matrix(m)


# penalty objects and the same penalty in cvxpy (W, or the parts of the dirty model)
def _models(scale: float):
    Hm = _chain(len(SIZES))
    a = 0.05 * scale
    return {
        "graph_l1": (GraphRegularization(3 * a, Hm @ Hm.T, a),
                     lambda W: 3 * a * cp.sum_squares(W @ Hm) + a * cp.sum(cp.abs(W))),
        "temporal": (TemporalGroupLasso(3 * a, 2 * a, len(SIZES)),
                     lambda W: 3 * a * cp.sum_squares(W @ Hm) + 2 * a * cp.sum(
                         cp.norm(W, 2, axis=1))),
        "fused": (FusedSparseGroupLasso(a, a, 2 * a),
                  lambda W: a * cp.sum(cp.abs(W)) + a * cp.sum(cp.abs(W @ Hm))
                  + 2 * a * cp.sum(cp.norm(W, 2, axis=1))),
        "dirty_inf": (DirtyNorm(2.5 * a, a, np.inf), None),
        "dirty_2": (DirtyNorm(1.5 * a, a, 2.0), None),
        "row_weighted": (RowWeightedL1(a * np.array([1.0, 0.0, 2.0, 1.0, 0.0, 0.5])),
                         lambda W: a * cp.sum(cp.multiply(
                             np.array([1.0, 0.0, 2.0, 1.0, 0.0, 0.5])[:, None], cp.abs(W)))),
        "mean": (MeanRegularization(2 * a, len(SIZES)),
                 lambda W: 2 * a * cp.sum_squares(W - cp.sum(W, axis=1, keepdims=True)
                                                  / len(SIZES))),
    }


def _reference(Xs, ys, key, penalty, pen_cvx, intercept: bool, alpha_l2: float):
    W = cp.Variable((D, len(SIZES)))
    if key.startswith("dirty"):
        P = cp.Variable((D, len(SIZES)))
        q = "inf" if penalty.q == np.inf else 2
        pen = (penalty.alpha_group * cp.sum(cp.norm(P, q, axis=1))
               + penalty.alpha_l1 * cp.sum(cp.abs(W - P)))
    else:
        pen = pen_cvx(W)
    obj = _cvx_loss(Xs, ys, W, intercept) + pen + 0.5 * alpha_l2 * cp.sum_squares(W)
    prob = cp.Problem(cp.Minimize(obj))
    prob.solve(solver=cp.CLARABEL, **PRECISE)
    return float(prob.value)


CASES = [(shared, intercept) for shared in (False, True) for intercept in (True, False)]


#: The mean-regularized model (a pure quadratic) is the exact solver's (below): entrywise
#: descent on it is Gauss-Seidel, which these raw features (Gram eigenvalues from 1e-5 to
#: 6e4 without intercept) slow to a crawl.
KEYS = ["graph_l1", "temporal", "fused", "dirty_inf", "dirty_2", "row_weighted"]


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("shared,intercept", CASES)
def test_bcd_reaches_cvxpy_on_raw_features(key, shared, intercept):
    user, Xs, ys = _raw_problem(10 * KEYS.index(key) + 2 * shared + intercept, shared)
    data, _ = as_multitask_data(*user)
    alpha_l2 = 1e-3 if key == "temporal" else 0.0  # MALSAR's rho1 of TGL
    df = Squared(data, fit_intercept=intercept, alpha_l2=alpha_l2)
    scale = float(np.abs(df.grad_at_zero()).max())
    penalty, pen_cvx = _models(scale)[key]
    H = df.quadratic_form()[0]
    eig = np.linalg.eigvalsh(H)
    assert np.min(eig[:, -1] / np.maximum(eig[:, 0], 1e-300)) >= 1e3  # ill-conditioned
    solver = BlockCoordinateDescent(tol=1e-11, max_iter=200_000)
    assert solver.supports(df, penalty)
    res = solver.solve(df, penalty)
    assert res.converged and res.info["certified"] and res.optimality <= 1e-11
    ref = _reference(Xs, ys, key, penalty, pen_cvx, intercept, alpha_l2)
    ours = df.value(res.W) + penalty.value(res.W)
    assert abs(ours - ref) <= REL * abs(ref), (ours, ref)


@pytest.mark.parametrize("key", ["mean", "graph"])
@pytest.mark.parametrize("shared,intercept", CASES)
@pytest.mark.parametrize("dense", [True, False])
def test_exact_coupled_solve_reaches_cvxpy(key, shared, intercept, dense, monkeypatch):
    """Shared designs: the eigenbasis of the coupling; per-task designs: the dense system
    and preconditioned conjugate gradients."""
    if shared and not dense:
        pytest.skip("a shared design has one method")
    monkeypatch.setattr(exact_module, "DENSE_MAX", 10**6 if dense else 0)
    user, Xs, ys = _raw_problem(50 + 7 * shared + 3 * intercept, shared)
    data, _ = as_multitask_data(*user)
    df = Squared(data, fit_intercept=intercept)
    scale = float(np.abs(df.grad_at_zero()).max())
    Hm = _chain(len(SIZES))
    if key == "mean":
        penalty, pen_cvx = _models(scale)["mean"]
    else:
        penalty = GraphRegularization(0.2 * scale, Hm @ Hm.T)
        pen_cvx = lambda W: 0.2 * scale * cp.sum_squares(W @ Hm)  # noqa: E731
    solver = QuadraticExact(tol=1e-10)
    assert solver.supports(df, penalty)
    res = solver.solve(df, penalty)
    assert res.converged and res.info["certified"]
    ref = _reference(Xs, ys, key, penalty, pen_cvx, intercept, 0.0)
    ours = df.value(res.W) + penalty.value(res.W)
    assert abs(ours - ref) <= REL * abs(ref), (ours, ref, res.info["method"])


class _RowRidgeCoupled(Penalty):
    """A test penalty: a per-row ridge and a task coupling (the interface only)."""

    name = "row_ridge_coupled"
    capabilities = frozenset({"row_prox", "smooth", "task_coupling"})

    def __init__(self, c, K):
        self.c, self.K = np.asarray(c, dtype=float), np.asarray(K, dtype=float)

    def row_prox_params(self):
        return (0.0, 0.0, self.c)

    def task_coupling(self):
        return self.K

    def smooth_value_and_grad(self, W):
        WK = W @ self.K
        return 0.5 * float(np.vdot(W, WK)), WK

    def smooth_lipschitz(self):
        return float(np.linalg.eigvalsh(self.K)[-1])

    def prox(self, V, step):
        return V / (1.0 + step * self.c[:, None])

    def prox_value(self, W):
        return 0.5 * float(self.c @ np.einsum("jt,jt->j", W, W))

    def value(self, W):
        return self.smooth_value_and_grad(W)[0] + self.prox_value(W)


@pytest.mark.parametrize("dense", [True, False])
def test_exact_and_bcd_with_a_per_row_ridge_and_a_coupling(dense, monkeypatch):
    """Per-row strengths reach both solvers through ``row_prox_params`` (arrays)."""
    monkeypatch.setattr(exact_module, "DENSE_MAX", 10**6 if dense else 0)
    user, Xs, ys = _raw_problem(90, False)
    data, _ = as_multitask_data(*user)
    df = Squared(data, fit_intercept=True)
    scale = float(np.abs(df.grad_at_zero()).max())
    Hm = _chain(len(SIZES))
    c = scale * np.array([0.1, 0.0, 1.0, 0.01, 0.3, 0.0])
    penalty = _RowRidgeCoupled(c, 0.4 * scale * Hm @ Hm.T)
    W = cp.Variable((D, len(SIZES)))
    obj = (_cvx_loss(Xs, ys, W, True) + 0.2 * scale * cp.sum_squares(W @ Hm)
           + 0.5 * cp.sum(cp.multiply(c[:, None], cp.square(W))))
    prob = cp.Problem(cp.Minimize(obj))
    prob.solve(solver=cp.CLARABEL, **PRECISE)
    for solver in (QuadraticExact(tol=1e-10), BlockCoordinateDescent(tol=1e-11,
                                                                      max_iter=200_000)):
        res = solver.solve(df, penalty)
        ours = df.value(res.W) + penalty.value(res.W)
        assert abs(ours - prob.value) <= REL * abs(prob.value), (solver.name, ours, prob.value)


def test_exact_refuses_what_is_not_a_quadratic():
    user, _, _ = _raw_problem(0, False)
    df = Squared(as_multitask_data(*user)[0])
    Hm = _chain(len(SIZES))
    assert "not a pure ridge" in " ".join(QuadraticExact().missing(
        df, GraphRegularization(0.1, Hm @ Hm.T, 0.1)))
    assert "not a pure ridge" in " ".join(QuadraticExact().missing(
        df, FusedSparseGroupLasso(0.0, 0.1, 0.0)))
    assert QuadraticExact().supports(df, MeanRegularization(0.1, len(SIZES)))


# ----------------------------------------------------------------------------- the twin
def _kernel_state(seed: int, shared: bool, coupled: bool, anderson: int):
    rng = np.random.default_rng(seed)
    d, m, n = 9, 5, 25
    X = rng.standard_normal((1 if shared else m, n, d)) * np.logspace(-1, 1, d) + 0.5
    H = np.einsum("tni,tnj->tij", X, X) / n
    C = rng.standard_normal((d, m)) * 3
    W = np.zeros((d, m))
    if coupled:
        Hm = _chain(m)
        K = 0.7 * Hm @ Hm.T
    else:
        K = np.zeros((0, 0))
    R = W @ K if coupled else np.zeros((0, 0))
    hist = np.empty((anderson + 1 if anderson else 0, d, m))
    return H, C, W, apply_per_task(H, W), K, R, hist, np.zeros(1, dtype=np.int64)


STRENGTHS = {
    "l1_rows": lambda d: np.column_stack([np.linspace(0, 0.3, d), np.zeros(d), np.zeros(d)]),
    "l21_ridge": lambda d: np.column_stack([np.full(d, 0.05), np.linspace(0, 0.4, d),
                                            np.full(d, 0.1)]),
}


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("coupled", [True, False])
@pytest.mark.parametrize("strengths", list(STRENGTHS))
def test_twin_takes_the_kernels_steps(shared, coupled, strengths):
    """Coupling and per-row strengths (rows of both kinds): the same iterates and epoch
    counts, stopped by the epoch cap and then by the tolerance."""
    a = _kernel_state(11, shared, coupled, 0)
    b = tuple(x.copy() for x in a)
    H, C, W1, P1, K, R1, h1, n1 = a
    _, _, W2, P2, _, R2, h2, n2 = b
    params = STRENGTHS[strengths](W1.shape[0])
    k_top = float(np.linalg.eigvalsh(K)[-1]) if K.size else 0.0
    for max_epochs, tol in ((7, 1e-14), (300, 1e-10)):
        k1, done1 = _bcd_epochs(H, C, W1, P1, K, R1, 0, params, k_top, h1, n1, max_epochs,
                                tol)
        k2, done2, _ = bcd_epochs_numpy(H, C, W2, P2, K, R2, 0, params, k_top, h2, n2,
                                         max_epochs, tol, 60.0)
        assert (int(k1), bool(done1)) == (k2, done2)
        scale = max(1.0, float(np.abs(W1).max()))
        np.testing.assert_allclose(W2, W1, rtol=0, atol=1e-12 * scale)
        np.testing.assert_allclose(P2, P1, rtol=0, atol=1e-12 * max(1.0, np.abs(P1).max()))
        if coupled:
            np.testing.assert_allclose(R2, R1, rtol=0, atol=1e-12 * max(1.0,
                                                                          np.abs(R1).max()))
    assert np.abs(W1).max() > 0


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("coupled", [True, False])
@pytest.mark.parametrize("strengths", list(STRENGTHS))
def test_twin_extrapolates_like_the_kernel(shared, coupled, strengths):
    """With Anderson extrapolation: the same steps up to rounding (the two use different
    BLAS and LAPACK, whose last bits the extrapolation magnifies), the extrapolation state
    carried from one call to the next, and the same minimizer."""
    a = _kernel_state(12, shared, coupled, 4)
    b = tuple(x.copy() for x in a)
    H, C, W1, P1, K, R1, h1, n1 = a
    _, _, W2, P2, _, R2, h2, n2 = b
    params = STRENGTHS[strengths](W1.shape[0])
    k_top = float(np.linalg.eigvalsh(K)[-1]) if K.size else 0.0
    for max_epochs in (7, 6):  # an extrapolation every 4 epochs, across the two calls
        k1, _ = _bcd_epochs(H, C, W1, P1, K, R1, 0, params, k_top, h1, n1, max_epochs, 0.0)
        k2, _, _ = bcd_epochs_numpy(H, C, W2, P2, K, R2, 0, params, k_top, h2, n2,
                                     max_epochs, 0.0, 60.0)
        assert int(k1) == k2 == max_epochs and int(n1[0]) == int(n2[0])
        np.testing.assert_allclose(W2, W1, rtol=0, atol=1e-8 * max(1.0, np.abs(W1).max()))
    for tol in (1e-13,):
        _bcd_epochs(H, C, W1, P1, K, R1, 0, params, k_top, h1, n1, 100_000, tol)
        bcd_epochs_numpy(H, C, W2, P2, K, R2, 0, params, k_top, h2, n2, 100_000, tol, 60.0)
    np.testing.assert_allclose(W2, W1, rtol=0, atol=1e-8 * max(1.0, np.abs(W1).max()))
    # the state is what it claims: P = H W and R = W K
    np.testing.assert_allclose(P1, apply_per_task(H, W1), atol=1e-9 * np.abs(P1).max())
    if coupled:
        np.testing.assert_allclose(R1, W1 @ K, atol=1e-9 * np.abs(R1).max())


def test_the_twin_refuses_other_families():
    H, C, W, P, K, R, hist, n = _kernel_state(0, True, False, 0)
    with pytest.raises(ValueError, match="elastic-net"):
        bcd_epochs_numpy(H, C, W, P, K, R, 1, np.zeros((W.shape[0], 3)), 0.0, hist, n, 3,
                          1e-8, 1.0)


def test_the_twin_refuses_group_rows_under_a_coupling():
    """Those rows are minimized exactly by the kernel only: the twin refuses them and
    ``_run_epochs`` hands them to the kernel, which reaches the same point as from the
    rows' proximal steps (a tiny l1 strength keeps the twin's proximal rows)."""
    H, C, W, P, K, R, hist, n = _kernel_state(3, False, True, 0)
    d = W.shape[0]
    group = np.column_stack([np.zeros(d), np.linspace(0.05, 0.4, d), np.zeros(d)])
    k_top = float(np.linalg.eigvalsh(K)[-1])
    with pytest.raises(ValueError, match="coupling"):
        bcd_epochs_numpy(H, C, W, P, K, R, 0, group, k_top, hist, n, 3, 1e-8, 60.0)
    done, converged = _run_epochs(H, C, W, P, K, R, 0, group, k_top, hist, n, 100_000, 1e-13)
    assert converged
    H2, C2, W2, P2, K2, R2, h2, n2 = _kernel_state(3, False, True, 0)
    nearly = group.copy()
    nearly[:, 0] = 1e-300
    more, _ = _bcd_epochs(H2, C2, W2, P2, K2, R2, 0, nearly, k_top, h2, n2, 1_000_000, 1e-13)
    np.testing.assert_allclose(W, W2, rtol=0, atol=1e-9 * np.abs(W2).max())
    assert np.abs(W).max() > 0 and done < more  # the exact rows take fewer epochs


@pytest.mark.parametrize("group_inf", [True, False])
@pytest.mark.parametrize("a,c", [(0.3, 1.0), (2.0, 1.0), (4.7, 0.9), (20.0, 1.0), (0.0, 1.0),
                                 (1.0, 0.0)])
def test_dirty_row_minimized_exactly_with_each_tasks_curvature(group_inf, a, c):
    """``argmin_w sum_t (h_t / 2) (w_t - z_t / h_t)^2 + N(w)`` against cvxpy's minimum over
    the split ``w = p + q``; a task with ``h_t = 0`` gets 0."""
    rng = np.random.default_rng(11)
    m = 7
    qn = "inf" if group_inf else 2
    out = np.empty(m)
    for trial in range(6):
        h = rng.uniform(0.05, 20.0, m)
        if trial == 5:
            h[2] = 0.0
        z = 3.0 * rng.standard_normal(m) * rng.uniform(0.1, 3.0)
        if trial == 1:
            z[:3] = 2.5  # ties
        dirty_weighted_row_min(z, h, a, c, group_inf, out)
        seen = h > 0
        w, p = cp.Variable(m), cp.Variable(m)
        quad = 0.5 * cp.sum(cp.multiply(h[seen], cp.square(w[seen]))) - z[seen] @ w[seen]
        prob = cp.Problem(cp.Minimize(quad + a * cp.norm(p, qn) + c * cp.norm(w - p, 1)),
                          [w[~seen] == 0] if (~seen).any() else [])
        prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
        np.testing.assert_allclose(out, w.value, rtol=0,
                                   atol=1e-6 * max(1.0, np.abs(w.value).max()))
        assert np.all(out[~seen] == 0.0)
        ours = (0.5 * float(h @ out ** 2) - float(z @ out)
                + DirtyNorm(a, c, np.inf if group_inf else 2.0).value(out[None, :]))
        assert ours <= prob.value + 1e-9 * max(1.0, abs(prob.value))


def test_row_strengths_read_numbers_and_arrays():
    fam, params = row_strengths(RowWeightedL1(np.arange(4.0)), 4)
    assert fam == 0 and params.shape == (4, 3)
    np.testing.assert_array_equal(params[:, 0], np.arange(4.0))
    assert not params[:, 1:].any()
    fam, params = row_strengths(DirtyNorm(2.0, 0.5, 2.0), 3)
    assert fam == 3 and np.all(params == [2.0, 0.5, 0.0])
    with pytest.raises(ValueError, match="shape"):
        row_strengths(RowWeightedL1(np.arange(4.0)), 5)


def test_bcd_refuses_a_smooth_part_without_coupling():
    class _Smooth(GraphRegularization):
        capabilities = frozenset({"smooth", "row_prox"})

    user, _, _ = _raw_problem(1, False)
    df = Squared(as_multitask_data(*user)[0])
    miss = BlockCoordinateDescent().missing(df, _Smooth(0.1, np.eye(len(SIZES)), 0.1))
    assert any("not a task coupling" in s for s in miss)


@pytest.mark.parametrize("key", ["graph_l1", "temporal", "fused", "dirty_inf", "row_weighted"])
def test_max_iter_first_means_not_converged(key):
    user, _, _ = _raw_problem(3, False)
    df = Squared(as_multitask_data(*user)[0])
    penalty, _ = _models(float(np.abs(df.grad_at_zero()).max()))[key]
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        res = BlockCoordinateDescent(tol=1e-14, max_iter=3).solve(df, penalty)
    assert not res.converged and res.n_iter == 3 and res.optimality > 1e-14


def test_anderson_cuts_the_epochs_and_keeps_the_optimum(monkeypatch):
    # every row is minimized exactly; at a tenth of the test's strengths the fused model
    # keeps most features and plain coordinate descent crawls along the raw features (the
    # Newton steps on the fused structure switched off: they would end both runs early)
    import multitask.solvers.bcd as bcd

    monkeypatch.setattr(bcd, "fused_newton_point", lambda *args, **kwargs: (None, 0.0))
    user, _, _ = _raw_problem(4, False)
    df = Squared(as_multitask_data(*user)[0])
    penalty, _ = _models(0.1 * float(np.abs(df.grad_at_zero()).max()))["fused"]
    plain = BlockCoordinateDescent(tol=1e-10, max_iter=500_000, anderson=0).solve(df, penalty)
    fast = BlockCoordinateDescent(tol=1e-10, max_iter=500_000).solve(df, penalty)
    assert plain.converged and fast.converged
    assert fast.n_iter < plain.n_iter
    Fp = df.value(plain.W) + penalty.value(plain.W)
    Ff = df.value(fast.W) + penalty.value(fast.W)
    assert abs(Fp - Ff) <= 1e-9 * abs(Fp)


# ----------------------------------------------------------------------------- estimators
def _lists(seed: int):
    user, Xs, ys = _raw_problem(seed, False)
    return Xs, ys


def _estimators():
    import multitask as mt

    m = len(SIZES)
    chain = np.diag(np.ones(m - 1), 1) + np.diag(np.ones(m - 1), -1)
    return {
        # raw features of spread curvatures: active-set Newton after a head start of block
        # coordinate descent (which converges within it here)
        "graph": (mt.GraphRegularizedRegressor(graph=chain, alpha=0.05, alpha_l1=0.05),
                  "active_newton"),
        "graph_quadratic": (mt.GraphRegularizedRegressor(graph=chain, alpha=0.05,
                                                         alpha_l1=0.0), "exact"),
        "mean": (mt.MeanRegularizedRegressor(alpha=0.05), "exact"),
        "temporal": (mt.TemporalGroupLassoRegressor(alpha_group=0.1, alpha_smooth=0.05),
                     "active_newton"),
        "fused": (mt.FusedSparseGroupLassoRegressor(alpha_group=0.1, alpha_fused=0.05,
                                                    alpha_l1=0.05), "bcd"),
        "dirty": (mt.DirtyModelRegressor(alpha_group=0.3, alpha_l1=0.1), "bcd"),
        "capped_l1": (mt.CappedL1Regressor(alpha=0.05, theta=1.0), "multistage"),
    }


@pytest.mark.parametrize("key", list(_estimators()))
def test_auto_picks_the_fast_solver_for_least_squares(key):
    Xs, ys = _lists(20)
    est, expected = _estimators()[key]
    est.fit(Xs, ys)
    assert est.solver_.name == expected and est.converged_ and est.certified_
    if key == "capped_l1":
        assert est.solver_.inner.name == "bcd"


@pytest.mark.parametrize("key", ["graph", "temporal", "fused", "dirty", "capped_l1"])
def test_estimators_report_not_converged_when_max_iter_stops_first(key):
    Xs, ys = _lists(21)
    est, _ = _estimators()[key]
    est.set_params(tol=1e-14, max_iter=2)
    with pytest.warns(ConvergenceWarning):
        est.fit(Xs, ys)
    assert not est.converged_


def test_classifiers_keep_gradient_methods():
    import multitask as mt

    rng = np.random.default_rng(22)
    Xs = [rng.standard_normal((n + 20, D)) for n in SIZES]
    yc = [(X[:, 0] + X[:, 1] + rng.standard_normal(len(X)) > 0).astype(int) for X in Xs]
    for est in (mt.GraphRegularizedClassifier(graph=np.eye(len(SIZES)), alpha=0.01),
                mt.TemporalGroupLassoClassifier(), mt.FusedSparseGroupLassoClassifier(),
                mt.CappedL1Classifier(alpha=0.01)):
        est.fit(Xs, yc)
        name = est.solver_.inner.name if est.solver_.name == "multistage" else est.solver_.name
        # block coordinate descent needs a quadratic loss; proximal Newton solves its steps
        # with it (few features)
        assert name in ("fista", "mm", "newton"), (type(est).__name__, name)
