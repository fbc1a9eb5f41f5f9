"""MkDocs hook: the gallery, one page per script of ``examples/`` with the figure it draws.

At each build every ``examples/plot_*.py`` runs once, in this process (the imports are paid
once for all of them), with ``MULTITASK_EXAMPLES_OUT`` set to a temporary folder where it
writes ``<script name>.png``. Its module docstring (first line: the title; the rest: the
text), its figure and its code become the page ``gallery/<script name>.md``;
``gallery/index.md`` shows every figure with a link to its page. The nav entry
``Gallery: gallery/index.md`` of ``mkdocs.yml`` becomes a section holding all these pages.

A script that fails, or writes no figure, fails the build. ``MULTITASK_EXAMPLES_QUICK=1`` in
the environment makes the scripts run on small data (the tests set it). Figures are kept in
memory for the life of the process, keyed by the script's modification time, so that
``mkdocs serve`` reruns only the scripts that changed.
"""

from __future__ import annotations

import ast
import logging
import os
import runpy
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

SECTION = "gallery"
ENV_OUT = "MULTITASK_EXAMPLES_OUT"
ENV_QUICK = "MULTITASK_EXAMPLES_QUICK"

log = logging.getLogger("mkdocs.hooks.gallery")


@dataclass(frozen=True)
class Example:
    """One script of the gallery."""

    path: Path
    title: str
    text: str
    code: str

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def page(self) -> str:
        return f"{SECTION}/{self.name}.md"


_figures: dict[tuple[str, int, str], bytes] = {}


def examples_dir(config: MkDocsConfig) -> Path:
    """The ``examples/`` folder beside ``mkdocs.yml``."""
    return Path(config.config_file_path).resolve().parent / "examples"


def read_example(path: Path) -> Example:
    """Title, text and code (without the docstring) of a gallery script.

    Parameters
    ----------
    path : Path
        A script whose module docstring starts with a one-line title.

    Returns
    -------
    Example
    """
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    doc = ast.get_docstring(tree)
    if not doc:
        raise PluginError(f"gallery: {path.name} has no module docstring (title and text).")
    title, _, text = doc.partition("\n")
    first = tree.body[0]
    code = "\n".join(source.splitlines()[first.end_lineno:]).strip("\n")
    return Example(path=path, title=title.strip(), text=text.strip(), code=code)


def find_examples(config: MkDocsConfig) -> list[Example]:
    """Every ``plot_*.py`` of ``examples/``: first those named (without ``.py``) in the list
    ``extra.gallery_order`` of ``mkdocs.yml``, in that order, then the others by name."""
    order = list((config.extra or {}).get("gallery_order", []))
    paths = sorted(examples_dir(config).glob("plot_*.py"),
                   key=lambda p: (order.index(p.stem) if p.stem in order else len(order), p.stem))
    return [read_example(p) for p in paths]


def run_example(example: Example) -> bytes:
    """Run the script; return the PNG it wrote (cached while the script is unchanged)."""
    key = (str(example.path), example.path.stat().st_mtime_ns, os.environ.get(ENV_QUICK, ""))
    if key in _figures:
        return _figures[key]
    before = os.environ.get(ENV_OUT)
    with tempfile.TemporaryDirectory() as out:
        os.environ[ENV_OUT] = out
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                runpy.run_path(str(example.path), run_name="__main__")
        except FileNotFoundError as exc:
            if "Could not find the data folder" not in str(exc):
                raise PluginError(f"gallery: examples/{example.path.name} failed: {exc!r}") \
                    from exc
            _figures[key] = b""  # the shared data folder is absent here: no figure
            return _figures[key]
        except Exception as exc:
            raise PluginError(f"gallery: examples/{example.path.name} failed: {exc!r}") from exc
        finally:
            if before is None:
                os.environ.pop(ENV_OUT, None)
            else:
                os.environ[ENV_OUT] = before
        png = Path(out) / f"{example.name}.png"
        if not png.is_file():
            raise PluginError(f"gallery: examples/{example.path.name} wrote no {png.name}.")
        _figures[key] = png.read_bytes()
    return _figures[key]


def page_markdown(example: Example, figure: bool = True) -> str:
    """The page of one example: title, text, figure (or why there is none: the shared data
    folder was absent where the site was built), code, how to run it."""
    shown = (f"![{example.title}]({example.name}.png)" if figure else
             "*(No figure in this build: the example reads the shared data folder, which was "
             "not found where the site was built; see `multitask.datasets.find_data_dir`.)*")
    return (
        f"# {example.title}\n\n{example.text}\n\n"
        f"{shown}\n\n"
        f"```python\n{example.code}\n```\n\n"
        f"Run it from the repository root: `python examples/{example.path.name}` writes "
        f"`{example.name}.png` into the current folder (`{ENV_QUICK}=1`: small data, "
        f"`{ENV_OUT}=DIR`: another folder).\n"
    )


def index_markdown(examples: list[Example]) -> str:
    """The gallery's front page: every figure, linked to its page."""
    lines = [
        "# Gallery",
        "",
        "Short scripts of the `examples/` folder, each drawing one figure with the library's "
        "plotting functions (`multitask.plotting`) on generated data. Every figure here was "
        "drawn by its script when this site was built.",
        "",
    ]
    for ex in examples:
        lines += [f"## [{ex.title}]({ex.name}.md)", ""]
        if run_example(ex):  # cached; empty where the shared data folder was absent
            lines += [f'[![{ex.title}]({ex.name}.png){{ width="640" }}]({ex.name}.md)', ""]
    return "\n".join(lines)


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Expand the nav entry of the gallery into a section with one page per example."""
    examples = find_examples(config)
    index = f"{SECTION}/index.md"
    pages = [index] + [{ex.title.split(":")[0]: ex.page} for ex in examples]
    for i, item in enumerate(config.nav or []):
        if isinstance(item, dict) and list(item.values()) == [index]:
            config.nav[i] = {next(iter(item)): pages}
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Run the examples and add their pages and figures to the site."""
    examples = find_examples(config)
    if not examples:
        raise PluginError(f"gallery: no plot_*.py in {examples_dir(config)}.")
    start = time.perf_counter()
    for ex in examples:
        figure = run_example(ex)
        if figure:
            files.append(File.generated(config, f"{SECTION}/{ex.name}.png", content=figure))
        files.append(File.generated(config, ex.page, content=page_markdown(ex, bool(figure))))
    files.append(File.generated(config, f"{SECTION}/index.md", content=index_markdown(examples)))
    log.info("gallery: %d examples in %.1f s", len(examples), time.perf_counter() - start)
    return files
