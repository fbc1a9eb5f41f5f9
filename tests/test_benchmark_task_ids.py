"""A task graph or a task order names tasks as the data reader keeps their ids.

The benchmark reads task ids as written (``01`` and ``1`` are two tasks) unless
``--numeric-task-ids`` reads them as numbers (then one task). A graph file or a task order
naming task ``1`` against tasks read as ``01`` (or a number against text) must match
unambiguously or be refused naming the unknown ids, never silently give another graph.
"""

from __future__ import annotations

import numpy as np
import pytest

from multitask.benchmark_data import make_benchmark_data, match_task_ids, order_tasks
from multitask.cli import build_parser, main
from multitask.cli_benchmark import _data, read_graph
from multitask.cli_fit import CLIError

pd = pytest.importorskip("pandas")


def test_text_ids_match_as_written_and_the_refusal_names_every_unknown_id():
    names = ["01", "02", "03"]
    assert match_task_ids(["03", "01"], names) == [2, 0]
    with pytest.raises(ValueError) as info:
        match_task_ids(["1", "02", "3", "x"], names, what="The graph")
    message = str(info.value)
    assert "The graph names '1', '3', 'x', which are not tasks of the data" in message
    assert "'1' is written '01' in the data" in message and "--numeric-task-ids" in message
    assert "tasks: 01, 02, 03" in message
    # a number given in Python is its text; text ids stay text ("1.0" is not "1")
    assert match_task_ids([2, 1], ["1", "2"]) == [1, 0]
    with pytest.raises(ValueError, match="'1.0', which is not a task"):
        match_task_ids([1.0], ["1", "2"])
    # white space is part of a text id: the hint says which id it looks like, not numbers
    with pytest.raises(ValueError) as info:
        match_task_ids(["a"], ["a ", "b"])
    assert "'a' is written 'a ' in the data" in str(info.value)
    assert "--numeric-task-ids" not in str(info.value)


def test_numeric_ids_match_by_value_and_several_matches_are_refused():
    names = ["1", "2", "10"]
    assert match_task_ids(["01", 2, "1.0", " 10"], names, numeric=True) == [0, 1, 0, 2]
    with pytest.raises(ValueError, match="'3', 'a', which are not tasks"):
        match_task_ids(["3", "a", "1"], names, numeric=True)
    with pytest.raises(ValueError, match="'1', which matches the tasks '1', '01'"):
        match_task_ids(["1"], ["1", "01"], numeric=True)


def test_benchmark_data_records_numeric_ids_and_the_task_order_follows_them():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 2))
    numbers = make_benchmark_data(X, rng.standard_normal(30), np.repeat([3, 1, 2], 10))
    assert numbers.numeric_ids and numbers.task_names == ["3", "1", "2"]
    assert order_tasks(numbers, ["01", "02", "03"]).task_names == ["1", "2", "3"]
    assert order_tasks(numbers, [1, 2, 3]).task_names == ["1", "2", "3"]
    with pytest.raises(ValueError, match="names task '1' twice"):
        order_tasks(numbers, ["1", "01", "2", "3"])
    text = make_benchmark_data(X, rng.standard_normal(30), np.repeat(["03", "01", "02"], 10))
    assert not text.numeric_ids
    assert order_tasks(text, ["01", "02", "03"]).task_names == ["01", "02", "03"]
    with pytest.raises(ValueError, match="'1', '2', '3', which are not tasks"):
        order_tasks(text, ["1", "2", "3"])
    named = make_benchmark_data(X, rng.standard_normal(30), np.repeat([3, 1, 2], 10),
                                task_names=["c", "a", "b"])
    assert not named.numeric_ids


@pytest.fixture
def padded_ids(tmp_path):
    """A long-format file whose task ids are written ``01``, ``02``, ``03``."""
    rng = np.random.default_rng(1)
    df = pd.DataFrame(rng.standard_normal((45, 2)), columns=["a", "b"])
    df["store"] = np.repeat(["01", "02", "03"], 15)
    df["y"] = df["a"] + 0.1 * rng.standard_normal(45)
    df.to_csv(tmp_path / "stores.csv", index=False)
    return tmp_path / "stores.csv"


def _args(path, *extra):
    return build_parser().parse_args(["benchmark", "--input", str(path), "--target", "y",
                                      "--task", "store", *map(str, extra)])


