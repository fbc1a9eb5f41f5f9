"""New tasks after fit on School: the new-task fit against independent ridge and a full refit.

Protocol, for each of ``--repeats`` seeded draws:

* School's 139 schools are shuffled: ``--n-fit`` (100) are the tasks of fit, the other 39 the
  new tasks. The rows of each new school are shuffled: its first 16 rows are its pool of
  training rows (the first ``k`` are used for ``k`` in ``--sizes``, 2 4 8 16), the rows after
  the 16th its test rows (the same test rows for every ``k``).
* Features are standardized with the pooled mean and standard deviation of the fit schools.
* Each model's hyper-parameters are chosen by :class:`~multitask.MultiTaskCV` on the fit
  schools (3 folds within schools, the model's default grid of 7 values over two decades, as
  in ``multitask benchmark school``) and the model is refitted on them.
* **new-task fit**: a copy of that model learns the 39 new schools from their ``k`` rows each
  (``fit_new_tasks``, strength ``--strength``, default ``"auto"``: cross-validated on the new
  rows where the problem has a closed form and every new school has at least 3 rows, the
  ``"scaled"`` rule otherwise);
* **independent ridge**: ``IndependentRidgeRegressor``, chosen the same way on the fit schools,
  learns the new schools from the same rows with the same strength rule (its new-task prior is
  its own ridge: each new school alone);
* **full refit**: the model with the same hyper-parameters fitted on all 139 schools (the fit
  schools' rows and the new schools' ``k`` rows).

Scores: pooled test nMSE over the new schools' test rows (test MSE over the variance of those
targets), mean ± standard deviation over the draws; for reference, the last column is that of
the population model (the mean of the fitted schools' models, which uses none of the new
rows: ``predict(..., unknown_tasks="population")``). Times: CPU seconds (one BLAS thread) of
the new-task fit (after a warm-up call; the median of ``NEW_TASK_TIMINGS`` calls, each on a
fresh copy of the fitted model, which has computed nothing for new tasks yet, since one call
lasts about a millisecond) and of the full refit (one call), and the ratio of their medians
over the draws. numba's target is set up before anything is timed
(:func:`multitask.compiled.set_up`, a one-off start-up of each process, like compilation), so
that every timed call runs the compiled kernels.

Acceptance (issue 24): at 2, 4 and 8 rows, the new-task fit of the low-rank and
mean-regularized families beats independent ridge (mean nMSE), is within 5% of the full refit
(mean nMSE at most 1.05 times the refit's) and at least 20 times faster (median CPU time).

Usage::

    python benchmarks/bench_new_tasks.py [--repeats 10] [--sizes 2 4 8 16]
                                         [--models TraceNorm MeanRegularized ...]
                                         [--strength auto] [--n-jobs 1]
                                         [--out results/new-tasks]

The default run covers every School-capable regressor (``multitask.benchmark``); the table of
the run quoted in the user guide came from this command.

Survey-shaped problem (``--survey``): ``strength="auto"`` with too few rows for
cross-validation. A generated problem shaped like a 190-person survey: 190 tasks of 8 rows
for the fit, ``--new-tasks`` (40) new tasks of 2 rows each, 10 correlated features, each
task's weights the population's plus a rank-2 deviation and its intercept the population's
plus a deviation, both of scale ``h`` (``--heterogeneity``, several values: small ``h`` is the
survey's case, persons alike beside the noise of their answers; noise of unit variance), and
30 test rows per new task. Each model's hyper-parameters are chosen by
:class:`~multitask.MultiTaskCV` on the 190 tasks (as above), then the new tasks are learned
with ``strength="scaled"`` (what ``"auto"`` did with 2 rows before it compared),
``strength="auto"`` (which now compares ``"scaled"`` with the population model by
leave-one-out on the new rows, :func:`multitask.estimators.new_tasks.compare_with_population`)
and predicted by the population model (``unknown_tasks="population"``). The table gives the
pooled test nMSE over the new tasks' test rows (mean ± std over the draws), how often
``"auto"`` chose the population model, and ``auto - min``: the mean excess of ``"auto"`` over
the better of the two on each draw::

    python benchmarks/bench_new_tasks.py --survey [--repeats 5] [--heterogeneity 0.2 1 3]
                                         [--models TraceNorm L21 TaskRelationship ...]
"""

from __future__ import annotations

import argparse
import copy
import csv
import os
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.base import clone

