"""``multitask fit``: the model named is the model fitted (not a deprecated spelling of it), and
the fit message counts the rows the model was fitted on."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from multitask.cli import main
from multitask.persistence import load_model


def _long_file(tmp_path, missing=()):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    df = pd.DataFrame(X, columns=["f1", "f2", "f3"])
    df["task"] = np.repeat(["a", "b", "c"], 20)
    df["label"] = pd.array((X[:, 0] > 0).astype(int), dtype="Int64")
    df.loc[list(missing), "label"] = pd.NA
    path = tmp_path / "train.csv"
    df.to_csv(path, index=False)
    return path


def _fit(path, tmp_path, *extra):
    return main(["fit", "--input", str(path), "--target", "label", "--task", "task", "--quiet",
                 "--model-file", str(tmp_path / "m.skops"), *extra])


@pytest.mark.parametrize("typed", ["MultiTaskKernelClassifier", "multitaskkernelclassifier"])
def test_the_new_name_is_not_mapped_to_the_deprecated_alias(tmp_path, typed):
    """``--model MultiTaskKernelClassifier`` warned that ``MultitaskKernelClassifier`` is
    deprecated (the case-insensitive lookup kept the alias)."""
    path = _long_file(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        assert _fit(path, tmp_path, "--model", typed) == 0
    model = load_model(tmp_path / "m.skops")
    assert type(model).__name__ == "MultiTaskKernelClassifier"


def test_the_deprecated_spelling_still_works_and_says_so(tmp_path, capsys):
    path = _long_file(tmp_path)
    with pytest.warns(FutureWarning, match="deprecated"):
        assert _fit(path, tmp_path, "--model", "MultitaskKernelClassifier") == 0
    capsys.readouterr()
    assert main(["fit", "--list-models"]) == 0
    out = capsys.readouterr().out
    assert "deprecated spelling of MultiTaskKernelClassifier" in out


def test_fit_message_counts_rows_fitted_not_rows_left_out(tmp_path, capsys):
    """With ``--missing-targets ignore`` the message counted the rows whose target was left
    out."""
    path = _long_file(tmp_path, missing=(4, 40))
    assert _fit(path, tmp_path, "--model", "L21Classifier", "--missing-targets", "ignore") == 0
    out = capsys.readouterr().out
    assert "on 58 rows (2 row(s) without a target left out)" in out


def test_fit_message_of_a_shared_design_counts_missing_cells(tmp_path, capsys):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2))
    df = pd.DataFrame(X, columns=["f1", "f2"])
    df["y1"] = X[:, 0] + rng.normal(size=40)
    df["y2"] = X[:, 1] + rng.normal(size=40)
    df.loc[[2, 5], "y1"] = np.nan
    df.loc[[5], "y2"] = np.nan
    path = tmp_path / "wide.csv"
    df.to_csv(path, index=False)
    assert main(["fit", "--input", str(path), "--targets", "y1", "y2", "--quiet",
                 "--missing-targets", "ignore", "--model", "L21Regressor",
                 "--model-file", str(tmp_path / "m.skops")]) == 0
    out = capsys.readouterr().out
    assert "on 39 rows (3 missing target(s) left out; 1 row(s) without any)" in out
