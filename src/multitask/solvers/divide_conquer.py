"""Divide-and-conquer robust multi-task learning (DC-RMTL) and its base solvers.

Pan, Xia, Yin & Liu, "A divide-and-conquer method for scalable robust multitask learning",
IEEE TNNLS 26(12), 2015, Algorithms 1 and 2:

1. the ``m`` tasks are permuted at random and cut into ``t`` groups of ``l = floor(m / t)``
   tasks, plus one smaller group of the ``m - t l`` remaining tasks when ``t`` does not divide
   ``m`` (footnote 3);
2. each group is an independent, smaller robust MTL problem (same loss, same ``alpha``, ``lam``
   multiplied by ``lam_scale``), solved by a base solver (:func:`~multitask.solvers.ladm.
   ladm_rmtl` or :func:`apg_rmtl`), the groups in parallel;
3. the blocks are put back in the original task order, ``L = [L_1, ..., L_t]``,
   ``E = [E_1, ..., E_t]``, and ``L`` is projected onto the column space of the block of the
   first group (the column projection of Mackey, Talwalkar & Jordan's divide-factor-combine)::

       L_hat = U U^T L,   L_1 = U diag(s) V^T  (singular values s_i > max(d, l) eps s_1)

   so that ``rank(L_hat) <= l``; ``E`` is kept as it is.

The intercepts are recomputed for ``W = L_hat + E`` in the centred parametrization of the
groups' solutions: ``b_t = b'_t - mean(X_t)^T w_t`` with ``b'_t = mean(y_t)`` for the squared
loss and the group's fitted centred intercept for the squared hinge.

The groups run serially, in joblib worker processes (``backend="joblib"``; joblib's active
backend, e.g. ``joblib.parallel_config(backend="dask")``, is honoured) or on a Dask cluster
(``backend="dask"`` for the current ``dask.distributed`` client, or a ``Client`` itself). Each
group is solved under ``threadpoolctl.threadpool_limits(blas_threads)``, whatever runs it, so
that workers x threads <= cores and the same seed gives bit-for-bit the same result on every
backend.
"""

from __future__ import annotations

import os
import time
import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from multitask.data import MultiTaskData, check_scalar_param
from multitask.losses import Datafit, Squared, SquaredHinge
from multitask.penalties._prox import safe_svd
from multitask.penalties.composite import BlockPenalty, SumMap
from multitask.penalties.norms import ColumnL2, TraceNorm
from multitask.solvers.fista import fista
from multitask.solvers.ladm import LADM_PAPER_CONSTANTS, _tau, ladm_rmtl
from multitask.solvers.result import SolverResult

__all__ = [
    "apg_rmtl",
    "make_rmtl_datafit",
    "solve_rmtl",
    "partition_tasks",
    "column_projection",
    "divide_and_conquer",
    "BASE_SOLVERS",
    "CenteredSquaredHinge",
]

_LOSSES = {"squared": Squared, "squared_hinge": SquaredHinge}


