"""``multitask benchmark``: the main job on School, a named data set or the user's own file.

The data (one of):

* a data set by name: ``school`` (shipped with the package), or ``sarcos``, ``yeast``,
  ``scene``, ``letters``, ``newsgroups``, ``be_mtpl97`` (claim counts with exposure),
  ``vowel`` (11 classes) (read from the data folder, ``--data-dir`` or ``MULTITASK_DATA``;
  :data:`multitask.benchmark_data.DATASETS`);
* a CSV or Parquet file, read as ``multitask fit`` reads it (:mod:`multitask.cli_fit`): long
  format with ``--target COL --task COL`` (one row per (task, example)), or a shared design
  with ``--targets COL1 COL2 ...`` (one target column per task); features are ``--features``
  or all other columns. ``--targets`` and ``--features`` take column names or glob patterns
  (``'y_*'``, ``'q[0-9]'``, matched in the file's column order; quote them in a shell);
  ``--targets '*'`` with ``--features`` is every column but the features.

The kind of problem is detected from the targets (two distinct values are a binary
classification problem, three or more labels that are not numbers a multi-class one, more
numbers a regression; ``--exposure COL`` means counts) or given with ``--kind``:
``regression``, ``classification``, ``count`` (Poisson, with ``--exposure COL``: the rate
with the exposure as weight), ``multiclass`` (multinomial), ``quantile`` (pinball loss at
``--quantile``) or ``robust`` (Huber, ``--epsilon``); it sets the loss of every model and the
metrics (:mod:`multitask.benchmark_kinds`). ``--task-order`` (the tasks in time
order) adds the temporal models, ``--graph FILE`` (edges between tasks) the graph-regularized
model. The run prints the table and the verdict, and writes ``results.csv``, ``splits.csv``
and ``results.png`` to ``--out`` (see :mod:`multitask.benchmark` for the protocol).

``results.csv`` and ``splits.csv`` are rewritten as each (model, split) job ends, and each
job's record is appended to ``jobs.jsonl`` there: a run stopped by Ctrl-C, SIGTERM, a crash
or ``--time-limit`` leaves the finished jobs, and ``--resume`` completes it without running
them again (the data and the options that make a job's result must be the same).

Examples
--------
::

    multitask benchmark school
    multitask benchmark yeast --splits 5
    multitask benchmark --input ratings.csv --target rating --task respondent
    multitask benchmark --input sites.parquet --targets site1 site2 site3 --train-ratio 0.5
    multitask benchmark --input visits.csv --target y --task month --task-order sorted
    multitask benchmark --input survey.csv --features age income --targets '*'
    multitask benchmark school --splits 10 --time-limit 600      # then: --resume
    multitask benchmark be_mtpl97
    multitask benchmark --input claims.csv --target n --task region --exposure years
    multitask benchmark --input demand.csv --target y --task store --kind quantile --quantile 0.9
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from pathlib import Path

import numpy as np

__all__ = ["DEFAULT_BENCHMARK_OUT", "JOURNAL", "add_command", "cmd_benchmark",
           "read_benchmark_file", "read_graph", "read_journal"]

#: Default output folder of ``multitask benchmark school`` (relative to the current folder);
#: other data sets write to ``results/<name>-benchmark``.
DEFAULT_BENCHMARK_OUT = "results/school-benchmark"

#: The record of the jobs done, in ``--out``: a first line with the run's settings, then one
#: JSON line per finished (model, split) job; ``--resume`` reads it.
JOURNAL = "jobs.jsonl"

#: Exit status of a run stopped by ``--time-limit`` before its last job.
EXIT_TIME_LIMIT = 3

#: Characters that make a ``--targets`` / ``--features`` entry a glob pattern.
_GLOB = set("*?[")


# --------------------------------------------------------------------------- reading
def _targets(df, cols: list[str], layout: str):
    """The target columns as given: numbers (float) where the column is numeric, else text.

    A missing target is refused, naming the row and the column (a shared design with
    missing targets must be written in long format for now).
    """
    import pandas as pd

    from multitask.cli_fit import CLIError, _labels, _numeric, _where

    path = df.attrs["multitask_path"]
    out = []
    for c in cols:
        missing = np.flatnonzero(df[c].isna().to_numpy())
        if missing.size:
            how = ("write the file in long format, one row per observed (row, task) pair "
                   "(--target/--task)" if layout == "wide" else "drop the row")
            raise CLIError(f"{path}: {_where(df, int(missing[0]))}, column {c!r}: missing "
                           f"target; the benchmark needs every target observed: {how}.")
        s = df[c]
        if s.dtype == bool or pd.api.types.is_numeric_dtype(s.dtype):
            out.append(_numeric(df, [c])[:, 0])
        else:
            out.append(_labels(df, c, "target"))
    return out


def _check_header(df) -> None:
    """Refuse a CSV file whose header names a column twice (pandas would rename the second
    ``a`` to ``a.1`` and read it as another column), naming the column."""
    if not df.attrs.get("multitask_csv"):
        return  # Parquet refuses duplicated names itself
    import pandas as pd

    from multitask.cli_fit import CLIError

    path = df.attrs["multitask_path"]
    sep = "\t" if ".tsv" in [s.lower() for s in Path(path).suffixes] else ","
    try:
        head = pd.read_csv(path, sep=sep, header=None, nrows=1, dtype=str,
                           skipinitialspace=True, keep_default_na=False)
    except Exception:  # noqa: BLE001 - read_table read it: nothing more to check
        return
    names = [str(v) for v in head.iloc[0].tolist()] if len(head) else []
    seen: dict[str, int] = {}
    for j, name in enumerate(names):
        if name in seen:
            raise CLIError(f"{path}: the header names column {name!r} twice (columns "
                           f"{seen[name] + 1} and {j + 1}): give each column its own name.")
        seen[name] = j


def _expand(items, columns: list[str], option: str, path: str, exclude=()) -> list[str] | None:
    """Column names and glob patterns (``fnmatch``, case-sensitive) as column names.

    A name that is a column is kept as it is (even with ``*`` in it); a pattern becomes the
    columns it matches, in the file's order, less those of ``exclude``; a column named twice
    is kept once. A pattern that matches no column is refused, naming it."""
    from multitask.cli_fit import CLIError

    if not items:
        return items
    out: list[str] = []
    for item in items:
        if item in columns or not (_GLOB & set(item)):
            found = [item]
        else:
            found = [c for c in fnmatch.filter(columns, item) if c not in exclude]
            if not found:
                shown = ", ".join(map(repr, columns[:12])) + (", ..." if len(columns) > 12
                                                             else "")
                raise CLIError(f"{path}: the {option} pattern {item!r} matches no column"
                               f"{' left' if exclude else ''} (columns: {shown}).")
        out += [c for c in found if c not in out]
    return out


def _resolve_columns(args, df):
    """``args`` with the glob patterns of ``--features`` and ``--targets`` expanded
    (targets leave out the features and the task column)."""
    path = df.attrs["multitask_path"]
    columns = list(df.columns)
    resolved = argparse.Namespace(**vars(args))
    resolved.features = _expand(args.features, columns, "--features", path)
    taken = set(resolved.features or ()) | ({args.task} if args.task else set()) | (
        {args.target} if args.target else set()) | (
        {args.exposure} if getattr(args, "exposure", None) else set())
    resolved.targets = _expand(args.targets, columns, "--targets", path, exclude=taken)
    return resolved


def read_benchmark_file(args):
    """The data of ``--input`` (with ``--target/--task`` or ``--targets``) as
    :class:`~multitask.benchmark_data.BenchmarkData`; errors name the file, row and column.

    ``--targets`` and ``--features`` take names or glob patterns (:func:`_expand`); a header
    that names a column twice is refused, naming it."""
    from multitask.benchmark_data import make_benchmark_data
    from multitask.cli_fit import (
        CLIError,
        _distinct_ids,
        _exposure,
        _labels,
        _layout,
        _numeric,
        read_table,
    )

    numeric_ids = bool(args.numeric_task_ids)
    df = read_table(args.input, text_columns=[] if numeric_ids or not args.task
                    else [args.task])
    path = df.attrs["multitask_path"]
    _check_header(df)
    args = _resolve_columns(args, df)
    layout, features, target, task_col, targets = _layout(args, df)
    if layout == "long" and not task_col:
        raise CLIError(f"{path}: give the task column with --task COL (the benchmark compares "
                       "models across tasks), or one target column per task with --targets.")
    X = _numeric(df, features)
    name = Path(path).name
    exposure_col = getattr(args, "exposure", None)
    exposure = _exposure(df, exposure_col) if exposure_col else None
    extra = {"exposure": exposure, "exposure_name": exposure_col}
    try:
        if layout == "long":
            (y,) = _targets(df, [target], layout)
            task = _labels(df, task_col, "task id", strip=False)  # as written, as fit does
            _distinct_ids(df, task_col, task)
            return make_benchmark_data(X, y, task, name=name, kind=args.kind,
                                       feature_names=features, **extra)
        columns = _targets(df, targets, layout)
        numeric = all(c.dtype.kind == "f" for c in columns)
        Y = np.column_stack(columns) if numeric else np.column_stack(
            [c.astype(object) for c in columns])
        return make_benchmark_data(X, Y, name=name, task_names=targets, kind=args.kind,
                                   feature_names=features, **extra)
    except CLIError:
        raise
    except ValueError as exc:
        raise CLIError(f"{path}: {exc}") from None


def read_graph(path, task_names: list[str], numeric: bool = False) -> np.ndarray:
    """A task graph from a CSV or Parquet file of edges: symmetric weights ``(m, m)``.

    Each row is an edge: the first two columns name two tasks, an optional third column is
    the edge's weight (a number >= 0, default 1). Weights of an edge given twice add up. The
    task ids are read as the data's task column is read, as written (``01`` is not ``1``, a
    trailing space is kept), and matched to ``task_names`` by
    :func:`~multitask.benchmark_data.match_task_ids`: as text, or by value with ``numeric``
    (the data's ids read as numbers, ``--numeric-task-ids``: ``01`` is then task ``1``). An
    id that matches no task is refused, the message naming every such id; nothing is matched
    by guessing.
    """
    from multitask.benchmark_data import match_task_ids
    from multitask.cli_fit import CLIError, _labels, _numeric, _where, read_table

    head = read_table(path)
    if head.shape[1] not in (2, 3):
        raise CLIError(f"{path}: a graph file has 2 or 3 columns (task, task[, weight]), got "
                       f"{head.shape[1]}.")
    df = read_table(path, text_columns=list(head.columns[:2]))
    ends = [_labels(df, c, "task id", strip=False) for c in df.columns[:2]]
    try:
        both = match_task_ids([*ends[0].tolist(), *ends[1].tolist()], task_names,
                              numeric=numeric, what="The graph")
    except ValueError as exc:
        raise CLIError(f"{path}: {exc}") from None
    weights = _numeric(df, [df.columns[2]])[:, 0] if df.shape[1] == 3 else np.ones(len(df))
    A = np.zeros((len(task_names), len(task_names)))
    for i, (s, t, w) in enumerate(zip(both[:len(df)], both[len(df):], weights, strict=True)):
        if w < 0:
            raise CLIError(f"{path}: {_where(df, i)}: the weight {w!r} is negative.")
        if s == t:
            raise CLIError(f"{path}: {_where(df, i)}: an edge from task {task_names[s]!r} to "
                           "itself.")
        A[s, t] += w
        A[t, s] += w
    if not A.any():
        raise CLIError(f"{path}: the graph has no edge of positive weight.")
    return A


def _data(args):
    """The data the command runs on: a named data set or ``--input``, ordered and with its
    graph when the user gave them."""
    from multitask.benchmark_data import load_benchmark_data, order_tasks
    from multitask.cli_fit import CLIError

    file_options = [o for o, v in (("--target", args.target), ("--task", args.task),
                                   ("--targets", args.targets), ("--features", args.features),
                                   ("--exposure", args.exposure))
                    if v]
    if args.name and args.input:
        raise CLIError(f"give a data set name ({args.name!r}) or --input FILE, not both.")
    if args.input:
        data = read_benchmark_file(args)
    elif args.name:
        if file_options:
            raise CLIError(f"{file_options[0]} goes with --input FILE, not with a data set "
                           "name.")
        data = load_benchmark_data(args.name, args.data_dir)
        if args.kind not in ("auto", data.kind):
            raise CLIError(f"{data.name} is a {data.kind} problem, not {args.kind}.")
    else:
        from multitask.benchmark_data import DATASETS

        raise CLIError(f"give a data set name ({', '.join(DATASETS)}) or --input FILE "
                       "(multitask benchmark --help).")
    if args.quantile is not None and data.kind != "quantile":
        raise CLIError(f"--quantile goes with --kind quantile; {data.name} is a {data.kind} "
                       "problem.")
    if args.epsilon is not None and data.kind != "robust":
        raise CLIError(f"--epsilon goes with --kind robust; {data.name} is a {data.kind} "
                       "problem.")
    if args.task_order:
        order = args.task_order
        keyword = len(order) == 1 and order[0] in ("sorted", "given")
        data = order_tasks(data, order[0] if keyword else order)
    if args.graph:
        from dataclasses import replace

        data = replace(data, graph=read_graph(args.graph, data.task_names, data.numeric_ids))
    return data


# --------------------------------------------------------------------------- the journal
def _plain(v):
    """A record's value as JSON: arrays as nested lists, numpy scalars as Python ones."""
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def _start_journal(path: Path, settings: dict, records: list[dict]) -> None:
    """(Re)write the journal: its settings line and the records kept."""
    from multitask.persistence import atomic_write

    def write(tmp: str) -> None:
        with open(tmp, "w") as fh:
            fh.write(json.dumps({"multitask_benchmark_jobs": 1, "settings": settings}) + "\n")
            for r in records:
                fh.write(json.dumps(_plain(r)) + "\n")

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, write)


