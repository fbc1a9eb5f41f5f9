"""The squared loss ``0.5 (y - z)^2``: intercepts eliminated by centring, cached Gram matrices."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from multitask.data import MultiTaskData
from multitask.losses.base import Datafit, DualPoint
from multitask.losses.grams import (
    _centred_view,
    _gram_chunks,
    _is_dense_per_task,
    _task_grams,
    max_scaled_eigenvalue,
)
from multitask.losses.registry import register_loss

__all__ = ["GRAM_NONZEROS_PER_ENTRY", "GRAM_ROWS_PER_FEATURE", "SHARED_GRAM_ROWS_PER_FEATURE",
           "Squared"]

#: Average rows per task, in units of the number of features, from which the squared loss's
#: gradient goes through cached per-task Gram matrices on a dense per-task design. An
#: accelerated-gradient iteration reads the Gram matrices twice (``2 m d^2`` numbers) or the
#: design once (``N d``, :meth:`MultiTaskData.squared_residual_pass`): they break even at
#: ``n_t = 2 d``, and the Gram matrices cost their own pass and memory to build
#: (``benchmarks/bench_scale.py`` at ``n_t = d``; the figure: docs/tuning_constants.md).
GRAM_ROWS_PER_FEATURE = 2.0
#: Stored entries of a sparse design per Gram matrix, in units of its ``d^2`` entries, from
#: which the squared loss builds Gram matrices (and offers ``"quadratic"``): below it the
#: Gram matrices cost more to build, hold and read than the design (an iteration reads it
#: twice, ``2 nnz`` products, against ``d^2`` for a Gram matrix); the break-even lies about
#: 0.5 (``benchmarks/bench_scale_axes.py``; the figures: docs/tuning_constants.md).
GRAM_NONZEROS_PER_ENTRY = 1.0
#: Rows per feature from which a shared design (one Gram matrix for every task) gives the
#: squared loss its Gram matrix (and ``"quadratic"``): a product with it costs ``m d^2``,
#: the two with the design ``2 m n d``. A per-task design needs ``n_t >= d`` on average.
#: Measured on ``benchmarks/bench_cv_two_param.py``'s survey problem (8 rows, 10 features,
#: 190 tasks; the figures: docs/tuning_constants.md).
SHARED_GRAM_ROWS_PER_FEATURE = 0.5


def _gram_times(G: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``(G_t w_t)_t`` of shape ``(d, m)`` for Gram matrices ``G`` of shape ``(m, d, d)``, or
    ``G_0 W`` for one shared matrix ``(1, d, d)``."""
    return G[0] @ W if G.shape[0] == 1 else np.matmul(G, W.T[:, :, None])[:, :, 0].T


