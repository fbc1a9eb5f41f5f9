"""Regularization paths with warm starts and sequential screening: a path against one fit.

    OMP_NUM_THREADS=1 python benchmarks/bench_path.py [--only NAME ...] [--ratio 1e-2]
        [--n-alphas 10] [--intercept] [--tol 1e-4] [--max-iter 5000]

On the designs of ``benchmarks/bench_high_dim.py`` (features far above rows), the model
``L21Regressor(fit_intercept=False)`` (scikit-learn's ``MultiTaskLasso``; ``--intercept``
fits intercepts), its default grid (``--n-alphas`` values from ``alpha_max`` down to
``--ratio * alpha_max``) and default ``tol``: the CPU seconds of

* **one fit** at the smallest value of the grid, from zero (after an untimed fit at
  ``alpha_max / 2`` in the process: compilation apart);
* **the path**: the loop of :func:`multitask.model_selection.regularization_path` over the
  whole grid (its ``fit_path``, which also hands each fit's record here), each fit
  warm-started from the previous one, whose first certificate screens rows with the
  previous solution (sequential gap-safe screening, :mod:`multitask.solvers.working_set`).

Printed per design: both times, their ratio (target: at most 3), and per grid value the
solver's iterations, the rows screened, the final working set, whether it converged and its
certified gap. The default ``--ratio`` is glmnet's for more features than rows (``0.01``);
``--ratio 1e-3`` is the library's default grid (on the sparse 200,000-feature design its
smallest value has some 16,000 nonzero rows for 5,000 rows of data, and one fit does not
reach ``tol=1e-4`` within the default budget).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

from bench_high_dim import DESIGNS, design  # noqa: E402
from bench_peers import cpu_time  # noqa: E402


def bench(name: str, ratio: float, n_alphas: int, intercept: bool, tol: float,
          max_iter: int) -> float:
    from multitask import L21Regressor, compiled
    from multitask.model_selection._path import fit_path

    spec = DESIGNS[name]
    X, Y = design(spec)
    est = L21Regressor(fit_intercept=intercept, tol=tol, max_iter=max_iter)
    grid = est.default_grid(X, Y, n_alphas=n_alphas, alpha_ratio=ratio)["alpha"]
    print(f"\n{name}: {spec[0]} x {spec[1]} x {spec[2]}, {n_alphas} values of alpha from "
          f"{grid[0]:.4g} down to {ratio:g} alpha_max, fit_intercept={intercept}, tol={tol:g}")
    compiled.set_up()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.set_params(alpha=grid[0] / 2).fit(X, Y)  # the first fit in the process
        t_one, one = cpu_time(lambda: L21Regressor(
            alpha=grid[-1], fit_intercept=intercept, tol=tol, max_iter=max_iter).fit(X, Y))
        infos = []

        def keep(e, point):
            infos.append((e.n_iter_, e.solver_info_.get("screened", 0),
                          e.solver_info_.get("working_set", -1), e.converged_,
                          e.optimality_))

        t_path, _ = cpu_time(lambda: fit_path(est, X, Y, [{"alpha": a} for a in grid],
                                              on_fit=keep))
    print(f"  one fit at the smallest alpha: {t_one:8.2f} s ({type(one.solver_).__name__}, "
          f"{one.n_iter_} iterations, converged={one.converged_}, gap "
          f"{one.optimality_:.1e}, working set {one.solver_info_.get('working_set')})")
    print(f"  the path of {len(grid)} values:     {t_path:8.2f} s   path / one fit = "
          f"{t_path / t_one:.2f} (target <= 3: {'holds' if t_path <= 3 * t_one else 'MISSED'})")
    print(f"  {'alpha/alpha_max':>15s} {'iterations':>10s} {'screened':>9s} {'working set':>11s} "
          f"{'converged':>9s} {'gap':>8s}")
    for a, (it, scr, ws, conv, gap) in zip(grid, infos, strict=True):
        print(f"  {a / grid[0]:15.3g} {it:10d} {scr:9d} {ws:11d} {conv!s:>9s} {gap:8.1e}")
    return t_path / t_one


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", nargs="+", choices=sorted(DESIGNS), default=None)
    p.add_argument("--ratio", type=float, default=1e-2)
    p.add_argument("--n-alphas", type=int, default=10)
    p.add_argument("--intercept", action="store_true")
    p.add_argument("--tol", type=float, default=1e-4)
    p.add_argument("--max-iter", type=int, default=5000)
    a = p.parse_args(argv)
    from threadpoolctl import threadpool_limits

    limits = threadpool_limits(1)
    print(f"load average before: {os.getloadavg()}; python {sys.version.split()[0]}")
    t0 = time.process_time()
    ratios = {name: bench(name, a.ratio, a.n_alphas, a.intercept, a.tol, a.max_iter)
              for name in a.only or DESIGNS}
    print("\npath / one fit at its smallest alpha: " + ", ".join(
        f"{k} {v:.2f}" for k, v in ratios.items()) + f" ({time.process_time() - t0:.0f} s in all)")
    print(f"load average after: {os.getloadavg()}")
    del limits


if __name__ == "__main__":
    main()
