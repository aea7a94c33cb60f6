"""Loaders of sentence re-writing corpora: MSRP TSV, PASCAL RTE XML, GLUE TSV; the pair's
dependency trees with its aligned words marked (:func:`aligned_trees`).

The corpora are not shipped (their licences forbid it): every loader takes a path and
returns a :class:`RewritingCorpus` of raw strings, labels and ids.  Malformed records raise
:class:`CorpusFormatError` naming the file and line; with ``strict=False`` they are listed
in :attr:`RewritingCorpus.skipped` (``(file, line, reason)``), with a warning.
"""

from __future__ import annotations

import os
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from structkernels.structures import Tree
from structkernels.text.tokenize import TextPipeline
from structkernels.utils import StructkernelsError, check_finite, decode_lines, tqdm

__all__ = ["CorpusFormatError", "RewritingCorpus", "load_msrp", "load_rte", "load_glue_rte",
           "load_rewritings", "aligned_trees", "REL_PREFIX", "TEXT_ROOT"]


class CorpusFormatError(StructkernelsError, ValueError):
    """A malformed record, reported with its file and line."""


@dataclass
class RewritingCorpus:
    """Re-writings as raw strings with labels.

    Attributes
    ----------
    sources, targets : list of str
        Sentence 1 / text and sentence 2 / hypothesis.
    labels : ndarray of int, shape (n,)
        1 = paraphrase / entailment, 0 = not; -1 where unlabelled.
    ids : list of str
    path : str
    skipped : list of (file, line, reason)
        Records left out in lenient mode.
    """

    sources: list[str]
    targets: list[str]
    labels: np.ndarray
    ids: list[str]
    path: str = ""
    skipped: list[tuple[str, int, str]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.sources)

    def __add__(self, other: RewritingCorpus) -> RewritingCorpus:
        return RewritingCorpus(
            self.sources + other.sources,
            self.targets + other.targets,
            np.concatenate([self.labels, other.labels]),
            self.ids + other.ids,
            f"{self.path}+{other.path}",
            self.skipped + other.skipped,
        )

    def tokenized(self, pipeline: TextPipeline | None = None) -> list[tuple[tuple[str, ...], ...]]:
        """``[(source tokens, target tokens), ...]`` through ``pipeline`` (default
        :class:`~structkernels.text.tokenize.TextPipeline`: lower-cased, stemmed)."""
        pipeline = TextPipeline() if pipeline is None else pipeline
        return [pipeline.rewriting(s, t) for s, t in zip(self.sources, self.targets, strict=True)]


def _problem(path, line, reason, strict, skipped) -> None:
    if strict:
        raise CorpusFormatError(f"{path}:{line}: {reason}")
    skipped.append((str(path), int(line), reason))


def _corpus(path, strict: bool, skipped: list, records: Iterable[tuple[int, Any]]
            ) -> RewritingCorpus:
    """The corpus of ``(line, (source, target, id, label))`` records, ``(line, why)`` for a bad
    one; one warning names what was skipped."""
    corpus = RewritingCorpus([], [], np.zeros(0, dtype=np.int64), [], str(path), skipped)
    labels = []
    for lineno, record in records:
        if isinstance(record, str):
            _problem(path, lineno, record, strict, skipped)
            continue
        corpus.sources.append(record[0])
        corpus.targets.append(record[1])
        corpus.ids.append(record[2])
        labels.append(record[3])
    corpus.labels = np.asarray(labels, dtype=np.int64)
    skipped.sort(key=lambda s: s[1])
    if skipped:
        warnings.warn(f"{corpus.path}: skipped {len(skipped)} malformed record(s), first: "
                      f"line {skipped[0][1]}: {skipped[0][2]}", stacklevel=3)
    return corpus


