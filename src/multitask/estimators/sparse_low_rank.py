"""Sparse + low-rank multi-task learning ("MixedNorm", Chen, Liu & Ye).

J. Chen, J. Liu, J. Ye, "Learning incoherent sparse and low-rank patterns from multiple tasks",
ACM TKDD 5(4), 2012. The weight matrix is the sum of an entrywise sparse part ``P``
(task-specific features) and a low-rank part ``Q`` (a subspace shared by the tasks)::

    min_{P, Q, b}  sum_t (1/n_t) sum_{i in t} ell(y_i, x_i^T (p_t + q_t) + b_t) + alpha ||P||_1
    subject to     ||Q||_* <= radius

(internal ``P``, ``Q`` of shape ``(n_features, n_tasks)``; the public ``coef_``,
``sparse_component_`` and ``low_rank_component_`` are ``(n_tasks, n_features)``). The
penalty is :class:`~multitask.penalties.composite.SparseLowRank`; the paper's projected
gradient (``solver="pg"``) and accelerated projected gradient (``solver="fista"``, the default,
with the paper's step search started at a secant estimate) are
:class:`~multitask.solvers.fista.ProximalGradient`.

Relation to the paper's Eq. (45) (shared design of ``n`` rows, squared loss, no intercept):
``gamma_paper = 2 n alpha`` and ``tau_paper = radius``. Special cases: ``radius = 0`` gives
``Q = 0`` and independent lasso problems ("OneNorm"); ``alpha >= ||G||_inf`` at the
trace-constrained solution gives ``P = 0`` ("TraceNorm", constrained form).

With more than two classes (``loss="logistic"``: one multinomial model per task, ``m K``
task-class columns of ``W``; :mod:`multitask.losses.multinomial`) both parts act on all the
task-class columns (the trace ball bounds the low-rank part of every task and class together),
and the components have the shape of ``coef_``.
"""

from __future__ import annotations

import numpy as np

from multitask.estimators._grid_scales import SPAN_DECADES, free_weights
from multitask.estimators.base import (
    GridSpan,
    MultiTaskClassifierBase,
    MultiTaskRegressorBase,
    Param,
    nonnegative,
)
from multitask.estimators.fitted_state import Fitted, at_most
from multitask.estimators.multiclass import by_task
from multitask.estimators.split_state import split_parts
from multitask.losses import Datafit
from multitask.penalties import SparseLowRank
from multitask.penalties.capped_trace import singular_values

__all__ = ["SparseLowRankClassifier", "SparseLowRankRegressor"]

def numerical_rank(Q: np.ndarray) -> int:
    """Numerical rank of ``Q``: singular values above ``max(d, m) * eps * sigma_max``."""
    s = singular_values(Q)
    if not s.size or s[0] == 0:
        return 0
    return int(np.sum(s > max(Q.shape) * np.finfo(float).eps * s[0]))


#: The tolerance (at least; the model's own where looser) of a fit in a cross-validation path
#: that serves only as the next fit's warm start (a candidate successive halving left behind:
#: :meth:`_SparseLowRank._warm_start_settings`).
WARM_START_TOL = 1e-2


