"""Han & Zhang, "Multi-stage multi-task learning with reduced rank" (AAAI 2016).

``python -m reproductions capped-trace --dataset {school,sarcos,letter,synthetic}``

* ``school``: 10%, 20%, 30% of each school's rows for training, the rest for testing (Table 4,
  rows 1). Pooled nMSE ``= sum_t ||y_t - f_t||^2 / (N_test * Var(all test targets))`` and the
  task-averaged variant ``(1/m) sum_t MSE_t / Var(y_t)`` (:func:`multitask.metrics.nmse`).
* ``sarcos``: 100, 200, 300 training rows drawn from the 4,449-row SARCOS file that is
  available (``sarcos_inv_test.mat``); the other rows are the test set (the paper tests on
  5,000 rows of the 48,933; Table 4, rows 2). The 7 torques share the design.
* ``letter``: the seven letter-pair tasks, 10% and 20% of each task's rows for training
  (stratified), test error in % pooled over tasks (Table 4, rows 5). Square loss on -1/+1
  labels for every method, as in the paper (the regressors, prediction ``sign``).
* ``synthetic``: Section 5 of the paper (Table 2, Figures 1 and 2): 20 tasks, 5 relevant + 10
  irrelevant features, columns of the true ``W`` drawn from ``N(0, omega diag(1, .64, .49,
  .36, .25))``, 50 training / 200 validation / 200 test rows per task, noise ``N(0, 1)``
  (:func:`multitask.datasets.make_joint_sparse_tasks`), ``omega in {5, 10, 15, 20}``,
  parameters chosen on the validation rows, 10 simulations. Metric
  ``MSE(W) = (1/(m n)) sum_t (w_t - w*_t)^T X_t^T X_t (w_t - w*_t)`` on the training design
  (and on the test design), :func:`multitask.metrics.design_mse`.

Methods, all public estimators: Lasso (:class:`~multitask.IndependentLassoRegressor`) and
ridge regression (:class:`~multitask.IndependentRidgeRegressor`; independent tasks, one shared
``alpha``), MTFL (the trace norm, :class:`~multitask.TraceNormRegressor`) and RAMUSA (the
capped trace norm, :class:`~multitask.CappedTraceRegressor`, at most 10 stages). On the real
data ``alpha`` (and ``tau`` for RAMUSA) are chosen by ``--folds``-fold cross-validation inside
the training part (:func:`multitask.model_selection.cross_validate_grid`: folds drawn within
each task, rows of a shared design split once for all tasks; ``alpha`` a warm-started path,
no widening) on the validation mean squared error (Letter: the error rate, ties broken by the
squared error). The ``tau`` grid is the paper's ``{1e-3, ..., 1e3}`` plus ``inf`` (the trace
norm, so that CV can fall back to MTFL), listed from ``inf`` down: ties go to the largest
``tau``, then to the largest ``alpha``. Solver budgets on the library's relative optimality
measure: ``max_iter = 200``, ``tol = 1e-5`` per inner solve in the CV; the selected setting is
refitted on the whole training part with ``max_iter = 2000``, ``tol = 1e-7``.

Preprocessing (``--intercept auto``): School follows the paper's model, which has no intercept:
the 27 features are divided by their pooled training standard deviation (not centred, so the
three exam-year indicators still span each school's level), ``fit_intercept=False``. SARCOS
and Letter use unpenalized per-task intercepts (features z-scored on the training rows for
SARCOS, raw binary pixels for Letter). ``--intercept yes`` gives School per-task intercepts
with z-scored features instead.

``--out`` receives ``capped_trace_splits.csv`` (real data: per split and method, the test
metrics and the chosen parameters) or, for ``synthetic``, ``capped_trace_tau_curve.csv``
(Figure 1: RAMUSA's error against ``tau``, ``alpha`` chosen on the validation rows for each
``tau``, with the trace norm's), ``capped_trace_stages.csv`` (Figure 2: ``||W^(l) - W*||_*``
after each stage at ``tau = 1`` and MTFL's ``alpha``, from a configured
:class:`~multitask.solvers.Multistage` that keeps its stages) and the plot
``capped_trace_synthetic.png``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
from sklearn.base import clone
from threadpoolctl import threadpool_limits

from multitask import (
    CappedTraceRegressor,
    IndependentLassoRegressor,
    IndependentRidgeRegressor,
    TraceNormRegressor,
)
from multitask.datasets import (
    load_letters,
    load_sarcos,
    load_school,
    make_joint_sparse_tasks,
    split_shared,
    split_tasks,
)
from multitask.metrics import design_mse, error_rate, nmse, weight_error
from multitask.model_selection import cross_validate_grid
from multitask.solvers import Multistage
from reproductions.common import log, quiet, summarize, timer, write_csv

NAME = "capped-trace"
DATASETS = ("school", "sarcos", "letter", "synthetic")
DESCRIPTION = ("Capped trace norm, multi-stage RAMUSA (Han & Zhang, AAAI 2016): Tables 2 and "
               "4, Figures 1-2.")
METHODS = ("Lasso", "RR", "MTFL", "RAMUSA")

#: Table 4 of the paper: mean and standard deviation over 15 repetitions.
PAPER_TABLE4: dict[str, dict[str, dict[str, tuple[float, float]]]] = {
    "school": {
        "10%": {"Lasso": (2.283, 0.008), "RR": (1.854, 0.026), "MTFL": (0.570, 0.015),
                "RAMUSA": (0.518, 0.012)},
        "20%": {"Lasso": (2.129, 0.130), "RR": (1.694, 0.028), "MTFL": (0.483, 0.007),
                "RAMUSA": (0.458, 0.005)},
        "30%": {"Lasso": (2.080, 0.111), "RR": (1.650, 0.028), "MTFL": (0.452, 0.005),
                "RAMUSA": (0.436, 0.004)},
    },
    "sarcos": {
        "100": {"Lasso": (2.606, 0.035), "RR": (2.439, 0.021), "MTFL": (0.181, 0.010),
                "RAMUSA": (0.170, 0.010)},
        "200": {"Lasso": (2.604, 0.035), "RR": (2.289, 0.027), "MTFL": (0.159, 0.007),
                "RAMUSA": (0.146, 0.006)},
        "300": {"Lasso": (2.620, 0.030), "RR": (2.221, 0.026), "MTFL": (0.136, 0.003),
                "RAMUSA": (0.137, 0.004)},
    },
    "letter": {
        "10%": {"Lasso": (31.74, 16.30), "RR": (31.22, 21.22), "MTFL": (13.45, 7.50),
                "RAMUSA": (11.64, 7.58)},
        "20%": {"Lasso": (31.73, 17.61), "RR": (31.08, 20.95), "MTFL": (11.86, 6.49),
                "RAMUSA": (8.48, 6.08)},
    },
}

#: Table 2 of the paper (synthetic data, MSE over 10 simulations).
PAPER_TABLE2: dict[int, dict[str, tuple[float, float]]] = {
    5: {"Lasso": (0.762, 0.223), "RR": (1.264, 0.253), "MTFL": (0.210, 0.018),
        "RAMUSA": (0.205, 0.021)},
    10: {"Lasso": (0.888, 0.289), "RR": (1.405, 0.382), "MTFL": (0.232, 0.043),
         "RAMUSA": (0.227, 0.051)},
    15: {"Lasso": (0.917, 0.314), "RR": (1.640, 0.497), "MTFL": (0.261, 0.029),
         "RAMUSA": (0.212, 0.040)},
    20: {"Lasso": (0.922, 0.274), "RR": (1.488, 0.333), "MTFL": (0.283, 0.038),
         "RAMUSA": (0.230, 0.037)},
}
OMEGAS = (5, 10, 15, 20)
NMSE_POOLED = "nMSE (pooled: SSE / (N_test * Var(y_test)))"
NMSE_TASK = "nMSE (task-avg: mean_t MSE_t / Var(y_t))"
ERROR = "test error (%)"
PAPER_SUFFIX = " [paper]"


# ----------------------------------------------------------------------------- configuration
@dataclass
class Config:
    """Grids and solver budgets of one run."""

    n_lams: int = 8
    lam_ratio: float = 1e-2
    taus: tuple = (1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0, np.inf)
    n_folds: int = 5
    n_stages: int = 10
    stage_solver: str = "prox"
    cv_max_iter: int = 200
    cv_tol: float = 1e-5
    final_max_iter: int = 2000
    final_tol: float = 1e-7
    n_ridge: int = 12
    lasso_ratio: float = 1e-3


def paper_taus(fine: bool = False) -> tuple:
    """The paper's ``tau`` grid ``{1e-3, ..., 1e3}`` (quarter decades with ``fine``) + inf."""
    step = 0.25 if fine else 1.0
    return (*(10.0 ** np.arange(-3, 3 + 1e-9, step)), np.inf)


