"""Which solver for the row-separable composite models? Every applicable one, timed on School.

The models of ``bench_certified.py`` whose penalty is separable over the feature rows or
couples the tasks by a task-side quadratic (graph + l1, mean, temporal group lasso, fused
sparse group lasso, the dirty model with ``q = inf`` and ``q = 2``), in the same MALSAR
setting (School's first 20 schools, raw or z-scored features plus the constant column, no
intercept, rows of task ``t`` scaled by ``sqrt(c n_t)``, the same hyper-parameters), fitted at
``tol=1e-8`` by each solver the estimator accepts that applies (``solver=<name>``), and by
``solver="auto"``. For each: the CPU time of the fit (``time.process_time``, one BLAS thread,
median of ``--repeats`` fits after a warm-up fit in the same process), its ratio to
``L21Regressor``'s time to ``tol=1e-8`` (timed the same way in the same process, its own
``solver="auto"``), ``converged_`` and the iterations. Every fit has ``max_iter=--max-iter``
(a solver that needs more is reported unconverged); a fit that uses more than ``--cap`` CPU
seconds is not repeated (its row says so).

Usage::

    python benchmarks/bench_composite_solvers.py [--features raw zscore] [--models dirty_inf
        ...] [--repeats 3] [--cap 20] [--max-iter 100000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_certified as bc  # noqa: E402

MODELS = ("graph", "mean", "temporal", "fused", "dirty_inf", "dirty_2")
TOL = 1e-8


MAX_ITER = {"value": 100_000}


def _fit(model, params, problem, solver: str):
    est = model.estimator(params, problem).set_params(tol=TOL, max_iter=MAX_ITER["value"],
                                                      solver=solver)
    Xs, ys = problem.scaled(model.c)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.process_time()
        est.fit(Xs, ys)
        return time.process_time() - t0, est


def _timed(model, params, problem, solver: str, repeats: int, cap: float):
    cpu, est = _fit(model, params, problem, solver)  # warm-up (compilation apart)
    if cpu > cap:
        return cpu, est, 1
    times = [_fit(model, params, problem, solver)[0] for _ in range(repeats)]
    return statistics.median(times), est, repeats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--features", nargs="+", default=list(bc.FEATURE_SETS),
                        choices=bc.FEATURE_SETS)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cap", type=float, default=20.0,
                        help="CPU seconds of a warm-up fit above which it is not repeated")
    parser.add_argument("--max-iter", type=int, default=100_000)
    args = parser.parse_args(argv)
    MAX_ITER["value"] = args.max_iter
    from threadpoolctl import threadpool_limits

    from multitask import compiled

    compiled.set_up()
    table = bc.model_table()
    with threadpool_limits(limits=1):
        for features in args.features:
            problem = bc.load_problem(features)
            l21 = table["l21"]
            l21_cpu, _, _ = _timed(l21, l21.choose(problem), problem, "auto", args.repeats,
                                   args.cap)
            print(f"\n## {features} features: L21Regressor to tol=1e-8: {l21_cpu:.4f} CPU s\n")
            print("| model | solver | chosen by auto | CPU s to 1e-8 | / L21 | converged_ | "
                  "n_iter_ |")
            print("|---|---|---|---|---|---|---|")
            for key in args.models:
                model = table[key]
                params = model.choose(problem)
                est = model.estimator(params, problem)
                auto = _fit(model, params, problem, "auto")[1].solver_.name
                for name in est._solvers:
                    try:
                        cpu, fitted, n = _timed(model, params, problem, name, args.repeats,
                                                args.cap)
                    except ValueError:  # the solver does not apply to this model
                        continue
                    note = "" if n == args.repeats else " (1 fit, above the cap)"
                    print(f"| {model.label} | {name} | {'yes' if name == auto else ''} | "
                          f"{cpu:.4f}{note} | {cpu / l21_cpu:.2g} | {fitted.converged_} | "
                          f"{fitted.n_iter_:,} |", flush=True)
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    raise SystemExit(main())