class _SparseLowRank:
    _params = {
        "alpha": Param(0.01, [nonnegative], keyword_only=False),
        "radius": Param(1.0, [nonnegative], keyword_only=False),
    }
    _task_components = ("sparse_component_", "low_rank_component_")
    _max_iter = 10000
    _renamed = {
        "gamma": "it is now 'alpha' (the same weight of ||P||_1, the paper's gamma)",
        "tau": "it is now 'radius' (the same radius of the trace-norm ball, the paper's tau)",
        "algorithm": "it is now 'solver' (algorithm='ag' is solver='fista', 'pg' is "
                     "solver='pg')",
        "line_search": "the solvers always search the step (from a secant estimate)",
        "criterion": "every model stops on 'tol', its relative optimality measure",
        "tol_type": "every model stops on 'tol', its relative optimality measure",
    }

    def _make_penalty(self, datafit: Datafit):
        return SparseLowRank(float(self.alpha), float(self.radius))

    def _warm_start_settings(self) -> dict:
        """``tol`` at least :data:`WARM_START_TOL`: a fit that only starts the next one
        needs no certificate at the model's tolerance (the next fit is certified at it from
        wherever it starts); the candidates of School's and the survey's two-parameter search
        are chosen the same (``benchmarks/bench_cv_two_param.py``)."""
        return {"tol": max(float(self.tol), WARM_START_TOL)}

    def _grid_tops(self, datafit, penalty):
        """``alpha`` (the path, from ``||G||_inf``, ``G`` the loss gradient at zero) and
        ``radius`` inside the two decades below ``R``, the trace norm of the free fit
        (:func:`~multitask.estimators._grid_scales.free_weights`): from ``R`` on the ball no
        longer binds (the fit is the free one), near 0 the model is the independent lasso."""
        grad = datafit.grad_at_zero()
        top_l1 = float(np.max(np.abs(grad))) if grad.size else 0.0
        R = float(np.sum(singular_values(free_weights(datafit))))
        R = R if np.isfinite(R) and R > 0 else 1.0
        return {"alpha": (top_l1, 1.0),
                "radius": GridSpan(R, R * 10.0 ** -SPAN_DECADES, interior=True)}

    def _solver_settings(self, name: str) -> dict:
        if name not in ("fista", "pg"):
            return super()._solver_settings(name)
        return {**super()._solver_settings(name), "restart": False,
                "lipschitz_init": "secant"}

    _fitted_state = {
        **split_parts("sparse_component_", "low_rank_component_"),
        "rank_": Fitted("int", nonnegative=True, check=at_most(("d", "tc"))),
        "kkt_": Fitted("dict"),
    }

    def _store_extra(self, result, penalty, datafit) -> None:
        P, Q = result.coef[0], result.coef[1]
        self.sparse_component_ = by_task(self, np.ascontiguousarray(P.T))
        self.low_rank_component_ = by_task(self, np.ascontiguousarray(Q.T))
        self.rank_ = numerical_rank(Q)
        f, G, gb = datafit.value_and_grad(P + Q, result.intercept_variable)
        kkt = penalty.certificate(result.coef, G, f)
        kkt["intercept_gradient"] = float(np.max(np.abs(gb))) if gb is not None else 0.0
        # ||G||_2: the trace ball's Lagrange multiplier (the strength of a new task's
        # low-rank part, see fit_new_tasks)
        kkt["grad_spectral_norm"] = float(np.linalg.norm(G, 2)) if G.size else 0.0
        self.kkt_ = kkt

    def _new_task_context(self) -> dict:
        multiplier = getattr(self, "kkt_", {}).get("grad_spectral_norm")
        return {"parts": ({}, {"multiplier": multiplier})}


class SparseLowRankRegressor(_SparseLowRank, MultiTaskRegressorBase):
    """Sparse + low-rank multi-task least squares (MixedNorm).

    Minimizes ``sum_t 1/(2 n_t) ||X_t (p_t + q_t) + b_t - y_t||^2 + alpha ||P||_1`` subject
    to ``||Q||_* <= radius``.

    Parameters
    ----------
    alpha : float, default=0.01
        Weight of the entrywise l1 penalty on the sparse part ``P`` (>= 0; the paper's
        ``gamma``).
    radius : float, default=1.0
        Radius of the trace-norm ball of the low-rank part ``Q`` (>= 0; 0 gives ``Q = 0``;
        the paper's ``tau``).
    {common_parameters}

    Attributes
    ----------
    coef_ : ndarray of shape (n_tasks, n_features)
        ``W^T = (P + Q)^T``.
    sparse_component_ : ndarray of shape (n_tasks, n_features)
        ``P^T``: exact zeros outside its support.
    low_rank_component_ : ndarray of shape (n_tasks, n_features)
        ``Q^T``, with ``||Q||_* <= radius``.
    rank_ : int
        Numerical rank of ``Q``.
    kkt_ : dict
        KKT residuals and the certified sub-optimality bound at the solution
        (:meth:`~multitask.penalties.composite.SparseLowRank.certificate`).
    intercept_, tasks_, n_iter_, objective_, converged_, optimality_
        See :mod:`multitask.estimators.base`.

    Examples
    --------
    >>> import numpy as np
    >>> from multitask import SparseLowRankRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((60, 8))
    >>> Y = X @ rng.standard_normal((8, 4))
    >>> est = SparseLowRankRegressor(alpha=0.01, radius=2.0).fit(X, Y)
    >>> est.coef_.shape, est.sparse_component_.shape
    ((4, 8), (4, 8))
    """


class SparseLowRankClassifier(_SparseLowRank, MultiTaskClassifierBase):
    """Sparse + low-rank multi-task binary classification.

    Minimizes ``sum_t (1/n_t) sum_i ell(y_i, x_i^T (p_t + q_t) + b_t) + alpha ||P||_1``
    subject to ``||Q||_* <= radius``, labels mapped to -1/+1 per task.

    Parameters
    ----------
    alpha, radius
        As in :class:`SparseLowRankRegressor`.
    loss : {"logistic", "squared_hinge", "squared"}, default="logistic"
        ``log(1 + exp(-y z))``; ``max(0, 1 - y z)^2``; or ``0.5 (y - z)^2`` on the -1/+1
        labels, the least-squares classifier of the paper's experiments.
    {common_parameters}

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        ``classes_[1]`` is the positive class (score > 0).
    coef_, sparse_component_, low_rank_component_, rank_, kkt_, intercept_, tasks_,
    n_iter_, objective_, converged_, optimality_
        As in :class:`SparseLowRankRegressor`.
    """

    _losses = ("logistic", "squared_hinge", "squared")
