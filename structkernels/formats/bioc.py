"""Reading BioC, XML and JSON: documents of passages with document-level annotations.

The format: docs/relations.md (PubTator and BioC).  The entity id is the annotation's
``id``, its concept id the first of :data:`CONCEPT_KEYS` present.  BioC's ``<!DOCTYPE
collection SYSTEM "BioC.dtd">`` is accepted, its DTD never read.
"""

from __future__ import annotations

import json
import re
from typing import Any

from structkernels.formats._collect import (
    Reading,
    RecordProblem,
    json_kind,
    read_corpus,
)
from structkernels.formats._documents import NO_CONCEPT, DocumentBuilder, Link, Mention
from structkernels.formats.xml_safety import parse_xml, safe_parser
from structkernels.relations.corpus import RelationCorpus, RelationFormatError
from structkernels.utils import MAX_FILE_BYTES, RecordError, loads_record, one_line, read_partial

__all__ = ["read_bioc", "read_bioc_file", "load_bioc", "bioc_to_xml", "CONCEPT_KEYS"]

#: The infons holding an annotation's concept id, the first present wins.
CONCEPT_KEYS = ("identifier", "Identifier", "MESH", "NCBI Gene", "NCBI GENE")
_PARTS = re.compile(r"[|;,]")
_DOCTYPE = ("a document type declaration with an internal subset is refused (entity "
            "declarations could expand without bound); BioC needs at most "
            "<!DOCTYPE collection SYSTEM \"BioC.dtd\">")
# what each element holds: child tag -> (key, kind); kinds: text, list, infon, attrs
_SCHEMA: dict[str, dict[str, tuple[str, str]]] = {
    "collection": {"source": ("source", "text"), "date": ("date", "text"), "key": ("key", "text"),
                   "infon": ("infons", "infon"), "document": ("documents", "list")},
    "document": {"id": ("id", "text"), "infon": ("infons", "infon"), "passage": ("passages", "list"),
                 "annotation": ("annotations", "list"), "relation": ("relations", "list")},
    "passage": {"infon": ("infons", "infon"), "offset": ("offset", "text"), "text": ("text", "text"),
                "sentence": ("sentences", "list"), "annotation": ("annotations", "list"),
                "relation": ("relations", "list")},
    "sentence": {"infon": ("infons", "infon"), "offset": ("offset", "text"), "text": ("text", "text"),
                 "annotation": ("annotations", "list"), "relation": ("relations", "list")},
    "annotation": {"infon": ("infons", "infon"), "location": ("locations", "attrs"),
                   "text": ("text", "text")},
    "relation": {"infon": ("infons", "infon"), "node": ("nodes", "attrs")},
}
# what bioc_to_xml writes as attributes: an "attrs" element's (with defaults), and the id
_ATTRIBUTES = {"location": (("offset", None), ("length", None)),
               "node": (("refid", None), ("role", ""))}
_ID_ATTRIBUTE = ("annotation", "relation")


# ------------------------------------------------------------------------ loading
def load_bioc(file: str, *, max_bytes: int = MAX_FILE_BYTES
              ) -> tuple[dict[str, Any], RelationFormatError | None]:
    """The collection of a BioC XML or JSON file as the JSON structure, and what ended it early.

    XML elements become the keys of BioC JSON (offsets stay strings), each element's line
    kept under ``"_line"``.  Malformed XML keeps the documents read before the damage, the
    second value saying where and why (None when the whole file was read).

    Raises
    ------
    RelationFormatError
        Not BioC, malformed JSON, or XML malformed before any document ended.
    OSError
        The file cannot be read.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = pathlib.Path(d, "x.bioc.xml")
    ...     _ = path.write_text('<collection><document><id>7</id></document></collection>')
    ...     coll, lost = load_bioc(path)
    >>> coll["documents"][0]["id"], lost
    ('7', None)
    """
    try:
        data, lost = read_partial(file, max_bytes=max_bytes)
    except RecordError as exc:
        raise RelationFormatError(exc.reason, file) from None
    head = data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if head == b"<":
        return _XmlLoader(file).load(data, lost)
    if lost:
        raise RelationFormatError(lost, file)
    try:
        value = loads_record(data, max_bytes=max_bytes)
    except RecordError as exc:
        raise RelationFormatError(exc.reason, file, _json_line(data, exc.reason)) from None
    if isinstance(value, list):
        value = {"documents": value}
    elif isinstance(value, dict) and "documents" not in value and isinstance(value.get("PubTator3"), list):
        value = {**value, "documents": value["PubTator3"]}
    if not isinstance(value, dict) or not isinstance(value.get("documents"), list):
        raise RelationFormatError("not a BioC collection: expected an object with a "
                                  "\"documents\" array", file, None)
    return value, None


