"""The checks of a model file's archive that run before any of its arrays is read.

A model file is a zip archive (skops' format): ``schema.json``, which describes the objects,
and one member per array (``.npy``; ``.npz`` for a sparse matrix, ``.bin`` for bytes). The
archive says how many bytes each member unpacks to, and each array's ``.npy`` header says its
shape and dtype, both readable without unpacking the data. :func:`check_archive` compares
them, so that a small file cannot make the loader unpack gigabytes (a "zip bomb": a member of
zeros compresses a thousand times) before the fitted state is checked:

1. the central directory alone (no member read): every member is a regular file (a symbolic
   link or a folder is refused, naming it), its name is given once, it is stored or deflated,
   and a stored member's sizes agree;
2. ``schema.json`` is read and parsed (when it unpacks to at most :data:`MAX_EXPANSION` times
   its compressed size beyond :data:`FREE_BYTES`); every member it names exists and every
   member is named by it;
3. the header of each ``.npy`` member is read (at most :data:`HEADER_BYTES` unpacked): the
   member must unpack to exactly its header plus ``prod(shape) * itemsize`` bytes (an object
   dtype, which would need pickle, is refused);
4. the shapes of the arrays of every library estimator in the file (the model, and the
   refitted model of a :class:`~multitask.MultiTaskCV`) are compared with what its class
   declares (:mod:`multitask.estimators.fitted_state`: ``coef_`` has ``(m, d)`` with ``d =
   n_features_in_``, ...), so an array cannot claim more entries than the fitted state needs;
5. no member, and not the archive as a whole, unpacks to more than :data:`MAX_EXPANSION`
   times its compressed size beyond :data:`FREE_BYTES` (a file written by
   :func:`multitask.persistence.save_model` stores its members uncompressed): the bound of
   the arrays no declaration describes (the scores of a search, a solver's record);
6. the ``.npz`` members (sparse matrices: a zip inside the archive) are checked the same way.

Only then are the members read, rebuilt and checked in full
(:func:`multitask.persistence.read_model_file`). Every refusal is a
:class:`~multitask.persistence.ModelFileError` naming the file and the member.
"""

from __future__ import annotations

import importlib
import io
import json
import stat
import zipfile
from collections.abc import Callable, Iterable
from math import prod

import numpy as np

__all__ = ["FREE_BYTES", "HEADER_BYTES", "MAX_EXPANSION", "check_archive"]

#: Largest ratio of a member's unpacked size to its compressed size (beyond
#: :data:`FREE_BYTES`): deflate gives at most about 1032 (zeros), real arrays a few units.
MAX_EXPANSION = 100
#: Bytes a member may unpack to whatever its compression.
FREE_BYTES = 1 << 20
#: Largest ``.npy`` header read (numpy writes headers of at most a few hundred bytes).
HEADER_BYTES = 1 << 16

_ARRAY_KINDS = ("array", "labels", "indices", "names", "sparse_or_array")
#: The size symbols compared before reading: tasks, features, tasks of the fit (the other
#: symbols of the declarations are checked once the model is rebuilt).
_SIZE_SYMBOLS = ("m", "d", "t")


