"""Helpers shared by the paper reproductions: result rows, timing, tables."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from contextlib import contextmanager

import numpy as np

from multitask.experiments.registry import RESULT_COLUMNS


@contextmanager
def timer():
    """Context manager yielding a dict whose ``"seconds"`` is set on exit."""
    out = {"seconds": 0.0}
    t0 = time.perf_counter()
    try:
        yield out
    finally:
        out["seconds"] = time.perf_counter() - t0


def summarize(
    experiment: str,
    dataset: str,
    setting: str,
    method: str,
    metric: str,
    values: Sequence[float],
    seconds: Sequence[float],
) -> dict:
    """One result row: mean and standard deviation of ``values`` over repeats."""
    v = np.asarray(values, dtype=float)
    return {
        "experiment": experiment,
        "dataset": dataset,
        "setting": setting,
        "method": method,
        "metric": metric,
        "mean": float(np.mean(v)) if v.size else float("nan"),
        "std": float(np.std(v)) if v.size else float("nan"),
        "repeats": int(v.size),
        "fit_seconds": float(np.mean(seconds)) if len(seconds) else float("nan"),
    }


def check_rows(rows: Iterable[dict]) -> list[dict]:
    """Validate that every row has exactly the result columns."""
    rows = list(rows)
    for r in rows:
        missing = set(RESULT_COLUMNS) - set(r)
        if missing:
            raise ValueError(f"result row misses columns {sorted(missing)}: {r}")
    return rows
