"""Task ids: the task of each row in long format, given as ``task=`` or as a column of ``X``.

Ids are strings, integers, floats or booleans, all of one type, each kept as written; at
predict time they must be ids the model was fitted on, of the same family (numeric, boolean or
string).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from multitask.data.checks import _KIND_NAMES, _label, _uniform_values, check_sparse_structure


def as_task_ids(task, what: str = "task") -> np.ndarray:
    """The task id of each row as a 1-D array of one plain type, each id kept as written.

    Ids are strings, integers, floats or booleans, all of one type: ``'01'`` and ``'1'`` are
    two tasks, and a list mixing ``1`` and ``'1'`` (or ``1`` and ``1.0``, or holding ``None``)
    is refused rather than merged. Float ids that are whole numbers below ``2**53`` in
    magnitude become ``int64`` (a task column of a float matrix holds ``1.0`` for task ``1``);
    larger or fractional floats stay floats, so that no two ids become one.

    Parameters
    ----------
    task : array-like of shape (n,)
    what : str
        How the messages name the ids.

    Returns
    -------
    ndarray of shape (n,) with dtype str, int64, float64 or bool

    Raises
    ------
    ValueError
        Naming the row of a missing id, of an id of another type, of NaN or infinity; or the
        dtype when it is complex, datetime or another non-id type.
    """
    if isinstance(task, (list, tuple)):
        task = np.array(task, dtype=object) if len(task) else np.array([], dtype=np.int64)
    task = np.asarray(task)
    if task.ndim != 1:
        raise ValueError(f"{what} ids must be 1-D (one id per row), got shape {task.shape}.")
    kind = task.dtype.kind
    if kind == "O":
        task = _uniform_values(task, f"{what} ids", "task id")
        kind = task.dtype.kind
    if kind == "S":
        task = task.astype(str)
    elif kind not in "fiubU":
        raise ValueError(f"{what} ids have {_KIND_NAMES.get(kind, 'unsupported')} dtype "
                         f"{task.dtype}: give strings, integers, floats or booleans.")
    if kind == "f":
        bad = np.flatnonzero(~np.isfinite(task))
        if bad.size:
            raise ValueError(f"{what} ids contain NaN or infinity (first at row {bad[0]}).")
        if np.all(task == np.round(task)) and np.all(np.abs(task) < 2.0**53):
            task = task.astype(np.int64)
    return task


def _id_family(kind: str) -> str:
    """The family of task ids of dtype kind ``kind``: ``"numeric"`` (integers and floats),
    ``"boolean"`` or ``"string"``; ids of two families never name the same task."""
    return {"i": "numeric", "u": "numeric", "f": "numeric", "b": "boolean"}.get(kind, "string")


def check_task_column(task_column, n_cols: int) -> int:
    """The column index ``task_column`` as a non-negative int, checked against ``n_cols``.

    Raises
    ------
    ValueError
        When ``task_column`` is not an integer (floats such as ``-1.0`` and booleans are
        refused) or is out of range.
    """
    if isinstance(task_column, (bool, np.bool_)) or not isinstance(task_column,
                                                                    (int, np.integer)):
        raise ValueError(f"task_column must be an integer column index, got {task_column!r} "
                         f"({type(task_column).__name__}).")
    col = int(task_column)
    if not -n_cols <= col < n_cols:
        raise ValueError(f"task_column={col} is out of range for X with {n_cols} columns.")
    return col % n_cols


def split_task_column(X, task_column: int):
    """Split long-format ``X`` into (features, task ids) where the ids are column ``task_column``.

    Sparse input goes through :func:`check_sparse_structure` first. Returns copies; ``X`` is
    not modified.
    """
    if sp.issparse(X):
        X = check_sparse_structure(X)
        col = check_task_column(task_column, X.shape[1])
        X = X.tocsc()
        task = X[:, col].toarray().ravel()
        keep = [j for j in range(X.shape[1]) if j != col]
        return X[:, keep].tocsr(), task
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D to hold a task column, got shape {X.shape}.")
    col = check_task_column(task_column, X.shape[1])
    task = X[:, col].copy()
    return np.delete(X, col, axis=1), task


def _task_index(task, n: int,
                known_tasks: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ids, labels, inv)`` of the ``n`` rows of a long-format design: the checked ids
    (:func:`as_task_ids`; without ``task``, every row in the model's one task or in task 0),
    the task labels in the internal order (the sorted ids, or ``known_tasks`` at predict
    time) and the position of each row's task among them, ``labels[inv] == ids``.

    Raises
    ------
    ValueError
        When ``task`` does not hold one id per row, or (with ``known_tasks``) an id is of
        another family than the model's or is not among its tasks.
    """
    if task is None:
        if known_tasks is not None and len(known_tasks) == 1:
            task = np.repeat(np.asarray(known_tasks)[:1], n)
        else:
            task = np.zeros(n, dtype=np.int64)
    if np.ndim(task) != 1 or len(task) != n:
        raise ValueError(f"task must be 1-D with one id per row of X ({n}), got shape "
                         f"{np.shape(task)}.")
    task = as_task_ids(task)
    if known_tasks is None:
        labels, inv = np.unique(task, return_inverse=True)
        return task, labels, inv
    labels = np.asarray(known_tasks)
    fitted, given = _id_family(labels.dtype.kind), _id_family(task.dtype.kind)
    if fitted != given:
        raise ValueError(
            f"The task ids are {given} ({_label(task[0])}, ...) but the model was "
            f"fitted on {fitted} ids {labels.tolist()[:10]}: give the ids as "
            "in training."
        )
    try:
        lookup = {v: i for i, v in enumerate(labels.tolist())}
        inv = np.array([lookup[v] for v in task.tolist()], dtype=np.int64)
    except KeyError as exc:
        raise ValueError(
            f"Unknown task id {exc.args[0]!r}: the model was fitted on tasks "
            f"{labels.tolist()[:10]}{'...' if len(labels) > 10 else ''}."
        ) from None
    return task, labels, inv