import multitask
import multitask.compiled
from multitask.benchmark import school_regressors
from multitask.datasets import load_school
from multitask.metrics import nmse

N_FIT = 100
POOL = 16
#: Calls of the new-task fit timed per draw and size (the median is kept).
NEW_TASK_TIMINGS = 5
SIZES = (2, 4, 8, 16)
RIDGE = "IndependentRidgeRegressor"

#: Model families of the acceptance (the others are reported too).
FAMILIES = {
    "low rank": ("TraceNormRegressor", "CappedTraceRegressor", "SparseLowRankRegressor",
                 "RobustMTLRegressor", "ConvexASORegressor"),
    "mean-regularized": ("MeanRegularizedRegressor", "GraphRegularizedRegressor"),
    "clustered": ("ClusteredMTLRegressor",),
    "task relationship": ("TaskRelationshipRegressor",),
    "joint sparsity": ("L21Regressor", "L1InfRegressor", "DirtyModelRegressor",
                       "RobustFeatureLearningRegressor", "CappedL1Regressor"),
    "baseline": ("IndependentRidgeRegressor", "IndependentLassoRegressor", "PooledRegressor"),
}
ACCEPTANCE = ("low rank", "mean-regularized")
ACCEPT_SIZES = (2, 4, 8)
WITHIN, FASTER = 1.05, 20.0


def family(model: str) -> str:
    for name, members in FAMILIES.items():
        if model in members:
            return name
    return "other"


def cpu_time(fn):
    """CPU seconds of ``fn()`` and its result."""
    t0 = time.process_time()
    out = fn()
    return time.process_time() - t0, out


def draw(repeat: int, n_fit: int = N_FIT):
    """One draw: long-format arrays of the fit schools, and per new school its pool of 16
    training rows and its test rows, features standardized on the fit schools."""
    school = load_school()
    rng = np.random.default_rng([repeat, 24])
    order = rng.permutation(len(school.X))
    fit, new = order[:n_fit], order[n_fit:]
    X_fit = np.vstack([school.X[t] for t in fit])
    mu, sd = X_fit.mean(axis=0), X_fit.std(axis=0)
    sd[sd == 0] = 1.0
    out = {"X_fit": (X_fit - mu) / sd, "y_fit": np.concatenate([school.y[t] for t in fit]),
           "task_fit": np.concatenate([np.full(len(school.y[t]), t) for t in fit]),
           "pool": [], "test": []}
    for t in new:
        rows = rng.permutation(len(school.y[t]))
        Xt = (school.X[t] - mu) / sd
        out["pool"].append((t, Xt[rows[:POOL]], school.y[t][rows[:POOL]]))
        out["test"].append((t, Xt[rows[POOL:]], school.y[t][rows[POOL:]]))
    return out


def new_rows(data, k: int):
    """The first ``k`` pool rows of every new school, long format."""
    X = np.vstack([Xp[:k] for _, Xp, _ in data["pool"]])
    y = np.concatenate([yp[:k] for _, _, yp in data["pool"]])
    task = np.concatenate([np.full(k, t) for t, _, _ in data["pool"]])
    return X, y, task


def test_rows(data):
    X = np.vstack([Xt for _, Xt, _ in data["test"]])
    y = np.concatenate([yt for _, _, yt in data["test"]])
    task = np.concatenate([np.full(len(yt), t) for t, _, yt in data["test"]])
    return X, y, task


