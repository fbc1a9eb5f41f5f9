"""Accelerated proximal gradient with the tasks in blocks on a Dask cluster.

One iteration of accelerated proximal gradient (FISTA with adaptive restart, as
:class:`~multitask.solvers.fista.ProximalGradient` with its default fixed step ``1 / L``) is

1. on every block: the loss value and gradient at the extrapolated point ``Y_k``, the prox
   input ``V_k = Y_k - A^T grad f / L`` and the penalty's reduction
   ``S_k = penalty.block_stats(V_k)``, combined on each worker and sent to the client;
2. on the client: ``plan, value = penalty.block_plan(combine(S_k), 1 / L)``;
3. on every block: ``X_k+ = penalty.block_prox(V_k, plan)``, the loss at ``X_k+`` and the
   scalars of the stopping rule, sent to the client; the client decides the restart and the
   momentum, sent with the next step.

A loss without a curvature bound (the log-link GLMs, the Huber loss: no
``"curvature_bound"``, its ``lipschitz()`` an estimate) backtracks as the in-memory solver
does: ``L`` is doubled and the step redone from the same point until ``f(x+) <= f(y) + <grad
f(y), x+ - y> + L/2 ||x+ - y||^2`` holds summed over the blocks (one more round trip per
doubling; the blocks answer the terms with the step).

The blocks' side is :class:`~multitask.solvers.distributed.workers.TaskBlockWorker`; this
module holds the client's side: the iteration's decisions, the stopping rule (the relative
optimality measure of :mod:`multitask.solvers.base`, computed blockwise, two more round trips
when it is checked) and the assembly of the result.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from multitask.losses import Datafit
from multitask.penalties.base import IdentityMap, LinearMap, Penalty, SumMap
from multitask.solvers.base import Solver, check_int
from multitask.solvers.distributed.blocks import TaskBlocks
from multitask.solvers.distributed.cluster import future_result, get_client
from multitask.solvers.distributed.datafit import DistributedDatafit
from multitask.solvers.iteration import CertificateSchedule, IterationRecord
from multitask.solvers.result import SolverResult

__all__ = ["DistributedProximalGradient"]


def _sum(values) -> float:
    """``sum_k float(v_k)`` of the workers' scalars."""
    return float(np.sum([float(v) for v in values]))


def _nbytes(obj) -> int:
    """Bytes of the arrays in a reduction (nested tuples of arrays, numbers, None)."""
    if obj is None:
        return 0
    if isinstance(obj, (tuple, list)):
        return sum(_nbytes(o) for o in obj)
    return int(np.asarray(obj).nbytes)


def _reduce(penalty: Penalty, results) -> Any:
    """The penalty's combined reduction ``combine(S_1, ..., S_K)`` of the workers' answers."""
    stats = None
    for s in results:
        stats = penalty.combine_stats(stats, s)
    return stats


class _FromData:
    """Builds a block's datafit from a MultiTaskData: ``cls(data, **params)``."""

    def __init__(self, cls: type, params: dict):
        self.cls, self.params = cls, params

    def __call__(self, payload):
        return self.cls(payload, **self.params), None


class _Fitted:
    """The fitted intercepts gathered from the blocks, for :func:`finish`."""

    def __init__(self, intercept: np.ndarray):
        self._intercept = intercept

    def intercept(self, W, b=None) -> np.ndarray:
        return self._intercept


@dataclass(frozen=True)
class _Steps:
    """The constants of a run.

    ``L = L_f ||A||^2`` (the iteration's step is ``1 / L``), ``L_measure = L_W ||A||^2`` and
    ``s_b`` (the optimality measure's step and intercept factor, from the datafit's
    ``measure_constants``; ``s_b = 0`` without an intercept variable) and the gradient scale
    ``||grad f(0, b_0)||_F ||A||`` that the measure is relative to; ``backtrack``: ``L`` is
    an estimate (the loss has no curvature bound), doubled until the descent test holds.
    """

    L: float
    L_measure: float
    s_b: float
    scale: float
    backtrack: bool = False


