"""The iteration record every looping solver runs in (multitask.solvers.iteration).

* The certificate schedule: periodic certificates (fixed, or predicted from the measure's
  rate), early ones when the solver's own criterion is met (with a gap after the last one),
  and the first of each.
* The record: the requirement check, the history and times, the best iterate (strictly
  lower objectives only), the callback protocol, the certificate kept and counted by the
  schedule, the result with the run's history and the convergence warning.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from multitask.data import as_multitask_data
from multitask.losses import Hinge, Squared
from multitask.penalties import L21
from multitask.solvers import ProximalGradient, QuadraticADMM
from multitask.solvers.iteration import CertificateSchedule, IterationRecord, predicted_period


def _due(schedule: CertificateSchedule, n: int, small=lambda k: False, measure=1.0,
         tol=1e-4) -> list[int]:
    """The iterations up to ``n`` at which ``schedule`` certifies (each counted as done)."""
    out = []
    for k in range(1, n + 1):
        if schedule.due(k, small(k)):
            out.append(k)
            schedule.done(k, measure, tol)
    return out


def test_every_iteration_by_default():
    assert _due(CertificateSchedule(), 5) == [1, 2, 3, 4, 5]


def test_a_fixed_period_counts_from_the_last_certificate():
    assert _due(CertificateSchedule(period=4), 13) == [4, 8, 12]
    assert _due(CertificateSchedule(period=4, first=1), 13) == [1, 5, 9, 13]
    # an early certificate moves the next periodic one
    s = CertificateSchedule(period=4)
    assert _due(s, 12, small=lambda k: k == 6) == [4, 6, 10]


def test_early_certificates_keep_their_gap():
    # ADMM's rule: every 10, and every 2 while its residuals are small, the first at 2
    s = CertificateSchedule(period=10, early_gap=2, early_start=2)
    assert _due(s, 9, small=lambda k: True) == [2, 4, 6, 8]
    assert _due(CertificateSchedule(period=10, early_gap=2, early_start=2), 25,
                small=lambda k: False) == [10, 20]
    # a gap growing with the iteration: max(5, k // 10) after the last certificate
    s = CertificateSchedule(period=None, early_gap=5, early_fraction=10)
    assert _due(s, 200, small=lambda k: True) == [1, 6, 11, 16, 21, 26, 31, 36, 41, 46, 51,
                                                  56, 61, 67, 73, 80, 88, 96, 105, 115, 126,
                                                  138, 151, 166, 182, 200]
    # no period: never without the criterion
    assert _due(CertificateSchedule(period=None), 50) == []


def test_the_predicted_period_follows_the_rate():
    # first iterations: k // 2, capped by the period
    assert predicted_period(1, 1.0, 1e-4, 10) == 1
    assert predicted_period(6, 1e-4 * 5, 1e-4, 10) == 3
    # far from tol without a rate: k // 20
    assert predicted_period(400, 1.0, 1e-4, 10) == 20
    # the rate predicts ln(m / tol) / rho iterations: 80% of them, at most k // 10
    need = np.log(1e-2 / 1e-4) / (np.log(1e-1 / 1e-2) / 100)
    assert predicted_period(200, 1e-2, 1e-4, 10, (100, 1e-1)) == int(min(0.8 * need, 20))
    assert predicted_period(2000, 1e-2, 1e-4, 10, (1900, 1e-1)) == int(0.8 * need)
    # a measure that did not fall gives no rate
    assert predicted_period(200, 1e-2, 1e-4, 10, (100, 1e-3)) == 10


def test_an_adaptive_schedule_uses_the_prediction():
    s = CertificateSchedule(period=10, first=1, adaptive=True)
    assert s.due(1)
    s.done(1, 1.0, 1e-4)
    assert not s.due(1) and s.due(2)  # k // 2 = 0 -> 1 iteration
    s.done(40, 1.0, 1e-4)
    assert not s.due(49) and s.due(50)


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    Xs = [rng.standard_normal((20, 4)) for _ in range(3)]
    ys = [X @ rng.standard_normal(4) + 0.1 * rng.standard_normal(20) for X in Xs]
    data = as_multitask_data(Xs, ys)[0]
    df = Squared(data, fit_intercept=True)
    return df, L21(0.1 * L21(1.0).alpha_max(df.grad_at_zero()))


def test_the_record_checks_the_solver_requirements(problem):
    df, pen = problem
    with pytest.raises(ValueError, match="cannot solve this model"):
        IterationRecord(QuadraticADMM(), Hinge(as_multitask_data(
            [np.eye(3)], [np.array([0, 1, 1])], classification=True)[0]), pen)


def test_history_best_callback_and_certificate(problem):
    df, pen = problem
    seen = []

    def callback(k, F, V, b):
        seen.append((k, F))
        return k >= 2

    run = IterationRecord(ProximalGradient(tol=1e-6, max_iter=10), df, pen, callback,
                          CertificateSchedule(period=3))
    V, b = run.start()
    assert V.shape == (4, 3) and b is None and not np.any(V)  # the squared loss centres
    assert run.offer(5.0, V, b) and not run.offer(5.0, V + 1, b) and run.best.objective == 5.0
    assert run.best.V is V
    assert run.offer(4.0, V + 1, b) and run.best.objective == 4.0
    run.keep(7.0, V, b)
    assert run.best.objective == 7.0
    run.record(3.0)
    run.record(2.0)
    assert run.history == [3.0, 2.0] and len(run.times) == 2
    assert run.times[0] <= run.times[1]
    assert not run.notify(1, 3.0, V, b) and not run.stop_requested
    assert run.notify(2, 2.0, V, b) and run.stop_requested and run.stopped_by == "callback"
    assert seen == [(1, 3.0), (2, 2.0)]
    assert not run.due(2) and run.due(3)
    gap = run.certify(3, V, b, target=1e-6)
    assert gap == run.measure and run.certificate is not None
    assert gap == pytest.approx(run.certificate.relative_gap) and gap > 0.5  # at zero
    assert not run.due(5) and run.due(6)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = run.finish(V, b, n_iter=10, converged=False, measure=gap)
    assert res.n_iter == 10 and not res.converged
    assert list(res.objective) == [3.0, 2.0] and len(res.times) == 2
    assert res.info["solver"] == "fista" and res.info["certified"]
    warned = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(warned) == 1 and "'fista' did not converge" in str(warned[0].message)


def test_a_solver_run_stops_where_its_callback_says(problem):
    df, pen = problem
    calls = []
    res = ProximalGradient(tol=1e-12).solve(
        df, pen, callback=lambda k, F, V, b: calls.append(k) or k == 4)
    assert calls == [1, 2, 3, 4] and res.n_iter == 4 and res.info["stopped_by"] == "callback"
    assert len(res.objective) == 4


def test_the_warning_points_at_the_code_calling_the_solver(problem):
    df, pen = problem
    for solver in (ProximalGradient(tol=1e-12, max_iter=3), QuadraticADMM(tol=1e-12, max_iter=3)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            solver.solve(df, pen)
        warned = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
        assert len(warned) == 1 and warned[0].filename == __file__, warned


def _solver_runs():
    """``(name, solver, datafit, penalty)``: every looping solver on a small problem it
    applies to (the distributed one runs on a cluster: tests/test_distributed.py)."""
    from multitask.losses import Logistic
    from multitask.penalties import L1, CappedL1, L1InfBall, LowRankOutlier, SparseLowRank
    from multitask.solvers import (
        BlockCoordinateDescent,
        DivideAndConquer,
        LinearizedADMM,
        LinearProgram,
        MajorizedADMM,
        Multistage,
        NewtonADMM,
        ProjectedSubgradient,
        ProxNewton,
        ResidualCoordinateDescent,
        WorkingSet,
    )

    rng = np.random.default_rng(1)
    Xs = [rng.standard_normal((25, 5)) for _ in range(4)]
    ys = [X @ rng.standard_normal(5) + 0.1 * rng.standard_normal(25) for X in Xs]
    sq = Squared(as_multitask_data(Xs, ys)[0], fit_intercept=True)
    sq0 = Squared(as_multitask_data(Xs, ys)[0], fit_intercept=False)
    cls = as_multitask_data(Xs, [(y > 0).astype(int) for y in ys], classification=True)[0]
    lo, hi = Logistic(cls, fit_intercept=True), Hinge(cls, fit_intercept=True)
    a = L21(1.0).alpha_max(sq.grad_at_zero())
    al = L21(1.0).alpha_max(lo.grad_at_zero())
    tight = {"tol": 1e-12}
    return [
        ("fista", ProximalGradient(**tight), sq, L21(0.1 * a)),
        ("admm", QuadraticADMM(**tight), sq, L21(0.1 * a)),
        ("bcd", BlockCoordinateDescent(**tight), sq, L21(0.01 * a)),
        ("cd", ResidualCoordinateDescent(tol=1e-15), sq, L1(0.01 * a)),
        ("ladm", LinearizedADMM(**tight), sq0, LowRankOutlier(0.1 * a, 0.8)),
        ("mm", MajorizedADMM(**tight), lo, L21(0.1 * al)),
        ("newton", ProxNewton(**tight), lo, L21(0.01 * al)),
        ("newton_admm", NewtonADMM(**tight), lo, SparseLowRank(0.05 * al, 2.0)),
        ("subgradient", ProjectedSubgradient(max_iter=50), hi, L1InfBall(1.0)),
        ("multistage", Multistage(**tight), sq, CappedL1(0.05 * a, 0.2)),
        ("working_set", WorkingSet(**tight), sq, L21(0.01 * a)),
        ("divide_conquer", DivideAndConquer(ProximalGradient(**tight), n_groups=2,
                                            combine="refine", random_state=0),
         sq0, LowRankOutlier(0.1 * a, 0.8)),
        ("lp", LinearProgram(), hi, L1InfBall(1.0)),
    ]


@pytest.mark.parametrize("run", _solver_runs(), ids=lambda r: r[0])
def test_every_looping_solver_runs_in_the_record(run, monkeypatch):
    name, solver, datafit, penalty = run
    records = []
    original = IterationRecord.finish

    def finish(self, *args, **kwargs):
        records.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(IterationRecord, "finish", finish)
    calls = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = solver.solve(datafit, penalty,
                           callback=lambda k, F, V, b: calls.append((k, F)) or True)
    # one record made the result: its history is the result's objective
    assert records and np.array_equal(records[-1].history, res.objective)
    assert len(res.times) == len(res.objective)
    if name == "lp":  # no iterations to report
        assert calls == [] and len(res.objective) == 1
    elif calls:
        # the callback's True stopped the run at its first call, on the last objective
        assert len(calls) == 1 and calls[0][1] == records[-1].history[-1]
        assert records[-1].stop_requested
    else:  # converged before the first call
        assert res.converged
