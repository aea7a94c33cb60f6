"""Low-rank HSIC/PHSIC to a stated accuracy: tolerance, warning, residuals, error bound, dtypes."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks
from structkernels_hsic import (
    HSIC,
    PHSIC,
    HSICTestResult,
    IncompleteCholesky,
    hsic_biased,
    hsic_unbiased,
)
from structkernels_hsic._kernels import kernel_source
from structkernels_hsic.hsic import SlowSpectrumWarning
from structkernels_hsic.phsic import _feature_map

import structkernels as sk
from structkernels import Kernel


class Opaque(Kernel):
    """The same kernel seen through the generic ``gram_block`` path (no specialised columns)."""

    def __init__(self, kernel=None):
        self.kernel = kernel

    def check_input(self, X):
        return self.kernel.check_input(X)

    def gram_block(self, X, Y):
        return self.kernel.gram_block(X, Y)

    def diag_block(self, X):
        return self.kernel.diag_block(X)


def _gaussian(n: int, d: int = 10, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    y = np.sin(x) + 0.5 * rng.normal(size=(n, d))
    return x, y


MEDIAN = {"bandwidth": "median"}


def _amr_paths(n: int):
    """``n`` paths of the shipped Bio-AMR interaction data (seeded), with one-hot labels."""
    from structkernels.datasets import load_interactions

    try:
        data = load_interactions()
    except FileNotFoundError as exc:
        pytest.skip(f"the shipped interaction dataset is not built here ({exc})")
    labels = np.asarray([int(v) for v in data.labels])
    idx = np.sort(np.random.default_rng(0).choice(len(labels), n, replace=False))
    return [data.paths[i] for i in idx], np.eye(2)[labels[idx]]


def _synthetic_paths(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    verbs = ["bind-01", "inhibit-01", "activate-01", "phosphorylate-01", "express-01"]
    ents = ["protein", "enzyme", "gene", "small-molecule", "cell"]
    edges = ["ARG0", "ARG1", "ARG2", "mod"]
    paths, labels = [], []
    for _ in range(n):
        v = int(rng.integers(len(verbs)))
        steps = [(None, verbs[v])]
        for _ in range(int(rng.integers(1, 5))):
            steps.append((edges[int(rng.integers(len(edges)))], ents[int(rng.integers(len(ents)))]))
        paths.append(sk.Path(steps))
        labels.append(v % 2 if rng.random() < 0.8 else 1 - v % 2)
    return paths, np.eye(2)[labels]


# ---------------------------------------------------------------- tolerance


@pytest.mark.parametrize("tol", [1e-1, 1e-2, 1e-3, 1e-5])
def test_icd_stops_at_the_tolerance_rbf(tol):
    x, _ = _gaussian(400, d=5)
    k = sk.kernel("rbf", bandwidth=3.0)
    icd = IncompleteCholesky(k, tol=tol).fit(x)
    K = sk.gram(k, x)
    R = K - icd.factor_ @ icd.factor_.T
    assert icd.residual_ <= tol
    assert np.trace(R) / np.trace(K) == pytest.approx(icd.residual_, abs=1e-10)
    assert icd.n_kernel_evaluations_ == len(x) + icd.rank_ * len(x)
    if icd.rank_ > 1:  # one pivot fewer would not have met the tolerance: it stops at the first rank that does
        fewer = IncompleteCholesky(k, max_rank=icd.rank_ - 1, tol=0.0).fit(x)
        assert fewer.residual_ > tol


@pytest.mark.parametrize("tol", [1e-2, 1e-3])
def test_icd_stops_at_the_tolerance_path_kernel(tol):
    paths, _ = _synthetic_paths(150)
    k = sk.Normalized(sk.kernel("path", lam=0.8))
    icd = IncompleteCholesky(k, tol=tol).fit(paths)
    K = sk.gram(k, paths)
    R = K - icd.factor_ @ icd.factor_.T
    assert icd.residual_ <= tol
    assert np.trace(R) / np.trace(K) == pytest.approx(icd.residual_, abs=1e-10)
    assert np.linalg.eigvalsh((R + R.T) / 2).min() > -1e-8


def test_warning_when_max_rank_stops_first_and_none_with_tol_zero():
    x, y = _gaussian(300, d=5)
    with pytest.warns(ConvergenceWarning, match=r"max_rank=5 with residual trace 0\.\d+"):
        h = HSIC("rbf", "rbf", estimator="icd", max_rank=5, kernel_x_params=MEDIAN).fit(x, y)
    assert h.rank_ == (5, 5)
    assert all(r > h.tol for r in h.residual_)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        HSIC("rbf", "rbf", estimator="icd", max_rank=5, tol=0).fit(x, y)  # a fixed rank asked for
        HSIC("rbf", "rbf", estimator="icd", max_rank=500).fit(x, y)  # tol met first
    with pytest.warns(ConvergenceWarning, match="incomplete Cholesky of Y"):
        m = PHSIC("rbf", "rbf", estimator="icd", max_rank=(300, 4)).fit(x, y)
    assert m.rank_[1] == 4 and m.residual_[1] > 1e-3 and m.residual_[0] <= 1e-3


def test_phsic_icd_to_tolerance_exposes_rank_and_residual():
    x, y = _gaussian(300, d=3)
    m = PHSIC("rbf", "rbf", estimator="icd", tol=1e-4).fit(x, y)
    assert all(r <= 1e-4 for r in m.residual_)
    assert m.rank_ == (m.icd_x_.rank_, m.icd_y_.rank_)
    naive = PHSIC("rbf", "rbf", estimator="naive").fit(x, y).score(x[:20], y[:20])
    assert np.abs(m.score(x[:20], y[:20]) - naive).max() < 1e-2 * np.abs(naive).max()


def test_slow_spectrum_warning_only_above_half_the_sample_size():
    x, y = _gaussian(300, d=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SlowSpectrumWarning)
        h = HSIC("rbf", "rbf", estimator="icd", kernel_x_params=MEDIAN, kernel_y_params=MEDIAN).fit(x, y)
    assert max(h.rank_) <= 150
    with pytest.warns(SlowSpectrumWarning, match="estimator='biased'"):
        HSIC("rbf", "rbf", estimator="icd", kernel_x_params={"sigma": 0.05}).fit(x, y)


def test_relative_error_at_default_tol_gaussian_d10():
    x, y = _gaussian(2000, d=10)
    exact = HSIC("rbf", "rbf", kernel_x_params=MEDIAN, kernel_y_params=MEDIAN).fit(x, y).statistic_
    icd = HSIC("rbf", "rbf", estimator="icd", kernel_x_params=MEDIAN, kernel_y_params=MEDIAN).fit(x, y)
    assert abs(icd.statistic_ - exact) / exact <= 1e-2
    assert all(r <= 1e-3 for r in icd.residual_)
    assert 0 <= exact - icd.statistic_ <= icd.error_bound_
    n = len(x)
    assert icd.n_kernel_evaluations_ == 2 * n + sum(icd.rank_) * n  # each column once


def test_relative_error_at_default_tol_amr_paths():
    paths, Y = _amr_paths(2000)
    k = sk.Normalized(sk.kernel("path", lam=0.8))
    exact = HSIC(k, "linear").fit(paths, Y).statistic_
    with pytest.warns(SlowSpectrumWarning, match="decays slowly"):  # the path kernel's flat spectrum
        icd = HSIC(k, "linear", estimator="icd").fit(paths, Y)
    assert abs(icd.statistic_ - exact) / exact <= 1e-2
    assert icd.residual_[0] <= 1e-3
    assert 0 <= exact - icd.statistic_ <= icd.error_bound_
    assert icd.icd_x_.n_kernel_evaluations_ <= len(paths) + icd.rank_[0] * len(paths)


# ---------------------------------------------------------------- error bound


@pytest.mark.parametrize("rank", [2, 8, 30, 120])
def test_error_bound_holds_rbf(rank):
    x, y = _gaussian(250, d=4, seed=rank)
    exact = HSIC("rbf", "rbf", kernel_x_params=MEDIAN, kernel_y_params=MEDIAN).fit(x, y).statistic_
    h = HSIC("rbf", "rbf", estimator="icd", max_rank=rank, tol=0,
             kernel_x_params=MEDIAN, kernel_y_params=MEDIAN).fit(x, y)
    assert -1e-12 <= exact - h.statistic_ <= h.error_bound_ * (1 + 1e-9) + 1e-15


@pytest.mark.parametrize("landmarks", ["uniform", "leverage", "kmeans"])
def test_error_bound_holds_nystrom(landmarks):
    x, y = _gaussian(300, d=3, seed=1)
    exact = HSIC("rbf", "rbf", kernel_x_params=MEDIAN, kernel_y_params=MEDIAN).fit(x, y).statistic_
    h = HSIC("rbf", "rbf", estimator="nystrom", max_rank=40, landmarks=landmarks, random_state=0, tol=0,
             kernel_x_params=MEDIAN, kernel_y_params=MEDIAN).fit(x, y)
    assert h.rank_[0] <= 40
    assert -1e-10 <= exact - h.statistic_ <= h.error_bound_ * (1 + 1e-9) + 1e-12
    again = HSIC(**h.get_params()).fit(x, y)
    assert again.statistic_ == h.statistic_  # seeded


@pytest.mark.parametrize("rank", [5, 40, 120])
def test_error_bound_holds_path_kernel(rank):
    paths, Y = _synthetic_paths(200, seed=rank)
    k = sk.Normalized(sk.kernel("path", lam=0.8))
    exact = HSIC(k, "linear").fit(paths, Y).statistic_
    for est in ("icd", "nystrom"):
        h = HSIC(k, "linear", estimator=est, max_rank=rank, tol=0, random_state=0).fit(paths, Y)
        assert -1e-12 <= exact - h.statistic_ <= h.error_bound_ * (1 + 1e-9) + 1e-15, est


def test_kmeans_landmarks_refused_for_structures():
    paths, Y = _synthetic_paths(30)
    with pytest.raises(ValueError, match="kmeans.*needs vectors"):
        HSIC("path", "linear", estimator="nystrom", max_rank=5, landmarks="kmeans").fit(paths, Y)


# ---------------------------------------------------------------- exact paths


def test_unbiased_equals_definition_without_copying():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    K = sk.gram("rbf", X)
    L = sk.gram("linear", np.tanh(X))
    Kc, Lc = K.copy(), L.copy()
    n = len(K)
    Kt, Lt = K - np.diag(np.diag(K)), L - np.diag(np.diag(L))
    one = np.ones(n)
    want = (np.trace(Kt @ Lt) + (one @ Kt @ one) * (one @ Lt @ one) / ((n - 1) * (n - 2))
            - 2.0 / (n - 2) * (one @ Kt @ Lt @ one)) / (n * (n - 3))
    assert hsic_unbiased(K, L) == pytest.approx(want, rel=1e-12)
    np.testing.assert_array_equal(K, Kc)  # inputs untouched
    np.testing.assert_array_equal(L, Lc)


@pytest.mark.parametrize("estimator", ["biased", "unbiased"])
@pytest.mark.parametrize("block", [1, 7, 40, 100])
def test_tiled_exact_equals_full(estimator, block):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3))
    Y = X[:, :1] ** 2 + 0.1 * rng.normal(size=(40, 1))
    K, L = sk.gram("rbf", X), sk.gram("rbf", Y)
    want = (hsic_biased if estimator == "biased" else hsic_unbiased)(K, L)
    h = HSIC(estimator=estimator, block_size=block).fit(X, Y)
    assert h.statistic_ == pytest.approx(want, rel=1e-12)
    two = HSIC(estimator=estimator, block_size=block, n_jobs=2).fit(X, Y)
    assert two.statistic_ == pytest.approx(want, rel=1e-12)


def test_tiled_exact_path_kernel_evaluates_each_pair_once():
    paths, Y = _synthetic_paths(60)
    k = sk.kernel("path", lam=0.8)
    K = sk.gram(k, paths)
    h = HSIC(k, "linear", block_size=16).fit(paths, Y)
    assert h.statistic_ == pytest.approx(hsic_biased(K, Y @ Y.T), rel=1e-12)
    n, b = 60, 16
    tiles_diag = sum(m * (m + 1) // 2 for m in (16, 16, 16, 12))
    off = (n * n - sum(m * m for m in (16, 16, 16, 12))) // 2
    assert h.n_kernel_evaluations_ == 2 * (tiles_diag + off)
    assert b < n


# ---------------------------------------------------------------- dtypes and columns


@pytest.mark.parametrize("name", ["rbf", "cosine", "linear"])
def test_specialised_columns_equal_the_generic_ones(name):
    x, _ = _gaussian(200, d=6)
    k = sk.kernel(name, bandwidth=2.0) if name == "rbf" else sk.kernel(name)
    fast = IncompleteCholesky(k, max_rank=25, tol=0).fit(x)
    slow = IncompleteCholesky(Opaque(k), max_rank=25, tol=0).fit(x)
    np.testing.assert_array_equal(fast.pivots_, slow.pivots_)
    np.testing.assert_allclose(fast.factor_, slow.factor_, atol=1e-10)
    # the fixed-rank RBF path needs no kernel value in a pivot's row after its column
    assert fast.n_kernel_evaluations_ <= slow.n_kernel_evaluations_ == len(x) * (1 + fast.rank_)


def test_float32_end_to_end():
    x, y = _gaussian(600, d=8)
    x32, y32 = x.astype(np.float32), y.astype(np.float32)
    src = kernel_source(sk.kernel("rbf"), x32, dtype=np.float32)
    assert src.X is x32  # validated, not converted
    assert src.columns([3]).dtype == np.float32
    for est in ("biased", "unbiased", "icd"):
        a = HSIC("rbf", "rbf", estimator=est, kernel_x_params=MEDIAN, kernel_y_params=MEDIAN).fit(x, y)
        b = HSIC("rbf", "rbf", estimator=est, dtype=np.float32,
                 kernel_x_params=MEDIAN, kernel_y_params=MEDIAN).fit(x32, y32)
        assert b.statistic_ == pytest.approx(a.statistic_, rel=1e-4), est
    for kernel, est in (("cosine", "feature"), ("linear", "feature"), ("rbf", "icd")):
        kw = {"max_rank": 50, "tol": 0} if est == "icd" else {}
        f64 = PHSIC(kernel, kernel, estimator=est, **kw).fit(x, y)
        f32 = PHSIC(kernel, kernel, estimator=est, dtype=np.float32, **kw).fit(x32, y32)
        assert f32.cov_.dtype == np.float32
        s64, s32 = f64.score(x, y), f32.score(x32, y32)
        scale = np.abs(s64).max()
        assert np.abs(s32 - s64).max() <= 1e-4 * scale, (kernel, est)
    lin = sk.kernel("linear")
    assert np.shares_memory(_feature_map(lin, x32, np.float32)[0], x32)
    assert np.shares_memory(_feature_map(sk.kernel("cosine"), x32, np.float32)[0], x32)
    with pytest.raises(ValueError, match="dtype must be"):
        HSIC(dtype=np.int32).fit(x, y)


# ---------------------------------------------------------------- scikit-learn conventions


def test_one_dimensional_y_is_one_column():
    x, _ = _gaussian(100, d=2)
    y = (x[:, 0] > 0).astype(int)
    a = HSIC("linear", "linear").fit(x, y).statistic_
    b = HSIC("linear", "linear").fit(x, y[:, None].astype(float)).statistic_
    assert a == pytest.approx(b, rel=1e-12) and a > 0
    with pytest.raises(ValueError, match="Expected 2D array"):
        HSIC().fit(x[:, 0], y)


@parametrize_with_checks([HSIC(), HSIC(estimator="unbiased"), HSIC(estimator="icd")])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_permutation_result_repr_is_short():
    x, y = _gaussian(60, d=2)
    res = HSIC().test(x, y, method="permutation", n_permutations=1000, random_state=0)
    text = repr(res)
    assert len(text) < 300 and "<1000 values" in text
    assert isinstance(res, HSICTestResult) and len(res.null_samples) == 1000


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("as_f32", [False, True])
@pytest.mark.parametrize(("n", "rank", "tol"), [(300, 40, 0.0), (400, None, 1e-4), (2_100, 30, 0.0)])
def test_icd_fused_rbf_matches_the_generic_loop(monkeypatch, parallel, as_f32, n, rank, tol):
    """The fused RBF pass (float64, or a float32-held copy of float32 numbers) gives the generic
    loop's pivots, factor (to round-off), residual and evaluation count."""
    from structkernels_hsic import icd as icd_mod

    monkeypatch.setattr(icd_mod, "_PARALLEL_MIN", 0 if parallel else 10**18)
    monkeypatch.setattr(icd_mod, "_lazy_ok", lambda n, r_max, tol: False)  # the per-column pass
    X = np.random.default_rng(n).normal(size=(n, 7)) * 2.0
    if as_f32:
        X = X.astype(np.float32).astype(np.float64)
    k = sk.kernel("rbf", bandwidth=1.3)
    fused = kernel_source(k, X)
    assert icd_mod._fused_rbf(fused) is not None
    assert (icd_mod._fused_rbf(fused)[0].dtype == np.float32) == as_f32
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        A1, p1, r1, t1 = icd_mod.icd_factor(fused, rank, tol)
        monkeypatch.setattr(icd_mod, "_fused_rbf", lambda source: None)
        plain = kernel_source(k, X)
        A2, p2, r2, t2 = icd_mod.icd_factor(plain, rank, tol)
    assert A1.flags.c_contiguous and A2.flags.f_contiguous and A1.shape == A2.shape
    np.testing.assert_array_equal(p1, p2)
    assert np.abs(A1 - A2).max() <= 1e-12
    assert r1 == pytest.approx(r2, rel=1e-9, abs=1e-12) and t1 == t2
    assert fused.n_evaluations == plain.n_evaluations == n + A1.shape[1] * n
    assert np.all(np.triu(A1[p1], 1) == 0.0)  # exact zeros on earlier pivots


