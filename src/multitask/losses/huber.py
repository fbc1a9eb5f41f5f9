"""The Huber loss with its scale fitted jointly, per task, as scikit-learn's ``HuberRegressor``.

``HuberRegressor`` minimizes, for one task of ``n`` rows with residuals ``r_i = x_i^T w + b -
y_i``, ``sum_i (sigma + H_eps(r_i / sigma) sigma) + alpha ||w||^2`` over ``(w, b, sigma > 0)``,
with ``H_eps(u) = u^2`` for ``|u| <= eps`` and ``2 eps |u| - eps^2`` beyond (Owen, "A robust
hybrid of lasso and ridge regression"): the scale ``sigma`` is estimated with the weights, and
the rows whose residual exceeds ``eps sigma`` count linearly. Here every task ``t`` has its own
scale ``sigma_t``, profiled out exactly::

    F_t(z) = min_{sigma >= 0} g_t(sigma),
    g_t(sigma) = sum_{i in t} w_i (sigma + sigma H_eps(r_i / sigma))

with the row weights ``w_i`` of :mod:`multitask.losses` (summing to one in a task; ``1 /
n_t``). ``sigma H(r / sigma)`` is the perspective of a convex function, jointly convex in ``(r,
sigma)``, so ``F_t`` is convex in the scores (and in ``(W, b)``). With the rows sorted by
``|r_i|``, ``g_t`` is, on each interval of ``sigma`` where the inliers (``|r_i| <= eps sigma``)
stay the same, ``sigma (1 - eps^2 P_out) + S_in / sigma + 2 eps A_out`` (``S_in = sum_in w_i
r_i^2``, ``P_out = sum_out w_i``, ``A_out = sum_out w_i |r_i|``): convex with its minimum at
``sqrt(S_in / (1 - eps^2 P_out))`` clipped to the interval. :meth:`Huber.task_scales` takes the
best interval of each task (one sort of the residuals), and recomputes ``sigma_t`` from the
exact sums of its inliers.

**Gradient** (Danskin): ``ell'(z_i) = H'(r_i / sigma_t) = 2 r_i / sigma_t`` for an inlier and
``2 eps sign(r_i)`` for an outlier, at the optimal ``sigma_t > 0``. ``g_t`` is continuously
differentiable, and ``g_t'(sigma) = 1 - eps^2 P_out - S_in / sigma^2``; for ``eps > 1`` and
residuals that are not almost all exactly zero the minimum lies at ``sigma_t > 0`` and ``F_t``
is smooth there, its curvature ``2 / sigma_t`` unbounded as the scale shrinks: this datafit
declares ``"gradient"`` but no ``"curvature_bound"`` (:meth:`Huber.lipschitz` is an estimate
at the intercept-only fit, from which the solvers backtrack). At ``eps = 1`` the minimum is
``sigma = 0`` for every residual vector (``g_t'(0+) = 1 - P(r != 0) >= 0``): the profiled loss
is ``2 sum_i w_i |r_i|``, least absolute deviations, which is not smooth; the datafit refuses
``eps = 1`` and says to use the quantile loss at 0.5 (the same minimizer).

**Conjugate.** With ``a_i = theta_i / w_i``::

    F_t^*(theta) = sum_{i in t} theta_i y_i
                   if |a_i| <= 2 eps (every row) and sum_{i in t} w_i (1 - a_i^2 / 4) >= 0,

``+inf`` otherwise (``sup_sigma sigma sum_i w_i (H^*(a_i) - 1)`` with ``H^*(a) = a^2 / 4`` on
``|a| <= 2 eps``). The dual point made of the gradient satisfies the box, and the second
constraint with equality at the task's optimal ``sigma_t`` (the sum is ``g_t'(sigma_t) = 0``):
:meth:`Huber.dual_domain` scales a task down by a relative ``1e-14`` at most where rounding left
it outside. The domain couples the rows of a task, so :meth:`Huber.conjugate_sum` checks it per
task.

**Scaling against HuberRegressor.** Our loss of a task is ``1 / n_t`` times HuberRegressor's
sum (the same ``eps`` and the same ``sigma``), and its penalty ``alpha ||w||^2`` is our
``(alpha_l2 / 2) ||w||^2`` with ``alpha_l2 = 2 alpha / n_t``: a penalty strength of this
library is ``2 / n_t`` times (ridge) or ``1 / n_t`` times (a norm) the strength of the same
penalty added to HuberRegressor's objective. The fitted scales are the estimators'
``scale_`` (HuberRegressor's ``scale_``).
"""

