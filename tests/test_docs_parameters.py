"""Every parameter the documentation quotes with an estimator exists on that estimator.

The user guide told the reader to grid ``gamma`` for sparse + low rank, a parameter renamed
``alpha`` long before. This test reads ``README.md`` and ``docs/**/*.md`` and checks:

every call ``Estimator(name=...)`` in a code block or code span, and every key of a
``param_grid={...}`` given to ``MultiTaskCV(Estimator(...), ...)``: ``name`` is a parameter of
``Estimator``; and every name quoted in a paragraph about path parameters is a parameter of
some estimator. (A bare ``name=`` span in other prose is not bound to one estimator reliably
enough to check: those were read by hand.)
"""

from __future__ import annotations

import inspect
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import BaseEstimator

import multitask as mt

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])

#: Public estimator classes by name, and their parameters.
CLASSES = {n: getattr(mt, n) for n in mt.__all__
           if inspect.isclass(getattr(mt, n)) and issubclass(getattr(mt, n), BaseEstimator)}


def _params(name: str) -> set[str]:
    cls = CLASSES[name]
    return set(inspect.signature(cls.__init__).parameters) - {"self"}


def _code(text: str) -> list[str]:
    """Fenced code blocks and inline code spans, in order."""
    blocks = re.findall(r"```[^\n]*\n(.*?)```", text, flags=re.S)
    rest = re.sub(r"```[^\n]*\n.*?```", "", text, flags=re.S)
    return blocks + re.findall(r"`([^`\n]+)`", rest)


def _args(code: str, start: int) -> str:
    """The text between the parenthesis at ``start`` and its match (or the end)."""
    depth = 0
    for i in range(start, len(code)):
        if code[i] in "([{":
            depth += 1
        elif code[i] in ")]}":
            depth -= 1
            if depth == 0:
                return code[start + 1:i]
    return code[start + 1:]


def _top_level(args: str) -> str:
    """``args`` with nested brackets and strings blanked out."""
    out, depth = [], 0
    args = re.sub(r"(\"[^\"]*\"|'[^']*')", lambda m: " " * len(m.group(0)), args)
    for ch in args:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        out.append(ch if depth == 0 else " ")
    return "".join(out)


def _keywords(args: str) -> list[str]:
    return re.findall(r"(?<![\w.])([A-Za-z_]\w*)\s*=(?!=)", _top_level(args))


def _calls(code: str):
    """``(class name, keyword, what)`` for each keyword of each estimator call in ``code``."""
    for m in re.finditer(r"\b([A-Z]\w+)\(", code):
        name = m.group(1)
        if name not in CLASSES:
            continue
        args = _args(code, m.end() - 1)
        for kw in _keywords(args):
            yield name, kw, f"{name}({kw}=...)"
        if name == "MultiTaskCV":
            inner = re.match(r"\s*([A-Z]\w+)\(", args)
            grid = re.search(r"param_grid\s*=\s*\{", args)
            if inner and inner.group(1) in CLASSES and grid:
                body = _args(args, grid.end() - 1)
                for key in re.findall(r"[\"'](\w+)[\"']\s*:", body):
                    yield inner.group(1), key, f"param_grid key {key!r}"