def _icd_by_definition(K: np.ndarray, max_rank: int) -> tuple[np.ndarray, list[int]]:
    """Pivoted incomplete Cholesky straight from its definition, on the whole Gram matrix."""
    n = len(K)
    d = np.diag(K).astype(np.float64)
    floor = 1e-14 * d.max()
    A = np.zeros((n, max_rank))
    pivots: list[int] = []
    for j in range(max_rank):
        p = int(np.argmax(d))  # first index among ties
        if d[p] <= floor:
            break
        A[p, j] = np.sqrt(d[p])
        rest = np.setdiff1d(np.arange(n), pivots + [p])
        A[rest, j] = (K[rest, p] - A[rest, :j] @ A[p, :j]) / A[p, j]
        d[rest] = np.maximum(d[rest] - A[rest, j] ** 2, 0.0)
        d[p] = 0.0
        pivots.append(p)
    return A[:, : len(pivots)], pivots


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("as_f32", [False, True])
@pytest.mark.parametrize(("n", "dim", "rank"), [(300, 7, 40), (1_500, 30, 60), (200, 3, 30), (120, 5, 3)])
def test_icd_lazy_pivots_equal_the_definition(monkeypatch, parallel, as_f32, n, dim, rank):
    """Fixed rank (tol = 0): the lazily searched pivots and the completed factor are those of
    the by-definition decomposition and of the per-column pass; fewer than n + rank n evaluations."""
    from structkernels_hsic import icd as icd_mod

    monkeypatch.setattr(icd_mod, "_PARALLEL_MIN", 0 if parallel else 10**18)
    X = np.random.default_rng(n + dim).normal(size=(n, dim))
    if as_f32:
        X = X.astype(np.float32).astype(np.float64)
    k = sk.kernel("rbf", bandwidth=0.6 * np.sqrt(dim))
    assert icd_mod._lazy_ok(n, rank, 0.0) and not icd_mod._lazy_ok(n, rank, 1e-3)
    lazy = kernel_source(k, X)
    A, piv, res, tr = icd_mod.icd_factor(lazy, rank, 0.0)
    r = A.shape[1]
    want, want_piv = _icd_by_definition(sk.gram(k, X), rank)
    np.testing.assert_array_equal(piv, want_piv)
    assert A.flags.c_contiguous and A.shape == want.shape
    assert np.abs(A - want).max() <= 1e-12
    assert np.all(np.triu(A[piv], 1) == 0.0)  # exact zeros on earlier pivots
    assert res == pytest.approx(np.trace(sk.gram(k, X)) - np.sum(A * A), rel=1e-9, abs=1e-9)
    # each entry once; a pivot's row needs no kernel value after its own column
    assert lazy.n_evaluations == n + (n - r) * r + r * (r - 1) // 2 <= n + r * n
    monkeypatch.setattr(icd_mod, "_lazy_ok", lambda n, r_max, tol: False)
    A2, piv2, res2, tr2 = icd_mod.icd_factor(kernel_source(k, X), rank, 0.0)
    np.testing.assert_array_equal(piv, piv2)
    assert np.abs(A - A2).max() <= 1e-12 and res == pytest.approx(res2, rel=1e-9, abs=1e-12) and tr == tr2


