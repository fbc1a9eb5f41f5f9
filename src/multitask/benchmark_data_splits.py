"""The train/test splits of ``multitask benchmark``, features standardized with the
training part's pooled moments (:func:`~multitask.benchmark_data.benchmark_splits`,
importable from :mod:`multitask.benchmark_data`, with :data:`DEFAULT_TRAIN_RATIO`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from multitask.benchmark_data_build import BenchmarkData

__all__ = ["DEFAULT_TRAIN_RATIO", "benchmark_splits"]

#: Training fraction of the random splits of data sets without official splits
#: (``--train-ratio``; School's official splits are about 75% / 25% too).
DEFAULT_TRAIN_RATIO = 0.75


def _power_of_two_scale(absmax: np.ndarray) -> np.ndarray:
    """Per column, the power of two ``2**-e`` that brings its largest magnitude into
    ``[0.5, 1)`` (1 for a column of zeros; ``e`` is kept within ``[-1000, 1000]``).

    Multiplying by a power of two is exact (no rounding, away from the subnormal range), so
    moments computed on the scaled columns and scaled back are those of the columns
    themselves, without the overflow of squares of entries above about ``1e154`` or the
    underflow of squares below about ``1e-154``.
    """
    _, exponent = np.frexp(absmax)
    return np.ldexp(1.0, np.clip(-exponent.astype(np.int64), -1000, 1000))


def _feature_name(names: list[str] | None, j: int) -> str:
    return repr(names[j]) if names is not None else f"{j} (position, from 0)"


def _standardize(X_tr: Any, X_te: Any, feature_names: list[str] | None = None,
                 split: int = 0) -> tuple[Any, Any]:
    """Scale (and, dense, center) both parts with the training part's pooled moments.

    Dense: ``(x - mu) / sd`` with ``mu``, ``sd`` the mean and standard deviation of each
    feature over the pooled training rows (``sd = 1`` for a constant feature). Sparse: ``x / sd``
    (centering would fill the matrix). The moments are computed on each column scaled by a
    power of two (:func:`_power_of_two_scale`): the same numbers as on the column itself, and
    no overflow for entries up to the largest float.

    Raises
    ------
    ValueError
        When a standardized entry is not finite or exceeds
        :data:`multitask.data.MAX_ABS_VALUE` in magnitude (a test value that far from a
        training part that is nearly constant), naming the feature and the split.
    """
    lists = isinstance(X_tr, list)
    pooled = (sp.vstack(X_tr, format="csr") if sp.issparse(X_tr[0]) else np.vstack(X_tr)) \
        if lists else X_tr
    if sp.issparse(pooled):
        absmax = np.asarray(abs(pooled).max(axis=0).todense()).ravel().astype(np.float64)
        c = _power_of_two_scale(absmax)
        scaled = pooled @ sp.diags(c)
        mean = np.asarray(scaled.mean(axis=0)).ravel()
        sq = np.asarray(scaled.multiply(scaled).mean(axis=0)).ravel()
        sd = np.sqrt(np.maximum(sq - mean ** 2, 0.0))
        sd[sd == 0] = c[sd == 0]  # a constant column keeps its values (sd = 1)
        scale = sp.diags(c / sd)

        def f(x):
            with np.errstate(over="ignore", invalid="ignore"):  # checked below
                return sp.csr_matrix(x @ scale)
    else:
        absmax = np.max(np.abs(pooled), axis=0) if pooled.shape[0] else np.zeros(
            pooled.shape[1])
        c = _power_of_two_scale(absmax)
        scaled = pooled * c
        mu, sd = scaled.mean(axis=0), scaled.std(axis=0)
        sd[sd == 0] = c[sd == 0]  # a constant column: (x - mu) / 1

        def f(x):
            with np.errstate(over="ignore", invalid="ignore"):  # checked below
                return (x * c - mu) / sd
    if lists:
        out_tr, out_te = [f(x) for x in X_tr], [f(x) for x in X_te]
    else:
        out_tr, out_te = f(X_tr), f(X_te)
    from multitask.data import MAX_ABS_VALUE

    parts: list[Any] = [*out_tr, *out_te] if lists else [out_tr, out_te]
    for part in parts:
        vals = part.data if sp.issparse(part) else part
        with np.errstate(invalid="ignore"):
            fine = np.isfinite(vals) & (np.abs(vals) <= MAX_ABS_VALUE)
        if not np.all(fine):
            dense = part.toarray() if sp.issparse(part) else part
            with np.errstate(invalid="ignore"):
                bad = np.flatnonzero(~(np.isfinite(dense) & (np.abs(dense) <= MAX_ABS_VALUE)
                                       ).all(axis=0))
            raise ValueError(f"Feature {_feature_name(feature_names, int(bad[0]))}: a value of "
                             f"the test part of split {split} (numbered from 0, as in "
                             f"splits.csv) lies more than {MAX_ABS_VALUE:g} standard deviations "
                             "of the training part from its mean, beyond what the solvers "
                             "handle: the training part of that column is (nearly) constant "
                             "next to it; rescale or drop the column.")
    return out_tr, out_te


def _check_both_classes(y_tr: Any, names: list[str], split: int) -> None:
    columns = y_tr.T if not isinstance(y_tr, list) else y_tr
    for t, v in enumerate(columns):
        if v.min() == v.max():
            raise ValueError(f"Task {names[t]!r}: the training part of split {split} (numbered "
                             "from 0, as in splits.csv) holds one class only; raise "
                             "--train-ratio or leave the task out.")


def _check_some_test_auc(y_te: Any, split: int) -> None:
    """Refuse a split where no task's test part holds both classes (every AUC undefined)."""
    columns = y_te.T if not isinstance(y_te, list) else y_te
    if not any(v.size and v.min() != v.max() for v in columns):
        raise ValueError(f"Split {split} (numbered from 0, as in splits.csv): no task's test "
                         "part holds both classes, so every task's ROC AUC, and the AUC of "
                         "the table, is undefined; lower --train-ratio or give the tasks more "
                         "rows of the rarer class.")


