"""Regularization grids and paths: one mechanism, warm-started refits of the estimator.

A path fits one estimator along the values of one parameter, in the order that starts with
the strongest regularization, each fit warm-started from the previous solution
(:func:`regularization_path`). Cross-validation (:mod:`multitask.model_selection._engine`)
runs the same function on each training fold. The default grid of a model comes from the
model itself (its ``default_grid`` method: relative to ``alpha_max`` for the norm penalties).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import Bunch

from multitask.data.converted_inputs import ConvertedInputs
from multitask.estimators.base import TaskStructureWarning

__all__ = ["PATH_PARAMETERS", "default_param_grid", "log_grid", "order_path",
           "regularization_path", "relative_grid"]

#: Parameters a regularization path runs along, and the order that starts with the strongest
#: regularization (the order of warm starts).
PATH_PARAMETERS: dict[str, str] = {
    "alpha": "decreasing",
    "alpha_l1": "decreasing",
    "alpha_group": "decreasing",
    "lam": "decreasing",
    "radius": "increasing",
    "C": "increasing",
}


def relative_grid(lam_max: float, n: int = 10, ratio: float = 1e-3) -> np.ndarray:
    """``n`` values log-spaced from ``lam_max`` down to ``ratio * lam_max`` (decreasing)."""
    if lam_max <= 0 or not np.isfinite(lam_max):
        raise ValueError(f"lam_max must be positive and finite, got {lam_max!r}.")
    return lam_max * np.logspace(0, np.log10(ratio), n)


def log_grid(top: float, n: int = 10, decades: float = 3.0) -> np.ndarray:
    """``n`` values log-spaced from ``top`` down to ``top * 10**-decades`` (decreasing)."""
    if top <= 0 or not np.isfinite(top):
        raise ValueError(f"top must be positive and finite, got {top!r}.")
    return top * np.logspace(0, -float(decades), n)


def order_path(name: str, values: Sequence) -> list:
    """``values`` sorted with the strongest regularization first (:data:`PATH_PARAMETERS`)."""
    values = list(values)
    try:
        return sorted(values, reverse=PATH_PARAMETERS.get(name, "decreasing") == "decreasing")
    except TypeError:
        return values


def default_param_grid(estimator, X, y, task=None, *, n_alphas: int = 10,
                       alpha_ratio: float = 1e-3, sample_weight=None) -> dict[str, np.ndarray]:
    """The default one-parameter grid of ``estimator`` on ``(X, y)``, in path order.

    Delegates to the estimator's ``default_grid`` (see
    :meth:`multitask.estimators.base.MultiTaskEstimator.default_grid`): ``n_alphas`` values
    log-spaced from ``alpha_max`` (the smallest strength with ``coef_ = 0``) down to
    ``alpha_ratio * alpha_max`` for the norm penalties, a wider grid from the loss's
    Lipschitz constant for ridge-type strengths, radii up to the unconstrained solution's norm
    for balls. ``sample_weight`` (row weights, as in ``fit``) is passed on when given.

    Raises
    ------
    ValueError
        When the estimator has no default grid: pass an explicit grid.
    """
    fn = getattr(estimator, "default_grid", None)
    if fn is None:
        raise ValueError(f"{type(estimator).__name__} has no default grid: pass param_grid, "
                         "e.g. {'C': np.logspace(-2, 2, 5)}.")
    weights = {} if sample_weight is None else {"sample_weight": sample_weight}
    return clone(estimator).default_grid(X, y, task, n_alphas=n_alphas, alpha_ratio=alpha_ratio,
                                         **weights)


def fit_path(estimator, X, y, points: Sequence[dict], *, task=None, warm: bool = True,
             on_fit: Callable | None = None, sample_weight=None,
             converted: ConvertedInputs | None = None,
             ) -> list[tuple[object | None, float, bool, str | None]]:
    """Fit a clone of ``estimator`` at each parameter setting of ``points``, in order.

    With ``warm``, each fit starts from the previous solution (``warm_start=True``); a failed
    fit is recorded and the next one starts cold. ``on_fit(estimator, point)`` is called after
    each successful fit (scoring in cross-validation; it must not keep the estimator, which is
    refitted in place). ``sample_weight`` is passed to every fit when given.

    The input is converted once for the path: a multi-task estimator's fits after the first
    reuse the first one's :class:`~multitask.data.MultiTaskData` (and with it what the
    losses cache on it: centring, Gram matrices, eigendecompositions;
    :mod:`multitask.data.converted_inputs`), so the path reads ``X``, ``y``, ``task`` and
    ``sample_weight`` as they were at its start: they must not be modified while it runs.
    ``converted``: the memo of conversions to use (shared by several paths on the same
    input objects, as the cross-validation engine's paths on one fold); a new one by default.

    Returns
    -------
    list of ``(on_fit result or None, fit seconds, converged, error message or None)``
    """
    est = clone(estimator)
    warm = warm and "warm_start" in est.get_params(deep=False)
    if warm:
        est.set_params(warm_start=True)
    out: list[tuple[object | None, float, bool, str | None]] = []
    if converted is None:
        converted = ConvertedInputs(size=1)
    for point in points:
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings(), converted.serving(est):
                warnings.simplefilter("ignore", ConvergenceWarning)
                # said once by the caller (MultiTaskCV), not once per fit
                warnings.simplefilter("ignore", TaskStructureWarning)
                est.set_params(**point)
                est.fit(X, y, *(() if task is None else (task,)),
                        **({} if sample_weight is None else {"sample_weight": sample_weight}))
            seconds = time.perf_counter() - t0
            value = on_fit(est, point) if on_fit is not None else None
            out.append((value, seconds, bool(getattr(est, "converged_", True)), None))
        except Exception as exc:  # noqa: BLE001 - recorded, re-raised by the caller if asked
            out.append((None, time.perf_counter() - t0, False, f"{type(exc).__name__}: {exc}"))
            est = clone(estimator)  # do not warm-start from a failed fit
            if warm:
                est.set_params(warm_start=True)
    return out


def regularization_path(estimator, X, y, task=None, *, param_name: str | None = None,
                        values=None, n_alphas: int = 10, alpha_ratio: float = 1e-3):
    """Fit ``estimator`` along a grid of one parameter with warm starts; keep every solution.

    Parameters
    ----------
    estimator : multi-task estimator (not modified)
    X, y, task
        Training data in any of the three formats.
    param_name : str, optional
        The parameter of the path; default: that of the estimator's default grid.
    values : sequence of float, optional
        The grid, fitted in the given order; default: the estimator's default grid
        (strongest regularization first).
    n_alphas, alpha_ratio
        Size and range of the default grid.

    Returns
    -------
    sklearn.utils.Bunch
        ``param`` (str), ``grid`` ``(n_values,)`` (the parameter's values), ``coefs``
        ``(n_values, n_tasks, n_features)`` (the public ``coef_`` orientation),
        ``intercepts`` ``(n_values, n_tasks)``, ``n_iter`` ``(n_values,)``, ``optimality``
        ``(n_values,)``, ``tasks`` (labels).

    Raises
    ------
    ValueError
        When a fit fails (with its message).
    """
    if values is None:
        grid = default_param_grid(estimator, X, y, task, n_alphas=n_alphas,
                                  alpha_ratio=alpha_ratio)
        if param_name is not None and param_name not in grid:
            raise ValueError(f"No default grid for {param_name!r}: pass values.")
        param_name, values = next(iter(grid.items()))
    elif param_name is None:
        raise ValueError("Give param_name with values.")
    values = np.asarray(list(values), dtype=float)
    if values.size == 0:
        raise ValueError("values is empty.")

    def keep(est, point):
        return (np.array(est.coef_, copy=True), np.array(est.intercept_, copy=True),
                int(getattr(est, "n_iter_", 0)), float(getattr(est, "optimality_", np.nan)),
                np.asarray(est.tasks_))

    fits = fit_path(estimator, X, y, [{param_name: v} for v in values], task=task, on_fit=keep)
    for (_, _, _, err), v in zip(fits, values, strict=True):
        if err is not None:
            raise ValueError(f"The fit at {param_name}={v!r} failed: {err}")
    kept = [f[0] for f in fits]
    return Bunch(param=param_name, grid=values, coefs=np.stack([k[0] for k in kept]),
                 intercepts=np.stack([k[1] for k in kept]),
                 n_iter=np.asarray([k[2] for k in kept]),
                 optimality=np.asarray([k[3] for k in kept]), tasks=kept[-1][4])
