"""Losses (datafits) of multi-task models, all under one scaling convention.

For tasks ``t = 1..m`` with ``n_t`` rows each, ``W`` of shape ``(d, m)`` and intercepts ``b``
of shape ``(m,)``::

    F(W, b) = sum_t (1 / n_t) * sum_{i in task t} ell(y_i, x_i^T w_t + b_t)

with ``ell`` one of

* :class:`Squared`:       ``0.5 * (y - z)**2``
* :class:`Logistic`:      ``log(1 + exp(-y z))``, ``y in {-1, +1}``
* :class:`SquaredHinge`:  ``max(0, 1 - y z)**2`` (LIBLINEAR's L2-loss SVM)
* :class:`Hinge`:         ``max(0, 1 - y z)`` (value and a subgradient only)

With a shared design (``n_t = n``) the squared loss is ``||Y - X W||_F^2 / (2 n)``, the datafit
of scikit-learn's ``MultiTaskLasso``. Intercepts are never penalized; the squared loss eliminates
them exactly by centring each task (``b_t = mean(y_t) - mean(X_t) w_t``), the other losses keep
them as variables of the solver.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, log1p

from multitask.data import MultiTaskData

__all__ = ["Datafit", "Hinge", "Logistic", "Squared", "SquaredHinge", "get_datafit"]


class Datafit:
    """Base class: a loss bound to a :class:`~multitask.data.MultiTaskData`.

    Parameters
    ----------
    data : MultiTaskData
        The training data (targets -1/+1 for classification losses).
    fit_intercept : bool, default=True
        Fit one unpenalized intercept per task.
    """

    name = "base"
    smooth = True

    def __init__(self, data: MultiTaskData, fit_intercept: bool = True):
        self.data = data
        self.fit_intercept = fit_intercept

    # --- interface ---------------------------------------------------------
    @property
    def has_intercept_variable(self) -> bool:
        """Whether the solver must optimize the intercepts ``b`` as variables."""
        return self.fit_intercept

    def init_intercept(self) -> np.ndarray | None:
        """Starting intercepts (``None`` when there is no intercept variable)."""
        return np.zeros(self.data.n_tasks) if self.has_intercept_variable else None

    def _dloss(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-row loss values and derivatives with respect to the score ``z``."""
        raise NotImplementedError

    def scores(self, W: np.ndarray, b: np.ndarray | None) -> np.ndarray:
        """Stacked scores ``x_i^T w_{t(i)} + b_{t(i)}``, shape ``(N,)``."""
        z = self.data.matvec(W)
        if b is not None:
            z += self.data.expand(b)
        return z

    def value(self, W: np.ndarray, b: np.ndarray | None = None) -> float:
        """Return ``F(W, b)``."""
        vals, _ = self._dloss(self.scores(W, b))
        return float(vals @ self.data.row_weights)

    def value_scores(self, z: np.ndarray) -> float:
        """Return the loss as a function of the stacked scores: ``sum_i w_i ell(y_i, z_i)``.

        ``z`` has shape ``(N,)`` (stacked like ``data.y``) and ``w_i = 1 / n_{t(i)}``.
        """
        vals, _ = self._dloss(np.asarray(z, dtype=np.float64))
        return float(vals @ self.data.row_weights)

    def prox_scores(self, v: np.ndarray, step: float) -> np.ndarray:
        """Proximal operator of the loss in score space, row by row.

        ``argmin_z sum_i w_i ell(y_i, z_i) + (1 / (2 step)) ||z - v||^2`` with ``w_i = 1/n_{t(i)}``
        (what splitting methods such as linearized ADMM need); ``v`` and the result have shape
        ``(N,)``. Implemented where ``ell`` has a closed-form prox.
        """
        raise NotImplementedError(f"The {self.name} loss has no closed-form prox in score space.")

    def value_and_grad(self, W, b=None):
        """Return ``(F, dF/dW (d, m), dF/db (m,) or None)``."""
        vals, dz = self._dloss(self.scores(W, b))
        w = self.data.row_weights
        r = dz * w
        gW = self.data.rmatvec(r)
        gb = self.data.task_sum(r) if b is not None else None
        return float(vals @ w), gW, gb

    def grad(self, W, b=None):
        """Return ``(dF/dW, dF/db)``."""
        _, gW, gb = self.value_and_grad(W, b)
        return gW, gb

    def curvature(self) -> float:
        """Upper bound of ``ell''`` (the loss's own smoothness constant)."""
        raise NotImplementedError

    def lipschitz(self) -> float:
        """A Lipschitz constant of the gradient with respect to ``(W, b)``.

        ``L = curvature * max_t ||[X_t, 1]||_2^2 / n_t`` (the Hessian is block diagonal over
        tasks).
        """
        s = self.data.task_spectral_norms_sq(intercept=self.has_intercept_variable)
        return float(self.curvature() * np.max(s / self.data.task_sizes))

    def intercept(self, W: np.ndarray, b: np.ndarray | None) -> np.ndarray:
        """The fitted intercepts for the solution ``(W, b)``, shape ``(m,)``."""
        if b is None:
            return np.zeros(self.data.n_tasks)
        return np.asarray(b, dtype=np.float64)

    def optimal_intercept_at_zero(self) -> np.ndarray | None:
        """The minimizer of ``F(0, b)`` over ``b`` (None without intercept)."""
        raise NotImplementedError

    def grad_at_zero(self) -> np.ndarray:
        """Gradient with respect to ``W`` at ``W = 0`` and the best intercepts, ``(d, m)``."""
        b0 = self.optimal_intercept_at_zero() if self.has_intercept_variable else None
        W0 = np.zeros((self.data.n_features, self.data.n_tasks))
        return self.grad(W0, b0)[0]

    def lambda_max(self, penalty: str) -> float:
        """Smallest ``lam`` whose penalized solution is ``W = 0``.

        Parameters
        ----------
        penalty : {"l1", "l21", "trace", "column_l2"}
            ``l1``: ``max |G|``; ``l21``: ``max_j ||G_j.||_2``; ``trace``: ``||G||_2``;
            ``column_l2``: ``max_t ||G_.t||_2``, where ``G`` is the gradient at zero.
        """
        G = self.grad_at_zero()
        if penalty == "l1":
            return float(np.max(np.abs(G))) if G.size else 0.0
        if penalty == "l21":
            return float(np.max(np.linalg.norm(G, axis=1))) if G.size else 0.0
        if penalty == "trace":
            return float(np.linalg.norm(G, 2)) if G.size else 0.0
        if penalty == "column_l2":
            return float(np.max(np.linalg.norm(G, axis=0))) if G.size else 0.0
        raise ValueError(
            f"No lambda_max for penalty {penalty!r}: choose from 'l1', 'l21', 'trace', 'column_l2'."
        )


