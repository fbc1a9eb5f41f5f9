"""Every solver a convex model accepts reaches the model ``solver="auto"`` reaches, across the
options that change the problem (a sample weight, a ridge, other losses): a solver that
silently solved another problem (an option it ignores, a strength it replaces) would predict
otherwise. A sweep over every model and every registered solver, run on request
(``python -m pytest -m slow tests/test_solver_agreement_sweep.py``); the curated agreement
tests with references (cvxpy, closed forms) run by default in the other test files.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import multitask.estimators as E
from multitask.solvers.base import REGISTRY

#: Non-convex models (their solvers may stop at other stationary points) and the kernel
#: model (its own dual coordinate descent, no solver choice; also under its former name) are
#: left out.
LEFT_OUT = ("CappedL1Regressor", "CappedL1Classifier", "CappedTraceRegressor",
            "CappedTraceClassifier", "MultiTaskKernelClassifier", "MultitaskKernelClassifier")

#: The fallbacks (projected gradient and subgradient) converge too slowly for a tight ``tol``.
SOLVERS = tuple(name for name, (cls, _) in REGISTRY.items()
                if getattr(cls, "by_name", True) and name not in ("pg", "subgradient"))

MODELS = sorted(name for name in E.__all__
                if name.endswith(("Regressor", "Classifier")) and name not in LEFT_OUT)


def _data(seed: int = 1):
    rng = np.random.default_rng(seed)
    m, n, d = 3, 30, 5
    X = rng.standard_normal((m * n, d))
    task = np.repeat(np.arange(m), n)
    W = rng.standard_normal((d, m))
    scores = np.einsum("ij,ji->i", X, W[:, task])
    y = scores + 0.3 * rng.standard_normal(m * n)
    return {"X": X, "task": task, "regression": y,
            "classes": (y > np.median(y)).astype(int),
            "counts": rng.poisson(np.exp(0.15 * scores)).astype(float),
            "weights": rng.uniform(0.2, 2.0, m * n)}


def _option_sets(cls) -> list[dict]:
    params = cls().get_params()
    sets = [{}]
    if "alpha_l2" in params:
        sets.append({"alpha_l2": 0.1})
    if "loss" in params and cls.__name__.endswith("Regressor"):
        sets += [{"loss": "huber"}, {"loss": "poisson"}]
    return sets


def _outputs(est, X, task, classify: bool) -> np.ndarray:
    out = est.decision_function(X, task=task) if classify else est.predict(X, task=task)
    return np.asarray(out, dtype=np.float64)


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_every_accepted_solver_reaches_the_auto_model(name):
    cls = getattr(E, name)
    classify = name.endswith("Classifier")
    data = _data()
    X, task = data["X"], data["task"]
    compared = 0
    for options, weighted in itertools.product(_option_sets(cls), (False, True)):
        if classify:
            y = data["classes"]
        else:
            y = data["counts"] if options.get("loss") == "poisson" else data["regression"]
        kwargs = {"task": task}
        if weighted:
            kwargs["sample_weight"] = data["weights"]
        fits = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for solver in ("auto",) + SOLVERS:
                est = cls(**options, solver=solver, tol=1e-9, max_iter=200_000)
                try:
                    est.fit(X, y, **kwargs)
                except ValueError:  # the solver does not apply: refused by name
                    continue
                if getattr(est, "converged_", True):
                    fits[solver] = _outputs(est, X, task, classify)
        if "auto" not in fits:
            continue
        ref = fits["auto"]
        scale = max(float(np.abs(ref).max()), 1e-12)
        for solver, out in fits.items():
            assert np.abs(out - ref).max() <= 1e-3 * scale, (name, options, weighted, solver)
            compared += 1
    assert compared > 0
