"""Foundation solvers against their peers, in one run, at equal objective.

1. Trace-norm least squares on School (139 tasks, per-task designs) against cvxpy
   (CLARABEL) on the first ``--school-tasks`` schools (default 50): cvxpy's solve time vs our
   time to reach cvxpy's objective (+1e-6 relative).
2. l2,1 least squares on shared designs (SARCOS, Yeast) against scikit-learn's
   ``MultiTaskLasso`` (same objective: ``||Y - XW||_F^2 / (2n) + alpha sum_j ||W_j||``, centred):
   both whole ``fit`` calls timed to reach ``p* (1 + 1e-6)``, ``p*`` the best objective either
   solver finds, each with the loosest ``tol`` that gets there (ours: ``L21Regressor``, whose
   ``solver="auto"`` is block coordinate descent on the Gram matrix for a shared design).

Public API only: the estimators, and the solver class :class:`multitask.solvers.ProximalGradient`
on a :mod:`multitask.losses` datafit and a :mod:`multitask.penalties` penalty for the timed
solver runs.

Prints medians over repeats and the ratios peer / ours (> 1 means we are faster).

Usage::

    python benchmarks/bench_foundation.py [--repeats 5] [--school-tasks 139]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import MultiTaskLasso

from multitask import L21Regressor, TraceNormRegressor, as_multitask_data
from multitask.datasets import load_sarcos, load_school, load_yeast
from multitask.losses import Squared
from multitask.penalties import L21, TraceNorm
from multitask.solvers import ProximalGradient


def time_to_reach(datafit, penalty, target, max_iter=20000):
    """Seconds for FISTA to reach objective <= target (re-run, stopping there)."""
    hit = {}

    def cb(k, obj, V, b):
        if obj <= target:
            hit["k"] = k
            return True
        return False

    t0 = time.perf_counter()
    res = ProximalGradient(tol=1e-14, max_iter=max_iter, warn=False).solve(
        datafit, penalty, callback=cb)
    el = time.perf_counter() - t0
    if "k" not in hit:
        return float("nan"), res
    return el, res


def bench_trace_school(repeats, n_tasks):
    import cvxpy as cp

    b = load_school()
    m = n_tasks
    Xs = b.X[:m]
    allx = np.vstack(Xs)
    mu, sd = allx.mean(0), allx.std(0)
    sd[sd == 0] = 1
    Xs = [(x - mu) / sd for x in Xs]
    ys = b.y[:m]
    lam = 0.05 * TraceNormRegressor().alpha_max(Xs, ys)

    d = Xs[0].shape[1]
    W = cp.Variable((d, m))
    bb = cp.Variable(m)
    obj = sum(cp.sum_squares(Xs[t] @ W[:, t] + bb[t] - ys[t]) / (2 * len(ys[t]))
              for t in range(m)) + lam * cp.normNuc(W)
    prob = cp.Problem(cp.Minimize(obj))
    t_cvx = []
    for _ in range(max(1, repeats // 2)):
        t0 = time.perf_counter()
        prob.solve(solver="CLARABEL")
        t_cvx.append(time.perf_counter() - t0)
    p_star = prob.value
    target = p_star + 1e-6 * abs(p_star)
    t_ours = []
    for _ in range(repeats):
        data, _ = as_multitask_data(Xs, ys)  # fresh caches: Gram matrices are part of the cost
        t0 = time.perf_counter()
        df = Squared(data)
        setup = time.perf_counter() - t0
        el, res = time_to_reach(df, TraceNorm(lam), target)
        t_ours.append(setup + el)
    return {
        "problem": f"trace norm, School ({m} tasks)",
        "peer": "cvxpy CLARABEL",
        "ours": "FISTA to peer obj",
        "peer_s": float(np.median(t_cvx)),
        "ours_s": float(np.median(t_ours)),
        "peer_obj": p_star,
        "ours_obj": res.final_objective,
    }


def bench_l21_shared(name, X, Y, repeats, rel=1e-6):
    """Both solvers timed to reach ``p* (1 + rel)``, ``p*`` the best objective either finds."""
    n = X.shape[0]
    data, _ = as_multitask_data(X, Y)
    lam = 0.01 * L21Regressor().alpha_max(X, Y)
    df = Squared(data)
    pen = L21(lam)

    def sk_fit(tol):
        sk = MultiTaskLasso(alpha=lam, tol=tol, max_iter=1_000_000)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t0 = time.perf_counter()
            sk.fit(X, Y)
            el = time.perf_counter() - t0
        W = sk.coef_.T
        return el, df.value(W) + pen.value(W)

    ref = ProximalGradient(tol=1e-15, max_iter=100000, warn=False).solve(df, pen).final_objective
    p_star = min(ref, sk_fit(1e-12)[1])
    target = p_star + rel * abs(p_star)
    # scikit-learn: the loosest tol (duality-gap based) that reaches the target
    for tol in 10.0 ** -np.arange(2, 13):
        el, f = sk_fit(tol)
        if f <= target:
            break
    t_sk = [sk_fit(tol)[0] for _ in range(repeats)]
    sk_tol = tol

    def our_fit(tol):
        est = L21Regressor(alpha=lam, tol=tol, max_iter=1_000_000)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t0 = time.perf_counter()
            est.fit(X, Y)  # includes validation and the Gram matrix
            el = time.perf_counter() - t0
        W = est.coef_.T
        return el, df.value(W) + pen.value(W)

    our_fit(1e-3)  # compile the numba kernel once
    for tol in 10.0 ** -np.arange(2, 13):
        el, f_ours = our_fit(tol)
        if f_ours <= target:
            break
    t_ours = [our_fit(tol)[0] for _ in range(repeats)]
    return {
        "problem": f"l2,1, {name} (n={n}, d={X.shape[1]}, m={Y.shape[1]})",
        "peer": f"MultiTaskLasso tol={sk_tol:.0e}",
        "ours": f"L21Regressor tol={tol:.0e}",
        "peer_s": float(np.median(t_sk)),
        "ours_s": float(np.median(t_ours)),
        "peer_obj": sk_fit(sk_tol)[1],
        "ours_obj": f_ours,
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--school-tasks", type=int, default=50,
                   help="schools in the trace-norm problem (139 = all; cvxpy then needs "
                        "about 10 minutes)")
    a = p.parse_args(argv)
    rows = [bench_trace_school(a.repeats, a.school_tasks)]
    s = load_sarcos()
    rows.append(bench_l21_shared("SARCOS", s.X, s.Y, a.repeats))
    y = load_yeast()
    rows.append(bench_l21_shared("Yeast", y.X, y.Y.astype(float), a.repeats))
    print(f"{'problem':36s} {'peer':24s} {'ours':22s} {'peer s':>9s} {'ours s':>9s} "
          f"{'peer/ours':>9s}  objective (peer / ours)")
    for r in rows:
        ratio = r["peer_s"] / r["ours_s"]
        print(f"{r['problem']:36s} {r['peer']:24s} {r['ours']:22s} {r['peer_s']:9.4f} "
              f"{r['ours_s']:9.4f} {ratio:8.1f}x  {r['peer_obj']:.8g} / {r['ours_obj']:.8g}")
    return rows


if __name__ == "__main__":
    main()
