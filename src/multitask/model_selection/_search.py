"""Where :class:`MultiTaskCV` and the cross-validation engine were defined before they were
split by responsibility: their names, imported from here by earlier code, still are.

* :mod:`multitask.model_selection._cv_estimator`: :class:`MultiTaskCV`;
* :mod:`multitask.model_selection._engine`: :func:`cross_validate_grid`, the jobs and scores;
* ``_cv_data``, ``_folds``, ``_grids``: the engine's view of the data, the selection rules and
  folds, the grids and their widening.
"""

from __future__ import annotations

from multitask.data import is_task_list
from multitask.model_selection._cv_estimator import MAX_GRID_SIZE, MultiTaskCV
from multitask.model_selection._engine import cross_validate_grid
from multitask.model_selection._folds import SELECTION_RULES, SMALL_TASK_ROWS

# the models whose held parameters were noted (tests reset the set through this module)
from multitask.model_selection._grids import _HELD_NOTED as _HELD_NOTED

__all__ = ["MAX_GRID_SIZE", "SELECTION_RULES", "SMALL_TASK_ROWS", "MultiTaskCV",
           "cross_validate_grid", "is_task_list"]
