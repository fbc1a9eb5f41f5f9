"""Baseline multi-task models: independent ridge / lasso, pooled, l2,1, trace norm.

Each model minimizes (scaling convention of :mod:`multitask.losses`)::

    sum_t (1 / n_t) sum_{i in t} ell(y_i, x_i^T w_t + b_t) + alpha * Omega(W)

* independent ridge: ``Omega = 0.5 ||W||_F^2`` (tasks decouple);
* independent lasso: ``Omega = sum |W_jt|`` (tasks decouple);
* l2,1 (joint feature selection): ``Omega = sum_j ||W_j.||_2``;
* trace norm (low rank): ``Omega = ||W||_*``;
* pooled: one weight vector and one intercept for all rows, ``(1/N) sum_i ell + alpha/2 ||w||^2``.

Regressors use the squared loss, classifiers the logistic loss (or ``loss="squared_hinge"``).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from multitask.data import MultiTaskData
from multitask.estimators.base import MultiTaskClassifierBase, MultiTaskRegressorBase
from multitask.losses import Squared, get_datafit
from multitask.penalties import L1, L21, Ridge, TraceNorm
from multitask.penalties.norms import ColumnL2
from multitask.solvers.bcd import bcd_squared, supports_bcd
from multitask.solvers.fista import fista
from multitask.solvers.result import SolverResult

__all__ = [
    "MultiTaskRegressor",
    "MultiTaskClassifier",
    "IndependentRidgeRegressor",
    "IndependentRidgeClassifier",
    "IndependentLassoRegressor",
    "IndependentLassoClassifier",
    "L21Regressor",
    "L21Classifier",
    "TraceNormRegressor",
    "TraceNormClassifier",
    "PooledRegressor",
    "PooledClassifier",
]

_PENALTIES = {"l1": L1, "l21": L21, "trace": TraceNorm, "ridge": Ridge, "column_l2": ColumnL2}


def _penalty(name: str, alpha: float):
    try:
        return _PENALTIES[name](alpha)
    except KeyError:
        raise ValueError(f"Unknown penalty {name!r}; choose from {sorted(_PENALTIES)}.") from None


class _PenaltyMixin:
    def _penalty_name(self) -> str:
        if "penalty" in self.get_params(deep=False):
            return self.penalty
        return self._preset_penalty

    def _make_penalty(self, datafit):
        return _penalty(self._penalty_name(), self.alpha)

    def _solve(self, datafit, data):
        solver = getattr(self, "solver", "fista")
        if solver not in ("auto", "fista", "bcd"):
            raise ValueError(f"solver must be 'auto', 'fista' or 'bcd', got {solver!r}.")
        penalty = self._make_penalty(datafit)
        use_bcd = solver == "bcd" or (
            solver == "auto"
            and supports_bcd(datafit, penalty)
            and (penalty.name == "l1" or datafit.data.shared)
        )
        if not use_bcd:
            return super()._solve(datafit, data)
        if not supports_bcd(datafit, penalty):
            raise ValueError("solver='bcd' needs the squared loss, an l1 or l2,1 penalty and "
                             "n_t >= n_features (Gram matrices); use solver='fista'.")
        coef_init = None
        if self.warm_start and hasattr(self, "coef_") and self.coef_.shape == (
                data.n_tasks, data.n_features):
            coef_init = self.coef_.T
        return bcd_squared(datafit, penalty, coef_init=coef_init, max_iter=self.max_iter,
                           tol=self.tol)

    def alpha_max(self, X, y, task=None) -> float:
        """Smallest ``alpha`` with an all-zero ``coef_`` (None-like ``inf`` for ridge)."""
        data, _, _ = self._to_data(X, y, task)
        name = self._penalty_name()
        if name == "ridge":
            return float("inf")
        return self._make_datafit(data).lambda_max(name)


def _ridge_closed_form(datafit: Squared, alpha: float) -> SolverResult:
    """Exact ridge per task: ``(X_t^T X_t / n_t + alpha I) w_t = X_t^T y_t / n_t`` (centred)."""
    import time

    t0 = time.perf_counter()
    data = datafit.data
    d, m = data.n_features, data.n_tasks
    G = data.gram()
    c = data.xty()
    n = data.task_sizes
    W = np.empty((d, m))
    eye = np.eye(d)
    for t in range(m):
        Gt = G[0] if G.shape[0] == 1 else G[t]
        A = Gt / n[t] + alpha * eye
        rhs = c[:, t] / n[t]
        try:
            W[:, t] = scipy.linalg.solve(A, rhs, assume_a="pos")
        except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
            W[:, t] = scipy.linalg.lstsq(A, rhs)[0]
    obj = datafit.value(W) + Ridge(alpha).value(W)
    return SolverResult(W, W, datafit.intercept(W), 1, np.array([obj]), True,
                        time.perf_counter() - t0)


# ----------------------------------------------------------------------------- generic
class MultiTaskRegressor(_PenaltyMixin, MultiTaskRegressorBase):
    """Multi-task least squares with a structured penalty (the generic preset).

    Minimizes ``sum_t 1/(2 n_t) ||X_t w_t + b_t - y_t||^2 + alpha * Omega(W)``.

    Parameters
    ----------
    penalty : {"trace", "l21", "l1", "ridge", "column_l2"}, default="trace"
        ``Omega``: trace norm, l2,1 over feature rows, l1, ``0.5 ||W||_F^2``, l2 over task
        columns.
    alpha : float, default=0.1
        Regularization strength (>= 0).
    fit_intercept : bool, default=True
        Fit an unpenalized intercept per task.
    max_iter : int, default=5000
        Solver iteration budget (``ConvergenceWarning`` when reached).
    tol : float, default=1e-6
        Relative objective-change tolerance of the solver.
    task_column : int, optional
        Column of ``X`` holding the task id of each row (long format for scikit-learn tools).
    warm_start : bool, default=False
        Start from the previous solution when refitting.
    solver : {"auto", "fista", "bcd"}, default="auto"
        ``"fista"``: accelerated proximal gradient (:func:`multitask.solvers.fista`);
        ``"bcd"``: block coordinate descent on Gram matrices (:mod:`multitask.solvers.bcd`;
        l1 and l2,1 with ``n_t >= d``). ``"auto"`` takes BCD for l1, and for l2,1 with a shared
        design, where it is fastest, and FISTA otherwise.

    Attributes
    ----------
    coef_ : ndarray of shape (n_tasks, n_features)
    intercept_ : ndarray of shape (n_tasks,)
    tasks_ : ndarray of shape (n_tasks,)
    n_iter_ : int
    objective_ : ndarray
    """

    def __init__(self, penalty="trace", alpha=0.1, *, fit_intercept=True, max_iter=5000,
                 tol=1e-6, task_column=None, warm_start=False, solver="auto"):
        self.penalty = penalty
        self.solver = solver
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.task_column = task_column
        self.warm_start = warm_start


class MultiTaskClassifier(_PenaltyMixin, MultiTaskClassifierBase):
    """Multi-task binary classification with a structured penalty (the generic preset).

    Minimizes ``sum_t (1/n_t) sum_i ell(y_i, x_i^T w_t + b_t) + alpha * Omega(W)`` with
    the logistic loss (default) or the squared hinge ``max(0, 1 - y z)^2``.

    Parameters
    ----------
    penalty : {"trace", "l21", "l1", "ridge", "column_l2"}, default="trace"
    alpha : float, default=0.01
    loss : {"logistic", "squared_hinge"}, default="logistic"
    fit_intercept, max_iter, tol, task_column, warm_start
        As in :class:`MultiTaskRegressor`.
    """

    def __init__(self, penalty="trace", alpha=0.01, *, loss="logistic", fit_intercept=True,
                 max_iter=5000, tol=1e-6, task_column=None, warm_start=False):
        self.penalty = penalty
        self.alpha = alpha
        self.loss = loss
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.task_column = task_column
        self.warm_start = warm_start

    def _check_params(self):
        super()._check_params()
        if self.loss not in ("logistic", "squared_hinge"):
            raise ValueError(f"loss must be 'logistic' or 'squared_hinge', got {self.loss!r}.")


def _preset_init(base, default_alpha: float):
    """The ``__init__`` of a preset of ``base`` (no ``penalty`` parameter)."""

    if base is MultiTaskRegressor:

        def __init__(self, alpha=default_alpha, *, fit_intercept=True, max_iter=5000, tol=1e-6,
                     task_column=None, warm_start=False, solver="auto"):
            self.alpha = alpha
            self.solver = solver
            self.fit_intercept = fit_intercept
            self.max_iter = max_iter
            self.tol = tol
            self.task_column = task_column
            self.warm_start = warm_start
    else:

        def __init__(self, alpha=default_alpha, *, loss="logistic", fit_intercept=True,
                     max_iter=5000, tol=1e-6, task_column=None, warm_start=False):
            self.alpha = alpha
            self.loss = loss
            self.fit_intercept = fit_intercept
            self.max_iter = max_iter
            self.tol = tol
            self.task_column = task_column
            self.warm_start = warm_start

    return __init__


class L21Regressor(MultiTaskRegressor):
    """Joint feature selection: least squares + ``alpha * sum_j ||W_j.||_2`` (l2,1 norm).

    With a shared design this is scikit-learn's ``MultiTaskLasso`` (same ``alpha``) plus
    unpenalized per-task intercepts. Parameters as in :class:`MultiTaskRegressor` without
    ``penalty``.
    """

    _preset_penalty = "l21"
    __init__ = _preset_init(MultiTaskRegressor, 0.1)


class TraceNormRegressor(MultiTaskRegressor):
    """Low-rank multi-task least squares: ``alpha * ||W||_*`` (trace / nuclear norm).

    Parameters as in :class:`MultiTaskRegressor` without ``penalty``.
    """

    _preset_penalty = "trace"
    __init__ = _preset_init(MultiTaskRegressor, 0.1)


class IndependentLassoRegressor(MultiTaskRegressor):
    """One lasso per task: ``alpha * sum |W_jt|`` (the tasks do not interact).

    Parameters as in :class:`MultiTaskRegressor` without ``penalty``.
    """

    _preset_penalty = "l1"
    __init__ = _preset_init(MultiTaskRegressor, 0.1)


class IndependentRidgeRegressor(MultiTaskRegressor):
    """One ridge regression per task: ``(alpha / 2) ||W||_F^2``, solved in closed form.

    Each task solves ``(X_t^T X_t / n_t + alpha I) w_t = X_t^T y_t / n_t`` on centred data.
    Parameters as in :class:`MultiTaskRegressor` without ``penalty``.
    """

    _preset_penalty = "ridge"
    __init__ = _preset_init(MultiTaskRegressor, 1.0)

    def _solve(self, datafit, data):
        if not isinstance(datafit, Squared):
            return super()._solve(datafit, data)
        return _ridge_closed_form(datafit, self.alpha)


class L21Classifier(MultiTaskClassifier):
    """Joint feature selection for classification: logistic + ``alpha * sum_j ||W_j.||_2``."""

    _preset_penalty = "l21"
    __init__ = _preset_init(MultiTaskClassifier, 0.01)


class TraceNormClassifier(MultiTaskClassifier):
    """Low-rank multi-task classification: logistic + ``alpha * ||W||_*``."""

    _preset_penalty = "trace"
    __init__ = _preset_init(MultiTaskClassifier, 0.01)


class IndependentLassoClassifier(MultiTaskClassifier):
    """One l1-penalized logistic regression per task: ``alpha * sum |W_jt|``."""

    _preset_penalty = "l1"
    __init__ = _preset_init(MultiTaskClassifier, 0.01)


class IndependentRidgeClassifier(MultiTaskClassifier):
    """One l2-penalized logistic regression per task: ``(alpha / 2) ||W||_F^2``."""

    _preset_penalty = "ridge"
    __init__ = _preset_init(MultiTaskClassifier, 0.01)


# ----------------------------------------------------------------------------- pooled
def _pooled_data(data: MultiTaskData) -> MultiTaskData:
    """All rows of all tasks as one task (a shared design is repeated once per task)."""
    X = data.X
    if data.shared:
        import scipy.sparse as sp

        X = sp.vstack([X] * data.n_tasks, format="csr") if sp.issparse(X) else np.tile(
            X, (data.n_tasks, 1))
    return MultiTaskData(X, data.y, np.array([0, data.n_rows], dtype=np.int64),
                         np.array([0]), False)


class _PooledMixin:
    _preset_penalty = "ridge"

    def _make_datafit(self, data):
        # the loss of the one pooled task (not the per-task one, which would cost m Gram
        # matrices that the pooled solve never uses)
        return get_datafit(self._loss_name(), _pooled_data(data), self.fit_intercept)

    def _solve(self, datafit, data):
        df = datafit
        if isinstance(df, Squared):
            res = _ridge_closed_form(df, self.alpha)
        else:
            res = fista(df, Ridge(self.alpha), max_iter=self.max_iter, tol=self.tol)
        m = data.n_tasks
        W = np.repeat(res.W, m, axis=1)
        b = np.repeat(res.intercept, m)
        return SolverResult(res.coef, W, b, res.n_iter, res.objective, res.converged, res.time,
                            res.times, res.info)

    def alpha_max(self, X, y, task=None) -> float:
        return float("inf")


class PooledRegressor(_PooledMixin, MultiTaskRegressor):
    """One model for all tasks: ``(1/(2N)) sum_i (x_i^T w + b - y_i)^2 + (alpha/2) ||w||^2``.

    ``coef_`` repeats the common ``w`` for every task so that predictions work per task.
    """

    __init__ = _preset_init(MultiTaskRegressor, 1e-3)


class PooledClassifier(_PooledMixin, MultiTaskClassifier):
    """One logistic model for all tasks (l2 penalty ``(alpha / 2) ||w||^2``)."""

    __init__ = _preset_init(MultiTaskClassifier, 1e-3)
