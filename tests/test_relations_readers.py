"""Readers of annotated relation corpora: interaction XML, BRAT standoff, JSON Lines.

Offsets are sentence-relative and end exclusive; candidates are the unordered pairs of a
sentence's entities, labelled in either direction; strict mode names file, line and record
id; lenient mode costs only the bad sentence and lists it.  With ``../shared/data``, the
four PPI corpora read strictly with the counts of their README.
"""

from __future__ import annotations

import gzip
import json
import pickle
import shutil
from pathlib import Path

import pytest

from structkernels.relations import (
    Entity,
    EntityPair,
    Interaction,
    RelationCorpus,
    RelationFormatError,
    Sentence,
    SkippedRecord,
    read_brat,
    read_interaction_xml,
    read_relations,
    read_relations_jsonl,
)

DATA = Path(__file__).parent / "data" / "relations"
XML = DATA / "sample.xml"
JSONL = DATA / "sample.jsonl"


def _xml(sentences: str, doc: str = "D.d0") -> str:
    return (f'<?xml version="1.0"?><corpus source="D"><document id="{doc}">{sentences}'
            "</document></corpus>")


GOOD = ('<sentence id="{d}.s{k}" text="KinC binds SigE.">'
        '<entity id="{d}.s{k}.e0" charOffset="0-4" text="KinC"/>'
        '<entity id="{d}.s{k}.e1" charOffset="11-15" text="SigE"/>'
        '<interaction id="{d}.s{k}.i0" e1="{d}.s{k}.e0" e2="{d}.s{k}.e1" type="PPI"/></sentence>')


def _good(k: int, d: str = "D.d0") -> str:
    return GOOD.format(d=d, k=k)


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- the model
def test_entity_spans_sorted_and_checked():
    e = Entity("e", ((17, 22), (0, 6)), "Muscle actin")
    assert e.spans == ((0, 6), (17, 22)) and (e.start, e.end) == (0, 22)
    for spans in [(), ((5, 5),), ((6, 2),), ((-1, 3),), ((0, 5), (3, 8)), ((0, 1.5),), "ab"]:
        with pytest.raises(ValueError):
            Entity("e", spans, "x")


def test_sentence_checks_its_entities_and_interactions():
    a, b = Entity("a", ((0, 4),), "KinC"), Entity("b", ((11, 15),), "SigE")
    Sentence("s", "KinC binds SigE", "d", (a, b), (Interaction("a", "b"),))
    bad = [
        ((a, Entity("b", ((11, 16),), "SigE")), (), "outside the sentence text"),
        ((a, Entity("b", ((10, 14),), "SigE")), (), "differs from the text"),
        ((a, a), (), "id given twice"),
        ((a, b), (Interaction("a", "c", "i0"),), "i0: e2 names entity c"),
        ((a, b), (Interaction("a", "a", "i0"),), "with itself"),
        ((a, b), (Interaction("a", "b", "i"), Interaction("b", "a", "i")), "interaction i: id given twice"),
    ]
    for ents, inters, msg in bad:
        with pytest.raises(ValueError, match=msg):
            Sentence("s", "KinC binds SigE", "d", ents, inters)
    with pytest.raises(ValueError, match="unlabelled"):
        Sentence("s", "KinC binds SigE", "d", (a, b), (Interaction("a", "b"),), labelled=False)


def test_end_inclusive_offsets_are_named():
    with pytest.raises(ValueError, match="look end-inclusive"):
        Sentence("s", "KinC binds", "d", (Entity("a", ((0, 3),), "KinC"),))


