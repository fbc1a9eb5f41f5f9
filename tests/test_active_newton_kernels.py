"""The linear algebra inside the active-set Newton solver
(:mod:`multitask.solvers.active_newton`, :mod:`multitask.solvers.masked_inverse`).

* :func:`masked_inverses` (all blocks at once) is the block-by-block inverse on each support,
  also where blocks are singular (a feature without curvature: the pseudo-inverse), with
  empty supports, and names bad shapes.
* The tasks' inverses of a solver's steps follow the supports, the rows' ``c + beta`` and
  the diagonal shift from call to call (only the tasks whose data changed are computed
  again) and equal the inverses computed afresh.
* The complete graph's preconditioner (Woodbury) is the inverse of the Hessian on the
  support, and solves in its range where the Hessian is singular (a feature constant within
  every task); the Newton steps then take one or two conjugate-gradient iterations, and
  above ``WOODBURY_FEATURES`` features the preconditioners by rows and by tasks reach the
  same optimum.
* The chain preconditioner (tridiagonal ``L D L^T`` and Sherman-Morrison) equals the dense
  inverses of the rows' blocks with their group terms, and a row's solve along the chain
  (a group row that enters) the dense solve.
* Conjugate gradients resumed where they stopped are the run without a stop.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import multitask as mt
from multitask.estimators.estimator import TaskStructureWarning
from multitask.solvers import active_newton, active_newton_steps
from multitask.solvers.active_newton import ActiveSetNewton
from multitask.solvers.masked_inverse import inverse_psd, masked_inverses


def _random_psd(rng, n, d, rank=None):
    X = rng.standard_normal((n, rank or d + 3, d))
    return np.einsum("kni,knj->kij", X, X) / X.shape[1]


def _blockwise(A, mask):
    out = np.zeros_like(A)
    for k in range(A.shape[0]):
        s = np.flatnonzero(mask[k])
        if s.size:
            out[k][np.ix_(s, s)] = inverse_psd(A[k][np.ix_(s, s)])
    return out


def test_masked_inverses_are_the_blocks_inverses():
    rng = np.random.default_rng(0)
    A = _random_psd(rng, 12, 6) + 0.1 * np.eye(6)
    mask = rng.random((12, 6)) < 0.6
    mask[0], mask[1] = True, False
    np.testing.assert_allclose(masked_inverses(A, mask), _blockwise(A, mask), rtol=0,
                               atol=1e-10 * np.abs(_blockwise(A, mask)).max())
    # singular blocks: a feature without curvature in some tasks (the pseudo-inverse)
    A[2:5, 3, :] = A[2:5, :, 3] = 0.0
    mask[2:5, 3] = True
    ref = _blockwise(A, mask)
    out = masked_inverses(A, mask)
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-10 * np.abs(ref).max())
    assert np.all(out[2:5, 3, :] == 0) and np.all(out[~mask] == 0)
    A_before = A.copy()
    masked_inverses(A, mask)
    np.testing.assert_array_equal(A, A_before)  # input untouched


def test_masked_inverses_name_bad_shapes():
    with pytest.raises(ValueError, match="shape"):
        masked_inverses(np.zeros((3, 4, 4)), np.ones((3, 5), dtype=bool))


def _tasks(seed, m=8, d=5, raw=False):
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((d, 2)) @ rng.standard_normal((2, m))
    Xs, ys = [], []
    for t in range(m):
        n = int(rng.integers(15, 30))
        X = rng.standard_normal((n, d)) + 0.3 * rng.standard_normal(d)
        if raw:  # a column constant within each task: no curvature once centred
            X[:, 2] = float(t % 3)
        Xs.append(X)
        ys.append(X @ W[:, t] + 0.5 * rng.standard_normal(n))
    return Xs, ys


def _steps_of(est, Xs, ys, monkeypatch):
    """The solver's ``_Steps`` of the fit of ``est`` (after the fit)."""
    seen = []
    init = active_newton._Steps.__init__

    def spy(self, *args, **kwargs):
        init(self, *args, **kwargs)
        seen.append(self)

    monkeypatch.setattr(active_newton._Steps, "__init__", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TaskStructureWarning)
        est.fit(Xs, ys)
    assert seen
    return seen[-1], est