def make_config(args) -> Config:
    """The configuration of a run from the command-line options."""
    cfg = Config()
    cfg.taus = paper_taus(getattr(args, "tau_grid", "paper") == "fine")
    cfg.stage_solver = getattr(args, "stage_solver", None) or "prox"
    if getattr(args, "n_lambdas", None):
        cfg.n_lams = int(args.n_lambdas)
    if getattr(args, "lambda_ratio", None):
        cfg.lam_ratio = float(args.lambda_ratio)
    if getattr(args, "folds", None):
        cfg.n_folds = int(args.folds)
    if getattr(args, "quick", False):
        cfg.n_lams = min(cfg.n_lams, 5)
        cfg.n_folds = min(cfg.n_folds, 3)
        cfg.cv_max_iter = 100
        cfg.final_max_iter = 500
        cfg.n_ridge = 8
    return cfg


def add_arguments(parser) -> None:
    """Options of this reproduction."""
    parser.add_argument("--tau-grid", choices=("paper", "fine"), default="paper",
                        help="tau candidates: the paper's decades 1e-3..1e3 (default) or "
                             "quarter decades; inf is always added")
    parser.add_argument("--n-lambdas", type=int, default=None,
                        help="size of the alpha grid (default 8; 5 with --quick)")
    parser.add_argument("--lambda-ratio", type=float, default=None,
                        help="smallest alpha / alpha_max of the trace-norm grid (default 1e-2)")
    parser.add_argument("--folds", type=int, default=None,
                        help="cross-validation folds (default 5; 3 with --quick)")
    parser.add_argument("--intercept", choices=("auto", "yes", "no"), default="auto",
                        help="per-task unpenalized intercepts (auto: no for school and "
                             "synthetic, as in the paper; yes for sarcos and letter)")
    parser.add_argument("--stage-solver", choices=("prox", "dc"), default="prox",
                        help="solver of the RAMUSA stages (default prox: PSVT)")
    parser.add_argument("--omegas", type=float, nargs="+", default=None,
                        help="synthetic: the values of omega (default 5 10 15 20, the paper's)")


