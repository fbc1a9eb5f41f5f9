"""Reproduction of Han & Zhang, "Multi-stage multi-task learning with reduced rank" (AAAI 2016).

``multitask reproduce capped-trace --dataset {school,sarcos,letter,synthetic}``

* ``school``: 10%, 20%, 30% of each school's rows for training, the rest for testing (Table 4,
  rows 1). Pooled nMSE ``= sum_t ||y_t - f_t||^2 / (N_test * Var(all test targets))`` and the
  task-averaged variant ``(1/m) sum_t MSE_t / Var(y_t)``.
* ``sarcos``: 100, 200, 300 training rows drawn from the 4,449-row SARCOS file that is
  available (``sarcos_inv_test.mat``); the other rows are the test set (the paper tests on
  5,000 rows of the 48,933; Table 4, rows 2).
* ``letter``: the seven letter-pair tasks, 10% and 20% of each task's rows for training
  (stratified), test error in % pooled over tasks (Table 4, rows 5). Square loss on -1/+1
  labels for every method, as in the paper.
* ``synthetic``: Section 5 of the paper (Table 2, Figures 1 and 2): 20 tasks, 5 relevant + 10
  irrelevant features, columns of the true ``W`` drawn from ``N(0, omega diag(1, .64, .49,
  .36, .25))``, 50 training / 200 validation / 200 test rows per task, noise ``N(0, 1)``,
  ``omega in {5, 10, 15, 20}``, parameters chosen on the validation rows, 10 simulations.
  Metric ``MSE(W) = (1/(m n)) sum_t (w_t - w*_t)^T X_t^T X_t (w_t - w*_t)`` on the training
  design (and on the test design).

Methods: Lasso and ridge regression (independent tasks, one shared ``alpha``), MTFL (trace
norm, stage 1 of RAMUSA) and RAMUSA (capped trace norm). On the real data ``alpha`` (and
``tau`` for RAMUSA) are chosen by ``--folds``-fold cross-validation inside the training part
(folds drawn within each task; rows of a shared design split once for all tasks) on pooled
validation squared error (classification: error count, ties broken by squared error). The
``tau`` grid is the paper's ``{1e-3, ..., 1e3}`` plus ``inf`` (the trace norm, so that CV can
fall back to MTFL); ties go to the largest ``tau``, then the largest ``alpha``. The trace-norm
stage is shared by all ``tau`` and warm-started along a decreasing ``alpha`` grid
(:func:`multitask.solvers.multistage.multistage_path`).

Preprocessing (``--intercept auto``): School follows the paper's model, which has no intercept:
the 27 features are divided by their pooled training standard deviation (not centred, so the
three exam-year indicators still span each school's level), ``fit_intercept=False``. SARCOS
and Letter use unpenalized per-task intercepts (features z-scored on the training rows for
SARCOS, raw binary pixels for Letter). ``--intercept yes`` gives School per-task intercepts
with z-scored features instead.

Besides the rows (``results.csv``, written by the command line), ``--out`` receives
``capped_trace_splits.csv`` (real data: per split and method, the test metrics and the chosen
parameters) or, for ``synthetic``, ``capped_trace_tau_curve.csv`` (Figure 1: RAMUSA's error
against ``tau``, ``alpha`` chosen on the validation rows for each ``tau``, with the trace
norm's), ``capped_trace_stages.csv`` (Figure 2: ``||W^(l) - W*||_*`` after each stage at
``tau = 1`` and MTFL's ``alpha``) and the plot ``capped_trace_synthetic.png``.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

from multitask.data import as_multitask_data
from multitask.experiments._common import summarize
from multitask.experiments.registry import register
from multitask.losses import Squared
from multitask.penalties import L1
from multitask.penalties.capped_trace import singular_values
from multitask.solvers.fista import fista
from multitask.solvers.multistage import multistage, multistage_path, solve_stage

EXPERIMENT = "capped-trace"
DATASETS = ("school", "sarcos", "letter", "synthetic")
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
    stage_solver: str = "psvt"
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


def _config(args) -> Config:
    quick = bool(getattr(args, "quick", False))
    cfg = Config()
    cfg.taus = paper_taus(getattr(args, "tau_grid", "paper") == "fine")
    cfg.stage_solver = getattr(args, "stage_solver", None) or "psvt"
    if getattr(args, "n_lambdas", None):
        cfg.n_lams = int(args.n_lambdas)
    if getattr(args, "lambda_ratio", None):
        cfg.lam_ratio = float(args.lambda_ratio)
    if getattr(args, "folds", None):
        cfg.n_folds = int(args.folds)
    if quick:
        cfg.n_lams = min(cfg.n_lams, 5)
        cfg.n_folds = min(cfg.n_folds, 3)
        cfg.cv_max_iter = 100
        cfg.final_max_iter = 500
        cfg.n_ridge = 8
    return cfg


def _add_arguments(parser: argparse.ArgumentParser) -> None:
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
    parser.add_argument("--stage-solver", choices=("psvt", "dc"), default="psvt",
                        help="solver of the RAMUSA stages")


# ----------------------------------------------------------------------------- model fitting
def _datafit(Xs, ys, fit_intercept: bool) -> Squared:
    data, _ = as_multitask_data(list(Xs), list(ys))
    return Squared(data, fit_intercept)


def _predict(Xs, W: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    return [X @ W[:, t] + b[t] for t, X in enumerate(Xs)]


def _lam_grid(lmax: float, n: int, ratio: float) -> np.ndarray:
    """``n`` values from ``lmax * 10**(-1/4)``-ish down to ``ratio * lmax`` (decreasing)."""
    return lmax * np.logspace(0.0, np.log10(ratio), n + 1)[1:]


def _ridge_path(df: Squared, alphas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Closed-form ridge ``(X_t^T X_t / n_t + alpha I) w_t = X_t^T y_t / n_t`` for each alpha.

    Returns ``W`` ``(n_alphas, d, m)`` and intercepts ``(n_alphas, m)``.
    """
    G = df.data.gram()
    c = df.data.xty()
    n = df.data.task_sizes
    d, m = c.shape
    W = np.empty((len(alphas), d, m))
    for t in range(m):
        e, V = np.linalg.eigh(G[0 if G.shape[0] == 1 else t] / n[t])
        proj = V.T @ (c[:, t] / n[t])
        W[:, :, t] = (proj[None, :] / (np.maximum(e, 0.0)[None, :] + alphas[:, None])) @ V.T
    b = np.stack([df.intercept(Wk) for Wk in W])
    return W, b