def _violations(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    bad = []
    for code in _code(text):
        for name, kw, what in _calls(code):
            if kw not in _params(name):
                bad.append(f"{what}: {name} has no parameter {kw!r}")
    # a list of path parameters, "path parameter (`alpha`, `lam` or `radius`)", quotes
    # parameters of the models
    every = set().union(*(_params(n) for n in CLASSES))
    for listed in re.findall(r"path\s+parameters?\s+\(([^)]*)\)", text):
        for name in re.findall(r"`([A-Za-z_]\w*)`", listed):
            if name not in every:
                bad.append(f"`{name}` named as a path parameter: no estimator has it")
    return bad


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_quoted_parameters_exist(path):
    assert _violations(path) == []


def test_the_collector_finds_what_it_should(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "The path parameter (`alpha` or `gamma`).\n\n"
        "```python\nMultiTaskCV(SparseLowRankRegressor(gamma=0.1), "
        "param_grid={\"tau\": [1.0]}, n_alphas=3)\nL21Regressor(alpha=1.0)\n```\n",
        encoding="utf-8")
    found = _violations(page)
    assert len(found) == 3
    assert any("'gamma'" in f for f in found) and any("'tau'" in f for f in found)
    assert any("`gamma` named as a path parameter" in f for f in found)


# ----------------------------------------------------------------------------- default grids
# Every model page says exactly what ``MultiTaskCV(model)`` searches without ``param_grid``.
#
# Each page of ``docs/models`` has a section "What `MultiTaskCV` searches by default" with three
# kinds of bullet: ``* **searched**: ...``, ``* **held** ...: ...`` and ``* **not searched**:
# ...``, optionally scoped to some models (``* **searched** (`ModelA`, `ModelB`): ...``). The
# names a bullet states are the parameters quoted in its first sentence outside parentheses.
# For every model of the page: the searched names are the keys of its ``default_grid``, the held
# names its ``_grid_held``, and every parameter that changes the fitted model is in one of the
# three lists (solver settings and bookkeeping apart). ``docs/benchmark.md`` has a table of the
# main job's models with the number of values of each searched parameter on its grid.

#: The models of each model page, by stem (``Regressor`` / ``Classifier`` added where defined).
PAGE_MODELS = {
    "baselines.md": ["IndependentRidge", "IndependentLasso", "Pooled", "L21", "TraceNorm",
                     "MultiTask"],
    "sparse_low_rank.md": ["SparseLowRank"],
    "robust.md": ["RobustMTL"],
    "l1inf.md": ["L1Inf"],
    "capped_trace.md": ["CappedTrace"],
    "mtmkl.md": ["MultiTaskKernelClassifier"],
    "cmtl.md": ["ClusteredMTL"],
    "caso.md": ["ConvexASO"],
    "msmtfl.md": ["CappedL1"],
    "mtrl.md": ["TaskRelationship"],
    "dirty.md": ["DirtyModel"],
    "rmtfl.md": ["RobustFeatureLearning"],
    "graph.md": ["GraphRegularized", "MeanRegularized"],
    "temporal.md": ["TemporalGroupLasso", "FusedSparseGroupLasso"],
}

#: Parameters that set how a model is computed or its data read, not which model is fitted.
NOT_MODEL = {"solver", "tol", "max_iter", "warm_start", "verbose", "random_state", "n_jobs",
             "task_column", "missing_targets", "fit_intercept", "intercept_scaling",
             "backend", "blas_threads", "shrinking", "max_mkl_iter", "n_stages",
             "stage_solver", "eta0", "iterate"}

SECTION = "## What `MultiTaskCV` searches by default"


def _classes_of(stems: list[str]) -> list[str]:
    out = []
    for stem in stems:
        names = [stem] if stem in CLASSES else [f"{stem}Regressor", f"{stem}Classifier"]
        out += [n for n in names if n in CLASSES]
    assert out, stems
    return out


def _stated_names(text: str) -> set[str]:
    """Parameters quoted in the first sentence of ``text``, outside parentheses."""
    text = re.sub(r"`([^`]*)`", lambda m: f"`{m.group(1)}`"
                  if re.fullmatch(r"[A-Za-z_]\w*", m.group(1)) else "CODE", text)
    out, depth = [], 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(ch)
    first = re.split(r"\.(?:\s|$)", "".join(out), maxsplit=1)[0]
    return set(re.findall(r"`([A-Za-z_]\w*)`", first))


def _grid_bullets(text: str, page_classes: list[str]) -> list[tuple[str, list[str], set]]:
    """``(kind, classes, names)`` of each bullet of the default-grid section."""
    assert text.count(SECTION) == 1, "no section on what MultiTaskCV searches"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    out = []
    for item in re.split(r"\n(?=\* )", section.split("\n\n", 2)[2].strip()):
        m = re.match(r"\* \*\*(searched|held|not searched)\*\*[^(:]*(?:\(([^)]*)\))?:\s*(.*)",
                     " ".join(item.split()))
        assert m, f"not a bullet of the grid section: {item[:60]!r}"
        scope = re.findall(r"`(\w+)`", m.group(2) or "") or page_classes
        assert set(scope) <= set(page_classes), scope
        out.append((m.group(1), scope, _stated_names(m.group(3))))
    return out


def _small_problem(classifier: bool):
    rng = np.random.default_rng(0)
    X, task = rng.standard_normal((72, 4)), np.repeat([0, 1, 2], 24)
    y = X @ rng.standard_normal(4) + 0.5 * rng.standard_normal(72)
    return X, (np.where(y > np.median(y), 1, 0) if classifier else y), task


def _default_grid(name: str, **kw) -> dict:
    est = CLASSES[name]()
    if "graph" in est.get_params():
        est.set_params(graph=np.ones((3, 3)) - np.eye(3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.default_grid(*_small_problem(name.endswith("Classifier")), **kw)


@pytest.mark.parametrize("page", sorted(PAGE_MODELS))
def test_model_pages_say_what_the_cv_searches(page):
    classes = _classes_of(PAGE_MODELS[page])
    bullets = _grid_bullets((ROOT / "docs" / "models" / page).read_text(encoding="utf-8"),
                            classes)
    for name in classes:
        mine = [(kind, names) for kind, scope, names in bullets if name in scope]
        searched = [names for kind, names in mine if kind == "searched"]
        assert len(searched) == 1, f"{page}: {name} needs one 'searched' bullet"
        assert searched[0] == set(_default_grid(name)), (page, name, searched[0])
        held = set().union(*[names for kind, names in mine if kind == "held"])
        assert held == set(getattr(CLASSES[name], "_grid_held", {})), (page, name, held)
        rest = set().union(*[names for kind, names in mine if kind == "not searched"])
        params = _params(name)
        stated = searched[0] | held | rest
        assert stated - params <= set().union(*(_params(c) for c in classes)), (page, name)
        unstated = params - NOT_MODEL - stated
        assert not unstated, f"{page}: {name}: the page does not say whether {unstated} is searched"


def test_benchmark_page_says_what_the_main_jobs_cv_searches():
    from multitask import benchmark as bench

    text = (ROOT / "docs" / "benchmark.md").read_text(encoding="utf-8")
    section = text.split("## What the model selection searches", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        for stem in re.findall(r"`(\w+)`", cells[0]):
            rows[stem] = cells
    models = {**bench.benchmark_models("regression", graph=True, ordered=True),
              **bench.benchmark_models("classification", graph=True, ordered=True)}
    for name in models:
        stem = re.sub(r"(Regressor|Classifier)$", "", name)
        assert stem in rows, f"docs/benchmark.md: no row for {name}"
        _, searched, held = rows[stem]
        grid = _default_grid(name, n_alphas=bench.DEFAULT_N_ALPHAS,
                             alpha_ratio=bench.DEFAULT_ALPHA_RATIO)
        stated = {k: int(n) for k, n in re.findall(r"`(\w+)` \((\d+)", searched)}
        assert stated == {k: len(v) for k, v in grid.items()}, (name, stated)
        assert set(re.findall(r"`(\w+)`", held)) == set(getattr(models[name], "_grid_held",
                                                                 {})), name
