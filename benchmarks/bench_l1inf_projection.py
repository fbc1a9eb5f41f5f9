"""Speed of the Euclidean projection onto the l1,inf ball, against ``numpy.sort``.

For ``n`` entries (``n`` from 1e4 to 1e7) and several task counts ``m`` (``d = n / m``
features), ``W`` is standard normal and the radius is ``--ratio * ||W||_{1,inf}`` (default
0.1, so the projection is active and most rows vanish or are clipped).  Each method of
:func:`multitask.penalties.project_l1inf_ball` (the corrected sort/merge algorithm of
Quattoni et al. 2009, and the Newton root search on the multiplier) is timed as the median of
``--repeats`` calls after one warm-up call (numba compilation, or loading its cache), and so is
``numpy.sort`` of ``n`` uniform random float64, called alternately with the method (same
machine load for both).  The table gives the time, the
time per ``n log2 n`` (ns) and the ratio to ``numpy.sort``; ``kept`` is the fraction of rows
that stay nonzero, and ``max|diff|`` the largest difference between the two methods' outputs.

Usage::

    python benchmarks/bench_l1inf_projection.py            # n = 1e4 ... 1e7
    python benchmarks/bench_l1inf_projection.py --quick    # n = 1e4 ... 1e6
    python benchmarks/bench_l1inf_projection.py --tasks 10 100 --ratio 0.9 --repeats 7
    python benchmarks/bench_l1inf_projection.py --quick --clock cpu   # CPU time, busy machine
"""

from __future__ import annotations

import argparse
import math
import platform
import time
from functools import partial

import numpy as np

from multitask.penalties import l1inf_norm, project_l1inf_ball

#: The method of ``method="auto"`` (the docstring of :func:`project_l1inf_ball`).
AUTO_METHOD = "newton"

METHODS = ("sort", "newton")


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def paired_times(fn, ref, repeats: int, clock=time.perf_counter) -> tuple[float, float]:
    """Median times of ``fn()`` and ``ref()``, called alternately ``repeats`` times each.

    One warm-up call of each first.  Alternating the calls exposes both to the same machine
    load, so their ratio is more stable than their absolute times on a shared machine.
    ``clock`` is ``time.perf_counter`` (wall) or ``time.process_time`` (CPU time of this
    process, which leaves out the time spent waiting for a core on a busy machine).
    """
    fn()
    ref()
    t_fn, t_ref = [], []
    for _ in range(repeats):
        t0 = clock()
        ref()
        t1 = clock()
        fn()
        t2 = clock()
        t_ref.append(t1 - t0)
        t_fn.append(t2 - t1)
    return float(np.median(t_fn)), float(np.median(t_ref))


def run(sizes, tasks, ratio, repeats, seed=0, methods=METHODS, clock=time.perf_counter):
    rng = np.random.default_rng(seed)
    rows = []
    for n in sizes:
        x = rng.random(n)
        np_sort = partial(np.sort, x)
        reps = repeats if n < 10**7 else min(repeats, 3)
        nlogn = n * math.log2(n)
        for m in tasks:
            d = n // m
            if d < 1:
                continue
            W = rng.standard_normal((d, m))
            C = ratio * l1inf_norm(W)
            outs = {}
            for method in methods:
                B = project_l1inf_ball(W, C, method)
                outs[method] = B
                t, t_np = paired_times(partial(project_l1inf_ball, W, C, method), np_sort,
                                       reps, clock)
                rows.append(
                    dict(
                        n=d * m,
                        d=d,
                        m=m,
                        method=method,
                        seconds=t,
                        ns_per_nlogn=t / nlogn * 1e9,
                        ratio_np=t / t_np,
                        np_sort=t_np,
                        kept=float(np.mean(np.any(B != 0, axis=1))),
                    )
                )
            diff = None
            if len(outs) == 2:
                diff = float(np.abs(outs["sort"] - outs["newton"]).max())
            for r in rows[-len(methods) :]:
                r["diff"] = diff
    return rows


def print_table(rows):
    head = (
        f"{'n':>9} {'d':>9} {'m':>5}  {'method':<7} {'time (ms)':>10} {'ns/(n lg n)':>11} "
        f"{'/np.sort':>8} {'np.sort ms':>10} {'kept':>6} {'max|diff|':>9}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        diff = "" if r["diff"] is None else f"{r['diff']:.1e}"
        print(
            f"{r['n']:>9.0e} {r['d']:>9d} {r['m']:>5d}  {r['method']:<7} "
            f"{r['seconds'] * 1e3:>10.2f} {r['ns_per_nlogn']:>11.3f} {r['ratio_np']:>8.2f} "
            f"{r['np_sort'] * 1e3:>10.2f} {r['kept']:>6.3f} {diff:>9}"
        )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="n up to 1e6 only")
    parser.add_argument(
        "--tasks",
        type=int,
        nargs="+",
        default=[10, 100, 1000],
        help="task counts m (default: 10 100 1000)",
    )
    parser.add_argument(
        "--ratio", type=float, default=0.1, help="radius / ||W||_{1,inf} (default 0.1)"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="timed calls per cell, median reported (at most 3 for n = 1e7)",
    )
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="wall",
        help="wall time (default) or CPU time of the process (steadier on a shared machine)",
    )
    args = parser.parse_args(argv)

    sizes = [10**4, 10**5, 10**6] if args.quick else [10**4, 10**5, 10**6, 10**7]
    print(
        f"l1,inf projection, W ~ N(0, 1), radius = {args.ratio} * ||W||_1,inf, "
        f"median of {args.repeats} after a warm-up (3 at n = 1e7), {args.clock} clock; "
        f"method='auto' is '{AUTO_METHOD}'"
    )
    print(f"numpy {np.__version__}, {platform.machine()}, {platform.python_version()}")
    rows = run(
        sizes,
        args.tasks,
        args.ratio,
        args.repeats,
        args.seed,
        tuple(args.methods),
        CLOCKS[args.clock],
    )
    print_table(rows)
    at = [r for r in rows if r["n"] == 10**6 and r["method"] == AUTO_METHOD]
    if at:
        worst = max(r["ratio_np"] for r in at)
        print(
            f"\nn = 1e6, default method '{AUTO_METHOD}': at most {worst:.2f} x numpy.sort "
            f"(target <= 2)"
        )


if __name__ == "__main__":
    main()
