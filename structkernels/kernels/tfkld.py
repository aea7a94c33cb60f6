"""TF-KLD latent vectors of sentence pairs and their kernel (Ji & Eisenstein, EMNLP 2013).

Ji & Eisenstein, "Discriminative Improvements to Distributional Sentence Similarity"
(EMNLP 2013), Sec. 3: each sentence is a vector of n-gram counts; each feature ``k`` is
reweighted by how well its sharing tells paraphrases from non-paraphrases,

    p_k = P(k in s1 | k in s2, r = 1),   q_k = P(k in s1 | k in s2, r = 0),
    w_k = KL(p_k || q_k) = p_k log(p_k / q_k) + (1 - p_k) log((1 - p_k) / (1 - q_k)),

the reweighted count matrix of the training sentences is factorised to a few latent
dimensions, and a pair ``(s, t)`` with latent vectors ``u``, ``v`` is the feature vector
``[u + v, |u - v|]``.

Conventions here:

* ``p_k`` is estimated in both directions at once: among the pairs of label ``r`` the
  occurrences of ``k`` on either side, the share whose other side has ``k`` too,
  ``2 n_both / (n_s + n_t)``, smoothed towards the same share over all features,
  ``(2 n_both + alpha * p0) / (n_s + n_t + alpha)`` (rare features get a weight near 0).
* The factorisation is a truncated SVD (:class:`sklearn.decomposition.TruncatedSVD`) of
  the weighted training matrix; test sentences are projected, never fitted.
* Everything is learned from the pairs given to ``fit`` (the training split): the
  vocabulary, the weights and the latent basis.

Examples
--------
>>> X = [(("a", "cat", "sat"), ("a", "cat", "sits")), (("dogs", "bark"), ("cats", "mew")),
...      (("the", "cat"), ("a", "cat")), (("big", "dog"), ("small", "bird"))]
>>> tf = TfKld(n_components=2, min_df=1).fit(X, [1, 0, 1, 0])
>>> tf.transform(X).shape
(4, 4)
>>> k = TfKldKernel(n_components=2, min_df=1).fit(X, [1, 0, 1, 0])
>>> k(X).shape
(4, 4)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.decomposition import TruncatedSVD
from sklearn.exceptions import NotFittedError

from structkernels.kernels.base import Kernel
from structkernels.kernels.srk.common import Rewriting, check_rewritings

__all__ = ["TfKld", "TfKldKernel", "kld_weights", "ngram_features"]


def ngram_features(tokens: Sequence[str], ngram_max: int = 2) -> list[str]:
    """The 1..``ngram_max``-grams of a token sequence, as space-joined strings.

    >>> ngram_features(("a", "b", "c"))
    ['a', 'b', 'c', 'a b', 'b c']
    """
    out = list(tokens)
    for n in range(2, ngram_max + 1):
        out += [" ".join(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
    return out


def kld_weights(S: sp.spmatrix, T: sp.spmatrix, y: Any, alpha: float = 5.0) -> np.ndarray:
    """TF-KLD weight of every column: ``KL(p_k || q_k)`` of Bernoulli distributions.

    Parameters
    ----------
    S, T : sparse matrices (n_pairs, n_features)
        Counts of the first and the second sentence of each pair.
    y : array (n_pairs,)
        1 = paraphrase, 0 = not; both must occur.
    alpha : float
        Smoothing strength towards the share over all features.

    Examples
    --------
    >>> S = sp.csr_matrix([[1, 1], [1, 0], [0, 1]]); T = sp.csr_matrix([[1, 0], [1, 1], [0, 1]])
    >>> kld_weights(S, T, [1, 0, 0], alpha=1.0).round(3).tolist()
    [0.013, 0.285]
    """
    y = np.asarray(y)
    if not (y == 1).any() or not (y == 0).any():
        raise ValueError("kld_weights needs pairs of both labels (0 and 1)")
    a, b = (S > 0).astype(np.float64), (T > 0).astype(np.float64)
    both = a.multiply(b).tocsr()
    share = []
    for label in (1, 0):
        m = y == label
        n_both = 2.0 * np.asarray(both[m].sum(0)).ravel()
        n_occ = np.asarray(a[m].sum(0)).ravel() + np.asarray(b[m].sum(0)).ravel()
        p0 = n_both.sum() / max(n_occ.sum(), 1.0)
        share.append((n_both + alpha * p0) / (n_occ + alpha))
    p, q = (np.clip(s, 1e-12, 1 - 1e-12) for s in share)
    return p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q))


class TfKld(TransformerMixin, BaseEstimator):
    """TF-KLD pair features ``[u + v, |u - v|]`` (Ji & Eisenstein 2013, Sec. 3).

    Parameters
    ----------
    n_components : int
        Latent dimensions of each sentence.
    ngram_max : int
        Features are the 1..``ngram_max``-grams of the tokens.
    min_df : int
        Keep the n-grams found in at least this many training sentences.
    alpha : float
        Smoothing of the KL weights (see :func:`kld_weights`).
    random_state : int
        Seed of the randomised SVD.

    Attributes
    ----------
    vocabulary_ : dict of str to int
    weights_ : ndarray (n_features,)
    svd_ : TruncatedSVD

    Examples
    --------
    >>> X = [(("a", "b"), ("a", "b")), (("a", "c"), ("d", "e")), (("b", "c"), ("b", "c")),
    ...      (("c", "d"), ("e", "a"))]
    >>> TfKld(n_components=2, min_df=1).fit_transform(X, [1, 0, 1, 0]).shape
    (4, 4)
    """

    def __init__(self, n_components: int = 100, ngram_max: int = 2, min_df: int = 2,
                 alpha: float = 5.0, random_state: int = 0):
        self.n_components = n_components
        self.ngram_max = ngram_max
        self.min_df = min_df
        self.alpha = alpha
        self.random_state = random_state

    def _counts(self, sents: list[list[str]]) -> sp.csr_matrix:
        rows, cols, vals = [], [], []
        for i, s in enumerate(sents):
            for w, c in Counter(s).items():
                j = self.vocabulary_.get(w)
                if j is not None:
                    rows.append(i)
                    cols.append(j)
                    vals.append(c)
        return sp.csr_matrix((vals, (rows, cols)), shape=(len(sents), len(self.vocabulary_)),
                             dtype=np.float64)

    def _sides(self, X: Any) -> tuple[list[list[str]], list[list[str]]]:
        X = check_rewritings(X, "TfKld")
        return ([ngram_features(s, self.ngram_max) for s, _ in X],
                [ngram_features(t, self.ngram_max) for _, t in X])

    def fit(self, X: Any, y: Any) -> TfKld:
        """Learn the vocabulary, the KL weights and the latent basis from ``(X, y)``."""
        if not (isinstance(self.n_components, int) and self.n_components >= 1):
            raise ValueError(f"TfKld.n_components must be an int >= 1, got {self.n_components!r}")
        if not self.alpha > 0:
            raise ValueError(f"TfKld.alpha must be > 0, got {self.alpha!r}")
        S, T = self._sides(X)
        y = np.asarray(y)
        if len(y) != len(S):
            raise ValueError(f"TfKld.fit: {len(S)} pairs but {len(y)} labels")
        df = Counter(w for s in S + T for w in set(s))
        kept = sorted(w for w, c in df.items() if c >= self.min_df)
        self.vocabulary_ = {w: i for i, w in enumerate(kept)}
        A, B = self._counts(S), self._counts(T)
        self.weights_ = kld_weights(A, B, y, self.alpha)
        W = sp.diags(self.weights_)
        M = sp.vstack([A @ W, B @ W]).tocsr()
        dim = min(self.n_components, M.shape[1] - 1, M.shape[0] - 1)
        if dim < 1:
            raise ValueError("TfKld.fit: too few training pairs or features for a latent basis")
        self.svd_ = TruncatedSVD(dim, random_state=self.random_state).fit(M)
        return self

    def latent(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(U, V)``: the latent vectors of the first and the second sentences."""
        if not hasattr(self, "svd_"):
            raise NotFittedError("TfKld is not fitted: call fit(X, y) on training pairs first")
        S, T = self._sides(X)
        W = sp.diags(self.weights_)
        return (self.svd_.transform(self._counts(S) @ W),
                self.svd_.transform(self._counts(T) @ W))

    def transform(self, X: Any) -> np.ndarray:
        """``[u + v, |u - v|]`` of each pair."""
        U, V = self.latent(X)
        return np.hstack([U + V, np.abs(U - V)])


