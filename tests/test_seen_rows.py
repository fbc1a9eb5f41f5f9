"""Multi-stage runs on the feature rows the loss sees (:mod:`multitask.solvers.seen_rows`): the
rows of features constant within every task are left out and padded with zeros, with the same
result as the run on all rows."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import multitask
from multitask import MultiTaskCV
from multitask.penalties.capped_l1 import CappedL1
from multitask.penalties.capped_trace import CappedTraceNorm, TruncatedTraceNorm
from multitask.penalties.norms import TraceNorm
from multitask.solvers import multistage
from multitask.solvers.multistage import Multistage
from multitask.solvers.seen_rows import seen_rows


def _tasks(seed: int = 0, m: int = 30, d: int = 8, n: int = 15, unseen=(2, 5)):
    """Per-task designs whose features ``unseen`` are constant within each task (a school-level
    feature: another constant in every task), a third feature constant within half the tasks
    only (seen by the others), rank-2 weights, noise 0.3."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((d, 2)) @ rng.standard_normal((2, m))
    Xs, ys = [], []
    for t in range(m):
        X = rng.standard_normal((n, d))
        X[:, list(unseen)] = rng.standard_normal(len(unseen))
        if t % 2:
            X[:, 0] = 1.5
        Xs.append(X)
        ys.append(X @ W[:, t] + 0.3 * rng.standard_normal(n))
    return Xs, ys


