"""Numerics on the whole accepted range [1e-100, 1e100], and the last unclear refusals.

* The l1-ball and spectral routines are positively homogeneous; they rescale internally, so
  that data near 1e100 (whose gradients reach 1e200) or 1e-100 neither overflow nor vanish:
  ``SparseLowRankRegressor`` on data scaled by 1e80 used to raise ``ZeroDivisionError`` in
  the l1-ball threshold of its spectral shrink (or ``LinAlgError`` in the Gram route).
* Complex numbers inside an object array are refused with the message of every complex input
  (they raised a ``TypeError`` in scikit-learn's conversion).
* ``similarity_params`` keys that ``MultiTaskKernelClassifier``'s task kernels do not read are
  refused, naming the key and the accepted ones (they were ignored).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from multitask import L21Regressor, MultiTaskKernelClassifier, SparseLowRankRegressor
from multitask.kernels.task_similarity import PRESET_PARAMETERS, make_task_kernels
from multitask.penalties import ColumnL1Balls
from multitask.penalties.prox import (
    project_l1_ball,
    project_trace_ball,
    spectral_norm,
    spectral_shrink,
    svt,
)

#: Scales of the inputs of the routines: far outside the band where nothing is rescaled.
SCALES = [1e-250, 1e-150, 1e-95, 1e95, 1e160, 1e250]


def _shared_problem(seed=0, n=40, d=6, m=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    Y = X @ rng.standard_normal((d, m)) + 0.1 * rng.standard_normal((n, m))
    return X / np.abs(X).max(), Y / np.abs(Y).max()  # entries at most 1 in magnitude


# ----------------------------------------------------------------------------- the routines
@pytest.mark.parametrize("scale", SCALES)
def test_l1_ball_projection_is_homogeneous_at_every_scale(scale):
    """``P_(r s)(v s) = s P_r(v)``: the threshold search neither overflows nor vanishes."""
    v = np.random.default_rng(1).standard_normal(50)
    ref = project_l1_ball(v, 2.0)
    out = project_l1_ball(v * scale, 2.0 * scale)
    np.testing.assert_allclose(out / scale, ref, rtol=1e-12, atol=1e-15)
    assert np.isclose(np.abs(out).sum(), 2.0 * scale, rtol=1e-12)


@pytest.mark.parametrize("scale", SCALES)
def test_column_l1_balls_are_homogeneous_at_every_scale(scale):
    V = np.random.default_rng(2).standard_normal((20, 4))
    radii = np.array([0.5, 1.0, 2.0, 100.0])
    ref = ColumnL1Balls(radii).project(V)
    out = ColumnL1Balls(radii * scale).project(V * scale)
    np.testing.assert_allclose(out / scale, ref, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 40), (40, 3)])
def test_spectral_routines_are_homogeneous_at_every_scale(scale, shape):
    """Trace-ball projection, singular value thresholding and the spectral norm of ``V s``
    are ``s`` times those of ``V`` (the Gram route squared ``1e160`` to infinity)."""
    V = np.random.default_rng(3).standard_normal(shape)
    r = 0.3 * np.linalg.svd(V, compute_uv=False).sum()
    np.testing.assert_allclose(project_trace_ball(V * scale, r * scale) / scale,
                               project_trace_ball(V, r), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(svt(V * scale, 0.5 * scale) / scale, svt(V, 0.5), rtol=1e-9,
                               atol=1e-12)
    assert np.isclose(spectral_norm(V * scale) / scale, spectral_norm(V), rtol=1e-12)
    out, s_new = spectral_shrink(V * scale, lambda s: np.maximum(s - 0.5 * scale, 0.0))
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(s_new))


def test_spectral_shrink_inside_the_band_is_unchanged_bit_for_bit():
    """Nothing is rescaled in the usual range: the results are those of the direct routes."""
    V = np.random.default_rng(4).standard_normal((6, 30)) * 1e50

    def shrink(s):
        return np.maximum(s - 1e50, 0.0)

    out, s_new = spectral_shrink(V, shrink, method="svd")
    U, s, Vt = np.linalg.svd(V, full_matrices=False)
    keep = shrink(s) > 0
    np.testing.assert_allclose(out, (U[:, keep] * shrink(s)[keep]) @ Vt[keep], rtol=1e-12)
    np.testing.assert_allclose(s_new, shrink(s)[keep], rtol=1e-12)


def test_subnormal_inputs_keep_their_digits():
    """Largest entries below 2^-1000 (subnormal numbers): the rescaling factor is capped so
    that it stays finite (2^1000)."""
    v = np.random.default_rng(1).standard_normal(50)
    V = v.reshape(10, 5)
    s = 1e-310
    np.testing.assert_allclose(project_l1_ball(v * s, 2.0 * s) / s, project_l1_ball(v, 2.0),
                               atol=1e-9)
    np.testing.assert_allclose(ColumnL1Balls(1.0 * s).project(V * s) / s,
                               ColumnL1Balls(1.0).project(V), atol=1e-9)
    np.testing.assert_allclose(svt(V * s, 0.5 * s) / s, svt(V, 0.5), atol=1e-9)


def test_non_finite_input_is_a_value_error():
    with pytest.raises(ValueError, match="NaN or infinity"):
        project_l1_ball(np.array([1.0, np.inf]), 1.0)
    with pytest.raises(ValueError, match="NaN or infinity"):
        spectral_shrink(np.array([[1.0, np.nan], [0.0, 1.0]]), lambda s: s)


# ----------------------------------------------------------------------------- the model
def test_sparse_low_rank_fits_data_scaled_by_1e80_with_defaults():
    """The issue's case: ``SparseLowRankRegressor().fit(1e80 X, 1e80 Y)`` raised
    ZeroDivisionError (or LinAlgError) in the spectral shrink."""
    X, Y = _shared_problem()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence is issue 22's subject, not this test's
        est = SparseLowRankRegressor().fit(X * 1e80, Y * 1e80)
    assert np.all(np.isfinite(est.coef_)) and np.all(np.isfinite(est.intercept_))


@pytest.mark.parametrize("scale", [1e80, 1e100])
def test_sparse_low_rank_solves_the_scaled_problem(scale):
    """Scaling ``X`` and ``Y`` by ``s`` scales the loss by ``s^2``: the model with ``alpha s^2``
    on the scaled data is the model with ``alpha`` on the data (same ``coef_``, intercepts
    scaled by ``s``)."""
    X, Y = _shared_problem()
    ref = SparseLowRankRegressor(alpha=0.05, radius=2.0, tol=1e-8).fit(X, Y)
    est = SparseLowRankRegressor(alpha=0.05 * scale**2, radius=2.0, tol=1e-8).fit(X * scale,
                                                                                  Y * scale)
    # both solved to the tolerance (their stopping tests may stop a few iterations apart)
    np.testing.assert_allclose(est.coef_, ref.coef_, atol=1e-6 * np.abs(ref.coef_).max())
    np.testing.assert_allclose(est.intercept_ / scale, ref.intercept_, atol=1e-6)


# ----------------------------------------------------------------------------- complex input
def _long():
    rng = np.random.default_rng(5)
    return rng.standard_normal((20, 3)), rng.standard_normal(20), np.repeat([0, 1], 10)


@pytest.mark.parametrize("layout", ["object array", "object DataFrame", "nested lists",
                                    "complex array"])
@pytest.mark.parametrize("model", [L21Regressor, MultiTaskKernelClassifier])
def test_complex_numbers_are_refused_with_one_message(layout, model):
    """Complex inside an object array raised a TypeError in scikit-learn's conversion."""
    X, y, task = _long()
    if model is MultiTaskKernelClassifier:
        y = np.tile([0, 1], 10)
    Xo = X.astype(object)
    Xo[3, 1] = 1 + 2j
    given = {"object array": Xo, "object DataFrame": pd.DataFrame(Xo),
             "nested lists": Xo.tolist(), "complex array": X + 0j}[layout]
    with pytest.raises(ValueError, match="holds complex numbers .*Complex data not supported: "
                                         "only real numbers"):
        model().fit(given, y, task)


