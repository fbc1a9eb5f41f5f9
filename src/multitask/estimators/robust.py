"""Robust multi-task learning: a low-rank part shared by the tasks plus outlier tasks.

``W = L + E`` (``(n_features, n_tasks)``, one column per task) with ``L`` low-rank (trace norm)
and ``E`` column-sparse (``l2`` norm of each task column): tasks that do not fit the shared
subspace get a nonzero column of ``E`` and are reported as outliers (Chen, Zhou & Ye, KDD 2011;
Pan, Xia, Yin & Liu, IEEE TNNLS 2015). The models minimize (library scaling,
``F = sum_t (1/n_t) sum_i ell``)::

    F(L + E, b) + alpha * (||L||_* + lam * sum_t ||E_.t||_2)

with the squared loss (:class:`RobustMTLRegressor`) or the squared hinge
(:class:`RobustMTLClassifier`). The regressor also offers the paper's equality-constrained
model ``min ||L||_* + lam ||E||_{1,2}  s.t.  X_t w_t + b_t = y_t`` (``formulation=
"constrained"``; it interpolates the data, and in general has no solution when ``n_t >
n_features``: then ``W`` tends to each task's least-squares fit and only the split into ``L``
and ``E`` is regularized).

Solvers: linearized ADMM (``solver="ladm"``, :func:`multitask.solvers.ladm.ladm_rmtl`) or the
accelerated proximal gradient (``solver="apg"``, :func:`multitask.solvers.divide_conquer.
apg_rmtl`); ``n_groups > 1`` runs the divide-and-conquer scheme of Pan et al.
(:func:`multitask.solvers.divide_conquer.divide_and_conquer`) serially, on joblib workers or on
a Dask cluster.
"""

from __future__ import annotations

import numpy as np

from multitask.data import MultiTaskData, check_scalar_param
from multitask.estimators.base import MultiTaskClassifierBase, MultiTaskRegressorBase
from multitask.losses import Datafit
from multitask.solvers.divide_conquer import (
    divide_and_conquer,
    make_rmtl_datafit,
    solve_rmtl,
)
from multitask.solvers.result import SolverResult

__all__ = ["RobustMTLRegressor", "RobustMTLClassifier"]

_SOLVERS = ("ladm", "apg")
_MODES = ("exact", "paper")


class _RobustMixin:
    """Shared fit logic of the robust MTL presets."""

    _formulations = ("penalized",)

    def _formulation(self) -> str:
        return getattr(self, "formulation", "penalized")

    def _check_params(self) -> None:
        check_scalar_param(self.alpha, "alpha", allow_zero=False)
        check_scalar_param(self.lam, "lam")
        if self.solver not in _SOLVERS:
            raise ValueError(f"solver must be one of {_SOLVERS}, got {self.solver!r}.")
        if self.mode not in _MODES:
            raise ValueError(f"mode must be one of {_MODES}, got {self.mode!r}.")
        if self._formulation() not in self._formulations:
            raise ValueError(
                f"formulation must be one of {self._formulations}, got {self._formulation()!r}."
            )
        if self.solver == "apg" and self._formulation() == "constrained":
            raise ValueError(
                "solver='apg' cannot handle formulation='constrained' (an equality-constrained "
                "problem): use solver='ladm' or formulation='penalized'."
            )
        if (isinstance(self.n_groups, bool) or not isinstance(self.n_groups, (int, np.integer))
                or self.n_groups < 1):
            raise ValueError(f"n_groups must be an integer >= 1, got {self.n_groups!r}.")
        if int(self.max_iter) < 1:
            raise ValueError(f"max_iter must be >= 1, got {self.max_iter!r}.")
        if self.tol is not None:
            check_scalar_param(self.tol, "tol", allow_zero=False)
        check_scalar_param(self.outlier_threshold, "outlier_threshold", upper=1.0)
        if not isinstance(self.lam_scale, str):
            check_scalar_param(self.lam_scale, "lam_scale", allow_zero=False)
        elif self.lam_scale != "sqrt":
            raise ValueError(f"lam_scale must be a number or 'sqrt', got {self.lam_scale!r}.")

    def _make_datafit(self, data: MultiTaskData) -> Datafit:
        return make_rmtl_datafit(self._loss_name(), data, self.fit_intercept, self.solver)

    def _solver_options(self) -> dict:
        opts = {"mode": self.mode, "max_iter": int(self.max_iter), "tol": self.tol}
        if self.solver == "ladm":
            opts["formulation"] = self._formulation()
        return opts

    def _solve(self, datafit: Datafit, data: MultiTaskData) -> SolverResult:
        if self.n_groups == 1:
            return solve_rmtl(datafit, self.solver, self.alpha, self.lam, **self._solver_options())
        if self.n_groups > data.n_tasks:
            raise ValueError(
                f"n_groups={self.n_groups} exceeds the number of tasks ({data.n_tasks})."
            )
        return divide_and_conquer(
            data,
            loss=self._loss_name(),
            solver=self.solver,
            alpha=self.alpha,
            lam=self.lam,
            n_groups=int(self.n_groups),
            lam_scale=self.lam_scale,
            fit_intercept=self.fit_intercept,
            random_state=self.random_state,
            backend=self.backend,
            n_jobs=self.n_jobs,
            blas_threads=self.blas_threads,
            solver_options=self._solver_options(),
        )

    def _make_penalty(self, datafit):  # pragma: no cover - _solve is overridden
        raise NotImplementedError

    def _store_result(self, result: SolverResult, data: MultiTaskData) -> None:
        super()._store_result(result, data)
        L, E = result.coef[0], result.coef[1]
        self.low_rank_component_ = np.ascontiguousarray(L.T)
        self.outlier_component_ = np.ascontiguousarray(E.T)
        norms = np.linalg.norm(E, axis=0)
        top = float(norms.max()) if norms.size else 0.0
        self.outlier_task_norms_ = norms
        self.outlier_tasks_ = (np.flatnonzero(norms > self.outlier_threshold * top)
                               if top > 0 else np.zeros(0, dtype=np.int64))
        self.task_groups_ = result.info.get("groups", [np.arange(data.n_tasks)])