def _lasso_path(df: Squared, alphas: np.ndarray, max_iter: int, tol: float):
    d, m = df.data.n_features, df.data.n_tasks
    W = np.zeros((d, m))
    Ws, bs = [], []
    for a in alphas:
        W = fista(df, L1(a), coef_init=W, max_iter=max_iter, tol=tol, warn=False).W
        Ws.append(W)
        bs.append(df.intercept(W))
    return np.stack(Ws), np.stack(bs)


@dataclass
class Grids:
    """Absolute hyper-parameter grids of one training part."""

    trace: np.ndarray
    lasso: np.ndarray
    ridge: np.ndarray
    taus: np.ndarray


def _grids(df: Squared, cfg: Config) -> Grids:
    G = df.data.gram()
    n = df.data.task_sizes
    scale = float(np.mean([np.trace(G[0 if G.shape[0] == 1 else t]) / n[t]
                           for t in range(df.data.n_tasks)])) / df.data.n_features
    return Grids(
        trace=_lam_grid(df.lambda_max("trace"), cfg.n_lams, cfg.lam_ratio),
        lasso=_lam_grid(df.lambda_max("l1"), cfg.n_lams, cfg.lasso_ratio),
        ridge=max(scale, 1e-12) * np.logspace(1, -4, cfg.n_ridge),
        taus=np.asarray(cfg.taus, dtype=float),
    )


def _candidates(df: Squared, grids: Grids, cfg: Config) -> dict[str, tuple]:
    """All candidate models: method -> (W (k, d, m), b (k, m), params list)."""
    path = multistage_path(df, grids.trace, grids.taus, n_stages=cfg.n_stages,
                           stage_solver=cfg.stage_solver, max_iter=cfg.cv_max_iter,
                           tol=cfg.cv_tol)
    nl, nt = len(grids.trace), len(grids.taus)
    d, m = df.data.n_features, df.data.n_tasks
    W_lasso, b_lasso = _lasso_path(df, grids.lasso, cfg.cv_max_iter, cfg.cv_tol)
    W_ridge, b_ridge = _ridge_path(df, grids.ridge)
    return {
        "Lasso": (W_lasso, b_lasso, [{"alpha": a} for a in grids.lasso]),
        "RR": (W_ridge, b_ridge, [{"alpha": a} for a in grids.ridge]),
        "MTFL": (path.trace_coefs, path.trace_intercepts,
                 [{"alpha": a} for a in grids.trace]),
        "RAMUSA": (path.coefs.reshape(nl * nt, d, m), path.intercepts.reshape(nl * nt, m),
                   [{"alpha": a, "tau": t, "rank": int(r)} for a, row_t, row_r in
                    zip(grids.trace, [grids.taus] * nl, path.final_ranks, strict=True)
                    for t, r in zip(row_t, row_r, strict=True)]),
    }


