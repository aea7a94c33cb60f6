"""The Hilbert-Schmidt independence criterion (HSIC) and its independence test.

Estimators (``K``, ``L`` the Gram matrices of ``X`` and ``Y``, ``H = I - 11^T/n``):

- ``"biased"``: the V-statistic ``tr(K H L H) / n^2`` (Gretton et al. 2005,
  Eq. 4 up to their ``(n-1)^2``; Gretton et al. 2008; the intuitive
  introduction's Eq. with ``1/n^2``).
- ``"unbiased"``: the U-statistic of Song et al. (2012, Eq. 5)
  ``[tr(K~L~) + 1^T K~ 1 1^T L~ 1 / ((n-1)(n-2)) - 2/(n-2) 1^T K~ L~ 1] / (n(n-3))``
  with ``K~``, ``L~`` the Grams with zeroed diagonals (computed from
  ``<K, L>``, the row sums and the diagonals: no copy of either Gram).
- ``"icd"``: ``||(H A)^T B||_F^2 / n^2`` with ``A A^T ~ K``, ``B B^T ~ L`` from
  pivoted incomplete Cholesky to a tolerance (Gretton et al. 2005, Lemma 2;
  Yokoi et al. 2018, Eq. 30); ``"nystrom"``: the same on Nyström factors.

Error of the low-rank estimators.  With ``E_K = K - A A^T`` and
``E_L = L - B B^T`` positive semi-definite (both factorisations leave a Schur
complement), ``n^2 (HSIC_b - HSIC_lowrank) = tr(H E_K H L) + tr(H A A^T H E_L)``,
a sum of two traces of products of PSD matrices, so

    0 <= HSIC_b - HSIC_lowrank <= [t_K (||HB||_2^2 + t_L) + t_L ||HA||_2^2] / n^2

with ``t_K = tr E_K``, ``t_L = tr E_L`` (``tr(PQ) <= tr(P) lambda_max(Q)`` for PSD
``P``, ``Q``, and ``lambda_max(HLH) <= ||HB||_2^2 + t_L``).  The low-rank
statistic never overestimates; ``error_bound_`` is the right-hand side.

The test (Gretton et al. 2008) compares ``n * HSIC_b`` with a two-parameter
gamma law whose mean is ``(tr K / n - mu_x)(tr L / n - mu_y) / n`` (so the
Grams' own diagonals are used; ``k(x, x) = 1`` is not assumed) and whose
variance is Gretton's ``72 (n-4)(n-5) / (n (n-1)(n-2)(n-3))`` times the mean
off-diagonal square of ``(HKH o HLH) / 6``; or uses a permutation test.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from tqdm.auto import tqdm

from structkernels.engine.parallel import map_tasks
from structkernels.engine.source import KernelSource, PrecomputedSource
from structkernels.utils import StructkernelsWarning, check_finite
from structkernels_hsic._kernels import (
    check_dtype,
    input_tags,
    resolve_source,
    set_n_features,
)
from structkernels_hsic.icd import (
    LANDMARKS,
    IncompleteCholesky,
    centred_cross,
    fit_pair,
    nystrom_factor,
    resolve_ranks,
)

__all__ = [
    "HSIC",
    "HSICTestResult",
    "hsic_biased",
    "hsic_unbiased",
    "hsic_icd",
    "hsic_lowrank_bound",
    "gamma_null",
    "SlowSpectrumWarning",
]

ESTIMATORS = ("biased", "unbiased", "icd", "nystrom")


class SlowSpectrumWarning(StructkernelsWarning):
    """A low-rank factor needed more than half the sample size: the exact estimator is cheaper."""

#: exact HSIC tile side: fastest of 1,024 / 2,048 / 4,096 and of the whole Gram at n = 2,000-8,000
#: (docs/hsic.md); a Gram of at most this many samples is one tile, i.e. computed whole
DEFAULT_BLOCK = 1024


def _center(K: np.ndarray) -> np.ndarray:
    """``H K H`` without forming ``H``."""
    r = K.mean(axis=0)
    return K - r[None, :] - r[:, None] + r.mean()


def _dot(K: np.ndarray, L: np.ndarray) -> float:
    return float(np.einsum("ij,ij->", K, L, dtype=np.float64))


def hsic_biased(K: np.ndarray, L: np.ndarray) -> float:
    """Biased HSIC ``tr(K H L H) / n^2`` from two symmetric Gram matrices, in O(n^2).

    Uses ``tr(KHLH) = <K, L> - 2/n (K1).(L1) + (1^T K 1)(1^T L 1) / n^2``.

    Examples
    --------
    >>> import numpy as np
    >>> K = np.array([[1.0, 0.5], [0.5, 1.0]])
    >>> round(hsic_biased(K, K), 6)
    0.0625
    """
    K = np.asarray(K)
    L = np.asarray(L)
    n = K.shape[0]
    kr, lr = K.sum(axis=1, dtype=np.float64), L.sum(axis=1, dtype=np.float64)
    return float(_from_sums(n, _dot(K, L), kr, lr, None, None, False))


def hsic_unbiased(K: np.ndarray, L: np.ndarray) -> float:
    """Unbiased HSIC of Song et al. (2012, Eq. 5); needs ``n >= 4``.

    Computed from ``<K, L>``, the row sums and the diagonals, so neither Gram
    is copied (``K~ = K - diag K`` is never formed).

    Examples
    --------
    >>> import numpy as np
    >>> K = np.eye(4) + 0.5
    >>> round(hsic_unbiased(K, K), 6)
    0.0
    """
    K = np.asarray(K)
    L = np.asarray(L)
    n = K.shape[0]
    kr, lr = K.sum(axis=1, dtype=np.float64), L.sum(axis=1, dtype=np.float64)
    kd, ld = np.diagonal(K).astype(np.float64), np.diagonal(L).astype(np.float64)
    return float(_from_sums(n, _dot(K, L), kr, lr, kd, ld, True))


def hsic_icd(A: np.ndarray, B: np.ndarray) -> float:
    """``||(H A)^T B||_F^2 / n^2`` from low-rank factors (Gretton et al. 2005, Lemma 2)."""
    n = A.shape[0]
    M = centred_cross(A, A.mean(axis=0), B)
    return _dot(M, M) / n**2


def _spectral_sq(Ac: np.ndarray) -> float:
    """``||Ac||_2^2``: the largest eigenvalue of the small ``Ac^T Ac``."""
    if Ac.shape[1] == 0:
        return 0.0
    from scipy.linalg import eigh
    from threadpoolctl import threadpool_limits

    G = np.asarray(Ac.T @ Ac, dtype=np.float64)
    r = G.shape[0]
    with threadpool_limits(limits=1 if r < 2048 else None, user_api="blas"):  # small: threads only wait
        return float(eigh(G, eigvals_only=True, subset_by_index=[r - 1, r - 1])[0])


def hsic_lowrank_bound(A: np.ndarray, B: np.ndarray, residual_x: float, residual_y: float) -> float:
    """Upper bound on ``HSIC_b - hsic_icd(A, B) >= 0`` from the residual traces.

    ``[t_K (||HB||_2^2 + t_L) + t_L ||HA||_2^2] / n^2`` with ``t_K = tr(K - AA^T)``
    and ``t_L = tr(L - BB^T)`` (module docstring).  Valid whenever both
    residuals are positive semi-definite, as for incomplete Cholesky and Nyström.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.eye(3)[:, :2]
    >>> hsic_lowrank_bound(A, A, 0.0, 0.0)
    0.0
    """
    n = A.shape[0]
    ha = _spectral_sq(A - A.mean(axis=0))
    hb = _spectral_sq(B - B.mean(axis=0))
    return float((residual_x * (hb + residual_y) + residual_y * ha) / n**2)


def finite_statistic(value: float, what: str) -> float:
    """``value``, or a :class:`~structkernels.utils.NonFiniteError` naming ``what``.

    Every Gram value is checked finite where it is computed; a statistic can still
    overflow in its sums when the Gram values are huge (e.g. a linear kernel on
    vectors of norm 1e150).
    """
    check_finite(
        value, what, (),
        hint="the Gram values are too large for its sums: normalise the kernels "
        "(structkernels.Normalized) or scale the input down",
    )
    return value


def _tile_ranges(n: int, block: int) -> list[tuple[int, int]]:
    return [(s, min(s + block, n)) for s in range(0, n, block)]


def _tiled_stats(sx, sy, unbiased: bool, block: int, n_jobs: int = 1, progress: bool | None = None):
    """``<K, L>``, row sums and diagonals over the upper-triangular tiles of both Grams.

    Each tile pair ``(I, J)``, ``I <= J``, is evaluated once (a diagonal tile
    through ``gram_block_symmetric``); an off-diagonal tile adds twice to the
    inner product and its row and column sums to both ranges.  Memory:
    two ``block x block`` tiles per worker; evaluations ``n (n + 1) / 2`` per
    side for ``block >= n``, ``n^2 / 2 + O(n block)`` in general.
    """
    n = sx.n
    ranges = _tile_ranges(n, block)
    pairs = [(i, j) for i in range(len(ranges)) for j in range(i, len(ranges))]

    def run(i: int, j: int):
        a, b = ranges[i], ranges[j]
        Kt, Lt = sx.tile(a, b), sy.tile(a, b)
        dot = _dot(Kt, Lt)
        out = [i, j, dot, Kt.sum(axis=1, dtype=np.float64), Lt.sum(axis=1, dtype=np.float64), None, None, None, None]
        if i == j:
            if unbiased:
                out[7] = np.diagonal(Kt).astype(np.float64)
                out[8] = np.diagonal(Lt).astype(np.float64)
        else:
            out[5] = Kt.sum(axis=0, dtype=np.float64)
            out[6] = Lt.sum(axis=0, dtype=np.float64)
        return out

    disable = (n * n < 50_000_000) if progress is None else not progress
    # tiles in threads (BLAS and compiled kernels release the GIL), results in tile order
    results = map_tasks(lambda ij: run(*ij), pairs, n_jobs=n_jobs, progress=not disable,
                        desc="HSIC tiles", unit="tile")
    dot = 0.0
    kr, lr = np.zeros(n), np.zeros(n)
    kd = np.empty(n) if unbiased else None
    ld = np.empty(n) if unbiased else None
    for i, j, t, kri, lri, kcj, lcj, kdi, ldi in results:
        a, b = ranges[i], ranges[j]
        kr[a[0] : a[1]] += kri
        lr[a[0] : a[1]] += lri
        if i == j:
            dot += t
            if unbiased:
                kd[a[0] : a[1]] = kdi
                ld[a[0] : a[1]] = ldi
        else:
            dot += 2.0 * t
            kr[b[0] : b[1]] += kcj
            lr[b[0] : b[1]] += lcj
    return dot, kr, lr, kd, ld


def _from_sums(n, dot, kr, lr, kd, ld, unbiased: bool) -> float:
    if not unbiased:
        return (dot - 2.0 / n * float(kr @ lr) + kr.sum() * lr.sum() / n**2) / n**2
    if n < 4:
        raise ValueError(f"the unbiased HSIC needs at least 4 samples, got {n}")
    dot_t = dot - float(kd @ ld)
    kr_t, lr_t = kr - kd, lr - ld
    t = dot_t + kr_t.sum() * lr_t.sum() / ((n - 1) * (n - 2)) - 2.0 / (n - 2) * float(kr_t @ lr_t)
    return float(t / (n * (n - 3)))


def gamma_null(K: np.ndarray, L: np.ndarray) -> tuple[float, float, float, float]:
    """Gamma approximation of the null law of ``n * HSIC_b`` (Gretton et al. 2008).

    Returns ``(shape, scale, mean, variance)`` where mean and variance are those
    of ``HSIC_b`` itself.  The mean uses the Grams' own diagonals:
    ``E[HSIC_b] ~ (mean diag K - mu_x)(mean diag L - mu_y) / n`` with ``mu`` the
    mean off-diagonal entry; Gretton's code writes ``(1 + mu_x mu_y - mu_x - mu_y) / n``,
    which is the same when ``k(x, x) = l(y, y) = 1``.
    """
    return _gamma_from_centered(_center(np.asarray(K)), _center(np.asarray(L)), K, L)


def _gamma_from_centered(Kc, Lc, K, L) -> tuple[float, float, float, float]:
    n = Kc.shape[0]
    if n < 6:
        raise ValueError(f"the gamma approximation needs at least 6 samples, got {n}")
    V = (Kc * Lc / 6.0) ** 2
    var = (V.sum() - np.trace(V)) / (n * (n - 1))
    var *= 72.0 * (n - 4) * (n - 5) / (n * (n - 1) * (n - 2) * (n - 3))
    mean = _null_mean(np.diag(K), K.sum(), np.diag(L), L.sum(), n)
    return _gamma_params(mean, var, n)


def _null_mean(dk, sk, dl, sl, n) -> float:
    mu_x = (sk - dk.sum()) / (n * (n - 1))
    mu_y = (sl - dl.sum()) / (n * (n - 1))
    return (dk.mean() - mu_x) * (dl.mean() - mu_y) / n


def _gamma_params(mean: float, var: float, n: int):
    finite_statistic(mean, "HSIC null mean (gamma approximation)")
    finite_statistic(var, "HSIC null variance (gamma approximation)")
    if not (mean > 0 and var > 0):
        raise ValueError(
            "the gamma approximation is undefined here (null mean or variance is not positive: "
            f"mean {mean:.3g}, variance {var:.3g}); is one of the Gram matrices constant? "
            "Use method='permutation'"
        )
    shape = mean**2 / var
    scale = var * n / mean
    return float(shape), float(scale), float(mean), float(var)


@dataclass(repr=False)
class HSICTestResult:
    """Outcome of :meth:`HSIC.test`.

    Attributes
    ----------
    statistic : float
        The HSIC estimate (as ``HSIC.statistic_``).
    p_value : float
    method : str
    n_samples : int
    null_shape, null_scale : float or None
        Gamma parameters of ``n * HSIC`` under independence (``method="gamma"``).
    null_samples : ndarray or None
        Permuted statistics (``method="permutation"``); the repr summarises them.
    error_bound : float or None
        With a low-rank estimator: ``HSIC_b - statistic`` lies in ``[0, error_bound]``.

    Examples
    --------
    >>> import numpy as np
    >>> r = HSICTestResult(0.1, 0.01, "permutation", 50, null_samples=np.linspace(0, 0.05, 1000))
    >>> r
    HSICTestResult(statistic=0.1, p_value=0.01, method='permutation', n_samples=50, null_samples=<1000 values in [0, 0.05], median 0.025>)
    """

    statistic: float
    p_value: float
    method: str
    n_samples: int
    null_shape: float | None = None
    null_scale: float | None = None
    null_samples: np.ndarray | None = field(default=None)
    error_bound: float | None = None

    def __iter__(self):
        yield self.statistic
        yield self.p_value

    def __repr__(self) -> str:
        parts = [
            f"statistic={self.statistic:.6g}",
            f"p_value={self.p_value:.6g}",
            f"method={self.method!r}",
            f"n_samples={self.n_samples}",
        ]
        if self.null_shape is not None:
            parts += [f"null_shape={self.null_shape:.6g}", f"null_scale={self.null_scale:.6g}"]
        if self.null_samples is not None:
            v = np.asarray(self.null_samples)
            parts.append(
                f"null_samples=<{v.size} values in [{v.min():.4g}, {v.max():.4g}], median {np.median(v):.4g}>"
                if v.size
                else "null_samples=<0 values>"
            )
        if self.error_bound is not None:
            parts.append(f"error_bound={self.error_bound:.3g}")
        return f"HSICTestResult({', '.join(parts)})"


class HSIC(BaseEstimator):
    """Hilbert-Schmidt independence criterion between paired samples ``X`` and ``Y``.

    Parameters
    ----------
    kernel_x, kernel_y : str, Kernel or "precomputed", default "rbf"
        Registered kernel name, instance, or ``"precomputed"`` (then ``X``/``Y``
        are the Gram matrices, as in scikit-learn).  A 1-D ``X`` or ``Y`` given
        to a vector kernel is one feature (a column).
    estimator : {"biased", "unbiased", "icd", "nystrom"}, default "biased"
        The exact statistics, or the biased one on low-rank factors:
        incomplete Cholesky to ``tol``, or Nyström with ``max_rank`` landmarks.
    max_rank : int, None or (int, int), default None
        Largest factor rank per side (``"icd"``; None: what ``tol`` needs, memory
        ``n rank``), or the number of landmarks (``"nystrom"``, required).
    tol : float, default 1e-3
        Incomplete Cholesky stop: ``trace(K - A A^T) <= tol trace(K)`` per side.
        Stopped earlier by ``max_rank``, a ``ConvergenceWarning`` states the
        residual reached; ``tol=0`` asks for exactly ``max_rank`` (no warning).
        At the default, the relative error of HSIC was below 1e-3 on RBF data
        and AMR paths (tests); ``error_bound_`` bounds it in every case.
    landmarks : {"leverage", "uniform", "kmeans"}, default "leverage"
        Nyström landmarks (:func:`structkernels_hsic.icd.nystrom_factor`).
    kernel_x_params, kernel_y_params : dict, optional
        Parameters of kernels given by name; ``{"bandwidth": "median"}`` sets the RBF
        bandwidth by the median heuristic on that side's data.
    dtype : np.float64 or np.float32, default np.float64
        Arithmetic of the Gram tiles and factors; float32 input is used as it is.
        Sums are accumulated in float64.
    n_jobs : int, default 1
        Threads over Gram tiles (exact estimators: BLAS and the compiled
        path/tree kernels release the GIL, a pure-Python kernel gains nothing);
        with the low-rank ones, any value but 1 decomposes the two sides in two
        threads (one BLAS thread each).
    block_size : int or None, default None
        Exact estimators: the side of the symmetric Gram tiles (memory
        ``O(block^2)``, never an n x n matrix).  None: 1,024 (a Gram of at
        most 1,024 samples is one tile, i.e. computed whole).
    random_state : int, RandomState or None
        Nyström landmark sampling.
    rank : int, optional
        Deprecated alias of ``max_rank``.

    Attributes
    ----------
    statistic_ : float
    n_samples_ : int
    n_features_in_ : int
        Columns of ``X`` when it is a 2-D array.
    n_kernel_evaluations_ : int
        Kernel evaluations made by the last ``fit`` (both sides).
    rank_ : (int, int)
        Ranks of the two factors (low-rank estimators).
    residual_ : (float, float)
        ``trace(K - A A^T) / trace(K)`` and the same for ``L`` (low-rank estimators).
    error_bound_ : float
        ``0 <= HSIC_b - statistic_ <= error_bound_`` (low-rank estimators; module
        docstring); 0 for the exact ones.
    icd_x_, icd_y_ : IncompleteCholesky
        The factors (``estimator="icd"``).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(200, 1)); y = x + 0.1 * rng.normal(size=(200, 1))
    >>> h = HSIC("rbf", "rbf").fit(x, y)
    >>> h.statistic_ > 0.05
    True
    >>> statistic, p = h.test(x, y, method="gamma")
    >>> p < 1e-6
    True
    >>> icd = HSIC("rbf", "rbf", estimator="icd", tol=1e-4).fit(x, y)
    >>> bool(0 <= h.statistic_ - icd.statistic_ <= icd.error_bound_)
    True
    """

    def __init__(
        self,
        kernel_x: Any = "rbf",
        kernel_y: Any = "rbf",
        estimator: str = "biased",
        max_rank: Any = None,
        tol: float = 1e-3,
        landmarks: str = "leverage",
        kernel_x_params: dict | None = None,
        kernel_y_params: dict | None = None,
        dtype: Any = np.float64,
        n_jobs: int = 1,
        block_size: int | None = None,
        random_state: Any = None,
        rank: Any = "deprecated",
    ):
        self.kernel_x = kernel_x
        self.kernel_y = kernel_y
        self.estimator = estimator
        self.max_rank = max_rank
        self.tol = tol
        self.landmarks = landmarks
        self.kernel_x_params = kernel_x_params
        self.kernel_y_params = kernel_y_params
        self.dtype = dtype
        self.n_jobs = n_jobs
        self.block_size = block_size
        self.random_state = random_state
        self.rank = rank

    # ------------------------------------------------------------ internals
    def _sources(self, X, Y) -> tuple[KernelSource | PrecomputedSource, ...]:
        if self.estimator not in ESTIMATORS:
            raise ValueError(f"estimator must be one of {ESTIMATORS}, got {self.estimator!r}")
        if Y is None:
            raise ValueError("HSIC needs paired samples: fit(X, Y) with Y of the same length as X")
        if self.block_size is not None and (
            not isinstance(self.block_size, (int, np.integer)) or isinstance(self.block_size, bool)
            or self.block_size < 1
        ):
            raise ValueError(f"block_size must be a positive int or None, got {self.block_size!r}")
        dt = check_dtype(self.dtype)
        sx = resolve_source(
            self.kernel_x, self.kernel_x_params, X, name="X", n_jobs=self.n_jobs, dtype=dt, allow_1d=False
        )
        sy = resolve_source(self.kernel_y, self.kernel_y_params, Y, name="Y", n_jobs=self.n_jobs, dtype=dt)
        if sx.n != sy.n:
            raise ValueError(f"X and Y must have the same number of samples, got {sx.n} and {sy.n}")
        if sx.n < 2:
            raise ValueError(f"HSIC needs at least 2 samples, got n_samples={sx.n}")
        set_n_features(self, None if sx.precomputed else sx.X)
        return sx, sy

    def __sklearn_tags__(self):
        return input_tags(super().__sklearn_tags__(), self.kernel_x, self.kernel_x_params)

    def _factors(self, sx, sy):
        rx, ry = resolve_ranks(self.rank, self.max_rank, self.tol)
        if self.estimator == "icd":
            self.icd_x_, self.icd_y_ = fit_pair(
                self.n_jobs,
                lambda: IncompleteCholesky(max_rank=rx, tol=self.tol)._fit_source(sx, name="X"),
                lambda: IncompleteCholesky(max_rank=ry, tol=self.tol)._fit_source(sy, name="Y"),
            )
            fx, fy = self.icd_x_, self.icd_y_
            A, B = fx.factor_, fy.factor_
            slow = [side for side, f in zip("XY", (fx, fy), strict=True) if f.rank_ > f.n_samples_ // 2]
            if slow and self.tol > 0:  # tol=0 asks for a rank, not an accuracy
                warnings.warn(
                    f"incomplete Cholesky of {' and '.join(slow)} needed more than half the sample size "
                    f"(ranks {fx.rank_}, {fy.rank_} of n={fx.n_samples_}): the kernel's spectrum decays "
                    "slowly, and estimator='biased' (exact, n(n+1)/2 evaluations per side, Gram tiles) "
                    "is cheaper here",
                    SlowSpectrumWarning,
                    stacklevel=3,
                )
            tx, ty = fx.residual_trace_, fy.residual_trace_
            self.residual_ = (fx.residual_, fy.residual_)
        else:
            if rx is None or ry is None:
                raise ValueError("estimator='nystrom' needs max_rank (the number of landmarks)")
            if self.landmarks not in LANDMARKS:
                raise ValueError(f"landmarks must be one of {LANDMARKS}, got {self.landmarks!r}")
            rng = check_random_state(self.random_state)
            seeds = rng.randint(2**31 - 1, size=2)
            A, self.landmarks_x_, tx, trx = nystrom_factor(sx, rx, self.landmarks, seeds[0])
            B, self.landmarks_y_, ty, tr_y = nystrom_factor(sy, ry, self.landmarks, seeds[1])
            self.residual_ = (tx / trx if trx > 0 else 0.0, ty / tr_y if tr_y > 0 else 0.0)
            for side, res in zip("XY", self.residual_, strict=True):
                if self.tol > 0 and res > self.tol:
                    warnings.warn(
                        f"Nyström factor of {side} leaves residual trace {res:.3g} of trace(K), "
                        f"above tol={self.tol:g} (raise max_rank, or see error_bound_)",
                        ConvergenceWarning,
                        stacklevel=3,
                    )
        self.rank_ = (int(A.shape[1]), int(B.shape[1]))
        self.error_bound_ = hsic_lowrank_bound(A, B, tx, ty)
        return A, B

    # ------------------------------------------------------------------ API
    def fit(self, X: Any, Y: Any = None) -> HSIC:
        """Estimate HSIC between ``X`` and ``Y`` (paired, same length).

        Parameters
        ----------
        X : structures, array of shape (n,) or (n, d), or a Gram matrix (precomputed)
        Y : the same for the other side (a 1-D label vector is one column)

        Returns
        -------
        self
        """
        sx, sy = self._sources(X, Y)
        n = sx.n
        unbiased = self.estimator == "unbiased"
        if self.estimator in ("icd", "nystrom"):
            A, B = self._factors(sx, sy)
            self.statistic_ = hsic_icd(A, B)
        elif sx.precomputed and sy.precomputed:
            self.statistic_ = float((hsic_unbiased if unbiased else hsic_biased)(sx.K, sy.K))
            self.error_bound_ = 0.0
        else:
            sums = _tiled_stats(sx, sy, unbiased, block=self.block_size or DEFAULT_BLOCK, n_jobs=self.n_jobs)
            self.statistic_ = float(_from_sums(n, *sums, unbiased))
            self.error_bound_ = 0.0
        finite_statistic(self.statistic_, "HSIC statistic")
        self.n_samples_ = n
        self.n_kernel_evaluations_ = int(sx.n_evaluations + sy.n_evaluations)
        return self

    def test(
        self,
        X: Any,
        Y: Any,
        method: str = "gamma",
        n_permutations: int = 1000,
        random_state: Any = None,
    ) -> HSICTestResult:
        """Test independence of ``X`` and ``Y``; returns the statistic and p-value.

        Parameters
        ----------
        method : {"gamma", "permutation"}
            ``"gamma"``: Gretton et al. (2008) two-parameter gamma approximation of
            ``n HSIC_b`` under independence (for the ``"biased"`` and low-rank
            estimators; with those it runs on the low-rank Grams, blockwise).
            ``"permutation"``: the statistic on ``n_permutations`` random
            re-pairings, ``p = (1 + #{perm >= stat}) / (1 + n_permutations)``.
        n_permutations : int, default 1000
        random_state : int, Generator, RandomState or None

        Returns
        -------
        HSICTestResult
            Unpacks as ``statistic, p_value``.
        """
        if method not in ("gamma", "permutation"):
            raise ValueError(f"method must be 'gamma' or 'permutation', got {method!r}")
        if method == "permutation" and (
            not isinstance(n_permutations, (int, np.integer)) or n_permutations < 1
        ):
            raise ValueError(f"n_permutations must be a positive int, got {n_permutations!r}")
        if method == "gamma" and self.estimator == "unbiased":
            raise ValueError(
                "the gamma approximation is for the biased statistic; use estimator='biased' "
                "or method='permutation'"
            )
        sx, sy = self._sources(X, Y)
        n = sx.n
        bound = None
        if self.estimator in ("icd", "nystrom"):
            A, B = self._factors(sx, sy)
            A = np.asarray(A, dtype=np.float64)
            B = np.asarray(B, dtype=np.float64)
            Ac = A - A.mean(axis=0)
            Bc = B - B.mean(axis=0)
            stat = finite_statistic(hsic_icd(A, B), "HSIC statistic")
            bound = self.error_bound_
            if method == "gamma":
                params = _gamma_low_rank(Ac, Bc, A, B)
            else:
                null = _permute_low_rank(Ac, Bc, n_permutations, random_state)
        else:
            K = np.asarray(sx.full(), dtype=np.float64)
            L = np.asarray(sy.full(), dtype=np.float64)
            stat = hsic_biased(K, L) if self.estimator == "biased" else hsic_unbiased(K, L)
            finite_statistic(stat, "HSIC statistic")
            self.error_bound_ = 0.0
            if method == "gamma":
                params = gamma_null(K, L)
            else:
                null = _permute_full(K, L, self.estimator, n_permutations, random_state)
        self.statistic_ = finite_statistic(float(stat), "HSIC statistic")
        self.n_samples_ = n
        self.n_kernel_evaluations_ = int(sx.n_evaluations + sy.n_evaluations)
        if method == "gamma":
            shape, scale, _, _ = params
            finite_statistic(shape, "HSIC gamma null shape")
            finite_statistic(scale, "HSIC gamma null scale")
            p = float(stats.gamma.sf(n * stat, shape, scale=scale))
            return HSICTestResult(
                float(stat), p, method, n, null_shape=shape, null_scale=scale, error_bound=bound
            )
        p = float((1 + np.count_nonzero(null >= stat)) / (1 + len(null)))
        return HSICTestResult(float(stat), p, method, n, null_samples=null, error_bound=bound)


def _perm_range(n_permutations: int, work: float):
    return tqdm(range(n_permutations), desc="permutations", leave=False, disable=work < 5e8)


def _permute_full(K, L, estimator, n_permutations, random_state) -> np.ndarray:
    rng = check_random_state(random_state)
    n = K.shape[0]
    f = hsic_biased if estimator == "biased" else hsic_unbiased
    out = np.empty(n_permutations)
    if estimator == "biased":
        Kc = _center(K)  # tr(Kc P L P^T) / n^2: L's centring is implied by Kc's
        for b in _perm_range(n_permutations, n_permutations * n * n):
            p = rng.permutation(n)
            out[b] = float(np.einsum("ij,ij->", Kc, L[np.ix_(p, p)])) / n**2
        return out
    for b in _perm_range(n_permutations, n_permutations * n * n):
        p = rng.permutation(n)
        out[b] = f(K, L[np.ix_(p, p)])
    return out


def _permute_low_rank(Ac, Bc, n_permutations, random_state) -> np.ndarray:
    rng = check_random_state(random_state)
    n = Ac.shape[0]
    out = np.empty(n_permutations)
    for b in _perm_range(n_permutations, n_permutations * n * Ac.shape[1] * Bc.shape[1]):
        M = Ac.T @ Bc[rng.permutation(n)]
        out[b] = float(np.einsum("ij,ij->", M, M)) / n**2
    return out


def _gamma_low_rank(Ac, Bc, A, B, block: int = 1024):
    """Gamma null parameters from low-rank factors, blockwise (no n x n matrix kept)."""
    n = Ac.shape[0]
    if n < 6:
        raise ValueError(f"the gamma approximation needs at least 6 samples, got {n}")
    total = 0.0
    for s in range(0, n, block):
        e = min(s + block, n)
        V = ((Ac[s:e] @ Ac.T) * (Bc[s:e] @ Bc.T) / 6.0) ** 2
        idx = np.arange(s, e)
        total += V.sum() - V[idx - s, idx].sum()
    var = total / (n * (n - 1))
    var *= 72.0 * (n - 4) * (n - 5) / (n * (n - 1) * (n - 2) * (n - 3))
    dk = np.einsum("ij,ij->i", A, A)
    dl = np.einsum("ij,ij->i", B, B)
    sa, sb = A.sum(axis=0), B.sum(axis=0)
    mean = _null_mean(dk, float(sa @ sa), dl, float(sb @ sb), n)
    return _gamma_params(mean, var, n)
