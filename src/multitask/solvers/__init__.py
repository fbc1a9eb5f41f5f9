"""Solvers: algorithm objects taking ``(datafit, penalty)``, each returning a
:class:`~multitask.solvers.result.SolverResult`.

Every solver declares the capabilities it needs of the datafit and the penalty
(:attr:`Solver.datafit_requires`, :attr:`Solver.penalty_requires`) and stops on the same
relative optimality measure (:func:`~multitask.solvers.base.optimality`). The estimators pick
one by name (:data:`SOLVERS`, :func:`make_solver`) or take a configured solver object;
``solver="auto"`` is :func:`~multitask.solvers.choice.choose`.

A solver registers itself by being defined: this package imports every public module in it,
so a new solver is one new file (its class with ``name``, ``missing`` and ``preference``).
"""

from __future__ import annotations

import importlib
import pkgutil

from multitask.solvers.active_newton import ActiveSetNewton
from multitask.solvers.admm import QuadraticADMM
from multitask.solvers.base import REGISTRY, Solver, make_solver, optimality
from multitask.solvers.bcd import BlockCoordinateDescent
from multitask.solvers.cd import ResidualCoordinateDescent
from multitask.solvers.choice import Choice, Problem, choose, explain, make_auto_solver
from multitask.solvers.distributed import DistributedProximalGradient, TaskBlocks
from multitask.solvers.divide_conquer import DivideAndConquer, partition_tasks
from multitask.solvers.exact import QuadraticExact
from multitask.solvers.fista import ProximalGradient
from multitask.solvers.ladm import LinearizedADMM
from multitask.solvers.lp import LinearProgram
from multitask.solvers.majorized import MajorizedADMM
from multitask.solvers.multistage import Multistage
from multitask.solvers.newton import ProxNewton
from multitask.solvers.newton_admm import NewtonADMM
from multitask.solvers.result import SolverResult
from multitask.solvers.subgradient import ProjectedSubgradient
from multitask.solvers.task_cd import TaskCoordinateDescent
from multitask.solvers.working_set import WorkingSet

__all__ = [
    "SOLVERS",
    "ActiveSetNewton",
    "BlockCoordinateDescent",
    "Choice",
    "DistributedProximalGradient",
    "DivideAndConquer",
    "LinearProgram",
    "LinearizedADMM",
    "MajorizedADMM",
    "Multistage",
    "ProjectedSubgradient",
    "NewtonADMM",
    "Problem",
    "ProxNewton",
    "ProximalGradient",
    "QuadraticADMM",
    "QuadraticExact",
    "ResidualCoordinateDescent",
    "Solver",
    "SolverResult",
    "TaskBlocks",
    "TaskCoordinateDescent",
    "WorkingSet",
    "choose",
    "explain",
    "make_auto_solver",
    "make_solver",
    "optimality",
    "partition_tasks",
]

# every public module of the package, so that a solver defined in a new file registers itself
for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")

#: Solver names and the (class, fixed settings) each one builds: the live registry
#: (:data:`multitask.solvers.base.REGISTRY`).
SOLVERS = REGISTRY
