"""Memory of a multinomial fit: no dense copy of a sparse design, no per-class copy of its rows.

The full measure (10 classes, 50 tasks, 2,000 sparse features) is
``benchmarks/bench_multinomial_memory.py``; here a small version of it runs in a child
interpreter (its peak resident set size and tracemalloc's peak, each against the bytes of the
data), with a design wide enough that the working sets take the fit, and the structure of the
view the solvers read is checked in process.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import multitask as mt
from multitask.data.class_columns import ClassColumns

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from bench_multinomial_memory import make_data, measure  # noqa: E402


def test_a_multinomial_l21_fit_peaks_within_three_times_its_data():
    r = measure(n_tasks=8, n_classes=4, n_features=1300, rows=700, nnz=40)
    assert r["solver"] == "working_set" and r["converged"]
    # a dense copy of the design would be N d 8 bytes (about 25 times the data here), a copy
    # of the rows per class 4 times the data
    assert r["ratio"] <= 3.0 and r["traced_ratio"] <= 3.0, r
    assert r["solve_ratio"] <= 3.0, r


def test_the_solvers_read_the_design_itself():
    X, y, task = make_data(4, 3, 50, 30, 6)
    est = mt.L21Classifier(alpha=0.01)
    data, classes, _ = est._convert(X, y, task)
    datafit = est._make_datafit(data)
    view = datafit.data
    assert isinstance(view, ClassColumns) and view.X is data.X and sp.issparse(view.X)
    assert view.n_tasks == 4 * 3 and view.n_rows == 3 * data.n_rows
    assert view.y.strides == (0,)  # the view stores no targets
    W = np.random.default_rng(0).standard_normal((50, 12))
    assert view.matvec(W).shape == (3 * data.n_rows,)
