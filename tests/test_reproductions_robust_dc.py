"""The robust MTL / divide-and-conquer reproduction (``python -m reproductions robust-dc``),
reduced."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from multitask import RobustMTLClassifier  # noqa: E402
from multitask.datasets import make_multilabel_tasks  # noqa: E402
from reproductions import robust_dc  # noqa: E402
from reproductions.common import RESULT_COLUMNS  # noqa: E402


def _args(**kw):
    base = dict(dataset="outliers", repeats=1, random_state=0, out=None, quick=True,
                data_dir=None, n_jobs=1)
    base.update(kw)
    return argparse.Namespace(**base)


@pytest.mark.slow  # an experiment (the paper's outlier-task setting)
def test_outlier_tasks_found_by_the_full_problem_solvers():
    rows = robust_dc.run(_args())
    assert all(set(r) == set(RESULT_COLUMNS) for r in rows)
    vals = {(r["method"], r["metric"]): r["mean"] for r in rows}
    for method in ("LADM", "APG"):
        assert vals[method, "outlier_precision"] == vals[method, "outlier_recall"] == 1.0
        assert vals[method, "relerr_L"] < 0.2
    # lam * sqrt(t) > 1 in the groups: no outlier part at all (the lam > 1 argument)
    assert vals["DC-LADM t=4, lam*sqrt(t)", "outlier_recall"] == 0.0


def test_multilabel_run_reports_speed_and_auc_rows():
    """A small generated multi-label problem (serial groups): every method, every metric."""
    args = _args(dataset="eurlex-synthetic", groups="2", alpha=0.1, lam=1.0,
                 shape=(600, 200, 20))
    rows = robust_dc.run(args)
    methods = {r["method"] for r in rows}
    assert methods == {"APG", "LADM", "DC-LADM t=2"}
    vals = {(r["method"], r["metric"]): r["mean"] for r in rows}
    for m in methods:
        assert 0.5 < vals[m, "AUC"] <= 1.0 and vals[m, "objective"] > 0
    for key in ("speedup_vs_APG", "speedup_vs_LADM", "auc_points_vs_APG"):
        assert np.isfinite(vals["DC-LADM t=2", key])
    # the converged objective of APG is the lowest (paper-mode LADM stops early)
    assert vals["APG", "objective"] < vals["LADM", "objective"]


def test_objective_is_the_estimators():
    b = make_multilabel_tasks(n_samples=200, n_features=30, n_tasks=6, n_outliers=1,
                              mean_positives=30.0, min_positives=5,
                              random_state=np.random.default_rng(0))
    X = b.X.toarray()
    est = RobustMTLClassifier(alpha=0.05, lam=1.0, solver="fista").fit(X, b.Y)
    assert robust_dc.objective(est, X, b.Y, "squared_hinge") == pytest.approx(
        est.objective_[-1], rel=1e-6)


def test_makespan_schedules_longest_first():
    assert robust_dc.makespan([3.0, 3.0, 2.0, 2.0, 2.0], 2) == pytest.approx(7.0)
    assert robust_dc.makespan([1.0], 4) == pytest.approx(1.0)
