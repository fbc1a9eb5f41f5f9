"""Block coordinate descent over feature rows for quadratic losses and row-separable penalties.

The model. A quadratic datafit ``F(W) = sum_t 0.5 w_t^T H_t w_t - C_t^T w_t`` (cached per-task
Gram matrices, ``"quadratic"``; with a shared design all tasks share one ``H``), a penalty
whose prox part is a sum over the feature rows (``"row_prox"``) and, optionally, a smooth
part that couples the tasks by a quadratic on the task side (``"task_coupling"``)::

    min_W  F(W) + tr(W K W^T) / 2 + sum_j r_j(W_j.)

with ``K`` symmetric positive semi-definite ``m x m`` (``K = 2 alpha L`` for the graph term
``alpha tr(W L W^T)`` of graph, mean and temporal regularization; absent otherwise) and
``r_j`` the row operator of the penalty's family (:data:`~multitask.penalties.base.
ROW_PROX_FAMILIES`) with the row's strengths ``(a_j, b_j, c_j)`` (per-row arrays or one
value for all rows): the elastic net ``a ||w||_1 + b ||w||_2 + (c / 2) ||w||^2`` (l1, l2,1,
ridge, the weighted l1 stages of the capped l1 penalty), the fused sparse group lasso
``a ||w||_1 + b ||w||_2 + c sum_t |w_t - w_{t+1}|``, or the dirty norm ``min_{p + q = w} a
||p||_s + b ||q||_1``.

The state. Besides ``W`` the kernel keeps ``P = H W`` (``P_.t = H_t w_t``) and ``R = W K``, so
that the gradient of the smooth part at row ``j`` is ``g_t = P_jt - C_jt + R_jt`` without any
product. An update of the entry ``(j, t)`` by ``delta`` costs ``d`` operations on ``P`` (column
``t`` of ``H_t``) and ``m`` on ``R`` (row ``t`` of ``K``).

One epoch visits the rows ``j = 0 .. d - 1`` in order:

* elastic-net rows with ``b_j = 0`` (l1, ridge, the capped-l1 stages, SRMTL's l1 with its graph
  coupling): each entry is minimized exactly, in task order (the coupling makes the entries of
  a row depend on each other through ``R``)::

      h = H_t[j, j] + K[t, t],   W_jt <- soft(h W_jt - g_t, a_j) / (h + c_j);

* group rows under a task coupling (``a_j = 0 < b_j``: TGL's l2,1 with its temporal
  coupling): the row is minimized exactly. With ``A_j = diag_t(H_t[j, j]) + K`` the row's
  block of the Hessian and ``r = A_j W_j. - g``, the minimizer of
  ``w^T (A_j + c_j I) w / 2 - r^T w + b_j ||w||_2`` is 0 when ``||r|| <= b_j``, else
  ``w = (A_j + (c_j + mu) I)^{-1} r`` with ``mu = b_j / ||w||``, found by bisection on
  ``sum_t (mu s_t / (lambda_t + c_j + mu))^2 = b_j^2`` in the eigenbasis
  ``A_j = Q diag(lambda) Q^T``, ``s = Q^T r`` (the eigendecompositions are computed once per
  call of the kernel);
* dirty rows without coupling: the row is minimized exactly with each task's own curvature
  ``h_t = H_t[j, j]``, ``W_j. <- argmin_w sum_t (h_t / 2) (w_t - z_t / h_t)^2 + r_j(w)``
  with ``z_t = h_t W_jt - g_t``
  (:func:`~multitask.penalties.row_operators.dirty_weighted_row_min`: its dual-ball level
  searched from the row's level of the previous epoch, ``O(m)`` per pass and, warm, one or two
  passes, instead of sorting ``2 m`` breakpoints per row: docs/tuning_constants.md);
* fused rows (never coupled) with an l2 part (``b_j > 0``) or whose curvatures ``h_t =
  H_t[j, j]`` are all positive: the row is minimized exactly with each task's own
  curvature, ``W_j. <- argmin_w sum_t (h_t / 2) (w_t - z_t / h_t)^2 + r_j(w)``, ``z_t =
  h_t W_jt - g_t``: a dynamic program for the
  weighted l1 plus total variation inside a root search on the l2 term's multiplier
  (:func:`~multitask.penalties.fused_rows.fsgl_weighted_row_min`);
* every other row (fused rows without l2 part with a zero curvature, the elastic net with
  ``b_j > 0`` otherwise, the dirty norm under a coupling): one proximal step on the row with
  the curvature bound ``L_j = max_t H_t[j, j] + lambda_max(K)`` of the row's block of the
  Hessian,
  ``W_j. <- prox_{r_j / L_j}(W_j. - g / L_j)``; the row operators are exact (group
  soft-thresholding; Condat's total-variation prox then soft- and group soft-thresholding;
  the projection onto the intersection of two balls by sorting: the plain functions of
  :mod:`multitask.penalties.row_operators`).

A row whose curvature is zero (a feature that is zero in every task) is left as it is by the
proximal steps; the dirty rows' exact minimization sets an entry of zero curvature to 0 (a
minimizer: neither the loss nor the coupling sees it).

Anderson extrapolation (the acceleration of skglm's and celer's coordinate descent): after
every ``A`` epochs (``anderson``, default 5) the last ``A + 1`` iterates ``W^0 .. W^A`` give
the combination ``sum_i c_i W^i`` (``sum_i c_i = 1``, ``i >= 1``) whose combined differences
``sum_i c_i (W^i - W^{i-1})`` have the least norm (an ``A x A`` linear system); it replaces
``W`` (with ``P`` and ``R`` recomputed, one epoch's work) when it lowers the objective. On
School's raw features it cut the epochs to ``tol=1e-8`` 10 to 20 times (l2,1, and TGL, the dirty
norm and the fused model while their rows took proximal steps), where plain coordinate
descent crawls along the correlated raw features.

Exact steps on a structure: for fused rows, Newton steps on the iterate's segments
(:mod:`multitask.solvers.fused_newton`); for elastic-net rows without group term or task
coupling (the lasso, the elastic net, the capped-l1 stages; ``support_steps``), after
:data:`_SUPPORT_AFTER` plain epochs, the support steps of :mod:`multitask.solvers.lasso_support`
(the minimizer on each task's support and signs, or a move along the null space of a singular
support to the first change of sign) for the tasks whose signs a chunk of epochs left
unchanged and whose optimality violation holds the run back. Both are taken after every
:data:`_NEWTON_CHUNK` epochs, their work kept below the epochs', and kept where they lower the
objective. Where tasks have fewer rows than features, coordinate descent crawls along the
singular Gram matrix; the support steps cut the epochs of the independent lasso on School at
``alpha_max / 1000`` from 818 to 93 (``benchmarks/bench_lasso_support.py``).

The epochs run until the largest coefficient change of an epoch is at most ``inner_tol``
times the largest coefficient; then the certified relative duality gap of
:mod:`multitask.solvers.base` is computed, and the run stops when it is at most ``tol`` (else
the inner criterion is tightened tenfold and the epochs go on).

The epochs are one compiled kernel (:func:`_bcd_epochs`) with an interpreted twin
(:func:`~multitask.solvers.bcd_twin.bcd_epochs_numpy`, the same updates, vectorized over the tasks
where the rows allow it) that runs while numba's start-up is not worth paying
(:mod:`multitask.compiled`); the twin covers the elastic-net family (with or without coupling)
except group rows under a coupling; those exact row minimizations and the fused and dirty row
operators are compiled only.

Structure for what builds on it (screening, working sets): the kernel visits the rows in
``range(d)`` and touches nothing but ``W``, ``P``, ``R``, the extrapolation state and the
rows' strengths; a subset of rows is solved by passing those rows' ``H``, ``C`` and strengths
(the state of the others folded into ``C``). :func:`row_strengths` turns a penalty's
declaration into the kernel's ``(family code, (d, 3) strengths)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numba import njit

from multitask.compiled import charge_interpreted, interpreted_budget
from multitask.losses import Datafit
from multitask.penalties.base import ROW_PROX_FAMILIES, Penalty
from multitask.penalties.fused_rows import fsgl_weighted_row_min
from multitask.penalties.row_operators import (
    dirty_weighted_row_min,
    row_penalty,
    row_prox,
)
from multitask.solvers._anderson_numba import anderson_combination
from multitask.solvers.base import Solver, apply_per_task, check_int, measure_lipschitz
from multitask.solvers.bcd_twin import TWIN_ROW_SECONDS, bcd_epochs_numpy, twin_covers
from multitask.solvers.certificate import has_dual
from multitask.solvers.fused_newton import fused_newton_point
from multitask.solvers.iteration import IterationRecord, inner_tolerances
from multitask.solvers.lasso_support import support_point, violations
from multitask.solvers.problem import Problem
from multitask.solvers.result import SolverResult

__all__ = ["BlockCoordinateDescent", "quadratic_row_descent", "row_strengths"]

#: Codes of the row families in the kernel (positions in ``ROW_PROX_FAMILIES``).
_FAMILY_CODES = {name: code for code, name in enumerate(ROW_PROX_FAMILIES)}
_ELASTIC_NET = _FAMILY_CODES["elastic_net"]
_FUSED = _FAMILY_CODES["fused_sparse_group_lasso"]


def row_strengths(penalty: Penalty, n_features: int) -> tuple[int, np.ndarray]:
    """``(family code, strengths)`` of a ``"row_prox"`` penalty: the position of its
    :attr:`~multitask.penalties.base.Penalty.row_prox_family` in
    :data:`~multitask.penalties.base.ROW_PROX_FAMILIES` and its
    :meth:`~multitask.penalties.base.Penalty.row_prox_params` as a ``(n_features, 3)`` array
    (numbers broadcast over the rows)."""
    family = getattr(penalty, "row_prox_family", "elastic_net")
    if family not in _FAMILY_CODES:
        raise ValueError(f"The {penalty.name} penalty declares the row family {family!r}, "
                         f"which is none of {list(ROW_PROX_FAMILIES)}.")
    params = np.empty((n_features, 3))
    for k, value in enumerate(penalty.row_prox_params()):
        arr = np.asarray(value, dtype=np.float64)
        if arr.ndim not in (0, 1) or (arr.ndim == 1 and arr.shape != (n_features,)):
            raise ValueError(f"The {penalty.name} penalty's row strengths must be numbers or "
                             f"arrays of shape ({n_features},), got shape {arr.shape}.")
        if not (np.all(np.isfinite(arr)) and np.all(arr >= 0)):
            raise ValueError(f"The {penalty.name} penalty's row strengths must be finite and "
                             ">= 0.")
        params[:, k] = arr
    return _FAMILY_CODES[family], params


# --------------------------------------------------------------------------- the kernel
@njit(cache=True)
def _objective(C, W, P, R, family, params):  # pragma: no cover - compiled
    """The objective up to the loss's constant: ``sum_t w_t^T (P_t / 2 - C_t) + <W, R> / 2
    + sum_j r_j(W_j.)`` (``P = H W``, ``R = W K``; ``R`` of shape ``(0, 0)`` without
    coupling)."""
    d, m = W.shape
    coupled = R.shape[0] > 0
    total = 0.0
    for j in range(d):
        for t in range(m):
            total += W[j, t] * (0.5 * P[j, t] - C[j, t])
            if coupled:
                total += 0.5 * W[j, t] * R[j, t]
        total += row_penalty(family, np.ascontiguousarray(W[j]), params[j, 0], params[j, 1],
                             params[j, 2])
    return total


@njit(cache=True)
def _extrapolate(H, C, W, P, K, R, family, params, hist):  # pragma: no cover - compiled
    """Anderson extrapolation from the iterates ``hist[0..A]`` (``hist[A]`` is ``W``): the
    combination ``sum_i c_i hist[i + 1]`` (``sum_i c_i = 1``) whose combined differences
    ``sum_i c_i (hist[i + 1] - hist[i])`` have the least norm
    (:func:`~multitask.solvers._anderson_numba.anderson_combination`); it replaces ``(W, P,
    R)`` when it lowers the objective. Returns whether it did."""
    d, m = W.shape
    We = np.empty((d, m))
    if not anderson_combination(hist.reshape(hist.shape[0], d * m), We.reshape(d * m)):
        return False
    Pe = np.empty((d, m))
    if H.shape[0] == 1:
        Pe[:, :] = H[0] @ We
    else:
        for t in range(m):
            Pe[:, t] = H[t] @ np.ascontiguousarray(We[:, t])
    Re = We @ K if K.shape[0] > 0 else R
    before = _objective(C, W, P, R, family, params)
    after = _objective(C, We, Pe, Re, family, params)
    if not after < before - 1e-15 * abs(before):
        return False
    W[:, :] = We
    P[:, :] = Pe
    if K.shape[0] > 0:
        R[:, :] = Re
    return True


@njit(cache=True)
def _move(W, P, R, H, K, gt, j, t, value, coupled):  # pragma: no cover - compiled
    """``W[j, t] = value``, with ``P[:, t] += H[gt, :, j] delta`` and, ``coupled``,
    ``R[j, :] += delta K[t, :]`` for ``delta`` the change; returns ``|delta|``."""
    delta = value - W[j, t]
    if delta != 0.0:
        W[j, t] = value
        for i in range(W.shape[0]):
            P[i, t] += H[gt, i, j] * delta
        if coupled:
            for s in range(W.shape[1]):
                R[j, s] += delta * K[t, s]
    return abs(delta)


@njit(cache=True)
def _move_row(W, P, R, H, K, j, new, coupled, max_change, max_coef):  # pragma: no cover
    """Row ``j`` of ``W`` set to ``new`` by :func:`_move` task by task; returns the largest
    change and coefficient so far, ``max_change`` and ``max_coef`` updated."""
    shared = H.shape[0] == 1
    for t in range(W.shape[1]):
        gt = 0 if shared else t
        change = _move(W, P, R, H, K, gt, j, t, new[t], coupled)
        if change > max_change:
            max_change = change
        if abs(new[t]) > max_coef:
            max_coef = abs(new[t])
    return max_change, max_coef


@njit(cache=True)
def _group_row_min(v, lam, Q, b, c, rr, hv, out):  # pragma: no cover - compiled
    """``out = argmin_w 0.5 w^T (A + c I) w - v^T w + b ||w||_2`` for ``A = Q diag(lam) Q^T``
    (``lam`` ascending): zero when ``||Q^T v|| <= b``, else ``w = Q (Lambda + c + mu)^-1 Q^T v``
    with ``mu > 0`` the root of ``||mu (Lambda + c + mu)^-1 Q^T v|| = b`` (bisection on its
    bracket). ``rr`` and ``hv`` are work arrays of the row's length."""
    m = v.shape[0]
    nrm = 0.0
    for t in range(m):
        acc = 0.0
        for s in range(m):
            acc += Q[s, t] * v[s]
        rr[t] = acc
        nrm += acc * acc
    nrm = np.sqrt(nrm)
    if nrm <= b:
        for t in range(m):
            out[t] = 0.0
        return
    lo = b * max(lam[0] + c, 0.0) / (nrm - b)
    hi = b * (lam[m - 1] + c) / (nrm - b)
    for _ in range(200):
        mu = 0.5 * (lo + hi)
        tot = 0.0
        for t in range(m):
            x = mu * rr[t] / (lam[t] + c + mu)
            tot += x * x
        if tot > b * b:
            hi = mu
        else:
            lo = mu
        if hi - lo <= 1e-15 * hi:
            break
    mu = hi
    for t in range(m):
        hv[t] = rr[t] / (lam[t] + c + mu)
    for t in range(m):
        acc = 0.0
        for s in range(m):
            acc += Q[t, s] * hv[s]
        out[t] = acc


