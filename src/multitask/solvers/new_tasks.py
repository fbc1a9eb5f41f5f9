"""The per-task problems of new tasks after fit, and their solvers.

A fitted model hands a new task its *new-task prior* ``R`` (a
:class:`~multitask.penalties.new_task.ColumnPrior`,
:func:`~multitask.penalties.new_task.new_task_prior`), and each new task ``t`` is solved
alone (its ``n_t`` rows; the fitted tasks are not touched)::

    min_{w, b}  sum_{i in t} r_i ell(y_i, x_i^T w + b) + c_t [(alpha_l2 / 2) ||w||^2 + R(w)]

(``r_i = 1 / n_t``, the scaling of :mod:`multitask.losses`; ``b`` unpenalized, or fixed where
the prior fixes it), at a strength ``c_t`` chosen by the estimator
(:mod:`multitask.estimators.new_tasks`). What the solves take from the fitted model (its loss,
``fit_intercept``, ``alpha_l2``, ``max_iter``, ``tol`` and its datafit) is a
:class:`NewTaskSettings` record.

The squared loss with a :class:`~multitask.penalties.new_task.GaussianPrior` has a closed form
(:func:`closed_form`): in the prior's standard form ``w = m0 + T v``
(:meth:`~multitask.penalties.new_task.GaussianPrior.standard_form`) each task is a plain ridge
regression, which a compiled kernel solves for every task and every strength of a grid in one
pass (:class:`StandardRidge`: one ``k x k`` Cholesky factorization per task and strength, ``k``
the dimension of the prior's subspace or ``d``, or one ``n_t x n_t`` in the space of the task's
rows when it has fewer); its numpy twin :class:`GaussianSystem` runs while numba's start-up is
not worth paying (:mod:`multitask.compiled`); both systems live in
:mod:`multitask.solvers.new_tasks_closed_form` and are importable from here. A split prior
with one Gaussian part is screened first (:func:`_screened_sum`: the norm parts at zero where
that is optimal; the sparse part of sparse + low rank solved exactly otherwise); every other
problem goes to the library's accelerated proximal gradient (``"fista"``; the projected
subgradient method for the hinge loss) with the model's ``max_iter`` and ``tol``, all new
tasks in one call; the regression losses beyond least squares (Poisson, Gamma, Tweedie, Huber,
the pinball loss: the model's datafit with its parameter) go to the solver the library's
chooser takes for the loss and the prior (:func:`~multitask.solvers.choice.make_auto_solver`),
started at the best intercepts where the loss starts there. A
:class:`~multitask.penalties.new_task.PriorChoice` (the nearest cluster) is solved once per
option, and the option with the lowest objective is kept.

The priors are the one thing of the penalty layer these solves name: they are the form of the
new-task problem (a Gaussian prior promises the closed form, a sum of priors the screening),
not a penalty of fit.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

import numpy as np
import scipy.sparse as sp

from multitask.compiled import charge_interpreted, interpreted_budget
from multitask.data import MultiTaskData
from multitask.losses import Datafit
from multitask.penalties.base import Penalty
from multitask.penalties.new_task import (
    ColumnNormPrior,
    ColumnPrior,
    ElementwisePrior,
    GaussianPrior,
    PriorChoice,
    SumOfPriors,
)
from multitask.solvers.base import make_solver
from multitask.solvers.choice import make_auto_solver
from multitask.solvers.new_tasks_closed_form import (
    RESOLVED_STRENGTH,
    GaussianSystem,
    StandardRidge,
    null_tolerance,
    stacked_arrays,
    task_arrays,
)

__all__ = [
    "CLOSED_FORM_MAX_FEATURES",
    "GaussianSystem",
    "NewTaskFit",
    "NewTaskSettings",
    "StandardRidge",
    "closed_form",
    "closed_form_applies",
    "fixed_model",
    "loss_values",
    "solve_new_tasks",
    "stacked_arrays",
    "task_sizes",
]

#: Largest number of features for which an unconfined Gaussian prior is solved in closed
#: form (a ``d x d`` system); beyond, by the iterative solver.
CLOSED_FORM_MAX_FEATURES = 2000


@dataclass(frozen=True)
class NewTaskSettings:
    """What the new tasks' solves take from the fitted model.

    Attributes
    ----------
    loss : str
        The loss's name: ``"squared"``, ``"logistic"``, ``"squared_hinge"`` or ``"hinge"``
        (classification labels -1/+1), ``"poisson"``, ``"gamma"``, ``"tweedie"``,
        ``"huber"`` or ``"quantile"``.
    fit_intercept : bool
        Whether each new task has an (unpenalized) intercept.
    alpha_l2 : float
        The model's ridge term; a task at strength ``c`` gets ``c alpha_l2``.
    max_iter, tol : int, float
        The iterative solver's settings.
    datafit : callable
        ``datafit(data, alpha_l2)``: the model's datafit on the tasks of ``data`` with the
        ridge term ``alpha_l2`` (the problem the iterative solver takes).
    loss_params : dict
        The loss's own parameter (``power``, ``epsilon`` or ``quantile``), for
        :func:`loss_values`; empty for the others.
    """

    loss: str
    fit_intercept: bool
    alpha_l2: float
    max_iter: int
    tol: float
    datafit: Callable[[MultiTaskData, float], Datafit]
    loss_params: dict = field(default_factory=dict)


@dataclass
class NewTaskFit:
    """The new tasks' fitted values (``m_new`` new tasks).

    Attributes
    ----------
    W : ndarray of shape (n_features, m_new)
    intercept : ndarray of shape (m_new,)
    coef : ndarray
        The solver's variable, ``(n_features, m_new)`` or ``(k, n_features, m_new)``.
    intercept_variable : ndarray of shape (m_new,) or None
        The solver's intercept variable where the loss keeps one.
    scales : ndarray of shape (m_new,)
        ``c_t``, the multiple of the fitted strength used for each task.
    choice : list
        The option of a :class:`~multitask.penalties.new_task.PriorChoice` each task took
        (its label), or ``None``.
    grid_multiplier : float or None
        ``g`` chosen by ``strength="cv"``.
    rule : str
        How the strengths were chosen, in words (the estimator's record,
        ``new_task_strength_rule_``; empty when the caller does not say).
    """

    W: np.ndarray
    intercept: np.ndarray
    coef: np.ndarray
    intercept_variable: np.ndarray | None
    scales: np.ndarray
    choice: list
    grid_multiplier: float | None = None
    rule: str = ""


# ----------------------------------------------------------------------------- helpers
def task_sizes(data: MultiTaskData) -> np.ndarray:
    """The size of each task: its number of rows, or the sum of its sample weights."""
    if getattr(data, "sample_weight", None) is not None:
        return np.asarray(data.task_weight_sums, dtype=np.float64)
    return np.asarray(data.task_sizes, dtype=np.float64)


def _one_task(data: MultiTaskData, t: int, rows: np.ndarray | None = None) -> MultiTaskData:
    """Task ``t`` of ``data`` (optionally some of its rows) as a one-task data set."""
    X = data.task_X(t)
    y = data.task_y(t)
    sw = data.task_row_weights(t) if hasattr(data, "task_row_weights") else None
    if rows is not None:
        X, y = X[rows], y[rows]
        sw = None if sw is None else sw[rows]
    X = X.tocsr() if sp.issparse(X) else np.ascontiguousarray(X)
    kwargs: dict[str, Any] = {}
    if sw is not None:
        kwargs["sample_weight"] = np.asarray(sw, dtype=np.float64)
    return MultiTaskData(X, np.asarray(y, dtype=np.float64),
                         np.array([0, len(y)], dtype=np.int64), data.tasks[t : t + 1], False,
                         **kwargs)


#: The regression losses beyond least squares: their new-task problems are solved by the
#: solver the chooser takes (:func:`_iterative`) and their objective read from the datafit.
CHOSEN_SOLVER_LOSSES = ("poisson", "gamma", "tweedie", "huber", "quantile")


def loss_values(loss: str, y: np.ndarray, z: np.ndarray, *, power: float = 1.5,
                epsilon: float = 1.35, quantile: float = 0.5) -> np.ndarray:
    """``ell(y_i, z_i)`` per row for the loss ``loss`` at the scores ``z`` (labels -1/+1 for
    classification): the held-out losses of ``strength="cv"``.

    The log-link losses give half the unit deviance of the mean ``exp(z)``
    (:mod:`multitask.losses.glm`; ``"poisson"`` power 1, ``"gamma"`` 2, ``"tweedie"``
    ``power``), ``"quantile"`` the pinball loss ``max(q r, (q - 1) r)`` of ``r = y - z``. The
    Huber loss fits a scale per task, so its value is not a sum over rows: a held-out row
    counts its absolute error ``|y - z|`` (the default scorer of the Huber model;
    ``epsilon`` is not read).
    """
    if loss == "squared":
        return 0.5 * (z - y) ** 2
    if loss == "logistic":
        return np.logaddexp(0.0, -y * z)
    if loss == "squared_hinge":
        return np.maximum(0.0, 1.0 - y * z) ** 2
    if loss == "hinge":
        return np.maximum(0.0, 1.0 - y * z)
    if loss in ("poisson", "gamma", "tweedie"):
        return _half_deviance(np.asarray(y, dtype=np.float64), np.asarray(z, dtype=np.float64),
                              {"poisson": 1.0, "gamma": 2.0}.get(loss, float(power)))
    if loss == "quantile":
        r = np.asarray(y, dtype=np.float64) - np.asarray(z, dtype=np.float64)
        return np.maximum(quantile * r, (quantile - 1.0) * r)
    if loss == "huber":
        return np.abs(np.asarray(y, dtype=np.float64) - np.asarray(z, dtype=np.float64))
    raise ValueError(f"Unknown loss {loss!r}.")


def _half_deviance(y: np.ndarray, z: np.ndarray, p: float) -> np.ndarray:
    """Half the unit Tweedie deviance of power ``p`` in ``[1, 2]`` of the mean ``exp(z)``,
    row by row, from ``r = z - log y`` without cancellation (the forms of
    :mod:`multitask.losses.glm`): ``y (e^r - 1 - r)`` (``p = 1``), ``e^{-r} - 1 + r`` (``p =
    2``), ``y^(2-p) (expm1((2-p) r) / (2-p) - expm1((1-p) r) / (1-p))``; a target 0 gives
    ``exp((2-p) z) / (2-p)``; ``inf`` where ``exp`` overflows."""
    pos = y > 0
    r = z - np.log(np.where(pos, y, 1.0))
    with np.errstate(over="ignore", invalid="ignore"):
        if p == 1.0:
            return np.where(pos, y * (np.expm1(r) - r), np.exp(z))
        if p == 2.0:
            return np.expm1(-r) + r
        q = 1.0 - p
        g = np.expm1((1.0 + q) * r) / (1.0 + q) - np.expm1(q * r) / q
        return np.where(pos, np.where(pos, y, 1.0) ** (2.0 - p) * g,
                        np.exp((2.0 - p) * z) / (2.0 - p))


# ----------------------------------------------------------------------------- solves
def closed_form(data: MultiTaskData, prior: GaussianPrior, fit_intercept: bool,
                alpha_l2: float, scales: np.ndarray, grid: Sequence[float] | None = None
                ) -> tuple[np.ndarray, np.ndarray, float | None]:
    """``(W (d, m), b (m,), g)``: the squared loss with a Gaussian prior in closed form, for
    every task of ``data``, at strengths ``scales`` (one per task), or, with ``grid``, at
    ``g * scales`` for the multiplier ``g`` of ``grid`` with the lowest exact leave-one-out
    loss pooled over the tasks (the first one on ties; ``g`` is ``None`` without a grid).

    :class:`StandardRidge` (the compiled kernel) when the prior has a standard form; the
    numpy twin :class:`GaussianSystem` while numba's start-up is not worth paying
    (:mod:`multitask.compiled`: its time counts against that start-up), and for priors without
    a standard form (a singular ``Q``, solved by least squares) or when a factorization fails.
    """
    scales = np.asarray(scales, dtype=np.float64)
    C = scales[None] if grid is None else np.asarray(grid, dtype=np.float64)[:, None] * scales
    form = prior.standard_form(alpha_l2) if np.all(C > 0) else None
    if form is not None and interpreted_budget() == 0.0:
        system = StandardRidge(data, form, fit_intercept)
        out = system.solve_grid(C, loo=grid is not None)
        if out is not None:
            losses, solution = out
            i = int(np.argmin(losses)) if losses is not None else 0
            V, b = solution(i)
            W = system.weights(V)
            return W, b, None if grid is None else float(np.asarray(grid)[i])
    t0 = time.perf_counter()
    twin = GaussianSystem(data, prior, fit_intercept, alpha_l2)
    i = 0
    if grid is not None:
        losses = twin.loo_losses(C)
        i = int(np.argmin(np.where(np.isfinite(losses), losses, np.inf)))
    W, b = twin.solve(C[i])
    if form is not None:
        charge_interpreted(time.perf_counter() - t0)
    return W, b, None if grid is None else float(np.asarray(grid)[i])


def _gaussian_closed_form_all(data: MultiTaskData, prior: GaussianPrior, fit_intercept: bool,
                              scales: np.ndarray, alpha_l2: float
                              ) -> tuple[np.ndarray, np.ndarray]:
    """``(W (d, m), b (m,))`` of the squared loss with a Gaussian prior at strengths
    ``scales`` (:func:`closed_form`)."""
    W, b, _ = closed_form(data, prior, fit_intercept, alpha_l2, scales)
    return W, b


def _objective(settings: NewTaskSettings, data: MultiTaskData, prior: ColumnPrior, c: float,
               w: np.ndarray, b: float) -> float:
    """The new-task objective of the one-task ``data`` at ``(w, b)`` (strength ``c``); the
    loss of :data:`CHOSEN_SOLVER_LOSSES` is the model's datafit's value (the Huber loss's
    with its scale fitted)."""
    X, y, r = task_arrays(data, 0)
    if settings.loss in CHOSEN_SOLVER_LOSSES:
        loss = settings.datafit(data, 0.0).value_scores(X @ w + b)
    else:
        loss = float(r @ loss_values(settings.loss, y, X @ w + b))
    ridge = c * settings.alpha_l2
    return loss + 0.5 * ridge * float(w @ w) + prior.scaled(c).value(np.asarray(w)[:, None])


def closed_form_applies(prior: Penalty, loss: str, d: int) -> TypeGuard[GaussianPrior]:
    """Whether ``prior`` and the loss ``loss`` (on ``d`` features) have the closed form: the
    squared loss and a Gaussian prior (with a fitted intercept), confined to a subspace or on
    at most :data:`CLOSED_FORM_MAX_FEATURES` features."""
    return (isinstance(prior, GaussianPrior) and loss == "squared"
            and prior.fixed_intercept is None
            and (prior.confined or d <= CLOSED_FORM_MAX_FEATURES))


def fixed_model(prior: ColumnPrior) -> tuple[np.ndarray, float] | None:
    """``(w, b)`` when the prior fixes the whole model (the pooled model's population model),
    else ``None``."""
    if (isinstance(prior, GaussianPrior) and prior.fixed_intercept is not None
            and prior.confined and prior.basis.shape[1] == 0):
        return prior.mean, float(prior.fixed_intercept)
    return None


def solve_new_tasks(settings: NewTaskSettings, data: MultiTaskData, prior: ColumnPrior,
                    scales: np.ndarray, screen: bool = True,
                    coef_init: np.ndarray | None = None,
                    intercept_init: np.ndarray | None = None) -> NewTaskFit:
    """Solve the new-task problem of every task of ``data``, task ``t`` at strength
    ``scales[t]`` (``prior`` unscaled).

    The squared loss with a Gaussian prior: :func:`_gaussian_closed_form_all`. A choice of
    priors: each task and option alone, the best objective kept. Otherwise one call of the
    iterative solver on all the new tasks together (the prior is separable over them, with
    one strength per column), or one call per task when ``alpha_l2`` needs a strength per
    task; a split prior with one Gaussian part is first screened (:func:`_screened_sum`,
    unless ``screen`` is false).
    """
    scales = np.asarray(scales, dtype=np.float64)
    m, d = data.n_tasks, data.n_features
    none = [None] * m
    fixed = fixed_model(prior)
    if fixed is not None:
        W = np.repeat(fixed[0][:, None], m, axis=1)
        return NewTaskFit(W, np.full(m, fixed[1]), W.copy(), None, scales, none)
    fit_intercept, alpha_l2 = settings.fit_intercept, settings.alpha_l2
    if closed_form_applies(prior, settings.loss, d):
        W, b = _gaussian_closed_form_all(data, prior, fit_intercept, scales, alpha_l2)
        return NewTaskFit(W, b, W.copy(), None, scales, none)
    if screen and isinstance(prior, SumOfPriors) and m:
        screened = _screened_sum(settings, data, prior, scales)
        if screened is not None:
            return screened
    if isinstance(prior, PriorChoice) or (alpha_l2 and np.ptp(scales) > 0):
        parts = [_solve_task(settings, _one_task(data, t), prior, float(scales[t]))
                 for t in range(m)]
        return NewTaskFit(np.column_stack([f.W[:, 0] for f in parts]),
                          np.array([f.intercept[0] for f in parts]),
                          np.concatenate([f.coef for f in parts], axis=-1),
                          None if any(f.intercept_variable is None for f in parts)
                          else np.concatenate([f.intercept_variable for f in parts]),
                          scales, [f.choice[0] for f in parts])
    return _iterative(settings, data, prior, scales, coef_init, intercept_init)


def _iterative(settings: NewTaskSettings, data: MultiTaskData, prior: ColumnPrior,
               scales: np.ndarray, coef_init: np.ndarray | None = None,
               intercept_init: np.ndarray | None = None) -> NewTaskFit:
    """The library's iterative solver on all the tasks of ``data`` at once (``alpha_l2``
    times ``scales[0]``: callers give equal scales when ``alpha_l2`` is not zero), started
    from ``coef_init`` and ``intercept_init`` when given (the solver's variable)."""
    m = data.n_tasks
    datafit = settings.datafit(data, settings.alpha_l2 * (float(scales[0]) if m else 1.0))
    penalty = prior.scaled(scales)
    if settings.loss in CHOSEN_SOLVER_LOSSES:
        solver = make_auto_solver(datafit, penalty, max_iter=settings.max_iter,
                                  tol=settings.tol)
        if (coef_init is None and intercept_init is None and datafit.has_intercept_variable
                and datafit.starts_at_best_intercept):
            intercept_init = datafit.optimal_intercept_at_zero()
    else:
        name = "fista" if "gradient" in datafit.capabilities else "subgradient"
        solver = make_solver(name, max_iter=settings.max_iter, tol=settings.tol)
    result = solver.solve(datafit, penalty, coef_init=coef_init, intercept_init=intercept_init)
    b = np.asarray(result.intercept, dtype=np.float64).copy()
    if prior.fixed_intercept is not None:
        b[:] = prior.fixed_intercept
    ivar = (None if result.intercept_variable is None
            else np.asarray(result.intercept_variable, dtype=np.float64).copy())
    return NewTaskFit(np.array(result.W, copy=True), b, np.array(result.coef, copy=True), ivar,
                      scales, [None] * m)


def _zero_at_zero(part: ColumnPrior) -> str | None:
    """``"l1"`` or ``"l2"`` when ``part`` is a norm ``s a ||.||`` (an l1 norm with weights,
    or the column norm) whose zero is optimal iff the loss gradient ``g`` satisfies
    ``|g_j| <= s a_j`` or ``||g|| <= s alpha``; ``None`` otherwise."""
    if isinstance(part, ColumnNormPrior):
        return "l2"
    if (isinstance(part, ElementwisePrior) and not np.any(part.mean) and not np.any(part.quad)
            and not np.any(part.free) and np.all(np.isfinite(part.l1))):
        return "l1"
    return None


def _screened_sum(settings: NewTaskSettings, data: MultiTaskData, prior: SumOfPriors,
                  scales: np.ndarray) -> NewTaskFit | None:
    """A split prior with one Gaussian part and norm parts (robust MTL, rMTFL, sparse + low
    rank) under the squared loss: the Gaussian part alone in closed form, the norm parts at
    zero, kept for every task where zero satisfies the norm parts' optimality condition
    (exact: the condition is the KKT condition of the whole problem at that point); the other
    tasks go to the iterative solver. ``None`` when the prior is not of that shape."""
    fit_intercept, alpha_l2 = settings.fit_intercept, settings.alpha_l2
    parts = list(prior.parts)
    kinds = [_zero_at_zero(p) for p in parts]  # type: ignore[arg-type]
    gauss = [i for i, k in enumerate(kinds) if k is None]
    if len(gauss) != 1 or not closed_form_applies(parts[gauss[0]], settings.loss,
                                                  data.n_features):
        return None
    if any(p.fixed_intercept is not None for p in parts):  # type: ignore[attr-defined]
        return None
    g_part = parts[gauss[0]]
    W, b = _gaussian_closed_form_all(data, g_part, fit_intercept, scales,  # type: ignore[arg-type]
                                     alpha_l2)
    # the loss gradient at (W, b) per task: sum_i r_i (x_i^T w + b - y_i) x_i + c alpha_l2 w
    X, y, r, starts = stacked_arrays(data)
    rows = np.repeat(np.arange(data.n_tasks), np.diff(np.append(starts, len(r))))
    resid = r * (np.einsum("nd,dn->n", X, W[:, rows]) + b[rows] - y)
    G = np.add.reduceat(X * resid[:, None], starts, axis=0).T + alpha_l2 * scales * W
    ok = np.ones(data.n_tasks, dtype=bool)
    slack = 1.0 + 1e-9
    for i, (part, kind) in enumerate(zip(parts, kinds, strict=True)):
        if i == gauss[0]:
            continue
        if kind == "l2":
            ok &= np.linalg.norm(G, axis=0) <= slack * scales * part.alpha  # type: ignore
        else:
            ok &= np.all(np.abs(G) <= slack * scales[None, :] * part.l1[:, None], axis=0)  # type: ignore
    coef = np.zeros((len(parts), *W.shape))
    coef[gauss[0]] = W
    fit = NewTaskFit(W, b, coef, None, scales, [None] * data.n_tasks)
    rest = np.flatnonzero(~ok)
    l1_parts = [i for i, k in enumerate(kinds) if k == "l1"]
    if rest.size and alpha_l2 == 0 and len(parts) == 2 and len(l1_parts) == 1:
        from sklearn import config_context

        solved = []
        # the inputs of lars_path_gram are valid by construction: its checks are skipped
        with config_context(skip_parameter_validation=True):
            for t in rest:  # sparse + low rank: the exact lasso of the sparse part
                point = _split_lasso(data, t, g_part, parts[l1_parts[0]],  # type: ignore[arg-type]
                                     float(scales[t]), fit_intercept)
                if point is None:
                    continue
                (fit.coef[l1_parts[0], :, t], fit.coef[gauss[0], :, t],
                 fit.intercept[t]) = point
                fit.W[:, t] = point[0] + point[1]
                solved.append(t)
        rest = np.setdiff1d(rest, solved)
    if rest.size:  # the iterative solver on the other tasks whose norm parts are not zero,
        # started from the screened point (their norm parts at zero, the Gaussian part optimal)
        sub = solve_new_tasks(settings, data.subset_tasks(rest), prior, scales[rest],
                              screen=False,
                              coef_init=fit.coef[..., rest], intercept_init=fit.intercept[rest])
        fit.W[:, rest], fit.intercept[rest] = sub.W, sub.intercept
        fit.coef[..., rest] = sub.coef
    return fit


#: Relative slack of the exact test of :func:`_split_lasso` (the optimality conditions of the
#: new-task problem, relative to the l1 strengths).
_KKT_RTOL = 1e-8


def _split_lasso(data: MultiTaskData, t: int, gauss: GaussianPrior, l1: ElementwisePrior,
                 c: float, fit_intercept: bool
                 ) -> tuple[np.ndarray, np.ndarray, float] | None:
    """Task ``t`` of a split prior ``w = p + q``, Gaussian ``q`` and weighted-l1 ``p``, exactly.

    The problem ``min sum_i r_i (y_i - x_i^T (p + q) - b)^2 / 2 + c [R_G(q) + sum_j a_j
    |p_j|]`` (no ``alpha_l2``) is minimized over ``q`` and ``b`` in closed form for a fixed
    ``p``: with the standard form ``q = m0 + T v`` of ``R_G``, the centred rows and targets
    scaled by ``sqrt(r_i)`` (``E``, ``e``, ``tc`` shifted by ``m0``) and ``S = E T``, the
    partial minimum over ``v`` is ``1/2 (e - E p)^T N (e - E p)`` with
    ``N = I - S (S^T S + c I)^{-1} S^T = c (S S^T + c I)^{-1}``. What is left is a lasso with
    the Gram matrix ``M = E^T N E`` and ``h = E^T N e``::

        min_p  1/2 p^T M p - h^T p + c sum_j a_j |p_j|,

    solved exactly by scikit-learn's LARS-lasso homotopy (``lars_path_gram``, features
    rescaled to one strength), then ``v = (S^T S + c I)^{-1} S^T (e - E p)`` and
    ``b = ybar - xbar^T (p + q)``. The result is kept only if it passes the exact test: the
    optimality conditions of the whole problem, ``|g_j| <= c a_j`` where ``p_j = 0`` and
    ``g_j = -c a_j sign(p_j)`` elsewhere (``g`` the loss gradient in ``w``; ``q`` and ``b``
    are optimal by construction), to :data:`_KKT_RTOL` relative.

    Returns
    -------
    (p, q, b) or None
        ``None`` when the weights are not all positive and finite, when ``R_G`` has no
        standard form, or when the result fails the exact test (the caller then iterates).
    """
    from sklearn.linear_model import lars_path_gram

    a = c * np.asarray(l1.l1, dtype=np.float64)
    form = gauss.standard_form(0.0)
    if form is None or not (np.all(np.isfinite(a)) and np.all(a > 0)):
        return None
    m0, T = form
    X, y, r = task_arrays(data, t)
    if fit_intercept:
        xbar, ybar = r @ X, float(r @ y)
    else:
        xbar, ybar = np.zeros(X.shape[1]), 0.0
    sr = np.sqrt(r)
    E = sr[:, None] * (X - xbar)
    e = sr * (y - ybar) - E @ m0
    S = E * T if isinstance(T, float) else E @ T
    K = S @ S.T
    eigen: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # (lam, U, null)
    if c > RESOLVED_STRENGTH * np.trace(K):
        try:
            N = c * np.linalg.inv(K + c * np.eye(len(r)))
        except np.linalg.LinAlgError:
            eigen = _eigen_with_null(K)
    else:
        eigen = _eigen_with_null(K)
    if eigen is not None:  # c below rounding: N = U diag(c / (lam + c)) U^T, 1 on the null space
        lam, U, null = eigen
        with np.errstate(divide="ignore", invalid="ignore"):
            N = (U * np.where(null, 1.0, c / (lam + c))) @ U.T
    NE = N @ E
    M, h = E.T @ NE, NE.T @ e
    scale = a.min() / a  # p = scale * u: one strength a.min() for u
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LARS's notes on degenerate paths: the test decides
        u = lars_path_gram(h * scale, M * np.outer(scale, scale), n_samples=1,
                           alpha_min=float(a.min()), method="lasso", return_path=False)[2]
    p = scale * np.asarray(u, dtype=np.float64).ravel()
    resid = e - E @ p
    if eigen is None:
        v = np.linalg.solve(S.T @ S + c * np.eye(S.shape[1]), S.T @ resid)
    else:  # v = S^T (S S^T + c I)^{-1} resid, without the null space of S S^T
        with np.errstate(divide="ignore", invalid="ignore"):
            v = S.T @ (U @ (np.where(null, 0.0, 1.0 / (lam + c)) * (U.T @ resid)))
    q = m0 + (T * v if isinstance(T, float) else T @ v)
    g = -E.T @ (resid - S @ v)  # the loss gradient (centred: b optimal)
    nz = p != 0
    ok = (np.all(np.abs(g[~nz]) <= (1.0 + _KKT_RTOL) * a[~nz])
          and np.all(np.abs(g[nz] + a[nz] * np.sign(p[nz])) <= _KKT_RTOL * a[nz]))
    if not ok or not np.all(np.isfinite(q)):
        return None
    return p, q, ybar - float(xbar @ (p + q))


def _eigen_with_null(K: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(lam, U, null)``: the eigen-decomposition of the symmetric positive semi-definite
    ``K`` and which eigenvalues count as zero (:func:`null_tolerance`)."""
    lam, U = np.linalg.eigh(K)
    return lam, U, lam <= null_tolerance(lam)


def _solve_task(settings: NewTaskSettings, data: MultiTaskData, prior: ColumnPrior,
                c: float) -> NewTaskFit:
    """One task at strength ``c``; over the options of a :class:`PriorChoice`, the option
    with the lowest objective (ties: the first), its label in ``choice``."""
    if not isinstance(prior, PriorChoice):
        return solve_new_tasks(settings, data, prior, np.array([c]))
    best, best_value = None, np.inf
    for option, name in zip(prior.options, prior.labels, strict=True):
        fit = solve_new_tasks(settings, data, option, np.array([c]))
        value = _objective(settings, data, option, c, fit.W[:, 0], float(fit.intercept[0]))
        if best is None or value < best_value:
            best, best_value = fit, value
            best.choice = [name]
    assert best is not None
    return best


