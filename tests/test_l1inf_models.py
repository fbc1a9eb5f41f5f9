"""l1,inf-constrained models: projected subgradient, FISTA with the l1,inf projection, the
exact linear program, estimators, path and CV (issue 5).

The paper reproduction's tests (reduced synthetic experiment, step and radius selection rules)
are in ``test_l1inf_experiment.py``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from multitask.data import as_multitask_data
from multitask.estimators.l1inf import (
    L1InfClassifier,
    L1InfRegressor,
    constraint_norm,
    make_constraint,
)
from multitask.losses import get_datafit
from multitask.model_selection import MultiTaskCV, order_path, regularization_path
from multitask.penalties import ColumnL1Balls, ColumnL2Balls
from multitask.penalties.l1inf import L1InfBall, l1inf_norm
from multitask.solvers import LinearProgram, ProjectedSubgradient

cp = pytest.importorskip("cvxpy")


def _tasks(rng, d=12, m=3, n=25, classification=True):
    W0 = np.zeros((d, m))
    W0[:3] = rng.standard_normal((3, m))
    Xs = [rng.standard_normal((n, d)) for _ in range(m)]
    if classification:
        ys = [(X @ W0[:, t] + 0.5 * rng.standard_normal(n) > 0).astype(int)
              for t, X in enumerate(Xs)]
    else:
        ys = [X @ W0[:, t] + 0.1 * rng.standard_normal(n) for t, X in enumerate(Xs)]
    return Xs, ys


def _cvx_optimum(Xs, ys, C, loss, fit_intercept, constraint="l1inf"):
    d, m = Xs[0].shape[1], len(Xs)
    W = cp.Variable((d, m))
    b = cp.Variable(m)
    terms = []
    for t, (X, y) in enumerate(zip(Xs, ys, strict=True)):
        z = X @ W[:, t] + (b[t] if fit_intercept else 0)
        n = X.shape[0]
        if loss == "hinge":
            s = 2.0 * y - 1.0
            terms.append(cp.sum(cp.pos(1 - cp.multiply(s, z))) / n)
        elif loss == "logistic":
            s = 2.0 * y - 1.0
            terms.append(cp.sum(cp.logistic(-cp.multiply(s, z))) / n)
        else:
            terms.append(0.5 * cp.sum_squares(y - z) / n)
    cons = ([cp.sum(cp.max(cp.abs(W), axis=1)) <= C] if constraint == "l1inf"
            else [cp.sum(cp.abs(W), axis=0) <= C])
    prob = cp.Problem(cp.Minimize(sum(terms)), cons)
    prob.solve(solver="CLARABEL")
    return prob.value, W.value


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_subgradient_gap_to_cvxpy_shrinks_and_iterates_feasible(fit_intercept):
    rng = np.random.default_rng(0)
    Xs, ys = _tasks(rng, d=20, m=4, n=25)
    C = 1.0
    f_star, _ = _cvx_optimum(Xs, ys, C, "hinge", fit_intercept)
    data, _ = as_multitask_data(Xs, ys, classification=True)
    datafit = get_datafit("hinge", data, fit_intercept)
    gaps = []
    for T in (20, 200, 2000):
        norms = []
        res = ProjectedSubgradient(max_iter=T).solve(
            datafit, L1InfBall(C),
            callback=lambda k, f, W, b, norms=norms: norms.append(l1inf_norm(W)),
        )
        # the hinge has no prox-gradient measure: the run takes its whole budget and reports
        # the certified gap of the subgradient dual point (loose at the kinks, but a bound)
        assert res.n_iter == T and len(norms) == T and res.info["certified"]
        assert max(norms) <= C * (1 + 1e-12)  # every iterate feasible
        assert np.all(np.diff(np.minimum.accumulate(res.objective)) <= 0)
        gap = res.final_objective - f_star
        assert gap >= -1e-6 * abs(f_star)  # cvxpy's optimum is a lower bound
        assert res.optimality >= gap / res.final_objective - 1e-9
        gaps.append(gap)
    assert gaps[2] < gaps[1] < gaps[0]
    assert gaps[2] < 0.02 * abs(f_star)


def test_subgradient_iterate_options_and_warning():
    rng = np.random.default_rng(1)
    Xs, ys = _tasks(rng)
    data, _ = as_multitask_data(Xs, ys, classification=True)
    datafit = get_datafit("hinge", data, True)
    ball = L1InfBall(2.0)
    best = ProjectedSubgradient(max_iter=100, iterate="best").solve(datafit, ball)
    last = ProjectedSubgradient(max_iter=100, iterate="last").solve(datafit, ball)
    avg = ProjectedSubgradient(max_iter=100, iterate="average").solve(datafit, ball)
    assert best.final_objective == pytest.approx(best.objective.min())
    assert last.final_objective == pytest.approx(last.objective[-1])
    assert l1inf_norm(avg.W) <= 2.0 * (1 + 1e-12)
    assert avg.final_objective == pytest.approx(datafit.value(avg.W, avg.intercept_variable))
    # the window rule (the only stopping rule for the hinge) warns when it does not fire
    with pytest.warns(ConvergenceWarning):
        ProjectedSubgradient(max_iter=5, window_tol=1e-12, window=2).solve(datafit, ball)
    # without a window rule the budget is the rule: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        ProjectedSubgradient(max_iter=5).solve(datafit, ball)
    grid = ProjectedSubgradient(eta0=[0.01, 0.1, 1.0], max_iter=50).solve(datafit, ball)
    assert grid.final_objective == pytest.approx(grid.info["eta0_objectives"].min())
    with pytest.raises(ValueError, match="iterate"):
        ProjectedSubgradient(iterate="median")
    with pytest.raises(ValueError, match="eta0"):
        ProjectedSubgradient(eta0=-1.0)
    with pytest.raises(ValueError, match="constraint set"):
        from multitask.penalties import L1

        ProjectedSubgradient().solve(datafit, L1(0.1))


def test_subgradient_stops_on_the_optimality_measure_for_smooth_losses():
    """For a smooth loss the subgradient method's ``tol`` is the shared optimality measure."""
    rng = np.random.default_rng(8)
    Xs, ys = _tasks(rng, d=8, m=3, n=40, classification=False)
    data, _ = as_multitask_data(Xs, ys)
    datafit = get_datafit("squared", data, True)
    res = ProjectedSubgradient(max_iter=20000, tol=1e-2, window=10).solve(datafit,
                                                                         L1InfBall(0.8))
    assert res.converged and res.optimality <= 1e-2 and res.n_iter < 20000


