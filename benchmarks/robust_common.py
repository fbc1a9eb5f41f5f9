"""Data and measurements shared by the robust MTL benchmarks (public API of multitask only).

The generated EUR-Lex-shaped data (:func:`multitask.datasets.make_multilabel_tasks` with the
parameters of ``python -m reproductions robust-dc --dataset eurlex-synthetic``), its 40% / 60%
split, the full problem's objective at a fitted model and the mean test AUC over labels.
"""

from __future__ import annotations

import numpy as np

from multitask.datasets import make_multilabel_tasks, split_shared
from multitask.metrics import roc_auc
from multitask.penalties import LowRankOutlier


def eurlex(n_samples: int = 19348, n_features: int = 5000, n_tasks: int = 412, seed: int = 0):
    """Generated multi-label data with EUR-Lex's shape (a reduced one when asked)."""
    return make_multilabel_tasks(n_samples=n_samples, n_features=n_features, n_tasks=n_tasks,
                                 mean_tokens=60.0, rank=20, n_outliers=20, noise=0.25,
                                 mean_positives=55.0, min_positives=20,
                                 random_state=np.random.default_rng(seed))


def split(X, Y, seed: int = 0):
    """40% / 60% rows; labels with fewer than 2 positives or negatives in training dropped.

    Returns ``(X_train, Y_train, X_test, Y_test, kept)`` with ``kept`` the label mask.
    """
    Xtr, Ytr, Xte, Yte = split_shared(X, Y, train_ratio=0.4, random_state=seed)
    pos = Ytr.sum(axis=0)
    keep = (pos >= 2) & (Ytr.shape[0] - pos >= 2)
    return Xtr, Ytr[:, keep], Xte, Yte[:, keep], keep


def scores(est, X) -> np.ndarray:
    """Decision scores ``(n, m)`` of a fitted robust MTL classifier."""
    return np.asarray(est.decision_function(X), dtype=float)


def auc(est, X, Y) -> float:
    """Mean test AUC over labels."""
    return float(roc_auc(Y, scores(est, X)))


def objective(est, X, Y01, alpha: float | None = None, lam: float | None = None) -> float:
    """Squared-hinge objective of the full problem at a fitted model (``alpha``, ``lam``
    default to the model's own)."""
    S = scores(est, X)
    f = float(np.mean(np.maximum(0.0, 1.0 - (2.0 * Y01 - 1.0) * S) ** 2, axis=0).sum())
    pen = LowRankOutlier(est.alpha if alpha is None else alpha, est.lam if lam is None else lam)
    return f + pen.value(est.coef_variable_)


def rank(L: np.ndarray, rtol: float = 1e-6) -> int:
    """Numerical rank (singular values above ``rtol`` times the largest)."""
    from multitask.metrics import numerical_rank

    return numerical_rank(L, rtol=rtol)
