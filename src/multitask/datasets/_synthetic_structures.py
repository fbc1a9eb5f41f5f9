"""Synthetic data with a known structure other than a planted weight matrix: tasks at the
leaves of a tree (:func:`~multitask.datasets.make_tree_tasks`) and a multi-label problem
with outlier labels (:func:`~multitask.datasets.make_multilabel_tasks`); both importable
from :mod:`multitask.datasets.synthetic` and :mod:`multitask.datasets`."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils import Bunch

from ._synthetic_sampling import Rng, _check_int, _check_real
from ._utils import RandomStateLike, check_random_state

__all__ = ["make_multilabel_tasks", "make_tree_tasks"]


# ----------------------------------------------------------------------------- tree tasks
def _mutate_tree(
    node: object, mu: np.ndarray, rng: Rng, n_flips: int, mutate_leaves: bool, out: dict
) -> None:
    """Depth first: every child copies ``mu`` and flips the sign of ``n_flips`` coordinates."""
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
    n_tasks: int = 32,
    n_features: int = 100,
    n_samples: int = 10,
    *,
    n_test: int = 0,
    n_val: int = 0,
    n_flips: int = 5,
    noise: float = 20.0,
    mutate_leaves: bool = True,
    random_state: RandomStateLike = None,
) -> Bunch:
    """Binary classification tasks on a binary tree with sign-flip mutations.

    The synthetic set-up of Widmer, Kloft, Sreedharan & Rätsch, "Framework for multi-task
    multiple kernel learning and applications in genome analysis" (Section 4.2). The tasks are
    the leaves of the balanced binary tree over ``0, ..., n_tasks - 1``
    (:func:`multitask.kernels.balanced_binary_tree`). The root carries ``mu = (1, ..., 1)``
    (``n_features``); depth first, every child node copies its parent's vector and flips the
    sign of ``n_flips`` coordinates drawn without replacement (with ``mutate_leaves=False`` the
    leaves keep their parent's vector, so sibling tasks share one). Task ``t`` has the classes
    ``y = +1`` and ``y = -1`` with inputs ``x ~ N(y mu_t / 2, noise^2 I)``, ``n_samples``
    points per class (first all ``+1`` points, then all ``-1`` points of task 0, then task 1,
    ...). The log-odds of ``y = +1`` is ``x @ mu_t / noise^2``, so ``W_true = mu.T / noise^2``
    and the true task similarity is ``S_true = mu @ mu.T``.

    The random draws: the mutations, then the training points, the test points and the
    validation points (in this order: the one of the original experiment).

    Parameters
    ----------
    n_tasks : int, default=32
        Number of tasks (leaves); 32 is the paper's depth-5 tree.
    n_features : int, default=100
    n_samples : int, default=10
        Training points per class and task.
    n_test, n_val : int, default=0
        Test and validation points per class and task (0: no such part).
    n_flips : int, default=5
        Coordinates flipped at every mutated node, at most ``n_features``.
    noise : float, default=20.0
        Standard deviation ``sigma`` of the classes around their means.
    mutate_leaves : bool, default=True
        Whether the leaves mutate too (the specification's reading A; False: reading B).
    random_state : int, RandomState instance, Generator instance or None, default=None

    Returns
    -------
    data : sklearn.utils.Bunch
        X : ndarray of shape (2 * n_samples * n_tasks, n_features)
        y : ndarray of shape (2 * n_samples * n_tasks,)
            Labels +1.0 / -1.0.
        task : ndarray of shape (2 * n_samples * n_tasks,), int64
            Task (leaf) of every row (long format).
        X_test, y_test, task_test, X_val, y_val, task_val
            The test and validation parts, present when ``n_test`` / ``n_val`` > 0.
        mu : ndarray of shape (n_tasks, n_features)
            Class-mean difference of every task.
        W_true : ndarray of shape (n_features, n_tasks)
            ``mu.T / noise^2``.
        S_true : ndarray of shape (n_tasks, n_tasks)
            ``mu @ mu.T``.
        tree : nested tuples of task ids
        bayes_auc : float
            ``Phi(||mu_t|| / (noise sqrt 2))``: the AUC of the Bayes scores ``x @ mu_t``, the
            same for every task.
    """
    from scipy.stats import norm

    from multitask.kernels.task_similarity import balanced_binary_tree

    T = _check_int("n_tasks", n_tasks, 1)
    d = _check_int("n_features", n_features, 1)
    n_train = _check_int("n_samples", n_samples, 1)
    n_te = _check_int("n_test", n_test, 0)
    n_va = _check_int("n_val", n_val, 0)
    flips = _check_int("n_flips", n_flips, 0, d)
    sigma = _check_real("noise", noise)
    if sigma <= 0:
        raise ValueError(f"noise must be > 0, got {noise!r}")
    rng = check_random_state(random_state)
    tree = balanced_binary_tree(list(range(T)))
    mus: dict = {}
    _mutate_tree(tree, np.ones(d), rng, flips, bool(mutate_leaves), mus)
    mu = np.stack([mus[t] for t in range(T)])

    def sample(n_per_class: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        X, y, task = [], [], []
        for t in range(T):
            for lab in (1.0, -1.0):
                X.append(0.5 * lab * mu[t] + sigma * rng.standard_normal((n_per_class, d)))
                y.append(np.full(n_per_class, lab))
                task.append(np.full(n_per_class, t, dtype=np.int64))
        return np.vstack(X), np.concatenate(y), np.concatenate(task)

    out = Bunch(mu=mu, W_true=mu.T / sigma**2, S_true=mu @ mu.T, tree=tree, noise=sigma)
    for suffix, n in (("", n_train), ("_test", n_te), ("_val", n_va)):
        if n > 0:
            out["X" + suffix], out["y" + suffix], out["task" + suffix] = sample(n)
    out.bayes_auc = float(norm.cdf(np.linalg.norm(mu[0]) / (sigma * np.sqrt(2.0))))
    return out


# ----------------------------------------------------------------------------- multi-label
def make_multilabel_tasks(
    n_samples: int = 2000,
    n_features: int = 1000,
    n_tasks: int = 100,
    *,
    mean_tokens: float = 60.0,
    rank: int = 10,
    n_outliers: int = 10,
    noise: float = 0.25,
    mean_positives: float = 55.0,
    min_positives: int = 20,
    random_state: RandomStateLike = None,
) -> Bunch:
    """A multi-label problem: sparse tf-idf-like documents, labels from low rank + outliers.

    Built to have the shape of a text-categorization benchmark (EUR-Lex: 19,348 documents,
    5,000 features, 412 labels) for robust multi-task learning (Pan, Xia, Yin & Liu, "A
    divide-and-conquer method for scalable robust multitask learning"); every label is a task
    on the shared design. In the order of the random draws:

    * vocabulary: feature ``j`` of a random order has popularity ``(j + 20)^-0.9``
      (normalized);
    * documents: ``1 + Poisson(mean_tokens - 1)`` tokens each, drawn from the vocabulary; term
      counts become ``log(1 + tf) * idf`` with ``idf = log((1 + n) / (1 + df)) + 1``, rows
      scaled to unit l2 norm;
    * scores ``S = (X U) V^T / sqrt(rank)`` with standard normal ``U`` (n_features, rank) and
      ``V`` (n_tasks, rank); ``n_outliers`` random tasks (the outlier labels) get the scores
      ``X E_t`` of their own standard normal weights instead;
    * each task's scores are standardized, then ``noise`` times standard normal noise added;
    * the ``k_t`` highest scores of task ``t`` are positive, ``k_t`` log-normal with mean
      ``mean_positives`` (``exp(N(log(mean_positives) - 1/2, 1))``), rounded and clipped to
      ``[min_positives, n_samples // 4]``.

    Parameters
    ----------
    n_samples : int, default=2000
        Documents, at least 4.
    n_features : int, default=1000
    n_tasks : int, default=100
    mean_tokens : float, default=60.0
        Mean number of tokens per document (at least 1).
    rank : int, default=10
        Rank of the inlier part of the weights.
    n_outliers : int, default=10
        Number of outlier labels, at most ``n_tasks``.
    noise : float, default=0.25
        Noise added to the standardized scores.
    mean_positives : float, default=55.0
        Mean number of positive documents per label.
    min_positives : int, default=20
    random_state : int, RandomState instance, Generator instance or None, default=None

    Returns
    -------
    data : sklearn.utils.Bunch
        X : scipy.sparse.csr_matrix of shape (n_samples, n_features)
        Y : ndarray of shape (n_samples, n_tasks), int64 in {0, 1}
        W_true : ndarray of shape (n_features, n_tasks)
            ``L + E``: the weights whose scores ``X @ W_true`` (before standardization and
            noise) define the labels, up to rounding.
        L : ndarray of shape (n_features, n_tasks)
            ``U V^T / sqrt(rank)`` with the outlier columns zero.
        E : ndarray of shape (n_features, n_tasks)
            The outlier labels' weights, zero elsewhere.
        outlier_tasks : ndarray of int64
            Sorted indices of the outlier labels.
        DESCR : str
    """
    n = _check_int("n_samples", n_samples, 4)
    d = _check_int("n_features", n_features, 1)
    m = _check_int("n_tasks", n_tasks, 1)
    r = _check_int("rank", rank, 1)
    k_out = _check_int("n_outliers", n_outliers, 0, m)
    tokens = _check_real("mean_tokens", mean_tokens, 1.0)
    sigma = _check_real("noise", noise)
    mean_pos = _check_real("mean_positives", mean_positives)
    if mean_pos <= 0:
        raise ValueError(f"mean_positives must be > 0, got {mean_positives!r}")
    min_pos = _check_int("min_positives", min_positives, 1)
    rng = check_random_state(random_state)
    pop = 1.0 / (np.arange(d) + 20.0) ** 0.9
    pop = rng.permutation(pop / pop.sum())
    lens = 1 + rng.poisson(max(tokens - 1.0, 0.0), size=n)
    rows = np.repeat(np.arange(n), lens)
    cols = rng.choice(d, size=rows.size, p=pop)
    C = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, d))
    C.sum_duplicates()
    df = np.bincount(C.indices, minlength=d)
    idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
    X = C.copy()
    X.data = np.log1p(X.data) * idf[X.indices]
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = (sp.diags(1.0 / np.maximum(norms, 1e-12)) @ X).tocsr()
    U = rng.standard_normal((d, r))
    V = rng.standard_normal((m, r))
    outliers = np.sort(rng.choice(m, k_out, replace=False)).astype(np.int64)
    S = (X @ U) @ V.T / np.sqrt(r)
    G = rng.standard_normal((d, k_out))
    S[:, outliers] = X @ G
    S = (S - S.mean(axis=0)) / np.maximum(S.std(axis=0), 1e-12)
    S += sigma * rng.standard_normal(S.shape)
    k = rng.lognormal(np.log(mean_pos) - 0.5, 1.0, m)
    k = np.clip(np.round(k), min_pos, n // 4).astype(np.int64)
    thr = -np.sort(-S, axis=0)[k - 1, np.arange(m)]
    Y = (S >= thr).astype(np.int64)
    L = U @ V.T / np.sqrt(r)
    L[:, outliers] = 0.0
    E = np.zeros((d, m))
    E[:, outliers] = G
    descr = (
        f"Generated multi-label data: {n} documents, {d} features "
        f"({X.nnz / n:.1f} nonzeros per row), {m} labels (label cardinality "
        f"{Y.sum(axis=1).mean():.2f}), low rank {r}, {k_out} outlier labels."
    )
    return Bunch(X=X, Y=Y, W_true=L + E, L=L, E=E, outlier_tasks=outliers, DESCR=descr)