def _hessian(md, E, beta, U):
    """The Hessian on the support ``E`` as :meth:`_Steps.newton` applies it."""
    def hess(V):
        out = (active_newton.apply_per_task(md.H, V) + md.times_K(V) + md.c[:, None] * V
               + beta[:, None] * (V - U * np.einsum("jt,jt->j", U, V)[:, None]))
        return out * E
    return hess


def _reference_task_inverses(md, E, beta, shift):
    d, m = E.shape
    out = np.zeros((m, d, d))
    for t in range(m):
        s = np.flatnonzero(E[:, t])
        if s.size:
            A = md.H[0 if md.H.shape[0] == 1 else t][np.ix_(s, s)].copy()
            A[np.diag_indices_from(A)] += shift[t] + md.c[s] + beta[s]
            out[t][np.ix_(s, s)] = inverse_psd(A)
    return out


def test_task_inverses_follow_supports_and_shifts(monkeypatch):
    Xs, ys = _tasks(1, raw=True)
    steps, _ = _steps_of(mt.GraphRegularizedRegressor(
        None, 3.0, 0.05, solver="active_newton"), Xs, ys, monkeypatch)
    md = steps.model
    d, m = md.C.shape
    rng = np.random.default_rng(2)
    E = rng.random((d, m)) < 0.7
    E[2] = True  # the feature without curvature on every task's support
    beta = np.zeros(d)
    for trial in range(4):
        shift = md._k_main if trial < 3 else np.full(m, 0.5)
        got = steps._task_inverses(E, beta, None if trial < 3 else shift).copy()
        ref = _reference_task_inverses(md, E, beta, shift)
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-10 * np.abs(ref).max())
        E = E.copy()
        E[:, rng.integers(m)] ^= rng.random(d) < 0.5  # one task's support changes
        beta = beta.copy()
        beta[rng.integers(d)] = rng.random()  # one row's group term changes


def test_complete_inverse_is_the_hessian_inverse(monkeypatch):
    rng = np.random.default_rng(3)
    for raw in (False, True):
        Xs, ys = _tasks(4, raw=raw)
        steps, _ = _steps_of(mt.GraphRegularizedRegressor(
            None, 30.0, 0.05, solver="active_newton"), Xs, ys, monkeypatch)
        md = steps.model
        assert md.complete is not None
        d, m = md.C.shape
        E = rng.random((d, m)) < 0.8
        E[2] = True
        beta, U = np.zeros(d), np.zeros((d, m))
        hess = _hessian(md, E, beta, U)
        precondition = steps._complete_inverse(E, beta)
        R = hess(rng.standard_normal((d, m)) * E)  # in the Hessian's range
        Z = precondition(R)
        np.testing.assert_array_equal(Z[~E], 0.0)
        np.testing.assert_allclose(hess(Z), R, rtol=0, atol=1e-9 * np.abs(R).max())
        if not raw:  # a regular Hessian: its inverse
            V = rng.standard_normal((d, m)) * E
            np.testing.assert_allclose(precondition(hess(V)), V, rtol=0,
                                       atol=1e-9 * np.abs(V).max())


@pytest.mark.parametrize("raw", [False, True])
def test_complete_graph_steps_take_one_or_two_iterations(raw):
    Xs, ys = _tasks(5, m=12, raw=raw)
    est = mt.GraphRegularizedRegressor(None, 100.0, 0.02, solver="active_newton", tol=1e-10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TaskStructureWarning)
        est.fit(Xs, ys)
    info = est.solver_result_.info
    assert est.converged_ and info["newton_steps"] >= 1
    assert info["cg_iterations"] <= 2 * info["newton_steps"]


