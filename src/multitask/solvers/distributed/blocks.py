"""Multi-task data in blocks of tasks held by Dask workers (:class:`TaskBlocks`).

Every task lies in exactly one block. The blocks come from Dask DataFrames or arrays in long
format (rows shuffled so that each task lies in one partition), from per-block Parquet files,
from a function run on the workers (data generated there, never on the client), from
per-block datafit objects (data streamed or regenerated inside each evaluation), or from an
in-memory :class:`~multitask.data.MultiTaskData` cut into blocks of consecutive tasks and
scattered. The client holds only the futures and the per-block metadata.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from multitask.data import MultiTaskData
from multitask.solvers.base import check_int
from multitask.solvers.distributed.cluster import get_client, scatter_unique

__all__ = ["TaskBlocks", "is_distributed_input"]


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
        client = get_client(client)
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
        client = get_client(client)
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
        client = get_client(client)
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

        client = get_client(client)
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
        scattered to the workers (kind ``"data"``: used by
        :class:`~multitask.solvers.distributed.DistributedProximalGradient` given an in-memory
        datafit)."""
        client = get_client(client)
        n_blocks = max(1, min(check_int(n_blocks, "n_blocks"), data.n_tasks))
        cuts = np.linspace(0, data.n_tasks, n_blocks + 1).round().astype(np.int64)
        subs = [data.subset_tasks(np.arange(cuts[i], cuts[i + 1])) for i in range(n_blocks)]
        obj = cls.__new__(cls)
        obj.client = client
        # unique keys (hash=False): content-hashed keys would be those of an earlier fit on
        # the same data, whose release may still be on its way to the scheduler (see
        # scatter_unique)
        obj.futures = scatter_unique(client, subs)
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