def test_pairs_count_labels_both_directions_and_ids():
    text = "A B C D E"
    ents = tuple(Entity(x, ((2 * i, 2 * i + 1),), x) for i, x in enumerate("ABCDE"))
    s = Sentence("s9", text, "d", ents, (Interaction("E", "A"), Interaction("B", "C")))
    pairs = s.pairs()
    assert len(pairs) == 5 * 4 // 2
    assert [p.id for p in pairs] == [f"s9.p{k}" for k in range(10)]
    assert [(p.e1.id, p.e2.id) for p in pairs][:4] == [("A", "B"), ("A", "C"), ("A", "D"), ("A", "E")]
    assert {(p.e1.id, p.e2.id) for p in pairs if p.label} == {("A", "E"), ("B", "C")}
    assert all(p.sentence is s for p in pairs)
    unlabelled = Sentence("u", text, "d", ents, labelled=False)
    assert [p.label for p in unlabelled.pairs()] == [None] * 10
    assert Sentence("one", text, "d", ents[:1]).pairs() == []
    # the sentence does not take part in a pair's equality or repr
    assert pairs[0] == EntityPair("s9.p0", unlabelled, ents[0], ents[1], False)
    assert "sentence" not in repr(pairs[0])


def test_error_and_skipped_record_format():
    err = RelationFormatError("bad offsets", "a.xml", 3, "s1")
    assert str(err) == "a.xml:3: record s1: bad offsets"
    assert (err.file, err.line, err.record, err.reason) == ("a.xml", 3, "s1", "bad offsets")
    assert str(RelationFormatError("too large", "a.xml")) == "a.xml: too large"
    assert str(RelationFormatError("x\ny")) == "x y"
    again = pickle.loads(pickle.dumps(err))
    assert str(again) == str(err) and again.record == "s1"
    assert str(SkippedRecord("b.jsonl", 2, None, "not JSON")) == "b.jsonl:2: not JSON"
    assert isinstance(err, ValueError)


def test_corpus_sequence():
    corpus = read_relations([XML, JSONL])
    assert isinstance(corpus, RelationCorpus)
    assert len(corpus) == 6 and corpus[0].id == "Sample.d0.s0" and corpus[-1].id == "sample.4"
    assert [s.id for s in corpus[1:3]] == ["Sample.d0.s1", "Sample.d1.s0"]
    assert corpus.documents() == ["Sample.d0", "Sample.d1", "docA", "sample.4"]
    assert len(corpus.pairs()) == sum(len(s.pairs()) for s in corpus) == 10 + 1 + 1 + 3 + 1 + 1
    assert repr(corpus) == "RelationCorpus(6 sentences, 4 documents, 0 skipped, 2 files)"
    assert corpus.files == [str(XML), str(JSONL)]


# ----------------------------------------------------------------------------- interaction XML
def test_xml_offsets_discontinuous_nested_and_labels():
    corpus = read_interaction_xml(XML)
    s = corpus[0]
    assert (s.id, s.document, s.file, s.line, s.labelled) == ("Sample.d0.s0", "Sample.d0", str(XML), 4, True)
    assert s.text == "Muscle and brain actin bind profilin & Arp2/3."
    spans = {e.id.rsplit(".", 1)[1]: e.spans for e in s.entities}
    assert spans == {"e0": ((0, 6), (17, 22)), "e1": ((11, 22),), "e2": ((17, 22),),
                     "e3": ((28, 36),), "e4": ((39, 45),)}
    for e in s.entities:  # sentence-relative, end exclusive; pieces joined by a space
        assert " ".join(s.text[a:b] for a, b in e.spans) == e.text
    assert s.entities[0].type == "Individual_protein" and corpus[2].entities[0].type is None
    assert s.interactions[0] == Interaction("Sample.d0.s0.e3", "Sample.d0.s0.e0", "Sample.d0.s0.i0", "PPI")
    pairs = s.pairs()
    assert len(pairs) == 10
    positive = {(p.e1.id[-2:], p.e2.id[-2:]) for p in pairs if p.label}
    assert positive == {("e0", "e3"), ("e1", "e3"), ("e3", "e4")}  # i0 and i2 written e3-first
    assert [p.label for p in corpus[2].pairs()] == [False]
    assert corpus[1].line == 15 and corpus[2].document == "Sample.d1"


