"""Hardening of files: model files that never run code, atomic outputs, signals, the command
line's file cases (issue "Hardening": the findings that live in the command line and in
:mod:`multitask.persistence`)."""

from __future__ import annotations

import json
import os
import pickle
import signal
import stat
import subprocess
import sys
import textwrap
import warnings

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, is_classifier
from sklearn.exceptions import ConvergenceWarning

import multitask as E
from multitask.cli import main
from multitask.persistence import (
    ModelFileError,
    TerminatedBySignal,
    atomic_write,
    load_model,
    read_model_file,
    save_model,
    trusted_types,
)

GOOD = "a,b,task,y\n1,2,s1,3.0\n2,1,s1,1.0\n0,1,s2,2.0\n1,1,s2,0.5\n3,1,s2,0.7\n"


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def _one_line_error(capsys, *needles):
    err = capsys.readouterr().err.strip()
    assert err.startswith("multitask: error:"), err
    assert "\n" not in err, err
    for n in needles:
        assert n in err, (n, err)
    return err


def _fit(tmp_path, *extra, data=GOOD, model="L21Regressor", name="m.skops"):
    path = _write(tmp_path, "train.csv", data)
    out = tmp_path / name
    rc = main(["fit", "--input", path, "--target", "y", "--task", "task", "--model", model,
               "--param", "alpha=0.01", "--model-file", str(out), "--quiet", *extra])
    return rc, out


