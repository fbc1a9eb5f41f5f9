"""The rules of the automatic solver choice that issue 32's fourth round added: the chooser
skips a candidate that cannot win (the same choice as assessing every one), truncated Newton's
claim on a pure ridge with the logistic loss (the features' scale spread), majorization's split
claim only on tasks of at least ``2 d`` rows, Newton-ADMM on split models of up to 64 features
on few tasks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from solver_choice_cases import CASES, MODELS, chosen_solver

from multitask.data import as_multitask_data
from multitask.losses import Logistic, Multinomial, Squared
from multitask.penalties import Ridge
from multitask.solvers.choice import choose, explain
from multitask.solvers.majorized import few_rows_per_weight, multinomial_separable
from multitask.solvers.newton_cg import SCALE_SPREAD, NewtonCG, feature_scale_spread
from multitask.solvers.problem import Problem


def _problem(model: str, case_name: str) -> tuple[Problem, list[str]]:
    est, datafit, penalty, _ = chosen_solver(model, case_name)
    return Problem(datafit, penalty), est._accepted_solvers()


@pytest.mark.parametrize("model", MODELS)
def test_choose_takes_what_assessing_every_candidate_takes(model):
    # choose skips the candidates whose max_preference cannot beat the best found so far;
    # explain assesses every one: the first row of explain is the rule's choice
    for case_name in CASES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                problem, candidates = _problem(model, case_name)
            except ValueError:
                continue
            try:
                name = choose(problem, candidates).name
            except ValueError:
                continue
            again, _ = _problem(model, case_name)
            assert name == explain(again, candidates)[0]["solver"], (model, case_name)


def test_a_candidate_that_cannot_win_is_not_assessed():
    problem, candidates = _problem("IndependentRidgeClassifier", "tasks_small")
    assert choose(problem, candidates).name == "newton_cg"
    # majorization's conditioning estimate (one spectral norm per task) is never computed
    assert "mm_ill_conditioned" not in problem._facts
    assert "feature_scale_spread" in problem._facts


def _data(n_rows: int, n_features: int, n_tasks: int, seed: int = 0, scales=None):
    """``(X, y, task)``: stacked rows of ``n_tasks`` tasks, labels 0/1."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_rows * n_tasks, n_features))
    if scales is not None:
        X = X * scales
    y = (X[:, 0] + rng.standard_normal(X.shape[0]) > 0).astype(float)
    task = np.repeat(np.arange(n_tasks), n_rows)
    return X, y, task


def _mtd(X, y, task):
    return as_multitask_data(X, y, task)[0]


def test_feature_scale_spread_is_the_ratio_of_the_column_variances():
    scales = np.array([1.0, 10.0, 0.1, 1.0])
    X, y, task = _data(500, 4, 2, scales=scales)
    X[:, 3] = 2.0  # a constant column has no scale
    data = _mtd(X, y, task)
    var = np.var(X[:, :3], axis=0)
    assert feature_scale_spread(Logistic(data)) == pytest.approx(var.max() / var.min())
    assert 1e3 < feature_scale_spread(Logistic(data)) < 2e4
    sparse = _mtd(sp.csr_matrix(X), y, task)
    assert feature_scale_spread(Logistic(sparse)) == pytest.approx(
        feature_scale_spread(Logistic(data)))


def test_truncated_newton_claims_the_logistic_ridge_by_the_features_scales():
    X, y, task = _data(60, 8, 3)
    one_scale = Problem(Logistic(_mtd(X, y, task)), Ridge(0.1))
    assert feature_scale_spread(one_scale.datafit) <= SCALE_SPREAD
    assert NewtonCG.preference(one_scale) == 85.0  # ahead of proximal Newton (80)
    raw = X * np.logspace(-2, 2, 8)
    spread = Problem(Logistic(_mtd(raw, y, task)), Ridge(0.1))
    assert NewtonCG.preference(spread) == 75.0  # behind proximal Newton, ahead of FISTA


@pytest.mark.parametrize("n_rows, expected", [(40, True), (79, True), (80, False)])
def test_few_rows_per_weight_counts_twice_the_features_per_task(n_rows, expected):
    X, y, task = _data(n_rows, 40, 3)
    data = _mtd(X, y, task)
    assert few_rows_per_weight(Logistic(data)) is expected
    assert few_rows_per_weight(Squared(data)) is expected


