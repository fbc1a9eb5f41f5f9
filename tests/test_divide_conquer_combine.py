"""The combine steps of divide-and-conquer robust MTL, each against an independent computation.

``project`` (the paper's Algorithm 2), ``concatenate``, ``svd`` (leading subspace of the
concatenated low-rank blocks), ``anchor`` (anchor tasks shared by every group) and ``refine``
(a warm-started refinement on the full problem); the estimator's choice of the number of
groups and its warnings; the same result on the serial, joblib and Dask backends.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from multitask.data import as_multitask_data
from multitask.datasets import make_outlier_tasks
from multitask.estimators.robust import (
    AUTO_MAX_GROUPS,
    MIN_TASKS_TO_DIVIDE,
    RobustMTLRegressor,
)
from multitask.losses import Squared
from multitask.penalties import LowRankOutlier
from multitask.solvers import DivideAndConquer, LinearizedADMM, ProximalGradient
from multitask.solvers.divide_conquer import (
    COMBINES,
    DEFAULT_COMBINE,
    anchor_partition,
    leading_subspace,
)

PEN = LowRankOutlier(0.02, 1.0)


@pytest.fixture(scope="module")
def problem():
    """16 tasks of a rank-3 model plus 2 outlier tasks, 12 features, 20 rows each."""
    b = make_outlier_tasks(n_tasks=16, n_features=12, n_samples=20, rank=3, n_outliers=2,
                           noise=0.1, random_state=3)
    data, _ = as_multitask_data(b.X, b.y)
    return Squared(data, fit_intercept=True)


_CACHE: dict = {}


def _dc(datafit, combine, n_groups=3, **kw):
    """The divide-and-conquer result (LADM in the groups), cached for serial runs."""
    key = (id(datafit), combine, n_groups, tuple(sorted((k, repr(v)) for k, v in kw.items())))
    if kw.get("backend", "serial") == "serial" and key in _CACHE:
        return _CACHE[key]
    solver = DivideAndConquer(LinearizedADMM(max_iter=200), n_groups=n_groups, combine=combine,
                              random_state=1, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = solver.solve(datafit, PEN)
    if kw.get("backend", "serial") == "serial":
        _CACHE[key] = out
    return out


def test_project_is_the_projection_on_the_first_groups_column_space(problem):
    res = _dc(problem, "project")
    L = res.info["coef_concat"][0]
    g0 = res.info["groups"][0]
    U, s, _ = np.linalg.svd(L[:, g0], full_matrices=False)
    r = int(np.sum(s > max(L[:, g0].shape) * np.finfo(float).eps * s[0]))
    np.testing.assert_allclose(res.coef[0], U[:, :r] @ (U[:, :r].T @ L), atol=1e-10)
    np.testing.assert_array_equal(res.coef[1], res.info["coef_concat"][1])
    assert res.info["rank"] == r <= len(g0)


def test_concatenate_keeps_the_blocks(problem):
    res = _dc(problem, "concatenate")
    np.testing.assert_array_equal(res.coef, res.info["coef_concat"])
    assert res.info["rank"] is None


@pytest.mark.parametrize("rank", [None, 2])
def test_svd_is_the_best_rank_r_approximation_from_numpy(problem, rank):
    res = _dc(problem, "svd", rank=rank)
    L = res.info["coef_concat"][0]
    U, s, _ = np.linalg.svd(L, full_matrices=False)
    r = max(res.info["block_ranks"]) if rank is None else rank
    assert res.info["rank"] == r
    expected = U[:, :r] @ (U[:, :r].T @ L)  # U_r U_r^T L
    np.testing.assert_allclose(res.coef[0], expected, atol=1e-9)
    # Eckart-Young: the error is the tail of the spectrum
    assert np.linalg.norm(L - res.coef[0]) == pytest.approx(np.sqrt(np.sum(s[r:] ** 2)),
                                                            rel=1e-8)
    np.testing.assert_array_equal(res.coef[1], res.info["coef_concat"][1])


def test_leading_subspace_matches_numpy_on_a_block_matrix():
    rng = np.random.default_rng(0)
    L = rng.standard_normal((30, 4)) @ rng.standard_normal((4, 17))
    blocks = [np.array([0, 3, 5, 9]), np.array([1, 2, 4, 6, 7]), np.arange(8, 17)[::-1]]
    blocks[2] = np.setdiff1d(np.arange(17), np.concatenate(blocks[:2]))
    U, s, ranks = leading_subspace(L, blocks)
    s_np = np.linalg.svd(L, compute_uv=False)
    np.testing.assert_allclose(s, s_np[:4], rtol=1e-10)
    assert ranks == [4, 4, 4] and U.shape == (30, 4)
    U_np = np.linalg.svd(L, full_matrices=False)[0][:, :4]
    np.testing.assert_allclose(U @ U.T, U_np @ U_np.T, atol=1e-10)


def test_anchor_tasks_are_in_every_group(problem):
    anchors, groups = anchor_partition(16, 3, 1, 2)
    assert anchors.size == 2
    assert sorted(np.concatenate([anchors, *groups]).tolist()) == list(range(16))
    res = _dc(problem, "anchor", n_anchors=2)
    np.testing.assert_array_equal(res.info["anchors"], anchors)
    solved = res.info["solved_groups"]
    assert len(solved) == len(groups)
    for s, g in zip(solved, groups, strict=True):
        assert set(anchors) <= set(s.tolist()) and set(g) <= set(s.tolist())
    # each group solved its tasks and the anchors: its own solution, computed here
    base = LinearizedADMM(max_iter=200, warn=False)
    concat = res.info["coef_concat"]
    means = np.zeros((2, 12, 2))
    for s in solved:
        own = base.solve(Squared(problem.raw.subset_tasks(s), fit_intercept=True), PEN)
        np.testing.assert_array_equal(concat[..., s[2:]], own.coef[..., 2:])
        means += own.coef[..., :2] / len(solved)
    np.testing.assert_allclose(concat[..., anchors], means, atol=1e-14)
    # then the svd step on the columns
    L = concat[0]
    U = np.linalg.svd(L, full_matrices=False)[0][:, :res.info["rank"]]
    np.testing.assert_allclose(res.coef[0], U @ (U.T @ L), atol=1e-9)


def test_refine_decreases_the_objective_and_reaches_the_optimum(problem):
    full = ProximalGradient(max_iter=20000, tol=1e-5, warn=False).solve(problem, PEN)
    assert full.converged
    short = _dc(problem, "refine", refine_iter=5, refine_solver=ProximalGradient())
    combined = _dc(problem, "concatenate")
    # the refinement starts from the blocks as solved, or from the svd step at a given rank
    np.testing.assert_array_equal(short.info["coef_combined"], combined.coef)
    ranked = _dc(problem, "refine", refine_iter=5, rank=2, refine_solver=ProximalGradient())
    np.testing.assert_array_equal(ranked.info["coef_combined"],
                                  _dc(problem, "svd", rank=2).coef)
    assert short.final_objective < combined.final_objective
    assert short.info["refine_n_iter"] == 5
    long = _dc(problem, "refine", refine_iter=20000, refine_solver=ProximalGradient(tol=1e-5))
    assert long.info["refine_converged"]
    assert long.final_objective == pytest.approx(full.final_objective, rel=1e-4)
    np.testing.assert_allclose(long.W, full.W, atol=1e-3 * np.abs(full.W).max())


def test_svd_and_refine_beat_the_papers_combine_on_the_objective(problem):
    obj = {c: _dc(problem, c).final_objective for c in ("project", "svd", "refine")}
    assert obj["refine"] < obj["project"]


def test_results_bitwise_equal_on_serial_and_joblib_threads(problem):
    """Every combine through joblib (its threading backend: fast; worker processes and Dask
    in the slow test below)."""
    joblib = pytest.importorskip("joblib")
    with joblib.parallel_config(backend="threading"):
        for combine in COMBINES:
            a = _dc(problem, combine)
            b = _dc(problem, combine, backend="joblib", n_jobs=2)
            np.testing.assert_array_equal(a.coef, b.coef, err_msg=combine)
            np.testing.assert_array_equal(a.intercept, b.intercept, err_msg=combine)


@pytest.mark.slow  # starts joblib worker processes and a LocalCluster
def test_results_bitwise_equal_on_processes_and_dask(problem):
    distributed = pytest.importorskip("distributed")
    serial = {c: _dc(problem, c) for c in COMBINES}
    for c in COMBINES:
        other = _dc(problem, c, backend="joblib", n_jobs=2)
        np.testing.assert_array_equal(serial[c].coef, other.coef, err_msg=c)
        np.testing.assert_array_equal(serial[c].intercept, other.intercept, err_msg=c)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        for c in COMBINES:
            other = _dc(problem, c, backend=client)
            np.testing.assert_array_equal(serial[c].coef, other.coef, err_msg=c)
            np.testing.assert_array_equal(serial[c].intercept, other.intercept, err_msg=c)


# ----------------------------------------------------------------------------- estimator
def _tasks(n_tasks, rank, seed=0):
    return make_outlier_tasks(n_tasks=n_tasks, n_features=15, n_samples=20, rank=rank,
                              n_outliers=1, noise=0.1, random_state=seed, shared_X=True)


def _alpha(b, a):
    return a * RobustMTLRegressor().alpha_max(b.X, b.Y)


def test_estimator_default_combine_and_choice():
    b = _tasks(48, 2)
    alpha = _alpha(b, 0.1)
    est = RobustMTLRegressor(alpha=alpha, n_groups=4, random_state=0).fit(b.X, b.Y)
    assert est.combine == DEFAULT_COMBINE and est.solver_.combine == DEFAULT_COMBINE
    assert est.n_groups_ == 4 and len(est.task_groups_) == 4
    for combine in ("project", "anchor"):
        e = RobustMTLRegressor(alpha=alpha, n_groups=4, combine=combine,
                               random_state=0).fit(b.X, b.Y)
        assert e.solver_info_["combine"] == combine


def test_estimator_chooses_the_number_of_groups():
    b = _tasks(60, 2)
    est = RobustMTLRegressor(alpha=_alpha(b, 0.1), n_groups="auto", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        est.fit(b.X, b.Y)
    assert est.estimated_rank_ == 2
    # as many groups as keep 2 x rank tasks each, at most AUTO_MAX_GROUPS
    assert est.n_groups_ == min(AUTO_MAX_GROUPS, 60 // 4)
    assert len(est.task_groups_) == est.n_groups_
    b = _tasks(MIN_TASKS_TO_DIVIDE, 8)
    est = RobustMTLRegressor(alpha=_alpha(b, 0.1), n_groups="auto").fit(b.X, b.Y)
    r = est.estimated_rank_
    assert r >= 5 and est.n_groups_ == MIN_TASKS_TO_DIVIDE // (2 * r)


def test_estimator_warns_when_groups_are_below_the_rank():
    b = _tasks(MIN_TASKS_TO_DIVIDE, 8)
    with pytest.warns(UserWarning, match="below the rank the data call for"):
        est = RobustMTLRegressor(alpha=_alpha(b, 0.1), n_groups=10, random_state=0).fit(b.X,
                                                                                        b.Y)
    assert est.n_groups_ == 10 and est.estimated_rank_ > 4


def test_estimator_declines_to_divide_few_tasks_with_a_reason():
    b = _tasks(14, 3)
    alpha = _alpha(b, 0.1)
    with pytest.warns(UserWarning, match="declined.*14 tasks are fewer"):
        est = RobustMTLRegressor(alpha=alpha, n_groups="auto").fit(b.X, b.Y)
    assert est.n_groups_ == 1 and len(est.task_groups_) == 1
    full = RobustMTLRegressor(alpha=alpha).fit(b.X, b.Y)
    np.testing.assert_array_equal(est.coef_, full.coef_)
    # an explicit number of groups is used, with the rank warning (groups of 3, rank 4)
    with pytest.warns(UserWarning, match="groups of 3 tasks.*below the rank"):
        est = RobustMTLRegressor(alpha=alpha, n_groups=4, random_state=0).fit(b.X, b.Y)
    assert est.n_groups_ == 4


def test_solver_warns_when_a_group_block_has_full_rank():
    b = make_outlier_tasks(n_tasks=12, n_features=15, n_samples=20, rank=6, n_outliers=0,
                           noise=0.1, random_state=2)
    data, _ = as_multitask_data(b.X, b.y)
    solver = DivideAndConquer(LinearizedADMM(max_iter=300), n_groups=4, random_state=0)
    with pytest.warns(UserWarning, match="full rank"):
        solver.solve(Squared(data, True), LowRankOutlier(1e-4, 1.0))
    quiet = DivideAndConquer(LinearizedADMM(max_iter=300), n_groups=4, random_state=0,
                             check_rank=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quiet.solve(Squared(data, True), LowRankOutlier(1e-4, 1.0))
    assert not [w for w in caught if "full rank" in str(w.message)]
