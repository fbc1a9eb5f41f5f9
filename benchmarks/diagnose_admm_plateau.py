"""Over-relaxed ADMM on the split models: where it circles, and what dropping the relaxation saves.

    OMP_NUM_THREADS=1 python benchmarks/diagnose_admm_plateau.py [--cv]

1. **One leave-one-out fold of the survey** of ``bench_cv_two_param.py`` (one shared design
   of 7 rows and 10 features, 190 tasks), ``SparseLowRankRegressor(alpha=0.0574,
   radius=7.34)``: ADMM's iterations and its final relaxation with the plateau rule
   (:data:`multitask.solvers.admm.PLATEAU_SPAN`) and without it (the span set past the
   budget), and the objective of both against a fit certified to ``1e-10``; first, without
   the rule, ADMM's relative residuals after 200 to 3,200 iterations (the same values from
   one to the next: the iteration circles).
2. With ``--cv``: the ADMM iterations summed over the default ``MultiTaskCV`` of
   ``SparseLowRankRegressor``, ``RobustMTLRegressor`` and ``RobustFeatureLearningRegressor``
   on the survey and on School, with and without the rule, with the chosen parameters and the
   held-out nMSE. Iteration counts do not depend on the machine's load.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_cv_two_param import school_problem, survey_problem  # noqa: E402

import multitask  # noqa: E402
from multitask.metrics import nmse  # noqa: E402
from multitask.solvers import admm  # noqa: E402
from multitask.solvers.admm import QuadraticADMM  # noqa: E402

OFF = 10**9  # a span no run reaches: the rule off
CV_MODELS = ("SparseLowRankRegressor", "RobustMTLRegressor", "RobustFeatureLearningRegressor")


def _with_span(span: int, fit):
    kept = admm.PLATEAU_SPAN
    admm.PLATEAU_SPAN = span
    try:
        return fit()
    finally:
        admm.PLATEAU_SPAN = kept


def fold() -> None:
    X, Y, _, _ = survey_problem()
    keep = np.arange(X.shape[0]) != 4
    X, Y = X[keep], Y[keep]
    params = {"alpha": 0.0574, "radius": 7.34}
    ref = multitask.SparseLowRankRegressor(
        **params, solver=QuadraticADMM(tol=1e-10, max_iter=50_000)).fit(X, Y)
    F_ref = float(np.ravel(ref.objective_)[-1])
    print("survey fold, sparse + low rank at", params)
    print("  without the rule, ADMM's relative residuals after k iterations (tol=1e-12):")
    for k in (200, 400, 800, 1600, 3200):
        run = _with_span(OFF, lambda k=k: multitask.SparseLowRankRegressor(
            **params, solver=QuadraticADMM(tol=1e-12, max_iter=k, warn=False)).fit(X, Y))
        info = run.solver_info_
        print(f"    k={k:5d}  primal {info['primal_residual']:.3e}  dual "
              f"{info['dual_residual']:.3e}  rho {info['rho']:.4g}")
    for label, span in (("rule", admm.PLATEAU_SPAN), ("no rule", OFF)):
        est = _with_span(span, lambda: multitask.SparseLowRankRegressor(**params).fit(X, Y))
        F = float(np.ravel(est.objective_)[-1])
        print(f"  {label:8s} iterations {est.n_iter_:6d}  relaxation "
              f"{est.solver_info_['relaxation']:.1f}  converged {est.converged_}  "
              f"(F - F*) / F* {(F - F_ref) / abs(F_ref):.1e}")


def cv() -> None:
    count = [0]
    solve = QuadraticADMM.solve

    def counting(self, *args, **kwargs):
        result = solve(self, *args, **kwargs)
        count[0] += result.n_iter
        return result

    QuadraticADMM.solve = counting
    try:
        for data_name, make in (("survey", survey_problem), ("school", school_problem)):
            Xtr, ytr, Xte, yte = make()
            for name in CV_MODELS:
                row = []
                for label, span in (("rule", admm.PLATEAU_SPAN), ("no rule", OFF)):
                    count[0] = 0
                    model = getattr(multitask, name)()
                    est = _with_span(span, lambda m=model, X=Xtr, y=ytr:
                                     multitask.MultiTaskCV(m).fit(X, y))
                    pred = est.predict(Xte)
                    err = (nmse(np.concatenate(yte), np.concatenate(pred))
                           if isinstance(yte, list) else nmse(yte, pred))
                    row.append(f"{label} {count[0]:6d} it, nMSE {err:.4f}")
                print(f"{data_name:7s} {name:32s} " + " | ".join(row))
    finally:
        QuadraticADMM.solve = solve


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cv", action="store_true", help="also the default CV's iterations")
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fold()
        if args.cv:
            cv()


if __name__ == "__main__":
    main()
