"""Clustered multi-task learning (CMTL) and convex alternating structure optimization (cASO).

Both models minimize (scaling convention of :mod:`multitask.losses`; ``W`` is
``(n_features, n_tasks)``, ``coef_ = W.T``)::

    sum_t (1 / n_t) sum_{i in t} ell(y_i, x_i^T w_t + b_t)
        + alpha * eta (1 + eta) * min_M tr(W (eta I + M)^{-1} W^T)          (CMTL)
        + alpha * eta (1 + eta) * min_M tr(W^T (eta I + M)^{-1} W)          (cASO)

over ``M`` with ``tr M = k`` and ``0 <= M <= I``: ``M`` is ``n_tasks x n_tasks`` for CMTL
(Zhou, Chen & Ye, "Clustered multi-task learning via alternating structure optimization",
NIPS 2011; ``k`` the number of task clusters) and ``n_features x n_features`` for cASO (Chen,
Tang, Liu & Ye, "A convex formulation for learning shared structures from multiple tasks",
ICML 2009; ``k`` the dimension of the shared subspace). ``k`` has the name and meaning of
MALSAR's and RMTL's ``k``. The minimum over ``M`` has a closed form (water-filling on the singular
values of ``W``), which makes each penalty a convex function of ``W`` with an exact prox
(:mod:`multitask.penalties.clustered`): accelerated proximal gradient solves the joint problem
over ``(W, M)``, and the optimal ``M`` is recovered from the solution.

Conversions (``eta`` is ``rho2 / rho1`` in MALSAR and ``Lam2 / Lam1`` in RMTL):

* RMTL ``MTL(Regularization="CMTL", Lam1, Lam2, k)`` (mean losses with intercepts, as here):
  ``alpha = Lam1``, ``eta = Lam2 / Lam1``, same ``k``.
* MALSAR ``Logistic_CMTL`` / ``Logistic_CASO`` (mean logistic loss with intercepts):
  ``alpha = rho1``, ``eta = rho2 / rho1``.
* MALSAR ``Least_CMTL`` / ``Least_CASO`` (``sum_t 0.5 ||y_t - X_t w_t||^2``, no intercept):
  ``fit_intercept=False`` on the rows of task ``t`` multiplied by ``sqrt(n_t)``, with
  ``alpha = rho1`` and ``eta = rho2 / rho1``; with ``n`` rows in every task, equivalently the
  unscaled data with ``alpha = rho1 / n``.

With more than two classes (one multinomial model per task, ``m K`` task-class columns of
``W``; :mod:`multitask.losses.multinomial`), CMTL's ``M`` stays over the ``m`` tasks and acts as
``M kron I_K`` (the tasks are clustered by their weights of every class together: ``M_`` and
``labels_`` describe the ``m`` tasks, ``structure_eigenvalues_`` has ``min(n_features K,
n_tasks)`` entries), and cASO's ``M`` over the features is shared by every task and class
(``structure_basis_`` has ``min(n_features, n_tasks K)`` rows).
"""

from __future__ import annotations

import warnings
from numbers import Integral

import numpy as np
from scipy.cluster.vq import kmeans2
from sklearn.cluster import KMeans
from sklearn.utils._param_validation import Interval

from multitask.estimators._grid_scales import ridge_grid_top
from multitask.estimators.base import (
    GridSpan,
    MultiTaskClassifierBase,
    MultiTaskRegressorBase,
    Param,
    nonnegative,
    positive,
)
from multitask.estimators.docstrings import pair_doc
from multitask.estimators.fitted_state import Fitted, length_of
from multitask.estimators.multiclass import column_classes
from multitask.losses import Datafit
from multitask.penalties.class_columns import stack_classes
from multitask.penalties.clustered import (
    ClusterRelaxation,
    SubspaceRelaxation,
    leftover_eigenvalue,
    structure_eigenvalues,
)
from multitask.penalties.prox import safe_svd

