"""The support steps of block coordinate descent for elastic-net rows without group term or
task coupling (:mod:`multitask.solvers.lasso_support`): exact on a support, never worse, and
what they do to coordinate descent where the design has fewer rows than features."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import ElasticNet, Lasso

from multitask import CappedL1Regressor, IndependentLassoRegressor
from multitask.solvers import BlockCoordinateDescent, Multistage
from multitask.solvers.lasso_support import _task_objectives, support_point


def _problem(n=7, d=10, m=40, seed=0):
    """A shared design of fewer rows than features (a singular Gram matrix), ``m`` targets."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    W = rng.standard_normal((d, m)) * (rng.random((d, m)) < 0.5)
    Y = X @ W + 0.3 * rng.standard_normal((n, m))
    return X, Y


def _reference(X, Y, alpha, l1_ratio=1.0):
    n = X.shape[0]
    cols = []
    for t in range(Y.shape[1]):
        if l1_ratio == 1.0:
            est = Lasso(alpha=alpha, fit_intercept=False, tol=1e-15, max_iter=10 ** 7)
        else:
            est = ElasticNet(alpha=alpha, l1_ratio=l1_ratio, fit_intercept=False, tol=1e-15,
                             max_iter=10 ** 7)
        cols.append(est.fit(X, Y[:, t]).coef_)
    H = (X.T @ X / n)[None]
    C = X.T @ Y / n
    return np.column_stack(cols), H, C


@pytest.mark.parametrize("l1_ratio", [1.0, 0.7])
def test_support_steps_reach_the_minimizer_on_the_right_support(l1_ratio):
    X, Y = _problem()
    alpha = 0.05
    Wopt, H, C = _reference(X, Y, alpha, l1_ratio)
    d = X.shape[1]
    a = np.full(d, alpha * l1_ratio)
    c = np.full(d, alpha * (1.0 - l1_ratio))
    fopt = _task_objectives(H, C, Wopt, a, c)
    rng = np.random.default_rng(1)
    start = Wopt + 0.01 * rng.standard_normal(Wopt.shape) * (Wopt != 0)
    point, work = support_point(H, C, start, a, c, max_rows=d)
    assert point is not None and work > 0
    f = _task_objectives(H, C, point, a, c)
    # no task worse than where it started; the tasks whose signs the perturbation kept reach
    # the minimizer (to rounding)
    assert np.all(f <= _task_objectives(H, C, start, a, c) + 1e-15)
    kept = np.all(np.sign(start) == np.sign(Wopt), axis=0)
    assert kept.sum() >= Wopt.shape[1] // 2
    np.testing.assert_allclose(f[kept], fopt[kept], rtol=0, atol=1e-12)


def test_support_steps_drop_a_feature_along_a_flat_direction():
    # a support of more features than rows: the face is flat along the Gram matrix's null
    # space, and the steps move along it until a feature leaves, lowering the objective
    X, Y = _problem(n=5, d=8, m=20, seed=3)
    alpha = 0.02
    Wopt, H, C = _reference(X, Y, alpha)
    a = np.full(8, alpha)
    c = np.zeros(8)
    start = Wopt.copy()
    start[Wopt == 0] = 1e-3  # every feature in the support (8 > 5 rows)
    before = _task_objectives(H, C, start, a, c)
    point, _ = support_point(H, C, start, a, c, max_rows=8, max_steps=8)
    assert point is not None
    after = _task_objectives(H, C, point, a, c)
    assert np.all(after <= before + 1e-15) and np.any(after < before - 1e-9)
    assert np.all((point != 0).sum(axis=0) < 8)


def test_only_the_tasks_given_move_and_the_input_is_kept():
    X, Y = _problem()
    Wopt, H, C = _reference(X, Y, 0.05)
    a, c = np.full(10, 0.05), np.zeros(10)
    start = Wopt + 0.01 * (Wopt != 0)
    copy = start.copy()
    tasks = np.zeros(start.shape[1], dtype=bool)
    tasks[::3] = True
    point, _ = support_point(H, C, start, a, c, max_rows=10, tasks=tasks)
    np.testing.assert_array_equal(start, copy)
    np.testing.assert_array_equal(point[:, ~tasks], start[:, ~tasks])
    assert support_point(H, C, start, a, c, max_rows=10,
                         tasks=np.zeros_like(tasks))[0] is None
    assert support_point(H, C, start, a, c, max_rows=2)[0] is None  # too many rows
    assert support_point(H, C, np.zeros_like(start), a, c, max_rows=10)[0] is None


