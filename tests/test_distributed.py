"""The distributed proximal gradient (multitask.solvers.distributed) and the 'blockwise'
capability of the penalties.

* The blockwise protocol reproduces each penalty's prox, value and alpha_max from any split of
  the task columns (no Dask needed).
* On a LocalCluster of 2 workers, the distributed fit of the l1, l2,1, trace-norm and robust
  (low rank + outlier tasks) models reaches the objective of the in-memory fit to 1e-6
  relative, the objectives recomputed here from the fitted coefficients by their formula;
  the same for Dask DataFrames and arrays in long format, Parquet files, blocks made by a
  function on the workers, and a classifier; prediction and scoring on the cluster equal the
  in-memory ones; what crosses the network per iteration does not grow with the number of
  tasks.
"""

from __future__ import annotations

import numpy as np
import pytest

from multitask import (
    IndependentLassoRegressor,
    L21Classifier,
    L21Regressor,
    PooledRegressor,
    RobustMTLRegressor,
    SparseLowRankRegressor,
    TraceNormRegressor,
)
from multitask.penalties import (
    L1,
    L21,
    ColumnL2,
    LowRankOutlier,
    NoPenalty,
    Ridge,
    SparseLowRank,
    SumOfParts,
    TraceNorm,
)
from multitask.solvers import ProximalGradient

BLOCKWISE = [L1(0.3), L21(0.5), ColumnL2(0.4), TraceNorm(2.0), Ridge(0.7), NoPenalty(),
             LowRankOutlier(1.5, 0.6), SumOfParts([L21(0.4), L1(0.2)])]


def _blockwise(pen, V, G, step, cuts):
    """The prox, its value and alpha_max through the blockwise protocol, blocks ``cuts``."""
    blocks = np.split(V, cuts, axis=-1)
    S = None
    for B in blocks:
        S = pen.combine_stats(S, pen.block_stats(B))
    plan, value = pen.block_plan(S, step)
    outs = [pen.block_prox(B, plan, step) for B in blocks]
    value += sum(pen.block_value(U, plan) for U in outs)
    A = None
    for B in np.split(G, cuts, axis=-1):
        A = pen.combine_stats(A, pen.block_alpha_stats(B))
    return np.concatenate(outs, axis=-1), value, pen.alpha_max_from_stats(A)


@pytest.mark.parametrize("pen", BLOCKWISE, ids=lambda p: p.name)
@pytest.mark.parametrize("cuts", [[], [1], [3, 4, 11], list(range(1, 20))])
def test_blockwise_protocol_reproduces_prox_value_and_alpha_max(pen, cuts):
    rng = np.random.default_rng(len(cuts))
    d, m = 6, 20
    assert "blockwise" in pen.capabilities
    V = 3 * rng.standard_normal(pen.linear_map.variable_shape(d, m))
    G = rng.standard_normal((d, m))
    for step in (0.0, 0.05, 0.7, 50.0):
        out, value, amax = _blockwise(pen, V, G, step, cuts)
        ref = pen.prox(V, step)
        np.testing.assert_allclose(out, ref, atol=1e-12 * max(1.0, np.abs(V).max()))
        assert value == pytest.approx(pen.value(ref), rel=1e-12, abs=1e-12)
        if step == 0.0:  # the reduction at step 0 gives the value at any point
            assert value == pytest.approx(pen.value(V), rel=1e-12, abs=1e-12)
        expected = pen.alpha_max(G)
        if np.isfinite(expected):
            assert amax == pytest.approx(expected, rel=1e-12)
        else:
            assert amax == expected or type(pen) is SumOfParts


def test_penalties_without_blockwise_prox_are_refused():
    from multitask.solvers.distributed import DistributedProximalGradient

    slr = SparseLowRank(0.1, 1.0)  # its trace-ball part has no blockwise projection
    assert "blockwise" not in slr.capabilities
    assert "blockwise" in LowRankOutlier(1.0, 1.0).capabilities

    class _Loss:
        name, capabilities = "squared", frozenset({"gradient"})

    miss = DistributedProximalGradient().missing(_Loss(), slr)
    assert any("blockwise" in msg for msg in miss)


