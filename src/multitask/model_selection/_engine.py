"""The cross-validation engine: :func:`cross_validate_grid` scores every candidate of a grid on
every fold, the paths warm-started (also usable on its own; :class:`MultiTaskCV` runs it):

* **grid**: by default ``n_alphas`` values of ``alpha`` log-spaced from ``alpha_max`` (the
  smallest value with ``coef_ = 0``) down to ``alpha_ratio * alpha_max`` (``gamma`` and
  ``gamma_max`` for sparse + low rank; see :func:`multitask.model_selection.default_param_grid`
  for ridge-type models); an explicit ``param_grid`` for any other parameter (``C``,
  ``radius``, ``tau``, ...);
* **warm starts**: along the path parameter (``alpha``, ``gamma``, ``lam``: largest first;
  ``C``, ``radius``: smallest first), each fit starts from the previous solution of the same
  fold, when the model has ``warm_start``;
* **folds within each task**: :class:`~multitask.model_selection.TaskKFold` (stratified by
  class inside each task for classifiers) for long-format and per-task data, so every task is
  in every training fold; scikit-learn's ``KFold`` on the rows for a shared design;
* **the selection rule** (``selection``): K folds and the best mean score over folds
  (``"kfold"``), or leave-one-out within tasks scored on the out-of-fold predictions pooled
  over folds (``"loo"``); the default ``"auto"`` takes leave-one-out when the tasks are small
  (a median of at most :data:`SMALL_TASK_ROWS` rows per task), where K-fold training parts
  lose a large share of each task's rows and the choice drifts to over-regularization;
* **successive halving** (``halving``): for a grid with a second parameter, every candidate
  is scored on the first fold; the better half of the outer grid points (the values of the
  other parameters), and within them the better half of the candidates, on the second; the
  better half of those on the rest; the choice is made among the candidates scored on every
  fold
  (:mod:`~multitask.model_selection._halving`);
* **parallel** over folds and grid points with joblib (``n_jobs``), on a Dask cluster when
  ``client`` (a ``dask.distributed.Client``) is given;
* **grid widening**: when the best value of the path parameter lies at the weak end of the
  grid (or at either end of a user grid), the path is continued by a few more values with the
  same spacing, up to ``widen`` times;
* **progress**: ``callback(done, total)`` is called after each job (the library prints
  nothing otherwise).

The steps live in their own modules: the engine's view of the data (``_cv_data``), the
selection rules and folds (``_folds``), the grids and their widening (``_grids``), the rounds
of successive halving (``_halving``).
"""

from __future__ import annotations

import os
import warnings

import numpy as np
from sklearn.base import clone, is_classifier
from sklearn.exceptions import ConvergenceWarning, FitFailedWarning
from sklearn.utils import Bunch

from multitask.data import observed_mask
from multitask.data.converted_inputs import ConvertedInputs
from multitask.estimators.base import TaskStructureWarning
from multitask.estimators.estimator import MultiTaskEstimator
from multitask.model_selection._cv_data import (
    _cv_view,
    _cv_weights,
    _known_mask,
    _rows,
    _task_labels,
)
from multitask.model_selection._folds import (
    SELECTION_RULES,
    SMALL_TASK_ROWS,
    _loo_splits,
    _selection_rule,
    _splits,
    _warn_one_class_parts,
)
from multitask.model_selection._grids import (
    _grids,
    _note_held_parameters,
    _split_path,
    _validate_candidates,
    _widen,
)
from multitask.model_selection._halving import (
    fold_rounds,
    round_jobs,
    screening_settings,
    survivors,
    warm_start_settings,
)
from multitask.model_selection._path import fit_path
from multitask.model_selection._scoring import (
    get_scorer,
    ignores_missing,
    pooled_metric,
    scored_weights,
)

__all__ = ["SELECTION_RULES", "SMALL_TASK_ROWS", "cross_validate_grid"]


