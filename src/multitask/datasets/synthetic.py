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

The checks and the draws the linear generators share live in
:mod:`multitask.datasets._synthetic_sampling`, the generators of other structures in
:mod:`multitask.datasets._synthetic_structures`; every generator is importable from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Real

import numpy as np
from numpy.typing import ArrayLike
from sklearn.utils import Bunch

from ._synthetic_sampling import (
    _SPARSE_VALUES,
    _check_common,
    _check_int,
    _check_low_rank,
    _integers,
    _low_rank,
    _sampling,
    _simulate,
    _uniform,
)
from ._synthetic_structures import make_multilabel_tasks, make_tree_tasks
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

