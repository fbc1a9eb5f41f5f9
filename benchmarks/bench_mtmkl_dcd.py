"""Benchmark: the multi-task kernel classifier (dual coordinate descent) vs scikit-learn's
LinearSVC (LIBLINEAR).

Both solve the same problem on C. elegans splice sites with weighted-degree features: the
union preset (``B = 1 1^T``, one shared weight vector) equals one linear SVM on the pooled
rows, ``min (1/2)||w||^2 + C sum_i max(0, 1 - y_i x_i^T w)`` (no intercept; hinge loss by
default; the estimator's ``alpha`` is ``1 / C``). Same ``C``, same loss and tolerance; the
stopping rules differ: LIBLINEAR stops on its projected-gradient spread
(``max PG - min PG <= tol``), :class:`multitask.MultiTaskKernelClassifier` on the relative
duality gap ``(P - D) / P <= tol``, a stricter rule (the primal objective each reaches is
printed). The rows can be split into ``--n-tasks`` random pseudo-tasks: the union preset then
runs through the multi-task code path and must give the same model. Each fit is repeated;
medians are compared and the ratio printed. Times are CPU seconds (``time.process_time``; both
solvers are single-threaded), far less disturbed by other processes on a shared machine than
wall-clock seconds.

Run::

    python benchmarks/bench_mtmkl_dcd.py                       # FASTA, 20,000 sequences
    python benchmarks/bench_mtmkl_dcd.py --source arff --repeats 7
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

from multitask import MultiTaskKernelClassifier
from multitask.datasets import load_splice
from multitask.kernels import weighted_degree_features

# the ARFF layout: 40 nt, the AG dinucleotide, 40 nt; in the 398-nt FASTA the AG is at 197
FASTA_WINDOW = (157, 239)


def primal(X, y, w, C, loss):
    """``(1/2)||w||^2 + C sum loss(y x^T w)``."""
    m = np.maximum(1.0 - y * (X @ w), 0.0)
    return 0.5 * float(w @ w) + C * float(np.sum(m * m if loss == "squared_hinge" else m))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", choices=("arff", "fasta"), default="fasta")
    ap.add_argument("--n-max", type=int, default=20000, help="sequences (fasta)")
    ap.add_argument("--degree", type=int, default=8, help="weighted-degree kernel degree")
    ap.add_argument("--C", type=float, default=1.0)
    ap.add_argument("--loss", choices=("hinge", "squared_hinge"), default="hinge")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--n-tasks", type=int, default=1, help="random pseudo-tasks (union preset)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--data-dir", default=None)
    args = ap.parse_args(argv)

    bunch = load_splice(
        args.data_dir, source=args.source, n_max=args.n_max if args.source == "fasta" else None
    )
    y = np.asarray(bunch.y, dtype=np.float64)
    window = FASTA_WINDOW if args.source == "fasta" else None
    X = weighted_degree_features(bunch.sequences, args.degree, window=window, normalize=True)
    rng = np.random.default_rng(0)
    task = rng.integers(0, args.n_tasks, len(y))
    T = args.n_tasks
    print(
        f"splice ({args.source}): n={X.shape[0]}, d={X.shape[1]}, nnz={X.nnz}, "
        f"WD degree {args.degree}, C={args.C:g}, loss={args.loss}, tol={args.tol:g}, "
        f"{T} task(s), union preset, {args.repeats} repeats"
    )

    def estimator(r):
        return MultiTaskKernelClassifier(alpha=1.0 / args.C, loss=args.loss,
                                         task_similarity="union", fit_intercept=False,
                                         tol=args.tol, random_state=r)

    # warm-up (numba compilation, page faults)
    few = rng.permutation(len(y))[:400]
    estimator(0).fit(X[few], y[few], task=task[few])

    t_est, t_ref, p_est, p_ref, ep_ref = [], [], [], [], []
    for r in range(args.repeats):
        ref = LinearSVC(C=args.C, loss=args.loss, fit_intercept=False, tol=args.tol,
                        max_iter=1000, dual=True, random_state=r)
        t0 = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            ref.fit(X, y)
        t_ref.append(time.process_time() - t0)
        est = estimator(r)
        t0 = time.process_time()
        est.fit(X, y, task=task)
        t_est.append(time.process_time() - t0)
        p_est.append(primal(X, y, est.coef_[0], args.C, args.loss))
        p_ref.append(primal(X, y, ref.coef_[0], args.C, args.loss))
        ep_ref.append(int(ref.n_iter_))
        if T > 1:
            assert np.allclose(est.coef_, est.coef_[:1]), "union preset: task weights differ"

    me, mr = np.median(t_est), np.median(t_ref)
    print(
        f"LinearSVC (liblinear)        median {mr:8.3f} CPU s  epochs {np.median(ep_ref):6.0f}  "
        f"primal {np.median(p_ref):.8g}"
    )
    print(
        f"MultiTaskKernelClassifier    median {me:8.3f} CPU s  (relative duality gap <= tol)  "
        f"primal {np.median(p_est):.8g}"
    )
    print(f"ratio estimator / LinearSVC = {me / mr:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
