"""Proximal Newton for smooth losses with row-separable penalties.

The model: a loss with a second derivative (``"hessian"``: logistic, squared hinge, the
log-link deviances; the Huber loss with the rank-one term per task that its fitted scale adds,
:meth:`~multitask.losses.Datafit.task_hessian_correction`), row weights ``w_i``
(:attr:`~multitask.data.MultiTaskData.row_weights`), per-task intercepts
``b`` as variables, the ridge ``(alpha_l2 / 2) ||W||_F^2`` and a penalty of the row families
of :mod:`multitask.solvers.bcd` (``"row_prox"``: l1, l2,1, the sparse group lasso, the
weighted l1 stages, the dirty and fused rows; with a ``"task_coupling"`` where it has one)::

    min_{W, b}  F(W, b) + h(W),      F = sum_i w_i ell(y_i, x_i^T w_t + b_t) + ridge.

Each step (glmnet's and skglm's proximal Newton; Lee, Sun & Saunders, "Proximal Newton-type
methods for minimizing composite functions") replaces ``F`` by its second-order model at the
current point, with ``D_i = w_i ell''(y_i, z_i)`` and, per task, ``S_t = sum_{i in t} D_i``,
``s_t = sum_{i in t} D_i x_i`` and ``G_t = sum_{i in t} D_i x_i x_i^T`` (the design as the loss
sees it, centred where it is). The model's minimum over the intercept step is in closed form,
``db_t = -(g_b,t + s_t^T dw_t) / S_t``, which leaves in ``w_t`` the Hessian and gradient

    H_t = G_t - s_t s_t^T / S_t + alpha_l2 I,        g~_t = g_w,t - (s_t / S_t) g_b,t,

(without intercepts ``H_t = G_t + alpha_l2 I`` and ``g~ = g_w``). The step's problem ``min_W
sum_t 0.5 (w_t - w_t^k)^T H_t (w_t - w_t^k) + g~_t^T (w_t - w_t^k) + h(W)`` is solved by the
block coordinate descent of :mod:`multitask.solvers.bcd` (Anderson-accelerated, on the
``d x d`` matrices ``H_t``) from the current ``W``, to a relative coordinate change that
follows the duality gap. The direction ``(dW, db)`` is then damped by backtracking (Armijo:
``P(x + t d) <= P(x) + sigma t delta`` with ``delta = <grad F, d> + h(W + dW) - h(W) < 0``,
``sigma = 10^-4``, ``t`` halved), the scores moving along ``X dW + db`` without another product.
Where the curvature is small (a task whose rows all lie beyond the squared hinge's margin),
``S_t`` and ``H_t`` get a relative floor of ``1e-10``.

It converges in a few steps (locally superlinearly) where accelerated gradient crawls: small
weights ``ell''`` (separable classes, a few positives per task) make the loss's curvature
far below its bound, which sets a gradient method's step. Each step costs one pass over the
design for the ``G_t`` (``N d^2``) and epochs on ``m d^2`` numbers: for a few features and
many tasks or rows (:func:`prefer_newton`).

Stopping: the certified relative duality gap of :mod:`multitask.solvers.certificate`, after
every step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from multitask.data import MultiTaskData
from multitask.losses import Datafit
from multitask.penalties.base import Penalty
from multitask.solvers.base import Solver, apply_per_task, check_int
from multitask.solvers.bcd import BlockCoordinateDescent, quadratic_row_descent
from multitask.solvers.iteration import IterationRecord
from multitask.solvers.problem import Problem
from multitask.solvers.result import SolverResult

__all__ = ["NEWTON_AUTO_MAX_ITER", "NEWTON_MAX_FEATURES", "DampedStep", "NewtonModel",
           "ProxNewton", "backtrack", "damped_step", "newton_applies", "newton_model",
           "newton_objective", "prefer_newton", "task_hessians"]

_TINY = np.finfo(float).tiny
#: ``solver="auto"`` takes proximal Newton for a classification loss up to this many
#: features (:func:`prefer_newton`): with ``benchmarks/bench_classifier_cv.py --rule``
#: (``L21Classifier``, default ``tol``, ``alpha`` 0.1 and 0.01 ``alpha_max``) it beat
#: accelerated gradient and majorization up to 32 features (29 tasks of 9 features, School's
#: 27 raw or standardized, 100 generated tasks of 16 and 32 i.i.d. features) and not at 64
#: and 128 i.i.d. features (80 rows per task: a step's ``N d^2`` pass against ``N d`` per
#: gradient iteration), where the solvers chosen before stay (the figures:
#: docs/tuning_constants.md).
NEWTON_MAX_FEATURES = 32
#: Most entries of the step's Hessians (``m d^2``).
NEWTON_MAX_ENTRIES = 2e7
#: Proximal Newton alone (not Newton-ADMM) also takes designs of up to this many features
#: while the step's Hessians hold at most :data:`NEWTON_WIDE_ENTRIES` entries (``m d^2``):
#: with ``benchmarks/bench_auto_choice.py --only L21 IndependentLasso --loss logistic`` it
#: was the fastest solver or close to it at 40 and 64 features on 10 and 100 tasks (40 and
#: 80 rows per task, ``alpha_max`` / 2 to / 100), not on 1,000 tasks of 64 features; on the
#: pinned cases of 40 and 60 features also with the Poisson, Gamma and Tweedie losses, not
#: with the Huber loss (the figures: docs/tuning_constants.md).
NEWTON_WIDE_FEATURES = 64
NEWTON_WIDE_ENTRIES = 1e6
#: Armijo's constant and the smallest step of the backtracking.
SIGMA = 1e-4
MIN_STEP = 2.0**-30
#: A step's coordinate descent stops when an epoch changes no coefficient by more than
#: ``kappa`` times the largest change of its first epoch (the size of the step), with
#: ``kappa`` from ``INNER_START`` down to ``INNER_FRACTION`` times the duality gap.
#: (at least ``INNER_MIN``: a step solved to that relative accuracy leaves a relative error
#: of that order to the next step).
INNER_START = 1e-3
INNER_FRACTION = 1e-2
INNER_MIN = 1e-6
#: Relative rounding of the objective: a step whose predicted decrease ``delta`` is below
#: it is taken whole where it does not raise the objective beyond it (near the solution the
#: certificate, first-order in the distance to it, still needs such steps).
ROUNDING = 1e-13
#: Relative floor of the curvature (of ``S_t`` and of the ``H_t``'s diagonals).
FLOOR = 1e-10


#: ``solver="auto"``: the proximal Newton steps before a fit that has not converged hands over
#: to accelerated gradient (``ProxNewton(hand_over=...)``; a well-posed problem converges in
#: tens of them).
NEWTON_AUTO_MAX_ITER = 50
#: Largest feature magnitudes for which ``solver="auto"`` takes Newton: the Hessians hold sums
#: of squared features, which overflow (or underflow) beyond these.
NEWTON_SCALE = (1e-60, 1e60)


def newton_applies(datafit: Datafit, *, wide: bool = False) -> bool:
    """The data side of :func:`prefer_newton` (shared with
    :func:`~multitask.solvers.newton_admm.prefer_newton_admm`): a loss with ``"hessian"`` that
    is not quadratic, at most :data:`NEWTON_MAX_FEATURES` features and
    :data:`NEWTON_MAX_ENTRIES` Hessian entries (with ``wide``, proximal Newton's own rule,
    also up to :data:`NEWTON_WIDE_FEATURES` features and :data:`NEWTON_WIDE_ENTRIES`
    entries), and features whose largest magnitude lies in :data:`NEWTON_SCALE` (the accepted
    range reaches 1e100, whose squares overflow)."""
    if "hessian" not in datafit.capabilities or "quadratic" in datafit.capabilities:
        return False
    data = datafit.data
    d, m = data.n_features, data.n_tasks
    entries = m * float(d) ** 2
    narrow = d <= NEWTON_MAX_FEATURES and entries <= NEWTON_MAX_ENTRIES
    # not the Huber loss, whose steps stalled at 40 features (the rank-one term of its
    # fitted scale in the Hessian)
    wide = (wide and datafit.name != "huber" and d <= NEWTON_WIDE_FEATURES
            and entries <= NEWTON_WIDE_ENTRIES)
    if not (narrow or wide):
        return False
    X = data.X
    top = float(abs(X).max()) if X.shape[0] and X.shape[1] else 0.0
    # the Hessians' entries (squares of the features) must stay in the float range
    return NEWTON_SCALE[0] <= top <= NEWTON_SCALE[1]


def prefer_newton(datafit: Datafit, penalty: Penalty) -> bool:
    """Whether ``solver="auto"`` takes :class:`ProxNewton`: :func:`newton_applies` (its
    ``wide`` rule) and a penalty it solves."""
    return newton_applies(datafit, wide=True) and ProxNewton().supports(datafit, penalty)


def task_hessians(data: MultiTaskData, D: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                               np.ndarray]:
    """``(G, s, S)``: ``G_t = sum_{i in t} D_i x~_i x~_i^T`` (shape ``(m, d, d)``), ``s_t =
    sum_{i in t} D_i x~_i`` (shape ``(d, m)``) and ``S_t = sum_{i in t} D_i`` (shape
    ``(m,)``), with ``x~_i = x_i - x_offset[:, t]`` the row as the data present it (implicitly
    centred where they are) and ``D`` stacked like ``data.y``. A sparse design is read in its
    own storage (its ``d x d`` products only are dense)."""
    X = data.X
    m, d = data.n_tasks, data.n_features
    off = data.offsets
    G = np.empty((m, d, d))
    s = np.empty((d, m))
    S = np.empty(m)
    for t in range(m):
        Dt = D[off[t]:off[t + 1]]
        Xt = X if data.shared else X[off[t]:off[t + 1]]
        if sp.issparse(Xt):
            Xs = sp.csr_matrix(Xt)  # already CSR: no copy
            Gt = Xs.T @ sp.csr_matrix(Xs.multiply(Dt[:, None]))
            Gt = Gt.toarray() if sp.issparse(Gt) else np.asarray(Gt)
            st = np.asarray(Xs.T @ Dt).ravel()
        else:
            Gt = Xt.T @ (Xt * Dt[:, None])
            st = Xt.T @ Dt
        St = float(Dt.sum())
        if data.x_offset is not None:
            mu = data.x_offset[:, t]
            Gt = Gt - np.outer(mu, st) - np.outer(st, mu) + St * np.outer(mu, mu)
            st = st - St * mu
        G[t], s[:, t], S[t] = Gt, st, St
    return G, s, S



@dataclass(frozen=True)
class NewtonModel:
    """A step's second-order model (module docstring), built by :func:`newton_model`.

    Attributes
    ----------
    grad : ndarray of shape (d, m)
        ``g_w``: the loss gradient in ``W`` (with the ridge term).
    hessian : ndarray of shape (m, d, d)
        ``H_t``, the intercept step eliminated, the diagonals floored.
    linear : ndarray of shape (d, m)
        ``C_t = H_t w_t^k - g~_t``: the model is ``0.5 w^T H w - C^T w`` per task.
    s, S : ndarray or None
        ``s_t`` and the floored ``S_t`` (intercepts only).
    grad_b : ndarray or None
        ``g_b`` (intercepts only).
    """

    grad: np.ndarray
    hessian: np.ndarray
    linear: np.ndarray
    s: np.ndarray | None
    S: np.ndarray | None
    grad_b: np.ndarray | None

    def intercept_step(self, dW: np.ndarray) -> np.ndarray | None:
        """``db_t = -(g_b,t + s_t^T dw_t) / S_t``, the model's minimum over the intercepts."""
        if self.S is None or self.s is None or self.grad_b is None:
            return None
        return -(self.grad_b + np.einsum("jt,jt->t", self.s, dW)) / self.S

    def decrease(self, dW: np.ndarray, db: np.ndarray | None) -> float:
        """``<g_w, dW> + <g_b, db>``: the first-order change of the loss along the step."""
        out = float(np.vdot(self.grad, dW))
        return out + (float(self.grad_b @ db) if db is not None else 0.0)


