"""New tasks after fit: what each penalty family hands a task it has not seen.

A model fitted on ``m`` tasks has learned a structure: a subspace, a support, a mean task,
clusters, a task covariance. A new task ``w`` (one column, ``n`` rows) is then learned alone::

    min_{w, b}  (1 / n) sum_i ell(y_i, x_i^T w + b) + c * [(alpha_l2 / 2) ||w||^2 + R(w)]

with the fitted columns held fixed. ``R`` is the *new-task prior* of the penalty at the fitted
``W`` (:func:`new_task_prior`): the fitted model's penalty as a function of the new column
alone, ``h([W, w]) - h([W, 0])`` (the block-coordinate step of the fitted objective), or a
convex majorant of it tight at ``w = 0`` where that conditional has no cheap prox (the
variational forms of the trace and l2,1 norms). ``c`` scales the strength (see
:meth:`multitask.estimators.base.MultiTaskEstimator.fit_new_tasks`). The rules:

================================  ==========================================================
penalty (models)                  new-task prior ``R(w)`` at the fitted ``W``
================================  ==========================================================
``Ridge`` (independent ridge)     ``(alpha / 2) ||w||^2`` (exact: the tasks are independent)
``L1`` (independent lasso)        ``alpha ||w||_1`` (exact)
``ColumnL2``                      ``alpha ||w||_2`` (exact)
``L21`` (l2,1)                    ``(alpha / 2) sum_j w_j^2 / ||W_j.||`` on the shared support,
                                  ``w_j = 0`` off it (the variational form
                                  ``||W||_{2,1} = min_theta 1/2 sum_j ||W_j.||^2 / theta_j +
                                  theta_j`` at the fitted ``theta_j = ||W_j.||``)
``TraceNorm``, ``CappedTraceNorm``  ``(alpha / 2) w^T D^+ w`` with ``w`` in the learned subspace
                                  ``range(W)``, ``D = (W W^T)^{1/2}`` (the variational form
                                  ``||W||_* = min_D 1/2 tr(W^T D^{-1} W) + 1/2 tr D``; for the
                                  capped norm, its difference-of-convex majorant at the fitted
                                  point, whose new-column part is the trace norm's)
``TaskRelationship`` (MTRL)       ``(alpha / 2) ||W||_* w^T D^+ w`` in ``range(W)``: the
                                  learned task covariance ``Omega = (W^T W)^{1/2} / ||W||_*``
                                  read on the feature side, ``||W||_*^2 = min_{tr D = 1}
                                  tr(W^T D^{-1} W)``
``SubspaceRelaxation`` (cASO)     ``alpha eta (1 + eta) w^T (eta I + M)^{-1} w`` with the fitted
                                  feature structure ``M`` (exact for that ``M``)
``ClusterRelaxation`` (CMTL)      the nearest cluster ``c`` (the one giving the lowest objective):
                                  ``alpha [eta ||w||^2 + n_c / (n_c + 1) ||w - w_c||^2]`` with the
                                  cluster mean ``w_c`` (exact at ``M = F F^T`` of the clusters)
``MeanRegularization``            ``alpha m / (m + 1) ||w - w_bar||^2`` (exact)
``GraphRegularization``           ``alpha dbar ||w - w_bar||^2 + alpha_l1 ||w||_1``: the new task
                                  joined to every fitted task by edges of weight ``dbar / m``,
                                  ``dbar = tr(L) / m`` the mean degree of the fitted graph
``L1InfNorm``                     ``alpha sum_j (|w_j| - max_t |W_jt|)_+`` (exact: free up to the
                                  largest weight a fitted task gives the feature)
``L1InfBall``                     ``|w_j| <= max_t |W_jt|`` (exact when the ball binds)
``CappedL1`` (MSMTFL)             ``alpha sum_j [||W_j.||_1 < theta] |w_j|`` (its stage majorant:
                                  the capped features are free, the others lasso-penalized)
``RowWeightedL1``                 ``sum_j c_j |w_j|`` (exact)
``ColumnL1Balls``, ``ColumnL2Balls``  the same ball (mean radius when radii differ per task)
``TraceBall`` (sparse + low rank)  ``(lam / 2) w^T D^+ w`` in ``range(W)``, ``lam`` the ball's
                                  Lagrange multiplier at the fit (passed as ``multiplier``)
``SumOfParts`` (dirty, rMTFL,     ``w = sum_i w_i`` with each part's prior on its fitted part
sparse + low rank, robust MTL)
================================  ==========================================================

A penalty with no rule (the temporal ones, whose new task has no place in the time order)
raises ``NotImplementedError``. A new family registers its rule with
``@new_task_prior.register``.

The priors are penalties on the weight columns of the new tasks, ``(n_features, n_new)``,
separable over the columns (each new task is independent of the others), with exact proxes,
so that any solver of the library solves the new-task problem; :class:`GaussianPrior` also
has the closed form the squared loss needs.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from functools import singledispatch
from typing import Any

import numpy as np

from multitask.penalties.balls import ColumnL1Balls, ColumnL2Balls, TraceBall
from multitask.penalties.base import Constraint, Penalty
from multitask.penalties.capped_l1 import CappedL1, RowWeightedL1
from multitask.penalties.capped_trace import CappedTraceNorm
from multitask.penalties.clustered import (
    ClusterRelaxation,
    SubspaceRelaxation,
    leftover_eigenvalue,
    structure_eigenvalues,
)
from multitask.penalties.composite import SumOfParts
from multitask.penalties.dirty import L1InfNorm
from multitask.penalties.graph import GraphRegularization, MeanRegularization
from multitask.penalties.l1inf import L1InfBall
from multitask.penalties.norms import L1, L21, ColumnL2, NoPenalty, Ridge, TraceNorm
from multitask.penalties.prox import safe_svd
from multitask.penalties.relationship import TaskRelationship
from multitask.penalties.temporal import FusedSparseGroupLasso, TemporalGroupLasso

__all__ = [
    "BallPrior",
    "ColumnNormPrior",
    "ColumnPrior",
    "ElementwisePrior",
    "GaussianPrior",
    "PriorChoice",
    "SumOfPriors",
    "learned_subspace",
    "new_task_prior",
]

#: Singular values (or row norms) below this fraction of the largest count as zero when a
#: subspace or a support is read from the fitted weights.
RANK_RTOL = 1e-9
#: The same cut for singular values read from a Gram matrix's eigenvalues (whose relative
#: accuracy is ``eps``, so ``sqrt(eps)`` for the singular values).
RANK_RTOL_GRAM = 1e-7
#: Relative slack of the subspace check of :meth:`GaussianPrior.value`.
_SUBSPACE_RTOL = 1e-8


def _check_scale(c) -> np.ndarray:
    """``c`` as a float array (a number, or one number per column), finite and ``>= 0``."""
    arr = np.asarray(c, dtype=np.float64)
    if arr.ndim > 1 or not (np.all(np.isfinite(arr)) and np.all(arr >= 0)):
        raise ValueError(f"The strength scale must be finite numbers >= 0 (one, or one per "
                         f"column), got {c!r}.")
    return arr


class ColumnPrior(Penalty):
    """A penalty on the columns of new tasks, separable over them (base class).

    ``R(W) = sum_t s_t r(w_t)`` for ``W`` of shape ``(n_features, n_new)``: the same prior
    ``r`` for every column, times a strength scale ``s_t`` (:attr:`scale`, one number or one
    per column; :meth:`scaled` multiplies it). Constraint sets ignore the scale.
    """

    name = "column_prior"
    #: The intercept of the new task when the structure fixes it (the pooled model); ``None``:
    #: fitted from the task's rows, unpenalized, as in ``fit``.
    fixed_intercept: float | None = None
    #: ``s``: the strength multiplier, one number or one per column.
    scale: float | np.ndarray = 1.0

    def scaled(self, c) -> ColumnPrior:
        """A copy with :attr:`scale` multiplied by ``c >= 0`` (a number, or one per column)."""
        new = copy.copy(self)
        new.scale = _check_scale(c) * np.asarray(self.scale, dtype=np.float64)
        return new

    def _s(self, V: np.ndarray):
        """The scale, shaped to broadcast over the columns of ``V``."""
        s = np.asarray(self.scale, dtype=np.float64)
        if s.ndim == 0:
            return s
        if s.size != np.shape(V)[-1]:
            raise ValueError(f"The prior has {s.size} column scales for {np.shape(V)[-1]} "
                             "columns.")
        return s[None, :]


class GaussianPrior(ColumnPrior):
    """``r(w) = 1/2 (w - mu)^T P (w - mu) + offset``, with ``w - mu`` in ``range(B)`` when
    ``complement = inf``.

    ``P = B diag(precision) B^T + complement (I - B B^T)`` for an orthonormal basis ``B``
    (``(d, k)``, possibly ``k = 0``). ``complement = inf`` confines the new column to the
    affine subspace ``mu + range(B)`` (a learned subspace or support); ``complement = 0``
    leaves the rest free. The prox of ``s r`` is exact::

        prox(v) = mu + B diag(1 / (1 + step s p)) B^T delta + (I - B B^T) delta / (1 + step s q)

    with ``delta = v - mu`` and ``q = complement`` (the last term is 0 for ``q = inf``).

    Parameters
    ----------
    mean : array-like of shape (d,)
        ``mu``.
    basis : array-like of shape (d, k), optional
        ``B``, orthonormal columns (default: none, ``k = 0``).
    precision : array-like of shape (k,), optional
        ``p >= 0`` along the columns of ``B``.
    complement : float, default=inf
        ``q >= 0`` (or ``inf``) on the orthogonal complement of ``range(B)``.
    offset : float, default=0.0
        A constant added to ``r`` (it matters only when priors are compared, see
        :class:`PriorChoice`).
    fixed_intercept : float, optional
        See :attr:`ColumnPrior.fixed_intercept`.
    """

    name = "gaussian_prior"

    def __init__(self, mean, basis=None, precision=None, complement: float = np.inf,
                 offset: float = 0.0, fixed_intercept: float | None = None):
        self.mean = np.asarray(mean, dtype=np.float64).ravel().copy()
        d = self.mean.size
        self.basis = (np.zeros((d, 0)) if basis is None
                      else np.asarray(basis, dtype=np.float64).reshape(d, -1).copy())
        k = self.basis.shape[1]
        self.precision = (np.zeros(k) if precision is None
                          else np.asarray(precision, dtype=np.float64).ravel().copy())
        if self.precision.size != k:
            raise ValueError(f"precision has {self.precision.size} values for a basis of {k} "
                             "vectors.")
        if not (np.all(np.isfinite(self.precision)) and np.all(self.precision >= 0)):
            raise ValueError("precision must hold finite numbers >= 0.")
        self.complement = float(complement)
        if np.isnan(self.complement) or self.complement < 0:
            raise ValueError(f"complement must be >= 0 (inf allowed), got {complement!r}.")
        self.offset = float(offset)
        self.fixed_intercept = None if fixed_intercept is None else float(fixed_intercept)
        if not np.all(np.isfinite(self.mean)):
            raise ValueError("mean must hold finite numbers.")

    def _repr_params(self) -> dict:
        return {"d": self.mean.size, "k": self.basis.shape[1], "complement": self.complement}

    @property
    def confined(self) -> bool:
        """Whether ``w - mu`` must lie in ``range(B)``."""
        return bool(np.isinf(self.complement))

    def precision_matrix(self) -> np.ndarray:
        """``P`` as a ``(d, d)`` matrix (the complement term left out when it is ``inf``;
        :attr:`scale` not applied)."""
        B = self.basis
        P = (B * self.precision) @ B.T
        if not self.confined and self.complement:
            P = P + self.complement * (np.eye(B.shape[0]) - B @ B.T)
        return 0.5 * (P + P.T)

    def standard_form(self, alpha_l2: float = 0.0
                      ) -> tuple[np.ndarray, float | np.ndarray] | None:
        """``(m0, T)``: the prior plus a ridge term as a plain ridge in new coordinates.

        With ``Q = alpha_l2 I + P`` positive definite on the unknowns, every admissible ``w``
        is ``w = m0 + T v`` for one ``v`` and::

            r(w) + (alpha_l2 / 2) ||w||^2 = ||v||^2 / 2 + const

        (:attr:`scale` not applied). Confined: ``v`` has ``k`` entries,
        ``T = B diag(alpha_l2 + p)^{-1/2}`` and ``m0 = mu - alpha_l2 B diag(alpha_l2 + p)^{-1}
        B^T mu``. Otherwise ``v`` has ``d`` entries, ``T = Q^{-1/2} = B diag(alpha_l2 +
        p)^{-1/2} B^T + (alpha_l2 + q)^{-1/2} (I - B B^T)`` (the number
        ``(alpha_l2 + q)^{-1/2}`` when ``k = 0``: ``T`` is then that multiple of the
        identity) and ``m0 = Q^{-1} P mu``. Computed once per ``alpha_l2`` (the prior is not
        changed after it is made).

        Returns
        -------
        (m0, T) or None
            ``None`` when ``Q`` is singular (a direction without precision, as for
            :class:`~multitask.penalties.norms.NoPenalty` with ``alpha_l2 = 0``).
        """
        cache = vars(self).setdefault("_standard_forms", {})
        key = float(alpha_l2)
        if key not in cache:
            cache[key] = self._standard_form(key)
        return cache[key]

    def _standard_form(self, a: float) -> tuple[np.ndarray, float | np.ndarray] | None:
        B, mu = self.basis, self.mean
        d, k = B.shape
        qb = a + self.precision
        if not np.all(qb > 0):
            return None
        root = 1.0 / np.sqrt(qb)
        mu_b = B.T @ mu
        if self.confined:
            return mu - B @ (a * mu_b / qb), B * root
        qc = a + self.complement
        if k < d and not qc > 0:
            return None
        m0 = B @ (self.precision / qb * mu_b)
        if k == 0:
            return m0 + self.complement / qc * mu, float(1.0 / np.sqrt(qc))
        T = (B * root) @ B.T
        if k < d:
            m0 = m0 + self.complement / qc * (mu - B @ mu_b)
            T = T + (np.eye(d) - B @ B.T) / np.sqrt(qc)
        return m0, T

    def _split(self, V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        delta = np.asarray(V, dtype=np.float64) - self.mean[:, None]
        a = self.basis.T @ delta
        return a, delta - self.basis @ a

    def _value(self, V, check: bool) -> float:
        V = np.asarray(V, dtype=np.float64)
        s = self._s(V)
        a, rest = self._split(V)
        terms = 0.5 * np.sum(self.precision[:, None] * a * a, axis=0) + self.offset
        if self.confined:
            if check:
                scale = float(np.linalg.norm(V - self.mean[:, None])) + float(
                    np.linalg.norm(self.mean)) + 1.0
                if float(np.linalg.norm(rest)) > _SUBSPACE_RTOL * scale:
                    return float("inf")
        elif self.complement:
            terms = terms + 0.5 * self.complement * np.sum(rest * rest, axis=0)
        return float(np.sum(np.broadcast_to(s, (1, V.shape[1]))[0] * terms))

    def value(self, V):
        return self._value(V, check=True)

    def prox_value(self, V):
        return self._value(V, check=False)

    def prox(self, V, step):
        s = self._s(V)
        a, rest = self._split(V)
        out = self.mean[:, None] + self.basis @ (a / (1.0 + step * s * self.precision[:, None]))
        if not self.confined:
            out = out + rest / (1.0 + step * s * self.complement)
        return out


class ElementwisePrior(ColumnPrior):
    """``r(w) = sum_j (q_j / 2) (w_j - mu_j)^2 + a_j (|w_j| - f_j)_+``.

    ``a_j = inf`` makes ``|w_j| <= f_j`` a constraint (``f_j = 0``: the feature is excluded).
    The prox of ``s r`` is exact, entry by entry: the quadratic moves ``v`` to
    ``v' = (v + t q mu) / (1 + t q)`` with ``t = step s`` and step ``t' = t / (1 + t q)``, then
    ``|u|`` is ``|v'|`` below ``f``, ``f`` up to ``f + t' a`` and ``|v'| - t' a`` beyond
    (clipped to ``f`` when ``a = inf``).

    Parameters
    ----------
    n_features : int
    mean, quad, l1, free : float or array-like of shape (n_features,)
        ``mu`` (default 0), ``q >= 0`` (default 0), ``a >= 0`` or ``inf`` (default 0), ``f >= 0``
        (default 0).
    """

    name = "elementwise_prior"

    def __init__(self, n_features: int, mean=0.0, quad=0.0, l1=0.0, free=0.0):
        d = int(n_features)

        def vec(v, what, allow_inf=False):
            out = np.broadcast_to(np.asarray(v, dtype=np.float64), (d,)).copy()
            ok = np.all(out >= 0) if what != "mean" else True
            finite = np.all(np.isfinite(out) | (allow_inf & (out == np.inf)))
            if not (ok and finite):
                raise ValueError(f"{what} must hold finite numbers"
                                 + (" >= 0" if what != "mean" else "")
                                 + (" (or inf)" if allow_inf else "") + ".")
            return out

        self.mean = vec(mean, "mean")
        self.quad = vec(quad, "quad")
        self.l1 = vec(l1, "l1", allow_inf=True)
        self.free = vec(free, "free")
        # a pure box |w_j| <= f_j is a constraint set (its prox is the projection): solvers
        # that need one (the projected subgradient method of the hinge loss) accept it
        vars(self)["is_constraint"] = bool(np.all(np.isinf(self.l1)) and not np.any(self.quad))

    def _repr_params(self) -> dict:
        return {"d": self.mean.size}

    def _terms(self, V: np.ndarray, check: bool) -> float:
        V = np.asarray(V, dtype=np.float64)
        s = np.broadcast_to(self._s(V), (1, V.shape[1]))
        excess = np.maximum(np.abs(V) - self.free[:, None], 0.0)
        box = np.isinf(self.l1)
        if check and np.any(excess[box] > 1e-9 * (1.0 + self.free[box, None])):
            return float("inf")
        val = 0.5 * (self.quad[:, None] * (V - self.mean[:, None]) ** 2)
        val[~box] += self.l1[~box, None] * excess[~box]
        return float(np.sum(s * val))

    def value(self, V):
        return self._terms(V, check=True)

    def prox_value(self, V):
        return self._terms(V, check=False)

    def prox(self, V, step):
        V = np.asarray(V, dtype=np.float64)
        t = step * self._s(V)
        sq = t * self.quad[:, None]
        v = (V + sq * self.mean[:, None]) / (1.0 + sq)
        with np.errstate(invalid="ignore"):
            lam = np.where(np.isinf(self.l1)[:, None], np.inf,
                           (t / (1.0 + sq)) * self.l1[:, None])
        r = np.abs(v)
        f = self.free[:, None]
        with np.errstate(invalid="ignore"):
            mag = np.where(r <= f, r, np.where(r <= f + lam, f, r - lam))
        return np.sign(v) * mag


class ColumnNormPrior(ColumnPrior):
    """``r(w) = alpha ||w||_2`` (a new outlier task of robust models; prox: block
    soft-thresholding of each column at ``step s alpha``)."""

    name = "column_norm_prior"

    def __init__(self, alpha: float):
        self.alpha = float(_check_scale(alpha))

    def _repr_params(self) -> dict:
        return {"alpha": self.alpha}

    def value(self, V):
        V = np.asarray(V, dtype=np.float64)
        s = np.broadcast_to(self._s(V), (1, V.shape[1]))[0]
        return self.alpha * float(np.sum(s * np.linalg.norm(V, axis=0)))

    def prox(self, V, step):
        V = np.asarray(V, dtype=np.float64)
        thresh = step * self.alpha * np.broadcast_to(self._s(V), (1, V.shape[1]))
        norms = np.linalg.norm(V, axis=0, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            factor = np.where(norms > thresh, 1.0 - thresh / np.where(norms > 0, norms, 1.0),
                              0.0)
        return V * factor


class BallPrior(ColumnPrior):
    """A per-column constraint set (``ColumnL1Balls``, ``ColumnL2Balls`` with one radius):
    strengths do not apply to it."""

    name = "ball_prior"
    is_constraint = True

    def __init__(self, constraint: Constraint):
        self.constraint = constraint

    def _repr_params(self) -> dict:
        return {"constraint": self.constraint}

    def value(self, V):
        return self.constraint.value(V)

    def prox_value(self, V):
        return 0.0

    def prox(self, V, step):
        return self.constraint.project(np.asarray(V, dtype=np.float64))


class SumOfPriors(SumOfParts, ColumnPrior):
    """``w = sum_i w_i`` with one prior per part (the split models): a
    :class:`~multitask.penalties.composite.SumOfParts` of :class:`ColumnPrior` objects."""

    name = "sum_of_priors"

    def __init__(self, parts: Sequence[ColumnPrior]):
        if not all(isinstance(p, ColumnPrior) for p in parts):
            raise ValueError("parts must be ColumnPrior objects.")
        super().__init__(parts)

    def scaled(self, c):
        return SumOfPriors([p.scaled(c) for p in self.parts if isinstance(p, ColumnPrior)])


class PriorChoice(ColumnPrior):
    """``r(w) = min_k r_k(w)``: several priors, each new task takes the one that gives its
    problem the lowest objective (the nearest cluster). Not convex: it has no prox; the
    new-task solver solves each option and keeps the best (``labels`` name them)."""

    name = "prior_choice"
    is_convex = False
    has_prox = False

    def __init__(self, options: Sequence[ColumnPrior], labels: Sequence[Any] | None = None):
        self.options = tuple(options)
        if not self.options or not all(isinstance(p, ColumnPrior) for p in self.options):
            raise ValueError("options must be a non-empty sequence of ColumnPrior objects.")
        self.labels = tuple(range(len(self.options)) if labels is None else labels)

    def _repr_params(self) -> dict:
        return {"n_options": len(self.options)}

    def value(self, V):
        V = np.asarray(V, dtype=np.float64)
        s = np.broadcast_to(self._s(V), (1, V.shape[1]))[0]
        return float(sum(s[t] * min(p.value(V[:, [t]]) for p in self.options)
                         for t in range(V.shape[1])))

    def prox(self, V, step):
        raise NotImplementedError("PriorChoice has no prox: solve each option.")

    def scaled(self, c):
        return PriorChoice([p.scaled(c) for p in self.options], self.labels)


# --------------------------------------------------------------------------- helpers
def learned_subspace(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(U_r, s_r)``: the left singular vectors and the singular values of ``W`` above
    ``RANK_RTOL_GRAM`` times the largest (the learned subspace ``range(W)``)."""
    W = np.asarray(W, dtype=np.float64)
    d, m = W.shape
    if W.size == 0 or not np.any(W):
        return np.zeros((d, 0)), np.zeros(0)
    # the eigen-decomposition of the smaller Gram matrix (cheaper than an SVD); singular
    # values below sqrt(eps) of the largest are lost in it, and cut below RANK_RTOL_GRAM
    lam, Q = np.linalg.eigh(W @ W.T if d <= m else W.T @ W)
    lam, Q = lam[::-1], Q[:, ::-1]
    s = np.sqrt(np.maximum(lam, 0.0))
    keep = s > RANK_RTOL_GRAM * s[0]
    s, Q = s[keep], Q[:, keep]
    U = Q if d <= m else (W @ Q) / s
    return U, s


