"""The composable core from the estimators' side: solver capabilities, alpha_max, alpha_l2,
and agreement of the solvers that apply to the same model.

* A solver declares what it needs of the datafit and the penalty; ``solver.missing`` names
  what is lacking, ``solver.check`` and the estimators raise with that message.
* ``alpha_max`` is the smallest strength at which the fitted weights are zero (the dual norm
  of the loss gradient at zero, written here from its formula); just below it they are not.
* ``alpha_l2`` adds ``(alpha_l2 / 2) ||W||_F^2`` (the elastic-net term) to every model:
  checked against cvxpy for l1, l2,1 and the trace norm.
* ``solver="bcd"``, ``"fista"``, ``"pg"`` and ``"exact"`` give the same model where they
  apply.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from multitask import (
    IndependentLassoClassifier,
    IndependentLassoRegressor,
    IndependentRidgeRegressor,
    L21Classifier,
    L21Regressor,
    MultiTaskRegressor,
    RobustMTLClassifier,
    RobustMTLRegressor,
    SparseLowRankRegressor,
    TraceNormClassifier,
    TraceNormRegressor,
)
from multitask.data import as_multitask_data
from multitask.losses import Hinge, Logistic, Squared, SquaredHinge
from multitask.penalties import (
    L1,
    L21,
    CappedTraceNorm,
    ColumnL1Balls,
    L1Ball,
    LowRankOutlier,
    Ridge,
    SparseLowRank,
    TraceNorm,
)
from multitask.solvers import (
    BlockCoordinateDescent,
    DivideAndConquer,
    LinearizedADMM,
    LinearProgram,
    Multistage,
    ProjectedSubgradient,
    ProximalGradient,
    QuadraticExact,
    make_solver,
)

cp = pytest.importorskip("cvxpy")


@pytest.fixture
def datafits(regression_lists, classification_lists):
    Xs, ys = regression_lists
    reg, _ = as_multitask_data(Xs, ys)
    Xc, yc = classification_lists
    clf, _ = as_multitask_data(Xc, yc, classification=True)
    return {"squared": Squared(reg), "squared_no_gram": Squared(reg, use_gram=False),
            "logistic": Logistic(clf), "squared_hinge": SquaredHinge(clf), "hinge": Hinge(clf)}


# ----------------------------------------------------------------------------- capabilities
MISSING = [
    (ProximalGradient, "hinge", L1(0.1), ["the hinge loss offers no 'gradient'"]),
    (ProximalGradient, "squared", CappedTraceNorm(0.1, 1.0),
     ["the capped_trace penalty has no prox"]),
    (BlockCoordinateDescent, "logistic", TraceNorm(0.1),
     ["the logistic loss offers no 'quadratic'", "the trace penalty offers no 'row_prox'"]),
    (BlockCoordinateDescent, "squared_no_gram", L21(0.1),
     ["the squared loss offers no 'quadratic'"]),
    (QuadraticExact, "squared", L1(0.1), ["the l1 penalty is not a pure ridge"]),
    (QuadraticExact, "squared", TraceNorm(0.1), ["the trace penalty offers no 'row_prox'"]),
    (LinearizedADMM, "logistic", LowRankOutlier(0.1, 1.0),
     ["the logistic loss offers no 'prox_scores'"]),
    (ProjectedSubgradient, "hinge", L1(0.1), ["the l1 penalty is not a constraint set"]),
    (LinearProgram, "squared", L1Ball(1.0),
     ["the squared loss offers no 'max_affine'", "the l1_ball penalty offers no 'lp'"]),
    (Multistage, "squared", TraceNorm(0.1), ["the trace penalty offers no 'stages'"]),
]


@pytest.mark.parametrize("solver, loss, penalty, expected", MISSING,
                         ids=[f"{s.__name__}-{lo}-{p.name}" for s, lo, p, _ in MISSING])
def test_solver_missing_names_what_is_lacking(solver, loss, penalty, expected, datafits):
    s = solver()
    miss = s.missing(datafits[loss], penalty)
    assert len(miss) == len(expected)
    for m, e in zip(miss, expected, strict=True):
        assert m.startswith(e), (m, e)
    assert not s.supports(datafits[loss], penalty)
    with pytest.raises(ValueError, match=f"Solver {s.name!r} cannot solve this model: "):
        s.solve(datafits[loss], penalty)


APPLIES = [
    (ProximalGradient, "logistic", TraceNorm(0.1)),
    (ProximalGradient, "squared", SparseLowRank(0.1, 1.0)),
    (BlockCoordinateDescent, "squared", L1(0.1)),
    (QuadraticExact, "squared", Ridge(0.1)),
    (LinearizedADMM, "squared_hinge", LowRankOutlier(0.1, 1.0)),
    (ProjectedSubgradient, "hinge", L1Ball(1.0)),
    (LinearProgram, "hinge", ColumnL1Balls(1.0)),
    (Multistage, "squared", CappedTraceNorm(0.1, 1.0)),
]


@pytest.mark.parametrize("solver, loss, penalty", APPLIES,
                         ids=[f"{s.__name__}-{lo}-{p.name}" for s, lo, p in APPLIES])
def test_solver_applies_where_the_capabilities_are(solver, loss, penalty, datafits):
    s = solver()
    assert s.missing(datafits[loss], penalty) == [] and s.supports(datafits[loss], penalty)
    s.check(datafits[loss], penalty)  # no error
    # divide-and-conquer needs what its base solver needs
    dc = DivideAndConquer(s, n_groups=2)
    assert dc.missing(datafits[loss], penalty) == []
    assert DivideAndConquer(solver(), n_groups=2).missing(datafits["hinge"], Ridge(1.0)) == \
        solver().missing(datafits["hinge"], Ridge(1.0))


def test_make_solver_names_and_settings():
    assert isinstance(make_solver("pg"), ProximalGradient) and not make_solver("pg").accelerated
    assert make_solver("bcd", tol=1e-7).tol == 1e-7
    with pytest.raises(ValueError, match="Unknown solver 'no-such-solver'"):
        make_solver("no-such-solver")
    with pytest.raises(ValueError, match="has no setting"):
        make_solver("fista").with_params(momentum=0.9)


ESTIMATOR_REFUSALS = [
    (TraceNormRegressor, {"solver": "bcd"}, "the trace penalty offers no 'row_prox'"),
    (TraceNormRegressor, {"solver": BlockCoordinateDescent()},
     "the trace penalty offers no 'row_prox'"),
    (IndependentLassoClassifier, {"solver": "bcd"}, "the logistic loss offers no 'quadratic'"),
    (L21Regressor, {"solver": "exact"}, "the l21 penalty is not a pure ridge"),
    (RobustMTLClassifier, {"loss": "logistic", "solver": "ladm"},
     "the logistic loss offers no 'prox_scores'"),
]


@pytest.mark.parametrize("cls, params, message", ESTIMATOR_REFUSALS,
                         ids=[f"{c.__name__}-{m.split()[1]}" for c, _, m in ESTIMATOR_REFUSALS])
def test_estimator_with_an_inapplicable_solver_raises_naming_it(cls, params, message,
                                                                regression_lists,
                                                                classification_lists):
    Xs, ys = classification_lists if cls._is_classifier else regression_lists
    name = params["solver"] if isinstance(params["solver"], str) else params["solver"].name
    with pytest.raises(ValueError, match=f"Solver {name!r} cannot solve this model: {message}"):
        cls(**params).fit(Xs, ys)


def test_estimator_refuses_a_solver_name_outside_its_list(regression_lists):
    with pytest.raises(ValueError, match="'solver' parameter of TraceNormRegressor must be "
                                         r"'auto', one of \[.*'fista'.*\] or a Solver"):
        TraceNormRegressor(solver="lp").fit(*regression_lists)


# ----------------------------------------------------------------------------- alpha_max
def _grad_squared(Xs, ys):
    """Gradient at W = 0 with the best intercepts, from the formula on the user's arrays."""
    return np.column_stack([-X.T @ (y - y.mean()) / len(y) for X, y in zip(Xs, ys, strict=True)])