# ----------------------------------------------------------------------------- models, grids
def estimators(fit_intercept: bool, cfg: Config, final: bool = False) -> dict:
    """The four methods' estimators with the CV (or, with ``final``, the refit) budgets."""
    budget = ({"max_iter": cfg.final_max_iter, "tol": cfg.final_tol} if final else
              {"max_iter": cfg.cv_max_iter, "tol": cfg.cv_tol})
    common = {"fit_intercept": fit_intercept, **budget}
    return {
        "Lasso": IndependentLassoRegressor(**common),
        "RR": IndependentRidgeRegressor(fit_intercept=fit_intercept),
        "MTFL": TraceNormRegressor(**common),
        "RAMUSA": CappedTraceRegressor(n_stages=cfg.n_stages, stage_solver=cfg.stage_solver,
                                       **common),
    }


def grids(X, y, fit_intercept: bool, cfg: Config, taus=None) -> dict[str, dict]:
    """Explicit grids on the training data (lists of per-task designs or a shared design).

    Trace norm and RAMUSA: ``cfg.n_lams`` values of ``alpha`` from ``alpha_max 10^-(2/8)``
    down to ``cfg.lam_ratio * alpha_max`` (the trace norm's ``alpha_max``); Lasso the same
    count down to ``1e-3`` of its own; ridge ``s 10^{1..-4}`` with ``s`` the mean squared
    feature value; ``tau`` from the largest (``inf``) down.
    """
    est = estimators(fit_intercept, cfg)
    trace_max = est["MTFL"].alpha_max(X, y)
    lasso_max = est["Lasso"].alpha_max(X, y)
    trace = trace_max * np.logspace(0.0, np.log10(cfg.lam_ratio), cfg.n_lams + 1)[1:]
    lasso = lasso_max * np.logspace(0.0, np.log10(cfg.lasso_ratio), cfg.n_lams + 1)[1:]
    designs = X if isinstance(X, list) else [X]
    scale = float(np.mean([np.mean(np.asarray(Xt) ** 2) for Xt in designs]))
    taus = sorted(cfg.taus if taus is None else taus, reverse=True)
    return {"Lasso": {"alpha": list(lasso)},
            "RR": {"alpha": list(max(scale, 1e-12) * np.logspace(1, -4, cfg.n_ridge))},
            "MTFL": {"alpha": list(trace)},
            "RAMUSA": {"alpha": list(trace), "tau": [float(t) for t in taus]}}