# ------------------------------------------------------------------------------ on a cluster
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def _lists(m=8, n=20, d=5, seed=0, shift=0.5):
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((d, 2))
    Xs = [rng.standard_normal((n + t % 3, d)) + shift for t in range(m)]
    ys = [X @ (B @ rng.standard_normal(2)) + 0.3 * rng.standard_normal(len(X)) + 1.0
          for X in Xs]
    return Xs, ys


def _objective(est, Xs, ys, omega):
    """``sum_t 1/(2 n_t) ||X_t w_t + b_t - y_t||^2 + Omega``, from the fitted attributes."""
    W, b = est.coef_, est.intercept_
    loss = sum(0.5 * np.mean((X @ W[t] + b[t] - y) ** 2) for t, (X, y) in
               enumerate(zip(Xs, ys, strict=True)))
    return loss + omega(est)


MODELS = [
    (IndependentLassoRegressor, {"alpha": 0.05},
     lambda e: 0.05 * np.abs(e.coef_).sum()),
    (L21Regressor, {"alpha": 0.3},
     lambda e: 0.3 * np.linalg.norm(e.coef_, axis=0).sum()),
    (TraceNormRegressor, {"alpha": 0.5},
     lambda e: 0.5 * np.linalg.svd(e.coef_, compute_uv=False).sum()),
    (RobustMTLRegressor, {"alpha": 0.4, "lam": 0.7},
     lambda e: 0.4 * (np.linalg.svd(e.low_rank_component_, compute_uv=False).sum()
                      + 0.7 * np.linalg.norm(e.outlier_component_, axis=1).sum())),
]


@pytest.mark.parametrize("model", MODELS, ids=lambda mdl: mdl[0].__name__)
def test_distributed_fit_reaches_the_in_memory_objective(client, model):
    from multitask.solvers.distributed import DistributedProximalGradient

    Est, params, omega = model
    Xs, ys = _lists()
    mem = Est(**params, solver=ProximalGradient(tol=1e-9, max_iter=20000)).fit(Xs, ys)
    dist = Est(**params, solver=DistributedProximalGradient(tol=1e-9, max_iter=20000,
                                                            n_blocks=3)).fit(Xs, ys)
    assert dist.converged_ and dist.optimality_ <= 1e-9
    assert dist.solver_info_["n_workers"] == 2 and dist.solver_info_["n_blocks"] == 3
    f_mem, f_dist = _objective(mem, Xs, ys, omega), _objective(dist, Xs, ys, omega)
    assert abs(f_dist - f_mem) <= 1e-6 * abs(f_mem)
    assert dist.solver_result_.final_objective == pytest.approx(f_dist, rel=1e-10)
    np.testing.assert_allclose(dist.coef_, mem.coef_, atol=1e-5)
    np.testing.assert_allclose(dist.intercept_, mem.intercept_, atol=1e-5)


def _long(m=9, n=24, d=4, seed=1, classify=False):
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((d, 2))
    X = rng.standard_normal((m * n, d)) + 0.5
    tid = np.repeat(np.arange(m), n)
    W = B @ rng.standard_normal((2, m))
    y = np.einsum("ij,ij->i", X, W[:, tid].T) + 0.3 * rng.standard_normal(m * n)
    if classify:
        y = np.where(y > np.median(y), "pos", "neg")
    perm = rng.permutation(m * n)
    task = np.array([f"store-{t}" for t in tid])
    return X[perm], y[perm], task[perm]


def _frames(X, y, task, npartitions=3):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    cols = [f"f{j}" for j in range(X.shape[1])]
    df = pd.DataFrame(X, columns=cols).assign(y=y, task=task)
    ddf = dd.from_pandas(df, npartitions=npartitions)
    return df, ddf, cols


