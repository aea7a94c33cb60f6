"""Reading relation corpora from JSON Lines: one sentence per line.

The record form: docs/relations.md (JSON Lines).  Without ``interactions`` (or with
``null``) a sentence is unlabelled; ``document`` defaults to the sentence id, ``id`` to
``<file stem>.<line>``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from structkernels.formats._collect import (
    Reading,
    RecordProblem,
    json_kind,
    read_corpus,
    stem,
)
from structkernels.relations.corpus import (
    Entity,
    Interaction,
    RelationCorpus,
    Sentence,
    span_text,
    surrogate_problem,
)
from structkernels.utils import BadLine, RecordError, iter_lines, loads_record, one_line

__all__ = ["read_relations_jsonl"]


def read_relations_jsonl(files: Any, *, on_error: str = "raise", max_entities: int | None = None,
                         max_pairs: int | None = None) -> RelationCorpus:
    """Read JSON Lines files of sentences (plain or gzip'd) into one :class:`RelationCorpus`.

    Parameters
    ----------
    on_error : {"raise", "skip"}
        ``"raise"``: a bad line raises :class:`RelationFormatError` naming the file,
        the line and the sentence id.  ``"skip"``: the line is left out and listed in
        ``corpus.skipped``.  Each line is decoded by
        :func:`structkernels.utils.loads_record` (size and depth limits); a string holding
        a lone surrogate (``"\\ud800"``) or an entity of white space only is a bad line.
    files, max_entities, max_pairs
        As for :func:`~structkernels.relations.read_relations`.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> rec = {"id": "s1", "text": "KinC activates SigE",
    ...        "entities": [{"id": "e0", "start": 0, "end": 4}, {"id": "e1", "start": 15, "end": 19}],
    ...        "interactions": [{"e1": "e1", "e2": "e0"}]}
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = pathlib.Path(d, "x.jsonl")
    ...     _ = path.write_text(json.dumps(rec) + "\\n")
    ...     corpus = read_relations_jsonl(path)
    >>> [(p.id, p.e1.text, p.e2.text, p.label) for p in corpus.pairs()]
    [('s1.p0', 'KinC', 'SigE', True)]
    """
    return read_corpus(files, read_jsonl_file, on_error, max_entities, max_pairs)


def read_jsonl_file(file: str, reading: Reading) -> None:
    """Read one JSON Lines file of sentences into ``reading``."""
    for _ in iter_jsonl_file(file, reading):
        pass


def iter_jsonl_file(file: str, reading: Reading) -> Iterator[int]:
    """Read one JSON Lines file into ``reading`` a line at a time: after each line (its
    sentence added, or the line listed as skipped) yields the line number."""
    reading.files.append(file)
    try:
        for line, text in iter_lines(file):
            if isinstance(text, BadLine):
                reading.fail(text.reason, file, line, None)
                yield line
                continue
            sid = None
            try:
                record = loads_record(text)
                sid = _sentence_id(record, file, line)
                sentence = _sentence(record, sid, file, line)
            except RecordError as exc:
                reading.fail(exc.reason, file, line, sid)
            except ValueError as exc:  # a RecordProblem, or a model check
                reading.fail(str(exc), file, line, sid)
            else:
                reading.add(sentence)
            yield line
    except OSError as exc:
        reading.cannot_read(exc, file)


def _sentence_id(record: Any, file: str, line: int) -> str:
    if not isinstance(record, dict):
        raise RecordProblem(f"a record must be a JSON object, got {json_kind(record)}")
    sid = record.get("id")
    if sid is None:
        return f"{stem(file)}.{line}"
    if not isinstance(sid, str) or not sid:
        raise RecordProblem(f"id must be a non-empty string, got {one_line(repr(sid), 60)}")
    problem = surrogate_problem("the sentence id", sid)
    if problem:
        raise RecordProblem(problem)
    return sid


def _sentence(record: dict[str, Any], sid: str, file: str, line: int) -> Sentence:
    text = record.get("text")
    if not isinstance(text, str):
        raise RecordProblem("no text" if text is None
                            else f"text must be a string, got {json_kind(text)}")
    doc = sid if record.get("document") is None else record["document"]
    if not isinstance(doc, str) or not doc:
        raise RecordProblem(f"document must be a non-empty string, got {one_line(repr(doc), 60)}")
    entities = record.get("entities")
    if not isinstance(entities, list):
        raise RecordProblem("no entities" if entities is None
                            else f"entities must be an array, got {json_kind(entities)}")
    ents = tuple(_entity(e, k, text) for k, e in enumerate(entities))
    inters = record.get("interactions")
    labelled = inters is not None
    if labelled and not isinstance(inters, list):
        raise RecordProblem(f"interactions must be an array, got {json_kind(inters)}")
    return Sentence(sid, text, doc, ents,
                    tuple(_interaction(i, k) for k, i in enumerate(inters or [])), labelled,
                    file, line)


def _entity(e: Any, k: int, text: str) -> Entity:
    if not isinstance(e, dict):
        raise RecordProblem(f"entity {k}: must be an object, got {json_kind(e)}")
    eid = e.get("id")
    if not isinstance(eid, str) or not eid:
        raise RecordProblem(f"entity {k}: id must be a non-empty string, got "
                            f"{one_line(repr(eid), 60)}")
    has_span = "start" in e or "end" in e
    if has_span and "spans" in e:
        raise RecordProblem(f"entity {eid}: give start and end, or spans, not both")
    if has_span:
        if not ("start" in e and "end" in e):
            raise RecordProblem(f"entity {eid}: start and end go together")
        spans: Any = [[e["start"], e["end"]]]
    else:
        spans = e.get("spans")
        if not isinstance(spans, list) or not spans:
            raise RecordProblem(f"entity {eid}: no offsets (start and end, or a non-empty "
                                "spans array)")
    for sp in spans:
        if not (isinstance(sp, list) and len(sp) == 2
                and all(isinstance(x, int) and not isinstance(x, bool) for x in sp)):
            raise RecordProblem(f"entity {eid}: a span must be [start, end] (integers), got "
                                f"{one_line(sp, 60)}")
    for key in ("type", "text"):
        if e.get(key) is not None and not isinstance(e[key], str):
            raise RecordProblem(f"entity {eid}: {key} must be a string, got {json_kind(e[key])}")
    etype, etext = e.get("type"), e.get("text")
    ent = Entity(eid, tuple((s, t) for s, t in spans), etext or "", etype)
    if etext is None and ent.end <= len(text):
        ent = Entity(eid, ent.spans, span_text(text, ent.spans), etype)
    return ent


def _interaction(i: Any, k: int) -> Interaction:
    if not isinstance(i, dict):
        raise RecordProblem(f"interaction {k}: must be an object, got {json_kind(i)}")
    iid = i.get("id")
    name = f"interaction {iid}" if isinstance(iid, str) else f"interaction {k}"
    for key in ("id", "type"):
        if i.get(key) is not None and not isinstance(i[key], str):
            raise RecordProblem(f"{name}: {key} must be a string, got {json_kind(i[key])}")
    for key in ("e1", "e2"):
        if not isinstance(i.get(key), str) or not i[key]:
            raise RecordProblem(f"{name}: {key} must be an entity id, got "
                                f"{one_line(repr(i.get(key)), 60)}")
    return Interaction(i["e1"], i["e2"], iid, i.get("type"))