def test_xml_gzip_and_old_pair_elements(tmp_path):
    gz = tmp_path / "sample.xml.gz"
    gz.write_bytes(gzip.compress(XML.read_bytes()))
    assert [s.id for s in read_relations(gz)] == [s.id for s in read_interaction_xml(XML)]
    pairs = _xml('<sentence id="s" text="KinC binds SigE.">'
                 '<entity id="a" charOffset="0-4" text="KinC"/><entity id="b" charOffset="11-15" text="SigE"/>'
                 '<entity id="c" charOffset="5-10" text="binds"/>'
                 '<pair id="p0" e1="a" e2="b" interaction="True"/><pair id="p1" e1="a" e2="c" interaction="False"/>'
                 "</sentence>")
    s = read_interaction_xml(_write(tmp_path / "pairs.xml", pairs))[0]
    assert [p.label for p in s.pairs()] == [True, False, False]


BAD_XML = [
    ('<entity id="X.e0" charOffset="0-40" text="KinC"/>', "X.e0: offsets 0-40 lie outside"),
    ('<entity id="X.e0" charOffset="0-4" text="Kin"/>', "X.e0: text 'Kin' differs"),
    ('<entity id="X.e0" charOffset="4-0" text=""/>', "X.e0: span 4-0 is empty or reversed"),
    ('<entity id="X.e0" charOffset="0:4" text="KinC"/>', "X.e0: charOffset '0:4' is not start-end"),
    ('<entity id="X.e0" text="KinC"/>', "X.e0: no charOffset"),
    ('<entity id="X.e0" charOffset="0-4" text="KinC"/><entity id="X.e0" charOffset="0-4" text="KinC"/>',
     "X.e0: id given twice"),
    ('<entity id="X.e0" charOffset="0-4" text="KinC"/><interaction id="X.i0" e1="X.e0" e2="X.e9"/>',
     "interaction X.i0: e2 names entity X.e9"),
    ('<entity id="X.e0" charOffset="0-4" text="KinC"/><interaction id="X.i0" e1="X.e0"/>',
     "interaction X.i0: no e2"),
    ('<document id="inner"/>', "<document> inside <sentence>"),
]


@pytest.mark.parametrize(("inner", "message"), BAD_XML)
def test_xml_bad_sentence_strict_and_lenient(tmp_path, inner, message):
    bad = f'<sentence id="X" text="KinC binds SigE.">{inner}</sentence>'
    path = _write(tmp_path / "bad.xml", _xml(_good(0) + "\n" + bad + "\n" + _good(2)))
    with pytest.raises(RelationFormatError) as info:
        read_interaction_xml(path)
    err = info.value
    assert (err.file, err.line, err.record) == (str(path), 2, "X")
    assert str(err).startswith(f"{path}:2: record X: ") and message in str(err)
    assert "\n" not in str(err)
    corpus = read_interaction_xml(path, on_error="skip")
    assert [s.id for s in corpus] == ["D.d0.s0", "D.d0.s2"]
    assert [(k.file, k.line, k.record) for k in corpus.skipped] == [(str(path), 2, "X")]
    assert message in corpus.skipped[0].reason


def test_xml_document_problems(tmp_path):
    path = _write(tmp_path / "d.xml", '<corpus><document id="A">' + _good(0, "A") + "</document>"
                  '<document id="A">' + _good(1, "A") + "</document>"
                  '<document id="B">' + _good(0, "B") + "</document></corpus>")
    with pytest.raises(RelationFormatError, match=r"record A: duplicate document id A: also at .*d\.xml:1"):
        read_interaction_xml(path)
    corpus = read_interaction_xml(path, on_error="skip")
    assert [s.id for s in corpus] == ["A.s0", "B.s0"]
    assert "its 1 sentences are left out" in corpus.skipped[0].reason
    for text, message in [
        ("<corpus><document>" + _good(0) + "</document></corpus>", "a <document> without an id"),
        ('<corpus><document id="D"><sentence text="x"/></document></corpus>', "sentence 1 of document D has no id"),
        ('<corpus><document id="D"><sentence id="s"/></document></corpus>', "record s: the sentence has no text"),
        ("<root/>", "the root element is <root>, not <corpus>"),
        ("", "empty file"),
    ]:
        with pytest.raises(RelationFormatError, match=message):
            read_interaction_xml(_write(tmp_path / "e.xml", text))