def newton_model(datafit: Datafit, W: np.ndarray, b: np.ndarray | None, a: np.ndarray,
                 h: np.ndarray, correction: tuple[np.ndarray, np.ndarray] | None = None
                 ) -> NewtonModel | None:
    """The second-order model at ``(W, b)`` from the score derivatives ``a = ell'`` and ``h =
    ell''`` (module docstring); ``None`` when it leaves the float range. ``correction``: the
    loss's :meth:`~multitask.losses.Datafit.task_hessian_correction` ``(c, k)`` at the same
    scores, a task's Hessian ``diag(w h) - k_t c_t c_t^T`` in score space (the Huber loss's
    scale): ``G_t``, ``s_t`` and ``S_t`` lose ``k_t u_t u_t^T``, ``k_t u_t U_t`` and ``k_t
    U_t^2`` with ``u_t = sum_{i in t} c_i x~_i``, ``U_t = sum_{i in t} c_i``."""
    data = datafit.data
    rw = data.row_weights
    ridge = float(datafit.alpha_l2)
    d = W.shape[0]
    r = a * rw
    gW = data.rmatvec(r)
    if ridge:
        gW += ridge * W
    G, s, S = task_hessians(data, h * rw)
    if correction is not None:
        c, k = correction
        u = data.rmatvec(c)
        U = data.task_sum(c)
        G -= np.einsum("t,jt,kt->tjk", k, u, u)
        s -= u * (k * U)[None, :]
        S -= k * U * U
    S_safe = gb = None
    if b is not None:
        S_safe = np.maximum(S, FLOOR * max(float(S.max()), _TINY))
        mu = s / S_safe[None, :]
        G -= np.einsum("jt,kt->tjk", s, mu)
        gb = data.task_sum(r)
        g = gW - mu * gb[None, :]
    else:
        g = gW
    if ridge:
        G += ridge * np.eye(d)[None]
    diag = np.diagonal(G, axis1=1, axis2=2)
    floor = FLOOR * max(float(diag.max()) if diag.size else 0.0, _TINY)
    G[:, np.arange(d), np.arange(d)] = np.maximum(diag, floor)
    C = np.ascontiguousarray(apply_per_task(G, W) - g)
    if not (np.isfinite(G).all() and np.isfinite(C).all()):
        return None
    return NewtonModel(gW, G, C, s if b is not None else None, S_safe, gb)


