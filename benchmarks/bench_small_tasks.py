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
                                           [--n-alphas 10] [--folds 5] [--intercept-sd 2]
                                           [--settings "low rank" "shared support"]
                                           [--out results/small-tasks]

The table of the default run is in the user guide (model selection, few rows per task).
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
RULES = ("default", "K-fold")


def rule_params(rule: str, n_alphas: int, folds: int) -> dict:
    """``MultiTaskCV`` parameters of ``rule``: the default rule, or ``folds``-fold CV."""
    if rule == "default":
        return {"n_alphas": n_alphas, "cv": folds}
    return {"n_alphas": n_alphas, "cv": folds, "selection": "kfold"}


def make_data(setting: str, n_rows: int, repeat: int, intercept_sd: float = INTERCEPT_SD):
    """One draw of ``setting`` with ``n_rows`` training rows per task (seeded by both)."""
    make, kwargs, _ = SETTINGS[setting]
    rng = np.random.default_rng([repeat, n_rows, list(SETTINGS).index(setting)])
    return make(n_tasks=N_TASKS, n_features=N_FEATURES, n_samples=n_rows, n_test=N_TEST,
                intercept=intercept_sd * rng.standard_normal(N_TASKS),
                random_state=int(rng.integers(2**31)), **kwargs)


def run_one(setting: str, n_rows: int, repeat: int, model: str, rule: str,
            n_alphas: int = 10, folds: int = 5, intercept_sd: float = INTERCEPT_SD) -> dict:
    """Tune ``model`` with ``rule`` on one draw; test nMSE and whether it chose all zeros."""
    from threadpoolctl import threadpool_limits

    data = make_data(setting, n_rows, repeat, intercept_sd)
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        search = multitask.MultiTaskCV(getattr(multitask, model)(),
                                       **rule_params(rule, n_alphas, folds))
        search.fit(data.X, data.y)
        seconds = time.perf_counter() - t0
    pred = search.predict(data.X_test)
    return {"setting": setting, "rows": n_rows, "repeat": repeat, "model": model,
            "rule": rule, "nmse": float(nmse(np.concatenate(data.y_test), np.concatenate(pred))),
            "zero": bool(np.all(search.coef_ == 0)), "applied": search.selection_,
            "seconds": seconds}


def summarize(results: list[dict], sizes, settings, folds: int) -> list[str]:
    """The table and the verdict lines."""
    heads = {"default": "default rule", "K-fold": f"{folds}-fold CV"}
    lines = [f"{'setting':15s} {'rows':>4s}  {'model':26s} "
             + "".join(f"{heads[r]:>26s}" for r in RULES),
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
            pairs = {(r["repeat"], r["rule"]): r["nmse"] for r in results
                     if r["setting"] == setting and r["rows"] == n and r["model"] == mt}
            diff = np.array([pairs[k, "default"] - pairs[k, "K-fold"]
                             for k in sorted({k for k, _ in pairs})])
            se = diff.std(ddof=1) / np.sqrt(diff.size) if diff.size > 1 else float("nan")
            verdict.append(f"{setting}, {n:2d} rows per task: {mt} "
                           f"{'beats' if wins else 'does NOT beat'} both independent baselines "
                           f"under the default rule (best baseline - {mt} = {gain:+.3f} "
                           f"nMSE); default - {folds}-fold, paired: {diff.mean():+.3f} "
                           f"± {se:.3f} (s.e.)")
        lines.append("")
    return lines + verdict


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--sizes", type=int, nargs="+", default=[4, 8, 16])
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--n-alphas", type=int, default=10,
                        help="size of each model's default grid (default 10)")
    parser.add_argument("--folds", type=int, default=5,
                        help="K of the K-fold column, also given as cv=K to the default rule "
                        "(which uses it for tasks of more than SMALL_TASK_ROWS rows; default 5)")
    parser.add_argument("--intercept-sd", type=float, default=INTERCEPT_SD,
                        help=f"standard deviation of the per-task intercepts (default "
                        f"{INTERCEPT_SD:g})")
    parser.add_argument("--n-jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", default=None, help="folder for results.csv (every fit)")
    args = parser.parse_args(argv)

    jobs = [(s, n, r, m, rule, args.n_alphas, args.folds, args.intercept_sd)
            for s in args.settings
            for n in args.sizes for r in range(args.repeats)
            for m in (SETTINGS[s][2], *BASELINES) for rule in RULES]
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
    print(f"Small tasks: {N_TASKS} tasks, {N_FEATURES} features, {N_TEST} test rows per task, "
          f"intercepts N(0, {args.intercept_sd:g}^2); "
          f"test nMSE, mean ± std over {args.repeats} draws [times the choice was all zeros, "
          f"i.e. the per-task means]")
    print(f"grids of {args.n_alphas} values; default rule: MultiTaskCV(cv={args.folds}) = "
          f"leave-one-out within tasks when the median task has <= {SMALL_TASK_ROWS} rows, "
          f"else {args.folds}-fold; {args.folds}-fold CV: cv={args.folds}, selection='kfold'\n")
    print("\n".join(summarize(results, args.sizes, args.settings, args.folds)))
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
