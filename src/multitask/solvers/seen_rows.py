"""A solver run on the feature rows the loss sees, the others at zero.

Where a feature's column of the design the loss sees (:attr:`Datafit.data`: centred per task
where the loss centres) is zero in every task (a feature constant within each task, centred
away: on School, the six one-hot school-level features), the loss does not depend on that row
of ``W``. For a penalty that offers ``"row_monotone"``,

    h(W) >= h(W with the rows S set to zero) = h_S(W restricted to the other rows),

(a spectral penalty nondecreasing in each singular value, such as the capped trace norm and
its stage penalties: deleting rows of a matrix does not increase any of its singular values, by
interlacing), so setting those rows to zero never increases ``f + h``: the problem on the other rows
has the same minima and stationary points, padded with zero rows, as the whole one, and every
stage penalty of a multi-stage run taken at a padded point is the same. :func:`on_seen_rows`
runs a solver on the seen rows alone (:meth:`Datafit.on_columns`) and pads its result: the
same iterates as the run on all rows (which keeps those rows at exactly zero), each
iteration on a smaller matrix (the spectral stages' eigendecompositions of ``d x d`` Gram
matrices, their products). With a ridge term (``alpha_l2``) those rows are still zero at
every solution, but the run on all rows sees the ridge's eigenvalues on them, and the stage
ADMM's penalty parameter (a median of the ``H_t``'s eigenvalues) differs: another path to a
stationary point, not the same iterates.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from multitask.losses import Datafit
from multitask.penalties.base import IdentityMap, Penalty, SumMap
from multitask.solvers.base import initial_point
from multitask.solvers.iteration import EXTRA_FRAMES
from multitask.solvers.result import SolverResult
from multitask.solvers.working_set import DesignColumns

__all__ = ["on_seen_rows", "seen_rows"]


def seen_rows(datafit: Datafit, penalty: Penalty) -> np.ndarray | None:
    """The sorted positions of the feature rows the loss sees, where some rows are unseen and
    the run may leave them out (module docstring), else ``None``.

    It may for least squares with Gram matrices (``"least_squares"``, ``"quadratic"``: not
    the quadratic models of another loss that inner solvers see, whose data are not their
    terms) and a penalty on ``W`` itself, or on parts
    ``V[i]`` with ``W = sum_i V[i]`` (:class:`SumMap`: each part's rows there are zero), that
    offers ``"row_monotone"``. A row is unseen when the design the loss sees has an exactly zero
    column there in every task: its cells are all constant within their tasks (the centred
    view's ``x_constant``) or the stacked column has no nonzero entry (and no centring
    offset). Cached on the data (the fits of a path share it).
    """
    if ("row_monotone" not in penalty.capabilities
            or not {"quadratic", "least_squares"} <= datafit.capabilities
            or not isinstance(penalty.linear_map, IdentityMap | SumMap)):
        return None
    data = datafit.data
    rows = data.cached("seen_rows", lambda: _seen_rows(data))
    if rows.size in (0, data.n_features):
        return None
    return rows


def _seen_rows(data) -> np.ndarray:
    X = data.X
    if sp.issparse(X):
        nonzero = np.asarray(abs(X).sum(axis=0)).ravel() != 0.0
    else:
        nonzero = np.any(X != 0.0, axis=0)
    if data.x_offset is not None:
        nonzero |= np.any(data.x_offset != 0.0, axis=1)
        if data.x_constant is not None:  # the implicitly centred column is zero there
            nonzero &= ~np.all(data.x_constant, axis=1)
    return np.flatnonzero(nonzero).astype(np.int64)


def _restricted(datafit: Datafit, rows: np.ndarray) -> Datafit:
    """The loss on the columns ``rows`` of its design (a new object; the columns as the working
    sets take them), its data cached on the whole data so that its Gram matrices and their
    eigendecompositions are computed once per path."""
    data = datafit.data
    sub = data.cached(("seen_columns", rows.tobytes()), lambda: DesignColumns(data).restrict(rows))
    return datafit.on_columns(sub, gram=True)


def _pad(V: np.ndarray, rows: np.ndarray, d: int) -> np.ndarray:
    """``V`` (its feature axis the second to last: ``W`` or the parts ``(k, d, m)``) with zero
    rows at the positions other than ``rows``."""
    shape = list(V.shape)
    shape[-2] = d
    out = np.zeros(shape, dtype=np.result_type(V, np.float64))
    out[..., rows, :] = V
    return out


def on_seen_rows(solve: Callable[..., SolverResult], rows: np.ndarray, datafit: Datafit,
                 penalty: Penalty, *, coef_init=None, intercept_init=None,
                 callback: Callable | None = None, **options) -> SolverResult:
    """``solve(datafit_S, penalty, ...)`` on the rows ``rows`` (:func:`seen_rows`), its result
    padded with zero rows.

    ``coef_init`` and the starting points of ``options["stage_starts"]`` (``{key: (W, b)}``)
    are restricted to the rows; the result's ``coef``, ``W``, and its ``info``'s
    ``stage_points`` and ``stage_coefs`` are padded, its intercepts read from ``datafit`` (the
    restricted loss does not centre); ``callback(k, F, W, b)`` receives padded weights.
    """
    d = datafit.data.n_features
    sub = _restricted(datafit, rows)
    if coef_init is not None:  # validated against all the rows, then restricted
        coef_init = initial_point(datafit, penalty, coef_init, None,
                                  project=False)[0][..., rows, :]
    starts = options.get("stage_starts")
    if starts:  # the points of all the rows (another shape: not a start here)
        options["stage_starts"] = {key: (np.asarray(W)[..., rows, :], b)
                                   for key, (W, b) in starts.items()
                                   if np.ndim(W) >= 2 and np.shape(W)[-2] == d}
    if callback is not None:
        given = callback

        def callback(k, F, W, b):  # noqa: F811 - the padded view of the caller's
            return given(k, F, _pad(W, rows, d), b)

    # the solver's warnings point at its caller: two frames (this one and the first solve)
    # above where they would
    token = EXTRA_FRAMES.set(EXTRA_FRAMES.get() + 2)
    try:
        res = solve(sub, penalty, coef_init=coef_init, intercept_init=intercept_init,
                    callback=callback, **options)
    finally:
        EXTRA_FRAMES.reset(token)
    info = dict(res.info)
    if "stage_points" in info:
        info["stage_points"] = {key: (_pad(W, rows, d), b)
                                for key, (W, b) in info["stage_points"].items()}
    if "stage_coefs" in info:
        info["stage_coefs"] = [_pad(W, rows, d) for W in info["stage_coefs"]]
    info["seen_rows"] = rows
    W = _pad(res.W, rows, d)
    return dataclasses.replace(res, coef=_pad(res.coef, rows, d), W=W,
                               intercept=datafit.intercept(W, res.intercept_variable),
                               info=info)