_COMMON_DOC = """
    Parameters
    ----------
    alpha : float, default=0.1
        Weight of the regularizer (``> 0``).
    lam : float, default=1.0
        Weight of ``sum_t ||E_.t||_2`` relative to ``||L||_*`` (the paper's lambda); large
        values make ``E`` zero (a pure trace-norm model), small values make every task an
        outlier.
    solver : {"ladm", "apg"}, default="ladm"
        Linearized ADMM or accelerated proximal gradient (same penalized problem).
    mode : {"exact", "paper"}, default="exact"
        ``exact``: solve to optimality (residual-balanced LADM; FISTA's stopping rule).
        ``paper``: the paper's constants and stopping rules (LADM: ``mu0 = 1e-6``,
        ``rho = 1.9``, ``mu_max = 1e10``, eq. (25) with a guard; APG: eqs. (25) or (26)); fast
        but approximate.
    n_groups : int, default=1
        ``t`` of divide-and-conquer: tasks split at random into ``t`` groups of
        ``floor(m / t)`` (plus a remainder group), each solved on its own, the low-rank parts
        projected on the column space of the first group's. ``1`` solves the full problem.
    lam_scale : float or "sqrt", default=1.0
        Multiplier of ``lam`` inside the groups (``"sqrt"``: ``sqrt(n_groups)``).
    backend : {"serial", "joblib", "dask"} or dask.distributed.Client, default="serial"
        Where the groups run: in this process, in joblib workers (processes unless a joblib
        backend such as ``"dask"`` is active), or on the current (``"dask"``) or given Dask
        client. The result does not depend on it.
    n_jobs : int, optional
        joblib workers (joblib's convention).
    blas_threads : int or None, default=1
        BLAS threads of each group's solve (capped so that workers x threads <= cores).
    random_state : int, RandomState instance or None, default=None
        Seed of the random partition into groups.
    fit_intercept : bool, default=True
        Fit an unpenalized intercept per task.
    max_iter : int, default=10000
        Iteration budget of the solver (``ConvergenceWarning`` when reached).
    tol : float, optional
        Stopping tolerance (the solver's default when None: LADM exact ``1e-5`` on the
        relative residuals, APG ``1e-6`` on the relative objective change, paper mode
        ``1e-5``).
    outlier_threshold : float, default=0.1
        A task is an outlier when ``||E_.t||_2 > outlier_threshold * max_s ||E_.s||_2``
        (below ``lam = 1`` the inlier columns of ``E`` are often small but not zero: they
        absorb noise).
    task_column : int, optional
        Column of ``X`` holding the task id of each row (long format).

    Attributes
    ----------
    coef_ : ndarray of shape (n_tasks, n_features)
        ``low_rank_component_ + outlier_component_``.
    intercept_ : ndarray of shape (n_tasks,)
    low_rank_component_ : ndarray of shape (n_tasks, n_features)
        ``L^T``.
    outlier_component_ : ndarray of shape (n_tasks, n_features)
        ``E^T`` (nonzero rows are outlier tasks).
    outlier_tasks_ : ndarray of int
        Positions (in ``tasks_``) of the detected outlier tasks.
    outlier_task_norms_ : ndarray of shape (n_tasks,)
        ``||E_.t||_2``.
    task_groups_ : list of ndarray
        Task positions of each divide-and-conquer group (one group when ``n_groups=1``).
    tasks_ : ndarray of shape (n_tasks,)
    n_iter_ : int
        Iterations (the largest over the groups for divide-and-conquer).
    objective_ : ndarray
        Objective history (empty for divide-and-conquer).
    """


