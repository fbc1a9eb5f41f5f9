"""The verdict and the table of a ``multitask benchmark`` run, in words, and its CSV files.

:func:`~multitask.benchmark.verdict` compares the best multi-task model with the best
independent and the pooled baseline over the splits (the paired gain, its spread and its
noise); :func:`~multitask.benchmark.format_verdict` and
:func:`~multitask.benchmark.format_table` say the result in words;
:func:`~multitask.benchmark.write_csv` writes ``results.csv`` and ``splits.csv``. Every
public name here is importable from :mod:`multitask.benchmark`.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from multitask.benchmark_kinds import METRICS
from multitask.benchmark_result import (
    DEFAULT_CV,
    FEW_TEST_ROWS,
    INDEPENDENT,
    POOLED,
    BenchmarkResult,
    _sort_key,
    _stem,
)

__all__ = ["format_table", "format_verdict", "verdict", "write_csv"]


# ----------------------------------------------------------------------------- verdict
def _best(rows: list[dict], names: list[str], key: str, larger: bool) -> str | None:
    cands = [r for r in rows if r["model"] in names and not np.isnan(r[f"{key}_mean"])]
    if not cands:
        return None
    return min(cands, key=lambda r: _sort_key(r[f"{key}_mean"], larger))["model"]


def _noise(gains: np.ndarray, mine: np.ndarray, theirs: np.ndarray) -> dict:
    """How noisy a paired comparison over ``k`` splits is.

    ``se = std(g, ddof=1) / sqrt(k)``, the standard error of the mean paired gain;
    ``spread = max(std(m_a), std(m_b))``, the larger split-to-split standard deviation of
    the two models' metric (the table's ``±``); the gain is clear of the noise when
    ``k >= 2`` and ``|mean(g)| > max(2 se, spread)``: larger than twice its standard error
    and than how much either model's score moves from one split to the next.
    """
    k = int(gains.size)
    if k < 2:
        return {"se": float("nan"), "spread": float("nan"), "noise": float("nan"),
                "clear": False}
    se = float(np.std(gains, ddof=1) / np.sqrt(k))
    spread = float(max(np.std(mine), np.std(theirs)))
    noise = max(2 * se, spread)
    return {"se": se, "spread": spread, "noise": noise,
            "clear": bool(abs(float(gains.mean())) > noise)}


def verdict(res: BenchmarkResult) -> dict | None:
    """The best multi-task model against the best independent and the pooled baseline.

    For each baseline ``b`` run, the paired gain of the best multi-task model ``a`` (best mean
    of the first metric) over the splits ``s``: ``g_s = m_s(b) - m_s(a)`` for a metric where
    lower is better (nMSE), ``m_s(a) - m_s(b)`` where larger is better (AUC); positive when
    the multi-task model is better. Reported: the mean of ``g_s``, the relative gain
    ``mean(g) / mean(m(b))``, its standard deviation over the splits, its smallest and largest
    value, the number of splits with ``g_s > 0``, and its noise (:func:`_noise`): the
    standard error of the mean gain, the split-to-split spread of the two models' metric, and
    whether the gain is clear of both.

    Returns
    -------
    dict or None
        ``{"metric", "label", "best", "comparisons": [{"baseline", "role", "gains", "mean",
        "relative", "std", "min", "max", "n_better", "n_splits", "se", "spread", "noise",
        "clear"}], "holds": "every split" | "on average" | "no", "clear"}`` (``clear``: the
        gain over every baseline is clear of the noise); None when no multi-task model or no
        baseline ran.
    """
    key, label, larger = METRICS[res.kind][0]
    models = [r["model"] for r in res.rows]
    independent = [m for m in models if _stem(m) in INDEPENDENT]
    pooled = [m for m in models if _stem(m) in POOLED]
    multitask_models = [m for m in models if m not in independent and m not in pooled]
    best = _best(res.rows, multitask_models, key, larger)
    baselines = [(b, role) for b, role in ((_best(res.rows, independent, key, larger),
                                            "best independent baseline"),
                                           (_best(res.rows, pooled, key, larger),
                                            "pooled baseline")) if b is not None]
    if best is None or not baselines:
        return None

    def per_split(model: str) -> dict[int, float]:
        return {r["split"]: r[key] for r in res.split_rows if r["model"] == model}

    mine = per_split(best)
    comparisons = []
    for b, role in baselines:
        theirs = per_split(b)
        common = [s for s in sorted(set(mine) & set(theirs))
                  if not (np.isnan(mine[s]) or np.isnan(theirs[s]))]
        if not common:
            continue
        a_vals = np.array([mine[s] for s in common], dtype=float)
        b_vals = np.array([theirs[s] for s in common], dtype=float)
        gains = (a_vals - b_vals) if larger else (b_vals - a_vals)
        base = float(b_vals.mean())
        comparisons.append({"baseline": b, "role": role, "gains": gains.tolist(),
                            "mean": float(gains.mean()),
                            "relative": float(gains.mean()) / abs(base) if base else float(
                                "nan"),
                            "std": float(gains.std()),
                            "min": float(gains.min()), "max": float(gains.max()),
                            "n_better": int(np.sum(gains > 0)), "n_splits": int(gains.size),
                            **_noise(gains, a_vals, b_vals)})
    if not comparisons:
        return None
    if all(c["n_better"] == c["n_splits"] for c in comparisons):
        holds = "every split"
    elif all(c["mean"] > 0 for c in comparisons):
        holds = "on average"
    else:
        holds = "no"
    return {"metric": key, "label": label, "larger_is_better": larger, "best": best,
            "comparisons": comparisons, "holds": holds,
            "clear": all(c["clear"] for c in comparisons)}


def _percent(c: dict) -> str:
    rel = c.get("relative", float("nan"))
    return "n/a" if rel is None or np.isnan(rel) else f"{100 * abs(rel):.1f}%"


def format_verdict(res: BenchmarkResult) -> str:
    """The verdict in words: one line starting ``verdict:``, then one line per baseline and
    the noise of the comparison.

    The first line says whether the best multi-task model is better than the baselines on
    every split, on average or not, by how much relative to each baseline, and whether that
    gain is within the noise (see :func:`~multitask.benchmark.verdict`): a gain within the
    noise is never reported as multi-task learning helping.
    """
    if not res.complete:
        return (f"verdict: none yet (a partial run: {len(res.split_rows)} of "
                f"{res.n_jobs_total} jobs done; --resume completes it)")
    v = res.verdict if res.verdict is not None else verdict(res)
    if v is None:
        return ("verdict: none (it needs a multi-task model and an independent or pooled "
                "baseline among the models run)")
    label, best = v["label"], v["best"]
    better = "higher" if v["larger_is_better"] else "lower"
    comps = v["comparisons"]
    against = " and ".join(f"the {c['role']} ({c['baseline']})" for c in comps)
    by = " and ".join(_percent(c) for c in comps)
    n = comps[0]["n_splits"]
    noisy = [c for c in comps if not c.get("clear", True)]
    if v["holds"] == "every split":
        every = f"on every split ({n} of {n})" if n > 1 else "on its one split"
        if n == 1:
            head = (f"multi-task learning may help: {best} has a {better} {label} than "
                    f"{against} {every}, by {by}")
        elif noisy:
            head = (f"multi-task learning may help, but within the noise: {best} has a "
                    f"{better} {label} than {against} {every}, by {by}")
        else:
            head = (f"multi-task learning helps: {best} has a {better} {label} than {against} "
                    f"{every}, by {by}")
    elif v["holds"] == "on average":
        head = (f"multi-task learning helps on average but not on every split: {best} has a "
                f"{better} {label} than {against} on average, by {by}")
    else:
        worse = [c["baseline"] for c in comps if c["mean"] <= 0]
        head = (f"no gain from multi-task learning: the best multi-task model, {best}, is not "
                f"better than {' or '.join(worse)} on average")
    if n == 1:
        head += " (one split: no spread, the noise is not measured; --splits N for more)"
    elif noisy and v["holds"] != "no":
        within = " and ".join(c["baseline"] for c in noisy)
        head += (f"; the gain over {within} is within the split-to-split noise (see below)")
    lines = [f"verdict: {head}"]
    for c in comps:
        k = c["n_splits"]
        if k > 1:
            spread = (f"paired over {k} splits: std {c['std']:.4f}, standard error "
                      f"{c['se']:.4f}, from {c['min']:+.4f} to {c['max']:+.4f}; better on "
                      f"{c['n_better']} of {k}")
            noise = (f"{'clear of' if c['clear'] else 'within'} the noise (|gain| "
                     f"{'>' if c['clear'] else '<='} {c['noise']:.4f}: twice its standard "
                     f"error, {2 * c['se']:.4f}, or the two models' split-to-split std of "
                     f"{label}, {c['spread']:.4f}, whichever is larger)")
        else:
            spread, noise = "one split", "noise not measured"
        rel = c.get("relative", float("nan"))
        rel_text = "" if rel is None or np.isnan(rel) else f", {100 * rel:+.1f}% of its {label}"
        lines.append(f"  {best} vs {c['baseline']} ({c['role']}): {label} gain "
                     f"{c['mean']:+.4f} on average{rel_text} ({spread}); {noise}")
    pair = (f"{label} of {best} - {label} of the baseline" if v["larger_is_better"]
            else f"{label} of the baseline - {label} of {best}")
    lines.append(f"  (gain = {pair}, per split; positive: {best} is better)")
    if res.shared:
        lines.append("  (a shared design: each split draws the rows once for all tasks, so "
                     "every task's test part changes with the split at once: a noisier "
                     "comparison than per-task splits of the same data; --splits N for more)")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- output
def _cv_words(res: BenchmarkResult, cv: int) -> str:
    """The cross-validation rule(s) the jobs applied, in words."""
    from multitask.model_selection import SMALL_TASK_ROWS

    where = "on the rows" if res.shared else f"within {res.task_word}"
    per = "rows" if res.shared else "rows per task"
    if not res.cv_rules:
        return f"{cv}-fold CV {where}"
    parts = []
    for rule in res.cv_rules:
        rows = rule.get("train_rows")
        if rule["selection"] == "loo":
            text = (f"leave-one-out CV {where} ({rule['folds']} folds; the default rule for "
                    f"small tasks: a median of {rows:g} training {per}, <= {SMALL_TASK_ROWS})"
                    if rows is not None else f"leave-one-out CV {where} ({rule['folds']} folds)")
        else:
            text = f"{rule['folds']}-fold CV {where}"
        if len(res.cv_rules) > 1:
            text += f" on {rule['jobs']} jobs"
        parts.append(text)
    return " and ".join(parts)


def _left_out_note(res: BenchmarkResult) -> list[str]:
    """Notes on the tasks left out of the per-task metric, and on aMSE with few test rows."""
    lines = []
    m = res.n_tasks
    of = f" of {m}" if m else ""
    if res.kind == "regression":
        if res.left_out:
            per = ", ".join(f"{k}{of if i == 0 else ''} tasks on split {s}"
                            for i, (s, k) in enumerate(res.left_out.items()))
            lines.append(f"(aMSE leaves out the tasks whose test targets are all equal "
                         f"(Var(y_t) = 0, the term is undefined): {per}; splits numbered as "
                         "in splits.csv)")
        n = res.test_rows
        if n is not None and n <= FEW_TEST_ROWS:
            rows = "test rows" if res.shared else "test rows per task (median)"
            rel = (f"about ±{100 * np.sqrt(2 / (n - 1)):.0f}% for normal targets"
                   if n > 1 else "undefined")
            lines.append(f"(aMSE is unstable here: each task's Var(y_t) is estimated from "
                         f"{n:g} {rows}, {rel}; compare the models by nMSE)")
    elif res.kind == "classification":
        total = sum(int(r.get("auc_tasks_left_out", 0) or 0) for r in res.split_rows)
        if total:
            lines.append(f"(AUC: {total} (task, model, split) test parts with one class only "
                         "were left out of the mean)")
    return lines


def format_table(res: BenchmarkResult, cv: int | None = None) -> str:
    """The result table as text, best model first (lowest nMSE, or highest AUC).

    The header says the splits and the cross-validation rule each job applied (K-fold, or
    leave-one-out for small tasks, see :class:`~multitask.MultiTaskCV`); notes under the table
    name the skipped models, the tasks left out of aMSE (test targets all equal) or AUC (one
    class), and say when aMSE is unstable (at most
    :data:`~multitask.benchmark.FEW_TEST_ROWS` test rows per task).
    """
    cv = res.cv if cv is None and res.cv is not None else (DEFAULT_CV if cv is None else cv)
    metrics = METRICS[res.kind]
    header = ("model", *(lab for _, lab, _ in metrics), "fit s", "chosen")
    body = [(r["model"], *(f"{r[f'{k}_mean']:.4f} ± {r[f'{k}_std']:.4f}" for k, _, _ in metrics),
             f"{r['fit_seconds']:.1f}", r["params"]) for r in res.rows]
    widths = [max([len(h), *(len(b[i]) for b in body)]) for i, h in enumerate(header)]
    lines = [f"{res.name}: {res.setting}, hyper-parameters by {_cv_words(res, cv)} "
             "inside each training part"]
    loss = _loss_words(res)
    if loss:
        lines.append(loss)
    lines.append(_legend(res))
    if res.defaults_note:
        lines.append(f"({res.defaults_note})")
    if not res.complete:
        lines.append(f"partial run: {len(res.split_rows)} of {res.n_jobs_total} (model, "
                     "split) jobs done (n_splits in results.csv); --resume completes it")
    lines += ["",
              "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip(),
              "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths, strict=True)).rstrip()
              for b in body]
    for name, why in res.skipped.items():
        lines.append(f"(skipped {name}: {why})")
    lines += _left_out_note(res)
    lines += [f"(note: {n})" for n in res.notes]
    return "\n".join(lines)


def _loss_words(res: BenchmarkResult) -> str:
    """The loss every model was fitted with, in words (empty for the squared loss and the
    binary classifiers' own losses)."""
    if res.kind == "count":
        how = (f", the rate y / {res.exposure_name} with sample_weight={res.exposure_name} "
               f"(predicted counts: rate x {res.exposure_name})"
               if res.exposure_name else "")
        return f"every model fits the Poisson loss (loss='poisson', log link){how}"
    if res.kind == "multiclass":
        k = len(res.classes) if res.classes else None
        return ("every model fits the multinomial logistic loss (loss='logistic'"
                + (f", {k} classes" if k else "") + ")")
    if res.kind == "quantile":
        return (f"every model fits the pinball loss at q = {res.options['quantile']:g} "
                f"(loss='quantile', quantile={res.options['quantile']:g})")
    if res.kind == "robust":
        return (f"every model fits Huber's loss with epsilon = {res.options['epsilon']:g} and "
                "a scale per task (loss='huber')")
    return ""


def _legend(res: BenchmarkResult) -> str:
    """What the metrics of the table are."""
    tail = "; mean ± std over splits; fit s = CV + refit per split"
    if res.kind == "classification":
        positive = f" (positive class: {res.classes[1]!r})" if res.classes else ""
        return (f"AUC = mean over {res.task_word} of the test ROC AUC of each; accuracy = "
                f"share of test (row, task) pairs classified right{positive}{tail}")
    if res.kind == "count":
        return ("deviance = mean Poisson deviance 2 (y log(y / mu) - y + mu) of the test counts "
                "y, mu = predicted count; D^2 = 1 - deviance / deviance of the test part's "
                f"constant rate; pooled over the test rows{tail}")
    if res.kind == "multiclass":
        return ("log-loss = mean over test rows of -log p(true class); accuracy = share of "
                f"test rows classified right, pooled; macro accuracy = mean over "
                f"{res.task_word} of each one's accuracy{tail}")
    if res.kind == "quantile":
        q = res.options["quantile"]
        return (f"pinball loss = mean pinball loss at q = {q:g} of the test rows, pooled; "
                f"coverage = share of test targets <= prediction (ideal: {q:g}){tail}")
    if res.kind == "robust":
        scales = sorted({float(r["huber_scale"]) for r in res.split_rows
                         if r.get("huber_scale") is not None})
        shown = (f"{scales[0]:.4g}" if len(scales) == 1 else
                 f"{scales[0]:.4g}..{scales[-1]:.4g}") if scales else "per split"
        return (f"Huber loss = mean over test rows of h(r / s), h Huber's function with "
                f"epsilon = {res.options['epsilon']:g}, s = 1.4826 MAD of the training targets "
                f"around their task's median (s = {shown}); MAE = mean |r|; nMSE = test MSE / "
                f"Var(test y); pooled{tail}")
    return (f"nMSE = test MSE / Var(test y), pooled; aMSE = mean over {res.task_word} of "
            f"MSE_t / Var(y_t){tail}")


def write_csv(rows: Sequence[dict], path: str | os.PathLike, columns: Sequence[str]) -> None:
    """Write ``rows`` to ``path`` atomically (nothing is left behind when it fails)."""
    from multitask.persistence import atomic_write

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)

    def write(tmp: str) -> None:
        with open(tmp, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(columns), extrasaction="ignore")
            writer.writeheader()
            for r in rows:
                writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v)
                                 for k, v in r.items()})

    atomic_write(path, write)
