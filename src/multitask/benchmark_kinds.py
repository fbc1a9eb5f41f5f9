"""The kinds of problem of the main job, ``multitask benchmark``: loss, scorer and metrics.

Each kind fixes the loss every model is fitted with, the score the cross-validation chooses
the hyper-parameters by, and the test metrics of the table, the figure and the verdict (the
first metric decides both the order of the table and the verdict):

============== ============================ ================ ===============================
kind           models and loss              selection score  test metrics
============== ============================ ================ ===============================
regression     regressors, squared          -nMSE            nMSE, aMSE
classification classifiers, their default   mean task AUC    AUC, accuracy
count          regressors, ``poisson``      -mean deviance   Poisson deviance, D^2
multiclass     classifiers, ``logistic``    -log-loss        log-loss, accuracy (pooled,
                                                             macro over tasks)
quantile       regressors, ``quantile``     -pinball loss    pinball loss, coverage
robust         regressors, ``huber``        -Huber loss      Huber loss, MAE, nMSE
============== ============================ ================ ===============================

The selection score is the library's default for the loss
(:func:`multitask.model_selection.loss_scorer`), but for ``robust``: the Huber loss of the
table (:class:`HuberScorer`, one scale for every candidate) instead of the library's mean
absolute error.

With an exposure (``count`` only) every model fits, as scikit-learn's Poisson GLMs do, the
rate ``y / exposure`` with ``sample_weight=exposure``; the predicted count is the rate times
the exposure.

The metrics (pooled over the test rows of all tasks, ``r = y - prediction``):

* Poisson deviance: ``mean_i 2 (y_i log(y_i / mu_i) - y_i + mu_i)`` of the test counts ``y_i``
  and the predicted counts ``mu_i`` (rate times exposure); D^2 = ``1 - D / D_0``, ``D_0`` the
  deviance of the constant rate ``sum(y) / sum(exposure)`` of the test part (scikit-learn's
  ``d2_tweedie_score`` of the rates weighted by the exposure, ``power=1``);
* log-loss: ``mean_i -log p_i(y_i)`` (probabilities clipped as scikit-learn's ``log_loss``
  does); accuracy: the share of test rows whose most probable class is right, pooled over the
  rows and, macro, the mean over tasks of each task's accuracy;
* pinball loss at ``q``: ``mean_i max(q r_i, (q - 1) r_i)``; coverage: the share of test
  targets at or below the prediction (``q`` when the quantile is well estimated);
* Huber loss: ``mean_i h(r_i / s)``, ``h(u) = u^2 / 2`` for ``|u| <= epsilon`` and
  ``epsilon |u| - epsilon^2 / 2`` beyond, with one scale ``s`` per split, the same for every
  model: ``1.4826`` times the median absolute deviation of the training targets from their
  task's median (:func:`robust_scale`); MAE ``mean_i |r_i|``; nMSE as for regression.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "DEFAULT_EPSILON",
    "DEFAULT_QUANTILE",
    "FAMILY",
    "KINDS",
    "LOSS",
    "METRICS",
    "HuberScorer",
    "cv_scorer",
    "huber_loss",
    "kind_options",
    "loss_params",
    "robust_scale",
    "test_scores",
]

#: The kinds of problem, in the order ``--kind`` lists them.
KINDS = ("regression", "classification", "count", "multiclass", "quantile", "robust")

#: The model family of each kind: the ``*Regressor`` or the ``*Classifier`` classes.
FAMILY = {"regression": "regression", "classification": "classification",
          "count": "regression", "multiclass": "classification", "quantile": "regression",
          "robust": "regression"}

#: The loss every model of a kind is fitted with (None: each model's default loss).
LOSS: dict[str, str | None] = {"regression": None, "classification": None,
                               "count": "poisson", "multiclass": "logistic",
                               "quantile": "quantile", "robust": "huber"}

#: The quantile of ``--kind quantile`` by default: the median, the default of the models'
#: ``quantile`` and of scikit-learn's ``QuantileRegressor``.
DEFAULT_QUANTILE = 0.5

#: Huber's threshold of ``--kind robust`` by default (the models' and scikit-learn's
#: ``HuberRegressor``'s ``epsilon``).
DEFAULT_EPSILON = 1.35

#: The test metrics of each kind: ``(key, label, larger is better)``; the first one sorts the
#: table and decides the verdict; None: no better direction (the quantile's coverage, whose
#: ideal is ``q``).
METRICS: dict[str, tuple[tuple[str, str, bool | None], ...]] = {
    "regression": (("nmse", "nMSE", False), ("amse", "aMSE", False)),
    "classification": (("auc", "AUC", True), ("accuracy", "accuracy", True)),
    "count": (("deviance", "deviance", False), ("d2", "D^2", True)),
    "multiclass": (("log_loss", "log-loss", False), ("accuracy", "accuracy", True),
                   ("accuracy_macro", "macro accuracy", True)),
    "quantile": (("pinball", "pinball loss", False), ("coverage", "coverage", None)),
    "robust": (("huber", "Huber loss", False), ("mae", "MAE", False), ("nmse", "nMSE", False)),
}

#: The factor that makes the median absolute deviation a consistent estimate of the standard
#: deviation of normal data.
MAD_TO_SD = 1.4826


# ----------------------------------------------------------------------------- options
def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise ValueError(f"{what} must be a number, got {value!r}.")
    return float(value)


def kind_options(kind: str, *, quantile: float | None = None,
                 epsilon: float | None = None) -> dict:
    """The options of a kind's loss, checked: ``{"quantile": q}`` for ``"quantile"``,
    ``{"epsilon": e}`` for ``"robust"``, ``{}`` otherwise.

    Raises
    ------
    ValueError
        On an unknown kind, a quantile outside ``(0, 1)``, an epsilon below 1 (1 itself is
        least absolute deviations, which the Huber models refuse), or an option given to a
        kind that does not take it.
    """
    if kind not in KINDS:
        raise ValueError(f"The kind of problem must be one of {', '.join(KINDS)}, got "
                         f"{kind!r}.")
    if quantile is not None and kind != "quantile":
        raise ValueError(f"A quantile ({quantile!r}) goes with the kind 'quantile', not "
                         f"{kind!r}.")
    if epsilon is not None and kind != "robust":
        raise ValueError(f"An epsilon ({epsilon!r}) goes with the kind 'robust', not "
                         f"{kind!r}.")
    if kind == "quantile":
        q = DEFAULT_QUANTILE if quantile is None else _number(quantile, "The quantile")
        if not 0 < q < 1:
            raise ValueError(f"The quantile must be in (0, 1), got {quantile!r}.")
        return {"quantile": q}
    if kind == "robust":
        e = DEFAULT_EPSILON if epsilon is None else _number(epsilon, "Epsilon")
        if not (np.isfinite(e) and e > 1):
            raise ValueError(f"Epsilon must be a finite number > 1 (Huber's threshold in "
                             f"scales; 1 would be least absolute deviations), got {epsilon!r}.")
        return {"epsilon": e}
    return {}


def loss_params(kind: str, options: dict) -> dict:
    """The parameters every model of the kind gets: ``loss`` and its own parameter."""
    loss = LOSS[kind]
    if loss is None:
        return {}
    return {"loss": loss, **options}


# ----------------------------------------------------------------------------- metrics
def huber_loss(r: np.ndarray, epsilon: float) -> np.ndarray:
    """Huber's function of scaled residuals, elementwise: ``u^2 / 2`` for ``|u| <= epsilon``,
    ``epsilon |u| - epsilon^2 / 2`` beyond."""
    a = np.abs(np.asarray(r, dtype=np.float64))
    return np.where(a <= epsilon, 0.5 * a * a, epsilon * a - 0.5 * epsilon * epsilon)


def robust_scale(y: Any) -> float:
    """One robust scale of the targets of all tasks: ``1.4826 median_i |y_i - med_t(i)|``, the
    median absolute deviation of each target from its task's median, pooled over the rows.

    ``y`` is a list of per-task targets or an ``(n, m)`` array (one column per task). When
    more than half of the targets equal their task's median, the mean absolute deviation
    (times 1.2533, its factor for normal data) is used instead, and 1 when that is 0 too.
    """
    columns = list(y) if isinstance(y, list) else list(np.asarray(y, dtype=float).T)
    dev = np.concatenate([np.abs(np.asarray(v, dtype=np.float64) - np.median(v))
                          for v in columns])
    s = MAD_TO_SD * float(np.median(dev))
    if s > 0:
        return s
    s = 1.2533 * float(np.mean(dev))
    return s if s > 0 else 1.0


def _weighted_mean(values: np.ndarray, w: np.ndarray | None) -> float:
    if w is None:
        return float(np.mean(values))
    w = np.asarray(w, dtype=np.float64)
    return float(np.sum(w * values) / np.sum(w))


def _positive(pred: Any) -> np.ndarray:
    return np.maximum(np.asarray(pred, dtype=np.float64), np.finfo(np.float64).tiny)


class HuberScorer:
    """Scorer (greater is better): minus the mean Huber loss ``h(r / scale)`` of the
    residuals (:func:`huber_loss`), with a scale fixed beforehand (the same for every
    model)."""

    def __init__(self, epsilon: float, scale: float):
        self.epsilon, self.scale = float(epsilon), float(scale)

    def __call__(self, estimator, X, y, sample_weight=None) -> float:
        pred = np.asarray(estimator.predict(X), dtype=np.float64).ravel()
        r = (np.ravel(y) - pred) / self.scale
        return -_weighted_mean(huber_loss(r, self.epsilon), sample_weight)


def cv_scorer(kind: str, options: dict, y_train: Any = None):
    """The score the cross-validation of a kind chooses by: the Huber loss of
    :class:`HuberScorer` with the robust scale of ``y_train`` for ``"robust"`` (the measure of
    the table), None otherwise: the library's default for the model's loss
    (:func:`multitask.model_selection.loss_scorer`: -nMSE, the mean task AUC, minus the mean
    Poisson deviance, minus the log-loss for more than two classes, minus the mean pinball
    loss at the model's quantile)."""
    if kind == "robust":
        return HuberScorer(options["epsilon"], robust_scale(y_train))
    return None


# ----------------------------------------------------------------------------- test scores
def _pool(y: Any, values: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(y, values, task)`` pooled over the tasks: per-task lists, or a shared design's
    ``(n, m)`` targets with ``(n, m)`` (or ``(n, m, K)``) values, task-major."""
    if isinstance(y, list):
        ys = [np.asarray(v).ravel() for v in y]
        vs = [np.asarray(v) for v in values]
        task = np.concatenate([np.full(len(v), t) for t, v in enumerate(ys)])
        vals = np.concatenate([v.reshape(len(a), -1) for v, a in zip(vs, ys, strict=True)])
        return np.concatenate(ys), vals, task
    y = np.asarray(y)
    n, m = y.shape
    vals = np.asarray(values)
    if isinstance(values, list):  # one array per task
        vals = np.stack([np.asarray(v) for v in values], axis=1)
    vals = vals.reshape(n, m, -1).transpose(1, 0, 2).reshape(n * m, -1)
    return y.T.ravel(), vals, np.repeat(np.arange(m), n)


def _pooled_weights(y: Any, w: Any) -> np.ndarray | None:
    """The weights of the pooled rows (a shared design's row weights repeated per task)."""
    if w is None:
        return None
    if isinstance(y, list):
        return np.concatenate([np.asarray(v, dtype=np.float64).ravel() for v in w])
    m = np.asarray(y).shape[1]
    return np.tile(np.asarray(w, dtype=np.float64).ravel(), m)


def test_scores(kind: str, options: dict, search: Any, X_te: Any, y_te: Any,
                w_te: Any = None, y_train: Any = None) -> dict:
    """The test metrics of a new kind (:data:`METRICS`) of a fitted model.

    Parameters
    ----------
    kind : {"count", "multiclass", "quantile", "robust"}
    options : dict
        :func:`kind_options`.
    search : fitted estimator
        Predicts rates (``count``), class probabilities (``multiclass``) or targets.
    X_te, y_te : the test part (per-task lists, or a shared design)
        ``y_te`` holds the counts (``count``) or the class codes ``0 .. K-1`` (``multiclass``).
    w_te : the test exposures (``count``), optional
    y_train : the training targets (``robust``: the scale of the Huber loss)

    Returns
    -------
    dict
        The metrics by key, and ``huber_scale`` for ``robust``.
    """
    if kind == "multiclass":
        proba = search.predict_proba(X_te)
        y, p, task = _pool(y_te, proba)
        from sklearn.metrics import log_loss

        classes = np.asarray(search.classes_)
        right = classes[np.argmax(p, axis=1)] == y
        per_task = [float(np.mean(right[task == t])) for t in np.unique(task)]
        return {"log_loss": float(log_loss(y, p, labels=list(classes))),
                "accuracy": float(np.mean(right)),
                "accuracy_macro": float(np.mean(per_task))}
    pred = search.predict(X_te)
    y, p2, _ = _pool(y_te, pred)
    p = p2[:, 0].astype(np.float64)
    y = y.astype(np.float64)
    if kind == "count":
        from sklearn.metrics import d2_tweedie_score, mean_poisson_deviance

        e = _pooled_weights(y_te, w_te)
        e = np.ones_like(y) if e is None else e
        rate = _positive(p)
        return {"deviance": float(mean_poisson_deviance(y, _positive(rate * e))),
                "d2": float(d2_tweedie_score(y / e, rate, sample_weight=e, power=1))}
    if kind == "quantile":
        from sklearn.metrics import mean_pinball_loss

        return {"pinball": float(mean_pinball_loss(y, p, alpha=options["quantile"])),
                "coverage": float(np.mean(y <= p))}
    if kind == "robust":
        from multitask.metrics import nmse

        scale = robust_scale(y_train)
        r = y - p
        return {"huber": float(np.mean(huber_loss(r / scale, options["epsilon"]))),
                "mae": float(np.mean(np.abs(r))), "nmse": float(nmse(y, p)),
                "huber_scale": scale}
    raise ValueError(f"No test metrics of the kind {kind!r} here.")
