"""What the estimators check of their input before the data layer reads it: distributed
input (Dask collections and ``TaskBlocks``, fitted and scored on the cluster), the targets
of a classifier, sparse designs."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from multitask.data import observed_mask


def refuse_distributed_weights(sample_weight) -> None:
    """Row weights are not supported on distributed input: a clear error (not ignored)."""
    if sample_weight is not None:
        raise ValueError("sample_weight is not supported with Dask collections or TaskBlocks: "
                         "fit in memory, or repeat the rows to weight them.")


def is_distributed(X) -> bool:
    """Whether ``X`` is a Dask collection or a ``TaskBlocks``: the estimators then fit,
    predict and score on the cluster (:mod:`multitask.solvers.distributed`)."""
    return bool(getattr(X, "_is_task_blocks", False)) or hasattr(X, "__dask_graph__")


def distributed_solvers():
    from multitask.solvers import distributed  # imported on use: Dask is optional

    return distributed


def check_classification_targets(y) -> None:
    """Raise the scikit-learn style error for continuous targets (two classes or more are
    class labels: more than two make one multinomial model per task)."""
    from sklearn.utils.multiclass import type_of_target

    y = np.asarray(y)
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        return  # left to the data layer, which names the row and its task
    if y.dtype.kind == "O" and not observed_mask(y).all():
        # a missing label (None): the data layer names it, or skips it when asked; the
        # observed labels must still be labels (continuous values would make one class each)
        seen = y[observed_mask(y)]
        if not seen.size or not all(isinstance(v, (float, np.floating)) for v in seen.ravel()):
            return
        y = seen.astype(np.float64)
    kind = type_of_target(y)
    if kind in ("continuous", "continuous-multioutput"):
        raise ValueError(
            f"Unknown label type: {kind}. Classifiers need class labels, not continuous values."
        )


def is_sparse_input(X) -> bool:
    """Whether ``X`` (or any per-task block) is a scipy sparse matrix."""
    if isinstance(X, (list, tuple)):
        return any(sp.issparse(x) for x in X)
    return sp.issparse(X)