@njit(cache=True)
def _bcd_epochs(H, C, W, P, K, R, family, params, k_top, hist, n_hist, max_epochs,
                tol):  # pragma: no cover - compiled
    """Epochs of block coordinate descent (module docstring), in place on ``W``, ``P = H W``
    and ``R = W K``; ``K`` of shape ``(0, 0)`` when there is no coupling (``R`` then unused).

    Anderson acceleration: ``hist`` of shape ``(A + 1, d, m)`` keeps the iterates since the
    last extrapolation (``n_hist[0]`` of them, the state carried from one call to the next);
    after every ``A`` epochs :func:`_extrapolate` tries the combination of the last ``A + 1``
    iterates. ``A = 0`` (``hist`` of shape ``(1, d, m)`` or less) turns it off.

    Returns ``(epochs done, converged)``: converged when the largest change of an epoch is at
    most ``tol`` times the largest coefficient of the epoch.
    """
    d, m = W.shape
    shared = H.shape[0] == 1
    coupled = K.shape[0] > 0
    A = hist.shape[0] - 1
    if A > 0 and n_hist[0] == 0:
        hist[0, :, :] = W
        n_hist[0] = 1
    n_epochs = 0
    v = np.empty(m)
    hv = np.empty(m)
    rr = np.empty(m)
    new = np.empty(m)
    exact_rows = family == 0 and coupled
    # the rows' last multipliers (the fused rows' l2 one, the dirty rows' dual-ball level):
    # the next epoch's row minimization starts its search there
    mu_rows = np.zeros(d if family >= 1 else 0)
    lam_rows = np.zeros((d if exact_rows else 0, m))
    Q_rows = np.zeros((d if exact_rows else 0, m, m))
    if exact_rows:  # the eigendecompositions of the rows' Hessian blocks diag(H_t[j, j]) + K
        Aj = np.empty((m, m))
        for j in range(d):
            for t in range(m):
                gt = 0 if shared else t
                for s in range(m):
                    Aj[t, s] = K[t, s]
                Aj[t, t] += H[gt, j, j]
            lj, Qj = np.linalg.eigh(Aj)
            lam_rows[j, :] = lj
            Q_rows[j, :, :] = Qj
    for epoch in range(max_epochs):
        n_epochs = epoch + 1
        max_change = 0.0
        max_coef = 0.0
        for j in range(d):
            a = params[j, 0]
            b = params[j, 1]
            c = params[j, 2]
            if family == 0 and b == 0.0:  # entrywise exact minimization
                for t in range(m):
                    gt = 0 if shared else t
                    h = H[gt, j, j]
                    g = P[j, t] - C[j, t]
                    if coupled:
                        h += K[t, t]
                        g += R[j, t]
                    if h + c <= 0.0:  # w_jt unseen: the l1 term's minimizer, 0
                        if a > 0.0 and W[j, t] != 0.0:
                            change = _move(W, P, R, H, K, gt, j, t, 0.0, coupled)
                            if change > max_change:
                                max_change = change
                        continue
                    old = W[j, t]
                    u = h * old - g
                    nw = 0.0
                    if u > a:
                        nw = (u - a) / (h + c)
                    elif u < -a:
                        nw = (u + a) / (h + c)
                    change = _move(W, P, R, H, K, gt, j, t, nw, coupled)
                    if change > max_change:
                        max_change = change
                    if abs(nw) > max_coef:
                        max_coef = abs(nw)
                continue
            if family >= 2 and not coupled:  # the dirty norm: exact row minimization
                for t in range(m):
                    gt = 0 if shared else t
                    hv[t] = H[gt, j, j]
                    v[t] = hv[t] * W[j, t] - (P[j, t] - C[j, t])
                mu_rows[j] = dirty_weighted_row_min(v, hv, a, b, family == 2, new, mu_rows[j])
                max_change, max_coef = _move_row(W, P, R, H, K, j, new, coupled, max_change,
                                                 max_coef)
                continue
            if family == 1 and not coupled:  # the fused family: exact row minimization
                positive = True
                for t in range(m):
                    gt = 0 if shared else t
                    hv[t] = H[gt, j, j]
                    positive = positive and hv[t] > 0.0
                    v[t] = hv[t] * W[j, t] - (P[j, t] - C[j, t])
                if positive or b > 0.0:
                    mu_rows[j] = fsgl_weighted_row_min(v, hv, a, b, c, new, mu_rows[j])
                    max_change, max_coef = _move_row(W, P, R, H, K, j, new, coupled,
                                                     max_change, max_coef)
                    continue
            if exact_rows and a == 0.0:
                # group (and ridge) row under the task coupling: exact row minimization of
                # 0.5 w^T (A + c I) w - r^T w + b ||w||_2, A = diag(H_t[j, j]) + K
                for t in range(m):
                    gt = 0 if shared else t
                    g = P[j, t] - C[j, t] + R[j, t]
                    acc = H[gt, j, j] * W[j, t]
                    for s in range(m):
                        acc += K[t, s] * W[j, s]
                    v[t] = acc - g
                _group_row_min(v, lam_rows[j], Q_rows[j], b, c, rr, hv, new)
                max_change, max_coef = _move_row(W, P, R, H, K, j, new, coupled, max_change,
                                                 max_coef)
                continue
            # proximal step on the row with the curvature bound L_j
            Lj = 0.0
            for t in range(m):
                gt = 0 if shared else t
                if H[gt, j, j] > Lj:
                    Lj = H[gt, j, j]
            Lj += k_top
            if Lj <= 0.0 and not (family == 0 and (a > 0.0 or b > 0.0 or c > 0.0)):
                continue
            if Lj > 0.0:
                for t in range(m):
                    g = P[j, t] - C[j, t]
                    if coupled:
                        g += R[j, t]
                    v[t] = W[j, t] - g / Lj
                row_prox(family, v, 1.0 / Lj, a, b, c, new)
            else:  # a row the loss does not see: its elastic-net penalty's minimizer, 0
                for t in range(m):
                    new[t] = 0.0
            max_change, max_coef = _move_row(W, P, R, H, K, j, new, coupled, max_change,
                                             max_coef)
        if max_change <= tol * max(max_coef, 1e-300):
            return n_epochs, True
        if A > 0:
            hist[n_hist[0], :, :] = W
            n_hist[0] += 1
            if n_hist[0] == A + 1:
                _extrapolate(H, C, W, P, K, R, family, params, hist)
                hist[0, :, :] = W
                n_hist[0] = 1
    return n_epochs, False


