"""Newton steps of the dirty model on the face of the current iterate.

For the quadratic model of block coordinate descent (:mod:`multitask.solvers.bcd`) with the
dirty norm (:class:`~multitask.penalties.dirty.DirtyNorm`, strengths ``a`` of the group part
and ``c`` of the l1 part)::

    min_W  sum_t 0.5 w_t^T H_t w_t - C_t^T w_t + sum_j N(W_j.),
    N(w) = min_{p + q = w} a ||p||_s + c ||q||_1 = min_{tau >= 0} phi(w, tau),

the inner minimum of a row is over the threshold ``tau`` of the split ``p = sign(w) min(|w|,
tau)`` (:meth:`~multitask.penalties.dirty.DirtyNorm.split`). With the row's entries parted
into ``A`` (``|w_t| > tau``, the sparse part holds their excess), ``T`` (``|w_t| = tau``) and
``B`` (``|w_t| < tau``)::

    s = inf:  phi = a tau + c sum_A (sigma_t w_t - tau),
    s = 2:    phi = a sqrt(||w_B||^2 + n_A tau^2) + c sum_A (sigma_t w_t - tau),

``sigma`` the signs. The face of the iterate fixes, per row: a zero row; a lasso row (``tau =
0``, ``N = c ||w||_1``: the support and its signs, the other entries zero); or a group row
with its sets ``A`` (and signs), ``T`` and ``B``. On the face the variables are the entries of
``A`` and ``B`` (and of a lasso row's support) and one ``tau`` per group row; for ``s = inf``
the entries of ``T`` are ``sigma_t tau`` and ``B``'s are unpenalized, so the objective is a
quadratic; for ``s = 2`` it is a quadratic plus one Euclidean norm per group row, smooth
where the row's group part is nonzero (``tau`` is then a variable of the norm only, and ``T``
is part of ``B``).

``phi`` is at least ``N`` wherever the split it describes is one (``sigma_t w_t >= tau`` on
``A``; for ``s = inf`` also ``|w_t| <= tau`` on ``B`` and ``tau >= 0``; ``sigma_t w_t >= 0`` on
a lasso row's support), and equal to it at the iterate: a step that keeps those constraints and
lowers the face's objective lowers the model's. A Newton step on the face's variables (the
reduced Hessian solved by preconditioned conjugate gradients,
:class:`~multitask.solvers.base.ConjugateGradients`, with the exact solve of its part without
the norms' rank-one terms as preconditioner: per task the Hessian block of the task's free
entries, the ``tau`` of ``s = inf`` by their Schur complement; exact in one iteration for ``s =
inf``, in at most one per group row more for ``s = 2``; pseudo-inverses where a block is
singular) is exact for the quadratic. Where the Hessian does not reach part of the
gradient (collinear features that the face keeps together), the face's objective decreases
linearly along that part: each task goes along it to its first constraint instead. The step
projected onto the face's closure (halved at most three times) is kept where it does not
raise the objective, else shortened to the first constraint it would break, where the entry
changes set (an ``A`` or ``B`` entry joins ``T``, a lasso entry or a row's
``tau`` reaches 0), and the steps go on from the new face (an active-set method). Block
coordinate descent settles the face in few epochs and converges slowly along the flat
directions of raw, collinear features; once the face has settled, a few such steps reach the
optimum to rounding and the epochs after them confirm it (as
:mod:`multitask.solvers.fused_newton` does for the fused sparse group lasso). Block
coordinate descent takes these steps for ``s = 2`` where ``bcd.DIRTY_NEWTON`` is set (off by
default: on School they cost more CPU than they save at most z-scored points); for ``s = inf``
the thresholds' Schur complement is not yet solved accurately enough on raw, collinear
features for the steps to pay (``benchmarks/bench_dirty_newton.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from multitask.penalties.row_operators import dirty_split_rows, dirty_values_rows
from multitask.solvers.base import ConjugateGradients, apply_per_task

__all__ = ["DirtyFace", "dirty_face", "dirty_newton_point"]

#: Relative spread within which entries of a row count as equal to its threshold ``tau``
#: (the coordinate steps set the entries of ``T`` to ``tau`` up to the rounding of ``(z -
#: (z - lam h)) / h``).
TIE_TOL = 1e-9

#: Relative size of the part of the gradient the face's Hessian does not reach beyond which
#: a step follows it (:func:`_newton_direction`) instead of the Newton step.
RAY_TOL = 1e-9

#: Singular values of a task's factor on the free entries below this fraction of its largest
#: count as 0 (the factor comes from an eigendecomposition of ``H_t``, whose small
#: eigenvalues are known to about ``eps`` times the largest: the square root of that).
SV_CUT = 1e-8

#: Eigenvalues of the thresholds' Schur complement below this fraction of its largest count
#: as 0.
SCHUR_CUT = 1e-13

#: The interpreted work of one Newton step beyond its factorizations, in multiply-adds.
_STEP_WORK = 2e5

#: Codes of :attr:`DirtyFace.kind`: an entry fixed at zero, in ``A`` (or a lasso row's
#: support), in ``T``, in ``B``.
FIXED, ABOVE, TIED, BELOW = 0, 1, 2, 3


@dataclass
class DirtyFace:
    """The face of ``W`` (module docstring).

    Attributes
    ----------
    kind : ndarray of shape (d, m), int8
        :data:`FIXED`, :data:`ABOVE`, :data:`TIED` or :data:`BELOW` per entry (a lasso row's
        support is ``ABOVE``, its zeros and a zero row ``FIXED``; ``TIED`` for ``s = inf``
        only).
    sign : ndarray of shape (d, m)
        ``sign(W)``.
    group : ndarray of shape (d,), bool
        The group rows (``tau > 0``).
    tau : ndarray of shape (d,)
        The rows' thresholds (0 but on group rows).
    """

    kind: np.ndarray
    sign: np.ndarray
    group: np.ndarray
    tau: np.ndarray

    def signature(self) -> tuple[bytes, bytes]:
        """What two iterates on the same face share: the entries' sets and signs."""
        return (self.kind.tobytes(), np.sign(self.sign).astype(np.int8).tobytes())