def backtrack(datafit: Datafit, objective: Callable[[np.ndarray, float], float],
              scores_at: Callable[[float], np.ndarray], P: float, delta: float, noise: float,
              polish: bool):
    """Armijo backtracking along the scores ``scores_at(t)`` (``t`` halved from 1): the first
    ``t`` with ``P(t) <= P + SIGMA t delta`` (or, for a step below the rounding ``noise``,
    ``P(t) <= P + noise``), down to :data:`MIN_STEP`. ``objective(vals, t)`` is the
    objective from the rows' losses at ``t``. Returns ``(t, z_t, (vals, ell', ell''), P_t)``."""
    step = 1.0
    while True:
        zt = scores_at(step)
        derivs = datafit.score_derivatives(zt, second=True)
        Pt = objective(derivs[0], step)
        if (Pt <= P + SIGMA * step * delta or step <= MIN_STEP
                or (polish and Pt <= P + noise)):
            return step, zt, derivs, Pt
        step *= 0.5


def newton_objective(datafit: Datafit, penalty: Penalty
                     ) -> Callable[[np.ndarray, np.ndarray, np.ndarray], float]:
    """``P(vals, V, W) = sum_i w_i vals_i + (alpha_l2 / 2) ||W||_F^2 + h(V)``: the objective
    from the rows' losses ``vals`` (row weights ``w_i``), the weights ``W = A(V)`` and the
    solver's variable ``V``."""
    rw = datafit.data.row_weights
    ridge = float(datafit.alpha_l2)

    def objective(vals: np.ndarray, V: np.ndarray, W: np.ndarray) -> float:
        f = float(vals @ rw)
        if ridge:
            f += 0.5 * ridge * float(np.vdot(W, W))
        return f + float(penalty.value(V))

    return objective


