"""The School data set, shipped inside the package as ``data/school.npz``."""

from __future__ import annotations

from importlib import resources

import numpy as np
from sklearn.utils import Bunch

N_SCHOOL_SPLITS = 10

SCHOOL_FEATURE_NAMES: tuple[str, ...] = (
    *(f"exam_year_{k}" for k in range(3)),
    "pct_free_school_meals",
    "pct_vr_band_1",
    *(f"student_gender_{k}" for k in range(2)),
    *(f"student_vr_band_{k}" for k in range(3)),
    *(f"student_ethnic_group_{k}" for k in range(11)),
    *(f"school_gender_{k}" for k in range(3)),
    *(f"school_denomination_{k}" for k in range(3)),
)
"""Names of the 27 School features (the bias column, when included, is named ``"bias"``)."""

SCHOOL_DESCR = """\
School data set (Inner London Education Authority exam scores)
==============================================================

Multi-task regression: 139 tasks (secondary schools), 15,362 students in all, 22 to 251 per
school. Target: exam score (integers 1 to 70). Features (27, plus a constant bias column):

* exam_year_0..2: one-hot exam year (1985, 1986, 1987 in that order according to the
  PyMTL README; the order of the levels is not verified);
* pct_free_school_meals: percentage of the school's students eligible for free school meals;
* pct_vr_band_1: percentage of the school's students in verbal-reasoning band 1;
* student_gender_0..1: one-hot gender of the student;
* student_vr_band_0..2: one-hot verbal-reasoning band of the student (15 rows have none);
* student_ethnic_group_0..10: one-hot ethnic group (11 levels);
* school_gender_0..2: one-hot school gender, constant within a school;
* school_denomination_0..2: one-hot school denomination, constant within a school.

The one-hot groups were checked on the data (each row has exactly one level per group); the
meaning of each level follows the ILEA documentation and is not checked.

The 10 official random splits (about 75% training / 25% test per school, as distributed with
the data by Argyriou, Evgeniou and Pontil) are in ``splits``; each split partitions every
school.

Origin: the file ``school_b.mat`` distributed with "Convex multi-task feature learning"
(identical to ``data/school.mat`` of the MALSAR toolbox), converted by
``multitask/datasets/_build_school.py``.

References
----------
H. Goldstein, "Multilevel modelling of survey data", The Statistician 40:235-244, 1991.
A. Argyriou, T. Evgeniou, M. Pontil, "Convex multi-task feature learning", Machine Learning
73(3):243-272, 2008.
J. Zhou, J. Chen, J. Ye, "MALSAR: Multi-tAsk Learning via StructurAl Regularization",
Arizona State University, 2011.
"""


def _read_npz() -> dict[str, np.ndarray]:
    ref = resources.files("multitask.datasets").joinpath("data", "school.npz")
    with resources.as_file(ref) as path, np.load(path) as npz:
        return {key: npz[key] for key in npz.files}


def load_school(*, include_bias: bool = False, return_long: bool = False) -> Bunch:
    """Load the School data set (139 schools, 15,362 students), shipped with the package.

    Parameters
    ----------
    include_bias : bool, default=False
        Append the constant bias column (all ones) as the last column.
    return_long : bool, default=False
        Return the rows of all schools stacked (long format, with a task id per row) instead
        of lists of per-school arrays.

    Returns
    -------
    data : sklearn.utils.Bunch
        With keys

        X : list of 139 ndarray of shape (n_t, 27) or (n_t, 28), float64
            Per-school features (bias last when ``include_bias``). With ``return_long``: one
            ndarray of shape (15362, 27) or (15362, 28).
        y : list of 139 ndarray of shape (n_t,), float64
            Exam scores. With ``return_long``: one ndarray of shape (15362,).
        task : ndarray of shape (15362,), int64
            Only with ``return_long``: the school (0..138) of each row.
        offsets : ndarray of shape (140,), int64
            Rows of school ``t`` in the stacked order are ``offsets[t]:offsets[t + 1]``.
        task_names : ndarray of shape (139,), str
            ``"school_0"`` ... ``"school_138"``.
        feature_names : ndarray of shape (27,) or (28,), str
        splits : list of 10 dict
            The official splits. Each has keys ``"train"`` and ``"test"``, each a list of 139
            int64 arrays of row indices within each school, in increasing order. Together they
            partition the school's rows (about 75% train).
        DESCR : str
            Description, origin and references.

    Notes
    -----
    For the stacked row index of a within-school index ``i`` of school ``t``, use
    ``offsets[t] + i``.

    Examples
    --------
    >>> from multitask.datasets import load_school
    >>> data = load_school()
    >>> len(data.X), data.X[0].shape[1]
    (139, 27)
    >>> split = data.splits[0]
    >>> X_train = [X[idx] for X, idx in zip(data.X, split["train"])]
    """
    arrays = _read_npz()
    X_all = arrays["X"].astype(np.float64)
    y_all = arrays["y"].astype(np.float64)
    offsets = arrays["offsets"].astype(np.int64)
    n_rows = X_all.shape[0]
    n_tasks = offsets.size - 1
    if not include_bias:
        X_all = np.ascontiguousarray(X_all[:, :-1])
    feature_names = list(SCHOOL_FEATURE_NAMES) + (["bias"] if include_bias else [])

    masks = np.unpackbits(arrays["train_mask"], axis=1, count=n_rows).astype(bool)
    splits = []
    for mask in masks:
        train, test = [], []
        for t in range(n_tasks):
            block = mask[offsets[t] : offsets[t + 1]]
            train.append(np.flatnonzero(block).astype(np.int64))
            test.append(np.flatnonzero(~block).astype(np.int64))
        splits.append({"train": train, "test": test})

    bunch = Bunch(
        offsets=offsets,
        task_names=np.array([f"school_{t}" for t in range(n_tasks)]),
        feature_names=np.array(feature_names),
        splits=splits,
        DESCR=SCHOOL_DESCR,
    )
    if return_long:
        bunch.X = X_all
        bunch.y = y_all
        bunch.task = np.repeat(np.arange(n_tasks, dtype=np.int64), np.diff(offsets))
    else:
        bunch.X = [X_all[offsets[t] : offsets[t + 1]].copy() for t in range(n_tasks)]
        bunch.y = [y_all[offsets[t] : offsets[t + 1]].copy() for t in range(n_tasks)]
    return bunch
