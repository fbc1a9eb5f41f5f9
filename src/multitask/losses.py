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

Every datafit declares what it offers in :attr:`Datafit.capabilities` (see
:data:`DATAFIT_CAPABILITIES`); solvers check those declarations, never the class.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from scipy.special import expit, log1p

from multitask.data import MultiTaskData

__all__ = [
    "DATAFIT_CAPABILITIES",
    "Datafit",
    "Hinge",
    "Logistic",
    "Squared",
    "SquaredHinge",
    "get_datafit",
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
#:   programs).
DATAFIT_CAPABILITIES = frozenset({"gradient", "quadratic", "prox_scores", "subgradient",
                                  "max_affine"})


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
    capabilities: frozenset[str] = frozenset({"gradient", "subgradient"})

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
                                      data_c.x_offset, data.row_order)
        else:
            self.data = data
            self.x_mean = np.zeros((data.n_features, data.n_tasks))
        self._grad_scale: float | None = None
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

    def scores(self, W: np.ndarray, b: np.ndarray | None) -> np.ndarray:
        """Stacked scores ``x_i^T w_{t(i)} + b_{t(i)}``, shape ``(N,)``."""
        z = self.data.matvec(W)
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

    def lipschitz(self) -> float:
        """A Lipschitz constant of the gradient with respect to ``(W, b)``.

        ``L = curvature * max_t ||[X_t, 1]||_2^2 / n_t + alpha_l2`` (the Hessian is block
        diagonal over tasks).
        """
        s = self.data.task_spectral_norms_sq(intercept=self.has_intercept_variable)
        return float(self.curvature() * np.max(s / self.data.task_sizes)) + self.alpha_l2

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
            scale = float(np.linalg.norm(self.grad_at_zero()))
            if not scale > 0:
                W0 = np.zeros((self.data.n_features, self.data.n_tasks))
                _, gW, gb = self._loss_value_and_grad(W0, self.init_intercept())
                scale = float(np.sqrt(np.vdot(gW, gW) + (np.vdot(gb, gb) if gb is not None
                                                         else 0.0)))
            self._grad_scale = scale if np.isfinite(scale) and scale > 0 else 1.0
        return self._grad_scale

    def quadratic_form(self):
        """``"quadratic"``: ``(H, C, n_grams)`` with ``F(W) = sum_t 0.5 w_t^T H_t w_t -
        C_t^T w_t + const``; ``H`` of shape ``(m, d, d)`` (``(1, d, d)`` when shared)."""
        raise NotImplementedError(f"The {self.name} loss is not quadratic.")

    def max_affine_pieces(self):
        """``"max_affine"``: ``(a, c)`` with ``ell(y_i, z) = max(0, a_i z + c_i)``."""
        raise NotImplementedError(f"The {self.name} loss is not piecewise linear.")


