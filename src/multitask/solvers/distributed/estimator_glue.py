"""What the estimators call on distributed input: fit, alpha_max, predict and score.

The estimators of :mod:`multitask.estimators` call these functions from a hook of their base
class when given Dask collections or :class:`~multitask.solvers.distributed.blocks.TaskBlocks`
(in ``fit``, ``predict``, ``decision_function``, ``predict_proba``, ``score`` and
``alpha_max``). They take the estimator object as an argument and use its own conversion,
datafit and penalty (``est._convert``, ``est._make_datafit``, ``est._make_penalty``) and its
fitted-attribute tail (``est._store_result``, ``est._store_extra``), so the distributed model
is the in-memory one; this module imports no estimator.
"""

from __future__ import annotations

import numpy as np

from multitask.solvers.base import Solver
from multitask.solvers.distributed.blocks import TaskBlocks
from multitask.solvers.distributed.cluster import get_client, scatter_unique
from multitask.solvers.distributed.datafit import DataLayout, DistributedDatafit
from multitask.solvers.distributed.solver import DistributedProximalGradient

__all__ = ["estimator_alpha_max", "estimator_fit", "estimator_predict", "estimator_score"]


class _FromRaw:
    """Builds a block's datafit from ``(X, y, task)`` through the estimator's own conversion
    and datafit (``est._convert``, ``est._make_datafit``), so the block is the model the
    estimator would fit in memory on those tasks. Returns the classes of a classifier."""

    def __init__(self, est):
        self.est = est

    def __call__(self, payload):
        if not isinstance(payload, tuple):  # a ready datafit (TaskBlocks.from_datafits)
            want = self.est._loss_name()
            if getattr(payload, "name", want) != want:
                raise ValueError(f"The block's datafit is the {payload.name!r} loss but the "
                                 f"estimator fits the {want!r} loss.")
            fi = bool(getattr(self.est, "fit_intercept", False))
            if bool(getattr(payload, "fit_intercept", fi)) != fi:
                raise ValueError(f"The block's datafit has fit_intercept="
                                 f"{payload.fit_intercept} but the estimator fit_intercept={fi}.")
            return payload, None
        X, y, task = payload
        data, classes, _ = self.est._convert(X, y, task)
        return self.est._make_datafit(data), classes


def _light_copy(est, rows: np.ndarray | None = None):
    """An unfitted copy of ``est`` (its solver replaced by "auto", so that no client is
    copied), or, with ``rows``, a fitted copy holding only those tasks (for prediction)."""
    params = est.get_params(deep=False)
    if "solver" in params:
        params["solver"] = "auto"
    light = type(est)(**params)
    if rows is not None:
        light.coef_ = est.coef_[rows]
        light.intercept_ = est.intercept_[rows]
        light.tasks_ = np.asarray(est.tasks_)[rows]
        light.n_features_in_ = est.n_features_in_
        light.input_format_ = "long"
        if getattr(est, "_is_classifier", False):
            light.classes_ = est.classes_
    return light


#: The datafit builders that give a sum over tasks (the classifiers' adds the multinomial loss
#: of more than two classes, refused on distributed input by :func:`estimator_fit`).
_SUM_OVER_TASKS = ("MultiTaskEstimator._make_datafit", "MultiTaskClassifierBase._make_datafit")


def _check_estimator(est) -> None:
    qual = type(est)._make_datafit.__qualname__
    if qual not in _SUM_OVER_TASKS:
        raise ValueError(f"{type(est).__name__} builds its own datafit ({qual}), which is not a "
                         "sum over tasks: it has no distributed fit.")
    if getattr(est, "formulation", "penalized") != "penalized":
        raise ValueError("The distributed fit solves the penalized formulation only.")
    if getattr(est, "n_groups", 1) != 1:
        raise ValueError("The distributed fit solves the whole problem: n_groups must be 1 "
                         "(divide-and-conquer is another solver).")


def _client_for(est, X):
    if getattr(X, "_is_task_blocks", False):
        return X.client
    solver = getattr(est, "solver", None)
    if isinstance(solver, DistributedProximalGradient) and solver.client is not None:
        return solver.client
    return get_client(None)


def _distributed_solver(est, client) -> DistributedProximalGradient:
    solver = est.solver
    if isinstance(solver, DistributedProximalGradient):
        return solver
    if isinstance(solver, Solver) or solver not in ("auto", "fista", "pg"):
        raise ValueError(f"Distributed input is fitted by DistributedProximalGradient: solver "
                         f"must be 'auto', 'fista', 'pg' or a DistributedProximalGradient, got "
                         f"{solver!r}.")
    return DistributedProximalGradient(client=client, max_iter=int(est.max_iter),
                                       tol=float(est.tol), accelerated=solver != "pg")