def _read_tsv(path, expected_header, strict, skipped):
    """The header and the ``(line, fields)`` rows of a TSV file: a BOM dropped, lines ending
    at ``\\n``, ``\\r\\n`` or ``\\r`` only, quotes literal; a line not UTF-8 is a bad record."""
    lines, bad = decode_lines(Path(path).read_bytes())
    if not lines:
        raise CorpusFormatError(f"{path}: empty file")
    if 1 in bad:
        raise CorpusFormatError(f"{path}:1: header line is not UTF-8 text ({bad[1]})")
    header = lines[0].split("\t")
    if [h.strip() for h in header[:len(expected_header)]] != list(expected_header):
        raise CorpusFormatError(
            f"{path}:1: unexpected header {header!r}; expected columns {list(expected_header)}")
    rows = []
    for lineno, line in enumerate(lines[1:], start=2):
        if lineno in bad:
            _problem(path, lineno, f"not UTF-8 text ({bad[lineno]})", strict, skipped)
            continue
        if not line.strip():
            continue
        rows.append((lineno, line.split("\t")))  # quotes literal; no field size limit
    return header, rows


def _msrp_record(row: list[str]) -> Any:
    if len(row) != 5:
        return f"expected 5 tab-separated fields, got {len(row)}"
    q, id1, id2, s1, s2 = row
    if q.strip() not in ("0", "1"):
        return f"Quality must be 0 or 1, got {q!r}"
    if not s1.strip() or not s2.strip():
        return "empty sentence"
    return s1, s2, f"{id1.strip()}-{id2.strip()}", int(q)


def load_msrp(path: str | os.PathLike, *, strict: bool = True) -> RewritingCorpus:
    """Microsoft Research Paraphrase Corpus (``msr_paraphrase_{train,test}.txt``).

    Columns ``Quality, #1 ID, #2 ID, #1 String, #2 String``; UTF-8 with BOM,
    CRLF line ends, and ``"`` inside strings (read literally, never as quoting).

    Examples
    --------
    >>> corpus = load_msrp("msr_paraphrase_train.txt")  # doctest: +SKIP
    >>> len(corpus), corpus.labels.mean().round(3)  # doctest: +SKIP
    (4076, 0.675)
    """
    skipped: list = []
    _, rows = _read_tsv(path, ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"], strict,
                        skipped)
    return _corpus(path, strict, skipped, ((n, _msrp_record(row)) for n, row in rows))


_RTE_VALUES = {"TRUE": 1, "FALSE": 0, "YES": 1, "NO": 0}


def _rte_records(path: Path, data: bytes) -> Iterator[tuple[int, Any]]:
    lines: dict[int, int] = {}  # the line of the n-th "<pair" start tag
    line = 1
    for n, chunk in enumerate(data.split(b"<pair")):
        if n:
            lines[n - 1] = line
        line += chunk.count(b"\n")
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise CorpusFormatError(f"{path}:{exc.position[0]}: XML parse error: {exc}") from None
    for n, pair in enumerate(list(root.iter("pair"))):
        pid = pair.get("id", "")
        value = pair.get("value", pair.get("entailment"))
        t, h = pair.find("t"), pair.find("h")
        if value is None or value.strip().upper() not in _RTE_VALUES:
            yield lines.get(n, 0), f"pair id={pid!r}: missing or bad value/entailment {value!r}"
        elif t is None or h is None or not (t.text or "").strip() or not (h.text or "").strip():
            yield lines.get(n, 0), f"pair id={pid!r}: missing or empty <t> or <h>"
        else:
            yield lines.get(n, 0), (" ".join(t.text.split()), " ".join(h.text.split()), pid,
                                    _RTE_VALUES[value.strip().upper()])


def load_rte(path: str | os.PathLike, *, strict: bool = True) -> RewritingCorpus:
    """PASCAL RTE XML: ``<pair id=.. value=TRUE|FALSE>`` (RTE-1) or
    ``entailment=YES|NO`` (RTE-2/3), with ``<t>`` (source) and ``<h>`` (target).

    Examples
    --------
    >>> corpus = load_rte("rte3_test.xml")  # doctest: +SKIP
    >>> len(corpus)  # doctest: +SKIP
    800
    """
    path = Path(path)
    return _corpus(path, strict, [], _rte_records(path, path.read_bytes()))


