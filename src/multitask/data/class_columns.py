"""The task-class columns of a multinomial model as the tasks of a data set, without copies.

A multinomial model of ``m`` tasks and ``K`` classes has one weight column per (task, class)
pair: ``W`` of shape ``(n_features, m K)``, column ``c = t K + k`` scoring class ``k`` of task
``t``. Every solver and penalty of the library works on the columns of ``W`` as on tasks, so
the multinomial loss (:class:`~multitask.losses.multinomial.Multinomial`) hands them a data
set whose "tasks" are those ``m K`` columns (:func:`class_columns`): column ``(t, k)`` has the
rows of task ``t``, and its stacked scores ``z_{(t, k), i} = x_i^T w_{t,k}`` lie at position
``K o_t + k n_t + i`` (``o_t`` the first row of task ``t``, ``n_t`` its rows, ``i`` the row
within the task): the ``K`` class blocks of a task follow each other, so the per-column
offsets, sums and expansions of :class:`~multitask.data.MultiTaskData` hold unchanged.

The rows are never copied. A shared design (one ``X`` for every task) is already a data set
whose tasks share it: the view is a :class:`~multitask.data.MultiTaskData` of ``m K`` tasks
on the same ``X`` (one product ``X W`` with ``m K`` columns per pass). A per-task design is
read through :class:`ClassColumns`, whose products run over the rows of ``X`` once and score
each row for its task's ``K`` classes (compiled kernels for dense and CSR designs). The
multinomial loss reads the class codes of the original data: the view stores no targets (its
``y`` is a read-only array of NaN that takes no memory, so that a reader of the view's targets
gets NaN, not wrong numbers). Its row weights are those of the rows, repeated per class.

Memory: what the view adds to the data is the repeated implicit centring and its constant
cells (``(n_features, m K)``, the size of ``W``), and the row weights when ``sample_weight``
was given (``K`` per row); a pass over the data allocates the ``K N`` scores it returns.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit

from multitask.data.container import MultiTaskData, _offsets_of

__all__ = ["ClassColumns", "class_columns", "class_presence", "class_scores_by_row",
           "no_targets", "task_means_and_constant"]

_REASSOC = {"reassoc", "contract"}


# --------------------------------------------------------------------------- kernels
@njit(cache=True, fastmath=_REASSOC)
def _dense_class_matvec(X, Wt, c, offsets, K):
    """View-stacked scores ``z[K o_t + k n_t + i] = x_i^T Wt[t K + k] + c[t K + k]`` of a
    dense design."""
    n_rows, d = X.shape
    m = offsets.shape[0] - 1
    out = np.empty(K * n_rows, dtype=np.float64)
    for t in range(m):
        o = offsets[t]
        n = offsets[t + 1] - o
        for i in range(n):
            r = o + i
            for k in range(K):
                col = t * K + k
                s = 0.0
                for j in range(d):
                    s += X[r, j] * Wt[col, j]
                out[K * o + k * n + i] = s + c[col]
    return out


@njit(cache=True)
def _dense_class_rmatvec(X, R, offsets, K):
    """``Gt[t K + k] = sum_{i in t} R[K o_t + k n_t + i] x_i``, shape ``(m K, d)``."""
    n_rows, d = X.shape
    m = offsets.shape[0] - 1
    Gt = np.zeros((m * K, d), dtype=np.float64)
    for t in range(m):
        o = offsets[t]
        n = offsets[t + 1] - o
        for i in range(n):
            r = o + i
            for k in range(K):
                v = R[K * o + k * n + i]
                if v != 0.0:
                    c = t * K + k
                    for j in range(d):
                        Gt[c, j] += X[r, j] * v
    return Gt


@njit(cache=True)
def _csr_class_matvec(data, indices, indptr, Wt, c, offsets, K):
    """:func:`_dense_class_matvec` of a CSR design."""
    n_rows = indptr.shape[0] - 1
    m = offsets.shape[0] - 1
    out = np.empty(K * n_rows, dtype=np.float64)
    for t in range(m):
        o = offsets[t]
        n = offsets[t + 1] - o
        for i in range(n):
            r = o + i
            for k in range(K):
                col = t * K + k
                s = 0.0
                for p in range(indptr[r], indptr[r + 1]):
                    s += data[p] * Wt[col, indices[p]]
                out[K * o + k * n + i] = s + c[col]
    return out


@njit(cache=True)
def _csr_class_rmatvec(data, indices, indptr, R, offsets, K, n_features):
    """:func:`_dense_class_rmatvec` of a CSR design."""
    m = offsets.shape[0] - 1
    Gt = np.zeros((m * K, n_features), dtype=np.float64)
    for t in range(m):
        o = offsets[t]
        n = offsets[t + 1] - o
        for i in range(n):
            r = o + i
            for k in range(K):
                v = R[K * o + k * n + i]
                if v != 0.0:
                    c = t * K + k
                    for p in range(indptr[r], indptr[r + 1]):
                        Gt[c, indices[p]] += data[p] * v
    return Gt


@njit(cache=True)
def _view_to_rows(z, offsets, K):
    """The view-stacked ``z`` (length ``K N``) as an ``(N, K)`` array, row ``i`` holding the
    ``K`` scores of stacked row ``i``."""
    m = offsets.shape[0] - 1
    out = np.empty((offsets[m], K), dtype=np.float64)
    for t in range(m):
        o = offsets[t]
        n = offsets[t + 1] - o
        for k in range(K):
            for i in range(n):
                out[o + i, k] = z[K * o + k * n + i]
    return out


@njit(cache=True)
def _csr_task_column_stats(data, indices, indptr, offsets, n_features, weights):
    """Per (task, feature): the weighted sum of the stored values, their count, the first one
    and whether another differs from it, in one pass over a CSR design (``weights`` empty:
    every row weighs 1); each ``(m, d)``."""
    m = offsets.shape[0] - 1
    sums = np.zeros((m, n_features))
    count = np.zeros((m, n_features), dtype=np.int64)
    first = np.zeros((m, n_features))
    differ = np.zeros((m, n_features), dtype=np.bool_)
    with_w = weights.shape[0] > 0
    for t in range(m):
        for r in range(offsets[t], offsets[t + 1]):
            wr = weights[r] if with_w else 1.0
            for p in range(indptr[r], indptr[r + 1]):
                j = indices[p]
                v = data[p]
                sums[t, j] += wr * v
                if count[t, j] == 0:
                    first[t, j] = v
                elif v != first[t, j]:
                    differ[t, j] = True
                count[t, j] += 1
    return sums, count, first, differ


def task_means_and_constant(data: MultiTaskData) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`~multitask.data.MultiTaskData.x_means_and_constant` (the per-task weighted
    feature means ``(d, m)`` and the mask of the cells whose column is constant within the
    task, where the mean is that constant exactly), for a sparse per-task design from one
    compiled pass over its stored entries and ``O(m d)`` memory (the container's sparse route
    sorts a copy of the entries); other designs go to the container. A cell is constant when
    the task stores ``n_t`` equal values in the column, or none (a zero column)."""
    if data.shared or not sp.issparse(data.X) or data.x_offset is not None:
        return data.x_means_and_constant()
    Xs = sp.csr_matrix(data.X)
    w = np.zeros(0) if data.sample_weight is None else np.asarray(data.sample_weight,
                                                                    dtype=np.float64)
    sums, count, first, differ = _csr_task_column_stats(
        Xs.data, Xs.indices, Xs.indptr, np.asarray(data.offsets, dtype=np.int64),
        Xs.shape[1], w)
    sizes = data.task_sizes[:, None]
    total = (np.maximum(data.task_sizes, 1).astype(np.float64) if data.sample_weight is None
             else data.task_weight_sums)
    mu = sums / total[:, None]
    full = (count == sizes) & ~differ
    mu[full] = first[full]
    constant = full | ((count == 0) & (sizes > 0))
    return np.ascontiguousarray(mu.T), np.ascontiguousarray(constant.T)