class Squared(Datafit):
    """Squared loss ``sum_t (1 / (2 n_t)) ||X_t w_t + b_t - y_t||^2`` (+ ridge term).

    The intercepts are eliminated by centring each task. It offers the ``"quadratic"``
    capability (per-task Gram matrices ``X_t^T X_t``, computed on first use and cached) when
    ``n_t >= d`` on average (a shared design of ``n`` rows: ``n >=``
    :data:`SHARED_GRAM_ROWS_PER_FEATURE` ``* d``), the matrices take at most 5e7 numbers
    and, for a sparse design, it stores at least :data:`GRAM_NONZEROS_PER_ENTRY` ``* d^2``
    entries per matrix. Where it does, the gradient goes through the Gram matrices (``m d^2``
    numbers read per product) for shared and sparse designs, and for dense per-task designs from
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
                              "least_squares", "curvature_bound"})

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
            # one Gram matrix for a shared design: a product with it (m d^2) costs at most
            # the two products with the design (2 m n d) from d <= 2 n rows
            rows_needed = SHARED_GRAM_ROWS_PER_FEATURE * d if self.data.shares_gram else d
            quadratic = mean_rows >= rows_needed and n_mats * d * d <= 5e7
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
            G = (self._task_grams() if _is_dense_per_task(self.raw) else self.data.gram())
            self._gram = (G, self.data.xty(), self.data.task_sum(self.data.weigh(y) * y))
        return self._gram

    def _task_grams(self) -> np.ndarray:
        """The Gram matrices of a dense per-task design, centred with the loss's ``x_mean``
        (:func:`~multitask.losses.grams._task_grams`), cached on the data: ``x_mean`` is the
        data's own (cached) centring, or zero without intercept, so every squared loss on
        these data has the same ones."""
        return self.raw.cached(("squared_task_grams", self.fit_intercept),
                               lambda: _task_grams(self.raw, self.x_mean))

    def quadratic_eigen(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`Datafit.quadratic_eigen`, cached on the data the loss sees for its ridge
        ``alpha_l2`` (the ``H_t`` of :meth:`quadratic_form` depend on nothing else): the fits
        of a path on the same data share it. The decomposition of the last ridge asked for
        is kept."""
        if self._quadratic_eigen is None:
            key = ("squared_quadratic_eigen", _is_dense_per_task(self.raw))
            self._quadratic_eigen = self.data.cached_latest(
                key, self.alpha_l2, lambda: super(Squared, self).quadratic_eigen())
        return self._quadratic_eigen

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
        GW = _gram_times(G, W)
        wGw = np.einsum("jt,jt->t", W, GW)
        wc = np.einsum("jt,jt->t", W, c)
        val = float(np.sum(0.5 * (wGw - 2 * wc + yy) / n))
        return val, (GW - c) / n[None, :], None

    @property
    def hessian_from_grams(self) -> bool:
        """Whether :meth:`hessian_product` reads the cached Gram matrices (the Gram form,
        ``use_gram``): the loss's value and gradient at a moved point then follow from one
        product with the move (the steps of :mod:`multitask.solvers.fista`)."""
        return self.use_gram

    def hessian_product(self, D: np.ndarray) -> np.ndarray:
        """``(H_t d_t)_t``: the product of the loss's (constant) Hessian with a direction ``D``
        of shape ``(d, m)``, ``H_t = X_t^T D_t X_t / W_t + alpha_l2 I`` of
        :meth:`quadratic_form`, through the cached Gram matrices (so that ``grad F(W + D) =
        grad F(W) + H D``)."""
        G = self._grams()[0]
        n = self.data.task_weight_sums
        out = _gram_times(G, D) / n[None, :]
        return out + self.alpha_l2 * D if self.alpha_l2 else out

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
        batched Cholesky factorization certifies it (cheaper than the eigenvalues of every
        task; the figure: docs/tuning_constants.md). Shared or sparse designs use the data layer's
        spectral norms. Where :meth:`quadratic_eigen` has been computed, its largest
        eigenvalue (a relative ``1e-12`` added for rounding) is used instead. The bounds from
        Gram matrices are cached on the data too (every squared loss on them shares them).
        """
        if self._lipschitz is None:
            n = self.data.task_weight_sums  # n_t without row weights (``W_t`` with them)
            if self._quadratic_eigen is not None:
                top = float(self._quadratic_eigen[0].max()) - self.alpha_l2
                lip = max(top, 0.0) * (1.0 + 1e-12)
            elif self.use_gram:
                lip = self.data.cached(("squared_lipschitz", _is_dense_per_task(self.raw)),
                                       self._gram_lipschitz)
            elif _is_dense_per_task(self.raw):
                lip = self.raw.cached(("squared_lipschitz_chunks", self.fit_intercept),
                                      self._chunk_lipschitz)
            else:
                lip = float(np.max(self.data.task_spectral_norms_sq(False, weighted=True) / n))
            self._lipschitz = lip
        return self._lipschitz + self.alpha_l2

    def _gram_lipschitz(self) -> float:
        """``max_t lambda_max(G_t) / W_t`` from the Gram matrices (cached on the data by
        :meth:`lipschitz`, as the Gram matrices themselves)."""
        n = self.data.task_weight_sums
        G = self._grams()[0]
        if G.shape[0] == 1:
            return float(np.linalg.eigvalsh(G[0])[-1] / n.min())
        return max_scaled_eigenvalue(G, 1.0 / n)

    def _chunk_lipschitz(self) -> float:
        """:meth:`_gram_lipschitz` of a dense per-task design from chunks of Gram matrices
        built on the fly (the smaller side of each task), none kept."""
        n = self.data.task_weight_sums
        lip = 0.0
        for tasks, Gc in _gram_chunks(self.raw, self.x_mean, small_side=True):
            lip = max(lip, max_scaled_eigenvalue(Gc, 1.0 / n[tasks]))
        return lip

    def grad_at_zero(self):
        """``-X_t^T D_t (y_t - mean(y_t)) / W_t`` (``D_t``, ``W_t``: the task's row weights and
        their sum; ``I`` and ``n_t`` without weights): one pass over the data (no Gram matrix,
        no centred copy of ``X``)."""
        return -self.data.xty() / self.data.task_weight_sums[None, :]


register_loss(Squared)