class RobustMTLRegressor(_RobustMixin, MultiTaskRegressorBase):
    __doc__ = (
        """Robust multi-task least squares: low-rank ``L`` plus outlier tasks ``E``.

    Minimizes ``sum_t 1/(2 n_t) ||X_t (l_t + e_t) + b_t - y_t||^2 + alpha * (||L||_* + lam *
    sum_t ||e_t||_2)`` (``formulation="penalized"``), or ``||L||_* + lam sum_t ||e_t||_2``
    subject to ``X_t (l_t + e_t) + b_t = y_t`` (``formulation="constrained"``, the paper's
    eq. (2), LADM only; ``alpha`` is then unused).
"""
        + _COMMON_DOC.replace(
            "    solver : {",
            "    formulation : {\"penalized\", \"constrained\"}, default=\"penalized\"\n"
            "        See above.\n    solver : {",
            1,
        )
    )

    _formulations = ("penalized", "constrained")
    _default_loss = "squared"

    def __init__(self, alpha=0.1, lam=1.0, *, formulation="penalized", solver="ladm",
                 mode="exact", n_groups=1, lam_scale=1.0, backend="serial", n_jobs=None,
                 blas_threads=1, random_state=None, fit_intercept=True, max_iter=10000,
                 tol=None, outlier_threshold=0.1, task_column=None):
        self.alpha = alpha
        self.lam = lam
        self.formulation = formulation
        self.solver = solver
        self.mode = mode
        self.n_groups = n_groups
        self.lam_scale = lam_scale
        self.backend = backend
        self.n_jobs = n_jobs
        self.blas_threads = blas_threads
        self.random_state = random_state
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.outlier_threshold = outlier_threshold
        self.task_column = task_column


class RobustMTLClassifier(_RobustMixin, MultiTaskClassifierBase):
    __doc__ = (
        """Robust multi-task classification (squared hinge): low-rank ``L`` plus outlier tasks.

    Minimizes ``sum_t (1/n_t) sum_i max(0, 1 - y_i (x_i^T (l_t + e_t) + b_t))^2 + alpha *
    (||L||_* + lam * sum_t ||e_t||_2)`` with labels mapped to -1/+1 per task; the paper's
    eq. (3) with ``beta = 1 / (alpha n)`` for ``n`` rows per task.
"""
        + _COMMON_DOC
    )

    _default_loss = "squared_hinge"

    def __init__(self, alpha=0.1, lam=1.0, *, solver="ladm", mode="exact", n_groups=1,
                 lam_scale=1.0, backend="serial", n_jobs=None, blas_threads=1,
                 random_state=None, fit_intercept=True, max_iter=10000, tol=None,
                 outlier_threshold=0.1, task_column=None):
        self.alpha = alpha
        self.lam = lam
        self.solver = solver
        self.mode = mode
        self.n_groups = n_groups
        self.lam_scale = lam_scale
        self.backend = backend
        self.n_jobs = n_jobs
        self.blas_threads = blas_threads
        self.random_state = random_state
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.outlier_threshold = outlier_threshold
        self.task_column = task_column