def test_dask_dataframe_fit_predict_score_alpha_max(client):
    X, y, task = _long()
    _, ddf, cols = _frames(X, y, task)
    mem = TraceNormRegressor(alpha=0.3, tol=1e-9).fit(X, y, task=task)
    est = TraceNormRegressor(alpha=0.3, tol=1e-9).fit(ddf[cols], ddf["y"], task=ddf["task"])
    assert list(est.tasks_) == list(mem.tasks_)  # sorted, as the in-memory long format
    assert est.solver_result_.final_objective == pytest.approx(
        mem.solver_result_.final_objective, rel=1e-6)
    np.testing.assert_allclose(est.coef_, mem.coef_, atol=1e-5)
    pred = est.predict(ddf[cols], task=ddf["task"])
    assert hasattr(pred, "compute")  # lazy, computed on the workers
    np.testing.assert_allclose(pred.compute(), mem.predict(X, task=task), atol=1e-5)
    assert est.score(ddf[cols], ddf["y"], task=ddf["task"]) == pytest.approx(
        mem.score(X, y, task=task), rel=1e-8)
    assert est.alpha_max(ddf[cols], ddf["y"], task=ddf["task"]) == pytest.approx(
        mem.alpha_max(X, y, task=task), rel=1e-10)
    # the fitted model also predicts in memory, as any long-format model
    np.testing.assert_allclose(est.predict(X[:5], task=task[:5]), mem.predict(X[:5],
                                                                               task=task[:5]),
                               atol=1e-5)


def test_dask_arrays_in_long_format(client):
    da = pytest.importorskip("dask.array")
    X, y, task = _long(seed=2)
    ids = np.unique(task, return_inverse=True)[1]
    mem = L21Regressor(alpha=0.2, tol=1e-9).fit(X, y, task=ids)
    Xd, yd, td = (da.from_array(X, chunks=(50, 4)), da.from_array(y, chunks=50),
                  da.from_array(ids, chunks=50))
    est = L21Regressor(alpha=0.2, tol=1e-9).fit(Xd, yd, task=td)
    assert est.solver_result_.final_objective == pytest.approx(
        mem.solver_result_.final_objective, rel=1e-6)
    np.testing.assert_allclose(est.predict(Xd, task=td).compute(), mem.predict(X, task=ids),
                               atol=1e-5)


def test_classifier_on_the_cluster(client):
    X, y, task = _long(seed=3, classify=True)
    _, ddf, cols = _frames(X, y, task, npartitions=2)
    mem = L21Classifier(alpha=0.01, tol=1e-9).fit(X, y, task=task)
    est = L21Classifier(alpha=0.01, tol=1e-9).fit(ddf[cols], ddf["y"], task=ddf["task"])
    assert list(est.classes_) == ["neg", "pos"]
    assert est.solver_result_.final_objective == pytest.approx(
        mem.solver_result_.final_objective, rel=1e-6)
    np.testing.assert_allclose(est.intercept_, mem.intercept_, atol=1e-5)
    labels = est.predict(ddf[cols], task=ddf["task"]).compute()
    np.testing.assert_array_equal(labels, mem.predict(X, task=task))
    proba = est.predict_proba(ddf[cols], task=ddf["task"]).compute()
    np.testing.assert_allclose(proba, mem.predict_proba(X, task=task), atol=1e-5)
    assert est.score(ddf[cols], ddf["y"], task=ddf["task"]) == pytest.approx(
        mem.score(X, y, task=task))


def _block(k, m_per=3, n=15, d=4):
    rng = np.random.default_rng(50 + k)
    X = rng.standard_normal((m_per * n, d))
    task = np.repeat(np.arange(k * m_per, (k + 1) * m_per), n)
    return X, X @ np.arange(1.0, d + 1) + rng.standard_normal(len(X)), task


