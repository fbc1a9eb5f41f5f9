"""New tasks after fit: ``fit_new_tasks``, the new-task priors, ``unknown_tasks``.

Each new-task fit is compared with the small problem the documentation states, written here
independently (from the fitted ``coef_`` and the hyper-parameters) and solved by cvxpy, or by
the closed form of the ridge-type problems: to 1e-6 on the weights for the closed forms and
1e-4 for the problems solved iteratively (the estimators run at ``tol=1e-10`` there).
"""

from __future__ import annotations

import copy
import warnings

import cvxpy as cp
import numpy as np
import pytest

import multitask
from multitask.benchmark import school_regressors
from multitask.data import as_multitask_data
from multitask.estimators.new_tasks import (
    CV_GRID,
    CV_MIN_ROWS,
    CV_MIN_TOTAL,
    GaussianSystem,
)
from multitask.penalties import L1InfNorm, MeanRegularization, TraceNorm
from multitask.penalties.new_task import (
    ElementwisePrior,
    GaussianPrior,
    new_task_prior,
)

D, M = 5, 6


def _data(seed=0, m=M, new=2, d=D, sizes=None):
    """Fitted tasks (lists) and new tasks (lists) with low-rank weights and intercepts."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((d, 2)) @ rng.standard_normal((2, m + new))
    sizes = sizes or [int(s) for s in rng.integers(20, 40, m)] + [7, 10][:new]
    Xs = [rng.standard_normal((n, d)) + 0.3 for n in sizes]
    ys = [X @ W[:, t] + 0.5 * t + 0.4 * rng.standard_normal(len(X)) for t, X in enumerate(Xs)]
    return Xs[:m], ys[:m], Xs[m:], ys[m:]


def _fit(est, Xs, ys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(Xs, ys)


def _scale(Xs, n_new):
    """The "scaled" strength: mean rows of the fitted tasks over the new task's rows."""
    return np.mean([len(x) for x in Xs]) / n_new


def _solve_cvx(X, y, prior_expr, parts, loss="squared"):
    """``min (1/n) sum loss(x_i^T w + b, y_i) + prior`` with ``w`` the sum of ``parts``."""
    n = X.shape[0]
    b = cp.Variable()
    w = sum(parts)
    z = X @ w + b
    if loss == "squared":
        data = cp.sum_squares(z - y) / (2 * n)
    else:
        data = cp.sum(cp.logistic(-cp.multiply(y, z))) / n
    cp.Problem(cp.Minimize(data + prior_expr)).solve(solver="CLARABEL")
    return np.asarray(w.value).ravel(), float(b.value)


# ----------------------------------------------------------------------------- unchanged
REGRESSORS = sorted(school_regressors()) + ["GraphRegularizedRegressor"]


