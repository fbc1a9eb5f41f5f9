"""Registry of the benchmarks run by the command line (``multitask benchmark``).

An experiment is a function ``run(args) -> list[dict]`` decorated with :func:`register`.
It receives the parsed command-line namespace and returns result rows with the columns of
:data:`RESULT_COLUMNS`; the command line prints and writes them.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field

RESULT_COLUMNS = (
    "experiment",
    "dataset",
    "setting",
    "method",
    "metric",
    "mean",
    "std",
    "repeats",
    "fit_seconds",
)


@dataclass
class Experiment:
    """A registered benchmark.

    Attributes
    ----------
    name : str
        Name used on the command line, e.g. ``"sparse-low-rank"``.
    run : callable
        ``run(args) -> list[dict]``.
    datasets : tuple of str
        Values accepted by ``--dataset``; the first is the default.
    description : str
        One line describing it.
    add_arguments : callable or None
        ``add_arguments(parser)`` adds experiment-specific options.
    """

    name: str
    run: Callable
    datasets: tuple[str, ...]
    description: str
    add_arguments: Callable | None = None
    extra: dict = field(default_factory=dict)


_REGISTRY: dict[str, Experiment] = {}


def register(
    name: str,
    *,
    datasets: tuple[str, ...],
    description: str,
    add_arguments: Callable | None = None,
) -> Callable:
    """Register ``run(args)`` as the experiment ``name``."""

    def decorator(func: Callable) -> Callable:
        _REGISTRY[name] = Experiment(name, func, tuple(datasets), description, add_arguments)
        return func

    return decorator


def discover() -> dict[str, Experiment]:
    """Import every module of :mod:`multitask.experiments` and return the registry."""
    import multitask.experiments as pkg

    for info in pkgutil.iter_modules(pkg.__path__):
        if not info.name.startswith("_") and info.name != "registry":
            importlib.import_module(f"{pkg.__name__}.{info.name}")
    return dict(sorted(_REGISTRY.items()))