def test_few_rows_per_weight_counts_the_classes_of_the_multinomial_loss():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3 * 50, 10))
    y = rng.integers(0, 3, X.shape[0]).astype(float)
    task = np.repeat(np.arange(3), 50)
    df = Multinomial(_mtd(X, y, task))
    assert multinomial_separable(df)  # 50 rows < 2 * 10 * 3
    assert few_rows_per_weight(df)


@pytest.mark.parametrize("model", ["RobustFeatureLearningClassifier",
                                   "SparseLowRankClassifier", "RobustMTLClassifier"])
def test_split_models_on_tasks_of_few_rows_leave_majorization(model):
    # tasks_d40: 4 tasks of 60 rows and 40 features (fewer than 2 d rows): Newton-ADMM by
    # its wide rule (4 x 40^2 Hessian entries); tasks_wide: 300 features, no Newton
    assert chosen_solver(model, "tasks_d40")[3].label == "newton_admm"
    assert chosen_solver(model, "tasks_wide")[3].label != "mm"


def _auto_label(est, X, y, task) -> str:
    """The label of the solver ``est`` (``solver="auto"``) takes on ``(X, y, task)``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est._validate_params()
        data, _, _ = est._convert(X, y, task)
        datafit = est._make_datafit(data)
        return est._make_solver(datafit, est._make_penalty(datafit)).label


def _l21_choice(n_tasks: int, fraction: float, scales=None) -> str:
    from multitask import L21Classifier

    X, y, task = _data(40, 10, n_tasks, scales=scales)
    top = L21Classifier().alpha_max(X, y, task=task)
    return _auto_label(L21Classifier(alpha=fraction * top), X, y, task)


@pytest.mark.parametrize("n_tasks, fraction, expected", [
    (100, 0.01, "newton_admm"),  # weak, many tasks
    (10, 0.001, "newton_admm"),  # weakest, few tasks
    (10, 0.01, "newton"),
    (100, 0.1, "newton"),
])
def test_newton_admm_takes_the_weak_l21_logistic_model(n_tasks, fraction, expected):
    assert _l21_choice(n_tasks, fraction) == expected


def test_proximal_newton_keeps_the_weak_l21_model_on_raw_scales():
    assert _l21_choice(100, 0.01, scales=np.logspace(-2, 2, 10)) == "newton"


def _lasso_choice(cls_name: str, fraction: float, sparse: bool = False) -> str:
    """The solver ``"auto"`` takes for the independent lasso at ``fraction`` of its
    ``alpha_max`` on 60 tasks of 40 rows and 300 features (regression targets from 10 rows)."""
    import multitask

    rng = np.random.default_rng(0)
    X = rng.standard_normal((60 * 40, 300))
    task = np.repeat(np.arange(60), 40)
    W = np.zeros((300, 60))
    W[:10] = rng.standard_normal((10, 60))
    y = np.einsum("ij,ji->i", X, W[:, task]) + 0.5 * rng.standard_normal(X.shape[0])
    if cls_name.endswith("Classifier"):
        y = (y > np.median(y)).astype(float)
    if sparse:
        X = sp.csr_matrix(X)
    cls = getattr(multitask, cls_name)
    return _auto_label(cls(alpha=fraction * cls().alpha_max(X, y, task=task)), X, y, task)


@pytest.mark.parametrize("cls_name, fraction, sparse, expected", [
    ("IndependentLassoRegressor", 0.1, False, "task_cd"),  # least squares, dense: task by task
    ("IndependentLassoRegressor", 0.05, False, "task_cd"),
    ("IndependentLassoRegressor", 0.1, True, "fista"),  # a sparse design: not task by task
    ("IndependentLassoClassifier", 0.1, False, "fista"),  # least squares only
])
def test_the_lasso_on_many_tasks_of_a_dense_design(cls_name, fraction, sparse, expected):
    """The independent lasso on 60 tasks of 40 rows and 300 features (every row nonzero in some
    task, the rows' estimate saturated): least squares on a dense design goes task by task
    (issue 32's fourteenth round, docs/scale.md "The independent lasso task by task"); the
    working sets' former many-tasks exception for it (least squares on a large dense design,
    whatever the rows' estimate) is gone, so the other cases keep the rows' estimate's rule,
    which declines them here (estimate above ``ENTRYWISE_SHARE_MAX``)."""
    import multitask.solvers.working_set as ws

    assert not hasattr(ws, "ENTRYWISE_MANY_TASKS")
    assert _lasso_choice(cls_name, fraction, sparse) == expected


def _robust_data(m: int, d: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    n = 40
    X = rng.standard_normal((m * n, d))
    task = np.repeat(np.arange(m), n)
    W = np.outer(rng.standard_normal(d), rng.standard_normal(m))
    y = np.einsum("ij,ji->i", X, W[:, task]) + 0.5 * rng.standard_normal(m * n)
    return X, y, task


@pytest.mark.parametrize("fraction, expected", [(0.5, "fista"), (0.3, "fista"),
                                                (0.2, "ladm"), (0.01, "ladm")])
def test_linearized_admm_leaves_strong_split_models_to_accelerated_gradient(fraction,
                                                                            expected):
    """Robust MTL with the squared loss on 10 tasks of 40 rows and 300 features (where ADMM's
    exact solves do not apply): linearized ADMM (55) from ``alpha < SPLIT_STRONG_RATIO
    alpha_max`` only, accelerated gradient from it on (measured faster there)."""
    from multitask import RobustMTLRegressor
    from multitask.solvers.ladm import SPLIT_STRONG_RATIO

    assert SPLIT_STRONG_RATIO == 0.3
    X, y, task = _robust_data(10, 300)
    top = RobustMTLRegressor(lam=0.5).alpha_max(X, y, task=task)
    est = RobustMTLRegressor(alpha=fraction * top, lam=0.5)
    assert _auto_label(est, X, y, task) == expected


def test_split_strength_ratio_is_alpha_over_the_penalty_alpha_max():
    from multitask import L21Regressor, RobustMTLRegressor, SparseLowRankRegressor
    from multitask.solvers.problem import Problem

    def problem(est):
        est._validate_params()
        data, _, _ = est._convert(X, y, task)
        datafit = est._make_datafit(data)
        return Problem(datafit, est._make_penalty(datafit), role="model")

    X, y, task = _robust_data(10, 40)
    top = RobustMTLRegressor(lam=0.5).alpha_max(X, y, task=task)
    for fraction, ratio in ((0.25, 0.25), (2.0, 1.0)):
        found = problem(RobustMTLRegressor(alpha=fraction * top, lam=0.5))
        assert found.split
        assert found.split_strength_ratio == pytest.approx(ratio, rel=1e-10)
    # a constraint part (sparse + low rank's trace-norm ball) leaves no such scale
    found = problem(SparseLowRankRegressor(alpha=0.5 * SparseLowRankRegressor().alpha_max(
        X, y, task=task)))
    assert found.split and found.split_strength_ratio is None
    # not a split model: no split ratio (strength_ratio covers it)
    assert problem(L21Regressor(alpha=1.0)).split_strength_ratio is None


def test_sparse_low_rank_keeps_linearized_admm_at_a_strong_alpha():
    """Sparse + low rank at ``alpha_max / 2`` (no split ratio: its ball is a constraint) keeps
    linearized ADMM where ADMM's exact solves do not apply."""
    from multitask import SparseLowRankRegressor

    X, y, task = _robust_data(10, 300)
    est = SparseLowRankRegressor(alpha=0.5 * SparseLowRankRegressor().alpha_max(X, y, task=task))
    assert _auto_label(est, X, y, task) == "ladm"


def test_the_constrained_formulation_and_the_subproblems_keep_linearized_admm():
    """The equality-constrained robust MTL is linearized ADMM's alone (accelerated gradient
    would solve the penalized model at ``alpha = 1``): kept however strong ``alpha = 1`` is
    against ``alpha_max``; so are the divide-and-conquer subproblems."""
    from multitask import RobustMTLRegressor

    X, y, task = _robust_data(10, 300)
    X = X / 1e3  # alpha_max far below 1: the constrained model's alpha = 1 is "strong"
    est = RobustMTLRegressor(formulation="constrained", lam=0.5)
    assert RobustMTLRegressor(lam=0.5).alpha_max(X, y, task=task) < 0.3
    assert _auto_label(est, X, y, task).startswith("ladm")
    est = RobustMTLRegressor(lam=0.5, alpha=0.5 * RobustMTLRegressor(lam=0.5).alpha_max(
        X, y, task=task))
    assert _auto_label(est, X, y, task) == "fista"
    # the subproblems of divide-and-conquer (set by its _make_solver while it divides)
    est._validate_params()
    data, _, _ = est._convert(X, y, task)
    datafit = est._make_datafit(data)
    est._dividing = True
    assert est._auto_candidates(datafit, est._make_penalty(datafit)) == ("ladm",)
