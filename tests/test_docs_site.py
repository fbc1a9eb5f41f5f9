"""The documentation site and its pages.

* The MkDocs site builds with warnings as errors (``mkdocs build --strict``: broken links and
  anchors, pages missing from the nav, docstrings mkdocstrings cannot read), with the gallery
  scripts on small data; every public name of the documented modules gets an API entry.
* The Python examples of the pages run, in order, and the quick start on a pandas table is
  under 20 lines.
* The parameter conversions the user guide states hold numerically (MALSAR solved with cvxpy,
  scikit-learn's estimators).
* No page names a path of a particular machine.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
EXAMPLES = ROOT / "examples"
PAPER_PAGES = ["sparse_low_rank.md", "robust.md", "l1inf.md", "capped_trace.md", "mtmkl.md"]


# ----------------------------------------------------------------------------- the site
def _require(module: str) -> None:
    """Skip without the docs tools, except in CI (``CI`` set), where they must be installed."""
    if importlib.util.find_spec(module) is None:
        if os.environ.get("CI"):
            pytest.fail(f"{module} is missing: install the test extra, pip install '.[test]'.")
        pytest.skip(f"{module} is not installed (pip install '.[docs]').")


def _data_dir() -> Path | None:
    """The data folder of the named data sets as the library finds it from the repository
    (``MULTITASK_DATA`` or ``shared/data`` beside the clone), or None where it is truly absent
    (a wrong ``MULTITASK_DATA`` fails, as in tests/test_datasets.py)."""
    from multitask.datasets import find_data_dir

    if os.environ.get("MULTITASK_DATA", "").strip():
        return find_data_dir()
    cwd = Path.cwd()
    try:
        os.chdir(ROOT)  # searched beside the clone, whatever the test's working folder
        return find_data_dir()
    except FileNotFoundError:
        return None
    finally:
        os.chdir(cwd)


#: Sources that read the shared data folder (they need it to run).
_NEEDS_DATA = re.compile(r"load_be_mtpl97|load_vowel|find_data_dir")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built once with ``mkdocs build --strict`` into a temporary folder."""
    for module in ("mkdocs", "mkdocstrings_handlers.python", "material", "matplotlib"):
        _require(module)
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, MULTITASK_EXAMPLES_QUICK="1", NO_MKDOCS_2_WARNING="1",
               MPLBACKEND="Agg")
    env.pop("MULTITASK_EXAMPLES_OUT", None)
    data = _data_dir()
    if data is not None:  # the examples on real data find it from any working folder
        env["MULTITASK_DATA"] = str(data)
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
         str(ROOT / "mkdocs.yml"), "--site-dir", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stderr[-6000:]}"
    return out


def _page(site: Path, src: str) -> str:
    """HTML of the page built from ``docs/<src>`` (directory URLs)."""
    stem = src.removesuffix(".md")
    path = site / ("index.html" if stem == "index" else
                   (f"{stem[:-len('index')]}index.html" if stem.endswith("/index")
                    else f"{stem}/index.html"))
    assert path.is_file(), f"no page for {src} in the built site"
    return path.read_text(encoding="utf-8")


#: reference page -> documented module (``docs/reference/<page>.md`` holds ``::: module``)
REFERENCE = {
    "multitask": "multitask",
    "datasets": "multitask.datasets",
    "metrics": "multitask.metrics",
    "model_selection": "multitask.model_selection",
    "plotting": "multitask.plotting",
    "progress": "multitask.progress",
    "persistence": "multitask.persistence",
    "penalties": "multitask.penalties",
    "losses": "multitask.losses",
    "solvers": "multitask.solvers",
    "kernels": "multitask.kernels",
}


def test_every_content_page_is_built(site):
    sources = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert "index.md" in sources and "quickstart.md" in sources
    for src in sources:
        assert "<article" in _page(site, src), src


