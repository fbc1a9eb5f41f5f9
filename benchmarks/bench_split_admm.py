"""The V-step of ADMM for the split models ``W = P + Q``: Gauss-Seidel sweeps over the parts,
the linearized step, and accelerated gradient on the stacked variable.

School, first 20 schools, in MALSAR's setting (the rows of school ``t`` and its targets scaled
by ``sqrt(n_t)``, the constant column appended, no intercept), the features raw or z-scored
over the 20 schools' rows (the constant column kept). Strengths: ``--fraction`` (default 0.01)
of each strength's threshold (``max |G|``, ``||G||_2``, ``max_j ||G_j.||_2``, ``max_t ||G_.t||_2``
of the loss gradient ``G`` at zero); sparse + low rank's radius: half the trace norm of a
trace-norm fit at the same fraction. For each model and ``tol`` in ``1e-4, 1e-8`` (the
certified relative duality gap), prints the iterations and the CPU time (``time.process_time``,
one BLAS thread, after a warm-up fit, median of ``--repeats``) of ``QuadraticADMM`` with
``split_passes`` 0 (linearized), 1 (the default), 2 and 5, and of accelerated gradient
(``ProximalGradient``), with ``L21Regressor``'s time at ``tol=1e-8`` as the reference.

Usage::

    python benchmarks/bench_split_admm.py [--features raw|zscore] [--fraction 0.01]
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

import multitask as mt
from multitask.data import as_multitask_data
from multitask.datasets import load_school
from multitask.losses import Squared
from multitask.solvers import ProximalGradient, QuadraticADMM


def school_malsar(features: str):
    b = load_school(include_bias=True)
    Xs, ys = b.X[:20], b.y[:20]
    if features == "zscore":
        allX = np.vstack(Xs)
        mu, sd = allX.mean(0), allX.std(0)
        mu[-1], sd[-1] = 0.0, 1.0
        Xs = [(X - mu) / sd for X in Xs]
    return ([np.sqrt(len(y)) * X for X, y in zip(Xs, ys, strict=True)],
            [np.sqrt(len(y)) * y for y in ys])


def cpu_median(fit, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.process_time()
        fit()
        times.append(time.process_time() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--features", choices=["raw", "zscore"], default="zscore")
    ap.add_argument("--fraction", type=float, default=0.01)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    Xs, ys = school_malsar(args.features)
    f = args.fraction
    G = Squared(as_multitask_data(Xs, ys)[0], fit_intercept=False).grad_at_zero()
    lasso, spec = float(np.abs(G).max()), float(np.linalg.norm(G, 2))
    rows, cols = float(np.linalg.norm(G, axis=1).max()), float(np.linalg.norm(G, axis=0).max())
    with threadpool_limits(1):
        nuc = float(np.linalg.svd(mt.TraceNormRegressor(alpha=f * spec, fit_intercept=False)
                                  .fit(Xs, ys).coef_, compute_uv=False).sum())
        models = {
            "SparseLowRank": lambda **k: mt.SparseLowRankRegressor(
                alpha=f * lasso, radius=0.5 * nuc, fit_intercept=False, **k),
            "RobustMTL": lambda **k: mt.RobustMTLRegressor(alpha=f * spec, lam=1.0,
                                                           fit_intercept=False, **k),
            "RobustFeatureLearning": lambda **k: mt.RobustFeatureLearningRegressor(
                alpha_group=f * rows, alpha_outlier=3 * f * cols, fit_intercept=False, **k),
        }
        ref = mt.L21Regressor(alpha=f * rows, fit_intercept=False, tol=1e-8, max_iter=100000)
        ref.fit(Xs, ys)
        t_ref = cpu_median(lambda: ref.fit(Xs, ys), args.repeats)
        print(f"School 20 schools, MALSAR setting, {args.features} features, strengths at "
              f"{f:g} of their thresholds")
        print(f"L21Regressor tol=1e-8: {ref.n_iter_} iterations ({ref.solver_.label}), "
              f"{t_ref:.3f} s CPU\n")
        print(f"{'model':22s} {'tol':>6s} {'solver':14s} {'iters':>7s} {'CPU s':>8s} "
              f"{'x L21':>6s} {'gap':>9s}")
        for name, make in models.items():
            for tol in (1e-4, 1e-8):
                variants = [(f"admm passes={p}", QuadraticADMM(tol=tol, max_iter=100000,
                                                               split_passes=p))
                            for p in (0, 1, 2, 5)]
                variants.append(("fista", ProximalGradient(tol=tol, max_iter=200000)))
                for label, solver in variants:
                    est = make(tol=tol, solver=solver)
                    est.fit(Xs, ys)
                    t = cpu_median(lambda est=est: est.fit(Xs, ys), args.repeats)
                    print(f"{name:22s} {tol:6.0e} {label:14s} {est.n_iter_:7d} {t:8.3f} "
                          f"{t / t_ref:6.1f} {est.optimality_:9.2e}", flush=True)


if __name__ == "__main__":
    main()