def _subspace_prior(W: np.ndarray, weight: float) -> GaussianPrior:
    """``(weight / 2) w^T D^+ w`` on ``range(W)``, ``D = (W W^T)^{1/2}``."""
    U, s = learned_subspace(W)
    return GaussianPrior(np.zeros(np.shape(W)[0]), U, weight / s if s.size else None, np.inf)


def _column_mean(W: np.ndarray) -> np.ndarray:
    W = np.asarray(W, dtype=np.float64)
    return W.mean(axis=1) if W.shape[1] else np.zeros(W.shape[0])


# --------------------------------------------------------------------------- the rules
@singledispatch
def new_task_prior(penalty: Penalty, V: np.ndarray, **context) -> ColumnPrior:
    """The prior a new task's column gets from ``penalty`` at the fitted variable ``V``.

    Parameters
    ----------
    penalty : Penalty
        The fitted model's penalty.
    V : ndarray of shape (n_features, n_tasks) or (k, n_features, n_tasks)
        The fitted variable (the solver's variable: the stacked parts of split models),
        restricted to the tasks the structure is learned from.
    **context
        What some rules need from the fitted model besides ``V``: ``labels`` (the task
        clusters of CMTL), ``multiplier`` (the Lagrange multiplier of a trace ball),
        ``structure`` (cASO's fitted ``M`` as ``(basis (R, d), eigenvalues (R,),
        leftover)``, which spares the rule an SVD of ``V``), ``parts`` (one such dictionary
        per part of a split model).

    Returns
    -------
    ColumnPrior

    Raises
    ------
    NotImplementedError
        For a penalty without a rule (module docstring).
    """
    raise NotImplementedError(
        f"The {penalty.name} penalty ({type(penalty).__name__}) has no rule for new tasks: "
        "register one with multitask.penalties.new_task.new_task_prior.register."
    )


