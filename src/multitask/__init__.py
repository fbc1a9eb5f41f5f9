"""multitask: regularized multi-task learning with a scikit-learn API.

Models are in :mod:`multitask.estimators` (re-exported here); :class:`MultiTaskCV` in
:mod:`multitask.model_selection`; data sets in :mod:`multitask.datasets`; metrics in
:mod:`multitask.metrics`; the building blocks in :mod:`multitask.losses`,
:mod:`multitask.penalties` and :mod:`multitask.solvers`.
"""

from multitask.data import MultiTaskData, as_multitask_data
from multitask.estimators import *  # noqa: F403
from multitask.estimators import __all__ as _estimators
from multitask.model_selection import MultiTaskCV

__version__ = "0.2.0.dev0"

__all__ = ["MultiTaskCV", "MultiTaskData", "as_multitask_data", *_estimators]
