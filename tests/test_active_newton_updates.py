"""The inverses the active-set Newton solver keeps up to date instead of computing them again
(:mod:`multitask.solvers.active_newton`, :mod:`multitask.solvers.masked_inverse`).

* A block's inverse moved by rank-one updates to a support one feature larger or smaller is
  the inverse on that support computed afresh; a pivot at the rounding of zero (a feature
  without curvature, a block singular on the new support) is declined and the block left as
  it was. :func:`masked_inverses_exact` tells the exact inverses from the pseudo-inverses.
* The tasks' inverses of a solver's steps follow supports that move by a few features at a
  time through the updates (fewer blocks computed afresh) and equal the inverses computed
  afresh, also past the refresh count, and where a block is singular.
* A run on the same data takes over the last run's inverses (a path's fits on one fold), a
  run on other data does not, and the fits are those without the carry-over.
* The tasks' preconditioner with the group terms put back (Woodbury) is the inverse of the
  Hessian less the coupling of the tasks off its diagonal.
* A row's exact minimizer along a chain meets its optimality condition; rows the Newton
  direction turns are set to theirs and the fit is the one without.
* The capacitance's inverse is the inverse where well conditioned and the
  pseudo-inverse where singular up to rounding.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from test_active_newton_kernels import _steps_of as _steps_and_fit
from test_active_newton_kernels import _tasks

import multitask as mt
from multitask.estimators.estimator import TaskStructureWarning
from multitask.solvers import active_newton, active_newton_steps
from multitask.solvers.masked_inverse import (
    add_feature,
    drop_feature,
    inverse_psd_conditioned,
    masked_inverses,
    masked_inverses_exact,
    pseudo_inverse_psd,
)


def _random_psd(rng, n, d, rank=None):
    X = rng.standard_normal((n, rank or d + 3, d))
    return np.einsum("kni,knj->kij", X, X) / X.shape[1]


def test_rank_one_updates_are_the_inverses_on_the_new_supports():
    rng = np.random.default_rng(0)
    n, d = 10, 7
    A = _random_psd(rng, n, d) + 0.05 * np.eye(d)
    mask = rng.random((n, d)) < 0.5
    mask[:, 0] = False  # every block has a feature to add
    mask[:, 1] = True  # and one to drop
    M, exact = masked_inverses_exact(A, mask)
    assert exact.all()
    which = rng.permutation(n)[:6]
    k = np.array([rng.choice(np.flatnonzero(~mask[i])) for i in which])
    ok = add_feature(M, which, k, A[which, :, k], mask[which])
    assert ok.all()
    mask[which, k] = True
    ref = masked_inverses(A, mask)
    np.testing.assert_allclose(M, ref, rtol=0, atol=1e-10 * np.abs(ref).max())
    k = np.array([rng.choice(np.flatnonzero(mask[i])) for i in which])
    ok = drop_feature(M, which, k, A[which, k, k])
    assert ok.all()
    mask[which, k] = False
    ref = masked_inverses(A, mask)
    np.testing.assert_allclose(M, ref, rtol=0, atol=1e-10 * np.abs(ref).max())


def test_a_pivot_at_the_rounding_of_zero_is_declined():
    rng = np.random.default_rng(1)
    d = 5
    A = _random_psd(rng, 2, d)
    A[:, 3, :] = A[:, :, 3] = 0.0  # feature 3 without curvature
    A[1, 4] = A[1, :, 4] = A[1, 0]  # in block 1, feature 4 repeats feature 0
    A[1, 4, 4] = A[1, 0, 0]
    mask = np.array([[True, True, True, False, False], [True, True, True, False, False]])
    M, exact = masked_inverses_exact(A, mask)
    before = M.copy()
    ok = add_feature(M, np.array([0, 1]), np.array([3, 4]),
                     np.stack([A[0, :, 3], A[1, :, 4]]), mask)
    assert not ok.any()
    np.testing.assert_array_equal(M, before)
    # a block singular on its support: a pseudo-inverse, not to be updated
    mask[0, 3] = True
    _, exact = masked_inverses_exact(A, mask)
    assert exact.tolist() == [False, True]


def _steps_of(est, Xs, ys, monkeypatch):
    """The solver's steps of the fit of ``est`` (after the fit)."""
    return _steps_and_fit(est, Xs, ys, monkeypatch)[0]


