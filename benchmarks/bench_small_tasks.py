"""Model selection on small tasks: the default selection rule against 5-fold CV.

Two generated problems with a planted structure, 50 tasks of 20 standard normal features,
per-task intercepts drawn from N(0, 2^2), 4, 8 or 16 training rows per task and 50 test rows
per task:

* **low rank**: ``make_low_rank_tasks(rank=3, noise=4)``, the trace-norm model
  (``TraceNormRegressor``);
* **shared support**: ``make_joint_sparse_tasks(n_relevant=4, noise=2)``, joint feature
  selection (``L21Regressor``).

Each model, and the independent baselines (``IndependentRidgeRegressor``,
``IndependentLassoRegressor``), is tuned by ``MultiTaskCV`` over its default grid (10 values of
``alpha``) with

* **default**: ``MultiTaskCV``'s default selection rule (``selection="auto"``: leave-one-out
  within tasks, scored on the pooled out-of-fold predictions, when tasks have at most
  ``SMALL_TASK_ROWS`` rows);
* **5-fold**: ``cv=5, selection="kfold"`` (5 folds within tasks, best mean fold score, the rule
  before),

refitted on all training rows and scored by pooled test nMSE. The table gives the mean and
standard deviation over ``--repeats`` draws (the same draws for every model and rule) and, in
brackets, how many times the choice was the strongest value, where every weight is zero and
the model predicts the per-task training means. The last lines say, for each size, whether the
structured model beats both independent baselines under the default rule (mean nMSE).

Usage::

    python benchmarks/bench_small_tasks.py [--repeats 10] [--sizes 4 8 16] [--n-jobs 2]
                                           [--out results/small-tasks]
"""

from __future__ import annotations

import argparse
import csv
import os
import time
import warnings
from pathlib import Path

import numpy as np

import multitask
from multitask.datasets import make_joint_sparse_tasks, make_low_rank_tasks
from multitask.metrics import nmse
from multitask.model_selection import SMALL_TASK_ROWS
from multitask.progress import progress

N_TASKS, N_FEATURES, N_TEST, INTERCEPT_SD = 50, 20, 50, 2.0

SETTINGS = {
    "low rank": (make_low_rank_tasks, {"rank": 3, "noise": 4.0}, "TraceNormRegressor"),
    "shared support": (make_joint_sparse_tasks, {"n_relevant": 4, "noise": 2.0},
                       "L21Regressor"),
}
BASELINES = ("IndependentRidgeRegressor", "IndependentLassoRegressor")
RULES = {"default": {}, "5-fold": {"cv": 5, "selection": "kfold"}}


def make_data(setting: str, n_rows: int, repeat: int):
    """One draw of ``setting`` with ``n_rows`` training rows per task (seeded by both)."""
    make, kwargs, _ = SETTINGS[setting]
    rng = np.random.default_rng([repeat, n_rows, list(SETTINGS).index(setting)])
    return make(n_tasks=N_TASKS, n_features=N_FEATURES, n_samples=n_rows, n_test=N_TEST,
                intercept=INTERCEPT_SD * rng.standard_normal(N_TASKS),
                random_state=int(rng.integers(2**31)), **kwargs)


def run_one(setting: str, n_rows: int, repeat: int, model: str, rule: str) -> dict:
    """Tune ``model`` with ``rule`` on one draw; test nMSE and whether it chose all zeros."""
    from threadpoolctl import threadpool_limits

    data = make_data(setting, n_rows, repeat)
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        search = multitask.MultiTaskCV(getattr(multitask, model)(), **RULES[rule])
        search.fit(data.X, data.y)
        seconds = time.perf_counter() - t0
    pred = search.predict(data.X_test)
    return {"setting": setting, "rows": n_rows, "repeat": repeat, "model": model,
            "rule": rule, "nmse": float(nmse(np.concatenate(data.y_test), np.concatenate(pred))),
            "zero": bool(np.all(search.coef_ == 0)), "applied": search.selection_,
            "seconds": seconds}


def summarize(results: list[dict], sizes, settings) -> list[str]:
    """The table and the verdict lines."""
    lines = [f"{'setting':15s} {'rows':>4s}  {'model':26s} "
             + "".join(f"{r + ' rule':>26s}" for r in RULES),
             "-" * (48 + 26 * len(RULES))]
    verdict = []
    for setting in settings:
        models = [*BASELINES, SETTINGS[setting][2]]
        for n in sizes:
            means = {}
            for model in models:
                cells = []
                for rule in RULES:
                    sel = [r for r in results if r["setting"] == setting and r["rows"] == n
                           and r["model"] == model and r["rule"] == rule]
                    v = np.array([r["nmse"] for r in sel])
                    zeros = sum(r["zero"] for r in sel)
                    means[model, rule] = float(v.mean())
                    cells.append(f"{v.mean():.3f} ± {v.std():.3f} [{zeros:2d}/{len(v)}]")
                lines.append(f"{setting:15s} {n:4d}  {model:26s} "
                             + "".join(f"{c:>26s}" for c in cells))
            mt = SETTINGS[setting][2]
            wins = all(means[mt, "default"] < means[b, "default"] for b in BASELINES)
            gain = min(means[b, "default"] for b in BASELINES) - means[mt, "default"]
            verdict.append(f"{setting}, {n:2d} rows per task: {mt} "
                           f"{'beats' if wins else 'does NOT beat'} both independent baselines "
                           f"under the default rule (best baseline - {mt} = {gain:+.3f} nMSE)")
        lines.append("")
    return lines + verdict


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--sizes", type=int, nargs="+", default=[4, 8, 16])
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--n-jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", default=None, help="folder for results.csv (every fit)")
    args = parser.parse_args(argv)

    jobs = [(s, n, r, m, rule) for s in args.settings for n in args.sizes
            for r in range(args.repeats) for m in (SETTINGS[s][2], *BASELINES) for rule in RULES]
    t0 = time.perf_counter()
    results = []
    with progress(len(jobs), "small-task benchmark") as bar:
        if args.n_jobs == 1:
            for job in jobs:
                results.append(run_one(*job))
                bar.advance()
        else:
            from joblib import Parallel, delayed

            par = Parallel(n_jobs=args.n_jobs, return_as="generator_unordered")
            for res in par(delayed(run_one)(*job) for job in jobs):
                results.append(res)
                bar.advance()
    wall = time.perf_counter() - t0
    print(f"Small tasks: {N_TASKS} tasks, {N_FEATURES} features, {N_TEST} test rows per task; "
          f"test nMSE, mean ± std over {args.repeats} draws [times the choice was all zeros, "
          f"i.e. the per-task means]")
    print(f"default rule: leave-one-out within tasks when the median task has <= "
          f"{SMALL_TASK_ROWS} rows, else 5-fold; 5-fold: cv=5, selection='kfold'\n")
    print("\n".join(summarize(results, args.sizes, args.settings)))
    cpu = sum(r["seconds"] for r in results)
    print(f"\n{len(jobs)} cross-validated fits in {wall:.0f} s wall ({cpu:.0f} s of fitting)")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        with open(out / "results.csv", "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(results[0]))
            writer.writeheader()
            writer.writerows(results)
        print(f"wrote {out / 'results.csv'}")


if __name__ == "__main__":
    main()
