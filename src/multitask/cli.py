"""The ``multitask`` command line.

Examples
--------
::

    multitask benchmark school                      # the main job: baselines on School
    multitask benchmark school --splits 10 --out results/school
    multitask benchmark school --train-ratio 0.1 --splits 5
    multitask reproduce --list                      # every paper experiment
    multitask reproduce capped-trace --dataset school --repeats 3 --out results/ramusa
    multitask fit --input a.csv --target y --task g --model L21Regressor --cv --model-file m.skops
    multitask predict --model-file m.skops --input b.csv --output predictions.csv

Ctrl-C, SIGTERM and SIGHUP end a command with a one-line message (exit status 130, 143, 129)
and remove any file being written; the previous version of that file stays as it was.
"""

from __future__ import annotations

import argparse
import csv
import signal
import sys
import time
from pathlib import Path

from multitask.persistence import TerminatedBySignal, atomic_write, signals_raise


def discover():
    """The paper experiments (imported here, on demand: ``import multitask.cli`` alone does not
    load them)."""
    from multitask.experiments.registry import discover as _discover

    return _discover()


# --------------------------------------------------------------------------- output
def write_results_csv(rows: list[dict], path: Path) -> None:
    """Write result rows to ``path`` atomically (:func:`multitask.persistence.atomic_write`)."""
    from multitask.experiments.registry import RESULT_COLUMNS

    path.parent.mkdir(parents=True, exist_ok=True)

    def write(tmp: str) -> None:
        with open(tmp, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(RESULT_COLUMNS), extrasaction="ignore")
            writer.writeheader()
            for r in rows:
                writer.writerow(r)

    atomic_write(path, write)


def format_table(rows: list[dict], title: str = "") -> str:
    """Plain-text table: setting, method, metric, mean +- std, repeats, fit seconds."""
    header = ("dataset", "setting", "method", "metric", "mean ± std", "repeats", "fit s")
    body = [
        (
            str(r["dataset"]),
            str(r["setting"]),
            str(r["method"]),
            str(r["metric"]),
            f"{r['mean']:.4f} ± {r['std']:.4f}",
            str(r["repeats"]),
            f"{r['fit_seconds']:.2f}",
        )
        for r in rows
    ]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h)
              for i, h in enumerate(header)]
    lines = []
    if title:
        lines.append(title)
    lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    lines.append("  ".join("-" * w for w in widths))
    for b in body:
        lines.append("  ".join(c.ljust(w) for c, w in zip(b, widths, strict=True)))
    return "\n".join(lines)


