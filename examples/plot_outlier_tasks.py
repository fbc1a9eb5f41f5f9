"""Outlier tasks (rMTFL)

Robust multi-task feature learning finds the tasks that do not share the common features.

Ten regression tasks: eight use the same three features, two (tasks 3 and 7) have dense
weights of their own. `RobustFeatureLearningRegressor` (Gong, Ye & Zhang) writes
`W = P + Q` with the l2,1 norm over the feature rows of `P` (the shared features) and over
the task columns of `Q` (the outlier tasks): the nonzero columns of `Q` are exactly the two
outliers (`outlier_tasks_`), the nonzero rows of `P` the three shared features.
"""

import os
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from multitask import RobustFeatureLearningRegressor
from multitask.plotting import plot_weight_matrix

QUICK = os.environ.get("MULTITASK_EXAMPLES_QUICK") == "1"  # small data, for the tests

rng = np.random.default_rng(0)
n_tasks, n_features, n_rows = 10, 20, 40 if QUICK else 60
W = np.zeros((n_features, n_tasks))
W[:3] = 2 * rng.standard_normal((3, 1)) + 0.2 * rng.standard_normal((3, n_tasks))
outliers = [3, 7]
for t in outliers:
    W[:, t] = rng.standard_normal(n_features)
X = [rng.standard_normal((n_rows + 5 * t, n_features)) for t in range(n_tasks)]
y = [Xt @ W[:, t] + 0.1 * rng.standard_normal(len(Xt)) for t, Xt in enumerate(X)]

model = RobustFeatureLearningRegressor(alpha_group=0.25, alpha_outlier=0.25).fit(X, y)

fig = Figure(figsize=(14, 3.8), layout="constrained")
axes = fig.subplots(1, 3)
plot_weight_matrix(model.feature_component_, ax=axes[0], title="shared part P")
plot_weight_matrix(model.outlier_component_, ax=axes[1], title="outlier part Q")
colors = ["tab:red" if t in outliers else "tab:gray" for t in range(n_tasks)]
axes[2].bar(np.arange(n_tasks), model.outlier_task_norms_, color=colors)
axes[2].set_xticks(np.arange(n_tasks))
axes[2].set_xlabel("task")
axes[2].set_ylabel("||Q_t||_2")
axes[2].set_title(f"outliers found {model.outlier_tasks_.tolist()}, true {outliers}")
fig.savefig(Path(os.environ.get("MULTITASK_EXAMPLES_OUT", ".")) / f"{Path(__file__).stem}.png",
            dpi=80)