def _fit(est, Xs, ys, monkeypatch, reduce: bool):
    if not reduce:
        monkeypatch.setattr(multistage, "seen_rows", lambda datafit, penalty: None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(Xs, ys)
    monkeypatch.undo()
    return est


def test_seen_rows_finds_the_rows_no_task_sees():
    Xs, ys = _tasks()
    est = multitask.CappedTraceRegressor()
    datafit = est._make_datafit(est._convert(Xs, ys, None, None)[0])
    rows = seen_rows(datafit, CappedTraceNorm(1.0, 1.0))
    assert rows.tolist() == [0, 1, 3, 4, 6, 7]  # feature 0 is seen by half the tasks
    # a penalty that does not declare row_monotone (the capped l1 penalty's stage keys name
    # rows), or every row seen: the whole run
    assert seen_rows(datafit, CappedL1(1.0, 1.0)) is None
    assert seen_rows(datafit, TraceNorm(1.0)) is None
    Xs2, ys2 = _tasks(unseen=())
    assert seen_rows(est._make_datafit(est._convert(Xs2, ys2, None, None)[0]),
                     CappedTraceNorm(1.0, 1.0)) is None


def test_seen_rows_needs_a_quadratic_loss():
    """The logistic loss keeps the intercept a variable (nothing is centred away): every row
    of a constant feature is seen."""
    Xs, ys = _tasks()
    labels = [np.where(y > np.median(y), 1, 0) for y in ys]
    est = multitask.CappedTraceClassifier(loss="logistic")
    datafit = est._make_datafit(est._convert(Xs, labels, None, None)[0])
    assert seen_rows(datafit, CappedTraceNorm(1.0, 1.0)) is None


@pytest.mark.parametrize("penalty_premise", ["truncated", "capped"])
def test_deleting_rows_does_not_increase_the_penalty(penalty_premise):
    """The premise of ``"row_monotone"`` for the spectral penalties (interlacing): the
    penalty of ``W`` with rows set to zero equals that of the other rows alone and is at most
    that of ``W``."""
    rng = np.random.default_rng(1)
    for _ in range(50):
        W = rng.standard_normal((9, 12)) * rng.exponential(1.0, (9, 1))
        keep = np.sort(rng.choice(9, 5, replace=False))
        zeroed = np.zeros_like(W)
        zeroed[keep] = W[keep]
        pen = (TruncatedTraceNorm(0.7, 2) if penalty_premise == "truncated"
               else CappedTraceNorm(0.7, 1.3))
        assert pen.value(zeroed) == pytest.approx(pen.value(W[keep]), rel=1e-12)
        assert pen.value(W[keep]) <= pen.value(W) * (1 + 1e-12)


@pytest.mark.parametrize("make", [
    lambda: multitask.CappedTraceRegressor(alpha=0.3, tau=1.0),
    lambda: multitask.CappedTraceRegressor(alpha=1.5, tau=4.0),
])
def test_the_run_on_the_seen_rows_is_the_run_on_all_rows(make, monkeypatch):
    Xs, ys = _tasks()
    full = _fit(make(), Xs, ys, monkeypatch, reduce=False)
    part = _fit(make(), Xs, ys, monkeypatch, reduce=True)
    assert "seen_rows" in part.solver_info_ and "seen_rows" not in full.solver_info_
    assert part.solver_info_["stage_keys"] == full.solver_info_["stage_keys"]
    np.testing.assert_array_equal(part.coef_[:, [2, 5]], 0.0)
    scale = np.abs(full.coef_).max()
    np.testing.assert_allclose(part.coef_, full.coef_, atol=1e-9 * scale)
    np.testing.assert_allclose(part.intercept_, full.intercept_, atol=1e-9 * scale)
    np.testing.assert_allclose(part.objective_, full.objective_, rtol=1e-10)
    assert part.n_iter_ == full.n_iter_
    # the convex stages' solutions kept for the next warm start: of all the rows
    for (k, (W, _)), (k2, (W2, _)) in zip(part._stage_points.items(),
                                          full._stage_points.items(), strict=True):
        assert k == k2 and W.shape == W2.shape == (8, 30)
    pred = np.concatenate(part.predict(Xs))
    np.testing.assert_allclose(pred, np.concatenate(full.predict(Xs)), atol=1e-8 * scale)


def test_sparse_design_with_empty_columns(monkeypatch):
    """A shared sparse design whose columns 1 and 4 hold no entry: those rows are left out."""
    rng = np.random.default_rng(3)
    X = sp.random(60, 6, density=0.5, random_state=4, format="csr")
    X = sp.csr_matrix(X.toarray() * np.array([1, 0, 1, 1, 0, 1.0]))
    Y = X @ rng.standard_normal((6, 5)) + 0.1 * rng.standard_normal((60, 5))
    est = multitask.CappedTraceRegressor(alpha=0.01, tau=0.5)
    datafit = est._make_datafit(est._convert(X, Y, None, None)[0])
    if "quadratic" not in datafit.capabilities:
        pytest.skip("this design's loss forms no Gram matrices")
    assert seen_rows(datafit, est._make_penalty(datafit)).tolist() == [0, 2, 3, 5]
    full = _fit(multitask.CappedTraceRegressor(alpha=0.01, tau=0.5), X, Y, monkeypatch, False)
    part = _fit(multitask.CappedTraceRegressor(alpha=0.01, tau=0.5), X, Y, monkeypatch, True)
    np.testing.assert_array_equal(part.coef_[:, [1, 4]], 0.0)
    np.testing.assert_allclose(part.coef_, full.coef_, atol=1e-9 * np.abs(full.coef_).max())


def test_callback_and_stage_starts_see_all_rows():
    Xs, ys = _tasks()
    est = multitask.CappedTraceRegressor(alpha=0.3, tau=1.0)
    datafit = est._make_datafit(est._convert(Xs, ys, None, None)[0])
    penalty = est._make_penalty(datafit)
    shapes = []
    solver = Multistage(warn=False)
    res = solver.solve(datafit, penalty,
                       callback=lambda k, F, W, b: shapes.append(W.shape) and False)
    assert res.coef.shape == (8, 30) and set(shapes) == {(8, 30)}
    # a second run started from the first's stage points (a path's warm start)
    again = solver.solve(datafit, penalty, coef_init=res.coef,
                         stage_starts=res.info["stage_points"])
    np.testing.assert_allclose(again.coef, res.coef, atol=1e-6 * np.abs(res.coef).max())
    # a start of another shape: the error names the shape of all the rows
    with pytest.raises(ValueError, match=r"expected \(8, 30\)"):
        solver.solve(datafit, penalty, coef_init=np.zeros((6, 30)))


def test_cross_validation_chooses_alike(monkeypatch):
    Xs, ys = _tasks(seed=2)
    cv = dict(n_alphas=4, cv=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        part = MultiTaskCV(multitask.CappedTraceRegressor(), **cv).fit(Xs, ys)
        monkeypatch.setattr(multistage, "seen_rows", lambda datafit, penalty: None)
        full = MultiTaskCV(multitask.CappedTraceRegressor(), **cv).fit(Xs, ys)
    assert part.best_params_ == full.best_params_
    np.testing.assert_allclose(part.best_estimator_.coef_, full.best_estimator_.coef_,
                               atol=1e-8 * np.abs(full.best_estimator_.coef_).max())


def test_row_weights_and_a_ridge(monkeypatch):
    """With row weights the run on the seen rows is the run on all rows. With a ridge term too
    the unseen rows are zero, but the stage ADMM's penalty parameter (a median of the ``H_t``'s
    eigenvalues, which then include the ridge's on those rows) differs: another path, its
    objective within the stopping rules' reach of the run on all rows."""
    Xs, ys = _tasks(seed=5)
    rng = np.random.default_rng(6)
    weights = [rng.uniform(0.5, 2.0, len(y)) for y in ys]

    def fit(reduce, alpha_l2):
        est = multitask.CappedTraceRegressor(alpha=0.3, tau=1.0, alpha_l2=alpha_l2)
        if not reduce:
            monkeypatch.setattr(multistage, "seen_rows", lambda datafit, penalty: None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(Xs, ys, sample_weight=weights)
        monkeypatch.undo()
        return est

    full, part = fit(False, 0.0), fit(True, 0.0)
    assert "seen_rows" in part.solver_info_ and part.n_iter_ == full.n_iter_
    np.testing.assert_array_equal(part.coef_[:, [2, 5]], 0.0)
    scale = np.abs(full.coef_).max()
    np.testing.assert_allclose(part.coef_, full.coef_, atol=1e-9 * scale)
    np.testing.assert_allclose(part.intercept_, full.intercept_, atol=1e-9 * scale)
    full, part = fit(False, 0.05), fit(True, 0.05)
    np.testing.assert_array_equal(part.coef_[:, [2, 5]], 0.0)
    assert np.abs(full.coef_[:, [2, 5]]).max() < 1e-10 * np.abs(full.coef_).max()
    assert part.solver_info_["stage_keys"] == full.solver_info_["stage_keys"]
    assert part.objective_[-1] == pytest.approx(full.objective_[-1], rel=1e-5)


@pytest.mark.parametrize("params", [dict(alpha=0.05, radius=5.0), dict(alpha=0.5, radius=1.0)])
def test_sparse_low_rank_admm_on_the_seen_rows(params, monkeypatch):
    """ADMM on sparse + low rank (``W = P + Q``, a :class:`SumMap`): both parts' unseen rows
    are left out and padded; the same iterations, certificate and coefficients as the run on
    all rows, and a warm-started refit starts from the parts of all the rows."""
    from multitask.solvers import admm

    Xs, ys = _tasks(seed=7)

    def fit(reduce, **extra):
        est = multitask.SparseLowRankRegressor(solver="admm", **params, **extra)
        if not reduce:
            monkeypatch.setattr(admm, "seen_rows", lambda datafit, penalty: None)
        est.fit(Xs, ys)
        monkeypatch.undo()
        return est

    full, part = fit(False), fit(True)
    assert part.n_iter_ == full.n_iter_ and part.converged_ and full.converged_
    assert part.coef_variable_.shape == full.coef_variable_.shape == (2, 8, 30)
    np.testing.assert_array_equal(part.coef_variable_[:, [2, 5]], 0.0)
    scale = np.abs(full.coef_).max()
    np.testing.assert_allclose(part.coef_variable_, full.coef_variable_, atol=1e-9 * scale)
    np.testing.assert_allclose(part.intercept_, full.intercept_, atol=1e-9 * scale)
    assert part.optimality_ == pytest.approx(full.optimality_, rel=1e-6)
    warm = fit(True, warm_start=True)
    warm.fit(Xs, ys)  # from its own parts (of all the rows)
    assert warm.n_iter_ < full.n_iter_ and warm.converged_


def test_warnings_point_at_the_caller_on_the_seen_rows():
    """A run on the seen rows calls ``solve`` again through two more frames: its convergence
    warnings still point at the code that called the solver (as a direct run's do)."""
    from multitask.penalties.composite import SparseLowRank
    from multitask.solvers.admm import QuadraticADMM

    Xs, ys = _tasks()
    est = multitask.CappedTraceRegressor()
    datafit = est._make_datafit(est._convert(Xs, ys, None, None)[0])
    runs = [(QuadraticADMM(tol=1e-12, max_iter=3), SparseLowRank(0.05, 1.0)),
            (Multistage(tol=1e-12, max_iter=3, n_stages=1), CappedTraceNorm(0.3, 1.0))]
    for solver, penalty in runs:
        assert seen_rows(datafit, penalty) is not None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            solver.solve(datafit, penalty)
        warned = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
        assert warned and all(w.filename == __file__ for w in warned), [
            (w.filename, str(w.message)[:60]) for w in warned]


def test_a_loss_s_quadratic_model_is_not_restricted():
    """The inner ADMM of proximal Newton sees a quadratic model of the logistic loss
    (``QuadraticBound``: no ``"least_squares"``), whose terms are not its data's: it runs on all
    the rows. The sparse + low-rank classifier fits data with features constant within tasks
    (a falsifying example of ``tests/test_reliability.py`` had it fail)."""
    Xs, ys = _tasks()
    labels = [np.where(y > np.median(y), 1, 0) for y in ys]
    est = multitask.SparseLowRankClassifier(loss="logistic").fit(Xs, labels)
    assert np.all(np.isfinite(est.coef_))
    import scipy.sparse as sparse

    X = sparse.csr_matrix(np.array([[0, 1.0, 0, 2, 0, 0], [0, 3.0, 0, 0, 0, 1]],
                                   dtype=np.float32))
    multitask.SparseLowRankClassifier().fit(X, np.array([1, 0]), np.array([0, 0]))
