"""The ``multitask`` command line: ``benchmark``, ``fit`` and ``predict``.

Examples
--------
::

    multitask benchmark school                      # the main job: every model on School
    multitask benchmark school --splits 10 --out results/school
    multitask benchmark school --models TraceNorm L21 IndependentLasso --splits 5
    multitask benchmark school --train-ratio 0.1 --splits 5
    multitask fit --input a.csv --target y --task g --model L21Regressor --cv --model-file m.skops
    multitask predict --model-file m.skops --input b.csv --output predictions.csv

Paper reproductions are not part of the command: run them from a clone of the repository with
``python -m reproductions NAME`` (``python -m reproductions --list``).

Ctrl-C, SIGTERM and SIGHUP end a command with a one-line message (exit status 130, 143, 129)
and remove any file being written; the previous version of that file stays as it was.

Importing this module is cheap: each command imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from multitask.persistence import TerminatedBySignal, signals_raise

#: Default output folder of ``multitask benchmark school`` (relative to the current folder).
DEFAULT_BENCHMARK_OUT = "results/school-benchmark"

REPRODUCE_MOVED = ("multitask: 'reproduce' is not a command any more: paper reproductions are "
                   "run from a clone of the repository with 'python -m reproductions NAME' "
                   "('python -m reproductions --list' lists them).")


# --------------------------------------------------------------------------- benchmark
def cmd_benchmark(args) -> int:
    """``multitask benchmark school``: run, print the table, write results.csv and a PNG."""
    from multitask import benchmark as bench

    res = bench.run_school(args.splits, args.models, train_ratio=args.train_ratio,
                           n_alphas=args.grid_size, alpha_ratio=args.grid_ratio,
                           cv=args.cv_folds, n_jobs=args.n_jobs,
                           random_state=args.random_state, show_progress=not args.quiet)
    print(bench.format_table(res, cv=args.cv_folds))
    out = Path(args.out)
    bench.write_csv(res.rows, out / "results.csv", bench.RESULT_COLUMNS)
    bench.write_csv(res.split_rows, out / "splits.csv", bench.SPLIT_COLUMNS)
    wrote = [out / "results.csv", out / "splits.csv"]
    png = _save_figure(res, out / "results.png")
    if png is not None:
        wrote.append(png)
    print(f"\n{len(res.rows)} models in {res.seconds:.0f} s; wrote "
          + ", ".join(str(p) for p in wrote)
          + ("" if png is not None else " (no figure: pip install 'multitask[plot]')"))
    return 0


def _save_figure(res, path: Path) -> Path | None:
    """Save the benchmark's figure atomically; None without matplotlib."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return None
    from multitask import benchmark as bench
    from multitask.persistence import atomic_write

    fig = bench.plot_school(res)
    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png"))
    return path


def _add_benchmark(sub) -> None:
    from multitask.benchmark import (
        DEFAULT_ALPHA_RATIO,
        DEFAULT_CV,
        DEFAULT_N_ALPHAS,
        DEFAULT_SPLITS,
    )

    pb = sub.add_parser(
        "benchmark",
        help="run the School benchmark: every model, hyper-parameters by CV",
        description="Fit every School-capable regressor of the library on School, each with "
        "its hyper-parameters chosen by cross-validation within schools inside the training "
        "part; print test nMSE and aMSE sorted by nMSE, and write results.csv, splits.csv and "
        "results.png (with matplotlib) to --out.",
        epilog="examples:\n  multitask benchmark school\n"
        "  multitask benchmark school --splits 10 --out results/school\n"
        "  multitask benchmark school --models TraceNorm L21 IndependentLasso\n"
        "  multitask benchmark school --train-ratio 0.1 --splits 5",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    pb.add_argument("name", choices=["school"], help="benchmark to run")
    pb.add_argument("--splits", type=int, default=DEFAULT_SPLITS, metavar="N",
                    help=f"number of train/test splits (default {DEFAULT_SPLITS}; the first "
                    "official ones, at most 10)")
    pb.add_argument("--models", nargs="+", default=None, metavar="NAME",
                    help="models to fit, e.g. TraceNorm L21Regressor (default: every "
                    "School-capable regressor of the library)")
    pb.add_argument("--train-ratio", type=float, default=None, metavar="P",
                    help="random per-school splits with this training fraction instead of the "
                    "official splits")
    pb.add_argument("--grid-size", type=int, default=DEFAULT_N_ALPHAS, metavar="N",
                    help=f"values of each model's default grid (default {DEFAULT_N_ALPHAS})")
    pb.add_argument("--grid-ratio", type=float, default=DEFAULT_ALPHA_RATIO, metavar="R",
                    help=f"smallest / largest value of each default grid (default "
                    f"{DEFAULT_ALPHA_RATIO:g}; the path goes on past the weak end when the best "
                    "value is there)")
    pb.add_argument("--cv-folds", type=int, default=DEFAULT_CV, metavar="K",
                    help=f"folds within each school inside the training part (default "
                    f"{DEFAULT_CV})")
    pb.add_argument("--out", default=DEFAULT_BENCHMARK_OUT, metavar="DIR",
                    help=f"folder of results.csv, splits.csv and results.png (default "
                    f"{DEFAULT_BENCHMARK_OUT})")
    pb.add_argument("--n-jobs", type=int, default=None, metavar="N",
                    help="parallel processes (default: every core)")
    pb.add_argument("--random-state", type=int, default=0, help="seed of the folds (default 0)")
    pb.add_argument("--quiet", action="store_true", help="no progress display")
    pb.set_defaults(func=cmd_benchmark)


# --------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    """The parser of every command (``benchmark``, ``fit``, ``predict``)."""
    parser = argparse.ArgumentParser(
        prog="multitask",
        description="Regularized multi-task learning: the School benchmark, and fitting "
        "models on your own files.",
        epilog=("examples:\n" + __doc__.split("::", 1)[1].split("\n\n", 2)[1].strip("\n")
                + "\n\npaper reproductions: python -m reproductions NAME (from a clone)")
        if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_benchmark(sub)
    from multitask import cli_fit

    cli_fit.add_commands(sub)
    return parser


def _command(argv: list[str]) -> str | None:
    """The sub-command named in ``argv`` (its first word that is not an option)."""
    return next((a for a in argv if not a.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
    """Run the command line; the exit status (0 success, 2 error, 128 + signal number when
    interrupted by Ctrl-C, SIGTERM or SIGHUP)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if _command(argv) == "reproduce":
        print(REPRODUCE_MOVED, file=sys.stderr)
        return 2
    with signals_raise():
        try:
            parser = build_parser()
            args = parser.parse_args(argv)
            if hasattr(args, "func"):
                return args.func(args)
            parser.print_help()
            return 0
        except (ValueError, FileNotFoundError, KeyError) as exc:
            print(f"multitask: error: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("multitask: interrupted (Ctrl-C); no file was left half-written.",
                  file=sys.stderr)
            return 128 + signal.SIGINT
        except TerminatedBySignal as exc:
            print(f"multitask: {exc}; no file was left half-written.", file=sys.stderr)
            return 128 + exc.signum


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
