"""Widmer, Kloft, Sreedharan & Rätsch, "Framework for multi-task multiple kernel learning and
applications in genome analysis" (arXiv:1506.09153).

``python -m reproductions mtmkl --dataset synthetic``: the biologically motivated synthetic data
of the paper's Section 4.2 (:func:`multitask.datasets.make_tree_tasks`). A binary tree of tasks;
the root carries the class-mean difference ``mu = (1, ..., 1)`` in 100 dimensions; every node
copies its parent's vector and flips the sign of 5 random coordinates (reading A of the
specification: every non-root node mutates, so each of the 32 leaves has its own vector;
reading B: leaves keep their parent's vector). Task ``t`` has classes ``N(+-mu_t / 2, sigma^2
I)``, 10 training and 1,000 test points per class. Compared by mean per-task test AUC
(:func:`multitask.metrics.roc_auc`), all with :class:`~multitask.MultiTaskKernelClassifier`
(linear base kernel, no bias) and ``alpha = 1 / C`` chosen per method on a validation sample
(:func:`multitask.model_selection.cross_validate_grid` with that one split, no widening):

* individual (``B = I``), union (``B = 1 1^T``),
* vanilla hierarchical MTL (sum of the inner-node masks, ``p = inf``: ``theta = 1``),
* MT-MKL with ``p = 1, 2, 3`` (one mask kernel per inner node,
  :func:`multitask.kernels.tree_task_kernels`, weights learned),
* the same MT-MKL on a shuffled tree (leaf labels permuted): a control for the similarity.

The learned task similarity ``B_theta`` is compared with the true one ``S[s, t] = mu_s^T mu_t``
by the Pearson correlation of the off-diagonal entries
(:func:`multitask.metrics.similarity_correlation`).

``--dataset splice``: C. elegans acceptor splice sites (one organism) with weighted-degree
features (:func:`multitask.kernels.weighted_degree_features`): the estimator (union preset,
one task) against scikit-learn's ``LinearSVC`` on the same problem (same ``C = 1 / alpha``,
loss, intercept handling): test AUC, fit time, largest decision-value difference.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from sklearn.model_selection import StratifiedShuffleSplit
from sklearn.svm import LinearSVC
from sklearn.utils import check_random_state

from multitask import MultiTaskKernelClassifier
from multitask.datasets import load_splice, make_tree_tasks
from multitask.kernels import tree_leaves, tree_task_kernels, weighted_degree_features
from multitask.metrics import roc_auc, similarity_correlation
from multitask.model_selection import cross_validate_grid
from reproductions.common import log, quiet, summarize, timer

NAME = "mtmkl"
DATASETS = ("synthetic", "splice")
DESCRIPTION = "Multi-task MKL (Widmer et al.): tree-structured synthetic tasks; splice sanity."


def shuffled_tree(tree, random_state=None):
    """The same tree shape with the leaf labels randomly permuted."""
    leaves = tree_leaves(tree)
    perm = check_random_state(random_state).permutation(len(leaves))
    mapping = {leaves[i]: leaves[perm[i]] for i in range(len(leaves))}

    def relabel(node):
        if isinstance(node, tuple):
            return tuple(relabel(c) for c in node)
        return mapping[node]

    return relabel(tree)


def methods(tree, shuffled, p_values, T) -> list[tuple[str, dict]]:
    """``(name, estimator parameters)`` of every compared method."""
    masks = tree_task_kernels(tree, list(range(T)), nodes="inner")
    out = [
        ("individual", {"task_similarity": "individual"}),
        ("union", {"task_similarity": "union"}),
        ("vanilla", {"task_similarity": masks, "p": np.inf}),
    ]
    out += [(f"mtmkl-p{p:g}", {"task_similarity": masks, "p": float(p)}) for p in p_values]
    shuf = tree_task_kernels(shuffled, list(range(T)), nodes="inner")
    out += [(f"mtmkl-p{p:g}-shuffled-tree", {"task_similarity": shuf, "p": float(p)})
            for p in p_values]
    return out


def select_on_validation(params: dict, data, C_grid, tol: float, random_state):
    """``alpha = 1 / C`` of the best validation mean AUC (ties: the smallest ``C``), refitted
    on the training rows; returns ``(model, seconds of the refit, C)``."""
    est = MultiTaskKernelClassifier(fit_intercept=False, tol=tol, random_state=random_state,
                                    **params)
    X = np.vstack([data.X, data.X_val])
    y = np.concatenate([data.y, data.y_val])
    task = np.concatenate([data.task, data.task_val])
    n = len(data.y)
    split = [(np.arange(n), np.arange(n, len(y)))]
    with quiet():
        res = cross_validate_grid(est, X, y, task, param_grid={"alpha": [1.0 / C for C in C_grid]},
                                  cv=split, widen=0)
    scores = np.where(np.isnan(res.mean_scores), -np.inf, res.mean_scores)
    alpha = float(res.candidates[int(np.argmax(scores))]["alpha"])
    with timer() as tm, quiet():
        est.set_params(alpha=alpha).fit(data.X, data.y, task=data.task)
    return est, tm["seconds"], 1.0 / alpha


def run_synthetic(args) -> list[dict]:
    """Synthetic tree experiment; rows per method: test mean AUC, chosen C, similarity corr."""
    quick = bool(getattr(args, "quick", False))
    repeats = args.repeats or (1 if quick else 5)
    n_leaves = getattr(args, "n_leaves", None) or (16 if quick else 32)
    sigma = getattr(args, "noise", None) or 20.0
    n_test = getattr(args, "n_test", None) or (200 if quick else 1000)
    p_values = getattr(args, "p_values", None) or [1.0, 2.0, 3.0]
    C_grid = getattr(args, "C_grid", None) or (
        [1e-4, 1e-3, 1e-2, 1e-1] if quick else [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0])
    reading = getattr(args, "reading", None) or "A"
    tol = 1e-3
    seed0 = int(getattr(args, "random_state", 0) or 0)
    setting = f"T={n_leaves},sigma={sigma:g},reading={reading}"
    res: dict[str, dict[str, list]] = {}
    first: dict = {}
    for r in range(repeats):
        data = make_tree_tasks(
            n_tasks=n_leaves, n_features=getattr(args, "n_features", None) or 100,
            n_samples=getattr(args, "n_train", None) or 10, n_test=n_test, n_val=n_test,
            n_flips=getattr(args, "n_flips", None) or 5, noise=sigma,
            mutate_leaves=reading == "A", random_state=seed0 + r)
        shuf = shuffled_tree(data.tree, seed0 + 1000 + r)
        oracle = roc_auc(data.y_test, np.einsum("ij,ij->i", data.X_test, data.mu[data.task_test]),
                         data.task_test)
        d = res.setdefault("oracle (true mu_t)", {})
        d.setdefault("auc", []).append(oracle)
        d.setdefault("seconds", []).append(0.0)
        for name, params in methods(data.tree, shuf, p_values, n_leaves):
            est, sec, C = select_on_validation(params, data, C_grid, tol, seed0 + r)
            auc = roc_auc(data.y_test, est.decision_function(data.X_test, task=data.task_test),
                          data.task_test)
            d = res.setdefault(name, {})
            d.setdefault("auc", []).append(auc)
            d.setdefault("seconds", []).append(sec)
            d.setdefault("C", []).append(np.log10(C))
            if name not in ("individual", "union"):
                d.setdefault("corr", []).append(
                    similarity_correlation(data.S_true, est.task_similarity_))
            if r == 0:
                first[name] = est
        if r == 0:
            first["_data"] = data
        log(NAME, f"synthetic repetition {r + 1}/{repeats} done")
    rows = []
    for name, d in res.items():
        rows.append(summarize(NAME, "synthetic", setting, name, "mean_task_auc", d["auc"],
                              d["seconds"]))
        if "C" in d:
            rows.append(summarize(NAME, "synthetic", setting, name, "log10_C_selected", d["C"],
                                  d["seconds"]))
        if "corr" in d:
            rows.append(summarize(NAME, "synthetic", setting, name, "similarity_corr_true",
                                  d["corr"], d["seconds"]))
    if getattr(args, "out", None):
        write_synthetic_outputs(Path(args.out), first, p_values)
    return rows


def write_synthetic_outputs(out: Path, first: dict, p_values) -> None:
    """``theta.csv`` (weight per tree node) and, with matplotlib, the similarity heatmaps and
    the weights against the node depth (first repetition)."""
    out.mkdir(parents=True, exist_ok=True)
    data = first["_data"]
    T = data.mu.shape[0]
    _, info = tree_task_kernels(data.tree, list(range(T)), nodes="inner", return_info=True)
    names = [f"mtmkl-p{p:g}" for p in p_values]
    with open(out / "theta.csv", "w") as fh:
        fh.write("node,depth,n_leaves," + ",".join(names) + "\n")
        for m, (leaves, depth, _) in enumerate(info):
            vals = ",".join(f"{first[nm].theta_[m]:.6g}" for nm in names)
            fh.write(f"{m},{depth},{len(leaves)},{vals}\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    panels = [("true S = mu mu^T", data.S_true), ("vanilla", first["vanilla"].task_similarity_)]
    panels += [(nm, first[nm].task_similarity_) for nm in names]
    sh = f"mtmkl-p{p_values[len(p_values) // 2]:g}-shuffled-tree"
    panels.append((sh, first[sh].task_similarity_))
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.2))
    for ax, (title, M) in zip(axes, panels, strict=True):
        ax.imshow(M, cmap="viridis")
        label = (title if title.startswith("true") else
                 f"{title}\ncorr {similarity_correlation(data.S_true, M):.2f}")
        ax.set_title(label, fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    fig.savefig(out / "similarity_heatmaps.png", dpi=120)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    depth = np.array([d for _, d, _ in info])
    for nm in names:
        ax.plot(depth + 0.05 * names.index(nm), first[nm].theta_, "o", label=nm, alpha=0.7)
    ax.set_xlabel("node depth (0 = root)")
    ax.set_ylabel("theta")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "theta_by_depth.png", dpi=120)
    plt.close(fig)


def run_splice(args) -> list[dict]:
    """Single-organism splice sites: the estimator against LinearSVC (weighted-degree)."""
    quick = bool(getattr(args, "quick", False))
    repeats = args.repeats or (1 if quick else 5)
    degree = getattr(args, "wd_degree", None) or (6 if quick else 8)
    C = getattr(args, "splice_C", None) or 1.0
    tol = 1e-6
    source = getattr(args, "splice_source", None) or "arff"
    seed0 = int(getattr(args, "random_state", 0) or 0)
    bunch = load_splice(getattr(args, "data_dir", None), source=source,
                        n_max=getattr(args, "splice_n_max", None), random_state=None)
    seqs, y = bunch.sequences, np.asarray(bunch.y, dtype=float)
    L = len(seqs[0])
    window = None
    if source == "fasta":
        # the ARFF layout: 40 nt, the AG dinucleotide, 40 nt (AG at 197 in the 398-nt FASTA)
        window = (157, 239) if L == 398 else ((L - 82) // 2, (L - 82) // 2 + 82)
    X = weighted_degree_features(seqs, degree, window=window, normalize=True)
    setting = f"{source},n={len(y)},WD degree={degree},C={C:g}"
    splitter = StratifiedShuffleSplit(n_splits=repeats, test_size=0.25, random_state=seed0)
    acc: dict[str, dict[str, list]] = {}
    for r, (tr, te) in enumerate(splitter.split(np.zeros(len(y)), y)):
        ours = MultiTaskKernelClassifier(alpha=1.0 / C, task_similarity="union", loss="hinge",
                                         fit_intercept=True, tol=tol, max_iter=100000,
                                         random_state=seed0 + r)
        with timer() as t1:
            ours.fit(X[tr], y[tr])
        ref = LinearSVC(C=C, loss="hinge", fit_intercept=True, intercept_scaling=1.0, tol=tol,
                        max_iter=100000, random_state=seed0 + r)
        with timer() as t2, quiet():
            ref.fit(X[tr], y[tr])
        s1, s2 = ours.decision_function(X[te]), ref.decision_function(X[te])
        for name, s, sec in (("MultiTaskKernelClassifier (union, T=1)", s1, t1["seconds"]),
                             ("sklearn LinearSVC", s2, t2["seconds"])):
            d = acc.setdefault(name, {"v": [], "sec": []})
            d["v"].append(roc_auc(y[te], s))
            d["sec"].append(sec)
        d = acc.setdefault("difference", {"v": [], "sec": []})
        d["v"].append(float(np.max(np.abs(s1 - s2))))
        d["sec"].append(0.0)
    rows = []
    for name, d in acc.items():
        metric = "max_abs_decision_diff" if name == "difference" else "test_auc"
        rows.append(summarize(NAME, "splice", setting, name, metric, d["v"], d["sec"]))
    return rows


def add_arguments(parser) -> None:
    """Options of this reproduction."""
    g = parser.add_argument_group("mtmkl synthetic")
    g.add_argument("--noise", type=float, default=None,
                   help="class standard deviation sigma (paper: 20)")
    g.add_argument("--reading", choices=("A", "B"), default=None,
                   help="tree reading: A mutates every node (default), B not the leaves")
    g.add_argument("--n-leaves", type=int, default=None, help="number of tasks (paper: 32)")
    g.add_argument("--n-features", type=int, default=None, help="dimension (paper: 100)")
    g.add_argument("--n-flips", type=int, default=None, help="sign flips per node (paper: 5)")
    g.add_argument("--n-train", type=int, default=None,
                   help="training points per class and task (paper: 10)")
    g.add_argument("--n-test", type=int, default=None,
                   help="test (and validation) points per class and task (paper: 1000)")
    g.add_argument("--p-values", type=float, nargs="+", default=None,
                   help="MT-MKL norms p (default 1 2 3)")
    g.add_argument("--C-grid", dest="C_grid", type=float, nargs="+", default=None,
                   help="C values (alpha = 1 / C), chosen per method on validation data")
    s = parser.add_argument_group("mtmkl splice")
    s.add_argument("--wd-degree", type=int, default=None,
                   help="weighted-degree kernel degree (default 8)")
    s.add_argument("--splice-C", dest="splice_C", type=float, default=None,
                   help="C = 1 / alpha for the splice comparison (default 1)")
    s.add_argument("--splice-source", choices=("arff", "fasta"), default=None,
                   help="arff: 2,200 x 82 nt (default); fasta: 100,000 x 398 nt (central 82)")
    s.add_argument("--splice-n-max", type=int, default=None, help="keep the first N sequences")


def run(args) -> list[dict]:
    """Run the experiment chosen by ``args.dataset``."""
    if args.dataset == "synthetic":
        return run_synthetic(args)
    if args.dataset == "splice":
        return run_splice(args)
    raise ValueError(f"Unknown dataset {args.dataset!r} for mtmkl.")
