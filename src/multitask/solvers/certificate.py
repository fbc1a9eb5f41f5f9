"""The certified stopping rule: a duality gap for every convex model.

A model minimizes ``P(V, b) = F(X A(V) + b) + q(W) + r(V)`` over the solver's variable ``V``
and the intercepts ``b``, with ``W = A(V)`` the weights, ``F`` the loss as a function of the
stacked scores (:class:`multitask.losses.Datafit`), ``q`` the homogeneous quadratic terms (the
datafit's ridge ``(alpha_l2 / 2) ||W||_F^2`` and a penalty's ``"smooth"`` part, such as the
graph term ``alpha tr(W M W^T)``) and ``r`` the prox part of the penalty (a norm, a constraint
set, a sum of parts for the split models ``W = P + Q``). Fenchel duality gives, for every dual
point ``theta`` (one value per stacked row, summing to zero within each task when the
intercepts are variables) and every ``U``,

    P(V, b) >= P* >= D(theta, U) = -F^*(theta) - q^*(U) - r^*(-X^T theta - U).

The certificate builds the dual point from the primal one: ``theta = s theta_0`` with
``theta_0`` the score gradient of the loss (:meth:`Datafit.dual_point`, balanced per task
when the intercepts are variables), ``U = s grad q(W)`` (for a homogeneous quadratic
``q^*(s grad q(W)) = s^2 q(W)``), so that the argument of ``r^*`` is ``-s G`` with ``G`` the
gradient of the smooth part of the model; the penalty gives ``r^*(-s G) = c1 s + c2 s^2`` on
``[0, s_max]`` (:meth:`Penalty.dual_bound`), and ``s`` maximizes ``D`` over that interval
(in closed form for the squared loss, ``s = min(1, s_max)`` otherwise). At a minimizer ``s = 1``
is feasible and the gap ``P - D`` is zero (strong duality), so it vanishes as the iterates
converge. When the penalty leaves some directions entirely free (rows with weight zero in a
capped-l1 stage, the mean of the tasks in mean regularization, no penalty at all), a dual
point must make the loss gradient vanish there: the certificate first minimizes the loss
along those directions (and over the intercepts), exactly for the squared loss (one linear
solve on the subspace's Hessian) and by damped Newton steps for the other smooth losses, which
can only lower ``P``, and certifies the original point with the dual point of the corrected
one (the gradient left along the free directions, rounding, is removed). Where the ray must be
scaled into a norm's dual ball, the dual point corrected by projection within the range of the
design is also tried (:func:`_projected_dual`): on ill-conditioned problems it is far tighter.

``tol`` means: the relative gap ``(P - D) / P`` is at most ``tol`` (every loss and penalty is
non-negative, so ``P >= 0``), which bounds the relative distance to the optimal objective:
``(P - P*) / P <= tol``. Where no dual is available (a non-convex penalty; free directions whose
re-optimization fails) the certificate says so and the solvers fall back to the prox-gradient
residual of :func:`multitask.solvers.base.kkt_residual`, not certified.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from multitask.losses import Datafit, DualPoint
from multitask.penalties.base import DualBound, IdentityMap, Penalty
from multitask.solvers.thin_dual import thin_correction

__all__ = ["Certificate", "duality_gap", "has_dual", "ray_certificate"]

_TINY = np.finfo(float).tiny


@dataclass(frozen=True)
class Certificate:
    """A certified bound on the sub-optimality of a primal point.

    Attributes
    ----------
    primal : float
        ``P`` at the point.
    dual : float
        ``D`` at the dual point built from it (``P* >= D``).
    gap : float
        ``max(P - D, 0) >= P - P*``.
    relative_gap : float
        ``gap / max(P, tiny)``: the quantity ``tol`` bounds.
    scale : float
        The ``s`` of the dual point.
    corrected : bool
        Whether free directions were re-optimized before building the dual point.
    """

    primal: float
    dual: float
    gap: float
    relative_gap: float
    scale: float
    corrected: bool = False


def _smooth_terms(datafit: Datafit, penalty: Penalty, W: np.ndarray, dp: DualPoint):
    """``(G, Q)``: the gradient of the smooth part of the model at ``W`` (in the shape of
    ``W``) for the dual point ``dp``, and the homogeneous quadratic terms ``q(W)``."""
    G = np.array(dp.grad, dtype=np.float64, copy=True)
    Q = 0.0
    a2 = float(getattr(datafit, "alpha_l2", 0.0) or 0.0)
    if a2:
        G += a2 * W
        Q += 0.5 * a2 * float(np.vdot(W, W))
    if "smooth" in penalty.capabilities:
        g, gg = penalty.smooth_value_and_grad(W)
        G += gg
        Q += float(g)
    return G, Q


#: Largest scale of the dual ray: beyond it the terms of ``D(s)`` are so much larger than
#: their sum that rounding would decide it (at an optimum ``s = 1``).
MAX_SCALE = 1e3

#: In the solvers' periodic checks (``lazy``), the projected dual point is tried only once
#: the ray's scale reaches this (closer to the optimum, where it turns a gap of about
#: ``(1 - s) ||G||`` into one that meets the target; farther away it would cost passes over
#: the data without doing so).
REFINE_FROM = 0.99

#: With ADMM's W-step dual point (``dual_weights``), the periodic checks project it only while
#: the ray's relative gap is at most this many times the target (and the point's own dual
#: point not at all): the projection costs two passes over the data and a prox, and gains
#: little there. On School's trace norm (20 and 139 schools, raw and standardized, tol 1e-4
#: and 1e-6) a factor of 3 cost about as much CPU as never projecting in the checks and as
#: always projecting (the figures: docs/tuning_constants.md), with the same iterations but
#: one case (140 instead of 150). Without ``dual_weights`` (accelerated gradient, majorization) the
#: projection gains far more on ill-conditioned problems (a warm-started trace-norm fit
#: certified 1e-8 after 13 iterations with it, 28 with this limit), and has no such limit.
REFINE_WITHIN = 3.0


#: Gradients whose largest entry lies outside ``[2**-SAFE_GRADIENT, 2**SAFE_GRADIENT]`` are
#: rescaled by a power of two before the penalty's dual norms (whose squares would overflow).
SAFE_GRADIENT = 300


def _dual_bound(penalty: Penalty, G: np.ndarray) -> DualBound | None:
    """``penalty.dual_bound(G)``, computed on ``G / k`` (``k`` a power of two) when the entries
    of ``G`` are far from 1: the norms' squares would overflow or vanish. The ray's bound is
    homogeneous: ``s_max(G) = s_max(G / k) / k``, ``c1(G) = k c1(G / k)`` (a support
    function), ``c2(G) = k^2 c2(G / k)`` (a quadratic conjugate)."""
    top = float(np.max(np.abs(G))) if G.size else 0.0
    if top == 0.0 or not np.isfinite(top) or 2.0**-SAFE_GRADIENT <= top <= 2.0**SAFE_GRADIENT:
        return penalty.dual_bound(G)
    if getattr(penalty, "dual_kind", "") == "shifted":  # not homogeneous along the ray
        return penalty.dual_bound(G)
    k = 2.0 ** int(np.round(np.log2(top)))
    b = penalty.dual_bound(G / k)
    if b is None:
        return None
    with np.errstate(over="ignore"):
        return DualBound(b.s_max / k, b.c1 * k, b.c2 * k * k)


def _best_scale(dp: DualPoint, Q: float, bound: DualBound) -> float:
    """The ``s`` in ``[0, min(s_max, MAX_SCALE)]`` maximizing ``D(s) = -F^*(s theta) - s^2 Q -
    c1 s - c2 s^2`` (closed form when ``F^*`` is quadratic along the ray, else ``min(1,
    s_max)``)."""
    s_max = min(bound.s_max, MAX_SCALE)
    if dp.quadratic is not None:
        A, B = dp.quadratic
        curv = A + Q + bound.c2
        if curv > 0:
            s = -(B + bound.c1) / (2.0 * curv)
            return float(min(max(s, 0.0), s_max))
        return float(min(1.0, s_max))
    return float(min(1.0, s_max))


def _per_row(datafit: Datafit, W: np.ndarray, b, dp: DualPoint) -> DualPoint:
    """``dp`` with its conjugate from the score derivatives row by row (one pass over the
    data where they were not computed): after a correction of the dual point the squared
    loss's shortcut ``B = <G, W> - 2 A`` no longer holds (``G`` was changed by rounding), and
    near an interpolating fit it would lose every digit."""
    a = dp.score_grad
    if a is None:
        z = datafit.scores(W, b)
        a = datafit._dloss(z)[1]
    a = np.asarray(a, dtype=np.float64)
    quad = None
    if dp.quadratic is not None:
        w = datafit.data.row_weights
        quad = (0.5 * float(w @ (a * a)), float(w @ (a * datafit.data.y)))
    return DualPoint(loss=dp.loss, grad=dp.grad,
                     conjugate=lambda s: datafit.conjugate_sum(a, s), quadratic=quad,
                     score_grad=a)


def _dual_value(dp: DualPoint, Q: float, bound: DualBound, s: float) -> float:
    if s <= 0.0:
        return -float(dp.conjugate(0.0))
    return -float(dp.conjugate(s)) - s * s * (Q + bound.c2) - s * bound.c1


def duality_gap(datafit: Datafit, penalty: Penalty, V: np.ndarray, b: np.ndarray | None,
                *, correct_free: bool = True, refine: bool = True,
                target: float | None = None, lazy: bool = False,
                dual_weights: np.ndarray | None = None,
                dual_scores: np.ndarray | None = None) -> Certificate | None:
    """The certified duality gap at ``(V, b)`` (module docstring).

    Parameters
    ----------
    datafit : Datafit
        The loss on the training data (``"dual"`` capability).
    penalty : Penalty
        The penalty or constraint set on ``V`` (:meth:`Penalty.dual_bound`).
    V : ndarray
        The solver's variable (``W = penalty.linear_map.forward(V)``).
    b : ndarray of shape (n_tasks,) or None
        The intercept variable, when the datafit has one.
    correct_free : bool, default=True
        Re-optimize the free directions of the penalty first where the dual needs it
        (exactly for the squared loss, by Newton steps for the other smooth losses).
    refine : bool, default=True
        Where the dual ray must be scaled down (the gradient lies outside the dual ball of a
        norm), also try the dual point corrected by projection (:func:`_projected_dual`)
        and keep the better of the two.
    target : float, optional
        Skip that correction when the ray's relative gap is already at most ``target`` (a
        solver passes its ``tol``).
    lazy : bool, default=False
        Also skip it while the ray is scaled by less than :data:`REFINE_FROM` (far from the
        optimum, where the correction costs passes over the data without bringing the gap
        to ``target``): the solvers' periodic checks.
    dual_weights : ndarray of shape (n_features, n_tasks), optional
        Weights ``W'`` of another iterate of the solver to build the dual point from, in the
        same way, first (every dual point bounds ``P*`` from below, whichever primal point it
        comes from): the gap is ``P(V, b)`` minus the larger dual value. ADMM passes its
        W-step iterate, whose gradient differs from the multiplier in the dual ball by the
        dual residual only, where the gradient at ``V`` also carries the primal residual
        multiplied by the Hessian (on School's raw features, 20 schools, the trace norm:
        a gap of 3.3e-5 instead of 2.5e-2 after 80 iterations). The dual point at ``V`` is
        tried only when this one does not meet ``target``.
    dual_scores : ndarray of shape (N,), optional
        Score derivatives ``a`` of a dual point the solver built itself (stacked like the
        targets: ``theta_i = w_i a_i``), tried first in the same way
        (:meth:`Datafit.dual_point_from`: brought into the domain of the loss's conjugate,
        balanced per task). Linearized ADMM passes its multiplier for a loss without a
        gradient (the pinball loss), whose dual point from a subgradient at the primal point
        is loose at the kinks, where a solution puts many rows.

    Returns
    -------
    Certificate or None
        ``None`` when the model has no computable dual (a non-convex penalty, a loss without
        a conjugate, free directions whose re-optimization fails).
    """
    if "dual" not in getattr(datafit, "capabilities", ()) or not penalty.is_convex:
        return None
    if not has_dual(penalty):
        return None
    W = np.asarray(penalty.linear_map.forward(V), dtype=np.float64)
    ridge = float(getattr(datafit, "alpha_l2", 0.0) or 0.0)
    dp = datafit.dual_point(W, b)  # its loss is the primal loss (one pass for both)
    primal = (float(dp.loss) + (0.5 * ridge * float(np.vdot(W, W)) if ridge else 0.0)
              + float(penalty.value(V)))
    if not np.isfinite(primal):
        return Certificate(primal, -np.inf, np.inf, np.inf, 0.0)
    options = (correct_free, refine, target, lazy)
    if dual_scores is not None:
        given = _certify_at(datafit, penalty, W, b, primal, ridge,
                            datafit.dual_point_from(dual_scores, b, loss=float(dp.loss)),
                            *options, REFINE_WITHIN)
        if given is not None and given.relative_gap <= (target or 0.0):
            return given
        own = _certify_at(datafit, penalty, W, b, primal, ridge, dp, *options, None)
        if own is None or (given is not None and given.dual > own.dual):
            return given
        return own
    if dual_weights is None:
        return _certify_at(datafit, penalty, W, b, primal, ridge, dp, *options, None)
    Wd = np.asarray(dual_weights, dtype=np.float64)
    other = _certify_at(datafit, penalty, Wd, b, primal, ridge, datafit.dual_point(Wd, b),
                        *options, REFINE_WITHIN)
    if other is not None and other.relative_gap <= (target or 0.0):
        return other
    # the point's own dual point, without the projection in the periodic checks: on
    # well-conditioned designs of full rank it is often the better one, by a factor of 1.1
    # to 3 (School z-scored, the ADMM models of benchmarks/bench_certified.py), and in a few
    # checks the one that meets the target (benchmarks/diagnose_admm_certificate.py)
    cert = _certify_at(datafit, penalty, W, b, primal, ridge, dp, correct_free,
                       refine and not lazy, target, lazy, None)
    if cert is None or (other is not None and other.dual > cert.dual):
        return other
    return cert


def _certify_at(datafit: Datafit, penalty: Penalty, W: np.ndarray, b, primal: float,
                ridge: float, dp: DualPoint, correct_free: bool, refine: bool,
                target: float | None, lazy: bool,
                refine_within: float | None) -> Certificate | None:
    """The certificate of :func:`duality_gap` for the primal value ``primal`` with the dual
    point built at the weights ``W`` (``dp``: the datafit's dual point there); in the lazy
    checks, the projection only while the ray's gap is at most ``refine_within`` times
    ``target`` when given (:data:`REFINE_WITHIN`)."""
    if _quadratic_only(penalty):
        return _quadratic_gap(datafit, penalty, W, b, primal, ridge, correct_free, dp)
    G, Q = _smooth_terms(datafit, penalty, W, dp)
    bound = _dual_bound(penalty, G)
    if bound is None:
        return None
    corrected = False
    if bound.s_max <= 0.0 and np.any(G):
        fixed = _free_point_if(correct_free, datafit, penalty, W, ridge, b)
        if fixed is None:
            return None
        Wc, bc, rows, B = fixed
        ref_scale = max(_free_scale(G), datafit.gradient_scale())
        dp = _per_row(datafit, Wc, bc, datafit.dual_point(Wc, bc))
        G, Q = _smooth_terms(datafit, penalty, Wc, dp)
        if not _project_out(G, rows, B, ref_scale):
            return None
        bound = _dual_bound(penalty, G)
        if bound is None or (bound.s_max <= 0.0 and np.any(G)):
            return None
        corrected = True
    s = _best_scale(dp, Q, bound)
    cert = _finish(primal, dp, Q, bound, s, corrected)
    if (refine and bound.s_max < 1.0 and cert.relative_gap > (target or 0.0)
            and (not lazy or (bound.s_max >= REFINE_FROM and (
                refine_within is None or cert.relative_gap <= refine_within * (target or 0.0))))):
        better = _projected_dual(datafit, penalty, W, b, dp, G, Q, bound)
        if better is not None:
            dp2, Q2, bound2 = better
            cert2 = _finish(primal, dp2, Q2, bound2, _best_scale(dp2, Q2, bound2), corrected)
            if cert2.dual > cert.dual:
                cert = cert2
    return cert


def has_dual(penalty: Penalty) -> bool:
    """Whether the certificate applies to ``penalty`` (it implements
    :meth:`Penalty.dual_bound`, or is a quadratic with :meth:`smooth_conjugate`; a sum of
    parts when every part does)."""
    from multitask.penalties.base import Constraint

    if not penalty.is_convex:
        return False
    if _quadratic_only(penalty):
        return True
    if penalty.parts:
        return all(has_dual(p) for p in penalty.parts)
    if isinstance(penalty, Constraint):
        return type(penalty).support is not Constraint.support
    return type(penalty).dual_bound is not Penalty.dual_bound


def _finish(primal: float, dp: DualPoint, Q: float, bound: DualBound, s: float,
            corrected: bool) -> Certificate:
    dual = _dual_value(dp, Q, bound, s)
    if not np.isfinite(dual):
        dual, s = -float(dp.conjugate(0.0)), 0.0
    gap = max(primal - dual, 0.0)
    rel = gap / max(abs(primal), _TINY) if gap > 0 else 0.0
    return Certificate(primal, dual, gap, float(rel), s, corrected)


def _quadratic_only(penalty: Penalty) -> bool:
    """Whether the penalty is a homogeneous quadratic alone (a ``"smooth"`` part with a
    vanishing prox part and a :meth:`smooth_conjugate`): mean regularization, a graph or
    temporal term without its sparsity term."""
    return ("smooth" in penalty.capabilities
            and bool(getattr(penalty, "prox_part_is_zero", lambda: False)())
            and hasattr(penalty, "smooth_conjugate"))


def _quadratic_gap(datafit: Datafit, penalty: Penalty, W: np.ndarray, b, primal: float,
                   ridge: float, correct_free: bool, dp: DualPoint) -> Certificate | None:
    """The gap of ``F + q`` with a homogeneous quadratic ``q`` and no prox part: the dual
    point ``(s theta_0, U = -s X^T theta_0)``, ``D(s) = -F^*(s theta_0) - s^2 q^*(X^T
    theta_0)`` (``q^*`` is finite on the range of ``q``'s curvature only: the free
    directions, such as the mean of the tasks, are re-optimized first where it is not)."""
    conj, free_sq = penalty.smooth_conjugate(dp.grad, ridge)  # type: ignore[attr-defined]
    corrected = False
    if free_sq > 0.0:
        fixed = _free_point_if(correct_free, datafit, penalty, W, ridge, b)
        if fixed is None:
            return None
        Wc, bc, rows, B = fixed
        ref_scale = max(_free_scale(dp.grad), datafit.gradient_scale())
        dp = datafit.dual_point(Wc, bc)
        G = np.array(dp.grad, copy=True)
        if not _project_out(G, rows, B, ref_scale):
            return None
        conj, _ = penalty.smooth_conjugate(G, ridge)  # type: ignore[attr-defined]
        dp = _per_row(datafit, Wc, bc, DualPoint(dp.loss, G, dp.conjugate, dp.quadratic,
                                                  dp.score_grad))
        corrected = True
    bound = DualBound(float("inf"), 0.0, 0.0)
    s = _best_scale(dp, conj, bound)
    return _finish(primal, dp, conj, bound, s, corrected)


#: Largest gradient left along the free directions after their exact re-optimization,
#: relative to the larger of the gradient's largest entry before it and the loss gradient's
#: norm at zero, that is treated as rounding (and removed).
FREE_ROUNDING = 1e-9


def _free_scale(G: np.ndarray) -> float:
    return float(np.max(np.abs(G))) if G.size else 0.0


def _project_out(G: np.ndarray, rows: np.ndarray, B: np.ndarray | None, scale: float) -> bool:
    """Remove from ``G`` (in place) its component along the free directions ``E_rows Z B^T``
    when it is rounding (at most :data:`FREE_ROUNDING` times ``scale``); False when it is
    larger (the re-optimization did not reach the exact minimizer)."""
    if B is None:
        part = G[rows]
        if part.size and float(np.max(np.abs(part))) > FREE_ROUNDING * max(scale, _TINY):
            return False
        G[rows] = 0.0
        return True
    C = G[rows] @ B
    comp = C @ B.T
    if comp.size and float(np.max(np.abs(comp))) > FREE_ROUNDING * max(scale, _TINY):
        return False
    G[rows] -= comp
    return True


# --------------------------------------------------------------------------- projected dual
#: Largest ``n_tasks * n_features^3`` (the cost of the per-task eigendecompositions) for which
#: the certificate corrects a dual point by projection.
PROJECTION_MAX_WORK = 2e9


def _projected_dual(datafit: Datafit, penalty: Penalty, W: np.ndarray, b, dp: DualPoint,
                    G: np.ndarray, Q: float, bound: DualBound):
    """A dual point whose gradient is projected onto the dual ball instead of scaled to it.

    For a positively homogeneous prox part ``r`` (a norm, with the identity map) the dual needs
    ``G`` (the gradient of the smooth part at the dual point) in ``dr(0)``; the ray scales
    ``theta`` by ``s_max < 1`` for that, which on ill-conditioned problems loses far more than
    the violation: the gradient of a point optimal to rounding can sit a relative ``1e-4``
    outside the ball along flat directions of the loss. Here the target is the projection
    ``G' = G - prox_r(G)`` (Moreau), reached by moving the dual point within the range of the
    design: ``theta' = theta + w (X c_t - mu_t^T c_t)`` per task with ``H_t c_t = G'_t - G_t``,
    ``H_t`` the row-weighted (centred, when the intercepts are variables: the correction then
    keeps every task's sum zero) Gram matrix of the loss's quadratic bound
    (:meth:`Datafit.bound_hessian`, divided by its curvature), solved by least squares (on
    per-task designs whose tasks have fewer rows than features, through each task's rows
    instead: :mod:`multitask.solvers.thin_dual`). Where
    ``theta'`` leaves the domain of the loss's conjugate the step is shortened, and the ray
    scales what remains. A split model projects onto the dual ball of its one norm part
    (:attr:`~multitask.penalties.composite.SumOfParts.dual_ball_part`; the squared loss only,
    whose dual needs no domain step). ``(dual point, Q, bound)``, or ``None`` where it does not
    apply (the ray's ``bound`` not that of a norm or of such a split model, several norm parts,
    large problems, losses without a bound Hessian, ``projects_dual`` False).
    """
    if penalty.is_constraint or bound.c2 != 0.0:
        return None
    if penalty.parts:  # the constraint parts' support functions make c1
        ball = getattr(penalty, "dual_ball_part", None) if dp.quadratic is not None else None
    else:
        ball = penalty if bound.c1 == 0.0 else None
    if ball is None or not isinstance(ball.linear_map, IdentityMap):
        return None
    if not getattr(datafit, "projects_dual", True):  # the loss declines it (its docstring)
        return None
    d, m = W.shape
    a = dp.score_grad
    try:
        if a is None:  # the Gram route of the squared loss: the score derivatives, one pass
            z = datafit.scores(W, b)
            a = datafit._dloss(z)[1]
        step = -np.asarray(ball.prox(G, 1.0), dtype=np.float64)  # G + step = proj(G)
        if not np.any(step):
            return None
        delta = thin_correction(datafit, step)  # wide tasks: through their rows
        if delta is None:
            eig = _bound_eigen(datafit, d, m)
            if eig is None:
                return None
            lam_inv, Qe, mu = eig
            # per task (or one shared matrix): c_t = H_t^+ step_t; H_t c_t is the part of
            # step_t in the range of H_t, which the correction reaches exactly
            coef = _apply_pinv(lam_inv, Qe, step)
            delta = datafit.data.matvec(coef)
            if mu is not None:
                delta = delta - datafit.data.expand(np.einsum("jt,jt->t", mu, coef))
    except (NotImplementedError, ValueError, np.linalg.LinAlgError):
        return None
    t = _domain_step(datafit, a, delta)
    if t <= 0.0:
        return None
    a2 = a + t * delta
    w = datafit.data.row_weights
    if b is not None and datafit.has_intercept_variable:  # keep every task's sum zero
        a2 = datafit.balance_dual(a2)
    # the gradient of the corrected point, exactly (not the Gram matrices' prediction)
    grad2 = datafit.data.rmatvec(a2 * w)
    quad = None
    if dp.quadratic is not None:  # the squared loss: F^*(s theta) = A s^2 + B s
        A2 = 0.5 * float(w @ (a2 * a2))
        B2 = float(w @ (a2 * datafit.data.y))
        quad = (A2, B2)
    dp2 = DualPoint(loss=dp.loss, grad=grad2,
                    conjugate=lambda s: datafit.conjugate_sum(a2, s), quadratic=quad,
                    score_grad=a2)
    G2, Q2 = _smooth_terms(datafit, penalty, W, dp2)
    bound2 = _dual_bound(penalty, G2)
    if bound2 is None:
        return None
    return dp2, Q2, bound2


def _bound_eigen(datafit: Datafit, d: int, m: int):
    """``(1 / lambda (0 on the null space), Q, mu)`` of the row-weighted Gram matrices of the
    loss's quadratic bound (without its ridge term and curvature), cached on the datafit;
    ``None`` when too large (:data:`PROJECTION_MAX_WORK`)."""
    cached = datafit.__dict__.get("_projection_eigen")
    if cached is not None:
        return cached
    a2 = float(getattr(datafit, "alpha_l2", 0.0) or 0.0)
    if datafit.name == "squared" and "quadratic" in datafit.capabilities:
        # the squared loss is its own bound: its cached decompositions (ADMM's), shifted
        lam, Qe = datafit.quadratic_eigen()
        lam, mu = lam - a2, None
    elif "curvature_bound" not in datafit.capabilities:
        # no bound (the log-link GLMs, the Huber loss): the weighted Gram matrices directly
        n_mats = 1 if getattr(datafit.data, "shared", False) else m
        if n_mats * float(d) ** 3 > PROJECTION_MAX_WORK:
            return None
        Gw, mu = datafit.weighted_grams()
        lam, Qe = np.linalg.eigh(Gw)
    else:
        n_mats = 1 if getattr(datafit.data, "shared", False) else m
        if n_mats * float(d) ** 3 > PROJECTION_MAX_WORK:
            return None
        H, mu = datafit.bound_hessian()
        c = float(datafit.curvature())
        Hw = (H - a2 * np.eye(d)[None]) / c if c > 0 else H
        lam, Qe = np.linalg.eigh(Hw)
    top = np.max(lam, axis=1, keepdims=True) if lam.size else lam
    keep = lam > 1e-12 * np.maximum(top, _TINY)
    lam_inv = np.where(keep, 1.0 / np.where(keep, lam, 1.0), 0.0)
    out = (lam_inv, Qe, mu)
    datafit.__dict__["_projection_eigen"] = out
    return out


def _apply_pinv(lam_inv: np.ndarray, Qe: np.ndarray, R: np.ndarray) -> np.ndarray:
    """``Q_t diag(lam_inv_t) Q_t^T r_t`` for every task column ``r_t`` of ``R`` (``Qe`` of one
    matrix for all tasks when shared): ``H_t^+ r_t``, or with ``lam_inv`` the indicator of
    the range, the projection of ``r_t`` on the range of ``H_t``."""
    if Qe.shape[0] == 1:
        return Qe[0] @ (lam_inv[0][:, None] * (Qe[0].T @ R))
    proj = np.einsum("tji,jt->it", Qe, R)  # Q_t^T r_t, (d, m)
    return np.einsum("tij,jt->it", Qe, lam_inv.T * proj)


def _domain_step(datafit: Datafit, a: np.ndarray, delta: np.ndarray) -> float:
    """The largest ``t`` in ``[0, 1]`` (by halving, from 1) with ``a + t delta`` in the domain
    of the loss's conjugate on every row of positive weight."""
    for k in range(30):
        if np.isfinite(datafit.conjugate_sum(a + 0.5**k * delta)):
            return 0.5**k
    return 0.0


# --------------------------------------------------------------------------- free directions
#: Largest dimension of the free subspace (per task, or in all) whose Hessian is formed and
#: solved exactly; beyond it, conjugate gradients.
FREE_DIRECT_MAX = 256


def _free_point_if(correct_free: bool, datafit: Datafit, penalty: Penalty, W: np.ndarray,
                   ridge: float, b: np.ndarray | None):
    """:func:`_free_direction_point` when ``correct_free`` (the free directions may be
    re-optimized), else ``None``: no certificate at a point whose gap the free directions
    leave infinite."""
    return _free_direction_point(datafit, penalty, W, ridge, b) if correct_free else None


def _free_direction_point(datafit: Datafit, penalty: Penalty, W: np.ndarray, ridge: float,
                          b: np.ndarray | None = None):
    """``(W + Delta, rows, basis)`` with ``Delta`` minimizing the loss (and the quadratic
    terms) along the directions the penalty leaves free, ``W + E_rows Z B^T``
    (``penalty.free_directions(shape, ridge)``: the rows and a task basis ``B``, ``None`` for
    every task on its own), for the squared loss: an exact quadratic, so the minimization is
    a linear system. Its Hessian is formed from Hessian-vector products (gradient
    differences, exact for a quadratic) when the subspace has at most
    :data:`FREE_DIRECT_MAX` dimensions (per task when the tasks are apart) and solved by a
    symmetric eigendecomposition (least squares where singular), with two refinement
    steps; else by conjugate gradients. ``None`` where this is not available."""
    if not penalty.is_convex:
        return None
    spec = getattr(penalty, "free_directions", None)
    if spec is None:
        return None
    free = spec(W.shape, ridge)
    if free is None:
        return None
    rows, basis = free
    rows = np.asarray(rows, dtype=bool)
    if not rows.any():
        return None
    if datafit.name != "squared":
        return _newton_free_point(datafit, penalty, W, b, rows, basis)
    m = W.shape[1]
    per_task = basis is None
    B = np.eye(m) if per_task else np.asarray(basis, dtype=np.float64)
    idx = np.flatnonzero(rows)
    k = B.shape[1]

    def grad(Wc: np.ndarray) -> np.ndarray:
        dpc = datafit.dual_point(Wc, None)
        Gc, _ = _smooth_terms(datafit, penalty, Wc, dpc)
        return Gc

    def restrict(M: np.ndarray) -> np.ndarray:
        return M[rows] @ B

    def expand(Z: np.ndarray) -> np.ndarray:
        out = np.zeros_like(W)
        out[rows] = Z @ B.T
        return out

    g0 = grad(W)
    dim = len(idx) if per_task else len(idx) * k
    if dim <= FREE_DIRECT_MAX:
        solve = _free_hessian_solver(datafit, W, g0, grad, restrict, expand, idx, per_task, B,
                                     basis)
        Z = np.zeros((len(idx), k))
        g = g0
        for _ in range(3):  # the solve, then two refinements of the residual
            Z = Z + solve(-restrict(g))
            g = grad(W + expand(Z))
        return W + expand(Z), b, rows, basis
    # conjugate gradients (per task: a step size per column, the blocks being independent)
    r = -restrict(g0)
    Z = np.zeros_like(r)
    p = r.copy()
    rs = np.einsum("ij,ij->j", r, r) if per_task else np.asarray(float(np.vdot(r, r)))
    rs0 = rs
    for _ in range(4 * (r.shape[0] if per_task else r.size) + 10):
        Hp = restrict(grad(W + expand(p)) - g0)
        if per_task:
            pHp = np.einsum("ij,ij->j", p, Hp)
            step = np.where(pHp > 0, rs / np.where(pHp > 0, pHp, 1.0), 0.0)
            Z += p * step
            r = r - Hp * step
            rs_new = np.einsum("ij,ij->j", r, r)
            if np.all(rs_new <= 1e-30 * np.maximum(rs0, _TINY)):
                break
            beta = np.where(rs > 0, rs_new / np.where(rs > 0, rs, 1.0), 0.0)
            p = r + p * beta
        else:
            pHp = float(np.vdot(p, Hp))
            if not pHp > 0:
                break
            step_s = float(rs) / pHp
            Z += step_s * p
            r = r - step_s * Hp
            rs_new = np.asarray(float(np.vdot(r, r)))
            if float(rs_new) <= 1e-30 * max(float(rs0), _TINY):
                break
            p = r + (float(rs_new) / float(rs)) * p
        rs = rs_new
    return W + expand(Z), b, rows, basis


def _free_hessian_solver(datafit, W, g0, grad, restrict, expand, idx, per_task, B, basis):
    """A function ``r -> Z`` solving the loss's Hessian on the free subspace (least squares
    where singular). The Hessian of the squared loss (with its ridge term) is constant: it is
    formed once from Hessian-vector products, one per free row (per task: a direction in
    every task at once, the tasks being independent) or per (row, basis vector) pair, then
    eigendecomposed, and cached on the datafit for the subspace."""
    m = W.shape[1]
    key = (idx.tobytes(), None if basis is None else np.asarray(basis).tobytes())
    cache = datafit.__dict__.setdefault("_free_hessians", {})
    eig = cache.get(key)
    if eig is None:
        if per_task:
            H = np.empty((m, len(idx), len(idx)))
            for a, j in enumerate(idx):
                E = np.zeros_like(W)
                E[j] = 1.0
                H[:, :, a] = (grad(W + E) - g0)[idx].T  # column a of every task's block
            eig = _sym_eig(H)  # every task's block at once
        else:
            k = B.shape[1]
            dim = len(idx) * k
            H2 = np.empty((dim, dim))
            for a in range(dim):
                e = np.zeros(dim)
                e[a] = 1.0
                H2[:, a] = restrict(grad(W + expand(e.reshape(len(idx), k))) - g0).ravel()
            eig = _sym_eig(H2)
        if len(cache) > 16:
            cache.clear()
        cache[key] = eig
    if per_task:
        return lambda r: _eig_solve_tasks(eig, r)
    return lambda r: _eig_solve(eig, r.ravel()).reshape(r.shape)


def _sym_eig(H: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(1 / lambda (0 where lambda is below 1e-13 of the largest), Q)`` of a symmetric
    positive semi-definite ``H``, or of each matrix of a stack ``H`` of shape ``(m, k, k)``
    (then ``(m, k)`` and ``(m, k, k)``)."""
    lam, Q = np.linalg.eigh(0.5 * (H + np.swapaxes(H, -1, -2)))
    top = lam.max(axis=-1, keepdims=True) if lam.size else np.zeros(lam.shape[:-1] + (1,))
    keep = (lam > 1e-13 * top) & (top > 0)
    inv = np.where(keep, 1.0 / np.where(keep, lam, 1.0), 0.0)
    return inv, Q


def _eig_solve_tasks(eig: tuple[np.ndarray, np.ndarray], r: np.ndarray) -> np.ndarray:
    """``Q_t diag(inv_t) Q_t^T r_t`` for every task column ``r_t`` of ``r`` ``(k, m)``, with
    the stacked ``(inv, Q)`` of :func:`_sym_eig` (``(m, k)``, ``(m, k, k)``)."""
    inv, Q = eig
    return np.einsum("tij,tj->it", Q, inv * np.einsum("tji,jt->ti", Q, r))


def _eig_solve(eig: tuple[np.ndarray, np.ndarray], r: np.ndarray) -> np.ndarray:
    inv, Q = eig
    return Q @ (inv * (Q.T @ r))


#: Newton steps of the re-optimization of the free directions for the losses other than the
#: squared one, and the relative gradient at which it stops.
NEWTON_MAX_STEPS = 50
NEWTON_RTOL = 1e-13


def _newton_free_point(datafit: Datafit, penalty: Penalty, W: np.ndarray, b, rows, basis):
    """``(W + Delta, b + c, rows, basis)`` minimizing the smooth part of the model over the
    free directions ``E_rows Z B^T`` and the intercepts ``c`` (when they are variables), by
    damped Newton steps with exact Hessian-vector products (``ell''`` row by row): the
    classification losses are not quadratic, so the squared loss's single solve becomes a
    few steps, each on the Hessian of the subspace formed column by column (per task when the
    tasks are apart: :class:`_FreeSubspace`). Stops when the gradient along the subspace is
    a relative :data:`NEWTON_RTOL` of the loss gradient's scale, or when rounding stops the
    descent (the caller then accepts the point only if the gradient left along the subspace
    is rounding, :data:`FREE_ROUNDING`); ``None`` when the subspace has more than
    :data:`FREE_DIRECT_MAX` dimensions, or the loss no second derivative."""
    sub = _FreeSubspace(datafit, penalty, W, b, rows, basis)
    if sub.dim > FREE_DIRECT_MAX or sub.dim == 0:
        return None
    Wc = np.array(W, dtype=np.float64, copy=True)
    bc = None if b is None else np.array(b, dtype=np.float64, copy=True)
    # warm start: the displacement found at the previous certificate of this subspace (the
    # solvers certify nearby points one after the other), kept if it does not increase F
    key = (sub.idx.tobytes(), None if basis is None else sub.B.tobytes(), sub.use_b)
    memo = datafit.__dict__.setdefault("_newton_free_memo", {})
    F = sub.value(Wc, bc)
    if key in memo:
        dW0, dc0 = memo[key]
        W0 = Wc + dW0
        b0 = None if bc is None else (bc + dc0 if dc0 is not None else bc)
        F0 = sub.value(W0, b0)
        if F0 <= F:
            Wc, bc, F = W0, b0, F0
    W_start, b_start = W, b
    scale = max(datafit.gradient_scale(), _TINY)

    def done():
        memo[key] = (Wc - W_start, None if bc is None or b_start is None else bc - b_start)
        return Wc, bc, rows, basis

    for _ in range(NEWTON_MAX_STEPS):
        gW, gb = sub.grads(Wc, bc)
        gZ = sub.restrict(gW)
        norm = float(np.sqrt(np.vdot(gZ, gZ) + (np.vdot(gb, gb) if sub.use_b else 0.0)))
        if norm <= NEWTON_RTOL * scale:
            return done()
        try:
            curv = datafit.score_hessian(datafit.scores(Wc, bc))
        except NotImplementedError:  # no second derivative (the hinge, the pinball loss)
            return None
        if sub.per_task:
            dW, dc = sub.per_task_direction(curv, gW, gb)
        else:
            dW, dc = sub.joint_direction(curv, gZ, gb)
        taken = _halved_step(sub.value, Wc, bc, F, dW, dc)
        if taken is None:  # no decrease left above rounding: the caller checks the gradient
            return done()
        Wc, bc, F = taken
    return done()


def _halved_step(value: Callable, W: np.ndarray, b, F: float, dW: np.ndarray, dc):
    """``(W + t dW, b + t dc, F there)`` for the first ``t`` of ``1, 1/2, 1/4, ...`` (40 at
    most) at which ``value`` decreases from ``F`` (to rounding), else ``None``."""
    t = 1.0
    for _ in range(40):
        W_new = W + t * dW
        b_new = None if b is None else (b + t * dc if dc is not None else b)
        F_new = value(W_new, b_new)
        if F_new <= F + 1e-13 * abs(F):
            return W_new, b_new, F_new
        t *= 0.5
    return None


class _FreeSubspace:
    """The directions ``W + E_rows Z B^T`` the penalty leaves free (``B`` the identity when
    ``basis`` is None: every task on its own) and the intercepts (when they are variables),
    with the smooth part of the model (the loss, its ridge term and the penalty's smooth
    part) and its Hessian on them, for :func:`_newton_free_point`."""

    def __init__(self, datafit: Datafit, penalty: Penalty, W: np.ndarray, b, rows, basis):
        self.datafit, self.penalty, self.W, self.rows = datafit, penalty, W, rows
        self.data = datafit.data
        m = W.shape[1]
        self.per_task = basis is None
        self.B = np.eye(m) if self.per_task else np.asarray(basis, dtype=np.float64)
        self.idx = np.flatnonzero(rows)
        self.k = self.B.shape[1]
        self.use_b = b is not None and datafit.has_intercept_variable
        n = len(self.idx)
        self.dim = (n + self.use_b) if self.per_task else n * self.k + (m if self.use_b else 0)
        self.smooth = "smooth" in penalty.capabilities
        self.a2 = float(getattr(datafit, "alpha_l2", 0.0) or 0.0)

    def expand(self, Z: np.ndarray) -> np.ndarray:
        """``E_rows Z B^T``."""
        out = np.zeros_like(self.W)
        out[self.rows] = Z @ self.B.T
        return out

    def restrict(self, M: np.ndarray) -> np.ndarray:
        """``M_rows B``."""
        return M[self.rows] @ self.B

    def value(self, Wc: np.ndarray, bc) -> float:
        """The smooth part of the model at ``(Wc, bc)``."""
        f = float(self.datafit.value(Wc, bc))
        return f + self.penalty.smooth_value_and_grad(Wc)[0] if self.smooth else f

    def grads(self, Wc: np.ndarray, bc):
        """Its gradients in ``W`` and ``b``."""
        _, gW, gb = self.datafit.value_and_grad(Wc, bc)
        if self.smooth:
            gW = gW + self.penalty.smooth_value_and_grad(Wc)[1]
        return gW, gb

    def hvp(self, curv: Callable, VW: np.ndarray, vb):
        """``(H_W, H_b)`` times the direction ``(VW, vb)`` with the loss's Hessian in score
        space ``curv`` (:meth:`Datafit.score_hessian`: ``v -> w ell'' v`` for a loss
        separable over the rows)."""
        data = self.data
        z = data.matvec(VW)
        if vb is not None:
            z = z + data.expand(vb)
        r = curv(z)
        HW = data.rmatvec(r) + self.a2 * VW
        if self.smooth:  # homogeneous quadratic: linear
            HW = HW + self.penalty.smooth_value_and_grad(VW)[1]
        return HW, (data.task_sum(r) if vb is not None else None)

    def per_task_direction(self, curv: Callable, gW: np.ndarray, gb):
        """``(dW, dc)``: the Newton step of every task on its free rows and intercept, a
        ``(|rows| + 1)``-square system per task (least squares where singular)."""
        idx, use_b, m = self.idx, self.use_b, self.W.shape[1]
        cols = []
        for j in idx:
            E = np.zeros_like(self.W)
            E[j] = 1.0
            HW, Hb = self.hvp(curv, E, np.zeros(m) if use_b else None)
            cols.append((HW[idx], Hb))
        if use_b:
            HW, Hb = self.hvp(curv, np.zeros_like(self.W), np.ones(m))
            cols.append((HW[idx], Hb))
        n_v = len(cols)
        H = np.empty((m, n_v, n_v))
        for a, (HWa, Hba) in enumerate(cols):
            H[:, : len(idx), a] = HWa.T
            if use_b:
                H[:, len(idx), a] = Hba
        rhs = np.concatenate([gW[idx], gb[None, :]], axis=0) if use_b else gW[idx]
        step = -np.stack([_lstsq_sym(H[t], rhs[:, t]) for t in range(m)], axis=1)
        dW = np.zeros_like(self.W)
        dW[idx] = step[: len(idx)]
        return dW, (step[len(idx)] if use_b else None)

    def joint_direction(self, curv: Callable, gZ: np.ndarray, gb):
        """``(dW, dc)``: the Newton step on the ``(rows x basis)`` subspace and the
        intercepts, one system (least squares where singular)."""
        idx, k, dim, use_b = self.idx, self.k, self.dim, self.use_b
        n_z = len(idx) * k
        H = np.empty((dim, dim))
        for a in range(dim):
            e = np.zeros(dim)
            e[a] = 1.0
            VW = self.expand(e[:n_z].reshape(len(idx), k))
            HW, Hb = self.hvp(curv, VW, e[n_z:] if use_b else None)
            H[:n_z, a] = self.restrict(HW).ravel()
            if use_b:
                H[n_z:, a] = Hb
        rhs = np.concatenate([gZ.ravel(), gb]) if use_b else gZ.ravel()
        step = -_lstsq_sym(H, rhs)
        return self.expand(step[:n_z].reshape(len(idx), k)), (step[n_z:] if use_b else None)


def _lstsq_sym(H: np.ndarray, r: np.ndarray) -> np.ndarray:
    """A least-squares solution of ``H z = r`` for a symmetric positive semi-definite ``H``."""
    return _eig_solve(_sym_eig(H), r)


# --------------------------------------------------------------------------- for other solvers
def ray_certificate(primal: float, dp: DualPoint, Q: float, bound: DualBound) -> Certificate:
    """The certificate of the ray (module docstring) from pieces a solver built itself: the
    objective ``primal`` at the point, the loss's dual point ``dp``, the homogeneous
    quadratic terms ``Q = q(W)`` and the penalty's :class:`DualBound` at the gradient ``G``
    of the smooth part; ``s`` maximizes ``D`` over ``[0, s_max]``. Used by the working sets,
    which build ``dp`` from the scores of the working set (no refinement by projection)."""
    return _finish(primal, dp, Q, bound, _best_scale(dp, Q, bound), False)
