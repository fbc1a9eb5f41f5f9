"""Per-task lists are checked together once stacked (one pass), with the per-task messages:
the task, row and column of the first NaN, the largest entry beyond the solvers' range, and
a task whose entries are all too small, even next to tasks of ordinary scale."""

from __future__ import annotations

import numpy as np
import pytest

from multitask.data import MAX_ABS_VALUE, MIN_MAX_ABS_VALUE, as_multitask_data


def _tasks(m: int = 6, seed: int = 0):
    rng = np.random.default_rng(seed)
    Xs = [rng.standard_normal((5 + t, 4)) for t in range(m)]
    ys = [rng.standard_normal(5 + t) for t in range(m)]
    return Xs, ys


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_entry_names_its_task_row_and_column(bad):
    Xs, ys = _tasks()
    Xs[3][2, 1] = bad
    with pytest.raises(ValueError, match=r"X of task 3 contains NaN or infinity \(first at "
                                         r"row 2, column 1\)"):
        as_multitask_data(Xs, ys)
    Xs, ys = _tasks()
    ys[4][5] = bad
    with pytest.raises(ValueError, match=r"y of task 4 contains NaN or infinity \(first at "
                                         r"row 5\)"):
        as_multitask_data(Xs, ys)


def test_entry_beyond_the_range_names_its_task():
    Xs, ys = _tasks()
    Xs[2][0, 3] = 10 * MAX_ABS_VALUE
    with pytest.raises(ValueError, match=r"X of task 2 has an entry of magnitude .* row 0, "
                                         r"column 3"):
        as_multitask_data(Xs, ys)
    Xs, ys = _tasks()
    ys[5][1] = -10 * MAX_ABS_VALUE
    with pytest.raises(ValueError, match=r"y of task 5 has an entry of magnitude"):
        as_multitask_data(Xs, ys)


def test_a_tiny_task_is_refused_next_to_ordinary_ones():
    """The lower bound is per task: the stack's largest entry would hide it."""
    Xs, ys = _tasks()
    Xs[1] = Xs[1] * (MIN_MAX_ABS_VALUE / 10)
    with pytest.raises(ValueError, match=r"X of task 1 has no entry larger than"):
        as_multitask_data(Xs, ys)
    Xs, ys = _tasks()
    ys[0] = ys[0] * (MIN_MAX_ABS_VALUE / 10)
    with pytest.raises(ValueError, match=r"y of task 0 has no entry larger than"):
        as_multitask_data(Xs, ys)


def test_zero_tasks_and_valid_lists_pass_unchanged():
    Xs, ys = _tasks()
    Xs[0] = np.zeros_like(Xs[0])  # an all-zero task is not "too small"
    ys[1] = np.zeros_like(ys[1])
    data, _ = as_multitask_data(Xs, ys)
    np.testing.assert_array_equal(data.X, np.vstack(Xs))
    np.testing.assert_array_equal(data.y, np.concatenate(ys))
    np.testing.assert_array_equal(np.diff(data.offsets), [len(y) for y in ys])
