"""The main job, ``multitask benchmark school``: every School-capable regressor on School.

Protocol:

* data: School (139 schools, 15,362 students, 27 features), shipped with the package;
* splits: the first ``n_splits`` of the 10 official 75% / 25% splits, or, with
  ``train_ratio=p``, random per-school splits with ``round(p * n_t)`` training rows;
* features standardized with the training part's pooled mean and standard deviation (every
  model fits an unpenalized intercept per school);
* each model's hyper-parameters chosen by :class:`~multitask.MultiTaskCV` inside the training
  part (``cv`` folds drawn within each school, the model's own default grid of ``n_alphas``
  values, warm-started paths, the library's default selection rule), then refitted on the
  whole training part;
* metrics on the test part: pooled nMSE (test MSE / variance of the pooled test targets) and
  aMSE (the mean over schools of MSE_t / Var(y_t)), see :mod:`multitask.metrics`.

The models are found, not listed: every ``*Regressor`` of ``multitask.__all__`` (a deprecated
alias counted once) except those of :data:`SKIPPED`, which need information School does not
have (a task graph, an order of the tasks) or repeat another model. A model whose default grid
fails on School is reported as skipped with the reason. A new model of the library therefore
appears in the benchmark without any edit here.

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

__all__ = [
    "DEFAULT_CV",
    "DEFAULT_ALPHA_RATIO",
    "DEFAULT_N_ALPHAS",
    "DEFAULT_SPLITS",
    "SKIPPED",
    "SchoolBenchmark",
    "format_table",
    "plot_school",
    "run_school",
    "school_regressors",
    "write_csv",
]

#: Official splits used by default (``--splits``).
DEFAULT_SPLITS = 3
#: Size of each model's default grid (``--grid-size``).
DEFAULT_N_ALPHAS = 7
#: Smallest / largest value of each model's default grid (two decades: on School the chosen
#: values lie there, and the path is continued past the weak end when the best value is there).
DEFAULT_ALPHA_RATIO = 1e-2
#: Folds of the cross-validation inside each training part (``--cv-folds``).
DEFAULT_CV = 3

#: Regressors of ``multitask.__all__`` left out of the School benchmark, and why.
SKIPPED: dict[str, str] = {
    "MultiTaskRegressor": "the generic model: each of its penalties is a named model here",
    "GraphRegularizedRegressor": "needs a task graph (without one it is the mean-regularized "
                                 "model plus an l1 term)",
    "TemporalGroupLassoRegressor": "needs an order of the tasks in time",
    "FusedSparseGroupLassoRegressor": "needs an order of the tasks in time",
}

#: Models whose fits take longest, started first so that parallel jobs end together.
_SLOW_FIRST = ("CappedTraceRegressor", "RobustMTLRegressor", "CappedL1Regressor",
               "TaskRelationshipRegressor", "ClusteredMTLRegressor", "ConvexASORegressor",
               "SparseLowRankRegressor", "DirtyModelRegressor")

#: The model whose singular value spectrum the figure draws.
SPECTRUM_MODEL = "TraceNormRegressor"

#: Columns of ``results.csv`` (one row per model, sorted by nMSE).
RESULT_COLUMNS = ("model", "nmse_mean", "nmse_std", "amse_mean", "amse_std", "n_splits",
                  "fit_seconds", "params")
#: Columns of ``splits.csv`` (one row per model and split).
SPLIT_COLUMNS = ("model", "split", "nmse", "amse", "fit_seconds", "params")


def school_regressors() -> dict[str, type]:
    """The regressors the School benchmark fits, by name, in the order of ``multitask.__all__``.

    Every class of ``multitask.__all__`` whose name ends in ``Regressor`` and that is a
    scikit-learn regressor, except the names of :data:`SKIPPED` and deprecated aliases (a class
    listed under a name other than its own).
    """
    from sklearn.base import is_regressor

    import multitask

    found = {}
    for name in multitask.__all__:
        obj = getattr(multitask, name, None)
        if not (isinstance(obj, type) and name.endswith("Regressor")):
            continue
        if obj.__name__ != name or name in SKIPPED:
            continue
        try:
            regressor = is_regressor(obj())
        except Exception:  # noqa: BLE001 - a class that cannot be built with defaults
            continue
        if regressor:
            found[name] = obj
    return found


def _resolve(models: Sequence[str] | None, available: dict[str, type]) -> list[str]:
    """Model names from user input (``TraceNorm`` or ``TraceNormRegressor``, any case)."""
    if models is None:
        return list(available)
    lookup = {}
    for name in available:
        lookup[name.lower()] = name
        lookup[name.removesuffix("Regressor").lower()] = name
    out = []
    for m in models:
        key = str(m).strip().lower()
        if key not in lookup:
            extra = f" ({SKIPPED[m]})" if m in SKIPPED else ""
            raise ValueError(f"Unknown model {m!r}{extra}: choose among "
                             f"{', '.join(available)}.")
        if lookup[key] not in out:
            out.append(lookup[key])
    if not out:
        raise ValueError("No model to run: give at least one name to --models.")
    return out


@dataclass
class SchoolBenchmark:
    """Results of :func:`run_school`.

    Attributes
    ----------
    rows : list of dict
        One row per model, sorted by mean nMSE: the keys of ``RESULT_COLUMNS``.
    split_rows : list of dict
        One row per model and split (the keys of ``SPLIT_COLUMNS``).
    skipped : dict
        Models left out on School: name -> reason (the default grid failed).
    trace_coef : ndarray of shape (n_tasks, n_features) or None
        ``coef_`` of the trace-norm model on the first split (None when that model did not
        run), whose singular values the figure draws.
    setting : str
        The splits, in words.
    seconds : float
        Wall time of the run.
    """

    rows: list[dict]
    split_rows: list[dict]
    skipped: dict[str, str] = field(default_factory=dict)
    trace_coef: np.ndarray | None = None
    setting: str = ""
    seconds: float = 0.0


def _splits(n_splits: int, train_ratio: float | None, random_state: int):
    """``[(X_tr, y_tr, X_te, y_te)]`` per split, per-task lists, features standardized."""
    from multitask.datasets import load_school, split_tasks

    school = load_school()
    if train_ratio is None and not 1 <= n_splits <= len(school.splits):
        raise ValueError(f"--splits must be between 1 and {len(school.splits)} for the "
                         f"official splits, got {n_splits}.")
    if train_ratio is not None and not 0 < train_ratio < 1:
        raise ValueError(f"--train-ratio must be in (0, 1), got {train_ratio}.")
    if n_splits < 1:
        raise ValueError(f"--splits must be at least 1, got {n_splits}.")
    rng = np.random.default_rng(random_state)
    out = []
    for s in range(n_splits):
        if train_ratio is None:
            sp = school.splits[s]
            X_tr = [x[i] for x, i in zip(school.X, sp["train"], strict=True)]
            y_tr = [v[i] for v, i in zip(school.y, sp["train"], strict=True)]
            X_te = [x[i] for x, i in zip(school.X, sp["test"], strict=True)]
            y_te = [v[i] for v, i in zip(school.y, sp["test"], strict=True)]
        else:
            X_tr, y_tr, X_te, y_te = split_tasks(school.X, school.y, train_ratio=train_ratio,
                                                 random_state=int(rng.integers(2**31)))
        pooled = np.vstack(X_tr)
        mu, sd = pooled.mean(axis=0), pooled.std(axis=0)
        sd[sd == 0] = 1.0
        out.append(([(x - mu) / sd for x in X_tr], list(y_tr),
                    [(x - mu) / sd for x in X_te], list(y_te)))
    return out


def _job(name: str, split: int, data, n_alphas: int, alpha_ratio: float, cv: int,
         random_state: int, limit_threads: bool) -> dict:
    """Cross-validate one model on one training part and score it on the test part."""
    import multitask
    from multitask.metrics import amse, nmse

    X_tr, y_tr, X_te, y_te = data
    limiter = None
    if limit_threads:
        from threadpoolctl import threadpool_limits

        limiter = threadpool_limits(1)
    try:
        est = getattr(multitask, name)()
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence notes of grid points far from the best
            search = multitask.MultiTaskCV(est, cv=cv, n_alphas=n_alphas,
                                           alpha_ratio=alpha_ratio,
                                           random_state=random_state + split).fit(X_tr, y_tr)
        seconds = time.perf_counter() - t0
        pred = search.predict(X_te)
    finally:
        if limiter is not None:
            limiter.restore_original_limits()
    y_all, p_all = np.concatenate(y_te), np.concatenate(pred)
    task = np.concatenate([np.full(len(v), t) for t, v in enumerate(y_te)])
    params = {k: float(v) if isinstance(v, (int, float, np.number)) else v
              for k, v in search.best_params_.items()}
    out = {"model": name, "split": split, "nmse": float(nmse(y_all, p_all)),
           "amse": float(amse(y_all, p_all, task)), "fit_seconds": seconds, "params": params}
    if name == SPECTRUM_MODEL and split == 0:
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


def run_school(n_splits: int = DEFAULT_SPLITS, models: Sequence[str] | None = None, *,
               train_ratio: float | None = None, n_alphas: int = DEFAULT_N_ALPHAS,
               alpha_ratio: float = DEFAULT_ALPHA_RATIO, cv: int = DEFAULT_CV,
               n_jobs: int | None = None, random_state: int = 0,
               show_progress: bool = True) -> SchoolBenchmark:
    """Run the School benchmark.

    Parameters
    ----------
    n_splits : int, default=DEFAULT_SPLITS
        Number of splits (the first official ones, at most 10, unless ``train_ratio``).
    models : sequence of str, optional
        Model names (``"TraceNormRegressor"`` or ``"TraceNorm"``); default: every model of
        :func:`school_regressors`.
    train_ratio : float, optional
        Random per-school splits with this training fraction instead of the official ones.
    n_alphas : int, default=DEFAULT_N_ALPHAS
        Size of each model's default grid.
    alpha_ratio : float, default=DEFAULT_ALPHA_RATIO
        Smallest / largest value of each model's default grid.
    cv : int, default=DEFAULT_CV
        Folds of the cross-validation inside each training part (within each school).
    n_jobs : int, optional
        Parallel processes over (model, split) pairs; default: every core.
    random_state : int, default=0
        Seed of the folds (and of the random splits).
    show_progress : bool, default=True
        Report finished fits through :mod:`multitask.progress`.

    Returns
    -------
    SchoolBenchmark

    Raises
    ------
    ValueError
        On an unknown model name, an invalid number of splits, folds or grid size.
    """
    t_start = time.perf_counter()
    for label, value, low in (("grid size", n_alphas, 1), ("number of folds", cv, 2)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"The {label} must be an integer >= {low}, got {value!r}.")
    if not 0 < float(alpha_ratio) < 1:
        raise ValueError(f"The grid ratio must be in (0, 1), got {alpha_ratio!r}.")
    available = school_regressors()
    names = _resolve(models, available)
    data = _splits(int(n_splits), train_ratio, random_state)

    skipped = {}
    X0, y0 = data[0][0], data[0][1]
    for name in list(names):  # a model whose default grid fails on School is left out
        try:
            available[name]().default_grid(X0, y0, n_alphas=2)
        except (ValueError, TypeError) as exc:
            skipped[name] = f"{type(exc).__name__}: {exc}"
            names.remove(name)
    if not names:
        raise ValueError("No model can run on School: " + "; ".join(
            f"{k}: {v}" for k, v in skipped.items()))

    order = sorted(names, key=lambda n: _SLOW_FIRST.index(n) if n in _SLOW_FIRST
                   else len(_SLOW_FIRST))
    jobs = [(name, s) for s in range(len(data)) for name in order]
    cores = os.cpu_count() or 1
    workers = cores if n_jobs is None else (cores if n_jobs < 0 else max(1, int(n_jobs)))
    workers = min(workers, len(jobs))
    results = []
    from multitask.progress import progress

    bar = progress(len(jobs), "School benchmark",
                   **({} if show_progress else {"mode": "off"}))
    with bar:
        if workers == 1:
            for name, s in jobs:
                results.append(_job(name, s, data[s], n_alphas, alpha_ratio, cv,
                                    random_state, False))
                bar.advance()
        else:
            from joblib import Parallel, delayed

            par = Parallel(n_jobs=workers, return_as="generator_unordered")
            for res in par(delayed(_job)(name, s, data[s], n_alphas, alpha_ratio, cv,
                                         random_state, True) for name, s in jobs):
                results.append(res)
                bar.advance()

    trace_coef = next((r.pop("coef") for r in results if "coef" in r), None)
    results.sort(key=lambda r: (r["split"], names.index(r["model"])))
    rows = []
    for name in names:
        mine = [r for r in results if r["model"] == name]
        nm = np.array([r["nmse"] for r in mine])
        am = np.array([r["amse"] for r in mine])
        rows.append({"model": name, "nmse_mean": float(nm.mean()), "nmse_std": float(nm.std()),
                     "amse_mean": float(am.mean()), "amse_std": float(am.std()),
                     "n_splits": len(mine),
                     "fit_seconds": float(np.mean([r["fit_seconds"] for r in mine])),
                     "params": _format_params([r["params"] for r in mine])})
    rows.sort(key=lambda r: r["nmse_mean"])
    split_rows = [{**r, "params": _format_params([r["params"]])} for r in results]
    setting = (f"{len(data)} official 75/25 split{'s' if len(data) > 1 else ''}"
               if train_ratio is None else
               f"{len(data)} random split{'s' if len(data) > 1 else ''}, training ratio "
               f"{train_ratio:g}")
    return SchoolBenchmark(rows=rows, split_rows=split_rows, skipped=skipped,
                           trace_coef=trace_coef, setting=setting,
                           seconds=time.perf_counter() - t_start)


def format_table(res: SchoolBenchmark, cv: int = DEFAULT_CV) -> str:
    """The result table as text, sorted by nMSE (lower is better)."""
    header = ("model", "nMSE", "aMSE", "fit s", "chosen")
    body = [(r["model"], f"{r['nmse_mean']:.4f} ± {r['nmse_std']:.4f}",
             f"{r['amse_mean']:.4f} ± {r['amse_std']:.4f}", f"{r['fit_seconds']:.1f}",
             r["params"]) for r in res.rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(header)]
    lines = [f"School: {res.setting}, hyper-parameters by {cv}-fold CV within schools "
             "inside each training part",
             "nMSE = test MSE / Var(test y), pooled; aMSE = mean over schools of "
             "MSE_t / Var(y_t); mean ± std over splits; fit s = CV + refit per split",
             "",
             "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths, strict=True)).rstrip()
              for b in body]
    for name, why in res.skipped.items():
        lines.append(f"(skipped {name}: {why})")
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


def plot_school(res: SchoolBenchmark) -> Any:
    """Figure: nMSE ± std per model (sorted), and the trace-norm model's singular values.

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

    two = res.trace_coef is not None
    n = len(res.rows)
    fig = Figure(figsize=(11 if two else 6.5, max(3.2, 0.32 * n + 1.2)), layout="constrained")
    axes = fig.subplots(1, 2, width_ratios=[1.4, 1]) if two else [fig.add_subplot()]
    ax = axes[0]
    rows = res.rows[::-1]  # best at the top
    pos = np.arange(n)
    ax.barh(pos, [r["nmse_mean"] for r in rows], xerr=[r["nmse_std"] for r in rows],
            capsize=3, color="#4c72b0")
    ax.set_yticks(pos, [r["model"].removesuffix("Regressor") for r in rows], fontsize=8)
    lo = min(r["nmse_mean"] - r["nmse_std"] for r in rows)
    hi = max(r["nmse_mean"] + r["nmse_std"] for r in rows)
    pad = 0.1 * max(hi - lo, 1e-3)
    ax.set_xlim(max(0.0, lo - pad), hi + pad)
    ax.set_xlabel("test nMSE (mean ± std over splits; lower is better)")
    ax.set_title(f"School: {res.setting}", fontsize=10)
    if two:
        plot_singular_values({"TraceNorm coef_": res.trace_coef}, ax=axes[1],
                             title="Trace-norm model: singular values (split 1)")
    return fig