def _reference(md, E, shift):
    d, m = E.shape
    out = np.zeros((m, d, d))
    for t in range(m):
        s = np.flatnonzero(E[:, t])
        if s.size:
            A = md.H[t][np.ix_(s, s)].copy()
            A[np.diag_indices_from(A)] += shift[t] + md.c[s]
            out[t][np.ix_(s, s)] = pseudo_inverse_psd(A)
    return out


@pytest.mark.parametrize("raw", [False, True])
def test_task_inverses_follow_small_moves_by_updates(raw, monkeypatch):
    Xs, ys = _tasks(2, m=10, raw=raw)
    steps = _steps_of(mt.GraphRegularizedRegressor(None, 3.0, 0.05, solver="active_newton"),
                      Xs, ys, monkeypatch)
    md = steps.model
    d, m = md.C.shape
    afresh = []
    full = active_newton_steps.masked_inverses_exact

    def counting(blocks, mask):
        afresh.append(len(blocks))
        return full(blocks, mask)

    monkeypatch.setattr(active_newton_steps, "masked_inverses_exact", counting)
    monkeypatch.setattr(active_newton_steps, "REFRESH_UPDATES", 6)
    rng = np.random.default_rng(3)
    E = rng.random((d, m)) < 0.6
    beta = np.zeros(d)
    steps._task_inv = None
    for _ in range(12):
        got = steps._task_inverses(E, beta).copy()
        ref = _reference(md, E, md._k_main)
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-9 * np.abs(ref).max())
        E = E.copy()
        for t in rng.choice(m, 4, replace=False):  # four tasks move by one or two features
            E[rng.choice(d, int(rng.integers(1, 3)), replace=False), t] ^= True
    # the first call computes every task; the moves after it only the refreshed ones and
    # those whose pivot was declined (the feature without curvature entering)
    assert afresh[0] == m
    assert sum(afresh[1:]) < 4 * 11


def test_a_run_takes_over_the_inverses_of_the_last_run_on_the_same_data(monkeypatch):
    Xs, ys = _tasks(4, m=10)
    make = lambda a, l1: mt.GraphRegularizedRegressor(  # noqa: E731
        None, a, l1, solver="active_newton", tol=1e-10)
    first = _steps_of(make(3.0, 0.05), Xs, ys, monkeypatch)
    second = _steps_of(make(3.0, 0.03), Xs, ys, monkeypatch)
    assert second._task_inv is not None and first._task_inv is None  # handed over
    other = _steps_of(make(3.0, 0.03), Xs[::-1], ys[::-1], monkeypatch)
    assert other._task_inv is None or other._task_inv is not second._task_inv
    # the fits are those without the carry-over
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TaskStructureWarning)
        make(3.0, 0.05).fit(Xs, ys)
        carried = make(3.0, 0.03).fit(Xs, ys)
        monkeypatch.setattr(active_newton_steps, "KEEP_INVERSES", 0)
        alone = make(3.0, 0.03).fit(Xs, ys)
    assert carried.converged_ and alone.converged_
    assert abs(carried.objective_[-1] - alone.objective_[-1]) <= 1e-9 * abs(
        alone.objective_[-1])


