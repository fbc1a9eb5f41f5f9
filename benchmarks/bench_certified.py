"""Does ``converged_`` mean correct? Every catalogue model on School, against an exact solve.

What it measures (issue 22, "the benchmark stays honest"). A MALSAR user's setting: the first
20 schools of School (``multitask.datasets.load_school``, 2,346 rows, unequal task sizes),
the unscaled features plus the constant column, no intercept (``fit_intercept=False``). Each
model is fitted through the conversion its documentation gives: MALSAR's least squares
``sum_t (c / 2) ||y_t - X_t w_t||^2`` (``c = 1``: the functions with a factor 1/2, ``c = 2``:
those without, Dirty, rMTFL and the capped l1) is the library's loss on the rows of task ``t``
multiplied by ``sqrt(c n_t)``, with the same strengths (user guide, section 4; each model's
page in ``docs/models``). The same again on z-scored features (the feature columns centred
and scaled over the 20 schools' rows, the constant column kept).

For every model, at its default settings and at ``tol=1e-8``:

* the true relative objective gap ``(F(W_fit) - F*) / |F*|``, with ``F`` MALSAR's objective
  written here in numpy from the formulas of the model pages (the library's own objective on
  the scaled rows, the same function) and ``F*`` the optimum of the same formula written in
  cvxpy and solved by Clarabel and by SCS at tight tolerances (both solutions evaluated by the
  numpy formula; ``F*`` is the lower; their difference is printed as ``ref agree``);
* ``converged_``, ``optimality_`` and ``n_iter_`` as the fitted model reports them (read as
  attributes: the script does not depend on how the library certifies them), and
  ``certified_`` where the model has it (the ``converged_`` cell then says "certified" or
  "not certified");
* the CPU time of the fit (``time.process_time``, one BLAS thread through threadpoolctl,
  median of ``--repeats`` measurements after a warm-up fit in the same process; a fit under
  0.2 s is timed in loops of about 0.2 s) and, at ``tol=1e-8``, its ratio to the CPU time of
  ``L21Regressor`` reaching ``tol=1e-8`` on the same data, timed the same way in the same
  process.

Each model runs in its own worker process; a measurement that uses more than ``--cap`` CPU
seconds is stopped and the row marked "not reached" (the ``tol=1e-8`` fits run with
``max_iter=--max-iter``; a CPU cap, not a wall-clock one, because the machine may be shared;
a worker that reports nothing for ten times the cap in wall seconds is stopped too). When
the cap stops a later measurement, the row keeps the earlier ones and says how many were
timed. The capped l1 model is not convex: its gap is that of its last stage,
a weighted l1 problem (``multitask.penalties.RowWeightedL1``), against that stage's exact
solution given the stage's weights (read from the fitted model's ``solver_info_`` stage keys).

Hyper-parameters are a fraction of each strength's ``alpha_max``-type threshold on the data
(``FRACTION``, per feature set: ``max |G|``, ``max_j ||G_j.||_2``, ``||G||_2``, ... of the
MALSAR loss gradient ``G`` at ``W = 0``) and, for the quadratic (ridge-type) strengths, a
fraction (``RIDGE_FRACTION``) of the loss's Lipschitz constant ``c max_t ||X_t||_2^2``; the
script prints them, and the ``shrink`` column says where the solution lies between the
unregularized fit (0) and ``W = 0`` (1).

The reference optima are cached under ``<out>/cache`` keyed by a hash of the problem (data,
model, parameters, stage weights, solver settings), so reruns are quick; ``--no-cache``
recomputes them. ``<out>/results_<features>.json`` holds every figure at full precision.

Usage::

    python benchmarks/bench_certified.py [--features raw|zscore|both] [--models KEY ...]
        [--repeats 3] [--cap 60] [--max-iter 1000000] [--out results/bench_certified]
        [--no-cache] [--list] [--reprint]
    python benchmarks/bench_certified.py --sweep [--features ...] [--models KEY ...]
        [--repeats 1] [--cap 10] [--sweep-references]

The sweep (issue 32), ``--sweep [--models KEY ...] [--sweep-references]``: the composite models
(Dirty with ``q = inf`` and ``q = 2``, rMTFL, the fused sparse group lasso, TGL, sparse + low
rank, robust MTL; ``--models`` picks some of them) at the parameters of MALSAR's example
scripts (``Least_Dirty`` ``rho1 = 50, rho2 = 10``; ``Least_rMTFL`` ``5, 5``;
``Least_CFGLasso`` and ``Least_TGL`` ``5, 5, 5``) and on a 5 x 5 grid of their two strengths,
from ``1e-3`` to ``0.5`` of each strength's threshold (log-spaced; :func:`sweep_params` says
which strengths and thresholds). At every point: the default fit (``converged_``,
``optimality_`` and its gap to the certified ``tol=1e-8`` fit, or to cvxpy's optimum with
``--sweep-references``) and the ``tol=1e-8`` fit's CPU over ``L21Regressor``'s on the same
data (same worker process); the acceptance is at most :data:`SWEEP_RATIO` times, every default
fit converged and within :data:`SWEEP_DEFAULT_GAP`. ``<out>/results_sweep_<features>.json``
holds the figures; ``--sweep --reprint`` prints its tables again.

``--models`` takes row keys (``--list`` prints them; e.g. ``l21 trace dirty_inf``);
``--reprint`` prints the tables of the results saved in ``--out`` without fitting. A full
run (both feature sets, every model) takes tens of minutes on two cores, most of it in the
``tol=1e-8`` fits of the first-order composite models (up to ``--repeats`` times ``--cap``
each); the references take seconds each.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing as mp
import os
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

N_SCHOOLS = 20
TIGHT_TOL = 1e-8
FEATURE_SETS = ("raw", "zscore")
#: Fraction of each sparsity-type threshold (max |G|, max_j ||G_j.||_2, ||G||_2, ...), per
#: feature set: on raw School the large-scale columns dominate the gradient, and a tenth of
#: the threshold keeps two features; a thousandth keeps a handful (see the shrink column).
FRACTION = {"raw": 1e-3, "zscore": 1e-1}
#: Fraction of the loss's Lipschitz constant for the quadratic (ridge-type) strengths.
RIDGE_FRACTION = {"raw": 1e-3, "zscore": 1e-1}
#: Extra factors ``(features, model, parameter) -> factor`` where the common fraction leaves
#: one part of a split model at zero (z-scored rMTFL: no outlier task; z-scored Dirty with
#: q = 2: no sparse entry).
FACTOR = {("zscore", "rmtfl", "lambda2"): 0.8, ("zscore", "dirty_2", "rho2"): 0.5}
#: cvxpy settings of the reference solves (part of the cache key).
CLARABEL_SETTINGS = {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12,
                     "tol_ktratio": 1e-10, "max_iter": 2000}
SCS_SETTINGS = {"eps_abs": 1e-11, "eps_rel": 1e-11, "max_iters": 500_000,
                "time_limit_secs": 600.0}
#: A fit under this many CPU seconds is timed in loops of about this length.
MIN_SECONDS = 0.2
#: Exit status of a worker whose measurement passed the CPU cap.
CAP_EXIT = 75
#: The parent stops a worker that reports nothing for this many times the cap (wall seconds).
WALL_FACTOR = 10
#: Relative feasibility slack of a trace-ball constraint at a fitted or reference point.
BALL_SLACK = 1e-9


# ============================================================================= the data
@dataclass
class Problem:
    """MALSAR's data: per-task designs (with the constant column last) and targets.

    ``Xs[t]`` is ``(n_t, d)``, ``ys[t]`` is ``(n_t,)``; ``W`` is ``(d, m)``.
    """

    features: str
    Xs: list[np.ndarray]
    ys: list[np.ndarray]

    @property
    def n_features(self) -> int:
        return self.Xs[0].shape[1]

    @property
    def n_tasks(self) -> int:
        return len(self.Xs)

    def scaled(self, c: float) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """The rows of task ``t`` multiplied by ``sqrt(c n_t)``: the library's loss
        ``sum_t (1 / n_t) sum_i (y_i - x_i^T w_t)^2 / 2`` on them is
        ``sum_t (c / 2) ||y_t - X_t w_t||^2``."""
        out_X, out_y = [], []
        for X, y in zip(self.Xs, self.ys, strict=True):
            s = np.sqrt(c * len(y))
            out_X.append(s * X)
            out_y.append(s * y)
        return out_X, out_y

    def gradient_at_zero(self, c: float) -> np.ndarray:
        """``G = grad_W sum_t (c / 2) ||y_t - X_t w_t||^2`` at ``W = 0``: column ``t`` is
        ``-c X_t^T y_t``."""
        return -c * np.column_stack([X.T @ y for X, y in zip(self.Xs, self.ys, strict=True)])

    def lipschitz(self, c: float) -> float:
        """``c max_t ||X_t||_2^2``, the Lipschitz constant of the loss gradient."""
        return c * max(float(np.linalg.norm(X, 2)) ** 2 for X in self.Xs)

    def digest(self) -> str:
        h = hashlib.sha256()
        for X, y in zip(self.Xs, self.ys, strict=True):
            h.update(np.ascontiguousarray(X).tobytes())
            h.update(np.ascontiguousarray(y).tobytes())
        return h.hexdigest()


def load_problem(features: str, n_schools: int = N_SCHOOLS) -> Problem:
    """School's first ``n_schools`` schools with the constant column; ``"zscore"`` centres
    and scales every other column over the rows of those schools (a constant column is left
    as it is)."""
    from multitask.datasets import load_school

    if features not in FEATURE_SETS:
        raise ValueError(f"features must be one of {FEATURE_SETS}, got {features!r}.")
    school = load_school(include_bias=True)
    Xs = [np.asarray(X, dtype=np.float64) for X in school.X[:n_schools]]
    ys = [np.asarray(y, dtype=np.float64) for y in school.y[:n_schools]]
    if features == "zscore":
        stacked = np.vstack(Xs)
        mu, sd = stacked[:, :-1].mean(axis=0), stacked[:, :-1].std(axis=0)
        sd = np.where(sd > 0, sd, 1.0)
        Xs = [np.column_stack([(X[:, :-1] - mu) / sd, X[:, -1]]) for X in Xs]
    return Problem(features, Xs, ys)


# ============================================================================= numpy formulas
def malsar_loss(problem: Problem, W: np.ndarray, c: float) -> float:
    """``sum_t (c / 2) ||y_t - X_t w_t||^2``."""
    return float(sum(0.5 * c * np.sum((y - X @ W[:, t]) ** 2)
                     for t, (X, y) in enumerate(zip(problem.Xs, problem.ys, strict=True))))


def l21(W: np.ndarray) -> float:
    """``sum_j ||W_j.||_2`` (rows = features)."""
    return float(np.linalg.norm(W, axis=1).sum())


def column_l2(W: np.ndarray) -> float:
    """``sum_t ||W_.t||_2`` (columns = tasks)."""
    return float(np.linalg.norm(W, axis=0).sum())


def l1(W: np.ndarray) -> float:
    return float(np.abs(W).sum())


def l1inf(W: np.ndarray) -> float:
    """``sum_j max_t |W_jt|``."""
    return float(np.abs(W).max(axis=1).sum()) if W.size else 0.0


def nuclear(W: np.ndarray) -> float:
    return float(np.linalg.svd(W, compute_uv=False).sum())


def chain_differences(W: np.ndarray) -> np.ndarray:
    """``W R = [w_1 - w_2, ..., w_{m-1} - w_m]`` (MALSAR's chain structure matrix ``R``)."""
    return W[:, :-1] - W[:, 1:]


def chain_structure(m: int) -> np.ndarray:
    """MALSAR's ``R`` (``m x (m - 1)``) of the chain graph ``1 - 2 - ... - m``."""
    R = np.zeros((m, m - 1))
    idx = np.arange(m - 1)
    R[idx, idx] = 1.0
    R[idx + 1, idx] = -1.0
    return R


def cluster_relaxation(W: np.ndarray, eta: float, k: float, side_size: int) -> float:
    """``min_M tr(W^T (eta I + M)^{-1} W)`` (or with ``W^T``) over ``0 <= M <= I``,
    ``tr M = k``, ``M`` of size ``side_size``: ``min sum_i s_i^2 / (eta + gamma_i)`` over
    ``0 <= gamma_i <= 1``, ``sum gamma_i = k`` on the singular values ``s_i`` of ``W`` (padded
    with zeros to ``side_size``). The minimizer is ``gamma_i = clip(theta s_i - eta, 0, 1)``
    with ``theta`` found by bisection (the sum is non-decreasing in ``theta``)."""
    s = np.linalg.svd(W, compute_uv=False)
    s = s[s > 0]
    if s.size == 0:
        return 0.0
    if s.size <= k:  # every nonzero direction can take gamma = 1
        return float(np.sum(s**2) / (eta + 1.0))
    if k > side_size:
        raise ValueError(f"k={k} exceeds the size {side_size} of M.")

    def total(theta):
        return np.clip(theta * s - eta, 0.0, 1.0).sum()

    lo, hi = 0.0, (1.0 + eta) / s.min()
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if total(mid) < k:
            lo = mid
        else:
            hi = mid
    gamma = np.clip(hi * s - eta, 0.0, 1.0)
    return float(np.sum(s**2 / (eta + gamma)))


def trace_ball_excess(Q: np.ndarray, radius: float) -> float:
    """``max(0, ||Q||_* / radius - 1)``: the relative violation of ``||Q||_* <= radius``."""
    return max(0.0, nuclear(Q) / radius - 1.0) if radius > 0 else float(nuclear(Q) > 0)


# ============================================================================= the models
@dataclass(frozen=True)
class Model:
    """One row: a library model, its MALSAR counterpart and its objective in two languages.

    ``c`` is MALSAR's loss factor (``sum_t (c / 2) ||y_t - X_t w_t||^2``); ``parts`` names
    the variables (``W``, or the two parts of ``W = P + Q``); ``choose(problem)`` gives the
    MALSAR parameters; ``estimator(params, problem)`` the fitted model's estimator (through
    the documented conversion, ``fit_intercept=False``); ``read(est)`` the fitted parts, each
    ``(d, m)``; ``penalty_np(params, parts, stage, problem)`` and
    ``penalty_cp(params, parts, stage, problem)`` the penalty (and constraints) in numpy and
    cvxpy.
    """

    key: str
    label: str
    malsar: str
    c: float
    parts: tuple[str, ...]
    choose: Callable[[Problem], dict]
    estimator: Callable[[dict, Problem], Any]
    penalty_np: Callable[..., float]
    penalty_cp: Callable[..., tuple]
    read: Callable[[Any], list[np.ndarray]] = field(default=lambda est: [est.coef_.T.copy()])
    stage: Callable[[Any], Any] = field(default=lambda est: None)


def _thresholds(problem: Problem, c: float) -> dict[str, float]:
    G = problem.gradient_at_zero(c)
    return {"l1": float(np.abs(G).max()), "l21": float(np.linalg.norm(G, axis=1).max()),
            "trace": float(np.linalg.norm(G, 2)), "col": float(np.linalg.norm(G, axis=0).max()),
            "l1inf_dual": float(np.abs(G).sum(axis=1).max()), "lip": problem.lipschitz(c)}


def _frac(problem: Problem, model: str = "", name: str = "") -> float:
    return FRACTION[problem.features] * FACTOR.get((problem.features, model, name), 1.0)


def _rfrac(problem: Problem) -> float:
    return RIDGE_FRACTION[problem.features]


def _models() -> list[Model]:
    import cvxpy as cp

    import multitask as mt

    def thr(problem, c):
        return _thresholds(problem, c)

    def cp_chain(W):
        return W[:, :-1] - W[:, 1:]

    def cp_l21(W):
        return cp.sum(cp.norm(W, 2, axis=1))

    def cp_col(W):
        return cp.sum(cp.norm(W, 2, axis=0))

    def cp_mean_dev(W, m):
        return cp.sum_squares(W - cp.sum(W, axis=1, keepdims=True) / m)

    def cluster_cp(W, params, side):
        eta, k = params["eta"], params["k"]
        if side == "tasks":
            M = cp.Variable((W.shape[1], W.shape[1]), symmetric=True)
            term = cp.matrix_frac(W.T, eta * np.eye(W.shape[1]) + M)
        else:
            M = cp.Variable((W.shape[0], W.shape[0]), symmetric=True)
            term = cp.matrix_frac(W, eta * np.eye(W.shape[0]) + M)
        n = M.shape[0]
        cons = [M >> 0, np.eye(n) - M >> 0, cp.trace(M) == k]
        return params["rho1"] * eta * (1 + eta) * term, cons

    def cluster_np(params, parts, problem, side):
        W = parts[0]
        eta, k = params["eta"], params["k"]
        size = W.shape[1] if side == "tasks" else W.shape[0]
        return params["rho1"] * eta * (1 + eta) * cluster_relaxation(W, eta, k, size)

    def est(cls, **kw):
        return cls(fit_intercept=False, **kw)

    models = [
        Model("trace", "TraceNormRegressor", "Least_Trace", 1.0, ("W",),
              lambda p: {"rho1": _frac(p) * thr(p, 1.0)["trace"]},
              lambda q, p: est(mt.TraceNormRegressor, alpha=q["rho1"]),
              lambda q, P, s, p: q["rho1"] * nuclear(P[0]),
              lambda q, P, s, p: (q["rho1"] * cp.normNuc(P[0]), [])),
        Model("l21", "L21Regressor", "Least_L21", 1.0, ("W",),
              lambda p: {"rho1": _frac(p) * thr(p, 1.0)["l21"]},
              lambda q, p: est(mt.L21Regressor, alpha=q["rho1"]),
              lambda q, P, s, p: q["rho1"] * l21(P[0]),
              lambda q, P, s, p: (q["rho1"] * cp_l21(P[0]), [])),
        Model("graph", "GraphRegularizedRegressor (chain graph)", "Least_SRMTL", 1.0, ("W",),
              lambda p: {"rho1": _rfrac(p) * thr(p, 1.0)["lip"],
                         "rho2": _frac(p) * thr(p, 1.0)["l1"]},
              lambda q, p: est(mt.GraphRegularizedRegressor, graph=chain_structure(p.n_tasks),
                               graph_type="structure", alpha=q["rho1"], alpha_l1=q["rho2"]),
              lambda q, P, s, p: (q["rho1"] * float(np.sum(chain_differences(P[0]) ** 2))
                                  + q["rho2"] * l1(P[0])),
              lambda q, P, s, p: (q["rho1"] * cp.sum_squares(cp_chain(P[0]))
                                  + q["rho2"] * cp.sum(cp.abs(P[0])), [])),
        Model("temporal", "TemporalGroupLassoRegressor", "Least_TGL", 1.0, ("W",),
              lambda p: {"rho1": 0.0, "rho2": _rfrac(p) * thr(p, 1.0)["lip"],
                         "rho3": _frac(p) * thr(p, 1.0)["l21"]},
              lambda q, p: est(mt.TemporalGroupLassoRegressor, alpha_l2=2 * q["rho1"],
                               alpha_smooth=q["rho2"], alpha_group=q["rho3"]),
              lambda q, P, s, p: (q["rho1"] * float(np.sum(P[0] ** 2))
                                  + q["rho2"] * float(np.sum(chain_differences(P[0]) ** 2))
                                  + q["rho3"] * l21(P[0])),
              lambda q, P, s, p: (q["rho1"] * cp.sum_squares(P[0])
                                  + q["rho2"] * cp.sum_squares(cp_chain(P[0]))
                                  + q["rho3"] * cp_l21(P[0]), [])),
        Model("rmtfl", "RobustFeatureLearningRegressor", "Least_rMTFL", 2.0, ("P", "Q"),
              lambda p: {"lambda1": _frac(p) * thr(p, 2.0)["l21"],
                         "lambda2": _frac(p, "rmtfl", "lambda2") * thr(p, 2.0)["col"]},
              lambda q, p: est(mt.RobustFeatureLearningRegressor, alpha_group=q["lambda1"],
                               alpha_outlier=q["lambda2"]),
              lambda q, P, s, p: q["lambda1"] * l21(P[0]) + q["lambda2"] * column_l2(P[1]),
              lambda q, P, s, p: (q["lambda1"] * cp_l21(P[0]) + q["lambda2"] * cp_col(P[1]),
                                  []),
              read=lambda e: [e.feature_component_.T.copy(), e.outlier_component_.T.copy()]),
        Model("dirty_inf", "DirtyModelRegressor (q = inf)", "Least_Dirty", 2.0, ("P", "Q"),
              lambda p: {"rho1": _frac(p) * thr(p, 2.0)["l1inf_dual"],
                         "rho2": _frac(p) * thr(p, 2.0)["l1"]},
              lambda q, p: est(mt.DirtyModelRegressor, alpha_group=q["rho1"],
                               alpha_l1=q["rho2"], q=np.inf),
              lambda q, P, s, p: q["rho1"] * l1inf(P[0]) + q["rho2"] * l1(P[1]),
              lambda q, P, s, p: (q["rho1"] * cp.sum(cp.max(cp.abs(P[0]), axis=1))
                                  + q["rho2"] * cp.sum(cp.abs(P[1])), []),
              read=lambda e: [e.group_component_.T.copy(), e.sparse_component_.T.copy()]),
        Model("dirty_2", "DirtyModelRegressor (q = 2)", "Least_Dirty, l2,1 block part", 2.0,
              ("P", "Q"),
              lambda p: {"rho1": _frac(p) * thr(p, 2.0)["l21"],
                         "rho2": _frac(p, "dirty_2", "rho2") * thr(p, 2.0)["l1"]},
              lambda q, p: est(mt.DirtyModelRegressor, alpha_group=q["rho1"],
                               alpha_l1=q["rho2"], q=2.0),
              lambda q, P, s, p: q["rho1"] * l21(P[0]) + q["rho2"] * l1(P[1]),
              lambda q, P, s, p: (q["rho1"] * cp_l21(P[0]) + q["rho2"] * cp.sum(cp.abs(P[1])),
                                  []),
              read=lambda e: [e.group_component_.T.copy(), e.sparse_component_.T.copy()]),
        Model("cmtl", "ClusteredMTLRegressor (k = 2)", "Least_CMTL", 1.0, ("W",),
              lambda p: {"rho1": _rfrac(p) * thr(p, 1.0)["lip"], "eta": 0.1, "k": 2},
              lambda q, p: est(mt.ClusteredMTLRegressor, alpha=q["rho1"], eta=q["eta"],
                               k=q["k"]),
              lambda q, P, s, p: cluster_np(q, P, p, "tasks"),
              lambda q, P, s, p: cluster_cp(P[0], q, "tasks")),
        Model("caso", "ConvexASORegressor (k = 2)", "Least_CASO", 1.0, ("W",),
              lambda p: {"rho1": _rfrac(p) * thr(p, 1.0)["lip"], "eta": 0.1, "k": 2},
              lambda q, p: est(mt.ConvexASORegressor, alpha=q["rho1"], eta=q["eta"],
                               k=q["k"]),
              lambda q, P, s, p: cluster_np(q, P, p, "features"),
              lambda q, P, s, p: cluster_cp(P[0], q, "features")),
        Model("fused", "FusedSparseGroupLassoRegressor", "Least_CFGLasso", 1.0, ("W",),
              lambda p: {"rho1": _frac(p) * thr(p, 1.0)["l1"],
                         "rho2": _frac(p) * thr(p, 1.0)["l1"],
                         "rho3": _frac(p) * thr(p, 1.0)["l21"]},
              lambda q, p: est(mt.FusedSparseGroupLassoRegressor, alpha_l1=q["rho1"],
                               alpha_fused=q["rho2"], alpha_group=q["rho3"]),
              lambda q, P, s, p: (q["rho1"] * l1(P[0]) + q["rho2"] * l1(chain_differences(P[0]))
                                  + q["rho3"] * l21(P[0])),
              lambda q, P, s, p: (q["rho1"] * cp.sum(cp.abs(P[0]))
                                  + q["rho2"] * cp.sum(cp.abs(cp_chain(P[0])))
                                  + q["rho3"] * cp_l21(P[0]), [])),
        Model("sparse_low_rank", "SparseLowRankRegressor", "Least_SparseTrace", 1.0, ("P", "Q"),
              lambda p: {"gamma": _frac(p) * thr(p, 1.0)["l1"],
                         "tau": 0.1 * nuclear(_least_squares(p))},
              lambda q, p: est(mt.SparseLowRankRegressor, alpha=q["gamma"], radius=q["tau"]),
              lambda q, P, s, p: (q["gamma"] * l1(P[0])
                                  if trace_ball_excess(P[1], q["tau"]) <= BALL_SLACK
                                  else float("inf")),
              lambda q, P, s, p: (q["gamma"] * cp.sum(cp.abs(P[0])),
                                  [cp.normNuc(P[1]) <= q["tau"]]),
              read=lambda e: [e.sparse_component_.T.copy(), e.low_rank_component_.T.copy()]),
        Model("robust", "RobustMTLRegressor", "Least_RMTL", 1.0, ("L", "E"),
              lambda p: {"rho1": _frac(p) * thr(p, 1.0)["trace"],
                         "rho2": 0.7 * _frac(p) * thr(p, 1.0)["trace"]},
              lambda q, p: est(mt.RobustMTLRegressor, alpha=q["rho1"],
                               lam=q["rho2"] / q["rho1"]),
              lambda q, P, s, p: q["rho1"] * nuclear(P[0]) + q["rho2"] * column_l2(P[1]),
              lambda q, P, s, p: (q["rho1"] * cp.normNuc(P[0]) + q["rho2"] * cp_col(P[1]), []),
              read=lambda e: [e.low_rank_component_.T.copy(), e.outlier_component_.T.copy()]),
        Model("mean", "MeanRegularizedRegressor", "Least_SRMTL, R = I - 11^T/m", 1.0, ("W",),
              lambda p: {"rho1": _rfrac(p) * thr(p, 1.0)["lip"]},
              lambda q, p: est(mt.MeanRegularizedRegressor, alpha=q["rho1"]),
              lambda q, P, s, p: q["rho1"] * float(np.sum(
                  (P[0] - P[0].mean(axis=1, keepdims=True)) ** 2)),
              lambda q, P, s, p: (q["rho1"] * cp_mean_dev(P[0], p.n_tasks), [])),
        Model("relationship", "TaskRelationshipRegressor", "(none; MTRL, 0.5 sum of squares)",
              1.0, ("W",),
              lambda p: {"rho": _rfrac(p) * thr(p, 1.0)["lip"]},
              lambda q, p: est(mt.TaskRelationshipRegressor, alpha=q["rho"]),
              lambda q, P, s, p: 0.5 * q["rho"] * nuclear(P[0]) ** 2,
              lambda q, P, s, p: (0.5 * q["rho"] * cp.square(cp.normNuc(P[0])), [])),
        Model("lasso", "IndependentLassoRegressor", "Least_Lasso", 1.0, ("W",),
              lambda p: {"rho1": _frac(p) * thr(p, 1.0)["l1"]},
              lambda q, p: est(mt.IndependentLassoRegressor, alpha=q["rho1"]),
              lambda q, P, s, p: q["rho1"] * l1(P[0]),
              lambda q, P, s, p: (q["rho1"] * cp.sum(cp.abs(P[0])), [])),
        Model("capped_l1", "CappedL1Regressor (last stage)", "Least_msmtfl_capL1", 2.0, ("W",),
              lambda p: _capped_params(p),
              lambda q, p: est(mt.CappedL1Regressor, alpha=q["lambda"], theta=q["theta"]),
              lambda q, P, s, p: q["lambda"] * float(
                  _stage_weights(s, p.n_features) @ np.abs(P[0]).sum(axis=1)),
              lambda q, P, s, p: (q["lambda"] * cp.sum(
                  cp.multiply(_stage_weights(s, p.n_features)[:, None], cp.abs(P[0]))), []),
              stage=lambda e: _capped_stage(e)),
    ]
    return models


def _least_squares(problem: Problem) -> np.ndarray:
    """Per-task minimum-norm least-squares weights (``numpy.linalg.lstsq``), ``(d, m)``."""
    return np.column_stack([np.linalg.lstsq(X, y, rcond=None)[0]
                            for X, y in zip(problem.Xs, problem.ys, strict=True)])


def _capped_params(problem: Problem) -> dict:
    """``lambda`` a fraction of ``max |G|``; ``theta`` half the median of the nonzero row l1
    norms of the per-task minimum-norm least-squares weights (so that the large rows are
    capped and the small ones are not)."""
    G = problem.gradient_at_zero(2.0)
    rows = np.abs(_least_squares(problem)).sum(axis=1)
    return {"lambda": _frac(problem) * float(np.abs(G).max()),
            "theta": 0.5 * float(np.median(rows[rows > 0]))}


def _stage_weights(stage, n_features: int) -> np.ndarray:
    """Weights ``1 - capped_j`` of the last stage (``stage``: the capped rows)."""
    w = np.ones(n_features)
    if stage:
        w[list(stage)] = 0.0
    return w


def _capped_stage(est) -> tuple[int, ...]:
    """The capped rows of the fitted model's last stage problem: its last stage key
    (``solver_info_["stage_keys"][-1]``); without it, the capped rows of the solution
    (the same when the stages stopped on a repeated key)."""
    info = getattr(est, "solver_info_", None) or {}
    keys = info.get("stage_keys") if isinstance(info, dict) else None
    if keys:
        return tuple(int(j) for j in keys[-1])
    rows = np.abs(est.coef_).sum(axis=0)
    return tuple(int(j) for j in np.flatnonzero(rows >= float(est.theta)))


def model_table() -> dict[str, Model]:
    return {m.key: m for m in _models()}


def objective(model: Model, params: dict, parts: list[np.ndarray], stage, problem: Problem
              ) -> float:
    """MALSAR's objective of ``model`` at ``parts`` (``W = sum of parts``), in numpy."""
    W = np.sum(parts, axis=0)
    return malsar_loss(problem, W, model.c) + model.penalty_np(params, parts, stage, problem)


def shrink(problem: Problem, W: np.ndarray, c: float) -> float:
    """``(loss(W) - loss(W_ls)) / (loss(0) - loss(W_ls))``: 0 for the unregularized fit, 1
    for ``W = 0``."""
    lo = malsar_loss(problem, _least_squares(problem), c)
    hi = malsar_loss(problem, np.zeros_like(W), c)
    return (malsar_loss(problem, W, c) - lo) / (hi - lo)


# ============================================================================= references
def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in sorted(x.items())}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (np.floating, float)):
        return float(x)
    if isinstance(x, (np.integer, int)):
        return int(x)
    return x


