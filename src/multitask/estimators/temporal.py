"""Temporal multi-task models: the temporal group lasso and the fused sparse group lasso.

The tasks are time points, in the order of ``tasks_`` (the list order for per-task lists
and shared designs, the sorted task labels for long format). With ``W`` of shape
``(n_features, n_tasks)`` and ``W H = [w_1 - w_2, ..., w_{m-1} - w_m]``, the models minimize
(library scaling, ``F = sum_t (1/n_t) sum_{i in t} ell(y_i, x_i^T w_t + b_t)``)::

    TGL:    F(W, b) + alpha_smooth ||W H||_F^2 + alpha_group sum_j ||W_j.||_2
                    + (alpha_l2 / 2) ||W||_F^2
    cFSGL:  F(W, b) + alpha_l1 ||W||_1 + alpha_fused ||W H||_1 + alpha_group sum_j ||W_j.||_2

(Zhou, Yuan, Liu & Ye, "A multi-task learning formulation for predicting disease
progression", KDD 2011, MALSAR's ``TGL``; Zhou, Liu, Narayan & Ye, "Modeling disease
progression via fused sparse group lasso", KDD 2012, MALSAR's ``cFSGL``). Both select
features for all time points at once (l2,1); TGL makes the weights of a feature change
smoothly over time, cFSGL piecewise constant and sparse. Penalties:
:class:`~multitask.penalties.temporal.TemporalGroupLasso` (the temporal term is its
``"smooth"`` part, a task coupling) and :class:`~multitask.penalties.temporal.
FusedSparseGroupLasso` (an exact prox through the 1-D total-variation prox). Solvers: for
least squares block coordinate descent (``"bcd"``: proximal steps on the feature rows, with
``W K`` kept up to date for TGL's coupling, Anderson-accelerated; ``"exact"`` when TGL's
``alpha_group`` is 0); for classification accelerated proximal gradient (``"fista"``, or
majorization-minimization ``"mm"`` for cFSGL on ill-conditioned data); ``"pg"`` and cFSGL's
``"admm"`` on request.

With more than two classes (one multinomial model per time point, ``m K`` task-class columns
of ``W``; :mod:`multitask.losses.multinomial`) the temporal terms tie each class to the same
class at the neighbouring time points (``W H`` per class: ``H kron I_K``), and the l2,1 term
selects a feature for every time point and class at once; cFSGL's l1 term acts on every entry.
"""

from __future__ import annotations

import numpy as np

from multitask.estimators._grid_scales import ridge_grid_top
from multitask.estimators.base import (
    MultiTaskClassifierBase,
    MultiTaskRegressorBase,
    Param,
    nonnegative,
)
from multitask.estimators.docstrings import CLASSIFICATION_LOSS, REGRESSION_LOSS
from multitask.estimators.fitted_state import Fitted, derived, fit_weights
from multitask.estimators.multiclass import column_classes, task_count
from multitask.estimators.regularization_grid import GridSpan
from multitask.losses import Datafit
from multitask.penalties.temporal import FusedSparseGroupLasso, TemporalGroupLasso

__all__ = [
    "FusedSparseGroupLassoClassifier",
    "FusedSparseGroupLassoRegressor",
    "TemporalGroupLassoClassifier",
    "TemporalGroupLassoRegressor",
]


class _Temporal:
    _solvers: tuple[str, ...] = ("exact", "bcd", "working_set", "fista", "pg", "newton",
                                 "active_newton")
    _max_iter = 10000
    _path_param = "alpha_group"

    _fitted_state = {"selected_features_": Fitted("indices", bound="d", check=derived(
        lambda est, s: np.flatnonzero(np.linalg.norm(fit_weights(est, s), axis=1) > 0),
        "the nonzero rows of coef_"))}

    def _store_extra(self, result, penalty, datafit) -> None:
        self.selected_features_ = np.flatnonzero(np.linalg.norm(result.W, axis=1) > 0)

    def _structure_note(self, tasks):
        # lists and shared designs give the order of their tasks, numbers (months, stages)
        # sort in time; text labels sort alphabetically, an order nobody gave
        tasks = np.asarray(tasks)
        if len(tasks) < 3 or tasks.dtype.kind not in "USO":
            return None
        shown = ", ".join(repr(str(t)) for t in tasks[:4]) + (", ..." if len(tasks) > 4 else "")
        return (f"{type(self).__name__} ties each task to its neighbours in the order of "
                f"tasks_ ({shown}), here the alphabetical order of text task labels: an order "
                "nobody gave. Use number labels that sort in time (months, stages) or per-task "
                "lists in time order; tasks without an order need another model (graph, "
                "clustered, low-rank).")


