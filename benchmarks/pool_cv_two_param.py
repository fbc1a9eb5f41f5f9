"""Pool several runs of ``bench_cv_two_param.py`` into one table, with ratios over the pooled
median of ``L21Regressor``'s CPU.

    python benchmarks/pool_cv_two_param.py --after a1.json a2.json ... [--before b1.json ...]

``L21Regressor``'s own CPU moves by a factor of two between runs of the same code on a
loaded two-core machine, so a ratio from one run moves with it. Here every model's CPU is the
median over the runs that timed it (each run's figure is already the median of its
``--repeats`` fits), and its ratio is over the median of ``L21Regressor``'s CPU over all the
runs of both versions (the baseline's code is the same in both). Printed per problem and
model: CPU, ratio, the number of runs, the solver iterations and the held-out nMSE (of the
last run: they do not change between runs of the same code), and the same for ``--before``.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

BASELINE = "L21Regressor"


def load(paths: list[str]) -> list[dict]:
    """The runs written by ``bench_cv_two_param.py --out``."""
    runs = []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            runs.append(json.load(fh))
    return runs


def pooled(runs: list[dict], problem: str, model: str) -> dict | None:
    """The median CPU over ``runs`` of ``model`` on ``problem``, the number of runs, and the
    iterations and nMSE of the last run; None where no run timed it."""
    rows = [r[problem][model] for r in runs if model in r.get(problem, {})]
    if not rows:
        return None
    return {"cpu": float(np.median([row["cpu"] for row in rows])), "runs": len(rows),
            "iters": rows[-1]["iterations"], "nmse": rows[-1]["test_nmse"]}


def table(after: list[dict], before: list[dict]) -> str:
    """The pooled table of both versions (module docstring)."""
    lines = []
    problems = sorted({p for r in after for p in r}, key=lambda p: (p != "survey", p))
    for problem in problems:
        base = [r[problem][BASELINE]["cpu"] for r in after + before
                if BASELINE in r.get(problem, {})]
        ref = float(np.median(base))
        lines.append(f"{problem}: {BASELINE} pooled median {ref:.3f} s over {len(base)} runs "
                     f"(range {min(base):.3f}-{max(base):.3f})")
        head = f"{'model':33s} {'CPU s':>6s} {'ratio':>6s} {'runs':>4s} {'iters':>7s} {'nMSE':>7s}"
        if before:
            head += f"   (before: {'CPU s':>6s} {'ratio':>6s} {'runs':>4s} {'iters':>7s} " \
                    f"{'nMSE':>7s})"
        lines.append(head)
        models = sorted({m for r in after for m in r.get(problem, {})} - {BASELINE})
        for model in models:
            a = pooled(after, problem, model)
            assert a is not None
            line = (f"{model:33s} {a['cpu']:6.2f} {a['cpu'] / ref:6.2f} {a['runs']:4d} "
                    f"{a['iters']:7d} {a['nmse']:7.4f}")
            b = pooled(before, problem, model) if before else None
            if b is not None:
                line += (f"   (before: {b['cpu']:6.2f} {b['cpu'] / ref:6.2f} {b['runs']:4d} "
                         f"{b['iters']:7d} {b['nmse']:7.4f})")
            lines.append(line)
    return "\n".join(lines)


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--after", nargs="+", required=True, help="runs of the code measured")
    parser.add_argument("--before", nargs="*", default=[], help="runs of the code before")
    args = parser.parse_args(argv)
    out = table(load(args.after), load(args.before))
    print(out)
    return out


if __name__ == "__main__":
    main()
