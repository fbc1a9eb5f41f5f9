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
import os
import sys
import time

import numpy as np

from multitask.cli_files import (
    CLIError,
    _atomic_write,
    _check_output,
    _distinct_ids,
    _exposure,
    _labels,
    _layout,
    _numeric,
    _refuse_overwriting,
    _require_columns,
    _where,
    read_table,
)
from multitask.cli_models import (
    _EXPOSURE_LOSSES,
    _deprecated_aliases,
    _make_model,
    _missing_targets,
    _model_classes,
    _model_loss,
    _model_name,
    _scoring_words,
)
from multitask.persistence import ModelFileError, read_model_file, save_model

__all__ = ["add_commands", "cmd_fit", "cmd_predict", "load_model", "read_table"]


# --------------------------------------------------------------------------- model files
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