def _fold_indices(sizes, n_folds: int, shared: bool, rng) -> list[list[tuple]]:
    """Per fold, per task ``(train_idx, val_idx)``; a task with one row is never validated."""
    m = len(sizes)
    if shared:
        n = int(sizes[0])
        fold_of = (rng.permutation(n) % n_folds)
        return [[(np.flatnonzero(fold_of != k), np.flatnonzero(fold_of == k))] * m
                for k in range(n_folds)]
    fold_of = []
    for n in sizes:
        f = (rng.integers(n_folds) + np.arange(n)) % n_folds
        f = f[rng.permutation(n)]
        if n == 1:
            f[:] = -1
        fold_of.append(f)
    return [[(np.flatnonzero(f != k), np.flatnonzero(f == k)) for f in fold_of]
            for k in range(n_folds)]


def _score_candidates(cands, Xv, yv, classification: bool) -> dict[str, np.ndarray]:
    """Validation (errors, SSE) of every candidate: method -> array (k, 2)."""
    out = {}
    yall = np.concatenate(yv)
    for name, (Ws, bs, _) in cands.items():
        sc = np.empty((len(Ws), 2))
        for k in range(len(Ws)):
            f = np.concatenate(_predict(Xv, Ws[k], bs[k]))
            sc[k, 1] = float(np.sum((f - yall) ** 2))
            sc[k, 0] = float(np.sum(np.sign(f) != yall)) if classification else sc[k, 1]
        out[name] = sc
    return out


def _select(scores: np.ndarray, params: list[dict]) -> dict:
    """Best candidate: lowest (errors, SSE); ties to the largest tau, then the largest alpha."""
    keys = [(-float(p.get("tau", 0.0)), -float(p["alpha"])) for p in params]
    best = min(range(len(params)),
               key=lambda k: (round(scores[k, 0], 9), round(scores[k, 1], 9), keys[k]))
    return params[best]


def cross_validate(Xs, ys, *, fit_intercept: bool, classification: bool, shared: bool,
                   cfg: Config, seed: int) -> dict[str, dict]:
    """Choose each method's parameters by ``cfg.n_folds``-fold CV inside ``(Xs, ys)``.

    Returns method -> chosen parameters (``alpha``; ``tau`` and ``rank`` for RAMUSA).
    """
    rng = np.random.default_rng(seed)
    grids = _grids(_datafit(Xs, ys, fit_intercept), cfg)
    folds = _fold_indices([len(y) for y in ys], cfg.n_folds, shared, rng)
    total: dict[str, np.ndarray] = {}
    params = None
    for fold in folds:
        Xtr = [X[tr] for X, (tr, _) in zip(Xs, fold, strict=True)]
        ytr = [y[tr] for y, (tr, _) in zip(ys, fold, strict=True)]
        keep = [t for t, (_, va) in enumerate(fold) if len(va)]
        Xv = [Xs[t][fold[t][1]] for t in keep]
        yv = [ys[t][fold[t][1]] for t in keep]
        cands = _candidates(_datafit(Xtr, ytr, fit_intercept), grids, cfg)
        cands = {k: (W[:, :, keep], b[:, keep], p) for k, (W, b, p) in cands.items()}
        sc = _score_candidates(cands, Xv, yv, classification)
        params = {k: v[2] for k, v in cands.items()}
        for k, v in sc.items():
            total[k] = total.get(k, 0.0) + v
    return {k: _select(total[k], params[k]) for k in total}


