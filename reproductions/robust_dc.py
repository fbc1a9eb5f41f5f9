"""Pan, Xia, Yin & Liu, "A divide-and-conquer method for scalable robust multitask learning"
(IEEE TNNLS 2015): AUC and fit time of APG, LADM and divide-and-conquer.

``python -m reproductions robust-dc --dataset {yeast,scene,eurlex-synthetic,outliers}``

Multi-label data (the paper's Section VII; each label is a task on the shared design):

* the rows are split at random into 40% training and 60% test
  (:func:`multitask.datasets.split_shared`), 5 times; dense features standardized with the
  training part's mean and deviation, sparse ones kept; labels with fewer than 2 positives or
  negatives in the training part are dropped for that split (counted in the log);
* robust MTL ``F(L + E, b) + alpha (||L||_* + lam ||E||_{1,2})`` with the squared loss
  (:class:`~multitask.RobustMTLRegressor` on -1/+1 labels, Table II; the penalized form for
  every method: the paper's equality-constrained model has no solution when a task has more
  rows than features, as here) and with the squared hinge
  (:class:`~multitask.RobustMTLClassifier`, Table III); an unpenalized intercept per task;
* methods, all the same estimator with another ``solver`` / ``n_groups``: APG
  (``solver="fista"``, the library's stopping rule on its relative optimality measure at
  ``--apg-tol``, default ``1e-4``, capped at ``--apg-max-iter``), LADM (a configured
  :class:`~multitask.solvers.LinearizedADMM` with ``schedule="paper"``: the paper's constants
  ``mu0 = 1e-6``, ``rho = 1.9``, ``mu_max = 1e10`` and its stopping rule (25) with the guard of
  the specification) and divide-and-conquer with that LADM on ``n_groups = 4`` and ``10``
  groups (the paper's "-25%" and "-10%") and the paper's combine step (``combine="project"``;
  the estimator's default combine is another, see the model page), run on joblib workers
  (``backend="joblib"``, ``--n-jobs``, default all cores) with one BLAS thread each, the
  workers started before timing; APG and LADM on the full problem with one BLAS thread
  (``--baseline-threads``);
* ``alpha = a * alpha_max`` (``alpha_max = ||grad F(0)||_2``, the estimator's ``alpha_max`` at
  ``lam = 1``) and ``lam``: chosen by 3-fold cross-validation on the first split's training part
  (:func:`multitask.model_selection.cross_validate_grid`, mean AUC, APG at ``tol = 1e-5``,
  ``a in {0.3, 0.1, 0.03, 0.01}``, ``lam in {0.5, 1, 2}``) for Yeast and Scene, fixed for
  eurlex-synthetic (``--alpha``, ``--lam`` override); the same values serve every method (they
  solve the same problem), whereas the paper cross-validated each algorithm separately;
* reported: mean AUC over labels (:func:`multitask.metrics.roc_auc`), fit seconds (wall
  clock), the objective reached (full problem, computed after timing), the iterations, and for
  each divide-and-conquer variant its speed-up over APG and over LADM (ratio of fit times
  within a split) and its AUC difference to APG in points;
* wall-clock times on a machine shared with other jobs are noisy, so the CPU span is reported
  too: the CPU time of the process for APG and LADM (one BLAS thread), and for
  divide-and-conquer the parent's CPU time plus the groups' CPU times scheduled
  longest-first on the workers (the wall time on dedicated cores), with the speed-ups computed
  from it (``cpu_speedup_vs_*``), and the CPU work (parent plus all groups).

``eurlex-synthetic``: the real EUR-Lex data are not available; a generated multi-label problem
with its shape (19,348 documents, 5,000 sparse tf-idf-like features, 412 labels;
:func:`multitask.datasets.make_multilabel_tasks`), 1 split by default, the squared hinge only
(``--loss`` for more) and APG capped at 150 iterations (the output says when the cap is hit: the
speed-ups over APG are then lower bounds).

``outliers``: synthetic outlier-task recovery (tasks from a rank-3 model plus 6 outlier tasks,
:func:`multitask.datasets.make_outlier_tasks`): precision and recall of the detected outlier
tasks (the estimators' ``outlier_tasks_``), relative error and rank of ``L`` for LADM, APG and
divide-and-conquer (APG to a certified relative gap of 1e-8, 1e-6 with ``--quick``); the
detected tasks are logged.
"""