@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_fista_l1inf_matches_cvxpy(loss):
    rng = np.random.default_rng(2)
    Xs, ys = _tasks(rng, d=10, m=3, n=30, classification=loss == "logistic")
    C = 0.8
    f_star, W_star = _cvx_optimum(Xs, ys, C, loss, True)
    est_cls = L1InfClassifier if loss == "logistic" else L1InfRegressor
    kw = {"loss": loss} if loss == "logistic" else {}
    est = est_cls(radius=C, solver="fista", tol=1e-8, max_iter=20000, **kw).fit(Xs, ys)
    assert est.solver_.name == "fista"
    assert est.converged_ and est.optimality_ <= 1e-8
    data, _ = as_multitask_data(Xs, ys, classification=loss == "logistic")
    datafit = get_datafit(loss, data, True)
    # the objective at the fitted weights and intercepts (original features)
    f_ours = datafit.value(est.coef_.T, est.intercept_ if loss == "logistic" else None)
    assert abs(f_ours - f_star) <= 1e-6 * abs(f_star)
    assert l1inf_norm(est.coef_.T) <= C * (1 + 1e-9)
    assert np.abs(est.coef_.T - W_star).max() <= 1e-3 * max(1.0, np.abs(W_star).max())


def test_constraint_baselines_same_solver_and_feasible():
    rng = np.random.default_rng(3)
    Xs, ys = _tasks(rng, d=15, m=4)
    kw = {"solver": "subgradient", "max_iter": 200}
    for c in ("l1inf", "l1", "l2"):
        est = L1InfClassifier(radius=1.5, constraint=c, **kw).fit(Xs, ys)
        assert est.solver_.name == "subgradient"
        norm = np.max(np.atleast_1d(constraint_norm(est.coef_.T, c)))
        assert norm <= 1.5 * (1 + 1e-9)
    radii = np.array([0.5, 1.0, 2.0, 0.0])
    est = L1InfClassifier(radius=radii, constraint="l1", solver="subgradient",
                          max_iter=100).fit(Xs, ys)
    assert np.all(np.abs(est.coef_).sum(axis=1) <= radii * (1 + 1e-9) + 1e-12)
    assert np.all(est.coef_[3] == 0)
    # with one task, the l1,inf ball is the l1 ball
    X1, y1 = Xs[:1], ys[:1]
    kw = {"solver": "subgradient", "max_iter": 150, "eta0": 0.5}
    a = L1InfClassifier(radius=1.0, **kw).fit(X1, y1)
    b = L1InfClassifier(radius=1.0, constraint="l1", **kw).fit(X1, y1)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-10)


