"""Working sets and gap-safe screening (solvers/working_set.py, penalties/row_blocks.py).

* the zero test of every row family (:class:`RowBlocks`) against the prox of the row;
* the strong concavity of the dual (the sphere's radius) against the conjugate itself;
* screening never discards a row that is nonzero at the optimum (hypothesis, both losses,
  both layouts, dense and sparse), from zero, from a neighbouring solution and at the optimum;
* the working-set solver and the plain solvers reach the same objective (1e-10);
* a sparse design is never densified on the way from ``fit`` to the solver;
* a path with sequential screening equals the unscreened path.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from multitask import L21Classifier, L21Regressor
from multitask.data import as_multitask_data
from multitask.losses import Logistic, Squared, SquaredHinge
from multitask.model_selection import regularization_path
from multitask.penalties import (
    L1,
    L21,
    FusedSparseGroupLasso,
    GraphRegularization,
    L1InfNorm,
    RowWeightedL1,
)
from multitask.penalties.dirty import DirtyNorm
from multitask.penalties.row_blocks import restrict_rows, row_blocks
from multitask.solvers import BlockCoordinateDescent, ProximalGradient, WorkingSet
from multitask.solvers.certificate import duality_gap
from multitask.solvers.working_set import (
    column_norms,
    dual_strong_concavity,
    gap_safe_rows,
    prefer_working_set,
)


# ----------------------------------------------------------------------------- problems
def _problem(seed, n=30, d=60, m=3, loss="squared", layout="shared", sparse=False,
             fit_intercept=True, weights=False, k=4):
    rng = np.random.default_rng(seed)
    W = np.zeros((d, m))
    W[rng.choice(d, k, replace=False)] = rng.standard_normal((k, m))

    def design(rows):
        X = rng.standard_normal((rows, d))
        if sparse:
            X = sp.csr_matrix(X * (rng.random(X.shape) < 0.3))
        return X

    def target(X, w):
        z = np.asarray(X @ w) + 0.3 * rng.standard_normal(X.shape[0])
        if loss == "squared":
            return z
        y = (z > np.median(z)).astype(float)
        y[:2] = [0.0, 1.0]  # both classes in every task
        return y

    classification = loss != "squared"
    if layout == "shared":
        X = design(n)
        Y = np.column_stack([target(X, W[:, t]) for t in range(m)])
        sw = rng.uniform(0.5, 2.0, n) if weights else None
        data, _ = as_multitask_data(X, Y, classification=classification, sample_weight=sw)
    else:
        Xs = [design(n + 3 * t) for t in range(m)]
        ys = [target(X, W[:, t]) for t, X in enumerate(Xs)]
        sw = [rng.uniform(0.5, 2.0, X.shape[0]) for X in Xs] if weights else None
        data, _ = as_multitask_data(Xs, ys, classification=classification, sample_weight=sw)
    if loss == "squared":
        return Squared(data, fit_intercept=fit_intercept)
    cls = Logistic if loss == "logistic" else SquaredHinge
    return cls(data, fit_intercept=fit_intercept, center=True)


def _objective(datafit, penalty, W, b):
    return float(datafit.value(W, b)) + float(penalty.value(W))


def _reference(datafit, penalty, tol=1e-10):
    """The unscreened solver: coordinate descent on the whole Gram matrix where it applies,
    accelerated proximal gradient otherwise."""
    bcd = BlockCoordinateDescent(tol=tol, max_iter=200000)
    solver = bcd if bcd.supports(datafit, penalty) else ProximalGradient(tol=tol,
                                                                         max_iter=200000)
    return solver.solve(datafit, penalty)


# ----------------------------------------------------------------------------- zero tests
def _row_prox_zero(penalty, g):
    """Whether the zero row is optimal for the gradient row ``g``: ``prox_r(-g) = 0`` (a
    one-row penalty, step 1)."""
    return not np.any(penalty.prox(-g[None, :], 1.0))


FAMILIES = [
    L1(0.7), L21(0.9), RowWeightedL1(np.array([0.6])),
    FusedSparseGroupLasso(0.3, 0.2, 0.5), FusedSparseGroupLasso(0.4, 0.3, 0.0),
    DirtyNorm(0.9, 0.4, np.inf), DirtyNorm(0.8, 0.5, 2.0), L1InfNorm(1.1),
]


@pytest.mark.parametrize("penalty", FAMILIES, ids=lambda p: repr(p))
def test_violation_is_the_zero_test_and_1_lipschitz(penalty):
    """``v(g) <= 0`` exactly when the row's prox at ``-g`` is zero (away from the boundary),
    and ``|v(g) - v(g')| <= ||g - g'||``."""
    rng = np.random.default_rng(0)
    m = 5
    blocks = row_blocks(penalty, 1)
    assert blocks is not None
    checked = 0
    for _ in range(400):
        g = rng.standard_normal(m) * rng.uniform(0.05, 1.0)
        v = float(blocks.violation(g[None, :])[0])
        if abs(v) < 1e-6:
            continue
        assert (v <= 0) == _row_prox_zero(penalty, g), (g, v)
        checked += 1
        h = g + 0.1 * rng.standard_normal(m)
        w = float(blocks.violation(h[None, :])[0])
        assert abs(w - v) <= np.linalg.norm(h - g) * (1 + 1e-12) + 1e-15
    assert checked > 300
    # both outcomes occur in the sample
    gs = rng.standard_normal((400, m)) * rng.uniform(0.05, 1.0, (400, 1))
    v = blocks.violation(gs)
    assert np.any(v < 0) and np.any(v > 0)


def test_scaled_violations_read_once_agree_with_scaled_gradients():
    """``violations(G, (1, s))`` equals the violations of ``G`` and of ``s G``."""
    rng = np.random.default_rng(1)
    G = rng.standard_normal((20, 4))
    for penalty in FAMILIES:
        blocks = row_blocks(penalty, 20) if not isinstance(penalty, RowWeightedL1) else \
            row_blocks(RowWeightedL1(np.full(20, 0.6)), 20)
        v1, v2 = blocks.violations(G, (1.0, 0.37))
        np.testing.assert_allclose(v1, blocks.violation(G), rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(v2, blocks.violation(0.37 * G), rtol=1e-12, atol=1e-13)


def test_row_blocks_of_penalties_and_restrictions():
    """The row-separable penalties offer blocks; a penalty whose rows differ is restricted by
    its own method; the trace norm and the split models offer none."""
    from multitask.penalties import SparseLowRank, TraceNorm

    assert row_blocks(TraceNorm(1.0), 5) is None
    assert row_blocks(SparseLowRank(1.0, 1.0), 5) is None
    pen = RowWeightedL1(np.array([0.0, 1.0, 2.0, 3.0]))
    blocks = row_blocks(pen, 4)
    assert blocks is not None and not blocks.uniform
    np.testing.assert_array_equal(blocks.free(), [True, False, False, False])
    sub = restrict_rows(pen, np.array([1, 3]))
    np.testing.assert_array_equal(sub.weights, [1.0, 3.0])
    assert restrict_rows(L21(0.5), np.array([2])) is not None


# ----------------------------------------------------------------------------- the sphere
@pytest.mark.parametrize("loss", ["squared", "logistic", "squared_hinge"])
def test_dual_strong_concavity_bounds_the_conjugate(loss):
    """``F^*(theta) = sum_i w_i ell^*(theta_i / w_i)`` is ``1 / (L max_i w_i)``-strongly
    convex: the midpoint inequality holds with that constant (weighted rows of different
    tasks), and fails with a constant twice as large for some pair (it is tight)."""
    df = _problem(3, n=12, d=4, m=2, loss=loss, layout="lists", weights=True)
    gamma = dual_strong_concavity(df)
    w = df.data.row_weights
    top = np.argmax(w)
    rng = np.random.default_rng(0)
    y = df.data.y
    tight = False
    for _ in range(200):
        # score derivatives a in the domain of ell^* (for the classification losses -y a in
        # [0, 1] or [0, inf)), theta = w a
        if loss == "squared":
            a1, a2 = rng.standard_normal(y.size), rng.standard_normal(y.size)
        else:
            hi = 1.0 if loss == "logistic" else 3.0
            a1 = -y * rng.uniform(0.05, 0.95 * hi, y.size)
            a2 = -y * rng.uniform(0.05, 0.95 * hi, y.size)
        if _ % 2:  # differ on the heaviest row only: the tight direction
            a2 = a1.copy()
            a2[top] = -y[top] * (0.5 if loss == "logistic" else 0.3) if loss != "squared" \
                else a1[top] + 1.0
        t1, t2 = w * a1, w * a2
        f1, f2 = df.conjugate_sum(a1), df.conjugate_sum(a2)
        fm = df.conjugate_sum(0.5 * (a1 + a2))
        gap = 0.5 * (f1 + f2) - fm
        sq = float(np.sum((t1 - t2) ** 2))
        assert gap >= gamma / 8 * sq * (1 - 1e-9) - 1e-15
        if gap < 2 * gamma / 8 * sq:
            tight = True
    assert tight


@pytest.mark.parametrize("layout", ["shared", "lists"])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_column_norms_are_the_centred_column_norms(layout, sparse, fit_intercept):
    """``column_norms`` is ``max_t ||x_{j,t} - mu_{jt}||`` of the design the loss sees (within
    its rounding margin)."""
    df = _problem(4, n=15, d=7, m=3, layout=layout, sparse=sparse,
                  fit_intercept=fit_intercept)
    data = df.data
    got = column_norms(data)
    X = data.X.toarray() if sp.issparse(data.X) else np.asarray(data.X)
    want = np.zeros(data.n_features)
    for t in range(data.n_tasks):
        Xt = X if data.shared else X[data.offsets[t] : data.offsets[t + 1]]
        if data.x_offset is not None:
            Xt = Xt - data.x_offset[:, t][None, :]
        want = np.maximum(want, np.linalg.norm(Xt, axis=0))
    assert np.all(got >= want * (1 - 1e-12))
    np.testing.assert_allclose(got, want, rtol=1e-4)


# ----------------------------------------------------------------------------- safety
@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(seed=st.integers(0, 10_000), loss=st.sampled_from(["squared", "logistic"]),
       layout=st.sampled_from(["shared", "lists"]), sparse=st.booleans(),
       penalty=st.sampled_from(["l21", "l1", "row_weighted"]),
       ratio=st.floats(0.05, 0.8), weights=st.booleans())
def test_screening_never_discards_a_row_of_the_optimum(seed, loss, layout, sparse, penalty,
                                                       ratio, weights):
    """From zero, from the solution at a stronger regularization (sequential) and at the
    optimum itself (dynamic), the gap-safe rows are zero in the unscreened solution at
    ``tol=1e-8``."""
    df = _problem(seed, n=20, d=30, m=3, loss=loss, layout=layout, sparse=sparse,
                  weights=weights)
    g0 = df.grad_at_zero()
    rng = np.random.default_rng(seed)
    if penalty == "row_weighted":
        c = rng.uniform(0.5, 1.5, g0.shape[0])
        if loss == "squared":  # free rows (a capped-l1 stage; with the logistic loss its
            c[rng.random(c.size) < 0.1] = 0.0  # unscreened solution takes 1e5 iterations)
        top = RowWeightedL1(c).alpha_max(g0) if np.all(c > 0) else \
            RowWeightedL1(np.where(c > 0, c, 1.0)).alpha_max(g0)
        make = lambda a: RowWeightedL1(a * c)  # noqa: E731
    else:
        cls = L21 if penalty == "l21" else L1
        top = cls(1.0).alpha_max(g0)
        make = cls
    pen = make(ratio * top)
    ref = _reference(df, pen, tol=1e-8)
    assert ref.converged
    W_star = ref.W
    norms = np.linalg.norm(W_star, axis=1)
    nonzero = norms > 1e-6 * max(norms.max(), 1e-300)
    b0 = df.optimal_intercept_at_zero() if df.has_intercept_variable else None
    previous = _reference(df, make(min(1.5 * ratio, 0.99) * top), tol=1e-8)
    points = [(np.zeros_like(W_star), b0),
              (previous.W, previous.intercept_variable),
              (W_star, ref.intercept_variable)]
    for W, b in points:
        safe = gap_safe_rows(df, pen, W, b)
        assert not np.any(safe & nonzero), (np.flatnonzero(safe & nonzero), norms[safe])
    # at the optimum the sphere is small: the rows far inside their zero test are discarded
    # (where the dual point is the loss's own: free rows with a gradient need the
    # certificate's correction, which builds no sphere)
    blocks = row_blocks(pen, W_star.shape[0])
    if np.any(blocks.free()):
        return
    safe = gap_safe_rows(df, pen, W_star, ref.intercept_variable)
    dp = df.dual_point(W_star, ref.intercept_variable)
    slack = -blocks.violation(dp.grad)
    clear = (slack > 0.05 * max(float(np.abs(dp.grad).max()), 1e-12)) & ~blocks.free()
    assert np.all(safe[clear])


# ----------------------------------------------------------------------------- the solver
CASES = [
    ("squared", "shared", False, lambda g: L21(0.2 * L21(1).alpha_max(g))),
    ("squared", "lists", True, lambda g: L1(0.1 * L1(1).alpha_max(g))),
    ("squared", "shared", True, lambda g: DirtyNorm(0.3 * L1InfNorm(1).alpha_max(g),
                                                    0.5 * L1(1).alpha_max(g))),
    ("squared", "lists", False, lambda g: FusedSparseGroupLasso(
        0.05 * L1(1).alpha_max(g), 0.05 * L1(1).alpha_max(g), 0.1 * L21(1).alpha_max(g))),
    ("squared", "shared", False, lambda g: GraphRegularization(
        0.3, np.array([[1.0, -1.0, 0.0], [-1.0, 2.0, -1.0], [0.0, -1.0, 1.0]]),
        0.2 * L1(1).alpha_max(g))),
    ("squared", "lists", False, lambda g: RowWeightedL1(
        np.r_[np.zeros(3), np.full(g.shape[0] - 3, 0.3 * L1(1).alpha_max(g))])),
    ("squared", "shared", False, lambda g: L1InfNorm(0.3 * L1InfNorm(1).alpha_max(g))),
    ("logistic", "shared", False, lambda g: L21(0.2 * L21(1).alpha_max(g))),
    ("logistic", "lists", True, lambda g: L1(0.15 * L1(1).alpha_max(g))),
    ("squared_hinge", "shared", True, lambda g: L21(0.2 * L21(1).alpha_max(g))),
]


@pytest.mark.parametrize("loss,layout,sparse,make", CASES)
def test_working_set_reaches_the_objective_of_the_plain_solver(loss, layout, sparse, make):
    """The working-set solver and the unscreened solver reach the same objective to 1e-10
    (relative), the returned certificate is the whole problem's (recomputed here), and on
    sparse solutions screening and the working set did their work (rows discarded, or a
    working set smaller than the features)."""
    df = _problem(7, n=40, d=120, m=3, loss=loss, layout=layout, sparse=sparse)
    pen = make(df.grad_at_zero())
    tol = 1e-11
    res = WorkingSet(tol=tol, max_iter=200000).solve(df, pen)
    ref = _reference(df, pen, tol=tol)
    assert res.converged and ref.converged
    p_ws = _objective(df, pen, res.W, res.intercept_variable)
    p_ref = _objective(df, pen, ref.W, ref.intercept_variable)
    assert abs(p_ws - p_ref) <= 1e-10 * abs(p_ref)
    cert = duality_gap(df, pen, res.W, res.intercept_variable, refine=False)
    assert cert.relative_gap == pytest.approx(res.optimality, rel=1e-6, abs=1e-14)
    assert res.optimality <= tol
    support = int(np.count_nonzero(np.any(ref.W != 0, axis=1)))
    if support < 120 // 4:  # a sparse solution: rows were left out or discarded
        assert res.info["working_set"] < 120 or res.info["screened"] > 0


def test_warm_start_screens_before_the_first_solve():
    """Sequential screening: from the solution at a stronger regularization the first
    certificate already discards rows, and the result equals the cold start's."""
    df = _problem(11, n=40, d=300, m=3)
    g = df.grad_at_zero()
    top = L21(1).alpha_max(g)
    first = WorkingSet(tol=1e-10).solve(df, L21(0.5 * top))
    warm = WorkingSet(tol=1e-10, max_outer=1).solve(df, L21(0.4 * top), coef_init=first.W)
    assert warm.info["screened"] > 100
    cold = WorkingSet(tol=1e-10).solve(df, L21(0.4 * top))
    full = WorkingSet(tol=1e-10).solve(df, L21(0.4 * top), coef_init=first.W)
    assert _objective(df, L21(0.4 * top), full.W, None) == pytest.approx(
        _objective(df, L21(0.4 * top), cold.W, None), rel=1e-10)


def test_settings_are_checked():
    with pytest.raises(ValueError, match="inner"):
        WorkingSet(inner="newton")
    with pytest.raises(ValueError, match="p0"):
        WorkingSet(p0=0)
    df = _problem(0, d=10)
    from multitask.penalties import TraceNorm

    with pytest.raises(ValueError, match="not separable over feature rows"):
        WorkingSet().check(df, TraceNorm(0.1))


# ----------------------------------------------------------------------------- estimators
def test_auto_takes_working_sets_with_many_features():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 400))
    Y = X[:, :3] @ rng.standard_normal((3, 4)) + 0.1 * rng.standard_normal((50, 4))
    est = L21Regressor(alpha=0.05).fit(X, Y)
    assert isinstance(est.solver_, WorkingSet) and est.converged_
    small = L21Regressor(alpha=0.05).fit(X[:, :100], Y)
    assert not isinstance(small.solver_, WorkingSet)
    clf = L21Classifier(alpha=0.02).fit(X, (Y > 0).astype(int))
    assert isinstance(clf.solver_, WorkingSet) and clf.converged_
    df = Squared(as_multitask_data(X, Y)[0])
    assert prefer_working_set(df, L21(0.1))
    from multitask.penalties import TraceNorm

    assert not prefer_working_set(df, TraceNorm(0.1))


