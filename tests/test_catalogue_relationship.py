"""Multi-task relationship learning (MTRL, Zhang & Yeung, UAI 2010).

References used by the tests: cvxpy (CLARABEL) on the joint problem over ``(W, b, Omega)``
written independently here with ``matrix_frac`` (an SDP, not through the squared trace norm
the library uses); the paper's own scaling of the problem; the matrix square root of
``scipy.linalg.sqrtm`` for the closed-form task covariance; a planted task correlation.
"""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp
from sklearn.model_selection import GridSearchCV, KFold

from multitask import MultiTaskCV, TaskRelationshipClassifier, TaskRelationshipRegressor
from multitask.penalties import TaskRelationship, prox_squared_l1, task_covariance
from multitask.persistence import load_model, save_model

SIZES = (11, 16, 8, 13)
D = 5
# 1e-8: the tightest setting at which CLARABEL reports "optimal" on every problem here; its
# optimum is then accurate to about 1e-9 relative, far below the 1e-6 asserted
CLARABEL = {"solver": cp.CLARABEL, "tol_gap_abs": 1e-8, "tol_gap_rel": 1e-8, "tol_feas": 1e-8}


def _problem(seed, loss, sizes=SIZES, d=D):
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((d, 2)) @ rng.standard_normal((2, len(sizes)))
    Xs, ys = [], []
    for t, n in enumerate(sizes):
        X = rng.standard_normal((n, d)) + 0.5 * rng.standard_normal(d)
        z = X @ W[:, t] + 0.3 * t
        if loss == "squared":
            y = z + 0.5 * rng.standard_normal(n)
        else:
            y = np.where(z + 0.8 * rng.standard_normal(n) > 0, 1, -1)
            y[:2] = [-1, 1]
        Xs.append(X)
        ys.append(y)
    return Xs, ys


def _loss_value(Xs, ys, W, b, loss, half=True):
    total = 0.0
    for t, (X, y) in enumerate(zip(Xs, ys, strict=True)):
        z = X @ W[:, t] + b[t]
        if loss == "squared":
            r = np.sum((y - z) ** 2) * (0.5 if half else 1.0)
        else:
            r = np.sum(np.logaddexp(0.0, -y * z))
        total += r / len(y)
    return total


def _relationship_term(W, Omega):
    """``tr(W Omega^+ W^T)`` (pseudo-inverse: the rows of W lie in the range of Omega)."""
    return float(np.trace(W @ np.linalg.pinv(Omega, rcond=1e-10, hermitian=True) @ W.T))


def _cvxpy_optimum(Xs, ys, alpha, alpha_l2, loss, half=True):
    """``loss + (alpha_l2 / 2) ||W||_F^2 + (alpha / 2) tr(W Omega^{-1} W^T)`` jointly over
    ``(W, b, Omega)`` with ``Omega >= 0``, ``tr Omega = 1`` (matrix_frac)."""
    d, m = Xs[0].shape[1], len(Xs)
    W, b = cp.Variable((d, m)), cp.Variable(m)
    Omega = cp.Variable((m, m), PSD=True)
    terms = []
    for t, (X, y) in enumerate(zip(Xs, ys, strict=True)):
        z = X @ W[:, t] + b[t]
        r = (0.5 if half else 1.0) * cp.sum_squares(z - y) if loss == "squared" else cp.sum(
            cp.logistic(-cp.multiply(y, z)))
        terms.append(r / len(y))
    obj = (cp.sum(terms) + 0.5 * alpha_l2 * cp.sum_squares(W)
           + 0.5 * alpha * cp.matrix_frac(W.T, Omega))
    prob = cp.Problem(cp.Minimize(obj), [cp.trace(Omega) == 1])
    prob.solve(**CLARABEL)
    assert prob.status == cp.OPTIMAL
    return prob.value


