"""TF-KLD latent vectors of sentence pairs and their kernel (Ji & Eisenstein, EMNLP 2013).

Ji & Eisenstein, "Discriminative Improvements to Distributional Sentence Similarity"
(EMNLP 2013), Sec. 3-4: each sentence is a vector of unigram and bigram counts; each
feature ``k`` is reweighted by how much the paraphrase relation changes the chance that
a pair shares it,

    p_k = P(k in s1 | k in s2, r = 1),   q_k = P(k in s1 | k in s2, r = 0),
    w_k = KL(p_k || q_k) = p_k log(p_k / q_k) + (1 - p_k) log((1 - p_k) / (1 - q_k)),

the reweighted count matrix of the sentences is factorised by non-negative matrix
factorisation to ``K = 100`` latent dimensions, and a pair ``(s, t)`` with latent vectors
``u``, ``v`` is the feature vector ``[u + v, |u - v|]`` of a linear SVM.

Conventions here:

* The two sides of a pair are exchangeable, so ``p_k`` pools both directions: among the
  pairs of label ``r``, the sides holding ``k`` whose other side holds it too,
  ``(2 n_both + a) / (n_s + n_t + 2 a)``, with ``a`` pseudo-counts on each outcome
  (``smoothing``; the authors' released code adds 1.05).  A feature no pair of a label
  holds gets ``1/2`` there.
* The vocabulary and the weights are learned from the labelled pairs given to ``fit``;
  the factorisation may also see the sentences of ``unlabeled`` pairs (the paper
  factorises the training and test sentences together; their labels are never read).
  ``transform`` solves each sentence's latent vector against the fitted basis, so a
  pair's features do not depend on the other pairs transformed with it.

Examples
--------
>>> X = [(("a", "cat", "sat"), ("a", "cat", "sits")), (("dogs", "bark"), ("cats", "mew")),
...      (("the", "cat"), ("a", "cat")), (("big", "dog"), ("small", "bird"))]
>>> tf = TfKld(n_components=2).fit(X, [1, 0, 1, 0])
>>> tf.transform(X).shape
(4, 4)
>>> k = TfKldKernel(n_components=2).fit(X, [1, 0, 1, 0])
>>> k(X).shape
(4, 4)
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.decomposition import NMF, TruncatedSVD
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.model_selection import StratifiedKFold

from structkernels.kernels.srk.common import FeatureKernel, Rewriting, check_rewritings

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


def kld_weights(S: sp.spmatrix, T: sp.spmatrix, y: Any, smoothing: float = 1.05) -> np.ndarray:
    """TF-KLD weight of every column: ``KL(p_k || q_k)`` of Bernoulli distributions.

    Parameters
    ----------
    S, T : sparse matrices (n_pairs, n_features)
        Counts of the first and the second sentence of each pair.
    y : array (n_pairs,)
        1 = paraphrase, 0 = not; both must occur.
    smoothing : float
        Pseudo-counts added to each outcome ("the other side has it too" or not).

    Examples
    --------
    >>> S = sp.csr_matrix([[1, 1], [1, 0], [0, 1]]); T = sp.csr_matrix([[1, 0], [1, 1], [0, 1]])
    >>> kld_weights(S, T, [1, 0, 0], smoothing=1.0).round(3).tolist()
    [0.0, 0.145]
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
        share.append((n_both + smoothing) / (n_occ + 2.0 * smoothing))
    p, q = (np.clip(s, 1e-12, 1 - 1e-12) for s in share)
    return p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q))


