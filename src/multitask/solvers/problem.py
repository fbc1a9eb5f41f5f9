"""The facts of a problem that the automatic solver choice reads (:class:`Problem`).

One record per ``(datafit, penalty)`` pair: the shapes and the storage of the data, the
loss's and the penalty's capabilities, whether the variable is split into parts, and a memo
for the costlier measures (conditioning, feature scale), which the solvers that need them
compute once through :meth:`Problem.fact`. The record is read by
:func:`multitask.solvers.choice.choose` and by the solvers' ``preference`` (and nothing
else): it imports no solver, so every solver module can name it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any

import numpy as np

from multitask.losses import Datafit
from multitask.penalties.base import Penalty

__all__ = ["ROLES", "Problem"]

#: Where a solver may stand: ``"model"`` solves a whole model, ``"inner"`` the subproblems of
#: a meta-solver (a working set's rows, a multi-stage model's stages).
ROLES = ("model", "inner")


class Problem:
    """What a solver choice knows of ``(datafit, penalty)``, computed when first read.

    Parameters
    ----------
    datafit : Datafit
        The loss bound to the data.
    penalty : Penalty
        The penalty or constraint on the solver's variable.
    role : {"model", "inner"}, default="model"
        Whether the solver solves a whole model or the subproblems of a meta-solver.

    Attributes
    ----------
    n_features, n_tasks, n_rows : int
        ``d``, ``m`` and the stacked rows of the data.
    shared : bool
        One design matrix shared by all tasks.
    sparse : bool
        A scipy.sparse design.
    split : bool
        The penalty acts on a split variable ``W = sum_i V[i]`` (``penalty.parts``).
    """

    def __init__(self, datafit: Datafit, penalty: Penalty, role: str = "model"):
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, got {role!r}.")
        self.datafit = datafit
        self.penalty = penalty
        self.role = role
        self._facts: dict[str, Any] = {}

    def __repr__(self) -> str:
        return (f"Problem({self.datafit.name} loss, {self.penalty.name} penalty, "
                f"d={self.n_features}, m={self.n_tasks}, rows={self.n_rows}, "
                f"role={self.role!r})")

    # ------------------------------------------------------------------ cheap facts
    @cached_property
    def n_features(self) -> int:
        return int(self.datafit.data.n_features)

    @cached_property
    def n_tasks(self) -> int:
        return int(self.datafit.data.n_tasks)

    @cached_property
    def n_rows(self) -> int:
        return int(self.datafit.data.n_rows)

    @cached_property
    def shared(self) -> bool:
        return bool(self.datafit.data.shared)

    @cached_property
    def sparse(self) -> bool:
        return bool(self.datafit.data.is_sparse)

    @cached_property
    def split(self) -> bool:
        return bool(self.penalty.parts)

    def loss_has(self, capability: str) -> bool:
        """Whether the datafit declares ``capability``."""
        return capability in self.datafit.capabilities

    def penalty_has(self, capability: str) -> bool:
        """Whether the penalty declares ``capability``."""
        return capability in self.penalty.capabilities

    @cached_property
    def stored_entries(self) -> int:
        """The stored entries of the stacked design (``m`` times a shared design's)."""
        X = self.datafit.data.X
        entries = int(X.nnz) if hasattr(X, "nnz") else int(np.prod(X.shape))
        return entries * (self.n_tasks if self.shared else 1)

    @cached_property
    def row_prox(self) -> tuple[str, tuple] | None:
        """``(family, (a, b, c))`` of a penalty with ``"row_prox"`` (``None`` without)."""
        if not self.penalty_has("row_prox"):
            return None
        return self.penalty.row_prox_family, tuple(self.penalty.row_prox_params())

    # ------------------------------------------------------------------ memo
    def fact(self, key: str, compute: Callable[[], Any]) -> Any:
        """The fact ``key``, computed by ``compute()`` the first time it is asked for."""
        if key not in self._facts:
            self._facts[key] = compute()
        return self._facts[key]