def dirty_face(W: np.ndarray, a: float, c: float, group_inf: bool) -> DirtyFace:
    """The face of ``W`` (shape ``(d, m)``) for the dirty norm with strengths ``a`` (group
    part) and ``c`` (l1 part), ``group_inf`` for ``s = inf``: each row's threshold ``tau`` of
    the optimal split (:func:`~multitask.penalties.row_operators.dirty_split_rows`), entries
    within :data:`TIE_TOL` of it ``T`` (``s = inf``), above it ``A``, below it ``B``; a row
    with ``tau = 0`` is a lasso row, a row of zeros a zero row."""
    W = np.ascontiguousarray(W, dtype=np.float64)
    d, m = W.shape
    tau = np.asarray(dirty_split_rows(W, float(a), float(c), bool(group_inf)),
                     dtype=np.float64) if W.size else np.zeros(d)
    tau = np.where(np.isfinite(tau), tau, 0.0)
    absW = np.abs(W)
    group = tau > 0.0
    kind = np.full((d, m), FIXED, dtype=np.int8)
    lasso = ~group
    kind[lasso[:, None] & (absW > 0.0)] = ABOVE
    t = tau[:, None]
    if group_inf:
        tied = group[:, None] & (np.abs(absW - t) <= TIE_TOL * t)
        kind[group[:, None] & (absW > t) & ~tied] = ABOVE
        kind[group[:, None] & (absW < t) & ~tied] = BELOW
        kind[tied] = TIED
    else:
        kind[group[:, None] & (absW > t)] = ABOVE
        kind[group[:, None] & (absW <= t)] = BELOW
    return DirtyFace(kind=kind, sign=np.sign(W), group=group, tau=np.where(group, tau, 0.0))


def gram_factor(H: np.ndarray) -> np.ndarray:
    """``R_t = Lambda_t^{1/2} Q_t^T`` with ``R_t^T R_t = H_t`` for each ``H_t =
    Q_t Lambda_t Q_t^T`` (its eigenvalues below 0 by rounding taken as 0), shape of ``H``: the
    face's solves work on the factor's columns (least squares) rather than on products of
    ``H``, which square its condition number."""
    lam, Q = np.linalg.eigh(H)
    return np.sqrt(np.maximum(lam, 0.0))[:, :, None] * Q.transpose(0, 2, 1)


