"""The record of one solver run: what every looping solver shares, apart from its loop.

A solver's loop keeps its own control flow (proximal Newton hands over to another solver,
ADMM runs a compiled or an interpreted iteration, the working sets nest solvers). Around it,
an :class:`IterationRecord` holds what every run does the same way:

* the requirement check (:meth:`~multitask.solvers.base.Solver.check`) and the clock;
* the start point (:func:`~multitask.solvers.base.initial_point`);
* the objective history and the elapsed time of each entry;
* the best iterate (the lowest objective seen);
* the callback protocol: ``callback(k, objective, V, b)`` after an iteration, returning
  True stops the run;
* the certificate and the one schedule that says when to compute it
  (:class:`CertificateSchedule`);
* the result: :func:`~multitask.solvers.base.finish`, with the history and the clock.

A loop reads::

    run = IterationRecord(self, datafit, penalty, callback, schedule)
    V, b = run.start(coef_init, intercept_init)
    for k in range(1, self.max_iter + 1):
        ...                                    # the solver's own iteration
        run.record(F)
        if run.due(k, small=residual <= tol) and run.certify(k, V, b, target=tol) <= tol:
            run.stopped_by = "tol"
            break
        if run.notify(k, F, V, b):
            break
    return run.finish(V, b, n_iter=k, converged=run.stopped_by == "tol")

The schedules of the library's solvers:

* accelerated and plain proximal gradient: after the first iteration, then at the interval
  the measure's rate predicts (at least 10 iterations past the first ones), and early on a
  small step residual, ``max(5, k // 10)`` iterations after the last certificate;
* the distributed proximal gradient: early certificates only, with the same gap;
* ADMM: every ``check_every`` iterations, and every ``check_every // 5`` while both
  residuals are small (at most every ``min(COMPILED_CHECK_GAP, k // 4)`` iterations while
  the compiled iteration runs, several times cheaper than a certificate); linearized ADMM: every
  ``check_every`` iterations, and whenever both residuals are small;
* projected subgradient (smooth losses): every ``window`` iterations;
* majorization, the Newton methods, the coordinate descents (after each batch of epochs,
  :func:`inner_tolerances`) and the working sets (after each subproblem): every step.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from multitask.losses import Datafit
from multitask.penalties.base import Penalty
from multitask.solvers.base import Solver, certify, finish, initial_point
from multitask.solvers.result import SolverResult

__all__ = ["EXTRA_FRAMES", "Best", "CertificateSchedule", "IterationRecord", "inner_tolerances",
           "predicted_period"]

#: Frames between a solver's ``solve`` and its caller beyond the one of a direct call: a run
#: on the seen rows (:func:`multitask.solvers.seen_rows.on_seen_rows`) calls ``solve`` again
#: through two more, and sets this so that the warnings still point at the user's code.
EXTRA_FRAMES: ContextVar[int] = ContextVar("multitask_extra_frames", default=0)


def predicted_period(k: int, measure: float, tol: float, period: int,
                     previous: tuple[int, float] | None = None) -> int:
    """Iterations until the next certificate after the one at iteration ``k``, from the rate
    at which the measure falls.

    ``k // 2`` (at least 1) in the first iterations, then at least ``period``. With the
    previous certificate ``(k0, m0)`` and a measure that fell from ``m0`` to ``m``, the rate
    ``rho = ln(m0 / m) / (k - k0)`` predicts ``ln(m / tol) / rho`` more iterations to
    ``tol``: the next certificate comes after 80% of them, at most ``k // 10`` iterations on
    (at most about 10% more iterations than needed where the prediction is too long).
    Without a rate: up to ``k // 20`` while the measure is more than ten times ``tol``,
    ``period`` near it.
    """
    base = min(period, max(1, k // 2))
    if previous is not None:
        k0, m0 = previous
        if k > k0 and tol < measure < m0 and tol > 0.0:
            rate = np.log(m0 / measure) / (k - k0)
            need = np.log(measure / tol) / rate
            return int(max(base, min(0.8 * need, k // 10)))
    if measure > 10.0 * tol:
        return max(base, k // 20)
    return base


def inner_tolerances(tol: float, floor: float = 1e-16):
    """The inner criteria of a solver that certifies after each batch of epochs (the
    coordinate descents): ``max(tol, 1e-12)``, then a tenth of the last one after every
    certificate that does not meet ``tol``, down to ``floor``."""
    inner = max(tol, 1e-12)
    while True:
        yield inner
        if inner <= floor:
            return
        inner *= 0.1


@dataclass
class CertificateSchedule:
    """When a loop computes its certificate (the certified relative duality gap, or the
    prox-gradient residual where the model has no dual: :func:`~multitask.solvers.base.certify`).

    Two kinds of certificates, each counted from the last one (at iteration ``k0``, 0 before
    the first):

    * **periodic**: at iteration ``k0 + period`` (the first at ``first``, by default
      ``period``); with ``adaptive``, the period follows the rate at which the measure falls
      (:func:`predicted_period`, at least ``period`` past the first iterations). ``period``
      None: no periodic certificate; 1: one after every iteration.
    * **early**: when the solver's own cheap criterion says it may have converged
      (``small``: ADMM's residuals, the prox-gradient residual of a step), from iteration
      ``k0 + max(early_gap, k0 // early_fraction)`` on (``early_fraction`` None: the gap
      alone); before the first certificate, from iteration ``early_start`` on.

    Both intervals are at least ``min(min_gap, k0 // 4)`` iterations (``min_gap`` 0 by
    default; a loop whose iterations became cheap next to a certificate raises it as it
    runs): a short run keeps its frequent certificates, a long one checks at most every
    ``min_gap`` iterations, and the iterations run past the one that would have certified
    stay below a quarter of the run.

    Parameters
    ----------
    period : int or None, default=1
    first : int, optional
    adaptive : bool, default=False
    early_gap : int, default=1
    early_fraction : int, optional
    early_start : int, default=0
    min_gap : int, default=0
    """

    period: int | None = 1
    first: int | None = None
    adaptive: bool = False
    early_gap: int = 1
    early_fraction: int | None = None
    early_start: int = 0
    min_gap: int = 0

    def __post_init__(self) -> None:
        first = self.first if self.first is not None else self.period
        self._next: float = float("inf") if first is None else first
        self._next_early = self.early_start
        self._previous: tuple[int, float] | None = None

    def due(self, k: int, small: bool = False) -> bool:
        """Whether a certificate is due after iteration ``k`` (``small``: the solver's own
        criterion is met)."""
        return k >= self._next or (small and k >= self._next_early)

    def done(self, k: int, measure: float, tol: float) -> None:
        """A certificate of value ``measure`` was computed after iteration ``k``: the next
        ones are counted from here."""
        least = min(self.min_gap, k // 4)
        if self.period is not None:
            self._next = k + max(predicted_period(k, measure, tol, self.period, self._previous)
                                 if self.adaptive else self.period, least)
        self._next_early = k + max(self.early_gap, least,
                                   k // self.early_fraction if self.early_fraction else 0)
        self._previous = (k, measure)


class Best(NamedTuple):
    """The best iterate of a run: its objective and its point ``(V, b)``."""

    objective: float
    V: Any
    b: Any


class IterationRecord:
    """The record of one run (module docstring).

    Creating it checks that ``solver`` applies to ``(datafit, penalty)`` (a ValueError saying
    what is missing) and starts the clock.

    Parameters
    ----------
    solver : Solver
        The solver running (its ``tol``, ``max_iter``, ``warn`` and ``label`` for the result).
    datafit : Datafit
    penalty : Penalty
    callback : callable, optional
        ``callback(k, objective, V, b)``, called by :meth:`notify`; returning True stops.
    schedule : CertificateSchedule, optional
        When to certify (default: after every iteration).
    check : bool, default=True
        Check the solver's requirements (False where the caller checked them).

    Attributes
    ----------
    t0 : float
        The clock's start (``time.perf_counter()``).
    history, times : list of float
        The recorded objectives and the elapsed seconds of each.
    best : Best or None
        The best iterate offered so far.
    measure : float or None
        The last certified measure (None before the first).
    certificate : Certificate or None
        The last certificate (None before the first, or where the model has no dual).
    certified_at : int
        The iteration after which the last certificate was taken (0 before the first).
    stopped_by : str
        ``"max_iter"`` until the loop says otherwise (``"tol"``, or ``"callback"`` when the
        callback asked to stop).
    """

    def __init__(self, solver: Solver, datafit: Datafit, penalty: Penalty,
                 callback: Callable | None = None, schedule: CertificateSchedule | None = None,
                 *, check: bool = True):
        if check:
            solver.check(datafit, penalty)
        self.solver = solver
        self.datafit = datafit
        self.penalty = penalty
        self.callback = callback
        self.schedule = schedule if schedule is not None else CertificateSchedule()
        self.t0 = time.perf_counter()
        self.history: list[float] = []
        self.times: list[float] = []
        self.best: Best | None = None
        self.measure: float | None = None
        self.certificate: Any = None
        self.certified_at = 0
        self.stopped_by = "max_iter"

    # ----------------------------------------------------------------- start and clock
    def start(self, coef_init=None, intercept_init=None, *, project: bool = True,
              intercept_at_zero: bool = False):
        """The validated start ``(V, b)`` (:func:`~multitask.solvers.base.initial_point`;
        ``project``: a constraint's start made feasible). ``intercept_at_zero``: without an
        ``intercept_init``, a start at ``V = 0`` takes the best intercepts there
        (:meth:`~multitask.losses.Datafit.optimal_intercept_at_zero`, where the loss has
        them) instead of zeros."""
        V, b = initial_point(self.datafit, self.penalty, coef_init, intercept_init,
                             project=project)
        if intercept_at_zero and b is not None and intercept_init is None and not np.any(V):
            b0 = self.datafit.optimal_intercept_at_zero()
            if b0 is not None:
                b = np.array(b0, dtype=np.float64)
        return V, b

    def elapsed(self) -> float:
        """Seconds since the clock started."""
        return time.perf_counter() - self.t0

    def record(self, objective: float) -> None:
        """Append ``objective`` to the history, with the elapsed time."""
        self.history.append(objective)
        self.times.append(time.perf_counter() - self.t0)

    # ----------------------------------------------------------------- best iterate
    def improves(self, objective: float) -> bool:
        """Whether ``objective`` is below the best one so far (or there is none yet)."""
        return self.best is None or objective < self.best.objective

    def keep(self, objective: float, V, b) -> None:
        """Make ``(V, b)`` of objective ``objective`` the best iterate."""
        self.best = Best(objective, V, b)

    def offer(self, objective: float, V, b) -> bool:
        """Keep ``(V, b)`` as the best iterate when its objective is below the best one
        (:meth:`improves`); returns whether it did."""
        if self.improves(objective):
            self.keep(objective, V, b)
            return True
        return False

    # ----------------------------------------------------------------- callback
    def notify(self, k: int, objective: float, V, b) -> bool:
        """Call ``callback(k, objective, V, b)``; True when it asks to stop (``stopped_by``
        becomes ``"callback"``)."""
        if self.callback is not None and self.callback(k, objective, V, b):
            self.stopped_by = "callback"
            return True
        return False

    @property
    def stop_requested(self) -> bool:
        """Whether the callback stopped the run."""
        return self.stopped_by == "callback"

    # ----------------------------------------------------------------- certificate
    def due(self, k: int, small: bool = False) -> bool:
        """Whether the schedule asks for a certificate after iteration ``k``
        (:meth:`CertificateSchedule.due`)."""
        return self.schedule.due(k, small)

    def certify(self, k: int, V, b, *, L: float | None = None, target: float | None = None,
                lazy: bool | None = None, dual_weights: np.ndarray | None = None) -> float:
        """The measure at ``(V, b)`` (:func:`~multitask.solvers.base.certify`, with its
        options), kept in :attr:`measure` and :attr:`certificate`, and counted by the
        schedule as taken after iteration ``k``."""
        measure, cert = certify(self.datafit, self.penalty, V, b, L, target, dual_weights,
                                lazy=lazy)
        return self.certified(k, measure, cert)

    def certified(self, k: int, measure: float, certificate: Any = None) -> float:
        """Keep a measure the solver computed itself after iteration ``k`` (and its
        certificate, if any), counted by the schedule; returns ``measure``."""
        self.measure, self.certificate, self.certified_at = measure, certificate, k
        self.schedule.done(k, measure, self.solver.tol)
        return measure

    def gap_met(self, k: int, certificate: Any) -> bool:
        """Keep a certified duality gap computed after iteration ``k`` (:meth:`certified`,
        its primal value recorded): whether its relative gap meets the solver's ``tol``."""
        self.certified(k, certificate.relative_gap, certificate)
        self.record(certificate.primal)
        return certificate.relative_gap <= self.solver.tol

    # ----------------------------------------------------------------- result
    def finish(self, V, b, *, n_iter: int, converged: bool, datafit: Datafit | None = None,
               **options) -> SolverResult:
        """The result (:func:`~multitask.solvers.base.finish`) with the recorded history,
        times and clock; ``options`` are :func:`~multitask.solvers.base.finish`'s
        (``measure``, ``info``, ``certificate``, ...). ``datafit``: the one the result's
        intercepts are read from, when not the run's."""
        return finish(self.solver, self.datafit if datafit is None else datafit,
                      self.penalty, V, b, n_iter=n_iter, objective=self.history,
                      times=self.times, converged=converged, t0=self.t0,
                      stacklevel=4 + EXTRA_FRAMES.get(), **options)
