"""The closed form of the new tasks' Gaussian priors under the squared loss.

Three ways to the same numbers: the compiled kernel on the prior's standard form
(:class:`~multitask.estimators.new_tasks.StandardRidge`), its numpy twin
(:class:`~multitask.estimators.new_tasks.GaussianSystem`), and, written here independently,
each task's normal equations in the original unknowns ``(w, b)`` (no centring, no change of
variables) with leave-one-out by refitting without each row. Solutions to 1e-10 (relative to
their size), leave-one-out losses to 1e-9 relative; both forms of the kernel (the space of a
task's rows, the space of the unknowns), with and without intercept, sample weights (zero
weights in a shared design: missing targets), shared, per-task and sparse designs, priors
confined to a subspace, with a complement, and isotropic, with and without ``alpha_l2``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

import multitask
from multitask.data import MultiTaskData, as_multitask_data
from multitask.estimators import new_tasks as nt
from multitask.penalties.new_task import GaussianPrior
from multitask.solvers import new_tasks as solves
from multitask.solvers._new_tasks_numba import ridge_grid

D = 7
SIZES = (2, 4, 9)  # with 3 or 7 unknowns: tasks in both forms
GRID = np.array([30.0, 1.0, 0.05])


def _prior(kind: str, rng) -> GaussianPrior:
    mu = rng.standard_normal(D)
    B = np.linalg.qr(rng.standard_normal((D, 3)))[0]
    p = rng.uniform(0.5, 2.0, 3)
    if kind == "confined":  # w in mu + range(B): 3 unknowns
        return GaussianPrior(mu, B, p, np.inf)
    if kind == "complement":  # precision q = 0.4 off range(B): 7 unknowns
        return GaussianPrior(mu, B, p, 0.4)
    return GaussianPrior(mu, None, None, 0.8)  # isotropic: T is a number


def _data(layout: str, weights: str, rng) -> MultiTaskData:
    m = len(SIZES)
    if layout == "shared":  # 5 rows shared by the 3 tasks
        n = 5
        X = rng.standard_normal((n, D)) + 0.2
        y = rng.standard_normal(n * m)
        offsets = np.arange(m + 1, dtype=np.int64) * n
    else:
        X = rng.standard_normal((sum(SIZES), D)) + 0.2
        if layout == "sparse":
            X[rng.random(X.shape) < 0.5] = 0.0
            X = sp.csr_matrix(X)
        y = rng.standard_normal(sum(SIZES))
        offsets = np.concatenate([[0], np.cumsum(SIZES)]).astype(np.int64)
    sw = None
    if weights == "positive":
        sw = rng.uniform(0.2, 3.0, len(y))
    elif weights == "zeros":  # some pairs weigh nothing (a missing target of a shared design)
        sw = rng.uniform(0.2, 3.0, len(y))
        sw[offsets[1:] - 1] = 0.0
    return MultiTaskData(X, y, offsets, np.arange(m), layout == "shared", sample_weight=sw)


def _task(data: MultiTaskData, t: int):
    X = data.task_X(t)
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    sw = data.task_row_weights(t)
    return X, data.task_y(t), np.ones(len(data.task_y(t))) if sw is None else sw


def _normal_equations(X, y, s, prior: GaussianPrior, lam: float, alpha_l2: float,
                      intercept: bool):
    """``argmin_{w, b} sum_i s_i (y_i - x_i^T w - b)^2 / 2 + (lam / 2) [(w - mu)^T P (w - mu)
    + alpha_l2 ||w||^2]``, ``w`` confined to ``mu + range(B)`` when the prior is."""
    mu, B = prior.mean, prior.basis
    d = len(mu)
    if prior.confined:  # unknowns (a, b), w = mu + B a
        F, target = X @ B, y - X @ mu
        H_pen = np.diag(prior.precision) + alpha_l2 * B.T @ B
        r_pen = -alpha_l2 * B.T @ mu
    else:
        F, target = X, y
        P = (B * prior.precision) @ B.T + prior.complement * (np.eye(d) - B @ B.T)
        H_pen, r_pen = P + alpha_l2 * np.eye(d), P @ mu
    if intercept:
        F = np.column_stack([F, np.ones(len(y))])
        H_pen = np.pad(H_pen, ((0, 1), (0, 1)))
        r_pen = np.append(r_pen, 0.0)
    theta = np.linalg.solve(F.T @ (s[:, None] * F) + lam * H_pen, F.T @ (s * target) + lam * r_pen)
    a, b = (theta[:-1], theta[-1]) if intercept else (theta, 0.0)
    return (mu + B @ a if prior.confined else a), b


def _reference(data, prior, c, alpha_l2, intercept):
    """Each task's solution at strengths ``c`` (one per task) and its leave-one-out loss
    ``sum_i s_i (y_i - yhat_{-i})^2 / 2``, the prior's weight against the *sum* of the
    task's losses kept (``c_t S_t``, ``S_t`` the task's weight sum) when a row is left out."""
    Ws, bs, loo = [], [], 0.0
    for t in range(data.n_tasks):
        X, y, s = _task(data, t)
        lam = c[t] * s.sum()
        w, b = _normal_equations(X, y, s, prior, lam, alpha_l2, intercept)
        Ws.append(w)
        bs.append(b)
        for i in np.flatnonzero(s > 0):
            keep = np.arange(len(y)) != i
            wi, bi = _normal_equations(X[keep], y[keep], s[keep], prior, lam, alpha_l2,
                                       intercept)
            loo += 0.5 * s[i] * (y[i] - X[i] @ wi - bi) ** 2
    return np.column_stack(Ws), np.array(bs), loo


def _close(a, b, rtol):
    scale = max(np.abs(a).max(), np.abs(b).max(), 1.0)
    return np.allclose(a, b, rtol=0, atol=rtol * scale)


CASES = list(itertools.product(["tasks", "shared", "sparse"],
                               ["confined", "complement", "isotropic"],
                               [(True, None), (False, "positive"), (True, "zeros")],
                               [0.0, 0.3]))


@pytest.mark.parametrize(("layout", "kind", "opts", "alpha_l2"), CASES)
def test_kernel_twin_and_normal_equations_agree(layout, kind, opts, alpha_l2):
    intercept, weights = opts
    if weights == "zeros" and layout != "shared":
        weights = "positive"  # the conversion drops zero weights of non-shared data
    rng = np.random.default_rng(CASES.index((layout, kind, opts, alpha_l2)))
    data = _data(layout, weights, rng)
    prior = _prior(kind, rng)
    frozen = [np.copy(a) for a in (data.y, data.offsets, prior.mean, prior.basis)]
    X0 = data.X.copy()
    sizes = nt.task_sizes(data)
    C = GRID[:, None] * (10.0 / sizes)[None]

    system = nt.StandardRidge(data, prior.standard_form(alpha_l2), intercept)
    out = system.solve_grid(C)
    assert out is not None
    losses, solution = out
    twin = nt.GaussianSystem(data, prior, intercept, alpha_l2)
    twin_losses = twin.loo_losses(C)
    for g in range(len(GRID)):
        V, b = solution(g)
        W = system.weights(V)
        W_twin, b_twin = twin.solve(C[g])
        W_ref, b_ref, loo_ref = _reference(data, prior, C[g], alpha_l2, intercept)
        assert _close(W, W_ref, 1e-10) and _close(b, b_ref, 1e-10)
        assert _close(W_twin, W_ref, 1e-10) and _close(b_twin, b_ref, 1e-10)
        assert np.isclose(losses[g], loo_ref, rtol=1e-9, atol=0)
        assert np.isclose(twin_losses[g], loo_ref, rtol=1e-9, atol=0)
    # no input changed in place
    for a, b in zip(frozen, (data.y, data.offsets, prior.mean, prior.basis), strict=True):
        assert np.array_equal(a, b)
    assert (X0 != data.X).nnz == 0 if sp.issparse(X0) else np.array_equal(X0, data.X)


@pytest.mark.parametrize(("kind", "weights", "expected"), [
    ("complement", None, [True, True, False]),  # 7 unknowns: 2 and 4 rows in the row space
    ("confined", None, [True, False, False]),  # 3 unknowns: only the task of 2 rows
    ("complement", "zeros", [False, False, False]),  # a row of weight 0: the unknowns' space
])
def test_kernel_picks_the_smaller_form(kind, weights, expected):
    rng = np.random.default_rng(3)
    data = _data("tasks", weights, rng)
    if weights == "zeros":  # held directly (the conversion would drop them)
        data.sample_weight[data.offsets[1:] - 1] = 0.0
    system = nt.StandardRidge(data, _prior(kind, rng).standard_form(0.0), True)
    G, m = 2, data.n_tasks
    kernel = np.empty(m, dtype=np.bool_)
    ok = ridge_grid(system.Z, system.t, system.s, system.offsets, np.ones((G, m)), True, True,
                    np.empty((G, m, system.Z.shape[1])), np.empty((G, m)),
                    np.empty((G, len(system.t))), kernel, np.empty(G))
    assert ok and kernel.tolist() == expected


@pytest.mark.parametrize("grid", [None, nt.CV_GRID])
def test_closed_form_gives_the_same_answer_compiled_or_interpreted(monkeypatch, grid):
    rng = np.random.default_rng(4)
    data = _data("tasks", "positive", rng)
    prior = _prior("complement", rng)
    scales = 10.0 / nt.task_sizes(data)
    answers = []
    for budget in (0.0, 1.0):  # 0: the compiled kernel runs; otherwise the twin
        monkeypatch.setattr(solves, "interpreted_budget", lambda budget=budget: budget)
        answers.append(nt.closed_form(data, prior, True, 0.1, scales, grid))
    (W, b, g), (W2, b2, g2) = answers
    assert g == g2 and (g is None) == (grid is None)
    assert _close(W, W2, 1e-10) and _close(b, b2, 1e-10)


def test_a_task_of_one_row_gets_its_intercept_at_any_strength():
    """One row and an intercept: the slope is the prior's mode and the intercept fits the row
    (its leverage is 1, so its leave-one-out loss is 0/0: nothing fails, at any strength)."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((1, D))
    data = MultiTaskData(X, np.array([0.7]), np.array([0, 1]), np.arange(1), False)
    prior = _prior("complement", rng)
    for c in (1.0, 3.0):
        system = nt.StandardRidge(data, prior.standard_form(0.0), True)
        losses, solution = system.solve_grid(np.array([[c]]))
        V, b = solution(0)
        W = system.weights(V)
        W_twin, b_twin = nt.GaussianSystem(data, prior, True, 0.0).solve(np.array([c]))
        assert np.allclose(W[:, 0], prior.mean) and np.allclose(W_twin[:, 0], prior.mean)
        assert np.isclose(b[0], 0.7 - X[0] @ prior.mean) and np.isclose(b_twin[0], b[0])
        assert losses.shape == (1,)