def reference_key(model: Model, params: dict, stage, problem: Problem) -> str:
    blob = json.dumps({"model": model.key, "c": model.c, "params": _jsonable(params),
                       "stage": _jsonable(stage), "data": problem.digest(),
                       "clarabel": CLARABEL_SETTINGS, "scs": SCS_SETTINGS, "version": 1},
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _cvxpy_problem(model: Model, params: dict, stage, problem: Problem):
    """The objective in cvxpy (divided by the loss at zero, a constant, for the solvers'
    scaling) with the least squares of each task written on its thin SVD:
    ``||y - X w||^2 = ||U^T y - S V^T w||^2 + (||y||^2 - ||U^T y||^2)``."""
    import cvxpy as cp

    d, m = problem.n_features, problem.n_tasks
    parts = [cp.Variable((d, m)) for _ in model.parts]
    W = parts[0] if len(parts) == 1 else sum(parts[1:], parts[0])
    scale = malsar_loss(problem, np.zeros((d, m)), model.c)
    loss = 0
    for t, (X, y) in enumerate(zip(problem.Xs, problem.ys, strict=True)):
        U, s, Vt = np.linalg.svd(X, full_matrices=False)
        z = U.T @ y
        const = max(float(y @ y - z @ z), 0.0)
        loss = loss + 0.5 * model.c * (cp.sum_squares(np.diag(s) @ Vt @ W[:, t] - z) + const)
    pen, cons = model.penalty_cp(params, parts, stage, problem)
    return cp.Problem(cp.Minimize((loss + pen) / scale), cons), parts


def _feasible(model: Model, params: dict, parts: list[np.ndarray]) -> list[np.ndarray]:
    """A solver's point made feasible (the trace ball of sparse + low rank: scaled in)."""
    if model.key == "sparse_low_rank":
        nrm = nuclear(parts[1])
        if nrm > params["tau"]:
            parts = [parts[0], parts[1] * (params["tau"] / nrm)]
    return parts


def solve_reference(model: Model, params: dict, stage, problem: Problem) -> dict:
    """Clarabel and SCS on the cvxpy problem; each solution evaluated by :func:`objective`."""
    out: dict[str, Any] = {}
    for name, settings in (("CLARABEL", CLARABEL_SETTINGS), ("SCS", SCS_SETTINGS)):
        prob, parts = _cvxpy_problem(model, params, stage, problem)
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                prob.solve(solver=name, **settings)
            status = str(prob.status)
            ok = parts[0].value is not None and status in ("optimal", "optimal_inaccurate")
        except Exception as exc:  # a solver failure is reported, not fatal
            status, ok = f"error: {type(exc).__name__}: {exc}"[:200], False
        entry: dict[str, Any] = {"status": status, "seconds": time.perf_counter() - t0}
        if ok:
            values = _feasible(model, params, [np.asarray(v.value) for v in parts])
            entry["F"] = objective(model, params, values, stage, problem)
            if name == "CLARABEL" or "W" not in out:
                out["W"] = np.sum(values, axis=0).tolist()
        out[name] = entry
    finite = [out[s]["F"] for s in ("CLARABEL", "SCS") if "F" in out[s]]
    out["F_star"] = min(finite) if finite else float("nan")
    if len(finite) == 2:
        out["agree"] = abs(finite[0] - finite[1]) / abs(out["F_star"])
    else:
        out["agree"] = float("nan")
    return out


def reference(model: Model, params: dict, stage, problem: Problem, cache_dir: Path | None,
              log=print) -> dict:
    key = reference_key(model, params, stage, problem)
    path = None if cache_dir is None else cache_dir / f"{model.key}-{problem.features}-{key}.json"
    if path is not None and path.exists():
        return json.loads(path.read_text())
    log(f"  [reference] {model.key} ({problem.features}) stage={stage!r}: Clarabel and SCS ...")
    ref = solve_reference(model, params, stage, problem)
    log(f"  [reference] F* = {ref['F_star']:.12g}, Clarabel {ref['CLARABEL']['status']} "
        f"({ref['CLARABEL']['seconds']:.1f} s), SCS {ref['SCS']['status']} "
        f"({ref['SCS']['seconds']:.1f} s), agree {ref['agree']:.1e}")
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(_jsonable(ref)))
    return ref


