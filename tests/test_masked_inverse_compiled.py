"""The compiled rank-one support updates (``multitask.solvers._masked_inverse_numba``) against
their numpy twins (``multitask.solvers.masked_inverse``) and against inverses computed afresh:
the same blocks to rounding, the same declined pivots, the other blocks untouched."""

from __future__ import annotations

import numpy as np
import pytest

from multitask.solvers._masked_inverse_numba import add_feature_kernel, drop_feature_kernel
from multitask.solvers.masked_inverse import (
    MIN_PIVOT,
    _add_feature_numpy,
    _drop_feature_numpy,
    masked_inverses_exact,
)


def _blocks(rng, n, d):
    A = rng.standard_normal((n, d, d + 3))
    return A @ A.transpose(0, 2, 1) + 0.1 * np.eye(d)


def _supports(rng, n, d):
    mask = rng.random((n, d)) < 0.6
    mask[:, 0] = True
    return mask


@pytest.mark.parametrize("seed", range(5))
def test_the_kernels_are_the_numpy_twins_and_the_exact_inverses(seed):
    rng = np.random.default_rng(seed)
    n, d = 7, 9
    A = _blocks(rng, n, d)
    mask = _supports(rng, n, d)
    M0, exact = masked_inverses_exact(A, mask)
    assert exact.all()
    which = np.array([0, 2, 3, 5, 6])
    # add a feature off each selected support
    k = np.array([int(np.flatnonzero(~mask[w])[0]) if (~mask[w]).any() else 0 for w in which])
    keep = np.array([(~mask[w]).any() for w in which])
    which, k = which[keep], k[keep]
    cols = A[which, :, k].copy()
    Mn, Mk = M0.copy(), M0.copy()
    ok_n = _add_feature_numpy(Mn, which, k, cols, mask[which])
    ok_k = add_feature_kernel(Mk, which, k, cols, mask[which].copy(), MIN_PIVOT)
    np.testing.assert_array_equal(ok_n, ok_k)
    np.testing.assert_allclose(Mk, Mn, rtol=1e-10, atol=1e-12 * np.abs(Mn).max())
    grown = mask.copy()
    grown[which[ok_k], k[ok_k]] = True
    np.testing.assert_allclose(Mk, masked_inverses_exact(A, grown)[0], rtol=1e-8,
                               atol=1e-10 * np.abs(Mk).max())
    # then drop the first feature of each support
    k0 = np.zeros_like(which)
    diag = A[which, 0, 0]
    Dn, Dk = Mk.copy(), Mk.copy()
    ok_n = _drop_feature_numpy(Dn, which, k0, diag)
    ok_k = drop_feature_kernel(Dk, which, k0, diag, MIN_PIVOT)
    np.testing.assert_array_equal(ok_n, ok_k)
    np.testing.assert_allclose(Dk, Dn, rtol=1e-10, atol=1e-12 * np.abs(Dn).max())
    shrunk = grown.copy()
    shrunk[which[ok_k], 0] = False
    np.testing.assert_allclose(Dk, masked_inverses_exact(A, shrunk)[0], rtol=1e-8,
                               atol=1e-10 * np.abs(Dk).max())
    untouched = np.setdiff1d(np.arange(n), which)
    np.testing.assert_array_equal(Dk[untouched], M0[untouched])


def test_a_failing_pivot_leaves_the_block_as_it_was():
    rng = np.random.default_rng(9)
    A = _blocks(rng, 3, 5)
    mask = np.ones((3, 5), dtype=bool)
    mask[:, 4] = False
    M = masked_inverses_exact(A, mask)[0]
    cols = A[[0, 1], :, 4].copy()
    cols[0, 4] = 0.0  # no curvature: the pivot fails
    before = M.copy()
    ok = add_feature_kernel(M, np.array([0, 1]), np.array([4, 4]), cols, mask[[0, 1]].copy(),
                            MIN_PIVOT)
    assert not ok[0] and ok[1]
    np.testing.assert_array_equal(M[0], before[0])
    np.testing.assert_array_equal(M[2], before[2])