def _as_blocks(est, X, y, task, client) -> TaskBlocks:
    if getattr(X, "_is_task_blocks", False):
        if y is not None or task is not None:
            raise ValueError("TaskBlocks hold their targets and task ids: pass y=None and no "
                             "task (e.g. fit(blocks, None)).")
        return X
    if getattr(est, "task_column", None) is not None:
        raise ValueError("With Dask collections pass the task ids as task=, not task_column.")
    return TaskBlocks.from_dask(X, y, task, client=client)


def estimator_fit(est, X, y, task=None):
    """``est.fit`` on Dask collections (long format) or :class:`TaskBlocks`: the blocks'
    datafits are built on the workers and solved by :class:`DistributedProximalGradient`;
    every fitted attribute is set as by the in-memory fit (``input_format_`` is ``"long"``).
    """
    _check_estimator(est)
    client = _client_for(est, X)
    blocks = _as_blocks(est, X, y, task, client)
    solver = _distributed_solver(est, client)
    ddf = DistributedDatafit(blocks, _FromRaw(_light_copy(est)),
                             blas_threads=solver.blas_threads)
    try:
        if ddf.classes is not None and len(ddf.classes) > 2:
            raise ValueError(f"{type(est).__name__}: more than two classes are not supported "
                             "on distributed input (Dask collections or TaskBlocks): fit in "
                             "memory.")
        penalty = est._make_penalty(ddf)
        solver.check(ddf, penalty)
        shape = penalty.linear_map.variable_shape(ddf.data.n_features, ddf.data.n_tasks)
        # the fitted model lists the tasks sorted, as the in-memory long format does; the
        # blocks keep their own order
        tasks = ddf.data.tasks
        order = np.argsort(tasks, kind="stable")
        inverse = np.empty_like(order)
        inverse[order] = np.arange(len(order))
        layout = DataLayout(tasks[order], ddf.data.n_features, ddf.data.n_rows)
        coef_init, intercept_init = est._warm_start_point(layout, shape)
        if coef_init is not None:
            coef_init = np.asarray(coef_init)[..., inverse]
        if intercept_init is not None:
            intercept_init = (np.asarray(intercept_init)[inverse] if ddf.has_intercept_variable
                              else None)
        result = solver.solve(ddf, penalty, coef_init=coef_init, intercept_init=intercept_init)
        result.coef = np.ascontiguousarray(result.coef[..., order])
        result.W = np.ascontiguousarray(result.W[:, order])
        result.intercept = result.intercept[order]
        if result.intercept_variable is not None:
            result.intercept_variable = result.intercept_variable[order]
        est.input_format_ = "long"
        est.tasks_ = layout.tasks
        est.n_features_in_ = ddf.data.n_features
        if getattr(est, "_is_classifier", False):
            est.classes_ = ddf.classes
        if ddf.name == "huber":  # the fitted scales, each task's from its own rows
            scales = ddf.task_scales(result.W[:, inverse], None if result.intercept_variable
                                     is None else result.intercept_variable[inverse])
            loss_state = _FittedScales(scales[order])
        est._store_result(result, penalty, layout, solver)
        est._store_extra(result, penalty, ddf)
        if ddf.name == "huber":
            est._store_loss_state(result, loss_state)
    finally:
        ddf.close()
    return est


class _FittedScales:
    """What an estimator's ``_store_loss_state`` reads of a datafit with fitted per-task
    scales (``scores`` and ``task_scales``), standing for the blocks' datafits: the scales at
    the solution, computed on the workers (:meth:`DistributedDatafit.task_scales`)."""

    def __init__(self, scales: np.ndarray):
        self._scales = np.asarray(scales, dtype=np.float64)

    def scores(self, W, b=None) -> None:
        return None  # the scores stay on the workers

    def task_scales(self, z=None) -> np.ndarray:
        return self._scales


def estimator_alpha_max(est, X, y, task=None) -> float:
    """``est.alpha_max`` on distributed input: one gradient at zero per block and the
    penalty's ``alpha_max`` reduction (``"blockwise"`` penalties)."""
    _check_estimator(est)
    client = _client_for(est, X)
    blocks = _as_blocks(est, X, y, task, client)
    ddf = DistributedDatafit(blocks, _FromRaw(_light_copy(est)))
    try:
        penalty = est._make_penalty(ddf)
        if "blockwise" not in penalty.capabilities:
            raise ValueError(f"The {penalty.name} penalty is not 'blockwise': no distributed "
                             "alpha_max.")
        return ddf.alpha_max(penalty)
    finally:
        ddf.close()


