"""Reproduction of the l1,inf experiments (Quattoni, Carreras, Collins & Darrell).

"A projected subgradient method for scalable multi-task learning", MIT-CSAIL-TR-2008-045.
Three models share one solver (projected subgradient on the average hinge loss, no intercept,
200 iterations, steps ``eta0 / sqrt(k)`` with ``eta0`` chosen by the training objective from
``{0.1, 1, 10}`` times the bound-optimal default, the grid widened by factors of 10 beyond an
edge while the edge is best, at most twice); only the projection differs:

* ``l1inf``: joint ball ``sum_j max_t |W_jt| <= C``;
* ``l1``: independent per-task balls ``||w_t||_1 <= C_t``;
* ``l2``: independent per-task balls ``||w_t||_2 <= C_t``.

``--solver lp`` adds ``l1inf_lp`` and ``l1_lp``: the same l1,inf and l1 models solved exactly
as linear programs (:func:`~multitask.solvers.lp.hinge_lp`, HiGHS, a sparse vertex of the
optimal set), reported next to the subgradient runs on the same training sets; the l2 baseline
is not an LP and keeps the subgradient method.

``--dataset synthetic`` (paper's Section 5.1): ``d = 200`` features, ``m = 60`` tasks,
``W`` i.i.d. N(0, 1) restricted to a random relevant set ``V`` of 10% of the features and, per
task, to a random subset of ``V`` of size uniform in ``{|V|/2, ..., |V|}``; inputs N(0, I)
normalized to unit l2 norm, labels ``sign(w_t^T x)``; training sizes 10..640 per task, 1000 test
points per task; oracle radii (``C = ||W||_{1,inf}``, ``C_t = ||w_t||_1``, ``C_t = ||w_t||_2``).
Metrics: test error (mean over tasks), feature-selection precision and recall against ``V``
(a feature is selected when it is nonzero for some task), number of selected features.

``--dataset letter`` / ``newsgroups``: the same three models on the handwritten-letter pair
tasks and on the 20 Newsgroups task pairs; rows normalized to unit l2 norm; per repetition and
training size, a stratified random training part of ``n`` rows per task (the rest is the test
part); one radius ``C`` for all tasks chosen by 3-fold cross-validation within tasks on the
training part (mean per-task ROC AUC) from ``10^0 .. 10^4`` in half decades, the grid widened
when the choice is at an edge (:func:`cv_radius`); with intercepts, ``eta0`` the bound-optimal
default; reported: test error, mean AUC, features used and the chosen radius.
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import roc_auc_score

from multitask.data import as_multitask_data
from multitask.estimators.l1inf import L1InfClassifier, constraint_norm, make_constraint
from multitask.experiments._common import summarize
from multitask.experiments.registry import register
from multitask.losses import get_datafit
from multitask.solvers.lp import hinge_lp
from multitask.solvers.subgradient import default_eta0, projected_subgradient

EXPERIMENT = "l1inf"
MODELS = ("l1inf", "l1", "l2")
#: The l1,inf and l1 models solved exactly (``--solver lp``); ``"<ball>_lp"``.
LP_MODELS = ("l1inf_lp", "l1_lp")
SOLVERS = ("subgradient", "lp")
SIZES = (10, 20, 40, 80, 160, 320, 640)
QUICK_SIZES = (10, 20, 40, 80)
ETA_FACTORS = (0.1, 1.0, 10.0)
ETA_EXTEND = 2
N_ITER = 200
#: Default radius grid of the real-data experiments, ``10^0 .. 10^4`` in half decades (rows of
#: unit norm); widened at an edge when cross-validation chooses it (see :func:`cv_radius`).
RADIUS_GRID = tuple(float(v) for v in 10.0 ** np.arange(0.0, 4.01, 0.5))
RADIUS_EXTEND = 2


def make_paper_synthetic(n_train: int, n_test: int, *, n_features: int = 200, n_tasks: int = 60,
                         frac_relevant: float = 0.1, W: np.ndarray | None = None,
                         rng=None):
    """The synthetic tasks of the paper's Section 5.1.

    Parameters
    ----------
    n_train, n_test : int
        Rows per task of the training and test parts (a task's sample holding one class only
        is redrawn, so that every task has both labels).
    n_features, n_tasks : int, default=200, 60
    frac_relevant : float, default=0.1
        Fraction of relevant features ``|V| / d``.
    W : ndarray of shape (n_features, n_tasks), optional
        Reuse these true weights (a new draw otherwise).
    rng : numpy Generator or int

    Returns
    -------
    dict
        ``W`` (d, m), ``relevant`` (indices of ``V``), ``Xtr``/``ytr``/``Xte``/``yte``: lists of
        per-task arrays (inputs of unit norm, labels in {0, 1} for ``sign(w_t^T x)``).
    """
    rng = np.random.default_rng(rng)
    d, m = n_features, n_tasks
    if W is None:
        k = max(1, int(round(frac_relevant * d)))
        V = rng.choice(d, size=k, replace=False)
        W = np.zeros((d, m))
        G = rng.standard_normal((d, m))
        for t in range(m):
            size = int(rng.integers((k + 1) // 2, k + 1))
            v = rng.choice(V, size=size, replace=False)
            W[v, t] = G[v, t]
    relevant = np.flatnonzero(np.any(W != 0, axis=1))

    def draw(n):
        Xs, ys = [], []
        for t in range(m):
            for _ in range(100):  # redraw a sample with one class only (tiny n)
                X = rng.standard_normal((n, d))
                X /= np.linalg.norm(X, axis=1, keepdims=True)
                y = (X @ W[:, t] > 0).astype(np.int64)
                if n < 2 or 0 < y.sum() < n:
                    break
            Xs.append(X)
            ys.append(y)
        return Xs, ys

    Xtr, ytr = draw(n_train)
    Xte, yte = draw(n_test)
    return {"W": W, "relevant": relevant, "Xtr": Xtr, "ytr": ytr, "Xte": Xte, "yte": yte}


def choose_eta_factor(run, factors=ETA_FACTORS, *, extend: int = ETA_EXTEND):
    """Pick the step factor of lowest training objective, widening the grid at its edges.

    ``run(f)`` returns a solver result for the step scale ``f`` times the bound-optimal
    default. Every factor of ``factors`` is run; while the best one is the largest (smallest)
    of those tried and strictly better than its neighbour, one more factor, ``ratio`` times
    larger (smaller), is run, at most ``extend`` times (``ratio`` is the ratio of the two
    outermost factors on that side, 10 by default). The same rule serves every model.

    Returns
    -------
    factor : float
        The chosen factor.
    result : SolverResult
        Its run.
    tried : dict
        ``{factor: final objective}`` of every run.
    """
    runs = {float(f): run(float(f)) for f in factors}
    for _ in range(int(extend)):
        fs = sorted(runs)
        obj = [runs[f].final_objective for f in fs]
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
    best = min(fs, key=lambda f: runs[f].final_objective)  # ties: the smaller factor
    return best, runs[best], {f: float(runs[f].final_objective) for f in fs}


def fit_constrained(Xs, ys, constraint: str, radius, *, max_iter: int = N_ITER,
                    eta_factors=ETA_FACTORS, eta_extend: int = ETA_EXTEND):
    """Projected subgradient, average hinge loss, no intercept; ``eta0`` by training objective.

    ``eta0 = f * default_eta0`` with ``f`` chosen by :func:`choose_eta_factor` from
    ``eta_factors`` (widened at the edges at most ``eta_extend`` times); ``max_iter`` steps,
    best iterate.

    Returns
    -------
    W : ndarray of shape (n_features, n_tasks)
    seconds : float
        Time of all the runs (every step factor tried).
    info : dict
        ``eta_factor`` (chosen ``f``), ``objective`` (its training objective), ``tried``
        (``{f: objective}``).
    """
    data, _ = as_multitask_data(Xs, ys, classification=True)
    datafit = get_datafit("hinge", data, fit_intercept=False)
    ball = make_constraint(constraint, radius, data.n_tasks)
    base = default_eta0(datafit, ball, max_iter)
    t0 = time.perf_counter()

    def run(f):
        return projected_subgradient(datafit, ball, eta0=base * f, max_iter=max_iter, tol=0.0,
                                     iterate="best", warn=False)

    f, res, tried = choose_eta_factor(run, eta_factors, extend=eta_extend)
    secs = time.perf_counter() - t0
    return res.W, secs, {"eta_factor": f, "objective": res.final_objective, "tried": tried}


def fit_exact(Xs, ys, constraint: str, radius):
    """Average hinge loss, no intercept, exactly, as a linear program (``"l1inf"`` or ``"l1"``).

    See :func:`~multitask.solvers.lp.hinge_lp` (HiGHS interior point with crossover: a vertex
    solution).

    Returns
    -------
    W : ndarray of shape (n_features, n_tasks)
    seconds : float
        Time of the solve (assembling the program included).
    info : dict
        ``objective`` (training objective of ``W``) and ``lp_iterations``.
    """
    data, _ = as_multitask_data(Xs, ys, classification=True)
    datafit = get_datafit("hinge", data, fit_intercept=False)
    ball = make_constraint(constraint, radius, data.n_tasks)
    t0 = time.perf_counter()
    res = hinge_lp(datafit, ball)
    secs = time.perf_counter() - t0
    return res.W, secs, {"objective": res.final_objective, "lp_iterations": res.n_iter}


def _ball_of(model: str) -> str:
    """The constraint of a model name (``"l1inf_lp"`` -> ``"l1inf"``)."""
    return model[: -len("_lp")] if model.endswith("_lp") else model


def selection_scores(W: np.ndarray, relevant: np.ndarray) -> dict:
    """Precision, recall and count of the features nonzero in at least one task."""
    sel = np.flatnonzero(np.any(W != 0, axis=1))
    hit = np.intersect1d(sel, relevant).size
    return {"precision": hit / sel.size if sel.size else 0.0,
            "recall": hit / relevant.size if relevant.size else 1.0,
            "n_selected": float(sel.size)}


def task_error(W: np.ndarray, Xs, ys, b=None) -> float:
    """Test error averaged over tasks (prediction ``1`` when ``x^T w_t + b_t > 0``)."""
    errs = []
    for t, (X, y) in enumerate(zip(Xs, ys, strict=True)):
        s = X @ W[:, t] + (0.0 if b is None else b[t])
        errs.append(np.mean((np.asarray(s).ravel() > 0).astype(int) != y))
    return float(np.mean(errs))


def run_synthetic(sizes=SIZES, *, repeats: int = 1, n_features: int = 200, n_tasks: int = 60,
                  n_test: int = 1000, seed: int = 0, models=MODELS, max_iter: int = N_ITER,
                  eta_factors=ETA_FACTORS, eta_extend: int = ETA_EXTEND,
                  verbose: bool = False) -> dict:
    """Run the synthetic experiment; returns ``{(n_train, model, metric): [values]}``.

    Per repetition one ``W`` and one test set are drawn; a fresh training set per size.
    ``models`` may hold :data:`MODELS` (projected subgradient) and :data:`LP_MODELS` (the same
    balls solved exactly by :func:`fit_exact`), fitted on the same training sets.
    Metrics: ``test_error``, ``precision``, ``recall``, ``n_selected``, ``eta_factor`` (the
    chosen step factor; subgradient models only) and ``train_objective``;
    ``("seconds", n_train, model)`` keys hold the fit times (all step factors tried).
    """
    unknown = [mo for mo in models if mo not in MODELS + LP_MODELS]
    if unknown:
        raise ValueError(f"Unknown models {unknown}: choose from {MODELS + LP_MODELS}.")
    out: dict = {}
    for r in range(repeats):
        rng = np.random.default_rng(seed + r)
        base = make_paper_synthetic(1, n_test, n_features=n_features, n_tasks=n_tasks,
                                    rng=rng)
        W_true, relevant = base["W"], base["relevant"]
        Xte, yte = base["Xte"], base["yte"]
        for n in sizes:
            tr = make_paper_synthetic(int(n), 1, n_features=n_features, n_tasks=n_tasks,
                                      W=W_true, rng=rng)
            for model in models:
                ball = _ball_of(model)
                radius = constraint_norm(W_true, ball)  # oracle radii
                if model in LP_MODELS:
                    W, secs, info = fit_exact(tr["Xtr"], tr["ytr"], ball, radius)
                else:
                    W, secs, info = fit_constrained(tr["Xtr"], tr["ytr"], model, radius,
                                                    max_iter=max_iter, eta_factors=eta_factors,
                                                    eta_extend=eta_extend)
                vals = {"test_error": task_error(W, Xte, yte), **selection_scores(W, relevant),
                        "train_objective": info["objective"]}
                if "eta_factor" in info:
                    vals["eta_factor"] = info["eta_factor"]
                for metric, v in vals.items():
                    out.setdefault((int(n), model, metric), []).append(v)
                out.setdefault(("seconds", int(n), model), []).append(secs)
            if verbose:
                errs = "  ".join(f"{mo} {out[(int(n), mo, 'test_error')][-1]:.3f}"
                                 for mo in models)
                print(f"[{EXPERIMENT} synthetic] repeat {r + 1}/{repeats} n={n}: test error "
                      f"{errs}", file=sys.stderr, flush=True)
    return out


# --------------------------------------------------------------------------- real data
def _normalize_rows(X):
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        norms[norms == 0] = 1.0
        return sp.csr_matrix(sp.diags(1.0 / norms) @ X)
    X = np.asarray(X, dtype=np.float64)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return X / norms


def _mean_auc(W, b, Xs, ys) -> float:
    aucs = []
    for t, (X, y) in enumerate(zip(Xs, ys, strict=True)):
        if len(np.unique(y)) < 2:
            continue
        aucs.append(roc_auc_score(y, np.asarray(X @ W[:, t]).ravel() + b[t]))
    return float(np.mean(aucs))


def cv_radius(est, Xtr, ytr, grid, *, n_folds: int = 3, random_state=0, n_jobs=None,
              extend: int = RADIUS_EXTEND):
    """Choose ``radius`` by cross-validation, widening the grid when the choice is at an edge.

    ``grid`` is sorted; when the chosen radius is its largest (smallest) value, two more values
    beyond that edge, spaced by the ratio of the two outermost grid values, are added and the
    cross-validation is rerun on the wider grid (same folds), at most ``extend`` times. A
    choice still at the edge after that raises a ``UserWarning`` (the grid does not bracket
    the best radius).

    Returns
    -------
    cv : MultiTaskCV
        Fitted on the final grid (refitted at the chosen radius).
    grid : list of float
        The final grid.
    at_edge : bool
        Whether the chosen radius is at an edge of the final grid.
    """
    from multitask.estimators.cv import MultiTaskCV

    grid = sorted(float(g) for g in grid)
    for k in range(int(extend) + 1):
        cv = MultiTaskCV(est, param_grid={"radius": grid}, n_jobs=n_jobs, cv=n_folds,
                         random_state=random_state)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            cv.fit(Xtr, ytr)
        best = float(cv.best_params_["radius"])
        at_top, at_bottom = best >= grid[-1], best <= grid[0]
        if len(grid) < 2 or not (at_top or at_bottom) or k == int(extend):
            break
        if at_top:
            r = grid[-1] / grid[-2]
            grid = grid + [grid[-1] * r, grid[-1] * r * r]
        else:
            r = grid[1] / grid[0]
            grid = [grid[0] / (r * r), grid[0] / r] + grid
    at_edge = len(grid) > 1 and (best >= grid[-1] or best <= grid[0])
    if at_edge:
        warnings.warn(f"The radius chosen by cross-validation ({best:g}) is at the edge of the "
                      f"grid [{grid[0]:g}, {grid[-1]:g}] after {int(extend)} widenings.",
                      UserWarning, stacklevel=2)
    return cv, grid, at_edge


def run_real(Xs, ys, sizes, *, repeats: int = 3, seed: int = 0, grid=None, n_folds: int = 3,
             models=MODELS, max_iter: int = N_ITER, n_jobs=None, verbose=False) -> dict:
    """The three models on per-task data; radius by CV on the training part (see module doc).

    ``grid`` defaults to :data:`RADIUS_GRID` and is widened at an edge by :func:`cv_radius`.
    ``models`` may hold :data:`LP_MODELS` (``solver="lp"``, the exact hinge-loss solution).
    Metrics: ``test_error``, ``mean_auc``, ``n_selected``, ``radius`` (chosen) and
    ``radius_at_edge`` (1 when the choice is still at an edge of the widened grid).
    """
    from multitask.datasets import split_tasks

    grid = list(RADIUS_GRID if grid is None else grid)
    Xs = [_normalize_rows(X) for X in Xs]
    out: dict = {}
    for r in range(repeats):
        for n in sizes:
            Xtr, ytr, Xte, yte = split_tasks(Xs, ys, n_train=int(n), stratify=True,
                                             random_state=seed + 1000 * r + int(n))
            for model in models:
                solver = "lp" if model in LP_MODELS else "subgradient"
                est = L1InfClassifier(constraint=_ball_of(model), solver=solver,
                                      max_iter=max_iter, tol=0.0, fit_intercept=True)
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    cv, _, at_edge = cv_radius(est, Xtr, ytr, grid, n_folds=n_folds,
                                               random_state=seed + r, n_jobs=n_jobs)
                secs = time.perf_counter() - t0
                W, b = cv.coef_.T, cv.intercept_
                vals = {"test_error": task_error(W, Xte, yte, b),
                        "mean_auc": _mean_auc(W, b, Xte, yte),
                        "n_selected": float(np.sum(np.any(W != 0, axis=1))),
                        "radius": float(cv.best_params_["radius"]),
                        "radius_at_edge": float(at_edge)}
                for metric, v in vals.items():
                    out.setdefault((int(n), model, metric), []).append(v)
                out.setdefault(("seconds", int(n), model), []).append(secs)
            if verbose:
                errs = "  ".join(f"{mo} {out[(int(n), mo, 'test_error')][-1]:.3f} "
                                 f"(C={out[(int(n), mo, 'radius')][-1]:g})" for mo in models)
                print(f"[{EXPERIMENT}] repeat {r + 1}/{repeats} n={n}: test error {errs}",
                      file=sys.stderr, flush=True)
    return out


def _rows(dataset: str, res: dict, sizes, models, metrics) -> list[dict]:
    rows = []
    for n in sizes:
        for model in models:
            secs = res.get(("seconds", int(n), model), [])
            for metric in metrics:
                vals = res.get((int(n), model, metric))
                if vals is None:
                    continue
                rows.append(summarize(EXPERIMENT, dataset, f"n_train={n}", model, metric,
                                      vals, secs))
    return rows


def _print_table(rows: list[dict], metrics, methods=None, title: str | None = None) -> None:
    """Mean ± std per setting, two metrics (times the models) per block."""
    if methods is not None:
        rows = [r for r in rows if r["method"] in methods]
    if title:
        print(title)
    settings = list(dict.fromkeys(r["setting"] for r in rows))
    methods = list(dict.fromkeys(r["method"] for r in rows)) if methods is None else [
        m for m in methods if any(r["method"] == m for r in rows)]
    metrics = [k for k in metrics if any(r["metric"] == k for r in rows)]
    for start in range(0, len(metrics), 2):
        block = metrics[start:start + 2]
        head = "setting".ljust(14) + "".join(f"{m}:{k}".rjust(24) for k in block
                                             for m in methods)
        print(head)
        for s in settings:
            line = s.ljust(14)
            for k in block:
                for m in methods:
                    r = next((x for x in rows if x["setting"] == s and x["method"] == m
                              and x["metric"] == k), None)
                    line += (f"{r['mean']:.3f} ± {r['std']:.3f}" if r else "-").rjust(24)
            print(line)
        print()
    sys.stdout.flush()


def add_arguments(parser) -> None:
    parser.add_argument("--sizes", type=int, nargs="+", default=None,
                        help="training rows per task (default: 10 20 40 80 160 320 640 for "
                             "synthetic, 20 40 80 for letter, 20 50 100 for newsgroups)")
    parser.add_argument("--iterations", type=int, default=N_ITER,
                        help="projected subgradient iterations (default 200, the paper's)")
    parser.add_argument("--solver", choices=SOLVERS, default="subgradient",
                        help="subgradient (default): the paper's projected subgradient for "
                             "the three models; lp: in addition, l1,inf and l1 solved exactly "
                             "as linear programs (l1inf_lp, l1_lp; HiGHS), reported in an "
                             "extra table (l2 is not an LP)")


@register(
    EXPERIMENT,
    datasets=("synthetic", "letter", "newsgroups"),
    description="l1,inf joint sparsity (Quattoni, Carreras, Collins & Darrell): l1,inf vs "
    "independent l1 / l2 balls, projected subgradient (--solver lp: l1,inf and l1 also "
    "solved exactly as linear programs); synthetic Fig. 2 (test error, "
    "feature-selection precision/recall), Letter and 20 Newsgroups pairs.",
    add_arguments=add_arguments,
)
def run(args) -> list[dict]:
    quick = bool(getattr(args, "quick", False))
    dataset = args.dataset
    seed = int(getattr(args, "random_state", 0) or 0)
    iters = int(getattr(args, "iterations", N_ITER))
    if iters < 1:
        raise ValueError(f"--iterations must be >= 1, got {iters}.")
    repeats = getattr(args, "repeats", None)
    if repeats is not None and int(repeats) < 1:
        raise ValueError(f"--repeats must be >= 1, got {repeats}.")
    sizes = getattr(args, "sizes", None)
    solver = getattr(args, "solver", "subgradient") or "subgradient"
    if solver not in SOLVERS:
        raise ValueError(f"--solver must be one of {SOLVERS}, got {solver!r}.")
    models = MODELS + LP_MODELS if solver == "lp" else MODELS
    if dataset == "synthetic":
        if repeats is None:
            repeats = 1 if quick else 3
        if sizes is None:
            sizes = QUICK_SIZES if quick else SIZES
        kw = dict(n_tasks=30, n_test=500) if quick else dict(n_tasks=60, n_test=1000)
        res = run_synthetic(sizes, repeats=int(repeats), seed=seed, max_iter=iters,
                            models=models, verbose=True, **kw)
        metrics = ("test_error", "precision", "recall", "n_selected", "eta_factor",
                   "train_objective")
    elif dataset in ("letter", "newsgroups"):
        from multitask.datasets import load_letters, load_newsgroups

        loader = load_letters if dataset == "letter" else load_newsgroups
        bunch = loader(getattr(args, "data_dir", None))
        if repeats is None:
            repeats = 1 if quick else 5
        if sizes is None:
            sizes = (20, 40, 80) if dataset == "letter" else (20, 50, 100)
            if quick:
                sizes = sizes[:2]
        res = run_real(bunch.X, bunch.y, sizes, repeats=int(repeats), seed=seed,
                       max_iter=iters, n_jobs=getattr(args, "n_jobs", None), models=models,
                       verbose=True)
        metrics = ("test_error", "mean_auc", "n_selected", "radius", "radius_at_edge")
    else:
        raise ValueError(f"Unknown dataset {dataset!r}: choose synthetic, letter or newsgroups.")
    rows = _rows(dataset, res, sizes, models, metrics)
    _print_table(rows, metrics, MODELS,
                 "Projected subgradient (the paper's solver), "
                 f"{iters} iterations:" if solver == "lp" else None)
    if solver == "lp":
        _print_table(rows, [k for k in metrics if k != "eta_factor"], LP_MODELS + ("l2",),
                     "Exact solutions (linear programs, HiGHS) of l1,inf and l1, same training "
                     "sets; l2 (not an LP) by projected subgradient:")
    return rows
