"""Metrics of the regression losses beyond least squares: mean Tweedie deviances (Poisson,
Gamma), the pinball loss, the mean absolute error, and the fractions they explain (D^2).

Each figure is scikit-learn's function of the same name (:mod:`sklearn.metrics`) applied per
task, averaged over the tasks (``average="macro"``), or applied once to every scored (row,
task) pair pooled (``average="pooled"``); ``average=None`` gives the per-task array. Row
weights and missing targets as in :func:`multitask.metrics.nmse`: pairs of weight zero are
left out (how the scorers of :mod:`multitask.model_selection` skip missing targets), a task
without any scored pair is left out of the average (NaN in the per-task array).
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import ArrayLike
from sklearn import metrics as skm
from sklearn.exceptions import UndefinedMetricWarning

from multitask.metrics._layouts import Layout, _say_skipped
from multitask.metrics._weights import _weighted_pairs

__all__ = [
    "d2_absolute_error_score",
    "d2_pinball_score",
    "d2_tweedie_score",
    "mean_absolute_error",
    "mean_gamma_deviance",
    "mean_pinball_loss",
    "mean_poisson_deviance",
    "mean_tweedie_deviance",
]

#: The averages of these metrics: per task then the mean over tasks, all pairs pooled (also
#: spelled ``"micro"``, as :func:`multitask.metrics.error_rate`), or the per-task array.
AVERAGES = ("macro", "pooled", "micro", None)


def check_average(average) -> bool:
    """Whether ``average`` pools the pairs (a ``ValueError`` for an unknown average)."""
    if average not in AVERAGES:
        raise ValueError(f"average must be one of {list(AVERAGES)}, got {average!r}.")
    return average in ("pooled", "micro")


def scored_pairs(y_true: Layout, y_pred: Layout, task, sample_weight, pooled: bool
                 ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
    """Per task ``(y_t, f_t, w_t)`` as floats, the pairs of weight zero left out (a task may
    be left empty: its position is kept), the weights rescaled over every task (``pooled``)
    or task by task."""
    trip = _weighted_pairs(y_true, y_pred, task, sample_weight, drop_empty=False,
                           scale="pooled" if pooled else "task")
    out = []
    for t, (a, b, w) in enumerate(trip):
        a = _floats(a, "y_true", t)
        b = _floats(b, "y_pred", t)
        out.append((a, b, w))
    return out


def _floats(v, what: str, t: int) -> np.ndarray:
    try:
        v = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"Task {t}: {what} must hold numbers.") from None
    if not np.all(np.isfinite(v)):
        raise ValueError(f"Task {t}: {what} holds NaN or infinity among the scored pairs "
                         "(give a missing target the weight 0, or fit the model with "
                         "missing_targets='ignore' and use its scorers).")
    return v


def _pooled(trip):
    a = np.concatenate([a for a, _, _ in trip])
    b = np.concatenate([b for _, b, _ in trip])
    w = None if trip[0][2] is None else np.concatenate([w for _, _, w in trip])
    return a, b, w


def _mean_figure(fn, y_true, y_pred, task, sample_weight, average, check=None):
    """``fn(y, f, w)`` per task (averaged or as an array) or on the pooled pairs; ``check(y, f,
    t)`` raises for a task outside the figure's domain (``t`` None for the pooled pairs)."""
    pooled = check_average(average)
    trip = scored_pairs(y_true, y_pred, task, sample_weight, pooled)
    for t, (a, b, _) in enumerate(trip):
        if check is not None and len(a):
            check(a, b, t)
    if pooled:
        return float(fn(*_pooled(trip)))
    vals = np.array([fn(a, b, w) if len(a) else np.nan for a, b, w in trip])
    return vals if average is None else float(np.nanmean(vals))