class TfKld(TransformerMixin, BaseEstimator):
    """TF-KLD pair features ``[u + v, |u - v|]`` (Ji & Eisenstein 2013, Sec. 3-4).

    Parameters
    ----------
    n_components : int
        Latent dimensions of each sentence (the paper's K = 100).
    ngram_max : int
        Features are the 1..``ngram_max``-grams of the tokens (the paper: unigrams and
        bigrams).
    min_df : int
        Keep the n-grams found in at least this many labelled training sentences.
    smoothing : float
        Pseudo-counts of the sharing probabilities (see :func:`kld_weights`).
    factorization : {"nmf", "svd"}
        Non-negative matrix factorisation (the paper; NNDSVD start) or a truncated SVD.
    max_iter : int
        Iterations of the factorisation.
    random_state : int
        Seed of the factorisation (and of the folds of ``cross_fit``).
    cross_fit : int or None
        With ``k >= 2`` folds, :meth:`fit_transform` gives each training pair the features of
        weights learned on the other folds' labels only (the basis is the one :meth:`fit`
        learns).  The weights read the labels: a pair's own label in its weights makes the
        training features look more separable than any new pair's (the rare n-grams of a pair
        get large weights from that pair alone), so a classifier fitted on them trusts them
        too much.  ``None``: the features of :meth:`transform` after :meth:`fit`.

    Attributes
    ----------
    vocabulary_ : dict of str to int
    weights_ : ndarray (n_features,)
    factorization_ : NMF or TruncatedSVD

    Examples
    --------
    >>> X = [(("a", "b"), ("a", "b")), (("a", "c"), ("d", "e")), (("b", "c"), ("b", "c")),
    ...      (("c", "d"), ("e", "a"))]
    >>> TfKld(n_components=2).fit_transform(X, [1, 0, 1, 0]).shape
    (4, 4)
    """

    def __init__(self, n_components: int = 100, ngram_max: int = 2, min_df: int = 1,
                 smoothing: float = 1.05, factorization: str = "nmf", max_iter: int = 200,
                 random_state: int = 0, cross_fit: int | None = None):
        self.n_components = n_components
        self.ngram_max = ngram_max
        self.min_df = min_df
        self.smoothing = smoothing
        self.factorization = factorization
        self.max_iter = max_iter
        self.random_state = random_state
        self.cross_fit = cross_fit

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

    def _check_params(self) -> None:
        if not (isinstance(self.n_components, int) and self.n_components >= 1):
            raise ValueError(f"TfKld.n_components must be an int >= 1, got {self.n_components!r}")
        if not self.smoothing > 0:
            raise ValueError(f"TfKld.smoothing must be > 0, got {self.smoothing!r}")
        cf = self.cross_fit
        if cf is not None and (isinstance(cf, bool) or not isinstance(cf, int) or cf < 2):
            raise ValueError(f"TfKld.cross_fit must be None or an int >= 2, got {cf!r}")
        if self.factorization not in ("nmf", "svd"):
            raise ValueError(f"TfKld.factorization must be 'nmf' or 'svd', "
                             f"got {self.factorization!r}")

    def fit(self, X: Any, y: Any, unlabeled: Any = None) -> TfKld:
        """Learn the vocabulary and the KL weights from ``(X, y)`` and the latent basis from
        the sentences of ``X`` and of ``unlabeled`` (pairs whose labels are not read)."""
        self._check_params()
        S, T = self._sides(X)
        y = np.asarray(y)
        if len(y) != len(S):
            raise ValueError(f"TfKld.fit: {len(S)} pairs but {len(y)} labels")
        df = Counter(w for s in S + T for w in set(s))
        kept = sorted(w for w, c in df.items() if c >= self.min_df)
        self.vocabulary_ = {w: i for i, w in enumerate(kept)}
        A, B = self._counts(S), self._counts(T)
        self.weights_ = kld_weights(A, B, y, self.smoothing)
        blocks = [A, B]
        if unlabeled is not None:
            U, V = self._sides(unlabeled)
            blocks += [self._counts(U), self._counts(V)]
        M = (sp.vstack(blocks) @ sp.diags(self.weights_)).tocsr()
        M = M[np.flatnonzero(M.getnnz(axis=1))]
        dim = min(self.n_components, M.shape[1] - 1, M.shape[0] - 1)
        if dim < 1:
            raise ValueError("TfKld.fit: too few training pairs or features for a latent basis")
        if self.factorization == "nmf":
            fac: Any = NMF(dim, init="nndsvd", max_iter=self.max_iter,
                           random_state=self.random_state)
        else:
            fac = TruncatedSVD(dim, random_state=self.random_state)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            self.factorization_ = fac.fit(M)
        return self

    def latent(self, X: Any, weights: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """``(U, V)``: the latent vectors of the first and the second sentences (the count
        vectors weighted by ``weights``, default the fitted ``weights_``)."""
        if not hasattr(self, "factorization_"):
            raise NotFittedError("TfKld is not fitted: call fit(X, y) on training pairs first")
        S, T = self._sides(X)
        W = sp.diags(self.weights_ if weights is None else weights)
        M = (sp.vstack([self._counts(S), self._counts(T)]) @ W).tocsr()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            Z = self.factorization_.transform(M)
        if not np.isfinite(Z).all():
            raise FloatingPointError("TfKld: non-finite latent vectors")
        return Z[:len(S)], Z[len(S):]

    def transform(self, X: Any) -> np.ndarray:
        """``[u + v, |u - v|]`` of each pair."""
        U, V = self.latent(X)
        return np.hstack([U + V, np.abs(U - V)])

    def fit_transform(self, X: Any, y: Any = None, unlabeled: Any = None) -> np.ndarray:
        """:meth:`fit`, then the features of the training pairs ``X``: out of fold with
        ``cross_fit`` (each fold's pairs weighted by the other folds' labels), else
        :meth:`transform`."""
        self.fit(X, y, unlabeled)
        if self.cross_fit is None:
            return self.transform(X)
        X = check_rewritings(X, "TfKld")
        y = np.asarray(y)
        folds = StratifiedKFold(self.cross_fit, shuffle=True, random_state=self.random_state)
        S, T = self._sides(X)
        A, B = self._counts(S), self._counts(T)
        out = np.empty((len(X), 2 * self.factorization_.n_components))
        for fit_idx, out_idx in folds.split(np.zeros(len(y)), y):
            w = kld_weights(A[fit_idx], B[fit_idx], y[fit_idx], self.smoothing)
            U, V = self.latent([X[i] for i in out_idx], weights=w)
            out[out_idx] = np.hstack([U + V, np.abs(U - V)])
        return out


class TfKldKernel(FeatureKernel):
    """Kernel on TF-KLD pair features, fitted on training pairs (Ji & Eisenstein 2013).

    ``k(x, y) = f(x) . f(y)`` (``gamma=None``) or ``exp(-gamma ||f(x) - f(y)||^2)`` with
    ``f`` the :class:`TfKld` features learned by :meth:`fit`; a product of a feature map
    with itself, so positive semi-definite.  Parameters are those of :class:`TfKld`
    plus ``gamma``.  Its Gram on the training pairs themselves uses the weights their own
    labels made (in-sample); to train a classifier on it, build the training pairs'
    features out of fold with ``TfKld(cross_fit=k).fit_transform`` instead.

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

    def __init__(self, n_components: int = 100, ngram_max: int = 2, min_df: int = 1,
                 smoothing: float = 1.05, factorization: str = "nmf", max_iter: int = 200,
                 gamma: float | None = None, random_state: int = 0):
        self.n_components = n_components
        self.ngram_max = ngram_max
        self.min_df = min_df
        self.smoothing = smoothing
        self.factorization = factorization
        self.max_iter = max_iter
        self.gamma = gamma
        self.random_state = random_state

    def fit(self, X: Any, y: Any, unlabeled: Any = None) -> TfKldKernel:
        """Learn the TF-KLD features from training pairs ``X`` with labels ``y`` (and the
        latent basis also from the sentences of ``unlabeled``, see :meth:`TfKld.fit`)."""
        self.model_ = TfKld(self.n_components, self.ngram_max, self.min_df, self.smoothing,
                            self.factorization, self.max_iter,
                            self.random_state).fit(X, y, unlabeled)
        return self

    def features(self, X: Sequence[Rewriting]) -> np.ndarray:
        if not hasattr(self, "model_"):
            raise NotFittedError("TfKldKernel is not fitted: call fit(X, y) on training pairs")
        return self.model_.transform(list(X))
