"""The main job, ``multitask benchmark``: every model that applies, on School or any data set.

Protocol (the School benchmark, made general):

* data: School (139 schools, 15,362 students, 27 features), shipped with the package, or any
  multi-task data set (:mod:`multitask.benchmark_data`: a data set of
  :mod:`multitask.datasets` by name, or the user's arrays or file); regression or binary
  classification, detected from the targets;
* splits: School's first ``n_splits`` of its 10 official 75% / 25% splits; otherwise (or with
  ``train_ratio=p``) random per-task splits with ``round(p * n_t)`` training rows, stratified
  by class for classification, or one random split of the rows for a shared design
  (:func:`~multitask.benchmark_data.benchmark_splits`);
* features standardized with the training part's pooled mean and standard deviation (every
  model fits an unpenalized intercept per task);
* each model's hyper-parameters chosen by :class:`~multitask.MultiTaskCV` inside the training
  part (``cv`` folds drawn within each task, on the rows of a shared design; the model's own
  default grid of ``n_alphas`` values, warm-started paths, the library's default selection
  rule and score: -nMSE, or the mean task AUC), then refitted on the whole training part;
* metrics on the test part: regression: pooled nMSE (test MSE / variance of the pooled test
  targets) and aMSE (the mean over tasks of MSE_t / Var(y_t)); classification: AUC (the mean
  over tasks of each task's ROC AUC) and accuracy (the share of test (row, task) pairs
  classified right), see :mod:`multitask.metrics`;
* a verdict (:func:`verdict`): the best multi-task model against the best independent
  baseline and the pooled baseline, the paired difference of the first metric over the
  splits, and on how many splits it holds.

The models are found, not listed: every ``*Regressor`` (regression) or ``*Classifier``
(classification) of ``multitask.__all__`` (a deprecated alias counted once) except the
generic model; the models that need a task graph or an order of the tasks in time run only
when the data carry one (:data:`SKIPPED` says why they are left out otherwise). A model whose
default grid fails on the data is reported as skipped with the reason. A new model of the
library therefore appears in the benchmark without any edit here.

Examples
--------
>>> from multitask.benchmark import run_school
>>> res = run_school(n_splits=1, models=["PooledRegressor"], n_alphas=3, n_jobs=1,
...                  show_progress=False)
>>> [row["model"] for row in res.rows]
['PooledRegressor']
"""

from __future__ import annotations

import csv
import os
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from multitask.benchmark_data import BenchmarkData, benchmark_splits, load_benchmark_data

__all__ = [
    "DEFAULT_CV",
    "DEFAULT_ALPHA_RATIO",
    "DEFAULT_N_ALPHAS",
    "DEFAULT_SPLITS",
    "INDEPENDENT",
    "POOLED",
    "SKIPPED",
    "BenchmarkResult",
    "SchoolBenchmark",
    "benchmark_models",
    "format_table",
    "format_verdict",
    "plot_benchmark",
    "plot_school",
    "result_columns",
    "run_benchmark",
    "run_school",
    "school_regressors",
    "split_columns",
    "verdict",
    "write_csv",
]

#: Splits used by default (``--splits``): School's first official ones, else random ones.
DEFAULT_SPLITS = 3
#: Size of each model's default grid (``--grid-size``).
DEFAULT_N_ALPHAS = 7
#: Smallest / largest value of each model's default grid (two decades: on School the chosen
#: values lie there, and the path is continued past the weak end when the best value is there).
DEFAULT_ALPHA_RATIO = 1e-2
#: Folds of the cross-validation inside each training part (``--cv-folds``).
DEFAULT_CV = 3

