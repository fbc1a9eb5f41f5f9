"""Graph-regularized multi-task learning and the mean-regularized model.

The graph model (MALSAR's ``SRMTL``, RMTL's ``Graph``) minimizes, in the library's scaling
(``F = sum_t (1/n_t) sum_{i in t} ell(y_i, x_i^T w_t + b_t)``, ``W`` of shape
``(n_features, n_tasks)``)::

    F(W, b) + alpha * tr(W L W^T) + alpha_l1 * ||W||_1 + (alpha_l2 / 2) ||W||_F^2

for a task graph given as an adjacency matrix ``A`` (``L = D - A``, so that
``tr(W L W^T) = sum_{s < t} A_st ||w_s - w_t||^2``), a list of edges, a Laplacian (any
symmetric positive semi-definite ``L``), or MALSAR's structure matrix ``R``
(``L = R R^T``, so the term is ``alpha ||W R||_F^2``). The mean-regularized model of Evgeniou
& Pontil ("Regularized multi-task learning", KDD 2004) is the complete graph with weights
``1 / m``: ``alpha * sum_t ||w_t - w_bar||^2``. Penalties:
:class:`~multitask.penalties.graph.GraphRegularization` and
:class:`~multitask.penalties.graph.MeanRegularization` (the graph term is their ``"smooth"``
part, a task coupling ``tr(W K W^T) / 2`` with ``K = 2 alpha L``). Solvers: for least squares
the exact linear solve when the model is a quadratic (``alpha_l1 = 0``, the mean model:
``"exact"``, :class:`~multitask.solvers.exact.QuadraticExact`), else block coordinate descent
(``"bcd"``: each entry minimized exactly with ``W K`` kept up to date, Anderson-accelerated);
for classification accelerated proximal gradient (``"fista"``); ``"pg"`` on request.

With more than two classes (one multinomial model per task, ``m K`` task-class columns of
``W``; :mod:`multitask.losses.multinomial`) the graph acts as ``L kron I_K``: class ``k`` of task
``t`` is pulled towards class ``k`` of the tasks joined to ``t``, the classes of a task are not
pulled together, and ``laplacian_`` stays the ``m x m`` task matrix. The mean model pulls each
class towards the mean of that class over the tasks (``mean_coef_`` then has one row per
class). A class a task never saw has no loss on its column: the graph alone sets its weights,
the neighbours' weights of that class (its intercept is ``-inf``: it is never predicted there).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import StrOptions

from multitask.estimators._grid_scales import ridge_grid_top
from multitask.estimators.base import (
    MultiTaskClassifierBase,
    MultiTaskRegressorBase,
    Param,
    nonnegative,
)
from multitask.estimators.docstrings import CLASSIFICATION_LOSS, REGRESSION_LOSS
from multitask.estimators.fitted_state import Fitted, class_columns_of, derived, fit_weights
from multitask.estimators.multiclass import class_shape, column_classes, task_count, task_labels
from multitask.kernels.task_similarity import graph_laplacian
from multitask.losses import Datafit
from multitask.penalties.graph import (
    GraphRegularization,
    MeanRegularization,
    check_task_matrix,
    mean_laplacian,
)

__all__ = [
    "GRAPH_TYPES",
    "GraphRegularizedClassifier",
    "GraphRegularizedRegressor",
    "MeanRegularizedClassifier",
    "MeanRegularizedRegressor",
    "task_graph_laplacian",
]

#: How the ``graph`` parameter is read (``"auto"`` decides from its shape and entries).
GRAPH_TYPES = ("auto", "adjacency", "laplacian", "edges", "structure")


def _edges_laplacian(edges, tasks) -> np.ndarray:
    """Laplacian of the weighted edges ``(s, t[, weight])`` between task labels."""
    m = len(tasks)
    where = {}
    for pos, label in enumerate(tasks):
        where[label.item() if isinstance(label, np.generic) else label] = pos
    A = np.zeros((m, m))
    for k, edge in enumerate(edges):
        edge = list(edge.tolist() if isinstance(edge, np.ndarray) else edge)
        if len(edge) not in (2, 3):
            raise ValueError(f"Edge {k} of the graph must be (task, task) or (task, task, "
                             f"weight), got {tuple(edge)!r}.")
        ends = []
        for label in edge[:2]:
            key = label.item() if isinstance(label, np.generic) else label
            if isinstance(key, float) and key.is_integer():
                key = int(key)
            if key not in where:
                raise ValueError(f"Edge {k} of the graph names the task {label!r}, which is "
                                 f"not among the tasks of the data {list(tasks)[:10]}.")
            ends.append(where[key])
        weight = float(edge[2]) if len(edge) == 3 else 1.0
        if not np.isfinite(weight) or weight < 0:
            raise ValueError(f"Edge {k} of the graph has weight {weight!r}: weights must be "
                             "finite and >= 0.")
        s, t = ends
        if s != t:
            A[s, t] += weight
            A[t, s] += weight
    return graph_laplacian(A)


def task_graph_laplacian(graph, n_tasks: int, tasks=None, graph_type: str = "auto"):
    """The PSD task matrix ``L`` of ``tr(W L W^T)`` from a graph description.

    Parameters
    ----------
    graph : array-like, sparse matrix, sequence of edges, or None
        ``None``: all tasks related, ``L = I - 11^T / m`` (``sum_t ||w_t - w_bar||^2``,
        MALSAR's ``R = I - 11^T / m`` up to ``R R^T = R``). Otherwise read by ``graph_type``.
    n_tasks : int
        Number of tasks ``m``.
    tasks : sequence, optional
        Task labels, in the order of the model's tasks (``tasks_``); edges name tasks by
        these labels (default ``0..m-1``).
    graph_type : {"auto", "adjacency", "laplacian", "edges", "structure"}
        ``"adjacency"``: symmetric non-negative ``(m, m)`` weights ``A``, ``L = D - A``
        (the diagonal is ignored); ``"laplacian"``: ``L`` itself (any symmetric positive
        semi-definite matrix); ``"edges"``: pairs ``(s, t)`` or triples ``(s, t, weight)`` of
        task labels, ``L = D - A``; ``"structure"``: MALSAR's ``(m, k)`` matrix ``R``,
        ``L = R R^T``. ``"auto"``: an ``(m, m)`` matrix with a zero diagonal and no negative
        entry is an adjacency, another ``(m, m)`` matrix a Laplacian; anything else with two
        or three columns is a list of edges.

    Returns
    -------
    ndarray of shape (n_tasks, n_tasks)

    Raises
    ------
    ValueError
        Naming what is wrong (shape, entries, unknown task, negative eigenvalue).
    """
    m = int(n_tasks)
    tasks = list(range(m)) if tasks is None else list(tasks)
    if graph_type not in GRAPH_TYPES:
        raise ValueError(f"graph_type must be one of {GRAPH_TYPES}, got {graph_type!r}.")
    if graph is None:
        return mean_laplacian(m)
    if sp.issparse(graph):
        graph = graph.toarray()
    if graph_type == "edges":
        return _edges_laplacian(graph, tasks)
    if graph_type == "auto":
        try:
            arr = np.asarray(graph, dtype=np.float64)
        except (TypeError, ValueError):  # labels that are not numbers: a list of edges
            return _edges_laplacian(graph, tasks)
        if arr.ndim == 2 and arr.shape == (m, m):
            zero_diag = np.all(np.diag(arr) == 0)
            graph_type = "adjacency" if zero_diag and np.all(arr >= 0) else "laplacian"
        elif (arr.ndim == 2 and arr.shape[0] == arr.shape[1] and np.array_equal(arr, arr.T)
              and (arr.shape[0] > 3 or np.all(np.diag(arr) == 0))):  # an adjacency, not edges
            raise ValueError(f"graph is a symmetric {arr.shape[0]} x {arr.shape[0]} matrix but "
                             f"the data have {m} tasks; pass graph_type='edges' if it is a "
                             "list of edges.")
        elif arr.ndim == 2 and arr.shape[1] in (2, 3):
            return _edges_laplacian(graph, tasks)
        else:
            raise ValueError(f"graph of shape {arr.shape} is neither an ({m}, {m}) matrix for "
                             f"the {m} tasks nor a list of edges (s, t[, weight]); pass "
                             "graph_type to say how to read it.")
    arr = np.asarray(graph, dtype=np.float64)
    if graph_type == "structure":
        if arr.ndim != 2 or arr.shape[0] != m:
            raise ValueError(f"A structure matrix R must have one row per task ({m}), got "
                             f"shape {arr.shape}.")
        if not np.all(np.isfinite(arr)):
            raise ValueError("The structure matrix R must hold finite numbers.")
        return arr @ arr.T
    if arr.ndim != 2 or arr.shape != (m, m):
        raise ValueError(f"The {graph_type} matrix must be ({m}, {m}) for the {m} tasks, got "
                         f"shape {arr.shape}.")
    if graph_type == "adjacency":
        return graph_laplacian(arr)
    return check_task_matrix(arr, m, name="The Laplacian")


# ----------------------------------------------------------------------------- graph model
class _Graph:
    _params = {
        "graph": Param(None, ["array-like", "sparse matrix", None], keyword_only=False),
        "alpha": Param(0.1, [nonnegative], keyword_only=False, classifier_default=0.01),
        "alpha_l1": Param(0.01, [nonnegative], keyword_only=False,
                          classifier_default=0.001),
        "graph_type": Param("auto", [StrOptions(set(GRAPH_TYPES))]),
    }
    _solvers = ("exact", "bcd", "working_set", "fista", "pg", "newton", "active_newton")
    _max_iter = 10000
    _path_param = "alpha_l1"

    def _make_penalty(self, datafit: Datafit) -> GraphRegularization:
        L = task_graph_laplacian(self.graph, task_count(datafit), task_labels(datafit),
                                 self.graph_type)
        return GraphRegularization(float(self.alpha), L, float(self.alpha_l1),
                                   n_classes=column_classes(datafit))

    def _structure_note(self, tasks):
        if self.graph is not None or len(tasks) < 2:
            return None
        return (f"{type(self).__name__} was fitted without a task graph (graph=None): every "
                "pair of tasks is joined with the same weight (the mean-regularized graph, "
                "L = I - 11^T / m), a structure nobody gave. Pass graph= (an adjacency "
                "matrix, a Laplacian or edges between task labels), or use "
                "MeanRegularizedRegressor / MeanRegularizedClassifier for that model on "
                "purpose.")

    def _grid_tops(self, datafit, penalty):
        grad = datafit.grad_at_zero()
        top_l1 = float(np.abs(grad).max()) if grad.size else 0.0
        lam = penalty.lambda_max if penalty.lambda_max > 0 else 1.0
        top_graph = ridge_grid_top(datafit) / (2.0 * lam)
        return {"alpha_l1": (top_l1, 1.0), "alpha": (top_graph, 4.0 / 3.0)}

    _fitted_state = {"laplacian_": Fitted("array", shape=("t", "t"))}

    def _store_extra(self, result, penalty, datafit) -> None:
        self.laplacian_ = penalty.laplacian.copy()


_GRAPH_DOC = """
    Minimizes ``{loss_formula} + alpha tr(W L W^T) + alpha_l1 ||W||_1`` (plus
    ``(alpha_l2 / 2) ||W||_F^2``), ``W = coef_.T``: the weights of tasks joined in the graph
    are pulled together (``tr(W L W^T) = sum_(s < t) A_st ||w_s - w_t||^2`` for ``L = D - A``).
    MALSAR's ``SRMTL`` with its structure matrix ``R`` is ``graph=R, graph_type="structure"``
    (``alpha ||W R||_F^2``); RMTL's ``Graph`` with its network matrix ``G`` the same. The
    graph term is smooth: it is added to the loss's gradient, and the l1 term is handled by
    its prox. ``alpha_max(X, y)`` is the smallest ``alpha_l1`` with ``coef_ = 0`` (``max |G|``,
    ``G`` the loss gradient at zero, whatever ``alpha``); the default grid runs ``alpha_l1``
    from it as the path and ``alpha`` over 4 decades below ``10 L_f / (2 lambda_max(L))``
    (``L_f`` the loss gradient's Lipschitz constant).

    Parameters
    ----------
    graph : array-like, sparse matrix, list of edges or None, default=None
        The task graph, read as ``graph_type`` says (see
        :func:`~multitask.estimators.graph.task_graph_laplacian`): an ``(m, m)``
        adjacency or Laplacian in the order of ``tasks_``, edges ``(s, t[, weight])`` between
        task labels, or MALSAR's ``(m, k)`` structure matrix ``R``. ``None``: every pair of
        tasks related, ``L = I - 11^T / m`` (the mean-regularized graph).
    alpha : float, default={alpha}
        Weight of the graph term (>= 0).
    alpha_l1 : float, default={alpha_l1}
        Weight of ``||W||_1`` (>= 0; the path parameter).
    graph_type : {{"auto", "adjacency", "laplacian", "edges", "structure"}}, default="auto"
        How ``graph`` is read.
{loss}    {{common_parameters}}

    Attributes
    ----------
    coef_ : ndarray of shape (n_tasks, n_features)
    intercept_ : ndarray of shape (n_tasks,)
    laplacian_ : ndarray of shape (n_tasks, n_tasks)
        The matrix ``L`` used (in the order of ``tasks_``).
{classes}    tasks_, n_iter_, objective_, converged_, optimality_, solver_
        See :mod:`multitask.estimators.base`.
"""

_CLASSES = """    classes_ : ndarray of shape (2,)
        ``classes_[1]`` is the positive class (score > 0).
"""
_LOSS = '''    loss : {"logistic", "squared_hinge"}, default="logistic"
'''


class GraphRegularizedRegressor(_Graph, MultiTaskRegressorBase):
    __doc__ = "Graph-regularized multi-task least squares (MALSAR SRMTL, RMTL Graph).\n" + \
        _GRAPH_DOC.format(loss_formula=REGRESSION_LOSS, alpha=0.1,
                          alpha_l1=0.01, loss="", classes="")


class GraphRegularizedClassifier(_Graph, MultiTaskClassifierBase):
    __doc__ = "Graph-regularized multi-task classification (logistic; MALSAR SRMTL).\n" + \
        _GRAPH_DOC.format(loss_formula=CLASSIFICATION_LOSS,
                          alpha=0.01, alpha_l1=0.001, loss=_LOSS, classes=_CLASSES)


# ----------------------------------------------------------------------------- mean model
def _task_mean(W: np.ndarray, n_classes: int) -> np.ndarray:
    """The mean of the tasks' weights, ``(d,)``; ``(K, d)``, one row per class, for ``K``
    columns per task."""
    if not W.size:
        return np.zeros(W.shape[0]) if n_classes == 1 else np.zeros((n_classes, W.shape[0]))
    if n_classes == 1:
        return W.mean(axis=1)
    return np.ascontiguousarray(W.reshape(W.shape[0], -1, n_classes).mean(axis=1).T)


class _Mean:
    _params = {
        "alpha": Param(1.0, [nonnegative], keyword_only=False, classifier_default=0.1),
    }
    _max_iter = 10000

    def _make_penalty(self, datafit: Datafit) -> MeanRegularization:
        return MeanRegularization(float(self.alpha), task_count(datafit),
                                  n_classes=column_classes(datafit))

    _fitted_state = {"mean_coef_": Fitted("array", shape=class_shape(("d",), ("K", "d")),
                                          check=derived(
        lambda est, s: _task_mean(fit_weights(est, s), class_columns_of(est)),
        "the mean of the tasks' weights"))}

    def _store_extra(self, result, penalty, datafit) -> None:
        self.mean_coef_ = _task_mean(result.W, column_classes(datafit))


_MEAN_DOC = """
    Minimizes ``{loss_formula} + alpha sum_t ||w_t - w_bar||^2 + (alpha_l2 / 2) ||W||_F^2``
    with ``w_bar = (1/m) sum_t w_t`` (Evgeniou & Pontil, "Regularized multi-task learning"):
    every task is pulled towards the mean of the tasks. The paper's regularizer
    ``(lambda_1 / m) sum_t ||w_t - w_0||^2 + lambda_2 ||w_0||^2`` (minimized over the common
    part ``w_0``) equals ``rho_1 sum_t ||w_t - w_bar||^2 + rho_2 ||W||_F^2`` with
    ``rho_1 = lambda_1^2 / (m (lambda_1 + lambda_2))`` and ``rho_2 = lambda_1 lambda_2 /
    (m (lambda_1 + lambda_2))``: ``alpha = s rho_1``, ``alpha_l2 = 2 s rho_2`` for a loss
    scaled by ``s`` relative to ours. Without ``alpha_l2`` the mean itself is not penalized.
    It is :class:`GraphRegularizedRegressor` with ``graph=None`` and ``alpha_l1=0``. No
    finite ``alpha`` gives ``coef_ = 0``: ``alpha_max`` is ``inf`` and the default grid runs
    ``alpha`` over 6 decades below ``10 L_f``.

    Parameters
    ----------
    alpha : float, default={alpha}
        Weight of ``sum_t ||w_t - w_bar||^2`` (>= 0).
{loss}    {{common_parameters}}

    Attributes
    ----------
    coef_ : ndarray of shape (n_tasks, n_features)
    intercept_ : ndarray of shape (n_tasks,)
    mean_coef_ : ndarray of shape (n_features,)
        ``w_bar``, the mean of the tasks' weights.
{classes}    tasks_, n_iter_, objective_, converged_, optimality_, solver_
        See :mod:`multitask.estimators.base`.
"""


class MeanRegularizedRegressor(_Mean, MultiTaskRegressorBase):
    __doc__ = "Mean-regularized multi-task least squares (Evgeniou & Pontil).\n" + \
        _MEAN_DOC.format(loss_formula=REGRESSION_LOSS, alpha=1.0,
                         loss="", classes="")


class MeanRegularizedClassifier(_Mean, MultiTaskClassifierBase):
    __doc__ = "Mean-regularized multi-task classification (logistic; Evgeniou & Pontil).\n" + \
        _MEAN_DOC.format(loss_formula=CLASSIFICATION_LOSS,
                         alpha=0.1, loss=_LOSS, classes=_CLASSES)
