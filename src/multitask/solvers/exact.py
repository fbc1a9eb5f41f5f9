"""Exact solution of a quadratic loss with a quadratic penalty: ridge, and task couplings.

For a quadratic datafit ``F(W) = sum_t 0.5 w_t^T H_t w_t - C_t^T w_t`` (``"quadratic"``) and a
penalty that is a quadratic itself, the minimizer solves a linear system:

* a ridge ``sum_j (c_j / 2) ||W_j.||^2`` (``"row_prox"``, elastic-net rows ``(0, 0, c)``):
  the tasks decouple, ``(H_t + D) w_t = C_t`` with ``D = diag(c)`` (Cholesky, or least
  squares when the matrix is singular);
* plus a task coupling ``tr(W K W^T) / 2`` (``"task_coupling"``: mean regularization, a
  graph or temporal term without its sparsity term)::

      (H_t + D) w_t + sum_s K_ts w_s = C_t      for every task t,

  one system of ``d m`` unknowns. With a design shared by the tasks it is diagonal in the
  eigenvectors ``u_i`` of ``K = U diag(kappa) U^T``: ``W U = [(H + D + kappa_i I)^{-1}
  (C U)_i]_i``, from one eigendecomposition of ``H + D`` (exact, ``O(d^3 + d^2 m + d m^2)``).
  With per-task designs the system is solved densely when ``d m`` is at most
  :data:`DENSE_MAX` (Cholesky on the system scaled to a unit diagonal, or least squares when
  singular, then refined on its residual), else by conjugate gradients preconditioned by the
  exact block diagonal ``(H_t + D + K_tt I)^{-1}`` (from the datafit's cached
  eigendecompositions, :meth:`~multitask.losses.Datafit.quadratic_eigen`).

Conjugate gradients do not lower the residual at every iteration: where the coupling is strong
against the data (a large ``alpha`` on features of very different scales) its norm stalls for
tens of iterations while the error still falls, and a stop after :data:`CG_STALL` iterations
without a new smallest residual left the mean-regularized model of 32 small tasks a relative
duality gap of 2e-2 (its objective 1% above the optimum) although the method converges. So the
stopping rule is the certificate: after a stall the certified duality gap is computed, and
while it exceeds ``tol`` the iterations go on (same iterates) with a stall window twice as
long, up to ``d m`` (the iterations of conjugate gradients in exact arithmetic) or the budget;
where they still do not certify, a system of at most :data:`DENSE_FALLBACK_MAX` unknowns is
solved densely, and the better certified solution kept.

One solve (no iteration over the penalty); the certified duality gap of the result is
reported like every solver's, so ``converged_`` still means certified. Where the system is too
ill-conditioned for its solution to certify at ``tol`` in double precision, the warning says
so and names the model's parameters that help (``tol``, ``alpha``, the features' scale).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable

import numpy as np
import scipy.linalg
from sklearn.exceptions import ConvergenceWarning

from multitask.losses import Datafit
from multitask.penalties.base import Penalty
from multitask.solvers.base import ConjugateGradients, Solver, apply_per_task, finish
from multitask.solvers.certificate import Certificate, duality_gap
from multitask.solvers.problem import Problem
from multitask.solvers.result import SolverResult

__all__ = ["CG_STALL", "DENSE_FALLBACK_MAX", "DENSE_MAX", "QuadraticExact"]

#: Largest number of unknowns ``d m`` of a coupled system with per-task designs that is
#: solved densely (``(d m)^3 / 3`` operations); beyond it, preconditioned conjugate gradients
#: (on School's mean-regularized model, ``d m = 560``: 74 iterations on raw features, 39 on
#: z-scored ones, faster than the dense solve; the figures: docs/tuning_constants.md).
DENSE_MAX = 256

#: Largest ``d m`` solved densely when conjugate gradients stop short of the certified ``tol``
#: (rounding in an ill-conditioned system): a factorization of ``(d m)^3 / 3`` operations.
DENSE_FALLBACK_MAX = 2048

#: Iterations of conjugate gradients without a new smallest residual before the certificate is
#: consulted (the window doubles each time it does not certify).
CG_STALL = 10


def _ridge(penalty: Penalty, d: int) -> np.ndarray:
    """The ridge strengths ``c_j`` of a pure-ridge ``"row_prox"`` penalty, shape ``(d,)``."""
    c = np.asarray(penalty.row_prox_params()[2], dtype=np.float64)
    return np.broadcast_to(c, (d,)).astype(np.float64)


def _solve_spd(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``A^{-1} B`` for a symmetric positive semi-definite ``A``: Cholesky; where rounding
    makes it fail (a nearly singular ``A``), the symmetric indefinite factorization; least
    squares when ``A`` is exactly singular."""
    try:
        return scipy.linalg.solve(A, B, assume_a="pos", check_finite=False)
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
        pass
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
            return scipy.linalg.solve(A, B, assume_a="sym", check_finite=False)
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
        return scipy.linalg.lstsq(A, B, check_finite=False)[0]


