"""Would Anderson acceleration cut ADMM's iterations on raw School? (issue 15's SCS targets).

    OMP_NUM_THREADS=1 python benchmarks/diagnose_admm_anderson.py [--memory 5] [--tol 1e-4]

The School trace-norm problems of ``bench_peers.py`` (20 and 139 schools, standardized and
MALSAR's raw setting). For each, the iterations until the library's optimality measure is at
most ``--tol`` (checked every 5 iterations) of:

* the library's :class:`multitask.solvers.QuadraticADMM` (over-relaxed, spectral adaptive
  penalty parameter), ``check_every=5``;
* the same ADMM with its initial penalty parameter kept fixed;
* that fixed-parameter ADMM with type-II Anderson acceleration of the map
  ``(V, U) -> (V+, U+)`` (memory ``--memory``; the accelerated point is taken only when its
  fixed-point residual is below the plain step's, which costs one more ADMM step).

Anderson acceleration: Walker & Ni, "Anderson acceleration for fixed-point iterations", SIAM
J. Numer. Anal. 2011; on ADMM: Zhang, O'Donoghue & Boyd, "Globally convergent type-I Anderson
acceleration for nonsmooth fixed-point iterations", SIAM J. Optim. 2020.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from bench_peers import school_problem

from multitask.data import as_multitask_data
from multitask.losses import Squared
from multitask.penalties import TraceNorm
from multitask.solvers import QuadraticADMM
from multitask.solvers.admm import EigenSystem
from multitask.solvers.base import lipschitz_bound, optimality


def fixed_rho_admm(df, pen, eig, tol, memory, max_iter, relaxation=1.6):
    """Iterations of fixed-parameter ADMM (Anderson-accelerated when ``memory > 0``) until
    the optimality measure is at most ``tol``, and the ADMM steps they cost."""
    d, m = eig.QtC.shape
    rho = eig.positive_median()
    L = lipschitz_bound(df, pen)
    V = np.zeros((d, m))
    U = -df.value_and_grad(V)[1] / rho

    def step(V, U):
        W = eig.solve(V - U, rho)
        Wr = relaxation * W + (1.0 - relaxation) * V
        Vn = pen.prox(Wr + U, 1.0 / rho)
        return Vn, U + Wr - Vn

    xs, fs = [], []
    steps = 0
    for k in range(1, max_iter + 1):
        Vn, Un = step(V, U)
        steps += 1
        if memory:
            x = np.concatenate([V.ravel(), U.ravel()])
            f = np.concatenate([Vn.ravel(), Un.ravel()]) - x
            xs.append(x)
            fs.append(f)
            del xs[:-(memory + 1)], fs[:-(memory + 1)]
            if len(xs) >= 2:
                dF = np.diff(np.array(fs), axis=0).T
                dX = np.diff(np.array(xs), axis=0).T
                gamma = np.linalg.lstsq(dF, f, rcond=None)[0]
                xa = x + f - (dX + dF) @ gamma
                Va, Ua = xa[: d * m].reshape(d, m), xa[d * m:].reshape(d, m)
                Vb, Ub = step(Va, Ua)
                steps += 1
                fa = np.concatenate([(Vb - Va).ravel(), (Ub - Ua).ravel()])
                if np.linalg.norm(fa) < np.linalg.norm(f):
                    Vn, Un = Va, Ua
        V, U = Vn, Un
        if k % 5 == 0 and optimality(df, pen, V, None, L) <= tol:
            return k, steps
    return max_iter, steps


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--memory", type=int, default=5)
    p.add_argument("--tol", type=float, default=1e-4)
    p.add_argument("--max-iter", type=int, default=3000)
    a = p.parse_args()
    warnings.simplefilter("ignore")
    print(f"tol {a.tol:g}, Anderson memory {a.memory}; iterations (ADMM steps)")
    for m in (20, 139):
        for kind in ("standardized", "raw"):
            Xs, ys, alpha, intercept = school_problem(m, kind)
            data, _ = as_multitask_data(Xs, ys)
            df = Squared(data, fit_intercept=intercept)
            pen = TraceNorm(alpha)
            eig = EigenSystem(None, df.quadratic_form()[1], eigen=df.quadratic_eigen())
            lib = QuadraticADMM(tol=a.tol, check_every=5, max_iter=a.max_iter).solve(df, pen)
            plain = fixed_rho_admm(df, pen, eig, a.tol, 0, a.max_iter)
            anderson = fixed_rho_admm(df, pen, eig, a.tol, a.memory, a.max_iter)
            print(f"School {m} {kind}: library ADMM {lib.n_iter}; fixed rho {plain[0]}; "
                  f"fixed rho + Anderson {anderson[0]} ({anderson[1]} steps)")


if __name__ == "__main__":
    main()
