"""Model files that never run code when they are loaded, and files written atomically.

A fitted model is saved with :func:`save_model` in skops' format (a zip archive of a JSON
description and ``.npy`` arrays) and read back with :func:`load_model`, which creates only
objects of trusted types: the library's estimators and the solver, penalty and loss objects
they hold (:func:`trusted_types`), and the types skops trusts by default (Python and numpy
values, scikit-learn's estimators). A file that names any other type (a
function, a class of another package) is refused before anything in it is created, so a model
file received from someone else cannot run code when it is loaded. Pickle and joblib files
can run arbitrary code when they are read: they are refused unless the caller passes
``allow_pickle=True`` (``--allow-pickle`` on the command line), for files one trusts.

A model file is data until it is checked. Before any array is unpacked, the archive's declared
sizes and array headers are compared with what the model declares
(:mod:`multitask.model_archive`: a small file that would unpack to gigabytes, a symbolic link
or a member the model does not name is refused). After the objects are rebuilt, the class
recorded in the file must be the class rebuilt, and every fitted attribute is checked against
what its class declares (:func:`multitask.estimators.fitted_state.check_fitted_state`: shapes,
dtypes, finiteness, the consistency of ``coef_``, ``intercept_``, ``tasks_``, ``n_features_in_``,
``classes_`` and of each family's own attributes, the hyper-parameters) before the model is
returned: a file that does not pass is refused with a :class:`ModelFileError` naming the
attribute, and nothing of it is used.

Every file (model files, the command line's outputs) is written by :func:`atomic_write`:
through a temporary file in the destination's folder, renamed over the destination only when
complete; a symbolic link is followed (the file it points to is replaced, the link stays); a
destination that exists and is not a regular file (a device, a FIFO, a folder) is refused; the
temporary file is removed on any error, on Ctrl-C, SIGTERM and SIGHUP. See
``docs/model_files.md``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from multitask.model_archive import check_archive

__all__ = [
    "MODEL_FORMAT",
    "MODEL_FORMAT_VERSION",
    "ModelFile",
    "ModelFileError",
    "TerminatedBySignal",
    "atomic_write",
    "check_destination",
    "check_model",
    "describe_file_type",
    "load_model",
    "open_regular",
    "read_model_file",
    "save_model",
    "trusted_types",
]

#: Value of the ``"format"`` entry of every model file written by :func:`save_model`.
MODEL_FORMAT = "multitask-model"
#: Version of the layout of the saved dictionary (format, version, model, metadata).
MODEL_FORMAT_VERSION = 2

_ZIP_MAGIC = b"PK\x03\x04"
#: First bytes of pickle streams (protocol 2+), and of the compressions joblib uses.
_PICKLE_MAGIC = (b"\x80", b"\x78\x9c", b"\x78\x01", b"\x78\xda", b"\x1f\x8b", b"BZh",
                 b"\xfd7zXZ", b"\x04\x22\x4d\x18", b"ZF")


class ModelFileError(ValueError):
    """A model file that cannot be read or written safely (the message names the file)."""


class TerminatedBySignal(BaseException):
    """Raised in the main thread when SIGTERM or SIGHUP arrives during :func:`atomic_write`
    (or during the command line), so that temporary files are removed on the way out.

    Like ``KeyboardInterrupt``, it derives from ``BaseException``: ordinary ``except
    Exception`` clauses do not swallow it.
    """

    def __init__(self, signum: int):
        self.signum = int(signum)
        super().__init__(f"terminated by {signal.Signals(self.signum).name}")


@dataclass
class ModelFile:
    """The content of a model file: the fitted estimator and its metadata.

    Attributes
    ----------
    model : estimator
    metadata : dict
        Plain values (strings, numbers, lists) stored beside the model, e.g. the column
        names the command line needs.
    format : {"skops", "pickle"}
        How the file was stored.
    """

    model: Any
    metadata: dict = field(default_factory=dict)
    format: str = "skops"


# --------------------------------------------------------------------------- trusted types
def _type_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def trusted_types() -> list[str]:
    """Names of the types a model file may hold beyond skops' defaults.

    The library's own classes: the public estimators (``multitask.__all__``, ``MultiTaskCV``
    included) and the classes exported by :mod:`multitask.solvers` (the solver objects a
    fitted model keeps, the result record) or registered there (every solver),
    :mod:`multitask.penalties` and :mod:`multitask.losses`. skops rebuilds each of them
    from its stored attributes (``__new__``, then the attributes are set), which runs no code
    of the file; functions and the classes of other packages are never trusted.

    Returns
    -------
    list of str
        Fully qualified names, as :func:`skops.io.get_untrusted_types` reports them.
    """
    import inspect

    from sklearn.base import BaseEstimator

    import multitask
    import multitask.losses
    import multitask.penalties
    import multitask.solvers

    names = set()
    for module in (multitask, multitask.solvers, multitask.penalties, multitask.losses):
        for n in getattr(module, "__all__", ()):
            obj = getattr(module, n, None)
            if not (inspect.isclass(obj) and obj.__module__.startswith("multitask.")):
                continue
            if module is multitask and not issubclass(obj, BaseEstimator):
                continue  # the data container and other helpers are not parts of a model
            names.add(_type_name(obj))
    # every registered solver (a solver is one file: it registers itself by being defined)
    names.update(_type_name(cls) for cls, _ in multitask.solvers.REGISTRY.values())
    return sorted(names)


def _skops():
    try:
        import skops.io as sio
    except ImportError:  # pragma: no cover - skops is a dependency
        raise ModelFileError("model files need skops: pip install skops.") from None
    return sio


# --------------------------------------------------------------------------- writing
def save_model(model, path: str | os.PathLike, *, metadata: dict | None = None) -> Path:
    """Save a fitted (or unfitted) estimator in a file that is safe to load.

    The file is a skops archive of ``{"format": MODEL_FORMAT, "version":
    MODEL_FORMAT_VERSION, "multitask_version": ..., "model_class": ..., "model": model,
    "metadata": metadata}`` (``model_class``: the fully qualified name of the model's class,
    compared with the class rebuilt when the file is read),
    written atomically (:func:`atomic_write`). Loading it with :func:`load_model` rebuilds
    only trusted types, so it runs no code from the file.

    Parameters
    ----------
    model : estimator
        A scikit-learn estimator made of trusted types (:func:`trusted_types`, skops'
        defaults). Callables such as ``MultiTaskCV(callback=...)`` or a Dask ``client``
        cannot be stored safely: set them to ``None`` first.
    path : str or path-like
        Destination (a symbolic link is followed; an existing non-regular file is refused).
    metadata : dict, optional
        Plain JSON values (str keys; strings, numbers, booleans, None, lists, dicts).

    Returns
    -------
    Path
        The file :func:`atomic_write` wrote.

    Raises
    ------
    ModelFileError
        When the model holds an object that is not of a trusted type, when ``metadata`` is not
        plain JSON, or when the file cannot be written.
    """
    from sklearn.base import BaseEstimator

    from multitask import __version__

    if not isinstance(model, BaseEstimator):
        raise ModelFileError(f"{path}: only scikit-learn estimators can be saved, got a "
                             f"{type(model).__name__}.")
    metadata = dict(metadata or {})
    try:
        if json.loads(json.dumps(metadata, allow_nan=False)) != metadata:
            raise TypeError("not plain JSON (tuples, or keys that are not strings)")
    except (TypeError, ValueError) as exc:
        raise ModelFileError(f"{path}: metadata must be plain JSON values: {exc}.") from None
    bundle = {"format": MODEL_FORMAT, "version": MODEL_FORMAT_VERSION,
              "multitask_version": __version__, "model_class": _type_name(type(model)),
              "model": model, "metadata": metadata}
    sio = _skops()
    try:
        payload = sio.dumps(bundle)
    except Exception as exc:  # noqa: BLE001 - skops raises many types for unsupported objects
        raise ModelFileError(f"{path}: the model cannot be saved safely: "
                             f"{type(exc).__name__}: {exc}") from None
    unknown = sorted(set(sio.get_untrusted_types(data=payload)) - set(trusted_types()))
    if unknown:
        raise ModelFileError(
            f"{path}: the model holds objects of types that a safe model file cannot "
            f"rebuild: {', '.join(unknown)} (a callback function, a Dask client...: set them "
            "to None before saving)."
        )

    def write(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            fh.write(payload)

    try:
        return atomic_write(path, write)
    except OSError as exc:
        raise ModelFileError(f"{path}: cannot write: {exc}") from None


# --------------------------------------------------------------------------- reading
def describe_file_type(mode: int) -> str:
    """``"a folder"``, ``"a FIFO"``, ``"a device"``... : what a non-regular file is."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_regular(path: str | os.PathLike, name=None):
    """Open a regular file for reading in binary mode, never blocking on a FIFO or device.

    The file is opened with ``O_NONBLOCK`` (opening a FIFO does not wait for a writer), then
    its type is read from the open descriptor (no race between a check and the opening): a
    folder, FIFO, device or socket is refused.

    Raises
    ------
    ModelFileError
        Naming the file (``name``, default ``path``): missing, or not a regular file.
    OSError
        When the file cannot be opened (the message of the system).
    """
    name = path if name is None else name
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise ModelFileError(f"{name}: file not found.") from None
    except IsADirectoryError:
        raise ModelFileError(f"{name}: is a folder, not a regular file.") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ModelFileError(f"{name}: is {describe_file_type(mode)}, not a regular file: "
                                 "refusing to read it.")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _file_kind(head: bytes) -> str:
    if head.startswith(_ZIP_MAGIC):
        return "zip"
    if any(head.startswith(m) for m in _PICKLE_MAGIC):
        return "pickle"
    return "unknown"


