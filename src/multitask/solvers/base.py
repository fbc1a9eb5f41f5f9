"""What every solver shares: the requirement check, the optimality measure, the result tail.

A solver is an algorithm object: its settings (budget, tolerance, algorithm options) are given
to the constructor, and :meth:`Solver.solve` takes a datafit and a penalty. It declares what it
needs of them in :attr:`Solver.datafit_requires` and :attr:`Solver.penalty_requires` (the
capabilities of :data:`multitask.losses.DATAFIT_CAPABILITIES` and
:data:`multitask.penalties.CAPABILITIES`) and never looks at their classes.

The stopping rule
-----------------
Every solver stops on, and reports, the same relative measure, :func:`optimality`: for the
convex models it is the **certified relative duality gap** of
:func:`multitask.solvers.certificate.duality_gap`, ``(P - D) / P`` with ``P`` the objective at
the point and ``D`` the value of a dual point built from it, so that ``tol`` bounds the relative
distance to the optimal objective, ``(P - P*) / P <= tol``, whatever the model, the solver or
the scale of the data. Solvers with a cheaper internal criterion (objective change, ADMM
residuals, coordinate changes) use it only to decide when to compute the certificate.
:func:`finish` computes it once more at the returned point, and the result is ``converged``
only when it is at most ``tol`` there.

Where no dual is available (non-convex penalties, whose stage problems are certified instead
when they are convex; the equality-constrained robust model; solvers computing on task blocks
held apart; a loss without a second derivative, the hinge, with directions the penalty leaves
entirely free), the measure is the prox-gradient residual of
:func:`kkt_residual`, and the result says it is not certified (``info["certified"]``)::

    kkt(V, b) = || ( L (V - prox_{h/L}(V - A^T grad_W f / L)),  s grad_b f ) ||_F
                / || A^T grad_W f(0, b_0) ||_F

with ``L = L_W * ||A||^2`` (``L_W`` the datafit's Lipschitz constant with respect to ``W``),
``s`` the root mean square of the (centred) feature entries (the intercept block measured as
the weight of a constant feature of the features' typical scale), ``b_0`` the best intercepts
at ``W = 0``, and the gradients taken at ``(A(V), b)``. (A penalty with a ``"smooth"`` part
``g`` counts it with the loss: ``grad g`` is added to the gradient, its Lipschitz constant to
``L``, and ``prox`` is that of the rest. When the gradient at zero vanishes, a degenerate
design where no feature carries signal, the denominator is the norm of the full gradient at
``(0, 0)``, or 1.) The numerator is the norm of the prox-gradient mapping; it is zero exactly
at the minimizers (at the stationary points of a non-convex penalty with an exact prox), and
bounds the distance of a nearby point to the subdifferential, not the objective gap.
"""

from __future__ import annotations

import time
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from multitask.losses import Datafit
from multitask.penalties.base import Penalty
from multitask.solvers.problem import Problem
from multitask.solvers.result import SolverResult

__all__ = [
    "REGISTRY",
    "ConjugateGradients",
    "Solver",
    "check_int",
    "check_tol",
    "finish",
    "initial_point",
    "apply_per_task",
    "certify",
    "kkt_residual",
    "lipschitz_bound",
    "make_solver",
    "measure_lipschitz",
    "optimality",
    "safe_norm",
    "smooth_value_and_grad",
]


def check_int(value, name: str, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}.")
    return int(value)


def check_tol(value, name: str = "tol", allow_zero: bool = False) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}.") from None
    if not np.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise ValueError(f"{name} must be a finite number {'>=' if allow_zero else '>'} 0, "
                         f"got {value!r}.")
    return v


#: Every solver by name: ``name -> (class, fixed settings)``. A solver class registers itself
#: by being defined (:meth:`Solver.__init_subclass__`): its ``name``, and each of its
#: ``variants`` (another name for the class with some settings fixed, e.g. ``"pg"``).
REGISTRY: dict[str, tuple[type[Solver], dict[str, Any]]] = {}


