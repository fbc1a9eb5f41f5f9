"""Model selection for multi-task models: folds within each task, scorers, relative grids.

Long-format data (a task id per row, kept in a column of ``X`` via ``task_column``) passes
through scikit-learn's ``cross_val_score``, ``GridSearchCV`` and ``Pipeline`` unchanged;
:class:`TaskKFold` draws the folds within each task (stratified by class inside each task for
classifiers) so that every task appears in every training fold.
"""

from __future__ import annotations

import numpy as np
from sklearn.model_selection import BaseCrossValidator, KFold
from sklearn.utils import check_random_state

from multitask.data import split_task_column
from multitask.metrics import mean_task_auc, nmse

__all__ = [
    "PATH_PARAMETERS",
    "TaskKFold",
    "SharedKFold",
    "amse_scorer",
    "default_param_grid",
    "get_scorer",
    "log_grid",
    "mean_auc_scorer",
    "nmse_scorer",
    "path_cv",
    "regularization_path",
    "relative_grid",
    "to_long_format",
]


def to_long_format(X_list, y_list, *, task_column: int = -1):
    """Stack per-task lists into one ``X`` with the task index as a column, and ``y``.

    Returns
    -------
    X : ndarray (N, d + 1)
        Features with the task index inserted as column ``task_column`` (last by default).
    y : ndarray (N,)
    """
    Xs = [np.asarray(x, dtype=np.float64) for x in X_list]
    tid = np.concatenate([np.full(len(x), t, dtype=np.float64) for t, x in enumerate(Xs)])
    X = np.vstack(Xs)
    col = task_column % (X.shape[1] + 1)
    X = np.insert(X, col, tid, axis=1)
    return X, np.concatenate([np.asarray(v) for v in y_list])


class TaskKFold(BaseCrossValidator):
    """K folds drawn within each task (and within each class of each task when stratified).

    Every task is split ``n_splits`` ways, so every training fold holds rows of every task that
    has at least ``n_splits`` rows (tasks with fewer rows appear in fewer test folds).

    Parameters
    ----------
    n_splits : int, default=5
    task_column : int, default=-1
        Column of ``X`` holding the task ids (ignored when ``groups`` is given to ``split``).
    stratify : bool, default=False
        Also balance the classes of ``y`` within each task (for classifiers).
    shuffle : bool, default=True
    random_state : int or None
    """

    def __init__(self, n_splits=5, *, task_column=-1, stratify=False, shuffle=True,
                 random_state=None):
        self.n_splits = n_splits
        self.task_column = task_column
        self.stratify = stratify
        self.shuffle = shuffle
        self.random_state = random_state

    def get_n_splits(self, X=None, y=None, groups=None):
        return self.n_splits

    def _iter_test_masks(self, X, y=None, groups=None):
        if groups is None:
            _, groups = split_task_column(X, self.task_column)
        groups = np.asarray(groups)
        n = len(groups)
        fold_of = np.empty(n, dtype=np.int64)
        rng = check_random_state(self.random_state)
        carry = 0  # without shuffle, each task starts on the fold where the previous one ended
        for g in np.unique(groups):
            idx = np.flatnonzero(groups == g)
            if self.stratify and y is not None:
                labels = np.asarray(y)[idx]
                # deal rows of each class round-robin after a shuffle
                pos = np.empty(len(idx), dtype=np.int64)
                start = rng.randint(self.n_splits) if self.shuffle else carry
                for c in np.unique(labels):
                    cidx = np.flatnonzero(labels == c)
                    if self.shuffle:
                        cidx = cidx[rng.permutation(len(cidx))]
                    pos[cidx] = (start + np.arange(len(cidx))) % self.n_splits
                    start = (start + len(cidx)) % self.n_splits
                fold_of[idx] = pos
            else:
                order = rng.permutation(len(idx)) if self.shuffle else np.arange(len(idx))
                start = rng.randint(self.n_splits) if self.shuffle else carry
                fold_of[idx[order]] = (start + np.arange(len(idx))) % self.n_splits
                start = (start + len(idx)) % self.n_splits
            carry = start
        for k in range(self.n_splits):
            yield fold_of == k


def SharedKFold(n_splits=5, *, shuffle=True, random_state=None):  # noqa: N802
    """Row folds for a shared design (all tasks split together): scikit-learn's ``KFold``."""
    return KFold(n_splits, shuffle=shuffle, random_state=random_state)


