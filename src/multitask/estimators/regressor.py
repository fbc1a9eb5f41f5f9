"""The base of the multi-task regressors (:class:`MultiTaskRegressorBase`): scikit-learn's
regression losses (``loss=`` with ``power``, ``epsilon`` and ``quantile``), the mean of the
log-link losses in ``predict``, R^2 or the D^2 of the deviance in ``score``."""

from __future__ import annotations

from numbers import Real
from typing import ClassVar

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

import multitask.estimators.new_tasks as _new_tasks
from multitask.data import MultiTaskData
from multitask.estimators.estimator import MultiTaskEstimator
from multitask.estimators.fitted_state import Fitted
from multitask.estimators.inputs import (
    distributed_solvers,
    is_distributed,
    refuse_distributed_weights,
)
from multitask.estimators.params import Param
from multitask.estimators.scoring import column_scored, flat_scored, map_output, r2
from multitask.losses import Datafit, get_datafit
from multitask.penalties.base import Penalty
from multitask.solvers import Solver
from multitask.solvers.result import SolverResult

__all__ = ["MultiTaskRegressorBase"]

class MultiTaskRegressorBase(RegressorMixin, MultiTaskEstimator):
    """Base of multi-task regressors: the squared loss by default, or the loss ``loss``.

    Every regressor takes scikit-learn's regression losses (``loss=``, with ``power``,
    ``epsilon`` and ``quantile`` as their parameters, present on every regressor as on
    scikit-learn's ``TweedieRegressor``, ``HuberRegressor`` and ``QuantileRegressor``):

    * ``"squared"``: ``0.5 (y - z)^2`` (the default);
    * ``"poisson"``, ``"gamma"``, ``"tweedie"`` (``power`` in ``[1, 2]``): half the Tweedie
      deviance with the log link (:mod:`multitask.losses.glm`); ``predict`` returns the mean
      ``exp(z)`` and ``score`` the D^2 of that deviance (``d2_tweedie_score``);
    * ``"huber"`` (``epsilon > 1``): Huber's loss with a scale fitted per task, as
      ``HuberRegressor`` (:mod:`multitask.losses.huber`; the scales are ``scale_``);
    * ``"quantile"`` (``quantile`` in ``(0, 1)``): the pinball loss
      (:mod:`multitask.losses.quantile`).

    A model that cannot fit a loss (no solver of the model applies to it) refuses it at fit
    with a ``ValueError`` naming the model, the loss and why.
    """

    _abstract = True
    _is_classifier = False
    #: The losses ``loss=`` accepts (the first is the default), scikit-learn's names.
    _regression_losses: ClassVar[tuple[str, ...]] = ("squared", "poisson", "gamma", "tweedie",
                                                     "huber", "quantile")
    #: The power of the D^2 ``score`` of the log-link losses (``"tweedie"``: ``power``).
    _deviance_powers: ClassVar[dict[str, float]] = {"poisson": 1.0, "gamma": 2.0}
    #: The losses the task-block solver of Dask input handles (the smooth ones: the pinball
    #: loss has no gradient).
    _distributed_losses: ClassVar[tuple[str, ...]] = ("squared", "poisson", "gamma", "tweedie",
                                                      "huber")
    _fitted_state = {
        # the Huber loss's per-task scales (HuberRegressor's scale_)
        "scale_": Fitted("array", shape=("m",), nonnegative=True,
                         when=lambda est: getattr(est, "loss", "squared") == "huber"),
    }
    #: The documentation of the loss parameters (first in ``{common_parameters}``).
    _LOSS_PARAMETERS_DOC = """loss : {"squared", "poisson", "gamma", "tweedie", "huber", \
"quantile"}, default="squared"
        The loss (scikit-learn's names; :class:`MultiTaskRegressorBase`): least squares, the
        log-link deviances (``predict`` gives ``exp(z)``, ``score`` the D^2), Huber's loss
        with a scale fitted per task (``scale_``), or the pinball loss of quantile
        regression. A model refuses at fit a loss none of its solvers handles.
    power : float, default=1.5
        ``loss="tweedie"``: the power in ``[1, 2]`` (1 Poisson, 2 Gamma).
    epsilon : float, default=1.35
        ``loss="huber"``: residuals beyond ``epsilon`` scales count linearly (``> 1``).
    quantile : float, default=0.5
        ``loss="quantile"``: the quantile in ``(0, 1)`` the model predicts.
    """

    def __init_subclass__(cls, **kwargs):
        if cls.__doc__ and "{common_parameters}" in cls.__doc__:
            cls.__doc__ = cls.__doc__.replace(
                "{common_parameters}",
                cls._LOSS_PARAMETERS_DOC.rstrip() + "\n    {common_parameters}")
        super().__init_subclass__(**kwargs)

    @classmethod
    def _all_params(cls) -> dict[str, Param]:
        params = super()._all_params()
        own = {n: p for n, p in params.items() if n in cls._params}
        losses = {
            "loss": Param(cls._regression_losses[0],
                          [StrOptions(set(cls._regression_losses))]),
            "power": Param(1.5, [Interval(Real, 1, 2, closed="both")]),
            "epsilon": Param(1.35, [Interval(Real, 1, None, closed="left")]),
            "quantile": Param(0.5, [Interval(Real, 0, 1, closed="neither")]),
        }
        rest = {n: p for n, p in params.items() if n not in own and n not in losses}
        return {**own, **losses, **rest}

    def _datafit_options(self) -> dict:
        """The common options, the loss's own parameter, and raw features for the pinball
        loss (its linear program reads the design as given)."""
        options = super()._datafit_options()
        loss = self._loss_name()
        options["center"] = loss not in ("hinge", "quantile")
        own = {"tweedie": "power", "huber": "epsilon", "quantile": "quantile"}.get(loss)
        if own is not None:
            options[own] = float(getattr(self, own))
        return options

    def _make_solver(self, datafit: Datafit, penalty: Penalty) -> Solver:
        """The solver, or a ``ValueError`` naming the model, the loss and why none applies
        (the equality-constrained formulation ``y = X w`` of a model is least squares)."""
        loss = self._loss_name()
        if loss != "squared" and getattr(self, "formulation", None) == "constrained":
            raise ValueError(
                f"{type(self).__name__} cannot fit the {loss!r} loss with "
                "formulation='constrained': the equality-constrained problem (X_t w_t = y_t) "
                "is the squared loss's; use formulation='penalized'.")
        if getattr(self, "formulation", None) == "constrained" and float(
                getattr(self, "alpha_l2", 0.0) or 0.0):
            raise ValueError(
                f"{type(self).__name__} with formulation='constrained' takes no ridge "
                f"(alpha_l2={self.alpha_l2!r}): the equality-constrained problem (X_t w_t = y_t) "
                "is solved by linearized ADMM, which has no ridge term; set alpha_l2=0 or use "
                "formulation='penalized'.")
        try:
            return super()._make_solver(datafit, penalty)
        except ValueError as exc:
            loss = self._loss_name()
            if loss == "squared":
                raise
            why = str(exc)
            if loss == "quantile" and float(self.alpha_l2):
                why += (" (alpha_l2 > 0 adds a ridge term that is not separable over the "
                        "scores: the pinball loss is then neither a linear program nor "
                        "split by linearized ADMM)")
            raise ValueError(f"{type(self).__name__} cannot fit the {loss!r} loss: {why}") \
                from None

    def _check_distributed_loss(self) -> None:
        loss = self._loss_name()
        if loss not in self._distributed_losses:
            raise ValueError(
                f"The {loss!r} loss is not supported with Dask collections or TaskBlocks: the "
                "task-block solver is an accelerated gradient method, for the smooth losses "
                f"{list(self._distributed_losses)}; fit in memory.")

    def _store_loss_state(self, result: SolverResult, datafit: Datafit) -> None:
        """``scale_`` (shape ``(n_tasks,)``) for the Huber loss: each task's fitted scale
        ``sigma_t`` at the solution (HuberRegressor's ``scale_``)."""
        self.__dict__.pop("scale_", None)
        if self._loss_name() == "huber":
            z = datafit.scores(result.W, result.intercept_variable)
            self.scale_ = np.asarray(datafit.task_scales(z), dtype=np.float64)

    def _append_loss_state(self, data: MultiTaskData, fit) -> None:
        """``scale_`` of the Huber loss gains each new task's scale ``sigma_t`` at its
        solution (the scale its own rows fit, as ``fit`` gives every task)."""
        if self._loss_name() != "huber" or getattr(self, "scale_", None) is None:
            return
        datafit = get_datafit("huber", data, False, epsilon=float(self.epsilon))
        scales = datafit.task_scales(datafit.scores(fit.W, fit.intercept))
        self.scale_ = np.concatenate([np.asarray(self.scale_, dtype=np.float64),
                                      np.asarray(scales, dtype=np.float64)])

    def _link(self, scores):
        """The predicted mean from the scores (``exp`` for the log-link losses)."""
        if self._loss_name() not in ("poisson", "gamma", "tweedie"):
            return scores
        from multitask.losses import Tweedie

        return map_output(scores, Tweedie.inverse_link)

    def predict(self, X, task=None, *, unknown_tasks="error"):
        """Predicted targets (the mean ``exp(z)`` of the scores ``z`` for the log-link losses),
        in the layout of the training input (see module doc).

        ``unknown_tasks="population"`` scores the rows (long format) of a task the model has
        not seen with the population model, the mean of the fitted tasks' models; the
        default, ``"error"``, refuses them (learn such a task with :meth:`fit_new_tasks`)."""
        if is_distributed(X) and _new_tasks.check_unknown_tasks(unknown_tasks) == "error":
            check_is_fitted(self, "coef_")  # the link applied on the workers, lazily
            return distributed_solvers().estimator_predict(self, "predict", X, task)
        return self._link(self._scores_or_population(X, task, unknown_tasks))

    def _score_fn(self):
        """``(y, pred, w) -> score``: R^2, or the D^2 of the loss's deviance (log links)."""
        loss = self._loss_name()
        if loss not in ("poisson", "gamma", "tweedie"):
            return r2
        power = float(self.power) if loss == "tweedie" else self._deviance_powers[loss]
        from sklearn.metrics import d2_tweedie_score, mean_tweedie_deviance

        def d2(y, pred, w) -> float:
            pred = np.maximum(np.asarray(pred, dtype=np.float64), np.finfo(float).tiny)
            try:
                return float(d2_tweedie_score(y, pred, sample_weight=w, power=power))
            except ZeroDivisionError:  # constant targets: the null model's deviance is 0;
                # r2_score's convention (force_finite): 1 for a perfect fit, else 0
                dev = mean_tweedie_deviance(y, pred, sample_weight=w, power=power)
                return 1.0 if dev == 0 else 0.0

        return d2

    def score(self, X, y, task=None, sample_weight=None):
        """Coefficient of determination R^2 of the pooled predictions; for the log-link losses
        (``"poisson"``, ``"gamma"``, ``"tweedie"``) the fraction of the deviance explained,
        D^2 (scikit-learn's ``d2_tweedie_score`` with the loss's power, as its GLMs' ``score``).

        For shared-design data, the score is averaged uniformly over tasks (scikit-learn's
        multi-output convention). ``sample_weight`` weighs the rows as in :meth:`fit` (for a
        shared design ``(n,)`` or ``(n, m)``; for per-task lists a list of arrays); with
        ``missing_targets="ignore"`` the missing targets are left out (each task of a shared
        design is scored on its observed rows).
        """
        if is_distributed(X):
            refuse_distributed_weights(sample_weight)
            return distributed_solvers().estimator_score(self, X, y, task)
        pred = self.predict(X, task)
        ignore = getattr(self, "missing_targets", "error") == "ignore"
        fn = self._score_fn()
        if isinstance(pred, list):
            return fn(*flat_scored(y, pred, sample_weight, ignore))
        pred = np.asarray(pred)
        if pred.ndim == 2 and (ignore or np.ndim(sample_weight) == 2 or fn is not r2):
            return float(np.mean([fn(*part) for part in
                                  column_scored(y, pred, sample_weight, ignore)]))
        return fn(*flat_scored(y, pred, sample_weight, ignore, keep_shape=True))