def test_coordinate_descent_with_support_steps_on_a_singular_design():
    # the lasso (the capped l1's first stage, n_stages=1) on 7 rows and 10 features per
    # target: plain coordinate descent crawls along the singular Gram matrix; with the
    # support steps it reaches the certificate in a quarter of the epochs or fewer, at the
    # same optimum
    # (scikit-learn's Lasso to 1e-15; the library's loss is the mean of half squares)
    X, Y = _problem(m=60)
    Wopt, _, _ = _reference(X - X.mean(0), Y - Y.mean(0), 0.01)
    runs = {}
    for steps in (True, False):
        solver = Multistage(n_stages=1, tol=1e-8, warn=False,
                            inner=BlockCoordinateDescent(tol=1e-8, max_iter=20000,
                                                         support_steps=steps))
        model = CappedL1Regressor(alpha=0.01, theta=1e6, n_stages=1, solver=solver)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # the stage key (one stage)
            runs[steps] = model.fit(X, Y)
        np.testing.assert_allclose(model.coef_.T, Wopt, atol=1e-6)
    assert runs[True].n_iter_ * 4 <= runs[False].n_iter_


def test_support_steps_must_be_a_boolean():
    with pytest.raises(ValueError, match="support_steps must be True or False"):
        BlockCoordinateDescent(support_steps=1)


def test_per_task_designs_reach_the_same_optimum_in_fewer_epochs():
    # per-task designs of strongly correlated features (each Gram matrix its own, nearly
    # singular): coordinate descent crawls at a weak penalty
    rng = np.random.default_rng(5)
    mix = np.eye(12) + 0.9 * rng.standard_normal((12, 12))
    Xs = [rng.standard_normal((n, 12)) @ mix for n in (20, 26, 31, 24, 22)]
    ys = [X @ (rng.standard_normal(12) * (rng.random(12) < 0.5)) + rng.standard_normal(len(X))
          for X in Xs]
    fits = {}
    for steps in (True, False):
        model = IndependentLassoRegressor(
            alpha=1e-3, tol=1e-8,
            solver=BlockCoordinateDescent(tol=1e-8, max_iter=100000, support_steps=steps))
        fits[steps] = model.fit(Xs, ys)
        assert model.converged_
    np.testing.assert_allclose(fits[True].coef_, fits[False].coef_, atol=1e-5)
    assert 2 * fits[True].n_iter_ < fits[False].n_iter_


def test_a_rounding_direction_of_the_null_space_is_not_followed():
    # a support whose Gram matrix is singular, with the rounding that makes its "zero"
    # eigenvalue slightly negative and leaves C a component along that direction (as the
    # capped l1's later stages, with unpenalized rows, met on School's raw features): the
    # computed objective falls without bound along it, and a step that followed it to the
    # first change of sign (one entry barely moving towards zero) would blow up
    rng = np.random.default_rng(4)
    d = 6
    v = np.array([1e-8, 1.0, 1.0, 1.0, 1.0, 1.0])
    v /= np.linalg.norm(v)
    basis = np.linalg.qr(np.column_stack([v, rng.standard_normal((d, d - 1))]))[0]
    basis[:, 0] = v
    lam = np.array([-1e-14, 0.5, 1.0, 2.0, 5.0, 20.0])
    H = ((basis * lam) @ basis.T)[None]
    w = np.array([-1.0, 1.0, 1.0, 1.0, 1.0, 1.0])  # along +v only entry 0 moves towards 0
    C = (H[0] @ w + 1e-9 * v)[:, None]  # at the face's minimizer but for rounding along v
    a = np.zeros(d)  # unpenalized rows: the objective has no pull of its own along v
    c = np.zeros(d)
    W = w[:, None]
    point, _ = support_point(H, C, W, a, c, max_rows=d, max_steps=8)
    assert point is None or np.abs(point).max() <= 10.0 * np.abs(W).max()


@pytest.mark.parametrize("m", [0, 1, 2, 5])
def test_the_structures_have_one_column_per_task(m):
    # a task's structure is compared chunk to chunk column by column, one task or several
    from multitask.solvers.bcd import _fused_structure, _sign_structure

    W = np.random.default_rng(m).standard_normal((3, m))
    for structure in (_fused_structure, _sign_structure):
        assert all(part.shape == (3, m) for part in structure(W))