def _register(cls: type[Solver]) -> None:
    names = {cls.name: {}, **cls.variants}
    for name, fixed in names.items():
        taken = REGISTRY.get(name)
        if taken is not None and taken[0].__qualname__ != cls.__qualname__:
            raise ValueError(f"The solver name {name!r} of {cls.__qualname__} is taken by "
                             f"{taken[0].__qualname__}.")
        REGISTRY[name] = (cls, dict(fixed))


def make_solver(name: str, **settings) -> Solver:
    """Build the registered solver ``name`` (:data:`REGISTRY`) with the given settings."""
    try:
        cls, fixed = REGISTRY[name]
    except KeyError:
        raise ValueError(f"Unknown solver {name!r}; choose from {sorted(REGISTRY)}.") from None
    return cls(**{**fixed, **settings})


class Solver(ABC):
    """Base of every solver.

    Parameters
    ----------
    max_iter : int
        Iteration budget; reaching it before the stopping rule warns with
        ``sklearn.exceptions.ConvergenceWarning`` (when ``warn``).
    tol : float
        Tolerance on the relative optimality measure (module docstring).
    warn : bool, default=True
        Warn when the budget is reached.
    """

    #: Name used in messages and by the estimators' ``solver=`` parameter.
    name: ClassVar[str] = "solver"
    #: Datafit capabilities the solver needs.
    datafit_requires: ClassVar[frozenset[str]] = frozenset({"gradient"})
    #: Penalty capabilities the solver needs.
    penalty_requires: ClassVar[frozenset[str]] = frozenset()
    #: Whether the solver needs the penalty's prox (convex or exact-prox penalties).
    needs_prox: ClassVar[bool] = True
    #: Whether the solver handles a penalty's ``"smooth"`` part (gradient methods do).
    handles_smooth_part: ClassVar[bool] = False
    #: Other names of the class with some settings fixed (``{"pg": {"accelerated": False}}``).
    variants: ClassVar[dict[str, dict[str, Any]]] = {}
    #: Where ``solver="auto"`` may put it (:data:`multitask.solvers.problem.ROLES`).
    roles: ClassVar[frozenset[str]] = frozenset({"model"})
    #: Whether the class is built by name (a meta-solver needing another solver is not).
    by_name: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__ and cls.__dict__.get("by_name", True):
            _register(cls)

    @classmethod
    def preference(cls, problem: Problem, **settings) -> float | None:
        """How much ``solver="auto"`` wants this solver for ``problem`` (a solver that applies;
        higher wins, :mod:`multitask.solvers.choice`), or ``None``: no claim (taken only where
        no applicable candidate has one). ``settings`` are a variant's fixed settings. Read
        only by the chooser."""
        return None

    @classmethod
    def auto_settings(cls, problem: Problem, **settings) -> dict[str, Any]:
        """Settings ``solver="auto"`` gives the solver it chose for ``problem``."""
        return {}

    def __init__(self, *, max_iter: int = 1000, tol: float = 1e-4, warn: bool = True):
        self.max_iter = check_int(max_iter, "max_iter")
        self.tol = check_tol(tol)
        self.warn = bool(warn)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"

    @property
    def label(self) -> str:
        """The name of this configuration (``name``, unless the settings make it another
        algorithm, e.g. ``"pg"`` for proximal gradient without momentum)."""
        return self.name

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's settings (public attributes); ``deep`` is accepted (and ignored)
        so that scikit-learn's ``clone`` copies an estimator holding a configured solver."""
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    def with_params(self, **params) -> Solver:
        """A new solver of the same kind with some settings replaced."""
        current = self.get_params()
        unknown = sorted(set(params) - set(current))
        if unknown:
            raise ValueError(f"{type(self).__name__} has no setting(s) {unknown}.")
        return type(self)(**{**current, **params})

    # ----------------------------------------------------------------- requirements
    def missing(self, datafit: Datafit, penalty: Penalty) -> list[str]:
        """What the datafit or the penalty lacks for this solver (empty when it applies)."""
        out = [f"the {datafit.name} loss offers no {c!r}"
               for c in sorted(self.datafit_requires - datafit.capabilities)]
        out += [f"the {penalty.name} penalty offers no {c!r}"
                for c in sorted(self.penalty_requires - penalty.capabilities)]
        if "smooth" in penalty.capabilities and not self.handles_smooth_part:
            out.append(f"the {penalty.name} penalty has a smooth part, which {self.label!r} "
                       "does not handle (use a gradient method such as 'fista')")
        if self.needs_prox and not getattr(penalty, "has_prox", True):
            out.append(f"the {penalty.name} penalty has no prox (use a solver for its "
                       "capabilities, e.g. Multistage for 'stages')")
        return out

    def supports(self, datafit: Datafit, penalty: Penalty) -> bool:
        """Whether this solver applies to ``(datafit, penalty)``."""
        return not self.missing(datafit, penalty)

    def check(self, datafit: Datafit, penalty: Penalty) -> None:
        """Raise a ValueError saying what is missing when the solver does not apply."""
        miss = self.missing(datafit, penalty)
        if miss:
            raise ValueError(f"Solver {self.label!r} cannot solve this model: "
                             + "; ".join(miss) + ".")

    @abstractmethod
    def solve(self, datafit: Datafit, penalty: Penalty, *, coef_init: np.ndarray | None = None,
              intercept_init: np.ndarray | None = None,
              callback: Callable | None = None) -> SolverResult:
        """Minimize ``datafit(A(V), b) + penalty(V)``.

        Parameters
        ----------
        datafit : Datafit
            Loss bound to the training data.
        penalty : Penalty
            Penalty or constraint set on the variable ``V`` (its ``linear_map`` gives ``W``).
        coef_init : ndarray, optional
            Warm start of ``V`` (shape ``penalty.linear_map.variable_shape(d, m)``).
        intercept_init : ndarray of shape (n_tasks,), optional
            Warm start of the intercept variable.
        callback : callable, optional
            ``callback(k, objective, V, b)`` after each iteration; returning True stops.

        Returns
        -------
        SolverResult
        """


