"""Why the capped trace norm's non-convex stages do not converge on School: the drift.

    OMP_NUM_THREADS=1 python benchmarks/diagnose_capped_trace_drift.py [--alpha 8.65]
        [--tau 0.979] [--iterations 10000]

On the training rows of School's first official split (``bench_cv_two_param.py``'s School
problem), ``CappedTraceRegressor(alpha, tau)`` is fitted with its defaults; its last stage
problem (``f(W) + alpha ||W||_{r-}`` with ``r`` the fit's capped rank) is then run on from the
fitted point by :class:`multitask.solvers.truncated_admm.TruncatedStageADMM` without the stall
rule, and the script prints, every 2,000 iterations, the stage objective, ``||W||_F``, the
penalized tail ``sum_{i > r} sigma_i(W)`` and the share of the change of ``W`` since the start
that lies in the entries the loss does not see (``w_tj`` with a zero row ``j`` of ``H_t``: a
feature constant within school ``t``'s rows), with the share of such entries. The defaults
are a strength in the middle of the default grid's path at the chosen cap.

    OMP_NUM_THREADS=1 python benchmarks/diagnose_capped_trace_drift.py --compare

fits ``CappedTraceRegressor`` at points of School's default grid (:data:`COMPARE_POINTS`) with
the drift rule of :mod:`multitask.solvers.truncated_admm` (``DRIFT_FACTOR``) and without it (the
stall rule alone), and prints for each the stage keys, the inner iterations, the objective, the
CPU seconds (after one untimed fit that compiles the kernels) and the nMSE on the split's
held-out rows.

    OMP_NUM_THREADS=1 python benchmarks/diagnose_capped_trace_drift.py --windows [100 50 25]

fits ``CappedTraceRegressor`` at the same points with the non-convex stages' objective compared
every 100, 50 and 25 iterations (:data:`multitask.solvers.truncated_admm.WINDOW`; the stall and
drift rules ask the same rate per iteration) and prints for each the stage keys, the inner
iterations, the objective and the held-out nMSE.

    OMP_NUM_THREADS=1 python benchmarks/diagnose_capped_trace_drift.py --cv

runs the default ``MultiTaskCV`` of ``CappedTraceRegressor`` on the same training rows (after one
untimed run that compiles the kernels) and counts how its non-convex stages end (converged, left
their stage key, the drift rule, the stall rule, the iteration budget) with their inner
iterations, beside the first (trace-norm) stages' iterations.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_cv_two_param import school_problem  # noqa: E402

from multitask import CappedTraceRegressor  # noqa: E402
from multitask.metrics import nmse  # noqa: E402
from multitask.penalties.capped_trace import TruncatedTraceNorm  # noqa: E402
from multitask.solvers import truncated_admm  # noqa: E402
from multitask.solvers.truncated_admm import TruncatedStageADMM  # noqa: E402

#: ``(alpha, tau)`` of School's default grid (the path's middle and the chosen point).
COMPARE_POINTS = ((40.1, 0.979), (18.6, 3.1), (8.65, 0.979), (4.01, 0.979), (1.86, 3.1),
                  (0.865, 0.979))


def compare() -> None:
    """Fits with and without the drift rule (module docstring)."""
    Xtr, ytr, Xte, yte = school_problem()
    y_true = np.concatenate(yte)
    factor = truncated_admm.DRIFT_FACTOR
    with warnings.catch_warnings():  # compiles the kernels, untimed
        warnings.simplefilter("ignore")
        CappedTraceRegressor(alpha=COMPARE_POINTS[0][0], tau=COMPARE_POINTS[0][1]).fit(Xtr, ytr)
    print(f"{'alpha':>7s} {'tau':>6s} {'rule':>9s} {'ranks':>18s} {'iters':>6s} "
          f"{'objective':>11s} {'CPU s':>6s} {'test nMSE':>9s}")
    for alpha, tau in COMPARE_POINTS:
        for rule, value in (("drift", factor), ("stall", 0.0)):
            truncated_admm.DRIFT_FACTOR = value
            try:
                est = CappedTraceRegressor(alpha=alpha, tau=tau)
                t0 = time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est.fit(Xtr, ytr)
                cpu = time.process_time() - t0
            finally:
                truncated_admm.DRIFT_FACTOR = factor
            err = nmse(y_true, np.concatenate(est.predict(Xte)))
            print(f"{alpha:7.3g} {tau:6.3g} {rule:>9s} {str(est.ranks_.tolist()):>18s} "
                  f"{est.n_iter_:6d} {est.objective_[-1]:11.3f} {cpu:6.2f} {err:9.5f}",
                  flush=True)


def windows(sizes) -> None:
    """Fits with other windows (module docstring)."""
    Xtr, ytr, Xte, yte = school_problem()
    y_true = np.concatenate(yte)
    default = truncated_admm.WINDOW
    print(f"{'alpha':>7s} {'tau':>6s} {'window':>6s} {'stage keys':>18s} {'iters':>6s} "
          f"{'objective':>11s} {'test nMSE':>9s}")
    for alpha, tau in COMPARE_POINTS:
        for size in sizes:
            truncated_admm.WINDOW = size
            try:
                est = CappedTraceRegressor(alpha=alpha, tau=tau)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est.fit(Xtr, ytr)
            finally:
                truncated_admm.WINDOW = default
            err = nmse(y_true, np.concatenate(est.predict(Xte)))
            print(f"{alpha:7.3g} {tau:6.3g} {size:6d} {str(est.solver_info_['stage_keys']):>18s} "
                  f"{est.n_iter_:6d} {est.objective_[-1]:11.3f} {err:9.5f}", flush=True)


def cv_stages() -> None:
    """How the non-convex stages of the default cross-validation end (module docstring)."""
    from multitask import MultiTaskCV
    from multitask.solvers.multistage import Multistage

    Xtr, ytr, _, _ = school_problem()
    ends: dict[str, list[int]] = {}
    first: list[int] = []
    solve_stage, solve_fit = TruncatedStageADMM.solve, Multistage.solve

    def counted_stage(self, datafit, penalty, **kw):
        left = [False]
        given = kw.get("callback")
        if given is not None:
            def callback(k, F, V, b):
                stop = bool(given(k, F, V, b))
                left[0] = left[0] or stop
                return stop
            kw["callback"] = callback
        res = solve_stage(self, datafit, penalty, **kw)
        end = ("converged" if res.converged else "left its key" if left[0]
               else "drift rule" if res.info["drifting"] else "stall rule"
               if res.info["stalled"] else "budget")
        ends.setdefault(end, []).append(int(res.n_iter))
        return res

    def counted_fit(self, datafit, penalty, **kw):
        res = solve_fit(self, datafit, penalty, **kw)
        first.append(int(res.info["stage_iters"][0]))
        return res

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        MultiTaskCV(CappedTraceRegressor(), n_alphas=3, widen=0).fit(Xtr, ytr)
        TruncatedStageADMM.solve, Multistage.solve = counted_stage, counted_fit
        try:
            MultiTaskCV(CappedTraceRegressor()).fit(Xtr, ytr)
        finally:
            TruncatedStageADMM.solve, Multistage.solve = solve_stage, solve_fit
    print(f"{len(first)} fits; their first stages: {sum(first)} inner iterations")
    print(f"{'non-convex stages ended by':>28s} {'stages':>7s} {'iterations':>11s}")
    for end, iters in sorted(ends.items(), key=lambda kv: -sum(kv[1])):
        print(f"{end:>28s} {len(iters):7d} {sum(iters):11d}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alpha", type=float, default=8.65)
    parser.add_argument("--tau", type=float, default=0.979)
    parser.add_argument("--iterations", type=int, default=10_000)
    parser.add_argument("--compare", action="store_true",
                        help="fits with and without the drift rule at points of the grid")
    parser.add_argument("--cv", action="store_true",
                        help="how the non-convex stages of the default CV end")
    parser.add_argument("--windows", type=int, nargs="*", default=None,
                        help="fits with these windows (default 100 50 25)")
    args = parser.parse_args(argv)
    if args.compare:
        compare()
        return
    if args.windows is not None:
        windows(args.windows or [100, 50, 25])
        return
    if args.cv:
        cv_stages()
        return
    Xtr, ytr, _, _ = school_problem()
    est = CappedTraceRegressor(alpha=args.alpha, tau=args.tau)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(Xtr, ytr)
    data = est._convert(Xtr, ytr, None, None)[0]
    datafit = est._make_datafit(data)
    W0 = est.coef_.T.copy()
    r = int(est.rank_)
    stage = TruncatedTraceNorm(args.alpha, r)
    H, _ = datafit.quadratic_form()
    unseen = ~np.any(H != 0.0, axis=2).T  # (d, m): w_tj the loss does not see
    print(f"School, first split's training rows: W is {W0.shape[0]} x {W0.shape[1]}, "
          f"{unseen.mean():.0%} of its entries unseen by the loss; alpha={args.alpha:g}, "
          f"tau={args.tau:g}, capped rank r={r}, the default fit's stages "
          f"{est.solver_info_['stage_keys']}")
    print(f"{'iterations':>10s} {'objective':>14s} {'||W||_F':>9s} {'tail':>9s} "
          f"{'unseen share of the change':>27s}")

    def row(k: int, W: np.ndarray) -> None:
        F = datafit.value(W) + stage.value(W)
        s = np.linalg.svd(W, compute_uv=False)
        dW = W - W0
        total = float(np.sum(dW * dW))
        share = float(np.sum(dW[unseen] ** 2)) / total if total > 0 else float("nan")
        print(f"{k:10d} {F:14.6f} {np.linalg.norm(W):9.2f} {s[r:].sum():9.2e} {share:27.2f}",
              flush=True)

    row(0, W0)
    W, done, chunk = W0, 0, 2000
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        while done < args.iterations:
            res = TruncatedStageADMM(max_iter=chunk, tol=1e-12, stall_tol=0.0,
                                     warn=False).solve(datafit, stage, coef_init=W)
            W, done = res.coef, done + chunk
            row(done, W)


if __name__ == "__main__":
    main()