def read_model_file(path: str | os.PathLike, *, allow_pickle: bool = False,
                    trusted: Iterable[str] = ()) -> ModelFile:
    """Read a model file: the estimator and its metadata, creating no untrusted object.

    Parameters
    ----------
    path : str or path-like
        A file written by :func:`save_model` (or by ``multitask fit``), or a skops file of a
        bare estimator.
    allow_pickle : bool, default=False
        Also read pickle / joblib files (older versions of ``multitask fit`` wrote those).
        Unpickling runs whatever code the file holds: only for files you trust.
    trusted : iterable of str, optional
        Further fully qualified type names to accept in a skops file (your own estimator
        classes, for instance). Never list functions or classes you do not control.

    Returns
    -------
    ModelFile

    Raises
    ------
    ModelFileError
        Naming the file: missing, not a regular file, a pickle without ``allow_pickle``, a
        type that is not trusted (named), a damaged archive, a newer layout, a class other
        than the one recorded, or a fitted attribute (named) that does not match what its
        class declares (:func:`~multitask.estimators.fitted_state.check_fitted_state`).
    """
    p = Path(path)
    try:
        with open_regular(p, path) as fh:
            head = fh.read(8)
    except OSError as exc:
        raise ModelFileError(f"{path}: cannot be read: {exc}") from None
    kind = _file_kind(head)
    if kind == "pickle":
        if not allow_pickle:
            raise ModelFileError(
                f"{path}: a pickle/joblib file, refused: loading a pickle runs any code it "
                "holds. If you made this file yourself or trust its origin, load it with "
                "--allow-pickle (load_model(..., allow_pickle=True)) and save it again to get "
                "a safe model file."
            )
        return _read_pickle(p, path)
    if kind != "zip":
        raise ModelFileError(f"{path}: not a model file written by 'multitask fit' "
                             "(neither a skops archive nor a pickle).")
    sio = _skops()
    allowed = set(trusted_types()) | set(trusted)
    try:
        with open_regular(p, path) as fh:
            payload = fh.read()
    except OSError as exc:
        raise ModelFileError(f"{path}: cannot be read: {exc}") from None
    # sizes, members and array headers against what the model declares, before any array
    # is unpacked (skops reads every member even to list the types)
    check_archive(payload, path, ModelFileError, trusted_types())
    try:
        found = sio.get_untrusted_types(data=payload)
    except ModelFileError:
        raise
    except Exception as exc:  # noqa: BLE001 - a damaged archive raises many types
        raise ModelFileError(f"{path}: not a valid model file ({type(exc).__name__}: "
                             f"{exc}).") from None
    refused = sorted(set(found) - allowed)
    if refused:
        raise ModelFileError(
            f"{path}: refused: the file holds objects of untrusted types "
            f"({', '.join(refused[:5])}{', ...' if len(refused) > 5 else ''}); a model file "
            "written by multitask holds only its estimators. Nothing was loaded."
        )
    try:
        obj = sio.loads(payload, trusted=sorted(set(found)))
    except Exception as exc:  # noqa: BLE001 - a damaged archive raises many types
        raise ModelFileError(f"{path}: not a valid model file ({type(exc).__name__}: "
                             f"{exc}).") from None
    content = _unpack(obj, path, "skops")
    check_model(content.model, path)
    return content


