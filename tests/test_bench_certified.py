"""Checks of benchmarks/bench_certified.py (issue 22, item 4: the benchmark stays honest).

Fast: the script's numpy objective of every model equals the library's datafit value plus
penalty value on the rows scaled by the documented conversion (so the formulas and the
conversions agree), its cvxpy objective equals its numpy objective at random points, and its
closed-form minimum over ``M`` of the clustered models equals cvxpy's. Slow: the script run on
three models prints gaps equal to an independent recomputation (a refit, the objective written
here, cvxpy's optimum of a problem written here).
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

bc = pytest.importorskip("bench_certified")
cp = pytest.importorskip("cvxpy")


def _tiny_problem(seed=0, features="raw"):
    """Five tasks of unequal sizes, unscaled features plus a constant column."""
    rng = np.random.default_rng(seed)
    sizes, d = (9, 14, 6, 11, 8), 5
    scales = np.array([1.0, 30.0, 0.2, 5.0])
    W = rng.standard_normal((d, len(sizes)))
    Xs, ys = [], []
    for n in sizes:
        X = np.column_stack([rng.standard_normal((n, d - 1)) * scales + 2.0, np.ones(n)])
        Xs.append(X)
        ys.append(X @ W[:, len(ys)] + rng.standard_normal(n))
    return bc.Problem(features, Xs, ys)


def _random_parts(model, problem, params, rng):
    d, m = problem.n_features, problem.n_tasks
    parts = [rng.standard_normal((d, m)) for _ in model.parts]
    for P in parts:  # exact zeros in some rows and columns, as in fitted models
        P[rng.integers(d)] = 0.0
        P[:, rng.integers(m)] = 0.0
    if model.key == "sparse_low_rank":  # inside the trace ball
        parts[1] *= 0.5 * params["tau"] / bc.nuclear(parts[1])
    return parts


def _library_objective(model, params, parts, stage, problem):
    """``(library's datafit + penalty on the converted rows, the parts it is taken at)``,
    built by the estimator. A split model whose penalty acts on ``W = P + Q`` alone (the
    minimum over the splits, e.g. the dirty norm) is compared at its own split of ``W``."""
    from multitask.data import as_multitask_data

    est = model.estimator(params, problem)
    Xs, ys = problem.scaled(model.c)
    data, _ = as_multitask_data(Xs, ys)
    datafit = est._make_datafit(data)
    penalty = est._make_penalty(datafit)
    W = np.sum(parts, axis=0)
    if model.key == "capped_l1":  # the stage problem: weights from the stage's reference
        ref = np.zeros_like(W)
        ref[list(stage)] = 10.0 * params["theta"]
        assert penalty.stage_key(ref) == stage
        penalty = penalty.stage_penalty(ref)
    stacked = len(penalty.linear_map.variable_shape(*W.shape)) == 3
    if len(parts) > 1 and not stacked:
        parts = list(penalty.split(W))
        V = W
    else:
        V = parts[0] if len(parts) == 1 else np.stack(parts)
    return datafit.value(W, None) + penalty.value(V), parts


@pytest.mark.parametrize("key", list(bc.model_table()))
def test_numpy_objective_is_the_librarys(key):
    """MALSAR's objective written in the script = the library's objective on the rows of
    task t scaled by sqrt(c n_t), with the script's conversion of the parameters."""
    rng = np.random.default_rng(1)
    problem = _tiny_problem()
    model = bc.model_table()[key]
    params = model.choose(problem)
    if key == "temporal":
        params = {**params, "rho1": 0.3 * params["rho2"]}  # the ridge term's conversion too
    stage = (1, 3) if key == "capped_l1" else None
    for _ in range(3):
        parts = _random_parts(model, problem, params, rng)
        lib, at = _library_objective(model, params, parts, stage, problem)
        ours = bc.objective(model, params, at, stage, problem)
        assert ours == pytest.approx(lib, rel=1e-12)
        # at another split, never below the library's minimum over the splits
        assert bc.objective(model, params, parts, stage, problem) >= lib * (1 - 1e-12)


@pytest.mark.parametrize("key", [k for k in bc.model_table() if k not in ("cmtl", "caso")])
def test_cvxpy_objective_is_the_numpy_objective(key):
    """The reference problem (least squares on each task's thin SVD) has the numpy value at
    random points."""
    rng = np.random.default_rng(2)
    problem = _tiny_problem(3)
    model = bc.model_table()[key]
    params = model.choose(problem)
    stage = (0, 2) if key == "capped_l1" else None
    scale = bc.malsar_loss(problem, np.zeros((problem.n_features, problem.n_tasks)), model.c)
    for _ in range(3):
        parts = _random_parts(model, problem, params, rng)
        prob, variables = bc._cvxpy_problem(model, params, stage, problem)
        for v, P in zip(variables, parts, strict=True):
            v.value = P
        assert prob.objective.value * scale == pytest.approx(
            bc.objective(model, params, parts, stage, problem), rel=1e-10)
        assert all(c.value() for c in prob.constraints)


@pytest.mark.parametrize("side", ["tasks", "features"])
def test_closed_form_minimum_over_m_is_cvxpys(side):
    """cluster_relaxation (water-filling on the singular values) = cvxpy's minimum of
    tr(W^T (eta I + M)^{-1} W) over 0 <= M <= I, tr M = k, for W of full and low rank."""
    rng = np.random.default_rng(4)
    d, m, eta, k = 6, 4, 0.1, 2
    for W in (rng.standard_normal((d, m)),
              rng.standard_normal((d, 1)) @ rng.standard_normal((1, m)),
              rng.standard_normal((d, 3)) @ np.diag([5.0, 1.0, 0.01]) @ rng.standard_normal(
                  (3, m))):
        n = m if side == "tasks" else d
        M = cp.Variable((n, n), symmetric=True)
        arg = W.T if side == "tasks" else W
        prob = cp.Problem(cp.Minimize(cp.matrix_frac(arg, eta * np.eye(n) + M)),
                          [M >> 0, np.eye(n) - M >> 0, cp.trace(M) == k])
        prob.solve(solver="CLARABEL")
        assert bc.cluster_relaxation(W, eta, k, n) == pytest.approx(prob.value, rel=1e-6)


def test_zscore_keeps_the_constant_column_and_raw_is_unscaled():
    from multitask.datasets import load_school

    raw, z = bc.load_problem("raw"), bc.load_problem("zscore")
    school = load_school(include_bias=True)
    assert raw.n_tasks == z.n_tasks == bc.N_SCHOOLS
    np.testing.assert_array_equal(raw.Xs[3], school.X[3])
    stacked = np.vstack(z.Xs)
    np.testing.assert_array_equal(stacked[:, -1], 1.0)
    np.testing.assert_allclose(stacked[:, :-1].mean(axis=0), 0.0, atol=1e-12)
    assert len({len(y) for y in raw.ys}) > 1  # unequal task sizes


# ----------------------------------------------------------------------------- slow: the run
def _fit_here(key, params, Xc, yc, extra):
    import multitask as mt

    if key == "l21":
        est = mt.L21Regressor(alpha=params["rho1"], fit_intercept=False, **extra)
    elif key == "rmtfl":
        est = mt.RobustFeatureLearningRegressor(alpha_group=params["lambda1"],
                                                alpha_outlier=params["lambda2"],
                                                fit_intercept=False, **extra)
    else:
        est = mt.CappedL1Regressor(alpha=params["lambda"], theta=params["theta"],
                                   fit_intercept=False, **extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(Xc, yc)


def _independent_gap(key, params, problem, row):
    """Refit the model, evaluate MALSAR's objective written here, solve the same problem
    with cvxpy (Clarabel, plain least squares), return (default gap, tight gap)."""
    from threadpoolctl import threadpool_limits

    Xs, ys = problem.Xs, problem.ys
    c = 2.0 if key in ("rmtfl", "capped_l1") else 1.0
    Xc = [np.sqrt(c * len(y)) * X for X, y in zip(Xs, ys, strict=True)]
    yc = [np.sqrt(c * len(y)) * y for y in ys]

    def loss_np(W):
        return sum(0.5 * c * np.sum((y - X @ W[:, t]) ** 2)
                   for t, (X, y) in enumerate(zip(Xs, ys, strict=True)))

    def loss_cp(W):
        return sum(0.5 * c * cp.sum_squares(X @ W[:, t] - y)
                   for t, (X, y) in enumerate(zip(Xs, ys, strict=True)))

    d, m = Xs[0].shape[1], len(Xs)
    gaps = {}
    for which, tol in (("default", None), ("tight", 1e-8)):
        if row[which] is None:
            gaps[which] = None
            continue
        extra = {} if tol is None else {"tol": tol, "max_iter": 1_000_000}
        with threadpool_limits(limits=1):  # as in the benchmark's worker: the same bits
            fitted = _fit_here(key, params, Xc, yc, extra)
        if key == "l21":
            W = fitted.coef_.T
            F = loss_np(W) + params["rho1"] * np.linalg.norm(W, axis=1).sum()
            V = cp.Variable((d, m))
            ref = cp.Problem(cp.Minimize(loss_cp(V) + params["rho1"] * cp.sum(
                cp.norm(V, 2, axis=1))))
        elif key == "rmtfl":
            P, Q = fitted.feature_component_.T, fitted.outlier_component_.T
            F = (loss_np(P + Q) + params["lambda1"] * np.linalg.norm(P, axis=1).sum()
                 + params["lambda2"] * np.linalg.norm(Q, axis=0).sum())
            A, B = cp.Variable((d, m)), cp.Variable((d, m))
            ref = cp.Problem(cp.Minimize(
                loss_cp(A + B) + params["lambda1"] * cp.sum(cp.norm(A, 2, axis=1))
                + params["lambda2"] * cp.sum(cp.norm(B, 2, axis=0))))
        else:  # capped l1: the last stage's weighted l1 problem
            W = fitted.coef_.T
            capped = list(fitted.solver_info_["stage_keys"][-1])
            assert capped == list(row[which]["stage"])
            weights = np.ones(d)
            weights[capped] = 0.0
            F = loss_np(W) + params["lambda"] * weights @ np.abs(W).sum(axis=1)
            V = cp.Variable((d, m))
            ref = cp.Problem(cp.Minimize(loss_cp(V) + params["lambda"] * cp.sum(
                cp.multiply(weights[:, None], cp.abs(V)))))
        with warnings.catch_warnings():  # "optimal_inaccurate" at these tolerances
            warnings.simplefilter("ignore")
            ref.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
        assert ref.status in ("optimal", "optimal_inaccurate")
        gaps[which] = (F - ref.value) / abs(ref.value)
        assert F == pytest.approx(row[which]["F"], rel=1e-12)  # the same fit, bit for bit
    return gaps


@pytest.mark.slow
def test_printed_gaps_equal_an_independent_recomputation(tmp_path):
    keys = ["l21", "rmtfl", "capped_l1"]
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_certified.py"), "--features", "raw",
         "--models", *keys, "--repeats", "1", "--cap", "30", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=1800, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {r["model"]: r for r in json.loads((tmp_path / "results_raw.json").read_text())}
    assert set(rows) == set(keys)
    problem = bc.load_problem("raw")
    table_lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("| ")]
    for key in keys:
        row = rows[key]
        gaps = _independent_gap(key, row["params"], problem, row)
        line = next(ln for ln in table_lines
                    if ln.startswith(f"| {row['label']}") and "default gap" not in ln
                    and row["malsar"] not in ln)
        cells = [c.strip() for c in line.strip("|").split("|")]
        for which, col in (("default", 1), ("tight", 6)):
            if row[which] is None:
                assert gaps[which] is None and cells[col].startswith("not reached")
                continue
            # the script's gap = the recomputed one, up to the references' accuracy
            assert row[which]["gap"] == pytest.approx(gaps[which], abs=1e-8, rel=1e-2)
            assert cells[col] == format(row[which]["gap"], ".2e")
            assert cells[col + 1].split(",")[0] == str(row[which]["converged"])
            assert int(cells[col + 3].replace(",", "")) == row[which]["n_iter"]
        assert rows["l21"]["default"]["gap"] >= -1e-9