#: Models (name without ``Regressor`` / ``Classifier``) left out unless the data carry what
#: they need, and why.
_WHY = {
    "MultiTask": "the generic model: each of its penalties is a named model here",
    "GraphRegularized": "needs a task graph (without one it is the mean-regularized model plus "
                        "an l1 term)",
    "TemporalGroupLasso": "needs an order of the tasks in time",
    "FusedSparseGroupLasso": "needs an order of the tasks in time",
}
#: The models that run with a task graph (``--graph``), with an order of the tasks
#: (``--task-order``).
_NEEDS_GRAPH = ("GraphRegularized",)
_NEEDS_ORDER = ("TemporalGroupLasso", "FusedSparseGroupLasso")

#: Regressors of ``multitask.__all__`` left out of a run on data without a task graph or an
#: order of the tasks (School), and why; the classifiers of the same names alike.
SKIPPED: dict[str, str] = {f"{stem}Regressor": why for stem, why in _WHY.items()}

#: The independent baselines (one model per task) and the pooled baseline (one model for all
#: tasks), by name without ``Regressor`` / ``Classifier``; every other model is multi-task.
INDEPENDENT = ("IndependentRidge", "IndependentLasso")
POOLED = ("Pooled",)

#: Models whose fits take longest, started first so that parallel jobs end together.
_SLOW_FIRST = ("CappedTrace", "RobustMTL", "CappedL1", "TaskRelationship", "ClusteredMTL",
               "ConvexASO", "SparseLowRank", "DirtyModel", "MultiTaskKernel")

#: The model whose singular value spectrum the figure draws (its classifier alike).
SPECTRUM_MODEL = "TraceNormRegressor"

#: The metrics of each kind of problem: (key, label, larger is better); the first one sorts
#: the table and decides the verdict.
METRICS: dict[str, tuple[tuple[str, str, bool], ...]] = {
    "regression": (("nmse", "nMSE", False), ("amse", "aMSE", False)),
    "classification": (("auc", "AUC", True), ("accuracy", "accuracy", True)),
}

#: Columns of ``results.csv`` of a regression (one row per model, sorted by nMSE).
RESULT_COLUMNS = ("model", "nmse_mean", "nmse_std", "amse_mean", "amse_std", "n_splits",
                  "fit_seconds", "params")
#: Columns of ``splits.csv`` of a regression (one row per model and split).
SPLIT_COLUMNS = ("model", "split", "nmse", "amse", "fit_seconds", "params")


def result_columns(kind: str = "regression") -> tuple[str, ...]:
    """Columns of ``results.csv``: the model, ``<metric>_mean`` and ``_std`` per metric, the
    number of splits, the mean fit time and the chosen parameters."""
    stats = tuple(f"{k}_{s}" for k, _, _ in METRICS[kind] for s in ("mean", "std"))
    return ("model", *stats, "n_splits", "fit_seconds", "params")


def split_columns(kind: str = "regression") -> tuple[str, ...]:
    """Columns of ``splits.csv``: one row per model and split."""
    return ("model", "split", *(k for k, _, _ in METRICS[kind]), "fit_seconds", "params")


# ----------------------------------------------------------------------------- models
def _stem(name: str) -> str:
    return name.removesuffix("Regressor").removesuffix("Classifier")


def benchmark_models(kind: str = "regression", *, graph: bool = False,
                     ordered: bool = False) -> dict[str, type]:
    """The models the benchmark fits, by name, in the order of ``multitask.__all__``.

    Every class of ``multitask.__all__`` whose name ends in ``Regressor`` (``Classifier`` for
    classification) and that is a scikit-learn regressor (classifier), except the generic
    model, deprecated aliases (a class listed under a name other than its own, or one whose
    construction warns that it is deprecated), the graph-regularized model unless ``graph``,
    and the temporal models unless ``ordered``.
    """
    from sklearn.base import is_classifier, is_regressor

    import multitask

    suffix, check = (("Classifier", is_classifier) if kind == "classification"
                     else ("Regressor", is_regressor))
    left_out = {"MultiTask"}
    if not graph:
        left_out.update(_NEEDS_GRAPH)
    if not ordered:
        left_out.update(_NEEDS_ORDER)
    found = {}
    for name in multitask.__all__:
        obj = getattr(multitask, name, None)
        if not (isinstance(obj, type) and name.endswith(suffix)):
            continue
        if obj.__name__ != name or _stem(name) in left_out:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", FutureWarning)  # a deprecated alias
                fits = check(obj())
        except Exception:  # noqa: BLE001 - a class that cannot be built with defaults
            continue
        if fits:
            found[name] = obj
    return found


