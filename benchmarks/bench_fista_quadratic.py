"""FISTA's steps on a quadratic smooth part against the steps that evaluate it twice, in CPU.

    OMP_NUM_THREADS=1 python benchmarks/bench_fista_quadratic.py [--data survey school]
        [--model GraphRegularizedRegressor] [--repeats 5]

Where the smooth part of the model is quadratic (the squared loss in its Gram form plus the
graph penalty's ``alpha tr(W M W^T)``), :class:`~multitask.solvers.ProximalGradient` updates
its value and gradient with one Hessian product per iteration
(:mod:`multitask.solvers.fista`); ``fista.QUADRATIC_STEPS = False`` forces the general steps,
which evaluate the smooth part at the extrapolated and at the new point. The default
``MultiTaskCV`` of the model (``bench_cv_two_param.py``'s fit: its default grid, selection rule
and refit) runs with each kind of step in turn, interleaved, ``--repeats`` times, on the survey
problem and on School (``bench_cv_two_param.survey_problem`` / ``school_problem``), after one
untimed fit of each. Printed per problem and kind: the median CPU seconds of
``MultiTaskCV.fit`` (``time.process_time``, one BLAS/OpenMP/numba thread), the solver
iterations summed over the fits of a run (``n_iter``), the chosen parameters and the pooled
nMSE on the held-out rows; then the ratio of the medians (quadratic / general). The iterations,
the choice and the nMSE do not move with the machine's load; the CPU does: compare the ratio
from one run on an idle machine.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_cv_two_param as cv_bench  # noqa: E402

import multitask  # noqa: E402
from multitask.metrics import nmse  # noqa: E402
from multitask.solvers import fista  # noqa: E402

KINDS = {"general": False, "quadratic": True}


def _fit(name: str, data, quadratic: bool, count: list[int], **options) -> dict:
    """One default ``MultiTaskCV`` fit of ``name`` with the chosen kind of step: CPU seconds,
    iterations, choice and held-out nMSE."""
    Xtr, ytr, Xte, yte = data
    previous = fista.QUADRATIC_STEPS
    fista.QUADRATIC_STEPS = quadratic
    try:
        count[0] = 0
        t0 = time.process_time()
        cv = multitask.MultiTaskCV(getattr(multitask, name)(), **options).fit(Xtr, ytr)
        cpu = time.process_time() - t0
    finally:
        fista.QUADRATIC_STEPS = previous
    pred = cv.predict(Xte)
    err = (nmse(np.concatenate(yte), np.concatenate(pred)) if isinstance(yte, list)
           else nmse(yte, pred))
    return {"cpu": cpu, "iterations": int(count[0]), "params": dict(cv.best_params_),
            "test_nmse": float(err)}


def run_problem(name: str, data, repeats: int) -> dict:
    """The runs of both kinds of step on one problem, interleaved (module docstring)."""
    count = cv_bench._count_iterations(getattr(multitask, name))
    runs: dict[str, list[dict]] = {kind: [] for kind in KINDS}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for quadratic in KINDS.values():  # untimed: compiles the kernels, fills the caches
            _fit(name, data, quadratic, count, n_alphas=3, widen=0)
        for _ in range(max(1, repeats)):
            for kind, quadratic in KINDS.items():
                runs[kind].append(_fit(name, data, quadratic, count))
    return runs


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", default=["survey", "school"],
                        choices=["survey", "school"])
    parser.add_argument("--model", default="GraphRegularizedRegressor")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    results = {}
    for data_name in args.data:
        data = (cv_bench.survey_problem() if data_name == "survey"
                else cv_bench.school_problem())
        runs = results[data_name] = run_problem(args.model, data, args.repeats)
        print(f"\n== {data_name}: {args.model}, {args.repeats} interleaved runs per kind")
        print(f"{'steps':10s} {'CPU s':>7s} {'iters':>7s} {'test nMSE':>9s}  chosen")
        medians = {}
        for kind, rs in runs.items():
            medians[kind] = float(np.median([r["cpu"] for r in rs]))
            last = rs[-1]
            print(f"{kind:10s} {medians[kind]:7.3f} {last['iterations']:7d} "
                  f"{last['test_nmse']:9.4f}  {cv_bench._short(last['params'])}")
        same = all(r["iterations"] == runs["general"][-1]["iterations"]
                   and r["params"] == runs["general"][-1]["params"]
                   for rs in runs.values() for r in rs)
        print(f"CPU ratio quadratic / general: {medians['quadratic'] / medians['general']:.3f}"
              f" (same iterations and choice in every run: {same})")
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    return results


if __name__ == "__main__":
    main()
