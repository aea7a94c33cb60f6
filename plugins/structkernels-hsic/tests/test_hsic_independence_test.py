"""The HSIC independence test: calibration under independence, power under dependence."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from structkernels_hsic import HSIC
from structkernels_hsic.hsic import gamma_null

import structkernels as sk


def gretton_gamma_reference(K, L):
    """Gretton's hsicTestGamma.m, transcribed (assumes k(x, x) = 1 in the mean)."""
    m = len(K)
    H = np.eye(m) - np.ones((m, m)) / m
    Kc, Lc = H @ K @ H, H @ L @ H
    test_stat = 1 / m * np.sum(Kc.T * Lc)
    var = (1 / 6 * Kc * Lc) ** 2
    var = 1 / m / (m - 1) * (var.sum() - np.trace(var))
    var = 72 * (m - 4) * (m - 5) / m / (m - 1) / (m - 2) / (m - 3) * var
    K0, L0 = K - np.diag(np.diag(K)), L - np.diag(np.diag(L))
    mu_x = K0.sum() / m / (m - 1)
    mu_y = L0.sum() / m / (m - 1)
    mean = 1 / m * (1 + mu_x * mu_y - mu_x - mu_y)
    al = mean**2 / var
    bet = var * m / mean
    return test_stat, stats.gamma.sf(test_stat, al, scale=bet)


def test_gamma_matches_grettons_code_when_diagonal_is_one():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(60, 2))
    y = x[:, :1] ** 2 + rng.normal(size=(60, 1))
    K = sk.gram("rbf", x)
    L = sk.gram("rbf", y)
    stat_ref, p_ref = gretton_gamma_reference(K, L)
    res = HSIC().test(x, y, method="gamma")
    assert 60 * res.statistic == pytest.approx(stat_ref, rel=1e-10)
    assert res.p_value == pytest.approx(p_ref, rel=1e-8)


def test_gamma_mean_uses_the_grams_own_diagonal():
    """Scaling a kernel by c scales HSIC by c and leaves the p-value unchanged.

    With the k(x, x) = 1 shortcut the null mean would not scale and the p-value
    would move.
    """
    rng = np.random.default_rng(2)
    x = rng.normal(size=(80, 1))
    y = 0.5 * x + rng.normal(size=(80, 1))
    base = HSIC().test(x, y)
    scaled = HSIC(3.0 * sk.kernel("rbf"), sk.kernel("linear")).test(x, y)
    ref = HSIC("rbf", "linear").test(x, y)
    assert scaled.p_value == pytest.approx(ref.p_value, rel=1e-8)
    assert scaled.statistic == pytest.approx(3.0 * ref.statistic, rel=1e-12)
    K, L = sk.gram("rbf", x), sk.gram("linear", y)
    shape, scale, mean, _ = gamma_null(K, L)
    n = len(x)
    mu_x = (K.sum() - np.trace(K)) / (n * (n - 1))
    mu_y = (L.sum() - np.trace(L)) / (n * (n - 1))
    assert mean == pytest.approx((np.trace(K) / n - mu_x) * (np.trace(L) / n - mu_y) / n, rel=1e-12)
    assert 0 < base.p_value < 1


@pytest.mark.parametrize("method", ["gamma", "permutation"])
def test_p_values_uniform_under_independence(method):
    """KS test of 200 seeded p-values against U(0, 1)."""
    n_perm = 99 if method == "permutation" else None
    pvals = []
    for seed in range(200):
        rng = np.random.default_rng(seed)
        x = rng.normal(size=(50, 1))
        y = rng.normal(size=(50, 1))
        kw = {"n_permutations": n_perm, "random_state": seed} if n_perm else {}
        pvals.append(HSIC().test(x, y, method=method, **kw).p_value)
    ks = stats.kstest(pvals, "uniform")
    assert ks.pvalue > 0.01, (ks, np.quantile(pvals, [0.05, 0.5, 0.95]))
    assert 0.01 < np.mean(np.array(pvals) < 0.05) < 0.11


@pytest.mark.parametrize(
    "estimator,method", [("biased", "gamma"), ("biased", "permutation"), ("icd", "gamma"),
                         ("icd", "permutation"), ("unbiased", "permutation")]
)
def test_tiny_p_values_under_dependence(estimator, method):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 1))
    y = x + 0.1 * rng.normal(size=(200, 1))
    res = HSIC(estimator=estimator, max_rank=30, tol=0).test(x, y, method=method, n_permutations=200, random_state=0)
    floor = 1 / 201 if method == "permutation" else 1e-10
    assert res.p_value <= floor + 1e-15
    statistic, p = res
    assert statistic == res.statistic and p == res.p_value


def test_full_rank_icd_gamma_equals_exact_gamma():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(70, 2))
    y = np.sin(x[:, :1]) + 0.5 * rng.normal(size=(70, 1))
    exact = HSIC().test(x, y)
    icd = HSIC(estimator="icd", max_rank=None, tol=0.0).test(x, y)
    assert icd.statistic == pytest.approx(exact.statistic, abs=1e-10)
    assert icd.p_value == pytest.approx(exact.p_value, rel=1e-6)


def test_permutation_is_reproducible_and_validates():
    rng = np.random.default_rng(6)
    x, y = rng.normal(size=(40, 1)), rng.normal(size=(40, 1))
    a = HSIC().test(x, y, method="permutation", n_permutations=50, random_state=3)
    b = HSIC().test(x, y, method="permutation", n_permutations=50, random_state=3)
    np.testing.assert_array_equal(a.null_samples, b.null_samples)
    with pytest.raises(ValueError, match="n_permutations"):
        HSIC().test(x, y, method="permutation", n_permutations=0)
    with pytest.raises(ValueError, match="gamma approximation is for the biased"):
        HSIC(estimator="unbiased").test(x, y, method="gamma")
    with pytest.raises(ValueError, match="method must be"):
        HSIC().test(x, y, method="bootstrap")
