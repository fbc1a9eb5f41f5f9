"""Synthetic multi-task data with a known structure of the weight matrix.

Every generator draws a true weight matrix ``W_true`` of shape ``(n_features, n_tasks)`` (one
column per task, as in the papers) with a planted structure, then data for each task:

* the design matrix has i.i.d. standard normal entries (one matrix per task, or one matrix
  shared by all tasks with ``shared_X=True``);
* the noisy score of a row ``x`` of task ``t`` is ``x @ W_true[:, t] + noise * e`` with
  ``e ~ N(0, 1)``;
* ``task_type="regression"``: the target is the noisy score;
  ``task_type="classification"``: the label is ``1`` where the noisy score is positive, else
  ``0``.

There is no intercept. All randomness comes from ``random_state``; the true weights are drawn
first, then the design matrices, then the noise.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral, Real

import numpy as np
from sklearn.utils import Bunch

from ._utils import RandomStateLike, check_random_state

__all__ = [
    "make_joint_sparse_tasks",
    "make_low_rank_tasks",
    "make_outlier_tasks",
    "make_sparse_low_rank_tasks",
]

_TASK_TYPES = ("regression", "classification")


def _check_int(name: str, value: object, low: int, high: int | None = None) -> int:
    if (
        not isinstance(value, Integral)
        or isinstance(value, bool)
        or value < low
        or (high is not None and value > high)
    ):
        bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be an integer {bound}, got {value!r}")
    return int(value)


def _check_common(
    n_tasks: int, n_features: int, noise: float, task_type: str
) -> tuple[int, int, float]:
    m = _check_int("n_tasks", n_tasks, 1)
    d = _check_int("n_features", n_features, 1)
    if not isinstance(noise, Real) or noise < 0:
        raise ValueError(f"noise must be a number >= 0, got {noise!r}")
    if task_type not in _TASK_TYPES:
        raise ValueError(f"task_type must be one of {_TASK_TYPES}, got {task_type!r}")
    return m, d, float(noise)


def _sample_sizes(n_samples: int | Sequence[int], n_tasks: int, shared_X: bool) -> np.ndarray:
    sizes = np.asarray(n_samples)
    if sizes.ndim == 0:
        sizes = np.full(n_tasks, sizes)
    if sizes.shape != (n_tasks,) or not np.issubdtype(sizes.dtype, np.integer):
        raise ValueError(f"n_samples must be an int or a sequence of {n_tasks} ints")
    if np.any(sizes < 1):
        raise ValueError("n_samples must be positive")
    if shared_X and np.any(sizes != sizes[0]):
        raise ValueError("shared_X=True needs the same n_samples for every task")
    return sizes.astype(np.int64)


def _low_rank(d: int, m: int, rank: int, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``U V^T / sqrt(rank)`` with standard normal ``U`` (d, rank) and ``V`` (m, rank)."""
    U = rng.standard_normal((d, rank))
    V = rng.standard_normal((m, rank))
    return U @ V.T / np.sqrt(rank), U, V


def _simulate(
    W: np.ndarray,
    n_samples: int | Sequence[int],
    noise: float,
    shared_X: bool,
    task_type: str,
    rng,
) -> Bunch:
    """Draw the design matrices and targets for the true weights ``W`` (d, m)."""
    d, m = W.shape
    sizes = _sample_sizes(n_samples, m, shared_X)
    bunch = Bunch(task_type=task_type, noise=noise)
    if shared_X:
        X = rng.standard_normal((int(sizes[0]), d))
        score = X @ W + noise * rng.standard_normal((int(sizes[0]), m))
        bunch.X = X
        bunch.Y = score if task_type == "regression" else (score > 0).astype(np.int64)
    else:
        Xs = [rng.standard_normal((int(n), d)) for n in sizes]
        ys = []
        for t, X_t in enumerate(Xs):
            score = X_t @ W[:, t] + noise * rng.standard_normal(X_t.shape[0])
            ys.append(score if task_type == "regression" else (score > 0).astype(np.int64))
        bunch.X = Xs
        bunch.y = ys
    bunch.W_true = W
    return bunch


