"""Random train/test splits for multi-task data (per task, or once for a shared design)."""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral, Real
from typing import Any

import numpy as np
import scipy.sparse as sp

from ._utils import RandomStateLike, check_random_state


def _n_rows(X: Any) -> int:
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    return len(X)


def _take(X: Any, idx: np.ndarray) -> Any:
    """Rows ``idx`` of a dense array, a scipy.sparse matrix/array or a pandas object."""
    if sp.issparse(X):
        if X.format not in ("csr", "csc"):
            X = X.tocsr()
        return X[idx]
    if hasattr(X, "iloc"):
        return X.iloc[idx]
    return np.asarray(X)[idx]


def _round_half_up(value: float) -> int:
    return int(np.floor(value + 0.5 + 1e-9))


def _check_counts(min_train: int, min_test: int) -> None:
    if not isinstance(min_train, Integral) or min_train < 1:
        raise ValueError(f"min_train must be an integer >= 1, got {min_train!r}")
    if not isinstance(min_test, Integral) or min_test < 0:
        raise ValueError(f"min_test must be an integer >= 0, got {min_test!r}")


def _check_ratio_or_count(train_ratio: float | None, n_train: Any) -> None:
    if (train_ratio is None) == (n_train is None):
        raise ValueError("give exactly one of train_ratio and n_train")
    if train_ratio is not None and (
        not isinstance(train_ratio, Real)
        or isinstance(train_ratio, bool)
        or not 0.0 < float(train_ratio) < 1.0
    ):
        raise ValueError(f"train_ratio must be a number in (0, 1), got {train_ratio!r}")


def _stratified_counts(counts: np.ndarray, k: int) -> np.ndarray:
    """How many rows of each class to put in a training part of size ``k``.

    Proportional allocation (largest remainder), with at least one row of every class in the
    training part when ``k >= n_classes`` and, when the test part has room for it, at least
    one row of every class with two or more rows left for testing.
    """
    n_classes = counts.size
    n = int(counts.sum())
    lo = np.ones(n_classes, dtype=np.int64) if k >= n_classes else np.zeros(n_classes, np.int64)
    if n - k >= n_classes:
        hi = np.where(counts >= 2, counts - 1, counts)
    else:
        hi = counts.copy()
    hi = np.maximum(hi, lo)
    target = k * counts / n
    alloc = np.clip(np.floor(target).astype(np.int64), lo, hi)
    while alloc.sum() < k:
        room = np.flatnonzero(alloc < hi)
        alloc[room[np.argmax((target - alloc)[room])]] += 1
    while alloc.sum() > k:
        room = np.flatnonzero(alloc > lo)
        alloc[room[np.argmin((target - alloc)[room])]] -= 1
    return alloc


def _train_rows(
    n: int,
    k: int,
    y_t: np.ndarray | None,
    rng: np.random.RandomState | np.random.Generator,
) -> np.ndarray:
    """Sorted indices of ``k`` training rows out of ``n`` (stratified by ``y_t`` if given)."""
    if y_t is None:
        return np.sort(rng.permutation(n)[:k])
    classes, inverse, counts = np.unique(y_t, return_inverse=True, return_counts=True)
    if classes.size < 2:
        return np.sort(rng.permutation(n)[:k])
    alloc = _stratified_counts(counts, k)
    chosen = []
    for c in range(classes.size):
        members = np.flatnonzero(inverse == c)
        chosen.append(members[rng.permutation(members.size)[: alloc[c]]])
    return np.sort(np.concatenate(chosen))