def _glue_record(row: list[str], labelled: bool) -> Any:
    want = 4 if labelled else 3
    if len(row) != want:
        return f"expected {want} tab-separated fields, got {len(row)}"
    if not labelled:
        return row[1], row[2], row[0], -1
    label = row[3].strip()
    if label not in ("entailment", "not_entailment"):
        return f"label must be entailment/not_entailment, got {label!r}"
    return row[1], row[2], row[0], 1 if label == "entailment" else 0


def load_glue_rte(path: str | os.PathLike, *, strict: bool = True) -> RewritingCorpus:
    """GLUE RTE TSV: ``index, sentence1, sentence2[, label]`` with labels
    ``entailment`` / ``not_entailment`` (test files are unlabelled: -1)."""
    skipped: list = []
    header, rows = _read_tsv(path, ["index", "sentence1", "sentence2"], strict, skipped)
    labelled = len(header) >= 4
    return _corpus(path, strict, skipped, ((n, _glue_record(row, labelled)) for n, row in rows))


def load_rewritings(path: str | os.PathLike, *, strict: bool = True) -> RewritingCorpus:
    """Any of the above, chosen from the file: ``.xml`` -> RTE, a TSV whose header
    starts ``Quality`` -> MSRP, ``index`` -> GLUE."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such corpus file: {path}")
    if path.suffix.lower() == ".xml":
        return load_rte(path, strict=strict)
    with open(path, "rb") as fh:
        first = fh.readline(4096).removeprefix(b"\xef\xbb\xbf")
    if first.startswith(b"Quality"):
        return load_msrp(path, strict=strict)
    if first.startswith(b"index"):
        return load_glue_rte(path, strict=strict)
    raise CorpusFormatError(
        f"{path}:1: unknown corpus format (expected an MSRP/GLUE TSV header or RTE XML)")


#: Prefix of the label of a node whose word is aligned to a word of the other side.
REL_PREFIX = "REL-"
#: Label of the artificial root joining the sentence roots of a text of several sentences.
TEXT_ROOT = "TEXT"
_DROPPED = frozenset({"PUNCT", "SPACE"})  # the coarse POS of the tokens left out of a tree


@dataclass(frozen=True)
class _Parse:
    """What a tree needs of one parsed text: per token its text, lower-cased form,
    lower-cased lemma, coarse POS, dependency label and head; the sentence roots."""

    text: tuple[str, ...]
    lower: tuple[str, ...]
    lemma: tuple[str, ...]
    pos: tuple[str, ...]
    dep: tuple[str, ...]
    head: tuple[int, ...]
    roots: tuple[int, ...]


def _parse_of(doc: Any, text: str) -> _Parse:
    tokens = list(doc)
    if not tokens:
        raise ValueError(f"aligned_trees: the pipeline found no token in {text!r}")
    pos = tuple(t.pos_ for t in tokens)
    dep = tuple(t.dep_ for t in tokens)
    if not all(pos) or not all(dep):
        raise ValueError(f"aligned_trees: the pipeline gave a token of {text!r} no coarse POS or "
                         "no dependency label: it needs a tagger (or attribute ruler) and a "
                         "parser, e.g. en_core_web_sm")
    return _Parse(tuple(t.text for t in tokens), tuple(t.text.lower() for t in tokens),
                  tuple(t.lemma_.lower() for t in tokens), pos, dep,
                  tuple(t.head.i for t in tokens), tuple(s.root.i for s in doc.sents))


def _pairs_of(corpus_or_pairs: Any) -> list[tuple[str, str]]:
    if isinstance(corpus_or_pairs, RewritingCorpus):
        return list(zip(corpus_or_pairs.sources, corpus_or_pairs.targets, strict=True))
    if isinstance(corpus_or_pairs, (str, bytes)):
        raise TypeError("aligned_trees takes a RewritingCorpus or a list of (source, target) "
                        "strings, got a single string")
    pairs = []
    for i, pair in enumerate(corpus_or_pairs):
        if (isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2
                or not all(isinstance(s, str) for s in pair)):
            raise TypeError(f"aligned_trees: pair {i} must be a (source, target) pair of str, "
                            f"got {pair!r}")
        pairs.append((pair[0], pair[1]))
    return pairs


def _unit_vectors(words: Sequence[str], vectors: Mapping[str, Any]) -> tuple[np.ndarray,
                                                                             np.ndarray]:
    """``(rows, which)``: the unit vectors of the words that have a non-zero one, and their
    positions in ``words``."""
    rows, which = [], []
    for i, w in enumerate(words):
        v = vectors.get(w)
        if v is None:
            continue
        v = np.asarray(v, dtype=np.float64).ravel()
        check_finite(v, f"aligned_trees: the vector of {w!r}", ("component",))
        n = np.linalg.norm(v)
        if n > 0:
            rows.append(v / n)
            which.append(i)
    if not rows:
        return np.zeros((0, 0)), np.zeros(0, dtype=np.int64)
    try:
        return np.vstack(rows), np.asarray(which, dtype=np.int64)
    except ValueError:
        raise ValueError("aligned_trees: the word vectors differ in length") from None


def _aligned(a: _Parse, b: _Parse, a_units: tuple[np.ndarray, np.ndarray] | None,
             b_units: tuple[np.ndarray, np.ndarray] | None, threshold: float) -> np.ndarray:
    """Which tokens of ``a`` match a token of ``b``: same lower-cased form, same lemma, or
    (with the sides' unit word vectors, :func:`_unit_vectors`) cosine >= ``threshold``."""
    forms, lemmas = set(b.lower), set(b.lemma) - {""}  # no lemmatizer: no lemma matches
    out = np.array([w in forms or m in lemmas for w, m in zip(a.lower, a.lemma, strict=True)],
                   dtype=bool)
    if a_units is not None and b_units is not None:
        (va, ia), (vb, _) = a_units, b_units
        if len(ia) and len(vb):
            if va.shape[1] != vb.shape[1]:
                raise ValueError("aligned_trees: the word vectors differ in length")
            out[ia[(va @ vb.T).max(axis=1) >= threshold]] = True
    return out


def _tree(p: _Parse, aligned: np.ndarray) -> Tree:
    """The dependency tree of ``p`` without punctuation and whitespace (a dropped token's
    dependents hang from its nearest kept ancestor), children in word order; several
    sentences joined under :data:`TEXT_ROOT`."""
    roots = set(p.roots)
    keep = [p.pos[i] not in _DROPPED or i in roots for i in range(len(p.pos))]
    kids: dict[int, list[int]] = {i: [] for i in range(len(p.pos)) if keep[i]}
    for i in kids:
        if i in roots:
            continue
        h = p.head[i]
        while not keep[h]:  # a dropped token is never a root, so this walk ends at one
            h = p.head[h]
        kids[h].append(i)
    built: dict[int, Tree] = {}
    stack = [(r, False) for r in p.roots]
    while stack:  # post-order without recursion: dependency chains can be long
        i, ready = stack.pop()
        if ready:
            label = (REL_PREFIX if aligned[i] else "") + p.pos[i]
            built[i] = Tree(label, [(p.dep[c], built[c]) for c in sorted(kids[i])])
        else:
            stack.append((i, True))
            stack.extend((c, False) for c in kids[i])
    if len(p.roots) == 1:
        return built[p.roots[0]]
    return Tree(TEXT_ROOT, [(p.dep[r], built[r]) for r in p.roots])


def aligned_trees(corpus_or_pairs: RewritingCorpus | Iterable[tuple[str, str]], nlp: Any, *,
                  vectors: Mapping[str, Any] | None = None, threshold: float = 0.8,
                  batch_size: int = 256, progress: bool | None = None
                  ) -> list[tuple[Tree, Tree]]:
    """The two dependency trees of each re-writing with the pair's aligned words marked
    (Zanzotto & Moschitti, ACL 2006; Filice, Da San Martino & Moschitti, ACL 2015).

    Each distinct sentence is parsed once (``nlp.pipe``).  A tree is rooted at the
    sentence's root; a text of several sentences (as spaCy splits it) gets an artificial root
    labelled :data:`TEXT_ROOT` whose children are the sentence roots, in order, on the edge
    ``ROOT``.  A node is labelled with its token's coarse POS (``token.pos_``), prefixed
    :data:`REL_PREFIX` when the token is aligned to a token of the other side: the same
    lower-cased form, the same (lower-cased) lemma, or, with ``vectors``, a cosine of at least
    ``threshold`` between their vectors.  The words themselves are left out: a tree kernel
    then counts fragments such as "an aligned noun under an aligned verb", which recur in
    pairs that share no vocabulary, so what is learned is how the two sides relate, not
    which words they use.  Edges are the dependency labels (``token.dep_``), the children of
    a node in word order.  Punctuation and whitespace tokens (coarse POS ``PUNCT``,
    ``SPACE``) are dropped, their dependents hanging from the nearest kept ancestor: they
    carry no alignment, and would make two pairs differ by their commas; a sentence root is
    always kept.

    Parameters
    ----------
    corpus_or_pairs : RewritingCorpus or iterable of (str, str)
        The re-writings ``(source, target)`` as raw text.
    nlp : spaCy Language
        A loaded pipeline with a tagger (coarse POS), a lemmatizer and a dependency parser,
        e.g. ``structkernels.relations.parse.load_pipeline()`` (``en_core_web_sm``).
    vectors : mapping str -> array-like, optional
        Word vectors, looked up by the token's text, then by its lower-cased form; a token
        without one (or with a zero vector) is aligned by form and lemma only.
    threshold : float in [-1, 1], default 0.8
        The least cosine that aligns two words through ``vectors``.
    batch_size : int, default 256
        Passed to ``nlp.pipe``.
    progress : bool, optional
        A progress bar over the parsed sentences (default: when the output is a terminal).

    Returns
    -------
    list of (Tree, Tree)
        One ``(source tree, target tree)`` per re-writing, in order.

    Examples
    --------
    >>> from structkernels.relations.parse import load_pipeline  # doctest: +SKIP
    >>> trees = aligned_trees([("A man plays.", "The man is playing.")],
    ...                       load_pipeline())  # doctest: +SKIP
    >>> print(trees[0][0])  # doctest: +SKIP
    (REL-VERB :nsubj (REL-NOUN :det DET))
    """
    pairs = _pairs_of(corpus_or_pairs)
    if vectors is not None and not isinstance(vectors, Mapping):
        raise TypeError(f"aligned_trees: vectors must be a mapping word -> vector, got "
                        f"{type(vectors).__name__}")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.floating)) \
            or not -1.0 <= float(threshold) <= 1.0:
        raise ValueError(f"aligned_trees: threshold must be a number in [-1, 1], got "
                         f"{threshold!r}")
    texts = list(dict.fromkeys(s for pair in pairs for s in pair))
    parses: dict[str, _Parse] = {}
    docs = nlp.pipe(texts, batch_size=batch_size)
    for text, doc in zip(texts, tqdm(docs, total=len(texts), desc="parsing", unit="sentence",
                                     disable=None if progress is None else not progress),
                         strict=True):
        parses[text] = _parse_of(doc, text)
    units: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if vectors is not None:  # each text's unit vectors once, read under the text, else lower
        for text, p in parses.items():
            units[text] = _unit_vectors([w if w in vectors else w.lower() for w in p.text],
                                        vectors)
    out = []
    for s, t in pairs:
        a, b = parses[s], parses[t]
        us, ut = units.get(s), units.get(t)
        out.append((_tree(a, _aligned(a, b, us, ut, float(threshold))),
                    _tree(b, _aligned(b, a, ut, us, float(threshold)))))
    return out