def school_regressors() -> dict[str, type]:
    """The regressors the School benchmark fits: :func:`benchmark_models` of a regression
    without a task graph or an order of the tasks."""
    return benchmark_models("regression")


def _resolve(models: Sequence[str] | None, available: dict[str, type],
             kind: str = "regression") -> list[str]:
    """Model names from user input (``TraceNorm`` or ``TraceNormRegressor``, any case)."""
    if models is None:
        return list(available)
    lookup = {}
    for name in available:
        lookup[name.lower()] = name
        lookup[_stem(name).lower()] = name
    out = []
    for m in models:
        key = str(m).strip().lower()
        if key not in lookup:
            stem = next((s for s in _WHY if s.lower() == _stem(str(m).strip()).lower()), None)
            if stem is not None:
                hint = {"GraphRegularized": "; give one with --graph FILE",
                        "TemporalGroupLasso": "; give it with --task-order",
                        "FusedSparseGroupLasso": "; give it with --task-order"}.get(stem, "")
                extra = f" ({_WHY[stem]}{hint})"
            elif _stem(str(m).strip()).lower() in lookup:
                extra = f" (the data are a {kind} problem)"
            else:
                extra = ""
            raise ValueError(f"Unknown model {m!r}{extra}: choose among "
                             f"{', '.join(available)}.")
        if lookup[key] not in out:
            out.append(lookup[key])
    if not out:
        raise ValueError("No model to run: give at least one name to --models.")
    return out


def _fixed_params(name: str, data: BenchmarkData) -> dict:
    """Parameters a model gets from the data rather than from the grid (the task graph)."""
    return {"graph": data.graph} if _stem(name) in _NEEDS_GRAPH else {}


# ----------------------------------------------------------------------------- results
@dataclass
class BenchmarkResult:
    """Results of :func:`run_benchmark` (and :func:`run_school`).

    Attributes
    ----------
    rows : list of dict
        One row per model, best first by the first metric: the keys of
        :func:`result_columns`.
    split_rows : list of dict
        One row per model and split (the keys of :func:`split_columns`).
    skipped : dict
        Models left out: name -> reason (the default grid failed on the data).
    trace_coef : ndarray of shape (n_tasks, n_features) or None
        ``coef_`` of the trace-norm model on the first split (None when that model did not
        run), whose singular values the figure draws.
    setting : str
        The splits, in words.
    seconds : float
        Wall time of the run.
    name : str
        The data set.
    kind : {"regression", "classification"}
    task_word : str
        What a task is called (``"schools"``, ``"tasks"``).
    shared : bool
        The data have a shared design (the CV folds are drawn on the rows).
    classes : tuple or None
        Classification: the labels ``(negative, positive)``.
    cv : int or None
        Folds of the model selection.
    verdict : dict or None
        :func:`verdict` of the run.
    """

    rows: list[dict]
    split_rows: list[dict]
    skipped: dict[str, str] = field(default_factory=dict)
    trace_coef: np.ndarray | None = None
    setting: str = ""
    seconds: float = 0.0
    name: str = "School"
    kind: str = "regression"
    task_word: str = "schools"
    shared: bool = False
    classes: tuple | None = None
    cv: int | None = None
    verdict: dict | None = None


#: The name of the result of the first versions, which ran on School only.
SchoolBenchmark = BenchmarkResult


