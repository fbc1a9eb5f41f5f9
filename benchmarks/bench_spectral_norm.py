"""The spectral norms behind the Lipschitz constants of the smooth losses: full SVD or Lanczos.

    OMP_NUM_THREADS=1 python benchmarks/bench_spectral_norm.py

1. ``||X||_2^2`` of dense ``n x d`` designs by LAPACK's full SVD (``np.linalg.norm(X, 2)``) and
   by ``scipy.sparse.linalg.svds`` (Lanczos, ``k = 1``): CPU time of each and their relative
   difference, around :data:`multitask.data.SPECTRAL_LANCZOS_ENTRIES` (from which
   :meth:`multitask.data.MultiTaskData.task_spectral_norms_sq` takes Lanczos).
2. A shared, implicitly centred dense design (``20,000 x 1,000``, 20 tasks, as the logistic
   loss with intercepts sees it): ``task_spectral_norms_sq(intercept=True)`` against what it
   computed before, one full SVD of the centred design with a column of ones per task.
3. ``L21Classifier(alpha=0.01).fit`` (logistic loss, intercepts) on a ``20,000 x 1,000``
   shared design with 20 labels: the fit's CPU time, the part of it spent in the spectral
   norms, and what the norms cost before (``2 m`` full SVDs: with and without the column of
   ones, for every task).
"""

from __future__ import annotations

import time

import numpy as np
from bench_peers import cpu_time as cpu
from scipy.sparse.linalg import svds

from multitask.data import SPECTRAL_LANCZOS_ENTRIES, as_multitask_data


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"SPECTRAL_LANCZOS_ENTRIES = {SPECTRAL_LANCZOS_ENTRIES:.0e}")
    for n, d in [(20000, 21), (20000, 50), (5000, 200), (2000, 500), (1000, 1000),
                 (20000, 1000)]:
        X = rng.standard_normal((n, d)) + 3.0
        t_svd, a = cpu(lambda X=X: np.linalg.norm(X, 2) ** 2)
        t_lan, b = cpu(lambda X=X: svds(X, k=1, return_singular_vectors=False,
                                        random_state=0)[0] ** 2)
        print(f"{n:6d} x {d:5d} ({n * d:.1e} entries): full SVD {1e3 * t_svd:8.1f} ms, "
              f"Lanczos {1e3 * t_lan:7.1f} ms, ratio {t_svd / t_lan:5.2f}, "
              f"relative difference {abs(a - b) / a:.1e}")
    n, d, m = 20000, 1000, 20
    X = rng.standard_normal((n, d)) + 3.0
    Y = rng.standard_normal((n, m))
    data, _ = as_multitask_data(X, Y)
    data_c, _, _ = data.centered()
    t_new, new = cpu(lambda: data_c.task_spectral_norms_sq(intercept=True))
    Xc = np.hstack([X - X.mean(axis=0), np.ones((n, 1))])
    t_one, old = cpu(lambda: np.linalg.norm(Xc, 2) ** 2)
    print(f"\nshared centred design {n} x {d}, {m} tasks: task_spectral_norms_sq "
          f"{t_new:.2f} s; before, {m} full SVDs: {m * t_one:.1f} s ({m} x {t_one:.2f} s, "
          f"one timed); relative difference {abs(new[0] - old) / old:.1e}")
    fit_part(X, m, t_one)


def fit_part(X, m, t_svd) -> None:
    import warnings

    import multitask.data as mdata
    from multitask import L21Classifier

    rng = np.random.default_rng(1)
    n, d = X.shape
    W = rng.standard_normal((d, 3)) @ rng.standard_normal((3, m)) / np.sqrt(d)
    Y = ((X - X.mean(axis=0)) @ W + 0.5 * rng.standard_normal((n, m)) > 0).astype(int)
    spent = [0.0]
    original = mdata.MultiTaskData.task_spectral_norms_sq

    def counted(self, intercept=False):
        t0 = time.process_time()
        try:
            return original(self, intercept)
        finally:
            spent[0] += time.process_time() - t0

    mdata.MultiTaskData.task_spectral_norms_sq = counted
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t_fit, est = cpu(lambda: L21Classifier(alpha=0.01).fit(X, Y))
    finally:
        mdata.MultiTaskData.task_spectral_norms_sq = original
    print(f"L21Classifier fit, {n} x {d}, {m} labels: {t_fit:.1f} s ({est.n_iter_} iterations),"
          f" of which spectral norms {spent[0]:.1f} s; before, they cost about "
          f"{2 * m * t_svd:.0f} s ({2 * m} full SVDs)")


if __name__ == "__main__":
    main()