def _append_journal(path: Path, record: dict) -> None:
    line = json.dumps(_plain(record)) + "\n"
    with open(path, "a") as fh:
        fh.write(line)
        fh.flush()


_SETTING_NAMES = {"data": "the data (file contents, exposure, task ids, kind, order or graph)",
                  "train_ratio": "--train-ratio", "n_alphas": "--grid-size",
                  "alpha_ratio": "--grid-ratio", "cv": "--cv-folds",
                  "random_state": "--random-state", "quantile": "--quantile",
                  "epsilon": "--epsilon"}


def read_journal(path: str | Path, settings: dict) -> list[dict]:
    """The records of the jobs done by an earlier run, from its journal (:data:`JOURNAL`).

    Raises :class:`~multitask.cli_fit.CLIError` when the journal is not one, or was written
    with other settings (:func:`~multitask.benchmark.benchmark_settings`: the data or an
    option that changes a job's result), naming the setting. A last line cut short (a run
    stopped while writing it) is left out; that job runs again.
    """
    from multitask.cli_fit import CLIError

    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise CLIError(f"{path}: cannot be read: {exc}") from None
    try:
        head = json.loads(lines[0]) if lines else None
    except json.JSONDecodeError:
        head = None
    if not isinstance(head, dict) or "settings" not in head:
        raise CLIError(f"{path}: not a journal of multitask benchmark (its first line holds no "
                       "settings); run without --resume.")
    theirs = head["settings"]
    for key, what in _SETTING_NAMES.items():
        if theirs.get(key) != settings.get(key):
            detail = ("" if key == "data" else
                      f": {theirs.get(key)!r} in the stopped run, {settings.get(key)!r} now")
            raise CLIError(f"{path}: the stopped run had other settings ({what} differ"
                           f"{'s' if key != 'data' else ''}{detail}); give the same ones to "
                           "--resume, or run without --resume to start again.")
    records = []
    for i, line in enumerate(lines[1:], start=2):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines):
                break  # cut short by the stop: that job runs again
            raise CLIError(f"{path}: line {i} is damaged; run without --resume to start "
                           "again.") from None
        if not (isinstance(rec, dict) and isinstance(rec.get("model"), str)
                and isinstance(rec.get("split"), int)):
            raise CLIError(f"{path}: line {i} is not a job record; run without --resume to "
                           "start again.")
        records.append(rec)
    return records