# ----------------------------------------------------------------------------- one job
def _amse(y, pred, task=None) -> float:
    """aMSE, over the tasks whose test targets vary (NaN if none does)."""
    from multitask.metrics import amse, per_task

    try:
        return float(amse(y, pred, task))
    except ValueError:
        vals = [float(np.mean((a - b) ** 2)) / float(np.var(a))
                for a, b in per_task(y, pred, task) if np.var(a) > 0]
        return float(np.mean(vals)) if vals else float("nan")


def _regression_scores(search, X_te, y_te) -> dict:
    from multitask.metrics import nmse

    pred = search.predict(X_te)
    if isinstance(y_te, list):
        y_all, p_all = np.concatenate(y_te), np.concatenate(pred)
        task = np.concatenate([np.full(len(v), t) for t, v in enumerate(y_te)])
        return {"nmse": float(nmse(y_all, p_all)), "amse": _amse(y_all, p_all, task)}
    pred = np.asarray(pred).reshape(y_te.shape)
    return {"nmse": float(nmse(y_te, pred)), "amse": _amse(y_te, pred)}


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


def _job(name: str, split: int, data, kind: str, fixed: dict, n_alphas: int,
         alpha_ratio: float, cv: int, random_state: int, limit_threads: bool) -> dict:
    """Cross-validate one model on one training part and score it on the test part."""
    import multitask

    X_tr, y_tr, X_te, y_te = data
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
                                           random_state=random_state + split).fit(X_tr, y_tr)
        seconds = time.perf_counter() - t0
        scores = (_classification_scores(search, X_te, y_te) if kind == "classification"
                  else _regression_scores(search, X_te, y_te))
    finally:
        if limiter is not None:
            limiter.restore_original_limits()
    params = {k: float(v) if isinstance(v, (int, float, np.number)) else v
              for k, v in search.best_params_.items() if k not in fixed}
    out = {"model": name, "split": split, **scores, "fit_seconds": seconds, "params": params}
    if _stem(name) == _stem(SPECTRUM_MODEL) and split == 0:
        out["coef"] = np.array(search.best_estimator_.coef_, copy=True)
    return out


def _format_params(params: list[dict]) -> str:
    """The chosen values over splits: ``alpha=12.8`` or ``alpha=9.5..34`` (min..max)."""
    names = sorted({k for p in params for k in p})
    parts = []
    for k in names:
        vals = [p[k] for p in params if k in p]
        try:
            nums = np.asarray(vals, dtype=float)
        except (TypeError, ValueError):
            parts.append(f"{k}={vals[0]}")
            continue
        lo, hi = float(nums.min()), float(nums.max())
        parts.append(f"{k}={lo:.3g}" if np.isclose(lo, hi) else f"{k}={lo:.3g}..{hi:.3g}")
    return " ".join(parts)


def _sort_key(value: float, larger_is_better: bool) -> tuple:
    """Best first, NaN last."""
    if np.isnan(value):
        return (1, 0.0)
    return (0, -value if larger_is_better else value)


# ----------------------------------------------------------------------------- the run
def _check_options(n_alphas: int, cv: int, alpha_ratio: float) -> None:
    for label, value, low in (("grid size", n_alphas, 1), ("number of folds", cv, 2)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"The {label} must be an integer >= {low}, got {value!r}.")
    if not 0 < float(alpha_ratio) < 1:
        raise ValueError(f"The grid ratio must be in (0, 1), got {alpha_ratio!r}.")


def _setting(data: BenchmarkData, n: int, train_ratio: float | None) -> str:
    plural = "s" if n > 1 else ""
    if train_ratio is None and data.official_splits is not None:
        return f"{n} official 75/25 split{plural}"
    from multitask.benchmark_data import DEFAULT_TRAIN_RATIO

    ratio = DEFAULT_TRAIN_RATIO if train_ratio is None else train_ratio
    rows = " of the rows" if data.shared else ""
    return f"{n} random split{plural}{rows}, training ratio {ratio:g}"


