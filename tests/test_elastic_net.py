"""The elastic-net term ``(alpha_l2 / 2) ||W||_F^2`` (MALSAR's ``rho_L2``, RMTL's ``Lam2``) on
every convex model.

* Every public regressor with ``alpha_l2`` (convex penalties, per-task losses; the
  multi-stage capped models and the pooled model are left out): the ridge term equals
  fitting ``alpha_l2 = 0`` on data augmented per task with ``d`` rows
  ``sqrt(n'_t alpha_l2) I`` (zero targets, original rows scaled by ``sqrt(n'_t / n_t)``,
  ``n'_t = n_t + d``, no intercept): the same coefficients.
  This identity is independent of the library's code and covers new models automatically.
* For the existing models and those of the catalogue, with both losses: the objective reached
  at ``tol=1e-8`` with ``alpha_l2 > 0`` is within 1e-6 (relative) of cvxpy's optimum of the
  model's formula plus ``(alpha_l2 / 2) ||W||_F^2``, written independently here.
* ``alpha_l2`` shrinks the weights, and MALSAR's ``rho_L2 ||W||_F^2`` is ``alpha_l2 = 2 rho_L2 /
  n`` (least squares, ``n`` rows per task), RMTL's ``Lam2 ||W||_F^2`` is ``alpha_l2 = 2 Lam2``.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import multitask as mt

cp = pytest.importorskip("cvxpy")

TOL = 1e-8
REL = 1e-6
#: left out of the augmentation identity: the non-convex multi-stage models (it holds at
#: their stationary points only) and the pooled model (one loss averaged over all rows, not
#: per task; its own test below)
EXCLUDED = {"CappedTraceRegressor", "CappedL1Regressor", "PooledRegressor"}
#: parameters other than the defaults where the defaults converge slowly at tol=1e-9
PARAMS = {"SparseLowRankRegressor": {"alpha": 0.1, "radius": 0.5}}


def _regressors_with_alpha_l2():
    out = []
    for name in sorted(mt.__all__):
        obj = getattr(mt, name)
        if (inspect.isclass(obj) and name.endswith("Regressor") and name not in EXCLUDED
                and "alpha_l2" in inspect.signature(obj).parameters):
            out.append(obj)
    return out


def _problem(seed, classification, sizes=(24, 31, 18), d=5):
    rng = np.random.default_rng(500 + seed)
    W = rng.standard_normal((d, 2)) @ rng.standard_normal((2, len(sizes)))
    Xs = [rng.standard_normal((n, d)) + 0.3 * rng.standard_normal(d) for n in sizes]
    ys = [X @ W[:, t] + 0.5 + 0.7 * rng.standard_normal(len(X)) for t, X in enumerate(Xs)]
    if classification:
        ys = [np.where(y > np.median(y), 1, 0) for y in ys]
    return Xs, ys


def _augmented(Xs, ys, alpha_l2):
    """Per task: (1/(2n')) (c^2 ||y - X w||^2 + ||A w||^2) = (1/(2n)) ||y - X w||^2 +
    (alpha_l2 / 2) ||w||^2 with n' = n + d, c^2 = n' / n, A = sqrt(n' alpha_l2) I."""
    d = Xs[0].shape[1]
    Xa, ya = [], []
    for X, y in zip(Xs, ys, strict=True):
        n2 = len(y) + d
        c = np.sqrt(n2 / len(y))
        Xa.append(np.vstack([c * X, np.sqrt(n2 * alpha_l2) * np.eye(d)]))
        ya.append(np.concatenate([c * y, np.zeros(d)]))
    return Xa, ya


@pytest.mark.parametrize("cls", _regressors_with_alpha_l2(), ids=lambda c: c.__name__)
def test_alpha_l2_is_a_ridge_term_by_data_augmentation(cls):
    Xs, ys = _problem(0, False)
    alpha_l2 = 0.3
    params = PARAMS.get(cls.__name__, {})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LP / subgradient budgets of some defaults
        with_l2 = cls(**params, alpha_l2=alpha_l2, fit_intercept=False, tol=1e-9,
                      max_iter=100_000).fit(Xs, ys)
        augmented = cls(**params, alpha_l2=0.0, fit_intercept=False, tol=1e-9,
                        max_iter=100_000).fit(*_augmented(Xs, ys, alpha_l2))
        plain = cls(**params, alpha_l2=0.0, fit_intercept=False).fit(Xs, ys)
    np.testing.assert_allclose(with_l2.coef_, augmented.coef_, atol=1e-5)
    assert np.linalg.norm(with_l2.coef_) < np.linalg.norm(plain.coef_)


# ----------------------------------------------------------------------------- vs cvxpy
def _loss_cvx(loss, X, y, w, b):
    z = X @ w + b
    n = X.shape[0]
    if loss == "squared":
        return cp.sum_squares(z - y) / (2 * n)
    if loss == "logistic":
        return cp.sum(cp.logistic(-cp.multiply(y, z))) / n
    return cp.sum(cp.square(cp.pos(1 - cp.multiply(y, z)))) / n  # squared hinge


def _loss_np(loss, X, y, w, b):
    z = X @ w + b
    n = X.shape[0]
    if loss == "squared":
        return float(np.sum((z - y) ** 2) / (2 * n))
    if loss == "logistic":
        return float(np.sum(np.logaddexp(0.0, -y * z)) / n)
    return float(np.sum(np.maximum(0.0, 1 - y * z) ** 2) / n)


def _chain(W):
    return [W[:, t] - W[:, t + 1] for t in range(W.shape[1] - 1)]


def _l21(P):
    return cp.sum(cp.norm(P, 2, axis=1))


def _nl21(P):
    return np.linalg.norm(P, axis=1).sum()


def _nuc(P):
    return np.linalg.svd(P, compute_uv=False).sum()


#: name -> (regressor, classifier, parameters, parts of coef (public attributes), cvxpy
#: penalty of the parts, numpy penalty of the parts, cvxpy constraints of the parts)
MODELS = {
    "l21": (mt.L21Regressor, mt.L21Classifier, {"alpha": 0.05}, None,
            lambda P, p: p["alpha"] * _l21(P[0]), lambda P, p: p["alpha"] * _nl21(P[0]), None),
    "trace": (mt.TraceNormRegressor, mt.TraceNormClassifier, {"alpha": 0.1}, None,
              lambda P, p: p["alpha"] * cp.normNuc(P[0]), lambda P, p: p["alpha"] * _nuc(P[0]),
              None),
    "lasso": (mt.IndependentLassoRegressor, mt.IndependentLassoClassifier, {"alpha": 0.02},
              None, lambda P, p: p["alpha"] * cp.sum(cp.abs(P[0])),
              lambda P, p: p["alpha"] * np.abs(P[0]).sum(), None),
    "ridge": (mt.IndependentRidgeRegressor, mt.IndependentRidgeClassifier, {"alpha": 0.05},
              None, lambda P, p: 0.5 * p["alpha"] * cp.sum_squares(P[0]),
              lambda P, p: 0.5 * p["alpha"] * np.sum(P[0] ** 2), None),
    "column_l2": (mt.MultiTaskRegressor, mt.MultiTaskClassifier,
                  {"penalty": "column_l2", "alpha": 0.05}, None,
                  lambda P, p: p["alpha"] * cp.sum(cp.norm(P[0], 2, axis=0)),
                  lambda P, p: p["alpha"] * np.linalg.norm(P[0], axis=0).sum(), None),
    "sparse_low_rank": (mt.SparseLowRankRegressor, mt.SparseLowRankClassifier,
                        {"alpha": 0.02, "radius": 1.0},
                        ("sparse_component_", "low_rank_component_"),
                        lambda P, p: p["alpha"] * cp.sum(cp.abs(P[0])),
                        lambda P, p: p["alpha"] * np.abs(P[0]).sum(),
                        lambda P, p: [cp.normNuc(P[1]) <= p["radius"]]),
    "robust": (mt.RobustMTLRegressor, mt.RobustMTLClassifier, {"alpha": 0.05, "lam": 0.8},
               ("low_rank_component_", "outlier_component_"),
               lambda P, p: p["alpha"] * (cp.normNuc(P[0])
                                          + p["lam"] * cp.sum(cp.norm(P[1], 2, axis=0))),
               lambda P, p: p["alpha"] * (_nuc(P[0])
                                          + p["lam"] * np.linalg.norm(P[1], axis=0).sum()),
               None),
    "l1inf": (mt.L1InfRegressor, mt.L1InfClassifier, {"radius": 1.0}, None,
              lambda P, p: 0, lambda P, p: 0.0,
              lambda P, p: [cp.sum(cp.max(cp.abs(P[0]), axis=1)) <= p["radius"]]),
    "dirty": (mt.DirtyModelRegressor, mt.DirtyModelClassifier,
              {"alpha_group": 0.05, "alpha_l1": 0.03},
              ("group_component_", "sparse_component_"),
              lambda P, p: (p["alpha_group"] * cp.sum(cp.max(cp.abs(P[0]), axis=1))
                            + p["alpha_l1"] * cp.sum(cp.abs(P[1]))),
              lambda P, p: (p["alpha_group"] * np.abs(P[0]).max(axis=1).sum()
                            + p["alpha_l1"] * np.abs(P[1]).sum()), None),
    "rmtfl": (mt.RobustFeatureLearningRegressor, mt.RobustFeatureLearningClassifier,
              {"alpha_group": 0.05, "alpha_outlier": 0.08},
              ("feature_component_", "outlier_component_"),
              lambda P, p: (p["alpha_group"] * _l21(P[0])
                            + p["alpha_outlier"] * cp.sum(cp.norm(P[1], 2, axis=0))),
              lambda P, p: (p["alpha_group"] * _nl21(P[0])
                            + p["alpha_outlier"] * np.linalg.norm(P[1], axis=0).sum()), None),
    "graph": (mt.GraphRegularizedRegressor, mt.GraphRegularizedClassifier,
              {"graph": [(0, 1, 1.0), (1, 2, 0.5)], "alpha": 0.1, "alpha_l1": 0.01}, None,
              lambda P, p: (p["alpha"] * (cp.sum_squares(P[0][:, 0] - P[0][:, 1])
                                          + 0.5 * cp.sum_squares(P[0][:, 1] - P[0][:, 2]))
                            + p["alpha_l1"] * cp.sum(cp.abs(P[0]))),
              lambda P, p: (p["alpha"] * (np.sum((P[0][:, 0] - P[0][:, 1]) ** 2)
                                          + 0.5 * np.sum((P[0][:, 1] - P[0][:, 2]) ** 2))
                            + p["alpha_l1"] * np.abs(P[0]).sum()), None),
    "mean": (mt.MeanRegularizedRegressor, mt.MeanRegularizedClassifier, {"alpha": 0.2}, None,
             lambda P, p: p["alpha"] * cp.sum_squares(
                 P[0] - cp.sum(P[0], axis=1, keepdims=True) / P[0].shape[1]),
             lambda P, p: p["alpha"] * np.sum((P[0] - P[0].mean(axis=1, keepdims=True)) ** 2),
             None),
    "tgl": (mt.TemporalGroupLassoRegressor, mt.TemporalGroupLassoClassifier,
            {"alpha_group": 0.05, "alpha_smooth": 0.1}, None,
            lambda P, p: (p["alpha_smooth"] * sum(cp.sum_squares(v) for v in _chain(P[0]))
                          + p["alpha_group"] * _l21(P[0])),
            lambda P, p: (p["alpha_smooth"] * sum(np.sum(v ** 2) for v in _chain(P[0]))
                          + p["alpha_group"] * _nl21(P[0])), None),
    "fsgl": (mt.FusedSparseGroupLassoRegressor, mt.FusedSparseGroupLassoClassifier,
             {"alpha_group": 0.05, "alpha_fused": 0.02, "alpha_l1": 0.01}, None,
             lambda P, p: (p["alpha_l1"] * cp.sum(cp.abs(P[0]))
                           + p["alpha_fused"] * sum(cp.sum(cp.abs(v)) for v in _chain(P[0]))
                           + p["alpha_group"] * _l21(P[0])),
             lambda P, p: (p["alpha_l1"] * np.abs(P[0]).sum()
                           + p["alpha_fused"] * sum(np.abs(v).sum() for v in _chain(P[0]))
                           + p["alpha_group"] * _nl21(P[0])), None),
}


def _case(name, classification):
    reg, clf, params, parts, pen_cvx, pen_np, cons = MODELS[name]
    params = dict(params)
    if classification:
        # smaller strengths for the logistic loss, whose gradient at zero is smaller
        params = {k: (v / 5 if k.startswith("alpha") else v) for k, v in params.items()}
        if name in ("robust", "l1inf"):
            params["loss"] = "logistic"  # their default classifiers' losses are not smooth
    return (clf if classification else reg), params, parts, pen_cvx, pen_np, cons


#: (model, loss): both losses for every model, and the squared hinge for the models of the
#: catalogue (test_every_estimator_optimum covers it for the others)
CASES = ([(name, loss) for name in sorted(MODELS) for loss in (False, True)]
         + [(name, "squared_hinge") for name in ("dirty", "fsgl", "graph", "mean", "rmtfl",
                                                  "tgl")])


@pytest.mark.parametrize("name, classification", CASES,
                         ids=[f"{n}-{ {False: 'squared', True: 'logistic'}.get(c, c)}"
                              for n, c in CASES])
def test_alpha_l2_against_cvxpy(name, classification):
    cls, params, parts, pen_cvx, pen_np, cons = _case(name, bool(classification))
    if classification == "squared_hinge":
        params["loss"] = "squared_hinge"
    alpha_l2 = 0.05 if classification else 0.2
    Xs, ys = _problem(1, classification)
    est = cls(**params, alpha_l2=alpha_l2, tol=TOL, max_iter=200_000).fit(Xs, ys)
    assert est.optimality_ <= TOL
    loss = est._loss_name()
    ysg = ys if not classification else [np.where(y == est.classes_[1], 1.0, -1.0) for y in ys]
    assert loss == params.get("loss", loss)
    d, m = Xs[0].shape[1], len(Xs)
    n_parts = 1 if parts is None else len(parts)
    P = [cp.Variable((d, m)) for _ in range(n_parts)]
    W, b = sum(P), cp.Variable(m)
    obj = sum(_loss_cvx(loss, Xs[t], ysg[t], W[:, t], b[t]) for t in range(m))
    obj = obj + pen_cvx(P, params) + 0.5 * alpha_l2 * cp.sum_squares(W)
    prob = cp.Problem(cp.Minimize(obj), cons(P, params) if cons else [])
    prob.solve(solver=cp.CLARABEL)
    assert prob.status in ("optimal", "optimal_inaccurate")
    Wv, bv = est.coef_.T, est.intercept_
    Pv = [Wv] if parts is None else [getattr(est, a).T for a in parts]
    np.testing.assert_allclose(sum(Pv), Wv, atol=1e-12)
    ours = sum(_loss_np(loss, Xs[t], ysg[t], Wv[:, t], bv[t]) for t in range(m))
    ours += pen_np(Pv, params) + 0.5 * alpha_l2 * float(np.sum(Wv ** 2))
    if cons is not None and name == "sparse_low_rank":
        assert _nuc(Pv[1]) <= params["radius"] * (1 + 1e-9)
    if name == "l1inf":
        assert np.abs(Wv).max(axis=1).sum() <= params["radius"] * (1 + 1e-9)
    assert abs(ours - prob.value) <= REL * max(1.0, abs(prob.value)), (ours, prob.value)


def test_pooled_models_take_alpha_l2_on_the_common_weights():
    """Pooled: (1/N) sum_i ell + ((alpha + alpha_l2) / 2) ||w||^2, one w for all tasks."""
    for classification in (False, True):
        Xs, ys = _problem(2, classification)
        cls = mt.PooledClassifier if classification else mt.PooledRegressor
        est = cls(alpha=0.01, alpha_l2=0.1, tol=1e-13, max_iter=100_000).fit(Xs, ys)
        ref = cls(alpha=0.11, tol=1e-13, max_iter=100_000).fit(Xs, ys)
        # both certified to 1e-13 in objective: the strongly convex objective (modulus 0.11)
        # bounds their distance by sqrt(2 * 1e-13 P / 0.11), about 1e-6
        np.testing.assert_allclose(est.coef_, ref.coef_, atol=3e-6)
        X, y = np.vstack(Xs), np.concatenate(ys).astype(float)
        loss = "logistic" if classification else "squared"
        if classification:
            y = np.where(y == est.classes_[1], 1.0, -1.0)
        w, b = cp.Variable(X.shape[1]), cp.Variable()
        prob = cp.Problem(cp.Minimize(_loss_cvx(loss, X, y, w, b) + 0.055 * cp.sum_squares(w)))
        prob.solve(solver=cp.CLARABEL)
        ours = _loss_np(loss, X, y, est.coef_[0], est.intercept_[0]) + 0.055 * np.sum(
            est.coef_[0] ** 2)
        assert abs(ours - prob.value) <= REL * max(1.0, prob.value)


def test_malsar_rho_l2_and_rmtl_lam2():
    """MALSAR (least squares, n rows per task, no intercept): sum_t 0.5 ||y_t - X_t w_t||^2 +
    rho1 ||W||_{2,1} + rho_L2 ||W||_F^2 is n times our objective with alpha = rho1 / n,
    alpha_l2 = 2 rho_L2 / n. RMTL (0.5 mean squared loss per task, free intercepts):
    Lam1 ||W||_{2,1} + Lam2 ||W||_F^2 is alpha = Lam1, alpha_l2 = 2 Lam2."""
    n = 30
    Xs, ys = _problem(3, False, sizes=(n, n, n))
    rho1, rho_l2 = 3.0, 1.5
    W = cp.Variable((5, 3))
    obj = sum(0.5 * cp.sum_squares(ys[t] - Xs[t] @ W[:, t]) for t in range(3))
    prob = cp.Problem(cp.Minimize(obj + rho1 * _l21(W) + rho_l2 * cp.sum_squares(W)))
    prob.solve(solver=cp.CLARABEL)
    est = mt.L21Regressor(rho1 / n, alpha_l2=2 * rho_l2 / n, fit_intercept=False,
                          tol=TOL).fit(Xs, ys)
    Wv = est.coef_.T
    ours = sum(0.5 * np.sum((ys[t] - Xs[t] @ Wv[:, t]) ** 2) for t in range(3))
    ours += rho1 * _nl21(Wv) + rho_l2 * np.sum(Wv ** 2)
    assert abs(ours - prob.value) <= REL * prob.value
    lam1, lam2 = 0.05, 0.1
    W, b = cp.Variable((5, 3)), cp.Variable(3)
    obj = sum(0.5 * cp.sum_squares(ys[t] - Xs[t] @ W[:, t] - b[t]) / n for t in range(3))
    prob = cp.Problem(cp.Minimize(obj + lam1 * _l21(W) + lam2 * cp.sum_squares(W)))
    prob.solve(solver=cp.CLARABEL)
    est = mt.L21Regressor(lam1, alpha_l2=2 * lam2, tol=TOL).fit(Xs, ys)
    Wv, bv = est.coef_.T, est.intercept_
    ours = sum(0.5 * np.mean((ys[t] - Xs[t] @ Wv[:, t] - bv[t]) ** 2) for t in range(3))
    ours += lam1 * _nl21(Wv) + lam2 * np.sum(Wv ** 2)
    assert abs(ours - prob.value) <= REL * prob.value


def test_alpha_l2_must_be_finite_and_nonnegative():
    Xs, ys = _problem(0, False)
    for bad in (-0.1, np.inf, np.nan):
        with pytest.raises(ValueError, match="alpha_l2"):
            mt.DirtyModelRegressor(alpha_l2=bad).fit(Xs, ys)