def fit_method(method: str, Xs, ys, params: dict, *, fit_intercept: bool, cfg: Config):
    """Fit ``method`` with ``params`` on all of ``(Xs, ys)``; returns ``(W, b, info)``."""
    df = _datafit(Xs, ys, fit_intercept)
    a = float(params["alpha"])
    if method == "RR":
        W, b = _ridge_path(df, np.array([a]))
        return W[0], b[0], {}
    if method == "Lasso":
        res = fista(df, L1(a), max_iter=cfg.final_max_iter, tol=cfg.final_tol, warn=False)
        return res.W, res.intercept, {}
    if method == "MTFL":
        res = solve_stage(df, a, 0, max_iter=cfg.final_max_iter, tol=cfg.final_tol)
        return res.W, res.intercept, {}
    if method == "RAMUSA":
        res = multistage(df, a, float(params["tau"]), n_stages=cfg.n_stages,
                         stage_solver=cfg.stage_solver, max_iter=cfg.final_max_iter,
                         tol=cfg.final_tol, warn=False)
        return res.W, res.intercept, {"rank": res.info["final_rank"],
                                      "n_stages": res.info["n_stages"]}
    raise ValueError(f"unknown method {method!r}")


# ----------------------------------------------------------------------------- data sets
def _school_split(ratio: float, seed: int, intercept: bool, data_dir=None):
    from multitask.datasets import load_school, split_tasks

    sch = load_school()
    Xtr, ytr, Xte, yte = split_tasks(sch.X, sch.y, train_ratio=ratio, random_state=seed)
    A = np.vstack(Xtr)
    sd = A.std(axis=0)
    sd[sd == 0] = 1.0
    mu = A.mean(axis=0) if intercept else np.zeros(A.shape[1])
    return ([(X - mu) / sd for X in Xtr], ytr, [(X - mu) / sd for X in Xte], yte)


def _sarcos_split(n_train: int, seed: int, intercept: bool, data_dir=None):
    from multitask.datasets import load_sarcos

    data = load_sarcos(data_dir)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(data.X.shape[0])
    tr, te = perm[:n_train], perm[n_train:]
    X, Y = data.X, data.Y
    mu = X[tr].mean(axis=0) if intercept else np.zeros(X.shape[1])
    sd = X[tr].std(axis=0)
    sd[sd == 0] = 1.0
    Xtr, Xte = (X[tr] - mu) / sd, (X[te] - mu) / sd
    m = Y.shape[1]
    return ([Xtr] * m, [Y[tr, t] for t in range(m)], [Xte] * m, [Y[te, t] for t in range(m)])


def _letter_split(ratio: float, seed: int, intercept: bool, data_dir=None):
    from multitask.datasets import load_letters, split_tasks

    data = load_letters(data_dir)
    ys = [2.0 * y - 1.0 for y in data.y]
    return tuple(split_tasks(data.X, ys, train_ratio=ratio, random_state=seed, stratify=True))


_REAL = {
    "school": (_school_split, (0.1, 0.2, 0.3), lambda s: f"{round(100 * s)}%", False, False),
    "sarcos": (_sarcos_split, (100, 200, 300), str, True, True),
    "letter": (_letter_split, (0.1, 0.2), lambda s: f"{round(100 * s)}%", False, True),
}


def _use_intercept(args, dataset: str) -> bool:
    choice = getattr(args, "intercept", "auto") or "auto"
    if choice == "auto":
        return dataset in ("sarcos", "letter")
    return choice == "yes"


def run_real_split(dataset: str, setting, seed: int, cfg: Config, intercept: bool,
                   data_dir=None) -> dict:
    """One repetition on a real data set: CV, final fits, test metrics per method."""
    from threadpoolctl import threadpool_limits

    from multitask.metrics import nmse

    split_fn, _, _, shared, _ = _REAL[dataset]
    classification = dataset == "letter"
    with threadpool_limits(1):
        Xtr, ytr, Xte, yte = split_fn(setting, seed, intercept, data_dir)
        t0 = time.perf_counter()
        chosen = cross_validate(Xtr, ytr, fit_intercept=intercept,
                                classification=classification, shared=shared, cfg=cfg,
                                seed=seed + 7919)
        cv_seconds = time.perf_counter() - t0
        out = {"cv_seconds": cv_seconds, "methods": {}}
        for method in METHODS:
            t1 = time.perf_counter()
            W, b, info = fit_method(method, Xtr, ytr, chosen[method], fit_intercept=intercept,
                                    cfg=cfg)
            secs = time.perf_counter() - t1
            pred = _predict(Xte, W, b)
            if classification:
                yall, fall = np.concatenate(yte), np.concatenate(pred)
                metrics = {ERROR: 100.0 * float(np.mean(np.sign(fall) != yall))}
            else:
                metrics = {NMSE_POOLED: nmse(yte, pred, average="pooled"),
                           NMSE_TASK: nmse(yte, pred, average="task")}
            out["methods"][method] = {"metrics": metrics, "seconds": secs,
                                      "params": {**chosen[method], **info}}
    return out


