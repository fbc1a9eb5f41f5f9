"""Reliability suite: every public estimator under hostile inputs, solvers at their limits.

The estimators are the scikit-learn estimators of ``multitask.__all__`` (the models of
``multitask.estimators`` and ``MultiTaskCV``), read when the tests are collected, so a model
added later is covered without an edit here. Models that need special inputs are
handled explicitly in :func:`make_estimator` (the meta-estimator ``MultiTaskCV`` wraps an l2,1
model of the matching kind; ``MultiTaskKernelClassifier`` and its deprecated alias run with the
default linear kernel, the only one that takes all three input formats). Nothing is skipped.

Hypothesis draws the problems (formats, shapes, sparse or dense, float32 or float64, a task with
one row, a task with constant targets, features scaled by 1e-8 or 1e8, duplicated features);
the settings below bound the number of examples (``N_EXAMPLES``) so that the file runs in
well under two minutes.
"""

from __future__ import annotations

import copy
import os
import pickle
import warnings

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator, is_classifier
from sklearn.exceptions import ConvergenceWarning

import multitask
import multitask.estimators as E
from multitask.data import as_multitask_data
from multitask.losses import get_datafit
from multitask.model_selection import relative_grid
from multitask.penalties import TraceNorm
from multitask.solvers import ProximalGradient

# ----------------------------------------------------------------------------- the estimators
#: The public estimators: every class of ``multitask.__all__`` that is a scikit-learn estimator.
ESTIMATORS = [name for name in multitask.__all__
              if isinstance(getattr(multitask, name), type)
              and issubclass(getattr(multitask, name), BaseEstimator)]

#: ``MultiTaskCV`` is a meta-estimator: one case per kind of wrapped model.
CASES = [c for name in ESTIMATORS
         for c in ((f"{name}[regressor]", f"{name}[classifier]") if name == "MultiTaskCV"
                   else (name,))]

#: Models solved in closed form: no iteration budget to exhaust (checked: no warning).
#: (the mean-regularized least squares is a linear system: ``QuadraticExact``)
EXACT = {"IndependentRidgeRegressor", "PooledRegressor", "MeanRegularizedRegressor"}
#: Solvers without an iteration budget: the closed form, and HiGHS's linear program (which
#: stops on its own tolerances; ``solver="auto"`` takes it for small hinge-loss l1,inf models).
EXACT_SOLVERS = {"exact"}
#: Solvers whose budget is another program's (HiGHS for the LP): a warning and converged_
#: false at max_iter=1, but no iterate history to check.
EXTERNAL_SOLVERS = {"lp"}


def make_estimator(case: str, **overrides):
    """A fast instance of ``case``: small iteration budgets, seeded randomness."""
    if case.startswith("MultiTaskCV"):
        inner = E.L21Classifier if case.endswith("[classifier]") else E.L21Regressor
        return multitask.MultiTaskCV(make_estimator(inner.__name__, **overrides), n_alphas=3,
                                     cv=2)
    est = getattr(multitask, case)()
    params = est.get_params(deep=False)
    fast = {"max_iter": 300, "n_stages": 3, "max_mkl_iter": 10, "random_state": 0}
    kw = {k: v for k, v in fast.items() if k in params}
    if "max_iter" in kw and params["max_iter"] is not None:
        kw["max_iter"] = min(int(params["max_iter"]), 300)
    kw.update({k: v for k, v in overrides.items() if k in params})
    return est.set_params(**kw)


def _classifier(case: str) -> bool:
    return is_classifier(make_estimator(case))


def _set_task_column(est):
    target = est.estimator if isinstance(est, multitask.MultiTaskCV) else est
    target.set_params(task_column=-1)


