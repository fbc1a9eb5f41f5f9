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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from multitask.benchmark_data import BenchmarkData, benchmark_splits, load_benchmark_data
from multitask.benchmark_kinds import FAMILY, METRICS, kind_options, loss_params

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

# METRICS (imported above, :data:`multitask.benchmark_kinds.METRICS`): the metrics of each
# kind of problem, (key, label, larger is better); the first one sorts the table and decides
# the verdict.

#: Columns of ``results.csv`` of a regression (one row per model, sorted by nMSE).
RESULT_COLUMNS = ("model", "nmse_mean", "nmse_std", "amse_mean", "amse_std", "n_splits",
                  "fit_seconds", "params")
#: Columns of ``splits.csv`` of a regression (one row per model and split).
SPLIT_COLUMNS = ("model", "split", "nmse", "amse", "amse_tasks_left_out", "cv_rule",
                 "fit_seconds", "params")

#: The per-task metric of each kind whose tasks can be left out of a test part (aMSE: the
#: tasks whose test targets are all equal; AUC: the tasks whose test part holds one class).
_LEFT_OUT = {"regression": "amse", "classification": "auc"}

#: Up to this median number of test rows per task, the table says that aMSE (each task's
#: MSE over the variance of its few test targets) is unstable.
FEW_TEST_ROWS = 20


def result_columns(kind: str = "regression") -> tuple[str, ...]:
    """Columns of ``results.csv``: the model, ``<metric>_mean`` and ``_std`` per metric, the
    number of splits, the mean fit time and the chosen parameters."""
    stats = tuple(f"{k}_{s}" for k, _, _ in METRICS[kind] for s in ("mean", "std"))
    return ("model", *stats, "n_splits", "fit_seconds", "params")


def split_columns(kind: str = "regression") -> tuple[str, ...]:
    """Columns of ``splits.csv``: one row per model and split: the metrics, the number of
    tasks left out of the per-task metric (aMSE: test targets all equal; AUC: one class in
    the test part; not for the other kinds), the scale of the Huber loss (``robust``), the
    cross-validation rule applied (``3-fold`` or ``leave-one-out: 15 folds``), the fit time
    and the chosen parameters."""
    extra: tuple[str, ...] = ((f"{_LEFT_OUT[kind]}_tasks_left_out",) if kind in _LEFT_OUT
                              else ("huber_scale",) if kind == "robust" else ())
    return ("model", "split", *(k for k, _, _ in METRICS[kind]), *extra, "cv_rule",
            "fit_seconds", "params")


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
    kind : {"regression", "classification", "count", "multiclass", "quantile", "robust"}
    task_word : str
        What a task is called (``"schools"``, ``"tasks"``).
    shared : bool
        The data have a shared design (the CV folds are drawn on the rows).
    classes : tuple or None
        Classification: the labels (``(negative, positive)`` for two classes).
    cv : int or None
        Folds of the model selection asked for (``--cv-folds``); the rule applied is
        ``cv_rules``.
    verdict : dict or None
        :func:`verdict` of the run (None for a partial run).
    cv_rules : list of dict
        The cross-validation rules the jobs applied: ``{"selection": "kfold" | "loo",
        "folds", "train_rows" (median training rows per task), "jobs"}``, one per distinct
        rule.
    test_rows : float or None
        The median number of test rows per task (the smallest over the splits).
    left_out : dict
        Split -> number of tasks left out of the per-task metric on that split (aMSE: test
        targets all equal; AUC: one class in the test part); splits without any are absent.
    n_tasks : int or None
    n_jobs_total : int
        The (model, split) jobs of the run; ``len(split_rows)`` of them are done.
    complete : bool
        Every job is done (False when a time limit stopped the run).
    options : dict
        The loss's own option of the kind (``{"quantile": q}``, ``{"epsilon": e}``, or
        empty; :func:`~multitask.benchmark_kinds.kind_options`).
    exposure_name : str or None
        Counts: what the exposure is called (None without one).
    notes : list of str
        Notes on the data said under the table (e.g. targets that look like counts).
    defaults_note : str or None
        A named data set run with its own defaults (fewer models or splits): what they are,
        in words.
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
    cv_rules: list[dict] = field(default_factory=list)
    test_rows: float | None = None
    left_out: dict[int, int] = field(default_factory=dict)
    n_tasks: int | None = None
    n_jobs_total: int = 0
    complete: bool = True
    options: dict = field(default_factory=dict)
    exposure_name: str | None = None
    notes: list[str] = field(default_factory=list)
    defaults_note: str | None = None


