"""``multitask fit`` and ``multitask predict``: the models on the user's own CSV or Parquet files.

Two table layouts are read (with pandas; Parquet needs pyarrow, ``pip install 'multitask[io]'``):

* **long format**: one row per (task, example): feature columns, a target column and a task
  column (``--target y --task school``; features are ``--features ...`` or all other columns);
* **shared design** (wide): one row per example, feature columns and one target column per task
  (``--targets y1 y2 y3``).

``fit`` saves the fitted model, with the column names it needs, to a joblib file (written to a
temporary file in the same folder and renamed, so a failure leaves nothing behind);
``predict`` reads such a file and new rows and writes the input columns plus the predictions
(``prediction``, or ``prediction_<target>`` per task for a shared design) to a CSV file, also
atomically. Errors in the files are reported on one line naming the file, the row or column and
the problem, with exit status 2. Model files are pickles: load only files you trust.

Examples
--------
::

    multitask fit --input train.csv --target score --task school \\
        --model TraceNormRegressor --cv --model-file model.joblib
    multitask fit --input train.parquet --targets y1 y2 y3 --model L21Regressor \\
        --param alpha=0.05 --model-file model.joblib
    multitask predict --model-file model.joblib --input test.csv --output predictions.csv
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

__all__ = ["add_commands", "cmd_fit", "cmd_predict", "load_model", "read_table"]

MODEL_FILE_KIND = "multitask-model"
MODEL_FILE_VERSION = 1


class CLIError(ValueError):
    """An error in the user's files or arguments, reported on one line (exit status 2)."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))


# --------------------------------------------------------------------------- reading
def _pandas():
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is in the io and test extras
        raise CLIError("reading data files needs pandas: pip install 'multitask[io]'.") from None
    return pd


