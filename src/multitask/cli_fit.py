"""``multitask fit`` and ``multitask predict``: the models on the user's own CSV or Parquet files.

Two table layouts are read (with pandas, and pyarrow for Parquet: both in the base install):

* **long format**: one row per (task, example): feature columns, a target column and a task
  column (``--target y --task school``; features are ``--features ...`` or all other columns);
* **shared design** (wide): one row per example, feature columns and one target column per task
  (``--targets y1 y2 y3``).

``fit`` saves the fitted model, with the column names it needs, to a model file in skops'
format (:mod:`multitask.persistence`: loading it creates only the library's estimators and
plain values, so a model file received from someone else cannot run code); ``predict`` reads
such a file and new rows and writes the input columns plus the predictions (``prediction``, or
``prediction_<target>`` per task for a shared design; a name the input already uses gets a
suffix, and a note says so) to a CSV file. Pickle / joblib model files (written by the first
versions) are refused unless ``--allow-pickle`` is given, for files one trusts.

Files are written atomically (a temporary file in the same folder, renamed when complete): a
failure, Ctrl-C, SIGTERM or SIGHUP leaves nothing behind and the previous file untouched; a
symbolic link is followed (its target is updated); a device or other non-regular file is never
replaced. Errors in the files are reported on one line naming the file, the row or column and
the problem, with exit status 2.

An empty target cell is an error unless ``fit --missing-targets ignore`` says it is a target
that was not observed (the model's ``missing_targets="ignore"``): in a shared design the row then
counts only for the tasks whose target is given, in long format it is left out.

Task ids are read as text, kept as written (``01`` and ``1`` are two tasks, as in the API);
white space after a delimiter is CSV formatting, not part of a value, and a file whose ids
differ only by white space around them (``a`` and ``a ``) is refused, naming both. ``fit
--numeric-task-ids`` reads them as numbers instead (``01`` is then ``1``).

Only regular files are read: a FIFO, device or socket given as ``--input`` (or as the model
file) is refused at once, without waiting on it; an output name ending with ``/`` is
refused before any work.

Examples
--------
::

    multitask fit --input train.csv --target score --task school \\
        --model TraceNormRegressor --cv --model-file model.skops
    multitask fit --input train.parquet --targets y1 y2 y3 --model L21Regressor \\
        --param alpha=0.05 --model-file model.skops
    multitask predict --model-file model.skops --input test.csv --output predictions.csv
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import time
from pathlib import Path

import numpy as np

from multitask.persistence import (
    ModelFileError,
    atomic_write,
    check_destination,
    open_regular,
    read_model_file,
    save_model,
)

__all__ = ["add_commands", "cmd_fit", "cmd_predict", "load_model", "read_table"]


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


# --------------------------------------------------------------------------- models
def _model_classes(aliases: bool = True) -> dict[str, type]:
    """The model classes by name; without ``aliases``, not the deprecated spellings (a class
    that subclasses the class it renames, under a name that differs from it by case only)."""
    import multitask.estimators as E

    classes = {n: getattr(E, n) for n in E.__all__ if n != "MultiTaskCV"}
    if aliases:
        return classes
    return {n: c for n, c in classes.items() if n not in _deprecated_aliases(classes)}


def _deprecated_aliases(classes: dict[str, type]) -> set[str]:
    """The names of ``classes`` that are a deprecated spelling of another: same name up to
    case, and a subclass of it (``MultitaskKernelClassifier`` of
    ``MultiTaskKernelClassifier``)."""
    return {n for n, c in classes.items()
            if any(o != n and o.lower() == n.lower() and issubclass(c, classes[o])
                   and c is not classes[o] for o in classes)}


def _model_name(typed: str, classes: dict[str, type]) -> str | None:
    """The class a ``--model`` name means: the name as typed; else the one name equal to it up
    to case, a class rather than its deprecated spelling (``multitaskkernelclassifier`` is
    ``MultiTaskKernelClassifier``)."""
    if typed in classes:
        return typed
    aliases = _deprecated_aliases(classes)
    matches = [n for n in classes if n.lower() == typed.lower()]
    preferred = [n for n in matches if n not in aliases] or matches
    return preferred[0] if preferred else None


def _parse_value(text: str):
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "none":
        return None
    if low in ("inf", "+inf", "infinity"):
        return float("inf")
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _parse_params(items, valid: set[str], model: str, multi: bool = False) -> dict:
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise CLIError(f"parameter {item!r} must be written key=value.")
        if key not in valid:
            raise CLIError(f"{model} has no parameter {key!r} (parameters: "
                           f"{', '.join(sorted(valid))}).")
        if multi:
            out[key] = [_parse_value(v) for v in value.split(",") if v.strip()]
            if not out[key]:
                raise CLIError(f"--grid {key}= has no values.")
        else:
            out[key] = _parse_value(value)
    return out


def _check_param_types(params: dict, defaults: dict, model: str) -> dict:
    """Check ``--param`` values against the kind of the defaults (booleans, integers, numbers).

    ``max_iter=1.5`` or ``max_iter=none`` is a one-line error here rather than a ``TypeError``
    deep in a solver; a whole float such as ``max_iter=1e4`` becomes the integer 10000.
    Parameters whose default is a string or None take any value (the model checks them).
    """
    out = {}
    for key, value in params.items():
        default = defaults.get(key)
        kind = None
        if isinstance(default, bool):
            kind = "true or false" if not isinstance(value, bool) else None
        elif isinstance(default, int):
            if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
                value = int(value)
            if isinstance(value, bool) or not isinstance(value, int):
                kind = "an integer"
        elif isinstance(default, float):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                kind = "a number"
        if kind is not None:
            raise CLIError(f"--param {key}={value!r}: {model}'s {key} must be {kind} (default "
                           f"{default!r}).")
        out[key] = value
    return out


def _make_model(args):
    classes = _model_classes()
    name = _model_name(args.model, classes)
    if name is None:
        raise CLIError(f"unknown model {args.model!r}; choose from "
                       f"{', '.join(_model_classes(aliases=False))} (multitask fit "
                       "--list-models).")
    cls = classes[name]
    est = cls()
    defaults = est.get_params(deep=False)
    valid = set(defaults)
    params = _parse_params(args.param, valid, name)
    for fixed in ("task_column", "warm_start"):
        if fixed in params:
            raise CLIError(f"--param {fixed} is set by the command line, not by hand.")
    est.set_params(**_check_param_types(params, defaults, name))
    est.set_params(**_loss_options(args, defaults, params, name))
    if not args.cv:
        if args.grid:
            raise CLIError("--grid needs --cv.")
        return name, est
    from multitask.model_selection import MultiTaskCV

    grid = _parse_params(args.grid, valid, name, multi=True) or None
    if grid:
        grid = {k: [_check_param_types({k: v}, defaults, name)[k] for v in values]
                for k, values in grid.items()}
    progress = None if args.quiet else _progress(name)
    n_jobs = args.n_jobs
    if n_jobs is not None and n_jobs > (os.cpu_count() or 1):
        n_jobs = os.cpu_count() or 1  # more workers than CPUs only add start-up time
    return name, MultiTaskCV(est, param_grid=grid, cv=args.cv_folds, scoring=args.scoring,
                             n_alphas=args.n_alphas, alpha_ratio=args.alpha_ratio,
                             n_jobs=n_jobs, callback=progress,
                             random_state=args.random_state)


#: The parameter each loss takes, as given on the command line.
_LOSS_OPTION = {"power": "tweedie", "epsilon": "huber", "quantile": "quantile"}

#: The losses with a log link, the only ones an exposure goes with (counts, sizes).
_EXPOSURE_LOSSES = ("poisson", "gamma", "tweedie")


def _loss_options(args, defaults: dict, params: dict, name: str) -> dict:
    """The model's ``loss`` and its own parameter from ``--loss``, ``--power``, ``--epsilon``
    and ``--quantile``, checked against the model's parameters: a model without a ``loss``,
    a loss given twice (``--loss`` and ``--param loss=``), or an option of another loss (e.g.
    ``--power`` without ``--loss tweedie``) is refused, naming it. The values themselves are
    checked by the model at fit."""
    loss = getattr(args, "loss", None)
    out = {}
    if loss is not None:
        if "loss" not in defaults:
            raise CLIError(f"--loss {loss}: {name} has no loss parameter.")
        if "loss" in params:
            raise CLIError("give the loss once: --loss or --param loss=, not both.")
        out["loss"] = loss
    chosen = out.get("loss", params.get("loss", defaults.get("loss")))
    for option, own in _LOSS_OPTION.items():
        value = getattr(args, option, None)
        if value is None:
            continue
        if option not in defaults:
            raise CLIError(f"--{option}: {name} has no {option} parameter (a regressor's "
                           f"--loss {own} takes it).")
        if chosen != own:
            raise CLIError(f"--{option} goes with --loss {own}, not with the loss "
                           f"{chosen!r}.")
        if option in params:
            raise CLIError(f"give {option} once: --{option} or --param {option}=, not both.")
        out[option] = value
    return out


def _model_loss(est) -> str | None:
    """The loss of a model (the model inside a search), None for a model without one."""
    inner = getattr(est, "estimator", est)
    return inner.get_params(deep=False).get("loss")


def _scoring_words(est, scoring) -> str:
    """The score the cross-validation chose by, in words (the fit's output and the model
    file's metadata): the library's default follows the loss
    (:func:`multitask.model_selection.loss_scorer`)."""
    from multitask.model_selection import LossScorer, get_scorer

    if scoring is not None:
        return str(scoring)
    inner = getattr(est, "estimator", est)
    scorer = get_scorer(None, inner)
    if isinstance(scorer, LossScorer):
        return f"minus the {scorer.name}"
    name = getattr(scorer, "__name__", "")
    if name == "classifier_scorer":
        return ("minus the log-loss" if len(getattr(est, "classes_", ())) > 2
                else "the mean task ROC AUC")
    return {"nmse_scorer": "-nMSE"}.get(name, name or repr(scorer))


def _missing_targets(args, est, name: str) -> str:
    """``"ignore"`` when missing targets are targets not observed (``--missing-targets
    ignore``, or ``--param missing_targets=ignore``), set on the model; else ``"error"``."""
    inner = getattr(est, "estimator", est)  # the model inside MultiTaskCV
    params = inner.get_params(deep=False)
    if getattr(args, "missing_targets", "error") == "ignore":
        if "missing_targets" not in params:
            raise CLIError(f"--missing-targets ignore: {name} cannot leave missing targets "
                           "out.")
        inner.set_params(missing_targets="ignore")
    return "ignore" if params.get("missing_targets") == "ignore" or getattr(
        args, "missing_targets", "error") == "ignore" else "error"


def _progress(label: str):
    """The CV's progress display (:mod:`multitask.progress`: a bar on a terminal, a few lines
    on stderr otherwise)."""
    from multitask.progress import progress

    return progress(label=f"{label} cross-validation")


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


def load_model(path, allow_pickle: bool = False) -> dict:
    """Load a model file written by ``multitask fit``: a dict with the fitted ``"model"``,
    the ``"layout"`` (``"long"`` or ``"wide"``), the column names and the other metadata.

    The file is read by :func:`multitask.persistence.read_model_file`: no code in it runs;
    pickle files are refused unless ``allow_pickle`` (files you trust only).
    """
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    try:
        content = read_model_file(path, allow_pickle=allow_pickle)
    except ModelFileError as exc:
        raise CLIError(str(exc)) from None
    meta = content.metadata
    if "layout" not in meta or "features" not in meta:
        raise CLIError(f"{path}: a model file without the column names that 'multitask "
                       "predict' needs (saved from Python?): load it with "
                       "multitask.persistence.load_model instead.")
    try:
        check_is_fitted(content.model)
    except NotFittedError:
        raise CLIError(f"{path}: the model in this file is not fitted.") from None
    return {**meta, "model": content.model}


def _fitted_tasks(est):
    """The task labels a fitted model knows (a cross-validated model: its refitted one)."""
    tasks = getattr(est, "tasks_", None)
    if tasks is None and hasattr(est, "best_estimator_"):
        tasks = getattr(est.best_estimator_, "tasks_", None)
    return tasks


def _free_name(name: str, taken) -> str:
    """``name``, or ``name_1``, ``name_2``... : the first one not in ``taken``."""
    out, k = name, 0
    while out in taken:
        k += 1
        out = f"{name}_{k}"
    return out


# --------------------------------------------------------------------------- commands
def cmd_fit(args) -> int:
    """Fit a model on a data file and save it (see the module docstring)."""
    from sklearn.base import is_classifier

    if args.list_models:
        classes = _model_classes()
        aliases = _deprecated_aliases(classes)
        for n, cls in classes.items():
            doc = (cls.__doc__ or "").strip().splitlines()
            if n in aliases:
                doc = [f"deprecated spelling of {_model_name(n.lower(), classes)}"]
            print(f"  {n:28s} {doc[0] if doc else ''}")
        return 0
    if not args.input or not args.model or not args.model_file:
        raise CLIError("multitask fit needs --input FILE, --model NAME and --model-file FILE "
                       "(see multitask fit --help).")
    _refuse_overwriting(args.model_file, [args.input], "--model-file")
    _check_output(args.model_file)
    name, est = _make_model(args)
    missing = _missing_targets(args, est, name)
    numeric_ids = bool(args.numeric_task_ids)
    df = read_table(args.input, text_columns=[] if numeric_ids or not args.task else [args.task])
    path = df.attrs["multitask_path"]
    layout, features, target, task_col, targets = _layout(args, df)
    classifier = is_classifier(est)
    loss = _model_loss(est)
    if args.exposure and (classifier or loss not in _EXPOSURE_LOSSES):
        raise CLIError(f"--exposure goes with a count or size loss (--loss "
                       f"{', '.join(_EXPOSURE_LOSSES)}), not with {name}'s loss {loss!r}.")
    X = _numeric(df, features)
    exposure = _exposure(df, args.exposure) if args.exposure else None
    if layout == "long":
        y = (_labels(df, target, "target", missing=missing) if classifier
             else _numeric(df, [target], missing)[:, 0])
        task = _labels(df, task_col, "task id", strip=False) if task_col else None
        if task is not None:
            _distinct_ids(df, task_col, task)
    else:
        for c in targets:
            if df[c].isna().all():
                raise CLIError(f"{path}: target column {c!r} is empty: task {c!r} has no rows.")
        Y = np.column_stack([_labels(df, c, "target", missing=missing) for c in targets]) \
            if classifier else _numeric(df, targets, missing)
        y = Y if Y.shape[1] > 1 else Y[:, 0]
        task = None
    weights = {}
    if exposure is not None:  # scikit-learn's way: the rate, weighted by the exposure
        y = y / (exposure if np.ndim(y) == 1 else exposure[:, None])
        weights = {"sample_weight": exposure}
    t0 = time.perf_counter()
    try:
        est.fit(X, y, task, **weights) if task is not None else est.fit(X, y, **weights)
    except (ValueError, TypeError) as exc:
        raise CLIError(f"{path}: {name}: {exc}") from None
    seconds = time.perf_counter() - t0
    if hasattr(est, "callback"):
        est.set_params(callback=None)  # the progress printer is not part of the model
    metadata = {
        "model_name": name,
        "layout": layout,
        "features": features,
        "target": target,
        "task": task_col,
        "targets": targets,
        "numeric_task_ids": numeric_ids,
        "classifier": classifier,
        "loss": loss,
        "exposure": args.exposure,
        "cv_scoring": _scoring_words(est, args.scoring) if args.cv else None,
        "trained_on": os.path.basename(path),
        "n_rows": int(len(df)),
    }
    try:
        save_model(est, args.model_file, metadata=metadata)
    except ModelFileError as exc:
        raise CLIError(str(exc)) from None
    tasks = _fitted_tasks(est)
    n_tasks = len(targets) if layout == "wide" else (len(tasks) if tasks is not None else 1)
    n_used, left_out = _rows_fitted(y, missing)
    how = ""
    if loss is not None and (args.loss is not None or any(
            p.strip().startswith("loss=") for p in (args.param or []))):
        how = f" with the {loss} loss"
    if exposure is not None:
        how += f" (the rate per unit of {args.exposure!r}, weighted by it)"
    print(f"fitted {name}{how} on {n_used} rows{left_out}, {len(features)} features, "
          f"{n_tasks} task(s) in {seconds:.2f} s")
    if args.cv:
        chosen = ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v!r}"
                           for k, v in est.best_params_.items())
        print(f"cross-validation ({est.n_splits_} folds): best {chosen}, mean score "
              f"{est.best_score_:.6g} ({_scoring_words(est, args.scoring)})")
    print(f"wrote {args.model_file}")
    return 0


def _rows_fitted(y, missing: str) -> tuple[int, str]:
    """``(rows, note)``: the rows the model was fitted on (with ``--missing-targets ignore``,
    those with an observed target; a shared design's row counts when one of its targets is),
    and a note saying what was left out (empty when nothing was)."""
    from multitask.data import observed_mask

    Y = np.asarray(y)
    n = Y.shape[0]
    if missing != "ignore":
        return n, ""
    seen = observed_mask(Y).reshape(n, -1)
    used = int(seen.any(axis=1).sum())
    if Y.ndim == 1:
        return used, (f" ({n - used} row(s) without a target left out)" if used < n else "")
    cells = int((~seen).sum())
    if not cells:
        return used, ""
    rows = f"; {n - used} row(s) without any" if used < n else ""
    return used, f" ({cells} missing target(s) left out{rows})"


def cmd_predict(args) -> int:
    """Apply a saved model to the rows of a data file; write the predictions as CSV."""
    _refuse_overwriting(args.output, [args.input, args.model_file], "--output")
    _check_output(args.output)
    bundle = load_model(args.model_file, allow_pickle=args.allow_pickle)
    task_col = bundle.get("task")
    numeric_ids = bundle.get("numeric_task_ids", True)  # first versions: pandas' inference
    df = read_table(args.input, text_columns=[task_col] if task_col and not numeric_ids else [])
    path = df.attrs["multitask_path"]
    est = bundle["model"]
    _require_columns(df, bundle["features"], "feature")
    X = _numeric(df, bundle["features"])
    exposure = None
    if bundle.get("exposure"):
        col = bundle["exposure"]
        if col not in df.columns:
            raise CLIError(f"{path}: exposure column {col!r} not found: the model was fitted "
                           f"on the rate per unit of {col!r} and predicts counts as rate x "
                           f"{col}; give each row's {col} (a column of 1 gives the rates).")
        exposure = _exposure(df, col)
    if args.proba and not hasattr(est, "predict_proba"):
        inner = getattr(est, "estimator", est)
        raise CLIError(f"--proba: {type(inner).__name__} gives no probabilities.")
    new_columns: dict[str, np.ndarray] = {}
    if bundle["layout"] == "long":
        task = None
        if task_col:
            _require_columns(df, [task_col], "task")
            task = _labels(df, task_col, "task id", strip=False)
            known = _fitted_tasks(est)
            known_set = set(np.asarray(known).tolist())
            unknown = [i for i, t in enumerate(task.tolist()) if t not in known_set]
            if unknown:
                i = unknown[0]
                shown = ", ".join(map(repr, np.asarray(known).tolist()[:8]))
                more = ", ..." if len(known) > 8 else ""
                n_new = len(set(task.tolist()) - known_set)
                near = [k for k in np.asarray(known).tolist() if isinstance(k, str)
                        and isinstance(task[i], str) and k.strip() == task[i].strip()]
                hint = (f"; it knows {near[0]!r}, which differs only by white space around "
                        "it: ids are kept as written" if near else "")
                raise CLIError(f"{path}: {_where(df, i)}, column {task_col!r}: unknown "
                               f"task {_plain(task[i])!r} ({n_new} task id(s) the model does "
                               f"not know; it knows {len(known)} tasks: {shown}{more}{hint}).")
        try:
            pred = est.predict(X, task) if task is not None else est.predict(X)
            proba = _proba(est, X, task, single=True) if args.proba else None
        except (ValueError, TypeError) as exc:
            raise CLIError(f"{path}: {exc}") from None
        if exposure is not None:
            new_columns["prediction"] = np.asarray(pred, dtype=np.float64) * exposure
            new_columns["prediction_rate"] = pred
        else:
            new_columns["prediction"] = pred
        if proba is not None:
            if proba.ndim == 1:
                new_columns[f"probability_{est.classes_[1]}"] = proba
            else:
                for k, c in enumerate(est.classes_):
                    new_columns[f"probability_{c}"] = proba[:, k]
    else:
        try:
            pred = est.predict(X)
            proba = _proba(est, X, None, single=len(bundle["targets"]) == 1) if args.proba \
                else None
        except (ValueError, TypeError) as exc:
            raise CLIError(f"{path}: {exc}") from None
        pred = np.asarray(pred).reshape(len(df), -1)
        many = len(bundle["targets"])
        if proba is not None:
            proba = np.asarray(proba)
            multi = len(est.classes_) > 2
            proba = (proba.reshape(len(df), many, -1) if multi
                     else proba.reshape(len(df), -1))
        for t, name in enumerate(bundle["targets"]):
            if exposure is not None:
                new_columns[f"prediction_{name}"] = pred[:, t] * exposure
                new_columns[f"prediction_rate_{name}"] = pred[:, t]
            else:
                new_columns[f"prediction_{name}"] = pred[:, t]
            if proba is not None and proba.ndim == 3:
                for k, c in enumerate(est.classes_):
                    new_columns[f"probability_{name}_{c}"] = proba[:, t, k]
            elif proba is not None:
                new_columns[f"probability_{name}"] = proba[:, t]
    out = df.copy()
    renamed = []
    for name, values in new_columns.items():
        free = _free_name(name, out.columns)
        if free != name:
            renamed.append(f"{name!r} -> {free!r}")
        out[free] = values
    if renamed:
        print(f"multitask: note: {path} already has column(s) named like the predictions, "
              f"kept as they are; the new columns are renamed: {', '.join(renamed)}.",
              file=sys.stderr)
    _atomic_write(args.output, lambda tmp: out.to_csv(tmp, index=False))
    print(f"wrote {len(out)} predictions to {args.output}")
    return 0


def _plain(v):
    """A label as the user wrote it (``'b'``, ``3``), not as numpy prints it."""
    return v.item() if isinstance(v, np.generic) else v


def _proba(est, X, task, single: bool) -> np.ndarray:
    """Probability of the positive class: ``(n,)`` for one value per row, ``(n, m)`` for a
    shared design with several tasks; with more than two classes, the probability of each
    class: ``(n, K)``, or ``(n, m, K)`` for a shared design."""
    p = np.asarray(est.predict_proba(X, task) if task is not None else est.predict_proba(X))
    if len(est.classes_) > 2:
        return p
    return p[:, 1] if single else p


# --------------------------------------------------------------------------- parsers
_FIT_EPILOG = """examples:
  # long format: one row per (school, student); features = all other columns
  multitask fit --input train.csv --target score --task school \\
      --model TraceNormRegressor --cv --model-file model.skops

  # given parameters, chosen feature columns
  multitask fit --input train.csv --target score --task school --features f1 f2 f3 \\
      --model L21Regressor --param alpha=0.05 --param max_iter=2000 --model-file m.skops

  # shared design: one target column per task
  multitask fit --input train.parquet --targets y1 y2 y3 --model IndependentRidgeRegressor \\
      --cv --grid alpha=0.01,0.1,1,10 --model-file m.skops

  # shared design whose empty target cells were not observed (each task fits its own rows)
  multitask fit --input labels.csv --targets y1 y2 y3 --missing-targets ignore \\
      --model L21Classifier --cv --model-file m.skops

  # claim counts over an exposure (Poisson), heavy tails (Huber), the 90th percentile
  multitask fit --input claims.csv --target n --task region --exposure years \
      --model L21Regressor --loss poisson --cv --model-file m.skops
  multitask fit --input prices.csv --target y --task city --model TraceNormRegressor \
      --loss huber --epsilon 1.35 --cv --model-file m.skops
  multitask fit --input demand.csv --target y --task store --model L21Regressor \
      --loss quantile --quantile 0.9 --cv --model-file m.skops

  # more than two classes (the multinomial logistic loss)
  multitask fit --input speech.csv --target vowel --task speaker --model L21Classifier \
      --cv --model-file m.skops

  # the models
  multitask fit --list-models
"""

_PREDICT_EPILOG = """examples:
  multitask predict --model-file model.skops --input test.csv --output predictions.csv
  multitask predict --model-file clf.skops --input test.parquet --output p.csv --proba

The output holds the input columns plus "prediction" (long format) or "prediction_<target>"
for each task (shared design); --proba adds the probability of the positive class, or of each
class ("probability_<class>") with more than two. A model fitted with --exposure needs that
column: "prediction" is then the count (rate x exposure) and "prediction_rate" the rate. A
name the input already uses gets a suffix (prediction_1, ...), and a note on stderr says so.
"""


def add_commands(sub) -> None:
    """Add ``fit`` and ``predict`` to the ``multitask`` command line's sub-parsers."""
    fmt = argparse.RawDescriptionHelpFormatter
    pf = sub.add_parser(
        "fit",
        help="fit a model on your CSV/Parquet file and save it",
        description="Fit a multi-task model on a CSV or Parquet file (long format: --target and "
        "--task; shared design: --targets) with given (--param) or cross-validated (--cv) "
        "parameters, and save it as a model file that is safe to share (skops format: loading "
        "it runs no code) atomically: nothing is written on failure or interruption.",
        epilog=_FIT_EPILOG,
        formatter_class=fmt,
    )
    pf.add_argument("--input", metavar="FILE", help="training data (.csv, .tsv or .parquet)")
    pf.add_argument("--model", metavar="NAME",
                    help="model class, e.g. TraceNormRegressor (see --list-models)")
    pf.add_argument("--model-file", metavar="FILE", help="where to save the fitted model")
    pf.add_argument("--target", metavar="COL", help="target column (long format)")
    pf.add_argument("--task", metavar="COL", help="task id column (long format; omit for one "
                    "task); ids are kept as written: 01 and 1 are two tasks, and ids that "
                    "differ only by white space around them ('a' and 'a ') are refused")
    pf.add_argument("--missing-targets", choices=("error", "ignore"), default="error",
                    help="an empty target cell is an error (default) or a target that was not "
                    "observed (ignore): in a shared design (--targets) the row then counts "
                    "only for the tasks whose target is given; in long format it is left out")
    pf.add_argument("--numeric-task-ids", action="store_true",
                    help="read the task ids as numbers (01 and 1 are then one task)")
    pf.add_argument("--targets", metavar="COL", nargs="+",
                    help="one target column per task (shared design)")
    pf.add_argument("--features", metavar="COL", nargs="+",
                    help="feature columns (default: all columns but the target and task ones)")
    pf.add_argument("--param", metavar="KEY=VALUE", action="append",
                    help="model parameter, repeatable (e.g. --param alpha=0.1)")
    losses = pf.add_argument_group("the loss (regressors; classifiers: --loss of their own)")
    losses.add_argument("--loss", metavar="NAME",
                        help="the model's loss: squared (default), poisson, gamma, tweedie, "
                        "huber or quantile for a regressor; logistic (default for most, and "
                        "the one for more than two classes), squared_hinge or hinge for a "
                        "classifier")
    losses.add_argument("--power", type=float, default=None, metavar="P",
                        help="--loss tweedie: the power in [1, 2] (default 1.5)")
    losses.add_argument("--epsilon", type=float, default=None, metavar="E",
                        help="--loss huber: the threshold in scales, > 1 (default 1.35)")
    losses.add_argument("--quantile", type=float, default=None, metavar="Q",
                        help="--loss quantile: the quantile in (0, 1) (default 0.5)")
    losses.add_argument("--exposure", metavar="COL",
                        help="with --loss poisson, gamma or tweedie: each row's exposure "
                        "(> 0): the model fits the rate target / exposure with "
                        "sample_weight=exposure (scikit-learn's way); predict then needs the "
                        "column and writes counts (rate x exposure) and rates")
    pf.add_argument("--cv", action="store_true",
                    help="choose the parameters by cross-validation (MultiTaskCV)")
    pf.add_argument("--grid", metavar="KEY=V1,V2,...", action="append",
                    help="with --cv: the values to try for a parameter, repeatable (default: "
                    "an alpha grid relative to alpha_max)")
    pf.add_argument("--cv-folds", type=int, default=5, metavar="K",
                    help="folds within each task (default 5)")
    pf.add_argument("--n-alphas", type=int, default=10, metavar="N",
                    help="size of the default grid (default 10)")
    pf.add_argument("--alpha-ratio", type=float, default=1e-3, metavar="R",
                    help="smallest/largest value of the default grid (default 1e-3)")
    pf.add_argument("--scoring", default=None,
                    help="nmse, amse, auc, log_loss, poisson_deviance, gamma_deviance, "
                    "tweedie_deviance, pinball_loss, mae or a scikit-learn scorer name "
                    "(default by loss: -nMSE for squared, minus the mean deviance for "
                    "poisson, gamma and tweedie, minus the pinball loss for quantile, minus "
                    "the mean absolute error for huber, mean task AUC for two classes, minus "
                    "the log-loss for more)")
    pf.add_argument("--n-jobs", type=int, default=None, metavar="N",
                    help="parallel jobs (at most the number of CPUs)")
    pf.add_argument("--random-state", type=int, default=0, help="seed of the folds")
    pf.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    pf.add_argument("--list-models", action="store_true", help="list the models and exit")
    pf.set_defaults(func=cmd_fit)

    pp = sub.add_parser(
        "predict",
        help="apply a saved model to new rows",
        description="Apply a model saved by 'multitask fit' to the rows of a CSV or Parquet "
        "file and write the predictions as CSV (atomically). Rows of a task the model was not "
        "fitted on are an error. Model files are read without running any code in them; "
        "pickle files are refused unless --allow-pickle is given.",
        epilog=_PREDICT_EPILOG,
        formatter_class=fmt,
    )
    pp.add_argument("--model-file", metavar="FILE", required=True,
                    help="model written by multitask fit")
    pp.add_argument("--input", metavar="FILE", required=True, help="rows to predict")
    pp.add_argument("--output", metavar="FILE", required=True, help="CSV file to write")
    pp.add_argument("--proba", action="store_true",
                    help="also write the probability of the positive class (classifiers; "
                    "with more than two classes, one column per class)")
    pp.add_argument("--allow-pickle", action="store_true",
                    help="also accept a pickle/joblib model file (written by the first "
                    "versions). Unpickling runs any code the file holds: use it only for a file "
                    "you made yourself or trust, then save the model again in the safe format")
    pp.set_defaults(func=cmd_predict)
