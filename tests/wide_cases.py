"""Problems with more features than the catalogue's, for the working sets' tests against cvxpy:
per-task designs, a planted support, and the loss gradient at ``W = 0`` that the strengths are
taken from."""

from __future__ import annotations

import numpy as np


def wide_tasks(rng: np.random.Generator, W: np.ndarray, sizes, classification: bool,
               noise: float = 0.3):
    """``(Xs, ys, G)``: standard normal designs of ``sizes`` rows and ``W.shape[0]`` features,
    targets ``X_t w_t`` plus noise (0/1 labels above the median for ``classification``), and
    ``G`` the loss gradient at ``W = 0`` with the best intercepts, ``-X_t^T (y_t - mean) / n_t``
    (for the logistic loss on the 0/1 labels too)."""
    d = W.shape[0]
    Xs = [rng.standard_normal((n, d)) for n in sizes]
    ys = [X @ W[:, t] + noise * rng.standard_normal(n) for t, (X, n) in
          enumerate(zip(Xs, sizes, strict=True))]
    if classification:
        ys = [np.where(y > np.median(y), 1, 0) for y in ys]
    G = np.column_stack([-X.T @ (y - np.mean(y)) / len(y) for X, y in zip(Xs, ys, strict=True)])
    return Xs, ys, G
