"""Divide-and-conquer: solve groups of tasks apart (in parallel), then combine.

Pan, Xia, Yin & Liu, "A divide-and-conquer method for scalable robust multitask learning",
IEEE TNNLS 26(12), 2015, Algorithms 1 and 2, for any base solver and penalty:

1. the ``m`` tasks are permuted at random and cut into ``t`` groups of ``l = floor(m / t)``
   tasks, plus one smaller group of the ``m - t l`` remaining tasks when ``t`` does not divide
   ``m`` (footnote 3); with ``n_anchors = k > 0`` the first ``k`` tasks of the permutation are
   *anchors*, the others are cut into the groups, and every group solves its tasks plus the
   anchors;
2. each group is the same model on its tasks only (the datafit restricted to them, the same
   penalty or a given group penalty), solved by the base solver, the groups in parallel;
3. the blocks are put back in the original task order (an anchor task gets the mean of its
   columns and intercept variables over the groups) and combined. The low-rank part ``L`` is
   the block of the penalty declaring ``"low_rank"`` (the whole ``W`` for a low-rank penalty);
   the other parts are kept as solved. The combine steps (:data:`COMBINES`):

   * ``"project"``, the paper's step (the column projection of Mackey, Talwalkar & Jordan's
     divide-factor-combine): ``L`` is projected onto the column space of the first group's
     block (:func:`column_projection`), so ``rank(L_hat) <= l``;
   * ``"concatenate"``: the blocks as solved (exact for penalties separable over tasks);
   * ``"svd"``: ``L`` is projected onto its own ``r`` leading left singular vectors,
     ``L_hat = U_r U_r^T L`` (:func:`leading_subspace`), with ``r`` (``rank``) by default the
     largest numerical rank of the groups' blocks: every group estimates the shared subspace,
     and the leading directions of all of them together replace the first group's alone;
   * ``"anchor"``: the ``"svd"`` step on a partition with anchor tasks (``n_anchors``, by
     default ``ceil(l / 4)``): every group also fits the anchors, which ties the groups'
     subspaces to the same tasks;
   * ``"refine"``: ``refine_iter`` iterations of ``refine_solver`` (by default the base
     solver) on the full problem, warm-started at the blocks as solved (the concatenation,
     whose full objective is the lowest of the combines and whose rank is not truncated; at
     the ``"svd"`` step's point when ``rank`` is given); it stops earlier when that solver's
     stopping rule holds.

The fitted intercepts are recomputed for the combined ``W`` from each group's intercept
variable (``datafit.intercept_parts``), or come from the refinement. The groups run serially,
in joblib worker processes (``backend="joblib"``; joblib's active backend, e.g.
``joblib.parallel_config(backend="dask")``, is honoured) or on a Dask cluster
(``backend="dask"`` for the current ``dask.distributed`` client, or a ``Client`` itself).
Each group is solved under ``threadpoolctl.threadpool_limits(blas_threads)``, whatever runs
it, and the combine step and the refinement run in the calling process under the same limit,
so that workers x threads <= cores and the same seed gives bit-for-bit the same result on
every backend.
"""

from __future__ import annotations

import math
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
from multitask.solvers.base import Solver, check_int
from multitask.solvers.iteration import IterationRecord
from multitask.solvers.result import SolverResult

__all__ = [
    "COMBINES",
    "DEFAULT_COMBINE",
    "DivideAndConquer",
    "column_projection",
    "leading_subspace",
    "numerical_rank",
    "partition_tasks",
]

#: Combine steps of :class:`DivideAndConquer` (module docstring).
COMBINES = ("project", "concatenate", "svd", "anchor", "refine")
#: The robust estimators' default combine step (chosen by ``benchmarks/bench_dc_combine.py``;
#: :class:`DivideAndConquer` itself defaults to the paper's ``"project"``).
DEFAULT_COMBINE = "refine"
#: Default iteration budget of the refinement (``combine="refine"``): at the 6,000 x 2,000
#: x 200 benchmark (``benchmarks/diagnose_dc_refine.py``, 3 seeds) 1,000 iterations kept the
#: AUC of APG run to convergence (+0.04 points on average) at a fraction of its CPU (the
#: figure: docs/tuning_constants.md); 350 (the previous default) lost 2.7 points.
REFINE_ITER = 1000


