"""Structured HSIC (Zhang et al. 2008) against literal clique constructions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from structkernels_hsic import HSIC, StructuredHSIC, td_sep
from structkernels_hsic.hsic import hsic_biased
from structkernels_hsic.structured import clique_gram, grid_clique_gram

import structkernels as sk


def rbf(a, b, sigma=1.0):
    return float(np.exp(-np.sum((np.asarray(a) - np.asarray(b)) ** 2) / (2 * sigma**2)))


def literal_sequence_hsic(x, y, lag, combine="product"):
    """Build every clique window and its kernel value by definition."""
    T = len(x)
    m = T - lag
    K = np.empty((m, m))
    L = np.empty((m, m))
    for s in range(m):
        for t in range(m):
            kv = [rbf(x[s + u], x[t + u]) for u in range(lag + 1)]
            lv = [rbf(y[s + u], y[t + u]) for u in range(lag + 1)]
            K[s, t] = np.prod(kv) if combine == "product" else np.sum(kv)
            L[s, t] = np.prod(lv) if combine == "product" else np.sum(lv)
    H = np.eye(m) - 1.0 / m
    return np.trace(K @ H @ L @ H) / m**2


def literal_grid_hsic(X, Y):
    R, C = X.shape[:2]
    cliques = [(i, j) for i in range(R - 1) for j in range(C - 1)]
    offs = [(0, 0), (0, 1), (1, 0), (1, 1)]
    m = len(cliques)
    K = np.ones((m, m))
    L = np.ones((m, m))
    for a, (i, j) in enumerate(cliques):
        for b, (k, l) in enumerate(cliques):
            for di, dj in offs:
                K[a, b] *= rbf(X[i + di, j + dj], X[k + di, l + dj])
                L[a, b] *= rbf(Y[i + di, j + dj], Y[k + di, l + dj])
    H = np.eye(m) - 1.0 / m
    return np.trace(K @ H @ L @ H) / m**2


@pytest.fixture
def seq():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(25, 2))
    y = np.roll(x[:, :1], 1, axis=0) + 0.3 * rng.normal(size=(25, 1))
    return x, y


@pytest.mark.parametrize("lag", [0, 1, 2, 3])
@pytest.mark.parametrize("combine", ["product", "sum"])
def test_sequence_equals_literal_cliques(seq, lag, combine):
    x, y = seq
    got = StructuredHSIC(lag=lag, clique_kernel=combine).fit(x, y)
    assert got.statistic_ == pytest.approx(literal_sequence_hsic(x, y, lag, combine), rel=1e-10)
    assert got.n_cliques_ == len(x) - lag


def test_lag_zero_is_exactly_biased_hsic(seq):
    x, y = seq
    # the same statistic; the Grams come by two routes (the engine's mirrored triangle for the
    # clique Grams, symmetric tiles for HSIC), equal to the last bits only
    assert StructuredHSIC(lag=0).fit(x, y).statistic_ == pytest.approx(HSIC().fit(x, y).statistic_, rel=1e-13)


def test_paper_normalisation_is_m_times_default(seq):
    x, y = seq
    a = StructuredHSIC(lag=2).fit(x, y)
    b = StructuredHSIC(lag=2, normalization="paper").fit(x, y)
    assert b.statistic_ == pytest.approx(a.statistic_ * a.n_cliques_, rel=1e-12)


def test_concat_clique_kernel_equals_product_for_rbf(seq):
    # exp(-||[a;b]-[c;d]||^2/2) = exp(-||a-c||^2/2) exp(-||b-d||^2/2)
    x, y = seq
    a = StructuredHSIC(lag=2, clique_kernel="concat").fit(x, y).statistic_
    b = StructuredHSIC(lag=2).fit(x, y).statistic_
    assert a == pytest.approx(b, rel=1e-10)


def test_grid_equals_literal_cliques():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(5, 4, 2))
    Y = X[..., :1] ** 2 + rng.normal(size=(5, 4, 1))
    got = StructuredHSIC(structure="grid").fit(X, Y)
    assert got.statistic_ == pytest.approx(literal_grid_hsic(X, Y), rel=1e-10)
    assert got.n_cliques_ == 12
    concat = StructuredHSIC(structure="grid", clique_kernel="concat").fit(X, Y)
    assert concat.statistic_ == pytest.approx(got.statistic_, rel=1e-10)


def test_clique_gram_helpers_by_definition():
    rng = np.random.default_rng(2)
    A = rng.normal(size=(7, 7))
    G = clique_gram(A, 2)
    for s in range(5):
        for t in range(5):
            assert G[s, t] == pytest.approx(A[s, t] * A[s + 1, t + 1] * A[s + 2, t + 2])
    B = rng.normal(size=(12, 12))  # grid 3 x 4, row-major
    Gg = grid_clique_gram(B, (3, 4), "sum")
    idx = np.arange(12).reshape(3, 4)
    for a, (i, j) in enumerate([(i, j) for i in range(2) for j in range(3)]):
        for b, (k, l) in enumerate([(i, j) for i in range(2) for j in range(3)]):
            want = sum(B[idx[i + di, j + dj], idx[k + di, l + dj]] for di in (0, 1) for dj in (0, 1))
            assert Gg[a, b] == pytest.approx(want)


def test_xor_sequence_detected_with_lag_one_missed_iid():
    """Zhang et al. Fig. 1a: x_t iid uniform on {0, 1}, y_t = x_t XOR x_{t-1}."""
    rng = np.random.default_rng(7)
    T = 300
    x = rng.integers(0, 2, T + 1).astype(float)
    y = np.logical_xor(x[1:], x[:-1]).astype(float)
    x = x[1:]
    X, Y = x[:, None], y[:, None]
    iid = StructuredHSIC(lag=0).test(X, Y, n_permutations=200, random_state=0)
    seq = StructuredHSIC(lag=1).test(X, Y, n_permutations=200, random_state=0)
    assert seq.p_value <= 1 / 201 + 1e-12
    assert iid.p_value > 0.05
    assert HSIC().test(X, Y).p_value > 0.05  # the iid gamma test misses it too
    assert seq.statistic > 10 * iid.statistic


def test_grid_shift_test_detects_neighbour_dependence():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(12, 12, 1))
    Y = np.roll(X, 1, axis=1) + 0.2 * rng.normal(size=(12, 12, 1))  # y_ij depends on x_i,j-1
    res = StructuredHSIC(structure="grid").test(X, Y, n_permutations=100, random_state=0)
    assert res.p_value <= 1 / 101 + 1e-12
    null = []
    for seed in range(20):
        r = np.random.default_rng(100 + seed)
        A, B = r.normal(size=(8, 8, 1)), r.normal(size=(8, 8, 1))
        null.append(StructuredHSIC(structure="grid").test(A, B, n_permutations=50, random_state=seed).p_value)
    assert np.median(null) > 0.2 and np.mean(np.array(null) < 0.05) <= 0.2


def lagged_cov_sq(x, y, lags, m):
    total = 0.0
    for t in [0, *lags]:
        xs, ys = x[:m], y[t : t + m]
        total += np.mean((xs - xs.mean()) * (ys - ys.mean())) ** 2
    return total


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 4))
def test_td_sep_is_sum_of_squared_lagged_covariances(seed, tau):
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=30), rng.normal(size=30)
    m = 30 - tau
    assert td_sep(x, y, lags=tau) == pytest.approx(lagged_cov_sq(x, y, range(1, tau + 1), m), rel=1e-10)


def test_td_sep_equals_structured_hsic_with_linear_kernels():
    """Eq. 14: <x_s,x_t>(<y_s,y_t> + <y_s+tau,y_t+tau>) -> tr HKHL + tr HKHL_tau."""
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=(40, 1)), rng.normal(size=(40, 1))
    tau = 3
    m = 40 - tau
    K = sk.gram("linear", x[:m])
    L = sk.gram("linear", y[:m]) + sk.gram("linear", y[tau : tau + m])
    assert td_sep(x, y, lags=[tau]) == pytest.approx(hsic_biased(K, L), rel=1e-10)
    assert td_sep(x, y, lags=[tau], normalization="paper") == pytest.approx(m * hsic_biased(K, L), rel=1e-10)


def test_structured_errors():
    x = np.zeros((5, 1))
    with pytest.raises(ValueError, match="lag must be"):
        StructuredHSIC(lag=-1).fit(x, x)
    with pytest.raises(ValueError, match="no clique"):
        StructuredHSIC(lag=5).fit(x, x)
    with pytest.raises(ValueError, match="same sequence shape"):
        StructuredHSIC(lag=1).fit(np.zeros((6, 1)), x)
    with pytest.raises(ValueError, match="structure must be"):
        StructuredHSIC(structure="tree").fit(x, x)
    with pytest.raises(ValueError, match="shape \\(R, C\\)"):
        StructuredHSIC(structure="grid").fit(np.zeros(5), np.zeros(5))