def read_table(path: str | os.PathLike):
    """Read a CSV (``.csv``, ``.txt``, ``.tsv``, optionally gzipped) or Parquet file.

    Floats are parsed exactly (round trip). Raises :class:`CLIError`
    naming the file when it is missing, unreadable, or has no data rows.
    """
    pd = _pandas()
    p = Path(path)
    name = str(path)
    if not p.exists():
        raise CLIError(f"{name}: file not found.")
    if p.is_dir():
        raise CLIError(f"{name}: is a directory, not a data file.")
    suffixes = [s.lower() for s in p.suffixes]
    kind = suffixes[-2] if suffixes and suffixes[-1] in (".gz", ".bz2", ".xz", ".zip") and len(
        suffixes) > 1 else (suffixes[-1] if suffixes else "")
    try:
        if kind in (".parquet", ".pq"):
            try:
                df = pd.read_parquet(p)
            except ImportError:
                raise CLIError(f"{name}: reading Parquet needs pyarrow: "
                               "pip install 'multitask[io]'.") from None
        elif kind in (".csv", ".txt", ".tsv", ""):
            sep = "\t" if kind == ".tsv" else ","
            df = pd.read_csv(p, sep=sep, skipinitialspace=True, **_exact_floats(pd))
        else:
            raise CLIError(f"{name}: unknown file type {kind!r}: use .csv, .tsv or .parquet.")
    except CLIError:
        raise
    except pd.errors.EmptyDataError:
        raise CLIError(f"{name}: the file is empty.") from None
    except (pd.errors.ParserError, UnicodeDecodeError, OSError, ValueError) as exc:
        raise CLIError(f"{name}: cannot be read: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - pyarrow raises its own types
        raise CLIError(f"{name}: cannot be read: {type(exc).__name__}: {exc}") from None
    df.columns = [str(c) for c in df.columns]
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


def _numeric(df, cols) -> np.ndarray:
    """The columns ``cols`` as a float64 matrix, naming the first bad cell if any."""
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
        if miss.size:
            raise CLIError(f"{path}: {_where(df, int(miss[0]))}, column {c!r}: missing value.")
        inf = np.flatnonzero(np.isinf(v))
        if inf.size:
            raise CLIError(f"{path}: {_where(df, int(inf[0]))}, column {c!r}: infinite value.")
        out[:, j] = v
    return out


def _labels(df, col: str, what: str) -> np.ndarray:
    """A column of labels (task ids or class labels): no missing or empty cells."""
    path = df.attrs["multitask_path"]
    s = df[col]
    empty = s.isna().to_numpy()
    if s.dtype == object:
        empty |= s.astype(str).str.strip().eq("").to_numpy()
    bad = np.flatnonzero(empty)
    if bad.size:
        raise CLIError(f"{path}: {_where(df, int(bad[0]))}, column {col!r}: empty {what}.")
    v = s.to_numpy()
    if v.dtype == object:
        v = np.asarray([x.strip() if isinstance(x, str) else x for x in v], dtype=object)
        if all(isinstance(x, str) for x in v):
            v = v.astype(str)
    return v


def _layout(args, df):
    """Resolve the columns: ``(layout, features, target, task, targets)``."""
    path = df.attrs["multitask_path"]
    if args.targets and (args.target or args.task):
        raise CLIError("give either --targets (one column per task, shared design) or --target "
                       "with --task (long format), not both.")
    if not args.targets and not args.target:
        raise CLIError("give the target column: --target COL (long format, with --task COL) or "
                       "--targets COL1 COL2 ... (shared design).")
    used = list(args.targets) if args.targets else [args.target] + ([args.task] if args.task
                                                                    else [])
    _require_columns(df, list(args.targets) if args.targets else [args.target], "target")
    if args.task:
        _require_columns(df, [args.task], "task")
    if len(set(used)) != len(used):
        raise CLIError(f"{path}: a column is given twice among the target and task columns.")
    if args.features:
        _require_columns(df, args.features, "feature")
        features = list(args.features)
        clash = [c for c in features if c in used]
        if clash:
            raise CLIError(f"{path}: column {clash[0]!r} is both a feature and a target/task.")
    else:
        features = [c for c in df.columns if c not in used]
    if not features:
        raise CLIError(f"{path}: no feature columns left (columns: "
                       f"{', '.join(map(repr, df.columns))}).")
    if args.targets:
        return "wide", features, None, None, list(args.targets)
    return "long", features, args.target, args.task, None


# --------------------------------------------------------------------------- models
def _model_classes() -> dict[str, type]:
    import multitask.estimators as E

    return {n: getattr(E, n) for n in E.__all__ if n != "MultiTaskCV"}


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


def _make_model(args):
    classes = _model_classes()
    lookup = {n.lower(): n for n in classes}
    name = lookup.get(args.model.lower())
    if name is None:
        raise CLIError(f"unknown model {args.model!r}; choose from {', '.join(classes)} "
                       "(multitask fit --list-models).")
    cls = classes[name]
    est = cls()
    valid = set(est.get_params(deep=False))
    params = _parse_params(args.param, valid, name)
    for fixed in ("task_column", "warm_start"):
        if fixed in params:
            raise CLIError(f"--param {fixed} is set by the command line, not by hand.")
    est.set_params(**params)
    if not args.cv:
        if args.grid:
            raise CLIError("--grid needs --cv.")
        return name, est
    from multitask.estimators.cv import MultiTaskCV

    grid = _parse_params(args.grid, valid, name, multi=True) or None
    progress = None if args.quiet else _progress(name)
    return name, MultiTaskCV(est, param_grid=grid, cv=args.cv_folds, scoring=args.scoring,
                             n_alphas=args.n_alphas, alpha_ratio=args.alpha_ratio,
                             n_jobs=args.n_jobs, callback=progress,
                             random_state=args.random_state)


def _progress(label: str):
    t0 = time.perf_counter()

    def report(done: int, total: int) -> None:
        el = time.perf_counter() - t0
        print(f"[{label} CV] {done}/{total} jobs done, {el:.1f} s", file=sys.stderr, flush=True)

    return report


# --------------------------------------------------------------------------- writing
def _atomic_write(path: Path, write) -> None:
    """Call ``write(tmp_path)`` on a temporary file beside ``path``, then rename it."""
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.exists():
        raise CLIError(f"{path}: folder {str(parent)!r} does not exist.")
    try:
        fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise CLIError(f"{path}: cannot write: {exc}") from None
    os.close(fd)
    try:
        write(tmp)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # mkstemp makes the file private; use the usual rights
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise CLIError(f"{path}: cannot write: {exc}") from None
        raise


def load_model(path) -> dict:
    """Load a model file written by ``multitask fit``: a dict with the fitted ``"model"``,
    the ``"layout"`` (``"long"`` or ``"wide"``) and the column names."""
    import joblib

    p = Path(path)
    if not p.exists():
        raise CLIError(f"{path}: file not found.")
    try:
        bundle = joblib.load(p)
    except Exception as exc:  # noqa: BLE001 - any unpickling failure is a bad file
        raise CLIError(f"{path}: not a model file written by 'multitask fit' ({type(exc).__name__}"
                       f": {exc}).") from None
    if not isinstance(bundle, dict) or bundle.get("kind") != MODEL_FILE_KIND:
        raise CLIError(f"{path}: not a model file written by 'multitask fit'.")
    if bundle.get("version", 0) > MODEL_FILE_VERSION:
        raise CLIError(f"{path}: written by a newer multitask (file version "
                       f"{bundle['version']}).")
    return bundle


# --------------------------------------------------------------------------- commands
def cmd_fit(args) -> int:
    """Fit a model on a data file and save it (see the module docstring)."""
    from sklearn.base import is_classifier

    if args.list_models:
        for n, cls in _model_classes().items():
            doc = (cls.__doc__ or "").strip().splitlines()
            print(f"  {n:28s} {doc[0] if doc else ''}")
        return 0
    if not args.input or not args.model or not args.model_file:
        raise CLIError("multitask fit needs --input FILE, --model NAME and --model-file FILE "
                       "(see multitask fit --help).")
    name, est = _make_model(args)
    df = read_table(args.input)
    path = df.attrs["multitask_path"]
    layout, features, target, task_col, targets = _layout(args, df)
    classifier = is_classifier(est)
    X = _numeric(df, features)
    if layout == "long":
        y = _labels(df, target, "target") if classifier else _numeric(df, [target])[:, 0]
        task = _labels(df, task_col, "task id") if task_col else None
    else:
        for c in targets:
            if df[c].isna().all():
                raise CLIError(f"{path}: target column {c!r} is empty: task {c!r} has no rows.")
        Y = np.column_stack([_labels(df, c, "target") for c in targets]) if classifier else \
            _numeric(df, targets)
        y = Y if Y.shape[1] > 1 else Y[:, 0]
        task = None
    t0 = time.perf_counter()
    try:
        est.fit(X, y, task) if task is not None else est.fit(X, y)
    except ValueError as exc:
        raise CLIError(f"{path}: {exc}") from None
    seconds = time.perf_counter() - t0
    import joblib

    from multitask import __version__

    bundle = {
        "kind": MODEL_FILE_KIND,
        "version": MODEL_FILE_VERSION,
        "multitask_version": __version__,
        "model_name": name,
        "model": est,
        "layout": layout,
        "features": features,
        "target": target,
        "task": task_col,
        "targets": targets,
        "classifier": classifier,
        "trained_on": os.path.basename(path),
        "n_rows": int(len(df)),
    }
    _atomic_write(Path(args.model_file), lambda tmp: joblib.dump(bundle, tmp))
    tasks = getattr(est, "tasks_", None)
    n_tasks = len(targets) if layout == "wide" else (len(tasks) if tasks is not None else 1)
    print(f"fitted {name} on {len(df)} rows, {len(features)} features, {n_tasks} task(s) in "
          f"{seconds:.2f} s")
    if args.cv:
        chosen = ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v!r}"
                           for k, v in est.best_params_.items())
        print(f"cross-validation ({est.n_splits_} folds): best {chosen}, mean score "
              f"{est.best_score_:.6g}")
    print(f"wrote {args.model_file}")
    return 0


