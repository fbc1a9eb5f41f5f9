"""Cases of the pinned ``solver="auto"`` table (``tests/test_solver_choice.py``): every model
of the library on a set of small data sets that reach each branch of the automatic choice
(shared and per-task designs, standardized and raw scales, wide, sparse, many rows)."""

from __future__ import annotations

import warnings
from functools import cache

import numpy as np
import scipy.sparse as sp

import multitask.estimators as est_mod
from multitask.solvers import DivideAndConquer, Multistage, ProxNewton, WorkingSet

#: Settings that change the choice: other losses, penalties, formulations, divide-and-conquer.
VARIANTS = (
    "RobustMTLRegressor(formulation='constrained')",
    "RobustMTLRegressor(n_groups=2)",
    "RobustMTLClassifier(n_groups=2)",
    "MultiTaskRegressor(penalty='l21')",
    "MultiTaskRegressor(penalty='l1')",
    "MultiTaskRegressor(penalty='ridge')",
    "MultiTaskRegressor(penalty='column_l2')",
    "MultiTaskClassifier(penalty='l21')",
    "MultiTaskClassifier(penalty='l1')",
    "L1InfClassifier(loss='logistic')",
    "L1InfClassifier(loss='squared_hinge')",
    "L21Classifier(loss='squared_hinge')",
    "TraceNormClassifier(loss='squared_hinge')",
    "SparseLowRankClassifier(loss='squared_hinge')",
    "DirtyModelClassifier(loss='squared_hinge')",
    "CappedL1Classifier(loss='logistic')",
    "CappedTraceClassifier(loss='squared_hinge')",
)
#: Every linear model (the kernel model has its own dual stack and no choice to pin) with its
#: defaults, and the variants.
MODELS = tuple(sorted(name for name in est_mod.__all__
                      if name.endswith(("Regressor", "Classifier"))
                      and "Kernel" not in name)) + VARIANTS


def make_model(spec: str):
    """The estimator of a ``MODELS`` entry (a class name, or a call with keyword values)."""
    name, _, args = spec.partition("(")
    cls = getattr(est_mod, name)
    kwargs = eval(f"dict({args[:-1]})") if args else {}  # noqa: S307 - the table's literals
    return cls(**kwargs)


def _tasks(rng, m, n, d, scales=None, bias=False):
    Xs, ys = [], []
    w = rng.standard_normal(d)
    for _ in range(m):
        X = rng.standard_normal((n, d))
        if scales is not None:
            X = X * scales + 3.0 * scales
        if bias:
            X[:, -1] = 1.0
        Xs.append(X)
        ys.append(X @ (w / (1.0 if scales is None else scales)) + rng.standard_normal(n))
    return Xs, ys


@cache
def case(name: str):
    """``(X, y, task)`` of the case ``name`` (regression targets; classifiers take signs)."""
    rng = np.random.default_rng(0)
    if name == "shared_small":
        X = rng.standard_normal((60, 8))
        Y = X @ rng.standard_normal((8, 4)) + rng.standard_normal((60, 4))
        return X, Y, None
    if name == "shared_wide":
        X = rng.standard_normal((50, 250))
        Y = X[:, :5] @ rng.standard_normal((5, 4)) + rng.standard_normal((50, 4))
        return X, Y, None
    if name == "tasks_small":
        Xs, ys = _tasks(rng, 5, 30, 8)
        return Xs, ys, None
    if name == "tasks_raw":
        scales = np.array([1, 100, 0.01, 30, 1, 1000, 0.1, 5, 1, 1.0])
        Xs, ys = _tasks(rng, 5, 30, 10, scales=scales, bias=True)
        return Xs, ys, None
    if name == "tasks_raw_tall":
        scales = np.array([1, 100, 0.01, 30, 1, 1.0])
        Xs, ys = _tasks(rng, 4, 120, 6, scales=scales, bias=True)
        return Xs, ys, None
    if name == "tasks_d40":
        Xs, ys = _tasks(rng, 4, 60, 40)
        return Xs, ys, None
    if name == "tasks_wide":
        Xs, ys = _tasks(rng, 4, 40, 300)
        return Xs, ys, None
    if name == "sparse_long":
        m, n, d = 4, 40, 60
        X = sp.random(m * n, d, density=0.1, format="csr", random_state=0)
        y = np.asarray(X @ rng.standard_normal(d)).ravel() + 0.1 * rng.standard_normal(m * n)
        task = np.repeat(np.arange(m), n)
        return X, y, task
    raise KeyError(name)


CASES = ("shared_small", "shared_wide", "tasks_small", "tasks_raw", "tasks_raw_tall",
         "tasks_d40", "tasks_wide", "sparse_long")


def _labels(y):
    if isinstance(y, list):
        return [np.where(v > np.median(v), 1, 0) for v in y]
    if y.ndim == 2:
        return np.where(y > np.median(y, axis=0), 1, 0)
    return np.where(y > np.median(y), 1, 0)


def describe(solver) -> str:
    """The configuration of a chosen solver as a short string."""
    if isinstance(solver, DivideAndConquer):
        return f"dc({describe(solver.base)})"
    out = solver.label
    if isinstance(solver, Multistage) and solver.inner is not None:
        out += f"[{describe(solver.inner)}]"
    if isinstance(solver, ProxNewton) and solver.hand_over is not None:
        out += f"(hand_over={solver.hand_over})"
    if isinstance(solver, WorkingSet):
        out += f"[{solver.inner if isinstance(solver.inner, str) else describe(solver.inner)}]"
    return out


def chosen_solver(model: str, case_name: str):
    """``(estimator, datafit, penalty, solver)``: what ``fit`` would build for the case."""
    est = make_model(model)
    X, y, task = case(case_name)
    if est._is_classifier:
        y = _labels(y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est._validate_params()
        data, _, _ = est._convert(X, y, task)
        datafit = est._make_datafit(data)
        penalty = est._make_penalty(datafit)
        solver = est._make_solver(datafit, penalty)
    return est, datafit, penalty, solver


def describe_choice(model: str, case_name: str) -> str:
    """:func:`describe` of the chosen solver; for working sets, also the inner solver and
    whether it forms Gram matrices on the whole problem."""
    _, datafit, penalty, solver = chosen_solver(model, case_name)
    out = describe(solver)
    if isinstance(solver, WorkingSet):
        inner = solver._inner_solver(datafit, penalty, 1e-4, 100)
        out += f"->{describe(inner)},gram={solver._gram(datafit, penalty, datafit.data)}"
    return out
