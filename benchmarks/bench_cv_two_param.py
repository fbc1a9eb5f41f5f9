"""Model selection of the two-parameter models against the one-parameter model's, in CPU.

    OMP_NUM_THREADS=1 python benchmarks/bench_cv_two_param.py [--data survey school]
        [--models DirtyModelRegressor ...] [--before benchmarks/cv_two_param_before.json]
        [--out results.json] [--no-halving] [--repeats 3] [--anderson-memory 20]
        [--tol 1e-3] [--screening-factor 10] [--drift-factor 30] [--window 100]
        [--survey-seed 0]

Every regressor whose default grid searches a second parameter (its ``_grid_tops``:
capped l1, capped trace, clustered MTL, convex ASO, dirty model, fused sparse group lasso,
graph-regularized, robust feature learning, robust MTL, sparse + low rank, temporal group
lasso) and ``L21Regressor`` are tuned by the default ``MultiTaskCV`` (the model's default
grid, the default selection rule, refit on all training rows), one after the other in one
process, on two problems:

* **survey**: a generated problem shaped like a small survey: one shared design of 8
  training rows and 10 standard normal features, 190 tasks (target columns), and 200 held-out
  rows of the same design distribution. The weights are ``W = B C + S`` (``B`` 10 x 2 with
  its first 4 rows standard normal and the rest zero, ``C`` 2 x 190 standard normal: a
  rank-2 structure on a shared support of 4 features; ``S`` standard normal on 5% of the
  entries, zero elsewhere: task-specific effects), intercepts standard normal, noise
  ``N(0, 0.5^2)`` (``survey_problem``; ``--survey-seed`` draws another one). The median task
  has 8 rows, so the default rule is leave-one-out within tasks (8 folds).
* **school**: School (139 schools, 27 features), the first official split (about 75% of each
  school's rows to train on, the rest held out); 5 folds within schools.

Printed per model: the CPU seconds of ``MultiTaskCV.fit`` (one untimed run with 3 values of
the path parameter first, which compiles the kernels; the median of ``--repeats`` timed
fits), the ratio to ``L21Regressor``'s on the
same data (target: at most 3), the number of candidates and of candidates scored on every
fold, the chosen parameters, the pooled nMSE of the refitted model on the held-out rows and
the solver iterations summed over the fits of the last timed run (``iters``: each fit's
``n_iter_``, for the multi-stage models the inner iterations of all its stages; unlike the
CPU, it does not move with the machine's load).
With ``--before`` (a JSON file written by ``--out`` with the code before a change), the CPU
and test nMSE of that run are printed beside. CPU seconds are those of the whole process
(``time.process_time``) with one BLAS/OpenMP/numba thread: run on an idle machine and compare
ratios from one run. ``--no-halving`` runs ``MultiTaskCV(..., halving=False)`` (every
candidate on every fold), where that option exists. ``--tol`` sets the ``tol`` of every model,
``L21Regressor`` included, for every fit of the run (the fits on the folds and the refit):
what a uniformly looser stopping rule buys each model against the baseline's own gain.
``--screening-factor`` sets the first round's ``tol`` as a multiple of each model's
(:data:`multitask.model_selection._halving.SCREENING_TOL_FACTOR`), ``--drift-factor`` the
capped trace norm's drift rule (:data:`multitask.solvers.truncated_admm.DRIFT_FACTOR`; ``0``
turns it off), ``--window`` the iterations between two comparisons of its non-convex stages'
objective (:data:`multitask.solvers.truncated_admm.WINDOW`): the measurements that placed
them.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import importlib  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

import multitask  # noqa: E402
from multitask.estimators.base import MultiTaskEstimator  # noqa: E402
from multitask.metrics import nmse  # noqa: E402

BASELINE = "L21Regressor"
SURVEY = {"n_train": 8, "n_test": 200, "n_features": 10, "n_tasks": 190, "rank": 2,
          "support": 4, "specific": 0.05, "noise": 0.5}


#: The options that set a module constant for the run: option -> (module, constant).
CONSTANT_OPTIONS = {
    "anderson_memory": ("multitask.solvers.admm", "ANDERSON_MEMORY"),
    "screening_factor": ("multitask.model_selection._halving", "SCREENING_TOL_FACTOR"),
    "drift_factor": ("multitask.solvers.truncated_admm", "DRIFT_FACTOR"),
    "window": ("multitask.solvers.truncated_admm", "WINDOW"),
}


def two_parameter_models() -> list[str]:
    """The regressors whose default grid searches more than one parameter."""
    names = []
    for name in sorted(dir(multitask)):
        cls = getattr(multitask, name)
        if (inspect.isclass(cls) and issubclass(cls, MultiTaskEstimator)
                and name.endswith("Regressor")
                and cls._grid_tops is not MultiTaskEstimator._grid_tops):
            names.append(name)
    return names


def survey_problem(seed: int = 0):
    """``(X_train, Y_train, X_test, Y_test)``: a shared design, targets ``(n, 190)`` (module
    docstring)."""
    p = SURVEY
    rng = np.random.default_rng(seed)
    d, m = p["n_features"], p["n_tasks"]
    X = rng.standard_normal((p["n_train"] + p["n_test"], d))
    B = np.zeros((d, p["rank"]))
    B[:p["support"]] = rng.standard_normal((p["support"], p["rank"]))
    W = B @ rng.standard_normal((p["rank"], m))
    W += rng.standard_normal((d, m)) * (rng.random((d, m)) < p["specific"])
    Y = X @ W + rng.standard_normal(m) + p["noise"] * rng.standard_normal((X.shape[0], m))
    n = p["n_train"]
    return X[:n], Y[:n], X[n:], Y[n:]


def school_problem():
    """``(X_train, y_train, X_test, y_test)``: per-school lists, the first official split."""
    from multitask.datasets import load_school

    s = load_school()
    split = s.splits[0]
    Xtr = [x[i] for x, i in zip(s.X, split["train"], strict=True)]
    ytr = [v[i] for v, i in zip(s.y, split["train"], strict=True)]
    Xte = [x[i] for x, i in zip(s.X, split["test"], strict=True)]
    yte = [v[i] for v, i in zip(s.y, split["test"], strict=True)]
    return Xtr, ytr, Xte, yte


def _short(params: dict) -> str:
    return ", ".join(f"{k}={v:.3g}" if isinstance(v, (float, np.floating)) else f"{k}={v}"
                     for k, v in sorted(params.items()))


def _count_iterations(cls) -> list[int]:
    """Make every fit of ``cls`` add its solver's iterations (``SolverResult.n_iter``: for
    the multi-stage models the inner iterations of all stages) to the returned counter."""
    known = cls.__dict__.get("_iteration_count")
    if known is not None:  # wrapped already (the baseline runs on each problem)
        return known
    count = [0]
    run = cls._run_solver

    def counting(self, *args, **kwargs):
        result = run(self, *args, **kwargs)
        count[0] += int(result.n_iter)
        return result

    cls._run_solver = counting
    cls._iteration_count = count
    return count


def run_model(name: str, data, halving: bool | None, repeats: int = 1,
              tol: float | None = None) -> dict:
    """CPU seconds (the median of ``repeats`` timed fits), choice, held-out nMSE and solver
    iterations (summed over the last timed fit's fits) of the default ``MultiTaskCV`` of
    ``name``."""
    Xtr, ytr, Xte, yte = data
    model = getattr(multitask, name)()
    if tol is not None:
        model.set_params(tol=tol)
    count = _count_iterations(type(model))
    extra = {}
    if halving is not None and "halving" in inspect.signature(multitask.MultiTaskCV).parameters:
        extra["halving"] = halving
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        multitask.MultiTaskCV(model, n_alphas=3, widen=0, **extra).fit(Xtr, ytr)  # compile
        cpus, walls = [], []
        for _ in range(max(1, repeats)):
            count[0] = 0
            t0, w0 = time.process_time(), time.perf_counter()
            cv = multitask.MultiTaskCV(model, **extra).fit(Xtr, ytr)
            cpus.append(time.process_time() - t0)
            walls.append(time.perf_counter() - w0)
        cpu, wall = float(np.median(cpus)), float(np.median(walls))
    pred = cv.predict(Xte)
    if isinstance(yte, list):
        err = nmse(np.concatenate(yte), np.concatenate(pred))
    else:
        err = nmse(yte, pred)
    scored = np.all(np.isfinite(cv.scores_), axis=0)
    return {"cpu": cpu, "wall": wall, "params": {k: float(v) for k, v in
                                                 cv.best_params_.items()},
            "test_nmse": float(err), "cv_score": float(cv.best_score_),
            "n_candidates": len(cv.cv_results_["params"]), "n_full": int(scored.sum()),
            "iterations": int(count[0]),
            "n_splits": int(cv.n_splits_)}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", default=["survey", "school"],
                        choices=["survey", "school"])
    parser.add_argument("--models", nargs="+", default=None)
    parser.add_argument("--before", default=None, help="JSON of a run before a change")
    parser.add_argument("--out", default=None, help="write the results to this JSON file")
    parser.add_argument("--no-halving", action="store_true")
    parser.add_argument("--repeats", type=int, default=1,
                        help="timed fits per model (the median CPU is printed)")
    parser.add_argument("--anderson-memory", type=int, default=None,
                        help="pairs kept by ADMM's Anderson extrapolation where the model "
                             "takes it (multitask.solvers.admm.ANDERSON_MEMORY)")
    parser.add_argument("--survey-seed", type=int, default=0,
                        help="the seed of the generated survey problem")
    parser.add_argument("--screening-factor", type=float, default=None,
                        help="the first round's tol as a multiple of the model's "
                             "(multitask.model_selection._halving.SCREENING_TOL_FACTOR)")
    parser.add_argument("--drift-factor", type=float, default=None,
                        help="the capped trace norm's drift rule as a multiple of stall_tol "
                             "(multitask.solvers.truncated_admm.DRIFT_FACTOR; 0: off)")
    parser.add_argument("--window", type=int, default=None,
                        help="the capped trace norm's non-convex stages' window "
                             "(multitask.solvers.truncated_admm.WINDOW)")
    parser.add_argument("--tol", type=float, default=None,
                        help="the tol of every model, the baseline's included (default: each "
                             "model's own)")
    args = parser.parse_args(argv)
    for option, (module, constant) in CONSTANT_OPTIONS.items():
        value = getattr(args, option)
        if value is not None:
            setattr(importlib.import_module(module), constant, value)
    models = args.models or two_parameter_models()
    before = {}
    if args.before:
        with open(args.before, encoding="utf-8") as fh:
            before = json.load(fh)
    results: dict = {}
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    for data_name in args.data:
        data = survey_problem(args.survey_seed) if data_name == "survey" else school_problem()
        print(f"\n== {data_name}", flush=True)
        head = (f"{'model':34s} {'CPU s':>7s} {'ratio':>6s} {'cand':>5s} {'full':>5s} "
                f"{'test nMSE':>9s} {'iters':>7s}")
        if before:
            head += f" {'CPU before':>10s} {'nMSE before':>11s}"
        print(head + "  chosen", flush=True)
        out = results[data_name] = {}
        for name in [BASELINE, *[m for m in models if m != BASELINE]]:
            r = out[name] = run_model(name, data, None if not args.no_halving else False,
                                      args.repeats, args.tol)
            ratio = r["cpu"] / out[BASELINE]["cpu"]
            line = (f"{name:34s} {r['cpu']:7.2f} {ratio:6.2f} {r['n_candidates']:5d} "
                    f"{r['n_full']:5d} {r['test_nmse']:9.4f} {r['iterations']:7d}")
            old = before.get(data_name, {}).get(name)
            if before:
                line += (f" {old['cpu']:10.2f} {old['test_nmse']:11.4f}" if old
                         else f" {'-':>10s} {'-':>11s}")
            print(line + "  " + _short(r["params"]), flush=True)
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=1, sort_keys=True)
    return results


if __name__ == "__main__":
    main()