def check_archive(payload: bytes, path, error: Callable[[str], Exception],
                  trusted: Iterable[str] = ()) -> None:
    """Refuse a model file whose archive would unpack to more than its arrays need (module
    docstring), reading no member's data.

    Parameters
    ----------
    payload : bytes
        The whole file (a zip archive).
    path : str or path-like
        The file's name, for the messages.
    error : callable
        ``error(message)`` makes the exception raised (the persistence layer's
        ``ModelFileError``).
    trusted : iterable of str
        The type names a model file may hold beyond skops' defaults (the persistence layer's
        ``trusted_types()``): the library classes whose declared shapes are compared.
    """
    where = f"{path}: refused: "
    try:
        archive = zipfile.ZipFile(io.BytesIO(payload))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise error(f"{path}: not a valid model file ({type(exc).__name__}: {exc}).") from None
    with archive:
        infos = _check_directory(archive, where, error)
        schema = _read_schema(archive, infos, where, error)
        files = _referenced(schema)
        missing = sorted(set(files) - set(infos))
        if missing:
            raise error(f"{where}the model names the member {missing[0]!r}, which the archive "
                        "lacks (a damaged or edited file).")
        extra = sorted(set(infos) - set(files) - {"schema.json"})
        if extra:
            raise error(f"{where}member {extra[0]!r} is not part of the model (a model file "
                        "holds schema.json and the members it names only).")
        headers = {}
        for name, loader in files.items():
            if loader == "NdArrayNode":
                headers[name] = _npy_header(archive, infos[name], where, error)
            elif loader == "SparseMatrixNode":
                _check_npz(archive, infos[name], where, error)
        _declared_shapes(schema, headers, where, error, set(trusted))
        _check_expansions(infos, len(payload), where, error)


# --------------------------------------------------------------------------- 1. the directory
def _check_directory(archive: zipfile.ZipFile, where: str, error) -> dict:
    """The members by name, checked from the central directory only: regular, named once,
    stored or deflated (their sizes: :func:`_check_expansions`)."""
    infos: dict[str, zipfile.ZipInfo] = {}
    for info in archive.infolist():
        name = info.filename
        if name in infos:
            raise error(f"{where}member {name!r} is given twice in the archive.")
        mode = info.external_attr >> 16  # Unix mode; type bits zero: a plain file
        if info.is_dir() or stat.S_IFMT(mode) not in (0, stat.S_IFREG):
            what = ("a symbolic link" if stat.S_ISLNK(mode) else
                    "a folder" if info.is_dir() or stat.S_ISDIR(mode) else
                    "not a regular file")
            raise error(f"{where}member {name!r} is {what}: a model file holds regular "
                        "members only.")
        if info.flag_bits & 0x1:
            raise error(f"{where}member {name!r} is encrypted.")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise error(f"{where}member {name!r} is compressed with method "
                        f"{info.compress_type} (a model file stores or deflates its members).")
        if info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
            raise error(f"{where}member {name!r} is stored uncompressed but declares "
                        f"{info.file_size} bytes in {info.compress_size}.")
        infos[name] = info
    return infos


def _check_expansions(infos: dict, size: int, where: str, error) -> None:
    """No member unpacks to more than :data:`MAX_EXPANSION` times its compressed size beyond
    :data:`FREE_BYTES`, nor the archive as a whole (``size``: its bytes)."""
    for name, info in infos.items():
        _check_expansion(name, info.file_size, info.compress_size, where, error)
    _check_expansion("the archive", sum(i.file_size for i in infos.values()), size, where,
                     error)


def _check_expansion(name: str, unpacked: int, packed: int, where: str, error) -> None:
    if unpacked > MAX_EXPANSION * packed + FREE_BYTES:
        what = "the archive unpacks" if name == "the archive" else f"member {name!r} unpacks"
        raise error(f"{where}{what} to {unpacked} bytes from {packed} (more than "
                    f"{MAX_EXPANSION} times its compressed size): refused before reading it "
                    "(a file written by multitask stores its arrays uncompressed).")


# --------------------------------------------------------------------------- 2. the schema
def _read_schema(archive: zipfile.ZipFile, infos: dict, where: str, error):
    if "schema.json" not in infos:
        raise error(f"{where}the archive has no schema.json (not a model file).")
    info = infos["schema.json"]
    _check_expansion("schema.json", info.file_size, info.compress_size, where, error)
    try:
        return json.loads(archive.read("schema.json"))
    except (ValueError, UnicodeDecodeError, zipfile.BadZipFile, OSError, EOFError) as exc:
        raise error(f"{where}schema.json cannot be read ({type(exc).__name__}: "
                    f"{exc}).") from None


