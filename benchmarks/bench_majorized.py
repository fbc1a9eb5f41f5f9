"""Which solver ``solver="auto"`` should take for the logistic and squared-hinge losses:
accelerated gradient or majorization-minimization with ADMM steps.

    OMP_NUM_THREADS=1 python benchmarks/bench_majorized.py [--repeats 3]

For ``TraceNormClassifier`` and ``L21Classifier`` with the logistic and the squared-hinge
loss, at ``alpha = 0.1 alpha_max`` and the default ``tol``, the CPU time (median of
``--repeats`` fits, one BLAS thread), iterations and objective of ``solver="fista"`` and
``solver="mm"`` (:class:`multitask.solvers.MajorizedADMM`), on classification problems from
raw and from standardized features: School (139 schools; a student is positive when the
exam score is above the school's median; the raw features with a bias column and no
intercept, as MALSAR's examples use them, and standardized with intercepts), Yeast (14
labels, shared design, raw and standardized) and two generated per-task problems with
i.i.d. features, one of them with feature scales spread over four decades. Printed per
problem: the conditioning measure of the loss's quadratic bound that ``"auto"`` compares with
:data:`multitask.solvers.majorized.ILL_CONDITIONED_BOUND`
(:func:`multitask.solvers.majorized.bound_condition_number`), both solvers' figures, the
ratio of accelerated gradient's time over majorization's (above 1: majorization is the
faster), and the relative objective difference (majorization minus accelerated gradient).
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from bench_scale import cpu_median
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from multitask import L21Classifier, TraceNormClassifier
from multitask.data import as_multitask_data
from multitask.losses import get_datafit
from multitask.solvers.majorized import ILL_CONDITIONED_BOUND, bound_condition_number


def problems():
    from multitask.datasets import load_school, load_yeast

    school = load_school(include_bias=True)
    ys = [np.where(y > np.median(y), 1, -1) for y in school.y]
    yield "School raw (bias column)", school.X, ys, False
    plain = load_school()
    stacked = np.vstack(plain.X)
    mu, sd = stacked.mean(axis=0), stacked.std(axis=0)
    sd[sd == 0] = 1.0
    yield "School standardized", [(X - mu) / sd for X in plain.X], ys, True
    yeast = load_yeast()
    Y = yeast.Y.astype(int) * 2 - 1
    yield "Yeast raw", yeast.X, Y, True
    yield "Yeast standardized", StandardScaler().fit_transform(yeast.X), Y, True
    rng = np.random.default_rng(0)
    n, d, m = 80, 20, 100
    B = rng.standard_normal((d, 3))
    for name, scales in (("generated i.i.d.", np.ones(d)),
                         ("generated, scales 1e-2..1e2", np.logspace(-2, 2, d))):
        Xs, out = [], []
        for _ in range(m):
            X = rng.standard_normal((n, d))
            s = X @ (B @ rng.standard_normal(3)) + 0.5 * rng.standard_normal(n)
            Xs.append(X * scales)
            out.append(np.where(s > np.median(s), 1, -1))
        yield f"{name} {n}x{d}x{m}", Xs, out, True


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args(argv)
    warnings.simplefilter("ignore")
    print(f"auto takes 'mm' from a bound conditioning of {ILL_CONDITIONED_BOUND:g}")
    print(f"{'problem':36s} {'loss':13s} {'model':6s} {'kappa':>8s} {'fista s':>8s} "
          f"{'it':>6s} {'mm s':>8s} {'it':>4s} {'fista/mm':>8s} {'obj. diff':>10s}")
    with threadpool_limits(1):
        for name, X, y, intercept in problems():
            for loss in ("logistic", "squared_hinge"):
                data, _ = as_multitask_data(X, y, classification=True)
                kappa = bound_condition_number(get_datafit(
                    loss, data, fit_intercept=intercept, center=True))
                for cls, label in ((TraceNormClassifier, "trace"), (L21Classifier, "l21")):
                    alpha = 0.1 * cls(loss=loss, fit_intercept=intercept).alpha_max(X, y)
                    res = {}
                    for solver in ("fista", "mm"):
                        est = cls(alpha=alpha, loss=loss, fit_intercept=intercept,
                                  solver=solver, max_iter=100_000)
                        res[solver] = cpu_median(lambda est=est, X=X, y=y: est.fit(X, y), a.repeats)
                    (tf, ef), (tm, em) = res["fista"], res["mm"]
                    of = ef.solver_result_.final_objective  # type: ignore[attr-defined]
                    om = em.solver_result_.final_objective  # type: ignore[attr-defined]
                    print(f"{name:36s} {loss:13s} {label:6s} {kappa:8.3g} {tf:8.3f} "
                          f"{ef.n_iter_:6d} {tm:8.3f} {em.n_iter_:4d} "  # type: ignore[attr-defined]
                          f"{tf / tm:8.2f} {(om - of) / abs(of):+10.1e}", flush=True)


if __name__ == "__main__":
    main()