def test_bad_parameters_raise():
    rng = np.random.default_rng(4)
    Xs, ys = _tasks(rng)
    with pytest.raises(ValueError, match="radius"):
        L1InfClassifier(radius=-1.0).fit(Xs, ys)
    with pytest.raises(ValueError, match="constraint"):
        L1InfClassifier(constraint="l3").fit(Xs, ys)
    with pytest.raises(ValueError, match="solver"):
        L1InfClassifier(solver="newton").fit(Xs, ys)
    with pytest.raises(ValueError, match="gradient"):  # the hinge is not smooth
        L1InfClassifier(solver="fista").fit(Xs, ys)
    with pytest.raises(ValueError, match="loss"):
        L1InfClassifier(loss="squared").fit(Xs, ys)
    with pytest.raises(ValueError, match="radius"):
        L1InfClassifier(radius=[1.0, 2.0, 3.0]).fit(Xs, ys)  # per-task radii need l1 / l2
    with pytest.raises(ValueError, match="radius"):
        L1InfClassifier(radius=[1.0, 2.0], constraint="l2").fit(Xs, ys)
    with pytest.raises(ValueError, match="constraint"):
        make_constraint("linf", 1.0)
    with pytest.raises(ValueError, match="tol"):
        L1InfClassifier(tol=0.0).fit(Xs, ys)  # tol is a tolerance, not a switch


def test_radius_zero_and_auto_solver():
    rng = np.random.default_rng(5)
    Xs, ys = _tasks(rng, classification=False)
    est = L1InfRegressor(radius=0.0).fit(Xs, ys)
    assert np.all(est.coef_ == 0)
    np.testing.assert_allclose(est.intercept_, [np.mean(y) for y in ys])
    est = L1InfRegressor(radius=1.0).fit(Xs, ys)
    assert est.solver_.name == "fista"
    labels = [(y > 0).astype(int) for y in ys]
    assert L1InfClassifier(loss="logistic", radius=1.0).fit(Xs, labels).solver_.name == "fista"
    # the hinge loss on a small problem: the exact LP (l1,inf and l1 balls), else subgradient
    assert L1InfClassifier(radius=1.0).fit(Xs, labels).solver_.name == "lp"
    assert L1InfClassifier(radius=1.0, constraint="l1").fit(Xs, labels).solver_.name == "lp"
    assert L1InfClassifier(radius=1.0, constraint="l2",
                           max_iter=50).fit(Xs, labels).solver_.name == "subgradient"


