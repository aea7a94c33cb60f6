"""HSIC, PHSIC and structured HSIC never return a non-finite number as a result (issue 23).

Overflow (float32 or float64) and NaN kernel values are refused where they arise, naming
the pair; plugin and user kernels are checked for symmetry and PSD on values the
estimators compute anyway.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from structkernels_hsic import HSIC, PHSIC, StructuredHSIC

from structkernels import Kernel
from structkernels.engine.checks import KernelOutputError, NonFiniteKernelValueError
from structkernels.utils import NonFiniteError


class Dot(Kernel):
    """A user kernel with a batched block: ``<x, y>`` of the rows of a 2-D array."""

    def check_input(self, X):
        return np.asarray(X, dtype=np.float64)

    def gram_block(self, X, Y):
        X, Y = np.asarray(X), np.asarray(Y)  # the base class's diag_block passes lists
        return X @ Y.T


class NaNAt(Dot):
    """NaN between row 5 (first entry 5) and any other row: in every kernel column."""

    def gram_block(self, X, Y):
        X, Y = np.asarray(X), np.asarray(Y)
        K = X @ Y.T
        a, b = X[:, 0][:, None], Y[:, 0][None, :]
        K[(a == 5) != (b == 5)] = np.nan
        return K


class Asymmetric(Dot):
    """``<x, y> + x[0]``."""

    def gram_block(self, X, Y):
        X, Y = np.asarray(X), np.asarray(Y)
        return X @ Y.T + X[:, :1]


class NotPSD(Dot):
    """1 on the diagonal, -0.9 elsewhere (rows are distinct)."""

    def gram_block(self, X, Y):
        X, Y = np.asarray(X), np.asarray(Y)
        return np.where((X[:, None, :] == Y[None, :, :]).all(axis=2), 1.0, -0.9)


def _data(n=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    X[:, 0] = np.arange(n)
    Y = X + rng.normal(size=(n, 3))
    return X, Y


@pytest.mark.parametrize("estimator", ["biased", "icd"])
def test_float32_input_beyond_its_range_is_refused(estimator):
    X, Y = _data()
    with pytest.raises(ValueError, match=r"row 0 has a value \(.*\) beyond float32's range"):
        HSIC("rbf", "rbf", estimator=estimator, dtype=np.float32).fit(X * 1e60, Y * 1e60)


@pytest.mark.parametrize("estimator", ["biased", "unbiased", "icd"])
def test_float32_overflow_is_refused_not_nan_or_zero(estimator):
    # |x| ~ 1e20: finite in float32, but x.y ~ 1e40 is not (before: NaN, and 0 with icd)
    X, Y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(NonFiniteKernelValueError, match=r"inf \(overflow\) in float32"):
            HSIC("linear", "linear", estimator=estimator, dtype=np.float32).fit(X * 1e20, Y * 1e20)
        # float64 takes it
        h = HSIC("linear", "linear", estimator=estimator).fit(X * 1e20, Y * 1e20)
    assert np.isfinite(h.statistic_)


@pytest.mark.parametrize("estimator", ["biased", "icd"])
def test_float64_statistic_overflow_is_refused(estimator):
    X, Y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(NonFiniteError, match="HSIC statistic is (nan|inf)"):
            HSIC("linear", "linear", estimator=estimator).fit(X * 1e150, Y * 1e150)
        with pytest.raises(NonFiniteError, match="HSIC statistic is"):
            HSIC("linear", "linear", estimator=estimator).test(X * 1e150, Y * 1e150)


@pytest.mark.parametrize("estimator", ["biased", "unbiased", "icd", "nystrom"])
def test_nan_from_a_user_kernel_is_refused(estimator):
    X, Y = _data()
    params = {"max_rank": 10} if estimator == "nystrom" else {}
    with pytest.raises(NonFiniteKernelValueError, match=r"k\(X\[\d+\], X\[\d+\]\) = nan"):
        HSIC(NaNAt(), "rbf", estimator=estimator, tol=0, **params).fit(X, Y)


def test_asymmetric_user_kernel_is_refused_by_the_incomplete_cholesky():
    X, Y = _data()
    with pytest.raises(KernelOutputError, match="not symmetric"):
        HSIC(Asymmetric(), "rbf", estimator="icd", tol=0, max_rank=10).fit(X, Y)
    with pytest.raises(KernelOutputError, match="not symmetric"):
        HSIC(Asymmetric(), "rbf", estimator="biased").fit(X, Y)


@pytest.mark.parametrize("estimator", ["biased", "icd"])
def test_non_psd_user_kernel_is_refused(estimator):
    X, Y = _data()
    with pytest.raises(KernelOutputError, match="not positive semi-definite"):
        HSIC(NotPSD(), "rbf", estimator=estimator, tol=0).fit(X, Y)


def test_phsic_float32_overflow_is_refused():
    X, Y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(NonFiniteError, match="PHSIC covariance C"):
            PHSIC("linear", "linear", estimator="feature", dtype=np.float32).fit(X * 1e19, Y * 1e19)
        model = PHSIC("linear", "linear", estimator="feature").fit(X, Y)
        with pytest.raises(NonFiniteError, match="PHSIC score: pair 0 is"):
            model.score(X * 1e200, Y * 1e200)


def test_structured_hsic_clique_overflow_is_refused():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 1)) * 1e100
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(NonFiniteError, match="clique Gram of X"):
            StructuredHSIC(kernel_x="linear", kernel_y="linear", lag=1).fit(x, x)


def test_precomputed_gram_with_nan_names_the_cell():
    X, _ = _data()
    K = X @ X.T
    K[4, 7] = np.nan
    with pytest.raises(NonFiniteError, match="precomputed Gram matrix X: row 4, column 7 is nan"):
        HSIC("precomputed", "linear").fit(K, X)


def test_bool_block_size_is_refused_and_huge_ranks_are_bounded():
    X, Y = _data()
    with pytest.raises(ValueError, match="block_size must be a positive int"):
        HSIC("rbf", "rbf", block_size=True).fit(X, Y)
    # max_rank beyond n is bounded by n (memory n * rank)
    h = HSIC("rbf", "rbf", estimator="icd", max_rank=10**9, tol=0).fit(X, Y)
    assert h.rank_[0] <= len(X)