def test_xml_not_well_formed_keeps_what_was_read_in_lenient_mode(tmp_path):
    path = _write(tmp_path / "broken.xml", _xml(_good(0) + "\n" + _good(1) + "\n<sentence id='z' text='a'><entity"))
    with pytest.raises(RelationFormatError, match=r"broken\.xml:3: record z: not well-formed XML"):
        read_interaction_xml(path)
    corpus = read_interaction_xml(path, on_error="skip")
    assert [s.id for s in corpus] == ["D.d0.s0", "D.d0.s1"]
    assert "the rest of the file is not read" in corpus.skipped[0].reason
    gz = tmp_path / "cut.xml.gz"
    gz.write_bytes(gzip.compress(_xml("\n".join(_good(k) for k in range(50))).encode())[:-40])
    with pytest.raises(RelationFormatError, match="ends early"):
        read_interaction_xml(gz)
    assert read_interaction_xml(gz, on_error="skip").skipped[-1].reason.endswith("the rest of the file is lost")


@pytest.mark.parametrize("doctype", [
    '<!DOCTYPE corpus [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>',
    '<!DOCTYPE corpus [<!ENTITY x SYSTEM "file:///etc/passwd">]>',
    '<!DOCTYPE corpus SYSTEM "http://example.org/corpus.dtd">',
])
def test_xml_document_type_and_entity_declarations_refused(tmp_path, doctype):
    text = ('<?xml version="1.0"?>\n' + doctype + '\n<corpus><document id="D">'
            '<sentence id="s" text="&b;"/></document></corpus>')
    path = _write(tmp_path / "dtd.xml", text)
    with pytest.raises(RelationFormatError, match=r"dtd\.xml:2: a document type declaration .* is refused"):
        read_interaction_xml(path)
    corpus = read_interaction_xml(path, on_error="skip")
    assert len(corpus) == 0 and "refused" in corpus.skipped[0].reason


def test_undeclared_entity_reference_is_not_well_formed(tmp_path):
    path = _write(tmp_path / "ref.xml", _xml('<sentence id="s" text="&x;"/>'))
    with pytest.raises(RelationFormatError, match="undefined entity"):
        read_interaction_xml(path)


# ----------------------------------------------------------------------------- duplicates across files
def test_duplicate_ids_across_files(tmp_path):
    a = _write(tmp_path / "a.xml", _xml(_good(0)))
    b = _write(tmp_path / "b.xml", _xml(_good(1)))  # the same document id in another file
    with pytest.raises(RelationFormatError) as info:
        read_relations([a, b])
    assert str(info.value) == f"{b}:1: record D.d0: duplicate document id D.d0: also at {a}:1"
    corpus = read_relations([a, b], on_error="skip")
    assert [s.id for s in corpus] == ["D.d0.s0"] and corpus.skipped[0].record == "D.d0"

    j1 = _write(tmp_path / "j1.jsonl", json.dumps({"id": "s", "document": "x", "text": "", "entities": []}) + "\n")
    j2 = _write(tmp_path / "j2.jsonl", "\n" + json.dumps({"id": "s", "document": "y", "text": "", "entities": []}))
    with pytest.raises(RelationFormatError, match=rf"j2\.jsonl:2: record s: duplicate sentence id: also at {j1}:1"):
        read_relations([j1, j2])
    j3 = _write(tmp_path / "j3.jsonl", json.dumps({"id": "t", "document": "x", "text": "", "entities": []}))
    with pytest.raises(RelationFormatError, match=rf"j3\.jsonl:1: record t: duplicate document id x: also at {j1}:1"):
        read_relations_jsonl([j1, j3])
    # across formats: a JSON Lines sentence with the id of an XML one
    j4 = _write(tmp_path / "j4.jsonl", json.dumps({"id": "D.d0.s0", "text": "", "entities": []}))
    with pytest.raises(RelationFormatError, match=rf"record D.d0.s0: duplicate sentence id: also at {a}:1"):
        read_relations([a, j4])


