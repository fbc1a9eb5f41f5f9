"""Task-similarity matrices (task kernels) and the presets that recover known MTL methods.

A *task kernel* ``B`` is a symmetric positive semidefinite ``(n_tasks, n_tasks)`` matrix. In the
multi-task MKL framework of Widmer, Kloft, Sreedharan & Rätsch (arXiv:1506.09153) the joint
kernel between example ``x`` of task ``s`` and example ``z`` of task ``t`` is

    k((x, s), (z, t)) = sum_m theta_m * B_m[s, t] * k(x, z),

and ``B_m = Q_m^{-1}`` is the inverse of the primal coupling matrix ``Q_m`` in the regularizer
``(1/2) sum_m tr(W_m Q_m W_m^T) / theta_m`` (``W_m`` of shape ``(n_features, n_tasks)``). Every
function here returns task kernels ``B`` (never ``Q``); singular ``B`` (union, masks) are allowed.

Rows and columns follow the order of the fitted task labels (``tasks_`` of an estimator, the
sorted unique task ids). Functions that take task labels (trees, clusters) map them to that order.

Special cases (the specification's table, hinge loss, ``theta`` fixed where ``M = 1``):

=====================  =====================================  ================================
preset                 task kernel(s) ``B``                   primal ``Q = B^{-1}``
=====================  =====================================  ================================
individual             ``I``                                  ``I``
union                  ``1 1^T`` (singular)                   ``1 1^T / T^2`` on the range
feda (2 domains)       ``[[2, 1], [1, 2]]`` = ``I + 1 1^T``   ``[[2/3, -1/3], [-1/3, 2/3]]``
regularized            ``I + 1 1^T / rho``                    ``I - 1 1^T / (rho + T)``
clustering             ``(lam I + G)^{-1}``                   ``lam I + G``
graph                  ``(lam I + L)^{-1}`` (paper: lam = 1)  ``lam I + L``, ``L = D - A``
multigraph             ``(I + L_m)^{-1}`` for each graph      learned ``theta``
hierarchical           mask ``1_S 1_S^T`` per inner node      learned ``theta``
smooth                 ``exp(-D / sigma_m)`` per scale        learned ``theta``
shared-individual      ``{I, 1 1^T}``                         learned ``theta``
=====================  =====================================  ================================
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = [
    "PRESETS",
    "PRESET_PARAMETERS",
    "balanced_binary_tree",
    "check_similarity_params",
    "check_task_kernel",
    "cluster_task_kernel",
    "feda_task_kernel",
    "graph_laplacian",
    "graph_task_kernel",
    "individual_task_kernel",
    "make_task_kernels",
    "multigraph_task_kernels",
    "psd_project",
    "regularized_task_kernel",
    "shared_individual_task_kernels",
    "smooth_task_kernels",
    "tree_leaves",
    "tree_task_kernels",
    "union_task_kernel",
]


# --------------------------------------------------------------------------- checks
def psd_project(B: np.ndarray) -> np.ndarray:
    """Nearest symmetric positive semidefinite matrix in Frobenius norm.

    ``psd_project(B) = U diag(max(lambda, 0)) U^T`` with ``(B + B^T) / 2 = U diag(lambda) U^T``.

    Parameters
    ----------
    B : ndarray of shape (T, T)

    Returns
    -------
    ndarray of shape (T, T)
    """
    B = np.asarray(B, dtype=np.float64)
    S = 0.5 * (B + B.T)
    lam, U = np.linalg.eigh(S)
    return (U * np.maximum(lam, 0.0)) @ U.T


def check_task_kernel(
    B, n_tasks: int | None = None, *, name: str = "task kernel", rtol: float = 1e-10
) -> np.ndarray:
    """Validate one task kernel: square, finite, symmetric, positive semidefinite.

    Accepts ``B`` when ``max|B - B^T| <= rtol * max|B|`` and
    ``lambda_min((B + B^T)/2) >= -rtol * ||B||_2``; returns the symmetrized ``(B + B^T) / 2``.

    Parameters
    ----------
    B : array-like of shape (T, T)
    n_tasks : int, optional
        Required size ``T``.
    name : str
        Name used in error messages.
    rtol : float
        Relative tolerance of the symmetry and PSD checks.

    Returns
    -------
    ndarray of shape (T, T), float64

    Raises
    ------
    ValueError
        If ``B`` is not square, has the wrong size, holds NaN or infinity, is not symmetric or
        has a negative eigenvalue (the message suggests :func:`psd_project`).
    """
    B = np.asarray(B, dtype=np.float64)
    if B.ndim != 2 or B.shape[0] != B.shape[1]:
        raise ValueError(f"{name} must be a square (n_tasks, n_tasks) matrix, got shape {B.shape}.")
    if n_tasks is not None and B.shape[0] != n_tasks:
        raise ValueError(
            f"{name} has shape {B.shape} but there are {n_tasks} tasks; rows and columns follow "
            "the sorted task labels."
        )
    if not np.all(np.isfinite(B)):
        raise ValueError(f"{name} contains NaN or infinity.")
    scale = float(np.max(np.abs(B))) if B.size else 0.0
    if scale == 0.0:
        return B.copy()
    if np.max(np.abs(B - B.T)) > rtol * scale:
        raise ValueError(f"{name} is not symmetric.")
    S = 0.5 * (B + B.T)
    lam = np.linalg.eigvalsh(S)
    if lam[0] < -rtol * max(abs(lam[-1]), scale):
        raise ValueError(
            f"{name} is not positive semidefinite (smallest eigenvalue {lam[0]:.3g}); "
            "use multitask.kernels.psd_project to clip negative eigenvalues."
        )
    return S


# --------------------------------------------------------------------------- single kernels
def individual_task_kernel(n_tasks: int) -> np.ndarray:
    """Independent tasks: ``B = I`` of shape ``(T, T)`` (regularizer ``(1/2) sum_t ||w_t||^2``)."""
    return np.eye(int(n_tasks))


def union_task_kernel(n_tasks: int) -> np.ndarray:
    """Pooled data, one shared weight vector: ``B = 1 1^T`` of shape ``(T, T)`` (singular)."""
    return np.ones((int(n_tasks), int(n_tasks)))


def feda_task_kernel(n_tasks: int = 2) -> np.ndarray:
    """Frustratingly easy domain adaptation (Daumé 2007): ``B = I + 1 1^T``.

    For two domains (source, target) this is ``[[2, 1], [1, 2]]``: same-domain pairs get
    ``2 k(x, z)``, cross-domain pairs ``k(x, z)``, which is the kernel of the augmented features
    ``(phi, phi, 0)`` (source) and ``(phi, 0, phi)`` (target). With ``T`` domains it is the kernel
    of ``(phi, e_t (x) phi)``. The primal coupling is ``Q = B^{-1} = I - 1 1^T / (T + 1)``.

    Parameters
    ----------
    n_tasks : int
        Number of domains ``T`` (2 in the original method).

    Returns
    -------
    ndarray of shape (T, T)
    """
    T = int(n_tasks)
    return np.eye(T) + np.ones((T, T))


def regularized_task_kernel(n_tasks: int, rho: float = 1.0) -> np.ndarray:
    """Regularized MTL (Evgeniou & Pontil 2004): ``B = I + 1 1^T / rho``.

    Equivalent to ``w_t = w_0 + v_t`` with regularizer ``(1/2)(rho ||w_0||^2 + sum_t ||v_t||^2)``;
    its primal coupling is ``Q = I - 1 1^T / (rho + T)``, i.e. the regularizer
    ``(1/2)[sum_t ||w_t||^2 - ||sum_t w_t||^2 / (rho + T)]``. Small ``rho`` approaches union,
    large ``rho`` approaches individual.

    Parameters
    ----------
    n_tasks : int
    rho : float > 0

    Returns
    -------
    ndarray of shape (T, T)
    """
    if not rho > 0:
        raise ValueError(f"rho must be positive, got {rho!r}.")
    T = int(n_tasks)
    return np.eye(T) + np.ones((T, T)) / float(rho)


def cluster_task_kernel(
    membership, rho: float = 1.0, lam: float = 0.0, n_tasks: int | None = None
) -> np.ndarray:
    """Task clustering (Evgeniou, Micchelli & Pontil 2005): ``B = (lam I + G)^{-1}``.

    With memberships ``r[c, t] >= 0`` of task ``t`` in cluster ``c``,

        G[s, t] = sum_c ( r[c, t] delta_st - r[c, s] r[c, t] / (rho + sum_u r[c, u]) ).

    One cluster holding all tasks with ``lam = 0`` and ``r = 1`` gives
    :func:`regularized_task_kernel` ``(T, rho)``.

    Parameters
    ----------
    membership : array-like of shape (n_clusters, T), or of shape (T,) with a cluster label per
        task (hard clusters, ``r[c, t] = 1`` iff task ``t`` has label ``c``).
    rho : float > 0
    lam : float >= 0
    n_tasks : int, optional

    Returns
    -------
    ndarray of shape (T, T)

    Raises
    ------
    ValueError
        If ``lam I + G`` is singular (a task in no cluster and ``lam = 0``).
    """
    r = np.asarray(membership)
    if r.ndim == 1:
        labels = r
        uniq = np.unique(labels)
        r = (labels[None, :] == uniq[:, None]).astype(np.float64)
    r = np.asarray(r, dtype=np.float64)
    if n_tasks is not None and r.shape[1] != n_tasks:
        raise ValueError(f"membership covers {r.shape[1]} tasks, expected {n_tasks}.")
    if not rho > 0 or lam < 0:
        raise ValueError("cluster_task_kernel needs rho > 0 and lam >= 0.")
    T = r.shape[1]
    G = np.zeros((T, T))
    for rc in r:
        G += np.diag(rc) - np.outer(rc, rc) / (rho + rc.sum())
    Q = lam * np.eye(T) + G
    lam_min = np.linalg.eigvalsh(0.5 * (Q + Q.T))[0]
    if lam_min <= 1e-12 * max(1.0, np.abs(Q).max()):
        raise ValueError(
            "lam * I + G is singular: every task must belong to a cluster, or use lam > 0."
        )
    return np.linalg.inv(Q)


def graph_laplacian(adjacency) -> np.ndarray:
    """Graph Laplacian ``L = D - A`` of a symmetric non-negative adjacency ``A`` (T, T)."""
    A = np.asarray(adjacency, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"adjacency must be square, got shape {A.shape}.")
    if not np.all(np.isfinite(A)) or np.any(A < 0):
        raise ValueError("adjacency must be finite and non-negative.")
    if np.max(np.abs(A - A.T)) > 1e-12 * max(1.0, np.abs(A).max()):
        raise ValueError("adjacency must be symmetric.")
    A = 0.5 * (A + A.T)
    A = A - np.diag(np.diag(A))
    return np.diag(A.sum(axis=1)) - A


def graph_task_kernel(
    adjacency=None,
    *,
    laplacian=None,
    lam: float = 1.0,
    convention: str = "paper",
    pinv: bool = False,
) -> np.ndarray:
    """Graph-regularized MTL (Evgeniou, Micchelli & Pontil 2005): ``B = (lam I + c L)^{-1}``.

    The primal regularizer is ``(1/2)[lam sum_t ||w_t||^2 + c tr(W L W^T)]`` with
    ``tr(W L W^T) = (1/2) sum_{s,t} A_st ||w_s - w_t||^2`` (sum over ordered pairs), ``W`` of
    shape ``(n_features, T)``. ``convention="paper"`` uses ``c = 1`` (the paper's ``Q = I + L``
    with ``lam = 1``); ``convention="ordered_pairs"`` uses ``c = 2``, so the penalty is
    ``(1/2) sum_{s,t} A_st ||w_s - w_t||^2`` over ordered pairs, the paper's eq. (17) read
    literally. ``I + L`` is always positive definite, so no pseudo-inverse is needed.

    Parameters
    ----------
    adjacency : array-like of shape (T, T), optional
        Symmetric non-negative task graph ``A``.
    laplacian : array-like of shape (T, T), optional
        The Laplacian ``L`` directly (instead of ``adjacency``).
    lam : float >= 0
        Weight of the identity; ``lam = 0`` requires ``pinv=True``.
    convention : {"paper", "ordered_pairs"}
    pinv : bool
        Return ``L^+`` (Moore-Penrose) instead, the paper's eq. (19) corrected; this forbids any
        component of ``W`` in the null space of ``L`` (for a connected graph: the task mean)
        rather than leaving it free. A warning says so.

    Returns
    -------
    ndarray of shape (T, T)
    """
    if (adjacency is None) == (laplacian is None):
        raise ValueError("Pass exactly one of adjacency and laplacian.")
    if laplacian is None:
        L = graph_laplacian(adjacency)
    else:
        L = check_task_kernel(laplacian, name="laplacian")
    if convention == "paper":
        c = 1.0
    elif convention == "ordered_pairs":
        c = 2.0
    else:
        raise ValueError(f"convention must be 'paper' or 'ordered_pairs', got {convention!r}.")
    if pinv:
        warnings.warn(
            "graph_task_kernel(pinv=True) uses the pseudo-inverse of the Laplacian: the "
            "component of W in the null space of L (the task mean for a connected graph) is "
            "forced to zero, not left unpenalized.",
            UserWarning,
            stacklevel=2,
        )
        return np.linalg.pinv(c * L, hermitian=True)
    if not lam > 0:
        raise ValueError("graph_task_kernel needs lam > 0 (or pinv=True).")
    T = L.shape[0]
    return np.linalg.inv(lam * np.eye(T) + c * L)


# --------------------------------------------------------------------------- kernel families
def shared_individual_task_kernels(n_tasks: int) -> list[np.ndarray]:
    """``[I, 1 1^T]``: ``w_t = v_t + w_0`` with a learned trade-off (regularized MTL with MKL).

    The regularizer is ``(1/2)(sum_t ||v_t||^2 / theta_1 + ||w_0||^2 / theta_2)``.
    """
    return [individual_task_kernel(n_tasks), union_task_kernel(n_tasks)]


def multigraph_task_kernels(
    adjacencies: Sequence, *, lam: float = 1.0, convention: str = "paper"
) -> list[np.ndarray]:
    """Multi-graph MT-MKL: one :func:`graph_task_kernel` ``(lam I + L_m)^{-1}`` per graph.

    Parameters
    ----------
    adjacencies : sequence of array-like (T, T)
    lam, convention : see :func:`graph_task_kernel`

    Returns
    -------
    list of ndarray (T, T)
    """
    return [graph_task_kernel(A, lam=lam, convention=convention) for A in adjacencies]


def smooth_task_kernels(distances, sigmas: Sequence[float], *, project: bool = False):
    """Smooth MT-MKL: ``B_m = exp(-D / sigma_m)`` for a task distance ``D`` (T, T).

    The paper prints ``exp(A / sigma)``; a kernel needs the distance with a minus sign (for
    Hamming distances of aligned sequences ``exp(-gamma D)`` is positive semidefinite).

    Parameters
    ----------
    distances : array-like of shape (T, T)
        Symmetric, non-negative, zero diagonal.
    sigmas : sequence of float > 0
        Length-scales (the TSS experiment: ``linspace(0.1, 15, 3)``).
    project : bool
        Clip negative eigenvalues (:func:`psd_project`) instead of raising.

    Returns
    -------
    list of ndarray (T, T)
    """
    D = np.asarray(distances, dtype=np.float64)
    if D.ndim != 2 or D.shape[0] != D.shape[1] or np.any(D < 0) or not np.all(np.isfinite(D)):
        raise ValueError("distances must be a finite non-negative square matrix.")
    out = []
    for s in sigmas:
        if not s > 0:
            raise ValueError(f"sigmas must be positive, got {s!r}.")
        B = np.exp(-D / float(s))
        out.append(psd_project(B) if project else check_task_kernel(B, name=f"exp(-D/{s})"))
    return out


# --------------------------------------------------------------------------- trees
def _is_leaf(node) -> bool:
    return not isinstance(node, (list, tuple))


def tree_leaves(tree) -> list:
    """Leaves (task labels) of a nested-tuple tree, left to right."""
    if _is_leaf(tree):
        return [tree]
    out: list = []
    for child in tree:
        out.extend(tree_leaves(child))
    return out


def _tree_nodes(tree, depth: int = 0):
    """Yield ``(leaf labels under node, depth, is_leaf)`` in pre-order."""
    leaves = tree_leaves(tree)
    yield leaves, depth, _is_leaf(tree)
    if not _is_leaf(tree):
        for child in tree:
            yield from _tree_nodes(child, depth + 1)


def balanced_binary_tree(labels: Sequence) -> Any:
    """Balanced binary tree (nested 2-tuples) over ``labels`` in their order.

    ``balanced_binary_tree(range(4))`` is ``((0, 1), (2, 3))``.
    """
    labels = list(labels)
    if len(labels) == 0:
        raise ValueError("A tree needs at least one leaf.")
    if len(labels) == 1:
        return labels[0]
    h = (len(labels) + 1) // 2
    return (balanced_binary_tree(labels[:h]), balanced_binary_tree(labels[h:]))


def tree_task_kernels(
    tree,
    tasks: Sequence | None = None,
    *,
    nodes: str = "inner",
    kind: str = "mask",
    rho: float = 1.0,
    return_info: bool = False,
):
    """Hierarchical MT-MKL: one task kernel per node of a task tree.

    For node ``m`` with leaf set ``S_m`` (indicator ``1_S`` of shape ``(T,)``):

    * ``kind="mask"`` (default; the paper's experiments): ``B_m = 1_S 1_S^T``;
    * ``kind="cluster_pinv"``: ``B_m = G_m^+ = diag(1_S) + 1_S 1_S^T / rho`` (the paper's text);
    * ``kind="I_plus_G"``: ``B_m = (I + G_m)^{-1}`` with
      ``G_m = diag(1_S) - 1_S 1_S^T / (rho + |S|)`` (adds an identity on all tasks).

    With uniform weights the mask kernels sum to ``B[s, t] = depth(lca(s, t)) + 1`` (inner
    nodes), the "vanilla" hierarchical MTL.

    Parameters
    ----------
    tree : nested tuples or lists
        Leaves are task labels, e.g. ``((0, 1), (2, (3, 4)))``.
    tasks : sequence, optional
        Task labels in the order of the kernel's rows (default: the sorted leaves). Every task
        must be a leaf exactly once.
    nodes : {"inner", "all"}
        Inner nodes only (root included; the root mask is the union kernel), or also the
        leaves (whose masks are ``e_t e_t^T``, the individual kernel split per task).
    kind : {"mask", "cluster_pinv", "I_plus_G"}
    rho : float > 0
        Cluster strength for the two non-mask kinds.
    return_info : bool
        Also return a list of ``(leaf labels, depth, is_leaf)`` per kernel.

    Returns
    -------
    kernels : list of ndarray (T, T)
    info : list of tuple, only with ``return_info=True``
    """
    leaves = tree_leaves(tree)
    if len(set(map(_hashable, leaves))) != len(leaves):
        raise ValueError("Every task must appear exactly once as a leaf of the tree.")
    if tasks is None:
        tasks = sorted(leaves)
    tasks = list(tasks)
    index = {_hashable(t): i for i, t in enumerate(tasks)}
    missing = [t for t in tasks if _hashable(t) not in set(map(_hashable, leaves))]
    extra = [t for t in leaves if _hashable(t) not in index]
    if missing or extra:
        raise ValueError(
            f"Tree leaves and tasks differ: tasks not in the tree {missing[:5]}, "
            f"leaves that are not tasks {extra[:5]}."
        )
    if nodes not in ("inner", "all"):
        raise ValueError(f"nodes must be 'inner' or 'all', got {nodes!r}.")
    if kind not in ("mask", "cluster_pinv", "I_plus_G"):
        raise ValueError(f"kind must be 'mask', 'cluster_pinv' or 'I_plus_G', got {kind!r}.")
    if kind != "mask" and not rho > 0:
        raise ValueError("rho must be positive.")
    T = len(tasks)
    kernels, info = [], []
    for node_leaves, depth, is_leaf in _tree_nodes(tree):
        if is_leaf and nodes == "inner" and not _is_leaf(tree):
            continue
        s = np.zeros(T)
        s[[index[_hashable(t)] for t in node_leaves]] = 1.0
        if kind == "mask":
            B = np.outer(s, s)
        elif kind == "cluster_pinv":
            B = np.diag(s) + np.outer(s, s) / rho
        else:
            G = np.diag(s) - np.outer(s, s) / (rho + s.sum())
            B = np.linalg.inv(np.eye(T) + G)
        kernels.append(B)
        info.append((list(node_leaves), depth, is_leaf))
    return (kernels, info) if return_info else kernels


def _hashable(x):
    return x.item() if isinstance(x, np.generic) else x


# --------------------------------------------------------------------------- presets
def _need(params: dict, key: str, preset: str):
    if key not in params or params[key] is None:
        raise ValueError(f"task_similarity={preset!r} needs similarity_params[{key!r}].")
    return params[key]


def _preset_individual(tasks, p):
    return [individual_task_kernel(len(tasks))]


def _preset_union(tasks, p):
    return [union_task_kernel(len(tasks))]


def _preset_feda(tasks, p):
    return [feda_task_kernel(len(tasks))]


def _preset_regularized(tasks, p):
    return [regularized_task_kernel(len(tasks), p.get("rho", 1.0))]


def _preset_shared_individual(tasks, p):
    return shared_individual_task_kernels(len(tasks))


def _preset_clustering(tasks, p):
    memb = _need(p, "clusters", "clustering")
    memb = np.asarray(memb)
    if memb.ndim == 1 and isinstance(p["clusters"], dict):
        memb = np.array([p["clusters"][t] for t in tasks])
    return [cluster_task_kernel(memb, p.get("rho", 1.0), p.get("lam", 0.0), len(tasks))]


def _preset_graph(tasks, p):
    if p.get("laplacian") is not None:
        B = graph_task_kernel(
            laplacian=p["laplacian"],
            lam=p.get("lam", 1.0),
            convention=p.get("convention", "paper"),
            pinv=p.get("pinv", False),
        )
    else:
        B = graph_task_kernel(
            _need(p, "adjacency", "graph"),
            lam=p.get("lam", 1.0),
            convention=p.get("convention", "paper"),
            pinv=p.get("pinv", False),
        )
    return [B]


def _preset_multigraph(tasks, p):
    return multigraph_task_kernels(
        _need(p, "adjacencies", "multigraph"),
        lam=p.get("lam", 1.0),
        convention=p.get("convention", "paper"),
    )


def _preset_hierarchical(tasks, p):
    return tree_task_kernels(
        _need(p, "tree", "hierarchical"),
        tasks,
        nodes=p.get("nodes", "inner"),
        kind=p.get("kind", "mask"),
        rho=p.get("rho", 1.0),
    )


def _preset_smooth(tasks, p):
    return smooth_task_kernels(
        _need(p, "distances", "smooth"), _need(p, "sigmas", "smooth"), project=p.get("project")
    )


PRESETS: dict[str, Callable] = {
    "individual": _preset_individual,
    "union": _preset_union,
    "feda": _preset_feda,
    "regularized": _preset_regularized,
    "shared-individual": _preset_shared_individual,
    "clustering": _preset_clustering,
    "graph": _preset_graph,
    "multigraph": _preset_multigraph,
    "hierarchical": _preset_hierarchical,
    "smooth": _preset_smooth,
}
"""Preset name -> ``f(tasks, params) -> list of task kernels``."""

#: The ``similarity_params`` keys each preset reads (any other key is refused).
PRESET_PARAMETERS: dict[str, tuple[str, ...]] = {
    "individual": (),
    "union": (),
    "feda": (),
    "regularized": ("rho",),
    "shared-individual": (),
    "clustering": ("clusters", "rho", "lam"),
    "graph": ("adjacency", "laplacian", "lam", "convention", "pinv"),
    "multigraph": ("adjacencies", "lam", "convention"),
    "hierarchical": ("tree", "nodes", "kind", "rho"),
    "smooth": ("distances", "sigmas", "project"),
}


def check_similarity_params(task_similarity, params: dict | None) -> None:
    """Refuse ``similarity_params`` keys that the chosen ``task_similarity`` does not read.

    A preset reads the keys of :data:`PRESET_PARAMETERS`; task kernels given as matrices or
    by a callable read none. A key that would be ignored (a typing error such as ``"lamda"``,
    or a parameter of another preset) is a ``ValueError`` naming it and the accepted keys.
    """
    if params is None:
        return
    if not isinstance(params, dict):
        raise ValueError(f"similarity_params must be a dict, got {params!r}.")
    if isinstance(task_similarity, str):
        key = task_similarity.lower().replace("_", "-")
        accepted = PRESET_PARAMETERS.get(key)
        if accepted is None:
            return  # an unknown preset: refused by make_task_kernels, naming the presets
        what = f"task_similarity={task_similarity!r}"
    else:
        accepted = ()
        what = "task kernels given as matrices or by a callable"
    unknown = [k for k in params if k not in accepted]
    if unknown:
        takes = (f"it accepts {', '.join(map(repr, accepted))}" if accepted
                 else "it accepts none")
        raise ValueError(f"similarity_params has the key {unknown[0]!r}, which is not used "
                         f"with {what} ({takes}).")


def make_task_kernels(task_similarity, tasks: Sequence, params: dict | None = None):
    """Resolve an estimator's ``task_similarity`` into a validated list of task kernels.

    Parameters
    ----------
    task_similarity : str, ndarray (T, T), sequence of ndarray (T, T), or callable
        A preset name (keys of :data:`PRESETS`), one task kernel, several task kernels, or
        ``f(tasks) -> kernel(s)``.
    tasks : sequence
        Task labels in the order of the kernels' rows (``T = len(tasks)``).
    params : dict, optional
        Preset parameters (``rho``, ``lam``, ``adjacency``, ``laplacian``, ``adjacencies``,
        ``convention``, ``pinv``, ``tree``, ``nodes``, ``kind``, ``clusters``, ``distances``,
        ``sigmas``, ``project``): only the keys the preset reads
        (:data:`PRESET_PARAMETERS`); any other key is a ``ValueError``
        (:func:`check_similarity_params`).

    Returns
    -------
    list of ndarray (T, T)
        Symmetric positive semidefinite task kernels.
    """
    check_similarity_params(task_similarity, params)
    params = dict(params or {})
    T = len(tasks)
    if isinstance(task_similarity, str):
        key = task_similarity.lower().replace("_", "-")
        if key not in PRESETS:
            raise ValueError(
                f"Unknown task_similarity preset {task_similarity!r}; choose one of "
                f"{sorted(PRESETS)} or pass task kernel matrices."
            )
        kernels = PRESETS[key](list(tasks), params)
    elif callable(task_similarity):
        kernels = task_similarity(list(tasks))
    else:
        kernels = task_similarity
    if isinstance(kernels, np.ndarray) and kernels.ndim == 2:
        kernels = [kernels]
    try:
        kernels = list(kernels)
    except TypeError:
        raise ValueError("task_similarity must be a preset name, a (T, T) matrix, a list of "
                         f"them or a callable returning them, got {task_similarity!r}.") from None
    if len(kernels) == 0:
        raise ValueError("task_similarity gave no task kernel.")
    return [check_task_kernel(B, T, name=f"task kernel {m} of task_similarity")
            for m, B in enumerate(kernels)]
