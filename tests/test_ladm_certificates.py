"""Linearized ADMM's certificates: two at least ``min(CHECK_MIN_GAP, k // 4)`` iterations
apart.

On the robust MTL classifier (10 tasks of 40 rows and 300 features, ``alpha_max / 10``) both
ADMM residuals fall below ``tol`` long before the certified gap does: without the gap the run
certifies after every iteration from there on.
"""

from __future__ import annotations

import warnings

import numpy as np

import multitask.solvers.ladm as ladm
from multitask import RobustMTLClassifier
from multitask.solvers.iteration import IterationRecord


def _problem():
    rng = np.random.default_rng(0)
    m, n, d = 10, 40, 300
    X = rng.standard_normal((m * n, d))
    task = np.repeat(np.arange(m), n)
    W = np.zeros((d, m))
    W[:10] = rng.standard_normal((10, m)) + rng.standard_normal((10, 1))
    z = np.einsum("ij,ji->i", X, W[:, task])
    y = (z + 0.5 * z.std() * rng.standard_normal(z.size) > np.median(z)).astype(int)
    return X, y, task


def _fit(monkeypatch):
    X, y, task = _problem()
    taken: list[int] = []
    certified = IterationRecord.certified

    def record(self, k, measure, certificate=None):
        taken.append(k)
        return certified(self, k, measure, certificate)

    monkeypatch.setattr(IterationRecord, "certified", record)
    alpha = 0.1 * RobustMTLClassifier().alpha_max(X, y, task=task)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = RobustMTLClassifier(alpha=alpha, solver="ladm").fit(X, y, task=task)
    monkeypatch.setattr(IterationRecord, "certified", certified)
    return est, taken


def test_linearized_admm_certifies_at_least_its_gap_apart(monkeypatch):
    gap = ladm.CHECK_MIN_GAP
    est, taken = _fit(monkeypatch)
    assert est.converged_ and est.optimality_ <= est.tol
    steps = np.diff(taken)
    assert np.all(steps >= np.minimum(gap, np.asarray(taken[:-1]) // 4))
    monkeypatch.setattr(ladm, "CHECK_MIN_GAP", 0)  # a certificate whenever the residuals say
    est0, taken0 = _fit(monkeypatch)
    assert est0.converged_
    assert len(taken0) > len(taken)  # the case the gap is for
    # the same objective to the tolerance, a few iterations more at most
    assert est.n_iter_ <= est0.n_iter_ + gap
    F, F0 = (e.solver_result_.info["best_objective"] for e in (est, est0))
    assert abs(F - F0) <= 2 * est.tol * abs(F0)
