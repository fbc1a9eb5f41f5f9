"""The capped l1 model's single fits with two solvers for its stages, side by side.

    OMP_NUM_THREADS=1 python benchmarks/diagnose_capped_l1_stage_solvers.py
        [--inner bcd task_cd] [--problems survey school 100x40]

For each problem, ``CappedL1Regressor`` at a grid of the default grid's points (``alpha`` at
``alpha_max`` times 0.5, 0.1, 0.01 and 0.001; ``theta`` at the top of its default span, a tenth
and a hundredth of it) is fitted with :class:`~multitask.solvers.multistage.Multistage` and each
``--inner`` solver for its stages (``max_iter=10000``, ``tol=1e-4``). Printed per point: the
first solver's objective ``F`` (the capped l1 objective at its coefficients, the loss with the
best intercepts), its ``converged_`` and CPU seconds, then for each other solver its ``F``
relative to the first's, ``converged_`` and CPU; ``<<<`` marks a point where the other solver
ends more than ``1e-4`` higher or unconverged where the first converged. A solver that does not
apply to the problem (block coordinate descent needs the Gram matrices, which a design of
more features than :data:`multitask.losses.grams` keeps does not have) is shown as refused.

The problems: ``survey`` and ``school`` of ``benchmarks/bench_cv_two_param.py`` (training
rows), and ``TxD`` the generated tasks of ``benchmarks/bench_auto_choice.py`` (``T`` tasks of
40 rows, ``D`` features).

This is the check behind docs/scale.md's "Also measured and not kept: ``task_cd`` for the
capped l1 model's stages": the stages' free rows (the capped features, unpenalized) are left
to coordinate descent within each task, which does not pin them down where a task has fewer
independent rows than free features.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

import multitask  # noqa: E402
from multitask.solvers import Multistage  # noqa: E402
from multitask.solvers.base import make_solver  # noqa: E402

ALPHA_FRACTIONS = (0.5, 0.1, 0.01, 0.001)
THETA_FRACTIONS = (1.0, 0.1, 0.01)


def problem(name: str):
    """``(X, y, task)`` of a named problem (module docstring)."""
    import bench_auto_choice
    import bench_cv_two_param

    if name == "survey":
        X, y, _, _ = bench_cv_two_param.survey_problem(0)
        return X, y, None
    if name == "school":
        X, y, _, _ = bench_cv_two_param.school_problem()
        return X, y, None
    m, d = (int(v) for v in name.split("x"))
    return bench_auto_choice.make_data(m, d, False, False)


def objective(est, X, y, task) -> float:
    """The capped l1 objective at ``est``'s coefficients."""
    ref = multitask.CappedL1Regressor(alpha=est.alpha, theta=est.theta)
    ref._validate_params()
    data, _, _ = ref._convert(X, y, task)
    datafit = ref._make_datafit(data)
    W = np.asarray(est.coef_).T
    return float(datafit.value(W) + ref._make_penalty(datafit).value(W))


def fit(inner: str, alpha: float, theta: float, X, y, task):
    solver = Multistage(inner=make_solver(inner, max_iter=10000, tol=1e-4))
    est = multitask.CappedL1Regressor(alpha=alpha, theta=theta, solver=solver)
    kwargs = {} if task is None else {"task": task}
    started = time.process_time()
    try:
        est.fit(X, y, **kwargs)
    except ValueError as exc:
        return None, str(exc)
    cpu = time.process_time() - started
    return (objective(est, X, y, task), bool(est.converged_), cpu), ""


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inner", nargs="+", default=["bcd", "task_cd"])
    parser.add_argument("--problems", nargs="+",
                        default=["survey", "school", "100x40"])
    args = parser.parse_args(argv)
    rows = []
    warnings.simplefilter("ignore")
    for name in args.problems:
        X, y, task = problem(name)
        base = multitask.CappedL1Regressor()
        kwargs = {} if task is None else {"task": task}
        top_alpha = base.alpha_max(X, y, **kwargs)
        base._validate_params()
        data, _, _ = base._convert(X, y, task)
        datafit = base._make_datafit(data)
        top_theta = float(base._grid_tops(datafit, base._make_penalty(datafit))["theta"].first)
        for fa in ALPHA_FRACTIONS:
            for ft in THETA_FRACTIONS:
                fits = {s: fit(s, fa * top_alpha, ft * top_theta, X, y, task)
                        for s in args.inner}
                first = fits[args.inner[0]][0]
                line = [f"{name:8s} a={fa:<6} theta={ft:<5}"]
                if first is None:
                    line.append(f"{args.inner[0]} refused")
                else:
                    line.append(f"{args.inner[0]} F={first[0]:.6g} conv={first[1]} "
                                f"cpu={first[2]:.3f}")
                flag = ""
                for s in args.inner[1:]:
                    other = fits[s][0]
                    if other is None:
                        line.append(f"| {s} refused")
                        continue
                    if first is None:
                        line.append(f"| {s} F={other[0]:.6g} conv={other[1]} "
                                    f"cpu={other[2]:.3f}")
                        continue
                    rel = (other[0] - first[0]) / max(abs(first[0]), np.finfo(float).tiny)
                    if rel > 1e-4 or (first[1] and not other[1]):
                        flag = "  <<<"
                    line.append(f"| {s} F rel {rel:+.1e} conv={other[1]} cpu={other[2]:.3f}")
                print(" ".join(line) + flag, flush=True)
                rows.append({"problem": name, "alpha_fraction": fa, "theta_fraction": ft,
                             "fits": {s: fits[s][0] for s in args.inner}})
    return rows


if __name__ == "__main__":
    import sys

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