def error_scorer(est, X, y) -> float:
    """Classification (-1/+1 targets, square loss): ``-(error rate + 1e-6 * MSE)``.

    The error rate decides; the mean squared error (at most a few units) only breaks ties.
    """
    pred = np.asarray(est.predict(X), dtype=float)
    y = np.asarray(y, dtype=float)
    return -(error_rate(y, pred, threshold=0.0) + 1e-6 * float(np.mean((pred - y) ** 2)))


def best_of(res) -> dict:
    """The first candidate of largest mean score of a :func:`cross_validate_grid` result."""
    scores = np.where(np.isnan(res.mean_scores), -np.inf, res.mean_scores)
    return dict(res.candidates[int(np.argmax(scores))])


# ----------------------------------------------------------------------------- data sets
def school_split(ratio: float, seed: int, intercept: bool, data_dir=None):
    """Per-school split; features scaled by the pooled training deviation (centred with
    ``intercept``)."""
    sch = load_school()
    Xtr, ytr, Xte, yte = split_tasks(sch.X, sch.y, train_ratio=ratio, random_state=seed)
    A = np.vstack(Xtr)
    sd = A.std(axis=0)
    sd[sd == 0] = 1.0
    mu = A.mean(axis=0) if intercept else np.zeros(A.shape[1])
    return [(X - mu) / sd for X in Xtr], ytr, [(X - mu) / sd for X in Xte], yte


def sarcos_split(n_train: int, seed: int, intercept: bool, data_dir=None):
    """``n_train`` random rows of the shared design; features z-scored on them."""
    data = load_sarcos(data_dir)
    Xtr, Ytr, Xte, Yte = split_shared(data.X, data.Y, n_train=int(n_train),
                                      random_state=np.random.default_rng(seed))
    mu = Xtr.mean(axis=0) if intercept else np.zeros(Xtr.shape[1])
    sd = Xtr.std(axis=0)
    sd[sd == 0] = 1.0
    return (Xtr - mu) / sd, Ytr, (Xte - mu) / sd, Yte