class DampedStep(NamedTuple):
    """A Newton direction taken: the step ``t``, the scores ``z + t dz``, ``(vals, ell',
    ell'')`` there, the objective ``P_t``, the intercept direction ``db`` and whether the
    step's predicted decrease was below the objective's rounding (``polish``)."""

    t: float
    z: np.ndarray
    derivs: tuple
    P: float
    db: np.ndarray | None
    polish: bool

    def intercept(self, b: np.ndarray | None) -> np.ndarray | None:
        """The intercepts ``b + t db`` after the step (``b`` without intercept step)."""
        return b if b is None or self.db is None else b + self.t * self.db


def damped_step(datafit: Datafit, model: NewtonModel, W: np.ndarray, b: np.ndarray | None,
                dW: np.ndarray, moved: bool, penalty_change: float, P: float,
                along: Callable[[np.ndarray, float], float],
                inner_tol: float) -> DampedStep | float | None:
    """The direction ``(dW, db)`` of a step's model (``db`` its intercept step) from ``(W,
    b)``, damped by :func:`backtrack`, with the objective ``P`` at ``(W, b)`` and ``along(vals,
    t)`` the objective at ``t``; ``moved`` whether the step's variable changed,
    ``penalty_change`` the penalty's change along the whole direction. The scores at ``t`` are
    those of the point the solver then takes, ``(W + t dW, b + t db)``, computed as the
    certificate computes them (a loss that keeps its last scores' rows, the Huber loss with
    its sorted residuals, is not evaluated twice there).

    Returns the :class:`DampedStep`; or, where the direction does not descend (its model
    was solved too loosely), the tighter inner tolerance to solve it again with (a
    hundredth, at least ``1e-14``); or None: stop (no direction, or none that descends at
    the tightest tolerance or below the rounding).
    """
    db = model.intercept_step(dW)
    delta = model.decrease(dW, db)
    delta += penalty_change
    noise = ROUNDING * abs(P)
    if not moved and (db is None or not np.any(db)):
        return None
    if not delta <= noise:  # no descent: the step's model was solved too loosely
        return None if inner_tol <= 1e-14 else max(inner_tol * 1e-2, 1e-14)
    polish = delta >= -noise  # a decrease below the objective's rounding

    def scores_at(t: float) -> np.ndarray:
        return datafit.scores(W + t * dW, None if b is None or db is None else b + t * db)

    step, zt, derivs, Pt = backtrack(datafit, along, scores_at, P, delta, noise, polish)
    if not Pt <= P + (noise if polish else 0.0):  # no decrease at the smallest step
        return None if inner_tol <= 1e-14 or polish else max(inner_tol * 1e-2, 1e-14)
    return DampedStep(step, zt, derivs, Pt, db, polish)


