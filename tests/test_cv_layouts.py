"""MultiTaskCV on every input layout the estimators accept.

Per-task Python lists of lists (and per-task column targets) failed with ``AttributeError:
'list' object has no attribute 'shape'``; long format with ``y`` a one-column DataFrame made
every CV fit fail on a shape mismatch (``y_true has shape (k, 1) but y_pred has shape (k,)``).
Each layout must give the cross-validation of the same data as plain arrays.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from multitask import L21Regressor, MultiTaskCV, TraceNormClassifier
from multitask.model_selection import to_long_format


def _cv(est, *args):
    return MultiTaskCV(est, n_alphas=3, cv=2, error_score="raise").fit(*args)


def _same(a, b):
    np.testing.assert_allclose(a.scores_, b.scores_, rtol=1e-10)
    assert a.best_params_ == b.best_params_


@pytest.mark.parametrize("clf", [False, True])
def test_per_task_python_lists_of_lists(datagen, clf):
    Xs, ys = (datagen.classification_lists(sizes=(20, 24, 18), d=3) if clf
              else datagen.regression_lists(sizes=(20, 24, 18), d=3))
    est = TraceNormClassifier() if clf else L21Regressor()
    ref = _cv(est, Xs, ys)
    plain = _cv(est, [x.tolist() for x in Xs], [v.tolist() for v in ys])
    _same(plain, ref)
    columns = _cv(est, [x.tolist() for x in Xs], [v.reshape(-1, 1) for v in ys])
    _same(columns, ref)
    frames = _cv(est, [pd.DataFrame(x) for x in Xs], [pd.Series(v) for v in ys])
    _same(frames, ref)
    pred = plain.predict([x.tolist() for x in Xs])
    assert isinstance(pred, list) and [len(p) for p in pred] == [len(v) for v in ys]


@pytest.mark.parametrize("clf", [False, True])
def test_long_format_with_a_one_column_dataframe_target(datagen, clf):
    Xs, ys = (datagen.classification_lists(sizes=(20, 24, 18), d=3) if clf
              else datagen.regression_lists(sizes=(20, 24, 18), d=3))
    Xl, yl = to_long_format(Xs, ys)
    task = Xl[:, -1].astype(int)
    est = TraceNormClassifier() if clf else L21Regressor()
    ref = _cv(est, Xl[:, :-1], yl, task)
    frame = pd.DataFrame({"target": yl})
    _same(_cv(est, Xl[:, :-1], frame, task), ref)
    _same(_cv(est, pd.DataFrame(Xl[:, :-1]), frame, task), ref)
    _same(_cv(est.set_params(task_column=-1), Xl, frame), ref)
    _same(_cv(est.set_params(task_column=-1), Xl, yl.reshape(-1, 1)), ref)
