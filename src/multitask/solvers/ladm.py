"""Linearized ADMM (LADM) for a loss with a prox in score space and a blockwise penalty.

Solves ``min_{V, b} f(s) + h(V)`` with the stacked scores
``s = K(V, b)``, ``s_i = x_i^T w_{t(i)} + b_{t(i)}``, ``W = sum_i V[i]`` (one block when the
penalty is not split), ``h(V) = sum_i h_i(V[i])`` (the ``"blocks"`` capability, or one
block), ``f`` a loss with a closed-form prox in score space (``"prox_scores"``). With a slack
``z``, a multiplier ``c`` and a penalty ``mu``, the augmented Lagrangian is
``f(z) + h(V) + <c, K(V, b) - z> + (mu / 2) ||K(V, b) - z||^2``, and one iteration (the
linearized ADMM of Pan, Xia, Yin & Liu's Algorithms 3 and 4 for robust multi-task learning, slack
step first as their equations (17)-(19) define it) is::

    z    = prox_{f / mu}(s + c / mu)                      (z = y: equality-constrained form)
    V[i] = prox_{h_i step / mu}(V[i] - step K^T r),  r = K(V, b) - z + c / mu    (each block
           in turn, Gauss-Seidel; b takes a plain step b - step * sum_t r after the first block)
    c    = c + mu (K(V, b) - z)

with ``step = 1 / (1.02 max_t ||[X_t, 1]||_2^2)`` (``step_rule="max"``; the paper's
``1 / (1.02 ||A||^2)`` with all tasks' rows stacked is ``step_rule="stacked"``). The penalty
parameter is expressed in units of the penalty's strength (``mu = strength * mu'``, so that
the paper's constants apply to its normalized objective ``||L||_* + lam ||E||_{1,2} + f /
alpha``).

Schedules:

* ``schedule="exact"`` (default): residual balancing (Boyd et al., "Distributed optimization
  and statistical learning via the alternating direction method of multipliers", Sec. 3.4):
  every 10 iterations during the first 2000, ``mu`` doubles when the relative primal residual
  exceeds 10 times the relative dual residual and halves in the opposite case. The run stops
  when the optimality measure of :mod:`multitask.solvers.base` is at most ``tol`` (computed
  whenever both ADMM residuals are below ``tol``, and every ``check_every`` iterations; two
  computations at least ``min(CHECK_MIN_GAP, k // 4)`` iterations apart).
* ``schedule="paper"``: ``mu0 = 1e-6``, ``mu <- min(1.9 mu, 1e10)`` every iteration, stop when
  the relative changes of every block are ``<= 1e-5`` (the paper's eq. (25)), evaluated only
  once ``mu = mu_max`` or at a nonzero iterate with a relative primal residual ``<= 1e-5``
  (taken literally the rule fires at iteration 1 with ``V = 0``). Fast but approximate.

``constrained=True`` solves the equality-constrained form ``min h(V)`` subject to
``K(V, b) = y`` (the paper's eq. (2); needs a loss with ``"quadratic"``, whose centred targets
are ``y``): it stops on the ADMM residuals (its optimality measure is NaN, having no loss).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from multitask.data import MultiTaskData
from multitask.losses import Datafit
from multitask.penalties.base import Penalty
from multitask.solvers.base import Solver, check_tol, optimality
from multitask.solvers.certificate import duality_gap
from multitask.solvers.iteration import CertificateSchedule, IterationRecord
from multitask.solvers.problem import Problem
from multitask.solvers.result import SolverResult

__all__ = ["LADM_PAPER_CONSTANTS", "WIDE_TRACE_MIN_FEATURES", "WIDE_TRACE_RATIO",
           "LinearizedADMM", "admm_step"]

#: The constants of the paper's Algorithms 3 and 4.
LADM_PAPER_CONSTANTS = {"mu0": 1e-6, "rho": 1.9, "mu_max": 1e10, "tol": 1e-5}

#: Least iterations between two certificates after iteration ``4 CHECK_MIN_GAP`` (``k // 4``
#: before; :class:`~multitask.solvers.iteration.CertificateSchedule`'s ``min_gap``). Both
#: residuals can stay below ``tol`` while the certified gap does not: on the robust MTL
#: classifier at 10 tasks x 300 features (``benchmarks/bench_auto_choice.py``), ``alpha_max /
#: 10``, the run certified after every iteration for most of its iterations
#: (``tests/test_ladm_certificates.py``; the figures: docs/tuning_constants.md, "Linearized
#: ADMM's certificates").
CHECK_MIN_GAP = 10
_SCHEDULES = ("exact", "paper")
#: ``alpha / alpha_max`` (:attr:`~multitask.solvers.problem.Problem.split_strength_ratio`) from
#: which ``solver="auto"`` leaves a split model whose parts are norms (robust MTL) to the other
#: solvers: at ``alpha_max / 2`` accelerated gradient was the faster on 10 and 100 tasks of 300
#: features, with the squared loss and with robust MTL's classifier; at ``alpha_max / 5`` and
#: below linearized ADMM was the faster or close to it (``benchmarks/bench_auto_choice.py
#: --grid others --only RobustMTL --fractions 0.5 0.2 0.1``; the figures:
#: docs/tuning_constants.md, "Linearized ADMM and the split models' strength"). Sparse + low
#: rank has no such ratio (its trace-norm ball is a constraint): which solver is faster there
#: depends on the ball's radius as much as on ``alpha``.
SPLIT_STRONG_RATIO = 0.3
#: ``alpha / alpha_max`` at or below which ``solver="auto"`` takes linearized ADMM for the
#: trace norm with the squared loss on a dense per-task design of fewer rows than features,
#: from :data:`WIDE_TRACE_MIN_FEATURES` features: with ``benchmarks/bench_auto_choice.py
#: --only TraceNorm --loss squared`` on 10 tasks of 40 rows it was faster than accelerated
#: gradient at ``alpha_max`` times 0.02 and 0.01 on 1,000, 3,000 and 10,000 features (and the
#: fastest at 0.005 and 0.002 on 1,000 and 3,000), slower at ``alpha_max / 20`` from 3,000
#: features and on 4 tasks of 300 features (the pinned case ``tasks_wide``, and at
#: ``alpha_max`` times 0.005 and 0.002; the figures: docs/scale.md).
WIDE_TRACE_RATIO = 0.02
#: See :data:`WIDE_TRACE_RATIO`.
WIDE_TRACE_MIN_FEATURES = 1000
_STEP_RULES = ("max", "stacked")


def admm_step(data: MultiTaskData, has_b: bool, rule: str = "max") -> float:
    """The linearization step ``1 / (1.02 ||K||^2)`` for the score map ``K`` of ``data``.

    ``rule="max"``: ``||K||^2 = max_t ||[X_t, 1]||_2^2`` (the map is block diagonal over
    tasks); ``"stacked"``: the spectral norm of all tasks' rows stacked (plus ``max_t n_t``
    with intercepts), the paper's literal rule. With row weights ``w``
    (:attr:`~multitask.data.MultiTaskData.sample_weight`) the score space has the metric
    ``diag(w)`` (:class:`LinearizedADMM`): the norms are those of ``diag(sqrt(w)) K`` (and
    ``max_t W_t`` replaces ``max_t n_t``), what the repeated rows of integer weights give.
    """
    w = data.sample_weight
    norms = data.task_spectral_norms_sq(intercept=has_b, weighted=True)
    if rule == "max":
        lip = float(np.max(norms)) if norms.size else 1.0
    elif data.shared and w is None:
        lip = float(norms[0]) * data.n_tasks
    else:
        X = data.X
        if w is not None:  # rows scaled by the root of their weight (summed over the tasks)
            root = np.sqrt(w.reshape(data.n_tasks, -1).sum(axis=0) if data.shared else w)
            X = (sp.csr_matrix(sp.csr_matrix(X).multiply(root[:, None])) if sp.issparse(X)
                 else X * root[:, None])
        if sp.issparse(X):
            from scipy.sparse.linalg import svds

            k = min(X.shape) - 1
            lip = (float(svds(X, k=1, return_singular_vectors=False, random_state=0)[0]) ** 2
                   if k >= 1 else float(sp.linalg.norm(X) ** 2))
        else:
            lip = float(np.linalg.norm(X, 2)) ** 2 if X.size else 1.0
        if has_b:
            lip += float(np.max(data.task_weight_sums))
    if not np.isfinite(lip) or lip <= 0:
        lip = 1.0
    return 1.0 / (1.02 * lip)


def _norm(v, w: np.ndarray | None) -> float:
    """``||v||`` in the metric of score space: ``sqrt(sum_i w_i v_i^2)`` with row weights."""
    if w is None:
        return float(np.linalg.norm(v))
    v = np.asarray(v, dtype=np.float64)
    return float(np.sqrt(w @ (v * v)))


def _prox_step(mu: float, w: np.ndarray | None):
    """The step of the loss's prox in score space, ``1 / mu``, per row ``1 / (mu w_i)`` in the
    metric ``diag(w)`` (0 where ``w_i = 0``: such a pair, a missing target, keeps its score)."""
    if w is None:
        return 1.0 / mu
    return np.divide(1.0, mu * w, out=np.zeros_like(w), where=w > 0)


def _multiplier_scores(datafit: Datafit, c: np.ndarray) -> np.ndarray | None:
    """The score derivatives ``a_i = c_i W_t`` of the dual point the multiplier ``c`` gives
    (``theta_i = w_i c_i`` in the metric of score space, ``w_i / W_t`` the row weights; at a
    solution ``a_i`` is a subgradient of the loss at the slack's score) for a loss without a
    gradient (the pinball loss), whose dual point from a subgradient at the primal point is
    loose at the kinks where a solution puts many rows; ``None`` for the smooth losses, whose
    gradient gives the dual point."""
    if "gradient" in datafit.capabilities:
        return None
    return c * datafit.data.expand(datafit.data.task_weight_sums)


def _forward(data: MultiTaskData, M: np.ndarray) -> np.ndarray:
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


class LinearizedADMM(Solver):
    """Linearized ADMM over the blocks of a split penalty (module docstring).

    Parameters
    ----------
    max_iter : int, default=10000
    tol : float, optional
        Tolerance on the optimality measure (exact schedule, default 1e-4) or on the paper's
        rule (paper schedule, default its 1e-5).
    schedule : {"exact", "paper"}, default="exact"
    constrained : bool, default=False
        Solve the equality-constrained form ``min h(V) s.t. K(V, b) = y``.
    step : float, optional
        Linearization step; default from ``step_rule``.
    step_rule : {"max", "stacked"}, default="max"
    rho, mu0, mu_max : float, optional
        Override the schedule's constants (``mu0`` and ``mu_max`` in units of the penalty's
        strength). Paper: ``1.9``, ``1e-6``, ``1e10``; exact: ``2`` (the balancing factor),
        ``1 / ||y||``, ``1e10``.
    guard : bool, default=True
        Paper schedule: evaluate the stopping rule only once ``mu = mu_max`` or at a nonzero
        iterate feasible to the tolerance. ``False`` is the literal rule.
    check_every : int, default=10
        Exact schedule: compute the optimality measure at least this often.
    warn : bool, default=True
    """

    name = "ladm"
    max_preference = 55.0
    datafit_requires = frozenset({"prox_scores"})

    @classmethod
    def preference(cls, problem: Problem, **settings) -> float | None:
        """55 for a split model (the solver of Pan, Xia, Yin & Liu's robust MTL): ahead of
        accelerated gradient on the stacked variable, behind the ADMM and majorization solvers
        that split models take where they apply; none from ``alpha >=``
        :data:`SPLIT_STRONG_RATIO` ``alpha_max`` (accelerated gradient faster there); 52 for the
        l2,1 norm and the trace norm with the squared loss on data with at least as many rows as
        features at ``alpha <= alpha_max / 20``
        (:attr:`~multitask.solvers.problem.Problem.strength_ratio`), and for the ``"spectral"``
        task-structure penalties (clustered MTL, convex ASO, task relationship) with the squared
        loss on such data at any strength, per-task designs only: ahead of accelerated gradient,
        measured slower there (``benchmarks/bench_auto_choice.py``,
        ``benchmarks/bench_cv_two_param.py``); 52 also for the trace norm with the squared loss
        on a dense per-task design of fewer rows than features, at least
        :data:`WIDE_TRACE_MIN_FEATURES` of them, at ``alpha <=`` :data:`WIDE_TRACE_RATIO`
        ``alpha_max``."""
        if problem.split:
            ratio = problem.split_strength_ratio
            return None if ratio is not None and ratio >= SPLIT_STRONG_RATIO else 55.0
        # below the block coordinate descent and ADMM, which take these models where they
        # apply (few features)
        family, (a, b, _) = problem.row_prox or ("", (0, 0, 0))
        group_rows = (family == "elastic_net" and bool(np.any(np.asarray(b)))
                      and not bool(np.any(np.asarray(a))))
        if problem.datafit.name != "squared":
            return None
        if problem.n_rows < problem.n_features:
            wide_trace = (problem.penalty_has("low_rank") and not problem.sparse
                          and not problem.shared
                          and problem.n_features >= WIDE_TRACE_MIN_FEATURES
                          and problem.strength_ratio is not None
                          and problem.strength_ratio <= WIDE_TRACE_RATIO)
            return 52.0 if wide_trace else None
        low = problem.strength_ratio is not None and problem.strength_ratio <= 0.05
        if low and (group_rows or problem.penalty_has("low_rank")):
            return 52.0
        # the task-structure relaxations (clustered MTL, convex ASO, task relationship) on
        # per-task designs (on a shared design of fewer rows than features it was slower)
        return 52.0 if problem.penalty_has("spectral") and not problem.shared else None

    def __init__(self, *, max_iter: int = 10000, tol: float | None = None,
                 schedule: str = "exact",
                 constrained: bool = False, step: float | None = None, step_rule: str = "max",
                 rho: float | None = None, mu0: float | None = None,
                 mu_max: float | None = None, guard: bool = True, check_every: int = 10,
                 warn: bool = True):
        if schedule not in _SCHEDULES:
            raise ValueError(f"schedule must be one of {_SCHEDULES}, got {schedule!r}.")
        if tol is None:
            tol = LADM_PAPER_CONSTANTS["tol"] if schedule == "paper" else 1e-4
        super().__init__(max_iter=max_iter, tol=tol, warn=warn)
        if step_rule not in _STEP_RULES:
            raise ValueError(f"step_rule must be one of {_STEP_RULES}, got {step_rule!r}.")
        for name, val in (("step", step), ("rho", rho), ("mu0", mu0), ("mu_max", mu_max)):
            if val is not None:
                check_tol(val, name)
        if rho is not None and rho < 1:
            raise ValueError(f"rho must be >= 1, got {rho!r}.")
        if isinstance(check_every, bool) or int(check_every) < 1:
            raise ValueError(f"check_every must be an integer >= 1, got {check_every!r}.")
        self.schedule = schedule
        self.constrained = bool(constrained)
        self.step = step
        self.step_rule = step_rule
        self.rho = rho
        self.mu0 = mu0
        self.mu_max = mu_max
        self.guard = bool(guard)
        self.check_every = int(check_every)

    def missing(self, datafit: Datafit, penalty: Penalty) -> list[str]:
        out = super().missing(datafit, penalty)
        # the loss's declared (class) capabilities: a squared loss drops "quadratic" from its
        # instance when its Gram matrices cost more than they save (n_t < d, exactly where the
        # equality-constrained form is feasible), but it is still the squared loss
        if self.constrained and "quadratic" not in type(datafit).capabilities:
            out.append(f"the equality-constrained form needs the squared loss, not the "
                       f"{datafit.name} loss")
        return out

    def solve(self, datafit: Datafit, penalty: Penalty, *, coef_init=None, intercept_init=None,
              callback: Callable | None = None) -> SolverResult:
        """Run linearized ADMM; ``callback(k, objective, V, b)`` after each iteration."""
        # exact schedule: a certificate every check_every iterations, and whenever both
        # residuals are at most tol, at least min(CHECK_MIN_GAP, k // 4) iterations apart
        run = IterationRecord(self, datafit, penalty, callback,
                              CertificateSchedule(period=self.check_every,
                                                  min_gap=CHECK_MIN_GAP))
        data = datafit.data
        parts = penalty.parts if penalty.parts else (penalty,)
        V, b = run.start(coef_init, intercept_init)
        it = _Iterate(data, penalty, V, b)
        if self.constrained:
            self._warn_infeasible(data)
        paper = self.schedule == "paper"
        rho, mu, mu_max = self._penalty_parameters(penalty, data)
        y, cw, tol = data.y, data.sample_weight, self.tol
        ynorm = max(1.0, _norm(y, cw))
        step = self.step if self.step is not None else admm_step(data, it.b is not None,
                                                                 self.step_rule)
        c = np.zeros_like(y)

        def objective(s_, blocks):
            reg = sum(p.value(B) for p, B in zip(parts, blocks, strict=True))
            return reg if self.constrained else datafit.value_scores(s_) + reg

        primal_hist: list[float] = []
        converged = False
        n_iter = 0
        rp = rd = np.nan
        for k in range(1, self.max_iter + 1):
            n_iter = k
            cm = c / mu
            z = y if self.constrained else datafit.prox_scores(it.s + cm, _prox_step(mu, cw))
            old, s_old = list(it.blocks), it.s
            G, dx2 = it.sweep(data, parts, z, cm, cw, step, mu)
            res = it.s - z
            c = c + mu * res
            rp_abs = _norm(res, cw)
            znorm = ynorm if self.constrained else _norm(z, cw)
            rp = rp_abs / max(1.0, znorm, _norm(it.s, cw))
            # dual residual: a bound of the distance of -K^T c to the subdifferentials, from
            # the optimality conditions of the linearized steps; scale ||K^T c|| ~ ||mu G||
            ds = _norm(it.s - s_old, cw)
            rd = ((mu / step) * np.sqrt(dx2) + mu * ds / np.sqrt(step)) / max(
                1.0, mu * float(np.linalg.norm(G)))
            F_k = objective(it.s, it.blocks)
            run.record(F_k)
            primal_hist.append(rp)
            if not self.constrained and run.improves(F_k):
                run.keep(F_k, [B.copy() for B in it.blocks], None if it.b is None
                         else it.b.copy())
            if callback is not None and run.notify(k, F_k, it.stacked(penalty), it.b):
                break
            if paper:
                if self._paper_rule(it.blocks, old, mu >= mu_max, rp):
                    converged = True
                    break
                mu = min(rho * mu, mu_max)
                continue
            small = k > 1 and rp <= tol and rd <= tol
            if self.constrained:
                if small:
                    converged = True
                    break
            elif run.due(k, small):
                measure_k = self._certify(run, k, it.stacked(penalty), it.b, c)
                # a model without a measure (a loss without gradient, a penalty without a
                # conjugate: the priors of new tasks) stops on ADMM's residuals, as the
                # constrained form does (Boyd et al.)
                if measure_k <= tol or (small and np.isnan(measure_k)):
                    converged = True
                    break
            # residual balancing every 10 iterations during the first 2000 (then mu stays
            # fixed, which keeps the convergence guarantee of ADMM with a constant penalty)
            if k % 10 == 0 and k <= 2000:
                rp_scaled = rp_abs / max(1.0, znorm)
                if rp_scaled > 10.0 * rd:
                    mu = min(rho * mu, mu_max)
                elif rd > 10.0 * rp_scaled:
                    mu = mu / rho

        blocks, b = it.blocks, it.b
        if not self.constrained and run.best is not None and not converged and not paper:
            _, blocks, b = run.best
        Vout = self._stack(blocks, penalty)
        measure = float("nan") if run.measure is None else run.measure
        if self.constrained:
            measure = float("nan")
        elif paper or not converged:
            measure = optimality(datafit, penalty, Vout, b, target=self.tol)
        cert = None
        if not self.constrained and _multiplier_scores(datafit, c) is not None:
            cert = duality_gap(datafit, penalty, Vout, b, target=self.tol,
                               dual_scores=_multiplier_scores(datafit, c))
            measure = measure if cert is None else cert.relative_gap
        F_out = (objective(datafit.scores(penalty.linear_map.forward(Vout), b), blocks)
                 if not self.constrained
                 else sum(p.value(B) for p, B in zip(parts, blocks, strict=True)))
        return run.finish(
            Vout, b, n_iter=n_iter, converged=converged, measure=measure,
            certify_model=not self.constrained, certificate=cert,
            what=f"relative primal residual {rp:.2e}, dual residual {rd:.2e}",
            info={"multiplier": c, "multiplier_grad": data.rmatvec(data.weigh(c)), "mu": mu,
                  "step": step, "primal_residual": rp, "dual_residual": rd,
                  "primal_history": np.asarray(primal_hist), "schedule": self.schedule,
                  "constrained": self.constrained, "best_objective": F_out},
        )

    def _warn_infeasible(self, data: MultiTaskData) -> None:
        """Warn when a task has more rows than features (the equality-constrained form has
        no solution then, in general)."""
        if data.n_rows and np.any(data.task_sizes > data.n_features):
            warnings.warn(
                "The equality-constrained form asks X_t w_t = y_t, which in general has no "
                f"solution when a task has more rows ({int(data.task_sizes.max())}) than "
                f"features ({data.n_features}): W tends to each task's least-squares fit or the "
                "solver does not converge. Use the penalized form.",
                UserWarning, stacklevel=4,
            )

    def _penalty_parameters(self, penalty: Penalty, data: MultiTaskData
                            ) -> tuple[float, float, float]:
        """``(rho, mu_0, mu_max)`` of the schedule (its constants unless given), ``mu`` in
        units of the penalty's strength (module docstring)."""
        consts = (dict(LADM_PAPER_CONSTANTS) if self.schedule == "paper"
                  else {"rho": 2.0, "mu_max": 1e10})
        rho = self.rho if self.rho is not None else consts["rho"]
        unit = float(getattr(penalty, "alpha", 1.0) or 1.0)
        ynorm = max(1.0, _norm(data.y, data.sample_weight))
        mu0 = self.mu0 if self.mu0 is not None else consts.get("mu0", 1.0 / ynorm)
        mu_max = unit * (self.mu_max if self.mu_max is not None else consts["mu_max"])
        return rho, unit * mu0, mu_max

    def _paper_rule(self, blocks: list, old: list, at_max: bool, rp: float) -> bool:
        """The paper's stopping rule (eq. (25)): every block's relative change at most
        ``tol``; with ``guard``, only once ``mu = mu_max`` (``at_max``) or at a nonzero
        iterate whose relative primal residual ``rp`` is at most ``tol``."""
        rel = [float(np.linalg.norm(B - B0)) / max(1.0, float(np.linalg.norm(B0)))
               for B, B0 in zip(blocks, old, strict=True)]
        stop = max(rel) <= self.tol
        if self.guard:
            nonzero = any(np.any(B) for B in blocks)
            stop = stop and (at_max or (nonzero and rp <= self.tol))
        return stop

    def _certify(self, run: IterationRecord, k: int, V: np.ndarray, b, c: np.ndarray) -> float:
        """The run's certificate at ``(V, b)``; for a loss without a gradient, also from the
        dual point of the multiplier ``c`` (:func:`_multiplier_scores`)."""
        scores = _multiplier_scores(run.datafit, c)
        if scores is None:
            return run.certify(k, V, b, target=self.tol)
        cert = duality_gap(run.datafit, run.penalty, V, b, target=self.tol, lazy=True,
                           dual_scores=scores)
        if cert is None:
            return run.certify(k, V, b, target=self.tol)
        return run.certified(k, cert.relative_gap, cert)

    @staticmethod
    def _stack(blocks, penalty: Penalty) -> np.ndarray:
        return np.stack(blocks) if penalty.parts else blocks[0]


class _Iterate:
    """The iterate of linearized ADMM: the penalty's blocks ``V[i]`` (one block when it is
    not split), their scores ``K V[i]``, the intercepts ``b`` and their scores, and the
    stacked scores ``s = sum_i K V[i] + b``."""

    def __init__(self, data: MultiTaskData, penalty: Penalty, V: np.ndarray, b):
        self.blocks = ([V[i].copy() for i in range(len(penalty.parts))] if penalty.parts
                       else [V.copy()])
        self.s_blocks = [_forward(data, B) for B in self.blocks]
        self.b = b
        self.sb = data.expand(b) if b is not None else 0.0
        self.s = sum(self.s_blocks) + self.sb

    def stacked(self, penalty: Penalty) -> np.ndarray:
        """The solver's variable ``V`` (the blocks stacked for a split penalty)."""
        return LinearizedADMM._stack(self.blocks, penalty)

    def sweep(self, data: MultiTaskData, parts, z: np.ndarray, cm: np.ndarray, cw, step: float,
              mu: float):
        """The V-step of the module docstring, one block after the other (Gauss-Seidel; the
        intercepts take their plain step after the first block): ``(G, dx2)``, the last
        block's gradient ``K^T r`` and the squared change of the blocks and intercepts."""
        old, b_old = list(self.blocks), self.b
        dx2 = 0.0
        G = np.zeros((data.n_features, data.n_tasks))
        for i, p in enumerate(parts):
            r = self.s - z + cm
            if cw is not None:
                r = cw * r
            G = data.rmatvec(r)
            new = p.prox(self.blocks[i] - step * G, step / mu)
            if i == 0 and self.b is not None:
                self.b = self.b - step * data.task_sum(r)
                self.sb = data.expand(self.b)
            self.s_blocks[i] = _forward(data, new)
            self.blocks[i] = new
            self.s = sum(self.s_blocks) + self.sb
            dx2 += float(np.sum((new - old[i]) ** 2))
        if b_old is not None:
            dx2 += float(np.sum((self.b - b_old) ** 2))
        return G, dx2
