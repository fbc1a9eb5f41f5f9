"""Cross-validation splitters for multi-task data: folds within each task.

Long-format data (a task id per row, kept in a column of ``X`` via ``task_column``) passes
through scikit-learn's ``cross_val_score``, ``GridSearchCV`` and ``Pipeline`` unchanged;
:class:`TaskKFold` draws the folds within each task (stratified by class inside each task for
classifiers) so that every task appears in every training fold.
"""

from __future__ import annotations

import numpy as np
from sklearn.model_selection import BaseCrossValidator, KFold
from sklearn.utils import check_random_state

from multitask.data import observed_mask, split_task_column

__all__ = ["SharedKFold", "TaskKFold", "label_codes", "to_long_format"]


def label_codes(y):
    """Class labels as integer codes for stratified folds: the rank of each label among the
    sorted observed labels, ``-1`` for a missing target (NaN or None, its own stratum). The
    same strata, in the same order, as the labels themselves when none is missing; an
    array of more than one dimension (a shared design) is returned as it is."""
    y = np.asarray(y)
    if y.ndim != 1:
        return y
    seen = observed_mask(y)
    codes = np.full(y.shape[0], -1, dtype=np.int64)
    if seen.any():
        codes[seen] = np.unique(y[seen], return_inverse=True)[1]
    return codes


def to_long_format(X_list, y_list, *, task_column: int = -1):
    """Stack per-task lists into one ``X`` with the task index as a column, and ``y``.

    Returns
    -------
    X : ndarray (N, d + 1)
        Features with the task index inserted as column ``task_column`` (last by default).
    y : ndarray (N,)
    """
    Xs = [np.asarray(x, dtype=np.float64) for x in X_list]
    tid = np.concatenate([np.full(len(x), t, dtype=np.float64) for t, x in enumerate(Xs)])
    X = np.vstack(Xs)
    col = task_column % (X.shape[1] + 1)
    X = np.insert(X, col, tid, axis=1)
    return X, np.concatenate([np.asarray(v) for v in y_list])


class TaskKFold(BaseCrossValidator):
    """K folds drawn within each task (and within each class of each task when stratified).

    Every task is split ``n_splits`` ways, so every training fold holds rows of every task that
    has at least ``n_splits`` rows (tasks with fewer rows appear in fewer test folds).

    Parameters
    ----------
    n_splits : int, default=5
    task_column : int, default=-1
        Column of ``X`` holding the task ids (ignored when ``groups`` is given to ``split``).
    stratify : bool, default=False
        Also balance the classes of ``y`` within each task (for classifiers).
    shuffle : bool, default=True
    random_state : int or None
    """

    def __init__(self, n_splits=5, *, task_column=-1, stratify=False, shuffle=True,
                 random_state=None):
        self.n_splits = n_splits
        self.task_column = task_column
        self.stratify = stratify
        self.shuffle = shuffle
        self.random_state = random_state

    def get_n_splits(self, X=None, y=None, groups=None):
        return self.n_splits

    def _iter_test_masks(self, X, y=None, groups=None):
        if groups is None:
            _, groups = split_task_column(X, self.task_column)
        groups = np.asarray(groups)
        n = len(groups)
        fold_of = np.empty(n, dtype=np.int64)
        rng = check_random_state(self.random_state)
        carry = 0  # without shuffle, each task starts on the fold where the previous one ended
        for g in np.unique(groups):
            idx = np.flatnonzero(groups == g)
            if self.stratify and y is not None:
                labels = label_codes(np.asarray(y)[idx])
                # deal rows of each class round-robin after a shuffle
                pos = np.empty(len(idx), dtype=np.int64)
                start = rng.randint(self.n_splits) if self.shuffle else carry
                for c in np.unique(labels):
                    cidx = np.flatnonzero(labels == c)
                    if self.shuffle:
                        cidx = cidx[rng.permutation(len(cidx))]
                    pos[cidx] = (start + np.arange(len(cidx))) % self.n_splits
                    start = (start + len(cidx)) % self.n_splits
                fold_of[idx] = pos
            else:
                order = rng.permutation(len(idx)) if self.shuffle else np.arange(len(idx))
                start = rng.randint(self.n_splits) if self.shuffle else carry
                fold_of[idx[order]] = (start + np.arange(len(idx))) % self.n_splits
                start = (start + len(idx)) % self.n_splits
            carry = start
        for k in range(self.n_splits):
            yield fold_of == k


def SharedKFold(n_splits=5, *, shuffle=True, random_state=None):  # noqa: N802
    """Row folds for a shared design (all tasks split together): scikit-learn's ``KFold``."""
    return KFold(n_splits, shuffle=shuffle, random_state=random_state)