def letter_split(ratio: float, seed: int, intercept: bool, data_dir=None):
    """Stratified per-task split of the letter pairs, labels -1/+1."""
    data = load_letters(data_dir)
    ys = [2.0 * y - 1.0 for y in data.y]
    return tuple(split_tasks(data.X, ys, train_ratio=ratio, random_state=seed, stratify=True))


REAL = {
    "school": (school_split, (0.1, 0.2, 0.3), lambda s: f"{round(100 * s)}%"),
    "sarcos": (sarcos_split, (100, 200, 300), str),
    "letter": (letter_split, (0.1, 0.2), lambda s: f"{round(100 * s)}%"),
}


def use_intercept(args, dataset: str) -> bool:
    """``--intercept``: auto is no for School and the synthetic data, yes otherwise."""
    choice = getattr(args, "intercept", "auto") or "auto"
    if choice == "auto":
        return dataset in ("sarcos", "letter")
    return choice == "yes"


# ----------------------------------------------------------------------------- real data
def run_real_split(dataset: str, setting, seed: int, cfg: Config, intercept: bool,
                   data_dir=None, n_jobs=None) -> dict:
    """One repetition on a real data set: CV, refits, test metrics per method."""
    split_fn = REAL[dataset][0]
    classification = dataset == "letter"
    scoring = error_scorer if classification else "neg_mean_squared_error"
    with threadpool_limits(1):
        Xtr, ytr, Xte, yte = split_fn(setting, seed, intercept, data_dir)
        grid = grids(Xtr, ytr, intercept, cfg)
        cv_est = estimators(intercept, cfg)
        final = estimators(intercept, cfg, final=True)
        out: dict = {"methods": {}}
        for method in METHODS:
            with timer() as tm, quiet():
                res = cross_validate_grid(cv_est[method], Xtr, ytr, param_grid=grid[method],
                                          cv=cfg.n_folds, scoring=scoring, widen=0,
                                          random_state=seed + 7919, n_jobs=n_jobs)
                best = best_of(res)
                model = clone(final[method]).set_params(**best).fit(Xtr, ytr)
            pred = model.predict(Xte)
            if classification:
                metrics = {ERROR: 100.0 * error_rate(yte, pred, threshold=0.0)}
            else:
                metrics = {NMSE_POOLED: nmse(yte, pred, average="pooled"),
                           NMSE_TASK: nmse(yte, pred, average="task")}
            info = dict(best)
            if method == "RAMUSA":
                info.update(rank=int(model.rank_), n_stages=int(model.n_stages_))
            out["methods"][method] = {"metrics": metrics, "seconds": tm["seconds"],
                                      "params": info}
    return out


def paper_rows(dataset: str, setting: str, metric: str, table: dict) -> list[dict]:
    """The paper's values as result rows (metric suffixed ``[paper]``)."""
    rows = []
    for method, (mean, std) in table.items():
        row = summarize(NAME, dataset, setting, method, metric + PAPER_SUFFIX, [mean])
        row["std"] = std
        row["repeats"] = 15 if dataset != "synthetic" else 10
        rows.append(row)
    return rows


