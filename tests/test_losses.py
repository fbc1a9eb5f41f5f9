"""Losses: the scaling convention, gradients, Lipschitz constants, alpha_max.

Convention: ``F(W, b) = sum_t (1 / n_t) sum_{i in t} ell(y_i, x_i^T w_t + b_t)`` with ``W`` of
shape ``(d, m)``. The references below are written from that formula with plain numpy loops
over the user's per-task arrays, independently of the data layer.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit

from multitask.data import as_multitask_data
from multitask.estimators import MultiTaskClassifier, MultiTaskRegressor
from multitask.losses import Hinge, Logistic, Squared, SquaredHinge, get_datafit
from multitask.penalties import L1, L21, ColumnL2, Ridge, TraceNorm
from multitask.solvers import optimality
from multitask.solvers.base import kkt_residual

LOSSES = {"squared": Squared, "logistic": Logistic, "squared_hinge": SquaredHinge}
ELL = {
    "squared": lambda y, z: 0.5 * (y - z) ** 2,
    "logistic": lambda y, z: np.logaddexp(0.0, -y * z),
    "squared_hinge": lambda y, z: np.maximum(0.0, 1.0 - y * z) ** 2,
    "hinge": lambda y, z: np.maximum(0.0, 1.0 - y * z),
}
FORMATS = ["lists-dense", "lists-csr", "shared-dense", "shared-csr"]


def _problem(fmt, loss, seed=0, d=4, m=3):
    """Per-task arrays ``(Xs, ys)`` (labels -1/+1 for classification) and the MultiTaskData."""
    rng = np.random.default_rng(seed)
    if fmt.startswith("lists"):
        Xs = [rng.standard_normal((n, d)) + 0.5 for n in (9, 14, 6)[:m]]
    else:
        X = rng.standard_normal((11, d)) + 0.5
        Xs = [X] * m
    if fmt.endswith("csr"):
        Xs = [np.where(np.abs(X) > 0.6, X, 0.0) for X in Xs]
    if loss == "squared":
        ys = [rng.standard_normal(len(X)) * 2 + t for t, X in enumerate(Xs)]
    else:
        ys = [np.where(rng.standard_normal(len(X)) > 0.2, 1.0, -1.0) for X in Xs]
        for y in ys:
            y[:2] = [-1.0, 1.0]
    to = sp.csr_matrix if fmt.endswith("csr") else np.asarray
    clf = loss != "squared"
    if fmt.startswith("lists"):
        data, _ = as_multitask_data([to(X) for X in Xs], ys, classification=clf)
    else:
        data, _ = as_multitask_data(to(Xs[0]), np.column_stack(ys), classification=clf)
    return Xs, ys, data


def _reference_value(loss, Xs, ys, W, b):
    return sum(np.mean(ELL[loss](y, X @ W[:, t] + b[t])) for t, (X, y) in
               enumerate(zip(Xs, ys, strict=True)))


def _point(rng, d, m, scale=0.3):
    return scale * rng.standard_normal((d, m)), scale * rng.standard_normal(m)


# ----------------------------------------------------------------------------- values


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("loss", ["logistic", "squared_hinge", "hinge"])
def test_classification_loss_values_follow_the_convention(loss, fmt):
    Xs, ys, data = _problem(fmt, loss)
    cls = Hinge if loss == "hinge" else LOSSES[loss]
    rng = np.random.default_rng(1)
    for fit_intercept in (True, False):
        df = cls(data, fit_intercept=fit_intercept)
        W, b = _point(rng, data.n_features, data.n_tasks)
        bb = b if fit_intercept else np.zeros_like(b)
        got = df.value(W, b if fit_intercept else None)
        assert got == pytest.approx(_reference_value(loss, Xs, ys, W, bb), rel=1e-12)


@pytest.mark.parametrize("fmt", FORMATS)
def test_squared_value_eliminates_the_intercept(fmt):
    """With fit_intercept, value(W) = min_b F(W, b), b_t = mean(y_t - X_t w_t) = intercept(W)."""
    Xs, ys, data = _problem(fmt, "squared")
    rng = np.random.default_rng(2)
    W, _ = _point(rng, data.n_features, data.n_tasks)
    df = Squared(data, fit_intercept=True)
    b_opt = np.array([np.mean(y - X @ W[:, t]) for t, (X, y) in enumerate(zip(Xs, ys,
                                                                            strict=True))])
    np.testing.assert_allclose(df.intercept(W), b_opt, atol=1e-12)
    assert df.value(W) == pytest.approx(_reference_value("squared", Xs, ys, W, b_opt), rel=1e-12)
    assert not df.has_intercept_variable
    df0 = Squared(data, fit_intercept=False)
    assert df0.value(W) == pytest.approx(
        _reference_value("squared", Xs, ys, W, np.zeros(data.n_tasks)), rel=1e-12)
    np.testing.assert_array_equal(df0.intercept(W), np.zeros(data.n_tasks))


def test_shared_squared_loss_is_multitask_lasso_datafit():
    """With a shared X the squared loss is ||Y - XW||_F^2 / (2n) (scikit-learn's datafit)."""
    rng = np.random.default_rng(3)
    X, Y = rng.standard_normal((13, 4)), rng.standard_normal((13, 3))
    data, _ = as_multitask_data(X, Y)
    W = rng.standard_normal((4, 3))
    expected = np.sum((Y - X @ W) ** 2) / (2 * 13)
    assert Squared(data, fit_intercept=False).value(W) == pytest.approx(expected, rel=1e-12)


# ----------------------------------------------------------------------------- gradients


def _fd_grad(f, W, b, h=1e-6):
    gW = np.zeros_like(W)
    for idx in np.ndindex(W.shape):
        E = np.zeros_like(W)
        E[idx] = h
        gW[idx] = (f(W + E, b) - f(W - E, b)) / (2 * h)
    if b is None:
        return gW, None
    gb = np.zeros_like(b)
    for t in range(len(b)):
        e = np.zeros_like(b)
        e[t] = h
        gb[t] = (f(W, b + e) - f(W, b - e)) / (2 * h)
    return gW, gb


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_value_and_grad_matches_finite_differences(loss, fit_intercept, fmt):
    Xs, ys, data = _problem(fmt, loss, seed=4)
    df = LOSSES[loss](data, fit_intercept=fit_intercept)
    rng = np.random.default_rng(5)
    for _ in range(3):
        W, b = _point(rng, data.n_features, data.n_tasks)
        b = b if df.has_intercept_variable else None
        val, gW, gb = df.value_and_grad(W, b)
        assert val == pytest.approx(df.value(W, b), rel=1e-12)
        fdW, fdb = _fd_grad(df.value, W, b)
        np.testing.assert_allclose(gW, fdW, rtol=1e-5, atol=1e-7)
        gW2, gb2 = df.grad(W, b)
        np.testing.assert_allclose(gW2, gW, rtol=1e-12, atol=1e-15)
        if b is None:
            assert gb is None
        else:
            np.testing.assert_allclose(gb, fdb, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("fmt", FORMATS)
def test_hinge_subgradient_away_from_kinks(fmt):
    Xs, ys, data = _problem(fmt, "hinge", seed=6)
    df = Hinge(data)
    rng = np.random.default_rng(7)
    W, b = _point(rng, data.n_features, data.n_tasks)
    margins = data.y * (data.matvec(W) + data.expand(b))
    assert np.min(np.abs(1 - margins)) > 1e-4  # no row at a kink
    gW, gb = df.subgradient(W, b)
    fdW, fdb = _fd_grad(df.value, W, b, h=1e-7)
    np.testing.assert_allclose(gW, fdW, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(gb, fdb, rtol=1e-5, atol=1e-7)
    assert "gradient" not in df.capabilities and "subgradient" in df.capabilities
    with pytest.raises(ValueError, match="not smooth"):
        df.lipschitz()


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_squared_gram_and_direct_paths_agree(fmt, fit_intercept):
    _, _, data = _problem(fmt, "squared", seed=8)
    a = Squared(data, fit_intercept=fit_intercept, use_gram=True)
    b = Squared(data, fit_intercept=fit_intercept, use_gram=False)
    assert a.use_gram and not b.use_gram
    rng = np.random.default_rng(9)
    for _ in range(3):
        W, _ = _point(rng, data.n_features, data.n_tasks, scale=2.0)
        va, gWa, _ = a.value_and_grad(W)
        vb, gWb, _ = b.value_and_grad(W)
        assert va == pytest.approx(vb, rel=1e-10)
        assert a.value(W) == pytest.approx(b.value(W), rel=1e-10)
        np.testing.assert_allclose(gWa, gWb, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(a.intercept(W), b.intercept(W), atol=1e-12)
    assert a.lipschitz() == pytest.approx(b.lipschitz(), rel=1e-10)
    np.testing.assert_allclose(a.grad_at_zero(), b.grad_at_zero(), atol=1e-12)


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_alpha_l2_adds_a_ridge_term(loss):
    """alpha_l2: F + (alpha_l2 / 2) ||W||_F^2, gradient + alpha_l2 W, Lipschitz + alpha_l2; the
    term is not separable over the scores, so the score-space capabilities are dropped."""
    Xs, ys, data = _problem("lists-dense", loss, seed=17)
    plain, ridge = LOSSES[loss](data), LOSSES[loss](data, alpha_l2=0.7)
    rng = np.random.default_rng(18)
    W, b = _point(rng, data.n_features, data.n_tasks)
    b = b if plain.has_intercept_variable else None
    v0, g0, gb0 = plain.value_and_grad(W, b)
    v1, g1, gb1 = ridge.value_and_grad(W, b)
    assert v1 == pytest.approx(v0 + 0.35 * np.sum(W**2), rel=1e-12)
    np.testing.assert_allclose(g1, g0 + 0.7 * W, atol=1e-12)
    if b is not None:
        np.testing.assert_allclose(gb1, gb0, atol=1e-12)
    assert ridge.lipschitz() == pytest.approx(plain.lipschitz() + 0.7, rel=1e-12)
    assert "prox_scores" not in ridge.capabilities and "gradient" in ridge.capabilities
    np.testing.assert_allclose(ridge.grad_at_zero(), plain.grad_at_zero(), atol=1e-14)
    for bad in (-1.0, np.inf, np.nan):
        with pytest.raises(ValueError, match="alpha_l2"):
            LOSSES[loss](data, alpha_l2=bad)


# ----------------------------------------------------------------------------- Lipschitz


def _hessian_blocks(Xs, fit_intercept, center):
    """Per-task design blocks A_t of the joint (W, b) Hessian sum_t A_t^T D_t A_t / n_t."""
    out = []
    for X in Xs:
        A = X - X.mean(axis=0) if center else X
        if fit_intercept:
            A = np.hstack([A, np.ones((len(X), 1))])
        out.append(A)
    return out


def _max_eig(blocks, weights):
    """Largest eigenvalue of the block-diagonal Hessian with row weights D_t."""
    return max(np.linalg.eigvalsh((A.T * w) @ A / len(A))[-1] for A, w in zip(blocks, weights,
                                                                                strict=True))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_squared_lipschitz_is_exact(fmt, fit_intercept):
    """The squared loss's Hessian is constant: lipschitz() equals its largest eigenvalue."""
    Xs, _, data = _problem(fmt, "squared", seed=10)
    blocks = _hessian_blocks(Xs, fit_intercept=False, center=fit_intercept)
    true = _max_eig(blocks, [np.ones(len(A)) for A in blocks])
    for use_gram in (True, False):
        df = Squared(data, fit_intercept=fit_intercept, use_gram=use_gram)
        assert df.lipschitz() == pytest.approx(true, rel=1e-9)


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_squared_lipschitz_is_exact_for_wide_sparse_designs(fit_intercept, shared):
    """More than 200 sparse features and n_t < d (svds, no Gram): still the centred norm."""
    rng = np.random.default_rng(16)
    if shared:
        Xs = [sp.random(60, 260, density=0.05, random_state=0, format="csr")] * 2
        data, _ = as_multitask_data(Xs[0], rng.standard_normal((60, 2)))
    else:
        Xs = [sp.random(n, 260, density=0.05, random_state=t, format="csr")
              for t, n in enumerate((70, 1, 30))]
        data, _ = as_multitask_data(Xs, [rng.standard_normal(X.shape[0]) for X in Xs])
    df = Squared(data, fit_intercept=fit_intercept)
    assert not df.use_gram
    blocks = _hessian_blocks([X.toarray() for X in Xs], fit_intercept=False,
                             center=fit_intercept)
    true = _max_eig(blocks, [np.ones(len(A)) for A in blocks])
    assert df.lipschitz() == pytest.approx(true, rel=1e-8)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_classification_lipschitz_bounds_the_hessian(loss, fit_intercept, fmt):
    """lipschitz() >= ||Hessian(W, b)|| at random points, and equals the sup over (W, b).

    Logistic: ell'' = s(1 - s) <= 1/4; squared hinge: ell'' in {0, 2} (2 where the margin is
    violated, which every row can be): the sup has D = 1/4 resp. 2 on all rows.
    """
    Xs, ys, data = _problem(fmt, loss, seed=11)
    df = LOSSES[loss](data, fit_intercept=fit_intercept)
    L = df.lipschitz()
    blocks = _hessian_blocks(Xs, fit_intercept=fit_intercept, center=False)
    rng = np.random.default_rng(12)
    for _ in range(5):
        W, b = _point(rng, data.n_features, data.n_tasks, scale=1.0)
        b = b if fit_intercept else np.zeros_like(b)
        z = [X @ W[:, t] + b[t] for t, X in enumerate(Xs)]
        if loss == "logistic":
            D = [expit(zt) * (1 - expit(zt)) for zt in z]
        else:
            D = [2.0 * (y * zt < 1) for y, zt in zip(ys, z, strict=True)]
        assert _max_eig(blocks, D) <= L * (1 + 1e-12)
    curv = 0.25 if loss == "logistic" else 2.0
    sup = _max_eig(blocks, [np.full(len(A), curv) for A in blocks])
    assert L == pytest.approx(sup, rel=1e-9)


# ----------------------------------------------------------------------------- alpha_max

PENALTIES = {"l1": L1, "l21": L21, "trace": TraceNorm, "column_l2": ColumnL2}
DUAL_NORMS = {
    "l1": lambda G: np.abs(G).max(),
    "l21": lambda G: np.linalg.norm(G, axis=1).max(),
    "trace": lambda G: np.linalg.norm(G, 2),
    "column_l2": lambda G: np.linalg.norm(G, axis=0).max(),
}


def _squared_gradient_at_zero(Xs, ys):
    """-X_t^T (y_t - mean(y_t)) / n_t per task: the gradient at W = 0 with the best intercepts,
    written from the formula on the user's arrays."""
    return np.column_stack([-X.T @ (y - y.mean()) / len(y) for X, y in zip(Xs, ys, strict=True)])


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_optimal_intercept_at_zero_zeroes_the_intercept_gradient(loss):
    _, _, data = _problem("lists-dense", loss, seed=13)
    df = LOSSES[loss](data)
    b0 = df.optimal_intercept_at_zero()
    _, _, gb = df.value_and_grad(np.zeros((data.n_features, data.n_tasks)), b0)
    np.testing.assert_allclose(gb, 0.0, atol=1e-12)


@pytest.mark.parametrize("layout", ["lists", "shared"])
@pytest.mark.parametrize("penalty", sorted(PENALTIES))
def test_alpha_max_squared(penalty, layout, regression_lists, shared_regression):
    """alpha = alpha_max gives W = 0 (to rounding); 0.95 * alpha_max does not."""
    X, y = regression_lists if layout == "lists" else shared_regression
    est = MultiTaskRegressor(penalty=penalty, tol=1e-10, max_iter=20000)
    lam = est.alpha_max(X, y)
    data, _ = as_multitask_data(X, y)
    G = Squared(data).grad_at_zero()
    Xs, ys = (X, y) if layout == "lists" else ([X] * y.shape[1], list(y.T))
    np.testing.assert_allclose(G, _squared_gradient_at_zero(Xs, ys), atol=1e-12)
    assert lam == pytest.approx(PENALTIES[penalty](1.0).alpha_max(G), rel=1e-12)
    assert lam == pytest.approx(DUAL_NORMS[penalty](G), rel=1e-12)
    below = MultiTaskRegressor(penalty=penalty, alpha=0.95 * lam, tol=1e-10,
                               max_iter=20000).fit(X, y)
    scale = np.abs(below.coef_).max()
    assert scale > 1e-3
    at = est.set_params(alpha=lam).fit(X, y)
    assert np.abs(at.coef_).max() <= 1e-12 * scale
    means = [np.mean(v) for v in y] if layout == "lists" else y.mean(axis=0)
    np.testing.assert_allclose(at.intercept_, means, atol=1e-12)


@pytest.mark.parametrize("penalty", sorted(PENALTIES))
def test_alpha_max_logistic(penalty, classification_lists):
    """At alpha_max nothing beats (W = 0, b0); at 0.95 * alpha_max something does.

    Convergence to W = 0 at exactly alpha_max is sublinear (the optimality condition is tight),
    so the fitted W there is only checked to be small.
    """
    Xs, ys = classification_lists
    data, _ = as_multitask_data(Xs, ys, classification=True)
    df = Logistic(data)
    lam = DUAL_NORMS[penalty](df.grad_at_zero())
    est = MultiTaskClassifier(penalty=penalty, tol=1e-12, max_iter=20000)
    assert est.alpha_max(Xs, ys) == pytest.approx(lam, rel=1e-12)
    zero = np.zeros((data.n_features, data.n_tasks))
    F0 = df.value(zero, df.optimal_intercept_at_zero())

    def objective(model):
        return df.value(model.coef_.T, model.intercept_) + PENALTIES[penalty](
            model.alpha).value(model.coef_.T)

    below = MultiTaskClassifier(penalty=penalty, alpha=0.95 * lam, tol=1e-12,
                                max_iter=20000).fit(Xs, ys)
    assert np.abs(below.coef_).max() > 1e-3
    assert objective(below) < F0 - 1e-8
    at = est.set_params(alpha=lam).fit(Xs, ys)
    assert objective(at) >= F0 - 1e-12
    assert np.abs(at.coef_).max() <= 1e-3 * np.abs(below.coef_).max()
    # the optimality certificate of W = 0 at alpha_max: the relative measure vanishes
    b0 = df.optimal_intercept_at_zero()
    assert optimality(df, PENALTIES[penalty](lam), zero, b0) <= 1e-12
    # below alpha_max zero is not optimal: a positive certified gap, and a prox-gradient
    # residual far from zero
    assert optimality(df, PENALTIES[penalty](0.95 * lam), zero, b0) > 1e-6
    assert kkt_residual(df, PENALTIES[penalty](0.95 * lam), zero, b0) > 1e-3


def test_alpha_max_of_ridge_and_unknown_loss():
    Xs, ys, data = _problem("lists-dense", "squared")
    assert Ridge(1.0).alpha_max(Squared(data).grad_at_zero()) == np.inf
    assert MultiTaskRegressor(penalty="ridge").alpha_max(Xs, ys) == np.inf
    with pytest.raises(ValueError, match="Unknown loss 'cauchy'"):
        get_datafit("cauchy", data)
    assert isinstance(get_datafit("logistic", data), Logistic)


# ----------------------------------------------------------------------------- score space


@pytest.mark.parametrize("loss", ["squared", "squared_hinge"])
def test_prox_scores_satisfies_its_optimality_condition(loss):
    """z = prox(v): (z - v) / step + w * ell'(z) = 0 row by row (w_i = 1 / n_t)."""
    _, _, data = _problem("lists-dense", loss, seed=14)
    df = LOSSES[loss](data, fit_intercept=False)
    rng = np.random.default_rng(15)
    v = 2.0 * rng.standard_normal(data.n_rows)
    for step in (0.1, 1.0, 25.0):
        z = df.prox_scores(v, step)
        _, dz = df._dloss(z)
        np.testing.assert_allclose((z - v) / step + data.row_weights * dz, 0.0, atol=1e-10)
        assert df.value_scores(z) == pytest.approx(
            float(np.sum(data.row_weights * ELL[loss](data.y, z))), rel=1e-12)
