"""Peak memory of a multinomial l2,1 fit against the size of its data.

The issue's acceptance: a multinomial ``L21Classifier`` fit with 10 classes, 50 tasks and
2,000 sparse features (long format, a CSR design) peaks within 3 times the size of its data,
with no dense copy of the sparse design and no per-class copy of its rows. The fit runs in a
child interpreter that loads the data from ``.npy`` files (no temporary copy: the baseline is
the data itself) and warms every compiled kernel up on a small problem first. The fit's peak
memory is the peak resident set size during the fit minus the resident set size before it (on
Linux the peak is reset first, ``/proc/self/clear_refs``, and read from ``VmHWM``: the fit's
own high-water mark), and tracemalloc's peak (the allocations of numpy and Python objects, not
those of compiled kernels); the script prints each against the size of the data (the bytes of
the CSR arrays, the targets and the task ids), for the whole fit and for its two phases: the
conversion of the input (the data layer's checked copies of the design) and the solve after it
(datafit, penalty and solver, which hold the converted design).

Usage::

    python benchmarks/bench_multinomial_memory.py                       # the acceptance size
    python benchmarks/bench_multinomial_memory.py --tasks 8 --classes 4 --features 1300 \\
        --rows 700 --nnz 40                                             # a quick run

``tests/test_multinomial_memory.py`` runs a small version in the default test suite.

What the ratio depends on: besides the converted design, a fit holds a few arrays of the
size of the weights ``W`` (``n_features x n_tasks n_classes``: the solver's iterates, the
gradient, the certificate's) and a few of ``n_classes`` scores per row. With many rows (the
default, about 100,000) the data dominate; with few rows and many active features the weights
do, and the ratio grows (``--rows 400 --nnz 40 --alpha-ratio 0.1``: most features active).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import scipy.sparse as sp

_CHILD = r"""
import json, resource, sys, time, tracemalloc, warnings
import numpy as np, scipy.sparse as sp
import multitask as mt

folder, alpha_ratio, tol, solver = (sys.argv[1], float(sys.argv[2]), float(sys.argv[3]),
                                    sys.argv[4])

def load(name):
    return np.load(f"{folder}/{name}.npy")

def data_set(prefix):
    X = sp.csr_matrix((load(prefix + "data"), load(prefix + "indices"), load(prefix + "indptr")),
                      shape=tuple(load(prefix + "shape")), copy=False)
    return X, load(prefix + "y"), load(prefix + "task")

def model(alpha):
    return mt.L21Classifier(alpha=alpha, tol=tol, max_iter=100000, solver=solver)

# compile every kernel the fit runs, on the small problem
Xw, yw, tw = data_set("warm_")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    aw = model(1.0).alpha_max(Xw, yw, tw)
    model(alpha_ratio * aw).fit(Xw, yw, tw)
X, y, task = data_set("")
size = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes + y.nbytes + task.nbytes
est = model(1.0)
top = est.alpha_max(X, y, task)  # outside the measure: the fit is what is measured
est.set_params(alpha=alpha_ratio * top)
def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise OSError(key)

def reset_peak():  # the peak resident set size (Linux) of what follows
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")

try:
    reset_peak()
    before, peak = status("VmRSS"), lambda: status("VmHWM")
except OSError:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    reset_peak = lambda: None
convert = est._convert
phases = {}

def converted(*args, **kwargs):  # the conversion's peaks, then the solve's
    out = convert(*args, **kwargs)
    phases["rss"] = peak() - before
    phases["traced"] = tracemalloc.get_traced_memory()[1]
    tracemalloc.reset_peak()
    reset_peak()
    return out

est._convert = converted
tracemalloc.start()
t0 = time.perf_counter()
est.fit(X, y, task)
seconds = time.perf_counter() - t0
traced = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
after = peak()
del est._convert
print(json.dumps({"data_bytes": int(size),
                  "rss_peak_increment": int(max(after - before, phases["rss"])),
                  "traced_peak": int(max(traced, phases["traced"])),
                  "conversion_rss": int(phases["rss"]), "conversion_traced":
                  int(phases["traced"]), "solve_rss": int(after - before),
                  "solve_traced": int(traced), "seconds": seconds,
                  "solver": est.solver_.label, "n_iter": int(est.n_iter_),
                  "converged": bool(est.converged_), "optimality": float(est.optimality_),
                  "selected_features": int(np.count_nonzero(np.any(est.coef_ != 0,
                                                                   axis=(0, 1))))}))