# ============================================================================= the fits (worker)
def _fit_once(model: Model, params: dict, problem: Problem, *, tol: float | None,
              max_iter: int | None) -> dict:
    """One fit (CPU seconds of ``fit`` only) and what the fitted model reports."""
    from sklearn.exceptions import ConvergenceWarning

    est = model.estimator(params, problem)
    if tol is not None:
        est.set_params(tol=tol)
    if max_iter is not None:
        est.set_params(max_iter=max_iter)
    Xs, ys = problem.scaled(model.c)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.process_time()
        est.fit(Xs, ys)
        cpu = time.process_time() - t0
    solver = getattr(est, "solver_", None)
    return {"cpu": cpu, "parts": [p.tolist() for p in model.read(est)],
            "coef": est.coef_.T.tolist(), "stage": _jsonable(model.stage(est)),
            "converged": bool(getattr(est, "converged_", False)),
            "certified": (None if getattr(est, "certified_", None) is None
                          else bool(est.certified_)),
            "optimality": float(getattr(est, "optimality_", float("nan"))),
            "n_iter": int(getattr(est, "n_iter_", -1)),
            "solver": getattr(solver, "name", type(solver).__name__),
            "warned": sum(issubclass(w.category, ConvergenceWarning) for w in caught)}


#: The start (process CPU seconds) of the worker's current measurement, for its watchdog.
_MEASURING: dict[str, float | None] = {"since": None}


