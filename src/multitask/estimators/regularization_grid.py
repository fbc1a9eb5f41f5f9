"""The regularization scale of a model: ``alpha_max`` (the smallest strength giving zero
weights) and the default grid of strengths cross-validation searches (:class:`GridSpan` for
a secondary parameter with a range of its own), as methods every estimator inherits
(:class:`RegularizationGrid`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from multitask.estimators._grid_scales import ridge_grid_top
from multitask.estimators.inputs import (
    distributed_solvers,
    is_distributed,
    refuse_distributed_weights,
)
from multitask.losses import Datafit
from multitask.penalties.base import Penalty


@dataclass(frozen=True)
class GridSpan:
    """Values of a secondary parameter of a default grid, log-spaced from ``first`` to
    ``last`` (see :meth:`RegularizationGrid._grid_tops`).

    ``n`` values are ``first * (last / first) ** (k / (n - 1))``, ``k = 0 .. n - 1``, with
    ``endpoint=True``; with ``endpoint=False`` the span is cut in ``n`` equal log steps and
    ``last`` itself left out (``k / n``); with ``interior=True`` both ends are left out
    (``(k + 1) / (n + 1)``): for ranges whose ends are degenerate models. A repeated value
    is given once (``first == last``); ``integer=True`` rounds to distinct integers.
    """

    first: float
    last: float
    endpoint: bool = True
    interior: bool = False
    integer: bool = False

    def values(self, n: int) -> np.ndarray:
        """The ``n`` values, in the order from ``first`` to ``last``."""
        first, last = float(self.first), float(self.last)
        if not (np.isfinite(first) and np.isfinite(last) and first > 0 and last > 0):
            raise ValueError(f"A grid span needs finite positive ends, got {first!r} and "
                             f"{last!r}.")
        if self.interior:
            steps = np.arange(1, n + 1) / (n + 1)
        elif self.endpoint:
            steps = np.arange(n) / max(n - 1, 1)
        else:
            steps = np.arange(n) / n
        out = first * (last / first) ** steps
        if self.integer:
            return np.asarray(list(dict.fromkeys(int(round(v)) for v in out)), dtype=np.int64)
        return np.asarray(list(dict.fromkeys(out.tolist())), dtype=np.float64)


class RegularizationGrid:
    """``alpha_max`` and ``default_grid`` of every estimator, a mixin of
    :class:`~multitask.estimators.estimator.MultiTaskEstimator` (whose hooks ``_convert``,
    ``_make_datafit``, ``_make_penalty`` and ``_make_solver`` it calls)."""

    def alpha_max(self, X, y, task=None, sample_weight=None) -> float:
        """Smallest value of the path parameter at which ``coef_`` is zero.

        Computed from one gradient of the loss at ``W = 0`` (with the best intercepts) by the
        penalty's ``alpha_max``; ``inf`` where no finite value gives zero (ridge, balls).
        ``sample_weight`` weighs the rows as in :meth:`fit`.
        """
        self._validate_params()
        if is_distributed(X):
            refuse_distributed_weights(sample_weight)
            return distributed_solvers().estimator_alpha_max(self, X, y, task)
        data, _, _ = self._convert(X, y, task, sample_weight)
        datafit = self._make_datafit(data)
        return float(self._make_penalty(datafit).alpha_max(datafit.grad_at_zero()))

    def _check_loss_pair(self, datafit: Datafit, penalty: Penalty) -> None:
        """Refuse a (model, loss) pair that ``fit`` refuses, with its message (a default grid
        for a model that cannot be fitted would only fail later, fold after fold): the
        regression losses beyond least squares, for which some models have no solver."""
        if self._loss_name() in ("poisson", "gamma", "tweedie", "huber", "quantile"):
            self._make_solver(datafit, penalty)

    def _grid_tops(self, datafit: Datafit, penalty: Penalty) -> dict | None:
        """Models with several strengths: ``{name: (top, decades_factor)}``, the path
        parameter first (see :meth:`default_grid`); a secondary parameter may instead give
        a :class:`GridSpan` (its values then do not follow ``alpha_ratio``); ``None`` for one
        path parameter."""
        return None

    def default_grid(self, X, y, task=None, *, sample_weight=None, n_alphas: int = 10,
                     alpha_ratio: float = 1e-3) -> dict[str, np.ndarray]:
        """The default grid on ``(X, y)``, strongest regularization first.

        One path parameter: ``n_alphas`` values log-spaced from ``alpha_max`` down to
        ``alpha_ratio * alpha_max``. Where ``alpha_max`` is infinite (ridge-type strengths)
        the grid runs from ``10 L`` down over twice as many decades, ``L`` the Lipschitz
        constant of the loss gradient (the largest eigenvalue of a task's scaled covariance
        for the squared loss). Models with several strengths (``_grid_tops``): ``n_alphas``
        values of the path parameter from its top down over ``factor * log10(1 /
        alpha_ratio)`` decades, and ``max(1, round((n_alphas / 3) ** (1 / k)))`` values of
        each of the ``k`` other strengths over its range (cross-validation runs the path
        inside a loop over them: about ``n_alphas / 3`` outer points in all, 3 for one other
        strength, 2 x 2 for two), or over its :class:`GridSpan`. ``sample_weight`` weighs
        the rows as in :meth:`fit`.
        """
        name = self._path_param
        if name is None or name not in self.get_params(deep=False):
            raise ValueError(f"{type(self).__name__} has no default grid: pass an explicit "
                             "grid (param_grid).")
        n_alphas = int(n_alphas)
        if n_alphas < 1:
            raise ValueError(f"n_alphas must be >= 1, got {n_alphas!r}.")
        if not 0 < float(alpha_ratio) < 1:
            raise ValueError(f"alpha_ratio must be in (0, 1), got {alpha_ratio!r}.")
        decades = -np.log10(float(alpha_ratio))
        self._validate_params()
        data, _, _ = self._convert(X, y, task, sample_weight)
        datafit = self._make_datafit(data)
        penalty = self._make_penalty(datafit)
        self._check_loss_pair(datafit, penalty)
        tops = self._grid_tops(datafit, penalty)
        if tops is not None:
            out = {}
            n_other = max(1, round((n_alphas / 3) ** (1.0 / max(len(tops) - 1, 1))))
            for i, (pname, spec) in enumerate(tops.items()):
                n = n_alphas if i == 0 else n_other
                if isinstance(spec, GridSpan):
                    out[pname] = spec.values(n)
                    continue
                ptop, factor = spec
                ptop = float(ptop) if np.isfinite(ptop) and ptop > 0 else 1.0
                out[pname] = ptop * np.logspace(0, -factor * decades, n)
            return out
        top = float(penalty.alpha_max(datafit.grad_at_zero()))
        if np.isfinite(top) and top > 0:
            return {name: top * np.logspace(0, -decades, n_alphas)}
        scale = ridge_grid_top(datafit)
        return {name: scale * np.logspace(0, -2 * decades, n_alphas)}