# --------------------------------------------------------------------------- shared pieces
def initial_point(datafit: Datafit, penalty: Penalty, coef_init=None, intercept_init=None,
                  *, project: bool = True):
    """Validated starting point ``(V, b)``: zeros by default, copies of the warm start else.

    A constraint set (or constraint blocks) is applied to ``V`` when ``project`` (prox with
    step 0), so the start is feasible.
    """
    d, m = datafit.data.n_features, datafit.data.n_tasks
    shape = penalty.linear_map.variable_shape(d, m)
    V = np.zeros(shape) if coef_init is None else np.array(coef_init, dtype=np.float64)
    if V.shape != shape:
        raise ValueError(f"coef_init has shape {V.shape}, expected {shape}.")
    if project and (penalty.is_constraint or penalty.parts):
        V = penalty.prox(V, 0.0)
    b: np.ndarray | None = None
    if datafit.has_intercept_variable:
        b = np.zeros(m) if intercept_init is None else np.array(intercept_init,
                                                               dtype=np.float64)
        if b.shape != (m,):
            raise ValueError(f"intercept_init has shape {b.shape}, expected {(m,)}.")
    return V, b


def apply_per_task(H: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``H_t w_t`` for every task (column of ``W``), shape ``(d, m)``; ``H`` of shape
    ``(m, d, d)``, or ``(1, d, d)`` shared by all tasks."""
    return H[0] @ W if H.shape[0] == 1 else np.matmul(H, W.T[:, :, None])[:, :, 0].T


class ConjugateGradients:
    """Preconditioned conjugate gradients on ``apply(X) = B`` from ``X = 0``, one iteration per
    :meth:`step`; the caller decides when to stop (and keeps the iterate it wants).

    With ``R = B - apply(X)``, ``Z = precondition(R)``: ``X += (r^T z / p^T A p) P``, then
    ``P = Z + (r'^T z' / r^T z) P``. ``apply`` must be symmetric positive semi-definite and
    ``precondition`` symmetric positive definite on the range (the exact solve of a block
    diagonal part, as the quadratic models' linear solves use it). Attributes: ``X`` (the
    iterate), ``R`` (its residual), ``rz`` (``r^T z``, 0 once the residual vanishes)."""

    def __init__(self, apply: Callable[[np.ndarray], np.ndarray],
                 precondition: Callable[[np.ndarray], np.ndarray], B: np.ndarray):
        self.apply, self.precondition = apply, precondition
        self.X = np.zeros_like(B)
        self.R = B.copy()
        Z = precondition(self.R)
        self.P = Z.copy()
        self.rz = float(np.vdot(self.R, Z))

    def step(self) -> float | None:
        """One iteration: the new residual's norm ``||R||``, or ``None`` (nothing changed)
        where the search direction has no positive curvature ``p^T A p`` (a breakdown)."""
        AP = self.apply(self.P)
        pAp = float(np.vdot(self.P, AP))
        if not pAp > 0:
            return None
        step = self.rz / pAp
        self.X = self.X + step * self.P
        self.R = self.R - step * AP
        Z = self.precondition(self.R)
        rz_new = float(np.vdot(self.R, Z))
        self.P = Z + (rz_new / self.rz if self.rz > 0 else 0.0) * self.P
        self.rz = rz_new
        return float(np.linalg.norm(self.R))


def lipschitz_bound(datafit: Datafit, penalty: Penalty) -> float:
    """``L = lipschitz(f) * ||A||^2`` (plus the Lipschitz constant of the penalty's smooth
    part, when it declares one): the step inverse of the optimality measure."""
    L = float(datafit.lipschitz()) * penalty.linear_map.norm_sq
    if "smooth" in penalty.capabilities:
        L += float(penalty.smooth_lipschitz())
    return L if np.isfinite(L) and L > 0 else 1.0


def smooth_value_and_grad(datafit: Datafit, penalty: Penalty, V: np.ndarray,
                          b: np.ndarray | None):
    """``(f(A V, b) + g(V), A^T grad_W f + grad g, grad_b f)``: the smooth part of the model,
    the loss plus the penalty's smooth part ``g`` when it declares one."""
    A = penalty.linear_map
    f, gW, gb = datafit.value_and_grad(A.forward(V), b)
    G = A.adjoint(gW)
    if "smooth" in penalty.capabilities:
        g, gg = penalty.smooth_value_and_grad(V)
        f, G = f + g, G + gg
    return f, G, gb


def smooth_value_pair_and_grad(datafit: Datafit, penalty: Penalty, U: np.ndarray,
                               c: np.ndarray | None, V: np.ndarray, b: np.ndarray | None):
    """``(s(U, c), *smooth_value_and_grad(V, b))`` with ``s`` the smooth part: one pass over
    the data for both points where the datafit fuses them
    (:meth:`Datafit.value_pair_and_grad`)."""
    A = penalty.linear_map
    fu, f, gW, gb = datafit.value_pair_and_grad(A.forward(U), c, A.forward(V), b)
    G = A.adjoint(gW)
    if "smooth" in penalty.capabilities:
        g, gg = penalty.smooth_value_and_grad(V)
        fu, f, G = fu + penalty.smooth_value_and_grad(U)[0], f + g, G + gg
    return fu, f, G, gb


def measure_lipschitz(datafit: Datafit, penalty: Penalty) -> float:
    """``L`` of the optimality measure: ``L_W ||A||^2`` (plus the Lipschitz constant of the
    penalty's smooth part), ``L_W`` the datafit's constant with respect to ``W`` alone."""
    L = datafit.measure_constants()[0] * penalty.linear_map.norm_sq
    if "smooth" in penalty.capabilities:
        L += float(penalty.smooth_lipschitz())
    return L if np.isfinite(L) and L > 0 else 1.0


def certify(datafit: Datafit, penalty: Penalty, V: np.ndarray, b: np.ndarray | None,
            L: float | None = None, target: float | None = None,
            dual_weights: np.ndarray | None = None, *, lazy: bool | None = None):
    """``(measure, certificate)`` at ``(V, b)``: the certified relative duality gap where the
    model has a dual (:func:`multitask.solvers.certificate.duality_gap`, whose
    :class:`~multitask.solvers.certificate.Certificate` a solver can hand to :func:`finish`),
    else the prox-gradient residual of :func:`kkt_residual` and ``None``. ``target`` (a
    solver's ``tol``) spares the certificate's costlier corrections when its first dual point
    already meets it, and, when ``lazy`` (by default whenever a ``target`` is given), while
    it is still far from the optimum. ``dual_weights``: another iterate's weights to build a
    dual point from as well (ADMM's W-step)."""
    from multitask.solvers.certificate import duality_gap

    lazy = target is not None if lazy is None else lazy
    cert = duality_gap(datafit, penalty, V, b, target=target, lazy=lazy,
                       dual_weights=dual_weights)
    if cert is not None:
        return cert.relative_gap, cert
    return kkt_residual(datafit, penalty, V, b, L), None


def optimality(datafit: Datafit, penalty: Penalty, V: np.ndarray, b: np.ndarray | None,
               L: float | None = None, target: float | None = None,
               dual_weights: np.ndarray | None = None) -> float:
    """The measure every solver stops on (module docstring): the certified relative duality
    gap, or the prox-gradient residual where the model has no dual (:func:`certify`)."""
    return certify(datafit, penalty, V, b, L, target, dual_weights)[0]


def kkt_residual(datafit: Datafit, penalty: Penalty, V: np.ndarray, b: np.ndarray | None,
                 L: float | None = None) -> float:
    """The relative prox-gradient residual of the module docstring at ``(V, b)``.

    ``L`` defaults to :func:`measure_lipschitz` (pass it only to save its computation).
    Returns NaN for a loss without gradient (hinge) or a penalty without prox (the
    non-convex capped penalties are measured on their stage penalty by the solver).
    """
    if "gradient" not in datafit.capabilities or not getattr(penalty, "has_prox", True):
        return float("nan")
    A = penalty.linear_map
    L = measure_lipschitz(datafit, penalty) if L is None else L
    _, G, gb = smooth_value_and_grad(datafit, penalty, V, b)
    step = V - penalty.prox(V - G / L, 1.0 / L)
    num = L * L * float(np.vdot(step, step))
    s = datafit.measure_constants()[1] if gb is not None else 0.0
    if gb is not None:
        num += s * s * float(np.vdot(gb, gb))
    scale = datafit.gradient_scale() * np.sqrt(A.norm_sq)
    if not (np.isfinite(num) and (num > 1e-280 or (num == 0 and not np.any(step)))):
        # the squares overflowed or underflowed (gradients beyond about 1e150 or below
        # 1e-140: data near the ends of the accepted [1e-100, 1e100] range): the same
        # measure from norms computed with scaling (BLAS nrm2)
        parts = [L * safe_norm(step)] + ([s * safe_norm(gb)] if gb is not None else [])
        return float(safe_norm(np.asarray(parts)) / max(scale, np.finfo(float).tiny))
    return float(np.sqrt(num) / max(scale, np.finfo(float).tiny))


def safe_norm(a) -> float:
    """``||a||_2 = sqrt(sum_i a_i^2)`` over all entries, without overflow or underflow of the
    squares (BLAS ``nrm2`` scales as it sums): for gradients of data near the ends of the
    accepted ``[1e-100, 1e100]`` range, whose squares leave the float range."""
    import scipy.linalg

    a = np.ascontiguousarray(a, dtype=np.float64).ravel()
    return float(scipy.linalg.norm(a)) if a.size else 0.0


def finish(solver: Solver, datafit: Datafit, penalty: Penalty, V: np.ndarray,
           b: np.ndarray | None, *, n_iter: int, objective, times, converged: bool, t0: float,
           measure: float | None = None, info: dict | None = None,
           what: str = "", exhausted: bool | None = None,
           certified: bool | None = None, certify_model: bool = True,
           certificate=None, dual_weights: np.ndarray | None = None,
           stacklevel: int = 3) -> SolverResult:
    """The result record of a run, with the certificate and the shared convergence warning.

    The certified gap is computed at the returned ``(V, b)`` (:func:`certify`); the run is
    ``converged`` only when the solver says so and, for a certified model, the gap there is at
    most ``solver.tol``. Where the model has no dual, ``measure`` (computed at ``(V, b)`` when
    not given) is reported, with ``certified`` (default False) saying whether the caller's
    measure is itself a certificate (the last stage of a multi-stage run). When the run used
    its whole budget without converging (``exhausted``, by default ``not converged and n_iter
    >= solver.max_iter``) and ``solver.warn`` is set, warns with ``ConvergenceWarning`` naming
    the solver, the budget, the measure reached and the tolerance (``what`` adds a
    solver-specific detail). ``certify_model=False`` skips the certificate: the solver solved
    another problem than ``datafit + penalty`` (the equality-constrained robust model).
    ``certificate``: a :class:`~multitask.solvers.certificate.Certificate` the solver computed
    at ``(V, b)`` itself, with the formula of
    :func:`~multitask.solvers.certificate.duality_gap` (it is not computed again).
    ``dual_weights``: another iterate's weights the certificate also builds a dual point from
    (ADMM's W-step). ``stacklevel``: the warnings' (3: the caller of the solver calling
    this function).
    """
    from multitask.solvers.certificate import duality_gap

    cert = certificate if certificate is not None else (
        duality_gap(datafit, penalty, V, b, target=solver.tol, dual_weights=dual_weights)
        if certify_model else None)
    if cert is not None:
        measure, certified = cert.relative_gap, True
        if converged and cert.relative_gap > solver.tol:
            converged = False
            if solver.warn:
                warnings.warn(
                    f"Solver {solver.label!r} stopped on its own criterion at a relative "
                    f"duality gap of {cert.relative_gap:.2e} > tol={solver.tol:g}: the result "
                    "is not certified to the tolerance (converged_ is False). Decrease the "
                    "solver's inner tolerance or use another solver.",
                    ConvergenceWarning,
                    stacklevel=stacklevel,
                )
    else:
        if measure is None:
            measure = kkt_residual(datafit, penalty, V, b)
        certified = bool(certified)
    W = np.array(penalty.linear_map.forward(V), copy=True)
    if exhausted is None:
        exhausted = not converged and n_iter >= solver.max_iter
    if exhausted and solver.warn:
        detail = f" ({what})" if what else ""
        warnings.warn(
            f"Solver {solver.label!r} did not converge in max_iter={solver.max_iter} "
            f"iterations{detail}: {'relative duality gap' if certified else 'optimality measure'}"
            f" {measure:.2e}, tol={solver.tol:g}. "
            "Increase max_iter or tol.",
            ConvergenceWarning,
            stacklevel=stacklevel,
        )
    info = dict(info or {})
    info.setdefault("solver", solver.label)
    info["certified"] = certified
    if cert is not None:
        info["primal"], info["dual"] = cert.primal, cert.dual
    return SolverResult(
        coef=V,
        W=W,
        intercept=datafit.intercept(W, b),
        n_iter=int(n_iter),
        objective=np.asarray(objective, dtype=np.float64),
        converged=bool(converged),
        time=time.perf_counter() - t0,
        times=np.asarray(times, dtype=np.float64),
        optimality=float(measure),
        intercept_variable=None if b is None else np.array(b, copy=True),
        info=info,
    )
