"""Scorers of multi-task models (greater is better), by name or callable.

Every scorer takes ``sample_weight`` (scikit-learn's ``scorer(estimator, X, y,
sample_weight=...)``; the layouts of :mod:`multitask.metrics`), and skips the missing targets
(NaN) of a model fitted with ``missing_targets="ignore"``: each task is scored on its observed
rows.

The default scorer follows the model's loss (:func:`loss_scorer`): minus the nMSE for the
squared loss, minus the mean deviance of the predicted means for the log-link losses
(Poisson, Gamma, Tweedie at the model's ``power``), minus the mean pinball loss at the model's
``quantile`` for the quantile loss, minus the mean absolute error for the Huber loss, and for
classifiers the mean per-task ROC AUC (two classes) or minus the log-loss (more).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from multitask.data import observed_mask, split_task_column
from multitask.metrics import (
    mean_absolute_error,
    mean_pinball_loss,
    mean_task_auc,
    mean_tweedie_deviance,
    nmse,
)
from multitask.metrics._weights import unit_scale

__all__ = ["LossScorer", "amse_scorer", "classifier_scorer", "get_scorer", "ignores_missing",
           "log_loss_scorer", "loss_scorer", "mean_auc_scorer", "nmse_scorer", "pooled_metric",
           "scored_weights"]


def _task_ids(estimator, X):
    """Task ids of the rows of ``X`` as the multi-task model sees them (None: no column).

    In a Pipeline the task column is the final step's ``task_column`` of the transformed ``X``.
    """
    while hasattr(estimator, "steps"):  # Pipeline: read the column where the model reads it
        if len(estimator.steps) > 1:
            X = estimator[:-1].transform(X)
        estimator = estimator.steps[-1][1]
    tc = getattr(estimator, "task_column", None)
    if tc is None:
        return None
    return split_task_column(X, tc)[1]


def _final_estimator(estimator):
    while hasattr(estimator, "steps"):  # Pipeline: the multi-task model is the last step
        estimator = estimator.steps[-1][1]
    return estimator


def ignores_missing(estimator) -> bool:
    """Whether the model (the last step of a Pipeline) reads NaN targets as not observed
    (``missing_targets="ignore"``)."""
    return getattr(_final_estimator(estimator), "missing_targets", "error") == "ignore"


def scored_weights(estimator, y, sample_weight=None):
    """The weights a scorer gives the targets ``y``: ``sample_weight`` (or 1) with zeros at the
    missing targets of a model fitted with ``missing_targets="ignore"``; ``None`` when there
    are neither weights nor missing targets. The layout of ``y`` (a list of per-task arrays,
    or an array; an ``(n,)`` weight per row is repeated for the tasks of an ``(n, m)`` ``y``)."""
    if isinstance(y, (list, tuple)):
        seen = [observed_mask(np.ravel(v)) for v in y] if ignores_missing(estimator) else None
        if seen is not None and all(s.all() for s in seen):
            seen = None
        if seen is None:
            return sample_weight
        ws = ([np.ones(len(s)) for s in seen] if sample_weight is None else
              [np.asarray(w, dtype=np.float64).ravel() for w in sample_weight])
        return [np.where(s, w, 0.0) for s, w in zip(seen, ws, strict=True)]
    y = np.asarray(y)
    seen = observed_mask(y) if ignores_missing(estimator) else None
    if seen is None or seen.all():
        return sample_weight
    w = np.ones(y.shape) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    if y.ndim == 2 and w.shape == y.shape[:1]:
        w = np.repeat(w[:, None], y.shape[1], axis=1)
    if w.shape != y.shape:
        raise ValueError(f"sample_weight has shape {w.shape} but y has shape {y.shape}.")
    return np.where(seen, w, 0.0)


def nmse_scorer(estimator, X, y, *, average="pooled", sample_weight=None) -> float:
    """Scorer (greater is better): ``-nMSE`` of the estimator's predictions (weighted by
    ``sample_weight``, the missing targets left out with ``missing_targets="ignore"``)."""
    pred = estimator.predict(X)
    return -nmse(y, pred, _task_ids(estimator, X), average=average,
                 sample_weight=scored_weights(estimator, y, sample_weight))


def mean_auc_scorer(estimator, X, y, *, sample_weight=None) -> float:
    """Scorer: mean per-task ROC AUC of ``decision_function`` (shared or long format;
    weighted by ``sample_weight``, the missing targets left out with
    ``missing_targets="ignore"``). Two classes only (a ``ValueError`` for more: use
    :func:`log_loss_scorer` or ``"accuracy"``)."""
    import warnings

    n_classes = len(getattr(_final_estimator(estimator), "classes_", ()))
    if n_classes > 2:
        raise ValueError(f"The ROC AUC scorer compares two classes; the model has {n_classes}: "
                         "use scoring='log_loss' (the default for more than two classes) or "
                         "'accuracy'.")
    scores = estimator.decision_function(X)
    w = scored_weights(estimator, y, sample_weight)
    y = np.asarray(y)
    if y.ndim == 2:
        y_bin = (y == estimator.classes_[1]).astype(int)
    else:
        y_bin = (y == estimator.classes_[1]).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return mean_task_auc(y_bin, scores, _task_ids(estimator, X), sample_weight=w)


def amse_scorer(estimator, X, y, *, sample_weight=None) -> float:
    """Scorer (greater is better): ``-aMSE``, the task-averaged nMSE (see :mod:`multitask.metrics`).

    Tasks whose held-out targets are constant make it undefined (a ValueError).
    """
    return nmse_scorer(estimator, X, y, average="task", sample_weight=sample_weight)


#: Probabilities are clipped at this before the logarithm of :func:`log_loss_scorer` (a class
#: a task never saw has probability 0 there; scikit-learn's ``log_loss`` clips at the float
#: spacing of 1 as well).
LOG_LOSS_EPS = float(np.finfo(np.float64).eps)


def log_loss_scorer(estimator, X, y, *, sample_weight=None) -> float:
    """Scorer (greater is better): minus the mean log-loss ``-log p(y_i)`` of the
    estimator's ``predict_proba`` over the scored (row, task) pairs, any number of classes
    (``p`` clipped at :data:`LOG_LOSS_EPS`: a label the row's task never saw in training has
    probability 0), weighted by ``sample_weight``, the missing targets left out with
    ``missing_targets="ignore"``. The layouts of the model's predictions: per-task lists,
    long format (``(n, K)`` probabilities), or a shared design (``(n, m, K)`` for more than
    two classes, ``(n, m)`` of ``P(classes_[1])`` for two)."""
    final = _final_estimator(estimator)
    classes = np.asarray(final.classes_)
    proba = estimator.predict_proba(X)
    w = scored_weights(estimator, y, sample_weight)
    if isinstance(y, (list, tuple)):
        yt = np.concatenate([np.ravel(v) for v in y])
        P = np.concatenate([np.asarray(p) for p in proba])
        wt = None if w is None else np.concatenate([np.ravel(v) for v in w])
    else:
        yt = np.asarray(y)
        P = np.asarray(proba)
        if yt.ndim == 2 and P.ndim == yt.ndim:  # two classes, shared: P(classes_[1])
            P = np.stack([1.0 - P, P], axis=-1)
        yt = yt.ravel()
        P = P.reshape(len(yt), -1)
        wt = None if w is None else np.broadcast_to(np.asarray(w, dtype=np.float64),
                                                   np.shape(y)).ravel()
    seen = observed_mask(yt)
    if wt is not None:
        seen &= wt > 0
    rows = np.flatnonzero(seen)
    yt, P = yt[rows], P[rows]
    idx = np.clip(np.searchsorted(classes, yt), 0, len(classes) - 1)
    p = np.where(classes[idx] == yt, P[np.arange(len(rows)), idx], 0.0)
    losses = -np.log(np.clip(p, LOG_LOSS_EPS, 1.0))
    if not losses.size:
        return float("nan")
    # a common factor of the weights changes nothing: the largest in [1/2, 1), no overflow
    weights = None if wt is None else unit_scale(wt[rows])
    return -float(np.average(losses, weights=weights))


def classifier_scorer(estimator, X, y, *, sample_weight=None) -> float:
    """The default scorer of classifiers: :func:`mean_auc_scorer` for two classes,
    :func:`log_loss_scorer` for more (read from the fitted model's ``classes_``)."""
    if len(getattr(_final_estimator(estimator), "classes_", ())) > 2:
        return log_loss_scorer(estimator, X, y, sample_weight=sample_weight)
    return mean_auc_scorer(estimator, X, y, sample_weight=sample_weight)


# ----------------------------------------------------------------------------- regression losses
class LossScorer:
    """Scorer (greater is better): minus a mean loss of the estimator's predictions (the
    predicted means) over every scored (row, task) pair pooled, weighted by ``sample_weight``,
    the missing targets left out with ``missing_targets="ignore"``.

    The loss's parameter (a Tweedie power, a quantile) is bound when the scorer is made
    (:func:`get_scorer` reads it from the model given there), so that every candidate of a
    search is scored on the same measure, and the out-of-fold predictions of leave-one-out
    folds pool with it (:func:`pooled_metric`).

    Parameters
    ----------
    name : str
        What it measures, in words (``repr``).
    metric : callable
        ``metric(y, pred, task, sample_weight=None) -> float``: the mean loss, pooled
        (``average="pooled"`` of a :mod:`multitask.metrics` function).
    """

    def __init__(self, name: str, metric: Callable[..., float]):
        self.name, self.metric = name, metric

    def __repr__(self) -> str:
        return f"LossScorer({self.name!r})"

    def __call__(self, estimator, X, y, sample_weight=None) -> float:
        pred = estimator.predict(X)
        return -self.metric(y, pred, _task_ids(estimator, X),
                            sample_weight=scored_weights(estimator, y, sample_weight))

    def pooled(self, y, pred, task, sample_weight=None) -> float:
        """Minus the metric of predictions pooled over folds (:func:`pooled_metric`)."""
        return -self.metric(y, pred, task, sample_weight=sample_weight)


def _model_parameter(estimator, name: str, default: float) -> float:
    """The hyper-parameter ``name`` of the model (the last step of a Pipeline), or
    ``default`` where it has none."""
    value = getattr(_final_estimator(estimator), name, None)
    return default if value is None else float(value)


def _positive(pred):
    """Predicted means kept above the smallest normal float (an ``exp`` that underflowed to 0
    is still a positive mean to a deviance, whose value may then overflow to ``inf``: the
    worst score; as the regressors' ``score``)."""
    tiny = np.finfo(np.float64).tiny
    if isinstance(pred, (list, tuple)):
        return [np.maximum(np.asarray(p, dtype=np.float64), tiny) for p in pred]
    return np.maximum(np.asarray(pred, dtype=np.float64), tiny)


def deviance_scorer(power: float, name: str | None = None) -> LossScorer:
    """:class:`LossScorer` of the mean Tweedie deviance of power ``power`` (1: Poisson, 2:
    Gamma; :func:`~multitask.metrics.mean_tweedie_deviance`, pooled)."""
    p = float(power)

    def metric(y, pred, task, sample_weight=None) -> float:
        with np.errstate(over="ignore", divide="ignore"):  # a mean of ~0: an infinite loss
            return float(mean_tweedie_deviance(y, _positive(pred), task, power=p,
                                               average="pooled", sample_weight=sample_weight))

    return LossScorer(name or f"mean Tweedie deviance (power {p:g})", metric)


def pinball_scorer(quantile: float) -> LossScorer:
    """:class:`LossScorer` of the mean pinball loss at ``quantile``
    (:func:`~multitask.metrics.mean_pinball_loss`, pooled)."""
    q = float(quantile)

    def metric(y, pred, task, sample_weight=None) -> float:
        return float(mean_pinball_loss(y, pred, task, quantile=q, average="pooled",
                                       sample_weight=sample_weight))

    return LossScorer(f"mean pinball loss (quantile {q:g})", metric)


def _mae(y, pred, task, sample_weight=None) -> float:
    return float(mean_absolute_error(y, pred, task, average="pooled",
                                     sample_weight=sample_weight))


#: The Tweedie power of each log-link loss whose power is not a hyper-parameter.
_DEVIANCE_POWERS = {"poisson": 1.0, "gamma": 2.0}


def loss_scorer(estimator):
    """The default scorer of a model (the last step of a Pipeline), from its loss.

    * ``"squared"`` (and any regressor without a ``loss``): :func:`nmse_scorer`;
    * ``"poisson"``, ``"gamma"``, ``"tweedie"``: minus the mean deviance of the predicted
      means (``power`` 1, 2, or the model's ``power``), as scikit-learn's
      ``"neg_mean_poisson_deviance"``;
    * ``"quantile"``: minus the mean pinball loss at the model's ``quantile``;
    * ``"huber"``: minus the mean absolute error. The Huber model is fitted to be robust to
      the large residuals of heavy tails, which dominate a held-out squared error; the Huber
      loss itself is not one measure across candidates (each fit has its own scales
      ``scale_``, and the loss at one is not comparable with the loss at another). The
      absolute error is robust to those residuals and needs no scale.
    * classifiers: :func:`classifier_scorer`.
    """
    from sklearn.base import is_classifier

    if is_classifier(estimator):
        return classifier_scorer
    loss = getattr(_final_estimator(estimator), "loss", None)
    if loss in _DEVIANCE_POWERS:
        return deviance_scorer(_DEVIANCE_POWERS[loss], f"mean {loss} deviance")
    if loss == "tweedie":
        return deviance_scorer(_model_parameter(estimator, "power", 1.5))
    if loss == "quantile":
        return pinball_scorer(_model_parameter(estimator, "quantile", 0.5))
    if loss == "huber":
        return LossScorer("mean absolute error", _mae)
    return nmse_scorer


#: Scorers of the regression losses by name, made for the model they score (a Tweedie power
#: or a quantile read from it).
_LOSS_SCORERS: dict[str, Callable[[object], LossScorer]] = {
    "poisson_deviance": lambda est: deviance_scorer(1.0, "mean poisson deviance"),
    "gamma_deviance": lambda est: deviance_scorer(2.0, "mean gamma deviance"),
    "tweedie_deviance": lambda est: deviance_scorer(_model_parameter(est, "power", 1.5)),
    "pinball_loss": lambda est: pinball_scorer(_model_parameter(est, "quantile", 0.5)),
    "mae": lambda est: LossScorer("mean absolute error", _mae),
}
for _name in list(_LOSS_SCORERS):
    _LOSS_SCORERS[f"neg_mean_{_name}"] = _LOSS_SCORERS[_name]
_LOSS_SCORERS["neg_mean_absolute_error"] = _LOSS_SCORERS["mae"]
del _name


_NAMED_SCORERS = {
    "nmse": nmse_scorer,
    "neg_nmse": nmse_scorer,
    "amse": amse_scorer,
    "neg_amse": amse_scorer,
    "auc": mean_auc_scorer,
    "mean_auc": mean_auc_scorer,
    "log_loss": log_loss_scorer,
    "neg_log_loss": log_loss_scorer,
}


def get_scorer(scoring, estimator):
    """The scoring callable ``scorer(est, X, y) -> float`` (greater is better) for ``scoring``.

    Parameters
    ----------
    scoring : None, str or callable
        ``None``: the default of the model's loss (:func:`loss_scorer`): :func:`nmse_scorer`
        (``-nMSE``, pooled) for the squared loss, minus the mean deviance, pinball loss or
        absolute error for the other regression losses, :func:`classifier_scorer` for
        classifiers (the mean per-task ROC AUC for two classes, minus the mean log-loss for
        more). ``"nmse"``, ``"amse"``, ``"auc"``, ``"log_loss"``: those scorers (``"amse"``
        is the task-averaged nMSE); ``"poisson_deviance"``, ``"gamma_deviance"``,
        ``"tweedie_deviance"`` (at the model's ``power``), ``"pinball_loss"`` (at the model's
        ``quantile``), ``"mae"``, each also spelled ``"neg_mean_<name>"`` (as scikit-learn's
        ``"neg_mean_poisson_deviance"``, ``"neg_mean_absolute_error"``): minus that mean loss
        pooled over the scored pairs (:class:`LossScorer`, every layout); any other string is
        looked up with :func:`sklearn.metrics.get_scorer` (``"r2"``, ``"accuracy"``,
        ``"neg_mean_squared_error"``, ...). A callable is returned unchanged.
    estimator : estimator
        Decides the default (its loss) and the parameters of the loss scorers.
    """
    from sklearn.metrics import get_scorer as sk_get_scorer

    if scoring is None:
        return loss_scorer(estimator)
    if callable(scoring):
        return scoring
    if isinstance(scoring, str):
        if scoring in _LOSS_SCORERS:
            return _LOSS_SCORERS[scoring](estimator)
        if scoring in _NAMED_SCORERS:
            return _NAMED_SCORERS[scoring]
        try:
            sk = sk_get_scorer(scoring)
            return _ObservedRows(sk, scoring) if ignores_missing(estimator) else sk
        except ValueError:
            raise ValueError(
                f"Unknown scoring {scoring!r}: use one of "
                f"{sorted({**_NAMED_SCORERS, **_LOSS_SCORERS})} or a scikit-learn scorer name."
            ) from None
    raise ValueError(f"scoring must be None, a string or a callable, got {scoring!r}.")


# ----------------------------------------------------------------------------- pooled scores
class _ObservedRows:
    """A scikit-learn scorer on the rows whose target is observed (one target per row: long
    format or a single task), for a model fitted with ``missing_targets="ignore"``. A 2-D
    target with a missing entry cannot lose a row for one task only: that is an error naming
    the scorers that can."""

    def __init__(self, scorer, name: str):
        self.scorer, self.name = scorer, name

    def __call__(self, estimator, X, y, sample_weight=None):
        y = np.asarray(y)
        seen = observed_mask(y)
        if seen.all():
            return self.scorer(estimator, X, y, sample_weight=sample_weight)
        if y.ndim != 1:
            raise ValueError(f"scoring={self.name!r} cannot leave out the missing targets of "
                             "one task of a shared design: use scoring None, 'nmse', 'amse' or "
                             "'auc' (each task scored on its observed rows), or the model's "
                             "score.")
        rows = np.flatnonzero(seen)
        w = None if sample_weight is None else np.asarray(sample_weight)[rows]
        return self.scorer(estimator, X[rows], y[rows], sample_weight=w)


def _neg_nmse(y, pred, task, sample_weight=None) -> float:
    return -nmse(y, pred, task, sample_weight=sample_weight)


def _neg_amse(y, pred, task, sample_weight=None) -> float:
    return -nmse(y, pred, task, average="task", sample_weight=sample_weight)


_POOLED = {
    nmse_scorer: ("predict", _neg_nmse),
    amse_scorer: ("predict", _neg_amse),
}


def pooled_metric(scorer):
    """How to score predictions pooled over folds with the same measure as ``scorer``.

    Leave-one-out folds hold one row per task: a per-fold nMSE is then noisy (or undefined),
    so the cross-validation engine scores the out-of-fold predictions of all folds together
    instead (as scikit-learn's ``cross_val_predict`` does). The means of per-row losses pool
    well (the squared error, a deviance, the pinball loss, the absolute error:
    :class:`LossScorer`); a ROC AUC pooled over leave-one-out folds is biased (each fold's
    intercept moves against the label left out; Airola, Pahikkala, Waegeman, De Baets &
    Salakoski, "An experimental comparison of cross-validation techniques for estimating the
    area under the ROC curve"), so ``"auc"`` is not pooled.

    Parameters
    ----------
    scorer : callable
        A scorer returned by :func:`get_scorer`.

    Returns
    -------
    tuple or None
        ``(method, metric)``: the estimator's method giving the values to pool
        (``"predict"``) and ``metric(y, values, task, sample_weight=None) -> float`` (greater
        is better; ``sample_weight`` as :func:`scored_weights` gives it) for
        :func:`nmse_scorer`, :func:`amse_scorer` and a :class:`LossScorer`; ``None`` for any
        other scorer.
    """
    if isinstance(scorer, LossScorer):
        return "predict", scorer.pooled
    return _POOLED.get(scorer)
