"""Capped trace norm and the penalties of its multi-stage (RAMUSA) solver.

``W`` has shape ``(n_features, n_tasks)``; ``sigma_1(W) >= ... >= sigma_R(W)``,
``R = min(n_features, n_tasks)``. Reference: L. Han and Y. Zhang, "Multi-stage multi-task
learning with reduced rank", AAAI 2016.

* :class:`CappedTraceNorm`: ``alpha * sum_i min(sigma_i(W), tau)`` (non-convex; value only).
* :class:`TruncatedTraceNorm`: ``alpha * sum_{i > r} sigma_i(W)``, the stage penalty
  ``alpha * ||W||_{r-}``; its prox is the partial singular value thresholding :func:`psvt`
  (a global minimizer although the penalty is not convex).
* :class:`LinearizedTruncatedTraceNorm`: ``alpha * ||W||_* - alpha * <P, W>`` with
  ``P = U_r V_r^T`` the top-``r`` singular vectors of a reference point: the convex majorant
  (up to a constant) of ``alpha * ||W||_{r-}`` used by the difference-of-convex stage solver;
  prox ``svt(V + step * alpha * P, step * alpha)``.

The multi-stage argument rests on the inequality, for every ``W`` and every ``0 <= r <= R``,
``sum_i min(sigma_i, tau) <= r * tau + ||W||_{r-}`` with equality when
``r = #{i : sigma_i(W) >= tau}`` (:func:`capped_rank`).
"""

from __future__ import annotations

import numpy as np

from multitask.penalties.base import DualBound, Penalty, RemembersProx, check_strength, recalled
from multitask.penalties.norms import TraceNorm
from multitask.penalties.prox import safe_svd, spectral_norm, spectral_shrink

__all__ = [
    "CappedTraceNorm",
    "LinearizedTruncatedTraceNorm",
    "TruncatedTraceNorm",
    "capped_rank",
    "psvt",
    "singular_values",
    "top_singular_projector",
]


def singular_values(W: np.ndarray) -> np.ndarray:
    """Singular values of ``W`` in non-increasing order, shape ``(min(d, m),)``."""
    W = np.asarray(W, dtype=np.float64)
    if W.size == 0:
        return np.zeros(0)
    try:
        return np.linalg.svd(W, compute_uv=False)
    except np.linalg.LinAlgError:
        return safe_svd(W)[1]


def capped_rank(W_or_s: np.ndarray, tau: float) -> int:
    """``r = #{i : sigma_i(W) >= tau}``: how many singular values the cap reaches.

    Parameters
    ----------
    W_or_s : ndarray of shape (d, m), or 1-D singular values
    tau : float
        Threshold (``tau = 0`` counts all ``R`` values, ``tau = inf`` none).
    """
    s = W_or_s if np.ndim(W_or_s) == 1 else singular_values(W_or_s)
    return int(np.count_nonzero(np.asarray(s) >= tau))


def psvt(V: np.ndarray, thresh: float, rank: int, return_rank: bool = False):
    """Partial singular value thresholding: the prox of ``thresh * ||.||_{rank-}``.

    With ``V = U diag(s) Vt`` (thin SVD, ``s`` non-increasing)::

        psvt(V, mu, r) = U diag(s_1, ..., s_r, (s_{r+1} - mu)_+, ..., (s_R - mu)_+) Vt
                       = argmin_X 0.5 ||X - V||_F^2 + mu * sum_{i > r} sigma_i(X)

    (a global minimizer, by von Neumann's trace inequality; Oh et al., "Partial sum
    minimization of singular values in robust PCA", ICCV 2013). ``rank = 0`` is singular
    value thresholding (:func:`~multitask.penalties.svt`); ``rank >= R`` returns a copy of
    ``V``.

    Parameters
    ----------
    V : ndarray of shape (d, m)
    thresh : float
        ``mu >= 0``.
    rank : int
        Number ``r >= 0`` of leading singular values left untouched.
    return_rank : bool
        Also return the rank of the result.

    Returns
    -------
    X : ndarray of shape (d, m)
        A new array.
    """
    out, s_out = _psvt_with_values(V, thresh, rank)
    if return_rank:
        return out, int(np.count_nonzero(s_out))
    return out


