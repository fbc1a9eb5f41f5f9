"""The first fit after ``pip install``: no compilation in a user's fit (issue 32, item 3).

    python benchmarks/bench_fresh_install.py                 # every model, a fresh venv
    python benchmarks/bench_fresh_install.py --models L21Regressor TraceNormRegressor
    python benchmarks/bench_fresh_install.py --venv DIR      # reuse an installed venv

What it does:

1. makes a fresh virtual environment in a temporary folder (``python -m venv``) and installs
   the repository into it with ``pip install REPO`` (the user's command; pip takes the
   dependencies from its cache or index as usual); the wall and CPU time of the install are
   printed;
2. keeps a copy of the installed package as the install left it (source files, bytecode and
   whatever compiled-kernel cache the install wrote), so that every model below meets the
   install's own state, not the kernels an earlier model compiled;
3. for every model of :mod:`multitask.estimators` (regressors and classifiers; the deprecated
   alias left out) and a few variants of the common ones (a sparse design, a shared design, a
   wide design, three classes), on a generated problem of mid size: the installed package is
   restored to the install's state, then process A fits the model once (the first fit after
   install) and a new process B fits it again (the second fit: whatever A compiled is in the
   cache now). Each process reports the CPU time (user + system, ``time.process_time``) of
   its ``fit`` call alone, one BLAS thread, and the kernels numba compiled during the fit;
4. prints a table: first fit, second fit, first - second, kernels compiled in A; a row whose
   difference exceeds ``--limit`` (2 s of CPU) is marked ``FAILED`` and the script exits
   with status 1.

A helper process is not counted as the user's process: when the install compiles the kernels
(the package's build step does), that CPU is the install's and is printed with it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: One fit in a fresh process: the problem is generated with numpy (no compiled code), then
#: the estimator's ``fit`` alone is timed. Prints one JSON line.
CHILD = r"""
import json, sys, time
import numpy as np
spec = json.loads(sys.argv[1])
from numba.core import event as _ev  # numba imported before the timing, in A and B alike

compiled = []


class _Compiles(_ev.Listener):
    def on_start(self, event):
        pass

    def on_end(self, event):
        f = event.data["dispatcher"].py_func
        if f.__module__.startswith("multitask"):
            compiled.append(f"{f.__module__}.{f.__qualname__}")


_ev.register("numba:compile", _Compiles())

import multitask
import multitask.estimators as E

