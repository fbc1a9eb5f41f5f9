"""The main job, ``multitask benchmark``: every model that applies, on School or any data set.

Protocol (the School benchmark, made general):

* data: School (139 schools, 15,362 students, 27 features), shipped with the package, or any
  multi-task data set (:mod:`multitask.benchmark_data`: a data set of
  :mod:`multitask.datasets` by name, or the user's arrays or file); a regression, a binary or
  multi-class classification, counts (with an exposure), a quantile or heavy tails
  (:mod:`multitask.benchmark_kinds`: the kind sets the loss of every model, the score of the
  model selection and the metrics), detected from the targets or given;
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
  classified right), see :mod:`multitask.metrics`; the other kinds: their metrics of
  :data:`METRICS` (Poisson deviance and D^2, log-loss and accuracies, pinball loss and
  coverage, Huber loss, MAE and nMSE);
* a verdict (:func:`verdict`): the best multi-task model against the best independent
  baseline and the pooled baseline, the paired difference of the first metric over the
  splits, relative to the baseline, on how many splits it holds, and whether it is clear of
  the noise (twice its standard error and the split-to-split spread of the two models).

The table's header says the cross-validation rule each job applied (K-fold, or leave-one-out
within tasks for small tasks); notes under it name the tasks left out of aMSE and say when
aMSE is unstable (few test rows per task). :func:`run_benchmark` reports each job as it ends
(``on_job``), takes the jobs of a stopped run (``done``, with equal
:func:`benchmark_settings`) and a ``time_limit``.

The models are found, not listed: every ``*Regressor`` (regression) or ``*Classifier``
(classification) of ``multitask.__all__`` (a deprecated alias counted once) except the
generic model; the models that need a task graph or an order of the tasks in time run only
when the data carry one (:data:`SKIPPED` says why they are left out otherwise). A model whose
default grid fails on the data, or that cannot take the kind's loss, is reported as skipped
with the reason; a named data set may leave slow models out by default (said in the
header). A new model of the library therefore appears in the benchmark without any edit here.

This module finds the models and runs the jobs; the parts it is made of, whose public names
are importable from here: :mod:`multitask.benchmark_result` (the defaults, the columns and
:class:`BenchmarkResult`), :mod:`multitask.benchmark_job` (one job, and the jobs on several
processes), :mod:`multitask.benchmark_report` (the verdict, the table, the CSV files) and
:mod:`multitask.benchmark_figure` (the figure).

Examples
--------
>>> from multitask.benchmark import run_school
>>> res = run_school(n_splits=1, models=["PooledRegressor"], n_alphas=3, n_jobs=1,
...                  show_progress=False)
>>> [row["model"] for row in res.rows]
['PooledRegressor']
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from multitask.benchmark_data import BenchmarkData, benchmark_splits, load_benchmark_data
from multitask.benchmark_figure import OFF_SCALE, plot_benchmark, plot_school  # noqa: F401
from multitask.benchmark_job import _cannot_run, _job, _run_parallel
from multitask.benchmark_kinds import FAMILY, METRICS, kind_options, loss_params
from multitask.benchmark_report import format_table, format_verdict, verdict, write_csv
from multitask.benchmark_result import (
    _LEFT_OUT,
    DEFAULT_ALPHA_RATIO,
    DEFAULT_CV,
    DEFAULT_N_ALPHAS,
    DEFAULT_SPLITS,
    FEW_TEST_ROWS,  # noqa: F401 - importable from here as before
    INDEPENDENT,
    POOLED,
    RESULT_COLUMNS,  # noqa: F401 - importable from here as before
    SPECTRUM_MODEL,  # noqa: F401 - importable from here as before
    SPLIT_COLUMNS,  # noqa: F401 - importable from here as before
    BenchmarkResult,
    SchoolBenchmark,
    _format_params,
    _rule_text,
    _sort_key,
    _stem,
    result_columns,
    split_columns,
)

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
    "benchmark_settings",
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

#: Models whose fits take longest, started first so that parallel jobs end together.
_SLOW_FIRST = ("CappedTrace", "RobustMTL", "CappedL1", "TaskRelationship", "ClusteredMTL",
               "ConvexASO", "SparseLowRank", "DirtyModel", "MultiTaskKernel")


# ----------------------------------------------------------------------------- models
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

    suffix, check = (("Classifier", is_classifier) if FAMILY[kind] == "classification"
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


def _fixed_params(name: str, data: BenchmarkData, options: dict | None = None) -> dict:
    """Parameters a model gets from the data rather than from the grid: the task graph, and
    the loss of the kind with its own parameter (:func:`~multitask.benchmark_kinds.loss_params`)."""
    fixed = {"graph": data.graph} if _stem(name) in _NEEDS_GRAPH else {}
    return {**fixed, **loss_params(data.kind, options or {})}


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


def _check_training_rows(splits: list[tuple], data: BenchmarkData,
                         train_ratio: float | None) -> None:
    """Refuse splits whose training parts leave the cross-validation within tasks nothing to
    hold out: every task with a single training row (a shared design: one row)."""
    for s, (_, y_tr, _, y_te, *_) in enumerate(splits):
        if isinstance(y_tr, list):
            most = max(len(v) for v in y_tr)
            if most >= 2:
                continue
            sizes = [len(a) + len(b) for a, b in zip(y_tr, y_te, strict=True)]
            what = (f"every task has 1 training row in split {s} (numbered from 0, as in "
                    f"splits.csv): the tasks have {min(sizes)} to {max(sizes)} rows"
                    if min(sizes) != max(sizes) else
                    f"every task has 1 training row in split {s} (numbered from 0, as in "
                    f"splits.csv): the tasks have {sizes[0]} rows each")
        else:
            if np.asarray(y_tr).shape[0] >= 2:
                continue
            what = (f"the training part of split {s} holds 1 row of the "
                    f"{np.asarray(y_tr).shape[0] + np.asarray(y_te).shape[0]}")
        from multitask.benchmark_data import DEFAULT_TRAIN_RATIO

        ratio = DEFAULT_TRAIN_RATIO if train_ratio is None else train_ratio
        largest = (max(len(a) + len(b) for a, b in zip(y_tr, y_te, strict=True))
                   if isinstance(y_tr, list) else np.asarray(y_tr).shape[0] + np.asarray(
                       y_te).shape[0])
        fix = ("raise --train-ratio" if largest >= 3 and data.official_splits is None
               else "give at least 3 rows per task")
        raise ValueError(
            f"{data.name}: {what}, with --train-ratio {ratio:g} and at least one row per "
            f"task kept for testing. The hyper-parameters are chosen by cross-validation "
            f"within {'the rows' if data.shared else 'tasks'} inside the training part, which "
            f"needs a task with at least 2 training rows: {fix}.")


def benchmark_settings(data: BenchmarkData, *, train_ratio: float | None = None,
                       n_alphas: int = DEFAULT_N_ALPHAS,
                       alpha_ratio: float = DEFAULT_ALPHA_RATIO, cv: int = DEFAULT_CV,
                       random_state: int = 0, quantile: float | None = None,
                       epsilon: float | None = None) -> dict:
    """What makes a job's result: the data (a SHA-256 of every array, the exposure, the task
    names, the kind, the order and graph), the options of the splits and of the model
    selection, and the loss's own option (``quantile``, ``epsilon``: None for the kinds
    without one).

    Two runs with equal settings give the same record for the same (model, split) job, so a
    stopped run can be completed (``multitask benchmark --resume``); the number of splits
    and the models are not part of it (split ``s`` does not depend on how many follow).
    """
    import hashlib

    h = hashlib.sha256()

    def add(a: Any) -> None:
        if sp.issparse(a):
            a = a.tocsr()
            for part in (a.data, a.indices, a.indptr, np.asarray(a.shape)):
                add(part)
            return
        arr = np.ascontiguousarray(np.asarray(a))
        h.update(f"{arr.dtype.str}{arr.shape}".encode())
        h.update(arr.tobytes())

    for part in ([data.X, data.y] if data.shared else [*data.X, *data.y]):
        add(part)
    if data.graph is not None:
        add(data.graph)
    if data.exposure is not None:
        for part in ([data.exposure] if data.shared else data.exposure):
            add(part)
    h.update(repr((data.task_names, data.kind, data.ordered, data.shared,
                   data.official_splits is not None, data.classes)).encode())
    options = kind_options(data.kind, quantile=quantile, epsilon=epsilon)
    return {"data": h.hexdigest(), "train_ratio": None if train_ratio is None
            else float(train_ratio), "n_alphas": int(n_alphas),
            "alpha_ratio": float(alpha_ratio), "cv": int(cv), "random_state": int(random_state),
            "quantile": options.get("quantile"), "epsilon": options.get("epsilon")}


def run_benchmark(data: BenchmarkData | str, n_splits: int | None = None,
                  models: Sequence[str] | None = None, *, train_ratio: float | None = None,
                  n_alphas: int = DEFAULT_N_ALPHAS, alpha_ratio: float = DEFAULT_ALPHA_RATIO,
                  cv: int = DEFAULT_CV, n_jobs: int | None = None, random_state: int = 0,
                  show_progress: bool = True, done: Sequence[dict] = (),
                  on_job: Callable[[dict, BenchmarkResult], None] | None = None,
                  time_limit: float | None = None, quantile: float | None = None,
                  epsilon: float | None = None) -> BenchmarkResult:
    """Run the benchmark on a data set.

    Every model is fitted with the loss of the data's kind
    (:mod:`multitask.benchmark_kinds`: squared, the models' own classification losses,
    Poisson for counts, the multinomial logistic loss for more than two classes, the pinball
    loss at ``quantile``, Huber's loss with ``epsilon``); a model that cannot take it is left
    out with the reason (``skipped``). Counts with an exposure are fitted as rates ``y /
    exposure`` with ``sample_weight=exposure``.

    Parameters
    ----------
    data : BenchmarkData or str
        The data (:func:`~multitask.benchmark_data.make_benchmark_data`), or the name of a
        data set of :data:`~multitask.benchmark_data.DATASETS`.
    n_splits : int, optional
        Number of splits (official ones, at most 10 for School, unless ``train_ratio``);
        default: the data set's ``default_splits``, else :data:`DEFAULT_SPLITS`.
    models : sequence of str, optional
        Model names (``"TraceNormRegressor"`` or ``"TraceNorm"``); default: every model of
        :func:`benchmark_models` for the kind of the data, but those of the data set's
        ``default_leave_out``.
    train_ratio : float, optional
        Random per-task splits (rows of a shared design) with this training fraction;
        default: the official splits, or :data:`~multitask.benchmark_data.DEFAULT_TRAIN_RATIO`.
    n_alphas : int, default=DEFAULT_N_ALPHAS
        Size of each model's default grid.
    alpha_ratio : float, default=DEFAULT_ALPHA_RATIO
        Smallest / largest value of each model's default grid.
    cv : int, default=DEFAULT_CV
        Folds of the cross-validation inside each training part (within each task), where
        the selection rule takes K-fold (see :class:`~multitask.MultiTaskCV`: small tasks
        take leave-one-out; the table says which rule each job applied).
    n_jobs : int, optional
        Parallel processes over (model, split) pairs; default: every core.
    random_state : int, default=0
        Seed of the folds (and of the random splits).
    show_progress : bool, default=True
        Report finished fits through :mod:`multitask.progress`.
    done : sequence of dict, default=()
        Records of jobs already done by a run with the same :func:`benchmark_settings`
        (what ``on_job`` received): those (model, split) jobs are not run again, their
        records are used as they are. Records of other models or splits are ignored.
    on_job : callable, optional
        ``on_job(record, result)`` after each job that ends: the job's record (a dict of
        plain values and arrays) and the :class:`BenchmarkResult` of every job done so far
        (``complete=False`` until the last one).
    time_limit : float, optional
        Seconds after which no new job starts; the result is then ``complete=False``, with
        the jobs done (jobs running in parallel at the limit are abandoned).
    quantile : float in (0, 1), optional
        The kind ``"quantile"``: the quantile the models predict (default
        :data:`~multitask.benchmark_kinds.DEFAULT_QUANTILE`).
    epsilon : float > 1, optional
        The kind ``"robust"``: Huber's threshold (default
        :data:`~multitask.benchmark_kinds.DEFAULT_EPSILON`).

    Returns
    -------
    BenchmarkResult

    Raises
    ------
    ValueError
        On an unknown model name, an invalid number of splits, folds or grid size, a
        ``quantile`` or ``epsilon`` out of range or given to another kind, or splits whose
        training parts hold one row per task.
    """
    t_start = time.perf_counter()
    _check_options(n_alphas, cv, alpha_ratio)
    if time_limit is not None and not float(time_limit) >= 0:
        raise ValueError(f"The time limit must be a number of seconds >= 0, got "
                         f"{time_limit!r}.")
    if isinstance(data, str):
        data = load_benchmark_data(data)
    kind = data.kind
    options = kind_options(kind, quantile=quantile, epsilon=epsilon)
    available = benchmark_models(kind, graph=data.graph is not None, ordered=data.ordered)
    named_defaults = models is None and bool(data.default_leave_out)
    names = _resolve(models, available, kind)
    left_by_default = {}
    if named_defaults:
        for name in list(names):
            if _stem(name) in data.default_leave_out:
                left_by_default[name] = data.default_leave_out[_stem(name)]
                names.remove(name)
    if n_splits is None:
        n_splits = data.default_splits if data.default_splits is not None else DEFAULT_SPLITS
    splits = benchmark_splits(data, n_splits, train_ratio, random_state, with_exposure=True)
    _check_training_rows(splits, data, train_ratio)

    skipped = {}
    for name in list(names):  # a model that cannot run on the data is left out, with why
        why = _cannot_run(available[name], _fixed_params(name, data, options), splits[0],
                          kind)
        if why is not None:
            skipped[name] = why
            names.remove(name)
    if not names:
        raise ValueError(f"No model can run on {data.name}: " + "; ".join(
            f"{k}: {v}" for k, v in skipped.items()))

    order = sorted(names, key=lambda n: _SLOW_FIRST.index(_stem(n)) if _stem(n) in _SLOW_FIRST
                   else len(_SLOW_FIRST))
    every = [(name, s) for s in range(len(splits)) for name in order]
    results = [dict(r) for r in done if (r.get("model"), r.get("split")) in set(every)]
    results = list({(r["model"], r["split"]): r for r in results}.values())
    finished = {(r["model"], r["split"]) for r in results}
    jobs = [j for j in every if j not in finished]
    context = {"names": names, "skipped": skipped, "data": data, "n_splits": len(splits),
               "train_ratio": train_ratio, "cv": cv, "n_jobs_total": len(every),
               "options": options, "n_available": len(available),
               "left_by_default": left_by_default}
    cores = os.cpu_count() or 1
    workers = cores if n_jobs is None else (cores if n_jobs < 0 else max(1, int(n_jobs)))
    workers = max(1, min(workers, len(jobs)))
    from multitask.progress import progress

    def args(name: str, s: int, limit: bool) -> tuple:
        return (name, s, splits[s], kind, _fixed_params(name, data, options), n_alphas,
                alpha_ratio, cv, random_state, limit, options)

    def over_time() -> bool:
        return time_limit is not None and time.perf_counter() - t_start >= float(time_limit)

    def finish(record: dict) -> None:
        results.append(record)
        bar.advance()
        if on_job is not None:
            on_job(record, _summarize(results, context, complete=False))

    bar = progress(len(jobs), f"{data.name} benchmark",
                   **({} if show_progress else {"mode": "off"}))
    with bar:
        if workers == 1:
            for name, s in jobs:
                if over_time():
                    break
                finish(_job(*args(name, s, False)))
        elif jobs:
            _run_parallel(_job, jobs, workers, lambda name, s: args(name, s, True), finish,
                          over_time)

    res = _summarize(results, context, complete=len(results) == len(every))
    res.seconds = time.perf_counter() - t_start
    return res


# ----------------------------------------------------------------------------- results
def _summarize(records: list[dict], context: dict, complete: bool) -> BenchmarkResult:
    """The :class:`BenchmarkResult` of the job records done so far."""
    data, names = context["data"], context["names"]
    kind = data.kind
    trace = next((r["coef"] for r in records if r.get("coef") is not None), None)
    results = sorted(records, key=lambda r: (r["split"], names.index(r["model"])))
    metrics = METRICS[kind]
    rows = []
    for name in names:
        mine = [r for r in results if r["model"] == name]
        if not mine:
            continue
        row: dict[str, Any] = {"model": name}
        for key, _, _ in metrics:
            vals = np.array([r[key] for r in mine], dtype=float)
            row[f"{key}_mean"], row[f"{key}_std"] = float(vals.mean()), float(vals.std())
        row.update({"n_splits": len(mine),
                    "fit_seconds": float(np.mean([r["fit_seconds"] for r in mine])),
                    "params": _format_params([r["params"] for r in mine])})
        rows.append(row)
    first, _, larger = metrics[0]
    rows.sort(key=lambda r: _sort_key(r[f"{first}_mean"], larger))
    left_key = f"{_LEFT_OUT[kind]}_tasks_left_out" if kind in _LEFT_OUT else None
    split_rows = []
    for r in results:
        row = {k: v for k, v in r.items() if k != "coef"}
        row["params"] = _format_params([r["params"]])
        row["cv_rule"] = _rule_text(r.get("selection", "kfold"),
                                    int(r.get("cv_folds", context["cv"])))
        if left_key is not None:
            row.setdefault(left_key, 0)
        split_rows.append(row)
    rules: dict[tuple, dict] = {}
    for r in results:
        how = (r.get("selection", "kfold"), int(r.get("cv_folds", context["cv"])))
        rule = rules.setdefault(how, {"selection": how[0], "folds": how[1], "train_rows": [],
                                      "jobs": 0})
        rule["jobs"] += 1
        if "train_rows" in r:
            rule["train_rows"].append(float(r["train_rows"]))
    cv_rules = [{**v, "train_rows": float(np.median(v["train_rows"])) if v["train_rows"]
                 else None} for v in rules.values()]
    test_rows = [float(r["test_rows"]) for r in results if "test_rows" in r]
    left_out: dict[int, int] = {}
    for r in results:
        if left_key is not None and r.get(left_key):
            left_out[int(r["split"])] = max(left_out.get(int(r["split"]), 0), int(r[left_key]))
    res = BenchmarkResult(rows=rows, split_rows=split_rows, skipped=dict(context["skipped"]),
                          trace_coef=None if trace is None else np.asarray(trace, dtype=float),
                          setting=_setting(data, context["n_splits"], context["train_ratio"]),
                          name=data.name, kind=kind, task_word=data.task_word,
                          shared=data.shared, classes=data.classes, cv=context["cv"],
                          cv_rules=cv_rules, test_rows=min(test_rows) if test_rows else None,
                          left_out=dict(sorted(left_out.items())), n_tasks=data.n_tasks,
                          n_jobs_total=context["n_jobs_total"], complete=complete,
                          options=dict(context.get("options", {})),
                          exposure_name=data.exposure_name, notes=list(data.notes),
                          defaults_note=_defaults_note(data, context))
    res.verdict = verdict(res) if complete else None
    return res


def _defaults_note(data: BenchmarkData, context: dict) -> str | None:
    """What a named data set's own defaults leave out, in words (None when the run used
    none of them)."""
    left = context.get("left_by_default") or {}
    parts = []
    if left:
        why = "; ".join(f"{_stem(n)}: {w}" for n, w in left.items())
        parts.append(f"{context['n_available'] - len(left)} of the {context['n_available']} "
                     f"models, left out: {why} (--models NAME ... runs them)")
    if data.default_splits is not None and context["n_splits"] == data.default_splits:
        parts.append(f"{data.default_splits} split{'s' if data.default_splits > 1 else ''} "
                     "(--splits N for more)")
    if not parts:
        return None
    return f"defaults of {data.name}: {' and '.join(parts)}"


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