class Squared(Datafit):
    """Squared loss ``sum_t (1 / (2 n_t)) ||X_t w_t + b_t - y_t||^2``.

    The intercepts are eliminated by centring each task; the gradient uses the cached per-task
    Gram matrices ``X_t^T X_t`` when ``n_t >= d`` on average (then one iteration costs
    ``m d^2`` instead of ``2 N d``).
    """

    name = "squared"

    def __init__(
        self, data: MultiTaskData, fit_intercept: bool = True, use_gram: bool | None = None
    ):
        super().__init__(data, fit_intercept)
        self.raw = data
        if fit_intercept:
            self.data, self.x_mean, self.y_mean = data.centered()
        else:
            self.x_mean = np.zeros((data.n_features, data.n_tasks))
            self.y_mean = np.zeros(data.n_tasks)
        d, m = self.data.n_features, self.data.n_tasks
        if use_gram is None:
            mean_rows = self.data.n_rows / max(m, 1)
            n_mats = 1 if self.data.shared else m
            use_gram = mean_rows >= d and n_mats * d * d <= 5e7
        self.use_gram = bool(use_gram)
        if self.use_gram:
            self._G = self.data.gram()
            self._c = self.data.xty()
            y = self.data.y
            self._yy = self.data.task_sum(y * y)

    @property
    def has_intercept_variable(self) -> bool:
        return False

    def curvature(self) -> float:
        return 1.0

    def _dloss(self, z):
        r = z - self.data.y
        return 0.5 * r * r, r

    def prox_scores(self, v, step):
        """``z_i = (v_i + step w_i y_i) / (1 + step w_i)`` (on the centred targets)."""
        sw = step * self.data.row_weights
        return (np.asarray(v, dtype=np.float64) + sw * self.data.y) / (1.0 + sw)

    def _gram_product(self, W):
        G = self._G
        if G.shape[0] == 1:
            return G[0] @ W
        return np.einsum("tij,jt->it", G, W)

    def value_and_grad(self, W, b=None):
        if not self.use_gram:
            return super().value_and_grad(W, None)
        n = self.data.task_sizes
        GW = self._gram_product(W)
        wGw = np.einsum("jt,jt->t", W, GW)
        wc = np.einsum("jt,jt->t", W, self._c)
        val = float(np.sum(0.5 * (wGw - 2 * wc + self._yy) / n))
        return val, (GW - self._c) / n[None, :], None

    def value(self, W, b=None):
        if not self.use_gram:
            return super().value(W, None)
        return self.value_and_grad(W)[0]

    def lipschitz(self) -> float:
        n = self.data.task_sizes
        if self.use_gram:
            ev = np.linalg.eigvalsh(self._G)[:, -1]
            return float(np.max(ev / n)) if self._G.shape[0] > 1 else float(ev[0] / n.min())
        return float(np.max(self.data.task_spectral_norms_sq(False) / n))

    def intercept(self, W, b=None):
        if not self.fit_intercept:
            return np.zeros(self.data.n_tasks)
        return self.y_mean - np.einsum("jt,jt->t", self.x_mean, W)

    def optimal_intercept_at_zero(self):
        return None

    def grad_at_zero(self):
        return -self.data.xty() / self.data.task_sizes[None, :]


