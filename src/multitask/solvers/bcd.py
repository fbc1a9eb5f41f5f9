"""Block coordinate descent over feature rows for quadratic losses and row-separable penalties.

Minimizes, for a quadratic datafit ``F(W) = sum_t 0.5 w_t^T H_t w_t - C_t^T w_t`` (cached
per-task Gram matrices, ``"quadratic"``) and a penalty separable over the feature rows
(``"row_prox"``)::

    h(W) = sum_j  a ||W_j.||_1 + b ||W_j.||_2 + (c / 2) ||W_j.||_2^2

(l1: ``(alpha, 0, 0)``; l2,1: ``(0, alpha, 0)``; ridge: ``(0, 0, alpha)``; and their sums). One
epoch visits every feature row ``j`` cyclically and replaces ``W_j.`` by the minimizer of the
objective over that row (entrywise when ``b = 0``) or by a proximal step on the row::

    g_t = (H_t W)_{jt} - C_{jt}                               (row gradient, kept in P = H W)
    b = 0:  W_jt <- soft(H_t[j,j] W_jt - g_t, a) / (H_t[j,j] + c)       (exact entry minimizer)
    b > 0:  v = W_j. - g / L_j,  L_j = max_t H_t[j,j]
            W_j. <- group_soft(soft(v L_j / (L_j + c), a / (L_j + c)), b / (L_j + c))

and updates ``P`` with the change (``d m`` operations per row, ``d^2 m`` per epoch, whatever
the number of rows). With a shared design all tasks share one ``H``. The epochs run until the
largest coefficient change of an epoch is small; then the optimality measure of
:mod:`multitask.solvers.base` is computed, and the run stops when it is at most ``tol`` (else
the inner criterion is tightened tenfold and the epochs go on).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from numba import njit

from multitask.compiled import charge_interpreted, interpreted_budget
from multitask.losses import Datafit
from multitask.penalties.base import Penalty
from multitask.solvers.base import (
    Solver,
    apply_per_task,
    finish,
    initial_point,
    measure_lipschitz,
    optimality,
)
from multitask.solvers.result import SolverResult

__all__ = ["BlockCoordinateDescent"]


@njit(cache=True)
def _bcd_epochs(H, C, W, P, a, b, c, max_epochs, tol):  # pragma: no cover - compiled
    d, m = W.shape
    shared = H.shape[0] == 1
    n_epochs = 0
    v = np.empty(m)
    for epoch in range(max_epochs):
        n_epochs = epoch + 1
        max_change = 0.0
        max_coef = 0.0
        for j in range(d):
            if b == 0.0:  # entrywise exact minimization
                for t in range(m):
                    gt = 0 if shared else t
                    hjj = H[gt, j, j]
                    if hjj + c <= 0.0:
                        continue
                    old = W[j, t]
                    u = hjj * old - (P[j, t] - C[j, t])
                    new = 0.0
                    if u > a:
                        new = (u - a) / (hjj + c)
                    elif u < -a:
                        new = (u + a) / (hjj + c)
                    delta = new - old
                    if delta != 0.0:
                        W[j, t] = new
                        for i in range(d):
                            P[i, t] += H[gt, i, j] * delta
                        if abs(delta) > max_change:
                            max_change = abs(delta)
                    if abs(new) > max_coef:
                        max_coef = abs(new)
            else:  # proximal step on the row with curvature L_j
                Lj = 0.0
                for t in range(m):
                    gt = 0 if shared else t
                    if H[gt, j, j] > Lj:
                        Lj = H[gt, j, j]
                if Lj + c <= 0.0:
                    continue
                shrink = Lj / (Lj + c)
                ta = a / (Lj + c)
                nrm = 0.0
                for t in range(m):
                    u = (W[j, t] - (P[j, t] - C[j, t]) / Lj) * shrink if Lj > 0.0 else 0.0
                    if u > ta:
                        u -= ta
                    elif u < -ta:
                        u += ta
                    else:
                        u = 0.0
                    v[t] = u
                    nrm += u * u
                nrm = np.sqrt(nrm)
                tb = b / (Lj + c)
                scale = 0.0
                if nrm > tb:
                    scale = 1.0 - tb / nrm
                for t in range(m):
                    gt = 0 if shared else t
                    new = v[t] * scale
                    delta = new - W[j, t]
                    if delta != 0.0:
                        W[j, t] = new
                        for i in range(d):
                            P[i, t] += H[gt, i, j] * delta
                        if abs(delta) > max_change:
                            max_change = abs(delta)
                    if abs(new) > max_coef:
                        max_coef = abs(new)
        if max_change <= tol * max(max_coef, 1e-300):
            return n_epochs, True
    return n_epochs, False


def _bcd_epochs_numpy(H, C, W, P, a, b, c, max_epochs, tol, budget):
    """The epochs of :func:`_bcd_epochs` in numpy (the same updates, vectorized over the
    tasks, which a row update treats independently), for at most ``budget`` seconds.

    Returns ``(epochs done, converged, seconds spent)``; when the budget runs out the epochs
    stop after the current one, unconverged, and :func:`_bcd_epochs` continues from ``W``, ``P``.
    """
    t0 = time.perf_counter()
    d, m = W.shape
    shared = H.shape[0] == 1
    diag = np.diagonal(H, axis1=1, axis2=2)  # (m or 1, d)
    n_epochs = 0
    for epoch in range(max_epochs):
        n_epochs = epoch + 1
        max_change = 0.0
        max_coef = 0.0
        for j in range(d):
            old = W[j]
            if b == 0.0:  # entrywise exact minimization (entries with H_t[j,j] + c <= 0 kept)
                hjj = diag[:, j]
                denom = hjj + c
                u = hjj * old - (P[j] - C[j])
                new = np.sign(u) * np.maximum(np.abs(u) - a, 0.0)
                if (denom > 0.0).all():
                    new /= denom
                    updated = new
                else:
                    keep = np.broadcast_to(denom <= 0.0, new.shape)
                    new = np.where(keep, old, new / np.where(keep, 1.0, denom))
                    updated = new[~keep]  # the kernel skips the kept entries altogether
            else:  # proximal step on the row with curvature L_j
                Lj = float(diag[:, j].max())
                if Lj + c <= 0.0:
                    continue
                if Lj > 0.0:
                    u = (old - (P[j] - C[j]) / Lj) * (Lj / (Lj + c))
                else:
                    u = np.zeros(m)
                if a:
                    u = np.sign(u) * np.maximum(np.abs(u) - a / (Lj + c), 0.0)
                nrm = float(np.sqrt(u @ u))
                tb = b / (Lj + c)
                new = u * (1.0 - tb / nrm) if nrm > tb else np.zeros(m)
                updated = new
            delta = new - old
            if delta.any():
                W[j] = new
                if shared:
                    P += np.outer(H[0, :, j], delta)
                else:
                    P += H[:, :, j].T * delta
                max_change = max(max_change, float(np.abs(delta).max()))
            if updated.size:
                max_coef = max(max_coef, float(np.abs(updated).max()))
        if max_change <= tol * max(max_coef, 1e-300):
            return n_epochs, True, time.perf_counter() - t0
        if time.perf_counter() - t0 >= budget:
            break
    return n_epochs, False, time.perf_counter() - t0


#: Seconds the numpy twin takes per row update, beyond ``1e-9`` per entry of ``W`` it
#: touches (measured: 8-10 us per row at d = 21, m = 7).
_TWIN_ROW_SECONDS = 1e-5


def _run_epochs(H, C, W, P, a, b, c, max_epochs, tol):
    """:func:`_bcd_epochs`, or its numpy twin while numba's start-up is not worth paying
    (:mod:`multitask.compiled`; not when one epoch of the twin would already cost more than
    the start-up left): ``(epochs done, converged)``."""
    done = 0
    budget = interpreted_budget()
    d, m = W.shape
    if budget > d * (_TWIN_ROW_SECONDS + 1e-9 * d * m):
        done, converged, spent = _bcd_epochs_numpy(H, C, W, P, a, b, c, max_epochs, tol, budget)
        charge_interpreted(spent)
        if converged or done >= max_epochs:
            return done, converged
    more, converged = _bcd_epochs(H, C, W, P, a, b, c, max_epochs - done, tol)
    return done + int(more), bool(converged)


class BlockCoordinateDescent(Solver):
    """Block coordinate descent over feature rows (quadratic loss, row-separable penalty).

    Parameters
    ----------
    max_iter : int, default=10000
        Maximum number of epochs (``ConvergenceWarning`` when reached).
    tol : float, default=1e-4
        Tolerance on the relative optimality measure (:mod:`multitask.solvers.base`).
    warn : bool, default=True
    """

    name = "bcd"
    datafit_requires = frozenset({"quadratic"})
    penalty_requires = frozenset({"row_prox"})

    def __init__(self, *, max_iter: int = 10000, tol: float = 1e-4, warn: bool = True):
        super().__init__(max_iter=max_iter, tol=tol, warn=warn)

    def solve(self, datafit: Datafit, penalty: Penalty, *, coef_init=None, intercept_init=None,
              callback: Callable | None = None) -> SolverResult:
        """Run the epochs (``callback`` is called after each batch of epochs)."""
        self.check(datafit, penalty)
        t0 = time.perf_counter()
        W, _ = initial_point(datafit, penalty, coef_init, None)
        W = np.ascontiguousarray(W)
        H, C = datafit.quadratic_form()
        H = np.ascontiguousarray(H)
        C = np.ascontiguousarray(C)
        a, b, c = (float(v) for v in penalty.row_prox_params())
        P = np.ascontiguousarray(apply_per_task(H, W))
        L = measure_lipschitz(datafit, penalty)
        inner_tol = max(self.tol, 1e-12)
        n_epochs = 0
        converged = False
        measure = np.inf
        history: list[float] = []
        times: list[float] = []
        while n_epochs < self.max_iter:
            k, _ = _run_epochs(H, C, W, P, a, b, c, self.max_iter - n_epochs, inner_tol)
            n_epochs += k
            measure = optimality(datafit, penalty, W, None, L)
            history.append(datafit.value(W) + penalty.value(W))
            times.append(time.perf_counter() - t0)
            if measure <= self.tol:
                converged = True
                break
            if callback is not None and callback(n_epochs, history[-1], W, None):
                break
            if inner_tol <= 1e-16:
                break
            inner_tol *= 0.1
        return finish(self, datafit, penalty, W, None, n_iter=n_epochs, objective=history,
                      times=times, converged=converged, t0=t0, measure=measure,
                      info={"best_objective": history[-1] if history else np.nan,
                            "row_prox_params": (a, b, c)})