__all__ = [
    "ClusteredMTLClassifier",
    "ClusteredMTLRegressor",
    "ConvexASOClassifier",
    "ConvexASORegressor",
    "spectral_task_clusters",
]


def spectral_task_clusters(M: np.ndarray, n_clusters: int, random_state: int = 0) -> np.ndarray:
    """Task clusters from a (relaxed) cluster matrix ``M``: k-means on its top eigenvectors.

    ``M`` relaxes ``F F^T`` for the normalized cluster-indicator matrix ``F`` (``F^T F = I``);
    the rows of ``F`` of the tasks of one cluster are equal, so k-means on the rows of the
    ``n_clusters`` leading eigenvectors of ``M`` recovers the clusters (the spectral relaxation
    of k-means).

    Parameters
    ----------
    M : ndarray of shape (n_tasks, n_tasks)
        Symmetric.
    n_clusters : int
        ``1 <= n_clusters <= n_tasks``.
    random_state : int, default=0
        Seed of k-means (10 initializations).

    Returns
    -------
    labels : ndarray of shape (n_tasks,)
        Cluster index of each task, numbered in order of first appearance.
    """
    M = np.asarray(M, dtype=np.float64)
    m = M.shape[0]
    if not 1 <= n_clusters <= m:
        raise ValueError(f"n_clusters must lie in [1, n_tasks={m}], got {n_clusters!r}.")
    if n_clusters == 1:
        return np.zeros(m, dtype=np.int64)
    _, vecs = np.linalg.eigh(0.5 * (M + M.T))
    Z = vecs[:, ::-1][:, :n_clusters]
    raw = _kmeans(Z, n_clusters, random_state)
    _, first = np.unique(raw, return_index=True)
    relabel = np.empty(n_clusters, dtype=np.int64)
    relabel[raw[np.sort(first)]] = np.arange(first.size)
    return relabel[raw]


def _kmeans(Z: np.ndarray, k: int, random_state) -> np.ndarray:
    """k-means labels of the rows of ``Z``: the best (lowest within-cluster sum of squares) of
    10 runs of SciPy's ``kmeans2`` with k-means++ starts (scikit-learn's ``KMeans`` with
    ``n_init=10`` gives the same clusters at a far higher cost on a few dozen tasks,
    docs/tuning_constants.md, a cost which the fit of a small model would not
    otherwise spend); scikit-learn's when no run finds ``k`` non-empty clusters."""
    rng = np.random.default_rng(random_state)
    best, best_inertia = None, np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # kmeans2 warns of an empty cluster: that run is skipped
        for _ in range(10):
            centres, labels = kmeans2(Z, k, minit="++", seed=rng)
            if np.unique(labels).size < k:
                continue
            inertia = float(np.sum((Z - centres[labels]) ** 2))
            if inertia < best_inertia:
                best, best_inertia = labels, inertia
    if best is None:
        best = KMeans(n_clusters=k, n_init=10, random_state=random_state).fit_predict(Z)
    return np.asarray(best, dtype=np.int64)


