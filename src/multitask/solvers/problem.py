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
from multitask.penalties.row_blocks import row_blocks

__all__ = ["ROLES", "Problem", "median"]

#: Where a solver may stand: ``"model"`` solves a whole model, ``"inner"`` the subproblems of
#: a meta-solver (a working set's rows, a multi-stage model's stages).
ROLES = ("model", "inner")
#: Bisections of :attr:`Problem.strength_ratio` over six decades (a relative error of
#: ``10^(6 / 2^20)`` at most).
_RATIO_STEPS = 20


def median(v: np.ndarray) -> float:
    """The median of the nonempty 1-d ``v`` without NaN: :func:`numpy.median`'s value (the
    middle entry, or the mean ``(a + b) / 2`` of the two middle ones) from one partition,
    without its dispatch (the facts of every problem the chooser reads take a few)."""
    n = v.size
    lo, hi = (n - 1) // 2, n // 2
    part = np.partition(v, (lo, hi))
    return float(part[hi]) if lo == hi else float((part[lo] + part[hi]) / 2.0)


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
    active_share, strength_ratio : float or None
        For a penalty whose feature rows are blocks: an estimate of the share of nonzero
        rows at the solution, and ``alpha / alpha_max`` (also for a norm without row blocks,
        the trace norm); one gradient at zero.
    entrywise_share : float or None
        :attr:`active_share` of an entrywise l1 penalty (the lasso family), read from its
        columns; ``None`` for the other penalties.
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
    def fewer_rows_than_features(self) -> bool:
        """Whether the tasks hold fewer rows than features on average (``N < m d``): singular
        Gram matrices, where coordinate descent crawls."""
        return self.n_rows < self.n_tasks * self.n_features

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

    @cached_property
    def active_share(self) -> float | None:
        """An estimate of the share of feature rows nonzero at the solution, for a penalty
        whose rows are blocks (:func:`~multitask.penalties.row_blocks.row_blocks`; ``None``
        for the others and for a penalty of free rows only).

        The share of the rows whose zero test fails at ``W = 0``: ``v_j(G_0) > 0`` with
        ``G_0`` the loss gradient at ``W = 0`` and the best intercepts (the gradient that
        gives ``alpha_max``; for the l2,1 norm, the rows with ``||G_0j||_2 > alpha``, so the
        share falls from 1 to 0 as ``alpha`` rises to ``alpha_max``), at most ``n / d`` (``n``
        rows of the design: the stacked rows of per-task designs, the rows of a shared one;
        ``d`` features: a solution of the lasso family has about as many nonzero rows as the
        design has rows at most). One gradient, computed when first read.
        """
        d = self.n_features
        blocks = self._row_blocks
        if blocks is None or d == 0 or bool(np.all(blocks.free())):
            return None
        if self.entrywise_share is not None:
            return self.entrywise_share
        violated = blocks.violation(self._grad_at_zero) > 0
        share = float(np.mean(violated | blocks.free()))
        X = getattr(self.datafit.data, "X", None)
        rows = int(X.shape[0]) if X is not None and self.shared else self.n_rows
        return min(share, rows / d)

    @cached_property
    def entrywise_share(self) -> float | None:
        """:attr:`active_share` of an entrywise l1 penalty without a task coupling (the
        independent lasso: elastic-net rows without a group part), ``None`` for the other
        penalties.

        The entries of a column ``t`` that fail their zero test at ``W = 0`` (``|G_0jt| >
        a_j``, or a free row), a share ``e_t`` of the ``d`` features, estimate the column's
        nonzero entries as ``p_t = e_t min(1, n_t / d)`` (``n_t`` rows of the column's task: a
        lasso keeps at most about as many entries as it has rows, and fewer the weaker the
        correlations); the columns are read as independent, so a row is zero with
        probability ``prod_t (1 - p_t)``, and the estimate is ``1 - prod_t (1 - p_t)``. A row
        that one column's test fails in is not nonzero in every column: the rows' share of
        failed tests overstates the nonzero rows when tasks are many and their rows few."""
        if self.penalty_has("smooth"):  # a task coupling: the columns are not independent
            return None
        blocks = self._row_blocks
        if (blocks is None or blocks.kind != "elastic_net" or bool(np.any(blocks.b > 0))
                or bool(np.all(blocks.free()))):
            return None
        G = self._grad_at_zero
        d, cols = G.shape
        m = self.n_tasks
        if cols == 0 or m == 0 or cols % m:
            return None
        data = self.datafit.data
        X = getattr(data, "X", None)
        if self.shared and X is not None:
            sizes = np.full(m, float(X.shape[0]))
        else:
            sizes = np.asarray(data.task_sizes, dtype=np.float64)
        sizes = np.repeat(sizes, cols // m)  # the class columns of a task share its rows
        failed = (np.abs(G) > blocks.a[:, None]) | blocks.free()[:, None]
        p = np.mean(failed, axis=0) * np.minimum(1.0, sizes / d)
        return float(1.0 - np.exp(np.sum(np.log1p(-np.minimum(p, 1.0 - 1e-12)))))

    @cached_property
    def strength_ratio(self) -> float | None:
        """``alpha / alpha_max`` of a penalty whose rows are blocks (``None`` for the others
        but a norm with one strength, :meth:`_norm_ratio`): the largest scale ``s`` in
        ``[10^-6, 1]`` at which every row passes its zero test on ``s G_0`` (``max_j v_j(s
        G_0) <= 0``; for a norm ``alpha Omega``, ``s = alpha / Omega^*(G_0)``, read from the
        penalty's ``alpha_max`` directly), else found by :data:`_RATIO_STEPS` bisections of
        ``log s`` (the violations grow with the scale of ``G``); 1 where zero is optimal, 0
        below ``10^-6``."""
        d = self.n_features
        blocks = self._row_blocks
        if blocks is None or d == 0 or bool(np.all(blocks.free())):
            return self._norm_ratio()
        direct = self._norm_ratio()  # a norm with one strength: its own alpha_max
        if direct is not None:
            return direct
        G = self._grad_at_zero

        def passes(log_s: float) -> bool:
            return float(np.max(blocks.violation(G, 10.0 ** log_s))) <= 0

        if passes(0.0):
            return 1.0
        lo, hi = -6.0, 0.0  # passes at lo, fails at hi
        if not passes(lo):
            return 0.0
        for _ in range(_RATIO_STEPS):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if passes(mid) else (lo, mid)
        return float(10.0 ** lo)

    def _norm_ratio(self) -> float | None:
        """``min(1, alpha / alpha_max)`` of a penalty ``alpha Omega`` (the l1, l2,1 and trace
        norms: ``alpha_max = Omega^*(G_0)``, the penalty's ``alpha_max``); ``None``
        where the penalty has no single strength or no finite ``alpha_max``, and for a
        penalty with a smooth part (the graph model, the temporal group lasso: its ``alpha``
        weighs the smooth task coupling, not the norm whose ``alpha_max`` it reports; the
        ratio then comes from the rows' zero tests)."""
        if self.split or self.penalty_has("smooth"):
            return None
        return self._alpha_ratio()

    def _alpha_ratio(self) -> float | None:
        """``min(1, alpha / alpha_max)`` from the penalty's one strength ``alpha`` and its
        ``alpha_max`` at ``G_0``; ``None`` without a single strength, features or a finite
        positive ``alpha_max``."""
        alpha = getattr(self.penalty, "alpha", None)
        if not isinstance(alpha, (int, float)) or self.n_features == 0:
            return None
        top = float(self.penalty.alpha_max(self._grad_at_zero))
        if not (np.isfinite(top) and top > 0):
            return None
        return min(1.0, float(alpha) / top)

    @cached_property
    def split_strength_ratio(self) -> float | None:
        """``min(1, alpha / alpha_max)`` of a penalty on a split variable (``W = sum_i V[i]``)
        whose parts are all norms, with one overall strength ``alpha`` and a finite
        ``alpha_max``, from which zero is optimal (robust MTL's ``alpha (||L||_* + lam sum_t
        ||E_.t||_2)``: ``alpha_max = max(||G_0||_2, max_t ||G_0t||_2 / lam)``); ``None`` for
        the other penalties (:attr:`strength_ratio` covers the ones not split). A part that is
        a constraint leaves no such scale: sparse + low rank's trace-norm ball fits the data
        whatever ``alpha``, and how strong the model is depends on its radius."""
        if not self.split or any(part.is_constraint for part in self.penalty.parts):
            return None
        return self._alpha_ratio()

    @cached_property
    def _row_blocks(self):
        """The penalty's row blocks (:func:`~multitask.penalties.row_blocks.row_blocks`;
        ``None`` for a penalty without), read by the estimates above."""
        return row_blocks(self.penalty, self.n_features)

    @cached_property
    def _grad_at_zero(self) -> np.ndarray:
        return np.asarray(self.datafit.grad_at_zero())

    # ------------------------------------------------------------------ memo
    def fact(self, key: str, compute: Callable[[], Any]) -> Any:
        """The fact ``key``, computed by ``compute()`` the first time it is asked for."""
        if key not in self._facts:
            self._facts[key] = compute()
        return self._facts[key]
