"""Block coordinate descent on the dirty model with and without Newton steps on the face.

    OMP_NUM_THREADS=1 python benchmarks/bench_dirty_newton.py --features raw --model dirty_2
    OMP_NUM_THREADS=1 python benchmarks/bench_dirty_newton.py --features zscore --points 0 8

On the points of ``bench_certified.py --sweep`` (MALSAR's example, then the 5 x 5 grid of the
two strengths on School's first 20 schools; the same scaling), each point is fitted to a
certified ``tol=1e-8`` by block coordinate descent (``solver="bcd"``, ``max_iter=100000``)
with the active-set Newton steps on the iterate's face
(:mod:`multitask.solvers.dirty_newton`, ``newton``: ``bcd.DIRTY_NEWTON`` set for the fit,
``q = 2`` only) and without them (``epochs``), the two
runs interleaved in one process; ``--admm`` adds ADMM from zero. Printed per point: CPU
seconds of ``fit`` (one BLAS thread, the median of ``--repeats``) and ``n_iter``; ``!`` marks
a fit that did not certify.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_certified as bc  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from multitask.solvers import bcd  # noqa: E402
from multitask.solvers.admm import QuadraticADMM  # noqa: E402

TOL = 1e-8
MAX_ITER = 100_000


def fit_point(model, params: dict, problem, X, y, how: str) -> tuple[float, str]:
    """CPU seconds and ``n_iter`` text of one certified fit with ``how`` (module docstring)."""
    est = model.estimator(params, problem)
    if how == "admm":
        est.set_params(solver=QuadraticADMM(tol=TOL, max_iter=MAX_ITER))
    else:
        est.set_params(solver=bcd.BlockCoordinateDescent(tol=TOL, max_iter=MAX_ITER))
    before = bcd.DIRTY_NEWTON
    bcd.DIRTY_NEWTON = how == "newton"
    try:
        t0 = time.process_time()
        est.fit(X, y)
        cpu = time.process_time() - t0
    finally:
        bcd.DIRTY_NEWTON = before
    return cpu, f"{est.n_iter_}{'' if est.converged_ else '!'}"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--features", choices=("raw", "zscore"), default="raw")
    p.add_argument("--model", choices=("dirty_inf", "dirty_2"), default="dirty_inf")
    p.add_argument("--points", type=int, nargs="*", default=None,
                   help="indices of the sweep's points (default: all 26)")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--admm", action="store_true", help="also ADMM from zero")
    a = p.parse_args(argv)
    warnings.simplefilter("ignore")
    with threadpool_limits(limits=1):
        model = bc.model_table()[a.model]
        problem = bc.load_problem(a.features)
        X, y = problem.scaled(model.c)
        points = bc.sweep_points(a.model, problem)
        if a.points is not None:
            points = [points[i] for i in a.points]
        columns = ["epochs", "newton"] + (["admm"] if a.admm else [])
        for how in columns:  # compile and warm up
            fit_point(model, points[0]["params"], problem, X, y, how)
        print(f"{a.model}, {a.features} features, CPU s to a certified tol={TOL:g} (n_iter)")
        print(f"{'point':>22s} " + " ".join(f"{c:>18s}" for c in columns))
        worst = dict.fromkeys(columns, 0.0)
        for pt in points:
            runs: dict[str, list] = {c: [] for c in columns}
            for _ in range(a.repeats):
                for how in columns:  # interleaved
                    runs[how].append(fit_point(model, pt["params"], problem, X, y, how))
            cells = []
            for how in columns:
                cpu = statistics.median(r[0] for r in runs[how])
                worst[how] = max(worst[how], cpu)
                cells.append(f"{cpu:8.3f} ({runs[how][-1][1]})".rjust(18))
            print(f"{pt['label']:>22s} " + " ".join(cells), flush=True)
        print(f"{'largest':>22s} " + " ".join(f"{w:8.3f}".rjust(18) for w in worst.values()))


if __name__ == "__main__":
    main()
