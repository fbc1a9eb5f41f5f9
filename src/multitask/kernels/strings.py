"""Weighted-degree string kernel as an explicit sparse feature map.

The weighted-degree (WD) kernel of degree ``D`` on aligned sequences of length ``L``
(Rätsch & Sonnenburg 2004, used for splice sites by Widmer et al. 2010) is

    k(x, x') = sum_{d=1..D} beta_d sum_{l=1..L-d+1} 1[x_{l..l+d-1} = x'_{l..l+d-1}],
    beta_d = 2 (D - d + 1) / (D (D + 1)).

Its feature map has one coordinate per (degree ``d``, position ``l``, ``d``-mer ``u``) with
value ``sqrt(beta_d)`` when ``u`` occurs at ``l``:

    index(d, l, u) = offset_d + l * 4^d + code(u),   offset_d = sum_{d' < d} (L - d' + 1) 4^{d'},

``code(u)`` the base-4 code of ``u`` over the alphabet ``ACGT``. Every sequence without
ambiguous letters has ``sum_d (L - d + 1)`` non-zeros and ``||phi(x)||^2 = sum_d beta_d (L-d+1)``,
so ``phi(x)^T phi(x') = k(x, x')`` and the linear solver trains the WD-kernel SVM. Windows
holding a letter outside the alphabet (e.g. ``N``) are skipped. With ``hash_bits = b`` the index
is hashed into ``2^b`` buckets (colliding features add up), which bounds the dimension for large
degrees.

``shift = S > 0`` gives a shift-tolerant variant: each ``d``-mer at position ``l`` also
contributes to positions ``l +- s`` (``1 <= s <= S``) with weight ``gamma_s = 1 / (2 (s + 1))``
(``gamma_0 = 1``), so matches displaced by up to ``2 S`` positions count, less the farther they
are. It is an explicit PSD kernel in the spirit of the WD kernel with shifts, not identical to
it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin

__all__ = ["WeightedDegreeFeatures", "wd_feature_dim", "weighted_degree_features", "wd_weights"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def wd_weights(degree: int) -> np.ndarray:
    """``beta_d = 2 (D - d + 1) / (D (D + 1))`` for ``d = 1..D`` (they sum to 1)."""
    D = int(degree)
    d = np.arange(1, D + 1)
    return 2.0 * (D - d + 1) / (D * (D + 1))


def wd_feature_dim(length: int, degree: int, alphabet_size: int = 4) -> int:
    """Unhashed dimension ``sum_{d=1..D} (L - d + 1) * A^d``."""
    return int(sum((length - d + 1) * alphabet_size**d for d in range(1, degree + 1)))


def _encode(sequences: Sequence[str], alphabet: str, window) -> np.ndarray:
    seqs = [str(s) for s in sequences]
    if len(seqs) == 0:
        raise ValueError("No sequences given.")
    if window is not None:
        start, stop = window
        seqs = [s[start:stop] for s in seqs]
    lengths = {len(s) for s in seqs}
    if len(lengths) != 1:
        raise ValueError(
            f"The weighted-degree kernel needs aligned sequences of one length; got lengths "
            f"{sorted(lengths)[:5]} (use window=(start, stop) to cut a common region)."
        )
    L = lengths.pop()
    table = np.full(256, 255, dtype=np.uint8)
    for k, ch in enumerate(alphabet):
        table[ord(ch.upper())] = k
        table[ord(ch.lower())] = k
    raw = np.frombuffer("".join(seqs).encode("latin-1", errors="replace"), dtype=np.uint8)
    return table[raw].reshape(len(seqs), L)


def weighted_degree_features(
    sequences: Sequence[str],
    degree: int = 8,
    *,
    window: tuple[int, int] | None = None,
    shift: int = 0,
    hash_bits: int | None = None,
    alphabet: str = "ACGT",
    normalize: bool = False,
    chunk_size: int = 2048,
) -> sp.csr_matrix:
    """Explicit weighted-degree features of aligned sequences (CSR, ``(n, n_features)``).

    ``phi(x)^T phi(x') = sum_d beta_d #{l : x and x' share the d-mer at l}`` (module docstring).

    Parameters
    ----------
    sequences : sequence of str
        Aligned sequences (one common length after ``window``).
    degree : int >= 1
        Maximal ``d``-mer length ``D``.
    window : (start, stop), optional
        Use only ``s[start:stop]`` of every sequence.
    shift : int >= 0
        Positional tolerance ``S`` of the shift-tolerant variant (0: the plain WD kernel).
    hash_bits : int, optional
        Hash the feature index into ``2^hash_bits`` buckets.
    alphabet : str
        Letters (case-insensitive); others mark windows to skip.
    normalize : bool
        Scale every row to unit Euclidean norm (``k(x, x') / sqrt(k(x, x) k(x', x'))``).
    chunk_size : int
        Rows converted at a time (bounds temporary memory).

    Returns
    -------
    scipy.sparse.csr_matrix of shape (n, n_features)
        ``n_features = sum_d (L - d + 1) |A|^d`` or ``2^hash_bits``.
    """
    D = int(degree)
    if D < 1:
        raise ValueError(f"degree must be >= 1, got {degree!r}.")
    S = int(shift)
    if S < 0:
        raise ValueError(f"shift must be >= 0, got {shift!r}.")
    codes = _encode(sequences, alphabet, window)
    n, L = codes.shape
    if L < D:
        raise ValueError(f"Sequences of length {L} are shorter than degree={D}.")
    A = len(alphabet)
    dim = wd_feature_dim(L, D, A)
    if hash_bits is None:
        if dim > 2**31 - 1:
            raise ValueError(
                f"The weighted-degree feature space has {dim:.3g} dimensions; pass hash_bits "
                "(e.g. 22) or lower the degree."
            )
        n_features = dim
    else:
        if not 1 <= int(hash_bits) <= 31:
            raise ValueError("hash_bits must be in 1..31.")
        n_features = 2 ** int(hash_bits)
    beta = wd_weights(D)
    gammas = np.array([1.0] + [1.0 / (2.0 * (s + 1)) for s in range(1, S + 1)])
    blocks = []
    for lo in range(0, n, chunk_size):
        c = codes[lo : lo + chunk_size].astype(np.int64)
        m = c.shape[0]
        valid_char = c != 255
        cur = np.where(valid_char, c, 0)
        ok = valid_char.copy()
        rows_l, cols_l, vals_l = [], [], []
        offset = 0
        for d in range(1, D + 1):
            if d > 1:
                cur = cur[:, :-1] * A + np.where(valid_char[:, d - 1 :], c[:, d - 1 :], 0)
                ok = ok[:, :-1] & valid_char[:, d - 1 :]
            npos = L - d + 1
            base = np.arange(npos, dtype=np.int64) * A**d + offset
            for s in range(-S, S + 1):
                g = gammas[abs(s)]
                # feature position l + s for the d-mer at position l
                src = np.arange(max(0, -s), min(npos, npos - s))
                if src.size == 0:
                    continue
                r, cc = np.nonzero(ok[:, src])
                pos = src[cc]
                idx = base[pos + s] + cur[r, pos]
                rows_l.append(r)
                cols_l.append(idx)
                vals_l.append(np.full(r.size, np.sqrt(beta[d - 1]) * g))
            offset += npos * A**d
        rows = np.concatenate(rows_l)
        cols = np.concatenate(cols_l)
        vals = np.concatenate(vals_l)
        if hash_bits is not None:
            h = cols.astype(np.uint64) * _GOLDEN
            cols = (h >> np.uint64(64 - int(hash_bits))).astype(np.int64)
        block = sp.csr_matrix((vals, (rows, cols)), shape=(m, n_features))
        block.sum_duplicates()
        blocks.append(block)
    X = sp.vstack(blocks, format="csr") if len(blocks) > 1 else blocks[0]
    if normalize:
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        norms[norms == 0] = 1.0
        X = sp.csr_matrix(sp.diags(1.0 / norms) @ X)
    X.sort_indices()
    return X


class WeightedDegreeFeatures(TransformerMixin, BaseEstimator):
    """scikit-learn transformer: sequences -> :func:`weighted_degree_features` (stateless).

    Parameters
    ----------
    degree, window, shift, hash_bits, alphabet, normalize : see
        :func:`weighted_degree_features`.
    """

    def __init__(
        self,
        degree: int = 8,
        window: tuple[int, int] | None = None,
        shift: int = 0,
        hash_bits: int | None = None,
        alphabet: str = "ACGT",
        normalize: bool = False,
    ):
        self.degree = degree
        self.window = window
        self.shift = shift
        self.hash_bits = hash_bits
        self.alphabet = alphabet
        self.normalize = normalize

    def fit(self, X, y=None):
        """Record the sequence length; returns ``self``."""
        X = list(X)
        self.length_ = len(X[0]) if self.window is None else self.window[1] - self.window[0]
        return self

    def transform(self, X) -> sp.csr_matrix:
        """CSR features of shape ``(n, n_features)``."""
        return weighted_degree_features(
            list(X),
            self.degree,
            window=self.window,
            shift=self.shift,
            hash_bits=self.hash_bits,
            alphabet=self.alphabet,
            normalize=self.normalize,
        )
