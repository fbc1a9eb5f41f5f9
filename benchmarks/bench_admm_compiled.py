"""The compiled ADMM iteration of the trace norm against the interpreted one.

    OMP_NUM_THREADS=1 python benchmarks/bench_admm_compiled.py [--repeats 3]

1. **One iteration** on generated problems of ``d`` features and ``m`` tasks (per-task Gram
   matrices, a rank-3 iterate, a threshold that keeps three singular values): CPU time of the
   compiled step (:mod:`multitask.solvers._admm_trace_numba`) and of the interpreted one
   (the W-step, the trace norm's prox, the dual update), best of ``repeats``, and their ratio.
   :data:`multitask.solvers.admm.COMPILED_TRACE_MAX_FEATURES` is set from it.
2. **Whole fits** of ``TraceNormRegressor`` on School (``bench_peers.py``'s problems) with the
   compiled step and with the interpreted one (``COMPILED_TRACE_MAX_FEATURES = 0``), medians
   of ``repeats`` fits after a first one (numba set up before, its start-up apart).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import timeit
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SHAPES = ((28, 20), (28, 139), (20, 2000), (32, 500), (50, 200), (100, 100), (300, 50))


def _interpreted_step(eig, penalty, AV, U, rho, r):
    """One interpreted iteration (the W-step, the prox, the dual update) on copies."""

    def step():
        Uc = U.copy()
        W = eig.solve(AV - Uc, rho)
        Wr = r * W + (1 - r) * AV
        V = penalty.prox(Wr + Uc, 1 / rho)
        Uc += Wr - V

    return step


def one_iteration(repeats: int) -> None:
    from multitask.penalties.norms import TraceNorm
    from multitask.penalties.prox import GRAM_RTOL, SAFE_EXPONENT
    from multitask.solvers._admm_trace_numba import trace_admm_step
    from multitask.solvers.admm import EigenSystem

    rng = np.random.default_rng(1)
    print("one iteration (CPU, best of repeats)")
    print("     d      m   compiled (us)   interpreted (us)   interpreted / compiled")
    for d, m in SHAPES:
        B = rng.standard_normal((m, d, d + 5))
        eig = EigenSystem(B @ np.swapaxes(B, 1, 2) / d, rng.standard_normal((d, m)))
        AV = rng.standard_normal((d, 3)) @ rng.standard_normal((3, m))
        U = 0.1 * rng.standard_normal((d, m))
        rho, r = 2.0, 1.6
        W = eig.solve(AV - U, rho)
        s = np.linalg.svd(r * W + (1 - r) * AV + U, compute_uv=False)
        alpha = rho * s[3]
        penalty = TraceNorm(alpha)
        qtc = np.ascontiguousarray(eig.QtC)
        interpreted = _interpreted_step(eig, penalty, AV, U, rho, r)

        def compiled(eig=eig, qtc=qtc, AV=AV, U=U, rho=rho, r=r, alpha=alpha):
            trace_admm_step(eig.Q, eig._QT, eig.lam, qtc, AV, U.copy(), rho, r, alpha / rho,
                            GRAM_RTOL, 2.0**SAFE_EXPONENT)

        compiled()
        n = max(20, int(2e6 / (m * d * d)))
        tc = min(timeit.repeat(compiled, number=n, repeat=repeats, timer=time.process_time))
        ti = min(timeit.repeat(interpreted, number=n, repeat=repeats, timer=time.process_time))
        print(f"  {d:4d}  {m:5d}   {tc / n * 1e6:13.0f}   {ti / n * 1e6:16.0f}   {ti / tc:6.2f}")


def whole_fits(repeats: int) -> None:
    import bench_peers as bp

    import multitask.compiled
    import multitask.solvers.admm as admm
    from multitask import TraceNormRegressor

    multitask.compiled.set_up()
    limit = admm.COMPILED_TRACE_MAX_FEATURES
    print("\nwhole fits, School (CPU ms, medians)")
    print("  problem             tol     n_iter   compiled   interpreted   ratio")
    for m, kind in ((20, "raw"), (20, "zscore"), (139, "raw"), (139, "zscore")):
        Xs, ys, alpha, intercept = bp.school_problem(m, kind)
        for tol in (1e-4, 1e-6):
            times, n_iter = {}, {}
            for name, cap in (("compiled", limit), ("interpreted", 0)):
                admm.COMPILED_TRACE_MAX_FEATURES = cap

                def fit(tol=tol, alpha=alpha, intercept=intercept, Xs=Xs, ys=ys):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        return TraceNormRegressor(alpha=alpha, fit_intercept=intercept,
                                                  tol=tol).fit(Xs, ys)

                n_iter[name] = fit().n_iter_
                runs = []
                for _ in range(repeats):
                    t0 = time.process_time()
                    fit()
                    runs.append(time.process_time() - t0)
                times[name] = float(np.median(runs))
            admm.COMPILED_TRACE_MAX_FEATURES = limit
            assert n_iter["compiled"] == n_iter["interpreted"], n_iter
            print(f"  School {m:3d} {kind:6s}  {tol:.0e}  {n_iter['compiled']:6d}   "
                  f"{times['compiled'] * 1e3:8.2f}   {times['interpreted'] * 1e3:11.2f}   "
                  f"{times['interpreted'] / times['compiled']:5.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    one_iteration(args.repeats)
    whole_fits(max(args.repeats, 5))


if __name__ == "__main__":
    main()