def test_complex_numbers_are_refused_at_prediction_too():
    X, y, task = _long()
    est = L21Regressor().fit(X, y, task)
    Xo = X.astype(object)
    Xo[0, 0] = 1j
    with pytest.raises(ValueError, match="holds complex numbers"):
        est.predict(Xo, task)


# ----------------------------------------------------------------------------- similarity keys
def test_unknown_similarity_params_keys_are_refused():
    """A misspelt key (``lamda``) or a key of another preset was ignored silently."""
    X, y, task = _long()
    y = np.tile([0, 1], 10)
    cases = [("graph", {"adjacency": np.ones((2, 2)), "lamda": 2.0}, "'lamda'.*'lam'"),
             ("shared-individual", {"rho": 2.0}, "'rho'.*accepts none"),
             (np.eye(2), {"rho": 2.0}, "'rho'.*matrices or by a callable")]
    for similarity, params, message in cases:
        est = MultiTaskKernelClassifier(task_similarity=similarity, similarity_params=params)
        with pytest.raises(ValueError, match="similarity_params.*" + message):
            est.fit(X, y, task)
    MultiTaskKernelClassifier(task_similarity="regularized",
                              similarity_params={"rho": 2.0}).fit(X, y, task)


def test_every_preset_reads_the_keys_it_declares():
    """The declared keys are accepted: each preset runs with its own keys."""
    tasks = ["a", "b", "c"]
    A = np.ones((3, 3)) - np.eye(3)
    given = {"regularized": {"rho": 2.0},
             "clustering": {"clusters": [0, 0, 1], "rho": 1.0, "lam": 0.5},
             "graph": {"adjacency": A, "lam": 1.0, "convention": "paper", "pinv": False},
             "multigraph": {"adjacencies": [A], "lam": 1.0, "convention": "paper"},
             "hierarchical": {"tree": (("a", "b"), "c"), "nodes": "inner", "kind": "mask",
                              "rho": 1.0},
             "smooth": {"distances": np.abs(np.subtract.outer([0, 1, 2], [0, 1, 2])),
                        "sigmas": [1.0], "project": True}}
    for preset, keys in PRESET_PARAMETERS.items():
        params = given.get(preset, {})
        assert set(params) <= set(keys), preset
        assert make_task_kernels(preset, tasks, params)