def _task_rows(est, labels: np.ndarray) -> np.ndarray:
    index = {v: i for i, v in enumerate(np.asarray(est.tasks_).tolist())}
    try:
        return np.array([index[v] for v in np.asarray(labels).tolist()], dtype=np.int64)
    except KeyError as exc:
        raise ValueError(f"Unknown task id {exc.args[0]!r}: the model was not fitted on it.") \
            from None


def _apply_block(light, method: str, raw) -> np.ndarray:
    X, _, task = raw
    return np.asarray(getattr(light, method)(X, task=task))


def _apply_part(light, method: str, X, task) -> np.ndarray:
    X = X.to_numpy(dtype=np.float64) if hasattr(X, "to_numpy") else np.asarray(X)
    task = task.to_numpy() if hasattr(task, "to_numpy") else np.asarray(task).ravel()
    return np.asarray(getattr(light, method)(X, task=task))


def _deviance_power(est) -> float | None:
    """The Tweedie power of a log-link loss (whose ``score`` is D^2), else None."""
    loss = est._loss_name() if hasattr(est, "_loss_name") else None
    if loss == "tweedie":
        return float(est.power)
    return {"poisson": 1.0, "gamma": 2.0}.get(str(loss))


def _deviance_stats(y: np.ndarray, pred: np.ndarray, power: float) -> np.ndarray:
    """``[n, sum y, sum u(y), sum d_p(y, pred)]``: what the pooled D^2 of power ``p`` needs
    of a part (:func:`_pooled_d2`), with ``u(y) = y log y`` (``p = 1``), ``log y`` (``p =
    2``) or ``y^(2-p)``, and ``d_p`` scikit-learn's unit deviance."""
    from scipy.special import xlogy
    from sklearn.metrics import mean_tweedie_deviance

    pred = np.maximum(pred, np.finfo(np.float64).tiny)
    if power == 1.0:
        u = xlogy(y, y)
    elif power == 2.0:
        u = np.log(y)
    else:
        u = y ** (2.0 - power)
    dev = float(mean_tweedie_deviance(y, pred, power=power)) * len(y) if len(y) else 0.0
    return np.array([len(y), float(np.sum(y)), float(np.sum(u)), dev])


def _pooled_d2(S: np.ndarray, power: float) -> float:
    """``1 - sum d_p(y, pred) / sum d_p(y, ybar)`` from the parts' :func:`_deviance_stats`
    (the deviance of the pooled mean ``ybar`` from sums: ``2 sum (u - y log ybar - y +
    ybar)`` for ``p = 1``, ``2 sum (log ybar - u + y / ybar - 1)`` for ``p = 2``, ``2 sum (u
    / ((1-p)(2-p)) - y ybar^(1-p) / (1-p) + ybar^(2-p) / (2-p))`` otherwise): scikit-learn's
    ``d2_tweedie_score`` of the pooled rows."""
    n, sy, su, dev = (float(v) for v in S.sum(axis=0))
    c = sy / n
    p = power
    if p == 1.0:
        null = 2.0 * (su - sy * np.log(c) - sy + n * c)
    elif p == 2.0:
        null = 2.0 * (n * np.log(c) - su + sy / c - n)
    else:
        null = 2.0 * (su / ((1 - p) * (2 - p)) - sy * c ** (1 - p) / (1 - p)
                      + n * c ** (2 - p) / (2 - p))
    if not null > 0:
        raise ValueError("The targets scored are constant: D^2 is undefined.")
    return 1.0 - dev / null


def _score_stats(light, X, y, task) -> np.ndarray:
    """``[n, mean(y), sum (y - mean)^2, sum (y - pred)^2]`` (regressors), the
    :func:`_deviance_stats` of a log-link loss, or ``[n, correct]`` (classifiers)."""
    X = X.to_numpy(dtype=np.float64) if hasattr(X, "to_numpy") else np.asarray(X)
    y = y.to_numpy() if hasattr(y, "to_numpy") else np.asarray(y).ravel()
    task = task.to_numpy() if hasattr(task, "to_numpy") else np.asarray(task).ravel()
    pred = np.asarray(light.predict(X, task=task))
    if getattr(light, "_is_classifier", False):
        return np.array([len(y), float(np.sum(pred == y))])
    y = y.astype(np.float64)
    power = _deviance_power(light)
    if power is not None:
        return _deviance_stats(y, pred.astype(np.float64), power)
    mu = float(y.mean()) if len(y) else 0.0
    return np.array([len(y), mu, float(np.sum((y - mu) ** 2)), float(np.sum((y - pred) ** 2))])


def _score_block(light, raw) -> np.ndarray:
    X, y, task = raw
    return _score_stats(light, X, y, task)


