"""How far must divide-and-conquer refine to match APG run to convergence? (issue of the
divide-and-conquer robust MTL acceptance: 10x faster than converged APG, within 1 AUC point).

    OMP_NUM_THREADS=1 python benchmarks/diagnose_dc_refine.py apg [--shape 6000 2000 200]
    OMP_NUM_THREADS=1 python benchmarks/diagnose_dc_refine.py dc --refine-iter 350 1000 2000

The data and model of ``bench_dc_combine.py`` (generated EUR-Lex-shaped multi-label data,
40% / 60% split, squared hinge, ``alpha = 0.1 alpha_max``, ``lam = 1``), one seed:

* ``apg``: ``RobustMTLClassifier`` with accelerated gradient, warm-started segments of
  ``--segment`` iterations (``warm_start=True``) until the library's stopping rule holds at
  ``--tol`` or ``--max-iter`` iterations; after each segment the cumulative iterations and CPU
  time, the objective and the mean test AUC over labels: the AUC as APG converges;
* ``dc``: the estimators' default divide-and-conquer (``combine="refine"``, ``t`` groups of
  accelerated gradient capped at ``--group-iter`` iterations on 2 joblib workers) for each
  ``refine_iter`` (and with ``--paper`` the paper's ``combine="project"``); CPU time as in
  ``bench_dc_combine.py`` (the parent's plus the groups' scheduled longest-first on 2
  workers), and the optimality measure of the full problem at the combined model.

One JSON line per measurement is printed (and appended to ``--json``).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

from bench_dc_combine import makespan
from robust_common import auc, eurlex, objective, split
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from multitask import RobustMTLClassifier
from multitask.solvers import ProximalGradient


def emit(row: dict, path: str | None) -> None:
    line = json.dumps(row)
    print(line, flush=True)
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("part", choices=["apg", "dc"])
    p.add_argument("--shape", type=int, nargs=3, default=(6000, 2000, 200))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tol", type=float, default=1e-4)
    p.add_argument("--segment", type=int, default=2500)
    p.add_argument("--max-iter", type=int, default=40000)
    p.add_argument("--groups", type=int, default=4)
    p.add_argument("--group-iter", type=int, default=150)
    p.add_argument("--refine-iter", type=int, nargs="+", default=[350, 1000, 2000])
    p.add_argument("--paper", action="store_true",
                   help="also the paper's combine step (combine='project')")
    p.add_argument("--json")
    a = p.parse_args(argv)
    b = eurlex(*a.shape, seed=a.seed)
    Xtr, Ytr, Xte, Yte, _ = split(b.X, b.Y, a.seed)
    alpha = 0.1 * RobustMTLClassifier(lam=1.0).alpha_max(Xtr, Ytr)
    base = {"shape": list(a.shape), "seed": a.seed, "labels": int(Ytr.shape[1])}
    warnings.simplefilter("ignore", ConvergenceWarning)
    warnings.simplefilter("ignore", UserWarning)
    if a.part == "apg":
        est = RobustMTLClassifier(alpha=alpha, lam=1.0, warm_start=True,
                                  solver=ProximalGradient(max_iter=a.segment, tol=a.tol))
        total_it, cpu = 0, 0.0
        while total_it < a.max_iter:
            with threadpool_limits(1):
                c0 = time.process_time()
                est.fit(Xtr, Ytr)
                cpu += time.process_time() - c0
            total_it += int(est.n_iter_)
            emit({**base, "method": "APG", "iterations": total_it, "cpu": cpu,
                  "converged": bool(est.converged_), "optimality": float(est.optimality_),
                  "objective": objective(est, Xtr, Ytr), "auc": auc(est, Xte, Yte)}, a.json)
            if est.converged_:
                break
        return
    runs = [("refine", r) for r in a.refine_iter] + ([("project", 0)] if a.paper else [])
    for combine, r in runs:
        est = RobustMTLClassifier(alpha=alpha, lam=1.0, n_groups=a.groups, combine=combine,
                                  refine_iter=r, random_state=a.seed, backend="joblib",
                                  n_jobs=2, solver=ProximalGradient(max_iter=a.group_iter,
                                                                    tol=a.tol))
        t0, c0 = time.perf_counter(), time.process_time()
        est.fit(Xtr, Ytr)
        wall = time.perf_counter() - t0
        info = est.solver_info_
        cpu = info["parent_cpu_seconds"] + makespan(info["cpu_seconds_groups"], 2)
        emit({**base, "method": f"DC t={a.groups} {combine}", "refine_iter": r,
              "refine_n_iter": info.get("refine_n_iter"), "wall": wall, "cpu": cpu,
              "parent_cpu": time.process_time() - c0, "objective": objective(est, Xtr, Ytr),
              "optimality": float(est.optimality_), "auc": auc(est, Xte, Yte)}, a.json)


if __name__ == "__main__":
    main()
