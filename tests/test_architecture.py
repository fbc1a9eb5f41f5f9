"""The layering rules of docs/architecture.md, checked on the source.

* No module under ``multitask/solvers`` imports a concrete penalty, datafit or kernel class, an
  estimator, or a private name of another module: solvers see penalties and datafits only
  through their declared protocol and capabilities.
* ``import multitask.cli`` imports no reproduction code.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import multitask

PACKAGE = Path(multitask.__file__).parent
SOLVERS = sorted((PACKAGE / "solvers").glob("**/*.py"))

#: What a solver may import from the other layers: the protocols, the data container, the
#: result record and plain functions (prox operators), never a concrete class.
ALLOWED_FROM = {
    "multitask.data": {"MultiTaskData", "check_scalar_param"},
    "multitask.losses": {"Datafit", "DualPoint"},
    "multitask.penalties.base": {"Penalty", "Constraint", "LinearMap", "IdentityMap", "SumMap",
                                 "CAPABILITIES", "DualBound", "ROW_PROX_FAMILIES"},
    "multitask.penalties.prox": None,  # plain functions: any public name
    "multitask.penalties.row_operators": None,  # the row families' operators, plain functions
    "multitask.penalties.row_blocks": None,  # the rows' zero tests: plain functions, a record
}
FORBIDDEN_PREFIXES = ("multitask.estimators", "multitask.kernels", "multitask.model_selection",
                      "multitask.cli", "reproductions")


def _imports(path: Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            yield node.lineno, node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name, []


def _violations(path: Path) -> list[str]:
    out = []
    for line, module, names in _imports(path):
        where = f"{path.name}:{line}"
        if not module.startswith("multitask"):
            continue
        if module.startswith(FORBIDDEN_PREFIXES):
            out.append(f"{where} imports {module}")
            continue
        for name in names:
            if name.startswith("_"):
                out.append(f"{where} imports the private name {name} from {module}")
        if module.startswith("multitask.solvers"):
            continue  # the solvers' own package (its private kernel modules included)
        if any(part.startswith("_") for part in module.split(".")):
            out.append(f"{where} imports the private module {module}")
            continue
        if module in ALLOWED_FROM:
            allowed = ALLOWED_FROM[module]
            bad = [n for n in names if allowed is not None and n not in allowed]
            if bad:
                out.append(f"{where} imports {bad} from {module}")
        elif module.startswith(("multitask.penalties", "multitask.losses")):
            out.append(f"{where} imports from {module} (only the protocols are allowed)")
    return out


@pytest.mark.parametrize("path", SOLVERS, ids=lambda p: p.name)
def test_solver_module_imports_only_protocols(path):
    assert _violations(path) == []


def test_the_import_check_catches_violations(tmp_path):
    bad = tmp_path / "bad_solver.py"
    bad.write_text(
        "from multitask.penalties.norms import L1\n"
        "from multitask.losses import Squared\n"
        "from multitask.estimators import L21Regressor\n"
        "from multitask.kernels.task_similarity import make_task_kernels\n"
        "from multitask.data import _check_finite\n"
        "from multitask.penalties._l1ball_numba import column_l1ball_thresholds\n"
    )
    found = _violations(bad)
    lines = {int(v.split(":")[1].split()[0]) for v in found}
    assert lines == {1, 2, 3, 4, 5, 6}, found


def test_cli_imports_no_reproduction_code():
    code = ("import sys, multitask.cli; "
            "bad = [m for m in sys.modules if m.startswith(('reproductions', "
            "'multitask.experiments.')) and not m.endswith('school_benchmark')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
