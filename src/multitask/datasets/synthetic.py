"""Synthetic multi-task data with a known structure of the weight matrix.

Linear generators
-----------------
:func:`make_linear_tasks` draws data for given true weights ``W_true`` of shape
``(n_features, n_tasks)`` (one column per task, as in the papers); :func:`make_low_rank_tasks`,
:func:`make_joint_sparse_tasks`, :func:`make_sparse_low_rank_tasks` and
:func:`make_outlier_tasks` first draw a ``W_true`` with a planted structure, then data in the
same way:

* the design matrix has i.i.d. standard normal entries (one matrix per task, or one matrix
  shared by all tasks with ``shared_X=True``); with ``design_shift = s > 0`` a random vector
  ``s * N(0, I)`` (one per task) is added to every row of the task's design; with
  ``normalize_rows=True`` every row is then divided by its l2 norm (rows uniform on the unit
  sphere);
* the noisy score of a row ``x`` of task ``t`` is ``x @ W_true[:, t] + b_t + noise * e`` with
  ``e ~ N(0, 1)`` and ``b_t`` the task's ``intercept`` (0 by default);
* ``task_type="regression"``: the target is the noisy score;
  ``task_type="classification"``: the label is ``1`` where the noisy score is positive, else
  ``0``; with ``ensure_both_classes=True`` a task whose sample holds one class only is redrawn
  (at most 100 draws; tasks with fewer than 2 rows are kept as drawn).

Besides the training part (``n_samples`` rows per task), a validation part (``n_val``) and a
test part (``n_test``) with the same weights can be drawn.

Order of the random draws
-------------------------
All randomness comes from ``random_state``. Passing a ``numpy.random.Generator`` makes the
generators draw from its stream, so that consecutive calls sharing one generator (for
example :func:`make_linear_tasks` with the ``W_true`` of a previous call, for an extra test
set) continue one sequence. The order is: the true weights (documented per generator), then
the training, validation and test parts; within a part, without ``ensure_both_classes``: the
design matrices of all tasks (each task's matrix followed by its shift when
``design_shift > 0``), then the noise of each task in turn (no noise is drawn when
``noise == 0``); with ``ensure_both_classes``: per task in turn, its design, shift and noise
(repeated while it is redrawn). A shared design draws the matrix, its shift, then the noise
matrix ``(n, n_tasks)``.

Other structures
----------------
* :func:`make_tree_tasks`: binary classification tasks at the leaves of a binary tree, class
  means mutated from parent to child (a known task similarity);
* :func:`make_multilabel_tasks`: a multi-label problem with sparse tf-idf-like documents and
  labels from a low-rank score matrix with outlier labels.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from sklearn.utils import Bunch

from ._utils import RandomStateLike, check_random_state

__all__ = [
    "make_joint_sparse_tasks",
    "make_linear_tasks",
    "make_low_rank_tasks",
    "make_multilabel_tasks",
    "make_outlier_tasks",
    "make_sparse_low_rank_tasks",
    "make_tree_tasks",
]

_TASK_TYPES = ("regression", "classification")
_LOW_RANK_KINDS = ("gaussian", "orthonormal", "truncated_svd")
_SPARSE_VALUES = ("gaussian", "signed_uniform")
_MAX_REDRAWS = 100

Rng = np.random.RandomState | np.random.Generator


# ----------------------------------------------------------------------------- validation
def _check_int(name: str, value: object, low: int, high: int | None = None) -> int:
    if (
        not isinstance(value, Integral)
        or isinstance(value, bool)
        or value < low
        or (high is not None and value > high)
    ):
        bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be an integer {bound}, got {value!r}")
    return int(value)


def _check_real(name: str, value: object, low: float = 0.0) -> float:
    if not isinstance(value, Real) or isinstance(value, bool) or not value >= low:
        raise ValueError(f"{name} must be a number >= {low:g}, got {value!r}")
    return float(value)


def _check_common(
    n_tasks: int, n_features: int, noise: float, task_type: str
) -> tuple[int, int, float]:
    m = _check_int("n_tasks", n_tasks, 1)
    d = _check_int("n_features", n_features, 1)
    if not isinstance(noise, Real) or noise < 0:
        raise ValueError(f"noise must be a number >= 0, got {noise!r}")
    if task_type not in _TASK_TYPES:
        raise ValueError(f"task_type must be one of {_TASK_TYPES}, got {task_type!r}")
    return m, d, float(noise)


def _sample_sizes(
    n_samples: int | Sequence[int],
    n_tasks: int,
    shared_X: bool,
    name: str = "n_samples",
    allow_zero: bool = False,
) -> np.ndarray | None:
    """Rows per task as an int64 array, or None for an absent part (``allow_zero`` and 0)."""
    sizes = np.asarray(n_samples)
    if allow_zero and sizes.ndim == 0 and np.issubdtype(sizes.dtype, np.integer) and sizes == 0:
        return None
    if sizes.ndim == 0:
        sizes = np.full(n_tasks, sizes)
    if sizes.shape != (n_tasks,) or not np.issubdtype(sizes.dtype, np.integer):
        raise ValueError(f"{name} must be an int or a sequence of {n_tasks} ints")
    if np.any(sizes < 1):
        raise ValueError(f"{name} must be positive")
    if shared_X and np.any(sizes != sizes[0]):
        raise ValueError(f"shared_X=True needs the same {name} for every task")
    return sizes.astype(np.int64)


def _integers(rng: Rng, low: int, high: int) -> int:
    """One integer uniform in ``{low, ..., high - 1}`` from either kind of generator."""
    if isinstance(rng, np.random.Generator):
        return int(rng.integers(low, high))
    return int(rng.randint(low, high))


def _uniform(rng: Rng, size: int) -> np.ndarray:
    """``size`` uniform numbers in ``[0, 1)`` from either kind of generator."""
    if isinstance(rng, np.random.Generator):
        return rng.random(size)
    return rng.random_sample(size)


# ----------------------------------------------------------------------------- weights
def _low_rank(
    d: int, m: int, rank: int, rng: Rng, kind: str = "gaussian", scale: float = 1.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A ``(d, m)`` matrix of rank ``rank`` and its factors ``U`` (d, rank), ``V`` (m, rank).

    ``"gaussian"``: ``scale * U @ V.T / sqrt(rank)``, ``U`` then ``V`` standard normal.
    ``"orthonormal"``: ``scale * U @ V.T``, ``U`` and ``V`` the Q factors of standard normal
    ``(d, rank)`` and ``(m, rank)`` matrices (drawn in this order): all ``rank`` nonzero
    singular values equal ``scale``.
    ``"truncated_svd"``: a standard normal ``(d, m)`` matrix with all but its ``rank`` largest
    singular values set to zero, times ``scale``; ``U``, ``V`` its leading singular vectors.
    """
    if kind not in _LOW_RANK_KINDS:
        raise ValueError(f"low_rank must be one of {_LOW_RANK_KINDS}, got {kind!r}")
    if kind == "gaussian":
        U = rng.standard_normal((d, rank))
        V = rng.standard_normal((m, rank))
        Q = U @ V.T / np.sqrt(rank)
        if scale != 1.0:
            Q = scale * Q
    elif kind == "orthonormal":
        U = np.linalg.qr(rng.standard_normal((d, rank)))[0]
        V = np.linalg.qr(rng.standard_normal((m, rank)))[0]
        Q = scale * U @ V.T
    else:
        Uf, s, Vt = np.linalg.svd(rng.standard_normal((d, m)), full_matrices=False)
        s[rank:] = 0.0
        Q = (Uf * s) @ Vt
        if scale != 1.0:
            Q = scale * Q
        U, V = Uf[:, :rank], Vt[:rank].T
    return Q, U, V


