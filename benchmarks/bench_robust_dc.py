"""Robust MTL solvers against their peers, in one run.

1. The paper's LADM constants against cvxpy (CLARABEL): the relative objective gap at which
   LADM stops for growth rates ``rho`` of the penalty (the printed ``rho = 1.9`` and smaller
   ones) and for the exact schedule, on the equality-constrained least-squares model (eq. (2),
   16 tasks, 24 features, 12 rows each) and on the squared hinge (eq. (3), 10 tasks, 12
   features, 40 rows each). This is the specification's note P2, measured.
2. Speed on a mid-size shared sparse problem (generated EUR-Lex-shaped data with 6,000
   documents, 2,000 features, 200 labels; squared hinge, paper constants, one BLAS thread for
   the full problem): the fit time of APG and LADM against divide-and-conquer LADM with
   ``t = 4`` and ``t = 10`` on 2 joblib workers (started before timing), medians over
   ``--repeats``, the ratios peer / DC (> 1 means DC is faster), the objective reached on the
   full problem and the test AUC.

Every fit is :class:`multitask.RobustMTLRegressor` / :class:`multitask.RobustMTLClassifier`
with a configured :class:`multitask.solvers.LinearizedADMM` (``schedule="paper"``, ``rho``) or
``solver="fista"`` (APG, the library's stopping rule at ``tol = 1e-4``), and ``n_groups`` for
divide-and-conquer.

Usage::

    python benchmarks/bench_robust_dc.py [--repeats 3] [--skip-speed] [--skip-rho]
        [--shape 6000 2000 200]
"""

from __future__ import annotations

import argparse
import time
import warnings

import cvxpy as cp
import numpy as np
from robust_common import auc, eurlex, objective, split
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from multitask import RobustMTLClassifier, RobustMTLRegressor
from multitask.datasets import make_outlier_tasks
from multitask.penalties import LowRankOutlier
from multitask.solvers import LinearizedADMM


def _cvx(Xs, ys, alpha, lam, kind):
    d, m = Xs[0].shape[1], len(Xs)
    L, E = cp.Variable((d, m)), cp.Variable((d, m))
    reg = cp.normNuc(L) + lam * cp.sum(cp.norm(E, 2, axis=0))
    cons, terms = [], []
    for t in range(m):
        z = Xs[t] @ (L[:, t] + E[:, t])
        if kind == "constrained":
            cons.append(z == ys[t])
        else:
            y = 2.0 * ys[t] - 1.0
            terms.append(cp.sum(cp.square(cp.pos(1 - cp.multiply(y, z)))) / len(y))
    obj = reg if kind == "constrained" else sum(terms) + alpha * reg
    prob = cp.Problem(cp.Minimize(obj), cons)
    prob.solve(solver="CLARABEL")
    return prob.value


def _hinge_objective(est, Xs, ys, alpha, lam) -> float:
    S = est.decision_function(Xs)
    f = sum(float(np.mean(np.maximum(0.0, 1.0 - (2.0 * y - 1.0) * s) ** 2))
            for s, y in zip(S, ys, strict=True))
    return f + LowRankOutlier(alpha, lam).value(est.coef_variable_)