def _d2_figure(fn, name, y_true, y_pred, task, sample_weight, average, skip_undefined,
               check=None):
    """A D^2 figure: :func:`_mean_figure` with the undefined tasks (fewer than two scored
    pairs, or constant targets: the null model's deviance is 0) left out with a warning
    (``skip_undefined``) or refused naming the task; NaN for them with ``average=None``."""
    pooled = check_average(average)
    trip = scored_pairs(y_true, y_pred, task, sample_weight, pooled)
    for t, (a, b, _) in enumerate(trip):
        if check is not None and len(a):
            check(a, b, t)

    def undefined(a: np.ndarray) -> str | None:
        if len(a) < 2:
            return "fewer than two scored targets"
        if np.all(a == a[0]):
            return "constant targets"
        return None

    def value(a, b, w) -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            return float(fn(a, b, w))

    if pooled:
        a, b, w = _pooled(trip)
        why = undefined(a)
        if why is not None:
            raise ValueError(f"The pooled targets have {why}: {name} is undefined.")
        return value(a, b, w)
    vals = np.full(len(trip), np.nan)
    skipped = []
    for t, (a, b, w) in enumerate(trip):
        if not len(a):
            continue
        why = undefined(a)
        if why is None:
            vals[t] = value(a, b, w)
            continue
        if average is not None and not skip_undefined:
            raise ValueError(f"Task {t} has {why}: its {name} is undefined "
                             "(skip_undefined=True leaves such tasks out).")
        skipped.append(t)
    if average is None:
        return vals
    if skipped:
        _say_skipped(name, skipped, len(trip) - int(sum(not len(a) for a, _, _ in trip)),
                     "fewer than two scored targets or constant targets")
    return float(np.nanmean(vals))


# ----------------------------------------------------------------------------- deviances
def _power(power) -> float:
    try:
        p = float(power)
    except (TypeError, ValueError):
        raise ValueError(f"power must be a number <= 0 or >= 1, got {power!r}.") from None
    if not np.isfinite(p) or 0 < p < 1:
        raise ValueError(f"power must be a number <= 0 or >= 1 (scikit-learn's Tweedie "
                         f"deviances), got {power!r}.")
    return p


def _deviance_domain(power: float):
    """``check(y, f, t)``: the targets and predictions a Tweedie deviance of ``power``
    takes (scikit-learn's domains), a ``ValueError`` naming the task otherwise."""

    def check(y: np.ndarray, f: np.ndarray, t: int) -> None:
        if 1 <= power < 2 and np.any(y < 0):
            need, bad = "non-negative targets", float(y[y < 0][0])
        elif power >= 2 and np.any(y <= 0):
            need, bad = "strictly positive targets", float(y[y <= 0][0])
        elif (power < 0 or power >= 1) and np.any(f <= 0):
            need, bad = ("strictly positive predictions (the predicted means)",
                         float(f[f <= 0][0]))
        else:
            return
        raise ValueError(f"Task {t}: the Tweedie deviance of power {power:g} needs {need}; "
                         f"got {bad!r}.")

    return check


def mean_tweedie_deviance(y_true: Layout, y_pred: Layout, task: ArrayLike | None = None, *,
                          power: float = 0.0, average: str | None = "macro",
                          sample_weight: Layout | None = None) -> float | np.ndarray:
    """Mean Tweedie deviance of multi-task predictions (the predicted means).

    ``D_t = sum_i w_i d_p(y_i, f_i) / sum_i w_i`` over the scored pairs of task ``t``, with
    the unit deviance of power ``p`` (scikit-learn's :func:`~sklearn.metrics.
    mean_tweedie_deviance`: ``2 (y log(y / f) - y + f)`` for ``p = 1``, ``2 (log(f / y) + y /
    f - 1)`` for ``p = 2``, ``(y - f)^2`` for ``p = 0``, ``2 (max(y, 0)^(2-p) / ((1-p)(2-p)) -
    y f^(1-p) / (1-p) + f^(2-p) / (2-p))`` otherwise): twice the losses the regressors with
    ``loss="poisson"``, ``"gamma"`` and ``"tweedie"`` fit.

    Parameters
    ----------
    y_true, y_pred : array (n, m), array (n,) with ``task``, or lists of per-task arrays
        Targets and predicted means (``y_pred > 0`` for ``p >= 1``; ``y_true >= 0`` for ``1
        <= p < 2``, ``> 0`` for ``p >= 2``).
    task : array (n,), optional
    power : float, default=0.0
        ``p <= 0`` or ``p >= 1``.
    average : {"macro", "pooled", "micro"} or None, default="macro"
        ``"macro"``: ``(1/m') sum_t D_t`` over the ``m'`` tasks with a scored pair;
        ``"pooled"`` (or ``"micro"``): the mean deviance of all scored pairs together;
        ``None``: the array of the ``D_t`` (NaN for a task without a scored pair).
    sample_weight : the layout of ``y_true``, optional
        Non-negative weights of the (row, task) pairs, as in :func:`nmse` (pairs of weight
        zero are left out).

    Returns
    -------
    float or ndarray of shape (m,)
        The mean deviance; the ``D_t`` of the tasks for ``average=None``.

    Raises
    ------
    ValueError
        A target or prediction outside the deviance's domain (naming the task), an unknown
        ``power`` or ``average``.
    """
    p = _power(power)
    return _mean_figure(
        lambda a, b, w: skm.mean_tweedie_deviance(a, b, sample_weight=w, power=p),
        y_true, y_pred, task, sample_weight, average, _deviance_domain(p))


