"""What ADMM's two dual points certify, and what an exact certificate would save.

    OMP_NUM_THREADS=1 python benchmarks/diagnose_admm_certificate.py [--skip-models]

1. **School 20 raw, the trace norm** (``bench_peers.py``'s MALSAR setting): at every
   10-iteration check of ``TraceNormRegressor``'s ADMM, the true relative gap of the fitted
   point (against a ``tol=1e-11`` fit) and the certified one. The first check whose *true* gap
   meets ``eps`` is where a solver with an exact certificate could stop ("oracle"); the
   certified fit stops where the certified gap meets its ``tol``.
2. **The two dual points in the checks** (unless ``--skip-models``): for the ADMM models of
   ``bench_certified.py`` on both feature sets (its parameters, ``tol`` 1e-4 and 1e-8), at
   every periodic check, the relative gap with the dual point of the W-step iterate alone and
   with that of the fitted point alone (without the projection, as the checks compute it):
   how often the fitted point's is the better one, and how often it alone meets the target.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ADMM_MODELS = ("trace", "l21", "cmtl", "caso", "sparse_low_rank", "robust", "relationship")


def oracle_table() -> None:
    import bench_peers as bp

    from multitask import TraceNormRegressor

    Xs, ys, alpha, intercept = bp.school_problem(20, "raw")

    def fit(**kw):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return TraceNormRegressor(alpha=alpha, fit_intercept=intercept, **kw).fit(Xs, ys)

    ref = fit(tol=1e-11, max_iter=100_000)
    F_star = bp.trace_objective(Xs, ys, ref.coef_.T, ref.intercept_, alpha)
    print("School 20 raw, trace norm: ADMM's checks (every 10 iterations)")
    print("  n_iter   true gap   certified")
    rows = []
    for k in range(10, 160, 10):
        m = fit(tol=1e-16, max_iter=k)
        F = bp.trace_objective(Xs, ys, m.coef_.T, m.intercept_, alpha)
        rows.append((k, (F - F_star) / F, m.optimality_))
        print(f"  {k:6d}   {rows[-1][1]:.1e}    {rows[-1][2]:.1e}")
    for eps in (1e-4, 1e-6):
        oracle = next(k for k, true, _ in rows if true <= eps)
        print(f"  eps={eps:g}: an exact certificate could stop at {oracle} iterations")
    for tol in (1e-2, 1e-4, 1e-5, 1e-6):
        m = fit(tol=tol, max_iter=100_000)
        F = bp.trace_objective(Xs, ys, m.coef_.T, m.intercept_, alpha)
        print(f"  tol={tol:g}: the certified fit stops at {m.n_iter_} iterations, true gap "
              f"{(F - F_star) / F:.1e}")


def two_dual_points() -> None:
    import bench_certified as bc

    import multitask.solvers.certificate as cert

    original = cert.duality_gap
    log: list[tuple[float, float, float]] = []

    def spy(datafit, penalty, V, b, **kw):
        Wd = kw.get("dual_weights")
        if (Wd is None or not kw.get("lazy") or "dual" not in datafit.capabilities
                or not cert.has_dual(penalty)):
            return original(datafit, penalty, V, b, **kw)
        W = np.asarray(penalty.linear_map.forward(V))
        ridge = float(getattr(datafit, "alpha_l2", 0.0) or 0.0)
        dp = datafit.dual_point(W, b)
        primal = (float(dp.loss) + (0.5 * ridge * float(np.vdot(W, W)) if ridge else 0.0)
                  + float(penalty.value(V)))
        target = kw.get("target") or 0.0
        from_w = cert._certify_at(datafit, penalty, np.asarray(Wd), b, primal, ridge,
                                  datafit.dual_point(np.asarray(Wd), b), True, True, target,
                                  True, cert.REFINE_WITHIN)
        own = cert._certify_at(datafit, penalty, W, b, primal, ridge, dp, True, False, target,
                               True, None)
        if from_w is not None and own is not None:
            log.append((from_w.relative_gap, own.relative_gap, target))
        return original(datafit, penalty, V, b, **kw)

    cert.duality_gap = spy
    table = bc.model_table()
    print("\nADMM's periodic checks: the W-step's dual point against the fitted point's")
    print("  features  model             checks  own better  own alone meets tol  "
          "median gap(W-step) / gap(own)")
    try:
        for features in ("raw", "zscore"):
            problem = bc.load_problem(features)
            for key in ADMM_MODELS:
                model = table[key]
                params = model.choose(problem)
                log.clear()
                for tol in (1e-4, 1e-8):
                    est = model.estimator(params, problem).set_params(tol=tol)
                    Xs, ys = problem.scaled(model.c)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        est.fit(Xs, ys)
                if not log:
                    print(f"  {features:8s}  {key:16s}  no ADMM checks")
                    continue
                L = np.array(log)
                own_better = int(np.sum(L[:, 1] < L[:, 0]))
                own_alone = int(np.sum((L[:, 1] <= L[:, 2]) & (L[:, 0] > L[:, 2])))
                ratio = float(np.median(L[:, 0] / np.maximum(L[:, 1], 1e-300)))
                print(f"  {features:8s}  {key:16s}  {len(L):6d}  {own_better:10d}  "
                      f"{own_alone:19d}  {ratio:.2g}")
    finally:
        cert.duality_gap = original


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-models", action="store_true")
    args = parser.parse_args(argv)
    oracle_table()
    if not args.skip_models:
        two_dual_points()


if __name__ == "__main__":
    main()
