"""The figure of a ``multitask benchmark`` run: each model's metrics and the trace-norm
model's singular values (:func:`~multitask.benchmark.plot_benchmark`, importable from
:mod:`multitask.benchmark`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from multitask.benchmark_kinds import METRICS
from multitask.benchmark_result import _LEFT_OUT, BenchmarkResult, _stem

__all__ = ["OFF_SCALE", "plot_benchmark", "plot_school"]


#: A bar whose value exceeds this many times the median of the others' is drawn off the
#: scale of the figure (clipped at the axis' end, its value written there), so that it does
#: not flatten the others.
OFF_SCALE = 3.0


def _axis_end(means: np.ndarray, stds: np.ndarray) -> tuple[float, np.ndarray]:
    """The end of the bar axis (which starts at 0), and which bars lie beyond it.

    A bar is off the scale when its mean exceeds :data:`~multitask.benchmark.OFF_SCALE`
    times the median of the means (with at least two bars on the scale); the axis then ends
    15% past the largest ``mean + std`` of the bars on it.
    """
    ok = np.isfinite(means)
    off = np.zeros(means.shape, dtype=bool)
    if ok.sum() >= 3:
        med = float(np.median(means[ok]))
        if med > 0:
            off = ok & (means > OFF_SCALE * med)
            if (ok & ~off).sum() < 2:
                off[:] = False
    keep = ok & ~off
    if not keep.any():
        return 1.0, off
    top = float(np.max(means[keep] + np.nan_to_num(stds[keep])))
    return (1.15 * top if top > 0 else 1.0), off


def plot_benchmark(res: BenchmarkResult) -> Any:
    """Figure: the metrics ± std per model (best at the top), and the trace-norm model's
    singular values on split 0.

    Regression and binary classification draw their first metric (nMSE, AUC); the other
    kinds one panel per metric of :data:`~multitask.benchmark.METRICS` (deviance and D^2;
    log-loss and the two accuracies; pinball loss and coverage, with the quantile marked;
    Huber loss, MAE and nMSE). The bar axes start at 0, so that bar lengths compare as ratios
    (a D^2 below 0 is drawn from 0 to the left); a model far off the others
    (:data:`~multitask.benchmark.OFF_SCALE`) is clipped at the axis' end, marked with ``//``
    and its value written there, instead of flattening the others. The spectrum (of the
    task-class columns for more than two classes) marks singular values that are zero (to
    machine precision) at zero (see
    :func:`~multitask.plotting.plot_singular_values`).

    Returns
    -------
    matplotlib.figure.Figure
        Not registered with pyplot; save it with ``fig.savefig(path)``.

    Raises
    ------
    ImportError
        Without matplotlib.
    """
    from matplotlib.figure import Figure

    from multitask.plotting import plot_singular_values

    panels = METRICS[res.kind][:1] if res.kind in _LEFT_OUT else METRICS[res.kind]
    two = res.trace_coef is not None
    n = len(res.rows)
    widths = [1.4] + [1.0] * (len(panels) - 1) + ([1.0] if two else [])
    fig = Figure(figsize=(6.5 + 4.5 * (len(widths) - 1), max(3.2, 0.32 * n + 1.2)),
                 layout="constrained")
    axes = list(np.atleast_1d(fig.subplots(1, len(widths), width_ratios=widths)))
    rows = res.rows[::-1]  # best at the top
    pos = np.arange(n)
    for i, (key, label, larger) in enumerate(panels):
        ax = axes[i]
        means = np.array([r[f"{key}_mean"] for r in rows], dtype=float)
        stds = np.array([r[f"{key}_std"] for r in rows], dtype=float)
        _bars(ax, pos, means, stds, larger)
        if i == 0:
            ax.set_yticks(pos, [_stem(r["model"]) for r in rows], fontsize=8)
        else:
            ax.set_yticks(pos, [""] * n)
        if larger is None and res.kind == "quantile":
            q = res.options.get("quantile")
            ax.axvline(q, color="#c44e52", lw=1.2, ls="--")
            ax.set_xlim(0.0, 1.0)
            ax.set_xlabel(f"test {label} (mean ± std over splits; ideal {q:g}, dashed)",
                          fontsize=8 if i else None)
        else:
            way = "higher" if larger else "lower"
            ax.set_xlabel(f"test {label} (mean ± std over splits; {way} is better)"
                          + ax.get_xlabel(), fontsize=8 if i else None)
    axes[0].set_title(f"{res.name}: {res.setting}", fontsize=10)
    if two:
        columns = res.n_tasks is not None and res.trace_coef.shape[0] != res.n_tasks
        title = ("Trace-norm model: singular values of the\ntask-class columns (split 0)"
                 if columns else "Trace-norm model: singular values (split 0)")
        plot_singular_values({"TraceNorm coef_": res.trace_coef}, ax=axes[-1], title=title)
        if columns:
            axes[-1].title.set_fontsize(10)
    return fig


def _bars(ax: Any, pos: np.ndarray, means: np.ndarray, stds: np.ndarray,
          larger: bool | None) -> None:
    """Horizontal bars of ``means`` ± ``stds`` on an axis from 0 (or from the smallest value
    when some are negative), a bar far off the others clipped and its value written; the
    axis label gets `` (// : off scale, value written)`` when one is."""
    end, off = _axis_end(means, stds)
    low = float(np.nanmin(means)) if np.isfinite(means).any() else 0.0
    start = min(0.0, 1.15 * low)
    shown = np.where(off, end, np.nan_to_num(means))
    err = np.where(off, 0.0, np.nan_to_num(stds))
    ax.barh(pos, shown, xerr=err, capsize=3, color="#4c72b0")
    ax.set_xlim(start, end)
    for i in np.flatnonzero(off):
        ax.text(0.985 * end, pos[i], "//", ha="center", va="center", color="white",
                fontsize=9, fontweight="bold")
        ax.annotate(f"{means[i]:.4g} ± {stds[i]:.2g} (off scale)", (0.955 * end, pos[i]),
                    ha="right", va="center", fontsize=7, color="white")
    ax.set_xlabel(" (// : off scale, value written)" if off.any() else "")


#: The figure's name in the first versions, which ran on School only.
plot_school = plot_benchmark
