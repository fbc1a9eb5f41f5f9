"""Solvers: each returns a :class:`~multitask.solvers.result.SolverResult`."""

from multitask.solvers.fista import fista
from multitask.solvers.result import SolverResult

__all__ = ["SolverResult", "fista"]
