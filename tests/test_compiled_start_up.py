"""The interpreted twins of compiled kernels and the rule that chooses between them
(:mod:`multitask.compiled`): the twin takes the same steps, the hand-over mid-run changes
nothing, and a fresh process that fits a small problem never sets numba's target up."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from multitask import compiled
from multitask.solvers.bcd import _bcd_epochs, _run_epochs
from multitask.solvers.bcd_twin import bcd_epochs_numpy

ROW_PARAMS = [(0.1, 0.0, 0.0), (0.0, 0.2, 0.0), (0.05, 0.1, 0.3), (0.0, 0.0, 0.5)]
NO_COUPLING = np.zeros((0, 0))


def _rows(d, a, b, c):
    """The kernel's per-row strengths ``(d, 3)`` of the elastic-net family (code 0)."""
    return np.tile(np.array([a, b, c], dtype=np.float64), (d, 1))


def _no_extrapolation(W):
    return np.empty((0, *W.shape)), np.zeros(1, dtype=np.int64)


def _kernel(H, C, W, P, a, b, c, max_epochs, tol):
    return _bcd_epochs(H, C, W, P, NO_COUPLING, NO_COUPLING, 0, _rows(W.shape[0], a, b, c),
                       0.0, *_no_extrapolation(W), max_epochs, tol)


def _twin(H, C, W, P, a, b, c, max_epochs, tol, budget):
    return bcd_epochs_numpy(H, C, W, P, NO_COUPLING, NO_COUPLING, 0,
                             _rows(W.shape[0], a, b, c), 0.0, *_no_extrapolation(W),
                             max_epochs, tol, budget)


def _run(H, C, W, P, a, b, c, max_epochs, tol):
    return _run_epochs(H, C, W, P, NO_COUPLING, NO_COUPLING, 0, _rows(W.shape[0], a, b, c),
                       0.0, *_no_extrapolation(W), max_epochs, tol)


def _problem(shared: bool, seed: int, zero_feature: bool = False):
    rng = np.random.default_rng(seed)
    d, m, n = 12, 5, 30
    X = rng.standard_normal((1 if shared else m, n, d))
    H = np.einsum("tni,tnj->tij", X, X) / n
    if zero_feature:  # a feature constant within one task: H_t[j, j] = 0
        H[-1, 3, :] = 0.0
        H[-1, :, 3] = 0.0
    C = rng.standard_normal((d, m))
    return H, C, np.zeros((d, m)), np.zeros((d, m))


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("params", ROW_PARAMS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_numpy_twin_takes_the_compiled_kernels_steps(shared, params, seed):
    a, b, c = params
    H, C, W1, P1 = _problem(shared, seed, zero_feature=not shared)
    W2, P2 = W1.copy(), P1.copy()
    for max_epochs, tol in ((3, 1e-12), (200, 1e-9)):  # stopped by the cap, then by tol
        k1, done1 = _kernel(H, C, W1, P1, a, b, c, max_epochs, tol)
        k2, done2, spent = _twin(H, C, W2, P2, a, b, c, max_epochs, tol, 60.0)
        assert (int(k1), bool(done1)) == (k2, done2)
        assert spent > 0
        # the same updates; only the order of one sum of squares differs
        np.testing.assert_allclose(W2, W1, rtol=0, atol=1e-12 * max(1.0, np.abs(W1).max()))
        np.testing.assert_allclose(P2, P1, rtol=0, atol=1e-12 * max(1.0, np.abs(P1).max()))
    assert np.abs(W1).max() > 0  # the problems are not trivially zero


def test_hand_over_mid_run_changes_nothing(monkeypatch):
    H, C, W1, P1 = _problem(True, 3)
    W2, P2 = W1.copy(), P1.copy()
    k1, done1 = _kernel(H, C, W1, P1, 0.0, 0.05, 0.0, 500, 1e-10)
    # a budget of a few epochs of the twin: the compiled kernel finishes the run
    monkeypatch.setattr(compiled, "is_set_up", lambda: False)
    left = 3e-4
    monkeypatch.setattr(compiled, "_spent", compiled.START_UP_SECONDS - left)
    k2, done2 = _run(H, C, W2, P2, 0.0, 0.05, 0.0, 500, 1e-10)
    assert compiled._spent >= compiled.START_UP_SECONDS  # the twin ran until it was spent
    assert (int(k1), bool(done1)) == (k2, done2)
    assert k2 > 1
    np.testing.assert_allclose(W2, W1, rtol=0, atol=1e-12)


def test_twin_skipped_when_one_epoch_would_exceed_the_budget(monkeypatch):
    """A problem whose single twin epoch would cost more than the start-up left goes to the
    compiled kernel at once (nothing charged)."""
    H, C, W, P = _problem(True, 4)
    monkeypatch.setattr(compiled, "is_set_up", lambda: False)
    monkeypatch.setattr(compiled, "_spent", compiled.START_UP_SECONDS - 1e-6)
    _run(H, C, W, P, 0.0, 0.05, 0.0, 50, 1e-8)
    assert compiled._spent == compiled.START_UP_SECONDS - 1e-6


def test_no_interpreted_budget_once_numba_is_set_up(monkeypatch):
    monkeypatch.setattr(compiled, "_spent", 0.0)
    monkeypatch.setattr(compiled, "is_set_up", lambda: True)
    assert compiled.interpreted_budget() == 0.0
    monkeypatch.setattr(compiled, "is_set_up", lambda: False)
    assert compiled.interpreted_budget() == compiled.START_UP_SECONDS
    compiled.charge_interpreted(compiled.START_UP_SECONDS / 2)
    assert compiled.interpreted_budget() == pytest.approx(compiled.START_UP_SECONDS / 2)
    compiled.charge_interpreted(compiled.START_UP_SECONDS)
    assert compiled.interpreted_budget() == 0.0


FRESH = r"""
import json
import numpy as np
from multitask import L21Regressor, compiled
rng = np.random.default_rng(0)
X = rng.standard_normal((200, 15))
Y = X[:, :4] @ rng.standard_normal((4, 3)) + 0.1 * rng.standard_normal((200, 3))
first = L21Regressor(alpha=0.05).fit(X, Y)
before = compiled.is_set_up()
compiled.set_up()
after = compiled.is_set_up()
second = L21Regressor(alpha=0.05).fit(X, Y)
print(json.dumps({"before": before, "after": after, "spent": compiled._spent,
                  "diff": float(np.abs(first.coef_ - second.coef_).max()),
                  "scale": float(np.abs(second.coef_).max()),
                  "iters": [int(first.n_iter_), int(second.n_iter_)]}))
"""


def test_a_small_first_fit_leaves_numba_unset_and_gives_the_compiled_result():
    out = subprocess.run([sys.executable, "-c", FRESH], check=True, capture_output=True,
                         text=True).stdout
    r = json.loads(out)
    assert r["before"] is False  # the first fit ran the numpy twin only
    assert 0 < r["spent"] < compiled.START_UP_SECONDS
    assert r["after"] is True  # and set_up() is detected
    assert r["iters"][0] == r["iters"][1]
    assert r["scale"] > 0 and r["diff"] <= 1e-10 * r["scale"]