def test_chain_preconditioner_is_the_rows_blocks_inverse(monkeypatch):
    Xs, ys = _tasks(6, m=9)
    steps, _ = _steps_of(mt.TemporalGroupLassoRegressor(
        0.01, 1.0, solver="active_newton"), Xs, ys, monkeypatch)
    md = steps.model
    assert md.tridiagonal
    d, m = md.C.shape
    rng = np.random.default_rng(7)
    E = rng.random((d, m)) < 0.7
    E[0] = False
    rows = np.flatnonzero(E.any(axis=1))
    beta = np.where(rng.random(d) < 0.6, rng.random(d), 0.0)
    U = rng.standard_normal((d, m))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    U[beta == 0] = 0.0
    any_group = bool(np.any(beta > 0))
    chain = steps._chain_preconditioner(rows, E, beta, U, any_group)
    dense = steps._block_inverses(rows, E, beta, U)
    R = rng.standard_normal((d, m)) * E
    ref = np.zeros_like(R)
    ref[rows] = np.matmul(dense, R[rows][:, :, None])[:, :, 0]
    np.testing.assert_allclose(chain(R), ref, rtol=0, atol=1e-10 * np.abs(ref).max())


def test_resumed_conjugate_gradients_are_one_run():
    rng = np.random.default_rng(8)
    A = _random_psd(rng, 1, 30)[0] + 1e-3 * np.eye(30)
    B = rng.standard_normal((30, 1))
    jacobi = 1.0 / np.diag(A)[:, None]
    apply, precondition = (lambda X: A @ X), (lambda R: jacobi * R)
    whole = active_newton._CGRun(apply, precondition, B, 1e-12).go(12)
    parts = active_newton._CGRun(apply, precondition, B, 1e-12).go(5)
    assert parts.n == 5 and not parts.done
    parts.go(12)
    assert parts.n == whole.n == 12
    np.testing.assert_array_equal(parts.best_X, whole.best_X)
    assert active_newton._CGRun(apply, precondition, B, 1e-8).go(500).done


def test_a_crawling_switch_still_reaches_the_optimum(monkeypatch):
    # every first step passes the switch: the other preconditioner's run, then the better of
    # the two goes on (here the first: the other is counted as failed); the optimum is the
    # one without switches
    Xs, ys = _tasks(9, m=10)

    def fit():
        est = mt.TemporalGroupLassoRegressor(0.01, 1.0, solver=ActiveSetNewton(tol=1e-10))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TaskStructureWarning)
            return est.fit(Xs, ys)

    ref = fit()
    failed = []
    choose = active_newton._Steps._choose_preconditioner

    def spy(self, n_cg):
        choose(self, n_cg)
        failed.append(self.cg_max_iter in self._cg_counts[True] + self._cg_counts[False])

    monkeypatch.setattr(active_newton_steps, "SWITCH_CG", 1)
    monkeypatch.setattr(active_newton._Steps, "_choose_preconditioner", spy)
    ours = fit()
    assert any(failed)
    assert ours.converged_ and ref.converged_
    assert abs(ours.objective_[-1] - ref.objective_[-1]) <= 1e-9 * abs(ref.objective_[-1])


def test_a_rows_solve_along_a_chain_is_the_dense_solve(monkeypatch):
    Xs, ys = _tasks(10, m=9)
    steps, _ = _steps_of(mt.TemporalGroupLassoRegressor(
        0.01, 1.0, solver="active_newton"), Xs, ys, monkeypatch)
    md = steps.model
    assert md.tridiagonal
    s = np.random.default_rng(11).standard_normal(md.C.shape[1])
    for j in range(md.C.shape[0]):
        A = md.block(j, np.arange(s.size))
        v, curv = md.row_solve(j, s)
        np.testing.assert_allclose(v, np.linalg.solve(A, s), rtol=1e-10, atol=0)
        assert curv == pytest.approx(float(v @ A @ v), rel=1e-12)


def test_above_the_woodbury_features_the_preconditioners_of_rows_and_tasks(monkeypatch):
    Xs, ys = _tasks(12, m=12)

    def fit():
        est = mt.GraphRegularizedRegressor(None, 100.0, 0.02, solver="active_newton",
                                           tol=1e-10)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TaskStructureWarning)
            return est.fit(Xs, ys)

    ref = fit()
    monkeypatch.setattr(active_newton_steps, "WOODBURY_FEATURES", 4)  # 5 features: too many
    ours = fit()
    info, ref_info = ours.solver_result_.info, ref.solver_result_.info
    assert ours.converged_ and info["cg_iterations"] > ref_info["cg_iterations"]
    assert abs(ours.objective_[-1] - ref.objective_[-1]) <= 1e-9 * abs(ref.objective_[-1])
