"""Smoke tests of benchmarks/bench_peers.py (issue 15, item 5) on small problems: the rows it
prints are made, our fits reach each accuracy, the peers' objectives are the same formula, and
the celer shim solves scikit-learn's problem. The runs of the benchmark's functions are
marked slow (their tolerance ladders and the cvxpy solves take tens of CPU seconds)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

bench_peers = pytest.importorskip("bench_peers")


def _shared_problem(seed=0, n=200, d=30, m=4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * rng.uniform(0.5, 3.0, d) + 2.0
    W = np.zeros((d, m))
    W[:5] = rng.standard_normal((5, m))
    return X, X @ W + 0.5 * rng.standard_normal((n, m)) + 1.0


@pytest.mark.slow
def test_l21_rows_reach_each_accuracy(capsys):
    X, Y = _shared_problem()
    rows = bench_peers.bench_l21("tiny", X, Y, repeats=1)
    assert [r["eps"] for r in rows] == list(bench_peers.EPSILONS)
    for row in rows:
        t, _, obj = row["ours"]
        assert np.isfinite(t) and t > 0
        assert obj <= row["p_star"] * (1 + row["eps"])
        assert np.isfinite(row["sklearn"][0])
    out = capsys.readouterr().out
    assert "ratio sklearn/ours" in out and "ratio fastest peer / ours" in out


def test_l21_objective_is_scikit_learns():
    from sklearn.linear_model import MultiTaskLasso

    X, Y = _shared_problem(1)
    est = MultiTaskLasso(alpha=0.1, tol=1e-12, max_iter=100_000).fit(X, Y)
    R = Y - est.predict(X)
    expected = np.sum(R**2) / (2 * len(X)) + 0.1 * np.sum(np.linalg.norm(est.coef_, axis=0))
    assert bench_peers.l21_objective(X, Y, est.coef_, est.intercept_, 0.1) == pytest.approx(
        expected, rel=1e-12)


def test_celer_shim_solves_scikit_learns_problem():
    pytest.importorskip("celer")
    from sklearn.linear_model import MultiTaskLasso

    X, Y = _shared_problem(2)
    ref = MultiTaskLasso(alpha=0.1, tol=1e-12, max_iter=100_000).fit(X, Y)
    ours = bench_peers.CelerMultiTaskLasso(alpha=0.1, tol=1e-12).fit(X, Y)
    np.testing.assert_allclose(ours.coef_, ref.coef_, atol=1e-7)
    np.testing.assert_allclose(ours.intercept_, ref.intercept_, atol=1e-7)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["standardized", "raw"])
def test_school_rows_and_the_default_check(kind, capsys):
    pytest.importorskip("cvxpy")
    rows = bench_peers.bench_school(4, kind, repeats=1, clarabel=False)
    default, timed = rows[0], rows[1:]
    assert default["default_ok"]
    assert [r["eps"] for r in timed] == list(bench_peers.EPSILONS)
    for row in timed:
        assert np.isfinite(row["ours"][0])
        assert row["ours"][2] <= row["p_star"] + row["eps"] * abs(row["p_star"])
    for row in timed:  # where the time goes: the parts add up to the timed fit
        b = row["breakdown"]
        assert b["fixed"] > 0 and b["eigh"] > 0 and b["allowed"] > 0
        total = b["fixed"] + (b["n_iter"] - 1) * b["per_iter"]
        assert total == pytest.approx(row["ours"][0], rel=1e-9)
    bench_peers.summary(rows)
    out = capsys.readouterr().out
    assert "ratio SCS/ours" in out and "SCS/ours =" in out and "where our time goes" in out
