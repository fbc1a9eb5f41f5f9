"""The automatic solver choice (``solver="auto"``), in one place.

Every solver class registers itself by being defined (:class:`~multitask.solvers.base.Solver`
keeps the registry, :data:`~multitask.solvers.base.REGISTRY`), declares what it needs
(``missing``) and, beside it, how much it wants a problem (``preference``: a score read from
the problem's facts, :class:`~multitask.solvers.problem.Problem`, or ``None`` where it has no
claim on the problem). :func:`choose` is the rule:

    among the candidates that apply to the problem (``missing`` empty), take the highest
    preference; ties go to the earlier candidate; a solver without a preference is taken
    only when no candidate that applies has one (the first such candidate).

The candidates are every registered solver that may stand in the problem's role (``"model"``
for a whole model, ``"inner"`` for a meta-solver's subproblems), or the names a model family
gives (a family names at most its candidates; it never ranks them). The scores of the solvers
of this library, highest first (each solver's module says when and why it takes its score):

======  =====================================================================================
score   solver and condition
======  =====================================================================================
100     ``exact``: a quadratic model solved by one linear system
95      ``task_cd``: least squares with an l1 term separable over the entries of ``W`` (the
        independent lasso and elastic net) on a dense design, task by task
90      ``working_set``: many feature rows, separable, not all free, a sparse solution
        expected (``Problem.active_share`` at most one half, or ``alpha >= alpha_max / 20``
        on data with at most twice as many rows as features; for the independent lasso its
        columns' estimate at most 0.1, or at most 0.6 with ``alpha >= 0.07 alpha_max``); also
        free rows with a task coupling on least squares, up to 50 tasks of fewer rows than
        features (the mean model)
85      ``newton_cg``: a pure ridge with the logistic loss on features whose variances spread
        by at most 100; 75 with the logistic loss on spread features or the multinomial loss
82      ``newton_admm``: the l2,1 norm with the logistic loss at ``alpha <= alpha_max / 200``
        (``/ 50`` on at least 100 tasks), features of one scale, with Newton's data conditions
80      ``newton``: a smooth non-quadratic loss, few features, feature scale its Hessians hold
70      ``bcd``: a quadratic loss with row operators (60 on group rows of per-task designs;
        45 for a whole model with a task coupling on tasks of fewer rows than features)
65      ``newton_admm``: a split model with the logistic or squared hinge loss, or the trace
        norm with the logistic loss, with Newton's data conditions (for a split model with a
        classification loss also up to 100 features while ``m d^2 <= 10^5``)
62      ``admm``: a quadratic loss, ill-conditioned or a split model; 56 for the trace norm
        with the squared loss where it applies (but on 1,000 tasks and more at ``alpha >=
        alpha_max / 2``)
60      ``mm``: a smooth loss, ill-conditioned bound, or a split model on tasks of at least
        ``2 d K`` rows (``K`` scores per row); ``cd`` as inner solver
55      ``ladm``: a split model (robust MTL below ``0.3 alpha_max``); 52 for the l2,1 and
        trace norms with the squared loss at ``alpha <= alpha_max / 20`` on data with at least
        as many rows as features, and for the trace norm at ``alpha <= alpha_max / 50`` on
        dense per-task designs of fewer rows than features, at least 1,000 of them
50      ``fista``: any smooth loss with a prox
40      ``lp``: a piecewise-linear loss with linear constraints or a polyhedral norm, up to a
        size (larger where its dual program is small)
10, 5   ``pg``, ``subgradient``: fallbacks
======  =====================================================================================

A solver may declare the highest score its ``preference`` gives (``max_preference``), and a
bound for one problem read from its cheap facts (``preference_ceiling(problem)``: the role, the
loss, the penalty's capabilities, the shapes; ``-inf`` where the solver makes no claim on the
problem): :func:`choose` then assesses the candidates from the highest bound down and skips one
that cannot beat the best found so far, so that what only it reads (its requirements, a
conditioning estimate, one spectral norm per task) is not computed for a problem another solver
takes; the choice is the rule's all the same (:func:`explain` assesses every candidate).

``tests/test_solver_choice.py`` pins the result for every model on a table of data sets;
``benchmarks/bench_auto_choice.py`` measures it against every applicable solver on a grid of
shapes, strengths, losses and model families (``benchmarks/bench_auto_solver.py``: accelerated
gradient against ADMM on real data sets).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from multitask.losses import Datafit
from multitask.penalties.base import Penalty
from multitask.solvers.base import REGISTRY, Solver, make_solver
from multitask.solvers.problem import Problem

__all__ = ["Choice", "Problem", "choose", "explain", "make_auto_solver"]


@dataclass(frozen=True)
class Choice:
    """The outcome of :func:`choose`: the solver ``name`` and the settings ``solver="auto"``
    gives it (``settings``, from the solver's ``auto_settings``)."""

    name: str
    settings: dict[str, Any] = field(default_factory=dict)


def _candidates(problem: Problem, candidates: Sequence[str] | None) -> list[str]:
    if candidates is None:
        return [name for name, (cls, _) in REGISTRY.items() if problem.role in cls.roles]
    unknown = [c for c in candidates if c not in REGISTRY]
    if unknown:
        raise ValueError(f"Unknown solver(s) {unknown}; choose from {sorted(REGISTRY)}.")
    return list(candidates)


def _ceiling(problem: Problem, name: str) -> float:
    """The highest preference the registered solver ``name`` can give for ``problem``: its
    class's ``preference_ceiling(problem, **fixed)`` where it has one (``-inf``: no claim),
    else its ``max_preference`` (unbounded where it declares none)."""
    cls, fixed = REGISTRY[name]
    return _class_ceiling(cls, fixed, problem)


def _class_ceiling(cls: type[Solver], fixed: dict[str, Any], problem: Problem) -> float:
    """:func:`_ceiling` of the solver class ``cls`` with its variant's ``fixed`` settings."""
    bound = getattr(cls, "preference_ceiling", None)
    if bound is not None:
        return float(bound(problem, **fixed))
    return float(getattr(cls, "max_preference", float("inf")))


def _declared_needs_met(problem: Problem, name: str) -> bool:
    """Whether the problem's loss and penalty offer the capabilities the registered solver
    ``name`` declares it needs (``datafit_requires``, ``penalty_requires``: the first thing
    its ``missing`` checks), read without building the solver."""
    return _needs_met(REGISTRY[name][0], problem.datafit.capabilities,
                      problem.penalty.capabilities)


def _needs_met(cls: type[Solver], datafit_caps: frozenset, penalty_caps: frozenset) -> bool:
    """Whether the capabilities offered cover the solver class's declared needs."""
    return cls.datafit_requires <= datafit_caps and cls.penalty_requires <= penalty_caps


def _ranked(problem: Problem, names: list[str]) -> list[tuple[float, int, str]]:
    """``(-bound, rank, name)`` of the candidates whose declared needs the problem meets
    (:func:`_declared_needs_met`), sorted: the highest bound first, ties in the candidates'
    order."""
    dcaps, pcaps = problem.datafit.capabilities, problem.penalty.capabilities
    out = []
    for rank, name in enumerate(names):
        cls, fixed = REGISTRY[name]
        if _needs_met(cls, dcaps, pcaps):
            out.append((-_class_ceiling(cls, fixed, problem), rank, name))
    out.sort()
    return out


def _assess(problem: Problem, name: str) -> tuple[list[str], float | None]:
    """``(what is missing, preference)`` of the registered solver ``name`` for ``problem``."""
    cls, fixed = REGISTRY[name]
    miss = make_solver(name).missing(problem.datafit, problem.penalty)
    if miss:
        return miss, None
    return [], cls.preference(problem, **fixed)


def choose(problem: Problem, candidates: Sequence[str] | None = None) -> Choice:
    """The solver ``solver="auto"`` takes for ``problem`` (module docstring).

    Parameters
    ----------
    problem : Problem
        The facts of ``(datafit, penalty)`` and the role of the solver.
    candidates : sequence of str, optional
        Solver names to choose from (a model family's); default: every registered solver
        that may stand in ``problem.role``.

    Returns
    -------
    Choice

    Raises
    ------
    ValueError
        When no candidate applies, with what each one lacks.
    """
    best: tuple[float, int, str] | None = None
    names = _candidates(problem, candidates)
    # the candidates that offer what they declare they need, in the order of their highest
    # possible score (ties keep the candidates' order), so that one that cannot win is never
    # assessed (its facts unread)
    for neg_ceiling, rank, name in _ranked(problem, names):
        if best is not None and (-neg_ceiling, -rank) < best[:2]:
            break  # the later candidates' bounds are no higher
        miss, score = _assess(problem, name)
        if miss:
            continue
        key = (float("-inf") if score is None else float(score), -rank, name)
        if best is None or key > best:
            best = key
    if best is None:
        # none applies: what each candidate lacks, in the order of their bounds
        order = sorted(range(len(names)), key=lambda r: -_ceiling(problem, names[r]))
        reasons = [f"{names[r]}: " + "; ".join(make_solver(names[r]).missing(
            problem.datafit, problem.penalty)) for r in order]
        raise ValueError("No solver applies to this problem: " + " | ".join(reasons))
    name = best[2]
    cls, fixed = REGISTRY[name]
    return Choice(name, dict(cls.auto_settings(problem, **fixed)))


def explain(problem: Problem, candidates: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Every candidate with what it lacks and its preference, in the chooser's order (the
    chosen one first): why ``solver="auto"`` took what it took.

    Returns
    -------
    list of dict
        ``{"solver": name, "applies": bool, "missing": [...], "preference": float | None}``.
    """
    ranked = []
    for rank, name in enumerate(_candidates(problem, candidates)):
        miss, score = _assess(problem, name)
        key = (not miss, float("-inf") if score is None else score, -rank)
        ranked.append((key, {"solver": name, "applies": not miss, "missing": miss,
                             "preference": score}))
    ranked.sort(key=lambda item: item[0], reverse=True)
    return [row for _, row in ranked]


def make_auto_solver(datafit: Datafit, penalty: Penalty,
                     candidates: Sequence[str] | None = None, *, role: str = "model",
                     **settings) -> Solver:
    """The solver :func:`choose` takes, built with ``settings`` (``max_iter``, ``tol``, ...)
    over the choice's own settings."""
    choice = choose(Problem(datafit, penalty, role), candidates)
    return make_solver(choice.name, **{**choice.settings, **settings})