@pytest.mark.parametrize("page", sorted(REFERENCE))
def test_api_page_documents_every_public_name(site, page):
    """Each name of the module's ``__all__`` has an entry (an anchor) on its API page."""
    module = importlib.import_module(REFERENCE[page])
    assert (DOCS / "reference" / f"{page}.md").read_text().strip().endswith(
        f"::: {REFERENCE[page]}")
    html = _page(site, f"reference/{page}.md")
    names = getattr(module, "__all__", None)
    assert names, f"{REFERENCE[page]} has no __all__"
    missing = [n for n in names if f'id="{REFERENCE[page]}.{n}"' not in html]
    assert missing == [], f"{REFERENCE[page]}: no API entry for {missing}"
    # the reStructuredText roles of the numpydoc docstrings are rewritten (docs/hooks)
    assert ":func:`" not in html and ":class:`" not in html and ":mod:`" not in html


#: reference pages of several modules -> the modules (a ``::: module`` section each)
REFERENCE_SECTIONS = {
    "benchmark": ("multitask.benchmark", "multitask.benchmark_data", "multitask.cli_benchmark"),
    "new_tasks": ("multitask.penalties.new_task", "multitask.estimators.new_tasks"),
}


@pytest.mark.parametrize("page", sorted(REFERENCE_SECTIONS))
def test_api_page_of_several_modules_documents_every_public_name(site, page):
    text = (DOCS / "reference" / f"{page}.md").read_text()
    html = _page(site, f"reference/{page}.md")
    for name in REFERENCE_SECTIONS[page]:
        assert re.search(rf"^::: {re.escape(name)}$", text, flags=re.M), (page, name)
        names = importlib.import_module(name).__all__
        missing = [n for n in names if f'id="{name}.{n}"' not in html]
        assert missing == [], f"{name}: no API entry for {missing}"
    assert ":func:`" not in html and ":class:`" not in html and ":mod:`" not in html


def test_api_pages_render_numpydoc_sections(site):
    html = _page(site, "reference/plotting.md")
    assert "Parameters:" in html and "Returns:" in html
    assert "plot_weight_matrix" in html and "task_names" in html


def test_gallery_has_a_page_and_a_figure_per_example(site):
    scripts = sorted(EXAMPLES.glob("plot_*.py"))
    assert len(scripts) >= 5
    index = _page(site, "gallery/index.md")
    absent = _data_dir() is None
    for script in scripts:
        if absent and _NEEDS_DATA.search(script.read_text()):
            page = _page(site, f"gallery/{script.stem}.md")
            assert "data folder" in page, script.name  # the page says why it has no figure
            continue
        png = site / "gallery" / f"{script.stem}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", script.name
        assert png.stat().st_size > 5_000, f"{script.name}: a suspiciously small figure"
        page = _page(site, f"gallery/{script.stem}.md")
        assert f"{script.stem}.png" in page and "savefig" in page
        assert f"{script.stem}/" in index  # linked from the gallery's front page


