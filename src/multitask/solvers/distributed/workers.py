"""The worker side of the distributed solver: one actor per Dask worker with its blocks.

A :class:`TaskBlockWorker` holds the blocks of tasks of one worker (each block's datafit and
its columns of the solver's iterates) for the whole fit and runs the blockwise steps of one
accelerated proximal gradient iteration on them: the gradient step ``V = Y - A^T grad f / L``
and the penalty's reduction ``S = penalty.block_stats(V)``, then ``X+ = penalty.block_prox(V,
plan)`` with the loss at ``X+``. Only reductions and scalars go back to the client
(:class:`~multitask.solvers.distributed.solver.DistributedProximalGradient`).

Every loss is evaluated where its rows are: the blocks' datafits are the library's (the
squared and classification losses, the log-link GLMs, the Huber loss with its scale fitted
per task, which is block-local). For a loss without a curvature bound (the GLMs, Huber) the
client backtracks on ``L`` (``backtrack``): each block keeps the loss and its gradient at the
extrapolated point, and a step answers the terms of the descent test ``f(x+) <= f(y) + <grad
f(y), x+ - y> + L/2 ||x+ - y||^2`` besides ``f(x+)``; :meth:`TaskBlockWorker.retry` redoes the
gradient step from the same point with a larger ``L``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

from multitask.penalties.base import Penalty

__all__ = ["TaskBlockWorker"]


_CONTROLLER: ThreadpoolController | None = None


def _blas_limit(threads: int | None):
    """A context limiting the BLAS threads (a no-op context when ``threads`` is None)."""
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=threads)


# ============================================================================ the actor
class _Block:
    """One block of tasks on a worker: its datafit and its columns of the solver's state."""

    def __init__(self, index: int, datafit):
        self.index = index
        self.datafit = datafit
        self.x: Any = None
        self.b: np.ndarray | None = None
        self.y: Any = None
        self.yb: np.ndarray | None = None
        self.xnew: Any = None
        self.bnew: np.ndarray | None = None
        self.vin: Any = None
        self.bin: np.ndarray | None = None
        self.spec: tuple | None = None
        self.best: tuple = (None, None)
        self.mes: tuple = (None, None, None)
        # with backtracking: (f(y), A^T grad_W f(y), grad_b f(y)) at the prox input's point
        self.at_y: tuple | None = None


