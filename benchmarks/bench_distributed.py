"""Distributed trace-norm fits over blocks of tasks generated on the workers.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/bench_distributed.py [--tasks 1e4 1e5 1e6]

Data: ``m`` tasks of ``n = 50`` rows and ``d = 50`` features, ``x_ij`` uniform with unit
variance, ``y_t = X_t B c_t + 0.5 e_t`` (``B`` of rank 5), every number drawn from a
counter-based hash of (seed, task, row, column), so that a block of tasks is generated where it
is used and the same numbers come out wherever they are generated. Two ways to hold a block:

* ``stored``: ``TaskBlocks.from_function`` generates each block's ``(X, y, task)`` on its worker
  once; the estimator's own squared loss (with its Gram matrices) is built there;
* ``regenerated``: ``TaskBlocks.from_datafits`` gives each block a datafit that regenerates
  its rows inside every evaluation (:class:`SeededSquared`): nothing is stored but the
  iterates. 10^6 tasks of 50 x 50 are 20 GB in float64 (10 GB in float32): more than this
  machine lends a benchmark (about 8 GiB), so the 10^6 run regenerates; each evaluation then
  costs a pass of generation, which is what the timing measures.

Each size runs on a fresh ``LocalCluster`` of 2 worker processes (one thread each, BLAS on one
thread). Printed: wall time of the fit, iterations, time per iteration, the bytes each
iteration sends (the reductions up, the plan down, pickled), the peak resident memory of each
worker process (``ru_maxrss``) and of the client, and, where the data fit in the client
(``--peer-max``, default 10^5), the in-memory fit of the same data in the same run: the ratio
of times and the relative difference of the objectives. The client never holds the data of a
distributed fit. ``fit_intercept=False`` (the regenerated datafit does not centre; the stored
runs use the same model).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time

import numpy as np
from numba import njit

N_ROWS, N_FEATURES, RANK, NOISE, SEED = 50, 50, 5, 0.5, 12345
_SQRT3 = np.sqrt(3.0)


# --------------------------------------------------------------------------- the generator
@njit(cache=True, inline="always")
def _uniform(key):
    """A number uniform on [-sqrt(3), sqrt(3)) (unit variance) from a 64-bit key (splitmix64)."""
    z = (key + np.uint64(0x9E3779B97F4A7C15)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    z = ((z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & np.uint64(
        0xFFFFFFFFFFFFFFFF)
    z = ((z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & np.uint64(
        0xFFFFFFFFFFFFFFFF)
    z = z ^ (z >> np.uint64(31))
    u = np.float64(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)
    return (2.0 * u - 1.0) * 1.7320508075688772


@njit(cache=True)
def _task_truth(seed, t, B, out):
    """``w*_t = B c_t`` with ``c_t`` from the hash."""
    r = B.shape[1]
    d = B.shape[0]
    for j in range(d):
        out[j] = 0.0
    for a in range(r):
        c = _uniform(np.uint64(seed) * np.uint64(1000003) + np.uint64(t) * np.uint64(64)
                     + np.uint64(a) + np.uint64(7))
        for j in range(d):
            out[j] += B[j, a] * c


@njit(cache=True)
def _row(seed, t, i, n, d, x):
    base = (np.uint64(seed) << np.uint64(40)) ^ ((np.uint64(t) * np.uint64(n) + np.uint64(i))
                                                 * np.uint64(d + 1))
    for j in range(d):
        x[j] = _uniform(base + np.uint64(j))
    return _uniform(base + np.uint64(d))  # the row's noise


@njit(cache=True)
def _generate(seed, t0, m, n, d, B, noise):
    """The block's data: ``X`` of shape ``(m n, d)``, ``y`` ``(m n,)`` (tasks t0..t0+m-1)."""
    X = np.empty((m * n, d))
    y = np.empty(m * n)
    w = np.empty(d)
    for t in range(m):
        _task_truth(seed, t0 + t, B, w)
        for i in range(n):
            k = t * n + i
            e = _row(seed, t0 + t, i, n, d, X[k])
            s = 0.0
            for j in range(d):
                s += X[k, j] * w[j]
            y[k] = s + noise * e
    return X, y


