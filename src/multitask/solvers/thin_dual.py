"""The projected dual point's correction through the tasks' rows, where tasks are wide.

The certificate's projected dual point (:func:`multitask.solvers.certificate._projected_dual`)
moves the loss's score derivatives ``a`` by ``delta_t = Xc_t c_t`` per task, with ``c_t`` the
minimum-norm solution of

    Xc_t^T D_t Xc_t c_t = step_t,

``Xc_t`` the task's rows as the loss sees them (centred by their weighted means when the
intercepts are variables), ``D_t`` their weights (:attr:`row_weights
<multitask.data.MultiTaskData.row_weights>`), so that the gradient of the smooth part moves by
the part of ``step_t`` in the range of the design. Through the eigendecompositions of the
``d x d`` Gram matrices this costs ``O(m d^3)``. With ``B_t = D_t^(1/2) Xc_t`` the same
``delta_t`` is ``D_t^(-1/2) (B_t^T)^+ step_t = D_t^(-1/2) (B_t B_t^T)^+ B_t step_t``: the
pseudo-inverse of the ``n_t x n_t`` Gram matrix of the task's rows, ``O(d n_t^2)`` (the
products with a sparse design's rows, kept sparse), far cheaper where a task has fewer rows
``n_t`` than features (:func:`thin_correction`). The dual point after the correction is
evaluated exactly (its gradient from the design, its conjugate value), so the certificate
stays valid whatever the correction; the route only decides how close to the projection it
lands. The ``n_t x n_t`` eigendecompositions are computed once per data set (cached on it,
shared by the fits of a path); each correction then costs about one product with the
design. Tasks of equal size in a
dense stacked design without features constant within a task are handled together
(batched products on a view of the design: no copy of it).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from multitask.losses import Datafit

__all__ = ["THIN_RCOND", "thin_correction"]

_KEY = "_thin_dual_factors"

#: Eigenvalues of ``B_t B_t^T`` at most this fraction of the largest are read as zero (the cut
#: of the Gram route).
THIN_RCOND = 1e-12


def thin_correction(datafit: Datafit, step: np.ndarray) -> np.ndarray | None:
    """``delta`` of the module docstring, stacked like the data's rows; ``None`` where the
    route does not apply: a shared design, one column of ``W`` per task-class pair (the
    multinomial loss), or a task with at least as many rows as features (the Gram route is
    then the cheaper).

    Parameters
    ----------
    datafit : Datafit
        The loss bound to per-task data.
    step : ndarray of shape (n_features, n_tasks)
        The target change of the gradient.
    """
    data = datafit.data
    if getattr(data, "shared", True) or step.shape[1] != int(data.n_tasks):
        return None
    centre = bool(getattr(datafit, "has_intercept_variable", False))
    cached = getattr(data, "cached", None)
    if cached is not None:  # shared by the fits of a path on the same data
        factors = cached((_KEY, centre), lambda: _factors(datafit))
    else:
        factors = _factors(datafit)
    if factors is False:
        return None
    if factors[0] == "batched":
        _, X3, c, root, Q, inv = factors
        b = root * (np.einsum("tnd,dt->tn", X3, step) - np.einsum("dt,dt->t", c, step)[:, None])
        u = np.einsum("tij,tj->ti", Q, inv * np.einsum("tji,tj->ti", Q, b))
        return (u / root).ravel()
    delta = np.zeros(int(data.n_rows))
    for t, (rows, seen, X, c, keep, root, Q, inv) in enumerate(factors[1]):
        if Q is None or not np.any(step[:, t]):
            continue
        sk = step[:, t] * keep
        b = root * (np.asarray(X @ sk).ravel() - float(c @ sk))
        part = np.zeros(seen.shape[0])
        part[seen] = (Q @ (inv * (Q.T @ b))) / root
        delta[rows] = part
    return delta


def _pinv_parts(K: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(Q, 1 / lambda or 0)`` of the symmetric ``K`` (one matrix or a stack): eigenvalues
    at most :data:`THIN_RCOND` times the largest read as zero."""
    lam, Q = np.linalg.eigh(K)
    top = np.max(lam, axis=-1, keepdims=True) if lam.size else lam
    live = lam > THIN_RCOND * np.maximum(top, np.finfo(float).tiny)
    return Q, np.where(live, 1.0 / np.where(live, lam, 1.0), 0.0)


