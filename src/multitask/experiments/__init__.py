"""Reproductions of the papers' experiments, one module per paper, registered by name."""

from multitask.experiments.registry import RESULT_COLUMNS, discover, register

__all__ = ["RESULT_COLUMNS", "discover", "register"]