# ----------------------------------------------------------------------------- BRAT
def test_brat_offsets_become_sentence_relative():
    corpus = read_brat(DATA / "doc1.txt")
    assert [(s.id, s.line, s.text) for s in corpus] == [
        ("doc1.s0", 1, "Title line about KinC."),
        ("doc1.s1", 3, "KinC activates SigE and SigK."),
        ("doc1.s2", 4, "SigE binds RNA polymerase."),
    ]
    assert {s.document for s in corpus} == {"doc1"} and corpus[0].file == str(DATA / "doc1.txt")
    s1, s2 = corpus[1], corpus[2]
    assert [(e.id, e.spans, e.type) for e in s1.entities] == [
        ("T2", ((0, 4),), "Protein"), ("T3", ((15, 19),), "Protein"), ("T4", ((24, 28),), "Protein")]
    assert [(e.id, e.spans, e.text) for e in s2.entities] == [
        ("T5", ((0, 4),), "SigE"), ("T6", ((11, 25),), "RNA polymerase"),
        ("T7", ((0, 4), (15, 25)), "SigE polymerase")]
    assert s1.interactions == (Interaction("T2", "T3", "R1", "Activation"), Interaction("T4", "T2", "R2", "PPI"))
    assert [(p.e1.id, p.e2.id, p.label) for p in s1.pairs()] == [
        ("T2", "T3", True), ("T2", "T4", True), ("T3", "T4", False)]
    # the cross-sentence relation R3 is listed (both modes); notes, attributes, Equiv passed over
    for mode in ("raise", "skip"):
        skipped = read_brat(DATA / "doc1.ann", on_error=mode).skipped
        assert [(k.file, k.line, k.record) for k in skipped] == [(str(DATA / "doc1.ann"), 10, "doc1")]
        assert "R3: T3 and T5 lie in different sentences (doc1.s1 and doc1.s2)" in skipped[0].reason


def test_brat_folder_crlf_and_document_mode(tmp_path):
    d = tmp_path / "coll" / "sub"
    d.mkdir(parents=True)
    (d / "x.txt").write_bytes(b"KinC binds SigE.\r\nSigK.\r\n")
    (d / "x.ann").write_bytes(b"T1\tP 0 4\tKinC\nT2\tP 11 15\tSigE\nT3\tP 18 22\tSigK\nR1\tB Arg1:T2 Arg2:T1\n")
    (tmp_path / "coll" / "annotation.conf").write_text("[entities]\nP\n")
    corpus = read_relations(tmp_path / "coll")
    assert [s.text for s in corpus] == ["KinC binds SigE.", "SigK."]
    assert corpus[1].entities[0].spans == ((0, 4),)
    assert [p.label for p in corpus.pairs()] == [True]
    whole = read_brat(d / "x.ann", sentences="document")
    assert [s.id for s in whole] == ["x.s0"] and len(whole.pairs()) == 3
    with pytest.raises(ValueError, match="sentences must be one of"):
        read_brat(d, sentences="spacy")


def _brat(tmp_path: Path, ann: str, text: str = "KinC binds SigE.\nSigK and GerE.\n") -> Path:
    _write(tmp_path / "doc.txt", text)
    return _write(tmp_path / "doc.ann", ann)


