"""The penalty protocol: what every penalty or constraint set offers the solvers.

A penalty ``h`` acts on the solver's variable ``V``; the loss sees the weight matrix
``W = A(V)`` through a linear map ``A`` (the identity for plain penalties, ``W = sum_i V[i]``
for the split models ``W = P + Q``). ``W`` has shape ``(n_features, n_tasks)``, one column per
task. Every penalty offers

* :meth:`Penalty.value`: ``h(V)`` (``0`` inside a constraint set, ``inf`` outside);
* :meth:`Penalty.prox`: ``prox_{step h}(V) = argmin_U 0.5 ||U - V||_F^2 + step * h(U)`` (for a
  constraint set the Euclidean projection, whatever the step);
* :meth:`Penalty.alpha_max`: the smallest strength ``alpha`` at which ``W = 0`` is optimal,
  from the loss gradient at zero (``inf`` where there is none);

and declares the optional capabilities a solver may need in :attr:`Penalty.capabilities`
(see :data:`CAPABILITIES`). Solvers check those declarations, never the class.

The optimality measure used by every solver's stopping rule is the prox-gradient fixed-point
residual of :func:`multitask.solvers.base.optimality`, which needs nothing beyond ``prox``;
it is zero exactly at the minimizers (at the stationary points of a non-convex penalty).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

__all__ = [
    "CAPABILITIES",
    "ROW_PROX_FAMILIES",
    "Constraint",
    "DualBound",
    "IdentityMap",
    "LinearMap",
    "Penalty",
    "SumMap",
    "check_strength",
]

#: Optional capabilities a penalty may declare, and the method or attribute each one promises:
#:
#: * ``"row_prox"``: the penalty (its prox part, with ``"smooth"``) is a sum over the feature
#:   rows of one of the row operators of :data:`ROW_PROX_FAMILIES`
#:   (:attr:`Penalty.row_prox_family`), with the strengths :meth:`Penalty.row_prox_params`
#:   (block coordinate descent over features);
#: * ``"task_coupling"``: the ``"smooth"`` part is ``g(W) = tr(W K W^T) / 2`` with a symmetric
#:   positive semi-definite ``m x m`` matrix ``K`` (:meth:`Penalty.task_coupling`): the tasks
#:   are coupled by a quadratic on the task side (graph, mean and temporal regularizers);
#: * ``"blocks"``: :attr:`Penalty.parts` and a :class:`SumMap` (blockwise solvers such as
#:   linearized ADMM, divide-and-conquer);
#: * ``"stages"``: :meth:`Penalty.stage_penalty` (non-convex penalties solved by
#:   majorization-minimization, one convex-like stage at a time);
#: * ``"lp"``: :meth:`Penalty.lp_constraints` and :meth:`Penalty.lp_cost` (polyhedral sets,
#:   and polyhedral norms ``alpha * Omega`` as the cost of bound variables, for linear
#:   programs);
#: * ``"low_rank"``: the penalty promotes low rank (divide-and-conquer combines such blocks by
#:   a subspace step);
#: * ``"smooth"``: the penalty is ``h = g + r`` with a smooth part ``g``
#:   (:meth:`Penalty.smooth_value_and_grad`, :meth:`Penalty.smooth_lipschitz`): ``prox`` and
#:   ``prox_value`` then concern ``r`` only, ``value`` is ``g + r`` (gradient methods add ``g``
#:   to the loss; graph, temporal and relationship regularizers use it);
#: * ``"majorant"``: :meth:`Penalty.convex_majorant` (a convex majorant tight at a point, for
#:   difference-of-convex stages);
#: * ``"blockwise"``: the prox can be computed on blocks of task columns held apart (by Dask
#:   workers) from a small reduction over the blocks: :meth:`Penalty.block_stats`,
#:   :meth:`Penalty.combine_stats`, :meth:`Penalty.block_plan`, :meth:`Penalty.block_prox`,
#:   :meth:`Penalty.block_value` and, for ``alpha_max``, :meth:`Penalty.block_alpha_stats` and
#:   :meth:`Penalty.alpha_max_from_stats` (the distributed proximal gradient solver). The
#:   defaults of these methods are those of a penalty separable over tasks (nothing to
#:   combine); others override them.
#: * ``"spectral_threshold"``: the penalty is ``a ||W||_*`` (the trace norm, strength ``a`` =
#:   :meth:`Penalty.spectral_strength`), whose prox is singular value soft-thresholding at
#:   ``step * a``; :meth:`Penalty.remember_prox` records a prox output computed elsewhere
#:   (the compiled ADMM step of :mod:`multitask.solvers.admm`).
#: * ``"spectral"``: the prox is a spectral function's, computed from an eigen- or singular
#:   value decomposition of ``W`` (or ``W^T W``) at every call, separable neither over the
#:   feature rows nor over the tasks (the task-structure relaxations of clustered MTL and
#:   convex ASO, the task-relationship term): solvers that call it less often (ADMM, which
#:   solves the quadratic loss exactly between prox calls) take these models.
#: * ``"row_monotone"``: setting feature rows of ``W`` to zero never increases the penalty,
#:   and its value there is the same penalty's on the other rows alone (a spectral function
#:   nondecreasing in each singular value; the l1 norm; a sum of such parts on a
#:   :class:`SumMap`), and with ``"stages"`` its stage keys name no row:
#:   a run may leave out the rows the loss does not see (:mod:`multitask.solvers.seen_rows`).
CAPABILITIES = frozenset({"row_prox", "blocks", "stages", "lp", "low_rank", "smooth",
                          "majorant", "blockwise", "task_coupling", "spectral_threshold",
                          "spectral", "row_monotone"})

#: The row operators of the ``"row_prox"`` capability: the penalty is ``sum_j r_j(W_j.)`` over
#: the feature rows, ``r_j`` given by the family and the row's strengths ``(a_j, b_j, c_j)``
#: (:meth:`Penalty.row_prox_params`):
#:
#: * ``"elastic_net"``: ``a ||w||_1 + b ||w||_2 + (c / 2) ||w||_2^2`` (l1, l2,1, ridge, the
#:   weighted l1 stages of the capped l1 penalty);
#: * ``"fused_sparse_group_lasso"``: ``a ||w||_1 + b ||w||_2 + c sum_t |w_t - w_{t+1}|``
#:   (:func:`~multitask.penalties.temporal.prox_fused_sparse_group_lasso`);
#: * ``"dirty_inf"``, ``"dirty_2"``: the infimal convolution ``min_{p + q = w} a ||p||_s +
#:   b ||q||_1`` with ``s = inf`` or ``2`` (:class:`~multitask.penalties.dirty.DirtyNorm`;
#:   ``c`` unused).
ROW_PROX_FAMILIES = ("elastic_net", "fused_sparse_group_lasso", "dirty_inf", "dirty_2")


@dataclass(frozen=True)
class DualBound:
    """The penalty's conjugate along the dual ray ``U = -s G`` (``"dual"`` capability).

    For the prox part ``r`` of a penalty and the gradient ``G`` of the smooth part of a model
    at a primal point, ``r^*(-s G) = c1 s + c2 s^2`` for ``0 <= s <= s_max`` (``r^*`` is
    ``+inf`` beyond ``s_max``). A norm ``alpha Omega`` has ``r^* = 0`` on its dual ball, so
    ``s_max = alpha / Omega^*(G)`` and ``c1 = c2 = 0``; the indicator of a ball
    ``{Omega <= C}`` has ``r^*(U) = C Omega^*(U)``: ``s_max = inf`` and ``c1 = C
    Omega^*(G)``; a quadratic-type penalty (ridge, squared trace norm) has ``c2 > 0``.
    """

    s_max: float
    c1: float = 0.0
    c2: float = 0.0

    def __add__(self, other: DualBound) -> DualBound:
        """The bound of the sum of two conjugates at the same ``U`` (a sum of parts)."""
        return DualBound(min(self.s_max, other.s_max), self.c1 + other.c1, self.c2 + other.c2)


def norm_bound(alpha: float, dual_norm: float) -> DualBound:
    """:class:`DualBound` of ``alpha Omega`` at ``G`` with ``Omega^*(G) = dual_norm``:
    ``s_max = alpha / dual_norm`` (``inf`` when ``dual_norm = 0``; ``0`` when ``alpha = 0``
    and ``G != 0``)."""
    dual_norm = float(dual_norm)
    if not dual_norm > 0:
        return DualBound(float("inf"))
    return DualBound(float(alpha) / dual_norm)


def gauge_by_prox(penalty: Penalty, G: np.ndarray, rtol: float = 1e-12) -> float:
    """``gamma(G) = min {t >= 0 : G in t * dh(0)}`` for a positively homogeneous penalty ``h``
    with an exact prox, by bisection: ``prox_{t h}(G) = 0`` exactly when ``G in t dh(0)``.

    The returned value is an upper end of the bisection interval (a relative ``rtol``), so
    that ``-G / gamma`` is dual feasible. ``0`` when ``G = 0``.
    """
    G = np.asarray(G, dtype=np.float64)
    if not G.size or not np.any(G):
        return 0.0

    def zero_at(t: float) -> bool:
        return not np.any(penalty.prox(G, t))

    hi = 1.0
    if zero_at(hi):
        lo = 0.0
        while True:  # shrink until prox is non-zero
            t = hi * 0.5
            if t < 1e-300 or not zero_at(t):
                lo = t
                break
            hi = t
    else:
        lo = hi
        while not zero_at(hi):
            lo, hi = hi, hi * 2.0
            if hi > 1e300:
                return float("inf")
    while hi - lo > rtol * hi:
        mid = 0.5 * (lo + hi)
        if zero_at(mid):
            hi = mid
        else:
            lo = mid
    return hi


def check_strength(value, name: str = "alpha") -> float:
    """``value`` as a float, after checking that it is a finite number ``>= 0``."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}.") from None
    if not np.isfinite(v) or v < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}.")
    return v