def _check_low_rank(low_rank: str, low_rank_scale: float) -> float:
    if low_rank not in _LOW_RANK_KINDS:
        raise ValueError(f"low_rank must be one of {_LOW_RANK_KINDS}, got {low_rank!r}")
    return _check_real("low_rank_scale", low_rank_scale)


# ----------------------------------------------------------------------------- sampling
def _check_sampling(
    n_tasks: int,
    n_samples: int | Sequence[int],
    n_val: int | Sequence[int],
    n_test: int | Sequence[int],
    intercept: ArrayLike,
    shared_X: bool,
    task_type: str,
    design_shift: float,
    ensure_both_classes: bool,
) -> dict:
    parts = [("", _sample_sizes(n_samples, n_tasks, shared_X))]
    for name, value in (("val", n_val), ("test", n_test)):
        sizes = _sample_sizes(value, n_tasks, shared_X, f"n_{name}", allow_zero=True)
        if sizes is not None:
            parts.append((f"_{name}", sizes))
    b = np.array(intercept, dtype=np.float64)  # a copy: returned in the bunch
    if b.ndim == 0:
        b = np.full(n_tasks, float(b))
    if b.shape != (n_tasks,) or not np.all(np.isfinite(b)):
        raise ValueError(f"intercept must be a finite number or {n_tasks} finite numbers")
    shift = _check_real("design_shift", design_shift)
    if not isinstance(ensure_both_classes, (bool, np.bool_)):
        raise ValueError(f"ensure_both_classes must be a bool, got {ensure_both_classes!r}")
    if ensure_both_classes and task_type != "classification":
        raise ValueError("ensure_both_classes=True needs task_type='classification'")
    return {"parts": parts, "intercept": b, "design_shift": shift}


def _design(n: int, d: int, shift: float, normalize_rows: bool, rng: Rng) -> np.ndarray:
    """Standard normal ``(n, d)`` rows, plus a random shift, optionally of unit norm."""
    X = rng.standard_normal((n, d))
    if shift > 0:
        X = X + shift * rng.standard_normal(d)
    if normalize_rows:
        norms = np.linalg.norm(X, axis=1, keepdims=True)
        X = X / np.where(norms > 0, norms, 1.0)
    return X


def _respond(score: np.ndarray, task_type: str) -> np.ndarray:
    return score if task_type == "regression" else (score > 0).astype(np.int64)


def _both_classes(y: np.ndarray) -> bool:
    """True when every column (task) of ``y`` holds both labels, or has fewer than 2 rows."""
    n = y.shape[0]
    if n < 2:
        return True
    pos = np.sum(y, axis=0)
    return bool(np.all((pos > 0) & (pos < n)))


def _draw_part(
    W: np.ndarray,
    b: np.ndarray,
    sizes: np.ndarray,
    noise: float,
    shared_X: bool,
    task_type: str,
    shift: float,
    normalize_rows: bool,
    ensure: bool,
    rng: Rng,
) -> tuple:
    """One part (training, validation or test): ``(X, Y)`` shared or ``(Xs, ys)`` lists."""
    d = W.shape[0]
    add_b = bool(np.any(b != 0))

    def respond(X: np.ndarray, cols: int | slice) -> np.ndarray:
        score = X @ W[:, cols]
        if add_b:
            score = score + b[cols]
        if noise > 0:
            score = score + noise * rng.standard_normal(score.shape)
        return _respond(score, task_type)

    def redrawn(n: int, cols: int | slice, where: str) -> tuple[np.ndarray, np.ndarray]:
        for _ in range(_MAX_REDRAWS if ensure else 1):
            X = _design(n, d, shift, normalize_rows, rng)
            Y = respond(X, cols)
            if not ensure or _both_classes(Y):
                return X, Y
        _warn_one_class(where)
        return X, Y

    if shared_X:
        return redrawn(int(sizes[0]), slice(None), "the shared design")
    if ensure:
        Xs, ys = [], []
        for t, n in enumerate(sizes):  # a loop, not a comprehension: the warning's stacklevel
            X_t, y_t = redrawn(int(n), t, f"task {t}")
            Xs.append(X_t)
            ys.append(y_t)
        return Xs, ys
    Xs = [_design(int(n), d, shift, normalize_rows, rng) for n in sizes]
    return Xs, [respond(X_t, t) for t, X_t in enumerate(Xs)]


