"""Tests of the loaders of the claim counts (beMTPL97) and the vowels (Deterding data).

Expected sizes and figures come from the README of each folder of ``shared/data``; the tests
are skipped only when the data folder is absent.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from multitask.datasets import find_data_dir, load_be_mtpl97, load_vowel


@pytest.fixture(scope="module")
def data_root():
    """The data folder. Skip only when it is truly absent (a wrong MULTITASK_DATA fails)."""
    if os.environ.get("MULTITASK_DATA", "").strip():
        return find_data_dir()
    try:
        return find_data_dir()
    except FileNotFoundError as exc:
        pytest.skip(f"data folder not available: {exc}")


@pytest.fixture(scope="module")
def claims(data_root):
    return load_be_mtpl97(data_root)


@pytest.fixture(scope="module")
def vowel(data_root):
    return load_vowel(data_root)


def test_be_mtpl97_shapes_and_features(claims):
    n = 163_212
    assert claims.X.shape == (n, 10) and claims.X.dtype == np.float64
    assert claims.y.shape == claims.exposure.shape == claims.task.shape == (n,)
    assert list(claims.feature_names) == [
        "ageph", "bm", "power", "agec", "fleet", "sex_female", "fuel_diesel", "use_work",
        "coverage_TPL+", "coverage_TPL++"]
    for j in range(4, 10):  # fleet and the indicators
        assert set(np.unique(claims.X[:, j])) <= {0.0, 1.0}
    assert "Henckaerts" in claims.DESCR and "postcode // 100" in claims.DESCR


def test_be_mtpl97_counts_and_exposure(claims):
    # README: nclaims 0: 144,936; 1: 16,539; 2: 1,556; 3: 162; 4: 17; 5: 2
    assert np.bincount(claims.y.astype(int)).tolist() == [144936, 16539, 1556, 162, 17, 2]
    assert np.all(claims.y == np.round(claims.y))
    assert claims.exposure.min() > 0 and claims.exposure.max() == 1
    assert claims.exposure.min() == pytest.approx(0.0027, abs=5e-5)
    assert claims.exposure.mean() == pytest.approx(0.89, abs=0.005)
    # README: overall claim frequency 0.139 claims per policy-year
    assert claims.y.sum() / claims.exposure.sum() == pytest.approx(0.139, abs=5e-4)


def test_be_mtpl97_categorical_counts(claims):
    names = list(claims.feature_names)
    col = {f: claims.X[:, names.index(f)] for f in names}
    assert col["coverage_TPL+"].sum() == 45_984 and col["coverage_TPL++"].sum() == 22_104
    assert col["sex_female"].sum() == 43_168
    assert col["fuel_diesel"].sum() == 50_394
    assert col["use_work"].sum() == 7_878
    assert col["fleet"].sum() == 5_171
    assert (col["ageph"].min(), col["ageph"].max()) == (18, 95)
    assert (col["bm"].min(), col["bm"].max()) == (0, 22)


def test_be_mtpl97_district_tasks(claims):
    # README: 80 districts of 246 to 6,291 policies (median 1,644), 219 to 5,215
    # policy-years, 19 to 1,282 claims
    assert np.array_equal(claims.task, claims.postcode // 100)
    assert len(np.unique(claims.postcode)) == 583
    assert claims.task_names.shape == (80,)
    assert np.array_equal(claims.task_names, np.unique(claims.task))
    sizes = np.array([np.sum(claims.task == t) for t in claims.task_names])
    assert (sizes.min(), sizes.max(), np.median(sizes)) == (246, 6291, 1644)
    years = np.array([claims.exposure[claims.task == t].sum() for t in claims.task_names])
    assert round(years.min()) == 219 and round(years.max()) == 5215
    counts = np.array([claims.y[claims.task == t].sum() for t in claims.task_names])
    assert (counts.min(), counts.max()) == (19, 1282)


def test_vowel_shapes_tasks_classes(vowel):
    assert vowel.X.shape == (990, 10) and vowel.X.dtype == np.float64
    assert vowel.y.shape == vowel.task.shape == vowel.sex.shape == (990,)
    assert list(vowel.feature_names) == [f"f{i}" for i in range(10)]
    assert np.array_equal(vowel.task_names, np.arange(15))
    # README: 15 speakers x 66 rows, every vowel 6 times per speaker
    for t in range(15):
        assert np.bincount(vowel.y[vowel.task == t], minlength=11).tolist() == [6] * 11
    assert -5.212 < vowel.X.min() < -5.21 and 5.07 < vowel.X.max() < 5.075


def test_vowel_original_split_and_sex(vowel):
    # README: speakers 0-7 train (528 rows), 8-14 test (462 rows); 0-3 and 8-11 male
    assert vowel.train_speaker.sum() == 528
    assert np.array_equal(vowel.train_speaker, vowel.task <= 7)
    female = {t for t in range(15) if vowel.sex[vowel.task == t].min() == 1}
    assert female == {4, 5, 6, 7, 12, 13, 14}
    for t in range(15):
        assert np.ptp(vowel.sex[vowel.task == t]) == 0
    assert "Deterding" in vowel.DESCR


def test_missing_files_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="beMTPL97.csv.gz"):
        load_be_mtpl97(tmp_path)
    with pytest.raises(FileNotFoundError, match="vowel-context.data"):
        load_vowel(tmp_path)


def test_vowel_bad_file_refused(tmp_path):
    folder = tmp_path / "vowel_deterding"
    folder.mkdir()
    (folder / "vowel-context.data").write_text("0, 0, 0, 1, 2, 3\n")
    with pytest.raises(ValueError, match="14 columns"):
        load_vowel(tmp_path)
    (folder / "vowel-context.data").write_text(
        "0, 0, 0, " + ", ".join(["0.1"] * 10) + ", 11\n")
    with pytest.raises(ValueError, match="vowel column"):
        load_vowel(tmp_path)


def test_be_mtpl97_bad_file_refused(tmp_path):
    import pandas as pd

    folder = tmp_path / "be_mtpl97"
    folder.mkdir()
    row = {"nclaims": 1, "expo": 0.5, "postcode": 1000, "ageph": 30, "bm": 1, "power": 50,
           "agec": 3, "fleet": 0, "sex": "male", "fuel": "diesel", "use": "private",
           "coverage": "TPL"}
    path = folder / "beMTPL97.csv.gz"
    pd.DataFrame([{k: v for k, v in row.items() if k != "bm"}]).to_csv(path, index=False)
    with pytest.raises(ValueError, match="'bm' not found"):
        load_be_mtpl97(tmp_path)
    pd.DataFrame([{**row, "coverage": "MTPL"}]).to_csv(path, index=False)
    with pytest.raises(ValueError, match="'coverage' holds the level 'MTPL'"):
        load_be_mtpl97(tmp_path)
    pd.DataFrame([{**row, "expo": 0.0}]).to_csv(path, index=False)
    with pytest.raises(ValueError, match="not positive"):
        load_be_mtpl97(tmp_path)
    pd.DataFrame([row]).to_csv(path, index=False)
    one = load_be_mtpl97(tmp_path)
    assert one.X.tolist() == [[30, 1, 50, 3, 0, 0, 1, 0, 0, 0]]
    assert one.task.tolist() == [10] and one.exposure.tolist() == [0.5]
