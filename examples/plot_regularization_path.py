"""Regularization path

The path and the cross-validation of the l2,1 model.

The l2,1 penalty `alpha * sum_j ||W_j.||_2` removes whole features from all tasks at once.
Left: along the path from `alpha_max` (every weight zero) down to `alpha_max / 1000`,
the norm of each feature's weights over the tasks; the five relevant features enter first.
Right: the cross-validated error (folds drawn within each task) along the same grid, and the
value `MultiTaskCV` chooses.
"""

import os
from pathlib import Path

from matplotlib.figure import Figure

from multitask import L21Regressor, MultiTaskCV
from multitask.datasets import make_joint_sparse_tasks
from multitask.model_selection import regularization_path
from multitask.plotting import plot_cv_scores, plot_regularization_path

QUICK = os.environ.get("MULTITASK_EXAMPLES_QUICK") == "1"  # small data, for the tests

data = make_joint_sparse_tasks(n_tasks=10 if QUICK else 20, n_features=12, n_samples=30,
                               n_relevant=5, noise=1.0, random_state=0)
n_alphas = 8 if QUICK else 30
path = regularization_path(L21Regressor(), data.X, data.y, n_alphas=n_alphas)
cv = MultiTaskCV(L21Regressor(), n_alphas=n_alphas, cv=5).fit(data.X, data.y)

fig = Figure(figsize=(11, 4), layout="constrained")
left, right = fig.subplots(1, 2)
plot_regularization_path(path, ax=left)
left.axvline(cv.best_params_["alpha"], color="k", ls="--", lw=1)  # the value CV chooses
plot_cv_scores(cv, ax=right, title="5-fold cross-validation within tasks")
fig.savefig(Path(os.environ.get("MULTITASK_EXAMPLES_OUT", ".")) / f"{Path(__file__).stem}.png",
            dpi=80)
