"""Multi-task MKL solvers: dual coordinate descent against independent references.

References: cvxpy on the primal (fixed task kernel), L-BFGS-B on the fully dualized problem
(lp-norm MKL, p > 1), cvxpy on its SOCP form (p = 1), a plain numpy coordinate ascent in the
paper's own representation (for the erratum of eq. 24).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

from multitask.solvers.dcd import (
    dcd_mtl_svm,
    factor_task_kernels,
    joint_kernel,
    mtmkl_dcd,
    mtmkl_kernel,
    task_kernel_factor,
)
from multitask.solvers.mkl_theta import dual_norm, theta_step

cp = pytest.importorskip("cvxpy")


def _data(n=90, d=6, T=3, seed=0, noise=0.7):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    task = np.arange(n) % T
    W = rng.standard_normal((d, 1)) + 0.7 * rng.standard_normal((d, T))
    y = np.sign(np.einsum("ij,ij->i", X, W[:, task].T) + noise * rng.standard_normal(n))
    y[y == 0] = 1.0
    return X, y, task


def _random_psd(T, rank, seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((T, rank))
    return A @ A.T


def _cvxpy_primal(X, y, task, B, C, loss, c):
    """min (1/2) tr(W B^{-1} W^T) + (1/2)||b||^2/c^2 + C sum loss(y (x^T w_t + b_t))."""
    n, d = X.shape
    T = B.shape[0]
    L = np.linalg.cholesky(np.linalg.inv(B))
    W = cp.Variable((d, T))
    E = np.zeros((T, n))
    E[task, np.arange(n)] = 1.0
    f = cp.sum(cp.multiply(X.T, W @ E), axis=0)
    reg = 0.5 * cp.sum_squares(W @ L)
    if c > 0:
        b = cp.Variable(T)
        f = f + b @ E
        reg = reg + 0.5 * cp.sum_squares(b) / c**2
    m = cp.pos(1 - cp.multiply(y, f))
    lossv = cp.sum(m) if loss == "hinge" else cp.sum_squares(m)
    prob = cp.Problem(cp.Minimize(reg + C * lossv))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    scores = X @ W.value
    out = scores[np.arange(n), task] + (b.value[task] if c > 0 else 0.0)
    return prob.value, out


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
@pytest.mark.parametrize("c", [0.0, 1.5])
def test_dcd_matches_cvxpy_primal(loss, c):
    X, y, task = _data()
    B = _random_psd(3, 3, 1) + 0.5 * np.eye(3)  # any diagonal, positive definite
    C = 0.7
    ref_obj, ref_f = _cvxpy_primal(X, y, task, B, C, loss, c)
    res = dcd_mtl_svm(
        X, y, task, 3, B, C=C, loss=loss, bias_scale=c, tol=1e-10, max_iter=100000, random_state=0
    )
    assert res.converged
    obj = res.objective[0]
    assert abs(obj - ref_obj) <= 1e-6 * abs(ref_obj)
    assert res.info["gap"] <= 1e-10 * obj
    f = np.einsum("ij,ji->i", X, res.W[:, task]) + res.intercept[task]
    # objective accuracy eps bounds the weight error by sqrt(2 eps) (strong convexity)
    np.testing.assert_allclose(f, ref_f, atol=1e-4)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("shrinking", [False, True])
@pytest.mark.parametrize("tol", [1e-3, 1e-7])
def test_dcd_duality_gap_below_tol(sparse, shrinking, tol):
    X, y, task = _data(n=150, seed=3)
    Xin = sp.csr_matrix(X) if sparse else X
    B = np.ones((3, 3)) + np.eye(3)
    res = dcd_mtl_svm(
        Xin, y, task, 3, B, C=2.0, tol=tol, shrinking=shrinking, max_iter=100000, random_state=1
    )
    assert res.converged
    assert 0 <= res.info["gap"] <= tol * res.objective[0]


def test_dcd_dense_sparse_and_compressed_columns_agree():
    X, y, task = _data(n=80, d=5, seed=4)
    # sparse input with many unused columns: the solver compresses them away
    Xs = sp.hstack([sp.csr_matrix((80, 50)), sp.csr_matrix(X), sp.csr_matrix((80, 50))]).tocsr()
    B = _random_psd(3, 2, 5)  # singular
    r1 = dcd_mtl_svm(X, y, task, 3, B, tol=1e-11, max_iter=10**5, random_state=0)
    r2 = dcd_mtl_svm(Xs, y, task, 3, B, tol=1e-11, max_iter=10**5, random_state=0)
    assert r2.W.shape == (105, 3)
    np.testing.assert_allclose(r2.W[50:55], r1.W, atol=1e-6)
    assert np.all(r2.W[:50] == 0) and np.all(r2.W[55:] == 0)


def test_dcd_projected_gradient_rule_like_liblinear():
    from sklearn.svm import LinearSVC

    X, y, task = _data(n=200, seed=6)
    res = dcd_mtl_svm(
        X, y, task, 3, np.ones((3, 3)), C=1.0, tol=1e-8, stop="pg", max_iter=10**5, random_state=0
    )
    ref = LinearSVC(C=1.0, loss="hinge", fit_intercept=False, tol=1e-8, max_iter=10**6).fit(X, y)
    np.testing.assert_allclose(X @ res.W[:, 0], ref.decision_function(X), atol=1e-4)


def test_factorizations_reproduce_task_kernels():
    from multitask.kernels import tree_task_kernels

    masks = tree_task_kernels(((0, 1), (2, (3, 4))), nodes="all")
    for B in [np.eye(4), np.ones((4, 4)), _random_psd(4, 2, 0), np.diag([2.0, 0.0, 1.0]), *masks]:
        R = task_kernel_factor(B)
        np.testing.assert_allclose(R.T @ R, B, atol=1e-12)
    # masks keep their 0/1 structure: one row per node, a task touches only its ancestors
    R = task_kernel_factor(masks[1])
    assert R.shape[0] == 1
    theta = np.linspace(0.2, 1.0, len(masks))
    fac = factor_task_kernels([task_kernel_factor(B) for B in masks], theta, np.ones(5))
    B_theta = sum(t * B for t, B in zip(theta, masks, strict=True))
    np.testing.assert_allclose(fac.R.T @ fac.R, B_theta, atol=1e-12)


# --------------------------------------------------------------------------- MKL references
def _mkl_setup(p_seed=0):
    X, y, task = _data(n=60, d=4, T=3, seed=10 + p_seed, noise=1.0)
    kernels = [
        np.eye(3),
        np.ones((3, 3)),
        np.diag([1.0, 1.0, 0.0]) + np.outer([1.0, 1.0, 0.0], [1.0, 1.0, 0.0]),
    ]
    K = X @ X.T
    H = [np.outer(y, y) * joint_kernel(K, B, task, task) for B in kernels]
    return X, y, task, kernels, H


def _lbfgs_dual(H, C, p):
    """max_{0 <= a <= C} sum a - (1/2) ||(a^T H_m a)_m||_{p*} by L-BFGS-B."""
    ps = p / (p - 1.0)
    n = H[0].shape[0]

    def fun(a):
        Ha = [Hm @ a for Hm in H]
        q = np.array([a @ h for h in Ha])
        nq = dual_norm(q, p)
        w = (q / nq) ** (ps - 1.0)
        g = -np.ones(n) + sum(wm * h for wm, h in zip(w, Ha, strict=True))
        return -a.sum() + 0.5 * nq, g

    res = minimize(
        fun,
        np.full(n, C / 2),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0, C)] * n,
        options={"ftol": 1e-16, "gtol": 1e-12, "maxiter": 50000, "maxcor": 50},
    )
    a = res.x
    q = np.array([a @ Hm @ a for Hm in H])
    return -res.fun, q


@pytest.mark.parametrize("p", [2.0, 3.0])
def test_mtmkl_matches_lbfgs_reference(p):
    X, y, task, kernels, H = _mkl_setup()
    C = 0.5
    ref_dual, q_ref = _lbfgs_dual(H, C, p)
    res = mtmkl_dcd(
        X,
        y,
        task,
        3,
        kernels,
        C=C,
        p=p,
        tol=1e-9,
        max_outer_iter=500,
        max_iter=100000,
        random_state=0,
    )
    assert res.converged
    J = res.objective[-1]
    assert abs(J - ref_dual) <= 1e-6 * ref_dual
    assert res.info["gap"] <= 1e-6 * J
    theta_ref = q_ref ** (1.0 / (p - 1.0))
    theta_ref /= np.sum(theta_ref**p) ** (1.0 / p)
    np.testing.assert_allclose(res.info["theta"], theta_ref, atol=1e-4)
    np.testing.assert_allclose(np.sum(res.info["theta"] ** p), 1.0, atol=1e-12)


def test_mtmkl_p1_matches_cvxpy_socp():
    X, y, task, kernels, _ = _mkl_setup(1)
    C = 0.5
    n = len(y)
    a = cp.Variable(n)
    t = cp.Variable()
    cons = [a >= 0, a <= C]
    for B in kernels:
        R = task_kernel_factor(B)
        Z = np.stack([y[i] * np.kron(R[:, task[i]], X[i]) for i in range(n)], axis=1)
        cons.append(0.5 * cp.sum_squares(Z @ a) <= t)
    prob = cp.Problem(cp.Maximize(cp.sum(a) - t), cons)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "may be inaccurate" at 1e-12 requests
        prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = mtmkl_dcd(
            X,
            y,
            task,
            3,
            kernels,
            C=C,
            p=1.0,
            tol=1e-9,
            max_outer_iter=3000,
            max_iter=100000,
            random_state=0,
        )
    J = res.objective[-1]
    assert abs(J - prob.value) <= 1e-6 * prob.value
    assert res.info["gap"] <= 1e-6 * J
    np.testing.assert_allclose(res.info["theta"].sum(), 1.0, atol=1e-12)


def test_linear_and_kernel_solvers_agree():
    X, y, task, kernels, _ = _mkl_setup(2)
    kw = dict(C=0.8, p=2.0, tol=1e-9, max_iter=100000, max_outer_iter=500, random_state=0)
    lin = mtmkl_dcd(X, y, task, 3, kernels, bias_scale=1.0, **kw)
    ker = mtmkl_kernel(X @ X.T, y, task, 3, kernels, bias_scale=1.0, **kw)
    np.testing.assert_allclose(lin.info["theta"], ker.info["theta"], atol=1e-5)
    f_lin = np.einsum("ij,ji->i", X, lin.W[:, task]) + lin.intercept[task]
    K = X @ X.T
    f_ker = (
        joint_kernel(K, ker.info["B_theta"], task, task) @ ker.info["dual_coef"]
        + ker.intercept[task]
    )
    np.testing.assert_allclose(f_lin, f_ker, atol=1e-5)


def test_svc_step_runs_and_has_small_gap():
    X, y, task, kernels, _ = _mkl_setup(3)
    res = mtmkl_kernel(
        X @ X.T, y, task, 3, kernels, C=0.5, p=2.0, tol=1e-6, solver="svc", max_outer_iter=200
    )
    assert res.info["theta"].shape == (3,)
    assert np.all(res.info["theta"] > 0)
    hist = res.info["history"]
    assert hist["objective_w"][-1] <= hist["objective_w"][0] + 1e-8


# --------------------------------------------------------------------------- theta step
@pytest.mark.parametrize("p", [1.0, 1.5, 2.0, 3.0])
def test_theta_step_is_the_constrained_minimizer(p):
    rng = np.random.default_rng(int(10 * p))
    a = rng.uniform(0.1, 3.0, 4)
    theta = theta_step(a, p)
    np.testing.assert_allclose(np.sum(theta**p), 1.0, rtol=1e-12)
    # closed form value ||a||_{p/(p+1)}
    r = p / (p + 1.0)
    np.testing.assert_allclose(np.sum(a / theta), np.sum(a**r) ** (1 / r), rtol=1e-12)
    # independent numerical minimization over the lp ball
    res = minimize(
        lambda t: np.sum(a / t),
        np.full(4, 4 ** (-1 / p)),
        method="SLSQP",
        bounds=[(1e-6, 1.0)] * 4,
        constraints=[{"type": "ineq", "fun": lambda t: 1.0 - np.sum(t**p)}],
        options={"ftol": 1e-14, "maxiter": 1000},
    )
    np.testing.assert_allclose(theta, res.x, atol=1e-4)
    assert np.sum(a / theta) <= res.fun * (1 + 1e-8)  # SLSQP may end slightly infeasible


def test_theta_step_special_values():
    a = np.array([1.0, 4.0, 0.0])
    np.testing.assert_allclose(theta_step(a, 1.0), [1 / 3, 2 / 3, 0.0])
    np.testing.assert_allclose(theta_step(a, np.inf), np.ones(3))
    np.testing.assert_allclose(theta_step(np.zeros(2), 2.0), np.full(2, 2**-0.5))


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0])
def test_alternation_follows_closed_form_and_never_increases(p):
    X, y, task, kernels, _ = _mkl_setup(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = mtmkl_dcd(
            X,
            y,
            task,
            3,
            kernels,
            C=0.5,
            p=p,
            tol=1e-8,
            max_outer_iter=60,
            max_iter=100000,
            random_state=0,
            theta_floor=0.0,
        )
    h = res.info["history"]
    K = len(h["objective_w"])
    assert K >= 3
    for k in range(K - 1):
        expected = theta_step(h["theta"][k] ** 2 * h["q"][k], p)
        np.testing.assert_allclose(h["theta"][k + 1], expected, rtol=1e-12, atol=1e-300)
    seq = np.ravel(np.column_stack([h["objective_w"], h["objective_theta"]]))
    assert np.all(np.diff(seq) <= 1e-9 * seq[0])
    assert np.all(np.array(h["objective_theta"]) <= np.array(h["objective_w"]) + 1e-12)


# --------------------------------------------------------------------------- erratum eq. 24
def _paper_form_dcd(X, y, task, kernels, theta, C, epochs, literal, seed=0):
    """Algorithm 2 in the paper's representation (mixed weights w_mt), plain numpy."""
    n, d = X.shape
    M, T = len(kernels), kernels[0].shape[0]
    w = np.zeros((M, T, d))
    alpha = np.zeros(n)
    rng = np.random.default_rng(seed)
    for _ in range(epochs):
        for i in rng.permutation(n):
            t = task[i]
            fm = np.array([w[m, t] @ X[i] for m in range(M)])
            num = 1.0 - y[i] * (np.dot(theta, fm) if literal else fm.sum())
            den = sum(theta[m] * kernels[m][t, t] for m in range(M)) * (X[i] @ X[i])
            dstar = max(-alpha[i], min(C - alpha[i], num / den))
            alpha[i] += dstar
            for m in range(M):
                w[m] += dstar * theta[m] * y[i] * np.outer(kernels[m][t], X[i])
    f = np.einsum("mid,id->i", w[:, task], X)
    V = np.zeros((d, T))
    np.add.at(V.T, task, (alpha * y)[:, None] * X)
    q = np.array([np.sum(B * (V.T @ V)) for B in kernels])
    return 0.5 * theta @ q + C * np.sum(np.maximum(0.0, 1.0 - y * f))


def test_literal_eq24_converges_to_a_wrong_point():
    X, y, task, kernels, _ = _mkl_setup(5)
    kernels = kernels[:2]
    theta = np.array([0.3, 0.9])
    C = 1.0
    B = theta[0] * kernels[0] + theta[1] * kernels[1]
    ref = dcd_mtl_svm(X, y, task, 3, B, C=C, tol=1e-12, max_iter=10**5, random_state=0)
    opt = ref.objective[0]
    corrected = _paper_form_dcd(X, y, task, kernels, theta, C, 300, literal=False)
    literal = _paper_form_dcd(X, y, task, kernels, theta, C, 300, literal=True)
    assert abs(corrected - opt) <= 1e-6 * opt
    assert literal > opt * (1 + 1e-3)
