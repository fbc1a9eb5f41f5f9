"""Task correlations learned by MTRL

Multi-task relationship learning finds positive, negative and absent task correlations.

Eight regression tasks: three share a weight vector `u`, two have `-u`, two share an
orthogonal `v`, and one has its own direction. Multi-task relationship learning
(`TaskRelationshipRegressor`) learns the task covariance `Omega` jointly with the weights; its
correlation matrix `task_correlation_` (right) is compared with the correlation of the
covariance of the planted weights, `(W^T W)^{1/2}` normalized (left): +1 within a group, -1
between the `u` and `-u` groups, 0 between unrelated tasks. Drawn with `plot_task_correlation`,
on the fixed scale [-1, 1].
"""

import os
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from multitask import TaskRelationshipRegressor
from multitask.plotting import plot_task_correlation

QUICK = os.environ.get("MULTITASK_EXAMPLES_QUICK") == "1"  # small data, for the tests

rng = np.random.default_rng(0)
n_features = 10
n_rows = 20 if QUICK else 40
u, v, own = np.linalg.qr(rng.standard_normal((n_features, 3)))[0].T * 3.0
W = np.column_stack([u, u, u, -u, -u, v, v, own])  # (features, tasks)
X = [rng.standard_normal((n_rows, n_features)) for _ in range(W.shape[1])]
y = [Xt @ W[:, t] + 0.5 * rng.standard_normal(n_rows) for t, Xt in enumerate(X)]

model = TaskRelationshipRegressor(alpha=0.05).fit(X, y)

vals, vecs = np.linalg.eigh(W.T @ W)  # the covariance of the planted weights
root = (vecs * np.sqrt(np.clip(vals, 0, None))) @ vecs.T
planted = root / np.sqrt(np.outer(np.diag(root), np.diag(root)))
names = ["u", "u", "u", "-u", "-u", "v", "v", "own"]

fig = Figure(figsize=(10, 4.2), layout="constrained")
left, right = fig.subplots(1, 2)
plot_task_correlation(planted, task_names=names, ax=left, title="planted (W^T W)^1/2")
plot_task_correlation(model, task_names=names, ax=right,
                      title="learned task_correlation_")
gap = np.max(np.abs(model.task_correlation_ - planted))
fig.suptitle(f"MTRL, alpha = 0.05: largest difference {gap:.2f}", fontsize=10)
fig.savefig(Path(os.environ.get("MULTITASK_EXAMPLES_OUT", ".")) / f"{Path(__file__).stem}.png",
            dpi=80)