def _psvt_with_values(V: np.ndarray, thresh: float, rank: int):
    """``(psvt(V, thresh, rank), its singular values)`` (non-increasing; the positive ones
    where ``rank < min(d, m)``), through :func:`~multitask.penalties.prox.spectral_shrink`:
    the eigendecomposition of the small Gram matrix where it resolves every kept singular
    value, else a QR factor or the SVD."""
    V = np.asarray(V, dtype=np.float64)
    if rank < 0:
        raise ValueError(f"rank must be >= 0, got {rank}.")
    if V.size == 0:
        return V.copy(), np.zeros(0)
    if rank >= min(V.shape):
        return V.copy(), singular_values(V)

    def shrink(s: np.ndarray) -> np.ndarray:
        out = np.array(s, dtype=np.float64, copy=True)
        out[rank:] = np.maximum(s[rank:] - thresh, 0.0)
        return out

    return spectral_shrink(V, shrink)


def top_singular_projector(W: np.ndarray, rank: int) -> np.ndarray:
    """``P = U_r V_r^T`` from the top-``rank`` singular vectors of ``W``, shape ``(d, m)``.

    ``<P, W> = sum_{i <= r} sigma_i(W) = ||W||_{r+}`` (Ky Fan norm) and ``<P, Z> <= ||Z||_{r+}``
    for every ``Z`` (Lemma 1 of Han & Zhang). When ``rank`` exceeds the rank of ``W`` the
    vectors of zero singular values are an arbitrary (valid) choice.
    """
    W = np.asarray(W, dtype=np.float64)
    if rank <= 0 or W.size == 0:
        return np.zeros_like(W)
    U, _, Vt = safe_svd(W)
    r = min(rank, U.shape[1])
    return U[:, :r] @ Vt[:r]


class _SingularValueMemory:
    """The last array whose singular values a capped trace norm or one of its stage penalties
    computed or was given, with them: shared by the penalty and the stage penalties it makes,
    so that the capped norm's value and stage key at a stage's point (a compiled ADMM
    output, whose singular values the kernel returns) cost no second decomposition."""

    __slots__ = ("last",)

    def __init__(self) -> None:
        self.last: tuple | None = None  # (array, singular values)


class _SpectralPenalty(RemembersProx, Penalty):
    """Caches the singular values of the last array it decomposed or its last prox output, so
    ``value`` after ``prox`` (as every proximal gradient iteration does) costs no second SVD;
    ``memory``: a :class:`_SingularValueMemory` shared with the penalty that made this one."""

    def __init__(self, alpha: float, memory: _SingularValueMemory | None = None):
        self.alpha = check_strength(alpha)
        self._last: tuple | None = None  # (array, singular values)
        self._memory = memory

    def __getstate__(self):
        state = super().__getstate__()
        state["_memory"] = None  # a cache, not part of the penalty
        return state

    def _remember(self, out: np.ndarray, s: np.ndarray, copy: bool = True) -> None:
        self._last = (out.copy() if copy else out, s)
        if self._memory is not None:
            self._memory.last = self._last

    def _singular_values(self, W: np.ndarray) -> np.ndarray:
        cached = recalled(self._last, W)
        if cached is None and self._memory is not None:
            cached = recalled(self._memory.last, W)
        if cached is None:
            cached = singular_values(W)
            self._remember(np.asarray(W, dtype=np.float64), cached)
        return cached


