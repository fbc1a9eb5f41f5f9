"""Multi-stage multi-task feature learning (MSMTFL): the capped l1,l1 penalty.

Gong, Ye & Zhang, "Multi-stage multi-task feature learning", NIPS 2012 (MALSAR
``Least_msmtfl_capL1``). The models minimize (scaling convention of :mod:`multitask.losses`;
``W`` is ``(n_features, n_tasks)``, ``coef_ = W.T``)::

    sum_t (1 / n_t) sum_{i in t} ell(y_i, x_i^T w_t + b_t) + alpha * sum_j min(||W_j.||_1, theta)

Features whose weights reach ``theta`` in l1 norm over the tasks are not shrunk; the others are
penalized as by the lasso. The problem is non-convex; the penalty
(:class:`~multitask.penalties.capped_l1.CappedL1`) is solved by the multi-stage method
(:class:`~multitask.solvers.multistage.Multistage`, the machinery of the capped trace norm):
stage 1 is the lasso, stage ``l`` the weighted lasso with weight ``alpha`` on the features
whose row has l1 norm below ``theta`` at stage ``l - 1`` and 0 on the others; it stops when
that set repeats. The objective never increases from one stage to the next. Each stage is
solved by the first of ``_inner_solvers`` that applies to it: block coordinate descent
(``"bcd"``, every entry minimized exactly, the unpenalized rows included) for least squares,
accelerated proximal gradient otherwise (``solver="auto"``; a configured
:class:`~multitask.solvers.multistage.Multistage` keeps its own inner solver).

MALSAR's objective is ``sum_t ||X_t w_t - y_t||^2 + lambda sum_j min(||W^j||_1, theta)`` (no
factor 1/2, no 1/n_t, no intercept): with ``fit_intercept=False`` on the rows of task ``t``
multiplied by ``sqrt(2 n_t)``, ``alpha = lambda`` and ``theta`` unchanged; with ``n`` rows in
every task, equivalently the unscaled data with ``alpha = lambda / (2 n)``.

With more than two classes (``loss="logistic"``: one multinomial model per task, ``m K``
task-class columns of ``W``; :mod:`multitask.losses.multinomial`) a feature row spans every
task and class: its cap applies to the l1 norm of all of them.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval

from multitask.estimators._grid_scales import SPAN_DECADES, free_weights
from multitask.estimators._stage_solvers import StageSolverChoice
from multitask.estimators.base import (
    GridSpan,
    MultiTaskClassifierBase,
    MultiTaskRegressorBase,
    Param,
    nonnegative,
)
from multitask.estimators.docstrings import pair_doc
from multitask.estimators.fitted_state import Fitted, derived, fit_weights
from multitask.losses import Datafit
from multitask.penalties.capped_l1 import CappedL1

__all__ = ["CappedL1Classifier", "CappedL1Regressor"]


class _CappedL1(StageSolverChoice):
    _params = {
        "alpha": Param(0.1, [nonnegative], keyword_only=False, classifier_default=0.01),
        "theta": Param(1.0, [Interval(Real, 0, np.inf, closed="both")], keyword_only=False,
                       finite=False),
        "n_stages": Param(20, [Interval(Integral, 1, None, closed="left")]),
    }
    _solvers = ("multistage",)
    #: The candidates of ``solver="auto"`` for the stages (:func:`multitask.solvers.choose`).
    _inner_solvers = ("bcd", "fista")
    _max_iter = 2000

    def _make_penalty(self, datafit: Datafit):
        return CappedL1(float(self.alpha), float(self.theta))

    def _warm_start_settings(self) -> dict:
        """One stage: the next fit starts its first stage (the lasso) from this fit's first
        stage's solution either way, and its later stages (convex, weighted l1) from the
        stage before them where this fit did not reach their key: the same stage solutions
        within the tolerance, without this fit's later stages. The candidates of School's and
        the survey's two-parameter search are chosen the same
        (``benchmarks/bench_cv_two_param.py``)."""
        return {"n_stages": 1}

    def _grid_tops(self, datafit, penalty):
        """``alpha`` (the path, from ``max |G|``: the first stage, the lasso, is then zero)
        and ``theta`` inside the two decades below the largest l1 norm of a feature row of the
        free fit (:func:`~multitask.estimators._grid_scales.free_weights`): a cap above every
        row leaves the lasso, a cap near 0 leaves the later stages unpenalized."""
        grad = datafit.grad_at_zero()
        top = float(np.max(np.abs(grad))) if grad.size else 0.0
        W = free_weights(datafit)
        r = float(np.abs(W).sum(axis=1).max()) if W.size else 0.0
        r = r if np.isfinite(r) and r > 0 else 1.0
        return {"alpha": (top, 1.0),
                "theta": GridSpan(r, r * 10.0 ** -SPAN_DECADES, interior=True)}

    def _solver_settings(self, name: str) -> dict:
        return {**super()._solver_settings(name), "n_stages": int(self.n_stages)}

    _fitted_state = {
        "n_stages_": Fitted("int", nonnegative=True),
        "capped_features_": Fitted("indices", bound="d"),
        "support_": Fitted("indices", bound="d", check=derived(
            lambda est, s: np.flatnonzero(np.any(fit_weights(est, s) != 0, axis=1)),
            "the nonzero rows of coef_")),
    }

    def _store_extra(self, result, penalty, datafit) -> None:
        self.n_stages_ = int(result.info["n_stages"])
        self.capped_features_ = np.flatnonzero(penalty.capped(result.W))
        self.support_ = np.flatnonzero(np.any(result.W != 0, axis=1))


_DOC = """
    Minimizes ``{loss} + alpha * sum_j min(||W_j.||_1, theta)`` over the feature rows ``W_j.``
    of ``W`` (Gong, Ye & Zhang, NIPS 2012; MALSAR ``msmtfl``), by the multi-stage method
    (stage 1: the lasso; then weighted lassos leaving the capped features unpenalized).

    Parameters
    ----------
    alpha : float, default={alpha}
        Regularization strength (>= 0): MALSAR's ``lambda`` up to the loss scaling (module
        docstring).
    theta : float, default=1.0
        Cap (>= 0; ``inf`` is the lasso): features whose l1 norm over the tasks reaches
        ``theta`` are not penalized. Its scale is that of ``W`` (it depends on the scale of the
        features and grows with the number of tasks).
    n_stages : int, default=20
        Maximal number of stages; the solver stops earlier when the set of capped features
        repeats.
{loss_param}    {{common_parameters}}

    Attributes
    ----------
    coef_ : ndarray of shape (n_tasks, n_features)
    intercept_ : ndarray of shape (n_tasks,)
    tasks_ : ndarray of shape (n_tasks,)
    objective_ : ndarray of shape (n_stages_,)
        Objective (loss + capped penalty) after each stage (non-increasing).
    n_stages_ : int
    capped_features_ : ndarray of int
        Features with ``||W_j.||_1 >= theta`` at the solution (unpenalized).
    support_ : ndarray of int
        Features with a non-zero weight in some task.
    n_iter_ : int
        Inner iterations summed over stages.
    converged_, optimality_, solver_
        ``optimality_`` is the measure of the last stage's (convex) problem at the solution.
