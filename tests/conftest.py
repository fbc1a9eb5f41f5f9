"""Shared fixtures of the test suite: small multi-task data sets in the three user formats.

All data are generated from fixed seeds; nothing here holds an expected result.

The default run (``python -m pytest``) spreads the test files over two pytest-xdist worker
processes (``-n 2 --dist loadfile`` in pyproject.toml; ``-n 0`` runs in one process). Each
numba kernel is compiled once per run: the kernels are cached on disk (``cache=True``), and
:func:`pytest_configure` makes a worker that needs a kernel the other worker is compiling
wait for it and load it from the cache instead of compiling it a second time (a wheel built
by ``pip install .`` carries the kernels compiled already: ``multitask.precompile``).
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from multitask.estimators.base import Param, positive

# ----------------------------------------------------------------------------- session


def pytest_configure(config):
    """In a pytest-xdist worker, compile each numba kernel once between the workers
    (:func:`multitask.precompile.compile_each_kernel_once`: a file lock per kernel; the lock
    files live in the run's temporary folder, which every worker's folder is in)."""
    workerinput = getattr(config, "workerinput", None)
    basetemp = getattr(config.option, "basetemp", None)
    if workerinput is not None and basetemp and hasattr(os, "fork"):  # POSIX: fcntl
        from multitask.precompile import compile_each_kernel_once

        lock_dir = Path(basetemp).parent / "numba-compile-locks"
        lock_dir.mkdir(parents=True, exist_ok=True)
        compile_each_kernel_once(str(lock_dir))


@pytest.fixture(autouse=True, scope="session")
def _one_blas_thread():
    """One BLAS thread for the whole run: the suite's problems are small, and on a shared
    machine two BLAS threads per process contend with the other processes (an eigh-bound
    fit took 20 times longer under load than with one thread). Processes the tests start
    set their own limits."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        yield


# ----------------------------------------------------------------------------- generators


def _low_rank_weights(rng, d, m, rank=2):
    return rng.standard_normal((d, rank)) @ rng.standard_normal((rank, m))


def make_regression_lists(sizes=(30, 45, 22), d=6, seed=0):
    """Per-task lists ``(Xs, ys)`` with unequal sizes, low-rank weights and task intercepts."""
    rng = np.random.default_rng(seed)
    W = _low_rank_weights(rng, d, len(sizes))
    Xs = [rng.standard_normal((n, d)) + rng.standard_normal(d) for n in sizes]
    ys = [X @ W[:, t] + 2.0 * t - 1.0 + 0.5 * rng.standard_normal(len(X))
          for t, X in enumerate(Xs)]
    return Xs, ys


def make_classification_lists(sizes=(40, 55, 35), d=5, seed=1):
    """Per-task lists ``(Xs, ys)`` with labels in {0, 1}, both classes in every task."""
    rng = np.random.default_rng(seed)
    W = _low_rank_weights(rng, d, len(sizes))
    Xs, ys = [], []
    for t, n in enumerate(sizes):
        X = rng.standard_normal((n, d))
        score = X @ W[:, t] + 0.3 * t + 0.8 * rng.standard_normal(n)
        y = (score > 0).astype(int)
        y[:2] = [0, 1]  # both classes present whatever the draw
        Xs.append(X)
        ys.append(y)
    return Xs, ys


def make_shared(n=40, d=6, m=4, seed=2):
    """Shared design ``(X, Y)`` with ``Y`` of shape ``(n, m)``."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    Y = X @ _low_rank_weights(rng, d, m) + rng.standard_normal(m) + 0.5 * rng.standard_normal(
        (n, m))
    return X, Y


def lists_to_long(Xs, ys, labels=None, seed=3):
    """Long format ``(X, y, task)`` of per-task lists, rows shuffled, with task labels."""
    labels = list(range(len(Xs))) if labels is None else list(labels)
    X = np.vstack(Xs)
    y = np.concatenate(ys)
    task = np.concatenate([np.full(len(x), lab) for lab, x in zip(labels, Xs, strict=True)])
    perm = np.random.default_rng(seed).permutation(len(y))
    return X[perm], y[perm], task[perm]


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture
def datagen():
    """The generators above, for tests that need other sizes or seeds."""
    return SimpleNamespace(
        regression_lists=make_regression_lists,
        classification_lists=make_classification_lists,
        shared=make_shared,
        lists_to_long=lists_to_long,
    )


@pytest.fixture
def regression_lists():
    return make_regression_lists()


@pytest.fixture
def classification_lists():
    return make_classification_lists()


@pytest.fixture
def shared_regression():
    return make_shared()


@pytest.fixture(scope="session")
def school_subset():
    """15 schools of the School data, features standardized over the pooled rows."""
    from multitask.datasets import load_school

    data = load_school()
    Xs, ys = data.X[:15], data.y[:15]
    allX = np.vstack(Xs)
    mu, sd = allX.mean(axis=0), allX.std(axis=0)
    sd[sd == 0] = 1.0
    return [(X - mu) / sd for X in Xs], [np.asarray(y, dtype=float) for y in ys]


@pytest.fixture(scope="session")
def sarcos_subset():
    """200 rows of SARCOS (shared design, 7 tasks), standardized; skipped without the data."""
    from multitask.datasets import load_sarcos

    try:
        data = load_sarcos()
    except (FileNotFoundError, OSError) as exc:
        pytest.skip(f"SARCOS data not available: {exc}")
    rows = np.random.default_rng(0).choice(data.X.shape[0], 200, replace=False)
    X, Y = data.X[rows], data.Y[rows]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    Y = (Y - Y.mean(axis=0)) / Y.std(axis=0)
    return X, Y


@pytest.fixture
def precise():
    """Make an estimator class solve to a relative optimality measure of 1e-12.

    Comparisons at 1e-8 need a tighter ``tol`` than the default 1e-4. Returns
    ``precise(cls)`` -> a subclass whose defaults are ``tol=1e-12`` and ``max_iter=50000``
    (given values still win).
    """

    def make(cls):
        class Precise(cls):
            _params = {**cls._params, "tol": Param(1e-12, [positive])}
            _max_iter = 50000

        Precise.__name__ = Precise.__qualname__ = f"Precise{cls.__name__}"
        return Precise

    return make
