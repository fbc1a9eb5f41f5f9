"""Quattoni, Carreras, Collins & Darrell, "A projected subgradient method for scalable
multi-task learning" (MIT-CSAIL-TR-2008-045): l1,inf against independent l1 / l2 balls.

``python -m reproductions l1inf --dataset {synthetic,letter,newsgroups} [--solver lp]``

Three models, one estimator (:class:`~multitask.L1InfClassifier`, hinge loss) that differ only
in ``constraint``:

* ``l1inf``: joint ball ``sum_j max_t |W_jt| <= C``;
* ``l1``: independent per-task balls ``||w_t||_1 <= C_t``;
* ``l2``: independent per-task balls ``||w_t||_2 <= C_t``.

``solver="subgradient"`` (the paper's method): 200 steps ``eta0 / sqrt(k)``, best iterate, no
intercept on the synthetic data; ``eta0`` is ``f`` times the estimator's default (its
``eta0_`` after a fit with ``eta0=None``), ``f`` chosen by the training objective from
``{0.1, 1, 10}``, the grid widened by a factor of 10 beyond an edge while the edge is strictly
best, at most twice (:func:`choose_eta_factor`). ``--solver lp`` adds ``l1inf_lp`` and
``l1_lp``: the same l1,inf and l1 models solved exactly as linear programs (``solver="lp"``,
HiGHS, a sparse vertex of the optimal set) on the same training sets; the l2 baseline is not an
LP and keeps the subgradient method. The program is named, not left to ``form="auto"``: the
primal by interior point with crossover (:func:`exact_solver`).

``--dataset synthetic`` (the paper's Section 5.1): ``d = 200`` features, ``m = 60`` tasks,
``W`` i.i.d. N(0, 1) on a random relevant set ``V`` of 10% of the features and, per task, on a
random subset of ``V`` of size uniform in ``{|V|/2, ..., |V|}``; inputs N(0, I) normalized to
unit l2 norm, labels ``sign(w_t^T x)`` (:func:`multitask.datasets.make_joint_sparse_tasks`, the
training sets by :func:`multitask.datasets.make_linear_tasks` from the same weights); training
sizes 10..640 per task, 1000 test points per task; oracle radii (``C = ||W||_{1,inf}``,
``C_t = ||w_t||_1``, ``C_t = ||w_t||_2``). Metrics: test error (mean over tasks,
:func:`multitask.metrics.error_rate`), feature-selection precision and recall against ``V``
(a feature is selected when it is nonzero for some task, :func:`multitask.metrics.support_recovery`
at the level of features), number of selected features.

``--dataset letter`` / ``newsgroups``: the same three models on the handwritten-letter pair
tasks and on the 20 Newsgroups task pairs; rows normalized to unit l2 norm; per repetition and
training size, a stratified random training part of ``n`` rows per task
(:func:`multitask.datasets.split_tasks`; the rest is the test part); one radius ``C`` for all
tasks chosen by :class:`~multitask.MultiTaskCV` (3 folds stratified within tasks, mean per-task
ROC AUC) from ``10^0 .. 10^4`` in half decades, with the library's grid widening (3 more
values beyond an edge that wins, at most twice); per-task intercepts, the default ``eta0``;
reported: test error, mean AUC, features used and the chosen radius.
"""

from __future__ import annotations

import numpy as np
from sklearn.preprocessing import normalize

from multitask import L1InfClassifier, MultiTaskCV
from multitask.datasets import (
    load_letters,
    load_newsgroups,
    make_joint_sparse_tasks,
    make_linear_tasks,
    split_tasks,
)
from multitask.metrics import error_rate, roc_auc, support_recovery
from multitask.penalties import l1inf_norm
from multitask.solvers import LinearProgram
from reproductions.common import log, quiet, summarize, timer

NAME = "l1inf"
DATASETS = ("synthetic", "letter", "newsgroups")
DESCRIPTION = ("l1,inf joint sparsity (Quattoni, Carreras, Collins & Darrell): l1,inf vs "
               "independent l1 / l2 balls, projected subgradient (--solver lp: l1,inf and l1 "
               "also solved exactly as linear programs); synthetic Fig. 2, Letter and "
               "20 Newsgroups pairs.")
