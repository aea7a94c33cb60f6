"""BioC XML and JSON: documents, passages and sentences, discontinuous annotations,
relations by node and by concept, bad input, safe XML, writing pairs back."""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from structkernels.relations import (
    RelationFormatError,
    read_bioc,
    read_relations,
    relation_format,
    write_pairs,
)

TITLE = "KinC activates SigE."
ABSTRACT = "Muscle and brain actin bind GerE. SigE binds GerE."
A0 = len(TITLE) + 1


def _a(aid: str, offset: int, text: str, typ: str = "Gene", ident: str | None = None,
       locations: list | None = None) -> str:
    locs = locations or [(offset, len(text))]
    infons = f'<infon key="type">{typ}</infon>' + (f'<infon key="identifier">{ident}</infon>'
                                                   if ident else "")
    loc = "".join(f'<location offset="{o}" length="{n}"/>' for o, n in locs)
    return f'<annotation id="{aid}">{infons}{loc}<text>{text}</text></annotation>'


def _r(rid: str, a: str, b: str) -> str:
    return (f'<relation id="{rid}"><infon key="type">PPI</infon><node refid="{a}" role="Arg1"/>'
            f'<node refid="{b}" role="Arg2"/></relation>')


def _xml_doc(did: str = "d1", relations: str | None = None, extra: str = "") -> str:
    rels = _r("R1", "a1", "a2") + _r("R2", "a3", "a4") if relations is None else relations
    return (f"<document><id>{did}</id>\n"
            f'<passage><infon key="type">title</infon><offset>0</offset><text>{TITLE}</text>\n'
            f'{_a("a1", 0, "KinC", ident="G1")}\n{_a("a2", 15, "SigE", ident="G2")}\n</passage>\n'
            f"<passage><offset>{A0}</offset><text>{ABSTRACT}</text>\n"
            # "muscle ... actin": a discontinuous mention
            f'{_a("a3", A0, "Muscle actin", locations=[(A0, 6), (A0 + 17, 5)])}\n'
            f'{_a("a4", A0 + 28, "GerE", ident="G3")}\n{_a("a5", A0 + 34, "SigE", ident="G2")}\n'
            f'{_a("a6", A0 + 45, "GerE", ident="G3")}\n{extra}</passage>\n{rels}\n</document>\n')


def _xml(*docs: str, doctype: str = '<!DOCTYPE collection SYSTEM "BioC.dtd">') -> str:
    return ('<?xml version="1.0" encoding="UTF-8"?>\n' + doctype + "\n<collection><source>t</source>"
            "<date/><key/>\n" + "".join(docs) + "</collection>\n")


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def _json_doc(did: str = "d1") -> dict:
    def ann(aid, locs, text, ident=None):
        infons = {"type": "Gene", **({"identifier": ident} if ident else {})}
        return {"id": aid, "infons": infons, "text": text,
                "locations": [{"offset": o, "length": n} for o, n in locs]}
    return {"id": did, "infons": {}, "passages": [
        {"offset": 0, "infons": {"type": "title"}, "text": TITLE,
         "annotations": [ann("a1", [(0, 4)], "KinC", "G1"), ann("a2", [(15, 4)], "SigE", "G2")]},
        {"offset": A0, "text": ABSTRACT, "annotations": [
            ann("a3", [(A0, 6), (A0 + 17, 5)], "Muscle actin"), ann("a4", [(A0 + 28, 4)], "GerE", "G3"),
            ann("a5", [(A0 + 34, 4)], "SigE", "G2"), ann("a6", [(A0 + 45, 4)], "GerE", "G3")],
         "relations": [{"id": "R2", "infons": {"type": "PPI"},
                        "nodes": [{"refid": "a3", "role": "Arg1"}, {"refid": "a4", "role": "Arg2"}]}]}],
        "relations": [{"id": "R1", "infons": {"type": "PPI"},
                       "nodes": [{"refid": "a1", "role": "Arg1"}, {"refid": "a2", "role": "Arg2"}]}]}


def _check_good(corpus) -> None:
    assert [s.text for s in corpus] == [TITLE, "Muscle and brain actin bind GerE.", "SigE binds GerE."]
    s1 = corpus[1]
    muscle = s1.entities[0]
    assert muscle.id == "a3" and muscle.spans == ((0, 6), (17, 22)) and muscle.text == "Muscle actin"
    for s in corpus:
        for e in s.entities:
            assert " ".join(s.text[a:b] for a, b in e.spans) == e.text
    assert {(p.e1.id, p.e2.id) for p in corpus.pairs() if p.label} == {("a1", "a2"), ("a3", "a4")}
    assert all(s.labelled for s in corpus)