def relative_grid(lam_max: float, n: int = 10, ratio: float = 1e-3) -> np.ndarray:
    """``n`` values log-spaced from ``lam_max`` down to ``ratio * lam_max`` (decreasing)."""
    if lam_max <= 0 or not np.isfinite(lam_max):
        raise ValueError(f"lam_max must be positive and finite, got {lam_max!r}.")
    return lam_max * np.logspace(0, np.log10(ratio), n)


def _task_ids(estimator, X):
    """Task ids of the rows of ``X`` as the multi-task model sees them (None: no column).

    In a Pipeline the task column is the final step's ``task_column`` of the transformed ``X``.
    """
    while hasattr(estimator, "steps"):  # Pipeline: read the column where the model reads it
        if len(estimator.steps) > 1:
            X = estimator[:-1].transform(X)
        estimator = estimator.steps[-1][1]
    tc = getattr(estimator, "task_column", None)
    if tc is None:
        return None
    return split_task_column(X, tc)[1]


def nmse_scorer(estimator, X, y, *, average="pooled") -> float:
    """Scorer (greater is better): ``-nMSE`` of the estimator's predictions."""
    pred = estimator.predict(X)
    return -nmse(y, pred, _task_ids(estimator, X), average=average)


def mean_auc_scorer(estimator, X, y) -> float:
    """Scorer: mean per-task ROC AUC of ``decision_function`` (shared or long format)."""
    import warnings

    scores = estimator.decision_function(X)
    y = np.asarray(y)
    if y.ndim == 2:
        y_bin = (y == estimator.classes_[1]).astype(int)
    else:
        y_bin = (y == estimator.classes_[1]).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return mean_task_auc(y_bin, scores, _task_ids(estimator, X))


def path_cv(
    estimator,
    param_name: str,
    grid,
    X,
    y,
    *,
    cv=None,
    scoring=None,
    n_jobs: int | None = None,
    refit: bool = True,
):
    """Cross-validate one regularization parameter along a path with warm starts.

    For each fold, the estimator is fitted for every value of ``grid`` in the given order
    (put the strongest regularization first), each fit warm-started from the previous one,
    and scored on the held-out part. The value with the best mean score is chosen and, with
    ``refit``, the estimator is fitted on all of ``X, y`` with it.

    Parameters
    ----------
    estimator : multi-task estimator with a ``warm_start`` parameter
        Long-format data: ``X`` holds the task ids in ``estimator.task_column``.
    param_name : str
        The parameter to select (e.g. ``"alpha"``).
    grid : sequence of float
        Candidate values, in path order (largest ``alpha`` first).
    X, y : arrays
        Training data (long format with a task column, or shared design with 2-D ``y``).
    cv : splitter, default=TaskKFold(3) for long format, KFold(3) for a shared design
    scoring : callable ``scoring(est, X, y) -> float`` (greater is better)
        Defaults to ``nmse_scorer`` for regressors and ``mean_auc_scorer`` for classifiers.
    n_jobs : int, optional
        Folds run in parallel with joblib.

    Returns
    -------
    best_value : float
    scores : ndarray of shape (n_splits, len(grid))
    estimator : the refitted estimator (a clone) or None
    """
    from joblib import Parallel, delayed
    from sklearn.base import clone, is_classifier

    grid = list(grid)
    if not grid:
        raise ValueError("grid is empty.")
    y = np.asarray(y)
    if cv is None:
        if getattr(estimator, "task_column", None) is not None:
            cv = TaskKFold(3, task_column=estimator.task_column, random_state=0,
                           stratify=is_classifier(estimator))
        else:
            cv = KFold(3, shuffle=True, random_state=0)
    if scoring is None:
        scoring = mean_auc_scorer if is_classifier(estimator) else nmse_scorer
    splits = list(cv.split(X, y))

    def run_fold(train, test):
        est = clone(estimator).set_params(warm_start=True)
        out = []
        Xtr, Xte = X[train], X[test]
        for v in grid:
            est.set_params(**{param_name: v})
            est.fit(Xtr, y[train])
            out.append(scoring(est, Xte, y[test]))
        return out

    import warnings

    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        scores = Parallel(n_jobs=n_jobs)(delayed(run_fold)(tr, te) for tr, te in splits)
    scores = np.asarray(scores, dtype=float)
    best = grid[int(np.nanargmax(np.nanmean(scores, axis=0)))]
    fitted = None
    if refit:
        fitted = clone(estimator).set_params(**{param_name: best}).fit(X, y)
    return best, scores, fitted