class _FaceModel:
    """The objective restricted to a face (module docstring), its gradient, Hessian products
    and the preconditioner, on the variables ``z = (x, tau)``: ``x`` of shape ``(d, m)`` (the
    free entries; 0 elsewhere), ``tau`` of shape ``(d,)``, packed as one vector."""

    def __init__(self, H, R, C, face: DirtyFace, a: float, c: float, group_inf: bool):
        self.H, self.R, self.C, self.a, self.c, self.group_inf = H, R, C, a, c, group_inf
        # the largest eigenvalue of each H_t: the largest squared row norm of R_t
        self.top = (np.max(np.einsum("tij,tij->ti", R, R), axis=1) if R.size
                    else np.zeros(R.shape[0]))
        d, m = face.kind.shape
        self.d, self.m = d, m
        kind = face.kind
        self.group = face.group
        self.free = (kind == ABOVE) | (kind == BELOW)
        self.above = kind == ABOVE
        self.below = (kind == BELOW) & face.group[:, None]
        self.n_above = np.where(face.group, self.above.sum(axis=1), 0).astype(np.float64)
        self.sigma_above = np.where(self.above, face.sign, 0.0)
        # the rows with a tau variable: every group row (s = inf), those with A (s = 2)
        self.has_tau = face.group & ((self.n_above > 0) if not group_inf else True)
        self.S = np.where(kind == TIED, face.sign, 0.0) if group_inf else np.zeros((d, m))

    # ------------------------------------------------------------------ packing
    def pack(self, x, tau):
        return np.concatenate([(x * self.free).ravel(), tau * self.has_tau])

    def unpack(self, z):
        d, m = self.d, self.m
        return z[:d * m].reshape(d, m), z[d * m:]

    def weights(self, x, tau):
        """``W`` of the variables."""
        return self.free * x + self.S * tau[:, None]

    def _norms(self, x, tau):
        """``r_j = sqrt(||w_B||^2 + n_A tau^2)`` of the ``s = 2`` group rows (1 elsewhere)."""
        xb = self.below * x
        sq = np.einsum("jt,jt->j", xb, xb) + self.n_above * tau ** 2
        return np.where(sq > 0.0, np.sqrt(sq), 0.0), xb

    def value(self, x, tau) -> float:
        W = self.weights(x, tau)
        total = float(np.sum(W * (0.5 * apply_per_task(self.H, W) - self.C)))
        total += self.c * float(np.sum(self.sigma_above * x))
        total -= self.c * float(self.n_above @ tau)
        if self.group_inf:
            return total + self.a * float(np.sum(tau * self.has_tau))
        r, _ = self._norms(x, tau)
        return total + self.a * float(r.sum())

    def gradient(self, x, tau):
        """``(g_x, g_tau)``, or ``None`` where an ``s = 2`` group row's norm is 0."""
        W = self.weights(x, tau)
        G = apply_per_task(self.H, W) - self.C
        gx = self.free * (G + self.c * self.sigma_above)
        gt = np.einsum("jt,jt->j", self.S, G) - self.c * self.n_above
        if self.group_inf:
            gt = gt + self.a * self.has_tau
        else:
            r, xb = self._norms(x, tau)
            if np.any(self.group & ~(r > 0.0)):
                return None  # a group row whose group part vanished: no gradient
            inv = self._inverse(r)
            gx = gx + self.a * xb * inv[:, None]
            gt = gt + self.a * self.n_above * tau * inv
        return gx, gt * self.has_tau

    def _inverse(self, r):
        """``1 / r`` on the group rows, 0 elsewhere."""
        ok = self.group & (r > 0.0)
        return np.where(ok, 1.0 / np.where(ok, r, 1.0), 0.0)

    def prepare(self, x, tau) -> bool:
        """Build the Hessian's parts at ``(x, tau)`` and the preconditioner's factors; False
        where a factor is not finite."""
        d, m = self.d, self.m
        free = self.free
        if self.group_inf:
            self.curv = np.zeros((d, m))
            self.curv_tau = np.zeros(d)
            self.rank_one = None
        else:
            r, xb = self._norms(x, tau)
            inv = self._inverse(r)
            self.curv = self.a * self.below * inv[:, None]
            self.curv_tau = self.a * self.n_above * inv * self.has_tau
            # -a / r^3 g g^T per row, g = (w_B, n_A tau)
            self.rank_one = (self.a * inv ** 3, xb, self.n_above * tau * self.has_tau)
        R = np.broadcast_to(self.R, (m, d, d))
        f = free.T  # (m, d)
        A = R * f[:, None, :]  # the free entries' columns of each task's factor
        if not self.group_inf and np.any(self.curv):  # and the rows of the norms' curvature
            idx = np.arange(d)
            extra = np.zeros((m, d, d))
            extra[:, idx, idx] = np.sqrt(self.curv.T) * f
            A = np.concatenate([A, extra], axis=1)
        if not np.all(np.isfinite(A)):
            return False
        try:
            U, sv, Vt = np.linalg.svd(A, full_matrices=False)
        except np.linalg.LinAlgError:  # the SVD of a degenerate system did not converge
            return False
        top = np.sqrt(np.broadcast_to(self.top, (m,)))  # the largest singular value of R_t
        keep = sv > (top * SV_CUT)[:, None]
        inv_sv = np.where(keep, 1.0 / np.where(keep, sv, 1.0), 0.0)
        V = Vt.transpose(0, 2, 1)
        self.Kinv = np.matmul(V * (inv_sv ** 2)[:, None, :], Vt)
        S = self.S.T  # (m, d): the tied entries' signs per task
        schur = np.zeros((d, d))
        self.B = self.KB = None
        if self.group_inf and np.any(S):
            RF = R * S[:, None, :]  # the factor times the tied entries' map from tau
            Uk = U * keep[:, None, :]
            coef = np.matmul(Uk.transpose(0, 2, 1), RF)
            resid = RF - np.matmul(Uk, coef)  # what the free entries cannot fit: stable
            schur = np.einsum("tij,tik->jk", resid, resid)
            self.B = np.matmul(A.transpose(0, 2, 1), RF)
            self.KB = np.matmul(V * inv_sv[:, None, :], coef)
        schur[np.diag_indices(d)] += self.curv_tau
        rows = self.has_tau
        sub = schur[np.ix_(rows, rows)]
        if not np.all(np.isfinite(sub)):
            return False
        if sub.size:
            w, Q = np.linalg.eigh(0.5 * (sub + sub.T))
            # the tau's curvature left by the free entries is known to about eps times the
            # loss's largest curvature
            floor = float(np.max(self.top)) * d * np.finfo(np.float64).eps
            ok = w > max((w[-1] if w.size else 0.0) * SCHUR_CUT, floor)
            self.schur_inv = (Q[:, ok] / w[ok]) @ Q[:, ok].T
        else:
            self.schur_inv = np.zeros((0, 0))
        return True

    def hess(self, z):
        """The reduced Hessian times ``z``."""
        x, tau = self.unpack(z)
        dW = self.weights(x, tau)
        HdW = apply_per_task(self.H, dW)
        ox = self.free * HdW + self.curv * x
        ot = np.einsum("jt,jt->j", self.S, HdW) + self.curv_tau * tau
        if self.rank_one is not None:
            coef, xb, gt = self.rank_one
            dot = np.einsum("jt,jt->j", xb, x) + gt * tau
            ox = ox - (coef * dot)[:, None] * xb
            ot = ot - coef * dot * gt
        return self.pack(ox, ot)

    def solve_part(self, z):
        """The exact solve of the Hessian without its rank-one terms (the preconditioner)."""
        x, tau = self.unpack(z)
        x = x * self.free
        y = np.matmul(self.Kinv, x.T[:, :, None])[:, :, 0]  # (m, d)
        rows = self.has_tau
        rt = tau.copy()
        if self.B is not None:
            rt = rt - np.einsum("tij,ti->j", self.B, y)
        dt = np.zeros(self.d)
        dt[rows] = self.schur_inv @ rt[rows]
        if self.KB is not None:
            y = y - np.matmul(self.KB, dt)
        return self.pack(y.T, dt)