def cross_validate_grid(estimator, X, y, task=None, *, param_grid=None, cv=None, scoring=None,
                        n_alphas: int = 10, alpha_ratio: float = 1e-3, n_jobs=None,
                        client=None, error_score=np.nan, random_state=0, widen: int = 2,
                        callback=None, selection: str = "auto", sample_weight=None,
                        halving: bool = True) -> Bunch:
    """Score every candidate of a grid on every fold, paths warm-started (the CV engine).

    Parameters are those of :class:`MultiTaskCV` (``callback(done, total)`` after each job;
    ``sample_weight`` as in :meth:`MultiTaskCV.fit`; ``halving``: successive halving over the
    candidates of a grid with several outer points, see
    :mod:`multitask.model_selection._halving`).

    Returns
    -------
    sklearn.utils.Bunch
        ``candidates`` (list of dict), ``scores`` ``(n_splits, n_candidates)`` (per fold),
        ``mean_scores`` (the score the choice is made on: the mean over folds for
        ``"kfold"``, the pooled score for ``"loo"``), ``fit_times``, ``not_converged`` (same
        shape as ``scores``), ``selection`` (the rule applied: ``"kfold"`` or ``"loo"``),
        ``path_param`` (str or None), ``n_widened``, ``splits`` (the (train, test) indices in
        the engine's view of the data), ``n_splits_fitted`` (the folds each candidate was
        fitted on: fewer than ``n_splits`` for a candidate left behind by ``halving``, whose
        mean score is then NaN).

    Raises
    ------
    ValueError
        On an invalid grid, splitter or parameter, or when every fit failed.
    """
    _check_arguments(estimator, y, error_score, widen, selection)
    if not isinstance(halving, (bool, np.bool_)):
        raise ValueError(f"halving must be True or False, got {halving!r}.")
    grids, default = _grids(estimator, X, y, task, param_grid, n_alphas, alpha_ratio,
                            sample_weight)
    if default:
        _note_held_parameters(estimator, grids[0])
    Xcv, ycv, groups, est_cv, layout = _cv_view(estimator, X, y, task)
    wcv = _cv_weights(sample_weight, X, ycv)
    labels = _task_labels(X, y, task, groups, layout)
    note = getattr(clone(estimator), "_structure_note", lambda tasks: None)(labels)
    if note is not None:
        warnings.warn(note, TaskStructureWarning, stacklevel=3)
    scorer = get_scorer(scoring, estimator)
    rule = _selection_rule(selection, cv, scorer, groups, layout, ycv)
    if rule == "loo":
        splits = _loo_splits(Xcv, ycv, groups, layout, random_state,
                             SMALL_TASK_ROWS if selection == "auto" else None)
    else:
        splits = _splits(cv, Xcv, ycv, groups, layout, estimator, random_state)
    if is_classifier(estimator):
        _warn_one_class_parts(splits, ycv, groups, layout, labels)
    pooled = pooled_metric(scorer) if rule == "loo" else None
    warm = "warm_start" in est_cv.get_params(deep=False)
    for grid in grids:  # invalid values fail here, with the parameter's name
        _validate_candidates(est_cv, grid)
    candidates, paths, chunks, outer, path_param = _plan_jobs(grids, warm)
    runner = _Runner(est_cv, Xcv, ycv, splits, scorer if pooled is None else _Pooled(pooled[0]),
                     warm, error_score, n_jobs, client, callback, wcv)
    n_outer = int(outer.max()) + 1
    rounds = fold_rounds(len(splits), n_outer) if halving else [len(splits)]
    run = _run_and_widen(runner, chunks, candidates, paths, default, widen, pooled,
                         (splits, groups, layout), error_score, rounds, outer,
                         warm_start_settings(est_cv) if warm else None,
                         screening_settings(est_cv, candidates))
    _warn_unconverged(estimator, run.results, candidates)
    return Bunch(candidates=candidates, scores=run.scores, mean_scores=run.mean,
                 fit_times=run.fit_times, not_converged=run.not_converged,
                 path_param=path_param, n_widened=run.n_widened, splits=splits,
                 selection=rule, n_splits_fitted=run.fitted)