# --------------------------------------------------------------------------- scorers by name
def amse_scorer(estimator, X, y) -> float:
    """Scorer (greater is better): ``-aMSE``, the task-averaged nMSE (see :mod:`multitask.metrics`).

    Tasks whose held-out targets are constant make it undefined (a ValueError).
    """
    return nmse_scorer(estimator, X, y, average="task")


_NAMED_SCORERS = {
    "nmse": nmse_scorer,
    "neg_nmse": nmse_scorer,
    "amse": amse_scorer,
    "neg_amse": amse_scorer,
    "auc": mean_auc_scorer,
    "mean_auc": mean_auc_scorer,
}


def get_scorer(scoring, estimator):
    """The scoring callable ``scorer(est, X, y) -> float`` (greater is better) for ``scoring``.

    Parameters
    ----------
    scoring : None, str or callable
        ``None``: :func:`nmse_scorer` (``-nMSE``, pooled) for regressors and
        :func:`mean_auc_scorer` (mean per-task ROC AUC) for classifiers. ``"nmse"``,
        ``"amse"``, ``"auc"``: those scorers (``"amse"`` is the task-averaged nMSE); any other
        string is looked up with :func:`sklearn.metrics.get_scorer` (``"r2"``, ``"accuracy"``,
        ``"neg_mean_squared_error"``, ...). A callable is returned unchanged.
    estimator : estimator
        Decides the default (classifier or regressor).
    """
    from sklearn.base import is_classifier
    from sklearn.metrics import get_scorer as sk_get_scorer

    if scoring is None:
        return mean_auc_scorer if is_classifier(estimator) else nmse_scorer
    if callable(scoring):
        return scoring
    if isinstance(scoring, str):
        if scoring in _NAMED_SCORERS:
            return _NAMED_SCORERS[scoring]
        try:
            return sk_get_scorer(scoring)
        except ValueError:
            raise ValueError(
                f"Unknown scoring {scoring!r}: use one of {sorted(_NAMED_SCORERS)} or a "
                "scikit-learn scorer name."
            ) from None
    raise ValueError(f"scoring must be None, a string or a callable, got {scoring!r}.")


# --------------------------------------------------------------------------- default grids
PATH_PARAMETERS: dict[str, str] = {
    "alpha": "decreasing",
    "gamma": "decreasing",
    "lam": "decreasing",
    "C": "increasing",
    "radius": "increasing",
}
"""Parameters a regularization path runs along, and the order that starts with the strongest
regularization (the order of warm starts)."""


def log_grid(top: float, n: int = 10, decades: float = 3.0) -> np.ndarray:
    """``n`` values log-spaced from ``top`` down to ``top * 10**-decades`` (decreasing)."""
    if top <= 0 or not np.isfinite(top):
        raise ValueError(f"top must be positive and finite, got {top!r}.")
    return top * np.logspace(0, -float(decades), n)


def _datafit_of(estimator, X, y, task):
    data, _, _ = estimator._to_data(X, y, task)
    return estimator._make_datafit(data)