#: The name of the result of the first versions, which ran on School only.
SchoolBenchmark = BenchmarkResult


# ----------------------------------------------------------------------------- one job
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
    y_fit = y_tr
    if w_tr is not None:  # scikit-learn's way: the rate, weighted by the exposure
        y_fit = ([v / w for v, w in zip(y_tr, w_tr, strict=True)] if isinstance(y_tr, list)
                 else y_tr / np.asarray(w_tr)[:, None])
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


def _rule_text(selection: str, folds: int) -> str:
    """The rule of a job in words: ``3-fold`` or ``leave-one-out: 15 folds``."""
    return f"leave-one-out: {folds} folds" if selection == "loo" else f"{folds}-fold"


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
            _run_parallel(jobs, workers, lambda name, s: args(name, s, True), finish, over_time)

    res = _summarize(results, context, complete=len(results) == len(every))
    res.seconds = time.perf_counter() - t_start
    return res


def _cannot_run(cls: type, fixed: dict, split: tuple, kind: str) -> str | None:
    """Why a model cannot run on the data (None when it can): its default grid fails on the
    first training part, or, for the kinds with a loss of their own (counts, classes,
    quantiles, outliers), a fit at the strongest value of that grid fails (the model or its
    solvers refuse the loss). The fit is capped at 20 iterations, its warnings silenced."""
    X0, y0 = split[0], split[1]
    w0 = split[4] if len(split) > 4 else None
    if w0 is not None:
        y0 = ([v / w for v, w in zip(y0, w0, strict=True)] if isinstance(y0, list)
              else y0 / np.asarray(w0)[:, None])
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