from __future__ import annotations

import os
import time

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from threadpoolctl import threadpool_limits

from multitask import RobustMTLClassifier, RobustMTLRegressor
from multitask.datasets import (
    load_scene,
    load_yeast,
    make_linear_tasks,
    make_multilabel_tasks,
    make_outlier_tasks,
    split_shared,
)
from multitask.metrics import numerical_rank, roc_auc, weight_error
from multitask.model_selection import cross_validate_grid
from multitask.penalties import LowRankOutlier
from multitask.solvers import LinearizedADMM
from reproductions.common import auc_scorer, decision_scores, log, quiet, summarize

NAME = "robust-dc"
DATASETS = ("yeast", "scene", "eurlex-synthetic", "outliers")
DESCRIPTION = ("Robust MTL, divide-and-conquer (Pan et al. 2015): AUC and time of APG, LADM, "
               "DC t=4/10; synthetic outlier recovery.")
EURLEX_NOTE = ("eurlex-synthetic is GENERATED data with EUR-Lex's shape (19,348 x 5,000 sparse, "
               "412 labels): the real EUR-Lex data are not available here")

#: Speed-up targets of the issue for DC with t = 4 on eurlex-synthetic (the paper reports
#: more than 49x over APG and about 8x over LADM with at most 1.22 AUC points lost).
TARGETS = {"speedup_vs_APG": 5.0, "speedup_vs_LADM": 2.0, "auc_points_vs_APG": -1.5}
CV_A = (0.3, 0.1, 0.03, 0.01)
CV_LAM = (0.5, 1.0, 2.0)


def _log(msg: str) -> None:
    log(NAME, msg)


# ----------------------------------------------------------------------------- data
def load(name: str, args):
    """``(X, Y, description)`` of a multi-label data set (``Y`` in {0, 1})."""
    if name == "yeast":
        b = load_yeast(getattr(args, "data_dir", None))
        return b.X, b.Y, "Yeast (MULAN, 2417 x 103, 14 labels)"
    if name == "scene":
        b = load_scene(getattr(args, "data_dir", None))
        return b.X, b.Y, "Scene (MULAN, 2407 x 294, 6 labels)"
    size = getattr(args, "shape", None) or ((4000, 1000, 100) if args.quick else
                                            (19348, 5000, 412))
    shape = dict(zip(("n_samples", "n_features", "n_tasks"), map(int, size), strict=True))
    b = make_multilabel_tasks(**shape, mean_tokens=args.eurlex_tokens, rank=20, n_outliers=20,
                              noise=0.25, mean_positives=55.0, min_positives=20,
                              random_state=np.random.default_rng(args.random_state))
    reduced = tuple(size) != (19348, 5000, 412)
    return b.X, b.Y, f"{EURLEX_NOTE}. " + b.DESCR + (" (reduced shape)" if reduced else "")


def split(X, Y, seed: int):
    """40% / 60% split; standardized dense features; labels with < 2 of a class dropped."""
    Xtr, Ytr, Xte, Yte = split_shared(X, Y, train_ratio=0.4, random_state=seed)
    pos = Ytr.sum(axis=0)
    keep = (pos >= 2) & (Ytr.shape[0] - pos >= 2)
    Ytr, Yte = Ytr[:, keep], Yte[:, keep]
    if not sp.issparse(Xtr):
        mu, sd = Xtr.mean(axis=0), Xtr.std(axis=0)
        sd[sd == 0] = 1.0
        Xtr, Xte = (Xtr - mu) / sd, (Xte - mu) / sd
    return Xtr, Ytr, Xte, Yte, int((~keep).sum())


def model(loss: str, **params):
    """The robust MTL estimator of ``loss`` (regressor on -1/+1 labels for the squared loss)."""
    return (RobustMTLRegressor if loss == "squared" else RobustMTLClassifier)(**params)