def run_real(args, dataset: str, cfg: Config) -> list[dict]:
    """Every setting and repetition of a real data set; rows and ``capped_trace_splits.csv``."""
    _, settings, label = REAL[dataset]
    repeats = args.repeats if getattr(args, "repeats", None) else (2 if args.quick else 15)
    intercept = use_intercept(args, dataset)
    seed0 = int(getattr(args, "random_state", 0) or 0)
    rows, choices = [], []
    metrics = [ERROR] if dataset == "letter" else [NMSE_POOLED, NMSE_TASK]
    for s in settings:
        res = []
        for r in range(repeats):
            res.append(run_real_split(dataset, s, seed0 * 1000 + r, cfg, intercept,
                                      getattr(args, "data_dir", None),
                                      getattr(args, "n_jobs", None)))
            ours = {m: v["metrics"][metrics[0]] for m, v in res[-1]["methods"].items()}
            log(NAME, f"{dataset} {label(s)} repetition {r + 1}/{repeats}: "
                + ", ".join(f"{m} {v:.4f}" for m, v in ours.items())
                + f" (RAMUSA {res[-1]['methods']['RAMUSA']['params']})")
        for method in METHODS:
            secs = [r["methods"][method]["seconds"] for r in res]
            for metric in metrics:
                vals = [r["methods"][method]["metrics"][metric] for r in res]
                rows.append(summarize(NAME, dataset, label(s), method, metric, vals, secs))
            for i, r in enumerate(res):
                choices.append({"dataset": dataset, "setting": label(s), "repeat": i,
                                "method": method, **r["methods"][method]["metrics"],
                                **r["methods"][method]["params"],
                                "seconds": r["methods"][method]["seconds"]})
        paper_metric = ERROR if dataset == "letter" else "nMSE"
        rows.extend(paper_rows(dataset, label(s), paper_metric, PAPER_TABLE4[dataset][label(s)]))
    if getattr(args, "out", None):
        write_csv(choices, os.path.join(args.out, "capped_trace_splits.csv"))
    print_side_by_side(dataset, rows, metrics[0])
    return rows


def print_side_by_side(dataset: str, rows: list[dict], metric: str) -> None:
    """Our first metric against the paper's, per setting and method."""
    ours = {(r["setting"], r["method"]): r for r in rows if r["metric"] == metric}
    paper = {(r["setting"], r["method"]): r for r in rows if r["metric"].endswith(PAPER_SUFFIX)}
    print(f"{dataset}: {metric} (ours) vs the paper")
    for key, r in ours.items():
        p = paper.get(key)
        ptxt = f"{p['mean']:.3f} +- {p['std']:.3f}" if p else "-"
        print(f"  {key[0]:>6} {key[1]:>7}: {r['mean']:.3f} +- {r['std']:.3f}   paper {ptxt}")
    print(flush=True)


# ----------------------------------------------------------------------------- synthetic
def synthetic_data(omega: float, rng, *, n_tasks: int = 20, n_train: int = 50,
                   n_val: int = 200, n_test: int = 200, n_irrelevant: int = 10):
    """The synthetic data of Section 5 of the paper (a ``Bunch``: ``W_true``, ``X``, ``y``,
    ``X_val``, ``y_val``, ``X_test``, ``y_test``)."""
    return make_joint_sparse_tasks(
        n_tasks=n_tasks, n_features=5 + n_irrelevant, n_samples=n_train, n_val=n_val,
        n_test=n_test, n_relevant=5, support=np.arange(5),
        feature_scale=np.sqrt(omega) * np.array([1.0, 0.8, 0.7, 0.6, 0.5]), noise=1.0,
        random_state=rng)


def holdout(Xs, ys, Xv, yv):
    """Training and validation rows stacked per task, and the one ``(train, test)`` split
    in the row order of :func:`cross_validate_grid` (tasks one after the other)."""
    X = [np.vstack([a, b]) for a, b in zip(Xs, Xv, strict=True)]
    y = [np.concatenate([a, b]) for a, b in zip(ys, yv, strict=True)]
    train, test, start = [], [], 0
    for a, b in zip(Xs, Xv, strict=True):
        train.append(np.arange(start, start + len(a)))
        test.append(np.arange(start + len(a), start + len(a) + len(b)))
        start += len(a) + len(b)
    return X, y, [(np.concatenate(train), np.concatenate(test))]