def recalled(last: tuple | None, W: np.ndarray):
    """What a penalty cached with the last array its prox returned (``last = (array,
    what, ...)``: ``what``) when ``W`` is that array, else ``None``: the value of a prox
    output costs no second decomposition."""
    if last is not None and W.shape == last[0].shape and np.array_equal(W, last[0]):
        return last[1]
    return None


class RemembersProx:
    """A penalty that keeps the array its last prox returned with a figure of it (its value,
    its singular values: ``_last = (array, figure)``), so that evaluating the penalty there,
    as every proximal gradient iteration does, costs no second decomposition. The memory is
    a cache: it is not pickled."""

    _last: tuple | None = None

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_last"] = None  # a cache, not part of the penalty
        return state

    def _value_at(self, W: np.ndarray, fresh) -> float:
        """``0`` for an empty ``W`` or a zero ``alpha``; the remembered value when ``W`` is
        the last prox output; else ``fresh(W)``."""
        if W.size == 0 or self.alpha == 0:  # type: ignore[attr-defined]
            return 0.0
        cached = recalled(self._last, W)
        return fresh(W) if cached is None else cached


class LinearMap(ABC):
    """A linear map ``A`` from the solver's variable ``V`` to the weights ``W = A(V)``."""

    #: ``||A||^2`` (operator norm squared): multiplies the loss's Lipschitz constant.
    norm_sq: float = 1.0

    @abstractmethod
    def variable_shape(self, d: int, m: int) -> tuple[int, ...]:
        """Shape of ``V`` for ``W`` of shape ``(d, m)``."""

    @abstractmethod
    def forward(self, V: np.ndarray) -> np.ndarray:
        """``W = A(V)``."""

    @abstractmethod
    def adjoint(self, G: np.ndarray) -> np.ndarray:
        """``A^T(G)`` for ``G`` of the shape of ``W``."""


