"""The result of a ``multitask benchmark`` run: its defaults, its columns and its record.

The defaults of the protocol (splits, grid size and ratio, folds), the baselines a verdict
compares against, the columns of ``results.csv`` and ``splits.csv`` of each kind, and
:class:`~multitask.benchmark.BenchmarkResult`, the record of a run that the verdict, the
table (:mod:`multitask.benchmark_report`) and the figure (:mod:`multitask.benchmark_figure`)
read. Every public name here is importable from :mod:`multitask.benchmark`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from multitask.benchmark_kinds import METRICS

__all__ = [
    "DEFAULT_ALPHA_RATIO",
    "DEFAULT_CV",
    "DEFAULT_N_ALPHAS",
    "DEFAULT_SPLITS",
    "FEW_TEST_ROWS",
    "INDEPENDENT",
    "POOLED",
    "RESULT_COLUMNS",
    "SPECTRUM_MODEL",
    "SPLIT_COLUMNS",
    "BenchmarkResult",
    "SchoolBenchmark",
    "result_columns",
    "split_columns",
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


#: The independent baselines (one model per task) and the pooled baseline (one model for all
#: tasks), by name without ``Regressor`` / ``Classifier``; every other model is multi-task.
INDEPENDENT = ("IndependentRidge", "IndependentLasso")
POOLED = ("Pooled",)

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


def _stem(name: str) -> str:
    """A model's name without ``Regressor`` / ``Classifier``."""
    return name.removesuffix("Regressor").removesuffix("Classifier")


@dataclass
class BenchmarkResult:
    """Results of :func:`~multitask.benchmark.run_benchmark` (and
    :func:`~multitask.benchmark.run_school`).

    Attributes
    ----------
    rows : list of dict
        One row per model, best first by the first metric: the keys of
        :func:`~multitask.benchmark.result_columns`.
    split_rows : list of dict
        One row per model and split (the keys of :func:`~multitask.benchmark.split_columns`).
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
        :func:`~multitask.benchmark.verdict` of the run (None for a partial run).
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