def _json_line(data: bytes, reason: str) -> int | None:
    """The line of a JSON syntax error (the depth was checked before: decoding is safe)."""
    if not reason.startswith("not valid JSON"):
        return None
    try:
        json.loads(data.decode("utf-8"))
    except json.JSONDecodeError as exc:
        return exc.lineno
    except (ValueError, RecursionError):
        return None
    return None


class _XmlLoader:
    """Expat handlers building the JSON structure of a BioC XML file."""

    def __init__(self, file: str):
        self.file = file
        self.root: dict[str, Any] | None = None
        self.stack: list[tuple[str, Any]] = []  # (tag, the dict or the text list)
        self.ignored = 0
        self.parser = p = safe_parser(self._refuse, doctype=_DOCTYPE, external_dtd=True)
        p.StartElementHandler, p.EndElementHandler = self._start, self._end
        p.CharacterDataHandler = self._text

    def _refuse(self, reason: str) -> None:
        raise RelationFormatError(reason, self.file, self.parser.CurrentLineNumber)

    def load(self, data: bytes, lost: str | None) -> tuple[dict[str, Any], RelationFormatError | None]:
        try:
            parse_xml(self.parser, data, lost, self.file)
        except RelationFormatError as exc:
            return self._partial(exc)
        if self.root is None:
            raise RelationFormatError("empty file: no <collection> element", self.file)
        self.root.setdefault("documents", [])  # <collection/>: an empty corpus, as in JSON
        return self.root, None

    def _partial(self, exc: RelationFormatError) -> tuple[dict[str, Any], RelationFormatError]:
        """The documents ended before ``exc``, and ``exc``; raise it when there are none."""
        done = [d for d in (self.root or {}).get("documents", []) if d.get("_closed")]
        if not done:
            raise exc
        return {**(self.root or {}), "documents": done}, exc

    def _start(self, name: str, attrs: dict[str, str]) -> None:
        line = self.parser.CurrentLineNumber
        if self.ignored:
            self.ignored += 1
            return
        if not self.stack:
            if name != "collection":
                raise RelationFormatError(f"the root element is <{name}>, not <collection> "
                                          "(not BioC)", self.file, line)
            self.root = {"_line": line}
            self.stack.append((name, self.root))
            return
        tag, parent = self.stack[-1]
        spec = _SCHEMA.get(tag, {}).get(name) if isinstance(parent, dict) else None
        if spec is None:
            self.ignored = 1
            return
        key, kind = spec
        if kind == "attrs":
            parent.setdefault(key, []).append({**attrs, "_line": line})
            self.ignored = 1
            return
        node: Any = []  # a text's pieces
        if kind == "list":
            node = {"_line": line, "id": attrs["id"]} if "id" in attrs else {"_line": line}
            parent.setdefault(key, []).append(node)
        elif kind == "infon":
            parent.setdefault("infons", {})
            parent.setdefault("_infon_keys", []).append(attrs.get("key", ""))
        self.stack.append((name, node))

    def _text(self, data: str) -> None:
        if not self.ignored and self.stack and isinstance(self.stack[-1][1], list):
            self.stack[-1][1].append(data)

    def _end(self, name: str) -> None:
        if self.ignored:
            self.ignored -= 1
            return
        tag, node = self.stack.pop()
        if isinstance(node, dict):
            node["_closed"] = True
            return
        parent = self.stack[-1][1]
        key, kind = _SCHEMA[self.stack[-1][0]][tag]
        text = "".join(node)
        if kind == "infon":
            parent["infons"][parent["_infon_keys"][-1]] = text
        elif key == "id" or key not in parent:
            parent[key] = text