class _Structure:
    """What CMTL and cASO share: the parameters ``alpha``, ``eta`` and ``k``, FISTA, the stored
    ``M``."""

    _params = {
        "alpha": Param(0.1, [nonnegative], keyword_only=False, classifier_default=0.01),
        "eta": Param(0.1, [positive]),
        "k": Param(1, [Interval(Integral, 1, None, closed="left")]),
    }
    _max_iter = 5000
    _penalty_class: type = ClusterRelaxation
    #: Parameters the default grid leaves at their set value, and why (MultiTaskCV notes it).
    _grid_held = {"k": "the number of clusters (CMTL) or the subspace dimension (cASO) is the "
                       "size of the structure, not a strength; each value multiplies the "
                       "cost of cross-validation and larger values converge more slowly"}

    def _grid_tops(self, datafit, penalty):
        """``alpha`` (the path: a ridge-type strength, from ``10 L`` down over twice the
        decades, ``L`` the Lipschitz constant of the loss gradient) and ``eta`` inside
        ``[1e-3, 10]``: ``eta`` is a ratio (directions chosen by ``M`` cost ``alpha eta``,
        the others ``alpha (1 + eta)``), without a unit to take from the data; at 10 the
        structure costs within 10% of a ridge (the model is independent ridge), at 1e-3 the
        chosen directions are a thousand times cheaper than the others."""
        return {"alpha": (ridge_grid_top(datafit), 2.0),
                "eta": GridSpan(10.0, 1e-3, interior=True)}

    def _make_penalty(self, datafit: Datafit):
        penalty = self._penalty_class(float(self.alpha), float(self.eta), float(self.k),
                                      n_classes=column_classes(datafit))
        penalty.check_size((datafit.data.n_features, datafit.data.n_tasks))
        return penalty

    def _structure(self, W: np.ndarray, n_classes: int = 1):
        """``(basis (R, p), gamma (R,), leftover)``: the eigen-decomposition of the optimal
        ``M`` at ``W`` (rows of ``basis``: singular vectors of ``W`` on the side of ``M``; of
        the stacked ``W~`` for CMTL with ``K`` columns per task, module docstring)."""
        k = float(self.k)
        side = self._penalty_class.side
        if side == "tasks":
            W = stack_classes(W, n_classes)
        p = W.shape[1] if side == "tasks" else W.shape[0]
        U, s, Qt = safe_svd(W)
        gamma = structure_eigenvalues(s, float(self.eta), k, p)
        basis = np.array(Qt if side == "tasks" else U.T)
        # sign convention: the largest entry of each basis vector in absolute value is > 0
        if basis.size:
            rows = np.arange(basis.shape[0])
            basis *= np.where(basis[rows, np.argmax(np.abs(basis), axis=1)] < 0, -1.0, 1.0)[
                :, None]
        return basis, gamma, leftover_eigenvalue(gamma, k, p)

    @staticmethod
    def _matrix(basis: np.ndarray, gamma: np.ndarray, leftover: float) -> np.ndarray:
        M = (basis.T * (gamma - leftover)) @ basis + leftover * np.eye(basis.shape[1])
        return 0.5 * (M + M.T)


_COMMON_DOC = """
    alpha : float, default={alpha}
        Strength (>= 0): MALSAR's ``rho1``, RMTL's ``Lam1`` (see the module docstring for the
        loss scalings).
    eta : float, default=0.1
        ``eta > 0``: MALSAR's ``rho2 / rho1``. Directions selected by ``M`` cost
        ``alpha * eta * ||.||^2``, the others ``alpha * (1 + eta) * ||.||^2``: small ``eta``
        means a strong structure."""


def _cluster_labels(est, value, sizes) -> str | None:
    """``labels_``: cluster indices in ``[0, k)``."""
    if value.size and (int(value.min()) < 0 or int(value.max()) >= int(est.k)):
        return f"must hold cluster indices in [0, {int(est.k)})"
    return None


class _ClusteredMTL(_Structure):
    _penalty_class = ClusterRelaxation
    _renamed = {"n_clusters": "it is now 'k' (tr M, the number of task clusters)"}

    _fitted_state = {
        "structure_eigenvalues_": Fitted("array", shape=(None,),
                                         check=length_of(lambda s: min(s["d"] * s["K"],
                                                                       s["t"]))),
        "M_": Fitted("array", shape=("t", "t")),
        "labels_": Fitted("array", shape=("t",), dtype="iu", check=_cluster_labels),
    }

    def _store_extra(self, result, penalty, datafit) -> None:
        basis, gamma, leftover = self._structure(result.W, column_classes(datafit))
        self.structure_eigenvalues_ = gamma
        self.M_ = self._matrix(basis, gamma, leftover)
        self.labels_ = spectral_task_clusters(self.M_, int(self.k))

    def _new_task_context(self) -> dict:
        """The task clusters: a new task joins the one giving its problem the lowest
        objective (:func:`~multitask.penalties.new_task.new_task_prior`)."""
        return {"labels": self.labels_}


