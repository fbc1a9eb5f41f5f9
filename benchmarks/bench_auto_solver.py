"""Which solver ``solver="auto"`` should take for the squared loss: accelerated gradient or ADMM.

    OMP_NUM_THREADS=1 python benchmarks/bench_auto_solver.py [--repeats 3]

For the models that list ADMM (``TraceNormRegressor``, ``L21Regressor``,
``IndependentLassoRegressor``) at ``alpha = 0.1 alpha_max`` and the default ``tol``, the CPU
time (median of ``--repeats`` fits, one BLAS thread), iterations and optimality measure of
``solver="auto"``, ``"fista"`` and ``"admm"``, on standardized problems: School (139 and the
first 20 schools, the per-task designs of ``benchmarks/bench_peers.py``), SARCOS and Yeast
(shared designs, standardized; Yeast's labels as -1/+1 targets) and three generated per-task
problems with i.i.d. standard normal features. The conditioning measure that ``"auto"``
compares with :data:`multitask.solvers.admm.ILL_CONDITIONED`
(:func:`multitask.solvers.admm.condition_number`) is printed per problem, and the ratio of
accelerated gradient's time over ADMM's: where it is above 1, ADMM is the faster.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(Path(__file__).parent))

from multitask import IndependentLassoRegressor, L21Regressor, TraceNormRegressor  # noqa: E402
from multitask.data import as_multitask_data  # noqa: E402
from multitask.losses import Squared  # noqa: E402
from multitask.solvers.admm import ILL_CONDITIONED, condition_number  # noqa: E402


def problems():
    from bench_peers import school_problem

    from multitask.datasets import load_sarcos, load_yeast

    Xs, ys, _, _ = school_problem(139, "std")
    yield "School 139", Xs, ys
    yield "School 20", Xs[:20], ys[:20]
    s = load_sarcos()
    yield "SARCOS", StandardScaler().fit_transform(s.X), s.Y.astype(float)
    yv = load_yeast()
    yield "Yeast", StandardScaler().fit_transform(yv.X), yv.Y.astype(float) * 2 - 1
    rng = np.random.default_rng(0)
    for n, d, m in ((100, 20, 500), (60, 30, 2000), (200, 50, 200)):
        B = rng.standard_normal((d, 3))
        Xs = [rng.standard_normal((n, d)) for _ in range(m)]
        ys = [X @ (B @ rng.standard_normal(3)) + rng.standard_normal(n) for X in Xs]
        yield f"generated {n}x{d}x{m}", Xs, ys


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args(argv)
    warnings.simplefilter("ignore")
    print(f"ILL_CONDITIONED = {ILL_CONDITIONED:g}; CPU ms, medians of {a.repeats}")
    for name, X, Y in problems():
        kappa = condition_number(Squared(as_multitask_data(X, Y)[0]))
        for cls in (TraceNormRegressor, L21Regressor, IndependentLassoRegressor):
            alpha = 0.1 * cls().alpha_max(X, Y)
            times, cells = {}, []
            for solver in ("auto", "fista", "admm"):
                def fit(solver=solver, cls=cls, alpha=alpha, X=X, Y=Y):
                    return cls(alpha=alpha, solver=solver).fit(X, Y)

                est = fit()
                ts = []
                for _ in range(a.repeats):
                    t0 = time.process_time()
                    est = fit()
                    ts.append(time.process_time() - t0)
                times[solver] = float(np.median(ts))
                cells.append(f"{solver}={type(est.solver_).__name__}: "
                             f"{1e3 * times[solver]:.1f} ms, {est.n_iter_} it, "
                             f"opt {est.optimality_:.0e}")
            print(f"{name:22s} kappa {kappa:5.1f} {cls.__name__:25s} fista/admm "
                  f"{times['fista'] / times['admm']:4.2f} | " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
