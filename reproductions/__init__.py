"""Reproductions of the papers behind the models of :mod:`multitask` (not part of the package).

One module per paper, each a client of the public API of :mod:`multitask` only (estimators,
:class:`~multitask.MultiTaskCV` and :mod:`multitask.model_selection`, :mod:`multitask.metrics`,
:mod:`multitask.datasets`; the public solver classes where a table is about a solver). Run
from the root of a clone::

    python -m reproductions --list
    python -m reproductions NAME --dataset D [--repeats R] [--out DIR] [--quick]

Every module defines ``NAME``, ``DATASETS`` (the first is the default), ``DESCRIPTION``,
``add_arguments(parser)`` (its own options) and ``run(args) -> list[dict]`` (result rows, see
:mod:`reproductions.common`).
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["EXPERIMENTS", "load"]

#: Experiment name -> module of this package.
EXPERIMENTS = {
    "sparse-low-rank": "sparse_low_rank",
    "robust-dc": "robust_dc",
    "capped-trace": "capped_trace",
    "l1inf": "l1inf",
    "mtmkl": "mtmkl",
}


def load(name: str) -> ModuleType:
    """The module of the experiment ``name`` (underscores accepted for dashes).

    Raises
    ------
    ValueError
        For an unknown name.
    """
    key = name.replace("_", "-")
    if key not in EXPERIMENTS:
        raise ValueError(f"Unknown experiment {name!r}; choose from {sorted(EXPERIMENTS)}.")
    return importlib.import_module(f"{__name__}.{EXPERIMENTS[key]}")
