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
"""

from __future__ import annotations

import sys
import types

from multitask.data.container import (
    MAX_ABS_VALUE,
    MISSING_TARGETS,
    MultiTaskData,
    as_multitask_data,
    as_task_ids,
    check_not_complex,
    check_scalar_param,
    check_sparse_structure,
    check_task_column,
    observed_mask,
    split_task_column,
)
from multitask.data.container import (
    MIN_MAX_ABS_VALUE as MIN_MAX_ABS_VALUE,
)
from multitask.data.container import (
    SPECTRAL_LANCZOS_ENTRIES as SPECTRAL_LANCZOS_ENTRIES,
)
from multitask.data.container import (
    _dense_task_sums_constant as _dense_task_sums_constant,
)
from multitask.data.container import (
    unstack_predictions as unstack_predictions,
)

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
    "observed_mask",
    "split_task_column",
]

_ABSENT = object()


class _Package(types.ModuleType):
    """The package module: setting one of its names (a test replacing a constant or a
    compiled kernel) sets it as well in each submodule holding the same object, the module
    whose code reads it."""

    def __setattr__(self, name: str, value) -> None:
        old = self.__dict__.get(name, _ABSENT)
        if old is not _ABSENT and not isinstance(old, types.ModuleType):
            prefix = self.__name__ + "."
            for key, module in list(sys.modules.items()):
                if key.startswith(prefix) and getattr(module, name, _ABSENT) is old:
                    setattr(module, name, value)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