def targets(loss: str, Y01: np.ndarray) -> np.ndarray:
    """The labels the estimator of ``loss`` is fitted on (-1/+1 for the squared loss)."""
    return 2.0 * Y01 - 1.0 if loss == "squared" else Y01


def objective(est, X, Y01: np.ndarray, loss: str) -> float:
    """Objective of the full problem at a fitted model (loss from its scores + penalty)."""
    S = decision_scores(est, X)
    Ypm = 2.0 * Y01 - 1.0
    if loss == "squared":
        f = 0.5 * float(np.mean((Ypm - S) ** 2, axis=0).sum())
    else:
        f = float(np.mean(np.maximum(0.0, 1.0 - Ypm * S) ** 2, axis=0).sum())
    return f + LowRankOutlier(est.alpha, est.lam).value(est.coef_variable_)


# ----------------------------------------------------------------------------- methods
def methods(args, groups) -> list[tuple[str, dict]]:
    """``(label, estimator parameters)`` of every compared method."""
    ladm = LinearizedADMM(schedule="paper", max_iter=args.max_iter)
    out = [("APG", {"solver": "fista", "max_iter": args.apg_max_iter, "tol": args.apg_tol}),
           ("LADM", {"solver": ladm})]
    out += [(f"DC-LADM t={t}", {"solver": ladm, "n_groups": t, "combine": "project"})
            for t in groups]
    return out


def makespan(costs, n_workers: int) -> float:
    """Longest-processing-time-first schedule of ``costs`` on ``n_workers``: its makespan."""
    loads = np.zeros(max(1, int(n_workers)))
    for c in sorted(costs, reverse=True):
        loads[np.argmin(loads)] += c
    return float(loads.max())


def fit_timed(est, X, Y, base_threads: int):
    """Fit ``est``; returns ``(est, wall seconds, CPU span, CPU work)``.

    The full-problem solvers run under ``threadpool_limits(base_threads)``; for
    divide-and-conquer the CPU span adds the groups' CPU times scheduled on the workers
    (``solver_info_``) to the parent's, and the work adds them all.
    """
    with quiet():
        t0, c0 = time.perf_counter(), time.process_time()
        if est.n_groups == 1:
            with threadpool_limits(limits=base_threads):
                est.fit(X, Y)
        else:
            est.fit(X, Y)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    work = cpu
    if est.n_groups > 1:
        info = est.solver_info_
        cpu += makespan(info["cpu_seconds_groups"], info["n_workers"])
        work += float(np.sum(info["cpu_seconds_groups"]))
    return est, wall, cpu, work


def warm_up(loss: str, n_jobs: int) -> float:
    """Start the joblib workers (and their imports) before anything is timed."""
    data = make_linear_tasks(np.zeros((5, 2 * n_jobs)), 40, shared_X=True, noise=1.0,
                             task_type="classification", random_state=0)
    t0 = time.perf_counter()
    with quiet():
        model(loss, alpha=0.1, lam=1.0, n_groups=n_jobs, backend="joblib", n_jobs=n_jobs,
              random_state=0, max_iter=50).fit(data.X, targets(loss, data.Y))
    return time.perf_counter() - t0


def cv_params(Xtr, Ytr01, loss: str, seed: int, n_jobs) -> tuple[float, float]:
    """``(a, lam)`` maximizing the 3-fold mean AUC (APG, ``tol = 1e-5``)."""
    est = model(loss, solver="fista", tol=1e-5, max_iter=2000)
    Y = targets(loss, Ytr01)
    amax = clone(est).set_params(lam=1.0).alpha_max(Xtr, Y)
    grid = {"alpha": [a * amax for a in CV_A], "lam": list(CV_LAM)}
    with quiet():
        res = cross_validate_grid(est, Xtr, Y, param_grid=grid, cv=3, scoring=auc_scorer,
                                  random_state=seed, widen=0, n_jobs=n_jobs)
    scores = np.where(np.isnan(res.mean_scores), -np.inf, res.mean_scores)
    best = res.candidates[int(np.argmax(scores))]
    return float(best["alpha"] / amax), float(best["lam"])