def _warn_one_class(where: str) -> None:
    warnings.warn(
        f"ensure_both_classes: {where} still holds one class after {_MAX_REDRAWS} draws; "
        "the last draw is kept.",
        UserWarning,
        stacklevel=6,
    )


def _simulate(
    W: np.ndarray,
    rng: Rng,
    noise: float,
    shared_X: bool,
    task_type: str,
    normalize_rows: bool,
    sampling: dict,
) -> Bunch:
    """Draw every part for the true weights ``W`` (d, m); see the module docstring."""
    b = sampling["intercept"]
    bunch = Bunch(task_type=task_type, noise=noise, intercept=b)
    for suffix, sizes in sampling["parts"]:
        X, Y = _draw_part(W, b, sizes, noise, shared_X, task_type, sampling["design_shift"],
                          normalize_rows, sampling["ensure_both_classes"], rng)
        bunch["X" + suffix] = X
        bunch[("Y" if shared_X else "y") + suffix] = Y
    bunch.W_true = W
    return bunch


def _sampling(
    n_tasks: int,
    task_type: str,
    shared_X: bool,
    n_samples: int | Sequence[int],
    n_val: int | Sequence[int],
    n_test: int | Sequence[int],
    intercept: ArrayLike,
    design_shift: float,
    ensure_both_classes: bool,
) -> dict:
    out = _check_sampling(n_tasks, n_samples, n_val, n_test, intercept, shared_X, task_type,
                          design_shift, ensure_both_classes)
    out["ensure_both_classes"] = bool(ensure_both_classes)
    return out


# ----------------------------------------------------------------------------- public: linear
def make_linear_tasks(
    W_true: ArrayLike,
    n_samples: int | Sequence[int] = 50,
    *,
    n_val: int | Sequence[int] = 0,
    n_test: int | Sequence[int] = 0,
    noise: float = 0.1,
    intercept: ArrayLike = 0.0,
    shared_X: bool = False,
    task_type: str = "regression",
    design_shift: float = 0.0,
    normalize_rows: bool = False,
    ensure_both_classes: bool = False,
    random_state: RandomStateLike = None,
) -> Bunch:
    """Data of linear tasks with given true weights ``W_true``.

    For task ``t`` and a row ``x`` of its design, the noisy score is
    ``x @ W_true[:, t] + intercept[t] + noise * e`` with ``e ~ N(0, 1)``; the target is the
    score (regression) or ``1[score > 0]`` (classification). Designs are standard normal,
    optionally shifted per task and normalized by rows (see the module docstring, which also
    gives the order of the random draws). With the ``W_true`` of another generator and the
    same ``numpy.random.Generator``, this draws further data of the same tasks.

    Parameters
    ----------
    W_true : array-like of shape (n_features, n_tasks)
        True weights, one column per task (not modified; a copy is returned).
    n_samples : int or sequence of n_tasks int, default=50
        Training rows per task (one number when ``shared_X``).
    n_val, n_test : int or sequence of n_tasks int, default=0
        Rows per task of a validation and a test part (0: no such part), drawn after the
        training part, in this order.
    noise : float, default=0.1
        Standard deviation of the Gaussian noise added to the scores.
    intercept : float or array-like of shape (n_tasks,), default=0.0
        Per-task offset ``b_t`` added to the scores.
    shared_X : bool, default=False
        One design matrix for all tasks (returned as ``X`` with targets ``Y``).
    task_type : {"regression", "classification"}, default="regression"
    design_shift : float, default=0.0
        Standard deviation of a random per-task vector added to every row of the task's design
        (a task-specific mean of the inputs).
    normalize_rows : bool, default=False
        Divide every design row by its l2 norm (after the shift).
    ensure_both_classes : bool, default=False
        Classification only: redraw a task's sample (design and noise; the whole shared design
        when ``shared_X``) while its labels hold one class, at most 100 draws (then a
        ``UserWarning``); tasks with fewer than 2 rows are kept as drawn.
    random_state : int, RandomState instance, Generator instance or None, default=None

    Returns
    -------
    data : sklearn.utils.Bunch
        X : list of ndarray of shape (n_t, n_features), or ndarray (n_samples, n_features)
            Training designs, one per task (one shared when ``shared_X``).
        y : list of ndarray of shape (n_t,)
            Targets (float64) or labels (int64 in {0, 1}); absent when ``shared_X``.
        Y : ndarray of shape (n_samples, n_tasks)
            Only when ``shared_X``: one column of targets or labels per task.
        X_val, y_val (Y_val), X_test, y_test (Y_test)
            The validation and test parts, present when ``n_val`` / ``n_test`` > 0.
        W_true : ndarray of shape (n_features, n_tasks)
        intercept : ndarray of shape (n_tasks,)
        task_type : str
        noise : float
    """
    W = np.array(W_true, dtype=np.float64)
    if W.ndim != 2 or W.size == 0 or not np.all(np.isfinite(W)):
        raise ValueError(
            f"W_true must be a finite 2-D array (n_features, n_tasks), got shape {W.shape}"
        )
    m, _, noise = _check_common(W.shape[1], W.shape[0], noise, task_type)
    sampling = _sampling(m, task_type, shared_X, n_samples, n_val, n_test, intercept,
                         design_shift, ensure_both_classes)
    rng = check_random_state(random_state)
    return _simulate(W, rng, noise, shared_X, task_type, normalize_rows, sampling)


