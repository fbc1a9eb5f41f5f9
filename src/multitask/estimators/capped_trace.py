"""Capped trace norm multi-task models (RAMUSA: Han & Zhang, "Multi-stage multi-task learning
with reduced rank", AAAI 2016).

Each model minimizes (scaling convention of :mod:`multitask.losses`; ``W`` is
``(n_features, n_tasks)``, ``coef_ = W.T``)::

    sum_t (1 / n_t) sum_{i in t} ell(y_i, x_i^T w_t + b_t) + alpha * sum_i min(sigma_i(W), tau)

Only singular values below ``tau`` are penalized, so the large ones (the shared directions)
are not shrunk. ``tau = inf`` is the trace-norm model; ``tau = 0`` penalizes nothing after
the first stage. The problem is non-convex; it is solved by the multi-stage method of
:mod:`multitask.solvers.multistage` (stage 1 = trace norm, then stages penalizing the
``R - r`` smallest singular values, ``r`` = the number of singular values of the previous
stage's solution that reach ``tau``).

The paper's loss is ``(1/m) sum_t (1/n_t) ||y_t - X_t w_t||^2`` (no intercept), twice ours
divided by ``m``: its ``lambda`` equals ``2 * alpha / m`` here; ``tau`` is the same.
"""

from __future__ import annotations

import numpy as np

from multitask.data import check_scalar_param
from multitask.estimators.base import MultiTaskClassifierBase, MultiTaskRegressorBase
from multitask.solvers.multistage import STAGE_SOLVERS, multistage

__all__ = ["CappedTraceRegressor", "CappedTraceClassifier"]


class _CappedTraceMixin:
    """Parameter checks, the multi-stage solve and the extra fitted attributes."""

    def _check_params(self) -> None:
        check_scalar_param(self.alpha, "alpha")
        try:
            tau = float(self.tau)
        except (TypeError, ValueError):
            raise ValueError(
                f"tau must be a number >= 0 (inf allowed), got {self.tau!r}."
            ) from None
        if np.isnan(tau) or tau < 0:
            raise ValueError(f"tau must be a number >= 0 (inf allowed), got {self.tau!r}.")
        if (not isinstance(self.n_stages, (int, np.integer)) or isinstance(self.n_stages, bool)
                or self.n_stages < 1):
            raise ValueError(f"n_stages must be an integer >= 1, got {self.n_stages!r}.")
        if self.stage_solver not in STAGE_SOLVERS:
            raise ValueError(
                f"stage_solver must be one of {STAGE_SOLVERS}, got {self.stage_solver!r}."
            )
        if (not isinstance(self.max_iter, (int, np.integer)) or isinstance(self.max_iter, bool)
                or self.max_iter < 1):
            raise ValueError(f"max_iter must be an integer >= 1, got {self.max_iter!r}.")
        check_scalar_param(self.tol, "tol", allow_zero=False)

    def _solve(self, datafit, data):
        coef_init = intercept_init = None
        if self.warm_start and hasattr(self, "coef_"):
            if self.coef_.shape == (data.n_tasks, data.n_features):
                coef_init = self.coef_.T
                if datafit.has_intercept_variable:
                    intercept_init = self.intercept_
        return multistage(
            datafit,
            float(self.alpha),
            float(self.tau),
            n_stages=int(self.n_stages),
            stage_solver=self.stage_solver,
            coef_init=coef_init,
            intercept_init=intercept_init,
            max_iter=int(self.max_iter),
            tol=float(self.tol),
        )

    def _store_result(self, result, data) -> None:
        super()._store_result(result, data)
        self.ranks_ = np.asarray(result.info["ranks"], dtype=np.int64)
        self.rank_ = int(result.info["final_rank"])
        self.n_stages_ = int(result.info["n_stages"])
        self.singular_values_ = np.asarray(result.info["singular_values"])

    def alpha_max(self, X, y, task=None) -> float:
        """Smallest ``alpha`` whose stage-1 (trace-norm) solution is ``W = 0``.

        For ``tau > 0`` the model's solution is then ``W = 0`` too (no singular value
        reaches ``tau``).
        """
        data, _, _ = self._to_data(X, y, task)
        return self._make_datafit(data).lambda_max("trace")


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
    stage_solver : {{"psvt", "dc"}}, default="psvt"
        ``"psvt"``: accelerated proximal gradient with partial singular value thresholding
        (faster, see ``benchmarks/bench_capped_trace.py``); ``"dc"``: the paper's
        difference-of-convex Algorithm 2 with FISTA for the convex inner problem.
{loss}    fit_intercept : bool, default=True
        Fit an unpenalized intercept per task.
    max_iter : int, default=2000
        Iteration budget of each inner FISTA run (``ConvergenceWarning`` when the last stage
        reaches it).
    tol : float, default=1e-7
        Relative objective-change tolerance of the inner solver.
    task_column : int, optional
        Column of ``X`` holding the task id of each row (long format for scikit-learn tools).
    warm_start : bool, default=False
        Start stage 1 from the previous solution when refitting.

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
    converged_ : bool
"""


class CappedTraceRegressor(_CappedTraceMixin, MultiTaskRegressorBase):
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

    def __init__(self, alpha=0.1, tau=1.0, *, n_stages=20, stage_solver="psvt",
                 fit_intercept=True, max_iter=2000, tol=1e-7, task_column=None,
                 warm_start=False):
        self.alpha = alpha
        self.tau = tau
        self.n_stages = n_stages
        self.stage_solver = stage_solver
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.task_column = task_column
        self.warm_start = warm_start


class CappedTraceClassifier(_CappedTraceMixin, MultiTaskClassifierBase):
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

    def __init__(self, alpha=0.01, tau=1.0, *, n_stages=20, stage_solver="psvt",
                 loss="squared", fit_intercept=True, max_iter=2000, tol=1e-7,
                 task_column=None, warm_start=False):
        self.alpha = alpha
        self.tau = tau
        self.n_stages = n_stages
        self.stage_solver = stage_solver
        self.loss = loss
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.task_column = task_column
        self.warm_start = warm_start

    def _check_params(self) -> None:
        super()._check_params()
        if self.loss not in ("logistic", "squared_hinge", "squared"):
            raise ValueError(
                f"loss must be 'logistic', 'squared_hinge' or 'squared', got {self.loss!r}."
            )
