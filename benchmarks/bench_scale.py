"""One machine, many tasks: the trace-norm model from 10^3 to 10^5 tasks of 50 x 50.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/bench_scale.py [--sizes 1e3 1e4 1e5]

Data: ``m`` tasks of ``n = 50`` rows and ``d = 50`` standard normal features, ``y_t = X_t B c_t +
e_t`` with ``B`` of rank 5, as per-task lists (the MALSAR layout). The model:
``TraceNormRegressor(alpha=0.1 * alpha_max)`` with its defaults (FISTA, ``tol=1e-4``, per-task
intercepts). Every configuration runs in a fresh process (``--repeats`` times, one BLAS thread,
CPU time), so that its peak resident memory (``ru_maxrss``) is its own. Printed per size, as
medians over the repeats:

* the fit's CPU time, iterations, CPU time per iteration and task, and the log-log slope of the
  fit time in ``m`` (least squares over the sizes, and between the first and the last size);
* the peak memory of the process above its footprint before the data were made, over the
  bytes of the data (``X`` and ``y``); the fit runs before anything else in its process;
* ``alpha_max`` (what ``est.alpha_max(X, y)`` computes after the input conversion that every
  call makes: the datafit, one gradient at zero, the spectral norm) over one gradient of the
  loss computed from the data (``value_and_grad`` of the squared loss without Gram
  matrices: one fused pass of ``X w`` and ``X^T r`` on dense per-task designs), and over one
  gradient of the datafit as the fit
  uses it (with its caches); the whole ``est.alpha_max(X, y)`` too, with the conversion;
* the peers in the same run: the same fit with the trace norm's prox through LAPACK's thin SVD
  of ``W`` (the route before this benchmark, ``--svd-max`` sizes), and the Lipschitz constant
  from the eigenvalues of every task's Gram matrix against the certified bound now used.

A second table measures the trace norm's prox alone (``spectral_shrink``, ``d = 50``, rank 5)
through the thin SVD, the Gram eigendecomposition and the ``R`` factor, for widths from ``m =
d / 2`` to ``2000 d``: where the switch of ``multitask.penalties.prox`` pays.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

import numpy as np

N_ROWS, N_FEATURES, RANK = 50, 50, 5


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def problem(m: int, seed: int = 0, n: int = N_ROWS, d: int = N_FEATURES):
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((d, RANK)) / np.sqrt(RANK)
    Xs, ys = [], []
    for _ in range(m):
        X = rng.standard_normal((n, d))
        Xs.append(X)
        ys.append(X @ (B @ rng.standard_normal(RANK)) + rng.standard_normal(n))
    return Xs, ys


def cpu_median(fn, repeats: int = 1) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t = time.process_time()
        out = fn()
        times.append(time.process_time() - t)
    return float(np.median(times)), out


def one(m: int, seed: int, variant: str) -> dict:
    """One configuration in this process: the fit first (for the peak memory), then the
    timings of alpha_max and of one gradient."""
    from threadpoolctl import threadpool_limits

    from multitask import MultiTaskRegressor, TraceNormRegressor
    from multitask.data import as_multitask_data
    from multitask.losses import Squared, max_scaled_eigenvalue
    from multitask.penalties import TraceNorm
    from multitask.penalties.prox import spectral_shrink

    class SVDTraceNorm(TraceNorm):
        """The trace norm with its prox through LAPACK's thin SVD of W (the former route)."""

        def prox(self, V, step):
            t = step * self.alpha
            out, s = spectral_shrink(V, lambda v: np.maximum(v - t, 0.0), method="svd")
            self._last = (out.copy(), float(s.sum()))
            return out

    base = rss_mb()
    Xs, ys = problem(m, seed)
    data_bytes = sum(X.nbytes for X in Xs) + sum(y.nbytes for y in ys)
    out: dict = {"m": m, "variant": variant, "data_mb": data_bytes / 2**20}
    with threadpool_limits(1):
        alpha = 0.1 * TraceNormRegressor().alpha_max(Xs, ys)
        if variant == "svd":
            est = MultiTaskRegressor(penalty=SVDTraceNorm(alpha))
        else:
            est = TraceNormRegressor(alpha=alpha)
        out["fit_s"], _ = cpu_median(lambda: est.fit(Xs, ys))
        out["peak_over_data"] = (peak_mb() - base) / (data_bytes / 2**20)
        out["n_iter"] = est.n_iter_
        out["objective"] = float(est.solver_result_.final_objective)
        out["optimality"] = est.optimality_
        if variant == "svd":
            return out
        # alpha_max, with and without the input conversion every call makes
        out["alpha_max_total_s"], _ = cpu_median(lambda: TraceNormRegressor().alpha_max(Xs, ys))
        out["convert_s"], conv = cpu_median(lambda: as_multitask_data(Xs, ys))
        data = conv[0]  # type: ignore[index]

        def core():
            df = Squared(data)
            return TraceNorm(1.0).alpha_max(df.grad_at_zero())

        out["alpha_max_s"], _ = cpu_median(core, 3)
        W = np.random.default_rng(1).standard_normal((N_FEATURES, m))
        direct = Squared(data, use_gram=False)
        out["grad_data_s"], _ = cpu_median(lambda: direct.value_and_grad(W), 3)
        fitted = Squared(data)
        fitted.value_and_grad(W)  # its caches, as in the fit
        out["grad_fit_s"], _ = cpu_median(lambda: fitted.value_and_grad(W), 3)
        out["use_gram"] = fitted.use_gram
        if fitted.use_gram:  # the Lipschitz constant: every eigenvalue vs the certified bound
            G = fitted._grams()[0]
            n = data.task_sizes.astype(float)
            out["lip_eig_s"], ev = cpu_median(
                lambda: float(np.max(np.linalg.eigvalsh(G)[:, -1] / n)))
            out["lip_cert_s"], lb = cpu_median(lambda: max_scaled_eigenvalue(G, 1.0 / n))
            out["lip_rel_diff"] = abs(lb - ev) / ev  # type: ignore[operator]
    return out


