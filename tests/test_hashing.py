"""RandomKNNHash and KernelLSH against literal by-definition oracles."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from structkernels import KernelLSH, Normalized, RandomKNNHash, kernel
from structkernels.neighbors.hashing import auto_n_bits, codes_from_bits


def _data(n=60, d=3, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


def _literal_random_knn_bits(k, X, A, subsets):
    """Bit j: the nearest neighbour of x among H_j1 ∪ H_j2 lies in H_j1 (ties to H_j2)."""
    bits = np.zeros((len(X), len(subsets)), dtype=bool)
    for i, x in enumerate(X):
        for j, (h1, h2) in enumerate(subsets):
            best, in_h1 = -math.inf, False
            for a in h2:  # H_j2 first: a value met again in H_j1 does not beat it
                v = k.value(x, A[a])
                if v > best:
                    best, in_h1 = v, False
            for a in h1:
                v = k.value(x, A[a])
                if v > best:
                    best, in_h1 = v, True
            bits[i, j] = in_h1
    return bits


def test_random_knn_bits_match_literal_definition():
    X = _data(40)
    k = kernel("rbf", bandwidth=1.5)
    h = RandomKNNHash(k, n_bits=6, random_state=3).fit(X)
    codes, bits = h.hash(X, return_bits=True)
    A = X[h.reference_indices_]
    expected = _literal_random_knn_bits(k, X, A, h.subsets_)
    np.testing.assert_array_equal(bits, expected)
    powers = [sum(int(b) << j for j, b in enumerate(row)) for row in expected]
    assert codes.tolist() == powers


def test_random_knn_sizes_counts_and_subsets():
    X = _data(100)
    h = RandomKNNHash("rbf", random_state=0).fit(X)
    assert len(h.reference_indices_) == 10  # ceil(sqrt(100))
    assert len(set(h.reference_indices_.tolist())) == 10
    assert h.n_bits_ == auto_n_bits(100) == 4
    assert h.subsets_.shape == (4, 2, 2)  # s = M // 4
    for h1, h2 in h.subsets_:
        assert not set(h1) & set(h2)  # disjoint
    assert h.n_evaluations_ == 0
    h.hash(X)
    assert h.n_evaluations_ == 100 * 10
    h.hash(X[:7])
    assert h.n_evaluations_ == 100 * 10 + 7 * 10


def test_random_knn_half_subsets_bucket_by_nearest_reference():
    # with s = M / 2 both subsets cover A: the code depends only on the nearest reference
    X = _data(80, d=2, seed=5)
    h = RandomKNNHash("rbf", n_bits=12, n_reference=8, subset_size=4, random_state=1).fit(X)
    codes = h.hash(X)
    S = kernel("rbf").gram(X, X[h.reference_indices_])
    nearest = S.argmax(axis=1)
    for r in np.unique(nearest):
        assert len(set(codes[nearest == r].tolist())) == 1


def test_random_knn_deterministic_and_seed_dependent():
    X = _data(64)
    a = RandomKNNHash("rbf", n_bits=8, random_state=7).fit(X).hash(X)
    b = RandomKNNHash("rbf", n_bits=8, random_state=7).fit(X).hash(X)
    c = RandomKNNHash("rbf", n_bits=8, random_state=8).fit(X).hash(X)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def _literal_klsh_bits(X, h):
    """Kulis & Grauman's hyperplane built explicitly in the linear kernel's feature space.

    r_j = Σ^{-1/2} (mean of S_j - mean of the sample), with Σ the sample covariance;
    bit j = <x - mean, r_j> > 0.
    """
    A = X[h.reference_indices_]
    mu = A.mean(axis=0)
    C = (A - mu).T @ (A - mu) / len(A)
    vals, vecs = np.linalg.eigh(C)
    keep = vals > 1e-10 * vals.max()
    inv_sqrt = (vecs[:, keep] / np.sqrt(vals[keep])) @ vecs[:, keep].T
    R = np.stack([inv_sqrt @ (A[s].mean(axis=0) - mu) for s in h.subsets_], axis=1)
    return (X - mu) @ R > 0


def test_klsh_matches_explicit_feature_space_hyperplanes():
    X = _data(120, d=4, seed=2)
    h = KernelLSH("linear", n_bits=10, n_sample=30, n_per_bit=6, random_state=4).fit(X)
    _, bits = h.hash(X, return_bits=True)
    expected = _literal_klsh_bits(X, h)
    # points lying on a hyperplane (|margin| ~ round-off) may flip; there are none here
    np.testing.assert_array_equal(bits, expected)
    assert h.rank_ == 4  # the linear kernel's feature space has 4 dimensions


def test_klsh_counts_and_defaults():
    X = _data(100)
    h = KernelLSH("rbf", random_state=0).fit(X)
    p = len(h.reference_indices_)
    assert p == 10 and h.subsets_.shape == (4, 2)  # t = p // 4
    assert h.n_evaluations_ == p * (p + 1) // 2
    h.hash(X)
    assert h.n_evaluations_ == p * (p + 1) // 2 + 100 * p


def test_klsh_bits_are_balanced_for_a_smooth_kernel():
    # random hyperplanes through the sample mean split Gaussian data about in half
    X = _data(2000, d=5, seed=9)
    h = KernelLSH("rbf", n_bits=16, n_sample=60, n_per_bit=15, random_state=0,
                  kernel_params={"bandwidth": 4.0}).fit(X)
    _, bits = h.hash(X, return_bits=True)
    assert np.all((bits.mean(axis=0) > 0.1) & (bits.mean(axis=0) < 0.9))


def test_normalized_kernel_hashes_like_its_normalised_gram():
    X = np.abs(_data(50)) + 0.1
    k = Normalized(kernel("linear"))
    h = RandomKNNHash(k, n_bits=5, random_state=0).fit(X)
    # the normalised linear kernel is the cosine kernel
    h2 = RandomKNNHash("cosine", n_bits=5, random_state=0).fit(X)
    np.testing.assert_array_equal(h.hash(X), h2.hash(X))


@settings(max_examples=25, deadline=None)
@given(
    # distinct coordinates: with two references at exactly the same kernel value (two
    # equal rows, say), BLAS decides the bit by its round-off, which depends on the shape
    # of the block (scikit-learn's rbf_kernel computes |x|^2 + |y|^2 - 2 x.y, and OpenBLAS
    # sums a block's products in an order of its own: last-bit differences)
    X=arrays(np.float64, (12, 2), elements=st.floats(-5, 5, allow_nan=False), unique=True),
    seed=st.integers(0, 1000),
    family=st.sampled_from(["random-knn", "klsh"]),
)
def test_codes_do_not_depend_on_the_batch(X, seed, family):
    """A structure's code is a function of the structure alone (hash one or all), away from
    exact ties between references."""
    cls = RandomKNNHash if family == "random-knn" else KernelLSH
    h = cls("rbf", n_bits=5, random_state=seed).fit(X)
    all_codes = h.hash(X)
    one_by_one = [int(h.hash(X[i : i + 1])[0]) for i in range(len(X))]
    assert all_codes.tolist() == one_by_one
    assert all(0 <= c < 32 for c in one_by_one)


def test_codes_from_bits_literal():
    bits = np.array([[1, 0, 1], [0, 0, 0], [1, 1, 1]], dtype=bool)
    assert codes_from_bits(bits).tolist() == [5, 0, 7]


def test_errors_name_the_problem():
    X = _data(20)
    with pytest.raises(NotFittedError, match="fit"):
        RandomKNNHash("rbf").hash(X)
    with pytest.raises(NotFittedError):
        KernelLSH("rbf").hash(X)
    with pytest.raises(ValueError, match="subset_size"):
        RandomKNNHash("rbf", n_reference=4, subset_size=3).fit(X)
    with pytest.raises(ValueError, match="n_reference"):
        RandomKNNHash("rbf", n_reference=50).fit(X)
    with pytest.raises(ValueError, match="n_bits"):
        RandomKNNHash("rbf", n_bits=0).fit(X)
    with pytest.raises(ValueError, match="n_per_bit"):
        KernelLSH("rbf", n_sample=5, n_per_bit=5).fit(X)
    with pytest.raises(ValueError, match="at least 2"):
        KernelLSH("rbf").fit(X[:1])
    with pytest.raises(ValueError, match="NaN"):
        RandomKNNHash("rbf").fit(np.array([[0.0], [np.nan], [1.0]]))
    h = RandomKNNHash("rbf", n_bits=3).fit(X)
    with pytest.raises(ValueError, match="shape"):
        h.bits_from_similarities(np.zeros((3, 2)))


def test_clone_keeps_params():
    h = RandomKNNHash("rbf", n_bits=5, n_reference=9, random_state=1,
                      kernel_params={"bandwidth": 2.0})
    c = clone(h)
    assert c.get_params() == h.get_params()
    k = KernelLSH("rbf", n_bits=3, n_sample=7, n_per_bit=2)
    assert clone(k).get_params() == k.get_params()
