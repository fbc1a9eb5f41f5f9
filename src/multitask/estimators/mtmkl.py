"""Multi-task multiple kernel learning classifier (Widmer, Kloft, Sreedharan & Rätsch).

``MultiTaskKernelClassifier`` learns ``T`` binary tasks that share a base kernel ``k`` and are
coupled by task kernels ``B_1..B_M`` (``(T, T)``, positive semidefinite): the joint kernel is

    k((x, s), (z, t)) = sum_m theta_m B_m[s, t] k(x, z),

with ``theta`` learned in ``{theta >= 0, ||theta||_p <= 1}`` (or fixed). In the primal, with
``W_m`` of shape ``(n_features, T)`` and ``Q_m = B_m^{-1}``,

    min_{theta, W, b}  (1/2) sum_m tr(W_m Q_m W_m^T) / theta_m + (1/2) sum_t b_t^2 / c^2
                       + C sum_i loss(y_i f_{t_i}(x_i)),
    f_t(x) = sum_m phi(x)^T W_m[:, t] + b_t,

with the hinge ``max(0, 1 - z)`` or squared hinge ``max(0, 1 - z)^2`` loss. This is the SVM /
LIBLINEAR convention (a sum of the losses over all rows, not the library's ``1/n_t``-scaled
mean); the library's strength ``alpha`` is ``1 / C``: dividing the objective by ``C`` gives
``sum_i loss + alpha * (regularizer)``. The model lives in a separate kernel-dual stack (dual
coordinate descent on the joint kernel, the lp-norm weight step), see the architecture page.
The per-task bias ``b_t`` is
the weight of a constant feature ``c = intercept_scaling`` (regularized, like LinearSVC's
intercept); ``fit_intercept=False`` gives the paper's bias-free model.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.metrics.pairwise import pairwise_kernels
from sklearn.utils.validation import check_is_fitted

from multitask.data import as_multitask_data, check_not_complex, check_scalar_param
from multitask.estimators.base import MAX_ITER_LIMIT, MultiTaskClassifierBase, is_task_list
from multitask.estimators.fitted_state import Fitted, in_range
from multitask.kernels.task_similarity import check_similarity_params, make_task_kernels
from multitask.solvers.dcd import mtmkl_dcd, mtmkl_kernel

__all__ = ["MultiTaskKernelClassifier", "MultitaskKernelClassifier"]


def _precomputed(est) -> bool:
    return isinstance(est.kernel, str) and est.kernel == "precomputed"


def _solver_duals(est, value, sizes) -> str | None:
    """``alpha_`` holds the dual variables of the solver's record, in the user's row order."""
    record = getattr(getattr(est, "solver_result_", None), "info", None)
    duals = record.get("alpha") if isinstance(record, dict) else None
    if not isinstance(duals, np.ndarray) or duals.shape != np.shape(value) or not np.array_equal(
            np.sort(duals), np.sort(value)):
        return "does not match the dual variables of solver_result_"
    return None


def _permutation(est, value, sizes) -> str | None:
    if not np.array_equal(np.sort(value), np.arange(len(value))):
        return "must be a permutation of the training rows"
    return None


class MultiTaskKernelClassifier(MultiTaskClassifierBase):
    """Multi-task (multiple kernel) SVM with learned task-similarity weights.

    Parameters
    ----------
    alpha : float > 0, default=1.0
        Regularization strength, ``1 / C`` of the SVM convention (the objective is
        ``sum_i loss_i + alpha * (1/2) sum_m tr(W_m Q_m W_m^T) / theta_m``, bias term included).
    p : float >= 1 or ``np.inf``, default=2.0
        Norm of the constraint ``||theta||_p <= 1`` on the task-kernel weights; ``p = 1`` gives
        sparse weights, larger ``p`` more uniform ones, ``np.inf`` fixes ``theta = 1`` (the sum
        of the task kernels, "vanilla" MTL). Irrelevant with a single task kernel.
    loss : {"hinge", "squared_hinge"}, default="hinge"
    task_similarity : str, ndarray, list of ndarrays or callable, default="shared-individual"
        Task kernels ``B_m`` (rows in the order of ``tasks_``, the sorted task labels) or a
        preset (:data:`multitask.kernels.PRESETS`): ``"individual"`` (``I``), ``"union"``
        (``1 1^T``), ``"feda"`` (``I + 1 1^T``), ``"regularized"`` (``I + 1 1^T / rho``),
        ``"shared-individual"`` (``[I, 1 1^T]``, learned trade-off), ``"clustering"``,
        ``"graph"``, ``"multigraph"``, ``"hierarchical"``, ``"smooth"``. A callable gets the
        task labels and returns kernel(s).
    similarity_params : dict, optional
        Preset parameters (``rho``, ``lam``, ``adjacency``, ``adjacencies``, ``laplacian``,
        ``convention``, ``pinv``, ``tree``, ``nodes``, ``kind``, ``clusters``, ``distances``,
        ``sigmas``, ``project``): only the keys the chosen preset reads; any other key (or any
        key with task kernels given as matrices or a callable) is a ``ValueError`` naming it.
    theta : array-like (M,), optional
        Fixed task-kernel weights (no weight learning).
    kernel : {"linear", "precomputed", "rbf", "poly", "sigmoid", "cosine", "laplacian", ...}
        or callable, default="linear"
        Base kernel. ``"linear"`` uses the features explicitly (dual coordinate descent with
        primal weights, ``coef_`` available; dense or CSR). Others go through
        ``sklearn.metrics.pairwise_kernels``; ``"precomputed"`` expects ``X`` to be the
        ``(n_samples, n_train)`` base-kernel matrix against the training rows (long format).
    kernel_params : dict, optional
        Keyword arguments of the base kernel (``gamma``, ``degree``, ``coef0``...).
    solver : {"auto", "dcd", "svc"}, default="auto"
        ``"dcd"``: dual coordinate descent (linear: on the features; otherwise on the joint
        kernel matrix). ``"svc"``: scikit-learn's ``SVC(kernel="precomputed")`` on the joint
        kernel (hinge loss; it adds one shared unpenalized intercept). ``"auto"``: ``"dcd"``.
    fit_intercept : bool, default=True
        Learn a per-task bias as the weight of a constant feature ``intercept_scaling``.
    intercept_scaling : float > 0, default=1.0
    tol : float > 0, default=1e-4
        Relative duality gap of each SVM step and relative decrease of the objective between
        alternations.
    max_iter : int, default=1000
        Maximum epochs of each SVM step (dual coordinate descent).
    max_mkl_iter : int, default=100
        Maximum alternations of SVM step and theta step.
    shrinking : bool, default=True
        LIBLINEAR's shrinking heuristic in the linear solver.
    random_state : int, RandomState or None, default=None
        Seeds the coordinate permutations.
    task_column : int, optional
        Column of ``X`` holding the task ids (long format inside scikit-learn tools).

    Attributes
    ----------
    coef_ : ndarray of shape (n_tasks, n_features)
        Per-task weights ``sum_m W_m[:, t]`` (linear kernel only).
    intercept_ : ndarray of shape (n_tasks,)
    theta_ : ndarray of shape (M,)
        Task-kernel weights.
    task_kernels_ : list of ndarray (T, T)
    task_similarity_ : ndarray of shape (T, T)
        Learned task kernel ``B_theta = sum_m theta_m B_m``.
    alpha_ : ndarray of shape (n_samples,)
        Dual variables, in the order of the training rows (long format).
    tasks_, classes_, n_features_in_, n_iter_ (alternations), objective_, converged_
    duality_gap_ : float
        Gap of the full problem at the returned point.
    optimality_ : float
        The relative duality gap ``duality_gap_ / |primal objective|``: this model's
        optimality measure (the library's prox-gradient measure does not apply to the
        kernel-dual stack).
    solver_ : str
        ``"dcd"`` or ``"svc"``.
    history_ : dict
        Per alternation: objective after the SVM and theta steps, dual value, gap, theta.

    Notes
    -----
    Widmer, Kloft, Sreedharan & Rätsch, "Framework for multi-task multiple kernel learning and
    applications in genome analysis", arXiv:1506.09153: Algorithm 1 with the corrected
    coordinate step of Algorithm 2.
    """

    _default_loss = "hinge"
    #: The kernel-dual stack's fitted state (no solver variables of the generic base).
    _fitted_state = {
        "coef_variable_": None,
        "intercept_variable_": None,
        "solver_info_": None,
        "coef_": Fitted("array", shape=("m", "d"), when=lambda est: est._is_linear()),
        "solver_": Fitted("str", choices=("dcd", "svc")),
        "theta_": Fitted("array", shape=("p",), nonnegative=True),
        "task_kernels_": Fitted("list", shape=("p",), item=Fitted("array", shape=("m", "m"))),
        "task_similarity_": Fitted("array", shape=("m", "m")),
        "alpha_": Fitted("array", shape=("n",), check=_solver_duals),
        "duality_gap_": Fitted("float", nan=True),
        # the relative duality gap: rounding can leave it a little below zero
        "optimality_": Fitted("float", nan=True),
        "history_": Fitted("dict"),
        "_X_fit": Fitted("sparse_or_array", shape=("n", "d"), when=lambda est: not (
            est._is_linear() or _precomputed(est))),
        "_fit_order": Fitted("array", shape=("n",), dtype="iu", optional=True,
                             check=_permutation, when=_precomputed),
        "_dual_coef": Fitted("array", shape=("n",), when=lambda est: not est._is_linear()),
        "_task_fit": Fitted("array", shape=("n",), dtype="iu", check=in_range("m"),
                            when=lambda est: not est._is_linear()),
    }
    _renamed = {"C": "it is now 'alpha' = 1 / C (the strength of the regularizer)"}
    _grid_held = {
        "p": "the norm of the kernel-weight constraint is a choice of how the task kernels "
             "combine (p = 1 selects kernels, large p averages them), not a strength",
    }

    def __init__(
        self,
        alpha: float = 1.0,
        p: float = 2.0,
        loss: str = "hinge",
        task_similarity="shared-individual",
        similarity_params: dict | None = None,
        theta=None,
        kernel="linear",
        kernel_params: dict | None = None,
        solver: str = "auto",
        fit_intercept: bool = True,
        intercept_scaling: float = 1.0,
        tol: float = 1e-4,
        max_iter: int = 1000,
        max_mkl_iter: int = 100,
        shrinking: bool = True,
        random_state=None,
        task_column: int | None = None,
    ):
        self.alpha = alpha
        self.p = p
        self.loss = loss
        self.task_similarity = task_similarity
        self.similarity_params = similarity_params
        self.theta = theta
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.solver = solver
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.tol = tol
        self.max_iter = max_iter
        self.max_mkl_iter = max_mkl_iter
        self.shrinking = shrinking
        self.random_state = random_state
        self.task_column = task_column

    def default_grid(self, X, y, task=None, *, sample_weight=None, n_alphas: int = 10,
                     alpha_ratio: float = 1e-3) -> dict[str, np.ndarray]:
        """``alpha`` (``= 1 / C``) log-spaced from 10 down to ``10 * alpha_ratio``."""
        return {"alpha": 10.0 * np.logspace(0, np.log10(float(alpha_ratio)), int(n_alphas))}

    # ------------------------------------------------------------------ checks
    def _validate_params(self) -> None:
        """The kernel-dual stack's own checks (its parameters are not the presets')."""
        self._check_params()

    def _check_params(self) -> None:
        check_scalar_param(self.alpha, "alpha", allow_zero=False)
        check_scalar_param(self.tol, "tol", allow_zero=False)
        check_scalar_param(self.intercept_scaling, "intercept_scaling", allow_zero=False)
        try:
            p = float(self.p)
        except (TypeError, ValueError):
            raise ValueError(f"p must be a number >= 1 (or inf), got {self.p!r}.") from None
        if not p >= 1.0:
            raise ValueError(f"p must be >= 1 (or inf), got {self.p!r}.")
        if self.loss not in ("hinge", "squared_hinge"):
            raise ValueError(f"loss must be 'hinge' or 'squared_hinge', got {self.loss!r}.")
        if self.solver not in ("auto", "dcd", "svc"):
            raise ValueError(f"solver must be 'auto', 'dcd' or 'svc', got {self.solver!r}.")
        if self.solver == "svc" and self.loss != "hinge":
            raise ValueError("solver='svc' supports loss='hinge' only.")
        for name in ("max_iter", "max_mkl_iter"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not (
                    1 <= v <= MAX_ITER_LIMIT):
                raise ValueError(f"{name} must be an integer in [1, {MAX_ITER_LIMIT}], "
                                 f"got {v!r}.")
        if self.theta is not None:
            try:
                th = np.asarray(self.theta, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"theta must hold numbers, got {self.theta!r}.") from None
            if th.ndim != 1 or not np.all(np.isfinite(th)) or np.any(th < 0) or not np.any(
                    th > 0):
                raise ValueError("theta must be a 1-D array of finite numbers >= 0, not all "
                                 f"zero, got {self.theta!r}.")
        if self.kernel_params is not None and not isinstance(self.kernel_params, dict):
            raise ValueError(f"kernel_params must be a dict, got {self.kernel_params!r}.")
        for key, v in (self.kernel_params or {}).items():
            if isinstance(v, (float, np.floating)) and not np.isfinite(v):
                raise ValueError(f"kernel_params[{key!r}] must be finite, got {v!r}.")
        if self.similarity_params is not None and not isinstance(self.similarity_params, dict):
            raise ValueError(f"similarity_params must be a dict, got {self.similarity_params!r}.")
        check_similarity_params(self.task_similarity, self.similarity_params)

    def _is_linear(self) -> bool:
        return isinstance(self.kernel, str) and self.kernel == "linear" and self.solver != "svc"

    def _validate_X(self, X, reset: bool):
        # non-finite values are reported per task by _check_finite below
        from sklearn.utils.validation import validate_data

        check_not_complex(X)
        return validate_data(
            self,
            X,
            reset=reset,
            accept_sparse="csr",
            dtype=np.float64,
            ensure_min_samples=1,
            ensure_all_finite=False,
        )

    def _check_finite(self, X, task):
        """Raise a ValueError naming the task of the first row holding NaN or infinity."""
        if is_task_list(X):
            for t, Xt in enumerate(X):
                _first_bad_row(Xt, f"X of task {t}")
            return
        if self.task_column is not None or task is None:
            _first_bad_row(X, "X")
            return
        _first_bad_row(X, "X", np.asarray(task))

    # ------------------------------------------------------------------ fit
    def fit(self, X, y, task=None, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : array-like (n, d), sparse matrix, list of per-task arrays, or (n, n) kernel
            Long format with ``task`` (or ``task_column``), a shared design with 2-D ``y``, or
            per-task lists (see :mod:`multitask.data`); the base-kernel matrix for
            ``kernel="precomputed"`` (long format).
        y : array-like
            Two class labels (any values), both present in every task.
        task : array-like (n,), optional
            Task id of each row.
        sample_weight : array-like (n,), optional
            Per-row multiplier of ``C`` (long format).

        Returns
        -------
        self
        """
        self._check_params()
        if not (isinstance(self.kernel, str) and self.kernel == "precomputed"):
            self._check_finite(X, task)
        data, classes, fmt = self._convert(X, y, task)
        if classes is not None and len(classes) > 2:
            raise ValueError(
                f"Only binary classification is supported. {type(self).__name__} is a "
                f"two-class model (an SVM per task with a dual over -1/+1 labels): y has "
                f"{len(classes)} classes. Use a linear classifier of this library with "
                "loss='logistic' (one multinomial model per task).")
        if not np.all(np.isfinite(data.X.data if sp.issparse(data.X) else data.X)):
            raise ValueError("X contains NaN or infinity.")
        self.input_format_ = fmt
        self.tasks_ = data.tasks
        self.classes_ = classes
        T = data.n_tasks
        kernels = make_task_kernels(self.task_similarity, list(data.tasks), self.similarity_params)
        Xs = _stacked_rows(data)
        yv = np.asarray(data.y, dtype=np.float64)
        tv = np.asarray(data.task_of_row, dtype=np.int64)
        order = data.row_order
        sw = None
        if sample_weight is not None:
            if fmt != "long":
                raise ValueError("sample_weight is supported for long-format input only.")
            sw = _row_weights(sample_weight, data, tv, order)
        common = dict(
            C=1.0 / float(self.alpha),
            p=float(self.p),
            loss=self.loss,
            theta=None if self.theta is None else np.asarray(self.theta, dtype=np.float64),
            bias_scale=float(self.intercept_scaling) if self.fit_intercept else 0.0,
            sample_weight=sw,
            tol=float(self.tol),
            max_iter=int(self.max_iter),
            max_outer_iter=int(self.max_mkl_iter),
            random_state=self.random_state,
        )
        if self.theta is not None and np.shape(self.theta) != (len(kernels),):
            raise ValueError(
                f"theta has shape {np.shape(self.theta)} but there are {len(kernels)} task kernels."
            )
        if self._is_linear():
            res = mtmkl_dcd(Xs, yv, tv, T, kernels, shrinking=bool(self.shrinking), **common)
            self.coef_ = np.ascontiguousarray(res.W.T)
        else:
            if isinstance(self.kernel, str) and self.kernel == "precomputed":
                if fmt != "long" and not (fmt == "shared" and T == 1):
                    raise ValueError("kernel='precomputed' needs long-format input (task=).")
                if Xs.shape[0] != Xs.shape[1]:
                    raise ValueError(
                        f"kernel='precomputed' needs a square training kernel, got {Xs.shape}."
                    )
                K = np.asarray(Xs.toarray() if sp.issparse(Xs) else Xs)
                if order is not None:
                    K = K[:, order]
                self._fit_order = order
            else:
                self._X_fit = Xs
                K = self._base_kernel(Xs, Xs)
            solver = "svc" if self.solver == "svc" else "dcd"
            res = mtmkl_kernel(K, yv, tv, T, kernels, solver=solver, **common)
            self._dual_coef = res.info["dual_coef"]
            self._task_fit = tv
        self.intercept_ = np.asarray(res.intercept, dtype=np.float64).copy()
        self.theta_ = np.asarray(res.info["theta"])
        self.task_kernels_ = kernels
        self.task_similarity_ = res.info["B_theta"]
        alpha = res.info["alpha"]
        if order is not None:
            a = np.empty_like(alpha)
            a[order] = alpha
            alpha = a
        self.alpha_ = alpha
        self.n_iter_ = int(res.n_iter)
        self.objective_ = np.asarray(res.objective)
        self.converged_ = bool(res.converged)
        self.duality_gap_ = float(res.info["gap"])
        primal = float(res.objective[-1]) if len(res.objective) else np.nan
        # the kernel-dual stack's optimality measure: the relative duality gap (its stopping
        # rule; see the architecture page)
        self.optimality_ = self.duality_gap_ / max(abs(primal), np.finfo(float).tiny)
        self.solver_ = "dcd" if self._is_linear() or self.solver != "svc" else "svc"
        self.history_ = res.info["history"]
        self.solver_result_ = res
        return self

    def _base_kernel(self, A, B):
        if callable(self.kernel):
            return np.asarray(self.kernel(A, B), dtype=np.float64)
        return pairwise_kernels(A, B, metric=self.kernel, **(self.kernel_params or {}))

    # ------------------------------------------------------------------ predict
    def _scores(self, X, task=None):
        check_is_fitted(self, "theta_")
        if self._is_linear():
            return super()._scores(X, task)
        fmt = self.input_format_
        if is_task_list(X):
            data, _ = as_multitask_data(
                X, None, known_tasks=self.tasks_, n_features=self.n_features_in_
            )
        else:
            X = self._validate_X(X, reset=False)
            if fmt == "long" and task is None and self.task_column is None and len(self.tasks_) > 1:
                raise ValueError(
                    "This model was fitted on long-format data with several tasks: pass the "
                    "task id of each row as task=, or use task_column."
                )
            data, _ = as_multitask_data(
                X, None, task, task_column=self.task_column, known_tasks=self.tasks_
            )
        Xs = _stacked_rows(data)
        if not np.all(np.isfinite(Xs.data if sp.issparse(Xs) else Xs)):
            raise ValueError("X contains NaN or infinity.")
        if isinstance(self.kernel, str) and self.kernel == "precomputed":
            Kx = np.asarray(Xs.toarray() if sp.issparse(Xs) else Xs)
            if self._fit_order is not None:
                Kx = Kx[:, self._fit_order]
        else:
            Kx = self._base_kernel(Xs, self._X_fit)
        tv = np.asarray(data.task_of_row, dtype=np.int64)
        mix = self._dual_coef[:, None] * self.task_similarity_[self._task_fit, :]
        F = Kx @ mix
        z = F[np.arange(len(tv)), tv] + self.intercept_[tv]
        return self._user_layout(X, data, z)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        if isinstance(self.kernel, str) and self.kernel == "precomputed":
            tags.input_tags.pairwise = True
            tags.input_tags.sparse = False
        return tags