class IdentityMap(LinearMap):
    """``A(V) = V``."""

    norm_sq = 1.0

    def variable_shape(self, d: int, m: int) -> tuple[int, ...]:
        return (d, m)

    def forward(self, V: np.ndarray) -> np.ndarray:
        return V

    def adjoint(self, G: np.ndarray) -> np.ndarray:
        return G

    def __repr__(self) -> str:
        return "IdentityMap()"


class SumMap(LinearMap):
    """``A(V) = sum_i V[i]`` for ``V`` of shape ``(k, d, m)``; ``A^T(G) = [G, ..., G]``.

    ``||A||^2 = k``.
    """

    def __init__(self, k: int = 2):
        if int(k) != k or k < 1:
            raise ValueError(f"k must be an integer >= 1, got {k!r}.")
        self.k = int(k)
        self.norm_sq = float(k)

    def variable_shape(self, d: int, m: int) -> tuple[int, ...]:
        return (self.k, d, m)

    def forward(self, V: np.ndarray) -> np.ndarray:
        return V.sum(axis=0)

    def adjoint(self, G: np.ndarray) -> np.ndarray:
        return np.broadcast_to(G, (self.k, *G.shape)).copy()

    def __repr__(self) -> str:
        return f"SumMap(k={self.k})"


_IDENTITY = IdentityMap()