class CappedTraceNorm(_SpectralPenalty):
    """``alpha * sum_i min(sigma_i(W), tau)``: the capped trace norm (non-convex).

    ``tau = inf`` is the trace norm, ``tau = 0`` the zero penalty. It has no simple prox; it
    offers the ``"stages"`` capability instead: with ``r = #{i : sigma_i(W) >= tau}``,

        sum_i min(sigma_i, tau) <= r * tau + ||W||_{r-}   for every W, equality when r = r(W),

    so the stage penalty ``alpha ||.||_{r(W)-}`` (:class:`TruncatedTraceNorm`) majorizes it up
    to a constant and is tight at ``W`` (Han & Zhang, "Multi-stage multi-task learning with
    reduced rank", AAAI 2016). Solved by :class:`multitask.solvers.Multistage`.

    Parameters
    ----------
    alpha : float
        ``>= 0``.
    tau : float
        Cap ``>= 0`` (``inf`` allowed).
    """

    name = "capped_trace"
    is_convex = False
    has_prox = False
    capabilities = frozenset({"stages", "low_rank", "row_monotone"})

    def __init__(self, alpha: float, tau: float):
        super().__init__(alpha, _SingularValueMemory())
        self.tau = float(tau)
        if not self.tau >= 0:  # NaN fails too; inf is allowed (the trace norm)
            raise ValueError(f"tau must be a number >= 0 (inf allowed), got {tau!r}.")

    def _repr_params(self) -> dict:
        return {"alpha": self.alpha, "tau": self.tau}

    def value(self, W):
        s = self._singular_values(W)
        return self.alpha * float(np.minimum(s, self.tau).sum())

    def prox(self, V, step):
        raise NotImplementedError(
            "CappedTraceNorm has no prox: solve it stage by stage (multitask.solvers."
            "Multistage), whose stages use TruncatedTraceNorm."
        )

    def alpha_max(self, grad):
        """``||G||_2``: the first stage (the trace norm) gives ``W = 0`` from there on, and
        then no singular value reaches ``tau`` (for ``tau > 0``)."""
        return spectral_norm(grad) if grad.size else 0.0

    def stage_key(self, W):
        return capped_rank(self._singular_values(W), self.tau)

    def stage_penalty(self, W):
        """``alpha ||.||_{r-}`` with ``r`` the :meth:`stage_key` of ``W``: the trace norm
        :class:`~multitask.penalties.norms.TraceNorm` when ``r = 0`` (the first stage from
        ``W = 0``: a convex problem, with a certified duality gap and the trace norm's compiled
        ADMM step), else :class:`TruncatedTraceNorm`."""
        r = self.stage_key(W)
        return (TraceNorm(self.alpha) if r == 0
                else TruncatedTraceNorm(self.alpha, r, memory=self._memory))

    def stage_offset(self, W) -> float:
        """``alpha * r * tau``: the constant by which the stage penalty at ``W`` differs from
        the capped norm at ``W``."""
        return self.alpha * self.stage_key(W) * self.tau if np.isfinite(self.tau) else 0.0


class TruncatedTraceNorm(_SpectralPenalty):
    """``alpha * ||W||_{r-} = alpha * sum_{i > r} sigma_i(W)``: the stage penalty of RAMUSA.

    Non-convex for ``r >= 1``; its prox :func:`psvt` is exact, so proximal gradient on
    ``loss + alpha ||W||_{r-}`` decreases the objective monotonically (without momentum).
    :meth:`convex_majorant` gives the convex majorant of the difference-of-convex method.

    Parameters
    ----------
    alpha : float
        ``>= 0``.
    rank : int
        ``r >= 0``: the number of leading singular values left unpenalized.
    """

    name = "truncated_trace"
    is_convex = False
    #: ``"spectral_threshold"`` with :attr:`spectral_kept` leading singular values left
    #: untouched: the compiled ADMM step of the trace norm takes the partial thresholding
    #: too (:mod:`multitask.solvers._admm_trace_numba`).
    capabilities = frozenset({"majorant", "low_rank", "spectral_threshold"})

    def __init__(self, alpha: float, rank: int, *, memory: _SingularValueMemory | None = None):
        super().__init__(alpha, memory)
        if int(rank) != rank or rank < 0:
            raise ValueError(f"rank must be an integer >= 0, got {rank!r}.")
        self.rank = int(rank)
        self._tail: tuple | None = None  # (array, sum_{i > r} sigma_i) of a compiled prox

    def __getstate__(self):
        state = super().__getstate__()
        state["_tail"] = None  # a cache, not part of the penalty
        return state

    def _repr_params(self) -> dict:
        return {"alpha": self.alpha, "rank": self.rank}

    @property
    def spectral_kept(self) -> int:
        """``r``: the leading singular values the prox leaves untouched."""
        return self.rank

    def spectral_strength(self) -> float:
        """``alpha``: the threshold per unit step of the other singular values."""
        return self.alpha

    def remember_prox(self, out: np.ndarray, value: float,
                      singular_values: np.ndarray | None = None) -> None:
        """Record that ``out`` (a prox output computed elsewhere: the compiled ADMM step) has
        ``sum_{i > r} sigma_i(out) = value`` (and the singular values ``singular_values``,
        non-increasing, when given), so that :meth:`value` there, and the capped norm's value
        and stage key, cost no SVD."""
        kept = np.array(out, dtype=np.float64, copy=True)
        self._tail = (kept, float(value))
        if singular_values is not None:
            self._remember(kept, np.asarray(singular_values, dtype=np.float64), copy=False)

    def value(self, W):
        tail = recalled(self._tail, W)
        if tail is not None:
            return self.alpha * tail
        s = self._singular_values(W)
        return self.alpha * float(s[self.rank:].sum())

    def prox(self, V, step):
        out, s = _psvt_with_values(V, step * self.alpha, self.rank)
        self._remember(out, s)
        return out

    def convex_majorant(self, W: np.ndarray) -> LinearizedTruncatedTraceNorm:
        """``alpha (||.||_* - <U_r V_r^T, .>)`` with the top-``r`` singular vectors of ``W``:
        a convex majorant of this penalty, tight at ``W`` (the linearization of the concave
        part ``-alpha ||.||_{r+}``)."""
        return LinearizedTruncatedTraceNorm(self.alpha, top_singular_projector(W, self.rank))