def bioc_to_xml(collection: dict[str, Any]) -> str:
    """BioC XML of a collection in the JSON structure (keys starting with ``_`` left out).

    Examples
    --------
    >>> print(bioc_to_xml({"source": "x", "documents": [{"id": "7", "passages": [
    ...     {"offset": 0, "text": "A b."}]}]}))  # doctest: +ELLIPSIS
    <?xml version='1.0' encoding='UTF-8'?>
    <!DOCTYPE collection SYSTEM "BioC.dtd">
    <collection><source>x</source><date /><key />...<offset>0</offset><text>A b.</text>...
    """
    from xml.etree import ElementTree as ET

    def write(el: Any, tag: str, obj: dict[str, Any]) -> None:
        # a sentence holds what a passage holds; a passage without text writes none
        for child, (key, kind) in _SCHEMA["passage" if tag == "sentence" else tag].items():
            value = obj.get(key)
            if kind == "infon":
                for k, v in (value or {}).items():
                    if v is not None:
                        ET.SubElement(el, "infon", key=str(k)).text = str(v)
            elif kind == "text":
                if value is not None or (tag, key) != ("passage", "text"):
                    ET.SubElement(el, child).text = "" if value is None else str(value)
            elif kind == "attrs":
                for part in value or []:
                    attrs = {k: str(part.get(k, d)) for k, d in _ATTRIBUTES[child]}
                    ET.SubElement(el, child, attrs)
            else:
                for item in value or []:
                    named = child in _ID_ATTRIBUTE and item.get("id") is not None
                    write(ET.SubElement(el, child, {"id": str(item["id"])} if named else {}),
                          child, item)

    root = ET.Element("collection")
    write(root, "collection", collection)
    return ("<?xml version='1.0' encoding='UTF-8'?>\n<!DOCTYPE collection SYSTEM \"BioC.dtd\">\n"
            + ET.tostring(root, encoding="unicode"))


# ------------------------------------------------------------------------ reading
def read_bioc(files: Any, *, on_error: str = "raise", labelled: bool | None = None,
              max_entities: int | None = None, max_pairs: int | None = None) -> RelationCorpus:
    """Read BioC XML or JSON files (plain or gzip'd) into one :class:`RelationCorpus`.

    Parameters
    ----------
    files : path or list of paths
        Each file's format is told by its first character (``<`` or ``{``/``[``).
    on_error : {"raise", "skip"}
        ``"raise"``: the first problem raises :class:`RelationFormatError` naming the
        file, the line (XML) and the document id.  ``"skip"``: a bad annotation is left
        out with its sentence, a document of the wrong shape is left out, each listed.
    labelled : bool, optional
        Whether the sentences carry gold relations (default: whether the file holds one).
    max_entities, max_pairs : int, optional
        As for :func:`~structkernels.relations.read_relations`.

    Returns
    -------
    RelationCorpus
        Sentences ``<document id>.s<i>``, entities the annotation ids.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> ann = lambda i, o, t: {"id": i, "infons": {"type": "Gene"}, "text": t,
    ...                        "locations": [{"offset": o, "length": len(t)}]}
    >>> coll = {"documents": [{"id": "d1", "passages": [{"offset": 0,
    ...     "text": "KinC binds SigE. GerE is not.",
    ...     "annotations": [ann("a", 0, "KinC"), ann("b", 11, "SigE"), ann("c", 17, "GerE")],
    ...     "relations": [{"id": "r", "infons": {"type": "PPI"},
    ...                    "nodes": [{"refid": "a", "role": "Arg1"}, {"refid": "b", "role": "Arg2"}]}]}]}]}
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = pathlib.Path(d, "x.bioc.json")
    ...     _ = path.write_text(json.dumps(coll))
    ...     corpus = read_bioc(path)
    >>> [(s.id, s.text, len(s.entities)) for s in corpus]
    [('d1.s0', 'KinC binds SigE.', 2), ('d1.s1', 'GerE is not.', 1)]
    >>> [(p.e1.id, p.e2.id, p.label) for p in corpus.pairs()]
    [('a', 'b', True)]
    """
    return read_corpus(files, lambda file, reading: read_bioc_file(file, reading, labelled),
                       on_error, max_entities, max_pairs)