def _check_arguments(estimator, y, error_score, widen, selection) -> None:
    """The engine's own arguments, and the targets of a classifier: class labels (the
    observed ones when the model leaves missing targets out)."""
    if not hasattr(estimator, "fit") or not hasattr(estimator, "get_params"):
        raise ValueError(f"estimator must be a scikit-learn estimator, got {estimator!r}.")
    if error_score != "raise" and not isinstance(error_score, (int, float)):
        raise ValueError(f"error_score must be 'raise' or a number, got {error_score!r}.")
    if isinstance(widen, bool) or not isinstance(widen, (int, np.integer)) or widen < 0:
        raise ValueError(f"widen must be an integer >= 0, got {widen!r}.")
    if not isinstance(selection, str) or selection not in SELECTION_RULES:
        raise ValueError(f"selection must be one of {', '.join(map(repr, SELECTION_RULES))}, "
                         f"got {selection!r}.")
    if y is None:
        raise ValueError(f"{type(estimator).__name__} requires y to be passed, but the target y "
                         "is None.")
    if is_classifier(estimator) and not isinstance(y, (list, tuple)):
        _check_class_labels(y, ignores_missing(estimator))


def _check_class_labels(y, skip_missing: bool) -> None:
    """Refuse targets of a classifier that are not class labels (``"unknown"`` to
    scikit-learn's ``type_of_target``). With ``skip_missing`` (``missing_targets="ignore"``)
    the missing targets (NaN, ``None``) are left out first, and the observed labels of an
    object array (``0``/``1`` beside ``None``, booleans, numbers) are typed by their values, as
    the model types them."""
    from sklearn.utils.multiclass import type_of_target

    y_seen = np.asarray(y)
    if skip_missing:
        y_seen = y_seen[observed_mask(y_seen)]
        if y_seen.dtype.kind == "O" and y_seen.size:
            try:
                y_seen = np.asarray(y_seen.tolist())
            except (TypeError, ValueError):
                pass
    if y_seen.size and type_of_target(y_seen) == "unknown":
        raise ValueError("Unknown label type: the targets of a classifier must be class "
                         "labels.")


def _plan_jobs(grids: list[dict], warm: bool):
    """``(candidates, paths, chunks, outer, path_param)``: every candidate of the grids,
    the warm-started paths ``(name, candidate indices, values)``, the chunks (candidate
    indices fitted in order as one job on a fold: a whole path when warm starts apply, else
    one candidate), the outer grid point of each candidate (integers: the points of the
    parameters other than the path's, numbered over the grids) and the one path parameter
    (None when there are several or none)."""
    candidates: list[dict] = []
    paths: list[tuple[str, list[int], list]] = []
    chunks: list[list[int]] = []
    outer_of: list[int] = []
    path_names = set()
    n_outer = 0
    for grid in grids:
        path, outer = _split_path(grid, warm)
        if path is not None:
            path_names.add(path[0])
        for point in outer:
            if path is None:
                idx = [len(candidates)]
                candidates.append(dict(point))
                chunks.append(idx)
            else:
                pname, values = path
                idx = list(range(len(candidates), len(candidates) + len(values)))
                candidates.extend({**point, pname: v} for v in values)
                paths.append((pname, idx, list(values)))
                chunks.extend([idx] if warm else [[i] for i in idx])
            outer_of.extend([n_outer] * len(idx))
            n_outer += 1
    if not candidates:
        raise ValueError("param_grid holds no candidate.")
    return (candidates, paths, chunks, np.asarray(outer_of, dtype=int),
            next(iter(path_names)) if len(path_names) == 1 else None)