def _partitions(X, y, task):
    """Aligned per-partition delayed objects of ``X`` (and ``y``) and ``task``."""
    import dask.array as da

    # unoptimized graphs: keys already sent to the scheduler (by the fit's shuffle) keep
    # their task, as Dask requires
    def parts(v, rows=None):
        if isinstance(v, da.Array):
            if v.ndim == 2:
                v = v.rechunk({1: -1})
                return list(v.to_delayed(optimize_graph=False)[:, 0])
            return list((v.rechunk(rows) if rows is not None else v).to_delayed(
                optimize_graph=False))
        return list(v.to_delayed(optimize_graph=False))

    rows = X.chunks[0] if isinstance(X, da.Array) else None
    px, pt = parts(X), parts(task, rows)
    py = parts(y, rows) if y is not None else [None] * len(px)
    if not (len(px) == len(pt) == len(py)):
        raise ValueError("X, y and task must have the same partitions (rows) as Dask "
                         "collections.")
    return px, py, pt


def estimator_predict(est, method: str, X, task=None):
    """``est.<method>(X, task)`` (``"_scores"``, ``"predict"``, ...) on distributed input.

    Returns a Dask array, computed on the workers: for :class:`TaskBlocks`, the blocks' rows
    in block order (each block's rows in its own order); for Dask collections, the rows of
    ``X`` in order. Each block receives only the coefficients of its tasks; each partition of
    a Dask collection receives the whole model (scattered once to every worker).
    """
    import dask
    import dask.array as da

    client = _client_for(est, X)
    extra: tuple = ()
    if method == "predict_proba":
        extra = (2,)
    dtype = est.classes_.dtype if method == "predict" and getattr(
        est, "_is_classifier", False) else np.float64
    if getattr(X, "_is_task_blocks", False):
        if task is not None:
            raise ValueError("TaskBlocks hold their task ids: pass no task.")
        if X.kind != "raw":
            raise ValueError("These blocks are datafits (TaskBlocks.from_datafits): they can be "
                             "fitted, not predicted on.")
        arrays = []
        for fut, labels, n in zip(X.futures, X.block_tasks, X.n_rows, strict=True):
            light = _light_copy(est, _task_rows(est, labels))
            out = client.submit(_apply_block, light, method, fut, pure=False)
            arrays.append(da.from_delayed(dask.delayed(out), shape=(int(n), *extra),
                                          dtype=dtype))
        return da.concatenate(arrays)
    if task is None:
        raise ValueError("Predicting on Dask collections needs the task id of each row (task=).")
    light = scatter_unique(client, _light_copy(est, np.arange(len(est.tasks_))),
                            broadcast=True)
    px, _, pt = _partitions(X, None, task)
    arrays = [da.from_delayed(dask.delayed(_apply_part)(light, method, xp, tp),
                              shape=(np.nan, *extra), dtype=dtype) for xp, tp in
              zip(px, pt, strict=True)]
    return da.concatenate(arrays, allow_unknown_chunksizes=True)


def estimator_score(est, X, y, task=None) -> float:
    """``est.score`` on distributed input: R^2 of the pooled rows (regressors; D^2 of the
    deviance for a log-link loss) or the mean accuracy (classifiers), from per-block sums
    (exact pooled statistics)."""
    import dask

    client = _client_for(est, X)
    if getattr(X, "_is_task_blocks", False):
        if y is not None or task is not None:
            raise ValueError("TaskBlocks hold their targets and task ids: call score(blocks, "
                             "None).")
        futs = [client.submit(_score_block, _light_copy(est, _task_rows(est, labels)), fut,
                              pure=False)
                for fut, labels in zip(X.futures, X.block_tasks, strict=True)]
        stats = client.gather(futs)
    else:
        if task is None or y is None:
            raise ValueError("Scoring on Dask collections needs y and task=.")
        light = scatter_unique(client, _light_copy(est, np.arange(len(est.tasks_))),
                                broadcast=True)
        px, py, pt = _partitions(X, y, task)
        stats = client.gather(client.compute(
            [dask.delayed(_score_stats)(light, a, b, c) for a, b, c in zip(px, py, pt,
                                                                          strict=True)]))
    S = np.array(stats, dtype=np.float64)
    n = S[:, 0].sum()
    if n == 0:
        raise ValueError("No rows to score.")
    if getattr(est, "_is_classifier", False):
        return float(S[:, 1].sum() / n)
    power = _deviance_power(est)
    if power is not None:
        return _pooled_d2(S, power)
    mean = float(np.sum(S[:, 0] * S[:, 1]) / n)
    ss_tot = float(np.sum(S[:, 2] + S[:, 0] * (S[:, 1] - mean) ** 2))  # pooled (Chan et al.)
    ss_res = float(S[:, 3].sum())
    if ss_tot == 0:
        return 1.0 if ss_res == 0 else 0.0
    return 1.0 - ss_res / ss_tot
