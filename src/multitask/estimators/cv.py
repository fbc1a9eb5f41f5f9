"""Cross-validated form of every multi-task model: :class:`MultiTaskCV`.

``MultiTaskCV(estimator)`` selects the hyper-parameters of any model of the library by
K-fold cross-validation and refits it on all the data:

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
* **parallel** over folds and grid points with joblib (``n_jobs``), on a Dask cluster when
  ``client`` (a ``dask.distributed.Client``) is given;
* **progress**: ``verbose`` prints one line per finished job to stderr, ``callback(done,
  total)`` is called after each (the library prints nothing otherwise).

The scores of every fold and grid point are kept in ``cv_results_`` (the layout of
scikit-learn's ``GridSearchCV``), the choice in ``best_params_`` and the refitted model in
``best_estimator_``, to which ``predict``, ``decision_function``, ``predict_proba`` and
``score`` are delegated.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from itertools import product

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier
from sklearn.exceptions import ConvergenceWarning, FitFailedWarning
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from multitask.estimators.base import is_task_list
from multitask.model_selection import (
    PATH_PARAMETERS,
    TaskKFold,
    default_param_grid,
    get_scorer,
)

__all__ = ["MultiTaskCV"]


def _estimator_has(attr: str) -> Callable:
    """``available_if`` check: the fitted (or, before fit, the given) estimator has ``attr``."""

    def check(self) -> bool:
        est = getattr(self, "best_estimator_", self.estimator)
        return hasattr(est, attr)

    return check


class MultiTaskCV(MetaEstimatorMixin, BaseEstimator):
    """Cross-validated multi-task model: grid, warm-started paths, folds within tasks.

    Parameters
    ----------
    estimator : multi-task estimator
        The model to tune (any estimator of :mod:`multitask.estimators`), with its other
        parameters set.
    param_grid : dict or list of dict, optional
        ``{name: values}`` (or a list of such dicts, searched one after the other). The
        parameter of :data:`~multitask.model_selection.PATH_PARAMETERS` with the most values
        (``alpha``, ``gamma``, ``lam``, ``C``, ``radius``) is the path, run with warm starts
        from the strongest regularization; the others form an outer grid. Default: a grid of
        ``alpha`` (or ``gamma``) relative to its largest useful value
        (:func:`~multitask.model_selection.default_param_grid`).
    cv : int, splitter or iterable of (train, test), optional
        Default 5 folds: :class:`~multitask.model_selection.TaskKFold` (stratified for
        classifiers) within each task for long-format and per-task data, ``KFold`` on the rows
        for a shared design (``StratifiedKFold`` for a single classification task). An
        integer gives that many such folds. A splitter gets ``groups`` = the task of each row.
    scoring : None, str or callable, optional
        ``None``: ``-nMSE`` (pooled) for regressors, mean per-task ROC AUC for classifiers.
        See :func:`~multitask.model_selection.get_scorer`. Greater is better.
    n_alphas : int, default=10
        Size of the default grid.
    alpha_ratio : float, default=1e-3
        Smallest / largest value of the default grid.
    n_jobs : int, optional
        Parallel jobs (joblib convention: ``None`` is 1, ``-1`` all cores). With a ``client``,
        the default is all the cluster's worker threads.
    client : dask.distributed.Client, optional
        Run the jobs on this Dask cluster (joblib's dask backend). It is not cloned (the same
        client is shared) and not pickled (``None`` after unpickling).
    verbose : bool or int, default=False
        Print a line to stderr after each finished job.
    callback : callable, optional
        ``callback(done, total)`` after each finished job (a job is one fold and one outer
        grid point, running the whole path when warm starts apply). Not pickled.
    refit : bool, default=True
        Refit the best parameters on all the data (needed for ``predict``).
    error_score : "raise" or float, default=np.nan
        Score recorded when a fit fails (with a ``FitFailedWarning``); ``"raise"`` re-raises.
    random_state : int or None, default=0
        Seed of the default folds.

    Attributes
    ----------
    best_params_ : dict
        The chosen parameters (best mean score over folds; ties go to the strongest
        regularization).
    best_score_ : float
        Mean cross-validated score of ``best_params_``.
    best_index_ : int
        Index of ``best_params_`` in ``cv_results_["params"]``.
    best_estimator_ : estimator
        ``clone(estimator)`` with ``best_params_``, fitted on all the data (``refit=True``).
    cv_results_ : dict of ndarray
        ``"params"`` (list of dict, one per candidate), ``"param_<name>"``,
        ``"split<k>_test_score"`` (one array per fold, shape ``(n_candidates,)``),
        ``"mean_test_score"``, ``"std_test_score"``, ``"rank_test_score"``,
        ``"mean_fit_time"`` (seconds per fit, averaged over folds), ``"n_not_converged"``
        (folds whose solver reached ``max_iter``).
    scores_ : ndarray of shape (n_splits, n_candidates)
        The test scores again, as one array.
    path_param_ : str or None
        The parameter run with warm starts.
    n_splits_ : int
    refit_time_ : float
    coef_, intercept_, tasks_, classes_ : from ``best_estimator_``

    Examples
    --------
    >>> from multitask import L21Regressor, MultiTaskCV
    >>> from multitask.datasets import load_school
    >>> school = load_school()
    >>> cv = MultiTaskCV(L21Regressor(), n_alphas=5).fit(school.X[:20], school.y[:20])
    >>> sorted(cv.best_params_)
    ['alpha']
    """

    def __init__(self, estimator, param_grid=None, cv=None, scoring=None, n_alphas=10,
                 alpha_ratio=1e-3, n_jobs=None, client=None, verbose=False, callback=None,
                 refit=True, error_score=np.nan, random_state=0):
        self.estimator = estimator
        self.param_grid = param_grid
        self.cv = cv
        self.scoring = scoring
        self.n_alphas = n_alphas
        self.alpha_ratio = alpha_ratio
        self.n_jobs = n_jobs
        self.client = client
        self.verbose = verbose
        self.callback = callback
        self.refit = refit
        self.error_score = error_score
        self.random_state = random_state

    # ------------------------------------------------------------------ sklearn plumbing
    def __sklearn_clone__(self):
        # a dask Client cannot be deep-copied: share it, clone everything else
        params = self.get_params(deep=False)
        client = params.pop("client")
        new = type(self)(**{k: clone(v, safe=False) for k, v in params.items()})
        new.client = client
        return new

    def __getstate__(self):
        # a live cluster connection and a progress hook are not part of the model
        state = self.__dict__.copy()
        state["client"] = None
        state["callback"] = None
        return state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        from sklearn.utils import get_tags

        inner = get_tags(self.estimator)
        tags.estimator_type = inner.estimator_type
        tags.classifier_tags = inner.classifier_tags
        tags.regressor_tags = inner.regressor_tags
        tags.target_tags = inner.target_tags
        tags.input_tags.sparse = inner.input_tags.sparse
        return tags

    # ------------------------------------------------------------------ fit
    def fit(self, X, y, task=None):
        """Cross-validate every candidate, choose the best, refit it on all the data.

        Parameters
        ----------
        X : array-like (n, d), sparse matrix, or list of per-task arrays
            Any of the three formats (with ``task`` or ``estimator.task_column`` for long
            format).
        y : array-like (n,), (n, m), or list of per-task arrays
        task : array-like (n,), optional
            Task id of each row (long format).

        Returns
        -------
        self
        """
        base = self.estimator
        if not hasattr(base, "fit") or not hasattr(base, "get_params"):
            raise ValueError(f"estimator must be a scikit-learn estimator, got {base!r}.")
        if self.error_score != "raise" and not isinstance(self.error_score, (int, float)):
            raise ValueError(f"error_score must be 'raise' or a number, got "
                             f"{self.error_score!r}.")
        grids = self._grids(X, y, task)
        Xcv, ycv, groups, est_cv, layout = _cv_view(base, X, y, task)
        splits = self._splits(Xcv, ycv, groups, layout, base)
        scorer = get_scorer(self.scoring, base)
        warm = "warm_start" in est_cv.get_params(deep=False)

        # candidates: (outer point, path value) in the order of the jobs
        candidates: list[dict] = []
        jobs: list[tuple[int, list[int]]] = []  # (fold, candidate indices run in order)
        path_names = set()
        for grid in grids:
            path, outer = _split_path(grid, warm)
            if path is not None:
                path_names.add(path[0])
            for point in outer:
                if path is None:
                    idx = [len(candidates)]
                    candidates.append(dict(point))
                    chunks = [idx]
                else:
                    name, values = path
                    idx = list(range(len(candidates), len(candidates) + len(values)))
                    candidates.extend({**point, name: v} for v in values)
                    chunks = [idx] if warm else [[i] for i in idx]
                for k in range(len(splits)):
                    jobs.extend((k, c) for c in chunks)
        if not candidates:
            raise ValueError("param_grid holds no candidate.")
        self.path_param_ = next(iter(path_names)) if len(path_names) == 1 else None

        n_jobs = self.n_jobs
        blas = _blas_threads(n_jobs, self.client)
        error_score = self.error_score

        tasks = [
            (k, cand, est_cv, Xcv, ycv, splits[k][0], splits[k][1],
             [candidates[i] for i in cand], scorer, warm, error_score, blas)
            for k, cand in jobs
        ]
        n_splits = len(splits)
        scores = np.full((n_splits, len(candidates)), np.nan)
        fit_times = np.zeros((n_splits, len(candidates)))
        not_conv = np.zeros((n_splits, len(candidates)), dtype=np.int64)
        total = len(jobs)
        t0 = time.perf_counter()
        done = 0
        first_error = None
        for k, cand, out in self._parallel(tasks, n_jobs):
            for i, (s, ft, conv, err) in zip(cand, out, strict=True):
                scores[k, i] = s
                fit_times[k, i] = ft
                not_conv[k, i] = int(not conv)
                first_error = first_error or err
            done += 1
            self._report(done, total, t0)
        failed = np.isnan(scores)
        if failed.all():
            why = f" First error: {first_error}" if first_error else ""
            raise ValueError("Every cross-validation fit failed or gave an undefined score."
                             + why)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # candidates failed on every fold
            mean = np.nanmean(scores, axis=0)
        mean_filled = np.where(np.isnan(mean), -np.inf, mean)
        best = int(np.argmax(mean_filled))
        self.scores_ = scores
        self.n_splits_ = n_splits
        self.best_index_ = best
        self.best_params_ = dict(candidates[best])
        self.best_score_ = float(mean[best])
        self.cv_results_ = _results(candidates, scores, fit_times, not_conv)
        if self.refit:
            t1 = time.perf_counter()
            est = clone(base).set_params(**self.best_params_)
            self.best_estimator_ = est.fit(X, y, task) if task is not None else est.fit(X, y)
            self.refit_time_ = time.perf_counter() - t1
            for attr in ("n_features_in_", "feature_names_in_"):
                if hasattr(self.best_estimator_, attr):
                    setattr(self, attr, getattr(self.best_estimator_, attr))
        return self

    # ------------------------------------------------------------------ helpers of fit
    def _grids(self, X, y, task) -> list[dict]:
        pg = self.param_grid
        if pg is None:
            grid = default_param_grid(self.estimator, X, y, task, n_alphas=self.n_alphas,
                                      alpha_ratio=self.alpha_ratio)
            return [{k: list(v) for k, v in grid.items()}]
        grids = [pg] if isinstance(pg, Mapping) else list(pg)
        if not grids or not all(isinstance(g, Mapping) for g in grids):
            raise ValueError("param_grid must be a dict {name: values} or a list of such dicts.")
        valid = self.estimator.get_params(deep=True)
        out = []
        for g in grids:
            clean = {}
            for name, values in g.items():
                if name not in valid:
                    raise ValueError(f"param_grid names {name!r}, which is not a parameter of "
                                     f"{type(self.estimator).__name__}.")
                if isinstance(values, str) or not isinstance(values, (Sequence, np.ndarray)):
                    raise ValueError(f"param_grid[{name!r}] must be a list of values, got "
                                     f"{values!r}.")
                values = list(values)
                if not values:
                    raise ValueError(f"param_grid[{name!r}] is empty.")
                clean[name] = values
            out.append(clean)
        return out

    def _splits(self, X, y, groups, layout: str, base) -> list[tuple[np.ndarray, np.ndarray]]:
        cv = 5 if self.cv is None else self.cv
        classifier = is_classifier(base)
        if isinstance(cv, (int, np.integer)) and not isinstance(cv, bool):
            if cv < 2:
                raise ValueError(f"cv must be at least 2 folds, got {cv}.")
            if layout == "long":
                cv = TaskKFold(int(cv), task_column=-1, stratify=classifier,
                               random_state=self.random_state)
            elif layout == "single" and classifier:
                cv = StratifiedKFold(int(cv), shuffle=True, random_state=self.random_state)
            else:
                cv = KFold(int(cv), shuffle=True, random_state=self.random_state)
        if hasattr(cv, "split"):
            splits = list(cv.split(X, y, groups))
        else:
            splits = list(cv)
        if not splits:
            raise ValueError("cv produced no split.")
        return [(np.asarray(tr), np.asarray(te)) for tr, te in splits]

    def _parallel(self, tasks, n_jobs):
        """Run the jobs with joblib (on the Dask cluster with a client), yielding results as
        they finish."""
        from joblib import Parallel, delayed, parallel_config

        if self.client is None:
            par = Parallel(n_jobs=n_jobs, return_as="generator_unordered")
            yield from par(delayed(_job)(*t) for t in tasks)
            return
        with parallel_config(backend="dask", client=self.client):
            par = Parallel(n_jobs=-1 if n_jobs is None else n_jobs,
                           return_as="generator_unordered")
            yield from par(delayed(_job)(*t) for t in tasks)

    def _report(self, done: int, total: int, t0: float) -> None:
        if self.callback is not None:
            self.callback(done, total)
        if self.verbose:
            el = time.perf_counter() - t0
            name = type(self.estimator).__name__
            print(f"[MultiTaskCV {name}] {done}/{total} jobs done, {el:.1f} s", file=sys.stderr,
                  flush=True)

    # ------------------------------------------------------------------ delegation
    def _check(self):
        check_is_fitted(self, "best_params_")
        if not hasattr(self, "best_estimator_"):
            raise AttributeError("refit=False: there is no best_estimator_ to predict with.")
        return self.best_estimator_

    def predict(self, X, task=None):
        """``best_estimator_.predict`` (the layout of the training input)."""
        return self._check().predict(X, task) if task is not None else self._check().predict(X)

    @available_if(_estimator_has("decision_function"))
    def decision_function(self, X, task=None):
        """``best_estimator_.decision_function``."""
        est = self._check()
        return est.decision_function(X, task) if task is not None else est.decision_function(X)

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X, task=None):
        """``best_estimator_.predict_proba``."""
        est = self._check()
        return est.predict_proba(X, task) if task is not None else est.predict_proba(X)

    def score(self, X, y, task=None):
        """``best_estimator_.score`` (R^2 for regressors, accuracy for classifiers)."""
        est = self._check()
        return est.score(X, y, task) if task is not None else est.score(X, y)

    @property
    def coef_(self):
        """``best_estimator_.coef_``, shape ``(n_tasks, n_features)``."""
        return self._check().coef_

    @property
    def intercept_(self):
        """``best_estimator_.intercept_``, shape ``(n_tasks,)``."""
        return self._check().intercept_

    @property
    def tasks_(self):
        """``best_estimator_.tasks_``."""
        return self._check().tasks_

    @property
    def classes_(self):
        """``best_estimator_.classes_`` (classifiers)."""
        return self._check().classes_


# ----------------------------------------------------------------------------- internals
def _cv_view(base, X, y, task):
    """Data in a form scikit-learn splitters and scorers handle, and the estimator for it.

    Returns ``(X, y, groups, estimator, layout)``. Per-task lists and ``task=`` input become
    long format with integer task codes appended as the last column of ``X`` (the estimator
    gets ``task_column=-1``); long format with ``task_column`` is used as is; a shared design
    (2-D ``y``) and a single task are split on rows.
    """
    est = clone(base)
    params = est.get_params(deep=False)
    if is_task_list(X):
        if task is not None:
            raise ValueError("Pass either lists of per-task arrays or task=, not both.")
        if not isinstance(y, (list, tuple)) or len(y) != len(X):
            raise ValueError(f"With a list of {len(X)} per-task designs, y must be a list of "
                             f"{len(X)} per-task targets.")
        codes = np.concatenate([np.full(Xt.shape[0], t) for t, Xt in enumerate(X)])
        Xs = sp.vstack(X, format="csr") if any(sp.issparse(a) for a in X) else np.vstack(
            [np.asarray(a) for a in X])
        ys = np.concatenate([np.asarray(v) for v in y])
        return _append_codes(Xs, codes), ys, codes, _with_task_column(est, params), "long"
    if task is not None:
        if params.get("task_column") is not None:
            raise ValueError("Pass task ids either as task= or through task_column, not both.")
        task = np.asarray(task)
        Xs = X if sp.issparse(X) else np.asarray(X)
        if task.ndim != 1 or Xs.ndim != 2 or task.shape[0] != Xs.shape[0]:
            raise ValueError(f"task must be 1-D with one id per row of X ({Xs.shape[0]}), got "
                             f"shape {task.shape}.")
        _, codes = np.unique(task, return_inverse=True)
        return (_append_codes(Xs, codes), np.asarray(y), codes,
                _with_task_column(est, params), "long")
    y_arr = np.asarray(y)
    if params.get("task_column") is not None:
        from multitask.data import split_task_column

        Xa = X if sp.issparse(X) else np.asarray(X)
        _, tids = split_task_column(Xa, params["task_column"])
        return Xa, y_arr, tids, est, "long"
    Xa = X if sp.issparse(X) else np.asarray(X)
    layout = "shared" if y_arr.ndim == 2 and y_arr.shape[1] > 1 else "single"
    return Xa, y_arr, None, est, layout


def _append_codes(X, codes):
    col = np.asarray(codes, dtype=np.float64)[:, None]
    if sp.issparse(X):
        return sp.hstack([X, sp.csr_matrix(col)], format="csr")
    return np.hstack([np.asarray(X, dtype=np.float64), col])


def _with_task_column(est, params):
    if "task_column" not in params:
        raise ValueError(f"{type(est).__name__} has no task_column parameter: pass a shared "
                         "design or per-task lists it accepts.")
    return est.set_params(task_column=-1)


def _split_path(grid: dict, warm: bool):
    """``(path, outer)``: the warm-start path ``(name, ordered values)`` and the outer points."""
    names = [n for n in grid if n in PATH_PARAMETERS and len(grid[n]) > 1]
    path = None
    if names:
        name = max(names, key=lambda n: len(grid[n]))
        values = list(grid[name])
        try:
            values = sorted(values, reverse=PATH_PARAMETERS[name] == "decreasing")
        except TypeError:
            pass
        path = (name, values)
    rest = {k: v for k, v in grid.items() if path is None or k != path[0]}
    keys = list(rest)
    outer = [dict(zip(keys, combo, strict=True)) for combo in product(*(rest[k] for k in keys))]
    return path, outer


def _blas_threads(n_jobs, client) -> int | None:
    """BLAS threads per job so that workers x threads <= cores (None: leave as is)."""
    cores = os.cpu_count() or 1
    if client is not None:
        try:
            workers = sum(client.nthreads().values())
        except Exception:  # noqa: BLE001 - a client that cannot answer: be conservative
            workers = cores
        return max(1, cores // max(workers, 1))
    if n_jobs is None or n_jobs == 1:
        return None
    from joblib import effective_n_jobs

    return max(1, cores // max(effective_n_jobs(n_jobs), 1))


def _job(k, cand, est, X, y, train, test, points, scorer, warm, error_score, blas):
    """One job: the path of fold ``k`` over the candidates ``cand``; returns them tagged."""
    return k, cand, _fit_path(est, X, y, train, test, points, scorer, warm, error_score, blas)


def _fit_path(est, X, y, train, test, points, scorer, warm, error_score, blas):
    """Fit ``points`` in order on ``train`` (warm-started), score each on ``test``.

    Returns a list of ``(score, fit_seconds, converged, error message or None)``. Held-out
    rows of tasks absent from the training part (possible when a task has fewer rows than
    folds) are not scored.
    """
    from threadpoolctl import threadpool_limits

    est = clone(est)
    if warm:
        est.set_params(warm_start=True)
    Xtr, Xte = _rows(X, train), _rows(X, test)
    ytr, yte = y[train], y[test]
    out = []
    limiter = threadpool_limits(blas) if blas is not None else None
    try:
        for point in points:
            t0 = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    est.set_params(**point)
                    est.fit(Xtr, ytr)
                ft = time.perf_counter() - t0
                Xs, ys = _known_task_rows(est, Xte, yte)
                score = float(scorer(est, Xs, ys)) if ys.shape[0] else np.nan
                conv = bool(getattr(est, "converged_", True))
            except Exception as exc:
                if error_score == "raise":
                    raise
                msg = f"{type(exc).__name__}: {exc}"
                warnings.warn(f"Fit failed for {point}: {msg}", FitFailedWarning, stacklevel=2)
                est = clone(est)  # do not warm-start from a failed fit
                if warm:
                    est.set_params(warm_start=True)
                out.append((float(error_score), time.perf_counter() - t0, False, msg))
                continue
            out.append((score, ft, conv, None))
    finally:
        if limiter is not None:
            limiter.restore_original_limits()
    return out


def _rows(X, idx):
    return X[idx]


def _known_task_rows(est, X, y):
    """Rows of ``X, y`` whose task the fitted ``est`` knows (long format with task_column)."""
    tc = getattr(est, "task_column", None)
    if tc is None or not hasattr(est, "tasks_"):
        return X, y
    from multitask.data import split_task_column

    _, tids = split_task_column(X, tc)
    known = np.isin(tids, np.asarray(est.tasks_))
    if known.all():
        return X, y
    return X[np.flatnonzero(known)], y[known]


def _results(candidates, scores, fit_times, not_conv) -> dict:
    n_splits, n_cand = scores.shape
    res: dict = {"params": [dict(c) for c in candidates]}
    names = sorted({k for c in candidates for k in c})
    for name in names:
        col = np.ma.masked_all(n_cand, dtype=object)
        for i, c in enumerate(candidates):
            if name in c:
                col[i] = c[name]
        res[f"param_{name}"] = col
    for k in range(n_splits):
        res[f"split{k}_test_score"] = scores[k].copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN candidates
        mean = np.nanmean(scores, axis=0)
        std = np.nanstd(scores, axis=0)
    res["mean_test_score"] = mean
    res["std_test_score"] = std
    order = np.argsort(-np.where(np.isnan(mean), -np.inf, mean), kind="stable")
    rank = np.empty(n_cand, dtype=np.int32)
    rank[order] = np.arange(1, n_cand + 1)
    res["rank_test_score"] = rank
    res["mean_fit_time"] = fit_times.mean(axis=0)
    res["n_not_converged"] = not_conv.sum(axis=0)
    return res
