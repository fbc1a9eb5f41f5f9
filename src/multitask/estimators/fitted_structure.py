"""The fitted structure new tasks take from a model, computed once per fit and kept.

``fit_new_tasks`` (:mod:`multitask.estimators.new_tasks`) needs the fitted penalty's new-task
prior (:func:`multitask.penalties.new_task.new_task_prior`) and ``nbar``, the mean size of the
tasks of fit. Both are computed at the first call after a fit (:func:`fitted_structure`) and
kept beside the model (weak references, never in its attributes) while nothing they are read
from changes.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from multitask.penalties.new_task import ColumnPrior

__all__ = ["FittedStructure", "clear_fitted_structure", "fitted_mean_size", "fitted_structure",
           "n_fit_tasks"]


@dataclass(frozen=True)
class FittedStructure:
    """What new tasks take from a fitted model: computed once per fit (:func:`fitted_structure`).

    Attributes
    ----------
    prior : ColumnPrior
        The new-task prior of the fitted penalty at the fitted weights of the tasks of fit
        (its standard forms, once computed, are kept with it).
    nbar : float
        The mean size of the tasks of fit (:func:`fitted_mean_size`).
    """

    prior: ColumnPrior
    nbar: float


@dataclass
class _CacheEntry:
    structure: FittedStructure
    fit: Any  # the fitted attribute that a fit replaces (fit_task_sizes_), by identity
    state: dict[str, Any]  # what the prior is made of (:func:`_state`), copied


#: One entry per live fitted model (weak keys: a model that is deleted leaves the cache; a
#: copy or a model loaded from a file starts without one, nothing is added to the model).
_STRUCTURES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_STRUCTURES_LOCK = threading.Lock()
_PARAM_NAMES: dict[type, tuple[str, ...]] = {}
_IMMUTABLE = (bool, int, float, str, type(None))


def _param_names(est) -> tuple[str, ...]:
    cls = type(est)
    if cls not in _PARAM_NAMES:
        _PARAM_NAMES[cls] = tuple(cls._all_params())
    return _PARAM_NAMES[cls]


def _state(est) -> dict[str, Any]:
    """Everything the new-task prior and ``nbar`` are read from: the hyper-parameters, the
    sizes, fitted variable, weights, intercepts and labels of the tasks of fit, the number of
    features, and the context of the prior's rule (``_new_task_context``: clusters,
    multipliers, the stored structure)."""
    m = n_fit_tasks(est)
    return {"params": {n: getattr(est, n, None) for n in _param_names(est)},
            "sizes": np.asarray(est.fit_task_sizes_), "d": int(est.n_features_in_),
            "variable": np.asarray(est.coef_variable_)[..., :m],
            "coef": np.asarray(est.coef_)[:m], "intercept": np.asarray(est.intercept_)[:m],
            "tasks": np.asarray(est.tasks_)[:m], "context": est._new_task_context()}


def _snapshot(value):
    """A copy of ``value`` that in-place changes of the value do not reach (arrays and
    containers copied, other objects kept)."""
    if isinstance(value, _IMMUTABLE):
        return value
    if isinstance(value, np.ndarray) or sp.issparse(value):
        return value.copy()
    if isinstance(value, dict):
        return {k: _snapshot(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_snapshot(v) for v in value)
    if isinstance(value, set):
        return set(value)
    return value


def _same(a, b) -> bool:
    """Whether ``b`` still equals the snapshot ``a``: arrays (dense or sparse) by shape, dtype
    and values, containers item by item, other values by ``==`` (values without a usable
    ``==`` are not known to be the same; an object compared by identity is not known to have
    kept its content)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape
                and a.dtype == b.dtype and bool(np.array_equal(a, b)))
    if sp.issparse(a) or sp.issparse(b):
        return (sp.issparse(a) and sp.issparse(b) and a.shape == b.shape
                and a.dtype == b.dtype and (a != b).nnz == 0)
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - values without a usable ==: not known to be the same
        return False


def fitted_structure(est) -> FittedStructure:
    """The fitted structure of ``est`` for new tasks, its hyper-parameters validated.

    Computed at the first call after a fit (``est._validate_params()``,
    ``est._new_task_prior()``, :func:`fitted_mean_size`) and kept for the model's later calls
    while it stays the same fit: the entry is dropped when the model is refitted
    (``fit_task_sizes_`` replaced), or when anything the prior is read from changed since,
    compared by value (:func:`_state`: a hyper-parameter changed by ``set_params`` or
    assignment, the fitted weights, intercepts or variable of the tasks of fit, the rule's
    context; arrays and containers by their content, other objects by ``==``, which for most
    is identity: an object parameter changed in place is not seen, call
    :func:`clear_fitted_structure`). The cache lives beside the model (weak references), never
    in its attributes: copies and models loaded from files start without it.
    """
    fit = getattr(est, "fit_task_sizes_", None)
    with _STRUCTURES_LOCK:
        entry = _STRUCTURES.get(est)
    if entry is not None and fit is not None and entry.fit is fit:
        if _same(entry.state, _state(est)):
            return entry.structure
    est._validate_params()
    structure = FittedStructure(est._new_task_prior(), fitted_mean_size(est))
    entry = _CacheEntry(structure, fit, _snapshot(_state(est)))
    with _STRUCTURES_LOCK:
        _STRUCTURES[est] = entry
    return structure


def clear_fitted_structure(est) -> None:
    """Drop the cached structure of ``est`` (the next ``fit_new_tasks`` computes it again)."""
    with _STRUCTURES_LOCK:
        _STRUCTURES.pop(est, None)


def fitted_mean_size(est) -> float:
    """``nbar``: the mean size of the tasks of fit (:attr:`fit_task_sizes_`)."""
    sizes = getattr(est, "fit_task_sizes_", None)
    if sizes is None or not np.size(sizes):
        raise ValueError(
            f"This {type(est).__name__} does not record the sizes of its fitted tasks "
            "(fit_task_sizes_: a distributed fit or a model saved by an older version): refit "
            "it in memory to learn new tasks.")
    return float(np.mean(sizes))


def n_fit_tasks(est) -> int:
    """The number of tasks of fit (the first rows of ``coef_``; later ones were added by
    ``fit_new_tasks``)."""
    sizes = getattr(est, "fit_task_sizes_", None)
    return len(est.tasks_) if sizes is None else int(np.size(sizes))

