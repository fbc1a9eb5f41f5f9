"""The paper reproductions (``reproductions/``) use the public API of multitask only.

Every module of ``reproductions/`` is parsed: an import from multitask must name a public
module (:data:`PUBLIC_MODULES`) and, for ``from ... import``, names listed in that module's
``__all__`` (or a public submodule); attribute access on an imported multitask module must
use such names too. ``reproductions/ruff.toml`` bans the other modules (ruff's banned-api
rule) as well.
"""

from __future__ import annotations

import ast
import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REPRODUCTIONS = ROOT / "reproductions"
PUBLIC_MODULES = (
    "multitask",
    "multitask.datasets",
    "multitask.metrics",
    "multitask.model_selection",
    "multitask.plotting",
    "multitask.kernels",
    "multitask.progress",
    "multitask.solvers",
    "multitask.penalties",
    "multitask.losses",
)


def _public_names(module: str) -> set[str]:
    names = set(getattr(importlib.import_module(module), "__all__", ()))
    names |= {m.rpartition(".")[2] for m in PUBLIC_MODULES if m.rpartition(".")[0] == module}
    return {n for n in names if not n.startswith("_")}


def violations(source: str, filename: str = "<string>") -> list[str]:
    """Non-public uses of multitask in ``source``: ``'line: what'`` for each."""
    tree = ast.parse(source, filename)
    out: list[str] = []
    aliases: dict[str, str] = {}  # local name -> public multitask module

    def is_multitask(name: str | None) -> bool:
        return name is not None and (name == "multitask" or name.startswith("multitask."))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if not is_multitask(a.name):
                    continue
                if a.name not in PUBLIC_MODULES:
                    out.append(f"{node.lineno}: import {a.name} (not a public module)")
                elif a.asname:
                    aliases[a.asname] = a.name
                elif a.name == "multitask":
                    aliases["multitask"] = "multitask"
                else:
                    out.append(f"{node.lineno}: import {a.name} (use 'from ... import' or 'as')")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and is_multitask(node.module):
            if node.module not in PUBLIC_MODULES:
                out.append(f"{node.lineno}: from {node.module} import ... (not a public module)")
                continue
            public = _public_names(node.module)
            for a in node.names:
                if a.name == "*" or a.name not in public:
                    out.append(f"{node.lineno}: from {node.module} import {a.name} (not in its "
                               "__all__)")
                elif f"{node.module}.{a.name}" in PUBLIC_MODULES:
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in aliases):
            module = aliases[node.value.id]
            if node.attr not in _public_names(module):
                out.append(f"{node.lineno}: {node.value.id}.{node.attr} (not in the __all__ of "
                           f"{module})")
    return out


def _modules() -> list[Path]:
    return sorted(REPRODUCTIONS.rglob("*.py"))


def test_reproductions_folder_has_one_module_per_paper():
    names = {p.stem for p in _modules()}
    assert {"__init__", "__main__", "common", "sparse_low_rank", "robust_dc", "capped_trace",
            "l1inf", "mtmkl"} <= names
    assert not (ROOT / "src" / "multitask" / "experiments" / "sparse_low_rank.py").exists()


@pytest.mark.parametrize("path", _modules(), ids=lambda p: p.name)
def test_every_module_imports_the_public_api_only(path):
    bad = violations(path.read_text(), str(path))
    assert not bad, f"{path.name} uses non-public multitask names:\n" + "\n".join(bad)


def test_the_checker_catches_private_imports():
    bad = violations(
        "from multitask.solvers.fista import ProximalGradient\n"
        "from multitask.metrics import _scores, roc_auc\n"
        "from multitask.estimators import L21Regressor\n"
        "import multitask.data\n"
        "import multitask.metrics as M\n"
        "M.roc_auc, M._matrix_pair\n"
        "from multitask import solvers\n"
        "solvers.make_solver, solvers.base\n")
    assert len(bad) == 6, bad
    assert not violations("from multitask import L21Regressor, MultiTaskCV\n"
                          "from multitask.metrics import roc_auc\n"
                          "import multitask.metrics as M\nM.roc_auc\n"
                          "from .common import log\n")


def test_ruff_config_bans_non_public_modules_only():
    """The ruff list bans no public module (the AST test above is the complete check; the ruff
    rule flags the common cases while editing)."""
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    config = tomllib.loads((REPRODUCTIONS / "ruff.toml").read_text())
    banned = set(config["lint"]["flake8-tidy-imports"]["banned-api"])
    assert "TID251" in config["lint"]["extend-select"]
    assert not banned & set(PUBLIC_MODULES)
    assert {"multitask.data", "multitask.estimators", "multitask.solvers.fista"} <= banned


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed")
def test_ruff_banned_api_rule_fires(tmp_path):
    probe = REPRODUCTIONS / "zz_probe_banned_import.py"
    probe.write_text("from multitask.solvers.fista import ProximalGradient\n\n"
                     "__all__ = [\"ProximalGradient\"]\n")
    try:
        res = subprocess.run(["ruff", "check", "--no-cache", str(probe)], cwd=ROOT,
                             capture_output=True, text=True)
    finally:
        probe.unlink()
    assert res.returncode != 0 and "TID251" in res.stdout
    clean = subprocess.run(["ruff", "check", "--no-cache", "reproductions"], cwd=ROOT,
                           capture_output=True, text=True)
    assert clean.returncode == 0, clean.stdout


def test_list_names_every_experiment():
    res = subprocess.run([sys.executable, "-m", "reproductions", "--list"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    for name in ("sparse-low-rank", "robust-dc", "capped-trace", "l1inf", "mtmkl"):
        assert name in res.stdout
    bad = subprocess.run([sys.executable, "-m", "reproductions", "no-such-paper"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "Unknown experiment" in bad.stderr