def synthetic_trial(omega: float, seed: int, cfg: Config, fine_taus=None,
                    stage_tau: float | None = 1.0, *, sizes: dict | None = None) -> dict:
    """One simulation: validation-selected Lasso, RR, OLS, MTFL, RAMUSA and their errors.

    Every candidate is fitted on the training rows (refit budget) and scored on the
    validation rows (mean squared error). Returns ``{"methods": {name: {"mse_train",
    "mse_test", "params"}}, "tau_curve": ..., "stages": ...}``: ``tau_curve`` (with
    ``fine_taus``) gives, for each ``tau``, the error of RAMUSA with ``alpha`` chosen on the
    validation rows for that ``tau``; ``stages`` (with ``stage_tau``) the trace-norm error
    ``||W^(l) - W*||_*`` after each stage at that ``tau`` and MTFL's ``alpha``.
    """
    data = synthetic_data(omega, np.random.default_rng(seed), **(sizes or {}))
    Wt = data.W_true
    Xs, ys, Xte = data.X, data.y, data.X_test
    X_all, y_all, cv = holdout(Xs, ys, data.X_val, data.y_val)
    taus = sorted(set(cfg.taus) | set([] if fine_taus is None else list(fine_taus)),
                  reverse=True)
    grid = grids(Xs, ys, False, cfg, taus=taus)
    final = estimators(False, cfg, final=True)
    out: dict = {"methods": {}}
    paper = set(float(t) for t in cfg.taus)
    fitted = {}
    for name in METHODS:
        with quiet():
            res = cross_validate_grid(final[name], X_all, y_all, param_grid=grid[name], cv=cv,
                                      scoring="neg_mean_squared_error", widen=0)
        scores = np.where(np.isnan(res.mean_scores), -np.inf, res.mean_scores)
        if name == "RAMUSA":  # select on the paper's grid only
            ok = np.array([c["tau"] in paper for c in res.candidates])
            scores = np.where(ok, scores, -np.inf)
        best = dict(res.candidates[int(np.argmax(scores))])
        with quiet():
            W = clone(final[name]).set_params(**best).fit(Xs, ys).coef_.T
        fitted[name] = (res, W)
        out["methods"][name] = {"mse_train": design_mse(Wt, W, Xs),
                                "mse_test": design_mse(Wt, W, Xte), "params": best}
    W_ols = IndependentRidgeRegressor(alpha=0.0, fit_intercept=False).fit(Xs, ys).coef_.T
    out["methods"]["OLS"] = {"mse_train": design_mse(Wt, W_ols, Xs),
                             "mse_test": design_mse(Wt, W_ols, Xte), "params": {}}
    if fine_taus is not None:
        res, _ = fitted["RAMUSA"]
        curve = []
        for tau in fine_taus:
            idx = [k for k, c in enumerate(res.candidates) if c["tau"] == tau]
            k = idx[int(np.nanargmax(res.mean_scores[idx]))]
            with quiet():
                W = clone(final["RAMUSA"]).set_params(**res.candidates[k]).fit(Xs, ys).coef_.T
            curve.append((float(tau), design_mse(Wt, W, Xs), res.candidates[k]["alpha"]))
        out["tau_curve"] = curve
    if stage_tau is not None:
        solver = Multistage(n_stages=cfg.n_stages, stage_solver=cfg.stage_solver,
                            max_iter=cfg.final_max_iter, tol=cfg.final_tol, keep_stages=True,
                            warn=False)
        est = CappedTraceRegressor(alpha=out["methods"]["MTFL"]["params"]["alpha"],
                                   tau=stage_tau, fit_intercept=False, solver=solver)
        with quiet():
            est.fit(Xs, ys)
        out["stages"] = [weight_error(Wt, Wl, norm="nuclear")
                         for Wl in est.solver_info_["stage_coefs"]]
    return out