from __future__ import annotations

import numpy as np

from multitask.data import MultiTaskData
from multitask.losses.base import Datafit
from multitask.losses.quantile import weighted_quantiles
from multitask.losses.registry import register_loss

__all__ = ["Huber", "check_epsilon"]

#: Most steps of :meth:`Huber.optimal_intercept_at_zero` (Newton's, safeguarded by bisection
#: from the range of a task's targets: bisection alone reaches rounding within them).
_BISECTION_STEPS = 200
#: Relative margin by which :meth:`Huber.dual_domain` keeps ``sum_i w_i a_i^2 / 4`` below the
#: task's weight (rounding of the optimal scale leaves it at the boundary).
_DOMAIN_MARGIN = 1e-14


#: Most steps of the fixed point of :meth:`Huber._scales_from` before the sort decides (from
#: the scales of the solver's previous point it settles in one to three).
_FIXED_POINT_STEPS = 6

#: Smallest mean task size for which :func:`_task_order` sorts each task apart (fewer rows per
#: task: two passes over all rows, the second a stable sort of the task codes).
_SORT_TASKS_APART = 32


def _task_order(a: np.ndarray, task: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The order of the rows by task, then by ``a`` within a task (``np.lexsort((a, task))``
    for rows stored task after task): each task's rows sorted apart, or, for many small
    tasks, ``a`` sorted first and the task codes then by a stable sort."""
    m = offsets.size - 1
    if m and a.size >= _SORT_TASKS_APART * m:
        return np.concatenate([offsets[t] + np.argsort(a[offsets[t]:offsets[t + 1]])
                               for t in range(m)])
    first = np.argsort(a)
    codes = task.astype(np.int16 if m < 2**15 else np.int64)[first]
    return first[np.argsort(codes, kind="stable")]


def check_epsilon(epsilon) -> float:
    """``epsilon`` as a float ``> 1`` (``ValueError`` otherwise; ``epsilon = 1`` with its
    reason)."""
    try:
        eps = float(epsilon)
    except (TypeError, ValueError):
        raise ValueError(f"epsilon must be a number > 1, got {epsilon!r}.") from None
    if not np.isfinite(eps) or eps < 1.0:
        raise ValueError(f"epsilon must be a finite number >= 1 (as HuberRegressor's), got "
                         f"{epsilon!r}.")
    if eps == 1.0:
        raise ValueError(
            "epsilon=1 makes the Huber loss with a fitted scale the least absolute deviation "
            "2 |y - z| (the optimal scale is 0 for every fit), which is not smooth: use "
            "loss='quantile' with quantile=0.5 (the same minimizer, an objective 4 times "
            "smaller) or epsilon > 1.")
    return eps


class Huber(Datafit):
    """Huber loss with a scale fitted per task (module docstring).

    Parameters
    ----------
    data, fit_intercept, alpha_l2, center
        As in :class:`~multitask.losses.base.Datafit`.
    epsilon : float, default=1.35
        ``eps > 1``: residuals beyond ``eps sigma_t`` count linearly (HuberRegressor's
        ``epsilon``; 1.35 gives 95% efficiency under Gaussian noise).
    """

    name = "huber"
    starts_at_best_intercept = True
    starts_from_least_squares = True
    capabilities = frozenset({"gradient", "subgradient", "dual", "hessian"})

    def __init__(self, data: MultiTaskData, fit_intercept: bool = True, alpha_l2: float = 0.0,
                 center: bool = False, epsilon: float = 1.35):
        self.epsilon = check_epsilon(epsilon)
        self._intercept0: np.ndarray | None = None
        self._memo: tuple[np.ndarray, tuple] | None = None
        super().__init__(data, fit_intercept, alpha_l2, center)

    def get_params(self) -> dict:
        return {**super().get_params(), "epsilon": self.epsilon}

    # ------------------------------------------------------------------ the scales
    def task_scales(self, z: np.ndarray) -> np.ndarray:
        """``sigma_t``, the minimizer of ``g_t`` (module docstring) at the stacked scores
        ``z``, shape ``(n_tasks,)`` (0 for a task whose residuals are all 0)."""
        return self._rows(z)[2].copy()

    def _scales(self, r: np.ndarray, start: np.ndarray | None = None) -> np.ndarray:
        """``sigma_t`` at the residuals ``r``: from the scales ``start`` of nearby residuals
        where :meth:`_scales_from` settles, else by one sort of each task's residuals (module
        docstring)."""
        if start is not None:
            sigma = self._scales_from(r, start)
            if sigma is not None:
                return sigma
        return self._sorted_scales(r)

    def _scales_from(self, r: np.ndarray, start: np.ndarray) -> np.ndarray | None:
        """The scales by the fixed point ``s <- sqrt(S_in(s) / (1 - eps^2 P_out(s)))`` from
        ``start`` (the minimizer of the piece of ``g_t`` whose inliers are those at ``s``): a
        point whose inliers are those it was computed from lies in its piece, where ``g_t' =
        0``, so it is the minimizer (``g_t`` is convex and continuously differentiable). None
        where that does not happen in :data:`_FIXED_POINT_STEPS` steps for every task, or a
        task has no inliers or a non-positive ``1 - eps^2 P_out`` (the sort decides)."""
        data, eps = self.data, self.epsilon
        w = data.row_weights
        m = data.n_tasks
        task = data.task_of_row
        s = np.asarray(start, dtype=np.float64)
        if s.shape != (m,) or not np.all(np.isfinite(s) & (s > 0)):
            return None
        ar = np.where(w > 0, np.abs(r), 0.0)
        inl = ar <= eps * s[task]
        for _ in range(_FIXED_POINT_STEPS):
            S_in = data.task_sum(w * r * r * inl)
            P_out = data.task_sum(w * ~inl)
            den = 1.0 - eps * eps * P_out
            if not np.all((den > 0) & (S_in > 0)):
                return None
            s = np.sqrt(S_in / den)
            now = ar <= eps * s[task]
            if np.array_equal(now, inl):
                return s if np.all(np.isfinite(s)) else None
            inl = now
        return None

    def _sorted_scales(self, r: np.ndarray) -> np.ndarray:
        data, eps = self.data, self.epsilon
        w = data.row_weights
        m = data.n_tasks
        task = data.task_of_row
        ar = np.where(w > 0, np.abs(r), 0.0)
        top = np.maximum.reduceat(ar, data.offsets[:-1]) if ar.size else np.zeros(m)
        bad = ~np.isfinite(top)  # a residual beyond the float range: the scale is inf
        live = (top > 0) & ~bad
        if not live.any():
            return np.where(bad, np.inf, 0.0)
        # normalized per task (the cumulative sums of all tasks are taken at once)
        a = np.where(live[task], ar / np.where(live, top, 1.0)[task], 0.0)
        order = _task_order(a, task, data.offsets)
        a_s, w_s, t_s = a[order], w[order], task[order]
        starts = data.offsets[:-1]
        sizes = np.diff(data.offsets)

        def seg_cumsum(v: np.ndarray) -> np.ndarray:
            cs = np.cumsum(v)
            before = np.concatenate([[0.0], cs])[starts]
            return cs - np.repeat(before, sizes)

        S = seg_cumsum(w_s * a_s * a_s)
        P = seg_cumsum(w_s)
        A = seg_cumsum(w_s * a_s)
        ends = data.offsets[1:] - 1
        P_tot, A_tot = P[ends], A[ends]
        nxt = np.append(a_s[1:], np.inf)
        nxt[ends] = np.inf
        lo, hi = a_s / eps, nxt / eps
        coef = 1.0 - eps * eps * (P_tot[t_s] - P)
        with np.errstate(divide="ignore", invalid="ignore"):
            s = np.where(coef > 0, np.sqrt(np.maximum(S, 0.0) / np.where(coef > 0, coef, 1.0)),
                         hi)
            s = np.clip(s, lo, hi)
            g = coef * s + np.where(S > 0, S / np.where(s > 0, s, 1.0), 0.0) \
                + 2.0 * eps * (A_tot[t_s] - A)
        g = np.where(np.isfinite(g), g, np.inf)
        best = np.minimum.reduceat(g, starts)
        first = np.flatnonzero(g == np.repeat(best, sizes))
        _, at = np.unique(t_s[first], return_index=True)
        pick = first[at]
        sigma = s[pick] * top  # tasks in order (each task has rows)
        sigma = np.where(live, sigma, 0.0)
        # the inliers' exact sums (not the normalized cumulative ones)
        inl = ar <= eps * sigma[task]
        S_in = data.task_sum(w * r * r * inl)
        P_out = data.task_sum(w * ~inl)
        den = 1.0 - eps * eps * P_out
        with np.errstate(divide="ignore", invalid="ignore"):
            exact = np.sqrt(S_in / den)
        ok = live & (den > 0) & (S_in > 0) & np.isfinite(exact)
        return np.where(bad, np.inf, np.where(ok, exact, sigma))

    # ------------------------------------------------------------------ values
    def _rows(self, z: np.ndarray):
        """``(values, ell', sigma, r)`` row by row at the scores ``z`` (module docstring),
        read-only; the last scores' are kept (a solver asks for the loss, its gradient and
        its curvature at the same scores: the scales cost a sort of each task's residuals)."""
        z = np.asarray(z, dtype=np.float64)
        memo = self._memo
        if memo is not None and memo[0].shape == z.shape and np.array_equal(memo[0], z):
            return memo[1]
        out = self._compute_rows(z)
        for arr in out:
            arr.flags.writeable = False
        self._memo = (z.copy(), out)
        return out

    def _compute_rows(self, z: np.ndarray):
        eps = self.epsilon
        r = z - self.data.y
        sigma = self._scales(r, None if self._memo is None else self._memo[1][2])
        sg = sigma[self.data.task_of_row]
        ar = np.abs(r)
        inl = ar <= eps * sg
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            pos = sg > 0
            vals = np.where(inl, sg + np.where(pos, r * r / np.where(pos, sg, 1.0), 0.0),
                            sg - eps * eps * sg + 2.0 * eps * ar)
            d1 = np.where(inl, np.where(pos, 2.0 * r / np.where(pos, sg, 1.0), 0.0),
                          2.0 * eps * np.sign(r))
        d1 = np.clip(d1, -2.0 * eps, 2.0 * eps)
        return vals, d1, sigma, r

    def _dloss(self, z):
        vals, d1, _, _ = self._rows(z)
        return vals, d1

    def _curvature(self, r: np.ndarray, sigma: np.ndarray):
        """``(h, c, k)``: the Hessian of the profiled loss in score space at the residuals
        ``r`` and scales ``sigma`` (:meth:`score_hessian`): the rows' ``h_i = 2 / sigma_t``
        (inliers; 0 on the outliers and in a task of scale 0), the mixed derivatives ``c_i =
        -2 w_i r_i / sigma_t^2`` and ``k_t = 1 / g''_t`` with ``g''_t = 2 S_in / sigma_t^3``,
        so that the Hessian of task ``t`` is ``diag(w_i h_i) - k_t c_t c_t^T``."""
        eps = self.epsilon
        data = self.data
        w = data.row_weights
        sg = sigma[data.task_of_row]
        pos = (sg > 0) & np.isfinite(sg)
        inl = (np.abs(r) <= eps * sg) & pos
        safe = np.where(pos, sg, 1.0)
        h = np.where(inl, 2.0 / safe, 0.0)
        c = np.where(inl, -2.0 * w * r / (safe * safe), 0.0)
        S_in = data.task_sum(w * r * r * inl)
        s_pos = (sigma > 0) & np.isfinite(sigma)
        s_safe = np.where(s_pos, sigma, 1.0)
        g2 = np.where(s_pos, 2.0 * S_in / s_safe ** 3, 0.0)
        k = np.where(g2 > 0, 1.0 / np.where(g2 > 0, g2, 1.0), 0.0)
        return h, c, k

    def score_derivatives(self, z: np.ndarray, second: bool = False) -> tuple[np.ndarray, ...]:
        """``(ell, ell')`` row by row, and with ``second`` the diagonal part ``h`` of the
        Hessian (:meth:`_curvature`), from one computation of the scales."""
        vals, d1, sigma, r = self._rows(z)
        if not second:
            return vals, d1
        return vals, d1, self._curvature(r, sigma)[0]

    def _d2loss(self, z):
        """The diagonal part ``h_i = 2 / sigma_t`` of the Hessian (inliers; 0 elsewhere):
        with :meth:`task_hessian_correction` the Hessian of Newton's steps."""
        _, _, sigma, r = self._rows(z)
        return self._curvature(r, sigma)[0]

    def task_hessian_correction(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(c, k)`` of :meth:`_curvature`: the Hessian of task ``t`` in score space is
        ``diag(w_i h_i) - k_t c_t c_t^T`` (the scale profiled out)."""
        _, _, sigma, r = self._rows(z)
        _, c, k = self._curvature(r, sigma)
        return c, k

    def score_hessian(self, z: np.ndarray):
        """``v -> H v`` with the Hessian of the profiled loss in score space: per task, with
        ``D = diag(2 w_i / sigma_t)`` on the inliers and ``c_i = -2 w_i r_i / sigma_t^2`` (the
        mixed derivative in ``(z_i, sigma)``; 0 on the outliers), ``H_t = D - c c^T / g''``,
        ``g'' = 2 S_in / sigma_t^3`` (the Schur complement of the joint Hessian in ``(z,
        sigma)``). A task of scale 0 (least absolute deviations there) contributes 0."""
        data = self.data
        _, _, sigma, r = self._rows(z)
        h, c, k = self._curvature(r, sigma)
        D = data.row_weights * h

        def product(v: np.ndarray) -> np.ndarray:
            return D * v - c * data.expand(k * data.task_sum(c * v))

        return product

    # ------------------------------------------------------------------ the dual
    def _score_conjugate(self, a):
        """``a_i y_i`` on the box ``|a_i| <= 2 eps`` (``inf`` outside); the task constraint
        is :meth:`conjugate_sum`'s."""
        a = np.asarray(a, dtype=np.float64)
        return np.where(np.abs(a) <= 2.0 * self.epsilon, a * self.data.y, np.inf)

    def conjugate_sum(self, a: np.ndarray, s: float = 1.0) -> float:
        """``F^*(s theta) = sum_i w_i s a_i y_i`` when ``|s a_i| <= 2 eps`` on every row and
        ``sum_{i in t} w_i (1 - s^2 a_i^2 / 4) >= 0`` in every task, ``+inf`` otherwise."""
        w = self.data.row_weights
        rows = w > 0
        sa = s * np.asarray(a, dtype=np.float64)
        if np.any(np.abs(sa[rows]) > 2.0 * self.epsilon) or not np.all(np.isfinite(sa[rows])):
            return float("inf")
        slack = self.data.task_sum(w * (1.0 - 0.25 * sa * sa))
        if np.any(slack < 0.0):
            return float("inf")
        return float(w[rows] @ (sa * self.data.y)[rows])

    def dual_domain(self, a: np.ndarray) -> np.ndarray:
        """``a`` clipped to the box, each task scaled so that ``sum_i w_i a_i^2 / 4 <= (1 -
        1e-14) sum_i w_i`` (module docstring)."""
        eps = self.epsilon
        a = np.clip(np.asarray(a, dtype=np.float64), -2.0 * eps, 2.0 * eps)
        w = self.data.row_weights
        use = self.data.task_sum(w * 0.25 * a * a)
        cap = (1.0 - _DOMAIN_MARGIN) * self.data.task_sum(w)
        with np.errstate(divide="ignore", invalid="ignore"):
            f = np.where(use > cap, np.sqrt(cap / np.where(use > 0, use, 1.0)), 1.0)
        return a * self.data.expand(f)

    # ------------------------------------------------------------------ intercepts, curvature
    def optimal_intercept_at_zero(self):
        """The minimizer ``b_t`` of ``F_t(b)`` (the scores all ``b``), per task: Newton steps
        on its derivative ``sum_i w_i ell'(y_i, b)`` (non-decreasing: ``F_t`` is convex) from
        the task's weighted median, with the exact second derivative ``1^T H_t 1`` of
        :meth:`_curvature`, safeguarded by bisection in the bracket of the task's smallest and
        largest targets (a step that leaves the bracket, or no curvature, bisects). Cached."""
        if self._intercept0 is None:
            data = self.data
            w = data.row_weights
            y = data.y
            task = data.task_of_row
            m = data.n_tasks
            lo = np.full(m, np.inf)
            hi = np.full(m, -np.inf)
            np.minimum.at(lo, task, np.where(w > 0, y, np.inf))
            np.maximum.at(hi, task, np.where(w > 0, y, -np.inf))
            lo = np.where(np.isfinite(lo), lo, 0.0)
            hi = np.where(np.isfinite(hi), hi, 0.0)
            b = np.clip(weighted_quantiles(data, y, 0.5), lo, hi)  # a robust start
            ulp = 4.0 * np.finfo(float).eps
            for _ in range(_BISECTION_STEPS):
                _, d1, sigma, r = self._rows(data.expand(b))
                slope = data.task_sum(w * d1)
                h, c, k = self._curvature(r, sigma)
                U = data.task_sum(c)
                q = data.task_sum(w * h) - k * U * U
                lo = np.where(slope < 0, b, lo)
                hi = np.where(slope > 0, b, hi)
                with np.errstate(divide="ignore", invalid="ignore"):
                    step = np.where(q > 0, slope / np.where(q > 0, q, 1.0), np.nan)
                # converged: a slope at its rounding, a closed bracket, or a Newton step below
                # rounding
                done = ((np.abs(slope) <= ulp * data.task_sum(w * np.abs(d1)))
                        | (hi - lo <= ulp * np.maximum(np.abs(lo), np.abs(hi)))
                        | (np.abs(step) <= ulp * np.abs(b)))
                if np.all(done):
                    break
                new = b - step
                inside = np.isfinite(new) & (new > lo) & (new < hi)
                b = np.where(done, b, np.where(inside, new, 0.5 * (lo + hi)))
            self._intercept0 = b
        return self._intercept0.copy()

    def curvature(self) -> float:
        """``inf``: the curvature ``2 / sigma_t`` grows without bound as a scale shrinks."""
        return float("inf")

    def local_curvature(self) -> float:
        """``2 / min_t sigma_t`` at the intercept-only fit (over the tasks of positive
        scale; 1 where there is none)."""
        b0 = self.optimal_intercept_at_zero() if self.has_intercept_variable else None
        z = np.zeros(self.data.n_rows) if b0 is None else self.data.expand(b0)
        sigma = self.task_scales(z)
        sigma = sigma[(sigma > 0) & np.isfinite(sigma)]
        return float(2.0 / sigma.min()) if sigma.size else 1.0


register_loss(Huber)