@pytest.mark.parametrize("distinct", [3, 4, 9])
def test_icd_lazy_ties_and_early_stop_on_repeated_points(distinct):
    """Repeated points: equal residuals (ties to the first index), and the search stops at the
    numerical rank (the largest residual at the floor; during the first whole passes or in
    the heap search) with every row completed."""
    from structkernels_hsic import icd as icd_mod

    base = np.random.default_rng(3).normal(size=(distinct, 5))
    X = base[np.random.default_rng(4).integers(0, distinct, size=120)]
    k = sk.kernel("rbf", bandwidth=2.0)
    src = kernel_source(k, X)
    A, piv, res, _ = icd_mod.icd_factor(src, 30, 0.0)
    want, want_piv = _icd_by_definition(sk.gram(k, X), 30)
    assert A.shape[1] == len(want_piv) == len(np.unique(X, axis=0))
    np.testing.assert_array_equal(piv, want_piv)
    assert np.abs(A - want).max() <= 1e-12
    assert res <= 1e-12 * len(X)
    np.testing.assert_allclose(A @ A.T, sk.gram(k, X), atol=1e-12)


def test_parallel_and_serial_completions_have_their_own_cache_entries():
    from structkernels_hsic import icd as icd_mod

    par, seq = icd_mod.rbf_complete_par.py_func, icd_mod.rbf_complete_seq.py_func
    assert par.__qualname__ != seq.__qualname__ and par.__code__ is seq.__code__