def make_low_rank_tasks(
    n_tasks: int = 20,
    n_features: int = 30,
    n_samples: int | Sequence[int] = 50,
    rank: int = 3,
    noise: float = 0.1,
    shared_X: bool = False,
    task_type: str = "regression",
    random_state: RandomStateLike = None,
    *,
    low_rank: str = "gaussian",
    low_rank_scale: float = 1.0,
    n_val: int | Sequence[int] = 0,
    n_test: int | Sequence[int] = 0,
    intercept: ArrayLike = 0.0,
    design_shift: float = 0.0,
    normalize_rows: bool = False,
    ensure_both_classes: bool = False,
) -> Bunch:
    """Tasks whose weight vectors span a low-dimensional subspace (trace-norm setting).

    ``low_rank="gaussian"`` (default): ``W_true = U @ V.T / sqrt(rank)`` with standard normal
    ``U`` (n_features, rank) and ``V`` (n_tasks, rank), drawn in this order, so the entries of
    ``W_true`` have unit variance. ``"orthonormal"``: ``W_true = U @ V.T`` with ``U``, ``V``
    the orthonormal Q factors of standard normal matrices (every nonzero singular value 1).
    ``"truncated_svd"``: a standard normal ``(n_features, n_tasks)`` matrix with all but its
    ``rank`` largest singular values set to zero. ``W_true`` is then multiplied by
    ``low_rank_scale``. Data: see :func:`make_linear_tasks`.

    Parameters
    ----------
    n_tasks : int, default=20
    n_features : int, default=30
    n_samples : int or sequence of n_tasks int, default=50
        Training rows per task (one number when ``shared_X``).
    rank : int, default=3
        Rank of ``W_true``, at most ``min(n_features, n_tasks)``.
    noise : float, default=0.1
        Standard deviation of the Gaussian noise added to the scores.
    shared_X : bool, default=False
        One design matrix for all tasks (returned as ``X`` with targets ``Y``).
    task_type : {"regression", "classification"}, default="regression"
    random_state : int, RandomState instance, Generator instance or None, default=None
    low_rank : {"gaussian", "orthonormal", "truncated_svd"}, default="gaussian"
        How the low-rank matrix is drawn (above).
    low_rank_scale : float, default=1.0
        Factor applied to ``W_true``.
    n_val, n_test, intercept, design_shift, normalize_rows, ensure_both_classes
        As in :func:`make_linear_tasks`.

    Returns
    -------
    data : sklearn.utils.Bunch
        The keys of :func:`make_linear_tasks`, and
        U : ndarray of shape (n_features, rank)
        V : ndarray of shape (n_tasks, rank)
            The factors above (``"truncated_svd"``: the leading singular vectors).
        rank : int
    """
    m, d, noise = _check_common(n_tasks, n_features, noise, task_type)
    r = _check_int("rank", rank, 1, min(d, m))
    scale = _check_low_rank(low_rank, low_rank_scale)
    sampling = _sampling(m, task_type, shared_X, n_samples, n_val, n_test, intercept,
                         design_shift, ensure_both_classes)
    rng = check_random_state(random_state)
    W, U, V = _low_rank(d, m, r, rng, low_rank, scale)
    bunch = _simulate(W, rng, noise, shared_X, task_type, normalize_rows, sampling)
    bunch.update(U=U, V=V, rank=r)
    return bunch


def make_joint_sparse_tasks(
    n_tasks: int = 20,
    n_features: int = 30,
    n_samples: int | Sequence[int] = 50,
    n_relevant: int = 5,
    noise: float = 0.1,
    shared_X: bool = False,
    task_type: str = "regression",
    random_state: RandomStateLike = None,
    *,
    support: ArrayLike | None = None,
    feature_scale: ArrayLike = 1.0,
    min_task_support: int | None = None,
    n_val: int | Sequence[int] = 0,
    n_test: int | Sequence[int] = 0,
    intercept: ArrayLike = 0.0,
    design_shift: float = 0.0,
    normalize_rows: bool = False,
    ensure_both_classes: bool = False,
) -> Bunch:
    """Tasks that use one common set of features (l2,1 / l1,inf setting).

    Default: ``n_relevant`` relevant features are drawn without replacement (``support``
    gives them instead, and nothing is drawn) and ``W_true[j, t] = s_j * z_jt`` on the relevant
    rows, ``z`` standard normal ``(n_relevant, n_tasks)`` (rows in the order of the sorted
    random support, or of the given ``support``), ``s = feature_scale``; all other rows are 0.

    With ``min_task_support = k0``, every task uses its own random subset of the relevant
    features (the l1,inf setting of Quattoni, Carreras, Collins & Darrell, "A projected
    subgradient method for scalable multi-task learning", with ``k0 = ceil(n_relevant / 2)``):
    the relevant set ``V`` is drawn (unsorted), then a standard normal matrix ``G`` of shape
    ``(n_features, n_tasks)``, then for each task in turn a size ``k_t`` uniform in
    ``{k0, ..., n_relevant}`` and a subset ``V_t`` of ``V`` of that size;
    ``W_true[j, t] = s_j G[j, t]`` for ``j`` in ``V_t``, 0 elsewhere. Data: see
    :func:`make_linear_tasks`.

    Parameters
    ----------
    n_tasks : int, default=20
    n_features : int, default=30
    n_samples : int or sequence of n_tasks int, default=50
        Training rows per task (one number when ``shared_X``).
    n_relevant : int, default=5
        Number of relevant features, at most ``n_features``.
    noise : float, default=0.1
        Standard deviation of the Gaussian noise added to the scores.
    shared_X : bool, default=False
        One design matrix for all tasks (returned as ``X`` with targets ``Y``).
    task_type : {"regression", "classification"}, default="regression"
    random_state : int, RandomState instance, Generator instance or None, default=None
    support : array-like of n_relevant distinct feature indices, optional
        The relevant features (not drawn).
    feature_scale : float or array-like of shape (n_relevant,), default=1.0
        Standard deviation ``s_j`` of the weights of each relevant feature, in the order of
        the support (sorted when drawn, as given otherwise).
    min_task_support : int in [1, n_relevant], optional
        Per-task random subsets of the relevant features (above).
    n_val, n_test, intercept, design_shift, normalize_rows, ensure_both_classes
        As in :func:`make_linear_tasks`.

    Returns
    -------
    data : sklearn.utils.Bunch
        The keys of :func:`make_linear_tasks`, and
        support : ndarray of int64
            Sorted indices of the nonzero rows of ``W_true`` (the relevant features used by at
            least one task).
    """
    m, d, noise = _check_common(n_tasks, n_features, noise, task_type)
    k = _check_int("n_relevant", n_relevant, 1, d)
    given = None
    if support is not None:
        given = np.asarray(support)
        if (
            given.shape != (k,)
            or not np.issubdtype(given.dtype, np.integer)
            or np.unique(given).size != k
            or given.min() < 0
            or given.max() >= d
        ):
            raise ValueError(
                f"support must hold n_relevant={k} distinct feature indices in [0, {d}), "
                f"got {support!r}"
            )
        given = given.astype(np.int64)
    scale = np.asarray(feature_scale, dtype=np.float64)
    if scale.ndim == 0:
        scale = np.full(k, float(scale))
    if scale.shape != (k,) or not np.all(np.isfinite(scale)) or np.any(scale < 0):
        raise ValueError(f"feature_scale must be a number >= 0 or {k} numbers >= 0")
    if min_task_support is not None:
        k0 = _check_int("min_task_support", min_task_support, 1, k)
    sampling = _sampling(m, task_type, shared_X, n_samples, n_val, n_test, intercept,
                         design_shift, ensure_both_classes)
    rng = check_random_state(random_state)
    W = np.zeros((d, m))
    if min_task_support is None:
        rows = given if given is not None else np.sort(rng.choice(d, size=k, replace=False))
        W[rows] = scale[:, None] * rng.standard_normal((k, m))
    else:
        V = given if given is not None else rng.choice(d, size=k, replace=False)
        scale_of = np.ones(d)
        scale_of[V] = scale
        G = rng.standard_normal((d, m))
        for t in range(m):
            size = _integers(rng, k0, k + 1)
            v = rng.choice(V, size=size, replace=False)
            W[v, t] = scale_of[v] * G[v, t]
    bunch = _simulate(W, rng, noise, shared_X, task_type, normalize_rows, sampling)
    bunch.support = np.flatnonzero(np.any(W != 0, axis=1)).astype(np.int64)
    return bunch


