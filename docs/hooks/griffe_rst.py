"""Griffe extension: the reStructuredText bits of the numpydoc docstrings, as Markdown.

The docstrings of the library are numpydoc, written for Sphinx-style tools; mkdocstrings
renders them as Markdown. Three constructs would show up verbatim:

* cross-reference roles, ``:func:`name``` (also ``:class:``, ``:mod:``, ``:meth:``,
  ``:attr:``, ``:data:``, ``:exc:``, ``:obj:``, with an optional ``~`` prefix): they become
  optional cross-references (a link when the target is rendered somewhere on the site, plain
  code otherwise, never a warning);
* literal-block markers, a paragraph ending in ``::``: one colon is dropped (the indented
  block below is already a code block in Markdown), a line holding only ``::`` is dropped;
* directives: ``.. math::`` loses its directive line (its indented body stays a code block);
  ``.. note::``, ``.. warning::``, ``.. seealso::``, ``.. deprecated:: X``,
  ``.. versionadded:: X`` and ``.. versionchanged:: X`` become admonitions
  (``!!! warning "Deprecated since X"``) around their indented body.

Loaded by ``mkdocs.yml`` (``extensions`` of the mkdocstrings Python handler).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj|const):`(~?)([^`<]+)`")
_LITERAL_END = re.compile(r"(?<=\S)::[ \t]*$", flags=re.M)
_LONE_LITERAL = re.compile(r"^[ \t]*::[ \t]*$\n?", flags=re.M)
_DIRECTIVE = re.compile(r"^(?P<indent>[ \t]*)\.\. (?P<name>[a-z]+)::[ \t]*(?P<arg>.*)$")
_ADMONITIONS = {
    "note": ("note", "Note"),
    "warning": ("warning", "Warning"),
    "seealso": ("info", "See also"),
    "deprecated": ("warning", "Deprecated since {}"),
    "versionadded": ("info", "Added in version {}"),
    "versionchanged": ("info", "Changed in version {}"),
}


def _directives(text: str) -> str:
    """Rewrite ``.. name:: arg`` blocks (see the module docstring); others are left alone."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        match = _DIRECTIVE.match(lines[i])
        if not match or (match["name"] != "math" and match["name"] not in _ADMONITIONS):
            out.append(lines[i])
            i += 1
            continue
        indent = match["indent"]
        body: list[str] = []
        i += 1
        while i < len(lines) and (not lines[i].strip() or
                                  len(lines[i]) - len(lines[i].lstrip()) > len(indent)):
            body.append(lines[i])
            i += 1
        while body and not body[-1].strip():
            body.pop()
        if match["name"] == "math":  # the body, indented, stays a literal block
            out.extend(body)
            continue
        kind, title = _ADMONITIONS[match["name"]]
        arg = match["arg"].strip()
        title = title.format(arg) if "{}" in title else (f"{title}: {arg}" if arg else title)
        width = min((len(b) - len(b.lstrip()) for b in body if b.strip()), default=0)
        out.append(f'{indent}!!! {kind} "{title}"')
        out.extend(f"{indent}    {b[width:]}" if b.strip() else "" for b in body)
        if i < len(lines) and lines[i].strip():
            out.append("")
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def _target(obj: griffe.Object, name: str) -> str:
    """Full dotted path of ``name`` as seen from ``obj`` (``name`` itself if unresolved)."""
    try:
        return obj.resolve(name)
    except Exception:  # noqa: BLE001 - griffe raises several kinds; any means "unresolved"
        head, _, rest = name.partition(".")
        if rest:
            try:
                return f"{obj.resolve(head)}.{rest}"
            except Exception:  # noqa: BLE001
                pass
        return name


def rst_to_markdown(text: str, obj: griffe.Object | None = None) -> str:
    """Rewrite roles, literal-block markers and math directives of a docstring.

    Parameters
    ----------
    text : str
        The docstring.
    obj : griffe.Object, optional
        The documented object, to resolve the names of cross-references relative to it.

    Returns
    -------
    str
    """

    def role(match: re.Match) -> str:
        short, name = match.group(1) == "~", match.group(2).strip()
        name = name.rstrip("()")
        shown = name.rsplit(".", 1)[-1] if short else name
        target = _target(obj, name) if obj is not None else name
        return f'<autoref identifier="{target}" optional><code>{shown}</code></autoref>'

    text = _ROLE.sub(role, text)
    text = _directives(text)
    text = _LONE_LITERAL.sub("", text)
    return _LITERAL_END.sub(":", text)


class RstToMarkdown(griffe.Extension):
    """Rewrite every docstring of a loaded package with :func:`rst_to_markdown`."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """Visit the package once it is fully loaded (so that names resolve)."""
        seen: set[int] = set()
        stack: list[griffe.Object] = [pkg]
        while stack:
            obj = stack.pop()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            if obj.docstring is not None:
                obj.docstring.value = rst_to_markdown(obj.docstring.value, obj)
            stack.extend(m for m in obj.members.values() if not m.is_alias)
