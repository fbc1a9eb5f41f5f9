"""Capped l1,l1 stages (MSMTFL)

Multi-stage multi-task feature learning stops shrinking the shared features.

Eight regression tasks share 5 relevant features out of 30, with 25 rows per task. The first
stage of the capped l1,l1 model (`CappedL1Regressor`) is the lasso (drawn here as
`IndependentLassoRegressor` at the same `alpha`): at the strength that removes the irrelevant
features it also shrinks the relevant ones. The
later stages leave the features whose weights reach the cap `theta` (l1 norm over the tasks)
unpenalized: the final weights keep the support and lose the shrinkage. Drawn with
`plot_weight_matrix` (tasks by features; the relevant features are the first five).
"""

import os
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from multitask import CappedL1Regressor, IndependentLassoRegressor
from multitask.plotting import plot_weight_matrix

QUICK = os.environ.get("MULTITASK_EXAMPLES_QUICK") == "1"  # small data, for the tests

rng = np.random.default_rng(0)
n_tasks, n_features, n_relevant = 8, 30, 5
n_rows = 20 if QUICK else 25
W = np.zeros((n_features, n_tasks))
W[:n_relevant] = rng.choice([-1.0, 1.0], (n_relevant, n_tasks)) * rng.uniform(
    0.5, 1.5, (n_relevant, n_tasks))
X = [rng.standard_normal((n_rows, n_features)) for _ in range(n_tasks)]
y = [Xt @ W[:, t] + 0.5 * rng.standard_normal(n_rows) for t, Xt in enumerate(X)]

alpha = 0.2 * CappedL1Regressor().alpha_max(X, y)
lasso = IndependentLassoRegressor(alpha).fit(X, y)  # = stage 1 of the capped model
capped = CappedL1Regressor(alpha, theta=1.0).fit(X, y)


def error(coef):
    return np.linalg.norm(coef.T - W)


fig = Figure(figsize=(12, 3.6), layout="constrained")
axes = fig.subplots(1, 3)
plot_weight_matrix(W.T, ax=axes[0], title="planted weights")
plot_weight_matrix(lasso, ax=axes[1],
                   title=f"stage 1 (lasso): error {error(lasso.coef_):.2f}, "
                         f"{np.any(lasso.coef_ != 0, axis=0).sum()} features")
plot_weight_matrix(capped, ax=axes[2],
                   title=f"after {capped.n_stages_} stages: error {error(capped.coef_):.2f}, "
                         f"{capped.support_.size} features")
fig.savefig(Path(os.environ.get("MULTITASK_EXAMPLES_OUT", ".")) / f"{Path(__file__).stem}.png",
            dpi=80)