def _run_parallel(jobs: list[tuple[str, int]], workers: int, job_args: Callable,
                  finish: Callable[[dict], None], over_time: Callable[[], bool]) -> None:
    """Run ``jobs`` on ``workers`` processes (loky, as joblib does), at most ``workers`` at a
    time: a job starts when another ends, unless ``over_time()``; ``finish(record)`` as each
    ends. The jobs running when the time is over are waited for and kept. On an exception
    (Ctrl-C included) the workers are stopped and the exception propagates."""
    from concurrent.futures import FIRST_COMPLETED, wait

    from joblib.externals.loky import get_reusable_executor

    threads = str(max((os.cpu_count() or 1) // workers, 1))
    env = {v: os.environ.get(v, threads) for v in _THREAD_VARS}
    env.setdefault("ENABLE_IPC", os.environ.get("ENABLE_IPC", "1"))
    executor = get_reusable_executor(max_workers=workers, env=env)
    todo = list(jobs)
    running: set = set()

    def submit() -> None:
        name, s = todo.pop(0)
        running.add(executor.submit(_job, *job_args(name, s)))

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


# ----------------------------------------------------------------------------- verdict
def _best(rows: list[dict], names: list[str], key: str, larger: bool) -> str | None:
    cands = [r for r in rows if r["model"] in names and not np.isnan(r[f"{key}_mean"])]
    if not cands:
        return None
    return min(cands, key=lambda r: _sort_key(r[f"{key}_mean"], larger))["model"]


def _noise(gains: np.ndarray, mine: np.ndarray, theirs: np.ndarray) -> dict:
    """How noisy a paired comparison over ``k`` splits is.

    ``se = std(g, ddof=1) / sqrt(k)``, the standard error of the mean paired gain;
    ``spread = max(std(m_a), std(m_b))``, the larger split-to-split standard deviation of
    the two models' metric (the table's ``±``); the gain is clear of the noise when
    ``k >= 2`` and ``|mean(g)| > max(2 se, spread)``: larger than twice its standard error
    and than how much either model's score moves from one split to the next.
    """
    k = int(gains.size)
    if k < 2:
        return {"se": float("nan"), "spread": float("nan"), "noise": float("nan"),
                "clear": False}
    se = float(np.std(gains, ddof=1) / np.sqrt(k))
    spread = float(max(np.std(mine), np.std(theirs)))
    noise = max(2 * se, spread)
    return {"se": se, "spread": spread, "noise": noise,
            "clear": bool(abs(float(gains.mean())) > noise)}


def verdict(res: BenchmarkResult) -> dict | None:
    """The best multi-task model against the best independent and the pooled baseline.

    For each baseline ``b`` run, the paired gain of the best multi-task model ``a`` (best mean
    of the first metric) over the splits ``s``: ``g_s = m_s(b) - m_s(a)`` for a metric where
    lower is better (nMSE), ``m_s(a) - m_s(b)`` where larger is better (AUC); positive when
    the multi-task model is better. Reported: the mean of ``g_s``, the relative gain
    ``mean(g) / mean(m(b))``, its standard deviation over the splits, its smallest and largest
    value, the number of splits with ``g_s > 0``, and its noise (:func:`_noise`): the
    standard error of the mean gain, the split-to-split spread of the two models' metric, and
    whether the gain is clear of both.

    Returns
    -------
    dict or None
        ``{"metric", "label", "best", "comparisons": [{"baseline", "role", "gains", "mean",
        "relative", "std", "min", "max", "n_better", "n_splits", "se", "spread", "noise",
        "clear"}], "holds": "every split" | "on average" | "no", "clear"}`` (``clear``: the
        gain over every baseline is clear of the noise); None when no multi-task model or no
        baseline ran.
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
        common = [s for s in sorted(set(mine) & set(theirs))
                  if not (np.isnan(mine[s]) or np.isnan(theirs[s]))]
        if not common:
            continue
        a_vals = np.array([mine[s] for s in common], dtype=float)
        b_vals = np.array([theirs[s] for s in common], dtype=float)
        gains = (a_vals - b_vals) if larger else (b_vals - a_vals)
        base = float(b_vals.mean())
        comparisons.append({"baseline": b, "role": role, "gains": gains.tolist(),
                            "mean": float(gains.mean()),
                            "relative": float(gains.mean()) / abs(base) if base else float(
                                "nan"),
                            "std": float(gains.std()),
                            "min": float(gains.min()), "max": float(gains.max()),
                            "n_better": int(np.sum(gains > 0)), "n_splits": int(gains.size),
                            **_noise(gains, a_vals, b_vals)})
    if not comparisons:
        return None
    if all(c["n_better"] == c["n_splits"] for c in comparisons):
        holds = "every split"
    elif all(c["mean"] > 0 for c in comparisons):
        holds = "on average"
    else:
        holds = "no"
    return {"metric": key, "label": label, "larger_is_better": larger, "best": best,
            "comparisons": comparisons, "holds": holds,
            "clear": all(c["clear"] for c in comparisons)}


def _percent(c: dict) -> str:
    rel = c.get("relative", float("nan"))
    return "n/a" if rel is None or np.isnan(rel) else f"{100 * abs(rel):.1f}%"


def format_verdict(res: BenchmarkResult) -> str:
    """The verdict in words: one line starting ``verdict:``, then one line per baseline and
    the noise of the comparison.

    The first line says whether the best multi-task model is better than the baselines on
    every split, on average or not, by how much relative to each baseline, and whether that
    gain is within the noise (see :func:`verdict`): a gain within the noise is never
    reported as multi-task learning helping.
    """
    if not res.complete:
        return (f"verdict: none yet (a partial run: {len(res.split_rows)} of "
                f"{res.n_jobs_total} jobs done; --resume completes it)")
    v = res.verdict if res.verdict is not None else verdict(res)
    if v is None:
        return ("verdict: none (it needs a multi-task model and an independent or pooled "
                "baseline among the models run)")
    label, best = v["label"], v["best"]
    better = "higher" if v["larger_is_better"] else "lower"
    comps = v["comparisons"]
    against = " and ".join(f"the {c['role']} ({c['baseline']})" for c in comps)
    by = " and ".join(_percent(c) for c in comps)
    n = comps[0]["n_splits"]
    noisy = [c for c in comps if not c.get("clear", True)]
    if v["holds"] == "every split":
        every = f"on every split ({n} of {n})" if n > 1 else "on its one split"
        if n == 1:
            head = (f"multi-task learning may help: {best} has a {better} {label} than "
                    f"{against} {every}, by {by}")
        elif noisy:
            head = (f"multi-task learning may help, but within the noise: {best} has a "
                    f"{better} {label} than {against} {every}, by {by}")
        else:
            head = (f"multi-task learning helps: {best} has a {better} {label} than {against} "
                    f"{every}, by {by}")
    elif v["holds"] == "on average":
        head = (f"multi-task learning helps on average but not on every split: {best} has a "
                f"{better} {label} than {against} on average, by {by}")
    else:
        worse = [c["baseline"] for c in comps if c["mean"] <= 0]
        head = (f"no gain from multi-task learning: the best multi-task model, {best}, is not "
                f"better than {' or '.join(worse)} on average")
    if n == 1:
        head += " (one split: no spread, the noise is not measured; --splits N for more)"
    elif noisy and v["holds"] != "no":
        within = " and ".join(c["baseline"] for c in noisy)
        head += (f"; the gain over {within} is within the split-to-split noise (see below)")
    lines = [f"verdict: {head}"]
    for c in comps:
        k = c["n_splits"]
        if k > 1:
            spread = (f"paired over {k} splits: std {c['std']:.4f}, standard error "
                      f"{c['se']:.4f}, from {c['min']:+.4f} to {c['max']:+.4f}; better on "
                      f"{c['n_better']} of {k}")
            noise = (f"{'clear of' if c['clear'] else 'within'} the noise (|gain| "
                     f"{'>' if c['clear'] else '<='} {c['noise']:.4f}: twice its standard "
                     f"error, {2 * c['se']:.4f}, or the two models' split-to-split std of "
                     f"{label}, {c['spread']:.4f}, whichever is larger)")
        else:
            spread, noise = "one split", "noise not measured"
        rel = c.get("relative", float("nan"))
        rel_text = "" if rel is None or np.isnan(rel) else f", {100 * rel:+.1f}% of its {label}"
        lines.append(f"  {best} vs {c['baseline']} ({c['role']}): {label} gain "
                     f"{c['mean']:+.4f} on average{rel_text} ({spread}); {noise}")
    pair = (f"{label} of {best} - {label} of the baseline" if v["larger_is_better"]
            else f"{label} of the baseline - {label} of {best}")
    lines.append(f"  (gain = {pair}, per split; positive: {best} is better)")
    if res.shared:
        lines.append("  (a shared design: each split draws the rows once for all tasks, so "
                     "every task's test part changes with the split at once: a noisier "
                     "comparison than per-task splits of the same data; --splits N for more)")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- output
def _cv_words(res: BenchmarkResult, cv: int) -> str:
    """The cross-validation rule(s) the jobs applied, in words."""
    from multitask.model_selection import SMALL_TASK_ROWS

    where = "on the rows" if res.shared else f"within {res.task_word}"
    per = "rows" if res.shared else "rows per task"
    if not res.cv_rules:
        return f"{cv}-fold CV {where}"
    parts = []
    for rule in res.cv_rules:
        rows = rule.get("train_rows")
        if rule["selection"] == "loo":
            text = (f"leave-one-out CV {where} ({rule['folds']} folds; the default rule for "
                    f"small tasks: a median of {rows:g} training {per}, <= {SMALL_TASK_ROWS})"
                    if rows is not None else f"leave-one-out CV {where} ({rule['folds']} folds)")
        else:
            text = f"{rule['folds']}-fold CV {where}"
        if len(res.cv_rules) > 1:
            text += f" on {rule['jobs']} jobs"
        parts.append(text)
    return " and ".join(parts)


def _left_out_note(res: BenchmarkResult) -> list[str]:
    """Notes on the tasks left out of the per-task metric, and on aMSE with few test rows."""
    lines = []
    m = res.n_tasks
    of = f" of {m}" if m else ""
    if res.kind == "regression":
        if res.left_out:
            per = ", ".join(f"{k}{of if i == 0 else ''} tasks on split {s}"
                            for i, (s, k) in enumerate(res.left_out.items()))
            lines.append(f"(aMSE leaves out the tasks whose test targets are all equal "
                         f"(Var(y_t) = 0, the term is undefined): {per}; splits numbered as "
                         "in splits.csv)")
        n = res.test_rows
        if n is not None and n <= FEW_TEST_ROWS:
            rows = "test rows" if res.shared else "test rows per task (median)"
            rel = (f"about ±{100 * np.sqrt(2 / (n - 1)):.0f}% for normal targets"
                   if n > 1 else "undefined")
            lines.append(f"(aMSE is unstable here: each task's Var(y_t) is estimated from "
                         f"{n:g} {rows}, {rel}; compare the models by nMSE)")
    elif res.kind == "classification":
        total = sum(int(r.get("auc_tasks_left_out", 0) or 0) for r in res.split_rows)
        if total:
            lines.append(f"(AUC: {total} (task, model, split) test parts with one class only "
                         "were left out of the mean)")
    return lines


def format_table(res: BenchmarkResult, cv: int | None = None) -> str:
    """The result table as text, best model first (lowest nMSE, or highest AUC).

    The header says the splits and the cross-validation rule each job applied (K-fold, or
    leave-one-out for small tasks, see :class:`~multitask.MultiTaskCV`); notes under the table
    name the skipped models, the tasks left out of aMSE (test targets all equal) or AUC (one
    class), and say when aMSE is unstable (at most :data:`FEW_TEST_ROWS` test rows per task).
    """
    cv = res.cv if cv is None and res.cv is not None else (DEFAULT_CV if cv is None else cv)
    metrics = METRICS[res.kind]
    header = ("model", *(lab for _, lab, _ in metrics), "fit s", "chosen")
    body = [(r["model"], *(f"{r[f'{k}_mean']:.4f} ± {r[f'{k}_std']:.4f}" for k, _, _ in metrics),
             f"{r['fit_seconds']:.1f}", r["params"]) for r in res.rows]
    widths = [max([len(h), *(len(b[i]) for b in body)]) for i, h in enumerate(header)]
    lines = [f"{res.name}: {res.setting}, hyper-parameters by {_cv_words(res, cv)} "
             "inside each training part"]
    loss = _loss_words(res)
    if loss:
        lines.append(loss)
    lines.append(_legend(res))
    if res.defaults_note:
        lines.append(f"({res.defaults_note})")
    if not res.complete:
        lines.append(f"partial run: {len(res.split_rows)} of {res.n_jobs_total} (model, "
                     "split) jobs done (n_splits in results.csv); --resume completes it")
    lines += ["",
              "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip(),
              "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths, strict=True)).rstrip()
              for b in body]
    for name, why in res.skipped.items():
        lines.append(f"(skipped {name}: {why})")
    lines += _left_out_note(res)
    lines += [f"(note: {n})" for n in res.notes]
    return "\n".join(lines)


def _loss_words(res: BenchmarkResult) -> str:
    """The loss every model was fitted with, in words (empty for the squared loss and the
    binary classifiers' own losses)."""
    if res.kind == "count":
        how = (f", the rate y / {res.exposure_name} with sample_weight={res.exposure_name} "
               f"(predicted counts: rate x {res.exposure_name})"
               if res.exposure_name else "")
        return f"every model fits the Poisson loss (loss='poisson', log link){how}"
    if res.kind == "multiclass":
        k = len(res.classes) if res.classes else None
        return ("every model fits the multinomial logistic loss (loss='logistic'"
                + (f", {k} classes" if k else "") + ")")
    if res.kind == "quantile":
        return (f"every model fits the pinball loss at q = {res.options['quantile']:g} "
                f"(loss='quantile', quantile={res.options['quantile']:g})")
    if res.kind == "robust":
        return (f"every model fits Huber's loss with epsilon = {res.options['epsilon']:g} and "
                "a scale per task (loss='huber')")
    return ""


def _legend(res: BenchmarkResult) -> str:
    """What the metrics of the table are."""
    tail = "; mean ± std over splits; fit s = CV + refit per split"
    if res.kind == "classification":
        positive = f" (positive class: {res.classes[1]!r})" if res.classes else ""
        return (f"AUC = mean over {res.task_word} of the test ROC AUC of each; accuracy = "
                f"share of test (row, task) pairs classified right{positive}{tail}")
    if res.kind == "count":
        return ("deviance = mean Poisson deviance 2 (y log(y / mu) - y + mu) of the test counts "
                "y, mu = predicted count; D^2 = 1 - deviance / deviance of the test part's "
                f"constant rate; pooled over the test rows{tail}")
    if res.kind == "multiclass":
        return ("log-loss = mean over test rows of -log p(true class); accuracy = share of "
                f"test rows classified right, pooled; macro accuracy = mean over "
                f"{res.task_word} of each one's accuracy{tail}")
    if res.kind == "quantile":
        q = res.options["quantile"]
        return (f"pinball loss = mean pinball loss at q = {q:g} of the test rows, pooled; "
                f"coverage = share of test targets <= prediction (ideal: {q:g}){tail}")
    if res.kind == "robust":
        scales = sorted({float(r["huber_scale"]) for r in res.split_rows
                         if r.get("huber_scale") is not None})
        shown = (f"{scales[0]:.4g}" if len(scales) == 1 else
                 f"{scales[0]:.4g}..{scales[-1]:.4g}") if scales else "per split"
        return (f"Huber loss = mean over test rows of h(r / s), h Huber's function with "
                f"epsilon = {res.options['epsilon']:g}, s = 1.4826 MAD of the training targets "
                f"around their task's median (s = {shown}); MAE = mean |r|; nMSE = test MSE / "
                f"Var(test y); pooled{tail}")
    return (f"nMSE = test MSE / Var(test y), pooled; aMSE = mean over {res.task_word} of "
            f"MSE_t / Var(y_t){tail}")


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


#: A bar whose value exceeds this many times the median of the others' is drawn off the
#: scale of the figure (clipped at the axis' end, its value written there), so that it does
#: not flatten the others.
OFF_SCALE = 3.0


def _axis_end(means: np.ndarray, stds: np.ndarray) -> tuple[float, np.ndarray]:
    """The end of the bar axis (which starts at 0), and which bars lie beyond it.

    A bar is off the scale when its mean exceeds :data:`OFF_SCALE` times the median of the
    means (with at least two bars on the scale); the axis then ends 15% past the largest
    ``mean + std`` of the bars on it.
    """
    ok = np.isfinite(means)
    off = np.zeros(means.shape, dtype=bool)
    if ok.sum() >= 3:
        med = float(np.median(means[ok]))
        if med > 0:
            off = ok & (means > OFF_SCALE * med)
            if (ok & ~off).sum() < 2:
                off[:] = False
    keep = ok & ~off
    if not keep.any():
        return 1.0, off
    top = float(np.max(means[keep] + np.nan_to_num(stds[keep])))
    return (1.15 * top if top > 0 else 1.0), off


def plot_benchmark(res: BenchmarkResult) -> Any:
    """Figure: the metrics ± std per model (best at the top), and the trace-norm model's
    singular values on split 0.

    Regression and binary classification draw their first metric (nMSE, AUC); the other
    kinds one panel per metric of :data:`METRICS` (deviance and D^2; log-loss and the two
    accuracies; pinball loss and coverage, with the quantile marked; Huber loss, MAE and
    nMSE). The bar axes start at 0, so that bar lengths compare as ratios (a D^2 below 0 is
    drawn from 0 to the left); a model far off the others (:data:`OFF_SCALE`) is clipped at
    the axis' end, marked with ``//`` and its value written there, instead of flattening the
    others. The spectrum (of the task-class columns for more than two classes) marks singular
    values that are zero (to machine precision) at zero (see
    :func:`~multitask.plotting.plot_singular_values`).

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

    panels = METRICS[res.kind][:1] if res.kind in _LEFT_OUT else METRICS[res.kind]
    two = res.trace_coef is not None
    n = len(res.rows)
    widths = [1.4] + [1.0] * (len(panels) - 1) + ([1.0] if two else [])
    fig = Figure(figsize=(6.5 + 4.5 * (len(widths) - 1), max(3.2, 0.32 * n + 1.2)),
                 layout="constrained")
    axes = list(np.atleast_1d(fig.subplots(1, len(widths), width_ratios=widths)))
    rows = res.rows[::-1]  # best at the top
    pos = np.arange(n)
    for i, (key, label, larger) in enumerate(panels):
        ax = axes[i]
        means = np.array([r[f"{key}_mean"] for r in rows], dtype=float)
        stds = np.array([r[f"{key}_std"] for r in rows], dtype=float)
        _bars(ax, pos, means, stds, larger)
        if i == 0:
            ax.set_yticks(pos, [_stem(r["model"]) for r in rows], fontsize=8)
        else:
            ax.set_yticks(pos, [""] * n)
        if larger is None and res.kind == "quantile":
            q = res.options.get("quantile")
            ax.axvline(q, color="#c44e52", lw=1.2, ls="--")
            ax.set_xlim(0.0, 1.0)
            ax.set_xlabel(f"test {label} (mean ± std over splits; ideal {q:g}, dashed)",
                          fontsize=8 if i else None)
        else:
            way = "higher" if larger else "lower"
            ax.set_xlabel(f"test {label} (mean ± std over splits; {way} is better)"
                          + ax.get_xlabel(), fontsize=8 if i else None)
    axes[0].set_title(f"{res.name}: {res.setting}", fontsize=10)
    if two:
        columns = res.n_tasks is not None and res.trace_coef.shape[0] != res.n_tasks
        title = ("Trace-norm model: singular values of the\ntask-class columns (split 0)"
                 if columns else "Trace-norm model: singular values (split 0)")
        plot_singular_values({"TraceNorm coef_": res.trace_coef}, ax=axes[-1], title=title)
        if columns:
            axes[-1].title.set_fontsize(10)
    return fig


def _bars(ax: Any, pos: np.ndarray, means: np.ndarray, stds: np.ndarray,
          larger: bool | None) -> None:
    """Horizontal bars of ``means`` ± ``stds`` on an axis from 0 (or from the smallest value
    when some are negative), a bar far off the others clipped and its value written; the
    axis label gets `` (// : off scale, value written)`` when one is."""
    end, off = _axis_end(means, stds)
    low = float(np.nanmin(means)) if np.isfinite(means).any() else 0.0
    start = min(0.0, 1.15 * low)
    shown = np.where(off, end, np.nan_to_num(means))
    err = np.where(off, 0.0, np.nan_to_num(stds))
    ax.barh(pos, shown, xerr=err, capsize=3, color="#4c72b0")
    ax.set_xlim(start, end)
    for i in np.flatnonzero(off):
        ax.text(0.985 * end, pos[i], "//", ha="center", va="center", color="white",
                fontsize=9, fontweight="bold")
        ax.annotate(f"{means[i]:.4g} ± {stds[i]:.2g} (off scale)", (0.955 * end, pos[i]),
                    ha="right", va="center", fontsize=7, color="white")
    ax.set_xlabel(" (// : off scale, value written)" if off.any() else "")


#: The figure's name in the first versions, which ran on School only.
plot_school = plot_benchmark
