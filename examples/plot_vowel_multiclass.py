"""Vowels of 15 speakers (multinomial)

The Deterding vowels (`load_vowel`): 15 speakers each say the 11 vowels of British English
six times, described by 10 log-area ratios. Each speaker is a task with 11 classes; every
linear classifier of the library fits one multinomial (softmax) model per task with its
default loss `loss="logistic"`, and its penalty acts on the coefficients of all tasks and
classes together (`coef_` of shape `(n_tasks, n_classes, n_features)`).

Each speaker gives 2 rows of each vowel for training (22 rows, fewer than the 110
coefficients of a speaker's model) and 4 for testing. Four models, each with its penalty
chosen by `MultiTaskCV` (minus the log-loss, 2 folds within speakers, stratified by vowel):
independent per-speaker models with a ridge penalty, one pooled model for all speakers, the
l2,1 model (a feature is used by every speaker and vowel, or by none) and the trace norm (the
165 task-vowel coefficient vectors near a low-dimensional subspace). Left: the test log-loss
(pooled over the test rows) and the accuracy. Right: each speaker's test accuracy. Voices
differ so much that the pooled model misclassifies about a third of the vowels; the
per-speaker models are far better, and the l2,1 model, which shares only the choice of
features, has the lowest log-loss. Run in full (`python examples/plot_vowel_multiclass.py`):
test log-loss 0.263 (l2,1), 0.277 (independent), 0.295 (trace norm), 0.924 (pooled);
accuracy 0.926, 0.924, 0.918 and 0.683. `MULTITASK_EXAMPLES_QUICK=1` uses 4 speakers and a
shorter grid. The data folder must be present (`multitask.datasets.find_data_dir`).
"""

import os
import warnings
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from multitask import (
    IndependentRidgeClassifier,
    L21Classifier,
    MultiTaskCV,
    PooledClassifier,
    TraceNormClassifier,
)
from multitask.datasets import load_vowel
from multitask.metrics import accuracy, log_loss

QUICK = os.environ.get("MULTITASK_EXAMPLES_QUICK") == "1"  # 4 speakers, for the tests

data = load_vowel()
keep = data.task < 4 if QUICK else np.ones(len(data.y), dtype=bool)
X, y, speaker = data.X[keep], data.y[keep], data.task[keep]

# 2 rows of each vowel of each speaker for training, the other 4 for testing
rng = np.random.default_rng(0)
train = np.zeros(len(y), dtype=bool)
for s in np.unique(speaker):
    for vowel in np.unique(y):
        rows = np.flatnonzero((speaker == s) & (y == vowel))
        train[rng.choice(rows, 2, replace=False)] = True
test = ~train
X = (X - X[train].mean(axis=0)) / X[train].std(axis=0)

models = {
    "independent": IndependentRidgeClassifier(),
    "pooled": PooledClassifier(),
    "l2,1": L21Classifier(),
    "trace norm": TraceNormClassifier(),
}
loss, acc, per_speaker = {}, {}, {}
for name, model in models.items():
    search = MultiTaskCV(model, cv=2, n_alphas=3 if QUICK else 6,
                         alpha_ratio=0.1 if QUICK else 0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # grid points stopped by max_iter in the search
        search.fit(X[train], y[train], task=speaker[train])
    proba = search.predict_proba(X[test], task=speaker[test])   # (n_test, 11)
    predicted = search.predict(X[test], task=speaker[test])
    loss[name] = log_loss(y[test], proba, speaker[test], average="pooled")
    acc[name] = accuracy(y[test], predicted, speaker[test], average="pooled")
    per_speaker[name] = accuracy(y[test], predicted, speaker[test], average=None)

fig = Figure(figsize=(13, 4.6), layout="constrained")
left, right = fig.subplots(1, 2, width_ratios=[1, 1.5])
names = list(models)
colors = {"independent": "tab:gray", "pooled": "tab:red", "l2,1": "tab:green",
          "trace norm": "tab:blue"}
left.bar(names, [loss[n] for n in names], color=[colors[n] for n in names])
for i, n in enumerate(names):
    left.annotate(f"accuracy {acc[n]:.3f}", (i, loss[n]), ha="center", va="bottom",
                  xytext=(0, 3), textcoords="offset points")
left.set_ylim(0, 1.15 * max(loss.values()))
left.set_ylabel("test log-loss (pooled)")
left.set_title(f"{len(np.unique(speaker))} speakers, 11 vowels, {test.sum()} test rows")

speakers = np.unique(speaker)
for k, n in enumerate(names):
    right.plot(speakers + 0.12 * (k - 1.5), per_speaker[n], "o", color=colors[n], label=n)
right.set_xticks(speakers)
right.set_xlabel("speaker (task)")
right.set_ylabel("test accuracy")
right.set_ylim(0, 1.02)
right.set_title("each speaker's accuracy")
right.legend(loc="lower left", ncols=2)
fig.savefig(Path(os.environ.get("MULTITASK_EXAMPLES_OUT", ".")) / f"{Path(__file__).stem}.png",
            dpi=80)