class _Marker:
    """Unpickling this object creates the file ``path`` (it calls ``open(path, "w")``)."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


# ----------------------------------------------------------------------------- code execution
@pytest.mark.parametrize("writer", ["pickle", "joblib"])
def test_a_crafted_pickle_runs_no_code(tmp_path, capsys, writer):
    """``multitask predict`` used to unpickle the file before checking it: the crafted file
    created its marker. Now the file is refused by its first bytes; nothing runs."""
    marker = tmp_path / "pwned"
    evil = tmp_path / "evil.model"
    bundle = {"kind": "multitask-model", "version": 1, "model": _Marker(marker)}
    if writer == "pickle":
        evil.write_bytes(pickle.dumps(bundle))
    else:
        joblib.dump(bundle, evil)
    data = _write(tmp_path, "new.csv", "a,b,task\n1,2,s1\n")
    out = tmp_path / "p.csv"
    assert main(["predict", "--model-file", str(evil), "--input", data, "--output",
                 str(out)]) == 2
    _one_line_error(capsys, "evil.model", "pickle", "--allow-pickle", "runs any code")
    for load in (load_model, read_model_file):
        with pytest.raises(ModelFileError, match="refused"):
            load(evil)
    assert not marker.exists() and not out.exists()
    # the file is a working exploit: loading it as a trusted pickle does run its code
    with pytest.raises(ModelFileError):
        load_model(evil, allow_pickle=True)
    assert marker.exists()


def test_a_skops_file_naming_an_untrusted_type_is_refused(tmp_path, capsys):
    import skops.io as sio

    evil = tmp_path / "evil.skops"
    evil.write_bytes(sio.dumps({"format": "multitask-model", "version": 2,
                                "model": E.L21Regressor(), "metadata": {"f": os.system}}))
    with pytest.raises(ModelFileError, match=r"untrusted types \(.*system"):
        load_model(evil)
    data = _write(tmp_path, "new.csv", "a,b,task\n1,2,s1\n")
    assert main(["predict", "--model-file", str(evil), "--input", data, "--output",
                 str(tmp_path / "p.csv")]) == 2
    _one_line_error(capsys, "untrusted types", "system")
    holder = E.L21Regressor()
    holder.hook_ = os.system  # an attribute holding a function
    with pytest.raises(ModelFileError, match="cannot rebuild: .*system"):
        save_model(holder, tmp_path / "x.skops")
    with pytest.raises(ModelFileError, match="plain JSON"):
        save_model(E.L21Regressor(), tmp_path / "x.skops", metadata={"f": (1, 2)})
    assert not (tmp_path / "x.skops").exists()


def test_old_pickled_model_files_load_only_when_allowed(tmp_path, capsys):
    rc, model = _fit(tmp_path)
    assert rc == 0
    est = load_model(model)
    meta = read_model_file(model).metadata
    old = tmp_path / "old.joblib"  # the layout of the first command line's files
    joblib.dump({"kind": "multitask-model", "version": 1, "model": est,
                 **{k: meta[k] for k in ("layout", "features", "target", "task", "targets")}},
                old)
    data = _write(tmp_path, "new.csv", "a,b,task\n1,2,s1\n0,1,s2\n")
    out = tmp_path / "p.csv"
    assert main(["predict", "--model-file", str(old), "--input", data, "--output",
                 str(out)]) == 2
    _one_line_error(capsys, "--allow-pickle")
    assert main(["predict", "--model-file", str(old), "--input", data, "--output", str(out),
                 "--allow-pickle"]) == 0
    expected = est.predict(np.array([[1.0, 2.0], [0.0, 1.0]]), np.array(["s1", "s2"]))
    np.testing.assert_array_equal(pd.read_csv(out)["prediction"].to_numpy(), expected)


def _fitted(name):
    est = (E.MultiTaskCV(E.L21Regressor(max_iter=200), n_alphas=3, cv=2)
           if name == "MultiTaskCV" else getattr(E, name)())
    params = est.get_params(deep=False)
    est.set_params(**{k: v for k, v in {"max_iter": 200, "n_stages": 3, "max_mkl_iter": 5,
                                        "random_state": 0}.items() if k in params})
    rng = np.random.default_rng(0)
    X = rng.standard_normal((36, 4))
    task = np.repeat(["a", "b", "c"], 12)
    y = X @ rng.standard_normal(4) + rng.standard_normal(36)
    if is_classifier(est):
        y = (y > np.median(y)).astype(int)
        y[::12], y[1::12] = 0, 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(X, y, task), X, task


@pytest.mark.parametrize("name", [n for n in E.__all__ if isinstance(getattr(E, n), type)
                                  and issubclass(getattr(E, n), BaseEstimator)])
def test_every_estimator_round_trips_through_a_safe_model_file(tmp_path, name):
    est, X, task = _fitted(name)
    save_model(est, tmp_path / "m.skops", metadata={"note": "x"})
    content = read_model_file(tmp_path / "m.skops")
    back = content.model
    assert type(back) is type(est) and content.metadata == {"note": "x"}
    for method in ("predict", "decision_function", "predict_proba"):
        if hasattr(est, method):
            np.testing.assert_array_equal(getattr(back, method)(X, task),
                                          getattr(est, method)(X, task))
    assert all(t.startswith("multitask.") for t in trusted_types())


# ----------------------------------------------------------------------------- output files
def test_output_through_a_symlink_updates_the_target_and_keeps_the_link(tmp_path):
    rc, model = _fit(tmp_path)
    assert rc == 0
    target = tmp_path / "real.csv"
    target.write_text("stale\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    data = _write(tmp_path, "new.csv", "a,b,task\n1,2,s1\n")
    assert main(["predict", "--model-file", str(model), "--input", data, "--output",
                 str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert "prediction" in target.read_text()


def _special_files(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    out = {"fifo": fifo, "folder": tmp_path / "folder"}
    out["folder"].mkdir()
    try:  # a character device node like /dev/null, made in the test folder (root only)
        os.mknod(tmp_path / "dev", stat.S_IFCHR | 0o666, os.makedev(1, 3))
        out["device"] = tmp_path / "dev"
    except (PermissionError, OSError):
        pass
    return out


def test_non_regular_destinations_are_never_replaced(tmp_path, capsys):
    rc, model = _fit(tmp_path)
    assert rc == 0
    data = _write(tmp_path, "new.csv", "a,b,task\n1,2,s1\n")
    for kind, path in _special_files(tmp_path).items():
        before = os.lstat(path)
        assert main(["predict", "--model-file", str(model), "--input", data, "--output",
                     str(path)]) == 2, kind
        _one_line_error(capsys, "not a regular file", "refusing")
        assert main(["fit", "--input", str(tmp_path / "train.csv"), "--target", "y", "--task",
                     "task", "--model", "L21Regressor", "--model-file", str(path)]) == 2
        _one_line_error(capsys, "not a regular file")
        after = os.lstat(path)
        assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino), kind
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert leftovers == []


def test_an_existing_prediction_column_is_kept_and_the_new_one_renamed(tmp_path, capsys):
    rc, model = _fit(tmp_path)
    assert rc == 0
    data = _write(tmp_path, "new.csv", "a,b,task,prediction\n1,2,s1,old\n0,1,s2,older\n")
    out = tmp_path / "p.csv"
    assert main(["predict", "--model-file", str(model), "--input", data, "--output",
                 str(out)]) == 0
    err = capsys.readouterr().err
    assert "'prediction' -> 'prediction_1'" in err
    got = pd.read_csv(out)
    assert got["prediction"].tolist() == ["old", "older"]
    expected = load_model(model).predict(np.array([[1.0, 2.0], [0.0, 1.0]]),
                                         np.array(["s1", "s2"]))
    np.testing.assert_array_equal(got["prediction_1"].to_numpy(), expected)


def test_outputs_never_replace_an_input(tmp_path, capsys):
    path = _write(tmp_path, "train.csv", GOOD)
    assert main(["fit", "--input", path, "--target", "y", "--task", "task", "--model",
                 "L21Regressor", "--model-file", path]) == 2
    _one_line_error(capsys, "--model-file", "is the input file")
    rc, model = _fit(tmp_path)
    for output in (path, str(model)):
        assert main(["predict", "--model-file", str(model), "--input", path, "--output",
                     output]) == 2
        _one_line_error(capsys, "--output", "is the input file")
    assert open(path).read() == GOOD


# ----------------------------------------------------------------------------- arguments
@pytest.mark.parametrize("extra, needles", [
    (("--param", "max_iter=1.5"), ["max_iter=1.5", "must be an integer"]),
    (("--param", "max_iter=none"), ["max_iter=None", "must be an integer"]),
    (("--param", "fit_intercept=3"), ["fit_intercept", "true or false"]),
    (("--param", "tol=abc"), ["tol='abc'", "must be a number"]),
    (("--cv", "--grid", "max_iter=10,2.5"), ["max_iter=2.5", "must be an integer"]),
])
def test_mistyped_parameters_are_one_line_errors(tmp_path, capsys, extra, needles):
    """``--param max_iter=1.5`` used to end in a traceback from the solver."""
    rc, model = _fit(tmp_path, *extra)
    assert rc == 2
    _one_line_error(capsys, *needles)
    assert not model.exists()


def test_a_whole_float_for_an_integer_parameter_is_accepted(tmp_path):
    rc, model = _fit(tmp_path, "--param", "max_iter=1e3")
    assert rc == 0 and load_model(model).max_iter == 1000


def test_a_model_file_with_an_unfitted_estimator(tmp_path, capsys):
    model = tmp_path / "unfitted.skops"
    save_model(E.L21Regressor(), model, metadata={"layout": "long", "features": ["a", "b"],
                                                  "task": "task", "targets": None})
    data = _write(tmp_path, "new.csv", "a,b,task\n1,2,s1\n")
    assert main(["predict", "--model-file", str(model), "--input", data, "--output",
                 str(tmp_path / "p.csv")]) == 2
    _one_line_error(capsys, "unfitted.skops", "not fitted")


@pytest.mark.parametrize("how", ["plain", "cv", "proba"])
def test_more_task_ids_than_the_model_knows(tmp_path, capsys, how):
    """Every prediction path names the unknown task (the cross-validated model used to end in
    an AttributeError)."""
    extra = {"plain": (), "cv": ("--cv", "--n-alphas", "2", "--cv-folds", "2"),
             "proba": ()}[how]
    data = GOOD if how != "proba" else GOOD.replace("3.0\n", "1\n").replace("1.0\n", "0\n") \
        .replace("2.0\n", "1\n").replace("0.5\n", "0\n").replace("0.7\n", "1\n")
    rc, model = _fit(tmp_path, *extra, data=data,
                     model="L21Classifier" if how == "proba" else "L21Regressor")
    assert rc == 0
    new = _write(tmp_path, "new.csv", "a,b,task\n1,2,s1\n3,4,s2\n5,6,s3\n")
    out = tmp_path / "p.csv"
    args = ["predict", "--model-file", str(model), "--input", new, "--output", str(out)]
    assert main(args + (["--proba"] if how == "proba" else [])) == 2
    _one_line_error(capsys, "row 3 (line 4)", "unknown task 's3'", "knows 2 tasks")
    assert not out.exists()


def test_task_ids_are_read_as_written_unless_asked_for_numbers(tmp_path):
    data = "a,task,y\n1,01,1.0\n2,01,2.0\n3,1,0.5\n4,1,0.1\n5,1,0.3\n"
    rc, model = _fit(tmp_path, data=data.replace("a,task", "a,b,task").replace(
        "\n1,", "\n1,0,").replace("\n2,", "\n2,1,").replace("\n3,", "\n3,0,").replace(
        "\n4,", "\n4,1,").replace("\n5,", "\n5,0,"))
    assert rc == 0
    assert load_model(model).tasks_.tolist() == ["01", "1"]
    rc, model = _fit(tmp_path, "--numeric-task-ids", data=open(tmp_path / "train.csv").read(),
                     name="n.skops")
    assert rc == 0
    assert load_model(model).tasks_.tolist() == [1]


# ----------------------------------------------------------------------------- signals
_ATOMIC_CHILD = """
import json, os, signal, sys, time
from multitask.persistence import TerminatedBySignal, atomic_write
folder = sys.argv[1]
results = {}
for name in ("SIGTERM", "SIGHUP", "SIGINT"):
    target = os.path.join(folder, name + ".csv")
    with open(target, "w") as fh:
        fh.write("previous")

    def write(tmp, name=name):
        with open(tmp, "w") as fh:
            fh.write("partial")
        os.kill(os.getpid(), getattr(signal, name))
        time.sleep(30)  # the signal ends the write before this does

    try:
        atomic_write(target, write)
        results[name] = "returned"
    except TerminatedBySignal as exc:
        results[name] = "TerminatedBySignal %d" % exc.signum
    except KeyboardInterrupt:
        results[name] = "KeyboardInterrupt"
    results[name] += " " + open(target).read()
