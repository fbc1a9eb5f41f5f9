"""Scikit-learn estimators, one module per model family."""

from multitask.estimators.baselines import (
    IndependentLassoClassifier,
    IndependentLassoRegressor,
    IndependentRidgeClassifier,
    IndependentRidgeRegressor,
    L21Classifier,
    L21Regressor,
    MultiTaskClassifier,
    MultiTaskRegressor,
    PooledClassifier,
    PooledRegressor,
    TraceNormClassifier,
    TraceNormRegressor,
)

__all__ = [
    "IndependentLassoClassifier",
    "IndependentLassoRegressor",
    "IndependentRidgeClassifier",
    "IndependentRidgeRegressor",
    "L21Classifier",
    "L21Regressor",
    "MultiTaskClassifier",
    "MultiTaskRegressor",
    "PooledClassifier",
    "PooledRegressor",
    "TraceNormClassifier",
    "TraceNormRegressor",
]

from multitask.estimators.sparse_low_rank import (  # noqa: E402
    SparseLowRankClassifier,
    SparseLowRankRegressor,
)

__all__ += ["SparseLowRankClassifier", "SparseLowRankRegressor"]

from multitask.estimators.robust import (  # noqa: E402
    RobustMTLClassifier,
    RobustMTLRegressor,
)

__all__ += ["RobustMTLClassifier", "RobustMTLRegressor"]

from multitask.estimators.cv import MultiTaskCV  # noqa: E402

__all__ += ["MultiTaskCV"]

from multitask.estimators.l1inf import L1InfClassifier, L1InfRegressor  # noqa: E402

__all__ += ["L1InfClassifier", "L1InfRegressor"]

from multitask.estimators.capped_trace import (  # noqa: E402
    CappedTraceClassifier,
    CappedTraceRegressor,
)

__all__ += ["CappedTraceClassifier", "CappedTraceRegressor"]

from multitask.estimators.mtmkl import MultitaskKernelClassifier  # noqa: E402

__all__ += ["MultitaskKernelClassifier"]
