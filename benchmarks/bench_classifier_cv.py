"""Cross-validation of small multi-task classifiers against scikit-learn's per-task CV.

    python benchmarks/bench_classifier_cv.py [--repeats 3] [--seeds 0 1 2] [--composite]

A generated binary problem shaped like a real small one (29 tasks, 90 to 114 training rows per
task, 9 features, 3 to 10 positives per task): per task ``X_t = Z_t (I + 0.3 E_t)`` (standard
normal ``Z_t`` and ``E_t``: correlated features), scores ``X_t (w_0 + 0.5 e_t) + logistic
noise`` around a common weight vector ``w_0``, and the rows with the ``k_t`` largest scores
positive (``k_t`` uniform in 3..10). Timed, in CPU seconds of one process with one BLAS thread
(the median of ``--repeats``, after one untimed run of each):

* **ours**: ``MultiTaskCV(L21Classifier())`` with its defaults (10 values of ``alpha`` from
  ``alpha_max`` down to ``1e-3 alpha_max``, stratified 5-fold CV within tasks, warm starts
  along the path, refit on all rows);
* **peer**: scikit-learn's ``LogisticRegressionCV(Cs=10, cv=3)`` fitted on each task apart
  (its defaults otherwise: L2 penalty, lbfgs, refit).

The ratio ours / peer is printed for every seed (target: at most 3). ``--composite`` adds the
default ``MultiTaskCV`` of the composite classifiers (dirty model, sparse + low rank, robust
MTL, robust feature learning, fused sparse group lasso, temporal group lasso, or those named by
``--models``) on the first seed, one run each after an untimed fit on three tasks (they take
seconds to minutes), with the ratio to the peer's CPU on the same seed (target: at most 3).

``--rule`` prints the measurements behind ``solver="auto"``'s choice of proximal Newton
(:data:`multitask.solvers.newton.NEWTON_MAX_FEATURES`): ``L21Classifier`` (logistic and
squared hinge) at ``alpha = 0.1`` and ``0.01 alpha_max``, default ``tol``, fitted by
``"newton"``, ``"fista"`` and ``"mm"`` (CPU s, median of ``--repeats``) on this problem, the
School and Yeast problems of ``benchmarks/bench_majorized.py`` and generated per-task problems
(100 tasks of 80 rows) with 16 to 128 i.i.d. features.

The thread variables are set before numpy loads (``threadpoolctl`` alone does not reach the
BLAS that scipy's L-BFGS-B calls: the peer then ran 10 times slower, on two threads).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from bench_peers import cpu_time  # noqa: E402

N_TASKS, N_FEATURES = 29, 9
ROWS = (90, 115)  # per task, high end excluded
POSITIVES = (3, 11)
#: The composite classifiers of ``--composite``: the split models ``W = P + Q`` and the
#: penalties made of several norms (the models of ``bench_certified.py --sweep``).
COMPOSITE = ("DirtyModelClassifier", "SparseLowRankClassifier", "RobustMTLClassifier",
             "RobustFeatureLearningClassifier", "FusedSparseGroupLassoClassifier",
             "TemporalGroupLassoClassifier")
#: The target of ``--composite``: each classifier's CV at most this many times the peer's CPU.
COMPOSITE_TARGET = 3.0


def problem(seed: int = 0):
    """``(Xs, ys)``: per-task designs and 0/1 labels (module docstring)."""
    rng = np.random.default_rng(seed)
    d = N_FEATURES
    w0 = rng.standard_normal(d)
    Xs, ys = [], []
    for _ in range(N_TASKS):
        n = int(rng.integers(*ROWS))
        X = rng.standard_normal((n, d)) @ (np.eye(d) + 0.3 * rng.standard_normal((d, d)))
        z = X @ (w0 + 0.5 * rng.standard_normal(d)) + rng.logistic(size=n)
        k = int(rng.integers(*POSITIVES))
        y = np.zeros(n, dtype=int)
        y[np.argsort(-z)[:k]] = 1
        Xs.append(X)
        ys.append(y)
    return Xs, ys


def peer(Xs, ys):
    from sklearn.linear_model import LogisticRegressionCV

    return [LogisticRegressionCV(Cs=10, cv=3).fit(X, y) for X, y in zip(Xs, ys, strict=True)]


def ours(Xs, ys, model=None):
    from multitask import L21Classifier
    from multitask.model_selection import MultiTaskCV

    return MultiTaskCV(model if model is not None else L21Classifier()).fit(Xs, ys)


def median_cpu(fn, repeats: int) -> tuple[float, object]:
    out = None
    times = []
    for _ in range(repeats):
        t, out = cpu_time(fn)
        times.append(t)
    return float(np.median(times)), out


def rule_problems():
    """``(name, X, y, fit_intercept)`` of the ``--rule`` table."""
    from bench_majorized import problems

    Xs, ys = problem(0)
    yield f"this problem, seed 0 ({N_FEATURES} features)", Xs, ys, True
    for name, X, y, intercept in problems():
        if not name.startswith("generated"):
            yield name, X, y, intercept
    rng = np.random.default_rng(0)
    for d in (16, 32, 64, 128):
        B = rng.standard_normal((d, 3))
        Xs, out = [], []
        for _ in range(100):
            X = rng.standard_normal((80, d))
            z = X @ (B @ rng.standard_normal(3)) + 0.5 * rng.standard_normal(80)
            Xs.append(X)
            out.append(np.where(z > np.median(z), 1, -1))
        yield f"generated 80x{d}x100", Xs, out, True


def bench_rule(repeats: int) -> None:
    from multitask import L21Classifier
    from multitask.solvers.newton import NEWTON_MAX_FEATURES

    print(f"\nsolver='auto' takes 'newton' up to {NEWTON_MAX_FEATURES} features: L21Classifier, "
          f"default tol, CPU s (median of {repeats})")
    print(f"  {'problem':34s} {'loss':13s} {'alpha':>5s} {'newton':>8s} {'fista':>8s} "
          f"{'mm':>8s} {'fista/newton':>12s} {'mm/newton':>9s}")
    for name, X, y, intercept in rule_problems():
        for loss in ("logistic", "squared_hinge"):
            top = L21Classifier(loss=loss, fit_intercept=intercept).alpha_max(X, y)
            for ratio in (0.1, 0.01):
                t = {}
                for solver in ("newton", "fista", "mm"):
                    est = L21Classifier(alpha=ratio * top, loss=loss, fit_intercept=intercept,
                                        solver=solver, max_iter=100_000)
                    est.fit(X, y)
                    t[solver] = median_cpu(lambda est=est, X=X, y=y: est.fit(X, y),
                                           repeats)[0]
                print(f"  {name:34s} {loss:13s} {ratio:5g} {t['newton']:8.3f} "
                      f"{t['fista']:8.3f} {t['mm']:8.3f} {t['fista'] / t['newton']:12.2f} "
                      f"{t['mm'] / t['newton']:9.2f}", flush=True)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--composite", action="store_true")
    p.add_argument("--models", nargs="+", default=list(COMPOSITE),
                   help="the composite classifiers of --composite")
    p.add_argument("--rule", action="store_true", help="the measurements of solver='auto'")
    p.add_argument("--skip-cv", action="store_true", help="only --composite / --rule")
    a = p.parse_args(argv)
    from threadpoolctl import threadpool_limits

    from multitask import compiled

    limits = threadpool_limits(1)
    compiled.set_up()
    print(f"load average before: {os.getloadavg()}; python {sys.version.split()[0]}")
    print(f"{N_TASKS} tasks, {ROWS[0]}-{ROWS[1] - 1} rows and {POSITIVES[0]}-{POSITIVES[1] - 1} "
          f"positives per task, {N_FEATURES} features; CPU s, median of {a.repeats}")
    print(f"  {'seed':>4s} {'rows':>5s} {'ours':>8s} {'peer':>8s} {'ours/peer':>9s}  ours' choice "
          "(alpha / alpha_max, solver, fits not converged)")
    ratios = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in [] if a.skip_cv else a.seeds:
            Xs, ys = problem(seed)
            ours(Xs, ys)
            peer(Xs, ys)
            t_ours, cv = median_cpu(lambda Xs=Xs, ys=ys: ours(Xs, ys), a.repeats)
            t_peer, _ = median_cpu(lambda Xs=Xs, ys=ys: peer(Xs, ys), a.repeats)
            ratios.append(t_ours / t_peer)
            top = float(cv.cv_results_["param_alpha"][0])
            print(f"  {seed:4d} {sum(len(y) for y in ys):5d} {t_ours:8.3f} {t_peer:8.3f} "
                  f"{t_ours / t_peer:9.2f}  {cv.best_params_['alpha'] / top:.3g}, "
                  f"{type(cv.best_estimator_.solver_).__name__}, "
                  f"{int(np.sum(cv.cv_results_['n_not_converged']))}")
        if ratios:
            print(f"  ours / peer: median {np.median(ratios):.2f}, largest {max(ratios):.2f} "
                  f"(target <= 3: {'holds' if max(ratios) <= 3 else 'MISSED'})")
        if a.composite:
            import multitask

            Xs, ys = problem(a.seeds[0])
            t_peer, _ = median_cpu(lambda: peer(Xs, ys), a.repeats)
            print(f"\ncomposite classifiers, default MultiTaskCV, seed {a.seeds[0]}, one run "
                  f"(peer {t_peer:.3f} s)")
            worst = 0.0
            for name in a.models:
                model = getattr(multitask, name)()
                getattr(multitask, name)().fit(Xs[:3], ys[:3])  # loads the compiled kernels
                t, cv = cpu_time(lambda model=model: ours(Xs, ys, model))
                worst = max(worst, t / t_peer)
                chosen = ", ".join(f"{k}={v:.3g}" for k, v in sorted(cv.best_params_.items()))
                print(f"  {name:32s} {t:8.2f} s  ours/peer {t / t_peer:7.1f}  "
                      f"{len(cv.cv_results_['params'])} candidates, solver "
                      f"{type(cv.best_estimator_.solver_).__name__}, chosen {chosen}", flush=True)
            print(f"  composite / peer: largest {worst:.1f} (target <= {COMPOSITE_TARGET:g}: "
                  f"{'holds' if worst <= COMPOSITE_TARGET else 'MISSED'})")
        if a.rule:
            bench_rule(a.repeats)
    print(f"load average after: {os.getloadavg()}")
    del limits


if __name__ == "__main__":
    main()
