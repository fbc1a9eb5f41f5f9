"""Where an iteration of the capped trace norm's non-convex stages goes, on School.

    OMP_NUM_THREADS=1 python benchmarks/diagnose_capped_trace_iteration.py [--alpha 8.65]
        [--tau 0.979] [--steps 2000] [--repeats 5]

Fits ``CappedTraceRegressor(alpha, tau)`` on School's first official split (the training rows;
the default point is one of the default grid's, on the path ``MultiTaskCV`` chooses from) and
keeps the state of the first compiled call of a non-convex stage
(:class:`~multitask.solvers.truncated_admm.TruncatedStageADMM`: the per-task inverses, ``V``,
``U``, ``rho``, the threshold and the kept singular values). From that state it times, one
BLAS thread, the median over ``--repeats``:

* ``--steps`` iterations of the compiled run
  (:func:`~multitask.solvers._admm_trace_numba.truncated_admm_run`), per iteration;
* the symmetric eigendecomposition (``np.linalg.eigh``, LAPACK) of that stage's small Gram
  matrix ``Z Z^T`` in a compiled loop, which every iteration takes once (the partial singular
  value thresholding goes through it);
* the two products of the Gram route, ``Z^T Z`` (or ``Z Z^T``) and ``Z G``, in a compiled loop.

The difference between the first and the two others is the rest of an iteration: the per-task
solves, the over-relaxation, the dual update and the thresholding's scales. The printed shares
say what a faster eigendecomposition could take off an iteration at most.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from numba import njit  # noqa: E402

import multitask  # noqa: E402
import multitask.solvers.truncated_admm as truncated  # noqa: E402
from multitask.penalties.prox import GRAM_RTOL, SAFE_EXPONENT  # noqa: E402
from multitask.solvers._admm_trace_numba import truncated_admm_run  # noqa: E402


@njit(cache=False)
def _eigh_loop(G, n):  # pragma: no cover - compiled
    total = 0.0
    for _ in range(n):
        ev, _E = np.linalg.eigh(G)
        total += ev[0]
    return total


@njit(cache=False)
def _products_loop(ZT, G, n, wide):  # pragma: no cover - compiled
    total = 0.0
    for _ in range(n):
        S = ZT.T @ ZT if wide else ZT @ ZT.T
        V = ZT @ G if wide else G @ ZT
        total += S[0, 0] + V[0, 0]
    return total


def school_training_rows():
    from multitask.datasets import load_school

    s = load_school()
    split = s.splits[0]
    X = [x[i] for x, i in zip(s.X, split["train"], strict=True)]
    y = [v[i] for v, i in zip(s.y, split["train"], strict=True)]
    return X, y


def capture_stage(alpha: float, tau: float) -> tuple:
    """The arguments of the first compiled call of a non-convex stage of the fit."""
    captured: list = []
    advance = truncated._Steps.advance

    def spying(self, V, U, rho, n):
        if self.compiled is not None and self.compiled.ready() and not captured:
            _, M, idx, cnt, B = self._inverses(rho)
            captured.append((M, idx, cnt, B, V.copy(), U.copy(), rho, self.r,
                             self.strength / rho, self.keep))
        return advance(self, V, U, rho, n)

    X, y = school_training_rows()
    truncated._Steps.advance = spying
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(2):  # the first fit may run interpreted while numba starts
                captured.clear()
                multitask.CappedTraceRegressor(alpha=alpha, tau=tau).fit(X, y)
    finally:
        truncated._Steps.advance = advance
    if not captured:
        raise SystemExit("no compiled non-convex stage ran at these parameters")
    return captured[0]


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alpha", type=float, default=8.648742838280748)
    parser.add_argument("--tau", type=float, default=0.979255228003121)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)

    M, idx, cnt, B, V, U, rho, r, thresh, keep = capture_stage(args.alpha, args.tau)
    d, m = V.shape
    safe = 2.0**SAFE_EXPONENT
    n = args.steps

    def run():
        return truncated_admm_run(M, idx, cnt, B, V, U.copy(), rho, r, thresh, keep, n,
                                  GRAM_RTOL, safe)

    done = run()[0]  # compiles (cached) and checks the kernel takes every step
    if done < n:
        raise SystemExit(f"the kernel declined after {done} of {n} iterations")
    wide = d <= m
    ZT = np.ascontiguousarray(V.T + U.T)
    k = min(d, m)
    G = ZT.T @ ZT if wide else ZT @ ZT.T
    Gmap = np.eye(k)
    _eigh_loop(G, 2)
    _products_loop(ZT, Gmap, 2, wide)
    per_iter = median_time(run, args.repeats) / n
    per_eigh = median_time(lambda: _eigh_loop(G, n), args.repeats) / n
    per_products = median_time(lambda: _products_loop(ZT, Gmap, n, wide), args.repeats) / n
    rest = per_iter - per_eigh - per_products
    print(f"School training rows: W is {d} x {m}; stage keeps {keep} singular values; "
          f"{int(cnt.mean())} seen features per task on average")
    print(f"one iteration of truncated_admm_run   {per_iter * 1e6:7.1f} us")
    print(f"  eigendecomposition of the {k} x {k} Gram  {per_eigh * 1e6:7.1f} us "
          f"({per_eigh / per_iter:.0%})")
    print(f"  the Gram route's two products      {per_products * 1e6:7.1f} us "
          f"({per_products / per_iter:.0%})")
    print(f"  the rest                           {rest * 1e6:7.1f} us ({rest / per_iter:.0%})")
    return {"iteration": per_iter, "eigh": per_eigh, "products": per_products}


if __name__ == "__main__":
    main()