def partition_tasks(n_tasks: int, n_groups: int, random_state=None, n_anchors: int = 0
                    ) -> list[np.ndarray]:
    """Random partition of ``range(n_tasks)`` into groups (the paper's Algorithm 1).

    A random permutation is cut into ``n_groups`` consecutive chunks of
    ``l = n_tasks // n_groups`` tasks, plus one chunk of the ``n_tasks % n_groups`` remaining
    tasks when there are any (so ``n_groups + 1`` groups then). ``n_groups = 1`` gives the
    identity order. With ``n_anchors = k > 0`` the first ``k`` tasks of the permutation are
    set apart and the other ``n_tasks - k`` are cut as above; use :func:`anchor_partition`
    to get the anchors too.

    Returns
    -------
    groups : list of ndarray of int64
        Task indices of each group, in the permuted order (without the anchors).
    """
    return anchor_partition(n_tasks, n_groups, random_state, n_anchors)[1]


def anchor_partition(n_tasks: int, n_groups: int, random_state=None, n_anchors: int = 0
                     ) -> tuple[np.ndarray, list[np.ndarray]]:
    """``(anchors, groups)``: :func:`partition_tasks` with ``n_anchors`` anchor tasks.

    The anchors are the first ``n_anchors`` tasks of the random permutation; the groups cut
    the remaining ``n_tasks - n_anchors`` tasks into ``n_groups`` chunks of
    ``floor((n_tasks - n_anchors) / n_groups)`` tasks (plus a remainder chunk).
    """
    n_tasks = int(n_tasks)
    n_groups = check_int(n_groups, "n_groups")
    n_anchors = check_int(n_anchors, "n_anchors", low=0)
    if n_groups + n_anchors > n_tasks:
        raise ValueError(
            f"n_groups={n_groups} exceeds the number of tasks ({n_tasks}"
            + (f" minus {n_anchors} anchors" if n_anchors else "")
            + "): each group needs at least one task."
        )
    if n_groups == 1 and n_anchors == 0:
        return np.zeros(0, dtype=np.int64), [np.arange(n_tasks, dtype=np.int64)]
    perm = check_random_state(random_state).permutation(n_tasks).astype(np.int64)
    anchors, rest = perm[:n_anchors], perm[n_anchors:]
    size = rest.size // n_groups
    groups = [rest[i * size : (i + 1) * size] for i in range(n_groups)]
    if rest.size % n_groups:
        groups.append(rest[n_groups * size :])
    return anchors, groups


def numerical_rank(s: np.ndarray, shape: tuple[int, ...]) -> int:
    """``#{i : s_i > max(shape) * eps * s_1}`` for singular values ``s`` (non-increasing)."""
    if s.size == 0 or s[0] <= 0:
        return 0
    return int(np.count_nonzero(s > max(shape) * np.finfo(float).eps * s[0]))


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
    r = numerical_rank(s, L1.shape)
    U = U[:, :r]
    return U @ (U.T @ L), r


