"""Claim counts with exposure (Poisson)

Belgian motor insurance (`load_be_mtpl97`): the number of claims of each policy, observed
over its exposure (the fraction of the year it was insured), in 80 postal districts. One
Poisson regression per district is the classical model; a multi-task model fits them
together. As scikit-learn's Poisson GLMs do, every model fits the claim rate
`y / exposure` with `sample_weight=exposure` (the log of the exposure as an offset), and the
expected number of claims of a policy is its predicted rate times its exposure.

Three Poisson models (`loss="poisson"`), each with its penalty chosen by `MultiTaskCV` (minus
the mean Poisson deviance, 3 folds within districts): independent per-district models with a
ridge penalty, one pooled model with one intercept for all districts, and the trace-norm
model, which keeps an intercept per district and pulls the districts' coefficient vectors
towards a common low-dimensional subspace. Left: the test deviance of the counts and its D^2
(a quarter of each district's policies held out). Right: each district's coefficient of the
bonus-malus level, the strongest feature, against the district's exposure: the independent
models shrink each district's coefficient towards zero, the trace norm towards what the
districts share (nearer the pooled coefficient). Run in full (`python
examples/plot_claims_poisson.py`: all 80 districts, 163,212 policies), the trace-norm model
has the lowest test deviance (0.5333, against 0.5338 pooled and 0.5358 independent; D^2
0.0301, 0.0293 and 0.0256): small differences, since most of the deviance of claim counts
is noise that no model of these features explains. With `MULTITASK_EXAMPLES_QUICK=1` (6
districts, 2 folds) the figure is drawn on less data and its ranking may differ. The data
folder must be present (`multitask.datasets.find_data_dir`).
"""

import os
import warnings
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from multitask import IndependentRidgeRegressor, MultiTaskCV, PooledRegressor, TraceNormRegressor
from multitask.datasets import load_be_mtpl97
from multitask.metrics import d2_tweedie_score, mean_poisson_deviance

QUICK = os.environ.get("MULTITASK_EXAMPLES_QUICK") == "1"  # 6 districts, for the tests

data = load_be_mtpl97()
keep = np.isin(data.task, data.task_names[::13][:6]) if QUICK else np.ones(len(data.y), bool)
X, counts, exposure, task = data.X[keep], data.y[keep], data.exposure[keep], data.task[keep]

# a quarter of each district's policies held out
rng = np.random.default_rng(0)
test = np.zeros(len(counts), dtype=bool)
for t in np.unique(task):
    rows = np.flatnonzero(task == t)
    test[rng.choice(rows, len(rows) // 4, replace=False)] = True
train = ~test
X = (X - X[train].mean(axis=0)) / X[train].std(axis=0)
rate = counts / exposure

models = {
    "independent": IndependentRidgeRegressor(loss="poisson"),
    "pooled": PooledRegressor(loss="poisson"),
    "trace norm": TraceNormRegressor(loss="poisson"),
}
fitted, deviance, d2 = {}, {}, {}
for name, model in models.items():
    search = MultiTaskCV(model, cv=2 if QUICK else 3, n_alphas=3 if QUICK else 5,
                         alpha_ratio=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # grid points stopped by max_iter in the search
        search.fit(X[train], rate[train], task=task[train], sample_weight=exposure[train])
    fitted[name] = search.best_estimator_
    expected = search.predict(X[test], task=task[test]) * exposure[test]   # claims
    deviance[name] = mean_poisson_deviance(counts[test], expected, task[test],
                                           average="pooled")
    d2[name] = d2_tweedie_score(rate[test], expected / exposure[test], task[test], power=1,
                                average="pooled", sample_weight=exposure[test])

fig = Figure(figsize=(13, 4.6), layout="constrained")
left, right = fig.subplots(1, 2, width_ratios=[1, 1.6])
names = list(models)
colors = {"independent": "tab:gray", "pooled": "tab:red", "trace norm": "tab:blue"}
left.bar(names, [deviance[n] for n in names], color=[colors[n] for n in names])
for i, n in enumerate(names):
    left.annotate(f"D^2 = {d2[n]:.4f}", (i, deviance[n]), ha="center", va="bottom",
                  xytext=(0, 3), textcoords="offset points")
low, high = min(deviance.values()), max(deviance.values())
left.set_ylim(low - 2 * (high - low) - 1e-4, high + (high - low) + 1e-4)
left.set_ylabel("test mean Poisson deviance of the counts")
left.set_title(f"{len(np.unique(task))} districts, {test.sum():,} test policies")

bm = list(data.feature_names).index("bm")
districts = fitted["trace norm"].tasks_
years = np.array([exposure[train & (task == t)].sum() for t in districts])
right.scatter(years, fitted["independent"].coef_[:, bm], s=18, color=colors["independent"],
              label="independent (ridge)")
right.scatter(years, fitted["trace norm"].coef_[:, bm], s=18, color=colors["trace norm"],
              label="trace norm")
right.axhline(fitted["pooled"].coef_[0, bm], color=colors["pooled"], label="pooled")
right.set_xscale("log")
right.set_xlabel("exposure of the district's training policies (policy-years)")
right.set_ylabel("coefficient of the bonus-malus level (standardized)")
right.set_title("each district's effect of the bonus-malus level")
right.legend(loc="lower right")
fig.savefig(Path(os.environ.get("MULTITASK_EXAMPLES_OUT", ".")) / f"{Path(__file__).stem}.png",
            dpi=80)