def rho_sweep() -> None:
    print("1. LADM stopping point against cvxpy (relative objective gap, iterations)")
    ls = make_outlier_tasks(n_tasks=16, n_features=24, n_samples=12, rank=2, n_outliers=2,
                            noise=0.1, random_state=0)
    hinge = make_outlier_tasks(n_tasks=10, n_features=12, n_samples=40, rank=2, n_outliers=2,
                               noise=0.5, task_type="classification", random_state=2)
    cases = [("constrained least squares, lam=0.9", ls, 1.0, 0.9, "constrained"),
             ("squared hinge, alpha=0.05, lam=1", hinge, 0.05, 1.0, "hinge")]
    for title, b, alpha, lam, kind in cases:
        ref = _cvx(b.X, b.y, alpha, lam, kind)
        print(f"   {title}: cvxpy optimum {ref:.6f}")
        for schedule, rho in [("paper", 1.9), ("paper", 1.5), ("paper", 1.2), ("paper", 1.1),
                              ("paper", 1.05), ("paper", 1.02), ("exact", None)]:
            opts = {"schedule": schedule, "rho": rho, "max_iter": 20000,
                    "constrained": kind == "constrained"}
            if schedule == "exact":
                opts["tol"] = 1e-6
            solver = LinearizedADMM(**opts)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if kind == "constrained":
                    est = RobustMTLRegressor(lam=lam, formulation="constrained",
                                             fit_intercept=False, solver=solver).fit(b.X, b.y)
                    obj = LowRankOutlier(1.0, lam).value(est.coef_variable_)
                else:
                    est = RobustMTLClassifier(alpha=alpha, lam=lam, fit_intercept=False,
                                              solver=solver).fit(b.X, b.y)
                    obj = _hinge_objective(est, b.X, b.y, alpha, lam)
            name = f"paper rho={rho}" if schedule == "paper" else "exact"
            print(f"      {name:16s} gap {(obj - ref) / ref:+.2e}  iterations {est.n_iter_:5d}")


def speed(repeats: int, shape=(6000, 2000, 200)) -> None:
    print("\n2. Speed: APG and LADM against divide-and-conquer LADM (squared hinge, paper "
          "constants)")
    b = eurlex(*shape, seed=0)
    print(f"   {b.DESCR}")
    Xtr, Ytr, Xte, Yte, _ = split(b.X, b.Y, 0)
    alpha, lam = 0.1 * RobustMTLClassifier(lam=1.0).alpha_max(Xtr, Ytr), 1.0
    paper = LinearizedADMM(schedule="paper", max_iter=3000)
    common = {"alpha": alpha, "lam": lam, "random_state": 0, "backend": "joblib", "n_jobs": 2}
    with warnings.catch_warnings():  # start the joblib workers before timing
        warnings.simplefilter("ignore")
        RobustMTLClassifier(**common, n_groups=2, max_iter=20).fit(Xtr[:200], Ytr[:200, :4])
    runs = {"APG": {"solver": "fista", "max_iter": 3000}, "LADM": {"solver": paper},
            "DC-LADM t=4": {"solver": paper, "n_groups": 4},
            "DC-LADM t=10": {"solver": paper, "n_groups": 10}}
    times: dict[str, list[float]] = {k: [] for k in runs}
    last = {}
    for _ in range(repeats):
        for name, opts in runs.items():
            est = RobustMTLClassifier(**common, **opts)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                t0 = time.perf_counter()
                if est.n_groups == 1:
                    with threadpool_limits(limits=1):
                        est.fit(Xtr, Ytr)
                else:
                    est.fit(Xtr, Ytr)
                times[name].append(time.perf_counter() - t0)
            last[name] = est
    med = {k: float(np.median(v)) for k, v in times.items()}
    for name, est in last.items():
        print(f"   {name:13s} median {med[name]:7.2f} s  objective "
              f"{objective(est, Xtr, Ytr):.5f}  AUC {auc(est, Xte, Yte):.4f}  "
              f"iterations {est.n_iter_}")
    for name in ("DC-LADM t=4", "DC-LADM t=10"):
        print(f"   {name}: APG / DC = {med['APG'] / med[name]:.2f}x, LADM / DC = "
              f"{med['LADM'] / med[name]:.2f}x")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--skip-speed", action="store_true")
    p.add_argument("--skip-rho", action="store_true")
    p.add_argument("--shape", type=int, nargs=3, default=(6000, 2000, 200),
                   metavar=("ROWS", "FEATURES", "LABELS"), help="size of the speed problem")
    args = p.parse_args()
    if not args.skip_rho:
        rho_sweep()
    if not args.skip_speed:
        speed(args.repeats, tuple(args.shape))


if __name__ == "__main__":
    main()