def run_synthetic(args, cfg: Config) -> list[dict]:
    """Table 2 and Figures 1-2 (rows; CSV files and the figure with ``--out``)."""
    repeats = args.repeats if getattr(args, "repeats", None) else (2 if args.quick else 10)
    seed0 = int(getattr(args, "random_state", 0) or 0)
    fine = np.asarray(paper_taus(fine=not args.quick)[:-1])  # --quick: the curve on decades
    rows, curve_rows, stage_rows = [], [], []
    omegas = [int(w) if float(w).is_integer() else float(w)
              for w in (getattr(args, "omegas", None) or OMEGAS)]
    for w in omegas:
        with threadpool_limits(1):
            res = [synthetic_trial(w, seed0 * 1000 + r, cfg, fine, 1.0) for r in range(repeats)]
        log(NAME, f"synthetic omega={w}: {repeats} simulations done")
        for method in ("Lasso", "RR", "OLS", "MTFL", "RAMUSA"):
            for key, metric in (("mse_train", "MSE (training design)"),
                                ("mse_test", "MSE (test design)")):
                vals = [r["methods"][method][key] for r in res]
                rows.append(summarize(NAME, "synthetic", f"omega={w}", method, metric, vals))
        if w in PAPER_TABLE2:
            rows.extend(paper_rows("synthetic", f"omega={w}", "MSE", PAPER_TABLE2[w]))
        mtfl = [r["methods"]["MTFL"]["mse_train"] for r in res]
        for j, tau in enumerate(fine):
            vals = [r["tau_curve"][j][1] for r in res]
            curve_rows.append({"omega": w, "tau": tau, "ramusa_mse": float(np.mean(vals)),
                               "ramusa_std": float(np.std(vals)),
                               "trace_mse": float(np.mean(mtfl))})
        n_max = max(len(r.get("stages", [])) for r in res)
        for ell in range(n_max):
            vals = [r["stages"][min(ell, len(r["stages"]) - 1)] for r in res if r.get("stages")]
            stage_rows.append({"omega": w, "stage": ell + 1,
                               "err_trace_norm": float(np.mean(vals)),
                               "std": float(np.std(vals))})
    print_side_by_side("synthetic", rows, "MSE (training design)")
    out = getattr(args, "out", None)
    if out:
        write_csv(curve_rows, os.path.join(out, "capped_trace_tau_curve.csv"))
        write_csv(stage_rows, os.path.join(out, "capped_trace_stages.csv"))
        plot_synthetic(curve_rows, stage_rows, os.path.join(out, "capped_trace_synthetic.png"),
                       omegas)
    return rows


def plot_synthetic(curve_rows, stage_rows, path, omegas=OMEGAS) -> bool:
    """Figure 1 (error against ``tau``) and Figure 2 (error per stage) side by side."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # plotting is optional
        return False
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for w in omegas:
        cr = [r for r in curve_rows if r["omega"] == w]
        if not cr:
            continue
        line = axes[0].semilogx([r["tau"] for r in cr], [r["ramusa_mse"] for r in cr],
                                marker="o", ms=3, label=f"RAMUSA, omega={w}")
        axes[0].axhline(cr[0]["trace_mse"], ls="--", color=line[0].get_color(), lw=1)
        sr = [r for r in stage_rows if r["omega"] == w]
        axes[1].plot([r["stage"] for r in sr], [r["err_trace_norm"] for r in sr], marker="o",
                     ms=3, label=f"omega={w}")
    axes[0].set_xlabel("tau")
    axes[0].set_ylabel("MSE (training design)")
    axes[0].set_title("RAMUSA vs tau (dashed: trace norm)")
    axes[0].legend(fontsize=7)
    axes[1].set_xlabel("stage l")
    axes[1].set_ylabel("||W^(l) - W*||_*")
    axes[1].set_title("error per stage, tau = 1, MTFL's alpha")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def run(args) -> list[dict]:
    """Run the reproduction for ``args.dataset``; returns result rows (module docstring)."""
    dataset = getattr(args, "dataset", None) or DATASETS[0]
    if dataset not in DATASETS:
        raise ValueError(f"dataset must be one of {DATASETS}, got {dataset!r}.")
    cfg = make_config(args)
    if dataset == "synthetic":
        return run_synthetic(args, cfg)
    return run_real(args, dataset, cfg)
