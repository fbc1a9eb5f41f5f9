"""Every estimator, fitted at ``tol=1e-8`` on small problems, against cvxpy.

For each public model (regressor and classifier, each solver it offers): the reported
optimality measure is at most ``tol`` and the objective of the fitted model, evaluated here
with numpy from the public attributes (``coef_``, ``intercept_`` and the components of split
models), is within 1e-6 (relative) of the optimum cvxpy finds for the same formula written
independently below: ``sum_t (1/n_t) sum_i ell(y_i, x_i^T w_t + b_t)`` plus the penalty, with
free per-task intercepts. Problems: per-task designs of unequal sizes, three seeds.
"""

from __future__ import annotations

import numpy as np
import pytest

import multitask as mt
from multitask.solvers import LinearizedADMM, MajorizedADMM, ProximalGradient

cp = pytest.importorskip("cvxpy")

TOL = 1e-8
REL = 1e-6
SEEDS = (0, 1, 2)


def _problem(seed, classification):
    rng = np.random.default_rng(100 + seed)
    sizes, d = (24, 31, 18), 5
    W = rng.standard_normal((d, 2)) @ rng.standard_normal((2, len(sizes)))
    Xs = [rng.standard_normal((n, d)) + 0.3 * rng.standard_normal(d) for n in sizes]
    ys = [X @ W[:, t] + 0.5 + 0.7 * rng.standard_normal(len(X)) for t, X in enumerate(Xs)]
    if classification:
        ys = [np.where(y > np.median(y), 1, 0) for y in ys]
    return Xs, ys


# ----------------------------------------------------------------------------- formulas
def _loss_expr(loss, X, y, w, b):
    z = X @ w + b
    n = X.shape[0]
    if loss == "squared":
        return cp.sum_squares(z - y) / (2 * n)
    if loss == "logistic":
        return cp.sum(cp.logistic(-cp.multiply(y, z))) / n
    if loss == "squared_hinge":
        return cp.sum(cp.square(cp.pos(1 - cp.multiply(y, z)))) / n
    if loss == "hinge":
        return cp.sum(cp.pos(1 - cp.multiply(y, z))) / n
    raise AssertionError(loss)


def _loss_value(loss, X, y, w, b):
    z = X @ w + b
    n = X.shape[0]
    if loss == "squared":
        return float(np.sum((z - y) ** 2) / (2 * n))
    if loss == "logistic":
        return float(np.sum(np.logaddexp(0.0, -y * z)) / n)
    if loss == "squared_hinge":
        return float(np.sum(np.maximum(0.0, 1 - y * z) ** 2) / n)
    return float(np.sum(np.maximum(0.0, 1 - y * z)) / n)


def _signed(est, ys):
    """Targets as the loss sees them: -1/+1 with classes_[1] positive for classifiers."""
    if not hasattr(est, "classes_"):
        return [np.asarray(y, dtype=float) for y in ys]
    return [np.where(np.asarray(y) == est.classes_[1], 1.0, -1.0) for y in ys]


def _penalty_parts(kind, params):
    """``(n_parts, cvxpy expression of the parts, numpy value of the parts)``."""
    out = _penalty_formulas(kind, params)
    return out if len(out) == 3 else (out[0], *out[1])


def _penalty_formulas(kind, params):
    a = params.get("alpha", 0.0)
    if kind == "l1":
        return 1, lambda P: a * cp.sum(cp.abs(P[0])), lambda P: a * np.abs(P[0]).sum()
    if kind == "l21":
        return 1, (lambda P: a * cp.sum(cp.norm(P[0], 2, axis=1)),
                   lambda P: a * np.linalg.norm(P[0], axis=1).sum())
    if kind == "column_l2":
        return 1, (lambda P: a * cp.sum(cp.norm(P[0], 2, axis=0)),
                   lambda P: a * np.linalg.norm(P[0], axis=0).sum())
    if kind == "trace":
        return 1, (lambda P: a * cp.normNuc(P[0]),
                   lambda P: a * np.linalg.svd(P[0], compute_uv=False).sum())
    if kind == "ridge":
        return 1, (lambda P: 0.5 * a * cp.sum_squares(P[0]), lambda P: 0.5 * a * np.sum(P[0] ** 2))
    if kind == "robust":
        lam = params["lam"]
        return 2, (lambda P: a * (cp.normNuc(P[0]) + lam * cp.sum(cp.norm(P[1], 2, axis=0))),
                   lambda P: a * (np.linalg.svd(P[0], compute_uv=False).sum()
                                  + lam * np.linalg.norm(P[1], axis=0).sum()))
    if kind == "sparse_low_rank":  # the ball constraint is added separately
        return 2, lambda P: a * cp.sum(cp.abs(P[0])), lambda P: a * np.abs(P[0]).sum()
    raise AssertionError(kind)