class Penalty(ABC):
    """A penalty ``h(V)`` with a proximal operator (base of every penalty and constraint).

    Subclasses implement :meth:`value` and :meth:`prox`, set :attr:`capabilities` to the
    optional capabilities they offer (a subset of :data:`CAPABILITIES`) and implement the
    matching methods. ``V`` has shape ``(n_features, n_tasks)`` unless :attr:`linear_map`
    says otherwise.
    """

    #: Whether ``h`` is the indicator of a closed convex set (``prox`` is the projection).
    is_constraint: ClassVar[bool] = False
    #: Whether ``h`` is convex (non-convex penalties are solved stage by stage).
    is_convex: ClassVar[bool] = True
    #: Whether :meth:`prox` is available (exact); false for penalties solved by stages only.
    has_prox: ClassVar[bool] = True
    #: The optional capabilities offered (see :data:`CAPABILITIES`).
    capabilities: ClassVar[frozenset[str]] = frozenset()
    #: Short name, used in messages.
    name: ClassVar[str] = "penalty"

    @property
    def linear_map(self) -> LinearMap:
        """The map ``A`` from the variable to ``W`` (the identity unless overridden)."""
        return _IDENTITY

    @abstractmethod
    def value(self, V: np.ndarray) -> float:
        """Return ``h(V)``."""

    @abstractmethod
    def prox(self, V: np.ndarray, step: float) -> np.ndarray:
        """Return ``argmin_U 0.5 ||U - V||_F^2 + step * h(U)`` (a new array)."""

    def prox_value(self, V: np.ndarray) -> float:
        """The value of the part :meth:`prox` handles (all of ``h``, unless the penalty has a
        ``"smooth"`` part) at a point returned by :meth:`prox` (a constraint set skips its
        feasibility check there: a projection is feasible)."""
        return self.value(V)

    def alpha_max(self, grad: np.ndarray) -> float:
        """Smallest strength ``alpha`` at which ``W = 0`` minimizes ``f(W) + h(W)``.

        Parameters
        ----------
        grad : ndarray of shape (n_features, n_tasks)
            Gradient of the loss ``f`` at ``W = 0`` (with the best intercepts).

        Returns
        -------
        float
            For ``h = alpha * Omega`` with a norm ``Omega``: the dual norm ``Omega^*(grad)``
            (``0`` is optimal iff ``-grad`` lies in ``alpha * dOmega(0)``). ``inf`` when no
            finite strength makes zero optimal (ridge, constraint sets).
        """
        return float("inf")

    # ----------------------------------------------------------------- optional capabilities
    #: ``"blocks"``: the penalties of the blocks ``V[i]`` (``h(V) = sum_i parts[i](V[i])``).
    parts: tuple[Penalty, ...] = ()

    #: ``"row_prox"``: the family of the row operators (:data:`ROW_PROX_FAMILIES`).
    row_prox_family: str = "elastic_net"

    def row_prox_params(self) -> tuple[Any, Any, Any]:
        """``"row_prox"``: the strengths ``(a, b, c)`` of the row operators of
        :attr:`row_prox_family`, each a number or an array of shape ``(n_features,)`` (one
        value per feature row); for ``"elastic_net"``, ``h(W) = sum_j a_j ||W_j.||_1 + b_j
        ||W_j.||_2 + (c_j / 2) ||W_j.||_2^2`` over the feature rows ``W_j.``."""
        raise NotImplementedError(f"{self.name} is not separable over feature rows.")

    def spectral_strength(self) -> float:
        """``"spectral_threshold"``: the strength ``a`` of ``h(W) = a ||W||_*``."""
        raise NotImplementedError(f"{self.name} is not a trace norm.")

    def remember_prox(self, out: np.ndarray, value: float,
                      singular_values: np.ndarray | None = None) -> None:
        """``"spectral_threshold"``: record that ``out``, a prox output computed outside the
        penalty, has ``||out||_* = value`` (a penalty that caches its last prox output then
        evaluates there without an SVD), and the singular values ``singular_values`` where
        the caller has them (the truncated trace norm keeps them). The default records
        nothing."""
        return None

    def task_coupling(self) -> np.ndarray:
        """``"task_coupling"``: the symmetric positive semi-definite ``(n_tasks, n_tasks)``
        matrix ``K`` of the smooth part ``g(W) = tr(W K W^T) / 2`` (gradient ``W K``)."""
        raise NotImplementedError(f"{self.name} has no task coupling.")

    def stage_penalty(self, W: np.ndarray) -> Penalty:
        """``"stages"``: the penalty of the next stage, a majorant of ``h`` (up to a constant)
        that is tight at ``W``; its prox is exact."""
        raise NotImplementedError(f"{self.name} has no stage penalty.")

    def stage_key(self, W: np.ndarray) -> object:
        """``"stages"``: a hashable summary of :meth:`stage_penalty` at ``W``; equal keys mean
        equal stage problems (the multi-stage method stops when the key repeats)."""
        raise NotImplementedError(f"{self.name} has no stage penalty.")

    def smooth_value_and_grad(self, V: np.ndarray) -> tuple[float, np.ndarray]:
        """``"smooth"``: ``(g(V), grad g(V))`` of the smooth part ``g`` of ``h = g + r``."""
        raise NotImplementedError(f"{self.name} has no smooth part.")

    def smooth_lipschitz(self) -> float:
        """``"smooth"``: a Lipschitz constant of ``grad g``."""
        raise NotImplementedError(f"{self.name} has no smooth part.")

    def convex_majorant(self, W: np.ndarray) -> Penalty:
        """``"majorant"``: a convex penalty majorizing this one up to a constant, tight at
        ``W``, with an exact prox."""
        raise NotImplementedError(f"{self.name} has no convex majorant.")

    # ---------------------------------------------------------- "blockwise" (over task blocks)
    # The task columns of V are split into blocks V_k held apart. The prox is computed as
    #   S = combine_stats over k of block_stats(V_k)           (a small reduction)
    #   plan, value = block_plan(S, step)                       (on the client)
    #   U_k = block_prox(V_k, plan, step)                       (on each block)
    #   h(U) = value + sum_k block_value(U_k, plan).
    # The defaults below are exact for penalties separable over tasks (l1, l2 over columns,
    # ridge, per-task balls): nothing is combined and each block is its own prox.
    def block_stats(self, V: np.ndarray) -> Any:
        """``"blockwise"``: what the block ``V`` (some task columns of the prox input, in the
        variable's shape) contributes to the reduction; ``None`` when nothing is needed."""
        return None

    def combine_stats(self, a: Any, b: Any) -> Any:
        """``"blockwise"``: combine two reductions (associative; ``None`` is the neutral
        element). The default keeps the larger of two numbers (the ``alpha_max`` reduction of
        separable penalties)."""
        if a is None:
            return b
        if b is None:
            return a
        return max(a, b)

    def block_plan(self, stats: Any, step: float) -> tuple[Any, float]:
        """``"blockwise"``: ``(plan, value)`` from the combined reduction: what every block
        needs to finish its prox (``None`` when nothing), and the part of ``h`` at the prox
        output known from the reduction alone (``0.0`` when it is a sum over blocks)."""
        return None, 0.0

    def block_prox(self, V: np.ndarray, plan: Any, step: float) -> np.ndarray:
        """``"blockwise"``: the block of ``prox_{step h}`` of the whole variable at the
        columns of ``V``."""
        return self.prox(V, step)

    def block_value(self, U: np.ndarray, plan: Any) -> float:
        """``"blockwise"``: the share of the block ``U`` (of a prox output) in ``h``, the part
        not returned by :meth:`block_plan`."""
        return self.prox_value(U)

    def block_alpha_stats(self, grad: np.ndarray) -> Any:
        """``"blockwise"``: what the block ``grad`` (task columns of the loss gradient at
        zero) contributes to ``alpha_max`` (combined by :meth:`combine_stats`). The default,
        for separable norms, is the block's own ``alpha_max`` (the dual norm is a max)."""
        return self.alpha_max(grad)

    def alpha_max_from_stats(self, stats: Any) -> float:
        """``"blockwise"``: :meth:`alpha_max` from the combined :meth:`block_alpha_stats`."""
        return float(stats) if stats is not None else 0.0

    def dual_bound(self, G: np.ndarray) -> DualBound | None:
        """``"dual"``: the conjugate of the prox part ``r`` along ``U = -s G``
        (:class:`DualBound`), for the certified duality gap
        (:func:`multitask.solvers.certificate.duality_gap`); ``None`` where the penalty has no
        computable conjugate (non-convex penalties)."""
        return None

    def lp_constraints(self, d: int, m: int):
        """``"lp"``: the set as linear inequalities ``A_w vec(W) + A_u u <= c``, ``u >= 0``.

        Returns ``(A_w, A_u, c, n_aux)`` with sparse ``A_w`` of shape ``(k, d m)`` (``vec`` in
        row-major order of ``W``), ``A_u`` ``(k, n_aux)`` and ``c`` ``(k,)``.
        """
        raise NotImplementedError(f"{self.name} is not polyhedral.")

    def lp_cost(self, d: int, m: int) -> np.ndarray | None:
        """``"lp"``: the objective's coefficients ``k`` on the auxiliary variables ``u`` of
        :meth:`lp_constraints`, shape ``(n_aux,)``: a polyhedral norm ``h(W) = min {k^T u :
        A_w vec(W) + A_u u <= c, u >= 0}`` (``alpha`` on bounds ``u >= |W|``); ``None`` for a
        set (``h`` its indicator, no cost)."""
        return None

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self._repr_params().items())
        return f"{type(self).__name__}({params})"

    def _repr_params(self) -> dict:
        return {}


