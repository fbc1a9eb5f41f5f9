"""Per-task Gram matrices of a design, built without a centred copy, and the largest scaled
eigenvalue of many of them (the quadratic bounds and Lipschitz constants of the losses)."""

from __future__ import annotations

import numpy as np

from multitask.data import MultiTaskData

__all__ = ["max_scaled_eigenvalue"]

#: Entries of the temporaries of one chunk when per-task Gram matrices are built on the fly.
_CHUNK_ENTRIES = 1 << 22


def _is_dense_per_task(data: MultiTaskData) -> bool:
    return not (data.shared or data.is_sparse or data.x_offset is not None)


def _centred_view(data: MultiTaskData) -> tuple[MultiTaskData, np.ndarray, np.ndarray]:
    """``(data_c, x_mean, y_mean)``: the per-task centred data without copying ``X``.

    Dense per-task designs are centred implicitly (``x_offset``, as the data layer does for
    sparse ones): the centred copy of ``X`` that :meth:`MultiTaskData.centered` makes would
    double the memory of the data and cost a pass before the first gradient. Other formats
    go through :meth:`MultiTaskData.centered` (it keeps them implicit or small).
    """
    if not _is_dense_per_task(data):
        return data.centered()
    return data.centred_implicitly()


def _gram_chunks(data: MultiTaskData, x_mean: np.ndarray, small_side: bool = False):
    """Yield ``(tasks, G)`` over consecutive chunks of tasks of a dense per-task design.

    ``G[i]`` is the centred Gram matrix ``Xc_t^T Xc_t`` (``d x d``) of task ``t = tasks[i]``,
    ``Xc_t = X_t - 1 mu_t^T``; with ``small_side``, the chunk's matrices are ``Xc_t Xc_t^T``
    zero-padded to the chunk's largest ``n_t`` when that is below ``d`` (same nonzero
    eigenvalues, smaller matrices). Each task is centred explicitly in a chunk-sized
    temporary (accurate when the features are far from zero, unlike ``X^T X - n mu mu^T``);
    tasks of equal sizes are batched; chunks hold about ``_CHUNK_ENTRIES`` numbers. With
    :attr:`~multitask.data.MultiTaskData.sample_weight`, the rows of ``Xc_t`` are scaled by
    the square roots of their weights (``G`` is then ``Xc_t^T D_t Xc_t``).
    """
    m, d = data.n_tasks, data.n_features
    off = data.offsets
    root = None if data.sample_weight is None else np.sqrt(data.sample_weight)
    sizes = data.task_sizes
    start = 0
    while start < m:
        n_max = int(sizes[start])
        stop, rows = start, 0
        while stop < m:
            n_max = max(n_max, int(sizes[stop]))
            q = min(d, n_max) if small_side else d
            if stop > start and max(rows + sizes[stop], (stop + 1 - start) * q) * max(d, q) \
                    > _CHUNK_ENTRIES:
                break
            rows += int(sizes[stop])
            stop += 1
        tasks = np.arange(start, stop)
        n_max = int(sizes[tasks].max())
        q = min(d, n_max) if small_side else d
        G = np.zeros((len(tasks), q, q))
        if np.all(sizes[tasks] == n_max):
            Xc = data.X[off[start] : off[stop]].reshape(len(tasks), n_max, d)
            Xc = Xc - x_mean[:, tasks].T[:, None, :]
            if root is not None:
                Xc *= root[off[start] : off[stop]].reshape(len(tasks), n_max, 1)
            if q == d:
                np.matmul(Xc.transpose(0, 2, 1), Xc, out=G)
            else:
                np.matmul(Xc, Xc.transpose(0, 2, 1), out=G)
        else:
            for i, t in enumerate(tasks):
                Xt = data.X[off[t] : off[t + 1]] - x_mean[:, t][None, :]
                if root is not None:
                    Xt *= root[off[t] : off[t + 1], None]
                if q == d:
                    G[i] = Xt.T @ Xt
                else:
                    G[i, : len(Xt), : len(Xt)] = Xt @ Xt.T
        yield tasks, G
        start = stop


def _task_grams(data: MultiTaskData, x_mean: np.ndarray) -> np.ndarray:
    """All centred per-task Gram matrices, shape ``(m, d, d)`` (see :func:`_gram_chunks`)."""
    G = np.empty((data.n_tasks, data.n_features, data.n_features))
    for tasks, Gc in _gram_chunks(data, x_mean):
        G[tasks] = Gc
    return G


#: Matrices per batched Cholesky test of :func:`max_scaled_eigenvalue`.
_CERTIFY_BLOCK = 64


def max_scaled_eigenvalue(G: np.ndarray, scale: np.ndarray, *, n_power: int = 6) -> float:
    """``max_t scale_t * lambda_max(G_t)`` for PSD ``G_t``, without every task's eigenvalues.

    A batched power iteration (``n_power`` steps from a fixed start) ranks the matrices; the
    exact top eigenvalues (``eigvalsh``) of the highest ranked few give a candidate ``c``,
    and one batched Cholesky factorization of ``c / scale_t I - G_t`` per block of
    ``_CERTIFY_BLOCK`` matrices certifies ``scale_t lambda_max(G_t) <= c`` for all the others.
    A block that fails gets its exact eigenvalues, which raise ``c``. The result is the exact
    maximum up to a relative ``1e-12`` (added for the rounding of the factorization), at
    about a third of the cost of every task's eigenvalues (measured at ``d = 50``).

    Parameters
    ----------
    G : ndarray of shape (k, q, q)
        Symmetric positive semi-definite matrices.
    scale : ndarray of shape (k,)
        Positive scales (``1 / n_t``).
    n_power : int
        Power steps of the ranking.

    Returns
    -------
    float
    """
    k, q = G.shape[0], G.shape[1]
    if k == 0 or q == 0:
        return 0.0
    scale = np.asarray(scale, dtype=np.float64)
    if k <= 2 * _CERTIFY_BLOCK:
        return float(np.max(scale * np.linalg.eigvalsh(G)[:, -1]))
    v = np.ones((k, q, 1)) + 1e-3 * np.cos(np.arange(q, dtype=np.float64))[None, :, None]
    for _ in range(n_power):
        v = np.matmul(G, v)
        nrm = np.linalg.norm(v, axis=1, keepdims=True)
        v /= np.where(nrm > 0, nrm, 1.0)
    theta = scale * np.einsum("tdi,tdi->t", v, np.matmul(G, v))
    top = np.argsort(theta)[-max(4, k // 256):]
    done = np.zeros(k, dtype=bool)
    done[top] = True
    c = float(np.max(scale[top] * np.linalg.eigvalsh(G[top])[:, -1]))
    eye = np.eye(q)[None]
    for b0 in range(0, k, _CERTIFY_BLOCK):
        idx = np.arange(b0, min(b0 + _CERTIFY_BLOCK, k))
        idx = idx[~done[idx]]
        if not len(idx):
            continue
        bound = c * (1.0 + 1e-12) + np.finfo(float).tiny
        try:
            np.linalg.cholesky((bound / scale[idx])[:, None, None] * eye - G[idx])
        except np.linalg.LinAlgError:
            c = max(c, float(np.max(scale[idx] * np.linalg.eigvalsh(G[idx])[:, -1])))
    return c * (1.0 + 1e-12)
