"""Progress of long runs: a bar on a terminal, plain lines otherwise.

One object, :class:`Progress` (made by :func:`progress`), reports how many of ``total`` steps
are done. Where it writes (standard error by default) decides how:

* a terminal: a live bar with the count, the elapsed time and an estimate of the time left
  (drawn by ``rich``, imported only then);
* anything else (a file, a pipe, a CI log, a notebook): plain lines such as
  ``MultiTaskCV: 20/50 (40%), 3.1 s elapsed, about 4.6 s left``, one at the start, one at
  each tenth of the work and at least every ``interval`` seconds while it runs, and one at the
  end; never one per step.

The environment variable ``MULTITASK_PROGRESS`` overrides the choice: ``bar``, ``lines`` or
``off``. Bars opened while another is shown (a cross-validation inside a benchmark loop) are
rows of the same display; an inner row disappears when it is done.

A :class:`Progress` is a callable ``update(done, total)``, the signature of the ``callback``
of :class:`~multitask.MultiTaskCV`, so it plugs in directly; it closes itself when
``done == total`` and starts again if it is called anew (a second ``fit``). It is also a
context manager (it closes on exit, even on an error) with :meth:`~Progress.advance` for
loops::

    from multitask import MultiTaskCV, TraceNormRegressor
    from multitask.progress import progress

    cv = MultiTaskCV(TraceNormRegressor(), callback=progress(label="trace norm CV"))

    with progress(len(jobs), "benchmark") as bar:
        for job in jobs:
            run(job)
            bar.advance()

Copies of a :class:`Progress` (``copy.deepcopy``, as ``sklearn.base.clone`` makes of a
``callback``) are the same object: a progress display is a handle on the screen, not data.
Pickling drops the live display.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
from typing import IO, Any

__all__ = ["ENV_VAR", "Progress", "progress"]

#: Environment variable that forces the display: ``bar``, ``lines`` or ``off``.
ENV_VAR = "MULTITASK_PROGRESS"

_MODES = ("auto", "bar", "lines", "off")


def _duration(seconds: float) -> str:
    """``"4.2 s"``, ``"3 min 05 s"`` or ``"2 h 04 min"``."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


# One live display at a time (rich allows no more): bars opened while another is shown (a CV
# inside a benchmark loop) are rows of the same display.
_display_lock = threading.Lock()
_display: dict[str, Any] = {"progress": None, "users": 0}


def _acquire_display(stream: IO[str]) -> Any:
    """The shared ``rich.progress.Progress``, started on ``stream`` by its first user."""
    with _display_lock:
        if _display["progress"] is None:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as RichProgress

            bar = RichProgress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), TimeRemainingColumn(), console=Console(file=stream))
            bar.start()
            _display["progress"] = bar
            if not _display.get("atexit"):  # a run that never finished (an error in a fit)
                atexit.register(_stop_display)
                _display["atexit"] = True
        _display["users"] += 1
        return _display["progress"]


def _stop_display() -> None:
    """Stop the display whatever rows it still shows (at exit: restores the cursor)."""
    with _display_lock:
        if _display["progress"] is not None:
            _display["progress"].stop()
        _display["progress"] = None
        _display["users"] = 0


def _release_display(task: Any) -> None:
    """End one row: while other bars are shown it disappears; the last one stays on screen
    in its final state and the display stops."""
    with _display_lock:
        bar = _display["progress"]
        if bar is None:
            return
        _display["users"] -= 1
        if _display["users"] > 0:
            bar.remove_task(task)
            return
        bar.stop()
        _display["progress"] = None
        _display["users"] = 0