# ----------------------------------------------------------------------------- synthetic
OMEGAS = (5, 10, 15, 20)


def make_synthetic(omega: float, rng, *, n_tasks: int = 20, n_train: int = 50,
                   n_val: int = 200, n_test: int = 200, n_irrelevant: int = 10) -> dict:
    """The synthetic data of Section 5 of the paper.

    Columns of ``W*`` (``(5 + n_irrelevant, n_tasks)``, rows 5.. zero) are drawn from
    ``N(0, omega * diag(1, 0.64, 0.49, 0.36, 0.25))``; every task has standard normal
    designs and ``y = X w*_t + N(0, 1)`` noise. Returns a dict with ``W`` and
    ``train``/``val``/``test`` pairs of per-task lists.
    """
    scales = np.sqrt(omega) * np.array([1.0, 0.8, 0.7, 0.6, 0.5])
    d = 5 + n_irrelevant
    W = np.zeros((d, n_tasks))
    W[:5] = scales[:, None] * rng.standard_normal((5, n_tasks))
    out = {"W": W}
    for part, n in (("train", n_train), ("val", n_val), ("test", n_test)):
        Xs = [rng.standard_normal((n, d)) for _ in range(n_tasks)]
        ys = [X @ W[:, t] + rng.standard_normal(n) for t, X in enumerate(Xs)]
        out[part] = (Xs, ys)
    return out


def design_mse(Xs, W: np.ndarray, W_true: np.ndarray) -> float:
    """``(1/(m n)) sum_t ||X_t (w_t - w*_t)||^2`` (``n`` = mean rows per task)."""
    m = W.shape[1]
    n = np.mean([len(X) for X in Xs])
    return float(sum(np.sum((X @ (W[:, t] - W_true[:, t])) ** 2)
                     for t, X in enumerate(Xs)) / (m * n))


def synthetic_trial(omega: float, seed: int, cfg: Config, fine_taus=None,
                    stage_tau: float | None = 1.0, *, sizes: dict | None = None) -> dict:
    """One simulation: validation-selected Lasso, RR, OLS, MTFL, RAMUSA and their errors.

    Returns ``{"methods": {name: {"mse_train", "mse_test", "params"}}, "tau_curve": ...,
    "stages": ...}``; ``tau_curve`` (with ``fine_taus``) gives, for each ``tau``, the error of
    RAMUSA with ``alpha`` chosen on the validation set for that ``tau``; ``stages`` (with
    ``stage_tau``) the trace-norm error ``||W^(l) - W*||_*`` after each stage at that ``tau``
    and the ``alpha`` that the validation set chose for the trace norm (MTFL).
    """
    rng = np.random.default_rng(seed)
    data = make_synthetic(omega, rng, **(sizes or {}))
    Wt = data["W"]
    (Xs, ys), (Xv, yv), (Xte, _) = data["train"], data["val"], data["test"]
    df = _datafit(Xs, ys, False)
    grids = _grids(df, cfg)
    taus = np.unique(np.r_[grids.taus, [] if fine_taus is None else fine_taus])
    grids.taus = taus
    cfg_fit = Config(**{**cfg.__dict__, "cv_max_iter": cfg.final_max_iter,
                        "cv_tol": cfg.final_tol})
    cands = _candidates(df, grids, cfg_fit)
    scores = _score_candidates(cands, Xv, yv, False)
    out: dict = {"methods": {}}
    paper_taus_set = set(np.asarray(cfg.taus, dtype=float).tolist())
    for name, (Ws, _, params) in cands.items():
        sc = scores[name]
        if name == "RAMUSA":  # select on the paper's grid only
            ok = np.array([p["tau"] in paper_taus_set for p in params])
            sc = np.where(ok[:, None], sc, np.inf)
        p = _select(sc, params)
        k = params.index(p)
        out["methods"][name] = {"mse_train": design_mse(Xs, Ws[k], Wt),
                                "mse_test": design_mse(Xte, Ws[k], Wt), "params": p}
    W_ols = np.stack([np.linalg.lstsq(X, y, rcond=None)[0] for X, y in zip(Xs, ys,
                                                                           strict=True)], 1)
    out["methods"]["OLS"] = {"mse_train": design_mse(Xs, W_ols, Wt),
                             "mse_test": design_mse(Xte, W_ols, Wt), "params": {}}
    if fine_taus is not None:
        Ws, _, params = cands["RAMUSA"]
        sc = scores["RAMUSA"][:, 1]
        curve = []
        for tau in fine_taus:
            idx = [k for k, p in enumerate(params) if p["tau"] == tau]
            k = idx[int(np.argmin(sc[idx]))]
            curve.append((float(tau), design_mse(Xs, Ws[k], Wt), params[k]["alpha"]))
        out["tau_curve"] = curve
    if stage_tau is not None:
        lam_stage = out["methods"]["MTFL"]["params"]["alpha"]
        res = multistage(df, lam_stage, stage_tau, n_stages=cfg.n_stages,
                         stage_solver=cfg.stage_solver, max_iter=cfg.final_max_iter,
                         tol=cfg.final_tol, keep_stages=True, warn=False)
        out["stages"] = [float(singular_values(Wl - Wt).sum())
                         for Wl in res.info["stage_coefs"]]
    return out


