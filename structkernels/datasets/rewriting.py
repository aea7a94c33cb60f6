"""Loaders of sentence re-writing corpora: MSRP TSV, PASCAL RTE XML, GLUE TSV.

The corpora are not shipped (their licences forbid it): every loader takes a path and
returns a :class:`RewritingCorpus` of raw strings, labels and ids.  Malformed records raise
:class:`CorpusFormatError` naming the file and line; with ``strict=False`` they are listed
in :attr:`RewritingCorpus.skipped` (``(file, line, reason)``), with a warning.
"""

from __future__ import annotations

import os
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from structkernels.text.tokenize import TextPipeline
from structkernels.utils import StructkernelsError, decode_lines

__all__ = ["CorpusFormatError", "RewritingCorpus", "load_msrp", "load_rte", "load_glue_rte",
           "load_rewritings"]


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
