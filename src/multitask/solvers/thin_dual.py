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
lands.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from multitask.losses import Datafit

__all__ = ["THIN_RCOND", "thin_correction"]

#: Eigenvalues of ``B_t B_t^T`` at most this fraction of the largest are read as zero (the cut
#: of the Gram route).
THIN_RCOND = 1e-12


def thin_correction(datafit: Datafit, step: np.ndarray) -> np.ndarray | None:
    """``delta`` of the module docstring, stacked like the data's rows, by least squares on
    each task's rows; ``None`` where the route does not apply: a shared design, one column of
    ``W`` per task-class pair (the multinomial loss), or a task with at least as many rows as
    features (the Gram route is then the cheaper).

    Parameters
    ----------
    datafit : Datafit
        The loss bound to per-task data.
    step : ndarray of shape (n_features, n_tasks)
        The target change of the gradient.
    """
    data = datafit.data
    if getattr(data, "shared", True):
        return None
    d, m = step.shape
    sizes = np.asarray(data.task_sizes)
    if m != int(data.n_tasks) or sizes.size != m or int(sizes.max(initial=0)) >= d:
        return None
    weights = data.row_weights
    offsets = data.offsets
    centre = bool(getattr(datafit, "has_intercept_variable", False))
    delta = np.zeros(int(data.n_rows))
    for t in range(m):
        rows = slice(int(offsets[t]), int(offsets[t + 1]))
        w = weights[rows]
        seen = w > 0
        if np.any(step[:, t]) and np.any(seen):
            part = np.zeros(w.shape[0])
            part[seen] = _task_correction(data, t, w[seen], seen, step[:, t], centre)
            delta[rows] = part
    return delta


def _task_correction(data, t: int, w: np.ndarray, seen: np.ndarray, step: np.ndarray,
                     centre: bool) -> np.ndarray:
    """``D^(-1/2) (B B^T)^+ B step`` (module docstring) on the rows ``seen`` of task ``t``,
    weights ``w``: ``B = D^(1/2) (X - 1 c^T)`` over the features not constant in the task,
    ``c`` the rows' weighted means with ``centre``, else the data's centring (or zero)."""
    X = data.task_X(t)[seen]
    d = X.shape[1]
    keep = np.ones(d)
    if data.x_constant is not None:
        keep[data.x_constant[:, t]] = 0.0
    X = X @ sp.diags(keep) if sp.issparse(X) else np.asarray(X, dtype=np.float64) * keep
    if centre:
        c = np.asarray(X.T @ w).ravel() / np.sum(w)
    elif data.x_offset is not None:
        c = data.x_offset[:, t] * keep
    else:
        c = np.zeros(d)
    Xc = np.asarray(X @ c).ravel()
    XX = X @ X.T
    K = (XX.toarray() if sp.issparse(XX) else np.asarray(XX)) - Xc[:, None] - Xc[None, :]
    K += float(c @ c)
    root = np.sqrt(w)
    K *= root[:, None] * root[None, :]
    b = root * (np.asarray(X @ (step * keep)).ravel() - float(c @ (step * keep)))
    lam, Q = np.linalg.eigh(K)
    top = float(lam[-1]) if lam.size else 0.0
    inv = np.where(lam > THIN_RCOND * max(top, np.finfo(float).tiny), 1.0 / np.where(
        lam > 0, lam, 1.0), 0.0)
    return (Q @ (inv * (Q.T @ b))) / root
