"""The size limits of the house: no module of ``src/multitask`` over 900 lines, and at most 4
functions with more than 100 lines of code (docstrings, blank lines and comment lines not
counted). A module or a function past them is a sign that more than one responsibility lives
there: split it by responsibility (docs/architecture.md) rather than raise the limits."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "multitask"
MAX_MODULE_LINES = 900
MAX_FUNCTION_CODE_LINES = 100
MAX_LONG_FUNCTIONS = 4


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "__pycache__" not in p.parts)


def code_lines(node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> int:
    """Lines of ``node`` that hold code: not its docstring, not blank, not a comment."""
    doc: set[int] = set()
    first = node.body[0] if node.body else None
    if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        doc = set(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    count = 0
    for i in range(node.lineno, (node.end_lineno or node.lineno) + 1):
        text = lines[i - 1].strip()
        if i in doc or not text or text.startswith("#"):
            continue
        count += 1
    return count


def test_no_module_over_900_lines():
    big = [f"{p.relative_to(SRC.parent)}: {n} lines" for p in _modules()
           if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES]
    assert not big, "modules over the limit: " + "; ".join(big)


def test_at_most_four_functions_over_100_lines_of_code():
    long = []
    for p in _modules():
        text = p.read_text()
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = code_lines(node, lines)
                if n > MAX_FUNCTION_CODE_LINES:
                    long.append(f"{p.relative_to(SRC.parent)}:{node.lineno} {node.name} ({n})")
    assert len(long) <= MAX_LONG_FUNCTIONS, "functions over 100 lines of code: " + "; ".join(long)


def test_the_counter_skips_docstrings_and_comments():
    src = 'def f():\n    """doc\n    more"""\n    # note\n\n    x = 1\n    return x\n'
    node = ast.parse(src).body[0]
    assert isinstance(node, ast.FunctionDef)
    assert code_lines(node, src.splitlines()) == 3  # def, x = 1, return
