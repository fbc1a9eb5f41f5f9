"""What the per-task statistics read from a stacked multi-task data set.

:class:`StackedData` is the structural type of :class:`~multitask.data.MultiTaskData` as
:mod:`multitask.data.statistics` sees it: the stacked design, the task boundaries, the row
weights, the implicit centring and the products ``X_t^T r_t``. The statistics type their
argument with it, so that they sit below the container (which caches what they compute)
instead of importing it back.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import scipy.sparse as sp


class StackedData(Protocol):
    """The rows of ``m`` tasks stacked and grouped by task (see
    :class:`~multitask.data.MultiTaskData` for the meaning of each member)."""

    @property
    def X(self) -> np.ndarray | sp.csr_matrix: ...

    @property
    def offsets(self) -> np.ndarray: ...

    @property
    def shared(self) -> bool: ...

    @property
    def x_offset(self) -> np.ndarray | None: ...

    @property
    def sample_weight(self) -> np.ndarray | None: ...

    @property
    def n_tasks(self) -> int: ...

    @property
    def n_features(self) -> int: ...

    @property
    def n_rows(self) -> int: ...

    @property
    def task_sizes(self) -> np.ndarray: ...

    @property
    def task_of_row(self) -> np.ndarray: ...

    @property
    def task_weight_sums(self) -> np.ndarray: ...

    @property
    def shares_gram(self) -> bool: ...

    def task_row_weights(self, t: int) -> np.ndarray | None: ...

    def task_X(self, t: int) -> Any: ...

    def rmatvec(self, R: np.ndarray) -> np.ndarray: ...
