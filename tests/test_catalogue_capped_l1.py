"""Multi-stage multi-task feature learning: the capped l1,l1 penalty (Gong, Ye & Zhang, 2012).

The model is non-convex; the references are: each stage's convex problem (a weighted lasso with
the weights of the multi-stage method) solved by cvxpy (CLARABEL), for both losses, in the
library's scaling and in MALSAR's (``Least_msmtfl_capL1``: ``sum_t ||X_t w_t - y_t||^2``);
the majorization inequality the stages rest on; the monotone objective; a planted shared
support.
"""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize_scalar
from sklearn.model_selection import GridSearchCV, KFold

from multitask import (
    CappedL1Classifier,
    CappedL1Regressor,
    IndependentLassoRegressor,
    MultiTaskCV,
)
from multitask.penalties import CappedL1, RowWeightedL1
from multitask.persistence import load_model, save_model
from multitask.solvers import Multistage

SIZES = (14, 19, 10, 16)
#: the logistic problems need more rows and noisier labels: the capped features are not
#: penalized, and a task separable on them has no finite minimizer
LOGISTIC_SIZES = (30, 45, 25, 38)
D = 8
# 1e-8: the tightest setting at which CLARABEL reports "optimal" on every problem here; its
# optimum is then accurate to about 1e-9 relative, far below the 1e-6 asserted
CLARABEL = {"solver": cp.CLARABEL, "tol_gap_abs": 1e-8, "tol_gap_rel": 1e-8, "tol_feas": 1e-8}


def _problem(seed, loss, sizes=None, d=D):
    """Row-sparse weights (3 of the d features), per-task designs of unequal sizes."""
    rng = np.random.default_rng(seed)
    if sizes is None:
        sizes = SIZES if loss == "squared" else LOGISTIC_SIZES
    W = np.zeros((d, len(sizes)))
    W[:3] = rng.choice([-1.0, 1.0], (3, len(sizes))) * rng.uniform(0.3, 1.2, (3, len(sizes)))
    Xs, ys = [], []
    for t, n in enumerate(sizes):
        X = rng.standard_normal((n, d)) + 0.3 * rng.standard_normal(d)
        z = X @ W[:, t] + 0.2 * t
        if loss == "squared":
            y = z + 0.5 * rng.standard_normal(n)
        else:
            y = np.where(z + 1.5 * rng.standard_normal(n) > 0, 1, -1)
            y[:2] = [-1, 1]
        Xs.append(X)
        ys.append(y)
    return Xs, ys


def _task_loss(X, y, w, b, loss, scaling):
    z = X @ w + b
    if loss == "squared":
        r = 0.5 * np.sum((y - z) ** 2) if scaling == "mean" else np.sum((y - z) ** 2)
    else:
        r = np.sum(np.logaddexp(0.0, -y * z))
    return r / len(y) if scaling == "mean" else r


def _best_loss(Xs, ys, W, loss, scaling="mean", intercept=True):
    """The data term at W with the best intercepts (closed form for the squared loss, a 1-D
    convex minimization for the logistic loss)."""
    total = 0.0
    for t, (X, y) in enumerate(zip(Xs, ys, strict=True)):
        w = W[:, t]
        if not intercept:
            b = 0.0
        elif loss == "squared":
            b = float(np.mean(y - X @ w))
        else:
            b = minimize_scalar(lambda c, X=X, y=y, w=w: _task_loss(X, y, w, c, loss, scaling),
                                bracket=(-1.0, 1.0), tol=1e-12).x
        total += _task_loss(X, y, w, b, loss, scaling)
    return total


