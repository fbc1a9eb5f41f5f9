"""Hardening of the data layer: malformed sparse structure, dtypes, extreme scales, degenerate
data and task ids (issue "Hardening": every finding that lives in :mod:`multitask.data`).

Malformed sparse matrices used to crash the interpreter inside compiled code, so the cases that
feed them to compiled code run in one child interpreter (:func:`run_isolated`); a crash there
fails the test instead of ending the test run.
"""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

from multitask import L21Regressor, TraceNormClassifier, TraceNormRegressor
from multitask.data import (
    MAX_ABS_VALUE,
    MIN_MAX_ABS_VALUE,
    as_multitask_data,
    as_task_ids,
    check_sparse_structure,
    check_task_column,
)


def run_isolated(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (a crash or a hang there cannot end this one)."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout)


def _data(seed=0, n=30, d=5):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < 0.4] = 0.0
    return X, rng.standard_normal(n), np.repeat([0, 1, 2], n // 3)


# ----------------------------------------------------------------------------- sparse structure
#: name -> (code that breaks ``S``, a CSR matrix of ``X``; words the error must contain)
MALFORMED = {
    "csr column out of range": ("S.indices[3] = 1000", ["column index 1000", "out of range"]),
    "csr negative column": ("S.indices[3] = -2", ["negative column index -2"]),
    "csr indptr decreasing": ("S.indptr[5] = S.indptr[6] + 7", ["indptr decreases at row 5"]),
    "csr indptr past the end": ("S.indptr[-1] += 50", ["indptr", "stored entries"]),
    "csr indptr not from 0": ("S.indptr[0] = 1", ["indptr must start at 0"]),
    "csc row out of range": ("S = S.tocsc(); S.indices[2] = 10**7", ["row index 10000000"]),
    "csc indptr decreasing": ("S = S.tocsc(); S.indptr[2] = S.indptr[3] + 5",
                              ["indptr decreases at column 2"]),
    "coo row out of range": ("S = S.tocoo(); S.row[2] = 10**7", ["row index 10000000"]),
    "coo negative column": ("S = S.tocoo(); S.col[1] = -3", ["column index -3"]),
    "lil column out of range": ("S = S.tolil(); S.rows[0].append(99); S.data[0].append(1.0)",
                                ["column index 99"]),
}

_MALFORMED_SCRIPT = """
import json, sys, warnings
import numpy as np, scipy.sparse as sp
warnings.simplefilter("ignore")
from multitask import L21Regressor
from multitask.data import as_multitask_data
rng = np.random.default_rng(0)
X = rng.standard_normal((30, 5)); X[rng.random((30, 5)) < 0.4] = 0.0
y = rng.standard_normal(30); task = np.repeat([0, 1, 2], 10)
for name, code in json.loads(sys.argv[1]).items():
    for how in ("data", "fit"):
        S = sp.csr_matrix(X)
        exec(code)
        print(json.dumps([name, how, "start"]), flush=True)
        try:
            if how == "data":
                as_multitask_data(S, y, task)
            elif S.format == "csr":  # other formats are converted by scikit-learn first
                L21Regressor(max_iter=50).fit(S, y, task)
            out = "accepted"
        except ValueError as exc:
            out = "ValueError: " + str(exc)
        except Exception as exc:
            out = "other " + type(exc).__name__ + ": " + str(exc)
        print(json.dumps([name, how, out]), flush=True)
"""


@pytest.fixture(scope="module")
def malformed_outcomes():
    """Every malformed case through the data layer and a fit, in one child interpreter."""
    code = {name: c for name, (c, _) in MALFORMED.items()}
    proc = subprocess.run([sys.executable, "-c", _MALFORMED_SCRIPT, json.dumps(code)],
                          capture_output=True, text=True, timeout=300)
    out = {}
    for line in proc.stdout.splitlines():
        name, how, result = json.loads(line)
        out[name, how] = result
    for key, result in out.items():
        if result == "start":  # the child died inside this case
            out[key] = f"interpreter crashed (exit status {proc.returncode})"
    return out


@pytest.mark.parametrize("how", ["data", "fit"])
@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_sparse_structure_is_a_clear_error_not_a_crash(malformed_outcomes, case, how):
    """Indices out of range, negative indices and a broken indptr: a ValueError naming the
    problem, before any compiled code reads the arrays (it used to crash or wrap around)."""
    result = malformed_outcomes.get((case, how), "no result: the child died before this case")
    if how == "fit" and case.split()[0] != "csr" and result == "accepted":
        return  # not fitted: scikit-learn converts other formats before the data layer
    assert result.startswith("ValueError: X (sparse "), result
    for needle in MALFORMED[case][1]:
        assert needle in result, (needle, result)


def test_unsorted_and_duplicate_entries_mean_their_sum_and_stay_untouched():
    X, y, task = _data()
    S = sp.csr_matrix(X)
    # each row stored backwards, and its first entry split in two halves (a duplicate)
    data, indices, indptr = [], [], [0]
    for i in range(S.shape[0]):
        a, b = S.indptr[i], S.indptr[i + 1]
        cols, vals = list(S.indices[a:b][::-1]), list(S.data[a:b][::-1])
        if cols:
            cols.append(cols[0])
            vals[0] /= 2
            vals.append(vals[0])
        indices += cols
        data += vals
        indptr.append(len(indices))
    U = sp.csr_matrix((np.array(data), np.array(indices), np.array(indptr)), shape=S.shape)
    saved = (U.data.copy(), U.indices.copy(), U.indptr.copy())
    C = check_sparse_structure(U)
    assert C.has_canonical_format and C.nnz == S.nnz
    np.testing.assert_allclose(C.toarray(), X, atol=1e-15)
    for a, b in zip(saved, (U.data, U.indices, U.indptr), strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.shares_memory(C.data, U.data) and not np.shares_memory(C.indices, U.indices)
    dense = L21Regressor(alpha=0.05).fit(X, y, task)
    sparse = L21Regressor(alpha=0.05).fit(U, y, task)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, atol=1e-10)


# ----------------------------------------------------------------------------- dtypes
def _fit(kind):
    X, y, task = _data()
    Xs, ys = [X[:10], X[10:]], [y[:10], y[10:]]
    cases = {
        "complex X in lists": lambda: L21Regressor().fit([Xs[0] + 1j, Xs[1]], ys),
        "complex sparse X": lambda: as_multitask_data(sp.csr_matrix(X + 0j), y, task),
        "complex y": lambda: L21Regressor().fit(X, y + 1j, task),
        "object y": lambda: L21Regressor().fit(X, np.r_[y[:-1], None].astype(object), task),
        "text y": lambda: L21Regressor().fit(X, y.astype(str), task),
        "object X in lists": lambda: L21Regressor().fit([Xs[0].astype(object) + 1j, Xs[1]],
                                                        ys),
        "datetime X in lists": lambda: L21Regressor().fit(
            [np.zeros((10, 2), dtype="datetime64[s]"), Xs[1][:, :2]], ys),
        "complex y in lists": lambda: L21Regressor().fit(Xs, [ys[0] + 1j, ys[1]]),
    }
    return cases[kind]


@pytest.mark.parametrize("kind", ["complex X in lists", "complex sparse X", "complex y",
                                  "object y", "text y", "object X in lists",
                                  "datetime X in lists", "complex y in lists"])
def test_non_real_dtypes_are_refused_by_name(kind):
    """Complex values used to lose their imaginary part silently; objects and text were parsed.
    Complex numbers inside an object array get the message of every complex input."""
    expected = {"complex": "holds complex numbers \\(complex dtype",
                "object": "object dtype and holds None|holds complex numbers \\(object dtype",
                "text": "text dtype", "datetime": "datetime dtype"}[kind.split()[0]]
    with pytest.raises(ValueError, match=expected):
        _fit(kind)()


def test_real_dtypes_are_accepted_and_agree():
    X, y, task = _data()
    Xi = np.round(X * 4).astype(np.int32)
    ref = L21Regressor(alpha=0.05).fit(Xi.astype(np.float64), y, task)
    for A in (Xi, Xi.astype(np.float32), sp.csr_matrix(Xi), [Xi[:10], Xi[10:20], Xi[20:]]):
        if isinstance(A, list):
            est = L21Regressor(alpha=0.05).fit(A, [y[:10], y[10:20], y[20:]])
        else:
            est = L21Regressor(alpha=0.05).fit(A, y, task)
        np.testing.assert_allclose(est.coef_, ref.coef_, atol=1e-12)
    est = L21Regressor(alpha=0.05).fit(Xi > 0, y, task)  # booleans are 0/1 features
    assert np.all(np.isfinite(est.coef_))
    # object arrays holding only real numbers are numbers (scikit-learn's convention)
    est = L21Regressor(alpha=0.05).fit([Xi[:10].astype(object), Xi[10:]],
                                       [y[:10].astype(object), y[10:]])
    ref = L21Regressor(alpha=0.05).fit([Xi[:10], Xi[10:]], [y[:10], y[10:]])
    np.testing.assert_array_equal(est.coef_, ref.coef_)


# ----------------------------------------------------------------------------- scales
@pytest.mark.parametrize("what", ["X", "y", "X lists", "X sparse"])
def test_extreme_finite_scales_get_a_clear_error_before_any_solver(what):
    """Features or targets near 1e200 used to give NaN coefficients or LAPACK errors."""
    X, y, task = _data()
    with pytest.raises(ValueError, match=r"magnitude .*e\+200.*rescale"):
        if what == "X":
            TraceNormRegressor().fit(X * 1e200, y, task)
        elif what == "y":
            TraceNormRegressor().fit(X, y * 1e200, task)
        elif what == "X lists":
            TraceNormRegressor().fit([X[:15], X[15:] * 1e200], [y[:15], y[15:]])
        else:
            TraceNormRegressor().fit(sp.csr_matrix(X * 1e200), y, task)


def test_the_scale_bounds_are_inclusive_and_tiny_scales_are_refused():
    X, y, task = _data()
    Xb = X / np.abs(X).max() * MAX_ABS_VALUE
    data, _ = as_multitask_data(Xb, y * 1e-90, task)  # at the bound: accepted
    assert np.abs(data.X).max() == MAX_ABS_VALUE
    Xs = X / np.abs(X).max() * MIN_MAX_ABS_VALUE
    data, _ = as_multitask_data(Xs, y, task)  # at the lower bound: accepted
    for scale in (1e-90, 1e-60):
        est = TraceNormRegressor(alpha=0.1).fit(X * scale, y, task)
        assert np.all(np.isfinite(est.coef_)) and np.all(np.isfinite(est.predict(X * scale,
                                                                                    task)))
    for scale in (1e-300, 1e-150):  # products underflow: LAPACK's SVD stopped converging
        with pytest.raises(ValueError, match="magnitude.*rescale"):
            TraceNormRegressor(alpha=0.1).fit(X * scale, y, task)
        with pytest.raises(ValueError, match="magnitude.*rescale"):
            TraceNormRegressor(alpha=0.1).fit(X, y * scale, task)


# ----------------------------------------------------------------------------- degenerate data
def test_zero_feature_columns_are_a_clear_error():
    X, y, task = _data()
    for fit in (lambda: L21Regressor(task_column=0).fit(task[:, None].astype(float), y),
                lambda: L21Regressor().fit([X[:15, :0], X[15:, :0]], [y[:15], y[15:]]),
                lambda: as_multitask_data(X[:, :0], y, task)):
        with pytest.raises(ValueError, match="no feature columns"):
            fit()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("kind", ["constant rows", "identical rows", "one row per task",
                                  "zero matrix"])
def test_degenerate_designs_fit_a_finite_model(kind):
    X, y, task = _data()
    if kind == "constant rows":
        X = np.ones_like(X)
    elif kind == "identical rows":
        X = np.tile(X[:1], (len(X), 1))
    elif kind == "zero matrix":
        X = np.zeros_like(X)
    else:
        X, y, task = X[[0, 10, 20]], y[[0, 10, 20]], task[[0, 10, 20]]
    for model in (L21Regressor, TraceNormRegressor):
        est = model(alpha=0.1).fit(X, y, task)
        assert np.all(np.isfinite(est.coef_)) and np.all(np.isfinite(est.intercept_))


# ----------------------------------------------------------------------------- task ids
def test_task_ids_keep_their_identity_as_written():
    X, y, _ = _data()
    est = L21Regressor().fit(X, y, np.array(["01"] * 10 + ["1"] * 20))
    assert est.tasks_.tolist() == ["01", "1"]
    big = np.repeat([1e20, 2e20, 3e20], 10)  # whole floats beyond 2**53 stay floats
    assert len(L21Regressor().fit(X, y, big).tasks_) == 3
    np.testing.assert_array_equal(as_task_ids([2.0, 1.0]), [2, 1])
    assert as_task_ids([2.0, 1.0]).dtype == np.int64
    assert as_task_ids([0.5, 1.0]).dtype == np.float64


@pytest.mark.parametrize("task, match", [
    ([1] * 10 + ["a"] * 10 + [None] * 10, "row 20 is missing"),
    ([1] * 15 + ["a"] * 15, r"row 0 holds 1 \(int\) and row 15 holds 'a' \(str\)"),
    ([1] * 15 + [1.0] * 15, r"row 0 holds 1 \(int\) and row 15 holds 1.0 \(float\)"),
    ([1] * 15 + ["1"] * 15, "different types"),
    ([datetime.date(2020, 1, 1)] * 30, "is a date"),
    (np.full(30, np.nan), "NaN or infinity"),
    (np.zeros(30, dtype=complex), "complex dtype"),
])
def test_mixed_or_missing_task_ids_are_a_clear_error(task, match):
    """They used to be merged silently ('1' and 1) or to raise TypeError from sorting."""
    X, y, _ = _data()
    with pytest.raises(ValueError, match=match):
        L21Regressor().fit(X, y, task)


def test_predict_refuses_ids_of_another_type():
    X, y, task = _data()
    est = L21Regressor().fit(X, y, task)
    for bad in (task.astype(str), task > 0):
        with pytest.raises(ValueError, match="fitted on numeric ids"):
            est.predict(X, bad)
    np.testing.assert_array_equal(est.predict(X, task.astype(float)), est.predict(X, task))


@pytest.mark.parametrize("column, match", [(-1.0, r"task_column.*-1\.0"),
                                           (True, r"got True \(bool\)"),
                                           ("0", "task_column.*'0'"),
                                           (9, "out of range")])
def test_task_column_must_be_an_integer_in_range(column, match):
    X, y, task = _data()
    Xt = np.column_stack([X, task])
    with pytest.raises(ValueError, match=match):
        L21Regressor(task_column=column).fit(Xt, y)
    with pytest.raises(ValueError, match=match):
        TraceNormClassifier(task_column=column).fit(Xt, (y > 0).astype(int))
    assert check_task_column(np.int64(-1), 6) == 5
