"""The data of the main job, ``multitask benchmark``: a named data set or the user's arrays.

:class:`BenchmarkData` holds one multi-task data set as the benchmark needs it: per-task
arrays (long format grouped by task) or a design shared by all tasks with one target column
per task, the kind of problem (regression, binary or multi-class classification, counts with
an optional exposure, a quantile, heavy tails: :mod:`multitask.benchmark_kinds`), the task
names, and what the user said about the tasks (their order in time, a graph between them).
:func:`make_benchmark_data` builds it from arrays in the library's three layouts and detects
the kind of problem; :func:`load_benchmark_data` loads a data set of
:mod:`multitask.datasets` by name (:data:`DATASETS`); :func:`benchmark_splits` draws the
train/test splits the benchmark scores on and standardizes the features.

This module holds the named data sets; the rest is built in parts whose public names are
importable from here: :mod:`multitask.benchmark_data_build` (:class:`BenchmarkData`, the
kind, the arrays checked), :mod:`multitask.benchmark_data_tasks` (task ids and their order)
and :mod:`multitask.benchmark_data_splits` (the splits and the standardization).

Splits (the School protocol made general):

* School's official splits by default (``train_ratio=None``);
* per-task data (long format, lists): every task split at random with
  ``round(train_ratio * n_t)`` training rows (:func:`~multitask.datasets.split_tasks`),
  stratified by class within each task for classification;
* a shared design: the rows split once for all tasks (:func:`~multitask.datasets.split_shared`:
  a row is one example of every task, and the design stays stored once), every task's
  training part checked to hold both classes for classification;
* features standardized with the training part's pooled mean and standard deviation (a sparse
  design is only scaled, which keeps it sparse; every model fits an intercept per task).

Examples
--------
>>> import numpy as np
>>> from multitask.benchmark_data import make_benchmark_data
>>> rng = np.random.default_rng(0)
>>> X = rng.standard_normal((40, 3))
>>> data = make_benchmark_data(X, rng.standard_normal((40, 2)), name="toy")
>>> data.kind, data.n_tasks, data.shared
('regression', 2, True)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from multitask.benchmark_data_build import (
    BenchmarkData,
    detect_kind,
    kind_hint,
    make_benchmark_data,
)
from multitask.benchmark_data_splits import DEFAULT_TRAIN_RATIO, benchmark_splits
from multitask.benchmark_data_tasks import match_task_ids, order_tasks
from multitask.benchmark_kinds import KINDS as _KINDS

__all__ = [
    "DATASETS",
    "DEFAULT_TRAIN_RATIO",
    "KINDS",
    "BenchmarkData",
    "benchmark_splits",
    "detect_kind",
    "kind_hint",
    "load_benchmark_data",
    "make_benchmark_data",
    "match_task_ids",
    "order_tasks",
]

#: The kinds of problem the benchmark runs (:mod:`multitask.benchmark_kinds`).
KINDS = _KINDS

#: The data sets :func:`load_benchmark_data` loads by name, and what they are. Only School is
#: shipped with the package; the others are read from the data folder
#: (:func:`multitask.datasets.find_data_dir`). The splice-site data are left out: one task
#: of DNA strings, nothing to share between tasks.
DATASETS: dict[str, str] = {
    "school": "School exam scores: 139 schools, 15,362 students, 27 features, regression "
              "(shipped; 10 official splits)",
    "sarcos": "SARCOS robot arm: 7 joint torques, 4,449 rows, 21 features, regression, "
              "shared design",
    "yeast": "Yeast gene functions: 14 labels, 2,417 rows, 103 features, classification, "
             "shared design",
    "scene": "Scene images: 6 labels, 2,407 rows, 294 features, classification, shared design",
    "letters": "Handwritten letters: 7 letter pairs, 128 pixels, classification, per-task rows",
    "newsgroups": "20 Newsgroups: 4 tasks, 2,000 sparse term features, classification, "
                  "per-task rows",
    "be_mtpl97": "Belgian motor insurance claims: 80 postal districts, 163,212 policies, 10 "
                 "features, counts with exposure (Poisson)",
    "vowel": "Deterding vowels: 15 speakers, 990 rows, 10 features, 11 classes (multinomial)",
}


# ----------------------------------------------------------------------------- named sets
def _school(data_dir) -> BenchmarkData:
    from multitask.datasets import load_school

    school = load_school()
    return BenchmarkData(name="School", X=list(school.X), y=list(school.y), kind="regression",
                         task_names=[str(n) for n in school.task_names],
                         official_splits=list(school.splits), task_word="schools")


def _be_mtpl97(data_dir) -> BenchmarkData:
    from multitask.datasets import load_be_mtpl97

    d = load_be_mtpl97(data_dir)
    data = make_benchmark_data(d.X, d.y, d.task, name="beMTPL97", kind="count",
                               task_word="districts", feature_names=list(d.feature_names),
                               exposure=d.exposure, exposure_name="expo")
    return replace(data, **NAMED_DEFAULTS["be_mtpl97"])


def _vowel(data_dir) -> BenchmarkData:
    from multitask.datasets import load_vowel

    d = load_vowel(data_dir)
    data = make_benchmark_data(d.X, d.y, d.task, name="Vowel", kind="multiclass",
                               task_word="speakers", feature_names=list(d.feature_names))
    return replace(data, **NAMED_DEFAULTS["vowel"])


#: What a named data set's run does by default when it differs from the main job's defaults
#: (:class:`BenchmarkData`'s ``default_leave_out`` and ``default_splits``), so that
#: ``multitask benchmark NAME`` ends in minutes on two cores; ``--models`` and ``--splits``
#: run the rest.
NAMED_DEFAULTS: dict[str, dict] = {
    "be_mtpl97": {"default_leave_out": {
        "CappedTrace": "non-convex, fitted in stages: about 10 times the time of the others "
                       "on these 122,000 training rows",
        "CappedL1": "non-convex, fitted in stages: about 10 times the time of the others",
        "ConvexASO": "the clustered model's relaxation, with its fit on these data",
    }},
    "vowel": {},
}


def _loader(name: str) -> Callable[[Any], Any]:
    import multitask.datasets as ds

    return {"sarcos": ds.load_sarcos, "yeast": ds.load_yeast, "scene": ds.load_scene,
            "letters": ds.load_letters, "newsgroups": ds.load_newsgroups}[name]


def load_benchmark_data(name: str, data_dir: str | os.PathLike | None = None) -> BenchmarkData:
    """Load a data set of :data:`DATASETS` by name.

    Parameters
    ----------
    name : str
        A key of :data:`DATASETS` (any case).
    data_dir : str or path-like, optional
        The data folder of the data sets other than School (see
        :func:`multitask.datasets.find_data_dir`).

    Returns
    -------
    BenchmarkData

    Raises
    ------
    ValueError
        On an unknown name (listing the known ones).
    FileNotFoundError
        When the data folder or a file of the data set is missing.
    """
    key = str(name).strip().lower()
    if key not in DATASETS:
        raise ValueError(f"Unknown data set {name!r}: choose among {', '.join(DATASETS)}, or "
                         "give a file with --input.")
    if key == "school":
        return _school(data_dir)
    if key == "be_mtpl97":
        return _be_mtpl97(data_dir)
    if key == "vowel":
        return _vowel(data_dir)
    bunch = _loader(key)(data_dir)
    Y = bunch.Y if "Y" in bunch else None
    return make_benchmark_data(bunch.X if Y is not None else list(bunch.X),
                               Y if Y is not None else list(bunch.y), name=key.capitalize(),
                               task_names=list(bunch.task_names))