def test_a_graph_naming_1_against_tasks_read_as_01(padded_ids, tmp_path, capsys):
    pd.DataFrame({"s": [1, 2], "t": [2, 3], "w": [1.0, 2.0]}).to_csv(tmp_path / "g.csv",
                                                                   index=False)
    # ids kept as written: refused, naming every unknown id and the way out
    with pytest.raises(CLIError) as info:
        _data(_args(padded_ids, "--graph", tmp_path / "g.csv"))
    message = str(info.value)
    assert "g.csv: The graph names '1', '2', '3', which are not tasks of the data" in message
    assert "'1' is written '01' in the data" in message and "--numeric-task-ids" in message
    assert main(["benchmark", "--input", str(padded_ids), "--target", "y", "--task", "store",
                 "--graph", str(tmp_path / "g.csv"), "--quiet"]) == 2
    assert "which are not tasks of the data" in capsys.readouterr().err
    # read as numbers: one task per value, the graph matched by value
    data = _data(_args(padded_ids, "--numeric-task-ids", "--graph", tmp_path / "g.csv"))
    assert data.numeric_ids and data.task_names == ["1", "2", "3"]
    np.testing.assert_array_equal(data.graph, [[0, 1, 0], [1, 0, 2], [0, 2, 0]])
    # a graph written like the data matches as written, in the data's task order
    pd.DataFrame({"s": ["03", "01"], "t": ["02", "02"]}).to_csv(tmp_path / "same.csv",
                                                               index=False)
    data = _data(_args(padded_ids, "--graph", tmp_path / "same.csv"))
    assert data.task_names == ["01", "02", "03"] and not data.numeric_ids
    np.testing.assert_array_equal(data.graph, [[0, 1, 0], [1, 0, 1], [0, 1, 0]])


def test_a_parquet_graph_of_integers_against_text_ids(tmp_path):
    pytest.importorskip("pyarrow")
    rng = np.random.default_rng(2)
    df = pd.DataFrame(rng.standard_normal((30, 2)), columns=["a", "b"])
    df["store"] = np.repeat(["7", "8", "9"], 10)
    df["y"] = rng.standard_normal(30)
    df.to_csv(tmp_path / "d.csv", index=False)
    pd.DataFrame({"s": [7, 8], "t": [8, 9]}).to_parquet(tmp_path / "g.parquet")
    data = _data(_args(tmp_path / "d.csv", "--graph", tmp_path / "g.parquet"))
    np.testing.assert_array_equal(data.graph, [[0, 1, 0], [1, 0, 1], [0, 1, 0]])
    A = read_graph(tmp_path / "g.parquet", ["9", "8", "7"])  # by name, not by position
    np.testing.assert_array_equal(A, [[0, 1, 0], [1, 0, 1], [0, 1, 0]])
    with pytest.raises(CLIError, match="'7', '8', '9', which are not tasks"):
        read_graph(tmp_path / "g.parquet", ["07", "08", "09"])


def test_a_task_order_naming_1_against_tasks_read_as_01(padded_ids):
    with pytest.raises(ValueError, match="'3', '2', '1', which are not tasks of the data"):
        _data(_args(padded_ids, "--task-order", 3, 2, 1))
    data = _data(_args(padded_ids, "--numeric-task-ids", "--task-order", 3, 2, 1))
    assert data.task_names == ["3", "2", "1"] and data.ordered
    assert _data(_args(padded_ids, "--task-order", "03", "02", "01")).task_names == [
        "03", "02", "01"]


def test_the_benchmark_keeps_task_ids_as_written(tmp_path):
    """As ``multitask fit`` does: ``"a"`` and ``"a "`` are not merged silently."""
    rng = np.random.default_rng(3)
    df = pd.DataFrame(rng.standard_normal((20, 2)), columns=["a", "b"])
    df["store"] = ["a", "a ", "b", "b"] * 5
    df["y"] = rng.standard_normal(20)
    df.to_csv(tmp_path / "d.csv", index=False)
    with pytest.raises(CLIError, match="'a' and 'a ' differ only by white space"):
        _data(_args(tmp_path / "d.csv"))
    df["store"] = ["a ", "a ", "b", "b"] * 5
    df.to_csv(tmp_path / "d.csv", index=False)
    assert _data(_args(tmp_path / "d.csv")).task_names == ["a ", "b"]