def _newton_direction(model: _FaceModel, grad, max_iter: int):
    """``(step, ray)``: ``step = -Hessian^+ grad`` by preconditioned conjugate gradients
    (module docstring) and ``ray = -grad - Hessian step``, the part of ``-grad`` the Hessian
    does not reach (a direction of no curvature where the face's objective decreases
    linearly); ``None`` when they are not finite."""
    b = -model.pack(*grad)
    norm_b = float(np.linalg.norm(b))
    if not np.isfinite(norm_b):
        return None
    if norm_b == 0.0:
        return np.zeros_like(b), np.zeros_like(b)
    cg = ConjugateGradients(model.hess, model.solve_part, b)
    for _ in range(max_iter):
        res = cg.step()
        if res is None:
            break
        if not np.isfinite(res):
            return None
        if res <= 1e-13 * norm_b:
            break
    if not (np.all(np.isfinite(cg.X)) and np.all(np.isfinite(cg.R))):
        return None
    return cg.X, cg.R


def _ray_lengths(model: _FaceModel, x, tau, rx, rt, gx):
    """How far each task goes along the ray ``(rx, rt)`` (:func:`_newton_direction`): to its
    first constraint, or to the face objective's minimum along the task's part of the ray
    where it has some curvature; one length for all tasks where the ray moves a ``tau``
    (the tasks are then coupled). ``None`` where no task can move."""
    m = model.m
    if np.any(rt != 0.0) and float(np.abs(rt).max()) > 1e-12 * float(np.abs(rx).max()):
        t = _step_limit(model, x, tau, rx, rt, np.inf)
        ray = model.pack(rx, rt)
        curv = float(ray @ model.hess(ray))
        if curv > 0.0:
            t = min(t, float(ray @ ray) / curv)
        return np.full(m, t) if np.isfinite(t) and t > 0.0 else None
    lengths = np.empty(m)
    sig = model.sigma_above
    t_col = (tau * model.has_tau)[:, None]
    limits = [(sig * x - t_col, sig * rx, model.above)]
    if model.group_inf:
        limits += [(t_col - x, -rx, model.below), (t_col + x, rx, model.below)]
    lengths[:] = np.inf
    for slack, rate, mask in limits:
        tight = mask & (rate < 0.0)
        ratio = np.where(tight, np.maximum(slack, 0.0) / np.where(tight, -rate, 1.0), np.inf)
        lengths = np.minimum(lengths, ratio.min(axis=0))
    # each task's part of the face objective along its part of the ray (no tau moves, the
    # tasks are apart): slope g_t . r_t, curvature r_t^T H_t r_t (+ the norms' diagonal)
    HR = apply_per_task(model.H, rx)
    curv = np.einsum("jt,jt->t", rx, HR) + np.einsum("jt,jt->t", model.curv, rx * rx)
    slope = np.einsum("jt,jt->t", gx, rx)
    bent = curv > 0.0
    lengths = np.where(bent, np.minimum(lengths, -slope / np.where(bent, curv, 1.0)), lengths)
    lengths = np.where(np.isfinite(lengths) & (slope < 0.0), lengths, 0.0)
    return lengths if np.any(lengths > 0.0) else None