# --------------------------------------------------------------------------- helpers
def class_presence(codes: np.ndarray, weights: np.ndarray, offsets: np.ndarray,
                   n_classes: int) -> np.ndarray:
    """``present[t, k]``: whether class ``k`` occurs among the rows of task ``t`` of positive
    weight, shape ``(m, K)``; ``codes`` the stacked class codes ``0 .. K-1``, ``weights`` the
    stacked row weights."""
    m = len(offsets) - 1
    task = np.repeat(np.arange(m, dtype=np.int64), np.diff(offsets))
    seen = np.asarray(weights) > 0
    present = np.zeros((m, n_classes), dtype=bool)
    present[task[seen], np.asarray(codes, dtype=np.int64)[seen]] = True
    return present


def _base_rows(base: MultiTaskData, K: int, view_sizes: np.ndarray) -> np.ndarray:
    """For every view position, the stacked row of ``base`` it reads, shape ``(K N,)``."""
    view_offsets = _offsets_of(view_sizes)
    first = np.repeat(np.asarray(base.offsets[:-1], dtype=np.int64), K)
    shift = np.repeat(first - view_offsets[:-1], view_sizes)
    return np.arange(int(view_offsets[-1]), dtype=np.int64) + shift


def no_targets(n: int) -> np.ndarray:
    """A read-only array of ``n`` NaN that takes no memory: the targets of the view (module
    docstring)."""
    return np.broadcast_to(np.float64(np.nan), (n,))