def make_low_rank_tasks(
    n_tasks: int = 20,
    n_features: int = 30,
    n_samples: int | Sequence[int] = 50,
    rank: int = 3,
    noise: float = 0.1,
    shared_X: bool = False,
    task_type: str = "regression",
    random_state: RandomStateLike = None,
) -> Bunch:
    """Tasks whose weight vectors span a low-dimensional subspace (trace-norm setting).

    ``W_true = U @ V.T / sqrt(rank)`` with standard normal ``U`` (n_features, rank) and ``V``
    (n_tasks, rank), so the entries of ``W_true`` have unit variance.

    Parameters
    ----------
    n_tasks : int, default=20
    n_features : int, default=30
    n_samples : int or sequence of n_tasks int, default=50
        Rows per task (one number when ``shared_X``).
    rank : int, default=3
        Rank of ``W_true``, at most ``min(n_features, n_tasks)``.
    noise : float, default=0.1
        Standard deviation of the Gaussian noise added to the scores.
    shared_X : bool, default=False
        One design matrix for all tasks (returned as ``X`` with targets ``Y``).
    task_type : {"regression", "classification"}, default="regression"
    random_state : int, RandomState instance, Generator instance or None, default=None

    Returns
    -------
    data : sklearn.utils.Bunch
        X : list of ndarray of shape (n_t, n_features), or ndarray (n_samples, n_features)
            Standard normal design matrices, one per task (one shared when ``shared_X``).
        y : list of ndarray of shape (n_t,)
            Targets (float64) or labels (int64 in {0, 1}); absent when ``shared_X``.
        Y : ndarray of shape (n_samples, n_tasks)
            Only when ``shared_X``: one column of targets or labels per task.
        W_true : ndarray of shape (n_features, n_tasks)
            True weights, one column per task.
        task_type : str
        noise : float
        U : ndarray of shape (n_features, rank)
        V : ndarray of shape (n_tasks, rank)
        rank : int
    """
    m, d, noise = _check_common(n_tasks, n_features, noise, task_type)
    r = _check_int("rank", rank, 1, min(d, m))
    rng = check_random_state(random_state)
    W, U, V = _low_rank(d, m, r, rng)
    bunch = _simulate(W, n_samples, noise, shared_X, task_type, rng)
    bunch.update(U=U, V=V, rank=r)
    return bunch


def make_joint_sparse_tasks(
    n_tasks: int = 20,
    n_features: int = 30,
    n_samples: int | Sequence[int] = 50,
    n_relevant: int = 5,
    noise: float = 0.1,
    shared_X: bool = False,
    task_type: str = "regression",
    random_state: RandomStateLike = None,
) -> Bunch:
    """Tasks that use one common set of features (l2,1 / l1,inf setting).

    ``n_relevant`` rows of ``W_true`` (the same features for every task) have standard normal
    entries; all other rows are zero.

    Parameters
    ----------
    n_tasks : int, default=20
    n_features : int, default=30
    n_samples : int or sequence of n_tasks int, default=50
        Rows per task (one number when ``shared_X``).
    n_relevant : int, default=5
        Number of nonzero rows of ``W_true``, at most ``n_features``.
    noise : float, default=0.1
        Standard deviation of the Gaussian noise added to the scores.
    shared_X : bool, default=False
        One design matrix for all tasks (returned as ``X`` with targets ``Y``).
    task_type : {"regression", "classification"}, default="regression"
    random_state : int, RandomState instance, Generator instance or None, default=None

    Returns
    -------
    data : sklearn.utils.Bunch
        X : list of ndarray of shape (n_t, n_features), or ndarray (n_samples, n_features)
            Standard normal design matrices, one per task (one shared when ``shared_X``).
        y : list of ndarray of shape (n_t,)
            Targets (float64) or labels (int64 in {0, 1}); absent when ``shared_X``.
        Y : ndarray of shape (n_samples, n_tasks)
            Only when ``shared_X``: one column of targets or labels per task.
        W_true : ndarray of shape (n_features, n_tasks)
            True weights, one column per task.
        task_type : str
        noise : float
        support : ndarray of shape (n_relevant,), int64
            Sorted indices of the nonzero rows of ``W_true``.
    """
    m, d, noise = _check_common(n_tasks, n_features, noise, task_type)
    k = _check_int("n_relevant", n_relevant, 1, d)
    rng = check_random_state(random_state)
    support = np.sort(rng.choice(d, size=k, replace=False)).astype(np.int64)
    W = np.zeros((d, m))
    W[support] = rng.standard_normal((k, m))
    bunch = _simulate(W, n_samples, noise, shared_X, task_type, rng)
    bunch.support = support
    return bunch