def _watchdog(cap: float) -> None:
    """End this worker (exit status :data:`CAP_EXIT`) when the current measurement has used
    more than ``cap`` CPU seconds of the process."""
    while True:
        time.sleep(0.1)
        since = _MEASURING["since"]
        if since is not None and time.process_time() - since > cap:
            os._exit(CAP_EXIT)


def _timed(conn, label: str, r: int, fn):
    """Send ``start``, run ``fn()`` under the watchdog, return its result."""
    conn.send(("start", label, r))
    _MEASURING["since"] = time.process_time()
    try:
        return fn()
    finally:
        _MEASURING["since"] = None


def _measure(conn, label: str, model: Model, params: dict, problem: Problem, *,
             tol: float | None, max_iter: int | None, repeats: int) -> None:
    """``repeats`` CPU measurements of one fit, each sent to the parent. A first fit under
    :data:`MIN_SECONDS` is a probe: each measurement is then the mean of a loop of fits lasting
    about ``MIN_SECONDS`` (the clock and the machine's noise dominate a fit of a few
    milliseconds); a longer first fit is the first measurement."""
    probe = _timed(conn, label, 0,
                   lambda: _fit_once(model, params, problem, tol=tol, max_iter=max_iter))
    if probe["cpu"] >= MIN_SECONDS:
        conn.send(("done", label, 0, {**probe, "loops": 1}))
        loops, todo = 1, repeats - 1
    else:
        conn.send(("probe", label, 0))
        loops, todo = int(np.ceil(MIN_SECONDS / max(probe["cpu"], 1e-4))), repeats
    for r in range(1, todo + 1):
        outs = _timed(conn, label, r, lambda: [
            _fit_once(model, params, problem, tol=tol, max_iter=max_iter)
            for _ in range(loops)])
        conn.send(("done", label, r,
                   {**outs[-1], "cpu": sum(o["cpu"] for o in outs) / loops, "loops": loops}))


