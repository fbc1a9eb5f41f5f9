"""Parameters renamed since earlier versions are refused with an error naming the new one
(``SparseLowRankRegressor(gamma=...)`` gave a bare ``TypeError: unexpected keyword``)."""

from __future__ import annotations

import pytest

import multitask as mt
from multitask import MultiTaskCV
from multitask.estimators.base import RenamedParameterError

#: (class, old name, new name quoted in the message) from the git history of the estimators.
RENAMED = [
    ("SparseLowRankRegressor", "gamma", "'alpha'"),
    ("SparseLowRankClassifier", "gamma", "'alpha'"),
    ("SparseLowRankRegressor", "tau", "'radius'"),
    ("SparseLowRankRegressor", "algorithm", "'solver'"),
    ("SparseLowRankRegressor", "line_search", "step"),
    ("SparseLowRankRegressor", "criterion", "'tol'"),
    ("SparseLowRankRegressor", "tol_type", "'tol'"),
    ("ClusteredMTLRegressor", "n_clusters", "'k'"),
    ("ClusteredMTLClassifier", "n_clusters", "'k'"),
    ("ConvexASORegressor", "n_components", "'k'"),
    ("RobustMTLRegressor", "mode", "schedule='paper'"),
    ("RobustMTLClassifier", "mode", "schedule='paper'"),
    ("MultiTaskKernelClassifier", "C", "'alpha' = 1 / C"),
]


@pytest.mark.parametrize("name, old, new", RENAMED)
def test_old_names_are_refused_naming_the_new_one(name, old, new):
    cls = getattr(mt, name)
    for call in (lambda: cls(**{old: 1.0}), lambda: cls().set_params(**{old: 1.0})):
        with pytest.raises(RenamedParameterError, match=f"{old}.*{new}") as err:
            call()
        assert isinstance(err.value, TypeError) and isinstance(err.value, ValueError)
    assert old not in cls().get_params()


def test_param_grid_with_an_old_name_names_the_new_one():
    X = [[[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]] * 2
    y = [[0.0, 1.0, 2.0]] * 2
    with pytest.raises(ValueError, match="'gamma'.*'alpha'"):
        MultiTaskCV(mt.SparseLowRankRegressor(), param_grid={"gamma": [1.0]}).fit(X, y)


def test_unknown_names_still_fail_and_current_names_work():
    with pytest.raises(TypeError, match="unexpected keyword"):
        mt.SparseLowRankRegressor(gammma=1.0)
    est = mt.SparseLowRankRegressor(alpha=0.5, radius=2.0)
    assert est.get_params()["radius"] == 2.0