def _fit(est, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ConvergenceWarning at the tight tolerances
        return est.fit(*args, **kwargs)


# ----------------------------------------------------------------------------- the penalty
def test_prox_of_the_squared_l1_on_the_nonnegative_orthant_matches_cvxpy():
    rng = np.random.default_rng(0)
    for mu in (0.01, 0.3, 2.0, 30.0):
        s = np.abs(rng.standard_normal(7))
        x = prox_squared_l1(s, mu)
        v = cp.Variable(7)
        cp.Problem(cp.Minimize(0.5 * cp.sum_squares(v - s) + 0.5 * mu * cp.square(cp.sum(v))),
                   [v >= 0]).solve(**CLARABEL)
        assert np.allclose(x, v.value, atol=1e-6)
        assert np.all(x >= 0)


def test_prox_matches_cvxpy_and_the_value_is_the_minimum_over_omega():
    rng = np.random.default_rng(1)
    V = rng.standard_normal((5, 4))
    pen, step = TaskRelationship(0.8), 0.6
    out = pen.prox(V, step)
    U = cp.Variable(V.shape)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(U - V)
                                  + step * 0.4 * cp.square(cp.normNuc(U))))
    prob.solve(**CLARABEL)
    ours = 0.5 * np.sum((out - V) ** 2) + step * pen.prox_value(out)
    assert ours == pytest.approx(prob.value, rel=1e-7)
    assert np.allclose(out, U.value, atol=1e-5)
    # value = (alpha/2) tr(W Omega(W)^{-1} W^T) with Omega(W) = (W^T W)^{1/2} / tr(...),
    # computed here with scipy's matrix square root
    W = rng.standard_normal((6, 4))
    root = np.real(scipy.linalg.sqrtm(W.T @ W))
    Omega = root / np.trace(root)
    assert np.allclose(task_covariance(W), Omega, atol=1e-10)
    assert pen.value(W) == pytest.approx(0.4 * np.trace(W @ np.linalg.inv(Omega) @ W.T),
                                         rel=1e-10)
    # and no other feasible Omega does better (random ones, in the interior of the set)
    for _ in range(20):
        A = rng.standard_normal((4, 4))
        other = A @ A.T + 1e-3 * np.eye(4)
        other /= np.trace(other)
        assert np.trace(W @ np.linalg.inv(other) @ W.T) >= np.trace(
            W @ np.linalg.inv(Omega) @ W.T) * (1 - 1e-12)


# ----------------------------------------------------------------------------- vs cvxpy
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_objective_matches_cvxpy(loss, seed):
    """The objective at (coef_, intercept_, task_covariance_) is within 1e-6 relative of
    cvxpy's optimum of the joint problem over (W, b, Omega), with the ||W||_F^2 term of the
    model (alpha_l2), for per-task designs of unequal sizes."""
    cls = TaskRelationshipRegressor if loss == "squared" else TaskRelationshipClassifier
    alpha, alpha_l2 = (0.2, 0.05) if loss == "squared" else (0.05, 0.01)
    Xs, ys = _problem(seed, loss)
    est = _fit(cls(alpha, alpha_l2=alpha_l2, tol=1e-8, max_iter=100000), Xs, ys)
    assert est.optimality_ <= 1e-8
    Omega = est.task_covariance_
    assert np.allclose(Omega, Omega.T) and np.trace(Omega) == pytest.approx(1.0, abs=1e-12)
    assert np.linalg.eigvalsh(Omega).min() >= -1e-12
    W = est.coef_.T
    ours = (_loss_value(Xs, ys, W, est.intercept_, loss) + 0.5 * alpha_l2 * np.sum(W * W)
            + 0.5 * alpha * _relationship_term(W, Omega))
    ref = _cvxpy_optimum(Xs, ys, alpha, alpha_l2, loss)
    assert abs(ours - ref) <= 1e-6 * abs(ref)


