"""Weight heatmaps

Joint feature selection against independent lasso.

Twenty regression tasks share five relevant features out of thirty. The l2,1 penalty
(`L21Regressor`) selects features for all tasks at once: whole columns of the weight matrix
are zero. Independent lasso (`IndependentLassoRegressor`) selects per task and, with few rows
per task, keeps spurious weights scattered over the matrix. Both take their `alpha` by
cross-validation within each task (`MultiTaskCV`).
"""

import os
from pathlib import Path

from matplotlib.figure import Figure

from multitask import IndependentLassoRegressor, L21Regressor, MultiTaskCV
from multitask.datasets import make_joint_sparse_tasks
from multitask.plotting import plot_weight_matrix

QUICK = os.environ.get("MULTITASK_EXAMPLES_QUICK") == "1"  # small data, for the tests

data = make_joint_sparse_tasks(n_tasks=8 if QUICK else 20, n_features=30, n_samples=25,
                               n_relevant=5, noise=0.5, random_state=0)
models = {
    "l2,1 (joint selection)": MultiTaskCV(L21Regressor(), n_alphas=5 if QUICK else 15, cv=3),
    "independent lasso": MultiTaskCV(IndependentLassoRegressor(), n_alphas=5 if QUICK else 15,
                                     cv=3),
}

fig = Figure(figsize=(13, 4), layout="constrained")
axes = fig.subplots(1, 3)
plot_weight_matrix(data.W_true.T, ax=axes[0], title="true weights")
for ax, (name, model) in zip(axes[1:], models.items(), strict=True):
    model.fit(data.X, data.y)
    plot_weight_matrix(model, ax=ax, title=f"{name}, alpha = {model.best_params_['alpha']:.3g}")
fig.savefig(Path(os.environ.get("MULTITASK_EXAMPLES_OUT", ".")) / f"{Path(__file__).stem}.png",
            dpi=80)
