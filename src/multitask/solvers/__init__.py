"""Solvers: algorithm objects taking ``(datafit, penalty)``, each returning a
:class:`~multitask.solvers.result.SolverResult`.

Every solver declares the capabilities it needs of the datafit and the penalty
(:attr:`Solver.datafit_requires`, :attr:`Solver.penalty_requires`) and stops on the same
relative optimality measure (:func:`~multitask.solvers.base.optimality`). The estimators pick
one by name (:data:`SOLVERS`, :func:`make_solver`) or take a configured solver object.
"""

from __future__ import annotations

from typing import Any

from multitask.solvers.admm import QuadraticADMM
from multitask.solvers.base import Solver, optimality
from multitask.solvers.bcd import BlockCoordinateDescent
from multitask.solvers.cd import ResidualCoordinateDescent
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
from multitask.solvers.working_set import WorkingSet

__all__ = [
    "SOLVERS",
    "BlockCoordinateDescent",
    "DistributedProximalGradient",
    "DivideAndConquer",
    "LinearProgram",
    "LinearizedADMM",
    "MajorizedADMM",
    "Multistage",
    "ProjectedSubgradient",
    "NewtonADMM",
    "ProxNewton",
    "ProximalGradient",
    "QuadraticADMM",
    "QuadraticExact",
    "ResidualCoordinateDescent",
    "Solver",
    "SolverResult",
    "TaskBlocks",
    "WorkingSet",
    "make_solver",
    "optimality",
    "partition_tasks",
]

#: Solver names and the (class, fixed settings) each one builds.
SOLVERS: dict[str, tuple[type[Solver], dict[str, Any]]] = {
    "fista": (ProximalGradient, {}),
    "pg": (ProximalGradient, {"accelerated": False}),
    "bcd": (BlockCoordinateDescent, {}),
    "cd": (ResidualCoordinateDescent, {}),
    "ladm": (LinearizedADMM, {}),
    "subgradient": (ProjectedSubgradient, {}),
    "lp": (LinearProgram, {}),
    "multistage": (Multistage, {}),
    "exact": (QuadraticExact, {}),
    "admm": (QuadraticADMM, {}),
    "mm": (MajorizedADMM, {}),
    "working_set": (WorkingSet, {}),
    "newton": (ProxNewton, {}),
    "newton_admm": (NewtonADMM, {}),
}


def make_solver(name: str, **settings) -> Solver:
    """Build the solver ``name`` (a key of :data:`SOLVERS`) with the given settings."""
    try:
        cls, fixed = SOLVERS[name]
    except KeyError:
        raise ValueError(f"Unknown solver {name!r}; choose from {sorted(SOLVERS)}.") from None
    return cls(**{**fixed, **settings})
