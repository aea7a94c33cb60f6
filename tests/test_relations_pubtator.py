"""PubTator: reading (offsets, sentences, concept relations, bad input), the format's
dispatch, writing pairs back, and PubTator/BioC files through ``predict`` and ``evaluate``."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from structkernels.cli import main
from structkernels.formats.pubtator import concept_of, split_sentences
from structkernels.relations import (
    RelationFormatError,
    read_pubtator,
    read_relations,
    relation_format,
    write_pairs,
)

TITLE = "KinC activates SigE."
ABSTRACT = "It is needed. SigE binds GerE and Dr. Smith saw KinC. KinC was low."
# (start, end, mention, type, concept) with document-level offsets
A0 = len(TITLE) + 1


def _ann(pmid: str, text: str, mention: str, nth: int, base: int, typ: str, concept: str) -> str:
    start = base + [i for i in range(len(text)) if text.startswith(mention, i)][nth]
    return f"{pmid}\t{start}\t{start + len(mention)}\t{mention}\t{typ}\t{concept}"


def _doc(pmid: str = "100", relations: tuple[str, ...] = ("CID\tD2\tD3",)) -> str:
    lines = [f"{pmid}|t|{TITLE}", f"{pmid}|a|{ABSTRACT}",
             _ann(pmid, TITLE, "KinC", 0, 0, "Gene", "D1"),
             _ann(pmid, TITLE, "SigE", 0, 0, "Gene", "D2"),
             _ann(pmid, ABSTRACT, "SigE", 0, A0, "Gene", "D2"),
             _ann(pmid, ABSTRACT, "GerE", 0, A0, "Gene", "D3"),
             _ann(pmid, ABSTRACT, "KinC", 0, A0, "Gene", "D1"),
             _ann(pmid, ABSTRACT, "KinC", 1, A0, "Chemical", "-1")]
    lines += [f"{pmid}\t{r}" for r in relations]
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


# ----------------------------------------------------------------------------- reading
def test_offsets_sentences_entities_and_concept_relations(tmp_path):
    path = _write(tmp_path / "a.pubtator", _doc() + "\n" + _doc("200", ("CID\tD1\tD3",)))
    corpus = read_pubtator(path)
    assert [s.text for s in corpus if s.document == "100"] == [
        TITLE, "It is needed.", "SigE binds GerE and Dr. Smith saw KinC.", "KinC was low."]
    s2 = corpus[2]
    assert s2.id == "100.s2" and [e.id for e in s2.entities] == ["T3:D2", "T4:D3", "T5:D1"]
    for s in corpus:
        for e in s.entities:
            assert s.text[e.start:e.end] == e.text
    assert corpus[3].entities[0].id == "T6" and corpus[3].entities[0].type == "Chemical"
    assert concept_of("T3:D2") == "D2" and concept_of("T6") is None
    labels = {(p.sentence.id, p.e1.id, p.e2.id): p.label for p in corpus.pairs()}
    assert labels[("100.s2", "T3:D2", "T4:D3")] is True
    assert labels[("100.s0", "T1:D1", "T2:D2")] is False
    # D1-D3 in document 200: KinC and GerE share sentence s2 only
    assert labels[("200.s2", "T4:D3", "T5:D1")] is True
    assert all(s.labelled for s in corpus) and corpus.skipped == []


def test_a_relation_across_sentences_is_listed_in_both_modes(tmp_path):
    path = _write(tmp_path / "x.pubtator", _doc(relations=("CID\tD1\tD2", "CID\tD3\tD1")))
    # D1-D2: KinC and SigE share the title; D3 (GerE, s2) with D1: KinC in s2 too
    corpus = read_pubtator(path)
    assert corpus.skipped == []
    path = _write(tmp_path / "y.pubtator", _doc(relations=("CID\tD2\tT6",)))
    corpus = read_pubtator(path)
    assert len(corpus.skipped) == 1
    rec = corpus.skipped[0]
    assert rec.line == 9 and rec.record == "100" and "lie in different sentences" in rec.reason
    assert not any(p.label for p in corpus.pairs())


def test_a_file_without_relation_lines_is_unlabelled(tmp_path):
    path = _write(tmp_path / "p.txt", _doc(relations=()))
    assert relation_format(path) == "pubtator"
    corpus = read_relations(path)
    assert corpus and not any(s.labelled for s in corpus)
    assert all(p.label is None for p in corpus.pairs())
    assert all(s.labelled for s in read_pubtator(path, labelled=True))


def test_the_splitter_never_cuts_a_mention():
    text = "It binds E. coli. Dr. Smith agrees. Then Fig. 2 shows it! yes. No."
    assert [text[s:e] for s, e in split_sentences(text)] == [
        "It binds E. coli.", "Dr. Smith agrees.", "Then Fig. 2 shows it! yes.", "No."]
    assert [text[s:e] for s, e in split_sentences(text, [(10, 20)])] == [
        "It binds E. coli. Dr. Smith agrees.", "Then Fig. 2 shows it! yes.", "No."]


BAD = [
    # (line to add or replace, line number of the error, reason)
    ("100\t5\t400\tKinC\tGene\tD1", 9, "lie outside every passage"),
    ("100\t0\t4\tKinD\tGene\tD1", 9, "differs from the text at 0-4"),
    ("100\t0\t4\tKinC", 9, "annotation 7: not PMID<TAB>start"),
    ("100\tfoo", 9, "not a PubTator line"),
    ("100\t0\tx\tKinC\tGene\tD1", 9, "start and end integers"),
    ("100\t4\t0\tKinC\tGene\tD1", 9, "empty or reversed"),
    ("101\t0\t4\tKinC\tGene\tD1", 9, "a line of document '101' inside document 100"),
    ("100\tCID\tD2\tD9", 9, "names concept or annotation D9, which the document does not have"),
    ("100|x|more text", 9, "unknown section 'x'"),
]


@pytest.mark.parametrize(("extra", "line", "reason"), BAD)
def test_bad_input_is_one_line_and_lenient_mode_keeps_the_rest(tmp_path, extra, line, reason):
    text = _doc(relations=()) + extra + "\n\n" + _doc("200")
    path = _write(tmp_path / "bad.pubtator", text)
    with pytest.raises(RelationFormatError) as info:
        read_pubtator(path)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(f"{path}:{line}: record 100: ") and reason in msg, msg
    corpus = read_pubtator(path, on_error="skip")
    assert {s.document for s in corpus} >= {"200"} and len([s for s in corpus if s.document == "200"]) == 4
    assert any(r.line == line and reason in r.reason for r in corpus.skipped)
    assert read_relations(path, on_error="skip").skipped  # the same through read_relations


def test_a_document_without_a_title_and_an_empty_file(tmp_path):
    path = _write(tmp_path / "n.pubtator", "100\t0\t4\tKinC\tGene\tD1\n\n" + _doc("200"))
    with pytest.raises(RelationFormatError, match=r"n\.pubtator:1: record 100: a document starts"):
        read_pubtator(path)
    assert [s.document for s in read_pubtator(path, on_error="skip")][0] == "200"
    empty = _write(tmp_path / "e.pubtator", "\n")
    with pytest.raises(RelationFormatError, match="no documents"):
        read_pubtator(empty)


def test_formats_are_told_apart_by_name_and_content(tmp_path):
    assert relation_format(_write(tmp_path / "a.pubtator", _doc())) == "pubtator"
    assert relation_format(_write(tmp_path / "b.txt", _doc())) == "pubtator"
    brat = _write(tmp_path / "c.txt", "100|t|looks like PubTator\n")
    _write(tmp_path / "c.ann", "T1\tProtein 0 3\t100\n")
    assert relation_format(brat) == "brat"  # a .ann beside it: BRAT
    assert relation_format(_write(tmp_path / "d.txt", "KinC binds SigE.\n")) == "brat"
    assert relation_format(_write(tmp_path / "e.xml", '<?xml version="1.0"?>\n<!-- c -->\n'
                                  '<!DOCTYPE collection SYSTEM "BioC.dtd">\n<collection/>')) == "bioc-xml"
    assert relation_format(_write(tmp_path / "f.xml", "<corpus/>")) == "xml"
    assert relation_format(_write(tmp_path / "g.json", '{\n "documents": []\n}')) == "bioc-json"
    assert relation_format(_write(tmp_path / "h.json", '{"documents": [], "source": ""}\n')) == "bioc-json"
    assert relation_format(_write(tmp_path / "i.json", '{"id": "s", "text": "", "entities": []}\n')) == "jsonl"
    assert relation_format("x.bioc.xml.gz") == "bioc-xml" and relation_format("x.pubtator.txt") == "pubtator"


# ----------------------------------------------------------------------------- writing
def _rows(corpus, positive) -> list[dict]:
    rows = []
    for p in corpus.pairs():
        label = int((p.e1.id, p.e2.id) in positive)
        rows.append({"sentence": p.sentence.id, "pair": p.id, "e1": p.e1.id, "e2": p.e2.id,
                     "e1_text": p.e1.text, "e2_text": p.e2.text, "score": 0.5 if label else -0.5,
                     "label": label, "probability": 0.8 if label else 0.2})
    return rows


@pytest.mark.parametrize("fmt", ["pubtator", "bioc-xml", "bioc-json"])
def test_pairs_written_back_read_as_the_relations(tmp_path, fmt):
    src = _write(tmp_path / "in.pubtator", _doc(relations=()) + "\n" + _doc("200", ()))
    corpus = read_relations(src)
    positive = {("T3:D2", "T4:D3"), ("T1:D1", "T2:D2")}
    out = tmp_path / {"pubtator": "out.pubtator", "bioc-xml": "out.bioc.xml",
                      "bioc-json": "out.bioc.json"}[fmt]
    assert write_pairs(corpus, _rows(corpus, positive), out, fmt) == 4
    assert relation_format(out) == fmt
    back = read_relations(out)
    assert [s.text for s in back] == [s.text for s in corpus]
    got = {(p.sentence.id, p.e1.id, p.e2.id) for p in back.pairs() if p.label}
    if fmt == "pubtator":  # relations of concepts: every pair of their mentions in a sentence
        concepts = {frozenset(concept_of(e) for e in pair) for pair in positive}
        want = {p for p in corpus.pairs()
                if frozenset((concept_of(p.e1.id), concept_of(p.e2.id))) in concepts}
    else:
        want = {p for p in corpus.pairs() if (p.e1.id, p.e2.id) in positive}
    assert got == {(p.sentence.id, p.e1.id, p.e2.id) for p in want}
    text = out.read_text(encoding="utf-8")
    if fmt == "pubtator":
        assert "100\tInteraction\tD2\tD3\t0.5\tprobability=0.8\n" in text
    else:
        assert "probability" in text and "Arg1" in text


def test_output_format_checks(tmp_path):
    from structkernels.formats.pairs import output_format

    src = _write(tmp_path / "in.pubtator", _doc())
    jl = _write(tmp_path / "in.jsonl", '{"id": "s", "text": "A", "entities": []}\n')
    assert output_format("same", [src]) == "pubtator" and output_format("bioc-json", [src]) == "bioc-json"
    with pytest.raises(ValueError, match="several formats"):
        output_format("same", [src, jl])
    with pytest.raises(ValueError, match="this input is jsonl"):
        output_format("pubtator", [jl])


# ------------------------------------------------------------------ fuzz: only the one error
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_doc().splitlines() + ["", "100|a|x", "100\t1\t2", "\t", "100\tR\ta\tb",
                                                        "100\t-1\t3\tx\ty\tz", "|t|", "100|t|"]),
                max_size=14),
       st.integers(0, 200), st.text(max_size=6))
def test_fuzzed_pubtator_raises_only_the_format_error(lines, cut, junk):
    text = "\n".join(lines)
    text = text[:cut] + junk + text[cut:]
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "f.pubtator"
        path.write_bytes(text.encode("utf-8", "surrogatepass"))
        try:
            read_pubtator(path)
        except RelationFormatError as exc:
            assert "\n" not in str(exc)
        corpus = read_pubtator(path, on_error="skip")
        for s in corpus:
            for e in s.entities:
                assert s.text[e.start:e.end] == e.text


# ------------------------------------------------------------------ the command line
@pytest.fixture(scope="module")
def spacy_pipeline():
    pytest.importorskip("spacy", reason="predicting needs spaCy (the parse extra)")
    from structkernels.relations.parse import load_pipeline

    try:
        load_pipeline()
    except (ImportError, ValueError) as exc:
        pytest.skip(f"the English spaCy pipeline is not installed ({exc})")


def _hand_model(path: Path) -> Path:
    """A small valid extractor written by hand (no training): it scores 'A activates B'."""
    from structkernels.extraction import EXTRACTOR_FORMAT

    doc = {
        "format": EXTRACTOR_FORMAT, "version": 1,
        "params": {"pipeline": "en_core_web_sm", "blind": True, "C": 1.0,
                   "sigma_params": None, "random_state": 0, "max_exact": 20000},
        "pipeline": {"name": "en_core_web_sm", "package": "en_core_web_sm", "version": "3.8.0",
                     "spacy": "3.8.2"},
        "kernel": {"path": {"lam": 0.8, "node_mismatch": 0.9}, "context": {"binary": True}},
        "sigma": {"conj": 0.0},
        "train": {"pairs": 4, "positives": 2, "route": "exact"},
        "svm": {"intercept": -0.1, "weights": [0.5, -0.5]},
        "references": [
            {"path": [[None, "PROT1"], ["nsubj-of", "activate"], ["dobj", "PROT2"]],
             "context": ["m:activate"]},
            {"path": [[None, "PROT1"], ["conj", "PROT2"]], "context": ["m:and"]},
        ],
    }
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_predict_writes_pubtator_and_bioc(spacy_pipeline, tmp_path, capsys):
    model = _hand_model(tmp_path / "m.json")
    src = _write(tmp_path / "in.pubtator", _doc(relations=()))
    out = tmp_path / "out.pubtator"
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert main(["predict", "--model", str(model), src, "-o", str(out),
                 "--output-format", "same", *cache]) == 0, capsys.readouterr().err
    back = read_relations(out)
    assert [s.text for s in back] == [s.text for s in read_relations(src)]
    assert "scored" in capsys.readouterr().err
    # BioC XML in, BioC XML out; and JSON Lines by default
    bioc = tmp_path / "in.bioc.xml"
    assert main(["predict", "--model", str(model), src, "-o", str(bioc), "--output-format",
                 "bioc-xml", *cache]) == 0
    xml_out = tmp_path / "out.xml"
    assert main(["predict", "--model", str(model), str(bioc), "-o", str(xml_out),
                 "--output-format", "same", *cache]) == 0
    assert relation_format(xml_out) == "bioc-xml" and len(read_relations(xml_out)) == 4
    rows = tmp_path / "rows.jsonl"
    assert main(["predict", "--model", str(model), str(bioc), "-o", str(rows), *cache]) == 0
    first = json.loads(rows.read_text(encoding="utf-8").splitlines()[0])
    assert first["sentence"] == "100.s0" and first["e1"] == "T1:D1"
    capsys.readouterr()
    jl = _write(tmp_path / "x.jsonl", '{"id": "s", "text": "A b", "entities": []}\n')
    assert main(["predict", "--model", str(model), jl, "--output-format", "pubtator", *cache]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "this input is jsonl" in err


def test_evaluate_reads_a_pubtator_corpus(spacy_pipeline, tmp_path, capsys):
    docs = []
    names = ["KinA", "KinB", "KinC", "SigE", "SigF", "Spo0A", "GerE", "CotD"]
    for i in range(8):
        a, b = names[i], names[(i + 3) % 8]
        title = f"{a} directly activates {b} in sporulating cells."
        abstract = f"The levels of {b} and of {a} were measured in RsbV strains."
        pmid = str(1000 + i)
        lines = [f"{pmid}|t|{title}", f"{pmid}|a|{abstract}",
                 _ann(pmid, title, a, 0, 0, "Gene", f"C{a}"), _ann(pmid, title, b, 0, 0, "Gene", f"C{b}"),
                 _ann(pmid, abstract, b, 0, len(title) + 1, "Gene", f"C{b}"),
                 _ann(pmid, abstract, a, 0, len(title) + 1, "Gene", f"C{a}"),
                 _ann(pmid, abstract, "RsbV", 0, len(title) + 1, "Gene", "CRsbV"),
                 f"{pmid}\tCID\tC{a}\tC{b}"]
        docs.append("\n".join(lines) + "\n")
    path = _write(tmp_path / "corpus.pubtator", "\n".join(docs))
    corpus = read_relations(path)
    # the relation joins the title's mentions; the abstract's pair of the same concepts too
    assert [sum(p.label is v for p in corpus.pairs()) for v in (True, False)] == [16, 16]
    rc = main(["evaluate", path, "--cv", "2", "--models", "n-gram SVM", "--no-cache", "-q", "--json"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "n-gram SVM" in captured.out
