"""multitask: regularized multi-task learning with a scikit-learn API.

Models are in :mod:`multitask.estimators` (re-exported here); data sets in
:mod:`multitask.datasets`; metrics in :mod:`multitask.metrics`.
"""

from multitask.data import MultiTaskData, as_multitask_data
from multitask.estimators import *  # noqa: F403
from multitask.estimators import __all__ as _estimators

__version__ = "0.1.0"

__all__ = ["MultiTaskData", "as_multitask_data", *_estimators]
