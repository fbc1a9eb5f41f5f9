"""The task-block solver of Dask input with the smooth losses beyond least squares: the
Poisson, Gamma and Tweedie deviances and the Huber loss (its scale fitted per task, on the
workers that hold the task) reach the in-memory fit's objective; prediction (the mean), the
score (D^2 for the log-link losses), alpha_max and the Huber scales agree with the in-memory
ones; a step constant estimated too small backtracks instead of diverging; the pinball loss is
refused with the reason."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from loss_cases import loss_targets

import multitask as mt
from multitask.estimators.base import NotCertifiedWarning
from multitask.solvers.distributed import DistributedProximalGradient

distributed = pytest.importorskip("distributed")

SMOOTH = ("poisson", "gamma", "tweedie", "huber")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def _tasks(loss, m=6, d=4, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    W = 0.3 * rng.standard_normal((d, m))
    Xs = [scale * rng.standard_normal((20 + 3 * t, d)) for t in range(m)]
    eta = [X @ W[:, t] / scale + 0.4 for t, X in enumerate(Xs)]
    ys = loss_targets(loss, eta, rng)
    return Xs, ys


def _fit(est, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotCertifiedWarning)  # the measure, not a gap
        return est.fit(*args)


@pytest.mark.parametrize("loss", SMOOTH)
def test_the_blocks_reach_the_in_memory_objective(client, loss):
    Xs, ys = _tasks(loss)
    kw = {"loss": loss, "power": 1.4}
    mem = mt.L21Regressor(0.05, tol=1e-10, max_iter=50_000, **kw).fit(Xs, ys)
    dist = _fit(mt.L21Regressor(0.05, solver=DistributedProximalGradient(
        tol=1e-9, max_iter=20_000, n_blocks=3), **kw), Xs, ys)
    assert dist.converged_ and dist.solver_info_["n_blocks"] == 3
    f_mem = mem.solver_result_.final_objective
    assert dist.solver_result_.final_objective == pytest.approx(f_mem, rel=1e-7)
    np.testing.assert_allclose(dist.coef_, mem.coef_, atol=2e-5)
    np.testing.assert_allclose(dist.intercept_, mem.intercept_, atol=2e-5)
    if loss == "huber":
        np.testing.assert_allclose(dist.scale_, mem.scale_, rtol=1e-5)
    else:
        assert not hasattr(dist, "scale_")


def _long(loss, seed=1):
    Xs, ys = _tasks(loss, seed=seed)
    X = np.vstack(Xs)
    y = np.concatenate(ys)
    task = np.concatenate([np.full(len(v), f"shop-{t}") for t, v in enumerate(ys)])
    perm = np.random.default_rng(seed).permutation(len(y))
    return X[perm], y[perm], task[perm]


@pytest.mark.parametrize("loss", ["poisson", "huber"])
def test_dask_dataframes_fit_predict_score_alpha_max(client, loss):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y, task = _long(loss)
    cols = [f"f{j}" for j in range(X.shape[1])]
    frame = dd.from_pandas(pd.DataFrame(X, columns=cols).assign(y=y, task=task),
                           npartitions=3)
    mem = mt.L21Regressor(0.05, loss=loss, tol=1e-10, max_iter=50_000).fit(X, y, task=task)
    est = _fit(mt.L21Regressor(0.05, loss=loss, tol=1e-9, max_iter=20_000),
               frame[cols], frame["y"], frame["task"])
    assert list(est.tasks_) == list(mem.tasks_)
    np.testing.assert_allclose(est.coef_, mem.coef_, atol=2e-5)
    pred = est.predict(frame[cols], task=frame["task"]).compute()
    np.testing.assert_allclose(pred, mem.predict(X, task=task), rtol=1e-4)
    if loss == "poisson":
        assert np.all(pred > 0)  # the mean, through the log link
    assert est.score(frame[cols], frame["y"], task=frame["task"]) == pytest.approx(
        mem.score(X, y, task=task), rel=1e-6)
    assert est.alpha_max(frame[cols], frame["y"], task=frame["task"]) == pytest.approx(
        mem.alpha_max(X, y, task=task), rel=1e-10)


def test_a_step_estimated_too_small_backtracks(client):
    """Counts of about 1e3 with features of scale 3: the estimate of the curvature at the
    intercept-only fit is below the curvature along the first steps; the step constant is
    doubled, the run stays finite and reaches the in-memory objective."""
    Xs, ys = _tasks("poisson", seed=3, scale=3.0)
    ys = [np.random.default_rng(4).poisson(1e3 * np.exp(np.clip(X[:, 0] / 3.0, -3, 3)))
          .astype(float) for X in Xs]
    est = mt.L21Regressor(0.01, loss="poisson")
    estimate = est._make_datafit(mt.data.as_multitask_data(Xs, ys)[0]).lipschitz()
    mem = mt.L21Regressor(0.01, loss="poisson", tol=1e-10, max_iter=50_000).fit(Xs, ys)
    dist = _fit(mt.L21Regressor(0.01, loss="poisson", solver=DistributedProximalGradient(
        tol=1e-9, max_iter=50_000, n_blocks=2)), Xs, ys)
    assert dist.solver_info_["lipschitz"] >= 2.0 * estimate  # backtracked
    assert dist.converged_ and np.all(np.isfinite(dist.coef_))
    assert np.all(np.isfinite(dist.objective_))
    assert dist.solver_result_.final_objective == pytest.approx(
        mem.solver_result_.final_objective, rel=1e-7)


def test_the_squared_loss_runs_without_backtracking(client):
    """A loss with a curvature bound keeps its fixed step ``1 / L`` (the bound)."""
    Xs, ys = _tasks("huber")
    dist = _fit(mt.L21Regressor(0.05, solver=DistributedProximalGradient(tol=1e-8,
                                                                        n_blocks=2)), Xs, ys)
    mem = mt.L21Regressor(0.05).fit(Xs, ys)
    assert dist.solver_info_["lipschitz"] == pytest.approx(
        mem._make_datafit(mt.data.as_multitask_data(Xs, ys)[0]).lipschitz(), rel=1e-12)


def test_the_pinball_loss_is_refused_with_the_reason(client):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y, task = _long("huber")
    frame = dd.from_pandas(pd.DataFrame(X).assign(y=y, task=task), npartitions=2)
    with pytest.raises(ValueError, match="'quantile' loss is not supported with Dask.*smooth"):
        mt.L21Regressor(0.05, loss="quantile").fit(frame[[0, 1, 2, 3]], frame["y"],
                                                   frame["task"])
