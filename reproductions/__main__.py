"""``python -m reproductions``: run a paper reproduction and print its table.

Examples
--------
::

    python -m reproductions --list
    python -m reproductions sparse-low-rank --dataset yeast --out results/slr-yeast
    python -m reproductions capped-trace --dataset school --repeats 3 --quick
"""

from __future__ import annotations

import argparse
import sys
import time

from reproductions import EXPERIMENTS, load
from reproductions.common import check_rows, format_table, write_outputs


def _common_options(p: argparse.ArgumentParser, datasets: tuple[str, ...]) -> None:
    p.add_argument("--dataset", choices=datasets, default=datasets[0],
                   help=f"data set (default {datasets[0]})")
    p.add_argument("--repeats", type=int, default=None,
                   help="repetitions (splits or draws; default: the paper's protocol)")
    p.add_argument("--out", default=None,
                   help="directory for results.csv, results.png and the experiment's files")
    p.add_argument("--quick", action="store_true",
                   help="a reduced run (smaller grids and data; a smoke test)")
    p.add_argument("--random-state", type=int, default=0, help="seed (default 0)")
    p.add_argument("--n-jobs", type=int, default=None,
                   help="parallel jobs of the cross-validation (joblib; default 1)")
    p.add_argument("--data-dir", default=None,
                   help="folder of the data sets (default: $MULTITASK_DATA or shared/data "
                        "beside the clone)")


def build_parser(name: str) -> argparse.ArgumentParser:
    """The parser of the experiment ``name``: the common options and its own."""
    module = load(name)
    parser = argparse.ArgumentParser(prog=f"python -m reproductions {name}",
                                     description=module.DESCRIPTION)
    _common_options(parser, tuple(module.DATASETS))
    module.add_arguments(parser)
    return parser


def _list() -> None:
    print("Paper reproductions (python -m reproductions NAME --dataset D):")
    for name in EXPERIMENTS:
        module = load(name)
        print(f"  {name:16s} datasets: {', '.join(module.DATASETS)}")
        print(f"  {'':16s} {module.DESCRIPTION}")


USAGE = """usage: python -m reproductions --list
       python -m reproductions NAME --dataset D [--repeats R] [--out DIR] [--quick] [...]
       python -m reproductions NAME --help"""


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    if argv[0] == "--list":
        _list()
        return 0
    name = argv[0]
    try:
        parser = build_parser(name)
    except ValueError as exc:
        print(f"{USAGE}\nerror: {exc}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv[1:])
    args.experiment = name.replace("_", "-")
    if args.repeats is not None and args.repeats < 1:
        parser.error(f"--repeats must be >= 1, got {args.repeats}.")
    t0 = time.perf_counter()
    rows = check_rows(load(name).run(args))
    title = f"{args.experiment} on {args.dataset} ({time.perf_counter() - t0:.0f} s wall)"
    print(format_table(rows, title))
    if args.out:
        files = write_outputs(rows, args.out)
        print("\nwrote " + ", ".join(str(f) for f in files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