def _read_pickle(p: Path, path) -> ModelFile:
    import joblib

    try:
        obj = joblib.load(p)
    except Exception as exc:  # noqa: BLE001 - any unpickling failure is a bad file
        raise ModelFileError(f"{path}: not a model file ({type(exc).__name__}: "
                             f"{exc}).") from None
    content = _unpack(obj, path, "pickle")
    check_model(content.model, path)
    return content


def _unpack(obj, path, fmt: str) -> ModelFile:
    """A :class:`ModelFile` from the saved object: the current dictionary, the first command
    line's pickled dictionary (``"kind"`` and the metadata beside ``"model"``), or a bare
    estimator."""
    from sklearn.base import BaseEstimator

    if isinstance(obj, BaseEstimator):
        return ModelFile(obj, {}, fmt)
    if isinstance(obj, dict) and obj.get("format") == MODEL_FORMAT:
        version = obj.get("version", 0)
        if not isinstance(version, int) or version > MODEL_FORMAT_VERSION:
            raise ModelFileError(f"{path}: written by a newer multitask (file version "
                                 f"{version!r}); upgrade multitask to read it.")
        model, meta = obj.get("model"), obj.get("metadata", {})
    elif isinstance(obj, dict) and obj.get("kind") == MODEL_FORMAT:  # version 1 (pickle)
        model = obj.get("model")
        meta = {k: v for k, v in obj.items() if k not in ("model", "kind", "version")}
    else:
        raise ModelFileError(f"{path}: not a model file written by 'multitask fit'.")
    if not isinstance(model, BaseEstimator) or not isinstance(meta, dict):
        raise ModelFileError(f"{path}: not a model file written by 'multitask fit' (no "
                             "estimator inside).")
    recorded = obj.get("model_class")
    if recorded is not None and recorded != _type_name(type(model)):
        raise ModelFileError(f"{path}: refused: the file records a {recorded!s:.200} but holds a "
                             f"{_type_name(type(model))} (the file was edited).")
    return ModelFile(model, meta, fmt)