def test_path_warm_start_and_cv():
    rng = np.random.default_rng(6)
    Xs, ys = _tasks(rng, d=15, m=3, n=40, classification=False)
    radii = order_path("radius", [2.0, 0.1, 0.5])
    assert radii == [0.1, 0.5, 2.0]  # the smallest ball (strongest) first
    path = regularization_path(L1InfRegressor(tol=1e-8), Xs, ys, param_name="radius",
                               values=radii)
    assert list(path.grid) == radii
    norms = [l1inf_norm(c.T) for c in path.coefs]
    assert all(n <= r * (1 + 1e-9) for n, r in zip(norms, radii, strict=True))
    nnz = [int(np.sum(np.any(c != 0, axis=0))) for c in path.coefs]
    assert nnz[0] <= nnz[-1]
    assert np.all(path.optimality <= 1e-8)
    # a warm-started fit reaches the cold fit's solution
    cold = L1InfRegressor(radius=2.0, tol=1e-10, max_iter=5000).fit(Xs, ys)
    np.testing.assert_allclose(path.coefs[-1], cold.coef_, atol=1e-3)
    cv = MultiTaskCV(L1InfRegressor(), param_grid={"radius": [0.01, 0.3, 3.0]}, cv=3)
    cv.fit(Xs, ys)
    assert cv.path_param_ == "radius"
    assert cv.best_params_["radius"] != 0.01  # the tiny ball underfits
    assert cv.score(Xs, ys) > 0.5


# ----------------------------------------------------------------------------- exact LP solver
def _hinge_objective(Xs, ys, W, b):
    """``sum_t mean_i max(0, 1 - y_i (x_i^T w_t + b_t))`` with labels in {0, 1}."""
    return sum(np.mean(np.maximum(0.0, 1.0 - (2.0 * y - 1.0) * (X @ W[:, t] + b[t])))
               for t, (X, y) in enumerate(zip(Xs, ys, strict=True)))


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("constraint", ["l1inf", "l1"])
def test_lp_solver_matches_cvxpy_and_is_feasible(constraint, fit_intercept):
    """The LP solution's objective equals cvxpy's optimum to 1e-6 relative; it is feasible;
    its optimality measure (HiGHS's relative duality gap) is below tol."""
    rng = np.random.default_rng(10)
    radii = {"l1inf": [0.5, 2.0], "l1": [0.5, 2.0, np.array([0.3, 1.0, 0.0, 2.5])]}
    Xs, ys = _tasks(rng, d=15, m=4, n=18)
    Xs[1] = Xs[1][:11]  # unequal task sizes (1 / n_t weights)
    ys[1] = ys[1][:11]
    for C in radii[constraint]:
        f_star, _ = _cvx_optimum(Xs, ys, C, "hinge", fit_intercept, constraint)
        est = L1InfClassifier(radius=C, constraint=constraint, solver="lp",
                              fit_intercept=fit_intercept, tol=1e-8).fit(Xs, ys)
        assert est.solver_.name == "lp" and est.converged_
        assert 0 <= est.optimality_ <= 1e-8
        W, b = est.coef_.T, est.intercept_
        f_lp = _hinge_objective(Xs, ys, W, b)
        assert f_lp == pytest.approx(est.objective_[-1], rel=1e-12)
        assert abs(f_lp - f_star) <= 1e-6 * abs(f_star), (C, f_lp, f_star)
        norms = np.atleast_1d(constraint_norm(W, constraint))
        assert np.all(norms <= np.atleast_1d(C) * (1 + 1e-12) + 1e-15)
        if not fit_intercept:
            assert np.all(b == 0)
        if np.ndim(C):
            assert np.all(W[:, 2] == 0)  # radius 0 for the third task
    # the subgradient method cannot beat the exact solution
    sub = L1InfClassifier(radius=2.0, constraint=constraint, fit_intercept=fit_intercept,
                          solver="subgradient", max_iter=300).fit(Xs, ys)
    lp = L1InfClassifier(radius=2.0, constraint=constraint, fit_intercept=fit_intercept,
                         solver="lp").fit(Xs, ys)
    assert lp.objective_[-1] <= sub.objective_.min() + 1e-9