@njit(cache=True)
def _pass(seed, t0, m, n, d, B, noise, W, G, want_grad, V):
    """Regenerate the block and return ``(sum_t (1 / 2n) ||X_t w_t - y_t||^2``, the same at
    ``V``); with ``want_grad``, also ``G[:, t] = X_t^T (X_t w_t - y_t) / n``. ``V`` of shape
    ``(0, 0)``: no second value (0)."""
    x = np.empty(d)
    w = np.empty(d)
    total = 0.0
    total_v = 0.0
    with_v = V.shape[0] == d
    for t in range(m):
        _task_truth(seed, t0 + t, B, w)
        if want_grad:
            for j in range(d):
                G[j, t] = 0.0
        loss = 0.0
        loss_v = 0.0
        for i in range(n):
            e = _row(seed, t0 + t, i, n, d, x)
            s_true = 0.0
            s = 0.0
            s_v = 0.0
            for j in range(d):
                s_true += x[j] * w[j]
                s += x[j] * W[j, t]
            if with_v:
                for j in range(d):
                    s_v += x[j] * V[j, t]
            target = s_true + noise * e
            r = s - target
            loss += r * r
            if with_v:
                loss_v += (s_v - target) ** 2
            if want_grad:
                for j in range(d):
                    G[j, t] += r * x[j]
        total += 0.5 * loss / n
        total_v += 0.5 * loss_v / n
        if want_grad:
            for j in range(d):
                G[j, t] /= n
    return total, total_v


@njit(cache=True)
def _rows(seed, t0, m, n, d):
    """The designs of tasks t0..t0+m-1, shape ``(m, n, d)``."""
    X = np.empty((m, n, d))
    for t in range(m):
        for i in range(n):
            _row(seed, t0 + t, i, n, d, X[t, i])
    return X


def truth_basis(d: int = N_FEATURES, r: int = RANK, seed: int = SEED) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((d, r)) / np.sqrt(r)


def generated_block(k: int, tasks_per_block: int, n: int = N_ROWS, d: int = N_FEATURES,
                    seed: int = SEED):
    """Block ``k`` as ``(X, y, task)`` (long format), generated where it is called."""
    t0 = k * tasks_per_block
    X, y = _generate(seed, t0, tasks_per_block, n, d, truth_basis(d, RANK, seed), NOISE)
    return X, y, np.repeat(np.arange(t0, t0 + tasks_per_block), n)


class _Sizes:
    def __init__(self, tasks, n_features, n_rows):
        self.tasks, self.n_features, self.n_rows = tasks, n_features, n_rows

    @property
    def n_tasks(self):
        return len(self.tasks)


class SeededSquared:
    """The squared loss ``sum_t (1 / 2n) ||X_t w_t - y_t||^2`` (no intercept) of a block of
    generated tasks, regenerating the rows inside every evaluation: the
    :class:`~multitask.losses.Datafit` protocol that the distributed solver uses, with nothing
    stored but the task ids."""

    name = "squared"
    capabilities = frozenset({"gradient"})
    has_intercept_variable = False
    fit_intercept = False

    def __init__(self, k: int, tasks_per_block: int, n: int = N_ROWS, d: int = N_FEATURES,
                 seed: int = SEED):
        self.t0, self.m = k * tasks_per_block, tasks_per_block
        self.n, self.d, self.seed = n, d, seed
        self.B = truth_basis(d, RANK, seed)
        self.data = _Sizes(np.arange(self.t0, self.t0 + self.m), d, self.m * n)
        self._lip: float | None = None

    def init_intercept(self):
        return None

    def _run(self, W, G, V):
        W = np.ascontiguousarray(W, dtype=np.float64)
        return _pass(self.seed, self.t0, self.m, self.n, self.d, self.B, NOISE, W,
                     np.empty((0, 0)) if G is None else G, G is not None,
                     np.empty((0, 0)) if V is None else np.ascontiguousarray(V, dtype=float))

    def value(self, W, b=None) -> float:
        return float(self._run(W, None, None)[0])

    def value_and_grad(self, W, b=None):
        G = np.empty((self.d, self.m))
        return float(self._run(W, G, None)[0]), G, None

    def value_pair_and_grad(self, V, c, W, b):
        """The loss at ``V`` and its value and gradient at ``W``: one regeneration."""
        G = np.empty((self.d, self.m))
        f, f_v = self._run(W, G, V)
        return float(f_v), float(f), G, None

    def grad_at_zero(self):
        return self.value_and_grad(np.zeros((self.d, self.m)))[1]

    def lipschitz(self) -> float:
        """``max_t lambda_max(X_t^T X_t) / n`` (certified, by chunks of regenerated Gram
        matrices)."""
        from multitask.losses import max_scaled_eigenvalue

        if self._lip is None:
            lip, chunk = 0.0, 2048
            for s in range(0, self.m, chunk):
                c = min(chunk, self.m - s)
                X = _rows(self.seed, self.t0 + s, c, self.n, self.d)
                G = np.matmul(X.transpose(0, 2, 1), X)
                lip = max(lip, max_scaled_eigenvalue(G, np.full(c, 1.0 / self.n)))
            self._lip = lip
        return self._lip

    def measure_constants(self):
        return self.lipschitz(), 1.0

    def intercept(self, W, b=None):
        return np.zeros(W.shape[1])


