"""Sparse + low-rank multi-task learning ("MixedNorm", Chen, Liu & Ye).

J. Chen, J. Liu, J. Ye, "Learning incoherent sparse and low-rank patterns from multiple tasks",
ACM TKDD 5(4), 2012. The weight matrix is the sum of an entrywise sparse part ``P``
(task-specific features) and a low-rank part ``Q`` (a subspace shared by the tasks)::

    min_{P, Q, b}  sum_t (1/n_t) sum_{i in t} ell(y_i, x_i^T (p_t + q_t) + b_t) + gamma ||P||_1
    subject to     ||Q||_* <= tau

(internal ``P``, ``Q`` of shape ``(n_features, n_tasks)``; the public ``coef_``,
``sparse_component_`` and ``low_rank_component_`` are ``(n_tasks, n_features)``). The
intercepts ``b`` are not penalized. Solved by the paper's projected gradient (``"pg"``) or
accelerated projected gradient (``"ag"``) method, :mod:`multitask.solvers.projected_gradient`.

Relation to the paper's Eq. (45) (shared design of ``n`` rows, squared loss, no intercept):
``gamma_paper = 2 n gamma`` and the same ``tau``. Special cases: ``tau = 0`` gives ``Q = 0``
and independent lasso problems ("OneNorm"); ``gamma >= ||G||_inf`` at the trace-constrained
solution gives ``P = 0`` ("TraceNorm", constrained form).
"""

from __future__ import annotations

import numpy as np

from multitask.data import MultiTaskData
from multitask.estimators.base import MultiTaskClassifierBase, MultiTaskRegressorBase
from multitask.losses import Datafit
from multitask.solvers.projected_gradient import (
    ALGORITHMS,
    solve_sparse_low_rank,
    sparse_low_rank_penalty,
)
from multitask.solvers.result import SolverResult

__all__ = ["SparseLowRankRegressor", "SparseLowRankClassifier"]

_CRITERIA = ("objective", "kkt")
_TOL_TYPES = ("relative", "absolute")


class _SparseLowRankMixin:
    """Shared parameter checks, solver call and attributes of the two presets."""

    def _check_params(self) -> None:
        super()._check_params()
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {self.algorithm!r}.")
        if self.criterion not in _CRITERIA:
            raise ValueError(f"criterion must be one of {_CRITERIA}, got {self.criterion!r}.")
        if self.tol_type not in _TOL_TYPES:
            raise ValueError(f"tol_type must be one of {_TOL_TYPES}, got {self.tol_type!r}.")
        if not isinstance(self.line_search, (bool, np.bool_)):
            raise ValueError(f"line_search must be True or False, got {self.line_search!r}.")

    def _make_penalty(self, datafit: Datafit):
        return sparse_low_rank_penalty(self.gamma, self.tau)

    def _solve(self, datafit: Datafit, data: MultiTaskData) -> SolverResult:
        coef_init = intercept_init = None
        if self.warm_start and hasattr(self, "sparse_component_"):
            if self.coef_.shape == (data.n_tasks, data.n_features):
                coef_init = np.stack([self.sparse_component_.T, self.low_rank_component_.T])
                if datafit.has_intercept_variable:
                    intercept_init = self.intercept_
        return solve_sparse_low_rank(
            datafit,
            self.gamma,
            self.tau,
            algorithm=self.algorithm,
            line_search=bool(self.line_search),
            coef_init=coef_init,
            intercept_init=intercept_init,
            max_iter=int(self.max_iter),
            tol=float(self.tol),
            tol_type=self.tol_type,
            criterion=self.criterion,
        )

    def _store_result(self, result: SolverResult, data: MultiTaskData) -> None:
        super()._store_result(result, data)
        P, Q = result.coef[0], result.coef[1]
        self.sparse_component_ = np.ascontiguousarray(P.T)
        self.low_rank_component_ = np.ascontiguousarray(Q.T)
        self.rank_ = int(result.info["rank"])
        self.kkt_ = dict(result.info["kkt"])

    def gamma_max(self, X, y, task=None) -> float:
        """Smallest ``gamma`` with ``P = 0`` when ``tau = 0``: ``||grad f(0)||_inf``.

        ``grad f(0)`` is the gradient of the loss at ``W = 0`` with the best intercepts, shape
        ``(n_features, n_tasks)``. For ``tau > 0`` the threshold is ``||grad f(Q_tau)||_inf``
        at the trace-constrained fit ``Q_tau``, usually smaller.
        """
        data, _, _ = self._to_data(X, y, task)
        return self._make_datafit(data).lambda_max("l1")


