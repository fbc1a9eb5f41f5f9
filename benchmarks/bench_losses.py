"""The regression and multi-class losses against their peers, in one process, at equal
objective; the Poisson l2,1 fit of all of beMTPL97; the peak memory of two fits.

    OMP_NUM_THREADS=1 python benchmarks/bench_losses.py [--repeats 3] [--only KEY ...]
        [--skip-first-fit] [--skip-memory] [--list]

**The peers' table.** Each problem is a loss, a model and a data set, with the objective
every package minimizes written out once here (scaling of :mod:`multitask.losses`: a task's
loss is the weighted mean over its rows, ``w_i / sum_t w``)::

    GLM ridge   sum_t [ mean_w half_deviance_p(y, exp(X_t w_t + b_t)) + alpha/2 ||w_t||^2 ]
    Huber ridge sum_t [ min_{s > 0} mean (s + s H_eps((X_t w_t + b_t - y) / s))
                        + alpha/2 ||w_t||^2 ]
    pinball l1  sum_t [ mean rho_tau(y - X_t w_t - b_t) + alpha ||w_t||_1 ]
    multinomial sum_t [ mean -log softmax(X_t W_t + b_t)_y + alpha/2 ||W_t||_F^2 ]
    GLM l1      sum_t [ mean half_deviance(...) + alpha ||w_t||_1 ]
    Poisson l21 sum_t mean half_deviance(...) + alpha sum_j ||W_j.||_2

Independent models (tasks decouple) against scikit-learn's estimator fitted once per task
with the same objective: ``PoissonRegressor``, ``GammaRegressor``, ``TweedieRegressor``
(``alpha``, ``sample_weight``: their ``1 / (2 sum s) sum s_i d_i + alpha/2 ||w||^2`` is the
task's term above), ``HuberRegressor`` (its ``sum_i (s + s H(r_i / s)) + alpha_t ||w||^2`` is
``n_t`` times the task's term with ``alpha_t = alpha n_t / 2``), ``QuantileRegressor`` (the
same ``alpha``; HiGHS on its own linear program, exact: one setting) and ``LogisticRegression``
(``C = 1 / (alpha n_t)``; every solver that fits a multinomial model: lbfgs, newton-cg,
newton-cholesky, sag, saga). Each peer solver is a peer of its own; the fastest counts.

The l1 and l2,1 models against skglm (0.5) where it models the same objective: its
``Poisson`` and ``Gamma`` datafits with ``L1`` and ``ProxNewton`` (its ``mean(exp(z) - y z)``
and ``mean(z + y e^{-z})`` are the half deviances up to a constant; an intercept per task),
its ``PoissonGroup`` with ``WeightedGroupL2`` and ``GroupProxNewton`` for l2,1 (the tasks as
blocks of a block-diagonal design of equal task sizes, so that skglm's ``1 / N`` is ``1 / (m
n_t)``: ``alpha / m`` there; the per-task intercepts as unpenalized groups of weight 0), and
its experimental ``Pinball`` datafit with ``PDCD_WS`` for the pinball loss with l1 (a sum over
rows, ``alpha n_t`` there; the solver fits no intercept, so this row has none in every package,
``QuantileRegressor(fit_intercept=False)`` beside it). skglm's ``Huber`` datafit has a fixed
threshold ``delta`` and no scale: not the objective of ``HuberRegressor`` and of our
``loss="huber"`` (the scale profiled out), so it has no row (printed). celer serves none of
these losses (and its estimators no longer run with the installed scikit-learn; printed).

Protocol (as ``benchmarks/bench_peers.py`` and ``bench_high_dim.py``, whose helpers it uses):
every objective is recomputed here from the returned coefficients with the formulas above.
The optimum ``p*`` is the lowest objective of every solver at the tightest setting of its
tolerance ladder (ours ``tol`` 1e-2 .. 1e-10, certified; the peers' ``tol`` 1e-2 .. 1e-12,
skglm's ``PDCD_WS`` 1e-2 .. 1e-6: each decade costs it about ten times the last). A setting's
fit is run once for the walks and its objective kept.
For ``eps`` in 1e-4 and 1e-6, each solver's ladder is walked from its loosest setting to the
first whose objective is within ``eps`` of ``p*`` (relative) and that setting's fit is timed:
CPU seconds (``time.process_time``), the median of ``--repeats`` (fits under 0.2 s repeated in
a loop; a fit over 5 s timed once), one BLAS / OpenMP / numba thread, every solver fitted
once before (the second fit in the process: compilation and caches apart). ``1e-8`` is walked
untimed: the check that every solver reaches the same objective (printed per solver). Ours
is the whole ``fit`` with ``solver="auto"`` (validation, conversion, the solver, the
certificate); a peer's is its ``fit`` (scikit-learn's once per task, on per-task arrays
prepared beforehand; skglm's on the design it takes). Ratios: fastest peer / ours (> 1: ours
is faster).

The first fit of ours in a fresh interpreter (imports done, numba's compilation of the kernels
the fit runs included) is measured apart, in a child process per problem (``--first-fit KEY``),
beside the second fit there.

**beMTPL97.** A Poisson l2,1 fit (``L21Regressor(loss="poisson")``, ``alpha = 0.1
alpha_max``) of all 80 districts, 163,212 policies (rate ``nclaims / expo`` with
``sample_weight=expo``, the 10 features standardized over all rows), to a certified ``tol =
1e-6`` (``converged_`` and the certified gap printed), against 80 per-district
``PoissonRegressor`` fits at ``tol=1e-6`` (the ridge ``alpha`` of the Poisson row, 1e-3;
lbfgs and newton-cholesky, the faster counts). Data: :func:`multitask.datasets.load_be_mtpl97`.

**Memory.** The peak memory of a fit against the size of its data, in a child interpreter that
compiles every kernel on a small problem first: the peak resident set size during the fit less
the resident set size before it (the kernel's high-water mark reset first, ``VmHWM``), and
tracemalloc's peak (numpy and Python allocations), for the Poisson l2,1 fit of beMTPL97 above
(data: the design, targets, weights and task ids as passed) and for a multinomial l2,1 fit
with 10 classes, 50 tasks and 2,000 sparse features (``benchmarks/bench_multinomial_memory.py``,
its acceptance size). Target: at most 3 times the data.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
from bench_peers import cpu_time, loosest, median_time, quiet
from scipy.special import logsumexp, xlogy

EPSILONS = (1e-4, 1e-6)
CHECK_EPS = 1e-8
OUR_TOLS = (1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10)
PEER_TOLS = tuple(10.0 ** -np.arange(2, 13))
#: skglm's PDCD_WS (a first-order primal-dual method) to 1e-6 only: each decade costs it
#: about ten times the last (its tighter settings are not run; the 1e-8 check prints its
#: best); ``p*`` of its row comes from the exact linear programs beside it.
PDCD_TOLS = tuple(10.0 ** -np.arange(2, 7))
#: A timed fit that takes longer than this (CPU seconds) is timed once, not ``--repeats``.
ONCE_SECONDS = 5.0
#: The ridge strength of the independent GLM, Huber and multinomial rows.
RIDGE = 1e-3
HUBER_EPSILON = 1.35
QUANTILE = 0.8
TWEEDIE_POWER = 1.5


# ----------------------------------------------------------------------------- objectives
def half_deviance(y: np.ndarray, z: np.ndarray, power: float) -> np.ndarray:
    """Half the Tweedie unit deviance of ``y`` at the mean ``exp(z)``, row by row."""
    mu = np.exp(z)
    if power == 1.0:
        return xlogy(y, y) - y * z - y + mu
    if power == 2.0:
        return z - np.log(y) + y / mu - 1.0
    p = power
    return (np.maximum(y, 0) ** (2 - p) / ((1 - p) * (2 - p)) - y * mu ** (1 - p) / (1 - p)
            + mu ** (2 - p) / (2 - p))


def huber_profile(r: np.ndarray, eps: float) -> float:
    """``min_{s >= 0} mean(s + s H_eps(r / s))`` (HuberRegressor's scale, profiled out): over
    the splits of the sorted ``|r|`` into inliers and outliers, the minimum of the convex
    piece ``s (1 - eps^2 P_out) + S_in / s + 2 eps A_out`` on its interval of ``s``."""
    a = np.sort(np.abs(r))
    n = a.size
    S = np.concatenate([[0.0], np.cumsum(a * a)]) / n  # S_in of the first k rows
    A = (a.sum() - np.concatenate([[0.0], np.cumsum(a)])) / n  # A_out of the rest
    k = np.arange(n + 1)
    coef = 1.0 - eps * eps * (n - k) / n
    lo = np.concatenate([[0.0], a]) / eps
    hi = np.concatenate([a, [np.inf]]) / eps
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(coef > 0, np.sqrt(S / np.where(coef > 0, coef, 1.0)), hi)
        s = np.clip(s, lo, hi)
        g = coef * s + np.where(S > 0, S / s, 0.0) + 2 * eps * A
    return float(np.min(g[np.isfinite(g)]))


@dataclass
class Tasks:
    """Per-task data: designs, targets, weights (None: all 1)."""

    Xs: list
    ys: list
    ws: list | None = None

    @property
    def m(self) -> int:
        return len(self.Xs)

    def weights(self, t: int) -> np.ndarray:
        n = len(self.ys[t])
        w = np.ones(n) if self.ws is None else np.asarray(self.ws[t], dtype=float)
        return w / w.sum()


def objective_fn(kind: str, tasks: Tasks, alpha: float) -> Callable:
    """``f(coef, intercept) -> objective`` of a problem (module docstring); ``coef`` of shape
    ``(m, d)`` (``(m, K, d)`` for the multinomial model), ``intercept`` ``(m,)`` / ``(m,
    K)`` or None."""

    def scores(t, coef, intercept):
        z = tasks.Xs[t] @ np.asarray(coef[t]).T
        return z + (0.0 if intercept is None else intercept[t])

    def f(coef, intercept) -> float:
        coef = np.asarray(coef, dtype=float)
        total = 0.0
        for t in range(tasks.m):
            y, w, z = tasks.ys[t], tasks.weights(t), scores(t, coef, intercept)
            if kind in ("poisson", "gamma", "tweedie", "poisson_l1", "gamma_l1",
                        "poisson_l21"):
                power = {"gamma": 2.0, "gamma_l1": 2.0, "tweedie": TWEEDIE_POWER}.get(kind, 1.0)
                total += float(w @ half_deviance(y, z, power))
            elif kind == "huber":
                total += huber_profile(z - y, HUBER_EPSILON)
            elif kind in ("quantile", "quantile_noint"):
                r = y - z
                total += float(w @ np.where(r >= 0, QUANTILE * r, (QUANTILE - 1) * r))
            elif kind == "multinomial":
                zz = np.where(np.isfinite(z), z, -np.inf)
                total += float(w @ (logsumexp(zz, axis=1) - zz[np.arange(len(y)), y]))
            if kind in ("poisson", "gamma", "tweedie", "huber", "multinomial"):
                total += 0.5 * alpha * float(np.sum(coef[t] ** 2))
            elif kind in ("quantile", "quantile_noint", "poisson_l1", "gamma_l1"):
                total += alpha * float(np.abs(coef[t]).sum())
        if kind == "poisson_l21":
            total += alpha * float(np.linalg.norm(coef, axis=0).sum())
        return total

    return f


# ----------------------------------------------------------------------------- data
def standardized(X: np.ndarray) -> np.ndarray:
    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


def be_mtpl97():
    """``(X standardized, rate, exposure, task)`` of all 163,212 policies."""
    from multitask.datasets import load_be_mtpl97

    d = load_be_mtpl97()
    return standardized(d.X), d.y / d.exposure, d.exposure, d.task


def be_mtpl97_tasks() -> Tasks:
    X, rate, expo, task = be_mtpl97()
    ids = np.unique(task)
    return Tasks([np.ascontiguousarray(X[task == t]) for t in ids],
                 [rate[task == t] for t in ids], [expo[task == t] for t in ids])


def synthetic(kind: str, m: int = 20, d: int = 20, sizes=(200, 2000), seed: int = 0,
              equal: int | None = None) -> Tasks:
    """``m`` tasks of 200 to 2,000 rows (or ``equal`` rows each), ``d`` standard normal
    features, weights ``0.2 N(0, 1)`` per task and an intercept 0.3: Poisson counts, Gamma
    (shape 2) or compound Poisson-Gamma (Tweedie, power 1.5) targets at the mean
    ``exp(score)``, or the score plus Student-t noise (Huber: 2 degrees of freedom; pinball:
    3)."""
    rng = np.random.default_rng(seed)
    n = [equal] * m if equal else rng.integers(sizes[0], sizes[1], m)
    Xs = [rng.standard_normal((k, d)) for k in n]
    W = 0.2 * rng.standard_normal((d, m))
    eta = [X @ W[:, t] + 0.3 for t, X in enumerate(Xs)]
    if kind == "poisson":
        ys = [rng.poisson(np.exp(e)).astype(float) for e in eta]
    elif kind == "gamma":
        ys = [rng.gamma(2.0, np.exp(e) / 2.0) for e in eta]
    elif kind == "tweedie":  # phi = 1: N ~ Poisson(mu^(2-p) / (2-p)), Gamma summands
        p = TWEEDIE_POWER
        ys = []
        for e in eta:
            mu = np.exp(e)
            counts = rng.poisson(mu ** (2 - p) / (2 - p))
            shape, scale = (2 - p) / (p - 1), (p - 1) * mu ** (p - 1)
            ys.append(np.where(counts > 0, rng.gamma(np.maximum(counts, 1) * shape, scale),
                               0.0))
    elif kind == "huber":
        ys = [e + rng.standard_t(2, len(e)) for e in eta]
    else:
        ys = [e + rng.standard_t(3, len(e)) for e in eta]
    return Tasks(Xs, ys)


def vowel_tasks() -> Tasks:
    from multitask.datasets import load_vowel

    d = load_vowel()
    X = standardized(d.X)
    ids = np.unique(d.task)
    labels = np.unique(d.y)
    code = np.searchsorted(labels, d.y)
    return Tasks([np.ascontiguousarray(X[d.task == t]) for t in ids],
                 [code[d.task == t] for t in ids])


# ----------------------------------------------------------------------------- solvers
Fit = Callable[[object], tuple]  # setting -> (coef, intercept)


@dataclass
class Problem:
    """One row of the table: ``ours(tol)`` fits our model, ``peers[name] = (fit(setting),
    ladder)``; every fit returns ``(coef, intercept, extra)``."""

    key: str
    label: str
    objective: Callable
    ours: Callable
    peers: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)


def _ours(make, tasks: Tasks):
    def fit(tol):
        est = make(tol)
        if tasks.ws is None:
            est.fit(tasks.Xs, tasks.ys)
        else:
            est.fit(tasks.Xs, tasks.ys, sample_weight=tasks.ws)
        coef = np.asarray(est.coef_)
        intercept = np.asarray(est.intercept_) if est.fit_intercept else None
        return coef, intercept, est
    return fit


def _per_task(make, tasks: Tasks, intercept: bool = True):
    """A scikit-learn-style estimator fitted once per task: ``(coef (m, ...), intercept)``."""
    def fit(setting):
        coefs, b = [], []
        for t in range(tasks.m):
            est = make(setting, t)
            if tasks.ws is None:
                est.fit(tasks.Xs[t], tasks.ys[t])
            else:
                est.fit(tasks.Xs[t], tasks.ys[t], sample_weight=tasks.ws[t])
            coefs.append(np.asarray(est.coef_))
            b.append(np.asarray(est.intercept_))
        return np.array(coefs), (np.array(b) if intercept else None), None
    return fit


def glm_ridge(key: str, kind: str, tasks: Tasks, label: str) -> Problem:
    from sklearn.linear_model import GammaRegressor, PoissonRegressor, TweedieRegressor

    import multitask as mt

    peer_cls = {"poisson": PoissonRegressor, "gamma": GammaRegressor}.get(kind)
    extra = {} if peer_cls else {"power": TWEEDIE_POWER, "link": "log"}
    peer_cls = peer_cls or TweedieRegressor
    ours = _ours(lambda tol: mt.IndependentRidgeRegressor(
        RIDGE, loss=kind, power=TWEEDIE_POWER, tol=tol, max_iter=100_000), tasks)
    peers = {}
    for solver in ("lbfgs", "newton-cholesky"):
        peers[f"{peer_cls.__name__}[{solver}]"] = (_per_task(
            lambda tol, t, solver=solver: peer_cls(alpha=RIDGE, tol=tol, solver=solver,
                                                   max_iter=100_000, **extra), tasks),
            PEER_TOLS)
    return Problem(key, f"{label} ({_shape(tasks)})", objective_fn(kind, tasks, RIDGE), ours,
                   peers)


def huber_ridge(tasks: Tasks) -> Problem:
    from sklearn.linear_model import HuberRegressor

    import multitask as mt

    ours = _ours(lambda tol: mt.IndependentRidgeRegressor(
        RIDGE, loss="huber", epsilon=HUBER_EPSILON, tol=tol, max_iter=100_000), tasks)
    peer = _per_task(lambda tol, t: HuberRegressor(
        epsilon=HUBER_EPSILON, alpha=RIDGE * len(tasks.ys[t]) / 2, tol=tol,
        max_iter=100_000), tasks)
    return Problem("huber", f"Huber ridge, {_shape(tasks)} (t_2 noise), vs HuberRegressor",
                   objective_fn("huber", tasks, RIDGE), ours,
                   {"HuberRegressor[lbfgs]": (peer, PEER_TOLS)},
                   ["skglm's Huber datafit has a fixed threshold and no scale: not this "
                    "objective (HuberRegressor's, the scale profiled out), no skglm row"])


def quantile_l1(tasks: Tasks, intercept: bool) -> Problem:
    from sklearn.linear_model import QuantileRegressor

    import multitask as mt

    top = mt.IndependentLassoRegressor(loss="quantile", quantile=QUANTILE,
                                       fit_intercept=intercept).alpha_max(tasks.Xs, tasks.ys)
    alpha = 0.05 * top
    ours = _ours(lambda tol: mt.IndependentLassoRegressor(
        alpha, loss="quantile", quantile=QUANTILE, fit_intercept=intercept, tol=tol), tasks)
    peers = {"QuantileRegressor[highs]": (_per_task(
        lambda s, t: QuantileRegressor(alpha=alpha, quantile=QUANTILE, solver="highs",
                                       fit_intercept=intercept), tasks, intercept), ("exact",))}
    kind = "quantile" if intercept else "quantile_noint"
    label = (f"pinball l1 (tau {QUANTILE}), {_shape(tasks)}, "
             + ("vs QuantileRegressor" if intercept else
                "no intercept, vs skglm Pinball + PDCD_WS and QuantileRegressor"))
    if not intercept:
        from skglm import GeneralizedLinearEstimator
        from skglm.experimental.pdcd_ws import PDCD_WS
        from skglm.experimental.quantile_regression import Pinball
        from skglm.penalties import L1

        def make(tol, t):
            n = len(tasks.ys[t])
            return GeneralizedLinearEstimator(Pinball(QUANTILE), L1(alpha * n),
                                              PDCD_WS(tol=tol, max_iter=10_000,
                                                      max_epochs=100_000))
        peers["skglm[PDCD_WS]"] = (_per_task(make, tasks, False), PDCD_TOLS)
    return Problem("quantile" if intercept else "quantile_skglm", label,
                   objective_fn(kind, tasks, alpha), ours, peers)


def multinomial_ridge(tasks: Tasks) -> Problem:
    from sklearn.linear_model import LogisticRegression

    import multitask as mt

    K = int(max(y.max() for y in tasks.ys)) + 1
    ours_fit = _ours(lambda tol: mt.IndependentRidgeClassifier(RIDGE * 10, tol=tol,
                                                               max_iter=100_000), tasks)
    peers = {}
    for solver in ("lbfgs", "newton-cg", "newton-cholesky", "sag", "saga"):
        peers[f"LogisticRegression[{solver}]"] = (_per_task(
            lambda tol, t, solver=solver: LogisticRegression(
                C=1.0 / (RIDGE * 10 * len(tasks.ys[t])), tol=tol, solver=solver,
                max_iter=1_000_000), tasks), PEER_TOLS)
    return Problem("multinomial", f"multinomial ridge, vowels: {_shape(tasks)}, {K} classes, "
                   "vs LogisticRegression", objective_fn("multinomial", tasks, RIDGE * 10),
                   ours_fit, peers)


def glm_l1_skglm(kind: str, tasks: Tasks) -> Problem:
    from skglm import GeneralizedLinearEstimator
    from skglm.datafits import Gamma, Poisson
    from skglm.penalties import L1
    from skglm.solvers import ProxNewton

    import multitask as mt

    top = mt.IndependentLassoRegressor(loss=kind).alpha_max(tasks.Xs, tasks.ys)
    alpha = 0.1 * top
    ours = _ours(lambda tol: mt.IndependentLassoRegressor(alpha, loss=kind, tol=tol,
                                                          max_iter=100_000), tasks)
    datafit = {"poisson": Poisson, "gamma": Gamma}[kind]
    peer = _per_task(lambda tol, t: GeneralizedLinearEstimator(
        datafit(), L1(alpha), ProxNewton(fit_intercept=True, tol=tol, max_iter=1000)), tasks)
    return Problem(f"{kind}_l1", f"{kind} l1, {_shape(tasks)}, vs skglm {datafit.__name__} "
                   "+ L1 + ProxNewton", objective_fn(f"{kind}_l1", tasks, alpha), ours,
                   {"skglm[ProxNewton]": (peer, PEER_TOLS)})


class SkglmGroupPoisson:
    """skglm's group Poisson model of an l2,1 multi-task fit: the tasks as the blocks of a
    block-diagonal design (Fortran order, as skglm takes it) with one unpenalized column of
    ones per task (the intercepts), feature ``j``'s group its ``m`` task columns."""

    def __init__(self, tasks: Tasks, alpha: float):
        m, d = tasks.m, tasks.Xs[0].shape[1]
        self.m, self.d = m, d
        blocks = scipy.linalg.block_diag(*tasks.Xs)
        ones = scipy.linalg.block_diag(*[np.ones((len(y), 1)) for y in tasks.ys])
        self.X = np.asfortranarray(np.hstack([blocks, ones]))
        self.y = np.concatenate(tasks.ys)
        groups = [[t * d + j for t in range(m)] for j in range(d)] + [[m * d + t]
                                                                      for t in range(m)]
        self.grp_indices = np.concatenate(groups).astype(np.int32)
        self.grp_ptr = np.concatenate([[0], np.cumsum([len(g) for g in groups])]) \
            .astype(np.int32)
        self.weights = np.concatenate([np.ones(d), np.zeros(m)])
        self.alpha = alpha

    def fit(self, tol):
        from skglm import GeneralizedLinearEstimator
        from skglm.datafits import PoissonGroup
        from skglm.penalties import WeightedGroupL2
        from skglm.solvers import GroupProxNewton

        est = GeneralizedLinearEstimator(
            PoissonGroup(self.grp_ptr, self.grp_indices),
            WeightedGroupL2(self.alpha / self.m, self.weights, self.grp_ptr, self.grp_indices),
            GroupProxNewton(tol=tol, max_iter=1000, fit_intercept=False)).fit(self.X, self.y)
        w = est.coef_
        return w[: self.m * self.d].reshape(self.m, self.d), w[self.m * self.d:], None


def poisson_l21_skglm(tasks: Tasks) -> Problem:
    import multitask as mt

    alpha = 0.1 * mt.L21Regressor(loss="poisson").alpha_max(tasks.Xs, tasks.ys)
    ours = _ours(lambda tol: mt.L21Regressor(alpha, loss="poisson", tol=tol,
                                             max_iter=100_000), tasks)
    group = SkglmGroupPoisson(tasks, alpha)
    return Problem("poisson_l21", f"Poisson l2,1, {_shape(tasks)}, vs skglm PoissonGroup + "
                   "WeightedGroupL2 + GroupProxNewton (block-diagonal design)",
                   objective_fn("poisson_l21", tasks, alpha), ours,
                   {"skglm[GroupProxNewton]": (group.fit, PEER_TOLS)})


def _shape(tasks: Tasks) -> str:
    sizes = [len(y) for y in tasks.ys]
    return (f"{tasks.m} tasks of {min(sizes)}-{max(sizes)} rows ({sum(sizes)}), "
            f"{tasks.Xs[0].shape[1]} features")


#: The problems, by key (built on demand: the data sets load when asked for).
PROBLEMS: dict[str, Callable[[], Problem]] = {
    "poisson": lambda: glm_ridge("poisson", "poisson", be_mtpl97_tasks(),
                                 "Poisson ridge, beMTPL97 (80 districts, exposure weights), "
                                 "vs PoissonRegressor"),
    "gamma": lambda: glm_ridge("gamma", "gamma", synthetic("gamma"),
                               "Gamma ridge, synthetic, vs GammaRegressor"),
    "tweedie": lambda: glm_ridge("tweedie", "tweedie", synthetic("tweedie"),
                                 f"Tweedie (power {TWEEDIE_POWER}) ridge, synthetic, vs "
                                 "TweedieRegressor"),
    "huber": lambda: huber_ridge(synthetic("huber")),
    "quantile": lambda: quantile_l1(synthetic("quantile"), True),
    "multinomial": lambda: multinomial_ridge(vowel_tasks()),
    "poisson_l1": lambda: glm_l1_skglm("poisson", synthetic("poisson", seed=1)),
    "gamma_l1": lambda: glm_l1_skglm("gamma", synthetic("gamma", seed=1)),
    "poisson_l21": lambda: poisson_l21_skglm(synthetic("poisson", m=10, equal=1000, seed=2)),
    "quantile_skglm": lambda: quantile_l1(synthetic("quantile", m=10, sizes=(200, 1000),
                                                    seed=3), False),
}


# ----------------------------------------------------------------------------- the table
def bench_problem(problem: Problem, repeats: int) -> list[dict]:
    from multitask import compiled

    compiled.set_up()
    print(f"\n{problem.label}")
    for note in problem.notes:
        print(f"  ({note})")
    f = problem.objective
    solvers = {"ours": (problem.ours, OUR_TOLS), **problem.peers}
    runs, fitted = {}, {name: {} for name in solvers}
    for name, (fit, ladder) in solvers.items():
        def run(setting, fit=fit, cache=fitted[name]):
            if setting not in cache:  # a setting's fit is deterministic: fitted once
                coef, b, extra = quiet(lambda: fit(setting))()
                cache[setting] = (f(coef, b), extra)
            return cache[setting]
        runs[name] = run
        run(ladder[0])  # the first fit in this process (compilation, caches) is not timed
    tight = {name: runs[name](solvers[name][1][-1]) for name in solvers}
    p_star = min(obj for obj, _ in tight.values())
    est = tight["ours"][1]
    print(f"  p* = {p_star:.12g} (lowest at the tightest settings); ours there: "
          f"{type(est.solver_).__name__}, converged={est.converged_}, certified gap "
          f"{est.optimality_:.1e}")
    rows, reach = [], {}
    for eps in (*EPSILONS, CHECK_EPS):
        target = p_star + eps * abs(p_star)
        row = {"problem": problem.key, "label": problem.label, "eps": eps, "p_star": p_star}
        for name, (fit, ladder) in solvers.items():
            setting, obj, extra = loosest(ladder, runs[name], target)
            if setting is None:
                row[name] = (np.nan, "not reached", obj)
                continue
            if eps == CHECK_EPS:
                reach[name] = (setting, obj)
                continue
            t = timed(quiet(lambda fit=fit, s=setting: fit(s)), repeats)
            what = f"tol={setting:.0e}" if not isinstance(setting, str) else setting
            if name == "ours":
                what += (f" {type(extra.solver_).__name__} n_iter={extra.n_iter_} "
                         f"converged={extra.converged_}")
                row["ours_tol"] = setting
            row[name] = (t, what, obj)
        if eps != CHECK_EPS:
            rows.append(row)
            print_row(row, [k for k in solvers if k != "ours"])
    notes = []
    for name in solvers:
        if name in reach:
            s, o = reach[name]
            what = s if isinstance(s, str) else f"tol={s:.0e}"
            notes.append(f"{name} {what} ({(o - p_star) / abs(p_star):.1e})")
        else:
            notes.append(f"{name} NOT reached (best {(tight[name][0] - p_star) / abs(p_star):.1e})")
    print(f"  every solver at {CHECK_EPS:.0e} of p*: " + "; ".join(notes))
    return rows


def timed(fn: Callable[[], object], repeats: int) -> float:
    """:func:`median_time`, or one run's CPU seconds for a fit over :data:`ONCE_SECONDS`."""
    first, _ = cpu_time(fn)
    return first if first > ONCE_SECONDS else median_time(fn, repeats)


def print_row(row: dict, peers) -> None:
    t_ours, what, obj = row["ours"]
    gap = (obj - row["p_star"]) / abs(row["p_star"])
    print(f"  eps={row['eps']:.0e}: ours {t_ours:9.4f} s (rel. {gap:8.1e}, {what})")
    ratios = []
    for k in peers:
        t, w, o = row[k]
        g = (o - row["p_star"]) / abs(row["p_star"])
        ratio = t / t_ours if np.isfinite(t) and t_ours > 0 else np.nan
        ratios.append(ratio)
        print(f"    {k:30s} {t:9.4f} s (rel. {g:8.1e}, {w})  ratio {ratio:.2f}")
    finite = [r for r in ratios if np.isfinite(r)]
    row["ratio"] = min(finite) if finite else np.nan
    print(f"    fastest peer / ours = {row['ratio']:.2f}")


# ----------------------------------------------------------------------------- first fits
def first_fit_child(key: str, tol: float) -> None:
    """In a fresh interpreter: the CPU seconds of the first fit of ours (compilation
    included) and of the second, at ``tol``; one JSON line."""
    problem = PROBLEMS[key]()
    first, _ = cpu_time(quiet(lambda: problem.ours(tol)))
    second, _ = cpu_time(quiet(lambda: problem.ours(tol)))
    print(json.dumps({"key": key, "first": first, "second": second}))


def first_fits(rows: list[dict]) -> dict:
    out = {}
    for row in rows:
        if row["eps"] != EPSILONS[0] or "ours_tol" not in row or row["problem"] in out:
            continue
        res = subprocess.run([sys.executable, __file__, "--first-fit", row["problem"],
                              str(row["ours_tol"])], capture_output=True, text=True,
                             env={**os.environ, "OMP_NUM_THREADS": "1"})
        try:
            out[row["problem"]] = json.loads(res.stdout.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            print(f"  first fit of {row['problem']}: the child failed\n{res.stderr[-2000:]}")
    return out


# ----------------------------------------------------------------------------- beMTPL97
def bench_be_mtpl97(repeats: int) -> dict:
    from sklearn.linear_model import PoissonRegressor

    import multitask as mt
    from multitask import compiled

    compiled.set_up()
    X, rate, expo, task = be_mtpl97()
    tasks = be_mtpl97_tasks()
    alpha = 0.1 * mt.L21Regressor(loss="poisson").alpha_max(X, rate, task, sample_weight=expo)

    def ours():
        return mt.L21Regressor(alpha, loss="poisson", tol=1e-6).fit(X, rate, task,
                                                                    sample_weight=expo)

    est = ours()  # the first fit in the process
    t_ours = median_time(ours, repeats)
    peers = {}
    for solver in ("lbfgs", "newton-cholesky"):
        def fit(solver=solver):
            return [PoissonRegressor(alpha=RIDGE, tol=1e-6, solver=solver, max_iter=10_000)
                    .fit(Xt, yt, sample_weight=wt)
                    for Xt, yt, wt in zip(tasks.Xs, tasks.ys, tasks.ws, strict=True)]
        quiet(fit)()
        peers[solver] = median_time(quiet(fit), repeats)
    fastest = min(peers.values())
    ratio = fastest / t_ours
    selected = int(np.count_nonzero(np.any(est.coef_ != 0, axis=0)))
    print(f"\nbeMTPL97, Poisson l2,1 of all {tasks.m} districts ({len(rate)} rows), alpha = "
          f"0.1 alpha_max = {alpha:.4g}: ours {t_ours:.3f} s ({type(est.solver_).__name__}, "
          f"n_iter={est.n_iter_}, converged={est.converged_}, certified gap "
          f"{est.optimality_:.1e}, {selected} of {X.shape[1]} features)")
    for solver, t in peers.items():
        print(f"  80 PoissonRegressor[{solver}] fits at tol=1e-6 (alpha={RIDGE}): {t:.3f} s")
    ok = ratio >= 1 and est.converged_ and est.optimality_ <= 1e-6
    print(f"  80 PoissonRegressor fits / ours = {ratio:.2f} (target >= 1, certified 1e-6): "
          f"{'holds' if ok else 'MISSED'}")
    return {"ours": t_ours, "peers": peers, "ratio": ratio, "gap": float(est.optimality_),
            "converged": bool(est.converged_), "holds": ok}


# ----------------------------------------------------------------------------- memory
_MEMORY_CHILD = r"""
import json, resource, sys, time, tracemalloc, warnings
import numpy as np
sys.path.insert(0, sys.argv[1])
import multitask as mt
from bench_losses import be_mtpl97

X, rate, expo, task = be_mtpl97()
size = X.nbytes + rate.nbytes + expo.nbytes + task.nbytes
with warnings.catch_warnings():  # compile every kernel the fit runs, on two districts
    warnings.simplefilter("ignore")
    few = np.isin(task, np.unique(task)[:2])
    est = mt.L21Regressor(loss="poisson")
    a = est.alpha_max(X[few], rate[few], task[few], sample_weight=expo[few])
    est.set_params(alpha=0.1 * a, tol=1e-6).fit(X[few], rate[few], task[few],
                                                sample_weight=expo[few])
est = mt.L21Regressor(loss="poisson", tol=1e-6)
est.set_params(alpha=0.1 * est.alpha_max(X, rate, task, sample_weight=expo))

def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise OSError(key)

try:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before, peak = status("VmRSS"), lambda: status("VmHWM")
except OSError:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
tracemalloc.start()
est.fit(X, rate, task, sample_weight=expo)
traced = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
print(json.dumps({"data_bytes": int(size), "rss_peak_increment": int(peak() - before),
                  "traced_peak": int(traced), "converged": bool(est.converged_)}))
"""


def bench_memory() -> list[dict]:
    mib = 1 << 20
    out = []
    print("\npeak memory of a fit against its data (target: at most 3 times)")
    res = subprocess.run([sys.executable, "-c", _MEMORY_CHILD,
                          os.path.dirname(os.path.abspath(__file__))],
                         capture_output=True, text=True, env={**os.environ,
                                                              "OMP_NUM_THREADS": "1"})
    try:
        r = json.loads(res.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        print(f"  beMTPL97: the child failed\n{res.stderr[-2000:]}")
    else:
        ratio = max(r["rss_peak_increment"], r["traced_peak"]) / r["data_bytes"]
        print(f"  Poisson l2,1, beMTPL97: data {r['data_bytes'] / mib:.1f} MiB, peak RSS of "
              f"the fit {r['rss_peak_increment'] / mib:.1f} MiB, tracemalloc peak "
              f"{r['traced_peak'] / mib:.1f} MiB: ratio {ratio:.2f} "
              f"({'holds' if ratio <= 3 else 'MISSED'})")
        out.append({"what": "poisson_l21_be_mtpl97", "ratio": ratio, **r})
    try:
        from bench_multinomial_memory import measure
    except ImportError:
        print("  multinomial l2,1: benchmarks/bench_multinomial_memory.py is not there: "
              "skipped")
        return out
    r = measure()
    ratio = max(r["rss_peak_increment"], r["traced_peak"]) / r["data_bytes"]
    print(f"  multinomial l2,1, 10 classes, 50 tasks, 2,000 sparse features: data "
          f"{r['data_bytes'] / mib:.1f} MiB, peak RSS of the fit "
          f"{r['rss_peak_increment'] / mib:.1f} MiB, tracemalloc peak "
          f"{r['traced_peak'] / mib:.1f} MiB: ratio {ratio:.2f} "
          f"({'holds' if ratio <= 3 else 'MISSED'}; {r['solver']}, converged {r['converged']})")
    out.append({"what": "multinomial_l21", "ratio": ratio, **r})
    return out


# ----------------------------------------------------------------------------- main
def table(rows: list[dict], first: dict) -> None:
    """The table of docs/scale.md: loss x model x tolerance."""
    print("\n| problem | eps | fastest peer | its CPU s | ours CPU s | fastest peer / ours "
          "| ours' first fit s |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        peers = {k: v for k, v in row.items() if isinstance(v, tuple) and k != "ours"}
        finite = {k: v[0] for k, v in peers.items() if np.isfinite(v[0])}
        name = min(finite, key=finite.get) if finite else "-"
        t_peer = finite.get(name, np.nan)
        ff = first.get(row["problem"], {}).get("first", np.nan)
        print(f"| {row['label']} | {row['eps']:.0e} | {name} | {t_peer:.4f} | "
              f"{row['ours'][0]:.4f} | {row.get('ratio', np.nan):.2f} | "
              + (f"{ff:.2f} |" if row["eps"] == EPSILONS[0] else " |"))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--only", nargs="+", choices=sorted(PROBLEMS) + ["be_mtpl97", "memory"],
                   default=None)
    p.add_argument("--skip-first-fit", action="store_true")
    p.add_argument("--skip-memory", action="store_true")
    p.add_argument("--list", action="store_true", help="the problems' keys")
    p.add_argument("--first-fit", nargs=2, metavar=("KEY", "TOL"), help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    from threadpoolctl import threadpool_limits

    limits = threadpool_limits(1)  # kept for the whole run
    if a.first_fit:
        first_fit_child(a.first_fit[0], float(a.first_fit[1]))
        return
    if a.list:
        print("\n".join(PROBLEMS))
        return
    print(f"load average before: {os.getloadavg()}; OMP_NUM_THREADS="
          f"{os.environ.get('OMP_NUM_THREADS')}; python {sys.version.split()[0]}")
    print("celer: its estimators no longer run with the installed scikit-learn, and it "
          "serves none of these losses: not a peer here")
    keys = a.only or [*PROBLEMS, "be_mtpl97", "memory"]
    rows = []
    for key in keys:
        if key in PROBLEMS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rows += bench_problem(PROBLEMS[key](), a.repeats)
    first = {} if a.skip_first_fit or not rows else first_fits(rows)
    if first:
        print("\nfirst fit of ours in a fresh interpreter (compilation included) / second:")
        for k, v in first.items():
            print(f"  {k:16s} {v['first']:8.3f} s / {v['second']:8.3f} s")
    if rows:
        table(rows, first)
        print("\nacceptance: fastest peer / ours >= 1 at 1e-4 and at 1e-6 on each")
        for row in rows:
            r = row.get("ratio", np.nan)
            print(f"  {row['problem']:16s} eps={row['eps']:.0e}: {r:.2f} "
                  f"{'holds' if r >= 1 else 'MISSED'}")
    if "be_mtpl97" in keys:
        bench_be_mtpl97(a.repeats)
    if "memory" in keys and not a.skip_memory:
        bench_memory()
    print(f"\nload average after: {os.getloadavg()}")
    del limits


if __name__ == "__main__":
    main()
