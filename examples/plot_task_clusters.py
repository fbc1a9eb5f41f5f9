"""Task clusters learned by CMTL

The convex clustered multi-task model recovers a planted clustering of the tasks.

Fifteen regression tasks form three clusters of five: the weight vectors of a cluster are its
centre plus a small deviation, and the tasks are listed in a random order. The convex
relaxation of clustered multi-task learning (`ClusteredMTLRegressor`, `k=3`) learns the
task-by-task matrix `M_`, which relaxes `F F^T` for the normalized cluster indicator `F`; its
leading eigenvectors give the clustering `labels_`. Left: `M_` in the order of the tasks;
right: the same matrix with the tasks sorted by their learned cluster, which shows the three
blocks. The title gives the adjusted Rand index of the learned clusters against the planted
ones (1 is a perfect recovery).
"""

import os
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from sklearn.metrics import adjusted_rand_score

from multitask import ClusteredMTLRegressor
from multitask.plotting import plot_task_similarity

QUICK = os.environ.get("MULTITASK_EXAMPLES_QUICK") == "1"  # small data, for the tests

rng = np.random.default_rng(0)
n_clusters, per_cluster, n_features = 3, 5, 10
n_rows = 15 if QUICK else 30
truth = rng.permutation(np.repeat(np.arange(n_clusters), per_cluster))  # shuffled tasks
centers = rng.standard_normal((n_clusters, n_features))
W = centers[truth] + 0.15 * rng.standard_normal((truth.size, n_features))
X = [rng.standard_normal((n_rows, n_features)) for _ in truth]
y = [Xt @ w + 0.5 * rng.standard_normal(n_rows) for Xt, w in zip(X, W, strict=True)]

model = ClusteredMTLRegressor(alpha=0.05, eta=0.1, k=n_clusters).fit(X, y)
names = [f"task {t} (c{c})" for t, c in enumerate(truth)]
order = np.argsort(model.labels_, kind="stable")

fig = Figure(figsize=(11, 4.6), layout="constrained")
left, right = fig.subplots(1, 2)
plot_task_similarity(model.M_, task_names=names, ax=left, title="learned M, task order")
plot_task_similarity(model.M_[np.ix_(order, order)], task_names=[names[i] for i in order],
                     ax=right, title="learned M, tasks sorted by learned cluster")
ari = adjusted_rand_score(truth, model.labels_)
fig.suptitle(f"CMTL, k = {n_clusters} (planted cluster cN in the labels): adjusted Rand index "
             f"{ari:.2f}", fontsize=10)
fig.savefig(Path(os.environ.get("MULTITASK_EXAMPLES_OUT", ".")) / f"{Path(__file__).stem}.png",
            dpi=80)