def make_sparse_low_rank_tasks(
    n_tasks: int = 20,
    n_features: int = 30,
    n_samples: int | Sequence[int] = 50,
    rank: int = 3,
    sparsity: float = 0.1,
    noise: float = 0.1,
    shared_X: bool = False,
    task_type: str = "regression",
    random_state: RandomStateLike = None,
    *,
    low_rank: str = "gaussian",
    low_rank_scale: float = 1.0,
    n_nonzero: int | None = None,
    sparse_values: str = "gaussian",
    zero_block: tuple[int, int] | None = None,
    sparse_first: bool = False,
    n_val: int | Sequence[int] = 0,
    n_test: int | Sequence[int] = 0,
    intercept: ArrayLike = 0.0,
    design_shift: float = 0.0,
    normalize_rows: bool = False,
    ensure_both_classes: bool = False,
) -> Bunch:
    """Tasks with weights ``W = P + Q``: a sparse part ``P`` plus a low-rank part ``Q``.

    ``Q`` is drawn as the ``W_true`` of :func:`make_low_rank_tasks` (``low_rank``,
    ``low_rank_scale``). ``P`` has ``n_nonzero`` nonzero entries (default
    ``round(sparsity * n_features * n_tasks)``) at uniformly random positions (drawn without
    replacement) with values ``N(0, 1)`` (``sparse_values="gaussian"``) or ``+-(1 + U[0, 1))``
    (``"signed_uniform"``: random signs, then magnitudes); when every entry is nonzero, ``P`` is
    drawn directly as a dense matrix (no positions). ``zero_block = (r, c)`` then sets
    ``P[:r, :c] = 0``. ``Q`` is drawn before ``P`` unless ``sparse_first``.

    The paper settings of Chen, Liu & Ye, "Learning incoherent sparse and low-rank patterns
    from multiple tasks": Fig. 2 is ``sparsity=1, zero_block=(30, 10),
    low_rank="truncated_svd", sparse_first=True``; the well-conditioned planted instance is
    ``low_rank="orthonormal", low_rank_scale=5, n_nonzero=60,
    sparse_values="signed_uniform"``. Data: see :func:`make_linear_tasks`.

    Parameters
    ----------
    n_tasks : int, default=20
    n_features : int, default=30
    n_samples : int or sequence of n_tasks int, default=50
        Training rows per task (one number when ``shared_X``).
    rank : int, default=3
        Rank of ``Q``, at most ``min(n_features, n_tasks)``.
    sparsity : float in [0, 1], default=0.1
        Fraction of nonzero entries of ``P`` (before ``zero_block``).
    noise : float, default=0.1
        Standard deviation of the Gaussian noise added to the scores.
    shared_X : bool, default=False
        One design matrix for all tasks (returned as ``X`` with targets ``Y``).
    task_type : {"regression", "classification"}, default="regression"
    random_state : int, RandomState instance, Generator instance or None, default=None
    low_rank : {"gaussian", "orthonormal", "truncated_svd"}, default="gaussian"
    low_rank_scale : float, default=1.0
        See :func:`make_low_rank_tasks`.
    n_nonzero : int, optional
        Number of nonzero entries of ``P`` (overrides ``sparsity``).
    sparse_values : {"gaussian", "signed_uniform"}, default="gaussian"
    zero_block : (int, int), optional
        Rows and tasks of a leading block of ``P`` set to zero.
    sparse_first : bool, default=False
        Draw ``P`` before ``Q``.
    n_val, n_test, intercept, design_shift, normalize_rows, ensure_both_classes
        As in :func:`make_linear_tasks`.

    Returns
    -------
    data : sklearn.utils.Bunch
        The keys of :func:`make_linear_tasks`, and
        P : ndarray of shape (n_features, n_tasks)
            Sparse part.
        Q : ndarray of shape (n_features, n_tasks)
            Low-rank part (``W_true = P + Q``).
        rank : int
    """
    m, d, noise = _check_common(n_tasks, n_features, noise, task_type)
    r = _check_int("rank", rank, 1, min(d, m))
    scale = _check_low_rank(low_rank, low_rank_scale)
    if n_nonzero is None:
        if not isinstance(sparsity, Real) or not 0.0 <= sparsity <= 1.0:
            raise ValueError(f"sparsity must be a number in [0, 1], got {sparsity!r}")
        nnz = int(np.floor(sparsity * d * m + 0.5))
    else:
        nnz = _check_int("n_nonzero", n_nonzero, 0, d * m)
    if sparse_values not in _SPARSE_VALUES:
        raise ValueError(f"sparse_values must be one of {_SPARSE_VALUES}, got {sparse_values!r}")
    if zero_block is not None:
        if len(zero_block) != 2:
            raise ValueError(f"zero_block must be a pair (rows, tasks), got {zero_block!r}")
        zr = _check_int("zero_block[0]", zero_block[0], 0, d)
        zc = _check_int("zero_block[1]", zero_block[1], 0, m)
    sampling = _sampling(m, task_type, shared_X, n_samples, n_val, n_test, intercept,
                         design_shift, ensure_both_classes)
    rng = check_random_state(random_state)

    def values(n: int) -> np.ndarray:
        if sparse_values == "gaussian":
            return rng.standard_normal(n)
        return rng.choice([-1.0, 1.0], n) * (1.0 + _uniform(rng, n))

    def sparse_part() -> np.ndarray:
        if nnz == d * m:
            P = values(d * m).reshape(d, m)
        else:
            P = np.zeros(d * m)
            positions = rng.choice(d * m, size=nnz, replace=False)
            P[positions] = values(nnz)
            P = P.reshape(d, m)
        if zero_block is not None:
            P[:zr, :zc] = 0.0
        return P

    if sparse_first:
        P = sparse_part()
        Q, _, _ = _low_rank(d, m, r, rng, low_rank, scale)
    else:
        Q, _, _ = _low_rank(d, m, r, rng, low_rank, scale)
        P = sparse_part()
    bunch = _simulate(P + Q, rng, noise, shared_X, task_type, normalize_rows, sampling)
    bunch.update(P=P, Q=Q, rank=r)
    return bunch


