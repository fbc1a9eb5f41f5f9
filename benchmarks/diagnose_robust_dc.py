"""Where divide-and-conquer robust MTL loses AUC on ``eurlex-synthetic``.

Two measurements, on generated EUR-Lex-shaped data (the real EUR-Lex data are not available),
squared hinge, one 40% / 60% split:

``--part groups`` (a reduced instance, ``--shape 4000,1000,100`` by default): the full problem
solved by APG (:class:`multitask.RobustMTLClassifier`, ``solver="fista"``, ``tol = 1e-6``)
against divide-and-conquer with APG in the groups (:class:`multitask.solvers.DivideAndConquer`
on the same datafit, each group's penalty ``LowRankOutlier(alpha * --alpha-scale, lam)``), and
the per-task test AUC of

* the full solution ``L + E``;
* divide-and-conquer's combined solution ``U U^T [L_1, ..., L_t] + E``;
* the concatenated group solutions before the projection, ``[L_1, ..., L_t] + E``
  (``combine="concatenate"``; the AUC is invariant to the intercepts);
* the full solution projected on the column space of its own first-group block,
  ``U_f U_f^T L + E`` (what the projection alone costs when the groups are solved perfectly),

split into inlier and outlier tasks.

``--part configs`` (the full shape): divide-and-conquer variants given as
``solver:t:alpha_scale:schedule:rho`` (``solver`` ``ladm`` or ``apg``; ``schedule`` ``paper`` or
``exact``; ``rho`` ``-`` for the schedule's default), groups on 2 joblib workers; prints AUC,
the full problem's objective, iterations, ``rank(L_hat)`` and wall seconds.

Usage::

    python benchmarks/diagnose_robust_dc.py --part groups --a 0.3 --alpha-scale 0.5
    python benchmarks/diagnose_robust_dc.py --part configs --a 0.1 \\
        ladm:4:0.5:paper:- ladm:4:0.5:paper:1.05 ladm:4:1:paper:1.05 apg:4:0.5:exact:-
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from robust_common import eurlex, rank, split
from threadpoolctl import threadpool_limits

from multitask import RobustMTLClassifier, as_multitask_data
from multitask.losses import get_datafit
from multitask.metrics import roc_auc
from multitask.penalties import LowRankOutlier
from multitask.solvers import DivideAndConquer, LinearizedADMM, ProximalGradient


def column_projection(L: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``U U^T L`` with ``U`` the left singular vectors of ``L[:, cols]`` (numerical rank)."""
    U, s, _ = np.linalg.svd(L[:, cols], full_matrices=False)
    r = int(np.sum(s > max(L[:, cols].shape) * np.finfo(float).eps * s[0])) if s.size else 0
    return U[:, :r] @ (U[:, :r].T @ L)


def base_solver(solver: str, schedule: str, rho: str, max_iter: int):
    """The groups' solver of a configuration."""
    if solver == "apg":
        return ProximalGradient(tol=1e-6 if schedule == "exact" else 1e-4, max_iter=max_iter)
    return LinearizedADMM(schedule=schedule, max_iter=max_iter,
                          rho=None if rho == "-" else float(rho))


def dc_fit(Xtr, Ytr, alpha, lam, group_alpha, t, base, backend="serial", combine="project"):
    """Divide-and-conquer with the groups' penalty at ``group_alpha`` (a SolverResult)."""
    data, _ = as_multitask_data(Xtr, Ytr, classification=True)
    datafit = get_datafit("squared_hinge", data, True, center=True)
    dc = DivideAndConquer(base, n_groups=t, random_state=0, backend=backend, n_jobs=2,
                          combine=combine)
    return dc.solve(datafit, LowRankOutlier(alpha, lam),
                    group_penalty=LowRankOutlier(group_alpha, lam))