_CMTL_DOC = """
    Minimizes ``{loss} + alpha * eta (1 + eta) * min_M tr(W (eta I + M)^{{-1}} W^T)`` over
    the task-by-task matrix ``M`` with ``tr M = k`` and ``0 <= M <= I``: the convex
    relaxation of clustering the tasks' weight vectors into ``k`` groups (Zhou, Chen
    & Ye, NIPS 2011; MALSAR/RMTL ``CMTL``). The penalty is
    :class:`~multitask.penalties.clustered.ClusterRelaxation` (convex, exact prox), solved by
    accelerated proximal gradient; the optimal ``M`` comes with the solution.

    Parameters
    ----------{common}
    k : int, default=1
        ``tr M`` (``1 <= k <= n_tasks``): the number of task clusters (MALSAR's and RMTL's
        ``k``).
{loss_param}    {{common_parameters}}

    Attributes
    ----------
    coef_ : ndarray of shape (n_tasks, n_features)
    intercept_ : ndarray of shape (n_tasks,)
    tasks_ : ndarray of shape (n_tasks,)
    M_ : ndarray of shape (n_tasks, n_tasks)
        The learned relaxed cluster matrix (``M = F F^T`` for a normalized cluster indicator
        ``F`` in the unrelaxed problem), in the order of ``tasks_``.
    labels_ : ndarray of shape (n_tasks,)
        Task clusters: k-means on the ``k`` leading eigenvectors of ``M_``
        (:func:`spectral_task_clusters`).
    structure_eigenvalues_ : ndarray of shape (min(n_features, n_tasks),)
        Eigenvalues of ``M_`` on the right singular vectors of ``W`` (decreasing singular
        values); the other eigenvalues share the rest of the trace equally.
    n_iter_, objective_, converged_, optimality_, solver_
        See :mod:`multitask.estimators.base`.
"""


class ClusteredMTLRegressor(_ClusteredMTL, MultiTaskRegressorBase):
    __doc__ = pair_doc(
        "Clustered multi-task least squares (convex CMTL).", _CMTL_DOC, classifier=False,
        common=_COMMON_DOC.format(alpha="0.1"), examples="""
    Examples
    --------
    >>> import numpy as np
    >>> from multitask import ClusteredMTLRegressor
    >>> rng = np.random.default_rng(0)
    >>> centers = rng.standard_normal((5, 2))
    >>> W = centers[:, [0, 0, 0, 1, 1, 1]]
    >>> X = rng.standard_normal((40, 5))
    >>> model = ClusteredMTLRegressor(alpha=0.05, k=2).fit(X, X @ W)
    >>> model.labels_
    array([0, 0, 0, 1, 1, 1])
    """
    )


class ClusteredMTLClassifier(_ClusteredMTL, MultiTaskClassifierBase):
    __doc__ = pair_doc(
        "Clustered multi-task binary classification (convex CMTL).", _CMTL_DOC,
        classifier=True, common=_COMMON_DOC.format(alpha="0.01"))


def _components_rows(est, value, sizes) -> str | None:
    """``components_`` holds the first ``min(k, r)`` rows of ``structure_basis_``."""
    basis = getattr(est, "structure_basis_", None)
    if not isinstance(basis, np.ndarray) or basis.ndim != 2:
        return None  # reported on structure_basis_
    rows = min(int(est.k), basis.shape[0])
    if value.shape[0] != rows or not np.array_equal(value, basis[:rows]):
        return f"must be the first {rows} rows of structure_basis_"
    return None


