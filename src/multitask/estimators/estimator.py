"""The generic multi-task estimator every model is a preset of (:class:`MultiTaskEstimator`;
see :mod:`multitask.estimators.base` for what a preset declares and the fitted attributes).

Its ``__init__`` is generated from the declared parameters (:mod:`multitask.estimators.params`),
its ``alpha_max`` and default grid come from the mixin
:class:`~multitask.estimators.regularization_grid.RegularizationGrid`, ``fit_new_tasks`` from
:class:`~multitask.estimators.new_task_methods.NewTaskMethods`; this module holds the rest: the
hooks of the presets, the conversion of the three input formats, warm starts, the call of the
solver, the fitted attributes, and the scores of new rows in the layout of the input.
"""

from __future__ import annotations

import warnings
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

import multitask.estimators.new_tasks as _new_tasks
from multitask.data import (
    MultiTaskData,
    as_multitask_data,
    check_not_complex,
    check_sparse_structure,
    is_task_list,
    unstack_predictions,
)
from multitask.data.converted_inputs import serving_conversions
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
from multitask.estimators.inputs import (
    check_classification_targets,
    distributed_solvers,
    is_distributed,
    refuse_distributed_weights,
)
from multitask.estimators.new_task_methods import NewTaskMethods
from multitask.estimators.params import (
    COMMON_PARAMETERS_DOC,
    Param,
    check_renamed,
    common_params,
    make_init,
    validate_params,
)
from multitask.estimators.regularization_grid import RegularizationGrid
from multitask.losses import Datafit, get_datafit
from multitask.penalties.base import Penalty
from multitask.solvers import SOLVERS, Problem, Solver, choose, make_solver
from multitask.solvers.result import SolverResult

#: The fitted attributes the conversion of training input sets (:meth:`_convert`).
_INPUT_ATTRIBUTES = ("n_features_in_", "feature_names_in_")


class NotCertifiedWarning(UserWarning):
    """A convex model's fit whose ``optimality_`` is not a certified duality gap (no
    computable dual: the equality-constrained robust model, a solver on task blocks held
    apart; the user guide, section 10, lists the cases): its
    ``converged_`` rests on the prox-gradient residual instead."""


class TaskStructureWarning(UserWarning):
    """A model that needs a structure of the tasks (a time order, a task graph) was fitted
    with one the library chose, not one the user gave."""


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