def test_brat_entity_crossing_a_sentence_boundary(tmp_path):
    ann = _brat(tmp_path, "T1\tP 0 4\tKinC\nT2\tP 11 21\tSigE. SigK\nT3\tP 17 21\tSigK\nR1\tB Arg1:T2 Arg2:T3\n")
    with pytest.raises(RelationFormatError, match=r"doc\.ann:2: record doc: entity T2: 11 21 crosses a sentence"):
        read_brat(ann)
    corpus = read_brat(ann, on_error="skip")
    assert [len(s.entities) for s in corpus] == [1, 1]  # only T2 left out
    assert [k.line for k in corpus.skipped] == [2, 4]
    assert "argument T2 crosses a sentence boundary" in corpus.skipped[1].reason


@pytest.mark.parametrize(("line", "message", "record"), [
    # placed in a sentence: the sentence is left out with it (its pairs would be incomplete)
    ("T9\tP 0 5\tKinC", "entity T9: text 'KinC' differs from the text at 0 5, 'KinC '", "doc.s0"),
    ("R9\tB Arg1:T1 Arg2:T7", "relation R9: argument T7 is no annotation of the document", "doc.s0"),
    # in no sentence: it costs only itself
    ("T9\tP 4 0\tKinC", "entity T9: span 4-0 is empty or reversed", "doc"),
    ("T9\tP 0 99\tKinC", "entity T9: offsets 0 99 lie outside the document text (32 characters)", "doc"),
    ("T9\tP 0-4\tKinC", "entity T9: not 'ID<TAB>TYPE START END", "doc"),
    ("R9\tB Arg1:T1", "relation R9: not 'ID<TAB>TYPE ROLE1:ARG1 ROLE2:ARG2'", "doc"),
    ("T1\tP 0 4\tKinC", "annotation T1: id given twice (also line 1)", "doc"),
    ("X1\tsomething", "unknown annotation", "doc"),
])
def test_brat_bad_annotation_strict_and_lenient(tmp_path, line, message, record):
    ann = _brat(tmp_path, f"T1\tP 0 4\tKinC\n{line}\nT2\tP 17 21\tSigK\nT3\tP 26 30\tGerE\nR1\tB Arg1:T2 Arg2:T3\n")
    with pytest.raises(RelationFormatError) as info:
        read_brat(ann)
    err = info.value
    assert (err.file, err.line, err.record) == (str(ann), 2, record) and message in str(err)
    corpus = read_brat(ann, on_error="skip")
    assert [(k.line, k.record) for k in corpus.skipped] == [(2, record)] and message in corpus.skipped[0].reason
    assert [s.id for s in corpus] == (["doc.s1"] if record == "doc.s0" else ["doc.s0", "doc.s1"])
    assert [p.label for p in corpus[-1].pairs()] == [True]


def test_brat_bad_entity_leaves_its_sentence_out(tmp_path):
    ann = _brat(tmp_path, "T1\tP 0 4\tKinC\nT2\tP 11 15\tSigF\nT3\tP 17 21\tSigK\nT4\tP 26 30\tGerE\n")
    corpus = read_brat(ann, on_error="skip")
    assert [s.id for s in corpus] == ["doc.s1"]
    assert corpus.skipped[0].record == "doc.s0" and "entity T2" in corpus.skipped[0].reason


def test_brat_events_unsupported(tmp_path):
    ann = _brat(tmp_path, "T1\tP 0 4\tKinC\nT2\tBinding 5 10\tbinds\nT3\tP 11 15\tSigE\n"
                          "E1\tBinding:T2 Theme:T1 Theme2:T3\nT4\tP 17 21\tSigK\n")
    with pytest.raises(RelationFormatError, match=r"doc\.ann:4: record doc: event E1: event annotations \(E\) are not supported"):
        read_brat(ann)
    corpus = read_brat(ann, on_error="skip")
    assert [e.id for e in corpus[0].entities] == ["T1", "T3"]  # the trigger T2 left out
    assert len(corpus.skipped) == 1 and "not supported" in corpus.skipped[0].reason


