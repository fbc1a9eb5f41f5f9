"""The rules of the automatic solver choice that issue 32's fifth round changed: the trace norm
with the squared loss leaves ADMM for accelerated gradient on many tasks at strong ``alpha``,
takes linearized ADMM on wide dense per-task designs at weak ``alpha``; Newton-ADMM takes the
split classifiers of up to 100 features on few tasks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import multitask.estimators as est_mod


def _data(n_tasks: int, n_features: int, classify: bool, rows: int = 40, seed: int = 0):
    """``(X, y, task)``: ``n_tasks`` tasks of ``rows`` standard normal rows, a target on ten
    features (labels 0/1 above its median for a classifier)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_tasks * rows, n_features))
    k = min(n_features, 10)
    W = rng.standard_normal((k, n_tasks)) + rng.standard_normal((k, 1))
    task = np.repeat(np.arange(n_tasks), rows)
    y = np.einsum("ij,ji->i", X[:, :k], W[:, task]) + rng.standard_normal(X.shape[0])
    if classify:
        y = (y > np.median(y)).astype(int)
    return X, y, task


def _choice(name: str, n_tasks: int, n_features: int, fraction: float) -> str:
    """The label of the solver ``solver="auto"`` takes for ``name`` at ``fraction`` of its
    ``alpha_max`` (``fraction`` itself where it has none) on :func:`_data`."""
    cls = getattr(est_mod, name)
    X, y, task = _data(n_tasks, n_features, name.endswith("Classifier"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        top = cls().alpha_max(X, y, task=task)
        alpha = fraction * top if np.isfinite(top) and top > 0 else fraction  # the benchmark's
        est = cls(**{cls._path_param or "alpha": alpha})
        est._validate_params()
        data, _, _ = est._convert(X, y, task)
        datafit = est._make_datafit(data)
        return est._make_solver(datafit, est._make_penalty(datafit)).label


@pytest.mark.parametrize("n_tasks, fraction, expected", [
    (1000, 0.5, "fista"),  # strong, many tasks (was admm)
    (1000, 0.8, "fista"),
    (1000, 0.3, "admm"),
    (100, 0.5, "admm"),
])
def test_the_trace_norm_on_many_tasks_at_strong_alpha_takes_accelerated_gradient(
        n_tasks, fraction, expected):
    assert _choice("TraceNormRegressor", n_tasks, 10, fraction) == expected


@pytest.mark.parametrize("n_tasks, n_features, fraction, expected", [
    (10, 1000, 0.01, "ladm"),  # wide, weak (was fista)
    (10, 1000, 0.02, "ladm"),
    (10, 1000, 0.05, "fista"),
    (4, 300, 0.01, "fista"),  # fewer features: measured slower
])
def test_the_trace_norm_on_wide_dense_tasks_at_weak_alpha_takes_linearized_admm(
        n_tasks, n_features, fraction, expected):
    assert _choice("TraceNormRegressor", n_tasks, n_features, fraction) == expected


@pytest.mark.parametrize("model", ["RobustFeatureLearningClassifier",
                                   "SparseLowRankClassifier", "RobustMTLClassifier"])
@pytest.mark.parametrize("n_tasks, n_features, newton_admm", [
    (10, 100, True),  # was ladm or fista (past proximal Newton's 64 wide features)
    (10, 64, True),
    (20, 100, False),  # 2 10^5 Hessian entries
    (10, 110, False),
])
def test_newton_admm_takes_split_classifiers_of_up_to_100_features(model, n_tasks, n_features,
                                                                    newton_admm):
    label = _choice(model, n_tasks, n_features, 0.1)
    assert (label == "newton_admm") is newton_admm, label
