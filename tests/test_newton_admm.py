"""Proximal Newton with ADMM steps (solvers/newton_admm.py), for the split classifiers.

* cvxpy's optimum (Clarabel) of the logistic and squared-hinge models with the three split
  penalties (sparse + low rank, robust MTL's low rank + column-sparse outliers, robust
  feature learning), intercepts or not, unequal task sizes (1e-6 relative, certified 1e-9);
* nearly separable classes at a weak strength: the Newton steps reach the objective's
  rounding before the certificate, and hand over to majorization-minimization, which
  certifies ``tol`` (the result says so);
* ``solver="auto"`` takes it for the split classifiers with few features, majorization with
  many, and a warm start at the solution takes no step.
"""

from __future__ import annotations

import numpy as np
import pytest

from multitask import RobustFeatureLearningClassifier, SparseLowRankClassifier
from multitask.data import as_multitask_data
from multitask.losses import Logistic, SquaredHinge
from multitask.penalties import LowRankOutlier, RobustFeatureLearning, SparseLowRank
from multitask.solvers import MajorizedADMM, NewtonADMM

cp = pytest.importorskip("cvxpy")


def _lists(seed=0, m=4, d=5, positives=None):
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((d, 2)) @ rng.standard_normal((2, m))
    Xs, ys = [], []
    for t in range(m):
        n = 25 + 6 * t
        X = rng.standard_normal((n, d)) * np.linspace(0.5, 2.0, d) + 0.3
        s = X @ B[:, t] + 0.8 * rng.standard_normal(n)
        k = n // 2 if positives is None else positives
        y = -np.ones(n)
        y[np.argsort(-s)[:k]] = 1.0
        Xs.append(X)
        ys.append(y)
    return Xs, ys


def _penalty(name, scale):
    return {"sparse_low_rank": SparseLowRank(0.05 * scale, 1.0),
            "low_rank_outlier": LowRankOutlier(0.2 * scale, 0.8),
            "rmtfl": RobustFeatureLearning(0.3 * scale, 0.2 * scale)}[name]


def _cvxpy(loss, Xs, ys, intercept, name, pen):
    d, m = Xs[0].shape[1], len(Xs)
    P, Q = cp.Variable((d, m)), cp.Variable((d, m))
    W = P + Q
    b = cp.Variable(m) if intercept else np.zeros(m)
    obj = 0
    for t, (X, y) in enumerate(zip(Xs, ys, strict=True)):
        margin = cp.multiply(y, X @ W[:, t] + b[t])
        if loss == "logistic":
            obj += cp.sum(cp.logistic(-margin)) / len(y)
        else:
            obj += cp.sum_squares(cp.pos(1 - margin)) / len(y)
    cons = []
    if name == "sparse_low_rank":
        obj += pen.alpha * cp.sum(cp.abs(P))
        cons = [cp.normNuc(Q) <= pen.radius]
    elif name == "low_rank_outlier":
        obj += pen.alpha * (cp.normNuc(P) + pen.lam * cp.sum(cp.norm(Q, 2, axis=0)))
    else:
        obj += (pen.alpha_group * cp.sum(cp.norm(P, 2, axis=1))
                + pen.alpha_outlier * cp.sum(cp.norm(Q, 2, axis=0)))
    prob = cp.Problem(cp.Minimize(obj), cons)
    prob.solve(solver=cp.CLARABEL)
    return float(prob.value)


@pytest.mark.parametrize("intercept", [True, False])
@pytest.mark.parametrize("name", ["sparse_low_rank", "low_rank_outlier", "rmtfl"])
@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_matches_cvxpy(loss, name, intercept):
    Xs, ys = _lists(seed=1)
    data = as_multitask_data(Xs, ys, classification=True)[0]
    df = (Logistic if loss == "logistic" else SquaredHinge)(data, fit_intercept=intercept)
    scale = float(np.abs(df.grad_at_zero()).max())
    pen = _penalty(name, scale)
    res = NewtonADMM(tol=1e-9, max_iter=2000).solve(df, pen)
    assert res.converged and res.optimality <= 1e-9, res.info
    P = float(df.value(res.W, res.intercept_variable)) + float(pen.value(res.coef))
    P_star = _cvxpy(loss, Xs, ys, intercept, name, pen)
    assert P == pytest.approx(P_star, rel=1e-6)
    assert P <= P_star * (1 + 1e-7)  # no worse than the interior-point solution