def _nodes(tree):
    """Every dict of the schema, depth first."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            yield node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _referenced(schema) -> dict[str, str]:
    """The members the schema names: ``{name: loader}``."""
    return {node["file"]: str(node.get("__loader__")) for node in _nodes(schema)
            if isinstance(node.get("file"), str)}


# --------------------------------------------------------------------------- 3. npy headers
def _npy_header(archive: zipfile.ZipFile, info: zipfile.ZipInfo, where: str, error,
                label: str | None = None) -> tuple[tuple[int, ...], np.dtype]:
    """``(shape, dtype)`` from the header of a ``.npy`` member, whose declared size must be
    what they need."""
    label = label or repr(info.filename)
    try:
        with archive.open(info) as fh:
            head = io.BytesIO(fh.read(min(info.file_size, HEADER_BYTES)))
        version = np.lib.format.read_magic(head)
        read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                else np.lib.format.read_array_header_2_0)
        shape, _, dtype = read(head, max_header_size=HEADER_BYTES)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, SyntaxError) as exc:
        raise error(f"{where}member {label} is not a numpy array ({type(exc).__name__}: "
                    f"{exc}).") from None
    if dtype.hasobject:
        raise error(f"{where}member {label} holds Python objects (dtype {dtype}), which a "
                    "model file never stores as an array.")
    needed = head.tell() + prod(shape) * dtype.itemsize
    if info.file_size != needed:
        raise error(f"{where}member {label} declares {info.file_size} bytes but its array "
                    f"header (shape {tuple(shape)}, dtype {dtype}) needs {needed}.")
    return tuple(int(s) for s in shape), dtype


def _check_npz(archive: zipfile.ZipFile, info: zipfile.ZipInfo, where: str, error) -> None:
    """A sparse matrix's ``.npz`` member (a zip of ``.npy`` arrays): its members checked as the
    archive's (read now: it unpacks to at most its bounded declared size)."""
    label = repr(info.filename)
    try:
        inner = zipfile.ZipFile(io.BytesIO(archive.read(info)))
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise error(f"{where}member {label} is not a sparse matrix ({type(exc).__name__}: "
                    f"{exc}).") from None
    with inner:
        inner_infos = _check_directory(inner, f"{where}in {label}: ", error)
        _check_expansions(inner_infos, info.file_size, f"{where}in {label}: ", error)
        for name, part in inner_infos.items():
            _npy_header(inner, part, where, error, f"{name!r} of {label}")


# --------------------------------------------------------------------------- 4. declared shapes
def _library_class(node, trusted: set[str]) -> type | None:
    """The library estimator class an ``ObjectNode`` of the schema rebuilds (None for any
    other node, or a class that is not one of the library's ``trusted`` types)."""
    if not (isinstance(node, dict) and node.get("__loader__") == "ObjectNode"):
        return None
    module, name = node.get("__module__"), node.get("__class__")
    if not (isinstance(module, str) and isinstance(name, str)):
        return None
    if f"{module}.{name}" not in trusted:
        return None
    cls = getattr(importlib.import_module(module), name, None)
    return cls if hasattr(cls, "_fitted_declaration") else None


def _attributes(node) -> dict:
    content = node.get("content")
    inner = content.get("content") if isinstance(content, dict) else None
    return inner if isinstance(inner, dict) else {}


