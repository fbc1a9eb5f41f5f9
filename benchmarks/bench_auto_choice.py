"""The automatic solver choice measured: ``solver="auto"`` against every applicable solver.

    OMP_NUM_THREADS=1 python benchmarks/bench_auto_choice.py [--grid main|others|all]
        [--cap 30] [--only L21 ...] [--json FILE]

For each grid point (a model family, a loss, a shape and a strength) the CPU time of one fit
to the estimator's default ``tol`` with ``solver="auto"`` and with every solver the estimator
accepts that applies to the problem (``missing`` empty: the names ``solver=`` would take),
and the ratio of ``"auto"``'s time over the fastest converged solver's. The acceptance is
``auto / fastest <= 1.5`` at every point.

Data (fixed seed): ``m`` tasks of ``n = 40`` rows each (``--rows``), per-task designs stacked
with a task column; dense standard normal features, or sparse ones (standard normal entries at
uniformly drawn positions, about 50 per row); the regression targets ``y_t = X_t W*_t + noise`` with
``W*`` supported on ``min(d, 10)`` feature rows (normal entries) and noise of half the
signal's standard deviation; the classifiers take ``y > median``. The strength is a fraction of
the estimator's ``alpha_max`` (``--fractions``, default 0.5, 0.1, 0.01: from few active feature
rows to nearly all; for the dirty model both strengths, each that fraction of its top in the
default grid: :data:`SCALE_BOTH`); the share of nonzero feature rows of the fastest fit is
printed (``active``), beside the chooser's estimate of it (``est``: ``Problem.active_share``,
NaN for a penalty without one). Shapes (``m x d``, dense or sparse): the main grid crosses
tasks {10, 1000} with 10 features, tasks {10, 100, 1000} with 300, ``10 x 10^4`` dense, ``100 x
10^4`` sparse and ``10 x 10^5`` sparse, for l2,1, the independent lasso, the trace norm and the
dirty model, squared and logistic losses (``--shapes`` picks others: ``100x300``,
``10x100000s``); ``--grid others`` runs every other model family (both losses) on ``10 x 10``
and ``10 x 300`` dense at ``0.1 alpha_max`` (``--shapes`` and ``--fractions`` pick others there
too).
Skipped, and said so in the output: :data:`SKIPPED`.

Protocol: one BLAS thread, CPU time of the process (``time.process_time``); every solver is
fitted once on a small problem first (numba compilation outside the timings) and ``"auto"``
once, untimed, at each point (the first fit on new data pays one-off costs); a fit under
:data:`BATCH` seconds is repeated until the repeats take that long (their mean is kept). A fit
that runs past ``--cap`` CPU seconds, or past 1.2 times the fastest converged fit so far at
the point (its time no longer changes the ratio; 3 times for the solver ``"auto"`` chose), is
stopped (a ``SIGPROF`` timer; a compiled
kernel finishes its call first) and shows as ``>t``; a fit that ends unconverged
(``converged_`` false) is marked ``*`` and is not a candidate for the fastest; a solver that
runs out of memory (past ``--memory-gb`` of address space, default 16) shows
``out_of_memory``. ``"pg"`` and ``"subgradient"`` are timed only with ``--fallbacks``. Times
are for comparison within one run: on a shared machine their level moves, their ratios much
less (docs/scale.md, "The automatic choice ..." sections: the figures).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

import multitask.estimators as est_mod  # noqa: E402
from multitask.solvers.base import make_solver  # noqa: E402
from multitask.solvers.problem import Problem  # noqa: E402

#: The families of the main grid (name -> regressor and classifier class names).
MAIN = ("L21", "IndependentLasso", "TraceNorm", "DirtyModel")
#: The other families, measured on small shapes.
OTHERS = ("CappedL1", "CappedTrace", "ClusteredMTL", "ConvexASO", "FusedSparseGroupLasso",
          "GraphRegularized", "IndependentRidge", "L1Inf", "MeanRegularized", "MultiTask",
          "Pooled", "RobustFeatureLearning", "RobustMTL", "SparseLowRank", "TaskRelationship",
          "TemporalGroupLasso")
ROWS = 40
#: The families whose strengths all scale with the point's fraction (:func:`strengths`): the
#: dirty model's ``alpha_max`` in ``alpha_group`` is infinite where the default ``alpha_l1``
#: lies below the largest entry of the loss gradient at zero (no ``alpha_group`` then makes
#: zero optimal), and a fraction of it meant nothing there.
SCALE_BOTH = ("DirtyModel",)
#: ``(tasks, features, sparse)`` of the main grid.
MAIN_SHAPES = ((10, 10, False), (1000, 10, False),
               (10, 300, False), (100, 300, False), (1000, 300, False),
               (10, 10_000, False), (100, 10_000, True), (10, 100_000, True))
SKIPPED = ("100 x 10 dense (between 10 and 1000 tasks at 10 features)",
           "1000 x 10000 sparse, 100 x 100000 and 1000 x 100000 sparse (past the cap for "
           "most solvers)", "100 x 10000 and 1000 x 10000 dense (0.3 and 3 GB of design; "
           "100 x 10000 measured sparse)")
OTHER_SHAPES = ((10, 10, False), (10, 300, False))
FRACTIONS = (0.5, 0.1, 0.01)
OTHER_FRACTIONS = (0.1,)
NNZ_PER_ROW = 50
#: A fit under this many CPU seconds is repeated until the repeats take this long.
BATCH = 0.3
#: The fallbacks (``"pg"``: accelerated gradient without momentum; ``"subgradient"``), timed
#: only with ``--fallbacks``: ``"auto"`` ranks them last and they are never the fastest.
FALLBACKS = ("pg", "subgradient")


class OverCap(Exception):
    """A fit ran past the CPU cap."""


def _on_cap(signum, frame):
    raise OverCap


def make_data(m: int, d: int, sparse: bool, classify: bool, seed: int = 0,
              rows: int | None = None):
    """``(X, y, task)``: ``m`` tasks of ``rows`` (default :data:`ROWS`) rows stacked (module
    docstring)."""
    rng = np.random.default_rng(seed)
    per_task = rows or ROWS
    n = m * per_task
    if sparse:
        density = min(1.0, NNZ_PER_ROW / d)
        X = sp.random(n, d, density=density, format="csr", random_state=seed,
                      data_rvs=rng.standard_normal)
    else:
        X = rng.standard_normal((n, d))
    k = min(d, 10)
    support = rng.choice(d, k, replace=False)
    W = np.zeros((d, m))
    W[support] = rng.standard_normal((k, m)) + rng.standard_normal((k, 1))
    task = np.repeat(np.arange(m), per_task)
    signal_ = np.concatenate([np.asarray(X[t * per_task:(t + 1) * per_task] @ W[:, t]).ravel()
                              for t in range(m)])
    y = signal_ + 0.5 * (np.std(signal_) + 1e-12) * rng.standard_normal(n)
    if classify:
        y = (y > np.median(y)).astype(int)
    return X, y, task


def applicable(cls, X, y, task, params=None) -> tuple[str, list[str]]:
    """``(auto's choice, the accepted solvers that apply)`` for ``cls(**params)`` on the data
    (default: the estimator's strengths)."""
    est = cls(**(params or {}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est._validate_params()
        data, _, _ = est._convert(X, y, task)
        datafit = est._make_datafit(data)
        penalty = est._make_penalty(datafit)
        chosen = est._make_solver(datafit, penalty).label
        names = [s for s in est._accepted_solvers()
                 if not make_solver(s).missing(datafit, penalty)]
    return chosen, names


def estimate(cls, X, y, task, params) -> float:
    """The chooser's estimate of the share of nonzero feature rows
    (:attr:`~multitask.solvers.problem.Problem.active_share`; NaN where it has none)."""
    est = cls(**params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est._validate_params()
        data, _, _ = est._convert(X, y, task)
        datafit = est._make_datafit(data)
        share = Problem(datafit, est._make_penalty(datafit)).active_share
    return float("nan") if share is None else float(share)


def timed_fit(est, X, y, task, cap: float) -> tuple[float, object]:
    """``(CPU seconds, fitted estimator)`` of one fit; ``(inf, None)`` past ``cap``."""
    signal.signal(signal.SIGPROF, _on_cap)
    t0 = time.process_time()
    signal.setitimer(signal.ITIMER_PROF, cap)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y, task=task)
    except Exception as exc:  # noqa: BLE001 - the timer may fire inside a compiled call,
        cause: BaseException | None = exc  # which wraps it (SystemError)
        while cause is not None and not isinstance(cause, OverCap):
            cause = cause.__cause__ or cause.__context__
        if cause is None:
            if isinstance(exc, MemoryError):  # a solver's Gram matrices past the memory
                return float("nan"), None
            raise
        return float("inf"), None
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
    return time.process_time() - t0, est


def measure(cls, X, y, task, params: dict, solver: str, cap: float) -> dict:
    """The fit of ``cls(**params, solver=solver)``: CPU time (a fit under
    :data:`BATCH` seconds is repeated until the repeats take that long, and their mean is
    kept), convergence, support; ``time`` is ``inf`` past ``cap``."""
    total, reps, fitted = 0.0, 0, None
    while True:
        est = cls(**params, solver=solver)
        t, est = timed_fit(est, X, y, task, cap)
        if est is None:
            if np.isnan(t):
                return {"time": float("inf"), "converged": False, "stopped": cap,
                        "error": "out of memory"}
            return {"time": float("inf"), "converged": False, "stopped": cap}
        total, reps, fitted = total + t, reps + 1, est
        if total >= BATCH or reps >= 100:
            break
    return {"time": total / reps, "converged": bool(fitted.converged_),
            "label": type(fitted.solver_).__name__, "support": _support(fitted)}


def _support(est) -> float:
    """The share of nonzero feature rows of ``coef_`` (features along the last axis)."""
    W = np.asarray(est.coef_)
    W = W.reshape(-1, W.shape[-1])
    return float(np.mean(np.any(np.abs(W) > 1e-12, axis=0)))


def warm_up(families) -> None:
    """Fit every applicable solver of each family once on a small problem (compilation)."""
    for fam in families:
        for kind in ("Regressor", "Classifier"):
            cls = getattr(est_mod, fam + kind)
            X, y, task = make_data(3, 20, False, kind == "Classifier", seed=1)
            _, names = applicable(cls, X, y, task)
            for s in ["auto", *names]:
                try:
                    timed_fit(cls(solver=s, max_iter=50), X, y, task, 120.0)
                except Exception:  # noqa: BLE001 - a warm-up only
                    pass


def parse_shape(text: str) -> tuple[int, int, bool]:
    """``"100x300"`` (dense) or ``"100x10000s"`` (sparse) -> ``(tasks, features, sparse)``."""
    sparse = text.endswith("s")
    m, d = text.rstrip("s").split("x")
    return int(m), int(d), sparse


def grid(which: str, only, fractions, shapes=None):
    if which in ("main", "all"):
        for fam in MAIN:
            for m, d, sparse in shapes or MAIN_SHAPES:
                for kind in ("Regressor", "Classifier"):
                    for frac in fractions or FRACTIONS:
                        yield fam, kind, m, d, sparse, frac
    if which in ("others", "all"):
        for fam in OTHERS:
            for m, d, sparse in shapes or OTHER_SHAPES:
                for kind in ("Regressor", "Classifier"):
                    for frac in fractions or OTHER_FRACTIONS:
                        yield fam, kind, m, d, sparse, frac
    del only


def _fmt(r: dict) -> str:
    if "error" in r:
        return r["error"].replace(" ", "_")
    if not np.isfinite(r["time"]):
        return f">{r['stopped']:.3g}"
    return f"{r['time']:.3g}" + ("" if r["converged"] else "*")


def strengths(cls, X, y, task, frac: float, fam: str) -> dict:
    """The strengths of a point: for a family of :data:`SCALE_BOTH`, each of them ``frac``
    times its top in the default grid (the estimator's ``_grid_tops``: a strength at or above
    it zeroes its part at ``W = 0``); for the others the path parameter ``frac`` times the
    estimator's ``alpha_max`` (the other strengths at their defaults), or ``frac`` itself where
    that is not finite."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if fam in SCALE_BOTH:
            est = cls()
            est._validate_params()
            data, _, _ = est._convert(X, y, task)
            datafit = est._make_datafit(data)
            tops = est._grid_tops(datafit, est._make_penalty(datafit))
            return {name: frac * float(top[0]) for name, top in tops.items()}
        top = cls().alpha_max(X, y, task=task)
    alpha = frac * top if np.isfinite(top) and top > 0 else frac
    return {cls._path_param or "alpha": alpha}


def run_point(fam, kind, m, d, sparse, frac, cap, fallbacks=False, rows=None) -> dict:
    cls = getattr(est_mod, fam + kind)
    X, y, task = make_data(m, d, sparse, kind == "Classifier", rows=rows)
    params = strengths(cls, X, y, task, frac, fam)
    chosen, names = applicable(cls, X, y, task, params)
    # one untimed fit: the first fit on new data pays one-off costs (memory first touched)
    timed_fit(cls(**params), X, y, task, cap)
    row = {"family": fam, "loss": "squared" if kind == "Regressor" else "logistic",
           "tasks": m, "features": d, "sparse": sparse, "fraction": frac, "auto": chosen,
           "params": params, "estimate": estimate(cls, X, y, task, params), "solvers": {}}
    row["auto_fit"] = measure(cls, X, y, task, params, "auto", cap)
    best = row["auto_fit"]["time"] if row["auto_fit"]["converged"] else cap
    for s in names:
        if s in FALLBACKS and not fallbacks:
            continue
        # a solver slower than 1.2 times the fastest converged fit so far is stopped: its
        # time no longer matters to the ratio (auto's own choice, timed again, gets 3 times:
        # stopped by the machine's noise it would leave the point without a fastest solver)
        slack = 3.0 if s == chosen.split("[")[0].split("(")[0] else 1.2
        r = measure(cls, X, y, task, params, s, min(cap, max(0.5, slack * best)))
        row["solvers"][s] = r
        if r["converged"]:
            best = min(best, r["time"])
    done = {s: r["time"] for s, r in row["solvers"].items() if r["converged"]}
    fastest = min(done, key=done.get) if done else None
    row["fastest"] = fastest
    auto_t = row["auto_fit"]["time"]
    row["ratio"] = (auto_t / done[fastest]) if fastest and done[fastest] > 0 else float("nan")
    sup = row["solvers"].get(fastest, {}).get("support", float("nan")) if fastest else np.nan
    row["active"] = sup
    return row


def limit_memory(gigabytes: float) -> None:
    """Cap the process's address space (``RLIMIT_AS``) at ``gigabytes``: an allocation past it
    raises ``MemoryError`` (shown as ``out_of_memory``) where the system would otherwise kill
    the whole run (a solver's ``d x d`` matrices per task on ``10^4`` features). POSIX only;
    elsewhere nothing is capped."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return
    cap = int(gigabytes * 2**30)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--grid", choices=("main", "others", "all"), default="main")
    p.add_argument("--only", nargs="*", help="families to run (default: the grid's)")
    p.add_argument("--loss", choices=("squared", "logistic"), help="one loss only")
    p.add_argument("--max-tasks", type=int, default=None, help="skip shapes with more tasks")
    p.add_argument("--max-features", type=int, default=None,
                   help="skip shapes with more features")
    p.add_argument("--min-features", type=int, default=None,
                   help="skip shapes with fewer features")
    p.add_argument("--shapes", nargs="*",
                   help="shapes instead of the grid's: TASKSxFEATURES, 's' for sparse")
    p.add_argument("--fractions", type=float, nargs="*",
                   help="fractions of alpha_max (default: 0.5 0.1 0.01 on the main grid, 0.1 "
                        "on the others)")
    p.add_argument("--cap", type=float, default=30.0, help="CPU seconds per fit")
    p.add_argument("--fallbacks", action="store_true", help="time 'pg' and 'subgradient' too")
    p.add_argument("--json", help="write the rows to this file")
    p.add_argument("--rows", type=int, default=None,
                   help=f"rows per task (default {ROWS})")
    p.add_argument("--memory-gb", type=float, default=16.0,
                   help="address space of the process (a solver past it shows out_of_memory "
                        "instead of the system killing the run); 0: no limit")
    a = p.parse_args(argv)
    if a.memory_gb > 0:
        limit_memory(a.memory_gb)
    shapes = [parse_shape(t) for t in a.shapes] if a.shapes else None
    points = [pt for pt in grid(a.grid, a.only, a.fractions, shapes)
              if (not a.only or pt[0] in a.only)
              and (a.loss is None or (pt[1] == "Regressor") == (a.loss == "squared"))
              and (a.max_tasks is None or pt[2] <= a.max_tasks)
              and (a.max_features is None or pt[3] <= a.max_features)
              and (a.min_features is None or pt[3] >= a.min_features)]
    print(f"{len(points)} points; CPU seconds to the default tol, one BLAS thread, cap "
          f"{a.cap:g} s per fit; skipped shapes: " + "; ".join(SKIPPED), flush=True)
    warm_up(sorted({pt[0] for pt in points}))
    rows, worst = [], (0.0, None)
    for pt in points:
        row = run_point(*pt, a.cap, a.fallbacks, a.rows)
        rows.append(row)
        cells = " ".join(f"{s}={_fmt(r)}"
                         for s, r in row["solvers"].items())
        print(f"{row['family']:22s} {row['loss']:8s} m={row['tasks']:<5d} d={row['features']:<6d}"
              f" {'sparse' if row['sparse'] else 'dense ':6s} a={row['fraction']:<5g}"
              f" est={row['estimate']:.2f} active={row['active']:.2f} auto={row['auto']}:"
              f"{_fmt(row['auto_fit'])} fastest={row['fastest']}"
              f" ratio={row['ratio']:.2f} | {cells}", flush=True)
        if np.isfinite(row["ratio"]) and row["ratio"] > worst[0]:
            worst = (row["ratio"], row)
        elif not np.isfinite(row["auto_fit"]["time"]) and row["fastest"]:
            worst = (float("inf"), row)
    if worst[1] is not None:
        w = worst[1]
        print(f"worst auto/fastest: {worst[0]:.2f} ({w['family']} {w['loss']} m={w['tasks']} "
              f"d={w['features']} a={w['fraction']} auto={w['auto']} fastest={w['fastest']})")
    over = [r for r in rows if not (r["ratio"] <= 1.5)]
    blind = [r for r in over if not np.isfinite(r["ratio"])]
    print(f"points over 1.5: {len(over)} of {len(rows)} ({len(blind)} of them without a "
          "converged solver to compare with)")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1, default=float)


if __name__ == "__main__":
    main()
