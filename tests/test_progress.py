"""multitask.progress: a bar on a terminal, sparse plain lines elsewhere, MultiTaskCV's callback."""

from __future__ import annotations

import copy
import io
import pickle
import re

import numpy as np
import pytest

from multitask.progress import ENV_VAR, Progress, progress


class FakeTerminal(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _no_forced_mode(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.delenv("TERM", raising=False)


def _lines(stream: io.StringIO) -> list[str]:
    return [line for line in stream.getvalue().splitlines() if line.strip()]


def test_lines_when_not_a_terminal_few_and_complete():
    out = io.StringIO()
    update = progress(label="cv", stream=out)
    for done in range(1, 101):
        update(done, 100)
    lines = _lines(out)
    assert update.shown_as == "lines"
    # the first step, each tenth, the end: 11 lines for 100 steps, not 100
    assert len(lines) == 11
    assert lines[0].startswith("cv: 1/100 (1%)")
    assert lines[-1].startswith("cv: 100/100 (100%)")
    assert "left" in lines[1] and "left" not in lines[-1]
    assert all(re.match(r"cv: \d+/100 \(\d+%\), \d+\.\d s elapsed", line) for line in lines)
    assert "\x1b[" not in out.getvalue()  # no terminal control codes in a log


def test_lines_at_least_every_interval(monkeypatch):
    clock = iter(np.arange(0.0, 1000.0, 4.0))  # each step takes 4 s
    monkeypatch.setattr("multitask.progress.time.perf_counter", lambda: float(next(clock)))
    out = io.StringIO()
    bar = Progress(1000, "slow", stream=out, interval=10.0)
    for done in range(1, 31):  # 3% of the work: no tenth crossed after the first line
        bar.update(done)
    lines = _lines(out)
    assert 8 <= len(lines) <= 12  # one line per 10 s, not one per step
    assert "about" in lines[-1]


def test_bar_on_a_terminal_uses_rich():
    pytest.importorskip("rich")
    term = FakeTerminal()
    update = progress(label="fitting", stream=term)
    for done in range(1, 6):
        update(done, 5)
    assert update.shown_as == "bar"
    text = term.getvalue()
    assert "fitting" in text and "5/5" in text


def test_nested_bars_share_one_display():
    """rich allows one live display: a bar opened inside another is a row of the same one."""
    pytest.importorskip("rich")
    import multitask.progress as mod

    term = FakeTerminal()
    with progress(2, "benchmark", stream=term) as outer:
        for model in ("ridge", "trace"):
            inner = progress(label=f"CV {model}", stream=term)
            for done in range(1, 4):
                inner(done, 3)
            assert inner.shown_as == "bar"
            outer.advance()
    assert mod._display["progress"] is None and mod._display["users"] == 0
    text = term.getvalue()
    assert "CV ridge" in text and "CV trace" in text and "2/2" in text


def test_environment_variable_overrides(monkeypatch):
    term = FakeTerminal()
    monkeypatch.setenv(ENV_VAR, "lines")
    bar = progress(3, "x", stream=term)
    with bar:
        bar.advance(3)
    assert bar.shown_as == "lines"
    assert _lines(term)[-1].startswith("x: 3/3 (100%)")
    monkeypatch.setenv(ENV_VAR, "off")
    quiet = io.StringIO()
    with progress(3, "x", stream=quiet) as bar:
        bar.advance(3)
    assert bar.shown_as == "off" and quiet.getvalue() == ""


def test_dumb_terminal_gets_lines(monkeypatch):
    monkeypatch.setenv("TERM", "dumb")
    bar = progress(2, "x", stream=FakeTerminal())
    bar.update(2)
    assert bar.shown_as == "lines"


def test_context_manager_reports_where_an_interrupted_run_stopped():
    out = io.StringIO()
    with pytest.raises(RuntimeError), progress(10, "job", stream=out) as bar:
        for i in range(10):
            if i == 4:
                raise RuntimeError("boom")
            bar.advance()
    lines = _lines(out)
    assert lines[0].startswith("job: 0/10")
    assert lines[-1].startswith("job: 4/10 (40%)")
    assert len([line for line in lines if line.startswith("job: 4/10")]) == 1


def test_unknown_total_counts_then_says_where_it_ended():
    out = io.StringIO()
    with progress(label="reading", stream=out) as bar:
        for _ in range(3):
            bar.advance()
    lines = _lines(out)
    assert lines[0].startswith("reading: 0 done")
    assert lines[-1].startswith("reading: 3 done")


def test_restarts_on_a_second_run():
    out = io.StringIO()
    update = progress(label="cv", stream=out)
    for run in range(2):
        for done in range(1, 4):
            update(done, 3)
        assert len([line for line in _lines(out) if line.startswith("cv: 3/3")]) == run + 1
    assert len([line for line in _lines(out) if line.startswith("cv: 1/3")]) == 2


def test_copies_are_the_same_display_and_pickling_drops_it():
    bar = progress(5, "x", stream=io.StringIO())
    bar.update(2)
    assert copy.deepcopy(bar) is bar and copy.copy(bar) is bar
    back = pickle.loads(pickle.dumps(bar))
    assert isinstance(back, Progress) and back.label == "x" and back.stream is None
    bar.close()


def test_default_stream_is_stderr(capsys):
    with progress(1, "to stderr") as bar:
        bar.advance()
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "to stderr: 1/1 (100%)" in captured.err


@pytest.mark.parametrize("kwargs", [{"mode": "fancy"}, {"total": -1}, {"interval": 0}])
def test_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        Progress(**kwargs)


def test_as_multitask_cv_callback_and_after_clone():
    from sklearn.base import clone

    from multitask import L21Regressor, MultiTaskCV

    rng = np.random.default_rng(0)
    Xs = [rng.standard_normal((12, 4)) for _ in range(3)]
    ys = [X @ rng.standard_normal(4) + 0.1 * rng.standard_normal(12) for X in Xs]
    out = io.StringIO()
    cv = MultiTaskCV(L21Regressor(), n_alphas=3, cv=3, callback=progress(label="CV", stream=out))
    cv.fit(Xs, ys)
    lines = _lines(out)
    total = int(re.match(r"CV: (\d+)/(\d+) \(100%\)", lines[-1]).group(2))
    assert total >= 3  # at least one job per fold
    # the first job, each tenth, the end, for each stretch of the path (a widened grid is a
    # second stretch with its own total)
    stretches = {re.match(r"CV: \d+/(\d+)", line).group(1) for line in lines}
    assert len(lines) <= 12 * len(stretches)
    clone(cv).fit(Xs, ys)  # sklearn deep-copies the callback: it is the same display
    assert len([line for line in _lines(out) if line.startswith(f"CV: {total}/{total}")]) == 2
    assert pickle.loads(pickle.dumps(cv)).callback is None