class _ConvexASO(_Structure):
    _penalty_class = SubspaceRelaxation
    _renamed = {"n_components": "it is now 'k' (tr M, the dimension of the shared subspace)"}

    _fitted_state = {
        "structure_basis_": Fitted("array", shape=("r", "d"),
                                   check=length_of(lambda s: min(s["d"], s["t"] * s["K"]))),
        "structure_eigenvalues_": Fitted("array", shape=("r",)),
        "structure_leftover_": Fitted("float"),
        "components_": Fitted("array", shape=(None, "d"), check=_components_rows),
    }

    def _store_extra(self, result, penalty, datafit) -> None:
        basis, gamma, leftover = self._structure(result.W)
        self.structure_basis_ = basis
        self.structure_eigenvalues_ = gamma
        self.structure_leftover_ = float(leftover)
        self.components_ = basis[: min(int(self.k), basis.shape[0])].copy()

    def _new_task_context(self) -> dict:
        """The fitted feature structure ``M``: a new task's prior reads it as stored
        (:func:`~multitask.penalties.new_task.new_task_prior`)."""
        if not hasattr(self, "structure_basis_"):  # the rule then computes M from W
            return {}
        return {"structure": (self.structure_basis_, self.structure_eigenvalues_,
                              self.structure_leftover_)}

    @property
    def M_(self) -> np.ndarray:
        """The learned ``M`` (``n_features x n_features``), computed on access from
        ``structure_basis_``, ``structure_eigenvalues_`` and ``structure_leftover_``."""
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "structure_basis_")
        return self._matrix(self.structure_basis_, self.structure_eigenvalues_,
                            self.structure_leftover_)


_CASO_DOC = """
    Minimizes ``{loss} + alpha * eta (1 + eta) * min_M tr(W^T (eta I + M)^{{-1}} W)`` over
    the feature-by-feature matrix ``M`` with ``tr M = k`` and ``0 <= M <= I``: the convex
    relaxation of a shared ``k``-dimensional subspace ``Theta`` of the
    feature space, ``M = Theta^T Theta`` (Chen, Tang, Liu & Ye, ICML 2009; MALSAR ``CASO``).
    The penalty is :class:`~multitask.penalties.clustered.SubspaceRelaxation` (convex, exact
    prox), solved by accelerated proximal gradient.

    Parameters
    ----------{common}
    k : int, default=1
        ``tr M`` (``1 <= k <= n_features``): the dimension of the shared subspace (MALSAR's
        ``k``).
{loss_param}    {{common_parameters}}

    Attributes
    ----------
    coef_ : ndarray of shape (n_tasks, n_features)
    intercept_ : ndarray of shape (n_tasks,)
    tasks_ : ndarray of shape (n_tasks,)
    components_ : ndarray of shape (min(k, R), n_features)
        Orthonormal rows spanning the learned shared subspace (the leading eigenvectors of
        ``M``; ``R = min(n_features, n_tasks)``).
    structure_basis_ : ndarray of shape (R, n_features)
        The left singular vectors of ``W`` (rows), on which ``M`` has the eigenvalues
        ``structure_eigenvalues_``; ``M`` has the eigenvalue ``structure_leftover_`` on their
        orthogonal complement.
    structure_eigenvalues_ : ndarray of shape (R,)
    structure_leftover_ : float
    M_ : ndarray of shape (n_features, n_features)
        The learned ``M`` (a property computed on access: ``8 n_features^2`` bytes).
    n_iter_, objective_, converged_, optimality_, solver_
        See :mod:`multitask.estimators.base`.
"""


class ConvexASORegressor(_ConvexASO, MultiTaskRegressorBase):
    __doc__ = pair_doc(
        "Multi-task least squares with a learned shared subspace (convex ASO).", _CASO_DOC,
        classifier=False,
        common=_COMMON_DOC.format(alpha="0.1"), examples="""
    Examples
    --------
    >>> import numpy as np
    >>> from multitask import ConvexASORegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((50, 6))
    >>> W = np.outer(np.ones(6), rng.standard_normal(4))  # one shared direction
    >>> model = ConvexASORegressor(alpha=0.05, k=1).fit(X, X @ W)
    >>> model.components_.shape
    (1, 6)
    """
    )


class ConvexASOClassifier(_ConvexASO, MultiTaskClassifierBase):
    __doc__ = pair_doc(
        "Multi-task binary classification with a learned shared subspace (convex ASO).",
        _CASO_DOC,
        classifier=True, common=_COMMON_DOC.format(alpha="0.01"))
