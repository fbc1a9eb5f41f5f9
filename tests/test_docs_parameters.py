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
from pathlib import Path

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