# ----------------------------------------------------------------------------- runners
def run_multilabel(args) -> list[dict]:
    """APG, LADM and divide-and-conquer on a multi-label data set (module docstring)."""
    name = args.dataset
    repeats = args.repeats or (1 if (args.quick or name == "eurlex-synthetic") else 5)
    groups = [int(g) for g in args.groups.split(",")]
    losses = ({"both": ["squared", "squared_hinge"]}.get(args.loss, [args.loss])
              if args.loss else (["squared_hinge"] if name == "eurlex-synthetic"
                                 else ["squared", "squared_hinge"]))
    if args.apg_max_iter is None:
        args.apg_max_iter = 150 if name == "eurlex-synthetic" else args.max_iter
    X, Y, descr = load(name, args)
    if args.quick and name != "eurlex-synthetic":
        Y = Y[:, : min(Y.shape[1], 6)]
    _log(descr)
    n_jobs = args.n_jobs if args.n_jobs and args.n_jobs > 0 else (os.cpu_count() or 1)
    rows: list[dict] = []
    for loss in losses:
        warm = warm_up(loss, n_jobs)
        setting = f"{loss}, 40% train, paper LADM, APG tol {args.apg_tol:g}"
        raw: dict[str, dict[str, list[float]]] = {}
        apg_capped: list[bool] = []
        params = None
        for rep in range(repeats):
            seed = args.random_state + rep
            Xtr, Ytr, Xte, Yte, dropped = split(X, Y, seed)
            if params is None:
                if args.alpha is not None or name == "eurlex-synthetic" or args.quick:
                    params = (args.alpha if args.alpha is not None else 0.1,
                              args.lam if args.lam is not None else 1.0)
                    how = "given" if args.alpha is not None else "default"
                else:
                    params = cv_params(Xtr, Ytr, loss, seed, args.cv_jobs)
                    how = "3-fold CV (APG)"
                _log(f"{loss}: a = {params[0]}, lam = {params[1]} ({how}); full-problem "
                     f"solvers with {args.baseline_threads} BLAS thread(s); DC on {n_jobs} "
                     f"joblib workers x 1 thread (workers started in {warm:.1f} s, not timed)")
            Yfit = targets(loss, Ytr)
            amax = model(loss, lam=1.0).alpha_max(Xtr, Yfit)
            alpha, lam = params[0] * amax, params[1]
            per = {}
            for label, opts in methods(args, groups):
                t = min(opts.get("n_groups", 1), Ytr.shape[1])
                est = model(loss, alpha=alpha, lam=lam, random_state=seed, backend="joblib",
                            n_jobs=n_jobs, **{**opts, "n_groups": t})
                est, secs, cpu, work = fit_timed(est, Xtr, Yfit, args.baseline_threads)
                with quiet():
                    auc = float(roc_auc(Yte, decision_scores(est, Xte)))
                obj = objective(est, Xtr, Ytr, loss)
                per[label] = (auc, secs, cpu)
                r = raw.setdefault(label, {"auc": [], "s": [], "cpu": [], "work": [],
                                           "obj": [], "iter": []})
                for key, v in (("auc", auc), ("s", secs), ("cpu", cpu), ("work", work),
                               ("obj", obj), ("iter", est.n_iter_)):
                    r[key].append(v)
                capped = not est.converged_
                if label == "APG":
                    apg_capped.append(capped)
                _log(f"{loss} split {rep + 1}/{repeats} {label}"
                     f"{'' if t == opts.get('n_groups', 1) else f' (t={t})'}: AUC {auc:.4f}, "
                     f"{secs:.1f} s wall, {cpu:.1f} s CPU span, {est.n_iter_} it, objective "
                     f"{obj:.6g}{' (stopped at its iteration cap)' if capped else ''}; "
                     f"{dropped} label(s) dropped")
            for label, (auc, secs, cpu) in per.items():
                if label.startswith("DC-"):
                    r = raw[label]
                    for ref in ("APG", "LADM"):
                        r.setdefault(f"speedup_vs_{ref}", []).append(per[ref][1] / secs)
                        r.setdefault(f"cpu_speedup_vs_{ref}", []).append(per[ref][2] / cpu)
                    r.setdefault("auc_points_vs_APG", []).append(100 * (auc - per["APG"][0]))
        for label, r in raw.items():
            for metric, key in (("AUC", "auc"), ("objective", "obj"), ("iterations", "iter"),
                                ("cpu_span_seconds", "cpu"), ("cpu_work_seconds", "work")):
                rows.append(summarize(NAME, name, setting, label, metric, r[key], r["s"]))
            for key in ("speedup_vs_APG", "speedup_vs_LADM", "cpu_speedup_vs_APG",
                        "cpu_speedup_vs_LADM", "auc_points_vs_APG"):
                if key in r:
                    rows.append(summarize(NAME, name, setting, label, key, r[key], r["s"]))
        report_targets(name, loss, raw, groups)
        if any(apg_capped):
            _log(f"{name} / {loss}: APG stopped at its iteration cap ({args.apg_max_iter}) in "
                 f"{sum(apg_capped)} of {len(apg_capped)} split(s): its fit time, hence the "
                 "speed-ups over APG, are lower bounds there, and the AUC differences are "
                 "against a truncated APG (--apg-max-iter 3000 runs it to its own rule)")
    if name == "eurlex-synthetic":
        _log(EURLEX_NOTE)
    return rows