def test_xml_with_passages_discontinuous_entities_and_relations(tmp_path):
    path = _write(tmp_path / "x.xml", _xml(_xml_doc()))
    assert relation_format(path) == "bioc-xml"
    corpus = read_relations(path)
    _check_good(corpus)
    assert corpus[0].line == 5 and corpus[0].id == "d1.s0"


def test_json_and_its_pubtator3_form(tmp_path):
    path = _write(tmp_path / "x.json", json.dumps({"source": "", "documents": [_json_doc()]}, indent=1))
    assert relation_format(path) == "bioc-json"
    _check_good(read_relations(path))
    gz = tmp_path / "p.bioc.json.gz"
    gz.write_bytes(gzip.compress(json.dumps({"PubTator3": [_json_doc("d2")]}).encode()))
    _check_good(read_relations(gz))


def test_sentence_elements_are_the_sentences(tmp_path):
    doc = ("<document><id>d</id><passage><offset>10</offset>"
           f"<sentence><offset>10</offset><text>KinC binds SigE. Yes.</text>"
           f'{_a("x", 10, "KinC")}{_a("y", 21, "SigE")}{_r("r", "x", "y")}</sentence>'
           "<sentence><offset>32</offset><text>GerE is alone.</text>"
           f'{_a("z", 32, "GerE")}</sentence></passage></document>')
    corpus = read_bioc(_write(tmp_path / "s.bioc.xml", _xml(doc)))
    assert [s.text for s in corpus] == ["KinC binds SigE. Yes.", "GerE is alone."]
    assert [(p.e1.id, p.e2.id, p.label) for p in corpus.pairs()] == [("x", "y", True)]


def test_relations_across_sentences_are_listed_and_concept_relations(tmp_path):
    rels = _r("R1", "a1", "a4") + (
        '<relation id="R9"><infon key="entity1">G2</infon><infon key="entity2">G3</infon>'
        '<infon key="type">Bind</infon></relation>')
    corpus = read_bioc(_write(tmp_path / "c.bioc.xml", _xml(_xml_doc(relations=rels))))
    assert len(corpus.skipped) == 1 and "R1" in corpus.skipped[0].reason
    assert "lie in different sentences" in corpus.skipped[0].reason and corpus.skipped[0].record == "d1"
    assert {(p.e1.id, p.e2.id) for p in corpus.pairs() if p.label} == {("a5", "a6")}


def test_without_relations_the_file_is_unlabelled(tmp_path):
    corpus = read_bioc(_write(tmp_path / "u.bioc.xml", _xml(_xml_doc(relations=""))))
    assert len(corpus) == 3 and not any(s.labelled for s in corpus)


BAD_XML = [
    (_a("a7", 400, "KinC"), "lie outside every passage"),
    (_a("a7", A0, "Brain"), "differs from the text at"),
    ('<annotation><location offset="0" length="4"/></annotation>', "no id"),
    ('<annotation id="a7"><location offset="x" length="4"/></annotation>', "must be a non-negative integer"),
    (_a("a1", 0, "KinC"), "id given twice in the document"),
    (_r("R7", "a1", "a99"), "names annotation a99, which the document does not have"),
    ('<relation id="R8"><node refid="a1" role="Arg1"/></relation>', "a relation needs two nodes"),
]


@pytest.mark.parametrize(("extra", "reason"), BAD_XML)
def test_bad_xml_records_are_one_line_and_lenient_mode_keeps_the_rest(tmp_path, extra, reason):
    path = _write(tmp_path / "bad.bioc.xml", _xml(_xml_doc(extra=extra), _xml_doc("d2")))
    with pytest.raises(RelationFormatError) as info:
        read_relations(path)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(f"{path}:") and "record d1: " in msg and reason in msg, msg
    line = int(msg[len(path) + 1:].split(":", 1)[0])
    assert 2 < line < 15
    corpus = read_relations(path, on_error="skip")
    assert len([s for s in corpus if s.document == "d2"]) == 3
    assert any(reason in r.reason and r.record == "d1" for r in corpus.skipped)