def split_tasks(
    X: Sequence[Any],
    y: Sequence[Any],
    *,
    train_ratio: float | None = None,
    n_train: int | Sequence[int] | None = None,
    random_state: RandomStateLike = None,
    min_train: int = 1,
    min_test: int = 1,
    stratify: bool = False,
    return_indices: bool = False,
) -> tuple[list, ...]:
    """Split every task of a list of per-task arrays into a random training and test part.

    For task ``t`` with ``n_t`` rows the training part has
    ``max(min_train, round(train_ratio * n_t))`` rows (halves rounded up), or ``n_train`` rows,
    in both cases capped so that at least ``min_test`` rows remain for testing. The rest of the
    task is the test part.

    Parameters
    ----------
    X : sequence of m array-like of shape (n_t, n_features)
        Per-task design matrices: ndarrays, scipy.sparse matrices or arrays, or pandas objects.
    y : sequence of m array-like of shape (n_t,)
        Per-task targets.
    train_ratio : float in (0, 1), optional
        Fraction of each task's rows used for training. Give exactly one of ``train_ratio``
        and ``n_train``.
    n_train : int or sequence of m int, optional
        Number of training rows per task (one number for all tasks, or one per task).
    random_state : int, RandomState instance, Generator instance or None, default=None
        Seed of the random permutations (one generator, tasks drawn in order).
    min_train : int, default=1
        Smallest training part of a task.
    min_test : int, default=1
        Smallest test part of a task (the training part is capped to leave it).
    stratify : bool, default=False
        For classification: draw the training part class by class, proportionally to the
        class sizes, with at least one row of every class in the training part when it has
        room for all classes (and, when possible, at least one row of every class left in the
        test part).
    return_indices : bool, default=False
        Also return the row indices within each task.

    Returns
    -------
    X_train : list of m array-like of shape (n_train_t, n_features)
    y_train : list of m ndarray of shape (n_train_t,)
    X_test : list of m array-like of shape (n_t - n_train_t, n_features)
    y_test : list of m ndarray of shape (n_t - n_train_t,)
    train_index, test_index : list of m ndarray of int64
        Only with ``return_indices``: sorted row indices within each task.

    Raises
    ------
    ValueError
        If a task has fewer than ``min_train + min_test`` rows, or on inconsistent input.

    Examples
    --------
    >>> from multitask.datasets import load_school, split_tasks
    >>> data = load_school()
    >>> X_tr, y_tr, X_te, y_te = split_tasks(data.X, data.y, train_ratio=0.1, random_state=0)
    """
    _check_ratio_or_count(train_ratio, n_train)
    _check_counts(min_train, min_test)
    X = list(X)
    y = list(y)
    if len(X) != len(y):
        raise ValueError(f"X has {len(X)} tasks but y has {len(y)}")
    if not X:
        raise ValueError("no tasks to split")
    m = len(X)
    if n_train is not None:
        counts = np.asarray(n_train)
        if counts.ndim == 0:
            counts = np.full(m, counts)
        if counts.shape != (m,):
            raise ValueError(f"n_train must be an int or a sequence of {m} ints")
        if not np.issubdtype(counts.dtype, np.integer) or np.any(counts < 1):
            raise ValueError(f"n_train must hold positive integers, got {n_train!r}")

    rng = check_random_state(random_state)
    out: tuple[list, ...] = ([], [], [], [], [], [])
    for t in range(m):
        n = _n_rows(X[t])
        y_t = np.asarray(y[t])
        if y_t.ndim != 1 or y_t.shape[0] != n:
            raise ValueError(f"task {t}: y has shape {y_t.shape} but X has {n} rows")
        if n < min_train + min_test:
            raise ValueError(
                f"task {t} has {n} rows: cannot keep min_train={min_train} training and "
                f"min_test={min_test} test rows"
            )
        if train_ratio is not None:
            k = max(min_train, _round_half_up(float(train_ratio) * n))
        else:
            k = max(min_train, int(counts[t]))
        k = min(k, n - min_test)
        train = _train_rows(n, k, y_t if stratify else None, rng)
        mask = np.ones(n, dtype=bool)
        mask[train] = False
        test = np.flatnonzero(mask)
        for lst, item in zip(
            out,
            (_take(X[t], train), y_t[train], _take(X[t], test), y_t[test], train, test),
            strict=True,
        ):
            lst.append(item)
    return out if return_indices else out[:4]


def split_shared(
    X: Any,
    Y: Any,
    *,
    train_ratio: float | None = None,
    n_train: int | None = None,
    random_state: RandomStateLike = None,
    return_indices: bool = False,
) -> tuple[Any, ...]:
    """Split the rows of a shared-design data set once, for all tasks together.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Design matrix shared by all tasks.
    Y : array-like of shape (n_samples, n_tasks) or (n_samples,)
        Targets, one column per task.
    train_ratio : float in (0, 1), optional
        Fraction of rows used for training (``round(train_ratio * n_samples)``, halves rounded
        up, at least 1 and at most ``n_samples - 1``). Give exactly one of ``train_ratio``
        and ``n_train``.
    n_train : int, optional
        Number of training rows, ``1 <= n_train < n_samples``.
    random_state : int, RandomState instance, Generator instance or None, default=None
        Seed of the random permutation.
    return_indices : bool, default=False
        Also return the sorted training and test row indices.

    Returns
    -------
    X_train : array-like of shape (n_train, n_features)
    Y_train : ndarray of shape (n_train, n_tasks) or (n_train,)
    X_test : array-like of shape (n_samples - n_train, n_features)
    Y_test : ndarray of shape (n_samples - n_train, n_tasks) or (n_samples - n_train,)
    train_index, test_index : ndarray of int64
        Only with ``return_indices``.
    """
    _check_ratio_or_count(train_ratio, n_train)
    n = _n_rows(X)
    if _n_rows(Y) != n:
        raise ValueError(f"X has {n} rows but Y has {_n_rows(Y)}")
    if n < 2:
        raise ValueError("need at least 2 rows to split")
    if train_ratio is not None:
        k = min(max(1, _round_half_up(float(train_ratio) * n)), n - 1)
    else:
        if not isinstance(n_train, Integral) or not 1 <= n_train < n:
            raise ValueError(f"n_train must be an integer in [1, {n - 1}], got {n_train!r}")
        k = int(n_train)
    rng = check_random_state(random_state)
    train = np.sort(rng.permutation(n)[:k])
    mask = np.ones(n, dtype=bool)
    mask[train] = False
    test = np.flatnonzero(mask)
    result = (_take(X, train), _take(Y, train), _take(X, test), _take(Y, test))
    return (*result, train, test) if return_indices else result
