"""Reproduction of the l1,inf experiments (Quattoni, Carreras, Collins & Darrell).

"A projected subgradient method for scalable multi-task learning", MIT-CSAIL-TR-2008-045.
Three models share one solver (projected subgradient on the average hinge loss, no intercept,
200 iterations, steps ``eta0 / sqrt(k)`` with ``eta0`` chosen by the training objective from
``{0.1, 1, 10}`` times the bound-optimal default); only the projection differs:

* ``l1inf``: joint ball ``sum_j max_t |W_jt| <= C``;
* ``l1``: independent per-task balls ``||w_t||_1 <= C_t``;
* ``l2``: independent per-task balls ``||w_t||_2 <= C_t``.

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
part); one radius ``C`` for all tasks chosen from a log grid by 3-fold cross-validation within
tasks on the training part (mean per-task ROC AUC); reported: test error and mean AUC.
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
from multitask.solvers.subgradient import default_eta0, projected_subgradient

EXPERIMENT = "l1inf"
MODELS = ("l1inf", "l1", "l2")
SIZES = (10, 20, 40, 80, 160, 320, 640)
QUICK_SIZES = (10, 20, 40, 80)
ETA_FACTORS = (0.1, 1.0, 10.0)
N_ITER = 200


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


def fit_constrained(Xs, ys, constraint: str, radius, *, max_iter: int = N_ITER,
                    eta_factors=ETA_FACTORS):
    """Projected subgradient, average hinge loss, no intercept; ``eta0`` by training objective.

    Returns ``(W (d, m), seconds)``.
    """
    data, _ = as_multitask_data(Xs, ys, classification=True)
    datafit = get_datafit("hinge", data, fit_intercept=False)
    ball = make_constraint(constraint, radius, data.n_tasks)
    base = default_eta0(datafit, ball, max_iter)
    t0 = time.perf_counter()
    res = projected_subgradient(datafit, ball, eta0=[base * f for f in eta_factors],
                                max_iter=max_iter, tol=0.0, iterate="best")
    return res.W, time.perf_counter() - t0


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
                  eta_factors=ETA_FACTORS, verbose: bool = False) -> dict:
    """Run the synthetic experiment; returns ``{(n_train, model, metric): [values]}``.

    Per repetition one ``W`` and one test set are drawn; a fresh training set per size.
    ``("seconds", n_train, model)`` keys hold the fit times.
    """
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
                radius = constraint_norm(W_true, model)  # oracle radii
                W, secs = fit_constrained(tr["Xtr"], tr["ytr"], model, radius,
                                          max_iter=max_iter, eta_factors=eta_factors)
                vals = {"test_error": task_error(W, Xte, yte), **selection_scores(W, relevant)}
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


def run_real(Xs, ys, sizes, *, repeats: int = 3, seed: int = 0, grid=None, n_folds: int = 3,
             models=MODELS, max_iter: int = N_ITER, n_jobs=None, verbose=False) -> dict:
    """The three models on per-task data; radius by CV on the training part (see module doc)."""
    from multitask.datasets import split_tasks
    from multitask.estimators.cv import MultiTaskCV

    grid = list(np.logspace(0, 2.5, 6) if grid is None else grid)
    Xs = [_normalize_rows(X) for X in Xs]
    out: dict = {}
    for r in range(repeats):
        for n in sizes:
            Xtr, ytr, Xte, yte = split_tasks(Xs, ys, n_train=int(n), stratify=True,
                                             random_state=seed + 1000 * r + int(n))
            for model in models:
                est = L1InfClassifier(constraint=model, max_iter=max_iter, tol=0.0,
                                      fit_intercept=True)
                cv = MultiTaskCV(est, param_grid={"radius": grid}, n_jobs=n_jobs,
                                 cv=n_folds, random_state=seed + r)
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    cv.fit(Xtr, ytr)
                secs = time.perf_counter() - t0
                W, b = cv.coef_.T, cv.intercept_
                vals = {"test_error": task_error(W, Xte, yte, b),
                        "mean_auc": _mean_auc(W, b, Xte, yte),
                        "n_selected": float(np.sum(np.any(W != 0, axis=1))),
                        "radius": float(cv.best_params_["radius"])}
                for metric, v in vals.items():
                    out.setdefault((int(n), model, metric), []).append(v)
                out.setdefault(("seconds", int(n), model), []).append(secs)
            if verbose:
                errs = "  ".join(f"{mo} {out[(int(n), mo, 'test_error')][-1]:.3f}"
                                 for mo in models)
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


def _print_table(rows: list[dict], metrics) -> None:
    settings = list(dict.fromkeys(r["setting"] for r in rows))
    methods = list(dict.fromkeys(r["method"] for r in rows))
    head = "setting".ljust(14) + "".join(f"{m}:{k}".rjust(22) for k in metrics for m in methods)
    print(head)
    for s in settings:
        line = s.ljust(14)
        for k in metrics:
            for m in methods:
                r = next((x for x in rows if x["setting"] == s and x["method"] == m
                          and x["metric"] == k), None)
                line += (f"{r['mean']:.3f} ± {r['std']:.3f}" if r else "-").rjust(22)
        print(line)
    sys.stdout.flush()


def add_arguments(parser) -> None:
    parser.add_argument("--sizes", type=int, nargs="+", default=None,
                        help="training rows per task (default: 10 20 40 80 160 320 640 for "
                             "synthetic, 10 20 40 for letter, 20 50 100 for newsgroups)")
    parser.add_argument("--iterations", type=int, default=N_ITER,
                        help="projected subgradient iterations (default 200, the paper's)")


@register(
    EXPERIMENT,
    datasets=("synthetic", "letter", "newsgroups"),
    description="l1,inf joint sparsity (Quattoni, Carreras, Collins & Darrell): l1,inf vs "
    "independent l1 / l2 balls, projected subgradient; synthetic Fig. 2 (test error, "
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
    if dataset == "synthetic":
        if repeats is None:
            repeats = 1 if quick else 3
        if sizes is None:
            sizes = QUICK_SIZES if quick else SIZES
        kw = dict(n_tasks=30, n_test=500) if quick else dict(n_tasks=60, n_test=1000)
        res = run_synthetic(sizes, repeats=int(repeats), seed=seed, max_iter=iters,
                            verbose=True, **kw)
        metrics = ("test_error", "precision", "recall", "n_selected")
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
                       max_iter=iters, n_jobs=getattr(args, "n_jobs", None), verbose=True)
        metrics = ("test_error", "mean_auc", "n_selected", "radius")
    else:
        raise ValueError(f"Unknown dataset {dataset!r}: choose synthetic, letter or newsgroups.")
    rows = _rows(dataset, res, sizes, MODELS, metrics)
    _print_table(rows, metrics[:2])
    return rows