def _json_int(node) -> int | None:
    if not (isinstance(node, dict) and node.get("__loader__") == "JsonNode"):
        return None
    try:
        value = json.loads(node.get("content"))
    except (TypeError, ValueError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _declared_shapes(schema, headers: dict, where: str, error, trusted: set[str]) -> None:
    """Compare the array headers of every library estimator of the schema with the shapes its
    class declares, binding the size symbols :data:`_SIZE_SYMBOLS` as the validator does
    (``"d"`` from ``n_features_in_``, ``"t"`` from ``fit_task_sizes_``, ``"m"`` on first use;
    ``"t"`` is ``"m"`` unless recorded). An estimator inside another (the
    refitted model of a search) is named by its attribute, as the validator names it."""
    stack = [(schema, "")]
    while stack:
        node, prefix = stack.pop()
        if isinstance(node, list):
            stack.extend((v, prefix) for v in node)
            continue
        if not isinstance(node, dict):
            continue
        cls = _library_class(node, trusted)
        if cls is None:
            stack.extend((v, prefix) for v in node.values())
            continue
        attrs = _attributes(node)
        _estimator_shapes(cls, attrs, headers, f"{where}{prefix}", error)
        stack.extend((v, f"{prefix}{k}: ") for k, v in attrs.items())


def _estimator_shapes(cls: type, attrs: dict, headers: dict, where: str, error) -> None:
    """:func:`_declared_shapes` for one estimator of class ``cls`` (its attribute nodes)."""
    sizes: dict[str, int] = {}
    origin: dict[str, str] = {}  # symbol -> the attribute that gave its size
    for name, decl in cls._fitted_declaration().items():
        value = attrs.get(name)
        if not isinstance(value, dict):
            continue
        label = (cls.__name__, name)
        if decl.kind == "int" and decl.bind is not None:
            size = _json_int(value)
            if size is not None:
                _bind(sizes, origin, decl.bind, size, label, where, error)
        elif decl.kind in _ARRAY_KINDS and isinstance(value.get("file"), str):
            header = headers.get(value["file"])
            if header is None:
                continue
            if callable(decl.shape):
                continue  # a shape that depends on the estimator: checked once rebuilt
            want = tuple(w if not isinstance(w, str) or w in _SIZE_SYMBOLS else None
                         for w in decl.shape) or ((None,) if decl.kind != "array" else ())
            _match(sizes, origin, header[0], want, label, where, error)
            symbol = getattr(decl.check, "binds", None)
            if symbol is not None and header[0]:
                sizes[symbol] = header[0][0]  # the check's own rule (one entry per task)
                origin[symbol] = name


def _bind(sizes: dict, origin: dict, symbol: str, size: int, label: tuple, where: str,
          error) -> None:
    known = sizes.setdefault(symbol, size)
    origin.setdefault(symbol, label[1])
    if known != size:
        raise error(f"{where}{label[0]}.{label[1]} gives {size} {_symbol(symbol)} where the "
                    f"model has {known} (as in {origin[symbol]}).")


def _match(sizes: dict, origin: dict, got: tuple, want: tuple, label: tuple, where: str,
           error) -> None:
    """The array header's shape ``got`` against the declared ``want`` (symbols bound on first
    use; ``origin`` records which attribute bound each)."""
    attr = f"{label[0]}.{label[1]}"
    if len(got) != len(want):
        raise error(f"{where}{attr}: its array header declares shape {got}, which is not "
                    f"the {len(want)}-dimensional shape the model's class declares (refused "
                    "before reading it).")
    for g, w in zip(got, want, strict=True):
        if w is None:
            continue
        if isinstance(w, str):
            if w == "t" and "t" not in sizes and "m" in sizes:
                sizes["t"] = sizes["m"]
                origin.setdefault("t", origin.get("m", "tasks_"))
            known = sizes.setdefault(w, g)
            origin.setdefault(w, label[1])
            if known != g:
                raise error(f"{where}{attr}: its array header declares shape {got}, {g} "
                            f"{_symbol(w)} where the model has {known} (as in {origin[w]}; "
                            "refused before reading it).")
        elif g != w:
            raise error(f"{where}{attr}: its array header declares shape {got}, the model's "
                        f"class {want} (refused before reading it).")


def _symbol(symbol: str) -> str:
    return {"m": "tasks", "d": "features", "t": "tasks of fit"}.get(symbol,
                                                                      f"entries ({symbol})")