def test_blocks_made_by_a_function_on_the_workers(client):
    from multitask.solvers.distributed import TaskBlocks

    blocks = TaskBlocks.from_function(_block, 4, client=client)
    assert blocks.n_tasks == 12 and blocks.kind == "raw" and blocks.n_features == 4
    est = RobustMTLRegressor(alpha=0.3, lam=1.0, tol=1e-8).fit(blocks, None)
    parts = [_block(k) for k in range(4)]
    X = np.concatenate([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    task = np.concatenate([p[2] for p in parts])
    mem = RobustMTLRegressor(alpha=0.3, lam=1.0, tol=1e-8, solver="fista").fit(X, y,
                                                                               task=task)
    assert est.solver_result_.final_objective == pytest.approx(
        mem.solver_result_.final_objective, rel=1e-6)
    assert est.score(blocks, None) == pytest.approx(mem.score(X, y, task=task), rel=1e-6)
    np.testing.assert_allclose(est.predict(blocks).compute(), mem.predict(X, task=task),
                               atol=1e-4)


def test_parquet_blocks(client, tmp_path):
    pytest.importorskip("pyarrow")
    from multitask.solvers.distributed import TaskBlocks

    X, y, task = _long(seed=4)
    df, _, cols = _frames(X, y, task)
    paths = []
    for i, part in enumerate(np.array_split(np.unique(task), 3)):
        path = tmp_path / f"block{i}.parquet"
        df[df.task.isin(part)].to_parquet(path)
        paths.append(path)
    blocks = TaskBlocks.from_parquet(paths, target="y", task="task", client=client)
    est = TraceNormRegressor(alpha=0.3, tol=1e-9).fit(blocks, None)
    mem = TraceNormRegressor(alpha=0.3, tol=1e-9).fit(X, y, task=task)
    assert est.solver_result_.final_objective == pytest.approx(
        mem.solver_result_.final_objective, rel=1e-6)
    # a task in two files is refused
    df[df.task == task[0]].to_parquet(tmp_path / "dup.parquet")
    with pytest.raises(ValueError, match="more than one block"):
        TaskBlocks.from_parquet([*paths, tmp_path / "dup.parquet"], target="y", task="task",
                                client=client)


def test_warm_start_resumes_on_the_cluster(client):
    X, y, task = _long(seed=5)
    _, ddf, cols = _frames(X, y, task)
    args = (ddf[cols], ddf["y"])
    est = TraceNormRegressor(alpha=0.3, tol=1e-8, warm_start=True).fit(*args, task=ddf["task"])
    cold = TraceNormRegressor(alpha=0.25, tol=1e-8).fit(*args, task=ddf["task"])
    est.set_params(alpha=0.25).fit(*args, task=ddf["task"])
    assert est.n_iter_ < cold.n_iter_
    assert est.solver_result_.final_objective == pytest.approx(
        cold.solver_result_.final_objective, rel=1e-7)


def test_what_crosses_the_network_does_not_grow_with_the_tasks(client):
    from multitask.solvers.distributed import DistributedProximalGradient

    d = 5
    sent = {}
    for m in (6, 30):
        Xs, ys = _lists(m=m, d=d, seed=m)
        for Est, p in [(IndependentLassoRegressor, 0.05), (L21Regressor, 0.3),
                       (TraceNormRegressor, 0.5)]:
            est = Est(alpha=p, solver=DistributedProximalGradient(tol=1e-6, n_blocks=2))
            info = est.fit(Xs, ys).solver_info_
            sent[Est.__name__, m] = (info["reduction_bytes"], info["plan_bytes"],
                                     info["bytes_up_per_iteration"])
    for name in ("IndependentLassoRegressor", "L21Regressor", "TraceNormRegressor"):
        assert sent[name, 6][:2] == sent[name, 30][:2]
        assert sent[name, 30][2] <= 1.2 * sent[name, 6][2] + 200
    assert sent["IndependentLassoRegressor", 30][:2] == (0, 0)  # nothing to combine
    assert sent["L21Regressor", 30][:2] == (8 * d, 8 * d)  # squared row norms, row scales
    assert sent["TraceNormRegressor", 30][0] <= 8 * d * d  # the R factor
    assert sent["TraceNormRegressor", 30][1] == 8 * d * d  # the d x d matrix M


def test_equal_data_scattered_twice_get_fresh_keys(client):
    """Dask names scattered data by a hash of their content by default; equal data scattered
    for a second fit (or predict_proba after predict) must not share the key of the first
    call's futures, whose release may reach the scheduler after the new scatter."""
    from multitask.data import as_multitask_data
    from multitask.solvers.distributed import TaskBlocks

    Xs, ys = _lists(m=4)
    data = as_multitask_data(Xs, ys)[0]
    first = TaskBlocks.from_data(data, 2, client=client)
    second = TaskBlocks.from_data(data, 2, client=client)
    assert not {f.key for f in first.futures} & {f.key for f in second.futures}
    del first  # released while the second blocks are in use: they keep their data
    assert [b.n_tasks for b in client.gather(second.futures)] == [2, 2]


def test_refusals(client):
    from multitask.solvers.distributed import TaskBlocks

    X, y, task = _long(seed=6)
    _, ddf, cols = _frames(X, y, task)
    args = (ddf[cols], ddf["y"])
    with pytest.raises(ValueError, match="blockwise"):
        SparseLowRankRegressor(alpha=0.1, radius=1.0).fit(*args, task=ddf["task"])
    with pytest.raises(ValueError, match="not a sum over tasks"):
        PooledRegressor().fit(*args, task=ddf["task"])
    with pytest.raises(ValueError, match="DistributedProximalGradient"):
        L21Regressor(solver="bcd").fit(*args, task=ddf["task"])
    with pytest.raises(ValueError, match="task"):
        L21Regressor().fit(*args)
    blocks = TaskBlocks.from_function(_block, 2, client=client)
    with pytest.raises(ValueError, match="y=None"):
        L21Regressor().fit(blocks, np.zeros(3))


def test_the_examples_of_the_distributed_page_run():
    """Every ```python block of docs/distributed.md runs, in order, in one namespace (each
    starts its own LocalCluster)."""
    import re
    from pathlib import Path

    page = Path(__file__).resolve().parent.parent / "docs" / "distributed.md"
    blocks = re.findall(r"^```python\n(.*?)^```", page.read_text(), flags=re.S | re.M)
    assert len(blocks) == 3
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(page), "exec"), namespace)  # noqa: S102 - the page's own code
    assert namespace["model"].converged_