ALPHA_MAX = {
    "l1": (IndependentLassoRegressor, {}, lambda G: np.abs(G).max()),
    "l21": (L21Regressor, {}, lambda G: np.linalg.norm(G, axis=1).max()),
    "trace": (TraceNormRegressor, {}, lambda G: np.linalg.norm(G, 2)),
    "column_l2": (MultiTaskRegressor, {"penalty": "column_l2"},
                  lambda G: np.linalg.norm(G, axis=0).max()),
    # robust L + E: the trace norm's threshold (lam large) or the outlier columns' (lam small)
    "robust-trace": (RobustMTLRegressor, {"lam": 2.0},
                     lambda G: max(np.linalg.norm(G, 2), np.linalg.norm(G, axis=0).max() / 2)),
    "robust-columns": (RobustMTLRegressor, {"lam": 0.5},
                       lambda G: max(np.linalg.norm(G, 2), np.linalg.norm(G, axis=0).max() / .5)),
    # sparse + low rank with a zero trace ball: the l1 threshold
    "sparse_low_rank": (SparseLowRankRegressor, {"radius": 0.0}, lambda G: np.abs(G).max()),
}


@pytest.mark.parametrize("name", sorted(ALPHA_MAX))
def test_alpha_max_zero_fit_at_it_and_not_below(name, regression_lists):
    cls, params, dual = ALPHA_MAX[name]
    Xs, ys = regression_lists
    est = cls(**params, tol=1e-10, max_iter=50000)
    amax = est.alpha_max(Xs, ys)
    assert amax == pytest.approx(dual(_grad_squared(Xs, ys)), rel=1e-10)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        at = est.set_params(alpha=amax).fit(Xs, ys)
        below = cls(**params, alpha=0.9 * amax, tol=1e-10, max_iter=50000).fit(Xs, ys)
    scale = np.abs(below.coef_).max()
    assert scale > 1e-3
    assert np.abs(at.coef_).max() <= 1e-10 * scale
    np.testing.assert_allclose(at.intercept_, [np.mean(y) for y in ys], atol=1e-8)
    if hasattr(at, "outlier_component_"):  # both parts are zero, and below one is not
        assert np.abs(at.low_rank_component_).max() <= 1e-10 * scale
        assert np.abs(at.outlier_component_).max() <= 1e-10 * scale
        part = "low_rank_component_" if name == "robust-trace" else "outlier_component_"
        assert np.abs(getattr(below, part)).max() > 1e-3


