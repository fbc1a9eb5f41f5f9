"""scikit-learn's estimator checks over every public classifier.

The list of estimators and their expected failures are those of
``tests/test_sklearn_compat.py``, which checks the other estimators (two files, which the
default run's two test workers take one each).
"""

from __future__ import annotations

from sklearn.utils.estimator_checks import parametrize_with_checks
from test_sklearn_compat import CLASSIFIERS, _expected_failed, run_check


@parametrize_with_checks(CLASSIFIERS, expected_failed_checks=_expected_failed)
def test_sklearn_estimator_checks(estimator, check):
    run_check(estimator, check)