def cmd_predict(args) -> int:
    """Apply a saved model to the rows of a data file; write the predictions as CSV."""
    bundle = load_model(args.model_file)
    df = read_table(args.input)
    path = df.attrs["multitask_path"]
    est = bundle["model"]
    _require_columns(df, bundle["features"], "feature")
    X = _numeric(df, bundle["features"])
    if args.proba and not hasattr(est, "predict_proba"):
        inner = getattr(est, "estimator", est)
        raise CLIError(f"--proba: {type(inner).__name__} gives no probabilities.")
    out = df.copy()
    if bundle["layout"] == "long":
        task = None
        if bundle["task"]:
            _require_columns(df, [bundle["task"]], "task")
            task = _labels(df, bundle["task"], "task id")
            known = est.tasks_
            known_set = set(np.asarray(known).tolist())
            unknown = [i for i, t in enumerate(task.tolist()) if t not in known_set]
            if unknown:
                i = unknown[0]
                shown = ", ".join(map(repr, np.asarray(known).tolist()[:8]))
                more = ", ..." if len(known) > 8 else ""
                raise CLIError(f"{path}: {_where(df, i)}, column {bundle['task']!r}: unknown "
                               f"task {_plain(task[i])!r} (the model knows {len(known)} "
                               f"tasks: {shown}{more}).")
        try:
            pred = est.predict(X, task) if task is not None else est.predict(X)
            proba = _proba(est, X, task, single=True) if args.proba else None
        except ValueError as exc:
            raise CLIError(f"{path}: {exc}") from None
        out["prediction"] = pred
        if proba is not None:
            out[f"probability_{est.classes_[1]}"] = proba
    else:
        try:
            pred = est.predict(X)
            proba = _proba(est, X, None, single=len(bundle["targets"]) == 1) if args.proba \
                else None
        except ValueError as exc:
            raise CLIError(f"{path}: {exc}") from None
        pred = np.asarray(pred).reshape(len(df), -1)
        for t, name in enumerate(bundle["targets"]):
            out[f"prediction_{name}"] = pred[:, t]
            if proba is not None:
                out[f"probability_{name}"] = np.asarray(proba).reshape(len(df), -1)[:, t]
    _atomic_write(Path(args.output), lambda tmp: out.to_csv(tmp, index=False))
    print(f"wrote {len(out)} predictions to {args.output}")
    return 0


