"""One machine, many tasks: the spectral operators on the small side, the squared loss's
caches and Lipschitz bound, and what alpha_max costs.

References are independent: numpy's SVD and eigenvalues, the l1-ball projection written out
here, the centred loss computed from explicitly centred copies. Speed itself is measured in
benchmarks/bench_scale.py; here the tests check the routes taken and the work done (passes
over the data, caches built, copies made).
"""

from __future__ import annotations

import numpy as np
import pytest

from multitask import TraceNormRegressor
from multitask.data import as_multitask_data
from multitask.losses import Squared, max_scaled_eigenvalue
from multitask.penalties import TraceNorm
from multitask.penalties.prox import (
    GRAM_RTOL,
    project_trace_ball,
    r_factor,
    spectral_norm,
    spectral_shrink,
    spectral_shrink_matrix,
    svt_with_values,
    trace_norm,
)


def _matrix(rng, d, m, rank=None, decay=None):
    """A (d, m) matrix with a given rank or with singular values decaying to ``decay``."""
    k = min(d, m)
    U, _ = np.linalg.qr(rng.standard_normal((d, k)))
    V, _ = np.linalg.qr(rng.standard_normal((m, k)))
    s = np.logspace(0, np.log10(decay), k) if decay else rng.uniform(0.5, 3.0, k)
    if rank is not None:
        s[rank:] = 0.0
    return (U * s) @ V.T


def _svt_reference(V, t):
    U, s, Vt = np.linalg.svd(V, full_matrices=False)
    s = np.maximum(s - t, 0.0)
    return (U * s) @ Vt, s[s > 0]