def class_columns(base: MultiTaskData, n_classes: int) -> MultiTaskData:
    """The data set whose tasks are the ``m K`` task-class columns of ``base`` (module
    docstring): a :class:`~multitask.data.MultiTaskData` of ``m K`` tasks on the same ``X``
    for a shared design, a :class:`ClassColumns` view for per-task designs. ``base.y`` holds
    the class codes ``0 .. K-1`` (the view's own targets are not stored: :func:`no_targets`);
    the implicit centring (``x_offset``), the constant cells and the row weights of ``base``
    are repeated for the classes of each task; the rows of ``X`` are not copied."""
    K = int(n_classes)
    if K < 1:
        raise ValueError(f"n_classes must be >= 1, got {n_classes!r}.")
    sizes = np.repeat(base.task_sizes, K)
    weights = (None if base.sample_weight is None
               else base.sample_weight[_base_rows(base, K, sizes)])
    y = no_targets(int(sizes.sum()))
    x_offset = None if base.x_offset is None else np.repeat(base.x_offset, K, axis=1)
    x_constant = None if base.x_constant is None else np.repeat(base.x_constant, K, axis=1)
    tasks = np.repeat(np.asarray(base.tasks), K)
    offsets = _offsets_of(sizes)
    if base.shared:
        return MultiTaskData(base.X, y, offsets, tasks, True, x_offset, None,
                             x_constant=x_constant, sample_weight=weights)
    return ClassColumns(base.X, y, offsets, tasks, False, x_offset, None,
                        x_constant=x_constant, sample_weight=weights, base=base,
                        n_classes=K)


def class_scores_by_row(data: MultiTaskData, W: np.ndarray, b: np.ndarray | None,
                        n_classes: int) -> np.ndarray:
    """The scores ``Z[i, k] = x_i^T w_{t(i), k} + b_{t(i), k}`` of every stacked row of
    ``data`` (``m`` tasks) for its task's ``K`` classes, shape ``(N, K)``; ``W`` of shape
    ``(n_features, m K)`` (column ``t K + k``), ``b`` of shape ``(m K,)`` or None. A
    ``b_{t,k} = -inf`` (a class the task never saw) gives the score ``-inf``."""
    K = int(n_classes)
    W = np.asarray(W, dtype=np.float64)
    m = data.n_tasks
    if W.shape != (data.n_features, m * K):
        raise ValueError(f"W has shape {W.shape} but the data have {data.n_features} features, "
                         f"{m} tasks and {K} classes.")
    if data.shared:
        Z = np.asarray(data.X @ W)
        if data.x_offset is not None:
            Z = Z - np.einsum("jc,jc->c", np.repeat(data.x_offset, K, axis=1), W)[None, :]
        Z = Z.reshape(-1, m, K)
        if b is not None:
            Z = Z + np.asarray(b, dtype=np.float64).reshape(m, K)[None]
        return np.ascontiguousarray(Z.transpose(1, 0, 2)).reshape(-1, K)
    view = class_columns(data, K) if K > 1 else data
    z = view.matvec(W)
    Z = _view_to_rows(z, np.asarray(data.offsets, dtype=np.int64), K)
    if b is not None:
        Z += np.repeat(np.asarray(b, dtype=np.float64).reshape(m, K), data.task_sizes, axis=0)
    return Z


