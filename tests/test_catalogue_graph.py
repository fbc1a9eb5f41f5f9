"""Graph-regularized multi-task learning (MALSAR SRMTL, RMTL Graph) and the mean-regularized
model (Evgeniou & Pontil).

* The task graph from an adjacency matrix, edges between task labels, a Laplacian or MALSAR's
  structure matrix ``R``; clear errors for bad graphs.
* For both losses and three random problems with per-task designs of unequal sizes, the
  objective reached at ``tol=1e-8`` is within 1e-6 (relative) of cvxpy's optimum of the same
  formula, written here as a sum over the graph's edges, and ``optimality_ <= tol``.
* MALSAR's ``Least_SRMTL`` / ``Logistic_SRMTL`` (with ``rho_L2``), RMTL's ``Graph`` and
  Evgeniou & Pontil's regularizer through the documented conversions, against cvxpy.
* Planted structure: weights varying smoothly along a task graph are recovered better, and
  more smoothly, than by independent ridge.
* alpha_max, grids, formats, sparse X, GridSearchCV and MultiTaskCV on long-format data,
  model files.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from wide_cases import wide_tasks

import multitask as mt
from multitask.estimators.graph import task_graph_laplacian
from multitask.penalties import GraphRegularization, MeanRegularization
from multitask.solvers import WorkingSet

cp = pytest.importorskip("cvxpy")

TOL = 1e-8
REL = 1e-6
SEEDS = (0, 1, 2)
#: a 4-task graph: a weighted path 0 - 1 - 2 - 3 plus the edge 0 - 2
EDGES = [(0, 1, 1.0), (1, 2, 0.5), (2, 3, 2.0), (0, 2, 0.3)]


def _problem(seed, classification, sizes=(24, 31, 18, 27), d=5):
    rng = np.random.default_rng(300 + seed)
    W = rng.standard_normal((d, 2)) @ rng.standard_normal((2, len(sizes)))
    Xs = [rng.standard_normal((n, d)) + 0.3 * rng.standard_normal(d) for n in sizes]
    ys = [X @ W[:, t] + 0.5 + 0.7 * rng.standard_normal(len(X)) for t, X in enumerate(Xs)]
    if classification:
        ys = [np.where(y > np.median(y), 1, 0) for y in ys]
    return Xs, ys


def _adjacency(edges, m):
    A = np.zeros((m, m))
    for s, t, w in edges:
        A[s, t] = A[t, s] = w
    return A


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


def _edge_penalty(edges, alpha, alpha_l1):
    """alpha sum_edges w_st ||w_s - w_t||^2 + alpha_l1 ||W||_1 (cvxpy, numpy)."""
    def cvx(W):
        return (alpha * sum(w * cp.sum_squares(W[:, s] - W[:, t]) for s, t, w in edges)
                + alpha_l1 * cp.sum(cp.abs(W)))

    def value(W):
        return (alpha * sum(w * np.sum((W[:, s] - W[:, t]) ** 2) for s, t, w in edges)
                + alpha_l1 * np.abs(W).sum())

    return cvx, value


def _mean_penalty(alpha):
    def cvx(W):
        m = W.shape[1]
        mean = cp.sum(W, axis=1) / m
        return alpha * sum(cp.sum_squares(W[:, t] - mean) for t in range(m))

    def value(W):
        return alpha * float(np.sum((W - W.mean(axis=1, keepdims=True)) ** 2))

    return cvx, value


def _cvx_optimum(loss, pen, Xs, ys, alpha_l2=0.0, intercept=True):
    d, m = Xs[0].shape[1], len(Xs)
    W = cp.Variable((d, m))
    b = cp.Variable(m) if intercept else np.zeros(m)
    obj = sum(_loss_cvx(loss, Xs[t], ys[t], W[:, t], b[t]) for t in range(m))
    prob = cp.Problem(cp.Minimize(obj + pen(W) + 0.5 * alpha_l2 * cp.sum_squares(W)))
    prob.solve(solver=cp.CLARABEL)
    assert prob.status == "optimal", prob.status
    return float(prob.value)


def _our_objective(est, loss, pen_value, Xs, ys, alpha_l2=0.0):
    ys = _signed(est, ys)
    W, b = est.coef_.T, est.intercept_
    value = sum(_loss_np(loss, Xs[t], ys[t], W[:, t], b[t]) for t in range(len(Xs)))
    return value + pen_value(W) + 0.5 * alpha_l2 * float(np.sum(W * W))


# ----------------------------------------------------------------------------- the graph
def test_graph_descriptions_give_the_same_laplacian():
    m = 4
    A = _adjacency(EDGES, m)
    L = np.diag(A.sum(axis=1)) - A
    np.testing.assert_allclose(task_graph_laplacian(A, m), L)
    np.testing.assert_allclose(task_graph_laplacian(EDGES, m), L)
    np.testing.assert_allclose(task_graph_laplacian(np.array(EDGES), m), L)
    np.testing.assert_allclose(task_graph_laplacian(L, m), L)
    np.testing.assert_allclose(task_graph_laplacian(sp.csr_matrix(A), m), L)
    # MALSAR's structure matrix: one column per edge, sqrt(weight) (e_s - e_t)
    R = np.zeros((m, len(EDGES)))
    for k, (s, t, w) in enumerate(EDGES):
        R[s, k], R[t, k] = np.sqrt(w), -np.sqrt(w)
    np.testing.assert_allclose(task_graph_laplacian(R, m, graph_type="structure"), L)
    # edges between labels (long format), unit weights by default
    labels = ["a", "b", "c", "d"]
    Lab = task_graph_laplacian([("a", "b"), ("c", "d")], m, tasks=labels)
    np.testing.assert_allclose(Lab, task_graph_laplacian(_adjacency([(0, 1, 1), (2, 3, 1)], m),
                                                         m))
    # None: all tasks related, sum_t ||w_t - w_bar||^2
    W = np.random.default_rng(0).standard_normal((3, m))
    M = task_graph_laplacian(None, m)
    assert np.trace(W @ M @ W.T) == pytest.approx(np.sum((W - W.mean(1, keepdims=True)) ** 2))
    # tr(W L W^T) = sum over edges of w ||w_s - w_t||^2
    _, value = _edge_penalty(EDGES, 1.0, 0.0)
    assert np.trace(W @ L @ W.T) == pytest.approx(value(W))
    # a non-negative matrix with a nonzero diagonal is read as a (PSD) Laplacian: the ridge
    np.testing.assert_allclose(task_graph_laplacian(np.eye(m), m), np.eye(m))


@pytest.mark.parametrize("graph, kind, match", [
    (np.ones((3, 3)) - np.eye(3), "auto", "3 x 3 matrix but the data have 4 tasks"),
    ([(0, 9)], "edges", "task 9"),
    ([(0, 1, -1.0)], "edges", "weight"),
    (np.array([[0.0, -1.0], [-1.0, 0.0]]), "laplacian", r"\(4, 4\)"),
    (-np.eye(4), "laplacian", "positive semi-definite"),
    (np.triu(np.ones((4, 4)), 1), "auto", "symmetric"),
    (np.ones((3, 2)), "structure", "one row per task"),
    ([(0, 1, 2, 3)], "edges", "Edge 0"),
])
def test_bad_graphs_are_named(graph, kind, match):
    with pytest.raises(ValueError, match=match):
        task_graph_laplacian(graph, 4, graph_type=kind)


def test_bad_graph_at_fit_names_the_problem():
    Xs, ys = _problem(0, False)
    with pytest.raises(ValueError, match="4 tasks"):
        mt.GraphRegularizedRegressor(np.ones((3, 3)) - np.eye(3)).fit(Xs, ys)
    with pytest.raises(ValueError, match="graph_type"):
        mt.GraphRegularizedRegressor(graph_type="tree").fit(Xs, ys)


def test_penalty_smooth_part_and_prox():
    rng = np.random.default_rng(1)
    L = task_graph_laplacian(EDGES, 4)
    pen = GraphRegularization(0.7, L, alpha_l1=0.2)
    W = rng.standard_normal((3, 4))
    g, G = pen.smooth_value_and_grad(W)
    assert g == pytest.approx(0.7 * np.trace(W @ L @ W.T))
    E = 1e-6 * rng.standard_normal(W.shape)  # directional derivative
    g2, _ = pen.smooth_value_and_grad(W + E)
    assert g2 - g == pytest.approx(np.vdot(G, E), rel=1e-4)
    assert pen.smooth_lipschitz() == pytest.approx(1.4 * np.linalg.eigvalsh(L).max())
    assert pen.value(W) == pytest.approx(g + 0.2 * np.abs(W).sum())
    np.testing.assert_allclose(pen.prox(W, 0.5), np.sign(W) * np.maximum(np.abs(W) - 0.1, 0))
    assert MeanRegularization(1.0, 4).alpha_max(G) == np.inf
    with pytest.raises(ValueError, match="alpha_l1"):
        GraphRegularization(1.0, L, alpha_l1=-1)


@pytest.mark.parametrize("n_classes", [1, 3])
def test_complete_graph_products_in_closed_form(n_classes):
    """The complete graph of equal weights (the default graph) takes ``W M = w (m W
    - (W 1) 1^T)`` without the ``m x m`` product: the same values; another graph takes the
    product."""
    from multitask.penalties.graph import _complete_weight, mean_laplacian

    m = 6
    rng = np.random.default_rng(n_classes)
    W = rng.standard_normal((4, m * n_classes))
    fast = GraphRegularization(0.3, 2.0 * mean_laplacian(m), n_classes=n_classes)
    assert fast._complete == pytest.approx(2.0 / m)
    value, grad = fast.smooth_value_and_grad(W)
    M = np.kron(2.0 * mean_laplacian(m), np.eye(n_classes))
    np.testing.assert_allclose(grad, 2 * 0.3 * W @ M, atol=1e-12)
    assert value == pytest.approx(0.3 * float(np.vdot(W, W @ M)), rel=1e-12)
    A = rng.random((m, m))
    A = A + A.T
    np.fill_diagonal(A, 0.0)
    assert _complete_weight(np.diag(A.sum(axis=1)) - A) is None


@pytest.mark.parametrize("m, n_classes", [(1, 1), (2, 1), (7, 1), (5, 3)])
def test_path_graph_products_by_differences(m, n_classes):
    """The temporal group lasso's path graph multiplies by differences of neighbouring tasks:
    the same values as the product with its Laplacian."""
    from multitask.penalties.temporal import TemporalGroupLasso, chain_laplacian

    pen = TemporalGroupLasso(0.4, 0.1, m, n_classes=n_classes)
    W = np.random.default_rng(m).standard_normal((3, m * n_classes))
    value, grad = pen.smooth_value_and_grad(W)
    M = np.kron(chain_laplacian(m), np.eye(n_classes))
    np.testing.assert_allclose(grad, 2 * 0.4 * W @ M, atol=1e-12)
    assert value == pytest.approx(0.4 * float(np.vdot(W, W @ M)), rel=1e-12, abs=1e-15)
    # its largest eigenvalue in closed form, as the complete graph's
    top = float(np.linalg.eigvalsh(chain_laplacian(m)).max())
    assert pen.lambda_max == pytest.approx(top, rel=1e-12, abs=1e-12)
    full = GraphRegularization(0.4, 3.0 * np.eye(4) - 0.75 * np.ones((4, 4)))
    assert full.lambda_max == pytest.approx(3.0, rel=1e-12)


# ----------------------------------------------------------------------------- vs cvxpy
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("classification", [False, True], ids=["squared", "logistic"])
def test_graph_model_matches_cvxpy(classification, seed):
    Xs, ys = _problem(seed, classification)
    alpha, alpha_l1 = (0.05, 0.005) if classification else (0.3, 0.05)
    cls = mt.GraphRegularizedClassifier if classification else mt.GraphRegularizedRegressor
    est = cls(EDGES, alpha, alpha_l1, tol=TOL, max_iter=100_000).fit(Xs, ys)
    assert est.optimality_ <= TOL
    loss = "logistic" if classification else "squared"
    cvx, value = _edge_penalty(EDGES, alpha, alpha_l1)
    ref = _cvx_optimum(loss, cvx, Xs, _signed(est, ys))
    ours = _our_objective(est, loss, value, Xs, ys)
    assert abs(ours - ref) <= REL * max(1.0, abs(ref)), (ours, ref)


@pytest.mark.parametrize("classification", [False, True], ids=["squared", "logistic"])
def test_working_sets_reach_cvxpys_optimum_on_many_features(classification):
    """Working sets (a first working set of 8 of 40 rows; the graph term a task coupling
    inside them) at half of ``alpha_l1``'s ``alpha_max``: the certified objective matches
    cvxpy's within 1e-6 and rows were left out of the working set."""
    rng = np.random.default_rng(5)
    d, sizes = 40, (30, 26, 34, 28)
    W = np.zeros((d, len(sizes)))
    W[:4] = rng.standard_normal((4, 1)) + 0.3 * rng.standard_normal((4, len(sizes)))
    Xs, ys, G = wide_tasks(rng, W, sizes, classification)
    alpha, alpha_l1 = 0.05, 0.5 * float(np.abs(G).max())  # (the graph term vanishes at 0)
    cls = mt.GraphRegularizedClassifier if classification else mt.GraphRegularizedRegressor
    est = cls(EDGES, alpha, alpha_l1, solver=WorkingSet(p0=8, tol=TOL, max_iter=100_000),
              tol=TOL, max_iter=100_000).fit(Xs, ys)
    assert est.solver_.name == "working_set" and est.optimality_ <= TOL
    assert est.solver_info_["working_set"] < d
    loss = "logistic" if classification else "squared"
    cvx, value = _edge_penalty(EDGES, alpha, alpha_l1)
    ref = _cvx_optimum(loss, cvx, Xs, _signed(est, ys))
    ours = _our_objective(est, loss, value, Xs, ys)
    assert abs(ours - ref) <= REL * max(1.0, abs(ref)), (ours, ref)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("classification", [False, True], ids=["squared", "logistic"])