@new_task_prior.register
def _(penalty: NoPenalty, V, **context):
    return GaussianPrior(np.zeros(np.shape(V)[-2]), complement=0.0)


@new_task_prior.register
def _(penalty: Ridge, V, **context):
    return GaussianPrior(np.zeros(np.shape(V)[0]), complement=penalty.alpha)


@new_task_prior.register
def _(penalty: L1, V, **context):
    return ElementwisePrior(np.shape(V)[0], l1=penalty.alpha)


@new_task_prior.register
def _(penalty: ColumnL2, V, **context):
    return ColumnNormPrior(penalty.alpha)


@new_task_prior.register
def _(penalty: L21, V, **context):
    W = np.asarray(V, dtype=np.float64)
    norms = np.linalg.norm(W, axis=1)
    top = float(norms.max()) if norms.size else 0.0
    support = np.flatnonzero(norms > RANK_RTOL * top) if top > 0 else np.zeros(0, dtype=int)
    basis = np.eye(W.shape[0])[:, support]
    return GaussianPrior(np.zeros(W.shape[0]), basis, penalty.alpha / norms[support], np.inf)


@new_task_prior.register
def _(penalty: TraceNorm, V, **context):
    return _subspace_prior(V, penalty.alpha)


@new_task_prior.register
def _(penalty: CappedTraceNorm, V, **context):
    # the DC majorant alpha (||W'||_* - <U_r V_r^T, W'>) at [W, 0]: its new-column part is
    # the trace norm's, whose variational majorant is the subspace prior
    return _subspace_prior(V, penalty.alpha)