class TfKldKernel(Kernel):
    """Kernel on TF-KLD pair features, fitted on training pairs (Ji & Eisenstein 2013).

    ``k(x, y) = f(x) . f(y)`` (``gamma=None``) or ``exp(-gamma ||f(x) - f(y)||^2)`` with
    ``f`` the :class:`TfKld` features learned by :meth:`fit`; a product of a feature map
    with itself, so positive semi-definite.  Parameters are those of :class:`TfKld`
    plus ``gamma``.

    Attributes
    ----------
    model_ : TfKld

    Examples
    --------
    >>> X = [(("a", "b"), ("a", "b")), (("a", "c"), ("d", "e")), (("b", "c"), ("b", "c")),
    ...      (("c", "d"), ("e", "a"))]
    >>> k = TfKldKernel(n_components=2, min_df=1).fit(X, [1, 0, 1, 0])
    >>> bool(abs(k.value(X[0], X[0]) - float(k.model_.transform(X[:1])[0] @
    ...      k.model_.transform(X[:1])[0])) < 1e-12)
    True
    """

    name = "tfkld"

    def __init__(self, n_components: int = 100, ngram_max: int = 2, min_df: int = 2,
                 alpha: float = 5.0, gamma: float | None = None, random_state: int = 0):
        self.n_components = n_components
        self.ngram_max = ngram_max
        self.min_df = min_df
        self.alpha = alpha
        self.gamma = gamma
        self.random_state = random_state

    def validate_params(self) -> None:
        g = self.gamma
        if g is not None and (isinstance(g, bool) or not isinstance(g, (int, float)) or not g > 0):
            raise ValueError(f"TfKldKernel.gamma must be None or a float > 0, got {g!r}")

    def check_input(self, X: Any) -> list[Rewriting]:
        return check_rewritings(X, "TfKldKernel")

    def fit(self, X: Any, y: Any) -> TfKldKernel:
        """Learn the TF-KLD features from training pairs ``X`` with labels ``y``."""
        self.model_ = TfKld(self.n_components, self.ngram_max, self.min_df, self.alpha,
                            self.random_state).fit(X, y)
        return self

    def _features(self, X: Sequence[Rewriting]) -> np.ndarray:
        if not hasattr(self, "model_"):
            raise NotFittedError("TfKldKernel is not fitted: call fit(X, y) on training pairs")
        return self.model_.transform(list(X))

    def gram_block(self, X: Sequence[Rewriting], Y: Sequence[Rewriting]) -> np.ndarray:
        fx, fy = self._features(X), self._features(Y)
        if self.gamma is None:
            return fx @ fy.T
        d2 = (fx * fx).sum(1)[:, None] + (fy * fy).sum(1)[None, :] - 2.0 * fx @ fy.T
        return np.exp(-float(self.gamma) * np.maximum(d2, 0.0))

    def diag_block(self, X: Sequence[Rewriting]) -> np.ndarray:
        if self.gamma is not None:
            return np.ones(len(X))
        f = self._features(X)
        return (f * f).sum(1)