def check_model(model, path="") -> None:
    """Check a rebuilt model against what its class declares; raise :class:`ModelFileError`.

    Library estimators and :class:`multitask.MultiTaskCV` are checked by
    :func:`multitask.estimators.fitted_state.check_fitted_state`; any other estimator (a
    class the caller listed in ``trusted``) is the caller's responsibility.
    """
    from multitask.estimators.fitted_state import FittedStateError, check_fitted_state

    if not (hasattr(type(model), "_fitted_declaration") or _is_search(model)):
        return
    try:
        check_fitted_state(model, where=f"{path}: refused: " if path else "refused: ")
    except FittedStateError as exc:
        raise ModelFileError(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - a check that cannot run is a bad file
        raise ModelFileError(f"{path}: refused: the fitted state cannot be checked "
                             f"({type(exc).__name__}: {exc}).") from None


def _is_search(model) -> bool:
    from multitask.model_selection import MultiTaskCV

    return isinstance(model, MultiTaskCV)


def load_model(path: str | os.PathLike, *, allow_pickle: bool = False,
               trusted: Iterable[str] = ()):
    """Load the estimator saved in a model file, running no code from the file.

    Shorthand for ``read_model_file(path, ...).model``; see :func:`read_model_file`.

    Parameters
    ----------
    path : str or path-like
    allow_pickle : bool, default=False
        Also read pickle / joblib files. Unpickling runs whatever code the file holds: pass
        ``True`` only for files you made yourself or trust.
    trusted : iterable of str, optional
        Further type names to accept (see :func:`read_model_file`).

    Returns
    -------
    estimator
    """
    return read_model_file(path, allow_pickle=allow_pickle, trusted=trusted).model


# --------------------------------------------------------------------------- atomic writes
def _raise_signal(signum, frame):  # noqa: ARG001 - signal handler signature
    raise TerminatedBySignal(signum)


_CAUGHT_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n))


