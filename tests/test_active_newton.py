"""The active-set Newton solver (``solver="active_newton"``,
:class:`multitask.solvers.active_newton.ActiveSetNewton`).

* Against cvxpy (the formula written out: a sum over the graph's edges, the temporal
  differences): the graph model (a weighted graph, the default complete graph, with a ridge
  term, a shared design) and the temporal group lasso, from weak to strong task coupling
  (the coupling's largest curvature up to ten thousand times the features'), reach at
  ``tol=1e-10`` an objective within ``REL = 1e-7`` (relative) of cvxpy's optimum, with a
  certified gap at most ``tol``.
* Against block coordinate descent at ``tol=1e-10``: the same objective to ``1e-9``
  (relative) and the same weights to ``1e-5`` of their largest entry (the problems are
  strictly convex), also with collinear and task-constant raw features (a singular reduced
  Hessian) and from a warm start.
* The automatic choice: taken for the graph model of many tasks where the coupling dominates
  the features' curvature (and for the temporal group lasso), not at weak coupling, for few
  tasks nor for rows with both an l1 and a group term; what it does not apply to is named; a
  budget too small warns.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import multitask as mt
from multitask.estimators.estimator import TaskStructureWarning
from multitask.solvers import make_solver
from multitask.solvers.active_newton import (
    COUPLING_RATIO,
    CURVATURE_SPREAD,
    HEAD_START,
    MIN_TASKS,
    ActiveSetNewton,
    coupling_ratio,
    curvature_spread,
)
from multitask.solvers.problem import Problem

cp = pytest.importorskip("cvxpy")

TOL = 1e-10
#: relative distance of the objective to cvxpy's optimum (cvxpy's own accuracy bounds it)
REL = 1e-7
#: a 4-task graph: a weighted path 0 - 1 - 2 - 3 plus the edge 0 - 2
EDGES = [(0, 1, 1.0), (1, 2, 0.5), (2, 3, 2.0), (0, 2, 0.3)]
#: graph strengths from weak to strong against features of unit variance
STRENGTHS = (0.1, 10.0, 5000.0)


def _tasks(seed, sizes=(24, 31, 18, 27), d=5, raw=False):
    rng = np.random.default_rng(500 + seed)
    W = rng.standard_normal((d, 2)) @ rng.standard_normal((2, len(sizes)))
    Xs, ys = [], []
    for t, n in enumerate(sizes):
        X = rng.standard_normal((n, d)) + 0.3 * rng.standard_normal(d)
        if raw:  # School-like columns: complementary dummies, a column constant in the task
            X[:, 0] = rng.random(n) < 0.5
            X[:, 1] = 1.0 - X[:, 0]
            X[:, 2] = float(t % 2)
            X[:, 3] *= 30.0
        Xs.append(X)
        ys.append(X @ W[:, t] + 0.5 + 0.7 * rng.standard_normal(n))
    return Xs, ys


def _squared_cvx(Xs, ys, W, b):
    return sum(cp.sum_squares(X @ W[:, t] + b[t] - y) / (2 * len(y))
               for t, (X, y) in enumerate(zip(Xs, ys, strict=True)))


def _squared_np(Xs, ys, W, b):
    return sum(float(np.sum((X @ W[:, t] + b[t] - y) ** 2)) / (2 * len(y))
               for t, (X, y) in enumerate(zip(Xs, ys, strict=True)))


def _graph_terms(edges, m, alpha, alpha_l1, alpha_l2):
    if edges is None:  # the default graph: sum_t ||w_t - w_bar||^2
        def smooth_cvx(W):
            mean = cp.sum(W, axis=1) / m
            return sum(cp.sum_squares(W[:, t] - mean) for t in range(m))

        def smooth_np(W):
            return float(np.sum((W - W.mean(axis=1, keepdims=True)) ** 2))
    else:
        def smooth_cvx(W):
            return sum(w * cp.sum_squares(W[:, s] - W[:, t]) for s, t, w in edges)

        def smooth_np(W):
            return sum(w * float(np.sum((W[:, s] - W[:, t]) ** 2)) for s, t, w in edges)

    def cvx(W):
        return (alpha * smooth_cvx(W) + alpha_l1 * cp.sum(cp.abs(W))
                + 0.5 * alpha_l2 * cp.sum_squares(W))

    def value(W):
        return (alpha * smooth_np(W) + alpha_l1 * float(np.abs(W).sum())
                + 0.5 * alpha_l2 * float(np.sum(W * W)))

    return cvx, value


def _tgl_terms(alpha_smooth, alpha_group):
    def cvx(W):
        return (alpha_smooth * cp.sum_squares(W[:, :-1] - W[:, 1:])
                + alpha_group * cp.sum(cp.norm(W, 2, axis=1)))

    def value(W):
        return (alpha_smooth * float(np.sum((W[:, :-1] - W[:, 1:]) ** 2))
                + alpha_group * float(np.linalg.norm(W, axis=1).sum()))

    return cvx, value


def _cvx_optimum(Xs, ys, pen):
    d, m = Xs[0].shape[1], len(Xs)
    W, b = cp.Variable((d, m)), cp.Variable(m)
    prob = cp.Problem(cp.Minimize(_squared_cvx(Xs, ys, W, b) + pen(W)))
    prob.solve(solver=cp.CLARABEL)
    assert prob.status == "optimal", prob.status
    return float(prob.value)


def _objective(est, Xs, ys, value):
    W = est.coef_.T
    return _squared_np(Xs, ys, W, est.intercept_) + value(W)


def _fit(est, Xs, ys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TaskStructureWarning)
        return est.fit(Xs, ys)


def _assert_matches_cvxpy(est, Xs, ys, cvx, value):
    assert est.solver_.name == "active_newton"
    assert est.converged_ and est.optimality_ <= TOL
    ref = _cvx_optimum(Xs, ys, cvx)
    ours = _objective(est, Xs, ys, value)
    assert abs(ours - ref) <= REL * max(1.0, abs(ref)), (ours, ref)


# ----------------------------------------------------------------------------- vs cvxpy
@pytest.mark.parametrize("alpha", STRENGTHS)
@pytest.mark.parametrize("graph", ["edges", "complete"])
def test_graph_model_matches_cvxpy(graph, alpha):
    Xs, ys = _tasks(0)
    edges = EDGES if graph == "edges" else None
    est = _fit(mt.GraphRegularizedRegressor(edges, alpha, 0.05, solver="active_newton",
                                            tol=TOL), Xs, ys)
    cvx, value = _graph_terms(edges, len(Xs), alpha, 0.05, 0.0)
    _assert_matches_cvxpy(est, Xs, ys, cvx, value)


def test_graph_model_with_a_ridge_term_and_a_shared_design_matches_cvxpy():
    Xs, ys = _tasks(1)
    est = _fit(mt.GraphRegularizedRegressor(EDGES, 500.0, 0.1, alpha_l2=0.3,
                                            solver="active_newton", tol=TOL), Xs, ys)
    cvx, value = _graph_terms(EDGES, len(Xs), 500.0, 0.1, 0.3)
    _assert_matches_cvxpy(est, Xs, ys, cvx, value)
    rng = np.random.default_rng(7)
    X = rng.standard_normal((40, 6))
    Y = X @ rng.standard_normal((6, 5)) + rng.standard_normal((40, 5))
    est = _fit(mt.GraphRegularizedRegressor(None, 1000.0, 0.05, solver="active_newton",
                                            tol=TOL), X, Y)
    Xs, ys = [X] * 5, list(Y.T)
    cvx, value = _graph_terms(None, 5, 1000.0, 0.05, 0.0)
    _assert_matches_cvxpy(est, Xs, ys, cvx, value)


@pytest.mark.parametrize("alpha_smooth", STRENGTHS)
def test_temporal_group_lasso_matches_cvxpy(alpha_smooth):
    Xs, ys = _tasks(2, sizes=(24, 31, 18, 27, 22), d=6)
    est = _fit(mt.TemporalGroupLassoRegressor(1.5, alpha_smooth, solver="active_newton",
                                              tol=TOL), Xs, ys)
    cvx, value = _tgl_terms(alpha_smooth, 1.5)
    _assert_matches_cvxpy(est, Xs, ys, cvx, value)
    assert 0 < len(est.selected_features_) < 6  # group rows left and entered


# ----------------------------------------------------------------------------- vs bcd
def _same_as_bcd(make, Xs, ys):
    ours = _fit(make("active_newton"), Xs, ys)
    ref = _fit(make("bcd"), Xs, ys)
    assert ours.converged_ and ref.converged_
    f_ours, f_ref = ours.objective_[-1], ref.objective_[-1]
    assert abs(f_ours - f_ref) <= 1e-9 * max(1.0, abs(f_ref)), (f_ours, f_ref)
    return ours, ref


@pytest.mark.parametrize("alpha", STRENGTHS)
def test_same_optimum_as_block_coordinate_descent(alpha):
    Xs, ys = _tasks(3, sizes=(30, 41, 28, 37, 33, 25), d=7)
    ours, ref = _same_as_bcd(lambda s: mt.GraphRegularizedRegressor(
        None, alpha, 0.02, solver=s, tol=TOL, max_iter=200_000), Xs, ys)
    np.testing.assert_allclose(ours.coef_, ref.coef_, rtol=0,
                               atol=1e-5 * np.abs(ref.coef_).max())
    ours, ref = _same_as_bcd(lambda s: mt.TemporalGroupLassoRegressor(
        0.5, alpha, solver=s, tol=TOL, max_iter=200_000), Xs, ys)
    np.testing.assert_allclose(ours.coef_, ref.coef_, rtol=0,
                               atol=1e-5 * np.abs(ref.coef_).max())


def test_collinear_and_task_constant_raw_features():
    # complementary dummies and a column constant within each task: the reduced Hessian of
    # the support is singular along the dummies' difference; the optimum is still certified
    Xs, ys = _tasks(4, raw=True)
    for alpha in (1.0, 1000.0):
        ours, _ = _same_as_bcd(lambda s, a=alpha: mt.GraphRegularizedRegressor(
            None, a, 0.01, solver=s, tol=TOL, max_iter=500_000), Xs, ys)
        assert ours.optimality_ <= TOL
        np.testing.assert_array_equal(ours.coef_[:, 2], 0.0)  # no signal within a task


def test_warm_start_path_reaches_the_cold_fits():
    Xs, ys = _tasks(5)
    est = mt.GraphRegularizedRegressor(None, 2000.0, solver="active_newton", tol=TOL,
                                       warm_start=True)
    for alpha_l1 in (0.5, 0.1, 0.02):
        _fit(est.set_params(alpha_l1=alpha_l1), Xs, ys)
        cold = _fit(mt.GraphRegularizedRegressor(None, 2000.0, alpha_l1,
                                                 solver="active_newton", tol=TOL), Xs, ys)
        assert est.converged_
        assert abs(est.objective_[-1] - cold.objective_[-1]) <= 1e-9 * abs(cold.objective_[-1])


# ----------------------------------------------------------------------------- choice
def _problem_of(est, Xs, ys):
    est._validate_params()
    data, _, _ = est._convert(Xs, ys, None)
    datafit = est._make_datafit(data)
    return Problem(datafit, est._make_penalty(datafit))


def test_auto_takes_it_where_the_coupling_dominates():
    Xs, ys = _tasks(6, sizes=tuple(range(12, 12 + MIN_TASKS)))
    strong = mt.GraphRegularizedRegressor(None, 1000.0, 0.05)
    assert coupling_ratio(_problem_of(strong, Xs, ys)) >= COUPLING_RATIO
    assert _fit(strong, Xs, ys).solver_.name == "active_newton"
    weak = mt.GraphRegularizedRegressor(None, 0.1, 0.05)
    assert coupling_ratio(_problem_of(weak, Xs, ys)) < COUPLING_RATIO
    assert _fit(weak, Xs, ys).solver_.name == "bcd"
    # few tasks: coordinate descent needs few epochs whatever the coupling
    few = mt.GraphRegularizedRegressor(None, 1000.0, 0.05)
    assert _fit(few, Xs[:4], ys[:4]).solver_.name == "bcd"
    # group rows under the temporal coupling: the same rule
    tgl = mt.TemporalGroupLassoRegressor(0.1, 1000.0)
    assert _fit(tgl, Xs, ys).solver_.name == "active_newton"
    assert _fit(tgl, Xs[:4], ys[:4]).solver_.name == "bcd"
    # rows with both an l1 and a group term are not claimed
    both = mt.GraphRegularizedRegressor(None, 1000.0, 0.05)
    datafit = _problem_of(both, Xs, ys).datafit
    penalty = _problem_of(both, Xs, ys).penalty
    penalty.row_prox_params = lambda: (0.05, 0.05, 0.0)
    assert ActiveSetNewton.preference(Problem(datafit, penalty)) is None


def _spread_tasks(seed=11, m=12, n=40, d=8):
    """Tasks whose features' scales span five orders of magnitude (raw features of different
    units), correlated within each task, a chain of weights over the tasks."""
    rng = np.random.default_rng(seed)
    scales = np.logspace(-2, 3, d)
    W = np.cumsum(rng.standard_normal((d, m)), axis=1) / scales[:, None]
    Xs, ys = [], []
    for t in range(m):
        Z = rng.standard_normal((n, d))
        Z[:, 1:] += 10.0 * Z[:, :1]  # strongly correlated features
        X = Z * scales
        Xs.append(X)
        ys.append(X @ W[:, t] + 0.3 * rng.standard_normal(n))
    return Xs, ys


def test_auto_takes_it_with_a_head_start_where_curvatures_spread():
    Xs, ys = _spread_tasks()
    tgl = mt.TemporalGroupLassoRegressor(0.01, 1.0, tol=TOL, max_iter=100_000)
    problem = _problem_of(tgl, Xs, ys)
    assert problem.n_tasks < MIN_TASKS
    assert curvature_spread(problem) >= CURVATURE_SPREAD
    fitted = _fit(tgl, Xs, ys)
    assert fitted.solver_.name == "active_newton"
    assert fitted.solver_.head_start == HEAD_START
    ref = _fit(mt.TemporalGroupLassoRegressor(0.01, 1.0, solver="bcd", tol=TOL,
                                              max_iter=500_000), Xs, ys)
    assert fitted.converged_ and ref.converged_
    assert abs(fitted.objective_[-1] - ref.objective_[-1]) <= 1e-9 * abs(ref.objective_[-1])
    # standardized features: no claim (coordinate descent, as before)
    Zs = [(X - X.mean(0)) / X.std(0) for X in Xs]
    assert curvature_spread(_problem_of(tgl, Zs, ys)) < CURVATURE_SPREAD
    assert _fit(mt.TemporalGroupLassoRegressor(0.01, 1.0), Zs, ys).solver_.name == "bcd"


def test_a_head_start_that_converges_is_coordinate_descent_itself():
    Xs, ys = _tasks(8)
    ours = _fit(mt.TemporalGroupLassoRegressor(0.5, 1.0, tol=1e-6,
                                               solver=ActiveSetNewton(head_start=500)), Xs, ys)
    ref = _fit(mt.TemporalGroupLassoRegressor(0.5, 1.0, tol=1e-6, solver="bcd"), Xs, ys)
    info = ours.solver_result_.info
    assert info["newton_steps"] == 0 and info["head_start_epochs"] == ref.n_iter_
    np.testing.assert_array_equal(ours.coef_, ref.coef_)


def test_newton_steps_take_over_from_a_crawling_head_start():
    Xs, ys = _spread_tasks()
    make = lambda solver: mt.TemporalGroupLassoRegressor(  # noqa: E731
        0.01, 1.0, tol=TOL, max_iter=500_000, solver=solver)
    ref = _fit(make("bcd"), Xs, ys)
    assert ref.n_iter_ > 5 * 20  # coordinate descent crawls here
    ours = _fit(make(ActiveSetNewton(head_start=20, tol=TOL)), Xs, ys)
    info = ours.solver_result_.info
    assert info["head_start_epochs"] == 20 and info["newton_steps"] >= 1
    assert ours.converged_ and ours.optimality_ <= TOL
    assert abs(ours.objective_[-1] - ref.objective_[-1]) <= 1e-9 * abs(ref.objective_[-1])


def test_the_other_preconditioner_is_tried_when_conjugate_gradients_crawl(monkeypatch):
    # School's first 20 schools on raw features and a constant column (curvatures from 10 to
    # 2e5): the rule by the median curvature picks the rows' blocks, whose conjugate
    # gradients crawl through the features' correlations; the tasks' blocks are tried on the
    # same step and kept where they take fewer iterations
    from multitask.datasets import load_school

    school = load_school(include_bias=True)
    Xs = [np.asarray(X, dtype=float) for X in school.X[:20]]
    ys = [np.asarray(y, dtype=float) for y in school.y[:20]]

    def fit():
        est = mt.TemporalGroupLassoRegressor(0.1, 0.1, alpha_l2=0.0, fit_intercept=False,
                                             solver="active_newton", tol=1e-8)
        return _fit(est, Xs, ys)

    switching = fit()
    monkeypatch.setattr("multitask.solvers.active_newton_steps.SWITCH_CG", 10**9)
    fixed = fit()
    assert switching.converged_ and fixed.converged_
    assert (switching.solver_result_.info["cg_iterations"]
            < 0.5 * fixed.solver_result_.info["cg_iterations"])
    assert abs(switching.objective_[-1] - fixed.objective_[-1]) <= 1e-7 * abs(
        fixed.objective_[-1])


def test_what_it_does_not_apply_to_is_named():
    Xs, ys = _tasks(7)
    with pytest.raises(ValueError, match="fused_sparse_group_lasso"):
        _fit(mt.FusedSparseGroupLassoRegressor(solver=ActiveSetNewton()), Xs, ys)
    with pytest.raises(ValueError, match="quadratic"):
        _fit(mt.GraphRegularizedClassifier(solver=ActiveSetNewton()), Xs,
             [np.where(y > np.median(y), 1, 0) for y in ys])
    with pytest.raises(ValueError, match="cg_max_iter"):
        ActiveSetNewton(cg_max_iter=0)


def test_a_short_budget_warns_and_is_not_converged():
    Xs, ys = _tasks(8)
    solver = make_solver("active_newton", max_iter=1, tol=1e-14)
    est = mt.GraphRegularizedRegressor(None, 1000.0, 0.01, solver=solver)
    with pytest.warns(ConvergenceWarning, match="active_newton"):
        _fit(est, Xs, ys)
    assert not est.converged_