def _stacked_rows(data):
    """Explicit rows of all tasks, stacked by task (a shared design is repeated per task)."""
    if not data.shared:
        return data.X
    blocks = [data.task_X(t) for t in range(data.n_tasks)]
    if sp.issparse(blocks[0]):
        return sp.vstack(blocks, format="csr")
    return np.vstack(blocks)


def _first_bad_row(X, what: str, task=None) -> None:
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        bad = ~np.isfinite(X.data)
        if not np.any(bad):
            return
        k = int(np.flatnonzero(bad)[0])
        row = int(np.searchsorted(X.indptr, k, side="right") - 1)
    else:
        A = np.asarray(X)
        if A.dtype.kind not in "biuf":
            return  # complex, object, strings: reported by the data layer
        A = A.astype(np.float64, copy=False)
        if A.ndim != 2:
            return
        finite = np.isfinite(A)
        if finite.all():
            return
        row = int(np.argwhere(~finite)[0][0])
    where = f"row {row}"
    if task is not None and len(task) > row:
        label = task[row].item() if isinstance(task[row], np.generic) else task[row]
        where += f" (task {label!r})"
    raise ValueError(f"{what} contains NaN or infinity at {where}.")


def _row_weights(sample_weight, data, task_of_row: np.ndarray, order) -> np.ndarray:
    """The ``(n,)`` row weights of long-format training rows, in the data's row order, checked
    as every model checks them (:mod:`multitask.data.weights`: real numbers, not strings, one
    per row, finite and ``>= 0``, the first bad one named), and refused where every row of a
    task weighs zero (the task would have nothing to fit)."""
    from multitask.data.weights import _long_weights

    sw = _long_weights(sample_weight, len(task_of_row), None)
    if order is not None:
        sw = sw[order]
    totals = np.bincount(task_of_row, weights=sw, minlength=data.n_tasks)
    empty = np.flatnonzero(~(totals > 0))
    if empty.size:
        label = np.asarray(data.tasks)[int(empty[0])]
        label = label.item() if isinstance(label, np.generic) else label
        raise ValueError(f"sample_weight is zero on every row of task {label!r}: the task has "
                         "nothing to fit (drop it, or give a row a positive weight).")
    return sw