def run_model(model: str, repeat: int, sizes, strength, cv: int = 3, n_alphas: int = 7,
              alpha_ratio: float = 1e-2) -> list[dict]:
    """One model on one draw: its CV on the fit schools, then per size the new-task fit and
    the full refit."""
    from threadpoolctl import threadpool_limits

    multitask.compiled.set_up()
    data = draw(repeat)
    X_te, y_te, t_te = test_rows(data)
    rows = []
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence notes of grid points far from the best
        search = multitask.MultiTaskCV(getattr(multitask, model)(), cv=cv, n_alphas=n_alphas,
                                       alpha_ratio=alpha_ratio, random_state=repeat)
        search.fit(data["X_fit"], data["y_fit"], data["task_fit"])
        base = search.best_estimator_
        p_pop = base.predict(X_te, t_te, unknown_tasks="population")
        X2, y2, t2 = new_rows(data, min(sizes))
        copy.deepcopy(base).fit_new_tasks(X2, y2, t2, strength=strength)  # warm-up
        for k in sizes:
            Xk, yk, tk = new_rows(data, k)
            times = []
            for _ in range(NEW_TASK_TIMINGS):
                est = copy.deepcopy(base)
                times.append(cpu_time(lambda est=est, Xk=Xk, yk=yk, tk=tk: est.fit_new_tasks(
                    Xk, yk, tk, strength=strength))[0])
            t_new = float(np.median(times))
            p_new = est.predict(X_te, t_te)
            assert np.array_equal(est.coef_[: len(base.tasks_)], base.coef_)
            full = clone(base)
            X_all = np.vstack([data["X_fit"], Xk])
            y_all = np.concatenate([data["y_fit"], yk])
            t_all = np.concatenate([data["task_fit"], tk])
            t_full, _ = cpu_time(lambda full=full, X=X_all, y=y_all, t=t_all: full.fit(X, y, t))
            p_full = full.predict(X_te, t_te)
            rows.append({"model": model, "repeat": repeat, "rows": k,
                         "nmse_new": float(nmse(y_te, p_new)),
                         "nmse_refit": float(nmse(y_te, p_full)),
                         "nmse_population": float(nmse(y_te, p_pop)),
                         "cpu_new": t_new, "cpu_refit": t_full,
                         "params": {p: float(v) for p, v in search.best_params_.items()}})
    return rows


def summarize(results: list[dict], models, sizes) -> list[str]:
    """The table and the acceptance lines."""
    def cell(model, k, key):
        return np.array([r[key] for r in results if r["model"] == model and r["rows"] == k])

    lines = [f"{'model':31s} {'family':17s} {'rows':>4s}  {'new-task nMSE':>15s}  "
             f"{'ridge nMSE':>15s}  {'refit nMSE':>15s}  {'new/refit':>9s}  "
             f"{'new ms':>7s}  {'refit ms':>8s}  {'speed-up':>8s}  {'population':>10s}",
             "-" * 160]
    verdict = []
    for model in models:
        for k in sizes:
            new, ridge = cell(model, k, "nmse_new"), cell(RIDGE, k, "nmse_new")
            refit = cell(model, k, "nmse_refit")
            t_new, t_ref = np.median(cell(model, k, "cpu_new")), np.median(
                cell(model, k, "cpu_refit"))
            speed = t_ref / max(t_new, 1e-9)
            lines.append(f"{model:31s} {family(model):17s} {k:4d}  "
                         f"{new.mean():.4f} ± {new.std():.4f}  "
                         f"{ridge.mean():.4f} ± {ridge.std():.4f}  "
                         f"{refit.mean():.4f} ± {refit.std():.4f}  "
                         f"{new.mean() / refit.mean():9.3f}  {1e3 * t_new:7.1f}  "
                         f"{1e3 * t_ref:8.1f}  {speed:7.0f}x  "
                         f"{cell(model, k, 'nmse_population').mean():10.4f}")
        lines.append("")
        if family(model) in ACCEPTANCE:
            for k in (s for s in ACCEPT_SIZES if s in sizes):
                new, ridge = cell(model, k, "nmse_new").mean(), cell(RIDGE, k, "nmse_new").mean()
                refit = cell(model, k, "nmse_refit").mean()
                speed = np.median(cell(model, k, "cpu_refit")) / max(
                    np.median(cell(model, k, "cpu_new")), 1e-9)
                ok = new < ridge and new <= WITHIN * refit and speed >= FASTER
                verdict.append(
                    f"{'PASS' if ok else 'MISS'} {model}, {k} rows: new-task nMSE {new:.4f} "
                    f"vs ridge {ridge:.4f} ({'beats' if new < ridge else 'does not beat'} it, "
                    f"{new - ridge:+.4f}), vs refit {refit:.4f} ({100 * (new / refit - 1):+.1f}%"
                    f", limit +{100 * (WITHIN - 1):.0f}%), {speed:.0f}x faster (limit "
                    f"{FASTER:.0f}x)")
    return lines + verdict


# ----------------------------------------------------------------------------- survey shape
SURVEY_TASKS, SURVEY_FIT_ROWS, SURVEY_FEATURES, SURVEY_TEST_ROWS = 190, 8, 10, 30
#: The survey run's default models: the low-rank, l2,1 and MTRL priors of the report, and the
#: mean-regularized one.
SURVEY_MODELS = ("TraceNormRegressor", "L21Regressor", "TaskRelationshipRegressor",
                 "MeanRegularizedRegressor")