def test_mean_model_matches_cvxpy(classification, seed):
    Xs, ys = _problem(seed, classification)
    alpha, alpha_l2 = (0.2, 0.02) if classification else (1.0, 0.1)
    cls = mt.MeanRegularizedClassifier if classification else mt.MeanRegularizedRegressor
    est = cls(alpha, alpha_l2=alpha_l2, tol=TOL, max_iter=100_000).fit(Xs, ys)
    assert est.optimality_ <= TOL
    loss = "logistic" if classification else "squared"
    cvx, value = _mean_penalty(alpha)
    ref = _cvx_optimum(loss, cvx, Xs, _signed(est, ys), alpha_l2=alpha_l2)
    ours = _our_objective(est, loss, value, Xs, ys, alpha_l2=alpha_l2)
    assert abs(ours - ref) <= REL * max(1.0, abs(ref)), (ours, ref)
    np.testing.assert_allclose(est.mean_coef_, est.coef_.mean(axis=0))


def test_plain_proximal_gradient_and_the_mean_preset_as_a_graph():
    Xs, ys = _problem(0, False)
    pg = mt.GraphRegularizedRegressor(EDGES, 0.3, 0.05, solver="pg", tol=TOL,
                                      max_iter=100_000).fit(Xs, ys)
    assert pg.optimality_ <= TOL
    cvx, value = _edge_penalty(EDGES, 0.3, 0.05)
    ref = _cvx_optimum("squared", cvx, Xs, ys)
    assert abs(_our_objective(pg, "squared", value, Xs, ys) - ref) <= REL * max(1.0, ref)
    mean = mt.MeanRegularizedRegressor(0.4, tol=1e-10).fit(Xs, ys)
    graph = mt.GraphRegularizedRegressor(None, 0.4, 0.0, tol=1e-10).fit(Xs, ys)
    np.testing.assert_allclose(mean.coef_, graph.coef_, atol=1e-7)


