"""Graph-regularized multi-task learning: a quadratic coupling of the tasks plus sparsity.

For ``W`` of shape ``(n_features, n_tasks)`` and a symmetric positive semi-definite task
matrix ``M`` (``n_tasks x n_tasks``, typically the Laplacian ``L = D - A`` of a task graph with
adjacency ``A``)::

    h(W) = alpha * tr(W M W^T) + alpha_l1 * ||W||_1

With ``M = R R^T`` this is ``alpha ||W R||_F^2 + alpha_l1 ||W||_1``, MALSAR's ``SRMTL`` and
RMTL's ``Graph`` models; for a Laplacian, ``tr(W L W^T) = sum_{s < t} A_st ||w_s - w_t||_2^2``
(the weights of tasks joined by an edge are pulled together). The quadratic term is the
penalty's ``"smooth"`` part ``g`` (gradient ``2 alpha W M``, Lipschitz constant
``2 alpha lambda_max(M)``), which the gradient methods add to the loss; the prox is that of the
l1 term (soft-thresholding). The mean-regularized model of Evgeniou & Pontil ("Regularized
multi-task learning", KDD 2004) is ``M = I - 11^T / m``: ``tr(W M W^T) = sum_t ||w_t -
w_bar||^2`` with ``w_bar`` the mean of the task weights (:class:`MeanRegularization`).

**More than two classes.** A multinomial model of ``K`` classes per task has ``m K`` weight
columns (column ``t K + k`` for class ``k`` of task ``t``; :mod:`multitask.losses.multinomial`).
With ``n_classes=K`` the task matrix acts on them as ``M kron I_K``: class ``k`` of task ``t`` is
coupled with class ``k`` of task ``t'`` by ``M[t, t']``, and the classes of one task are not
coupled with each other, ``tr(W (M kron I_K) W^T) = sum_k tr(W_k M W_k^T)`` with ``W_k`` the
class-``k`` columns. ``M`` stays the ``m x m`` task matrix (``laplacian``); the products go
through the reshaped ``(n_features, m, K)`` array, never forming the Kronecker product but in
:meth:`GraphRegularization.task_coupling`.
"""

from __future__ import annotations

import numpy as np

from multitask.penalties.base import Penalty, check_strength, norm_bound
from multitask.penalties.class_columns import check_classes
from multitask.penalties.prox import soft_threshold

__all__ = ["GraphRegularization", "MeanRegularization", "check_task_matrix",
           "mean_laplacian"]


def check_task_matrix(M, n_tasks: int | None = None, name: str = "laplacian") -> np.ndarray:
    """Validate a task coupling matrix: square, finite, symmetric, positive semi-definite.

    Parameters
    ----------
    M : array-like of shape (m, m)
        The matrix ``M`` of ``tr(W M W^T)``.
    n_tasks : int, optional
        The expected ``m``.
    name : str
        Name used in the error messages.

    Returns
    -------
    ndarray of shape (m, m)
        A symmetrized float copy ``(M + M^T) / 2``.

    Raises
    ------
    ValueError
        Naming what is wrong (shape, non-finite entries, asymmetry, a negative eigenvalue).
    """
    A = np.array(M, dtype=np.float64, copy=True)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"{name} must be a square (n_tasks, n_tasks) matrix, got shape "
                         f"{A.shape}.")
    if n_tasks is not None and A.shape[0] != n_tasks:
        raise ValueError(f"{name} is {A.shape[0]} x {A.shape[0]} but the data have {n_tasks} "
                         "tasks.")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} must hold finite numbers.")
    scale = max(1.0, float(np.abs(A).max())) if A.size else 1.0
    if A.size and float(np.abs(A - A.T).max()) > 1e-10 * scale:
        raise ValueError(f"{name} must be symmetric.")
    A = 0.5 * (A + A.T)
    complete = _complete_weight(A) if A.size else None
    if A.size and not (complete is not None and complete >= 0.0):  # else PSD: 0 and w m
        low = float(np.linalg.eigvalsh(A).min())
        if low < -1e-10 * scale:
            raise ValueError(f"{name} must be positive semi-definite (smallest eigenvalue "
                             f"{low:.3g}); a graph Laplacian L = D - A always is.")
    return A


def mean_laplacian(n_tasks: int) -> np.ndarray:
    """``I - 11^T / m``: ``tr(W M W^T) = sum_t ||w_t - w_bar||^2``, ``w_bar = W 1 / m``.

    The Laplacian of the complete graph on the ``m`` tasks with edge weights ``1 / m``.
    """
    m = int(n_tasks)
    if m < 1:
        raise ValueError(f"n_tasks must be >= 1, got {n_tasks!r}.")
    return np.eye(m) - np.full((m, m), 1.0 / m)



