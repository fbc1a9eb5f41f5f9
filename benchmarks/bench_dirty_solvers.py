"""Which solver for the dirty model at which strengths: block coordinate descent against ADMM.

    OMP_NUM_THREADS=1 python benchmarks/bench_dirty_solvers.py --features raw --model dirty_inf
    OMP_NUM_THREADS=1 python benchmarks/bench_dirty_solvers.py --features zscore --hand-over 200
    OMP_NUM_THREADS=1 python benchmarks/bench_dirty_solvers.py --features zscore --plain

On the points of ``bench_certified.py --sweep`` (MALSAR's example, then the 5 x 5 grid of the
two strengths on School's first 20 schools, raw or z-scored features; the same scaling), each
point is fitted to a certified ``tol=1e-8`` by

* ``bcd``: block coordinate descent (``solver="auto"``'s choice for the dirty model with the
  squared loss on per-task designs);
* ``admm``: ADMM with exact per-task solves, from zero (its defaults: Anderson's
  extrapolation of the iterates and the residual-balancing fallback of
  :mod:`multitask.solvers.admm`);
* ``admm-plain`` (with ``--plain``): the same without them (``anderson=0, balance=0``: the
  iteration before they were added);
* ``bcd>admm`` (with ``--hand-over N``): ``N`` epochs of block coordinate descent, then ADMM
  from its point (warm start) where those did not certify.

Printed per point: CPU seconds of ``fit`` (one BLAS thread) and iterations; ``!`` marks a fit
that did not certify within ``max_iter=100000``; the last line gives each column's largest CPU.
The question it answers: is there a rule (a strength, a data fact) under which one solver, or
the hand-over, is never far from the faster one? The figures: docs/accuracy.md.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_certified as bc  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from multitask.solvers.admm import QuadraticADMM  # noqa: E402
from multitask.solvers.bcd import BlockCoordinateDescent  # noqa: E402

TOL = 1e-8
MAX_ITER = 100_000


def fit_point(model, params: dict, problem, X, y,
              hand_over: int | str | None) -> tuple[float, str]:
    """CPU seconds and ``n_iter`` text of one certified fit (module docstring): ``hand_over``
    None is block coordinate descent, 0 ADMM, ``"plain"`` ADMM without extrapolation and
    balancing, a positive number that many epochs of block coordinate descent, then ADMM."""
    est = model.estimator(params, problem)
    t0 = time.process_time()
    if hand_over is None:
        est.set_params(solver=BlockCoordinateDescent(tol=TOL, max_iter=MAX_ITER))
        est.fit(X, y)
        return time.process_time() - t0, f"{est.n_iter_}{'' if est.converged_ else '!'}"
    if hand_over in (0, "plain"):
        plain = {"anderson": 0, "balance": 0} if hand_over == "plain" else {}
        est.set_params(solver=QuadraticADMM(tol=TOL, max_iter=MAX_ITER, **plain))
        est.fit(X, y)
        return time.process_time() - t0, f"{est.n_iter_}{'' if est.converged_ else '!'}"
    est.set_params(solver=BlockCoordinateDescent(tol=TOL, max_iter=hand_over, warn=False),
                   warm_start=True)
    est.fit(X, y)
    if est.converged_:
        return time.process_time() - t0, f"{est.n_iter_}"
    first = est.n_iter_
    est.set_params(solver=QuadraticADMM(tol=TOL, max_iter=MAX_ITER))
    est.fit(X, y)
    return (time.process_time() - t0,
            f"{first}+{est.n_iter_}{'' if est.converged_ else '!'}")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--features", choices=("raw", "zscore"), default="raw")
    p.add_argument("--model", choices=("dirty_inf", "dirty_2"), default="dirty_inf")
    p.add_argument("--hand-over", type=int, default=None,
                   help="also N epochs of block coordinate descent, then ADMM")
    p.add_argument("--plain", action="store_true",
                   help="also ADMM without Anderson's extrapolation and the balancing fallback")
    a = p.parse_args(argv)
    warnings.simplefilter("ignore")
    with threadpool_limits(limits=1):
        model = bc.model_table()[a.model]
        problem = bc.load_problem(a.features)
        X, y = problem.scaled(model.c)
        points = bc.sweep_points(a.model, problem)
        columns: dict[str, int | str | None] = {"bcd": None, "admm": 0}
        if a.plain:
            columns["admm-plain"] = "plain"
        if a.hand_over:
            columns[f"bcd>admm({a.hand_over})"] = a.hand_over
        for how in columns.values():  # compile and warm up
            fit_point(model, points[1]["params"], problem, X, y, how)
        print(f"{a.model}, {a.features} features, CPU s to a certified tol={TOL:g} (n_iter)")
        print(f"{'point':>22s} " + " ".join(f"{c:>22s}" for c in columns))
        worst = dict.fromkeys(columns, 0.0)
        for pt in points:
            cells = []
            for name, how in columns.items():
                cpu, it = fit_point(model, pt["params"], problem, X, y, how)
                worst[name] = max(worst[name], cpu)
                cells.append(f"{cpu:9.3f} ({it})".rjust(22))
            print(f"{pt['label']:>22s} " + " ".join(cells), flush=True)
        print(f"{'largest':>22s} " + " ".join(f"{w:9.3f}".rjust(22) for w in worst.values()))


if __name__ == "__main__":
    main()