MODELS = ("l1inf", "l1", "l2")
#: The l1,inf and l1 models solved exactly (``--solver lp``); ``"<ball>_lp"``.
LP_MODELS = ("l1inf_lp", "l1_lp")
SOLVERS = ("subgradient", "lp")
SIZES = (10, 20, 40, 80, 160, 320, 640)
QUICK_SIZES = (10, 20, 40, 80)
ETA_FACTORS = (0.1, 1.0, 10.0)
ETA_EXTEND = 2
N_ITER = 200
#: Radius grid of the real-data experiments, ``10^0 .. 10^4`` in half decades (rows of unit
#: norm); widened at an edge by :class:`~multitask.MultiTaskCV`.
RADIUS_GRID = tuple(float(v) for v in 10.0 ** np.arange(0.0, 4.01, 0.5))


def ball_of(model: str) -> str:
    """The constraint of a model name (``"l1inf_lp"`` -> ``"l1inf"``)."""
    return model[: -len("_lp")] if model.endswith("_lp") else model


def oracle_radius(W: np.ndarray, constraint: str):
    """``||W||_{1,inf}`` (a float) or the per-task ``l1`` / ``l2`` norms of ``W`` (d, m)."""
    if constraint == "l1inf":
        return l1inf_norm(W)
    return np.abs(W).sum(axis=0) if constraint == "l1" else np.linalg.norm(W, axis=0)


def hinge_objective(est, Xs, ys) -> float:
    """Training objective ``sum_t mean_i max(0, 1 - y_i s_i)`` of a fitted model (0/1 labels)."""
    scores = est.decision_function(Xs)
    return float(sum(np.mean(np.maximum(0.0, 1.0 - (2.0 * y - 1.0) * s))
                     for s, y in zip(scores, ys, strict=True)))


def choose_eta_factor(run, factors=ETA_FACTORS, *, extend: int = ETA_EXTEND):
    """Pick the step factor of lowest training objective, widening the grid at its edges.

    ``run(f)`` returns ``(objective, fitted model)`` for the step scale ``f`` times the
    default. Every factor of ``factors`` is run; while the best one is the largest (smallest)
    of those tried and strictly better than its neighbour, one more factor, ``ratio`` times
    larger (smaller), is run, at most ``extend`` times (``ratio`` is the ratio of the two
    outermost factors on that side). Ties go to the smaller factor.

    Returns
    -------
    factor : float
    model : the fitted model of that factor
    tried : dict
        ``{factor: objective}`` of every run.
    """
    runs = {float(f): run(float(f)) for f in factors}
    for _ in range(int(extend)):
        fs = sorted(runs)
        obj = [runs[f][0] for f in fs]
        i = int(np.argmin(obj))
        if len(fs) == 1:
            break
        if i == len(fs) - 1 and obj[-1] < obj[-2]:
            new = fs[-1] * fs[-1] / fs[-2]
        elif i == 0 and obj[0] < obj[1]:
            new = fs[0] * fs[0] / fs[1]
        else:
            break
        runs[new] = run(new)
    fs = sorted(runs)
    best = min(fs, key=lambda f: runs[f][0])
    return best, runs[best][1], {f: float(runs[f][0]) for f in fs}


def fit_subgradient(Xs, ys, constraint: str, radius, *, max_iter: int = N_ITER,
                    eta_factors=ETA_FACTORS, eta_extend: int = ETA_EXTEND):
    """The paper's solver, no intercept; ``eta0`` by training objective.

    Returns ``(model, seconds, info)`` with ``info`` holding ``eta_factor``, ``objective``
    and ``tried`` (``{factor: objective}``).
    """
    est = L1InfClassifier(radius=radius, constraint=constraint, solver="subgradient",
                          max_iter=max_iter, fit_intercept=False)
    with timer() as tm, quiet():
        base = est.fit(Xs, ys).eta0_  # the default step scale (factor 1)
        first = (hinge_objective(est, Xs, ys), est)

        def run(f):
            if f == 1.0:
                return first
            model = L1InfClassifier(**{**est.get_params(), "eta0": f * base}).fit(Xs, ys)
            return hinge_objective(model, Xs, ys), model

        f, model, tried = choose_eta_factor(run, eta_factors, extend=eta_extend)
    return model, tm["seconds"], {"eta_factor": f, "objective": tried[f], "tried": tried}