def default_param_grid(estimator, X, y, task=None, *, n_alphas: int = 10,
                       alpha_ratio: float = 1e-3) -> dict[str, np.ndarray]:
    """The default one-parameter grid of ``estimator`` on ``(X, y)``, in path order.

    * A model with ``alpha`` and a finite ``alpha_max`` (l1, l2,1, trace norm, capped trace
      norm, ...): ``n_alphas`` values log-spaced from ``alpha_max`` (the smallest ``alpha``
      with ``coef_ = 0``) down to ``alpha_ratio * alpha_max``; likewise ``gamma`` with
      ``gamma_max`` (sparse + low rank).
    * A ridge-type ``alpha`` (``alpha_max`` infinite: independent ridge, pooled): from
      ``10 L`` down to ``10 L * alpha_ratio**2``, where ``L = c * max_t ||X_t||_2^2 / n_t``
      is the Lipschitz constant of the loss gradient (``c`` the loss curvature: 1 for the
      squared loss, 1/4 for the logistic loss), i.e. the largest eigenvalue of a task's
      scaled covariance; ridge shrinks little below the smallest eigenvalues, so the grid is
      wider.
    * ``alpha`` with no ``alpha_max`` (robust MTL): from ``||G||_2`` down, where ``G`` is the
      loss gradient at ``W = 0`` (the ``alpha_max`` of the trace norm).

    Parameters
    ----------
    estimator : multi-task estimator (unfitted; not modified)
    X, y, task
        Training data in any of the three formats.
    n_alphas : int, default=10
    alpha_ratio : float, default=1e-3
        Ratio of the smallest to the largest value (in ``(0, 1)``).

    Returns
    -------
    dict
        ``{name: ndarray of shape (n_alphas,)}``, strongest regularization first.

    Raises
    ------
    ValueError
        When the model has neither ``alpha`` nor ``gamma`` (e.g. ``C`` or ``radius``): pass
        an explicit grid.
    """
    from sklearn.base import clone

    n_alphas = int(n_alphas)
    if n_alphas < 1:
        raise ValueError(f"n_alphas must be >= 1, got {n_alphas!r}.")
    if not 0 < float(alpha_ratio) < 1:
        raise ValueError(f"alpha_ratio must be in (0, 1), got {alpha_ratio!r}.")
    decades = -np.log10(float(alpha_ratio))
    est = clone(estimator)
    params = est.get_params(deep=False)
    for name in ("alpha", "gamma"):
        if name not in params:
            continue
        fn = getattr(est, f"{name}_max", None)
        top = float(fn(X, y, task)) if fn is not None else None
        if top is not None and np.isfinite(top) and top > 0:
            return {name: relative_grid(top, n_alphas, float(alpha_ratio))}
        try:
            datafit = _datafit_of(est, X, y, task)
        except AttributeError:
            break
        if top is not None and np.isinf(top):  # ridge-type
            scale = 10.0 * datafit.lipschitz()
            return {name: log_grid(scale if scale > 0 else 1.0, n_alphas, 2 * decades)}
        scale = datafit.lambda_max("trace")
        return {name: log_grid(scale if scale > 0 else 1.0, n_alphas, decades)}
    raise ValueError(
        f"{type(estimator).__name__} has no 'alpha' or 'gamma' parameter with a default grid: "
        "pass param_grid, e.g. {'C': np.logspace(-2, 2, 5)} or {'radius': [...]}."
    )


# --------------------------------------------------------------------------- paths
def regularization_path(estimator, X, y, task=None, *, param_name: str | None = None,
                        values=None, n_alphas: int = 10, alpha_ratio: float = 1e-3):
    """Fit ``estimator`` along a grid of one parameter with warm starts; keep every solution.

    Parameters
    ----------
    estimator : multi-task estimator (not modified)
    X, y, task
        Training data in any of the three formats.
    param_name : str, optional
        The parameter of the path; default: that of :func:`default_param_grid`.
    values : sequence of float, optional
        The grid, fitted in the given order; default: :func:`default_param_grid`'s (strongest
        regularization first).
    n_alphas, alpha_ratio
        Size and range of the default grid.

    Returns
    -------
    sklearn.utils.Bunch
        ``param`` (str), ``grid`` ``(n_values,)`` (the parameter's values), ``coefs``
        ``(n_values, n_tasks, n_features)`` (the public ``coef_`` orientation),
        ``intercepts`` ``(n_values, n_tasks)``, ``n_iter`` ``(n_values,)``, ``tasks``
        (labels).
    """
    import warnings

    from sklearn.base import clone
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.utils import Bunch

    if values is None:
        grid = default_param_grid(estimator, X, y, task, n_alphas=n_alphas,
                                  alpha_ratio=alpha_ratio)
        if param_name is not None and param_name not in grid:
            raise ValueError(f"No default grid for {param_name!r}: pass values.")
        param_name, values = next(iter(grid.items()))
    elif param_name is None:
        raise ValueError("Give param_name with values.")
    values = np.asarray(list(values), dtype=float)
    est = clone(estimator)
    if "warm_start" in est.get_params(deep=False):
        est.set_params(warm_start=True)
    coefs, intercepts, iters = [], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for v in values:
            est.set_params(**{param_name: v})
            est.fit(X, y, task) if task is not None else est.fit(X, y)
            coefs.append(np.array(est.coef_, copy=True))
            intercepts.append(np.array(est.intercept_, copy=True))
            iters.append(int(getattr(est, "n_iter_", 0)))
    return Bunch(param=param_name, grid=values, coefs=np.stack(coefs),
                 intercepts=np.stack(intercepts), n_iter=np.asarray(iters),
                 tasks=np.asarray(est.tasks_))
