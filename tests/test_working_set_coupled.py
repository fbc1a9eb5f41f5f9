"""Working sets for the models with a task coupling (graph, mean-regularized, temporal group
lasso) and the facts the automatic choice reads for them (issue 32's eighth round):

* the strength ratio of a penalty with a smooth task coupling is read from its rows' zero
  tests (its ``alpha`` weighs the coupling, not the norm);
* a penalty of free rows with a task coupling on least squares, tasks of fewer rows than
  features but as many rows as features in all, at most ``COUPLED_FREE_MAX_TASKS`` tasks:
  working sets (their subproblem the Gram form, block coordinate descent inside);
* block coordinate descent keeps its score inside working sets on coupled rows of singular
  Gram matrices, and stays behind accelerated gradient on a whole model there;
* working sets without a computable certificate at their start solve the whole problem by
  their inner solver (before: they returned zeros, unconverged).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import multitask as mt
from multitask.penalties import GraphRegularization
from multitask.solvers import BlockCoordinateDescent, WorkingSet, choose
from multitask.solvers.problem import Problem
from multitask.solvers.working_set import COUPLED_FREE_MAX_TASKS, GRAM_FEATURES_PER_ROW


def _tasks(m, n=40, d=300, seed=0):
    rng = np.random.default_rng(seed)
    W = np.zeros((d, m))
    W[:5] = rng.standard_normal((5, 1)) + 0.3 * rng.standard_normal((5, m))
    Xs = [rng.standard_normal((n, d)) for _ in range(m)]
    ys = [X @ W[:, t] + 0.5 * rng.standard_normal(n) for t, X in enumerate(Xs)]
    return Xs, ys


def _problem(est, Xs, ys, role="model"):
    est._validate_params()
    data, _, _ = est._convert(Xs, ys, None)
    datafit = est._make_datafit(data)
    return Problem(datafit, est._make_penalty(datafit), role=role)


@pytest.mark.parametrize("share", [0.5, 0.1, 0.01])
def test_strength_ratio_of_the_graph_model_is_its_l1_parts(share):
    Xs, ys = _tasks(6, d=60)
    top = mt.GraphRegularizedRegressor(alpha=0.3).alpha_max(Xs, ys)
    est = mt.GraphRegularizedRegressor(alpha=0.3, alpha_l1=share * top)
    assert _problem(est, Xs, ys).strength_ratio == pytest.approx(share, rel=1e-4)
    # the coupling's own strength does not enter
    est = mt.GraphRegularizedRegressor(alpha=30.0, alpha_l1=share * top)
    assert _problem(est, Xs, ys).strength_ratio == pytest.approx(share, rel=1e-4)


def test_free_coupled_rows_take_working_sets_within_the_measured_range():
    """The mean model on 10 tasks of 40 rows and 300 features: working sets (all rows, one
    Gram subproblem, block coordinate descent inside); on more tasks than the measured range,
    or fewer rows than features in all, accelerated gradient."""
    Xs, ys = _tasks(10)
    est = mt.MeanRegularizedRegressor(alpha=0.1)
    assert choose(_problem(est, Xs, ys), est._accepted_solvers()).name == "working_set"
    fitted = est.fit(Xs, ys)
    assert fitted.solver_.name == "working_set" and fitted.converged_
    assert fitted.solver_info_["inner"] == "bcd"
    ref = mt.MeanRegularizedRegressor(alpha=0.1, solver="fista", tol=1e-10,
                                      max_iter=200_000).fit(Xs, ys)
    np.testing.assert_allclose(fitted.coef_, ref.coef_, atol=1e-2 * np.abs(ref.coef_).max())
    few = _tasks(4)
    assert choose(_problem(est, *few), est._accepted_solvers()).name == "fista"
    many = _tasks(COUPLED_FREE_MAX_TASKS + 1, n=8)
    assert choose(_problem(est, *many), est._accepted_solvers()).name == "fista"


def test_bcd_inside_working_sets_on_coupled_singular_rows():
    """The graph penalty on tasks of fewer rows than features: behind accelerated gradient
    (45) on the whole model, its usual 70 on a working set's subproblem."""
    Xs, ys = _tasks(4, n=20, d=30)
    est = mt.GraphRegularizedRegressor(alpha=0.1, alpha_l1=0.01)
    model = _problem(est, Xs, ys)
    assert isinstance(model.penalty, GraphRegularization)
    gram = model.datafit.on_columns(model.datafit.data, gram=True)
    assert BlockCoordinateDescent.preference(Problem(gram, model.penalty)) == 45.0
    inner = Problem(gram, model.penalty, role="inner")
    assert BlockCoordinateDescent.preference(inner) == 70.0


def test_working_sets_without_a_certificate_solve_the_whole_problem():
    """The mean model's logistic fit on tasks of fewer rows than features has no computable
    certificate: working sets hand the whole problem to their inner solver and reach the
    accelerated gradient's objective, converged (before: zeros, unconverged)."""
    Xs, ys = _tasks(4, n=40, d=300)
    ys = [(y > np.median(y)).astype(int) for y in ys]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fit's note that it has no certified gap
        ws = mt.MeanRegularizedClassifier(alpha=0.1, solver=WorkingSet(tol=1e-6),
                                          tol=1e-6).fit(Xs, ys)
        ref = mt.MeanRegularizedClassifier(alpha=0.1, solver="fista", tol=1e-6).fit(Xs, ys)
    assert ws.solver_info_["fallback"] and ws.converged_ and ws.n_iter_ > 0
    assert np.abs(ws.coef_).max() > 0
    np.testing.assert_allclose(ws.coef_, ref.coef_, atol=1e-3 * np.abs(ref.coef_).max())


def test_working_sets_keep_the_design_form_far_from_full_rank():
    """The dirty model on 8 tasks of 100 rows and 1,000 features: its working set (the whole
    problem here) has 10 rows per row of a task, past ``GRAM_FEATURES_PER_ROW``: the
    subproblem keeps the design's form and accelerated gradient solves it (in Gram form block
    coordinate descent crawled, many times slower); the fit is certified and equals accelerated
    gradient's on the whole problem."""
    rng = np.random.default_rng(0)
    n, d, m = 100, 1000, 8
    W = np.zeros((d, m))
    W[:50] = rng.standard_normal((50, m))
    Xs = [rng.standard_normal((n, d)) for _ in range(m)]
    ys = [X @ W[:, t] + 0.5 * rng.standard_normal(n) for t, X in enumerate(Xs)]
    assert d / n > GRAM_FEATURES_PER_ROW
    est = mt.DirtyModelRegressor(solver="working_set", tol=1e-6).fit(Xs, ys)
    assert est.converged_ and est.solver_info_["working_set"] > 8 * n
    assert est.solver_info_["inner"] == "fista"
    ref = mt.DirtyModelRegressor(solver="fista", tol=1e-6, max_iter=100_000).fit(Xs, ys)
    assert est.solver_info_["primal"] == pytest.approx(ref.solver_info_["primal"], rel=1e-5)
