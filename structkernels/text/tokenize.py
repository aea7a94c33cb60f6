"""Tokenising, lower-casing and stemming of English sentences, as the string re-writing
kernel paper does (Bu, Li & Zhu, 2012, Sec. 6: the OpenNLP tokenizer, an English Snowball
stemmer).  :func:`tokenize` is a Penn-Treebank-style rule tokenizer close to OpenNLP's
English model on news text; stemming needs no data download (``snowballstemmer``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import snowballstemmer

__all__ = ["tokenize", "stem", "TextPipeline", "stem_word"]

_TOKEN = re.compile(
    r"""
      (?:[A-Za-z]\.){2,}(?![A-Za-z])          # abbreviations: U.S., e.g.
    | \w+(?=n't\b)                            # do|n't, ca|n't
    | n't\b
    | '(?:s|re|ve|ll|d|m)\b                   # clitics
    | \d+(?:[.,:/]\d+)+                       # 2.5  1,000  10:30  1/2
    | \w+(?:-\w+)*                            # words, hyphenated compounds
    | \.\.\.|--|``|''                         # multi-character punctuation
    | [^\w\s]                                 # any other symbol
    """,
    re.VERBOSE | re.IGNORECASE | re.UNICODE,
)


def tokenize(text: str, *, lowercase: bool = False) -> list[str]:
    """Split an English sentence into tokens.

    Examples
    --------
    >>> tokenize('Amrozi said "the U.S. won\\'t pay $2.5 billion."')
    ['Amrozi', 'said', '"', 'the', 'U.S.', 'wo', "n't", 'pay', '$', '2.5', 'billion', '.', '"']
    """
    if not isinstance(text, str):
        raise TypeError(f"tokenize expects a str, got {type(text).__name__}")
    toks = _TOKEN.findall(text)
    return [t.lower() for t in toks] if lowercase else toks


@lru_cache(maxsize=8)
def _stemmer(language: str):
    return snowballstemmer.stemmer(language)


def stem_word(word: str, language: str = "english") -> str:
    """Snowball stem of one word.

    Examples
    --------
    >>> stem_word("binding")
    'bind'
    """
    return _stemmer(language).stemWord(word)


def stem(tokens: Iterable[str], language: str = "english") -> list[str]:
    """Snowball-stem each token (the stemmer lower-cases nothing itself).

    Examples
    --------
    >>> stem(["accused", "distorting", "evidence"])
    ['accus', 'distort', 'evid']
    """
    if isinstance(tokens, str):
        raise TypeError("stem expects a sequence of tokens, got a bare str; tokenize it first")
    return _stemmer(language).stemWords(list(tokens))


@dataclass(frozen=True)
class TextPipeline:
    """Sentence -> token tuple: tokenise, optionally lower-case and stem (Snowball, in
    ``language``).

    Examples
    --------
    >>> TextPipeline()("He was accusing his brothers.")
    ('he', 'was', 'accus', 'his', 'brother', '.')
    >>> TextPipeline().rewriting("Shakespeare wrote Hamlet.", "Hamlet was written.")
    (('shakespear', 'wrote', 'hamlet', '.'), ('hamlet', 'was', 'written', '.'))
    """

    lowercase: bool = True
    stem: bool = True
    language: str = "english"

    def __call__(self, text: str) -> tuple[str, ...]:
        toks = tokenize(text, lowercase=self.lowercase)
        if self.stem:
            toks = stem(toks, self.language)
        return tuple(toks)

    def rewriting(self, source: str, target: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The re-writing ``(tokens(source), tokens(target))``."""
        return self(source), self(target)
