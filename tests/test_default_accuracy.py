"""Defaults that deliver what ``converged_`` promises (issue 22: "converged means correct").

Every convex model, fitted with its **default** settings (``tol=1e-4``, its default
``max_iter`` and solver), on three random problems with unequal task sizes and unscaled
features (scales over three decades, offset from zero: condition numbers of the tasks' Gram
matrices of at least 1e3), is within 1e-4 (relative) of the optimum cvxpy finds for the same
objective written independently, and says so: ``converged_`` and ``certified_`` are True and
``optimality_`` (the certified relative gap) is at most ``tol``. And ``converged_`` is False
when ``max_iter`` stops the solver first.

Regressors: the catalogue of ``benchmarks/bench_certified.py`` (MALSAR's setting: a constant
column, no intercept, each model through the conversion its documentation gives; the script's
formulas are themselves checked in ``tests/test_bench_certified.py``), the capped l1 model's
last stage against that stage's exact solution. Classifiers: the formulas of
``tests/test_every_estimator_optimum.py`` (per-task mean losses, free intercepts).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import multitask as mt

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

bc = pytest.importorskip("bench_certified")
cp = pytest.importorskip("cvxpy")
every = pytest.importorskip("test_every_estimator_optimum")

SEEDS = (0, 1, 2)
GAP = 1e-4
#: Strengths as fractions of their thresholds (the benchmark's raw School setting uses 1e-3).
FRACTION = 0.01


def _design(rng, n: int, d: int) -> np.ndarray:
    """Features of scales ``10^-1.5 .. 10^1.5`` (one per column), offset from zero."""
    scales = np.logspace(-1.5, 1.5, d)
    return rng.standard_normal((n, d)) * scales + 2.0 * scales


def _regression_problem(seed: int):
    rng = np.random.default_rng(500 + seed)
    sizes, d = (14, 23, 9, 17), 5
    W = rng.standard_normal((d, 2)) @ rng.standard_normal((2, len(sizes)))
    Xs, ys = [], []
    scales = np.logspace(-1.5, 1.5, d)
    for t, n in enumerate(sizes):
        X = _design(rng, n, d)
        Xs.append(np.column_stack([X, np.ones(n)]))
        ys.append(X @ (W[:, t] / scales) + 0.5 + 0.5 * rng.standard_normal(n))
    return bc.Problem("raw", Xs, ys)


def _condition_number(X: np.ndarray) -> float:
    s = np.linalg.svd(X, compute_uv=False)
    return float((s[0] / s[-1]) ** 2)


def test_the_problems_are_ill_conditioned():
    for seed in SEEDS:
        problem = _regression_problem(seed)
        assert min(_condition_number(X) for X in problem.Xs) >= 1e3


def _reference(model, params, stage, problem) -> float:
    prob, parts = bc._cvxpy_problem(model, params, stage, problem)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            prob.solve(solver=cp.CLARABEL, **bc.CLARABEL_SETTINGS)
        except cp.error.SolverError:
            prob.solve(solver=cp.SCS, **bc.SCS_SETTINGS)
    assert parts[0].value is not None, prob.status
    values = bc._feasible(model, params, [np.asarray(v.value) for v in parts])
    return bc.objective(model, params, values, stage, problem)


CONVEX = [k for k in bc.model_table()]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("key", CONVEX)
def test_regressor_defaults_reach_the_optimum(key, seed, monkeypatch):
    monkeypatch.setitem(bc.FRACTION, "raw", FRACTION)
    monkeypatch.setitem(bc.RIDGE_FRACTION, "raw", FRACTION)
    problem = _regression_problem(seed)
    model = bc.model_table()[key]
    params = model.choose(problem)
    Xs, ys = problem.scaled(model.c)
    est = model.estimator(params, problem)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est.fit(Xs, ys)
    stage = model.stage(est)
    ours = bc.objective(model, params, model.read(est), stage, problem)
    ref = _reference(model, params, stage, problem)
    assert est.converged_ and est.certified_ and est.optimality_ <= est.tol
    assert (ours - ref) / abs(ref) <= GAP, (ours, ref)


def _classification_problem(seed: int):
    rng = np.random.default_rng(700 + seed)
    sizes, d = (24, 31, 18), 5
    W = rng.standard_normal((d, 2)) @ rng.standard_normal((2, len(sizes)))
    scales = np.logspace(-1.5, 1.5, d)
    Xs, ys = [], []
    for t, n in enumerate(sizes):
        X = _design(rng, n, d)
        s = X @ (W[:, t] / scales) + 0.7 * rng.standard_normal(n)
        Xs.append(X)
        ys.append(np.where(s > np.median(s), 1, 0))
    return Xs, ys


#: The convex classifiers at their default solver (the cases of the optimum test that do not
#: name a solver), and the non-default losses they offer.
CLASSIFIERS = [c for c in every.CLASSIFICATION if not c[3].get("solver")
               and c[1] is not mt.CappedTraceClassifier]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("case", CLASSIFIERS, ids=every._case_id)
def test_classifier_defaults_reach_the_optimum(case, seed):
    kind, cls, params, opts = case
    opts = dict(opts)
    pooled = opts.pop("pooled", False)
    Xs, ys = _classification_problem(seed)
    est = cls(**params, **opts)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est.fit(Xs, ys)
    loss = est._loss_name()
    ref = every.cvxpy_optimum(loss, kind, params, Xs, every._signed(est, ys), pooled=pooled)
    ours = every.our_objective(est, loss, kind, params, Xs, ys, pooled=pooled)
    assert est.converged_ and est.certified_ and est.optimality_ <= est.tol
    assert (ours - ref) / abs(ref) <= GAP, (ours, ref)


ALL_CONVEX = sorted(
    (cls for name in mt.__all__ if isinstance(cls := getattr(mt, name), type)
     and issubclass(cls, mt.estimators.base.MultiTaskEstimator)
     and name not in ("CappedTraceRegressor", "CappedTraceClassifier",
                      "MultiTaskKernelClassifier", "MultitaskKernelClassifier")),
    key=lambda c: c.__name__)


@pytest.mark.parametrize("cls", ALL_CONVEX, ids=lambda c: c.__name__)
def test_converged_is_false_when_max_iter_stops_first(cls):
    """One iteration of budget: the certificate does not hold, ``converged_`` is False and the
    solver warns (the capped l1 model's stages are convex and certified one by one)."""
    if cls._is_classifier:
        Xs, ys = _classification_problem(0)
    else:
        problem = _regression_problem(0)
        Xs, ys = problem.Xs, problem.ys
    est = cls(max_iter=1)
    if "alpha" in est.get_params():
        est.set_params(alpha=0.01 * est.alpha_max(Xs, ys) if np.isfinite(
            est.alpha_max(Xs, ys)) else est.alpha)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(Xs, ys)
    if est.solver_.label in ("exact",):  # a closed form: one step is the solution
        assert est.converged_
        return
    assert not est.converged_
    assert any(issubclass(w.category, ConvergenceWarning) for w in caught)


#: MALSAR-type parameters that are strengths (scaled to the logistic loss below); the others
#: (radii, eta, k) keep their meaning.
_STRENGTHS = ("rho", "rho1", "rho2", "rho3", "lambda", "lambda1", "lambda2", "gamma")


def _classifier_catalogue_case(key: str, seed: int):
    """The catalogue model ``key`` as a classifier (logistic loss, free intercepts) on a
    random ill-conditioned binary problem: its estimator, the parameters of the benchmark's
    formulas, and the problem (targets -1/+1)."""
    Xs, ys = _classification_problem(seed)
    signed = [np.where(y == 1, 1.0, -1.0) for y in ys]
    problem = bc.Problem("raw", Xs, signed)
    model = bc.model_table()[key]
    params = dict(model.choose(problem))
    # the thresholds are those of the least squares sum_t (c/2)||y_t - X_t w_t||^2; the
    # per-task mean logistic loss has gradients about 1/(2 c n_t) of theirs
    factor = 1.0 / (2.0 * model.c * float(np.mean([len(y) for y in ys])))
    params = {k: (v * factor if k in _STRENGTHS else v) for k, v in params.items()}
    reg = model.estimator(params, problem)
    cls = getattr(mt, type(reg).__name__.replace("Regressor", "Classifier"))
    accepted = cls().get_params()
    est = cls(**{k: v for k, v in reg.get_params().items()
                 if k in accepted and k not in ("fit_intercept", "solver", "tol", "max_iter")})
    if "loss" in accepted:
        est.set_params(loss="logistic")
    return model, params, problem, est, Xs, ys


def _logistic_reference(model, params, stage, problem) -> float:
    d, m = problem.n_features, problem.n_tasks
    parts = [cp.Variable((d, m)) for _ in model.parts]
    W = parts[0] if len(parts) == 1 else sum(parts[1:], parts[0])
    b = cp.Variable(m)
    loss = sum(cp.sum(cp.logistic(-cp.multiply(y, X @ W[:, t] + b[t]))) / len(y)
               for t, (X, y) in enumerate(zip(problem.Xs, problem.ys, strict=True)))
    pen, cons = model.penalty_cp(params, parts, stage, problem)
    prob = cp.Problem(cp.Minimize(loss + pen), cons)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            prob.solve(solver=cp.CLARABEL, **bc.CLARABEL_SETTINGS)
        except cp.error.SolverError:
            prob.solve(solver=cp.SCS, **bc.SCS_SETTINGS)
    assert parts[0].value is not None, prob.status
    return float(prob.value)


def _logistic_objective(model, params, est, stage, problem) -> float:
    parts = model.read(est)
    W, b = np.sum(parts, axis=0), est.intercept_
    loss = sum(float(np.sum(np.logaddexp(0.0, -y * (X @ W[:, t] + b[t])))) / len(y)
               for t, (X, y) in enumerate(zip(problem.Xs, problem.ys, strict=True)))
    return loss + model.penalty_np(params, parts, stage, problem)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("key", CONVEX)
def test_catalogue_classifier_defaults_reach_the_optimum(key, seed, monkeypatch):
    """The whole catalogue as classifiers (logistic loss, free intercepts), the formulas of
    the benchmark script with the logistic loss, at default settings."""
    monkeypatch.setitem(bc.FRACTION, "raw", 0.05)
    monkeypatch.setitem(bc.RIDGE_FRACTION, "raw", 0.05)
    model, params, problem, est, Xs, ys = _classifier_catalogue_case(key, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est.fit(Xs, ys)
    assert est.classes_[1] == 1
    stage = model.stage(est)
    ours = _logistic_objective(model, params, est, stage, problem)
    ref = _logistic_reference(model, params, stage, problem)
    assert est.converged_ and est.certified_ and est.optimality_ <= est.tol
    assert (ours - ref) / abs(ref) <= GAP, (ours, ref)