def run_benchmark(data: BenchmarkData | str, n_splits: int = DEFAULT_SPLITS,
                  models: Sequence[str] | None = None, *, train_ratio: float | None = None,
                  n_alphas: int = DEFAULT_N_ALPHAS, alpha_ratio: float = DEFAULT_ALPHA_RATIO,
                  cv: int = DEFAULT_CV, n_jobs: int | None = None, random_state: int = 0,
                  show_progress: bool = True) -> BenchmarkResult:
    """Run the benchmark on a data set.

    Parameters
    ----------
    data : BenchmarkData or str
        The data (:func:`~multitask.benchmark_data.make_benchmark_data`), or the name of a
        data set of :data:`~multitask.benchmark_data.DATASETS`.
    n_splits : int, default=DEFAULT_SPLITS
        Number of splits (official ones, at most 10 for School, unless ``train_ratio``).
    models : sequence of str, optional
        Model names (``"TraceNormRegressor"`` or ``"TraceNorm"``); default: every model of
        :func:`benchmark_models` for the kind of the data.
    train_ratio : float, optional
        Random per-task splits (rows of a shared design) with this training fraction;
        default: the official splits, or :data:`~multitask.benchmark_data.DEFAULT_TRAIN_RATIO`.
    n_alphas : int, default=DEFAULT_N_ALPHAS
        Size of each model's default grid.
    alpha_ratio : float, default=DEFAULT_ALPHA_RATIO
        Smallest / largest value of each model's default grid.
    cv : int, default=DEFAULT_CV
        Folds of the cross-validation inside each training part (within each task).
    n_jobs : int, optional
        Parallel processes over (model, split) pairs; default: every core.
    random_state : int, default=0
        Seed of the folds (and of the random splits).
    show_progress : bool, default=True
        Report finished fits through :mod:`multitask.progress`.

    Returns
    -------
    BenchmarkResult

    Raises
    ------
    ValueError
        On an unknown model name, an invalid number of splits, folds or grid size.
    """
    t_start = time.perf_counter()
    _check_options(n_alphas, cv, alpha_ratio)
    if isinstance(data, str):
        data = load_benchmark_data(data)
    kind = data.kind
    available = benchmark_models(kind, graph=data.graph is not None, ordered=data.ordered)
    names = _resolve(models, available, kind)
    splits = benchmark_splits(data, n_splits, train_ratio, random_state)

    skipped = {}
    X0, y0 = splits[0][0], splits[0][1]
    for name in list(names):  # a model whose default grid fails on the data is left out
        try:
            available[name](**_fixed_params(name, data)).default_grid(X0, y0, n_alphas=2)
        except (ValueError, TypeError) as exc:
            skipped[name] = f"{type(exc).__name__}: {exc}"
            names.remove(name)
    if not names:
        raise ValueError(f"No model can run on {data.name}: " + "; ".join(
            f"{k}: {v}" for k, v in skipped.items()))

    order = sorted(names, key=lambda n: _SLOW_FIRST.index(_stem(n)) if _stem(n) in _SLOW_FIRST
                   else len(_SLOW_FIRST))
    jobs = [(name, s) for s in range(len(splits)) for name in order]
    cores = os.cpu_count() or 1
    workers = cores if n_jobs is None else (cores if n_jobs < 0 else max(1, int(n_jobs)))
    workers = min(workers, len(jobs))
    results = []
    from multitask.progress import progress

    def args(name: str, s: int, limit: bool) -> tuple:
        return (name, s, splits[s], kind, _fixed_params(name, data), n_alphas, alpha_ratio, cv,
                random_state, limit)

    bar = progress(len(jobs), f"{data.name} benchmark",
                   **({} if show_progress else {"mode": "off"}))
    with bar:
        if workers == 1:
            for name, s in jobs:
                results.append(_job(*args(name, s, False)))
                bar.advance()
        else:
            from joblib import Parallel, delayed

            par = Parallel(n_jobs=workers, return_as="generator_unordered")
            for res in par(delayed(_job)(*args(name, s, True)) for name, s in jobs):
                results.append(res)
                bar.advance()

    trace_coef = next((r.pop("coef") for r in results if "coef" in r), None)
    results.sort(key=lambda r: (r["split"], names.index(r["model"])))
    metrics = METRICS[kind]
    rows = []
    for name in names:
        mine = [r for r in results if r["model"] == name]
        row: dict[str, Any] = {"model": name}
        for key, _, _ in metrics:
            vals = np.array([r[key] for r in mine])
            row[f"{key}_mean"], row[f"{key}_std"] = float(vals.mean()), float(vals.std())
        row.update({"n_splits": len(mine),
                    "fit_seconds": float(np.mean([r["fit_seconds"] for r in mine])),
                    "params": _format_params([r["params"] for r in mine])})
        rows.append(row)
    first, _, larger = metrics[0]
    rows.sort(key=lambda r: _sort_key(r[f"{first}_mean"], larger))
    split_rows = [{**r, "params": _format_params([r["params"]])} for r in results]
    res = BenchmarkResult(rows=rows, split_rows=split_rows, skipped=skipped,
                          trace_coef=trace_coef,
                          setting=_setting(data, len(splits), train_ratio),
                          name=data.name, kind=kind, task_word=data.task_word,
                          shared=data.shared, classes=data.classes, cv=cv)
    res.verdict = verdict(res)
    res.seconds = time.perf_counter() - t_start
    return res