def svt_table(widths, repeats: int = 5) -> None:
    from threadpoolctl import threadpool_limits

    from multitask.penalties.prox import WIDE_RATIO, spectral_shrink

    d = N_FEATURES
    rng = np.random.default_rng(0)
    print(f"\nsvt alone (d = {d}, rank 5 + noise, threshold 5% of the largest singular value; "
          "CPU ms, medians of up to 50 runs; 'auto' switches to the Gram route at m >= "
          f"{WIDE_RATIO:g} d)")
    print(f"{'m':>8s} {'svd':>9s} {'gram':>9s} {'qr':>9s} {'svd/gram':>9s} {'svd/qr':>7s}  "
          "max rel. diff")
    with threadpool_limits(1):
        for m in widths:
            V = (rng.standard_normal((d, RANK)) @ rng.standard_normal((RANK, m))
                 + 0.1 * rng.standard_normal((d, m)))
            t = 0.05 * float(np.linalg.norm(V, 2))

            def shrink(s, t=t):
                return np.maximum(s - t, 0.0)

            res, outs = {}, {}
            k = max(repeats, min(50, int(2e6 // (m * d))))
            for method in ("svd", "gram", "qr"):
                res[method], outs[method] = cpu_median(
                    lambda mt=method, V=V, shrink=shrink: spectral_shrink(V, shrink, method=mt),
                    k)
            ref = outs["svd"][0]  # type: ignore[index]
            diff = max(float(np.abs(outs[mt][0] - ref).max()) for mt in ("gram", "qr"))  # type: ignore[index]
            print(f"{m:8d} {1e3 * res['svd']:9.3f} {1e3 * res['gram']:9.3f} "
                  f"{1e3 * res['qr']:9.3f} {res['svd'] / res['gram']:9.2f} "
                  f"{res['svd'] / res['qr']:7.2f}  {diff / float(np.abs(ref).max()):.1e}")


def loglog_slope(ms, ts) -> float:
    return float(np.polyfit(np.log(ms), np.log(ts), 1)[0])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[1e3, 3e3, 1e4, 3e4, 1e5])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--svd-max", type=float, default=1e4,
                    help="largest m fitted with the thin-SVD prox as a peer")
    ap.add_argument("--no-svt-table", action="store_true")
    ap.add_argument("--one", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(repr(one(int(args.one[0]), int(args.one[1]), args.one[2])))
        return
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    print(f"load average at start: {os.getloadavg()}; cores: {os.cpu_count()}")
    results: dict = {}
    for m in [int(v) for v in args.sizes]:
        variants = ["auto"] + (["svd"] if m <= args.svd_max else [])
        for variant in variants:
            for r in range(args.repeats):
                for _attempt in range(3):  # a failed start (e.g. an edit under way) is retried
                    proc = subprocess.run([sys.executable, __file__, "--one", str(m), str(r),
                                           variant], capture_output=True, text=True, env=env)
                    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
                    if not proc.returncode and line:
                        break
                    time.sleep(30)
                if proc.returncode or not line:
                    print(f"m={m} {variant} repeat {r}: failed\n{proc.stderr[-3000:]}")
                    continue
                results.setdefault((m, variant), []).append(
                    eval(line[-1], {"nan": float("nan"), "inf": float("inf")}))  # noqa: S307
        rows = results.get((m, "auto"), [])
        if not rows:
            continue

        def med(key, rows=rows):
            return float(np.median([r[key] for r in rows]))

        per_task = 1e6 * med("fit_s") / med("n_iter") / m
        am_data = med("alpha_max_s") / med("grad_data_s")
        am_fit = med("alpha_max_s") / med("grad_fit_s")
        gram = "Gram" if rows[0]["use_gram"] else "no Gram"
        total = med("alpha_max_total_s")
        msg = (f"m={m:>7d}: fit {med('fit_s'):7.2f} s CPU (input conversion "
               f"{med('convert_s'):.2f} s), {med('n_iter'):.0f} it, "
               f"{per_task:6.2f} us/it/task, peak {med('peak_over_data'):.2f}x data "
               f"({med('data_mb'):.0f} MB), alpha_max {am_data:.2f}x a gradient from the data "
               f"({am_fit:.2f}x the fit's gradient, {gram}), whole est.alpha_max {total:.2f} s "
               f"= {total / med('fit_s'):.2f}x the fit")
        if "lip_eig_s" in rows[0]:
            ratio = med("lip_eig_s") / med("lip_cert_s")
            msg += (f"; Lipschitz: eigenvalues/certified {ratio:.2f}"
                    f" (rel. diff {max(r['lip_rel_diff'] for r in rows):.0e})")
        svd = results.get((m, "svd"), [])
        if svd:
            t_svd = float(np.median([r["fit_s"] for r in svd]))
            obj = max(abs(a["objective"] - b["objective"]) / abs(b["objective"])
                      for a, b in zip(svd, rows, strict=False))
            msg += (f"; thin-SVD prox peer {t_svd:.2f} s, ratio {t_svd / med('fit_s'):.2f} "
                    f"(objective rel. diff {obj:.0e})")
        print(msg, flush=True)
    ms = sorted(m for m, v in results if v == "auto")
    if len(ms) >= 2:
        t = [float(np.median([r["fit_s"] for r in results[(m, "auto")]])) for m in ms]
        tpi = [float(np.median([r["fit_s"] / r["n_iter"] for r in results[(m, "auto")]]))
               for m in ms]
        tc = [float(np.median([r["fit_s"] - r["convert_s"] for r in results[(m, "auto")]]))
              for m in ms]
        print(f"\nlog-log slope of the fit's CPU time in m: {loglog_slope(ms, t):.3f} "
              "(least squares), "
              f"{np.log(t[-1] / t[0]) / np.log(ms[-1] / ms[0]):.3f} (from m={ms[0]} to "
              f"m={ms[-1]}); of the time per iteration: {loglog_slope(ms, tpi):.3f}; of the fit "
              f"without the input conversion (multitask.data): {loglog_slope(ms, tc):.3f} "
              f"(least squares), {np.log(tc[-1] / tc[0]) / np.log(ms[-1] / ms[0]):.3f} (ends)")
        peak = max(float(np.median([r["peak_over_data"] for r in results[(m, "auto")]]))
                   for m in ms)
        print(f"largest peak memory over the data: {peak:.2f}x")
    if not args.no_svt_table:
        svt_table([25, 50, 100, 200, 500, 1000, 10000, 100000])
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