def _plain(v):
    """A label as the user wrote it (``'b'``, ``3``), not as numpy prints it."""
    return v.item() if isinstance(v, np.generic) else v


def _proba(est, X, task, single: bool) -> np.ndarray:
    """Probability of the positive class: ``(n,)`` for one value per row, ``(n, m)`` for a
    shared design with several tasks."""
    p = np.asarray(est.predict_proba(X, task) if task is not None else est.predict_proba(X))
    return p[:, 1] if single else p


# --------------------------------------------------------------------------- parsers
_FIT_EPILOG = """examples:
  # long format: one row per (school, student); features = all other columns
  multitask fit --input train.csv --target score --task school \\
      --model TraceNormRegressor --cv --model-file model.joblib

  # given parameters, chosen feature columns
  multitask fit --input train.csv --target score --task school --features f1 f2 f3 \\
      --model L21Regressor --param alpha=0.05 --param max_iter=2000 --model-file m.joblib

  # shared design: one target column per task
  multitask fit --input train.parquet --targets y1 y2 y3 --model IndependentRidgeRegressor \\
      --cv --grid alpha=0.01,0.1,1,10 --model-file m.joblib

  # the models
  multitask fit --list-models
"""

_PREDICT_EPILOG = """examples:
  multitask predict --model-file model.joblib --input test.csv --output predictions.csv
  multitask predict --model-file clf.joblib --input test.parquet --output p.csv --proba

The output holds the input columns plus "prediction" (long format) or "prediction_<target>"
for each task (shared design); --proba adds the probability of the positive class.
"""


def add_commands(sub) -> None:
    """Add ``fit`` and ``predict`` to the ``multitask`` command line's sub-parsers."""
    fmt = argparse.RawDescriptionHelpFormatter
    pf = sub.add_parser(
        "fit",
        help="fit a model on your CSV/Parquet file and save it",
        description="Fit a multi-task model on a CSV or Parquet file (long format: --target and "
        "--task; shared design: --targets) with given (--param) or cross-validated (--cv) "
        "parameters, and save it with joblib (atomically: nothing is written on failure).",
        epilog=_FIT_EPILOG,
        formatter_class=fmt,
    )
    pf.add_argument("--input", metavar="FILE", help="training data (.csv, .tsv or .parquet)")
    pf.add_argument("--model", metavar="NAME",
                    help="model class, e.g. TraceNormRegressor (see --list-models)")
    pf.add_argument("--model-file", metavar="FILE", help="where to save the fitted model")
    pf.add_argument("--target", metavar="COL", help="target column (long format)")
    pf.add_argument("--task", metavar="COL", help="task id column (long format; omit for one "
                    "task)")
    pf.add_argument("--targets", metavar="COL", nargs="+",
                    help="one target column per task (shared design)")
    pf.add_argument("--features", metavar="COL", nargs="+",
                    help="feature columns (default: all columns but the target and task ones)")
    pf.add_argument("--param", metavar="KEY=VALUE", action="append",
                    help="model parameter, repeatable (e.g. --param alpha=0.1)")
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
                    help="nmse, amse, auc or a scikit-learn scorer name (default: -nMSE for "
                    "regression, mean task AUC for classification)")
    pf.add_argument("--n-jobs", type=int, default=None, metavar="N", help="parallel jobs")
    pf.add_argument("--random-state", type=int, default=0, help="seed of the folds")
    pf.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    pf.add_argument("--list-models", action="store_true", help="list the models and exit")
    pf.set_defaults(func=cmd_fit)

    pp = sub.add_parser(
        "predict",
        help="apply a saved model to new rows",
        description="Apply a model saved by 'multitask fit' to the rows of a CSV or Parquet "
        "file and write the predictions as CSV (atomically). Rows of a task the model was not "
        "fitted on are an error. Model files are pickles: load only files you trust.",
        epilog=_PREDICT_EPILOG,
        formatter_class=fmt,
    )
    pp.add_argument("--model-file", metavar="FILE", required=True,
                    help="model written by multitask fit")
    pp.add_argument("--input", metavar="FILE", required=True, help="rows to predict")
    pp.add_argument("--output", metavar="FILE", required=True, help="CSV file to write")
    pp.add_argument("--proba", action="store_true",
                    help="also write the probability of the positive class (classifiers)")
    pp.set_defaults(func=cmd_predict)