# ----------------------------------------------------------------------------- run
def _parallel(jobs, n_jobs: int):
    if n_jobs is None or n_jobs == 1 or len(jobs) <= 1:
        return [f(*a) for f, a in jobs]
    from joblib import Parallel, delayed

    return Parallel(n_jobs=n_jobs)(delayed(f)(*a) for f, a in jobs)


def _paper_rows(dataset: str, setting: str, metric: str, table: dict) -> list[dict]:
    rows = []
    for method, (mean, std) in table.items():
        row = summarize(EXPERIMENT, dataset, setting, method, metric + PAPER_SUFFIX, [mean],
                        [])
        row["std"] = std
        row["repeats"] = 15 if dataset != "synthetic" else 10
        rows.append(row)
    return rows


def _run_real(args, dataset: str, cfg: Config) -> list[dict]:
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    _, settings, label, _, _ = _REAL[dataset]
    repeats = args.repeats if getattr(args, "repeats", None) else (2 if args.quick else 15)
    intercept = _use_intercept(args, dataset)
    seed0 = int(getattr(args, "random_state", 0) or 0)
    jobs = [(run_real_split, (dataset, s, seed0 * 1000 + r, cfg, intercept,
                              getattr(args, "data_dir", None)))
            for s in settings for r in range(repeats)]
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        results = _parallel(jobs, int(getattr(args, "n_jobs", 1) or 1))
    print(f"[capped-trace] {dataset}: {len(jobs)} splits in {time.perf_counter() - t0:.0f} s",
          file=sys.stderr)
    rows, choices = [], []
    metrics = [ERROR] if dataset == "letter" else [NMSE_POOLED, NMSE_TASK]
    for i, s in enumerate(settings):
        res = results[i * repeats:(i + 1) * repeats]
        for method in METHODS:
            secs = [r["methods"][method]["seconds"] for r in res]
            for metric in metrics:
                vals = [r["methods"][method]["metrics"][metric] for r in res]
                rows.append(summarize(EXPERIMENT, dataset, label(s), method, metric, vals,
                                      secs))
            for r_i, r in enumerate(res):
                choices.append({"dataset": dataset, "setting": label(s), "repeat": r_i,
                                "method": method, **r["methods"][method]["metrics"],
                                **r["methods"][method]["params"],
                                "cv_seconds": r["cv_seconds"]})
        paper_metric = ERROR if dataset == "letter" else "nMSE"
        rows.extend(_paper_rows(dataset, label(s), paper_metric,
                                PAPER_TABLE4[dataset][label(s)]))
    _write_choices(args, choices)
    _print_side_by_side(dataset, rows, metrics[0])
    return rows


