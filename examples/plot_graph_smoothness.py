"""Weights smooth along a task graph

The graph-regularized model shares information between neighbouring tasks.

Twelve regression tasks sit on a ring; the weights of each feature turn slowly around the
ring (a rotation of 30 degrees between neighbours). With 12 rows per task for 15 features,
each task alone is poorly determined: independent ridge (its strength the best of a grid,
chosen with the truth) gives noisy weights. `GraphRegularizedRegressor` with the ring's
edges (`alpha * sum_(s,t) ||w_s - w_t||^2`, MALSAR's SRMTL) follows the true curves. Each
panel draws the weight of one feature against the task's position on the ring.
"""

import os
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from multitask import GraphRegularizedRegressor, IndependentRidgeRegressor

QUICK = os.environ.get("MULTITASK_EXAMPLES_QUICK") == "1"  # small data, for the tests

rng = np.random.default_rng(0)
n_tasks, n_features, n_rows = 12, 15, 12
a, c, e = rng.standard_normal((3, n_features))
angle = 2 * np.pi * np.arange(n_tasks) / n_tasks
W = np.outer(a, np.cos(angle)) + np.outer(c, np.sin(angle)) + e[:, None]
X = [rng.standard_normal((n_rows, n_features)) for _ in range(n_tasks)]
y = [Xt @ W[:, t] + rng.standard_normal(n_rows) for t, Xt in enumerate(X)]
ring = [(t, (t + 1) % n_tasks) for t in range(n_tasks)]


def error(model):
    return np.linalg.norm(model.coef_.T - W) / np.linalg.norm(W)


ridge = min((IndependentRidgeRegressor(alpha).fit(X, y)
             for alpha in np.logspace(-3, 1, 4 if QUICK else 9)), key=error)
graph = GraphRegularizedRegressor(ring, alpha=0.1, alpha_l1=0.0).fit(X, y)

fig = Figure(figsize=(13, 3.6), layout="constrained")
axes = fig.subplots(1, 3)
for ax, j in zip(axes, range(3), strict=True):
    ax.plot(np.arange(n_tasks), W[j], "k-", lw=2, label="true")
    ax.plot(np.arange(n_tasks), ridge.coef_[:, j], "o--", color="tab:gray",
            label=f"independent ridge (error {error(ridge):.2f})")
    ax.plot(np.arange(n_tasks), graph.coef_[:, j], "s-", color="tab:blue",
            label=f"graph model (error {error(graph):.2f})")
    ax.set_xlabel("task (position on the ring)")
    ax.set_ylabel(f"weight of feature {j}")
axes[0].legend(fontsize=8)
fig.savefig(Path(os.environ.get("MULTITASK_EXAMPLES_OUT", ".")) / f"{Path(__file__).stem}.png",
            dpi=80)
