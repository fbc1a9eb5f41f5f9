"""The result record every solver returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class SolverResult:
    """Outcome of a solver run.

    Attributes
    ----------
    coef : ndarray
        The optimization variable at the returned iterate (``W`` itself, or a stacked variable
        for composite models).
    W : ndarray of shape (n_features, n_tasks)
        The weight matrix (``linear_map(coef)``).
    intercept : ndarray of shape (n_tasks,)
        Fitted per-task intercepts (zeros without intercept).
    n_iter : int
        Iterations run.
    objective : ndarray
        Objective value after each iteration.
    converged : bool
        Whether the stopping rule was met before ``max_iter``.
    time : float
        Wall-clock seconds.
    times : ndarray
        Elapsed seconds after each iteration (aligned with ``objective``).
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
    info: dict = field(default_factory=dict)

    @property
    def final_objective(self) -> float:
        """Objective value of the returned iterate."""
        return float(self.info.get("best_objective", self.objective[-1] if len(self.objective)
                                   else np.nan))
