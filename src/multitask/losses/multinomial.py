"""The multinomial logistic loss: one softmax model of ``K > 2`` classes per task.

Task ``t`` scores row ``i`` for every class ``k`` with ``z_{i,k} = x_i^T w_{t,k} + b_{t,k}``.
The solver's variable is ``W`` of shape ``(n_features, m K)``, one column per (task, class)
pair (column ``t K + k``), so that every penalty acts on the whole array of task and class
columns: an l2,1 row selects a feature for every task and class, the trace norm sees the
``m K`` columns. The loss of a row is the cross-entropy over the classes ``P_t`` present in its
task (its rows of positive weight)::

    ell_i(z_i) = log sum_{k in P_t} exp(z_{i,k}) - z_{i, y_i},     F = sum_t sum_{i in t} w_i ell_i

with the row weights ``w_i`` of :mod:`multitask.losses` (``1 / n_t`` without ``sample_weight``).
A class absent from task ``t`` has probability exactly 0 there: the limit of the
maximum-likelihood fit, whose intercept for it tends to ``-inf``. Its column's loss gradient is
zero (the penalty alone sets its weights: zero for the separable penalties, a coupling's pull
towards the other tasks' weights of that class otherwise), and :meth:`Multinomial.intercept`
reports the intercept ``-inf`` for it (the estimators' ``intercept_`` and
``decision_function`` then give the score ``-inf`` and ``predict_proba`` the probability 0).

**The data.** The solvers see :attr:`Multinomial.data`, the view of the task-class columns
(:func:`~multitask.data.class_columns.class_columns`): ``m K`` "tasks" on the rows of the
original design, never copied, the scores of column ``(t, k)`` stacked at ``K o_t + k n_t + i``.
With ``center=True`` (and an intercept) the features are centred per task implicitly
(``x_offset``), for every storage of the design.

**Curvature.** The Hessian of ``ell_i`` in the scores is ``diag(p) - p p^T``, at most Boehning's
bound ``(I - 11^T / K) / 2 <= I / 2``: ``curvature() = 1/2`` per score. The loss of task ``t`` is
then bounded by a quadratic of Hessian ``X_t^T D_t X_t / (2 W_t)`` on each of its class columns
(block diagonal over the columns), which gives the Lipschitz constant, the fixed Hessians of
majorization (:meth:`~multitask.losses.base.Datafit.bound_hessian`) and the strong concavity of
the dual that gap-safe screening reads. Proximal Newton's per-row second derivatives do not
exist for a loss coupling ``K`` scores per row: no ``"hessian"`` capability; the Hessian in
score space is a product (:meth:`Multinomial.score_hessian`, ``"score_hessian"``: the steps of
truncated Newton, :mod:`multitask.solvers.newton_cg`).

**The conjugate** (the certificate, :mod:`multitask.solvers.certificate`): with ``a_i = p_i -
e_{y_i}`` the score gradient of row ``i`` (``p_i`` its probabilities), ``ell_i^*(a_i) = sum_k
q_{ik} log q_{ik}`` with ``q_i = e_{y_i} + a_i`` in the simplex (``+inf`` outside, and for a
nonzero entry on an absent class): the negative entropy. Along the certificate's ray ``s a_i``,
``q_i(s) = (1 - s) e_{y_i} + s p_i`` stays in the simplex. With the intercepts as variables the
dual must satisfy ``sum_{i in t} w_i a_{ik} = 0`` for every (task, class): the dual point is
balanced by ``q'_i = pi_t + lam_t (q_i - qbar_t)`` with ``pi_t`` the task's weighted class
frequencies, ``qbar_t`` the weighted mean of the ``q_i`` of the task and ``lam_t`` the largest
value in ``[0, 1]`` keeping every ``q'_i`` non-negative (``lam_t = 1`` at the optimal
intercepts, where ``qbar_t = pi_t``): each ``q'_i`` stays in the simplex and the sums vanish.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit

from multitask.data import MultiTaskData
from multitask.data.class_columns import (
    ClassColumns,
    class_columns,
    class_presence,
    task_means_and_constant,
)
from multitask.losses.base import Datafit, DualPoint
from multitask.losses.grams import _task_grams
from multitask.losses.registry import register_loss

__all__ = ["Multinomial"]

_NO_WEIGHTS = np.zeros(0)

#: Largest deviation from 1 of the sum of a dual point's ``q_i`` (rounding of the
#: probabilities), and largest negative entry treated as 0, in the conjugate's domain test.
DOMAIN_TOL = 1e-10


# --------------------------------------------------------------------------- kernels
@njit(cache=True)
def _shifted_exponentials(z, base, n, i, present, e):  # pragma: no cover - compiled
    """``(top, s)`` of row ``i`` of a task (view-stacked scores ``z[base + k n + i]``):
    ``top = max_k z_k`` and ``s = sum_k e_k`` over the ``present`` classes, with
    ``e_k = exp(z_k - top)`` written to ``e`` (0 for an absent class)."""
    K = e.shape[0]
    top = -np.inf
    for k in range(K):
        if present[k] and z[base + k * n + i] > top:
            top = z[base + k * n + i]
    s = 0.0
    for k in range(K):
        e[k] = np.exp(z[base + k * n + i] - top) if present[k] else 0.0
        s += e[k]
    return top, s


@njit(cache=True)
def _softmax_pass(z, codes, offsets, K, present, want_grad, w):
    """``(vals, a)``: the loss ``ell_i`` of every stacked row (shape ``(N,)``) and, with
    ``want_grad``, the view-stacked score gradient ``a = p - e_y`` (shape ``(K N,)``, zero on
    the absent classes; an empty array otherwise), from the view-stacked scores ``z``; with
    row weights ``w`` (shape ``(N,)``; empty: none) the weighted gradient ``w_i a_i``."""
    weighted = w.shape[0] > 0
    m = offsets.shape[0] - 1
    N = offsets[m]
    vals = np.empty(N, dtype=np.float64)
    a = np.zeros(K * N if want_grad else 0, dtype=np.float64)
    e = np.empty(K)
    for t in range(m):
        o = offsets[t]
        n = offsets[t + 1] - o
        base = K * o
        for i in range(n):
            top, s = _shifted_exponentials(z, base, n, i, present[t], e)
            lse = top + np.log(s)
            y = codes[o + i]
            vals[o + i] = lse - z[base + y * n + i]
            if want_grad:
                scale = w[o + i] if weighted else 1.0
                for k in range(K):
                    if present[t, k]:
                        p = np.exp(z[base + k * n + i] - lse)
                        a[base + k * n + i] = scale * (p - 1.0 if k == y else p)
    return vals, a


@njit(cache=True)
def _negentropy(a, s, codes, w, offsets, K, present, tol):
    """``sum_i w_i sum_k q_ik log q_ik`` with ``q_i = e_{y_i} + s a_i`` over the rows of
    positive weight, ``+inf`` when a ``q_i`` leaves the simplex (beyond ``tol``) or an absent
    class carries a nonzero entry."""
    m = offsets.shape[0] - 1
    total = 0.0
    for t in range(m):
        o = offsets[t]
        n = offsets[t + 1] - o
        base = K * o
        for i in range(n):
            wi = w[o + i]
            if wi <= 0.0:
                continue
            y = codes[o + i]
            row = 0.0
            sq = 0.0
            for k in range(K):
                v = s * a[base + k * n + i]
                if not present[t, k]:
                    if v != 0.0:
                        return np.inf
                    continue
                q = v + 1.0 if k == y else v
                if q < 0.0:
                    if q < -tol:
                        return np.inf
                    q = 0.0
                sq += q
                if q > 0.0:
                    row += q * np.log(q)
            if abs(sq - 1.0) > tol:
                return np.inf
            total += wi * row
    return total


@njit(cache=True)
def _balance(a, codes, w, offsets, K, present, out):
    """The balanced dual point ``a' = q' - e_y`` with ``q'_i = pi_t + lam_t (q_i - qbar_t)``
    (module docstring), zero on the rows of weight zero, written to ``out`` (``a`` itself
    allowed: each task's entries are read before they are written)."""
    m = offsets.shape[0] - 1
    pi = np.empty(K)
    qbar = np.empty(K)
    for t in range(m):
        o = offsets[t]
        n = offsets[t + 1] - o
        base = K * o
        pi[:] = 0.0
        qbar[:] = 0.0
        total = 0.0
        for i in range(n):
            wi = w[o + i]
            if wi <= 0.0:
                continue
            total += wi
            y = codes[o + i]
            pi[y] += wi
            for k in range(K):
                q = a[base + k * n + i] + (1.0 if k == y else 0.0)
                qbar[k] += wi * q
        if total <= 0.0:
            for i in range(K * n):
                out[base + i] = 0.0
            continue
        for k in range(K):
            pi[k] /= total
            qbar[k] /= total
        lam = 1.0
        for i in range(n):
            if w[o + i] <= 0.0:
                for k in range(K):
                    out[base + k * n + i] = 0.0
                continue
            y = codes[o + i]
            for k in range(K):
                if not present[t, k]:
                    continue
                diff = a[base + k * n + i] + (1.0 if k == y else 0.0) - qbar[k]
                if diff < 0.0 and pi[k] + lam * diff < 0.0:
                    lam = pi[k] / (-diff)
        for i in range(n):
            if w[o + i] <= 0.0:
                continue
            y = codes[o + i]
            for k in range(K):
                if not present[t, k]:
                    out[base + k * n + i] = 0.0
                    continue
                q = a[base + k * n + i] + (1.0 if k == y else 0.0)
                qn = pi[k] + lam * (q - qbar[k])
                if qn < 0.0:
                    qn = 0.0
                out[base + k * n + i] = qn - 1.0 if k == y else qn
    return out


@njit(cache=True)
def _hessian_product(z, v, offsets, K, present):
    """``(diag(p_i) - p_i p_i^T) v_i`` row by row over the present classes (view-stacked)."""
    m = offsets.shape[0] - 1
    out = np.zeros_like(v)
    p = np.empty(K)
    for t in range(m):
        o = offsets[t]
        n = offsets[t + 1] - o
        base = K * o
        for i in range(n):
            _, s = _shifted_exponentials(z, base, n, i, present[t], p)
            pv = 0.0
            for k in range(K):
                p[k] /= s
                pv += p[k] * v[base + k * n + i]
            for k in range(K):
                if present[t, k]:
                    out[base + k * n + i] = p[k] * (v[base + k * n + i] - pv)
    return out


# --------------------------------------------------------------------------- the datafit
class Multinomial(Datafit):
    """The multinomial logistic loss of ``K`` classes per task (module docstring).

    Parameters
    ----------
    data : MultiTaskData
        The ``m`` tasks, their targets the class codes ``0 .. K-1`` of the label set the tasks
        share (:mod:`multitask.data`'s encoding of more than two classes).
    fit_intercept : bool, default=True
        One unpenalized intercept per (task, class).
    alpha_l2 : float, default=0.0
        Weight of the ridge term ``(alpha_l2 / 2) ||W||_F^2``.
    center : bool, default=False
        With an intercept, centre the features of each task (implicitly: no copy).
    n_classes : int, optional
        ``K`` (default: the largest code plus one); at least 2.

    Attributes
    ----------
    data : MultiTaskData
        The view of the ``m K`` task-class columns the solvers work on.
    raw : MultiTaskData
        ``data`` as given.
    present : ndarray of bool of shape (m, K)
        The classes each task has among its rows of positive weight.
    """

    name = "multinomial"
    #: No ``"hessian"`` (the rows' ``K`` scores are coupled: proximal Newton's per-row second
    #: derivatives do not exist) and no ``"subgradient"`` (the projected subgradient method
    #: sizes its steps from the rows of the design as stacked for the tasks, which the view of
    #: the task-class columns does not stack; accelerated gradient solves the same models).
    capabilities = frozenset({"gradient", "dual", "curvature_bound", "score_hessian"})
    #: The certificate's dual point is scaled along its ray only, never projected
    #: (:func:`multitask.solvers.certificate._projected_dual`): the projection eigendecomposes
    #: a Gram matrix per task-class column (each task's ``K`` times), which the whole problem
    #: affords only when ``m K d^3`` is small, while a working set's subproblems (a few rows)
    #: always would: their certificates would then be tighter than the whole problem's, and an
    #: inner solve stopped by them leaves a gap the outer certificate cannot close.
    projects_dual = False

    def __init__(self, data: MultiTaskData, fit_intercept: bool = True, alpha_l2: float = 0.0,
                 center: bool = False, n_classes: int | None = None):
        codes = np.asarray(data.y, dtype=np.float64)
        if codes.size and (not np.all(np.isfinite(codes)) or codes.min() < 0
                           or np.any(codes != np.round(codes))):
            raise ValueError("The multinomial loss needs the class codes 0 .. K-1 as targets "
                             "(multitask.data encodes more than two classes so).")
        top = int(codes.max()) + 1 if codes.size else 0
        K = top if n_classes is None else int(n_classes)
        if K < 2 or K < top:
            raise ValueError(f"The multinomial loss needs n_classes >= 2 covering the codes "
                             f"(largest {top - 1}), got {n_classes!r}.")
        self.n_classes = K
        centre = bool(center) and bool(fit_intercept)
        if centre and data.x_offset is None:
            mu, constant = task_means_and_constant(data)
            base = MultiTaskData(data.X, data.y, data.offsets, data.tasks, data.shared, mu,
                                 data.row_order, x_constant=constant,
                                 sample_weight=data.sample_weight)
        else:
            base = data
        self._base = base
        self._codes = np.ascontiguousarray(codes, dtype=np.int64)
        self._offsets = np.ascontiguousarray(base.offsets, dtype=np.int64)
        self._weights = np.ascontiguousarray(base.row_weights, dtype=np.float64)
        self.present = class_presence(self._codes, self._weights, self._offsets, K)
        super().__init__(class_columns(base, K), fit_intercept, alpha_l2, center=False)
        self.raw = data
        self.center = centre
        self._absent = ~self.present.ravel()

    @property
    def x_mean(self) -> np.ndarray:
        """The per-column feature means of the centring, ``(n_features, m K)`` (each task's
        repeated for its classes; zeros without centring), formed on request: the loss itself
        reads the tasks' ``(n_features, m)`` means."""
        base = self._base
        if self.center and base.x_offset is not None:
            return np.repeat(base.x_offset, self.n_classes, axis=1)
        return np.zeros((base.n_features, base.n_tasks * self.n_classes))

    @x_mean.setter
    def x_mean(self, value) -> None:  # the base class's default: the property replaces it
        pass

    # ------------------------------------------------------------------ construction
    def get_params(self) -> dict:
        return {**super().get_params(), "n_classes": self.n_classes}

    def restrict(self, tasks) -> Multinomial:
        """The same loss on the task-class columns ``tasks`` (positions; all ``K`` columns of
        each task kept, in order: a set that splits a task's classes is a ``ValueError``)."""
        cols = np.asarray(tasks, dtype=np.int64)
        K = self.n_classes
        if len(cols) % K or not np.array_equal(
                cols, np.repeat(cols[::K] // K, K) * K + np.tile(np.arange(K), len(cols) // K)):
            raise ValueError("The multinomial loss restricts to whole tasks: every class "
                             "column of each task, in order.")
        return type(self)(self.raw.subset_tasks(cols[::K] // K), **self.get_params())

    def on_columns(self, data: MultiTaskData, gram: bool = True) -> Multinomial:
        """The loss on a subset of the feature columns (working sets): ``data`` is this
        loss's view (:attr:`data`) with its design, implicit centring and constant cells
        restricted to those columns; only ``data.X``, ``data.x_offset`` and
        ``data.x_constant`` are read (the rows, targets and weights are this loss's)."""
        K = self.n_classes
        raw = self._base
        base = MultiTaskData(
            data.X, raw.y, raw.offsets, raw.tasks, raw.shared,
            None if data.x_offset is None else np.ascontiguousarray(data.x_offset[:, ::K]),
            raw.row_order,
            x_constant=None if data.x_constant is None else data.x_constant[:, ::K],
            sample_weight=raw.sample_weight)
        return type(self)(base, self.has_intercept_variable, self.alpha_l2, center=False,
                          n_classes=K)

    def __repr__(self) -> str:
        return (f"Multinomial(n_tasks={self._base.n_tasks}, n_classes={self.n_classes}, "
                f"n_features={self.data.n_features}, fit_intercept={self.fit_intercept})")

    # ------------------------------------------------------------------ intercepts
    def intercept(self, W: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
        """The fitted intercepts ``b_{t,k} - mu_t^T w_{t,k}`` of every task-class column,
        shape ``(m K,)``, ``-inf`` for the classes a task does not have (module docstring)."""
        K = self.n_classes
        out = (np.zeros(self.data.n_tasks) if b is None
               else np.array(b, dtype=np.float64, copy=True))
        base = self._base
        if self.center and base.x_offset is not None:
            W = np.asarray(W, dtype=np.float64)
            out -= np.einsum("jtk,jt->tk", W.reshape(W.shape[0], -1, K),
                             base.x_offset).ravel()
        out[self._absent] = -np.inf
        return out

    def optimal_intercept_at_zero(self) -> np.ndarray | None:
        """``b_{t,k} = log pi_{t,k}``, ``pi_t`` the task's weighted class frequencies (the
        softmax of ``b_t`` is then ``pi_t``); 0 for the absent classes."""
        if not self.has_intercept_variable:
            return None
        pi = self._class_frequencies()
        with np.errstate(divide="ignore"):
            return np.where(self.present, np.log(np.where(self.present, pi, 1.0)), 0.0).ravel()

    def _class_frequencies(self) -> np.ndarray:
        """``pi[t, k] = sum_{i in t, y_i = k} w_i``, shape ``(m, K)``."""
        m, K = self._base.n_tasks, self.n_classes
        task = np.repeat(np.arange(m, dtype=np.int64), np.diff(self._offsets))
        pi = np.zeros((m, K))
        np.add.at(pi, (task, self._codes), self._weights)
        return pi

    # ------------------------------------------------------------------ values and gradients
    def _pass(self, z: np.ndarray, want_grad: bool,
              weighted: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``(loss of each row, score gradient a = p - e_y)``, the gradient weighted by the
        rows' weights (``theta = w a``) with ``weighted``."""
        return _softmax_pass(np.ascontiguousarray(z, dtype=np.float64), self._codes,
                             self._offsets, self.n_classes, self.present, want_grad,
                             self._weights if weighted else _NO_WEIGHTS)

    def scores(self, W: np.ndarray, b: np.ndarray | None) -> np.ndarray:
        """The view-stacked scores ``x_i^T w_{t,k} + b_{t,k}``, the intercepts added in the
        pass over the design (no temporary of the scores' size)."""
        data = self.data
        if not isinstance(data, ClassColumns):
            return super().scores(W, b)
        W = np.asarray(W, dtype=np.float64)
        if W.shape == (data.n_features, data.n_tasks) and not W.any():  # no pass at W = 0
            return (np.zeros(data.n_rows) if b is None
                    else data.expand(np.asarray(b, dtype=np.float64)))
        return data.scores(W, b)

    def _dloss(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(vals, a)`` view-stacked: the loss of row ``i`` at its class ``y_i``'s position
        (zero elsewhere, so that ``vals @ data.row_weights`` is the loss) and the score
        gradient ``a = p - e_y``."""
        rows, a = self._pass(z, True)
        vals = np.zeros(self.data.n_rows)
        vals[self._true_positions()] = rows
        return vals, a

    def _true_positions(self) -> np.ndarray:
        """The view position of each stacked row's own class, shape ``(N,)``."""
        off = self._offsets
        task = np.repeat(np.arange(len(off) - 1, dtype=np.int64), np.diff(off))
        local = np.arange(int(off[-1]), dtype=np.int64) - off[task]
        return self.n_classes * off[task] + self._codes * np.diff(off)[task] + local

    def _loss_value(self, W: np.ndarray, b: np.ndarray | None) -> float:
        rows, _ = self._pass(self.scores(W, b), False)
        return float(rows @ self._weights)

    def _loss_value_and_grad(self, W, b):
        rows, r = self._pass(self.scores(W, b), True, weighted=True)
        gb = self.data.task_sum(r) if b is not None else None
        return float(rows @ self._weights), self.data.rmatvec(r), gb

    def value_scores(self, z: np.ndarray) -> float:
        rows, _ = self._pass(z, False)
        return float(rows @ self._weights)

    def score_hessian(self, z: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        """``v -> H v``: the Hessian of ``sum_i w_i ell_i`` in the (view-stacked) scores,
        ``w_i (diag(p_i) - p_i p_i^T)`` on each row's classes: the rows' ``K`` scores are
        coupled (the certificate's Newton steps along the directions a penalty leaves
        free)."""
        zc = np.ascontiguousarray(z, dtype=np.float64)

        def product(v: np.ndarray) -> np.ndarray:
            return self._weighted(_hessian_product(
                zc, np.ascontiguousarray(v, dtype=np.float64), self._offsets, self.n_classes,
                self.present))

        return product

    def curvature(self) -> float:
        """Boehning's bound: ``diag(p) - p p^T <= I / 2``."""
        return 0.5

    def _base_grams(self) -> tuple[np.ndarray, np.ndarray | None]:
        """``(G, mu)``: the row-weighted Gram matrices of the tasks' designs as the loss sees
        them (centred when the intercepts are variables), divided by the tasks' weight sums,
        shape ``(m, d, d)`` (``(1, d, d)`` for a shared design weighing its rows alike), and
        the per-task means ``(d, m)`` of the design the loss sees (None without intercept;
        zero where it is centred implicitly, ``x_offset`` being those weighted means)."""
        base = self._base
        n = base.task_weight_sums
        if not self.has_intercept_variable:
            G, mu = base.gram(), None
        elif base.x_offset is not None:  # centred implicitly by the weighted means: the
            # centred columns have mean zero, so the intercepts decouple (mu = 0)
            G, mu = base.gram(), np.zeros_like(base.x_offset)
        elif not (base.shared or base.is_sparse):
            mu = base.x_means_and_constant()[0]
            G = _task_grams(base, mu)
        else:
            data_c, mu, _ = base.centered()
            G = data_c.gram()
        return (G / n[0] if G.shape[0] == 1 else G / n[:, None, None]), mu

    def weighted_grams(self) -> tuple[np.ndarray, np.ndarray | None]:
        """Each task-class column's: its task's (:meth:`_base_grams`), shape ``(m K, d, d)``
        (``(1, d, d)`` when one matrix serves every task)."""
        G, mu = self._base_grams()
        K = self.n_classes
        return (G if G.shape[0] == 1 else np.repeat(G, K, axis=0),
                None if mu is None else np.repeat(mu, K, axis=1))

    def bound_hessian(self) -> tuple[np.ndarray, np.ndarray | None]:
        """``H_c = X_t^T D_t X_t / (2 W_t) + alpha_l2 I`` for each column ``c = (t, k)``
        (centred when the intercepts are variables; module docstring), cached."""
        if self._bound_hessian is None:
            G, mu = self.weighted_grams()
            H = self.curvature() * G
            if self.alpha_l2:
                H = H + self.alpha_l2 * np.eye(H.shape[1])[None]
            self._bound_hessian = (H, mu)
        return self._bound_hessian

    # ------------------------------------------------------------------ the dual
    def dual_point(self, W: np.ndarray, b: np.ndarray | None = None) -> DualPoint:
        """:meth:`dual_point_at_scores` at the scores of ``(W, b)``, which are dropped as
        soon as the score gradient is formed (one vector of ``K N`` less at the peak)."""
        rows, a = self._pass(self.scores(W, b), True)
        return self._dual_from(rows, a, b, None)

    def dual_point_at_scores(self, z: np.ndarray, b: np.ndarray | None = None, *,
                             design: MultiTaskData | None = None) -> DualPoint:
        rows, a = self._pass(z, True)
        return self._dual_from(rows, a, b, design)

    def _dual_from(self, rows: np.ndarray, a: np.ndarray, b: np.ndarray | None,
                   design: MultiTaskData | None) -> DualPoint:
        """The dual point of the score gradient ``a`` (balanced in place when the
        intercepts are variables) and the rows' losses."""
        loss = float(rows @ self._weights)
        if b is not None and self.has_intercept_variable:
            _balance(a, self._codes, self._weights, self._offsets, self.n_classes,
                     self.present, a)
        G = (self.data if design is None else design).rmatvec(self._weighted(a))

        def conjugate(s: float) -> float:
            return self.conjugate_sum(a, s)

        return DualPoint(loss=loss, grad=G, conjugate=conjugate, score_grad=a)

    def _weighted(self, a: np.ndarray) -> np.ndarray:
        """``theta = w a`` for view-stacked ``a`` (the row weights repeated per class)."""
        w = self._weights
        K = self.n_classes
        theta = np.empty_like(a)
        off = self._offsets
        for t in range(len(off) - 1):
            o, e = int(off[t]), int(off[t + 1])
            np.multiply(a[K * o:K * e].reshape(K, e - o), w[None, o:e],
                        out=theta[K * o:K * e].reshape(K, e - o))
        return theta

    def balance_dual(self, a: np.ndarray) -> np.ndarray:
        """The balanced dual point of the module docstring (every (task, class) sum of
        ``w_i a_{ik}`` zero, each ``q_i`` in the simplex); a new array."""
        a = np.ascontiguousarray(a, dtype=np.float64)
        return _balance(a, self._codes, self._weights, self._offsets, self.n_classes,
                        self.present, np.empty_like(a))

    def conjugate_sum(self, a: np.ndarray, s: float = 1.0) -> float:
        """``F^*(s theta) = sum_i w_i sum_k q_ik log q_ik``, ``q_i = e_{y_i} + s a_i``
        (``+inf`` outside the simplex), over the rows of positive weight."""
        return float(_negentropy(np.ascontiguousarray(a, dtype=np.float64), float(s),
                                 self._codes, self._weights, self._offsets, self.n_classes,
                                 self.present, DOMAIN_TOL))


register_loss(Multinomial)
