"""The projected dual point's correction on the tasks' rows (``multitask.solvers.thin_dual``).

On tasks of fewer rows than features the correction ``delta_t = Xc_t c_t``, ``Xc_t^T D_t Xc_t
c_t = step_t`` (minimum norm), comes from the ``n_t x n_t`` Gram matrix of the task's rows
instead of the eigendecompositions of the ``d x d`` ones: checked against the definition
(dense copies, ``d x d`` pseudo-inverses) and the certificate's Gram route, for least squares
and the logistic loss, with and without intercept, with row weights, dense and sparse (a
feature constant in a task); and a certified fit keeps its certificate.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse

from multitask import IndependentLassoRegressor, L21Regressor
from multitask.solvers.thin_dual import thin_correction

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _problem(loss: str, intercept: bool, weighted: bool, sparse: bool = False, seed: int = 0,
             sizes=(7, 9, 5)):
    """The datafit of an independent lasso on 3 tasks of 7, 9 and 5 rows (``sizes``) and 20
    features (dense, or CSR blocks with a feature constant in the first task)."""
    rng = np.random.default_rng(seed)
    X = [rng.standard_normal((n, 20)) + 2.0 for n in sizes]
    y = [x[:, :3] @ rng.standard_normal(3) + 0.1 * rng.standard_normal(len(x)) for x in X]
    if sparse:
        X = [np.where(rng.random(x.shape) < 0.5, x, 0.0) for x in X]
        X[0][:, 7] = 1.5
        X = [scipy.sparse.csr_matrix(x) for x in X]
    if loss == "logistic":
        from multitask import IndependentLassoClassifier

        y = [np.where(v > np.median(v), 1, 0) for v in y]
        est = IndependentLassoClassifier(loss="logistic", fit_intercept=intercept)
    else:
        est = IndependentLassoRegressor(fit_intercept=intercept)
    weights = ([rng.uniform(0.2, 3.0, n) for n in sizes] if weighted else None)
    est._validate_params()
    if weighted:
        data, _, _ = est._convert(X, y, None, sample_weight=weights)
    else:
        data, _, _ = est._convert(X, y, None)
    return est._make_datafit(data)


def _gram_route(datafit, step):
    """``delta`` through the pseudo-inverses of the loss's Gram matrices (``weighted_grams``),
    the route the certificate takes on tall tasks."""
    G, mu = datafit.weighted_grams()
    coef = np.stack([np.linalg.pinv(G[t], rcond=1e-12, hermitian=True) @ step[:, t]
                     for t in range(step.shape[1])], axis=1)
    delta = datafit.data.matvec(coef)
    if mu is not None:
        delta = delta - datafit.data.expand(np.einsum("jt,jt->t", mu, coef))
    return delta


def _definition(datafit, step):
    """``delta_t = Xc_t c_t``, ``c_t = (Xc_t^T D_t Xc_t)^+ step_t``, from dense copies of the
    rows (centred by their weighted means when the intercepts are variables, else by the
    data's centring; the features constant in a task dropped), and the reach ``Xc_t^T D_t
    delta_t``."""
    data = datafit.data
    centre = getattr(datafit, "has_intercept_variable", False)
    out, reach = [], []
    for t in range(step.shape[1]):
        rows = slice(int(data.offsets[t]), int(data.offsets[t + 1]))
        w = data.row_weights[rows]
        X = data.task_X(t)
        X = X.toarray() if scipy.sparse.issparse(X) else np.array(X, dtype=float)
        X = X - ((w @ X) / w.sum() if centre else
                 (0.0 if data.x_offset is None else data.x_offset[:, t]))
        if data.x_constant is not None:
            X[:, data.x_constant[:, t]] = 0.0
        H = X.T @ (w[:, None] * X)
        out.append(X @ (np.linalg.pinv(H, rcond=1e-12, hermitian=True) @ step[:, t]))
        reach.append(X.T @ (w * out[-1]))
    return np.concatenate(out), np.stack(reach, axis=1)


@pytest.mark.parametrize("sparse", [False, True, "equal"])
@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("intercept", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
def test_the_correction_is_its_definition(loss, intercept, weighted, sparse):
    """Tasks of unequal sizes (one task at a time), dense or sparse, and tasks of equal
    sizes in a dense design (all tasks at once)."""
    equal = sparse == "equal"
    sparse = sparse is True
    datafit = _problem(loss, intercept, weighted, sparse, sizes=(8, 8, 8) if equal else (7, 9, 5))
    step = np.random.default_rng(1).standard_normal((20, 3))
    thin = thin_correction(datafit, step)
    assert thin is not None
    centre = bool(getattr(datafit, "has_intercept_variable", False))
    assert datafit.data.cached(("_thin_dual_factors", centre), None)[0] == (
        "batched" if equal else "tasks")
    assert np.array_equal(thin_correction(datafit, step), thin)  # from the cached factors
    want, reach = _definition(datafit, step)
    np.testing.assert_allclose(thin, want, rtol=1e-7, atol=1e-9)
    # it moves the gradient by the part of the step in the range of the design
    moved = datafit.data.rmatvec(thin * datafit.data.row_weights)
    np.testing.assert_allclose(moved, reach, rtol=1e-7, atol=1e-9)
    if not (sparse and intercept and loss == "logistic"):
        # the Gram route lands on the same point (on sparse designs with intercept
        # variables its Gram matrices are not centred, and the certificate rebalances its
        # correction afterwards: a different, equally valid, correction)
        np.testing.assert_allclose(thin, _gram_route(datafit, step), rtol=1e-7, atol=1e-9)


def test_it_declines_tall_tasks_and_shared_designs():
    rng = np.random.default_rng(0)
    est = IndependentLassoRegressor()
    est._validate_params()
    tall, _, _ = est._convert([rng.standard_normal((30, 5)) for _ in range(2)],
                              [rng.standard_normal(30) for _ in range(2)], None)
    assert thin_correction(est._make_datafit(tall), np.ones((5, 2))) is None
    shared, _, _ = est._convert(rng.standard_normal((8, 20)), rng.standard_normal((8, 3)), None)
    assert thin_correction(est._make_datafit(shared), np.ones((20, 3))) is None


@pytest.mark.parametrize("cls", [IndependentLassoRegressor, L21Regressor])
def test_a_wide_fit_is_still_certified(cls):
    """Working sets on tasks of 15 rows and 400 features (the corrections take the thin
    route): certified at 1e-8, at the optimum accelerated gradient reaches."""
    rng = np.random.default_rng(3)
    X = [rng.standard_normal((15, 400)) for _ in range(4)]
    w = np.zeros(400)
    w[:5] = 2.0
    y = [x @ w + 0.3 * rng.standard_normal(15) for x in X]
    alpha = 0.05 * cls().alpha_max(X, y)
    est = cls(alpha=alpha, tol=1e-8, solver="working_set").fit(X, y)
    assert est.converged_ and est.optimality_ <= 1e-8
    ref = cls(alpha=alpha, tol=1e-10, solver="fista", max_iter=100000).fit(X, y)
    assert est.objective_[-1] <= ref.objective_[-1] + 1e-7 * abs(ref.objective_[-1])
