"""Dirty model: two supports

The dirty model splits the weights into shared features and task-specific exceptions.

Six regression tasks share four features (weights of the same sign and similar size in every
task) and each task has one feature of its own. `DirtyModelRegressor` writes the weights as
`W = P + Q`: the block part `P` (penalty `alpha_group sum_j max_t |P_jt|`, the l1,inf norm of
Jalali, Ravikumar, Sanghavi & Ruan) holds the shared features, the elementwise sparse part
`Q` (penalty `alpha_l1 ||Q||_1`) the exceptions, and the small corrections of the shared
weights around their common value. Both supports are recovered exactly.
"""

import os
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from multitask import DirtyModelRegressor
from multitask.plotting import plot_weight_matrix

QUICK = os.environ.get("MULTITASK_EXAMPLES_QUICK") == "1"  # small data, for the tests

rng = np.random.default_rng(0)
n_tasks, n_features, n_rows = 6, 16 if QUICK else 30, 40 if QUICK else 80
W = np.zeros((n_features, n_tasks))
W[:4] = rng.choice([-1, 1], (4, 1)) * (1.0 + 0.1 * rng.standard_normal((4, n_tasks)))
for t in range(n_tasks):  # one feature of its own per task
    W[6 + t, t] = 1.5 * rng.choice([-1, 1])
X = [rng.standard_normal((n_rows + 10 * t, n_features)) for t in range(n_tasks)]
y = [Xt @ W[:, t] + 0.1 * rng.standard_normal(len(Xt)) for t, Xt in enumerate(X)]

model = DirtyModelRegressor(alpha_group=0.15, alpha_l1=0.05).fit(X, y)

fig = Figure(figsize=(14, 3.6), layout="constrained")
axes = fig.subplots(1, 3)
plot_weight_matrix(W.T, ax=axes[0], title="true weights")
plot_weight_matrix(model.group_component_, ax=axes[1],
                   title=f"block part P: rows {model.shared_features_.tolist()}")
plot_weight_matrix(model.sparse_component_, ax=axes[2], title="sparse part Q")
fig.savefig(Path(os.environ.get("MULTITASK_EXAMPLES_OUT", ".")) / f"{Path(__file__).stem}.png",
            dpi=80)