@dataclass
class _Trace:
    """What the iteration leaves to the end of the run besides the record: ``n_iter``,
    ``mark_best`` whether the last prox step's point is the one to return, ``stats`` the last
    combined reduction, ``bytes_up`` / ``bytes_down`` the pickled bytes of the step round
    trips (answers, arguments) and ``L`` the step constant at the end (larger than the
    start's after backtracking)."""

    L: float
    n_iter: int = 0
    mark_best: bool = False
    stats: Any = None
    bytes_up: int = 0
    bytes_down: int = 0


def _step_constants(ddf: DistributedDatafit, A: LinearMap) -> _Steps:
    """``L``, ``L_measure``, ``s_b`` and the gradient scale of ``ddf`` (one where a bound is
    not a positive finite number; the scale at least the smallest positive float)."""
    L = float(ddf.lipschitz()) * A.norm_sq
    L = L if np.isfinite(L) and L > 0 else 1.0
    L_measure = float(ddf.measure_constants()[0]) * A.norm_sq
    L_measure = L_measure if np.isfinite(L_measure) and L_measure > 0 else 1.0
    s_b = ddf.measure_constants()[1] if ddf.has_intercept_variable else 0.0
    scale = max(ddf.gradient_scale() * np.sqrt(A.norm_sq), np.finfo(float).tiny)
    return _Steps(L=L, L_measure=L_measure, s_b=s_b, scale=scale,
                  backtrack="curvature_bound" not in ddf.capabilities)


def _split_start(ddf: DistributedDatafit, shape: tuple, coef_init, intercept_init
                 ) -> tuple[list | None, list | None]:
    """The warm start cut into the actors' blocks (None: start from zeros).

    Raises
    ------
    ValueError
        When ``coef_init`` is not of ``shape`` or ``intercept_init`` not of ``(n_tasks,)``.
    """
    m = ddf.data.n_tasks
    coefs = None
    if coef_init is not None:
        coef_init = np.asarray(coef_init, dtype=np.float64)
        if coef_init.shape != shape:
            raise ValueError(f"coef_init has shape {coef_init.shape}, expected {shape}.")
        coefs = ddf.split(coef_init)
    bs = None
    if ddf.has_intercept_variable and intercept_init is not None:
        intercept_init = np.asarray(intercept_init, dtype=np.float64)
        if intercept_init.shape != (m,):
            raise ValueError(f"intercept_init has shape {intercept_init.shape}, expected "
                             f"{(m,)}.")
        bs = ddf.split(intercept_init)
    return coefs, bs


def _start(ddf: DistributedDatafit, penalty: Penalty, coefs: list | None, bs: list | None,
           backtrack: bool = False) -> float:
    """Start every actor at the given blocks (zeros when None; the best intercepts of a loss
    that starts there) and return the objective ``F(x_0) = sum_k f_k(A x_k, b_k) + h(x_0)``
    there; constraint and split penalties first project the start, ``x_0 <- prox_{0
    h}(x_0)``, as ``initial_point`` does."""
    for fut in [a.start(penalty, None if coefs is None else coefs[i],
                        None if bs is None else bs[i], backtrack)
                for i, a in enumerate(ddf.actors)]:
        future_result(fut)
    if penalty.is_constraint or penalty.parts:  # a feasible start, as initial_point does
        plan0, _ = penalty.block_plan(_reduce(penalty, ddf._all(lambda a: a.x_stats())), 0.0)
        ddf._all(lambda a: a.x_project(plan0))
    plan0, h0 = penalty.block_plan(_reduce(penalty, ddf._all(lambda a: a.x_stats())), 0.0)
    return h0 + _sum(ddf._all(lambda a: a.x_value(plan0)))


def _measure(ddf: DistributedDatafit, penalty: Penalty, steps: _Steps, which: str) -> float:
    """The relative optimality measure at ``which`` (``"xnew"``: the last prox step's point,
    ``"best"``: the point to return), in two round trips:
    ``sqrt(L_m^2 ||w - prox_{h / L_m}(w - A^T grad_W f / L_m)||^2 + s_b^2 ||grad_b f||^2)
    / scale``."""
    L_measure = steps.L_measure
    res = ddf._all(lambda a: a.measure_grad(L_measure, which))
    plan, _ = penalty.block_plan(_reduce(penalty, (r[0] for r in res)), 1.0 / L_measure)
    gb2 = sum(r[1] for r in res)
    sq = _sum(ddf._all(lambda a: a.measure_prox(plan, 1.0 / L_measure)))
    num = L_measure * L_measure * sq + steps.s_b * steps.s_b * gb2
    return float(np.sqrt(num) / steps.scale)


