"""The inner solver of the multi-stage models (capped l1, capped trace norm) under
``solver="auto"``.

A multi-stage model is solved by :class:`~multitask.solvers.multistage.Multistage`, which
solves one convex or non-convex stage problem after another. With ``solver="auto"`` its
stages are solved by the solver that :func:`multitask.solvers.choose` takes (role
``"inner"``) for the first stage's problem among the model's ``_inner_solvers``: the choice
itself stays with the solvers' ``missing`` and ``preference``; a model names its candidates
only. A configured :class:`~multitask.solvers.multistage.Multistage` (given as ``solver``, or
with its own ``inner``) is kept.

Warm starts: where the first stage's penalty is taken at ``W = 0`` (``first_stage="zero"``,
the default: the capped l1 model's weighted l1 with every weight ``alpha``, the capped trace
norm's trace norm), the starting point serves that first stage only, a convex problem whose
solution does not depend on it; the stages after it start from its solution. A warm-started
fit (``warm_start=True``, a regularization path, the cross-validation's paths) therefore
starts its first stage from the previous fit's *first-stage* solution, the nearer point (the
previous final solution has the rows or directions that the later stages left unpenalized
far from it), and reaches the same fit.
"""

from __future__ import annotations

import numpy as np

from multitask.losses import Datafit
from multitask.penalties.base import Penalty
from multitask.solvers import Multistage, Solver, make_auto_solver
from multitask.solvers.result import SolverResult

__all__ = ["StageSolverChoice"]


class StageSolverChoice:
    """Mixin of the multi-stage estimators: the automatic inner solver (module docstring)."""

    #: The candidates of ``solver="auto"`` for the stages (:func:`multitask.solvers.choose`).
    _inner_solvers: tuple[str, ...] = ("fista",)
    #: State kept between fits for the next warm start (module docstring), not part of the
    #: model: left out of copies and model files, and not a fitted attribute.
    _transient: tuple[str, ...] = ("_first_stage_point",)

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

    def _warm_start_point(self, data, shape):
        """The previous fit's first-stage solution (module docstring) where the base would
        warm-start from its solution and the solver takes the first stage at zero; else the
        base's point."""
        coef, intercept = super()._warm_start_point(data, shape)  # type: ignore[misc]
        first = getattr(self, "_first_stage_point", None)
        if coef is None or first is None or first[0].shape != coef.shape:
            return coef, intercept
        return first

    def _run_solver(self, solver: Solver, datafit: Datafit, penalty: Penalty, coef_init,
                    intercept_init) -> SolverResult:
        """Run the solver, keeping the first stage's solution for the next warm start
        (module docstring)."""
        if not (isinstance(solver, Multistage) and solver.first_stage == "zero"):
            self._first_stage_point = None
            return super()._run_solver(solver, datafit, penalty,  # type: ignore[misc]
                                       coef_init, intercept_init)
        kept: list = []

        def keep_first(stage: int, objective: float, W: np.ndarray, b) -> bool:
            if stage == 1:
                kept.append((np.array(W, copy=True),
                             None if b is None else np.array(b, copy=True)))
            return False

        result = solver.solve(datafit, penalty, coef_init=coef_init,
                              intercept_init=intercept_init, callback=keep_first)
        self._first_stage_point = kept[0] if kept else None
        return result

    def __getstate__(self):
        """The state without the first stage's solution of the last fit (a warm start's
        shortcut, not part of the model: a copy or a model file holds the fit only)."""
        state = super().__getstate__()  # type: ignore[misc]
        for name in self._transient:
            state.pop(name, None)
        return state
