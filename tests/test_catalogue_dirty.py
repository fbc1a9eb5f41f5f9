"""The dirty model and robust multi-task feature learning (split models ``W = P + Q``).

* The l1,inf norm's prox (``V`` minus the projection onto the dual ball) against cvxpy.
* For both losses and three random problems with per-task designs of unequal sizes, the
  objective reached at ``tol=1e-8`` is within 1e-6 (relative) of cvxpy's optimum of the same
  formula written independently here, and ``optimality_ <= tol``.
* MALSAR's own objectives (``Least_Dirty``, ``Logistic_Dirty``, ``Least_rMTFL``,
  ``Logistic_rMTFL``) solved through the documented conversions match cvxpy's optimum of those
  objectives to 1e-6.
* Planted structures: the two supports of the dirty model, the outlier tasks of rMTFL.
* alpha_max, the default grid, input formats, sparse X, GridSearchCV and MultiTaskCV on
  long-format data, model files, errors.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from wide_cases import wide_tasks

import multitask as mt
from multitask.penalties import DirtyModel, L1InfNorm, RobustFeatureLearning
from multitask.solvers import WorkingSet

cp = pytest.importorskip("cvxpy")

TOL = 1e-8
REL = 1e-6
SEEDS = (0, 1, 2)


def _problem(seed, classification, sizes=(24, 31, 18), d=5):
    rng = np.random.default_rng(200 + seed)
    W = rng.standard_normal((d, 2)) @ rng.standard_normal((2, len(sizes)))
    Xs = [rng.standard_normal((n, d)) + 0.3 * rng.standard_normal(d) for n in sizes]
    ys = [X @ W[:, t] + 0.5 + 0.7 * rng.standard_normal(len(X)) for t, X in enumerate(Xs)]
    if classification:
        ys = [np.where(y > np.median(y), 1, 0) for y in ys]
    return Xs, ys


def _signed(est, ys):
    if not hasattr(est, "classes_"):
        return [np.asarray(y, dtype=float) for y in ys]
    return [np.where(np.asarray(y) == est.classes_[1], 1.0, -1.0) for y in ys]


def _loss_cvx(loss, X, y, w, b):
    z = X @ w + b
    if loss == "squared":
        return cp.sum_squares(z - y) / (2 * X.shape[0])
    return cp.sum(cp.logistic(-cp.multiply(y, z))) / X.shape[0]


def _loss_np(loss, X, y, w, b):
    z = X @ w + b
    if loss == "squared":
        return float(np.sum((z - y) ** 2) / (2 * X.shape[0]))
    return float(np.sum(np.logaddexp(0.0, -y * z)) / X.shape[0])


# penalties written independently of the library: (cvxpy expression, numpy value) of [P, Q]
def _dirty_pen(ag, al, q):
    if q == np.inf:
        return (lambda P, Q: ag * cp.sum(cp.max(cp.abs(P), axis=1)) + al * cp.sum(cp.abs(Q)),
                lambda P, Q: ag * np.abs(P).max(axis=1).sum() + al * np.abs(Q).sum())
    return (lambda P, Q: ag * cp.sum(cp.norm(P, 2, axis=1)) + al * cp.sum(cp.abs(Q)),
            lambda P, Q: ag * np.linalg.norm(P, axis=1).sum() + al * np.abs(Q).sum())


def _rmtfl_pen(ag, ao):
    return (lambda P, Q: (ag * cp.sum(cp.norm(P, 2, axis=1))
                          + ao * cp.sum(cp.norm(Q, 2, axis=0))),
            lambda P, Q: (ag * np.linalg.norm(P, axis=1).sum()
                          + ao * np.linalg.norm(Q, axis=0).sum()))


def _cvx_optimum(loss, pen, Xs, ys, alpha_l2=0.0, intercept=True):
    d, m = Xs[0].shape[1], len(Xs)
    P, Q = cp.Variable((d, m)), cp.Variable((d, m))
    b = cp.Variable(m) if intercept else np.zeros(m)
    W = P + Q
    obj = sum(_loss_cvx(loss, Xs[t], ys[t], W[:, t], b[t]) for t in range(m))
    obj = obj + pen(P, Q) + 0.5 * alpha_l2 * cp.sum_squares(W)
    prob = cp.Problem(cp.Minimize(obj))
    prob.solve(solver=cp.CLARABEL)
    assert prob.status == "optimal", prob.status
    return float(prob.value)


def _our_objective(est, loss, pen_np, P, Q, Xs, ys, alpha_l2=0.0):
    ys = _signed(est, ys)
    W, b = est.coef_.T, est.intercept_
    np.testing.assert_allclose(P + Q, W, atol=1e-12)
    value = sum(_loss_np(loss, Xs[t], ys[t], W[:, t], b[t]) for t in range(len(Xs)))
    return value + pen_np(P, Q) + 0.5 * alpha_l2 * float(np.sum(W * W))


# ----------------------------------------------------------------------------- the l1,inf prox
def test_l1inf_prox_against_cvxpy():
    rng = np.random.default_rng(0)
    for _ in range(5):
        V = rng.standard_normal((6, 4)) * rng.choice([0.1, 1.0, 10.0])
        lam = float(rng.uniform(0.2, 3.0))
        out = L1InfNorm(lam).prox(V, 0.7)
        U = cp.Variable(V.shape)
        prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(U - V)
                                      + 0.7 * lam * cp.sum(cp.max(cp.abs(U), axis=1))))
        prob.solve(solver=cp.CLARABEL)
        f = 0.5 * np.sum((out - V) ** 2) + 0.7 * lam * np.abs(out).max(axis=1).sum()
        assert f <= prob.value + 1e-7 * max(1.0, prob.value)
        np.testing.assert_allclose(out, U.value, atol=1e-5)
    # a row whose l1 norm is below the threshold vanishes; the input is not modified
    V = np.array([[0.2, -0.3, 0.1], [3.0, -1.0, 0.5]])
    V0 = V.copy()
    out = L1InfNorm(1.0).prox(V, 1.0)
    np.testing.assert_array_equal(V, V0)
    assert np.all(out[0] == 0) and np.abs(out[1]).max() < 3.0


def test_penalty_values_and_errors():
    P = np.array([[1.0, -2.0], [0.0, 0.5]])
    Q = np.array([[0.0, 1.0], [-3.0, 0.0]])
    V = np.stack([P, Q])
    assert DirtyModel(2.0, 0.5).value(V) == pytest.approx(2.0 * (2.0 + 0.5) + 0.5 * 4.0)
    assert DirtyModel(2.0, 0.5, q=2).value(V) == pytest.approx(
        2.0 * (np.sqrt(5.0) + 0.5) + 0.5 * 4.0)
    assert RobustFeatureLearning(2.0, 0.5).value(V) == pytest.approx(
        2.0 * (np.sqrt(5.0) + 0.5) + 0.5 * (3.0 + 1.0))
    with pytest.raises(ValueError, match="q must be 2 or inf"):
        DirtyModel(1.0, 1.0, q=1)
    with pytest.raises(ValueError, match="alpha_l1"):
        DirtyModel(1.0, -1.0)
    with pytest.raises(ValueError, match="alpha_outlier"):
        RobustFeatureLearning(1.0, np.nan)


# ----------------------------------------------------------------------------- vs cvxpy
CASES = [
    ("dirty-inf", lambda c: (mt.DirtyModelClassifier if c else mt.DirtyModelRegressor),
     lambda c: {"alpha_group": 0.03 if c else 0.2, "alpha_l1": 0.015 if c else 0.1},
     lambda p: _dirty_pen(p["alpha_group"], p["alpha_l1"], np.inf),
     lambda e: (e.group_component_.T, e.sparse_component_.T)),
    ("dirty-2", lambda c: (mt.DirtyModelClassifier if c else mt.DirtyModelRegressor),
     lambda c: {"alpha_group": 0.03 if c else 0.2, "alpha_l1": 0.02 if c else 0.12, "q": 2},
     lambda p: _dirty_pen(p["alpha_group"], p["alpha_l1"], 2),
     lambda e: (e.group_component_.T, e.sparse_component_.T)),
    ("rmtfl", lambda c: (mt.RobustFeatureLearningClassifier if c
                         else mt.RobustFeatureLearningRegressor),
     lambda c: {"alpha_group": 0.02 if c else 0.15, "alpha_outlier": 0.03 if c else 0.25},
     lambda p: _rmtfl_pen(p["alpha_group"], p["alpha_outlier"]),
     lambda e: (e.feature_component_.T, e.outlier_component_.T)),
]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("classification", [False, True], ids=["squared", "logistic"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_objective_matches_cvxpy(case, classification, seed):
    _, cls, params, pen, parts = case
    cls, params = cls(classification), params(classification)
    Xs, ys = _problem(seed, classification)
    est = cls(**params, tol=TOL, max_iter=100_000).fit(Xs, ys)
    loss = "logistic" if classification else "squared"
    assert est.optimality_ <= TOL
    pen_cvx, pen_np = pen(params)
    ref = _cvx_optimum(loss, pen_cvx, Xs, _signed(est, ys))
    ours = _our_objective(est, loss, pen_np, *parts(est), Xs, ys)
    assert abs(ours - ref) <= REL * max(1.0, abs(ref)), (ours, ref)


@pytest.mark.parametrize("q", [np.inf, 2])
@pytest.mark.parametrize("classification", [False, True], ids=["squared", "logistic"])
def test_working_sets_reach_cvxpys_optimum_on_many_features(q, classification):
    """Working sets on the dirty norm of ``W`` (a norm separable over the feature rows, with
    its exact zero test): 40 features of which 4 carry the signal, at a strength where most
    rows vanish (the first working set of 8 rows); the certified objective matches cvxpy's
    within 1e-6 and both parts follow."""
    rng = np.random.default_rng(7)
    d, sizes = 40, (30, 26, 34)
    W = np.zeros((d, len(sizes)))
    W[:4] = rng.standard_normal((4, len(sizes))) + 1.0
    W[9, 1] = 2.0  # one task-specific feature
    Xs, ys, G = wide_tasks(rng, W, sizes, classification)
    cls = mt.DirtyModelClassifier if classification else mt.DirtyModelRegressor
    top_group = np.abs(G).sum(axis=1).max() if q == np.inf else np.linalg.norm(G, axis=1).max()
    share = 0.5 if classification else 0.3  # of each strength's top: some 12 active rows
    params = {"alpha_group": share * float(top_group),
              "alpha_l1": share * float(np.abs(G).max())}
    est = cls(**params, q=q, solver=WorkingSet(p0=8, tol=TOL, max_iter=100_000), tol=TOL,
              max_iter=100_000).fit(Xs, ys)
    assert est.solver_.name == "working_set" and est.optimality_ <= TOL
    assert est.solver_info_["working_set"] < d  # the working set left rows out
    loss = "logistic" if classification else "squared"
    pen_cvx, pen_np = _dirty_pen(params["alpha_group"], params["alpha_l1"], q)
    ref = _cvx_optimum(loss, pen_cvx, Xs, _signed(est, ys))
    ours = _our_objective(est, loss, pen_np, est.group_component_.T, est.sparse_component_.T,
                          Xs, ys)
    assert abs(ours - ref) <= REL * max(1.0, abs(ref)), (ours, ref)


def test_plain_proximal_gradient_reaches_the_same_optimum():
    Xs, ys = _problem(0, False)
    fista = mt.DirtyModelRegressor(0.2, 0.1, tol=TOL, max_iter=100_000).fit(Xs, ys)
    pg = mt.DirtyModelRegressor(0.2, 0.1, solver="pg", tol=TOL, max_iter=100_000).fit(Xs, ys)
    assert pg.solver_.accelerated is False and pg.optimality_ <= TOL
    pen_cvx, pen_np = _dirty_pen(0.2, 0.1, np.inf)
    ref = _cvx_optimum("squared", pen_cvx, Xs, ys)
    for est in (fista, pg):
        ours = _our_objective(est, "squared", pen_np, est.group_component_.T,
                              est.sparse_component_.T, Xs, ys)
        assert abs(ours - ref) <= REL * max(1.0, abs(ref))


# ----------------------------------------------------------------------------- MALSAR
def _malsar_squared(Xs, ys, pen):
    """MALSAR's Least_Dirty / Least_rMTFL: ||X(P+Q) - Y||_F^2 over all rows (no 1/2, no
    intercept) + penalty, solved by cvxpy; returns (optimum, objective as a numpy function)."""
    d, m = Xs[0].shape[1], len(Xs)
    P, Q = cp.Variable((d, m)), cp.Variable((d, m))
    fit = sum(cp.sum_squares(ys[t] - Xs[t] @ (P[:, t] + Q[:, t])) for t in range(m))
    prob = cp.Problem(cp.Minimize(fit + pen[0](P, Q)))
    prob.solve(solver=cp.CLARABEL)

    def objective(Pv, Qv):
        W = Pv + Qv
        return sum(float(np.sum((ys[t] - Xs[t] @ W[:, t]) ** 2)) for t in range(m)) + pen[1](
            Pv, Qv)

    return float(prob.value), objective


@pytest.mark.parametrize("model", ["dirty", "rmtfl"])
def test_malsar_least_squares_through_the_documented_conversion(model):
    """Equal sizes n: rho = 2 n alpha. Unequal sizes: our model on rows scaled by
    sqrt(2 n_t) with alpha = rho. No intercept (fit_intercept=False)."""
    rho1, rho2 = 6.0, 4.0
    if model == "dirty":
        cls, pen = mt.DirtyModelRegressor, _dirty_pen(rho1, rho2, np.inf)
        parts = lambda e: (e.group_component_.T, e.sparse_component_.T)  # noqa: E731
    else:
        cls, pen = mt.RobustFeatureLearningRegressor, _rmtfl_pen(rho1, rho2)
        parts = lambda e: (e.feature_component_.T, e.outlier_component_.T)  # noqa: E731
    # equal sizes
    n = 30
    Xs, ys = _problem(3, False, sizes=(n, n, n))
    ref, objective = _malsar_squared(Xs, ys, pen)
    est = cls(rho1 / (2 * n), rho2 / (2 * n), fit_intercept=False, tol=TOL,
              max_iter=100_000).fit(Xs, ys)
    assert abs(objective(*parts(est)) - ref) <= REL * abs(ref)
    # the objective of the same strengths without the factor 2 n is not the optimum
    wrong = cls(rho1 / n, rho2 / n, fit_intercept=False, tol=TOL).fit(Xs, ys)
    assert objective(*parts(wrong)) > ref * (1 + 1e-4)
    # unequal sizes
    Xs, ys = _problem(4, False)
    ref, objective = _malsar_squared(Xs, ys, pen)
    scaled_X = [np.sqrt(2 * len(X)) * X for X in Xs]
    scaled_y = [np.sqrt(2 * len(y)) * y for y in ys]
    est = cls(rho1, rho2, fit_intercept=False, tol=TOL, max_iter=100_000).fit(scaled_X,
                                                                              scaled_y)
    assert abs(objective(*parts(est)) - ref) <= REL * abs(ref)


@pytest.mark.parametrize("model", ["dirty", "rmtfl"])
def test_malsar_logistic_is_our_scaling(model):
    """Logistic_Dirty / Logistic_rMTFL: per-task mean logistic loss with a free intercept,
    the same scaling as ours: rho = alpha."""
    rho1, rho2 = 0.03, 0.02
    Xs, ys = _problem(5, True)
    if model == "dirty":
        est = mt.DirtyModelClassifier(rho1, rho2, tol=TOL, max_iter=100_000).fit(Xs, ys)
        pen, parts = _dirty_pen(rho1, rho2, np.inf), (est.group_component_.T,
                                                      est.sparse_component_.T)
    else:
        est = mt.RobustFeatureLearningClassifier(rho1, rho2, tol=TOL,
                                                 max_iter=100_000).fit(Xs, ys)
        pen, parts = _rmtfl_pen(rho1, rho2), (est.feature_component_.T,
                                              est.outlier_component_.T)
    ysg = [np.where(y == 1, 1.0, -1.0) for y in ys]  # MALSAR's labels
    ref = _cvx_optimum("logistic", pen[0], Xs, ysg)
    ours = _our_objective(est, "logistic", pen[1], *parts, Xs, ys)
    assert abs(ours - ref) <= REL * abs(ref)


# ----------------------------------------------------------------------------- planted
def _planted_dirty(seed):
    """Four features shared by six tasks (weights +-1 with 10% variation per task) and one
    task-specific feature per task (weight +-1.5); noise 0.1, 80 to 130 rows per task."""
    rng = np.random.default_rng(seed)
    d, m = 30, 6
    W = np.zeros((d, m))
    shared = [0, 1, 2, 3]
    W[shared] = rng.choice([-1, 1], (4, 1)) * (1.0 + 0.1 * rng.standard_normal((4, m)))
    exceptions = {(10 + t, t) for t in range(m)}
    for j, t in exceptions:
        W[j, t] = 1.5 * rng.choice([-1, 1])
    Xs = [rng.standard_normal((80 + 10 * t, d)) for t in range(m)]
    ys = [X @ W[:, t] + 0.1 * rng.standard_normal(len(X)) for t, X in enumerate(Xs)]
    return Xs, ys, shared, exceptions


@pytest.mark.parametrize("q", [np.inf, 2])
@pytest.mark.parametrize("seed", [0, 1])
def test_planted_supports_of_the_dirty_model(seed, q):
    """Both supports are recovered exactly (the prox sets exact zeros).

    The noise level of the gradient at the truth is about sigma sqrt(2 log(d m) / n) = 0.04,
    so alpha_l1 = 0.05 keeps spurious entries out of Q; alpha_group is in Jalali et al.'s
    regime alpha_l1 < alpha_group < m alpha_l1 (q = inf; sqrt(m) alpha_l1 for q = 2) where
    both parts are used. Q may also correct the 10% task variation of the shared rows, so its
    support is compared outside those rows.
    """
    Xs, ys, shared, exceptions = _planted_dirty(seed)
    est = mt.DirtyModelRegressor(0.15 if q == np.inf else 0.08, 0.05, q=q).fit(Xs, ys)
    assert list(est.shared_features_) == shared
    Q = est.sparse_component_.T
    found = {(j, t) for j, t in zip(*np.nonzero(Q), strict=True) if j not in shared}
    assert found == exceptions
    # the block part alone (alpha_l1 above its threshold: Q = 0) cannot isolate the
    # exceptions: their rows enter P for every task
    block = mt.DirtyModelRegressor(0.15 if q == np.inf else 0.08, 1e3, q=q).fit(Xs, ys)
    assert np.all(block.sparse_component_ == 0)
    assert {j for j, _ in exceptions} <= set(block.shared_features_)


def _planted_outliers(seed):
    """Eight tasks use three shared features (weights drawn around a common value); two
    outlier tasks (3 and 7) have dense weights of their own; noise 0.1."""
    rng = np.random.default_rng(seed)
    d, m = 20, 10
    W = np.zeros((d, m))
    shared = [0, 1, 2]
    W[shared] = 2 * rng.standard_normal((3, 1)) + 0.2 * rng.standard_normal((3, m))
    outliers = [3, 7]
    for t in outliers:
        W[:, t] = rng.standard_normal(d)
    Xs = [rng.standard_normal((60 + 5 * t, d)) for t in range(m)]
    ys = [X @ W[:, t] + 0.1 * rng.standard_normal(len(X)) for t, X in enumerate(Xs)]
    return Xs, ys, shared, outliers


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_planted_outlier_tasks_of_rmtfl(seed):
    """The outlier tasks are exactly the nonzero columns of Q, the shared features exactly
    the nonzero rows of P.

    alpha_group = alpha_outlier = 0.25: a dense outlier column w costs alpha_outlier ||w||_2
    in Q but about alpha_group ||w||_1 ~ sqrt(2 d / pi) alpha_group ||w||_2 (3.6 times more)
    in P, while the inliers' deviation from the shared rows (0.2 per entry on 3 rows) is
    too small to pay alpha_outlier; both are well above the gradient noise (0.04).
    """
    Xs, ys, shared, outliers = _planted_outliers(seed)
    est = mt.RobustFeatureLearningRegressor(0.25, 0.25).fit(Xs, ys)
    assert list(est.outlier_tasks_) == outliers
    assert list(est.shared_features_) == shared
    norms = est.outlier_task_norms_
    assert norms[outliers].min() > 1.0 and np.all(np.delete(norms, outliers) == 0)


# ----------------------------------------------------------------------------- alpha_max
@pytest.mark.parametrize("classification", [False, True])
def test_alpha_max_gives_zero_and_just_below_does_not(classification):
    Xs, ys = _problem(0, classification)
    Reg = mt.DirtyModelClassifier if classification else mt.DirtyModelRegressor
    Rob = (mt.RobustFeatureLearningClassifier if classification
           else mt.RobustFeatureLearningRegressor)
    for cls, other in ((Reg, "alpha_l1"), (Rob, "alpha_outlier")):
        grid = cls().default_grid(Xs, ys)
        assert list(grid) == ["alpha_group", other]
        assert np.all(np.diff(grid["alpha_group"]) < 0) and len(grid["alpha_group"]) == 10
        big_other = 1.01 * grid[other][0]  # at its own threshold: the other part is zero
        top = cls(alpha_group=1.0, **{other: big_other}).alpha_max(Xs, ys)
        assert np.isfinite(top) and top == pytest.approx(grid["alpha_group"][0])
        at = cls(alpha_group=top * (1 + 1e-9), **{other: big_other}, tol=1e-10).fit(Xs, ys)
        assert np.all(at.coef_ == 0)
        below = cls(alpha_group=0.9 * top, **{other: big_other}).fit(Xs, ys)
        assert np.any(below.coef_ != 0)
        # with the other strength below its threshold, no alpha_group gives zero
        assert cls(alpha_group=1.0, **{other: 0.5 * grid[other][0]}).alpha_max(Xs, ys) == np.inf


def test_warm_started_path_matches_cold_fits():
    Xs, ys = _problem(1, False)
    est = mt.DirtyModelRegressor(alpha_l1=0.1, tol=1e-9, max_iter=100_000)
    path = mt.model_selection.regularization_path(est, Xs, ys, n_alphas=5)
    assert path.param == "alpha_group" and path.coefs.shape == (5, 3, 5)
    for k in (0, 4):
        cold = mt.DirtyModelRegressor(path.grid[k], 0.1, tol=1e-9, max_iter=100_000).fit(Xs, ys)
        np.testing.assert_allclose(path.coefs[k], cold.coef_, atol=1e-6)


# ----------------------------------------------------------------------------- formats
@pytest.mark.parametrize("cls", [mt.DirtyModelRegressor, mt.RobustFeatureLearningRegressor])
def test_every_input_format_fits_the_same_model(cls, datagen):
    Xs, ys = datagen.regression_lists()
    ref = cls(0.1, 0.1, tol=1e-9).fit(Xs, ys)
    X, y, task = datagen.lists_to_long(Xs, ys)
    long = cls(0.1, 0.1, tol=1e-9).fit(X, y, task=task)
    np.testing.assert_allclose(long.coef_, ref.coef_, atol=1e-6)
    np.testing.assert_allclose(long.intercept_, ref.intercept_, atol=1e-6)
    sparse = cls(0.1, 0.1, tol=1e-9).fit([sp.csr_matrix(x) for x in Xs], ys)
    np.testing.assert_allclose(sparse.coef_, ref.coef_, atol=1e-6)
    assert np.any(ref.intercept_ != 0)  # unpenalized per-task intercepts
    X, Y = datagen.shared()
    shared = cls(0.1, 0.1).fit(X, Y)
    assert shared.predict(X).shape == Y.shape
    listed = cls(0.1, 0.1).fit([X] * Y.shape[1], list(Y.T))
    np.testing.assert_allclose(shared.coef_, listed.coef_, atol=1e-5)


def test_classifier_on_sparse_long_format(datagen):
    Xs, ys = datagen.classification_lists()
    X, y, task = datagen.lists_to_long(Xs, ys)
    dense = mt.DirtyModelClassifier(tol=1e-9).fit(X, y, task=task)
    sparse = mt.DirtyModelClassifier(tol=1e-9).fit(sp.csr_matrix(X), y, task=task)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, atol=1e-6)
    proba = sparse.predict_proba(sp.csr_matrix(X), task=task)
    assert proba.shape == (len(y), 2)


def test_grid_search_and_multitask_cv_on_long_format(datagen):
    from sklearn.model_selection import GridSearchCV

    Xs, ys = datagen.regression_lists()
    X, y, task = datagen.lists_to_long(Xs, ys)
    Xt = np.column_stack([X, task])
    gs = GridSearchCV(mt.RobustFeatureLearningRegressor(task_column=-1),
                      {"alpha_group": [0.05, 0.5], "alpha_outlier": [0.1, 1.0]}, cv=3)
    gs.fit(Xt, y)
    assert set(gs.best_params_) == {"alpha_group", "alpha_outlier"}
    cv = mt.MultiTaskCV(mt.DirtyModelRegressor(), n_alphas=4, cv=3).fit(X, y, task=task)
    assert cv.path_param_ == "alpha_group"
    assert set(cv.best_params_) == {"alpha_group", "alpha_l1"}
    assert len(cv.cv_results_["params"]) >= 4 * 1
    assert cv.predict(X, task=task).shape == y.shape


def test_model_file_round_trip(tmp_path, datagen):
    from multitask.persistence import load_model, save_model

    Xs, ys = datagen.classification_lists()
    for est in (mt.DirtyModelClassifier().fit(Xs, ys),
                mt.RobustFeatureLearningClassifier().fit(Xs, ys)):
        path = save_model(est, tmp_path / f"{type(est).__name__}.skops")
        back = load_model(path)
        for a, b in zip(back.decision_function(Xs), est.decision_function(Xs), strict=True):
            np.testing.assert_array_equal(a, b)


def test_bad_parameters_are_named(datagen):
    Xs, ys = datagen.regression_lists()
    with pytest.raises(ValueError, match="'q' parameter"):
        mt.DirtyModelRegressor(q=1).fit(Xs, ys)
    with pytest.raises(ValueError, match="alpha_outlier"):
        mt.RobustFeatureLearningRegressor(alpha_outlier=-1.0).fit(Xs, ys)
    with pytest.raises(ValueError, match="alpha_group"):
        mt.DirtyModelRegressor(alpha_group=np.inf).fit(Xs, ys)
    Xs0 = [x.copy() for x in Xs]
    mt.DirtyModelRegressor().fit(Xs, ys)
    for a, b in zip(Xs, Xs0, strict=True):
        np.testing.assert_array_equal(a, b)
