"""Scorers of multi-task models (greater is better), by name or callable."""

from __future__ import annotations

import numpy as np

from multitask.data import split_task_column
from multitask.metrics import mean_task_auc, nmse

__all__ = ["amse_scorer", "get_scorer", "mean_auc_scorer", "nmse_scorer", "pooled_metric"]


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


def nmse_scorer(estimator, X, y, *, average="pooled") -> float:
    """Scorer (greater is better): ``-nMSE`` of the estimator's predictions."""
    pred = estimator.predict(X)
    return -nmse(y, pred, _task_ids(estimator, X), average=average)


def mean_auc_scorer(estimator, X, y) -> float:
    """Scorer: mean per-task ROC AUC of ``decision_function`` (shared or long format)."""
    import warnings

    scores = estimator.decision_function(X)
    y = np.asarray(y)
    if y.ndim == 2:
        y_bin = (y == estimator.classes_[1]).astype(int)
    else:
        y_bin = (y == estimator.classes_[1]).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return mean_task_auc(y_bin, scores, _task_ids(estimator, X))


def amse_scorer(estimator, X, y) -> float:
    """Scorer (greater is better): ``-aMSE``, the task-averaged nMSE (see :mod:`multitask.metrics`).

    Tasks whose held-out targets are constant make it undefined (a ValueError).
    """
    return nmse_scorer(estimator, X, y, average="task")


_NAMED_SCORERS = {
    "nmse": nmse_scorer,
    "neg_nmse": nmse_scorer,
    "amse": amse_scorer,
    "neg_amse": amse_scorer,
    "auc": mean_auc_scorer,
    "mean_auc": mean_auc_scorer,
}


def get_scorer(scoring, estimator):
    """The scoring callable ``scorer(est, X, y) -> float`` (greater is better) for ``scoring``.

    Parameters
    ----------
    scoring : None, str or callable
        ``None``: :func:`nmse_scorer` (``-nMSE``, pooled) for regressors and
        :func:`mean_auc_scorer` (mean per-task ROC AUC) for classifiers. ``"nmse"``,
        ``"amse"``, ``"auc"``: those scorers (``"amse"`` is the task-averaged nMSE); any other
        string is looked up with :func:`sklearn.metrics.get_scorer` (``"r2"``, ``"accuracy"``,
        ``"neg_mean_squared_error"``, ...). A callable is returned unchanged.
    estimator : estimator
        Decides the default (classifier or regressor).
    """
    from sklearn.base import is_classifier
    from sklearn.metrics import get_scorer as sk_get_scorer

    if scoring is None:
        return mean_auc_scorer if is_classifier(estimator) else nmse_scorer
    if callable(scoring):
        return scoring
    if isinstance(scoring, str):
        if scoring in _NAMED_SCORERS:
            return _NAMED_SCORERS[scoring]
        try:
            return sk_get_scorer(scoring)
        except ValueError:
            raise ValueError(
                f"Unknown scoring {scoring!r}: use one of {sorted(_NAMED_SCORERS)} or a "
                "scikit-learn scorer name."
            ) from None
    raise ValueError(f"scoring must be None, a string or a callable, got {scoring!r}.")


# ----------------------------------------------------------------------------- pooled scores
def _neg_nmse(y, pred, task) -> float:
    return -nmse(y, pred, task)


def _neg_amse(y, pred, task) -> float:
    return -nmse(y, pred, task, average="task")


_POOLED = {
    nmse_scorer: ("predict", _neg_nmse),
    amse_scorer: ("predict", _neg_amse),
}


def pooled_metric(scorer):
    """How to score predictions pooled over folds with the same measure as ``scorer``.

    Leave-one-out folds hold one row per task: a per-fold nMSE is then noisy (or undefined),
    so the cross-validation engine scores the out-of-fold predictions of all folds together
    instead (as scikit-learn's ``cross_val_predict`` does). Only the squared-error measures
    pool well: a ROC AUC pooled over leave-one-out folds is biased (each fold's intercept moves
    against the label left out; Airola, Pahikkala, Waegeman, De Baets & Salakoski, "An
    experimental comparison of cross-validation techniques for estimating the area under the
    ROC curve"), so ``"auc"`` is not pooled.

    Parameters
    ----------
    scorer : callable
        A scorer returned by :func:`get_scorer`.

    Returns
    -------
    tuple or None
        ``(method, metric)``: the estimator's method giving the values to pool
        (``"predict"``) and ``metric(y, values, task) -> float`` (greater is better) for
        :func:`nmse_scorer` and :func:`amse_scorer`; ``None`` for any other scorer.
    """
    return _POOLED.get(scorer)