def survey_draw(seed: int, heterogeneity: float, n_tasks: int = SURVEY_TASKS,
                fit_rows: int = SURVEY_FIT_ROWS, new_tasks: int = 40, new_rows: int = 2,
                d: int = SURVEY_FEATURES, test_rows: int = SURVEY_TEST_ROWS, rank: int = 2):
    """A generated problem shaped like a survey of ``n_tasks`` persons: ``(fit, new, test)``,
    each ``(X, y, task)`` in long format.

    Task ``t`` has weights ``w0 + h U v_t`` (``U`` of rank ``rank``) and intercept
    ``1 + h e_t`` (``v_t``, ``e_t`` standard normal, ``h`` the heterogeneity), features of
    unit variance and correlation 0.3, and noise of unit variance. The fit has ``fit_rows``
    rows of each of the ``n_tasks`` tasks; the ``new_tasks`` others have ``new_rows`` rows to
    learn from and ``test_rows`` rows to score.
    """
    rng = np.random.default_rng([seed, 33])
    m = n_tasks + new_tasks
    w0 = rng.standard_normal(d) / np.sqrt(d)
    U = rng.standard_normal((d, rank)) / np.sqrt(d)
    W = w0 + heterogeneity * rng.standard_normal((m, rank)) @ U.T
    b = 1.0 + heterogeneity * rng.standard_normal(m)
    L = np.linalg.cholesky(0.3 + 0.7 * np.eye(d))

    def rows(tasks, n):
        task = np.repeat(tasks, n)
        X = rng.standard_normal((len(task), d)) @ L.T
        y = np.einsum("nd,nd->n", X, W[task]) + b[task] + rng.standard_normal(len(task))
        return X, y, task

    new = np.arange(n_tasks, m)
    return rows(np.arange(n_tasks), fit_rows), rows(new, new_rows), rows(new, test_rows)


def run_survey(model: str, repeat: int, heterogeneity: float, new_tasks: int = 40,
               cv: int = 3, n_alphas: int = 7, alpha_ratio: float = 1e-2) -> dict:
    """One model on one survey-shaped draw: test nMSE of the new tasks with ``"scaled"``,
    ``"auto"`` and the population model, and what ``"auto"`` chose."""
    from threadpoolctl import threadpool_limits

    (X, y, t), (Xn, yn, tn), (Xt, yt, tt) = survey_draw(repeat, heterogeneity,
                                                         new_tasks=new_tasks)
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence notes of grid points far from the best
        search = multitask.MultiTaskCV(getattr(multitask, model)(), cv=cv, n_alphas=n_alphas,
                                       alpha_ratio=alpha_ratio, random_state=repeat)
        base = search.fit(X, y, t).best_estimator_
        out = {"model": model, "repeat": repeat, "heterogeneity": heterogeneity}
        for strength in ("scaled", "auto"):
            est = copy.deepcopy(base).fit_new_tasks(Xn, yn, tn, strength=strength)
            out[f"nmse_{strength}"] = float(nmse(yt, est.predict(Xt, tt)))
            if strength == "auto":
                out["auto_rule"] = str(est.new_task_strength_rule_[0])
        out["nmse_population"] = float(nmse(yt, base.predict(Xt, tt,
                                                             unknown_tasks="population")))
    return out


def summarize_survey(results: list[dict], models, levels) -> list[str]:
    """The survey table: per model and heterogeneity, nMSE of each rule, mean ± std."""
    lines = [f"{'model':27s} {'h':>5s}  {'scaled nMSE':>15s}  {'population nMSE':>15s}  "
             f"{'auto nMSE':>15s}  {'auto: population':>16s}  {'auto - min':>10s}",
             "-" * 116]
    for model in models:
        for h in levels:
            rows = [r for r in results if r["model"] == model and r["heterogeneity"] == h]
            if not rows:
                continue
            col = {k: np.array([r[f"nmse_{k}"] for r in rows])
                   for k in ("scaled", "population", "auto")}
            pop = sum(r["auto_rule"].startswith("auto -> population") for r in rows)
            excess = col["auto"] - np.minimum(col["scaled"], col["population"])
            lines.append(f"{model:27s} {h:5.2g}  "
                         + "  ".join(f"{col[k].mean():.4f} ± {col[k].std():.4f}"
                                     for k in ("scaled", "population", "auto"))
                         + f"  {pop:>9d} of {len(rows):<3d}  {excess.mean():+10.4f}")
        lines.append("")
    return lines