def _worker(conn, job: dict) -> None:
    """In its own process, one BLAS thread: L21's warm-up fit and its ``tol=1e-8``
    measurements, then the model's warm-up fit, its default and its ``tol=1e-8``
    measurements; a message before and after each."""
    import threading

    from threadpoolctl import threadpool_limits

    threading.Thread(target=_watchdog, args=(job["cap"],), daemon=True).start()
    with threadpool_limits(limits=1):
        table = model_table()
        problem = load_problem(job["features"])
        model, l21m = table[job["model"]], table["l21"]
        params, l21_params = job["params"], job["l21_params"]
        tight = {"tol": TIGHT_TOL, "max_iter": job["max_iter"], "repeats": job["repeats"]}
        default = {"tol": None, "max_iter": None, "repeats": job["repeats"]}
        for label, m, p in (("l21-warmup", l21m, l21_params), ("warmup", model, params)):
            out = _timed(conn, label, 0,
                         lambda m=m, p=p: _fit_once(m, p, problem, tol=None, max_iter=None))
            conn.send(("done", label, 0, out))
            if label == "l21-warmup":
                _measure(conn, "l21-tight", l21m, l21_params, problem, **tight)
        _measure(conn, "default", model, params, problem, **default)
        _measure(conn, "tight", model, params, problem, **tight)
    conn.send(("end",))
    conn.close()


