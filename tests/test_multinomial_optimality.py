"""More than two classes: the multinomial model of every convex penalty a classifier accepts
reaches cvxpy's optimum, and its certified gap bounds the true gap.

Three random problems with tasks of unequal sizes, ``K = 3`` or ``4`` classes and one class
missing from one task (its probability there is 0: the loss of that task runs over its present
classes). The objective of each fitted model is evaluated independently (numpy's log-sum-exp
of the coefficients the model reports, and the penalty's formula, or cvxpy's minimum over the
structure matrix ``M`` of the clustered models), compared with the optimum cvxpy (CLARABEL)
reaches on the same problem, and with the model's certified duality gap. The independent ridge
model is also compared with scikit-learn's multinomial ``LogisticRegression`` task by task, and
the capped (non-convex) models are checked to run and decrease their objective.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import logsumexp

import multitask as mt

cp = pytest.importorskip("cvxpy")

CLARABEL = {"solver": "CLARABEL", "tol_gap_abs": 1e-11, "tol_gap_rel": 1e-11,
            "tol_feas": 1e-11}
#: The fits' tolerance (relative certified gap).
TOL = 1e-9
#: The acceptance: our objective within this of cvxpy's optimum (relative).
RTOL = 1e-6


def _problem(seed: int):
    """Per-task lists: 3 tasks of unequal sizes, ``K = 3`` or ``4`` classes (labels
    ``"c0" ..``), the class ``K - 1`` missing from task 1."""
    rng = np.random.default_rng(seed)
    K = 3 + seed % 2
    d = 5
    sizes = (24, 37, 30)
    B = rng.standard_normal((d, K))
    Xs, ys = [], []
    for t, n in enumerate(sizes):
        X = rng.standard_normal((n, d))
        Z = X @ (B + 0.5 * rng.standard_normal((d, K))) + 0.8 * rng.standard_normal((n, K))
        y = np.argmax(Z, axis=1)
        if t == 1:
            y[y == K - 1] = 0
        y[:K - (t == 1)] = np.arange(K - (t == 1))  # every other class present
        Xs.append(X)
        ys.append(np.array([f"c{k}" for k in y]))
    return Xs, ys, K


def _codes(ys, K):
    classes = np.array([f"c{k}" for k in range(K)])
    return [np.searchsorted(classes, y) for y in ys]


# --------------------------------------------------------------------------- the objective
def _loss_np(Xs, codes, coef, intercept):
    """``sum_t (1 / n_t) sum_i lse_present(z_i) - z_{i, y_i}`` from the public attributes
    (``intercept_`` is ``-inf`` on the absent classes)."""
    total = 0.0
    for t, (X, y) in enumerate(zip(Xs, codes, strict=True)):
        Z = X @ coef[t].T + intercept[t]
        total += float(np.mean(logsumexp(Z, axis=1) - Z[np.arange(len(y)), y]))
    return total


def _loss_cvx(Xs, codes, K, W, b):
    """The same loss in cvxpy, ``W`` of shape ``(d, m K)`` (column ``t K + k``), ``b`` of
    shape ``(m K,)``."""
    terms = []
    for t, (X, y) in enumerate(zip(Xs, codes, strict=True)):
        present = np.unique(y)
        cols = [t * K + k for k in present]
        Z = X @ W[:, cols] + cp.reshape(b[cols], (1, len(cols)), order="C")
        pick = np.zeros((len(y), len(present)))
        pick[np.arange(len(y)), np.searchsorted(present, y)] = 1.0
        terms.append((cp.sum(cp.log_sum_exp(Z, axis=1)) - cp.sum(cp.multiply(pick, Z)))
                     / len(y))
    return cp.sum(cp.hstack(terms))


def _class_blocks(W, K):
    """``[W_0, .., W_{K-1}]``: the class-``k`` columns ``(d, m)`` of ``W`` ``(d, m K)``."""
    return [W[:, k::K] for k in range(K)]


def _stacked_t(W, K):
    """``W~^T`` of shape ``(m, d K)``: the tasks as rows, every (feature, class) a column."""
    return cp.hstack([B.T for B in _class_blocks(W, K)])


def _task_group_norms(W, m, K):
    return cp.hstack([cp.norm(W[:, t * K:(t + 1) * K], "fro") for t in range(m)])


def _laplacian_term(W, K, A):
    m = A.shape[0]
    return cp.sum(cp.hstack([A[s, t] * cp.sum_squares(B[:, s] - B[:, t])
                             for B in _class_blocks(W, K) for s in range(m)
                             for t in range(s + 1, m) if A[s, t]]))


def _chain_term(W, K):
    return cp.sum(cp.hstack([cp.sum_squares(B[:, 1:] - B[:, :-1])
                             for B in _class_blocks(W, K)]))


def _fused_term(W, K):
    return cp.sum(cp.hstack([cp.sum(cp.abs(B[:, 1:] - B[:, :-1]))
                             for B in _class_blocks(W, K)]))


def _mean_term(W, K):
    return cp.sum(cp.hstack([cp.sum_squares(B - cp.reshape(cp.sum(B, axis=1) / B.shape[1],
                                                           (B.shape[0], 1), order="C"))
                             for B in _class_blocks(W, K)]))


GRAPH = np.array([[0.0, 1.0, 0.5], [1.0, 0.0, 0.0], [0.5, 0.0, 0.0]])


def _structure(W, K, alpha, eta, k, side):
    """``alpha eta (1 + eta) min_M tr(. (eta I + M)^-1 .)`` with its variable ``M``."""
    X = _stacked_t(W, K) if side == "tasks" else W
    p = X.shape[0]
    M = cp.Variable((p, p), symmetric=True)
    frac = cp.matrix_frac(X, eta * np.eye(p) + M)
    return alpha * eta * (1 + eta) * frac, [M >> 0, np.eye(p) - M >> 0, cp.trace(M) == k]


#: name -> (estimator, number of parts of the solver's variable, cvxpy penalty of the parts
#: ``(expression, constraints)``)
MODELS = {
    "l1": (lambda: mt.IndependentLassoClassifier(alpha=0.02), 1,
           lambda V, K, m: (0.02 * cp.sum(cp.abs(V[0])), [])),
    "l21": (lambda: mt.L21Classifier(alpha=0.03), 1,
            lambda V, K, m: (0.03 * cp.sum(cp.norm(V[0], 2, axis=1)), [])),
    "trace": (lambda: mt.TraceNormClassifier(alpha=0.03), 1,
              lambda V, K, m: (0.03 * cp.normNuc(V[0]), [])),
    "ridge": (lambda: mt.IndependentRidgeClassifier(alpha=0.05), 1,
              lambda V, K, m: (0.025 * cp.sum_squares(V[0]), [])),
    "elastic_net": (lambda: mt.MultiTaskClassifier(penalty="l1", alpha=0.02, alpha_l2=0.04), 1,
                    lambda V, K, m: (0.02 * cp.sum(cp.abs(V[0]))
                                     + 0.02 * cp.sum_squares(V[0]), [])),
    "column_l2": (lambda: mt.MultiTaskClassifier(penalty="column_l2", alpha=0.05), 1,
                  lambda V, K, m: (0.05 * cp.sum(_task_group_norms(V[0], m, K)), [])),
    "dirty": (lambda: mt.DirtyModelClassifier(alpha_group=0.04, alpha_l1=0.02), 2,
              lambda V, K, m: (0.04 * cp.sum(cp.max(cp.abs(V[0]), axis=1))
                               + 0.02 * cp.sum(cp.abs(V[1])), [])),
    "rmtfl": (lambda: mt.RobustFeatureLearningClassifier(alpha_group=0.04,
                                                         alpha_outlier=0.06), 2,
              lambda V, K, m: (0.04 * cp.sum(cp.norm(V[0], 2, axis=1))
                               + 0.06 * cp.sum(_task_group_norms(V[1], m, K)), [])),
    "robust": (lambda: mt.RobustMTLClassifier(alpha=0.03, lam=1.0, loss="logistic"), 2,
               lambda V, K, m: (0.03 * (cp.normNuc(V[0])
                                        + cp.sum(_task_group_norms(V[1], m, K))), [])),
    "sparse_low_rank": (lambda: mt.SparseLowRankClassifier(alpha=0.02, radius=1.0), 2,
                        lambda V, K, m: (0.02 * cp.sum(cp.abs(V[0])),
                                         [cp.normNuc(V[1]) <= 1.0])),
    "graph": (lambda: mt.GraphRegularizedClassifier(graph=GRAPH, alpha=0.05, alpha_l1=0.01),
              1, lambda V, K, m: (0.05 * _laplacian_term(V[0], K, GRAPH)
                                  + 0.01 * cp.sum(cp.abs(V[0])), [])),
    "mean": (lambda: mt.MeanRegularizedClassifier(alpha=0.1), 1,
             lambda V, K, m: (0.1 * _mean_term(V[0], K), [])),
    "mean_ridge": (lambda: mt.MeanRegularizedClassifier(alpha=0.1, alpha_l2=0.01), 1,
                   lambda V, K, m: (0.1 * _mean_term(V[0], K) + 0.005 * cp.sum_squares(V[0]),
                                    [])),
    "temporal": (lambda: mt.TemporalGroupLassoClassifier(alpha_group=0.03, alpha_smooth=0.05),
                 1, lambda V, K, m: (0.05 * _chain_term(V[0], K)
                                     + 0.03 * cp.sum(cp.norm(V[0], 2, axis=1)), [])),
    "fused": (lambda: mt.FusedSparseGroupLassoClassifier(alpha_group=0.03, alpha_fused=0.02,
                                                         alpha_l1=0.01), 1,
              lambda V, K, m: (0.01 * cp.sum(cp.abs(V[0])) + 0.02 * _fused_term(V[0], K)
                               + 0.03 * cp.sum(cp.norm(V[0], 2, axis=1)), [])),
    "l1inf": (lambda: mt.L1InfClassifier(radius=1.5, loss="logistic"), 1,
              lambda V, K, m: (0.0, [cp.sum(cp.max(cp.abs(V[0]), axis=1)) <= 1.5])),
    "relationship": (lambda: mt.TaskRelationshipClassifier(alpha=0.02), 1,
                     lambda V, K, m: (0.01 * cp.square(cp.normNuc(_stacked_t(V[0], K))), [])),
    "clustered": (lambda: mt.ClusteredMTLClassifier(alpha=0.02, eta=0.5, k=2), 1,
                  lambda V, K, m: _structure(V[0], K, 0.02, 0.5, 2, "tasks")),
    "aso": (lambda: mt.ConvexASOClassifier(alpha=0.02, eta=0.5, k=2), 1,
            lambda V, K, m: _structure(V[0], K, 0.02, 0.5, 2, "features")),
}


def _cvx_optimum(name, Xs, codes, K):
    _, parts, pen = MODELS[name]
    d, m = Xs[0].shape[1], len(Xs)
    V = [cp.Variable((d, m * K)) for _ in range(parts)]
    b = cp.Variable(m * K)
    W = V[0] if parts == 1 else V[0] + V[1]
    expr, constraints = pen(V, K, m)
    prob = cp.Problem(cp.Minimize(_loss_cvx(Xs, codes, K, W, b) + expr), constraints)
    prob.solve(**CLARABEL)
    assert prob.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE), prob.status
    return float(prob.value)


def _objective_at(name, est, Xs, codes, K):
    """The objective at the fitted model, from its public attributes (the penalty evaluated
    by cvxpy on constants; the clustered models' minimum over ``M`` solved by it)."""
    _, parts, pen = MODELS[name]
    m = len(Xs)
    loss = _loss_np(Xs, codes, est.coef_, est.intercept_)
    V = np.asarray(est.coef_variable_)
    V = [V] if parts == 1 else [V[0], V[1]]
    expr, constraints = pen([cp.Constant(v) for v in V], K, m)
    if constraints and name not in ("clustered", "aso"):  # a constraint set: feasible
        for c in constraints:
            assert c.violation() <= 1e-9 * max(1.0, float(np.abs(V[-1]).sum()))
        value = float(expr.value) if hasattr(expr, "value") else float(expr)
    elif constraints:
        prob = cp.Problem(cp.Minimize(expr), constraints)
        prob.solve(**CLARABEL)
        value = float(prob.value)
    else:
        value = float(expr.value) if hasattr(expr, "value") else float(expr)
    return loss + value


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_reaches_cvxpy_optimum_and_gap_bounds_it(name, seed):
    Xs, ys, K = _problem(seed)
    codes = _codes(ys, K)
    est = MODELS[name][0]().set_params(tol=TOL, max_iter=200000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # every fit certified and converged
        est.fit(Xs, ys)
    assert est.coef_.shape == (3, K, 5) and est.intercept_.shape == (3, K)
    assert np.isneginf(est.intercept_[1, K - 1]) and np.isfinite(np.delete(
        est.intercept_.ravel(), K + K - 1)).all()
    assert est.converged_ and est.certified_
    optimum = _cvx_optimum(name, Xs, codes, K)
    ours = _objective_at(name, est, Xs, codes, K)
    assert abs(ours - optimum) <= RTOL * abs(optimum), (ours, optimum)
    gap = est.optimality_ * ours  # the certified gap (relative to the objective)
    assert ours - optimum <= gap + 1e-9 * abs(optimum), (ours - optimum, gap)
    # predictions: probabilities over the present classes only
    P = est.predict_proba(Xs)
    assert all(np.allclose(p.sum(axis=1), 1.0) for p in P)
    assert np.all(P[1][:, K - 1] == 0.0)


# --------------------------------------------------------------------------- scikit-learn
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_independent_ridge_is_scikit_learn_multinomial_logistic_regression(seed):
    """``alpha`` of ours is ``1 / (C n_t)`` of ``LogisticRegression`` on task ``t`` (its loss
    is the sum over the rows, ours the mean), fitted on the task's own classes. A task with
    two classes present is a binary model for scikit-learn (one weight vector ``u``): ours is
    then ``w_1 = -w_0 = u / 2`` (the ridge splits the weights evenly), whose penalty
    ``(alpha / 2) (||w_0||^2 + ||w_1||^2) = (alpha / 4) ||u||^2`` is scikit-learn's with twice
    the ``C``."""
    from sklearn.linear_model import LogisticRegression

    Xs, ys, K = _problem(seed)
    alpha = 0.05
    est = mt.IndependentRidgeClassifier(alpha=alpha, tol=1e-12, max_iter=100000).fit(Xs, ys)
    proba = est.predict_proba(Xs)
    for t, (X, y) in enumerate(zip(Xs, ys, strict=True)):
        two = len(np.unique(y)) == 2
        lr = LogisticRegression(C=(2.0 if two else 1.0) / (alpha * len(y)), solver="lbfgs",
                                tol=1e-12, max_iter=100000).fit(X, y)
        cols = np.searchsorted(est.classes_, lr.classes_)
        coef, b = est.coef_[t, cols], est.intercept_[t, cols]
        if two:
            coef, b = coef[1:] - coef[:1], b[1:] - b[:1]
            assert np.allclose(est.coef_[t, cols].sum(axis=0), 0.0, atol=1e-9)
        else:  # the intercepts are defined up to a common shift (the softmax's invariance)
            b, lr.intercept_ = b - b.mean(), lr.intercept_ - lr.intercept_.mean()
        assert np.allclose(coef, lr.coef_, rtol=0, atol=1e-6)
        assert np.allclose(b, lr.intercept_, rtol=0, atol=1e-6)
        assert np.allclose(proba[t][:, cols], lr.predict_proba(X), rtol=0, atol=1e-6)


# --------------------------------------------------------------------------- capped models
@pytest.mark.parametrize("cls", [mt.CappedL1Classifier, mt.CappedTraceClassifier])
def test_capped_models_run_and_decrease_their_objective(cls):
    Xs, ys, K = _problem(0)
    est = cls(loss="logistic", alpha=0.02).fit(Xs, ys)
    assert est.coef_.shape == (3, K, 5)
    assert est.objective_[-1] < est.objective_[0]
    assert est.score(Xs, ys) > 0.6
