"""Cross-validation of classifiers whose missing labels (``None`` or NaN) are targets not
observed (``missing_targets="ignore"``): every label type, every layout, and the command line."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from multitask import L21Classifier, MultiTaskCV
from multitask.cli import main

LABELS = {
    "ints": (0, 1),
    "bools": (False, True),
    "strings": ("no", "yes"),
    "floats": (0.0, 1.0),
}


def _labels(kind: str, positive: np.ndarray, missing) -> np.ndarray:
    neg, pos = LABELS[kind]
    y = np.array([pos if p else neg for p in positive], dtype=object)
    for i in (3, 17):
        y[i] = missing
    return y


def _long(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(90, 3))
    task = np.repeat(["a", "b", "c"], 30)
    return X, task, X[:, 0] + 0.3 * rng.normal(size=90) > 0


@pytest.mark.parametrize("kind", sorted(LABELS))
@pytest.mark.parametrize("missing", [None, np.nan], ids=["None", "NaN"])
def test_cv_takes_every_label_type_with_missing_labels(kind, missing):
    """0/1 labels with None as "not observed" were refused ("Unknown label type") although
    the bare classifier accepts them."""
    X, task, positive = _long()
    y = _labels(kind, positive, missing)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bare = L21Classifier(missing_targets="ignore").fit(X, y, task)
        cv = MultiTaskCV(L21Classifier(missing_targets="ignore"), n_alphas=3).fit(X, y, task)
    assert set(np.asarray(cv.classes_).tolist()) == set(np.asarray(bare.classes_).tolist())
    assert np.isfinite(cv.best_score_)
    assert set(cv.predict(X, task).tolist()) <= set(LABELS[kind])


def test_cv_takes_missing_labels_of_a_shared_design_and_one_task():
    X, _, positive = _long()
    Y = np.column_stack([_labels("ints", positive, None), _labels("ints", X[:, 1] > 0, None)])
    Y[5, 1] = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        shared = MultiTaskCV(L21Classifier(missing_targets="ignore"), n_alphas=3).fit(X, Y)
        single = MultiTaskCV(L21Classifier(missing_targets="ignore"), n_alphas=3).fit(
            X, Y[:, 0])
    assert np.isfinite(shared.best_score_) and np.isfinite(single.best_score_)


def test_cv_still_refuses_continuous_labels_with_missing_ones():
    X, task, _ = _long()
    y = np.random.default_rng(1).normal(size=90).astype(object)
    y[3] = None
    with pytest.raises(ValueError, match="label|classes"):
        MultiTaskCV(L21Classifier(missing_targets="ignore"), n_alphas=3).fit(X, y, task)


@pytest.mark.parametrize("layout", ["long", "wide"])
def test_cli_fit_cv_with_an_empty_target_cell(tmp_path, capsys, layout):
    """``multitask fit --missing-targets ignore --cv`` failed on a classification file with an
    empty target cell."""
    X, task, positive = _long()
    df = pd.DataFrame(X, columns=["f1", "f2", "f3"])
    if layout == "long":
        df["task"] = task
        df["label"] = pd.array([int(p) for p in positive], dtype="Int64")
        df.loc[[4, 40], "label"] = pd.NA
        cols = ["--target", "label", "--task", "task"]
    else:
        df["y1"] = pd.array([int(p) for p in positive], dtype="Int64")
        df["y2"] = pd.array([int(v) for v in X[:, 1] > 0], dtype="Int64")
        df.loc[3, "y1"] = pd.NA
        df.loc[8, "y2"] = pd.NA
        cols = ["--targets", "y1", "y2"]
    path = tmp_path / "labels.csv"
    df.to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(["fit", "--input", str(path), *cols, "--model", "L21Classifier",
                     "--missing-targets", "ignore", "--cv", "--n-alphas", "3", "--quiet",
                     "--model-file", str(tmp_path / "m.skops")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "cross-validation" in out and (tmp_path / "m.skops").exists()