def read_bioc_file(file: str, reading: Reading, labelled: bool | None = None) -> None:
    """Read one BioC XML or JSON file into ``reading``."""
    reading.files.append(file)
    try:
        coll, lost = load_bioc(file)
    except RelationFormatError as exc:
        reading.fail(exc.reason, exc.file, exc.line, exc.record)
        return
    except OSError as exc:
        reading.cannot_read(exc, file)
        return
    docs = coll.get("documents") or []
    if labelled is None:
        labelled = any(_has_relations(d) for d in docs if isinstance(d, dict))
    for k, doc in enumerate(docs):
        _read_document(doc, k, file, reading, labelled)
    if lost is not None:
        reading.cut_short(lost)


def _has_relations(obj: dict[str, Any]) -> bool:
    held = [obj.get(key) for key in ("passages", "sentences")]
    return bool(obj.get("relations")) or any(
        isinstance(child, dict) and _has_relations(child)
        for children in held if isinstance(children, list) for child in children)


def _int(value: Any, what: str, line: int | None) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and value.strip().isdigit() and value.strip().isascii():
        return int(value)
    raise RecordProblem(f"{what} must be a non-negative integer, got {one_line(repr(value), 40)}",
                        line)


def _list(obj: dict[str, Any], key: str, what: str) -> list[Any]:
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise RecordProblem(f"{what}: {key} must be an array, got {json_kind(value)}",
                            obj.get("_line"))
    for item in value:
        if not isinstance(item, dict):
            raise RecordProblem(
                f"{what}: each of its {key} must be an object, got {json_kind(item)}",
                obj.get("_line"))
    return value


def _infons(obj: dict[str, Any], what: str) -> dict[str, str]:
    value = obj.get("infons")
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RecordProblem(f"{what}: infons must be an object, got {json_kind(value)}",
                            obj.get("_line"))
    return {str(k): str(v) for k, v in value.items()
            if isinstance(v, (str, int, float)) and not isinstance(v, bool)}


def _read_document(doc: Any, k: int, file: str, reading: Reading, labelled: bool) -> None:
    line = doc.get("_line") if isinstance(doc, dict) else None
    did = doc.get("id") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or not isinstance(did, str) or not did.strip():
        shown = json_kind(doc) if not isinstance(doc, dict) else f"id {one_line(repr(did), 40)}"
        reading.fail(f"document {k + 1}: a document is an object with a non-empty string id, "
                     f"got {shown}", file, line, None)
        return
    did = did.strip()
    problem = reading.document_problem(did, file, line, once=True)
    if problem:
        reading.fail(problem, file, line, did)
        return
    b = DocumentBuilder(reading, file, did, labelled, line)
    try:
        _collect(doc, b)
    except RecordProblem as exc:
        reading.fail(f"{exc.reason} (the document is left out)", file, exc.line or line, did)
        return
    b.build()


