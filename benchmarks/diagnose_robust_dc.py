"""Where divide-and-conquer robust MTL loses AUC on ``eurlex-synthetic``.

Two measurements, on generated EUR-Lex-shaped data (:func:`make_eurlex_synthetic`; the real
EUR-Lex data are not available), squared hinge, one 40% / 60% split:

``--part groups`` (a reduced instance, ``--shape 4000,1000,100`` by default): the full problem
solved by APG (exact mode, ``tol = 1e-6``) against divide-and-conquer with APG in the groups,
and the per-task test AUC of

* the full solution ``L + E``;
* divide-and-conquer's combined solution ``U U^T [L_1, ..., L_t] + E``;
* the concatenated group solutions before the projection, ``[L_1, ..., L_t] + E``
  (the AUC is invariant to the intercepts, which are not recomputed there);
* the full solution projected on the column space of its own first-group block,
  ``U_f U_f^T L + E`` (what the projection alone costs when the groups are solved perfectly),

split into inlier and outlier tasks. The group weight is ``alpha * --alpha-scale``.

``--part configs`` (the full shape): divide-and-conquer variants given as
``solver:t:alpha_scale:mode:rho`` (``rho`` ``-`` for the mode's default), groups on 2 joblib
workers; prints AUC, the full problem's objective, iterations, ``rank(L_hat)`` and wall
seconds.

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
from sklearn.metrics import roc_auc_score
from threadpoolctl import threadpool_limits

from multitask.experiments.robust_dc import (
    _alpha_max,
    _auc,
    _full_objective,
    _split,
    _to_data,
    make_eurlex_synthetic,
)
from multitask.solvers.divide_conquer import (
    column_projection,
    divide_and_conquer,
    make_rmtl_datafit,
    solve_rmtl,
)

LOSS = "squared_hinge"


def _rank(L: np.ndarray, rtol: float = 1e-6) -> int:
    s = np.linalg.svd(L, compute_uv=False)
    return int((s > rtol * s[0]).sum()) if s.size and s[0] > 0 else 0


def part_groups(args) -> None:
    n, d, m = (int(v) for v in args.shape.split(","))
    b = make_eurlex_synthetic(n_samples=n, n_features=d, n_tasks=m, random_state=0)
    Xtr, Ytr, Xte, Yte, dropped = _split(b.X, b.Y, 0)
    if dropped:
        raise SystemExit("labels were dropped from the split: choose another shape")
    data = _to_data(Xtr, Ytr, LOSS)
    alpha = args.a * _alpha_max(data, LOSS)
    outlier = np.zeros(m, dtype=bool)
    outlier[b.outlier_tasks] = True

    def per_task(W, intercept):
        S = np.asarray(Xte @ W) + intercept
        return np.array([roc_auc_score(Yte[:, t], S[:, t]) for t in range(m)])

    opts = {"mode": "exact", "tol": 1e-6, "max_iter": 5000}
    with threadpool_limits(1):
        full = solve_rmtl(make_rmtl_datafit(LOSS, data, True, "apg"), "apg", alpha, args.lam,
                          **opts)
        dc = divide_and_conquer(data, loss=LOSS, solver="apg", alpha=alpha * args.alpha_scale,
                                lam=args.lam, n_groups=args.t, random_state=0,
                                backend="serial", solver_options=opts)
    Lf, Ef = full.coef
    g0 = dc.info["groups"][0]
    L_cat, E_dc = dc.info["L_concat"], dc.coef[1]
    L_proj, _ = column_projection(Lf, g0)
    print(f"shape {n} x {d}, {m} tasks ({outlier.sum()} outliers), t = {args.t}, "
          f"a = {args.a}, lam = {args.lam}, group alpha x {args.alpha_scale}")
    print(f"rank: full L {_rank(Lf)}, full L on group 0 {_rank(Lf[:, g0])}, "
          f"DC first block {dc.info['rank']}, concatenated blocks {_rank(L_cat)}")
    rows = [("full", per_task(full.W, full.intercept)),
            ("DC (projected)", per_task(dc.W, dc.intercept)),
            ("DC groups, no projection", per_task(L_cat + E_dc, 0.0)),
            ("full projected on group 0", per_task(L_proj + Ef, 0.0))]
    for name, auc in rows:
        print(f"{name:28s} mean AUC {auc.mean():.4f}  inliers {auc[~outlier].mean():.4f}  "
              f"outliers {auc[outlier].mean():.4f}")


def part_configs(args) -> None:
    b = make_eurlex_synthetic(random_state=0)
    Xtr, Ytr, Xte, Yte, _ = _split(b.X, b.Y, 0)
    data = _to_data(Xtr, Ytr, LOSS)
    alpha = args.a * _alpha_max(data, LOSS)
    for spec in args.configs:
        solver, t, scale, mode, rho = spec.split(":")
        t, scale = int(t), float(scale)
        opts = {"mode": mode, "max_iter": args.max_iter}
        if rho != "-":
            opts["rho"] = float(rho)
        if solver == "apg" and mode == "exact":
            opts["tol"] = 1e-6
        t0 = time.perf_counter()
        if t == 1:
            with threadpool_limits(1):
                res = solve_rmtl(make_rmtl_datafit(LOSS, data, True, solver), solver,
                                 alpha * scale, args.lam, **opts)
        else:
            res = divide_and_conquer(data, loss=LOSS, solver=solver, alpha=alpha * scale,
                                     lam=args.lam, n_groups=t, random_state=0,
                                     backend="joblib", n_jobs=2, solver_options=opts)
        secs = time.perf_counter() - t0
        print(f"{spec:24s} AUC {_auc(Xte, Yte, res.W, res.intercept):.4f}  objective "
              f"{_full_objective(data, LOSS, res, alpha, args.lam):.5f}  it {res.n_iter}  "
              f"rank {_rank(res.coef[0])}  {secs:.1f} s", flush=True)


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
