"""Data sets for multi-task learning.

* :func:`load_school`: the School data, shipped inside the package (with its 10 official
  splits).
* Loaders for the real data sets kept in the data folder (``shared/data`` beside the clone, or
  the folder named by the environment variable ``MULTITASK_DATA``; see :func:`find_data_dir`):
  :func:`load_sarcos`, :func:`load_yeast`, :func:`load_scene`, :func:`load_letters`,
  :func:`load_newsgroups`, :func:`load_splice`, :func:`load_be_mtpl97` (claim counts with
  exposure, 80 district tasks), :func:`load_vowel` (11 vowel classes, 15 speaker tasks).
  Nothing is downloaded.
* Random splits: :func:`split_tasks` (per task) and :func:`split_shared` (shared design).
* Synthetic data with known structure (:mod:`multitask.datasets.synthetic`):
  :func:`make_linear_tasks` (given weights), :func:`make_low_rank_tasks`,
  :func:`make_joint_sparse_tasks`, :func:`make_sparse_low_rank_tasks`,
  :func:`make_outlier_tasks`, :func:`make_tree_tasks` (tasks on a tree),
  :func:`make_multilabel_tasks` (sparse documents, low-rank labels with outliers).
"""

from . import synthetic
from ._loaders import (
    LETTER_PAIRS,
    NEWSGROUP_PAIRS,
    load_be_mtpl97,
    load_letters,
    load_newsgroups,
    load_sarcos,
    load_scene,
    load_splice,
    load_vowel,
    load_yeast,
)
from ._paths import ENV_VAR, find_data_dir
from ._school import load_school
from ._split import split_shared, split_tasks
from .synthetic import *  # noqa: F403  (the generators, synthetic.__all__)

__all__ = [
    "ENV_VAR",
    "LETTER_PAIRS",
    "NEWSGROUP_PAIRS",
    "find_data_dir",
    "load_be_mtpl97",
    "load_letters",
    "load_newsgroups",
    "load_sarcos",
    "load_scene",
    "load_school",
    "load_splice",
    "load_vowel",
    "load_yeast",
    "split_shared",
    "split_tasks",
    *synthetic.__all__,
]