def benchmark_splits(data: BenchmarkData, n_splits: int, train_ratio: float | None = None,
                     random_state: int = 0, *, with_exposure: bool = False) -> list[tuple]:
    """The train/test splits of the benchmark, features standardized.

    Parameters
    ----------
    data : BenchmarkData
    n_splits : int
        Number of splits (at most the number of official splits when those are used).
    train_ratio : float in (0, 1), optional
        Random splits with this training fraction; default: the official splits when the
        data have them, else :data:`~multitask.benchmark_data.DEFAULT_TRAIN_RATIO`.
    random_state : int, default=0
        Seed: split ``s`` is drawn with the ``s``-th integer of
        ``numpy.random.default_rng(random_state)``.
    with_exposure : bool, default=False
        Add the exposures of both parts to each split (None for data without one).

    Returns
    -------
    list of (X_train, y_train, X_test, y_test)
        Per-task lists, or arrays for a shared design; with ``with_exposure``,
        ``(X_train, y_train, X_test, y_test, exposure_train, exposure_test)``. Classification
        splits are drawn class by class within each task (binary and multi-class).

    Raises
    ------
    ValueError
        On a number of splits or a training fraction out of range, a task too small to split,
        or (classification) a training part with one class, or a split where no task's test
        part holds both classes (the AUC undefined).
    """
    if isinstance(n_splits, bool) or not isinstance(n_splits, (int, np.integer)):
        raise ValueError(f"--splits must be an integer, got {n_splits!r}.")
    official = data.official_splits if train_ratio is None else None
    if official is not None and not 1 <= n_splits <= len(official):
        raise ValueError(f"--splits must be between 1 and {len(official)} for the official "
                         f"splits, got {n_splits}.")
    if train_ratio is not None and not 0 < train_ratio < 1:
        raise ValueError(f"--train-ratio must be in (0, 1), got {train_ratio}.")
    if n_splits < 1:
        raise ValueError(f"--splits must be at least 1, got {n_splits}.")
    ratio = DEFAULT_TRAIN_RATIO if train_ratio is None else float(train_ratio)
    if official is None and not data.shared:
        small = [n for n, x in zip(data.task_names, data.X, strict=True) if x.shape[0] < 2]
        if small:
            raise ValueError(f"Task {small[0]!r} has one row: it cannot be split into a "
                             "training and a test part.")
    from multitask.datasets import split_shared, split_tasks

    classification = data.kind in ("classification", "multiclass")
    rng = np.random.default_rng(random_state)
    out = []
    for s in range(int(n_splits)):
        e_tr = e_te = None
        if official is not None:
            sp_ = official[s]
            X_tr = [x[i] for x, i in zip(data.X, sp_["train"], strict=True)]
            y_tr = [v[i] for v, i in zip(data.y, sp_["train"], strict=True)]
            X_te = [x[i] for x, i in zip(data.X, sp_["test"], strict=True)]
            y_te = [v[i] for v, i in zip(data.y, sp_["test"], strict=True)]
        elif data.shared:
            X_tr, y_tr, X_te, y_te, i_tr, i_te = split_shared(
                data.X, data.y, train_ratio=ratio, random_state=int(rng.integers(2**31)),
                return_indices=True)
            if data.exposure is not None:
                e_tr, e_te = data.exposure[i_tr], data.exposure[i_te]
        else:
            X_tr, y_tr, X_te, y_te, i_tr, i_te = split_tasks(
                data.X, data.y, train_ratio=ratio, random_state=int(rng.integers(2**31)),
                stratify=classification, return_indices=True)
            y_tr, y_te = list(y_tr), list(y_te)
            if data.exposure is not None:
                e_tr = [e[i] for e, i in zip(data.exposure, i_tr, strict=True)]
                e_te = [e[i] for e, i in zip(data.exposure, i_te, strict=True)]
        if data.kind == "classification":
            _check_both_classes(y_tr, data.task_names, s)
            _check_some_test_auc(y_te, s)
        X_tr, X_te = _standardize(X_tr, X_te, data.feature_names, s)
        out.append((X_tr, y_tr, X_te, y_te, e_tr, e_te) if with_exposure
                   else (X_tr, y_tr, X_te, y_te))
    return out