def _run_epochs(H, C, W, P, K, R, family, params, k_top, hist, n_hist, max_epochs, tol):
    """:func:`_bcd_epochs`, or its numpy twin while numba's start-up is not worth paying
    (:mod:`multitask.compiled`; the rows :func:`~multitask.solvers.bcd_twin.twin_covers` only, and
    not when one epoch of the twin would already cost more than the start-up left): ``(epochs done,
    converged)``."""
    done = 0
    budget = interpreted_budget()
    d, m = W.shape
    per_row = TWIN_ROW_SECONDS * (m if K.shape[0] and params[:, 1].min() == 0.0 else 1)
    twin = twin_covers(family, params, K.shape[0] > 0)
    if twin and budget > d * (per_row + 1e-9 * d * m):
        done, converged, spent = bcd_epochs_numpy(H, C, W, P, K, R, family, params, k_top,
                                                   hist, n_hist, max_epochs, tol, budget)
        charge_interpreted(spent)
        if converged or done >= max_epochs:
            return done, converged
    # the compiled epochs in calls of bounded work: Python handles its signals between two
    # calls (Ctrl-C, a profiling timer), never inside one
    chunk = _epochs_per_call(W, K)
    converged = False
    while done < max_epochs:
        n = min(chunk, max_epochs - done)
        more, converged = _bcd_epochs(H, C, W, P, K, R, family, params, k_top, hist, n_hist,
                                      n, tol)
        done += int(more)
        if converged or int(more) < n:
            break
    return done, bool(converged)