class _TGL(_Temporal):
    _params = {
        "alpha_group": Param(0.1, [nonnegative], keyword_only=False,
                             classifier_default=0.01),
        "alpha_smooth": Param(0.1, [nonnegative], keyword_only=False,
                              classifier_default=0.01),
    }

    def _make_penalty(self, datafit: Datafit) -> TemporalGroupLasso:
        return TemporalGroupLasso(float(self.alpha_smooth), float(self.alpha_group),
                                  task_count(datafit), n_classes=column_classes(datafit))

    def _grid_tops(self, datafit, penalty):
        grad = datafit.grad_at_zero()
        lam = penalty.lambda_max if penalty.lambda_max > 0 else 1.0
        return {"alpha_group": (penalty.alpha_max(grad), 1.0),
                "alpha_smooth": (ridge_grid_top(datafit) / (2.0 * lam), 4.0 / 3.0)}


class _FSGL(_Temporal):
    _solvers = ("bcd", "working_set", "fista", "pg", "admm", "mm", "newton")
    _params = {
        "alpha_group": Param(0.1, [nonnegative], keyword_only=False,
                             classifier_default=0.01),
        "alpha_fused": Param(0.01, [nonnegative], keyword_only=False,
                             classifier_default=0.001),
        "alpha_l1": Param(0.01, [nonnegative], keyword_only=False,
                          classifier_default=0.001),
    }

    def _make_penalty(self, datafit: Datafit) -> FusedSparseGroupLasso:
        return FusedSparseGroupLasso(float(self.alpha_l1), float(self.alpha_fused),
                                     float(self.alpha_group),
                                     n_classes=column_classes(datafit))

    def _grid_tops(self, datafit, penalty):
        """``alpha_group`` (the path), ``alpha_fused`` from ``max |G|`` (all tasks fused
        into one: the pooled model) down three decades, and ``alpha_l1`` inside them, from
        ``10^-1.5`` to ``10^-3`` times ``max |G|``: at ``max |G|`` itself the l1 term alone
        makes ``W = 0`` at every ``alpha_group``."""
        grad = datafit.grad_at_zero()
        top = float(np.abs(grad).max()) if grad.size else 0.0
        l1 = top if top > 0 and np.isfinite(top) else 1.0
        return {"alpha_group": (penalty.alpha_max(grad), 1.0), "alpha_fused": (top, 1.0),
                "alpha_l1": GridSpan(l1 * 10.0 ** -1.5, l1 * 1e-3)}


_ATTRS = """
    Attributes
    ----------
    coef_ : ndarray of shape (n_tasks, n_features)
        Row ``t`` is time point ``tasks_[t]``.
    intercept_ : ndarray of shape (n_tasks,)
    selected_features_ : ndarray of int
        Features with a nonzero weight at some time point (nonzero rows of ``W``; the l2,1
        prox sets the others exactly to zero).
{classes}    tasks_, n_iter_, objective_, converged_, optimality_, solver_
        See :mod:`multitask.estimators.base`.
"""
_CLASSES = """    classes_ : ndarray of shape (2,)
        ``classes_[1]`` is the positive class (score > 0).
"""
_LOSS = '''    loss : {"logistic", "squared_hinge"}, default="logistic"
'''

