"""The generic multi-task estimator every model is a preset of.

A model is a loss, a penalty (or constraint set) and a solver. A preset declares

* its hyper-parameters (:class:`Param`: default, constraint, keyword-only or not),
* :meth:`MultiTaskEstimator._make_penalty` (the penalty from the hyper-parameters),
* the solvers that may solve it (``_solvers``, in the order ``solver="auto"`` tries them),
* optionally the fitted attributes it adds (:meth:`MultiTaskEstimator._store_extra`),

and inherits everything else, once: the ``__init__`` (generated from the declared parameters,
as scikit-learn requires), parameter validation (scikit-learn's constraints, plus finiteness),
conversion of the three input formats (:mod:`multitask.data`), warm starts, the call of the
solver, the fitted attributes, prediction in the layout of the input, ``alpha_max`` and the
default regularization grid. A regressor and a classifier of the same model share the preset
and differ by their base (:class:`MultiTaskRegressorBase`, :class:`MultiTaskClassifierBase`).

Fitted attributes of every model:

* ``coef_`` of shape ``(n_tasks, n_features)`` (row ``t`` is task ``tasks_[t]``),
* ``intercept_`` of shape ``(n_tasks,)``,
* ``tasks_`` (task labels), ``n_features_in_``, ``input_format_``,
* ``n_iter_``, ``objective_`` (history), ``converged_``, ``optimality_`` (the relative
  optimality measure reached, see :mod:`multitask.solvers.base`), ``solver_`` (the solver
  object used),
* ``coef_variable_`` and ``intercept_variable_``: the solver's variables (a warm start
  resumes from them; ``coef_variable_`` is ``(k, n_features, n_tasks)`` for split models),
* ``classes_`` for classifiers (the two labels; ``classes_[1]`` is the positive class).

Predictions follow the layout of the training input: a shared design (2-D ``Y``) predicts an
``(n, m)`` array; long format (``task=`` or ``task_column``) predicts one value per row; a list
of per-task designs predicts a list of per-task arrays.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils._param_validation import Interval, StrOptions, validate_parameter_constraints
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

import multitask.estimators.new_tasks as _new_tasks
from multitask.data import (
    MISSING_TARGETS,
    MultiTaskData,
    as_multitask_data,
    check_not_complex,
    check_sparse_structure,
    is_task_list,
    observed_mask,
    unstack_predictions,
)
from multitask.data.class_columns import class_scores_by_row
from multitask.estimators._grid_scales import ridge_grid_top
from multitask.estimators.fitted_state import (
    NEW_TASK_STATE,
    Fitted,
    FittedStateError,
    fitted_declaration,
    fitted_task_count,
    matches_coef,
    solver_named_in_info,
    solver_result_check,
)
from multitask.estimators.multiclass import class_count, is_multiclass, softmax_scores
from multitask.losses import Datafit, get_datafit
from multitask.losses.multinomial import Multinomial
from multitask.penalties.base import Penalty
from multitask.penalties.new_task import ColumnPrior, new_task_prior
from multitask.solvers import SOLVERS, Problem, Solver, choose, make_solver
from multitask.solvers.newton import NEWTON_AUTO_MAX_ITER  # noqa: F401 - public before
from multitask.solvers.result import SolverResult

__all__ = [
    "MultiTaskClassifierBase",
    "MultiTaskEstimator",
    "GridSpan",
    "MultiTaskRegressorBase",
    "Param",
    "RenamedParameterError",
    "TaskStructureWarning",
    "is_task_list",
    "nonnegative",
    "positive",
]

#: Constraint of a finite or infinite number >= 0 (finiteness is checked separately).
nonnegative = Interval(Real, 0, None, closed="left")
#: Constraint of a number > 0.
positive = Interval(Real, 0, None, closed="neither")

#: The default tolerance of every estimator (relative optimality measure).
DEFAULT_TOL = 1e-4


@dataclass(frozen=True)
class Param:
    """A declared hyper-parameter of a preset.

    Parameters
    ----------
    default : object
        Default value (immutable). A classifier may use ``classifier_default`` instead.
    constraints : list
        scikit-learn parameter constraints (``Interval``, ``StrOptions``, types, ``None``,
        ``"boolean"``, ...).
    keyword_only : bool, default=True
        Whether the parameter is keyword-only in ``__init__`` (the main strengths are not).
    finite : bool, default=True
        Reject infinite numbers (NaN is always rejected by the constraints).
    classifier_default : object, optional
        Default of the classifier of the pair, when it differs.
    """

    default: Any
    constraints: list = field(default_factory=list)
    keyword_only: bool = True
    finite: bool = True
    classifier_default: Any = "__same__"

    def default_for(self, classifier: bool) -> Any:
        if classifier and self.classifier_default != "__same__":
            return self.classifier_default
        return self.default


#: Largest accepted ``max_iter`` (the compiled kernels and HiGHS count iterations in 32 bits).
MAX_ITER_LIMIT = 2**31 - 1


class RenamedParameterError(TypeError, ValueError):
    """A parameter passed under the name it had in an earlier version of the library; the
    message names the parameter that replaced it. A ``TypeError`` (Python's error for an
    unexpected keyword) and a ``ValueError`` (scikit-learn's for an invalid parameter)."""


def check_renamed(cls: type, names, renamed: dict[str, str]) -> None:
    """Raise :class:`RenamedParameterError` for the first of ``names`` that ``renamed`` (old
    name -> what replaced it) lists."""
    for name in names:
        if name in renamed:
            raise RenamedParameterError(
                f"{cls.__name__} has no parameter {name!r} any more: {renamed[name]}.")


class NotCertifiedWarning(UserWarning):
    """A convex model's fit whose ``optimality_`` is not a certified duality gap (no
    computable dual: the equality-constrained robust model, a solver on task blocks held
    apart; the user guide, section 10, lists the cases): its
    ``converged_`` rests on the prox-gradient residual instead."""


class TaskStructureWarning(UserWarning):
    """A model that needs a structure of the tasks (a time order, a task graph) was fitted
    with one the library chose, not one the user gave."""


@dataclass(frozen=True)
class GridSpan:
    """Values of a secondary parameter of a default grid, log-spaced from ``first`` to
    ``last`` (see :meth:`MultiTaskEstimator._grid_tops`).

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


def _common_params(classifier: bool) -> dict[str, Param]:
    """The parameters every model has (after its own), in signature order."""
    return {
        "fit_intercept": Param(True, ["boolean"]),
        "alpha_l2": Param(0.0, [nonnegative]),
        "solver": Param("auto", [str, Solver]),
        "max_iter": Param(5000, [Interval(Integral, 1, MAX_ITER_LIMIT, closed="both")]),
        "tol": Param(DEFAULT_TOL, [positive]),
        "warm_start": Param(False, ["boolean"]),
        "task_column": Param(None, [Integral, None]),
        "missing_targets": Param("error", [StrOptions(set(MISSING_TARGETS))]),
    }


COMMON_PARAMETERS_DOC = """fit_intercept : bool, default=True
        Fit an unpenalized intercept per task.
    alpha_l2 : float, default=0.0
        Weight of an extra ridge term ``(alpha_l2 / 2) ||W||_F^2`` (the elastic-net term;
        MALSAR's ``rho_L2``, RMTL's ``Lam2``).
    solver : str or Solver, default="auto"
        A solver name of :data:`multitask.solvers.SOLVERS` accepted by the model, or a
        configured :class:`~multitask.solvers.base.Solver` (used as given: its own
        ``max_iter`` and ``tol``). ``"auto"`` takes the first applicable solver of the model's
        list.
    max_iter : int
        Iteration budget of the solver (``ConvergenceWarning`` when reached).
    tol : float, default=1e-4
        Tolerance on the relative optimality measure (the prox-gradient residual relative to
        the loss gradient at zero; see :mod:`multitask.solvers.base` and the user guide):
        the same meaning in every model.
    warm_start : bool, default=False
        Start from the previous solution when refitting on the same tasks (paths).
    task_column : int, optional
        Column of ``X`` holding the task id of each row (long format for scikit-learn
        tools).
    missing_targets : {"error", "ignore"}, default="error"
        What a missing target (NaN or ``None`` in ``y``) means in ``fit`` and ``score``: an
        error (the default), or a target that was not observed (``"ignore"``): in a shared
        design the row then counts only for the tasks whose target is observed (that (row,
        task) pair weighs zero; the row still counts for the other tasks), in long format and
        per-task lists the row is left out. A task with no observed target is an error. A
        parameter, not a fit argument, so that cross-validation and grid searches keep it."""


#: Hyper-parameter values found valid, per class (:meth:`MultiTaskEstimator._validate_params`):
#: values of immutable built-in types only, so that a key cannot change after it is stored.
_VALIDATED: set = set()
_VALIDATED_MAX = 4096
_PARAM_NAMES: dict[type, tuple[str, ...]] = {}
_IMMUTABLE = (bool, int, float, str, type(None))


def _validated_key(est) -> tuple | None:
    """``(class, ((name, type, value), ...))`` of ``est``'s hyper-parameters, or ``None``
    when a value is not of an immutable built-in type (or a tuple of them): an array, an
    object, a list."""
    cls = type(est)
    names = _PARAM_NAMES.get(cls)
    if names is None:
        names = _PARAM_NAMES[cls] = tuple(cls._get_param_names())
    items = []
    for name in names:
        v = getattr(est, name)
        if not (isinstance(v, _IMMUTABLE) or (type(v) is tuple
                                               and all(isinstance(x, _IMMUTABLE) for x in v))):
            return None
        items.append((name, type(v), v))
    return cls, tuple(items)


def _make_init(params: dict[str, Param], classifier: bool):
    """An ``__init__`` with an explicit signature storing each parameter as given."""
    names = list(params)
    for n in names:
        if not n.isidentifier():  # the names are code: refuse anything else
            raise ValueError(f"Invalid parameter name {n!r}.")
    positional = [n for n in names if not params[n].keyword_only]
    keyword = [n for n in names if params[n].keyword_only]
    defaults = {n: params[n].default_for(classifier) for n in names}
    sig = ", ".join(["self", *[f"{n}=__d[{n!r}]" for n in positional]]
                    + (["*"] + [f"{n}=__d[{n!r}]" for n in keyword] if keyword else []))
    body = "\n".join(f"    self.{n} = {n}" for n in names) or "    pass"
    namespace: dict[str, Any] = {"__d": defaults}
    exec(f"def __init__({sig}):\n{body}\n", namespace)  # noqa: S102 - validated names only
    return namespace["__init__"]


def _has_tasks(est, tasks, sizes) -> str | None:
    return None if len(tasks) >= 1 else "a fitted model has at least one task"


#: The fitted state every model has (see :mod:`multitask.estimators.fitted_state`; ``"m"``
#: tasks, ``"d"`` features). The classifier base adds ``classes_``, each family its own.
FITTED_STATE: dict[str, Fitted] = {
    "n_features_in_": Fitted("int", nonnegative=True, bind="d"),
    "feature_names_in_": Fitted("names", shape=("d",), required=False),
    "input_format_": Fitted("str", choices=("shared", "long", "list")),
    "tasks_": Fitted("labels", shape=("m",), check=_has_tasks),
    "coef_": Fitted("array", shape=("m", "d")),
    "intercept_": Fitted("array", shape=("m",)),
    "n_iter_": Fitted("int", nonnegative=True),
    "objective_": Fitted("array", shape=(None,)),
    "converged_": Fitted("bool"),
    "optimality_": Fitted("float", nan=True, nonnegative=True),
    "certified_": Fitted("bool", required=False),  # absent from files of earlier versions
    "solver_": Fitted("object", types=(Solver,)),
    "coef_variable_": Fitted("array", shape=("d", "m"),
                             check=matches_coef(lambda V, _: V.T, "coef_ is its transpose")),
    "intercept_variable_": Fitted("array", shape=("m",), optional=True),
    "solver_info_": Fitted("dict", check=solver_named_in_info),
    "solver_result_": Fitted("object", types=(SolverResult,), check=solver_result_check),
    # the sizes of the tasks of fit (rows, or weight sums), the first len() rows of coef_;
    # rows after them were added by fit_new_tasks (None after a distributed fit)
    "fit_task_sizes_": Fitted("array", shape=(None,), nonnegative=True, optional=True,
                              required=False, check=fitted_task_count),
    **NEW_TASK_STATE,  # fit_new_tasks' records of the tasks it adds
}


class MultiTaskEstimator(BaseEstimator):
    """Base of every multi-task model (not used directly; see the module docstring)."""

    _abstract: ClassVar[bool] = True
    _is_classifier: ClassVar[bool] = False
    #: The model's own hyper-parameters, in signature order.
    _params: ClassVar[dict[str, Param]] = {}
    #: The losses a classifier accepts (the first is the default); regressors use "squared".
    _losses: ClassVar[tuple[str, ...]] = ("logistic", "squared_hinge")
    #: The solver names a model family accepts and ``solver="auto"`` chooses from (its
    #: candidates); ``None``: every registered solver (:data:`multitask.solvers.SOLVERS`).
    _solvers: ClassVar[tuple[str, ...] | None] = None
    #: The candidates of ``solver="auto"`` where they are fewer than the accepted ones.
    _auto_solvers: ClassVar[tuple[str, ...] | None] = None

    @classmethod
    def _accepted_solvers(cls) -> tuple[str, ...]:
        """The names ``solver=`` accepts (``_solvers``, or every registered solver)."""
        return tuple(SOLVERS) if cls._solvers is None else cls._solvers
    #: Default ``max_iter`` of the model.
    _max_iter: ClassVar[int] = 5000
    #: The path parameter of the default grid (strongest regularization first).
    _path_param: ClassVar[str | None] = "alpha"
    #: What the fitted state must look like; merged with the bases' along the MRO
    #: (:func:`~multitask.estimators.fitted_state.fitted_declaration`).
    _fitted_state: ClassVar[dict[str, Fitted | None]] = FITTED_STATE
    #: Parameters that change the fitted model but that the default grid leaves at their set
    #: value, with the reason (``MultiTaskCV`` says so once per model and process).
    _grid_held: ClassVar[dict[str, str]] = {}
    #: Parameter names of earlier versions -> what replaced them (refused with that message).
    _renamed: ClassVar[dict[str, str]] = {}
    #: Per-task components of a split model, in the order of the parts of ``coef_variable_``
    #: (``fit_new_tasks`` appends the new tasks' parts to them).
    _task_components: ClassVar[tuple[str, ...]] = ()
    #: The losses whose new-task problems ``fit_new_tasks`` solves (it refuses the others).
    _new_task_losses: ClassVar[tuple[str, ...]] = ("squared", "logistic", "squared_hinge",
                                                   "hinge", "poisson", "gamma", "tweedie",
                                                   "huber", "quantile")

    def __new__(cls, *args, **kwargs):
        # before __init__, whose unexpected keyword would give a bare TypeError
        check_renamed(cls, kwargs, cls._renamed)
        return super().__new__(cls)

    def set_params(self, **params):
        """scikit-learn's ``set_params``; a renamed parameter is refused naming its new name."""
        check_renamed(type(self), params, self._renamed)
        return super().set_params(**params)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if (cls.__name__.startswith("_") or "__init__" in cls.__dict__
                or cls.__dict__.get("_abstract", False)):
            return
        cls.__init__ = _make_init(cls._all_params(), cls._is_classifier)  # type: ignore[misc]
        if cls.__doc__ and "{common_parameters}" in cls.__doc__:
            cls.__doc__ = cls.__doc__.replace("{common_parameters}", COMMON_PARAMETERS_DOC)

    @classmethod
    def _all_params(cls) -> dict[str, Param]:
        params = dict(cls._params)
        if cls._is_classifier and cls._losses:
            params["loss"] = Param(cls._losses[0], [StrOptions(set(cls._losses))])
        common = _common_params(cls._is_classifier)
        common["max_iter"] = Param(cls._max_iter, common["max_iter"].constraints)
        for name, p in common.items():
            params.setdefault(name, p)
        return params

    # ------------------------------------------------------------------ hooks of the presets
    def _make_penalty(self, datafit: Datafit) -> Penalty:
        raise NotImplementedError

    def _loss_name(self) -> str:
        return getattr(self, "loss", "logistic" if self._is_classifier else "squared")

    def _datafit_options(self) -> dict:
        # centring the features of each task leaves the model unchanged and decouples the
        # intercepts from the weights (raw features far from zero otherwise slow first-order
        # solvers down by orders of magnitude); the hinge keeps raw features for its LP
        return {"alpha_l2": float(self.alpha_l2), "center": self._loss_name() != "hinge"}

    def _make_datafit(self, data: MultiTaskData) -> Datafit:
        return get_datafit(self._loss_name(), data, bool(self.fit_intercept),
                           **self._datafit_options())

    def _solver_settings(self, name: str) -> dict:
        """Settings of the solver ``name`` taken from the hyper-parameters."""
        return {"max_iter": int(self.max_iter), "tol": float(self.tol)}

    def _auto_candidates(self, datafit: Datafit, penalty: Penalty) -> tuple[str, ...] | None:
        """The solvers ``solver="auto"`` chooses from (``_auto_solvers``, by default the
        accepted ``_solvers``); the choice itself is :func:`multitask.solvers.choose`."""
        return self._auto_solvers if self._auto_solvers is not None else self._solvers

    def _make_solver(self, datafit: Datafit, penalty: Penalty) -> Solver:
        if isinstance(self.solver, Solver):
            self.solver.check(datafit, penalty)
            return self.solver
        chosen: dict = {}
        if self.solver == "auto":
            try:
                choice = choose(Problem(datafit, penalty),
                                self._auto_candidates(datafit, penalty))
            except ValueError as exc:
                raise ValueError(f"No solver of {type(self).__name__} applies: "
                                 + str(exc).split(": ", 1)[-1]) from None
            name, chosen = choice.name, choice.settings
        else:
            name = self.solver
        solver = make_solver(name, **{**self._solver_settings(name), **chosen})
        miss = solver.missing(datafit, penalty)
        if miss:
            applicable = [n for n in self._accepted_solvers()
                          if not make_solver(n).missing(datafit, penalty)]
            raise ValueError(f"Solver {solver.label!r} cannot solve this model: "
                             f"{'; '.join(miss)}. The 'solver' parameter of "
                             f"{type(self).__name__} must be 'auto', one of {applicable} or a "
                             "Solver for this model and data.")
        return solver

    def _run_solver(self, solver: Solver, datafit: Datafit, penalty: Penalty, coef_init,
                    intercept_init) -> SolverResult:
        return solver.solve(datafit, penalty, coef_init=coef_init,
                            intercept_init=intercept_init)

    def _store_extra(self, result: SolverResult, penalty: Penalty, datafit: Datafit) -> None:
        """Model-specific fitted attributes (components, ranks, certificates, ...)."""

    # ------------------------------------------------------------------ validation
    def _validate_params(self) -> None:
        """Check every hyper-parameter against its declared constraints (clear errors).

        Values that passed once for this class are not checked again (``fit`` then
        ``fit_new_tasks``, the fits of a grid search): values of immutable built-in types only
        (:func:`_validated_key`); arrays and objects are checked every time."""
        key = _validated_key(self)
        if key is not None and key in _VALIDATED:
            return
        params = self._all_params()
        values = self.get_params(deep=False)
        constraints = {name: p.constraints for name, p in params.items() if p.constraints}
        validate_parameter_constraints(constraints, values, caller_name=type(self).__name__)
        for name, p in params.items():
            v = values.get(name)
            if p.finite and isinstance(v, Real) and not isinstance(v, bool):
                try:
                    finite = math.isfinite(float(v))
                except OverflowError:  # an integer beyond the float range
                    finite = False
                if not finite:
                    raise ValueError(f"The {name!r} parameter of {type(self).__name__} must be "
                                     f"finite, got {v!r}.")
        if isinstance(self.solver, str) and self.solver != "auto":
            accepted = self._accepted_solvers()
            if self.solver not in accepted or self.solver not in SOLVERS:
                raise ValueError(f"The 'solver' parameter of {type(self).__name__} must be "
                                 f"'auto', one of {list(accepted)} or a Solver, got "
                                 f"{self.solver!r}.")
        self._check_params()
        if key is not None:
            if len(_VALIDATED) >= _VALIDATED_MAX:
                _VALIDATED.clear()
            _VALIDATED.add(key)

    def _check_params(self) -> None:
        """Checks across parameters (override; single parameters are declared)."""

    def _structure_note(self, tasks: np.ndarray) -> str | None:
        """Why the structure of the tasks this model relies on (a time order, a graph) was
        not given but defaulted, for the task labels ``tasks`` (in the order of ``tasks_``);
        ``None`` when it was given or the model needs none. ``fit`` warns with it
        (:class:`TaskStructureWarning`)."""
        return None

    # ------------------------------------------------------------------ input handling
    def _validate_X(self, X, reset: bool):
        """Run scikit-learn's checks on a single matrix (sets n_features_in_ and names).

        NaN and infinity are left to :func:`~multitask.data.as_multitask_data`, whose message
        names the row and its task. A sparse matrix first gets the data layer's full structural
        check (before any conversion can read a broken index); complex values are refused with
        the data layer's message (:func:`~multitask.data.check_not_complex`).
        """
        if sp.issparse(X):
            X = check_sparse_structure(X)
        else:
            check_not_complex(X)
        return validate_data(self, X, reset=reset, accept_sparse="csr", dtype=np.float64,
                             ensure_min_samples=1, ensure_all_finite=False)

    def _convert(self, X, y, task, sample_weight=None):
        """``(data, classes, format)`` for training input in any of the three formats, with
        the row weights and the missing targets (``missing_targets``) in the data."""
        missing = getattr(self, "missing_targets", None)
        if self._is_classifier and y is not None and not isinstance(y, (list, tuple)):
            _check_classification_targets(y)
        if is_task_list(X):
            data, classes = as_multitask_data(X, y, task, classification=self._is_classifier,
                                              sample_weight=sample_weight,
                                              missing_targets=missing)
            self.n_features_in_ = data.n_features
            fmt = "list"
        else:
            X = self._validate_X(X, reset=True)
            data, classes = as_multitask_data(X, y, task, task_column=self.task_column,
                                              classification=self._is_classifier,
                                              sample_weight=sample_weight,
                                              missing_targets=missing)
            fmt = "shared" if data.shared else "long"
        return data, classes, fmt

    def _warm_start_point(self, data: MultiTaskData, shape: tuple[int, ...]):
        if not (self.warm_start and hasattr(self, "coef_variable_")):
            return None, None
        same = (self.coef_variable_.shape == shape and len(self.tasks_) == data.n_tasks
                and np.array_equal(np.asarray(self.tasks_), np.asarray(data.tasks)))
        if not same:
            return None, None
        return self.coef_variable_, self.intercept_variable_

    # ------------------------------------------------------------------ fit
    def fit(self, X, y, task=None, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : array-like (n, d), sparse matrix, or list of per-task arrays
            Shared design with 2-D ``y``; long format with ``task`` (or ``task_column``);
            or a list of per-task designs with a list of per-task targets.
        y : array-like (n,), (n, m), or list of arrays
            Targets (class labels for classifiers: two classes, both present in each task).
            NaN marks a missing target with ``missing_targets="ignore"``.
        task : array-like (n,), optional
            Task id of each row (long format).
        sample_weight : array-like, optional
            Finite weights ``w_i >= 0`` of the rows (scikit-learn's convention): shape
            ``(n,)``; for a shared design also ``(n, m)``, one weight per row and task; for
            per-task lists a list of per-task arrays. The loss of task ``t`` becomes
            ``sum_{i in t} w_i ell_i / sum_{i in t} w_i``: integer weights give the model of
            the repeated rows, zero weights that of the data without those rows; weights
            that are constant within each task change nothing but for the pooled baselines,
            whose one task holds every row (see :mod:`multitask.losses`). Not supported with
            Dask collections or ``TaskBlocks``.

        Returns
        -------
        self
        """
        self._validate_params()
        if _is_distributed(X):  # Dask collections or TaskBlocks (docs/distributed.md)
            _refuse_distributed_weights(sample_weight)
            self._check_distributed_loss()
            return _distributed().estimator_fit(self, X, y, task)
        data, classes, fmt = self._convert(X, y, task, sample_weight)
        note = self._structure_note(data.tasks)
        if note is not None:
            warnings.warn(note, TaskStructureWarning, stacklevel=2)
        datafit = self._make_datafit(data)
        penalty = self._make_penalty(datafit)
        solver = self._make_solver(datafit, penalty)
        shape = penalty.linear_map.variable_shape(data.n_features, data.n_tasks)
        coef_init, intercept_init = self._warm_start_point(data, shape)
        if intercept_init is not None and not datafit.has_intercept_variable:
            intercept_init = None
        if (coef_init is None and intercept_init is None and datafit.has_intercept_variable
                and datafit.starts_at_best_intercept):
            intercept_init = datafit.optimal_intercept_at_zero()
        result = self._run_solver(solver, datafit, penalty, coef_init, intercept_init)
        self.input_format_ = fmt
        self.tasks_ = data.tasks
        if self._is_classifier:
            self.classes_ = classes
        self._store_result(result, penalty, data, solver)
        self._store_extra(result, penalty, datafit)
        self._store_loss_state(result, datafit)
        return self

    def _store_loss_state(self, result: SolverResult, datafit: Datafit) -> None:
        """Fitted attributes of the loss itself (the Huber loss's scales); none by default."""

    def _check_distributed_loss(self) -> None:
        """Refuse a loss the task-block solver of Dask input does not handle (a ValueError);
        every loss of this base is handled."""

    def _store_result(self, result: SolverResult, penalty: Penalty, data: MultiTaskData,
                      solver: Solver) -> None:
        self.coef_ = np.ascontiguousarray(result.W.T)
        self.intercept_ = np.asarray(result.intercept, dtype=np.float64).copy()
        self.n_iter_ = int(result.n_iter)
        self.objective_ = np.asarray(result.objective)
        self.converged_ = bool(result.converged)
        self.optimality_ = float(result.optimality)
        self.certified_ = bool(result.info.get("certified", False))
        if not self.certified_ and penalty.is_convex and np.isfinite(self.optimality_):
            warnings.warn(
                f"{type(self).__name__}: this fit has no certified duality gap (the model "
                f"offers no computable dual here: {_uncertified_reason(penalty, result.info)}); "
                f"optimality_={self.optimality_:.2e} is the relative prox-gradient residual, "
                "and converged_ rests on it. A small alpha_l2 makes such models certifiable.",
                NotCertifiedWarning, stacklevel=4)
        self.solver_ = solver
        self.coef_variable_ = np.array(result.coef, copy=True)
        self.intercept_variable_ = (None if result.intercept_variable is None
                                    else np.array(result.intercept_variable, copy=True))
        self.solver_info_ = result.info
        self.solver_result_ = result
        sizes = getattr(data, "task_sizes", None)
        self.fit_task_sizes_ = (None if sizes is None or not isinstance(data, MultiTaskData)
                                else _new_tasks.task_sizes(data))
        _new_tasks.forget_new_tasks(self)  # the records of tasks added to an earlier fit

    # ------------------------------------------------------------------ regularization scale
    def alpha_max(self, X, y, task=None, sample_weight=None) -> float:
        """Smallest value of the path parameter at which ``coef_`` is zero.

        Computed from one gradient of the loss at ``W = 0`` (with the best intercepts) by the
        penalty's ``alpha_max``; ``inf`` where no finite value gives zero (ridge, balls).
        ``sample_weight`` weighs the rows as in :meth:`fit`.
        """
        self._validate_params()
        if _is_distributed(X):
            _refuse_distributed_weights(sample_weight)
            return _distributed().estimator_alpha_max(self, X, y, task)
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
        alpha_ratio)`` decades, and ``max(1, round(n_alphas / 3))`` values of each other
        strength over its range (cross-validation runs the path inside a loop over them),
        or over its :class:`GridSpan`. ``sample_weight`` weighs the rows as in :meth:`fit`.
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
            for i, (pname, spec) in enumerate(tops.items()):
                n = n_alphas if i == 0 else max(1, round(n_alphas / 3))
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

    # ------------------------------------------------------------------ new tasks
    def fit_new_tasks(self, X, y, task=None, sample_weight=None, *, strength="auto"):
        """Learn tasks the model has not seen from their rows; the fitted tasks are unchanged.

        Each new task ``t`` solves, alone, the small problem its fitted structure gives it
        (:mod:`multitask.estimators.new_tasks`)::

            min_{w, b}  (1 / n_t) sum_{i in t} ell(y_i, x_i^T w + b)
                        + c_t [(alpha_l2 / 2) ||w||^2 + R(w)]

        where ``R`` is the new-task prior of the model's penalty at the fitted weights
        (:func:`multitask.penalties.new_task.new_task_prior`: the learned subspace of the
        low-rank models, the shared support and feature weights of the joint-sparsity models,
        the mean task of the mean-regularized and graph models, the nearest cluster of
        clustered MTL, the learned task covariance of MTRL; the pooled model gives every new
        task its population model) and ``b`` is unpenalized, as in ``fit``. ``ell`` is the
        model's loss with its parameter (every ``loss=`` of the regressors; the Huber loss
        fits each new task's scale too, appended to ``scale_``); the problems without a closed
        form go to the solver the library chooses for the loss and the prior. The new tasks are
        appended: ``tasks_``, ``coef_``, ``intercept_`` (and ``coef_variable_``, the
        components of split models, the arrays of ``solver_result_``) gain one entry per new
        task, and the rows of the fitted tasks stay bitwise equal. Attributes that describe
        the learned structure (``M_``, ``laplacian_``, ``task_covariance_``, ranks, ...) keep
        describing the tasks of fit, whose sizes are ``fit_task_sizes_``; the structure of a
        later call is that of the tasks of fit, never of tasks added since.

        Why not ``partial_fit``: scikit-learn's ``partial_fit`` continues training on more
        rows of the same problem (and meta-estimators call it that way); this method never
        changes a fitted task and refuses a task id the model has, so it has its own name.
        It works in place and returns ``self``, as ``fit`` and ``partial_fit`` do (copy the
        model first, ``copy.deepcopy(model)``, to keep the original).

        Parameters
        ----------
        X : array-like (n, d), sparse matrix, or list of per-task arrays
            The new tasks' rows, in any of ``fit``'s formats, with the fitted features.
        y : array-like (n,), (n, m_new), or list of arrays
            Their targets (for classifiers, labels among ``classes_``, both classes in each
            new task).
        task : array-like (n,), optional
            Task id of each row (long format): ids the model does not have, of the type of
            ``tasks_``. Without it (per-task lists, a shared design's target columns, or one
            task's rows) the new tasks are numbered after the model's largest integer id.
        sample_weight : array-like, optional
            Row weights, as in ``fit``.
        strength : {"auto", "scaled", "fitted", "cv"} or float, default="auto"
            ``c_t``: ``"scaled"`` is ``nbar / n_t`` (``nbar`` the mean size of the fitted
            tasks: the prior weighs against the new task's rows as it did against a typical
            fitted task's, so a task with few rows is shrunk more towards the structure);
            ``"fitted"`` is 1 (the fitted objective's own conditional on the new column);
            ``"cv"`` multiplies ``"scaled"`` by the factor of
            :data:`~multitask.estimators.new_tasks.CV_GRID` with the lowest held-out loss in
            a cross-validation on the new rows, pooled over the new tasks (each needs
            :data:`~multitask.estimators.new_tasks.CV_MIN_ROWS` rows); ``"auto"`` is ``"cv"``
            where the new-task problem has a closed form (the squared loss with a Gaussian
            prior: ridge, mean-regularized, trace norm, capped trace, l2,1, MTRL, cASO) and
            the rows allow it (:func:`~multitask.estimators.new_tasks.cv_applies`); with the
            squared loss and fewer rows, ``"scaled"`` or the population model, whichever
            has the lower expected error (:func:`~multitask.estimators.new_tasks.
            compare_with_population`); ``"scaled"`` otherwise; a number is ``c_t`` itself.
            Constraint sets (the l1,inf and per-task balls) have no strength. Each task
            added records its ``c_t`` in ``new_task_strength_`` (NaN: the population model)
            and how it was chosen in ``new_task_strength_rule_``.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            A task id the model has, ids of another type than ``tasks_``, the wrong number of
            features, labels outside ``classes_``, an unknown ``strength``, or input that
            ``fit`` would refuse.
        NotImplementedError
            For a model whose penalty has no new-task rule (the temporal models).
        """
        self._check_linear_structure("fit_new_tasks")
        check_is_fitted(self, "coef_")
        loss = self._loss_name()
        if loss not in self._new_task_losses:
            raise ValueError(
                f"fit_new_tasks does not handle the {loss!r} loss yet (its new-task problems "
                f"are solved for the losses {list(self._new_task_losses)}): refit "
                f"{type(self).__name__} with the new tasks' rows.")
        if _is_distributed(X):
            raise ValueError("fit_new_tasks takes in-memory data (the new tasks' rows), not Dask "
                             "collections or TaskBlocks.")
        rule = _new_tasks._check_strength(strength)
        # the hyper-parameters validated and the prior built once per fit (cached beside the
        # model; dropped on a refit or a change of what the prior is read from)
        structure = _new_tasks.fitted_structure(self)
        data, positional = _new_tasks.convert_new_rows(self, X, y, task, sample_weight)
        labels = _new_tasks.new_task_labels(self, data, positional)
        fit = _new_tasks.fit_new_task_columns(self, data, structure.prior, rule,
                                              structure.nbar)
        _new_tasks.append_new_tasks(self, labels, fit)
        self._append_loss_state(data, fit)
        return self

    def _append_loss_state(self, data: MultiTaskData, fit) -> None:
        """Append the new tasks' entries to the fitted attributes of the loss (the Huber
        loss's ``scale_``); none by default."""

    def _check_linear_structure(self, what: str) -> None:
        """Refuse ``what`` (new tasks, the population model) for a model without a penalty on
        linear weights (the kernel model)."""
        cls = type(self)
        if (cls._make_penalty is MultiTaskEstimator._make_penalty
                and cls._new_task_prior is MultiTaskEstimator._new_task_prior):
            raise NotImplementedError(
                f"{cls.__name__} has no penalty on linear task weights: {what} is not "
                "available for it (refit with the new tasks' rows).")

    def _new_task_prior(self) -> ColumnPrior:
        """The prior a new task gets from the fitted structure: the penalty's rule
        (:func:`~multitask.penalties.new_task.new_task_prior`) at the fitted variable of the
        tasks of fit, with :meth:`_new_task_context`."""
        m = _new_tasks.n_fit_tasks(self)
        V = np.asarray(self.coef_variable_)[..., :m]
        return new_task_prior(self._fitted_penalty(), V, **self._new_task_context())

    def _new_task_context(self) -> dict:
        """What the penalty's new-task rule needs besides the fitted variable (see
        :func:`~multitask.penalties.new_task.new_task_prior`); nothing by default."""
        return {}

    def _fitted_penalty(self) -> Penalty:
        """The model's penalty for the tasks of fit, rebuilt from the hyper-parameters (as
        ``fit`` built it from the data: only the tasks' number and labels and the number of
        features are read, so a placeholder data set of that shape stands in)."""
        m = _new_tasks.n_fit_tasks(self)
        d = int(self.n_features_in_)
        shape = MultiTaskData(np.zeros((m, d)), np.zeros(m), np.arange(m + 1, dtype=np.int64),
                              np.asarray(self.tasks_)[:m], False)
        return self._make_penalty(get_datafit("squared", shape, False))

    def _scores_or_population(self, X, task, unknown_tasks):
        """``_scores``, or, with ``unknown_tasks="population"``, rows of tasks the model has
        not seen scored by the population model (:func:`~multitask.estimators.new_tasks.
        population_model`)."""
        if _new_tasks.check_unknown_tasks(unknown_tasks) == "error":
            return self._scores(X, task)
        self._check_linear_structure("unknown_tasks='population'")
        check_is_fitted(self, "coef_")
        if _is_distributed(X):
            raise ValueError("unknown_tasks='population' is not supported with Dask "
                             "collections or TaskBlocks.")
        return _new_tasks.population_scores(self, X, task)

    # ------------------------------------------------------------------ predict
    def _scores(self, X, task=None):
        check_is_fitted(self, "coef_")
        if _is_distributed(X):
            return _distributed().estimator_predict(self, "_scores", X, task)
        fmt = self.input_format_
        if is_task_list(X):
            data, _ = as_multitask_data(X, None, known_tasks=self.tasks_,
                                        n_features=self.n_features_in_)
        else:
            X = self._validate_X(X, reset=False)
            if (fmt == "long" and task is None and self.task_column is None
                    and len(self.tasks_) > 1):
                raise ValueError(
                    "This model was fitted on long-format data with several tasks: pass the "
                    "task id of each row as task=, or use task_column."
                )
            try:
                data, _ = as_multitask_data(X, None, task, task_column=self.task_column,
                                            known_tasks=self.tasks_)
            except ValueError as exc:
                if str(exc).startswith("Unknown task id"):
                    raise ValueError(str(exc) + _new_tasks.UNKNOWN_TASK_HINT) from None
                raise
        self._check_prediction_state(data)
        z = data.matvec(self.coef_.T) + data.expand(self.intercept_)
        return self._user_layout(X, data, z)

    def _check_prediction_state(self, data: MultiTaskData) -> None:
        """The shapes prediction relies on, checked on every call (a few comparisons):
        ``coef_`` of shape ``(m, d)`` and ``intercept_`` of shape ``(m,)``, real numbers, for
        the ``m`` tasks and ``d`` features of ``data``. A model whose attributes were edited in
        memory gets this ``ValueError`` rather than an out-of-bounds read in a compiled
        kernel (files are checked whole when loaded: :mod:`multitask.estimators.fitted_state`).
        """
        for name, shape in (("coef_", (data.n_tasks, data.n_features)),
                            ("intercept_", (data.n_tasks,))):
            a = getattr(self, name, None)
            if not isinstance(a, np.ndarray) or a.shape != shape or a.dtype.kind not in "fiub":
                got = (f"shape {a.shape} and dtype {a.dtype}" if isinstance(a, np.ndarray)
                       else type(a).__name__)
                raise FittedStateError(
                    f"{type(self).__name__}.{name} must be an array of shape {shape} for its "
                    f"{data.n_tasks} task(s) and {data.n_features} feature(s), got {got}: the "
                    "fitted attributes are inconsistent.")

    @classmethod
    def _fitted_declaration(cls) -> dict[str, Fitted]:
        """The declared fitted state of the class (:attr:`_fitted_state` of the class and its
        bases, merged)."""
        return fitted_declaration(cls)

    @staticmethod
    def _user_layout(X, data: MultiTaskData, z: np.ndarray):
        """Stacked scores ``z`` in the layout of the input ``X``.

        A list of per-task designs gives a list of per-task arrays; a shared design an
        ``(n, m)`` array; long format one value per row, in the user's row order.
        """
        if is_task_list(X):
            return [z[data.offsets[t] : data.offsets[t + 1]] for t in range(data.n_tasks)]
        return unstack_predictions(data, z)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.multi_output = True
        return tags


def _uncertified_reason(penalty: Penalty, info: dict) -> str:
    if info.get("constrained"):
        return "the equality-constrained formulation stops on the ADMM residuals"
    if "smooth" in penalty.capabilities or getattr(penalty, "free_directions", None):
        return ("the penalty leaves some directions entirely free, and their re-optimization "
                "did not reach the exact minimizer")
    return "see the user guide, section 10"


def _map_output(scores, fn):
    if isinstance(scores, list):
        return [fn(s) for s in scores]
    return fn(scores)


class MultiTaskRegressorBase(RegressorMixin, MultiTaskEstimator):
    """Base of multi-task regressors: the squared loss by default, or the loss ``loss``.

    Every regressor takes scikit-learn's regression losses (``loss=``, with ``power``,
    ``epsilon`` and ``quantile`` as their parameters, present on every regressor as on
    scikit-learn's ``TweedieRegressor``, ``HuberRegressor`` and ``QuantileRegressor``):

    * ``"squared"``: ``0.5 (y - z)^2`` (the default);
    * ``"poisson"``, ``"gamma"``, ``"tweedie"`` (``power`` in ``[1, 2]``): half the Tweedie
      deviance with the log link (:mod:`multitask.losses.glm`); ``predict`` returns the mean
      ``exp(z)`` and ``score`` the D^2 of that deviance (``d2_tweedie_score``);
    * ``"huber"`` (``epsilon > 1``): Huber's loss with a scale fitted per task, as
      ``HuberRegressor`` (:mod:`multitask.losses.huber`; the scales are ``scale_``);
    * ``"quantile"`` (``quantile`` in ``(0, 1)``): the pinball loss
      (:mod:`multitask.losses.quantile`).

    A model that cannot fit a loss (no solver of the model applies to it) refuses it at fit
    with a ``ValueError`` naming the model, the loss and why.
    """

    _abstract = True
    _is_classifier = False
    #: The losses ``loss=`` accepts (the first is the default), scikit-learn's names.
    _regression_losses: ClassVar[tuple[str, ...]] = ("squared", "poisson", "gamma", "tweedie",
                                                     "huber", "quantile")
    #: The power of the D^2 ``score`` of the log-link losses (``"tweedie"``: ``power``).
    _deviance_powers: ClassVar[dict[str, float]] = {"poisson": 1.0, "gamma": 2.0}
    #: The losses the task-block solver of Dask input handles (the smooth ones: the pinball
    #: loss has no gradient).
    _distributed_losses: ClassVar[tuple[str, ...]] = ("squared", "poisson", "gamma", "tweedie",
                                                      "huber")
    _fitted_state = {
        # the Huber loss's per-task scales (HuberRegressor's scale_)
        "scale_": Fitted("array", shape=("m",), nonnegative=True,
                         when=lambda est: getattr(est, "loss", "squared") == "huber"),
    }
    #: The documentation of the loss parameters (first in ``{common_parameters}``).
    _LOSS_PARAMETERS_DOC = """loss : {"squared", "poisson", "gamma", "tweedie", "huber", \
"quantile"}, default="squared"
        The loss (scikit-learn's names; :class:`MultiTaskRegressorBase`): least squares, the
        log-link deviances (``predict`` gives ``exp(z)``, ``score`` the D^2), Huber's loss
        with a scale fitted per task (``scale_``), or the pinball loss of quantile
        regression. A model refuses at fit a loss none of its solvers handles.
    power : float, default=1.5
        ``loss="tweedie"``: the power in ``[1, 2]`` (1 Poisson, 2 Gamma).
    epsilon : float, default=1.35
        ``loss="huber"``: residuals beyond ``epsilon`` scales count linearly (``> 1``).
    quantile : float, default=0.5
        ``loss="quantile"``: the quantile in ``(0, 1)`` the model predicts.
    """

    def __init_subclass__(cls, **kwargs):
        if cls.__doc__ and "{common_parameters}" in cls.__doc__:
            cls.__doc__ = cls.__doc__.replace(
                "{common_parameters}",
                cls._LOSS_PARAMETERS_DOC.rstrip() + "\n    {common_parameters}")
        super().__init_subclass__(**kwargs)

    @classmethod
    def _all_params(cls) -> dict[str, Param]:
        params = super()._all_params()
        own = {n: p for n, p in params.items() if n in cls._params}
        losses = {
            "loss": Param(cls._regression_losses[0],
                          [StrOptions(set(cls._regression_losses))]),
            "power": Param(1.5, [Interval(Real, 1, 2, closed="both")]),
            "epsilon": Param(1.35, [Interval(Real, 1, None, closed="left")]),
            "quantile": Param(0.5, [Interval(Real, 0, 1, closed="neither")]),
        }
        rest = {n: p for n, p in params.items() if n not in own and n not in losses}
        return {**own, **losses, **rest}

    def _datafit_options(self) -> dict:
        """The common options, the loss's own parameter, and raw features for the pinball
        loss (its linear program reads the design as given)."""
        options = super()._datafit_options()
        loss = self._loss_name()
        options["center"] = loss not in ("hinge", "quantile")
        own = {"tweedie": "power", "huber": "epsilon", "quantile": "quantile"}.get(loss)
        if own is not None:
            options[own] = float(getattr(self, own))
        return options

    def _make_solver(self, datafit: Datafit, penalty: Penalty) -> Solver:
        """The solver, or a ``ValueError`` naming the model, the loss and why none applies
        (the equality-constrained formulation ``y = X w`` of a model is least squares)."""
        loss = self._loss_name()
        if loss != "squared" and getattr(self, "formulation", None) == "constrained":
            raise ValueError(
                f"{type(self).__name__} cannot fit the {loss!r} loss with "
                "formulation='constrained': the equality-constrained problem (X_t w_t = y_t) "
                "is the squared loss's; use formulation='penalized'.")
        try:
            return super()._make_solver(datafit, penalty)
        except ValueError as exc:
            loss = self._loss_name()
            if loss == "squared":
                raise
            why = str(exc)
            if loss == "quantile" and float(self.alpha_l2):
                why += (" (alpha_l2 > 0 adds a ridge term that is not separable over the "
                        "scores: the pinball loss is then neither a linear program nor "
                        "split by linearized ADMM)")
            raise ValueError(f"{type(self).__name__} cannot fit the {loss!r} loss: {why}") \
                from None

    def _check_distributed_loss(self) -> None:
        loss = self._loss_name()
        if loss not in self._distributed_losses:
            raise ValueError(
                f"The {loss!r} loss is not supported with Dask collections or TaskBlocks: the "
                "task-block solver is an accelerated gradient method, for the smooth losses "
                f"{list(self._distributed_losses)}; fit in memory.")

    def _store_loss_state(self, result: SolverResult, datafit: Datafit) -> None:
        """``scale_`` (shape ``(n_tasks,)``) for the Huber loss: each task's fitted scale
        ``sigma_t`` at the solution (HuberRegressor's ``scale_``)."""
        self.__dict__.pop("scale_", None)
        if self._loss_name() == "huber":
            z = datafit.scores(result.W, result.intercept_variable)
            self.scale_ = np.asarray(datafit.task_scales(z), dtype=np.float64)

    def _append_loss_state(self, data: MultiTaskData, fit) -> None:
        """``scale_`` of the Huber loss gains each new task's scale ``sigma_t`` at its
        solution (the scale its own rows fit, as ``fit`` gives every task)."""
        if self._loss_name() != "huber" or getattr(self, "scale_", None) is None:
            return
        datafit = get_datafit("huber", data, False, epsilon=float(self.epsilon))
        scales = datafit.task_scales(datafit.scores(fit.W, fit.intercept))
        self.scale_ = np.concatenate([np.asarray(self.scale_, dtype=np.float64),
                                      np.asarray(scales, dtype=np.float64)])

    def _link(self, scores):
        """The predicted mean from the scores (``exp`` for the log-link losses)."""
        if self._loss_name() not in ("poisson", "gamma", "tweedie"):
            return scores
        from multitask.losses import Tweedie

        return _map_output(scores, Tweedie.inverse_link)

    def predict(self, X, task=None, *, unknown_tasks="error"):
        """Predicted targets (the mean ``exp(z)`` of the scores ``z`` for the log-link losses),
        in the layout of the training input (see module doc).

        ``unknown_tasks="population"`` scores the rows (long format) of a task the model has
        not seen with the population model, the mean of the fitted tasks' models; the
        default, ``"error"``, refuses them (learn such a task with :meth:`fit_new_tasks`)."""
        if _is_distributed(X) and _new_tasks.check_unknown_tasks(unknown_tasks) == "error":
            check_is_fitted(self, "coef_")  # the link applied on the workers, lazily
            return _distributed().estimator_predict(self, "predict", X, task)
        return self._link(self._scores_or_population(X, task, unknown_tasks))

    def _score_fn(self):
        """``(y, pred, w) -> score``: R^2, or the D^2 of the loss's deviance (log links)."""
        loss = self._loss_name()
        if loss not in ("poisson", "gamma", "tweedie"):
            return _r2
        power = float(self.power) if loss == "tweedie" else self._deviance_powers[loss]
        from sklearn.metrics import d2_tweedie_score, mean_tweedie_deviance

        def d2(y, pred, w) -> float:
            pred = np.maximum(np.asarray(pred, dtype=np.float64), np.finfo(float).tiny)
            try:
                return float(d2_tweedie_score(y, pred, sample_weight=w, power=power))
            except ZeroDivisionError:  # constant targets: the null model's deviance is 0;
                # r2_score's convention (force_finite): 1 for a perfect fit, else 0
                dev = mean_tweedie_deviance(y, pred, sample_weight=w, power=power)
                return 1.0 if dev == 0 else 0.0

        return d2

    def score(self, X, y, task=None, sample_weight=None):
        """Coefficient of determination R^2 of the pooled predictions; for the log-link losses
        (``"poisson"``, ``"gamma"``, ``"tweedie"``) the fraction of the deviance explained,
        D^2 (scikit-learn's ``d2_tweedie_score`` with the loss's power, as its GLMs' ``score``).

        For shared-design data, the score is averaged uniformly over tasks (scikit-learn's
        multi-output convention). ``sample_weight`` weighs the rows as in :meth:`fit` (for a
        shared design ``(n,)`` or ``(n, m)``; for per-task lists a list of arrays); with
        ``missing_targets="ignore"`` the missing targets are left out (each task of a shared
        design is scored on its observed rows).
        """
        if _is_distributed(X):
            _refuse_distributed_weights(sample_weight)
            return _distributed().estimator_score(self, X, y, task)
        pred = self.predict(X, task)
        ignore = getattr(self, "missing_targets", "error") == "ignore"
        fn = self._score_fn()
        if isinstance(pred, list):
            return fn(*_flat_scored(y, pred, sample_weight, ignore))
        pred = np.asarray(pred)
        if pred.ndim == 2 and (ignore or np.ndim(sample_weight) == 2 or fn is not _r2):
            return float(np.mean([fn(*part) for part in
                                  _column_scored(y, pred, sample_weight, ignore)]))
        return fn(*_flat_scored(y, pred, sample_weight, ignore, keep_shape=True))


def _class_shape(binary: tuple, multiclass: tuple):
    """A fitted shape that depends on the number of classes: ``multiclass`` (with the symbol
    ``"K"``) when ``coef_`` is 3-D, ``(n_tasks, n_classes, n_features)``, else ``binary``."""

    def shape(est) -> tuple:
        return multiclass if np.ndim(getattr(est, "coef_", None)) == 3 else binary

    return shape


def _class_axis(est, value, sizes) -> str | None:
    """``coef_`` of more than two classes holds more than two per task."""
    if np.ndim(value) == 3 and np.shape(value)[1] <= 2:
        return (f"has shape {np.shape(value)}: a model of two classes has a coef_ of shape "
                "(n_tasks, n_features)")
    return None


def _class_labels(est, value, sizes) -> str | None:
    """``classes_``: two labels for a ``coef_`` of shape ``(m, d)``, ``K`` for ``(m, K, d)``."""
    coef = getattr(est, "coef_", None)
    want = coef.shape[1] if isinstance(coef, np.ndarray) and coef.ndim == 3 else 2
    if len(value) != want:
        return (f"holds {len(value)} classes but coef_ has shape {np.shape(coef)} ({want} "
                "classes)")
    return None


def _intercepts(est, value, sizes) -> str | None:
    """``intercept_``: finite, but ``-inf`` for a class a task never saw (more than two
    classes), each task keeping a finite intercept."""
    a = np.asarray(value, dtype=np.float64)
    if np.any(np.isnan(a)) or np.any(a == np.inf):
        return "holds NaN or +inf"
    if a.ndim < 2:
        return None if np.all(np.isfinite(a)) else "holds NaN or infinity"
    if a.size and not np.all(np.any(np.isfinite(a), axis=1)):
        return "has a task without any class (every intercept -inf)"
    return None


class MultiTaskClassifierBase(ClassifierMixin, MultiTaskEstimator):
    """Base of multi-task classifiers: one binary problem per task for two classes, one
    multinomial model per task for more.

    Two classes (labels mapped to ``-1 / +1``, ``classes_[1]`` positive): ``coef_`` of shape
    ``(n_tasks, n_features)``, ``intercept_`` ``(n_tasks,)``, the losses of the model
    (``loss=``). ``K > 2`` classes (the label set the tasks share; a task may lack some): the
    logistic loss becomes the multinomial loss of :mod:`multitask.losses.multinomial`, one
    softmax model per task whose ``K`` weight columns are columns of the solver's ``W``
    (``(n_features, n_tasks K)``, column ``t K + k``), so the structure penalty acts on all
    the tasks' and classes' columns (each model family says how its task structure extends to
    them); ``coef_`` has shape ``(n_tasks, n_classes, n_features)`` and ``intercept_``
    ``(n_tasks, n_classes)``, ``-inf`` for a class a task never saw (its probability there is
    0); ``decision_function`` and ``predict_proba`` give ``(n, n_classes)`` per row, as
    scikit-learn's ``LogisticRegression``. The hinge-type losses stay binary (a
    ``ValueError`` says so).
    """

    _abstract = True
    _is_classifier = True
    _fitted_state = {
        "classes_": Fitted("labels", shape=(None,), check=_class_labels),
        "coef_": Fitted("array", shape=_class_shape(("m", "d"), ("m", "K", "d")),
                        check=_class_axis),
        "intercept_": Fitted("array", shape=_class_shape(("m",), ("m", "K")), finite=False,
                             check=_intercepts),
        "coef_variable_": Fitted("array", shape=("d", "c"), check=matches_coef(
            lambda V, _: V.T, "coef_ is its transpose")),
        "intercept_variable_": Fitted("array", shape=("c",), optional=True),
    }

    # ------------------------------------------------------------------ more than two classes
    def _make_datafit(self, data: MultiTaskData) -> Datafit:
        """The model's loss, or for ``K > 2`` classes (the data layer's class codes) the
        multinomial loss, which only the logistic loss extends to."""
        n_classes = class_count(data)
        if n_classes <= 2:
            return super()._make_datafit(data)
        loss = self._loss_name()
        if loss != "logistic":
            raise ValueError(
                f"Only binary classification is supported. {type(self).__name__} got "
                f"{n_classes} classes: more than two classes are fitted by the multinomial "
                f"model of the logistic loss, and the {loss!r} loss is a two-class loss. Pass "
                "loss='logistic'.")
        options = {k: v for k, v in self._datafit_options().items()
                   if k in ("alpha_l2", "center")}
        return Multinomial(data, bool(self.fit_intercept), n_classes=n_classes, **options)

    def _warm_start_point(self, data: MultiTaskData, shape: tuple[int, ...]):
        n_classes = class_count(data) if isinstance(data, MultiTaskData) else 2
        if n_classes > 2:  # the solver's variable has a column per (task, class)
            shape = (*shape[:-1], shape[-1] * n_classes)
            if not is_multiclass(self) or len(self.classes_) != n_classes:
                return None, None
        return super()._warm_start_point(data, shape)

    def _store_result(self, result: SolverResult, penalty: Penalty, data: MultiTaskData,
                      solver: Solver) -> None:
        super()._store_result(result, penalty, data, solver)
        if not is_multiclass(self):
            return
        n_classes = len(self.classes_)
        m = len(self.tasks_)
        if self.coef_.shape[0] != m * n_classes:
            raise ValueError(f"{type(self).__name__}: more than two classes are not supported "
                             "on distributed input (Dask collections or TaskBlocks): fit in "
                             "memory.")
        self.coef_ = np.ascontiguousarray(self.coef_.reshape(m, n_classes, -1))
        self.intercept_ = self.intercept_.reshape(m, n_classes)

    def fit_new_tasks(self, X, y, task=None, sample_weight=None, *, strength="auto"):
        if is_multiclass(self):
            raise ValueError(
                f"fit_new_tasks learns new tasks of two-class models only: this "
                f"{type(self).__name__} has {len(self.classes_)} classes (a new task's "
                "multinomial model is not available yet). Refit with the new tasks' rows.")
        return super().fit_new_tasks(X, y, task, sample_weight, strength=strength)

    fit_new_tasks.__doc__ = MultiTaskEstimator.fit_new_tasks.__doc__

    def _scores_or_population(self, X, task, unknown_tasks):
        if is_multiclass(self) and unknown_tasks != "error":
            raise ValueError(
                f"unknown_tasks={unknown_tasks!r}: the population model is available for "
                f"two-class models only; this {type(self).__name__} has "
                f"{len(self.classes_)} classes.")
        return super()._scores_or_population(X, task, unknown_tasks)

    def _scores(self, X, task=None):
        """The scores of the rows (two classes: ``x^T w_t + b_t``; more: ``(n, K)`` per row of
        ``x^T w_{t,k} + b_{t,k}``), in the layout of the training input."""
        if not is_multiclass(self) or _is_distributed(X):
            return super()._scores(X, task)
        check_is_fitted(self, "coef_")
        data = self._prediction_data(X, task)
        n_classes = len(self.classes_)
        m, d = data.n_tasks, data.n_features
        for name, shape in (("coef_", (m, n_classes, d)), ("intercept_", (m, n_classes))):
            a = getattr(self, name, None)
            if not isinstance(a, np.ndarray) or a.shape != shape or a.dtype.kind not in "fiub":
                got = (f"shape {a.shape} and dtype {a.dtype}" if isinstance(a, np.ndarray)
                       else type(a).__name__)
                raise FittedStateError(
                    f"{type(self).__name__}.{name} must be an array of shape {shape} for its "
                    f"{m} task(s), {n_classes} classes and {d} feature(s), got {got}: the "
                    "fitted attributes are inconsistent.")
        W = self.coef_.reshape(m * n_classes, d).T
        Z = class_scores_by_row(data, W, self.intercept_.ravel(), n_classes)
        if is_task_list(X):
            return [Z[data.offsets[t]:data.offsets[t + 1]] for t in range(m)]
        if data.shared:
            return np.ascontiguousarray(Z.reshape(m, -1, n_classes).transpose(1, 0, 2))
        if data.row_order is None:
            return Z
        out = np.empty_like(Z)
        out[data.row_order] = Z
        return out

    def _prediction_data(self, X, task) -> MultiTaskData:
        """The rows to predict as :class:`~multitask.data.MultiTaskData` over the fitted
        tasks (the conversion of :meth:`MultiTaskEstimator._scores`)."""
        if is_task_list(X):
            data, _ = as_multitask_data(X, None, known_tasks=self.tasks_,
                                        n_features=self.n_features_in_)
            return data
        X = self._validate_X(X, reset=False)
        if (self.input_format_ == "long" and task is None and self.task_column is None
                and len(self.tasks_) > 1):
            raise ValueError(
                "This model was fitted on long-format data with several tasks: pass the "
                "task id of each row as task=, or use task_column."
            )
        try:
            data, _ = as_multitask_data(X, None, task, task_column=self.task_column,
                                        known_tasks=self.tasks_)
        except ValueError as exc:
            if str(exc).startswith("Unknown task id"):
                raise ValueError(str(exc) + _new_tasks.UNKNOWN_TASK_HINT) from None
            raise
        return data

    # ------------------------------------------------------------------ predictions
    def decision_function(self, X, task=None, *, unknown_tasks="error"):
        """Scores ``x^T w_t + b_t``; positive means ``classes_[1]``. With more than two
        classes, the scores ``x^T w_{t,k} + b_{t,k}`` of every class (``-inf`` for a class
        the row's task never saw): shape ``(n, n_classes)`` for long format (a list of those
        for per-task lists), ``(n, n_tasks, n_classes)`` for a shared design.

        ``unknown_tasks="population"`` scores the rows (long format) of a task the model has
        not seen with the population model, the mean of the fitted tasks' models (two
        classes); the default, ``"error"``, refuses them (learn such a task with
        :meth:`fit_new_tasks`)."""
        return self._scores_or_population(X, task, unknown_tasks)

    def predict(self, X, task=None, *, unknown_tasks="error"):
        """Predicted class labels, in the layout of the training input (``unknown_tasks`` as
        in :meth:`decision_function`)."""
        if _is_distributed(X) and unknown_tasks == "error":
            return _distributed().estimator_predict(self, "predict", X, task)
        scores = self.decision_function(X, task, unknown_tasks=unknown_tasks)
        if is_multiclass(self):
            return _map_output(scores, lambda s: self.classes_[np.argmax(s, axis=-1)])
        return _map_output(scores, lambda s: self.classes_[(s > 0).astype(int)])

    def _has_proba(self) -> bool:
        return self._loss_name() == "logistic"

    @available_if(_has_proba)
    def predict_proba(self, X, task=None, *, unknown_tasks="error"):
        """Class probabilities ``[1 - p, p]`` with ``p = sigmoid(score)`` (logistic loss only).

        Shape ``(n, 2)`` for long format (a list of those for per-task lists); for a shared
        design, shape ``(n, m)`` holding ``P(classes_[1])`` per task (scikit-learn's multilabel
        convention). With more than two classes, the softmax of the task's scores over the
        classes (0 for a class the task never saw), in the layout of
        :meth:`decision_function`: ``(n, n_classes)``, or ``(n, n_tasks, n_classes)`` for a
        shared design. ``unknown_tasks`` as in :meth:`decision_function`.
        """
        if _is_distributed(X) and unknown_tasks == "error":
            return _distributed().estimator_predict(self, "predict_proba", X, task)
        scores = self.decision_function(X, task, unknown_tasks=unknown_tasks)
        if is_multiclass(self):
            return softmax_scores(scores)

        def proba(s):
            p = expit(s)
            return np.stack([1.0 - p, p], axis=-1)

        if isinstance(scores, np.ndarray) and scores.ndim == 2:  # shared design
            return expit(scores)
        return _map_output(scores, proba)

    def score(self, X, y, task=None, sample_weight=None):
        """Mean accuracy over all (row, task) predictions, weighted by ``sample_weight`` (as in
        :meth:`fit`; a weight per row counts for each of its tasks); with
        ``missing_targets="ignore"`` over the observed targets only."""
        if _is_distributed(X):
            _refuse_distributed_weights(sample_weight)
            return _distributed().estimator_score(self, X, y, task)
        pred = self.predict(X, task)
        ignore = getattr(self, "missing_targets", "error") == "ignore"
        yt, pt, w = _flat_scored(y, pred, sample_weight, ignore)
        return accuracy_score(yt, pt, sample_weight=w)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # more than two classes: the multinomial model of the logistic loss
        tags.classifier_tags.multi_class = self._loss_name() == "logistic"
        tags.target_tags.multi_output = True
        return tags


def _r2(y, pred, w) -> float:
    return float(r2_score(y, pred, sample_weight=w))


def _score_weights(sample_weight, shape: tuple[int, ...]) -> np.ndarray | None:
    """Weights of scored targets of ``shape`` (``(n,)`` or ``(n, m)``): ``(n,)`` weights apply
    to every task of a row; ``(n, m)`` ones to one (row, task) pair each. None without."""
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight, dtype=np.float64)
    if len(shape) == 2 and w.shape == shape[:1]:
        w = np.repeat(w[:, None], shape[1], axis=1)
    if w.shape != shape:
        raise ValueError(f"sample_weight has shape {w.shape} but the targets have shape "
                         f"{shape}.")
    return w


def _flat_scored(y, pred, sample_weight, ignore_missing: bool, keep_shape: bool = False):
    """``(y, pred, w)`` of the scored (row, task) pairs, flattened (per-task lists
    concatenated), the missing targets left out with ``ignore_missing``. With ``keep_shape``
    and no missing target the arrays keep their shape (scikit-learn's multi-output
    metrics)."""
    if isinstance(pred, list):
        yt = np.concatenate([np.ravel(v) for v in y])
        pt = np.concatenate([np.ravel(v) for v in pred])
        w = None
        if sample_weight is not None:
            w = (np.concatenate([np.ravel(v) for v in sample_weight])
                 if isinstance(sample_weight, (list, tuple)) else np.ravel(sample_weight))
            w = _score_weights(w, yt.shape)
    else:
        yt, pt = np.asarray(y), np.asarray(pred)
        if yt.ndim == 2 and yt.shape[1] == 1 and pt.ndim == 1:
            yt = yt[:, 0]
        w = _score_weights(sample_weight, yt.shape)
    seen = observed_mask(yt) if ignore_missing else None
    if seen is not None and not seen.all():
        return yt[seen], pt[seen], _unit_weights(None if w is None else w[seen])
    if keep_shape:  # (n,) weights of an (n, m) table: scikit-learn repeats them per column
        return yt, pt, _unit_weights(None if w is None else (w[:, 0] if w.ndim == 2 else w))
    return yt.ravel(), pt.ravel(), _unit_weights(None if w is None else w.ravel())


def _unit_weights(w: np.ndarray | None) -> np.ndarray | None:
    """``w / 2^e`` with ``2^(e-1) <= max(w) < 2^e``: a score is a ratio of weighted sums, which
    a common factor does not change, and the largest weight in ``[1/2, 1)`` keeps those sums
    clear of overflow (weights near the largest float gave NaN) and underflow. Exact (a power
    of two)."""
    if w is None or not w.size:
        return w
    top = float(np.max(w))
    return np.ldexp(w, -int(np.frexp(top)[1])) if np.isfinite(top) and top > 0 else w


def _column_scored(y, pred, sample_weight, ignore_missing: bool):
    """``(y_t, pred_t, w_t)`` per task (column) of a shared design, each on its observed
    rows with ``ignore_missing``."""
    Y, P = np.asarray(y), np.asarray(pred)
    w = _score_weights(sample_weight, Y.shape)
    seen = observed_mask(Y) if ignore_missing else np.ones(Y.shape, dtype=bool)
    out = []
    for t in range(Y.shape[1]):
        rows = seen[:, t]
        out.append((Y[rows, t].astype(np.float64), P[rows, t],
                    _unit_weights(None if w is None else w[rows, t])))
    return out


def _refuse_distributed_weights(sample_weight) -> None:
    """Row weights are not supported on distributed input: a clear error (not ignored)."""
    if sample_weight is not None:
        raise ValueError("sample_weight is not supported with Dask collections or TaskBlocks: "
                         "fit in memory, or repeat the rows to weight them.")


def _is_distributed(X) -> bool:
    """Whether ``X`` is a Dask collection or a ``TaskBlocks``: the estimators then fit,
    predict and score on the cluster (:mod:`multitask.solvers.distributed`)."""
    return bool(getattr(X, "_is_task_blocks", False)) or hasattr(X, "__dask_graph__")


def _distributed():
    from multitask.solvers import distributed  # imported on use: Dask is optional

    return distributed


def _check_classification_targets(y) -> None:
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