def run_fits(job: dict, cap: float, log=print) -> dict:
    """Run :func:`_worker` for one model. Its watchdog ends it when one measurement passes
    ``cap`` CPU seconds (exit status :data:`CAP_EXIT`); the parent ends it when nothing
    happens for ``WALL_FACTOR * cap`` wall seconds (a fit that hangs without computing)."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_worker, args=(child, {**job, "cap": cap}), daemon=True)
    proc.start()
    child.close()
    fits: dict[str, list[dict]] = {}
    stopped = None
    current = None
    try:
        while True:
            if not parent.poll(WALL_FACTOR * cap):
                stopped = {"why": f"no progress in {WALL_FACTOR * cap:.0f} wall s",
                           "fit": current}
                break
            try:
                msg = parent.recv()
            except EOFError:
                stopped = {"why": "worker ended", "fit": current}
                break
            if msg[0] == "start":
                current = [msg[1], msg[2]]
            elif msg[0] in ("done", "probe"):
                if msg[0] == "done":
                    fits.setdefault(msg[1], []).append(msg[3])
                current = None
            else:
                break
    finally:
        if proc.is_alive():
            proc.kill()  # only this benchmark's own worker, by its process object
        proc.join(10)
    if stopped is not None:
        if proc.exitcode == CAP_EXIT:
            stopped["why"] = f"past the cap of {cap:g} CPU s"
        log(f"  [{job['model']}] stopped: fit {stopped['fit']} {stopped['why']} "
            f"(exit status {proc.exitcode})")
    return {"fits": fits, "stopped": stopped, "repeats": job["repeats"]}


# ============================================================================= one row
def _summary(fits: list[dict]) -> dict | None:
    if not fits:
        return None
    last = fits[-1]
    return {**{k: last.get(k) for k in ("converged", "certified", "optimality", "n_iter",
                                        "solver", "warned", "stage")},
            "cpu": float(np.median([f["cpu"] for f in fits])), "n_timed": len(fits),
            "parts": last["parts"], "coef": last["coef"]}


def evaluate(model: Model, params: dict, problem: Problem, run: dict, cache_dir, log=print
             ) -> dict:
    """Gaps of the default and tight fits against their references."""
    row: dict[str, Any] = {"model": model.key, "label": model.label, "malsar": model.malsar,
                           "features": problem.features, "params": params,
                           "stopped": run["stopped"], "repeats": run.get("repeats")}
    l21 = _summary(run["fits"].get("l21-tight", []))
    row["l21_cpu"] = None if l21 is None else l21["cpu"]
    for which in ("default", "tight"):
        s = _summary(run["fits"].get(which, []))
        if s is None:
            row[which] = None
            continue
        stage = None if s["stage"] is None else tuple(s["stage"])
        ref = reference(model, params, stage, problem, cache_dir, log)
        parts = [np.asarray(p) for p in s.pop("parts")]
        coef = np.asarray(s.pop("coef"))
        F = objective(model, params, parts, stage, problem)
        s["F"] = F
        s["F_star"] = ref["F_star"]
        s["gap"] = (F - ref["F_star"]) / abs(ref["F_star"])
        s["ref_agree"] = ref["agree"]
        s["ref_status"] = {k: ref[k]["status"] for k in ("CLARABEL", "SCS")}
        s["parts_sum_vs_coef"] = float(np.abs(np.sum(parts, axis=0) - coef).max())
        s["shrink"] = shrink(problem, np.sum(parts, axis=0), model.c)
        s["nonzero_rows"] = int(np.count_nonzero(np.any(np.sum(parts, axis=0) != 0, axis=1)))
        s["stage"] = stage
        if which == "tight":
            s["cpu_over_l21"] = (s["cpu"] / row["l21_cpu"]) if row["l21_cpu"] else None
        row[which] = s
    return row


# ============================================================================= printing
def _fmt_params(params: dict) -> str:
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in params.items())


def _g(x, spec=".1e") -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "-" if x is None else str(x)
    return format(x, spec)


def print_tables(rows: list[dict], problem: Problem, cap: float, out=print) -> None:
    sizes = [len(y) for y in problem.ys]
    out(f"\n## School, first {problem.n_tasks} schools, {problem.features} features + constant "
        f"column, no intercept ({sum(sizes)} rows, {problem.n_features} features, task sizes "
        f"{min(sizes)}-{max(sizes)})\n")
    out("Parameters (MALSAR's, fractions: " f"{FRACTION[problem.features]:g} of the thresholds, "
        f"{RIDGE_FRACTION[problem.features]:g} of the Lipschitz constant) and references "
        "(cvxpy; ref agree = |F(Clarabel) - F(SCS)| / F*):\n")
    out("| model | MALSAR | parameters | F* | ref agree | Clarabel / SCS | shrink | nonzero rows |")
    out("|---|---|---|---|---|---|---|---|")
    for r in rows:
        s = r["tight"] or r["default"]
        if s is None:
            out(f"| {r['label']} | {r['malsar']} | {_fmt_params(r['params'])} | - | - | - | - "
                "| - |")
            continue
        st = s["ref_status"]
        out(f"| {r['label']} | {r['malsar']} | {_fmt_params(r['params'])} | "
            f"{s['F_star']:.10g} | {_g(s['ref_agree'])} | {st['CLARABEL']} / {st['SCS']} | "
            f"{s['shrink']:.3f} | {s['nonzero_rows']} |")
    out("\nRelative objective gap (F(W_fit) - F*) / |F*|, what the model reports, CPU seconds "
        "(median of the timed fits, one BLAS thread); at tol=1e-8 also CPU / L21Regressor's "
        "CPU to tol=1e-8 in the same process:\n")
    out("| model | default gap | converged_ | optimality_ | n_iter_ | CPU s | tol 1e-8 gap "
        "| converged_ | optimality_ | n_iter_ | CPU s | L21 CPU s | CPU / L21 | solver |")
    out("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        cells = [r["label"]]
        for which in ("default", "tight"):
            s = r[which]
            if s is None:
                cells += [f"not reached (> {cap:g} CPU s)", "-", "-", "-", "-"]
                continue
            cpu = f"{s['cpu']:.3g}"
            if r.get("repeats") and s["n_timed"] < r["repeats"]:
                cpu += f" ({s['n_timed']} of {r['repeats']} timed)"
            conv = str(s["converged"])
            if s.get("certified") is not None:  # models that say whether optimality_ certifies
                conv += ", certified" if s["certified"] else ", not certified"
            cells += [_g(s["gap"], ".2e"), conv, _g(s["optimality"]),
                      f"{s['n_iter']:,}", cpu]
        t = r["tight"]
        ratio = None if t is None else t.get("cpu_over_l21")
        cells += [_g(r["l21_cpu"], ".3g"),
                  "-" if ratio is None else (f"{ratio:,.0f}" if ratio >= 10 else f"{ratio:.2g}"),
                  (t or r["default"] or {}).get("solver", "-")]
        if r["model"] == "capped_l1":
            stages = [r[w]["stage"] for w in ("default", "tight") if r[w]]
            cells[0] += " (capped rows: " + " / ".join(str(len(s or ())) for s in stages) + ")"
        out("| " + " | ".join(cells) + " |")


# ============================================================================= the sweep
#: The composite (split) models of the sweep, in the order of the tables.
SWEEP_MODELS = ("dirty_inf", "dirty_2", "rmtfl", "fused", "temporal", "sparse_low_rank",
                "robust")
#: Fractions of each strength's threshold in the sweep's grid (5 x 5 points per model).
SWEEP_FRACTIONS = tuple(float(f) for f in np.logspace(-3, np.log10(0.5), 5))
#: The parameters of MALSAR's example scripts (``example_Dirty``, ``example_CFGLasso``,
#: ``example_rMTFL``, ``example_TGL``; Dirty with ``q = 2`` takes ``Least_Dirty``'s).
MALSAR_EXAMPLES = {
    "dirty_inf": {"rho1": 50.0, "rho2": 10.0},
    "dirty_2": {"rho1": 50.0, "rho2": 10.0},
    "rmtfl": {"lambda1": 5.0, "lambda2": 5.0},
    "fused": {"rho1": 5.0, "rho2": 5.0, "rho3": 5.0},
    "temporal": {"rho1": 5.0, "rho2": 5.0, "rho3": 5.0},
}
#: The ratio to ``L21Regressor``'s CPU and the default fits' gap the sweep checks each point
#: against (issue 32's acceptance).
SWEEP_RATIO = 10.0
SWEEP_DEFAULT_GAP = 1e-4


def sweep_strengths(key: str) -> tuple[str, str]:
    """The two strengths the sweep's grid varies (MALSAR's names; the first is the group
    or row strength)."""
    return {"dirty_inf": ("rho1", "rho2"), "dirty_2": ("rho1", "rho2"),
            "rmtfl": ("lambda1", "lambda2"), "fused": ("rho3", "rho1 = rho2"),
            "temporal": ("rho3", "rho2"), "sparse_low_rank": ("gamma", "tau"),
            "robust": ("rho1", "rho2")}[key]


def sweep_params(key: str, problem: Problem, f1: float, f2: float) -> dict:
    """MALSAR's parameters of ``key`` at the fractions ``(f1, f2)`` of its two strengths'
    thresholds (the strength that zeroes that part: :func:`_thresholds` of the gradient at
    zero; the smoothing strength of TGL a fraction of the loss's Lipschitz constant, the
    trace-ball radius of sparse + low rank a fraction of the trace norm of the per-task
    least-squares weights, beyond which the ball no longer binds)."""
    t1, t2 = _thresholds(problem, 1.0), _thresholds(problem, 2.0)
    if key == "dirty_inf":
        return {"rho1": f1 * t2["l1inf_dual"], "rho2": f2 * t2["l1"]}
    if key == "dirty_2":
        return {"rho1": f1 * t2["l21"], "rho2": f2 * t2["l1"]}
    if key == "rmtfl":
        return {"lambda1": f1 * t2["l21"], "lambda2": f2 * t2["col"]}
    if key == "fused":
        return {"rho1": f2 * t1["l1"], "rho2": f2 * t1["l1"], "rho3": f1 * t1["l21"]}
    if key == "temporal":
        return {"rho1": 0.0, "rho2": f2 * t1["lip"], "rho3": f1 * t1["l21"]}
    if key == "sparse_low_rank":
        return {"gamma": f1 * t1["l1"], "tau": f2 * nuclear(_least_squares(problem))}
    if key == "robust":
        return {"rho1": f1 * t1["trace"], "rho2": f2 * t1["col"]}
    raise ValueError(f"{key!r} is not a model of the sweep ({SWEEP_MODELS}).")


def sweep_points(key: str, problem: Problem) -> list[dict]:
    """MALSAR's example (where it has one), then the 5 x 5 grid: ``{"label", "fractions",
    "params"}`` per point."""
    points = []
    if key in MALSAR_EXAMPLES:
        points.append({"label": "MALSAR example", "fractions": None,
                       "params": dict(MALSAR_EXAMPLES[key])})
    for f1 in SWEEP_FRACTIONS:
        for f2 in SWEEP_FRACTIONS:
            points.append({"label": f"({f1:.3g}, {f2:.3g})", "fractions": [f1, f2],
                           "params": sweep_params(key, problem, f1, f2)})
    return points


def _sweep_worker(conn, job: dict) -> None:
    """In its own process, one BLAS thread: L21's ``tol=1e-8`` measurements (unless
    ``job["l21"]`` is false), a warm-up fit of the model, then for each of ``job["points"]``
    (index, params) the default and the ``tol=1e-8`` measurements."""
    import threading

    from threadpoolctl import threadpool_limits

    threading.Thread(target=_watchdog, args=(job["cap"],), daemon=True).start()
    with threadpool_limits(limits=1):
        table = model_table()
        problem = load_problem(job["features"])
        model, l21m = table[job["model"]], table["l21"]
        tight = {"tol": TIGHT_TOL, "max_iter": job["max_iter"], "repeats": job["repeats"]}
        default = {"tol": None, "max_iter": None, "repeats": job["repeats"]}
        if job["l21"]:
            out = _timed(conn, "l21-warmup", 0, lambda: _fit_once(
                l21m, job["l21_params"], problem, tol=None, max_iter=None))
            conn.send(("done", "l21-warmup", 0, out))
            _measure(conn, "l21-tight", l21m, job["l21_params"], problem, **tight)
        first = job["points"][0][1]
        out = _timed(conn, "warmup", 0, lambda: _fit_once(model, first, problem, tol=None,
                                                          max_iter=None))
        conn.send(("done", "warmup", 0, out))
        for i, params in job["points"]:
            _measure(conn, f"{i}:default", model, params, problem, **default)
            _measure(conn, f"{i}:tight", model, params, problem, **tight)
    conn.send(("end",))
    conn.close()


def _log_progress(key: str, features: str, points: list[dict], fits: dict, label: str,
                  repeats: int, log) -> None:
    """One line when a point's last ``tol=1e-8`` measurement is in: its CPU and its ratio to
    L21's (the tables come at the end of the model)."""
    if not label.endswith(":tight") or len(fits[label]) < repeats:
        return
    i = int(label.split(":")[0])
    cpu = float(np.median([f["cpu"] for f in fits[label]]))
    l21 = fits.get("l21-tight")
    ratio = cpu / float(np.median([f["cpu"] for f in l21])) if l21 else float("nan")
    last = fits[label][-1]
    log(f"  [{key}, {features}] {points[i]['label']}: 1e-8 {cpu:.3g} CPU s, {ratio:.3g}x L21, "
        f"n_iter {last['n_iter']:,}, {last['solver']}", flush=True)


