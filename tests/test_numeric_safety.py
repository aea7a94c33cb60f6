"""Wrong results that look right (issue 23, items 7 and 8) and bounded size parameters.

Overflow and non-finite kernel values are refused where they arise, naming the pair or
row; plugin and user kernels are probed for symmetry and positive semi-definiteness.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import structkernels as sk
from structkernels import Kernel, KernelKNNClassifier, Normalized, Path, knn_graph
from structkernels.engine.checks import (
    KernelOutputError,
    NonFiniteKernelValueError,
    check_gram_sample,
    normalize_gram,
    probe_kernel,
    probe_size,
    validation_level,
)
from structkernels.kernels.base import ScaledKernel
from structkernels.neighbors.graph import exact_knn_graph
from structkernels.utils import NonFiniteError, check_finite, first_nonfinite


# ------------------------------------------------------------------ test kernels
class Dot(Kernel):
    """A user kernel (not shipped with structkernels): dot product of 1-D arrays."""

    def check_input(self, X):
        return [np.asarray(x, dtype=np.float64) for x in X]

    def pair(self, x, y):
        return float(x @ y)


class NaNAt(Dot):
    """NaN for the pair of the structures whose first entry is 3 and 5 (either order)."""

    def pair(self, x, y):
        if {float(x[0]), float(y[0])} == {3.0, 5.0}:
            return float("nan")
        return float(x @ y)


class Asymmetric(Dot):
    """``k(x, y) = <x, y> + x[0]``: k(x, y) != k(y, x)."""

    def pair(self, x, y):
        return float(x @ y + x[0])


class NotPSD(Dot):
    """``1`` on the diagonal, ``-0.9`` elsewhere: eigenvalue ``1.9 - 0.9 n < 0`` for n >= 3."""

    def pair(self, x, y):
        return 1.0 if np.array_equal(x, y) else -0.9


class Trusted(Asymmetric):
    """An author who vouches for the outputs: finite checks only."""

    output_validation = "finite"


def _rows(n: int, d: int = 3) -> list[np.ndarray]:
    X = np.random.default_rng(0).normal(size=(n, d))
    X[:, 0] = np.arange(n)  # row i has first entry i
    return list(X)


# ------------------------------------------------------------ item 7: overflow
def test_linear_overflow_names_the_row_not_nan():
    X = np.ones((5, 3))
    X[3] = 1e300
    for normalize in (True, False):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # numpy's own overflow warning
            with pytest.raises(NonFiniteKernelValueError, match=r"row 3: k\(x, x\) = inf \(overflow\)"):
                sk.gram(sk.kernel("linear"), X, normalize=normalize)
            with pytest.raises(NonFiniteKernelValueError, match=r"k\(X\[3\], Y\[0\]\) = inf"):
                sk.gram(sk.kernel("linear"), X, X[3:4] * 10, normalize=normalize)
            with pytest.raises(NonFiniteKernelValueError, match="scale the input"):
                sk.kernel("linear").value(X[3], X[3])
            with pytest.raises(NonFiniteKernelValueError, match=r"row 3: k\(x, x\)"):
                sk.kernel("linear").diag(X)
    # a NonFiniteKernelValueError is a ValueError (one line, exit 2 in the CLI) and both
    # a KernelOutputError and a NonFiniteError
    assert issubclass(NonFiniteKernelValueError, (ValueError,))
    assert issubclass(NonFiniteKernelValueError, KernelOutputError)
    assert issubclass(NonFiniteKernelValueError, NonFiniteError)


def test_linear_overflow_with_memmap_output(tmp_path):
    X = np.ones((40, 2))
    X[33] = 1e200
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(NonFiniteKernelValueError, match=r"row 33: k\(x, x\)"):
            sk.gram("linear", X, out=tmp_path / "K.npy", block_size=8, normalize=True)


def test_path_of_2000_tuples_is_refused_naming_the_row_and_a_remedy():
    long = Path([(None, "a")] + [("e", "n")] * 1999)
    short = Path([(None, "a"), ("e", "n")])
    k = sk.kernel("path")
    with pytest.raises(NonFiniteKernelValueError,
                       match=r"row 1: k\(x, x\) = inf \(overflow\).*lower lam or set max_len"):
        sk.gram(k, [short, long, short])
    with pytest.raises(NonFiniteKernelValueError, match=r"k\(x, y\) = inf"):
        k.value(long, long)
    # the remedy works: a small lam keeps the value finite
    assert np.isfinite(sk.kernel("path", lam=0.1, max_len=3).value(long, long))


def test_normalisation_overflow_of_a_non_psd_matrix_is_refused():
    K = np.array([[1e-300, 1e10], [1e10, 1e-300]])
    d = np.diag(K).copy()
    with np.errstate(over="ignore"), pytest.raises(NonFiniteError, match="not positive semi-def"):
        normalize_gram(K, d, d)
    with pytest.raises(NonFiniteError, match="row 1"):
        normalize_gram(np.ones((2, 2)), np.array([1.0, np.inf]))


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(2, 12),
    row=st.integers(0, 11),
    exponent=st.integers(100, 300),  # 10**308 times a normal draw is already inf
    normalize=st.booleans(),
)
def test_gram_never_returns_a_non_finite_value(n, row, exponent, normalize):
    X = np.random.default_rng(n).normal(size=(n, 3))
    X[row % n] *= 10.0**exponent
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            K = sk.gram("linear", X, normalize=normalize)
        except NonFiniteKernelValueError as exc:
            assert f"row {row % n}" in str(exc) or "k(X[" in str(exc)
        else:
            assert np.isfinite(K).all()


# ------------------------------------------------------- item 8: kernel outputs
def test_nan_from_a_user_kernel_is_refused_in_gram_knn_and_classifier():
    X = _rows(12)
    with pytest.raises(NonFiniteKernelValueError, match=r"NaNAt\(\): k\(X\[3\], X\[5\]\) = nan"):
        sk.gram(NaNAt(), X, validate=False)
    with pytest.raises(NonFiniteKernelValueError, match=r"k\(X\[3\], X\[5\]\) = nan"):
        sk.gram(NaNAt(), X)
    with pytest.raises(NonFiniteKernelValueError, match=r"k\(X\[3\], X\[5\]\) = nan"):
        knn_graph(X, NaNAt(), k=2)
    clf = KernelKNNClassifier(NaNAt(), n_neighbors=2)
    with pytest.raises(NonFiniteKernelValueError, match="nan"):
        clf.fit(X[:3] + X[4:], np.arange(11) % 2).predict([X[3]])


def test_asymmetric_user_kernel_is_refused_naming_the_pair():
    X = _rows(10)
    with pytest.raises(KernelOutputError, match=r"not symmetric: k\(X\[\d\], X\[\d\]\) = .* but"):
        sk.gram(Asymmetric(), X)
    with pytest.raises(KernelOutputError, match="not symmetric"):
        knn_graph(X, Asymmetric(), k=2)
    with pytest.raises(KernelOutputError, match="not symmetric"):
        KernelKNNClassifier(Asymmetric(), n_neighbors=2).fit(X, np.arange(10) % 2)
    with pytest.raises(KernelOutputError, match="not symmetric"):
        sk.gram(Asymmetric() + sk.kernel("linear"), np.array(X))
    # forced off: only finiteness is checked
    assert sk.gram(Asymmetric(), X, validate=False).shape == (10, 10)
    assert sk.gram(Trusted(), X).shape == (10, 10)
    with pytest.raises(KernelOutputError, match="not symmetric"):
        sk.gram(Trusted(), X, validate=True)


def test_non_psd_user_kernel_is_refused():
    X = _rows(6)
    with pytest.raises(KernelOutputError, match="not positive semi-definite"):
        sk.gram(NotPSD(), X)
    with pytest.raises(KernelOutputError, match="Cauchy-Schwarz"):
        check_gram_sample(NotPSD(), np.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(KernelOutputError, match=r"row 1: k\(x, x\) = -1.0 < 0"):
        check_gram_sample(NotPSD(), np.array([[1.0, 0.0], [0.0, -1.0]]))
    with pytest.raises(KernelOutputError, match="eigenvalue"):
        # 2 x 2 minors are fine, the 3 x 3 matrix is not PSD
        check_gram_sample(NotPSD(), np.array([[1.0, 0.9, -0.9], [0.9, 1.0, 0.9], [-0.9, 0.9, 1.0]]))
    assert sk.gram(NotPSD(), X, validate=False).shape == (6, 6)


def test_validation_level_auto_true_false():
    assert validation_level(sk.kernel("linear")) == "finite"
    assert validation_level(sk.kernel("path")) == "finite"
    assert validation_level(Normalized(sk.kernel("tree"))) == "finite"
    assert validation_level(Dot()) == "full"
    assert validation_level(Dot() + sk.kernel("linear")) == "full"
    assert validation_level(Normalized(Dot())) == "full"
    assert validation_level(2.0 * Dot()) == "full"
    assert validation_level(Trusted()) == "finite"
    assert validation_level(sk.kernel("linear"), True) == "full"
    assert validation_level(Dot(), False) == "finite"
    with pytest.raises(ValueError, match="validate"):
        validation_level(Dot(), "yes")
    with pytest.raises(ValueError, match="validate"):
        sk.gram(Dot(), _rows(3), validate="sometimes")


def test_example_plugin_kernel_is_validated_and_passes():
    k = sk.kernel("bag-of-labels")
    assert validation_level(k) == "full"
    paths = [Path([(None, "a"), ("ARG0", "b")]), Path([(None, "a")]), Path([(None, "c")])] * 10
    K, info = sk.gram(k, paths, return_info=True)
    assert np.allclose(K, K.T)
    # the probe's evaluations are not counted as the Gram's
    assert info.n_evaluations == 30 * 31 // 2


def test_probe_is_bounded():
    assert probe_size(500, 500 * 501 // 2) == 64
    assert probe_size(10_000, 10_000 * 10_001 // 2) == 64
    assert probe_size(100, 100 * 101 // 2) == 15  # about 5% of the Gram's evaluations
    assert probe_size(3, 6) == 3
    assert probe_kernel(Dot(), _rows(100), 64) == 64 * 64


# ------------------------------------------------------------ bounded sizes
def test_huge_k_is_clipped_within_bounded_memory():
    X = np.random.default_rng(0).normal(size=(20, 2))
    y = np.arange(20) % 2
    with pytest.warns(UserWarning, match=r"k=1000000000 exceeds the 20 structures; using k=20"):
        g = knn_graph(X, "rbf", k=10**9)
    assert g.indices.shape == (20, 20) and (g.indices[:, 19] == -1).all()
    assert g.indices[:, :19].min() >= 0
    with pytest.warns(UserWarning, match="exceeds the 20 structures"):
        gh = knn_graph(X, "rbf", k=10**9, hashing="random-knn", random_state=0)
    assert gh.indices.shape == (20, 20)
    clf = KernelKNNClassifier("rbf", n_neighbors=10**9, weights="uniform").fit(X, y)
    with pytest.warns(UserWarning, match="n_neighbors=1000000000 exceeds the 20 structures"):
        proba = clf.predict_proba(X[:3])
    assert np.allclose(proba, 0.5)  # every training structure votes: the class shares
    with pytest.raises(ValueError, match="n_tables=1000000000 exceeds the 20 structures"):
        knn_graph(X, "rbf", k=2, hashing="random-knn", n_tables=10**9)
    with pytest.raises(ValueError, match="block_size"):
        exact_knn_graph(X, "rbf", k=2, block_size=True)


def test_precomputed_gram_with_infinity_names_the_cell():
    X = np.random.default_rng(0).normal(size=(8, 2))
    K = sk.gram("rbf", X)
    K[2, 5] = np.inf
    with pytest.raises(NonFiniteError, match="row 2, column 5 is inf"):
        KernelKNNClassifier("precomputed").fit(K, np.arange(8) % 2)


# -------------------------------------------------------------------- bools
def test_bools_are_not_vectors_nor_numbers():
    for X in (np.ones((3, 2), dtype=bool), [[True, False], [False, True]]):
        for name in ("linear", "rbf", "cosine", "polynomial", "laplacian"):
            with pytest.raises(TypeError, match="got booleans"):
                sk.gram(name, X)
    X = np.ones((2, 2))
    with pytest.raises(ValueError, match="bandwidth must be a positive number, got True"):
        sk.gram("rbf", X, bandwidth=True)
    with pytest.raises(ValueError, match="degree"):
        sk.gram("polynomial", X, degree=True)
    with pytest.raises(ValueError, match="coef0"):
        sk.gram("polynomial", X, coef0=True)
    with pytest.raises(TypeError, match="lam"):
        sk.gram("path", [Path([(None, "a")])], lam=True)
    with pytest.raises(TypeError, match="scale"):
        sk.gram(ScaledKernel(sk.kernel("linear"), True), X)
    with pytest.raises(ValueError, match="block_size"):
        sk.gram("linear", X, block_size=True)
    with pytest.raises(ValueError, match="n_jobs"):
        sk.gram("linear", X, n_jobs=True)


# ------------------------------------------------------------ check_finite
def test_check_finite_names_the_first_bad_entry():
    check_finite(np.ones((3, 3)), "K")
    check_finite(np.ones(3, dtype=int), "counts")
    a = np.ones((3, 4))
    a[1, 2], a[2, 0] = np.nan, np.inf
    with pytest.raises(NonFiniteError, match=r"^K: row 11, column 22 is nan; fix it$") as info:
        check_finite(a, "K", offsets=(10, 20), hint="fix it")
    assert info.value.index == (11, 22)
    assert first_nonfinite(a[2]) == ((0,), np.inf)
    with pytest.raises(NonFiniteError, match=r"^s is -inf \(overflow\)$"):
        check_finite(-np.inf, "s", ())


def test_non_finite_errors_keep_their_position_across_processes():
    import pickle

    err = NonFiniteKernelValueError("k(X[1], X[2]) = nan", (1, 2), float("nan"))
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is NonFiniteKernelValueError and back.index == (1, 2)
    assert str(back) == str(err) and np.isnan(back.value)


def test_rbf_bandwidth_at_the_ends_of_float_range():
    """A huge bandwidth is the all-ones limit (was OverflowError); a tiny one is one clear
    line."""
    X = np.eye(3)
    np.testing.assert_array_equal(sk.gram(sk.kernel("rbf", bandwidth=1e308), X),
                                  np.ones((3, 3)))
    with pytest.raises(ValueError, match=r"RBFKernel.bandwidth = 1e-200 is too small"):
        sk.gram(sk.kernel("rbf", bandwidth=1e-200), X)
