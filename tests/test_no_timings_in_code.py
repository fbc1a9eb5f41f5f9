"""No timings in the docstrings and comments of ``multitask``.

A figure such as "0.15 s", "27 us against 34 us", "3x faster" or "measured: ..." goes stale
as soon as the code or the machine changes; the house rule keeps figures in benchmark output
and in docs/ next to the command that measures them, and the code says why it does what it
does and where the figure is. This test reads every docstring (``ast``) and every comment
(``tokenize``) of ``src/multitask`` and fails with ``file:line`` for each timing it finds.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import multitask

PACKAGE = Path(multitask.__file__).parent

#: A timing: a number (or a range) and a unit of time, a speed ratio ("3x faster", "two to
#: four times slower", "12-14x less CPU", "4x cheaper", "200 times the cost"), or a
#: measurement ("measured: ..."). The units are matched in lower case only (``2 S`` is a
#: shift in a kernel's docstring), and not after an exponent (``1e-12 s`` is a tolerance
#: times a scale ``s``; a timing written ``2e+3 s`` therefore passes unseen).
_NUMBER = r"(?:\d+(?:\.\d+)?|two|three|four|five|six|seven|eight|nine|ten|a hundred)"
TIMING = re.compile(
    r"(?<![\w.^])(?<![eE][-+])\d+(?:\.\d+)?(?:\s*-\s*\d+(?:\.\d+)?)?\s*"
    r"(?:s|ms|us|µs|ns|sec|secs|seconds?|minutes?|hours?)(?![\w^])"
    rf"|(?i:\b{_NUMBER}(?:\s*(?:-|to)\s*{_NUMBER})?\s*(?:x|times)\s+"
    r"(?:faster|slower|quicker|cheaper|dearer|less\s+cpu|more\s+cpu|less\s+time|more\s+time"
    r"|the\s+cost|the\s+time|the\s+cpu|as\s+long|as\s+fast|as\s+slow|speed-?up)\b)"
    r"|(?i:\bmeasured\s*:)",
)

#: Texts that look like timings and are not, each with its reason (``(path, text)``: the
#: text of the match in that file, the path relative to the package).
ALLOWED = {
    # a formula: the scale ``s`` times a strength, not seconds
    ("estimators/graph.py", "2 s"),
    # samples of what the progress line prints, not figures of the code's speed
    ("progress.py", "3.1 s"),
    ("progress.py", "4.6 s"),
    ("progress.py", "4.2 s"),
    ("progress.py", "05 s"),
}


def _docstrings(tree: ast.AST):
    """``(line, text)`` of every docstring of the module, its classes and functions."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (body and isinstance(body[0], ast.Expr)
                    and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                yield body[0].lineno, body[0].value.value


def _comments(source: str):
    """``(line, text)`` of every comment, the comments of consecutive lines joined (one
    sentence may run over several: ``# ... 2-3x`` then ``# faster ...``)."""
    out: list[tuple[int, str]] = []
    last = -2
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        line = token.start[0]
        text = token.string.lstrip("#:").strip()
        if out and line == last + 1:
            out[-1] = (out[-1][0], out[-1][1] + "\n" + text)
        else:
            out.append((line, text))
        last = line
    return out


def timings(source: str, name: str = "<source>") -> list[tuple[int, str]]:
    """``(line, match)`` of each timing in the docstrings and comments of ``source`` not in
    :data:`ALLOWED` for ``name`` (the path relative to the package)."""
    out = []
    texts = list(_docstrings(ast.parse(source))) + list(_comments(source))
    for first_line, text in texts:
        for match in TIMING.finditer(text):
            if (name, match.group(0)) in ALLOWED:
                continue
            out.append((first_line + text.count("\n", 0, match.start()), match.group(0)))
    return sorted(out)


def test_no_timings_in_docstrings_or_comments():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        found += [f"{name}:{line}: {text!r}" for line, text in timings(path.read_text(), name)]
    assert found == [], "timings in docstrings or comments (figures belong in docs/):\n" + (
        "\n".join(found))


def test_the_timing_check_catches_timings():
    source = (
        '"""Module.\n\nThe set-up takes about 0.15 s of CPU."""\n'
        "x = 1  # 8-10 us per row\n"
        "def f():\n"
        '    """Fast: 27 µs against 34 us; 3x faster, 2 times faster, 10 minutes."""\n'
        "    # measured: half the time\n"
        '    return "0.5 s"  # a string, not a comment: fine\n'
        "y = 2  # the step s = 1 / L, x^2 s, 10^4 tasks, l1s and 20 x 20 grids: fine\n"
    )
    assert timings(source) == sorted([
        (3, "0.15 s"), (4, "8-10 us"), (6, "27 µs"), (6, "34 us"), (6, "3x faster"),
        (6, "2 times faster"), (6, "10 minutes"), (7, "measured:")])
    assert timings('"""A shift of up to 2 S positions, then 2 s rho."""\n') == [(1, "2 s")]
    assert timings("x = 1  # |v - r| <= 1e-12 s + 1e-9 |r|\n") == []
    assert timings(
        "# a block that stays in cache is 2-3x\n"
        "# faster; 12-14x less CPU, about 4x cheaper\n"
        '"""Two to four times slower, at about 200 times the cost."""\n'
        "y = 1  # up to 100 times more iterations, a 20 x 20 matrix: fine\n") == [
        (1, "2-3x\nfaster"), (2, "12-14x less CPU"), (2, "4x cheaper"),
        (3, "200 times the cost"), (3, "Two to four times slower")]
    assert timings('"""Then 2 s rho."""\n', "estimators/graph.py") == []