class MultiTaskEstimator(NewTaskMethods, RegularizationGrid, BaseEstimator):
    """Base of every multi-task model (not used directly; see :mod:`multitask.estimators.base`)."""

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

    def _warm_start_settings(self) -> dict | None:
        """Settings under which a fit in a warm-started path serves only as the next fit's
        warm start (None: none; the cross-validation's paths fit the candidates that
        successive halving left behind with them, unscored:
        :func:`multitask.model_selection._halving.round_jobs`)."""
        return None

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
        cls.__init__ = make_init(cls._all_params(), cls._is_classifier)  # type: ignore[misc]
        if cls.__doc__ and "{common_parameters}" in cls.__doc__:
            cls.__doc__ = cls.__doc__.replace("{common_parameters}", COMMON_PARAMETERS_DOC)

    @classmethod
    def _all_params(cls) -> dict[str, Param]:
        params = dict(cls._params)
        if cls._is_classifier and cls._losses:
            params["loss"] = Param(cls._losses[0], [StrOptions(set(cls._losses))])
        common = common_params(cls._is_classifier)
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
        """Check every hyper-parameter against its declared constraints (clear errors;
        :func:`~multitask.estimators.params.validate_params`: values of immutable built-in
        types that passed once for this class are not checked again)."""
        validate_params(self)

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
        the row weights and the missing targets (``missing_targets``) in the data.

        Along a path (:func:`multitask.model_selection.fit_path`) the conversion of the same
        input objects is made once and reused, the fitted input attributes
        (``n_features_in_``, ``feature_names_in_``) set as it set them
        (:mod:`multitask.data.converted_inputs`)."""
        memo = serving_conversions(self)
        inputs = (X, y, task, sample_weight)
        options = (type(self), getattr(self, "missing_targets", None),
                   getattr(self, "task_column", None))
        kept = None if memo is None else memo.get(inputs, options)
        if kept is not None:
            converted, attributes = kept
            for name in _INPUT_ATTRIBUTES:
                if name in attributes:
                    setattr(self, name, attributes[name])
                else:
                    self.__dict__.pop(name, None)
            return converted
        converted = self._convert_input(X, y, task, sample_weight)
        if memo is not None:
            memo.put(inputs, options, (converted, {name: getattr(self, name)
                                                   for name in _INPUT_ATTRIBUTES
                                                   if hasattr(self, name)}))
        return converted

    def _convert_input(self, X, y, task, sample_weight=None):
        """:meth:`_convert` itself: checks and converts the input."""
        missing = getattr(self, "missing_targets", None)
        if self._is_classifier and y is not None and not isinstance(y, (list, tuple)):
            check_classification_targets(y)
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
        if is_distributed(X):  # Dask collections or TaskBlocks (docs/distributed.md)
            refuse_distributed_weights(sample_weight)
            self._check_distributed_loss()
            return distributed_solvers().estimator_fit(self, X, y, task)
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


    def _check_linear_structure(self, what: str) -> None:
        """Refuse ``what`` (new tasks, the population model) for a model without a penalty on
        linear weights (the kernel model)."""
        cls = type(self)
        if (cls._make_penalty is MultiTaskEstimator._make_penalty
                and cls._new_task_prior is MultiTaskEstimator._new_task_prior):
            raise NotImplementedError(
                f"{cls.__name__} has no penalty on linear task weights: {what} is not "
                "available for it (refit with the new tasks' rows).")


    # ------------------------------------------------------------------ predict
    def _scores(self, X, task=None):
        check_is_fitted(self, "coef_")
        if is_distributed(X):
            return distributed_solvers().estimator_predict(self, "_scores", X, task)
        data = self._prediction_data(X, task)
        self._check_prediction_state(data)
        z = data.matvec(self.coef_.T) + data.expand(self.intercept_)
        return self._user_layout(X, data, z)

    def _prediction_data(self, X, task) -> MultiTaskData:
        """The rows to predict as :class:`~multitask.data.MultiTaskData` over the fitted
        tasks: per-task lists, or a design checked by :meth:`_validate_X` with the task of
        each row (``task=`` or ``task_column``; needed for long format of several tasks); an
        unknown task id is refused with the hint of
        :data:`~multitask.estimators.new_tasks.UNKNOWN_TASK_HINT`."""
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

    def _check_prediction_state(self, data: MultiTaskData, n_classes: int | None = None
                                ) -> None:
        """The shapes prediction relies on, checked on every call (a few comparisons):
        ``coef_`` of shape ``(m, d)`` and ``intercept_`` of shape ``(m,)`` (with
        ``n_classes``: ``(m, n_classes, d)`` and ``(m, n_classes)``), real numbers, for the
        ``m`` tasks and ``d`` features of ``data``. A model whose attributes were edited in
        memory gets this ``ValueError`` rather than an out-of-bounds read in a compiled
        kernel (files are checked whole when loaded: :mod:`multitask.estimators.fitted_state`).
        """
        m, d = data.n_tasks, data.n_features
        if n_classes is None:
            shapes = {"coef_": (m, d), "intercept_": (m,)}
            counts = f"{m} task(s) and {d} feature(s)"
        else:
            shapes = {"coef_": (m, n_classes, d), "intercept_": (m, n_classes)}
            counts = f"{m} task(s), {n_classes} classes and {d} feature(s)"
        for name, shape in shapes.items():
            a = getattr(self, name, None)
            if not isinstance(a, np.ndarray) or a.shape != shape or a.dtype.kind not in "fiub":
                got = (f"shape {a.shape} and dtype {a.dtype}" if isinstance(a, np.ndarray)
                       else type(a).__name__)
                raise FittedStateError(
                    f"{type(self).__name__}.{name} must be an array of shape {shape} for its "
                    f"{counts}, got {got}: the fitted attributes are inconsistent.")

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