def make_sparse_low_rank_tasks(
    n_tasks: int = 20,
    n_features: int = 30,
    n_samples: int | Sequence[int] = 50,
    rank: int = 3,
    sparsity: float = 0.1,
    noise: float = 0.1,
    shared_X: bool = False,
    task_type: str = "regression",
    random_state: RandomStateLike = None,
) -> Bunch:
    """Tasks with weights ``W = P + Q``: a sparse part ``P`` plus a low-rank part ``Q``.

    ``Q = U @ V.T / sqrt(rank)`` as in :func:`make_low_rank_tasks`; ``P`` has
    ``round(sparsity * n_features * n_tasks)`` standard normal entries at uniformly random
    positions and zeros elsewhere.

    Parameters
    ----------
    n_tasks : int, default=20
    n_features : int, default=30
    n_samples : int or sequence of n_tasks int, default=50
        Rows per task (one number when ``shared_X``).
    rank : int, default=3
        Rank of ``Q``, at most ``min(n_features, n_tasks)``.
    sparsity : float in [0, 1], default=0.1
        Fraction of nonzero entries of ``P``.
    noise : float, default=0.1
        Standard deviation of the Gaussian noise added to the scores.
    shared_X : bool, default=False
        One design matrix for all tasks (returned as ``X`` with targets ``Y``).
    task_type : {"regression", "classification"}, default="regression"
    random_state : int, RandomState instance, Generator instance or None, default=None

    Returns
    -------
    data : sklearn.utils.Bunch
        X : list of ndarray of shape (n_t, n_features), or ndarray (n_samples, n_features)
            Standard normal design matrices, one per task (one shared when ``shared_X``).
        y : list of ndarray of shape (n_t,)
            Targets (float64) or labels (int64 in {0, 1}); absent when ``shared_X``.
        Y : ndarray of shape (n_samples, n_tasks)
            Only when ``shared_X``: one column of targets or labels per task.
        W_true : ndarray of shape (n_features, n_tasks)
            True weights, one column per task.
        task_type : str
        noise : float
        P : ndarray of shape (n_features, n_tasks)
            Sparse part.
        Q : ndarray of shape (n_features, n_tasks)
            Low-rank part (``W_true = P + Q``).
        rank : int
    """
    m, d, noise = _check_common(n_tasks, n_features, noise, task_type)
    r = _check_int("rank", rank, 1, min(d, m))
    if not isinstance(sparsity, Real) or not 0.0 <= sparsity <= 1.0:
        raise ValueError(f"sparsity must be a number in [0, 1], got {sparsity!r}")
    rng = check_random_state(random_state)
    Q, _, _ = _low_rank(d, m, r, rng)
    n_nonzero = int(np.floor(sparsity * d * m + 0.5))
    P = np.zeros(d * m)
    positions = rng.choice(d * m, size=n_nonzero, replace=False)
    P[positions] = rng.standard_normal(n_nonzero)
    P = P.reshape(d, m)
    bunch = _simulate(P + Q, n_samples, noise, shared_X, task_type, rng)
    bunch.update(P=P, Q=Q, rank=r)
    return bunch


def make_outlier_tasks(
    n_tasks: int = 20,
    n_features: int = 30,
    n_samples: int | Sequence[int] = 50,
    rank: int = 3,
    n_outliers: int = 2,
    noise: float = 0.1,
    shared_X: bool = False,
    task_type: str = "regression",
    random_state: RandomStateLike = None,
) -> Bunch:
    """Tasks with weights ``W = L + E``: low-rank ``L`` plus a few outlier-task columns ``E``.

    ``L = U @ V.T / sqrt(rank)`` as in :func:`make_low_rank_tasks` (all tasks). ``E`` is zero
    except on ``n_outliers`` random columns (the outlier tasks), whose entries are normal with
    standard deviation ``s = median column norm of L / sqrt(n_features)``, so that an outlier
    column of ``E`` is about as large as a column of ``L``.

    Parameters
    ----------
    n_tasks : int, default=20
    n_features : int, default=30
    n_samples : int or sequence of n_tasks int, default=50
        Rows per task (one number when ``shared_X``).
    rank : int, default=3
        Rank of ``L``, at most ``min(n_features, n_tasks)``.
    n_outliers : int, default=2
        Number of outlier tasks (nonzero columns of ``E``), at most ``n_tasks``.
    noise : float, default=0.1
        Standard deviation of the Gaussian noise added to the scores.
    shared_X : bool, default=False
        One design matrix for all tasks (returned as ``X`` with targets ``Y``).
    task_type : {"regression", "classification"}, default="regression"
    random_state : int, RandomState instance, Generator instance or None, default=None

    Returns
    -------
    data : sklearn.utils.Bunch
        X : list of ndarray of shape (n_t, n_features), or ndarray (n_samples, n_features)
            Standard normal design matrices, one per task (one shared when ``shared_X``).
        y : list of ndarray of shape (n_t,)
            Targets (float64) or labels (int64 in {0, 1}); absent when ``shared_X``.
        Y : ndarray of shape (n_samples, n_tasks)
            Only when ``shared_X``: one column of targets or labels per task.
        W_true : ndarray of shape (n_features, n_tasks)
            True weights, one column per task.
        task_type : str
        noise : float
        L : ndarray of shape (n_features, n_tasks)
            Low-rank part.
        E : ndarray of shape (n_features, n_tasks)
            Outlier part, nonzero only on the columns ``outlier_tasks`` (``W_true = L + E``).
        outlier_tasks : ndarray of shape (n_outliers,), int64
            Sorted indices of the outlier tasks.
        rank : int
    """
    m, d, noise = _check_common(n_tasks, n_features, noise, task_type)
    r = _check_int("rank", rank, 1, min(d, m))
    k = _check_int("n_outliers", n_outliers, 0, m)
    rng = check_random_state(random_state)
    L, _, _ = _low_rank(d, m, r, rng)
    outliers = np.sort(rng.choice(m, size=k, replace=False)).astype(np.int64)
    scale = float(np.median(np.linalg.norm(L, axis=0))) / np.sqrt(d)
    E = np.zeros((d, m))
    E[:, outliers] = scale * rng.standard_normal((d, k))
    bunch = _simulate(L + E, n_samples, noise, shared_X, task_type, rng)
    bunch.update(L=L, E=E, outlier_tasks=outliers, rank=r)
    return bunch
