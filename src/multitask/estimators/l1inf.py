"""Joint sparsity with the l1,inf ball (Quattoni, Carreras, Collins & Darrell).

A. Quattoni, X. Carreras, M. Collins, T. Darrell, "A projected subgradient method for scalable
multi-task learning", MIT-CSAIL-TR-2008-045 (2008), and "An efficient projection for l1,inf
regularization", ICML 2009. The model is the constrained problem::

    min_{W, b}  sum_t (1 / n_t) sum_{i in t} ell(y_i, x_i^T w_t + b_t)
    subject to  ||W||_{1,inf} = sum_j max_t |W_jt| <= C            (constraint="l1inf")

with ``W`` of shape ``(n_features, n_tasks)`` (public ``coef_ = W.T``), unpenalized
intercepts ``b``, and ``C = radius``. The ball promotes row sparsity: a feature is used by all
tasks or by none. The paper's baselines use the same solver with independent per-task balls,
``||w_t||_1 <= C_t`` (``constraint="l1"``) or ``||w_t||_2 <= C_t`` (``constraint="l2"``), where
``radius`` may then be one value per task.

Solvers: the projected subgradient method with steps ``eta0 / sqrt(k)``
(:func:`~multitask.solvers.subgradient.projected_subgradient`; the paper's method, for any
loss); for the smooth losses, accelerated projected gradient
(:func:`~multitask.solvers.fista.fista`) with the same projection; for the hinge loss with the
l1,inf or per-task l1 balls, the exact solution of the equivalent linear program
(:func:`~multitask.solvers.lp.hinge_lp`, ``solver="lp"``), a sparse vertex of the optimal set.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from multitask.data import MultiTaskData, check_scalar_param
from multitask.estimators.base import MultiTaskClassifierBase, MultiTaskRegressorBase
from multitask.losses import Datafit
from multitask.penalties.balls import ColumnL1Balls, ColumnL2Balls
from multitask.penalties.base import Constraint
from multitask.penalties.l1inf import L1InfBall, l1inf_norm
from multitask.solvers.fista import fista
from multitask.solvers.lp import hinge_lp
from multitask.solvers.result import SolverResult
from multitask.solvers.subgradient import ITERATES, projected_subgradient

__all__ = ["L1InfClassifier", "L1InfRegressor", "l1inf_path", "make_constraint", "CONSTRAINTS"]

CONSTRAINTS = ("l1inf", "l1", "l2")
_SOLVERS = ("auto", "subgradient", "fista", "lp")


class _TaskL1Balls(ColumnL1Balls):
    """``{W : ||W_.t||_1 <= r_t}`` with one radius per task."""

    def norm(self, W):
        return float(np.max(np.abs(W).sum(axis=0) / np.maximum(self.radius, 1e-300)))

    def value(self, W):
        ok = np.abs(W).sum(axis=0) <= self.radius * (1 + 1e-9) + 1e-12
        return 0.0 if np.all(ok) else np.inf

class _TaskL2Balls(ColumnL2Balls):
    """``{W : ||W_.t||_2 <= r_t}`` with one radius per task."""

    def norm(self, W):
        return float(np.max(np.linalg.norm(W, axis=0) / np.maximum(self.radius, 1e-300)))

    def value(self, W):
        ok = np.linalg.norm(W, axis=0) <= self.radius * (1 + 1e-9) + 1e-12
        return 0.0 if np.all(ok) else np.inf

    def project(self, V):
        norms = np.linalg.norm(V, axis=0)
        scale = np.minimum(1.0, self.radius / np.where(norms > 0, norms, 1.0))
        return V * scale[None, :]


def _check_radius(radius, n_tasks: int | None = None, constraint: str = "l1inf"):
    """A float (any constraint) or, for ``"l1"``/``"l2"``, an array of per-task radii."""
    if np.ndim(radius) == 0:
        return check_scalar_param(radius, "radius")
    if constraint == "l1inf":
        raise ValueError("radius must be a single number for constraint='l1inf' (one ball).")
    r = np.asarray(radius, dtype=float)
    if r.ndim != 1 or (n_tasks is not None and r.shape[0] != n_tasks):
        raise ValueError(f"radius must be a number or an array of shape (n_tasks,)="
                         f"({n_tasks},), got shape {r.shape}.")
    if not np.all(np.isfinite(r)) or np.any(r < 0):
        raise ValueError("radius must hold finite numbers >= 0.")
    return r


def make_constraint(constraint: str, radius, n_tasks: int | None = None) -> Constraint:
    """The feasible set of ``W`` (shape ``(n_features, n_tasks)``).

    Parameters
    ----------
    constraint : {"l1inf", "l1", "l2"}
        ``sum_j max_t |W_jt| <= radius``; ``||W_.t||_1 <= radius_t`` for every task;
        ``||W_.t||_2 <= radius_t`` for every task.
    radius : float or ndarray of shape (n_tasks,)
        ``C >= 0``; per-task radii only for ``"l1"`` and ``"l2"``.
    n_tasks : int, optional
        Checked against the length of per-task radii.

    Raises
    ------
    ValueError
        On an unknown constraint or a negative, non-finite or misshapen radius.
    """
    if constraint not in CONSTRAINTS:
        raise ValueError(f"constraint must be one of {CONSTRAINTS}, got {constraint!r}.")
    r = _check_radius(radius, n_tasks, constraint)
    if constraint == "l1inf":
        return L1InfBall(r)
    if np.ndim(r) == 0:
        return ColumnL1Balls(r) if constraint == "l1" else ColumnL2Balls(r)
    return _TaskL1Balls(r) if constraint == "l1" else _TaskL2Balls(r)


def constraint_norm(W: np.ndarray, constraint: str) -> np.ndarray | float:
    """``||W||_{1,inf}`` (a float) or the per-task ``l1`` / ``l2`` norms (shape ``(m,)``)."""
    if constraint == "l1inf":
        return l1inf_norm(W)
    if constraint == "l1":
        return np.abs(W).sum(axis=0)
    if constraint == "l2":
        return np.linalg.norm(W, axis=0)
    raise ValueError(f"constraint must be one of {CONSTRAINTS}, got {constraint!r}.")


class _L1InfMixin:
    """Parameter checks and the choice of solver shared by the two presets."""

    def _check_params(self) -> None:
        if self.constraint not in CONSTRAINTS:
            raise ValueError(
                f"constraint must be one of {CONSTRAINTS}, got {self.constraint!r}."
            )
        _check_radius(self.radius, None, self.constraint)
        if self.solver not in _SOLVERS:
            raise ValueError(f"solver must be one of {_SOLVERS}, got {self.solver!r}.")
        if self.iterate not in ITERATES:
            raise ValueError(f"iterate must be one of {ITERATES}, got {self.iterate!r}.")
        if int(self.max_iter) < 1:
            raise ValueError(f"max_iter must be >= 1, got {self.max_iter!r}.")
        check_scalar_param(self.tol, "tol")
        if self.eta0 is not None:
            etas = np.atleast_1d(np.asarray(self.eta0, dtype=float))
            if etas.size == 0 or not np.all(np.isfinite(etas)) or np.any(etas <= 0):
                raise ValueError(f"eta0 must be None or positive numbers, got {self.eta0!r}.")

    def _make_penalty(self, datafit: Datafit) -> Constraint:
        return make_constraint(self.constraint, self.radius, datafit.data.n_tasks)

    def _solver_name(self, datafit: Datafit) -> str:
        if self.solver == "auto":
            return "fista" if datafit.smooth else "subgradient"
        if self.solver == "fista" and not datafit.smooth:
            raise ValueError(f"solver='fista' needs a smooth loss; the {datafit.name} loss is "
                             "not: use solver='subgradient' (or 'auto').")
        if self.solver == "lp":
            if datafit.name != "hinge":
                raise ValueError(f"solver='lp' needs the hinge loss (the problem is then a "
                                 f"linear program); the {datafit.name} loss is not piecewise "
                                 "linear: use solver='fista' or 'auto'.")
            if self.constraint == "l2":
                raise ValueError("solver='lp' handles constraint='l1inf' or 'l1' (polyhedral "
                                 "balls); the l2 balls are not a linear program: use "
                                 "solver='subgradient'.")
        return self.solver

    def _solve(self, datafit: Datafit, data: MultiTaskData) -> SolverResult:
        constraint = self._make_penalty(datafit)
        coef_init = intercept_init = None
        if self.warm_start and hasattr(self, "coef_"):
            if self.coef_.shape == (data.n_tasks, data.n_features):
                coef_init = self.coef_.T
                if datafit.has_intercept_variable:
                    intercept_init = self.intercept_
        self.solver_ = self._solver_name(datafit)
        if self.solver_ == "lp":
            return hinge_lp(datafit, constraint)
        if self.solver_ == "fista":
            return fista(datafit, constraint, coef_init=coef_init, intercept_init=intercept_init,
                         max_iter=int(self.max_iter), tol=float(self.tol))
        eta0 = self.eta0
        if eta0 is not None and np.ndim(eta0) > 0:
            eta0 = [float(e) for e in np.asarray(eta0, dtype=float).ravel()]
        return projected_subgradient(
            datafit, constraint, coef_init=coef_init, intercept_init=intercept_init,
            eta0=eta0, max_iter=int(self.max_iter), tol=float(self.tol),
            iterate=self.iterate,
        )

    def _store_result(self, result: SolverResult, data: MultiTaskData) -> None:
        super()._store_result(result, data)
        W = result.W
        self.selected_features_ = np.flatnonzero(np.any(W != 0, axis=1))
        self.eta0_ = result.info.get("eta0")


_PARAMS_DOC = """
    radius : float or array-like of shape (n_tasks,), default=1.0
        ``C >= 0``, the radius of the ball (one per task allowed for ``"l1"`` and ``"l2"``).
    constraint : {"l1inf", "l1", "l2"}, default="l1inf"
        Joint ``||W||_{1,inf} <= C``, or independent per-task ``l1`` / ``l2`` balls (the
        paper's baselines, same solver).
    solver : {"auto", "subgradient", "fista", "lp"}, default="auto"
        ``"auto"``: accelerated projected gradient for smooth losses, projected subgradient
        for the hinge loss. ``"lp"`` (classifier with the hinge loss and
        ``constraint="l1inf"`` or ``"l1"`` only): the exact solution as a linear program
        (HiGHS, a vertex solution, hence sparse; :func:`~multitask.solvers.lp.hinge_lp`);
        ``eta0``, ``iterate``, ``max_iter``, ``tol`` and ``warm_start`` do not apply to it.
    eta0 : float, sequence of float or None, default=None
        Step scale of the subgradient method (steps ``eta0 / sqrt(k)``). ``None``: the value
        minimizing the textbook bound, ``C sqrt(m) / (G sqrt(1 + ln max_iter))`` with ``G`` a
        bound of the subgradient norm. A sequence: one run per value, the one with the lowest
        training objective is kept (the paper's rule).
    iterate : {"best", "average", "last"}, default="best"
        Point returned by the subgradient method (see
        :func:`~multitask.solvers.subgradient.projected_subgradient`).
    max_iter : int, default=1000
        Iteration budget (``ConvergenceWarning`` when reached before the stopping rule).
    tol : float, default=1e-5
        FISTA: relative objective change. Subgradient: relative improvement of the best
        objective over a window of 50 iterations (``0``: run exactly ``max_iter``).
    fit_intercept : bool, default=True
        Unpenalized, unconstrained per-task intercepts (subgradient: updated with the same
        step as ``W``; squared loss: eliminated by centring).
    task_column : int, optional
        Column of ``X`` holding the task id of each row (long format).
    warm_start : bool, default=False
        Start from the previous solution (paths over ``radius``).
"""


class L1InfClassifier(_L1InfMixin, MultiTaskClassifierBase):
    # the docstring is assembled from _PARAMS_DOC, hence an assignment
    __doc__ = """Multi-task linear classifier in the l1,inf ball (joint feature selection).

    Minimizes ``sum_t (1 / n_t) sum_{i in t} ell(y_i, x_i^T w_t + b_t)`` subject to
    ``sum_j max_t |W_jt| <= radius``, labels mapped to -1/+1 per task; ``ell`` is the hinge
    ``max(0, 1 - y z)`` (default), the logistic ``log(1 + exp(-y z))`` or the squared hinge
    ``max(0, 1 - y z)^2``. With the hinge loss and the l1,inf or per-task l1 balls the problem
    is a linear program, solved exactly by ``solver="lp"``.

    Parameters
    ----------
    loss : {"hinge", "logistic", "squared_hinge"}, default="hinge"
    """ + _PARAMS_DOC + """
    Attributes
    ----------
    coef_ : ndarray of shape (n_tasks, n_features)
    intercept_ : ndarray of shape (n_tasks,)
    classes_ : ndarray of shape (2,)
    tasks_ : ndarray of shape (n_tasks,)
    selected_features_ : ndarray of int
        Features with a nonzero coefficient in at least one task.
    solver_ : str
        The solver used (``"subgradient"``, ``"fista"`` or ``"lp"``).
    eta0_ : float or None
        Step scale used by the subgradient method.
    n_iter_, objective_, converged_
        Iterations (for ``"lp"``: HiGHS's), objective per iteration (for ``"lp"``: one value,
        the optimum), whether the stopping rule (for ``"lp"``: optimality) was met.

    Examples
    --------
    >>> import numpy as np
    >>> from multitask.estimators.l1inf import L1InfClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((80, 6))
    >>> Y = (X[:, :2] @ rng.standard_normal((2, 3)) > 0).astype(int)
    >>> est = L1InfClassifier(radius=5.0, max_iter=300).fit(X, Y)
    >>> est.coef_.shape
    (3, 6)
    >>> exact = L1InfClassifier(radius=5.0, solver="lp").fit(X, Y)  # exact hinge optimum
    >>> bool(exact.objective_[-1] <= est.objective_.min() + 1e-9)
    True
    """

    def __init__(self, radius=1.0, *, loss="hinge", constraint="l1inf", solver="auto",
                 eta0=None, iterate="best", max_iter=1000, tol=1e-5, fit_intercept=True,
                 task_column=None, warm_start=False):
        self.radius = radius
        self.loss = loss
        self.constraint = constraint
        self.solver = solver
        self.eta0 = eta0
        self.iterate = iterate
        self.max_iter = max_iter
        self.tol = tol
        self.fit_intercept = fit_intercept
        self.task_column = task_column
        self.warm_start = warm_start

    def _check_params(self) -> None:
        super()._check_params()
        if self.loss not in ("hinge", "logistic", "squared_hinge"):
            raise ValueError(
                f"loss must be 'hinge', 'logistic' or 'squared_hinge', got {self.loss!r}."
            )


class L1InfRegressor(_L1InfMixin, MultiTaskRegressorBase):
    # the docstring is assembled from _PARAMS_DOC, hence an assignment
    __doc__ = """Multi-task least squares in the l1,inf ball (joint feature selection).

    Minimizes ``sum_t 1 / (2 n_t) ||X_t w_t + b_t - y_t||^2`` subject to
    ``sum_j max_t |W_jt| <= radius``.

    Parameters
    ----------""" + _PARAMS_DOC + """
    Attributes
    ----------
    coef_ : ndarray of shape (n_tasks, n_features)
    intercept_ : ndarray of shape (n_tasks,)
    tasks_ : ndarray of shape (n_tasks,)
    selected_features_ : ndarray of int
    solver_ : str
    eta0_ : float or None
    n_iter_, objective_, converged_

    Examples
    --------
    >>> import numpy as np
    >>> from multitask.estimators.l1inf import L1InfRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((50, 6))
    >>> Y = X[:, :2] @ rng.standard_normal((2, 3))
    >>> est = L1InfRegressor(radius=2.0).fit(X, Y)
    >>> bool(np.abs(est.coef_).max(axis=0).sum() <= 2.0 + 1e-9)
    True
    """

    def __init__(self, radius=1.0, *, constraint="l1inf", solver="auto", eta0=None,
                 iterate="best", max_iter=1000, tol=1e-5, fit_intercept=True, task_column=None,
                 warm_start=False):
        self.radius = radius
        self.constraint = constraint
        self.solver = solver
        self.eta0 = eta0
        self.iterate = iterate
        self.max_iter = max_iter
        self.tol = tol
        self.fit_intercept = fit_intercept
        self.task_column = task_column
        self.warm_start = warm_start


def l1inf_path(estimator, X, y, radii, *, task=None):
    """Fit ``estimator`` for increasing radii, each fit warm-started from the previous one.

    Parameters
    ----------
    estimator : L1InfClassifier or L1InfRegressor
        Model with its other parameters set (not modified; a clone is fitted).
    X, y, task
        Training data in any of the three formats.
    radii : sequence of float
        Radii ``C`` (sorted increasingly before fitting: the smallest ball is the easiest
        start, and each solution is feasible for the next, larger ball).

    Returns
    -------
    radii : ndarray of shape (n_radii,)
        Sorted radii.
    coefs : ndarray of shape (n_radii, n_tasks, n_features)
    intercepts : ndarray of shape (n_radii, n_tasks)
    n_iter : ndarray of shape (n_radii,)

    Raises
    ------
    ValueError
        When ``radii`` is empty or holds a negative value.
    """
    radii = np.sort(np.asarray(radii, dtype=float).ravel())
    if radii.size == 0:
        raise ValueError("radii is empty.")
    for r in radii:
        check_scalar_param(r, "radius")
    est = clone(estimator).set_params(warm_start=True)
    coefs, intercepts, n_iter = [], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for r in radii:
            est.set_params(radius=float(r)).fit(X, y, task)
            coefs.append(est.coef_.copy())
            intercepts.append(est.intercept_.copy())
            n_iter.append(est.n_iter_)
    return radii, np.stack(coefs), np.stack(intercepts), np.asarray(n_iter)
