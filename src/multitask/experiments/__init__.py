"""Registry of the command line's benchmarks (``multitask benchmark school``).

The paper reproductions are not part of the package: they live in the top-level
``reproductions/`` folder of the repository (``python -m reproductions --list``).
"""

from multitask.experiments.registry import RESULT_COLUMNS, discover, register

__all__ = ["RESULT_COLUMNS", "discover", "register"]