# ----------------------------------------------------------------------------- conversions
def _equal_and_unequal():
    n = 30
    return _problem(3, False, sizes=(n, n, n, n)), n, _problem(4, False)


def test_malsar_least_srmtl_through_the_documented_conversion():
    """Least_SRMTL: sum_t 0.5 ||y_t - X_t w_t||^2 + rho1 ||W R||_F^2 + rho2 ||W||_1 +
    rho_L2 ||W||_F^2, no intercept. Equal sizes n: alpha = rho1 / n, alpha_l1 = rho2 / n,
    alpha_l2 = 2 rho_L2 / n; unequal sizes: rows scaled by sqrt(n_t), alpha = rho1,
    alpha_l1 = rho2, alpha_l2 = 2 rho_L2."""
    rho1, rho2, rho_l2 = 5.0, 2.0, 0.5
    R = np.random.default_rng(7).standard_normal((4, 3))  # any structure matrix

    def malsar(Xs, ys):
        W = cp.Variable((Xs[0].shape[1], 4))
        obj = sum(0.5 * cp.sum_squares(ys[t] - Xs[t] @ W[:, t]) for t in range(4))
        obj = obj + rho1 * cp.sum_squares(W @ R) + rho2 * cp.sum(cp.abs(W)) \
            + rho_l2 * cp.sum_squares(W)
        prob = cp.Problem(cp.Minimize(obj))
        prob.solve(solver=cp.CLARABEL)

        def value(Wv):
            return (sum(0.5 * np.sum((ys[t] - Xs[t] @ Wv[:, t]) ** 2) for t in range(4))
                    + rho1 * np.sum((Wv @ R) ** 2) + rho2 * np.abs(Wv).sum()
                    + rho_l2 * np.sum(Wv ** 2))

        return float(prob.value), value

    (Xs, ys), n, (Xu, yu) = _equal_and_unequal()
    ref, value = malsar(Xs, ys)
    est = mt.GraphRegularizedRegressor(R, rho1 / n, rho2 / n, graph_type="structure",
                                       alpha_l2=2 * rho_l2 / n, fit_intercept=False, tol=TOL,
                                       max_iter=100_000).fit(Xs, ys)
    assert abs(value(est.coef_.T) - ref) <= REL * ref
    ref, value = malsar(Xu, yu)
    scale = [np.sqrt(len(y)) for y in yu]
    est = mt.GraphRegularizedRegressor(R, rho1, rho2, graph_type="structure",
                                       alpha_l2=2 * rho_l2, fit_intercept=False, tol=TOL,
                                       max_iter=100_000).fit(
        [s * X for s, X in zip(scale, Xu, strict=True)],
        [s * y for s, y in zip(scale, yu, strict=True)])
    assert abs(value(est.coef_.T) - ref) <= REL * ref


