"""One job of ``multitask benchmark``: a model cross-validated on one training part and
scored on its test part; the check that a model can run on the data; the jobs run on
several processes.

Used by :func:`multitask.benchmark.run_benchmark`, which looks the job function up in its
own module (so that a run can be observed job by job).
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable

import numpy as np

from multitask.benchmark_result import SPECTRUM_MODEL, _stem


def _amse(y, pred, task=None) -> tuple[float, int]:
    """aMSE over the tasks whose test targets vary (NaN if none does), and the number of
    tasks left out because their test targets are all equal (``Var(y_t) = 0``)."""
    from multitask.metrics import amse, per_task

    try:
        return float(amse(y, pred, task)), 0
    except ValueError:
        pairs = per_task(y, pred, task)
        vals = [float(np.mean((a - b) ** 2)) / float(np.var(a)) for a, b in pairs
                if np.var(a) > 0]
        return (float(np.mean(vals)) if vals else float("nan")), len(pairs) - len(vals)


def _regression_scores(search, X_te, y_te) -> dict:
    from multitask.metrics import nmse

    pred = search.predict(X_te)
    if isinstance(y_te, list):
        y_all, p_all = np.concatenate(y_te), np.concatenate(pred)
        task = np.concatenate([np.full(len(v), t) for t, v in enumerate(y_te)])
        value, left_out = _amse(y_all, p_all, task)
        return {"nmse": float(nmse(y_all, p_all)), "amse": value,
                "amse_tasks_left_out": left_out}
    pred = np.asarray(pred).reshape(y_te.shape)
    value, left_out = _amse(y_te, pred)
    return {"nmse": float(nmse(y_te, pred)), "amse": value, "amse_tasks_left_out": left_out}


def _classification_scores(search, X_te, y_te) -> dict:
    from multitask.metrics import roc_auc

    scores = search.decision_function(X_te)
    pred = search.predict(X_te)
    if isinstance(y_te, list):
        scores = [np.asarray(s).ravel() for s in scores]
        right = np.concatenate([np.asarray(p).ravel() == v for p, v in zip(pred, y_te,
                                                                           strict=True)])
    else:
        scores = np.asarray(scores).reshape(y_te.shape)
        right = (np.asarray(pred).reshape(y_te.shape) == y_te).ravel()
    per_task_auc = np.asarray(roc_auc(y_te, scores, average=None))  # NaN: one class in test
    defined = per_task_auc[~np.isnan(per_task_auc)]
    return {"auc": float(defined.mean()) if defined.size else float("nan"),
            "accuracy": float(np.mean(right)),
            "auc_tasks_left_out": int(per_task_auc.size - defined.size)}


def _rows_per_task(y) -> float:
    """The median number of rows per task (the rows of a shared design)."""
    if isinstance(y, list):
        return float(np.median([len(v) for v in y]))
    return float(np.asarray(y).shape[0])


def _rate(y, exposure):
    """The rate ``y / exposure`` of counts (scikit-learn's way: fitted with
    ``sample_weight=exposure``), per task or per row of a shared design."""
    if isinstance(y, list):
        return [v / w for v, w in zip(y, exposure, strict=True)]
    return y / np.asarray(exposure)[:, None]


def _job(name: str, split: int, data, kind: str, fixed: dict, n_alphas: int,
         alpha_ratio: float, cv: int, random_state: int, limit_threads: bool,
         options: dict | None = None) -> dict:
    """Cross-validate one model on one training part and score it on the test part.

    ``data`` is ``(X_train, y_train, X_test, y_test)``, with the exposures of both parts
    after them for counts (the models then fit the rate ``y / exposure`` with
    ``sample_weight=exposure``). Returns the job's record: the model, the split, the metrics
    (and the number of tasks left out of the per-task one), the cross-validation rule
    applied (``selection``: ``"kfold"`` or ``"loo"``, ``cv_folds``, ``train_rows``: the
    median training rows per task), ``test_rows``, ``fit_seconds``, the chosen ``params``,
    and the trace-norm model's ``coef`` on split 0 (the task-class columns as rows for more
    than two classes).
    """
    import multitask
    from multitask.benchmark_kinds import cv_scorer, test_scores

    X_tr, y_tr, X_te, y_te = data[:4]
    w_tr, w_te = (data[4], data[5]) if len(data) > 4 else (None, None)
    options = options or {}
    y_fit = y_tr if w_tr is None else _rate(y_tr, w_tr)
    limiter = None
    if limit_threads:
        from threadpoolctl import threadpool_limits

        limiter = threadpool_limits(1)
    try:
        est = getattr(multitask, name)(**fixed)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence notes of grid points far from the best
            search = multitask.MultiTaskCV(est, cv=cv, n_alphas=n_alphas,
                                           alpha_ratio=alpha_ratio,
                                           scoring=cv_scorer(kind, options, y_tr),
                                           random_state=random_state + split)
            search.fit(X_tr, y_fit, **({} if w_tr is None else {"sample_weight": w_tr}))
        seconds = time.perf_counter() - t0
        if kind == "classification":
            scores = _classification_scores(search, X_te, y_te)
        elif kind == "regression":
            scores = _regression_scores(search, X_te, y_te)
        else:
            scores = test_scores(kind, options, search, X_te, y_te, w_te, y_tr)
    finally:
        if limiter is not None:
            limiter.restore_original_limits()
    params = {k: float(v) if isinstance(v, (int, float, np.number)) else v
              for k, v in search.best_params_.items() if k not in fixed}
    out = {"model": name, "split": split, **scores, "fit_seconds": seconds, "params": params,
           "selection": str(getattr(search, "selection_", "kfold")),
           "cv_folds": int(getattr(search, "n_splits_", cv)),
           "train_rows": _rows_per_task(y_tr), "test_rows": _rows_per_task(y_te)}
    if _stem(name) == _stem(SPECTRUM_MODEL) and split == 0:
        coef = np.array(search.best_estimator_.coef_, copy=True)
        out["coef"] = coef.reshape(-1, coef.shape[-1]) if coef.ndim > 2 else coef
    return out

def _cannot_run(cls: type, fixed: dict, split: tuple, kind: str) -> str | None:
    """Why a model cannot run on the data (None when it can): its default grid fails on the
    first training part, or, for the kinds with a loss of their own (counts, classes,
    quantiles, outliers), a fit at the strongest value of that grid fails (the model or its
    solvers refuse the loss). The fit is capped at 20 iterations, its warnings silenced."""
    X0, y0 = split[0], split[1]
    w0 = split[4] if len(split) > 4 else None
    if w0 is not None:
        y0 = _rate(y0, w0)
    weights = {} if w0 is None else {"sample_weight": w0}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = cls(**fixed)
            grid = est.default_grid(X0, y0, n_alphas=2, **weights)
            if kind in ("regression", "classification"):
                return None
            first = {k: v[0] for k, v in grid.items() if len(v)}
            max_iter = est.get_params(deep=False).get("max_iter")
            if isinstance(max_iter, (int, np.integer)) and not isinstance(max_iter, bool):
                first["max_iter"] = min(int(max_iter), 20)
            est.set_params(**first).fit(X0, y0, **weights)
    except (ValueError, TypeError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


#: Environment variables that cap the thread pools of the worker processes (joblib's list).
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMBA_NUM_THREADS",
                "NUMEXPR_NUM_THREADS")


def _run_parallel(job: Callable[..., dict], jobs: list[tuple[str, int]], workers: int,
                  job_args: Callable, finish: Callable[[dict], None],
                  over_time: Callable[[], bool]) -> None:
    """Run ``job`` (:func:`_job`) on each of ``jobs`` on ``workers`` processes (loky, as
    joblib does), at most ``workers`` at a time: a job starts when another ends, unless
    ``over_time()``; ``finish(record)`` as each ends. The jobs running when the time is
    over are waited for and kept. On an exception (Ctrl-C included) the workers are stopped
    and the exception propagates."""
    # The executor is this call's own, never loky's process-wide reusable one: joblib takes
    # that one over in later ``Parallel`` calls of the same process and fails on it (it lacks
    # joblib's temporary-folder manager).
    from concurrent.futures import FIRST_COMPLETED, wait

    from joblib.externals.loky import ProcessPoolExecutor

    threads = str(max((os.cpu_count() or 1) // workers, 1))
    env = {v: os.environ.get(v, threads) for v in _THREAD_VARS}
    env.setdefault("ENABLE_IPC", os.environ.get("ENABLE_IPC", "1"))
    executor = ProcessPoolExecutor(max_workers=workers, env=env)
    todo = list(jobs)
    running: set = set()

    def submit() -> None:
        name, s = todo.pop(0)
        running.add(executor.submit(job, *job_args(name, s)))

    try:
        while todo and len(running) < workers:
            submit()
        while running:
            ended, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in ended:
                running.discard(future)
                record = future.result()
                if todo and not over_time():
                    submit()
                finish(record)
    except BaseException:
        for future in running:
            future.cancel()
        executor.shutdown(wait=False, kill_workers=True)
        raise
    executor.shutdown(wait=True)