def report_targets(name, loss, raw, groups) -> None:
    """Log the speed and AUC targets of DC ``t = 4`` and the other ``t``'s ratios."""
    key = "DC-LADM t=4"
    if key not in raw:
        return
    r = raw[key]
    parts = []
    for metric, target in TARGETS.items():
        v = float(np.mean(r[metric]))
        unit = " points" if metric.startswith("auc") else "x"
        parts.append(f"{metric} = {v:.2f}{unit} (target >= {target}{unit}: "
                     f"{'met' if v >= target else 'NOT met'})")
        if not metric.startswith("auc"):
            c = float(np.mean(r[f"cpu_{metric}"]))
            parts.append(f"cpu_{metric} = {c:.2f}x ({'met' if c >= target else 'NOT met'})")
    _log(f"{name} / {loss}: {key} (wall-clock, and CPU span: parent + groups' CPU time "
         "scheduled on the workers): " + "; ".join(parts))
    for t in groups:
        k = f"DC-LADM t={t}"
        if k in raw and k != key:
            _log(f"{name} / {loss}: {k}: speed-up {np.mean(raw[k]['speedup_vs_APG']):.2f}x vs "
                 f"APG, {np.mean(raw[k]['speedup_vs_LADM']):.2f}x vs LADM (CPU span: "
                 f"{np.mean(raw[k]['cpu_speedup_vs_APG']):.2f}x, "
                 f"{np.mean(raw[k]['cpu_speedup_vs_LADM']):.2f}x), AUC "
                 f"{np.mean(raw[k]['auc_points_vs_APG']):+.2f} points vs APG")


def run_outliers(args) -> list[dict]:
    """Outlier-task recovery on generated tasks (module docstring)."""
    repeats = args.repeats or (1 if args.quick else 3)
    d, m, n, rank, k = (40, 30, 60, 2, 3) if args.quick else (100, 60, 80, 3, 6)
    alpha, lam = 0.01, 0.9
    exact = LinearizedADMM(tol=1e-6)
    # APG to a certified relative gap of 1e-8 (1e-6 with --quick: about 2,400 iterations
    # instead of 20,000 on the quick problem, the same outliers found)
    apg_tol = 1e-6 if args.quick else 1e-8
    specs = [("LADM", {"solver": exact}), ("APG", {"solver": "fista", "tol": apg_tol}),
             ("DC-LADM t=4", {"solver": exact, "n_groups": 4, "combine": "project"}),
             ("DC-LADM t=4, lam*sqrt(t)", {"solver": exact, "n_groups": 4,
                                            "combine": "project", "lam_scale": "sqrt"})]
    raw: dict[str, dict[str, list[float]]] = {}
    setting = (f"{m} tasks (rank {rank} + {k} outliers), d={d}, n_t={n}, alpha={alpha}, "
               f"lam={lam}")
    for rep in range(repeats):
        seed = args.random_state + rep
        b = make_outlier_tasks(n_tasks=m, n_features=d, n_samples=n, rank=rank, n_outliers=k,
                               noise=0.05, random_state=seed)
        truth = set(b.outlier_tasks.tolist())
        for label, opts in specs:
            est = RobustMTLRegressor(alpha=alpha, lam=lam, fit_intercept=False,
                                     random_state=seed, max_iter=20000, **opts)
            with quiet():
                t0 = time.perf_counter()
                est.fit(b.X, b.y)
                secs = time.perf_counter() - t0
            found = set(est.outlier_tasks_.tolist())
            tp = len(found & truth)
            L = est.low_rank_component_.T
            r = raw.setdefault(label, {})
            r.setdefault("outlier_precision", []).append(tp / len(found) if found else 1.0)
            r.setdefault("outlier_recall", []).append(tp / len(truth) if truth else 1.0)
            r.setdefault("relerr_L", []).append(weight_error(b.L, L, relative=True))
            r.setdefault("rank_L", []).append(numerical_rank(L, rtol=1e-6))
            r.setdefault("_s", []).append(secs)
            _log(f"seed {seed} {label}: outliers found {sorted(found)} (true {sorted(truth)}), "
                 f"relerr_L {r['relerr_L'][-1]:.3f}, rank {r['rank_L'][-1]}")
    rows = []
    for label, r in raw.items():
        for metric in ("outlier_precision", "outlier_recall", "relerr_L", "rank_L"):
            rows.append(summarize(NAME, "outliers", setting, label, metric, r[metric], r["_s"]))
    return rows


