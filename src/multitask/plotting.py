"""Plots with matplotlib (part of the base install).

Every function returns a matplotlib ``Figure`` and never shows it; pass ``ax=`` to draw into
an existing axes (the function then returns that axes' figure). Figures made here are not
registered with ``pyplot`` (no global state): save them with ``fig.savefig(path)``.

* :func:`plot_weight_matrix`: ``coef_`` as a heatmap (tasks x features);
* :func:`plot_singular_values`: singular value spectra of ``coef_`` and of its components
  (low-rank, sparse, outlier parts) with the cap ``tau`` of the capped trace norm;
* :func:`plot_convergence`: objective against iteration and against time;
* :func:`plot_regularization_path`: coefficient norms against the regularization parameter;
* :func:`plot_cv_scores`: cross-validated score against the grid, with the chosen value;
* :func:`plot_task_similarity`: a task-by-task matrix (learned or from the weights);
* :func:`plot_task_correlation`: a task correlation matrix on a diverging scale in [-1, 1]
  (e.g. the one learned by multi-task relationship learning);
* :func:`plot_results_bars`: results of ``multitask benchmark`` / ``reproduce``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

__all__ = [
    "plot_convergence",
    "plot_cv_scores",
    "plot_regularization_path",
    "plot_results_bars",
    "plot_singular_values",
    "plot_task_correlation",
    "plot_task_similarity",
    "plot_weight_matrix",
    "task_similarity_from_coef",
]

#: The error when matplotlib cannot be imported: it is a dependency of the base install, so
#: only a broken or hand-made environment lacks it.
NO_MATPLOTLIB = ("Plotting needs matplotlib, a dependency of multitask that this environment "
                 "lacks: pip install matplotlib (or reinstall multitask).")


def _plt():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover
        raise ImportError(NO_MATPLOTLIB) from exc
    return plt


def _figure(ax, figsize):
    """``(fig, ax)``: a new pyplot-free figure with one axes, or ``ax`` and its figure."""
    if ax is not None:
        return ax.figure, ax
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover
        raise ImportError(NO_MATPLOTLIB) from exc
    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.add_subplot()


def _coef_of(model) -> np.ndarray:
    """``coef_`` ``(n_tasks, n_features)`` of a fitted model, or the array itself."""
    coef = getattr(model, "coef_", model)
    coef = np.asarray(coef, dtype=np.float64)
    if coef.ndim != 2:
        raise ValueError(f"Expected a fitted model or a 2-D (n_tasks, n_features) array, got "
                         f"shape {coef.shape}.")
    return coef


def _short(labels, n: int, prefix: str):
    if labels is None:
        return [f"{prefix}{i}" for i in range(n)]
    labels = [str(v) for v in labels]
    if len(labels) != n:
        raise ValueError(f"Got {len(labels)} {prefix.strip()} labels for {n} rows/columns.")
    return labels


def _ticks(ax, axis: str, labels: list[str], max_labels: int = 40) -> None:
    n = len(labels)
    step = max(1, int(np.ceil(n / max_labels)))
    pos = np.arange(0, n, step)
    if axis == "x":
        ax.set_xticks(pos, [labels[i] for i in pos], rotation=90, fontsize=7)
    else:
        ax.set_yticks(pos, [labels[i] for i in pos], fontsize=7)


# ----------------------------------------------------------------------------- weights
def plot_weight_matrix(model, *, task_names=None, feature_names=None, cmap: str = "RdBu_r",
                       ax=None, title: str | None = None):
    """Heatmap of the weight matrix, tasks as rows and features as columns.

    Parameters
    ----------
    model : fitted estimator or array-like of shape (n_tasks, n_features)
        Its ``coef_`` (the public orientation) is drawn; the colour scale is symmetric around
        zero so that exact zeros (sparse models) are white.
    task_names, feature_names : sequence of str, optional
        Default: the model's ``tasks_`` and ``feature_names_in_`` when present.
    cmap : str, default="RdBu_r"
    ax : matplotlib Axes, optional
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    coef = _coef_of(model)
    m, d = coef.shape
    if task_names is None and hasattr(model, "tasks_"):
        task_names = model.tasks_
    if feature_names is None and hasattr(model, "feature_names_in_"):
        feature_names = model.feature_names_in_
    fig, ax = _figure(ax, (min(2 + 0.25 * d, 14), min(1.5 + 0.18 * m, 12)))
    vmax = float(np.max(np.abs(coef))) if coef.size else 1.0
    vmax = vmax if vmax > 0 else 1.0
    im = ax.imshow(coef, aspect="auto", cmap=cmap, vmin=-vmax, vmax=vmax,
                   interpolation="nearest")
    fig.colorbar(im, ax=ax, label="weight")
    _ticks(ax, "x", _short(feature_names, d, "x"))
    _ticks(ax, "y", _short(task_names, m, "task "))
    ax.set_xlabel("feature")
    ax.set_ylabel("task")
    ax.set_title(title or f"{type(model).__name__ if hasattr(model, 'coef_') else 'W'}: "
                 f"{m} tasks x {d} features")
    return fig


