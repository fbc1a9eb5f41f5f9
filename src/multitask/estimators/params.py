"""The declared hyper-parameters of the estimators and their validation.

A preset declares each of its hyper-parameters as a :class:`Param` (default, scikit-learn
constraints, keyword-only or not); :func:`common_params` are those every model has after its
own, :func:`make_init` writes the ``__init__`` scikit-learn requires from them, and
:func:`validate_params` checks a model's values against them (plus finiteness and the solver
names the model accepts), remembering the values of immutable built-in types found valid per
class so that ``fit`` then ``fit_new_tasks`` and the fits of a grid search check them once.
A parameter of an earlier version is refused naming what replaced it
(:class:`RenamedParameterError`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any

from sklearn.utils._param_validation import Interval, StrOptions, validate_parameter_constraints

from multitask.data import MISSING_TARGETS
from multitask.solvers import SOLVERS, Solver

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



def common_params(classifier: bool) -> dict[str, Param]:
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


#: Hyper-parameter values found valid, per class (:func:`validate_params`):
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


def make_init(params: dict[str, Param], classifier: bool):
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



def validate_params(est) -> None:
    """Check every hyper-parameter of the estimator ``est`` against its declared constraints
    (clear errors): scikit-learn's constraints, finiteness where declared, the solver names
    the model accepts, then the model's own checks across parameters (``_check_params``).

    Values that passed once for this class are not checked again (``fit`` then
    ``fit_new_tasks``, the fits of a grid search): values of immutable built-in types only
    (:func:`_validated_key`); arrays and objects are checked every time."""
    key = _validated_key(est)
    if key is not None and key in _VALIDATED:
        return
    params = est._all_params()
    values = est.get_params(deep=False)
    constraints = {name: p.constraints for name, p in params.items() if p.constraints}
    validate_parameter_constraints(constraints, values, caller_name=type(est).__name__)
    for name, p in params.items():
        v = values.get(name)
        if p.finite and isinstance(v, Real) and not isinstance(v, bool):
            try:
                finite = math.isfinite(float(v))
            except OverflowError:  # an integer beyond the float range
                finite = False
            if not finite:
                raise ValueError(f"The {name!r} parameter of {type(est).__name__} must be "
                                 f"finite, got {v!r}.")
    if isinstance(est.solver, str) and est.solver != "auto":
        accepted = est._accepted_solvers()
        if est.solver not in accepted or est.solver not in SOLVERS:
            raise ValueError(f"The 'solver' parameter of {type(est).__name__} must be "
                             f"'auto', one of {list(accepted)} or a Solver, got "
                             f"{est.solver!r}.")
    est._check_params()
    if key is not None:
        if len(_VALIDATED) >= _VALIDATED_MAX:
            _VALIDATED.clear()
        _VALIDATED.add(key)
