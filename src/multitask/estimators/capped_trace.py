"""Capped trace norm multi-task models (RAMUSA: Han & Zhang, "Multi-stage multi-task learning
with reduced rank", AAAI 2016).

Each model minimizes (scaling convention of :mod:`multitask.losses`; ``W`` is
``(n_features, n_tasks)``, ``coef_ = W.T``)::

    sum_t (1 / n_t) sum_{i in t} ell(y_i, x_i^T w_t + b_t) + alpha * sum_i min(sigma_i(W), tau)

Only singular values below ``tau`` are penalized, so the large ones (the shared directions)
are not shrunk. ``tau = inf`` is the trace-norm model; ``tau = 0`` penalizes nothing after
the first stage. The problem is non-convex; the penalty
(:class:`~multitask.penalties.capped_trace.CappedTraceNorm`) is solved by the multi-stage
method (:class:`~multitask.solvers.multistage.Multistage`: stage 1 = trace norm, then stages
penalizing the ``R - r`` smallest singular values, ``r`` = the number of singular values of
the previous stage's solution that reach ``tau``).

The paper's loss is ``(1/m) sum_t (1/n_t) ||y_t - X_t w_t||^2`` (no intercept), twice ours
divided by ``m``: its ``lambda`` equals ``2 * alpha / m`` here; ``tau`` is the same.

With more than two classes (``loss="logistic"``: one multinomial model per task, ``m K``
task-class columns of ``W``; :mod:`multitask.losses.multinomial`) the singular values are those
of all the task-class columns together.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from multitask.estimators._grid_scales import SPAN_DECADES, free_weights
from multitask.estimators._stage_solvers import StageSolverChoice
from multitask.estimators.base import (
    GridSpan,
    MultiTaskClassifierBase,
    MultiTaskRegressorBase,
    Param,
    nonnegative,
)
from multitask.estimators.fitted_state import Fitted, at_most, derived, length_of
from multitask.penalties import CappedTraceNorm, singular_values
from multitask.solvers.multistage import STAGE_SOLVERS

__all__ = ["CappedTraceClassifier", "CappedTraceRegressor"]


class _CappedTrace(StageSolverChoice):
    _params = {
        "alpha": Param(0.1, [nonnegative], keyword_only=False, classifier_default=0.01),
        "tau": Param(1.0, [Interval(Real, 0, np.inf, closed="both")], keyword_only=False,
                     finite=False),
        "n_stages": Param(20, [Interval(Integral, 1, None, closed="left")]),
        "stage_solver": Param("prox", [StrOptions(set(STAGE_SOLVERS))]),
    }
    _solvers = ("multistage",)
    #: The candidates of ``solver="auto"`` for the stages (:mod:`._stage_solvers`): ADMM
    #: with exact per-task solves where the loss is quadratic (its preference), else
    #: accelerated proximal gradient.
    _inner_solvers = ("admm", "fista")
    _max_iter = 2000

    def _make_penalty(self, datafit):
        return CappedTraceNorm(float(self.alpha), float(self.tau))

    def _warm_start_settings(self) -> dict:
        """One stage: a warm-started fit hands the next one its first stage's solution only
        (the trace-norm stage, the one convex stage: :mod:`._stage_solvers`), from which that
        fit starts its first stage; the first stage does not depend on ``n_stages``, so one
        stage serves the next fit as the whole fit would, without the non-convex stages (most
        of a fit's cost)."""
        return {"n_stages": 1}

    def _grid_tops(self, datafit, penalty):
        """``alpha`` (the path, from ``||G||_2``: the first stage is then zero) and ``tau``
        inside the two decades below ``s_1``, the largest singular value of the free fit
        (:func:`~multitask.estimators._grid_scales.free_weights`): a cap above the singular
        values of every stage leaves the trace-norm model, a cap near 0 leaves the later
        stages unpenalized."""
        grad = datafit.grad_at_zero()
        top = float(np.linalg.norm(grad, 2)) if grad.size else 0.0
        s = singular_values(free_weights(datafit))
        s1 = float(s[0]) if s.size and np.isfinite(s[0]) and s[0] > 0 else 1.0
        return {"alpha": (top, 1.0), "tau": GridSpan(s1, s1 * 10.0 ** -SPAN_DECADES,
                                                      interior=True)}

    def _solver_settings(self, name: str) -> dict:
        return {**super()._solver_settings(name), "n_stages": int(self.n_stages),
                "stage_solver": self.stage_solver}

    _fitted_state = {
        "ranks_": Fitted("array", shape=(None,), dtype="iu", nonnegative=True,
                         check=at_most(("d", "tc"))),
        "rank_": Fitted("int", nonnegative=True, check=at_most(("d", "tc"))),
        "n_stages_": Fitted("int", nonnegative=True, check=derived(
            lambda est, s: len(est.ranks_), "the length of ranks_ (one rank per stage)")),
        "singular_values_": Fitted("array", shape=(None,), nonnegative=True,
                                   check=length_of(lambda s: min(s["d"], s["t"] * s["K"]))),
    }

    def _store_extra(self, result, penalty, datafit) -> None:
        self.ranks_ = np.asarray(result.info["stage_keys"], dtype=np.int64)
        self.rank_ = int(result.info["final_key"])
        self.n_stages_ = int(result.info["n_stages"])
        self.singular_values_ = singular_values(result.W)


_PARAMS_DOC = """
    Parameters
    ----------
    alpha : float, default={alpha}
        Regularization strength (>= 0): the ``lambda`` of the capped trace norm.
    tau : float, default=1.0
        Cap (>= 0; ``inf`` allowed): singular values ``>= tau`` are not penalized. Its scale
        is that of the singular values of ``W`` (it depends on the scale of the features).
    n_stages : int, default=20
        Maximal number of stages; the solver stops earlier when the number of capped
        singular values repeats.
    stage_solver : {{"prox", "dc"}}, default="prox"
        ``"prox"``: each stage solved directly with partial singular value thresholding
        (faster, see ``benchmarks/bench_capped_trace.py``); ``"dc"``: the paper's
        difference-of-convex Algorithm 2, a sequence of convex inner problems. With
        ``solver="auto"`` the stage (or inner) problems are solved by ADMM with exact
        per-task solves where the loss is quadratic (least squares with Gram matrices),
        else by accelerated proximal gradient.
{loss}    {{common_parameters}}

    Attributes
    ----------
    coef_ : ndarray of shape (n_tasks, n_features)
    intercept_ : ndarray of shape (n_tasks,)
    tasks_ : ndarray of shape (n_tasks,)
    objective_ : ndarray of shape (n_stages_,)
        Objective (loss + capped trace norm) after each stage (non-increasing).
    ranks_ : ndarray of shape (n_stages_,)
        Number ``r`` of unpenalized singular values in each stage (``ranks_[0] = 0``).
    rank_ : int
        Number of singular values of the solution that reach ``tau``.
    n_stages_ : int
    n_iter_ : int
        Inner iterations summed over stages.
    singular_values_ : ndarray of shape (min(n_features, n_tasks),)
    converged_, optimality_, solver_
        ``optimality_`` is the measure of the last stage's problem at the solution.
"""


class CappedTraceRegressor(_CappedTrace, MultiTaskRegressorBase):
    __doc__ = (
        "Multi-task least squares with the capped trace norm (RAMUSA).\n\n"
        "    Minimizes ``sum_t 1/(2 n_t) ||X_t w_t + b_t - y_t||^2 "
        "+ alpha * sum_i min(sigma_i(W), tau)``.\n"
        + _PARAMS_DOC.format(alpha="0.1", loss="")
        + """
    Examples
    --------
    >>> import numpy as np
    >>> from multitask import CappedTraceRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((60, 8))
    >>> Y = X @ rng.standard_normal((8, 1)) @ rng.standard_normal((1, 5))
    >>> model = CappedTraceRegressor(alpha=0.05, tau=0.5).fit(X, Y)
    >>> model.coef_.shape
    (5, 8)
    """
    )


class CappedTraceClassifier(_CappedTrace, MultiTaskClassifierBase):
    __doc__ = (
        "Multi-task binary classification with the capped trace norm (RAMUSA).\n\n"
        "    Minimizes ``sum_t (1/n_t) sum_i ell(y_i, x_i^T w_t + b_t) "
        "+ alpha * sum_i min(sigma_i(W), tau)`` with labels mapped to -1/+1.\n"
        + _PARAMS_DOC.format(
            alpha="0.01",
            loss='''    loss : {"squared", "logistic", "squared_hinge"}, default="squared"
        ``ell``: ``0.5 (y - z)^2`` on the -1/+1 labels (the paper's choice), logistic, or
        ``max(0, 1 - y z)^2``. With the logistic loss on separable data the unpenalized
        leading singular values grow without bound (the loss has no minimizer along them),
        so the fit stops at ``max_iter``; the squared losses do not have this problem.
''',
        )
    )

    _losses = ("squared", "logistic", "squared_hinge")
