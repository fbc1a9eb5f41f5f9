"""Losses (datafits) of multi-task models, all under one scaling convention.

For tasks ``t = 1..m`` with ``n_t`` rows each, ``W`` of shape ``(d, m)`` and intercepts ``b``
of shape ``(m,)``::

    F(W, b) = sum_t (1 / n_t) * sum_{i in task t} ell(y_i, x_i^T w_t + b_t)
              + (alpha_l2 / 2) * ||W||_F^2

with ``ell`` one of

* :class:`Squared`:       ``0.5 * (y - z)**2``
* :class:`Logistic`:      ``log(1 + exp(-y z))``, ``y in {-1, +1}``
* :class:`SquaredHinge`:  ``max(0, 1 - y z)**2`` (LIBLINEAR's L2-loss SVM)
* :class:`Hinge`:         ``max(0, 1 - y z)`` (value and a subgradient only)

and an optional ridge term ``alpha_l2 >= 0`` (the elastic-net term of MALSAR's ``rho_L2`` and
RMTL's ``Lam2``), which every model can add to its penalty this way. With a shared design
(``n_t = n``) the squared loss is ``||Y - X W||_F^2 / (2 n)``, the datafit of scikit-learn's
``MultiTaskLasso``. Intercepts are never penalized; the squared loss eliminates them exactly by
centring each task (``b_t = mean(y_t) - mean(X_t) w_t``), the other losses keep them as
variables of the solver (``center=True`` centres the features of each task first, which keeps
first-order methods well conditioned; the model is the same).

Row weights (``sample_weight``, and the pairs of a shared design whose target is missing)
generalize the convention: with ``w_i >= 0`` the weight of row ``i`` and ``W_t = sum_{i in t}
w_i`` the loss of task ``t`` is ``(1 / W_t) sum_{i in t} w_i ell(y_i, x_i^T w_t + b_t)``, and
every datafit reads the normalized weights ``w_i / W_t`` from one place,
:attr:`~multitask.data.MultiTaskData.row_weights` (``1 / n_t`` without weights). Repeating row
``i`` ``k_i`` times gives ``n_t' = sum_{i in t} k_i`` rows and the loss ``(1 / n_t') sum_i k_i
ell_i``: exactly the weighted loss with ``w_i = k_i``; a zero weight drops the row; weights
that are constant within a task change nothing (the penalty keeps its scale). Everything the
datafits derive from the data is weighted alike (centring, Gram matrices, ``X_t^T y_t``,
Lipschitz constants, the scales of the optimality measure, the starting intercepts).

Every datafit declares what it offers in :attr:`Datafit.capabilities` (see
:data:`DATAFIT_CAPABILITIES`); solvers check those declarations, never the class.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from scipy.special import expit, log1p
from scipy.special import xlogy as _xlogy  # private: its ufunc docstring is not ours

from multitask.data import MultiTaskData

__all__ = [
    "DATAFIT_CAPABILITIES",
    "Datafit",
    "DualPoint",
    "Hinge",
    "Logistic",
    "Squared",
    "SquaredHinge",
    "get_datafit",
    "max_scaled_eigenvalue",
]

#: Capabilities a datafit may declare, and what each one promises:
#:
#: * ``"gradient"``: the loss is smooth: :meth:`Datafit.value_and_grad` and
#:   :meth:`Datafit.lipschitz`;
#: * ``"quadratic"``: :meth:`Datafit.quadratic_form` (cached per-task Gram matrices);
#: * ``"prox_scores"``: :meth:`Datafit.prox_scores` (the loss's prox in score space, for
#:   splitting methods such as linearized ADMM);
#: * ``"subgradient"``: :meth:`Datafit.subgradient` (non-smooth losses);
#: * ``"max_affine"``: :meth:`Datafit.max_affine_pieces` (piecewise-linear losses, for linear
#:   programs);
#: * ``"least_squares"``: the loss is ``sum_i w_i (z_i - y_i)^2 / 2`` (plus the ridge term) on
#:   the data it sees, ``w_i`` = :attr:`~multitask.data.MultiTaskData.row_weights`, ``y`` =
#:   ``data.y`` and the scores of its (implicitly centred) design: coordinate descent on the
#:   residuals (:mod:`multitask.solvers.cd`).
#: * ``"hessian"``: :meth:`Datafit.score_derivatives` gives ``ell''`` row by row (a
#:   generalized second derivative at a kink): the steps of proximal Newton
#:   (:mod:`multitask.solvers.newton`).
DATAFIT_CAPABILITIES = frozenset({"gradient", "quadratic", "prox_scores", "subgradient",
                                  "max_affine", "dual", "least_squares", "hessian"})


@dataclass(frozen=True)
class DualPoint:
    """A feasible point of the dual of the loss, made from a primal point (``"dual"``).

    Attributes
    ----------
    loss : float
        The loss ``F(W, b)`` at the primal point, without the ridge term.
    grad : ndarray of shape (n_features, n_tasks)
        ``G = X^T theta`` for the dual point ``theta`` (the loss gradient with respect to
        ``W`` when ``theta`` is the score gradient itself).
    conjugate : callable
        ``s -> F^*(s theta)`` for ``0 <= s <= 1`` (and beyond where the domain allows).
    quadratic : tuple of float, optional
        ``(A, B)`` with ``F^*(s theta) = A s^2 + B s`` for every ``s`` (the squared loss),
        which gives the best ``s`` in closed form.
    score_grad : ndarray of shape (N,), optional
        The score derivatives ``a_i = theta_i / w_i`` of the dual point, where they were
        computed (a correction of the dual point starts from them).
    """

    loss: float
    grad: np.ndarray
    conjugate: Callable[[float], float]
    quadratic: tuple[float, float] | None = None
    score_grad: np.ndarray | None = None


def _balance_per_task(data: MultiTaskData, theta: np.ndarray) -> np.ndarray:
    """``theta`` with, in each task, the larger of its positive and negative parts scaled down
    so that the task's sum is zero (a new array)."""
    pos = data.task_sum(np.maximum(theta, 0.0))
    neg = data.task_sum(np.maximum(-theta, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        scale_pos = np.where(pos > neg, neg / np.where(pos > 0, pos, 1.0), 1.0)
        scale_neg = np.where(neg > pos, pos / np.where(neg > 0, neg, 1.0), 1.0)
    return np.where(theta > 0, theta * data.expand(scale_pos), theta * data.expand(scale_neg))


class Datafit:
    """Base class: a loss bound to a :class:`~multitask.data.MultiTaskData`.

    Parameters
    ----------
    data : MultiTaskData
        The training data (targets -1/+1 for classification losses).
    fit_intercept : bool, default=True
        Fit one unpenalized intercept per task.
    alpha_l2 : float, default=0.0
        Weight of the ridge term ``(alpha_l2 / 2) ||W||_F^2`` added to the loss.
    center : bool, default=False
        With an intercept, centre the features of each task and return the intercept of the
        original features (same model, better conditioned). The squared loss always centres.
    """

    name: ClassVar[str] = "base"
    #: The capabilities offered (see :data:`DATAFIT_CAPABILITIES`).
    capabilities: frozenset[str] = frozenset({"gradient", "subgradient", "dual"})

    def __init__(self, data: MultiTaskData, fit_intercept: bool = True, alpha_l2: float = 0.0,
                 center: bool = False):
        self.raw = data
        self.fit_intercept = bool(fit_intercept)
        self.alpha_l2 = float(alpha_l2)
        if not np.isfinite(self.alpha_l2) or self.alpha_l2 < 0:
            raise ValueError(f"alpha_l2 must be finite and >= 0, got {alpha_l2!r}.")
        self.center = bool(center) and self.fit_intercept
        if self.center:
            data_c, self.x_mean, _ = data.centered()
            # centred features, original targets
            self.data = MultiTaskData(data_c.X, data.y, data.offsets, data.tasks, data.shared,
                                      data_c.x_offset, data.row_order,
                                      x_constant=data_c.x_constant,
                                      sample_weight=data.sample_weight)
        else:
            self.data = data
            self.x_mean = np.zeros((data.n_features, data.n_tasks))
        self._grad_scale: float | None = None
        self._bound_hessian: tuple[np.ndarray, np.ndarray | None] | None = None
        self._quadratic_eigen: tuple[np.ndarray, np.ndarray] | None = None
        if self.alpha_l2:  # the ridge term is smooth but not separable over the scores
            self.capabilities = type(self).capabilities - {"max_affine", "prox_scores"}

    # ------------------------------------------------------------------ construction
    def get_params(self) -> dict:
        """The constructor's options (all but the data): ``type(self)(data, **get_params())``
        builds the same datafit on other data."""
        return {"fit_intercept": self.fit_intercept, "alpha_l2": self.alpha_l2,
                "center": self.center}

    def restrict(self, tasks) -> Datafit:
        """The same datafit on the tasks ``tasks`` only (a new object; positions in order)."""
        return type(self)(self.raw.subset_tasks(tasks), **self.get_params())

    def on_columns(self, data: MultiTaskData, gram: bool = True) -> Datafit:
        """The same loss on ``data``, a subset of the columns of the design this loss sees
        (:attr:`data`: centred where the loss centres), for solvers that work on some feature
        rows of ``W`` with the others at zero (working sets): its value at ``W_S`` is this
        loss's at the ``W`` whose rows outside ``S`` are zero. Nothing is centred again; the
        intercept variable stays a variable (a new object). ``gram``: whether a quadratic
        loss forms Gram matrices (the others ignore it)."""
        return type(self)(data, self.has_intercept_variable, self.alpha_l2, center=False)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(n_tasks={self.data.n_tasks}, "
                f"n_features={self.data.n_features}, fit_intercept={self.fit_intercept})")

    # ------------------------------------------------------------------ intercepts
    @property
    def has_intercept_variable(self) -> bool:
        """Whether the solver must optimize the intercepts ``b`` as variables."""
        return self.fit_intercept

    def init_intercept(self) -> np.ndarray | None:
        """Starting intercepts (``None`` when there is no intercept variable)."""
        return np.zeros(self.data.n_tasks) if self.has_intercept_variable else None

    def intercept_parts(self, b: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(c, M)`` with the fitted intercepts ``c_t - M[:, t] . w_t`` for any ``W``.

        The fitted intercept is affine in ``W`` for a fixed intercept variable ``b``: after
        centring, ``c = b`` and ``M`` the per-task feature means.
        """
        m = self.data.n_tasks
        c = np.zeros(m) if b is None else np.asarray(b, dtype=np.float64).copy()
        return c, self.x_mean

    def intercept(self, W: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
        """The fitted intercepts for the solution ``(W, b)``, shape ``(m,)``."""
        c, M = self.intercept_parts(b)
        return c - np.einsum("jt,jt->t", M, W)

    def optimal_intercept_at_zero(self) -> np.ndarray | None:
        """The minimizer of ``F(0, b)`` over ``b`` (None without intercept)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ values and gradients
    def _dloss(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-row loss values and derivatives with respect to the score ``z``."""
        raise NotImplementedError

    def _d2loss(self, z: np.ndarray) -> np.ndarray:
        """Per-row second derivatives ``ell''(y_i, z_i)`` (a generalized one at a kink): the
        Hessian-vector products of Newton steps (the certificate's free directions)."""
        raise NotImplementedError(f"The {self.name} loss has no second derivative here.")

    def score_derivatives(self, z: np.ndarray, second: bool = False) -> tuple[np.ndarray, ...]:
        """``(ell(y_i, z_i), ell'(y_i, z_i))`` row by row at the stacked scores ``z`` (shape
        ``(N,)``, unweighted), and ``ell''(y_i, z_i)`` as a third array with ``second``
        (``"hessian"``)."""
        vals, d1 = self._dloss(np.asarray(z, dtype=np.float64))
        return (vals, d1, self._d2loss(z)) if second else (vals, d1)

    def scores(self, W: np.ndarray, b: np.ndarray | None) -> np.ndarray:
        """Stacked scores ``x_i^T w_{t(i)} + b_{t(i)}``, shape ``(N,)`` (no pass over the
        design at ``W = 0``: ``alpha_max`` reads it once, for the gradient)."""
        W = np.asarray(W, dtype=np.float64)
        data = self.data
        zero = W.shape == (data.n_features, data.n_tasks) and not W.any()
        z = np.zeros(data.n_rows) if zero else data.matvec(W)
        if b is not None:
            z += self.data.expand(b)
        return z

    def _ridge(self, W: np.ndarray) -> float:
        return 0.5 * self.alpha_l2 * float(np.vdot(W, W)) if self.alpha_l2 else 0.0

    def _loss_value(self, W: np.ndarray, b: np.ndarray | None) -> float:
        vals, _ = self._dloss(self.scores(W, b))
        return float(vals @ self.data.row_weights)

    def _loss_value_and_grad(self, W, b):
        vals, dz = self._dloss(self.scores(W, b))
        w = self.data.row_weights
        r = dz * w
        gb = self.data.task_sum(r) if b is not None else None
        return float(vals @ w), self.data.rmatvec(r), gb

    def value(self, W: np.ndarray, b: np.ndarray | None = None) -> float:
        """Return ``F(W, b)``."""
        return self._loss_value(W, b) + self._ridge(W)

    def value_and_grad(self, W: np.ndarray, b: np.ndarray | None = None):
        """Return ``(F, dF/dW (d, m), dF/db (m,) or None)``."""
        f, gW, gb = self._loss_value_and_grad(W, b)
        if self.alpha_l2:
            f += self._ridge(W)
            gW = gW + self.alpha_l2 * W
        return f, gW, gb

    #: Whether :meth:`value_pair_and_grad` costs one pass over the data (else two calls).
    fuses_value_pairs: bool = False

    def value_pair_and_grad(self, V: np.ndarray, c: np.ndarray | None, W: np.ndarray,
                            b: np.ndarray | None):
        """Return ``(F(V, c), F(W, b), dF/dW (d, m), dF/db (m,) or None)``: the objective at
        one point and the value and gradient at another. Datafits that set
        :attr:`fuses_value_pairs` read the data once for both points."""
        fv = self.value(V, c)
        return (fv, *self.value_and_grad(W, b))

    def grad(self, W: np.ndarray, b: np.ndarray | None = None):
        """Return ``(dF/dW, dF/db)``."""
        _, gW, gb = self.value_and_grad(W, b)
        return gW, gb

    def subgradient(self, W: np.ndarray, b: np.ndarray | None = None):
        """A subgradient ``(dW, db)`` (the gradient for smooth losses; 0 at kinks)."""
        return self.grad(W, b)

    def value_scores(self, z: np.ndarray) -> float:
        """The loss as a function of the stacked scores: ``sum_i w_i ell(y_i, z_i)``.

        ``z`` has shape ``(N,)`` (stacked like ``data.y``) and ``w_i = 1 / n_{t(i)}``; the ridge
        term is not included.
        """
        vals, _ = self._dloss(np.asarray(z, dtype=np.float64))
        return float(vals @ self.data.row_weights)

    def prox_scores(self, v: np.ndarray, step: float) -> np.ndarray:
        """Proximal operator of the loss in score space, row by row (``"prox_scores"``).

        ``argmin_z sum_i w_i ell(y_i, z_i) + (1 / (2 step)) ||z - v||^2`` with
        ``w_i = 1/n_{t(i)}``; ``v`` and the result have shape ``(N,)``.
        """
        raise NotImplementedError(f"The {self.name} loss has no closed-form prox in score space.")

    def curvature(self) -> float:
        """Upper bound of ``ell''`` (the loss's own smoothness constant)."""
        raise NotImplementedError

    def bound_hessian(self) -> tuple[np.ndarray, np.ndarray | None]:
        """``(H, mu)``: the fixed Hessian of a quadratic upper bound of the loss, with the
        intercepts minimized out, and the per-task feature means (None without intercept).

        For ``ell'' <= c`` (:meth:`curvature`) the loss of task ``t`` is bounded around any
        point by a quadratic with Hessian ``c [X_t, 1]^T [X_t, 1] / n_t`` (plus ``alpha_l2``
        on ``w``); minimizing over the intercept leaves ``H_t = c Xc_t^T Xc_t / n_t +
        alpha_l2 I`` with ``Xc_t`` the centred design, shape ``(m, d, d)`` (``(1, d, d)`` for
        a shared design). Computed once and cached.
        """
        if self._bound_hessian is None:
            n = self.data.task_weight_sums
            if not self.has_intercept_variable:
                G, mu = self.data.gram(), None
            elif _is_dense_per_task(self.data):  # centred chunk by chunk, no centred copy
                mu = self.data.x_means_and_constant()[0]
                G = _task_grams(self.data, mu)
            else:
                data_c, mu, _ = self.data.centered()
                G = data_c.gram()
            H = self.curvature() * (G / n[0] if G.shape[0] == 1 else G / n[:, None, None])
            if self.alpha_l2:
                H = H + self.alpha_l2 * np.eye(H.shape[1])[None]
            self._bound_hessian = (H, mu)
        return self._bound_hessian

    def lipschitz(self) -> float:
        """A Lipschitz constant of the gradient with respect to ``(W, b)``.

        ``L = curvature * max_t ||[X_t, 1]||_2^2 / n_t + alpha_l2`` (the Hessian is block
        diagonal over tasks).
        """
        s = self.data.task_spectral_norms_sq(intercept=self.has_intercept_variable,
                                             weighted=True)
        return float(self.curvature() * np.max(s / self.data.task_weight_sums)) + self.alpha_l2

    def grad_at_zero(self) -> np.ndarray:
        """Gradient with respect to ``W`` at ``W = 0`` and the best intercepts, ``(d, m)``.

        One gradient evaluation; the ``alpha_max`` of every penalty is computed from it.
        """
        b0 = self.optimal_intercept_at_zero() if self.has_intercept_variable else None
        W0 = np.zeros((self.data.n_features, self.data.n_tasks))
        return self._loss_value_and_grad(W0, b0)[1]

    def gradient_scale(self) -> float:
        """The scale of the relative optimality measure (cached).

        ``||grad_W F(0, b_0)||_F``; when that is zero (no feature carries signal at zero: a
        degenerate design) the norm of the full gradient at ``(W, b) = (0, 0)``, and ``1``
        when that is zero too.
        """
        if self._grad_scale is None:
            with np.errstate(over="ignore", under="ignore"):  # checked below
                scale = float(np.linalg.norm(self.grad_at_zero()))
            if not (np.isfinite(scale) and scale > 1e-140):  # squares out of range: scaled
                import scipy.linalg  # (BLAS nrm2, for data near the ends of [1e-100, 1e100])

                scale = float(scipy.linalg.norm(np.ravel(self.grad_at_zero())))
            if not scale > 0:
                W0 = np.zeros((self.data.n_features, self.data.n_tasks))
                _, gW, gb = self._loss_value_and_grad(W0, self.init_intercept())
                scale = float(np.sqrt(np.vdot(gW, gW) + (np.vdot(gb, gb) if gb is not None
                                                         else 0.0)))
            self._grad_scale = scale if np.isfinite(scale) and scale > 0 else 1.0
        return self._grad_scale

    def measure_constants(self) -> tuple[float, float]:
        """``(L_W, s)`` of the optimality measure (:mod:`multitask.solvers.base`), cached.

        ``L_W = curvature * max_t ||X_t||_2^2 / n_t + alpha_l2``: the Lipschitz constant of the
        gradient with respect to ``W`` alone; ``s``: the root mean square of the (centred)
        feature entries, the scale in which the intercept block is measured (its gradient
        ``grad_b f`` counts as ``s * grad_b f``, the gradient of the weight of a constant
        feature of that scale). Both scale like the features, so the measure does not depend
        on their scale.
        """
        if getattr(self, "_measure", None) is None:
            if self.has_intercept_variable:
                norms = self.data.task_spectral_norms_sq(intercept=False, weighted=True)
                L_W = float(self.curvature() * np.max(norms / self.data.task_weight_sums))
                L_W += self.alpha_l2
            else:
                L_W = float(self.lipschitz())
            self._measure = (L_W, _rms_entry(self.data))
        return self._measure

    def quadratic_form(self):
        """``"quadratic"``: ``(H, C, n_grams)`` with ``F(W) = sum_t 0.5 w_t^T H_t w_t -
        C_t^T w_t + const``; ``H`` of shape ``(m, d, d)`` (``(1, d, d)`` when shared)."""
        raise NotImplementedError(f"The {self.name} loss is not quadratic.")

    def quadratic_diagonal(self) -> np.ndarray:
        """``"quadratic"``: the diagonals of the ``H_t`` of :meth:`quadratic_form`, shape
        ``(m, d)`` (``(1, d)`` when shared), without forming ``H``."""
        H, _ = self.quadratic_form()
        return np.diagonal(H, axis1=1, axis2=2).copy()

    def quadratic_eigen(self) -> tuple[np.ndarray, np.ndarray]:
        """``"quadratic"``: ``(lam, Q)`` with ``H_t = Q_t diag(lam_t) Q_t^T`` for the ``H_t`` of
        :meth:`quadratic_form`; ``lam`` of shape ``(m, d)`` (ascending, clipped at zero:
        rounding makes tiny negatives), ``Q`` of shape ``(m, d, d)`` (``(1, ...)`` when
        shared). Computed once and cached: the solvers with exact per-task solves share it,
        and the largest eigenvalue is the loss's Lipschitz constant where no other bound was
        computed first."""
        if self._quadratic_eigen is None:
            lam, Q = np.linalg.eigh(self.quadratic_form()[0])
            self._quadratic_eigen = (np.maximum(lam, 0.0), np.ascontiguousarray(Q))
        return self._quadratic_eigen

    def max_affine_pieces(self):
        """``"max_affine"``: ``(a, c)`` with ``ell(y_i, z) = max(0, a_i z + c_i)``."""
        raise NotImplementedError(f"The {self.name} loss is not piecewise linear.")

    # ------------------------------------------------------------------ the dual (certificate)
    def _score_conjugate(self, a: np.ndarray) -> np.ndarray:
        """``ell_i^*(a_i)`` row by row: the convex conjugate of ``z -> ell(y_i, z)`` at the
        score derivatives ``a`` of a dual point (which lie in its domain)."""
        raise NotImplementedError(f"The {self.name} loss has no conjugate.")

    def dual_point(self, W: np.ndarray, b: np.ndarray | None = None) -> DualPoint:
        """A feasible dual point of the loss built from ``(W, b)`` (``"dual"``).

        With the stacked scores ``z = x_i^T w_t + b_t``, the loss is ``F(z) = sum_i w_i
        ell(y_i, z_i)`` (``w_i`` = :attr:`~multitask.data.MultiTaskData.row_weights`) and its
        conjugate ``F^*(theta) = sum_i w_i ell^*(theta_i / w_i)``. The dual point is the score
        gradient ``theta_i = w_i a_i``, ``a_i = ell'(y_i, z_i)``; with an intercept variable
        the dual must also satisfy ``sum_{i in t} theta_i = 0`` in every task, which it does
        at the optimal intercepts only: the larger of the positive and the negative parts of
        each task is then scaled down to balance the other (for the classification losses
        ``-y_i a_i`` lies in an interval ``[0, c]``, so the scaled point stays in the domain of
        ``ell^*``). Returns the loss at ``(W, b)`` (without the ridge term), ``G = X^T theta``
        (shape ``(d, m)``, the gradient of the loss at ``(W, b)`` when no balancing was
        needed) and ``F^*(s theta)`` as a function of ``s >= 0``.
        """
        return self.dual_point_at_scores(self.scores(W, b), b)

    def dual_point_at_scores(self, z: np.ndarray, b: np.ndarray | None = None, *,
                             design: MultiTaskData | None = None) -> DualPoint:
        """:meth:`dual_point` from the stacked scores ``z = X W + b`` of the primal point
        (computed by the caller, e.g. from the nonzero rows of ``W`` alone); ``design``: the
        same data with another storage of the design for the product ``X^T theta`` (a
        column-major copy of a sparse design)."""
        vals, a = self._dloss(np.asarray(z, dtype=np.float64))
        w = self.data.row_weights
        loss = float(vals @ w)
        if b is not None and self.has_intercept_variable:
            a = _balance_per_task(self.data, a * w) / np.where(w > 0, w, 1.0)
        theta = a * w
        G = (self.data if design is None else design).rmatvec(theta)
        rows = w > 0

        def conjugate(s: float) -> float:
            return float(w[rows] @ self._score_conjugate(s * a)[rows])

        return DualPoint(loss=loss, grad=G, conjugate=conjugate, score_grad=a)

    def balance_dual(self, a: np.ndarray) -> np.ndarray:
        """The score derivatives ``a`` of a dual point with, in each task, the larger of the
        positive and negative parts of ``theta = w a`` scaled down so that the task's sum is
        zero (a dual point must satisfy it when the intercepts are variables; the scaled point
        stays in the domain of the classification losses' conjugates); a new array."""
        w = self.data.row_weights
        return _balance_per_task(self.data, a * w) / np.where(w > 0, w, 1.0)

    def conjugate_sum(self, a: np.ndarray, s: float = 1.0) -> float:
        """``F^*(s theta) = sum_i w_i ell^*(s a_i)`` for the dual point ``theta_i = w_i a_i``
        (``+inf`` outside the domain), over the rows of positive weight."""
        w = self.data.row_weights
        rows = w > 0
        return float(w[rows] @ self._score_conjugate(s * np.asarray(a, dtype=np.float64))[rows])


# --------------------------------------------------------------------------- caches of Squared
#: Average rows per task, in units of the number of features, from which the squared loss's
#: gradient goes through cached per-task Gram matrices on a dense per-task design. An
#: accelerated-gradient iteration reads the Gram matrices twice (``2 m d^2`` numbers) or the
#: design once (``N d``, :meth:`MultiTaskData.squared_residual_pass`): they break even at
#: ``n_t = 2 d``, and the Gram matrices cost their own pass and memory to build
#: (``benchmarks/bench_scale.py``, ``n_t = d``: 2.26 s for 10^4 tasks without them).
GRAM_ROWS_PER_FEATURE = 2.0
#: Stored entries of a sparse design per Gram matrix, in units of its ``d^2`` entries, from
#: which the squared loss builds Gram matrices (and offers ``"quadratic"``): below it the
#: Gram matrices cost more to build, hold and read than the design (an iteration reads it
#: twice, ``2 nnz`` products, against ``d^2`` for a Gram matrix); measured break-even about
#: 0.5 (``benchmarks/bench_scale_axes.py``: at ``nnz = 0.11 d^2`` the Gram route took 4.7
#: times as long and 5 times the memory, at ``nnz = d^2`` 0.7 times as long).
GRAM_NONZEROS_PER_ENTRY = 1.0
#: Entries of the temporaries of one chunk when per-task Gram matrices are built on the fly.
_CHUNK_ENTRIES = 1 << 22


def _is_dense_per_task(data: MultiTaskData) -> bool:
    return not (data.shared or data.is_sparse or data.x_offset is not None)


def _centred_view(data: MultiTaskData) -> tuple[MultiTaskData, np.ndarray, np.ndarray]:
    """``(data_c, x_mean, y_mean)``: the per-task centred data without copying ``X``.

    Dense per-task designs are centred implicitly (``x_offset``, as the data layer does for
    sparse ones): the centred copy of ``X`` that :meth:`MultiTaskData.centered` makes would
    double the memory of the data and cost a pass before the first gradient. Other formats
    go through :meth:`MultiTaskData.centered` (it keeps them implicit or small).
    """
    if not _is_dense_per_task(data):
        return data.centered()
    return data.centred_implicitly()


def _gram_chunks(data: MultiTaskData, x_mean: np.ndarray, small_side: bool = False):
    """Yield ``(tasks, G)`` over consecutive chunks of tasks of a dense per-task design.

    ``G[i]`` is the centred Gram matrix ``Xc_t^T Xc_t`` (``d x d``) of task ``t = tasks[i]``,
    ``Xc_t = X_t - 1 mu_t^T``; with ``small_side``, the chunk's matrices are ``Xc_t Xc_t^T``
    zero-padded to the chunk's largest ``n_t`` when that is below ``d`` (same nonzero
    eigenvalues, smaller matrices). Each task is centred explicitly in a chunk-sized
    temporary (accurate when the features are far from zero, unlike ``X^T X - n mu mu^T``);
    tasks of equal sizes are batched; chunks hold about ``_CHUNK_ENTRIES`` numbers. With
    :attr:`~multitask.data.MultiTaskData.sample_weight`, the rows of ``Xc_t`` are scaled by
    the square roots of their weights (``G`` is then ``Xc_t^T D_t Xc_t``).
    """
    m, d = data.n_tasks, data.n_features
    off = data.offsets
    root = None if data.sample_weight is None else np.sqrt(data.sample_weight)
    sizes = data.task_sizes
    start = 0
    while start < m:
        n_max = int(sizes[start])
        stop, rows = start, 0
        while stop < m:
            n_max = max(n_max, int(sizes[stop]))
            q = min(d, n_max) if small_side else d
            if stop > start and max(rows + sizes[stop], (stop + 1 - start) * q) * max(d, q) \
                    > _CHUNK_ENTRIES:
                break
            rows += int(sizes[stop])
            stop += 1
        tasks = np.arange(start, stop)
        n_max = int(sizes[tasks].max())
        q = min(d, n_max) if small_side else d
        G = np.zeros((len(tasks), q, q))
        if np.all(sizes[tasks] == n_max):
            Xc = data.X[off[start] : off[stop]].reshape(len(tasks), n_max, d)
            Xc = Xc - x_mean[:, tasks].T[:, None, :]
            if root is not None:
                Xc *= root[off[start] : off[stop]].reshape(len(tasks), n_max, 1)
            if q == d:
                np.matmul(Xc.transpose(0, 2, 1), Xc, out=G)
            else:
                np.matmul(Xc, Xc.transpose(0, 2, 1), out=G)
        else:
            for i, t in enumerate(tasks):
                Xt = data.X[off[t] : off[t + 1]] - x_mean[:, t][None, :]
                if root is not None:
                    Xt *= root[off[t] : off[t + 1], None]
                if q == d:
                    G[i] = Xt.T @ Xt
                else:
                    G[i, : len(Xt), : len(Xt)] = Xt @ Xt.T
        yield tasks, G
        start = stop


def _task_grams(data: MultiTaskData, x_mean: np.ndarray) -> np.ndarray:
    """All centred per-task Gram matrices, shape ``(m, d, d)`` (see :func:`_gram_chunks`)."""
    G = np.empty((data.n_tasks, data.n_features, data.n_features))
    for tasks, Gc in _gram_chunks(data, x_mean):
        G[tasks] = Gc
    return G


#: Matrices per batched Cholesky test of :func:`max_scaled_eigenvalue`.
_CERTIFY_BLOCK = 64


def max_scaled_eigenvalue(G: np.ndarray, scale: np.ndarray, *, n_power: int = 6) -> float:
    """``max_t scale_t * lambda_max(G_t)`` for PSD ``G_t``, without every task's eigenvalues.

    A batched power iteration (``n_power`` steps from a fixed start) ranks the matrices; the
    exact top eigenvalues (``eigvalsh``) of the highest ranked few give a candidate ``c``,
    and one batched Cholesky factorization of ``c / scale_t I - G_t`` per block of
    ``_CERTIFY_BLOCK`` matrices certifies ``scale_t lambda_max(G_t) <= c`` for all the others.
    A block that fails gets its exact eigenvalues, which raise ``c``. The result is the exact
    maximum up to a relative ``1e-12`` (added for the rounding of the factorization), at
    about a third of the cost of every task's eigenvalues (measured at ``d = 50``).

    Parameters
    ----------
    G : ndarray of shape (k, q, q)
        Symmetric positive semi-definite matrices.
    scale : ndarray of shape (k,)
        Positive scales (``1 / n_t``).
    n_power : int
        Power steps of the ranking.

    Returns
    -------
    float
    """
    k, q = G.shape[0], G.shape[1]
    if k == 0 or q == 0:
        return 0.0
    scale = np.asarray(scale, dtype=np.float64)
    if k <= 2 * _CERTIFY_BLOCK:
        return float(np.max(scale * np.linalg.eigvalsh(G)[:, -1]))
    v = np.ones((k, q, 1)) + 1e-3 * np.cos(np.arange(q, dtype=np.float64))[None, :, None]
    for _ in range(n_power):
        v = np.matmul(G, v)
        nrm = np.linalg.norm(v, axis=1, keepdims=True)
        v /= np.where(nrm > 0, nrm, 1.0)
    theta = scale * np.einsum("tdi,tdi->t", v, np.matmul(G, v))
    top = np.argsort(theta)[-max(4, k // 256):]
    done = np.zeros(k, dtype=bool)
    done[top] = True
    c = float(np.max(scale[top] * np.linalg.eigvalsh(G[top])[:, -1]))
    eye = np.eye(q)[None]
    for b0 in range(0, k, _CERTIFY_BLOCK):
        idx = np.arange(b0, min(b0 + _CERTIFY_BLOCK, k))
        idx = idx[~done[idx]]
        if not len(idx):
            continue
        bound = c * (1.0 + 1e-12) + np.finfo(float).tiny
        try:
            np.linalg.cholesky((bound / scale[idx])[:, None, None] * eye - G[idx])
        except np.linalg.LinAlgError:
            c = max(c, float(np.max(scale[idx] * np.linalg.eigvalsh(G[idx])[:, -1])))
    return c * (1.0 + 1e-12)


class Squared(Datafit):
    """Squared loss ``sum_t (1 / (2 n_t)) ||X_t w_t + b_t - y_t||^2`` (+ ridge term).

    The intercepts are eliminated by centring each task. It offers the ``"quadratic"``
    capability (per-task Gram matrices ``X_t^T X_t``, computed on first use and cached) when
    ``n_t >= d`` on average, the matrices take at most 5e7 numbers and, for a sparse design,
    it stores at least :data:`GRAM_NONZEROS_PER_ENTRY` ``* d^2`` entries per matrix. Where it
    does, the gradient goes through the Gram matrices (``m d^2`` numbers read per product) for
    shared and sparse designs, and for dense per-task designs from
    :data:`GRAM_ROWS_PER_FEATURE` ``* d`` rows per task on average; below, dense per-task
    designs are read once per accelerated-gradient iteration for the objective at the new
    point and the gradient at the next one (:attr:`fuses_value_pairs`).

    Parameters
    ----------
    data, fit_intercept, alpha_l2
        As in :class:`Datafit`.
    use_gram : bool, optional
        Force the Gram form (and the ``"quadratic"`` capability) on or off.
    """

    name = "squared"
    capabilities = frozenset({"gradient", "subgradient", "quadratic", "prox_scores", "dual",
                              "least_squares"})

    def __init__(self, data: MultiTaskData, fit_intercept: bool = True, alpha_l2: float = 0.0,
                 center: bool = True, use_gram: bool | None = None):
        super().__init__(data, False, alpha_l2)
        self.fit_intercept = bool(fit_intercept)
        self.center = self.fit_intercept
        if self.fit_intercept:
            self.data, self.x_mean, self.y_mean = _centred_view(data)
        else:
            self.x_mean = np.zeros((data.n_features, data.n_tasks))
            self.y_mean = np.zeros(data.n_tasks)
        d, m = self.data.n_features, self.data.n_tasks
        self._use_gram_option = use_gram
        per_task = not (self.data.shared or self.data.is_sparse)
        if use_gram is None:
            mean_rows = self.data.n_rows / max(m, 1)
            n_mats = 1 if self.data.shares_gram else m
            quadratic = mean_rows >= d and n_mats * d * d <= 5e7
            if sp.issparse(self.data.X):  # stored entries per Gram matrix against its d^2
                nnz = self.data.X.nnz / max(n_mats, 1)  # type: ignore[union-attr]
                quadratic = quadratic and nnz >= GRAM_NONZEROS_PER_ENTRY * d * d
            # an iteration reads the Gram matrices twice (m d^2 numbers each time), or a dense
            # per-task design once (N d, values at two points fused): Grams from 2 d rows
            use_gram = quadratic and (not per_task or mean_rows >= GRAM_ROWS_PER_FEATURE * d)
        else:
            quadratic = use_gram = bool(use_gram)
        self.use_gram = bool(use_gram)
        self._gram: tuple | None = None
        self._lipschitz: float | None = None
        if not quadratic:  # the Gram matrices would cost more than they save
            self.capabilities = self.capabilities - {"quadratic"}
        # dense per-task designs without Gram matrices: the loss, its gradient, the pair of
        # values and the Gram diagonals in one compiled pass each
        self._one_pass = per_task and not self.use_gram
        self.fuses_value_pairs = self._one_pass

    def get_params(self) -> dict:
        return {"fit_intercept": self.fit_intercept, "alpha_l2": self.alpha_l2,
                "use_gram": self._use_gram_option}

    @property
    def has_intercept_variable(self) -> bool:
        return False

    def curvature(self) -> float:
        return 1.0

    def _dloss(self, z):
        r = z - self.data.y
        return 0.5 * r * r, r

    def _d2loss(self, z):
        return np.ones_like(z)

    def intercept_parts(self, b=None):
        return self.y_mean.copy(), self.x_mean

    def optimal_intercept_at_zero(self):
        return None

    def prox_scores(self, v, step):
        """``z_i = (v_i + step w_i y_i) / (1 + step w_i)`` (on the centred targets)."""
        sw = step * self.data.row_weights
        return (np.asarray(v, dtype=np.float64) + sw * self.data.y) / (1.0 + sw)

    def _grams(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(G, c, yy)``: per-task ``X_t^T D_t X_t`` ``(m or 1, d, d)``, ``X_t^T D_t y_t``
        ``(d, m)`` and ``y_t^T D_t y_t`` ``(m,)`` (``D_t`` the diagonal of the task's row
        weights, the identity without them), computed once."""
        if self._gram is None:
            y = self.data.y
            G = (_task_grams(self.raw, self.x_mean) if _is_dense_per_task(self.raw)
                 else self.data.gram())
            self._gram = (G, self.data.xty(), self.data.task_sum(self.data.weigh(y) * y))
        return self._gram

    def quadratic_form(self):
        """``(H, C)``: ``H_t = X_t^T D_t X_t / W_t + alpha_l2 I`` (shape ``(m, d, d)``, or
        ``(1, d, d)`` for a shared design whose tasks weigh the rows alike) and ``C = X_t^T
        D_t y_t / W_t`` ``(d, m)`` (``D_t``, ``W_t``: the task's row weights and their sum;
        ``I`` and ``n_t`` without weights), so that ``F(W) = sum_t 0.5 w_t^T H_t w_t -
        C_t^T w_t + const``."""
        G, c, _ = self._grams()
        n = self.data.task_weight_sums
        H = G / n[0] if G.shape[0] == 1 else G / n[:, None, None]
        if self.alpha_l2:
            H = H + self.alpha_l2 * np.eye(H.shape[1])[None]
        return H, c / n[None, :]

    def bound_hessian(self):
        """The loss is its own quadratic bound: ``(H, None)`` with ``H`` of
        :meth:`quadratic_form` (the intercepts are already eliminated), from the cached Gram
        matrices."""
        return self.quadratic_form()[0], None

    def quadratic_diagonal(self) -> np.ndarray:
        """``diag(H_t) = diag(X_t^T X_t) / n_t + alpha_l2``, shape ``(m, d)`` (``(1, d)`` when
        shared): one pass over a dense per-task design when no Gram matrix is cached, else read
        from the cached ones (no copy of them). Weighted as :meth:`quadratic_form`."""
        n = self.data.task_weight_sums
        if self._gram is None and self._one_pass:
            return self.data.task_column_sq_norms().T / n[:, None] + self.alpha_l2
        G = self._grams()[0]
        diag = np.diagonal(G, axis1=1, axis2=2) / (n[:1, None] if G.shape[0] == 1
                                                   else n[:, None])
        return diag + self.alpha_l2

    def _loss_value_and_grad(self, W, b=None):
        if not self.use_gram:
            if not self._one_pass:
                return super()._loss_value_and_grad(W, None)
            val, G = self.data.squared_residual_pass(W, self.data.y, self.data.row_weights)
            return val, G, None
        G, c, yy = self._grams()
        n = self.data.task_weight_sums
        GW = G[0] @ W if G.shape[0] == 1 else np.matmul(G, W.T[:, :, None])[:, :, 0].T
        wGw = np.einsum("jt,jt->t", W, GW)
        wc = np.einsum("jt,jt->t", W, c)
        val = float(np.sum(0.5 * (wGw - 2 * wc + yy) / n))
        return val, (GW - c) / n[None, :], None

    def _loss_value(self, W, b=None):
        if not self.use_gram:
            return super()._loss_value(W, None)
        return self._loss_value_and_grad(W)[0]

    def value_pair_and_grad(self, V, c, W, b):
        if not self._one_pass:
            return super().value_pair_and_grad(V, None, W, None)
        fv, fw, G = self.data.squared_residual_pass(W, self.data.y, self.data.row_weights,
                                                   value_at=V)
        if self.alpha_l2:
            fv, fw, G = fv + self._ridge(V), fw + self._ridge(W), G + self.alpha_l2 * W
        return fv, fw, G, None

    def value_and_grad(self, W, b=None):
        return super().value_and_grad(W, None)

    def value(self, W, b=None):
        return super().value(W, None)

    def _score_conjugate(self, a):
        """``a^2 / 2 + a y`` (on the centred targets): the conjugate of ``(z - y)^2 / 2``."""
        return 0.5 * a * a + a * self.data.y

    def dual_point(self, W, b=None):
        """The residual dual point ``theta_i = w_i (z_i - y_i)`` (centred data: the intercepts
        are eliminated, so no balancing is needed).

        ``F^*(s theta) = sum_i w_i (s^2 r_i^2 / 2 + s r_i y_i) = A s^2 + B s`` with ``A`` the
        loss and ``B = sum_i w_i r_i y_i = <G, W> - 2 A`` (since ``sum_i theta_i z_i =
        <X^T theta, W>``): both from the loss and its gradient, through the cached Gram
        matrices where the loss uses them (no pass over the data).
        """
        loss, G, _ = self._loss_value_and_grad(W, None)
        A = float(loss)
        B = float(np.vdot(G, W)) - 2.0 * A
        return DualPoint(loss=A, grad=G, conjugate=lambda s: A * s * s + B * s,
                         quadratic=(A, B))

    def dual_point_at_scores(self, z, b=None, *, design=None):
        """:meth:`dual_point` from the stacked (centred) scores ``z``: ``theta_i = w_i (z_i -
        y_i)``, ``A`` the loss, ``B = sum_i theta_i y_i`` and ``G = X^T theta`` (one pass
        over the data, or over ``design``, no Gram matrix)."""
        w = self.data.row_weights
        r = np.asarray(z, dtype=np.float64) - self.data.y
        theta = w * r
        A = 0.5 * float(theta @ r)
        B = float(theta @ self.data.y)
        G = (self.data if design is None else design).rmatvec(theta)
        return DualPoint(loss=A, grad=G, conjugate=lambda s: A * s * s + B * s,
                         quadratic=(A, B), score_grad=r)

    def on_columns(self, data, gram: bool = True):
        """The same loss on the columns ``data`` of its (centred) design, with Gram matrices
        (``gram``: the working sets of :mod:`multitask.solvers.working_set` are small) or
        without (coordinate descent on the residuals)."""
        return Squared(data, False, self.alpha_l2, use_gram=bool(gram))

    def lipschitz(self) -> float:
        """``max_t ||X_t - 1 mean(X_t)||_2^2 / n_t + alpha_l2``: a certified upper bound.

        Computed once and cached. Per-task Gram matrices (the cached ones, or chunks of them
        built on the fly for dense per-task designs) go through
        :func:`max_scaled_eigenvalue`: a batched power iteration proposes the bound and one
        batched Cholesky factorization certifies it (about 4x cheaper than the eigenvalues of
        every task, measured at ``d = 50``). Shared or sparse designs use the data layer's
        spectral norms. Where :meth:`quadratic_eigen` has been computed, its largest
        eigenvalue (a relative ``1e-12`` added for rounding) is used instead.
        """
        if self._lipschitz is None:
            n = self.data.task_weight_sums  # n_t without row weights (``W_t`` with them)
            if self._quadratic_eigen is not None:
                top = float(self._quadratic_eigen[0].max()) - self.alpha_l2
                lip = max(top, 0.0) * (1.0 + 1e-12)
            elif self.use_gram:
                G = self._grams()[0]
                if G.shape[0] == 1:
                    lip = float(np.linalg.eigvalsh(G[0])[-1] / n.min())
                else:
                    lip = max_scaled_eigenvalue(G, 1.0 / n)
            elif _is_dense_per_task(self.raw):
                lip = 0.0
                for tasks, Gc in _gram_chunks(self.raw, self.x_mean, small_side=True):
                    lip = max(lip, max_scaled_eigenvalue(Gc, 1.0 / n[tasks]))
            else:
                lip = float(np.max(self.data.task_spectral_norms_sq(False, weighted=True) / n))
            self._lipschitz = lip
        return self._lipschitz + self.alpha_l2

    def grad_at_zero(self):
        """``-X_t^T D_t (y_t - mean(y_t)) / W_t`` (``D_t``, ``W_t``: the task's row weights and
        their sum; ``I`` and ``n_t`` without weights): one pass over the data (no Gram matrix,
        no centred copy of ``X``)."""
        return -self.data.xty() / self.data.task_weight_sums[None, :]


class Logistic(Datafit):
    """Logistic loss ``sum_t (1 / n_t) sum_i log(1 + exp(-y_i z_i))``, labels -1/+1."""

    name = "logistic"
    capabilities = frozenset({"gradient", "subgradient", "dual", "hessian"})

    def curvature(self) -> float:
        return 0.25

    def _dloss(self, z):
        yz = self.data.y * z
        vals = np.logaddexp(0.0, -yz)  # log(1 + exp(-yz)), computed stably
        dz = -self.data.y * expit(-yz)
        return vals, dz

    def _d2loss(self, z):
        p = expit(self.data.y * z)
        return p * (1.0 - p)

    def optimal_intercept_at_zero(self):
        p = self.data.task_mean((self.data.y > 0).astype(float))  # (weighted) class share
        p = np.clip(p, 1e-12, 1 - 1e-12)
        return np.log(p) - log1p(-p)

    def _score_conjugate(self, a):
        """``q log q + (1 - q) log(1 - q)`` with ``q = -y a`` in ``[0, 1]`` (``inf`` outside)."""
        q = -self.data.y * a
        with np.errstate(invalid="ignore"):
            out = _xlogy(q, q) + _xlogy(1.0 - q, 1.0 - q)
        return np.where((q >= 0.0) & (q <= 1.0), out, np.inf)


class SquaredHinge(Datafit):
    """Squared hinge ``sum_t (1 / n_t) sum_i max(0, 1 - y_i z_i)^2``, labels -1/+1."""

    name = "squared_hinge"
    capabilities = frozenset({"gradient", "subgradient", "prox_scores", "dual", "hessian"})

    def curvature(self) -> float:
        return 2.0

    def _dloss(self, z):
        y = self.data.y
        m = np.maximum(0.0, 1.0 - y * z)
        return m * m, -2.0 * y * m

    def _d2loss(self, z):
        return np.where(1.0 - self.data.y * z > 0.0, 2.0, 0.0)

    def prox_scores(self, v, step):
        """With the margin ``u = 1 - y v``: ``u`` kept where ``u <= 0``, else shrunk to
        ``u / (1 + 2 step w_i)``; then ``z = y (1 - u)``."""
        y = self.data.y
        u = 1.0 - y * np.asarray(v, dtype=np.float64)
        u = np.where(u > 0.0, u / (1.0 + 2.0 * step * self.data.row_weights), u)
        return y * (1.0 - u)

    def optimal_intercept_at_zero(self):
        p = self.data.task_mean((self.data.y > 0).astype(float))  # (weighted) class share
        return 2.0 * p - 1.0

    def _score_conjugate(self, a):
        """``-c + c^2 / 4`` with ``c = -y a >= 0`` (``inf`` for ``c < 0``)."""
        c = -self.data.y * a
        return np.where(c >= 0.0, -c + 0.25 * c * c, np.inf)


class Hinge(Datafit):
    """Hinge ``sum_t (1 / n_t) sum_i max(0, 1 - y_i z_i)``: value and a subgradient.

    Not smooth: no ``"gradient"`` capability (``lipschitz`` raises); solved by subgradient
    methods or, over polyhedral sets, as a linear program.
    """

    name = "hinge"
    capabilities = frozenset({"subgradient", "max_affine", "dual"})

    def _dloss(self, z):
        y = self.data.y
        m = 1.0 - y * z
        return np.maximum(0.0, m), np.where(m > 0, -y, 0.0)

    def lipschitz(self) -> float:
        raise ValueError("The hinge loss is not smooth: it has no Lipschitz gradient.")

    def value_and_grad(self, W, b=None):
        """Value and a subgradient (the derivative 0 is taken at the kink)."""
        return super().value_and_grad(W, b)

    def max_affine_pieces(self):
        """``a = -y``, ``c = 1``: ``ell(y_i, z) = max(0, 1 - y_i z)``."""
        return -self.data.y.copy(), np.ones(self.data.n_rows)

    def optimal_intercept_at_zero(self):
        p = self.data.task_mean((self.data.y > 0).astype(float))  # (weighted) class share
        return np.where(p >= 0.5, 1.0, -1.0)

    def _score_conjugate(self, a):
        """``-c`` with ``c = -y a`` in ``[0, 1]`` (``inf`` outside): the subgradient
        ``a = -y`` on the rows inside the margin, ``0`` outside."""
        c = -self.data.y * a
        return np.where((c >= 0.0) & (c <= 1.0), -c, np.inf)


def _rms_entry(data: MultiTaskData) -> float:
    """Root mean square of the entries of the stacked design (with its implicit centring), or
    1 for an all-zero design; with row weights ``w_i``, ``sqrt(sum_i w_i ||x_i - mu_t||^2 /
    (d sum_i w_i))``."""
    d = data.n_features
    total, N = data.square_sum()  # N: the number of stacked rows (their total weight)
    if data.x_offset is not None:  # sum_i ||x_i - mu_t||^2 = sum_i ||x_i||^2 - n_t ||mu_t||^2
        total -= float(np.sum(data.task_weight_sums * np.sum(np.square(data.x_offset), axis=0)))
    mean = max(total, 0.0) / (N * d) if N * d > 0 else 0.0
    return float(np.sqrt(mean)) if mean > 0 else 1.0


_LOSSES: dict[str, type[Datafit]] = {"squared": Squared, "logistic": Logistic,
                                     "squared_hinge": SquaredHinge, "hinge": Hinge}


def get_datafit(name: str, data: MultiTaskData, fit_intercept: bool = True, **options) -> Datafit:
    """Build the datafit ``name`` in {"squared", "logistic", "squared_hinge", "hinge"}.

    ``options`` (``alpha_l2``, ``center``, ``use_gram``) are passed to its constructor.
    """
    try:
        cls = _LOSSES[name]
    except KeyError:
        raise ValueError(f"Unknown loss {name!r}; choose from {sorted(_LOSSES)}.") from None
    return cls(data, fit_intercept, **options)
