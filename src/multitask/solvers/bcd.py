"""Block coordinate descent over feature rows for the squared loss (l1 and l2,1 penalties).

Minimizes, on centred data with cached Gram matrices ``G_t = X_t^T X_t / n_t`` and
``c_t = X_t^T y_t / n_t``::

    F(W) = sum_t (0.5 w_t^T G_t w_t - c_t^T w_t) + lam * Omega(W),   Omega = l1 or l2,1.

One epoch visits every feature row ``j`` (cyclically) and replaces ``W_j.`` by a proximal
step on that row alone::

    g_t   = (G_t W)_{jt} - c_{jt}                         (row gradient, kept in H = G W)
    l1:     W_jt <- soft(W_jt - g_t / G_t[j, j], lam / G_t[j, j])      (exact row minimizer)
    l2,1:   W_j. <- group_soft(W_j. - g / L_j, lam / L_j),  L_j = max_t G_t[j, j]

and updates ``H`` with the change (``d * m`` operations per row, ``d^2 m`` per epoch, independent
of the number of rows). With a shared design all tasks share one ``G``. The method stops when
the largest coefficient change of an epoch falls below ``tol`` times the largest coefficient,
and then confirms optimality with the prox-gradient fixed-point residual. This is the fast
path of the l1 and l2,1 models for the squared loss when ``n_t >= d`` (like scikit-learn's
coordinate descent, but on Gram matrices, so an epoch does not touch the data).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from numba import njit
from sklearn.exceptions import ConvergenceWarning

from multitask.losses import Squared
from multitask.penalties.base import Penalty
from multitask.solvers.result import SolverResult

__all__ = ["bcd_squared", "supports_bcd"]


@njit(cache=True)
def _bcd_epochs(G, C, W, H, lam, kind, max_epochs, tol):
    d, m = W.shape
    shared = G.shape[0] == 1
    n_epochs = 0
    for epoch in range(max_epochs):
        n_epochs = epoch + 1
        max_change = 0.0
        max_coef = 0.0
        for j in range(d):
            if kind == 0:  # l1: exact per-entry minimization
                for t in range(m):
                    gt = 0 if shared else t
                    a = G[gt, j, j]
                    if a <= 0.0:
                        continue
                    old = W[j, t]
                    v = old - (H[j, t] - C[j, t]) / a
                    thr = lam / a
                    new = 0.0
                    if v > thr:
                        new = v - thr
                    elif v < -thr:
                        new = v + thr
                    delta = new - old
                    if delta != 0.0:
                        W[j, t] = new
                        for i in range(d):
                            H[i, t] += G[gt, i, j] * delta
                        if abs(delta) > max_change:
                            max_change = abs(delta)
                    if abs(new) > max_coef:
                        max_coef = abs(new)
            else:  # l2,1: proximal step on the row with curvature L_j
                Lj = 0.0
                for t in range(m):
                    gt = 0 if shared else t
                    if G[gt, j, j] > Lj:
                        Lj = G[gt, j, j]
                if Lj <= 0.0:
                    continue
                nrm = 0.0
                v = np.empty(m)
                for t in range(m):
                    v[t] = W[j, t] - (H[j, t] - C[j, t]) / Lj
                    nrm += v[t] * v[t]
                nrm = np.sqrt(nrm)
                thr = lam / Lj
                scale = 0.0
                if nrm > thr:
                    scale = 1.0 - thr / nrm
                for t in range(m):
                    gt = 0 if shared else t
                    new = v[t] * scale
                    delta = new - W[j, t]
                    if delta != 0.0:
                        W[j, t] = new
                        for i in range(d):
                            H[i, t] += G[gt, i, j] * delta
                        if abs(delta) > max_change:
                            max_change = abs(delta)
                    if abs(new) > max_coef:
                        max_coef = abs(new)
        if max_change <= tol * max(max_coef, 1e-300):
            return n_epochs, True
    return n_epochs, False


def supports_bcd(datafit, penalty: Penalty) -> bool:
    """Whether :func:`bcd_squared` applies: squared loss with Gram matrices, l1 or l2,1."""
    return (
        isinstance(datafit, Squared)
        and datafit.use_gram
        and getattr(penalty, "name", None) in ("l1", "l21")
    )


def bcd_squared(
    datafit: Squared,
    penalty: Penalty,
    *,
    coef_init: np.ndarray | None = None,
    max_iter: int = 10000,
    tol: float = 1e-6,
    warn: bool = True,
) -> SolverResult:
    """Run block coordinate descent for the squared loss with an l1 or l2,1 penalty.

    Parameters
    ----------
    datafit : Squared
        With ``use_gram=True`` (Gram matrices cached).
    penalty : L1 or L21
    coef_init : ndarray of shape (d, m), optional
        Warm start.
    max_iter : int
        Maximum number of epochs (``ConvergenceWarning`` when reached).
    tol : float
        Stop when the largest coefficient change of an epoch is below ``tol`` times the largest
        coefficient (scale-free, like scikit-learn's coordinate descent).

    Returns
    -------
    SolverResult
        ``objective`` holds the final objective only; ``info["residual"]`` is the
        prox-gradient fixed-point residual of the result.
    """
    if not supports_bcd(datafit, penalty):
        raise ValueError("bcd_squared needs the squared loss with Gram matrices and an l1 or "
                         "l2,1 penalty.")
    t0 = time.perf_counter()
    data = datafit.data
    n = data.task_sizes.astype(np.float64)
    G = datafit._G
    if G.shape[0] == 1:
        Gs = G / n[0]
    else:
        Gs = G / n[:, None, None]
    C = datafit._c / n[None, :]
    d, m = data.n_features, data.n_tasks
    W = np.zeros((d, m)) if coef_init is None else np.array(coef_init, dtype=np.float64)
    if W.shape != (d, m):
        raise ValueError(f"coef_init has shape {W.shape}, expected {(d, m)}.")
    H = Gs[0] @ W if Gs.shape[0] == 1 else np.einsum("tij,jt->it", Gs, W)
    kind = 0 if penalty.name == "l1" else 1
    n_epochs, converged = _bcd_epochs(Gs, C, W, np.ascontiguousarray(H), float(penalty.lam),
                                      kind, int(max_iter), float(tol))
    F = datafit.value(W) + penalty.value(W)
    gW = datafit.value_and_grad(W)[1]
    L = datafit.lipschitz()
    res = penalty.fixed_point_residual(W, gW, L) if L > 0 else 0.0
    if not converged and warn:
        warnings.warn(
            f"Coordinate descent did not converge in max_iter={max_iter} epochs (tol={tol}); "
            "returning the last iterate. Increase max_iter or tol.",
            ConvergenceWarning,
            stacklevel=2,
        )
    el = time.perf_counter() - t0
    return SolverResult(W, W.copy(), datafit.intercept(W), int(n_epochs), np.array([F]),
                        bool(converged), el, np.array([el]),
                        {"residual": res, "best_objective": F, "solver": "bcd"})