def leading_subspace(L: np.ndarray, groups: list[np.ndarray], rank: int | None = None
                     ) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """The leading left singular vectors of ``L`` from the SVDs of its column blocks.

    With ``L[:, g] = U_g diag(s_g) V_g^T`` (thin SVD, numerical rank ``r_g``) for column blocks
    ``g`` partitioning the columns, ``L = C B`` with ``C = [U_1 diag(s_1), ..., U_t diag(s_t)]``
    (``d x sum_g r_g``) and ``B`` block diagonal with orthonormal rows, so the singular values
    and left singular vectors of ``L`` are those of ``C``: an exact SVD at the cost of the
    blocks' ranks (the groups' blocks are low-rank prox outputs).

    Parameters
    ----------
    L : ndarray of shape (d, m)
    groups : list of ndarray of int
        Column blocks covering every column once.
    rank : int, optional
        Number of vectors returned; default ``max_g r_g`` (the largest block rank).

    Returns
    -------
    U : ndarray of shape (d, r)
        ``r = min(rank, rank(L))`` leading left singular vectors of ``L``.
    s : ndarray
        All the nonzero singular values of ``L`` (non-increasing).
    block_ranks : list of int
        ``r_g`` of every block.
    """
    d = L.shape[0]
    factors, ranks = [], []
    for g in groups:
        B = L[:, g]
        if B.size == 0 or not np.any(B):
            ranks.append(0)
            continue
        U, s, _ = safe_svd(B)
        r = numerical_rank(s, B.shape)
        ranks.append(r)
        factors.append(U[:, :r] * s[:r])
    if not factors:
        return np.zeros((d, 0)), np.zeros(0), ranks
    C = np.hstack(factors)
    U, s, _ = safe_svd(C)
    r_all = numerical_rank(s, L.shape)
    r = max(ranks) if rank is None else int(rank)
    r = min(r, r_all)
    return U[:, :r], s[:r_all], ranks


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
    # fresh keys: content-hashed keys of equal data scattered again (the same problem fitted
    # twice) may be released by the earlier futures' late release (see
    # multitask.solvers.distributed), cancelling the groups with "lost dependencies"
    futures = client.scatter(list(subs), hash=False)
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


def _assemble(outs: list[dict], groups: list[np.ndarray], anchors: np.ndarray,
              shape: tuple, m: int):
    """``(V, c, M, b)``: the groups' blocks put back in the task order (an anchor task gets
    the mean of its columns and intercept variables over the groups; the anchors come
    first in each group's solution), with each group's intercept parts ``c``, ``M``
    (:meth:`~multitask.losses.Datafit.intercept_parts`) and intercept variables ``b`` (None
    unless every group has them)."""
    d = shape[-2]
    V = np.zeros(shape)
    c = np.zeros(m)
    M = np.zeros((d, m))
    has_b = all(o["b"] is not None for o in outs)
    b = np.zeros(m) if has_b else None
    k = anchors.size
    for g, o in zip(groups, outs, strict=True):
        V[..., g] = o["coef"][..., k:]
        c[g] = o["c"][k:]
        M[:, g] = o["M"][:, k:]
        if b is not None:
            b[g] = o["b"][k:]
    if k:  # an anchor task: the mean of its columns over the groups
        n_out = len(outs)
        V[..., anchors] = sum(o["coef"][..., :k] for o in outs) / n_out
        c[anchors] = sum(o["c"][:k] for o in outs) / n_out
        M[:, anchors] = outs[0]["M"][:, :k]
        if b is not None:
            b[anchors] = sum(o["b"][:k] for o in outs) / n_out
    return V, c, M, b


def _block_rank(L: np.ndarray) -> int:
    """The numerical rank of a block (0 for an empty or zero block)."""
    if not (L.size and np.any(L)):
        return 0
    return numerical_rank(np.linalg.svd(L, compute_uv=False), L.shape)


def default_anchors(n_tasks: int, n_groups: int) -> int:
    """``ceil(l / 4)`` anchor tasks for groups of ``l = floor(n_tasks / n_groups)`` tasks,
    at most ``n_tasks - n_groups``."""
    l = n_tasks // n_groups
    return max(0, min(math.ceil(l / 4), n_tasks - n_groups))