# ----------------------------------------------------------------------------- the problems
@st.composite
def problems(draw, classification: bool):
    """A multi-task problem in one of the four input layouts (dict with X, y, task, flags)."""
    fmt = draw(st.sampled_from(["long", "lists", "shared", "task_column"]))
    m = draw(st.integers(1, 4))
    d = draw(st.integers(1, 6))
    sparse = draw(st.booleans())
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    x_scale = draw(st.sampled_from([1.0, 1e-8, 1e8]))
    y_scale = draw(st.sampled_from([1.0, 1e-8, 1e8]))
    duplicate = draw(st.booleans())
    one_row = draw(st.booleans()) and fmt != "shared"
    constant = draw(st.booleans())
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)

    if fmt == "shared":
        n = int(rng.integers(2, 15))
        sizes = np.full(m, n)
        base = rng.standard_normal((n, d))
        blocks = [base] * m
    else:
        sizes = rng.integers(2, 12, m)
        if one_row:
            sizes[0] = 1
        blocks = [rng.standard_normal((s, d)) for s in sizes]
    W = rng.standard_normal((d, m))
    targets = []
    for t in range(m):
        z = blocks[t] @ W[:, t] + 0.3 * rng.standard_normal(sizes[t])
        if classification:
            yt = (z > 0).astype(np.int64)
            if len(yt) >= 2:
                yt[:2] = [0, 1]
            if constant and t == m - 1:
                yt[:] = 1
        else:
            yt = z * y_scale
            if constant and t == m - 1:
                yt[:] = 3.0 * y_scale
        targets.append(yt)
    # a task with a single class cannot be learned by a binary classifier: a ValueError is due
    one_class = classification and any(len(np.unique(v)) < 2 for v in targets)

    def design(A):
        A = A * x_scale
        if duplicate:
            A = np.hstack([A, A[:, :1]])
        A = A.astype(dtype)
        if sparse:
            A = sp.csr_matrix(A * (rng.random(A.shape) < 0.6))
        return A

    if fmt == "shared":
        Y = np.column_stack(targets)
        X, y, task = design(blocks[0]), (Y if m > 1 else Y[:, 0]), None
    elif fmt == "lists":
        X, y, task = [design(A) for A in blocks], targets, None
    else:
        Xs = [design(A) for A in blocks]
        X = sp.vstack(Xs, format="csr") if sparse else np.vstack(Xs)
        y = np.concatenate(targets)
        task = np.repeat(np.arange(m), sizes)
        perm = rng.permutation(len(y))
        X, y, task = X[perm], y[perm], task[perm]
        if fmt == "task_column":
            col = task.astype(dtype)[:, None]
            X = sp.hstack([X, sp.csr_matrix(col)], format="csr") if sparse else np.hstack(
                [X, col])
            task = None
    return {"fmt": fmt, "X": X, "y": y, "task": task, "one_class": one_class,
            "describe": dict(fmt=fmt, m=m, d=d, sparse=sparse, dtype=dtype.__name__,
                             x_scale=x_scale, y_scale=y_scale, duplicate=duplicate,
                             one_row=one_row, constant=constant, seed=seed)}


def _fit(est, p):
    if p["fmt"] == "task_column":
        _set_task_column(est)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if p["task"] is not None:
            return est.fit(p["X"], p["y"], p["task"])
        return est.fit(p["X"], p["y"])


def _predict(est, p, method="predict"):
    f = getattr(est, method)
    return f(p["X"], p["task"]) if p["task"] is not None else f(p["X"])


def _snapshot(obj):
    """A deep copy of an input (arrays, sparse matrices, lists of them)."""
    return copy.deepcopy(obj)


def _same(a, b) -> bool:
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(u, v) for u, v in zip(a, b, strict=True))
    if sp.issparse(a):
        return (sp.issparse(b) and a.dtype == b.dtype and a.shape == b.shape
                and np.array_equal(a.data, b.data) and np.array_equal(a.indices, b.indices)
                and np.array_equal(a.indptr, b.indptr))
    if a is None:
        return b is None
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


#: Messages of errors raised by numpy/scipy internals rather than by the library's checks.
_INTERNAL = ("array must not contain", "setting an array element", "could not be broadcast",
             "zero-size array", "could not convert", "object too deep", "ndarray is not")


def _flat(pred) -> np.ndarray:
    return np.concatenate([np.ravel(v) for v in pred]) if isinstance(pred, list) else np.ravel(
        pred)


