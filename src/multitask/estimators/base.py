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

Where each part lives (every name importable from here as before):

* :mod:`multitask.estimators.params`: :class:`Param`, the constraints :data:`nonnegative` and
  :data:`positive`, the common parameters, the generated ``__init__`` and the validation;
* :mod:`multitask.estimators.estimator`: :class:`MultiTaskEstimator` (input conversion, the
  call of the solver, the fitted attributes, the scores of new rows) and the warnings of
  ``fit`` (:class:`NotCertifiedWarning`, :class:`TaskStructureWarning`);
* :mod:`multitask.estimators.regularization_grid`: ``alpha_max``, ``default_grid`` and
  :class:`GridSpan`;
* :mod:`multitask.estimators.new_task_methods`: ``fit_new_tasks`` and the population model;
* :mod:`multitask.estimators.regressor` and :mod:`multitask.estimators.classifier`: the two
  bases, their losses, predictions and scores (:mod:`multitask.estimators.scoring`);
* :mod:`multitask.estimators.inputs`: distributed input, classification targets.
"""

from __future__ import annotations

from multitask.data import is_task_list as is_task_list
from multitask.estimators.classifier import MultiTaskClassifierBase as MultiTaskClassifierBase
from multitask.estimators.estimator import FITTED_STATE as FITTED_STATE
from multitask.estimators.estimator import MultiTaskEstimator as MultiTaskEstimator
from multitask.estimators.estimator import NotCertifiedWarning as NotCertifiedWarning
from multitask.estimators.estimator import TaskStructureWarning as TaskStructureWarning
from multitask.estimators.inputs import is_sparse_input as is_sparse_input
from multitask.estimators.params import _VALIDATED as _VALIDATED
from multitask.estimators.params import COMMON_PARAMETERS_DOC as COMMON_PARAMETERS_DOC
from multitask.estimators.params import DEFAULT_TOL as DEFAULT_TOL
from multitask.estimators.params import MAX_ITER_LIMIT as MAX_ITER_LIMIT
from multitask.estimators.params import Param as Param
from multitask.estimators.params import RenamedParameterError as RenamedParameterError
from multitask.estimators.params import _validated_key as _validated_key
from multitask.estimators.params import check_renamed as check_renamed
from multitask.estimators.params import nonnegative as nonnegative
from multitask.estimators.params import positive as positive
from multitask.estimators.regressor import MultiTaskRegressorBase as MultiTaskRegressorBase
from multitask.estimators.regularization_grid import GridSpan as GridSpan
from multitask.solvers.newton import NEWTON_AUTO_MAX_ITER as NEWTON_AUTO_MAX_ITER

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