#: Most multiply-adds (about) of one compiled call of :func:`_bcd_epochs` made by
#: :func:`_run_epochs`: a longer run is split into calls of fewer epochs, so that an
#: interrupt or a timer's signal waits at most about a second.
EPOCH_CALL_WORK = 1e9


def _epochs_per_call(W: np.ndarray, K: np.ndarray) -> int:
    """Epochs per compiled call: :data:`EPOCH_CALL_WORK` over an epoch's ``d m d``
    multiply-adds (a row's move updates ``P`` in every task), at least one; unbounded with a
    task coupling, whose call first decomposes each row's ``m x m`` block (a cost per
    call)."""
    d, m = W.shape
    if K.shape[0]:
        return 2**62
    return max(1, int(EPOCH_CALL_WORK // max(d * m * d, 1)))


#: Epochs between two looks at the structure of an iterate (:func:`_structured_epochs`).
_NEWTON_CHUNK = 5

#: Epochs of plain coordinate descent before the first support steps
#: (:func:`_structured_epochs`, ``kind="support"``).
_SUPPORT_AFTER = 50

#: The tasks that take the support steps: those whose optimality violation is at least this
#: share of the largest task's.
_SUPPORT_SHARE = 0.1

#: Work of the support steps per task and step, in the units of an epoch's (multiply-adds):
#: ``_SUPPORT_ROW_WORK k^3 + _SUPPORT_TASK_WORK`` on ``k`` rows (an eigendecomposition and
#: numpy's calls).
_SUPPORT_ROW_WORK = 10.0
_SUPPORT_TASK_WORK = 2000.0

#: The most entries of the support steps' stacked matrices (``tasks x k x k``, 64 MB).
_SUPPORT_MAX_ENTRIES = 2 ** 23

#: Work of one epoch on fused rows per entry of ``W``, beyond the ``d`` of its update of
#: ``P``: the row minimization (a few dynamic programs), in the units of the Newton steps'
#: work (``p^3 / 3`` for ``p`` segments, one unit a multiply-add of a dense factorization;
#: :func:`_structured_epochs`): set so that the two estimates are in the ratio of the CPU times of
#: an epoch and of a Newton step on School's raw features (``benchmarks/bench_certified.py``).
_FUSED_ENTRY_WORK = 400.0


def _fused_structure(W: np.ndarray) -> tuple[np.ndarray, ...]:
    """The structure of a fused iterate: its signs and the signs of its jumps (each array
    of ``m`` columns: a jump counted with the task after it)."""
    jumps = np.sign(np.diff(W, axis=1)).astype(np.int8)
    first = np.zeros((W.shape[0], min(W.shape[1], 1)), dtype=np.int8)
    return np.sign(W).astype(np.int8), np.concatenate([first, jumps], axis=1)


def _sign_structure(W: np.ndarray) -> tuple[np.ndarray, ...]:
    """The structure of an elastic-net iterate: its signs."""
    return (np.sign(W).astype(np.int8),)


def _fused_point(H, C, W, P, params, room, tasks):
    """:func:`~multitask.solvers.fused_newton.fused_newton_point` within ``room`` work (the
    fused rows couple the tasks: taken only when no task's structure changed)."""
    if not np.all(tasks):
        return None, 0.0
    a, b, c = (float(x) for x in params[0])
    return fused_newton_point(H, C, W, a, b, c,
                              max_segments=int((3.0 * room) ** (1.0 / 3.0)))


def _support_point(H, C, W, P, params, room, tasks):
    """:func:`~multitask.solvers.lasso_support.support_point` within ``room`` work, for the
    ``tasks`` whose signs did not change and whose optimality violation (``P = H W``:
    :func:`~multitask.solvers.lasso_support.violations`) is at least
    :data:`_SUPPORT_SHARE` of the largest: the tasks that hold the run back."""
    a, c = params[:, 0], params[:, 2]
    v = violations(C, W, P, a, c)
    tasks = tasks & (v > 0.0) & (v >= _SUPPORT_SHARE * v.max(initial=0.0))
    m = int(np.count_nonzero(tasks))
    if m == 0:
        return None, 0.0
    rows = max(room / m - _SUPPORT_TASK_WORK, 0.0) / _SUPPORT_ROW_WORK
    rows = min(rows ** (1.0 / 3.0), math.sqrt(_SUPPORT_MAX_ENTRIES / m))
    return support_point(H, C, W, a, c, tasks=tasks, max_rows=int(rows))


def _structured_epochs(H, C, W, P, K, R, family, params, k_top, hist, n_hist, max_epochs, tol,
                       work, kind):
    """:func:`_run_epochs` in chunks of :data:`_NEWTON_CHUNK` epochs: after a chunk that left
    the structure of ``W`` unchanged, exact steps on that structure give a point that replaces
    ``W`` (with ``P``; the extrapolation restarts) when it lowers the objective (for the
    support steps, the tasks whose structure is unchanged). ``kind``
    ``"fused"``: fused rows, the structure their zeros, signs and jump signs, Newton steps
    (:func:`~multitask.solvers.fused_newton.fused_newton_point`); ``"support"``: elastic-net
    rows without l2 part or coupling, the structure the signs, the support steps of
    :func:`~multitask.solvers.lasso_support.support_point`, after :data:`_SUPPORT_AFTER` epochs
    of plain coordinate descent. The steps' work is kept below the epochs' (``work =
    [epochs', steps']``, carried across calls). Returns ``(epochs done, converged)``."""
    d, m = W.shape
    structure, point = ((_fused_structure, _fused_point) if kind == "fused"
                        else (_sign_structure, _support_point))
    entry_work = _FUSED_ENTRY_WORK if kind == "fused" else 1.0
    done = 0
    if kind == "support" and work[0] == 0.0:
        # the epochs alone first: most problems converge before the steps would pay
        done, converged = _run_epochs(H, C, W, P, K, R, family, params, k_top, hist, n_hist,
                                      min(_SUPPORT_AFTER, max_epochs), tol)
        work[0] += done * float(d) * m * (d + entry_work)
        if converged or done >= max_epochs:
            return done, converged
    before = None
    while done < max_epochs:
        k, converged = _run_epochs(H, C, W, P, K, R, family, params, k_top, hist, n_hist,
                                   min(_NEWTON_CHUNK, max_epochs - done), tol)
        done += k
        work[0] += k * float(d) * m * (d + entry_work)
        if converged:
            return done, True
        now = structure(W)
        # the tasks whose structure the chunk left unchanged
        same = (np.ones(m, dtype=bool) if before is None else
                np.logical_and.reduce([np.all(x == y, axis=0)
                                       for x, y in zip(now, before, strict=True)]))
        first = before is None
        before = now
        room = work[0] - work[1]
        if first or not np.any(same) or room <= 0.0:
            continue
        new, spent = point(H, C, W, P, params, room, same)
        work[1] += spent
        if new is None:
            continue
        Pn = np.ascontiguousarray(apply_per_task(H, new))
        if _objective(C, new, Pn, R, family, params) < _objective(C, W, P, R, family, params):
            W[:] = new
            P[:] = Pn
            n_hist[0] = 0
    return done, False


def _coupling(penalty: Penalty, m: int) -> tuple[np.ndarray, float]:
    """``(K, lambda_max(K))`` of a ``"task_coupling"`` penalty (``K`` of shape ``(0, 0)``
    and 0 without one)."""
    if "task_coupling" not in penalty.capabilities:
        return np.zeros((0, 0)), 0.0
    K = np.ascontiguousarray(penalty.task_coupling(), dtype=np.float64)
    if K.shape != (m, m):
        raise ValueError(f"The {penalty.name} penalty's task coupling has shape {K.shape}, "
                         f"expected ({m}, {m}).")
    top = float(np.linalg.eigvalsh(K)[-1]) if m else 0.0
    return K, max(top, 0.0)


def quadratic_row_descent(H: np.ndarray, C: np.ndarray, W: np.ndarray, penalty: Penalty, *,
                          max_epochs: int, tol: float, anderson: int = 5) -> tuple[int, bool]:
    """Epochs of this module's coordinate descent on ``min_W sum_t 0.5 w_t^T H_t w_t - C_t^T
    w_t + penalty(W)``, in place on ``W`` (C-contiguous float64 of shape ``(d, m)``), for
    solvers that build such models themselves (the steps of proximal Newton).

    ``H`` of shape ``(m, d, d)`` (or ``(1, d, d)``), ``C`` of shape ``(d, m)``; the penalty is
    a ``"row_prox"`` one, with its ``"task_coupling"`` where it has one. The epochs stop when
    the largest change of an epoch is at most ``tol`` times the largest coefficient, or after
    ``max_epochs``. Returns ``(epochs, converged)``; no certificate is computed.
    """
    d, m = W.shape
    family, params = row_strengths(penalty, d)
    K, k_top = _coupling(penalty, m)
    H = np.ascontiguousarray(H, dtype=np.float64)
    C = np.ascontiguousarray(C, dtype=np.float64)
    if not (np.isfinite(H).all() and np.isfinite(C).all() and np.isfinite(W).all()):
        # the compiled epochs index by values computed from these (thresholds, sorts): never
        # call them on NaN or infinity
        raise FloatingPointError("quadratic_row_descent: H, C or W holds NaN or infinity.")
    P = np.ascontiguousarray(apply_per_task(H, W))
    R = np.ascontiguousarray(W @ K) if K.size else np.zeros((0, 0))
    hist = np.empty((anderson + 1 if anderson else 0, d, m))
    n_hist = np.zeros(1, dtype=np.int64)
    return _run_epochs(H, C, W, P, K, R, family, params, k_top, hist, n_hist,
                       int(max_epochs), float(tol))


class BlockCoordinateDescent(Solver):
    """Block coordinate descent over feature rows (quadratic loss, row-separable penalty,
    optionally a task-side quadratic coupling; module docstring).

    Parameters
    ----------
    max_iter : int, default=10000
        Maximum number of epochs (``ConvergenceWarning`` when reached).
    tol : float, default=1e-4
        Tolerance on the certified relative duality gap (:mod:`multitask.solvers.base`).
    anderson : int, default=5
        Anderson acceleration every ``anderson`` epochs, from the last ``anderson + 1``
        iterates, kept when it lowers the objective (0 turns it off). Measured on School's
        raw features (``tol=1e-8``): 10 to 20 times fewer epochs.
    support_steps : bool, default=True
        For elastic-net rows without l2 group term or task coupling (the lasso, the elastic
        net, the capped-l1 stages): after :data:`_SUPPORT_AFTER` plain epochs, then after
        every :data:`_NEWTON_CHUNK` epochs, the exact steps of
        :mod:`multitask.solvers.lasso_support` on the support of the tasks whose signs the
        epochs left unchanged (kept where they lower the objective); the fused rows take
        their Newton steps (:mod:`multitask.solvers.fused_newton`) either way.
    warn : bool, default=True
    """

    name = "bcd"
    max_preference = 70.0
    roles = frozenset({"model", "inner"})
    datafit_requires = frozenset({"quadratic"})
    penalty_requires = frozenset({"row_prox"})
    handles_smooth_part = True

    @classmethod
    def preference(cls, problem: Problem, **settings) -> float:
        """70 (ahead of the gradient methods and ADMM); 60 (ahead of accelerated gradient,
        behind ADMM on ill-conditioned Gram matrices) for a whole model of group rows (the
        elastic-net family with an l2 part, no task coupling) on per-task designs, where each
        row step solves a coupled problem over the tasks: faster than accelerated gradient
        there from 10 to 40 features, 10 to 1,000 tasks (docs/tuning_constants.md); 45
        (behind accelerated gradient) for a task coupling (the graph model, the temporal group
        lasso) on tasks of fewer rows than features (singular Gram matrices: a shared design
        of ``d / 2 <= n < d`` rows), where each epoch's coupled row solves cost more than an
        accelerated-gradient step and take as many epochs as it takes steps (the survey
        problem of ``benchmarks/bench_cv_two_param.py``); a working set's subproblem keeps 70
        there: inside working sets this solver was ahead of accelerated gradient on the graph
        model and the temporal group lasso at every measured strength (docs/tuning_constants.md,
        "Working sets for the coupled models")."""
        family, (_, b, _) = problem.row_prox or ("elastic_net", (0, 0, 0))
        coupled = problem.penalty_has("task_coupling")
        if coupled and problem.fewer_rows_than_features and problem.role == "model":
            return 45.0
        group_rows = family == "elastic_net" and bool(np.any(np.asarray(b))) and not coupled
        if problem.role == "model" and group_rows and not problem.shared:
            return 60.0
        return 70.0

    def __init__(self, *, max_iter: int = 10000, tol: float = 1e-4, anderson: int = 5,
                 support_steps: bool = True, warn: bool = True):
        super().__init__(max_iter=max_iter, tol=tol, warn=warn)
        self.anderson = check_int(anderson, "anderson", low=0)
        if not isinstance(support_steps, (bool, np.bool_)):
            raise ValueError(f"support_steps must be True or False, got {support_steps!r}.")
        self.support_steps = bool(support_steps)

    def missing(self, datafit: Datafit, penalty: Penalty) -> list[str]:
        out = super().missing(datafit, penalty)
        if "smooth" in penalty.capabilities and "task_coupling" not in penalty.capabilities:
            out.append(f"the {penalty.name} penalty has a smooth part that is not a task "
                       "coupling ('task_coupling'), which 'bcd' does not handle")
        if not getattr(penalty.linear_map, "norm_sq", 1.0) == 1.0 or penalty.parts:
            out.append(f"the {penalty.name} penalty acts on a split variable, not on W")
        family = getattr(penalty, "row_prox_family", "elastic_net")
        if "row_prox" in penalty.capabilities and family not in _FAMILY_CODES:
            out.append(f"the {penalty.name} penalty's row family {family!r} is unknown")
        return out

    def solve(self, datafit: Datafit, penalty: Penalty, *, coef_init=None, intercept_init=None,
              callback: Callable | None = None) -> SolverResult:
        """Run the epochs (``callback`` is called after each batch of epochs);
        ``intercept_init`` is unused (the quadratic datafit eliminates the intercepts)."""
        run = IterationRecord(self, datafit, penalty, callback)
        W, _ = run.start(coef_init, None)
        W = np.ascontiguousarray(W)
        d, m = W.shape
        H, C = datafit.quadratic_form()
        H = np.ascontiguousarray(H)
        C = np.ascontiguousarray(C)
        family, params = row_strengths(penalty, d)
        K, k_top = _coupling(penalty, m)
        P = np.ascontiguousarray(apply_per_task(H, W))
        R = np.ascontiguousarray(W @ K) if K.size else np.zeros((0, 0))
        hist = np.empty((self.anderson + 1 if self.anderson else 0, d, m))
        n_hist = np.zeros(1, dtype=np.int64)
        # the Lipschitz constant serves the prox-gradient residual only, where the model has no
        # dual (the residual measures it itself when it is not given)
        dual = "dual" in getattr(datafit, "capabilities", ()) and has_dual(penalty)
        L = None if dual else measure_lipschitz(datafit, penalty)
        n_epochs = 0
        converged = False
        kind = None
        if family == _FUSED and not K.size and d > 0 and bool(np.all(params == params[:1])):
            kind = "fused"
        elif (self.support_steps and family == _ELASTIC_NET and not K.size and d > 0
              and not np.any(params[:, 1]) and np.any(params[:, 0])):
            kind = "support"
        work = [0.0, 0.0]
        for inner_tol in inner_tolerances(self.tol):
            if n_epochs >= self.max_iter:
                break
            if kind is not None:
                k, _ = _structured_epochs(H, C, W, P, K, R, family, params, k_top, hist,
                                          n_hist, self.max_iter - n_epochs, inner_tol, work,
                                          kind)
            else:
                k, _ = _run_epochs(H, C, W, P, K, R, family, params, k_top, hist, n_hist,
                                   self.max_iter - n_epochs, inner_tol)
            n_epochs += k
            measure = run.certify(n_epochs, W, None, L=L, target=self.tol)
            run.record(datafit.value(W) + penalty.value(W))
            if measure <= self.tol:
                converged = True
                break
            if run.notify(n_epochs, run.history[-1], W, None):
                break
        return run.finish(W, None, n_iter=n_epochs, converged=converged, measure=run.measure,
                          info={"best_objective": run.history[-1] if run.history else np.nan,
                                "row_family": ROW_PROX_FAMILIES[family],
                                "coupled": bool(K.size)})
