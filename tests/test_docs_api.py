"""The documentation: API reference up to date, code examples run, the stated parameter
conversions hold numerically, links resolve, no machine paths."""

from __future__ import annotations

import importlib.util
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
#: The pages of this part of the documentation (the paper pages in docs/models/ are the
#: paper implementers'; their links are checked by test_paper_pages_are_linked).
OWN_PAGES = ["index.md", "quickstart.md", "user_guide.md", "models/baselines.md",
             "reproduced_tables.md"]
PAPER_PAGES = ["sparse_low_rank.md", "robust.md", "l1inf.md", "capped_trace.md", "mtmkl.md"]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_api_docs",
                                                  ROOT / "scripts" / "gen_api_docs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ----------------------------------------------------------------------------- API reference
def test_api_reference_is_up_to_date():
    gen = _generator()
    current = (DOCS / "api.md").read_text()
    assert current == gen.render(), (
        "docs/api.md is out of date with the docstrings: run python scripts/gen_api_docs.py")


def test_api_reference_documents_every_public_estimator():
    import multitask.estimators as E

    text = (DOCS / "api.md").read_text()
    for name in E.__all__:
        assert f"### `multitask.estimators.{name}`" in text
    assert "### `multitask.model_selection.TaskKFold`" in text
    assert "### `multitask.plotting.plot_weight_matrix`" in text


# ----------------------------------------------------------------------------- pages
def _python_blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), flags=re.S)


@pytest.mark.parametrize("page", ["quickstart.md", "user_guide.md", "models/baselines.md"])
def test_code_examples_run(page, tmp_path, monkeypatch):
    """Every ```python block of the page runs (in order, sharing one namespace)."""
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    blocks = _python_blocks(page)
    assert blocks, f"{page} has no Python example"
    ns: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, code in enumerate(blocks):
            try:
                exec(compile(code, f"{page}[block {i}]", "exec"), ns)  # noqa: S102
            except Exception as exc:  # pragma: no cover - the message names the block
                raise AssertionError(f"{page}, block {i} failed: {exc!r}\n{code}") from exc


@pytest.mark.parametrize("page", OWN_PAGES)
def test_links_resolve_and_no_machine_paths(page):
    text = (DOCS / page).read_text()
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        if Path(target).name in PAPER_PAGES:
            continue  # written by the paper implementers; see test_paper_pages_are_linked
        assert (DOCS / page).parent.joinpath(target).resolve().exists(), (page, target)
    for bad in [f"/{d}/" for d in ("work", "home", "root", "Users")] + ["C:\\"]:
        assert bad not in text, (page, bad)


def test_paper_pages_are_linked():
    text = (DOCS / "reproduced_tables.md").read_text()
    for name in PAPER_PAGES:
        assert f"(models/{name})" in text
    missing = [n for n in PAPER_PAGES if not (DOCS / "models" / n).exists()]
    if missing:
        pytest.skip(f"paper pages not written yet: {', '.join(missing)}")


def test_every_baseline_model_is_on_its_page():
    """Each baseline estimator is named on docs/models/baselines.md, MultiTaskCV in the guide."""
    import multitask.estimators as E

    text = (DOCS / "models" / "baselines.md").read_text()
    baselines = [n for n in E.__all__
                 if getattr(E, n).__module__ == "multitask.estimators.baselines"]
    assert len(baselines) == 12
    assert [n for n in baselines if n not in text] == []
    assert "MultiTaskCV" in (DOCS / "user_guide.md").read_text()


# ----------------------------------------------------------------------------- conversions
def _tasks(sizes, d=5, seed=0):
    rng = np.random.default_rng(seed)
    Xs = [rng.standard_normal((n, d)) for n in sizes]
    ys = [X @ rng.standard_normal(d) + 0.3 * rng.standard_normal(len(X)) for X in Xs]
    return Xs, ys


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


def test_malsar_rho_is_n_alpha_for_equal_task_sizes(precise):
    from multitask import TraceNormRegressor

    n, alpha = 30, 0.2
    Xs, ys = _tasks([n, n, n])
    ours = precise(TraceNormRegressor)(alpha=alpha, fit_intercept=False).fit(Xs, ys)
    W = _malsar_trace(Xs, ys, rho=n * alpha)
    np.testing.assert_allclose(ours.coef_.T, W, atol=1e-4)
    wrong = _malsar_trace(Xs, ys, rho=alpha)
    assert np.abs(wrong - ours.coef_.T).max() > 1e-2


def test_malsar_with_unequal_sizes_is_ours_on_rows_scaled_by_sqrt_n_t(precise):
    from multitask import TraceNormRegressor

    rho = 3.0
    Xs, ys = _tasks([15, 40, 25])
    scaled_X = [np.sqrt(len(X)) * X for X in Xs]
    scaled_y = [np.sqrt(len(y)) * y for y in ys]
    ours = precise(TraceNormRegressor)(alpha=rho, fit_intercept=False).fit(scaled_X, scaled_y)
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