class MultitaskKernelClassifier(MultiTaskKernelClassifier):
    """Deprecated alias of :class:`MultiTaskKernelClassifier` (one spelling, ``MultiTask``).

    .. deprecated:: 0.2
        Use :class:`MultiTaskKernelClassifier`; this name will be removed.
    """

    def __init__(self, alpha: float = 1.0, p: float = 2.0, loss: str = "hinge",
                 task_similarity="shared-individual", similarity_params: dict | None = None,
                 theta=None, kernel="linear", kernel_params: dict | None = None,
                 solver: str = "auto", fit_intercept: bool = True,
                 intercept_scaling: float = 1.0, tol: float = 1e-4, max_iter: int = 1000,
                 max_mkl_iter: int = 100, shrinking: bool = True, random_state=None,
                 task_column: int | None = None):
        import warnings

        warnings.warn("MultitaskKernelClassifier is deprecated: use MultiTaskKernelClassifier.",
                      FutureWarning, stacklevel=2)
        super().__init__(alpha=alpha, p=p, loss=loss, task_similarity=task_similarity,
                         similarity_params=similarity_params, theta=theta, kernel=kernel,
                         kernel_params=kernel_params, solver=solver,
                         fit_intercept=fit_intercept, intercept_scaling=intercept_scaling,
                         tol=tol, max_iter=max_iter, max_mkl_iter=max_mkl_iter,
                         shrinking=shrinking, random_state=random_state,
                         task_column=task_column)