def make_outlier_tasks(
    n_tasks: int = 20,
    n_features: int = 30,
    n_samples: int | Sequence[int] = 50,
    rank: int = 3,
    n_outliers: int = 2,
    noise: float = 0.1,
    shared_X: bool = False,
    task_type: str = "regression",
    random_state: RandomStateLike = None,
    *,
    low_rank: str = "gaussian",
    low_rank_scale: float = 1.0,
    n_val: int | Sequence[int] = 0,
    n_test: int | Sequence[int] = 0,
    intercept: ArrayLike = 0.0,
    design_shift: float = 0.0,
    normalize_rows: bool = False,
    ensure_both_classes: bool = False,
) -> Bunch:
    """Tasks with weights ``W = L + E``: low-rank ``L`` plus a few outlier-task columns ``E``.

    ``L`` is drawn as the ``W_true`` of :func:`make_low_rank_tasks` (all tasks). ``E`` is zero
    except on ``n_outliers`` random columns (the outlier tasks), whose entries are normal with
    standard deviation ``s = median column norm of L / sqrt(n_features)``, so that an outlier
    column of ``E`` is about as large as a column of ``L``. Data: see
    :func:`make_linear_tasks`.

    Parameters
    ----------
    n_tasks : int, default=20
    n_features : int, default=30
    n_samples : int or sequence of n_tasks int, default=50
        Training rows per task (one number when ``shared_X``).
    rank : int, default=3
        Rank of ``L``, at most ``min(n_features, n_tasks)``.
    n_outliers : int, default=2
        Number of outlier tasks (nonzero columns of ``E``), at most ``n_tasks``.
    noise : float, default=0.1
        Standard deviation of the Gaussian noise added to the scores.
    shared_X : bool, default=False
        One design matrix for all tasks (returned as ``X`` with targets ``Y``).
    task_type : {"regression", "classification"}, default="regression"
    random_state : int, RandomState instance, Generator instance or None, default=None
    low_rank : {"gaussian", "orthonormal", "truncated_svd"}, default="gaussian"
    low_rank_scale : float, default=1.0
        See :func:`make_low_rank_tasks`.
    n_val, n_test, intercept, design_shift, normalize_rows, ensure_both_classes
        As in :func:`make_linear_tasks`.

    Returns
    -------
    data : sklearn.utils.Bunch
        The keys of :func:`make_linear_tasks`, and
        L : ndarray of shape (n_features, n_tasks)
            Low-rank part.
        E : ndarray of shape (n_features, n_tasks)
            Outlier part, nonzero only on the columns ``outlier_tasks`` (``W_true = L + E``).
        outlier_tasks : ndarray of shape (n_outliers,), int64
            Sorted indices of the outlier tasks.
        rank : int
    """
    m, d, noise = _check_common(n_tasks, n_features, noise, task_type)
    r = _check_int("rank", rank, 1, min(d, m))
    k = _check_int("n_outliers", n_outliers, 0, m)
    scale = _check_low_rank(low_rank, low_rank_scale)
    sampling = _sampling(m, task_type, shared_X, n_samples, n_val, n_test, intercept,
                         design_shift, ensure_both_classes)
    rng = check_random_state(random_state)
    L, _, _ = _low_rank(d, m, r, rng, low_rank, scale)
    outliers = np.sort(rng.choice(m, size=k, replace=False)).astype(np.int64)
    s = float(np.median(np.linalg.norm(L, axis=0))) / np.sqrt(d)
    E = np.zeros((d, m))
    E[:, outliers] = s * rng.standard_normal((d, k))
    bunch = _simulate(L + E, rng, noise, shared_X, task_type, normalize_rows, sampling)
    bunch.update(L=L, E=E, outlier_tasks=outliers, rank=r)
    return bunch