@pytest.mark.parametrize("name", REGRESSORS)
def test_fitted_tasks_are_bitwise_unchanged_and_new_ones_appended(name):
    Xs, ys, Xn, yn = _data()
    est = _fit(getattr(multitask, name)(), Xs, ys)
    before = {k: copy.deepcopy(getattr(est, k)) for k in
              ("coef_", "intercept_", "tasks_", "coef_variable_", "fit_task_sizes_")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = est.fit_new_tasks(Xn, yn)
    assert out is est
    assert np.array_equal(est.coef_[:M], before["coef_"])
    assert np.array_equal(est.intercept_[:M], before["intercept_"])
    assert est.coef_.shape == (M + 2, D) and np.all(np.isfinite(est.coef_))
    assert list(est.tasks_) == list(range(M + 2))
    assert np.array_equal(est.fit_task_sizes_, before["fit_task_sizes_"])
    V = est.coef_variable_
    if before["coef_variable_"].shape[-1] == M:  # one variable column per task
        assert np.array_equal(V[..., :M], before["coef_variable_"])
        assert V.shape[-1] == M + 2
    for i, comp in enumerate(type(est)._task_components):
        assert np.allclose(getattr(est, comp), V[i].T)
    pred = est.predict(Xs + Xn)
    assert len(pred) == M + 2
    for t in range(M):
        assert np.array_equal(pred[t], est.coef_[t] @ Xs[t].T + est.intercept_[t]) or \
            np.allclose(pred[t], Xs[t] @ est.coef_[t] + est.intercept_[t], rtol=1e-12)


@pytest.mark.parametrize("name", ["TraceNormClassifier", "MeanRegularizedClassifier",
                                  "L21Classifier", "DirtyModelClassifier"])
@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_classifiers_learn_new_tasks(name, loss, datagen):
    Xs, ys = datagen.classification_lists(sizes=(40, 55, 35, 30, 12), seed=4)
    est = _fit(getattr(multitask, name)(loss=loss), Xs[:4], ys[:4])
    coef = est.coef_.copy()
    est.fit_new_tasks(Xs[4:], ys[4:])
    assert np.array_equal(est.coef_[:4], coef)
    labels = est.predict(Xs)[4]
    assert set(np.unique(labels)) <= set(est.classes_)
    assert np.all(np.isfinite(est.coef_[4])) and np.isfinite(est.intercept_[4])
    scores = est.decision_function(Xs)[4]
    assert np.allclose(scores, Xs[4] @ est.coef_[4] + est.intercept_[4])


# ----------------------------------------------------------------------------- the problems
def test_trace_norm_new_task_is_the_subspace_ridge():
    Xs, ys, Xn, yn = _data()
    alpha = 2.0
    est = _fit(multitask.TraceNormRegressor(alpha=alpha), Xs, ys)
    U, s, _ = np.linalg.svd(est.coef_.T, full_matrices=False)
    keep = s > 1e-6 * s[0]
    U, s = U[:, keep], s[keep]
    assert 1 <= U.shape[1] < D  # a learned subspace
    est.fit_new_tasks(Xn, yn, strength="scaled")
    for j, (X, y) in enumerate(zip(Xn, yn, strict=True)):
        c = _scale(Xs, len(y))
        a = cp.Variable(U.shape[1])
        w, b = _solve_cvx(X, y, c * alpha / 2 * cp.sum(cp.multiply(1 / s, a ** 2)), [U @ a])
        assert np.allclose(est.coef_[M + j], w, atol=1e-6)
        assert np.isclose(est.intercept_[M + j], b, atol=1e-6)


def test_mean_regularized_new_task_is_pulled_to_the_mean_task():
    Xs, ys, Xn, yn = _data(seed=1)
    alpha = 0.5
    est = _fit(multitask.MeanRegularizedRegressor(alpha=alpha, tol=1e-10), Xs, ys)
    wbar = est.coef_.mean(axis=0)
    est.fit_new_tasks(Xn, yn, strength="fitted")
    for j, (X, y) in enumerate(zip(Xn, yn, strict=True)):
        w = cp.Variable(D)
        ref, b = _solve_cvx(X, y, alpha * M / (M + 1) * cp.sum_squares(w - wbar), [w])
        assert np.allclose(est.coef_[M + j], ref, atol=1e-6)
        assert np.isclose(est.intercept_[M + j], b, atol=1e-6)


def test_mean_regularization_rule_is_the_exact_conditional():
    rng = np.random.default_rng(2)
    W = rng.standard_normal((D, M))
    pen = MeanRegularization(0.7, M + 1)
    prior = new_task_prior(MeanRegularization(0.7, M), W)
    for _ in range(3):
        w = rng.standard_normal(D)
        exact = pen.value(np.column_stack([W, w])) - pen.value(np.column_stack([W, 0 * w]))
        # the prior and the conditional differ by a constant independent of w
        assert np.isclose(prior.value(w[:, None]) - prior.value(np.zeros((D, 1))), exact)


@pytest.mark.parametrize("m", [1, 2, 7])
def test_mean_regularization_is_the_mean_graph(m):
    """MeanRegularization (built without an eigen-decomposition) is GraphRegularization with
    the mean Laplacian."""
    from multitask.penalties import GraphRegularization, mean_laplacian

    fast, slow = MeanRegularization(0.3, m), GraphRegularization(0.3, mean_laplacian(m))
    assert np.isclose(fast.lambda_max, slow.lambda_max, atol=1e-12)
    assert np.array_equal(fast.laplacian, slow.laplacian)
    W = np.random.default_rng(m).standard_normal((D, m))
    assert np.isclose(fast.value(W), slow.value(W))


def test_trace_rule_majorizes_the_conditional_and_is_tight_at_zero():
    rng = np.random.default_rng(3)
    W = rng.standard_normal((D, 2)) @ rng.standard_normal((2, M))
    pen = TraceNorm(1.3)
    prior = new_task_prior(pen, W)
    base = pen.value(W)
    assert prior.value(np.zeros((D, 1))) == 0.0
    for _ in range(5):
        w = prior.basis @ rng.standard_normal(prior.basis.shape[1])
        exact = pen.value(np.column_stack([W, w])) - base
        assert prior.value(w[:, None]) >= exact - 1e-9
    outside = rng.standard_normal(D)
    outside -= prior.basis @ (prior.basis.T @ outside)
    assert prior.value(outside[:, None]) == np.inf


def test_l1inf_rule_is_the_exact_conditional():
    rng = np.random.default_rng(4)
    W = rng.standard_normal((D, M))
    pen = L1InfNorm(0.9)
    prior = new_task_prior(pen, W)
    for _ in range(5):
        w = 3 * rng.standard_normal(D)
        exact = pen.value(np.column_stack([W, w])) - pen.value(W)
        assert np.isclose(prior.value(w[:, None]), exact)


@pytest.mark.parametrize("name", ["IndependentRidgeRegressor", "L21Regressor",
                                  "ConvexASORegressor", "TaskRelationshipRegressor"])
def test_gaussian_priors_match_their_closed_forms(name):
    Xs, ys, Xn, yn = _data(seed=5)
    est = _fit(getattr(multitask, name)(tol=1e-10), Xs, ys)
    W = est.coef_.T
    alpha = est.alpha
    if name == "IndependentRidgeRegressor":
        P, basis = alpha * np.eye(D), np.eye(D)
    elif name == "L21Regressor":
        norms = np.linalg.norm(W, axis=1)
        basis = np.eye(D)[:, norms > 1e-9 * norms.max()]
        P = np.diag(alpha / np.where(norms > 0, norms, 1.0))
    elif name == "TaskRelationshipRegressor":
        U, s, _ = np.linalg.svd(W, full_matrices=False)
        basis = U[:, s > 1e-7 * s[0]]
        s = s[s > 1e-7 * s[0]]
        P = alpha * s.sum() * (basis / s) @ basis.T
    else:  # cASO: 2 alpha eta (1 + eta) (eta I + M)^{-1} with the fitted feature structure
        from multitask.penalties.clustered import structure_eigenvalues

        U, s, _ = np.linalg.svd(W, full_matrices=False)
        gamma = structure_eigenvalues(s, est.eta, est.k, D)
        Mf = (U * gamma) @ U.T
        P = 2 * alpha * est.eta * (1 + est.eta) * np.linalg.inv(est.eta * np.eye(D) + Mf)
        basis = np.eye(D)
    est.fit_new_tasks(Xn, yn, strength="scaled")
    for j, (X, y) in enumerate(zip(Xn, yn, strict=True)):
        c = _scale(Xs, len(y))
        Xc, yc = X - X.mean(axis=0), y - y.mean()
        Pb = basis.T @ P @ basis
        a = np.linalg.solve(basis.T @ (Xc.T @ Xc / len(y)) @ basis + c * Pb,
                            basis.T @ Xc.T @ yc / len(y))
        w = basis @ a
        assert np.allclose(est.coef_[M + j], w, atol=1e-6)
        assert np.isclose(est.intercept_[M + j], y.mean() - X.mean(axis=0) @ w, atol=1e-6)


def test_graph_new_task_with_l1_matches_cvxpy():
    Xs, ys, Xn, yn = _data(seed=6)
    adj = np.ones((M, M)) - np.eye(M)
    est = _fit(multitask.GraphRegularizedRegressor(adj, alpha=0.2, alpha_l1=0.05, tol=1e-10),
               Xs, ys)
    wbar = est.coef_.mean(axis=0)
    dbar = (M - 1.0)  # the mean degree, tr(L) / m, of the complete graph of weight 1
    est.fit_new_tasks(Xn, yn, strength="scaled")
    for j, (X, y) in enumerate(zip(Xn, yn, strict=True)):
        c = _scale(Xs, len(y))
        w = cp.Variable(D)
        prior = c * (0.2 * dbar * cp.sum_squares(w - wbar) + 0.05 * cp.norm1(w))
        ref, b = _solve_cvx(X, y, prior, [w])
        assert np.allclose(est.coef_[M + j], ref, atol=1e-4)
        assert np.isclose(est.intercept_[M + j], b, atol=1e-4)


def test_dirty_model_new_task_matches_cvxpy():
    Xs, ys, Xn, yn = _data(seed=7)
    ag, al = 0.3, 0.2
    est = _fit(multitask.DirtyModelRegressor(ag, al, tol=1e-10), Xs, ys)
    free = np.abs(est.group_component_).max(axis=0)  # max_t |P_jt| per feature
    est.fit_new_tasks(Xn, yn, strength="scaled")
    for j, (X, y) in enumerate(zip(Xn, yn, strict=True)):
        c = _scale(Xs, len(y))
        p, q = cp.Variable(D), cp.Variable(D)
        prior = c * (ag * cp.sum(cp.pos(cp.abs(p) - free)) + al * cp.norm1(q))
        ref, b = _solve_cvx(X, y, prior, [p, q])
        assert np.allclose(est.coef_[M + j], ref, atol=1e-4)
        assert np.isclose(est.intercept_[M + j], b, atol=1e-4)
        assert np.allclose(est.group_component_[M + j] + est.sparse_component_[M + j],
                           est.coef_[M + j])


def test_robust_mtl_new_task_matches_cvxpy():
    Xs, ys, Xn, yn = _data(seed=8)
    est = _fit(multitask.RobustMTLRegressor(alpha=0.5, lam=0.8, solver="fista", tol=1e-10),
               Xs, ys)
    U, s, _ = np.linalg.svd(est.low_rank_component_.T, full_matrices=False)
    keep = s > 1e-7 * s[0]
    U, s = U[:, keep], s[keep]
    est.fit_new_tasks(Xn, yn, strength="scaled")
    for j, (X, y) in enumerate(zip(Xn, yn, strict=True)):
        c = _scale(Xs, len(y))
        a, e = cp.Variable(U.shape[1]), cp.Variable(D)
        prior = c * (0.5 / 2 * cp.sum(cp.multiply(1 / s, a ** 2)) + 0.5 * 0.8 * cp.norm2(e))
        ref, b = _solve_cvx(X, y, prior, [U @ a, e])
        assert np.allclose(est.coef_[M + j], ref, atol=1e-4)
        assert np.isclose(est.intercept_[M + j], b, atol=1e-4)


def test_sparse_low_rank_new_task_matches_cvxpy(monkeypatch):
    """The low-rank part's subspace at the trace ball's multiplier plus the lasso part: the
    tasks whose sparse part is not zero are solved exactly (a lasso on the low-rank part's
    partial minimum, checked by its optimality conditions)."""
    from multitask.solvers import new_tasks as nt

    exact = []
    split_lasso = nt._split_lasso
    monkeypatch.setattr(nt, "_split_lasso", lambda *a: exact.append(split_lasso(*a)) or exact[-1])
    Xs, ys, Xn, yn = _data(seed=28, new=2)
    Xn = Xn + [Xn[0] * 0.5]
    yn = yn + [yn[0] + 4.0 * Xn[0][:, 1]]  # a feature the fitted subspace cannot give
    est = _fit(multitask.SparseLowRankRegressor(alpha=0.01, radius=2.0, tol=1e-10), Xs, ys)
    U, s, _ = np.linalg.svd(est.low_rank_component_.T, full_matrices=False)
    keep = s > 1e-7 * s[0]
    U, s = U[:, keep], s[keep]
    lam = est.kkt_["grad_spectral_norm"]
    est.fit_new_tasks(Xn, yn, strength="scaled")
    assert np.count_nonzero(est.sparse_component_[M:]) > 0
    assert exact and all(point is not None for point in exact)  # passed the exact test
    for j, (X, y) in enumerate(zip(Xn, yn, strict=True)):
        c = _scale(Xs, len(y))
        a, p = cp.Variable(U.shape[1]), cp.Variable(D)
        prior = c * (lam / 2 * cp.sum(cp.multiply(1 / s, a ** 2)) + 0.01 * cp.norm1(p))
        ref, b = _solve_cvx(X, y, prior, [U @ a, p])
        assert np.allclose(est.coef_[M + j], ref, atol=1e-5)
        assert np.isclose(est.intercept_[M + j], b, atol=1e-5)
        assert np.allclose(est.sparse_component_[M + j] + est.low_rank_component_[M + j],
                           est.coef_[M + j])


def test_convex_aso_prior_reads_the_stored_structure():
    """cASO's new-task prior from the stored ``M`` (no SVD) equals the one computed from the
    fitted weights."""
    Xs, ys, _, _ = _data(seed=29)
    est = _fit(multitask.ConvexASORegressor(k=2, tol=1e-10), Xs, ys)
    stored = est._new_task_prior()
    computed = new_task_prior(est._fitted_penalty(), est.coef_variable_)
    assert np.allclose(stored.precision_matrix(), computed.precision_matrix(), rtol=0,
                       atol=1e-10 * np.abs(computed.precision_matrix()).max())
    with pytest.raises(ValueError, match="structure must hold"):
        new_task_prior(est._fitted_penalty(), est.coef_variable_,
                       structure=(est.structure_basis_[:1], est.structure_eigenvalues_, 0.0))


def test_clustered_new_task_takes_the_best_cluster():
    Xs, ys, Xn, yn = _data(seed=9, m=8)
    alpha, eta = 0.5, 0.2
    est = _fit(multitask.ClusteredMTLRegressor(alpha=alpha, eta=eta, k=2), Xs, ys)
    W, labels = est.coef_.T, est.labels_
    est.fit_new_tasks(Xn, yn, strength="scaled")
    for j, (X, y) in enumerate(zip(Xn, yn, strict=True)):
        c = _scale(Xs, len(y))
        best = None
        for lab in np.unique(labels):
            n_c = np.sum(labels == lab)
            rho = n_c / (n_c + 1.0)
            wc = W[:, labels == lab].mean(axis=1)
            w = cp.Variable(D)
            prior = c * alpha * (eta * cp.sum_squares(w) + rho * cp.sum_squares(w - wc))
            ref, b = _solve_cvx(X, y, prior, [w])
            value = (np.mean((X @ ref + b - y) ** 2) / 2
                     + c * alpha * (eta * ref @ ref + rho * np.sum((ref - wc) ** 2)))
            if best is None or value < best[0]:
                best = (value, ref, b)
        assert np.allclose(est.coef_[M + 2 + j], best[1], atol=1e-6)
        assert np.isclose(est.intercept_[M + 2 + j], best[2], atol=1e-6)


def test_logistic_new_task_matches_cvxpy(datagen):
    Xs, ys = datagen.classification_lists(sizes=(40, 55, 35, 30, 25), seed=5)
    est = _fit(multitask.TraceNormClassifier(alpha=0.02, tol=1e-10), Xs[:4], ys[:4])
    U, s, _ = np.linalg.svd(est.coef_.T, full_matrices=False)
    keep = s > 1e-7 * s[0]
    U, s = U[:, keep], s[keep]
    est.fit_new_tasks(Xs[4:], ys[4:], strength=3.0)
    yy = np.where(ys[4] == est.classes_[1], 1.0, -1.0)
    a = cp.Variable(U.shape[1])
    ref, b = _solve_cvx(Xs[4], yy, 3.0 * 0.02 / 2 * cp.sum(cp.multiply(1 / s, a ** 2)),
                        [U @ a], loss="logistic")
    assert np.allclose(est.coef_[4], ref, atol=1e-4)
    assert np.isclose(est.intercept_[4], b, atol=1e-4)


def test_pooled_new_task_is_the_population_model(regression_lists):
    Xs, ys = regression_lists
    est = multitask.PooledRegressor().fit(Xs[:2], ys[:2])
    est.fit_new_tasks(Xs[2:], ys[2:])
    assert np.array_equal(est.coef_[2], est.coef_[0])
    assert est.intercept_[2] == est.intercept_[0]


def test_priors_have_exact_proxes():
    rng = np.random.default_rng(10)
    Q, _ = np.linalg.qr(rng.standard_normal((D, 2)))
    priors = [GaussianPrior(rng.standard_normal(D), Q, [0.5, 2.0], 0.7),
              GaussianPrior(rng.standard_normal(D), Q, [0.5, 2.0]),
              ElementwisePrior(D, rng.standard_normal(D), 0.3, [0.2, np.inf, 0.0, 1.0, 0.5],
                               [0.1, 0.4, 0.0, 0.0, 0.3])]
    v, step = rng.standard_normal((D, 1)), 0.8
    for prior in priors:
        u = prior.prox(v, step)
        obj = 0.5 * np.sum((u - v) ** 2) + step * prior.value(u)
        assert np.isfinite(obj)
        for _ in range(200):  # no feasible neighbour does better
            z = u + 1e-3 * rng.standard_normal(u.shape)
            if isinstance(prior, GaussianPrior) and prior.confined:
                z = prior.prox(z, 0.0)
            assert obj <= 0.5 * np.sum((z - v) ** 2) + step * prior.value(z) + 1e-12


# ----------------------------------------------------------------------------- strength
def test_strength_rules(regression_lists):
    Xs, ys, Xn, yn = _data(seed=11)
    est = _fit(multitask.IndependentRidgeRegressor(alpha=0.3), Xs, ys)

    def new_coef(strength):
        e = copy.deepcopy(est).fit_new_tasks(Xn, yn, strength=strength)
        return e.coef_[M:]

    scaled = new_coef("scaled")
    for j, y in enumerate(yn):
        c = _scale(Xs, len(y))
        e = copy.deepcopy(est).fit_new_tasks([Xn[j]], [y], strength=c)
        assert np.allclose(e.coef_[M], scaled[j], rtol=1e-12, atol=1e-14)
    assert np.allclose(new_coef("fitted"), new_coef(1.0), rtol=1e-12)
    assert not np.allclose(new_coef("fitted"), scaled)


def test_strength_cv_picks_a_grid_value_and_needs_rows():
    Xs, ys, Xn, yn = _data(seed=12, sizes=[30] * M + [9, 12])
    est = _fit(multitask.TraceNormRegressor(alpha=1.0), Xs, ys)
    e1 = copy.deepcopy(est).fit_new_tasks(Xn, yn, strength="cv")
    e2 = copy.deepcopy(est).fit_new_tasks(Xn, yn, strength="cv")
    assert np.array_equal(e1.coef_, e2.coef_)  # deterministic folds
    # the chosen multiplier g of the "scaled" strength is one value of the grid, common to
    # the new tasks
    chosen = [g for g in CV_GRID if all(
        np.allclose(copy.deepcopy(est).fit_new_tasks([X], [y], strength=g * _scale(Xs, len(y)))
                    .coef_[M], e1.coef_[M + j], rtol=1e-10, atol=1e-12)
        for j, (X, y) in enumerate(zip(Xn, yn, strict=True)))]
    assert len(chosen) == 1
    short = [x[: CV_MIN_ROWS - 1] for x in Xn]
    with pytest.raises(ValueError, match="strength='cv' needs at least"):
        copy.deepcopy(est).fit_new_tasks(short, [y[: CV_MIN_ROWS - 1] for y in yn],
                                         strength="cv")


@pytest.mark.parametrize("name", ["MeanRegularizedRegressor", "ConvexASORegressor",
                                  "IndependentRidgeRegressor"])
def test_kernel_form_equals_the_primal_form(name):
    """Tasks with fewer rows than unknowns are solved in the space of their rows: the same
    solution and leave-one-out losses as the k x k systems (to 1e-9)."""
    Xs, ys, Xn, yn = _data(seed=22, d=8, sizes=[30] * M + [3, 5, 6][:2])
    est = _fit(getattr(multitask, name)(alpha=0.3), Xs, ys)
    data, _ = as_multitask_data(Xn, yn)
    kernel = GaussianSystem(data, est._new_task_prior(), True, 0.0)
    primal = GaussianSystem(data, est._new_task_prior(), True, 0.0)
    primal._kernel = None
    assert kernel._kernel is not None  # 5 rows, 8 unknowns
    scales = np.array([3.0, 0.7])
    for a, b in zip(kernel.solve(scales), primal.solve(scales), strict=True):
        assert np.allclose(a, b, rtol=1e-9, atol=1e-12)
    grid = np.outer([10.0, 1.0, 0.1], scales)
    assert np.allclose(kernel.loo_losses(grid), primal.loo_losses(grid), rtol=1e-9)


def test_auto_strength_cross_validates_only_when_the_rows_allow_it():
    Xs, ys, _, _ = _data(seed=20, new=0)
    rng = np.random.default_rng(21)
    est = _fit(multitask.TraceNormRegressor(alpha=1.0), Xs, ys)
    many = [rng.standard_normal((4, D)) for _ in range(CV_MIN_TOTAL // 4 + 1)]
    ymany = [x @ est.coef_[0] + rng.standard_normal(4) for x in many]
    auto = copy.deepcopy(est).fit_new_tasks(many, ymany)
    assert np.array_equal(auto.coef_, copy.deepcopy(est).fit_new_tasks(
        many, ymany, strength="cv").coef_)
    few = many[:2]
    auto = copy.deepcopy(est).fit_new_tasks(few, ymany[:2])
    assert np.array_equal(auto.coef_, copy.deepcopy(est).fit_new_tasks(
        few, ymany[:2], strength="scaled").coef_)


@pytest.mark.parametrize("strength", ["strong", 0, -1.0, np.nan, True])
def test_bad_strength_is_refused(strength):
    Xs, ys, Xn, yn = _data()
    est = _fit(multitask.TraceNormRegressor(), Xs, ys)
    with pytest.raises(ValueError, match="strength must be"):
        est.fit_new_tasks(Xn, yn, strength=strength)


# ----------------------------------------------------------------------------- formats
def test_long_format_with_string_ids_and_prediction(datagen):
    Xs, ys, Xn, yn = _data(seed=13)
    X, y, task = datagen.lists_to_long(Xs, ys, labels=[f"s{t}" for t in range(M)])
    est = multitask.TraceNormRegressor().fit(X, y, task)
    Xnew, ynew, tnew = datagen.lists_to_long(Xn, yn, labels=["new_a", "new_b"])
    est.fit_new_tasks(Xnew, ynew, tnew)
    assert list(est.tasks_[-2:]) == ["new_a", "new_b"]
    pred = est.predict(Xn[0], task=["new_a"] * len(yn[0]))
    assert np.allclose(pred, Xn[0] @ est.coef_[M] + est.intercept_[M])
    with pytest.raises(ValueError, match="already a task of the model"):
        est.fit_new_tasks(Xnew, ynew, tnew)
    with pytest.raises(ValueError, match="already a task of the model"):
        est.fit_new_tasks(X[:5], y[:5], task[:5])
    with pytest.raises(ValueError, match="ids are numeric"):
        est.fit_new_tasks(Xnew, ynew, np.where(tnew == "new_a", 100, 101))
    with pytest.raises(ValueError, match="give the new tasks' ids with task="):
        est.fit_new_tasks(Xn, yn)


def test_shared_design_new_task_columns(shared_regression):
    X, Y = shared_regression
    est = multitask.TraceNormRegressor(alpha=0.5).fit(X, Y[:, :3])
    coef = est.coef_.copy()
    est.fit_new_tasks(X[:12], Y[:12, 3])
    assert list(est.tasks_) == [0, 1, 2, 3]
    assert np.array_equal(est.coef_[:3], coef)
    assert est.predict(X).shape == (X.shape[0], 4)


def test_wrong_number_of_features_and_classes_are_refused(regression_lists,
                                                          classification_lists):
    Xs, ys = regression_lists
    est = multitask.TraceNormRegressor().fit(Xs, ys)
    with pytest.raises(ValueError, match="features"):
        est.fit_new_tasks([Xs[0][:, :-1]], [ys[0]])
    with pytest.raises(ValueError, match="features"):
        est.fit_new_tasks(Xs[0][:, :-1], ys[0], task=np.full(len(ys[0]), 9))
    Xc, yc = classification_lists
    clf = multitask.TraceNormClassifier().fit(Xc, yc)
    with pytest.raises(ValueError, match="not among the model's classes"):
        clf.fit_new_tasks([Xc[0]], [yc[0] + 5])
    with pytest.raises(ValueError, match="one class only"):
        clf.fit_new_tasks([Xc[0]], [np.zeros(len(yc[0]), dtype=int)])


def test_models_without_a_rule_say_so(datagen):
    Xs, ys, Xn, yn = _data(seed=14)
    est = _fit(multitask.TemporalGroupLassoRegressor(), Xs, ys)
    with pytest.raises(NotImplementedError, match="time"):
        est.fit_new_tasks(Xn, yn)
    Xc, yc = datagen.classification_lists()
    kern = multitask.MultiTaskKernelClassifier().fit(Xc, yc)
    with pytest.raises(NotImplementedError, match="new tasks|fit_new_tasks"):
        kern.fit_new_tasks(Xc[:1], yc[:1])


def test_unfitted_model_is_refused():
    from sklearn.exceptions import NotFittedError

    Xs, ys, Xn, yn = _data()
    with pytest.raises(NotFittedError):
        multitask.TraceNormRegressor().fit_new_tasks(Xn, yn)


def test_the_structure_is_that_of_the_tasks_of_fit():
    Xs, ys, Xn, yn = _data(seed=15)
    est = _fit(multitask.MeanRegularizedRegressor(), Xs, ys)
    one = copy.deepcopy(est).fit_new_tasks([Xn[1]], [yn[1]])
    two = copy.deepcopy(est).fit_new_tasks([Xn[0]], [yn[0]]).fit_new_tasks([Xn[1]], [yn[1]])
    assert np.array_equal(one.coef_[M], two.coef_[M + 1])


def _fresh(est, Xn, yn):
    """The new tasks' weights of a copy of ``est`` (a copy starts without a cached structure)."""
    return copy.deepcopy(est).fit_new_tasks(Xn, yn, strength="scaled").coef_[M:]


@pytest.mark.parametrize(("name", "change"), [
    ("TraceNormRegressor", "refit"), ("TraceNormRegressor", "set_params"),
    ("TraceNormRegressor", "weights_in_place"), ("ConvexASORegressor", "context_in_place"),
    ("ClusteredMTLRegressor", "context_in_place"),
    ("GraphRegularizedRegressor", "param_in_place")])
def test_the_cached_structure_follows_the_model(name, change):
    """The structure (prior, nbar) is computed once per fit and kept across calls; a refit,
    a new hyper-parameter or an in-place change of what the prior is read from drops it: the
    new tasks are then those of a model that never cached anything."""
    from multitask.estimators import new_tasks as nt

    def make():
        if name == "GraphRegularizedRegressor":
            return multitask.GraphRegularizedRegressor(np.ones((M, M)) - np.eye(M))
        return getattr(multitask, name)()

    Xs, ys, Xn, yn = _data(seed=25)
    est = _fit(make(), Xs, ys)
    first = nt.fitted_structure(est)
    est.fit_new_tasks([Xn[0]], [yn[0]], strength="scaled")  # appended tasks keep the entry
    assert nt.fitted_structure(est) is first
    est = _fit(make(), Xs, ys)
    first = nt.fitted_structure(est)
    before = _fresh(est, Xn, yn)
    if change == "refit":  # on the same data: a new fit all the same
        _fit(est, Xs, ys)
        assert nt.fitted_structure(est) is not first
        first = nt.fitted_structure(est)
        # every row twice: the same weights (to the solver's tolerance), twice the rows
        _fit(est, [np.repeat(x, 2, axis=0) for x in Xs], [np.repeat(y, 2) for y in ys])
    elif change == "set_params":
        est.set_params(alpha=3.0 * est.alpha)
    elif change == "weights_in_place":
        est.coef_variable_[:, 0] *= 3.0
    elif change == "context_in_place":
        if name == "ConvexASORegressor":
            est.structure_eigenvalues_[0] *= 0.5
        else:
            est.labels_[:] = np.arange(M) % 2
    else:  # the graph of the graph model, changed in place
        est.graph[0, 1] = est.graph[1, 0] = 5.0
    assert nt.fitted_structure(est) is not first
    after = copy.deepcopy(est)
    nt.clear_fitted_structure(after)
    expected = after.fit_new_tasks(Xn, yn, strength="scaled").coef_[M:]
    est.fit_new_tasks(Xn, yn, strength="scaled")
    assert np.array_equal(est.coef_[M:], expected)
    assert not np.allclose(expected, before)


def test_the_cached_structure_does_not_skip_validation_nor_keep_models_alive():
    import gc

    from multitask.estimators import fitted_structure as nt

    Xs, ys, Xn, yn = _data(seed=26)
    est = _fit(multitask.TraceNormRegressor(), Xs, ys)
    est.fit_new_tasks([Xn[0]], [yn[0]])
    est.set_params(alpha=-1.0)
    with pytest.raises(ValueError, match="alpha"):
        est.fit_new_tasks([Xn[1]], [yn[1]])
    est.set_params(alpha=1.0)
    nt.fitted_structure(est)
    n = len(nt._STRUCTURES)
    del est
    gc.collect()
    assert len(nt._STRUCTURES) == n - 1


def test_valid_hyper_parameters_are_remembered_by_type_and_value_only():
    """``_validate_params`` skips values of built-in types already found valid for the class
    (fit, then fit_new_tasks): invalid values are never remembered, arrays never skipped."""
    from multitask.estimators import base

    est = multitask.TraceNormRegressor(alpha=0.7)
    est._validate_params()
    assert base._validated_key(est) in base._VALIDATED
    assert base._validated_key(multitask.TraceNormRegressor(alpha=0.7)) in base._VALIDATED
    assert base._validated_key(multitask.TraceNormRegressor(alpha=1)) != base._validated_key(
        multitask.TraceNormRegressor(alpha=1.0))  # 1 == 1.0, but not the same type
    for _ in range(2):
        with pytest.raises(ValueError, match="alpha"):
            est.set_params(alpha=-1.0)._validate_params()
        with pytest.raises(ValueError, match="solver"):
            est.set_params(alpha=0.7, solver="nope")._validate_params()
    graph = multitask.GraphRegularizedRegressor(np.ones((3, 3)))
    assert base._validated_key(graph) is None  # an array: checked every time


@pytest.mark.parametrize("layout", ["long", "lists"])
def test_fit_new_tasks_leaves_its_inputs_unchanged(layout, datagen):
    Xs, ys, Xn, yn = _data(seed=27)
    est = _fit(multitask.MeanRegularizedRegressor(), Xs, ys)
    weights = [np.linspace(0.5, 2.0, len(y)) for y in yn]
    if layout == "long":
        X, y, task = datagen.lists_to_long(Xn, yn)
        task = task + 100
        args = (X, y, task, np.concatenate(weights))
    else:
        args = (Xn, yn, None, weights)
    frozen = copy.deepcopy(args)
    est.fit_new_tasks(*args)
    for a, b in zip(_arrays_of(args), _arrays_of(frozen), strict=True):
        assert np.array_equal(a, b)


def _arrays_of(args):
    """The arrays of ``args`` (nested lists and tuples), in order."""
    out = []
    for a in args:
        if isinstance(a, (list, tuple)):
            out.extend(_arrays_of(a))
        elif a is not None:
            out.append(np.asarray(a))
    return out


@pytest.mark.parametrize("name", ["TraceNormRegressor", "ClusteredMTLRegressor",
                                  "RobustMTLRegressor", "DirtyModelRegressor",
                                  "GraphRegularizedRegressor", "PooledRegressor"])
def test_saved_model_with_new_tasks_loads(name, tmp_path):
    """A model file of a model with new tasks passes the fitted-state check when loaded."""
    from multitask.persistence import load_model, save_model

    Xs, ys, Xn, yn = _data(seed=16)
    est = _fit(getattr(multitask, name)(), Xs, ys).fit_new_tasks(Xn, yn)
    path = tmp_path / "model.skops"
    save_model(est, path)
    back = load_model(path)
    assert np.array_equal(back.coef_, est.coef_)
    assert np.allclose(back.predict(Xs + Xn)[M], est.predict(Xs + Xn)[M])


# ----------------------------------------------------------------------------- population
def test_unknown_task_error_says_how_to_predict(datagen):
    Xs, ys, _, _ = _data(seed=17)
    X, y, task = datagen.lists_to_long(Xs, ys)
    est = multitask.TraceNormRegressor().fit(X, y, task)
    with pytest.raises(ValueError, match="Unknown task id 99.*fit_new_tasks.*population"):
        est.predict(X[:3], task=[0, 99, 1])


def test_population_prediction_only_when_asked(datagen):
    Xs, ys, _, _ = _data(seed=18)
    X, y, task = datagen.lists_to_long(Xs, ys)
    est = multitask.MeanRegularizedRegressor().fit(X, y, task)
    rows = np.array([0, 1, 2, 3])
    ids = np.array([task[0], 99, task[2], 98])
    with pytest.raises(ValueError, match="Unknown task id"):
        est.predict(X[rows], task=ids)
    pred = est.predict(X[rows], task=ids, unknown_tasks="population")
    known = est.predict(X[rows[[0, 2]]], task=ids[[0, 2]])
    assert np.array_equal(pred[[0, 2]], known)
    w, b = est.coef_.mean(axis=0), est.intercept_.mean()
    assert np.allclose(pred[[1, 3]], X[rows[[1, 3]]] @ w + b)
    with pytest.raises(ValueError, match="unknown_tasks must be one of"):
        est.predict(X[rows], task=ids, unknown_tasks="mean")
    with pytest.raises(ValueError, match="ids are string"):
        est.predict(X[rows], task=ids.astype(str), unknown_tasks="population")


def test_population_probabilities_and_task_column(datagen):
    Xc, yc = datagen.classification_lists()
    X, y, task = datagen.lists_to_long(Xc, yc)
    XT = np.column_stack([X, task])
    clf = multitask.TraceNormClassifier(task_column=X.shape[1]).fit(XT, y)
    new = np.column_stack([X[:4], [7, 7, 0, 7]])
    proba = clf.predict_proba(new, unknown_tasks="population")
    assert proba.shape == (4, 2) and np.allclose(proba.sum(axis=1), 1.0)
    labels = clf.predict(new, unknown_tasks="population")
    assert set(labels) <= set(clf.classes_)
    w, b = clf.coef_.mean(axis=0), clf.intercept_.mean()
    assert np.allclose(clf.decision_function(new, unknown_tasks="population")[[0, 1, 3]],
                       X[[0, 1, 3]] @ w + b)


def test_l1inf_hinge_classifier_new_task_stays_in_the_box(datagen):
    """The hinge loss goes to the projected subgradient method, the box is its projection."""
    Xs, ys = datagen.classification_lists(sizes=(40, 55, 35, 30, 25), seed=6)
    est = _fit(multitask.L1InfClassifier(radius=2.0, max_iter=300), Xs[:4], ys[:4])
    coef = est.coef_.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit_new_tasks(Xs[4:], ys[4:])
    assert np.array_equal(est.coef_[:4], coef)
    assert np.all(np.abs(est.coef_[4]) <= np.abs(coef).max(axis=0) * (1 + 1e-9) + 1e-12)


@pytest.mark.parametrize(("name", "strength"), [
    ("TraceNormRegressor", "scaled"), ("MeanRegularizedRegressor", "scaled"),
    ("RobustMTLRegressor", "scaled"), ("TraceNormRegressor", "cv")])
def test_integer_weights_equal_repeated_rows(name, strength):
    """sample_weight in fit_new_tasks: integer weights give the model of the repeated rows."""
    Xs, ys, Xn, yn = _data(seed=23, sizes=[30] * M + [6, 8])
    est = _fit(getattr(multitask, name)(tol=1e-10), Xs, ys)
    rng = np.random.default_rng(24)
    weights = [rng.integers(1, 4, len(y)) for y in yn]
    a = copy.deepcopy(est).fit_new_tasks(Xn, yn, sample_weight=weights, strength=strength)
    b = copy.deepcopy(est).fit_new_tasks([np.repeat(X, w, axis=0) for X, w in zip(
        Xn, weights, strict=True)], [np.repeat(y, w) for y, w in zip(yn, weights, strict=True)],
        strength=strength)
    if strength == "scaled":
        assert np.allclose(a.coef_, b.coef_, rtol=1e-7, atol=1e-9)
        assert np.allclose(a.intercept_, b.intercept_, rtol=1e-7, atol=1e-9)
    else:  # leave-one-out leaves one row out, not all its copies: only the fit is compared
        assert a.coef_.shape == b.coef_.shape
