"""multitask: regularized multi-task learning with a scikit-learn API."""

__version__ = "0.1.0"
