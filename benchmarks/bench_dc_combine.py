"""Divide-and-conquer robust MTL: every combine step against APG and LADM run to convergence.

Generated multi-label data (:func:`robust_common.eurlex`, EUR-Lex-shaped: sparse tf-idf-like
documents, labels from a rank-20 model plus 20 outlier labels), 40% / 60% split, squared hinge,
``alpha = 0.1 alpha_max``, ``lam = 1`` (:class:`multitask.RobustMTLClassifier`). Per seed:

* APG (``solver=ProximalGradient(max_iter=--apg-max-iter, tol=--tol)``) and LADM
  (``LinearizedADMM(max_iter=--ladm-max-iter, tol=--tol)``, the exact schedule) on the full
  problem, one BLAS thread, run to the library's stopping rule (the output says when a cap
  was hit instead);
* divide-and-conquer for every combine step and ``t`` in ``--groups``: the groups solved by
  APG (``--group-iter`` iterations at most), ``combine="refine"`` refining on the full problem
  with APG for ``--refine-iter`` iterations at most; the groups on 2 joblib workers (started
  before timing) x 1 BLAS thread, and for the first seed also on a 2-worker Dask
  ``LocalCluster`` (processes, 1 thread each) and serially, the results compared bitwise.

Reported per run: mean test AUC over labels, the objective of the full problem at the fitted
model, iterations, wall time and CPU time. CPU time is that of the process for the full
solvers; for divide-and-conquer the parent's CPU time (partition, combine, refinement) plus the
groups' CPU times scheduled longest-first on the 2 workers (``cpu span``: the wall time on 2
dedicated cores), and the total CPU work. Ratios use medians over the seeds; AUC differences
are means over the seeds.

Usage::

    python benchmarks/bench_dc_combine.py --shape 6000 2000 200 --seeds 0 1 2
    python benchmarks/bench_dc_combine.py --shape 3000 400 1000 --seeds 0 1 2
    python benchmarks/bench_dc_combine.py --yeast-scene
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings

import numpy as np
from robust_common import auc, eurlex, objective, split
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from multitask import RobustMTLClassifier
from multitask.solvers import LinearizedADMM, ProximalGradient
from multitask.solvers.divide_conquer import COMBINES, DEFAULT_COMBINE


def makespan(times, workers: int) -> float:
    """Longest-first schedule of ``times`` on ``workers`` machines."""
    load = [0.0] * max(1, workers)
    for t in sorted(times, reverse=True):
        load[load.index(min(load))] += t
    return max(load)


def fit(est, X, Y, *, full: bool) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", UserWarning)
        t0, c0 = time.perf_counter(), time.process_time()
        if full:
            with threadpool_limits(limits=1):
                est.fit(X, Y)
        else:
            est.fit(X, Y)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    out = {"wall": wall, "cpu": cpu, "cpu_work": cpu, "iterations": int(est.n_iter_),
           "converged": bool(est.converged_)}
    info = est.solver_info_
    if "cpu_seconds_groups" in info:
        parent = info["parent_cpu_seconds"]
        out["cpu"] = parent + makespan(info["cpu_seconds_groups"], 2)
        out["cpu_work"] = parent + float(np.sum(info["cpu_seconds_groups"]))
        out["rank"] = info.get("rank")
        out["block_ranks"] = [int(r) for r in info.get("block_ranks", [])]
        out["refine_iter"] = info.get("refine_n_iter")
    return out


def run_size(args, shape, seed: int, client) -> list[dict]:
    b = eurlex(*shape, seed=seed)
    Xtr, Ytr, Xte, Yte, _ = split(b.X, b.Y, seed)
    alpha = 0.1 * RobustMTLClassifier(lam=1.0).alpha_max(Xtr, Ytr)
    common = {"alpha": alpha, "lam": 1.0}
    rows = []

    def record(name, est, res, **extra):
        res.update(name=name, seed=seed, shape=list(shape), labels=int(Ytr.shape[1]),
                   auc=auc(est, Xte, Yte), objective=objective(est, Xtr, Ytr), **extra)
        rows.append(res)
        print(f"  seed {seed} {name:28s} AUC {res['auc']:.4f}  obj {res['objective']:.5f}  "
              f"it {res['iterations']:5d}{'' if res['converged'] else ' (cap)'}  wall "
              f"{res['wall']:8.2f} s  cpu {res['cpu']:7.2f} s  work {res['cpu_work']:7.2f} s"
              + (f"  rank {res.get('rank')}" if "rank" in res else ""), flush=True)
        return res

    if "apg" in args.full:
        est = RobustMTLClassifier(**common, solver=ProximalGradient(
            max_iter=args.apg_max_iter, tol=args.tol))
        record("APG", est, fit(est, Xtr, Ytr, full=True))
    if "ladm" in args.full and (seed == args.seeds[0] or args.ladm_all_seeds):
        est = RobustMTLClassifier(**common, solver=LinearizedADMM(
            max_iter=args.ladm_max_iter, tol=args.tol))
        record("LADM", est, fit(est, Xtr, Ytr, full=True))
    base = ProximalGradient(max_iter=args.group_iter, tol=args.tol)
    combines = args.combines if seed == args.seeds[0] or args.all_combines_all_seeds \
        else list(dict.fromkeys([DEFAULT_COMBINE, "project"]))
    for t in args.groups:
        for c in combines:
            dc = {"n_groups": t, "combine": c, "refine_iter": args.refine_iter,
                  "random_state": seed, "solver": base, "n_jobs": 2}
            est = RobustMTLClassifier(**common, **dc, backend="joblib")
            res = record(f"DC t={t} {c} (joblib)", est, fit(est, Xtr, Ytr, full=False))
            if seed != args.seeds[0]:
                continue
            coef = est.coef_.copy()
            for backend in (["dask"] if client is not None else []) + ["serial"]:
                if backend == "serial" and c != DEFAULT_COMBINE:
                    continue
                other = RobustMTLClassifier(**common, **{**dc, "backend": backend})
                r2 = fit(other, Xtr, Ytr, full=False)
                same = bool(np.array_equal(coef, other.coef_))
                record(f"DC t={t} {c} ({backend})", other, r2, identical_to_joblib=same)
                res.setdefault("identical", {})[backend] = same
    return rows


def summarize(rows: list[dict]) -> None:
    names = list(dict.fromkeys(r["name"] for r in rows))
    apg = {r["seed"]: r for r in rows if r["name"] == "APG"}
    print("\n| method | seeds | AUC (mean) | AUC - APG (points) | objective | iterations | "
          "wall s (median) | CPU s (median) | APG / DC wall | APG / DC CPU |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in names:
        rs = [r for r in rows if r["name"] == n]
        seeds = [r["seed"] for r in rs]
        d_auc = [100 * (r["auc"] - apg[r["seed"]]["auc"]) for r in rs if r["seed"] in apg]
        w = float(np.median([r["wall"] for r in rs]))
        c = float(np.median([r["cpu"] for r in rs]))
        aw = [apg[s]["wall"] / r["wall"] for s, r in zip(seeds, rs, strict=True) if s in apg]
        ac = [apg[s]["cpu"] / r["cpu"] for s, r in zip(seeds, rs, strict=True) if s in apg]
        print(f"| {n} | {len(rs)} | {np.mean([r['auc'] for r in rs]):.4f} | "
              f"{np.mean(d_auc):+.2f} | {np.mean([r['objective'] for r in rs]):.4f} | "
              f"{int(np.median([r['iterations'] for r in rs]))} | {w:.2f} | {c:.2f} | "
              f"{np.median(aw):.1f}x | {np.median(ac):.1f}x |")


def yeast_scene(args) -> None:
    """Yeast and Scene: the full problem (APG), the default combine and the paper's at t=4,
    and ``n_groups="auto"``; mean AUC over splits."""
    from multitask.datasets import load_scene, load_yeast, split_shared
    from multitask.metrics import roc_auc

    for name, loader in (("yeast", load_yeast), ("scene", load_scene)):
        b = loader()
        X, Y = np.asarray(b.X, dtype=float), np.asarray(b.Y)
        res: dict[str, list[float]] = {}
        msgs: set[str] = set()
        for seed in args.seeds:
            Xtr, Ytr, Xte, Yte = split_shared(X, Y, train_ratio=0.4, random_state=seed)
            mu, sd = Xtr.mean(axis=0), Xtr.std(axis=0)
            sd[sd == 0] = 1.0
            Xtr, Xte = (Xtr - mu) / sd, (Xte - mu) / sd
            keep = (Ytr.sum(0) >= 2) & (Ytr.shape[0] - Ytr.sum(0) >= 2)
            Ytr, Yte = Ytr[:, keep], Yte[:, keep]
            alpha = 0.1 * RobustMTLClassifier(lam=1.0).alpha_max(Xtr, Ytr)
            configs = {"APG (full)": {}, f"DC t=4 {DEFAULT_COMBINE}": {"n_groups": 4},
                       "DC t=4 project": {"n_groups": 4, "combine": "project"},
                       "n_groups='auto'": {"n_groups": "auto"}}
            for label, kw in configs.items():
                est = RobustMTLClassifier(alpha=alpha, lam=1.0, random_state=seed,
                                          solver=ProximalGradient(max_iter=args.apg_max_iter,
                                                                  tol=args.tol), **kw)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    est.fit(Xtr, Ytr)
                msgs |= {f"{label}: {w.message}" for w in caught
                         if issubclass(w.category, UserWarning)
                         and not issubclass(w.category, ConvergenceWarning)}
                res.setdefault(label, []).append(
                    float(roc_auc(Yte, np.asarray(est.decision_function(Xte)))))
                if label == "n_groups='auto'":
                    res.setdefault("auto: n_groups_", []).append(est.n_groups_)
        print(f"\n{name} ({Y.shape[1]} labels, {len(args.seeds)} splits, a = 0.1, lam = 1):")
        full = np.mean(res["APG (full)"])
        for label, v in res.items():
            extra = "" if label.startswith("auto:") or label == "APG (full)" else \
                f"  ({100 * (np.mean(v) - full):+.2f} points)"
            print(f"  {label:22s} {np.mean(v):.4f}{extra}")
        for m in sorted(msgs):
            print(f"  warning: {m}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shape", type=int, nargs=3, default=(6000, 2000, 200),
                   metavar=("ROWS", "FEATURES", "LABELS"))
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--groups", type=int, nargs="+", default=[4, 10])
    p.add_argument("--combines", nargs="+", default=list(COMBINES), choices=COMBINES)
    p.add_argument("--all-combines-all-seeds", action="store_true",
                   help="every combine on every seed (default: the default combine and the "
                        "paper's on the later seeds)")
    p.add_argument("--full", nargs="*", default=["apg", "ladm"], choices=["apg", "ladm"])
    p.add_argument("--ladm-all-seeds", action="store_true")
    p.add_argument("--tol", type=float, default=1e-4)
    p.add_argument("--apg-max-iter", type=int, default=5000)
    p.add_argument("--ladm-max-iter", type=int, default=5000)
    p.add_argument("--group-iter", type=int, default=150)
    p.add_argument("--refine-iter", type=int, default=350)
    p.add_argument("--no-dask", action="store_true")
    p.add_argument("--yeast-scene", action="store_true")
    p.add_argument("--json", help="write every row to this file")
    args = p.parse_args()
    print(f"load average {os.getloadavg()}, {os.cpu_count()} cores")
    if args.yeast_scene:
        yeast_scene(args)
        return
    with warnings.catch_warnings():  # start the joblib workers before timing
        warnings.simplefilter("ignore")
        b = eurlex(400, 100, 30, seed=99)
        RobustMTLClassifier(n_groups=2, backend="joblib", n_jobs=2, max_iter=5).fit(
            b.X, b.Y)
    client = cluster = None
    if not args.no_dask:
        import distributed

        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           host="127.0.0.1", dashboard_address=None)
        client = distributed.Client(cluster)
    rows: list[dict] = []
    try:
        print(f"shape {tuple(args.shape)}; groups {args.groups}; combines {args.combines}")
        for seed in args.seeds:
            rows += run_size(args, tuple(args.shape), seed, client)
            if args.json:
                with open(args.json, "w") as fh:
                    json.dump(rows, fh, indent=1, default=str)
    finally:
        if client is not None:
            client.close()
            cluster.close()
    summarize(rows)
    print(f"load average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