class SparseLowRankRegressor(_SparseLowRankMixin, MultiTaskRegressorBase):
    """Sparse + low-rank multi-task least squares (MixedNorm).

    Minimizes ``sum_t 1/(2 n_t) ||X_t (p_t + q_t) + b_t - y_t||^2 + gamma ||P||_1`` subject
    to ``||Q||_* <= tau``.

    Parameters
    ----------
    gamma : float, default=0.01
        Weight of the entrywise l1 penalty on the sparse part ``P`` (>= 0).
    tau : float, default=1.0
        Radius of the trace-norm ball of the low-rank part ``Q`` (>= 0; 0 gives ``Q = 0``).
    algorithm : {"ag", "pg"}, default="ag"
        Accelerated projected gradient (O(1/k^2)) or projected gradient (O(1/k), monotone).
    line_search : bool, default=True
        Step-size search of the paper's Section 3.2; ``False`` uses the fixed step ``1 / L``
        with ``L = 2 max_t ||X_t||_2^2 / n_t`` (the paper's ``4 ||X||_2^2`` in our scaling).
    criterion : {"objective", "kkt"}, default="objective"
        Stopping measure: the objective change ``|F_{k+1} - F_k|``, or the certified
        sub-optimality bound of the KKT conditions (see
        :func:`~multitask.solvers.projected_gradient.sparse_low_rank_certificate`).
    tol : float, default=1e-8
        Tolerance of the stopping measure. The paper's objective-change rule is a heuristic
        (AG is not monotone and can pause); ``1e-8`` relative typically leaves a relative
        sub-optimality near ``1e-5``. ``criterion="kkt"`` certifies the sub-optimality
        instead, at the price of one more gradient per iteration.
    tol_type : {"relative", "absolute"}, default="relative"
        Compare the measure with ``tol`` (absolute, the paper's rule) or ``tol * |F|``.
    max_iter : int, default=10000
        Iteration budget (``ConvergenceWarning`` and the best iterate when reached).
    fit_intercept : bool, default=True
        Fit an unpenalized intercept per task (by centring each task).
    task_column : int, optional
        Column of ``X`` holding the task id of each row (long format).
    warm_start : bool, default=False
        Start from the previous ``(P, Q)`` when refitting.

    Attributes
    ----------
    coef_ : ndarray of shape (n_tasks, n_features)
        ``W^T = (P + Q)^T``.
    sparse_component_ : ndarray of shape (n_tasks, n_features)
        ``P^T``: exact zeros outside its support.
    low_rank_component_ : ndarray of shape (n_tasks, n_features)
        ``Q^T``, with ``||Q||_* <= tau``.
    rank_ : int
        Rank of ``Q``.
    intercept_ : ndarray of shape (n_tasks,)
    tasks_ : ndarray of shape (n_tasks,)
    n_iter_ : int
    objective_ : ndarray
        Objective after each iteration.
    converged_ : bool
    kkt_ : dict
        KKT residuals and the certified sub-optimality bound at the solution.

    Examples
    --------
    >>> import numpy as np
    >>> from multitask import SparseLowRankRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((60, 8))
    >>> Y = X @ rng.standard_normal((8, 4))
    >>> est = SparseLowRankRegressor(gamma=0.01, tau=2.0).fit(X, Y)
    >>> est.coef_.shape, est.sparse_component_.shape
    ((4, 8), (4, 8))
    """

    def __init__(self, gamma=0.01, tau=1.0, *, algorithm="ag", line_search=True,
                 criterion="objective", tol=1e-8, tol_type="relative", max_iter=10000,
                 fit_intercept=True, task_column=None, warm_start=False):
        self.gamma = gamma
        self.tau = tau
        self.algorithm = algorithm
        self.line_search = line_search
        self.criterion = criterion
        self.tol = tol
        self.tol_type = tol_type
        self.max_iter = max_iter
        self.fit_intercept = fit_intercept
        self.task_column = task_column
        self.warm_start = warm_start


class SparseLowRankClassifier(_SparseLowRankMixin, MultiTaskClassifierBase):
    """Sparse + low-rank multi-task binary classification.

    Minimizes ``sum_t (1/n_t) sum_i ell(y_i, x_i^T (p_t + q_t) + b_t) + gamma ||P||_1``
    subject to ``||Q||_* <= tau``, labels mapped to -1/+1 per task.

    Parameters
    ----------
    gamma, tau, algorithm, line_search, criterion, tol, tol_type, max_iter, fit_intercept,
    task_column, warm_start
        As in :class:`SparseLowRankRegressor`.
    loss : {"logistic", "squared_hinge", "squared"}, default="logistic"
        ``log(1 + exp(-y z))``; ``max(0, 1 - y z)^2``; or ``0.5 (y - z)^2`` on the -1/+1
        labels, the least-squares classifier of the paper's experiments.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        ``classes_[1]`` is the positive class (score > 0).
    coef_, sparse_component_, low_rank_component_, rank_, intercept_, tasks_, n_iter_,
    objective_, converged_, kkt_
        As in :class:`SparseLowRankRegressor`.
    """

    def __init__(self, gamma=0.01, tau=1.0, *, loss="logistic", algorithm="ag",
                 line_search=True, criterion="objective", tol=1e-8, tol_type="relative",
                 max_iter=10000, fit_intercept=True, task_column=None, warm_start=False):
        self.gamma = gamma
        self.tau = tau
        self.loss = loss
        self.algorithm = algorithm
        self.line_search = line_search
        self.criterion = criterion
        self.tol = tol
        self.tol_type = tol_type
        self.max_iter = max_iter
        self.fit_intercept = fit_intercept
        self.task_column = task_column
        self.warm_start = warm_start

    def _check_params(self) -> None:
        super()._check_params()
        if self.loss not in ("logistic", "squared_hinge", "squared"):
            raise ValueError(
                f"loss must be 'logistic', 'squared_hinge' or 'squared', got {self.loss!r}."
            )
