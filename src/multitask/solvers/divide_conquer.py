"""Divide-and-conquer: solve groups of tasks apart (in parallel), then combine.

Pan, Xia, Yin & Liu, "A divide-and-conquer method for scalable robust multitask learning",
IEEE TNNLS 26(12), 2015, Algorithms 1 and 2, for any base solver and penalty:

1. the ``m`` tasks are permuted at random and cut into ``t`` groups of ``l = floor(m / t)``
   tasks, plus one smaller group of the ``m - t l`` remaining tasks when ``t`` does not divide
   ``m`` (footnote 3);
2. each group is the same model on its tasks only (the datafit restricted to them, the same
   penalty or a given group penalty), solved by the base solver, the groups in parallel;
3. the blocks are put back in the original task order and combined. ``combine="project"``
   (the paper's step, the column projection of Mackey, Talwalkar & Jordan's divide-factor-
   combine) projects the low-rank part (the block of the penalty declaring ``"low_rank"``, or
   the whole ``W`` for a low-rank penalty) onto the column space of the first group's block::

       L_hat = U U^T L,   L_1 = U diag(s) V^T  (singular values s_i > max(d, l) eps s_1)

   so that ``rank(L_hat) <= l``, the other parts kept as they are; ``combine="concatenate"``
   keeps the blocks as solved (exact for penalties separable over tasks).

The fitted intercepts are recomputed for the combined ``W`` from each group's intercept
variable (``datafit.intercept_parts``). The groups run serially, in joblib worker processes
(``backend="joblib"``; joblib's active backend, e.g. ``joblib.parallel_config(backend=
"dask")``, is honoured) or on a Dask cluster (``backend="dask"`` for the current
``dask.distributed`` client, or a ``Client`` itself). Each group is solved under
``threadpoolctl.threadpool_limits(blas_threads)``, whatever runs it, so that workers x threads
<= cores and the same seed gives bit-for-bit the same result on every backend.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from multitask.data import MultiTaskData
from multitask.losses import Datafit
from multitask.penalties.base import Penalty
from multitask.penalties.prox import safe_svd
from multitask.solvers.base import Solver, check_int, finish
from multitask.solvers.result import SolverResult

__all__ = ["COMBINES", "DivideAndConquer", "column_projection", "partition_tasks"]

#: Combine steps of :class:`DivideAndConquer`.
COMBINES = ("project", "concatenate")


def partition_tasks(n_tasks: int, n_groups: int, random_state=None) -> list[np.ndarray]:
    """Random partition of ``range(n_tasks)`` into groups (the paper's Algorithm 1).

    A random permutation is cut into ``n_groups`` consecutive chunks of
    ``l = n_tasks // n_groups`` tasks, plus one chunk of the ``n_tasks % n_groups`` remaining
    tasks when there are any (so ``n_groups + 1`` groups then). ``n_groups = 1`` gives the
    identity order.

    Returns
    -------
    groups : list of ndarray of int64
        Task indices of each group, in the permuted order.
    """
    n_tasks = int(n_tasks)
    n_groups = check_int(n_groups, "n_groups")
    if n_groups > n_tasks:
        raise ValueError(
            f"n_groups={n_groups} exceeds the number of tasks ({n_tasks}): each group needs at "
            "least one task."
        )
    if n_groups == 1:
        return [np.arange(n_tasks, dtype=np.int64)]
    perm = check_random_state(random_state).permutation(n_tasks).astype(np.int64)
    size = n_tasks // n_groups
    groups = [perm[i * size : (i + 1) * size] for i in range(n_groups)]
    if n_tasks % n_groups:
        groups.append(perm[n_groups * size :])
    return groups


def column_projection(L: np.ndarray, first: np.ndarray) -> tuple[np.ndarray, int]:
    """``U U^T L`` with ``U`` the left singular vectors of ``L[:, first]`` (numerical rank).

    Singular values ``s_i > max(d, l) * eps * s_1`` are kept (``l = len(first)``).

    Returns
    -------
    L_hat : ndarray of shape (d, m)
    rank : int
        ``rank(L[:, first])``, an upper bound of ``rank(L_hat)``.
    """
    L1 = L[:, first]
    if L1.size == 0 or not np.any(L1):
        return np.zeros_like(L), 0
    U, s, _ = safe_svd(L1)
    r = int(np.count_nonzero(s > max(L1.shape) * np.finfo(float).eps * s[0]))
    U = U[:, :r]
    return U @ (U.T @ L), r


def _low_rank_index(penalty: Penalty) -> int | None:
    """Index of the low-rank block (``-1``: the whole variable; None: no low-rank part)."""
    if penalty.parts:
        for i, p in enumerate(penalty.parts):
            if "low_rank" in p.capabilities:
                return i
        return None
    return -1 if "low_rank" in penalty.capabilities else None


# ----------------------------------------------------------------------------- workers
def _fit_group(sub: MultiTaskData, spec: dict, blas_threads: int | None) -> dict:
    """Solve one group (runs in the worker); returns plain arrays and numbers."""
    with threadpool_limits(limits=blas_threads):
        t0 = time.perf_counter()
        c0 = time.process_time()
        datafit = spec["datafit_class"](sub, **spec["datafit_params"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = spec["solver"].solve(datafit, spec["penalty"])
        c, M = datafit.intercept_parts(res.intercept_variable)
        return {
            "coef": res.coef,
            "b": res.intercept_variable,
            "c": c,
            "M": M,
            "n_iter": int(res.n_iter),
            "converged": bool(res.converged),
            "seconds": time.perf_counter() - t0,
            "cpu_seconds": time.process_time() - c0,
        }


def _get_client(backend):
    if backend == "dask":
        try:
            from distributed import get_client
        except ImportError:  # pragma: no cover - optional dependency
            raise ValueError(
                "backend='dask' needs dask.distributed (pip install 'dask[distributed]')."
            ) from None
        try:
            return get_client()
        except ValueError:
            raise ValueError(
                "backend='dask' needs a running dask.distributed Client: create one first "
                "(distributed.Client(...)) or pass it as backend."
            ) from None
    if hasattr(backend, "submit") and hasattr(backend, "gather") and hasattr(backend, "scatter"):
        return backend
    raise ValueError(
        "backend must be 'serial', 'joblib', 'dask' or a dask.distributed.Client, got "
        f"{backend!r}."
    )


def _run_groups(subs, spec, backend, n_jobs, blas_threads) -> list[dict]:
    if backend == "serial":
        return [_fit_group(s, spec, blas_threads) for s in subs]
    if backend == "joblib":
        from joblib import Parallel, delayed

        return Parallel(n_jobs=n_jobs)(delayed(_fit_group)(s, spec, blas_threads) for s in subs)
    client = _get_client(backend)
    futures = client.scatter(list(subs))
    jobs = [client.submit(_fit_group, f, spec, blas_threads, pure=False) for f in futures]
    return client.gather(jobs)


def _n_workers(backend, n_jobs, n_groups: int) -> int:
    if backend == "serial":
        return 1
    if backend == "joblib":
        from joblib import effective_n_jobs

        return max(1, min(effective_n_jobs(n_jobs), n_groups, os.cpu_count() or 1))
    try:
        return max(1, min(len(_get_client(backend).scheduler_info()["workers"]), n_groups))
    except Exception:  # noqa: BLE001 - informational only
        return 1


class DivideAndConquer(Solver):
    """Divide-and-conquer over groups of tasks with any base solver (module docstring).

    Parameters
    ----------
    base : Solver
        The solver of each group.
    n_groups : int, default=4
        ``t``: number of groups of ``floor(m / t)`` tasks (one more group holds the remainder).
    combine : {"project", "concatenate"}, default="project"
        The combine step (module docstring).
    random_state : int, RandomState instance or None
        Seed of the random partition.
    backend : "serial", "joblib", "dask" or dask.distributed.Client, default="serial"
    n_jobs : int, optional
        joblib workers (joblib's convention; capped at the number of groups and of cores).
    blas_threads : int or None, default=1
        BLAS threads of each group's solve (``None``: no limit), capped so that
        ``joblib workers x blas_threads <= os.cpu_count()``.
    warn : bool, default=True
        Warn when a group's solver did not converge.
    """

    name = "divide_conquer"
    handles_smooth_part = True
    needs_prox = False

    def __init__(self, base: Solver, *, n_groups: int = 4, combine: str = "project",
                 random_state=None, backend: Any = "serial", n_jobs: int | None = None,
                 blas_threads: int | None = 1, warn: bool = True):
        if not isinstance(base, Solver):
            raise ValueError(f"base must be a Solver, got {base!r}.")
        super().__init__(max_iter=base.max_iter, tol=base.tol, warn=warn)
        self.base = base
        self.n_groups = check_int(n_groups, "n_groups")
        if combine not in COMBINES:
            raise ValueError(f"combine must be one of {COMBINES}, got {combine!r}.")
        self.combine = combine
        self.random_state = random_state
        if not (backend in ("serial", "joblib", "dask") or (
                hasattr(backend, "submit") and hasattr(backend, "scatter"))):
            raise ValueError("backend must be 'serial', 'joblib', 'dask' or a "
                             f"dask.distributed.Client, got {backend!r}.")
        self.backend = backend
        self.n_jobs = n_jobs
        if blas_threads is not None:
            blas_threads = check_int(blas_threads, "blas_threads")
        self.blas_threads = blas_threads

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        params = super().get_params(deep)
        params.pop("max_iter", None)
        params.pop("tol", None)
        return params

    def missing(self, datafit: Datafit, penalty: Penalty) -> list[str]:
        return self.base.missing(datafit, penalty)

    def solve(self, datafit: Datafit, penalty: Penalty, *, coef_init=None, intercept_init=None,
              callback: Callable | None = None, group_penalty: Penalty | None = None
              ) -> SolverResult:
        """Solve the groups and combine; ``group_penalty`` (default ``penalty``) is the
        penalty of each group's problem. Warm starts and callbacks do not apply."""
        self.check(datafit, penalty)
        t_start = time.perf_counter()
        data = datafit.raw
        m, d = data.n_tasks, data.n_features
        groups = partition_tasks(m, self.n_groups, self.random_state)
        spec = {"datafit_class": type(datafit), "datafit_params": datafit.get_params(),
                "penalty": group_penalty if group_penalty is not None else penalty,
                "solver": self.base.with_params(warn=False)}
        n_workers = _n_workers(self.backend, self.n_jobs, len(groups))
        threads = self.blas_threads
        if threads is not None and self.backend == "joblib":
            threads = max(1, min(int(threads), (os.cpu_count() or 1) // n_workers))
        n_jobs = self.n_jobs
        if self.backend == "joblib":
            n_jobs = n_workers
        subs = [data.subset_tasks(g) for g in groups]
        outs = _run_groups(subs, spec, self.backend, n_jobs, threads)

        shape = penalty.linear_map.variable_shape(d, m)
        V = np.zeros(shape)
        c = np.zeros(m)
        M = np.zeros((d, m))
        for g, o in zip(groups, outs, strict=True):
            V[..., g] = o["coef"]
            c[g] = o["c"]
            M[:, g] = o["M"]
        V_concat = V.copy()
        rank = None
        idx = _low_rank_index(penalty)
        with threadpool_limits(limits=threads):
            if self.combine == "project" and idx is not None and len(groups) > 1:
                L = V[idx] if idx >= 0 else V
                L_hat, rank = column_projection(L, groups[0])
                if rank == 0 and np.any(L):
                    # the first block is zero but others are not: the paper's rule would
                    # discard every low-rank part, so project on the block of largest rank
                    ranks = [int(np.linalg.matrix_rank(L[:, g])) for g in groups]
                    best = int(np.argmax(ranks))
                    L_hat, rank = column_projection(L, groups[best])
                    warnings.warn(
                        "The low-rank block of the first group is zero: projecting on the "
                        f"block of group {best} (rank {rank}) instead.",
                        UserWarning, stacklevel=2,
                    )
                if idx >= 0:
                    V[idx] = L_hat
                else:
                    V = L_hat
        W = penalty.linear_map.forward(V)
        converged = [o["converged"] for o in outs]
        if self.warn and not all(converged):
            bad = [i for i, ok in enumerate(converged) if not ok]
            warnings.warn(
                f"The base solver did not converge on group(s) {bad} of {len(groups)}; "
                "increase its max_iter or tol.",
                ConvergenceWarning, stacklevel=2,
            )
        result = finish(self, datafit, penalty, V, None, n_iter=max(o["n_iter"] for o in outs),
                        objective=[], times=[], converged=all(converged), t0=t_start,
                        exhausted=False,
                        info={"groups": groups, "coef_concat": V_concat, "rank": rank,
                              "n_iter_groups": [o["n_iter"] for o in outs],
                              "converged_groups": converged,
                              "seconds_groups": [o["seconds"] for o in outs],
                              "cpu_seconds_groups": [o["cpu_seconds"] for o in outs],
                              "n_workers": n_workers, "blas_threads": threads})
        # the intercepts of the combined weights, from each group's intercept variable
        result.intercept = c - np.einsum("jt,jt->t", M, W)
        result.intercept_variable = None
        return result
