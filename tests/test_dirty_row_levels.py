"""The dual-ball level of the dirty rows' exact minimization (block coordinate descent's rows):
the search over the linear pieces (``s* = 1``) and Newton's steps (``s* = 2``), from any
starting guess, against the sorted scan of the breakpoints and bisection."""

import numpy as np
import pytest

from multitask.penalties.row_operators import (
    _weighted_l1_cap_level,
    _weighted_l1_cap_level_sorted,
    _weighted_l2_cap_level,
    dirty_weighted_row_min,
)


def _rows(seed: int, n: int = 400):
    """Random rows ``(z, h, c)``: ties, zero curvatures, equal curvatures among them."""
    rng = np.random.default_rng(seed)
    for trial in range(n):
        m = int(rng.integers(1, 200))
        z = rng.standard_normal(m) * rng.uniform(0.1, 5.0)
        if trial % 5 == 0:
            z[: m // 2] = z[0]
        h = rng.uniform(0.01, 5.0, m)
        if trial % 7 == 0:
            h[rng.random(m) < 0.3] = 0.0
        if trial % 11 == 0:
            h[:] = 1.0
        yield rng, z, h, float(rng.uniform(0.01, 3.0))


def _g1(z, h, a, c, lam):
    seen = h > 0
    return float(np.sum(np.clip(np.abs(z[seen]) - lam * h[seen], 0.0, c)) - a)


def _g2(z, h, a, c, lam):
    seen = h > 0
    return float(np.sum(np.minimum(np.abs(z[seen]) / (1.0 + lam * h[seen]), c) ** 2) - a * a)


def _bisect2(z, h, a, c):
    seen = h > 0
    lo, hi = 0.0, float(np.sqrt(np.sum((z[seen] / h[seen]) ** 2)) / a)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _g2(z, h, a, c, mid) > 0 else (lo, mid)
        if hi - lo <= 1e-15 * hi:
            break
    return hi


@pytest.mark.parametrize("seed", [0, 1])
def test_l1_level_from_any_guess_matches_the_sorted_scan(seed):
    """The piece search's level equals the sorted scan's to 1e-10 relative and its residual
    ``g`` is rounding (1e-12 of the row's capped mass), from 0, a random guess, the root
    itself, and a guess outside the bracket."""
    for rng, z, h, c in _rows(seed):
        inside = float(np.sum(np.minimum(np.abs(z), c)[h > 0]))
        if inside <= 0:
            continue
        a = float(rng.uniform(0.01, 0.999)) * inside
        ref = _weighted_l1_cap_level_sorted(z, h, a, c, inside)
        for guess in (0.0, float(rng.uniform(0.0, 3.0)), ref, np.inf, -1.0):
            lam = _weighted_l1_cap_level(z, h, a, c, inside, guess)
            assert lam == pytest.approx(ref, rel=1e-10, abs=1e-300)
            assert abs(_g1(z, h, a, c, lam)) <= 1e-12 * inside


@pytest.mark.parametrize("seed", [2, 3])
def test_l2_level_from_any_guess_matches_bisection(seed):
    """Newton's level equals bisection's to 1e-11 relative, on the feasible side up to
    rounding (``g <= 1e-13`` of the row's capped mass), from any guess."""
    for rng, z, h, c in _rows(seed):
        inside = float(np.sum((np.minimum(np.abs(z), c) ** 2)[h > 0]))
        if inside <= 0:
            continue
        a = float(np.sqrt(rng.uniform(0.01, 0.999) * inside))
        ref = _bisect2(z, h, a, c)
        for guess in (0.0, float(rng.uniform(0.0, 3.0)), ref, np.inf):
            lam = _weighted_l2_cap_level(z, h, a, c, guess)
            assert lam == pytest.approx(ref, rel=1e-11)
            assert _g2(z, h, a, c, lam) <= 1e-13 * inside


@pytest.mark.parametrize("group_inf", [True, False])
def test_row_minimizer_does_not_depend_on_the_guess(group_inf):
    """``dirty_weighted_row_min`` returns its level, and the same minimizer (to 1e-12 of the
    row's scale) whether its search starts cold or from another row's level."""
    out, again = None, None
    for rng, z, h, c in _rows(4, 200):
        m = z.size
        out, again = np.empty(m), np.empty(m)
        a = float(rng.uniform(0.05, 3.0))
        lam = dirty_weighted_row_min(z, h, a, c, group_inf, out)
        lam2 = dirty_weighted_row_min(z, h, a, c, group_inf, again,
                                      float(rng.uniform(0.0, 2.0)))
        assert lam >= 0.0 and lam2 == pytest.approx(lam, rel=1e-10, abs=1e-14)
        scale = max(1.0, float(np.max(np.abs(out))))
        np.testing.assert_allclose(again, out, rtol=0, atol=1e-12 * scale)
        assert np.all(out[h <= 0] == 0.0)