# ----------------------------------------------------------------------------- base solvers
def apg_rmtl(
    datafit: Datafit,
    alpha: float,
    lam: float,
    *,
    mode: str = "exact",
    tol: float | None = None,
    max_iter: int = 10000,
    coef_init: np.ndarray | None = None,
    intercept_init: np.ndarray | None = None,
    warn: bool = True,
    **ignored: Any,
) -> SolverResult:
    """Accelerated proximal gradient for penalized robust MTL (the paper's APG-RMTL baseline).

    Minimizes ``F(L + E, b) + alpha * ||L||_* + alpha * lam * sum_t ||E_.t||_2`` with the
    library's FISTA (:func:`multitask.solvers.fista.fista`) on the stacked variable ``[L, E]``
    (``W = L + E`` through :class:`~multitask.penalties.composite.SumMap`), as MALSAR's
    ``Least_RMTL`` does: one gradient of the loss serves both blocks, the prox is an SVT of
    ``L`` and a column shrinkage of ``E``, backtracking doubles the Lipschitz estimate.

    Parameters
    ----------
    datafit : Datafit
        Smooth loss bound to the data (squared, squared hinge, logistic).
    alpha, lam : float
        Regularization weights (``alpha > 0``, ``lam >= 0``).
    mode : {"exact", "paper"}, default="exact"
        ``exact``: FISTA's own rule (relative objective change ``<= tol`` on three consecutive
        iterations, default ``tol = 1e-6``). ``paper``: the paper's rule, stop as soon as
        ``|F_k - F_{k-1}| <= tol F_{k-1}`` (eq. (26)) or the relative changes of ``L`` and
        ``E`` are both ``<= tol`` (eq. (25)), default ``tol = 1e-5``.
    tol : float, optional
    max_iter : int, default=10000
    coef_init : ndarray of shape (2, d, m), optional
    intercept_init : ndarray of shape (m,), optional
    warn : bool, default=True
        Warn with ``ConvergenceWarning`` when ``max_iter`` is reached.

    Returns
    -------
    SolverResult
        ``coef`` is ``[L, E]`` of shape ``(2, d, m)``, ``W = L + E``.
    """
    if mode not in ("exact", "paper"):
        raise ValueError(f"mode must be 'exact' or 'paper', got {mode!r}.")
    alpha = check_scalar_param(alpha, "alpha", allow_zero=False)
    lam = check_scalar_param(lam, "lam")
    if tol is None:
        tol = LADM_PAPER_CONSTANTS["tol"] if mode == "paper" else 1e-6
    tol = check_scalar_param(tol, "tol", allow_zero=False)
    penalty = BlockPenalty([TraceNorm(alpha), ColumnL2(alpha * lam)])
    state: dict[str, Any] = {"prev": None, "F": None, "hit": False}

    def paper_stop(k, F, V, b):
        prev, F_prev = state["prev"], state["F"]
        state["prev"], state["F"] = V, F
        if prev is None:
            return False
        rel = [np.linalg.norm(V[i] - prev[i]) / max(1.0, np.linalg.norm(prev[i])) for i in (0, 1)]
        stop = abs(F - F_prev) <= tol * abs(F_prev) or max(rel) <= tol
        state["hit"] = bool(stop)
        return stop

    res = fista(
        datafit,
        penalty,
        linear_map=SumMap(2),
        coef_init=coef_init,
        intercept_init=intercept_init,
        max_iter=max_iter,
        tol=tol,
        callback=paper_stop if mode == "paper" else None,
        warn=warn,
    )
    if state["hit"]:
        res.converged = True
    res.info["mode"] = mode
    return res


#: The base solvers of divide-and-conquer, by name.
BASE_SOLVERS = {"ladm": ladm_rmtl, "apg": apg_rmtl}


class CenteredSquaredHinge(SquaredHinge):
    """The squared hinge with per-task centred features and a shifted intercept.

    Scores ``(x_i - mean(X_t))^T w_t + b'_t`` are the scores ``x_i^T w_t + b_t`` with
    ``b_t = b'_t - mean(X_t)^T w_t``: the same model and objective, but the intercept direction
    is orthogonal to the features, which keeps first-order methods well conditioned when the
    features are not centred. :meth:`intercept` returns ``b``. Sparse designs are centred
    implicitly (:meth:`multitask.data.MultiTaskData.centered`).
    """

    def __init__(self, data: MultiTaskData, fit_intercept: bool = True):
        data_c, x_mean, _ = data.centered()
        centred = MultiTaskData(data_c.X, data.y, data.offsets, data.tasks, data.shared,
                                data_c.x_offset)
        super().__init__(centred, fit_intercept)
        self.raw = data
        self.x_mean = x_mean

    def intercept(self, W, b):
        if b is None:
            return np.zeros(self.data.n_tasks)
        return np.asarray(b, dtype=np.float64) - np.einsum("jt,jt->t", self.x_mean, W)