@new_task_prior.register
def _(penalty: TaskRelationship, V, **context):
    _, s = learned_subspace(V)
    return _subspace_prior(V, penalty.alpha * float(s.sum()))


@new_task_prior.register
def _(penalty: TraceBall, V, **context):
    multiplier = context.get("multiplier")
    if multiplier is None:
        raise ValueError("The trace-ball part's new-task prior needs the ball's Lagrange "
                         "multiplier at the fit (context 'multiplier'): refit the model.")
    return _subspace_prior(V, float(multiplier))


@new_task_prior.register
def _(penalty: SubspaceRelaxation, V, **context):
    W = np.asarray(V, dtype=np.float64)
    d = W.shape[0]
    penalty.check_size(W.shape)
    structure = context.get("structure")
    if structure is None:  # the optimal M at W
        U, s, _ = safe_svd(W)
        gamma = structure_eigenvalues(s, penalty.eta, penalty.k, d)
        g0 = leftover_eigenvalue(gamma, penalty.k, d)
    else:  # the fitted M, as the model stores it (no decomposition)
        basis, gamma, g0 = structure
        U, gamma, g0 = np.asarray(basis, dtype=np.float64).T, np.asarray(gamma), float(g0)
        if U.shape != (d, min(W.shape)) or gamma.shape != (U.shape[1],):
            raise ValueError(f"structure must hold a basis of shape ({min(W.shape)}, {d}) and "
                             f"its {min(W.shape)} eigenvalues, got shapes {U.T.shape} and "
                             f"{gamma.shape}.")
    two_c = 2.0 * penalty.scale
    return GaussianPrior(np.zeros(d), U, two_c / (penalty.eta + gamma),
                         two_c / (penalty.eta + g0) if U.shape[1] < d else np.inf)


