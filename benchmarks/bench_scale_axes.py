"""Scaling in rows (dense, 10^4 to 10^6) and in features (sparse X, 10^2 to 10^4), one machine.

    OMP_NUM_THREADS=1 python benchmarks/bench_scale_axes.py [--rows 1e4 1e5 1e6]
        [--features 1e2 1e3 1e4] [--repeats 2]

(``benchmarks/bench_scale.py`` scales the number of tasks; ``bench_distributed.py`` goes past
one machine.) Data: a shared design with ``m = 10`` tasks, ``Y = X B + noise`` with ``B`` of
rank 3 on the first 20 features:

* **rows**: dense standard normal ``X`` with ``n`` rows and ``d = 100`` features;
* **features**: sparse ``X`` (CSR, 20,000 rows, about 50 nonzeros per row at random columns,
  standard normal values) with ``d`` features.

Models: ``L21Regressor`` and ``TraceNormRegressor`` at ``alpha = 0.1 alpha_max``, ``tol=1e-6``.
The peer in the same run: scikit-learn's ``MultiTaskLasso`` (the same objective as
``L21Regressor``: ``||Y - X W - 1 b^T||_F^2 / (2 n) + alpha ||W||_{2,1}``) at ``tol=1e-8``
(its own duality-gap rule), on the dense array (it takes no sparse input: the features axis
densifies ``X`` for it, up to ``--peer-max-features``; rows up to ``--peer-max-rows``). Every
configuration runs in a fresh process (``--repeats`` times, one BLAS thread, CPU time,
medians) so that its peak resident memory is its own. Printed: fit CPU time, iterations,
the solver, the peak memory of the process above its footprint before the data were made
over the bytes of the data, the peer's time over ours with both objectives' relative
difference, and the log-log slope of our fit time along each axis.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings

import numpy as np
from bench_scale import loglog_slope, peak_mb, rss_mb

N_TASKS, RANK, SUPPORT = 10, 3, 20
DENSE_FEATURES = 100
SPARSE_ROWS, NNZ_PER_ROW = 20_000, 50


def problem(axis: str, size: int, seed: int = 0):
    """``(X, Y, bytes of the data)`` of one configuration."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    if axis == "rows":
        n, d = size, DENSE_FEATURES
        X = rng.standard_normal((n, d))
        nbytes = X.nbytes
    else:
        n, d = SPARSE_ROWS, size
        nnz_row = min(NNZ_PER_ROW, d)
        cols = np.concatenate([rng.choice(d, nnz_row, replace=False) for _ in range(n)])
        X = sp.csr_matrix((rng.standard_normal(n * nnz_row), cols,
                           np.arange(0, n * nnz_row + 1, nnz_row)), shape=(n, d))
        X.sort_indices()
        nbytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    B = np.zeros((d, N_TASKS))
    B[:SUPPORT] = rng.standard_normal((SUPPORT, RANK)) @ rng.standard_normal((RANK, N_TASKS))
    Y = np.asarray(X @ B) + 0.5 * rng.standard_normal((n, N_TASKS))
    return X, Y, nbytes + Y.nbytes


def l21_objective(X, Y, W, b, alpha) -> float:
    R = Y - np.asarray(X @ W) - b[None, :]
    return float((R * R).sum() / (2 * X.shape[0]) + alpha * np.linalg.norm(W, axis=1).sum())


