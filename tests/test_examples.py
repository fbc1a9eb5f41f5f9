"""The gallery scripts of ``examples/``: each runs on small data and draws a non-blank figure,
through the public API only. (The site build in ``test_docs_site.py`` renders them again.)"""

from __future__ import annotations

import ast
import os
import re
import runpy
import warnings
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted((ROOT / "examples").glob("plot_*.py"))
PUBLIC = {"multitask", "multitask.datasets", "multitask.plotting", "multitask.model_selection",
          "multitask.metrics"}


def test_the_gallery_covers_the_plots_of_the_library():
    names = {p.stem for p in SCRIPTS}
    assert {"plot_weight_heatmap", "plot_singular_values", "plot_task_similarity",
            "plot_regularization_path", "plot_convergence"} <= names
    used = set()
    for path in SCRIPTS:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "multitask.plotting":
                used |= {alias.name for alias in node.names}
    assert {"plot_weight_matrix", "plot_singular_values", "plot_task_similarity",
            "plot_regularization_path", "plot_cv_scores", "plot_convergence"} <= used


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.stem)
def test_script_is_documented_and_uses_the_public_api(path):
    tree = ast.parse(path.read_text())
    doc = ast.get_docstring(tree)
    assert doc, f"{path.name}: the module docstring gives the gallery page's title and text"
    title, _, text = doc.partition("\n")
    assert 0 < len(title) <= 40 and text.strip(), f"{path.name}: short title, then the text"
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("multitask"):
            assert node.module in PUBLIC, f"{path.name} imports from {node.module}"
            assert not any(a.name.startswith("_") for a in node.names), path.name
        if isinstance(node, ast.Import):
            assert not any(a.name.startswith("multitask.") and a.name not in PUBLIC
                           for a in node.names), path.name
    assert "MULTITASK_EXAMPLES_QUICK" in path.read_text(), f"{path.name} has no small mode"


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.stem)
def test_script_draws_its_figure(path, tmp_path, monkeypatch):
    """Run on small data from another folder: it writes ``<name>.png`` where it is run."""
    pytest.importorskip("matplotlib")
    from matplotlib.image import imread

    monkeypatch.setenv("MULTITASK_EXAMPLES_QUICK", "1")
    monkeypatch.delenv("MULTITASK_EXAMPLES_OUT", raising=False)
    if re.search(r"load_be_mtpl97|load_vowel|find_data_dir", path.read_text()):
        # an example on the shared data: found from here (MULTITASK_DATA, or shared/data
        # beside the clone), then passed on, since the script runs from another folder;
        # skipped only where the folder is truly absent (as in tests/test_datasets.py)
        from multitask.datasets import find_data_dir

        try:
            monkeypatch.setenv("MULTITASK_DATA", str(find_data_dir()))
        except FileNotFoundError as exc:
            if os.environ.get("MULTITASK_DATA", "").strip():
                raise
            pytest.skip(f"data folder not available: {exc}")
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. ConvergenceWarning on the small budgets
        runpy.run_path(str(path), run_name="__main__")
    png = tmp_path / f"{path.stem}.png"
    assert png.is_file(), f"{path.name} wrote no {png.name}"
    assert [p.name for p in tmp_path.iterdir()] == [png.name]  # and nothing else
    image = imread(png)
    assert image.ndim == 3 and image.shape[0] > 200 and image.shape[1] > 400
    ink = np.mean(image[..., :3] < 0.9)  # share of pixels that are not (almost) white
    assert 0.01 < ink < 0.9, f"{path.name}: the figure looks blank ({ink:.3f} inked)"



def test_convergence_can_be_drawn_against_time():
    """The gallery's convergence figure needs per-iteration times from a fitted model."""
    pytest.importorskip("matplotlib")
    from multitask import SparseLowRankRegressor
    from multitask.datasets import make_sparse_low_rank_tasks
    from multitask.plotting import plot_convergence

    data = make_sparse_low_rank_tasks(n_tasks=4, n_features=6, n_samples=15, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SparseLowRankRegressor(alpha=0.1, radius=5.0, max_iter=50).fit(data.X, data.y)
    if not hasattr(model, "solver_result_"):
        pytest.xfail("fitted models keep no per-iteration times (solver_result_): the time "
                     "panel of plot_convergence stays empty")
    fig = plot_convergence({"fista": model}, x="both")
    assert len(fig.axes[1].lines) == 1 and len(fig.axes[1].lines[0].get_xdata()) > 1