print(json.dumps({"results": results, "files": sorted(os.listdir(folder)),
                  "handlers": [signal.getsignal(s) == signal.SIG_DFL
                               for s in (signal.SIGTERM, signal.SIGHUP)]}))
"""


def _interruptible():
    """In the child before it starts Python: SIGINT, SIGHUP and SIGTERM back to their default
    actions. A test run started in the background of a non-interactive shell inherits SIGINT
    ignored (Python then installs no KeyboardInterrupt handler), one started under ``nohup``
    SIGHUP ignored (the write then rightly leaves it ignored), so they could not be tested
    there."""
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def test_signals_during_a_write_remove_the_temporary_file(tmp_path):
    """SIGTERM and SIGHUP used to kill the process and leave the temporary file behind."""
    proc = subprocess.run([sys.executable, "-c", _ATOMIC_CHILD, str(tmp_path)],
                          capture_output=True, text=True, timeout=60,
                          preexec_fn=_interruptible)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["results"] == {"SIGTERM": "TerminatedBySignal 15 previous",
                              "SIGHUP": "TerminatedBySignal 1 previous",
                              "SIGINT": "KeyboardInterrupt previous"}
    assert out["files"] == ["SIGHUP.csv", "SIGINT.csv", "SIGTERM.csv"]  # no temporary file
    assert out["handlers"] == [True, True]  # default handlers restored afterwards


_CLI_CHILD = """
import os, sys, time
import pandas as pd
from multitask.cli import main
original = pd.DataFrame.to_csv

