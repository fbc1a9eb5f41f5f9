"""Dual coordinate descent for multi-task (multiple kernel) SVMs, with the lp-norm theta step.

Model (Widmer, Kloft, Sreedharan & Rätsch, arXiv:1506.09153, Problem 1, one shared base
feature map ``phi``, ``M`` task kernels ``B_m`` of shape ``(T, T)``):

    min_{theta in Theta_p, W, b}  (1/2) sum_m ||W_m||^2_{Q_m} / theta_m + (1/2) sum_t b_t^2 / c^2
                                  + sum_i C_i loss(y_i f_{tau_i}(x_i)),

    f_t(x) = sum_m phi(x)^T W_m[:, t] + b_t,   Q_m = B_m^{-1},
    Theta_p = {theta >= 0, ||theta||_p <= 1},

with ``loss`` the hinge ``max(0, 1 - z)`` or the squared hinge ``max(0, 1 - z)^2`` (LIBLINEAR's
L2-loss SVM), ``C_i = C * sample_weight_i`` and an optional per-task bias ``b_t`` learned as the
weight of a constant feature ``c`` (LIBLINEAR's ``intercept_scaling``; ``c = 0``: no bias, the
paper's bias-free model). For fixed ``theta`` this is one SVM with the joint kernel
``k((x, s), (z, t)) = B_theta[s, t] k(x, z) + c^2 [s = t]``, ``B_theta = sum_m theta_m B_m``.

Algorithm 1 of the paper alternates an exact W-step (this module's dual coordinate descent,
warm-started from the previous ``alpha``) and the closed-form theta step
(:func:`multitask.solvers.mkl_theta.theta_step`). The objective never increases (up to the W-step's
duality-gap tolerance) and the loop stops when its relative decrease, or the relative duality
gap of the full problem, falls below ``tol``.

The W-step factors ``B_theta = R^T R`` and keeps ``Vt = sum_i alpha_i y_i R[:, tau_i] x_i^T``
(``(r, d)``): the coordinate step costs ``O(nnz(x_i) * nnz(R[:, tau_i]))``, i.e. the cost of
LIBLINEAR for the union (``r = 1``) and individual (``R = I``) presets, and the depth of the
tree for hierarchical mask kernels.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from multitask.solvers._dcd_numba import (
    compress_columns,
    dcd_kernel,
    dcd_linear,
    linear_objectives,
    task_sums,
)
from multitask.solvers.mkl_theta import dual_norm, initial_theta, theta_step
from multitask.solvers.result import SolverResult

__all__ = [
    "TaskKernelFactor",
    "dcd_mtl_svm",
    "factor_task_kernels",
    "joint_kernel",
    "mtmkl_dcd",
    "mtmkl_kernel",
    "task_kernel_factor",
]

_LOSSES = ("hinge", "squared_hinge")


# --------------------------------------------------------------------------- factorizations
def task_kernel_factor(B: np.ndarray, rtol: float = 1e-12) -> np.ndarray:
    """A factor ``R`` (``(r, T)``) with ``R^T R = B`` that keeps the structure of ``B``.

    * diagonal ``B``: ``R = diag(sqrt(diag B))`` restricted to the non-zero diagonal;
    * ``B`` a sum of disjoint 0/1 blocks (union, cluster and tree masks): one indicator row per
      block;
    * otherwise ``R = diag(sqrt(lambda)) U^T`` from ``B = U diag(lambda) U^T`` (eigenvalues
      below ``rtol * lambda_max`` dropped, negative round-off clipped).

    Parameters
    ----------
    B : ndarray of shape (T, T), symmetric positive semidefinite
    rtol : float

    Returns
    -------
    ndarray of shape (r, T)
    """
    B = np.asarray(B, dtype=np.float64)
    T = B.shape[0]
    off = B - np.diag(np.diag(B))
    if not np.any(off):
        d = np.diag(B)
        nz = np.flatnonzero(d > 0)
        R = np.zeros((nz.size, T))
        R[np.arange(nz.size), nz] = np.sqrt(d[nz])
        return R
    if np.all((B == 0.0) | (B == 1.0)):
        rows = np.unique(B[np.diag(B) == 1.0], axis=0)
        if rows.size and np.all(rows.sum(axis=0) <= 1.0) and np.array_equal(rows.T @ rows, B):
            return rows.copy()
    lam, U = np.linalg.eigh(0.5 * (B + B.T))
    keep = lam > rtol * max(lam[-1], 0.0)
    if not np.any(keep):
        return np.zeros((0, T))
    return np.sqrt(lam[keep])[:, None] * U[:, keep].T


@dataclass
class TaskKernelFactor:
    """Column-compressed factor ``R`` (``(r, T)``) of ``B_theta = R^T R`` for the numba kernel.

    Attributes
    ----------
    R : ndarray (r, T)
    rptr : ndarray (T + 1,) int64
        Entries of column ``t`` are ``rind[rptr[t]:rptr[t+1]]``, ``rval[...]``.
    rind : ndarray int64
    rval : ndarray float64
    """

    R: np.ndarray
    rptr: np.ndarray
    rind: np.ndarray
    rval: np.ndarray

    @classmethod
    def from_dense(cls, R: np.ndarray) -> TaskKernelFactor:
        R = np.ascontiguousarray(R, dtype=np.float64)
        if R.shape[0] == 0:
            R = np.zeros((1, R.shape[1]))
        C = sp.csc_matrix(R)
        C.eliminate_zeros()
        C.sort_indices()
        return cls(
            R,
            C.indptr.astype(np.int64),
            C.indices.astype(np.int64),
            C.data.astype(np.float64),
        )

    def cost(self, task_sizes: np.ndarray) -> float:
        """``sum_t n_t * nnz(R[:, t])``: work per epoch, in units of ``nnz(x)``."""
        return float(np.dot(np.diff(self.rptr), task_sizes))


def factor_task_kernels(
    kernel_factors: list[np.ndarray],
    theta: np.ndarray,
    task_sizes: np.ndarray,
) -> TaskKernelFactor:
    """Cheapest factor of ``B_theta = sum_m theta_m B_m``.

    Candidates: the stacked per-kernel factors ``[sqrt(theta_m) R_m]`` (sparse for masks) and
    the eigen-factor of ``B_theta`` (at most ``T`` rows); the one with the smaller
    :meth:`TaskKernelFactor.cost` is returned.
    """
    rows = [np.sqrt(th) * Rm for th, Rm in zip(theta, kernel_factors, strict=True) if th > 0]
    T = kernel_factors[0].shape[1]
    stacked = TaskKernelFactor.from_dense(np.vstack(rows) if rows else np.zeros((0, T)))
    if len(rows) <= 1:
        return stacked
    B = sum(th * (Rm.T @ Rm) for th, Rm in zip(theta, kernel_factors, strict=True) if th > 0)
    eig = TaskKernelFactor.from_dense(task_kernel_factor(B))
    return eig if eig.cost(task_sizes) < stacked.cost(task_sizes) else stacked


# --------------------------------------------------------------------------- helpers
class _Design:
    """Rows of ``X`` for the numba kernels, with unused CSR columns compressed away.

    For CSR input whose rows use fewer than half of the ``d`` columns (hashed or weighted-degree
    features), the solver works on the ``d_c`` used columns only; :meth:`expand` puts the
    ``(d_c, T)`` weights back into ``(d, T)``.
    """

    def __init__(self, X):
        self.n_features = int(X.shape[1])
        self.cols = None
        if sp.issparse(X):
            X = sp.csr_matrix(X)
            # own int64 copies: scipy may downcast index arrays, numba wants one signature
            indptr = np.asarray(X.indptr, dtype=np.int64)
            data = np.asarray(X.data, dtype=np.float64)
            lut = np.empty(self.n_features, dtype=np.int32 if self.n_features < 2**31 else np.int64)
            used, compressed, self.xsq = compress_columns(indptr, X.indices, data, lut)
            if used.size < 0.5 * self.n_features:
                self.cols = used
                indices = compressed
                self.d = int(used.size)
            else:
                indices = np.asarray(X.indices, dtype=np.uint64)
                self.d = self.n_features
            self.args = (False, np.zeros((1, 1)), indptr, indices, data)
        else:
            self.X = np.ascontiguousarray(X, dtype=np.float64)
            self.d = self.n_features
            self.args = (
                True,
                self.X,
                np.zeros(1, dtype=np.int64),
                np.zeros(1, dtype=np.uint64),
                np.zeros(1),
            )
            self.xsq = np.einsum("ij,ij->i", self.X, self.X)

    def task_sums(self, coef: np.ndarray, task: np.ndarray, n_tasks: int) -> np.ndarray:
        """``VT`` of shape ``(T, d_c)``: ``VT[t] = sum_{i in task t} coef_i x_i``."""
        return task_sums(*self.args, coef, task, int(n_tasks), int(self.d))

    def expand(self, WT: np.ndarray) -> np.ndarray:
        """``(d, T)`` weights (a view of a C-ordered ``(T, d)``) from compressed ``(T, d_c)``."""
        if self.cols is None:
            return np.ascontiguousarray(WT).T
        full = np.zeros((WT.shape[0], self.n_features))
        for t in range(WT.shape[0]):
            full[t, self.cols] = WT[t]
        return full.T


def _loss_arrays(C, sample_weight, n: int, loss: str):
    if loss not in _LOSSES:
        raise ValueError(f"loss must be one of {_LOSSES}, got {loss!r}.")
    cw = np.full(n, float(C))
    if sample_weight is not None:
        cw = cw * np.asarray(sample_weight, dtype=np.float64)
    if np.any(cw < 0) or not np.all(np.isfinite(cw)):
        raise ValueError("C * sample_weight must be finite and non-negative.")
    squared = loss == "squared_hinge"
    if squared:
        upper = np.full(n, np.inf)
        with np.errstate(divide="ignore"):
            diag = np.where(cw > 0, 0.5 / np.maximum(cw, 1e-300), np.inf)
        # a zero weight pins alpha_i = 0: upper bound 0 instead of an infinite diagonal
        upper[cw == 0] = 0.0
        diag[cw == 0] = 0.0
    else:
        upper = cw.copy()
        diag = np.zeros(n)
    return cw, upper, diag, squared


def _seed(random_state) -> int:
    return int(check_random_state(random_state).randint(0, 2**31 - 1))


# --------------------------------------------------------------------------- fixed kernel
def dcd_mtl_svm(
    X,
    y: np.ndarray,
    task: np.ndarray,
    n_tasks: int,
    B,
    *,
    C: float = 1.0,
    loss: str = "hinge",
    bias_scale: float = 0.0,
    sample_weight=None,
    alpha0: np.ndarray | None = None,
    tol: float = 1e-4,
    max_iter: int = 1000,
    shrinking: bool = True,
    stop: str = "gap",
    gap_every: int = 10,
    random_state=None,
    factor: TaskKernelFactor | None = None,
    compute_objective: bool = True,
) -> SolverResult:
    """Multi-task SVM with one fixed task kernel ``B`` by dual coordinate descent.

    Solves ``min_{W, b} (1/2) tr(W B^+ W^T) + (1/2) ||b||^2 / c^2 + sum_i C_i loss(y_i f_i)``
    with ``W = V B`` (``(d, T)``) in the range of ``B``, ``f_i = x_i^T W[:, tau_i] + b_{tau_i}``
    (the paper's Algorithm 2 for ``M = 1``, with the corrected coordinate step).

    Parameters
    ----------
    X : ndarray (n, d) or sparse matrix (CSR)
    y : ndarray (n,)
        Labels in ``{-1, +1}``.
    task : ndarray (n,) int
        Task index ``0 <= tau_i < n_tasks`` of each row.
    n_tasks : int
    B : ndarray (T, T)
        Symmetric positive semidefinite task kernel (any diagonal).
    C : float > 0
    loss : {"hinge", "squared_hinge"}
    bias_scale : float >= 0
        ``c``: per-task bias as the weight of a constant feature ``c`` (0: no bias).
    sample_weight : ndarray (n,), optional
        ``C_i = C * sample_weight_i``.
    alpha0 : ndarray (n,), optional
        Warm start (clipped to the box).
    tol : float
        ``stop="gap"``: relative duality gap ``(P - D) / P``; ``stop="pg"``: LIBLINEAR's
        projected-gradient spread.
    max_iter : int
        Maximum epochs.
    shrinking : bool
    stop : {"gap", "pg"}
    gap_every : int
        Evaluate the duality gap at least every ``gap_every`` epochs.
    random_state : int, RandomState or None
        Seeds the permutation of each epoch.
    factor : TaskKernelFactor, optional
        Precomputed factor of ``B`` (skips :func:`task_kernel_factor`).
    compute_objective : bool
        With ``stop="pg"``, evaluate the primal and dual objectives after the last epoch (one
        extra pass over the data); if false they are ``nan``.

    Returns
    -------
    SolverResult
        ``W`` (``(d, T)``), ``intercept`` (``(T,)``), ``objective`` = ``[primal]``; ``info``
        holds ``alpha`` (``(n,)``), ``dual``, ``gap``, ``Vt``, ``bt``, ``factor``, ``epochs``.
    """
    t0 = time.perf_counter()
    y = np.asarray(y, dtype=np.float64)
    task = np.asarray(task, dtype=np.int64)
    n = y.shape[0]
    cw, upper, diag, squared = _loss_arrays(C, sample_weight, n, loss)
    if factor is None:
        factor = TaskKernelFactor.from_dense(task_kernel_factor(np.asarray(B, dtype=np.float64)))
    alpha = np.zeros(n) if alpha0 is None else np.clip(np.asarray(alpha0, float), 0, upper)
    design = _Design(X)
    ay = alpha * y
    if np.any(alpha):
        Vt = np.ascontiguousarray(factor.R @ design.task_sums(ay, task, n_tasks))
    else:
        Vt = np.zeros((factor.R.shape[0], design.d))
    bt = bias_scale * np.bincount(task, weights=ay, minlength=n_tasks).astype(np.float64)
    epochs, converged, primal, dual, _, spread = dcd_linear(
        *design.args,
        y,
        task,
        design.xsq,
        factor.rptr,
        factor.rind,
        factor.rval,
        Vt,
        bt,
        float(bias_scale),
        alpha,
        upper,
        cw,
        diag,
        squared,
        float(tol),
        int(max_iter),
        bool(shrinking),
        stop == "gap",
        _seed(random_state),
        int(gap_every),
    )
    if np.isnan(primal) and compute_objective:
        primal, dual, _, _ = linear_objectives(
            *design.args,
            y,
            task,
            factor.rptr,
            factor.rind,
            factor.rval,
            Vt,
            bt,
            float(bias_scale),
            alpha,
            cw,
            diag,
            squared,
        )
    W = design.expand(factor.R.T @ Vt)
    return SolverResult(
        coef=W,
        W=W,
        intercept=bias_scale * bt,
        n_iter=int(epochs),
        objective=np.array([primal]),
        converged=bool(converged),
        time=time.perf_counter() - t0,
        info={
            "alpha": alpha,
            "dual": float(dual),
            "gap": float(primal - dual),
            "pg_spread": float(spread),
            "Vt": Vt,
            "bt": bt,
            "factor": factor,
            "epochs": int(epochs),
        },
    )


# --------------------------------------------------------------------------- MT-MKL
def _check_p(p: float) -> float:
    p = float(p)
    if not (p >= 1.0):
        raise ValueError(f"p must be >= 1 (or inf), got {p!r}.")
    return p


def _prepare_theta(theta, M: int, p: float):
    fixed = theta is not None or M == 1 or np.isinf(p)
    if theta is not None:
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (M,) or np.any(theta < 0) or not np.any(theta > 0):
            raise ValueError(f"theta must be {M} non-negative weights, not all zero.")
        return theta.copy(), True
    return (initial_theta(M, p) if M > 1 else np.ones(1)), fixed


def _alternate(w_step, kernels, p, theta, fixed, tol, max_outer_iter, theta_floor, alpha_sum_fn):
    """Algorithm 1: alternate ``w_step`` and the closed-form theta step.

    ``w_step(theta, inner_tol) -> (epochs, inner_converged, q, loss_sum, reg_extra)`` solves
    the SVM for ``B_theta`` (warm-started, state kept by the closure) and returns
    ``q_m = <B_m, V^T V>``, ``sum_i C_i loss_i`` and the theta-independent part of the
    objective (the bias regularizer ``(1/2)||b||^2 / c^2``, shared by primal and dual); the
    dual's ``sum alpha`` and ``sum D_i alpha_i^2 / 2`` come from ``alpha_sum_fn()``. Returns
    ``(theta, theta_next, q, history, converged, inner_converged, total_epochs)``.
    """
    hist: dict[str, list] = {
        k: []
        for k in (
            "objective_w",
            "objective_theta",
            "dual",
            "gap",
            "theta",
            "q",
            "epochs",
            "inner_tol",
        )
    }
    floor_tol = tol / 10.0
    inner_tol = tol if fixed else max(floor_tol, 1e-2)
    converged = False
    inner_conv = True
    total_epochs = 0
    J_theta_prev = np.inf
    theta_next = theta.copy()
    q = np.zeros(len(kernels))
    for _it in range(1 if fixed else max_outer_iter):
        epochs = 0
        while True:
            ep, inner_conv, q, loss_sum, extra = w_step(theta, inner_tol)
            epochs += int(ep)
            J_w = 0.5 * float(theta @ q) + extra + loss_sum
            # monotone alternation: the W-step must not end above the previous theta step
            if J_w <= J_theta_prev or inner_tol <= floor_tol or not inner_conv:
                break
            inner_tol = max(floor_tol, inner_tol / 10.0)
        total_epochs += epochs
        a_sum, a_quad = alpha_sum_fn()
        if fixed:
            D = a_sum - 0.5 * float(theta @ q) - extra - a_quad
        else:
            D = a_sum - 0.5 * dual_norm(q, p) - extra - a_quad
        hist["objective_w"].append(J_w)
        hist["dual"].append(D)
        hist["gap"].append(J_w - D)
        hist["theta"].append(theta.copy())
        hist["q"].append(q.copy())
        hist["epochs"].append(epochs)
        hist["inner_tol"].append(inner_tol)
        if fixed:
            hist["objective_theta"].append(J_w)
            converged = bool(inner_conv)
            break
        a = theta**2 * q
        theta_next = theta_step(a, p, floor=theta_floor if p > 1 else 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            reg = np.where(a > 0, a / np.where(theta_next > 0, theta_next, np.inf), 0.0)
        J_theta = 0.5 * float(reg.sum()) + extra + loss_sum
        hist["objective_theta"].append(J_theta)
        scale = max(abs(J_w), 1e-300)
        rel_gap = (J_w - D) / scale
        rel_change = (
            (hist["objective_w"][-2] - J_w) / scale if len(hist["objective_w"]) > 1 else np.inf
        )
        if inner_tol <= floor_tol and (rel_gap <= tol or abs(rel_change) <= tol):
            converged = True
            break
        progress = min(abs(rel_change), max(rel_gap, 0.0), max((J_w - J_theta) / scale, 0.0))
        inner_tol = max(floor_tol, min(inner_tol, 0.1 * progress))
        theta = theta_next
        J_theta_prev = J_theta
    return theta, theta_next, q, hist, converged, inner_conv, total_epochs


def _mtmkl_inputs(y, task, kernels, p, theta, C, sample_weight, loss):
    """The arrays both MT-MKL paths start from: ``y`` (float), ``task`` (int64), ``n``, the
    checked ``p``, the starting weights and whether they stay fixed (:func:`_prepare_theta`),
    the task kernels as float arrays and the loss arrays ``(cw, upper, diag, squared)``
    (:func:`_loss_arrays`)."""
    y = np.asarray(y, dtype=np.float64)
    task = np.asarray(task, dtype=np.int64)
    n = y.shape[0]
    p = _check_p(p)
    theta, fixed = _prepare_theta(theta, len(kernels), p)
    kernels = [np.asarray(B, dtype=np.float64) for B in kernels]
    return y, task, n, p, theta, fixed, kernels, _loss_arrays(C, sample_weight, n, loss)


def _mtmkl_alternate(w_step, kernels, p, theta, fixed, tol, max_outer_iter, theta_floor,
                     alpha, diag):
    """:func:`_alternate` with the dual's sums ``(sum alpha, sum D_i alpha_i^2 / 2)`` read
    from ``alpha`` (updated in place by ``w_step``), the mixed kernel
    ``B_theta = sum_m theta_m B_m`` of the returned weights and a warning when the loop
    stopped before ``tol``. Returns ``(B_theta, info)``, ``info`` the entries of the
    solvers' ``info`` that both paths share, with ``"objective"`` (``J`` after each W-step)
    and ``"converged"`` added."""

    def alpha_sums():
        return float(alpha.sum()), 0.5 * float(np.sum(diag * alpha * alpha))

    theta, theta_next, q, hist, converged, inner_conv, total_epochs = _alternate(
        w_step,
        kernels,
        p,
        theta,
        fixed,
        float(tol),
        int(max_outer_iter),
        theta_floor,
        alpha_sums,
    )
    B_theta = np.sum([th * B for th, B in zip(theta, kernels, strict=True)], axis=0)
    _warn_unconverged(converged, hist, total_epochs, tol, stacklevel=4)
    info = {
        "theta": theta,
        "theta_next": theta_next,
        "B_theta": B_theta,
        "q": q,
        "gap": hist["gap"][-1],
        "dual": hist["dual"][-1],
        "epochs": total_epochs,
        "inner_converged": bool(inner_conv),
        "history": hist,
        "objective": np.array(hist["objective_w"]),
        "converged": converged,
    }
    return B_theta, info


def mtmkl_dcd(
    X,
    y: np.ndarray,
    task: np.ndarray,
    n_tasks: int,
    kernels: list[np.ndarray],
    *,
    C: float = 1.0,
    p: float = 2.0,
    loss: str = "hinge",
    theta: np.ndarray | None = None,
    bias_scale: float = 0.0,
    sample_weight=None,
    tol: float = 1e-4,
    max_iter: int = 1000,
    max_outer_iter: int = 100,
    shrinking: bool = True,
    theta_floor: float = 1e-10,
    random_state=None,
) -> SolverResult:
    """Multi-task multiple kernel learning with a linear base kernel (Algorithm 1 + DCD).

    Alternates the W-step (dual coordinate descent for ``B_theta = sum_m theta_m B_m``, warm
    started from the previous ``alpha``) and the closed-form theta step
    ``theta_m = a_m^{1/(p+1)} / (sum_k a_k^{p/(p+1)})^{1/p}`` with ``a_m = ||W_m||^2_{Q_m}
    = theta_m^2 q_m``, ``q_m = <B_m, V^T V>_F`` and ``V`` (``(d, T)``) the unmixed per-task
    sums ``V[:, t] = sum_{i in task t} alpha_i y_i x_i``. The objective after each step
    (recorded in ``info["history"]``) is

        J(theta, W) = (1/2) sum_m a_m / theta_m + (1/2) ||b||^2 / c^2 + sum_i C_i loss_i,

    and the fully dualized objective (Problem 3) is
    ``D(alpha) = sum alpha - (1/2) ||q||_{p*} - (1/2) ||b||^2 / c^2 - sum_i D_i alpha_i^2 / 2``,
    so ``J - D >= 0`` certifies the returned point.

    Parameters
    ----------
    X, y, task, n_tasks, C, loss, bias_scale, sample_weight, max_iter, shrinking,
    random_state : see :func:`dcd_mtl_svm` (``max_iter``: epochs per W-step).
    kernels : list of M ndarrays (T, T)
        Task kernels ``B_m`` (symmetric PSD, validated by the caller).
    p : float >= 1 or inf
        Norm of the weight constraint; ``inf`` fixes ``theta = 1`` (the sum of the kernels).
    theta : ndarray (M,), optional
        Fixed weights (no theta step).
    tol : float
        Relative tolerance: the loop stops when the relative decrease of ``J`` between two
        W-steps, or the relative full duality gap ``(J - D) / J``, is at most ``tol``; each
        W-step stops on its own relative duality gap, tightened from ``1e-2`` to ``tol / 10``
        (and a W-step that would end above the previous theta step's objective is continued,
        so the alternating objective does not increase beyond that tolerance).
    max_outer_iter : int
        Maximum number of W-step / theta-step alternations.
    theta_floor : float
        Relative floor of a weight after the theta step (``p > 1`` only; see
        :func:`multitask.solvers.mkl_theta.theta_step`).

    Returns
    -------
    SolverResult
        ``W`` (``(d, T)``, the representer weights ``V B_theta``), ``intercept`` (``(T,)``),
        ``objective`` = ``J`` after each W-step; ``info``: ``alpha`` (``(n,)``), ``theta`` (the
        weights of the returned W-step), ``theta_next`` (the theta step's answer to it),
        ``B_theta``, ``q``, ``gap`` and ``dual`` (full problem, returned point),
        ``epochs``, ``history`` (per alternation: ``objective_w``, ``objective_theta``,
        ``dual``, ``gap``, ``theta``, ``q``, ``epochs``, ``inner_tol``).
    """
    t0 = time.perf_counter()
    y, task, n, p, theta, fixed, kernels, (cw, upper, diag, squared) = _mtmkl_inputs(
        y, task, kernels, p, theta, C, sample_weight, loss)
    w_step = _LinearWStep(_Design(X), y, task, n_tasks, kernels, fixed, float(bias_scale),
                          (cw, upper, diag, squared), int(max_iter), bool(shrinking),
                          check_random_state(random_state))
    B_theta, info = _mtmkl_alternate(w_step, kernels, p, theta, fixed, tol, max_outer_iter,
                                     theta_floor, w_step.alpha, diag)
    W = w_step.design.expand(w_step.factor.R.T @ w_step.Vt)
    objective, converged = info.pop("objective"), info.pop("converged")
    return SolverResult(
        coef=W,
        W=W,
        intercept=w_step.c * w_step.bt,
        n_iter=len(objective),
        objective=objective,
        converged=converged,
        time=time.perf_counter() - t0,
        info={"alpha": w_step.alpha, **info},
    )


class _LinearWStep:
    """The W-step of :func:`mtmkl_dcd`: dual coordinate descent (:func:`dcd_linear`) for
    ``B_theta = sum_m theta_m B_m`` on a linear design, warm started from the previous
    ``alpha`` (updated in place) and the previous unmixed per-task sums ``V^T``.

    Called as ``w_step(theta, inner_tol)``, it returns what :func:`_alternate` expects:
    ``(epochs, inner_converged, q, loss_sum, (1/2) ||b||^2 / c^2)`` with
    ``q_m = <B_m, V^T V>_F``; it keeps the last factor of ``B_theta`` (``factor``), the mixed
    sums ``Vt = R V^T`` and the scaled biases ``bt`` for the returned weights.
    """

    def __init__(self, design, y, task, n_tasks, kernels, fixed, c, loss_arrays, max_iter,
                 shrinking, rs):
        self.design, self.y, self.task, self.n_tasks = design, y, task, n_tasks
        self.kernels, self.fixed, self.c = kernels, fixed, c
        self.kfactors = [task_kernel_factor(B) for B in kernels]
        self.sizes = np.bincount(task, minlength=n_tasks)
        self.cw, self.upper, self.diag, self.squared = loss_arrays
        self.max_iter, self.shrinking, self.rs = max_iter, shrinking, rs
        self.alpha = np.zeros(y.shape[0])
        self.VT = self.Vt = self.factor = self.bt = None

    def __call__(self, th, inner_tol):
        design, y, task, n_tasks, c = self.design, self.y, self.task, self.n_tasks, self.c
        factor = factor_task_kernels(self.kfactors, th, self.sizes)
        alpha = self.alpha
        if self.VT is None:
            Vt = np.zeros((factor.R.shape[0], design.d))
        else:
            Vt = np.ascontiguousarray(factor.R @ self.VT)
        bt = c * np.bincount(task, weights=alpha * y, minlength=n_tasks).astype(np.float64)
        epochs, conv, _, _, loss_sum, _ = dcd_linear(
            *design.args,
            y,
            task,
            design.xsq,
            factor.rptr,
            factor.rind,
            factor.rval,
            Vt,
            bt,
            c,
            alpha,
            self.upper,
            self.cw,
            self.diag,
            self.squared,
            float(inner_tol),
            self.max_iter,
            self.shrinking,
            True,
            int(self.rs.randint(2**31 - 1)),
            10,
        )
        self.Vt, self.factor, self.bt = Vt, factor, bt
        if self.fixed and len(self.kernels) == 1:
            # q_1 = <B, V^T V> = ||Vt||^2 / theta_1: no need for the unmixed sums
            q = np.array([float(np.sum(Vt * Vt)) / th[0]])
        else:
            VT = design.task_sums(alpha * y, task, n_tasks)
            G = VT @ VT.T
            self.VT = VT
            q = np.array([float(np.sum(B * G)) for B in self.kernels])
        return epochs, conv, q, loss_sum, 0.5 * float(bt @ bt)


def _warn_unconverged(converged, hist, total_epochs, tol, stacklevel=3):
    if not converged:
        warnings.warn(
            f"MT-MKL stopped after {len(hist['objective_w'])} alternation(s) "
            f"({total_epochs} epochs) before reaching tol={tol:g}; increase max_iter or "
            "max_outer_iter (max_mkl_iter of MultitaskKernelClassifier).",
            ConvergenceWarning,
            stacklevel=stacklevel,
        )


def joint_kernel(K: np.ndarray, B: np.ndarray, task_a, task_b, bias_scale: float = 0.0):
    """Multitask kernel ``B[tau_a, tau_b] o K + c^2 [tau_a = tau_b]`` of shape ``K.shape``."""
    out = B[np.ix_(task_a, task_b)] * K
    if bias_scale:
        out = out + bias_scale**2 * (np.asarray(task_a)[:, None] == np.asarray(task_b)[None, :])
    return out


def mtmkl_kernel(
    K: np.ndarray,
    y: np.ndarray,
    task: np.ndarray,
    n_tasks: int,
    kernels: list[np.ndarray],
    *,
    C: float = 1.0,
    p: float = 2.0,
    loss: str = "hinge",
    theta: np.ndarray | None = None,
    bias_scale: float = 0.0,
    sample_weight=None,
    tol: float = 1e-4,
    max_iter: int = 1000,
    max_outer_iter: int = 100,
    solver: str = "dcd",
    theta_floor: float = 1e-10,
    random_state=None,
) -> SolverResult:
    """Multi-task MKL with a precomputed (non-linear) base kernel ``K`` (n, n).

    Same model and outer loop as :func:`mtmkl_dcd`; the W-step is an SVM on the joint kernel
    ``K_theta = B_theta[tau, tau] o K + c^2 [tau_i = tau_j]`` (the paper's first strategy,
    Section 3.1):

    * ``solver="dcd"``: bias-free kernel dual coordinate descent maintaining
      ``f = K_theta (alpha y)`` (``O(n)`` per coordinate, warm-started), the same model as the
      linear path;
    * ``solver="svc"``: scikit-learn's ``SVC(kernel="precomputed")`` (libsvm SMO, hinge loss
      only). It adds one shared, unpenalized intercept (``Σ alpha_i y_i = 0``), returned in
      ``info["svc_intercept"]``, and does not warm start.

    ``q_m = <B_m, S^T K S>_F`` with ``S[i, tau_i] = alpha_i y_i``.

    Returns
    -------
    SolverResult
        ``W`` is ``None``-like (an empty array): the model is in ``info["dual_coef"]``
        (``alpha y``, ``(n,)``), ``info["B_theta"]`` and ``intercept`` (per-task bias
        ``c^2 sum_{i in t} alpha_i y_i`` plus the SVC intercept). ``info`` as in
        :func:`mtmkl_dcd`.
    """
    t0 = time.perf_counter()
    K = np.asarray(K, dtype=np.float64)
    y, task, n, p, theta, fixed, kernels, (cw, upper, diag, squared) = _mtmkl_inputs(
        y, task, kernels, p, theta, C, sample_weight, loss)
    if K.shape != (n, n):
        raise ValueError(f"K must have shape ({n}, {n}), got {K.shape}.")
    if solver not in ("dcd", "svc"):
        raise ValueError(f"solver must be 'dcd' or 'svc', got {solver!r}.")
    if solver == "svc" and squared:
        raise ValueError("solver='svc' supports the hinge loss only; use solver='dcd'.")
    w_step = _KernelWStep(K, y, task, n_tasks, kernels, float(bias_scale),
                          (cw, upper, diag, squared), int(max_iter), solver,
                          check_random_state(random_state))
    _, info = _mtmkl_alternate(w_step, kernels, p, theta, fixed, tol, max_outer_iter,
                               theta_floor, w_step.alpha, diag)
    alpha, c = w_step.alpha, w_step.c
    bias = c * c * np.bincount(task, weights=alpha * y, minlength=n_tasks) + np.asarray(
        w_step.b, dtype=np.float64)
    objective, converged = info.pop("objective"), info.pop("converged")
    return SolverResult(
        coef=alpha * y,
        W=np.zeros((0, n_tasks)),
        intercept=bias,
        n_iter=len(objective),
        objective=objective,
        converged=converged,
        time=time.perf_counter() - t0,
        info={"alpha": alpha, "dual_coef": alpha * y, "svc_intercept": w_step.b, **info},
    )


class _KernelWStep:
    """The W-step of :func:`mtmkl_kernel`: an SVM on the joint kernel
    ``K_theta = B_theta[tau, tau] o K + c^2 [tau_i = tau_j]``, by kernel dual coordinate
    descent (:func:`dcd_kernel`, warm started from ``alpha``, updated in place) or by
    scikit-learn's ``SVC`` (``solver="svc"``, its intercept kept in ``b``).

    Called as ``w_step(theta, inner_tol)``, it returns what :func:`_alternate` expects, with
    ``q_m = <B_m, S^T K S>_F``, ``S[i, tau_i] = alpha_i y_i``.
    """

    def __init__(self, K, y, task, n_tasks, kernels, c, loss_arrays, max_iter, solver, rs):
        self.K, self.y, self.task, self.n_tasks = K, y, task, n_tasks
        self.kernels, self.c = kernels, c
        self.cw, self.upper, self.diag, self.squared = loss_arrays
        self.max_iter, self.solver, self.rs = max_iter, solver, rs
        self.alpha = np.zeros(y.shape[0])
        self.b = 0.0

    def _svc(self, Kt, inner_tol):
        """``(epochs, converged, f)`` of ``SVC(kernel="precomputed")`` on ``Kt``; sets
        ``alpha`` and ``b``."""
        from sklearn.svm import SVC

        y, alpha = self.y, self.alpha
        svc = SVC(C=1.0, kernel="precomputed", tol=float(inner_tol), max_iter=-1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            svc.fit(Kt, y, sample_weight=self.cw)
        alpha[:] = 0.0
        alpha[svc.support_] = np.abs(svc.dual_coef_[0])
        self.b = float(svc.intercept_[0])
        return int(np.sum(svc.n_iter_)), True, Kt @ (alpha * y)

    def __call__(self, th, inner_tol):
        y, task, n_tasks, c, alpha = self.y, self.task, self.n_tasks, self.c, self.alpha
        n = y.shape[0]
        B = sum(t_ * Bm for t_, Bm in zip(th, self.kernels, strict=True))
        Kt = joint_kernel(self.K, B, task, task, c)
        if self.solver == "dcd":
            f = Kt @ (alpha * y)
            epochs, conv, _, _ = dcd_kernel(
                Kt,
                y,
                alpha,
                f,
                self.upper,
                self.cw,
                self.diag,
                self.squared,
                float(inner_tol),
                self.max_iter,
                int(self.rs.randint(2**31 - 1)),
            )
            self.b = 0.0
        else:
            epochs, conv, f = self._svc(Kt, inner_tol)
        m = np.maximum(1.0 - y * (f + self.b), 0.0)
        loss_sum = float(np.sum(self.cw * (m * m if self.squared else m)))
        ay = alpha * y
        S = sp.csr_matrix((ay, (np.arange(n), task)), shape=(n, n_tasks))
        G = np.asarray(S.T @ (S.T @ self.K).T)
        bsum = np.bincount(task, weights=ay, minlength=n_tasks)
        q = np.array([float(np.sum(Bm * G)) for Bm in self.kernels])
        return epochs, conv, q, loss_sum, 0.5 * c * c * float(bsum @ bsum)