def mean_poisson_deviance(y_true: Layout, y_pred: Layout, task: ArrayLike | None = None, *,
                          average: str | None = "macro",
                          sample_weight: Layout | None = None) -> float | np.ndarray:
    """Mean Poisson deviance ``2 (y log(y / f) - y + f)``: :func:`mean_tweedie_deviance` with
    ``power=1`` (targets ``>= 0``, predicted means ``> 0``)."""
    return mean_tweedie_deviance(y_true, y_pred, task, power=1.0, average=average,
                                 sample_weight=sample_weight)


def mean_gamma_deviance(y_true: Layout, y_pred: Layout, task: ArrayLike | None = None, *,
                        average: str | None = "macro",
                        sample_weight: Layout | None = None) -> float | np.ndarray:
    """Mean Gamma deviance ``2 (log(f / y) + y / f - 1)``: :func:`mean_tweedie_deviance`
    with ``power=2`` (targets and predicted means ``> 0``)."""
    return mean_tweedie_deviance(y_true, y_pred, task, power=2.0, average=average,
                                 sample_weight=sample_weight)


def d2_tweedie_score(y_true: Layout, y_pred: Layout, task: ArrayLike | None = None, *,
                     power: float = 0.0, average: str | None = "macro",
                     skip_undefined: bool = False,
                     sample_weight: Layout | None = None) -> float | np.ndarray:
    """Fraction of the Tweedie deviance explained, D^2, per task, averaged or pooled.

    ``D^2_t = 1 - D(y_t, f_t) / D(y_t, ybar_t)`` with ``D`` the mean deviance of power ``p``
    (:func:`mean_tweedie_deviance`) and ``ybar_t`` the (weighted) mean target of the pairs
    scored: scikit-learn's :func:`~sklearn.metrics.d2_tweedie_score`, the ``score`` of its
    GLMs and of the regressors with a log-link loss. Pooled: one D^2 of all scored pairs
    against their pooled mean.

    A task with fewer than two scored pairs or constant targets has no D^2 (the null
    model's deviance is 0; scikit-learn returns NaN or divides by zero there): it raises a
    ``ValueError`` naming it, or with ``skip_undefined`` is left out of the mean with a
    ``UserWarning`` (NaN with ``average=None``).

    Parameters
    ----------
    y_true, y_pred, task, power, sample_weight
        As in :func:`mean_tweedie_deviance`.
    average : {"macro", "pooled", "micro"} or None, default="macro"
    skip_undefined : bool, default=False

    Returns
    -------
    float or ndarray of shape (m,)
        The D^2 score; each task's for ``average=None``.
    """
    p = _power(power)
    return _d2_figure(lambda a, b, w: skm.d2_tweedie_score(a, b, sample_weight=w, power=p),
                      "D^2", y_true, y_pred, task, sample_weight, average, skip_undefined,
                      _deviance_domain(p))


# ----------------------------------------------------------------------------- pinball
def _quantile(quantile) -> float:
    try:
        q = float(quantile)
    except (TypeError, ValueError):
        raise ValueError(f"quantile must be a number in [0, 1], got {quantile!r}.") from None
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile must be in [0, 1], got {quantile!r}.")
    return q


