"""Learned task similarity

Multi-task multiple kernel learning picks the true grouping of the tasks.

Twelve classification tasks form three groups of four: tasks of a group share nearly the
same weight vector. `MultiTaskKernelClassifier` is given four candidate task kernels, none
of them privileged: every task alone, all tasks together, the true grouping and a wrong
grouping. It learns their weights `theta` (with `p = 1`, a sparse choice) and so a task
similarity matrix `task_similarity_`, drawn on the left; on the right, the cosine similarity
of the learned weight vectors.
"""

import os
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from multitask import MultiTaskKernelClassifier
from multitask.plotting import plot_task_similarity, task_similarity_from_coef

QUICK = os.environ.get("MULTITASK_EXAMPLES_QUICK") == "1"  # small data, for the tests

rng = np.random.default_rng(0)
n_groups, per_group, n_features, n_rows = 3, 4, 10, 20 if QUICK else 60
group = np.repeat(np.arange(n_groups), per_group)  # the group of each task
centers = rng.standard_normal((n_groups, n_features))
W = centers[group] + 0.3 * rng.standard_normal((group.size, n_features))
X = [rng.standard_normal((n_rows, n_features)) for _ in group]
y = [(Xt @ w + 0.5 * rng.standard_normal(n_rows) > 0).astype(int)
     for Xt, w in zip(X, W, strict=True)]

wrong = np.arange(group.size) % n_groups  # a grouping that mixes the true groups
candidates = {
    "each task alone": np.eye(group.size),
    "all tasks": np.ones((group.size, group.size)),
    "true groups": np.equal.outer(group, group).astype(float),
    "wrong groups": np.equal.outer(wrong, wrong).astype(float),
}
model = MultiTaskKernelClassifier(task_similarity=list(candidates.values()), p=1.0,
                                  random_state=0).fit(X, y)
weights = ", ".join(f"{name} {t:.2f}" for name, t in zip(candidates, model.theta_, strict=True))

fig = Figure(figsize=(10, 4.2), layout="constrained")
left, right = fig.subplots(1, 2)
plot_task_similarity(model, ax=left, title="learned task kernel")
plot_task_similarity(task_similarity_from_coef(model.coef_), ax=right, task_names=model.tasks_,
                     title="cosine similarity of the task weights")
fig.suptitle(f"theta: {weights}", fontsize=9)
fig.savefig(Path(os.environ.get("MULTITASK_EXAMPLES_OUT", ".")) / f"{Path(__file__).stem}.png",
            dpi=80)
