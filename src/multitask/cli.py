"""The ``multitask`` command line: ``benchmark``, ``fit`` and ``predict``.

``benchmark`` is in :mod:`multitask.cli_benchmark`, ``fit`` and ``predict`` in
:mod:`multitask.cli_fit`.

Examples
--------
::

    multitask benchmark school                      # the main job: every model on School
    multitask benchmark school --splits 10 --out results/school
    multitask benchmark school --models TraceNorm L21 IndependentLasso --splits 5
    multitask benchmark school --train-ratio 0.1 --splits 5
    multitask benchmark --input a.csv --target y --task g   # the main job on your file
    multitask benchmark --input b.parquet --targets y1 y2 y3 --splits 5
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

from multitask.persistence import TerminatedBySignal, signals_raise

REPRODUCE_MOVED = ("multitask: 'reproduce' is not a command any more: paper reproductions are "
                   "run from a clone of the repository with 'python -m reproductions NAME' "
                   "('python -m reproductions --list' lists them).")


# --------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    """The parser of every command (``benchmark``, ``fit``, ``predict``)."""
    parser = argparse.ArgumentParser(
        prog="multitask",
        description="Regularized multi-task learning: the main job (every model on School, a "
        "named data set or your file), and fitting models on your own files.",
        epilog=("examples:\n" + __doc__.split("::", 1)[1].split("\n\n", 2)[1].strip("\n")
                + "\n\npaper reproductions: python -m reproductions NAME (from a clone)")
        if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    from multitask import cli_benchmark, cli_fit

    cli_benchmark.add_command(sub)

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
