"""Multi-task evaluation metrics.

Layouts
-------
Every function of targets, labels or scores accepts the three layouts of
:mod:`multitask.data`: 2-D arrays ``(n, m)`` (a shared design or multi-label data, one column
per task), 1-D arrays with ``task`` ids (long format; tasks in the order of the sorted unique
ids), or lists of per-task arrays. Example-based (``average="samples"``) metrics need the 2-D
layout: one row per example, one column per task (label).

Row weights: :func:`mse`, :func:`rmse`, :func:`nmse`, :func:`amse`, :func:`roc_auc`,
:func:`mean_task_auc`, :func:`f1` and :func:`error_rate` take ``sample_weight`` in the layout of
``y_true`` (for 2-D ``y_true`` also ``(n,)``, one weight per row for every task): sums,
means and variances become weighted, so integer weights give the figure of the repeated rows
and pairs of weight zero are left out (how the scorers of :mod:`multitask.model_selection` skip
missing targets). Every figure is a ratio of weighted sums, so the weights are first divided
by a power of two near their largest (over all tasks for pooled figures, within each task for
per-task ones; the positives and negatives apart for an ROC AUC): weights that differ by a
constant factor give the same figure at any scale, from the smallest subnormal number to the
largest float.

Notation: ``T`` = the tasks, ``m = |T|``, ``n_t`` test rows of task ``t``,
``N = sum_t n_t``; ``y_t`` targets or labels and ``f_t`` predictions or scores of task ``t``.

Regression
----------
* ``mse`` = ``(1/N) sum_t ||y_t - f_t||^2``; ``rmse = sqrt(mse)``.
* ``nmse(average="pooled")`` = ``mse / Var(y)`` with ``Var(y)`` the variance of all test
  targets pooled: the "total squared error over the test targets' variance" used in the
  multi-task literature.
* ``nmse(average="task")`` = ``amse`` = ``(1/m) sum_t (||y_t - f_t||^2 / n_t) / Var(y_t)``.
* ``design_mse(W_true, W, X)`` = ``(1/N) sum_t ||X_t (w_t - w*_t)||^2``: the error of the
  weights measured on a design (Han & Zhang's ``MSE(W)`` with equal task sizes).

Regression losses beyond least squares (scikit-learn's functions of the same names per task;
``average="macro"`` the mean over tasks, ``"pooled"`` all scored pairs together, ``None`` the
per-task array; ``sample_weight`` and missing targets as above)
--------------------------------------------------------------------------------------------
* ``mean_tweedie_deviance(power=p)`` = ``(1/m) sum_t mean_i d_p(y_ti, f_ti)``, the unit
  deviance of power ``p`` of the predicted means (twice the loss of ``loss="tweedie"``);
  ``mean_poisson_deviance`` (``p = 1``), ``mean_gamma_deviance`` (``p = 2``).
* ``d2_tweedie_score`` = ``(1/m) sum_t (1 - D(y_t, f_t) / D(y_t, ybar_t))``, the fraction of
  the deviance explained (the ``score`` of the log-link regressors); ``d2_pinball_score``
  and ``d2_absolute_error_score`` against the task's ``q``-quantile or median. A task with
  fewer than two scored targets or constant targets has no D^2 (``skip_undefined``).
* ``mean_pinball_loss(quantile=q)`` = ``(1/m) sum_t mean_i rho_q(y_ti - f_ti)``, ``rho_q(r) =
  max(q r, (q - 1) r)`` (the loss of ``loss="quantile"``); ``mean_absolute_error``.

Any number of classes
---------------------
* ``log_loss(labels=classes_)`` = ``(1/m) sum_t mean_i -log p_ti(y_ti)`` of ``predict_proba``
  (every layout of the models' probabilities; a task may lack some classes).
* ``accuracy`` = ``(1/m) sum_t mean_i [y_ti = f_ti]``; pooled, ``1 - error_rate``.

Classification (binary labels per task; ``pos_label`` marks the positive class)
-------------------------------------------------------------------------------
* ``roc_auc(average="macro")`` = ``mean_task_auc`` = ``(1/m') sum_t AUC_t``, ``AUC_t`` the ROC
  AUC of task ``t``'s scores, over the ``m'`` tasks whose test labels hold both classes.
* ``roc_auc(average="micro")``: one ROC AUC over all (row, task) pairs pooled.
* ``roc_auc(average="samples")`` (example-based): for every row ``i``, the ROC AUC of its
  scores ``S[i, :]`` against its labels ``Y[i, :]`` over the tasks, averaged over the rows
  that hold both classes.
* ``f1(average="macro")`` = ``(1/m) sum_t F1_t``; ``"micro"``: the F1 of the true positives,
  false positives and false negatives pooled over all (row, task) pairs; ``"samples"``
  (example-based): ``(1/n) sum_i 2 |Y_i & P_i| / (|Y_i| + |P_i|)`` over the rows, ``Y_i`` and
  ``P_i`` the sets of true and predicted positive tasks of row ``i``. From scores, a pair is
  predicted positive when its score is strictly above the threshold of its task: a fixed one
  (:func:`threshold_scores`, 0 by default) or per-task thresholds chosen on other data by
  :func:`tune_thresholds`.
* ``multilabel_scores``: all six of a multi-label table at once (2-D layout): ROC AUC macro,
  micro and example-based, and F1 macro, micro and example-based at one threshold rule.
* ``error_rate(average="micro")``: the fraction of misclassified (row, task) pairs;
  ``"macro"``: the mean over tasks of the per-task fraction.

Structure recovery (weights of shape ``(n_features, n_tasks)``, as the ``W_true`` of
:mod:`multitask.datasets.synthetic`; pass ``estimator.coef_.T``)
--------------------------------------------------------------------------------------------
* ``support_recovery``: precision, recall, F1 and specificity of the selected entries,
  features (rows) or tasks (columns) against the nonzero ones of ``W_true``.
* ``weight_error`` = ``||W - W_true||`` (Frobenius, nuclear, spectral or entrywise l1),
  optionally relative to ``||W_true||``.
* ``numerical_rank``: the number of singular values above ``rtol * sigma_max``.
* ``subspace_distance``: ``sin`` of the largest principal angle between the leading
  ``rank``-dimensional column spaces of two matrices.
* ``similarity_correlation``: the Pearson correlation of the off-diagonal entries of two task
  similarity matrices.

The modules, by responsibility: ``_layouts`` (the three layouts, binary pairs, thresholds),
``_weights`` (row weights: split like the targets, checked, rescaled), ``_regression``,
``_deviance`` (the losses beyond least squares), ``_classification``, ``_multiclass`` and
``_structure``.
"""