def run_school(n_splits: int = DEFAULT_SPLITS, models: Sequence[str] | None = None, *,
               train_ratio: float | None = None, n_alphas: int = DEFAULT_N_ALPHAS,
               alpha_ratio: float = DEFAULT_ALPHA_RATIO, cv: int = DEFAULT_CV,
               n_jobs: int | None = None, random_state: int = 0,
               show_progress: bool = True) -> BenchmarkResult:
    """Run the School benchmark: :func:`run_benchmark` on ``"school"`` (see there)."""
    _check_options(n_alphas, cv, alpha_ratio)
    return run_benchmark(load_benchmark_data("school"), n_splits, models,
                         train_ratio=train_ratio, n_alphas=n_alphas, alpha_ratio=alpha_ratio,
                         cv=cv, n_jobs=n_jobs, random_state=random_state,
                         show_progress=show_progress)


# ----------------------------------------------------------------------------- verdict
def _best(rows: list[dict], names: list[str], key: str, larger: bool) -> str | None:
    cands = [r for r in rows if r["model"] in names and not np.isnan(r[f"{key}_mean"])]
    if not cands:
        return None
    return min(cands, key=lambda r: _sort_key(r[f"{key}_mean"], larger))["model"]


def verdict(res: BenchmarkResult) -> dict | None:
    """The best multi-task model against the best independent and the pooled baseline.

    For each baseline ``b`` run, the paired gain of the best multi-task model ``a`` (best mean
    of the first metric) over the splits ``s``: ``g_s = m_s(b) - m_s(a)`` for a metric where
    lower is better (nMSE), ``m_s(a) - m_s(b)`` where larger is better (AUC); positive when
    the multi-task model is better. Reported: the mean of ``g_s``, its standard deviation over
    the splits, its smallest and largest value, and the number of splits with ``g_s > 0``.

    Returns
    -------
    dict or None
        ``{"metric", "label", "best", "comparisons": [{"baseline", "role", "gains", "mean",
        "std", "min", "max", "n_better", "n_splits"}], "holds": "every split" | "on average"
        | "no"}``; None when no multi-task model or no baseline ran.
    """
    key, label, larger = METRICS[res.kind][0]
    models = [r["model"] for r in res.rows]
    independent = [m for m in models if _stem(m) in INDEPENDENT]
    pooled = [m for m in models if _stem(m) in POOLED]
    multitask_models = [m for m in models if m not in independent and m not in pooled]
    best = _best(res.rows, multitask_models, key, larger)
    baselines = [(b, role) for b, role in ((_best(res.rows, independent, key, larger),
                                            "best independent baseline"),
                                           (_best(res.rows, pooled, key, larger),
                                            "pooled baseline")) if b is not None]
    if best is None or not baselines:
        return None

    def per_split(model: str) -> dict[int, float]:
        return {r["split"]: r[key] for r in res.split_rows if r["model"] == model}

    mine = per_split(best)
    comparisons = []
    for b, role in baselines:
        theirs = per_split(b)
        common = sorted(set(mine) & set(theirs))
        gains = np.array([(mine[s] - theirs[s]) if larger else (theirs[s] - mine[s])
                          for s in common])
        gains = gains[~np.isnan(gains)]
        if gains.size == 0:
            continue
        comparisons.append({"baseline": b, "role": role, "gains": gains.tolist(),
                            "mean": float(gains.mean()), "std": float(gains.std()),
                            "min": float(gains.min()), "max": float(gains.max()),
                            "n_better": int(np.sum(gains > 0)), "n_splits": int(gains.size)})
    if not comparisons:
        return None
    if all(c["n_better"] == c["n_splits"] for c in comparisons):
        holds = "every split"
    elif all(c["mean"] > 0 for c in comparisons):
        holds = "on average"
    else:
        holds = "no"
    return {"metric": key, "label": label, "larger_is_better": larger, "best": best,
            "comparisons": comparisons, "holds": holds}


