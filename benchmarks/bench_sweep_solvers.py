"""Solvers side by side over the strength sweep of ``bench_certified.py --sweep``.

    OMP_NUM_THREADS=1 python benchmarks/bench_sweep_solvers.py temporal auto,bcd
    OMP_NUM_THREADS=1 python benchmarks/bench_sweep_solvers.py graph bcd,active_newton \
        --features raw

For a model of ``bench_certified.py``'s table (its key: ``temporal``, ``dirty_inf``, ...) and
each point of its sweep (MALSAR's example, then the 5 x 5 grid of strengths) on School's first
20 schools, raw and z-scored features: the CPU seconds of a fit to a certified ``tol=1e-8``
with each solver named (``solver=``; ``auto`` for the automatic choice), the best of a few
repeats, printed as a ratio to ``L21Regressor``'s CPU at its table parameters measured just
before at the same point (the sweep's acceptance: at most 10), with the iterations and
whether the fit converged (``c``) or not (``NC``). One BLAS thread; compare ratios of one run.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_certified as bc  # noqa: E402

TOL = 1e-8


def _best_cpu(est, Xs, ys, repeats: int) -> float:
    """The smallest CPU seconds of ``repeats`` fits (warnings silenced)."""
    times = []
    for _ in range(repeats):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.process_time()
            est.fit(Xs, ys)
            times.append(time.process_time() - t0)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", help="a key of bench_certified.py's table (--list there)")
    p.add_argument("solvers", help="comma-separated solver names ('auto' included)")
    p.add_argument("--features", choices=(*bc.FEATURE_SETS, "both"), default="both")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--max-iter", type=int, default=200_000)
    args = p.parse_args(argv)
    solvers = args.solvers.split(",")
    feature_sets = bc.FEATURE_SETS if args.features == "both" else (args.features,)
    table = bc.model_table()
    model, l21 = table[args.model], table["l21"]
    for features in feature_sets:
        problem = bc.load_problem(features)
        Xs, ys = problem.scaled(model.c)
        Xl, yl = problem.scaled(l21.c)
        for point in bc.sweep_points(args.model, problem):
            ref = l21.estimator(l21.choose(problem), problem).set_params(tol=TOL)
            t_l21 = _best_cpu(ref, Xl, yl, args.repeats)
            cells = []
            for solver in solvers:
                est = model.estimator(point["params"], problem).set_params(
                    tol=TOL, max_iter=args.max_iter, solver=solver)
                t = _best_cpu(est, Xs, ys, args.repeats)
                state = "c" if est.converged_ else "NC"
                cells.append(f"{solver}={t / t_l21:6.1f}x({est.n_iter_},{state})")
            print(f"{features:6s} {point['label']:>18s}  " + "  ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
