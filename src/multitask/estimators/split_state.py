"""The fitted state of the split models, whose weights are a sum of parts ``W = V_0 + V_1``
(dirty model, robust feature learning, robust MTL, sparse + low rank): the declarations of
:mod:`multitask.estimators.fitted_state` their families share."""

from __future__ import annotations

from multitask.estimators.fitted_state import (
    Fitted,
    class_columns_of,
    derived,
    fit_part,
    matches_coef,
    variable_part,
)
from multitask.estimators.multiclass import class_shape, task_norms

__all__ = ["OUTLIER_TASK_NORMS", "split_parts"]

#: A component's shape: that of ``coef_`` (``(n_tasks, n_classes, n_features)`` for more than
#: two classes).
COMPONENT = class_shape(("m", "d"), ("m", "K", "d"))


def split_parts(*names: str) -> dict[str, Fitted]:
    """The fitted state of the parts: ``coef_variable_`` of shape ``(k, n_features, c)`` (the
    solver's ``k = len(names)`` parts), whose sum over the parts, transposed, is ``coef_``;
    and the component ``names[i]``, part ``i`` by task (``coef_variable_[i].T``), of the shape
    of ``coef_``."""
    return {
        "coef_variable_": Fitted("array", shape=(len(names), "d", "c"), check=matches_coef(
            lambda V, _: V.sum(axis=0).T, "coef_ is the sum of the parts, transposed")),
        **{name: Fitted("array", shape=COMPONENT, check=variable_part(i))
           for i, name in enumerate(names)},
    }


#: ``outlier_task_norms_``: the Euclidean norm of each task's columns of the outlier part
#: (part 1; the ``K`` columns of a task together for ``K`` classes).
OUTLIER_TASK_NORMS = Fitted("array", shape=("t",), nonnegative=True, check=derived(
    lambda est, s: task_norms(fit_part(1)(est, s), class_columns_of(est)),
    "the column norms of the outlier part"))