def make_rmtl_datafit(
    loss: str, data: MultiTaskData, fit_intercept: bool = True, solver: str = "ladm"
) -> Datafit:
    """The datafit of robust MTL: ``loss`` in {"squared", "squared_hinge"}.

    The squared loss uses cached Gram matrices only for the accelerated gradient on dense data
    (linearized ADMM multiplies by the data directly; a sparse design stays sparse). With an
    intercept, both losses see per-task centred features (:class:`CenteredSquaredHinge`).
    """
    if loss not in _LOSSES:
        raise ValueError(f"loss must be one of {sorted(_LOSSES)}, got {loss!r}.")
    if loss == "squared":
        use_gram = False if (solver == "ladm" or sp.issparse(data.X)) else None
        return Squared(data, fit_intercept, use_gram=use_gram)
    if fit_intercept:
        return CenteredSquaredHinge(data, True)
    return SquaredHinge(data, False)


def _centred_intercept(datafit: Datafit, res: SolverResult) -> tuple[np.ndarray, np.ndarray]:
    """``(b', x_mean)`` with ``intercept = b' - x_mean^T W`` for any ``W`` (zeros without)."""
    m, d = datafit.data.n_tasks, datafit.data.n_features
    if isinstance(datafit, Squared) and datafit.fit_intercept:
        return datafit.y_mean, datafit.x_mean
    if isinstance(datafit, CenteredSquaredHinge) and datafit.fit_intercept:
        return np.asarray(res.info["intercept_variable"], dtype=np.float64), datafit.x_mean
    return np.zeros(m), np.zeros((d, m))


def solve_rmtl(datafit: Datafit, solver: str, alpha: float, lam: float, **options) -> SolverResult:
    """Run the base solver ``solver`` in {"ladm", "apg"} (keyword options passed through)."""
    try:
        fn = BASE_SOLVERS[solver]
    except KeyError:
        raise ValueError(f"solver must be one of {sorted(BASE_SOLVERS)}, got {solver!r}.") from None
    if solver == "apg" and options.get("formulation", "penalized") != "penalized":
        raise ValueError(
            "The accelerated gradient (solver='apg') cannot handle the equality constraint of "
            "formulation='constrained'; use formulation='penalized' or solver='ladm'."
        )
    if solver == "apg":
        options = {k: v for k, v in options.items() if k != "formulation"}
    return fn(datafit, alpha, lam, **options)


# ----------------------------------------------------------------------------- dividing
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
    if isinstance(n_groups, bool) or not isinstance(n_groups, (int, np.integer)) or n_groups < 1:
        raise ValueError(f"n_groups must be an integer >= 1, got {n_groups!r}.")
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