def seeded_datafit(k: int, tasks_per_block: int) -> SeededSquared:
    return SeededSquared(k, tasks_per_block)


# --------------------------------------------------------------------------- measurements
def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _worker_peak(dask_worker=None) -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _warm(dask_worker=None) -> bool:
    """Compile the numba kernels in the worker (outside the timings)."""
    seeded_datafit(0, 2).value_and_grad(np.zeros((N_FEATURES, 2)))
    generated_block(0, 2)
    return True


def run(m: int, mode: str, blocks_per_worker: int, tol: float, alpha_ratio: float,
        peer: bool) -> dict:
    import distributed
    from threadpoolctl import threadpool_limits

    from multitask import TraceNormRegressor
    from multitask.solvers.distributed import DistributedProximalGradient, TaskBlocks

    n_workers = 2
    n_blocks = n_workers * blocks_per_worker
    while m % n_blocks:
        n_blocks += 1
    per = m // n_blocks
    out: dict = {"m": m, "mode": mode, "n_blocks": n_blocks}
    with distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None, memory_limit=0) as cluster, \
            distributed.Client(cluster) as client:
        client.run(_warm)
        t = time.perf_counter()
        if mode == "stored":
            blocks = TaskBlocks.from_function(generated_block, n_blocks, args=(per,),
                                              client=client)
        else:
            blocks = TaskBlocks.from_datafits(seeded_datafit, n_blocks, args=(per,),
                                              client=client)
        out["blocks_s"] = time.perf_counter() - t
        solver = DistributedProximalGradient(client=client, tol=tol, max_iter=2000)
        est = TraceNormRegressor(fit_intercept=False, solver=solver)
        t = time.perf_counter()
        top = est.alpha_max(blocks, None)
        out["alpha_max_s"] = time.perf_counter() - t
        est.set_params(alpha=alpha_ratio * top)
        t = time.perf_counter()
        est.fit(blocks, None)
        out["fit_s"] = time.perf_counter() - t
        info = est.solver_info_
        out.update(n_iter=est.n_iter_, optimality=est.optimality_, converged=est.converged_,
                   objective=float(est.solver_result_.final_objective),
                   rank=int(np.linalg.matrix_rank(est.coef_, 1e-8 * np.abs(est.coef_).max())),
                   up_bytes=info["bytes_up_per_iteration"],
                   down_bytes=info["bytes_down_per_iteration"],
                   worker_peak_mb=sorted(client.run(_worker_peak).values()))
        if peer and mode == "stored":
            del blocks
            data = [generated_block(k, per) for k in range(n_blocks)]
            X = np.concatenate([a[0] for a in data])
            y = np.concatenate([a[1] for a in data])
            task = np.concatenate([a[2] for a in data])
            del data
            mem = TraceNormRegressor(alpha=est.alpha, fit_intercept=False, tol=tol, max_iter=2000)
            with threadpool_limits(1):
                t = time.perf_counter()
                mem.fit(X, y, task=task)
                out["peer_fit_s"] = time.perf_counter() - t
            out["peer_n_iter"] = mem.n_iter_
            out["peer_objective"] = float(mem.solver_result_.final_objective)
            out["coef_diff"] = float(np.abs(mem.coef_ - est.coef_).max())
    out["client_peak_mb"] = _peak_rss_mb()
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=float, nargs="+", default=[1e4, 1e5, 1e6])
    ap.add_argument("--modes", nargs="+", default=["stored", "regenerated"])
    ap.add_argument("--stored-max", type=float, default=1e5,
                    help="largest m whose blocks are stored (2 GB at 10^5)")
    ap.add_argument("--peer-max", type=float, default=1e5)
    ap.add_argument("--blocks-per-worker", type=int, default=5)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--alpha-ratio", type=float, default=0.1)
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:  # one configuration in this process (the parent reads the printed dict)
        m, mode = int(args.tasks[0]), args.modes[0]
        print(repr(run(m, mode, args.blocks_per_worker, args.tol, args.alpha_ratio,
                       m <= args.peer_max)))
        return
    import subprocess

    print(f"load average at start: {os.getloadavg()}; cores: {os.cpu_count()}")
    rows = []
    for m in [int(v) for v in args.tasks]:
        for mode in args.modes:
            if mode == "stored" and m > args.stored_max:
                continue
            cmd = [sys.executable, __file__, "--one", "--tasks", str(m), "--modes", mode,
                   "--blocks-per-worker", str(args.blocks_per_worker), "--tol", str(args.tol),
                   "--alpha-ratio", str(args.alpha_ratio), "--peer-max", str(args.peer_max)]
            env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                       MKL_NUM_THREADS="1")
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
            line = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
            if proc.returncode or not line:
                print(f"m={m} {mode}: failed\n{proc.stderr[-3000:]}")
                continue
            r = eval(line[-1], {"nan": float("nan"), "inf": float("inf")})  # noqa: S307
            rows.append(r)
            per_it = r["fit_s"] / max(r["n_iter"], 1)
            msg = (f"m={m:>8d} {mode:>11s} blocks={r['n_blocks']:3d}  fit {r['fit_s']:8.1f} s  "
                   f"{r['n_iter']:4d} it  {per_it:7.3f} s/it  alpha_max {r['alpha_max_s']:6.1f}"
                   f" s  optimality {r['optimality']:.1e}  rank {r['rank']}  up "
                   f"{r['up_bytes'] / 1e3:.1f} kB/it  down {r['down_bytes'] / 1e3:.1f} kB/it  "
                   f"worker peak {', '.join(f'{v:.0f}' for v in r['worker_peak_mb'])} MB  "
                   f"client peak {r['client_peak_mb']:.0f} MB")
            if "peer_fit_s" in r:
                rel = abs(r["objective"] - r["peer_objective"]) / abs(r["peer_objective"])
                msg += (f"\n{'':22s}in-memory peer: fit {r['peer_fit_s']:.1f} s "
                        f"({r['peer_n_iter']} it), distributed/in-memory time "
                        f"{r['fit_s'] / r['peer_fit_s']:.2f}, objective rel. diff {rel:.1e}"
                        f", max |coef diff| {r['coef_diff']:.1e}")
            print(msg, flush=True)
    same = {}
    for r in rows:
        same.setdefault(r["m"], {})[r["mode"]] = r
    for m, d in same.items():
        if len(d) == 2:
            a, b = d["stored"], d["regenerated"]
            print(f"m={m}: regenerated/stored time {b['fit_s'] / a['fit_s']:.2f}, objective rel. "
                  f"diff {abs(a['objective'] - b['objective']) / abs(a['objective']):.1e}")
    data_gb = {m: m * N_ROWS * (N_FEATURES + 1) * 8 / 1e9 for m in same}
    print("data in float64 (GB): " + ", ".join(f"m={m}: {v:.2f}" for m, v in data_gb.items()))
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
