"""Robust MTL solvers against their peers, in one run.

1. The paper's LADM constants against cvxpy (CLARABEL): the relative objective gap at which
   LADM stops for growth rates ``rho`` of the penalty (the printed ``rho = 1.9`` and smaller
   ones) and for the exact mode, on the equality-constrained least-squares model (eq. (2),
   16 tasks, 24 features, 12 rows each) and on the squared hinge (eq. (3), 10 tasks, 12
   features, 40 rows each). This is the specification's note P2, measured.
2. Speed on a mid-size shared sparse problem (``make_eurlex_synthetic`` with 6,000 documents,
   2,000 features, 200 labels; squared hinge, paper constants, one BLAS thread for the full
   problem): the fit time of APG and LADM against divide-and-conquer LADM with ``t = 4`` and
   ``t = 10`` on 2 joblib workers (started before timing), medians over ``--repeats``, the
   ratios peer / DC (> 1 means DC is faster), the objective reached on the full problem and the
   test AUC.

Usage::

    python benchmarks/bench_robust_dc.py [--repeats 3] [--skip-speed]
"""

from __future__ import annotations

import argparse
import time
import warnings

import cvxpy as cp
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from multitask.data import as_multitask_data
from multitask.datasets import make_outlier_tasks
from multitask.experiments.robust_dc import (
    _alpha_max,
    _auc,
    _full_objective,
    _split,
    _to_data,
    _warm_up,
    make_eurlex_synthetic,
)
from multitask.losses import Squared, SquaredHinge
from multitask.solvers.divide_conquer import divide_and_conquer, make_rmtl_datafit, solve_rmtl
from multitask.solvers.ladm import ladm_rmtl, rmtl_objective


def _cvx(data, alpha, lam, kind):
    d, m = data.n_features, data.n_tasks
    L, E = cp.Variable((d, m)), cp.Variable((d, m))
    reg = cp.normNuc(L) + lam * cp.sum(cp.norm(E, 2, axis=0))
    cons, terms = [], []
    for t in range(m):
        X, y = data.task_X(t), data.task_y(t)
        z = X @ (L[:, t] + E[:, t])
        if kind == "constrained":
            cons.append(z == y)
        else:
            terms.append(cp.sum(cp.square(cp.pos(1 - cp.multiply(y, z)))) / len(y))
    obj = reg if kind == "constrained" else sum(terms) + alpha * reg
    prob = cp.Problem(cp.Minimize(obj), cons)
    prob.solve(solver="CLARABEL")
    return prob.value


def rho_sweep() -> None:
    print("1. LADM stopping point against cvxpy (relative objective gap, iterations)")
    b = make_outlier_tasks(n_tasks=16, n_features=24, n_samples=12, rank=2, n_outliers=2,
                           noise=0.1, random_state=0)
    ls, _ = as_multitask_data(b.X, b.y)
    b = make_outlier_tasks(n_tasks=10, n_features=12, n_samples=40, rank=2, n_outliers=2,
                           noise=0.5, task_type="classification", random_state=2)
    hinge, _ = as_multitask_data(b.X, b.y, classification=True)
    cases = [("constrained least squares, lam=0.9", ls, Squared(ls, False), 1.0, 0.9,
              "constrained"),
             ("squared hinge, alpha=0.05, lam=1", hinge, SquaredHinge(hinge, False), 0.05, 1.0,
              "penalized")]
    for title, data, df, alpha, lam, form in cases:
        ref = _cvx(data, alpha, lam, "constrained" if form == "constrained" else "hinge")
        print(f"   {title}: cvxpy optimum {ref:.6f}")
        for mode, rho in [("paper", 1.9), ("paper", 1.5), ("paper", 1.2), ("paper", 1.1),
                          ("paper", 1.05), ("paper", 1.02), ("exact", None)]:
            r = ladm_rmtl(df, alpha, lam, formulation=form, mode=mode, rho=rho)
            obj = rmtl_objective(df, r.coef[0], r.coef[1], None, alpha, lam, form)
            name = f"paper rho={rho}" if mode == "paper" else "exact"
            print(f"      {name:16s} gap {(obj - ref) / ref:+.2e}  iterations {r.n_iter:5d}")


def speed(repeats: int) -> None:
    print("\n2. Speed: APG and LADM against divide-and-conquer LADM (squared hinge, paper "
          "constants)")
    b = make_eurlex_synthetic(n_samples=6000, n_features=2000, n_tasks=200, random_state=0)
    print(f"   {b.DESCR.split('. ', 1)[1]}")
    Xtr, Ytr, Xte, Yte, _ = _split(b.X, b.Y, 0)
    data = _to_data(Xtr, Ytr, "squared_hinge")
    alpha, lam = 0.1 * _alpha_max(data, "squared_hinge"), 1.0
    _warm_up("squared_hinge", 2)
    runs = {"APG": ("apg", 1), "LADM": ("ladm", 1), "DC-LADM t=4": ("ladm", 4),
            "DC-LADM t=10": ("ladm", 10)}
    times: dict[str, list[float]] = {k: [] for k in runs}
    last = {}
    for _ in range(repeats):
        for name, (solver, t) in runs.items():
            opts = {"mode": "paper", "max_iter": 3000}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                t0 = time.perf_counter()
                if t == 1:
                    with threadpool_limits(limits=1):
                        res = solve_rmtl(make_rmtl_datafit("squared_hinge", data, True, solver),
                                         solver, alpha, lam, **opts)
                else:
                    res = divide_and_conquer(data, loss="squared_hinge", solver=solver,
                                             alpha=alpha, lam=lam, n_groups=t, random_state=0,
                                             backend="joblib", n_jobs=2, solver_options=opts)
                times[name].append(time.perf_counter() - t0)
            last[name] = res
    med = {k: float(np.median(v)) for k, v in times.items()}
    for name, res in last.items():
        obj = _full_objective(data, "squared_hinge", res, alpha, lam)
        print(f"   {name:13s} median {med[name]:7.2f} s  objective {obj:.5f}  AUC "
              f"{_auc(Xte, Yte, res.W, res.intercept):.4f}")
    for name in ("DC-LADM t=4", "DC-LADM t=10"):
        print(f"   {name}: APG / DC = {med['APG'] / med[name]:.2f}x, LADM / DC = "
              f"{med['LADM'] / med[name]:.2f}x")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--skip-speed", action="store_true")
    args = p.parse_args()
    rho_sweep()
    if not args.skip_speed:
        speed(args.repeats)


if __name__ == "__main__":
    main()
