"""Temporal patterns of selected features

Temporal group lasso and fused sparse group lasso on tasks ordered in time.

Top: three features whose weights drift smoothly over ten time points (ten rows per time
point for twenty features). The l2,1 model (joint selection, best strength chosen with the
truth) estimates each time point on its own; the temporal group lasso
(`TemporalGroupLassoRegressor`, `alpha_smooth ||W H||_F^2`, MALSAR's TGL) follows the smooth
trajectories. Bottom: weights that change by steps (one feature jumps after time 3, one is
constant, one appears after time 5); the fused sparse group lasso
(`FusedSparseGroupLassoRegressor`, `alpha_fused ||W H||_1`, MALSAR's cFSGL) finds the change
points and selects exactly the three features. Heatmaps: time points as rows, the first
eight features as columns.
"""

import os
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from multitask import FusedSparseGroupLassoRegressor, L21Regressor, TemporalGroupLassoRegressor
from multitask.plotting import plot_weight_matrix

QUICK = os.environ.get("MULTITASK_EXAMPLES_QUICK") == "1"  # small data, for the tests

rng = np.random.default_rng(0)
n_features, shown = 20, 8


def tasks(W, n_rows):
    X = [rng.standard_normal((n_rows, n_features)) for _ in range(W.shape[1])]
    return X, [Xt @ W[:, t] + 0.5 * rng.standard_normal(n_rows) for t, Xt in enumerate(X)]


def error(model, W):
    return np.linalg.norm(model.coef_.T - W) / np.linalg.norm(W)


# smooth drift over 10 time points
time = np.linspace(0, 1, 10)
W_smooth = np.zeros((n_features, time.size))
W_smooth[0], W_smooth[1], W_smooth[2] = 1 + time, -1.5 + 0.5 * time ** 2, np.cos(np.pi * time)
X, y = tasks(W_smooth, 10)
l21 = min((L21Regressor(a).fit(X, y) for a in np.logspace(-3, 0, 4 if QUICK else 10)),
          key=lambda m: error(m, W_smooth))
tgl = TemporalGroupLassoRegressor(alpha_group=0.2, alpha_smooth=0.3).fit(X, y)

# steps over 8 time points
steps = np.arange(8)
W_steps = np.zeros((n_features, steps.size))
W_steps[0], W_steps[1], W_steps[2] = np.where(steps < 4, 1.0, 2.0), -1.5, np.where(
    steps < 6, 0.0, 1.5)
Xs, ys = tasks(W_steps, 20)
fsgl = FusedSparseGroupLassoRegressor(alpha_group=0.2, alpha_fused=0.4, alpha_l1=0.05).fit(
    Xs, ys)

fig = Figure(figsize=(13, 6.5), layout="constrained")
axes = fig.subplots(2, 3)
plot_weight_matrix(W_smooth[:shown].T, ax=axes[0, 0], task_names=[f"t{k}" for k in range(10)],
                   title="smooth drift: truth")
plot_weight_matrix(l21.coef_[:, :shown], ax=axes[0, 1], task_names=[f"t{k}" for k in range(10)],
                   title=f"l2,1 (error {error(l21, W_smooth):.2f})")
plot_weight_matrix(tgl.coef_[:, :shown], ax=axes[0, 2], task_names=[f"t{k}" for k in range(10)],
                   title=f"temporal group lasso (error {error(tgl, W_smooth):.2f})")
plot_weight_matrix(W_steps[:shown].T, ax=axes[1, 0], task_names=[f"t{k}" for k in range(8)],
                   title="steps: truth")
for j, style in zip(range(3), ("-", "--", ":"), strict=True):
    axes[1, 1].step(steps, W_steps[j], style, color="k", where="mid")
    axes[1, 1].step(steps, fsgl.coef_[:, j], style, color="tab:blue", where="mid")
axes[1, 1].set_xlabel("time point")
axes[1, 1].set_ylabel("weight (black: truth, blue: cFSGL)")
axes[1, 1].set_title("features 0, 1, 2 over time")
plot_weight_matrix(fsgl.coef_[:, :shown], ax=axes[1, 2], task_names=[f"t{k}" for k in range(8)],
                   title=f"cFSGL: features {fsgl.selected_features_.tolist()}")
fig.savefig(Path(os.environ.get("MULTITASK_EXAMPLES_OUT", ".")) / f"{Path(__file__).stem}.png",
            dpi=80)