def test_parallel_and_serial_steps_have_their_own_cache_entries():
    from structkernels_hsic import icd as icd_mod

    # numba's on-disk cache is keyed by qualified name and line: one name for both variants
    # made the parallel dispatcher load the serial machine code (one core)
    par, seq = icd_mod.rbf_step_par.py_func, icd_mod.rbf_step_seq.py_func
    assert par.__qualname__ != seq.__qualname__
    assert par.__code__ is seq.__code__  # one body, two compilations


def test_float32_copy_only_when_every_value_is_a_float32_number():
    from structkernels_hsic import icd as icd_mod

    X = np.random.default_rng(0).normal(size=(50, 4)).astype(np.float32).astype(np.float64)
    X32 = icd_mod.float32_exact(X)
    assert X32 is not None and X32.dtype == np.float32
    np.testing.assert_array_equal(X32.astype(np.float64), X)
    X[37, 2] += 1e-12  # first row still float32 numbers, a later one not
    assert icd_mod.float32_exact(X) is None


@pytest.mark.parametrize("ranks", [(7, 5), (600, 3)])
def test_centred_cross_equals_its_definition_and_restores_blas_threads(ranks):
    from structkernels_hsic.icd import centred_cross
    from threadpoolctl import threadpool_info

    rng = np.random.default_rng(1)
    A, B = rng.normal(size=(900, ranks[0])), rng.normal(size=(900, ranks[1]))
    before = [i["num_threads"] for i in threadpool_info()]
    got = centred_cross(A, A.mean(axis=0), B)
    np.testing.assert_allclose(got, (A - A.mean(axis=0)).T @ B, rtol=1e-12, atol=1e-10)
    assert [i["num_threads"] for i in threadpool_info()] == before