"""


def make_data(n_tasks: int, n_classes: int, n_features: int, rows: int, nnz: int,
              seed: int = 0):
    """Long format: ``rows`` rows per task (sizes vary by +-20%), ``nnz`` stored entries per
    row (CSR), ``n_classes`` classes drawn from a sparse multinomial model shared by the tasks
    up to a perturbation; returns ``(X, y, task)``."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(int(0.8 * rows), int(1.2 * rows) + 1, size=n_tasks)
    N = int(sizes.sum())
    indptr = np.arange(N + 1, dtype=np.int64) * nnz
    indices = np.sort(rng.random((N, n_features)).argpartition(nnz, axis=1)[:, :nnz],
                      axis=1).ravel().astype(np.int32) if n_features * N <= 5e7 else \
        np.sort(rng.integers(0, n_features, size=(N, nnz)), axis=1).ravel().astype(np.int32)
    X = sp.csr_matrix((rng.standard_normal(N * nnz), indices, indptr), shape=(N, n_features))
    X.sum_duplicates()
    task = np.repeat(np.arange(n_tasks), sizes)
    support = rng.choice(n_features, size=max(1, n_features // 20), replace=False)
    B = np.zeros((n_features, n_classes))
    B[support] = 3.0 * rng.standard_normal((len(support), n_classes))
    scores = np.asarray(X @ B) + rng.gumbel(size=(N, n_classes))
    y = np.argmax(scores, axis=1)
    return X, y, task


def _save(folder: str, prefix: str, X, y, task) -> None:
    for name, a in (("data", X.data), ("indices", X.indices), ("indptr", X.indptr),
                    ("shape", np.asarray(X.shape)), ("y", y), ("task", task)):
        np.save(os.path.join(folder, f"{prefix}{name}.npy"), a)


def measure(n_tasks: int = 50, n_classes: int = 10, n_features: int = 2000, rows: int = 2000,
            nnz: int = 50, alpha_ratio: float = 0.5, tol: float = 1e-4, seed: int = 0,
            solver: str = "auto") -> dict:
    """Run the fit in a child interpreter and return its measures (module docstring)."""
    with tempfile.TemporaryDirectory() as folder:
        _save(folder, "", *make_data(n_tasks, n_classes, n_features, rows, nnz, seed))
        _save(folder, "warm_", *make_data(3, n_classes, min(n_features, 300), 40,
                                          min(nnz, 20), seed + 1))
        out = subprocess.run([sys.executable, "-c", _CHILD, folder, str(alpha_ratio),
                              str(tol), solver], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    size = result["data_bytes"]
    result["ratio"] = result["rss_peak_increment"] / size
    result["traced_ratio"] = result["traced_peak"] / size
    result["solve_ratio"] = max(result["solve_rss"], result["solve_traced"]) / size
    result["conversion_ratio"] = max(result["conversion_rss"],
                                     result["conversion_traced"]) / size
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--features", type=int, default=2000)
    parser.add_argument("--rows", type=int, default=2000, help="rows per task (about)")
    parser.add_argument("--nnz", type=int, default=50, help="stored entries per row")
    parser.add_argument("--alpha-ratio", type=float, default=0.5,
                        help="alpha as a fraction of alpha_max")
    parser.add_argument("--tol", type=float, default=1e-4)
    parser.add_argument("--solver", default="auto")
    args = parser.parse_args(argv)
    r = measure(args.tasks, args.classes, args.features, args.rows, args.nnz,
                args.alpha_ratio, args.tol, solver=args.solver)
    mib = 1 << 20
    print(f"multinomial l2,1: {args.tasks} tasks, {args.classes} classes, {args.features} "
          f"sparse features, {args.rows} rows per task, {args.nnz} entries per row")
    print(f"  data                  {r['data_bytes'] / mib:9.1f} MiB")
    coef = 8.0 * args.features * args.tasks * args.classes
    print(f"  one copy of W         {coef / mib:9.1f} MiB   (n_features x n_tasks n_classes: "
          "the solvers hold several)")
    print(f"  peak RSS of the fit   {r['rss_peak_increment'] / mib:9.1f} MiB   ratio "
          f"{r['ratio']:.2f}")
    print(f"  tracemalloc peak      {r['traced_peak'] / mib:9.1f} MiB   ratio "
          f"{r['traced_ratio']:.2f}")
    print(f"    the input's conversion (RSS, tracemalloc) {r['conversion_rss'] / mib:7.1f}, "
          f"{r['conversion_traced'] / mib:7.1f} MiB: ratio {r['conversion_ratio']:.2f}")
    print(f"    the solve after it                         {r['solve_rss'] / mib:7.1f}, "
          f"{r['solve_traced'] / mib:7.1f} MiB: ratio {r['solve_ratio']:.2f}")
    print(f"  solver {r['solver']}, {r['n_iter']} iterations, {r['seconds']:.1f} s, converged "
          f"{r['converged']} (gap {r['optimality']:.1e}), {r['selected_features']} features")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