# --------------------------------------------------------------------------- the command
def cmd_benchmark(args) -> int:
    """``multitask benchmark``: run, print the table and the verdict, write results.csv,
    splits.csv (as the jobs end) and a PNG; with ``--resume``, complete a stopped run."""
    if args.list_datasets:
        from multitask.benchmark_data import DATASETS

        for name, what in DATASETS.items():
            print(f"  {name:11s} {what}")
        return 0
    from multitask import benchmark as bench
    from multitask.persistence import TerminatedBySignal

    data = _data(args)
    for note in data.notes:
        print(f"multitask: note: {note}.", file=sys.stderr)
    out = Path(args.out if args.out else _default_out(args))
    journal = out / JOURNAL
    settings = bench.benchmark_settings(data, train_ratio=args.train_ratio,
                                        n_alphas=args.grid_size, alpha_ratio=args.grid_ratio,
                                        cv=args.cv_folds, random_state=args.random_state,
                                        quantile=args.quantile, epsilon=args.epsilon)
    done: list[dict] = []
    if args.resume:
        if journal.is_file():
            done = read_journal(journal, settings)
        else:
            print(f"multitask: nothing to resume in {out} (no {JOURNAL}): running every job.",
                  file=sys.stderr)
    columns = (bench.result_columns(data.kind), bench.split_columns(data.kind))
    state = {"done": len(done), "total": None, "started": False}

    def start() -> None:
        """The first write of this run: the journal (kept records only), stale figure out."""
        _start_journal(journal, settings, done)
        (out / "results.png").unlink(missing_ok=True)
        state["started"] = True

    def on_job(record: dict, partial) -> None:
        if not state["started"]:
            start()
        bench.write_csv(partial.rows, out / "results.csv", columns[0])
        bench.write_csv(partial.split_rows, out / "splits.csv", columns[1])
        state["done"], state["total"] = len(partial.split_rows), partial.n_jobs_total
        _append_journal(journal, record)  # last: a job in the journal is in the tables

    try:
        res = bench.run_benchmark(data, args.splits, args.models, train_ratio=args.train_ratio,
                                  n_alphas=args.grid_size, alpha_ratio=args.grid_ratio,
                                  cv=args.cv_folds, n_jobs=args.n_jobs,
                                  random_state=args.random_state,
                                  show_progress=not args.quiet, done=done, on_job=on_job,
                                  time_limit=args.time_limit, quantile=args.quantile,
                                  epsilon=args.epsilon)
    except (KeyboardInterrupt, TerminatedBySignal):
        if state["started"]:
            of = f" of {state['total']}" if state["total"] else ""
            print(f"multitask: stopped after {state['done']}{of} jobs: {out / 'results.csv'} "
                  f"and splits.csv hold them; the same command with --resume completes the "
                  "run.", file=sys.stderr)
        raise
    if not state["started"]:
        start()  # nothing ran (every job was done): the journal stays as it was read
    print(bench.format_table(res, cv=args.cv_folds))
    print()
    print(bench.format_verdict(res))
    bench.write_csv(res.rows, out / "results.csv", columns[0])
    bench.write_csv(res.split_rows, out / "splits.csv", columns[1])
    wrote = [out / "results.csv", out / "splits.csv"]
    if not res.complete:
        print(f"\n{len(res.split_rows)} of {res.n_jobs_total} jobs done in {res.seconds:.0f} s "
              f"(--time-limit {args.time_limit:g}); wrote {wrote[0]}, {wrote[1]} (no figure "
              "of a partial run); the same command with --resume completes it.")
        return EXIT_TIME_LIMIT
    png = _save_figure(res, out / "results.png")
    if png is not None:
        wrote.append(png)
    print(f"\n{len(res.rows)} models in {res.seconds:.0f} s; wrote "
          + ", ".join(str(p) for p in wrote)
          + ("" if png is not None else " (no figure: matplotlib is missing; pip install "
             "matplotlib)"))
    return 0