def mean_pinball_loss(y_true: Layout, y_pred: Layout, task: ArrayLike | None = None, *,
                      quantile: float = 0.5, average: str | None = "macro",
                      sample_weight: Layout | None = None) -> float | np.ndarray:
    """Mean pinball loss of predicted quantiles, per task, averaged or pooled.

    ``L_t = sum_i w_i rho_q(y_i - f_i) / sum_i w_i`` with ``rho_q(r) = max(q r, (q - 1) r)``:
    scikit-learn's :func:`~sklearn.metrics.mean_pinball_loss` with ``alpha = q``, the loss
    the regressors with ``loss="quantile"`` fit (``quantile=0.5`` gives half the mean
    absolute error).

    Parameters
    ----------
    y_true, y_pred : array (n, m), array (n,) with ``task``, or lists of per-task arrays
    task : array (n,), optional
    quantile : float in [0, 1], default=0.5
        The quantile level ``q`` (scikit-learn's ``alpha``; the regressors' ``quantile``).
    average : {"macro", "pooled", "micro"} or None, default="macro"
        As in :func:`mean_tweedie_deviance`.
    sample_weight : the layout of ``y_true``, optional

    Returns
    -------
    float or ndarray of shape (m,)
        The mean pinball loss; each task's for ``average=None``.
    """
    q = _quantile(quantile)
    return _mean_figure(lambda a, b, w: skm.mean_pinball_loss(a, b, sample_weight=w, alpha=q),
                        y_true, y_pred, task, sample_weight, average)


def d2_pinball_score(y_true: Layout, y_pred: Layout, task: ArrayLike | None = None, *,
                     quantile: float = 0.5, average: str | None = "macro",
                     skip_undefined: bool = False,
                     sample_weight: Layout | None = None) -> float | np.ndarray:
    """Fraction of the pinball loss explained, D^2, per task, averaged or pooled.

    ``D^2_t = 1 - L(y_t, f_t) / L(y_t, Q_t)`` with ``L`` the mean pinball loss at ``q``
    (:func:`mean_pinball_loss`) and ``Q_t`` the (weighted) ``q``-quantile of the targets
    scored: scikit-learn's :func:`~sklearn.metrics.d2_pinball_score`. Undefined tasks
    (fewer than two scored pairs, constant targets) as in :func:`d2_tweedie_score` (where
    scikit-learn returns 0 or 1).
    """
    q = _quantile(quantile)
    return _d2_figure(lambda a, b, w: skm.d2_pinball_score(a, b, sample_weight=w, alpha=q),
                      "D^2", y_true, y_pred, task, sample_weight, average, skip_undefined)


def mean_absolute_error(y_true: Layout, y_pred: Layout, task: ArrayLike | None = None, *,
                        average: str | None = "macro",
                        sample_weight: Layout | None = None) -> float | np.ndarray:
    """Mean absolute error ``sum_i w_i |y_i - f_i| / sum_i w_i`` per task, averaged or pooled
    (scikit-learn's :func:`~sklearn.metrics.mean_absolute_error`; ``average`` as in
    :func:`mean_tweedie_deviance`)."""
    return _mean_figure(lambda a, b, w: skm.mean_absolute_error(a, b, sample_weight=w),
                        y_true, y_pred, task, sample_weight, average)


def d2_absolute_error_score(y_true: Layout, y_pred: Layout, task: ArrayLike | None = None, *,
                            average: str | None = "macro", skip_undefined: bool = False,
                            sample_weight: Layout | None = None) -> float | np.ndarray:
    """Fraction of the absolute error explained, D^2, against the (weighted) median of each
    task's targets: scikit-learn's :func:`~sklearn.metrics.d2_absolute_error_score`,
    :func:`d2_pinball_score` at ``quantile=0.5``."""
    return _d2_figure(lambda a, b, w: skm.d2_absolute_error_score(a, b, sample_weight=w),
                      "D^2", y_true, y_pred, task, sample_weight, average, skip_undefined)