def slow(self, path, **kw):
    original(self, path, **kw)
    print("WRITING", flush=True)
    time.sleep(30)

pd.DataFrame.to_csv = slow
model, data, out = sys.argv[1:4]
for _ in range(2):
    rc = main(["predict", "--model-file", model, "--input", data, "--output", out])
    print("RC", rc, flush=True)
"""


def test_the_command_line_stops_cleanly_on_sigterm_and_ctrl_c(tmp_path):
    """One line on stderr (SIGINT used to print a 30-line traceback), exit 143 / 130, no
    temporary file, no output."""
    import signal

    rc, model = _fit(tmp_path)
    assert rc == 0
    data = _write(tmp_path, "new.csv", "a,b,task\n1,2,s1\n")
    out = tmp_path / "p.csv"
    child = subprocess.Popen([sys.executable, "-c", _CLI_CHILD, str(model), data, str(out)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=_interruptible)
    codes = []
    try:
        for sig in (signal.SIGTERM, signal.SIGINT):
            assert child.stdout.readline().strip() == "WRITING"
            child.send_signal(sig)
            line = child.stdout.readline().split()
            codes.append(int(line[1]))
        _, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert codes == [143, 130]
    lines = err.strip().splitlines()
    assert len(lines) == 2, err
    assert lines[0].startswith("multitask: terminated by SIGTERM")
    assert lines[1].startswith("multitask: interrupted")
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_the_atomic_writer_keeps_permissions_and_raises_on_failure(tmp_path):
    target = tmp_path / "f.txt"
    target.write_text("old")
    os.chmod(target, 0o640)
    atomic_write(target, lambda tmp: open(tmp, "w").write("new"))
    assert target.read_text() == "new" and stat.S_IMODE(os.stat(target).st_mode) == 0o640

    def fail(tmp):
        open(tmp, "w").write("half")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        atomic_write(target, fail)
    assert target.read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == [
        "f.txt"]
    with pytest.raises(ModelFileError, match="does not exist"):
        atomic_write(tmp_path / "nope" / "f.txt", lambda tmp: None)
    assert issubclass(TerminatedBySignal, BaseException)
    assert not issubclass(TerminatedBySignal, Exception)


def test_importing_the_command_line_loads_no_experiment():
    code = textwrap.dedent("""
        import sys, multitask.cli
        print([m for m in sys.modules if m.startswith("multitask.experiments")])
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