def test_brat_missing_partner_and_bad_text(tmp_path):
    _write(tmp_path / "lone.txt", "KinC.\n")
    with pytest.raises(RelationFormatError, match=r"lone\.ann: record lone: lone\.txt has no \.ann file"):
        read_brat(tmp_path)
    (tmp_path / "lone.txt").unlink()
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9\n")
    _write(tmp_path / "latin.ann", "")
    _write(tmp_path / "ok.txt", "KinC.\n")
    _write(tmp_path / "ok.ann", "T1\tP 0 4\tKinC\n")
    with pytest.raises(RelationFormatError, match=r"latin\.txt: record latin: not UTF-8"):
        read_brat(tmp_path)
    corpus = read_brat(tmp_path, on_error="skip")
    assert [s.id for s in corpus] == ["ok.s0"] and corpus.skipped[0].record == "latin"
    with pytest.raises(ValueError, match="a BRAT document is a .txt file"):
        read_brat(tmp_path / "ok.csv")


# ----------------------------------------------------------------------------- JSON Lines
def test_jsonl_reading():
    corpus = read_relations_jsonl(JSONL)
    j1, j2, j3 = corpus
    assert (j1.id, j1.document, j1.line, j1.labelled) == ("j1", "docA", 1, True)
    assert [(e.spans, e.text, e.type) for e in j1.entities] == [
        (((0, 4),), "KinC", "agent"), (((9, 13),), "KinD", "agent"), (((23, 30),), "Spo0A~P", "target")]
    assert [p.label for p in j1.pairs()] == [False, True, True]
    assert j2.entities[0].spans == ((0, 6), (17, 22)) and [p.label for p in j2.pairs()] == [False]
    assert (j3.id, j3.document, j3.line, j3.labelled) == ("sample.4", "sample.4", 4, False)
    assert [p.label for p in j3.pairs()] == [None]


GOOD_RECORD = {"id": "ok", "text": "KinC binds SigE", "entities": [{"id": "a", "start": 0, "end": 4}]}


@pytest.mark.parametrize(("record", "record_id", "message"), [
    ('{"id": "r", "text": "KinC", "entities": [{"id": "a", "start": 0, "end": 9}]}', "r", "entity a: offsets 0-9 lie outside"),
    ('{"id": "r", "text": "KinC", "entities": [{"id": "a", "start": 0, "end": 4, "text": "Kin"}]}', "r", "differs"),
    ('{"id": "r", "text": "KinC", "entities": [{"id": "a", "start": 0}]}', "r", "start and end go together"),
    ('{"id": "r", "text": "KinC", "entities": [{"id": "a", "spans": [[0, "4"]]}]}', "r", "a span must be [start, end]"),
    ('{"id": "r", "text": "KinC", "entities": [{"id": "a", "start": 0, "end": 4}], '
     '"interactions": [{"e1": "a", "e2": "b"}]}', "r", "e2 names entity b"),
    ('{"id": "r", "text": "KinC"}', "r", "no entities"),
    ('{"id": "r", "entities": []}', "r", "no text"),
    ('{"id": 5, "text": "", "entities": []}', None, "id must be a non-empty string"),
    ('{"id": "r", "text": "x", "entities": [], "document": ""}', "r", "document must be"),
    ('["not", "an", "object"]', None, "must be a JSON object"),
    ('{"id": "r", "text": ', None, "not valid JSON"),
    ('{"text": "KinC", "entities": [{"id": "a", "start": 4, "end": 4}]}', "bad.2", "empty or reversed"),
    ("[" * 5000 + "]" * 5000, None, "levels deep"),
])
def test_jsonl_bad_line_strict_and_lenient(tmp_path, record, record_id, message):
    path = _write(tmp_path / "bad.jsonl", json.dumps(GOOD_RECORD) + "\n" + record + "\n"
                  + json.dumps({**GOOD_RECORD, "id": "ok2"}) + "\n")
    with pytest.raises(RelationFormatError) as info:
        read_relations_jsonl(path)
    err = info.value
    assert (err.file, err.line, err.record) == (str(path), 2, record_id) and message in err.reason
    prefix = f"{path}:2: record {record_id}: " if record_id else f"{path}:2: "
    assert str(err).startswith(prefix)
    corpus = read_relations_jsonl(path, on_error="skip")
    assert [s.id for s in corpus] == ["ok", "ok2"]
    assert [(k.line, k.record) for k in corpus.skipped] == [(2, record_id)]