#: Examples per estimator; raise it for a deeper search, e.g.
#: ``MULTITASK_RELIABILITY_EXAMPLES=300 python -m pytest tests/test_reliability.py``.
N_EXAMPLES = int(os.environ.get("MULTITASK_RELIABILITY_EXAMPLES", "25"))

RELIABILITY = settings(max_examples=N_EXAMPLES, deadline=None, derandomize=True, database=None,
                       suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ----------------------------------------------------------------------------- the properties
@pytest.mark.parametrize("case", CASES)
def test_fits_with_finite_coefficients_or_raises_a_clear_error(case):
    """Hostile but valid problems fit, with finite coefficients and predictions; a task with a
    single class raises a ValueError that says so. Inputs are never modified."""

    @RELIABILITY
    @given(p=problems(classification=_classifier(case)))
    def check(p):
        est = make_estimator(case)
        before = {k: _snapshot(p[k]) for k in ("X", "y", "task")}
        try:
            _fit(est, p)
        except ValueError as exc:
            msg = str(exc)
            assert len(msg) > 15 and not any(s in msg for s in _INTERNAL), (msg, p["describe"])
            if p["one_class"]:
                assert "one class" in msg, (msg, p["describe"])
            return
        finally:
            for k, v in before.items():
                assert _same(p[k], v), f"fit modified its input {k}: {p['describe']}"
        assert not p["one_class"], f"fitted a task with a single class: {p['describe']}"
        coef = getattr(est, "coef_", None)
        if coef is not None:
            assert np.all(np.isfinite(coef)), p["describe"]
        assert np.all(np.isfinite(est.intercept_)), p["describe"]
        pred = _predict(est, p)
        if _classifier(case):
            assert set(np.unique(_flat(pred))) <= set(est.classes_.tolist())
            assert np.all(np.isfinite(_flat(_predict(est, p, "decision_function"))))
        else:
            assert np.all(np.isfinite(_flat(pred))), p["describe"]
        y = p["y"]
        assert len(_flat(pred)) == len(_flat(y)), p["describe"]

    check()


@pytest.mark.parametrize("case", CASES)
def test_same_seed_gives_the_same_model(case):
    @settings(RELIABILITY, max_examples=max(3, N_EXAMPLES // 6))
    @given(p=problems(classification=_classifier(case)))
    def check(p):
        outcomes = []
        for _ in range(2):
            try:
                outcomes.append(_fit(make_estimator(case), p))
            except ValueError as exc:
                outcomes.append(str(exc))
        a, b = outcomes
        if isinstance(a, str) or isinstance(b, str):
            assert a == b, p["describe"]  # the same clear error both times
            return
        for attr in ("coef_", "intercept_"):
            if hasattr(a, attr):
                assert np.array_equal(getattr(a, attr), getattr(b, attr)), p["describe"]
        assert np.array_equal(_flat(_predict(a, p)), _flat(_predict(b, p)))

    check()


@pytest.mark.parametrize("case", CASES)
def test_pickle_and_joblib_round_trips(case, tmp_path, datagen):
    clf = _classifier(case)
    Xs, ys = datagen.classification_lists() if clf else datagen.regression_lists()
    X, y, task = datagen.lists_to_long(Xs, ys, labels=["a", "b", "c"])
    est = make_estimator(case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y, task)
    pickled = pickle.loads(pickle.dumps(est))
    joblib.dump(est, tmp_path / "m.joblib")
    loaded = joblib.load(tmp_path / "m.joblib")
    methods = ["predict"] + [m for m in ("decision_function", "predict_proba")
                             if hasattr(est, m)]
    for back in (pickled, loaded):
        assert type(back) is type(est)
        for m in methods:
            np.testing.assert_array_equal(getattr(back, m)(X, task), getattr(est, m)(X, task))
        assert back.get_params().keys() == est.get_params().keys()


@pytest.mark.parametrize("case", [c for c in CASES if not c.startswith("MultiTaskCV")])
def test_max_iter_warns_and_returns_the_best_iterate(case, datagen):
    """A budget of one iteration: ConvergenceWarning, finite coefficients, ``converged_`` false
    (closed-form and linear-program solvers: no budget, no warning). Accelerated solvers return
    their best iterate."""
    clf = _classifier(case)
    Xs, ys = datagen.classification_lists() if clf else datagen.regression_lists()
    est = make_estimator(case)
    params = est.get_params(deep=False)
    assert "max_iter" in params, f"{case} has no iteration budget: add it to EXACT or here"
    budget = {"max_iter": 1, "tol": 1e-14, "max_mkl_iter": 1}
    est.set_params(**{k: v for k, v in budget.items() if k in params})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(Xs, ys)
    conv = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert np.all(np.isfinite(est.coef_)) and np.all(np.isfinite(est.intercept_))
    solver_name = getattr(getattr(est, "solver_", None), "name", None)
    assert (solver_name == "exact") == (case in EXACT), (case, solver_name)
    if solver_name in EXACT_SOLVERS:
        assert not conv and est.converged_
        return
    assert conv, f"{case} reached max_iter=1 without a ConvergenceWarning"
    assert "max_iter" in str(conv[0].message)
    assert est.converged_ is False
    if solver_name in EXTERNAL_SOLVERS:
        return

    # best iterate: with a few iterations, the returned point has the smallest objective seen
    est = make_estimator(case).set_params(**{k: v for k, v in
                                             {"max_iter": 7, "tol": 1e-14}.items()
                                             if k in params})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(Xs, ys)
    hist = np.asarray(est.objective_)
    info = getattr(est, "solver_info_", {})
    if "best_objective" in info and hist.size > 1:
        assert info["best_objective"] == pytest.approx(hist.min(), rel=1e-12)
    # recompute the objective of the returned point (the pooled models solve a one-task
    # problem on the stacked rows, whose objective is not the multi-task one rebuilt here)
    if est.__module__ == "multitask.estimators.baselines" and not case.startswith("Pooled"):
        data, _ = as_multitask_data(Xs, ys, classification=clf)
        datafit = est._make_datafit(data)
        penalty = est._make_penalty(datafit)
        V, b = est.coef_variable_, est.intercept_variable_
        F = datafit.value(penalty.linear_map.forward(V), b) + penalty.value(V)
        assert F == pytest.approx(hist.min(), rel=1e-9)


def test_every_public_estimator_is_covered():
    """The cases follow the public estimators (and nothing is left out)."""
    names = {c.split("[")[0] for c in CASES}
    assert names == set(ESTIMATORS) == set(E.__all__) | {"MultiTaskCV"}
    for name in ESTIMATORS:
        make_estimator(name if name != "MultiTaskCV" else "MultiTaskCV[regressor]")


# ----------------------------------------------------------------------------- solvers
def test_fista_warm_start_does_not_stop_before_its_momentum_builds_up():
    """A warm start from the neighbouring path point reaches the cold start's objective.

    On School (raw features: ill-conditioned), the first steps from a warm start decrease the
    objective by little but accelerate; the former objective-change rule stopped after three
    such steps, 0.5% above the optimum. The optimality measure does not stop there: the warm
    run ends at a point that meets tol, with the cold start's objective.
    """
    from multitask.datasets import load_school

    school = load_school()
    data, _ = as_multitask_data(school.X[:30], school.y[:30])  # 30 schools: the same features
    datafit = get_datafit("squared", data)
    grid = relative_grid(TraceNorm(1.0).alpha_max(datafit.grad_at_zero()), 10, 1e-3)
    solver = ProximalGradient(max_iter=20000, tol=1e-4)
    prev = solver.solve(datafit, TraceNorm(grid[6]))
    warm = solver.solve(datafit, TraceNorm(grid[7]), coef_init=prev.W)
    cold = solver.solve(datafit, TraceNorm(grid[7]))
    assert prev.converged and warm.converged and cold.converged
    assert warm.optimality <= 1e-4 and cold.optimality <= 1e-4
    assert warm.final_objective <= cold.final_objective * (1 + 1e-4)
    assert abs(warm.final_objective - cold.final_objective) <= 1e-4 * cold.final_objective