def test_the_papers_scaling_through_the_documented_conversion():
    """Zhang & Yeung's problem: sum_t (1/n_t) sum_i (y_i - w_t^T x_i - b_t)^2 (no factor 1/2)
    + (lambda1 / 2) tr(W W^T) + (lambda2 / 2) tr(W Omega^{-1} W^T): twice ours with
    alpha = lambda2 / 2 and alpha_l2 = lambda1 / 2."""
    lam1, lam2 = 0.1, 0.6
    Xs, ys = _problem(3, "squared")
    est = _fit(TaskRelationshipRegressor(lam2 / 2, alpha_l2=lam1 / 2, tol=1e-8,
                                         max_iter=100000), Xs, ys)
    W = est.coef_.T
    paper = (_loss_value(Xs, ys, W, est.intercept_, "squared", half=False)
             + 0.5 * lam1 * np.sum(W * W) + 0.5 * lam2 * _relationship_term(
                 W, est.task_covariance_))
    ref = _cvxpy_optimum(Xs, ys, lam2, lam1, "squared", half=False)
    assert abs(paper - ref) <= 1e-6 * abs(ref)


# ----------------------------------------------------------------------------- planted
def test_planted_task_correlations_are_recovered():
    """Six tasks: three have the weights u, two -u and one an orthogonal v (|u| = |v| = 3).
    The true task covariance Omega(W*) = (W*^T W*)^{1/2} / tr (computed here by an
    eigendecomposition) has the correlation +1 within the u and -u groups, -1 between them
    and 0 with the v task. From 40 rows per task with noise 0.5, the learned correlation must
    match the true one within 0.15 in every entry (the noise perturbs the weights by about
    0.5 / sqrt(40) = 0.08 per entry, and the square root in Omega gives the noise directions
    a larger share than in W^T W: 0.04-0.09 is what seeds 0-2 give) and have its sign
    wherever the true value is not 0; and the learned Omega is the closed form at the learned
    W."""
    rng = np.random.default_rng(0)
    d, n = 8, 40
    u, v = np.linalg.qr(rng.standard_normal((d, 2)))[0].T * 3.0
    W = np.column_stack([u, u, u, -u, -u, v])
    Xs = [rng.standard_normal((n, d)) for _ in range(6)]
    ys = [X @ W[:, t] + 0.5 * rng.standard_normal(n) for t, X in enumerate(Xs)]
    est = TaskRelationshipRegressor(0.05).fit(Xs, ys)
    vals, vecs = np.linalg.eigh(W.T @ W)
    root = (vecs * np.sqrt(np.clip(vals, 0.0, None))) @ vecs.T
    true = root / np.sqrt(np.outer(np.diag(root), np.diag(root)))
    learned = est.task_correlation_
    assert np.max(np.abs(learned - true)) < 0.15
    nonzero = np.abs(true) > 0.5
    assert np.all(np.sign(learned[nonzero]) == np.sign(true[nonzero]))
    assert np.allclose(est.task_covariance_, task_covariance(est.coef_.T), atol=1e-12)


# ----------------------------------------------------------------------------- formats
def test_every_input_format_fits_the_same_model():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((20, D))
    Y = X @ rng.standard_normal((D, 4)) + rng.standard_normal((20, 4))

    def fit(*args, **kw):
        return _fit(TaskRelationshipRegressor(0.1, tol=1e-10, max_iter=100000), *args, **kw)

    shared = fit(X, Y)
    lists = fit([X] * 4, [Y[:, t] for t in range(4)])
    sparse_lists = fit([sp.csr_matrix(X)] * 4, [Y[:, t] for t in range(4)])
    order = rng.permutation(80)
    long = fit(np.vstack([X] * 4)[order], Y.T.ravel()[order],
               task=np.repeat(np.arange(4), 20)[order])
    for other in (lists, sparse_lists, long):
        assert np.allclose(other.coef_, shared.coef_, atol=1e-6)
        assert np.allclose(other.intercept_, shared.intercept_, atol=1e-6)
        assert np.allclose(other.task_correlation_, shared.task_correlation_, atol=1e-5)


