r"""Writing scored pairs back into the format of the corpus they came from.

The rows are :meth:`structkernels.extraction.RelationExtractor.predict_pairs`'s; only
positive pairs (``label`` 1) become relations, unless ``all_pairs=True``.  ``"jsonl"``
writes one JSON line per row; ``"pubtator"`` one relation line per document and concept pair
(the pair of mentions scored highest gives its columns), ``"bioc-xml"`` and ``"bioc-json"``
one document-level relation ``P{k}`` per pair, each with its score and further numeric
fields (docs/relations.md, Writing pairs back).  Reading the file back gives the predicted
relations as the gold ones.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from typing import IO, Any

from structkernels.formats._documents import NO_CONCEPT
from structkernels.formats._lines import LineStream
from structkernels.formats.bioc import bioc_to_xml, load_bioc
from structkernels.formats.pubtator import PubTatorDocument, concept_of, pubtator_documents
from structkernels.formats.relations import relation_format
from structkernels.relations.corpus import Entity, RelationCorpus, RelationFormatError
from structkernels.utils import (
    MAX_FILE_BYTES,
    NonFiniteError,
    decode_lines,
    dumps_finite,
    open_output,
    read_once,
    read_partial,
)

__all__ = ["write_pairs", "PairWriter", "OUTPUT_FORMATS", "output_format", "pair_line"]

#: The formats :func:`write_pairs` writes.
OUTPUT_FORMATS = ("jsonl", "pubtator", "bioc-xml", "bioc-json")
_ROW = {"sentence", "pair", "e1", "e2", "e1_text", "e2_text", "score", "label"}
_SOURCES = {"jsonl": None, "pubtator": ("pubtator",), "bioc-xml": ("pubtator", "bioc-xml", "bioc-json"),
            "bioc-json": ("pubtator", "bioc-xml", "bioc-json")}


def output_format(requested: str, inputs: Iterable[Any]) -> str:
    """The format pairs of ``inputs`` are written in: ``requested``, checked, or the inputs'
    own format for ``"same"``.

    Raises
    ------
    ValueError
        An unknown format, inputs of several formats for ``"same"``, or inputs that the
        format cannot hold (interaction XML and BRAT have no pair writer: use ``jsonl``).

    Examples
    --------
    >>> output_format("same", ["a.pubtator", "b.pubtator"]), output_format("jsonl", ["a.xml"])
    ('pubtator', 'jsonl')
    """
    inputs = [str(p) for p in inputs]
    kinds = {p: relation_format(p) for p in inputs}
    if requested == "same":
        found = sorted(set(kinds.values()))
        if len(found) != 1:
            raise ValueError(f"--output-format same: the inputs are of several formats "
                             f"({', '.join(found)}); name one of {', '.join(OUTPUT_FORMATS)}")
        requested = found[0]
        if requested not in OUTPUT_FORMATS:
            raise ValueError(f"--output-format same: {requested} input has no pair writer "
                             f"(writers: {', '.join(OUTPUT_FORMATS)}); use jsonl")
    if requested not in OUTPUT_FORMATS:
        raise ValueError(f"unknown output format {requested!r} (known: "
                         f"{', '.join(OUTPUT_FORMATS)}, same)")
    allowed = _SOURCES[requested]
    for p, kind in kinds.items():
        if allowed is not None and kind not in allowed:
            raise ValueError(f"{p}: {requested} output writes pairs back into "
                             f"{' or '.join(allowed)} input; this input is {kind} (use jsonl)")
        if allowed is not None and read_once(p):
            raise ValueError(f"{p}: {requested} output writes pairs back into the input, "
                             "read a second time; this input can be read only once (a pipe): "
                             "use jsonl")
    return requested


def _number(value: Any) -> str:
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(float(value)):
        raise NonFiniteError(f"a score or probability is not finite: {value!r}")
    return repr(round(float(value), 6))


def _extras(row: Mapping[str, Any]) -> dict[str, Any]:
    """The numeric fields of ``row`` beyond the ones every row has."""
    return {k: v for k, v in row.items() if k not in _ROW and isinstance(v, (int, float))
            and not isinstance(v, bool) and math.isfinite(v)}


def write_pairs(corpus: RelationCorpus, rows: Iterable[Mapping[str, Any]], path: Any,
                format: str = "jsonl", *, all_pairs: bool = False,
                relation_type: str = "Interaction") -> int:
    """Write scored pairs of ``corpus`` to ``path`` in ``format`` (see the module's notes).

    Parameters
    ----------
    corpus : RelationCorpus
        The corpus the rows score (its ``files`` are read again for PubTator and BioC).
    rows : iterable of dict
        As :meth:`~structkernels.extraction.RelationExtractor.predict_pairs` returns.
    path : path or "-"
        The output file (written atomically), or ``"-"``: standard output.
    format : {"jsonl", "pubtator", "bioc-xml", "bioc-json"}
    all_pairs : bool
        Write every pair as a relation, not only the positive ones (PubTator and BioC).

    Returns
    -------
    int
        The rows (JSON Lines) or relations written.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from structkernels.relations import read_relations
    >>> text = ("1|t|KinC activates SigE.\\n1\\t0\\t4\\tKinC\\tGene\\tD1\\n"
    ...         "1\\t15\\t19\\tSigE\\tGene\\tD2\\n")
    >>> rows = [{"sentence": "1.s0", "pair": "1.s0.p0", "e1": "T1:D1", "e2": "T2:D2",
    ...          "e1_text": "KinC", "e2_text": "SigE", "score": 0.75, "label": 1}]
    >>> with tempfile.TemporaryDirectory() as d:
    ...     src, out = pathlib.Path(d, "in.pubtator"), pathlib.Path(d, "out.pubtator")
    ...     _ = src.write_text(text)
    ...     write_pairs(read_relations(src), rows, out, "pubtator")
    ...     print(out.read_text().strip().splitlines()[-1].replace("\\t", " | "))
    1
    1 | Interaction | D1 | D2 | 0.75
    """
    if format not in OUTPUT_FORMATS:
        raise ValueError(f"unknown output format {format!r} (known: {', '.join(OUTPUT_FORMATS)})")
    rows = list(rows)
    if format == "jsonl":
        with open_output(path, stream_ok=True) as fh:
            for row in rows:
                fh.write(dumps_finite({**row, "score": round(float(row["score"]), 6)},
                                      what=f"pair {row.get('pair')}", ensure_ascii=False)
                         + "\n")
        return len(rows)
    chosen = _by_document(corpus, rows, all_pairs)
    files = list(dict.fromkeys(corpus.files))
    output_format(format, files)
    with open_output(path, stream_ok=True) as fh:
        writer = PairWriter(fh, format, files, relation_type=relation_type)
        writer.chosen = chosen
        return writer.finish()


def _by_document(corpus: RelationCorpus, rows: list[Mapping[str, Any]], all_pairs: bool
                 ) -> dict[str, list[tuple[Entity, Entity, Mapping[str, Any]]]]:
    """The rows to write, with their entities, by document id, in row order."""
    sentences = {s.id: s for s in corpus}
    out: dict[str, list[tuple[Entity, Entity, Mapping[str, Any]]]] = {}
    for row in rows:
        if not all_pairs and row.get("label") != 1:
            continue
        s = sentences.get(row.get("sentence"))  # type: ignore[arg-type]
        ents = {e.id: e for e in s.entities} if s is not None else {}
        if s is None or row.get("e1") not in ents or row.get("e2") not in ents:
            raise ValueError(f"a row names sentence {row.get('sentence')!r} and entities "
                             f"{row.get('e1')!r}, {row.get('e2')!r}, which the corpus does not have")
        out.setdefault(s.document, []).append((ents[row["e1"]], ents[row["e2"]], row))
    return out


def _pubtator_text(doc: PubTatorDocument, chosen: dict[str, list], rtype: str) -> tuple[str, int]:
    """One document as written back, its relations those of ``chosen`` (taken from it)."""
    lines = [f"{doc.pmid}|t|{doc.title[1]}"] if doc.title else []
    if doc.abstract:
        lines.append(f"{doc.pmid}|a|{doc.abstract[1]}")
    lines += [line for _, line in doc.other]
    lines += ["\t".join(fields) for _, fields in doc.annotations]
    best: dict[frozenset[str], tuple[str, str, Mapping[str, Any]]] = {}
    for e1, e2, row in chosen.pop(doc.pmid, []):
        c1, c2 = concept_of(e1.id) or e1.id, concept_of(e2.id) or e2.id
        key = frozenset((c1, c2))
        if key not in best or row["score"] > best[key][2]["score"]:
            best[key] = (c1, c2, row)
    for c1, c2, row in best.values():
        extra = "".join(f"\t{k}={_number(v)}" for k, v in _extras(row).items())
        lines.append(f"{doc.pmid}\t{rtype}\t{c1}\t{c2}\t{_number(row['score'])}{extra}")
    return "\n".join(lines) + "\n\n", len(best)


def pair_line(row: Mapping[str, Any]) -> str:
    """A scored pair as ``structkernels predict`` writes it: one JSON line (no line end),
    ``score`` and ``probability`` rounded to 6 decimals.

    Examples
    --------
    >>> pair_line({"pair": "s1.p0", "score": 0.123456789, "label": 1})
    '{"pair": "s1.p0", "score": 0.123457, "label": 1}'
    """
    out = {**row, "score": round(float(row["score"]), 6)}
    if "probability" in row:
        out["probability"] = round(float(row["probability"]), 6)
    return dumps_finite(out, what=f"pair {row.get('pair')}", ensure_ascii=False)


class PairWriter:
    """Scored pairs written batch by batch to an open text file: what :func:`write_pairs`
    writes for the whole corpus, the same bytes, as the batches of
    :func:`~structkernels.relations.iter_relations` come.

    PubTator input documents are read again and written as their batches come; BioC is one
    tree, written at :meth:`finish` (the chosen rows and their entities held until then).

    Parameters
    ----------
    fh : text file
        Where to write (the caller opens and closes it).
    format : {"jsonl", "pubtator", "bioc-xml", "bioc-json"}
    paths : list of str
        The inputs, in the order read (``batch.paths``); unused for ``"jsonl"``.
    all_pairs : bool
        Write every pair as a relation, not only the positive ones.

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> w = PairWriter(out, "jsonl")
    >>> w.write(None, [{"pair": "s1.p0", "score": 0.5, "label": 1}])
    1
    >>> out.getvalue()
    '{"pair": "s1.p0", "score": 0.5, "label": 1}\\n'
    """

    def __init__(self, fh: IO[str], format: str = "jsonl", paths: Iterable[Any] = (), *,
                 all_pairs: bool = False, relation_type: str = "Interaction"):
        if format not in OUTPUT_FORMATS:
            raise ValueError(f"unknown output format {format!r} (known: {', '.join(OUTPUT_FORMATS)})")
        self.fh, self.format, self.all_pairs, self.rtype = fh, format, all_pairs, relation_type
        self.paths = list(dict.fromkeys(str(p) for p in paths))
        self.chosen: dict[str, list] = {}
        self.written = 0
        self._docs: Iterator[tuple[int, int, PubTatorDocument]] | None = None
        self._next: tuple[int, int, PubTatorDocument] | None = None

    def _advance(self, end: tuple[int, int] | None, write: bool) -> None:
        """Write (or pass over) the input's documents up to ``end`` (None: all)."""
        if self._docs is None:
            self._docs = ((i, k, doc) for i, file in enumerate(self.paths)
                          for k, doc in enumerate(pubtator_documents(LineStream(file)), 1))
            self._next = next(self._docs, None)
        while self._next is not None and (end is None or self._next[:2] <= tuple(end)):
            text, n = _pubtator_text(self._next[2], self.chosen, self.rtype)
            if write:
                self.fh.write(text)
                self.written += n
            self._next = next(self._docs, None)

    def write(self, batch: Any, rows: Iterable[Mapping[str, Any]]) -> int:
        """Write the rows of ``batch`` (a :class:`~structkernels.relations.RelationBatch`);
        returns the rows (JSON Lines) or relations written so far."""
        rows = list(rows)
        if self.format == "jsonl":
            for row in rows:
                self.fh.write(pair_line(row) + "\n")
            self.written += len(rows)
            return self.written
        for doc, found in _by_document(batch, rows, self.all_pairs).items():
            self.chosen.setdefault(doc, []).extend(found)
        if self.format == "pubtator":
            self._advance(batch.end, True)
        return self.written

    def skip(self, batch: Any) -> None:
        """Pass over ``batch``, written before (a resumed run): nothing is written."""
        if self.format == "pubtator":
            self._advance(batch.end, False)
        elif self.format != "jsonl":
            raise ValueError(f"{self.format} output is written whole at the end: it cannot "
                             "pass over batches written before")

    def finish(self) -> int:
        """Write what is left (PubTator: the documents after the last batch; BioC: all);
        returns the rows or relations written."""
        if self.format == "pubtator":
            self._advance(None, True)
        elif self.format != "jsonl":
            text, n = _bioc_text(self.paths, self.chosen, self.format, self.rtype)
            self.fh.write(text)
            self.written += n
        return self.written


def _pubtator_as_bioc(doc: PubTatorDocument) -> dict[str, Any]:
    title = doc.title[1] if doc.title else ""
    passages = [{"infons": {"type": "title"}, "offset": 0, "text": title, "annotations": []}]
    if doc.abstract is not None:
        passages.append({"infons": {"type": "abstract"}, "offset": len(title) + 1,
                         "text": doc.abstract[1], "annotations": []})
    for k, (_, fields) in enumerate(doc.annotations, 1):
        try:
            start, end = int(fields[1]), int(fields[2])
            concept = fields[5].strip() if len(fields) > 5 else ""
            eid = f"T{k}" if concept in NO_CONCEPT else f"T{k}:{concept}"
            ann = {"id": eid, "infons": {"type": fields[4].strip(), "identifier": concept},
                   "text": fields[3], "locations": [{"offset": start, "length": end - start}]}
        except (IndexError, ValueError):
            continue  # a bad line: its sentence was not read, nothing scored it
        passages[-1 if len(passages) > 1 and start > len(title) else 0]["annotations"].append(ann)
    return {"id": doc.pmid, "infons": {}, "passages": passages, "relations": []}


def _clean(value: Any, key: str = "") -> Any:
    """The JSON structure without reading marks (``_`` keys), offsets as integers, and
    without the input's relations."""
    if isinstance(value, dict):
        out = {k: _clean(v, k) for k, v in value.items() if not k.startswith("_")}
        if "relations" in out:
            out["relations"] = []
        return out
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if key in ("offset", "length") and isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return value


def _bioc_text(files: list[str], chosen: dict[str, list], fmt: str, rtype: str) -> tuple[str, int]:
    collection: dict[str, Any] | None = None
    documents: list[dict[str, Any]] = []
    for file in files:
        if relation_format(file) == "pubtator":
            lines = decode_lines(read_partial(file, max_bytes=MAX_FILE_BYTES)[0])[0]
            documents += [_pubtator_as_bioc(d) for d in pubtator_documents(lines) if d.title]
            continue
        coll, lost = load_bioc(file)
        if lost is not None:
            raise RelationFormatError(f"cannot write the pairs back: {lost.reason}", lost.file, lost.line)
        coll = _clean(coll)
        documents += [d for d in coll.pop("documents") if isinstance(d, dict)]
        collection = collection or coll
    collection = collection or {"source": "structkernels", "date": "", "key": "", "infons": {}}
    written = 0
    for doc in documents:
        rels = []
        for e1, e2, row in chosen.pop(str(doc.get("id", "")).strip(), []):
            infons = {"type": rtype, "score": _number(row["score"]),
                      **{k: _number(v) for k, v in _extras(row).items()}}
            rels.append({"id": f"P{len(rels)}", "infons": infons,
                         "nodes": [{"refid": e1.id, "role": "Arg1"}, {"refid": e2.id, "role": "Arg2"}]})
        doc["relations"] = rels
        written += len(rels)
    collection["documents"] = documents
    text = (json.dumps(collection, ensure_ascii=False) + "\n" if fmt == "bioc-json"
            else bioc_to_xml(collection) + "\n")
    return text, written
