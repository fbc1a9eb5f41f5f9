"""Feature rows as blocks: the zero test of each row of a row-separable penalty.

A penalty ``r(W) = sum_j r_j(W_j.)`` separable over the feature rows ``W_j.`` of ``W`` (shape
``(n_features, n_tasks)``) has, for a smooth loss ``f``, the optimality condition row by row:
``-grad_j f(W*) in dr_j(W*_j.)``. A row is zero at the optimum exactly when the gradient row
lies in the set ``dr_j(0)`` (a ridge or a task-side quadratic adds nothing to the gradient of
a zero row, so the test reads the loss part alone). Working sets rank the rows by how far
their gradient lies outside that set; gap-safe screening (Ndiaye, Fercoq, Gramfort & Salmon,
"Gap safe screening rules for sparsity enforcing penalties") discards a row when every
gradient row within a known distance of the one at the dual point stays strictly inside.
Both need one number per row, the **violation** ``v_j(g)``:

* ``v_j(g) <= 0`` exactly when ``g`` lies in ``dr_j(0)`` (``W_j. = 0`` is optimal for that
  gradient row), ``v_j(g) < 0`` only in its interior;
* ``v_j`` is 1-Lipschitz in the Euclidean norm of ``g``, so ``v_j(g) + rho < 0`` proves
  ``v_j(g') < 0`` for every ``||g' - g||_2 <= rho``.

The violations of the row families (:data:`~multitask.penalties.base.ROW_PROX_FAMILIES`,
strengths ``(a_j, b_j, c_j)`` of :meth:`~multitask.penalties.base.Penalty.row_prox_params`):

* ``"elastic_net"`` (``a ||w||_1 + b ||w||_2 + (c / 2) ||w||^2``: l1, l2,1, the sparse group
  lasso, the weighted l1 of the capped-l1 stages; ``c`` and the datafit's ridge play no
  part): ``v = ||soft(g, a)||_2 - b`` when ``b > 0``, ``v = ||g||_inf - a`` when ``b = 0``
  (soft-thresholding is non-expansive);
* ``"fused_sparse_group_lasso"`` (``a ||w||_1 + b ||w||_2 + c sum_t |w_t - w_{t+1}|``): the
  elastic-net violation of ``prox_tv(g, c)``, the prox of the total variation (the prox of
  ``a l1 + c TV`` is ``soft(prox_tv(., c), a)``, and a prox is non-expansive);
* ``"dirty_inf"``, ``"dirty_2"`` (``min_{p + q = w} a ||p||_s + b ||q||_1``, whose
  ``dr(0)`` is ``{||u||_{s*} <= a} cap {||u||_inf <= b}``): ``v = max((||g||_{s*} - a) / k,
  ||g||_inf - b)`` with ``k = sqrt(n_tasks)`` for ``s* = 1`` (``||.||_1`` is
  ``sqrt(m)``-Lipschitz) and ``k = 1`` for ``s* = 2``;
* the l1,inf norm ``alpha sum_j max_t |W_jt|`` (its own :meth:`row_blocks`): ``v = (||g||_1 -
  alpha) / sqrt(n_tasks)``.

A row with no strength (``a_j = b_j = 0``: a capped row of a capped-l1 stage) is free:
``v_j = ||g||`` vanishes only at ``g = 0`` and the row is never discarded.

A penalty offers its rows as blocks (:func:`row_blocks`) when it declares ``"row_prox"`` with
one of these families, or defines a ``row_blocks(n_features)`` method of its own; and a
working set solves it on some rows (:func:`restrict_rows`) when its row strengths are the same
for every row (the penalty object itself then serves any subset of rows) or it defines
``restrict_rows(rows)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from multitask.penalties.base import Penalty

__all__ = ["RowBlocks", "restrict_rows", "row_blocks"]

_KINDS = ("elastic_net", "fused_sparse_group_lasso", "dirty_inf", "dirty_2", "l1inf")


@dataclass(frozen=True)
class RowBlocks:
    """The zero test of every feature row of a row-separable penalty (module docstring).

    Attributes
    ----------
    kind : str
        ``"elastic_net"``, ``"fused_sparse_group_lasso"``, ``"dirty_inf"``, ``"dirty_2"`` or
        ``"l1inf"``.
    a, b, c : ndarray of shape (n_features,)
        The row strengths of the family (``b`` and ``c`` unused where the family has none).
    uniform : bool
        Whether every row has the same strengths (the penalty then serves any subset of rows).
    """

    kind: str
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    uniform: bool

    @property
    def n_features(self) -> int:
        return int(self.a.shape[0])

    def free(self) -> np.ndarray:
        """Boolean mask of the rows the penalty leaves free (no strength at all)."""
        if self.kind in ("dirty_inf", "dirty_2"):
            return (self.a == 0) | (self.b == 0)
        if self.kind == "fused_sparse_group_lasso":
            return (self.a == 0) & (self.b == 0) & (self.c == 0)
        if self.kind == "l1inf":
            return self.a == 0
        return (self.a == 0) & (self.b == 0)

    def violation(self, G: np.ndarray, scale: float = 1.0) -> np.ndarray:
        """``v_j(scale * G_j.)`` for every row, shape ``(d,)``.

        Parameters
        ----------
        G : ndarray of shape (n_features, n_tasks)
            Gradient rows (of the loss alone: ``X^T theta``).
        scale : float
            Multiplies ``G`` (the scale of a dual point ``s theta``), without forming it.
        """
        return self.violations(G, (scale,))[0]

    def violations(self, G: np.ndarray, scales) -> list[np.ndarray]:
        """:meth:`violation` at several scales of ``G``, reading ``G`` once where the test is
        positively homogeneous (every family but the sparse group lassos with both ``a`` and
        ``b``, whose soft-thresholding is read again per scale)."""
        d, m = G.shape
        scales = [float(s) for s in scales]
        if d == 0:
            return [np.zeros(0) for _ in scales]
        a, b, c = self.a, self.b, self.c
        if self.kind == "fused_sparse_group_lasso":
            from multitask.penalties.temporal import prox_tv1d

            outs = []
            for s in scales:
                out = np.empty(d)
                for cv in np.unique(c):  # the TV prox takes one strength per call
                    sel = np.flatnonzero(c == cv)
                    U = s * G[sel]
                    U = prox_tv1d(U, float(cv)) if cv > 0 else U
                    out[sel] = _elastic_violation(U, 1.0, a[sel], b[sel])
                outs.append(out)
            return outs
        if self.kind == "elastic_net":
            if np.any((a > 0) & (b > 0)):  # sparse group lasso rows: not homogeneous
                return [_elastic_violation(G, s, a, b) for s in scales]
            two = _row_norms(G) if np.any(b > 0) else None
            inf = np.max(np.abs(G), axis=1) if np.any(b == 0) and m else np.zeros(d)
            outs = []
            for s in scales:
                v = s * inf - a
                if two is not None:
                    v = np.where(b > 0, s * two - b, v)
                outs.append(v)
            return outs
        inf = np.max(np.abs(G), axis=1) if m else np.zeros(d)
        k = np.sqrt(max(m, 1))
        if self.kind == "l1inf":
            l1 = np.abs(G).sum(axis=1)
            return [(s * l1 - a) / k for s in scales]
        if self.kind == "dirty_inf":
            group, gk = np.abs(G).sum(axis=1), k
        else:
            group, gk = _row_norms(G), 1.0
        zero = (a == 0) | (b == 0)  # a norm of zero: the row is free
        outs = []
        for s in scales:
            v = np.maximum((s * group - a) / gk, s * inf - b)
            if np.any(zero):
                v[zero] = s * _row_norms(G[zero])
            outs.append(v)
        return outs

    def safe_from(self, v: np.ndarray, rho: np.ndarray) -> np.ndarray:
        """Boolean mask of the rows proven zero at the optimum from their violations ``v``
        at the dual point's gradient: ``v_j + rho_j < 0``, ``rho_j`` a bound on the distance
        of the optimal gradient row to it (with relative margins of ``1e-9`` for rounding)."""
        return v + np.asarray(rho, dtype=np.float64) * (1.0 + 1e-9) < -1e-9 * (self.a + self.b)

    def safe(self, G: np.ndarray, rho: np.ndarray, scale: float = 1.0) -> np.ndarray:
        """:meth:`safe_from` the violations of ``scale * G``."""
        return self.safe_from(self.violation(G, scale), rho)


def _row_norms(G: np.ndarray) -> np.ndarray:
    return np.sqrt(np.einsum("jt,jt->j", G, G))


def _elastic_violation(G: np.ndarray, s: float, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``||soft(s G_j, a_j)||_2 - b_j`` where ``b_j > 0``, ``s ||G_j||_inf - a_j`` else."""
    d = G.shape[0]
    out = np.empty(d)
    group = b > 0
    if np.all(a == 0):  # l2,1 (and free rows): row norms
        out[:] = s * _row_norms(G) - b
        if not np.all(group):
            out[~group] = s * np.max(np.abs(G[~group]), axis=1) if G.shape[1] else 0.0
        return out
    if not np.any(group):  # l1: largest entries
        return (s * np.max(np.abs(G), axis=1) if G.shape[1] else np.zeros(d)) - a
    idx = np.flatnonzero(group)
    soft = np.maximum(s * np.abs(G[idx]) - a[idx, None], 0.0)
    out[idx] = _row_norms(soft) - b[idx]
    rest = np.flatnonzero(~group)
    if rest.size:
        out[rest] = (s * np.max(np.abs(G[rest]), axis=1) if G.shape[1] else 0.0) - a[rest]
    return out