def _step_limit(model: _FaceModel, x, tau, dx, dtau, t_max: float = 1.0) -> float:
    """The longest ``t <= t_max`` that keeps the face's constraints (module docstring)."""
    sig = model.sigma_above
    # A (and a lasso support): sigma (x + t dx) - tau - t dtau >= 0 (tau = 0 on lasso rows)
    above = model.above
    slack = sig * x - tau[:, None] * model.has_tau[:, None]
    rate = sig * dx - dtau[:, None] * model.has_tau[:, None]
    t_max = min(t_max, _ratio(slack, rate, above))
    if model.group_inf:
        for sign in (1.0, -1.0):  # tau -+ x >= 0 on B
            t_max = min(t_max, _ratio(tau[:, None] - sign * x, dtau[:, None] - sign * dx,
                                      model.below))
        t_max = min(t_max, _ratio(tau, dtau, model.has_tau))
    return max(t_max, 0.0)


def _ratio(slack, rate, mask) -> float:
    """The largest ``t`` with ``slack + t rate >= 0`` for the constraints in ``mask`` (``inf``
    where none tightens; a slack below 0 by rounding counts as 0)."""
    tight = mask & (rate < 0.0)
    if not np.any(tight):
        return float("inf")
    return float((np.maximum(slack[tight], 0.0) / -rate[tight]).min())