class TaskBlockWorker:
    """The blocks of tasks of one Dask worker and the solver's state on them (a Dask actor).

    Built by :class:`~multitask.solvers.distributed.DistributedDatafit`; its methods run one
    step of the distributed solver on every block of the worker and return only reductions
    and scalars.
    """

    def __init__(self, payloads: list, indices: list, builder: Callable,
                 blas_threads: int | None = 1):
        self.blas_threads = blas_threads
        self.blocks: list[_Block] = []
        self.classes: list = []
        self.penalty: Penalty | None = None
        self.backtrack = False
        with _blas_limit(blas_threads):
            for k, payload in zip(indices, payloads, strict=True):
                datafit, classes = builder(payload)
                self.blocks.append(_Block(int(k), datafit))
                self.classes.append(classes)
        del payloads

    # ----------------------------------------------------------------- description
    def describe(self) -> list[dict]:
        out = []
        for blk, classes in zip(self.blocks, self.classes, strict=True):
            df = blk.datafit
            out.append({"index": blk.index, "tasks": np.asarray(df.data.tasks),
                        "n_rows": int(df.data.n_rows), "n_features": int(df.data.n_features),
                        "capabilities": frozenset(df.capabilities), "name": df.name,
                        "intercept_variable": bool(df.has_intercept_variable),
                        "classes": classes})
        return out

    def constants(self) -> dict:
        """Lipschitz bound, measure constants and gradient-scale parts over the blocks."""
        lip, lip_w, ss, rows, g0, gfull = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        with _blas_limit(self.blas_threads):
            for blk in self.blocks:
                df = blk.datafit
                lip = max(lip, float(df.lipschitz()))
                mc = getattr(df, "measure_constants", None)
                if mc is not None:
                    L_W, s = mc()
                else:
                    L_W, s = float(df.lipschitz()), 1.0
                lip_w = max(lip_w, float(L_W))
                n = float(np.sum(df.data.task_weight_sums))  # n_rows (the rows' weights)
                ss += float(s) ** 2 * n
                rows += n
                g = df.grad_at_zero()
                g0 += float(np.vdot(g, g))
                if not g0 > 0:
                    d, m = df.data.n_features, df.data.n_tasks
                    _, gW, gb = df.value_and_grad(np.zeros((d, m)), df.init_intercept())
                    gfull += float(np.vdot(gW, gW)) + (float(np.vdot(gb, gb))
                                                      if gb is not None else 0.0)
        return {"lipschitz": lip, "lipschitz_w": lip_w, "ss": ss, "rows": rows, "g0": g0,
                "gfull": gfull}

    def alpha_stats(self, penalty: Penalty):
        """The penalty's ``alpha_max`` reduction of the gradient at zero over the blocks."""
        stats = None
        with _blas_limit(self.blas_threads):
            for blk in self.blocks:
                stats = penalty.combine_stats(stats, penalty.block_alpha_stats(
                    blk.datafit.grad_at_zero()))
        return stats

    # ----------------------------------------------------------------- solver state
    def start(self, penalty: Penalty, coefs: list | None, intercepts: list | None,
              backtrack: bool = False) -> None:
        """Set the penalty and the starting point (zeros, or the given blocks; without given
        intercepts, a loss that starts at its best intercepts, ``starts_at_best_intercept``,
        starts there, each block's tasks from their own rows). ``backtrack``: keep what the
        descent test of the module docstring needs."""
        self.penalty = penalty
        self.backtrack = bool(backtrack)
        A = penalty.linear_map
        for i, blk in enumerate(self.blocks):
            df = blk.datafit
            d, m = df.data.n_features, df.data.n_tasks
            shape = A.variable_shape(d, m)
            blk.x = np.zeros(shape) if coefs is None else np.array(coefs[i], dtype=np.float64)
            if blk.x.shape != shape:
                raise ValueError(f"coef_init has shape {blk.x.shape} on a block, expected "
                                 f"{shape}.")
            blk.b = None
            if df.has_intercept_variable:
                if intercepts is not None:
                    blk.b = np.array(intercepts[i], dtype=np.float64)
                elif coefs is None and getattr(df, "starts_at_best_intercept", False):
                    with _blas_limit(self.blas_threads):
                        blk.b = np.asarray(df.optimal_intercept_at_zero(), dtype=np.float64)
                else:
                    blk.b = np.zeros(m)
            blk.y, blk.yb = blk.x, blk.b
            blk.best = (blk.x, blk.b)
            blk.xnew = blk.bnew = blk.vin = blk.bin = blk.spec = blk.at_y = None

    def _stats(self, arrays) -> Any:
        assert self.penalty is not None
        stats = None
        for V in arrays:
            stats = self.penalty.combine_stats(stats, self.penalty.block_stats(V))
        return stats

    def x_stats(self):
        """The penalty's reduction of the current iterate (its value, or a projection)."""
        with _blas_limit(self.blas_threads):
            return self._stats(blk.x for blk in self.blocks)

    def x_project(self, plan) -> None:
        """``x <- prox_{0 h}(x)`` blockwise (a feasible start for constraint blocks)."""
        assert self.penalty is not None
        with _blas_limit(self.blas_threads):
            for blk in self.blocks:
                blk.x = self.penalty.block_prox(blk.x, plan, 0.0)
                blk.y, blk.best = blk.x, (blk.x, blk.b)

    def x_value(self, plan) -> float:
        """``sum_k f_k(A x_k, b_k) + block_value(x_k)``."""
        assert self.penalty is not None
        A = self.penalty.linear_map
        total = 0.0
        with _blas_limit(self.blas_threads):
            for blk in self.blocks:
                total += float(blk.datafit.value(A.forward(blk.x), blk.b))
                total += float(self.penalty.block_value(blk.x, plan))
        return total

    def mark_best(self) -> None:
        """The last prox step's point becomes the returned one."""
        for blk in self.blocks:
            blk.best = (blk.xnew, blk.bnew)

    def _gradient_step(self, blk: _Block, y, yb, L: float, grads: tuple | None = None):
        """``(V, b+, ||grad_b||^2, at_y)``: the prox input ``y - A^T grad_W f / L`` and the
        intercept step at ``(y, yb)`` (``grads``: the datafit's ``(f, grad_W, grad_b)``
        there, when already computed); ``at_y = (f(y), A^T grad_W, grad_b)`` with
        backtracking (else None)."""
        assert self.penalty is not None
        A = self.penalty.linear_map
        fy, gW, gb = (grads if grads is not None
                      else blk.datafit.value_and_grad(A.forward(y), yb))
        Ag = A.adjoint(gW)
        at_y = (float(fy), Ag, gb) if self.backtrack else None
        v = y - Ag / L
        if gb is not None and yb is not None:
            return v, yb - gb / L, float(np.vdot(gb, gb)), at_y
        return v, None, 0.0, at_y

    def begin(self, L: float, mark_best: bool = False, restart: bool = False):
        """The gradient step at ``y`` on every block (``y = x``: the start, or a restart that
        drops the momentum and the last prox step's point). Returns ``(stats, ||grad_b||^2)``
        of the prox input."""
        assert self.penalty is not None
        stats, gb2 = None, 0.0
        with _blas_limit(self.blas_threads):
            for blk in self.blocks:
                if mark_best:
                    blk.best = (blk.xnew, blk.bnew)
                if restart:
                    blk.xnew = blk.bnew = None
                blk.y, blk.yb = blk.x, blk.b
                blk.vin, blk.bin, g2, blk.at_y = self._gradient_step(blk, blk.y, blk.yb, L)
                gb2 += g2
                stats = self.penalty.combine_stats(stats, self.penalty.block_stats(blk.vin))
                blk.spec = None
        return stats, gb2

    def retry(self, L: float):
        """The gradient step again from the same point ``y`` with the constant ``L`` (a
        backtracking step of the client, which rejected the last prox step: its point and
        the speculative next step are dropped). Returns ``(stats, ||grad_b||^2)`` of the
        prox input."""
        assert self.penalty is not None
        stats, gb2 = None, 0.0
        with _blas_limit(self.blas_threads):
            for blk in self.blocks:
                assert blk.at_y is not None
                _, Ag, gb = blk.at_y
                blk.vin = blk.y - Ag / L
                blk.bin = None
                if gb is not None and blk.yb is not None:
                    blk.bin = blk.yb - gb / L
                    gb2 += float(np.vdot(gb, gb))
                blk.xnew = blk.bnew = blk.spec = None
                stats = self.penalty.combine_stats(stats, self.penalty.block_stats(blk.vin))
        return stats, gb2

    def step(self, plan, step: float, L: float, beta: float, accept: bool,
             mark_best: bool):
        """One iteration on every block, fused with the next one's gradient.

        First the client's decisions on the last step (``mark_best``: its point is the best
        so far; ``accept``: it is the new ``x`` and its extrapolation the new ``y``); then
        ``x+ = block_prox(V, plan)``, the loss and the blocks' penalty share at ``x+`` and
        ``||x+ - y||^2``; then, speculatively, ``y' = x+ + beta (x+ - x)`` and its gradient
        step (discarded by :meth:`begin` when the client restarts).

        Returns ``(f(x+), h share, ||x+ - y||^2, stats of the next prox input, its
        ||grad_b||^2, descent)``; ``descent`` is ``(f(y), <grad f(y), x+ - y>, ||b+ -
        b_y||^2)`` with backtracking (the other terms of the descent test), else None.
        """
        assert self.penalty is not None
        A = self.penalty.linear_map
        f, h, dx2, gb2 = 0.0, 0.0, 0.0, 0.0
        fy, lin, db2 = 0.0, 0.0, 0.0
        stats = None
        with _blas_limit(self.blas_threads):
            for blk in self.blocks:
                if mark_best:
                    blk.best = (blk.xnew, blk.bnew)
                if accept:
                    assert blk.spec is not None
                    blk.x, blk.b = blk.xnew, blk.bnew
                    blk.y, blk.yb, blk.vin, blk.bin, blk.at_y = blk.spec
                blk.spec = None
                blk.xnew = self.penalty.block_prox(blk.vin, plan, step)
                blk.bnew = blk.bin
                blk.vin = None
                h += float(self.penalty.block_value(blk.xnew, plan))
                dx = blk.xnew - blk.y
                dx2 += float(np.vdot(dx, dx))
                if blk.at_y is not None:  # the descent test's terms at y
                    fy += blk.at_y[0]
                    lin += float(np.vdot(blk.at_y[1], dx))
                    if blk.at_y[2] is not None and blk.bnew is not None:
                        db = blk.bnew - blk.yb
                        lin += float(np.vdot(blk.at_y[2], db))
                        db2 += float(np.vdot(db, db))
                y2 = blk.xnew + beta * (blk.xnew - blk.x) if beta else blk.xnew
                yb2 = blk.bnew
                if beta and blk.bnew is not None and blk.b is not None:
                    yb2 = blk.bnew + beta * (blk.bnew - blk.b)
                # the loss at x+ and the gradient at y' (one pass over a dense block; a
                # datafit of the bare protocol, without the pair, evaluates them apart)
                pair = getattr(blk.datafit, "value_pair_and_grad", None)
                if pair is None:
                    f += float(blk.datafit.value(A.forward(blk.xnew), blk.bnew))
                    grads = None
                else:
                    fx, fy2, gW, gb = pair(A.forward(blk.xnew), blk.bnew, A.forward(y2), yb2)
                    f += float(fx)
                    grads = (fy2, gW, gb)
                v2, bin2, g2, at_y2 = self._gradient_step(blk, y2, yb2, L, grads)
                gb2 += g2
                stats = self.penalty.combine_stats(stats, self.penalty.block_stats(v2))
                blk.spec = (y2, yb2, v2, bin2, at_y2)
        return f, h, dx2, stats, gb2, ((fy, lin, db2) if self.backtrack else None)

    def measure_grad(self, L: float, which: str):
        """First half of the optimality measure at ``which`` (``"xnew"`` or ``"best"``): the
        reduction of ``w - A^T grad / L`` and ``||grad_b||^2``."""
        assert self.penalty is not None
        A = self.penalty.linear_map
        gb2 = 0.0
        stats = None
        with _blas_limit(self.blas_threads):
            for blk in self.blocks:
                w, b = (blk.xnew, blk.bnew) if which == "xnew" else blk.best
                _, gW, gb = blk.datafit.value_and_grad(A.forward(w), b)
                v = w - A.adjoint(gW) / L
                if gb is not None:
                    gb2 += float(np.vdot(gb, gb))
                blk.mes = (w, v, None)
                stats = self.penalty.combine_stats(stats, self.penalty.block_stats(v))
        return stats, gb2

    def measure_prox(self, plan, step: float) -> float:
        """Second half: ``sum_k ||w_k - block_prox(v_k)||^2``."""
        assert self.penalty is not None
        total = 0.0
        with _blas_limit(self.blas_threads):
            for blk in self.blocks:
                w, v, _ = blk.mes
                r = w - self.penalty.block_prox(v, plan, step)
                total += float(np.vdot(r, r))
                blk.mes = (None, None, None)
        return total

    def collect(self, which: str = "best") -> list[tuple]:
        """``(block index, V_k, b_k, fitted intercepts_k)`` of every block."""
        assert self.penalty is not None
        A = self.penalty.linear_map
        out = []
        for blk in self.blocks:
            V, b = blk.best if which == "best" else (blk.x, blk.b)
            out.append((blk.index, V, b, blk.datafit.intercept(A.forward(V), b)))
        return out

    def task_scales(self, Ws: list, bs: list | None) -> list:
        """The fitted per-task scales of a loss that has them (the Huber loss's
        ``task_scales``) at the given blocks of ``W`` (and ``b``), one array per block."""
        out = []
        with _blas_limit(self.blas_threads):
            for i, blk in enumerate(self.blocks):
                df = blk.datafit
                z = df.scores(Ws[i], None if bs is None else bs[i])
                out.append(np.asarray(df.task_scales(z), dtype=np.float64))
        return out

    def value_and_grad(self, Ws: list, bs: list | None):
        """Loss value and gradients at the given blocks of ``W`` (and ``b``)."""
        f, gWs, gbs = 0.0, [], []
        with _blas_limit(self.blas_threads):
            for i, blk in enumerate(self.blocks):
                v, gW, gb = blk.datafit.value_and_grad(Ws[i], None if bs is None else bs[i])
                f += float(v)
                gWs.append(gW)
                gbs.append(gb)
        return f, gWs, gbs

    def release(self) -> None:
        """Drop the solver's state (the data stay)."""
        for blk in self.blocks:
            blk.x = blk.y = blk.xnew = blk.vin = blk.b = blk.yb = blk.bnew = None
            blk.bin = blk.spec = blk.at_y = None
            blk.best = (None, None)
            blk.mes = (None, None, None)
