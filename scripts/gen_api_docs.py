"""Generate ``docs/api.md``, the API reference, from the docstrings of the public objects.

Usage (from the repository root)::

    python scripts/gen_api_docs.py           # rewrite docs/api.md
    python scripts/gen_api_docs.py --check   # exit 1 if docs/api.md is out of date

The public objects are the ``__all__`` lists of the modules in :data:`SECTIONS`, read at run
time, so a model added to ``multitask.estimators`` appears here at the next regeneration.
``tests/test_docs_api.py`` fails when the committed file differs from the generated one.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "docs" / "api.md"

#: (title, module, names or None for the module's ``__all__``, one-line description)
SECTIONS: list[tuple[str, str, list[str] | None, str]] = [
    ("Models", "multitask.estimators", None,
     "Scikit-learn estimators; ``coef_`` has shape ``(n_tasks, n_features)``."),
    ("Model selection", "multitask.model_selection", None,
     "Folds within tasks, grids relative to ``alpha_max``, scorers, paths."),
    ("Metrics", "multitask.metrics", None, "nMSE (pooled and task-averaged), AUC, F1, ..."),
    ("Plots", "multitask.plotting", None, "Optional extra ``multitask[plot]``."),
    ("Data sets", "multitask.datasets", None, "School (shipped), loaders, synthetic data."),
    ("Data layer", "multitask.data", ["MultiTaskData", "as_multitask_data"],
     "The internal representation and the three input formats."),
    ("Losses", "multitask.losses", None, "Datafits under the scaling convention."),
    ("Penalties", "multitask.penalties", None, "Norms with a prox, balls with a projection."),
    ("Solvers", "multitask.solvers", None, "Algorithms written against losses and penalties."),
]

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _signature(obj) -> str:
    try:
        sig = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return ""
    return _ADDRESS.sub("", sig)


def _doc(obj) -> str:
    return inspect.cleandoc(inspect.getdoc(obj) or "(no docstring)")


def _split(doc: str) -> tuple[str, str]:
    """(summary paragraph, rest)."""
    parts = doc.split("\n\n", 1)
    return parts[0].replace("\n", " "), (parts[1] if len(parts) > 1 else "")


def _public_methods(cls) -> list[str]:
    out = []
    for name, member in inspect.getmembers(cls):
        if name.startswith("_") or not callable(member):
            continue
        if name in ("get_params", "set_params", "get_metadata_routing") or name.startswith(
                "set_") and name.endswith("_request"):
            continue
        out.append(name)
    return out


def _render_object(qual: str, obj) -> list[str]:
    lines = [f"### `{qual}`", ""]
    kind = "class" if inspect.isclass(obj) else ("function" if callable(obj) else "data")
    sig = _signature(obj) if kind != "data" else ""
    if kind != "data":
        lines += ["```python", f"{kind} {qual.rsplit('.', 1)[-1]}{sig}", "```", ""]
    doc = _doc(obj) if kind != "data" else f"Value: `{obj!r}`"
    summary, rest = _split(doc)
    lines += [summary, ""]
    if rest.strip():
        lines += ["```text", rest.rstrip(), "```", ""]
    if kind == "class":
        methods = _public_methods(obj)
        if methods:
            lines.append("Methods:")
            lines.append("")
            for name in methods:
                member = getattr(obj, name)
                first = _split(_doc(member))[0] if inspect.getdoc(member) else ""
                lines.append(f"* `{name}{_signature(member)}`" + (f": {first}" if first else ""))
            lines.append("")
    return lines


def render() -> str:
    """The Markdown text of ``docs/api.md``."""
    out = [
        "# API reference",
        "",
        "Generated from the docstrings by `python scripts/gen_api_docs.py`; do not edit by hand "
        "(`tests/test_docs_api.py` checks that this file is up to date).",
        "",
    ]
    toc, body = [], []
    for title, modname, names, blurb in SECTIONS:
        mod = importlib.import_module(modname)
        names = list(names if names is not None else getattr(mod, "__all__", []))
        anchor = title.lower().replace(" ", "-")
        toc.append(f"* [{title}](#{anchor}) (`{modname}`): {blurb}")
        body += [f"## {title}", "", f"Module `{modname}`. {blurb}", ""]
        for name in names:
            body += _render_object(f"{modname}.{name}", getattr(mod, name))
    text = "\n".join(out + toc + [""] + body).rstrip() + "\n"
    # no absolute home or workspace path may leak into the reference
    leaks = [f"/{d}/" for d in ("work", "home", "Users")]
    if any(bad in text for bad in leaks):  # pragma: no cover
        raise RuntimeError("An absolute path leaked into the API reference.")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when docs/api.md differs from the generated text")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = TARGET.read_text() if TARGET.exists() else ""
        if current != text:
            print("docs/api.md is out of date: run python scripts/gen_api_docs.py",
                  file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    print(f"wrote docs/api.md ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