def test_malsar_logistic_srmtl_and_rmtl_graph_are_our_scaling():
    """Logistic_SRMTL (per-task mean logistic loss, free intercept): alpha = rho1,
    alpha_l1 = rho2, alpha_l2 = 2 rho_L2. RMTL's Graph (0.5 mean squared loss per task, free
    intercept, Lam1 ||W G||_F^2 + Lam2 ||W||_F^2): alpha = Lam1, alpha_l2 = 2 Lam2."""
    R = np.random.default_rng(8).standard_normal((4, 4))
    rho1, rho2, rho_l2 = 0.05, 0.004, 0.01
    Xs, ys = _problem(5, True)
    est = mt.GraphRegularizedClassifier(R, rho1, rho2, graph_type="structure",
                                        alpha_l2=2 * rho_l2, tol=TOL,
                                        max_iter=100_000).fit(Xs, ys)
    ysg = [np.where(y == 1, 1.0, -1.0) for y in ys]

    def pen(W):
        return rho1 * cp.sum_squares(W @ R) + rho2 * cp.sum(cp.abs(W)) + rho_l2 * cp.sum_squares(W)

    def pen_np(W):
        return rho1 * np.sum((W @ R) ** 2) + rho2 * np.abs(W).sum() + rho_l2 * np.sum(W ** 2)

    ref = _cvx_optimum("logistic", pen, Xs, ysg)
    assert abs(_our_objective(est, "logistic", pen_np, Xs, ys) - ref) <= REL * ref
    # RMTL Graph, least squares
    lam1, lam2 = 0.3, 0.05
    Xs, ys = _problem(6, False)
    est = mt.GraphRegularizedRegressor(R, lam1, 0.0, graph_type="structure", alpha_l2=2 * lam2,
                                       tol=TOL, max_iter=100_000).fit(Xs, ys)
    ref = _cvx_optimum("squared", lambda W: lam1 * cp.sum_squares(W @ R)
                       + lam2 * cp.sum_squares(W), Xs, ys)
    ours = _our_objective(est, "squared", lambda W: lam1 * np.sum((W @ R) ** 2)
                          + lam2 * np.sum(W ** 2), Xs, ys)
    assert abs(ours - ref) <= REL * ref