class _NoDense:
    """Refuse any conversion of a sparse matrix to a dense array holding a large part of the
    design (at least half of its entries)."""

    def __init__(self, monkeypatch, n_entries, rows=None, n_features=None):
        import scipy.sparse._base as base
        import scipy.sparse._compressed as compressed

        self.limit = n_entries // 2
        # with ``rows`` (the row counts of the design's blocks) and ``n_features``: refuse a
        # dense matrix with a block's rows on one side (columns of the design; square ones
        # are Gram matrices of a working set), or a square one of at least half the features
        # (a Gram matrix of the whole design), whatever its size
        self.rows = None if rows is None else set(rows)
        self.n_features = n_features
        self.calls = 0
        for mod, cls in ((base, "_spbase"), (compressed, "_cs_matrix")):
            klass = getattr(mod, cls)
            for name in ("toarray", "todense"):
                if name in vars(klass):
                    monkeypatch.setattr(klass, name, self._wrap(vars(klass)[name]))

    def _wrap(self, fn):
        def guarded(A, *args, **kwargs):
            self.calls += 1
            a, b = A.shape
            if self.rows is None:
                dense_copy = a * b >= self.limit
            else:
                dense_copy = (((a in self.rows and b > 1) or (b in self.rows and a > 1))
                              and a != b) or (a == b and 2 * a >= self.n_features)
            if dense_copy:
                raise AssertionError(f"a dense copy of a {A.shape} sparse matrix was made")
            return fn(A, *args, **kwargs)
        return guarded

    def refuse_array_conversions(self, monkeypatch):
        """Also refuse numpy's array constructors on any sparse matrix (they would make a
        0-d object array, or a dense copy through a later conversion)."""
        for name in ("asarray", "array", "ascontiguousarray", "asfortranarray",
                     "asanyarray"):
            original = getattr(np, name)

            def guarded(a, *args, _original=original, _name=name, **kwargs):
                if sp.issparse(a):
                    raise AssertionError(f"np.{_name} was called on a {a.shape} sparse "
                                         "matrix")
                return _original(a, *args, **kwargs)
            monkeypatch.setattr(np, name, guarded)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_sparse_design_is_never_densified(monkeypatch, fmt, fit_intercept):
    """``fit``, ``alpha_max`` and ``default_grid`` on a sparse design with many features:
    no dense copy of ``X`` anywhere (regression, classification, long format)."""
    rng = np.random.default_rng(5)
    n, d, m = 60, 2000, 3
    X = sp.random(n, d, density=0.02, format=fmt, random_state=5)
    Y = np.asarray(X[:, :5] @ rng.standard_normal((5, m))) + 0.01 * rng.standard_normal((n, m))
    guard = _NoDense(monkeypatch, n * d)
    est = L21Regressor(alpha=0.1, fit_intercept=fit_intercept)
    est.set_params(alpha=0.2 * est.alpha_max(X, Y))
    est.fit(X, Y)
    assert isinstance(est.solver_, WorkingSet) and est.converged_
    est.default_grid(X, Y)
    clf = L21Classifier(alpha=0.05, fit_intercept=fit_intercept).fit(X, (Y > 0).astype(int))
    assert isinstance(clf.solver_, WorkingSet)
    task = np.repeat([0, 1], n // 2)
    L21Regressor(alpha=0.05, fit_intercept=fit_intercept).fit(X, Y[:, 0], task)
    # the guard is live: a dense copy of X is refused
    with pytest.raises(AssertionError, match="dense copy"):
        X.toarray()
    assert guard.calls >= 1


@pytest.mark.parametrize("layout", ["shared", "lists", "long"])
@pytest.mark.parametrize("model", ["L21Regressor", "IndependentLassoRegressor", "L21Classifier",
                                   "IndependentLassoClassifier"])
def test_no_dense_copy_of_a_sparse_design_from_fit_to_the_solver(monkeypatch, layout, model):
    """Every path from ``fit`` (and ``alpha_max``) to the solver keeps a sparse design sparse,
    shared, per-task (a list of CSR blocks) and in long format: ``toarray``/``todense`` of
    the design and numpy's array constructors on any sparse matrix raise."""
    import multitask

    rng = np.random.default_rng(8)
    d, m, sizes = 1500, 3, (37, 43, 61)
    blocks = [sp.random(k, d, density=0.02, format="csr", random_state=t)
              for t, k in enumerate(sizes)]
    w = np.zeros(d)
    w[:5] = rng.standard_normal(5)
    classifier = model.endswith("Classifier")

    def target(X):
        z = np.asarray(X @ w).ravel() + 0.01 * rng.standard_normal(X.shape[0])
        return (z > np.median(z)).astype(int) if classifier else z

    if layout == "shared":
        args = (blocks[0], np.column_stack([target(blocks[0]) for _ in range(m)]))
    elif layout == "lists":
        args = (blocks, [target(X) for X in blocks])
    else:
        X = sp.vstack(blocks, format="csr")
        args = (X, target(X), np.repeat(np.arange(m), [b.shape[0] for b in blocks]))
    rows = {37 if layout == "shared" else k for k in sizes} | {
        37 * m if layout == "shared" else sum(sizes)}
    guard = _NoDense(monkeypatch, 0, rows=rows, n_features=d)
    guard.refuse_array_conversions(monkeypatch)
    est = getattr(multitask, model)()
    est.set_params(alpha=0.3 * est.alpha_max(*args))
    est.fit(*args)
    assert isinstance(est.solver_, WorkingSet) and est.converged_
    assert np.any(est.coef_ != 0)
    with pytest.raises(AssertionError, match="sparse"):
        np.asarray(blocks[0])
    with pytest.raises(AssertionError, match="dense copy"):
        blocks[0][:, :10].toarray()


def test_path_with_sequential_screening_equals_the_unscreened_path():
    """``regularization_path`` of the working-set model (warm starts: the first certificate at
    each value screens with the previous solution) gives the objectives of the same solver
    without screening at every value, and screening discarded rows along the way."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((40, 500))
    Y = X[:, :4] @ rng.standard_normal((4, 3)) + 0.3 * rng.standard_normal((40, 3))
    grid = L21Regressor().alpha_max(X, Y) * np.logspace(0, -1.5, 6)
    screened = []

    def record(est, point):
        screened.append(est.solver_info_.get("screened", 0))

    ws = regularization_path(L21Regressor(tol=1e-10), X, Y, param_name="alpha", values=grid)
    unscreened = L21Regressor(tol=1e-10, solver=WorkingSet(tol=1e-10, screening=False))
    plain = regularization_path(unscreened, X, Y, param_name="alpha", values=grid)
    data, _ = as_multitask_data(X, Y)
    df = Squared(data)
    for k, alpha in enumerate(grid):
        p1 = _objective(df, L21(alpha), ws.coefs[k].T, None)
        p2 = _objective(df, L21(alpha), plain.coefs[k].T, None)
        assert abs(p1 - p2) <= 1e-9 * p2
    from multitask.model_selection._path import fit_path

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit_path(L21Regressor(tol=1e-8), X, Y, [{"alpha": a} for a in grid], on_fit=record)
    assert sum(screened) > 0


def test_a_path_costs_at_most_three_fits_at_its_smallest_alpha():
    """Warm starts and sequential screening: the 10 values of a path from ``alpha_max`` down to
    ``0.03 alpha_max`` (a sparse design with 20 times more features than rows) cost at most 3
    times one cold fit at the last value (CPU time, the least of 3 runs each; measured 1.5).
    ``benchmarks/bench_path.py`` runs the issue's designs."""
    import time

    rng = np.random.default_rng(0)
    n, d, m = 200, 4000, 4
    X = sp.random(n, d, density=0.005, format="csc", random_state=0,
                  data_rvs=rng.standard_normal)
    W = np.zeros((d, m))
    W[rng.choice(d, 10, replace=False)] = rng.standard_normal((10, m))
    Y = np.asarray(X @ W)
    Y += 0.5 * Y.std() * rng.standard_normal(Y.shape)
    est = L21Regressor(fit_intercept=False)
    grid = est.default_grid(X, Y, alpha_ratio=0.03)["alpha"]
    L21Regressor(alpha=grid[-1], fit_intercept=False).fit(X, Y)  # compilation apart

    def least(fn):
        out = []
        for _ in range(3):
            t0 = time.process_time()
            fn()
            out.append(time.process_time() - t0)
        return min(out)

    one = least(lambda: L21Regressor(alpha=grid[-1], fit_intercept=False).fit(X, Y))
    path = least(lambda: regularization_path(est, X, Y, param_name="alpha", values=grid))
    assert path <= 3 * one, (path, one)


# ----------------------------------------------------------------------------- residual CD
@pytest.mark.parametrize("layout", ["shared", "lists"])
@pytest.mark.parametrize("sparse", [False, True])
def test_residual_coordinate_descent_against_cvxpy(layout, sparse):
    """Coordinate descent on the residuals reaches cvxpy's optimum of the weighted l2,1
    (sparse group lasso rows: l1 + l2,1, and a ridge) least squares with intercepts, on the
    user's arrays (1e-6 relative)."""
    cp = pytest.importorskip("cvxpy")
    from multitask.penalties.base import gauge_by_prox, norm_bound
    from multitask.solvers import ResidualCoordinateDescent

    rng = np.random.default_rng(3)
    n, d, m = 25, 8, 3
    Xs = [rng.standard_normal((n + 2 * t, d)) for t in range(m)]
    if sparse:
        Xs = [X * (rng.random(X.shape) < 0.5) for X in Xs]
    ys = [X[:, :2] @ rng.standard_normal(2) + 0.5 * rng.standard_normal(X.shape[0])
          for X in Xs]
    ws = [rng.uniform(0.5, 2.0, X.shape[0]) for X in Xs]
    if layout == "shared":
        Xs = [Xs[0]] * m
        ws = [ws[0]] * m
        ys = [X[:, :2] @ rng.standard_normal(2) + 0.5 * rng.standard_normal(n) for X in Xs]
        data, _ = as_multitask_data(sp.csr_matrix(Xs[0]) if sparse else Xs[0],
                                    np.column_stack(ys), sample_weight=ws[0])
    else:
        data, _ = as_multitask_data([sp.csr_matrix(X) for X in Xs] if sparse else Xs, ys,
                                    sample_weight=ws)
    a2 = 0.02
    df = Squared(data, fit_intercept=True, alpha_l2=a2)
    a_l1, a_l21 = 0.02, 0.15

    class SparseGroup(L21):
        def row_prox_params(self):
            return (a_l1, a_l21, 0.0)

        def value(self, W):
            return a_l1 * float(np.abs(W).sum()) + a_l21 * float(
                np.linalg.norm(W, axis=1).sum())

        def prox(self, V, step):
            U = np.sign(V) * np.maximum(np.abs(V) - step * a_l1, 0.0)
            return L21(a_l21).prox(U, step)

        def dual_bound(self, G):  # a norm: s_max = 1 / gauge of dh(0)
            return norm_bound(1.0, gauge_by_prox(self, G))

    pen = SparseGroup(a_l21)
    res = ResidualCoordinateDescent(tol=1e-11, max_iter=100000).solve(df, pen)
    assert res.converged
    W = cp.Variable((d, m))
    b = cp.Variable(m)
    loss = sum(cp.sum(cp.multiply(w, cp.square(X @ W[:, t] + b[t] - y))) / (2 * w.sum())
               for t, (X, y, w) in enumerate(zip(Xs, ys, ws, strict=True)))
    obj = loss + a2 / 2 * cp.sum_squares(W) + a_l1 * cp.sum(cp.abs(W)) + a_l21 * cp.sum(
        cp.norm(W, 2, axis=1))
    prob = cp.Problem(cp.Minimize(obj))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    W.value = res.W
    b.value = res.intercept
    ours = float(obj.value)
    assert ours <= prob.value * (1 + 1e-6) + 1e-12
    assert ours >= prob.value * (1 - 1e-6) - 1e-12


def test_anderson_extrapolation_of_residual_coordinate_descent():
    """More columns than rows (a small ``alpha``): Anderson extrapolation reaches the same
    objective (1e-9) in fewer epochs than plain coordinate descent on the residuals."""
    from multitask.solvers import ResidualCoordinateDescent

    rng = np.random.default_rng(4)
    X = rng.standard_normal((50, 300))
    Y = X[:, :5] @ rng.standard_normal((5, 3)) + 0.5 * rng.standard_normal((50, 3))
    df = Squared(as_multitask_data(X, Y)[0], fit_intercept=False)
    pen = L21(0.02 * L21(1).alpha_max(df.grad_at_zero()))
    runs = [ResidualCoordinateDescent(tol=1e-10, max_iter=100_000, anderson=a).solve(df, pen)
            for a in (0, 5)]
    assert all(r.converged for r in runs)
    p0, p5 = (_objective(df, pen, r.W, None) for r in runs)
    assert abs(p0 - p5) <= 1e-9 * p0
    assert runs[1].n_iter < 0.8 * runs[0].n_iter, (runs[0].n_iter, runs[1].n_iter)
    with pytest.raises(ValueError, match="anderson"):
        ResidualCoordinateDescent(anderson=-1)


@pytest.mark.parametrize("model", ["L21Regressor", "L21Classifier"])
@pytest.mark.parametrize("layout", ["shared", "lists"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_alpha_max_reads_a_sparse_design_once(monkeypatch, model, layout, fit_intercept):
    """``alpha_max`` is one product ``X^T r`` (the gradient at zero with the best
    intercepts), no product ``X W`` at ``W = 0``; with intercepts, per-task sparse designs
    add the product of the feature means (the centring, computed once per data)."""
    import multitask
    from multitask.data import MultiTaskData

    calls = {"matvec": 0, "rmatvec": 0}
    for name in calls:
        original = getattr(MultiTaskData, name)

        def counted(self, *args, _name=name, _original=original, **kwargs):
            calls[_name] += 1
            return _original(self, *args, **kwargs)
        monkeypatch.setattr(MultiTaskData, name, counted)
    rng = np.random.default_rng(3)
    X = sp.random(60, 500, density=0.05, format="csr", random_state=3)
    Y = np.asarray(X[:, :3] @ rng.standard_normal((3, 3))) + 0.1 * rng.standard_normal((60, 3))
    if model.endswith("Classifier"):
        Y = (Y > np.median(Y, axis=0)).astype(int)
    args = (X, Y) if layout == "shared" else ([X[:30], X[30:]], [Y[:30, 0], Y[30:, 1]])
    assert getattr(multitask, model)(fit_intercept=fit_intercept).alpha_max(*args) > 0
    means = int(fit_intercept and layout == "lists")
    assert calls == {"matvec": 0, "rmatvec": 1 + means}