@new_task_prior.register
def _(penalty: ClusterRelaxation, V, **context):
    labels = context.get("labels")
    W = np.asarray(V, dtype=np.float64)
    if labels is None:
        raise ValueError("The clustered penalty's new-task prior needs the task clusters "
                         "(context 'labels').")
    labels = np.asarray(labels)
    if labels.shape != (W.shape[1],):
        raise ValueError(f"labels must give one cluster per fitted task ({W.shape[1]}), got "
                         f"shape {labels.shape}.")
    a, eta = penalty.alpha, penalty.eta
    options, names = [], []
    for c in np.unique(labels):
        members = W[:, labels == c]
        n_c = members.shape[1]
        rho = n_c / (n_c + 1.0)
        w_c = members.mean(axis=1)
        options.append(GaussianPrior(rho * w_c / (eta + rho), complement=2.0 * a * (eta + rho),
                                     offset=a * rho * eta / (eta + rho) * float(w_c @ w_c)))
        names.append(c)
    return PriorChoice(options, names)


@new_task_prior.register
def _(penalty: GraphRegularization, V, **context):
    W = np.asarray(V, dtype=np.float64)
    m = W.shape[1]
    dbar = float(np.trace(penalty.laplacian)) / m if m else 0.0
    quad = 2.0 * penalty.alpha * dbar
    if penalty.alpha_l1 == 0:
        return GaussianPrior(_column_mean(W), complement=quad)
    return ElementwisePrior(W.shape[0], _column_mean(W), quad, penalty.alpha_l1)


