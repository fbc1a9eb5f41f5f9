"""Singular value spectra

The trace norm, the capped trace norm and sparse + low rank on the same tasks.

Thirty tasks whose weight vectors lie in a 3-dimensional subspace, plus a few sparse
task-specific weights. The trace norm (`TraceNormRegressor`) shrinks every singular value by
the same amount; the capped trace norm (`CappedTraceRegressor`) penalizes only the singular
values below its cap `tau` (dashed line), so the large ones, the shared subspace, are kept
unbiased while the small ones vanish; sparse + low rank (`SparseLowRankRegressor`) splits the
weights into a low-rank part and a sparse part, drawn separately. The spectrum of the planted
weights is drawn in every panel; singular values that are zero sit at the bottom of the axis.
"""

import os
from pathlib import Path

from matplotlib.figure import Figure

from multitask import CappedTraceRegressor, SparseLowRankRegressor, TraceNormRegressor
from multitask.datasets import make_sparse_low_rank_tasks
from multitask.plotting import plot_singular_values

QUICK = os.environ.get("MULTITASK_EXAMPLES_QUICK") == "1"  # small data, for the tests

data = make_sparse_low_rank_tasks(n_tasks=10 if QUICK else 30, n_features=20, n_samples=15,
                                  rank=3, sparsity=0.02, noise=1.0, random_state=0)
models = {
    "trace norm": TraceNormRegressor(alpha=3.0),
    "capped trace norm": CappedTraceRegressor(alpha=3.0, tau=2.0),
    "sparse + low rank": SparseLowRankRegressor(alpha=1.0, radius=30.0),
}

fig = Figure(figsize=(13, 3.8), layout="constrained")
axes = fig.subplots(1, 3, sharey=True)
for ax, (name, model) in zip(axes, models.items(), strict=True):
    model.fit(data.X, data.y)
    spectra = {"planted W": data.W_true, "learned W": model.coef_}
    if hasattr(model, "low_rank_component_"):  # sparse + low rank: its two parts
        spectra["low-rank part"] = model.low_rank_component_
        spectra["sparse part"] = model.sparse_component_
    plot_singular_values(spectra, tau=getattr(model, "tau", None), ax=ax, title=name)
fig.savefig(Path(os.environ.get("MULTITASK_EXAMPLES_OUT", ".")) / f"{Path(__file__).stem}.png",
            dpi=80)
