"""Scikit-learn estimators, one module per model family, all presets of
:class:`~multitask.estimators.base.MultiTaskEstimator`."""

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
from multitask.estimators.capped_l1 import CappedL1Classifier, CappedL1Regressor
from multitask.estimators.capped_trace import CappedTraceClassifier, CappedTraceRegressor
from multitask.estimators.clustered import (
    ClusteredMTLClassifier,
    ClusteredMTLRegressor,
    ConvexASOClassifier,
    ConvexASORegressor,
)
from multitask.estimators.dirty import (
    DirtyModelClassifier,
    DirtyModelRegressor,
    RobustFeatureLearningClassifier,
    RobustFeatureLearningRegressor,
)
from multitask.estimators.graph import (
    GraphRegularizedClassifier,
    GraphRegularizedRegressor,
    MeanRegularizedClassifier,
    MeanRegularizedRegressor,
)
from multitask.estimators.l1inf import L1InfClassifier, L1InfRegressor
from multitask.estimators.mtmkl import MultiTaskKernelClassifier, MultitaskKernelClassifier
from multitask.estimators.relationship import (
    TaskRelationshipClassifier,
    TaskRelationshipRegressor,
)
from multitask.estimators.robust import RobustMTLClassifier, RobustMTLRegressor
from multitask.estimators.sparse_low_rank import SparseLowRankClassifier, SparseLowRankRegressor
from multitask.estimators.temporal import (
    FusedSparseGroupLassoClassifier,
    FusedSparseGroupLassoRegressor,
    TemporalGroupLassoClassifier,
    TemporalGroupLassoRegressor,
)

__all__ = [
    "CappedL1Classifier",
    "CappedL1Regressor",
    "CappedTraceClassifier",
    "CappedTraceRegressor",
    "ClusteredMTLClassifier",
    "ClusteredMTLRegressor",
    "ConvexASOClassifier",
    "ConvexASORegressor",
    "DirtyModelClassifier",
    "DirtyModelRegressor",
    "FusedSparseGroupLassoClassifier",
    "FusedSparseGroupLassoRegressor",
    "GraphRegularizedClassifier",
    "GraphRegularizedRegressor",
    "IndependentLassoClassifier",
    "IndependentLassoRegressor",
    "IndependentRidgeClassifier",
    "IndependentRidgeRegressor",
    "L1InfClassifier",
    "L1InfRegressor",
    "L21Classifier",
    "L21Regressor",
    "MeanRegularizedClassifier",
    "MeanRegularizedRegressor",
    "MultiTaskClassifier",
    "MultiTaskKernelClassifier",
    "MultiTaskRegressor",
    "MultitaskKernelClassifier",
    "PooledClassifier",
    "PooledRegressor",
    "RobustFeatureLearningClassifier",
    "RobustFeatureLearningRegressor",
    "RobustMTLClassifier",
    "RobustMTLRegressor",
    "SparseLowRankClassifier",
    "SparseLowRankRegressor",
    "TaskRelationshipClassifier",
    "TaskRelationshipRegressor",
    "TemporalGroupLassoClassifier",
    "TemporalGroupLassoRegressor",
    "TraceNormClassifier",
    "TraceNormRegressor",
]