def _write_choices(args, choices: list[dict]) -> None:
    """``capped_trace_splits.csv``: per split and method, the test metrics and the chosen
    parameters (``alpha``; ``tau``, final capped ``rank`` and stages for RAMUSA)."""
    out = getattr(args, "out", None)
    if not out or not choices:
        return
    os.makedirs(out, exist_ok=True)
    keys = []
    for c in choices:
        keys += [k for k in c if k not in keys]
    with open(os.path.join(out, "capped_trace_splits.csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        w.writerows(choices)


def _print_side_by_side(dataset: str, rows: list[dict], metric: str) -> None:
    ours = {(r["setting"], r["method"]): r for r in rows if r["metric"] == metric}
    paper = {(r["setting"], r["method"]): r for r in rows if r["metric"].endswith(PAPER_SUFFIX)}
    print(f"[capped-trace] {dataset}: {metric} (ours) vs the paper", file=sys.stderr)
    for key, r in ours.items():
        p = paper.get(key)
        ptxt = f"{p['mean']:.3f} +- {p['std']:.3f}" if p else "-"
        print(f"  {key[0]:>6} {key[1]:>7}: {r['mean']:.3f} +- {r['std']:.3f}   paper {ptxt}",
              file=sys.stderr)


def _run_synthetic(args, cfg: Config) -> list[dict]:
    repeats = args.repeats if getattr(args, "repeats", None) else (2 if args.quick else 10)
    seed0 = int(getattr(args, "random_state", 0) or 0)
    omegas = OMEGAS
    fine = np.asarray(paper_taus(fine=True)[:-1])
    jobs = [(synthetic_trial, (w, seed0 * 1000 + r, cfg, fine, 1.0))
            for w in omegas for r in range(repeats)]
    t0 = time.perf_counter()
    results = _parallel(jobs, int(getattr(args, "n_jobs", 1) or 1))
    print(f"[capped-trace] synthetic: {len(jobs)} simulations in "
          f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)
    rows, curve_rows, stage_rows = [], [], []
    for i, w in enumerate(omegas):
        res = results[i * repeats:(i + 1) * repeats]
        for method in ("Lasso", "RR", "OLS", "MTFL", "RAMUSA"):
            for key, metric in (("mse_train", "MSE (training design)"),
                                ("mse_test", "MSE (test design)")):
                vals = [r["methods"][method][key] for r in res]
                rows.append(summarize(EXPERIMENT, "synthetic", f"omega={w}", method, metric,
                                      vals, []))
        rows.extend(_paper_rows("synthetic", f"omega={w}", "MSE", PAPER_TABLE2[w]))
        mtfl = [r["methods"]["MTFL"]["mse_train"] for r in res]
        for j, tau in enumerate(fine):
            vals = [r["tau_curve"][j][1] for r in res]
            curve_rows.append({"omega": w, "tau": tau, "ramusa_mse": float(np.mean(vals)),
                               "ramusa_std": float(np.std(vals)),
                               "trace_mse": float(np.mean(mtfl))})
        n_max = max(len(r.get("stages", [])) for r in res)
        for ell in range(n_max):
            vals = [r["stages"][min(ell, len(r["stages"]) - 1)] for r in res if r.get("stages")]
            stage_rows.append({"omega": w, "stage": ell + 1, "err_trace_norm": np.mean(vals),
                               "std": np.std(vals)})
    _print_side_by_side("synthetic", rows, "MSE (training design)")
    _write_synthetic_figures(args, curve_rows, stage_rows)
    return rows


def _write_synthetic_figures(args, curve_rows, stage_rows) -> None:
    out = getattr(args, "out", None)
    if not out:
        return
    os.makedirs(out, exist_ok=True)
    for name, rows in (("capped_trace_tau_curve.csv", curve_rows),
                       ("capped_trace_stages.csv", stage_rows)):
        with open(os.path.join(out, name), "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - plotting is optional
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for w in OMEGAS:
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
    fig.savefig(os.path.join(out, "capped_trace_synthetic.png"), dpi=110)
    plt.close(fig)


@register(
    EXPERIMENT,
    datasets=DATASETS,
    description="Capped trace norm, multi-stage RAMUSA (Han & Zhang, AAAI 2016): Tables 2 "
                "and 4, Figures 1-2",
    add_arguments=_add_arguments,
)
def run(args) -> list[dict]:
    """Run the reproduction for ``args.dataset``; returns result rows (see module doc)."""
    dataset = getattr(args, "dataset", None) or DATASETS[0]
    if dataset not in DATASETS:
        raise ValueError(f"dataset must be one of {DATASETS}, got {dataset!r}.")
    cfg = _config(args)
    if dataset == "synthetic":
        return _run_synthetic(args, cfg)
    return _run_real(args, dataset, cfg)
