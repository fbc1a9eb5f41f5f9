"""``solver="auto"`` on split models with the multinomial loss: majorization-minimization
keeps no claim where the classes of a task are likely separable (fewer than ``2 d K`` rows per
task), and keeps it with more rows."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from multitask import RobustMTLClassifier, SparseLowRankClassifier
from multitask.solvers.majorized import multinomial_separable


def _classes(rows: int, m: int = 3, d: int = 4, k: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(rows, d)) for _ in range(m)]
    y = [np.tile(np.arange(k), rows // k + 1)[:rows] for _ in range(m)]
    return X, y


def _fitted(cls, X, y):
    est = cls(loss="logistic", max_iter=2)
    grid = est.default_grid(X, y, n_alphas=2)
    with warnings.catch_warnings():  # two steps: the solver may say it stopped early
        warnings.simplefilter("ignore")
        est.set_params(**{k: v[0] for k, v in grid.items()}).fit(X, y)
    return est


@pytest.mark.parametrize("cls", [RobustMTLClassifier, SparseLowRankClassifier])
def test_split_multinomial_with_few_rows_takes_accelerated_gradient(cls):
    X, y = _classes(rows=12)  # 12 < 2 d K = 24 rows per task
    est = _fitted(cls, X, y)
    assert est.solver_.name == "fista"


@pytest.mark.parametrize("cls", [RobustMTLClassifier, SparseLowRankClassifier])
def test_split_multinomial_with_many_rows_keeps_majorization(cls):
    X, y = _classes(rows=60)  # 60 >= 24 rows per task
    assert _fitted(cls, X, y).solver_.name == "mm"


def test_multinomial_separable_counts_rows_per_task_against_features_and_classes():
    from multitask.data import as_multitask_data
    from multitask.losses import Logistic, Multinomial

    for rows, expected in ((23, True), (24, False)):
        X, y = _classes(rows=rows)
        data = as_multitask_data(X, [np.asarray(v, dtype=float) for v in y])[0]
        assert multinomial_separable(Multinomial(data)) is expected
    X, y = _classes(rows=5, k=2)
    data = as_multitask_data(X, [np.asarray(v, dtype=float) for v in y])[0]
    assert multinomial_separable(Logistic(data)) is False  # only the multinomial loss
