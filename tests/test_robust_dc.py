"""Divide-and-conquer robust MTL gives bit-for-bit the same answer on every backend.

Serial, joblib worker processes, a 2-worker ``dask.distributed.LocalCluster`` (processes, on the
loopback interface) given as a ``Client``, the current client (``backend="dask"``) and joblib's
dask backend.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from multitask.data import as_multitask_data
from multitask.datasets import make_outlier_tasks
from multitask.estimators.robust import RobustMTLClassifier
from multitask.losses import Squared, SquaredHinge
from multitask.penalties import LowRankOutlier
from multitask.solvers import DivideAndConquer, LinearizedADMM, ProximalGradient

distributed = pytest.importorskip("distributed")
joblib = pytest.importorskip("joblib")


@pytest.fixture(scope="module")
def problems():
    """``(datafit, penalty, base solver, n_groups)`` of two problems: the squared hinge by
    LADM on per-task designs, the squared loss by FISTA on a shared sparse design."""
    b = make_outlier_tasks(n_tasks=22, n_features=20, n_samples=30, rank=2, n_outliers=3,
                           task_type="classification", random_state=0)
    hinge, _ = as_multitask_data(b.X, b.y, classification=True)
    rng = np.random.default_rng(1)
    X = sp.random(60, 40, density=0.2, format="csr", random_state=2)
    Y = X @ rng.standard_normal((40, 9)) + 0.1 * rng.standard_normal((60, 9))
    squared, _ = as_multitask_data(X, Y)  # shared sparse design
    return {
        "hinge-ladm": (SquaredHinge(hinge, True, center=True), LowRankOutlier(0.05, 1.0),
                       LinearizedADMM(), 4),
        "squared-fista": (Squared(squared, True), LowRankOutlier(0.01, 1.0),
                          ProximalGradient(), 2),
    }


def _dc(problem, random_state=7, backend="serial", **kw):
    datafit, penalty, base, n_groups = problem
    solver = DivideAndConquer(base, n_groups=n_groups, random_state=random_state,
                              backend=backend, **kw)
    return solver.solve(datafit, penalty)


def _same(a, b):
    return (np.array_equal(a.W, b.W) and np.array_equal(a.coef, b.coef)
            and np.array_equal(a.intercept, b.intercept)
            and all(np.array_equal(g, h) for g, h in zip(a.info["groups"], b.info["groups"],
                                                          strict=True)))


def test_backends_give_bitwise_identical_results(problems):
    serial = {k: _dc(p) for k, p in problems.items()}
    for k, p in problems.items():
        other = _dc(p, backend="joblib", n_jobs=2)
        assert _same(serial[k], other), k
        assert other.info["n_workers"] == 2
        # a different seed gives a different partition (the test can fail)
        assert not _same(serial[k], _dc(p, random_state=8))

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        for k, p in problems.items():
            via_client = _dc(p, backend=client)
            assert _same(serial[k], via_client), k
            assert via_client.info["n_workers"] == 2
            assert _same(serial[k], _dc(p, backend="dask"))
            with joblib.parallel_config(backend="dask"):
                assert _same(serial[k], _dc(p, backend="joblib"))
        # the estimator on the cluster (current client)
        b = make_outlier_tasks(n_tasks=12, n_features=10, n_samples=40, rank=2, n_outliers=2,
                               task_type="classification", random_state=3)
        kw = {"alpha": 0.05, "lam": 1.0, "n_groups": 3, "random_state": 0}
        ref = RobustMTLClassifier(**kw).fit(b.X, b.y)
        on_dask = RobustMTLClassifier(backend="dask", **kw).fit(b.X, b.y)
        np.testing.assert_array_equal(ref.coef_, on_dask.coef_)
        np.testing.assert_array_equal(ref.intercept_, on_dask.intercept_)


def test_dask_backend_without_client_is_a_clear_error(problems):
    try:
        distributed.get_client()
        pytest.skip("a dask client is already running in this process")
    except ValueError:
        pass
    with pytest.raises(ValueError, match="Client"):
        _dc(problems["hinge-ladm"], backend="dask")