def _run_and_widen(runner, chunks, candidates, paths, default: bool, widen: int, pooled,
                   folds, error_score, rounds: list[int], outer: np.ndarray,
                   warm_only: tuple[dict, dict] | None = None,
                   screening: dict | None = None) -> Bunch:
    """Run the chunks on the folds in ``rounds`` (:func:`~._halving.fold_rounds`: after each
    round but the last only the best share of the outer points and candidates goes on
    (``outer``: each candidate's outer grid point), see
    :mod:`~multitask.model_selection._halving`), score the candidates (per fold, or pooled
    for leave-one-out; NaN for a candidate not fitted on every fold), and continue a path
    whose best value lies at an edge of its grid, up to ``widen`` times. ``folds`` is
    ``(splits, groups, layout)``; ``warm_only``: the estimator's warm-start settings for the
    candidates a path fits after they left the running (:func:`~._halving.round_jobs`);
    ``screening``: the settings of the first round's fits where there are several rounds
    (:func:`~._halving.screening_settings`), and of the widening's fits on the first fold."""
    splits, groups, layout = folds
    alive = np.ones(len(candidates), dtype=bool)
    results: list = []
    start = 0
    for end in rounds:
        screen = screening if start == 0 and len(rounds) > 1 else None
        results += runner.run(round_jobs(chunks, alive, range(start, end), candidates,
                                         warm_only, screen))
        start = end
        if end < len(splits):
            partial = _scores(results, folds, len(candidates), pooled, error_score)[1]
            alive = survivors(partial, alive, outer=outer)
    n_widened = 0
    while True:
        scores, mean, fit_times, not_conv = _scores(results, folds, len(candidates), pooled,
                                                    error_score)
        fitted = _fitted_folds(results, len(splits), len(candidates))
        mean = np.where(fitted == len(splits), mean, np.nan)
        if np.all(np.isnan(mean)):
            why = f" First error: {runner.first_error}" if runner.first_error else ""
            raise ValueError("Every cross-validation fit failed or gave an undefined score."
                             + why)
        if n_widened >= widen or not paths:
            break
        new_jobs = _widen(candidates, paths, mean, default, len(splits),
                          None if pooled is not None else scores)
        if not new_jobs:
            break
        if screening and len(rounds) > 1:  # the new values' first fold screens, as the rest did
            new_jobs = [(k, part, [{**p, **screening} for p in points] if k == 0 else points,
                         left) for k, part, points, left in new_jobs]
        results = results + runner.run(new_jobs)
        n_widened += 1
    return Bunch(results=results, scores=scores, mean=mean, fit_times=fit_times,
                 not_converged=not_conv, n_widened=n_widened, fitted=fitted)


def _scores(results, folds, n_cand: int, pooled, error_score):
    """``(scores, mean, fit_times, not_converged)`` of the results so far: the mean over the
    folds each candidate was fitted on, or its pooled score over them (leave-one-out)."""
    splits, groups, layout = folds
    if pooled is not None:
        return _collect_pooled(results, splits, groups, layout, n_cand, pooled[1], error_score)
    scores, fit_times, not_conv = _collect(results, len(splits), n_cand)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # failed on every fold
        mean = np.nanmean(scores, axis=0)
    return scores, mean, fit_times, not_conv


def _fitted_folds(results, n_splits: int, n_cand: int) -> np.ndarray:
    """How many folds each candidate was fitted (or failed) on, shape ``(n_cand,)``."""
    ran = np.zeros((n_splits, n_cand), dtype=bool)
    for k, cand, _ in results:
        ran[k, cand] = True
    return ran.sum(axis=0)