def _weighted_centred_gram(XX: np.ndarray, Xc: np.ndarray, cc, root: np.ndarray) -> np.ndarray:
    """``B B^T`` for ``B = diag(root) (X - 1 c^T)`` from ``XX = X X^T``, ``Xc = X c`` and ``cc
    = c^T c`` (one task, or a stack of tasks along the first axis)."""
    K = XX - Xc[..., :, None] - Xc[..., None, :] + np.asarray(cc)[..., None, None]
    K *= root[..., :, None] * root[..., None, :]
    return K


def _factors(datafit: Datafit) -> tuple | bool:
    """The per-task pieces of :func:`thin_correction` (``False`` where it does not apply):
    ``("batched", X3, c, root, Q, inv)`` for equal tasks of a dense design, else
    ``("tasks", [(rows, seen, X, c, keep, root, Q, inv) per task])``; ``c`` the rows' centre
    (their weighted means when the intercepts are variables, else the data's centring),
    ``root`` the square roots of the row weights, ``(Q, inv)`` the pseudo-inverse of ``B
    B^T``."""
    data = datafit.data
    m, d = int(data.n_tasks), int(data.n_features)
    sizes = np.asarray(data.task_sizes)
    if sizes.size != m or m == 0 or int(sizes.max(initial=0)) >= d:
        return False
    weights = data.row_weights
    centre = bool(getattr(datafit, "has_intercept_variable", False))
    X = data.X
    n = int(sizes[0])
    if (not sp.issparse(X) and isinstance(X, np.ndarray) and X.dtype == np.float64
            and np.all(sizes == n) and n > 0
            and np.all(weights > 0) and X.flags.c_contiguous
            and (data.x_constant is None or not np.any(data.x_constant))):
        X3 = X.reshape(m, n, d)
        w2 = weights.reshape(m, n)
        root = np.sqrt(w2)
        if centre:
            c = np.einsum("tn,tnd->dt", w2, X3) / np.sum(w2, axis=1)
        elif data.x_offset is not None:
            c = np.asarray(data.x_offset, dtype=np.float64)
        else:
            c = np.zeros((d, m))
        K = _weighted_centred_gram(X3 @ X3.transpose(0, 2, 1), np.einsum("tnd,dt->tn", X3, c),
                                   np.einsum("dt,dt->t", c, c), root)
        Q, inv = _pinv_parts(K)
        return ("batched", X3, c, root, Q, inv)
    tasks: list[tuple] = []
    offsets = data.offsets
    for t in range(m):
        rows = slice(int(offsets[t]), int(offsets[t + 1]))
        w = weights[rows]
        seen = w > 0
        if not np.any(seen):
            tasks.append((rows, seen, None, None, None, None, None, None))
            continue
        Xt = data.task_X(t)
        if not np.all(seen):
            Xt = Xt[seen]
        if not sp.issparse(Xt):
            Xt = np.asarray(Xt, dtype=np.float64)  # a view of a dense design
        keep = np.ones(d)
        if data.x_constant is not None:
            keep[data.x_constant[:, t]] = 0.0
        ws = w[seen]
        if centre:
            c = np.asarray(Xt.T @ ws).ravel() * keep / np.sum(ws)
        elif data.x_offset is not None:
            c = data.x_offset[:, t] * keep
        else:
            c = np.zeros(d)
        XX = Xt @ Xt.T
        XX = XX.toarray() if sp.issparse(XX) else np.array(XX)
        dropped = np.flatnonzero(keep == 0.0)
        if dropped.size:  # the features constant within the task leave the Gram matrix
            Xd = Xt[:, dropped]
            DD = Xd @ Xd.T
            XX -= DD.toarray() if sp.issparse(DD) else np.asarray(DD)
        root = np.sqrt(ws)
        K = _weighted_centred_gram(XX, np.asarray(Xt @ c).ravel(), np.float64(c @ c), root)
        Q, inv = _pinv_parts(K)
        tasks.append((rows, seen, Xt, c, keep, root, Q, inv))
    return ("tasks", tasks)
