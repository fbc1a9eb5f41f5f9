"""When to run numba-compiled kernels, and when their interpreted twins.

The kernels are compiled ahead of the user's fits: the package's build step runs
:mod:`multitask.precompile`, which leaves them in numba's on-disk cache inside the installed
package, so a fit loads them instead of compiling them (where the cache was lost,
``python -m multitask.precompile`` fills it again; docs/scale.md gives the costs). The rule
below prices the compiled choice at what it costs with that cache.

Loading a cached numba kernel is cheap, but the first one a process loads sets up numba's
compilation target first (typing and target contexts), which costs more than a small fit
(the figure and its command, ``benchmarks/bench_first_call.py``: docs/tuning_constants.md).
A kernel with a numpy twin (the same updates, vectorized over tasks) therefore follows the
ski-rental rule: while the target is not set up, the process runs the twin and counts the
time it spends there; once
that time reaches the start-up cost (:data:`START_UP_SECONDS`), the compiled kernel takes
over (the current call continues with it where the twin stopped). A process never pays more
than twice what the better of the two choices would have cost it, and a process that fits
only small problems never pays the start-up at all. When the target is already set up (any
compiled function ran in this process), the compiled kernel runs at once.

:func:`set_up` pays the start-up now, for a process that prefers a predictable first call
(a server, a benchmark timing the compiled kernels).
"""

from __future__ import annotations

import sys
import threading

__all__ = ["START_UP_SECONDS", "charge_interpreted", "interpreted_budget", "is_set_up",
           "set_up"]

#: CPU seconds numba takes to set up its target in a fresh process (the breakdown of
#: ``benchmarks/bench_first_call.py``; the figures in docs/tuning_constants.md): the time the
#: interpreted twins may spend before the compiled kernels take over.
START_UP_SECONDS = 0.15

_lock = threading.Lock()
_spent = 0.0


def is_set_up() -> bool:
    """Whether numba's CPU target is set up in this process (any compiled function has run).

    Reads numba's own state; ``False`` when numba is not imported or its internals differ
    from the ones known here (the cost rule then still bounds the waste).
    """
    registry = sys.modules.get("numba.core.registry")
    if registry is None:
        return False
    try:
        context = vars(registry.cpu_target).get("_toplevel_target_context")
        return context is not None and bool(context._registries)
    except (AttributeError, TypeError):  # pragma: no cover - another numba layout
        return False


def set_up() -> None:
    """Set up numba's target now (the cost the interpreted twins otherwise defer)."""
    from numba.core.registry import cpu_target

    cpu_target.target_context.refresh()


def interpreted_budget() -> float:
    """Seconds the interpreted twins may still spend in this process (0 once the compiled
    kernels should run: the target is set up, or the twins have spent the start-up cost)."""
    if is_set_up():
        return 0.0
    with _lock:
        return max(START_UP_SECONDS - _spent, 0.0)


def charge_interpreted(seconds: float) -> None:
    """Count ``seconds`` spent in an interpreted twin against :data:`START_UP_SECONDS`."""
    global _spent
    with _lock:
        _spent += max(float(seconds), 0.0)