def test_newton_hands_over_to_majorization_short_of_the_certificate(monkeypatch):
    """Three positives per task of 25 to 43 rows at 1e-3 of the largest useful strength: the
    classes are (nearly) separable, the Newton steps reach the objective but not the
    certificate, and majorization-minimization finishes to ``tol`` from there. (With the
    compiled inner ADMM iteration the Newton steps end at another point, which certifies by
    itself here: the interpreted inner steps, with Anderson's interpreted extrapolation, keep
    the hand-over's case.)"""
    from multitask.solvers import admm

    monkeypatch.setattr(admm._CompiledSparseLowRankStep, "applies_split",
                        classmethod(lambda *args: None))
    monkeypatch.setattr(admm.AndersonADMM, "_kernels_now", lambda self: None)
    Xs, ys = _lists(seed=2, positives=3)
    data = as_multitask_data(Xs, ys, classification=True)[0]
    df = Logistic(data, fit_intercept=True)
    scale = float(np.abs(df.grad_at_zero()).max())
    pen = SparseLowRank(1e-3 * scale, 3.0)
    res = NewtonADMM(tol=1e-6, max_iter=20000).solve(df, pen)
    assert res.converged and res.optimality <= 1e-6
    alone = MajorizedADMM(tol=1e-6, max_iter=200000).solve(df, pen)
    P = float(df.value(res.W, res.intercept_variable)) + float(pen.value(res.coef))
    # both certified: each objective is above the other's dual value
    assert P >= alone.info["dual"] - 1e-12 * abs(P)
    assert alone.info["primal"] >= res.info["dual"] - 1e-12 * abs(P)
    assert res.info["handed_over_to"] == "mm" and res.info["solver"] == "newton_admm"
    assert 0 < res.info["newton_iter"] < res.n_iter
    # measured: 28 Newton steps and 2 of majorization, against 2,085 from zero to 1e-6
    assert res.n_iter < alone.n_iter


def test_auto_takes_it_for_split_classifiers_with_few_features():
    Xs, ys = _lists(seed=3)
    y01 = [(y > 0).astype(int) for y in ys]
    for est in (SparseLowRankClassifier(), RobustFeatureLearningClassifier()):
        est.fit(Xs, y01)
        assert type(est.solver_).__name__ == "NewtonADMM"
        assert est.converged_ and est.certified_
        # a warm start at the solution takes no step
        est.set_params(warm_start=True).fit(Xs, y01)
        assert est.n_iter_ == 0
    rng = np.random.default_rng(0)
    wide = [np.hstack([X, rng.standard_normal((len(X), 40))]) for X in Xs]
    est = SparseLowRankClassifier().fit(wide, y01)
    # 45 features on tasks of fewer than 2 d rows: no majorization (issue 32's fourth round);
    # Newton-ADMM by proximal Newton's wide rule on few tasks (newton_admm.SPLIT_WIDE_ENTRIES)
    assert type(est.solver_).__name__ == "NewtonADMM"
    more = [np.hstack([X, rng.standard_normal((len(X), 30))]) for X in wide]
    est = SparseLowRankClassifier().fit(more, y01)  # 75 features: up to SPLIT_WIDE_FEATURES
    assert type(est.solver_).__name__ == "NewtonADMM"  # was ProximalGradient (fifth round)
    most = [np.hstack([X, rng.standard_normal((len(X), 30))]) for X in more]
    est = SparseLowRankClassifier().fit(most, y01)  # 105 features: past the rule
    assert type(est.solver_).__name__ == "ProximalGradient"
