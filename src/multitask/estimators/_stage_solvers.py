"""The inner solver of the multi-stage models (capped l1, capped trace norm) under
``solver="auto"``.

A multi-stage model is solved by :class:`~multitask.solvers.multistage.Multistage`, which
solves one convex or non-convex stage problem after another. With ``solver="auto"`` its
stages are solved by the solver that :func:`multitask.solvers.choose` takes (role
``"inner"``) for the first stage's problem among the model's ``_inner_solvers``: the choice
itself stays with the solvers' ``missing`` and ``preference``; a model names its candidates
only. A configured :class:`~multitask.solvers.multistage.Multistage` (given as ``solver``, or
with its own ``inner``) is kept.
"""

from __future__ import annotations

import numpy as np

from multitask.losses import Datafit
from multitask.penalties.base import Penalty
from multitask.solvers import Multistage, Solver, make_auto_solver

__all__ = ["StageSolverChoice"]


class StageSolverChoice:
    """Mixin of the multi-stage estimators: the automatic inner solver (module docstring)."""

    #: The candidates of ``solver="auto"`` for the stages (:func:`multitask.solvers.choose`).
    _inner_solvers: tuple[str, ...] = ("fista",)

    def _make_solver(self, datafit: Datafit, penalty: Penalty) -> Solver:
        """The multi-stage solver; with ``solver="auto"``, its stages solved by the solver the
        chooser takes for the first stage's penalty (the stage penalty at ``W = 0``) among
        ``_inner_solvers``."""
        solver = super()._make_solver(datafit, penalty)  # type: ignore[misc]
        if self.solver != "auto" or not isinstance(solver, Multistage) or solver.inner:
            return solver
        d, m = datafit.data.n_features, datafit.data.n_tasks
        stage = penalty.stage_penalty(np.zeros((d, m)))
        inner = make_auto_solver(datafit, stage, self._inner_solvers, role="inner",
                                 max_iter=int(self.max_iter), tol=float(self.tol))
        return solver.with_params(inner=inner)