def test_jsonl_not_utf8_line_costs_only_itself(tmp_path):
    path = tmp_path / "latin.jsonl"
    path.write_bytes(json.dumps(GOOD_RECORD).encode() + b'\n{"id": "caf\xe9"}\n')
    with pytest.raises(RelationFormatError, match=r"latin\.jsonl:2: not UTF-8"):
        read_relations_jsonl(path)
    assert len(read_relations_jsonl(path, on_error="skip")) == 1


# ----------------------------------------------------------------------------- dispatch
def test_read_relations_dispatch(tmp_path):
    brat = tmp_path / "brat"
    brat.mkdir()
    for name in ("doc1.txt", "doc1.ann"):
        shutil.copy(DATA / name, brat / name)
    corpus = read_relations([XML, JSONL, brat / "doc1.txt"])
    assert [s.document for s in corpus][-1] == "doc1" and len(corpus) == 9
    assert corpus.files == [str(XML), str(JSONL), str(brat / "doc1.txt"), str(brat / "doc1.ann")]
    assert len(read_relations(str(XML))) == 3
    with pytest.raises(ValueError, match="unknown relation corpus format"):
        read_relations([XML, tmp_path / "x.csv"])
    with pytest.raises(ValueError, match="on_error must be one of"):
        read_relations(XML, on_error="ignore")
    with pytest.raises(FileNotFoundError):
        read_relations(tmp_path / "missing.xml")
    assert "cannot read" in read_relations(tmp_path / "missing.xml", on_error="skip").skipped[0].reason


# ----------------------------------------------------------------------------- the PPI corpora
PPI = {  # README: sentences, pairs, interacting pairs, documents train + test
    "BioInfer": (1100, 9666, 2534, 669, 167),
    "HPRD50": (145, 433, 163, 34, 9),
    "IEPA": (486, 817, 335, 160, 40),
    "LLL": (77, 330, 164, 36, 9),
}


@pytest.mark.parametrize("name", sorted(PPI))
def test_ppi_corpora_read_strictly_with_the_readme_counts(ppi_corpora, name):
    sentences, pairs, positives, n_train, n_test = PPI[name]
    train = read_interaction_xml(ppi_corpora / f"{name}-train.xml")
    test = read_interaction_xml(ppi_corpora / f"{name}-test.xml")
    both = read_relations([ppi_corpora / f"{name}-train.xml", ppi_corpora / f"{name}-test.xml"])
    assert both.skipped == [] and len(both) == sentences
    labels = [p.label for p in both.pairs()]
    assert (len(labels), sum(labels)) == (pairs, positives)
    assert (len(train.documents()), len(test.documents())) == (n_train, n_test)
    assert set(train.documents()).isdisjoint(test.documents())  # every document in one file
    assert all(s.document == s.id.rsplit(".", 1)[0] for s in both)
    assert both[0].line == 4  # the files end lines with a bare CR, which expat counts
    if name == "BioInfer":
        assert sum(len(e.spans) > 1 for s in both for e in s.entities) == 122