class Constraint(Penalty):
    """The indicator of a closed convex set ``{W : Omega(W) <= radius}``.

    :meth:`prox` is the Euclidean projection :meth:`project`; :meth:`value` is 0 on the set
    and ``inf`` outside (with a relative slack of ``1e-9`` for rounding); :meth:`norm` returns
    ``Omega(W)``.
    """

    is_constraint = True

    def __init__(self, radius):
        self.radius = radius

    def _repr_params(self) -> dict:
        return {"radius": self.radius}

    @abstractmethod
    def norm(self, W: np.ndarray) -> float:
        """Return ``Omega(W)``."""

    @abstractmethod
    def project(self, V: np.ndarray) -> np.ndarray:
        """Return the Euclidean projection of ``V`` onto the set (a new array)."""

    def support(self, G: np.ndarray) -> float:
        """``sigma(G) = max_{W in set} <G, W>`` (the conjugate of the indicator: ``radius
        Omega^*(G)`` for a ball); subclasses implement it for the certificate."""
        raise NotImplementedError

    def dual_bound(self, G: np.ndarray) -> DualBound | None:
        """The indicator's conjugate is the support function, positively homogeneous and
        finite: ``r^*(-s G) = s sigma(-G) = s sigma(G)`` (symmetric sets), ``s_max = inf``."""
        try:
            c1 = float(self.support(G))
        except NotImplementedError:
            return None
        return DualBound(float("inf"), c1, 0.0)

    def value(self, V: np.ndarray) -> float:
        return 0.0 if self.norm(V) <= float(np.max(self.radius)) * (1 + 1e-9) + 1e-12 else np.inf

    def prox(self, V: np.ndarray, step: float) -> np.ndarray:
        return self.project(V)

    def prox_value(self, V: np.ndarray) -> float:
        return 0.0
