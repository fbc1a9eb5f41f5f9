"""Penalties (with proximal operators) and constraint sets (with projections).

Every class here follows the protocol of :class:`~multitask.penalties.base.Penalty`:
``value``, ``prox``, ``alpha_max`` and the optional capabilities it declares. The elementary
proximal operators are plain functions in :mod:`multitask.penalties.prox`.
"""

from multitask.penalties.balls import ColumnL1Balls, ColumnL2Balls, L1Ball, TraceBall
from multitask.penalties.base import (
    CAPABILITIES,
    Constraint,
    IdentityMap,
    LinearMap,
    Penalty,
    SumMap,
)
from multitask.penalties.capped_l1 import CappedL1, RowWeightedL1
from multitask.penalties.capped_trace import (
    CappedTraceNorm,
    LinearizedTruncatedTraceNorm,
    TruncatedTraceNorm,
    capped_rank,
    psvt,
    singular_values,
)
from multitask.penalties.clustered import (
    ClusterRelaxation,
    SubspaceRelaxation,
    structure_eigenvalues,
)
from multitask.penalties.composite import LowRankOutlier, SparseLowRank, SumOfParts
from multitask.penalties.dirty import DirtyModel, DirtyNorm, L1InfNorm, RobustFeatureLearning
from multitask.penalties.graph import (
    GraphRegularization,
    MeanRegularization,
    check_task_matrix,
    mean_laplacian,
)
from multitask.penalties.l1inf import L1InfBall, l1inf_norm, project_l1inf_ball
from multitask.penalties.new_task import ColumnPrior, GaussianPrior, new_task_prior
from multitask.penalties.norms import L1, L21, ColumnL2, NoPenalty, Ridge, TraceNorm
from multitask.penalties.prox import (
    group_soft_threshold,
    project_l1_ball,
    project_trace_ball,
    safe_svd,
    soft_threshold,
    svt,
)
from multitask.penalties.relationship import (
    TaskRelationship,
    prox_squared_l1,
    task_correlation,
    task_covariance,
)
from multitask.penalties.temporal import (
    FusedSparseGroupLasso,
    TemporalGroupLasso,
    chain_laplacian,
    prox_fused_sparse_group_lasso,
    prox_tv1d,
    temporal_difference_matrix,
)

__all__ = [
    "CAPABILITIES",
    "L1",
    "L21",
    "CappedL1",
    "CappedTraceNorm",
    "ClusterRelaxation",
    "ColumnL1Balls",
    "ColumnL2",
    "ColumnL2Balls",
    "ColumnPrior",
    "Constraint",
    "DirtyModel",
    "DirtyNorm",
    "FusedSparseGroupLasso",
    "GaussianPrior",
    "GraphRegularization",
    "IdentityMap",
    "L1Ball",
    "L1InfBall",
    "L1InfNorm",
    "LinearMap",
    "LinearizedTruncatedTraceNorm",
    "LowRankOutlier",
    "MeanRegularization",
    "NoPenalty",
    "Penalty",
    "Ridge",
    "RobustFeatureLearning",
    "RowWeightedL1",
    "SparseLowRank",
    "SubspaceRelaxation",
    "SumMap",
    "SumOfParts",
    "TaskRelationship",
    "TemporalGroupLasso",
    "TraceBall",
    "TraceNorm",
    "TruncatedTraceNorm",
    "capped_rank",
    "chain_laplacian",
    "check_task_matrix",
    "group_soft_threshold",
    "l1inf_norm",
    "mean_laplacian",
    "new_task_prior",
    "project_l1_ball",
    "project_l1inf_ball",
    "project_trace_ball",
    "prox_fused_sparse_group_lasso",
    "prox_squared_l1",
    "prox_tv1d",
    "psvt",
    "safe_svd",
    "singular_values",
    "soft_threshold",
    "structure_eigenvalues",
    "svt",
    "task_correlation",
    "task_covariance",
    "temporal_difference_matrix",
]