"""


class CappedL1Regressor(_CappedL1, MultiTaskRegressorBase):
    __doc__ = pair_doc(
        "Multi-task least squares with the capped l1,l1 penalty (multi-stage MTFL).", _DOC,
        classifier=False, alpha="0.1", examples="""
    Examples
    --------
    >>> import numpy as np
    >>> from multitask import CappedL1Regressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((60, 10))
    >>> W = np.zeros((10, 4))
    >>> W[:3] = rng.standard_normal((3, 4))
    >>> model = CappedL1Regressor(alpha=0.05, theta=0.5).fit(X, X @ W)
    >>> model.support_
    array([0, 1, 2])
    """
    )


class CappedL1Classifier(_CappedL1, MultiTaskClassifierBase):
    __doc__ = pair_doc(
        "Multi-task binary classification with the capped l1,l1 penalty (multi-stage MTFL).",
        _DOC, classifier=True, alpha="0.01",
        loss_param='''    loss : {"squared_hinge", "logistic", "squared"}, \
default="squared_hinge"
        ``max(0, 1 - y z)^2``, ``log(1 + exp(-y z))`` or ``0.5 (y - z)^2``, labels mapped to
        -1/+1 per task. With the logistic loss on separable data the weights of the capped
        (unpenalized) features have no finite minimizer (a stage then runs to ``max_iter``
        and the probabilities saturate), which is why the default is the squared hinge,
        whose minimizers stay finite.
''')

    _losses = ("squared_hinge", "logistic", "squared")
