"""The support steps of block coordinate descent (:mod:`multitask.solvers.lasso_support`) on
the independent lasso, against plain coordinate descent, coordinate descent task by task
(:mod:`multitask.solvers.task_cd`) and scikit-learn's ``Lasso``.

    OMP_NUM_THREADS=1 python benchmarks/bench_lasso_support.py [--problems survey school ...]
        [--fractions 0.5 0.1 0.01 0.001] [--repeats 3]

Problems: ``survey`` (the shared design of ``bench_cv_two_param.py``: 8 rows, 10 features,
190 targets), ``school`` (School, the first official split's training rows: 139 tasks, 27
features) and generated per-task designs ``TxD`` (``T`` tasks of 40 rows, ``D`` standard
normal features, 10 active). Strengths: fractions of ``alpha_max`` (the smallest ``alpha``
with a zero solution). Per point: the CPU seconds (``time.process_time``, the least of
``--repeats`` fits after one untimed fit) of ``IndependentLassoRegressor`` fitted by
``BlockCoordinateDescent`` with and without ``support_steps`` and by
``TaskCoordinateDescent`` to the default ``tol`` (a certified relative duality gap of 1e-4;
block coordinate descent needs tasks of at least as many rows as features, the other
columns show ``-`` below that), and of scikit-learn's ``Lasso`` fitted task by task
on the centred data (``tol=1e-4``, its own criterion: the duality gap over ``||y||^2``, so the
times compare two stopping rules at about the same accuracy); the epochs; the ratios
``steps / plain``, ``steps / scikit-learn`` and ``task / scikit-learn``; and the largest
difference of the objectives of the block and task-by-task fits from the first, relative.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.linear_model import Lasso  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_cv_two_param as cv_problems  # noqa: E402

from multitask import IndependentLassoRegressor  # noqa: E402
from multitask.model_selection import default_param_grid  # noqa: E402
from multitask.solvers import BlockCoordinateDescent, TaskCoordinateDescent  # noqa: E402


def generated(shape: str, seed: int = 0):
    """``T`` tasks of 40 rows and ``D`` features (10 of them active), lists of arrays."""
    m, d = (int(v) for v in shape.split("x"))
    rng = np.random.default_rng(seed)
    Xs = [rng.standard_normal((40, d)) for _ in range(m)]
    W = np.zeros((d, m))
    W[:10] = rng.standard_normal((min(10, d), m))
    ys = [X @ W[:, t] + 0.5 * rng.standard_normal(40) for t, X in enumerate(Xs)]
    return Xs, ys


def problem(name: str):
    if name == "survey":
        X, Y, _, _ = cv_problems.survey_problem()
        return X, Y
    if name == "school":
        return cv_problems.school_problem()[:2]
    return generated(name)


def _tasks(X, y):
    """The tasks' centred ``(X_t, y_t)``."""
    if isinstance(X, np.ndarray) and isinstance(y, np.ndarray) and y.ndim == 2:
        Xc = X - X.mean(axis=0)
        return [(Xc, y[:, t] - y[:, t].mean()) for t in range(y.shape[1])]
    return [(Xt - Xt.mean(axis=0), yt - yt.mean()) for Xt, yt in zip(X, y, strict=True)]


def _cpu(fit, repeats: int):
    fit()
    best = np.inf
    out = None
    for _ in range(repeats):
        t = time.process_time()
        out = fit()
        best = min(best, time.process_time() - t)
    return best, out


def run_point(X, y, tasks, alpha: float, repeats: int) -> dict:
    def ours(solver):
        def fit():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return IndependentLassoRegressor(alpha=alpha, solver=solver()).fit(X, y)
        return fit

    def peer():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return [Lasso(alpha=alpha, fit_intercept=False, tol=1e-4).fit(Xt, yt)
                    for Xt, yt in tasks]

    out: dict = {}
    models = {}
    for key, solver in (("steps", lambda: BlockCoordinateDescent(support_steps=True)),
                        ("plain", lambda: BlockCoordinateDescent(support_steps=False)),
                        ("task", TaskCoordinateDescent)):
        try:
            out[key], models[key] = _cpu(ours(solver), repeats)
        except ValueError:  # block coordinate descent needs Gram matrices
            if key == "task":
                raise
            out[key], models[key] = np.nan, None
    out["sklearn"], _ = _cpu(peer, repeats)
    fitted = [m for m in models.values() if m is not None]
    objs = [float(np.ravel(m.objective_)[-1]) for m in fitted]
    out["objdiff"] = max(abs(o - objs[0]) for o in objs) / max(abs(objs[0]), 1e-300)
    out["ep"] = {k: (int(m.n_iter_) if m is not None else -1) for k, m in models.items()}
    out["conv"] = tuple(bool(m.converged_) for m in fitted)
    return out


def _s(value: float) -> str:
    return "        -" if not np.isfinite(value) else f"{value:9.4f}"


def _r(value: float) -> str:
    return "      -" if not np.isfinite(value) else f"{value:7.2f}"


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="*",
                        default=["survey", "school", "10x40", "100x40", "1000x10", "10x300",
                                 "100x300"])
    parser.add_argument("--fractions", nargs="*", type=float, default=[0.5, 0.1, 0.01, 0.001])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print(f"{'problem':8s} {'a/amax':>7s} {'steps s':>9s} {'plain s':>9s} {'task s':>9s} "
          f"{'sklearn s':>9s} {'ep steps':>8s} {'ep plain':>8s} {'ep task':>8s} "
          f"{'st/plain':>8s} {'st/skl':>7s} {'task/skl':>8s} {'obj diff':>9s}")
    rows = []
    for name in args.problems:
        X, y = problem(name)
        tasks = _tasks(X, y)
        top = float(default_param_grid(IndependentLassoRegressor(), X, y)["alpha"][0])
        for frac in args.fractions:
            r = run_point(X, y, tasks, frac * top, args.repeats)
            r.update(problem=name, fraction=frac)
            rows.append(r)
            print(f"{name:8s} {frac:7.3g} {_s(r['steps'])} {_s(r['plain'])} {_s(r['task'])} "
                  f"{_s(r['sklearn'])} {r['ep']['steps']:8d} {r['ep']['plain']:8d} "
                  f"{r['ep']['task']:8d} {_r(r['steps'] / r['plain'])} "
                  f"{_r(r['steps'] / r['sklearn'])}  {_r(r['task'] / r['sklearn'])} "
                  f"{r['objdiff']:9.1e}" + ("" if all(r["conv"]) else f"  converged={r['conv']}"),
                  flush=True)
    for key, label in (("steps", "steps / plain"), ("task", "task / scikit-learn")):
        ratios = np.array([r[key] / (r["plain"] if key == "steps" else r["sklearn"])
                           for r in rows])
        ratios = ratios[np.isfinite(ratios)]
        if ratios.size:
            print(f"{label}: median {np.median(ratios):.2f}, max {ratios.max():.2f}, "
                  f"min {ratios.min():.2f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return rows


if __name__ == "__main__":
    main()
