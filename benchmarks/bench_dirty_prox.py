"""The dirty norm's row-wise prox (``s = inf``): the level search against the sorted scan.

    OMP_NUM_THREADS=1 python benchmarks/bench_dirty_prox.py [--repeats 2000]

The prox of the dirty model's norm (docs/models/dirty.md) is computed row by row through the
projection onto ``{||u||_1 <= a} cap {||u||_inf <= c}``, whose level ``tau`` solves
``sum_i clip(|v_i| - tau, 0, c) = a``. On standard normal matrices of the shapes the
benchmarks meet (the survey's 10 x 190, School's 27 x 139, a tall 100 x 20) and two pairs of
strengths each, this prints the CPU per matrix (every row) of the library's level search
(:func:`multitask.penalties.row_operators._l1_cap_level`, a search over the linear pieces)
and of the scan of the sorted breakpoints (``_l1_cap_level_sorted``, the method before it and
its fallback), their ratio, the largest difference of the two projections, and the CPU of
the whole compiled prox (``dirty_prox_rows``). Means over ``--repeats`` calls after one
untimed (compiling) call.
"""

from __future__ import annotations

import argparse
import os
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
from numba import njit  # noqa: E402

from multitask.penalties.row_operators import (  # noqa: E402
    _l1_cap_level,
    _l1_cap_level_sorted,
    dirty_prox_rows,
)

#: (rows, entries per row, a, c): the second pair of strengths leaves most rows inside the
#: box's projection (no level to find).
CASES = ((10, 190, 1.0, 0.05), (10, 190, 5.0, 0.02), (27, 139, 2.0, 0.1),
         (27, 139, 20.0, 0.5), (100, 20, 0.5, 0.1), (100, 20, 2.0, 0.5))


@njit(cache=False)
def _levels(V, a, c, sorted_scan):  # pragma: no cover - compiled
    """The level of every row that needs one (0 elsewhere)."""
    d, m = V.shape
    out = np.zeros(d)
    for j in range(d):
        inside = 0.0
        for t in range(m):
            inside += min(abs(V[j, t]), c)
        if inside > a:
            row = V[j]
            out[j] = (_l1_cap_level_sorted(row, a, c, inside) if sorted_scan
                      else _l1_cap_level(row, a, c, inside))
    return out


def _time(f, repeats: int) -> float:
    f()
    t0 = time.process_time()
    for _ in range(repeats):
        f()
    return (time.process_time() - t0) / repeats * 1e6


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2000)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"{'d x m':>9} {'a':>6} {'c':>5} {'search us':>10} {'sorted us':>10} {'ratio':>6} "
          f"{'max diff':>9} {'prox us':>8}")
    for d, m, a, c in CASES:
        V = np.ascontiguousarray(rng.standard_normal((d, m)))
        fast = _time(lambda V=V, a=a, c=c: _levels(V, a, c, False), args.repeats)
        slow = _time(lambda V=V, a=a, c=c: _levels(V, a, c, True), args.repeats)
        t_fast, t_slow = _levels(V, a, c, False), _levels(V, a, c, True)
        diff = max(float(np.abs(np.clip(np.abs(V[j]) - t_fast[j], 0, c)
                                - np.clip(np.abs(V[j]) - t_slow[j], 0, c)).max())
                   for j in range(d))
        prox = _time(lambda V=V, a=a, c=c: dirty_prox_rows(V, a, c, True), args.repeats)
        print(f"{f'{d}x{m}':>9} {a:6.2f} {c:5.2f} {fast:10.1f} {slow:10.1f} "
              f"{slow / fast:6.2f} {diff:9.1e} {prox:8.1f}")


if __name__ == "__main__":
    main()
