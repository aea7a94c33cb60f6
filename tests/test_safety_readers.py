"""Issue 52, the readers' cases.

Case 12: a BioC collection without documents is an empty corpus, in XML as in JSON.
Case 10: an input that can be read only once (a named pipe) is read once: its format is
told from the bytes already read.  Case 7: two entity ids on one span make no candidate
pair; the pair is reported.  Case 14 (PubTator): a file over the annotation limits is
refused while memory stays within a small multiple of the limit.  Fuzz: structurally odd
BioC (XML and JSON) and PubTator read as a corpus or refused in one line naming the file,
never a KeyError, TypeError or IndexError.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import structkernels
from structkernels.formats.batches import iter_relations
from structkernels.formats.relations import read_relations, relation_format
from structkernels.relations.corpus import RelationFormatError

ROOT = Path(structkernels.__file__).resolve().parents[1]


# ------------------------------------------------------------ case 12: empty collections
@pytest.mark.parametrize("name, text", [
    ("e.bioc.xml", "<collection/>"),
    ("e.xml", "<?xml version='1.0'?>\n<collection><source>x</source><date/></collection>\n"),
    ("e.bioc.json", '{"documents": []}'),
    ("e.json", '{"source": "x", "documents": []}'),
    ("e2.bioc.json", "[]"),
])
def test_case12_a_collection_without_documents_is_an_empty_corpus(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    assert relation_format(path) in ("bioc-xml", "bioc-json")
    corpus = read_relations(path)
    assert len(corpus) == 0 and corpus.files == [str(path)]
    assert [len(b) for b in iter_relations(path)] == []
    assert len(read_relations(path, on_error="skip")) == 0


# ------------------------------------------------------------ case 10: named pipes
_JSONL = '{"id": "s1", "text": "KinC binds SigE", "entities": [' \
         '{"id": "a", "start": 0, "end": 4, "text": "KinC"}, ' \
         '{"id": "b", "start": 11, "end": 15, "text": "SigE"}]}\n'
_PUBTATOR = "1|t|KinC binds SigE.\n1\t0\t4\tKinC\tGene\tD1\n1\t11\t15\tSigE\tGene\tD2\n\n"
_BIOC = ('<collection><document><id>d1</id><passage><offset>0</offset><text>KinC binds SigE.'
         '</text><annotation id="a"><infon key="type">Gene</infon><location offset="0" length="4"/>'
         '</annotation><annotation id="b"><infon key="type">Gene</infon><location offset="11" '
         'length="4"/></annotation></passage></document></collection>')


def _through_a_pipe(tmp_path, name: str, content: str, reader: str) -> subprocess.CompletedProcess:
    """Read ``content`` through a named pipe ``name`` in a child (a hang is a timeout)."""
    fifo = tmp_path / name
    os.mkfifo(fifo)
    code = textwrap.dedent(f"""
        import gzip, threading
        from structkernels.formats.relations import read_relations, relation_format
        from structkernels.formats.batches import iter_relations
        data = {content.encode()!r}
        if {name!r}.endswith(".gz"):
            data = gzip.compress(data)
        def write():
            with open({str(fifo)!r}, "wb") as fh:
                fh.write(data)
        threading.Thread(target=write, daemon=True).start()
        path = {str(fifo)!r}
        kind = relation_format(path)
        if {reader!r} == "read":
            corpus = read_relations(path)
        else:
            corpus = [s for b in iter_relations(path) for s in b]
        print(kind, len(corpus), sum(len(s.entities) for s in corpus))
    """)
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    try:
        return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail(f"reading {name} through a named pipe hangs")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
@pytest.mark.parametrize("reader", ["read", "iter"])
@pytest.mark.parametrize("name, content, kind", [
    ("x.bioc", _BIOC, "bioc-xml"),
    ("x.jsonl", _JSONL, "jsonl"),
    ("x.json", _JSONL, "jsonl"),
    ("x.jsonl.gz", _JSONL, "jsonl"),
    ("x.pubtator", _PUBTATOR, "pubtator"),
    ("x.txt", _PUBTATOR, "pubtator"),
    ("x.xml", _BIOC, "bioc-xml"),
    ("x.bioc.json", '{"documents": []}', "bioc-json"),
])
def test_case10_a_named_pipe_is_read_once_its_format_told_from_the_bytes_read(
        tmp_path, name, content, kind, reader):
    done = _through_a_pipe(tmp_path, name, content, reader)
    assert done.returncode == 0, done.stderr
    n = 0 if kind == "bioc-json" else 1
    assert done.stdout.split() == [kind, str(n), str(2 * n)]



@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_case10_writing_pairs_back_into_a_pipe_input_is_refused_before_any_work(tmp_path):
    from structkernels.formats.pairs import output_format

    fifo = tmp_path / "x.pubtator"
    os.mkfifo(fifo)

    def write():
        with open(fifo, "w") as fh:
            fh.write(_PUBTATOR)

    threading.Thread(target=write, daemon=True).start()
    with pytest.raises(ValueError, match="read only once"):
        output_format("same", [fifo])
    assert output_format("jsonl", [fifo]) == "jsonl"


@pytest.mark.skipif(not os.path.exists("/dev/stdin"), reason="no /dev/stdin here")
def test_case10_standard_input_on_a_pipe_is_read_once(tmp_path):
    link = tmp_path / "x.jsonl"
    link.symlink_to("/dev/stdin")
    code = ("import sys; from structkernels.formats.relations import read_relations; "
            "c = read_relations(sys.argv[1]); print(len(c), len(c.pairs()))")
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code, str(link)], input=_JSONL, env=env,
                          capture_output=True, text=True, timeout=20)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "1"]

# ------------------------------------------------------------ case 7: same-span pairs
_SAME_SPAN = ("1|t|KinC binds SigE.\n1\t0\t4\tKinC\tGene\tD1\n1\t0\t4\tKinC\tGene\tD9\n"
              "1\t11\t15\tSigE\tGene\tD2\n")


def test_case7_two_ids_of_one_span_make_no_candidate_and_are_reported(tmp_path):
    path = tmp_path / "x.pubtator"
    path.write_text(_SAME_SPAN)
    for corpus in (read_relations(path), *iter_relations(path)):
        assert [(p.e1.id, p.e2.id) for p in corpus.pairs()] == [("T1:D1", "T3:D2"),
                                                                 ("T2:D9", "T3:D2")]
        assert [p.id for p in corpus.pairs()] == ["1.s0.p0", "1.s0.p1"]
        assert len(corpus.skipped) == 1
        rec = corpus.skipped[0]
        assert rec.record == "1.s0" and "T1:D1" in rec.reason and "T2:D9" in rec.reason
        assert "same span 0-4" in rec.reason


def test_case7_labelled_corpora_keep_their_candidates(tmp_path):
    """Evaluation's figures stay as they were: a gold corpus keeps the pair (a negative;
    an interaction joining the two ids is refused)."""
    path = tmp_path / "x.pubtator"
    path.write_text(_SAME_SPAN + "1\tCID\tD1\tD2\n")
    corpus = read_relations(path)
    assert len(corpus.pairs()) == 3 and not corpus.skipped


# ------------------------------------------------------------ case 14: PubTator limits
def test_case14_a_pubtator_document_over_the_annotation_limit_is_refused_in_bounded_memory(
        tmp_path):
    """10^6 annotation lines in one document (19 MB): refused naming the limit, file and
    line, memory growing by far less than what holding them took (1.3 GiB)."""
    code = textwrap.dedent("""
        import resource, sys
        path = sys.argv[1]
        with open(path, "w") as fh:
            fh.write("1|t|KinC binds SigE.\\n")
            for _ in range(10):
                fh.write("1\\t0\\t4\\tKinC\\tGene\\tD1\\n" * 100_000)
        from structkernels.formats.relations import read_relations
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            read_relations(path)
        except ValueError as exc:
            print(exc)
        skipped = read_relations(path, on_error="skip").skipped
        print(len(skipped), (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) // 1024)
    """)
    path = tmp_path / "big.pubtator"
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code, str(path)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    message, counts = done.stdout.strip().splitlines()
    assert message.startswith(f"{path}:10002: record 1: document 1: more than 10000 annotation")
    assert "MAX_ANNOTATIONS_PER_DOCUMENT" in message
    n_skipped, grown_mib = map(int, counts.split())
    assert n_skipped == 1 and grown_mib < 300


# ------------------------------------------------------------ fuzz: BioC and PubTator structure
SHAPES = settings(max_examples=100, deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                         HealthCheck.function_scoped_fixture])
_scalar = st.one_of(st.none(), st.integers(-3, 40),
                    st.sampled_from(["", "x", "7", "a", "Gene"]), st.booleans())
_junk = st.recursive(_scalar, lambda c: st.one_of(
    st.lists(c, max_size=2),
    st.dictionaries(st.sampled_from(["type", "id", "x"]), c, max_size=2)), max_leaves=4)


def _or_junk(strategy):
    return st.one_of(strategy, strategy, _junk)


def _obj(**fields):
    return st.fixed_dictionaries({}, optional={k: _or_junk(v) for k, v in fields.items()})


_infons = st.dictionaries(st.sampled_from(["type", "identifier", "entity1", "entity2"]),
                          _or_junk(st.sampled_from(["Gene", "D1", "D2"])), max_size=3)
_annotation = _obj(id=st.sampled_from(["a", "b", "c"]), infons=_infons,
                   locations=st.lists(_obj(offset=st.integers(0, 30), length=st.integers(0, 8)),
                                      max_size=2),
                   text=st.sampled_from(["KinC", "SigE", "binds"]))
_relation = _obj(id=st.sampled_from(["r1", "r2"]), infons=_infons,
                 nodes=st.lists(_obj(refid=st.sampled_from(["a", "b", "c"]),
                                     role=st.sampled_from(["Arg1", "Arg2"])), max_size=3))
_texts = st.sampled_from(["KinC binds SigE.", "", "KinC binds SigE. GerE is not."])
_sentence = _obj(offset=st.integers(0, 20), text=_texts, infons=_infons,
                 annotations=st.lists(_annotation, max_size=2))
_passage = _obj(offset=st.integers(0, 5), text=_texts, infons=_infons,
                annotations=st.lists(_annotation, max_size=3),
                relations=st.lists(_relation, max_size=2),
                sentences=st.lists(_sentence, max_size=2))
_document = _obj(id=st.sampled_from(["d1", "d2", " "]), infons=_infons,
                 passages=st.lists(_passage, max_size=2),
                 annotations=st.lists(_annotation, max_size=1),
                 relations=st.lists(_relation, max_size=1))
_collection = st.one_of(_obj(documents=st.lists(_document, max_size=3), source=st.just("x")),
                        st.lists(_document, max_size=2), _junk)
_PLURAL = {"documents": "document", "passages": "passage", "annotations": "annotation",
           "relations": "relation", "sentences": "sentence", "locations": "location",
           "nodes": "node"}


def _xml(tag: str, value) -> str:
    """BioC XML of a (possibly odd) JSON structure: junk becomes odd elements or text."""
    if isinstance(value, list):
        return "".join(_xml(tag, v) for v in value)
    if not isinstance(value, dict):
        return f"<{tag}>{escape(str(value))}</{tag}>"
    if tag in ("location", "node"):
        attrs = "".join(f" {k}={quoteattr(str(v))}" for k, v in value.items()
                        if isinstance(k, str) and k.isidentifier())
        return f"<{tag}{attrs}/>"
    attrs = (f" id={quoteattr(str(value['id']))}"
             if tag in ("annotation", "relation") and "id" in value else "")
    body = []
    for k, v in value.items():
        if k in _PLURAL:
            body.append(_xml(_PLURAL[k], v if isinstance(v, list) else [v]))
        elif k == "infons" and isinstance(v, dict):
            body += [f"<infon key={quoteattr(str(ik))}>"
                     f"{_xml('infon', iv) if isinstance(iv, (dict, list)) else escape(str(iv))}"
                     "</infon>" for ik, iv in v.items()]
        elif k != "id" or tag == "document":
            body.append(_xml(k if k != "infons" else "infon", v))
    return f"<{tag}{attrs}>{''.join(body)}</{tag}>"


def _one_line_error_or_corpus(path: Path) -> None:
    """Strict: a corpus or one ValueError naming the file on one line; lenient: a corpus."""
    for mode in ("raise", "skip"):
        for read in (lambda m=mode: read_relations(path, on_error=m),
                     lambda m=mode: [s for b in iter_relations(path, on_error=m) for s in b]):
            try:
                read()
            except (RelationFormatError, ValueError) as exc:
                assert mode == "raise" or str(exc).startswith(f"{path}"), exc
                msg = str(exc)
                assert "\n" not in msg and str(path) in msg, msg


@SHAPES
@given(coll=_collection)
def test_fuzz_odd_bioc_structures_read_or_refuse_in_one_line(tmp_path, coll):
    js = tmp_path / "x.bioc.json"
    js.write_text(json.dumps(coll))
    _one_line_error_or_corpus(js)
    xml = tmp_path / "x.bioc.xml"
    root = coll if isinstance(coll, dict) else {
        "documents": coll if isinstance(coll, list) else [coll]}
    xml.write_text(_xml("collection", root))
    _one_line_error_or_corpus(xml)


_PT_LINES = st.one_of(
    st.sampled_from(["1|t|KinC binds SigE. GerE is.", "1|a|It binds.", "", "  ", "2|t|A b.",
                     "1|x|odd", "1\tCID\tD1\tD2", "1\tCID\tD1", "1\t0", "2\t0\t1\tA\tGene\tD1",
                     "1|t|", "junk", "\ufeff1|t|KinC."]),
    st.builds(lambda s, e, m, c: f"1\t{s}\t{e}\t{m}\tGene\t{c}", st.integers(-2, 40),
              st.integers(-2, 40), st.sampled_from(["KinC", "SigE", "", "x"]),
              st.sampled_from(["D1", "D2", "-", ""])))


@SHAPES
@given(lines=st.lists(_PT_LINES, max_size=8))
def test_fuzz_odd_pubtator_structures_read_or_refuse_in_one_line(tmp_path, lines):
    path = tmp_path / "x.pubtator"
    path.write_text("\n".join(lines))
    _one_line_error_or_corpus(path)