SHAPES = [(6, 6), (6, 13), (6, 300), (300, 6), (40, 9)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("method", ["auto", "gram", "qr", "svd"])
@pytest.mark.parametrize("rel", [0.3, 1e-2, 1e-6, 0.0])
def test_spectral_shrink_is_singular_value_thresholding(shape, method, rel):
    rng = np.random.default_rng(sum(shape))
    V = _matrix(rng, *shape, decay=1e-9)
    t = rel * np.linalg.norm(V, 2)
    out, s = spectral_shrink(V, lambda v: np.maximum(v - t, 0.0), method=method)
    ref, s_ref = _svt_reference(V, t)
    assert out.flags.c_contiguous and out.shape == V.shape
    # thresholds far below the largest singular value are computed without squaring
    np.testing.assert_allclose(out, ref, atol=1e-11 * np.abs(V).max())
    assert s.sum() == pytest.approx(s_ref.sum(), rel=1e-10)
    assert len(s) == len(s_ref)


def test_the_gram_route_falls_back_when_a_kept_value_is_small():
    rng = np.random.default_rng(1)
    V = _matrix(rng, 8, 400, decay=1e-12)
    t = 0.1 * GRAM_RTOL * np.linalg.norm(V, 2)  # keeps values below GRAM_RTOL s_1
    out, _ = spectral_shrink(V, lambda v: np.maximum(v - t, 0.0), method="gram")
    np.testing.assert_allclose(out, _svt_reference(V, t)[0], atol=1e-13)
    out, s = svt_with_values(V, t)
    np.testing.assert_allclose(out, _svt_reference(V, t)[0], atol=1e-13)


def _l1_ball(s, radius):
    """Projection of a non-negative vector onto the l1 ball, by sorting."""
    if s.sum() <= radius:
        return s.copy()
    u = np.sort(s)[::-1]
    c = np.cumsum(u) - radius
    k = np.nonzero(u - c / np.arange(1, len(u) + 1) > 0)[0][-1]
    return np.maximum(s - c[k] / (k + 1), 0.0)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("frac", [0.2, 0.9, 1.5])
def test_trace_ball_projection(shape, frac):
    rng = np.random.default_rng(7)
    V = _matrix(rng, *shape)
    U, s, Vt = np.linalg.svd(V, full_matrices=False)
    radius = frac * s.sum()
    ref = (U * _l1_ball(s, radius)) @ Vt
    out, rank = project_trace_ball(V, radius, return_rank=True)
    np.testing.assert_allclose(out, ref, atol=1e-11)
    assert rank == np.count_nonzero(_l1_ball(s, radius) > 1e-12 * s[0])


@pytest.mark.parametrize("shape", SHAPES)
def test_norms_through_the_small_side(shape):
    rng = np.random.default_rng(3)
    V = _matrix(rng, *shape, decay=1e-6)
    s = np.linalg.svd(V, compute_uv=False)
    assert trace_norm(V) == pytest.approx(s.sum(), rel=1e-12)
    assert spectral_norm(V) == pytest.approx(s[0], rel=1e-12)
    assert TraceNorm(2.0).value(V) == pytest.approx(2.0 * s.sum(), rel=1e-12)
    assert TraceNorm(1.0).alpha_max(V) == pytest.approx(s[0], rel=1e-12)


def test_r_factors_of_column_blocks_combine_by_qr():
    rng = np.random.default_rng(4)
    V = rng.standard_normal((7, 90))
    R1, R2, R3 = r_factor(V[:, :3]), r_factor(V[:, 3:50]), r_factor(V[:, 50:])
    R = np.linalg.qr(np.vstack([R1, R2, R3]), mode="r")
    np.testing.assert_allclose(R.T @ R, V @ V.T, atol=1e-12)
    M, s_new = spectral_shrink_matrix(R, lambda s: np.maximum(s - 1.0, 0.0))
    ref, s_ref = _svt_reference(V, 1.0)
    np.testing.assert_allclose(M @ V, ref, atol=1e-12)
    np.testing.assert_allclose(np.sort(s_new), np.sort(s_ref), atol=1e-12)


# ------------------------------------------------------------------------ the Lipschitz bound
def _psd_stack(rng, k, q, scale_spread=1.0):
    A = rng.standard_normal((k, q + 3, q)) * rng.uniform(1, 1 + scale_spread, (k, 1, 1))
    return np.matmul(A.transpose(0, 2, 1), A)


@pytest.mark.parametrize("k", [3, 200, 1000])
def test_max_scaled_eigenvalue_is_the_exact_maximum(k):
    rng = np.random.default_rng(k)
    G = _psd_stack(rng, k, 9)
    scale = 1.0 / rng.integers(5, 40, k)
    exact = float(np.max(scale * np.linalg.eigvalsh(G)[:, -1]))
    bound = max_scaled_eigenvalue(G, scale)
    assert exact <= bound <= exact * (1 + 1e-11)


def test_max_scaled_eigenvalue_when_the_power_iteration_is_misled():
    """The largest matrix has its top eigenvector orthogonal to the start of the power
    iteration (so the ranking misses it); the certificate must catch it."""
    rng = np.random.default_rng(0)
    q, k = 6, 500
    G = _psd_stack(rng, k, q)
    start = np.ones(q) + 1e-3 * np.cos(np.arange(q))
    u = rng.standard_normal(q)
    u -= (u @ start) / (start @ start) * start
    u /= np.linalg.norm(u)
    G[321] = 1e4 * np.outer(u, u)  # start . u = 0: every power step stays off u
    G[17] = 0.0
    scale = np.ones(k)
    exact = float(np.max(np.linalg.eigvalsh(G)[:, -1]))
    assert exact == pytest.approx(1e4)
    assert exact <= max_scaled_eigenvalue(G, scale) <= exact * (1 + 1e-11)


def _lists(sizes, d, seed=0, shift=0.0):
    rng = np.random.default_rng(seed)
    Xs = [rng.standard_normal((n, d)) * rng.uniform(0.5, 2.0) + shift for n in sizes]
    ys = [X @ rng.standard_normal(d) + rng.standard_normal(len(X)) for X in Xs]
    return Xs, ys


@pytest.mark.parametrize("sizes,d", [([30] * 300, 8), ([4, 9, 2, 7] * 60, 12),
                                     ([25, 40, 31] * 100, 10)])
@pytest.mark.parametrize("use_gram", [True, False])
def test_squared_lipschitz_is_exact_on_every_route(sizes, d, use_gram):
    Xs, ys = _lists(sizes, d, shift=2.0)
    data, _ = as_multitask_data(Xs, ys)
    df = Squared(data, use_gram=use_gram)
    exact = max(np.linalg.norm(X - X.mean(0), 2) ** 2 / len(X) for X in Xs)
    assert exact <= df.lipschitz() <= exact * (1 + 1e-9)
    df0 = Squared(data, fit_intercept=False, use_gram=use_gram)
    exact0 = max(np.linalg.norm(X, 2) ** 2 / len(X) for X in Xs)
    assert exact0 <= df0.lipschitz() <= exact0 * (1 + 1e-9)


# ------------------------------------------------------------------------ caches and copies
@pytest.mark.parametrize("use_gram", [True, False])
def test_centring_without_a_copy_keeps_the_loss_accurate(use_gram):
    """Features far from zero (mean 1e4, spread 1): the loss and its gradient equal those
    of explicitly centred copies (the implicit centring must not lose them to rounding)."""
    Xs, ys = _lists([20, 35, 27], 5, seed=2, shift=1e4)
    data, _ = as_multitask_data(Xs, ys)
    df = Squared(data, use_gram=use_gram)
    assert np.shares_memory(df.data.X, data.X)  # no centred copy of the design
    rng = np.random.default_rng(5)
    W = rng.standard_normal((5, 3))
    Xc = [X - X.mean(0) for X in Xs]
    yc = [y - y.mean() for y in ys]
    pairs = list(enumerate(zip(Xc, yc, strict=True)))
    f_ref = sum(0.5 * np.mean((X @ W[:, t] - y) ** 2) for t, (X, y) in pairs)
    G_ref = np.stack([X.T @ (X @ W[:, t] - y) / len(y) for t, (X, y) in pairs], axis=1)
    f, G, _ = df.value_and_grad(W)
    assert f == pytest.approx(f_ref, rel=1e-9)
    np.testing.assert_allclose(G, G_ref, rtol=1e-7, atol=1e-7 * np.abs(G_ref).max())


@pytest.mark.parametrize("use_gram", [True, False])
def test_shared_design_is_centred_without_a_copy_and_accurately(use_gram):
    """A dense shared design with features far from zero (mean 1e4, spread 1) is centred
    without a copy, and the loss, gradient and Gram matrix equal the explicitly centred ones."""
    rng = np.random.default_rng(3)
    X = 1e4 + rng.standard_normal((300, 6))
    Y = X @ rng.standard_normal((6, 4)) + rng.standard_normal((300, 4))
    data, _ = as_multitask_data(X, Y)
    df = Squared(data, use_gram=use_gram)
    assert np.shares_memory(df.data.X, data.X)
    Xc, Yc = X - X.mean(0), Y - Y.mean(0)
    W = rng.standard_normal((6, 4))
    f_ref = 0.5 * np.mean((Xc @ W - Yc) ** 2, axis=0).sum()
    G_ref = Xc.T @ (Xc @ W - Yc) / len(X)
    f, G, _ = df.value_and_grad(W)
    assert f == pytest.approx(f_ref, rel=1e-9)
    np.testing.assert_allclose(G, G_ref, rtol=1e-7, atol=1e-7 * np.abs(G_ref).max())
    if use_gram:
        np.testing.assert_allclose(df.data.gram()[0], Xc.T @ Xc, rtol=1e-10)


def test_alpha_max_is_one_pass_over_the_data(monkeypatch):
    """est.alpha_max builds no Gram matrix and no centred copy: after the input conversion it
    reads the design once (the per-task means and X^T y in one compiled pass) and computes
    the spectral norm of a d x m matrix through its d x d Gram matrix."""
    from multitask.data import MultiTaskData

    Xs, ys = _lists([30] * 50, 6, seed=3, shift=1.0)
    calls = {"rmatvec": 0, "matvec": 0, "gram": 0}
    for name in calls:
        original = getattr(MultiTaskData, name)

        def counted(self, *a, _name=name, _orig=original, **k):
            calls[_name] += 1
            return _orig(self, *a, **k)

        monkeypatch.setattr(MultiTaskData, name, counted)
    import multitask.data.statistics as data_module  # the module whose code calls it

    means_pass = data_module._dense_task_sums_constant
    passes = []
    monkeypatch.setattr(data_module, "_dense_task_sums_constant",
                        lambda *a: passes.append(1) or means_pass(*a))
    monkeypatch.setattr(Squared, "_grams", lambda self: pytest.fail("Gram matrices built"))
    top = TraceNormRegressor().alpha_max(Xs, ys)
    # one compiled pass for the means, the features constant within a task and X^T y
    assert len(passes) == 1
    assert calls == {"rmatvec": 0, "matvec": 0, "gram": 0}
    G = np.stack([(X - X.mean(0)).T @ (y - y.mean()) / len(y)
                  for X, y in zip(Xs, ys, strict=True)], axis=1)
    assert top == pytest.approx(np.linalg.norm(G, 2), rel=1e-12)


@pytest.mark.parametrize("shared", [True, False])
def test_sparse_designs_build_gram_matrices_only_when_as_dense_as_them(shared):
    """A sparse design goes through Gram matrices (and offers "quadratic") only when it
    stores at least GRAM_NONZEROS_PER_ENTRY * d^2 entries per matrix; the loss is the same
    either way."""
    import scipy.sparse as sp

    from multitask.losses import GRAM_NONZEROS_PER_ENTRY

    rng = np.random.default_rng(0)
    d, m, n = 60, 3, 400
    W = rng.standard_normal((d, m))
    for density, expect in ((0.05, False), (0.5, True)):  # nnz/d^2 per matrix: 0.33, 3.3
        Xs = [sp.random(n, d, density=density, random_state=rng, format="csr")
              for _ in range(1 if shared else m)]
        Y = rng.standard_normal((n, m))
        data, _ = (as_multitask_data(Xs[0], Y) if shared
                   else as_multitask_data(Xs, [Y[:, t] for t in range(m)]))
        per_matrix = sum(X.nnz for X in Xs) / len(Xs)
        assert (per_matrix >= GRAM_NONZEROS_PER_ENTRY * d * d) is expect
        auto, gram, direct = Squared(data), Squared(data, use_gram=True), Squared(data,
                                                                                 use_gram=False)
        assert auto.use_gram is expect
        assert ("quadratic" in auto.capabilities) is expect
        v_g, g_g = gram.value_and_grad(W)[:2]
        v_d, g_d = direct.value_and_grad(W)[:2]
        np.testing.assert_allclose(v_g, v_d, rtol=1e-10)
        np.testing.assert_allclose(g_g, g_d, rtol=1e-9, atol=1e-12)
