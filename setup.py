"""The build of the package: setuptools with the metadata of ``pyproject.toml``, plus one step.

After the sources are copied into the build folder, ``python -m multitask.precompile`` runs
on that copy: its small fits compile every numba kernel the models use into numba's on-disk
cache inside the built package (``multitask/**/__pycache__/*.nbi``, ``*.nbc``), which the
wheel then carries. numba keys that cache on the source files' content, its own version and
the processor, so the first fit after ``pip install .`` loads the kernels instead of
compiling them; where a key differs (another numba, another machine) numba compiles at first
use as it would have anyway.

The small fits need the packages the estimators import: :data:`KERNEL_BUILD_REQUIRES` (the
runtime dependencies of ``pyproject.toml`` that ``import multitask.estimators`` needs, same
bounds) are asked for as build requirements (``setup_requires``, which setuptools' PEP 517
backend hands to pip for the isolated build environment). The step is skipped for editable
installs (the kernels are cached beside the sources at first use) and with
``MULTITASK_PRECOMPILE=0`` in the environment (the build then asks for nothing more); if it
fails, the build goes on and says so (pip shows it with ``-v``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

#: What the precompiling step imports (the bounds of ``pyproject.toml``'s dependencies).
KERNEL_BUILD_REQUIRES = ["numpy>=1.24", "scipy>=1.10", "scikit-learn>=1.5", "numba>=0.59"]


def _precompile() -> bool:
    return os.environ.get("MULTITASK_PRECOMPILE", "1").strip() != "0"


class BuildWithCompiledKernels(build_py):
    """``build_py``, then the kernels compiled into the built package's numba cache."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        if not _precompile():
            print("multitask: MULTITASK_PRECOMPILE=0, kernels not compiled at build")
            return
        build_lib = Path(self.build_lib).resolve()
        package = build_lib / "multitask"
        if not package.is_dir():
            return
        for stale in [*package.rglob("*.nbi"), *package.rglob("*.nbc")]:
            stale.unlink()  # an earlier build's entries: the wheel carries this build's only
        env = {k: v for k, v in os.environ.items()
               if k not in ("NUMBA_CACHE_DIR", "NUMBA_DISABLE_JIT")}
        env["PYTHONPATH"] = os.pathsep.join(
            [str(build_lib)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # numba's files only; pip writes the bytecode
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env.setdefault(var, "1")
        print("multitask: compiling the numba kernels into the package's cache "
              "(python -m multitask.precompile; MULTITASK_PRECOMPILE=0 skips it)", flush=True)
        try:
            proc = subprocess.run([sys.executable, "-m", "multitask.precompile"], env=env,
                                  cwd=build_lib, check=False)
            failed = proc.returncode != 0
        except OSError as exc:
            print(f"multitask: {exc}", flush=True)
            failed = True
        if failed:
            print("multitask: WARNING: the kernels were not compiled at build; each model's "
                  "first fit will compile its own (or run python -m multitask.precompile "
                  "after install)", flush=True)


setup(cmdclass={"build_py": BuildWithCompiledKernels},
      setup_requires=KERNEL_BUILD_REQUIRES if _precompile() else [])
