"""The compiled iterations of the non-convex capped trace stages
(:func:`multitask.solvers._admm_trace_numba.truncated_admm_run`, run by
:class:`multitask.solvers.truncated_admm.TruncatedStageADMM`) against the interpreted
iteration: per-task designs with features constant within some tasks (zero rows of ``H_t``,
which the kernel decouples), a shared design, and the fallback where the kernel declines."""

import numpy as np
import pytest

from multitask.data import as_multitask_data
from multitask.losses import Squared
from multitask.penalties import TruncatedTraceNorm
from multitask.solvers.admm import EigenSystem
from multitask.solvers.truncated_admm import _Steps


def _per_task(seed=0, m=12, d=7, n=9):
    """Per-task designs; in every third task two features are constant (zero rows of
    ``H_t`` once the intercepts are eliminated), in every other task one more is zero."""
    rng = np.random.default_rng(seed)
    Xs, ys = [], []
    for t in range(m):
        X = rng.standard_normal((n, d))
        if t % 3 == 0:
            X[:, 1] = 2.0
            X[:, 4] = -1.0
        if t % 2:
            X[:, -1] = 0.0
        Xs.append(X)
        ys.append(X @ rng.standard_normal(d) + 0.3 * rng.standard_normal(n))
    data, _ = as_multitask_data(Xs, ys)
    return Squared(data, True, use_gram=True)


def _shared(seed=1, m=15, d=6, n=20):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    Y = X @ rng.standard_normal((d, m)) + 0.3 * rng.standard_normal((n, m))
    data, _ = as_multitask_data(X, Y)
    return Squared(data, False, use_gram=True)


def _steps(df, alpha, rank, compiled=True):
    H, C = df.quadratic_form()
    eig = EigenSystem(None, C, eigen=df.quadratic_eigen())
    steps = _Steps(1.6, eig, H, C, TruncatedTraceNorm(alpha, rank))
    if compiled:
        steps.compiled._spent = steps.compiled._budget  # the compiled run from the start
    else:
        steps.compiled = None
    return steps, 2.0 * eig.positive_median()


def _tall():
    """More features than tasks: the Gram matrix of the tasks' side."""
    return _per_task(seed=2, m=5, d=8, n=12)


@pytest.mark.parametrize("make, rank", [(_per_task, 1), (_per_task, 2), (_shared, 1),
                                        (_tall, 1), (_tall, 3)])
def test_compiled_run_equals_the_interpreted_iterations(make, rank):
    df = make()
    d, m = df.grad_at_zero().shape
    rng = np.random.default_rng(3)
    V0 = rng.standard_normal((d, m))
    U0 = 0.1 * rng.standard_normal((d, m))
    V_in = V0.copy()
    fast, rho = _steps(df, 0.05, rank)
    slow, _ = _steps(df, 0.05, rank, compiled=False)
    U_fast, U_slow = U0.copy(), U0.copy()
    V_fast = fast.advance(V0, U_fast, rho, 40)
    V_slow = slow.advance(V0, U_slow, rho, 40)
    scale = np.abs(V_slow).max()
    assert not np.allclose(V_slow, V0)
    np.testing.assert_allclose(V_fast, V_slow, atol=1e-10 * scale)
    np.testing.assert_allclose(U_fast, U_slow, atol=1e-10 * scale)
    np.testing.assert_array_equal(V0, V_in)  # the input is not modified


def test_zero_rows_of_H_are_decoupled():
    """The kernel stores ``(H_t + rho I)^{-1}`` only on the features each task's loss sees."""
    df = _per_task()
    steps, rho = _steps(df, 0.05, 1)
    _, M, idx, cnt, B = steps._inverses(rho)
    H, C = df.quadratic_form()
    for t in range(H.shape[0]):
        seen = np.flatnonzero(np.any(H[t] != 0.0, axis=1))
        assert cnt[t] == seen.size
        np.testing.assert_array_equal(idx[t, :cnt[t]], seen)
        inv = np.linalg.inv(H[t] + rho * np.eye(H.shape[1]))
        np.testing.assert_allclose(M[t, :cnt[t], :cnt[t]], inv[np.ix_(seen, seen)],
                                   atol=1e-12 / rho)
        np.testing.assert_allclose(B[:, t], inv @ C[:, t], atol=1e-12 * np.abs(C).max() / rho)
    assert cnt.min() < H.shape[1]  # some features are decoupled


def test_a_declined_iteration_falls_back_to_the_interpreted_one():
    """Entries beyond the band where the Gram matrix is safe: the kernel declines and the
    interpreted iteration (which rescales) runs instead; the result is that of the
    interpreted iterations."""
    df = _per_task()
    d, m = df.grad_at_zero().shape
    V0 = 1e160 * np.random.default_rng(5).standard_normal((d, m))
    fast, rho = _steps(df, 0.05, 1)
    slow, _ = _steps(df, 0.05, 1, compiled=False)
    U_fast, U_slow = np.zeros((d, m)), np.zeros((d, m))
    calls = []
    interpreted = fast.interpreted

    def counted(*args):
        calls.append(1)
        return interpreted(*args)

    fast.interpreted = counted
    V_fast = fast.advance(V0, U_fast, rho, 3)
    assert calls  # the kernel declined at least once
    V_slow = slow.advance(V0, U_slow, rho, 3)
    assert np.all(np.isfinite(V_fast))
    np.testing.assert_allclose(V_fast, V_slow, rtol=1e-12, atol=0)
