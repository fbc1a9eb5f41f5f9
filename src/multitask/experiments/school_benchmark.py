"""The main benchmark: every baseline model on School, hyper-parameters by cross-validation.

Protocol (``multitask benchmark school``):

* data: School (139 schools, 15,362 students, 27 features), shipped with the package;
* splits: the 10 official 75% / 25% splits (the first ``--splits``), or, with
  ``--train-ratio p``, random per-school splits with ``round(p * n_t)`` training rows;
* features standardized with the training part's pooled mean and standard deviation; the bias
  column is dropped because every model fits an unpenalized intercept per school;
* each model's ``alpha`` chosen by 3-fold cross-validation inside the training part (folds
  drawn within each school) over a grid relative to ``alpha_max`` (path with warm starts),
  scored by pooled nMSE;
* metric: pooled nMSE = test MSE / variance of the pooled test targets (see
  :mod:`multitask.metrics`), and the task-averaged variant (aMSE).
"""

from __future__ import annotations

import sys

import numpy as np

from multitask.datasets import load_school, split_tasks
from multitask.estimators import (
    IndependentLassoRegressor,
    IndependentRidgeRegressor,
    L21Regressor,
    PooledRegressor,
    TraceNormRegressor,
)
from multitask.experiments._common import summarize, timer
from multitask.experiments.registry import register
from multitask.metrics import amse, nmse
from multitask.model_selection import TaskKFold, path_cv, relative_grid, to_long_format

METHODS = {
    "IndependentRidge": (IndependentRidgeRegressor, None),
    "IndependentLasso": (IndependentLassoRegressor, "l1"),
    "Pooled": (PooledRegressor, None),
    "L21": (L21Regressor, "l21"),
    "TraceNorm": (TraceNormRegressor, "trace"),
}


def _standardize(X_tr, X_te):
    allx = np.vstack(X_tr)
    mu = allx.mean(axis=0)
    sd = allx.std(axis=0)
    sd[sd == 0] = 1.0
    return [(x - mu) / sd for x in X_tr], [(x - mu) / sd for x in X_te]


def _grid(est, X, y, penalty, n_grid):
    if penalty is None:  # ridge-type: absolute grid
        return list(np.logspace(1, -5, n_grid))
    lam_max = est.alpha_max(X, y)
    return list(relative_grid(lam_max, n_grid, 1e-3))


def run_split(X_tr, y_tr, X_te, y_te, *, methods, n_grid=8, cv_folds=3, random_state=0,
              n_jobs=None):
    """Fit every method on one split; return ``{method: (nmse, amse, seconds, alpha)}``."""
    X_tr, X_te = _standardize(X_tr, X_te)
    Xl, yl = to_long_format(X_tr, y_tr)
    Xt, yt = to_long_format(X_te, y_te)
    task_te = Xt[:, -1]
    out = {}
    for name in methods:
        cls, penalty = METHODS[name]
        est = cls(task_column=-1, tol=1e-5, max_iter=2000)
        with timer() as tm:
            grid = _grid(est, Xl, yl, penalty, n_grid)
            cv = TaskKFold(cv_folds, task_column=-1, random_state=random_state)
            best, _, fitted = path_cv(est, "alpha", grid, Xl, yl, cv=cv, n_jobs=n_jobs)
        pred = fitted.predict(Xt)
        out[name] = (nmse(yt, pred, task_te), amse(yt, pred, task_te), tm["seconds"], best)
    return out


def add_arguments(parser):
    parser.add_argument("--splits", type=int, default=10,
                        help="number of train/test splits (default 10, the official ones)")
    parser.add_argument("--train-ratio", type=float, default=None,
                        help="random per-school training ratio instead of the official splits")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--grid-size", type=int, default=8, help="alpha values per model")


@register(
    "school-benchmark",
    datasets=("school",),
    description="Baselines (independent ridge/lasso, pooled, l2,1, trace norm) on School, "
    "alpha by CV; the main job `multitask benchmark school`.",
    add_arguments=add_arguments,
)
def run(args) -> list[dict]:
    bunch = load_school()
    n_splits = args.splits if getattr(args, "repeats", None) is None else args.repeats
    if getattr(args, "quick", False):
        n_splits = 1
    ratio = getattr(args, "train_ratio", None)
    if ratio is None and not 1 <= n_splits <= 10:
        raise ValueError(f"--splits must be between 1 and 10 for the official splits, got "
                         f"{n_splits}.")
    methods = getattr(args, "methods", list(METHODS))
    n_grid = getattr(args, "grid_size", 8) if not getattr(args, "quick", False) else 4
    results: dict[str, list] = {m: [] for m in methods}
    rng = np.random.default_rng(args.random_state)
    progress = getattr(args, "progress", None)
    for s in range(n_splits):
        if ratio is None:
            sp = bunch.splits[s]
            X_tr = [x[i] for x, i in zip(bunch.X, sp["train"], strict=True)]
            y_tr = [v[i] for v, i in zip(bunch.y, sp["train"], strict=True)]
            X_te = [x[i] for x, i in zip(bunch.X, sp["test"], strict=True)]
            y_te = [v[i] for v, i in zip(bunch.y, sp["test"], strict=True)]
        else:
            X_tr, y_tr, X_te, y_te = split_tasks(
                bunch.X, bunch.y, train_ratio=ratio, random_state=int(rng.integers(2**31))
            )
        res = run_split(X_tr, y_tr, X_te, y_te, methods=methods, n_grid=n_grid,
                        random_state=args.random_state + s, n_jobs=getattr(args, "n_jobs", None))
        for m, v in res.items():
            results[m].append(v)
        if progress is not None:
            progress(s + 1, n_splits)
        else:
            print(f"split {s + 1}/{n_splits} done", file=sys.stderr)
    setting = "official 75/25 splits" if ratio is None else f"train ratio {ratio:g}"
    rows = []
    for m, vals in results.items():
        arr = np.array([v[:3] for v in vals])
        rows.append(summarize("school-benchmark", "school", setting, m, "nMSE", arr[:, 0],
                              arr[:, 2]))
        rows.append(summarize("school-benchmark", "school", setting, m, "aMSE", arr[:, 1],
                              arr[:, 2]))
    return rows
