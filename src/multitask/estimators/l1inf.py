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

Solvers: for the smooth losses, accelerated projected gradient (``"fista"``); for the hinge
loss with the l1,inf or per-task l1 balls, the exact solution of the equivalent linear program
(``"lp"``, a sparse vertex of the optimal set); the projected subgradient method with steps
``eta0 / sqrt(k)`` (``"subgradient"``, the paper's method, for any loss).

With more than two classes (``loss="logistic"``: one multinomial model per task, ``m K``
task-class columns of ``W``; :mod:`multitask.losses.multinomial`) the l1,inf ball spans every
task and class (a feature is used by all of them or by none), and a per-task radius of the
``"l1"`` / ``"l2"`` balls bounds each of the task's ``K`` class columns.
"""

from __future__ import annotations

from numbers import Real

import numpy as np
from sklearn.utils._param_validation import StrOptions

from multitask.estimators.base import (
    MultiTaskClassifierBase,
    MultiTaskRegressorBase,
    Param,
    nonnegative,
)
from multitask.estimators.fitted_state import Fitted, derived, fit_weights
from multitask.estimators.multiclass import column_classes, task_count
from multitask.losses import Datafit
from multitask.penalties import ColumnL1Balls, ColumnL2Balls, L1InfBall, l1inf_norm
from multitask.penalties.base import Constraint
from multitask.solvers.lp import LP_AUTO_MAX_ENTRIES  # noqa: F401 - public here before
from multitask.solvers.subgradient import ITERATES

__all__ = ["CONSTRAINTS", "L1InfClassifier", "L1InfRegressor", "constraint_norm",
           "make_constraint"]

CONSTRAINTS = ("l1inf", "l1", "l2")


def _check_radius(radius, n_tasks: int | None = None, constraint: str = "l1inf"):
    """A float (any constraint) or, for ``"l1"``/``"l2"``, an array of per-task radii."""
    if np.ndim(radius) == 0:
        r = float(radius)
        if not np.isfinite(r) or r < 0:
            raise ValueError(f"radius must be a finite number >= 0, got {radius!r}.")
        return r
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
    """
    if constraint not in CONSTRAINTS:
        raise ValueError(f"constraint must be one of {CONSTRAINTS}, got {constraint!r}.")
    r = _check_radius(radius, n_tasks, constraint)
    if constraint == "l1inf":
        return L1InfBall(r)
    return ColumnL1Balls(r) if constraint == "l1" else ColumnL2Balls(r)


def constraint_norm(W: np.ndarray, constraint: str) -> np.ndarray | float:
    """``||W||_{1,inf}`` (a float) or the per-task ``l1`` / ``l2`` norms (shape ``(m,)``)."""
    if constraint == "l1inf":
        return l1inf_norm(W)
    if constraint == "l1":
        return np.abs(W).sum(axis=0)
    if constraint == "l2":
        return np.linalg.norm(W, axis=0)
    raise ValueError(f"constraint must be one of {CONSTRAINTS}, got {constraint!r}.")


class _L1Inf:
    _params = {
        "radius": Param(1.0, [nonnegative, "array-like"], keyword_only=False),
        "constraint": Param("l1inf", [StrOptions(set(CONSTRAINTS))]),
        "eta0": Param(None, [Real, "array-like", None]),
        "iterate": Param("best", [StrOptions(set(ITERATES))]),
    }
    _solvers = ("fista", "lp", "subgradient")
    _max_iter = 1000
    _path_param = "radius"

    def _check_params(self) -> None:
        _check_radius(self.radius, None, self.constraint)
        if self.eta0 is not None:
            etas = np.atleast_1d(np.asarray(self.eta0, dtype=float))
            if etas.size == 0 or not np.all(np.isfinite(etas)) or np.any(etas <= 0):
                raise ValueError(f"eta0 must be None or positive numbers, got {self.eta0!r}.")

    def _make_penalty(self, datafit: Datafit) -> Constraint:
        """The ball; for ``K`` classes (a multinomial model) per-task radii apply to each of
        the task's ``K`` class columns (the l1,inf ball spans every task and class)."""
        K = column_classes(datafit)
        radius = self.radius
        if K > 1 and np.ndim(radius) > 0:
            radius = np.repeat(_check_radius(radius, task_count(datafit), self.constraint), K)
        return make_constraint(self.constraint, radius, datafit.data.n_tasks)

    def _solver_settings(self, name: str) -> dict:
        settings = super()._solver_settings(name)
        if name == "subgradient":
            eta0 = self.eta0
            if eta0 is not None and np.ndim(eta0) > 0:
                eta0 = [float(e) for e in np.asarray(eta0, dtype=float).ravel()]
            settings.update(eta0=eta0, iterate=self.iterate)
        return settings

    def alpha_max(self, X, y, task=None, sample_weight=None) -> float:
        """The radius is a constraint: no finite radius forces ``coef_ = 0`` (``inf``)."""
        return float("inf")

    def default_grid(self, X, y, task=None, *, sample_weight=None, n_alphas: int = 10,
                     alpha_ratio: float = 1e-3) -> dict[str, np.ndarray]:
        """Radii from ``1e-3 R`` up to ``R = ||W_ls||`` (smallest ball first), where ``W_ls``
        is the solution of the unconstrained loss with a light ridge: beyond ``R`` the
        constraint no longer binds."""
        from multitask.estimators.baselines import (
            IndependentRidgeClassifier,
            IndependentRidgeRegressor,
        )

        ridge_cls = IndependentRidgeClassifier if self._is_classifier else \
            IndependentRidgeRegressor
        ridge = ridge_cls(alpha=1e-6, task_column=self.task_column,
                          missing_targets=self.missing_targets)
        if self._is_classifier:
            ridge.set_params(loss="logistic")
        ridge.fit(X, y, task, sample_weight=sample_weight)
        coef = np.asarray(ridge.coef_)
        coef = coef.reshape(-1, coef.shape[-1])  # the task-class rows of more than 2 classes
        top = float(np.max(np.atleast_1d(constraint_norm(coef.T, self.constraint))))
        top = top if np.isfinite(top) and top > 0 else 1.0
        return {"radius": top * np.logspace(np.log10(float(alpha_ratio)), 0, int(n_alphas))}

    _fitted_state = {
        "selected_features_": Fitted("indices", bound="d", check=derived(
            lambda est, s: np.flatnonzero(np.any(fit_weights(est, s) != 0, axis=1)),
            "the nonzero rows of coef_")),
        "eta0_": Fitted("float", optional=True, nonnegative=True),
    }

    def _store_extra(self, result, penalty, datafit) -> None:
        self.selected_features_ = np.flatnonzero(np.any(result.W != 0, axis=1))
        self.eta0_ = result.info.get("eta0")


_PARAMS_DOC = """
    radius : float or array-like of shape (n_tasks,), default=1.0
        ``C >= 0``, the radius of the ball (one per task allowed for ``"l1"`` and ``"l2"``).
    constraint : {"l1inf", "l1", "l2"}, default="l1inf"
        Joint ``||W||_{1,inf} <= C``, or independent per-task ``l1`` / ``l2`` balls (the
        paper's baselines, same solver).
    eta0 : float, sequence of float or None, default=None
        Step scale of the subgradient method (steps ``eta0 / sqrt(k)``). ``None``: the value
        minimizing the textbook bound, ``C sqrt(m) / (G sqrt(1 + ln max_iter))`` with ``G`` a
        bound of the subgradient norm. A sequence: one run per value, the one with the lowest
        training objective is kept (the paper's rule).
    iterate : {"best", "average", "last"}, default="best"
        Point returned by the subgradient method.
"""


class L1InfClassifier(_L1Inf, MultiTaskClassifierBase):
    # the docstring is assembled from _PARAMS_DOC, hence an assignment
    __doc__ = """Multi-task linear classifier in the l1,inf ball (joint feature selection).

    Minimizes ``sum_t (1 / n_t) sum_{i in t} ell(y_i, x_i^T w_t + b_t)`` subject to
    ``sum_j max_t |W_jt| <= radius``, labels mapped to -1/+1 per task; ``ell`` is the hinge
    ``max(0, 1 - y z)`` (default), the logistic ``log(1 + exp(-y z))`` or the squared hinge
    ``max(0, 1 - y z)^2``. With the hinge loss and the l1,inf or per-task l1 balls the problem
    is a linear program, solved exactly by ``solver="lp"`` (what ``"auto"`` chooses up to
    ``LP_AUTO_MAX_ENTRIES`` stored entries of the design; the subgradient method beyond, whose
    optimality measure is not computable for the hinge: it then runs ``max_iter`` steps).

    Parameters
    ----------""" + _PARAMS_DOC + """    loss : {"hinge", "logistic", "squared_hinge"}, \
default="hinge"
    {common_parameters}

    Attributes
    ----------
    coef_ : ndarray of shape (n_tasks, n_features)
    intercept_ : ndarray of shape (n_tasks,)
    classes_ : ndarray of shape (2,)
    tasks_ : ndarray of shape (n_tasks,)
    selected_features_ : ndarray of int
        Features with a nonzero coefficient in at least one task.
    eta0_ : float or None
        Step scale used by the subgradient method.
    n_iter_, objective_, converged_, optimality_, solver_
        See :mod:`multitask.estimators.base` (for ``"lp"``, ``optimality_`` is the relative
        duality gap reported by HiGHS).

    Examples
    --------
    >>> import numpy as np
    >>> from multitask import L1InfClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((80, 6))
    >>> Y = (X[:, :2] @ rng.standard_normal((2, 3)) > 0).astype(int)
    >>> est = L1InfClassifier(radius=5.0).fit(X, Y)
    >>> est.coef_.shape
    (3, 6)
    """

    _losses = ("hinge", "logistic", "squared_hinge")


class L1InfRegressor(_L1Inf, MultiTaskRegressorBase):
    # the docstring is assembled from _PARAMS_DOC, hence an assignment
    __doc__ = """Multi-task least squares in the l1,inf ball (joint feature selection).

    Minimizes ``sum_t 1 / (2 n_t) ||X_t w_t + b_t - y_t||^2`` subject to
    ``sum_j max_t |W_jt| <= radius``.

    Parameters
    ----------""" + _PARAMS_DOC + """    {common_parameters}

    Attributes
    ----------
    coef_ : ndarray of shape (n_tasks, n_features)
    intercept_ : ndarray of shape (n_tasks,)
    tasks_ : ndarray of shape (n_tasks,)
    selected_features_ : ndarray of int
    n_iter_, objective_, converged_, optimality_, solver_

    Examples
    --------
    >>> import numpy as np
    >>> from multitask import L1InfRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((50, 6))
    >>> Y = X[:, :2] @ rng.standard_normal((2, 3))
    >>> est = L1InfRegressor(radius=2.0).fit(X, Y)
    >>> bool(np.abs(est.coef_).max(axis=0).sum() <= 2.0 + 1e-9)
    True
    """