from __future__ import annotations

from multitask.metrics._classification import (
    error_rate,
    f1,
    macro_f1,
    mean_task_auc,
    micro_f1,
    multilabel_scores,
    roc_auc,
    threshold_scores,
    tune_thresholds,
)
from multitask.metrics._deviance import (
    d2_absolute_error_score,
    d2_pinball_score,
    d2_tweedie_score,
    mean_absolute_error,
    mean_gamma_deviance,
    mean_pinball_loss,
    mean_poisson_deviance,
    mean_tweedie_deviance,
)
from multitask.metrics._layouts import Layout as Layout
from multitask.metrics._layouts import per_task
from multitask.metrics._multiclass import accuracy, log_loss
from multitask.metrics._regression import amse, design_mse, mse, nmse, rmse
from multitask.metrics._structure import (
    numerical_rank,
    similarity_correlation,
    subspace_distance,
    support_mask,
    support_recovery,
    weight_error,
)

__all__ = [
    "per_task",
    "mse",
    "rmse",
    "nmse",
    "amse",
    "design_mse",
    "mean_tweedie_deviance",
    "mean_poisson_deviance",
    "mean_gamma_deviance",
    "d2_tweedie_score",
    "mean_pinball_loss",
    "d2_pinball_score",
    "mean_absolute_error",
    "d2_absolute_error_score",
    "log_loss",
    "accuracy",
    "roc_auc",
    "mean_task_auc",
    "f1",
    "macro_f1",
    "micro_f1",
    "threshold_scores",
    "tune_thresholds",
    "multilabel_scores",
    "error_rate",
    "support_mask",
    "support_recovery",
    "weight_error",
    "numerical_rank",
    "subspace_distance",
    "similarity_correlation",
]
