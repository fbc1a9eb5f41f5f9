"""Chen, Liu & Ye, "Learning incoherent sparse and low-rank patterns from multiple tasks"
(ACM TKDD 2012): Table II (Yeast, Scene) and the synthetic demonstration of Fig. 2.

``python -m reproductions sparse-low-rank --dataset {yeast,scene,table2,synthetic}``
(``table2``: Yeast, then Scene, with the Markdown tables of the docs page).

Multi-label data (Yeast, Scene; Section 7.2 of the paper):

* every label is a task on the shared design; the whole data set (train + test files pooled)
  is split at random into 10% training and 90% test rows (:func:`multitask.datasets.split_shared`),
  5 times;
* features standardized with the training part's mean and standard deviation;
* MixedNorm (:class:`~multitask.SparseLowRankRegressor`), TraceNorm (the trace-ball model,
  :class:`~multitask.MultiTaskRegressor` with the penalty
  :class:`~multitask.penalties.TraceBall`), OneNorm
  (:class:`~multitask.IndependentLassoRegressor`), RidgeReg
  (:class:`~multitask.IndependentRidgeRegressor`) and L21 (:class:`~multitask.L21Regressor`)
  regress the -1/+1 labels with an unpenalized intercept per task; IndLogistic and IndSVM are
  :class:`~multitask.IndependentRidgeClassifier` with the logistic and the squared hinge loss
  on the labels that hold both classes in the training part (the others get a constant score);
* single-task baselines from scikit-learn, one model per label, through the same folds and
  selection rule: ``Ridge`` on the -1/+1 labels (``alpha_sk = n alpha`` on RidgeReg's grid),
  ``LogisticRegression`` (l2, lbfgs; ``C = 1 / (n alpha)`` on IndLogistic's grid; its
  decision function, the log-odds) and ``DummyClassifier(strategy="prior")`` (no features:
  the log-odds of the label's training frequency, a floor for the pooled metrics);
* hyper-parameters by 5-fold cross-validation inside the training part
  (:func:`multitask.model_selection.cross_validate_grid`, the same row folds for every method,
  warm-started paths, no grid widening), maximizing the mean validation AUC over labels
  (:func:`multitask.metrics.roc_auc`); explicit grids relative to the data: ``tau in tau_ref *
  {0, 1/16, ..., 1}`` with ``tau_ref = ||W_ridge||_*`` the trace norm of the ridge fit with
  ``alpha = 1e-3 * ||X||_2^2 / n`` (TraceNorm and MixedNorm), ``gamma in gamma_max * {1,
  10^-0.5, ..., 10^-3}`` with ``gamma_max`` the lasso's ``alpha_max`` (OneNorm), l2,1 weights
  relative to its ``alpha_max``, ridge and the classifiers' weights relative to
  ``||X||_2^2 / n``;
* selection rule, the same for every method: the candidate with the largest mean validation
  AUC; ties go to the first candidate, and every list runs from the most to the least
  regularized setting (for MixedNorm: its special cases before its interior);
* tolerances on the library's one relative optimality measure: ``1e-6`` in the
  cross-validation, ``1e-8`` in the refit of the selected setting on the whole training part;
* metrics on the test part (:mod:`multitask.metrics`), every definition: ROC AUC macro (mean
  over labels, the paper's "Average AUC"; labels with one class in the test part are left
  out), micro (one AUC of all (row, label) pairs pooled) and example-based (per row over its
  labels, averaged over the rows with both classes) (:func:`multitask.metrics.roc_auc`);
  Macro-F1 (mean over labels), Micro-F1 (pooled counts) and example-based F1 (per row)
  (:func:`multitask.metrics.f1`) under two threshold rules: score 0 (the spec's default; the
  paper does not state its rule) and per-label thresholds that maximize the F1 of the
  out-of-fold training scores of the selected setting ("SCut",
  :func:`multitask.metrics.tune_thresholds`; no test label is used); and, as a bound, not a
  result, the Macro-F1 at per-label thresholds tuned on the test labels themselves (the
  largest Macro-F1 any per-label thresholds reach on these scores).

MixedNorm's candidates nest TraceNorm's and OneNorm's exactly. TraceNorm is MixedNorm at
``gamma = inf`` (``P = 0``), OneNorm at ``tau = 0`` (``Q = 0``). MixedNorm's candidates are, in
this order, TraceNorm's (its very cross-validation scores, same folds), OneNorm's, then the
interior fitted by :class:`~multitask.SparseLowRankRegressor`: for every ``tau > 0`` of the
grid, ``gamma = gamma_top(tau) * 10^(-1.5 (k/K)^2)``, ``k = 1..K``, ``K = grid size - 1``
(default 6: factors 0.91 down to 0.03), where ``gamma_top(tau) = ||grad f(W_tau)||_inf`` at the
trace-ball fit ``W_tau`` on the training part is the smallest ``gamma`` with ``P = 0`` optimal
(KKT), so every interior candidate has a nonzero sparse part. Consequently MixedNorm's best
mean validation AUC is at least TraceNorm's and OneNorm's, and when its CV selects a special
case its test metrics are exactly that method's.

Synthetic data (Section 7.1, Fig. 2; the paper's distributions are lost and reconstructed as
in the specification, :func:`multitask.datasets.make_sparse_low_rank_tasks`): 30 tasks with
their own 60 x 100 standard normal designs, ``P`` standard normal with a zero block (the first
30 features of the first 10 tasks), ``Q`` a standard normal matrix with its 20 smallest
singular values set to zero (rank 10), noise N(0, 0.1^2). At the paper's ``(gamma, tau) =
(150, 50)`` (our ``alpha = 150 / 120``, no intercept): the fraction of the zero block recovered
as zero, the fraction of ``P``'s other entries found nonzero, ``rank(Q)``
(:func:`multitask.metrics.support_recovery`); with ``alpha`` and ``radius`` by 3-fold CV within
tasks (:class:`~multitask.MultiTaskCV`, validation nMSE): test nMSE on fresh data against
OneNorm and TraceNorm. A second setting plants a well-conditioned instance (incoherent rank-2
``Q``, 3% of ``P`` nonzero, 150 rows per task) and reports support F1 and rank at ``alpha =
0.1``, ``radius = 0.9 ||Q_true||_*``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sklearn.base import clone
from sklearn.dummy import DummyClassifier
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import KFold

from multitask import (
    IndependentLassoRegressor,
    IndependentRidgeClassifier,
    IndependentRidgeRegressor,
    L21Regressor,
    MultiTaskCV,
    MultiTaskRegressor,
    SparseLowRankRegressor,
    as_multitask_data,
)
from multitask.datasets import load_scene, load_yeast, make_sparse_low_rank_tasks, split_shared
from multitask.losses import get_datafit
from multitask.metrics import (
    f1,
    multilabel_scores,
    nmse,
    numerical_rank,
    roc_auc,
    support_recovery,
    tune_thresholds,
)
from multitask.model_selection import cross_validate_grid
from multitask.penalties import TraceBall
from multitask.solvers import ProximalGradient
from reproductions.common import auc_scorer, decision_scores, log, quiet, summarize, timer

NAME = "sparse-low-rank"
#: ``table2`` runs Yeast and Scene in one command and prints every table of the docs page.
DATASETS = ("yeast", "scene", "synthetic", "table2")
DESCRIPTION = ("Sparse + low-rank MTL (Chen, Liu & Ye): Table II (10% train, CV on AUC; "
               "--dataset table2: Yeast and Scene under every AUC and F1 definition) and "
               "the synthetic structure recovery of Fig. 2.")
#: The library's models (as in the paper's rows) and scikit-learn single-task baselines.
LIBRARY_METHODS = ("MixedNorm", "TraceNorm", "OneNorm", "RidgeReg", "L21", "IndLogistic",
                   "IndSVM")
#: scikit-learn per label: ``Ridge`` on the -1/+1 labels, ``LogisticRegression`` (l2, lbfgs),
#: and ``DummyClassifier(strategy="prior")`` (no features: the training frequency of the label).
SKLEARN_METHODS = ("sklearn-Ridge", "sklearn-LogReg", "sklearn-Prior")
METHODS = LIBRARY_METHODS + SKLEARN_METHODS
#: The paper's three measures: "Average AUC" (mean over labels), Macro-F1 and Micro-F1, the
#: F1 at score 0.
METRICS = ("AUC", "Macro-F1", "Micro-F1")
#: F1 at per-label thresholds tuned on out-of-fold training scores (not in the paper).
SCUT_METRICS = ("Macro-F1 (SCut)", "Micro-F1 (SCut)", "Example-F1 (SCut)")
#: The other definitions: pooled (micro) and example-based AUC, example-based F1 at score 0,
#: and, as a bound (not a result), the Macro-F1 at per-label thresholds chosen on the test
#: labels (the largest Macro-F1 any per-label thresholds reach on these scores).
EXTRA_METRICS = ("AUC (micro)", "AUC (example)", "Example-F1", "Macro-F1 (test-tuned)")
#: Tolerance (relative optimality measure) of the cross-validation fits and of the refit.
CV_TOL, REFIT_TOL = 1e-6, 1e-8

#: Table II of the paper (mean over 5 repetitions, %): (AUC, Macro-F1, Micro-F1).
PAPER_TABLE_II = {
    "scene": {
        "MixedNorm": (91.602, 60.602, 64.392),
        "MTRL": (90.821, 58.873, 63.958),
        "MTL(Omega&Sigma)": (90.217, 59.212, 63.219),
        "TraceNorm": (90.205, 57.692, 61.172),
        "ASO": (86.258, 56.819, 59.015),
        "OneNorm": (87.846, 55.061, 59.951),
        "IndSVM": (84.056, 54.253, 57.450),
        "RidgeReg": (85.209, 53.281, 56.012),
    },
    "yeast": {
        "MixedNorm": (79.871, 55.624, 56.495),
        "MTRL": (78.437, 53.913, 55.127),
        "MTL(Omega&Sigma)": (78.515, 54.854, 54.235),
        "TraceNorm": (76.877, 52.400, 54.172),
        "ASO": (64.519, 45.599, 45.952),
        "OneNorm": (65.602, 42.023, 47.558),
        "IndSVM": (64.601, 38.507, 52.094),
        "RidgeReg": (65.491, 42.315, 46.743),
    },
}


# --------------------------------------------------------------------------- scoring
def evaluate(Y01: np.ndarray, S: np.ndarray, thresholds: np.ndarray | None = None) -> dict:
    """Test metrics in %: AUC macro (``"AUC"``), micro and example-based; Macro-, Micro- and
    Example-F1 at score 0; Macro-F1 at per-label thresholds tuned on the test labels (a bound);
    with ``thresholds`` (SCut, tuned on training scores) the three F1 at those thresholds
    (:func:`multitask.metrics.multilabel_scores`)."""
    with quiet(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Example-based AUC", category=UserWarning)
        at0 = multilabel_scores(Y01, S, threshold=0.0)
        out = {"AUC": 100 * at0["auc_macro"], "AUC (micro)": 100 * at0["auc_micro"],
               "AUC (example)": 100 * at0["auc_samples"], "Macro-F1": 100 * at0["f1_macro"],
               "Micro-F1": 100 * at0["f1_micro"], "Example-F1": 100 * at0["f1_samples"],
               "Macro-F1 (test-tuned)": 100 * f1(Y01, S, threshold=tune_thresholds(Y01, S),
                                                 average="macro")}
        if thresholds is not None:
            scut = multilabel_scores(Y01, S, threshold=thresholds)
            for name, avg in zip(SCUT_METRICS, ("macro", "micro", "samples"), strict=True):
                out[name] = 100 * scut[f"f1_{avg}"]
    return out


def tighten(model, tol: float):
    """``model`` with the tolerance ``tol``, also that of a configured solver object."""
    solver = model.get_params().get("solver")
    if hasattr(solver, "with_params"):
        model.set_params(solver=solver.with_params(tol=tol))
    return model.set_params(tol=tol)


# --------------------------------------------------------------------------- grids
def trace_ball(tau: float = 1.0, **settings) -> MultiTaskRegressor:
    """The constrained TraceNorm model, least squares subject to ``||W||_* <= tau``."""
    return MultiTaskRegressor(penalty=TraceBall(float(tau)), **settings)


def sparse_factors(n: int, decades: float = 1.5) -> np.ndarray:
    """Relative ``gamma`` grid of MixedNorm's interior: ``10^(-decades (k/n)^2)``, k = 1..n.

    Quadratic in ``log10``: fine just below ``gamma_top(tau)``, where the first entries of
    the sparse part enter (``n = 6``: 0.91, 0.68, 0.42, 0.22, 0.09, 0.03), coarse further
    down.
    """
    k = np.arange(1, n + 1)
    return 10.0 ** (-decades * (k / n) ** 2)


def gamma_top(X: np.ndarray, Y: np.ndarray, taus, tol: float) -> np.ndarray:
    """``||grad f(W_tau)||_inf`` at the trace-ball fits ``W_tau`` (``||W||_* <= tau``).

    By the KKT conditions ``P = 0`` is optimal for MixedNorm at ``(gamma, tau)`` iff
    ``gamma >= gamma_top(tau)`` (the smallest such ``gamma``; for ``tau = 0`` it is the
    lasso's ``alpha_max``). The gradient is the squared datafit's (intercepts eliminated).
    """
    datafit = get_datafit("squared", as_multitask_data(X, Y)[0], True)
    out = []
    for t in taus:
        with quiet():
            W = trace_ball(t, tol=tol, max_iter=5000).fit(X, Y).coef_.T
        _, G, _ = datafit.value_and_grad(W)
        out.append(float(np.max(np.abs(G))))
    return np.asarray(out)


@dataclass
class Search:
    """A method's estimator and its explicit grid (a list of ``{name: values}`` dicts)."""

    estimator: object
    grid: list
    labels: dict = field(default_factory=dict)


def tau_grid(X: np.ndarray, Y: np.ndarray, n_grid: int) -> np.ndarray:
    """``tau_ref * {0, 2^-(k-2), ..., 1/2, 1}``, ``k = max(3, n_grid - 1)`` values."""
    s2n = float(np.linalg.norm(X, 2) ** 2 / X.shape[0])
    ridge = IndependentRidgeRegressor(alpha=1e-3 * s2n).fit(X, Y)
    tau_ref = float(np.linalg.svd(ridge.coef_, compute_uv=False).sum())
    n_tau = max(3, n_grid - 1)
    return tau_ref * np.r_[0.0, 2.0 ** -np.arange(n_tau - 2, -1, -1)]


def searches(name: str, X: np.ndarray, Y: np.ndarray, n_grid: int) -> Search:
    """The estimator and grid of one method on the training part ``X`` (n, d), ``Y`` -1/+1.

    MixedNorm's search is its interior only (its special cases are TraceNorm's and OneNorm's
    searches, see :func:`run_split`).
    """
    s2n = float(np.linalg.norm(X, 2) ** 2 / X.shape[0])
    lin = {"tol": CV_TOL, "max_iter": 5000}
    if name == "TraceNorm":
        taus = tau_grid(X, Y, n_grid)
        return Search(trace_ball(**lin), [{"penalty": [TraceBall(t) for t in taus]}])
    if name == "OneNorm":
        est = IndependentLassoRegressor(**lin)
        return Search(est, [{"alpha": list(est.alpha_max(X, Y) * np.logspace(0, -3, n_grid))}])
    if name == "MixedNorm":
        taus = tau_grid(X, Y, n_grid)[1:]
        tops = gamma_top(X, Y, taus, CV_TOL)
        facs = sparse_factors(max(2, n_grid - 1))
        grid = [{"radius": [float(t)], "alpha": list(top * facs)}
                for t, top in zip(taus, tops, strict=True) if top > 0]
        # FISTA with adaptive restart (the preset's default is the paper's AG, no restart,
        # about three times slower to the same relative accuracy along these paths)
        fista = ProximalGradient(tol=CV_TOL, max_iter=5000, lipschitz_init="secant")
        return Search(SparseLowRankRegressor(solver=fista), grid,
                      {"gamma_top": dict(zip(taus.tolist(), tops.tolist(), strict=True))})
    if name == "L21":
        est = L21Regressor(**lin)
        return Search(est, [{"alpha": list(est.alpha_max(X, Y) * np.logspace(0, -3, n_grid))}])
    if name == "RidgeReg":
        return Search(IndependentRidgeRegressor(),
                      [{"alpha": list(s2n * np.logspace(1, -5, n_grid))}])
    if name in ("IndLogistic", "IndSVM"):
        curv, loss = (0.25, "logistic") if name == "IndLogistic" else (2.0, "squared_hinge")
        return Search(IndependentRidgeClassifier(loss=loss, **lin),
                      [{"alpha": list(curv * s2n * np.logspace(1, -5, n_grid))}])
    raise ValueError(f"Unknown method {name!r}; choose from {METHODS}.")


# --------------------------------------------------------------------------- one split
@dataclass
class Candidate:
    """One cross-validated setting: its estimator, parameters and mean validation AUC."""

    estimator: object
    params: dict
    score: float


def cross_validate(search: Search, X, Y, cv, n_jobs) -> tuple[list[Candidate], list]:
    """Every candidate of ``search`` scored by :func:`cross_validate_grid` on the folds ``cv``."""
    with quiet(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Fit failed")
        res = cross_validate_grid(search.estimator, X, Y, param_grid=search.grid, cv=cv,
                                  scoring=auc_scorer, widen=0, n_jobs=n_jobs)
    return ([Candidate(search.estimator, dict(c), float(s))
             for c, s in zip(res.candidates, res.mean_scores, strict=True)], res.splits)


def best_candidate(cands: list[Candidate]) -> Candidate:
    """The largest mean score; ties go to the first candidate (NaN never wins)."""
    scores = np.array([-np.inf if np.isnan(c.score) else c.score for c in cands])
    return cands[int(np.argmax(scores))]


def describe(c: Candidate) -> dict:
    """``gamma``, ``tau`` and the face of a MixedNorm candidate (special case or interior)."""
    if "penalty" in c.params:
        return {"gamma": np.inf, "tau": float(c.params["penalty"].radius), "face": "P=0"}
    if "radius" in c.params:
        return {"gamma": float(c.params["alpha"]), "tau": float(c.params["radius"]),
                "face": "interior"}
    return {"gamma": float(c.params["alpha"]), "tau": 0.0, "face": "Q=0"}


# --------------------------------------------------------------------------- scikit-learn
def sklearn_grid(name: str, X: np.ndarray, n_grid: int) -> list[dict]:
    """Candidates of a scikit-learn baseline, most regularized first.

    ``sklearn-Ridge``: RidgeReg's grid in scikit-learn's scaling, ``alpha_sk = n alpha``;
    ``sklearn-LogReg``: IndLogistic's grid, ``C = 1 / (n alpha)`` (``n`` training rows; the
    user guide's conversions); ``sklearn-Prior``: no parameter.
    """
    n = X.shape[0]
    s2n = float(np.linalg.norm(X, 2) ** 2 / n)
    alphas = s2n * np.logspace(1, -5, n_grid)
    if name == "sklearn-Ridge":
        return [{"alpha": float(n * a)} for a in alphas]
    if name == "sklearn-LogReg":
        return [{"C": float(1.0 / (n * 0.25 * a))} for a in alphas]
    if name == "sklearn-Prior":
        return [{}]
    raise ValueError(f"Unknown scikit-learn baseline {name!r}; choose from {SKLEARN_METHODS}.")


def sklearn_scores(name: str, params: dict, X_fit: np.ndarray, Y01_fit: np.ndarray,
                   X_eval: np.ndarray) -> np.ndarray:
    """Scores ``(n_eval, m)`` of a scikit-learn baseline fitted on each label separately.

    ``Ridge`` regresses the -1/+1 labels (scikit-learn fits the columns of a 2-D target
    independently: one ridge per label); ``LogisticRegression`` gives its decision function
    (log-odds) and ``DummyClassifier(strategy="prior")`` the log-odds of the label's training
    frequency, so score 0 is probability 1/2. A label with one class in ``Y01_fit`` gets the
    constant score +1 or -1 (as the library's classifiers here).
    """
    if name == "sklearn-Ridge":
        Y = np.where(Y01_fit > 0, 1.0, -1.0)
        return Ridge(**params).fit(X_fit, Y).predict(X_eval).reshape(len(X_eval), -1)
    S = np.empty((len(X_eval), Y01_fit.shape[1]))
    for j in range(Y01_fit.shape[1]):
        y = (Y01_fit[:, j] > 0).astype(int)
        if y.min() == y.max():
            S[:, j] = 1.0 if y[0] else -1.0
        elif name == "sklearn-LogReg":
            model = LogisticRegression(**params, tol=1e-6, max_iter=5000).fit(X_fit, y)
            S[:, j] = model.decision_function(X_eval)
        elif name == "sklearn-Prior":
            p = DummyClassifier(strategy="prior").fit(X_fit, y).predict_proba(X_eval)[:, 1]
            S[:, j] = np.log(p) - np.log1p(-p)
        else:
            raise ValueError(f"Unknown scikit-learn baseline {name!r}.")
    return S


def sklearn_cross_validate(name: str, X: np.ndarray, Y01: np.ndarray, folds: list,
                           n_grid: int) -> tuple[list, list]:
    """Every candidate of a scikit-learn baseline scored on ``folds`` (mean validation AUC over
    labels, as :func:`~reproductions.common.auc_scorer`); also each candidate's out-of-fold
    scores (the SCut thresholds of the selected one)."""
    cands, oofs = [], []
    for params in sklearn_grid(name, X, n_grid):
        oof = np.full(Y01.shape, np.nan)
        scores = []
        for tr, te in folds:
            oof[te] = sklearn_scores(name, params, X[tr], Y01[tr], X[te])
            with quiet():
                scores.append(roc_auc(Y01[te], oof[te]))
        cands.append(Candidate(None, dict(params), float(np.mean(scores))))
        oofs.append(oof)
    return cands, oofs


def run_split(X_tr, Y_tr01, X_te, Y_te01, *, methods=METHODS, n_grid=7, n_folds=5,
              random_state=0, n_jobs=None) -> dict:
    """Fit every method on one split; ``{method: (metrics dict, seconds, info)}``.

    Every method sees the same row folds (``random_state``) and the same selection rule
    (:func:`best_candidate`). The selected setting is refitted on the whole training part at
    ``tol = 1e-8``; its out-of-fold scores (the selected setting fitted on each training fold)
    give the SCut thresholds. ``info`` holds the selected parameters, ``cv_auc`` (best mean
    validation AUC) and, for MixedNorm, ``rank``, ``nnz_P`` and ``face``: ``"P=0"`` (a
    TraceNorm setting), ``"Q=0"`` (a OneNorm setting) or ``"interior"``.
    """
    mu, sd = X_tr.mean(axis=0), X_tr.std(axis=0)
    sd[sd == 0] = 1.0
    Xtr, Xte = (X_tr - mu) / sd, (X_te - mu) / sd
    Ytr01 = (np.asarray(Y_tr01) > 0).astype(int)
    Ytr = np.where(Ytr01 > 0, 1.0, -1.0)
    cv = KFold(n_folds, shuffle=True, random_state=random_state)
    todo = list(dict.fromkeys(
        [m for m in methods if m not in ("MixedNorm", *SKLEARN_METHODS)]
        + (["TraceNorm", "OneNorm", "MixedNorm"] if "MixedNorm" in methods else [])))
    cands: dict[str, list[Candidate]] = {}
    secs: dict[str, float] = {}
    splits = None
    for name in todo:
        with timer() as tm:
            search = searches(name, Xtr, Ytr, n_grid)
            if name in ("IndLogistic", "IndSVM"):  # labels with both classes only
                both = (Ytr01.sum(axis=0) > 0) & (Ytr01.sum(axis=0) < len(Ytr01))
                cands[name], splits = cross_validate(search, Xtr, Ytr01[:, both], cv, n_jobs)
            else:
                cands[name], splits = cross_validate(search, Xtr, Ytr, cv, n_jobs)
        secs[name] = tm["seconds"]
    if "MixedNorm" in methods:  # special cases first: TraceNorm's, then OneNorm's candidates
        cands["MixedNorm"] = cands["TraceNorm"] + cands["OneNorm"] + cands["MixedNorm"]
        secs["MixedNorm"] += secs["TraceNorm"] + secs["OneNorm"]
    folds = list(cv.split(Xtr))  # the engine's folds of a shared design (the same KFold)
    sk_oof: dict[str, list] = {}
    for name in methods:
        if name in SKLEARN_METHODS:
            with timer() as tm:
                cands[name], sk_oof[name] = sklearn_cross_validate(name, Xtr, Ytr01, folds,
                                                                   n_grid)
            secs[name] = tm["seconds"]
    out = {}
    refits: dict = {}
    for name in methods:
        best = best_candidate(cands[name])
        if name in SKLEARN_METHODS:
            with timer() as tm:
                S_te = sklearn_scores(name, best.params, Xtr, Ytr01, Xte)
            S_oof = sk_oof[name][next(i for i, c in enumerate(cands[name]) if c is best)]
            res = evaluate(np.asarray(Y_te01), S_te, tune_thresholds(Ytr01, S_oof))
            out[name] = (res, secs[name] + tm["seconds"], {**best.params, "cv_auc": best.score})
            continue
        classifier = name in ("IndLogistic", "IndSVM")
        cols = ((Ytr01.sum(axis=0) > 0) & (Ytr01.sum(axis=0) < len(Ytr01)) if classifier
                else np.ones(Ytr.shape[1], dtype=bool))
        Yfit = Ytr01[:, cols] if classifier else Ytr
        key = (id(best.estimator), repr(best.params))
        with timer() as tm, quiet():
            if key not in refits:
                model = clone(best.estimator).set_params(**best.params)
                oof = np.full((len(Xtr), int(cols.sum())), np.nan)
                for tr, te in splits:  # out-of-fold scores of the selected setting (SCut)
                    try:
                        oof[te] = decision_scores(clone(model).fit(Xtr[tr], Yfit[tr]), Xtr[te])
                    except ValueError:  # a rare label with one class in this training fold
                        pass
                tighten(model, REFIT_TOL).fit(Xtr, Yfit)
                refits[key] = (model, oof)
            model, oof = refits[key]
        S_te = np.empty(Y_te01.shape)
        S_te[:, cols] = decision_scores(model, Xte)
        S_te[:, ~cols] = np.where(Ytr01[0, ~cols] > 0, 1.0, -1.0)  # one class in training
        S_oof = np.empty(Ytr01.shape)
        S_oof[:, cols] = oof
        S_oof[:, ~cols] = S_te[0, ~cols]
        ok = ~np.isnan(S_oof).any(axis=1)  # rows of a fold whose fit failed are left out
        res = evaluate(np.asarray(Y_te01), S_te, tune_thresholds(Ytr01[ok], S_oof[ok]))
        info = {**best.params, "cv_auc": best.score}
        if name == "MixedNorm":
            face = describe(best)
            if face["face"] == "interior":
                rank, nnz = int(model.rank_), int(np.count_nonzero(model.sparse_component_))
            elif face["face"] == "P=0":
                rank, nnz = numerical_rank(model.coef_), 0
            else:
                rank, nnz = 0, int(np.count_nonzero(model.coef_))
            info.update(face, rank=rank, nnz_P=nnz)
        out[name] = (res, secs[name] + tm["seconds"], info)
    return out


# --------------------------------------------------------------------------- synthetic
def synthetic_data(setting: str, seed: int):
    """The Fig. 2 construction (``"fig2"``) or the planted instance (``"planted"``)."""
    rng = np.random.default_rng(seed)
    if setting == "fig2":
        return make_sparse_low_rank_tasks(
            n_tasks=30, n_features=100, n_samples=60, n_test=200, rank=10, sparsity=1.0,
            zero_block=(30, 10), low_rank="truncated_svd", sparse_first=True, noise=0.1,
            random_state=rng)
    return make_sparse_low_rank_tasks(
        n_tasks=40, n_features=50, n_samples=150, n_test=200, rank=2, n_nonzero=60,
        low_rank="orthonormal", low_rank_scale=5.0, sparse_values="signed_uniform",
        noise=0.05, random_state=rng)


def run_synthetic(setting: str, seed: int, n_grid: int, n_folds: int = 3, tol: float = 1e-6):
    """One draw of a synthetic setting: recovery and test nMSE figures.

    Recovery at fixed ``(alpha, radius)``: for ``"fig2"`` the paper's ``(gamma, tau) = (150,
    50)`` in our scaling (``alpha = 150 / (2 n_t)``), for ``"planted"`` ``alpha = 0.1`` and
    ``radius = 0.9 ||Q_true||_*``. The test nMSE of MixedNorm, OneNorm and TraceNorm uses
    parameters chosen by ``n_folds``-fold :class:`~multitask.MultiTaskCV` (folds within tasks,
    validation nMSE) over grids relative to the data (coarser solves, ``tol = 1e-5``).
    """
    data = synthetic_data(setting, seed)
    P, Q = data.P, data.Q
    Xs, ys = data.X, data.y
    n_t = len(ys[0])
    nuc_true = float(np.linalg.svd(Q, compute_uv=False).sum())
    fixed = ({"alpha": 150.0 / (2 * n_t), "radius": 50.0} if setting == "fig2"
             else {"alpha": 0.1, "radius": 0.9 * nuc_true})
    out: dict = {}
    secs: dict = {}
    key = "MixedNorm (fixed)"
    with timer() as tm, quiet():
        rec = SparseLowRankRegressor(**fixed, tol=tol, max_iter=5000,
                                     fit_intercept=False).fit(Xs, ys)
    secs[key] = tm["seconds"]
    P_hat = rec.sparse_component_.T
    scores = support_recovery(P, P_hat, level="entries")
    if setting == "fig2":  # the true zeros of P are exactly the block
        out[(key, "zero block recovered (%)")] = 100 * scores["specificity"]
        out[(key, "P nonzero outside block (%)")] = 100 * scores["recall"]
    out[(key, "support F1 of P (%)")] = 100 * scores["f1"]
    out[(key, "rank of Q")] = float(rec.rank_)
    out[(key, "true rank of Q")] = float(numerical_rank(Q))
    out[(key, "test nMSE")] = nmse(data.y_test, rec.predict(data.X_test))
    # prediction with CV-selected parameters (coarser solves: they only rank the settings)
    lin = {"tol": 1e-5, "max_iter": 1000, "fit_intercept": False}
    n_grid = min(n_grid, 5)
    gamma_max = IndependentLassoRegressor(fit_intercept=False).alpha_max(Xs, ys)
    Xall = np.vstack(Xs)
    s2n = float(np.linalg.norm(Xall, 2) ** 2 / Xall.shape[0])
    ridge = IndependentRidgeRegressor(alpha=1e-3 * s2n, fit_intercept=False).fit(Xs, ys)
    tau_ref = float(np.linalg.svd(ridge.coef_, compute_uv=False).sum())
    gammas = list(gamma_max * np.logspace(-1, -3, n_grid))
    taus = tau_ref * np.linspace(0.1, 1.0, n_grid)
    specs = {
        "MixedNorm": (SparseLowRankRegressor(**lin),
                      [{"radius": [float(t)], "alpha": gammas} for t in taus[::2]]),
        "OneNorm": (IndependentLassoRegressor(**lin),
                    {"alpha": list(gamma_max * np.logspace(0, -3, n_grid))}),
        "TraceNorm": (trace_ball(**lin), {"penalty": [TraceBall(t) for t in taus]}),
    }
    for name, (est, grid) in specs.items():
        with timer() as tm, quiet():
            cv = MultiTaskCV(est, grid, cv=n_folds, scoring="nmse", widen=0,
                             random_state=seed).fit(Xs, ys)
        secs[name] = tm["seconds"]
        out[(name, "test nMSE")] = nmse(data.y_test, cv.predict(data.X_test))
    arrays = {"P": P, "Q": Q, "P_hat": P_hat, "Q_hat": rec.low_rank_component_.T}
    return out, secs, arrays


def plot_recovery(arrays: dict, path: Path) -> bool:
    """True and recovered support of ``P`` and the singular values of ``Q`` (2 x 2 panels)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from multitask.plotting import plot_singular_values
    except ImportError:
        return False
    fig, axes = plt.subplots(2, 2, figsize=(7, 7))
    for ax, M, title in ((axes[0, 0], arrays["P"] != 0, "true P (nonzeros)"),
                         (axes[0, 1], arrays["P_hat"] != 0, "recovered P (nonzeros)")):
        ax.imshow(M, aspect="auto", cmap="gray_r", interpolation="nearest")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("task")
        ax.set_ylabel("feature")
    for ax, M, title in ((axes[1, 0], arrays["Q"], "true Q"),
                         (axes[1, 1], arrays["Q_hat"], "recovered Q")):
        plot_singular_values({title: M.T}, log=False, ax=ax,
                             title=f"{title}: singular values (rank {numerical_rank(M)})")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# --------------------------------------------------------------------------- the command
def add_arguments(parser) -> None:
    """Options of this reproduction."""
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS),
                        help="methods for yeast/scene (default: all)")
    parser.add_argument("--grid-size", type=int, default=7,
                        help="values per hyper-parameter grid (default 7)")
    parser.add_argument("--cv-folds", type=int, default=5,
                        help="cross-validation folds inside the training part (default 5)")
    parser.add_argument("--train-ratio", type=float, default=0.1,
                        help="training fraction of the rows (default 0.1, the paper's)")


def comparison_table(rows: list[dict], dataset: str) -> str:
    """Ours against Table II, SCut F1, the CV scores and MixedNorm's selections."""
    paper = PAPER_TABLE_II.get(dataset, {})
    ours = {(r["method"], r["metric"]): r for r in rows}
    lines = [f"Table II comparison on {dataset} (%, mean ± std over repetitions)",
             f"{'method':16s} " + "  ".join(f"{m + ' ours':>17s} {m + ' paper':>15s}"
                                          for m in METRICS)]
    names = [m for m in METHODS if any(k[0] == m for k in ours)]
    names += [m for m in paper if m not in names]
    for name in names:
        cells = []
        for j, metric in enumerate(METRICS):
            r = ours.get((name, metric))
            o = f"{r['mean']:.2f} ± {r['std']:.2f}" if r else "-"
            p = f"{paper[name][j]:.2f}" if name in paper else "-"
            cells.append(f"{o:>17s} {p:>15s}")
        lines.append(f"{name:16s} " + "  ".join(cells))
    scut = [(name, ours.get((name, SCUT_METRICS[0])), ours.get((name, SCUT_METRICS[1])),
             ours.get((name, EXTRA_METRICS[0]))) for name in names]
    scut = [x for x in scut if x[1] is not None]
    if scut:
        lines.append("F1 with per-label thresholds tuned on out-of-fold training scores (SCut; "
                     "the paper's rule is not stated) and the AUC of all scores pooled:")
        for name, a, b, c in scut:
            pooled = f"   pooled AUC {c['mean']:.2f} ± {c['std']:.2f}" if c else ""
            lines.append(f"{name:16s} Macro-F1 {a['mean']:.2f} ± {a['std']:.2f}   "
                         f"Micro-F1 {b['mean']:.2f} ± {b['std']:.2f}{pooled}")
    cv = [(name, ours.get((name, "CV AUC"))) for name in names]
    cv = [(name, r) for name, r in cv if r is not None]
    if cv:
        lines.append("Best mean validation AUC of the CV (training part only): "
                     + ", ".join(f"{name} {r['mean']:.3f}" for name, r in cv))
    sel = ours.get(("MixedNorm", "P = 0 selected"))
    if sel is not None:
        k = int(round(sel["mean"] * sel["repeats"]))
        q = ours.get(("MixedNorm", "Q = 0 selected"))
        j = int(round(q["mean"] * q["repeats"])) if q else 0
        lines.append(f"MixedNorm's CV selected P = 0 (a TraceNorm setting) on {k} of "
                     f"{sel['repeats']} splits, Q = 0 (a OneNorm setting) on {j}, an interior "
                     f"setting (both parts) on {sel['repeats'] - k - j}.")
    return "\n".join(lines)


def _note(res: dict) -> str:
    mixed = res.get("MixedNorm")
    if not mixed:
        return ""
    info = mixed[2]
    trio = [(m, v) for m, v in res.items() if m in ("MixedNorm", "TraceNorm", "OneNorm")]
    return (f" (MixedNorm selected {info['face']}: gamma {info['gamma']:.4g}, "
            f"tau {info['tau']:.4g}, rank {info['rank']}, nnz(P) {info['nnz_P']}; best mean CV "
            "AUC " + ", ".join(f"{m} {100 * v[2]['cv_auc']:.4f}" for m, v in trio)
            + "; test AUC " + ", ".join(f"{m} {v[0]['AUC']:.4f}" for m, v in trio) + ")")


def run(args) -> list[dict]:
    """Run the reproduction on ``args.dataset`` (see the module docstring).

    ``--dataset table2`` runs Yeast, then Scene, and prints the Markdown tables of the docs
    page (every AUC and F1 definition, the paper's rows, the claims check).
    """
    quick = bool(getattr(args, "quick", False))
    dataset = args.dataset
    repeats = getattr(args, "repeats", None)
    if repeats is None:  # the paper: 5 random splits; one synthetic demo (we draw 3)
        repeats = 1 if quick else (3 if dataset == "synthetic" else 5)
    n_grid = int(getattr(args, "grid_size", 7))
    n_folds = int(getattr(args, "cv_folds", 5))
    if quick:
        n_grid, n_folds = min(n_grid, 4), min(n_folds, 3)
    seed0 = int(getattr(args, "random_state", 0))
    if dataset == "synthetic":
        return _run_synthetic(int(repeats), n_grid, seed0, getattr(args, "out", None), quick)
    if dataset not in ("yeast", "scene", "table2"):
        raise ValueError(f"Unknown dataset {dataset!r}: choose one of {DATASETS}.")
    rows: list[dict] = []
    walls: dict[str, float] = {}
    for name in ("yeast", "scene") if dataset == "table2" else (dataset,):
        with timer() as tm:
            rows += _run_multilabel(name, args, int(repeats), n_grid, n_folds, seed0, quick)
        walls[name] = tm["seconds"]
    print(markdown_tables(rows, walls), flush=True)
    print(flush=True)
    return rows


def _run_multilabel(dataset, args, repeats, n_grid, n_folds, seed0, quick) -> list[dict]:
    bunch = (load_yeast if dataset == "yeast" else load_scene)(getattr(args, "data_dir", None))
    methods = list(getattr(args, "methods", METHODS))
    if quick:
        methods = [m for m in methods if m in ("MixedNorm", "TraceNorm", "OneNorm", "RidgeReg",
                                               "sklearn-Ridge")]
    ratio = float(getattr(args, "train_ratio", 0.1))
    rng = np.random.default_rng(seed0)
    results: dict[str, list] = {m: [] for m in methods}
    for r in range(repeats):
        X_tr, Y_tr, X_te, Y_te = split_shared(bunch.X, bunch.Y, train_ratio=ratio,
                                              random_state=int(rng.integers(2**31)))
        res = run_split(X_tr, Y_tr, X_te, Y_te, methods=methods, n_grid=n_grid,
                        n_folds=n_folds, random_state=seed0 + r,
                        n_jobs=getattr(args, "n_jobs", None))
        for m, v in res.items():
            results[m].append(v)
        log(NAME, f"{dataset} repetition {r + 1}/{repeats} done{_note(res)}")
    setting = f"{100 * ratio:g}% train, {n_folds}-fold CV"
    rows = []
    for m, vals in results.items():
        secs = [v[1] for v in vals]
        for metric in METRICS + SCUT_METRICS + EXTRA_METRICS:
            rows.append(summarize(NAME, dataset, setting, m, metric,
                                  [v[0][metric] for v in vals], secs))
        rows.append(summarize(NAME, dataset, setting, m, "CV AUC",
                              [100 * v[2]["cv_auc"] for v in vals], secs))
        if m == "MixedNorm":
            sel = {"P = 0 selected": [float(v[2]["face"] == "P=0") for v in vals],
                   "Q = 0 selected": [float(v[2]["face"] == "Q=0") for v in vals],
                   "rank(Q)": [float(v[2]["rank"]) for v in vals],
                   "nnz(P)": [float(v[2]["nnz_P"]) for v in vals]}
            for metric, v in sel.items():
                rows.append(summarize(NAME, dataset, setting, m, metric, v, secs))
    print(comparison_table(rows, dataset), flush=True)
    print(flush=True)
    return rows


# --------------------------------------------------------------------------- docs tables
#: Row labels of the Markdown tables.
LABELS = {
    "MixedNorm": "MixedNorm (`SparseLowRankRegressor`)",
    "TraceNorm": "TraceNorm (trace ball)",
    "OneNorm": "OneNorm (lasso per label)",
    "L21": "L21 (`L21Regressor`)",
    "RidgeReg": "RidgeReg (`IndependentRidgeRegressor`)",
    "IndLogistic": "IndLogistic (`IndependentRidgeClassifier`)",
    "IndSVM": "IndSVM (squared hinge)",
    "sklearn-Ridge": "scikit-learn `Ridge`",
    "sklearn-LogReg": "scikit-learn `LogisticRegression`",
    "sklearn-Prior": "scikit-learn `DummyClassifier` (prior)",
    "MTL(Omega&Sigma)": "MTL(Ω&Σ) (not implemented)",
}
#: The paper's methods without a counterpart here (their Table II values only).
PAPER_ONLY = ("MTRL", "MTL(Omega&Sigma)", "ASO")
#: The definitions compared in the claims check: (metric row, column title, paper's column).
DEFINITIONS = (
    ("AUC", "AUC macro", 0), ("AUC (micro)", "AUC micro", 0),
    ("AUC (example)", "AUC example", 0),
    ("Macro-F1", "Macro-F1 @0", 1), ("Micro-F1", "Micro-F1 @0", 2),
    ("Example-F1", "Example-F1 @0", None),
    ("Macro-F1 (SCut)", "Macro-F1 SCut", 1), ("Micro-F1 (SCut)", "Micro-F1 SCut", 2),
    ("Example-F1 (SCut)", "Example-F1 SCut", None),
)
#: Single-task methods (the paper's STL rows and the scikit-learn baselines).
SINGLE_TASK = ("OneNorm", "RidgeReg", "IndLogistic", "IndSVM", "sklearn-Ridge",
               "sklearn-LogReg")


def _cell(r: dict | None) -> str:
    return f"{r['mean']:.2f} ± {r['std']:.2f}" if r else "—"


def _paper(dataset: str, method: str, j: int | None) -> float | None:
    vals = PAPER_TABLE_II.get(dataset, {}).get(method)
    return None if vals is None or j is None else vals[j]


def _sign(x: float) -> str:
    return f"{x:+.2f}".replace("-", "−")


def claims_table(rows: list[dict], dataset: str) -> str:
    """Which of the paper's statements hold on ``dataset`` under each definition (Markdown).

    Rows: MixedNorm at least every other method run (margin over the best other; the paper's
    claim 1), TraceNorm above OneNorm (claim 2), MixedNorm above the best single-task method
    (claim 3), MixedNorm's and RidgeReg's values within 2 points of the paper's, and the gap
    MixedNorm - RidgeReg against the paper's.
    """
    ours = {(r["method"], r["metric"]): r["mean"] for r in rows if r["dataset"] == dataset}
    names = [m for m in METHODS if (m, "AUC") in ours]
    head = "| statement | " + " | ".join(t for _, t, _ in DEFINITIONS) + " |"
    lines = [head, "|---" * (len(DEFINITIONS) + 1) + "|"]

    def row(title, fn):
        cells = []
        for metric, _, j in DEFINITIONS:
            try:
                cells.append(fn(metric, j))
            except (KeyError, TypeError, ValueError):
                cells.append("—")
        lines.append(f"| {title} | " + " | ".join(cells) + " |")

    def verdict(x: float) -> str:
        return f"{'yes' if x >= 0 else 'no'} ({_sign(x)})"

    def best_other(metric, j):
        if "MixedNorm" not in names or len(names) < 2:
            raise KeyError
        other = max((m for m in names if m != "MixedNorm"), key=lambda m: ours[(m, metric)])
        return verdict(ours[("MixedNorm", metric)] - ours[(other, metric)]) + (
            f" vs {other}" if ours[("MixedNorm", metric)] < ours[(other, metric)] else "")

    def trace_one(metric, j):
        return verdict(ours[("TraceNorm", metric)] - ours[("OneNorm", metric)])

    def mtl_stl(metric, j):
        stl = [m for m in SINGLE_TASK if m in names]
        if not stl:
            raise KeyError
        return verdict(ours[("MixedNorm", metric)] - max(ours[(m, metric)] for m in stl))

    def near(method):
        def fn(metric, j):
            p = _paper(dataset, method, j)
            if p is None:
                raise KeyError
            d = ours[(method, metric)] - p
            return f"{'yes' if abs(d) <= 2 else 'no'} ({_sign(d)})"
        return fn

    def gap(metric, j):
        p_mix, p_ridge = _paper(dataset, "MixedNorm", j), _paper(dataset, "RidgeReg", j)
        if p_mix is None or p_ridge is None:
            raise KeyError
        return (f"{_sign(ours[('MixedNorm', metric)] - ours[('RidgeReg', metric)])} "
                f"(paper {_sign(p_mix - p_ridge)})")

    row("1. MixedNorm ≥ every other method run (margin over the best other)", best_other)
    row("2. TraceNorm > OneNorm", trace_one)
    row("3. MixedNorm ≥ the best single-task method", mtl_stl)
    row("MixedNorm within 2 points of the paper's value", near("MixedNorm"))
    row("RidgeReg within 2 points of the paper's value", near("RidgeReg"))
    row("MixedNorm − RidgeReg, ours (paper)", gap)
    return "\n".join(lines)


def markdown_tables(rows: list[dict], walls: dict | None = None) -> str:
    """The docs page's tables (Markdown): per data set the AUC under the three definitions,
    the F1 under the three definitions at score 0 and at SCut thresholds, the paper's Table II
    rows beside ours, and the claims check (:func:`claims_table`)."""
    out = []
    for dataset in dict.fromkeys(r["dataset"] for r in rows):
        if dataset not in PAPER_TABLE_II:
            continue
        ours = {(r["method"], r["metric"]): r for r in rows if r["dataset"] == dataset}
        names = [m for m in METHODS if (m, "AUC") in ours]
        rep = ours[(names[0], "AUC")]["repeats"] if names else 0
        setting = next((r["setting"] for r in rows if r["dataset"] == dataset), "")
        wall = f", {walls[dataset]:.0f} s wall" if walls and dataset in walls else ""
        title = dataset.capitalize()
        out.append(f"**{title}**: AUC (%, mean ± std over {rep} splits, {setting}{wall})\n")
        out.append("| method | macro (per label; the paper's Average AUC) | micro (pooled) "
                   "| example-based (per row) | paper (Average AUC) |")
        out.append("|---|---|---|---|---|")
        paper_rows = names + [p for p in PAPER_TABLE_II[dataset] if p not in names]
        for m in paper_rows:
            p = _paper(dataset, m, 0)
            cells = [_cell(ours.get((m, k))) for k in ("AUC", "AUC (micro)", "AUC (example)")]
            cells.append(f"{p:.2f}" if p is not None else "—")
            out.append(f"| {LABELS.get(m, m + ' (not implemented)')} | " + " | ".join(cells)
                       + " |")
        out.append("")
        out.append(f"**{title}**: F1 (%): at score 0, and at per-label thresholds tuned on the "
                   "out-of-fold training scores (SCut); last column: Macro-F1 at per-label "
                   "thresholds chosen on the test labels (an upper bound, not a result)\n")
        out.append("| method | Macro @0 | Micro @0 | Example @0 | Macro SCut | Micro SCut "
                   "| Example SCut | paper Macro | paper Micro | Macro, test-tuned |")
        out.append("|---|---|---|---|---|---|---|---|---|---|")
        keys = ("Macro-F1", "Micro-F1", "Example-F1") + SCUT_METRICS
        for m in paper_rows:
            pm, pu = _paper(dataset, m, 1), _paper(dataset, m, 2)
            paper = (f"{pm:.2f} | {pu:.2f}" if pm is not None else "— | —")
            out.append(f"| {LABELS.get(m, m + ' (not implemented)')} | "
                       + " | ".join(_cell(ours.get((m, k))) for k in keys)
                       + f" | {paper} | {_cell(ours.get((m, 'Macro-F1 (test-tuned)')))} |")
        out.append("")
        out.append(f"**{title}**: the paper's statements under each definition "
                   "(yes/no, with the margin in points)\n")
        out.append(claims_table(rows, dataset))
        out.append("")
    return "\n".join(out)


def _run_synthetic(repeats, n_grid, seed0, out_dir, quick) -> list[dict]:
    rows = []
    for setting in ("planted",) if quick else ("fig2", "planted"):
        acc: dict = {}
        secs: dict = {}
        arrays = None
        for r in range(repeats):
            vals, s, arrays_r = run_synthetic(setting, seed0 + r, n_grid)
            arrays = arrays if arrays is not None else arrays_r
            for k, v in vals.items():
                acc.setdefault(k, []).append(v)
            for k, v in s.items():
                secs.setdefault(k, []).append(v)
            log(NAME, f"synthetic/{setting} repetition {r + 1}/{repeats} done")
        label = ("Fig. 2 setup (m=30, n=60, d=100, rank 10)" if setting == "fig2"
                 else "planted (m=40, n=150, d=50, rank 2, 3% sparse)")
        for (method, metric), v in acc.items():
            rows.append(summarize(NAME, "synthetic", label, method, metric, v,
                                  secs.get(method, [])))
        if out_dir is not None and arrays is not None:
            plot_recovery(arrays, Path(out_dir) / f"fig2_{setting}.png")
    return rows