def _constraints(kind, params, P):
    if kind == "sparse_low_rank":
        return [cp.normNuc(P[1]) <= params["radius"]]
    if kind == "l1inf":
        return [cp.sum(cp.max(cp.abs(P[0]), axis=1)) <= params["radius"]]
    if kind == "l1_balls":
        return [cp.sum(cp.abs(P[0]), axis=0) <= params["radius"]]
    if kind == "l2_balls":
        return [cp.norm(P[0], 2, axis=0) <= params["radius"]]
    return []


def cvxpy_optimum(loss, kind, params, Xs, ys, pooled=False):
    d, m = Xs[0].shape[1], len(Xs)
    constrained = kind in ("l1inf", "l1_balls", "l2_balls")
    n_parts, pen, _ = (1, lambda P: 0, None) if constrained else _penalty_parts(kind, params)
    cols = 1 if pooled else m
    P = [cp.Variable((d, cols)) for _ in range(n_parts)]
    W = sum(P)
    b = cp.Variable(cols)
    alpha_l2 = params.get("alpha_l2", 0.0)
    if pooled:
        X, y = np.vstack(Xs), np.concatenate(ys)
        obj = _loss_expr(loss, X, y, W[:, 0], b[0])
    else:
        obj = sum(_loss_expr(loss, Xs[t], ys[t], W[:, t], b[t]) for t in range(m))
    obj = obj + pen(P) + 0.5 * alpha_l2 * cp.sum_squares(W)
    prob = cp.Problem(cp.Minimize(obj), _constraints(kind, params, P))
    prob.solve(solver=cp.CLARABEL)
    assert prob.status in ("optimal", "optimal_inaccurate"), prob.status
    return float(prob.value)


def our_objective(est, loss, kind, params, Xs, ys, pooled=False):
    ys = _signed(est, ys)
    W, b = est.coef_.T, est.intercept_
    if pooled:
        value = _loss_value(loss, np.vstack(Xs), np.concatenate(ys), W[:, 0], b[0])
    else:
        value = sum(_loss_value(loss, Xs[t], ys[t], W[:, t], b[t]) for t in range(len(Xs)))
    value += 0.5 * params.get("alpha_l2", 0.0) * float(np.sum(W * W))
    if kind in ("l1inf", "l1_balls", "l2_balls"):
        return value
    _, _, pen_value = _penalty_parts(kind, params)
    if kind == "robust":
        parts = [est.low_rank_component_.T, est.outlier_component_.T]
    elif kind == "sparse_low_rank":
        parts = [est.sparse_component_.T, est.low_rank_component_.T]
        assert np.linalg.svd(parts[1], compute_uv=False).sum() <= params["radius"] * (1 + 1e-9)
    else:
        parts = [W[:, :1] if pooled else W]  # pooled: one weight vector, repeated per task
    return value + pen_value(parts)


