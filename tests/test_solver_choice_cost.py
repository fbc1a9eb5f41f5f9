"""The chooser's own cost (issue 32's fifth round): the bounds it reads before assessing a
candidate (``preference_ceiling``, ``max_preference``, the declared needs) never exclude a
candidate that the rule would take, and the conditioning test of ADMM reads the cheap bounds
of the largest eigenvalue before the eigenvalues, with the same answer."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from solver_choice_cases import CASES, MODELS, chosen_solver

import multitask.solvers  # noqa: F401 - registers every solver
from multitask.data import as_multitask_data
from multitask.losses import Squared
from multitask.penalties import L21
from multitask.solvers.admm import condition_number, ill_conditioned
from multitask.solvers.base import REGISTRY, make_solver
from multitask.solvers.choice import _ceiling, _declared_needs_met, choose
from multitask.solvers.problem import ROLES, Problem, median


def _problems(model: str):
    """The problems of ``model`` on the pinned cases, in both roles (fresh each time)."""
    for case_name in CASES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                _, datafit, penalty, _ = chosen_solver(model, case_name)
            except ValueError:
                continue
        for role in ROLES:
            yield case_name, role, datafit, penalty


@pytest.mark.parametrize("model", MODELS)
def test_the_bounds_read_before_a_candidate_never_exclude_it_wrongly(model):
    # every registered solver that applies gives at most its bound (-inf: no claim), and one
    # whose declared needs the problem lacks does not apply
    for case_name, role, datafit, penalty in _problems(model):
        for name, (cls, fixed) in REGISTRY.items():
            problem = Problem(datafit, penalty, role)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                miss = make_solver(name).missing(datafit, penalty)
                if not _declared_needs_met(problem, name):
                    assert miss, (model, case_name, name)
                if miss:
                    continue
                score = cls.preference(problem, **fixed)
            bound = _ceiling(Problem(datafit, penalty, role), name)
            value = -math.inf if score is None else float(score)
            assert value <= bound, (model, case_name, role, name, score, bound)


def test_no_candidate_applies_says_what_each_lacks():
    X = np.random.default_rng(0).standard_normal((40, 5))
    data = as_multitask_data(X, X[:, 0], np.repeat([0, 1], 20))[0]
    datafit = Squared(data)
    with pytest.raises(ValueError, match="No solver applies") as info:
        choose(Problem(datafit, L21(0.1)), ["newton", "newton_cg"])
    text = str(info.value)
    assert "newton: the squared loss offers no 'hessian'" in text
    assert "newton_cg: " in text


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 10, 11, 100, 101])
def test_median_is_numpys(n):
    rng = np.random.default_rng(n)
    for v in (rng.standard_normal(n), rng.integers(0, 3, n).astype(float),
              np.exp(5 * rng.standard_normal(n))):
        assert median(v) == float(np.median(v))


def _squared(m, d, n=40, scales=None, seed=0, ridge=0.0, shift=0.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m * n, d)) + shift
    if scales is not None:
        X = X * scales
    y = X @ rng.standard_normal(d) + rng.standard_normal(m * n)
    data = as_multitask_data(X, y, np.repeat(np.arange(m), n))[0]
    return Squared(data, alpha_l2=ridge)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("threshold", [2.0, 4.0, 10.0, 30.0])
def test_ill_conditioned_is_the_condition_number_test(seed, threshold):
    # the Gershgorin bound and the diagonals decide where they can: the answer is the
    # condition number's on standardized, correlated, raw-scale and ridge problems
    rng = np.random.default_rng(seed)
    cases = [_squared(10, 10, seed=seed), _squared(10, 10, n=12, seed=seed),
             _squared(5, 20, seed=seed, shift=2.0),
             _squared(10, 8, seed=seed, scales=np.exp(2 * rng.standard_normal(8))),
             _squared(3, 6, seed=seed, ridge=0.5), _squared(200, 30, seed=seed)]
    for datafit in cases:
        expected = condition_number(datafit) >= threshold
        again = Squared(datafit.data, alpha_l2=datafit.alpha_l2)
        assert ill_conditioned(again, threshold) == expected


def test_a_well_conditioned_small_problem_is_decided_without_eigenvalues():
    datafit = _squared(10, 10)
    assert not ill_conditioned(datafit)
    assert datafit._lipschitz is None  # the Gershgorin bound decided
    raw = _squared(10, 10, scales=np.geomspace(1, 1e3, 10))
    assert ill_conditioned(raw)  # the diagonals decide: no bound under the threshold
