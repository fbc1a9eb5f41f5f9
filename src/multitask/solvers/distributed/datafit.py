"""The datafit of a distributed fit: blocks of tasks on Dask workers seen from the client.

:class:`DistributedDatafit` starts one :class:`TaskBlockWorker` actor per worker over the
blocks of a :class:`TaskBlocks` and offers the client what the solver and the estimators
read of a datafit: the sizes, the capabilities, the Lipschitz bound ``L = max_k L_k`` (the
Hessian is block diagonal over tasks) and the gradient scale ``||grad f(0, b_0)||_F =
sqrt(sum_k ||grad f_k(0, b_0)||_F^2)``; the loss is a sum over tasks, so the blocks'
datafits sum to the whole.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from multitask.penalties.base import Penalty
from multitask.solvers.distributed.blocks import TaskBlocks
from multitask.solvers.distributed.cluster import future_result
from multitask.solvers.distributed.workers import TaskBlockWorker

__all__ = ["DataLayout", "DistributedDatafit"]


class DataLayout:
    """What the estimators read of ``datafit.data``: sizes and task ids."""

    def __init__(self, tasks: np.ndarray, n_features: int, n_rows: int):
        self.tasks = tasks
        self.n_features = int(n_features)
        self.n_rows = int(n_rows)

    @property
    def n_tasks(self) -> int:
        return len(self.tasks)


class DistributedDatafit:
    """A datafit whose blocks of tasks live on Dask workers (one :class:`TaskBlockWorker`
    actor per worker holding its blocks).

    It offers what :class:`~multitask.solvers.distributed.DistributedProximalGradient` and the
    estimators need: the sizes (``data.n_tasks``, ``data.n_features``, ``data.tasks``),
    ``capabilities`` and ``name`` (those of the blocks' datafits), ``has_intercept_variable``,
    ``lipschitz()`` (the largest of the blocks', which is the whole datafit's: the Hessian is
    block diagonal over tasks), ``measure_constants()``, ``gradient_scale()`` (``||grad f(0,
    b_0)||_F`` from the blocks' squared norms) and ``value_and_grad(W, b)`` (for reporting;
    one round trip with all of ``W``). The loss is a sum over tasks, so the blocks' datafits
    sum to the whole.

    Parameters
    ----------
    blocks : TaskBlocks
    builder : callable
        Maps a block's payload to ``(datafit, classes)`` on its worker.
    blas_threads : int or None
        BLAS threads of the actors' computations.
    """

    def __init__(self, blocks: TaskBlocks, builder: Callable, *, blas_threads: int | None = 1):
        client = blocks.client
        self.client = client
        self.blocks = blocks
        who = client.who_has(blocks.futures)
        by_worker: dict[str, list[int]] = {}
        for k, fut in enumerate(blocks.futures):
            holders = sorted(who.get(fut.key, ()))
            addr = holders[0] if holders else sorted(client.scheduler_info()["workers"])[
                k % len(client.scheduler_info()["workers"])]
            by_worker.setdefault(addr, []).append(k)
        self.worker_blocks = by_worker
        actor_futs = [client.submit(TaskBlockWorker, [blocks.futures[k] for k in ks], ks,
                                    builder, blas_threads, actor=True, workers=[addr],
                                    pure=False)
                      for addr, ks in by_worker.items()]
        self.actors = [f.result() for f in actor_futs]
        self._actor_futures = actor_futs
        metas = {}
        for desc in self._all(lambda a: a.describe()):
            for item in desc:
                metas[item["index"]] = item
        order = [metas[k] for k in range(blocks.n_blocks)]
        self.capabilities = frozenset.intersection(*[m["capabilities"] for m in order])
        names = {m["name"] for m in order}
        if len(names) > 1:
            raise ValueError(f"The blocks have different losses {sorted(names)}.")
        self.name = names.pop()
        self.has_intercept_variable = any(m["intercept_variable"] for m in order)
        classes = [m["classes"] for m in order]
        if classes[0] is not None:
            for c in classes[1:]:
                if not np.array_equal(np.asarray(c), np.asarray(classes[0])):
                    raise ValueError(f"The blocks have different classes ({classes[0]!r} and "
                                     f"{c!r}): each task needs both classes.")
        self.classes = classes[0]
        tasks = [np.asarray(m["tasks"]) for m in order]
        self.block_offsets = np.concatenate([[0], np.cumsum([len(t) for t in tasks])]).astype(
            np.int64)
        all_tasks = np.concatenate(tasks)
        self.data = DataLayout(all_tasks, order[0]["n_features"],
                            sum(m["n_rows"] for m in order))
        self._constants: dict | None = None

    # ----------------------------------------------------------------- plumbing
    def _all(self, call: Callable) -> list:
        """``call(actor)`` on every actor (concurrently), results in actor order."""
        return [future_result(f) for f in [call(a) for a in self.actors]]

    def _constants_all(self) -> dict:
        if self._constants is None:
            parts = self._all(lambda a: a.constants())
            self._constants = {
                "lipschitz": max(p["lipschitz"] for p in parts),
                "lipschitz_w": max(p["lipschitz_w"] for p in parts),
                "s": float(np.sqrt(sum(p["ss"] for p in parts)
                                   / (sum(p["rows"] for p in parts) or 1))),
                "g0": sum(p["g0"] for p in parts),
                "gfull": sum(p["gfull"] for p in parts),
            }
        return self._constants

    # ----------------------------------------------------------------- the Datafit protocol
    def lipschitz(self) -> float:
        return float(self._constants_all()["lipschitz"])

    def measure_constants(self) -> tuple[float, float]:
        c = self._constants_all()
        return float(c["lipschitz_w"]), float(c["s"]) if c["s"] > 0 else 1.0

    def gradient_scale(self) -> float:
        c = self._constants_all()
        scale = float(np.sqrt(c["g0"]))
        if not scale > 0:
            scale = float(np.sqrt(c["gfull"]))
        return scale if np.isfinite(scale) and scale > 0 else 1.0

    def split(self, A: np.ndarray) -> list[list]:
        """The task columns of ``A`` (last axis) per actor, in the actors' block order."""
        out = []
        for ks in self.worker_blocks.values():
            out.append([A[..., self.block_offsets[k]:self.block_offsets[k + 1]] for k in ks])
        return out

    def value_and_grad(self, W: np.ndarray, b: np.ndarray | None = None):
        """``(F, dF/dW, dF/db)`` with all of ``W`` sent to the workers (for reporting)."""
        Ws = self.split(np.asarray(W, dtype=np.float64))
        bs = self.split(np.asarray(b)) if b is not None else [None] * len(self.actors)
        res = [future_result(a.value_and_grad(w, bb))
               for a, w, bb in zip(self.actors, Ws, bs, strict=True)]
        G = np.empty_like(np.asarray(W, dtype=np.float64))
        gb = np.empty(self.data.n_tasks) if self.has_intercept_variable else None
        for ks, (_, gWs, gbs) in zip(self.worker_blocks.values(), res, strict=True):
            for k, gW, g in zip(ks, gWs, gbs, strict=True):
                sl = slice(self.block_offsets[k], self.block_offsets[k + 1])
                G[:, sl] = gW
                if gb is not None and g is not None:
                    gb[sl] = g
        return float(sum(r[0] for r in res)), G, gb

    def task_scales(self, W: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
        """The per-task scales of a loss that fits them (the Huber loss's ``task_scales``) at
        ``(W, b)``, computed on the blocks (each task's scale is its own rows'), in the order
        of ``data.tasks``."""
        Ws = self.split(np.asarray(W, dtype=np.float64))
        bs = self.split(np.asarray(b)) if b is not None else [None] * len(self.actors)
        res = [future_result(a.task_scales(w, bb))
               for a, w, bb in zip(self.actors, Ws, bs, strict=True)]
        out = np.empty(self.data.n_tasks)
        for ks, parts in zip(self.worker_blocks.values(), res, strict=True):
            for k, part in zip(ks, parts, strict=True):
                out[self.block_offsets[k]:self.block_offsets[k + 1]] = part
        return out

    def alpha_max(self, penalty: Penalty) -> float:
        """``penalty.alpha_max`` of the gradient at zero, from its blockwise reduction."""
        stats = None
        for s in self._all(lambda a: a.alpha_stats(penalty)):
            stats = penalty.combine_stats(stats, s)
        return float(penalty.alpha_max_from_stats(stats))

    def close(self) -> None:
        """Release the actors (and with them the blocks' datafits)."""
        self.actors = []
        self._actor_futures = []
