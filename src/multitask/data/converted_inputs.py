"""Training input converted once and handed to every fit of a path on the same arrays.

A regularization path (and each fold of a cross-validation) fits one estimator again and
again on the same arrays, changing only its hyper-parameters. Converting the input
(:func:`~multitask.data.as_multitask_data`: checks, the task grouping, the weights) gives
the same :class:`~multitask.data.MultiTaskData` every time, so the path converts it once:
:class:`ConvertedInputs` keeps the conversions of one estimator, and
:meth:`ConvertedInputs.serving` makes them the ones that estimator's ``fit`` reads. Every fit
then also shares the caches of that one data object (centring, Gram matrices, the losses'
eigendecompositions), which are computed from the data alone.

A conversion is looked up by the identity of the input objects (``X``, ``y``, ``task``,
``sample_weight``) and by the options that change it (compared by equality), and only for
the estimator object the memo serves: another estimator fitted inside that fit (a stage of a
meta-model, on arrays of its own) converts its input as always. Identity stands for the
content because nothing writes to the arrays between the fits of a path: the path's caller
owns them (the cross-validation engine's fold arrays are its own copies) and runs no user
code between fits that receives them. The memo lives as long as the path.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["ConvertedInputs", "serving_conversions"]

#: The memo in force and the estimator it serves (None outside a path).
_ACTIVE: ContextVar[tuple[ConvertedInputs, object] | None] = ContextVar(
    "multitask_converted_inputs", default=None)


class ConvertedInputs:
    """The conversions of training input made along one path, reused by later fits.

    Parameters
    ----------
    size : int, default=4
        Conversions kept (the most recent; each holds its input objects alive).
    """

    def __init__(self, size: int = 4):
        if size < 1:
            raise ValueError(f"size must be at least 1, got {size!r}.")
        self.size = int(size)
        self._entries: list[tuple[tuple, Hashable, Any]] = []
        #: Lookups answered from the memo, and conversions stored (for tests and reports).
        self.hits = 0
        self.stored = 0

    def get(self, inputs: tuple, options: Hashable) -> Any | None:
        """The value stored for these very ``inputs`` (compared by identity, item by item)
        and equal ``options``; ``None`` when there is none."""
        for kept, opts, value in self._entries:
            if (len(kept) == len(inputs) and all(a is b for a, b in zip(kept, inputs,
                                                                        strict=True))
                    and opts == options):
                self.hits += 1
                return value
        return None

    def put(self, inputs: tuple, options: Hashable, value: Any) -> None:
        """Keep ``value`` for ``inputs`` and ``options`` (the oldest entry beyond ``size``
        is dropped)."""
        self._entries.append((tuple(inputs), options, value))
        del self._entries[:-self.size]
        self.stored += 1

    @contextmanager
    def serving(self, owner: object) -> Iterator[ConvertedInputs]:
        """Within the block, ``owner``'s conversions go through this memo
        (:func:`serving_conversions` reads it); the previous state is restored after."""
        token = _ACTIVE.set((self, owner))
        try:
            yield self
        finally:
            _ACTIVE.reset(token)


def serving_conversions(owner: object) -> ConvertedInputs | None:
    """The memo serving ``owner`` (the very object) in this context, or ``None``."""
    active = _ACTIVE.get()
    if active is None or active[1] is not owner:
        return None
    return active[0]
