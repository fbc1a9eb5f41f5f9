"""The layering rules of docs/architecture.md, checked on the source.

* No module under ``multitask/solvers`` imports a concrete penalty, datafit or kernel class, an
  estimator, or a private name of another module: solvers see penalties and datafits only
  through their declared protocol and capabilities.
* ``import multitask.cli`` imports no reproduction code.
* No import circle between the modules of ``multitask`` (:func:`import_graph`: every import,
  inside functions and ``if TYPE_CHECKING:`` included, and ``from package import submodule``
  an arrow to the package as well), and a module never imports a name from the
  ``__init__`` of a package holding it: it imports from the module defining the name.
* The solver choice lives in ``multitask/solvers``: no estimator defines ``_auto_solver`` or
  ``_conditioned_solver``, and only the chooser (``solvers/choice.py``) and the solver modules
  that declare a preference ask for one (``.preference(...)``, ``prefer_*``).
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
    "multitask.penalties.fused_rows": None,  # the fused rows' exact minimizers, plain functions
    "multitask.penalties.row_blocks": None,  # the rows' zero tests: plain functions, a record
    # the new-task priors: the form of a new task's problem as a fitted model hands it over (a
    # Gaussian prior has a closed form, a sum of priors is screened, a choice is solved per
    # option), which the per-task solves of solvers/new_tasks.py exist for; never the rule
    # mapping a fitted penalty to its prior (new_task_prior), nor a penalty of fit
    "multitask.penalties.new_task": {"ColumnPrior", "GaussianPrior", "ElementwisePrior",
                                     "ColumnNormPrior", "SumOfPriors", "PriorChoice"},
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


# ----------------------------------------------------------------------------- import circles
def _module_names(root: Path, package: str) -> dict[str, Path]:
    """Every module of the package in ``root / package``, by dotted name (a package by the
    name of its ``__init__``)."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _every_import(tree: ast.AST):
    """Every ``import`` and ``from ... import`` of ``tree``: at module level, inside
    functions (lazy imports), classes, ``try`` and ``if`` blocks alike, the bodies of
    ``if TYPE_CHECKING:`` included (a module naming in its annotations the class that calls it
    depends on it all the same: the shared piece belongs a layer below both, say a
    ``Protocol``)."""
    return [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module name of ``from <node.module> import ...`` written in ``module``."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph(root: Path = PACKAGE.parent, package: str = "multitask"):
    """``(graph, names)``: the modules each module of ``package`` imports, from the source.

    Every import counts (:func:`_every_import`), relative ones resolved; ``import a.b.c``
    is an arrow to ``a.b.c``; ``from a.b import c`` an arrow to the package ``a.b`` (its
    ``__init__`` is read for ``c``) and to the module ``a.b.c`` when there is one (a
    submodule). Running a package's ``__init__`` before ``import a.b.c`` is not an arrow (that
    is how packages work); reading a name from it is. ``names[m][n]``: the names ``m``
    imports from ``n`` that are not submodules (line numbers).
    """
    modules = _module_names(root, package)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    names: dict[str, dict[str, list[tuple[int, str]]]] = {m: {} for m in modules}
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in _every_import(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [(a.name, None) for a in node.names]
            else:
                source = _resolve(module, is_package, node)
                targets = [(source, None)] + [
                    (f"{source}.{a.name}", None) if f"{source}.{a.name}" in modules
                    else (source, a.name) for a in node.names]
            for target, name in targets:
                if target in modules and target != module:
                    graph[module].add(target)
                    if name is not None:
                        names[module].setdefault(target, []).append((node.lineno, name))
    return graph, names


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def _a_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One circle through the first module of ``component``: ``[a, b, ..., a]``."""
    inside = set(component)
    start = component[0]
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:  # breadth first, so the circle shown is a shortest one through start
        following = []
        for node in frontier:
            for child in sorted(graph[node] & inside):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"no circle in {component}")  # pragma: no cover


def import_circles(root: Path = PACKAGE.parent, package: str = "multitask") -> list[str]:
    """Each import circle between modules, as ``a -> b -> ... -> a`` (one per strongly
    connected component of more than one module)."""
    graph, _ = import_graph(root, package)
    return sorted(" -> ".join(_a_cycle(graph, c)) for c in _strongly_connected(graph)
                  if len(c) > 1)


def _defined_at_top(path: Path) -> set[str]:
    """The names a module defines itself at its top level (assignments, functions, classes;
    not what it imports)."""
    out = set()
    for node in ast.parse(path.read_text(), filename=str(path)).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out |= {t.id for t in targets if isinstance(t, ast.Name)}
    return out


def imports_from_own_package(root: Path = PACKAGE.parent, package: str = "multitask"
                             ) -> list[str]:
    """Names a module imports from the ``__init__`` of a package holding it that the
    ``__init__`` does not define itself (rather than from the module defining them)."""
    modules = _module_names(root, package)
    _, names = import_graph(root, package)
    out = []
    for module, sources in names.items():
        for source, found in sources.items():
            if module.startswith(source + "."):
                own = _defined_at_top(modules[source])
                out += [f"{module}:{line} imports {name} from {source}" for line, name in found
                        if name not in own]
    return out


def test_no_import_circle_between_modules():
    assert import_circles() == []


def test_no_module_imports_from_the_package_holding_it():
    assert imports_from_own_package() == []


def test_the_circle_check_catches_circles(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from pkg.a import A\nfrom pkg.k import K\n\nVERSION = 1\n")
    (pkg / "a.py").write_text("A = 1\n\ndef f():\n    from .b import B  # lazy\n    return B\n")
    (pkg / "b.py").write_text("import pkg.a\nB = pkg.a.A\n")
    (pkg / "c.py").write_text("from pkg import A, VERSION\n")  # __init__ defines VERSION
    (pkg / "k.py").write_text("from pkg import a\nK = a.A\n")  # reads the package __init__
    (pkg / "sub" / "__init__.py").write_text("from pkg.sub.d import D\n")
    (pkg / "sub" / "d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.sub.e import E\n"
        "D = 1\n")
    (pkg / "sub" / "e.py").write_text("import pkg.sub.d\nE = pkg.sub.d.D\n")
    (pkg / "sub" / "f.py").write_text("from . import D\n")  # relative, to its own package
    (pkg / "sub" / "g.py").write_text("from pkg.sub import f\n")  # nothing imports g
    assert import_circles(tmp_path, "pkg") == ["pkg -> pkg.k -> pkg",
                                               "pkg.a -> pkg.b -> pkg.a",
                                               "pkg.sub.d -> pkg.sub.e -> pkg.sub.d"]
    assert imports_from_own_package(tmp_path, "pkg") == [
        "pkg.c:1 imports A from pkg", "pkg.sub.f:1 imports D from pkg.sub"]
    (pkg / "k.py").write_text("import pkg.a\nK = pkg.a.A\n")  # the defining module itself
    (pkg / "b.py").write_text("B = 2\n")
    assert import_circles(tmp_path, "pkg") == ["pkg.sub.d -> pkg.sub.e -> pkg.sub.d"]


# ----------------------------------------------------------------------------- the solver choice
ESTIMATORS = sorted((PACKAGE / "estimators").glob("**/*.py"))
#: Methods that decided ``solver="auto"`` on the estimator side before the chooser did.
SOLVER_CHOICE_METHODS = {"_auto_solver", "_conditioned_solver"}


def _defined_functions(tree: ast.AST) -> set[str]:
    return {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef,
                                                             ast.AsyncFunctionDef))}


@pytest.mark.parametrize("path", ESTIMATORS, ids=lambda p: p.name)
def test_no_estimator_defines_the_solver_choice(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    assert _defined_functions(tree) & SOLVER_CHOICE_METHODS == set()


def _preference_uses(path: Path) -> list[str]:
    """Where ``path`` asks for a solver's preference (``x.preference``, a ``prefer_*`` name,
    called, passed or imported), unless it is the chooser or a module declaring one (a solver
    module with a ``preference`` method or a ``prefer_*`` function)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    if path == PACKAGE / "solvers" / "choice.py":
        return []
    defined = _defined_functions(tree)
    if path.is_relative_to(PACKAGE / "solvers") and (
            "preference" in defined or any(n.startswith("prefer_") for n in defined)):
        return []
    out = []
    for node in ast.walk(tree):
        name = (node.attr if isinstance(node, ast.Attribute) else
                node.id if isinstance(node, ast.Name) else None)
        if name is not None and (name == "preference" or name.startswith("prefer_")):
            out.append((node.lineno, f"uses {name}"))
        elif isinstance(node, ast.ImportFrom):
            out += [(node.lineno, f"imports {a.name}") for a in node.names
                    if a.name.startswith("prefer_")]
    return [f"{path.name}:{line} {what}" for line, what in sorted(out)]


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_only_the_chooser_asks_solvers_for_preferences(path):
    assert _preference_uses(path) == []


def test_the_choice_checks_catch_violations(tmp_path, monkeypatch):
    bad = tmp_path / "bad_estimator.py"
    bad.write_text(
        "from multitask.solvers.admm import prefer_admm\n"
        "class E:\n"
        "    def _auto_solver(self, datafit, penalty):\n"
        "        if prefer_admm(datafit, penalty):\n"
        "            return 'admm'\n"
        "        return ProximalGradient.preference(problem)\n")
    assert _defined_functions(ast.parse(bad.read_text())) & SOLVER_CHOICE_METHODS == {
        "_auto_solver"}
    assert _preference_uses(bad) == ["bad_estimator.py:1 imports prefer_admm",
                                     "bad_estimator.py:4 uses prefer_admm",
                                     "bad_estimator.py:6 uses preference"]