def exact_solver() -> LinearProgram:
    """The exact solver of the ``_lp`` models: the primal program (a row per data row and
    bound) by HiGHS's interior point with crossover to a vertex, whose sparse optimum the
    experiment compares; named rather than ``form="auto"``, which may hand a large ball
    problem to the dual program."""
    return LinearProgram(form="primal", method="highs-ipm")


def fit_exact(Xs, ys, constraint: str, radius):
    """The exact hinge-loss solution (:func:`exact_solver`), no intercept: ``(model, s,
    info)``."""
    with timer() as tm, quiet():
        est = L1InfClassifier(radius=radius, constraint=constraint, solver=exact_solver(),
                              fit_intercept=False).fit(Xs, ys)
    return est, tm["seconds"], {"objective": hinge_objective(est, Xs, ys)}


def task_error(est, Xs, ys) -> float:
    """Test error averaged over tasks (class 1 when the score is positive)."""
    return error_rate(ys, est.decision_function(Xs), threshold=0.0, average="macro")


def synthetic_base(n_test: int, n_features: int, n_tasks: int, rng):
    """True weights, relevant features and the test set of the paper's synthetic data."""
    k = max(1, round(0.1 * n_features))
    return make_joint_sparse_tasks(
        n_tasks=n_tasks, n_features=n_features, n_samples=1, n_test=n_test, n_relevant=k,
        min_task_support=(k + 1) // 2, normalize_rows=True, noise=0.0,
        task_type="classification", ensure_both_classes=True, random_state=rng)


def synthetic_training(W_true: np.ndarray, n: int, rng):
    """A training set of ``n`` rows per task from the true weights."""
    return make_linear_tasks(W_true, int(n), n_test=1, normalize_rows=True, noise=0.0,
                             task_type="classification", ensure_both_classes=True,
                             random_state=rng)


def run_synthetic(sizes=SIZES, *, repeats: int = 1, n_features: int = 200, n_tasks: int = 60,
                  n_test: int = 1000, seed: int = 0, models=MODELS, max_iter: int = N_ITER,
                  eta_factors=ETA_FACTORS, eta_extend: int = ETA_EXTEND,
                  verbose: bool = False) -> dict:
    """The synthetic experiment; returns ``{(n_train, model, metric): [values]}``.

    Per repetition one ``W`` and one test set are drawn; a fresh training set per size.
    ``models`` may hold :data:`MODELS` (projected subgradient) and :data:`LP_MODELS` (the same
    balls solved exactly), fitted on the same training sets. Metrics: ``test_error``,
    ``precision``, ``recall``, ``n_selected``, ``eta_factor`` (subgradient models only) and
    ``train_objective``; ``("seconds", n_train, model)`` keys hold the fit times (all step
    factors tried).
    """
    unknown = [mo for mo in models if mo not in MODELS + LP_MODELS]
    if unknown:
        raise ValueError(f"Unknown models {unknown}: choose from {MODELS + LP_MODELS}.")
    out: dict = {}
    for r in range(repeats):
        rng = np.random.default_rng(seed + r)
        base = synthetic_base(n_test, n_features, n_tasks, rng)
        W_true = base.W_true
        for n in sizes:
            tr = synthetic_training(W_true, n, rng)
            for model in models:
                ball = ball_of(model)
                radius = oracle_radius(W_true, ball)
                if model in LP_MODELS:
                    est, secs, info = fit_exact(tr.X, tr.y, ball, radius)
                else:
                    est, secs, info = fit_subgradient(tr.X, tr.y, model, radius,
                                                      max_iter=max_iter,
                                                      eta_factors=eta_factors,
                                                      eta_extend=eta_extend)
                sel = support_recovery(W_true, est.coef_.T, level="features")
                vals = {"test_error": task_error(est, base.X_test, base.y_test),
                        "precision": sel["precision"], "recall": sel["recall"],
                        "n_selected": float(sel["n_selected"]),
                        "train_objective": info["objective"]}
                if "eta_factor" in info:
                    vals["eta_factor"] = info["eta_factor"]
                for metric, v in vals.items():
                    out.setdefault((int(n), model, metric), []).append(v)
                out.setdefault(("seconds", int(n), model), []).append(secs)
            if verbose:
                errs = "  ".join(f"{mo} {out[(int(n), mo, 'test_error')][-1]:.3f}"
                                 for mo in models)
                log(NAME, f"synthetic repeat {r + 1}/{repeats} n={n}: test error {errs}")
    return out