def format_verdict(res: BenchmarkResult) -> str:
    """The verdict in words: one line starting ``verdict:``, then one line per baseline."""
    v = res.verdict if res.verdict is not None else verdict(res)
    if v is None:
        return ("verdict: none (it needs a multi-task model and an independent or pooled "
                "baseline among the models run)")
    label, best = v["label"], v["best"]
    better = "higher" if v["larger_is_better"] else "lower"
    against = " and ".join(f"the {c['role']} ({c['baseline']})" for c in v["comparisons"])
    n = v["comparisons"][0]["n_splits"]
    if v["holds"] == "every split":
        every = f"on every split ({n} of {n})" if n > 1 else "on its one split"
        head = f"multi-task learning helps: {best} has a {better} {label} than {against} {every}"
    elif v["holds"] == "on average":
        head = (f"multi-task learning helps on average but not on every split: {best} has a "
                f"{better} {label} than {against} on average")
    else:
        worse = [c["baseline"] for c in v["comparisons"] if c["mean"] <= 0]
        head = (f"no gain from multi-task learning: the best multi-task model, {best}, is not "
                f"better than {' or '.join(worse)} on average")
    if n == 1:
        head += " (one split: no spread; --splits N for more)"
    lines = [f"verdict: {head}"]
    for c in v["comparisons"]:
        k = c["n_splits"]
        spread = (f"paired over {k} splits: std {c['std']:.4f}, from {c['min']:+.4f} to "
                  f"{c['max']:+.4f}; better on {c['n_better']} of {k}" if k > 1
                  else "one split")
        lines.append(f"  {best} vs {c['baseline']} ({c['role']}): {label} gain "
                     f"{c['mean']:+.4f} on average ({spread})")
    pair = (f"{label} of {best} - {label} of the baseline" if v["larger_is_better"]
            else f"{label} of the baseline - {label} of {best}")
    lines.append(f"  (gain = {pair}, per split; positive: {best} is better)")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- output
