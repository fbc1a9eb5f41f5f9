"""Reproduction of multi-task MKL (Widmer, Kloft, Sreedharan & Rätsch, arXiv:1506.09153).

``multitask reproduce mtmkl --dataset synthetic``: the biologically motivated synthetic data of
the paper's Section 4.2. A binary tree of tasks; the root carries the class-mean difference
``mu = (1, ..., 1)`` in 100 dimensions; every node copies its parent's vector and flips the
sign of 5 random coordinates (reading A of the specification: every non-root node mutates, so
each of the 32 leaves has its own vector; reading B: leaves keep their parent's vector). Task
``t`` has classes ``N(+-mu_t / 2, sigma^2 I)``, 10 training and 1,000 test points per class.
Compared by mean per-task test AUC, with ``C`` chosen per method on a validation sample:

* individual (``B = I``), union (``B = 1 1^T``),
* vanilla hierarchical MTL (sum of the inner-node masks, ``theta = 1``),
* MT-MKL with ``p = 1, 2, 3`` (one mask kernel per inner node, weights learned),
* the same MT-MKL on a shuffled tree (leaf labels permuted): a control for the similarity.

The learned task similarity ``B_theta`` is compared with the true one
``S[s, t] = mu_s^T mu_t`` by the Pearson correlation of the off-diagonal entries.

``--dataset splice``: C. elegans acceptor splice sites (one organism) with weighted-degree
features: our dual coordinate descent against scikit-learn's ``LinearSVC`` on the same problem
(same C, loss, intercept handling): test AUC, fit time, largest decision-value difference.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import roc_auc_score
from sklearn.utils import Bunch, check_random_state

from multitask.estimators.mtmkl import MultitaskKernelClassifier
from multitask.experiments._common import summarize, timer
from multitask.experiments.registry import register
from multitask.kernels.task_similarity import balanced_binary_tree, tree_task_kernels

__all__ = ["make_tree_tasks", "offdiag_corr", "run", "run_splice", "run_synthetic"]

EXPERIMENT = "mtmkl"


# --------------------------------------------------------------------------- data
def _mutate_tree(node, mu, rng, n_flips, mutate_leaves, out):
    """Depth-first: every child copies ``mu`` and flips ``n_flips`` coordinates."""
    if not isinstance(node, tuple):
        out[node] = mu
        return
    for child in node:
        mc = mu.copy()
        if isinstance(child, tuple) or mutate_leaves:
            idx = rng.choice(mu.shape[0], size=n_flips, replace=False)
            mc[idx] = -mc[idx]
        _mutate_tree(child, mc, rng, n_flips, mutate_leaves, out)


def make_tree_tasks(
    n_leaves: int = 32,
    n_features: int = 100,
    n_flips: int = 5,
    sigma: float = 20.0,
    n_train: int = 10,
    n_test: int = 1000,
    n_val: int = 0,
    reading: str = "A",
    random_state=None,
) -> Bunch:
    """Synthetic tasks on a binary tree with sign-flip mutations (the paper's Section 4.2).

    The root vector is ``mu = 1`` (``n_features``,); each non-root node copies its parent and
    flips ``n_flips`` coordinates chosen without replacement (reading ``"A"``; reading ``"B"``
    does not mutate the leaves, so sibling leaves share a vector). Task ``t`` (leaf ``t``) draws
    ``x ~ N(y mu_t / 2, sigma^2 I)`` for ``y = +-1``.

    Parameters
    ----------
    n_leaves : int
        Number of tasks (32 in the paper: a depth-5 balanced binary tree).
    n_features, n_flips, sigma : int, int, float
    n_train, n_test, n_val : int
        Points per class and task in the training, test and validation sets.
    reading : {"A", "B"}
    random_state : int, RandomState or None

    Returns
    -------
    Bunch
        ``X_train``, ``y_train``, ``task_train`` (long format, labels ``+-1``, task ids
        ``0..T-1``), the same for ``test`` and ``val``; ``mu`` (``(T, n_features)``), ``tree``
        (nested tuples of task ids), ``S_true = mu mu^T`` (``(T, T)``), ``bayes_auc``
        (``Phi(||mu|| / (sigma sqrt 2))``, the per-task ceiling).
    """
    if reading not in ("A", "B"):
        raise ValueError(f"reading must be 'A' or 'B', got {reading!r}.")
    rng = check_random_state(random_state)
    tree = balanced_binary_tree(list(range(int(n_leaves))))
    mus: dict = {}
    _mutate_tree(tree, np.ones(int(n_features)), rng, int(n_flips), reading == "A", mus)
    mu = np.stack([mus[t] for t in range(int(n_leaves))])

    def sample(n_per_class):
        if n_per_class == 0:
            return np.zeros((0, mu.shape[1])), np.zeros(0), np.zeros(0, dtype=int)
        X, y, task = [], [], []
        for t in range(mu.shape[0]):
            for lab in (1.0, -1.0):
                X.append(
                    0.5 * lab * mu[t] + sigma * rng.standard_normal((n_per_class, mu.shape[1]))
                )
                y.append(np.full(n_per_class, lab))
                task.append(np.full(n_per_class, t))
        return np.vstack(X), np.concatenate(y), np.concatenate(task)

    from scipy.stats import norm

    out = Bunch(mu=mu, tree=tree, S_true=mu @ mu.T)
    out.X_train, out.y_train, out.task_train = sample(int(n_train))
    out.X_test, out.y_test, out.task_test = sample(int(n_test))
    out.X_val, out.y_val, out.task_val = sample(int(n_val))
    out.bayes_auc = float(norm.cdf(np.linalg.norm(mu[0]) / (sigma * np.sqrt(2.0))))
    return out


def offdiag_corr(A: np.ndarray, B: np.ndarray) -> float:
    """Pearson correlation of the off-diagonal entries of two ``(T, T)`` matrices."""
    mask = ~np.eye(A.shape[0], dtype=bool)
    a, b = A[mask], B[mask]
    if np.std(a) == 0 or np.std(b) == 0:
        return 0.0
    return float(np.corrcoef(a, b)[0, 1])


def _auc(y, s) -> float:
    """ROC AUC by the rank-sum (Mann-Whitney) formula, ties averaged (= roc_auc_score)."""
    from scipy.stats import rankdata

    pos = y > 0
    n_pos = int(pos.sum())
    n_neg = y.size - n_pos
    r = rankdata(s)
    return float((r[pos].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def _mean_task_auc(y, scores, task) -> float:
    """Mean over tasks of the per-task ROC AUC (labels +-1)."""
    return float(np.mean([_auc(y[task == t], scores[task == t]) for t in np.unique(task)]))


def shuffled_tree(tree, random_state=None):
    """The same tree shape with the leaf labels randomly permuted."""
    from multitask.kernels.task_similarity import tree_leaves

    leaves = tree_leaves(tree)
    perm = check_random_state(random_state).permutation(len(leaves))
    mapping = {leaves[i]: leaves[perm[i]] for i in range(len(leaves))}

    def relabel(node):
        if isinstance(node, tuple):
            return tuple(relabel(c) for c in node)
        return mapping[node]

    return relabel(tree)


# --------------------------------------------------------------------------- synthetic
def _methods(tree, shuffled, p_values, T):
    """(name, estimator kwargs) of every compared method."""
    masks = tree_task_kernels(tree, list(range(T)), nodes="inner")
    out = [
        ("individual", {"task_similarity": "individual"}),
        ("union", {"task_similarity": "union"}),
        ("vanilla", {"task_similarity": masks, "p": np.inf}),
    ]
    for p in p_values:
        out.append((f"mtmkl-p{p:g}", {"task_similarity": masks, "p": float(p)}))
    shuf = tree_task_kernels(shuffled, list(range(T)), nodes="inner")
    for p in p_values:
        out.append((f"mtmkl-p{p:g}-shuffled-tree", {"task_similarity": shuf, "p": float(p)}))
    return out


def _fit_select(kwargs, data, C_grid, tol, random_state):
    """Fit for every C; keep the model with the best validation mean AUC."""
    best = None
    for C in C_grid:
        est = MultitaskKernelClassifier(
            C=C, fit_intercept=False, tol=tol, random_state=random_state, **kwargs
        )
        with timer() as tm, warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(data.X_train, data.y_train, task=data.task_train)
        val = _mean_task_auc(
            data.y_val, est.decision_function(data.X_val, task=data.task_val), data.task_val
        )
        if best is None or val > best[0]:
            best = (val, est, tm["seconds"], C)
    return best


def run_synthetic(args) -> list[dict]:
    """Synthetic tree experiment; rows per method: test mean AUC, chosen C, similarity corr."""
    quick = bool(getattr(args, "quick", False))
    repeats = args.repeats or (1 if quick else 5)
    n_leaves = getattr(args, "n_leaves", None) or (16 if quick else 32)
    sigma = getattr(args, "noise", None) or 20.0
    n_test = getattr(args, "n_test", None) or (200 if quick else 1000)
    p_values = getattr(args, "p_values", None) or [1.0, 2.0, 3.0]
    C_grid = getattr(args, "C_grid", None) or (
        [1e-4, 1e-3, 1e-2, 1e-1] if quick else [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0]
    )
    reading = getattr(args, "reading", None) or "A"
    tol = 1e-3
    seed0 = int(getattr(args, "random_state", 0) or 0)
    setting = f"T={n_leaves},sigma={sigma:g},reading={reading}"
    res: dict[str, dict[str, list]] = {}
    first: dict = {}
    for r in range(repeats):
        data = make_tree_tasks(
            n_leaves=n_leaves,
            n_features=getattr(args, "n_features", None) or 100,
            n_flips=getattr(args, "n_flips", None) or 5,
            sigma=sigma,
            n_train=getattr(args, "n_train", None) or 10,
            n_test=n_test,
            n_val=n_test,
            reading=reading,
            random_state=seed0 + r,
        )
        shuf = shuffled_tree(data.tree, seed0 + 1000 + r)
        oracle = _mean_task_auc(
            data.y_test,
            np.einsum("ij,ij->i", data.X_test, data.mu[data.task_test]),
            data.task_test,
        )
        res.setdefault("oracle (true mu_t)", {}).setdefault("auc", []).append(oracle)
        res["oracle (true mu_t)"].setdefault("seconds", []).append(0.0)
        for name, kwargs in _methods(data.tree, shuf, p_values, n_leaves):
            _, est, sec, C = _fit_select(kwargs, data, C_grid, tol, seed0 + r)
            auc = _mean_task_auc(
                data.y_test,
                est.decision_function(data.X_test, task=data.task_test),
                data.task_test,
            )
            d = res.setdefault(name, {})
            d.setdefault("auc", []).append(auc)
            d.setdefault("seconds", []).append(sec)
            d.setdefault("C", []).append(np.log10(C))
            d.setdefault("corr", []).append(offdiag_corr(est.task_similarity_, data.S_true))
            if r == 0:
                first[name] = est
        if r == 0:
            first["_data"] = data
            first["_shuffled"] = shuf
    rows = []
    for name, d in res.items():
        rows.append(
            summarize(
                EXPERIMENT, "synthetic", setting, name, "mean_task_auc", d["auc"], d["seconds"]
            )
        )
        if "C" in d:
            rows.append(
                summarize(
                    EXPERIMENT, "synthetic", setting, name, "log10_C_selected", d["C"], d["seconds"]
                )
            )
        if "corr" in d and name not in ("individual", "union"):
            rows.append(
                summarize(
                    EXPERIMENT,
                    "synthetic",
                    setting,
                    name,
                    "similarity_corr_true",
                    d["corr"],
                    d["seconds"],
                )
            )
    if getattr(args, "out", None):
        _write_synthetic_outputs(Path(args.out), first, p_values)
    return rows


def _write_synthetic_outputs(out: Path, first: dict, p_values) -> None:
    """theta per tree node (CSV) and, with matplotlib, the similarity heatmaps."""
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
    for nm in names:
        panels.append((nm, first[nm].task_similarity_))
    sh = f"mtmkl-p{p_values[len(p_values) // 2]:g}-shuffled-tree"
    panels.append((sh, first[sh].task_similarity_))
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.2))
    for ax, (title, M) in zip(axes, panels, strict=True):
        ax.imshow(M, cmap="viridis")
        r = offdiag_corr(M, data.S_true)
        ax.set_title(f"{title}\ncorr {r:.2f}" if title[:4] != "true" else title, fontsize=8)
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


# --------------------------------------------------------------------------- splice
def run_splice(args) -> list[dict]:
    """Single-organism splice sites: our DCD vs LinearSVC on weighted-degree features."""
    from sklearn.model_selection import StratifiedShuffleSplit
    from sklearn.svm import LinearSVC

    from multitask.datasets import load_splice
    from multitask.kernels.strings import weighted_degree_features

    quick = bool(getattr(args, "quick", False))
    repeats = args.repeats or (1 if quick else 5)
    degree = getattr(args, "wd_degree", None) or (6 if quick else 8)
    C = getattr(args, "splice_C", None) or 1.0
    tol = 1e-6
    source = getattr(args, "splice_source", None) or "arff"
    n_max = getattr(args, "splice_n_max", None)
    seed0 = int(getattr(args, "random_state", 0) or 0)
    bunch = load_splice(
        getattr(args, "data_dir", None), source=source, n_max=n_max, random_state=None
    )
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
        ours = MultitaskKernelClassifier(
            C=C,
            task_similarity="union",
            loss="hinge",
            fit_intercept=True,
            tol=tol,
            max_iter=100000,
            random_state=seed0 + r,
        )
        with timer() as t1:
            ours.fit(X[tr], y[tr])
        ref = LinearSVC(
            C=C,
            loss="hinge",
            fit_intercept=True,
            intercept_scaling=1.0,
            tol=tol,
            max_iter=100000,
            random_state=seed0 + r,
        )
        with timer() as t2, warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            ref.fit(X[tr], y[tr])
        s1 = ours.decision_function(X[te])
        s2 = ref.decision_function(X[te])
        for name, s, sec in (
            ("mtmkl-dcd (union, T=1)", s1, t1["seconds"]),
            ("sklearn LinearSVC", s2, t2["seconds"]),
        ):
            d = acc.setdefault(name, {"auc": [], "sec": []})
            d["auc"].append(roc_auc_score(y[te], s))
            d["sec"].append(sec)
        d = acc.setdefault("difference", {"auc": [], "sec": []})
        d["auc"].append(float(np.max(np.abs(s1 - s2))))
        d["sec"].append(0.0)
    rows = []
    for name, d in acc.items():
        metric = "max_abs_decision_diff" if name == "difference" else "test_auc"
        rows.append(summarize(EXPERIMENT, "splice", setting, name, metric, d["auc"], d["sec"]))
    return rows


# --------------------------------------------------------------------------- registry
def add_arguments(parser) -> None:
    """Options of ``multitask reproduce mtmkl``."""
    g = parser.add_argument_group("mtmkl synthetic")
    g.add_argument(
        "--noise", type=float, default=None, help="class standard deviation sigma (paper: 20)"
    )
    g.add_argument(
        "--reading",
        choices=("A", "B"),
        default=None,
        help="tree reading: A mutates every node (default), B not the leaves",
    )
    g.add_argument("--n-leaves", type=int, default=None, help="number of tasks (paper: 32)")
    g.add_argument("--n-features", type=int, default=None, help="dimension (paper: 100)")
    g.add_argument("--n-flips", type=int, default=None, help="sign flips per node (paper: 5)")
    g.add_argument(
        "--n-train", type=int, default=None, help="training points per class and task (paper: 10)"
    )
    g.add_argument(
        "--n-test",
        type=int,
        default=None,
        help="test (and validation) points per class and task (paper: 1000)",
    )
    g.add_argument(
        "--p-values", type=float, nargs="+", default=None, help="MT-MKL norms p (default 1 2 3)"
    )
    g.add_argument(
        "--C-grid",
        dest="C_grid",
        type=float,
        nargs="+",
        default=None,
        help="C values, chosen per method on validation data",
    )
    s = parser.add_argument_group("mtmkl splice")
    s.add_argument(
        "--wd-degree", type=int, default=None, help="weighted-degree kernel degree (default 8)"
    )
    s.add_argument(
        "--splice-C",
        dest="splice_C",
        type=float,
        default=None,
        help="C for the splice comparison (default 1)",
    )
    s.add_argument(
        "--splice-source",
        choices=("arff", "fasta"),
        default=None,
        help="arff: 2,200 x 82 nt (default); fasta: 100,000 x 398 nt (central 82)",
    )
    s.add_argument("--splice-n-max", type=int, default=None, help="keep the first N sequences")


@register(
    "mtmkl",
    datasets=("synthetic", "splice"),
    description="Multi-task MKL (Widmer et al.): tree-structured synthetic tasks; splice sanity",
    add_arguments=add_arguments,
)
def run(args) -> list[dict]:
    """Run the experiment chosen by ``args.dataset``."""
    if args.dataset == "synthetic":
        return run_synthetic(args)
    if args.dataset == "splice":
        return run_splice(args)
    raise ValueError(f"Unknown dataset {args.dataset!r} for mtmkl.")