@pytest.mark.slow
def test_worker_processes_agree_with_the_in_memory_fits():
    """The same agreement on a LocalCluster of 2 worker processes (data, datafits and plans
    pickled), for the four models and a classifier, with blocks of uneven sizes."""
    from multitask.solvers.distributed import DistributedProximalGradient

    Xs, ys = _lists(m=13, n=30, d=6, seed=7)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        for Est, params, omega in MODELS:
            mem = Est(**params, solver=ProximalGradient(tol=1e-10, max_iter=20000)).fit(Xs, ys)
            dist = Est(**params, solver=DistributedProximalGradient(
                tol=1e-10, max_iter=20000, n_blocks=5)).fit(Xs, ys)
            f_mem, f_dist = _objective(mem, Xs, ys, omega), _objective(dist, Xs, ys, omega)
            assert abs(f_dist - f_mem) <= 1e-6 * abs(f_mem), Est.__name__
        yc = [(y > np.median(y)).astype(int) for y in ys]
        mem = L21Classifier(alpha=0.01, solver=ProximalGradient(tol=1e-10)).fit(Xs, yc)
        dist = L21Classifier(alpha=0.01, solver=DistributedProximalGradient(tol=1e-10)).fit(
            Xs, yc)
        assert dist.solver_result_.final_objective == pytest.approx(
            mem.solver_result_.final_objective, rel=1e-6)
