"""Helpers shared by the paper reproductions: result rows, timing, tables, output files.

Every reproduction returns *result rows*: dicts with the columns of :data:`RESULT_COLUMNS`
(one row per dataset, setting, method and metric, with the mean and standard deviation over
the repetitions). The entry point (``python -m reproductions``) prints them as a table and,
with ``--out DIR``, writes ``results.csv`` and a bar chart of the first metric.

Only the public API of :mod:`multitask` is used here and in every reproduction (a ruff rule
in ``reproductions/ruff.toml`` and ``tests/test_reproductions_imports.py`` enforce it).
"""

from __future__ import annotations

import csv
import sys
import time
import warnings
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

__all__ = [
    "RESULT_COLUMNS",
    "auc_scorer",
    "check_rows",
    "decision_scores",
    "format_table",
    "log",
    "quiet",
    "summarize",
    "timer",
    "write_csv",
    "write_outputs",
]

#: Columns of every result row (``results.csv``).
RESULT_COLUMNS = (
    "experiment",
    "dataset",
    "setting",
    "method",
    "metric",
    "mean",
    "std",
    "repeats",
    "fit_seconds",
)


@contextmanager
def timer() -> Iterator[dict]:
    """Context manager yielding a dict whose ``"seconds"`` is set (wall clock) on exit."""
    out = {"seconds": 0.0}
    t0 = time.perf_counter()
    try:
        yield out
    finally:
        out["seconds"] = time.perf_counter() - t0


@contextmanager
def quiet() -> Iterator[None]:
    """Silence the warnings a grid search produces by design.

    ``ConvergenceWarning`` (loose fits along a path, capped solver budgets reported in the
    results) and the ``UserWarning`` of a per-task AUC left out because a validation fold holds
    one class of a rare label.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.filterwarnings("ignore", message="AUC undefined", category=UserWarning)
        yield


def decision_scores(est, X) -> np.ndarray:
    """Scores ``(n, m)`` of a shared design: ``decision_function`` of a classifier,
    ``predict`` of a regressor (least squares on -1/+1 labels)."""
    fn = getattr(est, "decision_function", None) or est.predict
    return np.asarray(fn(X), dtype=float).reshape(X.shape[0], -1)


def auc_scorer(est, X, Y) -> float:
    """Cross-validation scorer on a shared design: the mean AUC over labels (tasks).

    ``Y`` holds -1/+1 or 0/1 labels (positive: ``Y > 0``); labels with one class in the
    validation rows are left out (:func:`multitask.metrics.roc_auc`, ``average="macro"``).
    """
    from multitask.metrics import roc_auc

    with quiet():
        return float(roc_auc((np.asarray(Y) > 0).astype(int), decision_scores(est, X)))


def log(experiment: str, message: str) -> None:
    """One progress line on stderr: ``[experiment] message``."""
    print(f"[{experiment}] {message}", file=sys.stderr, flush=True)


def summarize(
    experiment: str,
    dataset: str,
    setting: str,
    method: str,
    metric: str,
    values: Sequence[float],
    seconds: Sequence[float] = (),
) -> dict:
    """One result row: mean and (population) standard deviation of ``values`` over repeats.

    Parameters
    ----------
    experiment, dataset, setting, method, metric : str
        The row's labels.
    values : sequence of float
        One value per repetition.
    seconds : sequence of float, optional
        Fit times of the repetitions (their mean is ``fit_seconds``; NaN when empty).

    Returns
    -------
    dict
        The row, with the keys of :data:`RESULT_COLUMNS`.
    """
    v = np.asarray(values, dtype=float)
    s = np.asarray(seconds, dtype=float)
    return {
        "experiment": experiment,
        "dataset": dataset,
        "setting": setting,
        "method": method,
        "metric": metric,
        "mean": float(np.mean(v)) if v.size else float("nan"),
        "std": float(np.std(v)) if v.size else float("nan"),
        "repeats": int(v.size),
        "fit_seconds": float(np.mean(s)) if s.size else float("nan"),
    }


def check_rows(rows: Iterable[dict]) -> list[dict]:
    """Return ``rows`` as a list after checking that each has every result column.

    Raises
    ------
    ValueError
        When a row misses a column.
    """
    rows = list(rows)
    for r in rows:
        missing = set(RESULT_COLUMNS) - set(r)
        if missing:
            raise ValueError(f"result row misses columns {sorted(missing)}: {r}")
    return rows


def format_table(rows: Sequence[dict], title: str = "") -> str:
    """Plain-text table of result rows: labels, ``mean ± std``, repeats, fit seconds."""
    header = ("dataset", "setting", "method", "metric", "mean ± std", "repeats", "fit s")
    body = [
        (
            str(r["dataset"]),
            str(r["setting"]),
            str(r["method"]),
            str(r["metric"]),
            f"{r['mean']:.4f} ± {r['std']:.4f}",
            str(r["repeats"]),
            f"{r['fit_seconds']:.2f}",
        )
        for r in rows
    ]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h)
              for i, h in enumerate(header)]
    lines = [title] if title else []
    lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    lines.append("  ".join("-" * w for w in widths))
    for b in body:
        lines.append("  ".join(c.ljust(w) for c, w in zip(b, widths, strict=True)))
    return "\n".join(lines)


def write_outputs(rows: Sequence[dict], out: str | Path) -> list[Path]:
    """Write ``results.csv`` and, with matplotlib, ``results.png`` (first metric) to ``out``.

    Returns
    -------
    list of Path
        The files written.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "results.csv"
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(RESULT_COLUMNS), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    written = [path]
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from multitask.plotting import plot_results_bars
    except ImportError:
        return written
    fig = plot_results_bars(list(rows))
    fig.savefig(out / "results.png", dpi=120, bbox_inches="tight")
    plt.close(fig)
    written.append(out / "results.png")
    return written


def write_csv(rows: Sequence[dict], path: str | Path) -> Path:
    """Write dict rows (the union of their keys as columns) to the CSV file ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)
    return path