@pytest.mark.parametrize("fmt", ["list_sparse", "shared", "shared_sparse", "long"])
def test_lp_solver_input_formats(fmt):
    """Shared and per-task designs, dense and sparse: the same optimum as cvxpy (1e-6 rel.)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(11)
    d, m, n = 10, 3, 16
    X = rng.standard_normal((n, d)) * (rng.random((n, d)) < 0.5)  # zeros for the sparse case
    W0 = rng.standard_normal((d, m)) * (np.arange(d) < 3)[:, None]
    Y = (X @ W0 + 0.3 * rng.standard_normal((n, m)) > 0).astype(int)
    Y[0], Y[1] = 0, 1  # both classes in every task
    if fmt.startswith("shared"):
        Xs, ys = [X] * m, [Y[:, t] for t in range(m)]
        args = ((sp.csr_matrix(X) if fmt == "shared_sparse" else X), Y)
    else:
        Xs = [X[t::m] for t in range(m)] if fmt == "long" else [X + t for t in range(m)]
        ys = [Y[t::m, t] for t in range(m)] if fmt == "long" else [Y[:, t] for t in range(m)]
        for t in range(m):
            ys[t][:2] = [0, 1]
        if fmt == "long":
            task = np.concatenate([np.full(len(y), t) for t, y in enumerate(ys)])
            args = (np.vstack(Xs), np.concatenate(ys), task)
        else:
            args = ([sp.csr_matrix(Xt) for Xt in Xs], ys)
    for constraint in ("l1inf", "l1"):
        f_star, _ = _cvx_optimum(Xs, ys, 1.5, "hinge", True, constraint)
        est = L1InfClassifier(radius=1.5, constraint=constraint, solver="lp").fit(*args)
        f_lp = _hinge_objective(Xs, ys, est.coef_.T, est.intercept_)
        assert abs(f_lp - f_star) <= 1e-6 * abs(f_star), (constraint, f_lp, f_star)


def test_lp_solver_errors():
    rng = np.random.default_rng(12)
    Xs, ys = _tasks(rng)
    with pytest.raises(ValueError, match="logistic loss offers no 'max_affine'"):
        L1InfClassifier(loss="logistic", solver="lp").fit(Xs, ys)
    with pytest.raises(ValueError, match="offers no 'lp'"):  # the l2 balls: not polyhedral
        L1InfClassifier(constraint="l2", solver="lp").fit(Xs, ys)
    Xr, yr = _tasks(rng, classification=False)
    with pytest.raises(ValueError, match="squared loss offers no 'max_affine'"):
        L1InfRegressor(solver="lp").fit(Xr, yr)
    data, _ = as_multitask_data(Xs, ys, classification=True)
    datafit = get_datafit("hinge", data, True)
    with pytest.raises(ValueError, match="offers no 'lp'"):
        LinearProgram().solve(datafit, ColumnL2Balls(1.0))
    with pytest.raises(ValueError, match="method"):
        LinearProgram(method="simplex")
    with pytest.raises(ValueError, match="max_affine"):
        LinearProgram().solve(get_datafit("logistic", data, True), L1InfBall(1.0))
    # the generic LP solves what the penalty and the datafit declare: per-task l1 balls too
    res = LinearProgram().solve(datafit, ColumnL1Balls(1.0))
    assert res.converged and np.all(np.abs(res.W).sum(axis=0) <= 1.0 * (1 + 1e-12))


def test_task_l1_balls_projection_matches_columnwise_l1_projection():
    from multitask.penalties import project_l1_ball

    rng = np.random.default_rng(13)
    V = rng.standard_normal((30, 7)) * rng.choice([0.01, 1.0, 10.0], size=7)
    V[:, 4] = 0.0
    radii = np.array([0.5, 0.0, 3.0, 1e3, 1.0, 2.0, 0.1])
    ball = make_constraint("l1", radii, 7)
    assert isinstance(ball, ColumnL1Balls)
    P = ball.project(V)
    for t in range(7):
        np.testing.assert_allclose(P[:, t], project_l1_ball(V[:, t], radii[t]), atol=1e-14)
    assert np.all(np.abs(P).sum(axis=0) <= radii * (1 + 1e-12))
    np.testing.assert_array_equal(P[:, 3], V[:, 3])  # inside its ball: unchanged
    assert np.all(P[:, 1] == 0)