@contextlib.contextmanager
def signals_raise(signums: Iterable[int] = _CAUGHT_SIGNALS) -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into :class:`TerminatedBySignal` in the main thread.

    Only signals whose handler is the default one are changed (a program that handles them
    keeps its handler); the previous handlers are restored on exit. Outside the main thread
    nothing changes (Python runs handlers in the main thread only).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    try:
        for s in signums:
            if signal.getsignal(s) is signal.SIG_DFL:
                previous[s] = signal.signal(s, _raise_signal)
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def check_destination(path: str | os.PathLike) -> tuple[Path, os.stat_result | None]:
    """The checks :func:`atomic_write` makes before writing, for callers that want them early.

    Returns ``(target, stat)``: the file to replace (a symbolic link resolved) and its
    ``os.stat`` (``None`` when it does not exist yet).

    Raises
    ------
    ModelFileError
        When ``path`` ends with a path separator (it names a folder, not a file), when the
        destination exists and is not a regular file (a folder, a FIFO, a device, a socket),
        or when its folder does not exist.
    """
    text = os.fspath(path)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if text.endswith(tuple(s for s in (os.sep, os.altsep) if s)):
        raise ModelFileError(f"{text}: ends with {text[-1]!r}, which names a folder: give the "
                             "name of a file (without the trailing separator).")
    target = Path(os.path.realpath(path))
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:  # a loop of links, a permission problem
        raise ModelFileError(f"{path}: cannot write: {exc}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise ModelFileError(f"{path}: is {describe_file_type(st.st_mode)}, not a regular "
                             "file: refusing to replace it.")
    folder = target.parent
    if not folder.is_dir():
        raise ModelFileError(f"{path}: folder {str(folder)!r} does not exist.")
    return target, st


#: Characters ``tempfile.mkstemp`` adds between the prefix and the suffix.
_RANDOM_CHARS = 8


def _temporary_prefix(folder: Path, name: str, suffix: str = ".tmp") -> str:
    """``.NAME.``, with ``NAME`` cut (at a character boundary) so that the temporary file's
    name ``.NAME.<8 random characters>.tmp`` fits the file system's limit on names
    (``NAME_MAX``, 255 bytes on most): a valid destination name of up to that limit is
    written through a shorter temporary name."""
    try:
        limit = int(os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):
        limit = 255
    room = limit - len(os.fsencode(f"..{suffix}")) - _RANDOM_CHARS
    encoded = os.fsencode(name)
    if len(encoded) > room:
        name = os.fsdecode(encoded[:max(room, 1)])
        while len(os.fsencode(name)) > max(room, 1):  # a multi-byte character was cut
            name = name[:-1]
    return f".{name}."


def atomic_write(path: str | os.PathLike, write: Callable[[str], None]) -> Path:
    """Write a file whole or not at all: ``write(tmp)`` fills a temporary file, then a rename.

    * The temporary file is created in the destination's folder (so the rename is atomic),
      flushed to disk, given the permissions of the file it replaces (a new file gets the
      usual ``0o666 & ~umask``), then renamed over the destination.
    * A symbolic link is followed: the file it points to is replaced and the link is kept.
    * A destination that exists and is not a regular file (a character or block device, a
      FIFO, a socket, a folder), or a path ending with a separator (``out.csv/``), is
      refused: nothing is written (:func:`check_destination`).
    * Names up to the file system's limit (255 bytes) are written: the temporary file's name
      is cut to fit.
    * On any error, Ctrl-C (``KeyboardInterrupt``), SIGTERM or SIGHUP (see
      :func:`signals_raise`), the temporary file is removed and the destination is left as
      it was; the exception propagates.

    Parameters
    ----------
    path : str or path-like
        Destination.
    write : callable
        ``write(tmp_path)`` writes the whole content to ``tmp_path``.

    Returns
    -------
    Path
        The file written (the target of ``path`` when it is a link).

    Raises
    ------
    ModelFileError
        When the destination is not a regular file, names a folder (a trailing separator), or
        its folder does not exist.
    OSError
        When the file cannot be written (the message of the system).
    """
    target, st = check_destination(path)
    folder = target.parent
    mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask()
    tmp = None
    with signals_raise():
        try:
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=_temporary_prefix(folder, target.name),
                                       suffix=".tmp")
            os.close(fd)
            write(tmp)
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
            os.chmod(tmp, mode)
            os.replace(tmp, target)
        except BaseException:
            if tmp is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
            raise
    return target