def test_group_corrected_tasks_preconditioner_is_the_inverse_without_the_chain(monkeypatch):
    Xs, ys = _tasks(6, m=9)
    steps = _steps_of(mt.TemporalGroupLassoRegressor(0.01, 1.0, solver="active_newton"),
                      Xs, ys, monkeypatch)
    md = steps.model
    d, m = md.C.shape
    rng = np.random.default_rng(8)
    E = np.zeros((d, m), dtype=bool)
    E[[0, 2, 3]] = True  # group rows: every task
    beta = np.zeros(d)
    beta[[0, 3]] = [5.0, 40.0]
    U = rng.standard_normal((d, m))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    U[beta == 0] = 0.0
    steps.by_rows = False
    precondition = steps._preconditioner(np.flatnonzero(E.any(axis=1)), E, beta, U, True)

    def without_chain(V):  # the Hessian with K's diagonal only
        out = (active_newton.apply_per_task(md.H, V) + V * md._k_main[None, :]
               + (md.c + beta)[:, None] * V
               - beta[:, None] * U * np.einsum("jt,jt->j", U, V)[:, None])
        return out * E

    V = rng.standard_normal((d, m)) * E
    np.testing.assert_allclose(precondition(without_chain(V)), V, rtol=0,
                               atol=1e-9 * np.abs(V).max())


def test_capacitance_inverse_is_the_inverse_or_pseudo_inverse():
    rng = np.random.default_rng(9)
    A = _random_psd(rng, 1, 6)[0] + 0.1 * np.eye(6)
    np.testing.assert_allclose(inverse_psd_conditioned(A) @ A, np.eye(6), atol=1e-10)
    Q = np.linalg.qr(rng.standard_normal((6, 6)))[0]
    S = (Q * np.array([1e-18, 0.5, 1, 2, 3, 4])) @ Q.T  # singular up to rounding
    np.testing.assert_allclose(inverse_psd_conditioned(S), pseudo_inverse_psd(S),
                               atol=1e-8)


def test_a_rows_minimizer_along_a_chain_meets_its_optimality_condition(monkeypatch):
    Xs, ys = _tasks(10, m=9)
    steps = _steps_of(mt.TemporalGroupLassoRegressor(0.05, 2.0, solver="active_newton"),
                      Xs, ys, monkeypatch)
    md = steps.model
    assert md.tridiagonal
    rng = np.random.default_rng(11)
    m = md.C.shape[1]
    j = 1
    A = md.block(j, np.arange(m))
    b = float(md.b[j])
    for scale, start in ((10.0, 1.0), (3.0, 1e-6), (3.0, 1e6)):
        p = rng.standard_normal(m)
        p *= scale * b / np.linalg.norm(p)
        w = md.row_minimizer(j, p, start)
        assert w is not None and np.linalg.norm(w) > 0
        # A w - p + b w / ||w|| = 0
        np.testing.assert_allclose(A @ w - p + b * w / np.linalg.norm(w), 0.0,
                                   atol=1e-9 * np.linalg.norm(p))
    p = rng.standard_normal(m)
    p *= 0.9 * b / np.linalg.norm(p)  # inside the ball: zero
    np.testing.assert_array_equal(md.row_minimizer(j, p, 1.0), 0.0)


def test_turned_rows_are_set_to_their_minimizers_and_the_optimum_stays(monkeypatch):
    # a strongly coupled chain (the rows' blocks dominate): small rows turn by the Newton
    # steps, the corrections take them, and the fit is the one without corrections
    Xs, ys = _tasks(12, m=60, d=6)
    make = lambda: mt.TemporalGroupLassoRegressor(  # noqa: E731
        0.3, 50.0, solver="active_newton", tol=1e-9)
    calls = []
    original = active_newton._Steps._row_minimizers

    def spy(self, W, F, G, rows):
        out = original(self, W, F, G, rows)
        calls.append(out[2])
        return out

    monkeypatch.setattr(active_newton._Steps, "_row_minimizers", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TaskStructureWarning)
        corrected = make().fit(Xs, ys)
        monkeypatch.setattr(active_newton_steps, "ROTATION", np.inf)
        plain = make().fit(Xs, ys)
    assert any(calls)
    assert corrected.converged_ and plain.converged_
    assert abs(corrected.objective_[-1] - plain.objective_[-1]) <= 1e-8 * abs(
        plain.objective_[-1])