def one(axis: str, size: int, model: str, seed: int) -> dict:
    """One configuration in this process: the fit first (for the peak memory)."""
    from threadpoolctl import threadpool_limits

    from multitask import L21Regressor, TraceNormRegressor, compiled

    compiled.set_up()  # the compiled kernels are what scales; their start-up is not
    base = rss_mb()
    X, Y, nbytes = problem(axis, size, seed)
    out: dict = {"axis": axis, "size": size, "model": model, "data_mb": nbytes / 2**20}
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if model == "sklearn":
            from sklearn.linear_model import MultiTaskLasso

            Xd = X.toarray() if hasattr(X, "toarray") else X
            alpha = 0.1 * L21Regressor().alpha_max(X, Y)
            est = MultiTaskLasso(alpha=alpha, tol=1e-8, max_iter=100_000)
            t = time.process_time()
            est.fit(Xd, Y)
            out["fit_s"] = time.process_time() - t
            out["n_iter"] = int(est.n_iter_)
            out["objective"] = l21_objective(X, Y, est.coef_.T, est.intercept_, alpha)
            out["solver"] = "sklearn CD"
        else:
            cls = L21Regressor if model == "l21" else TraceNormRegressor
            alpha = 0.1 * cls().alpha_max(X, Y)
            est = cls(alpha=alpha, tol=1e-6)
            t = time.process_time()
            est.fit(X, Y)
            out["fit_s"] = time.process_time() - t
            out["n_iter"] = int(est.n_iter_)
            out["solver"] = type(est.solver_).__name__
            out["converged"] = bool(est.converged_)
            if model == "l21":
                out["objective"] = l21_objective(X, Y, est.coef_.T, est.intercept_, alpha)
        out["peak_over_data"] = (peak_mb() - base) / (nbytes / 2**20)
    return out


def run_child(axis, size, model, seed) -> dict:
    args = [sys.executable, __file__, "--one", axis, str(size), model, str(seed)]
    res = subprocess.run(args, check=True, capture_output=True, text=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=float, nargs="*", default=[1e4, 3e4, 1e5, 3e5, 1e6])
    ap.add_argument("--features", type=float, nargs="*", default=[1e2, 3e2, 1e3, 3e3, 1e4])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--peer-max-rows", type=float, default=3e5)
    ap.add_argument("--peer-max-features", type=float, default=1e3)
    ap.add_argument("--one", nargs=4, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.one:
        axis, size, model, seed = a.one
        print(json.dumps(one(axis, int(size), model, int(seed))))
        return {}
    print(f"load average before: {os.getloadavg()}; "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}")
    results: dict = {}
    for axis, sizes, peer_max in (("rows", a.rows, a.peer_max_rows),
                                  ("features", a.features, a.peer_max_features)):
        if not sizes:
            continue
        print(f"\n{axis}: " + ("dense X, d = 100" if axis == "rows" else
                               f"sparse X, n = {SPARSE_ROWS}, {NNZ_PER_ROW} nonzeros per row")
              + f", m = {N_TASKS} tasks; CPU s, medians of {a.repeats} fresh processes")
        print(f"{axis:>9s} {'model':>7s} {'solver':>24s} {'fit s':>9s} {'iter':>6s} "
              f"{'peak/data':>9s} {'sklearn/ours':>12s} {'obj. rel. diff':>14s}")
        for size in (int(s) for s in sizes):
            for model in ("l21", "trace", "sklearn"):
                if model == "sklearn" and size > peer_max:
                    continue
                runs = [run_child(axis, size, model, seed) for seed in range(a.repeats)]
                med = {k: float(np.median([r[k] for r in runs]))
                       for k in ("fit_s", "n_iter", "peak_over_data")}
                med["solver"] = runs[0]["solver"]
                med["objective"] = runs[0].get("objective")  # seed 0 (same data as ours)
                results[(axis, size, model)] = med
                ratio = diff = ""
                if model == "sklearn":
                    ours = results[(axis, size, "l21")]
                    ratio = f"{med['fit_s'] / ours['fit_s']:.2f}"
                    diff = f"{(med['objective'] - ours['objective']) / ours['objective']:+.1e}"
                print(f"{size:9d} {model:>7s} {med['solver']:>24s} {med['fit_s']:9.3f} "
                      f"{med['n_iter']:6.0f} {med['peak_over_data']:9.2f} {ratio:>12s} "
                      f"{diff:>14s}", flush=True)
        for model in ("l21", "trace"):
            xs = [int(s) for s in sizes]
            ts = [results[(axis, x, model)]["fit_s"] for x in xs]
            if len(xs) > 1:
                print(f"  {model}: log-log slope of the fit time in {axis} "
                      f"{loglog_slope(xs, ts):.3f} (least squares), "
                      f"{np.log(ts[-1] / ts[0]) / np.log(xs[-1] / xs[0]):.3f} (ends)")
    print(f"\nload average after: {os.getloadavg()}")
    return results


if __name__ == "__main__":
    main()