def test_evgeniou_pontil_regularizer_through_the_documented_conversion():
    """(lambda1 / m) sum_t ||w_t - w0||^2 + lambda2 ||w0||^2, minimized over w0, equals
    rho1 sum_t ||w_t - w_bar||^2 + rho2 ||W||_F^2 with rho1 = lambda1^2 / (m (lambda1 +
    lambda2)), rho2 = lambda1 lambda2 / (m (lambda1 + lambda2)): alpha = rho1, alpha_l2 =
    2 rho2 (our loss scaling)."""
    lam1, lam2 = 2.0, 0.5
    for classification in (False, True):
        Xs, ys = _problem(7, classification)
        m = len(Xs)
        rho1 = lam1 ** 2 / (m * (lam1 + lam2))
        rho2 = lam1 * lam2 / (m * (lam1 + lam2))
        cls = mt.MeanRegularizedClassifier if classification else mt.MeanRegularizedRegressor
        est = cls(rho1, alpha_l2=2 * rho2, tol=TOL, max_iter=100_000).fit(Xs, ys)
        loss = "logistic" if classification else "squared"
        ysg = _signed(est, ys)
        d = Xs[0].shape[1]
        W, w0, b = cp.Variable((d, m)), cp.Variable(d), cp.Variable(m)
        obj = sum(_loss_cvx(loss, Xs[t], ysg[t], W[:, t], b[t]) for t in range(m))
        obj = obj + (lam1 / m) * sum(cp.sum_squares(W[:, t] - w0) for t in range(m)) \
            + lam2 * cp.sum_squares(w0)
        prob = cp.Problem(cp.Minimize(obj))
        prob.solve(solver=cp.CLARABEL)
        Wv = est.coef_.T
        w0v = lam1 * Wv.mean(axis=1) / (lam1 + lam2)  # the minimizing w0
        ours = sum(_loss_np(loss, Xs[t], ysg[t], Wv[:, t], est.intercept_[t]) for t in range(m))
        ours += (lam1 / m) * np.sum((Wv - w0v[:, None]) ** 2) + lam2 * np.sum(w0v ** 2)
        assert abs(ours - prob.value) <= REL * max(1.0, prob.value)


