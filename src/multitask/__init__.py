"""multitask: regularized multi-task learning with a scikit-learn API.

Models are in :mod:`multitask.estimators` (re-exported here); :class:`MultiTaskCV` in
:mod:`multitask.model_selection`; data sets in :mod:`multitask.datasets`; metrics in
:mod:`multitask.metrics`; the building blocks in :mod:`multitask.losses`,
:mod:`multitask.penalties` and :mod:`multitask.solvers`.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names for type checkers and the documentation; loaded lazily below
    from multitask.data import MultiTaskData as MultiTaskData
    from multitask.data import as_multitask_data as as_multitask_data
    from multitask.estimators import *  # noqa: F403
    from multitask.model_selection import MultiTaskCV as MultiTaskCV

__version__ = "0.2.0.dev0"

# ``import multitask`` imports nothing heavy (scikit-learn, scipy, numba load when a name
# needs them): the public names below, ``__all__`` and the submodules are loaded on first
# access (PEP 562), so ``multitask.L21Regressor``, ``from multitask import L21Regressor``,
# ``from multitask import *`` and ``multitask.metrics`` work as with eager imports.
_NAMES = {"MultiTaskData": "multitask.data", "as_multitask_data": "multitask.data",
          "MultiTaskCV": "multitask.model_selection"}


def _all() -> list[str]:
    from multitask.estimators import __all__ as estimators

    return ["MultiTaskCV", "MultiTaskData", "as_multitask_data", *estimators]


def __getattr__(name: str) -> Any:
    if name == "__all__":
        value: Any = _all()
    elif name in _NAMES:
        value = getattr(importlib.import_module(_NAMES[name]), name)
    elif name.startswith("_"):  # probes such as __wrapped__ load nothing
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    elif importlib.util.find_spec(f"{__name__}.{name}"):
        return importlib.import_module(f"{__name__}.{name}")  # a submodule
    else:
        estimators = importlib.import_module("multitask.estimators")
        if name not in estimators.__all__:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(estimators, name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_all()))