# --------------------------------------------------------------------------- real data
def run_real(Xs, ys, sizes, *, repeats: int = 3, seed: int = 0, grid=None, n_folds: int = 3,
             models=MODELS, max_iter: int = N_ITER, n_jobs=None, verbose=False) -> dict:
    """The three models on per-task data; radius by :class:`~multitask.MultiTaskCV`.

    Metrics: ``test_error``, ``mean_auc``, ``n_selected``, ``radius`` (chosen) and
    ``radius_at_edge`` (1 when the choice is at an edge of the widened grid).
    """
    grid = list(RADIUS_GRID if grid is None else grid)
    Xs = [normalize(X) for X in Xs]
    out: dict = {}
    for r in range(repeats):
        for n in sizes:
            Xtr, ytr, Xte, yte = split_tasks(Xs, ys, n_train=int(n), stratify=True,
                                             random_state=seed + 1000 * r + int(n))
            for model in models:
                solver = exact_solver() if model in LP_MODELS else "subgradient"
                est = L1InfClassifier(constraint=ball_of(model), solver=solver,
                                      max_iter=max_iter, fit_intercept=True)
                with timer() as tm, quiet():
                    cv = MultiTaskCV(est, param_grid={"radius": grid}, cv=n_folds,
                                     random_state=seed + r, n_jobs=n_jobs).fit(Xtr, ytr)
                radii = [c["radius"] for c in cv.cv_results_["params"]]
                best = float(cv.best_params_["radius"])
                at_edge = best >= max(radii) or best <= min(radii)
                if at_edge:
                    log(NAME, f"{model}, n={n}: the radius chosen by cross-validation ({best:g}) "
                        f"is at the edge of the grid [{min(radii):g}, {max(radii):g}] after "
                        f"{cv.n_widened_} widening(s)")
                S = cv.decision_function(Xte)
                with quiet():
                    auc = float(roc_auc(yte, S))
                vals = {"test_error": error_rate(yte, S, threshold=0.0, average="macro"),
                        "mean_auc": auc,
                        "n_selected": float(np.sum(np.any(cv.coef_ != 0, axis=0))),
                        "radius": best, "radius_at_edge": float(at_edge)}
                for metric, v in vals.items():
                    out.setdefault((int(n), model, metric), []).append(v)
                out.setdefault(("seconds", int(n), model), []).append(tm["seconds"])
            if verbose:
                errs = "  ".join(f"{mo} {out[(int(n), mo, 'test_error')][-1]:.3f} "
                                 f"(C={out[(int(n), mo, 'radius')][-1]:g})" for mo in models)
                log(NAME, f"repeat {r + 1}/{repeats} n={n}: test error {errs}")
    return out


def result_rows(dataset: str, res: dict, sizes, models, metrics) -> list[dict]:
    """Result rows per training size, model and metric."""
    rows = []
    for n in sizes:
        for model in models:
            secs = res.get(("seconds", int(n), model), [])
            for metric in metrics:
                vals = res.get((int(n), model, metric))
                if vals is not None:
                    rows.append(summarize(NAME, dataset, f"n_train={n}", model, metric, vals,
                                          secs))
    return rows