# ----------------------------------------------------------------------------- workers
def _fit_group(sub: MultiTaskData, spec: dict, blas_threads: int | None) -> dict:
    """Solve one group (runs in the worker); returns plain arrays and numbers."""
    with threadpool_limits(limits=blas_threads):
        t0 = time.perf_counter()
        c0 = time.process_time()
        datafit = make_rmtl_datafit(spec["loss"], sub, spec["fit_intercept"], spec["solver"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = solve_rmtl(datafit, spec["solver"], spec["alpha"], spec["lam"],
                             **spec["options"])
        out = {
            "L": res.coef[0],
            "E": res.coef[1],
            "intercept": np.asarray(res.intercept, dtype=np.float64),
            "n_iter": int(res.n_iter),
            "converged": bool(res.converged),
            "seconds": time.perf_counter() - t0,
            "cpu_seconds": time.process_time() - c0,
            "solver_seconds": float(res.time),
        }
        out["b_centred"], out["x_mean"] = _centred_intercept(datafit, res)
        return out


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


def _n_workers(backend, n_jobs, n_groups: int) -> int:
    if backend == "serial":
        return 1
    if backend == "joblib":
        from joblib import effective_n_jobs

        return max(1, min(effective_n_jobs(n_jobs), n_groups))
    try:
        return max(1, min(len(_get_client(backend).scheduler_info()["workers"]), n_groups))
    except Exception:  # noqa: BLE001 - informational only
        return 1


# ----------------------------------------------------------------------------- DC-RMTL
def divide_and_conquer(
    data: MultiTaskData,
    *,
    loss: str = "squared",
    solver: str = "ladm",
    alpha: float = 0.1,
    lam: float = 1.0,
    n_groups: int = 4,
    lam_scale: float | str = 1.0,
    fit_intercept: bool = True,
    random_state=None,
    backend: Any = "serial",
    n_jobs: int | None = None,
    blas_threads: int | None = 1,
    solver_options: dict | None = None,
    warn: bool = True,
) -> SolverResult:
    """Divide-and-conquer robust MTL (the paper's Algorithm 2).

    Parameters
    ----------
    data : MultiTaskData
        Training data (targets -1/+1 for the squared hinge).
    loss : {"squared", "squared_hinge"}, default="squared"
    solver : {"ladm", "apg"}, default="ladm"
        Base solver of the groups.
    alpha, lam : float
        Regularization of every group: ``F + alpha (||L||_* + lam_g ||E||_{1,2})`` with
        ``lam_g = lam * lam_scale``.
    n_groups : int, default=4
        ``t``: number of groups of ``floor(m / t)`` tasks (one more group holds the remainder).
    lam_scale : float or "sqrt", default=1.0
        Multiplier of ``lam`` in the groups; ``"sqrt"`` means ``sqrt(n_groups)`` (a heuristic
        from outlier pursuit, where lambda scales like ``1 / sqrt(number of columns)``).
    fit_intercept : bool, default=True
    random_state : int, RandomState instance or None
        Seed of the random partition.
    backend : "serial", "joblib", "dask" or dask.distributed.Client, default="serial"
        Where the groups run (module docstring).
    n_jobs : int, optional
        Number of joblib workers (joblib's convention; ignored by the other backends).
    blas_threads : int or None, default=1
        BLAS threads of each group's solve (``None``: no limit). Capped so that
        ``joblib workers x blas_threads <= os.cpu_count()``. Keep it fixed to compare
        backends bit for bit.
    solver_options : dict, optional
        Keyword options of the base solver (``formulation``, ``mode``, ``tol``, ``max_iter``,
        ...).
    warn : bool, default=True
        Warn with ``ConvergenceWarning`` when a group's solver reached ``max_iter``.

    Returns
    -------
    SolverResult
        ``coef = [L_hat, E]`` of shape ``(2, d, m)``, ``W = L_hat + E``; ``objective`` is empty
        (the combined solution's objective on the full problem is not computed, to keep the
        timing honest; see :func:`multitask.solvers.ladm.rmtl_objective`). ``info`` holds
        ``groups`` (task indices per group), ``L_concat`` (the concatenated blocks before
        projection), ``rank`` (of the first block), per-group ``n_iter``, ``converged``,
        ``seconds`` (wall) and ``cpu_seconds`` (CPU time of the worker process on the group),
        and ``n_workers``, ``blas_threads``.
    """
    if loss not in _LOSSES:
        raise ValueError(f"loss must be one of {sorted(_LOSSES)}, got {loss!r}.")
    if solver not in BASE_SOLVERS:
        raise ValueError(f"solver must be one of {sorted(BASE_SOLVERS)}, got {solver!r}.")
    alpha = check_scalar_param(alpha, "alpha", allow_zero=False)
    lam = check_scalar_param(lam, "lam")
    if isinstance(lam_scale, str):
        if lam_scale != "sqrt":
            raise ValueError(f"lam_scale must be a number or 'sqrt', got {lam_scale!r}.")
        scale = float(np.sqrt(n_groups))
    else:
        scale = check_scalar_param(lam_scale, "lam_scale", allow_zero=False)
    if blas_threads is not None and (isinstance(blas_threads, bool) or int(blas_threads) < 1):
        raise ValueError(f"blas_threads must be an integer >= 1 or None, got {blas_threads!r}.")
    if backend not in ("serial", "joblib", "dask"):
        _get_client(backend)  # raises a clear error for anything else
    m, d = data.n_tasks, data.n_features
    groups = partition_tasks(m, n_groups, random_state)
    options = dict(solver_options or {})
    if solver == "apg" and options.get("formulation", "penalized") != "penalized":
        raise ValueError(
            "The accelerated gradient (solver='apg') cannot handle formulation='constrained'."
        )
    spec = {"loss": loss, "solver": solver, "alpha": alpha, "lam": lam * scale,
            "fit_intercept": bool(fit_intercept), "options": options}

    if (solver == "ladm" and data.shared and len(groups) > 1 and "tau" not in options
            and options.get("tau_rule", "max") == "max"):
        # every group shares the design: compute the step (a sparse SVD) once, not per group
        full = make_rmtl_datafit(loss, data, fit_intercept, solver)
        options["tau"] = _tau(full, full.has_intercept_variable, "max")
    n_workers = _n_workers(backend, n_jobs, len(groups))
    threads = blas_threads
    if threads is not None and backend == "joblib":
        threads = max(1, min(int(threads), (os.cpu_count() or 1) // n_workers))

    t0 = time.perf_counter()
    subs = [data.subset_tasks(g) for g in groups]
    outs = _run_groups(subs, spec, backend, n_jobs, threads)

    L = np.zeros((d, m))
    E = np.zeros((d, m))
    b = np.zeros(m)
    for g, o in zip(groups, outs, strict=True):
        L[:, g] = o["L"]
        E[:, g] = o["E"]
        b[g] = o["intercept"]
    with threadpool_limits(limits=threads):
        if len(groups) == 1:
            L_hat, rank = L.copy(), int(np.linalg.matrix_rank(L)) if L.size else 0
        else:
            L_hat, rank = column_projection(L, groups[0])
            if rank == 0 and np.any(L):
                # the first block is zero but others are not: the paper's rule would discard
                # every low-rank part, so project on the block of largest rank instead
                ranks = [int(np.linalg.matrix_rank(L[:, g])) for g in groups]
                best = int(np.argmax(ranks))
                L_hat, rank = column_projection(L, groups[best])
                warnings.warn(
                    "The low-rank block of the first group is zero: projecting on the block of "
                    f"group {best} (rank {rank}) instead.",
                    UserWarning,
                    stacklevel=2,
                )
        W = L_hat + E
        if fit_intercept:  # the intercepts of the projected weights (centred parametrization)
            for g, o in zip(groups, outs, strict=True):
                b[g] = o["b_centred"] - np.einsum("jt,jt->t", o["x_mean"], W[:, g])
    elapsed = time.perf_counter() - t0

    converged = [o["converged"] for o in outs]
    if warn and not all(converged):
        bad = [i for i, c in enumerate(converged) if not c]
        warnings.warn(
            f"The base solver did not converge on group(s) {bad} of {len(groups)}; increase "
            "max_iter or tol in solver_options.",
            ConvergenceWarning,
            stacklevel=2,
        )
    return SolverResult(
        coef=np.stack([L_hat, E]),
        W=W,
        intercept=b if fit_intercept else np.zeros(m),
        n_iter=int(max(o["n_iter"] for o in outs)),
        objective=np.zeros(0),
        converged=all(converged),
        time=elapsed,
        info={
            "groups": groups,
            "L_concat": L,
            "rank": rank,
            "n_iter_groups": [o["n_iter"] for o in outs],
            "converged_groups": converged,
            "seconds_groups": [o["seconds"] for o in outs],
            "cpu_seconds_groups": [o["cpu_seconds"] for o in outs],
            "n_workers": n_workers,
            "blas_threads": threads,
            "lam_groups": lam * scale,
        },
    )