def _gather(ddf: DistributedDatafit, shape: tuple
            ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """``(V, b, fitted intercepts)`` assembled from the blocks' best points (``b`` None
    without an intercept variable)."""
    m = ddf.data.n_tasks
    pieces = []
    for part in ddf._all(lambda a: a.collect("best")):
        pieces.extend(part)
    V = np.zeros(shape)
    b = np.zeros(m) if ddf.has_intercept_variable else None
    intercept = np.zeros(m)
    for k_blk, Vk, bk, ik in pieces:
        sl = slice(ddf.block_offsets[k_blk], ddf.block_offsets[k_blk + 1])
        V[..., sl] = Vk
        intercept[sl] = ik
        if b is not None and bk is not None:
            b[sl] = bk
    return V, b, intercept


def _descends(parts: list, L: float) -> bool:
    """The descent test of a backtracking step, summed over the workers' answers: ``f(x+) <=
    f(y) + <grad f(y), x+ - y> + L/2 (||x+ - y||^2 + ||b+ - b_y||^2)`` (up to rounding,
    ``1e-12 max(1, |f(y)|)``, as the in-memory solver); false where ``f(x+)`` is not finite."""
    f_new = sum(r[0] for r in parts)
    f_y = sum(r[5][0] for r in parts)
    lin = sum(r[5][1] for r in parts)
    moved = sum(r[2] for r in parts) + sum(r[5][2] for r in parts)
    return bool(f_new <= f_y + lin + 0.5 * L * moved + 1e-12 * max(1.0, abs(f_y)))


class DistributedProximalGradient(Solver):
    """Accelerated proximal gradient with the tasks in blocks on a Dask cluster.

    The iteration and the stopping rule are those of
    :class:`~multitask.solvers.fista.ProximalGradient` with its default settings (step
    ``1 / L`` with ``L`` the datafit's Lipschitz bound times ``||A||^2``, adaptive restart,
    the best iterate returned; for a loss without a curvature bound, ``L`` starts at the
    loss's estimate and backtracks), computed as in the module docstring: every penalty with
    the ``"blockwise"`` capability runs this way, and only its reduction crosses the network.
    Every smooth loss of the library is evaluated on the workers (squared, logistic, squared
    hinge, Poisson, Gamma, Tweedie, Huber with its per-task scale).

    Parameters
    ----------
    client : distributed.Client, optional
        Default: the current client (``distributed.get_client()``).
    n_blocks : int, optional
        Blocks of consecutive tasks when :meth:`solve` is given an in-memory datafit
        (default: twice the number of workers). Data already on the workers
        (:class:`DistributedDatafit`) keep their blocks.
    max_iter : int, default=5000
    tol : float, default=1e-4
        Tolerance on the relative optimality measure (:mod:`multitask.solvers.base`).
    accelerated : bool, default=True
        FISTA momentum (``False``: proximal gradient).
    restart : bool, default=True
        Adaptive (function-value) restart.
    blas_threads : int or None, default=1
        BLAS threads of each worker's computations.
    warn : bool, default=True
        Warn with ``ConvergenceWarning`` when ``max_iter`` is reached.
    """

    name = "distributed_fista"
    by_name = False  # works on a Dask client's task blocks (the estimators' own route)
    datafit_requires = frozenset({"gradient"})
    penalty_requires = frozenset({"blockwise"})
    handles_smooth_part = False

    def __init__(self, *, client=None, n_blocks: int | None = None, max_iter: int = 5000,
                 tol: float = 1e-4, accelerated: bool = True, restart: bool = True,
                 blas_threads: int | None = 1, warn: bool = True):
        super().__init__(max_iter=max_iter, tol=tol, warn=warn)
        self.client = client
        self.n_blocks = None if n_blocks is None else check_int(n_blocks, "n_blocks")
        self.accelerated = bool(accelerated)
        self.restart = bool(restart)
        self.blas_threads = None if blas_threads is None else check_int(blas_threads,
                                                                        "blas_threads")

    def missing(self, datafit, penalty: Penalty) -> list[str]:
        out = super().missing(datafit, penalty)
        if not isinstance(penalty.linear_map, (IdentityMap, SumMap)):
            out.append(f"the {penalty.name} penalty's linear map is not columnwise over tasks")
        return out

    def distribute(self, datafit: Datafit) -> DistributedDatafit:
        """The in-memory ``datafit`` cut into blocks of consecutive tasks on the workers."""
        client = get_client(self.client)
        n_workers = max(1, len(client.scheduler_info()["workers"]))
        n_blocks = self.n_blocks if self.n_blocks is not None else 2 * n_workers
        blocks = TaskBlocks.from_data(datafit.raw, n_blocks, client=client)
        builder = _FromData(type(datafit), datafit.get_params())
        return DistributedDatafit(blocks, builder, blas_threads=self.blas_threads)

    def solve(self, datafit, penalty: Penalty, *, coef_init=None, intercept_init=None,
              callback: Callable | None = None) -> SolverResult:
        """Minimize ``datafit(A(V), b) + penalty(V)`` on the cluster.

        ``datafit`` is a :class:`DistributedDatafit` (data on the workers) or an in-memory
        :class:`~multitask.losses.Datafit` (cut into blocks and scattered first). Warm starts
        are accepted; ``callback(k, objective, None, None)`` gets no iterate (it stays on the
        workers).
        """
        own = not isinstance(datafit, DistributedDatafit)
        ddf = self.distribute(datafit) if own else datafit
        try:
            return self._solve(ddf, penalty, coef_init, intercept_init, callback)
        finally:
            if own:
                ddf.close()
            else:
                for a in ddf.actors:
                    future_result(a.release())

    def _solve(self, ddf: DistributedDatafit, penalty: Penalty, coef_init, intercept_init,
               callback) -> SolverResult:
        """The run on the actors of ``ddf``: start, constants, iteration, result."""
        # early certificates only: when the cheap bound falls under tol, max(5, k // 10)
        # iterations after the last one at the soonest
        run = IterationRecord(self, ddf, penalty, callback,  # type: ignore[arg-type]
                              CertificateSchedule(period=None, early_gap=5, early_fraction=10))
        shape = penalty.linear_map.variable_shape(ddf.data.n_features, ddf.data.n_tasks)
        coefs, bs = _split_start(ddf, shape, coef_init, intercept_init)
        steps = _step_constants(ddf, penalty.linear_map)
        fx = _start(ddf, penalty, coefs, bs, steps.backtrack)
        trace = self._iterate(ddf, penalty, steps, fx, run)
        return self._assemble_result(ddf, penalty, steps, trace, shape, run)

    def _iterate(self, ddf: DistributedDatafit, penalty: Penalty, steps: _Steps, fx: float,
                 run: IterationRecord) -> _Trace:
        """The iterations from the started point, whose objective is ``fx``.

        Each is one round trip (:meth:`TaskBlockWorker.step`): ``x+ = prox_{h / L}(V)``
        with the plan of the combined reduction of ``V``, and the next prox input at
        ``y' = x+ + beta (x+ - x)``, ``beta = (t_k - 1) / t_{k+1}``, ``t_{k+1} = (1 +
        sqrt(1 + 4 t_k^2)) / 2``. The client accepts ``x+`` unless ``F(x+) > F(x)`` after
        momentum (a restart: ``t = 1`` and the gradient step from ``x`` again), and stops
        when the cheap bound ``sqrt(L^2 ||x+ - y||^2 + s_b^2 ||grad_b||^2)`` falls under
        ``tol * scale`` and the measure confirms it, or when the callback says so. With
        ``steps.backtrack``, a step that fails the descent test is redone with ``2 L``
        (:meth:`TaskBlockWorker.retry`) before anything is recorded.
        """
        L, s_b, scale, tol = steps.L, steps.s_b, steps.scale, self.tol
        trace = _Trace(L=L)
        run.keep(fx, None, None)  # the iterates stay on the workers (mark_best)
        t_k = 1.0
        accept = mark_best = False
        res = ddf._all(lambda a: a.begin(L))
        stats, gb2 = _reduce(penalty, (r[0] for r in res)), sum(r[1] for r in res)
        for k in range(1, self.max_iter + 1):
            trace.n_iter = k
            while True:
                plan, h_plan = penalty.block_plan(stats, 1.0 / L)
                t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t_k * t_k))
                beta = (t_k - 1.0) / t_next if self.accelerated else 0.0
                parts = ddf._all(lambda a, p=plan, bt=beta, ac=accept, mb=mark_best, c=L:
                                 a.step(p, 1.0 / c, c, bt, ac, mb))
                # what crossed the network (pickled): the step's arguments to every worker,
                # and the workers' answers (their combined reductions and a few numbers)
                trace.bytes_down += len(ddf.actors) * len(pickle.dumps(
                    (plan, 1.0 / L, L, beta, accept, mark_best)))
                trace.bytes_up += sum(len(pickle.dumps(r)) for r in parts)
                accept = mark_best = False  # the workers have applied them
                if not steps.backtrack or _descends(parts, L) or not np.isfinite(2.0 * L):
                    break
                L = 2.0 * L  # the estimate was too small here: the same step, shorter
                res = ddf._all(lambda a, c=L: a.retry(c))
                stats, gb2 = _reduce(penalty, (r[0] for r in res)), sum(r[1] for r in res)
            trace.L = L
            F_new = (sum(r[0] for r in parts) + h_plan + sum(r[1] for r in parts))
            dx2 = sum(r[2] for r in parts)
            run.record(F_new)
            mark_best = run.offer(F_new, None, None)
            cheap = np.sqrt(L * L * dx2 + s_b * s_b * gb2)
            stats, gb2 = _reduce(penalty, (r[3] for r in parts)), sum(r[4] for r in parts)
            if run.due(k, small=cheap <= tol * scale) and run.certified(
                    k, _measure(ddf, penalty, steps, "xnew")) <= tol:
                run.stopped_by = "tol"
            if run.stopped_by == "tol" or run.notify(k, F_new, None, None):
                run.keep(F_new, None, None)
                mark_best = True
                break
            if self.accelerated and self.restart and F_new > fx and t_k > 1.0:
                t_k = 1.0  # restart: drop the momentum and this step's point, from x
                res = ddf._all(lambda a, mb=mark_best, c=L: a.begin(c, mb, True))
                mark_best = False
                stats, gb2 = _reduce(penalty, (r[0] for r in res)), sum(r[1] for r in res)
                continue
            if self.accelerated:
                t_k = t_next
            fx = F_new
            accept = True
        trace.mark_best, trace.stats = mark_best, stats
        return trace

    def _assemble_result(self, ddf: DistributedDatafit, penalty: Penalty, steps: _Steps,
                         trace: _Trace, shape: tuple, run: IterationRecord) -> SolverResult:
        """The best point gathered from the blocks, with its optimality measure (taken now
        unless the run converged on it) and the run's record."""
        if trace.mark_best:  # the last step's point is the best one (or where the run stopped)
            ddf._all(lambda a: a.mark_best())
        meas, converged = run.measure, run.stopped_by == "tol"
        if not converged or meas is None:
            meas = _measure(ddf, penalty, steps, "best")
            converged = converged or meas <= self.tol
        V, b, intercept = _gather(ddf, shape)
        n_iter, L = trace.n_iter, trace.L
        assert run.best is not None
        info = {"lipschitz": L, "best_objective": run.best.objective,
                "stopped_by": run.stopped_by,
                "accelerated": self.accelerated, "n_blocks": int(len(ddf.block_offsets) - 1),
                "n_workers": len(ddf.actors),
                "bytes_up_per_iteration": trace.bytes_up / max(n_iter, 1),
                "bytes_down_per_iteration": trace.bytes_down / max(n_iter, 1),
                "reduction_bytes": _nbytes(trace.stats),
                "plan_bytes": _nbytes(penalty.block_plan(trace.stats, 1.0 / L)[0])}
        return run.finish(V, b, n_iter=n_iter, converged=converged, measure=meas, info=info,
                          datafit=_Fitted(intercept))  # type: ignore[arg-type]