def format_table(res: BenchmarkResult, cv: int | None = None) -> str:
    """The result table as text, best model first (lowest nMSE, or highest AUC)."""
    cv = res.cv if cv is None and res.cv is not None else (DEFAULT_CV if cv is None else cv)
    metrics = METRICS[res.kind]
    header = ("model", *(lab for _, lab, _ in metrics), "fit s", "chosen")
    body = [(r["model"], *(f"{r[f'{k}_mean']:.4f} ± {r[f'{k}_std']:.4f}" for k, _, _ in metrics),
             f"{r['fit_seconds']:.1f}", r["params"]) for r in res.rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(header)]
    where = "on the rows" if res.shared else f"within {res.task_word}"
    if res.kind == "classification":
        positive = f" (positive class: {res.classes[1]!r})" if res.classes else ""
        legend = (f"AUC = mean over {res.task_word} of the test ROC AUC of each; accuracy = "
                  f"share of test (row, task) pairs classified right{positive}; mean ± std "
                  "over splits; fit s = CV + refit per split")
    else:
        legend = (f"nMSE = test MSE / Var(test y), pooled; aMSE = mean over {res.task_word} "
                  "of MSE_t / Var(y_t); mean ± std over splits; fit s = CV + refit per split")
    lines = [f"{res.name}: {res.setting}, hyper-parameters by {cv}-fold CV {where} "
             "inside each training part",
             legend,
             "",
             "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths, strict=True)).rstrip()
              for b in body]
    for name, why in res.skipped.items():
        lines.append(f"(skipped {name}: {why})")
    left_out = sum(r.get("auc_tasks_left_out", 0) for r in res.split_rows)
    if left_out:
        lines.append(f"(AUC: {left_out} (task, model, split) test parts with one class only "
                     "were left out of the mean)")
    return "\n".join(lines)


def write_csv(rows: Sequence[dict], path: str | os.PathLike, columns: Sequence[str]) -> None:
    """Write ``rows`` to ``path`` atomically (nothing is left behind when it fails)."""
    from multitask.persistence import atomic_write

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)

    def write(tmp: str) -> None:
        with open(tmp, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(columns), extrasaction="ignore")
            writer.writeheader()
            for r in rows:
                writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v)
                                 for k, v in r.items()})

    atomic_write(path, write)


def plot_benchmark(res: BenchmarkResult) -> Any:
    """Figure: the first metric ± std per model (best at the top), and the trace-norm model's
    singular values.

    Returns
    -------
    matplotlib.figure.Figure
        Not registered with pyplot; save it with ``fig.savefig(path)``.

    Raises
    ------
    ImportError
        Without matplotlib.
    """
    from matplotlib.figure import Figure

    from multitask.plotting import plot_singular_values

    key, label, larger = METRICS[res.kind][0]
    two = res.trace_coef is not None
    n = len(res.rows)
    fig = Figure(figsize=(11 if two else 6.5, max(3.2, 0.32 * n + 1.2)), layout="constrained")
    axes = fig.subplots(1, 2, width_ratios=[1.4, 1]) if two else [fig.add_subplot()]
    ax = axes[0]
    rows = res.rows[::-1]  # best at the top
    pos = np.arange(n)
    means = np.array([r[f"{key}_mean"] for r in rows])
    stds = np.array([r[f"{key}_std"] for r in rows])
    ax.barh(pos, np.nan_to_num(means), xerr=np.nan_to_num(stds), capsize=3, color="#4c72b0")
    ax.set_yticks(pos, [_stem(r["model"]) for r in rows], fontsize=8)
    ok = ~np.isnan(means)
    lo = float(np.min(means[ok] - stds[ok])) if ok.any() else 0.0
    hi = float(np.max(means[ok] + stds[ok])) if ok.any() else 1.0
    pad = 0.1 * max(hi - lo, 1e-3)
    ax.set_xlim(max(0.0, lo - pad), hi + pad)
    ax.set_xlabel(f"test {label} (mean ± std over splits; "
                  f"{'higher' if larger else 'lower'} is better)")
    ax.set_title(f"{res.name}: {res.setting}", fontsize=10)
    if two:
        plot_singular_values({"TraceNorm coef_": res.trace_coef}, ax=axes[1],
                             title="Trace-norm model: singular values (split 1)")
    return fig


#: The figure's name in the first versions, which ran on School only.
plot_school = plot_benchmark
