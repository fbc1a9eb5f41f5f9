"""Anderson's extrapolation of ADMM's fixed-point map (:class:`AndersonADMM`), the
interpreted steps and, once numba is set up in the process, their compiled twin
(:mod:`multitask.solvers._anderson_numba`). :class:`multitask.solvers.admm.QuadraticADMM`
takes it for the split models and the dirty model's norm (``anderson``)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["AndersonADMM"]


def _flat(a: np.ndarray) -> np.ndarray:
    """``a`` as a contiguous 1-d array (a view where ``a`` is C-contiguous)."""
    return np.ascontiguousarray(a).reshape(-1)


class AndersonADMM:
    """Anderson's extrapolation (type II, safeguarded) of ADMM's fixed-point map ``z = (V, U)
    -> T(z)`` at a fixed penalty parameter (Anderson, "Iterative procedures for nonlinear
    integral equations", 1965; for ADMM and Douglas-Rachford splitting: Fu, Zhang & Boyd,
    "Anderson accelerated Douglas-Rachford splitting", 2020).

    After each iteration from ``z_k`` to ``T(z_k)`` the residual ``g_k = T(z_k) - z_k`` and
    ``T(z_k)`` join a memory of at most ``memory`` pairs; the next iterate is
    ``sum_i c_i T(z_i)`` with ``c`` minimizing ``||sum_i c_i g_i||`` subject to ``sum_i c_i =
    1``: ``c = z / sum(z)``, ``(R R^T + 1e-10 tr(R R^T) I) z = 1`` with ``R`` the residuals
    as rows (as :func:`~multitask.solvers.anderson.anderson_point`). Safeguard: an
    extrapolated point whose residual is larger than that of the point it replaced is dropped,
    the iteration resumes from ``T`` of that point (kept), and the memory restarts. The memory
    also restarts when the penalty parameter changes (the map changes with it); the penalty
    parameter stays fixed from iteration ``after`` on, where the extrapolation starts.

    Parameters
    ----------
    memory : int
        Pairs kept.
    after : int
        The iteration after which the extrapolation starts.
    compiled : bool, optional
        Take the compiled steps (:mod:`multitask.solvers._anderson_numba`, the same updates)
        or the interpreted ones; None (default): the compiled ones once numba's target is
        set up in the process (:func:`multitask.compiled.is_set_up`), so that a process
        fitting only small problems does not pay numba's start-up for them.
    """

    def __init__(self, memory: int, after: int, compiled: bool | None = None):
        self.memory = int(memory)
        self.after = int(after)
        self._outputs: np.ndarray | None = None
        self._residuals: np.ndarray | None = None
        self._gram = np.zeros((self.memory, self.memory))
        self._compiled = compiled
        self._kernels: tuple[Callable, Callable] | None = None
        self.reset()

    def reset(self) -> None:
        """Forget the pairs (the map changed, or an extrapolation failed)."""
        self._count = 0  # pairs stored (at most memory), in slots 0..count-1
        self._next = 0  # the slot the next pair overwrites
        self._fallback: tuple[np.ndarray, np.ndarray] | None = None
        self._last = np.inf

    def _kernels_now(self) -> tuple[Callable, Callable] | None:
        """The compiled record and mix steps where they run now, else None."""
        if self._kernels is None:
            if self._compiled is None:
                from multitask.compiled import is_set_up

                if not is_set_up():
                    return None
            elif not self._compiled:
                return None
            from multitask.solvers._anderson_numba import anderson_mix, anderson_record

            self._kernels = (anderson_record, anderson_mix)
        return self._kernels

    def frozen(self, k: int) -> bool:
        """Whether the penalty parameter stays fixed at iteration ``k`` (extrapolating)."""
        return k > self.after

    def step(self, k: int, V_in: np.ndarray, U_in: np.ndarray, V: np.ndarray,
             U: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """The next iterate ``(V, U)`` after ``(V_in, U_in) -> (V, U)``, or None to go on
        from ``(V, U)``."""
        if k <= self.after:
            return None
        n = V.size
        if self._outputs is None or self._outputs.shape[1] != n + U.size:
            self._outputs = np.empty((self.memory, n + U.size))
            self._residuals = np.empty((self.memory, n + U.size))
        out, res = self._outputs, self._residuals
        assert res is not None
        i = self._next
        kernels = self._kernels_now()
        if kernels is not None:
            size = kernels[0](out, res, i, _flat(V), _flat(U), _flat(V_in), _flat(U_in))
        else:
            out[i, :n] = V.ravel()
            out[i, n:] = U.ravel()
            res[i, :n] = out[i, :n] - V_in.ravel()
            res[i, n:] = out[i, n:] - U_in.ravel()
            size = float(np.sqrt(res[i] @ res[i]))
        if self._fallback is not None and size > self._last:
            back = self._fallback  # the extrapolation did worse than T of its predecessor
            self.reset()
            return back
        self._last = size
        self._count = min(self._count + 1, self.memory)
        self._next = (i + 1) % self.memory
        c = self._count
        if kernels is not None:
            status, point = kernels[1](out, res, self._gram, i, c)
            if c < 2:
                self._fallback = None
            if status:
                if status == 2:
                    self.reset()
                return None
            self._fallback = (V.copy(), U.copy())
            return point[:n].reshape(V.shape), point[n:].reshape(U.shape)
        row = res[:c] @ res[i]
        self._gram[i, :c] = row
        self._gram[:c, i] = row
        if c < 2:
            self._fallback = None
            return None
        G = self._gram[:c, :c].copy()
        diagonal = G.reshape(-1)[::c + 1]  # a view: G's diagonal
        trace = float(diagonal.sum())
        if not trace > 0.0:
            return None
        diagonal += 1e-10 * trace
        try:
            z = np.linalg.solve(G, np.ones(c))
        except np.linalg.LinAlgError:
            self.reset()
            return None
        total = float(z.sum())
        if not (np.isfinite(total) and total != 0.0):
            self.reset()
            return None
        point = (z / total) @ out[:c]
        self._fallback = (V.copy(), U.copy())
        return point[:n].reshape(V.shape), point[n:].reshape(U.shape)