def run_sweep_fits(key: str, features: str, points: list[dict], l21_params: dict, *,
                   repeats: int, cap: float, max_iter: int, log=print) -> dict:
    """:func:`_sweep_worker` over every point of one model; a worker stopped by the cap is
    replaced by a new one for the points after the one it was measuring (that point keeps
    what was measured)."""
    ctx = mp.get_context("spawn")
    fits: dict[str, list[dict]] = {}
    stopped: dict[int, dict] = {}
    todo = list(range(len(points)))
    need_l21 = True
    while todo:
        job = {"model": key, "features": features, "l21_params": l21_params,
               "points": [(i, points[i]["params"]) for i in todo], "repeats": repeats,
               "max_iter": max_iter, "cap": cap, "l21": need_l21}
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_sweep_worker, args=(child, job), daemon=True)
        proc.start()
        child.close()
        current = None
        ended = False
        try:
            while True:
                if not parent.poll(WALL_FACTOR * cap):
                    why = f"no progress in {WALL_FACTOR * cap:.0f} wall s"
                    break
                try:
                    msg = parent.recv()
                except EOFError:
                    why = "worker ended"
                    break
                if msg[0] == "start":
                    current = msg[1]
                elif msg[0] in ("done", "probe"):
                    if msg[0] == "done":
                        fits.setdefault(msg[1], []).append(msg[3])
                        _log_progress(key, features, points, fits, msg[1], repeats, log)
                    current = None
                else:
                    ended = True
                    break
        finally:
            if proc.is_alive():
                proc.kill()  # only this benchmark's own worker, by its process object
            proc.join(10)
        if ended:
            break
        if proc.exitcode == CAP_EXIT:
            why = f"past the cap of {cap:g} CPU s"
        need_l21 = "l21-tight" not in fits
        where = None if current is None or ":" not in current else int(current.split(":")[0])
        log(f"  [{key}, {features}] stopped: fit {current} {why} (exit status "
            f"{proc.exitcode})")
        if where is None:  # stopped outside a point's fits (a warm-up): give up
            for i in todo:
                stopped[i] = {"why": why, "fit": current}
            break
        stopped[where] = {"why": why, "fit": current}
        todo = [i for i in todo if i > where]
    return {"fits": fits, "stopped": stopped}


def evaluate_sweep(key: str, features: str, points: list[dict], run_: dict, problem: Problem,
                   cache_dir: Path | None, references: bool, log=print) -> dict:
    """Per point: the default and tight fits' reports, the objective ``F`` (the numpy
    formula at the fitted parts), the default fit's gap to the certified ``tol=1e-8`` fit
    (``(F_default - F_tight) / |F_tight|``, exact up to the tight fit's own certified gap)
    and, with ``references``, both gaps against cvxpy's optimum."""
    model = model_table()[key]
    fits = run_["fits"]
    l21 = _summary(fits.get("l21-tight", []))
    l21_cpu = None if l21 is None else l21["cpu"]
    rows = []
    for i, point in enumerate(points):
        params = point["params"]
        row: dict[str, Any] = {**point, "stopped": run_["stopped"].get(i)}
        for which in ("default", "tight"):
            s = _summary(fits.get(f"{i}:{which}", []))
            if s is not None:
                parts = [np.asarray(p) for p in s.pop("parts")]
                s.pop("coef")
                s["F"] = objective(model, params, parts, None, problem)
                s["nonzero_rows"] = int(np.count_nonzero(np.any(np.sum(parts, axis=0) != 0,
                                                                axis=1)))
            row[which] = s
        d, t = row["default"], row["tight"]
        if t is not None:
            t["certified"] = bool(t["converged"] and t["optimality"] <= TIGHT_TOL)
            t["cpu_over_l21"] = t["cpu"] / l21_cpu if l21_cpu else None
        if d is not None and t is not None:
            d["gap_to_tight"] = (d["F"] - t["F"]) / abs(t["F"])
        if references:
            ref = reference(model, params, None, problem, cache_dir, log)
            for s in (d, t):
                if s is not None:
                    s["gap"] = (s["F"] - ref["F_star"]) / abs(ref["F_star"])
        rows.append(row)
    return {"model": key, "label": model.label, "malsar": model.malsar, "features": features,
            "strengths": list(sweep_strengths(key)), "l21_cpu": l21_cpu, "points": rows}


def sweep_verdict(point: dict) -> list[str]:
    """What a point fails of the acceptance: the tight fit not certified or above
    :data:`SWEEP_RATIO` times L21's CPU, the default fit not converged or farther than
    :data:`SWEEP_DEFAULT_GAP` from the optimum."""
    out = []
    d, t = point["default"], point["tight"]
    if t is None:
        out.append("1e-8 not reached")
    else:
        if not t["certified"]:
            out.append("1e-8 not certified")
        ratio = t.get("cpu_over_l21")
        if ratio is None or ratio > SWEEP_RATIO:
            out.append(f"CPU > {SWEEP_RATIO:g}x L21")
    if d is None:
        out.append("default not reached")
    else:
        if not d["converged"]:
            out.append("default not converged")
        gap = d.get("gap", d.get("gap_to_tight"))
        if gap is None:
            out.append("default gap unknown")
        elif gap > SWEEP_DEFAULT_GAP:
            out.append(f"default gap > {SWEEP_DEFAULT_GAP:g}")
    return out


def _ratio_text(ratio) -> str:
    if ratio is None:
        return "-"
    return f"{ratio:,.0f}" if ratio >= 10 else f"{ratio:.2g}"


def print_sweep(results: list[dict], problem: Problem, cap: float, out=print) -> None:
    sizes = [len(y) for y in problem.ys]
    out(f"\n## Sweep: School, first {problem.n_tasks} schools, {problem.features} features + "
        f"constant column, no intercept ({sum(sizes)} rows, {problem.n_features} features)\n")
    out(f"MALSAR's example parameters and a grid of each model's two strengths at fractions "
        f"{', '.join(f'{f:.3g}' for f in SWEEP_FRACTIONS)} of their thresholds. CPU s: median "
        "of the timed fits, one BLAS thread; CPU / L21: against L21Regressor's CPU to "
        "tol=1e-8 on the same data, in the same worker process. The default fit's gap is to "
        "the certified tol=1e-8 fit (or to cvxpy's optimum with --sweep-references).\n")
    out("| model | points | largest CPU / L21 (at) | over "
        f"{SWEEP_RATIO:g}x | 1e-8 not certified | default not converged | largest default "
        "gap | L21 CPU s |")
    out("|---|---|---|---|---|---|---|---|")
    for res in results:
        pts = res["points"]
        ratios = [(p["tight"] or {}).get("cpu_over_l21") for p in pts]
        known = [(r, p["label"]) for r, p in zip(ratios, pts, strict=True) if r is not None]
        worst = max(known) if known else None
        over = sum(1 for p, r in zip(pts, ratios, strict=True)
                   if p["tight"] is None or r is None or r > SWEEP_RATIO)
        uncert = sum(1 for p in pts if p["tight"] is None or not p["tight"]["certified"])
        unconv = sum(1 for p in pts if p["default"] is None or not p["default"]["converged"])
        gaps = [p["default"].get("gap", p["default"].get("gap_to_tight"))
                for p in pts if p["default"] is not None]
        gaps = [g for g in gaps if g is not None]
        out(f"| {res['label']} | {len(pts)} | "
            + ("-" if worst is None else f"{_ratio_text(worst[0])} ({worst[1]})")
            + f" | {over} | {uncert} | {unconv} | "
            + (_g(max(gaps), ".1e") if gaps else "-") + f" | {_g(res['l21_cpu'], '.3g')} |")
    misses = [(res, p) for res in results for p in res["points"] if sweep_verdict(p)]
    out(f"\nPoints that miss the acceptance ({len(misses)} of "
        f"{sum(len(res['points']) for res in results)}; the fractions are those of the two "
        "strengths named in each model's table below):\n")
    if misses:
        out("| model | " + _SWEEP_HEADER[0])
        out("|---|" + _SWEEP_HEADER[1])
        for res, p in misses:
            out(f"| {res['label']} | " + " | ".join(_sweep_cells(p, cap)) + " |")
    for res in results:
        s1, s2 = res["strengths"]
        out(f"\n### {res['label']} ({res['malsar']}): fractions of ({s1}, {s2})\n")
        out("| " + _SWEEP_HEADER[0])
        out("|" + _SWEEP_HEADER[1])
        for p in res["points"]:
            out("| " + " | ".join(_sweep_cells(p, cap)) + " |")


