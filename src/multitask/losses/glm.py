"""The log-link generalized linear models: Poisson, Gamma and Tweedie deviances.

For a target ``y >= 0`` and a score ``z`` (the predicted mean is ``mu = exp(z)``, the log
link), the loss of a row is half the unit deviance of the Tweedie family of power ``p``, as in
scikit-learn's ``PoissonRegressor``, ``GammaRegressor`` and ``TweedieRegressor`` (their
``HalfPoissonLoss``, ``HalfGammaLoss`` and ``HalfTweedieLoss`` plus the constant that makes the
loss zero at ``mu = y``)::

    p = 1 (Poisson):  ell(y, z) = y log(y / mu) - y + mu
    p = 2 (Gamma):    ell(y, z) = log(mu / y) + y / mu - 1                      (y > 0)
    1 < p < 2:        ell(y, z) = y^(2-p) / ((1-p)(2-p)) - y mu^(1-p) / (1-p) + mu^(2-p) / (2-p)

with ``ell'(z) = mu^(1-p) (mu - y)`` and ``ell''(z) = mu^(1-p) ((2-p) mu - (1-p) y) > 0``. Under
the scaling of :mod:`multitask.losses` the loss of task ``t`` is ``sum_i w_i ell(y_i, z_i)``
with the row weights ``w_i`` summing to one (``1 / n_t``): scikit-learn's objective ``1 / (2 n)
sum_i d(y_i, mu_i) + (alpha / 2) ||w||^2`` of one task is this loss with ``alpha_l2 = alpha``
(the same ``alpha``).

Every loss is non-negative and zero at ``mu = y``; it is computed from ``r = z - log y`` as
``y (e^r - 1 - r)`` (Poisson), ``e^{-r} - 1 + r`` (Gamma) and ``y^(2-p) (expm1((2-p) r) / (2-p) -
expm1((1-p) r) / (1-p))`` (Tweedie), without the cancellation of the textbook forms at large
counts; ``exp`` beyond the float range gives ``inf`` (no warning), which the solvers' line
searches reject.

**No curvature bound.** ``ell'' = mu^(2-p)`` at ``mu = y`` grows without bound with the scores:
these datafits do not declare ``"curvature_bound"``. :meth:`Tweedie.lipschitz` is an estimate
from the curvature at the intercept-only fit (``max_t ybar_t^(2-p)``, the weighted task means
``ybar_t``), from which accelerated gradient backtracks; majorization does not apply, and the
working sets run without gap-safe screening (the conjugate is not strongly convex).

**Conjugates** (the certificate's dual point ``a_i = ell'(y_i, z_i)``), row by row:

* Poisson: ``ell^*(a) = a log y + y ((1 + t) log(1 + t) - t)`` with ``t = a / y >= -1``; for
  ``y = 0``, ``a log a - a`` (``a >= 0``);
* Gamma: ``ell^*(a) = a log y + (1 - a) log(1 - a) + a`` for ``a <= 1``;
* Tweedie: ``ell^*(a) = a z^* - ell(z^*)`` at the root ``z^*`` of ``ell'(z) = a``, i.e.
  ``u^(1-p) (u - y) = a`` with ``u = e^{z^*}``, found by a Newton iteration safeguarded by
  bisection (every ``a`` is in the domain when ``y > 0``); for ``y = 0``, ``a (log a - 1) /
  (2 - p)`` (``a >= 0``).

The domains contain 0 and are intervals, so the per-task balancing of the dual point (scaling
one sign down) keeps it feasible.

**A task whose targets are all 0** (Poisson, Tweedie) has no finite optimal intercept: its loss
``sum_i w_i mu_i`` tends to 0 as ``b_t -> -inf``. :meth:`Tweedie.optimal_intercept_at_zero`
gives it ``log(ZERO_TASK_MEAN * ybar)`` instead, ``ybar`` the mean target of all tasks (the
task's loss there is ``ZERO_TASK_MEAN`` times that mean); the solvers start from it and stop
once the certified gap allows (what is left of that task's loss counts in the gap), and the
model predicts about ``ZERO_TASK_MEAN * ybar`` for such a task. Data whose targets are all 0
are refused.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from scipy.special import xlog1py, xlogy

from multitask.data import MultiTaskData
from multitask.losses.base import Datafit
from multitask.losses.registry import register_loss

__all__ = ["ZERO_TASK_MEAN", "Gamma", "Poisson", "Tweedie", "check_power", "tweedie_conjugate"]

#: The mean a task whose targets are all 0 is given, relative to the mean target of all tasks
#: (module docstring): its optimal intercept would be ``-inf``.
ZERO_TASK_MEAN = 1e-10

#: Iterations of the safeguarded Newton solve of the Tweedie conjugate (quadratic convergence
#: from a bracket: a few suffice).
_NEWTON_STEPS = 100
#: ``1 - exp(-1)``: the bracket of the Tweedie conjugate's negative roots.
_ONE_MINUS_INV_E = 1.0 - np.exp(-1.0)


def check_power(power) -> float:
    """The Tweedie power as a float in ``[1, 2]`` (``ValueError`` otherwise)."""
    try:
        p = float(power)
    except (TypeError, ValueError):
        raise ValueError(f"power must be a number in [1, 2], got {power!r}.") from None
    if not 1.0 <= p <= 2.0:  # NaN fails too
        raise ValueError(f"power must be in [1, 2] (1: Poisson, 2: Gamma), got {power!r}.")
    return p


def _exp(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.exp(x)


def tweedie_conjugate(a: np.ndarray, y: np.ndarray, power: float,
                      start: np.ndarray | None = None) -> np.ndarray:
    """``ell^*(a_i)`` row by row for the half Tweedie deviance of power ``power`` in ``[1,
    2]`` and targets ``y`` (module docstring), ``inf`` outside the domain.

    Parameters
    ----------
    a : ndarray of shape (N,)
        Score derivatives (of a dual point).
    y : ndarray of shape (N,)
        Targets, ``>= 0`` (``> 0`` for ``power = 2``).
    power : float
    start : ndarray of shape (N,), optional
        Guesses of ``z^* - log y`` (``1 < power < 2``): the root's Newton steps start there
        (``z - log y`` at the scores ``z`` whose gradient the dual point was made of is the
        root itself where the point was not scaled).

    Returns
    -------
    ndarray of shape (N,)
    """
    a = np.asarray(a, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    pos = y > 0
    zero = ~pos
    any_zero = bool(zero.any())
    out = np.full(a.shape, np.inf)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if any_zero and power < 2.0:  # targets 0: a (log a - 1) / (2 - p) on a >= 0
            a0 = a[zero]
            out[zero] = np.where(a0 >= 0.0, (xlogy(a0, a0) - a0) / (2.0 - power), np.inf)
        if power == 1.0:  # each row's own branch only (counts are mostly 0)
            ap, yp = (a[pos], y[pos]) if any_zero else (a, y)
            t = ap / yp
            vp = ap * np.log(yp) + yp * (xlog1py(1.0 + t, t) - t)
            vp = np.where(t >= -1.0, vp, np.inf)
            if any_zero:
                out[pos] = vp
            else:
                out = vp
        elif power == 2.0:
            ly = np.log(np.where(pos, y, 1.0))
            v = a * ly + xlogy(1.0 - a, 1.0 - a) + a
            out = np.where(a <= 1.0, v, np.inf)
        elif pos.any():
            yp = y[pos]
            out[pos] = _tweedie_conjugate_positive(a[pos], np.log(yp), yp ** (2.0 - power),
                                                   power, None if start is None else start[pos])
    return out


def _tweedie_conjugate_positive(a: np.ndarray, ly: np.ndarray, scale: np.ndarray, power: float,
                                start: np.ndarray | None) -> np.ndarray:
    """``ell^*(a_i)`` for targets ``y_i > 0`` and ``1 < power < 2``, from ``ly = log y`` and
    ``scale = y^(2-p)``: ``a log y + y^(2-p) (t r - g(r))`` at the root ``r`` of ``k(r) = t =
    a / y^(2-p)`` (:func:`_tweedie_root`), ``g(r) = expm1((1+q) r) / (1+q) - expm1(q r) / q``,
    ``q = 1 - p``."""
    q = 1.0 - power
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t = a / scale
        r = _tweedie_root(t, q, start)
        g = np.expm1((1.0 + q) * r) / (1.0 + q) - np.expm1(q * r) / q
        return a * ly + scale * (t * r - g)


def _tweedie_root(t: np.ndarray, q: float, start: np.ndarray | None = None) -> np.ndarray:
    """The root ``r`` of ``k(r) = e^{(1+q) r} - e^{q r} = t`` (``q = 1 - p`` in ``(-1, 0)``),
    by Newton steps safeguarded by bisection in a bracket (``k`` increases): ``[0,
    log1p(t) / (1 + q)]`` for ``t >= 0``; ``[min(-1, log(-t / (1 - 1/e)) / q), 0]`` for ``t <
    0`` (there ``k(r) <= -(1 - 1/e) e^{q r}``). The start is ``start`` where given and
    finite, else the root of ``k``'s leading term (``t`` near 0, ``log(t) / (1 + q)`` for
    large ``t``, ``log(-t) / q`` for large ``-t``), and each step updates only the roots not
    yet converged. A step evaluates ``k = e^{q r} expm1(r)`` and ``k' = e^{q r} ((1 + q)
    expm1(r) + 1)`` (two exponentials, no cancellation near 0); beyond ``r = 700``, where
    ``e^r`` would overflow, ``k = e^{(1+q) r} (1 - e^{-r})`` and ``k' = (1 + q) e^{(1+q) r} -
    q e^{q r}``."""
    t = np.asarray(t, dtype=np.float64)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        lo = np.where(t >= 0.0, 0.0,
                      np.minimum(-1.0, np.log(np.maximum(-t, 1e-300) / _ONE_MINUS_INV_E) / q))
        hi = np.where(t >= 0.0, np.log1p(np.maximum(t, 0.0)) / (1.0 + q), 0.0)
        given = None if start is None else np.isfinite(start)
        if start is not None and given is not None and given.all():
            guess = np.asarray(start, dtype=np.float64)
        else:
            guess = np.where(t > 2.0, np.log(np.maximum(t, 1.0)) / (1.0 + q),
                             np.where(t < -2.0, np.log(np.maximum(-t, 1.0)) / q, t))
            if start is not None:
                guess = np.where(np.isfinite(start), start, guess)
        r = np.clip(np.where(np.isfinite(guess), guess, 0.5 * (lo + hi)), lo, hi)
        live: np.ndarray | None = None  # None: every root
        for _ in range(_NEWTON_STEPS):
            if live is None:
                rl, tl, lol, hil = r, t, lo, hi
            else:
                rl, tl, lol, hil = r[live], t[live], lo[live], hi[live]
            e1 = np.exp(q * rl)
            em = np.expm1(rl)
            k = e1 * em
            dk = e1 * ((1.0 + q) * em + 1.0)
            big = rl > 700.0
            if big.any():  # e^r overflows: the form in e^{(1+q) r}
                rb = rl[big]
                e2 = np.exp((1.0 + q) * rb)
                k[big] = e2 * -np.expm1(-rb)
                dk[big] = (1.0 + q) * e2 - q * e1[big]
            above = k > tl
            hil = np.where(above, np.minimum(hil, rl), hil)
            lol = np.where(above, lol, np.maximum(lol, rl))
            new = rl - (k - tl) / dk
            # a Newton step below rounding ends the root; one that leaves the bracket (closed:
            # the root may be its end) bisects
            done = np.abs(new - rl) <= 1e-15 * np.abs(rl)
            bad = ~((new >= lol) & (new <= hil)) | ~np.isfinite(new)
            new = np.where(done, rl, np.where(bad, 0.5 * (lol + hil), new))
            if live is None:
                r, lo, hi = new, lol, hil
                live = np.flatnonzero(~done)
            else:
                r[live], lo[live], hi[live] = new, lol, hil
                live = live[~done]
            if not live.size:
                break
    return r


class Tweedie(Datafit):
    """Half Tweedie deviance of power ``power`` in ``[1, 2]`` with the log link (module
    docstring): ``sum_t sum_{i in t} w_i ell(y_i, x_i^T w_t + b_t)`` (+ ridge term).

    Parameters
    ----------
    data, fit_intercept, alpha_l2, center
        As in :class:`~multitask.losses.base.Datafit` (targets ``y >= 0``; ``> 0`` for
        ``power = 2``).
    power : float, default=1.5
        ``1``: the Poisson deviance, ``2``: the Gamma deviance, between: compound Poisson-Gamma
        (counts of claims with their sizes).
    """

    name = "tweedie"
    link = "log"
    starts_at_best_intercept = True
    capabilities = frozenset({"gradient", "subgradient", "dual", "hessian"})
    #: The power of a subclass that fixes it (Poisson, Gamma); ``None``: a parameter.
    fixed_power: ClassVar[float | None] = None

    def __init__(self, data: MultiTaskData, fit_intercept: bool = True, alpha_l2: float = 0.0,
                 center: bool = False, power: float = 1.5):
        self.power = check_power(power if self.fixed_power is None else self.fixed_power)
        self._intercept0: np.ndarray | None = None
        self._last_root: np.ndarray | None = None
        self._target_cache: tuple[np.ndarray, np.ndarray, np.ndarray | None,
                                  np.ndarray] | None = None
        self._target_power: float | None = None  # the power of the cache
        super().__init__(data, fit_intercept, alpha_l2, center)

    def get_params(self) -> dict:
        params = super().get_params()
        if self.fixed_power is None:
            params["power"] = self.power
        return params

    @staticmethod
    def inverse_link(z: np.ndarray) -> np.ndarray:
        """``exp(z)`` (``inf`` beyond the float range, without a warning)."""
        return _exp(np.asarray(z, dtype=np.float64))

    # ------------------------------------------------------------------ targets
    def check_targets(self) -> None:
        """Counts ``y >= 0`` (``y > 0`` for the Gamma deviance, ``power = 2``), not all 0."""
        y = self.data.y
        if self.power == 2.0:
            self._bad_target(~(y > 0), "positive targets (y > 0)")
        else:
            self._bad_target(~(y >= 0), "non-negative targets (y >= 0)")
        w = self.data.row_weights
        if self.data.n_rows and not np.any((y > 0) & (w > 0)):
            raise ValueError(f"The {self.name} loss needs a positive target somewhere: every "
                             "target is 0 (the mean, and every intercept, would be -inf).")

    # ------------------------------------------------------------------ values
    def _targets(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
        """``(y > 0, log y (0 where y = 0), indices of the positive targets or None where all
        are, y^(2-p) (1 where y = 0))``, computed once (the data do not change)."""
        if self._target_cache is None or self._target_power != self.power:
            y = self.data.y
            pos = y > 0
            y1 = np.where(pos, y, 1.0)
            ly = np.log(y1)
            scale = y1 if self.power == 1.0 else y1 ** (2.0 - self.power)
            self._target_cache = (pos, ly, None if pos.all() else np.flatnonzero(pos), scale)
            self._target_power = self.power
        return self._target_cache

    def _dloss(self, z):
        z = np.asarray(z, dtype=np.float64)
        y, p = self.data.y, self.power
        pos, ly, where_pos, yp = self._targets()
        with np.errstate(over="ignore", invalid="ignore"):
            if p == 1.0:
                mu = _exp(z)
                if where_pos is None:
                    r = z - ly
                    return y * (np.expm1(r) - r), mu - y
                vals = mu.copy()  # targets 0: mu; the others without cancellation
                r = z[where_pos] - ly[where_pos]
                vals[where_pos] = y[where_pos] * (np.expm1(r) - r)
                return vals, mu - y
            if p == 2.0:
                r = ly - z
                return np.expm1(r) - r, -np.expm1(r)
            q = 1.0 - p
            r = z - ly
            self._last_root = r  # the conjugate's root where the dual point is this gradient
            vals = yp * (np.expm1((1.0 + q) * r) / (1.0 + q) - np.expm1(q * r) / q)
            d1 = yp * _exp(q * r) * np.expm1(r)
            if where_pos is not None:  # targets 0: mu^(2-p) / (2 - p) and mu^(2-p)
                zero = ~pos
                mu2 = _exp((2.0 - p) * z[zero])
                vals[zero] = mu2 / (2.0 - p)
                d1[zero] = mu2
        return vals, d1

    def _d2loss(self, z):
        z = np.asarray(z, dtype=np.float64)
        y, p = self.data.y, self.power
        with np.errstate(over="ignore", invalid="ignore"):
            if p == 1.0:
                return _exp(z)
            if p == 2.0:
                return y * _exp(-z)
            q = 1.0 - p
            return (1.0 + q) * _exp((1.0 + q) * z) - q * y * _exp(q * z)

    def _score_conjugate(self, a):
        """``ell^*(a_i)`` row by row (:func:`tweedie_conjugate`), its roots started from the
        last scores' ``z - log y`` (a dual point is made of the gradient there)."""
        start = self._last_root
        if start is not None and start.shape != np.shape(a):
            start = None
        if self.power in (1.0, 2.0):
            return tweedie_conjugate(a, self.data.y, self.power, start)
        a = np.asarray(a, dtype=np.float64)
        pos, ly, where_pos, scale = self._targets()
        if where_pos is None:  # every target positive: no indexing
            return _tweedie_conjugate_positive(a, ly, scale, self.power, start)
        out = np.full(a.shape, np.inf)
        a0 = a[~pos]  # targets 0: a (log a - 1) / (2 - p) on a >= 0
        with np.errstate(divide="ignore", invalid="ignore"):
            out[~pos] = np.where(a0 >= 0.0, (xlogy(a0, a0) - a0) / (2.0 - self.power), np.inf)
        out[where_pos] = _tweedie_conjugate_positive(
            a[where_pos], ly[where_pos], scale[where_pos], self.power,
            None if start is None else start[where_pos])
        return out

    # ------------------------------------------------------------------ intercepts, curvature
    def optimal_intercept_at_zero(self):
        """``log(ybar_t)``, the weighted task means (the minimizer of ``sum_i w_i ell(y_i,
        b)`` for every power); a task whose targets are all 0 gets ``log(ZERO_TASK_MEAN *
        ybar)`` with ``ybar`` the mean target of all tasks (module docstring). Cached."""
        if self._intercept0 is None:
            mean = self.data.task_mean(self.data.y)
            w = self.data.row_weights
            total = float(self.data.y @ w) / max(float(w.sum()), np.finfo(float).tiny)
            floor = ZERO_TASK_MEAN * total
            self._intercept0 = np.log(np.maximum(mean, floor if floor > 0 else 1e-300))
        return self._intercept0.copy()

    def curvature(self) -> float:
        """``inf``: ``ell''`` is unbounded (no ``"curvature_bound"``)."""
        return float("inf")

    def local_curvature(self) -> float:
        """``max_t ybar_t^(2-p)``: the mean curvature of each task at its intercept-only fit
        (``ell''`` averages to ``mu^(2-p)`` at ``mu = ybar_t``), at least ``1e-300``."""
        mean = self.data.task_mean(self.data.y)
        top = float(np.max(mean ** (2.0 - self.power))) if mean.size else 1.0
        return top if np.isfinite(top) and top > 0 else 1.0


class Poisson(Tweedie):
    """Half Poisson deviance ``y log(y / mu) - y + mu``, ``mu = exp(z)`` (Tweedie power 1):
    counts ``y >= 0`` (scikit-learn's ``PoissonRegressor``)."""

    name = "poisson"
    fixed_power = 1.0

    def __init__(self, data: MultiTaskData, fit_intercept: bool = True, alpha_l2: float = 0.0,
                 center: bool = False):
        super().__init__(data, fit_intercept, alpha_l2, center)


class Gamma(Tweedie):
    """Half Gamma deviance ``log(mu / y) + y / mu - 1``, ``mu = exp(z)`` (Tweedie power 2):
    positive targets ``y > 0`` (scikit-learn's ``GammaRegressor``)."""

    name = "gamma"
    fixed_power = 2.0

    def __init__(self, data: MultiTaskData, fit_intercept: bool = True, alpha_l2: float = 0.0,
                 center: bool = False):
        super().__init__(data, fit_intercept, alpha_l2, center)


for _cls in (Poisson, Gamma, Tweedie):
    register_loss(_cls)
