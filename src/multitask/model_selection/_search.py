"""The cross-validation engine and :class:`MultiTaskCV`, the cross-validated form of every model.

:func:`cross_validate_grid` scores every candidate of a grid on every fold (the engine, also
usable on its own); ``MultiTaskCV(estimator)`` runs it, chooses the best candidate and refits
it on all the data:

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
* **parallel** over folds and grid points with joblib (``n_jobs``), on a Dask cluster when
  ``client`` (a ``dask.distributed.Client``) is given;
* **grid widening**: when the best value of the path parameter lies at the weak end of the
  grid (or at either end of a user grid), the path is continued by a few more values with the
  same spacing, up to ``widen`` times;
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
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier
from sklearn.exceptions import ConvergenceWarning, FitFailedWarning
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.utils import Bunch
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from multitask.data import observed_mask, split_task_column
from multitask.estimators.base import TaskStructureWarning, check_renamed
from multitask.estimators.fitted_state import Fitted, check_fitted_state, fitted_declaration
from multitask.model_selection._path import PATH_PARAMETERS, default_param_grid, fit_path
from multitask.model_selection._scoring import (
    get_scorer,
    ignores_missing,
    pooled_metric,
    scored_weights,
)
from multitask.model_selection._split import TaskKFold, label_codes

__all__ = ["SELECTION_RULES", "SMALL_TASK_ROWS", "MultiTaskCV", "cross_validate_grid"]

#: Largest accepted ``n_alphas`` of :class:`MultiTaskCV` (a grid beyond it is a mistake).
MAX_GRID_SIZE = 100_000

#: The selection rules of :class:`MultiTaskCV` and :func:`cross_validate_grid`.
SELECTION_RULES = ("auto", "kfold", "loo")

#: ``selection="auto"`` leaves one row of each task out per fold when the median task has at
#: most this many rows (tasks with more rows are then split in this many folds). Chosen by
#: ``benchmarks/bench_small_tasks.py``.
SMALL_TASK_ROWS = 16


def is_task_list(X) -> bool:
    """Whether ``X`` is a list of per-task designs (a list of 2-D blocks)."""
    return (isinstance(X, (list, tuple)) and len(X) > 0
            and all(sp.issparse(x) or np.ndim(x) == 2 for x in X))


def _estimator_has(attr: str) -> Callable:
    """``available_if`` check: the fitted (or, before fit, the given) estimator has ``attr``."""

    def check(self) -> bool:
        est = getattr(self, "best_estimator_", self.estimator)
        return hasattr(est, attr)

    return check


def _split_scores(search, scores, sizes) -> str | None:
    """Row ``k`` of ``scores_`` is ``cv_results_["split<k>_test_score"]`` (NaN for a failed
    fit, in both)."""
    results = search.cv_results_ if isinstance(search.cv_results_, dict) else {}
    for k, row in enumerate(scores):
        given = results.get(f"split{k}_test_score")
        if not (isinstance(given, np.ndarray) and given.shape == row.shape
                and np.array_equal(given, row, equal_nan=True)):
            return f"row {k} is not cv_results_['split{k}_test_score']"
    return None


def _best_score(search, value, sizes) -> str | None:
    """``best_score_`` is the mean test score of ``best_index_`` in ``cv_results_``."""
    mean = search.cv_results_.get("mean_test_score") if isinstance(search.cv_results_,
                                                                    dict) else None
    try:
        same = float(np.asarray(mean)[search.best_index_]) == value
    except (TypeError, ValueError, IndexError):
        return "cannot be found in cv_results_['mean_test_score']"
    return None if same else "is not cv_results_['mean_test_score'][best_index_]"


def _refitted_model(search, model, sizes) -> str | None:
    """The ``check`` of ``MultiTaskCV.best_estimator_`` in a model file: a fitted model of the
    tuned model's class that passes its own declaration, with the search's feature count."""
    tuned = type(search.estimator)
    if type(model) is not tuned:
        return f"must be a {tuned.__name__} (the tuned model), got a {type(model).__name__}"
    check_fitted_state(model, where="best_estimator_: ")
    d = sizes.get("d")
    if d is not None and getattr(model, "n_features_in_", None) != d:
        return f"has {getattr(model, 'n_features_in_', None)} features, the search {d}"
    return None


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
        (``alpha``, ``lam``, ``radius``, ...) is the path, run with warm starts from the
        strongest regularization; the others form an outer grid. Default: the model's own
        grid (:func:`~multitask.model_selection.default_param_grid`: ``alpha`` relative to
        its largest useful value for the norm penalties).
    cv : int, splitter or iterable of (train, test), optional
        Default 5 folds: :class:`~multitask.model_selection.TaskKFold` (stratified for
        classifiers) within each task for long-format and per-task data, ``KFold`` on the rows
        for a shared design (``StratifiedKFold`` for a single classification task). An
        integer gives that many such folds; both give way to leave-one-out within tasks when
        ``selection`` takes it (small tasks, see below). A splitter gets ``groups`` = the task
        of each row and is used as given, whatever ``selection`` says.
    scoring : None, str or callable, optional
        ``None``: ``-nMSE`` (pooled) for regressors, mean per-task ROC AUC for classifiers.
        See :func:`~multitask.model_selection.get_scorer`. Greater is better.
    n_alphas : int, default=10
        Size of the default grid.
    alpha_ratio : float, default=1e-3
        Smallest / largest value of the default grid.
    n_jobs : int, optional
        Parallel jobs (joblib convention: ``None`` is 1, ``-1`` all cores), capped at the
        number of jobs and of cores. With a ``client``, the default is all the cluster's
        worker threads.
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
    widen : int, default=2
        Continue the path up to this many times (3 values each, same log spacing) when the
        best value lies at the weak end of the grid (either end for an explicit grid).
    selection : {"auto", "kfold", "loo"}, default="auto"
        How the candidates are scored and the best one chosen.

        * ``"kfold"``: the folds of ``cv``; the best mean score over the folds
          (scikit-learn's rule).
        * ``"loo"``: leave-one-out within tasks: fold ``k`` holds the ``k``-th row (in a
          random order) of every task, so each training part lacks one row per task; the
          out-of-fold predictions of all folds are scored together (pooled), with the
          measure of ``scoring``. For regressors scored by nMSE or aMSE (``scoring`` None,
          ``"nmse"`` or ``"amse"``; a ROC AUC pooled over leave-one-out folds is biased, see
          :func:`~multitask.model_selection.pooled_metric`), with no splitter in ``cv``.
        * ``"auto"``: ``"loo"`` when the median task has at most
          :data:`SMALL_TASK_ROWS` rows (a shared design: that many rows), with at most that
          many folds (larger tasks are split in that many parts), for a regressor scored by
          nMSE or aMSE when ``cv`` is ``None`` or an integer; ``"kfold"`` otherwise
          (classifiers keep stratified K-fold). With few rows per task
          K-fold training parts lose a large share of each task (a fifth to a third), the
          models fitted on them need more regularization than the model refitted on all rows,
          and the choice drifts to the strongest values (every multi-task model collapsing to
          the per-task means); leave-one-out removes that bias, at the price of more folds
          (measured in ``benchmarks/bench_small_tasks.py``; see the user guide).

    Attributes
    ----------
    best_params_ : dict
        The chosen parameters (best score; ties go to the first candidate, the strongest
        regularization of its path).
    best_score_ : float
        Cross-validated score of ``best_params_`` (the mean over folds for ``"kfold"``, the
        pooled score for ``"loo"``).
    selection_ : str
        The rule applied: ``"kfold"`` or ``"loo"`` (what ``"auto"`` chose).
    best_index_ : int
        Index of ``best_params_`` in ``cv_results_["params"]``.
    best_estimator_ : estimator
        ``clone(estimator)`` with ``best_params_``, fitted on all the data (``refit=True``).
    cv_results_ : dict of ndarray
        ``"params"`` (list of dict, one per candidate), ``"param_<name>"``,
        ``"split<k>_test_score"`` (one array per fold, shape ``(n_candidates,)``; NaN
        where a fold alone cannot be scored, e.g. a task AUC on one row per task),
        ``"mean_test_score"`` (the score the choice is made on: the mean over folds, or the
        pooled score for ``"loo"``), ``"std_test_score"`` (over folds), ``"rank_test_score"``,
        ``"mean_fit_time"`` (seconds per fit, averaged over folds), ``"n_not_converged"``
        (folds whose solver reached ``max_iter``).
    scores_ : ndarray of shape (n_splits, n_candidates)
        The test scores again, as one array.
    path_param_ : str or None
        The parameter run with warm starts.
    n_widened_ : int
        How many times the path was continued beyond the grid.
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

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "get_params"])],
        "param_grid": [dict, list, None],
        "cv": [Interval(Integral, 2, None, closed="left"), "cv_object", None],
        "scoring": [str, callable, None],
        "n_alphas": [Interval(Integral, 1, MAX_GRID_SIZE, closed="both")],
        "alpha_ratio": [Interval(Real, 0, 1, closed="neither")],
        "n_jobs": [Integral, None],
        "client": [HasMethods(["submit", "gather"]), None],
        "verbose": ["verbose"],
        "callback": [callable, None],
        "refit": ["boolean"],
        "error_score": [StrOptions({"raise"}), Real],
        "random_state": ["random_state"],
        "widen": [Interval(Integral, 0, None, closed="left")],
        "selection": [StrOptions(set(SELECTION_RULES))],
    }
    #: The fitted state a model file must hold (:mod:`multitask.estimators.fitted_state`):
    #: the search's summaries and the refitted model (of the tuned model's class), checked
    #: whole against its own declaration.
    _fitted_state = {
        "scores_": Fitted("array", shape=("k", "c"), finite=False, check=_split_scores),
        "n_splits_": Fitted("int", nonnegative=True, check=lambda est, v, s: None if v == s.get(
            "k") else f"must be the {s.get('k')} rows of scores_"),
        "best_index_": Fitted("int", nonnegative=True, bound="c"),
        "best_params_": Fitted("dict"),
        "cv_results_": Fitted("dict"),
        "best_score_": Fitted("float", check=_best_score),
        "selection_": Fitted("str", choices=SELECTION_RULES),
        "path_param_": Fitted("str", optional=True),
        "n_widened_": Fitted("int", nonnegative=True),
        "n_features_in_": Fitted("int", nonnegative=True, bind="d",
                                 when=lambda est: bool(est.refit)),
        "feature_names_in_": Fitted("names", shape=("d",), required=False),
        "best_estimator_": Fitted("object", types=(BaseEstimator,),
                                  when=lambda est: bool(est.refit),
                                  check=lambda est, value, sizes: _refitted_model(est, value,
                                                                                  sizes)),
        "refit_time_": Fitted("float", nonnegative=True, when=lambda est: bool(est.refit)),
    }

    @classmethod
    def _fitted_declaration(cls) -> dict[str, Fitted]:
        return fitted_declaration(cls)

    def __init__(self, estimator, param_grid=None, cv=None, scoring=None, n_alphas=10,
                 alpha_ratio=1e-3, n_jobs=None, client=None, verbose=False, callback=None,
                 refit=True, error_score=np.nan, random_state=0, widen=2, selection="auto"):
        self.estimator = estimator
        self.param_grid = param_grid
        self.cv = cv
        self.selection = selection
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
        self.widen = widen

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
    def fit(self, X, y, task=None, sample_weight=None):
        """Cross-validate every candidate, choose the best, refit it on all the data.

        Parameters
        ----------
        X : array-like (n, d), sparse matrix, or list of per-task arrays
            Any of the three formats (with ``task`` or ``estimator.task_column`` for long
            format).
        y : array-like (n,), (n, m), or list of per-task arrays
            With ``estimator.missing_targets="ignore"``, NaN marks a target that was not
            observed: the folds split the rows, and each fold scores every task on its
            observed test rows.
        task : array-like (n,), optional
            Task id of each row (long format).
        sample_weight : array-like, optional
            Row weights in the layouts of the estimator's ``fit``: each fold's training rows
            are fitted with theirs and its test rows scored with theirs (the scorer gets
            ``sample_weight=``), the default grid and the refit use them all.

        Returns
        -------
        self
        """
        self._validate_params()
        t0 = time.perf_counter()
        name = type(self.estimator).__name__

        def report(done: int, total: int) -> None:
            if self.callback is not None:
                self.callback(done, total)
            if self.verbose:
                print(f"[MultiTaskCV {name}] {done}/{total} jobs done, "
                      f"{time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)

        res = cross_validate_grid(
            self.estimator, X, y, task, param_grid=self.param_grid, cv=self.cv,
            scoring=self.scoring, n_alphas=self.n_alphas, alpha_ratio=self.alpha_ratio,
            n_jobs=self.n_jobs, client=self.client, error_score=self.error_score,
            random_state=self.random_state, widen=self.widen, callback=report,
            selection=self.selection, sample_weight=sample_weight)
        mean = res.mean_scores
        best = int(np.argmax(np.where(np.isnan(mean), -np.inf, mean)))
        self.scores_ = res.scores
        self.n_splits_ = res.scores.shape[0]
        self.best_index_ = best
        self.best_params_ = dict(res.candidates[best])
        self.best_score_ = float(mean[best])
        self.cv_results_ = _results(res.candidates, res.scores, res.fit_times, res.not_converged,
                                    mean)
        self.selection_ = res.selection
        self.path_param_ = res.path_param
        self.n_widened_ = res.n_widened
        if self.refit:
            t1 = time.perf_counter()
            est = clone(self.estimator).set_params(**self.best_params_)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", TaskStructureWarning)  # said by the engine
                self.best_estimator_ = est.fit(X, y, *(() if task is None else (task,)),
                                               **_weight_kw(sample_weight))
            self.refit_time_ = time.perf_counter() - t1
            for attr in ("n_features_in_", "feature_names_in_"):
                if hasattr(self.best_estimator_, attr):
                    setattr(self, attr, getattr(self.best_estimator_, attr))
        return self

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

    def score(self, X, y, task=None, sample_weight=None):
        """``best_estimator_.score`` (R^2 for regressors, accuracy for classifiers)."""
        est = self._check()
        return est.score(X, y, *(() if task is None else (task,)), **_weight_kw(sample_weight))

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


# ----------------------------------------------------------------------------- the engine
def cross_validate_grid(estimator, X, y, task=None, *, param_grid=None, cv=None, scoring=None,
                        n_alphas: int = 10, alpha_ratio: float = 1e-3, n_jobs=None,
                        client=None, error_score=np.nan, random_state=0, widen: int = 2,
                        callback=None, selection: str = "auto", sample_weight=None) -> Bunch:
    """Score every candidate of a grid on every fold, paths warm-started (the CV engine).

    Parameters are those of :class:`MultiTaskCV` (``callback(done, total)`` after each job;
    ``sample_weight`` as in :meth:`MultiTaskCV.fit`).

    Returns
    -------
    sklearn.utils.Bunch
        ``candidates`` (list of dict), ``scores`` ``(n_splits, n_candidates)`` (per fold),
        ``mean_scores`` (the score the choice is made on: the mean over folds for
        ``"kfold"``, the pooled score for ``"loo"``), ``fit_times``, ``not_converged`` (same
        shape as ``scores``), ``selection`` (the rule applied: ``"kfold"`` or ``"loo"``),
        ``path_param`` (str or None), ``n_widened``, ``splits`` (the (train, test) indices in
        the engine's view of the data).

    Raises
    ------
    ValueError
        On an invalid grid, splitter or parameter, or when every fit failed.
    """
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
        from sklearn.utils.multiclass import type_of_target

        y_seen = np.asarray(y)
        if ignores_missing(estimator):  # the labels of the observed targets
            y_seen = y_seen[observed_mask(y_seen)]
        kind = type_of_target(y_seen)
        if kind == "unknown":
            raise ValueError("Unknown label type: the targets of a classifier must be class "
                             "labels.")
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

    candidates: list[dict] = []
    paths: list[tuple[str, list[int], list]] = []  # (name, candidate indices, values) per path
    jobs: list[tuple[int, list[int], list[dict]]] = []
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
                pname, values = path
                idx = list(range(len(candidates), len(candidates) + len(values)))
                candidates.extend({**point, pname: v} for v in values)
                paths.append((pname, idx, list(values)))
                chunks = [idx] if warm else [[i] for i in idx]
            for k in range(len(splits)):
                jobs.extend((k, c, [candidates[i] for i in c]) for c in chunks)
    if not candidates:
        raise ValueError("param_grid holds no candidate.")
    path_param = next(iter(path_names)) if len(path_names) == 1 else None

    n_splits = len(splits)
    score_how = scorer if pooled is None else _Pooled(pooled[0])
    runner = _Runner(est_cv, Xcv, ycv, splits, score_how, warm, error_score, n_jobs, client,
                     callback, wcv)
    results = runner.run([(k, c, pts, False) for k, c, pts in jobs])
    n_widened = 0
    while True:
        if pooled is None:
            scores, fit_times, not_conv = _collect(results, n_splits, len(candidates))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # failed on every fold
                mean = np.nanmean(scores, axis=0)
        else:
            scores, mean, fit_times, not_conv = _collect_pooled(
                results, splits, groups, layout, len(candidates), pooled[1], error_score)
        if np.all(np.isnan(mean)):
            why = f" First error: {runner.first_error}" if runner.first_error else ""
            raise ValueError("Every cross-validation fit failed or gave an undefined score."
                             + why)
        if n_widened >= widen or not paths:
            break
        new_jobs = _widen(candidates, paths, mean, default, n_splits)
        if not new_jobs:
            break
        results = results + runner.run(new_jobs)
        n_widened += 1
    _warn_unconverged(estimator, results, candidates)
    return Bunch(candidates=candidates, scores=scores, mean_scores=mean, fit_times=fit_times,
                 not_converged=not_conv, path_param=path_param, n_widened=n_widened,
                 splits=splits, selection=rule)


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

    def run(self, jobs) -> list:
        from joblib import Parallel, delayed, effective_n_jobs, parallel_config

        est, X, y, splits, scorer, warm, error_score = self.args
        total = self.done + len(jobs)
        if self.client is None:
            n_jobs = max(1, min(effective_n_jobs(self.n_jobs), len(jobs), os.cpu_count() or 1))
            blas = None if n_jobs == 1 else max(1, (os.cpu_count() or 1) // n_jobs)
            par = Parallel(n_jobs=n_jobs, return_as="generator_unordered")
            tasks = (delayed(_job)(k, cand, est, X, y, splits[k], points, scorer, warm,
                                   error_score, blas, skip, self.weights)
                     for k, cand, points, skip in jobs)
            gen = par(tasks)
            ctx = None
        else:
            blas = _client_blas_threads(self.client)
            ctx = parallel_config(backend="dask", client=self.client)
            ctx.__enter__()
            par = Parallel(n_jobs=-1 if self.n_jobs is None else self.n_jobs,
                           return_as="generator_unordered")
            gen = par(delayed(_job)(k, cand, est, X, y, splits[k], points, scorer, warm,
                                    error_score, blas, skip, self.weights)
                      for k, cand, points, skip in jobs)
        out = []
        try:
            for item in gen:
                out.append(item)
                for _, _, _, err in item[2]:
                    self.first_error = self.first_error or err
                self.done += 1
                if self.callback is not None:
                    self.callback(self.done, total)
        finally:
            if ctx is not None:
                ctx.__exit__(None, None, None)
        return out


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


def _selection_rule(selection: str, cv, scorer, groups, layout: str, y) -> str:
    """``"loo"`` or ``"kfold"``: what ``selection`` means for these data (see MultiTaskCV)."""
    splitter = cv is not None and not (isinstance(cv, (int, np.integer))
                                       and not isinstance(cv, bool))
    poolable = pooled_metric(scorer) is not None
    if selection == "loo":
        if splitter:
            raise ValueError("selection='loo' draws its own folds (one row of each task per "
                             "fold): leave cv as None or an integer, or use selection='kfold' "
                             "with a splitter.")
        if not poolable:
            raise ValueError("selection='loo' scores the out-of-fold predictions pooled over "
                             "folds, which needs a regressor scored by nMSE or aMSE (scoring "
                             "None, 'nmse' or 'amse'); use selection='kfold' otherwise.")
        return "loo"
    if selection == "kfold" or splitter or not poolable:
        return "kfold"
    return "loo" if _median_task_rows(groups, layout, y) <= SMALL_TASK_ROWS else "kfold"


def _median_task_rows(groups, layout: str, y) -> float:
    """Median number of rows per task (the rows of a shared design or a single task)."""
    if layout == "long":
        _, counts = np.unique(np.asarray(groups), return_counts=True)
        return float(np.median(counts))
    return float(np.asarray(y).shape[0])


def _loo_splits(X, y, groups, layout: str, random_state, cap: int | None):
    """Leave-one-out within tasks: as many folds as the largest task has rows (at most
    ``cap``), each task's rows dealt to the folds in a random order, so that a task with at
    most that many rows has one row in each of its folds."""
    if layout == "long":
        _, counts = np.unique(np.asarray(groups), return_counts=True)
        n_folds = int(counts.max())
    else:
        n_folds = int(np.asarray(y).shape[0])
    if cap is not None:
        n_folds = min(n_folds, int(cap))
    if n_folds < 2:
        raise ValueError("Leave-one-out cross-validation within tasks needs a task with at "
                         f"least 2 rows; the largest task has n_samples={n_folds}.")
    if layout == "long":
        splitter = TaskKFold(n_folds, task_column=-1, random_state=random_state)
    else:
        splitter = KFold(n_folds, shuffle=True, random_state=random_state)
    return [(np.asarray(tr), np.asarray(te)) for tr, te in splitter.split(X, y, groups)]


def _widen(candidates: list[dict], paths: list, mean: np.ndarray, default: bool,
           n_splits: int) -> list:
    """Jobs continuing the path whose best candidate lies at an edge of its grid.

    At the weak end (the last value of the path) the path goes on with 3 more values of the
    same log spacing, warm-started from a refit of the edge value (whose score is kept, not
    recomputed). At the strong end of an explicit grid (a default grid starts where the
    solution is zero) 3 stronger values are fitted as a new path. ``candidates`` and
    ``paths`` are extended in place. ``mean`` holds the score of each candidate.
    """
    best = int(np.argmax(np.where(np.isnan(mean), -np.inf, mean)))
    jobs = []
    for i, (name, idx, values) in enumerate(paths):
        if best not in idx or len(values) < 2:
            continue
        try:
            nums = np.asarray(values, dtype=float)
        except (TypeError, ValueError):
            continue
        if np.any(nums <= 0) or not np.all(np.isfinite(nums)) or nums[-1] == nums[-2]:
            continue
        point = {k: v for k, v in candidates[best].items() if k != name}
        pos = idx.index(best)
        if pos == len(idx) - 1:
            ratio = nums[-1] / nums[-2]
            new = [float(nums[-1] * ratio ** (j + 1)) for j in range(3)]
            start = len(candidates)
            candidates.extend({**point, name: v} for v in new)
            new_idx = list(range(start, len(candidates)))
            chunk = [idx[-1], *new_idx]
            paths[i] = (name, idx + new_idx, values + new)
            skip = True
        elif pos == 0 and not default:
            ratio = nums[1] / nums[0]
            new = [float(nums[0] / ratio ** (j + 1)) for j in range(3)][::-1]
            start = len(candidates)
            candidates.extend({**point, name: v} for v in new)
            new_idx = list(range(start, len(candidates)))
            chunk = new_idx
            paths[i] = (name, new_idx + idx, new + values)
            skip = False
        else:
            continue
        for k in range(n_splits):
            jobs.append((k, chunk, [candidates[c] for c in chunk], skip))
    return jobs


def _validate_candidates(est, grid: dict) -> None:
    """Set each value of the grid on a clone and validate it, naming the parameter."""
    validate = getattr(est, "_validate_params", None)
    if validate is None:
        return
    for name, values in grid.items():
        for v in values:
            probe = clone(est)
            try:
                probe.set_params(**{name: v})
                probe._validate_params()
            except (TypeError, ValueError) as exc:
                raise ValueError(f"param_grid[{name!r}] holds an invalid value {v!r}: {exc}") \
                    from None


def _grids(estimator, X, y, task, pg, n_alphas, alpha_ratio,
           sample_weight=None) -> tuple[list[dict], bool]:
    if pg is None:
        grid = default_param_grid(estimator, X, y, task, n_alphas=n_alphas,
                                  alpha_ratio=alpha_ratio, sample_weight=sample_weight)
        return [{k: list(v) for k, v in grid.items()}], True
    grids = [pg] if isinstance(pg, Mapping) else list(pg)
    if not grids or not all(isinstance(g, Mapping) for g in grids):
        raise ValueError("param_grid must be a dict {name: values} or a list of such dicts.")
    valid = estimator.get_params(deep=True)
    out = []
    for g in grids:
        clean = {}
        for name, values in g.items():
            if name not in valid:
                check_renamed(type(estimator), [name], getattr(estimator, "_renamed", {}))
                raise ValueError(f"param_grid names {name!r}, which is not a parameter of "
                                 f"{type(estimator).__name__}.")
            if isinstance(values, str) or not isinstance(values, (Sequence, np.ndarray)):
                raise ValueError(f"param_grid[{name!r}] must be a list of values, got "
                                 f"{values!r}.")
            values = list(values)
            if not values:
                raise ValueError(f"param_grid[{name!r}] is empty.")
            clean[name] = values
        out.append(clean)
    return out, False


def _splits(cv, X, y, groups, layout: str, base, random_state):
    cv = 5 if cv is None else cv
    classifier = is_classifier(base)
    if isinstance(cv, (int, np.integer)) and not isinstance(cv, bool):
        if cv < 2:
            raise ValueError(f"cv must be at least 2 folds, got {cv}.")
        if layout == "long":
            cv = TaskKFold(int(cv), task_column=-1, stratify=classifier,
                           random_state=random_state)
        elif layout == "single" and classifier:
            cv = StratifiedKFold(int(cv), shuffle=True, random_state=random_state)
        else:
            cv = KFold(int(cv), shuffle=True, random_state=random_state)
    if hasattr(cv, "split"):
        missing = classifier and np.ndim(y) == 1 and not observed_mask(y).all()
        splits = list(cv.split(X, label_codes(y) if missing else y, groups))  # NaN: a stratum
    else:
        try:
            splits = list(cv)
        except TypeError:
            raise ValueError(f"cv must be an int, a splitter or an iterable of (train, test), "
                             f"got {cv!r}.") from None
    if not splits:
        raise ValueError("cv produced no split.")
    if not all(isinstance(sp, (tuple, list)) and len(sp) == 2 for sp in splits):
        raise ValueError("cv must be an int, a splitter or an iterable of (train, test) index "
                         f"pairs; its items are {splits[0]!r}, ...")
    return [(np.asarray(tr), np.asarray(te)) for tr, te in splits]


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
        # per-task blocks may be Python lists of lists or DataFrames, targets columns
        blocks = [sp.csr_matrix(a) if sp.issparse(a) else np.asarray(a) for a in X]
        codes = np.concatenate([np.full(a.shape[0], t) for t, a in enumerate(blocks)])
        Xs = sp.vstack(blocks, format="csr") if any(sp.issparse(a) for a in blocks) \
            else np.vstack(blocks)
        ys = np.concatenate([_one_column(v) for v in y])
        return _append_codes(Xs, codes), ys, codes, _with_task_column(est, params), "long"
    if task is not None:
        if params.get("task_column") is not None:
            raise ValueError("Pass task ids either as task= or through task_column, not both.")
        task = np.asarray(task)
        Xs = sp.csr_matrix(X) if sp.issparse(X) else np.asarray(X)
        if task.ndim != 1 or Xs.ndim != 2 or task.shape[0] != Xs.shape[0]:
            raise ValueError(f"task must be 1-D with one id per row of X ({Xs.shape[0]}), got "
                             f"shape {task.shape}.")
        _, codes = np.unique(task, return_inverse=True)
        return (_append_codes(Xs, codes), _one_column(y), codes,
                _with_task_column(est, params), "long")
    y_arr = np.asarray(y)
    if params.get("task_column") is not None:
        Xa = sp.csr_matrix(X) if sp.issparse(X) else np.asarray(X)
        _, tids = split_task_column(Xa, params["task_column"])
        return Xa, _one_column(y), tids, est, "long"
    Xa = sp.csr_matrix(X) if sp.issparse(X) else np.asarray(X)
    if y_arr.ndim == 2 and y_arr.shape[1] == 1:  # one task given as a column
        y_arr = y_arr.ravel()
    layout = "shared" if y_arr.ndim == 2 else "single"
    return Xa, y_arr, None, est, layout


def _one_column(y) -> np.ndarray:
    """Targets of long-format rows (or of one task) as a 1-D array: a one-column array or
    DataFrame is flattened, as the estimators do; any other shape is left for them to refuse."""
    y = np.asarray(y)
    return y.ravel() if y.ndim == 2 and y.shape[1] == 1 else y


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


def _client_blas_threads(client) -> int:
    """BLAS threads per job on a Dask cluster so that workers x threads <= cores."""
    cores = os.cpu_count() or 1
    try:
        workers = sum(client.nthreads().values())
    except Exception:  # noqa: BLE001 - a client that cannot answer: be conservative
        workers = cores
    return max(1, cores // max(workers, 1))


def _job(k, cand, est, X, y, split, points, scorer, warm, error_score, blas, skip_first,
         w=None):
    """One job: the path of fold ``k`` over the candidates ``cand``; returns them tagged.

    With ``skip_first`` the first candidate (a widening anchor, already scored) is refitted
    only to warm-start the others and left out of the result. ``w``: the row weights of the
    engine's view of the data (None without), split with the rows.
    """
    from threadpoolctl import threadpool_limits

    train, test = split
    Xtr, Xte = _rows(X, train), _rows(X, test)
    ytr, yte = y[train], y[test]
    wtr, wte = (None, None) if w is None else (w[train], w[test])

    def score(fitted, point):
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
        fits = fit_path(est, Xtr, ytr, points, warm=warm, on_fit=score, sample_weight=wtr)
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
    if skip_first:
        return k, cand[1:], out[1:]
    return k, cand, out


def _rows(X, idx):
    return X[idx]


def _weight_kw(sample_weight) -> dict:
    """``{"sample_weight": w}``, or nothing without weights (callables and estimators that
    take none keep working)."""
    return {} if sample_weight is None else {"sample_weight": sample_weight}


def _cv_weights(sample_weight, X, ycv):
    """The row weights in the engine's view of the data (:func:`_cv_view`): per-task lists
    stacked like their rows (a list of per-task arrays, or one array of all rows); otherwise
    as given, one weight per row (or, for a shared design, per row and task). None without.
    """
    if sample_weight is None:
        return None
    if is_task_list(X) and isinstance(sample_weight, (list, tuple)):
        w = np.concatenate([np.asarray(v, dtype=np.float64).ravel() for v in sample_weight])
    else:
        w = np.asarray(sample_weight, dtype=np.float64)
    n = np.shape(ycv)[0]
    if w.shape[:1] != (n,):
        raise ValueError(f"sample_weight has shape {w.shape} but the data have {n} rows: give "
                         "one weight per row (a shared design: per row, or per row and task).")
    return w


def _known_mask(est, X):
    """Boolean mask of the rows of ``X`` whose task the fitted ``est`` knows (None: all)."""
    tc = getattr(est, "task_column", None)
    if tc is None or not hasattr(est, "tasks_"):
        return None
    _, tids = split_task_column(X, tc)
    known = np.isin(tids, np.asarray(est.tasks_))
    return None if known.all() else known


#: Models whose default grid was noted as holding parameters (once per model and process).
_HELD_NOTED: set[str] = set()


def _note_held_parameters(estimator, grid: dict) -> None:
    """Say once per model class and process which parameters that change the fitted model
    the default grid leaves at their set value (the estimator's ``_grid_held``), and why."""
    held = getattr(estimator, "_grid_held", {}) or {}
    name = type(estimator).__name__
    params = estimator.get_params(deep=False)
    held = {k: why for k, why in held.items() if k in params and k not in grid}
    if not held or name in _HELD_NOTED:
        return
    _HELD_NOTED.add(name)
    parts = "; ".join(f"{k}={params[k]!r} ({why})" for k, why in held.items())
    warnings.warn(f"The default grid of {name} searches {', '.join(grid)} and holds {parts}. "
                  "Pass param_grid to search them too (said once per model).", UserWarning,
                  stacklevel=4)


def _task_labels(X, y, task, groups, layout: str) -> np.ndarray:
    """The task labels in the order of the fitted model's ``tasks_``."""
    if is_task_list(X):
        return np.arange(len(X))
    if task is not None:
        return np.unique(np.asarray(task))
    if layout == "long":
        return np.unique(np.asarray(groups))
    y = np.asarray(y)
    return np.arange(y.shape[1] if y.ndim == 2 else 1)


def _warn_one_class_parts(splits, y, groups, layout: str, labels) -> None:
    """One warning when some task holds a single class in a training or test part of a fold:
    its fit fails (training) or its per-task score is undefined and left out (test)."""
    y = np.asarray(y)
    if layout == "long":
        _, pos = np.unique(np.asarray(groups), return_inverse=True)
        columns = None
    else:
        pos = None
        columns = y.reshape(y.shape[0], -1)
    n_tasks = len(labels)
    found = {"training": [], "test": []}
    for k, (train, test) in enumerate(splits):
        for part, rows in (("training", train), ("test", test)):
            for t in range(n_tasks):
                if columns is None:
                    vals = y[rows[pos[rows] == t]]
                else:
                    vals = columns[rows, t]
                vals = vals[observed_mask(vals)]  # a missing target is no class
                if vals.shape[0] and np.unique(vals).shape[0] < 2:
                    found[part].append((k, t))
    if not found["training"] and not found["test"]:
        return
    said = []
    for part, what in (("test", "its per-task score (ROC AUC) is undefined and the task is "
                                 "left out of that fold's score"),
                       ("training", "those fits fail")):
        hits = found[part]
        if hits:
            k, t = hits[0]
            label = np.asarray(labels)[t].item()
            said.append(f"{len(hits)} {part} parts (first: task {label!r} in fold {k}): "
                        f"{what}")
    warnings.warn(f"Some tasks hold one class only in a part of a cross-validation fold "
                  f"({len(splits)} folds x {n_tasks} tasks): " + "; ".join(said)
                  + ". Use fewer folds (cv=) or gather more rows of the rare class.",
                  UserWarning, stacklevel=4)


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


def _results(candidates, scores, fit_times, not_conv, mean=None) -> dict:
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
        if mean is None:
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