def print_table(rows: list[dict], metrics, methods=None, title: str | None = None) -> None:
    """Mean ± std per setting, two metrics (times the models) per block."""
    if methods is not None:
        rows = [r for r in rows if r["method"] in methods]
    if title:
        print(title)
    settings = list(dict.fromkeys(r["setting"] for r in rows))
    methods = [m for m in (methods or dict.fromkeys(r["method"] for r in rows))
               if any(r["method"] == m for r in rows)]
    metrics = [k for k in metrics if any(r["metric"] == k for r in rows)]
    for start in range(0, len(metrics), 2):
        block = metrics[start:start + 2]
        print("setting".ljust(14) + "".join(f"{m}:{k}".rjust(24) for k in block
                                            for m in methods))
        for s in settings:
            line = s.ljust(14)
            for k in block:
                for m in methods:
                    r = next((x for x in rows if x["setting"] == s and x["method"] == m
                              and x["metric"] == k), None)
                    line += (f"{r['mean']:.3f} ± {r['std']:.3f}" if r else "-").rjust(24)
            print(line)
        print()
    print(flush=True)


def add_arguments(parser) -> None:
    """Options of this reproduction."""
    parser.add_argument("--sizes", type=int, nargs="+", default=None,
                        help="training rows per task (default: 10 20 40 80 160 320 640 for "
                             "synthetic, 20 40 80 for letter, 20 50 100 for newsgroups)")
    parser.add_argument("--iterations", type=int, default=N_ITER,
                        help="projected subgradient iterations (default 200, the paper's)")
    parser.add_argument("--solver", choices=SOLVERS, default="subgradient",
                        help="subgradient (default): the paper's projected subgradient for "
                             "the three models; lp: in addition, l1,inf and l1 solved exactly "
                             "as linear programs (l1inf_lp, l1_lp; HiGHS), in an extra table")


def run(args) -> list[dict]:
    """Run the reproduction on ``args.dataset`` (see the module docstring)."""
    quick = bool(getattr(args, "quick", False))
    dataset = args.dataset
    seed = int(getattr(args, "random_state", 0) or 0)
    iters = int(getattr(args, "iterations", N_ITER))
    if iters < 1:
        raise ValueError(f"--iterations must be >= 1, got {iters}.")
    repeats = getattr(args, "repeats", None)
    sizes = getattr(args, "sizes", None)
    solver = getattr(args, "solver", "subgradient") or "subgradient"
    if solver not in SOLVERS:
        raise ValueError(f"--solver must be one of {SOLVERS}, got {solver!r}.")
    models = MODELS + LP_MODELS if solver == "lp" else MODELS
    if dataset == "synthetic":
        repeats = repeats or (1 if quick else 3)
        sizes = sizes or (QUICK_SIZES if quick else SIZES)
        kw = dict(n_tasks=30, n_test=500) if quick else dict(n_tasks=60, n_test=1000)
        res = run_synthetic(sizes, repeats=int(repeats), seed=seed, max_iter=iters,
                            models=models, verbose=True, **kw)
        metrics = ("test_error", "precision", "recall", "n_selected", "eta_factor",
                   "train_objective")
    elif dataset in ("letter", "newsgroups"):
        loader = load_letters if dataset == "letter" else load_newsgroups
        bunch = loader(getattr(args, "data_dir", None))
        repeats = repeats or (1 if quick else 5)
        if sizes is None:
            sizes = (20, 40, 80) if dataset == "letter" else (20, 50, 100)
            sizes = sizes[:2] if quick else sizes
        res = run_real(bunch.X, bunch.y, sizes, repeats=int(repeats), seed=seed,
                       max_iter=iters, n_jobs=getattr(args, "n_jobs", None), models=models,
                       verbose=True)
        metrics = ("test_error", "mean_auc", "n_selected", "radius", "radius_at_edge")
    else:
        raise ValueError(f"Unknown dataset {dataset!r}: choose synthetic, letter or newsgroups.")
    rows = result_rows(dataset, res, sizes, models, metrics)
    print_table(rows, metrics, MODELS,
                f"Projected subgradient (the paper's solver), {iters} iterations:"
                if solver == "lp" else None)
    if solver == "lp":
        print_table(rows, [k for k in metrics if k != "eta_factor"], LP_MODELS + ("l2",),
                    "Exact solutions (linear programs, HiGHS) of l1,inf and l1, same training "
                    "sets; l2 (not an LP) by projected subgradient:")
    return rows
