"""The result record every solver returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["SolverResult"]


@dataclass
class SolverResult:
    """Outcome of a solver run.

    Attributes
    ----------
    coef : ndarray
        The optimization variable at the returned iterate (``W`` itself, or a stacked variable
        ``(k, d, m)`` for the split models ``W = sum_k V[k]``).
    W : ndarray of shape (n_features, n_tasks)
        The weight matrix (``penalty.linear_map.forward(coef)``).
    intercept : ndarray of shape (n_tasks,)
        Fitted per-task intercepts (zeros without intercept).
    n_iter : int
        Iterations run.
    objective : ndarray
        Objective value after each iteration (or each stage / epoch, as the solver documents).
    converged : bool
        Whether the stopping rule was met before the iteration budget.
    time : float
        Wall-clock seconds.
    times : ndarray
        Elapsed seconds after each entry of ``objective``.
    optimality : float
        The relative optimality measure at the returned iterate
        (:func:`multitask.solvers.base.optimality`; NaN where the solver has none).
    intercept_variable : ndarray of shape (n_tasks,) or None
        The solver's intercept variable ``b`` (a warm start resumes from it).
    info : dict
        Solver-specific extras (final step size, residuals, ...).
    """

    coef: np.ndarray
    W: np.ndarray
    intercept: np.ndarray
    n_iter: int
    objective: np.ndarray
    converged: bool
    time: float
    times: np.ndarray = field(default_factory=lambda: np.zeros(0))
    optimality: float = float("nan")
    intercept_variable: np.ndarray | None = None
    info: dict = field(default_factory=dict)

    @property
    def final_objective(self) -> float:
        """Objective value of the returned iterate."""
        if "best_objective" in self.info:
            return float(self.info["best_objective"])
        return float(self.objective[-1]) if len(self.objective) else float("nan")