def test_inputs_are_not_modified_intercepts_unpenalized_and_errors_are_clear():
    Xs, ys = _problem(8, "squared")
    copies = [X.copy() for X in Xs], [y.copy() for y in ys]
    a = TaskRelationshipRegressor(0.1, tol=1e-10).fit(Xs, ys)
    b = TaskRelationshipRegressor(0.1, tol=1e-10).fit(Xs, [y - 50.0 for y in ys])
    assert all(np.array_equal(X, Xc) for X, Xc in zip(Xs, copies[0], strict=True))
    assert all(np.array_equal(y, yc) for y, yc in zip(ys, copies[1], strict=True))
    assert np.allclose(a.coef_, b.coef_, atol=1e-8)
    assert np.allclose(a.intercept_ - b.intercept_, 50.0, atol=1e-8)
    with pytest.raises(ValueError, match="alpha"):
        TaskRelationshipRegressor(-0.1).fit(Xs, ys)
    with pytest.raises(ValueError, match="alpha must be finite"):
        TaskRelationship(np.inf)


def test_warm_start_default_grid_and_zero_weights():
    Xs, ys = _problem(9, "squared")
    est = TaskRelationshipRegressor(1.0, tol=1e-9)
    assert est.alpha_max(Xs, ys) == np.inf  # differentiable at 0 with zero gradient
    grid = est.default_grid(Xs, ys)["alpha"]
    assert grid.size == 10 and np.all(np.diff(grid) < 0) and np.all(grid > 0)
    warm = TaskRelationshipRegressor(1.0, tol=1e-9, warm_start=True).fit(Xs, ys)
    warm.set_params(alpha=0.1).fit(Xs, ys)
    cold = TaskRelationshipRegressor(0.1, tol=1e-9).fit(Xs, ys)
    assert np.allclose(warm.coef_, cold.coef_, atol=1e-6)
    # constant targets: W = 0, and the covariance is the documented I / m
    flat = TaskRelationshipRegressor(0.1).fit(Xs, [np.ones(len(y)) for y in ys])
    assert np.all(flat.coef_ == 0)
    assert np.allclose(flat.task_covariance_, np.eye(4) / 4)


# ----------------------------------------------------------------------------- tools
def test_grid_search_and_multitask_cv_on_long_format():
    Xs, ys = _problem(10, "squared", sizes=(30, 34, 28, 31))
    X = np.vstack([np.column_stack([Xt, np.full(len(Xt), t)]) for t, Xt in enumerate(Xs)])
    y = np.concatenate(ys)
    est = TaskRelationshipRegressor(task_column=-1)
    gs = GridSearchCV(est, {"alpha": [0.01, 0.1, 1.0]},
                      cv=KFold(2, shuffle=True, random_state=0)).fit(X, y)
    assert gs.best_estimator_.predict(X).shape == y.shape
    cv = MultiTaskCV(est, n_alphas=2, cv=2, widen=0).fit(X, y)
    assert cv.best_params_["alpha"] in cv.cv_results_["param_alpha"]
    yc = np.concatenate([np.where(v > np.median(v), 1, 0) for v in ys])
    ccv = MultiTaskCV(TaskRelationshipClassifier(task_column=-1), n_alphas=2, cv=2,
                      widen=0).fit(X, yc)
    assert set(np.unique(ccv.predict(X))) <= {0, 1}


@pytest.mark.parametrize("cls, loss", [(TaskRelationshipRegressor, "squared"),
                                       (TaskRelationshipClassifier, "logistic")])
def test_model_file_round_trip(cls, loss, tmp_path):
    Xs, ys = _problem(11, loss)
    est = cls().fit(Xs, ys)
    back = load_model(save_model(est, tmp_path / "model.skops"))
    for a, b in zip(est.predict(Xs), back.predict(Xs), strict=True):
        assert np.array_equal(a, b)
    assert np.array_equal(est.task_correlation_, back.task_correlation_)


