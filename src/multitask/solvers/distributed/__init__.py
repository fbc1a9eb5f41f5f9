"""Data-parallel proximal gradient over blocks of tasks held by Dask workers.

The tasks are partitioned into blocks; each block (its rows, its datafit with whatever caches
the datafit builds, and its columns of the iterates) stays on one Dask worker for the whole
fit, inside one actor per worker (:class:`TaskBlockWorker`). In each iteration of
accelerated proximal gradient (the three steps of :mod:`multitask.solvers.distributed.solver`)
the blocks send the client the penalty's reduction of their prox inputs
(``penalty.block_stats``), the client sends back the plan of the prox
(``penalty.block_plan``), and the blocks apply it (``penalty.block_prox``).

So the data never leave their worker and only what the penalty needs crosses the network
(the ``"blockwise"`` capability of :mod:`multitask.penalties.base`): nothing for penalties
separable over tasks (l1, l2 over task columns, ridge), ``d`` squared row norms for the l2,1
norm, the ``R`` factor of ``V^T`` (``R^T R = V V^T``, a ``d x d`` triangular array) for the
trace norm, whose prox is then ``V -> M V`` with a ``d x d`` matrix ``M`` whatever the number
of tasks, and the parts' reductions side by side for split models. Per iteration each worker
sends one reduction and a few scalars and receives one plan (see ``docs/distributed.md``).
The stopping rule is the relative optimality measure of :mod:`multitask.solvers.base`,
computed blockwise the same way (two more round trips when it is checked).

The package is layered, each module importing only those above it:

* :mod:`~multitask.solvers.distributed.cluster`: the Dask client, futures and scattering;
* :mod:`~multitask.solvers.distributed.blocks`: :class:`TaskBlocks`, the data input (Dask
  DataFrames or arrays in long format, per-block Parquet files, a function run on the
  workers, per-block datafit objects, or an in-memory datafit's data cut into blocks);
* :mod:`~multitask.solvers.distributed.workers`: :class:`TaskBlockWorker`, the actor's
  blockwise steps;
* :mod:`~multitask.solvers.distributed.datafit`: :class:`DistributedDatafit`, the actors seen
  from the client as one datafit;
* :mod:`~multitask.solvers.distributed.solver`: :class:`DistributedProximalGradient`, the
  client's side of the iteration;
* :mod:`~multitask.solvers.distributed.estimator_glue`: the ``estimator_*`` functions that the
  estimators call on Dask collections or :class:`TaskBlocks` in ``fit``, ``predict``,
  ``decision_function``, ``predict_proba``, ``score`` and ``alpha_max`` (the hook is in
  :mod:`multitask.estimators.base`).
"""

from __future__ import annotations

from multitask.solvers.distributed.blocks import TaskBlocks, is_distributed_input
from multitask.solvers.distributed.datafit import DistributedDatafit
from multitask.solvers.distributed.estimator_glue import (
    estimator_alpha_max,
    estimator_fit,
    estimator_predict,
    estimator_score,
)
from multitask.solvers.distributed.solver import DistributedProximalGradient
from multitask.solvers.distributed.workers import TaskBlockWorker

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