def _complete_weight(laplacian: np.ndarray) -> float | None:
    """``w`` where ``laplacian = w (m I - 1 1^T)`` (the complete graph of equal weights ``w``,
    to rounding: every off-diagonal entry ``-w``, every diagonal one ``(m - 1) w``), else
    None."""
    m = laplacian.shape[0]
    if m < 2:
        return None
    w = -float(laplacian[0, 1])
    scale = max(abs(w) * m, np.finfo(float).tiny)
    off = laplacian - np.diag(np.diag(laplacian))
    expected = -w * (np.ones((m, m)) - np.eye(m))
    if (np.abs(off - expected).max() > 1e-12 * scale
            or np.abs(np.diag(laplacian) - (m - 1) * w).max() > 1e-12 * scale):
        return None
    return w

class GraphRegularization(Penalty):
    """``alpha * tr(W M W^T) + alpha_l1 * ||W||_1`` for a PSD task matrix ``M``.

    Capability ``"smooth"``: the quadratic term is ``g`` (value ``alpha * tr(W M W^T)``,
    gradient ``2 alpha W M``, Lipschitz constant ``2 alpha lambda_max(M)``); ``prox`` and
    ``prox_value`` concern the l1 term only. ``"task_coupling"``: ``g(W) = tr(W K W^T) / 2``
    with ``K = 2 alpha M``; ``"row_prox"``: the l1 term is the elastic-net row operator
    ``(alpha_l1, 0, 0)`` (block coordinate descent minimizes each entry exactly, keeping
    ``W K`` up to date). ``alpha_max`` is the smallest ``alpha_l1`` at which ``W = 0`` (``g``
    has zero gradient there): ``max |G_jt|``.

    Parameters
    ----------
    alpha : float
        Weight of the graph term (>= 0).
    laplacian : array-like of shape (n_tasks, n_tasks)
        ``M``: symmetric positive semi-definite (a graph Laplacian, or ``R R^T``).
    alpha_l1 : float, default=0.0
        Weight of the l1 term (>= 0).
    n_classes : int, default=1
        Weight columns per task: ``K`` for a multinomial model (the matrix then acts as
        ``M kron I_K`` on the ``m K`` task-class columns; module docstring).
    """

    name = "graph"
    capabilities = frozenset({"smooth", "task_coupling", "row_prox"})

    def __init__(self, alpha: float, laplacian, alpha_l1: float = 0.0, n_classes: int = 1):
        laplacian = check_task_matrix(laplacian)
        complete = _complete_weight(laplacian)
        if complete is not None:  # w (m I - 1 1^T): the eigenvalues 0 and w m
            top = complete * laplacian.shape[0]
        else:
            top = float(np.linalg.eigvalsh(laplacian).max()) if laplacian.size else 0.0
        self._set(check_strength(alpha, "alpha"), laplacian, alpha_l1, n_classes, top,
                  complete=complete)

    def _set(self, alpha: float, laplacian: np.ndarray, alpha_l1: float, n_classes: int,
             lambda_max: float, *, complete: float | None = None, chain: bool = False) -> None:
        """Set the penalty's fields from a checked ``laplacian`` and its known largest
        eigenvalue (the presets that know both skip the check and the eigendecomposition);
        ``complete``: the weight of a complete graph of equal weights, ``chain``: the path
        graph of unit weights (:meth:`_times` takes their products in closed form)."""
        self.alpha = alpha
        self.alpha_l1 = check_strength(alpha_l1, "alpha_l1")
        self.laplacian = laplacian
        self.n_classes = check_classes(n_classes)
        self._lambda_max = max(float(lambda_max), 0.0)
        self._complete = complete
        self._chain = chain

    def _repr_params(self) -> dict:
        out = {"alpha": self.alpha, "alpha_l1": self.alpha_l1,
               "n_tasks": self.laplacian.shape[0]}
        return out if self.n_classes == 1 else {**out, "n_classes": self.n_classes}

    @property
    def lambda_max(self) -> float:
        """``lambda_max(M)``, the largest eigenvalue of the task matrix."""
        return self._lambda_max

    def _check_shape(self, W: np.ndarray) -> None:
        m = self.laplacian.shape[0]
        if W.shape[-1] != m * self.n_classes:
            what = "tasks" if self.n_classes == 1 else f"columns ({self.n_classes} per task)"
            raise ValueError(f"W has {W.shape[-1]} {what} but the task matrix is "
                             f"{m} x {m}.")

    def _times(self, W: np.ndarray, M: np.ndarray) -> np.ndarray:
        """``W (M kron I_K)`` for ``W`` of shape ``(..., m K)`` and an ``m x p`` matrix ``M``
        (``W M`` for one column per task), shape ``(..., p K)``. For the Laplacian of a
        complete graph of equal weights ``w``, ``M = w (m I - 1 1^T)``, in ``O(m)`` per row:
        ``W M = w (m W - (W 1) 1^T)``; for the path graph of unit weights (the temporal
        group lasso's), by differences of neighbouring tasks."""
        K = self.n_classes
        # getattr: a penalty pickled before these fields has neither
        complete = getattr(self, "_complete", None)
        chain = getattr(self, "_chain", False)
        m = M.shape[0]
        if M is self.laplacian and complete is not None:
            W3 = W.reshape(*W.shape[:-1], m, K)
            out = complete * (m * W3 - W3.sum(axis=-2, keepdims=True))
            return out.reshape(W.shape)
        if M is self.laplacian and chain and m > 1:
            # the path graph 1 - 2 - ... - m of unit weights: with D_t = W_{t+1} - W_t,
            # (W M)_t = D_{t-1} - D_t (D_{-1} = D_{m-1} = 0), in O(m) per row
            W3 = W.reshape(*W.shape[:-1], m, K)
            D = np.diff(W3, axis=-2)
            out = np.zeros_like(W3)
            out[..., 1:, :] += D
            out[..., :-1, :] -= D
            return out.reshape(W.shape)
        if K == 1:
            return W @ M
        W3 = W.reshape(*W.shape[:-1], -1, K)
        return np.einsum("...tk,tp->...pk", W3, M).reshape(*W.shape[:-1], M.shape[1] * K)

    # smooth part g(W) = alpha tr(W M W^T)
    def smooth_value_and_grad(self, W: np.ndarray) -> tuple[float, np.ndarray]:
        self._check_shape(W)
        WM = self._times(W, self.laplacian)
        return self.alpha * float(np.vdot(W, WM)), 2.0 * self.alpha * WM

    def smooth_hessian_product(self, D: np.ndarray) -> np.ndarray:
        """``2 alpha D M``: the product of the smooth part's (constant) Hessian with a
        direction ``D`` (``2 alpha D (M kron I_K)``; the gradient at ``D``, without the
        value)."""
        return 2.0 * self.alpha * self._times(D, self.laplacian)

    def smooth_lipschitz(self) -> float:
        return 2.0 * self.alpha * self._lambda_max

    def task_coupling(self) -> np.ndarray:
        """``K = 2 alpha M``: ``g(W) = alpha tr(W M W^T) = tr(W K W^T) / 2`` (``2 alpha M kron
        I_K`` for ``K`` columns per task)."""
        M = self.laplacian if self.n_classes == 1 else np.kron(self.laplacian,
                                                               np.eye(self.n_classes))
        return 2.0 * self.alpha * M

    def row_prox_params(self):
        """``(alpha_l1, 0, 0)``: the l1 term, row by row."""
        return (self.alpha_l1, 0.0, 0.0)

    # non-smooth part r(W)
    def prox_value(self, W: np.ndarray) -> float:
        return self.alpha_l1 * float(np.abs(W).sum())

    def prox(self, V: np.ndarray, step: float) -> np.ndarray:
        if self.alpha_l1 == 0:
            return np.array(V, dtype=np.float64, copy=True)
        return soft_threshold(V, float(step) * self.alpha_l1)

    def value(self, W: np.ndarray) -> float:
        return self.smooth_value_and_grad(W)[0] + self.prox_value(W)

    def alpha_max(self, grad: np.ndarray) -> float:
        return float(np.max(np.abs(grad))) if grad.size else 0.0

    def dual_bound(self, G):
        """Of the prox part ``alpha_l1 ||W||_1``: ``s_max = alpha_l1 / ||G||_inf`` (the
        smooth part enters the certificate through its gradient, which ``G`` includes)."""
        return norm_bound(self.alpha_l1, float(np.max(np.abs(G))) if G.size else 0.0)

    # the certificate of a purely quadratic penalty (no prox part)
    def prox_part_is_zero(self) -> bool:
        """Whether the prox part ``r`` vanishes (``alpha_l1 = 0``): the penalty is then the
        quadratic ``g`` alone and the certificate uses :meth:`smooth_conjugate`."""
        return self.alpha_l1 == 0

    def _eigen(self) -> tuple[np.ndarray, np.ndarray]:
        cached = getattr(self, "_eig", None)
        if cached is None:
            lam, Q = np.linalg.eigh(self.laplacian) if self.laplacian.size else (
                np.zeros(0), np.zeros((0, 0)))
            cached = (np.maximum(lam, 0.0), Q)
            self._eig = cached
        return cached

    def _curvatures(self, ridge: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(curv, Q, free)``: the curvatures ``2 alpha lambda_i + ridge`` of ``q(W) = alpha
        tr(W M W^T) + (ridge / 2) ||W||_F^2`` along the eigenvectors ``q_i`` of ``M`` (columns
        of ``Q``), and the mask of the zero ones (free directions ``W + v q_i^T``)."""
        lam, Q = self._eigen()
        curv = 2.0 * self.alpha * lam + float(ridge)
        top = float(curv.max()) if curv.size else 0.0
        free = curv <= 1e-12 * top if top > 0 else np.ones(curv.shape, dtype=bool)
        return curv, Q, free

    def smooth_conjugate(self, U: np.ndarray, ridge: float = 0.0) -> tuple[float, float]:
        """``(q^*(U) on the curved directions, ||U q_i||^2 summed over the free ones)`` for
        ``q(W) = alpha tr(W M W^T) + (ridge / 2) ||W||_F^2``: ``q^*(U) = sum_i ||U q_i||^2 /
        (2 (2 alpha lambda_i + ridge))`` when ``U`` has no component along a free direction
        (``+inf`` otherwise)."""
        curv, Q, free = self._curvatures(ridge)
        C = self._times(np.asarray(U, dtype=np.float64), Q)
        sq = np.einsum("jt,jt->t", C, C)
        if self.n_classes > 1:  # the K columns of each eigenvector (one per class)
            sq = sq.reshape(-1, self.n_classes).sum(axis=1)
        val = float(np.sum(sq[~free] / (2.0 * curv[~free])))
        return val, float(sq[free].sum())

    def free_directions(self, shape: tuple[int, ...], ridge: float = 0.0):
        """``(rows, B)``: the directions ``W + E_rows Z B^T`` along which the penalty (with a
        ridge term ``ridge``) is constant, when its prox part vanishes: every row, with ``B``
        the eigenvectors of ``M`` of zero curvature (the mean of the tasks for a connected
        graph); ``None`` when there are none."""
        if not self.prox_part_is_zero():
            return None
        _, Q, free = self._curvatures(ridge)
        if not free.any():
            return None
        B = Q[:, free]
        if self.n_classes > 1:
            B = np.kron(B, np.eye(self.n_classes))
        return np.ones(shape[0], dtype=bool), B


class MeanRegularization(GraphRegularization):
    """``alpha * sum_t ||w_t - w_bar||_2^2`` with ``w_bar = (1/m) sum_t w_t``.

    The mean-regularized model of Evgeniou & Pontil, "Regularized multi-task learning"
    (KDD 2004): :class:`GraphRegularization` with ``M = I - 11^T / m`` and no l1 term. Without
    a ridge term (the estimators' ``alpha_l2``) the mean ``w_bar`` itself is not penalized.
    No finite ``alpha`` makes ``W = 0``: ``alpha_max`` is ``inf``.

    Parameters
    ----------
    alpha : float
        Strength (>= 0).
    n_tasks : int
        Number of tasks ``m``.
    n_classes : int, default=1
        Weight columns per task (``K`` of a multinomial model: each class is pulled towards
        the mean of that class's weights over the tasks).
    """

    name = "mean_regularization"

    def __init__(self, alpha: float, n_tasks: int, n_classes: int = 1):
        # I - 11^T / m is symmetric positive semi-definite with the eigenvalues 0 (once) and 1
        # (m - 1 times): the parent's check and eigen-decomposition are not needed (they cost
        # two eigen-decompositions of an m x m matrix)
        # the product by the m x m matrix kept (complete=None): the closed form changes the
        # iterates at the rounding level, which moved a mean-regularized classifier's
        # proximal Newton path to a stop its certificate's re-optimization of the free mean
        # did not certify
        self._set(check_strength(alpha, "alpha"), mean_laplacian(n_tasks), 0.0, n_classes,
                  1.0 if int(n_tasks) > 1 else 0.0)

    def _repr_params(self) -> dict:
        out = {"alpha": self.alpha, "n_tasks": self.laplacian.shape[0]}
        return out if self.n_classes == 1 else {**out, "n_classes": self.n_classes}

    def alpha_max(self, grad: np.ndarray) -> float:
        return float("inf")