class Logistic(Datafit):
    """Logistic loss ``sum_t (1 / n_t) sum_i log(1 + exp(-y_i z_i))``, labels -1/+1."""

    name = "logistic"

    def curvature(self) -> float:
        return 0.25

    def _dloss(self, z):
        yz = self.data.y * z
        # log(1 + exp(-yz)) computed stably
        vals = np.logaddexp(0.0, -yz)
        dz = -self.data.y * expit(-yz)
        return vals, dz

    def optimal_intercept_at_zero(self):
        p = self.data.task_sum((self.data.y > 0).astype(float)) / self.data.task_sizes
        p = np.clip(p, 1e-12, 1 - 1e-12)
        return np.log(p) - log1p(-p)


class SquaredHinge(Datafit):
    """Squared hinge ``sum_t (1 / n_t) sum_i max(0, 1 - y_i z_i)^2``, labels -1/+1."""

    name = "squared_hinge"

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

    Not smooth: use it with subgradient methods only (``lipschitz`` raises).
    """

    name = "hinge"
    smooth = False

    def _dloss(self, z):
        y = self.data.y
        m = 1.0 - y * z
        return np.maximum(0.0, m), np.where(m > 0, -y, 0.0)

    def lipschitz(self) -> float:
        raise ValueError("The hinge loss is not smooth: it has no Lipschitz gradient.")

    def subgradient(self, W, b=None):
        """A subgradient ``(dW, db)`` (the derivative 0 is taken at the kink)."""
        return self.grad(W, b)

    def optimal_intercept_at_zero(self):
        p = self.data.task_sum((self.data.y > 0).astype(float)) / self.data.task_sizes
        return np.where(p >= 0.5, 1.0, -1.0)


_LOSSES = {"squared": Squared, "logistic": Logistic, "squared_hinge": SquaredHinge,
           "hinge": Hinge}


def get_datafit(name: str, data: MultiTaskData, fit_intercept: bool = True) -> Datafit:
    """Build the datafit ``name`` in {"squared", "logistic", "squared_hinge", "hinge"}."""
    try:
        cls = _LOSSES[name]
    except KeyError:
        raise ValueError(f"Unknown loss {name!r}; choose from {sorted(_LOSSES)}.") from None
    return cls(data, fit_intercept)