# ----------------------------------------------------------------------------- planted
def _smooth_tasks(seed, m=12, d=15, n=12, noise=1.0):
    """Tasks on a ring: w_t = a cos(2 pi t / m) + c sin(2 pi t / m) + e, smooth along the
    ring's edges; n rows per task (fewer than the features), noise 1."""
    rng = np.random.default_rng(seed)
    a, c, e = rng.standard_normal((3, d))
    angle = 2 * np.pi * np.arange(m) / m
    W = np.outer(a, np.cos(angle)) + np.outer(c, np.sin(angle)) + e[:, None]
    Xs = [rng.standard_normal((n, d)) for _ in range(m)]
    ys = [X @ W[:, t] + noise * rng.standard_normal(n) for t, X in enumerate(Xs)]
    ring = [(t, (t + 1) % m) for t in range(m)]
    return Xs, ys, W, ring


def _roughness(W, edges):
    """Mean squared difference across the graph's edges over the tasks' spread."""
    diff = np.mean([np.sum((W[:, s] - W[:, t]) ** 2) for s, t in edges])
    return diff / np.mean(np.sum((W - W.mean(axis=1, keepdims=True)) ** 2, axis=0))


@pytest.mark.parametrize("seed", [0, 1])
def test_planted_graph_smoothness_is_recovered(seed):
    """With 12 rows for 15 features per task, independent ridge cannot estimate the tasks;
    the ring graph shares the information of neighbouring tasks.

    The true weights have roughness 2 (1 - cos(2 pi / 12)) / 1 ~ 0.27 (a rotation by
    30 degrees between neighbours). alpha = 0.1 couples neighbours on the scale of the loss
    curvature (standardized features; the ring's Laplacian has eigenvalues up to 4); larger
    values pull every task towards the mean. Thresholds: the graph model's estimation error is below
    half of the best independent ridge's (a grid of 7 strengths, the best one chosen with the
    truth, so the comparison favours ridge), and its roughness is within a factor 2 of the
    truth's while ridge's is above 1 (neighbours no closer than random pairs of tasks).
    """
    Xs, ys, W, ring = _smooth_tasks(seed)
    err = lambda est: np.linalg.norm(est.coef_.T - W) / np.linalg.norm(W)  # noqa: E731
    ridge = min((mt.IndependentRidgeRegressor(a).fit(Xs, ys) for a in np.logspace(-3, 1, 7)),
                key=err)
    graph = mt.GraphRegularizedRegressor(ring, 0.1, 0.0).fit(Xs, ys)
    truth = _roughness(W, ring)
    assert 0.2 < truth < 0.35
    assert err(graph) < 0.5 * err(ridge)
    assert truth / 2 < _roughness(graph.coef_.T, ring) < 2 * truth
    assert _roughness(ridge.coef_.T, ring) > 1.0