def add_arguments(parser) -> None:
    """Options of this reproduction."""
    parser.add_argument("--loss", choices=("squared", "squared_hinge", "both"), default=None,
                        help="loss (default: both for yeast/scene, squared_hinge for "
                             "eurlex-synthetic)")
    parser.add_argument("--groups", default="4,10",
                        help="numbers of groups t of divide-and-conquer (default 4,10)")
    parser.add_argument("--alpha", type=float, default=None,
                        help="alpha / alpha_max (default: CV on yeast/scene, 0.1 otherwise)")
    parser.add_argument("--lam", type=float, default=None,
                        help="lambda, weight of the outlier part (default: CV or 1.0)")
    parser.add_argument("--max-iter", type=int, default=3000,
                        help="iteration budget of LADM (and of APG on yeast/scene; default 3000)")
    parser.add_argument("--apg-max-iter", type=int, default=None,
                        help="iteration cap of APG (default: 150 on eurlex-synthetic, "
                             "--max-iter otherwise)")
    parser.add_argument("--apg-tol", type=float, default=1e-4,
                        help="APG's tolerance on the relative optimality measure (default 1e-4, "
                             "the estimators' default)")
    parser.add_argument("--baseline-threads", type=int, default=1,
                        help="BLAS threads of APG/LADM on the full problem (default 1, so that "
                             "their CPU time is their span)")
    parser.add_argument("--cv-jobs", type=int, default=None,
                        help="parallel jobs of the cross-validation of (a, lam) (default 1)")
    parser.add_argument("--eurlex-tokens", type=float, default=60.0,
                        help="mean tokens per generated document (default 60)")
    parser.add_argument("--shape", type=int, nargs=3, default=None,
                        metavar=("ROWS", "FEATURES", "LABELS"),
                        help="eurlex-synthetic: a reduced shape (default 19348 5000 412; "
                             "--quick: 4000 1000 100)")


def run(args) -> list[dict]:
    """Run the reproduction on ``args.dataset`` (see the module docstring)."""
    defaults = (("loss", None), ("groups", "4,10"), ("alpha", None), ("lam", None),
                ("max_iter", 3000), ("apg_max_iter", None), ("apg_tol", 1e-4),
                ("baseline_threads", 1), ("cv_jobs", None), ("eurlex_tokens", 60.0),
                ("shape", None), ("quick", False), ("repeats", None), ("random_state", 0),
                ("n_jobs", None), ("data_dir", None))
    for key, value in defaults:
        if not hasattr(args, key):
            setattr(args, key, value)
    if args.dataset not in DATASETS:
        raise ValueError(f"dataset must be one of {DATASETS}, got {args.dataset!r}.")
    if args.dataset == "outliers":
        return run_outliers(args)
    return run_multilabel(args)
