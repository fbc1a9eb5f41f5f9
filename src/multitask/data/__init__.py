"""The internal representation of a multi-task data set, its three input formats, validation.

Every user format is converted here, once, into :class:`MultiTaskData`, and every check of user
input lives here too:

(a) shared design: one ``X`` of shape ``(n_samples, n_features)`` for all tasks and ``Y`` of
    shape ``(n_samples, n_tasks)`` (multi-output, like scikit-learn's ``MultiTaskLasso``);
(b) per-task lists: ``X = [X_1, ..., X_m]``, ``y = [y_1, ..., y_m]`` with different ``n_t``
    (like MALSAR);
(c) long format: one ``X`` and ``y`` with a task id per row, given as ``task=`` or stored in a
    column of ``X`` (``task_column=``), which is what lets scikit-learn's ``cross_val_score``,
    ``GridSearchCV`` and ``Pipeline`` split and pass the data without custom code.

The modules, by responsibility:

* :mod:`~multitask.data.container`: :class:`MultiTaskData`, its per-task products and caches;
* :mod:`~multitask.data.operators`: the compiled per-task kernels, Gram matrices and linear
  operators;
* :mod:`~multitask.data.statistics`: per-task Gram matrices, spectral norms, feature means;
* :mod:`~multitask.data.checks`: numbers, dtypes, finiteness, scale, sparse structure;
* :mod:`~multitask.data.targets`: targets, class labels, missing targets;
* :mod:`~multitask.data.weights`: row weights in the three layouts;
* :mod:`~multitask.data.task_ids`: task ids and task columns;
* :mod:`~multitask.data.formats`: one converter per format and the common finishing step.
"""

from __future__ import annotations

# "name as name": imported from this package by the library, its tests or benchmarks besides
# __all__
from multitask.data.checks import (
    MAX_ABS_VALUE,
    check_not_complex,
    check_scalar_param,
    check_sparse_structure,
)
from multitask.data.checks import MIN_MAX_ABS_VALUE as MIN_MAX_ABS_VALUE
from multitask.data.container import MultiTaskData
from multitask.data.formats import as_multitask_data, is_task_list
from multitask.data.formats import unstack_predictions as unstack_predictions
from multitask.data.statistics import SPECTRAL_LANCZOS_ENTRIES as SPECTRAL_LANCZOS_ENTRIES
from multitask.data.targets import MISSING_TARGETS, observed_mask
from multitask.data.task_ids import _id_family as _id_family
from multitask.data.task_ids import as_task_ids, check_task_column, split_task_column

__all__ = [
    "MAX_ABS_VALUE",
    "MISSING_TARGETS",
    "MultiTaskData",
    "as_multitask_data",
    "as_task_ids",
    "check_scalar_param",
    "check_not_complex",
    "check_sparse_structure",
    "check_task_column",
    "is_task_list",
    "observed_mask",
    "split_task_column",
]