# ----------------------------------------------------------------------------- pages' code
def _python_blocks(page: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", (DOCS / page).read_text(), flags=re.S | re.M)


@pytest.mark.parametrize("page", ["quickstart.md", "user_guide.md", "models/baselines.md"])
def test_code_examples_run(page, tmp_path, monkeypatch):
    """Every ```python block of the page runs (in order, sharing one namespace)."""
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    blocks = _python_blocks(page)
    data = _data_dir()
    if data is None and any(_NEEDS_DATA.search(code) for code in blocks):
        pytest.skip(f"{page} reads the shared data folder, which is not available")
    if data is not None:
        monkeypatch.setenv("MULTITASK_DATA", str(data))
    monkeypatch.chdir(tmp_path)
    assert blocks, f"{page} has no Python example"
    ns: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, code in enumerate(blocks):
            try:
                exec(compile(code, f"{page}[block {i}]", "exec"), ns)  # noqa: S102
            except Exception as exc:  # pragma: no cover - the message names the block
                raise AssertionError(f"{page}, block {i} failed: {exc!r}\n{code}") from exc
    if page == "quickstart.md":  # the pandas quick start wrote its figures
        assert (tmp_path / "weights.png").stat().st_size > 5_000
        assert (tmp_path / "cv.png").stat().st_size > 5_000


def test_pandas_quick_start_is_short_and_complete():
    text = (DOCS / "quickstart.md").read_text()
    section = text.split("## Your own table", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```python\n(.*?)^```", section, flags=re.S | re.M)
    main = blocks[-1]
    n_lines = len(main.strip().splitlines())
    assert n_lines < 20
    stated = re.search(r"in (\d+) lines", text.split("## Your own table", 1)[1]).group(1)
    assert int(stated) == n_lines, "the heading states the length of the example"
    for step in ("read_csv", ".fit(", "MultiTaskCV", ".predict(", "savefig", "task="):
        assert step in main, step


def _all_pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md")) + sorted(EXAMPLES.glob("*.py")) + [ROOT / "README.md",
                                                                           ROOT / "mkdocs.yml"]


@pytest.mark.parametrize("path", _all_pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_machine_paths(path):
    text = path.read_text(encoding="utf-8")
    for bad in [f"/{d}/" for d in ("work", "home", "root", "Users")] + ["C:\\"]:
        assert bad not in text, (path.name, bad)


def test_paper_pages_are_linked():
    text = (DOCS / "reproduced_tables.md").read_text()
    for name in PAPER_PAGES:
        assert f"(models/{name})" in text
    nav = (ROOT / "mkdocs.yml").read_text()
    for name in PAPER_PAGES:
        assert f"models/{name}" in nav


BASELINES = ["IndependentLassoClassifier", "IndependentLassoRegressor",
             "IndependentRidgeClassifier", "IndependentRidgeRegressor", "L21Classifier",
             "L21Regressor", "MultiTaskClassifier", "MultiTaskRegressor", "PooledClassifier",
             "PooledRegressor", "TraceNormClassifier", "TraceNormRegressor"]


def test_every_baseline_model_is_on_its_page():
    """Each baseline estimator still exported is named on its page, MultiTaskCV in the guide."""
    import multitask

    exported = [n for n in BASELINES if hasattr(multitask, n)]
    assert len(exported) >= 8
    text = (DOCS / "models" / "baselines.md").read_text()
    assert [n for n in exported if n not in text] == []
    assert "MultiTaskCV" in (DOCS / "user_guide.md").read_text()


# ----------------------------------------------------------------------------- conversions
def _tasks(sizes, d=5, seed=0):
    rng = np.random.default_rng(seed)
    Xs = [rng.standard_normal((n, d)) for n in sizes]
    ys = [X @ rng.standard_normal(d) + 0.3 * rng.standard_normal(len(X)) for X in Xs]
    return Xs, ys


#: solve to a tight tolerance (the relative optimality measure, the same in every model)
PRECISE = {"tol": 1e-10, "max_iter": 100_000}


def _malsar_trace(Xs, ys, rho):
    """MALSAR's Least_Trace: argmin sum_t 0.5 ||y_t - X_t w_t||^2 + rho ||W||_* (cvxpy)."""
    cp = pytest.importorskip("cvxpy")
    d, m = Xs[0].shape[1], len(Xs)
    W = cp.Variable((d, m))
    loss = sum(0.5 * cp.sum_squares(y - X @ W[:, t]) for t, (X, y) in enumerate(
        zip(Xs, ys, strict=True)))
    cp.Problem(cp.Minimize(loss + rho * cp.normNuc(W))).solve(solver=cp.SCS, eps=1e-10,
                                                             max_iters=200000)
    return W.value


def test_malsar_rho_is_n_alpha_for_equal_task_sizes():
    from multitask import TraceNormRegressor

    n, alpha = 30, 0.2
    Xs, ys = _tasks([n, n, n])
    ours = TraceNormRegressor(alpha=alpha, fit_intercept=False, **PRECISE).fit(Xs, ys)
    W = _malsar_trace(Xs, ys, rho=n * alpha)
    np.testing.assert_allclose(ours.coef_.T, W, atol=1e-4)
    wrong = _malsar_trace(Xs, ys, rho=alpha)
    assert np.abs(wrong - ours.coef_.T).max() > 1e-2


def test_malsar_with_unequal_sizes_is_ours_on_rows_scaled_by_sqrt_n_t():
    from multitask import TraceNormRegressor

    rho = 3.0
    Xs, ys = _tasks([15, 40, 25])
    scaled_X = [np.sqrt(len(X)) * X for X in Xs]
    scaled_y = [np.sqrt(len(y)) * y for y in ys]
    ours = TraceNormRegressor(alpha=rho, fit_intercept=False, **PRECISE).fit(scaled_X,
                                                                          scaled_y)
    np.testing.assert_allclose(ours.coef_.T, _malsar_trace(Xs, ys, rho), atol=1e-4)


def _l1_penalty() -> dict:
    """scikit-learn >= 1.8 selects the l1 penalty with l1_ratio=1 (penalty= is deprecated)."""
    import sklearn

    major, minor = (int(v) for v in sklearn.__version__.split(".")[:2])
    return {"l1_ratio": 1.0} if (major, minor) >= (1, 8) else {"penalty": "l1"}


def test_scikit_learn_conversions():
    from sklearn.linear_model import Lasso, LogisticRegression, MultiTaskLasso, Ridge

    from multitask import (
        IndependentLassoClassifier,
        IndependentLassoRegressor,
        IndependentRidgeClassifier,
        IndependentRidgeRegressor,
        L21Regressor,
    )

    alpha, n = 0.05, 40
    Xs, ys = _tasks([n, n, n], seed=1)
    ridge = IndependentRidgeRegressor(alpha=alpha).fit(Xs, ys)
    lasso = IndependentLassoRegressor(alpha=alpha, tol=1e-12, max_iter=100000).fit(Xs, ys)
    for t, (X, y) in enumerate(zip(Xs, ys, strict=True)):
        np.testing.assert_allclose(ridge.coef_[t], Ridge(alpha=alpha * n).fit(X, y).coef_,
                                   atol=1e-10)
        np.testing.assert_allclose(lasso.coef_[t],
                                   Lasso(alpha=alpha, tol=1e-12, max_iter=100000).fit(X, y).coef_,
                                   atol=1e-8)
    # a shared design: MultiTaskLasso's alpha is ours
    X, Y = Xs[0], np.column_stack(ys)
    l21 = L21Regressor(alpha=alpha, tol=1e-12, max_iter=100000).fit(X, Y)
    sk = MultiTaskLasso(alpha=alpha, tol=1e-12, max_iter=100000).fit(X, Y)
    np.testing.assert_allclose(l21.coef_, sk.coef_, atol=1e-7)
    # logistic: C = 1 / (alpha n_t)
    rng = np.random.default_rng(2)
    ylab = [(X @ rng.standard_normal(5) + rng.standard_normal(n) > 0).astype(int) for X in Xs]
    clf = IndependentRidgeClassifier(alpha=alpha, tol=1e-13, max_iter=100000).fit(Xs, ylab)
    for t, (X, y) in enumerate(zip(Xs, ylab, strict=True)):
        sk = LogisticRegression(C=1.0 / (alpha * n), tol=1e-12, max_iter=10000).fit(X, y)
        np.testing.assert_allclose(clf.coef_[t], sk.coef_[0], atol=1e-5)
        np.testing.assert_allclose(clf.intercept_[t], sk.intercept_[0], atol=1e-5)
    l1 = IndependentLassoClassifier(alpha=alpha, tol=1e-13, max_iter=100000).fit(Xs, ylab)
    for t, (X, y) in enumerate(zip(Xs, ylab, strict=True)):
        sk = LogisticRegression(C=1.0 / (alpha * n), solver="saga", tol=1e-12, max_iter=100000,
                                **_l1_penalty()).fit(X, y)
        np.testing.assert_allclose(l1.coef_[t], sk.coef_[0], atol=1e-4)