def row_blocks(penalty: Penalty, n_features: int) -> RowBlocks | None:
    """The rows of ``penalty`` as blocks (:class:`RowBlocks`), or ``None`` when it is not
    separable over the feature rows in a way this module knows (module docstring)."""
    own = getattr(penalty, "row_blocks", None)
    if callable(own):
        return own(n_features)
    if "row_prox" not in penalty.capabilities or not penalty.is_convex or penalty.parts:
        return None
    family = getattr(penalty, "row_prox_family", "elastic_net")
    if family not in _KINDS:
        return None
    params = penalty.row_prox_params()
    arrays = []
    for value in params:
        arr = np.asarray(value, dtype=np.float64)
        if arr.ndim == 0:
            arr = np.full(n_features, float(arr))
        elif arr.shape != (n_features,):
            return None
        arrays.append(arr)
    uniform = all(np.ndim(v) == 0 for v in params)
    return RowBlocks(family, arrays[0], arrays[1], arrays[2], uniform=uniform)


def restrict_rows(penalty: Penalty, rows: np.ndarray) -> Penalty | None:
    """The penalty on the feature rows ``rows`` alone (for a working set): the penalty's own
    ``restrict_rows(rows)`` when it has one; the penalty itself when its row strengths are
    the same for every row (it then serves any number of rows); else ``None``."""
    own = getattr(penalty, "restrict_rows", None)
    if callable(own):
        return own(np.asarray(rows, dtype=np.int64))
    blocks = row_blocks(penalty, 1)
    if blocks is not None and blocks.uniform:
        return penalty
    return None
