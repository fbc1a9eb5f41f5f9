"""Learning new tasks after fit: the small per-task problems and their strength.

``MultiTaskEstimator.fit_new_tasks`` (:mod:`multitask.estimators.base`) asks the fitted
penalty for its new-task prior ``R`` (:func:`multitask.penalties.new_task.new_task_prior`)
and solves, for each new task ``t``
alone (its ``n_t`` rows; the fitted tasks are not touched)::

    min_{w, b}  sum_{i in t} r_i ell(y_i, x_i^T w + b) + c_t [(alpha_l2 / 2) ||w||^2 + R(w)]

(``r_i = 1 / n_t``, the scaling of :mod:`multitask.losses`; ``b`` unpenalized, or fixed where
the prior fixes it). The strength ``c_t`` (:func:`strength_scales`):

* ``"scaled"``: ``c_t = nbar / n_t``, ``nbar`` the mean number of rows of the fitted tasks.
  In the library's scaling a task's loss is a mean over its rows, so in ``fit`` the prior
  weighs ``alpha n_t`` against the *sum* of a task's losses; with ``c_t = nbar / n_t`` it
  weighs ``alpha nbar`` against the new task's sum, as against a typical fitted task's (a
  prior whose weight does not grow with the task's size, like a Bayesian prior against a
  likelihood): a task with 2 rows is shrunk much more than by the fitted ``alpha``.
* ``"fitted"``: ``c_t = 1``: exactly the fitted objective's conditional on the new column
  (what a refit including the task would do to it, were the other tasks to stay fixed).
* ``"cv"``: ``c_t = g nbar / n_t`` with ``g`` in :data:`CV_GRID` chosen by cross-validation
  on the new rows, pooled over the new tasks (every new task needs :data:`CV_MIN_ROWS` rows):
  exact leave-one-out for the closed-form problems, for the whole grid in one batched solve
  (:meth:`~multitask.solvers.new_tasks.GaussianSystem.loo_losses`); :data:`CV_FOLDS` folds
  within each task otherwise (rows dealt round-robin in their order).
* ``"auto"`` (the default): ``"cv"`` where it is cheap and the rows allow it
  (:func:`cv_applies`: a closed-form problem, every new task with :data:`CV_MIN_ROWS` rows,
  :data:`CV_MIN_TOTAL` rows in all). With the squared loss and rows too few for that,
  ``"scaled"`` or the population model (every new task given the mean of the fitted tasks'
  models), whichever has the lower expected error (:func:`compare_with_population`: a
  simulation on tasks like the fitted ones, calibrated by leave-one-out on the new rows);
  ``"scaled"`` otherwise.
* a number ``c``: ``c_t = c`` (a multiple of the fitted strength).

Constraint sets (balls) have no strength: ``c_t`` does not change them.

Each call records, for every task it adds, ``c_t`` in ``new_task_strength_`` (NaN for the
population model) and how it was chosen in ``new_task_strength_rule_`` (:func:`strength_record`;
a fit drops both).

The module is the estimator's side of new tasks: the strength, the new rows
(:mod:`multitask.data.new_rows`), the appended attributes and the population model. The
per-task problems are solved by :mod:`multitask.solvers.new_tasks` (a closed form for the
squared loss with a Gaussian prior, screening of split priors, the library's iterative solvers
otherwise; its names :class:`~multitask.solvers.new_tasks.StandardRidge`,
:class:`~multitask.solvers.new_tasks.GaussianSystem`,
:func:`~multitask.solvers.new_tasks.closed_form` and :class:`NewTaskFit` are importable from
here too), with what the model hands them (:func:`solve_settings`).

The structure (the validated hyper-parameters, the prior, ``nbar``) is computed at the first
call after a fit and kept for the next calls
(:func:`~multitask.estimators.fitted_structure.fitted_structure`).
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np

from multitask.data import (
    MultiTaskData,
    as_multitask_data,
    as_task_ids,
    is_task_list,
    split_task_column,
    unstack_predictions,
)
from multitask.data.new_rows import (
    FittedInputs,
    append_task_ids,
    as_new_task_data,
    new_task_ids,
)
from multitask.data.task_ids import _id_family

# "name as name": the names of this module from before the per-task solves, the rows and the
# cached structure had modules of their own (multitask.solvers.new_tasks,
# multitask.data.new_rows, multitask.estimators.fitted_structure), importable from here still
from multitask.estimators.fitted_structure import FittedStructure as FittedStructure
from multitask.estimators.fitted_structure import (
    clear_fitted_structure as clear_fitted_structure,
)
from multitask.estimators.fitted_structure import fitted_mean_size as fitted_mean_size
from multitask.estimators.fitted_structure import fitted_structure as fitted_structure
from multitask.estimators.fitted_structure import n_fit_tasks as n_fit_tasks
from multitask.losses import Datafit, get_datafit
from multitask.penalties.new_task import ColumnPrior
from multitask.solvers.new_tasks import CLOSED_FORM_MAX_FEATURES as CLOSED_FORM_MAX_FEATURES
from multitask.solvers.new_tasks import GaussianSystem as GaussianSystem
from multitask.solvers.new_tasks import NewTaskFit as NewTaskFit
from multitask.solvers.new_tasks import (
    NewTaskSettings,
    closed_form_applies,
    fixed_model,
    stacked_arrays,
)
from multitask.solvers.new_tasks import StandardRidge as StandardRidge
from multitask.solvers.new_tasks import closed_form as closed_form
from multitask.solvers.new_tasks import loss_values as loss_values
from multitask.solvers.new_tasks import solve_new_tasks as solve_with_settings
from multitask.solvers.new_tasks import task_sizes as task_sizes

__all__ = [
    "CV_FOLDS",
    "CV_GRID",
    "CV_MIN_ROWS",
    "STRENGTHS",
    "FittedStructure",
    "NewTaskFit",
    "StandardRidge",
    "clear_fitted_structure",
    "closed_form",
    "fit_new_task_columns",
    "fitted_structure",
    "loss_values",
    "strength_scales",
]

#: The named strength rules of ``fit_new_tasks`` (a positive number is also accepted).
STRENGTHS = ("auto", "scaled", "fitted", "cv")
#: Multipliers of the ``"scaled"`` strength tried by ``strength="cv"``, strongest first.
CV_GRID: tuple[float, ...] = tuple(float(g) for g in np.logspace(2, -2, 9))
#: Largest number of folds of ``strength="cv"`` within each new task.
CV_FOLDS = 5
#: New rows in all from which ``strength="auto"`` cross-validates (with every task at
#: ``CV_MIN_ROWS`` rows or more and a closed-form new-task problem).
CV_MIN_TOTAL = 30
#: Rows each new task needs for ``strength="cv"`` (a fold's training part then keeps at
#: least two rows, which an intercept and a slope need).
CV_MIN_ROWS = 3


# ----------------------------------------------------------------------------- the solves
def solve_settings(est) -> NewTaskSettings:
    """What the per-task solves take from the fitted model ``est``: its loss (and the loss's
    own parameter, ``power``, ``epsilon`` or ``quantile``), ``fit_intercept``, ``alpha_l2``,
    ``max_iter``, ``tol`` and its datafit on given tasks."""
    loss = est._loss_name()
    fit_intercept = bool(getattr(est, "fit_intercept", True))

    def datafit(data: MultiTaskData, alpha_l2: float) -> Datafit:
        options = dict(est._datafit_options())
        options["alpha_l2"] = alpha_l2
        return get_datafit(est._loss_name(), data, fit_intercept, **options)

    own = {"tweedie": "power", "huber": "epsilon", "quantile": "quantile"}.get(loss)
    params = {} if own is None else {own: float(getattr(est, own))}
    return NewTaskSettings(loss, fit_intercept, float(getattr(est, "alpha_l2", 0.0)),
                           int(getattr(est, "max_iter", 5000)),
                           float(getattr(est, "tol", 1e-4)), datafit, params)


def solve_new_tasks(est, data: MultiTaskData, prior: ColumnPrior, scales: np.ndarray,
                    screen: bool = True, coef_init: np.ndarray | None = None,
                    intercept_init: np.ndarray | None = None) -> NewTaskFit:
    """Solve the new-task problem of every task of ``data`` for the model ``est``, task ``t``
    at strength ``scales[t]`` (:func:`multitask.solvers.new_tasks.solve_new_tasks`)."""
    return solve_with_settings(solve_settings(est), data, prior, scales, screen, coef_init,
                               intercept_init)


# ----------------------------------------------------------------------------- strength
def _check_strength(strength) -> str | float:
    if isinstance(strength, str):
        if strength not in STRENGTHS:
            raise ValueError(f"strength must be one of {list(STRENGTHS)} or a positive number, "
                             f"got {strength!r}.")
        return strength
    try:
        c = float(strength)
    except (TypeError, ValueError):
        raise ValueError(f"strength must be one of {list(STRENGTHS)} or a positive number, "
                         f"got {strength!r}.") from None
    if isinstance(strength, bool) or not (np.isfinite(c) and c > 0):
        raise ValueError(f"strength must be one of {list(STRENGTHS)} or a finite number > 0, "
                         f"got {strength!r}.")
    return c


def strength_scales(strength, sizes: np.ndarray, fitted_mean_size: float) -> np.ndarray:
    """``c_t`` for new tasks of sizes ``sizes`` (module docstring; ``"cv"`` gives the
    ``"scaled"`` values, which the chosen multiplier then multiplies)."""
    rule = _check_strength(strength)
    sizes = np.asarray(sizes, dtype=np.float64)
    if rule == "fitted":
        return np.ones_like(sizes)
    if rule == "auto":
        raise ValueError("strength='auto' is resolved by fit_new_task_columns.")
    if isinstance(rule, float):
        return np.full_like(sizes, rule)
    return float(fitted_mean_size) / sizes


def _folds(n: int) -> list[np.ndarray]:
    k = min(CV_FOLDS, n)
    return [np.arange(f, n, k) for f in range(k)]


def _check_cv_rows(data: MultiTaskData) -> None:
    small = np.flatnonzero(data.task_sizes < CV_MIN_ROWS)
    if small.size:
        t = small[0]
        raise ValueError(
            f"strength='cv' needs at least {CV_MIN_ROWS} rows in every new task; task "
            f"{np.asarray(data.tasks).tolist()[t]!r} has {int(data.task_sizes[t])}: use "
            "strength='scaled'.")


def _cv_multiplier(est, data: MultiTaskData, prior: ColumnPrior, nbar: float) -> float:
    """``g`` of :data:`CV_GRID` with the lowest held-out loss pooled over the new tasks.

    The closed-form problems use exact leave-one-out
    (:meth:`~multitask.solvers.new_tasks.GaussianSystem.loo_losses`);
    the others ``K``-fold cross-validation, fold ``f`` holding out rows ``f, f + K, ...`` of
    every task (``K = min(CV_FOLDS, n_t)``; a classifier's task whose training part lacks a
    class sits that fold out).
    """
    _check_cv_rows(data)
    nbar_scales = nbar / task_sizes(data)
    if closed_form_applies(prior, est._loss_name(), data.n_features):  # exact leave-one-out
        g = closed_form(data, prior,
                        bool(getattr(est, "fit_intercept", True)),
                        float(getattr(est, "alpha_l2", 0.0)), nbar_scales, CV_GRID)[2]
        assert g is not None
        return g
    m = data.n_tasks
    X, y, _, starts = stacked_arrays(data)
    sizes = np.diff(np.append(starts, len(y)))
    sw = getattr(data, "sample_weight", None)
    sw = None if sw is None else np.asarray(sw, dtype=np.float64)  # per stacked row
    task_of = np.repeat(np.arange(m), sizes)
    K = np.minimum(CV_FOLDS, sizes)
    fold = (np.arange(len(y)) - starts[task_of]) % K[task_of]
    losses = np.zeros(len(CV_GRID))
    loss = est._loss_name()
    settings = solve_settings(est)
    counted = 0
    for f in range(int(K.max())):
        valid = K > f
        train = valid[task_of] & (fold != f)
        if est._is_classifier:
            pos = np.bincount(task_of[train & (y > 0)], minlength=m)
            neg = np.bincount(task_of[train & (y <= 0)], minlength=m)
            valid &= (pos > 0) & (neg > 0)  # a training part with one class cannot fit
            train &= valid[task_of]
        held = valid[task_of] & (fold == f)
        tasks = np.flatnonzero(valid)
        if not tasks.size:
            continue
        offsets = np.concatenate([[0], np.cumsum(np.bincount(task_of[train], minlength=m)[
            tasks])]).astype(np.int64)
        kwargs: dict[str, Any] = {} if sw is None else {"sample_weight": sw[train]}
        part = MultiTaskData(X[train], y[train], offsets, np.asarray(data.tasks)[tasks], False,
                             **kwargs)
        where = np.full(m, -1)
        where[tasks] = np.arange(tasks.size)
        rows = where[task_of[held]]
        Xte, yte = X[held], y[held]
        base = nbar / task_sizes(part)
        sols = [(fit.W, fit.intercept) for fit in
                (solve_with_settings(settings, part, prior, g * base) for g in CV_GRID)]
        weight = None if sw is None else sw[held]
        for g_i, (W, b) in enumerate(sols):
            z = np.einsum("nd,dn->n", Xte, W[:, rows]) + b[rows]
            values = loss_values(loss, yte, z, **settings.loss_params)
            losses[g_i] += float(np.sum(values) if weight is None else weight @ values)
        counted += tasks.size
    if counted == 0:
        raise ValueError("strength='cv' found no fold whose training rows hold both classes: "
                         "use strength='scaled'.")
    return float(CV_GRID[int(np.argmin(losses))])


def cv_applies(est, data: MultiTaskData, prior: ColumnPrior) -> bool:
    """Whether ``strength="auto"`` cross-validates: the new-task problem has a closed form
    (the squared loss with a Gaussian prior: the whole strength grid costs one
    eigen-decomposition per fold), every new task has at least :data:`CV_MIN_ROWS` rows and
    there are at least :data:`CV_MIN_TOTAL` in all."""
    return (closed_form_applies(prior, est._loss_name(), data.n_features)
            and int(np.min(data.task_sizes)) >= CV_MIN_ROWS
            and int(data.n_rows) >= CV_MIN_TOTAL)


def fit_new_task_columns(est, data: MultiTaskData, prior: ColumnPrior, strength,
                         fitted_mean_size: float) -> NewTaskFit:
    """Solve the new-task problem of every task of ``data`` (module docstring).

    Parameters
    ----------
    est : MultiTaskEstimator
        The fitted model (its loss, ``fit_intercept``, ``alpha_l2``, ``max_iter``, ``tol``).
    data : MultiTaskData
        The new tasks' rows (classification labels -1/+1).
    prior : ColumnPrior
        The fitted structure's new-task prior.
    strength : {"auto", "scaled", "fitted", "cv"} or float
    fitted_mean_size : float
        ``nbar``, the mean size of the fitted tasks.

    Returns
    -------
    NewTaskFit
        With ``rule``, how the strengths were chosen (:func:`strength_record`); ``scales`` is
        NaN for tasks given the population model (``strength="auto"`` only).

    Raises
    ------
    ValueError
        When the new-task problem has no finite solution at this strength (a strength beyond
        floating point for these rows), naming ``strength``.
    """
    rule = _check_strength(strength)
    note = ""
    if rule == "auto":
        rule, note, population = _auto_rule(est, data, prior, float(fitted_mean_size))
        if population:
            fit = _population_fit(est, data.n_tasks)
            fit.rule = f"auto -> population model: {note}"
            return fit
    try:
        fit = _solve_at(est, data, prior, rule, fitted_mean_size)
    except np.linalg.LinAlgError as exc:
        raise ValueError(f"strength={strength!r}: the new tasks' problem could not be solved "
                         f"at this strength ({exc}); give a strength nearer 1.") from None
    if not (np.all(np.isfinite(fit.W)) and np.all(np.isfinite(fit.intercept))):
        raise ValueError(
            f"strength={strength!r}: the new tasks' weights are not finite at this strength "
            f"(c_t from {np.min(fit.scales):.3g} to {np.max(fit.scales):.3g} times the fitted "
            "one): the problem is beyond floating point for these rows; give a strength nearer "
            "1 or rescale the features.")
    fit.rule = strength_record(strength, rule, fit.grid_multiplier, note)
    return fit


def strength_record(asked, used, multiplier: float | None, note: str = "") -> str:
    """How the strength of a new task was chosen, in words (``new_task_strength_rule_``):
    ``"scaled"``, ``"fitted"``, ``"number"`` (a strength given as a number), ``"cv: multiplier
    g"``; with ``"auto -> "`` before the rule that ``strength="auto"`` chose, and after a
    colon why (the population model's entry is made by :func:`fit_new_task_columns`)."""
    text = "number" if isinstance(used, float) else str(used)
    if used == "cv" and multiplier is not None:
        text += f": multiplier {multiplier:.3g} of 'scaled' by cross-validation on the new rows"
    if isinstance(asked, str) and asked == "auto":
        text = f"auto -> {text}" + (f": {note}" if note and used != "cv" else "")
    return text


def _solve_at(est, data: MultiTaskData, prior: ColumnPrior, rule, fitted_mean_size: float
              ) -> NewTaskFit:
    """The new tasks at the strength rule ``rule`` (``"scaled"``, ``"fitted"``, ``"cv"`` or a
    number)."""
    sizes = task_sizes(data)
    scales = strength_scales("scaled" if rule == "cv" else rule, sizes, fitted_mean_size)
    g = None
    if closed_form_applies(prior, est._loss_name(), data.n_features):  # one pass for both steps
        if rule == "cv":
            _check_cv_rows(data)
        W, b, g = closed_form(data, prior,
                              bool(getattr(est, "fit_intercept", True)),
                              float(getattr(est, "alpha_l2", 0.0)), scales,
                              CV_GRID if rule == "cv" else None)
        if g is not None:
            scales = g * scales
        return NewTaskFit(W, b, W, None, scales, [None] * data.n_tasks, g)
    if rule == "cv":
        g = _cv_multiplier(est, data, prior, float(fitted_mean_size))
        scales = g * scales
    fit = solve_with_settings(solve_settings(est), data, prior, scales)
    fit.grid_multiplier = g
    return fit


def _auto_rule(est, data: MultiTaskData, prior: ColumnPrior, nbar: float
               ) -> tuple[str, str, bool]:
    """``(rule, why, population)``: what ``strength="auto"`` does with these new tasks.

    ``"cv"`` where :func:`cv_applies`. Otherwise, with the squared loss and rows too few for
    cross-validation (a task under :data:`CV_MIN_ROWS` rows, or under :data:`CV_MIN_TOTAL`
    in all), ``"scaled"`` is compared with the population model (the mean of the fitted
    tasks' models, which learns nothing from the new rows) on tasks like the fitted ones,
    calibrated by leave-one-out on the new rows (:func:`compare_with_population`): the
    population model (``population`` true) when its expected error is lower. ``"scaled"``
    otherwise; ``why`` says how it was chosen, or that it was not compared (classifiers, and
    problems without a closed form whose rows allow cross-validation).
    """
    if cv_applies(est, data, prior):
        return "cv", "", False
    closed = closed_form_applies(prior, est._loss_name(), data.n_features)
    few = (int(np.min(data.task_sizes)) < CV_MIN_ROWS or int(data.n_rows) < CV_MIN_TOTAL)
    if est._loss_name() != "squared":
        return "scaled", ("not compared with the population model (the comparison is made "
                          "for the squared loss)"), False
    if not few:
        return "scaled", ("the new tasks' problem has no closed form: not cross-validated "
                          "(strength='cv' does)" if not closed else ""), False
    if fixed_model(prior) is not None:
        return "scaled", "the prior fixes every new task to the population model", False
    errors = compare_with_population(est, data, prior, nbar)
    if errors is None:
        return "scaled", ("not compared with the population model (its error on the new rows "
                          "is beyond floating point)"), False
    scaled, population = errors
    how = (f"expected squared error of a new row {population:.4g} for the population model, "
           f"{scaled:.4g} for 'scaled' (simulated on tasks like the fitted ones, calibrated by "
           "leave-one-out on the new rows)")
    return "scaled", how, bool(population < scaled)


#: Pseudo-tasks of the comparison with the population model: at most this many in all, ...
COMPARE_TASKS = 256
#: ... at most this many rows in all (at least one pseudo-task per new task), ...
COMPARE_ROWS = 2048
#: ... and rows of the new tasks on which the errors are measured.
COMPARE_EVAL_ROWS = 256


def compare_with_population(est, data: MultiTaskData, prior: ColumnPrior, nbar: float
                            ) -> tuple[float, float] | None:
    """``(scaled, population)``: the expected squared error of a new row of a new task under
    the ``"scaled"`` strength and under the population model (``None`` when not finite).

    The fitted tasks stand for the tasks a new one may be (an empirical-Bayes simulation:
    the strength that the fitted tasks themselves support), calibrated by leave-one-out on
    the new rows. With the population model ``(w, b)`` (:func:`population_model`), the
    fitted tasks' models ``(w_s, b_s)`` and the new rows ``x_i`` (weights ``r_i`` summing to
    1):

    * ``population = P = sum_i r_i (y_i - x_i^T w - b)^2``: the population model learns
      nothing from the new rows, so its error on them is an honest estimate;
    * the noise variance ``sigma^2 = max(P - V, 0)``, ``V = mean_s sum_i r_i (x_i^T (w_s - w)
      + b_s - b)^2`` the part of ``P`` that the spread of the fitted tasks explains;
    * each new task ``t`` is paired with ``S`` fitted tasks ``s`` drawn without replacement
      (:data:`COMPARE_TASKS` pseudo-tasks and :data:`COMPARE_ROWS` rows at most): the
      pseudo-task has the rows (and weights) of ``t`` and the targets ``x^T w_s + b_s +
      sigma e`` (``e`` standard normal), and is learned with ``"scaled"`` as ``(w_hat,
      b_hat)``; its error is ``E_sim = sigma^2 + mean sum_i r_i (x_i^T (w_hat - w_s) + b_hat -
      b_s)^2`` (over :data:`COMPARE_EVAL_ROWS` of the new rows);
    * ``scaled = E_sim L / L_sim``: ``L`` and ``L_sim`` are the leave-one-out errors of
      ``"scaled"`` on the new tasks and on the pseudo-tasks (:func:`_loo_error`; tasks of two
      rows or more). The fitted tasks sit on the structure the prior was made from, and their
      coefficients hold the noise of their own rows, so the simulation alone is kinder to
      ``"scaled"`` than the data are; the ratio corrects it by what the new rows say, at
      their own size (leave-one-out alone would score fits of one row fewer: with two rows,
      fits of one row, which learn no slope). Without a task of two rows, ``scaled = E_sim``.

    The draws are seeded: the same model and rows give the same answer.
    """
    m = n_fit_tasks(est)
    Wf = np.asarray(est.coef_, dtype=np.float64)[:m]
    bf = np.asarray(est.intercept_, dtype=np.float64)[:m]
    w, b = population_model(est)
    X, y, _, starts = stacked_arrays(data)
    sw = getattr(data, "sample_weight", None)
    r = np.ones(len(y)) if sw is None else np.asarray(sw, dtype=np.float64)
    if not (len(y) and r.sum() > 0):
        return None
    r = r / r.sum()
    rng = np.random.default_rng(0)
    spread = rng.choice(m, size=min(m, COMPARE_TASKS), replace=False)
    with np.errstate(all="ignore"):
        P = float(r @ (y - X @ w - b) ** 2)
        V = float(r @ np.mean((X @ (Wf[spread] - w).T + (bf[spread] - b)) ** 2, axis=1))
    if not (np.isfinite(P) and np.isfinite(V)):
        return None
    sigma = np.sqrt(max(P - V, 0.0))
    m_new, n_rows = data.n_tasks, len(y)
    S = min(m, max(1, min(COMPARE_TASKS // m_new, COMPARE_ROWS // n_rows)))
    sizes = np.diff(np.append(starts, n_rows))
    truth = np.concatenate([rng.choice(m, size=S, replace=False) for _ in range(m_new)])
    rows = np.concatenate([np.tile(np.arange(a, a + n), S) for a, n in zip(starts, sizes,
                                                                             strict=True)])
    Xp = X[rows]
    task_of = np.repeat(np.arange(m_new * S), np.repeat(sizes, S))
    with np.errstate(all="ignore"):
        yp = (np.einsum("nd,nd->n", Xp, Wf[truth][task_of]) + bf[truth][task_of]
              + sigma * rng.standard_normal(len(rows)))
    offsets = np.concatenate([[0], np.cumsum(np.repeat(sizes, S))]).astype(np.int64)
    kwargs: dict[str, Any] = {} if sw is None else {"sample_weight": np.asarray(sw)[rows]}
    pseudo = MultiTaskData(Xp, yp, offsets, np.arange(m_new * S), False, **kwargs)
    settings = solve_settings(est)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # notes of the solver on pseudo-tasks
        fit = solve_with_settings(settings, pseudo, prior, nbar / task_sizes(pseudo))
        loo_real = _loo_error(settings, data, prior, nbar)
        loo_sim = _loo_error(settings, pseudo, prior, nbar)
    ev = np.sort(rng.choice(n_rows, size=min(n_rows, COMPARE_EVAL_ROWS), replace=False))
    Xe, re = X[ev], r[ev] / r[ev].sum() if r[ev].sum() > 0 else np.full(len(ev), 1 / len(ev))
    with np.errstate(all="ignore"):
        learned = Xe @ (fit.W - Wf[truth].T) + (fit.intercept - bf[truth])
        scaled = sigma**2 + float(np.mean(re @ learned**2))
        if loo_real is not None and loo_sim is not None and loo_sim > 0:
            scaled *= loo_real / loo_sim
    if not np.isfinite(scaled):
        return None
    return scaled, P


def _loo_error(settings: NewTaskSettings, data: MultiTaskData, prior: ColumnPrior,
               nbar: float) -> float | None:
    """The leave-one-out squared error of ``"scaled"`` on the tasks of ``data`` with two rows
    or more, ``sum_i s_i (y_i - yhat_i)^2 / sum_i s_i`` (``yhat_i`` from the task's other rows
    at the weight ``nbar`` against the sum of their losses; ``s_i`` the sample weights);
    ``min(CV_FOLDS, n_t)`` folds, rows dealt round-robin (leave-one-out up to
    :data:`CV_FOLDS` rows). ``None`` without such a task."""
    X, y, _, starts = stacked_arrays(data)
    sizes = np.diff(np.append(starts, len(y)))
    m = data.n_tasks
    sw = getattr(data, "sample_weight", None)
    s = np.ones(len(y)) if sw is None else np.asarray(sw, dtype=np.float64)
    task_of = np.repeat(np.arange(m), sizes)
    K = np.minimum(CV_FOLDS, sizes)
    fold = (np.arange(len(y)) - starts[task_of]) % K[task_of]
    counted = sizes[task_of] >= 2
    if not np.any(counted) or not s[counted].sum() > 0:
        return None
    err = np.zeros(len(y))
    for f in range(int(K.max())):
        valid = (K > f) & (sizes >= 2)
        train, held = valid[task_of] & (fold != f), valid[task_of] & (fold == f)
        tasks = np.flatnonzero(valid)
        if not tasks.size:
            continue
        offsets = np.concatenate([[0], np.cumsum(np.bincount(task_of[train], minlength=m)[
            tasks])]).astype(np.int64)
        kwargs: dict[str, Any] = {} if sw is None else {"sample_weight": s[train]}
        part = MultiTaskData(X[train], y[train], offsets, np.arange(tasks.size), False,
                             **kwargs)
        fit = solve_with_settings(settings, part, prior, nbar / task_sizes(part))
        where = np.full(m, -1)
        where[tasks] = np.arange(tasks.size)
        cols = where[task_of[held]]
        z = np.einsum("nd,dn->n", X[held], fit.W[:, cols]) + fit.intercept[cols]
        err[held] = (y[held] - z) ** 2
    with np.errstate(all="ignore"):
        out = float(s[counted] @ err[counted] / s[counted].sum())
    return out if np.isfinite(out) else None


def _population_fit(est, m_new: int) -> NewTaskFit:
    """Every new task given the population model: ``W`` and ``b`` the means over the tasks of
    fit of ``coef_`` and ``intercept_`` (:func:`population_model`), the solver's variable
    (and its intercept variable, when it has one per task) their means too, so that the
    appended columns keep ``coef_`` the map of ``coef_variable_``; ``scales`` NaN."""
    m = n_fit_tasks(est)
    w, b = population_model(est)
    W = np.repeat(w[:, None], m_new, axis=1)
    V = np.asarray(est.coef_variable_)
    if V.shape[-1] == len(est.tasks_):
        coef = np.repeat(V[..., :m].mean(axis=-1)[..., None], m_new, axis=-1)
    else:
        coef = W.copy()
    bvar = getattr(est, "intercept_variable_", None)
    ivar = None
    if bvar is not None and np.shape(bvar) == (len(est.tasks_),):
        ivar = np.full(m_new, float(np.mean(np.asarray(bvar)[:m])))
    return NewTaskFit(W, np.full(m_new, b), coef, ivar, np.full(m_new, np.nan),
                      [None] * m_new)


# ----------------------------------------------------------------------------- the new rows
def fitted_inputs(est) -> FittedInputs:
    """What the rows of ``est``'s new tasks are checked against (:mod:`multitask.data.new_rows`)."""
    return FittedInputs(
        n_features=est.n_features_in_, task_column=est.task_column,
        classes=np.asarray(est.classes_) if est._is_classifier else None,
        missing_targets=getattr(est, "missing_targets", None), model=type(est).__name__,
        feature_names=hasattr(est, "feature_names_in_"),
        check_X=lambda X: est._validate_X(X, reset=False))


def convert_new_rows(est, X, y, task, sample_weight) -> tuple[MultiTaskData, bool]:
    """The new tasks' rows as :class:`MultiTaskData` (validated like ``fit``'s, against the
    fitted features and classes), and whether their labels are positional
    (:func:`multitask.data.new_rows.as_new_task_data`)."""
    return as_new_task_data(fitted_inputs(est), X, y, task, sample_weight)


def new_task_labels(est, data: MultiTaskData, positional: bool) -> np.ndarray:
    """The labels of the new tasks of ``data``: the ids given (long format) or, for per-task
    lists and shared designs, the integers after the model's largest integer id
    (:func:`multitask.data.new_rows.new_task_ids`)."""
    return new_task_ids(np.asarray(est.tasks_), data, positional)

def _append(a: np.ndarray, b: np.ndarray, axis: int) -> np.ndarray:
    return np.ascontiguousarray(np.concatenate([np.asarray(a), np.asarray(b)], axis=axis))


def append_new_tasks(est, labels: np.ndarray, fit: NewTaskFit) -> None:
    """Append the new tasks to the fitted attributes (the fitted tasks' values untouched).

    ``tasks_`` (:func:`~multitask.data.new_rows.append_task_ids`: one dtype holding every id
    exactly), ``coef_``, ``intercept_``; ``new_task_strength_`` and
    ``new_task_strength_rule_`` (the strength of each task added since the fit, NaN for the
    population model, and how it was chosen); ``coef_variable_`` and ``intercept_variable_`` when
    they hold one column per task; the per-task components a split model declares
    (``_task_components``, parts of ``coef_variable_``); and the arrays of ``solver_result_``
    (a copy: the fit's record of iterations and objective is kept).
    """
    m_old = len(est.tasks_)
    # one dtype holding every id exactly (never a lossy promotion of the fitted ids)
    est.tasks_ = append_task_ids(np.asarray(est.tasks_), labels)
    est.coef_ = _append(est.coef_, fit.W.T, axis=0)
    est.intercept_ = _append(est.intercept_, fit.intercept, axis=0)
    V = np.asarray(est.coef_variable_)
    per_task = V.shape[-1] == m_old and V.ndim == fit.coef.ndim
    if per_task:
        est.coef_variable_ = _append(V, fit.coef, axis=-1)
        for i, name in enumerate(getattr(est, "_task_components", ())):
            if hasattr(est, name):
                setattr(est, name, _append(getattr(est, name), fit.coef[i].T, axis=0))
    bvar = getattr(est, "intercept_variable_", None)
    if bvar is not None and per_task and np.shape(bvar) == (m_old,):
        extra = (fit.intercept_variable if fit.intercept_variable is not None
                 else fit.intercept)
        est.intercept_variable_ = _append(bvar, extra, axis=0)
    _record_strengths(est, m_old, fit)
    result = getattr(est, "solver_result_", None)
    if result is not None and dataclasses.is_dataclass(result):
        changes: dict[str, Any] = {"W": est.coef_.T.copy(), "intercept": est.intercept_.copy()}
        if per_task:
            changes["coef"] = np.array(est.coef_variable_, copy=True)
            changes["intercept_variable"] = (None if getattr(est, "intercept_variable_", None)
                                             is None else est.intercept_variable_.copy())
        est.solver_result_ = dataclasses.replace(result, **changes)


#: The record of a task added before the records were kept (a model file of an earlier
#: version): ``new_task_strength_rule_`` says so, ``new_task_strength_`` is NaN.
UNRECORDED = "not recorded"


def _record_strengths(est, m_old: int, fit: NewTaskFit) -> None:
    """Append the new tasks' strengths and how they were chosen to ``new_task_strength_`` and
    ``new_task_strength_rule_`` (one entry per task added since the fit)."""
    added = m_old - n_fit_tasks(est)
    strength = getattr(est, "new_task_strength_", None)
    rule = getattr(est, "new_task_strength_rule_", None)
    if strength is None or rule is None or len(strength) != added or len(rule) != added:
        strength, rule = np.full(added, np.nan), np.full(added, UNRECORDED)
    m_new = len(fit.intercept)
    est.new_task_strength_ = np.concatenate([np.asarray(strength, dtype=np.float64),
                                             np.asarray(fit.scales, dtype=np.float64)])
    est.new_task_strength_rule_ = np.concatenate([np.asarray(rule, dtype=str),
                                                  np.full(m_new, fit.rule or UNRECORDED)])


def forget_new_tasks(est) -> None:
    """Drop the records of new tasks (a fit replaces the tasks they describe)."""
    for name in ("new_task_strength_", "new_task_strength_rule_"):
        est.__dict__.pop(name, None)


#: Appended to the data layer's "Unknown task id" error at prediction.
UNKNOWN_TASK_HINT = (
    " To predict a task the model has not seen, learn it from a few of its rows with "
    "fit_new_tasks(X_new, y_new, task=ids_new), or predict it with the population model "
    "(the mean of the fitted tasks' models): unknown_tasks='population'.")

#: The accepted values of ``unknown_tasks``.
UNKNOWN_TASKS = ("error", "population")


def check_unknown_tasks(unknown_tasks) -> str:
    if not isinstance(unknown_tasks, str) or unknown_tasks not in UNKNOWN_TASKS:
        raise ValueError(f"unknown_tasks must be one of {list(UNKNOWN_TASKS)}, got "
                         f"{unknown_tasks!r}.")
    return unknown_tasks


def population_model(est) -> tuple[np.ndarray, float]:
    """``(w, b)``: the mean of the fitted tasks' weights and intercepts (the tasks of fit;
    for the pooled model, its common model)."""
    m = n_fit_tasks(est)
    coef = np.asarray(est.coef_)[:m]
    return coef.mean(axis=0), float(np.mean(np.asarray(est.intercept_)[:m]))


def population_scores(est, X, task) -> np.ndarray:
    """Scores of long-format rows: each row of a fitted task by its task's model, each row of
    an unknown task by :func:`population_model`."""
    if is_task_list(X):
        raise ValueError("unknown_tasks='population' applies to long-format rows with task ids "
                         "(task= or task_column): per-task lists and shared designs address "
                         "the model's tasks by position.")
    X = est._validate_X(X, reset=False)
    if est.task_column is not None:
        if task is not None:
            raise ValueError("Pass task ids either as task= or through task_column, not both.")
        features, ids = split_task_column(X, est.task_column)
    elif task is None:
        raise ValueError("unknown_tasks='population' needs the task id of each row (task=, or "
                         "task_column).")
    else:
        features, ids = X, task
    ids = as_task_ids(ids)
    n = X.shape[0]
    if ids.shape != (n,):
        raise ValueError(f"task must be 1-D with one id per row of X ({n}), got shape "
                         f"{ids.shape}.")
    fitted = np.asarray(est.tasks_)
    if n and _id_family(ids.dtype.kind) != _id_family(fitted.dtype.kind):
        raise ValueError(
            f"The task ids are {_id_family(ids.dtype.kind)} ({ids.tolist()[:3]}) but the model "
            f"was fitted on {_id_family(fitted.dtype.kind)} ids {fitted.tolist()[:10]}: give "
            "the ids as in training.")
    known_set = set(fitted.tolist())
    known = np.fromiter((v in known_set for v in ids.tolist()), dtype=bool, count=n)
    out = np.empty(n)
    if known.any():
        rows = np.flatnonzero(known)
        out[rows] = est._scores(X[rows], None if est.task_column is not None else ids[rows])
    if not known.all():
        rows = np.flatnonzero(~known)
        # the features were checked against the fitted ones by _validate_X
        data, _ = as_multitask_data(features[rows], None, np.zeros(rows.size, dtype=np.int64))
        w, b = population_model(est)
        out[rows] = unstack_predictions(data, data.matvec(w[:, None]) + b)
    return out
