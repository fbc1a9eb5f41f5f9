"""The cross-validated form of every model: :class:`MultiTaskCV` runs the cross-validation
engine (:func:`~multitask.model_selection.cross_validate_grid`), chooses the best candidate and
refits it on all the data.

The scores of every fold and grid point are kept in ``cv_results_`` (the layout of
scikit-learn's ``GridSearchCV``), the choice in ``best_params_`` and the refitted model in
``best_estimator_``, to which ``predict``, ``decision_function``, ``predict_proba``, ``score``
(with ``unknown_tasks=``) and ``fit_new_tasks`` are delegated.
"""

from __future__ import annotations

import copy
import inspect
import sys
import time
import warnings
from collections.abc import Callable
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from multitask.estimators.base import TaskStructureWarning
from multitask.estimators.fitted_state import Fitted, check_fitted_state, fitted_declaration
from multitask.model_selection._engine import _weight_kw, cross_validate_grid
from multitask.model_selection._folds import SELECTION_RULES

__all__ = ["MAX_GRID_SIZE", "MultiTaskCV"]

#: Largest accepted ``n_alphas`` of :class:`MultiTaskCV` (a grid beyond it is a mistake).
MAX_GRID_SIZE = 100_000


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
        grid point, running the whole path when warm starts apply, or its part down to the
        last candidate still in the running with ``halving``; ``total`` grows as the rounds
        of ``halving`` and the widenings add jobs). Not pickled.
    refit : bool, default=True
        Refit the best parameters on all the data (needed for ``predict``).
    error_score : "raise" or float, default=np.nan
        Score recorded when a fit fails (with a ``FitFailedWarning``); ``"raise"`` re-raises.
    random_state : int or None, default=0
        Seed of the default folds.
    widen : int, default=2
        Continue the path up to this many times (3 values each, same log spacing) when the
        best value lies at the weak end of the grid (either end for an explicit grid), unless
        the score has flattened there: with k-fold scoring, a best value whose mean score
        beats its neighbour's by less than a tenth of its standard error over the folds ends
        the path.
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
    halving : bool, default=True
        Successive halving when the grid searches more than one parameter (several points
        of the outer grid, e.g. the default grid of a model with two strengths): the folds
        are taken in rounds, every candidate is scored on the first few, and after each
        round only the candidates of the better half of the outer points that are also
        among the better half of the candidates still in the running go on to the next
        folds (a path is fitted from its strongest value down to its last such candidate);
        the choice is made among the candidates scored on every fold
        (:mod:`~multitask.model_selection._halving` gives the schedule). The first round
        screens: its fits take three times the estimator's ``tol`` (the first fold's scores
        are those fits', as are those of the values a widening adds), the later rounds and
        the refit the estimator's own. ``False``
        scores every candidate on every fold at the estimator's ``tol``. A one-parameter grid
        is searched whole either way.

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
        where a fold alone cannot be scored, e.g. a task AUC on one row per task, or where
        the candidate was not fitted), ``"mean_test_score"`` (the score the choice is made
        on: the mean over folds, or the pooled score for ``"loo"``; NaN for a candidate that
        ``halving`` left behind), ``"std_test_score"`` (over folds), ``"rank_test_score"``,
        ``"mean_fit_time"`` (seconds per fit, averaged over the folds it was fitted on),
        ``"n_not_converged"`` (folds whose solver reached ``max_iter``),
        ``"n_splits_fitted"`` (the folds the candidate was fitted on: all of them but for
        the candidates ``halving`` left behind).
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
        "halving": ["boolean"],
    }
    #: The fitted state a model file must hold (:mod:`multitask.estimators.fitted_state`):
    #: the search's summaries and the refitted model (of the tuned model's class), checked
    #: whole against its own declaration.
    _fitted_state = {
        "scores_": Fitted("array", shape=("k", "candidates"), finite=False, check=_split_scores),
        "n_splits_": Fitted("int", nonnegative=True, check=lambda est, v, s: None if v == s.get(
            "k") else f"must be the {s.get('k')} rows of scores_"),
        "best_index_": Fitted("int", nonnegative=True, bound="candidates"),
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
                 refit=True, error_score=np.nan, random_state=0, widen=2, selection="auto",
                 halving=True):
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
        self.halving = halving

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
            selection=self.selection, sample_weight=sample_weight, halving=self.halving)
        mean = res.mean_scores
        best = int(np.argmax(np.where(np.isnan(mean), -np.inf, mean)))
        self.scores_ = res.scores
        self.n_splits_ = res.scores.shape[0]
        self.best_index_ = best
        self.best_params_ = dict(res.candidates[best])
        self.best_score_ = float(mean[best])
        self.cv_results_ = _results(res.candidates, res.scores, res.fit_times, res.not_converged,
                                    mean, res.n_splits_fitted)
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

    def _delegate(self, method: str, X, task, unknown_tasks):
        """``best_estimator_.<method>(X[, task][, unknown_tasks=...])``: the keyword is passed
        when it asks for more than the default (``"error"``), so that models without a
        population model keep working and say what they lack."""
        est = self._check()
        args = (X,) if task is None else (X, task)
        if isinstance(unknown_tasks, str) and unknown_tasks == "error":
            return getattr(est, method)(*args)
        if "unknown_tasks" not in inspect.signature(getattr(est, method)).parameters:
            raise ValueError(f"unknown_tasks={unknown_tasks!r}: {type(est).__name__} has no "
                             "population model for tasks it has not seen; refit it with "
                             "their rows.")
        return getattr(est, method)(*args, unknown_tasks=unknown_tasks)

    def predict(self, X, task=None, *, unknown_tasks="error"):
        """``best_estimator_.predict`` (the layout of the training input).

        ``unknown_tasks="population"`` predicts the rows (long format) of a task the model has
        not seen with the population model (the mean of the fitted tasks' models); the
        default, ``"error"``, refuses them (learn such a task with :meth:`fit_new_tasks`).
        """
        return self._delegate("predict", X, task, unknown_tasks)

    @available_if(_estimator_has("decision_function"))
    def decision_function(self, X, task=None, *, unknown_tasks="error"):
        """``best_estimator_.decision_function`` (``unknown_tasks`` as in :meth:`predict`)."""
        return self._delegate("decision_function", X, task, unknown_tasks)

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X, task=None, *, unknown_tasks="error"):
        """``best_estimator_.predict_proba`` (``unknown_tasks`` as in :meth:`predict`)."""
        return self._delegate("predict_proba", X, task, unknown_tasks)

    @available_if(_estimator_has("fit_new_tasks"))
    def fit_new_tasks(self, X, y, task=None, sample_weight=None, *, strength="auto"):
        """Learn tasks the model has not seen from their rows: ``best_estimator_``'s
        ``fit_new_tasks`` (the parameters and the rule are the model's: see its docstring and
        the user guide).

        The fitted tasks and the search's record (``best_params_``, ``best_score_``,
        ``cv_results_``, ``scores_``: the cross-validation of the tasks of fit) are unchanged;
        ``best_estimator_`` gains the new tasks, so ``predict``, ``tasks_``, ``coef_`` and a
        saved model file include them. The new tasks are learned on a copy of
        ``best_estimator_`` that replaces it once they are all learned: an error leaves the
        model as it was. Works in place and returns ``self``, as the models' method does.

        Returns
        -------
        self
        """
        est = copy.deepcopy(self._check())
        est.fit_new_tasks(X, y, task, sample_weight, strength=strength)
        self.best_estimator_ = est
        return self

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


def _results(candidates, scores, fit_times, not_conv, mean=None, fitted=None) -> dict:
    n_splits, n_cand = scores.shape
    fitted = np.full(n_cand, n_splits, dtype=np.int64) if fitted is None else np.asarray(
        fitted, dtype=np.int64)
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
    res["mean_fit_time"] = fit_times.sum(axis=0) / np.maximum(fitted, 1)
    res["n_not_converged"] = not_conv.sum(axis=0)
    res["n_splits_fitted"] = fitted
    return res
