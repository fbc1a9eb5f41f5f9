"""The datafit protocol: :class:`Datafit`, its dual point and the capabilities it declares.

Every loss of :mod:`multitask.losses` derives from :class:`Datafit` and follows the one scaling
convention of the package (see :mod:`multitask.losses`): the loss of task ``t`` is
``sum_{i in t} w_i ell(y_i, x_i^T w_t + b_t)`` with the normalized row weights ``w_i``
(:attr:`~multitask.data.MultiTaskData.row_weights`, ``1 / n_t`` without weights), plus the ridge
term ``(alpha_l2 / 2) ||W||_F^2``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from multitask.data import MultiTaskData
from multitask.losses.grams import _is_dense_per_task, _task_grams

__all__ = ["DATAFIT_CAPABILITIES", "Datafit", "DualPoint"]

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
#: * ``"curvature_bound"``: :meth:`Datafit.curvature` is a finite bound of ``ell''``
#:   everywhere, so :meth:`Datafit.lipschitz` and :meth:`Datafit.bound_hessian` are global
#:   (majorization, gap-safe screening). A smooth loss without it (the log-link GLMs, whose
#:   ``ell'' = exp(z)`` is unbounded; the Huber loss with a fitted scale) gives a finite local
#:   estimate instead (:meth:`Datafit.local_curvature`), from which solvers backtrack.
#: * ``"score_hessian"``: :meth:`Datafit.score_hessian` gives the Hessian in score space as a
#:   product where a row's scores are coupled (the multinomial loss), without ``ell''`` row by
#:   row: the steps of truncated Newton (:mod:`multitask.solvers.newton_cg`; every loss with
#:   ``"hessian"`` has the product too).
DATAFIT_CAPABILITIES = frozenset({"gradient", "quadratic", "prox_scores", "subgradient",
                                  "max_affine", "dual", "least_squares", "hessian",
                                  "curvature_bound", "score_hessian"})


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
    #: The link of the scores to the predicted mean: ``"identity"`` (``mean = z``) or
    #: ``"log"`` (``mean = exp(z)``, the log-link GLMs); see :meth:`inverse_link`.
    link: ClassVar[str] = "identity"
    #: Whether the estimators start the solvers at :meth:`optimal_intercept_at_zero` (the
    #: losses whose curvature or scale depends on where the scores are: a start at ``b = 0``
    #: can be far from the data, ``exp(0) = 1`` for counts of 10^6).
    starts_at_best_intercept: ClassVar[bool] = False
    #: Whether proximal Newton, started at ``W = 0``, first tries the fit of the squared loss
    #: with the same penalty (one step of its model) and starts there where the loss is lower
    #: (a robust loss whose scale shrinks as the fit improves: its first steps from zero are
    #: short).
    starts_from_least_squares: ClassVar[bool] = False

    def __init__(self, data: MultiTaskData, fit_intercept: bool = True, alpha_l2: float = 0.0,
                 center: bool = False):
        self.raw = data
        self.fit_intercept = bool(fit_intercept)
        self.alpha_l2 = float(alpha_l2)
        if not np.isfinite(self.alpha_l2) or self.alpha_l2 < 0:
            raise ValueError(f"alpha_l2 must be finite and >= 0, got {alpha_l2!r}.")
        self.center = bool(center) and self.fit_intercept
        if self.center:
            # centred features, original targets; one view of the data for every loss on them
            centred: tuple[MultiTaskData, np.ndarray] = data.cached(
                "centred_features", lambda: _centred_features(data))
            self.data, self.x_mean = centred
        else:
            self.data = data
            self.x_mean = np.zeros((data.n_features, data.n_tasks))
        self._grad_scale: float | None = None
        self._bound_hessian: tuple[np.ndarray, np.ndarray | None] | None = None
        self._quadratic_eigen: tuple[np.ndarray, np.ndarray] | None = None
        if self.alpha_l2:  # the ridge term is smooth but not separable over the scores
            self.capabilities = type(self).capabilities - {"max_affine", "prox_scores"}
        self.check_targets()

    def check_targets(self) -> None:
        """Raise a ``ValueError`` naming the task when a target lies outside the loss's domain
        (negative counts, non-positive targets of the Gamma loss); called by the constructor,
        before any fit. The targets of pairs of weight zero (missing targets) are not read.
        The base accepts every finite target (the data layer refuses the others)."""

    def _bad_target(self, bad: np.ndarray, what: str) -> None:
        """Raise ``ValueError`` for the first observed row of ``bad`` (a mask stacked like
        ``data.y``): ``what`` says what is wrong, the message names the task and the row."""
        data = self.data
        bad = np.asarray(bad, dtype=bool) & (data.row_weights > 0)
        if not bad.any():
            return
        i = int(np.flatnonzero(bad)[0])
        t = int(data.task_of_row[i])
        label = data.tasks[t].item() if isinstance(data.tasks[t], np.generic) else data.tasks[t]
        raise ValueError(
            f"The {self.name} loss needs {what}: task {label!r} has the target "
            f"{float(data.y[i])!r} (row {i - int(data.offsets[t])} of the task).")

    @staticmethod
    def inverse_link(z: np.ndarray) -> np.ndarray:
        """The predicted mean from the scores ``z``: ``z`` itself (identity link)."""
        return np.asarray(z, dtype=np.float64)

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
        return type(self)(data, **{**self.get_params(),
                                   "fit_intercept": self.has_intercept_variable,
                                   "center": False})

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

    def score_hessian(self, z: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        """``v -> H v``: the Hessian of ``sum_i w_i ell(y_i, z_i)`` in score space at the
        stacked scores ``z``, applied to stacked vectors ``v`` (``w_i`` the row weights): the
        diagonal ``w_i ell''(y_i, z_i)`` for a loss separable over the rows (the
        certificate's Newton steps along free directions). ``NotImplementedError`` without a
        second derivative; a loss whose rows are coupled (the Huber loss's fitted scale)
        overrides it."""
        wd = self.data.row_weights * self._d2loss(np.asarray(z, dtype=np.float64))
        return lambda v: wd * v

    def task_hessian_correction(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """``"hessian"``: the Hessian in score space beyond its diagonal ``w_i ell''_i``, where
        a task's rows are coupled: ``(c, k)`` with the Hessian of task ``t`` ``diag(w_t
        ell''_t) - k_t c_t c_t^T`` (``c`` stacked like ``y``, shape ``(N,)``; ``k`` shape
        ``(m,)``, ``>= 0``); None for a loss separable over the rows (the default)."""
        return None

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
        """Upper bound of ``ell''`` (the loss's own smoothness constant), ``inf`` where the
        loss has none (no ``"curvature_bound"`` capability)."""
        raise NotImplementedError

    def local_curvature(self) -> float:
        """A finite estimate of ``ell''`` where the solvers start: :meth:`curvature` for a
        loss with ``"curvature_bound"``; a loss without one overrides it (its curvature at
        the intercept-only fit). It scales :meth:`lipschitz` and the optimality measure of
        such losses, whose solvers backtrack from it."""
        return float(self.curvature())

    def _step_curvature(self) -> float:
        """:meth:`curvature` where it is a bound, else :meth:`local_curvature`."""
        if "curvature_bound" in self.capabilities or "gradient" not in self.capabilities:
            return float(self.curvature())
        return float(self.local_curvature())

    def weighted_grams(self) -> tuple[np.ndarray, np.ndarray | None]:
        """``(G, mu)``: the row-weighted Gram matrices ``Xc_t^T D_t Xc_t / W_t`` of the
        design as the loss sees it (centred per task when the intercepts are variables:
        ``mu`` the per-task feature means, ``None`` without intercept), shape ``(m, d, d)``
        (``(1, d, d)`` for a shared design): :meth:`bound_hessian` without its curvature and
        ridge term (the projection of the certificate's dual point reads them)."""
        n = self.data.task_weight_sums
        if not self.has_intercept_variable:
            G, mu = self.data.gram(), None
        elif _is_dense_per_task(self.data):  # centred chunk by chunk, no centred copy
            mu = self.data.x_means_and_constant()[0]
            G = _task_grams(self.data, mu)
        else:
            data_c, mu, _ = self.data.centered()
            G = data_c.gram()
        return (G / n[0] if G.shape[0] == 1 else G / n[:, None, None]), mu

    def bound_hessian(self) -> tuple[np.ndarray, np.ndarray | None]:
        """``(H, mu)``: the fixed Hessian of a quadratic upper bound of the loss, with the
        intercepts minimized out, and the per-task feature means (None without intercept).

        For ``ell'' <= c`` (:meth:`curvature`) the loss of task ``t`` is bounded around any
        point by a quadratic with Hessian ``c [X_t, 1]^T [X_t, 1] / n_t`` (plus ``alpha_l2``
        on ``w``); minimizing over the intercept leaves ``H_t = c Xc_t^T Xc_t / n_t +
        alpha_l2 I`` with ``Xc_t`` the centred design, shape ``(m, d, d)`` (``(1, d, d)`` for
        a shared design). Computed once and cached. A loss without ``"curvature_bound"``
        uses its :meth:`local_curvature` for ``c``: a quadratic model there, not a bound.
        """
        if self._bound_hessian is None:
            G, mu = self.weighted_grams()
            H = self._step_curvature() * G
            if self.alpha_l2:
                H = H + self.alpha_l2 * np.eye(H.shape[1])[None]
            self._bound_hessian = (H, mu)
        return self._bound_hessian

    def lipschitz(self) -> float:
        """A Lipschitz constant of the gradient with respect to ``(W, b)``.

        ``L = curvature * max_t ||[X_t, 1]||_2^2 / n_t + alpha_l2`` (the Hessian is block
        diagonal over tasks). Without ``"curvature_bound"`` the curvature is the
        :meth:`local_curvature` and ``L`` an estimate a solver must backtrack from.
        """
        s = self.data.task_spectral_norms_sq(intercept=self.has_intercept_variable,
                                             weighted=True)
        return (float(self._step_curvature() * np.max(s / self.data.task_weight_sums))
                + self.alpha_l2)

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
                L_W = float(self._step_curvature()
                            * np.max(norms / self.data.task_weight_sums))
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
        """``"max_affine"``: ``(a, c)`` with ``ell(y_i, z) = max(0, a_i z + c_i) + l_i z +
        k_i`` (``(l, k)`` of :meth:`max_affine_linear`, zero by default)."""
        raise NotImplementedError(f"The {self.name} loss is not piecewise linear.")

    def max_affine_linear(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``"max_affine"``: ``(l, k)``, the linear part ``l_i z + k_i`` of the rows' losses
        beside the hinge of :meth:`max_affine_pieces` (the pinball loss ``tau (y - z) +
        max(0, z - y)``), or ``None`` where there is none (the hinge)."""
        return None

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
        a = self.dual_domain(a)
        theta = a * w
        G = (self.data if design is None else design).rmatvec(theta)

        def conjugate(s: float) -> float:
            return self.conjugate_sum(a, s)

        return DualPoint(loss=loss, grad=G, conjugate=conjugate, score_grad=a)

    def dual_point_from(self, a: np.ndarray, b: np.ndarray | None = None, *,
                        loss: float = float("nan")) -> DualPoint:
        """A dual point from score derivatives ``a`` computed elsewhere (a solver's multiplier,
        stacked like ``data.y``): brought into the domain of the conjugate
        (:meth:`dual_domain`), balanced per task where the intercepts are variables (``b``
        given), then into the domain again; ``G = X^T (w a)``. ``loss``: the primal loss to
        report with it (the dual point does not read the primal point)."""
        a = self.dual_domain(np.asarray(a, dtype=np.float64))
        w = self.data.row_weights
        a = np.where(w > 0, a, 0.0)
        if b is not None and self.has_intercept_variable:
            a = self.dual_domain(_balance_per_task(self.data, a * w)
                                 / np.where(w > 0, w, 1.0))
        G = self.data.rmatvec(a * w)

        def conjugate(s: float) -> float:
            return self.conjugate_sum(a, s)

        return DualPoint(loss=loss, grad=G, conjugate=conjugate, score_grad=a)

    def balance_dual(self, a: np.ndarray) -> np.ndarray:
        """The score derivatives ``a`` of a dual point with, in each task, the larger of the
        positive and negative parts of ``theta = w a`` scaled down so that the task's sum is
        zero (a dual point must satisfy it when the intercepts are variables; the scaled point
        stays in the domain of the classification losses' conjugates); a new array."""
        w = self.data.row_weights
        return self.dual_domain(_balance_per_task(self.data, a * w) / np.where(w > 0, w, 1.0))

    def dual_domain(self, a: np.ndarray) -> np.ndarray:
        """The score derivatives ``a`` of a dual point brought inside the domain of the
        conjugate where rounding left them outside it (a loss whose domain couples the rows
        of a task, the Huber loss with a fitted scale, scales each task down); ``a`` itself
        for the losses whose score derivatives always lie in it."""
        return a

    def conjugate_sum(self, a: np.ndarray, s: float = 1.0) -> float:
        """``F^*(s theta) = sum_i w_i ell^*(s a_i)`` for the dual point ``theta_i = w_i a_i``
        (``+inf`` outside the domain), over the rows of positive weight."""
        w = self.data.row_weights
        rows = w > 0
        return float(w[rows] @ self._score_conjugate(s * np.asarray(a, dtype=np.float64))[rows])


def _centred_features(data: MultiTaskData) -> tuple[MultiTaskData, np.ndarray]:
    """``(data_c, x_mean)``: ``data`` with its features centred per task
    (:meth:`MultiTaskData.centered`) and its targets as they are."""
    data_c, x_mean, _ = data.centered()
    return MultiTaskData(data_c.X, data.y, data.offsets, data.tasks, data.shared,
                         data_c.x_offset, data.row_order, x_constant=data_c.x_constant,
                         sample_weight=data.sample_weight), x_mean


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