# --------------------------------------------------------------------------- the view
@dataclass
class ClassColumns(MultiTaskData):
    """The task-class columns of a per-task design as a data set (module docstring).

    The fields are those of :class:`~multitask.data.MultiTaskData` for ``m K`` tasks (the
    view's offsets, one-hot targets, repeated implicit centring and weights) with ``X`` the
    design of ``base``, whose stacked rows are those of the ``m`` tasks: ``X`` is read
    through ``base.offsets``, never sliced with the view's. The products score each row for
    its task's ``K`` classes in one pass (:meth:`matvec`, :meth:`rmatvec`); the per-task
    statistics (Gram matrices, spectral norms, means, column norms) are those of ``base``,
    repeated for the classes.

    Parameters
    ----------
    base : MultiTaskData
        The data of the ``m`` tasks (``y``: the class codes).
    n_classes : int
        ``K``.
    """

    base: MultiTaskData | None = None
    n_classes: int = 1

    def _base(self) -> MultiTaskData:
        assert self.base is not None
        return self.base

    # ----------------------------------------------------------------- products
    def matvec(self, W: np.ndarray) -> np.ndarray:
        """View-stacked scores ``z_{(t,k), i} = x_i^T w_{t,k}`` (minus the implicit centring),
        shape ``(K N,)``; ``W`` of shape ``(d, m K)``."""
        return self.scores(W, None)

    def scores(self, W: np.ndarray, b: np.ndarray | None) -> np.ndarray:
        """:meth:`matvec` plus ``b_{(t,k)}`` (shape ``(m K,)``, or None) in the same pass:
        the centring and the intercepts are one constant per column, added by the kernel
        (no temporary of the scores' size)."""
        W = np.asarray(W, dtype=np.float64)
        if W.shape != (self.n_features, self.n_tasks):
            raise ValueError(f"W has shape {W.shape} but the data have {self.n_features} "
                             f"features and {self.n_tasks} task-class columns.")
        base, K = self._base(), int(self.n_classes)
        c = np.zeros(self.n_tasks) if b is None else np.array(b, dtype=np.float64)
        if base.x_offset is not None:  # x_offset[:, t] . w_{t,k} for every column
            c -= np.einsum("jtk,jt->tk", W.reshape(W.shape[0], -1, K), base.x_offset).ravel()
        Wt = np.ascontiguousarray(W.T)
        offsets = np.asarray(base.offsets, dtype=np.int64)
        if sp.issparse(self.X):
            Xs = sp.csr_matrix(self.X)
            return _csr_class_matvec(Xs.data, Xs.indices, Xs.indptr, Wt, c, offsets, K)
        return _dense_class_matvec(self.X, Wt, c, offsets, K)

    def rmatvec(self, R: np.ndarray) -> np.ndarray:
        """``G[:, (t,k)] = X_t^T R_{(t,k)}`` (with the implicit centring), shape ``(d, m K)``,
        for view-stacked ``R`` of shape ``(K N,)``."""
        R = np.asarray(R, dtype=np.float64)
        if R.shape != (self.n_rows,):
            raise ValueError(f"R has shape {R.shape} but the data have {self.n_rows} "
                             "(row, class) pairs.")
        base, K = self._base(), int(self.n_classes)
        offsets = np.asarray(base.offsets, dtype=np.int64)
        if sp.issparse(self.X):
            Xs = sp.csr_matrix(self.X)
            Gt = _csr_class_rmatvec(Xs.data, Xs.indices, Xs.indptr, R, offsets, K,
                                    Xs.shape[1])
        else:
            Gt = _dense_class_rmatvec(self.X, R, offsets, K)
        G = np.ascontiguousarray(Gt.T)
        del Gt
        if base.x_offset is not None:  # G[:, (t,k)] -= x_offset[:, t] sum(R_{(t,k)})
            sums = self.task_sum(R).reshape(-1, K)
            G3 = G.reshape(G.shape[0], -1, K)
            for k in range(K):  # one (d, m) temporary at a time
                G3[:, :, k] -= base.x_offset * sums[None, :, k]
            if self.x_constant is not None:
                G[self.x_constant] = 0.0
        return G

    def restrict_columns(self, cols: np.ndarray) -> ClassColumns:
        """The view on the feature columns ``cols`` (sorted) alone: the design's columns
        sliced (a sparse design without a CSC copy of the whole: scipy reads the CSR rows
        once), with their implicit centring and constant cells (the working sets'
        subproblems)."""
        base, K = self._base(), int(self.n_classes)
        cols = np.asarray(cols, dtype=np.int64)
        X = base.X[:, cols] if sp.issparse(base.X) else np.ascontiguousarray(base.X[:, cols])
        sub = MultiTaskData(
            sp.csr_matrix(X) if sp.issparse(X) else X, base.y, base.offsets, base.tasks,
            False, None if base.x_offset is None else np.ascontiguousarray(base.x_offset[cols]),
            base.row_order,
            x_constant=None if base.x_constant is None else base.x_constant[cols],
            sample_weight=base.sample_weight)
        view = class_columns(sub, K)
        assert isinstance(view, ClassColumns)
        return view

    def squared_residual_pass(self, W, y, weights, *, value_at=None):
        raise ValueError("squared_residual_pass needs a dense per-task design, not the "
                         "task-class columns of a multinomial model.")

    # ----------------------------------------------------------------- per-task views
    def task_X(self, t: int):
        """The design of column ``t`` (the rows of its task)."""
        return self._base().task_X(int(t) // int(self.n_classes))

    def subset_tasks(self, tasks) -> MultiTaskData:
        """The view of the tasks whose ``K`` columns ``tasks`` lists, all of them, in order
        (a set of columns that splits a task's classes is a ``ValueError``)."""
        K = int(self.n_classes)
        cols = np.asarray(tasks, dtype=np.int64)
        if len(cols) % K or not np.array_equal(
                cols, (np.repeat(cols[::K] // K, K) * K + np.tile(np.arange(K), len(cols) // K))):
            raise ValueError("A subset of the task-class columns must hold every class of "
                             "each of its tasks, in order.")
        return class_columns(self._base().subset_tasks(cols[::K] // K), K)

    # ----------------------------------------------------------------- statistics
    def _repeat(self, a: np.ndarray, axis: int = 0) -> np.ndarray:
        return np.repeat(a, int(self.n_classes), axis=axis)

    def gram(self) -> np.ndarray:
        """The Gram matrix of each column: its task's (:meth:`MultiTaskData.gram` of
        ``base``), shape ``(m K, d, d)``."""
        if "gram" not in self._cache:
            self._cache["gram"] = self._repeat(self._base().gram())
        return self._cache["gram"]

    def task_spectral_norms_sq(self, intercept: bool = False,
                               weighted: bool = False) -> np.ndarray:
        """Each column's: its task's, shape ``(m K,)``."""
        return self._repeat(self._base().task_spectral_norms_sq(intercept, weighted))

    def x_means_and_constant(self) -> tuple[np.ndarray, np.ndarray]:
        mu, constant = self._base().x_means_and_constant()
        return self._repeat(mu, 1), self._repeat(constant, 1)

    def square_sum(self) -> tuple[float, float]:
        """``K`` times the base's: every row stands once per class."""
        total, count = self._base().square_sum()
        K = float(self.n_classes)
        return K * total, K * count

    def task_column_sq_norms(self) -> np.ndarray:
        return self._repeat(self._base().task_column_sq_norms(), 1)

    def centered(self) -> tuple[MultiTaskData, np.ndarray, np.ndarray]:
        """``(view, x_mean, y_mean)``: the view of the base centred implicitly (no copy of
        the rows, whatever the storage), the means ``(d, m K)`` and the class frequencies of
        each column."""
        base = self._base()
        mu, constant = base.x_means_and_constant()
        centred = MultiTaskData(base.X, base.y, base.offsets, base.tasks, False, mu,
                                base.row_order, x_constant=constant,
                                sample_weight=base.sample_weight)
        view = class_columns(centred, int(self.n_classes))
        return view, self._repeat(mu, 1), view.y_means()

    centred_implicitly = centered

    def column_norms(self) -> np.ndarray:
        """``max_t ||x_{j,t} - x_offset[j, t] 1||_2`` for every feature ``j`` over the tasks
        of ``base`` (each column's rows are its task's), shape ``(d,)``: the screening radius
        factor of :func:`multitask.solvers.working_set.column_norms`, from the column sums and
        sums of squares of each task's rows (an upper bound: a margin of ``1e-10`` of the sum
        of squares covers the rounding of the difference)."""
        base, K = self._base(), int(self.n_classes)
        X, d = base.X, base.n_features
        out = np.zeros(d)
        off = base.offsets
        for t in range(base.n_tasks):
            block = X[off[t]:off[t + 1]]
            if sp.issparse(block):
                Bs = sp.csr_matrix(block)
                S1 = np.bincount(Bs.indices, weights=Bs.data, minlength=d)
                S2 = np.bincount(Bs.indices, weights=Bs.data * Bs.data, minlength=d)
            else:
                Bd = np.asarray(block, dtype=np.float64)
                S1, S2 = Bd.sum(axis=0), np.einsum("ij,ij->j", Bd, Bd)
            n = float(off[t + 1] - off[t])
            if self.x_offset is None:
                sq = S2
            else:
                mu = self.x_offset[:, t * K]
                sq = np.maximum(S2 - 2.0 * mu * S1 + n * mu * mu, 0.0) + 1e-10 * S2
            np.maximum(out, sq, out=out)
        return np.sqrt(out)
