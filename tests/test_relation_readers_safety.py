"""Issue 37, the relation readers: BRAT offsets as brat counts them, errors found after
reading named where the record was read, and bounded work per sentence and per fold.

Each test failed on the tree before the change (see docs/reliability.md, "The cases of
issue 37: readers and limits").
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from structkernels import Path as StructPath
from structkernels.cli import main
from structkernels.experiments.relations import document_folds, evaluate_relations
from structkernels.relations import (
    Entity,
    RelationFormatError,
    Sentence,
    read_brat,
    read_interaction_xml,
    read_relations,
    read_relations_jsonl,
)


def _brat(folder: Path, text: bytes, ann: str, name: str = "doc") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.txt").write_bytes(text)
    (folder / f"{name}.ann").write_text(ann, encoding="utf-8")
    return folder / f"{name}.ann"


def _jsonl(path: Path, *records) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _one_line(exc: BaseException, *parts: str) -> str:
    msg = str(exc)
    assert "\n" not in msg and "\r" not in msg, msg
    for part in parts:
        assert part in msg, (part, msg)
    return msg


GOOD = {"id": "good", "document": "g", "text": "KinC binds SigE",
        "entities": [{"id": "a", "start": 0, "end": 4}, {"id": "b", "start": 11, "end": 15}],
        "interactions": [{"e1": "a", "e2": "b"}]}


# ------------------------------------------------------------------ BRAT offsets follow brat
def test_brat_byte_order_mark_is_counted_as_brat_counts_it(tmp_path):
    # brat reads the .txt with Python's utf8 codec: the BOM is character 0 of its offsets
    ann = _brat(tmp_path / "a", "\ufeffKinC binds SigE.\nSigK.\n".encode(),
                "T1\tP 1 5\tKinC\nT2\tP 12 16\tSigE\nT3\tP 18 22\tSigK\nR1\tB Arg1:T1 Arg2:T2\n")
    corpus = read_brat(ann)
    assert [s.text for s in corpus] == ["KinC binds SigE.", "SigK."]  # no BOM in a sentence
    assert [(e.id, e.spans, e.text) for e in corpus[0].entities] == [
        ("T1", ((0, 4),), "KinC"), ("T2", ((11, 15),), "SigE")]
    assert [p.label for p in corpus.pairs()] == [True]
    assert corpus.skipped == []
    # offsets that do not count the BOM are refused with the reason named
    ann = _brat(tmp_path / "b", "\ufeffKinC binds SigE.\n".encode(), "T1\tP 0 4\tKinC\n")
    with pytest.raises(RelationFormatError) as exc:
        read_brat(ann)
    _one_line(exc.value, f"{ann}:1", "byte-order mark, which brat counts as character 0")


LINE_ENDS_BRAT_KEEPS = ["\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("end", LINE_ENDS_BRAT_KEEPS, ids=[f"U+{ord(c):04X}" for c in LINE_ENDS_BRAT_KEEPS])
def test_brat_line_ends_brat_does_not_count_stay_in_the_line_and_are_named(tmp_path, end):
    # brat's sentence splitters end lines at \n only; str.splitlines would split at `end`
    text = f"KinC binds SigE.{end}SigK and GerE.\n"
    ann = _brat(tmp_path, text.encode(), "T1\tP 0 4\tKinC\nT2\tP 17 21\tSigK\nR1\tB Arg1:T1 Arg2:T2\n")
    with pytest.warns(UserWarning, match=r"doc\.txt:1: record doc: 1 line end\(s\) that brat does not count") as got:
        corpus = read_brat(ann)
    assert len([w for w in got if "brat does not count" in str(w.message)]) == 1
    assert [s.text for s in corpus] == [text[:-1]]  # one sentence, as brat shows it
    (pair,) = corpus.pairs()
    assert (pair.e1.text, pair.e2.text, pair.label) == ("KinC", "SigK", True)
    assert "\n" not in str(got[0].message)


def test_brat_lf_and_crlf_end_lines_without_a_warning(tmp_path):
    for k, end in enumerate(["\n", "\r\n"]):
        text = f"KinC binds SigE.{end}SigK and GerE.{end}"
        second = 16 + len(end)
        ann = _brat(tmp_path / str(k), text.encode(),
                    f"T1\tP 0 4\tKinC\nT2\tP {second} {second + 4}\tSigK\n")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            corpus = read_brat(ann)
        assert [s.text for s in corpus] == ["KinC binds SigE.", "SigK and GerE."]


# ------------------------------------------------------------------ one mention under two ids
def test_brat_relation_between_two_ids_of_one_span_is_refused_not_scored_positive(tmp_path):
    ann = _brat(tmp_path, b"KinC binds SigE.\nSigK binds GerE.\n",
                "T1\tP 0 4\tKinC\nT2\tP 0 4\tKinC\nT3\tP 11 15\tSigE\nR1\tB Arg1:T1 Arg2:T2\n"
                "T4\tP 17 21\tSigK\nT5\tP 28 32\tGerE\nR2\tB Arg1:T4 Arg2:T5\n")
    with pytest.raises(RelationFormatError) as exc:
        read_brat(ann)
    _one_line(exc.value, f"{ann}:4", "record doc.s0", "relation R1", "T1 and T2",
              "same span 0-4", "lines 1 and 2")
    corpus = read_brat(ann, on_error="skip")
    assert [s.id for s in corpus] == ["doc.s1"]
    assert [k.line for k in corpus.skipped] == [4]
    assert all(p.e1.spans != p.e2.spans or not p.label for p in corpus.pairs())


def test_jsonl_and_xml_relation_between_two_ids_of_one_span_is_refused(tmp_path):
    dup = {"id": "s1", "document": "d1", "text": "KinC binds SigE",
           "entities": [{"id": "a", "start": 0, "end": 4}, {"id": "a2", "start": 0, "end": 4},
                        {"id": "b", "start": 11, "end": 15}],
           "interactions": [{"id": "i0", "e1": "a", "e2": "a2"}]}
    f = _jsonl(tmp_path / "x.jsonl", GOOD, dup)
    with pytest.raises(RelationFormatError) as exc:
        read_relations_jsonl(f)
    _one_line(exc.value, f"{f}:2", "record s1", "interaction i0", "a and a2", "same span 0-4")
    lenient = read_relations_jsonl(f, on_error="skip")
    assert [s.id for s in lenient] == ["good"] and [k.line for k in lenient.skipped] == [2]
    xml = tmp_path / "x.xml"
    xml.write_text(
        '<corpus source="x"><document id="d0"><sentence id="d0.s0" text="KinC binds SigE">\n'
        '<entity id="e0" charOffset="0-4" text="KinC"/><entity id="e1" charOffset="0-4" text="KinC"/>\n'
        '<interaction id="i0" e1="e0" e2="e1"/></sentence></document></corpus>')
    with pytest.raises(RelationFormatError) as exc:
        read_interaction_xml(xml)
    _one_line(exc.value, f"{xml}:3", "record d0.s0", "interaction i0", "e0 and e1")
    # the same span under two ids without a relation between them stays two candidates,
    # as in the PPI corpora (BioInfer has two such pairs, both negative)
    ok = {**dup, "interactions": [{"e1": "a", "e2": "b"}]}
    corpus = read_relations_jsonl(_jsonl(tmp_path / "ok.jsonl", ok))
    assert [(p.e1.id, p.e2.id, p.label) for p in corpus.pairs()] == [
        ("a", "a2", False), ("a", "b", True), ("a2", "b", False)]


# ------------------------------------------------------------------ named at reading time
def test_whitespace_only_entity_is_refused_where_it_is_read(tmp_path):
    blank = {"id": "s1", "document": "d1", "text": "KinC  binds SigE",
             "entities": [{"id": "a", "start": 0, "end": 4}, {"id": "w", "start": 4, "end": 6}]}
    f = _jsonl(tmp_path / "x.jsonl", GOOD, blank)
    with pytest.raises(RelationFormatError) as exc:
        read_relations_jsonl(f)
    _one_line(exc.value, f"{f}:2", "record s1", "entity w", "only white space")
    assert [s.id for s in read_relations_jsonl(f, on_error="skip")] == ["good"]
    ann = _brat(tmp_path / "b", b"KinC  binds SigE.\n", "T1\tP 0 4\tKinC\nT2\tP 4 6\t  \n")
    with pytest.raises(RelationFormatError) as exc:
        read_brat(ann)
    _one_line(exc.value, f"{ann}:2", "entity T2", "only white space")
    xml = tmp_path / "x.xml"
    xml.write_text('<corpus source="x"><document id="d0"><sentence id="d0.s0" text="KinC  binds">'
                   '<entity id="e0" charOffset="4-6" text="  "/></sentence></document></corpus>')
    with pytest.raises(RelationFormatError) as exc:
        read_interaction_xml(xml)
    _one_line(exc.value, f"{xml}:1", "record d0.s0", "entity e0", "only white space")


@pytest.mark.parametrize("where", ["text", "id", "document", "entity id", "entity type",
                                   "interaction type"])
def test_lone_surrogate_is_refused_where_it_is_read(tmp_path, where):
    rec = json.loads(json.dumps({**GOOD, "id": "s1", "document": "d1"}))
    sur = "\ud800"
    if where == "text":
        rec["text"] = "KinC binds SigE" + sur
    elif where in ("id", "document"):
        rec[where] = "s" + sur
    elif where == "entity id":
        rec["entities"][1]["id"] = "b" + sur
        rec["interactions"] = []
    elif where == "entity type":
        rec["entities"][1]["type"] = "P" + sur
    else:
        rec["interactions"][0]["type"] = "PPI" + sur
    f = tmp_path / "x.jsonl"
    f.write_text(json.dumps(GOOD) + "\n" + json.dumps(rec) + "\n", encoding="utf-8")
    with pytest.raises(RelationFormatError) as exc:
        read_relations_jsonl(f)
    msg = _one_line(exc.value, f"{f}:2", "lone surrogate U+D800")
    msg.encode("utf-8")  # printable and loggable as UTF-8
    corpus = read_relations_jsonl(f, on_error="skip")
    assert [s.id for s in corpus] == ["good"] and [k.line for k in corpus.skipped] == [2]


def test_parser_error_names_the_file_line_and_sentence():
    from structkernels.graphs.model import Graph, add_node, new_graph
    from structkernels.relations.parse import ParsedSentence
    from structkernels.relations.structures import pair_structures

    s = Sentence("s1", "Ras binds Raf", "d1",
                 (Entity("e1", ((0, 3),), "Ras"), Entity("e2", ((10, 13),), "Raf")),
                 file="corpus.jsonl", line=7)
    G = new_graph("s1", "dependency", root="2")
    for k, w in enumerate(["Ras", "binds", "Raf"], 1):
        add_node(G, str(k), w, lemma=w.lower(), pos="X", index=k)
    parsed = ParsedSentence("s1", Graph("s1", s.text, G), ((0, 3), (4, 9), (10, 13)),
                            {"e1": (), "e2": ("3",)})
    with pytest.raises(ValueError) as exc:
        pair_structures(parsed, s.pairs()[0])
    _one_line(exc.value, "corpus.jsonl:7", "record s1", "entity e1", "covers no token")


# ------------------------------------------------------------------ folds and models
def _toy(n: int = 40):
    items, y, docs = [], [], []
    for i in range(n):
        lab = int(i % 4 == 0)
        edge = "nsubj-of" if lab else "conj"
        items.append({"path": StructPath([(None, "PROT1"), (edge, "bind"), ("dobj", "PROT2")]),
                      "context": (f"m:{edge}", f"w:{i % 7}")})
        y.append(lab)
        docs.append(f"d{i}")
    return items, y, docs


def test_fold_without_positive_training_pairs_names_the_fold_and_its_documents():
    items, y, docs = _toy()
    pos = [i for i, v in enumerate(y) if v]
    neg = [i for i, v in enumerate(y) if not v]
    splits = [(np.array(neg[:15] + pos), np.array(neg[15:])),
              (np.array(neg[15:]), np.array(neg[:15] + pos))]  # fold 2 trains on negatives only
    with pytest.raises(ValueError) as exc:
        evaluate_relations(items, y, splits, groups=docs, models=["PK path SVM"], n_jobs=1,
                           progress=False)
    _one_line(exc.value, "fold 2 of 2 has no positive pair in its training documents",
              "(d21, d22, d23, d25, d26, … (15 documents))",
              "the 10 positives lie in its test documents (d0, d4, d8, d12, d16, … (10 documents))",
              "change the folds")


def test_cli_fold_without_positives_is_one_line_before_parsing(tmp_path, capsys):
    recs = [{"id": f"s{d}", "document": f"d{d}", "text": "KinC binds SigE and GerE",
             "entities": [{"id": "a", "start": 0, "end": 4}, {"id": "b", "start": 11, "end": 15}],
             "interactions": [{"e1": "a", "e2": "b"}] if d == 0 else []} for d in range(4)]
    f = _jsonl(tmp_path / "c.jsonl", *recs)
    rc = main(["evaluate", str(f), "--cv", "2", "--models", "PK path SVM", "--no-cache", "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    line = [ln for ln in err.splitlines() if "error:" in ln]
    assert len(line) == 1 and "has no positive pair in its training documents" in line[0]
    assert "fold 2 of 2" in line[0] or "fold 1 of 2" in line[0]


@pytest.mark.parametrize("models", [",", " , ,"])
def test_cli_models_naming_no_model_is_one_line_listing_the_models(tmp_path, capsys, models):
    f = _jsonl(tmp_path / "c.jsonl", GOOD)
    rc = main(["evaluate", str(f), "--cv", "2", "--models", models, "--no-cache", "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and "n_jobs" not in err
    assert len(err.strip().splitlines()) == 1
    assert "names no model" in err and "NPK SVM" in err and "n-gram SVM" in err


def test_evaluate_relations_without_models_is_refused():
    items, y, docs = _toy()
    with pytest.raises(ValueError, match="no model to evaluate; the models are"):
        evaluate_relations(items, y, document_folds(docs, y, 2), models=[], n_jobs=1,
                           progress=False)


# ------------------------------------------------------------------ bounded work
def _crowded(n_entities: int, sid: str = "big") -> dict:
    words = [f"P{i}" for i in range(n_entities)]
    text = " ".join(words)
    ents, pos = [], 0
    for i, w in enumerate(words):
        ents.append({"id": f"e{i}", "start": pos, "end": pos + len(w)})
        pos += len(w) + 1
    return {"id": sid, "document": sid, "text": text, "entities": ents,
            "interactions": [{"e1": "e0", "e2": "e1"}]}


def test_sentence_with_too_many_entities_is_refused_or_skipped(tmp_path):
    f = _jsonl(tmp_path / "x.jsonl", GOOD, _crowded(200))
    with pytest.raises(RelationFormatError) as exc:
        read_relations(f)
    _one_line(exc.value, f"{f}:2", "record big", "200 entities", "19,900 pairs",
              "MAX_ENTITIES_PER_SENTENCE")
    corpus = read_relations(f, on_error="skip")
    assert [s.id for s in corpus] == ["good"] and [k.line for k in corpus.skipped] == [2]
    # pairs are bounded on their own too (binding when max_entities is raised)
    with pytest.raises(RelationFormatError) as exc:
        read_relations(_jsonl(tmp_path / "y.jsonl", _crowded(12)), max_pairs=50)
    _one_line(exc.value, "12 entities give 66 candidate pairs", "max_pairs=50", "MAX_PAIRS_PER_SENTENCE")
    assert len(read_relations(f, max_entities=200, max_pairs=20_000)) == 2
    # BRAT, a document read as one sentence
    rec = _crowded(150)
    ann = "".join(f"T{i + 1}\tP {e['start']} {e['end']}\tP{i}\n" for i, e in enumerate(rec["entities"]))
    path = _brat(tmp_path / "b", rec["text"].encode() + b"\n", ann)
    with pytest.raises(RelationFormatError) as exc:
        read_brat(path, sentences="document")
    _one_line(exc.value, f"{tmp_path / 'b' / 'doc.txt'}:1", "record doc.s0", "150 entities")


def test_fold_memory_is_checked_before_any_gram_is_computed(monkeypatch):
    from structkernels.kernels.base import Kernel

    items, y, docs = _toy(80)
    folds = document_folds(docs, y, 2)
    monkeypatch.setenv("STRUCTKERNELS_MEMORY_BUDGET", "16K")
    monkeypatch.setattr(Kernel, "gram", lambda *a, **k: pytest.fail("a Gram was computed"))
    with pytest.raises(MemoryError) as exc:
        evaluate_relations(items, y, folds, models=["PK path SVM", "n-gram SVM"], n_jobs=1,
                           progress=False)
    assert isinstance(exc.value, ValueError)  # one line from the command line
    _one_line(exc.value, "80 candidate pairs", "GiB", "memory budget", "--models", "--n-jobs",
              "STRUCTKERNELS_MEMORY_BUDGET")


def test_fold_memory_of_the_issue_sentence_is_about_3_gb():
    from structkernels.experiments.relations import fold_bytes

    n = 19_900  # one sentence of 200 entities
    splits = [(np.arange(n), np.arange(0))]
    assert fold_bytes(n, splits, ["n-gram SVM"], 1) > 3 * 8 * n * n // 8


def test_cli_fold_memory_is_one_line_before_parsing(tmp_path, capsys, monkeypatch):
    recs = [{**_crowded(12, f"s{d}"), "document": f"d{d}"} for d in range(4)]
    f = _jsonl(tmp_path / "c.jsonl", *recs)
    monkeypatch.setenv("STRUCTKERNELS_MEMORY_BUDGET", "64K")
    rc = main(["evaluate", str(f), "--cv", "2", "--models", "PK path SVM", "--no-cache", "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    line = [ln for ln in err.splitlines() if "error:" in ln]
    assert len(line) == 1 and "264 candidate pairs" in line[0] and "memory budget" in line[0]
