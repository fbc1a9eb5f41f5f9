"""The candidates of the cross-validation engine: the grids (the model's default grid or the
user's), the warm-started path within them, their validation and the widening of a path whose
best value lies at an edge."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from itertools import product

import numpy as np
from sklearn.base import clone

from multitask.estimators.base import check_renamed
from multitask.model_selection._path import PATH_PARAMETERS, default_param_grid

#: A path is not continued past an edge whose mean score beats its neighbour's by less than
#: this share of the edge's standard error over the folds: the score has flattened there, at
#: a resolution far finer than the folds'.
WIDEN_MIN_GAIN = 0.1


def _flat_edge(mean: np.ndarray, scores: np.ndarray | None, edge: int, neighbour: int) -> bool:
    """Whether the score gains less than :data:`WIDEN_MIN_GAIN` standard errors from
    ``neighbour`` to ``edge``: ``mean[edge] - mean[neighbour] < WIDEN_MIN_GAIN
    std_k(scores[k, edge]) / sqrt(K)`` over the ``K >= 2`` folds with a finite score
    (False without per-fold scores: leave-one-out's pooled scores)."""
    if scores is None:
        return False
    per_fold = scores[:, edge]
    per_fold = per_fold[np.isfinite(per_fold)]
    if per_fold.size < 2 or not np.isfinite(mean[neighbour]):
        return False
    error = float(np.std(per_fold, ddof=1)) / np.sqrt(per_fold.size)
    return bool(mean[edge] - mean[neighbour] < WIDEN_MIN_GAIN * error)


def _widen(candidates: list[dict], paths: list, mean: np.ndarray, default: bool,
           n_splits: int, scores: np.ndarray | None = None) -> list:
    """Jobs continuing the path whose best candidate lies at an edge of its grid.

    At the weak end (the last value of the path) the path goes on with 3 more values of the
    same log spacing, warm-started from a refit of the edge value (whose score is kept, not
    recomputed). At the strong end of an explicit grid (a default grid starts where the
    solution is zero) 3 stronger values are fitted as a new path. ``candidates`` and
    ``paths`` are extended in place. ``mean`` holds the score of each candidate, ``scores``
    (optional, ``(n_splits, n_candidates)``) its score on each fold: a path whose score has
    flattened at the edge (:func:`_flat_edge`) is not continued.
    """
    best = int(np.argmax(np.where(np.isnan(mean), -np.inf, mean)))
    jobs = []
    for i, (name, idx, values) in enumerate(paths):
        if best not in idx or len(values) < 2:
            continue
        try:
            nums = np.asarray(values, dtype=float)
        except (TypeError, ValueError):
            continue
        if np.any(nums <= 0) or not np.all(np.isfinite(nums)) or nums[-1] == nums[-2]:
            continue
        point = {k: v for k, v in candidates[best].items() if k != name}
        pos = idx.index(best)
        if pos == len(idx) - 1:
            if _flat_edge(mean, scores, best, idx[-2]):
                continue
            ratio = nums[-1] / nums[-2]
            new = [float(nums[-1] * ratio ** (j + 1)) for j in range(3)]
            start = len(candidates)
            candidates.extend({**point, name: v} for v in new)
            new_idx = list(range(start, len(candidates)))
            chunk = [idx[-1], *new_idx]
            paths[i] = (name, idx + new_idx, values + new)
            left: tuple[int, ...] = (0,)  # the anchor, already scored
        elif pos == 0 and not default:
            if _flat_edge(mean, scores, best, idx[1]):
                continue
            ratio = nums[1] / nums[0]
            new = [float(nums[0] / ratio ** (j + 1)) for j in range(3)][::-1]
            start = len(candidates)
            candidates.extend({**point, name: v} for v in new)
            new_idx = list(range(start, len(candidates)))
            chunk = new_idx
            paths[i] = (name, new_idx + idx, new + values)
            left = ()
        else:
            continue
        for k in range(n_splits):
            jobs.append((k, chunk, [candidates[c] for c in chunk], left))
    return jobs


def _validate_candidates(est, grid: dict) -> None:
    """Set each value of the grid on a clone and validate it, naming the parameter."""
    validate = getattr(est, "_validate_params", None)
    if validate is None:
        return
    for name, values in grid.items():
        for v in values:
            probe = clone(est)
            try:
                probe.set_params(**{name: v})
                probe._validate_params()
            except (TypeError, ValueError) as exc:
                raise ValueError(f"param_grid[{name!r}] holds an invalid value {v!r}: {exc}") \
                    from None


def _grids(estimator, X, y, task, pg, n_alphas, alpha_ratio,
           sample_weight=None) -> tuple[list[dict], bool]:
    if pg is None:
        grid = default_param_grid(estimator, X, y, task, n_alphas=n_alphas,
                                  alpha_ratio=alpha_ratio, sample_weight=sample_weight)
        return [{k: list(v) for k, v in grid.items()}], True
    grids = [pg] if isinstance(pg, Mapping) else list(pg)
    if not grids or not all(isinstance(g, Mapping) for g in grids):
        raise ValueError("param_grid must be a dict {name: values} or a list of such dicts.")
    valid = estimator.get_params(deep=True)
    out = []
    for g in grids:
        clean = {}
        for name, values in g.items():
            if name not in valid:
                check_renamed(type(estimator), [name], getattr(estimator, "_renamed", {}))
                raise ValueError(f"param_grid names {name!r}, which is not a parameter of "
                                 f"{type(estimator).__name__}.")
            if isinstance(values, str) or not isinstance(values, (Sequence, np.ndarray)):
                raise ValueError(f"param_grid[{name!r}] must be a list of values, got "
                                 f"{values!r}.")
            values = list(values)
            if not values:
                raise ValueError(f"param_grid[{name!r}] is empty.")
            clean[name] = values
        out.append(clean)
    return out, False


def _split_path(grid: dict, warm: bool):
    """``(path, outer)``: the warm-start path ``(name, ordered values)`` and the outer points."""
    names = [n for n in grid if n in PATH_PARAMETERS and len(grid[n]) > 1]
    path = None
    if names:
        name = max(names, key=lambda n: len(grid[n]))
        values = list(grid[name])
        try:
            values = sorted(values, reverse=PATH_PARAMETERS[name] == "decreasing")
        except TypeError:
            pass
        path = (name, values)
    rest = {k: v for k, v in grid.items() if path is None or k != path[0]}
    keys = list(rest)
    outer = [dict(zip(keys, combo, strict=True)) for combo in product(*(rest[k] for k in keys))]
    return path, outer


_HELD_NOTED: set[str] = set()


def _note_held_parameters(estimator, grid: dict) -> None:
    """Say once per model class and process which parameters that change the fitted model
    the default grid leaves at their set value (the estimator's ``_grid_held``), and why."""
    held = getattr(estimator, "_grid_held", {}) or {}
    name = type(estimator).__name__
    params = estimator.get_params(deep=False)
    held = {k: why for k, why in held.items() if k in params and k not in grid}
    if not held or name in _HELD_NOTED:
        return
    _HELD_NOTED.add(name)
    parts = "; ".join(f"{k}={params[k]!r} ({why})" for k, why in held.items())
    warnings.warn(f"The default grid of {name} searches {', '.join(grid)} and holds {parts}. "
                  "Pass param_grid to search them too (said once per model).", UserWarning,
                  stacklevel=4)