# ----------------------------------------------------------------------------- alpha_max
@pytest.mark.parametrize("classification", [False, True])
def test_alpha_max_and_default_grids(classification):
    Xs, ys = _problem(0, classification)
    cls = mt.GraphRegularizedClassifier if classification else mt.GraphRegularizedRegressor
    top = cls(EDGES, 0.3).alpha_max(Xs, ys)
    assert top == cls(EDGES, 3.0).alpha_max(Xs, ys)  # whatever the graph strength
    at = cls(EDGES, 0.3, top * (1 + 1e-9), tol=1e-10).fit(Xs, ys)
    assert np.all(at.coef_ == 0)
    assert np.any(cls(EDGES, 0.3, 0.9 * top).fit(Xs, ys).coef_ != 0)
    grid = cls(EDGES).default_grid(Xs, ys, n_alphas=6)
    assert list(grid) == ["alpha_l1", "alpha"] and grid["alpha_l1"][0] == pytest.approx(top)
    assert len(grid["alpha_l1"]) == 6 and len(grid["alpha"]) == 2
    mean = mt.MeanRegularizedClassifier if classification else mt.MeanRegularizedRegressor
    assert mean().alpha_max(Xs, ys) == np.inf
    mgrid = mean().default_grid(Xs, ys, n_alphas=4)
    assert list(mgrid) == ["alpha"] and np.all(np.diff(mgrid["alpha"]) < 0)


def test_warm_started_path_matches_cold_fits():
    Xs, ys = _problem(1, False)
    est = mt.GraphRegularizedRegressor(EDGES, 0.3, tol=1e-10, max_iter=100_000)
    path = mt.model_selection.regularization_path(est, Xs, ys, n_alphas=4)
    assert path.param == "alpha_l1" and np.all(path.coefs[0] == 0)
    cold = mt.GraphRegularizedRegressor(EDGES, 0.3, path.grid[-1], tol=1e-10,
                                        max_iter=100_000).fit(Xs, ys)
    np.testing.assert_allclose(path.coefs[-1], cold.coef_, atol=1e-7)