class Progress:
    """Report the progress of a run of ``total`` steps: a bar on a terminal, lines otherwise.

    Parameters
    ----------
    total : int, optional
        Number of steps; may be given (or changed) later by :meth:`update`. Unknown: the count
        alone is shown.
    label : str, default=""
        What is running, shown before the count.
    stream : file object, optional
        Where to write; default ``sys.stderr`` (looked up when the run starts).
    mode : {"auto", "bar", "lines", "off"}, default="auto"
        ``"auto"``: a bar when ``stream`` is a terminal, lines otherwise; the environment
        variable ``MULTITASK_PROGRESS`` (``bar``, ``lines``, ``off``), when set, overrides it.
    interval : float, default=10.0
        In lines mode, the longest time in seconds between two lines while the run goes on.

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> with Progress(4, "demo", stream=out, mode="lines") as bar:
    ...     for _ in range(4):
    ...         bar.advance()
    >>> out.getvalue().splitlines()[-1].startswith("demo: 4/4 (100%)")
    True
    """

    def __init__(self, total: int | None = None, label: str = "", *,
                 stream: IO[str] | None = None, mode: str = "auto", interval: float = 10.0):
        if mode not in _MODES:
            raise ValueError(f"mode must be one of {', '.join(map(repr, _MODES))}, got {mode!r}.")
        if total is not None and total < 0:
            raise ValueError(f"total must be >= 0, got {total}.")
        if interval <= 0:
            raise ValueError(f"interval must be > 0, got {interval}.")
        self.total = total
        self.label = label
        self.stream = stream
        self.mode = mode
        self.interval = interval
        self.done = 0
        self._lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self._active = False
        self._shown: str | None = None  # "bar", "lines" or "off" once started
        self._bar: Any = None  # rich.progress.Progress while a bar is shown
        self._task: Any = None
        self._start = 0.0
        self._last_line: float | None = None  # time of the last line written
        self._last_tenth = -1
        self._last_done = -1

    # ------------------------------------------------------------------ public API
    def update(self, done: int, total: int | None = None) -> None:
        """Set the number of finished steps (and the total, if given).

        Starts the display on the first call (again after :meth:`close`) and closes it when
        ``done`` reaches ``total``. Same signature as the ``callback`` of
        :class:`~multitask.MultiTaskCV`.

        Parameters
        ----------
        done : int
            Steps finished so far.
        total : int, optional
            Number of steps, when it is known only now (or has changed).
        """
        with self._lock:
            if total is not None:
                if total < 0:
                    raise ValueError(f"total must be >= 0, got {total}.")
                self.total = int(total)
            self.done = max(0, int(done))
            if not self._active:
                self._open()
            self._show()
            if self.total is not None and self.done >= self.total:
                self._close()

    __call__ = update

    def advance(self, steps: int = 1) -> None:
        """Add ``steps`` finished steps."""
        self.update(self.done + steps)

    def close(self) -> None:
        """End the display (a last line, or the bar left at its final state)."""
        with self._lock:
            if self._active:
                self._close()

    def __enter__(self) -> Progress:
        with self._lock:
            if not self._active:
                self.done = 0
                self._open()
                self._show()
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    @property
    def shown_as(self) -> str | None:
        """``"bar"``, ``"lines"`` or ``"off"``: how the current (or last) run was shown."""
        return self._shown

    # ------------------------------------------------------------------ copies
    def __deepcopy__(self, memo: dict) -> Progress:
        return self

    def __copy__(self) -> Progress:
        return self

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        for key in ("_lock", "_bar", "_task"):
            state.pop(key, None)
        state["stream"] = None
        state["_active"] = False
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._bar = self._task = None

    def __repr__(self) -> str:
        total = "?" if self.total is None else self.total
        return f"Progress({self.label!r}, {self.done}/{total}, mode={self.mode!r})"

    # ------------------------------------------------------------------ internals
    def _out(self) -> IO[str]:
        return self.stream if self.stream is not None else sys.stderr

    def _choose(self) -> str:
        forced = os.environ.get(ENV_VAR, "").strip().lower()
        if forced in ("bar", "lines", "off"):
            return forced
        if self.mode != "auto":
            return self.mode
        out = self._out()
        try:
            tty = bool(out.isatty())
        except (AttributeError, ValueError):  # no isatty, or a closed stream
            tty = False
        return "bar" if tty and os.environ.get("TERM", "") != "dumb" else "lines"

    def _open(self) -> None:
        self._reset()
        self._active = True
        self._start = time.perf_counter()
        self._shown = self._choose()
        if self._shown == "bar":
            try:
                self._open_bar()
            except ImportError:  # pragma: no cover - rich is a dependency
                self._shown = "lines"

    def _open_bar(self) -> None:
        self._bar = _acquire_display(self._out())
        self._task = self._bar.add_task(self.label, total=self.total, completed=self.done)

    def _show(self) -> None:
        if self._shown == "bar":
            self._bar.update(self._task, total=self.total, completed=self.done)
        elif self._shown == "lines":
            now = time.perf_counter()
            tenth = (10 * self.done // self.total) if self.total else -1
            finished = self.total is not None and self.done >= self.total
            if self._last_line is None or finished or tenth > self._last_tenth or \
                    now - self._last_line >= self.interval:
                self._line(now)
                self._last_tenth = tenth

    def _line(self, now: float) -> None:
        elapsed = now - self._start
        head = f"{self.label}: " if self.label else ""
        if self.total:
            text = f"{head}{self.done}/{self.total} ({100 * self.done // self.total}%), " \
                   f"{_duration(elapsed)} elapsed"
            if 0 < self.done < self.total:
                left = elapsed * (self.total - self.done) / self.done
                text += f", about {_duration(left)} left"
        else:
            text = f"{head}{self.done} done, {_duration(elapsed)} elapsed"
        print(text, file=self._out(), flush=True)
        self._last_line = now
        self._last_done = self.done

    def _close(self) -> None:
        if self._shown == "bar" and self._bar is not None:
            self._bar.update(self._task, total=self.total, completed=self.done)
            _release_display(self._task)
        elif self._shown == "lines" and self._last_done != self.done:
            self._line(time.perf_counter())  # where it stopped (interrupted, unknown total)
        self._active = False
        self._bar = self._task = None


def progress(total: int | None = None, label: str = "", **kwargs: Any) -> Progress:
    """A progress display, to call as ``update(done, total)`` or to use in a ``with`` block.

    Parameters
    ----------
    total : int, optional
        Number of steps (may come later, with each ``update``).
    label : str, default=""
        What is running.
    **kwargs
        ``stream``, ``mode``, ``interval`` of :class:`Progress`.

    Returns
    -------
    Progress
        Pass it as ``callback=`` to :class:`~multitask.MultiTaskCV`, or call it yourself.
    """
    return Progress(total, label, **kwargs)
