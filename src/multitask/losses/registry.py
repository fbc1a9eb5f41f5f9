"""The losses by name: :func:`register_loss` fills :data:`LOSSES`, :func:`get_datafit` reads it.

A loss module registers each of its datafit classes under its ``name`` when it is imported
(``register_loss(Poisson)`` at the end of the module); :mod:`multitask.losses` imports every
loss module, so that the registry is complete once the package is imported. A new loss is one
module that defines a :class:`~multitask.losses.base.Datafit` subclass, registers it, and is
imported by the package's ``__init__``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the registry imports no loss: every loss module imports it
    from multitask.data import MultiTaskData
    from multitask.losses.base import Datafit

__all__ = ["LOSSES", "get_datafit", "register_loss"]

#: Every registered datafit class by its ``name`` (``"squared"``, ``"logistic"``, ...).
LOSSES: dict[str, type[Datafit]] = {}


def register_loss(cls: type[Datafit], name: str | None = None) -> type[Datafit]:
    """Register the datafit class ``cls`` under ``name`` (default: ``cls.name``) and return it
    (usable as a class decorator). Registering another class under a taken name is an error;
    registering the same class again is a no-op."""
    key = cls.name if name is None else str(name)
    taken = LOSSES.get(key)
    if taken is not None and taken is not cls:
        raise ValueError(f"The loss name {key!r} of {cls.__qualname__} is taken by "
                         f"{taken.__qualname__}.")
    LOSSES[key] = cls
    return cls


def get_datafit(name: str, data: MultiTaskData, fit_intercept: bool = True,
                **options) -> Datafit:
    """Build the registered datafit ``name`` (:data:`LOSSES`: ``"squared"``, ``"logistic"``,
    ``"squared_hinge"``, ``"hinge"``, ...) on ``data``.

    ``options`` (``alpha_l2``, ``center``, ``use_gram``, and a loss's own parameters) are passed
    to its constructor.
    """
    try:
        cls = LOSSES[name]
    except KeyError:
        raise ValueError(f"Unknown loss {name!r}; choose from {sorted(LOSSES)}.") from None
    return cls(data, fit_intercept, **options)