@pytest.mark.parametrize(("text", "reason", "line"), [
    (_xml(_xml_doc()).replace("</passage>", "</pasage>", 1), "not well-formed XML", 8),
    (_xml(_xml_doc(), doctype='<!DOCTYPE collection [<!ENTITY a "aaaa">]>'), "internal subset", 2),
    (_xml(_xml_doc()).replace("KinC activates", "&x; activates"), "not declared in the file", 5),
    ("<corpus/>", "not <collection>", 1),
    ('{"documents": [}', "not valid JSON", 1),
    ('{\n"documents":\n  [1,\n  }', "not valid JSON", 4),
    ('{"documents": 3}', 'a "documents" array', None),
    ('{"documents": [{"passages": []}]}', "non-empty string id", None),
    ('{"documents": [{"id": "d", "passages": [{"offset": -1, "text": "A"}]}]}',
     "must be a non-negative integer", None),
])
def test_malformed_files(tmp_path, text, reason, line):
    path = _write(tmp_path / "m.bioc", text)
    with pytest.raises(RelationFormatError) as info:
        read_bioc(path)
    assert reason in str(info.value) and info.value.line == line and "\n" not in str(info.value)
    corpus = read_bioc(path, on_error="skip")
    assert corpus.skipped and reason in corpus.skipped[0].reason


def test_malformed_xml_keeps_the_documents_before_the_damage(tmp_path):
    text = _xml(_xml_doc(), _xml_doc("d2")).replace("</collection>", "<document><id>d3</id>")
    corpus = read_bioc(_write(tmp_path / "cut.bioc.xml", text), on_error="skip")
    assert corpus.documents() == ["d1", "d2"] and "the rest of the file is not read" in corpus.skipped[-1].reason


@pytest.mark.parametrize(("src", "fmt"), [("x.bioc.xml", "bioc-xml"), ("x.bioc.xml", "bioc-json"),
                                          ("x.bioc.json", "bioc-xml"), ("x.bioc.json", "bioc-json")])
def test_pairs_written_back_read_as_the_relations(tmp_path, src, fmt):
    text = (_xml(_xml_doc(relations=""), _xml_doc("d2", relations="")) if src.endswith("xml")
            else json.dumps({"documents": [_json_doc(), _json_doc("d2")]}))
    corpus = read_relations(_write(tmp_path / src, text))
    rows = [{"sentence": p.sentence.id, "pair": p.id, "e1": p.e1.id, "e2": p.e2.id,
             "e1_text": p.e1.text, "e2_text": p.e2.text, "score": 1.5 if k % 2 else -0.25,
             "label": k % 2, "probability": 0.75} for k, p in enumerate(corpus.pairs())]
    out = tmp_path / ("out.xml" if fmt == "bioc-xml" else "out.json")
    assert write_pairs(corpus, rows, out, fmt) == sum(r["label"] for r in rows)
    assert relation_format(out) == fmt
    back = read_relations(out)
    assert [s.text for s in back] == [s.text for s in corpus]
    assert [p.label for p in back.pairs()] == [bool(r["label"]) for r in rows]
    assert [p.e1.spans for p in back.pairs()] == [p.e1.spans for p in corpus.pairs()]
    body = out.read_text(encoding="utf-8")
    assert "probability" in body and "0.75" in body and "Arg2" in body


# ------------------------------------------------------------------ fuzz: only the one error
_PIECES = ["<collection>", "</collection>", "<document>", "</document>", "<id>d</id>", "<passage>",
           "</passage>", "<offset>0</offset>", "<offset>x</offset>", "<text>KinC binds</text>",
           '<annotation id="a">', '<annotation id="b">', "</annotation>",
           '<location offset="0" length="4"/>', '<location offset="5" length="9"/>',
           "<text>KinC</text>", '<relation id="r">', "</relation>", '<node refid="a"/>',
           '<node refid="b"/>', '<node refid="q"/>', "<sentence>", "</sentence>", "&amp;", "<"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_PIECES), max_size=30), st.booleans())
def test_fuzzed_bioc_raises_only_the_format_error(pieces, as_json):
    text = "".join(pieces)
    if as_json:
        text = json.dumps({"documents": [{"id": "d", "passages": [{"offset": len(pieces) % 3 - 1,
                           "text": text, "annotations": [{"id": p, "locations": [
                               {"offset": k, "length": k % 5}]} for k, p in enumerate(pieces[:5])]}]}]})
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "f.bioc"
        path.write_text(text, encoding="utf-8")
        try:
            read_bioc(path)
        except RelationFormatError as exc:
            assert "\n" not in str(exc)
        for s in read_bioc(path, on_error="skip"):
            for e in s.entities:
                assert " ".join(s.text[a:b] for a, b in e.spans) == e.text
