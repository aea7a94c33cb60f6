"""The Hilbert-Schmidt independence criterion (HSIC) and its independence test.

Estimators (``K``, ``L`` the Gram matrices of ``X`` and ``Y``, ``H = I - 11^T/n``):

- ``"biased"``: the V-statistic ``tr(K H L H) / n^2`` (Gretton et al. 2005,
  Eq. 4 up to their ``(n-1)^2``; Gretton et al. 2008; the intuitive
  introduction's Eq. with ``1/n^2``).
- ``"unbiased"``: the U-statistic of Song et al. (2012, Eq. 5)
  ``[tr(K~L~) + 1^T K~ 1 1^T L~ 1 / ((n-1)(n-2)) - 2/(n-2) 1^T K~ L~ 1] / (n(n-3))``
  with ``K~``, ``L~`` the Grams with zeroed diagonals.
- ``"icd"``: ``||(H A)^T B||_F^2 / n^2`` with ``A A^T ~ K``, ``B B^T ~ L`` from
  pivoted incomplete Cholesky (Gretton et al. 2005, Lemma 2; Yokoi et al. 2018,
  Eq. 30), which evaluates only ``(rank + 1) n`` kernel values per side.

The test (Gretton et al. 2008) compares ``n * HSIC_b`` with a two-parameter
gamma law whose mean is ``(tr K / n - mu_x)(tr L / n - mu_y) / n`` (so the
Grams' own diagonals are used; ``k(x, x) = 1`` is not assumed) and whose
variance is Gretton's ``72 (n-4)(n-5) / (n (n-1)(n-2)(n-3))`` times the mean
off-diagonal square of ``(HKH o HLH) / 6``; or uses a permutation test.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from tqdm.auto import tqdm

from structkernels_hsic._kernels import KernelSource, PrecomputedSource, resolve_source
from structkernels_hsic.icd import IncompleteCholesky

__all__ = [
    "HSIC",
    "HSICTestResult",
    "hsic_biased",
    "hsic_unbiased",
    "hsic_icd",
    "gamma_null",
]

ESTIMATORS = ("biased", "unbiased", "icd")


def _center(K: np.ndarray) -> np.ndarray:
    """``H K H`` without forming ``H``."""
    r = K.mean(axis=0)
    return K - r[None, :] - r[:, None] + r.mean()


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
    K = np.asarray(K, dtype=np.float64)
    L = np.asarray(L, dtype=np.float64)
    n = K.shape[0]
    kr, lr = K.sum(axis=1), L.sum(axis=1)
    t = float(np.einsum("ij,ij->", K, L)) - 2.0 / n * float(kr @ lr) + kr.sum() * lr.sum() / n**2
    return float(t / n**2)


def hsic_unbiased(K: np.ndarray, L: np.ndarray) -> float:
    """Unbiased HSIC of Song et al. (2012, Eq. 5); needs ``n >= 4``."""
    K = np.array(K, dtype=np.float64)
    L = np.array(L, dtype=np.float64)
    n = K.shape[0]
    if n < 4:
        raise ValueError(f"the unbiased HSIC needs at least 4 samples, got {n}")
    np.fill_diagonal(K, 0.0)
    np.fill_diagonal(L, 0.0)
    kr, lr = K.sum(axis=1), L.sum(axis=1)
    t = (
        float(np.einsum("ij,ij->", K, L))
        + kr.sum() * lr.sum() / ((n - 1) * (n - 2))
        - 2.0 / (n - 2) * float(kr @ lr)
    )
    return float(t / (n * (n - 3)))


def hsic_icd(A: np.ndarray, B: np.ndarray) -> float:
    """``||(H A)^T B||_F^2 / n^2`` from low-rank factors (Gretton et al. 2005, Lemma 2)."""
    n = A.shape[0]
    Ac = A - A.mean(axis=0)
    M = Ac.T @ B
    return float(np.einsum("ij,ij->", M, M)) / n**2


def _blocked_stats(sx, sy, unbiased: bool, block: int = 2048, progress: bool | None = None):
    """Sums ``<K, L>``, row sums and diagonals over row blocks: O(block n) memory."""
    n = sx.n
    dot = 0.0
    kr = np.empty(n)
    lr = np.empty(n)
    kd = np.empty(n) if unbiased else None
    ld = np.empty(n) if unbiased else None
    starts = range(0, n, block)
    disable = (n * n < 50_000_000) if progress is None else not progress
    for s in tqdm(starts, desc="HSIC blocks", disable=disable, leave=False):
        e = min(s + block, n)
        Kb = sx.rows(s, e)
        Lb = sy.rows(s, e)
        dot += float(np.einsum("ij,ij->", Kb, Lb))
        kr[s:e] = Kb.sum(axis=1)
        lr[s:e] = Lb.sum(axis=1)
        if unbiased:
            idx = np.arange(s, e)
            kd[s:e] = Kb[idx - s, idx]
            ld[s:e] = Lb[idx - s, idx]
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
    if not (mean > 0 and var > 0):
        raise ValueError(
            "the gamma approximation is undefined here (null mean or variance is not positive: "
            f"mean {mean:.3g}, variance {var:.3g}); is one of the Gram matrices constant? "
            "Use method='permutation'"
        )
    shape = mean**2 / var
    scale = var * n / mean
    return float(shape), float(scale), float(mean), float(var)


@dataclass
class HSICTestResult:
    """Outcome of :meth:`HSIC.test`.

    Attributes
    ----------
    statistic : float
        The HSIC estimate (as ``HSIC.statistic_``).
    p_value : float
    method : str
    null_shape, null_scale : float or None
        Gamma parameters of ``n * HSIC`` under independence (``method="gamma"``).
    null_samples : ndarray or None
        Permuted statistics (``method="permutation"``).
    """

    statistic: float
    p_value: float
    method: str
    n_samples: int
    null_shape: float | None = None
    null_scale: float | None = None
    null_samples: np.ndarray | None = None

    def __iter__(self):
        yield self.statistic
        yield self.p_value


def _pair_rank(rank: Any) -> tuple[int | None, int | None]:
    if isinstance(rank, (tuple, list)):
        if len(rank) != 2:
            raise ValueError(f"rank must be an int or a pair (rank_x, rank_y), got {rank!r}")
        return rank[0], rank[1]
    return rank, rank


class HSIC(BaseEstimator):
    """Hilbert-Schmidt independence criterion between paired samples ``X`` and ``Y``.

    Parameters
    ----------
    kernel_x, kernel_y : str, Kernel or "precomputed", default "rbf"
        Registered kernel name, instance, or ``"precomputed"`` (then ``X``/``Y``
        are the Gram matrices, as in scikit-learn).
    estimator : {"biased", "unbiased", "icd"}, default "biased"
    rank : int, None or (int, int), default 100
        Incomplete Cholesky rank (``"icd"``), one for both sides or a pair.
    tol : float, default 1e-12
        Incomplete Cholesky stop: residual trace at most ``tol`` times the trace.
    kernel_x_params, kernel_y_params : dict, optional
        Parameters of kernels given by name; ``{"sigma": "median"}`` sets the RBF
        bandwidth by the median heuristic on that side's data.
    n_jobs : int, default 1
        Workers of the Gram engine for the exact estimators; with ``"icd"``,
        any value but 1 decomposes the two sides in two threads.
    block_size : int or None, default None
        Exact estimators only: accumulate the statistic over row blocks of this
        many rows (memory O(block n), no n x n matrix) instead of building the
        Grams.  None builds the Grams up to 8,192 samples and uses blocks of
        2,048 rows beyond.

    Attributes
    ----------
    statistic_ : float
    n_samples_ : int
    n_kernel_evaluations_ : int
        Kernel evaluations made by the last ``fit`` (both sides).
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
    """

    def __init__(
        self,
        kernel_x: Any = "rbf",
        kernel_y: Any = "rbf",
        estimator: str = "biased",
        rank: Any = 100,
        tol: float = 1e-12,
        kernel_x_params: dict | None = None,
        kernel_y_params: dict | None = None,
        n_jobs: int = 1,
        block_size: int | None = None,
    ):
        self.kernel_x = kernel_x
        self.kernel_y = kernel_y
        self.estimator = estimator
        self.rank = rank
        self.tol = tol
        self.kernel_x_params = kernel_x_params
        self.kernel_y_params = kernel_y_params
        self.n_jobs = n_jobs
        self.block_size = block_size

    # ------------------------------------------------------------ internals
    def _sources(self, X, Y) -> tuple[KernelSource | PrecomputedSource, ...]:
        if self.estimator not in ESTIMATORS:
            raise ValueError(f"estimator must be one of {ESTIMATORS}, got {self.estimator!r}")
        sx = resolve_source(self.kernel_x, self.kernel_x_params, X, name="X", n_jobs=self.n_jobs)
        sy = resolve_source(self.kernel_y, self.kernel_y_params, Y, name="Y", n_jobs=self.n_jobs)
        if sx.n != sy.n:
            raise ValueError(f"X and Y must have the same number of samples, got {sx.n} and {sy.n}")
        if sx.n < 2:
            raise ValueError(f"HSIC needs at least 2 samples, got {sx.n}")
        return sx, sy

    def _factors(self, sx, sy):
        from structkernels_hsic.phsic import _fit_both

        rx, ry = _pair_rank(self.rank)
        self.icd_x_, self.icd_y_ = _fit_both(
            self.n_jobs,
            lambda: IncompleteCholesky(rank=rx, tol=self.tol)._fit_source(sx),
            lambda: IncompleteCholesky(rank=ry, tol=self.tol)._fit_source(sy),
        )
        return self.icd_x_.factor_, self.icd_y_.factor_

    def _use_blocks(self, n: int, precomputed: bool) -> bool:
        if precomputed:
            return False
        return self.block_size is not None or n > 8192

    # ------------------------------------------------------------------ API
    def fit(self, X: Any, Y: Any) -> HSIC:
        """Estimate HSIC between ``X`` and ``Y`` (paired, same length)."""
        sx, sy = self._sources(X, Y)
        n = sx.n
        if self.estimator == "icd":
            A, B = self._factors(sx, sy)
            self.statistic_ = hsic_icd(A, B)
        elif self._use_blocks(n, sx.precomputed or sy.precomputed):
            unbiased = self.estimator == "unbiased"
            sums = _blocked_stats(sx, sy, unbiased, block=self.block_size or 2048)
            self.statistic_ = float(_from_sums(n, *sums, unbiased))
        else:
            K, L = sx.full(), sy.full()
            f = hsic_biased if self.estimator == "biased" else hsic_unbiased
            self.statistic_ = float(f(K, L))
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
            ``n HSIC_b`` under independence (for the ``"biased"`` and ``"icd"``
            estimators; with ``"icd"`` it runs on the low-rank Grams, blockwise).
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
        if self.estimator == "icd":
            A, B = self._factors(sx, sy)
            Ac = A - A.mean(axis=0)
            Bc = B - B.mean(axis=0)
            stat = hsic_icd(A, B)
            if method == "gamma":
                params = _gamma_low_rank(Ac, Bc, A, B)
            else:
                null = _permute_low_rank(Ac, Bc, n_permutations, random_state)
        else:
            K, L = sx.full(), sy.full()
            stat = hsic_biased(K, L) if self.estimator == "biased" else hsic_unbiased(K, L)
            if method == "gamma":
                params = gamma_null(K, L)
            else:
                null = _permute_full(K, L, self.estimator, n_permutations, random_state)
        self.statistic_ = float(stat)
        self.n_samples_ = n
        self.n_kernel_evaluations_ = int(sx.n_evaluations + sy.n_evaluations)
        if method == "gamma":
            shape, scale, _, _ = params
            p = float(stats.gamma.sf(n * stat, shape, scale=scale))
            return HSICTestResult(float(stat), p, method, n, null_shape=shape, null_scale=scale)
        p = float((1 + np.count_nonzero(null >= stat)) / (1 + len(null)))
        return HSICTestResult(float(stat), p, method, n, null_samples=null)


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
