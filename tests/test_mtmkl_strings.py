"""Weighted-degree string features: the explicit map reproduces the kernel."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from multitask.kernels.strings import (
    WeightedDegreeFeatures,
    wd_feature_dim,
    wd_weights,
    weighted_degree_features,
)


def _wd_kernel(a: str, b: str, D: int) -> float:
    """Brute force: sum_d beta_d #{l : a[l:l+d] == b[l:l+d]}, windows with N skipped."""
    beta = wd_weights(D)
    s = 0.0
    for d in range(1, D + 1):
        for pos in range(len(a) - d + 1):
            u, v = a[pos : pos + d], b[pos : pos + d]
            if u == v and "N" not in u:
                s += beta[d - 1]
    return s


@pytest.fixture
def seqs():
    rng = np.random.default_rng(0)
    out = ["".join(rng.choice(list("ACGT"), 15)) for _ in range(7)]
    out[1] = out[0][:9] + ("A" if out[0][9] != "A" else "C") + out[0][10:]  # one mismatch
    out[3] = out[3][:6] + "N" + out[3][7:]
    out[4] = out[4].lower()
    return out


@pytest.mark.parametrize("D", [1, 3, 5])
def test_gram_equals_wd_kernel(seqs, D):
    X = weighted_degree_features(seqs, D)
    assert sp.isspmatrix_csr(X) or sp.issparse(X)
    assert X.shape == (7, wd_feature_dim(15, D))
    K = np.array([[_wd_kernel(a.upper(), b.upper(), D) for b in seqs] for a in seqs])
    np.testing.assert_allclose((X @ X.T).toarray(), K, atol=1e-12)
    np.testing.assert_allclose(wd_weights(D).sum(), 1.0)


def test_hashing_window_normalize(seqs):
    X = weighted_degree_features(seqs, 4)
    Xh = weighted_degree_features(seqs, 4, hash_bits=22)
    assert Xh.shape[1] == 2**22
    np.testing.assert_allclose((Xh @ Xh.T).toarray(), (X @ X.T).toarray(), atol=1e-9)
    Xw = weighted_degree_features(seqs, 3, window=(2, 12))
    K = np.array([[_wd_kernel(a.upper()[2:12], b.upper()[2:12], 3) for b in seqs] for a in seqs])
    np.testing.assert_allclose((Xw @ Xw.T).toarray(), K, atol=1e-12)
    Xn = weighted_degree_features(seqs, 3, normalize=True)
    np.testing.assert_allclose(sp.linalg.norm(Xn, axis=1), 1.0)


def test_shift_tolerant_variant_is_psd_and_rewards_shifted_matches():
    a = "ACGTTGCAACGTAC"
    b = a[1:] + "A"  # a shifted by one position
    c = "TTTTTTTTTTTTTT"
    X0 = weighted_degree_features([a, b, c], 3)
    X1 = weighted_degree_features([a, b, c], 3, shift=2)
    K0, K1 = (X0 @ X0.T).toarray(), (X1 @ X1.T).toarray()
    assert np.linalg.eigvalsh(K1).min() > -1e-10
    # normalized similarity of the shifted pair rises with the shift tolerance
    cos = lambda K: K[0, 1] / np.sqrt(K[0, 0] * K[1, 1])  # noqa: E731
    assert cos(K1) > cos(K0) + 0.2


def test_errors_and_transformer(seqs):
    with pytest.raises(ValueError, match="one length"):
        weighted_degree_features(["ACGT", "ACG"], 2)
    with pytest.raises(ValueError, match="hash_bits"):
        weighted_degree_features(["ACGT" * 50], 20)
    tr = WeightedDegreeFeatures(degree=3).fit(seqs)
    np.testing.assert_allclose(
        tr.transform(seqs).toarray(), weighted_degree_features(seqs, 3).toarray()
    )