def _refined_solve(A: np.ndarray, b: np.ndarray, steps: int = 2) -> np.ndarray:
    """``A^{-1} b`` for a symmetric positive semi-definite ``A``: :func:`_solve_spd` on
    ``S A S`` with ``S = diag(A_ii^{-1/2})`` (unit diagonal: features of different scales
    leave the factorization's pivots alike), then up to ``steps`` rounds of iterative
    refinement ``x += S (S A S)^{-1} S (b - A x)``, each kept where it lowers the residual."""
    diag = np.diag(A).copy()
    scale = 1.0 / np.sqrt(np.where(diag > 0, diag, 1.0))
    As = A * scale[:, None] * scale[None, :]
    x = scale * _solve_spd(As, scale * b)
    best = float(np.linalg.norm(b - A @ x))
    for _ in range(steps):
        step = scale * _solve_spd(As, scale * (b - A @ x))
        res = float(np.linalg.norm(b - A @ (x + step)))
        if not res < best:
            break
        x, best = x + step, res
    return x


class QuadraticExact(Solver):
    """The exact minimizer of a quadratic loss with a quadratic penalty (module docstring).

    Parameters
    ----------
    max_iter, tol, warn
        ``max_iter`` bounds the conjugate-gradient iterations of a large coupled system (at
        least ``d m`` are allowed); ``tol`` bounds the reported certified gap like every
        solver's.
    """

    name = "exact"
    max_preference = 100.0
    datafit_requires = frozenset({"quadratic"})
    penalty_requires = frozenset({"row_prox"})
    handles_smooth_part = True

    @classmethod
    def preference_ceiling(cls, problem: Problem, **settings) -> float:
        """The highest score :meth:`preference` can give ``problem``: ``-inf`` where the
        penalty's rows are not a pure ridge (the check of :meth:`missing`, read from the
        problem's row parameters), else 100."""
        if problem.row_prox is not None:
            family, (a, b, _) = problem.row_prox
            if family != "elastic_net" or np.any(np.asarray(a)) or np.any(np.asarray(b)):
                return float("-inf")
        return 100.0

    @classmethod
    def preference(cls, problem: Problem, **settings) -> float:
        """100: where it applies (a quadratic model) one linear system is the answer."""
        return 100.0

    def missing(self, datafit: Datafit, penalty: Penalty) -> list[str]:
        out = super().missing(datafit, penalty)
        if "smooth" in penalty.capabilities and "task_coupling" not in penalty.capabilities:
            out.append(f"the {penalty.name} penalty has a smooth part that is not a task "
                       "coupling (no linear system)")
        if not out:
            family = getattr(penalty, "row_prox_family", "elastic_net")
            a, b, _ = penalty.row_prox_params()
            if family != "elastic_net" or np.any(np.asarray(a)) or np.any(np.asarray(b)):
                out.append(f"the {penalty.name} penalty is not a pure ridge (nor a ridge with a "
                           "task coupling: no closed form)")
        return out

    def solve(self, datafit: Datafit, penalty: Penalty, *, coef_init=None, intercept_init=None,
              callback: Callable | None = None) -> SolverResult:
        """Solve the linear system (module docstring)."""
        self.check(datafit, penalty)
        t0 = time.perf_counter()
        H, C = datafit.quadratic_form()
        d, m = C.shape
        c = _ridge(penalty, d)
        info: dict = {}
        cert, exhausted = None, False
        if "task_coupling" not in penalty.capabilities:
            W = self._decoupled(H, C, c)
            info["method"] = "per task"
        else:
            K = np.asarray(penalty.task_coupling(), dtype=np.float64)
            if H.shape[0] == 1:
                W = self._shared(H[0], C, c, K)
                info["method"] = "eigenbasis of the coupling"
            elif d * m <= DENSE_MAX:
                W = self._dense(H, C, c, K)
                info["method"] = "dense"
            else:
                W, n_cg, cert, exhausted = self._conjugate_gradients(datafit, penalty, H, C, c,
                                                                     K)
                info["method"] = "preconditioned conjugate gradients"
                info["cg_iterations"] = n_cg
                if (cert is not None and cert.relative_gap > self.tol
                        and d * m <= DENSE_FALLBACK_MAX):
                    W2 = self._dense(H, C, c, K)
                    cert2 = duality_gap(datafit, penalty, W2, None, target=self.tol)
                    if cert2 is not None and cert2.relative_gap < cert.relative_gap:
                        W, cert, exhausted = W2, cert2, False
                        info["method"] = "dense (conjugate gradients did not certify)"
        if cert is None:
            cert = duality_gap(datafit, penalty, W, None, target=self.tol)
        certified = cert is None or cert.relative_gap <= self.tol
        if cert is not None and not certified and not exhausted:
            self._warn_uncertified(cert, info["method"])
        F = datafit.value(W) + penalty.value(W)
        info["best_objective"] = F
        return finish(self, datafit, penalty, W, None, n_iter=1, objective=[F],
                      times=[time.perf_counter() - t0], converged=certified, t0=t0,
                      exhausted=exhausted, info=info, certificate=cert,
                      what="conjugate gradients on the linear system")

    def _warn_uncertified(self, cert: Certificate, method: str) -> None:
        """The linear system was solved (no budget ran out) but its solution does not certify
        at ``tol``: rounding in an ill-conditioned system; say what helps."""
        if not self.warn:
            return
        warnings.warn(
            f"Solver {self.label!r} solved the model's linear system ({method}), but its "
            f"solution is certified only to a relative duality gap of {cert.relative_gap:.2e} "
            f"> tol={self.tol:g} (converged_ is False): the system is too ill-conditioned for "
            "double precision. Standardize the features (their scales differ too much), use a "
            "larger alpha, or raise the model's tol.", ConvergenceWarning, stacklevel=4)

    # ------------------------------------------------------------------ the systems
    @staticmethod
    def _decoupled(H: np.ndarray, C: np.ndarray, c: np.ndarray) -> np.ndarray:
        """``(H_t + diag(c)) w_t = C_t`` task by task (one factorization when shared)."""
        d, m = C.shape
        D = np.diag(c)
        if H.shape[0] == 1:
            A = H[0] + D
            try:
                return scipy.linalg.cho_solve(scipy.linalg.cho_factor(A), C)
            except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
                return scipy.linalg.lstsq(A, C)[0]
        W = np.empty((d, m))
        for t in range(m):
            W[:, t] = _solve_spd(H[t] + D, C[:, t])
        return W

    @staticmethod
    def _shared(H: np.ndarray, C: np.ndarray, c: np.ndarray, K: np.ndarray) -> np.ndarray:
        """One ``H`` for all tasks: ``W U = [(H + D + kappa_i I)^+ (C U)_i]_i``."""
        kappa, U = np.linalg.eigh(K)
        kappa = np.maximum(kappa, 0.0)
        lam, Q = np.linalg.eigh(H + np.diag(c))
        lam = np.maximum(lam, 0.0)
        S = Q.T @ (C @ U)  # (d, m): rotated on both sides
        den = lam[:, None] + kappa[None, :]
        top = float(den.max()) if den.size else 0.0
        ok = den > 1e-14 * max(top, np.finfo(float).tiny)
        S = np.where(ok, S / np.where(ok, den, 1.0), 0.0)
        return Q @ S @ U.T

    @staticmethod
    def _dense(H: np.ndarray, C: np.ndarray, c: np.ndarray, K: np.ndarray) -> np.ndarray:
        """The ``d m`` system, unknowns ordered task by task (``w_0, w_1, ...``)."""
        d, m = C.shape
        A = np.kron(K, np.eye(d))
        for t in range(m):
            block = slice(t * d, (t + 1) * d)
            A[block, block] += H[t] + np.diag(c)
        return _refined_solve(A, C.T.reshape(-1)).reshape(m, d).T

    def _conjugate_gradients(self, datafit: Datafit, penalty: Penalty, H: np.ndarray,
                             C: np.ndarray, c: np.ndarray, K: np.ndarray):
        """Conjugate gradients on ``A(W) = H W + D W + W K = C``, preconditioned by the exact
        solve of the block diagonal ``H_t + D + K_tt I``; stopped by the certificate (module
        docstring): at a residual below ``1e-15`` of ``||C||``, or, after a stall of
        :data:`CG_STALL` iterations (doubling each time), when the certified gap is at most
        ``tol``, the window exceeds ``d m`` or the budget (``max(max_iter, d m)``) is spent.

        Returns ``(W, iterations, certificate, exhausted)``: the iterate of smallest residual,
        its certificate (None when the model has none) and whether the budget ran out."""
        lam, Q = datafit.quadratic_eigen()  # H_t = Q_t diag(lam_t) Q_t^T, ridge included
        QT = np.swapaxes(Q, 1, 2)
        k_diag = np.diag(K)
        uniform_c = bool(np.all(c == c[0])) if c.size else True

        def apply(W: np.ndarray) -> np.ndarray:
            return apply_per_task(H, W) + c[:, None] * W + W @ K

        if uniform_c:
            den = lam.T + (c[0] if c.size else 0.0) + k_diag[None, :]  # (d, m)
            top = float(den.max()) if den.size else 0.0
            ok = den > 1e-14 * max(top, np.finfo(float).tiny)

            def precondition(Rs: np.ndarray) -> np.ndarray:
                S = np.matmul(QT, Rs.T[:, :, None])[:, :, 0].T
                S = np.where(ok, S / np.where(ok, den, 1.0), 0.0)
                return np.matmul(Q, S.T[:, :, None])[:, :, 0].T
        else:  # a per-row ridge is not diagonal in the eigenvectors: factor each block
            D = np.diag(c)
            blocks = [scipy.linalg.cho_factor(H[t] + D + k_diag[t] * np.eye(len(c)))
                      for t in range(C.shape[1])]

            def precondition(Rs: np.ndarray) -> np.ndarray:
                return np.column_stack([scipy.linalg.cho_solve(blocks[t], Rs[:, t])
                                        for t in range(Rs.shape[1])])

        cg = ConjugateGradients(apply, precondition, C)
        target = 1e-15 * float(np.linalg.norm(C))
        best, best_W, stale = np.inf, cg.X.copy(), 0
        budget = max(self.max_iter, C.size)
        window, n, finished = CG_STALL, 0, False
        while True:
            while n < budget:
                n += 1
                res = cg.step()
                if res is None:  # no positive curvature left
                    finished = True
                    break
                if res < best:
                    best, best_W, stale = res, cg.X.copy(), 0
                else:
                    stale += 1
                if res <= target:
                    finished = True
                    break
                if stale >= window:
                    break
            cert = duality_gap(datafit, penalty, best_W, None, target=self.tol)
            if (finished or n >= budget or window >= C.size or cert is None
                    or cert.relative_gap <= self.tol):
                return best_W, n, cert, n >= budget and not finished and not (
                    cert is None or cert.relative_gap <= self.tol)
            window, stale = 2 * window, 0