class Squared(Datafit):
    """Squared loss ``sum_t (1 / (2 n_t)) ||X_t w_t + b_t - y_t||^2`` (+ ridge term).

    The intercepts are eliminated by centring each task; the gradient uses the per-task Gram
    matrices ``X_t^T X_t`` (computed on first use and cached) when ``n_t >= d`` on average
    (then one iteration costs ``m d^2`` instead of ``2 N d``); only then does it offer the
    ``"quadratic"`` capability.

    Parameters
    ----------
    data, fit_intercept, alpha_l2
        As in :class:`Datafit`.
    use_gram : bool, optional
        Force the Gram form on or off (default: when the average ``n_t >= d`` and the
        matrices take at most 5e7 numbers).
    """

    name = "squared"
    capabilities = frozenset({"gradient", "subgradient", "quadratic", "prox_scores"})

    def __init__(self, data: MultiTaskData, fit_intercept: bool = True, alpha_l2: float = 0.0,
                 center: bool = True, use_gram: bool | None = None):
        super().__init__(data, False, alpha_l2)
        self.fit_intercept = bool(fit_intercept)
        self.center = self.fit_intercept
        if self.fit_intercept:
            self.data, self.x_mean, self.y_mean = data.centered()
        else:
            self.x_mean = np.zeros((data.n_features, data.n_tasks))
            self.y_mean = np.zeros(data.n_tasks)
        d, m = self.data.n_features, self.data.n_tasks
        self._use_gram_option = use_gram
        if use_gram is None:
            mean_rows = self.data.n_rows / max(m, 1)
            n_mats = 1 if self.data.shared else m
            use_gram = mean_rows >= d and n_mats * d * d <= 5e7
        self.use_gram = bool(use_gram)
        self._gram: tuple | None = None
        if not self.use_gram:  # the Gram matrices would cost more than they save
            self.capabilities = self.capabilities - {"quadratic"}

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

    def intercept_parts(self, b=None):
        return self.y_mean.copy(), self.x_mean

    def optimal_intercept_at_zero(self):
        return None

    def prox_scores(self, v, step):
        """``z_i = (v_i + step w_i y_i) / (1 + step w_i)`` (on the centred targets)."""
        sw = step * self.data.row_weights
        return (np.asarray(v, dtype=np.float64) + sw * self.data.y) / (1.0 + sw)

    def _grams(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(G, c, yy)``: per-task ``X_t^T X_t`` ``(m or 1, d, d)``, ``X_t^T y_t`` ``(d, m)``
        and ``y_t^T y_t`` ``(m,)``, computed once."""
        if self._gram is None:
            y = self.data.y
            self._gram = (self.data.gram(), self.data.xty(), self.data.task_sum(y * y))
        return self._gram

    def quadratic_form(self):
        """``(H, C)``: ``H_t = X_t^T X_t / n_t + alpha_l2 I`` (shape ``(m, d, d)``, or
        ``(1, d, d)`` for a shared design) and ``C = X_t^T y_t / n_t`` ``(d, m)``, so that
        ``F(W) = sum_t 0.5 w_t^T H_t w_t - C_t^T w_t + const``."""
        G, c, _ = self._grams()
        n = self.data.task_sizes.astype(np.float64)
        H = G / n[0] if G.shape[0] == 1 else G / n[:, None, None]
        if self.alpha_l2:
            H = H + self.alpha_l2 * np.eye(H.shape[1])[None]
        return H, c / n[None, :]

    def _loss_value_and_grad(self, W, b=None):
        if not self.use_gram:
            return super()._loss_value_and_grad(W, None)
        G, c, yy = self._grams()
        n = self.data.task_sizes
        GW = G[0] @ W if G.shape[0] == 1 else np.einsum("tij,jt->it", G, W)
        wGw = np.einsum("jt,jt->t", W, GW)
        wc = np.einsum("jt,jt->t", W, c)
        val = float(np.sum(0.5 * (wGw - 2 * wc + yy) / n))
        return val, (GW - c) / n[None, :], None

    def _loss_value(self, W, b=None):
        if not self.use_gram:
            return super()._loss_value(W, None)
        return self._loss_value_and_grad(W)[0]

    def value_and_grad(self, W, b=None):
        return super().value_and_grad(W, None)

    def value(self, W, b=None):
        return super().value(W, None)

    def lipschitz(self) -> float:
        n = self.data.task_sizes
        if self.use_gram:
            G = self._grams()[0]
            ev = np.linalg.eigvalsh(G)[:, -1]
            lip = float(np.max(ev / n)) if G.shape[0] > 1 else float(ev[0] / n.min())
        else:
            lip = float(np.max(self.data.task_spectral_norms_sq(False) / n))
        return lip + self.alpha_l2

    def grad_at_zero(self):
        return -self.data.xty() / self.data.task_sizes[None, :]


class Logistic(Datafit):
    """Logistic loss ``sum_t (1 / n_t) sum_i log(1 + exp(-y_i z_i))``, labels -1/+1."""

    name = "logistic"

    def curvature(self) -> float:
        return 0.25

    def _dloss(self, z):
        yz = self.data.y * z
        vals = np.logaddexp(0.0, -yz)  # log(1 + exp(-yz)), computed stably
        dz = -self.data.y * expit(-yz)
        return vals, dz

    def optimal_intercept_at_zero(self):
        p = self.data.task_sum((self.data.y > 0).astype(float)) / self.data.task_sizes
        p = np.clip(p, 1e-12, 1 - 1e-12)
        return np.log(p) - log1p(-p)


class SquaredHinge(Datafit):
    """Squared hinge ``sum_t (1 / n_t) sum_i max(0, 1 - y_i z_i)^2``, labels -1/+1."""

    name = "squared_hinge"
    capabilities = frozenset({"gradient", "subgradient", "prox_scores"})

    def curvature(self) -> float:
        return 2.0

    def _dloss(self, z):
        y = self.data.y
        m = np.maximum(0.0, 1.0 - y * z)
        return m * m, -2.0 * y * m

    def prox_scores(self, v, step):
        """With the margin ``u = 1 - y v``: ``u`` kept where ``u <= 0``, else shrunk to
        ``u / (1 + 2 step w_i)``; then ``z = y (1 - u)``."""
        y = self.data.y
        u = 1.0 - y * np.asarray(v, dtype=np.float64)
        u = np.where(u > 0.0, u / (1.0 + 2.0 * step * self.data.row_weights), u)
        return y * (1.0 - u)

    def optimal_intercept_at_zero(self):
        p = self.data.task_sum((self.data.y > 0).astype(float)) / self.data.task_sizes
        return 2.0 * p - 1.0


class Hinge(Datafit):
    """Hinge ``sum_t (1 / n_t) sum_i max(0, 1 - y_i z_i)``: value and a subgradient.

    Not smooth: no ``"gradient"`` capability (``lipschitz`` raises); solved by subgradient
    methods or, over polyhedral sets, as a linear program.
    """

    name = "hinge"
    capabilities = frozenset({"subgradient", "max_affine"})

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
        p = self.data.task_sum((self.data.y > 0).astype(float)) / self.data.task_sizes
        return np.where(p >= 0.5, 1.0, -1.0)


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
