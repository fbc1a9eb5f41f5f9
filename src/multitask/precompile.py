"""Compile every numba kernel a fit uses into numba's on-disk cache, ahead of the user's fits.

The package's kernels are compiled with ``cache=True``: numba keeps the machine code beside
each source file (``__pycache__/*.nbi``, ``*.nbc``), keyed on the source file's content, the
kernel's argument types, numba's version and the processor, so a process that finds them
loads them instead of compiling (docs/scale.md, "The first fit after install", gives both
costs). This module fills that cache by
running small fits of every model of :mod:`multitask.estimators` on every design layout (per
task lists, long format, dense and CSR designs, a shared design, wide designs that take
working sets, many tasks, one task; two and three classes; :data:`LAYOUTS`) with the compiled
kernels forced on
(:func:`multitask.compiled.set_up`), so that the argument types compiled are the ones the
fits pass.

The package's build step runs it (``setup.py``): ``pip install .`` leaves the cache in the
installed package, and the first fit after install loads the kernels. Run it again after the
cache was lost (numba upgraded, another processor, an editable install)::

    python -m multitask.precompile              # in up to 4 processes
    python -m multitask.precompile --jobs 1     # in this process

Results do not change: the cache holds the same kernels the first fit would compile.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator

import numpy as np

__all__ = ["LAYOUTS", "MULTICLASS_LAYOUTS", "OPTIONS", "compile_each_kernel_once", "default_jobs",
           "main", "run_cases"]


# --------------------------------------------------------------------------- the problems
#: The layouts every model is fitted on: ``(rows per task, features, tasks)`` and the form of
#: the data. ``tasks``: per-task lists; ``raw``: the same with features of scales 1 to 1000
#: (ill-conditioned Gram matrices, where the solver choice takes ADMM; regressors only);
#: ``long``: long format with a task column; ``sparse``: long format with a CSR design;
#: ``shared``: one design and one target column per task, dense and ``shared-sparse``;
#: ``wide`` and ``wide-rows``: features far above rows (working sets, solved on Gram matrices
#: or on the residuals); ``shared-wide``: one design with features far above rows (working
#: sets with coordinate descent on a shared design); ``many``: more tasks than features;
#: ``single``: one task.
LAYOUTS: dict[str, tuple[int, int, int]] = {
    "tasks": (24, 8, 3),
    "raw": (24, 8, 3),
    "long": (24, 8, 3),
    "sparse": (24, 8, 3),
    "shared": (24, 8, 3),
    "shared-sparse": (24, 8, 3),
    "wide": (12, 120, 3),
    "wide-rows": (60, 300, 3),
    "shared-wide": (60, 300, 3),
    "many": (8, 5, 50),
    "single": (24, 8, 1),
}

#: Layouts fitted with three classes too (the multinomial kernels, dense, CSR and shared).
MULTICLASS_LAYOUTS = ("tasks", "long", "sparse", "shared", "shared-sparse")

#: Non-default options whose kernels the defaults do not reach: ``(model, parameters,
#: layout)``.
OPTIONS: tuple[tuple[str, dict, str], ...] = (
    ("L1InfRegressor", {"constraint": "l1"}, "tasks"),
    ("L1InfClassifier", {"constraint": "l1"}, "tasks"),
    ("MultiTaskKernelClassifier", {"kernel": "rbf"}, "tasks"),
)


def _class_labels(scores: np.ndarray, n_classes: int) -> np.ndarray:
    """Every class in every column: the ranks of the scores cut in ``n_classes`` parts."""
    ranks = np.argsort(np.argsort(scores, axis=0), axis=0)
    return (ranks * n_classes) // scores.shape[0]


def _problem(kind: str, classify: bool, n_classes: int = 2, seed: int = 0):
    """``(args, kwargs)`` of a small fit on layout ``kind`` (:data:`LAYOUTS`)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    n, d, m = LAYOUTS[kind]
    W = np.zeros((d, m))
    k = min(max(4, d // 10), d)  # rows of the true weights (enough to grow a working set)
    W[:k] = rng.standard_normal((k, m))

    def design(rows: int):
        if kind in ("sparse", "shared-sparse"):
            return sp.random(rows, d, density=0.4, format="csr", random_state=seed,
                             data_rvs=rng.standard_normal)
        X = rng.standard_normal((rows, d))
        return X * np.logspace(0, 3, d) if kind == "raw" else X

    def targets(X):
        S = X @ W + 0.3 * rng.standard_normal((X.shape[0], m))
        return _class_labels(S, n_classes) if classify else S

    if kind in ("shared", "shared-sparse", "shared-wide"):
        X = design(n)
        return (X, targets(X)), {}
    if kind in ("long", "sparse"):
        X = design(n * m)
        task = np.repeat(np.arange(m), n)
        y = targets(X)[np.arange(n * m), task]
        if classify:
            y = _class_labels(y.reshape(m, n).T, n_classes).T.ravel()
        return (X, y), {"task": task}
    Xs = [design(n) for _ in range(m)]
    ys = [targets(X)[:, t] for t, X in enumerate(Xs)]
    return (Xs, ys), {}


def _estimators() -> list[str]:
    import multitask.estimators as E

    return [name for name in E.__all__ if name.endswith(("Regressor", "Classifier"))
            and name != "MultitaskKernelClassifier"]  # the deprecated alias


def _cases() -> Iterator[tuple[str, Callable[[], object]]]:
    """``(label, fit)`` of every small fit: every model on every layout (regressors on
    ``raw`` too; classifiers with two classes, and three on :data:`MULTICLASS_LAYOUTS`), the
    fit of new tasks on a fitted model (primal and kernel forms), then :data:`OPTIONS`."""
    import multitask.estimators as E

    def make(cls, kind, classify, n_classes=2, params=None):
        def fit():
            args, kwargs = _problem(kind, classify, n_classes)
            return cls(**(params or {})).fit(*args, **kwargs)
        return fit

    def new_tasks(cls, kind, classify):
        def fit():
            args, _ = _problem(kind, classify)
            more, _ = _problem(kind, classify, seed=1)
            return cls().fit(*args).fit_new_tasks(*more)
        return fit

    for name in _estimators():
        cls = getattr(E, name)
        classify = name.endswith("Classifier")
        for kind in LAYOUTS:
            if kind == "raw" and classify:
                continue  # ill-conditioned logistic fits are slow and reach no other kernel
            yield f"{name} {kind}", make(cls, kind, classify)
            if classify and kind in MULTICLASS_LAYOUTS:
                yield f"{name} {kind} 3 classes", make(cls, kind, classify, 3)
        for kind in ("tasks", "wide"):
            yield f"{name} new tasks {kind}", new_tasks(cls, kind, classify)
    for name, params, kind in OPTIONS:
        yield (f"{name} {params} {kind}",
               make(getattr(E, name), kind, name.endswith("Classifier"), params=params))


def run_cases(*, part: tuple[int, int] = (0, 1), verbose: bool = False) -> dict:
    """Run the small fits of :func:`_cases` (those of index ``k`` modulo ``n`` for
    ``part=(k, n)``) with the compiled kernels forced on (:func:`multitask.compiled.set_up`:
    the interpreted twins would otherwise run such small fits). A fit the model refuses (a
    layout or a class count it does not take) or that fails is passed over. Returns
    ``{"fits": ran, "refused": [labels], "seconds": CPU}``."""
    from multitask.compiled import set_up

    set_up()
    t0 = time.process_time()
    ran = 0
    refused = []
    k, n = part
    for index, (label, fit) in enumerate(_cases()):
        if index % n != k:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit()
        except Exception as exc:  # noqa: BLE001 - a refused case compiles nothing more
            refused.append(f"{label}: {type(exc).__name__}: {str(exc)[:120]}")
            if verbose:
                print(f"  passed over {refused[-1]}", flush=True)
            continue
        ran += 1
        if verbose:
            print(f"  {label}", flush=True)
    return {"fits": ran, "refused": refused, "seconds": time.process_time() - t0}


def compile_each_kernel_once(lock_dir: str) -> None:
    """Make the processes that share ``lock_dir`` compile each kernel of the package once:
    numba's ``Dispatcher.compile`` (which looks in the disk cache first, then compiles and
    writes the cache) runs under an exclusive file lock named after the kernel, so that a
    process that needs a kernel another one is compiling waits and loads it from the cache.

    Without the lock, two processes adding entries to one kernel's cache index at once can
    lose an entry or write two signatures to one data file. A kernel compiled inside another
    one's compilation takes its own lock; the kernels' call graph has no cycle, so no two
    processes wait on each other. POSIX only (``fcntl``)."""
    import fcntl

    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.dispatcher import Dispatcher

    original = Dispatcher.compile
    held: set[str] = set()

    def compile(self, sig):
        name = f"{self.py_func.__module__}.{self.py_func.__qualname__}"
        if not name.startswith("multitask."):  # numba's own uncached helpers
            return original(self, sig)
        with global_compiler_lock:
            if name in held:
                return original(self, sig)
            with open(os.path.join(lock_dir, name), "a") as handle:  # closing it unlocks
                fcntl.flock(handle, fcntl.LOCK_EX)
                held.add(name)
                try:
                    return original(self, sig)
                finally:
                    held.discard(name)

    Dispatcher.compile = compile


def default_jobs() -> int:
    """Processes for :func:`main`: the CPUs this process may use, at most 4 (1 without
    ``fcntl``)."""
    try:
        import fcntl  # noqa: F401
    except ImportError:  # pragma: no cover - not POSIX
        return 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(4, cpus or 1))


def main(argv: list[str] | None = None) -> int:
    """``python -m multitask.precompile [--jobs N] [--verbose]``: fill the cache, print a
    summary."""
    p = argparse.ArgumentParser(prog="python -m multitask.precompile",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--jobs", type=int, default=None,
                   help="processes (default: the CPUs, at most 4)")
    p.add_argument("--verbose", action="store_true", help="print every fit")
    p.add_argument("--part", default=None, help=argparse.SUPPRESS)  # K/N, with --lock-dir
    p.add_argument("--lock-dir", default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.part is not None:  # one of the processes of a parallel run
        k, n = (int(v) for v in a.part.split("/"))
        if a.lock_dir:
            compile_each_kernel_once(a.lock_dir)
        out = run_cases(part=(k, n), verbose=a.verbose)
        print(json.dumps(out))
        return 0
    jobs = default_jobs() if a.jobs is None else a.jobs
    if jobs < 1:
        p.error("--jobs must be at least 1")
    w0 = time.perf_counter()
    if jobs == 1:
        outs = [run_cases(verbose=a.verbose)]
    else:
        with tempfile.TemporaryDirectory(prefix="multitask-kernels-") as lock_dir:
            cmd = [sys.executable, "-m", "multitask.precompile", "--lock-dir", lock_dir]
            procs = [subprocess.Popen([*cmd, "--part", f"{k}/{jobs}"]
                                      + (["--verbose"] if a.verbose else []),
                                      stdout=subprocess.PIPE, text=True)
                     for k in range(jobs)]
            outs = []
            for proc in procs:
                stdout, _ = proc.communicate()
                if proc.returncode != 0:
                    print(stdout, end="")
                    p.exit(1, f"multitask: a precompiling process exited with "
                              f"{proc.returncode}\n")
                lines = stdout.strip().splitlines()
                print("\n".join(lines[:-1]), end="\n" if len(lines) > 1 else "")
                outs.append(json.loads(lines[-1]))
    fits = sum(o["fits"] for o in outs)
    refused = sum(len(o["refused"]) for o in outs)
    cpu = sum(o["seconds"] for o in outs)
    print(f"multitask: {fits} small fits compiled the kernels into numba's cache beside "
          f"{os.path.dirname(os.path.abspath(__file__))} in {time.perf_counter() - w0:.0f} s "
          f"({jobs} process{'es' if jobs > 1 else ''}, {cpu:.0f} s of CPU in the fits; "
          f"{refused} fits a model refuses passed over)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