class LinearizedTruncatedTraceNorm(_SpectralPenalty):
    """``alpha * ||W||_* - alpha * <P, W>``: the convex inner problem of the DC stage solver.

    With ``P = U_r V_r^T`` from the top-``r`` singular vectors of the current iterate ``W_t``,
    ``||W||_* - <P, W> >= ||W||_{r-}`` for all ``W`` with equality at ``W_t``: minimizing
    ``loss + alpha * (||W||_* - <P, W>)`` (Eq. 4 of Han & Zhang) is one step of the
    difference-of-convex (alternating) Algorithm 2. The prox is

        prox(V, step) = svt(V + step * alpha * P, step * alpha).

    Parameters
    ----------
    alpha : float
        ``>= 0``.
    P : ndarray of shape (d, m)
        The linear term's matrix (any matrix works; the DC solver passes ``U_r V_r^T``).
    """

    name = "linearized_truncated_trace"
    is_convex = True
    #: Its conjugate is the indicator of a shifted ball: the ray's bound is not homogeneous.
    dual_kind = "shifted"

    def __init__(self, alpha: float, P: np.ndarray):
        super().__init__(alpha)
        self.P = np.asarray(P, dtype=np.float64)

    def _repr_params(self) -> dict:
        return {"alpha": self.alpha, "P.shape": self.P.shape}

    def value(self, W):
        s = self._singular_values(W)
        return self.alpha * (float(s.sum()) - float(np.vdot(self.P, W)))

    def prox(self, V, step):
        mu = step * self.alpha
        out, s = _psvt_with_values(V + mu * self.P, mu, 0)
        self._remember(out, s)
        return out

    def dual_bound(self, G):
        """``h^*(U)`` is the indicator of ``{||U + alpha P||_2 <= alpha}`` (a shifted ball),
        so the ray ``U = -s G`` is feasible on an interval ``[0, s_max]`` (``s = 0`` is:
        ``||P||_2 <= 1``), found by bisection on ``[0, 1]`` (``s_max = 1`` when feasible)."""
        G = np.asarray(G, dtype=np.float64)
        a = self.alpha
        if not G.size or not np.any(G):
            return DualBound(float("inf"))

        def feasible(s: float) -> bool:
            return float(np.linalg.norm(a * self.P - s * G, 2)) <= a * (1.0 + 1e-12)

        if feasible(1.0):
            return DualBound(1.0)
        if not feasible(0.0):
            return DualBound(0.0)
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if feasible(mid) else (lo, mid)
        return DualBound(lo)
