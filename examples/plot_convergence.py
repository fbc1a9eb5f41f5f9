"""Solver convergence

Accelerated against plain proximal gradient, on sparse + low rank.

`SparseLowRankRegressor` is solved by proximal gradient steps (here: a prox on the l1 part,
a projection onto the trace-norm ball on the low-rank part), with Nesterov's acceleration
(`solver="fista"`, the rate `O(1/k^2)`) or without it (`solver="pg"`, `O(1/k)`). The same
problem is solved by both to a tight tolerance; each curve is the distance of the objective
to the lowest value reached by either (so the run that reaches it plunges at its end),
against the iteration (left) and the wall-clock time (right).
"""

import os
from pathlib import Path

from multitask import SparseLowRankRegressor
from multitask.datasets import make_sparse_low_rank_tasks
from multitask.plotting import plot_convergence

QUICK = os.environ.get("MULTITASK_EXAMPLES_QUICK") == "1"  # small data, for the tests

data = make_sparse_low_rank_tasks(n_tasks=10 if QUICK else 30, n_features=50, n_samples=40,
                                  rank=3, random_state=0)
runs = {
    name: SparseLowRankRegressor(alpha=0.1, radius=20.0, solver=solver, tol=1e-9,
                                 max_iter=300 if QUICK else 3000).fit(data.X, data.y)
    for name, solver in [("accelerated (fista)", "fista"), ("plain (pg)", "pg")]
}
f_star = min(model.objective_.min() for model in runs.values())
fig = plot_convergence(runs, f_star=f_star, title="Sparse + low rank: proximal gradient")
fig.savefig(Path(os.environ.get("MULTITASK_EXAMPLES_OUT", ".")) / f"{Path(__file__).stem}.png",
            dpi=80)