def plot_results(rows: list[dict], path: Path, metric: str | None = None) -> bool:
    """Bar chart of mean ± std per method (first metric, or ``metric``); False without
    matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    from multitask.plotting import plot_results_bars

    fig = plot_results_bars(rows, metric=metric)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=120, bbox_inches="tight",
                                                   format="png"))
    finally:
        plt.close(fig)
    return True


def _finish(rows: list[dict], args, title: str) -> int:
    print(format_table(rows, title))
    if args.out:
        out = Path(args.out)
        write_results_csv(rows, out / "results.csv")
        made_plot = plot_results(rows, out / "results.png")
        print(f"\nwrote {out / 'results.csv'}" + (f" and {out / 'results.png'}" if made_plot
                                                    else ""))
    return 0


def _progress_printer(label: str):
    t0 = time.perf_counter()

    def report(done: int, total: int) -> None:
        el = time.perf_counter() - t0
        eta = el / done * (total - done) if done else float("nan")
        print(f"[{label}] {done}/{total} done, {el:.0f} s elapsed, ~{eta:.0f} s left",
              file=sys.stderr, flush=True)

    return report


# --------------------------------------------------------------------------- commands
def _common_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default=None,
                   help="directory for results.csv (and results.png with matplotlib)")
    p.add_argument("--random-state", type=int, default=0, help="seed (default 0)")
    p.add_argument("--n-jobs", type=int, default=None, help="parallel jobs (joblib)")
    p.add_argument("--data-dir", default=None,
                   help="folder of the data sets (default: $MULTITASK_DATA or shared/data "
                        "beside the clone)")
    p.add_argument("--quick", action="store_true", help="a reduced run (smoke test)")


def cmd_benchmark(args) -> int:
    experiments = discover()
    exp = experiments["school-benchmark"]
    args.repeats = None
    args.progress = _progress_printer("school")
    rows = exp.run(args)
    return _finish(rows, args, "School benchmark (nMSE = test MSE / Var(test y), pooled; "
                               "aMSE = mean over schools of MSE_t / Var(y_t))")


def cmd_reproduce(args, parser) -> int:
    experiments = discover()
    if args.list or not args.experiment:
        print("Paper experiments (multitask reproduce NAME --dataset D):")
        for name, e in experiments.items():
            print(f"  {name:20s} datasets: {', '.join(e.datasets):35s} {e.description}")
        return 0
    exp = experiments[args.experiment]
    if args.dataset is None:
        args.dataset = exp.datasets[0]
    rows = exp.run(args)
    return _finish(rows, args, f"{exp.name} on {args.dataset}")


def build_parser(experiments: bool = True) -> argparse.ArgumentParser:
    """The parser of every command; ``experiments=False`` leaves out the options of
    ``benchmark`` and ``reproduce`` (no experiment module is imported)."""
    parser = argparse.ArgumentParser(
        prog="multitask",
        description="Regularized multi-task learning: benchmarks, paper reproductions, "
        "fitting models on your data.",
        epilog=("examples:\n" + __doc__.split("::", 1)[1].strip("\n")) if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    # benchmark --------------------------------------------------------------
    pb = sub.add_parser(
        "benchmark",
        help="run a benchmark (school: every baseline, alpha by CV)",
        description="Fit the baseline models on School with alpha chosen by 3-fold "
        "cross-validation inside the training part, over several splits; print nMSE.",
        epilog="examples:\n  multitask benchmark school\n"
        "  multitask benchmark school --splits 10 --out results/school\n"
        "  multitask benchmark school --train-ratio 0.2 --splits 5",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    pb.add_argument("name", choices=["school"], help="benchmark to run")
    found = discover() if experiments else {}
    if found:
        found["school-benchmark"].add_arguments(pb)
    _common_options(pb)

    # reproduce --------------------------------------------------------------
    pr = sub.add_parser(
        "reproduce",
        help="reproduce a paper's experiment (see --list)",
        description="Reproduce the experiments of the papers implemented here.",
        epilog="examples:\n  multitask reproduce --list\n"
        "  multitask reproduce NAME --dataset D --repeats 3 --out results/NAME",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    pr.add_argument("--list", action="store_true", help="list the experiments and exit")
    rsub = pr.add_subparsers(dest="experiment", metavar="EXPERIMENT")
    for name, e in found.items():
        # argparse %-formats help strings: escape the experiment's own text
        pe = rsub.add_parser(name, help=e.description.replace("%", "%%"),
                             description=e.description)
        pe.add_argument("--dataset", choices=list(e.datasets), default=e.datasets[0],
                        help=f"data set (default {e.datasets[0]})")
        pe.add_argument("--repeats", type=int, default=None,
                        help="repetitions (default: the paper's)")
        _common_options(pe)
        if e.add_arguments is not None:
            e.add_arguments(pe)
        pe.add_argument("--list", action="store_true", help=argparse.SUPPRESS)

    try:
        from multitask import cli_fit

        cli_fit.add_commands(sub)
    except ImportError:
        pass
    return parser


def _command(argv: list[str]) -> str | None:
    """The sub-command named in ``argv`` (its first word that is not an option)."""
    return next((a for a in argv if not a.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
    """Run the command line; the exit status (0 success, 2 error, 128 + signal number when
    interrupted by Ctrl-C, SIGTERM or SIGHUP)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    with signals_raise():
        try:
            parser = build_parser(experiments=_command(argv) not in ("fit", "predict"))
            args = parser.parse_args(argv)
            if args.command == "benchmark":
                return cmd_benchmark(args)
            if args.command == "reproduce":
                return cmd_reproduce(args, parser)
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