def part_groups(args) -> None:
    n, d, m = (int(v) for v in args.shape.split(","))
    b = eurlex(n, d, m, seed=0)
    Xtr, Ytr, Xte, Yte, keep = split(b.X, b.Y, 0)
    if not keep.all():
        raise SystemExit("labels were dropped from the split: choose another shape")
    alpha = args.a * RobustMTLClassifier(lam=1.0).alpha_max(Xtr, Ytr)
    outlier = np.zeros(m, dtype=bool)
    outlier[b.outlier_tasks] = True

    def per_task(W):  # per-task AUC is invariant to the intercepts
        return roc_auc(Yte, np.asarray(Xte @ W), average=None)

    base = ProximalGradient(tol=1e-6, max_iter=5000, warn=False)
    with threadpool_limits(1):
        full = RobustMTLClassifier(alpha=alpha, lam=args.lam, solver=base).fit(Xtr, Ytr)
        g = args.alpha_scale * alpha
        dc = dc_fit(Xtr, Ytr, alpha, args.lam, g, args.t, base)
        cat = dc_fit(Xtr, Ytr, alpha, args.lam, g, args.t, base, combine="concatenate")
    Lf, Ef = full.low_rank_component_.T, full.outlier_component_.T
    g0 = dc.info["groups"][0]
    L_proj = column_projection(Lf, g0)
    print(f"shape {n} x {d}, {m} tasks ({outlier.sum()} outliers), t = {args.t}, "
          f"a = {args.a}, lam = {args.lam}, group alpha x {args.alpha_scale}")
    print(f"rank: full L {rank(Lf)}, full L on group 0 {rank(Lf[:, g0])}, "
          f"DC first block {dc.info['rank']}, concatenated blocks {rank(cat.coef[0])}")
    rows = [("full", per_task(full.coef_.T)),
            ("DC (projected)", per_task(dc.W)),
            ("DC groups, no projection", per_task(cat.W)),
            ("full projected on group 0", per_task(L_proj + Ef))]
    for name, auc in rows:
        print(f"{name:28s} mean AUC {auc.mean():.4f}  inliers {auc[~outlier].mean():.4f}  "
              f"outliers {auc[outlier].mean():.4f}")


def objective_at(Xtr, Ytr, W, intercept, V, alpha, lam) -> float:
    """Squared-hinge objective of the full problem at ``W = L + E`` with ``intercept``."""
    S = np.asarray(Xtr @ W) + intercept
    f = float(np.mean(np.maximum(0.0, 1.0 - (2.0 * Ytr - 1.0) * S) ** 2, axis=0).sum())
    return f + LowRankOutlier(alpha, lam).value(V)


def part_configs(args) -> None:
    b = eurlex(seed=0)
    Xtr, Ytr, Xte, Yte, _ = split(b.X, b.Y, 0)
    alpha = args.a * RobustMTLClassifier(lam=1.0).alpha_max(Xtr, Ytr)
    for spec in args.configs:
        solver, t, scale, schedule, rho = spec.split(":")
        t, scale = int(t), float(scale)
        base = base_solver(solver, schedule, rho, args.max_iter)
        t0 = time.perf_counter()
        if t == 1:
            with threadpool_limits(1):
                est = RobustMTLClassifier(alpha=alpha * scale, lam=args.lam, solver=base)
                est.fit(Xtr, Ytr)
            secs = time.perf_counter() - t0
            W, c, V, n_iter = est.coef_.T, est.intercept_, est.coef_variable_, est.n_iter_
        else:
            res = dc_fit(Xtr, Ytr, alpha, args.lam, alpha * scale, t, base, backend="joblib")
            secs = time.perf_counter() - t0
            W, c, V, n_iter = res.W, res.intercept, res.coef, res.n_iter
        auc = float(roc_auc(Yte, np.asarray(Xte @ W) + c))
        obj = objective_at(Xtr, Ytr, W, c, V, alpha, args.lam)
        print(f"{spec:24s} AUC {auc:.4f}  objective {obj:.5f}  it {n_iter}  rank {rank(V[0])}"
              f"  {secs:.1f} s", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--part", choices=("groups", "configs"), required=True)
    p.add_argument("--a", type=float, default=0.1, help="alpha / alpha_max")
    p.add_argument("--lam", type=float, default=1.0)
    p.add_argument("--t", type=int, default=4)
    p.add_argument("--alpha-scale", type=float, default=1.0)
    p.add_argument("--shape", default="4000,1000,100")
    p.add_argument("--max-iter", type=int, default=3000)
    p.add_argument("configs", nargs="*")
    args = p.parse_args()
    warnings.simplefilter("ignore")
    (part_groups if args.part == "groups" else part_configs)(args)


if __name__ == "__main__":
    main()
