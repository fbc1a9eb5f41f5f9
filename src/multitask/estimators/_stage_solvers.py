"""The inner solver of the multi-stage models (capped l1, capped trace norm) under
``solver="auto"``.

A multi-stage model is solved by :class:`~multitask.solvers.multistage.Multistage`, which
solves one convex or non-convex stage problem after another. With ``solver="auto"`` its
stages are solved by the solver that :func:`multitask.solvers.choose` takes (role
``"inner"``) for the first stage's problem among the model's ``_inner_solvers``: the choice
itself stays with the solvers' ``missing`` and ``preference``; a model names its candidates
only. A configured :class:`~multitask.solvers.multistage.Multistage` (given as ``solver``, or
with its own ``inner``) is kept.

Warm starts: a warm-started fit (``warm_start=True``, a regularization path, the
cross-validation's paths) hands the previous fit's solutions of its *convex* stages, by stage
key, to :meth:`Multistage.solve <multitask.solvers.multistage.Multistage.solve>`
(``stage_starts``): a convex stage whose key the previous fit met starts from that fit's
solution of it (the capped l1 model's weighted-l1 stages, the capped trace norm's first
stage, the trace norm), the nearer point; the previous *final* solution has the rows or
directions that the later stages left unpenalized far from it. A convex stage's solution does
not depend on its start, so the fit does not either; the non-convex stages (the truncated
trace norm) start as before.
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
    _transient: tuple[str, ...] = ("_stage_points",)

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

    def _run_solver(self, solver: Solver, datafit: Datafit, penalty: Penalty, coef_init,
                    intercept_init) -> SolverResult:
        """Run the solver, with the previous fit's convex stage solutions as the starts of
        a warm-started fit, keeping this fit's for the next (module docstring)."""
        if not isinstance(solver, Multistage):
            self._stage_points = None
            return super()._run_solver(solver, datafit, penalty,  # type: ignore[misc]
                                       coef_init, intercept_init)
        starts = getattr(self, "_stage_points", None) if coef_init is not None else None
        result = solver.solve(datafit, penalty, coef_init=coef_init,
                              intercept_init=intercept_init, stage_starts=starts)
        # kept on the estimator for the next warm start, not in its solver_info_
        self._stage_points = result.info.pop("stage_points", None)
        return result

    def __getstate__(self):
        """The state without :attr:`_transient` (the last fit's convex stage solutions, a
        warm start's shortcut, not part of the model: a copy or a model file holds the fit
        only)."""
        state = super().__getstate__()  # type: ignore[misc]
        for name in self._transient:
            state.pop(name, None)
        return state