class DivideAndConquer(Solver):
    """Divide-and-conquer over groups of tasks with any base solver (module docstring).

    Parameters
    ----------
    base : Solver
        The solver of each group.
    n_groups : int, default=4
        ``t``: number of groups of ``floor(m / t)`` tasks (one more group holds the remainder).
    combine : {"project", "concatenate", "svd", "anchor", "refine"}, default="project"
        The combine step (module docstring); ``"project"`` is the paper's (the estimators
        default to :data:`DEFAULT_COMBINE`).
    rank : int, optional
        Rank ``r`` of the ``"svd"`` and ``"anchor"`` projections (default the largest
        numerical rank of the groups' low-rank blocks); for ``"refine"``, the rank of the
        ``"svd"`` step before the refinement (default: no projection).
    n_anchors : int, optional
        Anchor tasks of ``combine="anchor"`` (default ``ceil(floor(m / t) / 4)``).
    refine_iter : int, default=1000
        Iteration budget of the refinement (``combine="refine"``).
    refine_solver : Solver, optional
        Solver of the refinement (default: ``base``); run with ``max_iter=refine_iter``.
    random_state : int, RandomState instance or None
        Seed of the random partition.
    backend : "serial", "joblib", "dask" or dask.distributed.Client, default="serial"
    n_jobs : int, optional
        joblib workers (joblib's convention; capped at the number of groups and of cores).
    blas_threads : int or None, default=1
        BLAS threads of each group's solve, of the combine step and of the refinement
        (``None``: no limit), capped so that ``joblib workers x blas_threads <=
        os.cpu_count()`` for the groups.
    warn : bool, default=True
        Warn when a group's solver did not converge, and (with ``check_rank``) when a group's
        low-rank block has full rank (the group is too small for the rank the data call for).
    check_rank : bool, default=True
        The full-rank check above (the estimators make their own check before dividing).
    """

    name = "divide_conquer"
    by_name = False  # built around a base solver
    handles_smooth_part = True
    needs_prox = False

    def __init__(self, base: Solver, *, n_groups: int = 4, combine: str = "project",
                 rank: int | None = None, n_anchors: int | None = None,
                 refine_iter: int = REFINE_ITER, refine_solver: Solver | None = None,
                 random_state=None, backend: Any = "serial", n_jobs: int | None = None,
                 blas_threads: int | None = 1, warn: bool = True, check_rank: bool = True):
        if not isinstance(base, Solver):
            raise ValueError(f"base must be a Solver, got {base!r}.")
        super().__init__(max_iter=base.max_iter, tol=base.tol, warn=warn)
        self.base = base
        self.n_groups = check_int(n_groups, "n_groups")
        if combine not in COMBINES:
            raise ValueError(f"combine must be one of {COMBINES}, got {combine!r}.")
        self.combine = combine
        self.check_rank = bool(check_rank)
        self.rank = None if rank is None else check_int(rank, "rank")
        self.n_anchors = None if n_anchors is None else check_int(n_anchors, "n_anchors", low=0)
        self.refine_iter = check_int(refine_iter, "refine_iter", low=0)
        if refine_solver is not None and not isinstance(refine_solver, Solver):
            raise ValueError(f"refine_solver must be a Solver or None, got {refine_solver!r}.")
        self.refine_solver = refine_solver
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

    @property
    def label(self) -> str:
        return f"dc-{self.combine}({self.base.label})"

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        params = super().get_params(deep)
        params.pop("max_iter", None)
        params.pop("tol", None)
        return params

    def missing(self, datafit: Datafit, penalty: Penalty) -> list[str]:
        out = self.base.missing(datafit, penalty)
        if self.combine == "refine" and self.refine_solver is not None:
            out += [m for m in self.refine_solver.missing(datafit, penalty) if m not in out]
        return out

    def _anchors(self, m: int) -> int:
        if self.combine != "anchor" or self.n_groups == 1:
            return 0
        k = default_anchors(m, self.n_groups) if self.n_anchors is None else self.n_anchors
        return min(k, m - self.n_groups)

    def solve(self, datafit: Datafit, penalty: Penalty, *, coef_init=None, intercept_init=None,
              callback: Callable | None = None, group_penalty: Penalty | None = None
              ) -> SolverResult:
        """Solve the groups and combine; ``group_penalty`` (default ``penalty``) is the
        penalty of each group's problem. Warm starts do not apply to the groups; the
        callback is passed to the refinement."""
        run = IterationRecord(self, datafit, penalty)
        c_start = time.process_time()
        data = datafit.raw
        m, d = data.n_tasks, data.n_features
        anchors, groups = anchor_partition(m, self.n_groups, self.random_state,
                                           self._anchors(m))
        solved = [np.concatenate([anchors, g]) for g in groups]
        outs, run_info = self._solve_groups(datafit, penalty if group_penalty is None
                                            else group_penalty, data, solved, len(groups))
        V, c, M, b = _assemble(outs, groups, anchors,
                               penalty.linear_map.variable_shape(d, m), m)
        V_concat = V.copy()
        refine_info: dict[str, Any] = {}
        result: SolverResult | None = None
        with threadpool_limits(limits=self.blas_threads):
            V, rank, block_ranks = self._combine(penalty, V, groups, anchors, outs)
            W = penalty.linear_map.forward(V)
            intercept = c - np.einsum("jt,jt->t", M, W)
            if self.combine == "refine" and self.refine_iter > 0 and len(groups) > 1:
                result, refine_info = self._refine(datafit, penalty, V, b, callback)
        self._check_group_ranks(solved, block_ranks)
        converged = [o["converged"] for o in outs]
        if self.warn and not all(converged):
            bad = [i for i, ok in enumerate(converged) if not ok]
            warnings.warn(
                f"The base solver did not converge on group(s) {bad} of {len(groups)}; "
                "increase its max_iter or tol.",
                ConvergenceWarning, stacklevel=2,
            )
        info = {"groups": groups, "anchors": anchors, "solved_groups": solved,
                "combine": self.combine,
                "coef_concat": V_concat, "coef_combined": V, "rank": rank,
                "block_ranks": block_ranks,
                "n_iter_groups": [o["n_iter"] for o in outs], "converged_groups": converged,
                "seconds_groups": [o["seconds"] for o in outs],
                "cpu_seconds_groups": [o["cpu_seconds"] for o in outs],
                **run_info, **refine_info}
        n_iter = max(o["n_iter"] for o in outs)
        if result is not None:
            result.info = {**result.info, **info}
            result.n_iter = n_iter + int(result.n_iter)
            result.time = run.elapsed()
            result.info["parent_cpu_seconds"] = time.process_time() - c_start
            return result
        # the objective of the full problem at the combined point
        if not (datafit.has_intercept_variable and b is None):
            run.record(datafit.value(W, b) + penalty.value(V))
        with threadpool_limits(limits=self.blas_threads):  # the measure's spectral norms
            result = run.finish(V, b, n_iter=n_iter, converged=all(converged),
                                exhausted=False, info=info)
        # the intercepts of the combined weights, from each group's intercept variable
        result.intercept = intercept
        result.intercept_variable = b
        result.info["parent_cpu_seconds"] = time.process_time() - c_start
        return result

    def _solve_groups(self, datafit: Datafit, penalty: Penalty, data: MultiTaskData,
                      solved: list[np.ndarray], n_groups: int) -> tuple[list[dict], dict]:
        """Each group's problem (its tasks, and the anchors) solved by the base solver on
        the backend: the groups' outcomes (:func:`_fit_group`) and what the run reports
        of the workers (their number, BLAS threads and wall-clock seconds)."""
        spec = {"datafit_class": type(datafit), "datafit_params": datafit.get_params(),
                "penalty": penalty, "solver": self.base.with_params(warn=False)}
        n_workers = _n_workers(self.backend, self.n_jobs, n_groups)
        threads = self.blas_threads
        if threads is not None and self.backend == "joblib":
            threads = max(1, min(int(threads), (os.cpu_count() or 1) // n_workers))
        n_jobs = self.n_jobs
        if self.backend == "joblib":
            n_jobs = n_workers
        subs = [data.subset_tasks(g) for g in solved]
        t_groups = time.perf_counter()
        outs = _run_groups(subs, spec, self.backend, n_jobs, threads)
        t_groups = time.perf_counter() - t_groups
        return outs, {"groups_wall_seconds": t_groups, "n_workers": n_workers,
                      "blas_threads": threads}

    def _combine(self, penalty: Penalty, V: np.ndarray, groups: list[np.ndarray],
                 anchors: np.ndarray, outs: list[dict]
                 ) -> tuple[np.ndarray, int | None, list[int]]:
        """The combine step on the blocks as solved, ``V`` (module docstring): ``(V
        combined, rank of the projection or None, the numerical rank of each group's own
        low-rank block)``. The refinement starts from the blocks as solved (the lowest full
        objective of the combines, no truncation) unless a rank is given."""
        rank = None
        idx = _low_rank_index(penalty)
        k = anchors.size
        block_ranks: list[int] | None = None
        project = self.combine not in ("concatenate", "refine") or self.rank is not None
        if idx is not None and len(groups) > 1 and project:
            L = V[idx] if idx >= 0 else V
            if self.combine == "project":
                L_hat, rank = self._project(L, groups)
            else:
                cover = groups if k == 0 else [anchors, *groups]
                U, _, cover_ranks = leading_subspace(L, cover, self.rank)
                if k == 0:  # the blocks of L are the groups' blocks: their ranks are known
                    block_ranks = cover_ranks
                rank = U.shape[1]
                L_hat = U @ (U.T @ L)
            if idx >= 0:
                V[idx] = L_hat
            else:
                V = L_hat
        if block_ranks is None:
            block_ranks = ([] if idx is None
                           else [_block_rank(o["coef"][idx] if idx >= 0 else o["coef"])
                                 for o in outs])
        return V, rank, block_ranks

    def _refine(self, datafit: Datafit, penalty: Penalty, V: np.ndarray, b, callback
                ) -> tuple[SolverResult, dict[str, Any]]:
        """``refine_iter`` iterations of the refinement solver on the full problem from the
        combined ``(V, b)``: its result and what the run reports of it."""
        solver = (self.refine_solver or self.base).with_params(max_iter=self.refine_iter,
                                                               warn=False)
        t_ref, c_ref = time.perf_counter(), time.process_time()
        result = solver.solve(datafit, penalty, coef_init=V.copy(),
                              intercept_init=b if datafit.has_intercept_variable else None,
                              callback=callback)
        return result, {"refine_n_iter": int(result.n_iter),
                        "refine_converged": bool(result.converged),
                        "refine_seconds": time.perf_counter() - t_ref,
                        "refine_cpu_seconds": time.process_time() - c_ref,
                        "refine_solver": solver.label}

    @staticmethod
    def _project(L: np.ndarray, groups: list[np.ndarray]) -> tuple[np.ndarray, int]:
        """The paper's step: ``L`` on the column space of the first group's block."""
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
                UserWarning, stacklevel=4,
            )
        return L_hat, rank

    def _check_group_ranks(self, solved, block_ranks) -> None:
        """Warn when a group's low-rank block has full rank (as many as its tasks)."""
        if not (self.warn and self.check_rank) or not block_ranks or len(solved) < 2:
            return
        sizes = [len(g) for g in solved]
        full = [i for i, (r, n) in enumerate(zip(block_ranks, sizes, strict=True))
                if n > 1 and r >= n]
        if full:
            warnings.warn(
                f"Divide-and-conquer: the low-rank block of group(s) {full} has full rank "
                f"({block_ranks[full[0]]} for {sizes[full[0]]} tasks): the data call for a "
                "rank at least the group size, which groups of this size cannot show, so the "
                "combined model may lose accuracy. Use fewer groups (n_groups), or a combine "
                "step that refines on the full problem (combine='refine').",
                UserWarning, stacklevel=3,
            )
