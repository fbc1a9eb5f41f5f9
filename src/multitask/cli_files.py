"""The user's files on the command line: a CSV or Parquet table read, its columns turned
into arrays, and outputs written atomically.

Shared by ``multitask fit`` / ``predict`` (:mod:`multitask.cli_fit`) and ``multitask
benchmark`` (:mod:`multitask.cli_benchmark`); every error is a :class:`CLIError`, one line
naming the file, the row or column and the problem. The names used elsewhere are importable
from :mod:`multitask.cli_fit` as well.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from multitask.persistence import ModelFileError, atomic_write, check_destination, open_regular

__all__ = ["CLIError", "read_table"]


class CLIError(ValueError):
    """An error in the user's files or arguments, reported on one line (exit status 2)."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))


# --------------------------------------------------------------------------- reading
def _pandas():
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is a dependency of the base install
        raise CLIError("reading data files needs pandas, a dependency of multitask that this "
                       "environment lacks: pip install pandas (or reinstall multitask).") from None
    return pd


def read_table(path: str | os.PathLike, text_columns=()):
    """Read a CSV (``.csv``, ``.txt``, ``.tsv``, optionally gzipped) or Parquet file.

    Floats are parsed exactly (round trip). The columns ``text_columns`` (task ids) are read
    as text, as written in the file (``01`` stays ``01``, ``a `` keeps its trailing space;
    white space after a delimiter is CSV formatting, not part of a value; Parquet values are
    turned into their text). Only regular files are read: a FIFO, device or socket is refused
    without waiting on it. Raises :class:`CLIError` naming the file when it is missing,
    unreadable, not a regular file, or has no data rows.
    """
    pd = _pandas()
    p = Path(path)
    name = str(path)
    suffixes = [s.lower() for s in p.suffixes]
    compressed = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zip": "zip"}
    kind = suffixes[-2] if suffixes and suffixes[-1] in compressed and len(
        suffixes) > 1 else (suffixes[-1] if suffixes else "")
    try:
        fh = open_regular(p, name)  # never blocks on a FIFO; the type is read once opened
    except ModelFileError as exc:
        raise CLIError(str(exc)) from None
    except OSError as exc:
        raise CLIError(f"{name}: cannot be read: {exc}") from None
    if kind not in (".parquet", ".pq", ".csv", ".txt", ".tsv", ""):
        fh.close()
        raise CLIError(f"{name}: unknown file type {kind!r}: use .csv, .tsv or .parquet.")
    compression = compressed.get(suffixes[-1]) if suffixes else None
    try:
        with fh:
            if kind in (".parquet", ".pq"):
                try:
                    df = pd.read_parquet(fh)
                except ImportError:
                    raise CLIError(f"{name}: reading Parquet needs pyarrow, a dependency of "
                                   "multitask that this environment lacks: pip install "
                                   "pyarrow (or reinstall multitask).") from None
            else:
                sep = "\t" if kind == ".tsv" else ","
                df = pd.read_csv(fh, sep=sep, skipinitialspace=True, compression=compression,
                                 dtype=dict.fromkeys(text_columns, str), **_exact_floats(pd))
    except CLIError:
        raise
    except pd.errors.EmptyDataError:
        raise CLIError(f"{name}: the file is empty.") from None
    except (pd.errors.ParserError, UnicodeDecodeError, OSError, ValueError) as exc:
        raise CLIError(f"{name}: cannot be read: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - pyarrow raises its own types
        raise CLIError(f"{name}: cannot be read: {type(exc).__name__}: {exc}") from None
    df.columns = [str(c) for c in df.columns]
    for c in text_columns:
        if c in df.columns and not pd.api.types.is_string_dtype(df[c].dtype):
            df[c] = df[c].map(lambda v: v if pd.isna(v) else str(v)).astype(object)
    if len(df) == 0:
        raise CLIError(f"{name}: no data rows (only a header).")
    df.attrs["multitask_path"] = name
    df.attrs["multitask_csv"] = kind not in (".parquet", ".pq")
    return df


def _exact_floats(pd) -> dict:
    """``read_csv`` options that parse floats exactly (pandas 3 does so by default)."""
    return {"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}


def _where(df, i: int) -> str:
    """``row N`` (1-based data row) and, for CSV, its line in the file (the header is line 1)."""
    return f"row {i + 1} (line {i + 2})" if df.attrs.get("multitask_csv") else f"row {i + 1}"


def _require_columns(df, cols, what: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        shown = ", ".join(map(repr, list(df.columns)[:12]))
        more = ", ..." if df.shape[1] > 12 else ""
        raise CLIError(f"{df.attrs['multitask_path']}: {what} column {missing[0]!r} not found "
                       f"(columns: {shown}{more}).")


_MISSING_HINT = (" (if that target was not observed, pass --missing-targets ignore: the row "
                 "then counts only for the tasks whose target is given)")


def _numeric(df, cols, missing: str | None = None) -> np.ndarray:
    """The columns ``cols`` as a float64 matrix, naming the first bad cell if any.

    ``missing``: for target columns, ``"ignore"`` keeps an empty cell as NaN (a target not
    observed) and ``"error"`` refuses it saying how to keep it; None (features) refuses it."""
    pd = _pandas()
    path = df.attrs["multitask_path"]
    out = np.empty((len(df), len(cols)), dtype=np.float64)
    for j, c in enumerate(cols):
        s = df[c]
        if s.dtype == bool:
            s = s.astype(np.float64)
        if pd.api.types.is_numeric_dtype(s.dtype):
            v = s.to_numpy(dtype=np.float64, na_value=np.nan)
        else:
            v = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
            bad = np.flatnonzero(np.isnan(v) & s.notna().to_numpy())
            if bad.size:
                i = int(bad[0])
                raise CLIError(f"{path}: {_where(df, i)}, column {c!r}: {s.iloc[i]!r} is not a "
                               "number.")
        miss = np.flatnonzero(np.isnan(v))
        if miss.size and missing != "ignore":
            raise CLIError(f"{path}: {_where(df, int(miss[0]))}, column {c!r}: missing value"
                           f"{_MISSING_HINT if missing == 'error' else ''}.")
        inf = np.flatnonzero(np.isinf(v))
        if inf.size:
            raise CLIError(f"{path}: {_where(df, int(inf[0]))}, column {c!r}: infinite value.")
        out[:, j] = v
    return out


def _exposure(df, col: str) -> np.ndarray:
    """The exposure column: numbers, each finite and > 0, naming the first bad cell."""
    path = df.attrs["multitask_path"]
    e = _numeric(df, [col])[:, 0]
    bad = np.flatnonzero(~(e > 0))
    if bad.size:
        i = int(bad[0])
        raise CLIError(f"{path}: {_where(df, i)}, column {col!r}: the exposure {e[i]:g} is not "
                       "positive (an exposure is the time or size over which the count was "
                       "observed, > 0).")
    return e


def _labels(df, col: str, what: str, strip: bool = True,
            missing: str | None = None) -> np.ndarray:
    """A column of labels (task ids or class labels): no missing or empty cells.

    Class labels are stripped of surrounding white space (``strip``); task ids are kept as
    written (``strip=False``; see :func:`_distinct_ids`). ``missing`` as in :func:`_numeric`:
    with ``"ignore"`` an empty cell is ``None`` (a target not observed)."""
    path = df.attrs["multitask_path"]
    s = df[col]
    empty = s.isna().to_numpy()
    if s.dtype == object or _pandas().api.types.is_string_dtype(s.dtype):
        empty = empty | s.astype(str).str.strip().eq("").to_numpy()
    bad = np.flatnonzero(empty)
    if bad.size and missing == "ignore":
        rest = _labels(df.loc[~empty], col, what, strip)
        v = np.empty(len(df), dtype=object)
        v[~empty] = rest.tolist()
        return v
    if bad.size:
        raise CLIError(f"{path}: {_where(df, int(bad[0]))}, column {col!r}: empty {what}"
                       f"{_MISSING_HINT if missing == 'error' else ''}.")
    v = s.to_numpy()
    if v.dtype == object or _pandas().api.types.is_string_dtype(s.dtype):
        v = np.asarray([x.strip() if strip and isinstance(x, str) else x for x in v],
                       dtype=object)
        if all(isinstance(x, str) for x in v):
            v = v.astype(str)
    return v


def _distinct_ids(df, col: str, ids: np.ndarray) -> None:
    """Refuse task ids that differ only by white space around them (``'a'`` and ``'a '``).

    Task ids are kept as written (as in the API, where ``'a'`` and ``'a '`` are two tasks);
    two such ids in one file are almost always a typing accident, which merging would hide
    and keeping apart would make two tasks of one: the file is refused, naming both.
    """
    if ids.dtype.kind not in "UO":
        return
    seen: dict[str, str] = {}
    for i, v in enumerate(ids.tolist()):
        if not isinstance(v, str):
            continue
        key = v.strip()
        first = seen.setdefault(key, v)
        if first != v:
            raise CLIError(f"{df.attrs['multitask_path']}: {_where(df, i)}, column {col!r}: "
                           f"task ids {first!r} and {v!r} differ only by white space around "
                           "them; ids are kept as written, so they would be two tasks: make "
                           "them identical (or clearly different).")


def _layout(args, df):
    """Resolve the columns: ``(layout, features, target, task, targets)``."""
    path = df.attrs["multitask_path"]
    if args.targets and (args.target or args.task):
        raise CLIError("give either --targets (one column per task, shared design) or --target "
                       "with --task (long format), not both.")
    if not args.targets and not args.target:
        raise CLIError("give the target column: --target COL (long format, with --task COL) or "
                       "--targets COL1 COL2 ... (shared design).")
    exposure = getattr(args, "exposure", None)
    used = list(args.targets) if args.targets else [args.target] + ([args.task] if args.task
                                                                    else [])
    _require_columns(df, list(args.targets) if args.targets else [args.target], "target")
    if args.task:
        _require_columns(df, [args.task], "task")
    if exposure:
        _require_columns(df, [exposure], "exposure")
        if exposure in used:
            raise CLIError(f"{path}: column {exposure!r} is both the exposure and a "
                           "target/task.")
        used.append(exposure)
    if len(set(used)) != len(used):
        raise CLIError(f"{path}: a column is given twice among the target and task columns.")
    if args.features:
        _require_columns(df, args.features, "feature")
        features = list(args.features)
        clash = [c for c in features if c in used]
        if clash:
            what = "the exposure" if clash[0] == exposure else "a target/task"
            raise CLIError(f"{path}: column {clash[0]!r} is both a feature and {what}.")
    else:
        features = [c for c in df.columns if c not in used]
    if not features:
        raise CLIError(f"{path}: no feature columns left (columns: "
                       f"{', '.join(map(repr, df.columns))}).")
    if args.targets:
        return "wide", features, None, None, list(args.targets)
    return "long", features, args.target, args.task, None


# --------------------------------------------------------------------------- writing
def _atomic_write(path, write) -> None:
    """:func:`multitask.persistence.atomic_write` with its errors as one-line CLI errors."""
    try:
        atomic_write(path, write)
    except ModelFileError as exc:
        raise CLIError(str(exc)) from None
    except OSError as exc:
        raise CLIError(f"{path}: cannot write: {exc}") from None


def _check_output(path) -> None:
    """Refuse an output before any work: a name ending with ``/`` (a folder), an existing
    non-regular file, a missing folder (:func:`multitask.persistence.check_destination`)."""
    try:
        check_destination(path)
    except ModelFileError as exc:
        raise CLIError(str(exc)) from None


def _refuse_overwriting(output, inputs, option: str) -> None:
    """Refuse an output path that is one of the input files (it would be replaced)."""
    for src in inputs:
        try:
            same = os.path.samefile(output, src)
        except OSError:  # the output does not exist yet
            same = False
        if same:
            raise CLIError(f"{option} {output}: this is the input file {src}; write to "
                           "another file.")