_SWEEP_HEADER = ("point | parameters | default converged_ | optimality_ | gap | CPU s | "
                 "1e-8 converged_ | optimality_ | n_iter_ | CPU s | CPU / L21 | solver | fails |",
                 "---|---|---|---|---|---|---|---|---|---|---|---|---|")


def _sweep_cells(p: dict, cap: float) -> list[str]:
    """The cells of one point of the sweep's tables (:data:`_SWEEP_HEADER`)."""
    cells = [p["label"], _fmt_params(p["params"])]
    d, t = p["default"], p["tight"]
    if d is None:
        cells += [f"not reached (> {cap:g} CPU s)", "-", "-", "-"]
    else:
        gap = d.get("gap", d.get("gap_to_tight"))
        cells += [str(d["converged"]), _g(d["optimality"]), _g(gap, ".1e"), f"{d['cpu']:.3g}"]
    if t is None:
        cells += [f"not reached (> {cap:g} CPU s)", "-", "-", "-", "-", "-"]
    else:
        cells += [str(t["converged"]), _g(t["optimality"]), f"{t['n_iter']:,}",
                  f"{t['cpu']:.3g}", _ratio_text(t.get("cpu_over_l21")), t["solver"]]
    cells.append(", ".join(sweep_verdict(p)) or "-")
    return cells

def run_sweep(features: str, keys: list[str], *, repeats: int, cap: float, max_iter: int,
              out_dir: Path, use_cache: bool, references: bool, log=print) -> list[dict]:
    table = model_table()
    problem = load_problem(features)
    cache_dir = out_dir / "cache" if use_cache else None
    l21_params = table["l21"].choose(problem)
    results = []
    for key in keys:
        points = sweep_points(key, problem)
        log(f"[sweep {features}] {table[key].label}: {len(points)} points")
        run_ = run_sweep_fits(key, features, points, l21_params, repeats=repeats, cap=cap,
                              max_iter=max_iter, log=log)
        results.append({**evaluate_sweep(key, features, points, run_, problem, cache_dir,
                                         references, log), "cap": cap})
    return results


# ============================================================================= main
def run(features: str, keys: list[str], *, repeats: int, cap: float, max_iter: int,
        out_dir: Path, use_cache: bool, log=print) -> list[dict]:
    table = model_table()
    problem = load_problem(features)
    cache_dir = out_dir / "cache" if use_cache else None
    l21_params = table["l21"].choose(problem)
    rows = []
    for key in keys:
        model = table[key]
        params = model.choose(problem)
        log(f"[{features}] {model.label}: {_fmt_params(params)}")
        job = {"model": key, "features": features, "params": params,
               "l21_params": l21_params, "repeats": repeats, "max_iter": max_iter}
        run_ = run_fits(job, cap, log)
        rows.append({**evaluate(model, params, problem, run_, cache_dir, log), "cap": cap})
    return rows


def _code_version() -> str:
    """The imported library: a digest of its ``.py`` files, and the commit of the git checkout
    it lives in (with a note when its sources differ from that commit)."""
    import subprocess

    import multitask

    pkg = Path(multitask.__file__).resolve().parent
    h = hashlib.sha256()
    for f in sorted(pkg.rglob("*.py")):
        h.update(str(f.relative_to(pkg)).encode())
        h.update(f.read_bytes())
    version = getattr(multitask, "__version__", "?")
    text = f"multitask {version}, sources sha256 {h.hexdigest()[:12]}"
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=pkg, check=True,
                              capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "."], cwd=pkg,
                               check=True, capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return text + " (not in a git checkout)"
    return text + f", commit {head}" + (" with uncommitted changes" if dirty else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--features", choices=(*FEATURE_SETS, "both"), default="both")
    parser.add_argument("--models", nargs="+", default=None,
                        help="row keys (default: all; --list prints them)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cap", type=float, default=60.0,
                        help="CPU seconds after which a fit is stopped (row: not reached)")
    parser.add_argument("--max-iter", type=int, default=1_000_000,
                        help="max_iter of the tol=1e-8 fits")
    parser.add_argument("--out", type=Path, default=Path("results/bench_certified"))
    parser.add_argument("--no-cache", action="store_true")
    parser.add_argument("--list", action="store_true", help="print the row keys and exit")
    parser.add_argument("--reprint", action="store_true",
                        help="print the tables of the results already in --out and exit")
    parser.add_argument("--sweep", action="store_true",
                        help="the composite models over MALSAR's examples and a 5 x 5 grid "
                             "of their two strengths (--models: a subset of them)")
    parser.add_argument("--sweep-references", action="store_true",
                        help="with --sweep: the gaps against cvxpy's optimum at every point "
                             "too (slow; cached)")
    args = parser.parse_args(argv)
    table = model_table()
    if args.list:
        for m in table.values():
            print(f"{m.key:16s} {m.label} ({m.malsar})")
        return 0
    feats = FEATURE_SETS if args.features == "both" else (args.features,)
    if args.sweep:
        return _main_sweep(args, feats, parser)
    if args.reprint:
        for features in feats:
            path = args.out / f"results_{features}.json"
            if path.exists():
                rows = json.loads(path.read_text())
                print_tables(rows, load_problem(features), rows[0].get("cap", args.cap))
        return 0
    keys = args.models or list(table)
    unknown = [k for k in keys if k not in table]
    if unknown:
        parser.error(f"unknown model keys {unknown}; known: {list(table)}")
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    args.out.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()
    print(f"code: {_code_version()}")
    print(f"bench_certified: models {keys}; repeats {args.repeats}, cap {args.cap:g} s, "
          f"max_iter at tol=1e-8 {args.max_iter:,}; load average {load[0]:.2f} "
          f"(python {sys.version.split()[0]})")
    for features in feats:
        t0 = time.perf_counter()
        rows = run(features, keys, repeats=args.repeats, cap=args.cap, max_iter=args.max_iter,
                   out_dir=args.out, use_cache=not args.no_cache)
        print_tables(rows, load_problem(features), args.cap)
        (args.out / f"results_{features}.json").write_text(
            json.dumps(_jsonable(rows), indent=1))
        print(f"\n({features}: {time.perf_counter() - t0:.0f} s wall; figures in "
              f"{args.out / f'results_{features}.json'})")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    return 0


def _main_sweep(args, feats, parser) -> int:
    """``--sweep``: the composite models over their grids (module docstring)."""
    if args.reprint:
        for features in feats:
            path = args.out / f"results_sweep_{features}.json"
            if path.exists():
                results = json.loads(path.read_text())
                print_sweep(results, load_problem(features),
                            results[0].get("cap", args.cap) if results else args.cap)
        return 0
    keys = args.models or list(SWEEP_MODELS)
    unknown = [k for k in keys if k not in SWEEP_MODELS]
    if unknown:
        parser.error(f"the sweep has no models {unknown}; its models: {list(SWEEP_MODELS)}")
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"code: {_code_version()}")
    print(f"bench_certified --sweep: models {keys}; repeats {args.repeats}, cap {args.cap:g} "
          f"s, max_iter at tol=1e-8 {args.max_iter:,}; load average "
          f"{os.getloadavg()[0]:.2f} (python {sys.version.split()[0]})")
    for features in feats:
        t0 = time.perf_counter()
        results = run_sweep(features, keys, repeats=args.repeats, cap=args.cap,
                            max_iter=args.max_iter, out_dir=args.out,
                            use_cache=not args.no_cache, references=args.sweep_references)
        print_sweep(results, load_problem(features), args.cap)
        path = args.out / f"results_sweep_{features}.json"
        path.write_text(json.dumps(_jsonable(results), indent=1))
        print(f"\n(sweep {features}: {time.perf_counter() - t0:.0f} s wall; figures in "
              f"{path})")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
