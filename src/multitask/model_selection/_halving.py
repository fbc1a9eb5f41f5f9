"""Successive halving over the candidates of a grid with a second parameter.

A grid that searches more than one parameter runs one warm-started path per point of its outer
grid (the values of the other parameters) on every fold. With ``halving`` the folds are taken
in rounds instead (successive halving, Jamieson and Talwalkar, "Non-stochastic best arm
identification and hyperparameter optimization", with the folds as the resource and the
outer grid points as the arms): every candidate is scored on the first fold; after it, the
better half of the outer points (ranked by the best score of their candidates on that fold)
goes on, and within them the candidates among the better half of all candidates; after the
second fold the same cut, ranked on the two folds, leaves the candidates fitted on all the
remaining folds. The score on a subset of the folds is the one the selection rule gives on
those folds alone: the mean of their fold scores (``"kfold"``) or the score of their
out-of-fold values pooled (``"loo"``). On each new fold a path is fitted from its strongest
value down to its last candidate still in the running (the values before it are fitted
anyway, for the warm starts, and scored too; where the estimator declares settings that
serve a warm start as well, ``_warm_start_settings()``, the values no longer in the running
are fitted with them instead and not scored: the capped models' first stage alone, the one
their next fit starts from, and sparse + low rank's fits to a tolerance of ``1e-2``).
Cutting the outer points, not only the
candidates, is what saves fits: the candidates kept by their own rank lie at the weak end of
most paths, each of which is then fitted whole; with the outer points halved, 3 of them cost
``3 + 2 + (K - 2)`` path fits over ``K`` folds instead of ``3 K``.

The first round, before any cut, is a screening: its fits take ``tol`` at
:data:`SCREENING_TOL_FACTOR` times the estimator's own (every candidate alike, and the values a
widening adds on the first fold too; the later rounds and the refit take the estimator's
``tol``), so the candidates' scores on the first fold are those of fits to that tolerance, and
the mean score of a candidate in the running includes it. On
``benchmarks/bench_cv_two_param.py``'s two problems (11 models each) every choice and held-out
error stayed the same with a factor of 3, while sparse + low rank took 14% (School) and 22%
(the survey) less CPU (docs/scale.md, "After the twelfth round"); a factor of 10 (the
benchmark's ``--screening-factor``) changed two choices of 22 (the clustered model and convex
ASO on the survey, held-out nMSE 0.3872 against 0.4282). A grid that searches ``tol`` itself,
or an estimator without one, is not screened.

The choice is made among the candidates scored on every fold; a candidate left behind keeps
the scores of the folds it was fitted on and a mean score of NaN. The rounds
(:data:`HALVING_AFTER`) and the share kept (:data:`HALVING_FACTOR`) are the one schedule
measured on the problems of ``benchmarks/bench_cv_two_param.py`` (docs/scale.md): there the
held-out error of every model's choice was the same as that of the whole grid
(``halving=False``) or lower, with the outer points cut as with the candidates alone; against
the candidates alone, the outer points' cut changed two choices (sparse + low rank on the
survey, held-out nMSE 0.2202 against 0.2191; the graph model on School, 0.6144 against
0.6208). No other schedule was compared.
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np

__all__ = ["HALVING_AFTER", "HALVING_FACTOR", "SCREENING_TOL_FACTOR", "fold_rounds",
           "round_jobs", "screening_settings", "survivors", "warm_start_settings"]

#: The candidates still in the running are cut to ``1 / HALVING_FACTOR`` of them after each
#: round.
HALVING_FACTOR = 2

#: The number of folds after which each cut is made (those below the number of folds).
HALVING_AFTER = (1, 2)

#: The first round's fits take ``tol`` at this many times the estimator's (module docstring),
#: where that stays at most :data:`SCREENING_TOL_MAX`.
SCREENING_TOL_FACTOR = 3.0

#: The loosest screening ``tol``: beyond it a fit serves a warm start, not a score.
SCREENING_TOL_MAX = 1e-2


def fold_rounds(n_splits: int, n_outer: int) -> list[int]:
    """The cumulative number of folds at the end of each round: :data:`HALVING_AFTER` then
    ``n_splits``; ``[n_splits]`` (no halving) with fewer than 2 outer grid points."""
    if n_outer < 2:
        return [int(n_splits)]
    return [r for r in HALVING_AFTER if r < n_splits] + [int(n_splits)]


def _best_share(score: np.ndarray, factor: int) -> np.ndarray:
    """Positions of the ``ceil(n / factor)`` greatest of ``score`` (NaN last, ties to the
    first)."""
    n_keep = max(1, math.ceil(score.size / factor))
    clean = np.where(np.isnan(score), -np.inf, score)
    return np.argsort(-clean, kind="stable")[:n_keep]


def survivors(partial: np.ndarray, alive: np.ndarray, factor: int = HALVING_FACTOR,
              outer: np.ndarray | None = None) -> np.ndarray:
    """Boolean mask of the candidates kept after a round.

    Without ``outer``: the ``ceil(n / factor)`` best of the ``n`` alive candidates by
    ``partial`` (greater is better; NaN last; ties to the first candidate). With ``outer``
    (the outer grid point of each candidate, integers): among those, only the candidates of
    the ``ceil(p / factor)`` best of the ``p`` outer points with an alive candidate, an outer
    point ranked by the best ``partial`` of its alive candidates. The best alive candidate
    is always kept.
    """
    idx = np.flatnonzero(alive)
    keep = np.zeros(alive.shape, dtype=bool)
    if idx.size == 0:
        return keep
    keep[idx[_best_share(partial[idx], factor)]] = True
    if outer is None:
        return keep
    outer = np.asarray(outer)
    points = np.unique(outer[idx])
    score = np.where(np.isnan(partial[idx]), -np.inf, partial[idx])
    best = np.array([score[outer[idx] == p].max() for p in points])
    kept_points = points[_best_share(np.where(np.isinf(best), np.nan, best), factor)]
    return keep & np.isin(outer, kept_points)


def round_jobs(chunks: list[list[int]], alive: np.ndarray, folds, candidates: list[dict],
               warm_only: tuple[dict, dict] | None = None, screening: dict | None = None
               ) -> list[tuple[int, list[int], list[dict], tuple[int, ...]]]:
    """Jobs ``(fold, candidate indices, points, left out)`` fitting, on each of ``folds``,
    every chunk (a warm-started path, or one candidate) from its start down to its last
    ``alive`` candidate.

    The candidates before it that are no longer in the running are fitted for the warm start
    of the next ones only. With ``warm_only = (settings, base)`` (the estimator's
    ``_warm_start_settings()`` and its own values of them: :func:`warm_start_settings`) they are
    fitted with ``settings`` instead, left out of the job's results (``left out``: their
    positions in the chunk) and not scored, and the candidates in the running get ``base``
    under their own values; without it they are fitted and scored as the others.
    ``screening`` (:func:`screening_settings`, the first round's) is set on every candidate
    in the running, over its own values."""
    jobs = []
    for chunk in chunks:
        last = max((p for p, c in enumerate(chunk) if alive[c]), default=None)
        if last is None:
            continue
        part = chunk[:last + 1]
        if warm_only is None:
            points = [candidates[c] for c in part]
            left: tuple[int, ...] = ()
        else:
            settings, base = warm_only
            points = [{**base, **candidates[c]} if alive[c] else {**candidates[c], **settings}
                      for c in part]
            left = tuple(p for p, c in enumerate(part) if not alive[c])
        if screening:
            points = [{**p, **screening} if alive[c] else p for p, c in zip(points, part,
                                                                             strict=True)]
        jobs.extend((k, part, points, left) for k in folds)
    return jobs


def screening_settings(estimator, candidates: list[dict]) -> dict | None:
    """``{"tol": SCREENING_TOL_FACTOR * tol}`` for the first round's fits (module docstring):
    ``None`` where the estimator has no positive ``tol``, the candidates set ``tol``
    themselves, or the screening ``tol`` would pass :data:`SCREENING_TOL_MAX`."""
    tol = estimator.get_params(deep=False).get("tol")
    if isinstance(tol, bool) or not isinstance(tol, Real) or not tol > 0:
        return None
    screen = float(tol) * SCREENING_TOL_FACTOR
    if screen > SCREENING_TOL_MAX or any("tol" in c for c in candidates):
        return None
    return {"tol": screen}


def warm_start_settings(estimator) -> tuple[dict, dict] | None:
    """``(settings, base)``: the settings under which a fit of ``estimator`` in a path serves
    only as the next fit's warm start (its ``_warm_start_settings()``) and the estimator's own
    values of them; ``None`` where it has none."""
    method = getattr(estimator, "_warm_start_settings", None)
    settings = method() if callable(method) else None
    if not settings:
        return None
    params = estimator.get_params(deep=False)
    return dict(settings), {name: params[name] for name in settings}