def test_plot_task_correlation():
    pytest.importorskip("matplotlib")
    from multitask.plotting import plot_task_correlation

    Xs, ys = _problem(12, "squared")
    est = TaskRelationshipRegressor(0.1).fit(Xs, ys)
    fig = plot_task_correlation(est)
    ax = fig.axes[0]
    image = ax.images[0]
    assert np.allclose(image.get_array(), est.task_correlation_)
    assert image.get_clim() == (-1.0, 1.0)  # a diverging scale centred at 0
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(t) for t in est.tasks_]
    with pytest.raises(ValueError, match="square"):
        plot_task_correlation(np.ones((2, 3)))


# ----------------------------------------------------------------------------- design choice
def test_alternating_minimization_stalls_at_a_low_rank_optimum():
    """Why the penalty is the squared trace norm with its exact prox and not a "stages"
    penalty (the paper's alternating algorithm: W with Omega fixed, then the closed-form
    Omega). The squared trace norm makes the optimum low rank (rank 3 of 8 tasks here), where
    Omega is singular and tr(W Omega^{-1} W^T) has no finite quadratic majorant: the exact
    alternation breaks down (Omega^{-1} blows up), and the usual remedy, Omega from
    W^T W + eps I, converges to the optimum only slowly (still above 1e-3 relative after 200
    alternations for eps = 1e-8), while FISTA with the exact prox meets tol=1e-8."""
    rng = np.random.default_rng(0)
    m, d, alpha = 8, 12, 0.1
    Xs = [rng.standard_normal((int(n), d)) for n in rng.integers(20, 40, m)]
    W0 = rng.standard_normal((d, 3)) @ rng.standard_normal((3, m))
    ys = [X @ W0[:, t] + 0.5 * rng.standard_normal(len(X)) for t, X in enumerate(Xs)]
    Xc = [X - X.mean(axis=0) for X in Xs]
    yc = [y - y.mean() for y in ys]
    pen = TaskRelationship(alpha)

    def objective(W):
        return _loss_value(Xc, yc, W, np.zeros(m), "squared") + pen.value(W)

    est = _fit(TaskRelationshipRegressor(alpha, tol=1e-8, max_iter=100000), Xs, ys)
    W_opt = est.coef_.T
    assert np.linalg.matrix_rank(W_opt, tol=1e-8 * np.abs(W_opt).max()) < m  # low rank
    best = objective(W_opt)
    A0 = np.zeros((d * m, d * m))
    rhs = np.zeros(d * m)
    for t, (X, y) in enumerate(zip(Xc, yc, strict=True)):
        A0[t * d:(t + 1) * d, t * d:(t + 1) * d] = X.T @ X / len(y)
        rhs[t * d:(t + 1) * d] = X.T @ y / len(y)

    def w_step(Omega):  # min loss + (alpha / 2) tr(W Omega^{-1} W^T), Omega fixed
        Q = alpha * np.linalg.inv(Omega)
        return np.linalg.solve(A0 + np.kron(Q, np.eye(d)), rhs).reshape(m, d).T

    # the exact alternation: Omega(W) becomes numerically singular
    Omega, conds = np.eye(m) / m, []
    for _ in range(15):
        Omega = task_covariance(w_step(Omega))
        conds.append(np.linalg.cond(Omega))
    assert max(conds) > 1e12
    # the eps-regularized alternation: monotone but slow
    Omega, eps, gaps = np.eye(m) / m, 1e-8, []
    for _ in range(200):
        W = w_step(Omega)
        vals, vecs = np.linalg.eigh(W.T @ W + eps * np.eye(m))
        root = (vecs * np.sqrt(vals)) @ vecs.T
        Omega = root / np.trace(root)
        gaps.append((objective(W) - best) / best)
    assert gaps[-1] > 1e-3
    assert est.optimality_ <= 1e-8 and est.n_iter_ < 2000
