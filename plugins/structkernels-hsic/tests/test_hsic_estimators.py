"""HSIC estimators against literal by-definition oracles and the worked example."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from structkernels_hsic import HSIC, IncompleteCholesky, hsic_biased, hsic_unbiased

import structkernels as sk
from structkernels import Kernel


def rbf_gram(X, sigma=1.0):
    D = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    return np.exp(-D / (2 * sigma**2))


def literal_biased(K, L):
    n = len(K)
    H = np.eye(n) - np.ones((n, n)) / n
    return np.trace(K @ H @ L @ H) / n**2


def literal_unbiased_matrix(K, L):
    """Song et al. (2012) Eq. 5 written with explicit matrices."""
    n = len(K)
    Kt, Lt = K - np.diag(np.diag(K)), L - np.diag(np.diag(L))
    one = np.ones(n)
    return (
        np.trace(Kt @ Lt)
        + (one @ Kt @ one) * (one @ Lt @ one) / ((n - 1) * (n - 2))
        - 2.0 / (n - 2) * (one @ Kt @ Lt @ one)
    ) / (n * (n - 3))


def brute_force_u_statistic(K, L):
    """The 4th-order U-statistic of HSIC by enumeration (Gretton et al. 2005; Zhang et al. Thm 3)."""
    n = len(K)
    total = 0.0
    count = 0
    for quad in itertools.permutations(range(n), 4):
        h = 0.0
        for t, u, v, w in itertools.permutations(quad):
            h += K[t, u] * L[t, u] + K[t, u] * L[v, w] - 2 * K[t, u] * L[t, v]
        total += h / 24.0
        count += 1
    return total / count


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 3))
    Y = np.tanh(X[:, :2]) + 0.3 * rng.normal(size=(40, 2))
    return X, Y


def test_biased_equals_trace_formula(data):
    X, Y = data
    K, L = rbf_gram(X), rbf_gram(Y, 0.7)
    expected = literal_biased(K, L)
    assert hsic_biased(K, L) == pytest.approx(expected, rel=1e-12)
    got = HSIC("rbf", sk.kernel("rbf", bandwidth=0.7)).fit(X, Y).statistic_
    assert got == pytest.approx(expected, rel=1e-10)


def test_unbiased_equals_song_formula_and_u_statistic(data):
    X, Y = data
    K, L = rbf_gram(X), rbf_gram(Y)
    assert hsic_unbiased(K, L) == pytest.approx(literal_unbiased_matrix(K, L), rel=1e-10)
    Ks, Ls = K[:7, :7], L[:7, :7]
    assert hsic_unbiased(Ks, Ls) == pytest.approx(brute_force_u_statistic(Ks, Ls), rel=1e-10)
    got = HSIC(estimator="unbiased").fit(X, Y).statistic_
    assert got == pytest.approx(literal_unbiased_matrix(K, L), rel=1e-10)


@pytest.mark.parametrize("estimator", ["biased", "unbiased"])
def test_blocked_accumulation_equals_full_gram(data, estimator):
    X, Y = data
    full = HSIC(estimator=estimator).fit(X, Y).statistic_
    blocked = HSIC(estimator=estimator, block_size=7).fit(X, Y).statistic_
    assert blocked == pytest.approx(full, rel=1e-12)


def test_full_rank_icd_equals_biased(data):
    X, Y = data
    exact = HSIC().fit(X, Y).statistic_
    icd = HSIC(estimator="icd", max_rank=None, tol=0.0).fit(X, Y)
    assert abs(icd.statistic_ - exact) < 1e-10
    assert icd.icd_x_.rank_ <= len(X)


def test_low_rank_icd_is_close_and_rank_pair(data):
    X, Y = data
    exact = HSIC().fit(X, Y).statistic_
    h = HSIC(estimator="icd", max_rank=(30, 20), tol=0).fit(X, Y)
    assert h.icd_x_.rank_ == 30 and h.icd_y_.rank_ == 20
    assert h.statistic_ == pytest.approx(exact, rel=0.02)


def test_icd_pivot_rule_largest_diagonal_ties_first():
    # linear kernel: diagonal = squared norms 1, 9, 9, 4 -> first pivot is index 1 (tie with 2)
    X = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 3.0], [0.0, 2.0]])
    icd = IncompleteCholesky("linear", max_rank=2, tol=0.0).fit(X)
    assert icd.pivots_[0] == 1
    # after removing direction e1 the residual diagonal is 0, 0, 9, 4 -> index 2
    assert icd.pivots_[1] == 2
    np.testing.assert_allclose(icd.factor_ @ icd.factor_.T, X @ X.T, atol=1e-12)


class CountingRBF(Kernel):
    """RBF that records the shape of every Gram block it is asked for."""

    def __init__(self, sigma=1.0, log=None):
        self.sigma = sigma
        self.log = log

    def check_input(self, X):
        return np.asarray(X, dtype=np.float64)

    def gram_block(self, X, Y):
        self.log.append((len(X), len(Y)))
        return rbf_gram(np.vstack([X, Y]), self.sigma)[: len(X), len(X):]

    def diag_block(self, X):
        self.log.append(("diag", len(X)))
        return np.ones(len(X))


def test_icd_evaluates_only_needed_columns(data):
    X, Y = data
    log: list = []
    k = CountingRBF(log=log)
    h = HSIC(k, k, estimator="icd", max_rank=5, tol=0).fit(X, Y)
    blocks = [b for b in log if b[0] != "diag"]
    assert all(b == (len(X), 1) for b in blocks), blocks
    assert len(blocks) == 10
    assert h.n_kernel_evaluations_ == 2 * (len(X) + 5 * len(X))


def test_normalized_kernel_through_icd(data):
    """A Normalized kernel: inner diagonal computed once, columns normalised; same values."""
    from structkernels_hsic import PHSIC

    X, Y = data
    k = sk.Normalized(sk.kernel("polynomial", degree=2))
    exact = HSIC(k, k).fit(X, Y).statistic_
    icd = HSIC(k, k, estimator="icd", max_rank=None, tol=0.0).fit(X, Y)
    assert icd.statistic_ == pytest.approx(exact, abs=1e-10)
    lin = sk.Normalized(sk.kernel("linear"))
    a = PHSIC(lin, lin, estimator="icd", max_rank=None, tol=0.0).fit(X, Y).score(X[:7] * 2.0, Y[:7])
    b = PHSIC("cosine", "cosine").fit(X, Y).score(X[:7] * 2.0, Y[:7])
    np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-10)


def test_precomputed_equals_kernel(data):
    X, Y = data
    K, L = rbf_gram(X), rbf_gram(Y)
    for est in ("biased", "unbiased"):
        a = HSIC("precomputed", "precomputed", estimator=est).fit(K, L).statistic_
        b = HSIC(estimator=est).fit(X, Y).statistic_
        assert a == pytest.approx(b, rel=1e-10)
    a = HSIC("precomputed", "precomputed", estimator="icd", max_rank=None, tol=0.0).fit(K, L).statistic_
    assert a == pytest.approx(literal_biased(K, L), abs=1e-10)


def test_median_heuristic_matches_explicit_sigma(data):
    X, Y = data
    from scipy.spatial.distance import pdist

    sx, sy = np.median(pdist(X)), np.median(pdist(Y))
    a = HSIC(kernel_x_params={"bandwidth": "median"}, kernel_y_params={"bandwidth": "median"}).fit(X, Y)
    b = HSIC(sk.kernel("rbf", bandwidth=sx), sk.kernel("rbf", bandwidth=sy)).fit(X, Y)
    assert a.statistic_ == pytest.approx(b.statistic_, rel=1e-12)


def test_intuitive_introduction_worked_example():
    """The blog's experiment: exp(-(x-y)^2), n = 1000, HSIC with 1/(n-1)^2.

    Independent: "around 0.0002"; y = x + 0.1 eps: "approximately 0.096".
    Our RBF is exp(-d^2 / (2 sigma^2)), so sigma = 1/sqrt(2); biased HSIC
    uses 1/n^2, hence the factor n^2 / (n-1)^2.
    """
    rng = np.random.default_rng(0)
    n = 1000
    k = sk.kernel("rbf", bandwidth=1 / np.sqrt(2))
    x, y = rng.normal(size=(n, 1)), rng.normal(size=(n, 1))
    indep = HSIC(k, k).fit(x, y).statistic_ * n**2 / (n - 1) ** 2
    y2 = x + 0.1 * rng.normal(size=(n, 1))
    dep = HSIC(k, k).fit(x, y2).statistic_ * n**2 / (n - 1) ** 2
    assert 0.0 < indep < 0.001
    assert 0.085 < dep < 0.11


def test_bad_input_messages(data):
    X, Y = data
    with pytest.raises(ValueError, match="same number of samples"):
        HSIC().fit(X, Y[:-1])
    with pytest.raises(ValueError, match="estimator must be one of"):
        HSIC(estimator="fast").fit(X, Y)
    with pytest.raises(ValueError, match="square Gram"):
        HSIC("precomputed", "precomputed").fit(X, Y)
    with pytest.raises(ValueError, match="rank must be"):
        HSIC(estimator="icd", max_rank=0).fit(X, Y)
    with pytest.raises(ValueError, match="at least 4 samples"):
        HSIC(estimator="unbiased").fit(X[:3], Y[:3])
    with pytest.raises(ValueError, match="NaN"):
        X2 = X.copy()
        X2[5, 1] = np.nan
        HSIC().fit(X2, Y)


finite = st.floats(-3, 3, allow_nan=False, width=64)


@settings(max_examples=40, deadline=None)
@given(arrays(np.float64, (9, 2), elements=finite), arrays(np.float64, (9, 2), elements=finite))
def test_properties_nonnegative_symmetric_permutation_invariant(X, Y):
    h = HSIC().fit(X, Y).statistic_
    assert h >= -1e-12
    assert HSIC().fit(Y, X).statistic_ == pytest.approx(h, rel=1e-9, abs=1e-12)
    p = np.arange(9)[::-1]
    assert HSIC().fit(X[p], Y[p]).statistic_ == pytest.approx(h, rel=1e-9, abs=1e-12)
    icd = HSIC(estimator="icd", max_rank=None, tol=0.0).fit(X, Y).statistic_
    assert icd == pytest.approx(h, abs=1e-9)


@settings(max_examples=30, deadline=None)
@given(arrays(np.float64, (12, 3), elements=finite), st.integers(1, 12))
def test_icd_factor_is_psd_lower_bound(X, rank):
    """K - A A^T stays positive semi-definite and its trace is the reported residual."""
    icd = IncompleteCholesky("rbf", max_rank=rank, tol=0.0).fit(X)
    R = rbf_gram(X) - icd.factor_ @ icd.factor_.T
    assert np.linalg.eigvalsh((R + R.T) / 2).min() > -1e-8
    assert np.trace(R) == pytest.approx(icd.residual_trace_, abs=1e-8)
