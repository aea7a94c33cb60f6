"""PHSIC estimators (Yokoi et al. 2018) against the data-space definition."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from structkernels_hsic import HSIC, PHSIC

import structkernels as sk


def literal_phsic(K_new_x, K_new_y, K, L):
    """Eq. 17 with footnote 4's empirical centred kernel, one pair at a time."""
    n = len(K)
    out = []
    for kx, ly in zip(K_new_x, K_new_y, strict=True):
        kt = kx - kx.mean() - K.mean(axis=0) + K.mean()  # k~(x, x_i)
        lt = ly - ly.mean() - L.mean(axis=0) + L.mean()
        out.append(float(kt @ lt) / n)
    return np.array(out)


@pytest.fixture
def pairs():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    Y = np.tanh(X @ rng.normal(size=(4, 3))) + 0.2 * rng.normal(size=(60, 3))
    Xn = rng.normal(size=(15, 4))
    Yn = rng.normal(size=(15, 3))
    return X, Y, Xn, Yn


@pytest.mark.parametrize("kernel", ["linear", "cosine", "rbf"])
def test_naive_equals_literal_definition(pairs, kernel):
    X, Y, Xn, Yn = pairs
    m = PHSIC(kernel, kernel, estimator="naive").fit(X, Y)
    K, L = sk.gram(kernel, X), sk.gram(kernel, Y)
    want = literal_phsic(sk.gram(kernel, Xn, X), sk.gram(kernel, Yn, Y), K, L)
    np.testing.assert_allclose(m.score(Xn, Yn), want, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("estimator,kernel", [("naive", "rbf"), ("naive", "linear"), ("feature", "linear"),
                                              ("feature", "cosine"), ("icd", "rbf")])
def test_mean_over_training_pairs_is_biased_hsic(pairs, estimator, kernel):
    """MI : PMI = HSIC : PHSIC (Table 2): averaging PHSIC over D gives HSIC_b."""
    X, Y, _, _ = pairs
    rank = None if estimator == "icd" else 100
    m = PHSIC(kernel, kernel, estimator=estimator, max_rank=rank, tol=0.0).fit(X, Y)
    hsic = HSIC(kernel, kernel).fit(X, Y).statistic_
    assert m.score(X, Y).mean() == pytest.approx(hsic, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("kernel", ["linear", "cosine"])
def test_feature_space_equals_naive(pairs, kernel):
    X, Y, Xn, Yn = pairs
    f = PHSIC(kernel, kernel, estimator="feature").fit(X, Y)
    n = PHSIC(kernel, kernel, estimator="naive").fit(X, Y)
    np.testing.assert_allclose(f.score(Xn, Yn), n.score(Xn, Yn), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(f.score(X, Y), n.score(X, Y), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kernel", ["rbf", "linear", "laplacian"])
def test_full_rank_icd_equals_naive_on_new_points(pairs, kernel):
    X, Y, Xn, Yn = pairs
    icd = PHSIC(kernel, kernel, estimator="icd", max_rank=None, tol=0.0).fit(X, Y)
    naive = PHSIC(kernel, kernel, estimator="naive").fit(X, Y)
    np.testing.assert_allclose(icd.score(Xn, Yn), naive.score(Xn, Yn), rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(icd.score_training(), naive.score(X, Y), rtol=1e-7, atol=1e-10)


def test_icd_projection_from_halfway_reproduces_training_rows(pairs):
    X, Y, _, _ = pairs
    m = PHSIC("rbf", "rbf", estimator="icd", max_rank=20, tol=0).fit(X, Y)
    np.testing.assert_allclose(m.icd_x_.transform(X), m.icd_x_.factor_, atol=1e-9)
    before = m.icd_x_.n_kernel_evaluations_
    m.icd_x_.transform(X[:5])
    assert m.icd_x_.n_kernel_evaluations_ - before == 5 * 20  # rank evaluations per new point


def test_low_rank_icd_tracks_naive(pairs):
    X, Y, Xn, Yn = pairs
    icd = PHSIC("rbf", "rbf", estimator="icd", max_rank=40, tol=0).fit(X, Y).score(Xn, Yn)
    naive = PHSIC("rbf", "rbf", estimator="naive").fit(X, Y).score(Xn, Yn)
    assert np.corrcoef(icd, naive)[0, 1] > 0.99


def test_precomputed_naive_and_icd(pairs):
    X, Y, Xn, Yn = pairs
    K, L = sk.gram("rbf", X), sk.gram("rbf", Y)
    Kn, Ln = sk.gram("rbf", Xn, X), sk.gram("rbf", Yn, Y)
    ref = PHSIC("rbf", "rbf", estimator="naive").fit(X, Y).score(Xn, Yn)
    pre = PHSIC("precomputed", "precomputed", estimator="naive").fit(K, L).score(Kn, Ln)
    np.testing.assert_allclose(pre, ref, rtol=1e-12)
    pre_icd = PHSIC("precomputed", "precomputed", estimator="icd", max_rank=None, tol=0.0).fit(K, L)
    np.testing.assert_allclose(pre_icd.score(Kn, Ln), ref, rtol=1e-7, atol=1e-10)
    with pytest.raises(ValueError, match="cross Gram matrix of shape"):
        PHSIC("precomputed", "precomputed", estimator="naive").fit(K, L).score(Kn[:, :5], Ln)


def test_feature_estimator_refuses_nonlinear_and_float32_is_close(pairs):
    X, Y, Xn, Yn = pairs
    with pytest.raises(ValueError, match="linear or cosine"):
        PHSIC("rbf", "rbf", estimator="feature").fit(X, Y)
    a = PHSIC("cosine", "cosine").fit(X, Y).score(Xn, Yn)
    b = PHSIC("cosine", "cosine", dtype=np.float32).fit(X, Y).score(Xn, Yn)
    np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5)


def test_phsic_ranks_true_pairs_above_shuffled(pairs):
    X, Y, _, _ = pairs
    m = PHSIC("rbf", "rbf", estimator="icd", max_rank=30, tol=0).fit(X, Y)
    true = m.score(X, Y)
    shuffled = m.score(X, np.roll(Y, 7, axis=0))
    assert true.mean() > shuffled.mean()


def test_errors(pairs):
    X, Y, _, _ = pairs
    with pytest.raises(ValueError, match="same number of pairs"):
        PHSIC().fit(X, Y[:-1])
    with pytest.raises(ValueError, match="not fitted"):
        PHSIC().score(X, Y)
    with pytest.raises(ValueError, match="estimator must be one of"):
        PHSIC(estimator="exact").fit(X, Y)
    with pytest.raises(ValueError, match="same number of pairs to score"):
        PHSIC().fit(X, Y).score(X, Y[:3])


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(["linear", "cosine"]))
def test_feature_naive_agree_on_random_data(seed, kernel):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 15))
    X, Y = rng.normal(size=(n, 3)), rng.normal(size=(n, 2))
    f = PHSIC(kernel, kernel).fit(X, Y).score(X, Y)
    nv = PHSIC(kernel, kernel, estimator="naive").fit(X, Y).score(X, Y)
    np.testing.assert_allclose(f, nv, rtol=1e-8, atol=1e-12)
    assert f.mean() == pytest.approx(HSIC(kernel, kernel).fit(X, Y).statistic_, rel=1e-8, abs=1e-12)
