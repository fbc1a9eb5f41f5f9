"""Generated tasks with targets in each regression loss's domain, shared by the loss tests."""

from __future__ import annotations

import numpy as np


def loss_targets(loss: str, eta: list[np.ndarray], rng: np.random.Generator) -> list[np.ndarray]:
    """Targets around the linear scores ``eta`` of each task: Poisson counts of mean
    ``exp(eta)`` (Poisson, Tweedie), Gamma draws of shape 2 and mean ``exp(eta)``, else
    ``eta`` plus Student t noise with 3 degrees of freedom (heavy tails)."""
    if loss in ("poisson", "tweedie"):
        return [rng.poisson(np.exp(e)).astype(float) for e in eta]
    if loss == "gamma":
        return [rng.gamma(2.0, np.exp(e) / 2.0) for e in eta]
    return [e + rng.standard_t(3, len(e)) for e in eta]


def loss_tasks(loss: str, sizes=(20, 26, 17), d: int = 3, seed: int = 0):
    """``(Xs, ys)``: standard normal designs of ``sizes`` rows and ``d`` features, weights
    ``0.3 N(0, 1)``, an intercept of 0.4 and :func:`loss_targets`."""
    rng = np.random.default_rng(seed)
    W = 0.3 * rng.standard_normal((d, len(sizes)))
    Xs = [rng.standard_normal((n, d)) for n in sizes]
    eta = [X @ W[:, t] + 0.4 for t, X in enumerate(Xs)]
    return Xs, loss_targets(loss, eta, rng)