# ----------------------------------------------------------------------------- the cases
REGRESSION = [
    ("l21", mt.L21Regressor, {"alpha": 0.1}, {}),
    ("l21", mt.L21Regressor, {"alpha": 0.1, "alpha_l2": 0.05}, {}),
    ("l21", mt.L21Regressor, {"alpha": 0.1}, {"solver": "bcd"}),
    ("trace", mt.TraceNormRegressor, {"alpha": 0.3}, {}),
    ("trace", mt.TraceNormRegressor, {"alpha": 0.3, "alpha_l2": 0.1}, {}),
    ("l1", mt.IndependentLassoRegressor, {"alpha": 0.05}, {}),
    ("l1", mt.IndependentLassoRegressor, {"alpha": 0.05}, {"solver": "fista"}),
    ("ridge", mt.IndependentRidgeRegressor, {"alpha": 0.5}, {}),
    ("ridge", mt.IndependentRidgeRegressor, {"alpha": 0.5}, {"solver": "fista"}),
    ("column_l2", mt.MultiTaskRegressor, {"penalty": "column_l2", "alpha": 0.2}, {}),
    ("ridge", mt.PooledRegressor, {"alpha": 0.01}, {"pooled": True}),
    ("sparse_low_rank", mt.SparseLowRankRegressor, {"alpha": 0.02, "radius": 1.5}, {}),
    ("sparse_low_rank", mt.SparseLowRankRegressor, {"alpha": 0.02, "radius": 1.5},
     {"solver": "pg"}),
    ("robust", mt.RobustMTLRegressor, {"alpha": 0.1, "lam": 0.8}, {}),
    ("robust", mt.RobustMTLRegressor, {"alpha": 0.1, "lam": 0.8}, {"solver": "fista"}),
    ("l1inf", mt.L1InfRegressor, {"radius": 1.0}, {}),
    ("l1_balls", mt.L1InfRegressor, {"radius": 0.8, "constraint": "l1"}, {}),
    ("l2_balls", mt.L1InfRegressor, {"radius": 0.8, "constraint": "l2"}, {}),
    ("trace", mt.CappedTraceRegressor, {"alpha": 0.3, "tau": np.inf}, {}),
]
CLASSIFICATION = [
    ("l21", mt.L21Classifier, {"alpha": 0.02}, {}),
    ("trace", mt.TraceNormClassifier, {"alpha": 0.03}, {}),
    ("trace", mt.TraceNormClassifier, {"alpha": 0.03, "loss": "squared_hinge"}, {}),
    ("l1", mt.IndependentLassoClassifier, {"alpha": 0.02}, {}),
    ("ridge", mt.IndependentRidgeClassifier, {"alpha": 0.05}, {}),
    ("column_l2", mt.MultiTaskClassifier, {"penalty": "column_l2", "alpha": 0.02}, {}),
    ("ridge", mt.PooledClassifier, {"alpha": 0.01}, {"pooled": True}),
    ("sparse_low_rank", mt.SparseLowRankClassifier, {"alpha": 0.01, "radius": 1.0}, {}),
    ("robust", mt.RobustMTLClassifier, {"alpha": 0.05, "lam": 0.8}, {}),
    ("robust", mt.RobustMTLClassifier, {"alpha": 0.05, "lam": 0.8, "loss": "logistic"}, {}),
    ("l1inf", mt.L1InfClassifier, {"radius": 1.0, "loss": "logistic"}, {}),
    ("l1inf", mt.L1InfClassifier, {"radius": 1.0}, {}),  # hinge: the exact LP
    ("l1_balls", mt.L1InfClassifier, {"radius": 0.7, "constraint": "l1"}, {}),
    ("trace", mt.CappedTraceClassifier, {"alpha": 0.03, "tau": np.inf, "loss": "logistic"}, {}),
    # majorization-minimization with ADMM steps (MajorizedADMM)
    ("l21", mt.L21Classifier, {"alpha": 0.02}, {"solver": "mm"}),
    ("trace", mt.TraceNormClassifier, {"alpha": 0.03}, {"solver": "mm"}),
    ("trace", mt.TraceNormClassifier, {"alpha": 0.03, "loss": "squared_hinge"},
     {"solver": "mm"}),
    ("trace", mt.TraceNormClassifier, {"alpha": 0.03, "alpha_l2": 0.05}, {"solver": "mm"}),
    ("l1", mt.IndependentLassoClassifier, {"alpha": 0.02}, {"solver": "mm"}),
    ("robust", mt.RobustMTLClassifier, {"alpha": 0.05, "lam": 0.8},
     {"solver": MajorizedADMM(tol=TOL, max_iter=100_000)}),
]


def _case_id(case):
    kind, cls, params, opts = case
    extra = ",".join(f"{k}={getattr(v, 'name', v)}" for k, v in {**params, **opts}.items()
                     if k not in ("alpha", "radius"))
    return f"{cls.__name__}-{kind}" + (f"-{extra}" if extra else "")


def _check(case, seed, classification):
    kind, cls, params, opts = case
    opts = dict(opts)
    pooled = opts.pop("pooled", False)
    Xs, ys = _problem(seed, classification)
    est = cls(**params, **opts, tol=TOL, max_iter=200_000).fit(Xs, ys)
    loss = est._loss_name()
    ys_signed = _signed(est, ys)
    ref = cvxpy_optimum(loss, kind, params, Xs, ys_signed, pooled=pooled)
    ours = our_objective(est, loss, kind, params, Xs, ys, pooled=pooled)
    if not np.isnan(est.optimality_):
        assert est.optimality_ <= TOL, f"optimality {est.optimality_:.2e} > tol"
    assert abs(ours - ref) <= REL * max(1.0, abs(ref)), (ours, ref, (ours - ref) / abs(ref))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("case", REGRESSION, ids=_case_id)
def test_regressor_reaches_cvxpy_optimum(case, seed):
    _check(case, seed, classification=False)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("case", CLASSIFICATION, ids=_case_id)
def test_classifier_reaches_cvxpy_optimum(case, seed):
    _check(case, seed, classification=True)


def test_paper_schedule_of_ladm_is_an_approximation_reported_as_such():
    """The paper's LADM constants stop early; the measure reports how far from optimal."""
    Xs, ys = _problem(0, False)
    exact = mt.RobustMTLRegressor(0.1, 0.8, tol=TOL, max_iter=100_000).fit(Xs, ys)
    paper = mt.RobustMTLRegressor(0.1, 0.8, solver=LinearizedADMM(schedule="paper")).fit(Xs, ys)
    assert exact.optimality_ <= TOL
    assert paper.optimality_ > exact.optimality_
    params = {"alpha": 0.1, "lam": 0.8}
    f_exact = our_objective(exact, "squared", "robust", params, Xs, ys)
    f_paper = our_objective(paper, "squared", "robust", params, Xs, ys)
    assert f_paper >= f_exact * (1 - 1e-9)


def test_a_configured_solver_object_is_used_as_given():
    Xs, ys = _problem(1, False)
    solver = ProximalGradient(max_iter=3, tol=1e-12, warn=False)
    est = mt.TraceNormRegressor(0.3, solver=solver).fit(Xs, ys)
    assert est.solver_ is solver and est.n_iter_ == 3 and not est.converged_
