"""Task-similarity matrices and presets, the lp-norm MKL theta step, string features.

* :mod:`multitask.kernels.task_similarity`: task kernels ``B`` (``(T, T)``, PSD) and the presets
  of multi-task MKL (individual, union, FEDA, regularized MTL, clustering, graph, multi-graph,
  hierarchical, smooth).
* :mod:`multitask.solvers.mkl_theta` (re-exported here): the closed-form lp-norm weight step
  and objective helpers.
* :mod:`multitask.kernels.strings`: the weighted-degree string kernel as explicit CSR features.
"""

from multitask.kernels.strings import (
    WeightedDegreeFeatures,
    wd_feature_dim,
    wd_weights,
    weighted_degree_features,
)
from multitask.kernels.task_similarity import (
    PRESETS,
    balanced_binary_tree,
    check_task_kernel,
    cluster_task_kernel,
    feda_task_kernel,
    graph_laplacian,
    graph_task_kernel,
    individual_task_kernel,
    make_task_kernels,
    multigraph_task_kernels,
    psd_project,
    regularized_task_kernel,
    shared_individual_task_kernels,
    smooth_task_kernels,
    tree_leaves,
    tree_task_kernels,
    union_task_kernel,
)
from multitask.solvers.mkl_theta import dual_norm, initial_theta, theta_step

__all__ = [
    "PRESETS",
    "WeightedDegreeFeatures",
    "balanced_binary_tree",
    "check_task_kernel",
    "cluster_task_kernel",
    "dual_norm",
    "feda_task_kernel",
    "graph_laplacian",
    "graph_task_kernel",
    "individual_task_kernel",
    "initial_theta",
    "make_task_kernels",
    "multigraph_task_kernels",
    "psd_project",
    "regularized_task_kernel",
    "shared_individual_task_kernels",
    "smooth_task_kernels",
    "theta_step",
    "tree_leaves",
    "tree_task_kernels",
    "union_task_kernel",
    "wd_feature_dim",
    "wd_weights",
    "weighted_degree_features",
]
