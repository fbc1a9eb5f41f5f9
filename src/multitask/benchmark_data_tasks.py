"""The tasks of the benchmark's data named by the user: task ids matched to the data's
tasks as the data keep them (:func:`~multitask.benchmark_data.match_task_ids`) and the tasks
put in time order (:func:`~multitask.benchmark_data.order_tasks`); both importable from
:mod:`multitask.benchmark_data`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from multitask.benchmark_data_build import BenchmarkData

__all__ = ["match_task_ids", "order_tasks"]


def _as_number(value: Any) -> float | None:
    """The value of a task id written as a number (``"01"``, ``" 1.0"``, ``1``), else None."""
    if isinstance(value, (bool, np.bool_)):
        return None
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        return None
    return number if np.isfinite(number) else None


def _id_text(value: Any) -> str:
    return str(value.item() if isinstance(value, np.generic) else value)


def match_task_ids(given: Sequence[Any], task_names: Sequence[str], *, numeric: bool = False,
                   what: str = "The list of task ids") -> list[int]:
    """The position in ``task_names`` of each id of ``given``, matched as the data keep ids.

    With ``numeric=False`` (ids read as text, the default of the data readers) an id matches
    the task whose name is the same text: ``"01"`` and ``"1"`` are two tasks, and ``1``
    (a number given in Python) is the text ``"1"``. With ``numeric=True`` (ids read as
    numbers: :attr:`~multitask.benchmark_data.BenchmarkData.numeric_ids`) an id matches the
    task of the same value: ``1``, ``"01"`` and ``"1.0"`` are task ``1``. Nothing is
    matched by guessing: an id that matches no task, or (numeric) several, is an error.

    Parameters
    ----------
    given : sequence
        Task ids (text or numbers), e.g. the ends of a graph's edges or a task order.
    task_names : sequence of str
        The data's task names.
    numeric : bool, default=False
        Match by value.
    what : str, default="The list of task ids"
        The subject of the error message (what named the ids).

    Returns
    -------
    list of int

    Raises
    ------
    ValueError
        Naming every id that is not a task of the data (with, for each, a task it differs
        from only in how it is written, when there is one) or that matches several tasks.
    """
    names = [str(n) for n in task_names]
    keys: list[Any]
    if numeric:
        values = [_as_number(n) for n in names]
        where: dict = {}
        for i, v in enumerate(values):
            where.setdefault(v, []).append(i)
        keys = [_as_number(g) for g in given]
    else:
        where = {}
        for i, n in enumerate(names):
            where.setdefault(n, []).append(i)
        keys = [_id_text(g) for g in given]
    unknown = list(dict.fromkeys(_id_text(g) for g, k in zip(given, keys, strict=True)
                                 if k is None or k not in where))
    if unknown:
        alike = {}
        for u in unknown:
            value = _as_number(u)
            twins = [n for n in names if n != u and (n.strip() == u.strip() or (
                value is not None and _as_number(n) == value))]
            if twins:
                alike[u] = twins[0]
        listed = ", ".join(repr(u) for u in unknown[:8]) + (
            f" and {len(unknown) - 8} more" if len(unknown) > 8 else "")
        shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
        hint = ""
        if alike:
            pairs = "; ".join(f"{u!r} is written {t!r} in the data"
                              for u, t in list(alike.items())[:3])
            by_value = any(_as_number(u) is not None and _as_number(u) == _as_number(t)
                           for u, t in alike.items())
            how = ("by their value" if numeric else "as written" + (
                "; read the ids as numbers (--numeric-task-ids) to make 1 and 01 one task"
                if by_value else ""))
            hint = f" ({pairs}: task ids are matched {how})"
        word = "is not a task" if len(unknown) == 1 else "are not tasks"
        raise ValueError(f"{what} names {listed}, which {word} of the data{hint} (tasks: "
                         f"{shown}).")
    for g, k in zip(given, keys, strict=True):
        if len(where[k]) > 1:
            both = ", ".join(repr(names[i]) for i in where[k])
            raise ValueError(f"{what} names {_id_text(g)!r}, which matches the tasks {both} "
                             "of the data: give the data one id per task.")
    return [where[k][0] for k in keys]


def order_tasks(data: BenchmarkData, order: Sequence[Any] | str) -> BenchmarkData:
    """The data with its tasks in time order, marked ``ordered`` (the temporal models run).

    Parameters
    ----------
    data : BenchmarkData
    order : sequence of str or numbers, ``"sorted"`` or ``"given"``
        Every task once, in time order, named as
        :func:`~multitask.benchmark_data.match_task_ids` matches ids (by value when
        ``data.numeric_ids``, else as written); ``"sorted"``: the names sorted (as
        numbers when they all are); ``"given"``: the order of the data as it is.

    Returns
    -------
    BenchmarkData
        A new object (``data`` is not modified); its graph, if any, is permuted alike.

    Raises
    ------
    ValueError
        When ``order`` misses a task, repeats one, or names tasks the data do not have
        (naming them all).
    """
    names = list(data.task_names)
    if isinstance(order, str):
        if order == "given":
            perm = list(range(len(names)))
        elif order == "sorted":
            try:
                keys: list = [float(n) for n in names]
            except ValueError:
                keys = names
            perm = sorted(range(len(names)), key=lambda i: keys[i])
        else:
            raise ValueError(f"The task order must list the tasks, or be 'sorted' or 'given', "
                             f"got {order!r}.")
    else:
        perm = match_task_ids(list(order), names, numeric=data.numeric_ids,
                              what="The task order")
        twice = sorted({i for i in perm if perm.count(i) > 1})
        if twice:
            raise ValueError(f"The task order names task {names[twice[0]]!r} twice.")
        missing = [n for i, n in enumerate(names) if i not in set(perm)]
        if missing:
            raise ValueError(f"The task order must name every task once; it misses "
                             f"{len(missing)}, e.g. {missing[0]!r}.")
    if data.shared:
        X, y = data.X, data.y[:, perm]
    else:
        X, y = [data.X[i] for i in perm], [data.y[i] for i in perm]
    splits = None
    if data.official_splits is not None:
        splits = [{k: [s[k][i] for i in perm] for k in s} for s in data.official_splits]
    graph = None if data.graph is None else data.graph[np.ix_(perm, perm)]
    exposure = data.exposure
    if exposure is not None and not data.shared:
        exposure = [exposure[i] for i in perm]
    return replace(data, X=X, y=y, task_names=[names[i] for i in perm], ordered=True,
                   official_splits=splits, graph=graph, exposure=exposure)