class _Runner:
    """Runs jobs (one fold, a list of candidates fitted in order) with joblib or Dask."""

    def __init__(self, est, X, y, splits, scorer, warm, error_score, n_jobs, client, callback,
                 weights=None):
        self.args = (est, X, y, splits, scorer, warm, error_score)
        self.weights = weights
        self.n_jobs = n_jobs
        self.client = client
        self.callback = callback
        self.first_error: str | None = None
        self.done = 0
        #: The fold whose arrays and conversions the jobs run here share (:meth:`_run_here`).
        self.fold: _Fold | None = None

    def run(self, jobs) -> list:
        from joblib import Parallel, delayed, effective_n_jobs, parallel_config

        est, X, y, splits, scorer, warm, error_score = self.args
        total = self.done + len(jobs)
        if self.client is None:
            n_jobs = max(1, min(effective_n_jobs(self.n_jobs), len(jobs), os.cpu_count() or 1))
            if n_jobs == 1:
                return self._run_here(jobs, total)
            blas = None if n_jobs == 1 else max(1, (os.cpu_count() or 1) // n_jobs)
            par = Parallel(n_jobs=n_jobs, return_as="generator_unordered")
            tasks = (delayed(_job)(k, cand, est, X, y, splits[k], points, scorer, warm,
                                   error_score, blas, left, self.weights)
                     for k, cand, points, left in jobs)
            gen = par(tasks)
            ctx = None
        else:
            blas = _client_blas_threads(self.client)
            ctx = parallel_config(backend="dask", client=self.client)
            ctx.__enter__()
            par = Parallel(n_jobs=-1 if self.n_jobs is None else self.n_jobs,
                           return_as="generator_unordered")
            gen = par(delayed(_job)(k, cand, est, X, y, splits[k], points, scorer, warm,
                                    error_score, blas, left, self.weights)
                      for k, cand, points, left in jobs)
        out = []
        try:
            for item in gen:
                out.append(item)
                self._record(item, total)
        finally:
            if ctx is not None:
                ctx.__exit__(None, None, None)
        return out

    def _record(self, item, total: int) -> None:
        """Note a finished job: its first error, the progress callback."""
        for _, _, _, err in item[2]:
            self.first_error = self.first_error or err
        self.done += 1
        if self.callback is not None:
            self.callback(self.done, total)

    def _run_here(self, jobs, total: int) -> list:
        """The jobs in this process, fold after fold (the results in the order of ``jobs``):
        the paths of a multi-task model on one fold share its training arrays and their
        conversion (:class:`_Fold`), so the per-data work of the fits (centring, Gram
        matrices, eigendecompositions) is done once per fold; one fold is held at a time, the
        last one into the next run (a round of halving, a widening), which starts with it.
        Another estimator (a Pipeline) gets the arrays of each job, as in parallel."""
        est, X, y, splits, scorer, warm, error_score = self.args
        shared = isinstance(est, MultiTaskEstimator)
        out: list = [None] * len(jobs)
        held = -1 if self.fold is None else self.fold.k  # kept from the last run: first
        for i in sorted(range(len(jobs)), key=lambda i: (jobs[i][0] != held, jobs[i][0])):
            k, cand, points, left = jobs[i]
            if shared and (self.fold is None or self.fold.k != k):
                self.fold = None  # the previous fold's arrays go before the next are made
                self.fold = _Fold(k, X, y, self.weights, splits[k])
            out[i] = _job(k, cand, est, X, y, splits[k], points, scorer, warm, error_score,
                          None, left, self.weights, fold=self.fold if shared else None)
            self._record(out[i], total)
        return out


class _Fold:
    """The training rows of fold ``k`` in the engine's view of the data (and their weights)
    and their conversions (:class:`~multitask.data.converted_inputs.ConvertedInputs`),
    shared by every path of a multi-task model fitted on the fold in one process (the
    library's models do not write to their input; the test rows, which a scorer receives,
    are each job's own)."""

    def __init__(self, k: int, X, y, w, split):
        train = split[0]
        self.k = k
        self.Xtr, self.ytr = _rows(X, train), y[train]
        self.wtr = None if w is None else w[train]
        self.converted = ConvertedInputs(size=1)


def _collect(results, n_splits: int, n_cand: int):
    scores = np.full((n_splits, n_cand), np.nan)
    fit_times = np.zeros((n_splits, n_cand))
    not_conv = np.zeros((n_splits, n_cand), dtype=np.int64)
    for k, cand, out in results:
        for i, (sc, ft, conv, _err) in zip(cand, out, strict=True):
            scores[k, i] = sc
            fit_times[k, i] = ft
            not_conv[k, i] = int(not conv)
    return scores, fit_times, not_conv


class _Pooled:
    """What a job keeps of each fit for pooled scoring: the out-of-fold values of ``method``
    on the test rows whose task the model knows, their targets and their weights (with the
    missing targets at zero; None without weights or missing targets)."""

    def __init__(self, method: str):
        self.method = method

    def values(self, fitted, X, y, w=None):
        known = _known_mask(fitted, X)
        if known is not None:
            idx = np.flatnonzero(known)
            X, y = X[idx], y[idx]
            w = None if w is None else w[idx]
        w = scored_weights(fitted, y, w)
        if y.shape[0] == 0:
            return known, np.zeros(0), y, w
        return known, np.asarray(getattr(fitted, self.method)(X), dtype=np.float64), y, w


def _collect_pooled(results, splits, groups, layout: str, n_cand: int, metric, error_score):
    """``(scores, pooled, fit_times, not_converged)`` from jobs that kept out-of-fold values.

    ``pooled[i]`` is ``metric`` on the out-of-fold values of candidate ``i`` from every fold
    together; ``scores[k, i]`` is ``metric`` on fold ``k`` alone (NaN where it is undefined,
    e.g. a task AUC on one row per task). A fit that failed records ``error_score`` for its
    fold; its candidate's pooled score is then ``error_score`` too, unless that is NaN (the
    default): the rows of the folds that fitted are pooled, as K-fold averages the folds
    that fitted.
    """
    n_splits = len(splits)
    scores = np.full((n_splits, n_cand), np.nan)
    fit_times = np.zeros((n_splits, n_cand))
    not_conv = np.zeros((n_splits, n_cand), dtype=np.int64)
    parts: list[list] = [[] for _ in range(n_cand)]
    failed = np.zeros(n_cand, dtype=bool)
    for k, cand, out in results:
        test = splits[k][1]
        for i, (kept, ft, conv, err) in zip(cand, out, strict=True):
            fit_times[k, i] = ft
            not_conv[k, i] = int(not conv)
            if err is not None or not isinstance(kept, tuple):
                scores[k, i] = float(error_score)
                failed[i] = True
                continue
            known, vals, ys, ws = kept
            rows = test if known is None else test[np.asarray(known, dtype=bool)]
            task = groups[rows] if layout == "long" else None
            parts[i].append((vals, ys, task, ws))
            scores[k, i] = _safe_metric(metric, ys, vals, task, ws)
    pooled = np.full(n_cand, np.nan)
    for i, got in enumerate(parts):
        if failed[i] and not np.isnan(float(error_score)):
            pooled[i] = float(error_score)
        elif got:
            vals = np.concatenate([g[0] for g in got])
            ys = np.concatenate([g[1] for g in got])
            task = None if layout != "long" else np.concatenate([g[2] for g in got])
            ws = None
            if any(g[3] is not None for g in got):  # weights (or missing targets) somewhere
                ws = np.concatenate([np.ones(np.shape(g[1])) if g[3] is None else g[3]
                                     for g in got])
            pooled[i] = _safe_metric(metric, ys, vals, task, ws)
    return scores, pooled, fit_times, not_conv


def _safe_metric(metric, y, values, task, w=None) -> float:
    """``metric(y, values, task, sample_weight=w)``, NaN where it is undefined (too few rows
    or classes)."""
    if y.shape[0] == 0:
        return np.nan
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = float(metric(y, values, task, sample_weight=w))
    except (ValueError, ZeroDivisionError, FloatingPointError):
        return np.nan
    return value if np.isfinite(value) else np.nan


def _client_blas_threads(client) -> int:
    """BLAS threads per job on a Dask cluster so that workers x threads <= cores."""
    cores = os.cpu_count() or 1
    try:
        workers = sum(client.nthreads().values())
    except Exception:  # noqa: BLE001 - a client that cannot answer: be conservative
        workers = cores
    return max(1, cores // max(workers, 1))


def _job(k, cand, est, X, y, split, points, scorer, warm, error_score, blas,
         left_out: tuple[int, ...] = (), w=None, fold: _Fold | None = None):
    """One job: the path of fold ``k`` over the candidates ``cand``; returns them tagged.

    The candidates at the positions ``left_out`` are fitted only to warm-start the others (a
    widening anchor, already scored; a candidate no longer in the running, fitted with the
    estimator's warm-start settings: :func:`~._halving.round_jobs`): they are not scored and
    are left out of the result. ``w``: the row weights of the engine's view of the data (None
    without), split with the rows. ``fold``: the fold's arrays and conversions shared with
    other jobs on it (:class:`_Fold`); made here when None.
    """
    from threadpoolctl import threadpool_limits

    if fold is None:
        fold = _Fold(k, X, y, w, split)
    test = split[1]
    Xtr, ytr, wtr = fold.Xtr, fold.ytr, fold.wtr
    Xte, yte = _rows(X, test), y[test]
    wte = None if w is None else w[test]

    unscored_at = set(left_out)
    unscored = {id(points[i]) for i in unscored_at}

    def score(fitted, point):
        if id(point) in unscored:
            return np.nan
        if isinstance(scorer, _Pooled):
            return scorer.values(fitted, Xte, yte, wte)
        known = _known_mask(fitted, Xte)
        Xs, ys, ws = Xte, yte, wte
        if known is not None:
            rows = np.flatnonzero(known)
            Xs, ys, ws = Xte[rows], yte[rows], None if wte is None else wte[rows]
        if not ys.shape[0]:
            return np.nan
        return float(scorer(fitted, Xs, ys, **_weight_kw(ws)))

    limiter = threadpool_limits(blas) if blas is not None else None
    try:
        fits = fit_path(est, Xtr, ytr, points, warm=warm, on_fit=score, sample_weight=wtr,
                        converted=fold.converted)
    finally:
        if limiter is not None:
            limiter.restore_original_limits()
    out = []
    for point, (sc, ft, conv, err) in zip(points, fits, strict=True):
        if err is not None:
            if error_score == "raise":
                raise ValueError(f"Fit failed for {point}: {err}")
            warnings.warn(f"Fit failed for {point}: {err}", FitFailedWarning, stacklevel=2)
            out.append((float(error_score), ft, False, err))
        else:
            out.append((sc, ft, conv, None))
    if left_out:
        kept = [i for i in range(len(cand)) if i not in unscored_at]
        return k, [cand[i] for i in kept], [out[i] for i in kept]
    return k, cand, out


def _weight_kw(sample_weight) -> dict:
    """``{"sample_weight": w}``, or nothing without weights (callables and estimators that
    take none keep working)."""
    return {} if sample_weight is None else {"sample_weight": sample_weight}


def _warn_unconverged(estimator, results, candidates) -> None:
    """One :class:`ConvergenceWarning` with the counts of CV fits whose ``converged_`` is
    False (failed fits apart: they give a ``FitFailedWarning``)."""
    n_fits = n_bad = 0
    bad_cand: set[int] = set()
    for _, cand, out in results:
        for i, (_, _, conv, err) in zip(cand, out, strict=True):
            if err is not None:
                continue
            n_fits += 1
            if not conv:
                n_bad += 1
                bad_cand.add(i)
    if not n_bad:
        return
    name = type(estimator).__name__
    params = estimator.get_params(deep=False)
    budget = f"max_iter={params['max_iter']!r}" if "max_iter" in params else "its budget"
    first = ", ".join(f"{k}={v:.3g}" if isinstance(v, (float, np.floating)) else f"{k}={v!r}"
                      for k, v in candidates[min(bad_cand)].items())
    warnings.warn(
        f"{n_bad} of {n_fits} cross-validation fits of {name} did not converge (converged_ "
        f"is False: the solver's stopping rule at tol was not met within {budget}), in "
        f"{len(bad_cand)} of {len(candidates)} candidates (first: {first}); their scores may "
        "be off. Raise max_iter or tol; cv_results_['n_not_converged'] counts them per "
        "candidate.", ConvergenceWarning, stacklevel=3)