_TGL_DOC = """
    Minimizes ``{loss_formula} + alpha_smooth sum_t ||w_t - w_(t+1)||^2 + alpha_group sum_j
    ||W_j.||_2 + (alpha_l2 / 2) ||W||_F^2`` over the tasks in the order of ``tasks_`` (time
    points). MALSAR's ``TGL(rho1, rho2, rho3)`` is ``alpha_l2 = 2 rho1 / n``,
    ``alpha_smooth = rho2 / n``, ``alpha_group = rho3 / n`` with ``n`` rows per task (least
    squares; logistic: ``alpha_l2 = 2 rho1``, ``alpha_smooth = rho2``, ``alpha_group =
    rho3``). ``alpha_max(X, y)`` is the smallest ``alpha_group`` with ``coef_ = 0``
    (``max_j ||G_j.||_2``); the default grid runs ``alpha_group`` from it as the path and
    ``alpha_smooth`` over 4 decades below ``10 L_f / (2 lambda_max(H H^T))``.

    Parameters
    ----------
    alpha_group : float, default={group}
        Weight of the l2,1 norm over feature rows (>= 0; the path parameter).
    alpha_smooth : float, default={smooth}
        Weight of ``||W H||_F^2 = sum_t ||w_t - w_(t+1)||^2`` (>= 0).
{loss}    {{common_parameters}}
"""

_FSGL_DOC = """
    Minimizes ``{loss_formula} + alpha_l1 ||W||_1 + alpha_fused sum_j sum_t |W_jt -
    W_j,t+1| + alpha_group sum_j ||W_j.||_2`` over the tasks in the order of ``tasks_``
    (time points). MALSAR's ``cFSGL(rho1, rho2, rho3)`` is ``alpha_l1 = rho1 / n``,
    ``alpha_fused = rho2 / n``, ``alpha_group = rho3 / n`` with ``n`` rows per task (least
    squares; logistic: equal). The prox is exact (1-D total variation, then
    soft-thresholding, then group soft-thresholding). ``alpha_max(X, y)`` is the smallest
    ``alpha_group`` with ``coef_ = 0`` for the given ``alpha_l1`` and ``alpha_fused``; the
    default grid runs ``alpha_group`` from it as the path and ``alpha_fused`` over
    ``log10(1 / alpha_ratio)`` decades below ``max |G|``.

    Parameters
    ----------
    alpha_group : float, default={group}
        Weight of the l2,1 norm over feature rows (>= 0; the path parameter).
    alpha_fused : float, default={fused}
        Weight of the fused term ``||W H||_1`` (>= 0).
    alpha_l1 : float, default={l1}
        Weight of ``||W||_1`` (>= 0).
{loss}    {{common_parameters}}
"""


class TemporalGroupLassoRegressor(_TGL, MultiTaskRegressorBase):
    __doc__ = ("Temporal group lasso (TGL), least squares: smooth weights over time.\n"
               + _TGL_DOC.format(loss_formula=REGRESSION_LOSS, group=0.1, smooth=0.1, loss="")
               + _ATTRS.format(classes=""))


class TemporalGroupLassoClassifier(_TGL, MultiTaskClassifierBase):
    __doc__ = ("Temporal group lasso (TGL), logistic loss: smooth weights over time.\n"
               + _TGL_DOC.format(loss_formula=CLASSIFICATION_LOSS, group=0.01, smooth=0.01,
                                 loss=_LOSS)
               + _ATTRS.format(classes=_CLASSES))


class FusedSparseGroupLassoRegressor(_FSGL, MultiTaskRegressorBase):
    __doc__ = ("Fused sparse group lasso (cFSGL), least squares: piecewise constant weights.\n"
               + _FSGL_DOC.format(loss_formula=REGRESSION_LOSS, group=0.1, fused=0.01, l1=0.01,
                                  loss="")
               + _ATTRS.format(classes=""))


class FusedSparseGroupLassoClassifier(_FSGL, MultiTaskClassifierBase):
    __doc__ = ("Fused sparse group lasso (cFSGL), logistic loss.\n"
               + _FSGL_DOC.format(loss_formula=CLASSIFICATION_LOSS, group=0.01, fused=0.001,
                                  l1=0.001, loss=_LOSS)
               + _ATTRS.format(classes=_CLASSES))
