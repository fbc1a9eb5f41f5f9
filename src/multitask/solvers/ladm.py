"""Linearized ADMM (LADM) for robust multi-task learning ``W = L + E``.

Robust MTL (Chen, Zhou & Ye, KDD 2011; Pan, Xia, Yin & Liu, "A divide-and-conquer method for
scalable robust multitask learning", IEEE TNNLS 2015) writes the ``(d, m)`` weight matrix as a
low-rank part ``L`` plus a column-sparse part ``E`` whose nonzero columns are outlier tasks.
With the library's loss ``F`` (:mod:`multitask.losses`, ``F = sum_t (1/n_t) sum_i ell``) this
module solves

* ``formulation="penalized"`` (squared or squared-hinge loss)::

      min_{L, E, b}  F(L + E, b) + alpha * (||L||_* + lam * sum_t ||E_.t||_2)

* ``formulation="constrained"`` (squared loss; the paper's eq. (2))::

      min_{L, E}  ||L||_* + lam * sum_t ||E_.t||_2   s.t.  X_t (l_t + e_t) + b_t = y_t for all t

  (with an intercept the constraint is imposed on per-task centred data, which is equivalent).

Both are split on the stacked scores ``s = A(L + E, b)`` (``s_i = x_i^T w_{t(i)} + b_{t(i)}``)
with a slack ``z`` (``z = y`` for the constrained form), multiplier ``c`` and penalty ``mu``;
dividing the penalized objective by ``alpha`` gives the augmented Lagrangian::

    ||L||_* + lam ||E||_{1,2} + F(z) / alpha + <c, s - z> + (mu / 2) ||s - z||^2.

One iteration (the paper's Algorithms 3 and 4, slack step first as its equations (17)-(19)
define it; for the squared hinge the slack is the paper's ``M = 1 - y * z`` and ``c = y * C``)::

    z      = prox_{F / (alpha mu)}(s + c / mu)              (z = y when constrained)
    L, b   = SVT_{tau/mu}(L - tau A^T r),  b - tau sum_t r   r = s - z + c / mu
    E      = ColShrink_{lam tau/mu}(E - tau A^T r')          r' = A(L_new + E, b_new) - z + c / mu
    c      = c + mu (A(L + E, b) - z)

with ``tau = 1 / (1.02 max_t ||[X_t, 1]||_2^2)`` (``tau_rule="max"``; the paper's
``1 / (1.02 ||A||^2)`` with ``A`` all tasks' rows stacked is ``tau_rule="stacked"``).

Modes (see the specification's notes P1 and P2):

* ``mode="paper"``: ``mu0 = 1e-6``, ``mu <- min(1.9 mu, 1e10)`` every iteration, stop when the
  relative changes of ``L`` and ``E`` are both ``<= 1e-5`` (the paper's eq. (25)). Taken
  literally, (25) fires at iteration 1 with ``L = E = 0``; ``guard=True`` (default) evaluates
  it only once ``mu = mu_max`` or ``(L, E) != 0`` with a relative primal residual
  ``<= tol``. With ``rho = 1.9``, ``mu`` reaches ``mu_max`` in about 57 iterations, after
  which the thresholds ``tau / mu`` are ~1e-10 and the iterates freeze: the result is an
  approximate solution (tests measure how far from the optimum it stops).
* ``mode="exact"`` (default): the penalty follows residual balancing (every 10 iterations
  during the first 2000, ``mu`` doubled when the relative primal residual exceeds 10 times the
  relative dual residual, halved in the opposite case; fixed afterwards) and the method stops
  when both residuals are below ``tol`` relative to their scales (Boyd et al.,
  "Distributed optimization and statistical learning via the alternating direction method of
  multipliers", Sec. 3.3-3.4). It reaches the optimum (checked against cvxpy in the tests).

Every product with the data goes through :meth:`MultiTaskData.matvec` / ``rmatvec`` (shared
designs multiplied once for all tasks, sparse designs kept sparse); the SVT and the column
shrinkage are :func:`multitask.penalties._prox.svt_with_values` and
:func:`~multitask.penalties._prox.group_soft_threshold`.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from multitask.data import check_scalar_param
from multitask.losses import Datafit, Squared
from multitask.penalties._prox import group_soft_threshold, safe_svd, svt_with_values
from multitask.solvers.result import SolverResult

__all__ = ["ladm_rmtl", "rmtl_objective", "rmtl_kkt_residuals", "LADM_PAPER_CONSTANTS"]

#: The constants of the paper's Algorithms 3 and 4.
LADM_PAPER_CONSTANTS = {"mu0": 1e-6, "rho": 1.9, "mu_max": 1e10, "tol": 1e-5}
_EXACT_DEFAULTS = {"mu0": None, "rho": 2.0, "mu_max": 1e10, "tol": 1e-5}

_FORMULATIONS = ("penalized", "constrained")
_MODES = ("exact", "paper")
_TAU_RULES = ("max", "stacked")


def rmtl_objective(
    datafit: Datafit,
    L: np.ndarray,
    E: np.ndarray,
    b: np.ndarray | None,
    alpha: float,
    lam: float,
    formulation: str = "penalized",
) -> float:
    """Objective of robust MTL at ``(L, E, b)`` (``L``, ``E`` of shape ``(d, m)``).

    ``penalized``: ``F(L + E, b) + alpha * (||L||_* + lam * sum_t ||E_.t||_2)``;
    ``constrained``: ``||L||_* + lam * sum_t ||E_.t||_2`` (feasibility not checked).
    """
    nuc = float(np.linalg.svd(L, compute_uv=False).sum()) if L.size else 0.0
    reg = nuc + lam * float(np.linalg.norm(E, axis=0).sum())
    if formulation == "constrained":
        return reg
    return datafit.value(L + E, b) + alpha * reg


def rmtl_kkt_residuals(
    L: np.ndarray, E: np.ndarray, Z: np.ndarray, lam: float, rank_tol: float = 1e-8
) -> dict[str, float]:
    """How far ``Z`` is from certifying ``Z in d||L||_*`` and ``Z in lam * d||E||_{1,2}``.

    ``L``, ``E``, ``Z`` have shape ``(d, m)``. At an optimum of robust MTL the negative
    (scaled) gradient of the loss, ``Z = -grad F(L + E) / alpha`` (or ``-A^T c`` from the
    multiplier of LADM), is a subgradient of both norms. With ``L = U diag(s) V^T`` (singular
    values above ``rank_tol * s_1``) and ``S`` the nonzero columns of ``E``, returns

    * ``spectral``: ``max(||Z||_2 - 1, 0)``;
    * ``alignment``: ``max(||U^T Z - V^T||_F, ||Z V - U||_F)`` (zero iff ``Z = U V^T + W`` with
      ``U^T W = 0``, ``W V = 0``);
    * ``support``: ``max_{t in S} ||Z_.t - lam E_.t / ||E_.t|| ||_2``;
    * ``off_support``: ``max(max_{t not in S} ||Z_.t||_2 - lam, 0)``;
    * ``max``: the largest of the four.
    """
    out: dict[str, float] = {}
    out["spectral"] = max(float(np.linalg.norm(Z, 2)) - 1.0, 0.0) if Z.size else 0.0
    U, s, Vt = safe_svd(L)
    r = int(np.count_nonzero(s > rank_tol * (s[0] if s.size else 0.0))) if s.size else 0
    if r and s[0] > 0:
        U, Vt = U[:, :r], Vt[:r]
        out["alignment"] = max(
            float(np.linalg.norm(U.T @ Z - Vt)), float(np.linalg.norm(Z @ Vt.T - U))
        )
    else:
        out["alignment"] = 0.0
    en = np.linalg.norm(E, axis=0)
    zn = np.linalg.norm(Z, axis=0)
    supp = en > 0
    if np.any(supp):
        dev = Z[:, supp] - lam * E[:, supp] / en[supp]
        out["support"] = float(np.max(np.linalg.norm(dev, axis=0)))
    else:
        out["support"] = 0.0
    out["off_support"] = max(float(np.max(zn[~supp])) - lam, 0.0) if np.any(~supp) else 0.0
    out["max"] = max(out.values())
    return out


def _tau(datafit: Datafit, has_b: bool, rule: str) -> float:
    data = datafit.data
    norms = data.task_spectral_norms_sq(intercept=has_b)
    if rule == "max":
        lip = float(np.max(norms)) if norms.size else 1.0
    else:  # the paper's literal rule: the spectral norm of all tasks' rows stacked
        if data.shared:
            lip = float(norms[0]) * data.n_tasks
        else:
            X = data.X
            if sp.issparse(X):
                from scipy.sparse.linalg import svds

                k = min(X.shape) - 1
                lip = (float(svds(X, k=1, return_singular_vectors=False, random_state=0)[0]) ** 2
                       if k >= 1 else float(sp.linalg.norm(X) ** 2))
            else:
                lip = float(np.linalg.norm(X, 2)) ** 2 if X.size else 1.0
            if has_b:
                lip += float(np.max(data.task_sizes))
    if not np.isfinite(lip) or lip <= 0:
        lip = 1.0
    return 1.0 / (1.02 * lip)


def _forward(data, M: np.ndarray) -> np.ndarray:
    """``data.matvec(M)`` skipping the zero columns of ``M`` (outlier parts are column-sparse;
    the first iterates are zero)."""
    nz = np.flatnonzero(np.any(M != 0.0, axis=0))
    if nz.size == 0:
        return np.zeros(data.n_rows)
    if data.shared and nz.size <= data.n_tasks // 2:
        out = np.zeros(data.n_rows)
        out.reshape(data.n_tasks, -1)[nz] = data.subset_tasks(nz).matvec(M[:, nz]).reshape(
            nz.size, -1)
        return out
    return data.matvec(M)


def ladm_rmtl(
    datafit: Datafit,
    alpha: float,
    lam: float,
    *,
    formulation: str = "penalized",
    mode: str = "exact",
    rho: float | None = None,
    mu0: float | None = None,
    mu_max: float | None = None,
    tol: float | None = None,
    tau: float | None = None,
    tau_rule: str = "max",
    guard: bool = True,
    max_iter: int = 10000,
    coef_init: np.ndarray | None = None,
    intercept_init: np.ndarray | None = None,
    callback: Callable | None = None,
    record_objective: bool | None = None,
    warn: bool = True,
) -> SolverResult:
    """Solve robust MTL (``W = L + E``) by linearized ADMM.

    Parameters
    ----------
    datafit : Squared or SquaredHinge
        The loss bound to the training data (any loss with ``prox_scores`` works for
        ``formulation="penalized"``; ``"constrained"`` needs :class:`~multitask.losses.Squared`).
    alpha : float
        Weight of the regularizer (``> 0``; ignored by the constrained formulation).
    lam : float
        Weight of ``sum_t ||E_.t||_2`` relative to ``||L||_*`` (the paper's lambda, ``>= 0``).
    formulation : {"penalized", "constrained"}, default="penalized"
        See the module docstring. The constrained form is infeasible in general when
        ``n_t > d`` (then ``L + E`` tends to each task's least-squares fit).
    mode : {"exact", "paper"}, default="exact"
        Penalty schedule and stopping rule (module docstring).
    rho, mu0, mu_max, tol : float, optional
        Override the mode's constants. ``paper``: ``rho=1.9``, ``mu0=1e-6``, ``mu_max=1e10``,
        ``tol=1e-5``. ``exact``: ``rho=2`` (the factor of residual balancing), ``mu0=1/||y||``
        scale-free default, ``mu_max=1e10``, ``tol=1e-5``.
    tau : float, optional
        Linearization step; default from ``tau_rule``.
    tau_rule : {"max", "stacked"}, default="max"
        ``1 / (1.02 max_t ||[X_t, 1]||^2)`` or the paper's ``1 / (1.02 ||A||^2)``.
    guard : bool, default=True
        Paper mode: evaluate the stopping rule (25) only once ``mu = mu_max`` or at a nonzero
        iterate feasible to ``tol``. ``False`` is the literal rule (stops at iteration 1).
    max_iter : int, default=10000
        Iteration budget (``ConvergenceWarning`` when reached).
    coef_init : ndarray of shape (2, d, m), optional
        Starting ``[L, E]`` (zeros by default, as in the paper).
    intercept_init : ndarray of shape (m,), optional
        Starting intercepts (losses with an intercept variable).
    callback : callable, optional
        ``callback(k, objective, L, E)`` after each iteration; returning True stops.
    record_objective : bool, optional
        Evaluate the objective at every iteration (default: in exact mode, where the best
        iterate is tracked; the paper's rule does not use it, so paper mode records only the
        returned iterate's objective and the history holds NaN before it).
    warn : bool, default=True
        Warn with ``ConvergenceWarning`` when ``max_iter`` is reached.

    Returns
    -------
    SolverResult
        ``coef`` is the stacked ``[L, E]`` of shape ``(2, d, m)``, ``W = L + E``. For the
        penalized form the iterate with the lowest objective is returned, for the constrained
        form the last one. ``info`` holds ``multiplier`` (``c``, shape ``(N,)``),
        ``multiplier_grad`` (``A^T c``, shape ``(d, m)``), ``mu``, ``tau``,
        ``primal_residual`` (relative), ``dual_residual`` (relative), ``rank`` and
        ``primal_history``.
    """
    if formulation not in _FORMULATIONS:
        raise ValueError(f"formulation must be one of {_FORMULATIONS}, got {formulation!r}.")
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {_MODES}, got {mode!r}.")
    if tau_rule not in _TAU_RULES:
        raise ValueError(f"tau_rule must be one of {_TAU_RULES}, got {tau_rule!r}.")
    if formulation == "constrained" and not isinstance(datafit, Squared):
        raise ValueError(
            "formulation='constrained' (the paper's eq. (2)) needs the squared loss; got "
            f"the {datafit.name!r} loss. Use formulation='penalized'."
        )
    lam = check_scalar_param(lam, "lam")
    if formulation == "penalized":
        alpha = check_scalar_param(alpha, "alpha", allow_zero=False)
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter!r}.")
    max_iter = int(max_iter)
    consts = dict(LADM_PAPER_CONSTANTS if mode == "paper" else _EXACT_DEFAULTS)
    for name, val in (("rho", rho), ("mu0", mu0), ("mu_max", mu_max), ("tol", tol)):
        if val is not None:
            consts[name] = check_scalar_param(val, name, allow_zero=False)
    if consts["rho"] < 1.0:
        raise ValueError(f"rho must be >= 1, got {consts['rho']!r}.")

    data = datafit.data
    d, m = data.n_features, data.n_tasks
    has_b = datafit.has_intercept_variable
    if formulation == "constrained" and np.any(data.task_sizes > d):
        warnings.warn(
            f"formulation='constrained' asks X_t w_t = y_t, which in general has no solution "
            f"when a task has more rows ({int(data.task_sizes.max())}) than features ({d}): the "
            "problem is infeasible, L + E tends to each task's least-squares fit (mode='paper') "
            "or the solver does not converge (mode='exact'). Use formulation='penalized'.",
            UserWarning,
            stacklevel=2,
        )
    y = data.y
    ynorm = max(1.0, float(np.linalg.norm(y)))
    if tau is None:
        tau = _tau(datafit, has_b, tau_rule)
    else:
        tau = check_scalar_param(tau, "tau", allow_zero=False)
    mu = consts["mu0"] if consts["mu0"] is not None else 1.0 / ynorm
    mu_max_, rho_, tol_ = consts["mu_max"], consts["rho"], consts["tol"]

    if coef_init is None:
        L = np.zeros((d, m))
        E = np.zeros((d, m))
    else:
        V = np.array(coef_init, dtype=np.float64)
        if V.shape != (2, d, m):
            raise ValueError(f"coef_init has shape {V.shape}, expected {(2, d, m)}.")
        L, E = V[0].copy(), V[1].copy()
    if has_b:
        b = np.zeros(m) if intercept_init is None else np.array(intercept_init, dtype=np.float64)
        if b.shape != (m,):
            raise ValueError(f"intercept_init has shape {b.shape}, expected {(m,)}.")
    else:
        b = None

    constrained = formulation == "constrained"
    record = (mode == "exact") if record_objective is None else bool(record_objective)
    sL = data.matvec(L)
    if has_b:
        sL += data.expand(b)
    sE = data.matvec(E)
    s = sL + sE
    c = np.zeros_like(y)
    nuc = float(np.linalg.svd(L, compute_uv=False).sum()) if np.any(L) else 0.0

    def objective(s_, nuc_, E_):
        reg = nuc_ + lam * float(np.linalg.norm(E_, axis=0).sum())
        return reg if constrained else datafit.value_scores(s_) + alpha * reg

    t0 = time.perf_counter()
    history: list[float] = []
    times: list[float] = []
    primal_hist: list[float] = []
    best = None
    converged = False
    n_iter = 0
    rp = rd = np.nan
    rank = 0
    for k in range(1, max_iter + 1):
        n_iter = k
        # ---- slack step (prox of the loss in score space; the data when constrained)
        cm = c / mu
        r = s + cm
        z = y if constrained else datafit.prox_scores(r, 1.0 / (alpha * mu))
        # ---- L (and intercept) step, linearized at (L^k, E^k): r = s - z + c / mu
        r -= z
        G = data.rmatvec(r)
        L_new, sv = svt_with_values(L - tau * G, tau / mu)
        rank = len(sv)
        if has_b:
            b_new = b - tau * data.task_sum(r)
        sL = _forward(data, L_new)
        if has_b:
            sL += data.expand(b_new)
        # ---- E step, linearized at (L^{k+1}, E^k)
        r = sL + sE
        r -= z
        r += cm
        G = data.rmatvec(r)
        E_new = group_soft_threshold(E - tau * G, lam * tau / mu, axis=0)
        sE = _forward(data, E_new)
        s_new = sL + sE
        # ---- multiplier
        res = s_new - z
        c = c + mu * res

        dL = float(np.linalg.norm(L_new - L))
        dE = float(np.linalg.norm(E_new - E))
        dx2 = dL * dL + dE * dE
        if has_b:
            dx2 += float(np.sum((b_new - b) ** 2))
        ds = float(np.linalg.norm(s_new - s))
        rp_abs = float(np.linalg.norm(res))
        znorm = ynorm if constrained else float(np.linalg.norm(z))
        rp = rp_abs / max(1.0, znorm, float(np.linalg.norm(s_new)))
        # dual residual: a bound of the distance of -A^T c to the subdifferentials, from the
        # optimality conditions of the linearized steps; its scale ||A^T c|| ~ ||mu G||
        rd_abs = (mu / tau) * np.sqrt(dx2) + mu * ds / np.sqrt(tau)
        rd = rd_abs / max(1.0, mu * float(np.linalg.norm(G)))
        nuc = float(sv.sum())
        F_k = objective(s_new, nuc, E_new) if record else np.nan
        history.append(F_k)
        primal_hist.append(rp)
        times.append(time.perf_counter() - t0)

        relL = dL / max(1.0, float(np.linalg.norm(L)))
        relE = dE / max(1.0, float(np.linalg.norm(E)))
        L, E, s = L_new, E_new, s_new
        if has_b:
            b = b_new
        if record and not constrained and (best is None or F_k < best[0]):
            best = (F_k, L, E, b, c, k)

        if callback is not None and callback(k, F_k, L, E):
            break
        if mode == "paper":
            stop = relL <= tol_ and relE <= tol_
            if guard:
                nonzero = bool(np.any(L) or np.any(E))
                stop = stop and (mu >= mu_max_ or (nonzero and rp <= tol_))
            if stop:
                converged = True
                break
            mu = min(rho_ * mu, mu_max_)
        else:
            if k > 1 and rp <= tol_ and rd <= tol_:
                converged = True
                break
            # residual balancing every 10 iterations during the first 2000 (then mu stays
            # fixed, which keeps the convergence guarantee of ADMM with a constant penalty)
            if k % 10 == 0 and k <= 2000:
                rp_scaled = rp_abs / max(1.0, znorm)
                if rp_scaled > 10.0 * rd:
                    mu = min(rho_ * mu, mu_max_)
                elif rd > 10.0 * rp_scaled:
                    mu = mu / rho_

    elapsed = time.perf_counter() - t0
    if not converged and n_iter >= max_iter and warn:
        warnings.warn(
            f"LADM did not converge in max_iter={max_iter} iterations (relative primal "
            f"residual {rp:.2e}, dual residual {rd:.2e}, tol={tol_}); returning the "
            f"{'last' if constrained else 'best'} iterate. Increase max_iter or tol.",
            ConvergenceWarning,
            stacklevel=2,
        )
    if not constrained and best is not None and not converged:
        _, L, E, b, c, _ = best
    if not record and history:  # the objective of the returned iterate only
        history[-1] = rmtl_objective(datafit, L, E, b, alpha, lam, formulation)
    W = L + E
    intercept = datafit.intercept(W, b)
    return SolverResult(
        coef=np.stack([L, E]),
        W=W,
        intercept=intercept,
        n_iter=n_iter,
        objective=np.asarray(history),
        converged=converged,
        time=elapsed,
        times=np.asarray(times),
        info={
            "multiplier": c,
            "multiplier_grad": data.rmatvec(c),
            "mu": mu,
            "tau": tau,
            "primal_residual": rp,
            "dual_residual": rd,
            "rank": rank,
            "primal_history": np.asarray(primal_hist),
            "mode": mode,
            "formulation": formulation,
            "intercept_variable": b,
            "best_objective": (rmtl_objective(datafit, L, E, b, alpha, lam, formulation)
                               if history else np.nan),
        },
    )