# ----------------------------------------------------------------------------- formats
def test_every_input_format_fits_the_same_model(datagen):
    Xs, ys = datagen.regression_lists()
    edges = [(0, 1), (1, 2)]
    ref = mt.GraphRegularizedRegressor(edges, 0.5, 0.01, tol=1e-10).fit(Xs, ys)
    labels = ["x", "y", "z"]
    X, y, task = datagen.lists_to_long(Xs, ys, labels=labels)
    long = mt.GraphRegularizedRegressor([("x", "y"), ("y", "z")], 0.5, 0.01,
                                        tol=1e-10).fit(X, y, task=task)
    np.testing.assert_allclose(long.coef_, ref.coef_, atol=1e-7)
    np.testing.assert_allclose(long.intercept_, ref.intercept_, atol=1e-7)
    np.testing.assert_allclose(long.laplacian_, ref.laplacian_)
    sparse = mt.GraphRegularizedRegressor([("x", "y", 1.0), ("y", "z", 1.0)], 0.5, 0.01,
                                          tol=1e-10).fit(sp.csr_matrix(X), y, task=task)
    assert list(sparse.tasks_) == labels
    np.testing.assert_allclose(sparse.coef_, ref.coef_, atol=1e-7)
    X, Y = datagen.shared()
    shared = mt.GraphRegularizedRegressor(None, 0.5, 0.01).fit(X, Y)
    assert shared.predict(X).shape == Y.shape and shared.laplacian_.shape == (4, 4)


def test_grid_search_and_multitask_cv_on_long_format(datagen):
    from sklearn.model_selection import GridSearchCV

    Xs, ys = datagen.classification_lists()
    X, y, task = datagen.lists_to_long(Xs, ys)
    Xt = np.column_stack([X, task])
    gs = GridSearchCV(mt.GraphRegularizedClassifier([(0, 1), (1, 2)], task_column=-1),
                      {"alpha": [0.01, 1.0], "alpha_l1": [0.001, 0.01]}, cv=3).fit(Xt, y)
    assert set(gs.best_params_) == {"alpha", "alpha_l1"}
    cv = mt.MultiTaskCV(mt.MeanRegularizedClassifier(), n_alphas=4, cv=3).fit(X, y, task=task)
    assert cv.path_param_ == "alpha" and cv.predict(X, task=task).shape == y.shape
    cv = mt.MultiTaskCV(mt.GraphRegularizedRegressor(), n_alphas=3, cv=3).fit(
        *datagen.lists_to_long(*datagen.regression_lists()))
    assert cv.path_param_ == "alpha_l1" and set(cv.best_params_) == {"alpha", "alpha_l1"}


def test_model_file_round_trip(tmp_path, datagen):
    from multitask.persistence import load_model, save_model

    Xs, ys = datagen.regression_lists()
    for est in (mt.GraphRegularizedRegressor(np.array(EDGES[:2])[:, :2]).fit(Xs, ys),
                mt.MeanRegularizedRegressor().fit(Xs, ys)):
        back = load_model(save_model(est, tmp_path / f"{type(est).__name__}.skops"))
        for a, b in zip(back.predict(Xs), est.predict(Xs), strict=True):
            np.testing.assert_array_equal(a, b)


def test_inputs_are_not_modified(datagen):
    Xs, ys = datagen.regression_lists()
    A = _adjacency([(0, 1, 1.0), (1, 2, 2.0)], 3)
    A0, Xs0 = A.copy(), [x.copy() for x in Xs]
    est = mt.GraphRegularizedRegressor(A).fit(Xs, ys)
    assert est.graph is A
    np.testing.assert_array_equal(A, A0)
    for a, b in zip(Xs, Xs0, strict=True):
        np.testing.assert_array_equal(a, b)