n, d, m = spec["n"], spec["d"], spec["m"]
rng = np.random.default_rng(spec["seed"])
k = max(d // 20, 2)
W = np.zeros((d, m))
W[:k] = rng.standard_normal((k, m))
classify = spec["model"].endswith("Classifier")


def target(Z):
    s = Z @ W + 0.5 * rng.standard_normal((Z.shape[0], m))
    if not classify:
        return s
    if spec["variant"] == "multiclass":
        return np.digitize(s, np.quantile(s, [1 / 3, 2 / 3], axis=0)[:, 0]).astype(int)
    return (s > np.median(s, axis=0)).astype(int)


variant = spec["variant"]
if variant == "shared":  # one design, one target column per task
    X = rng.standard_normal((n, d))
    args, kwargs = (X, target(X)), {}
elif variant == "sparse":  # long format, a CSR design with 1% non-zeros
    import scipy.sparse as sp
    X = sp.random(n * m, d, density=0.01, format="csr", random_state=spec["seed"],
                  data_rvs=rng.standard_normal)
    task = np.repeat(np.arange(m), n)
    S = target(X)
    args, kwargs = (X, S[np.arange(n * m), task]), {"task": task}
else:  # per-task lists
    Xs = [rng.standard_normal((n, d)) for _ in range(m)]
    ys = [target(X)[:, t] for t, X in enumerate(Xs)]
    args, kwargs = (Xs, ys), {}
est = getattr(E, spec["model"])(**spec.get("params", {}))
t0, w0 = time.process_time(), time.perf_counter()
est.fit(*args, **kwargs)
cpu, wall = time.process_time() - t0, time.perf_counter() - w0
print(json.dumps({"cpu": cpu, "wall": wall, "compiled": compiled,
                  "file": multitask.__file__}))
"""

#: Variants beyond every model on per-task dense designs: (model, variant, size override).
EXTRA_CASES = [
    ("L21Regressor", "sparse", {}),
    ("L21Regressor", "shared", {}),
    ("L21Regressor", "wide", {"n": 100, "d": 5000}),
    ("L21Classifier", "multiclass", {}),
    ("L21Classifier", "sparse", {}),
    ("TraceNormRegressor", "shared", {}),
    ("IndependentLassoRegressor", "sparse", {}),
    # the working sets of the composite models (issue 32's eighth round): wide designs
    ("DirtyModelRegressor", "wide", {"n": 100, "d": 5000}),
    ("DirtyModelClassifier", "wide", {"n": 100, "d": 5000}),
    ("FusedSparseGroupLassoRegressor", "wide", {"n": 100, "d": 5000}),
    ("GraphRegularizedRegressor", "wide", {"n": 100, "d": 5000}),
    ("TemporalGroupLassoRegressor", "wide", {"n": 100, "d": 5000}),
    ("MeanRegularizedRegressor", "wide", {"n": 40, "d": 300}),
]


def run(cmd, *, env=None, cwd=None, capture=True) -> tuple[float, float, str]:
    """Run a command; ``(wall seconds, CPU seconds of it and its children, stdout)``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, text=True,
                          capture_output=capture)
    wall = time.perf_counter() - w0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        sys.stderr.write((proc.stdout or "") + (proc.stderr or ""))
        raise SystemExit(f"FAILED: {' '.join(map(str, cmd))} exited with {proc.returncode}")
    return wall, cpu, proc.stdout or ""