@pytest.mark.parametrize("cls", [IndependentLassoClassifier, L21Classifier, TraceNormClassifier,
                                 RobustMTLClassifier])
def test_alpha_max_of_classifiers(cls, classification_lists):
    """Logistic / squared-hinge losses: alpha_max from the gradient at (0, b0); zero weights
    at it (to the solver's accuracy at a tight optimality condition), not below."""
    Xs, ys = classification_lists
    est = cls(tol=1e-10, max_iter=50000)
    amax = est.alpha_max(Xs, ys)
    assert np.isfinite(amax) and amax > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        at = est.set_params(alpha=amax).fit(Xs, ys)
        below = cls(alpha=0.8 * amax, tol=1e-10, max_iter=50000).fit(Xs, ys)
    scale = np.abs(below.coef_).max()
    assert scale > 1e-3
    assert np.abs(at.coef_).max() <= 1e-4 * scale


def test_composite_alpha_max_formulas():
    """Closed forms of the composite penalties' alpha_max."""
    rng = np.random.default_rng(0)
    G = rng.standard_normal((6, 4))
    assert SparseLowRank(1.0, 2.0).alpha_max(G) == pytest.approx(np.abs(G).max())
    spec, cols = np.linalg.norm(G, 2), np.linalg.norm(G, axis=0).max()
    for lam in (0.1, 0.5, 1.0, 3.0):
        assert LowRankOutlier(1.0, lam).alpha_max(G) == pytest.approx(max(spec, cols / lam))
    assert LowRankOutlier(1.0, 0.0).alpha_max(G) == np.inf
    assert LowRankOutlier(1.0, 0.0).alpha_max(np.zeros((6, 4))) == 0.0


# ----------------------------------------------------------------------------- alpha_l2
def _cvx_objective(Xs, ys, omega, alpha, alpha_l2, loss="squared"):
    d, m = Xs[0].shape[1], len(Xs)
    W, b = cp.Variable((d, m)), cp.Variable(m)
    terms = []
    for t, (X, y) in enumerate(zip(Xs, ys, strict=True)):
        z = X @ W[:, t] + b[t]
        if loss == "squared":
            terms.append(cp.sum_squares(z - y) / (2 * len(y)))
        else:
            yy = np.where(y == 1, 1.0, -1.0)
            terms.append(cp.sum(cp.logistic(-cp.multiply(yy, z))) / len(y))
    prob = cp.Problem(cp.Minimize(sum(terms) + alpha * omega(W)
                                  + 0.5 * alpha_l2 * cp.sum_squares(W)))
    prob.solve(solver=cp.CLARABEL)
    assert prob.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE)
    return prob.value, W.value


#: name -> regressor, classifier, penalty, cvxpy norm, the regressor's applicable solvers
ELASTIC = {
    "l1": (IndependentLassoRegressor, IndependentLassoClassifier, L1,
           lambda W: cp.sum(cp.abs(W)), ("bcd", "fista")),
    "l21": (L21Regressor, L21Classifier, L21, lambda W: cp.sum(cp.norm(W, 2, axis=1)),
            ("bcd", "fista")),
    "trace": (TraceNormRegressor, TraceNormClassifier, TraceNorm, lambda W: cp.normNuc(W),
              ("fista",)),
}