_COMPONENTS = (
    ("coef_", "W = coef_"),
    ("low_rank_component_", "low-rank part"),
    ("sparse_component_", "sparse part"),
    ("outlier_component_", "outlier part"),
)


def _zero_tolerance(shape: tuple[int, ...], top: float) -> float:
    """Singular values at most ``max(shape) * eps * sigma_1`` are zero to machine precision
    (the tolerance of ``numpy.linalg.matrix_rank``)."""
    return float(max(shape, default=0)) * float(np.finfo(np.float64).eps) * top


def plot_singular_values(model, *, components: bool = True, log: bool = True, tau=None,
                         ax=None, title: str | None = None):
    """Singular values of ``coef_`` (and of the model's components), largest first.

    Singular values that are zero to machine precision (at most ``max(m, d) * eps *
    sigma_1``, the tolerance of ``numpy.linalg.matrix_rank``) are drawn at zero and marked
    with an ``x``; with ``log`` the vertical axis is then logarithmic above the smallest
    non-zero value and linear below it (matplotlib's ``symlog``), so that zero has its
    place on the axis. The index axis has integer ticks.

    Parameters
    ----------
    model : fitted estimator, array of shape (n_tasks, n_features), or dict of arrays
        A dict draws one spectrum per entry (label -> matrix).
    components : bool, default=True
        Also draw ``low_rank_component_``, ``sparse_component_`` and ``outlier_component_``
        when the model has them.
    log : bool, default=True
        Logarithmic vertical axis (linear near zero when a singular value is zero).
    tau : float, optional
        A horizontal line at the cap; default: the model's ``tau`` when it has
        ``singular_values_`` (the capped trace norm).
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.ticker import MaxNLocator

    if isinstance(model, Mapping):
        mats = {str(k): _coef_of(v) for k, v in model.items()}
    elif hasattr(model, "coef_"):
        mats = {label: np.asarray(getattr(model, attr)) for attr, label in _COMPONENTS
                if hasattr(model, attr) and (components or attr == "coef_")}
        if tau is None and hasattr(model, "singular_values_"):
            tau = getattr(model, "tau", None)
    else:
        mats = {"W": _coef_of(model)}
    fig, ax = _figure(ax, (5, 3.5))
    floor = np.inf
    spectra = {}
    for label, A in mats.items():
        s = np.linalg.svd(A, compute_uv=False) if A.size else np.zeros(0)
        top = float(s[0]) if s.size else 0.0
        zero = s <= _zero_tolerance(A.shape, top)
        s = np.where(zero, 0.0, s)
        spectra[label] = (s, zero)
        if (~zero).any():
            floor = min(floor, float(s[~zero].min()))
    any_zero = False
    for label, (s, zero) in spectra.items():
        k = np.arange(1, s.size + 1)
        rank = int(np.sum(s > 1e-8 * max(s[0] if s.size else 0, 1e-300)))
        (line,) = ax.plot(k, s, marker="o", ms=3, label=f"{label} (rank {rank})")
        if zero.any():
            any_zero = True
            ax.scatter(k[zero], s[zero], marker="x", s=30, color=line.get_color(), zorder=3,
                       clip_on=False, label=f"{label}: {int(zero.sum())} zero")
    if tau is not None and np.isfinite(float(tau)):
        ax.axhline(float(tau), color="k", ls="--", lw=1, label=f"tau = {float(tau):g}")
    if log and np.isfinite(floor):
        if any_zero:
            ax.set_yscale("symlog", linthresh=floor)
            ax.set_ylim(bottom=0.0)
        else:
            ax.set_yscale("log")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("index i")
    ax.set_ylabel("singular value sigma_i" + (" (x: zero)" if any_zero else ""))
    ax.legend(fontsize=8)
    ax.set_title(title or "Singular value spectrum")
    return fig


# ----------------------------------------------------------------------------- solvers
def _history(obj):
    """``(objective, times)`` of a fitted model, a SolverResult, or a pair of arrays."""
    res = getattr(obj, "solver_result_", obj)
    if hasattr(res, "objective"):
        obj_hist = np.asarray(res.objective, dtype=float)
        times = np.asarray(getattr(res, "times", np.zeros(0)), dtype=float)
    elif hasattr(obj, "objective_"):
        obj_hist = np.asarray(obj.objective_, dtype=float)
        times = np.zeros(0)
    elif isinstance(obj, (tuple, list)) and len(obj) == 2:
        obj_hist = np.asarray(obj[0], dtype=float)
        times = np.asarray(obj[1], dtype=float)
    else:
        obj_hist = np.asarray(obj, dtype=float)
        times = np.zeros(0)
    if obj_hist.ndim != 1 or obj_hist.size == 0:
        raise ValueError("No objective history to plot (a fitted model with solver_result_ or "
                         "objective_, a SolverResult, or an array).")
    if times.shape != obj_hist.shape:
        times = None
    return obj_hist, times


def plot_convergence(results, *, x: str = "both", suboptimality: bool = True,
                     f_star: float | None = None, title: str | None = None):
    """Objective against iteration and against wall-clock time.

    Parameters
    ----------
    results : fitted model, SolverResult, array, or dict label -> one of those
        Each history comes from ``solver_result_`` (objective and times), ``objective_``,
        a :class:`~multitask.solvers.result.SolverResult`, an ``(objective, times)`` pair, or
        an objective array.
    x : {"both", "iteration", "time"}, default="both"
        One panel per choice; histories without times are left out of the time panel. The
        iteration panel puts entry ``k`` of a record at ``k``: a solver that records the
        objective at each iteration (accelerated gradient) gives one point per iteration, one
        that records it at its convergence checks only (ADMM) one point per check.
    suboptimality : bool, default=True
        Draw ``F_k - F*`` on a log scale, with ``F*`` = ``f_star`` or else each history's own
        smallest value (which then shows at the bottom of the axis); false: the objective
        itself.
    f_star : float, optional
        Known optimal value (common to all histories: give it only for runs on one problem).

    Returns
    -------
    matplotlib.figure.Figure
    """
    if x not in ("both", "iteration", "time"):
        raise ValueError(f"x must be 'both', 'iteration' or 'time', got {x!r}.")
    items = results.items() if isinstance(results, Mapping) else [("", results)]
    hists = {str(k): _history(v) for k, v in items}
    panels = ["iteration", "time"] if x == "both" else [x]
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover
        raise ImportError(NO_MATPLOTLIB) from exc
    fig = Figure(figsize=(4.5 * len(panels), 3.5), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, panel in zip(axes, panels, strict=True):
        for label, (h, t) in hists.items():
            if panel == "time" and t is None:
                continue
            xs = np.arange(1, h.size + 1) if panel == "iteration" else t
            if suboptimality:
                gap = h - (f_star if f_star is not None else float(h.min()))
                pos = gap[gap > 0]
                floor = pos.min() / 10 if pos.size else 1e-16
                ax.semilogy(xs, np.maximum(gap, floor), label=label or None)
            else:
                ax.plot(xs, h, label=label or None)
        ax.set_xlabel("iteration" if panel == "iteration" else "time (s)")
        ax.set_ylabel("F_k - F*" if suboptimality else "objective F_k")
        if len(hists) > 1:
            ax.legend(fontsize=8)
    fig.suptitle(title or "Convergence")
    return fig


# ----------------------------------------------------------------------------- paths
_NORMS = {
    "fro": ("||W||_F", lambda W: float(np.linalg.norm(W))),
    "nuclear": ("||W||_*", lambda W: float(np.linalg.svd(W, compute_uv=False).sum())
                if W.size else 0.0),
    "l21": ("sum_j ||W_j.||_2", lambda W: float(np.linalg.norm(W, axis=0).sum())),
    "l1": ("||W||_1", lambda W: float(np.abs(W).sum())),
}


def plot_regularization_path(path, coefs=None, *, kind: str = "features", feature_names=None,
                             param: str | None = None, ax=None, title: str | None = None):
    """Coefficients along a regularization path.

    Parameters
    ----------
    path : Bunch from :func:`multitask.model_selection.regularization_path`, or the grid
        The grid (``path.grid``) and the solutions (``path.coefs``, shape ``(n_values,
        n_tasks, n_features)``); or give the grid here and ``coefs`` separately.
    kind : {"features", "norms"}, default="features"
        ``"features"``: one line per feature, the norm of its weights over the tasks
        ``||W_j.||_2`` (feature selection along the path); ``"norms"``: the Frobenius,
        nuclear, l2,1 and l1 norms of ``W``, each divided by its largest value on the path.
    feature_names : sequence of str, optional
    param : str, optional
        Name of the parameter (x-axis label); default ``path.param`` or ``"alpha"``.

    Returns
    -------
    matplotlib.figure.Figure
    """
    if coefs is None:
        values, coefs = path.grid, path.coefs
        param = param or getattr(path, "param", None)
    else:
        values = path
    values = np.asarray(values, dtype=float)
    coefs = np.asarray(coefs, dtype=float)
    if coefs.ndim != 3 or coefs.shape[0] != values.size:
        raise ValueError(f"coefs must have shape (n_values={values.size}, n_tasks, n_features), "
                         f"got {coefs.shape}.")
    if kind not in ("features", "norms"):
        raise ValueError(f"kind must be 'features' or 'norms', got {kind!r}.")
    fig, ax = _figure(ax, (5.5, 3.8))
    if kind == "features":
        rows = np.linalg.norm(coefs, axis=1)  # (n_values, n_features): ||W_j.|| over tasks
        names = _short(feature_names, coefs.shape[2], "x")
        for j in range(rows.shape[1]):
            ax.plot(values, rows[:, j], lw=1, label=names[j] if rows.shape[1] <= 12 else None)
        ax.set_ylabel("||W_j.||_2 (feature weight over tasks)")
        if rows.shape[1] <= 12:
            ax.legend(fontsize=7, ncol=2)
    else:
        for _, (label, fn) in _NORMS.items():
            v = np.array([fn(W) for W in coefs])
            top = v.max()
            ax.plot(values, v / top if top > 0 else v, marker="o", ms=3, label=label)
        ax.set_ylabel("norm / its largest value")
        ax.legend(fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel(param or "alpha")
    ax.set_title(title or "Regularization path")
    return fig


def plot_cv_scores(cv, *, param: str | None = None, ax=None, title: str | None = None):
    """Mean cross-validated score (± one standard deviation over folds) against the grid.

    Parameters
    ----------
    cv : fitted :class:`~multitask.estimators.cv.MultiTaskCV` (or ``GridSearchCV``)
        Its ``cv_results_``; candidates that differ in other parameters are drawn as separate
        lines.
    param : str, optional
        The x-axis parameter; default ``cv.path_param_`` or the first one.

    Returns
    -------
    matplotlib.figure.Figure
    """
    res = cv.cv_results_
    params = res["params"]
    param = param or getattr(cv, "path_param_", None) or next(iter(params[0]))
    mean = np.asarray(res["mean_test_score"], dtype=float)
    std = np.asarray(res["std_test_score"], dtype=float)
    groups: dict[tuple, list[int]] = {}
    for i, p in enumerate(params):
        key = tuple(sorted((k, repr(v)) for k, v in p.items() if k != param))
        groups.setdefault(key, []).append(i)
    fig, ax = _figure(ax, (5.5, 3.8))
    for key, idx in groups.items():
        idx = [i for i in idx if param in params[i]]
        if not idx:
            continue
        xs = np.array([float(params[i][param]) for i in idx])
        order = np.argsort(xs)
        ii = np.asarray(idx)[order]
        label = ", ".join(f"{k}={v}" for k, v in key) or None
        ax.errorbar(xs[order], mean[ii], yerr=std[ii], marker="o", ms=3, capsize=2, label=label)
    best = getattr(cv, "best_params_", {})
    if param in best:
        ax.axvline(float(best[param]), color="k", ls="--", lw=1,
                   label=f"chosen {param} = {float(best[param]):.3g}")
    ax.set_xscale("log")
    ax.set_xlabel(param)
    ax.set_ylabel("mean test score (greater is better)")
    ax.legend(fontsize=8)
    ax.set_title(title or "Cross-validation")
    return fig


# ----------------------------------------------------------------------------- tasks
def task_similarity_from_coef(coef) -> np.ndarray:
    """Cosine similarity of the tasks' weight vectors, shape ``(n_tasks, n_tasks)``.

    ``S[s, t] = <w_s, w_t> / (||w_s|| ||w_t||)`` with ``w_t`` the row ``t`` of ``coef_``
    (0 where a task has all-zero weights).
    """
    C = _coef_of(coef)
    norms = np.linalg.norm(C, axis=1)
    safe = np.where(norms > 0, norms, 1.0)
    S = (C @ C.T) / np.outer(safe, safe)
    S[norms == 0, :] = 0.0
    S[:, norms == 0] = 0.0
    return S


def plot_task_similarity(similarity, *, task_names=None, cmap: str = "viridis", ax=None,
                         title: str | None = None):
    """Heatmap of a task-by-task matrix.

    Parameters
    ----------
    similarity : array-like (n_tasks, n_tasks) or fitted model
        A matrix (e.g. a task kernel), or a model: its learned ``task_similarity_`` when it
        has one (multi-task MKL), otherwise :func:`task_similarity_from_coef` of its
        ``coef_``.
    task_names : sequence of str, optional
        Default: the model's ``tasks_``.

    Returns
    -------
    matplotlib.figure.Figure
    """
    what = "task similarity"
    if hasattr(similarity, "task_similarity_"):
        task_names = task_names if task_names is not None else getattr(similarity, "tasks_",
                                                                       None)
        S = np.asarray(similarity.task_similarity_, dtype=float)
        what = "learned task kernel"
    elif hasattr(similarity, "coef_"):
        task_names = task_names if task_names is not None else getattr(similarity, "tasks_",
                                                                       None)
        S = task_similarity_from_coef(similarity)
        what = "cosine similarity of task weights"
    else:
        S = np.asarray(similarity, dtype=float)
    if S.ndim != 2 or S.shape[0] != S.shape[1]:
        raise ValueError(f"A task similarity must be a square matrix, got shape {S.shape}.")
    m = S.shape[0]
    fig, ax = _figure(ax, (min(2.5 + 0.2 * m, 12), min(2 + 0.2 * m, 11)))
    im = ax.imshow(S, cmap=cmap, interpolation="nearest")
    fig.colorbar(im, ax=ax)
    names = _short(task_names, m, "task ")
    _ticks(ax, "x", names)
    _ticks(ax, "y", names)
    ax.set_title(title or what)
    return fig


def plot_task_correlation(correlation, *, task_names=None, order=None, cmap: str = "RdBu_r",
                          ax=None, title: str | None = None):
    """Heatmap of a task correlation matrix, on the fixed diverging scale ``[-1, 1]``.

    Parameters
    ----------
    correlation : array-like (n_tasks, n_tasks) or fitted model
        A correlation matrix, or a model with a learned ``task_correlation_`` (multi-task
        relationship learning).
    task_names : sequence of str, optional
        Default: the model's ``tasks_``.
    order : sequence of int, optional
        Show the tasks in this order (e.g. sorted by cluster).
    cmap : str, default="RdBu_r"
        A diverging colormap (0 in its middle).

    Returns
    -------
    matplotlib.figure.Figure
    """
    if hasattr(correlation, "task_correlation_"):
        task_names = task_names if task_names is not None else getattr(correlation, "tasks_",
                                                                       None)
        C = np.asarray(correlation.task_correlation_, dtype=float)
    else:
        C = np.asarray(correlation, dtype=float)
    if C.ndim != 2 or C.shape[0] != C.shape[1]:
        raise ValueError(f"A task correlation must be a square matrix, got shape {C.shape}.")
    m = C.shape[0]
    names = _short(task_names, m, "task ")
    if order is not None:
        order = np.asarray(order, dtype=int)
        if sorted(order.tolist()) != list(range(m)):
            raise ValueError(f"order must be a permutation of range({m}), got {order!r}.")
        C = C[np.ix_(order, order)]
        names = [names[i] for i in order]
    fig, ax = _figure(ax, (min(2.5 + 0.2 * m, 12), min(2 + 0.2 * m, 11)))
    im = ax.imshow(C, cmap=cmap, vmin=-1.0, vmax=1.0, interpolation="nearest")
    fig.colorbar(im, ax=ax)
    _ticks(ax, "x", names)
    _ticks(ax, "y", names)
    ax.set_title(title or "task correlation")
    return fig


# ----------------------------------------------------------------------------- results
def plot_results_bars(rows: Sequence[dict], metric: str | None = None):
    """Bar chart of ``mean ± std`` per method (and setting) for one metric of result rows."""
    plt = _plt()
    if not rows:
        raise ValueError("no result rows to plot.")
    metric = metric or rows[0]["metric"]
    sel = [r for r in rows if r["metric"] == metric]
    labels = [f"{r['method']}\n{r['setting']}" if len({s['setting'] for s in sel}) > 1
              else str(r["method"]) for r in sel]
    fig, ax = plt.subplots(figsize=(max(4, 0.9 * len(sel)), 3.5))
    x = np.arange(len(sel))
    ax.bar(x, [r["mean"] for r in sel], yerr=[r["std"] for r in sel], capsize=3,
           color="#4c72b0")
    ax.set_xticks(x, labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(metric)
    ax.set_title(f"{sel[0]['experiment']} — {sel[0]['dataset']}")
    fig.tight_layout()
    return fig
