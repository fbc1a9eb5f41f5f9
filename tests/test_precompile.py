"""Kernels compiled ahead of the user's fits (:mod:`multitask.precompile`, ``setup.py``).

* The kernels that common fits use compile to one signature each: the call sites pass one
  set of argument types (C-contiguous float64 arrays, int64 indices, no literal constants),
  so what the build compiled is what a fit asks for, and nothing compiles twice.
* The precompiling fits cover every model of :mod:`multitask.estimators` on every layout,
  with every class in every task, and the build asks for what they import.
* (slow) ``benchmarks/bench_fresh_install.py`` on two models: in a fresh virtual environment
  after ``pip install``, a model's first fit costs at most 2 s of CPU more than its second.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from multitask import precompile

ROOT = Path(__file__).resolve().parents[1]

#: Common fits in a fresh process, compiled kernels forced on; prints the number of compiled
#: signatures of every kernel of the package that ran.
SIGNATURES = r"""
import json, sys, warnings
import numpy as np
from numba.core.registry import CPUDispatcher
from multitask.compiled import set_up
from multitask import precompile
import multitask.estimators as E

set_up()
warnings.simplefilter("ignore")
for name, kind, n_classes in json.loads(sys.argv[1]):
    args, kwargs = precompile._problem(kind, name.endswith("Classifier"), n_classes)
    getattr(E, name)().fit(*args, **kwargs)
out = {}
for mod_name, mod in list(sys.modules.items()):
    if not mod_name.startswith("multitask"):
        continue
    for key, obj in vars(mod).items():
        if isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == mod_name:
            if obj.signatures:
                out[f"{mod_name}.{key}"] = [str(s) for s in obj.signatures]
print(json.dumps(out))
"""

COMMON = [("L21Regressor", "tasks", 2), ("L21Regressor", "long", 2),
          ("L21Regressor", "sparse", 2), ("L21Regressor", "shared", 2),
          ("L21Regressor", "wide-rows", 2), ("IndependentLassoRegressor", "sparse", 2),
          ("TraceNormRegressor", "raw", 2), ("DirtyModelRegressor", "tasks", 2),
          ("L1InfRegressor", "many", 2), ("L21Classifier", "tasks", 2),
          ("L21Classifier", "sparse", 3), ("TraceNormClassifier", "long", 3)]


def test_common_fits_compile_one_signature_per_kernel():
    out = subprocess.run([sys.executable, "-c", SIGNATURES, json.dumps(COMMON)], check=True,
                         capture_output=True, text=True, cwd=ROOT).stdout
    signatures = json.loads(out.strip().splitlines()[-1])
    # the fits ran compiled kernels of the data layer, the solvers and the penalties
    assert any(k.startswith("multitask.data.") for k in signatures)
    assert any(k.startswith("multitask.solvers.") for k in signatures)
    assert any(k.startswith("multitask.penalties.") for k in signatures)
    several = {k: v for k, v in signatures.items() if len(v) > 1}
    assert several == {}


@pytest.mark.parametrize("kind", list(precompile.LAYOUTS))
@pytest.mark.parametrize("n_classes", [2, 3])
def test_every_layout_has_every_class_in_every_task(kind, n_classes):
    (X, y), kwargs = precompile._problem(kind, True, n_classes)
    n, d, m = precompile.LAYOUTS[kind]
    if "task" in kwargs:
        per_task = [y[kwargs["task"] == t] for t in range(m)]
    elif isinstance(X, list):
        per_task = list(y)
    else:
        per_task = list(np.asarray(y).T)
    assert len(per_task) == m
    for labels in per_task:
        assert sorted(set(np.asarray(labels).tolist())) == list(range(n_classes))
    rows = X[0].shape if isinstance(X, list) else X.shape
    assert rows[1] == d


def test_the_cases_cover_every_model_on_every_layout():
    import multitask.estimators as E

    labels = [label for label, _ in precompile._cases()]
    models = [n for n in E.__all__ if n.endswith(("Regressor", "Classifier"))
              and n != "MultitaskKernelClassifier"]
    assert len(models) >= 40
    for name in models:
        classify = name.endswith("Classifier")
        for kind in precompile.LAYOUTS:
            if kind == "raw" and classify:
                continue
            assert f"{name} {kind}" in labels
            if classify and kind in precompile.MULTICLASS_LAYOUTS:
                assert f"{name} {kind} 3 classes" in labels
        assert f"{name} new tasks tasks" in labels and f"{name} new tasks wide" in labels
    assert len(labels) == len(set(labels))


def test_the_build_asks_for_what_the_precompiling_fits_import():
    """``setup.py``'s build requirements are runtime dependencies with the same bounds, and
    the precompiling fits run with those packages alone (the others made unimportable)."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    build = next(ast.literal_eval(node.value) for node in ast.walk(tree)
                 if isinstance(node, ast.Assign)
                 and any(getattr(t, "id", "") == "KERNEL_BUILD_REQUIRES" for t in node.targets))
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later
    runtime = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert set(build) <= set(runtime)
    others = ["pandas", "pyarrow", "matplotlib", "rich", "skops", "dask", "distributed"]
    code = ("import sys\n"
            f"for name in {others!r}:\n"
            "    sys.modules[name] = None\n"
            "from multitask import precompile\n"
            "import multitask.estimators as E\n"
            "for kind in ('tasks', 'sparse'):\n"
            "    args, kwargs = precompile._problem(kind, True, 3)\n"
            "    E.L21Classifier().fit(*args, **kwargs)\n"
            "    E.TraceNormRegressor().fit(*precompile._problem(kind, False)[0],\n"
            "                               **precompile._problem(kind, False)[1])\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


@pytest.mark.slow
def test_first_fit_after_a_fresh_install_compiles_nothing(tmp_path):
    """The acceptance script on two models (a fresh venv that sees the machine's packages,
    the project installed with its build step): first - second fit at most 2 s of CPU."""
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_fresh_install.py"),
                           "--system-site-packages", "--models", "L21Regressor",
                           "TraceNormRegressor", "--size", "100,300,5"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "holds" in proc.stdout and "FAILED" not in proc.stdout