def _collect(doc: dict[str, Any], b: DocumentBuilder) -> None:
    """Hand the passages, annotations and relations of ``doc`` to ``b``."""
    holders: list[dict[str, Any]] = [doc]
    for j, p in enumerate(_list(doc, "passages", f"document {b.doc}")):
        what = f"passage {j + 1}"
        pline = p.get("_line")
        offset = _int(p.get("offset"), f"{what}: offset", pline)
        text = p.get("text")
        if text is not None and not isinstance(text, str):
            raise RecordProblem(f"{what}: text must be a string, got {json_kind(text)}", pline)
        sentences = []
        for i, s in enumerate(_list(p, "sentences", what)):
            stext = s.get("text")
            if not isinstance(stext, str):
                raise RecordProblem(
                    f"{what}, sentence {i + 1}: no text" if stext is None else
                    f"{what}, sentence {i + 1}: text must be a string, got {json_kind(stext)}",
                    s.get("_line"))
            sentences.append((_int(s.get("offset"), f"{what}, sentence {i + 1}: offset",
                                   s.get("_line")), stext, s.get("_line")))
            holders.append(s)
        if text is not None:
            b.passage(offset, text, pline, sentences or None)
        else:
            for s_off, s_text, s_line in sentences:
                b.passage(s_off, s_text, s_line, [(s_off, s_text, s_line)])
        holders.append(p)
    for holder in holders:
        for n, a in enumerate(_list(holder, "annotations", f"document {b.doc}")):
            b.mentions.append(_mention(a, n))
    for holder in holders:
        for n, r in enumerate(_list(holder, "relations", f"document {b.doc}")):
            link = _relation(r, n, b)
            if link is not None:
                b.links.append(link)


def _mention(a: dict[str, Any], n: int) -> Mention:
    line = a.get("_line")
    aid = a.get("id")
    if not isinstance(aid, str) or not aid.strip():
        raise RecordProblem(f"annotation {n + 1}: no id (a relation names annotations by id)", line)
    what = f"annotation {one_line(aid, 60)}"
    infons = _infons(a, what)
    locs = _list(a, "locations", what)
    if not locs:
        raise RecordProblem(f"{what}: no location", line)
    spans = []
    for loc in locs:
        start = _int(loc.get("offset"), f"{what}: location offset", loc.get("_line", line))
        length = _int(loc.get("length"), f"{what}: location length", loc.get("_line", line))
        spans.append((start, start + length))
    text = a.get("text")
    if text is not None and not isinstance(text, str):
        raise RecordProblem(f"{what}: text must be a string, got {json_kind(text)}", line)
    concept = next((infons[k] for k in CONCEPT_KEYS if k in infons), "").strip()
    parts = tuple(c for c in (concept, *_PARTS.split(concept)) if c.strip() not in NO_CONCEPT)
    return Mention(aid, tuple(sorted(spans)), text, infons.get("type") or None,
                   tuple(dict.fromkeys(parts)), line)


def _relation(r: dict[str, Any], n: int, b: DocumentBuilder) -> Link | None:
    line = r.get("_line")
    rid = r.get("id")
    rid = rid if isinstance(rid, str) and rid else None
    what = f"relation {one_line(rid, 60)}" if rid else f"relation {n + 1}"
    infons = _infons(r, what)
    nodes = _list(r, "nodes", what)
    rtype = infons.get("type") or infons.get("relation") or None
    if not nodes and "entity1" in infons and "entity2" in infons:
        return Link(rid, rtype, infons["entity1"], infons["entity2"], True, line)
    refs = [nd.get("refid") for nd in nodes]
    if len(refs) != 2 or not all(isinstance(x, str) and x for x in refs):
        b.fail(f"{what}: a relation needs two nodes naming annotations (refid), or entity1 "
               f"and entity2 infons; got {len(refs)} node(s)", line)
        return None
    return Link(rid, rtype, refs[0], refs[1], False, line)