class ProxNewton(Solver):
    """Proximal Newton with coordinate descent on each step's model (module docstring).

    Parameters
    ----------
    max_iter : int, default=100
        Most Newton steps (``ConvergenceWarning`` when reached).
    tol : float, default=1e-4
        Tolerance on the certified relative duality gap.
    max_epochs : int, default=1000
        Most epochs of coordinate descent per step (an inexact step is damped by the line
        search like any other; on the dirty model's and l2,1's weakest regularization of
        ``benchmarks/bench_classifier_cv.py``'s problem faster than 10,000, with more steps:
        docs/tuning_constants.md).
    warn : bool, default=True
    hand_over : int or None, default=None
        After this many Newton steps without convergence, go on with accelerated gradient
        (:class:`~multitask.solvers.fista.ProximalGradient`, warm-started) for the rest of
        ``max_iter``: Newton converges in tens of steps where the problem is well posed, but
        on nearly separable classes (a tiny strength, or a direction the penalty leaves free)
        it can take thousands of costly ones. The result's ``info`` then keeps
        ``"solver": "newton"`` and adds ``"newton_iter"`` and ``"handed_over_to"``.
    """

    name = "newton"
    max_preference = 80.0
    datafit_requires = frozenset({"gradient", "hessian"})
    penalty_requires = frozenset({"row_prox"})
    handles_smooth_part = True

    @classmethod
    def preference(cls, problem: Problem, **settings) -> float | None:
        """80 where :func:`newton_applies` with its ``wide`` rule (a smooth loss that is not
        quadratic, few features, a feature scale the Hessians hold)."""
        wanted = problem.fact("newton_wide", lambda: newton_applies(problem.datafit, wide=True))
        return 80.0 if wanted else None

    @classmethod
    def auto_settings(cls, problem: Problem, **settings) -> dict:
        """``hand_over``: :data:`NEWTON_AUTO_MAX_ITER` steps before a fit that has not
        converged hands over to accelerated gradient."""
        return {"hand_over": NEWTON_AUTO_MAX_ITER}

    def __init__(self, *, max_iter: int = 100, tol: float = 1e-4, max_epochs: int = 1000,
                 warn: bool = True, hand_over: int | None = None):
        super().__init__(max_iter=max_iter, tol=tol, warn=warn)
        self.max_epochs = check_int(max_epochs, "max_epochs")
        self.hand_over = None if hand_over is None else check_int(hand_over, "hand_over")

    def missing(self, datafit: Datafit, penalty: Penalty) -> list[str]:
        out = super().missing(datafit, penalty)
        # the penalty side is block coordinate descent's (its epochs solve each step)
        bcd = BlockCoordinateDescent()
        out += [m for m in bcd.missing(datafit, penalty) if "penalty" in m
                and m not in out]
        return out

    def _step(self, G: np.ndarray, C: np.ndarray, W: np.ndarray, penalty: Penalty,
              kappa: float) -> int:
        """Solve a step's model in place on ``W``: one epoch gives the size of the step
        ``delta`` (its largest change), then epochs until no change exceeds ``kappa delta``
        (the kernel's criterion is relative to the largest coefficient, which a step far
        smaller than the weights would meet at once). Returns the epochs run."""
        W0 = W.copy()
        done, converged = quadratic_row_descent(G, C, W, penalty, max_epochs=1, tol=0.0)
        size = float(np.max(np.abs(W - W0))) if W.size else 0.0
        top = float(np.max(np.abs(W))) if W.size else 0.0
        if size == 0.0 or top == 0.0 or self.max_epochs <= 1:
            return int(done)
        more, _ = quadratic_row_descent(G, C, W, penalty, max_epochs=self.max_epochs - 1,
                                        tol=kappa * size / top)
        return int(done) + int(more)

    def solve(self, datafit: Datafit, penalty: Penalty, *, coef_init=None, intercept_init=None,
              callback: Callable | None = None) -> SolverResult:
        """Run the Newton steps from ``(coef_init, intercept_init)`` (zeros, and the best
        intercepts at zero, by default)."""
        run = IterationRecord(self, datafit, penalty, callback)
        W, b = run.start(coef_init, intercept_init, intercept_at_zero=True)
        W = np.ascontiguousarray(W, dtype=np.float64)
        objective = newton_objective(datafit, penalty)
        z = datafit.scores(W, b)
        vals, a, h = datafit.score_derivatives(z, second=True)
        P = objective(vals, W, W)
        if datafit.starts_from_least_squares and not np.any(W):
            W, b, z, (vals, a, h), P = self._least_squares_start(datafit, penalty, objective,
                                                                 W, b, z, (vals, a, h), P)
        run.record(P)
        # a certificate after every step; the projected dual point only near the optimum (the
        # lazy rule: Newton's gap is far from the target until its last steps), and once
        # more without the rule before a run that has not converged stops
        gap = run.certify(0, W, b, target=self.tol, lazy=True)
        converged = gap <= self.tol
        n_iter = n_epochs = 0
        inner_tol = INNER_START
        limit = self.max_iter if self.hand_over is None else min(self.max_iter,
                                                                  self.hand_over)
        while not converged and n_iter < limit:
            model = newton_model(datafit, W, b, a, h, datafit.task_hessian_correction(z))
            if model is None:
                break  # the step's model left the float range: stop, not converged
            W_new = W.copy()
            try:
                n_epochs += self._step(model.hessian, model.linear, W_new, penalty, inner_tol)
            except FloatingPointError:  # the step's model left the float range
                break
            dW = W_new - W

            def along(v: np.ndarray, t: float, W: np.ndarray = W, dW: np.ndarray = dW) -> float:
                Wt = W + t * dW
                return objective(v, Wt, Wt)

            out = damped_step(datafit, model, W, b, dW, bool(np.any(dW)),
                              float(penalty.value(W_new)) - float(penalty.value(W)), P,
                              along, inner_tol)
            if not isinstance(out, DampedStep):
                if out is None:
                    break
                inner_tol = out
                continue
            W = np.ascontiguousarray(W + out.t * dW)
            b = out.intercept(b)
            z, (vals, a, h), P = out.z, out.derivs, out.P
            n_iter += 1
            run.record(P)
            last = gap
            gap = run.certify(n_iter, W, b, target=self.tol, lazy=True)
            if gap <= self.tol:
                converged = True
                break
            if out.polish and not gap < last:  # the certificate no longer follows the steps
                break
            if run.notify(n_iter, P, W, b):
                break
            inner_tol = float(np.clip(INNER_FRACTION * gap, INNER_MIN, inner_tol))
        if not converged:
            gap = run.certify(n_iter, W, b, target=self.tol, lazy=False)
            converged = gap <= self.tol
        if not converged and self.hand_over is not None and n_iter < self.max_iter:
            return self._hand_over(datafit, penalty, W, b, n_iter)
        cert = run.certificate
        return run.finish(W, b, n_iter=n_iter, converged=converged, certificate=cert,
                          measure=None if cert is not None else gap,
                          info={"epochs": n_epochs, "best_objective": P})

    def _least_squares_start(self, datafit: Datafit, penalty: Penalty, objective, W, b, z,
                             derivs, P):
        """The start ``(W, b, z, derivs, P)``: the given one, or the minimizer of the squared
        loss ``sum_i w_i (z_i - y_i)^2 / 2`` with the same penalty and ridge (one solve of its
        model, exact for that loss) where the loss's objective is lower there
        (:attr:`~multitask.losses.Datafit.starts_from_least_squares`)."""
        r = z - datafit.data.y
        model = newton_model(datafit, W, b, r, np.ones_like(r))
        if model is None:
            return W, b, z, derivs, P
        W_ls = W.copy()
        try:
            self._step(model.hessian, model.linear, W_ls, penalty, INNER_START)
        except FloatingPointError:
            return W, b, z, derivs, P
        db = model.intercept_step(W_ls - W)
        b_ls = None if b is None or db is None else b + db
        z_ls = datafit.scores(W_ls, b_ls)
        derivs_ls = datafit.score_derivatives(z_ls, second=True)
        P_ls = objective(derivs_ls[0], W_ls, W_ls)
        if P_ls < P:
            return W_ls, b_ls, z_ls, derivs_ls, P_ls
        return W, b, z, derivs, P

    def _hand_over(self, datafit: Datafit, penalty: Penalty, W: np.ndarray, b,
                   n_iter: int) -> SolverResult:
        """Accelerated gradient from ``(W, b)`` for the ``max_iter - n_iter`` steps left."""
        from multitask.solvers.fista import ProximalGradient

        gradient = ProximalGradient(max_iter=self.max_iter - n_iter, tol=self.tol,
                                    warn=self.warn)
        out = gradient.solve(datafit, penalty, coef_init=W, intercept_init=b)
        out.n_iter += n_iter
        out.info = {**out.info, "solver": self.name, "newton_iter": n_iter,
                    "handed_over_to": out.info.get("solver", gradient.name)}
        return out