@pytest.mark.filterwarnings("ignore:Solution may be inaccurate")
@pytest.mark.parametrize("name", sorted(ELASTIC))
def test_alpha_l2_elastic_net_against_cvxpy(name, regression_lists, classification_lists):
    """alpha * Omega(W) + (alpha_l2 / 2) ||W||_F^2: objective within 1e-6 of cvxpy's at
    tol=1e-8, for a regressor (every solver that applies) and a logistic classifier; the
    ridge term shrinks the weights relative to alpha_l2 = 0."""
    reg_cls, clf_cls, pen_cls, omega, solvers = ELASTIC[name]
    Xs, ys = regression_lists
    df = Squared(as_multitask_data(Xs, ys)[0], alpha_l2=0.3)
    alpha = 0.2 * reg_cls().alpha_max(Xs, ys)
    F_cvx, W_cvx = _cvx_objective(Xs, ys, omega, alpha, 0.3)
    for solver in solvers:
        est = reg_cls(alpha=alpha, alpha_l2=0.3, tol=1e-8, solver=solver,
                      max_iter=50000).fit(Xs, ys)
        assert est.solver_.name == solver and est.optimality_ <= 1e-8
        F = df.value(est.coef_.T) + pen_cls(alpha).value(est.coef_.T)
        assert F == pytest.approx(F_cvx, rel=1e-6), solver
        np.testing.assert_allclose(est.coef_.T, W_cvx, atol=1e-4 * np.abs(W_cvx).max())
    plain = reg_cls(alpha=alpha, tol=1e-8).fit(Xs, ys)
    assert np.linalg.norm(est.coef_) < np.linalg.norm(plain.coef_)

    # the user-level model: raw features and the fitted intercept_ (the estimators centre the
    # features of each task inside the solver: their intercept_variable_ is on that scale)
    Xc, yc = classification_lists
    dfc = Logistic(as_multitask_data(Xc, yc, classification=True)[0], alpha_l2=0.05)
    alpha_c = 0.2 * clf_cls().alpha_max(Xc, yc)
    F_cvx, _ = _cvx_objective(Xc, yc, omega, alpha_c, 0.05, loss="logistic")
    clf = clf_cls(alpha=alpha_c, alpha_l2=0.05, tol=1e-8, max_iter=50000).fit(Xc, yc)
    assert clf.optimality_ <= 1e-8
    F = dfc.value(clf.coef_.T, clf.intercept_) + pen_cls(alpha_c).value(clf.coef_.T)
    assert F == pytest.approx(F_cvx, rel=1e-6)


def test_bcd_refuses_the_trace_norm_with_alpha_l2(regression_lists):
    with pytest.raises(ValueError, match="trace penalty offers no 'row_prox'"):
        TraceNormRegressor(alpha_l2=0.3, solver="bcd").fit(*regression_lists)


# ----------------------------------------------------------------------------- agreement
AGREEMENT = [
    # (estimator, params, solvers that apply; "pg" is ProximalGradient(accelerated=False))
    (IndependentRidgeRegressor, {"alpha": 0.3}, ("exact", "bcd", "fista", "pg")),
    (IndependentLassoRegressor, {"alpha": 0.05}, ("bcd", "fista", "pg")),
    (IndependentLassoRegressor, {"alpha": 0.05, "alpha_l2": 0.2}, ("bcd", "fista")),
    (L21Regressor, {"alpha": 0.1}, ("bcd", "fista", "pg")),
    (MultiTaskRegressor, {"penalty": "ridge", "alpha": 0.5, "alpha_l2": 0.5},
     ("exact", "bcd", "fista")),
]


@pytest.mark.parametrize("layout", ["lists", "shared"])
@pytest.mark.parametrize("cls, params, solvers", AGREEMENT,
                         ids=[f"{c.__name__}-{'-'.join(s)}" for c, _, s in AGREEMENT])
def test_solvers_agree_where_they_apply(cls, params, solvers, layout, regression_lists,
                                        shared_regression):
    """Every applicable solver reaches the same objective (to 1e-10 relative: the certified
    gap's tolerance) and coefficients (to 1e-5 relative: an objective gap of 1e-10 bounds the
    distance to the optimum by about its square root) and reports a measure below tol; the
    closed form needs no iteration."""
    X, y = regression_lists if layout == "lists" else shared_regression
    fits = {}
    for name in solvers:
        solver = ProximalGradient(accelerated=False, tol=1e-10, max_iter=100000) \
            if name == "pg" else name
        est = cls(**params, solver=solver, tol=1e-10, max_iter=100000).fit(X, y)
        assert est.solver_.name == ("fista" if name == "pg" else name)
        assert est.converged_ and est.optimality_ <= 1e-10, name
        fits[name] = est
    ref = fits[solvers[0]]
    scale = np.abs(ref.coef_).max()
    for name, est in fits.items():
        assert est.solver_info_["primal"] == pytest.approx(ref.solver_info_["primal"],
                                                           rel=2e-10), name
        np.testing.assert_allclose(est.coef_, ref.coef_, atol=1e-5 * scale, err_msg=name)
        np.testing.assert_allclose(est.intercept_, ref.intercept_, atol=1e-5 * max(scale, 1),
                                   err_msg=name)
    if "exact" in fits:
        assert fits["exact"].n_iter_ == 1
    if "pg" in fits:
        assert fits["pg"].solver_.accelerated is False
