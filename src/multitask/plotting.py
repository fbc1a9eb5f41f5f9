"""Plots (optional extra ``multitask[plot]``, needs matplotlib).

Every function returns a matplotlib ``Figure`` and never shows it.
"""

from __future__ import annotations

import numpy as np


def _plt():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover
        raise ImportError("Plotting needs matplotlib: pip install 'multitask[plot]'.") from exc
    return plt


def plot_results_bars(rows: list[dict], metric: str | None = None):
    """Bar chart of ``mean ± std`` per method (and setting) for one metric of result rows."""
    plt = _plt()
    if not rows:
        raise ValueError("no result rows to plot.")
    metric = metric or rows[0]["metric"]
    sel = [r for r in rows if r["metric"] == metric]
    labels = [f"{r['method']}\n{r['setting']}" if len({s['setting'] for s in sel}) > 1
              else str(r["method"]) for r in sel]
    fig, ax = plt.subplots(figsize=(max(4, 0.9 * len(sel)), 3.5))
    x = np.arange(len(sel))
    ax.bar(x, [r["mean"] for r in sel], yerr=[r["std"] for r in sel], capsize=3,
           color="#4c72b0")
    ax.set_xticks(x, labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(metric)
    ax.set_title(f"{sel[0]['experiment']} — {sel[0]['dataset']}")
    fig.tight_layout()
    return fig