@pytest.mark.parametrize("name", ["TraceNormRegressor", "MeanRegularizedRegressor",
                                  "ConvexASORegressor"])
def test_fitted_priors_leave_one_out_is_exact(name):
    """On the priors of fitted models, at the grid of ``strength="cv"``: the leave-one-out
    losses of the kernel and of the twin equal refits without each row (to 1e-9)."""
    rng = np.random.default_rng(6)
    d, m = 8, 6
    W = rng.standard_normal((d, 2)) @ rng.standard_normal((2, m + 2))
    Xs = [rng.standard_normal((n, d)) + 0.3 for n in [30] * m + [4, 6]]
    ys = [X @ W[:, t] + 0.5 * t + 0.4 * rng.standard_normal(len(X)) for t, X in enumerate(Xs)]
    prior = getattr(multitask, name)().fit(Xs[:m], ys[:m])._new_task_prior()
    data, _ = as_multitask_data(Xs[m:], ys[m:])
    C = np.asarray(nt.CV_GRID)[:, None] * (30.0 / nt.task_sizes(data))[None]
    for alpha_l2, intercept in itertools.product([0.0, 0.2], [True, False]):
        compiled = nt.StandardRidge(data, prior.standard_form(alpha_l2), intercept).solve_grid(
            C)[0]
        twin = nt.GaussianSystem(data, prior, intercept, alpha_l2).loo_losses(C)
        brute = [_reference(data, prior, c, alpha_l2, intercept)[2] for c in C]
        assert np.allclose(compiled, brute, rtol=1e-9, atol=0)
        assert np.allclose(twin, brute, rtol=1e-9, atol=0)