def main_survey(args) -> None:
    models = list(SURVEY_MODELS) if args.models is None else [
        m if m.endswith("Regressor") else m + "Regressor" for m in args.models]
    jobs = [(m, r, h) for h in args.heterogeneity for r in range(args.repeats) for m in models]
    t0 = time.perf_counter()
    if args.n_jobs == 1:
        results = [run_survey(m, r, h, args.new_tasks) for m, r, h in jobs]
    else:
        from joblib import Parallel, delayed

        results = Parallel(n_jobs=args.n_jobs)(
            delayed(run_survey)(m, r, h, args.new_tasks) for m, r, h in jobs)
    print(f"Survey-shaped problem: {SURVEY_TASKS} tasks of {SURVEY_FIT_ROWS} rows fitted "
          f"(MultiTaskCV), {args.new_tasks} new tasks of 2 rows, {SURVEY_FEATURES} features, "
          f"{SURVEY_TEST_ROWS} test rows per new task, {args.repeats} draws per heterogeneity "
          "h; pooled test nMSE of the new tasks, mean ± std over draws; 'scaled' is what "
          "strength='auto' did with 2 rows before it compared with the population model")
    print()
    for line in summarize_survey(results, models, args.heterogeneity):
        print(line)
    print(f"{time.perf_counter() - t0:.0f} s wall")
    out = Path(args.out)
    os.makedirs(out, exist_ok=True)
    with open(out / "survey.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(results[0]))
        writer.writeheader()
        writer.writerows(results)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--models", nargs="+", default=None,
                        help="models (TraceNorm or TraceNormRegressor); default: every "
                             "School-capable regressor")
    parser.add_argument("--strength", default="auto",
                        help="fit_new_tasks strength: auto, scaled, fitted, cv or a number")
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--out", default="results/new-tasks")
    parser.add_argument("--survey", action="store_true",
                        help="the survey-shaped problem of strength='auto' with 2 rows per "
                             "new task instead of School")
    parser.add_argument("--heterogeneity", type=float, nargs="+", default=[0.2, 1.0, 3.0],
                        help="--survey: scales of the tasks' deviations from the population")
    parser.add_argument("--new-tasks", type=int, default=40,
                        help="--survey: the number of new tasks")
    args = parser.parse_args(argv)
    if args.survey:
        main_survey(args)
        return
    if max(args.sizes) > POOL or min(args.sizes) < 1:
        parser.error(f"--sizes must lie in 1..{POOL}")
    available = school_regressors()
    models = list(available) if args.models is None else [
        m if m.endswith("Regressor") else m + "Regressor" for m in args.models]
    unknown = [m for m in models if not hasattr(multitask, m)]
    if unknown:
        parser.error(f"unknown models {unknown}")
    if RIDGE not in models:
        models.insert(0, RIDGE)
    try:
        strength = float(args.strength)
    except ValueError:
        strength = args.strength
    jobs = [(m, r) for r in range(args.repeats) for m in models]
    t0 = time.perf_counter()
    if args.n_jobs == 1:
        parts = [run_model(m, r, args.sizes, strength) for m, r in jobs]
    else:
        from joblib import Parallel, delayed

        parts = Parallel(n_jobs=args.n_jobs)(
            delayed(run_model)(m, r, args.sizes, strength) for m, r in jobs)
    results = [row for part in parts for row in part]
    wall = time.perf_counter() - t0
    print(f"School, new tasks after fit: {N_FIT} schools fitted, {139 - N_FIT} new schools "
          f"with {', '.join(map(str, args.sizes))} training rows each, {args.repeats} draws; "
          f"strength={args.strength!r}; nMSE on the new schools' test rows (rows after the "
          f"{POOL}th), mean ± std over draws; CPU ms: medians over draws (one BLAS thread); "
          f"speed-up = median refit / median new-task fit")
    print()
    for line in summarize(results, models, args.sizes):
        print(line)
    print(f"\n{wall:.0f} s wall")
    out = Path(args.out)
    os.makedirs(out, exist_ok=True)
    with open(out / "results.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(results[0]))
        writer.writeheader()
        writer.writerows(results)


if __name__ == "__main__":
    main()
