"""The command line's remaining file cases (issue: findings 2 and 5).

* ``multitask predict --input FIFO`` blocked forever in ``open()``: inputs (data files and
  model files) are opened without blocking and refused unless they are regular files;
* the atomic writer refused valid names of 242 to 255 characters (its temporary name was too
  long): they are written;
* ``--output x.csv/`` wrote a file ``x.csv``: a name ending with a separator is refused before
  any work;
* ``multitask fit`` merged task ids that differ only by white space around them (the API keeps
  them apart and the help says ids are kept as written): such ids are refused, naming both.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest

from multitask import L21Regressor
from multitask.cli import main
from multitask.persistence import ModelFileError, atomic_write, load_model, save_model

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs (POSIX)")

TRAIN = "f1,f2,task,y\n1,2,a,1\n2,1,a,2\n3,1,b,1\n1,5,b,3\n2,2,a,1\n4,1,b,2\n"


def _fit(tmp_path, capsys, text=TRAIN, name="train.csv"):
    (tmp_path / name).write_text(text)
    model = tmp_path / "m.skops"
    rc = main(["fit", "--input", str(tmp_path / name), "--target", "y", "--task", "task",
               "--model", "L21Regressor", "--model-file", str(model), "--quiet"])
    return rc, model, capsys.readouterr()


def _in_time(fn, seconds=20.0, fifo=None):
    """Run ``fn`` in a thread; fail if it has not returned within ``seconds`` (it blocked on
    ``fifo``, whose write end is then opened to release the reader)."""
    out = {}

    def target():
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            out["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        if fifo is not None:  # release the blocked reader so that the thread can end
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("the command blocked on a FIFO")
    if "error" in out:
        raise out["error"]
    return out["value"]


# ----------------------------------------------------------------------------- FIFOs
@pytest.mark.parametrize("command", ["predict --input", "fit --input", "predict --model-file"])
def test_fifo_inputs_are_refused_without_blocking(tmp_path, capsys, command):
    rc, model, _ = _fit(tmp_path, capsys)
    assert rc == 0
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    out = tmp_path / "p.csv"
    if command == "fit --input":
        argv = ["fit", "--input", str(fifo), "--target", "y", "--task", "task", "--model",
                "L21Regressor", "--model-file", str(tmp_path / "m2.skops"), "--quiet"]
    elif command == "predict --input":
        argv = ["predict", "--model-file", str(model), "--input", str(fifo), "--output",
                str(out)]
    else:
        argv = ["predict", "--model-file", str(fifo), "--input", str(tmp_path / "train.csv"),
                "--output", str(out)]
    rc = _in_time(lambda: main(argv), fifo=fifo)
    err = capsys.readouterr().err
    assert rc == 2 and "FIFO" in err and "not a regular file" in err, err
    assert not out.exists() and not (tmp_path / "m2.skops").exists()


def test_load_model_refuses_devices_and_fifos(tmp_path):
    fifo = tmp_path / "m.skops"
    os.mkfifo(fifo)
    with pytest.raises(ModelFileError, match="FIFO"):
        _in_time(lambda: load_model(fifo), fifo=fifo)
    if os.path.exists("/dev/zero"):
        with pytest.raises(ModelFileError, match="device"):
            load_model("/dev/zero")
    with pytest.raises(ModelFileError, match="folder"):
        load_model(tmp_path)


# ----------------------------------------------------------------------------- names
@pytest.mark.parametrize("length", [241, 242, 250, 255])
def test_long_valid_names_are_written(tmp_path, length):
    """The temporary name ``.NAME.<random>.tmp`` was 14 characters longer than the name."""
    name = "p" * (length - 4) + ".csv"
    target = tmp_path / name
    atomic_write(target, lambda tmp: Path(tmp).write_text("x\n"))
    assert target.read_text() == "x\n"
    assert [p.name for p in tmp_path.iterdir()] == [name]  # no temporary file left


def test_long_multibyte_names_are_written(tmp_path):
    name = "é" * 125 + ".csv"  # 254 bytes in UTF-8
    target = tmp_path / name
    atomic_write(target, lambda tmp: Path(tmp).write_text("y\n"))
    assert target.read_text() == "y\n"


def test_predict_writes_a_255_character_output(tmp_path, capsys):
    rc, model, _ = _fit(tmp_path, capsys)
    out = tmp_path / ("p" * 251 + ".csv")
    rc = main(["predict", "--model-file", str(model), "--input", str(tmp_path / "train.csv"),
               "--output", str(out)])
    assert rc == 0 and out.read_text().startswith("f1,f2,task,y,prediction")


@pytest.mark.parametrize("option", ["--output", "--model-file"])
def test_trailing_separator_is_refused_before_any_work(tmp_path, capsys, option):
    rc, model, _ = _fit(tmp_path, capsys)
    if option == "--output":
        argv = ["predict", "--model-file", str(model), "--input", str(tmp_path / "train.csv"),
                "--output", str(tmp_path / "x.csv") + "/"]
    else:
        argv = ["fit", "--input", str(tmp_path / "train.csv"), "--target", "y", "--task",
                "task", "--model", "L21Regressor", "--model-file",
                str(tmp_path / "x.skops") + "/", "--quiet"]
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and "ends with '/'" in err, err
    assert not (tmp_path / "x.csv").exists() and not (tmp_path / "x.skops").exists()


def test_save_model_refuses_a_trailing_separator(tmp_path):
    est = L21Regressor()
    with pytest.raises(ModelFileError, match="names a folder"):
        save_model(est, str(tmp_path / "m.skops") + os.sep)
    assert not (tmp_path / "m.skops").exists()


# ----------------------------------------------------------------------------- task ids
def test_ids_differing_only_by_white_space_are_refused(tmp_path, capsys):
    """``"a"`` and ``"a "`` became one task; the API keeps them apart."""
    text = 'f1,f2,task,y\n1,2,"a",1\n2,1,"a ",2\n3,1,b,1\n1,5,b,3\n'
    rc, model, io = _fit(tmp_path, capsys, text)
    assert rc == 2 and not model.exists()
    assert "'a' and 'a '" in io.err and "differ only by white space" in io.err


def test_ids_are_kept_as_written(tmp_path, capsys):
    """A trailing space is part of an id (the same file format as the API's labels): the
    model's tasks are the ids as written, and predict matches them exactly."""
    text = 'f1,f2,task,y\n1,2,"a ",1\n2,1,"a ",2\n3,1,b,1\n1,5,b,3\n'
    rc, model, _ = _fit(tmp_path, capsys, text)
    assert rc == 0
    est = load_model(model)
    assert sorted(np.asarray(est.tasks_).tolist()) == ["a ", "b"]
    (tmp_path / "new.csv").write_text('f1,f2,task\n1,2,"a"\n')
    rc = main(["predict", "--model-file", str(model), "--input", str(tmp_path / "new.csv"),
               "--output", str(tmp_path / "p.csv")])
    err = capsys.readouterr().err
    assert rc == 2 and "unknown task 'a'" in err and "it knows 'a '" in err, err


def test_the_help_says_how_ids_are_read():
    from multitask.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    text = sub.choices["fit"].format_help()
    assert "kept as written" in text and "white space" in text