def _default_out(args) -> str:
    if args.input:
        return f"results/{Path(args.input).name.split('.')[0] or 'data'}-benchmark"
    return f"results/{str(args.name).strip().lower()}-benchmark"


def _save_figure(res, path: Path) -> Path | None:
    """Save the benchmark's figure atomically; None without matplotlib."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return None
    from multitask import benchmark as bench
    from multitask.persistence import atomic_write

    fig = bench.plot_benchmark(res)
    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png"))
    return path


_EPILOG = """examples:
  multitask benchmark school
  multitask benchmark school --splits 10 --out results/school
  multitask benchmark school --models TraceNorm L21 IndependentLasso
  multitask benchmark school --train-ratio 0.1 --splits 5
  multitask benchmark yeast --splits 5                 # data folder: --data-dir or MULTITASK_DATA
  multitask benchmark be_mtpl97                        # claim counts with exposure (Poisson)
  multitask benchmark vowel                            # 11 vowels per speaker (multinomial)
  multitask benchmark --list-datasets

  # your file, long format: one row per (task, example)
  multitask benchmark --input ratings.csv --target rating --task respondent
  # your file, shared design: one target column per task
  multitask benchmark --input sites.parquet --targets site1 site2 site3
  # tasks in time order (adds the temporal models), a task graph (adds the graph model)
  multitask benchmark --input visits.csv --target y --task month --task-order sorted
  multitask benchmark --input sales.csv --target y --task store --graph neighbours.csv
  # every column but the features is a target (quote patterns: 'y_*', '*')
  multitask benchmark --input survey.csv --features age income --targets '*'
  # counts over exposures, classes, a quantile, heavy tails: the loss of every model
  multitask benchmark --input claims.csv --target n --task region --exposure years
  multitask benchmark --input speech.csv --target vowel --task speaker --kind multiclass
  multitask benchmark --input demand.csv --target y --task store --kind quantile --quantile 0.9
  multitask benchmark --input prices.csv --target y --task city --kind robust
  # stop starting jobs after 10 minutes, then complete the run
  multitask benchmark school --splits 10 --time-limit 600
  multitask benchmark school --splits 10 --resume

