"""Plots render to PNG with the Agg backend and draw the numbers they are given."""

from __future__ import annotations

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from multitask import (  # noqa: E402
    L21Regressor,
    MultiTaskCV,
    SparseLowRankRegressor,
    TraceNormRegressor,
)
from multitask.estimators.capped_trace import CappedTraceRegressor  # noqa: E402
from multitask.estimators.mtmkl import MultiTaskKernelClassifier  # noqa: E402
from multitask.model_selection import regularization_path  # noqa: E402
from multitask.plotting import (  # noqa: E402
    plot_convergence,
    plot_cv_scores,
    plot_regularization_path,
    plot_results_bars,
    plot_singular_values,
    plot_task_similarity,
    plot_weight_matrix,
    task_similarity_from_coef,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _render(fig, path):
    fig.savefig(path, dpi=60)
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 2000
    from matplotlib.image import imread

    img = imread(path)
    assert img.std() > 0.01  # not a blank canvas
    return img


@pytest.fixture(scope="module")
def fitted(request):
    from conftest import make_regression_lists

    Xs, ys = make_regression_lists(sizes=(30, 40, 25, 35), d=6)
    return Xs, ys, TraceNormRegressor(alpha=0.05).fit(Xs, ys)


def test_weight_matrix_heatmap(fitted, tmp_path):
    _, _, model = fitted
    fig = plot_weight_matrix(model, feature_names=[f"f{j}" for j in range(6)])
    ax = fig.axes[0]
    np.testing.assert_array_equal(ax.images[0].get_array(), model.coef_)
    lo, hi = ax.images[0].get_clim()
    assert lo == -hi == -np.abs(model.coef_).max()  # zero is the middle colour
    assert [t.get_text() for t in ax.get_xticklabels()] == [f"f{j}" for j in range(6)]
    assert [t.get_text() for t in ax.get_yticklabels()] == [str(t) for t in model.tasks_]
    _render(fig, tmp_path / "weights.png")
    with pytest.raises(ValueError, match="2-D"):
        plot_weight_matrix(np.zeros(3))


def test_singular_values_of_the_model_and_its_components(fitted, tmp_path):
    Xs, ys, model = fitted
    fig = plot_singular_values(model)
    (line,) = fig.axes[0].get_lines()
    s = np.linalg.svd(model.coef_, compute_uv=False)
    np.testing.assert_allclose(line.get_ydata()[s > 1e-8 * s[0]], s[s > 1e-8 * s[0]])
    _render(fig, tmp_path / "sv.png")
    slr = SparseLowRankRegressor(alpha=0.05, radius=1.0).fit(Xs, ys)
    labels = [ln.get_label() for ln in plot_singular_values(slr).axes[0].get_lines()]
    assert len(labels) == 3 and any("low-rank" in x for x in labels)
    assert any("sparse" in x for x in labels)
    capped = CappedTraceRegressor(alpha=0.05, tau=0.5).fit(Xs, ys)
    lines = plot_singular_values(capped).axes[0].get_lines()
    assert any(ln.get_label().startswith("tau = 0.5") for ln in lines)
    assert len(plot_singular_values({"a": model.coef_, "b": slr.coef_}).axes[0].get_lines()) == 2


def test_convergence_against_iteration_and_time(fitted, tmp_path):
    Xs, ys, _ = fitted
    # accelerated gradient records the objective at every iteration (solver='auto' takes ADMM
    # here, which records it at its checks only)
    slow = TraceNormRegressor(alpha=0.05, tol=1e-10, solver="fista").fit(Xs, ys)
    fig = plot_convergence({"trace": slow, "l21": L21Regressor(alpha=0.05, solver="fista",
                                                               tol=1e-10).fit(Xs, ys)})
    assert len(fig.axes) == 2
    it_ax, time_ax = fig.axes
    y = it_ax.get_lines()[0].get_ydata()
    obj = slow.solver_result_.objective
    assert y.size == obj.size == slow.n_iter_
    assert np.all(y > 0) and y[0] > y[-1]
    np.testing.assert_allclose(y[:-5], (obj - obj.min())[:-5], atol=1e-12 * y[0])
    np.testing.assert_allclose(time_ax.get_lines()[0].get_xdata(), slow.solver_result_.times)
    _render(fig, tmp_path / "conv.png")
    raw = plot_convergence(obj, x="iteration", suboptimality=False)
    np.testing.assert_array_equal(raw.axes[0].get_lines()[0].get_ydata(), obj)
    known = plot_convergence(obj, x="iteration", f_star=obj.min() - 1.0)
    np.testing.assert_allclose(known.axes[0].get_lines()[0].get_ydata(), obj - obj.min() + 1.0)
    with pytest.raises(ValueError, match="x must be"):
        plot_convergence(obj, x="epoch")


def test_regularization_path(fitted, tmp_path):
    Xs, ys, _ = fitted
    path = regularization_path(L21Regressor(), Xs, ys, n_alphas=6)
    assert path.param == "alpha" and path.coefs.shape == (6, 4, 6)
    # zero at alpha_max to rounding (block coordinate descent's row gradient, summed in its own
    # order, may exceed alpha_max by an ulp and leave 1e-16 entries)
    assert np.abs(path.coefs[0]).max() <= 1e-12 * np.abs(path.coefs[-1]).max()
    assert np.any(path.coefs[-1] != 0)
    fig = plot_regularization_path(path, feature_names=list("abcdef"))
    lines = fig.axes[0].get_lines()
    assert len(lines) == 6
    np.testing.assert_allclose(lines[2].get_xdata(), path.grid)
    np.testing.assert_allclose(lines[2].get_ydata(), np.linalg.norm(path.coefs[:, :, 2], axis=1))
    _render(fig, tmp_path / "path.png")
    norms = plot_regularization_path(path.grid, path.coefs, kind="norms")
    assert len(norms.axes[0].get_lines()) == 4
    with pytest.raises(ValueError, match="shape"):
        plot_regularization_path(path.grid[:3], path.coefs)


def test_cv_scores(fitted, tmp_path):
    Xs, ys, _ = fitted
    cv = MultiTaskCV(TraceNormRegressor(), n_alphas=5, cv=3).fit(Xs, ys)
    fig = plot_cv_scores(cv)
    ax = fig.axes[0]
    best = [ln for ln in ax.get_lines() if ln.get_label().startswith("chosen alpha")]
    assert best and best[0].get_xdata()[0] == cv.best_params_["alpha"]
    _render(fig, tmp_path / "cv.png")


def test_task_similarity(fitted, tmp_path, datagen):
    _, _, model = fitted
    S = task_similarity_from_coef(model)
    np.testing.assert_allclose(np.diag(S), 1.0)
    np.testing.assert_allclose(S, S.T)
    assert np.all(np.abs(S) <= 1 + 1e-12)
    fig = plot_task_similarity(model)
    np.testing.assert_allclose(fig.axes[0].images[0].get_array(), S)
    _render(fig, tmp_path / "sim.png")
    Xs, ys = datagen.classification_lists()
    mkl = MultiTaskKernelClassifier(alpha=1.0).fit(Xs, ys)
    img = plot_task_similarity(mkl).axes[0].images[0].get_array()
    np.testing.assert_allclose(img, mkl.task_similarity_)
    with pytest.raises(ValueError, match="square"):
        plot_task_similarity(np.zeros((2, 3)))


def test_drawing_into_given_axes_and_results_bars(fitted, tmp_path):
    from matplotlib.figure import Figure

    _, _, model = fitted
    fig = Figure()
    a, b = fig.subplots(1, 2)
    assert plot_weight_matrix(model, ax=a) is fig
    assert plot_singular_values(model, ax=b) is fig
    _render(fig, tmp_path / "two.png")
    rows = [{"experiment": "e", "dataset": "d", "setting": "s", "method": m, "metric": "nMSE",
             "mean": v, "std": 0.01} for m, v in (("A", 0.7), ("B", 0.6))]
    bars = plot_results_bars(rows)
    heights = [p.get_height() for p in bars.axes[0].patches]
    assert heights == [0.7, 0.6]
    _render(bars, tmp_path / "bars.png")