def _cvxpy_stage(Xs, ys, weights, loss, scaling="mean", intercept=True):
    """min loss + sum_j weights_j ||W_j.||_1 (the stage problem), by cvxpy."""
    d, m = Xs[0].shape[1], len(Xs)
    W = cp.Variable((d, m))
    b = cp.Variable(m) if intercept else None
    terms = []
    for t, (X, y) in enumerate(zip(Xs, ys, strict=True)):
        z = X @ W[:, t] + (b[t] if intercept else 0)
        if loss == "squared":
            r = (0.5 if scaling == "mean" else 1.0) * cp.sum_squares(z - y)
        else:
            r = cp.sum(cp.logistic(-cp.multiply(y, z)))
        terms.append(r / len(y) if scaling == "mean" else r)
    prob = cp.Problem(cp.Minimize(cp.sum(terms) + weights @ cp.sum(cp.abs(W), axis=1)))
    prob.solve(**CLARABEL)
    assert prob.status == cp.OPTIMAL
    return prob.value


def _stage_weights(alpha, theta, W_ref):
    return alpha * (np.abs(W_ref).sum(axis=1) < theta)


def _fit(est, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ConvergenceWarning at the tight tolerances
        return est.fit(*args, **kwargs)


# ----------------------------------------------------------------------------- the penalty
def test_stage_penalty_majorizes_and_is_tight():
    """min(a_j, theta) <= [a_ref,j < theta] a_j + [a_ref,j >= theta] theta, equality at W_ref."""
    rng = np.random.default_rng(0)
    pen = CappedL1(0.7, 1.3)
    for _ in range(50):
        W_ref = rng.standard_normal((6, 3)) * rng.uniform(0, 1, (6, 1))
        stage = pen.stage_penalty(W_ref)
        offset = pen.stage_offset(W_ref)
        assert stage.value(W_ref) + offset == pytest.approx(pen.value(W_ref), rel=1e-12)
        for _ in range(5):
            W = rng.standard_normal((6, 3)) * rng.uniform(0, 1, (6, 1))
            assert pen.value(W) <= stage.value(W) + offset + 1e-12
        assert pen.stage_key(W_ref) == tuple(np.flatnonzero(np.abs(W_ref).sum(axis=1) >= 1.3))


def test_row_weighted_l1_prox_and_alpha_max():
    rng = np.random.default_rng(1)
    V = rng.standard_normal((5, 3))
    c = np.array([0.0, 0.5, 1.0, 2.0, 0.1])
    pen = RowWeightedL1(c)
    out = pen.prox(V, 0.4)
    U = cp.Variable(V.shape)
    cp.Problem(cp.Minimize(0.5 * cp.sum_squares(U - V)
                           + 0.4 * c @ cp.sum(cp.abs(U), axis=1))).solve(**CLARABEL)
    assert np.allclose(out, U.value, atol=1e-6)
    assert np.array_equal(out[0], V[0])  # weight 0: untouched
    G = rng.standard_normal((5, 3))
    assert pen.alpha_max(G) == np.inf  # a free row with a non-zero gradient
    G[0] = 0.0
    assert pen.alpha_max(G) == pytest.approx(np.max(np.abs(G[1:]).max(axis=1) / c[1:]))
    with pytest.raises(ValueError, match="weights"):
        RowWeightedL1([1.0, -1.0])
    with pytest.raises(ValueError, match="theta"):
        CappedL1(1.0, -0.5)
    with pytest.raises(NotImplementedError, match="Multistage"):
        CappedL1(1.0, 1.0).prox(V, 1.0)


# ----------------------------------------------------------------------------- stages vs cvxpy
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_each_stage_solves_its_convex_problem_and_the_objective_never_increases(loss, seed):
    """Stage l minimizes loss + sum_j alpha [||W^(l-1)_j.||_1 < theta] ||W_j.||_1 (W^(0) = 0):
    its objective at the stage solution is within 1e-6 relative of cvxpy's optimum; the capped
    objective is non-increasing over the stages; the reported optimality_ is at most tol."""
    cls = CappedL1Regressor if loss == "squared" else CappedL1Classifier
    Xs, ys = _problem(seed, loss)
    kw = {} if loss == "squared" else {"loss": "logistic"}
    alpha_max = cls(**kw).alpha_max(Xs, ys)
    alpha, theta = 0.15 * alpha_max, 0.8 if loss == "squared" else 1.0
    solver = Multistage(tol=1e-8, max_iter=100000, keep_stages=True)
    est = _fit(cls(alpha, theta, solver=solver, **kw), Xs, ys)
    assert est.optimality_ <= 1e-8
    stages = est.solver_info_["stage_coefs"]
    assert len(stages) == est.n_stages_ >= 2  # the cap frees features after the lasso stage
    W_ref = np.zeros_like(stages[0])
    for W in stages:
        weights = _stage_weights(alpha, theta, W_ref)
        ours = _best_loss(Xs, ys, W, loss) + weights @ np.abs(W).sum(axis=1)
        ref = _cvxpy_stage(Xs, ys, weights, loss)
        assert abs(ours - ref) <= 1e-6 * abs(ref)
        W_ref = W
    # the capped objective after each stage, recomputed here, never increases
    F = [_best_loss(Xs, ys, W, loss) + alpha * np.minimum(np.abs(W).sum(axis=1), theta).sum()
         for W in stages]
    assert np.all(np.diff(F) <= 1e-10 * abs(F[0]))
    assert F[-1] < F[0]  # and strictly decreases after the lasso stage
    assert np.allclose(est.objective_, F, rtol=1e-7)
    assert np.array_equal(est.coef_, stages[-1].T)


# ----------------------------------------------------------------------------- MALSAR
def test_malsar_objective_through_the_conversion():
    """MALSAR's Least_msmtfl_capL1: sum_t ||X_t w_t - y_t||^2 + lambda sum_j min(||W^j||_1,
    theta), no intercept. Converted: rows of task t times sqrt(2 n_t), alpha = lambda,
    fit_intercept=False. Each stage (MALSAR's weights lambda [||W^j||_1 < theta]) matches
    cvxpy's optimum of MALSAR's stage objective, and the final capped objective in MALSAR's
    scaling is the library's objective_."""
    Xs, ys = _problem(3, "squared")
    lam, theta = 4.0, 0.8
    Xs_s = [np.sqrt(2 * len(y)) * X for X, y in zip(Xs, ys, strict=True)]
    ys_s = [np.sqrt(2 * len(y)) * y for y in ys]
    solver = Multistage(tol=1e-8, max_iter=100000, keep_stages=True)
    est = _fit(CappedL1Regressor(lam, theta, fit_intercept=False, solver=solver), Xs_s, ys_s)
    stages = est.solver_info_["stage_coefs"]
    assert len(stages) >= 2
    W_ref = np.zeros_like(stages[0])
    for W in stages:
        weights = _stage_weights(lam, theta, W_ref)
        malsar = _best_loss(Xs, ys, W, "squared", "sum", intercept=False) + weights @ np.abs(
            W).sum(axis=1)
        ref = _cvxpy_stage(Xs, ys, weights, "squared", "sum", intercept=False)
        assert abs(malsar - ref) <= 1e-6 * abs(ref)
        W_ref = W
    W = stages[-1]
    final = _best_loss(Xs, ys, W, "squared", "sum", intercept=False) + lam * np.minimum(
        np.abs(W).sum(axis=1), theta).sum()
    assert est.objective_[-1] == pytest.approx(final, rel=1e-10)


def test_malsar_equal_sizes_conversion_is_alpha_over_2n():
    Xs, ys = _problem(4, "squared", sizes=(15, 15, 15, 15))
    lam, theta, n = 3.0, 0.8, 15
    a = _fit(CappedL1Regressor(lam / (2 * n), theta, fit_intercept=False, tol=1e-10,
                               max_iter=100000), Xs, ys)
    b = _fit(CappedL1Regressor(lam, theta, fit_intercept=False, tol=1e-10, max_iter=100000),
             [np.sqrt(2 * n) * X for X in Xs], [np.sqrt(2 * n) * y for y in ys])
    assert np.allclose(a.coef_, b.coef_, atol=1e-7)
    assert a.n_stages_ == b.n_stages_


# ----------------------------------------------------------------------------- special cases
def test_infinite_cap_is_the_lasso_and_alpha_max_gives_zero():
    Xs, ys = _problem(5, "squared")
    lasso = IndependentLassoRegressor(0.05, tol=1e-10).fit(Xs, ys)
    capped = CappedL1Regressor(0.05, np.inf, tol=1e-10).fit(Xs, ys)
    assert capped.n_stages_ == 1
    assert np.allclose(capped.coef_, lasso.coef_, atol=1e-7)
    est = CappedL1Regressor(1.0, 0.5)
    top = est.alpha_max(Xs, ys)
    assert top == pytest.approx(IndependentLassoRegressor().alpha_max(Xs, ys))
    assert np.all(CappedL1Regressor(top * 1.0001, 0.5).fit(Xs, ys).coef_ == 0)
    assert np.any(CappedL1Regressor(top * 0.9, 0.5).fit(Xs, ys).coef_ != 0)
    grid = est.default_grid(Xs, ys)["alpha"]
    assert grid[0] == pytest.approx(top) and np.all(np.diff(grid) < 0)


# ----------------------------------------------------------------------------- planted
def test_planted_shared_support_is_recovered():
    """Eight tasks share 5 relevant features out of 30, with 25 rows per task (fewer than
    the features). At alpha = 0.2 alpha_max and theta = 1 (each relevant row has an l1 norm
    of about 8 over the tasks, far above the cap; irrelevant rows start at 0), the capped model
    must select exactly the 5 features, while the lasso at the same alpha (its first stage)
    keeps false positives, and its error ||W - W*||_F must be at most half the lasso's (the
    cap removes the lasso's shrinkage of the relevant rows)."""
    rng = np.random.default_rng(0)
    d, m, n, s = 30, 8, 25, 5
    W = np.zeros((d, m))
    W[:s] = rng.choice([-1.0, 1.0], (s, m)) * rng.uniform(0.5, 1.5, (s, m))
    Xs = [rng.standard_normal((n, d)) for _ in range(m)]
    ys = [X @ W[:, t] + 0.5 * rng.standard_normal(n) for t, X in enumerate(Xs)]
    alpha = 0.2 * CappedL1Regressor().alpha_max(Xs, ys)
    est = CappedL1Regressor(alpha, 1.0).fit(Xs, ys)
    lasso = IndependentLassoRegressor(alpha).fit(Xs, ys)
    assert est.support_.tolist() == list(range(s))
    assert est.capped_features_.tolist() == list(range(s))
    assert np.count_nonzero(np.any(lasso.coef_ != 0, axis=0)) > s
    assert np.linalg.norm(est.coef_.T - W) <= 0.5 * np.linalg.norm(lasso.coef_.T - W)


# ----------------------------------------------------------------------------- formats
def test_every_input_format_fits_the_same_model():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((25, D))
    B = np.zeros((D, 4))
    B[:3] = rng.standard_normal((3, 4))
    Y = X @ B + 0.3 * rng.standard_normal((25, 4))

    def fit(*args, **kw):
        return _fit(CappedL1Regressor(0.05, 0.5, tol=1e-10, max_iter=100000), *args, **kw)

    shared = fit(X, Y)
    lists = fit([X] * 4, [Y[:, t] for t in range(4)])
    sparse_shared = fit(sp.csr_matrix(X), Y)
    order = rng.permutation(100)
    long = fit(sp.csr_matrix(np.vstack([X] * 4)[order]), Y.T.ravel()[order],
               task=np.repeat(np.arange(4), 25)[order])
    for other in (lists, sparse_shared, long):
        assert np.allclose(other.coef_, shared.coef_, atol=1e-6)
        assert np.allclose(other.intercept_, shared.intercept_, atol=1e-6)
        assert other.n_stages_ == shared.n_stages_


def test_inputs_are_not_modified_intercepts_unpenalized_and_errors_are_clear():
    Xs, ys = _problem(8, "squared")
    copies = [X.copy() for X in Xs], [y.copy() for y in ys]
    a = CappedL1Regressor(0.05, 0.5, tol=1e-10).fit(Xs, ys)
    b = CappedL1Regressor(0.05, 0.5, tol=1e-10).fit(Xs, [y + 30.0 for y in ys])
    assert all(np.array_equal(X, Xc) for X, Xc in zip(Xs, copies[0], strict=True))
    assert all(np.array_equal(y, yc) for y, yc in zip(ys, copies[1], strict=True))
    assert np.allclose(a.coef_, b.coef_, atol=1e-8)
    assert np.allclose(b.intercept_ - a.intercept_, 30.0, atol=1e-8)
    with pytest.raises(ValueError, match="theta"):
        CappedL1Regressor(0.1, -1.0).fit(Xs, ys)
    with pytest.raises(ValueError, match="alpha"):
        CappedL1Regressor(-0.1, 1.0).fit(Xs, ys)
    with pytest.raises(ValueError, match="n_stages"):
        CappedL1Regressor(n_stages=0).fit(Xs, ys)


def test_warm_start_reaches_the_cold_solution():
    """A warm start only gives the inner solver its starting point: stage 1 is still the lasso
    (the stage penalty at W = 0), so a warm-started path gives the cold fits' solutions."""
    Xs, ys = _problem(9, "squared")
    warm = CappedL1Regressor(0.2, 0.8, tol=1e-9, warm_start=True).fit(Xs, ys)
    warm.set_params(alpha=0.1).fit(Xs, ys)
    cold = CappedL1Regressor(0.1, 0.8, tol=1e-9).fit(Xs, ys)
    assert np.allclose(warm.coef_, cold.coef_, atol=1e-6)
    assert warm.solver_info_["stage_keys"] == cold.solver_info_["stage_keys"]


# ----------------------------------------------------------------------------- tools
def test_grid_search_and_multitask_cv_on_long_format():
    Xs, ys = _problem(10, "squared", sizes=(30, 34, 28, 31))
    X = np.vstack([np.column_stack([Xt, np.full(len(Xt), t)]) for t, Xt in enumerate(Xs)])
    y = np.concatenate(ys)
    est = CappedL1Regressor(theta=0.8, task_column=-1)
    gs = GridSearchCV(est, {"alpha": [0.01, 0.1], "theta": [0.5, 2.0]},
                      cv=KFold(2, shuffle=True, random_state=0)).fit(X, y)
    assert gs.best_estimator_.predict(X).shape == y.shape
    cv = MultiTaskCV(est, n_alphas=2, cv=2, widen=0).fit(X, y)
    assert cv.best_params_["alpha"] in cv.cv_results_["param_alpha"]
    yc = np.concatenate([np.where(v > np.median(v), 1, 0) for v in ys])
    ccv = MultiTaskCV(CappedL1Classifier(theta=0.8, task_column=-1), n_alphas=2, widen=0,
                      cv=2).fit(X, yc)
    assert set(np.unique(ccv.predict(X))) <= {0, 1}


@pytest.mark.parametrize("cls, loss", [(CappedL1Regressor, "squared"),
                                       (CappedL1Classifier, "logistic")])
def test_model_file_round_trip(cls, loss, tmp_path):
    Xs, ys = _problem(11, loss)
    est = cls(theta=0.8).fit(Xs, ys)
    back = load_model(save_model(est, tmp_path / "model.skops"))
    for a, b in zip(est.predict(Xs), back.predict(Xs), strict=True):
        assert np.array_equal(a, b)
    assert np.array_equal(est.capped_features_, back.capped_features_)