@new_task_prior.register
def _(penalty: MeanRegularization, V, **context):
    W = np.asarray(V, dtype=np.float64)
    m = W.shape[1]
    return GaussianPrior(_column_mean(W), complement=2.0 * penalty.alpha * m / (m + 1.0))


def _no_place_in_time(penalty: Penalty, V, **context):
    raise NotImplementedError(
        f"The {penalty.name} penalty orders the tasks in time: a new task has no place in "
        "that order, so there is no new-task rule (refit with the task at its time point)."
    )


new_task_prior.register(TemporalGroupLasso, _no_place_in_time)
new_task_prior.register(FusedSparseGroupLasso, _no_place_in_time)


@new_task_prior.register
def _(penalty: L1InfNorm, V, **context):
    W = np.asarray(V, dtype=np.float64)
    free = np.abs(W).max(axis=1) if W.shape[1] else np.zeros(W.shape[0])
    return ElementwisePrior(W.shape[0], l1=penalty.alpha, free=free)


@new_task_prior.register
def _(penalty: L1InfBall, V, **context):
    W = np.asarray(V, dtype=np.float64)
    free = np.abs(W).max(axis=1) if W.shape[1] else np.zeros(W.shape[0])
    return ElementwisePrior(W.shape[0], l1=np.inf, free=free)


@new_task_prior.register
def _(penalty: RowWeightedL1, V, **context):
    return ElementwisePrior(np.shape(V)[0], l1=penalty.weights)


@new_task_prior.register
def _(penalty: CappedL1, V, **context):
    W = np.asarray(V, dtype=np.float64)
    return ElementwisePrior(W.shape[0], l1=penalty.alpha * (~penalty.capped(W)))


def _ball(penalty, V, **context):
    radius = float(np.mean(np.atleast_1d(penalty.radius)))
    return BallPrior(type(penalty)(radius))


new_task_prior.register(ColumnL1Balls, _ball)
new_task_prior.register(ColumnL2Balls, _ball)


@new_task_prior.register
def _(penalty: SumOfParts, V, **context):
    V = np.asarray(V, dtype=np.float64)
    parts_context = context.get("parts") or [{}] * len(penalty.parts)
    if len(parts_context) != len(penalty.parts):
        raise ValueError(f"context 'parts' has {len(parts_context)} entries for "
                         f"{len(penalty.parts)} parts.")
    return SumOfPriors([new_task_prior(p, V[i], **parts_context[i])
                        for i, p in enumerate(penalty.parts)])