def dirty_newton_point(H: np.ndarray, C: np.ndarray, W: np.ndarray, a: float, c: float,
                       group_inf: bool, max_variables: int, max_steps: int = 8,
                       factor: np.ndarray | None = None) -> tuple[np.ndarray | None, float]:
    """Newton steps of the model (module docstring) from ``W`` on its face, each shortened to
    the face's constraints, the face then taken again from the new point, at most
    ``max_steps`` of them. Returns ``(point, work)``: the point (``None`` when there is
    nothing to do: both strengths positive are needed, ``W = 0``, or more than
    ``max_variables`` free entries and thresholds) and the steps' work, ``6 m d^3 + 4 k m
    d^2 +`` :data:`_STEP_WORK` per step of at most ``k`` conjugate-gradient iterations on
    ``m`` tasks of ``d`` features (the factorizations, then the products).

    ``H`` of shape ``(m, d, d)`` or ``(1, d, d)`` (a shared design), ``C`` and ``W`` of shape
    ``(d, m)``; ``a`` and ``c`` the strengths of the group and l1 parts, ``group_inf`` for
    ``s = inf``; ``factor``: :func:`gram_factor` of ``H`` where the caller keeps it from one
    call to the next. The point is not checked against ``W``'s objective (the caller does).
    """
    W = np.array(W, dtype=np.float64, copy=True)
    d, m = W.shape
    work = 0.0

    def objective(V):
        return float(np.sum(V * (0.5 * apply_per_task(H, V) - C))) + float(
            dirty_values_rows(V, a, c, group_inf).sum())

    if not (a > 0.0 and c > 0.0) or not np.any(W):
        return None, work
    if factor is None:
        factor = gram_factor(H)
        work += 4.0 * H.shape[0] * float(d) ** 3
    R = factor
    for _ in range(max_steps):
        face = dirty_face(W, a, c, group_inf)
        model = _FaceModel(H, R, C, face, a, c, group_inf)
        n_var = int(model.free.sum() + model.has_tau.sum())
        if n_var == 0 or n_var > max_variables:
            return None, work
        x = W * model.free
        tau = face.tau * model.has_tau
        if group_inf:  # the tied entries' common value (their spread is rounding)
            n_tied = np.abs(model.S).sum(axis=1)
            mean = np.abs(model.S * W).sum(axis=1) / np.where(n_tied > 0, n_tied, 1.0)
            tau = np.where(n_tied > 0, mean, tau) * model.has_tau
        grad = model.gradient(x, tau)
        if grad is None or not model.prepare(x, tau):
            return None, work
        k = 10 if group_inf else int(model.group.sum()) + 2
        work += 6.0 * m * float(d) ** 3 + 4.0 * k * m * float(d) ** 2 + _STEP_WORK
        found = _newton_direction(model, grad, k)
        if found is None:
            return None, work
        step, ray = found
        norm_g = float(np.linalg.norm(model.pack(*grad)))
        if float(np.linalg.norm(ray)) > RAY_TOL * norm_g:
            # the face's objective decreases without bound along ray but for the constraints:
            # go along it to the first one (or to its minimum where it has some curvature)
            rx, rt = model.unpack(ray)
            rx = rx * model.free
            lengths = _ray_lengths(model, x, tau, rx, rt, grad[0])
            if lengths is not None:
                cand = model.weights(x + lengths * rx, tau + float(lengths.min()) * rt)
                _project(cand, model, tau + float(lengths.min()) * rt)
                if objective(cand) < objective(W):
                    W = cand
                    continue
        dx, dtau = model.unpack(step)
        dx = dx * model.free
        now = objective(W)
        W_new = None
        # the full step projected onto the face's closure, then halved, while it does not
        # lower the objective; else the step shortened to the first constraint
        t = 1.0
        for _ in range(3):
            cand = model.weights(x + t * dx, tau + t * dtau)
            _project(cand, model, tau + t * dtau)
            if objective(cand) <= now:
                W_new = cand
                break
            t *= 0.5
        if W_new is None:
            t = _step_limit(model, x, tau, dx, dtau)
            if t <= 0.0:
                break
            cand = model.weights(x + t * dx, tau + t * dtau)
            _project(cand, model, tau + t * dtau)
            if not objective(cand) < now:
                break
            W_new = cand
        change = float(np.max(np.abs(W_new - W)))
        W = W_new
        if change <= 1e-15 * max(float(np.max(np.abs(W))), 1e-300):
            break
    return W, work


def _project(W, model: _FaceModel, tau):
    """Onto the closure of the face, in place: an ``A`` entry below ``tau`` (0 on a lasso
    row) to ``sigma tau``; for ``s = inf`` a ``B`` entry above ``tau`` to ``+-tau``, and a
    row with ``tau < 0`` to its ``A`` entries (``tau = 0``)."""
    t = np.where(model.has_tau, tau, 0.0)
    if model.group_inf:
        neg = model.has_tau & (t < 0.0)
        t = np.maximum(t, 0.0)
        W[neg[:, None] & ~model.above] = 0.0
    tt = np.broadcast_to(t[:, None], W.shape)
    sig = model.sigma_above
    low = model.above & (sig * W < tt)
    W[low] = (sig * tt)[low]
    if model.group_inf:
        out = model.below & (np.abs(W) > tt)
        W[out] = (np.sign(W) * tt)[out]
