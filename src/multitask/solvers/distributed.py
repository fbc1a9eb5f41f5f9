"""Data-parallel proximal gradient over blocks of tasks held by Dask workers.

The tasks are partitioned into blocks; each block (its rows, its datafit with whatever caches
the datafit builds, and its columns of the iterates) stays on one Dask worker for the whole
fit, inside one actor per worker (:class:`TaskBlockWorker`). One iteration of accelerated
proximal gradient (FISTA with adaptive restart, as :class:`~multitask.solvers.fista.
ProximalGradient` with its default fixed step ``1 / L``) is

1. on every block: the loss value and gradient at the extrapolated point ``Y_k``, the prox
   input ``V_k = Y_k - A^T grad f / L`` and the penalty's reduction
   ``S_k = penalty.block_stats(V_k)``, combined on each worker and sent to the client;
2. on the client: ``plan, value = penalty.block_plan(combine(S_k), 1 / L)``;
3. on every block: ``X_k+ = penalty.block_prox(V_k, plan)``, the loss at ``X_k+`` and the
   scalars of the stopping rule, sent to the client; the client decides the restart and the
   momentum, sent with the next step.

So the data never leave their worker and only what the penalty needs crosses the network
(the ``"blockwise"`` capability of :mod:`multitask.penalties.base`): nothing for penalties
separable over tasks (l1, l2 over task columns, ridge), ``d`` squared row norms for the l2,1
norm, the ``R`` factor of ``V^T`` (``R^T R = V V^T``, a ``d x d`` triangular array) for the
trace norm, whose prox is then ``V -> M V`` with a ``d x d`` matrix ``M`` whatever the number
of tasks, and the parts' reductions side by side for split models. Per iteration each worker
sends one reduction and a few scalars and receives one plan (see ``docs/distributed.md``).
The stopping rule is the relative optimality measure of :mod:`multitask.solvers.base`,
computed blockwise the same way (two more round trips when it is checked).

Data come as :class:`TaskBlocks`: from Dask DataFrames or arrays in long format (rows shuffled
so that each task lies in one partition), from per-block Parquet files, from a function run
on the workers (data generated there, never on the client), from per-block datafit objects
(data streamed or regenerated inside each evaluation), or, through
:class:`DistributedProximalGradient` given an in-memory datafit, from the client's data cut
into blocks and scattered. The estimators take Dask collections or :class:`TaskBlocks` in
``fit``, ``predict``, ``decision_function``, ``predict_proba``, ``score`` and ``alpha_max``
(the ``estimator_*`` functions at the end of this module; the hook is in
:mod:`multitask.estimators.base`).
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

from multitask.data import MultiTaskData
from multitask.losses import Datafit
from multitask.penalties.base import IdentityMap, Penalty, SumMap
from multitask.solvers.base import Solver, check_int, finish
from multitask.solvers.result import SolverResult

__all__ = [
    "DistributedDatafit",
    "DistributedProximalGradient",
    "TaskBlockWorker",
    "TaskBlocks",
    "estimator_alpha_max",
    "estimator_fit",
    "estimator_predict",
    "estimator_score",
    "is_distributed_input",
]


# ============================================================================ helpers
def _get_client(client=None):
    """``client``, or the current ``dask.distributed`` client."""
    if client is not None:
        return client
    try:
        from distributed import get_client
    except ImportError:  # pragma: no cover - optional dependency
        raise ValueError("Distributed fitting needs dask.distributed "
                         "(pip install 'multitask[distributed]').") from None
    try:
        return get_client()
    except ValueError:
        raise ValueError("Distributed fitting needs a running dask.distributed Client: create "
                         "one first (distributed.Client(...)) or pass client=.") from None


def _result(fut):
    return fut.result()


def _scatter_unique(client, data, **kwargs):
    """``client.scatter(data, hash=False, ...)``: futures under fresh random keys.

    ``Client.scatter`` names the data by a hash of their content by default, and recent Dask
    tokenizes any picklable object deterministically, so scattering equal data again (the
    same estimator copy for ``predict`` then ``predict_proba``, the same blocks for two fits
    in a row) returns the key of the earlier futures. When those were just dropped, their
    release travels on the client's batched stream while the new scatter goes through a
    direct call to the scheduler, which may arrive first: the scheduler then forgets the key
    that the new futures share, and whatever depends on them is cancelled with "lost
    dependencies". Fresh keys have no earlier holder to release them.
    """
    return client.scatter(data, hash=False, **kwargs)


def _sum(values) -> float:
    return float(np.sum([float(v) for v in values]))


_CONTROLLER: ThreadpoolController | None = None


def _blas_limit(threads: int | None):
    """A context limiting the BLAS threads (a no-op context when ``threads`` is None)."""
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=threads)


# ============================================================================ raw blocks
def _as_raw_block(block) -> tuple:
    """``(X, y, task)`` of one block: ``X`` a 2-D float array, ``y`` and ``task`` 1-D."""
    if not (isinstance(block, tuple) and len(block) == 3):
        raise ValueError("A block function must return a tuple (X, y, task) in long format "
                         f"(one task id per row), got {type(block).__name__}.")
    X, y, task = block
    X = np.asarray(X)
    y = np.asarray(y)
    task = np.asarray(task)
    if X.ndim != 2 or y.ndim != 1 or task.ndim != 1 or not (len(X) == len(y) == len(task)):
        raise ValueError(f"A block holds X {X.shape}, y {y.shape} and task {task.shape}: X must "
                         "be 2-D and y, task 1-D with one entry per row of X.")
    return X, y, task


def _call_block(fn: Callable, k: int, args: tuple) -> tuple:
    return _as_raw_block(fn(k, *args))


def _read_parquet_block(path: str, target: str, task: str, features) -> tuple:
    import pandas as pd

    columns = None if features is None else [*features, target, task]
    df = pd.read_parquet(path, columns=columns)
    feats = [c for c in df.columns if c not in (target, task)] if features is None \
        else list(features)
    return _as_raw_block((df[feats].to_numpy(dtype=np.float64), df[target].to_numpy(),
                          df[task].to_numpy()))


def _frame_block(df, n_features: int) -> tuple:
    """A pandas partition ``[features..., __y, __task]`` as ``(X, y, task)``."""
    X = df.iloc[:, :n_features].to_numpy(dtype=np.float64)
    return X, df["__y"].to_numpy(), df["__task"].to_numpy()


def _raw_meta(block) -> dict:
    if isinstance(block, tuple):
        X, y, task = block
        return {"kind": "raw", "n_rows": int(len(X)), "n_features": int(X.shape[1]),
                "tasks": np.unique(task)}
    data = getattr(block, "data", None)
    if data is None:
        raise ValueError("A block must be a tuple (X, y, task) or a datafit (an object with "
                         f"the Datafit protocol and a .data), got {type(block).__name__}.")
    return {"kind": "datafit", "n_rows": int(data.n_rows), "n_features": int(data.n_features),
            "tasks": np.asarray(data.tasks)}


class TaskBlocks:
    """Multi-task data partitioned into blocks of tasks held by Dask workers.

    Every task lies in exactly one block; the global task order is the blocks' order, and
    within a block the sorted task ids (as the long format of :mod:`multitask.data` orders
    them). Built by the ``from_*`` constructors; pass it to an estimator's ``fit`` (with
    ``y=None``: the targets are in the blocks), ``predict``, ``score`` or ``alpha_max``.
    The client holds only the futures and the per-block metadata (row counts, task ids).

    Attributes
    ----------
    client : distributed.Client
    futures : list of distributed.Future
        One per block: ``(X, y, task)`` arrays in long format (``kind="raw"``), or a datafit
        object (``kind="datafit"``, see :meth:`from_datafits`).
    kind : {"raw", "datafit"}
    tasks : ndarray of shape (n_tasks,)
        Task ids in the global order.
    block_tasks : list of ndarray
        Task ids of each block.
    n_rows : ndarray of shape (n_blocks,)
    n_features : int
    """

    _is_task_blocks = True

    def __init__(self, client, futures: Sequence, *, check: bool = True):
        self.client = client
        self.futures = list(futures)
        if not self.futures:
            raise ValueError("TaskBlocks needs at least one block.")
        metas = client.gather([client.submit(_raw_meta, f, pure=False) for f in self.futures])
        kinds = {m["kind"] for m in metas}
        if len(kinds) > 1:
            raise ValueError("All blocks must be of one kind: data (X, y, task) or datafits.")
        self.kind = kinds.pop()
        dims = {m["n_features"] for m in metas}
        if len(dims) > 1:
            raise ValueError(f"The blocks have different numbers of features {sorted(dims)}.")
        self.n_features = dims.pop()
        keep = [i for i, m in enumerate(metas) if m["n_rows"] > 0]  # empty partitions
        self.futures = [self.futures[i] for i in keep]
        metas = [metas[i] for i in keep]
        if not metas:
            raise ValueError("The blocks hold no rows.")
        self.block_tasks = [np.asarray(m["tasks"]) for m in metas]
        self.n_rows = np.array([m["n_rows"] for m in metas], dtype=np.int64)
        self.tasks = np.concatenate(self.block_tasks)
        if check and len(np.unique(self.tasks)) != len(self.tasks):
            raise ValueError("A task appears in more than one block: each task's rows must lie "
                             "in one block (group the rows by task first).")
        self.block_offsets = np.concatenate(
            [[0], np.cumsum([len(t) for t in self.block_tasks])]).astype(np.int64)

    # ----------------------------------------------------------------- sizes
    @property
    def n_blocks(self) -> int:
        return len(self.futures)

    @property
    def n_tasks(self) -> int:
        return len(self.tasks)

    def __repr__(self) -> str:
        return (f"TaskBlocks(n_blocks={self.n_blocks}, n_tasks={self.n_tasks}, "
                f"n_features={self.n_features}, n_rows={int(self.n_rows.sum())}, "
                f"kind={self.kind!r})")

    # ----------------------------------------------------------------- constructors
    @classmethod
    def from_function(cls, fn: Callable, n_blocks: int, *, args: tuple = (), client=None
                      ) -> TaskBlocks:
        """Blocks made on the workers: block ``k`` is ``fn(k, *args)``, an ``(X, y, task)``
        tuple in long format, run on worker ``k mod n_workers`` (nothing on the client).

        ``fn`` must be importable or picklable by the workers; task ids must differ between
        blocks.
        """
        client = _get_client(client)
        n_blocks = check_int(n_blocks, "n_blocks")
        workers = sorted(client.scheduler_info()["workers"])
        futs = [client.submit(_call_block, fn, k, tuple(args), pure=False,
                              workers=[workers[k % len(workers)]])
                for k in range(n_blocks)]
        return cls(client, futs)

    @classmethod
    def from_datafits(cls, factory: Callable, n_blocks: int, *, args: tuple = (),
                      client=None) -> TaskBlocks:
        """Blocks that are datafits made on the workers: block ``k`` is ``factory(k, *args)``,
        an object with the :class:`~multitask.losses.Datafit` protocol (``value``,
        ``value_and_grad``, ``lipschitz``, ``grad_at_zero``, ``intercept``, ... and a ``.data``
        with ``n_tasks``, ``n_features``, ``n_rows``, ``tasks``). For data that are streamed
        or regenerated inside each evaluation rather than stored; the estimator's loss must
        be the datafit's (its ``name``). Such blocks can be fitted, not predicted on. An
        optional ``value_pair_and_grad(V, c, W, b)`` returning ``(F(V, c), F(W, b),
        grad_W, grad_b)`` from one pass halves the passes of an iteration (the loss at the new
        point and the gradient at the next one); without it they are two calls.
        """
        client = _get_client(client)
        n_blocks = check_int(n_blocks, "n_blocks")
        workers = sorted(client.scheduler_info()["workers"])
        futs = [client.submit(factory, k, *args, pure=False,
                              workers=[workers[k % len(workers)]])
                for k in range(n_blocks)]
        return cls(client, futs)

    @classmethod
    def from_parquet(cls, paths: Sequence[str], *, target: str, task: str,
                     features: Sequence[str] | None = None, client=None) -> TaskBlocks:
        """One block per Parquet file, read on the workers (pandas with pyarrow).

        Parameters
        ----------
        paths : sequence of str
            Files readable by every worker; each task's rows must all be in one file.
        target, task : str
            Columns of the targets and of the task ids.
        features : sequence of str, optional
            Feature columns (default: every other column).
        """
        client = _get_client(client)
        paths = [str(p) for p in paths]
        workers = sorted(client.scheduler_info()["workers"])
        futs = [client.submit(_read_parquet_block, p, target, task,
                              None if features is None else list(features), pure=False,
                              workers=[workers[k % len(workers)]])
                for k, p in enumerate(paths)]
        return cls(client, futs)

    @classmethod
    def from_dask(cls, X, y, task, *, n_blocks: int | None = None, client=None) -> TaskBlocks:
        """Blocks from Dask collections in long format, grouped by task on the cluster.

        Parameters
        ----------
        X : dask DataFrame or dask array of shape (n, d)
            Features (numeric columns).
        y : dask Series or dask array of shape (n,)
            Targets.
        task : dask Series or dask array of shape (n,)
            Task id of each row.
        n_blocks : int, optional
            Number of blocks (default: the partitions of ``X``). The rows are shuffled by task
            (``DataFrame.shuffle``) so that each task lies in one block.
        """
        import dask.array as da
        import dask.dataframe as dd

        client = _get_client(client)
        if task is None:
            raise ValueError("Distributed input in long format needs the task id of each row "
                             "(task=).")
        if y is None:
            raise ValueError("Fitting on Dask collections needs the targets y.")
        if isinstance(X, da.Array):
            if X.ndim != 2:
                raise ValueError(f"X must be 2-D, got a dask array of shape {X.shape}.")
            X = X.rechunk({1: -1})
            Xf = dd.from_dask_array(X, columns=[f"x{j}" for j in range(X.shape[1])])
        elif isinstance(X, dd.DataFrame):
            Xf = X
        else:
            raise ValueError("X must be a dask DataFrame or a dask array (or TaskBlocks), got "
                             f"{type(X).__name__}.")
        n_features = len(Xf.columns)

        def as_series(v, name):
            if isinstance(v, da.Array):
                if v.ndim != 1:
                    raise ValueError(f"{name} must be 1-D, got a dask array of shape "
                                     f"{v.shape}.")
                return dd.from_dask_array(v.rechunk(X.chunks[0]) if isinstance(X, da.Array)
                                          else v)
            if isinstance(v, (dd.Series, dd.DataFrame)):
                return v.iloc[:, 0] if isinstance(v, dd.DataFrame) else v
            raise ValueError(f"{name} must be a dask Series or array to go with dask X, got "
                             f"{type(v).__name__}.")

        frame = Xf.assign(__y=as_series(y, "y"), __task=as_series(task, "task"))
        n_blocks = Xf.npartitions if n_blocks is None else check_int(n_blocks, "n_blocks")
        frame = frame.shuffle(on="__task", npartitions=n_blocks)
        parts = client.compute(frame.to_delayed())
        futs = [client.submit(_frame_block, p, n_features, pure=False) for p in parts]
        out = cls(client, futs)
        del parts
        return out

    @classmethod
    def from_data(cls, data: MultiTaskData, n_blocks: int, *, client=None) -> TaskBlocks:
        """Blocks of consecutive tasks of an in-memory :class:`~multitask.data.MultiTaskData`,
        scattered to the workers (kind ``"data"``: used by :class:`DistributedProximalGradient`
        given an in-memory datafit)."""
        client = _get_client(client)
        n_blocks = max(1, min(check_int(n_blocks, "n_blocks"), data.n_tasks))
        cuts = np.linspace(0, data.n_tasks, n_blocks + 1).round().astype(np.int64)
        subs = [data.subset_tasks(np.arange(cuts[i], cuts[i + 1])) for i in range(n_blocks)]
        obj = cls.__new__(cls)
        obj.client = client
        # unique keys (hash=False): content-hashed keys would be those of an earlier fit on
        # the same data, whose release may still be on its way to the scheduler (see
        # _scatter_unique)
        obj.futures = _scatter_unique(client, subs)
        obj.kind = "data"
        obj.n_features = data.n_features
        obj.block_tasks = [np.arange(cuts[i], cuts[i + 1]) for i in range(n_blocks)]
        obj.n_rows = np.array([s.n_rows for s in subs], dtype=np.int64)
        obj.tasks = np.arange(data.n_tasks)
        obj.block_offsets = cuts
        return obj


def is_distributed_input(X) -> bool:
    """Whether ``X`` is :class:`TaskBlocks` or a Dask collection."""
    return bool(getattr(X, "_is_task_blocks", False)) or hasattr(X, "__dask_graph__")


# ============================================================================ block builders
class _FromData:
    """Builds a block's datafit from a MultiTaskData: ``cls(data, **params)``."""

    def __init__(self, cls: type, params: dict):
        self.cls, self.params = cls, params

    def __call__(self, payload):
        return self.cls(payload, **self.params), None


