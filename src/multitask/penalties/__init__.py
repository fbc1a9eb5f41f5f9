"""Penalties (with proximal operators) and constraint sets (with projections)."""

from multitask.penalties._prox import (
    group_soft_threshold,
    project_l1_ball,
    project_trace_ball,
    safe_svd,
    soft_threshold,
    svt,
)
from multitask.penalties.balls import ColumnL1Balls, ColumnL2Balls, L1Ball, TraceBall
from multitask.penalties.base import Constraint, Penalty
from multitask.penalties.l1inf import L1InfBall, l1inf_norm, project_l1inf_ball
from multitask.penalties.norms import L1, L21, ColumnL2, NoPenalty, Ridge, TraceNorm

__all__ = [
    "L1",
    "L21",
    "ColumnL1Balls",
    "ColumnL2",
    "ColumnL2Balls",
    "Constraint",
    "L1Ball",
    "L1InfBall",
    "NoPenalty",
    "Penalty",
    "Ridge",
    "TraceBall",
    "TraceNorm",
    "group_soft_threshold",
    "l1inf_norm",
    "project_l1inf_ball",
    "project_l1_ball",
    "project_trace_ball",
    "safe_svd",
    "soft_threshold",
    "svt",
]
