"""The scores of a cross-validation without per-task Python loops: the pooled nMSE and MSE
from one pass over the rows, the per-task split from one sort, equal to the per-task
computations they replace."""

from __future__ import annotations

import numpy as np
import pytest

from multitask.metrics import mse, nmse
from multitask.metrics._layouts import per_task


def _by_masks(yt, yp, task):
    return [(yt[task == t], yp[task == t]) for t in np.unique(task)]


def _pooled_by_task(pairs):
    allv = np.concatenate([a for a, _ in pairs])
    sse = sum(float(np.sum((a - b) ** 2)) for a, b in pairs)
    return sse / len(allv), sse / len(allv) / float(np.var(allv))


@pytest.mark.parametrize("kind", ["int", "float", "str", "object", "negative_zero"])
def test_per_task_split_equals_the_masks(kind):
    rng = np.random.default_rng(0)
    n = 500
    codes = rng.integers(0, 13, n)
    task = {"int": codes, "float": codes * 0.5, "str": codes.astype(str),
            "object": codes.astype(str).astype(object),
            "negative_zero": np.where(codes == 0, -0.0, codes.astype(float))}[kind]
    yt, yp = rng.standard_normal(n), rng.standard_normal(n)
    got = per_task(yt, yp, task)
    want = _by_masks(yt, yp, task)
    assert len(got) == len(want)
    for (a, b), (c, d) in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)


def test_per_task_split_keeps_its_errors():
    yt, yp = np.arange(4.0), np.arange(4.0)
    with pytest.raises(ValueError, match="no rows"):  # a NaN id selects no row
        per_task(yt, yp, np.array([0.0, np.nan, 1.0, 1.0]))
    with pytest.raises(ValueError, match="entries"):
        per_task(yt, yp, np.zeros(3))
    assert per_task(np.zeros(0), np.zeros(0), np.zeros(0)) == []


@pytest.mark.parametrize("layout", ["long", "shared", "single"])
def test_pooled_figures_equal_the_per_task_sums(layout):
    rng = np.random.default_rng(1)
    if layout == "long":
        task = rng.integers(0, 40, 3000)
        yt = 100.0 + 10.0 * rng.standard_normal(3000)
        yp = yt + rng.standard_normal(3000)
        pairs = _by_masks(yt, yp, task)
    elif layout == "shared":
        task = None
        yt = 5.0 + rng.standard_normal((8, 190))
        yp = yt + 0.3 * rng.standard_normal((8, 190))
        pairs = [(yt[:, t], yp[:, t]) for t in range(190)]
    else:
        task = None
        yt = rng.standard_normal(50)
        yp = yt + rng.standard_normal(50)
        pairs = [(yt, yp)]
    want_mse, want_nmse = _pooled_by_task(pairs)
    np.testing.assert_allclose(mse(yt, yp, task), want_mse, rtol=1e-13)
    np.testing.assert_allclose(nmse(yt, yp, task), want_nmse, rtol=1e-13)
    # the lists of the same tasks go through the per-task sums
    lists = ([a for a, _ in pairs], [b for _, b in pairs])
    np.testing.assert_allclose(nmse(*lists), want_nmse, rtol=1e-13)


def test_pooled_figures_keep_their_errors():
    with pytest.raises(ValueError, match="constant"):
        nmse(np.ones(5), np.zeros(5), np.arange(5) % 2)
    with pytest.raises(ValueError, match="no rows"):
        nmse(np.arange(3.0), np.zeros(3), np.array([0.0, np.nan, 1.0]))
    with pytest.raises(ValueError, match="shape"):
        nmse(np.arange(3.0), np.zeros(4))
    with pytest.raises(ValueError, match="no rows"):
        mse(np.zeros((0, 3)), np.zeros((0, 3)))