The verdict compares the best multi-task model with the best independent baseline (ridge or
lasso per task) and the pooled baseline (one model for all tasks), all fitted with the same
loss: the paired difference of the first metric over the splits (nMSE, AUC, Poisson
deviance, log-loss, pinball loss or Huber loss by kind), relative to the baseline, on how
many splits it holds, and whether it is clear of the noise (larger than twice its standard
error and than the split-to-split spread of the two models' scores). A model that cannot
take the kind's loss is left out with a note under the table.

results.csv and splits.csv are rewritten as each job ends and jobs.jsonl records the jobs
done: a run stopped by Ctrl-C or --time-limit (exit status 3) keeps them, and --resume
completes it without running them again.
"""


def add_command(sub) -> None:
    """Add ``benchmark`` to the ``multitask`` command line's sub-parsers: the data set or
    file (:func:`_add_data_arguments`), what is known about the tasks
    (:func:`_add_task_arguments`) and the options of the run (:func:`_add_run_arguments`),
    in the order ``--help`` lists them."""
    pb = sub.add_parser(
        "benchmark",
        help="the main job: every model on School, a named data set or your file",
        description="Fit every model of the library that applies (independent and pooled "
        "baselines included) on School, a named data set or your CSV / Parquet file, each "
        "with its hyper-parameters chosen by cross-validation within tasks inside the "
        "training part and the loss of the kind of problem; print the test metrics of the "
        "kind (nMSE and aMSE for a regression, AUC and accuracy for a binary classification, "
        "Poisson deviance and D^2 for counts, log-loss and accuracy for classes, pinball loss "
        "and coverage for a quantile, Huber loss, MAE and nMSE for heavy tails), sorted best "
        "first, and a verdict; write results.csv, splits.csv and results.png to --out.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    pb.add_argument("name", nargs="?", metavar="DATASET",
                    help="a data set: school, sarcos, yeast, scene, letters, newsgroups, "
                    "be_mtpl97 (counts), vowel (11 classes) (--list-datasets); or give "
                    "--input FILE")
    _add_data_arguments(pb)
    _add_task_arguments(pb)
    _add_run_arguments(pb)
    pb.set_defaults(func=cmd_benchmark)


def _add_data_arguments(pb: argparse.ArgumentParser) -> None:
    """The user's file (the group ``your file``) and the options of the kind's loss."""
    from multitask.benchmark_kinds import DEFAULT_EPSILON, DEFAULT_QUANTILE, KINDS

    data = pb.add_argument_group("your file (instead of DATASET)")
    data.add_argument("--input", metavar="FILE", help="data file (.csv, .tsv or .parquet)")
    data.add_argument("--target", metavar="COL", help="target column (long format, with --task)")
    data.add_argument("--task", metavar="COL", help="task id column (long format); ids are "
                      "kept as written: 01 and 1 are two tasks")
    data.add_argument("--targets", metavar="COL", nargs="+",
                      help="one target column per task (shared design): names or glob "
                      "patterns ('y_*'; quote them), matched in the file's column order, "
                      "the feature columns left out: --features ... --targets '*' is every "
                      "column but the features")
    data.add_argument("--features", metavar="COL", nargs="+",
                      help="feature columns, names or glob patterns (default: all columns but "
                      "the target and task ones)")
    data.add_argument("--numeric-task-ids", action="store_true",
                      help="read the task ids as numbers (01 and 1 are then one task)")
    data.add_argument("--kind", choices=["auto", *KINDS], default="auto",
                      help="the problem, which sets the loss every model fits (default auto: "
                      "two distinct target values are a binary classification, three or more "
                      "labels that are not numbers a multi-class one, more numbers a "
                      "regression; --exposure means count): count (Poisson), multiclass "
                      "(multinomial logistic), quantile (pinball loss), robust (Huber)")
    data.add_argument("--exposure", metavar="COL",
                      help="counts: the column of each row's exposure (> 0; time or size "
                      "observed): the models fit the rate target / exposure with "
                      "sample_weight=exposure, and predict counts as rate x exposure; means "
                      "--kind count")
    pb.add_argument("--quantile", type=float, default=None, metavar="Q",
                    help=f"--kind quantile: the quantile in (0, 1) the models predict "
                    f"(default {DEFAULT_QUANTILE:g}, the median)")
    pb.add_argument("--epsilon", type=float, default=None, metavar="E",
                    help=f"--kind robust: Huber's threshold in scales, > 1 (default "
                    f"{DEFAULT_EPSILON:g})")


def _add_task_arguments(pb: argparse.ArgumentParser) -> None:
    """What the user knows about the tasks: their order in time, a graph between them."""
    tasks = pb.add_argument_group("what you know about the tasks")
    tasks.add_argument("--task-order", metavar="ID", nargs="+",
                       help="the tasks in time order: every task id once (matched as the data "
                       "keep ids: as written, by value with --numeric-task-ids), or 'sorted' "
                       "(ids sorted, as numbers when they are) or 'given' (the order of the "
                       "data); adds the temporal models")
    tasks.add_argument("--graph", metavar="FILE",
                       help="a task graph: CSV/Parquet of edges (task, task[, weight]), ids "
                       "matched as the data keep them (as written, by value with "
                       "--numeric-task-ids; an unknown id is refused); adds the "
                       "graph-regularized model")


def _add_run_arguments(pb: argparse.ArgumentParser) -> None:
    """The options of the run: the data folder, the splits, the models, the grid and the
    folds, the output, the processes, the seed, resuming and the time limit."""
    from multitask.benchmark import (
        DEFAULT_ALPHA_RATIO,
        DEFAULT_CV,
        DEFAULT_N_ALPHAS,
        DEFAULT_SPLITS,
    )
    from multitask.benchmark_data import DEFAULT_TRAIN_RATIO

    pb.add_argument("--data-dir", metavar="DIR", help="folder of the named data sets other "
                    "than school (default: MULTITASK_DATA, or shared/data beside the clone)")
    pb.add_argument("--splits", type=int, default=None, metavar="N",
                    help=f"number of train/test splits (default {DEFAULT_SPLITS}, or the "
                    "named data set's own default, said in the header; for school the first "
                    "official ones, at most 10)")
    pb.add_argument("--train-ratio", type=float, default=None, metavar="P",
                    help="random per-task splits (per row for a shared design) with this "
                    f"training fraction (default: school's official splits, else "
                    f"{DEFAULT_TRAIN_RATIO:g})")
    pb.add_argument("--models", nargs="+", default=None, metavar="NAME",
                    help="models to fit, e.g. TraceNorm L21Regressor (default: every model "
                    "that applies, or the named data set's own default, said in the header)")
    pb.add_argument("--grid-size", type=int, default=DEFAULT_N_ALPHAS, metavar="N",
                    help=f"values of each model's default grid (default {DEFAULT_N_ALPHAS})")
    pb.add_argument("--grid-ratio", type=float, default=DEFAULT_ALPHA_RATIO, metavar="R",
                    help=f"smallest / largest value of each default grid (default "
                    f"{DEFAULT_ALPHA_RATIO:g}; the path goes on past the weak end when the best "
                    "value is there)")
    pb.add_argument("--cv-folds", type=int, default=DEFAULT_CV, metavar="K",
                    help=f"folds within each task inside the training part (default "
                    f"{DEFAULT_CV})")
    pb.add_argument("--out", default=None, metavar="DIR",
                    help=f"folder of results.csv, splits.csv and results.png (default "
                    f"{DEFAULT_BENCHMARK_OUT}, results/<data>-benchmark for other data)")
    pb.add_argument("--n-jobs", type=int, default=None, metavar="N",
                    help="parallel processes (default: every core)")
    pb.add_argument("--random-state", type=int, default=0,
                    help="seed of the folds and of random splits (default 0)")
    pb.add_argument("--resume", action="store_true",
                    help=f"complete a run stopped before its end (Ctrl-C, --time-limit, a "
                    f"crash): the jobs recorded in --out's {JOURNAL} are not run again; the data "
                    "and the options that change a job's result must be the same (more "
                    "--splits or --models may be added)")
    pb.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                    help="start no job after this many seconds: the run ends with the jobs "
                    f"done written (exit status {EXIT_TIME_LIMIT}); --resume completes it")
    pb.add_argument("--quiet", action="store_true", help="no progress display")
    pb.add_argument("--list-datasets", action="store_true",
                    help="list the data sets known by name and exit")