class _FromRaw:
    """Builds a block's datafit from ``(X, y, task)`` through the estimator's own conversion
    and datafit (``est._convert``, ``est._make_datafit``), so the block is the model the
    estimator would fit in memory on those tasks. Returns the classes of a classifier."""

    def __init__(self, est):
        self.est = est

    def __call__(self, payload):
        if not isinstance(payload, tuple):  # a ready datafit (TaskBlocks.from_datafits)
            want = self.est._loss_name()
            if getattr(payload, "name", want) != want:
                raise ValueError(f"The block's datafit is the {payload.name!r} loss but the "
                                 f"estimator fits the {want!r} loss.")
            fi = bool(getattr(self.est, "fit_intercept", False))
            if bool(getattr(payload, "fit_intercept", fi)) != fi:
                raise ValueError(f"The block's datafit has fit_intercept="
                                 f"{payload.fit_intercept} but the estimator fit_intercept={fi}.")
            return payload, None
        X, y, task = payload
        data, classes, _ = self.est._convert(X, y, task)
        return self.est._make_datafit(data), classes


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


class TaskBlockWorker:
    """The blocks of tasks of one Dask worker and the solver's state on them (a Dask actor).

    Built by :class:`DistributedDatafit`; its methods run one step of the distributed solver
    on every block of the worker and return only reductions and scalars.
    """

    def __init__(self, payloads: list, indices: list, builder: Callable,
                 blas_threads: int | None = 1):
        self.blas_threads = blas_threads
        self.blocks: list[_Block] = []
        self.classes: list = []
        self.penalty: Penalty | None = None
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
    def start(self, penalty: Penalty, coefs: list | None, intercepts: list | None) -> None:
        """Set the penalty and the starting point (zeros, or the given blocks)."""
        self.penalty = penalty
        A = penalty.linear_map
        for i, blk in enumerate(self.blocks):
            d, m = blk.datafit.data.n_features, blk.datafit.data.n_tasks
            shape = A.variable_shape(d, m)
            blk.x = np.zeros(shape) if coefs is None else np.array(coefs[i], dtype=np.float64)
            if blk.x.shape != shape:
                raise ValueError(f"coef_init has shape {blk.x.shape} on a block, expected "
                                 f"{shape}.")
            blk.b = None
            if blk.datafit.has_intercept_variable:
                blk.b = (np.zeros(m) if intercepts is None
                         else np.array(intercepts[i], dtype=np.float64))
            blk.y, blk.yb = blk.x, blk.b
            blk.best = (blk.x, blk.b)
            blk.xnew = blk.bnew = blk.vin = blk.bin = blk.spec = None

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
        """``(V, b+, ||grad_b||^2)``: the prox input ``y - A^T grad_W f / L`` and the
        intercept step at ``(y, yb)`` (``grads``: the datafit's ``(grad_W, grad_b)`` there,
        when already computed)."""
        assert self.penalty is not None
        A = self.penalty.linear_map
        gW, gb = grads if grads is not None else blk.datafit.value_and_grad(A.forward(y), yb)[1:]
        v = y - A.adjoint(gW) / L
        if gb is not None and yb is not None:
            return v, yb - gb / L, float(np.vdot(gb, gb))
        return v, None, 0.0

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
                blk.vin, blk.bin, g2 = self._gradient_step(blk, blk.y, blk.yb, L)
                gb2 += g2
                stats = self.penalty.combine_stats(stats, self.penalty.block_stats(blk.vin))
                blk.spec = None
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
        ||grad_b||^2)``.
        """
        assert self.penalty is not None
        A = self.penalty.linear_map
        f, h, dx2, gb2 = 0.0, 0.0, 0.0, 0.0
        stats = None
        with _blas_limit(self.blas_threads):
            for blk in self.blocks:
                if mark_best:
                    blk.best = (blk.xnew, blk.bnew)
                if accept:
                    assert blk.spec is not None
                    blk.x, blk.b = blk.xnew, blk.bnew
                    blk.y, blk.yb, blk.vin, blk.bin = blk.spec
                blk.spec = None
                blk.xnew = self.penalty.block_prox(blk.vin, plan, step)
                blk.bnew = blk.bin
                blk.vin = None
                h += float(self.penalty.block_value(blk.xnew, plan))
                dx = blk.xnew - blk.y
                dx2 += float(np.vdot(dx, dx))
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
                    fx, _, gW, gb = pair(A.forward(blk.xnew), blk.bnew, A.forward(y2), yb2)
                    f += float(fx)
                    grads = (gW, gb)
                v2, bin2, g2 = self._gradient_step(blk, y2, yb2, L, grads)
                gb2 += g2
                stats = self.penalty.combine_stats(stats, self.penalty.block_stats(v2))
                blk.spec = (y2, yb2, v2, bin2)
        return f, h, dx2, stats, gb2

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
            blk.bin = blk.spec = None
            blk.best = (None, None)
            blk.mes = (None, None, None)


# ============================================================================ the datafit
class _Layout:
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

    It offers what :class:`DistributedProximalGradient` and the estimators need: the sizes
    (``data.n_tasks``, ``data.n_features``, ``data.tasks``), ``capabilities`` and ``name``
    (those of the blocks' datafits), ``has_intercept_variable``, ``lipschitz()`` (the largest
    of the blocks', which is the whole datafit's: the Hessian is block diagonal over tasks),
    ``measure_constants()``, ``gradient_scale()`` (``||grad f(0, b_0)||_F`` from the blocks'
    squared norms) and ``value_and_grad(W, b)`` (for reporting; one round trip with all of
    ``W``). The loss is a sum over tasks, so the blocks' datafits sum to the whole.

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
        self.data = _Layout(all_tasks, order[0]["n_features"],
                            sum(m["n_rows"] for m in order))
        self._constants: dict | None = None

    # ----------------------------------------------------------------- plumbing
    def _all(self, call: Callable) -> list:
        """``call(actor)`` on every actor (concurrently), results in actor order."""
        return [_result(f) for f in [call(a) for a in self.actors]]

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
        res = [_result(a.value_and_grad(w, bb)) for a, w, bb in zip(self.actors, Ws, bs,
                                                                    strict=True)]
        G = np.empty_like(np.asarray(W, dtype=np.float64))
        gb = np.empty(self.data.n_tasks) if self.has_intercept_variable else None
        for ks, (_, gWs, gbs) in zip(self.worker_blocks.values(), res, strict=True):
            for k, gW, g in zip(ks, gWs, gbs, strict=True):
                sl = slice(self.block_offsets[k], self.block_offsets[k + 1])
                G[:, sl] = gW
                if gb is not None and g is not None:
                    gb[sl] = g
        return float(sum(r[0] for r in res)), G, gb

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


class _Fitted:
    """The fitted intercepts gathered from the blocks, for :func:`finish`."""

    def __init__(self, intercept: np.ndarray):
        self._intercept = intercept

    def intercept(self, W, b=None) -> np.ndarray:
        return self._intercept


# ============================================================================ the solver
class DistributedProximalGradient(Solver):
    """Accelerated proximal gradient with the tasks in blocks on a Dask cluster.

    The iteration and the stopping rule are those of
    :class:`~multitask.solvers.fista.ProximalGradient` with its default settings (step
    ``1 / L`` with ``L`` the datafit's Lipschitz bound times ``||A||^2``, adaptive restart,
    the best iterate returned), computed as in the module docstring: every penalty with the
    ``"blockwise"`` capability runs this way, and only its reduction crosses the network.

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
        client = _get_client(self.client)
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
                    _result(a.release())

    def _solve(self, ddf: DistributedDatafit, penalty: Penalty, coef_init, intercept_init,
               callback) -> SolverResult:
        self.check(ddf, penalty)  # type: ignore[arg-type]
        t0 = time.perf_counter()
        A = penalty.linear_map
        d, m = ddf.data.n_features, ddf.data.n_tasks
        shape = A.variable_shape(d, m)
        coefs = None
        if coef_init is not None:
            coef_init = np.asarray(coef_init, dtype=np.float64)
            if coef_init.shape != shape:
                raise ValueError(f"coef_init has shape {coef_init.shape}, expected {shape}.")
            coefs = ddf.split(coef_init)
        use_b = ddf.has_intercept_variable
        bs = None
        if use_b and intercept_init is not None:
            intercept_init = np.asarray(intercept_init, dtype=np.float64)
            if intercept_init.shape != (m,):
                raise ValueError(f"intercept_init has shape {intercept_init.shape}, expected "
                                 f"{(m,)}.")
            bs = ddf.split(intercept_init)
        actors = ddf.actors
        for fut in [a.start(penalty, None if coefs is None else coefs[i],
                            None if bs is None else bs[i]) for i, a in enumerate(actors)]:
            _result(fut)

        def reduce(results) -> Any:
            stats = None
            for s in results:
                stats = penalty.combine_stats(stats, s)
            return stats

        if penalty.is_constraint or penalty.parts:  # a feasible start, as initial_point does
            plan0, _ = penalty.block_plan(reduce(ddf._all(lambda a: a.x_stats())), 0.0)
            ddf._all(lambda a: a.x_project(plan0))
        plan0, h0 = penalty.block_plan(reduce(ddf._all(lambda a: a.x_stats())), 0.0)
        fx = h0 + _sum(ddf._all(lambda a: a.x_value(plan0)))

        L = float(ddf.lipschitz()) * A.norm_sq
        L = L if np.isfinite(L) and L > 0 else 1.0
        L_measure = float(ddf.measure_constants()[0]) * A.norm_sq
        L_measure = L_measure if np.isfinite(L_measure) and L_measure > 0 else 1.0
        s_b = ddf.measure_constants()[1] if use_b else 0.0
        scale = max(ddf.gradient_scale() * np.sqrt(A.norm_sq), np.finfo(float).tiny)
        tol = self.tol

        def measure(which: str) -> float:
            res = ddf._all(lambda a: a.measure_grad(L_measure, which))
            plan, _ = penalty.block_plan(reduce(r[0] for r in res), 1.0 / L_measure)
            gb2 = sum(r[1] for r in res)
            sq = _sum(ddf._all(lambda a: a.measure_prox(plan, 1.0 / L_measure)))
            num = L_measure * L_measure * sq + s_b * s_b * gb2
            return float(np.sqrt(num) / scale)

        best_F = fx
        t_k = 1.0
        history: list[float] = []
        times: list[float] = []
        converged = False
        meas: float | None = None
        next_check = 0
        n_iter = 0
        stopped_by = "max_iter"
        accept = mark_best = False
        bytes_up = bytes_down = 0
        res = ddf._all(lambda a: a.begin(L))
        stats, gb2 = reduce(r[0] for r in res), sum(r[1] for r in res)
        for k in range(1, self.max_iter + 1):
            n_iter = k
            plan, h_plan = penalty.block_plan(stats, 1.0 / L)
            t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t_k * t_k))
            beta = (t_k - 1.0) / t_next if self.accelerated else 0.0
            parts = ddf._all(lambda a, p=plan, bt=beta, ac=accept, mb=mark_best:
                             a.step(p, 1.0 / L, L, bt, ac, mb))
            # what crossed the network (pickled): the step's arguments to every worker, and
            # the workers' answers (their combined reductions and four numbers)
            bytes_down += len(actors) * len(pickle.dumps((plan, 1.0 / L, L, beta, accept,
                                                           mark_best)))
            bytes_up += sum(len(pickle.dumps(r)) for r in parts)
            F_new = (sum(r[0] for r in parts) + h_plan + sum(r[1] for r in parts))
            dx2 = sum(r[2] for r in parts)
            history.append(F_new)
            times.append(time.perf_counter() - t0)
            mark_best = F_new < best_F
            if mark_best:
                best_F = F_new
            cheap = np.sqrt(L * L * dx2 + s_b * s_b * gb2)
            stats, gb2 = reduce(r[3] for r in parts), sum(r[4] for r in parts)
            accept = False
            if cheap <= tol * scale and k >= next_check:
                meas = measure("xnew")
                if meas <= tol:
                    converged, stopped_by = True, "tol"
                    best_F, mark_best = F_new, True
                    break
                next_check = k + max(5, k // 10)
            if callback is not None and callback(k, F_new, None, None):
                stopped_by = "callback"
                best_F, mark_best = F_new, True
                break
            if self.accelerated and self.restart and F_new > fx and t_k > 1.0:
                t_k = 1.0  # restart: drop the momentum and this step's point, from x
                res = ddf._all(lambda a, mb=mark_best: a.begin(L, mb, True))
                mark_best = False
                stats, gb2 = reduce(r[0] for r in res), sum(r[1] for r in res)
                continue
            if self.accelerated:
                t_k = t_next
            fx = F_new
            accept = True
        if mark_best:  # the last step's point is the best one (or where the run stopped)
            ddf._all(lambda a: a.mark_best())
        if not converged or meas is None:
            meas = measure("best")
            converged = converged or meas <= tol
        pieces = []
        for part in ddf._all(lambda a: a.collect("best")):
            pieces.extend(part)
        V = np.zeros(shape)
        b = np.zeros(m) if use_b else None
        intercept = np.zeros(m)
        for k_blk, Vk, bk, ik in pieces:
            sl = slice(ddf.block_offsets[k_blk], ddf.block_offsets[k_blk + 1])
            V[..., sl] = Vk
            intercept[sl] = ik
            if b is not None and bk is not None:
                b[sl] = bk
        info = {"lipschitz": L, "best_objective": best_F, "stopped_by": stopped_by,
                "accelerated": self.accelerated, "n_blocks": int(len(ddf.block_offsets) - 1),
                "n_workers": len(ddf.actors),
                "bytes_up_per_iteration": bytes_up / max(n_iter, 1),
                "bytes_down_per_iteration": bytes_down / max(n_iter, 1),
                "reduction_bytes": _nbytes(stats),
                "plan_bytes": _nbytes(penalty.block_plan(stats, 1.0 / L)[0])}
        return finish(self, _Fitted(intercept), penalty, V, b,  # type: ignore[arg-type]
                      n_iter=n_iter, objective=history, times=times, converged=converged,
                      t0=t0, measure=meas, info=info)


def _nbytes(obj) -> int:
    """Bytes of the arrays in a reduction (nested tuples of arrays, numbers, None)."""
    if obj is None:
        return 0
    if isinstance(obj, (tuple, list)):
        return sum(_nbytes(o) for o in obj)
    return int(np.asarray(obj).nbytes)


# ============================================================================ estimator side
# The estimators of multitask.estimators call these functions from a hook of their base class
# when given Dask collections or TaskBlocks. They use the estimator's own conversion, datafit
# and penalty (est._convert, est._make_datafit, est._make_penalty) and its fitted-attribute
# tail (est._store_result, est._store_extra), so the distributed model is the in-memory one.
def _light_copy(est, rows: np.ndarray | None = None):
    """An unfitted copy of ``est`` (its solver replaced by "auto", so that no client is
    copied), or, with ``rows``, a fitted copy holding only those tasks (for prediction)."""
    params = est.get_params(deep=False)
    if "solver" in params:
        params["solver"] = "auto"
    light = type(est)(**params)
    if rows is not None:
        light.coef_ = est.coef_[rows]
        light.intercept_ = est.intercept_[rows]
        light.tasks_ = np.asarray(est.tasks_)[rows]
        light.n_features_in_ = est.n_features_in_
        light.input_format_ = "long"
        if getattr(est, "_is_classifier", False):
            light.classes_ = est.classes_
    return light


def _check_estimator(est) -> None:
    qual = type(est)._make_datafit.__qualname__
    if qual != "MultiTaskEstimator._make_datafit":
        raise ValueError(f"{type(est).__name__} builds its own datafit ({qual}), which is not a "
                         "sum over tasks: it has no distributed fit.")
    if getattr(est, "formulation", "penalized") != "penalized":
        raise ValueError("The distributed fit solves the penalized formulation only.")
    if getattr(est, "n_groups", 1) != 1:
        raise ValueError("The distributed fit solves the whole problem: n_groups must be 1 "
                         "(divide-and-conquer is another solver).")


def _client_for(est, X):
    if getattr(X, "_is_task_blocks", False):
        return X.client
    solver = getattr(est, "solver", None)
    if isinstance(solver, DistributedProximalGradient) and solver.client is not None:
        return solver.client
    return _get_client(None)


def _distributed_solver(est, client) -> DistributedProximalGradient:
    solver = est.solver
    if isinstance(solver, DistributedProximalGradient):
        return solver
    if isinstance(solver, Solver) or solver not in ("auto", "fista", "pg"):
        raise ValueError(f"Distributed input is fitted by DistributedProximalGradient: solver "
                         f"must be 'auto', 'fista', 'pg' or a DistributedProximalGradient, got "
                         f"{solver!r}.")
    return DistributedProximalGradient(client=client, max_iter=int(est.max_iter),
                                       tol=float(est.tol), accelerated=solver != "pg")


def _as_blocks(est, X, y, task, client) -> TaskBlocks:
    if getattr(X, "_is_task_blocks", False):
        if y is not None or task is not None:
            raise ValueError("TaskBlocks hold their targets and task ids: pass y=None and no "
                             "task (e.g. fit(blocks, None)).")
        return X
    if getattr(est, "task_column", None) is not None:
        raise ValueError("With Dask collections pass the task ids as task=, not task_column.")
    return TaskBlocks.from_dask(X, y, task, client=client)


def estimator_fit(est, X, y, task=None):
    """``est.fit`` on Dask collections (long format) or :class:`TaskBlocks`: the blocks'
    datafits are built on the workers and solved by :class:`DistributedProximalGradient`;
    every fitted attribute is set as by the in-memory fit (``input_format_`` is ``"long"``).
    """
    _check_estimator(est)
    client = _client_for(est, X)
    blocks = _as_blocks(est, X, y, task, client)
    solver = _distributed_solver(est, client)
    ddf = DistributedDatafit(blocks, _FromRaw(_light_copy(est)),
                             blas_threads=solver.blas_threads)
    try:
        penalty = est._make_penalty(ddf)
        solver.check(ddf, penalty)
        shape = penalty.linear_map.variable_shape(ddf.data.n_features, ddf.data.n_tasks)
        # the fitted model lists the tasks sorted, as the in-memory long format does; the
        # blocks keep their own order
        tasks = ddf.data.tasks
        order = np.argsort(tasks, kind="stable")
        inverse = np.empty_like(order)
        inverse[order] = np.arange(len(order))
        layout = _Layout(tasks[order], ddf.data.n_features, ddf.data.n_rows)
        coef_init, intercept_init = est._warm_start_point(layout, shape)
        if coef_init is not None:
            coef_init = np.asarray(coef_init)[..., inverse]
        if intercept_init is not None:
            intercept_init = (np.asarray(intercept_init)[inverse] if ddf.has_intercept_variable
                              else None)
        result = solver.solve(ddf, penalty, coef_init=coef_init, intercept_init=intercept_init)
        result.coef = np.ascontiguousarray(result.coef[..., order])
        result.W = np.ascontiguousarray(result.W[:, order])
        result.intercept = result.intercept[order]
        if result.intercept_variable is not None:
            result.intercept_variable = result.intercept_variable[order]
        est.input_format_ = "long"
        est.tasks_ = layout.tasks
        est.n_features_in_ = ddf.data.n_features
        if getattr(est, "_is_classifier", False):
            est.classes_ = ddf.classes
        est._store_result(result, penalty, layout, solver)
        est._store_extra(result, penalty, ddf)
    finally:
        ddf.close()
    return est


def estimator_alpha_max(est, X, y, task=None) -> float:
    """``est.alpha_max`` on distributed input: one gradient at zero per block and the
    penalty's ``alpha_max`` reduction (``"blockwise"`` penalties)."""
    _check_estimator(est)
    client = _client_for(est, X)
    blocks = _as_blocks(est, X, y, task, client)
    ddf = DistributedDatafit(blocks, _FromRaw(_light_copy(est)))
    try:
        penalty = est._make_penalty(ddf)
        if "blockwise" not in penalty.capabilities:
            raise ValueError(f"The {penalty.name} penalty is not 'blockwise': no distributed "
                             "alpha_max.")
        return ddf.alpha_max(penalty)
    finally:
        ddf.close()


def _task_rows(est, labels: np.ndarray) -> np.ndarray:
    index = {v: i for i, v in enumerate(np.asarray(est.tasks_).tolist())}
    try:
        return np.array([index[v] for v in np.asarray(labels).tolist()], dtype=np.int64)
    except KeyError as exc:
        raise ValueError(f"Unknown task id {exc.args[0]!r}: the model was not fitted on it.") \
            from None


def _apply_block(light, method: str, raw) -> np.ndarray:
    X, _, task = raw
    return np.asarray(getattr(light, method)(X, task=task))


def _apply_part(light, method: str, X, task) -> np.ndarray:
    X = X.to_numpy(dtype=np.float64) if hasattr(X, "to_numpy") else np.asarray(X)
    task = task.to_numpy() if hasattr(task, "to_numpy") else np.asarray(task).ravel()
    return np.asarray(getattr(light, method)(X, task=task))


def _score_stats(light, X, y, task) -> np.ndarray:
    """``[n, mean(y), sum (y - mean)^2, sum (y - pred)^2]`` (regressors) or ``[n, correct]``."""
    X = X.to_numpy(dtype=np.float64) if hasattr(X, "to_numpy") else np.asarray(X)
    y = y.to_numpy() if hasattr(y, "to_numpy") else np.asarray(y).ravel()
    task = task.to_numpy() if hasattr(task, "to_numpy") else np.asarray(task).ravel()
    pred = np.asarray(light.predict(X, task=task))
    if getattr(light, "_is_classifier", False):
        return np.array([len(y), float(np.sum(pred == y))])
    y = y.astype(np.float64)
    mu = float(y.mean()) if len(y) else 0.0
    return np.array([len(y), mu, float(np.sum((y - mu) ** 2)), float(np.sum((y - pred) ** 2))])


def _score_block(light, raw) -> np.ndarray:
    X, y, task = raw
    return _score_stats(light, X, y, task)


def _partitions(X, y, task):
    """Aligned per-partition delayed objects of ``X`` (and ``y``) and ``task``."""
    import dask.array as da

    # unoptimized graphs: keys already sent to the scheduler (by the fit's shuffle) keep
    # their task, as Dask requires
    def parts(v, rows=None):
        if isinstance(v, da.Array):
            if v.ndim == 2:
                v = v.rechunk({1: -1})
                return list(v.to_delayed(optimize_graph=False)[:, 0])
            return list((v.rechunk(rows) if rows is not None else v).to_delayed(
                optimize_graph=False))
        return list(v.to_delayed(optimize_graph=False))

    rows = X.chunks[0] if isinstance(X, da.Array) else None
    px, pt = parts(X), parts(task, rows)
    py = parts(y, rows) if y is not None else [None] * len(px)
    if not (len(px) == len(pt) == len(py)):
        raise ValueError("X, y and task must have the same partitions (rows) as Dask "
                         "collections.")
    return px, py, pt


def estimator_predict(est, method: str, X, task=None):
    """``est.<method>(X, task)`` (``"_scores"``, ``"predict"``, ...) on distributed input.

    Returns a Dask array, computed on the workers: for :class:`TaskBlocks`, the blocks' rows
    in block order (each block's rows in its own order); for Dask collections, the rows of
    ``X`` in order. Each block receives only the coefficients of its tasks; each partition of
    a Dask collection receives the whole model (scattered once to every worker).
    """
    import dask
    import dask.array as da

    client = _client_for(est, X)
    extra: tuple = ()
    if method == "predict_proba":
        extra = (2,)
    dtype = est.classes_.dtype if method == "predict" and getattr(
        est, "_is_classifier", False) else np.float64
    if getattr(X, "_is_task_blocks", False):
        if task is not None:
            raise ValueError("TaskBlocks hold their task ids: pass no task.")
        if X.kind != "raw":
            raise ValueError("These blocks are datafits (TaskBlocks.from_datafits): they can be "
                             "fitted, not predicted on.")
        arrays = []
        for fut, labels, n in zip(X.futures, X.block_tasks, X.n_rows, strict=True):
            light = _light_copy(est, _task_rows(est, labels))
            out = client.submit(_apply_block, light, method, fut, pure=False)
            arrays.append(da.from_delayed(dask.delayed(out), shape=(int(n), *extra),
                                          dtype=dtype))
        return da.concatenate(arrays)
    if task is None:
        raise ValueError("Predicting on Dask collections needs the task id of each row (task=).")
    light = _scatter_unique(client, _light_copy(est, np.arange(len(est.tasks_))),
                            broadcast=True)
    px, _, pt = _partitions(X, None, task)
    arrays = [da.from_delayed(dask.delayed(_apply_part)(light, method, xp, tp),
                              shape=(np.nan, *extra), dtype=dtype) for xp, tp in
              zip(px, pt, strict=True)]
    return da.concatenate(arrays, allow_unknown_chunksizes=True)


def estimator_score(est, X, y, task=None) -> float:
    """``est.score`` on distributed input: R^2 of the pooled rows (regressors) or the mean
    accuracy (classifiers), from per-block sums (exact pooled statistics)."""
    import dask

    client = _client_for(est, X)
    if getattr(X, "_is_task_blocks", False):
        if y is not None or task is not None:
            raise ValueError("TaskBlocks hold their targets and task ids: call score(blocks, "
                             "None).")
        futs = [client.submit(_score_block, _light_copy(est, _task_rows(est, labels)), fut,
                              pure=False)
                for fut, labels in zip(X.futures, X.block_tasks, strict=True)]
        stats = client.gather(futs)
    else:
        if task is None or y is None:
            raise ValueError("Scoring on Dask collections needs y and task=.")
        light = _scatter_unique(client, _light_copy(est, np.arange(len(est.tasks_))),
                                broadcast=True)
        px, py, pt = _partitions(X, y, task)
        stats = client.gather(client.compute(
            [dask.delayed(_score_stats)(light, a, b, c) for a, b, c in zip(px, py, pt,
                                                                          strict=True)]))
    S = np.array(stats, dtype=np.float64)
    n = S[:, 0].sum()
    if n == 0:
        raise ValueError("No rows to score.")
    if getattr(est, "_is_classifier", False):
        return float(S[:, 1].sum() / n)
    mean = float(np.sum(S[:, 0] * S[:, 1]) / n)
    ss_tot = float(np.sum(S[:, 2] + S[:, 0] * (S[:, 1] - mean) ** 2))  # pooled (Chan et al.)
    ss_res = float(S[:, 3].sum())
    if ss_tot == 0:
        return 1.0 if ss_res == 0 else 0.0
    return 1.0 - ss_res / ss_tot