# ----------------------------------------------------------------------------- tree tasks
def _mutate_tree(
    node: object, mu: np.ndarray, rng: Rng, n_flips: int, mutate_leaves: bool, out: dict
) -> None:
    """Depth first: every child copies ``mu`` and flips the sign of ``n_flips`` coordinates."""
    if not isinstance(node, tuple):
        out[node] = mu
        return
    for child in node:
        mc = mu.copy()
        if isinstance(child, tuple) or mutate_leaves:
            idx = rng.choice(mu.shape[0], size=n_flips, replace=False)
            mc[idx] = -mc[idx]
        _mutate_tree(child, mc, rng, n_flips, mutate_leaves, out)


def make_tree_tasks(
    n_tasks: int = 32,
    n_features: int = 100,
    n_samples: int = 10,
    *,
    n_test: int = 0,
    n_val: int = 0,
    n_flips: int = 5,
    noise: float = 20.0,
    mutate_leaves: bool = True,
    random_state: RandomStateLike = None,
) -> Bunch:
    """Binary classification tasks on a binary tree with sign-flip mutations.

    The synthetic set-up of Widmer, Kloft, Sreedharan & Rätsch, "Framework for multi-task
    multiple kernel learning and applications in genome analysis" (Section 4.2). The tasks are
    the leaves of the balanced binary tree over ``0, ..., n_tasks - 1``
    (:func:`multitask.kernels.balanced_binary_tree`). The root carries ``mu = (1, ..., 1)``
    (``n_features``); depth first, every child node copies its parent's vector and flips the
    sign of ``n_flips`` coordinates drawn without replacement (with ``mutate_leaves=False`` the
    leaves keep their parent's vector, so sibling tasks share one). Task ``t`` has the classes
    ``y = +1`` and ``y = -1`` with inputs ``x ~ N(y mu_t / 2, noise^2 I)``, ``n_samples``
    points per class (first all ``+1`` points, then all ``-1`` points of task 0, then task 1,
    ...). The log-odds of ``y = +1`` is ``x @ mu_t / noise^2``, so ``W_true = mu.T / noise^2``
    and the true task similarity is ``S_true = mu @ mu.T``.

    The random draws: the mutations, then the training points, the test points and the
    validation points (in this order: the one of the original experiment).

    Parameters
    ----------
    n_tasks : int, default=32
        Number of tasks (leaves); 32 is the paper's depth-5 tree.
    n_features : int, default=100
    n_samples : int, default=10
        Training points per class and task.
    n_test, n_val : int, default=0
        Test and validation points per class and task (0: no such part).
    n_flips : int, default=5
        Coordinates flipped at every mutated node, at most ``n_features``.
    noise : float, default=20.0
        Standard deviation ``sigma`` of the classes around their means.
    mutate_leaves : bool, default=True
        Whether the leaves mutate too (the specification's reading A; False: reading B).
    random_state : int, RandomState instance, Generator instance or None, default=None

    Returns
    -------
    data : sklearn.utils.Bunch
        X : ndarray of shape (2 * n_samples * n_tasks, n_features)
        y : ndarray of shape (2 * n_samples * n_tasks,)
            Labels +1.0 / -1.0.
        task : ndarray of shape (2 * n_samples * n_tasks,), int64
            Task (leaf) of every row (long format).
        X_test, y_test, task_test, X_val, y_val, task_val
            The test and validation parts, present when ``n_test`` / ``n_val`` > 0.
        mu : ndarray of shape (n_tasks, n_features)
            Class-mean difference of every task.
        W_true : ndarray of shape (n_features, n_tasks)
            ``mu.T / noise^2``.
        S_true : ndarray of shape (n_tasks, n_tasks)
            ``mu @ mu.T``.
        tree : nested tuples of task ids
        bayes_auc : float
            ``Phi(||mu_t|| / (noise sqrt 2))``: the AUC of the Bayes scores ``x @ mu_t``, the
            same for every task.
    """
    from scipy.stats import norm

    from multitask.kernels.task_similarity import balanced_binary_tree

    T = _check_int("n_tasks", n_tasks, 1)
    d = _check_int("n_features", n_features, 1)
    n_train = _check_int("n_samples", n_samples, 1)
    n_te = _check_int("n_test", n_test, 0)
    n_va = _check_int("n_val", n_val, 0)
    flips = _check_int("n_flips", n_flips, 0, d)
    sigma = _check_real("noise", noise)
    if sigma <= 0:
        raise ValueError(f"noise must be > 0, got {noise!r}")
    rng = check_random_state(random_state)
    tree = balanced_binary_tree(list(range(T)))
    mus: dict = {}
    _mutate_tree(tree, np.ones(d), rng, flips, bool(mutate_leaves), mus)
    mu = np.stack([mus[t] for t in range(T)])

    def sample(n_per_class: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        X, y, task = [], [], []
        for t in range(T):
            for lab in (1.0, -1.0):
                X.append(0.5 * lab * mu[t] + sigma * rng.standard_normal((n_per_class, d)))
                y.append(np.full(n_per_class, lab))
                task.append(np.full(n_per_class, t, dtype=np.int64))
        return np.vstack(X), np.concatenate(y), np.concatenate(task)

    out = Bunch(mu=mu, W_true=mu.T / sigma**2, S_true=mu @ mu.T, tree=tree, noise=sigma)
    for suffix, n in (("", n_train), ("_test", n_te), ("_val", n_va)):
        if n > 0:
            out["X" + suffix], out["y" + suffix], out["task" + suffix] = sample(n)
    out.bayes_auc = float(norm.cdf(np.linalg.norm(mu[0]) / (sigma * np.sqrt(2.0))))
    return out


# ----------------------------------------------------------------------------- multi-label
def make_multilabel_tasks(
    n_samples: int = 2000,
    n_features: int = 1000,
    n_tasks: int = 100,
    *,
    mean_tokens: float = 60.0,
    rank: int = 10,
    n_outliers: int = 10,
    noise: float = 0.25,
    mean_positives: float = 55.0,
    min_positives: int = 20,
    random_state: RandomStateLike = None,
) -> Bunch:
    """A multi-label problem: sparse tf-idf-like documents, labels from low rank + outliers.

    Built to have the shape of a text-categorization benchmark (EUR-Lex: 19,348 documents,
    5,000 features, 412 labels) for robust multi-task learning (Pan, Xia, Yin & Liu, "A
    divide-and-conquer method for scalable robust multitask learning"); every label is a task
    on the shared design. In the order of the random draws:

    * vocabulary: feature ``j`` of a random order has popularity ``(j + 20)^-0.9``
      (normalized);
    * documents: ``1 + Poisson(mean_tokens - 1)`` tokens each, drawn from the vocabulary; term
      counts become ``log(1 + tf) * idf`` with ``idf = log((1 + n) / (1 + df)) + 1``, rows
      scaled to unit l2 norm;
    * scores ``S = (X U) V^T / sqrt(rank)`` with standard normal ``U`` (n_features, rank) and
      ``V`` (n_tasks, rank); ``n_outliers`` random tasks (the outlier labels) get the scores
      ``X E_t`` of their own standard normal weights instead;
    * each task's scores are standardized, then ``noise`` times standard normal noise added;
    * the ``k_t`` highest scores of task ``t`` are positive, ``k_t`` log-normal with mean
      ``mean_positives`` (``exp(N(log(mean_positives) - 1/2, 1))``), rounded and clipped to
      ``[min_positives, n_samples // 4]``.

    Parameters
    ----------
    n_samples : int, default=2000
        Documents, at least 4.
    n_features : int, default=1000
    n_tasks : int, default=100
    mean_tokens : float, default=60.0
        Mean number of tokens per document (at least 1).
    rank : int, default=10
        Rank of the inlier part of the weights.
    n_outliers : int, default=10
        Number of outlier labels, at most ``n_tasks``.
    noise : float, default=0.25
        Noise added to the standardized scores.
    mean_positives : float, default=55.0
        Mean number of positive documents per label.
    min_positives : int, default=20
    random_state : int, RandomState instance, Generator instance or None, default=None

    Returns
    -------
    data : sklearn.utils.Bunch
        X : scipy.sparse.csr_matrix of shape (n_samples, n_features)
        Y : ndarray of shape (n_samples, n_tasks), int64 in {0, 1}
        W_true : ndarray of shape (n_features, n_tasks)
            ``L + E``: the weights whose scores ``X @ W_true`` (before standardization and
            noise) define the labels, up to rounding.
        L : ndarray of shape (n_features, n_tasks)
            ``U V^T / sqrt(rank)`` with the outlier columns zero.
        E : ndarray of shape (n_features, n_tasks)
            The outlier labels' weights, zero elsewhere.
        outlier_tasks : ndarray of int64
            Sorted indices of the outlier labels.
        DESCR : str
    """
    n = _check_int("n_samples", n_samples, 4)
    d = _check_int("n_features", n_features, 1)
    m = _check_int("n_tasks", n_tasks, 1)
    r = _check_int("rank", rank, 1)
    k_out = _check_int("n_outliers", n_outliers, 0, m)
    tokens = _check_real("mean_tokens", mean_tokens, 1.0)
    sigma = _check_real("noise", noise)
    mean_pos = _check_real("mean_positives", mean_positives)
    if mean_pos <= 0:
        raise ValueError(f"mean_positives must be > 0, got {mean_positives!r}")
    min_pos = _check_int("min_positives", min_positives, 1)
    rng = check_random_state(random_state)
    pop = 1.0 / (np.arange(d) + 20.0) ** 0.9
    pop = rng.permutation(pop / pop.sum())
    lens = 1 + rng.poisson(max(tokens - 1.0, 0.0), size=n)
    rows = np.repeat(np.arange(n), lens)
    cols = rng.choice(d, size=rows.size, p=pop)
    C = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, d))
    C.sum_duplicates()
    df = np.bincount(C.indices, minlength=d)
    idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
    X = C.copy()
    X.data = np.log1p(X.data) * idf[X.indices]
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = (sp.diags(1.0 / np.maximum(norms, 1e-12)) @ X).tocsr()
    U = rng.standard_normal((d, r))
    V = rng.standard_normal((m, r))
    outliers = np.sort(rng.choice(m, k_out, replace=False)).astype(np.int64)
    S = (X @ U) @ V.T / np.sqrt(r)
    G = rng.standard_normal((d, k_out))
    S[:, outliers] = X @ G
    S = (S - S.mean(axis=0)) / np.maximum(S.std(axis=0), 1e-12)
    S += sigma * rng.standard_normal(S.shape)
    k = rng.lognormal(np.log(mean_pos) - 0.5, 1.0, m)
    k = np.clip(np.round(k), min_pos, n // 4).astype(np.int64)
    thr = -np.sort(-S, axis=0)[k - 1, np.arange(m)]
    Y = (S >= thr).astype(np.int64)
    L = U @ V.T / np.sqrt(r)
    L[:, outliers] = 0.0
    E = np.zeros((d, m))
    E[:, outliers] = G
    descr = (
        f"Generated multi-label data: {n} documents, {d} features "
        f"({X.nnz / n:.1f} nonzeros per row), {m} labels (label cardinality "
        f"{Y.sum(axis=1).mean():.2f}), low rank {r}, {k_out} outlier labels."
    )
    return Bunch(X=X, Y=Y, W_true=L + E, L=L, E=E, outlier_tasks=outliers, DESCR=descr)