def child_env() -> dict:
    """The environment of the fits: one BLAS thread, no cache folder override, nothing from
    the calling environment's Python path."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "NUMBA_CACHE_DIR", "NUMBA_DISABLE_JIT", "VIRTUAL_ENV")}
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    return env


def make_venv(root: Path, repo: Path, system_site: bool) -> tuple[Path, float, float]:
    """A fresh venv under ``root`` with the repository installed; ``(python, wall, cpu)`` of
    the install."""
    venv = root / "venv"
    cmd = [sys.executable, "-m", "venv", str(venv)]
    if system_site:
        cmd.append("--system-site-packages")
    run(cmd)
    py = venv / "bin" / "python"
    pip = [str(py), "-m", "pip", "install", "--quiet", str(repo)]
    if system_site:  # the machine's dependencies: only the project is installed
        pip.insert(-1, "--no-deps")
    print(f"installing: {' '.join(pip[2:])}", flush=True)
    wall, cpu, _ = run(pip, env=child_env(), cwd=root, capture=False)
    return py, wall, cpu


def package_dir(py: Path, cwd: Path) -> Path:
    code = "import multitask, os; print(os.path.dirname(multitask.__file__))"
    out = run([str(py), "-c", code], env=child_env(), cwd=cwd)[2]
    return Path(out.strip())


def cases(py: Path, cwd: Path, models: list[str] | None, n: int, d: int,
          m: int) -> list[dict]:
    """Every model of the installed :mod:`multitask.estimators` on per-task dense designs,
    then the variants of :data:`EXTRA_CASES`."""
    code = "import json, multitask.estimators as E; print(json.dumps(E.__all__))"
    names = [name for name in json.loads(run([str(py), "-c", code], env=child_env(),
                                             cwd=cwd)[2])
             if name.endswith(("Regressor", "Classifier")) and name != "MultitaskKernelClassifier"]
    out = [{"model": name, "variant": "dense", "n": n, "d": d, "m": m} for name in names]
    for name, variant, size in EXTRA_CASES:
        spec = {"model": name, "variant": variant, "n": n, "d": d, "m": m}
        if variant == "wide":
            spec["variant"] = "dense"
            spec["label"] = "wide"
        spec.update(size)
        out.append(spec)
    if models:
        out = [c for c in out if c["model"] in models]
    return out


def fit_in_new_process(py: Path, spec: dict, cwd: Path, pkg: Path) -> dict:
    _, _, out = run([str(py), "-c", CHILD, json.dumps(spec)], env=child_env(), cwd=cwd)
    info = json.loads(out.strip().splitlines()[-1])
    if not info["file"].startswith(str(pkg)):
        raise SystemExit(f"FAILED: the fit imported {info['file']}, not the installed package")
    return info


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repo", type=Path, default=REPO, help="the project to install")
    p.add_argument("--venv", type=Path, default=None,
                   help="reuse this venv (the project installed in it) instead of a fresh one")
    p.add_argument("--system-site-packages", action="store_true",
                   help="quick variant: the venv sees the machine's packages and only the "
                   "project is installed (--no-deps)")
    p.add_argument("--models", nargs="+", default=None, metavar="NAME")
    p.add_argument("--size", default="200,400,8", metavar="N,D,M",
                   help="rows per task, features, tasks of the generated problems")
    p.add_argument("--limit", type=float, default=2.0,
                   help="largest allowed first - second fit, CPU seconds")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--keep", action="store_true", help="keep the temporary folder")
    a = p.parse_args(argv)
    n, d, m = (int(v) for v in a.size.split(","))
    print(f"load average before: {os.getloadavg()}")
    root = Path(tempfile.mkdtemp(prefix="multitask-fresh-"))
    try:
        if a.venv is None:
            py, wall, cpu = make_venv(root, a.repo.resolve(), a.system_site_packages)
            print(f"install: {wall:.1f} s wall, {cpu:.1f} s CPU (pip and its children)")
        else:
            py = a.venv / "bin" / "python"
        pkg = package_dir(py, root)
        todo = cases(py, root, a.models, n, d, m)
        pristine = root / "pristine"
        shutil.copytree(pkg, pristine, symlinks=True)
        print(f"installed package: {pkg}\n")
        head = (f"{'model':34s} {'variant':10s} {'first s':>8s} {'second s':>8s} "
                f"{'first-second':>12s} {'compiled':>8s}  verdict")
        print(head)
        print("-" * len(head))
        rows, failed = [], []
        for spec in todo:
            spec = {**spec, "seed": a.seed}
            shutil.rmtree(pkg)
            shutil.copytree(pristine, pkg, symlinks=True)  # the install's own state
            first = fit_in_new_process(py, spec, root, pkg)
            second = fit_in_new_process(py, spec, root, pkg)
            diff = first["cpu"] - second["cpu"]
            ok = diff <= a.limit
            label = spec.get("label", spec["variant"])
            print(f"{spec['model']:34s} {label:10s} {first['cpu']:8.2f} {second['cpu']:8.2f} "
                  f"{diff:12.2f} {len(first['compiled']):8d}  "
                  f"{'holds' if ok else 'FAILED'}", flush=True)
            rows.append({**spec, "first": first, "second": second, "diff": diff})
            if not ok:
                failed.append((spec["model"], label, diff, sorted(set(first["compiled"]))))
        print(f"\nload average after: {os.getloadavg()}")
        for row in rows:  # what the install's cache missed, where anything was compiled
            if row["first"]["compiled"]:
                print(f"compiled in the first fit of {row['model']} "
                      f"({row.get('label', row['variant'])}): "
                      f"{', '.join(sorted(set(row['first']['compiled'])))}")
        if failed:
            print(f"\nFAILED: {len(failed)} of {len(rows)} first fits cost more than "
                  f"{a.limit} s of CPU beyond the second:")
            for model, label, diff, kernels in failed:
                print(f"  {model} ({label}): +{diff:.2f} s, compiled {', '.join(kernels)}")
            return 1
        print(f"all {len(rows)} first fits within {a.limit} s of CPU of the second")
        return 0
    finally:
        if a.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
