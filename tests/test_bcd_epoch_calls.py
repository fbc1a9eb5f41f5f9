"""Block coordinate descent's compiled epochs in calls of bounded work
(:func:`multitask.solvers.bcd._run_epochs`, :data:`~multitask.solvers.bcd.EPOCH_CALL_WORK`):
a long run split into several calls takes the same steps as one call, and Python gets
control back between the calls (an interrupt is not held for the whole run)."""

from __future__ import annotations

import numpy as np
import pytest

from multitask import compiled
from multitask.solvers import bcd

NO_COUPLING = np.zeros((0, 0))


def _problem(seed: int = 0, d: int = 12, m: int = 6, n: int = 30):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n, d))
    X[:, :, 1] = X[:, :, 0] + 0.05 * X[:, :, 1]  # correlated features: many epochs
    H = np.einsum("tni,tnj->tij", X, X) / n
    C = rng.standard_normal((d, m))
    params = np.tile(np.array([0.02, 0.05, 0.0]), (d, 1))
    return H, C, params


def _run(H, C, params, max_epochs, tol, anderson=5):
    d, m = C.shape
    W, P = np.zeros((d, m)), np.zeros((d, m))
    hist = np.zeros((anderson + 1, d, m))
    n_hist = np.zeros(1, dtype=np.int64)
    done, converged = bcd._run_epochs(H, C, W, P, NO_COUPLING, NO_COUPLING, 0, params, 0.0,
                                      hist, n_hist, max_epochs, tol)
    return W, done, converged


@pytest.fixture
def compiled_only(monkeypatch):
    """The compiled kernel from the first epoch (no interpreted twin)."""
    monkeypatch.setattr(compiled, "interpreted_budget", lambda: 0.0)
    monkeypatch.setattr(bcd, "interpreted_budget", lambda: 0.0)


@pytest.mark.parametrize("per_call", [1, 3, 7])
def test_split_calls_take_the_steps_of_one_call(monkeypatch, compiled_only, per_call):
    H, C, params = _problem()
    d, m = C.shape
    for max_epochs, tol in ((40, 0.0), (5000, 1e-10)):  # stopped by the cap, then by tol
        W1, done1, conv1 = _run(H, C, params, max_epochs, tol)
        calls = []
        kernel = bcd._bcd_epochs

        def counted(*args, kernel=kernel, calls=calls):
            calls.append(args[-2])
            return kernel(*args)

        monkeypatch.setattr(bcd, "_bcd_epochs", counted)
        monkeypatch.setattr(bcd, "EPOCH_CALL_WORK", per_call * d * m * d)
        W2, done2, conv2 = _run(H, C, params, max_epochs, tol)
        monkeypatch.setattr(bcd, "_bcd_epochs", kernel)
        assert (done2, conv2) == (done1, conv1)
        np.testing.assert_array_equal(W2, W1)  # the Anderson state is carried between calls
        assert max(calls) <= per_call and len(calls) >= done1 // per_call
    assert conv1 and done1 > 20


def test_an_interrupt_between_calls_stops_the_run(monkeypatch, compiled_only):
    """What a signal handler raises when Python gets control back (here raised by the second
    call's wrapper) ends the run there, not after the whole budget of epochs."""
    H, C, params = _problem()
    d, m = C.shape
    kernel = bcd._bcd_epochs
    calls = []

    def interrupted(*args):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return kernel(*args)

    monkeypatch.setattr(bcd, "_bcd_epochs", interrupted)
    monkeypatch.setattr(bcd, "EPOCH_CALL_WORK", 2 * d * m * d)
    with pytest.raises(KeyboardInterrupt):
        _run(H, C, params, 10_000, 0.0)
    assert len(calls) == 2


def test_epochs_per_call():
    """About 1e9 multiply-adds a call: School's shape in one call for thousands of epochs, the
    dirty model's 1,000 x 300 a few epochs a call, a task coupling in one call."""
    assert bcd._epochs_per_call(np.zeros((28, 139)), NO_COUPLING) >= 5000
    assert 1 <= bcd._epochs_per_call(np.zeros((300, 1000)), NO_COUPLING) <= 20
    assert bcd._epochs_per_call(np.zeros((300, 100_000)), NO_COUPLING) == 1
    assert bcd._epochs_per_call(np.zeros((28, 139)), np.eye(139)) > 10**9
