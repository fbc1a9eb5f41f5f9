"""Exact solution of a quadratic loss with a ridge penalty, task by task.

For a quadratic datafit ``F(W) = sum_t 0.5 w_t^T H_t w_t - C_t^T w_t`` (``"quadratic"``) and a
penalty ``(c / 2) ||W||_F^2`` (``"row_prox"`` with parameters ``(0, 0, c)``), the tasks
decouple and each solves the linear system ``(H_t + c I) w_t = C_t`` (Cholesky, or least
squares when the matrix is singular). One step, no iteration.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import scipy.linalg

from multitask.losses import Datafit
from multitask.penalties.base import Penalty
from multitask.solvers.base import Solver, finish
from multitask.solvers.result import SolverResult

__all__ = ["QuadraticExact"]


class QuadraticExact(Solver):
    """Closed-form ridge solution per task (module docstring).

    Parameters
    ----------
    max_iter, tol, warn
        Unused by the computation (one linear solve per task); ``tol`` bounds the reported
        optimality measure like every solver's.
    """

    name = "exact"
    datafit_requires = frozenset({"quadratic"})
    penalty_requires = frozenset({"row_prox"})

    def missing(self, datafit: Datafit, penalty: Penalty) -> list[str]:
        out = super().missing(datafit, penalty)
        if not out:
            a, b, _ = penalty.row_prox_params()
            if a != 0 or b != 0:
                out.append(f"the {penalty.name} penalty is not a pure ridge (no closed form)")
        return out

    def solve(self, datafit: Datafit, penalty: Penalty, *, coef_init=None, intercept_init=None,
              callback: Callable | None = None) -> SolverResult:
        """Solve ``(H_t + c I) w_t = C_t`` for every task."""
        self.check(datafit, penalty)
        t0 = time.perf_counter()
        H, C = datafit.quadratic_form()
        c = float(penalty.row_prox_params()[2])
        d, m = C.shape
        W = np.empty((d, m))
        eye = np.eye(d)
        shared = H.shape[0] == 1
        factor = None
        for t in range(m):
            A = (H[0] if shared else H[t]) + c * eye
            try:
                if shared:
                    if factor is None:
                        factor = scipy.linalg.cho_factor(A)
                    W[:, t] = scipy.linalg.cho_solve(factor, C[:, t])
                else:
                    W[:, t] = scipy.linalg.solve(A, C[:, t], assume_a="pos")
            except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
                W[:, t] = scipy.linalg.lstsq(A, C[:, t])[0]
        F = datafit.value(W) + penalty.value(W)
        return finish(self, datafit, penalty, W, None, n_iter=1, objective=[F],
                      times=[time.perf_counter() - t0], converged=True, t0=t0, exhausted=False,
                      info={"best_objective": F})
