"""Model selection for multi-task models: folds within each task, scorers, relative grids.

Long-format data (a task id per row, kept in a column of ``X`` via ``task_column``) passes
through scikit-learn's ``cross_val_score``, ``GridSearchCV`` and ``Pipeline`` unchanged;
:class:`TaskKFold` draws the folds within each task (stratified by class inside each task for
classifiers) so that every task appears in every training fold.
"""

from __future__ import annotations

import numpy as np
from sklearn.model_selection import BaseCrossValidator, KFold, StratifiedKFold
from sklearn.utils import check_random_state

from multitask.data import split_task_column
from multitask.metrics import mean_task_auc, nmse

__all__ = [
    "TaskKFold",
    "SharedKFold",
    "relative_grid",
    "nmse_scorer",
    "mean_auc_scorer",
    "to_long_format",
]


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
        for g in np.unique(groups):
            idx = np.flatnonzero(groups == g)
            if self.stratify and y is not None:
                labels = np.asarray(y)[idx]
                # deal rows of each class round-robin after a shuffle
                pos = np.empty(len(idx), dtype=np.int64)
                start = rng.randint(self.n_splits)
                for c in np.unique(labels):
                    cidx = np.flatnonzero(labels == c)
                    if self.shuffle:
                        cidx = cidx[rng.permutation(len(cidx))]
                    pos[cidx] = (start + np.arange(len(cidx))) % self.n_splits
                    start = (start + len(cidx)) % self.n_splits
                fold_of[idx] = pos
            else:
                order = rng.permutation(len(idx)) if self.shuffle else np.arange(len(idx))
                offset = rng.randint(self.n_splits)
                fold_of[idx[order]] = (offset + np.arange(len(idx))) % self.n_splits
        for k in range(self.n_splits):
            yield fold_of == k


def SharedKFold(n_splits=5, *, shuffle=True, random_state=None):  # noqa: N802
    """Row folds for a shared design (all tasks split together): scikit-learn's ``KFold``."""
    return KFold(n_splits, shuffle=shuffle, random_state=random_state)


def relative_grid(lam_max: float, n: int = 10, ratio: float = 1e-3) -> np.ndarray:
    """``n`` values log-spaced from ``lam_max`` down to ``ratio * lam_max`` (decreasing)."""
    if lam_max <= 0 or not np.isfinite(lam_max):
        raise ValueError(f"lam_max must be positive and finite, got {lam_max!r}.")
    return lam_max * np.logspace(0, np.log10(ratio), n)


def _task_ids(estimator, X):
    tc = getattr(estimator, "task_column", None)
    if tc is None:
        return None
    return split_task_column(X, tc)[1]


def nmse_scorer(estimator, X, y, *, average="pooled") -> float:
    """Scorer (greater is better): ``-nMSE`` of the estimator's predictions."""
    pred = estimator.predict(X)
    return -nmse(y, pred, _task_ids(estimator, X), average=average)


def mean_auc_scorer(estimator, X, y) -> float:
    """Scorer: mean per-task ROC AUC of ``decision_function`` (shared or long format)."""
    import warnings

    scores = estimator.decision_function(X)
    y = np.asarray(y)
    if y.ndim == 2:
        y_bin = (y == estimator.classes_[1]).astype(int)
    else:
        y_bin = (y == estimator.classes_[1]).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return mean_task_auc(y_bin, scores, _task_ids(estimator, X))


# keep StratifiedKFold importable from here for shared-design classification
__all__.append("StratifiedKFold")
