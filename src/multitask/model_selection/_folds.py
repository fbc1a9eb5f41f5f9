"""The selection rules and the folds of the cross-validation engine.

K folds within each task (:class:`~multitask.model_selection.TaskKFold`, stratified for
classifiers), K row folds for a shared design, or leave-one-out within tasks for small tasks
(``selection="auto"``: at most :data:`SMALL_TASK_ROWS` rows per task), and the warning about
tasks holding one class in a part of a fold.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import is_classifier
from sklearn.model_selection import KFold, StratifiedKFold

from multitask.data import observed_mask
from multitask.model_selection._scoring import pooled_metric
from multitask.model_selection._split import TaskKFold, label_codes

#: The selection rules of :class:`MultiTaskCV` and :func:`cross_validate_grid`.
SELECTION_RULES = ("auto", "kfold", "loo")

#: ``selection="auto"`` leaves one row of each task out per fold when the median task has at
#: most this many rows (tasks with more rows are then split in this many folds). Chosen by
#: ``benchmarks/bench_small_tasks.py``.
SMALL_TASK_ROWS = 16


def _selection_rule(selection: str, cv, scorer, groups, layout: str, y) -> str:
    """``"loo"`` or ``"kfold"``: what ``selection`` means for these data (see MultiTaskCV)."""
    splitter = cv is not None and not (isinstance(cv, (int, np.integer))
                                       and not isinstance(cv, bool))
    poolable = pooled_metric(scorer) is not None
    if selection == "loo":
        if splitter:
            raise ValueError("selection='loo' draws its own folds (one row of each task per "
                             "fold): leave cv as None or an integer, or use selection='kfold' "
                             "with a splitter.")
        if not poolable:
            raise ValueError("selection='loo' scores the out-of-fold predictions pooled over "
                             "folds, which needs a regressor scored by a mean over rows (scoring "
                             "None, 'nmse', 'amse' or a mean loss such as 'poisson_deviance'); "
                             "use selection='kfold' otherwise.")
        return "loo"
    if selection == "kfold" or splitter or not poolable:
        return "kfold"
    return "loo" if _median_task_rows(groups, layout, y) <= SMALL_TASK_ROWS else "kfold"


def _median_task_rows(groups, layout: str, y) -> float:
    """Median number of rows per task (the rows of a shared design or a single task)."""
    if layout == "long":
        _, counts = np.unique(np.asarray(groups), return_counts=True)
        return float(np.median(counts))
    return float(np.asarray(y).shape[0])


def _loo_splits(X, y, groups, layout: str, random_state, cap: int | None):
    """Leave-one-out within tasks: as many folds as the largest task has rows (at most
    ``cap``), each task's rows dealt to the folds in a random order, so that a task with at
    most that many rows has one row in each of its folds."""
    if layout == "long":
        _, counts = np.unique(np.asarray(groups), return_counts=True)
        n_folds = int(counts.max())
    else:
        n_folds = int(np.asarray(y).shape[0])
    if cap is not None:
        n_folds = min(n_folds, int(cap))
    if n_folds < 2:
        raise ValueError("Leave-one-out cross-validation within tasks needs a task with at "
                         f"least 2 rows; the largest task has n_samples={n_folds}.")
    if layout == "long":
        splitter = TaskKFold(n_folds, task_column=-1, random_state=random_state)
    else:
        splitter = KFold(n_folds, shuffle=True, random_state=random_state)
    return [(np.asarray(tr), np.asarray(te)) for tr, te in splitter.split(X, y, groups)]


def _splits(cv, X, y, groups, layout: str, base, random_state):
    cv = 5 if cv is None else cv
    classifier = is_classifier(base)
    if isinstance(cv, (int, np.integer)) and not isinstance(cv, bool):
        if cv < 2:
            raise ValueError(f"cv must be at least 2 folds, got {cv}.")
        if layout == "long":
            cv = TaskKFold(int(cv), task_column=-1, stratify=classifier,
                           random_state=random_state)
        elif layout == "single" and classifier:
            cv = StratifiedKFold(int(cv), shuffle=True, random_state=random_state)
        else:
            cv = KFold(int(cv), shuffle=True, random_state=random_state)
    if hasattr(cv, "split"):
        missing = classifier and np.ndim(y) == 1 and not observed_mask(y).all()
        splits = list(cv.split(X, label_codes(y) if missing else y, groups))  # NaN: a stratum
    else:
        try:
            splits = list(cv)
        except TypeError:
            raise ValueError(f"cv must be an int, a splitter or an iterable of (train, test), "
                             f"got {cv!r}.") from None
    if not splits:
        raise ValueError("cv produced no split.")
    if not all(isinstance(sp, (tuple, list)) and len(sp) == 2 for sp in splits):
        raise ValueError("cv must be an int, a splitter or an iterable of (train, test) index "
                         f"pairs; its items are {splits[0]!r}, ...")
    return [(np.asarray(tr), np.asarray(te)) for tr, te in splits]


def _warn_one_class_parts(splits, y, groups, layout: str, labels) -> None:
    """One warning when some task holds a single class in a training or test part of a fold:
    its fit fails (training) or its per-task score is undefined and left out (test)."""
    y = np.asarray(y)
    if layout == "long":
        _, pos = np.unique(np.asarray(groups), return_inverse=True)
        columns = None
    else:
        pos = None
        columns = y.reshape(y.shape[0], -1)
    n_tasks = len(labels)
    found = {"training": [], "test": []}
    for k, (train, test) in enumerate(splits):
        for part, rows in (("training", train), ("test", test)):
            for t in range(n_tasks):
                if columns is None:
                    vals = y[rows[pos[rows] == t]]
                else:
                    vals = columns[rows, t]
                vals = vals[observed_mask(vals)]  # a missing target is no class
                if vals.shape[0] and np.unique(vals).shape[0] < 2:
                    found[part].append((k, t))
    if not found["training"] and not found["test"]:
        return
    said = []
    for part, what in (("test", "its per-task score (ROC AUC) is undefined and the task is "
                                 "left out of that fold's score"),
                       ("training", "those fits fail")):
        hits = found[part]
        if hits:
            k, t = hits[0]
            label = np.asarray(labels)[t].item()
            said.append(f"{len(hits)} {part} parts (first: task {label!r} in fold {k}): "
                        f"{what}")
    warnings.warn(f"Some tasks hold one class only in a part of a cross-validation fold "
                  f"({len(splits)} folds x {n_tasks} tasks): " + "; ".join(said)
                  + ". Use fewer folds (cv=) or gather more rows of the rare class.",
                  UserWarning, stacklevel=4)
