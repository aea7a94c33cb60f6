"""Fuzzing every reader and the command line's inputs (issue 23): a reader gives a result or
its documented error type, with a one-line message naming the file; never another exception,
never RecursionError or MemoryError; lenient mode keeps every good record around a bad one.

Budget: the whole file runs in well under a minute on one core (``READERS`` below; pydot
parses at tens of milliseconds a graph).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import tempfile
import warnings
from pathlib import Path

import pytest
from _fuzz_strategies import (
    FUZZ,
    conllu_sentences,
    damaged,
    dot_graphs,
    hostile_lines,
    json_values,
    penman_graphs,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_LONG = FUZZ.max_examples > 1000  # STRUCTKERNELS_FUZZ_LONG=1
READERS = settings(
    FUZZ, max_examples=400 if _LONG else 40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.function_scoped_fixture],
)
SLOW = settings(READERS, max_examples=100 if _LONG else 15)  # pydot: tens of ms a graph


def _one_line_naming(exc: BaseException, f: Path) -> None:
    msg = str(exc)
    assert "\n" not in msg and "\r" not in msg, msg
    assert str(f) in msg, msg


@contextlib.contextmanager
def _folder():
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


def _good_record(i: int) -> dict:
    return {"id": f"good{i}", "path": [[None, "bind"], ["ARG0", f"p{i}"]],
            "tree": {"label": "bind", "children": [["ARG0", {"label": f"p{i}"}]]},
            "label": i % 2}


def _mixed(data, good) -> tuple[list[bytes], list[int]]:
    """Lines: the good ones (bytes) in order, a hostile line drawn before each with some luck;
    also the indexes of the good ones."""
    lines, where = [], []
    for g in good:
        if data.draw(st.booleans()):
            lines.append(data.draw(hostile_lines))
        where.append(len(lines))
        lines.append(g)
    if data.draw(st.booleans()):
        lines.append(data.draw(hostile_lines))
    return lines, where


# ------------------------------------------------------------------ JSON Lines structures
@READERS
@given(st.lists(hostile_lines | json_values.map(lambda v: json.dumps(v).encode()), min_size=1,
                max_size=4), st.booleans(), st.booleans())
def test_read_structures_gives_structures_or_one_input_error(lines, bom, gz):
    from structkernels.formats.structures import InputError, read_structures

    data = (b"\xef\xbb\xbf" if bom else b"") + b"\n".join(lines) + b"\n"
    with _folder() as tmp:
        f = tmp / "x.jsonl"
        f.write_bytes(gzip.compress(data) if gz else data)
        try:
            read_structures(f)
        except InputError as exc:
            _one_line_naming(exc, f)


# ------------------------------------------------------------------ load_interactions
@READERS
@given(st.integers(1, 4), st.data(), st.booleans())
def test_load_interactions_lenient_keeps_every_good_record(n, data, truncate):
    from structkernels.datasets import InteractionFormatError, load_interactions

    good = [json.dumps(_good_record(i)).encode() for i in range(n)]
    lines, _ = _mixed(data, good)
    with _folder() as tmp:
        f = tmp / "d.jsonl.gz"
        blob = gzip.compress(b"\n".join(lines) + b"\n")
        f.write_bytes(blob[: max(len(blob) - 8, 10)] if truncate else blob)
        try:
            got = load_interactions(f, on_error="skip")
        except InteractionFormatError as exc:
            _one_line_naming(exc, f)
            assert truncate  # only a file with nothing left at all can fail in lenient mode
            return
        ids = [r["id"] for r in got.records if str(r.get("id", "")).startswith("good")]
        if not truncate:
            assert ids == [f"good{i}" for i in range(n)]
        else:  # the gzip end is lost: every good record before the damage is kept
            assert ids == [f"good{i}" for i in range(len(ids))]
        for s in got.skipped:
            assert s.file == str(f) and "\n" not in str(s)
        if got.skipped:
            with pytest.raises(InteractionFormatError) as err:
                load_interactions(f)
            _one_line_naming(err.value, f)


# ------------------------------------------------------------------ PENMAN ids
@READERS
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c", None]), penman_graphs(max_nodes=3)),
                min_size=1, max_size=5), st.integers(1, 3))
def test_penman_ids_strict_refuses_a_repeat_lenient_keeps_the_first(graphs, n_files):
    from structkernels.amr import AMRFormatError, read_amr

    with _folder() as tmp:
        files = [tmp / f"f{k}.amr" for k in range(n_files)]
        chunks: list[list[str]] = [[] for _ in files]
        for i, (gid, text) in enumerate(graphs):
            head = f"# ::id {gid}\n" if gid else ""
            chunks[i % n_files].append(head + text + "\n")
        used = [f for f, c in zip(files, chunks, strict=True) if c]
        for f, c in zip(files, chunks, strict=True):
            if c:
                f.write_text("\n".join(c))
        given_ids = [g for g, _ in graphs if g]
        order = [gid for k in range(n_files) for i, (gid, _) in enumerate(graphs)
                 if i % n_files == k]
        repeated = len(given_ids) != len(set(given_ids))
        try:
            strict = read_amr(used)
        except AMRFormatError as exc:
            assert repeated and "duplicate id" in str(exc) and "\n" not in str(exc)
            assert sum(str(f) in str(exc) for f in used) >= 1
        else:
            assert not repeated and len({g.id for g in strict}) == len(strict) == len(graphs)
        lenient = read_amr(used, on_error="skip")
        firsts = list(dict.fromkeys(g for g in order if g))
        assert [g.id for g in lenient if g.id_given] == firsts
        assert len({g.id for g in lenient}) == len(lenient)  # every id unique
        assert len(lenient) + len(lenient.skipped) == len(graphs)


# ------------------------------------------------------------------ CoNLL-U
@READERS
@given(st.integers(1, 4), st.data())
def test_conllu_damaged_sentence_costs_only_itself(n, data):
    from structkernels.graphs import GraphFormatError, read_conllu

    sents = [data.draw(conllu_sentences(f"s{i:03d}x")) for i in range(n)]
    bad_at = data.draw(st.sets(st.integers(0, n - 1)))
    blocks = [data.draw(damaged(s)) if i in bad_at else s.encode() for i, s in enumerate(sents)]
    blocks = [b if b.endswith(b"\n") else b + b"\n" for b in blocks]  # a blank line after each
    with _folder() as tmp:
        f = tmp / "p.conllu"
        f.write_bytes((b"\xef\xbb\xbf" if data.draw(st.booleans()) else b"") + b"\n".join(blocks))
        try:
            c = read_conllu(f, on_error="skip")
        except GraphFormatError as exc:
            _one_line_naming(exc, f)
            assert len(bad_at) == n  # nothing at all could be read
            return
        kept = {g.id for g in c}
        assert {f"s{i:03d}x" for i in range(n) if i not in bad_at} <= kept
        n_lines = f.read_bytes().count(b"\n") + 1
        for s in c.skipped:
            assert s.file == str(f) and 1 <= s.line <= n_lines and "\n" not in str(s)
        if c.skipped:
            with pytest.raises(GraphFormatError) as err:
                read_conllu(f)
            _one_line_naming(err.value, f)


@READERS
@given(st.binary(max_size=200) | st.sampled_from(
    [b"1\t" + b"x\t" * 9 + b"\n", b"# sent_id = x\n1\tw\tw\tX\t_\t_\t7\tdep\t_\t_\n"]))
def test_conllu_arbitrary_bytes_give_only_graph_format_errors(junk):
    from structkernels.graphs import GraphFormatError, read_conllu

    with _folder() as tmp:
        f = tmp / "j.conllu"
        f.write_bytes(junk)
        for mode in ("raise", "skip"):
            try:
                read_conllu(f, on_error=mode)
            except GraphFormatError as exc:
                _one_line_naming(exc, f)


# ------------------------------------------------------------------ DOT
@SLOW
@given(st.lists(dot_graphs(), min_size=1, max_size=3), st.data())
def test_dot_folder_damaged_file_costs_only_itself(graphs, data):
    pytest.importorskip("pydot")
    from structkernels.graphs import GraphFormatError, read_dot

    bad_at = data.draw(st.sets(st.integers(0, len(graphs) - 1)))
    with _folder() as tmp:
        for i, text in enumerate(graphs):
            body = data.draw(damaged(text)) if i in bad_at else text.encode()
            if i in bad_at and data.draw(st.booleans()):
                body = data.draw(hostile_lines)
            (tmp / f"g{i}.dot").write_bytes(body)
        try:
            c = read_dot(tmp, on_error="skip")
        except GraphFormatError as exc:
            assert "no DOT graph could be read" in str(exc) and "\n" not in str(exc)
            assert len(bad_at) == len(graphs)
            return
        assert {f"g{i}" for i in range(len(graphs)) if i not in bad_at} <= {g.id for g in c}
        for s in c.skipped:
            assert s.file.startswith(str(tmp)) and "\n" not in str(s)
        if c.skipped:
            with pytest.raises(GraphFormatError) as err:
                read_dot(tmp)
            assert "\n" not in str(err.value) and str(tmp) in str(err.value)


# ------------------------------------------------------------------ read_graphs folders
@SLOW
@given(st.lists(st.sampled_from(["amr", "txt", "conllu", "md", "json", "readme"]), min_size=1,
                max_size=4), penman_graphs(max_nodes=3), st.data())
def test_read_graphs_folder_reads_known_files_and_lists_the_others(kinds, amr, data):
    from structkernels.graphs import read_graphs

    with _folder() as tmp:
        expected, listed = set(), set()
        for i, kind in enumerate(kinds):
            if kind in ("amr", "txt"):
                (tmp / f"f{i}.{kind}").write_text(f"# header\n\n# ::id a{i}\n{amr}\n")
                expected.add(f"a{i}")
            elif kind == "conllu":
                (tmp / f"f{i}.conllu").write_text(data.draw(conllu_sentences(f"c{i}")))
                expected.add(f"c{i}")
            elif kind == "readme":
                (tmp / f"README{i}.txt").write_text("Graphs of the paper (see README).\n")
                listed.add(str(tmp / f"README{i}.txt"))
            else:
                (tmp / f"f{i}.{kind}").write_bytes(data.draw(hostile_lines))
                listed.add(str(tmp / f"f{i}.{kind}"))
        if not expected:
            return
        for mode in ("raise", "skip"):
            c = read_graphs(tmp, on_error=mode)
            assert {g.id for g in c} == expected
            assert {s.file for s in c.skipped} == listed


# ------------------------------------------------------------------ PubMed45 labels
@SLOW
@given(st.integers(1, 3), st.data())
def test_pubmed45_lenient_keeps_every_good_record(n, data):
    pytest.importorskip("pydot")
    from structkernels.datasets import InteractionFormatError, load_pubmed45

    good = [json.dumps({"id": f"good{i}", "path": "g.dot", "label": 1,
                        "interaction_tuple": ["bind", None, "Ras"]}).encode() for i in range(n)]
    lines, _ = _mixed(data, good)
    with _folder() as tmp:
        (tmp / "g.dot").write_text('digraph { b [label="bind-01"]; "p Ras" [label=Ras]; '
                                   'b -> "p Ras" [label=ARG1]; }\n')
        f = tmp / "labels.jsonl"
        f.write_bytes(b"\xef\xbb\xbf" + b"\n".join(lines) + b"\n")
        got = load_pubmed45(f, on_error="skip")
        assert [r["id"] for r in got.records if str(r["id"]).startswith("good")] == [
            f"good{i}" for i in range(n)]
        assert all("\n" not in str(s) for s in got.skipped)
        if got.skipped:
            with pytest.raises(InteractionFormatError) as err:
                load_pubmed45(f)
            _one_line_naming(err.value, f)


# ------------------------------------------------------------------ MSRP / RTE
MSRP_HEADER = b"\xef\xbb\xbfQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\r\n"


@READERS
@given(st.integers(1, 4), st.data())
def test_msrp_lenient_keeps_every_good_row(n, data):
    from structkernels.datasets.rewriting import CorpusFormatError, load_msrp

    good = [f"1\t{i}\t{i}x\tRas binds\u2028Raf {i}.\tRaf binds Ras.".encode() for i in range(n)]
    lines, _ = _mixed(data, good)
    with _folder() as tmp:
        f = tmp / "msr.txt"
        f.write_bytes(MSRP_HEADER + b"\r\n".join(lines) + b"\r\n")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the lenient loader warns about what it skipped
            c = load_msrp(f, strict=False)
        assert [i for i in c.ids if i.endswith("x")] == [f"{i}-{i}x" for i in range(n)]
        if c.skipped:
            with pytest.raises(CorpusFormatError) as err:
                load_msrp(f)
            _one_line_naming(err.value, f)


@READERS
@given(st.binary(max_size=200) | st.sampled_from(
    [b"<pairs><pair id='1' value='TRUE'><t>a</t><h>b</h></pair></pairs>",
     b"<pairs>" + b"<x>" * 5000 + b"</x>" * 5000 + b"</pairs>",
     b"<pairs><pair entailment='MAYBE'><t>a</t></pair>"]))
def test_rte_arbitrary_bytes_give_only_corpus_format_errors(junk):
    from structkernels.datasets.rewriting import CorpusFormatError, load_rte

    with _folder() as tmp:
        f = tmp / "rte.xml"
        f.write_bytes(junk)
        for strict in (True, False):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    load_rte(f, strict=strict)
            except CorpusFormatError as exc:
                _one_line_naming(exc, f)


# ------------------------------------------------------------------ model files
@READERS
@given(st.binary(max_size=200) | json_values.map(lambda v: json.dumps(v).encode())
       | st.sampled_from([b"[" * 100_000, b'{"version": 1, "sigma": NaN}']),
       st.booleans())
def test_model_files_give_only_model_format_errors(blob, gz):
    from structkernels import load_model
    from structkernels.npk.model import ModelFormatError

    with _folder() as tmp:
        f = tmp / "model.json"
        f.write_bytes(gzip.compress(blob) if gz else blob)
        try:
            load_model(f)
        except ModelFormatError as exc:
            _one_line_naming(exc, f)


# ------------------------------------------------------------------ the command line
def _run(argv: list[str]) -> tuple[int, str]:
    from structkernels.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = main(argv)
    return rc, err.getvalue()


def _error_line(rc: int, err: str, command: str, f: Path) -> None:
    assert rc in (0, 2), (rc, err)
    if rc == 2:
        lines = [ln for ln in err.splitlines() if ln.startswith(f"structkernels {command}: error:")]
        assert len(lines) == 1 and "Traceback" not in err, err
        assert str(f) in lines[0], lines[0]


@READERS
@given(st.lists(hostile_lines | json_values.map(lambda v: json.dumps(v).encode()), min_size=1,
                max_size=3), st.sampled_from(["linear", "path"]))
def test_cli_gram_on_fuzzed_input(lines, kernel):
    with _folder() as tmp:
        f = tmp / "x.jsonl"
        f.write_bytes(b"\n".join(lines) + b"\n")
        rc, err = _run(["gram", str(f), "--kernel", kernel, "-o", str(tmp / "K.npy")])
        if rc == 2 and "line" in err:  # a reader error: names the file and the line
            _error_line(rc, err, "gram", f)
        assert rc in (0, 2) and "Traceback" not in err


@pytest.fixture(scope="module")
def npk_model(tmp_path_factory):
    from test_train_npk_cli import planted_records

    tmp = tmp_path_factory.mktemp("npk")
    data = tmp / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in planted_records(n=40)))
    model = tmp / "model.json"
    rc, err = _run(["train-npk", str(data), "--out", str(model), "--alpha", "2", "--beta", "5",
                    "--top-fraction", "1.0", "--hashing", "none", "--no-progress", "--no-table"])
    assert rc == 0, err
    return model


@READERS
@given(st.integers(1, 3), st.data())
def test_cli_predict_on_fuzzed_candidates_and_models(npk_model, n, data):
    good = [json.dumps({"id": f"good{i}", "path": [[None, "bind"], ["ARG0", "kinase"]]}).encode()
            for i in range(n)]
    lines, _ = _mixed(data, good)
    with _folder() as tmp:
        f = tmp / "c.jsonl"
        f.write_bytes(b"\n".join(lines) + b"\n")
        rc, err = _run(["predict", str(npk_model), str(f), "-o", str(tmp / "p.jsonl")])
        _error_line(rc, err, "predict", f)
        rc, err = _run(["predict", str(npk_model), str(f), "--skip-bad", "-o",
                        str(tmp / "p.jsonl")])
        if rc == 0:
            out = [json.loads(x) for x in (tmp / "p.jsonl").read_text().splitlines()]
            assert [d["id"] for d in out if str(d["id"]).startswith("good")] == [
                f"good{i}" for i in range(n)]
        m = tmp / "m.json"
        m.write_bytes(data.draw(hostile_lines))
        rc, err = _run(["predict", str(m), str(f)])
        assert rc == 2
        _error_line(rc, err, "predict", m)


@SLOW
@given(st.lists(penman_graphs(max_nodes=4), min_size=1, max_size=3), st.data())
def test_cli_candidates_on_fuzzed_graph_files(graphs, data):
    with _folder() as tmp:
        f = tmp / "g.amr"
        blocks = [data.draw(damaged(g)) if data.draw(st.booleans()) else g.encode()
                  for g in graphs]
        f.write_bytes(b"\n\n".join(blocks) + b"\n")
        for extra in ([], ["--skip-bad"]):
            rc, err = _run(["candidates", str(f), "-o", str(tmp / "c.jsonl"), *extra])
            _error_line(rc, err, "candidates", f)


# ------------------------------------------------------- the other commands' inputs
def _one_line_or_result(rc: int, err: str, command: str) -> None:
    """Exit 0, or exit 2 with exactly one error line and no traceback."""
    assert rc in (0, 2), (rc, err)
    assert "Traceback" not in err, err
    if rc == 2:
        lines = [ln for ln in err.splitlines() if ln.startswith(f"structkernels {command}")]
        assert len(lines) == 1, err


_NPY_HEADERS = st.sampled_from([
    b"\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order': False, 'shape': (4, 2), }",
    b"\x93NUMPY\x01\x00v\x00{'descr': '|O', 'fortran_order': False, 'shape': (4,), }",
    b"\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999,), }",
    b"\x80\x04\x95",  # a pickle stream
    b"",
])


@SLOW
@given(_NPY_HEADERS, st.binary(max_size=64), st.sampled_from(["x.npy", "x.jsonl"]),
       st.lists(hostile_lines, min_size=1, max_size=3))
def test_cli_hsic_on_fuzzed_inputs(header, tail, name, lines):
    """``structkernels hsic`` on a damaged ``.npy`` (object dtype, pickle, huge shape) or
    damaged JSON Lines beside a good ``y``: a result or one line, never unpickling."""
    import numpy as np

    with _folder() as tmp:
        x = tmp / name
        x.write_bytes(header + b" " * (128 - len(header) % 128) + tail if name.endswith(".npy")
                      else b"\n".join(lines) + b"\n")
        y = tmp / "y.npy"
        np.save(y, np.arange(8.0).reshape(4, 2))
        rc, err = _run(["hsic", str(x), str(y), "--kernel-x", "linear", "--kernel-y", "linear"])
        _one_line_or_result(rc, err, "hsic")


@SLOW
@given(st.binary(max_size=300) | json_values.map(lambda v: json.dumps(v).encode()),
       st.booleans())
def test_cli_phsic_score_on_fuzzed_models(blob, as_zip):
    """``phsic score`` on random bytes, or a zip archive holding them as ``meta.npy``."""
    import zipfile

    import numpy as np

    with _folder() as tmp:
        model = tmp / "m.npz"
        if as_zip:
            with zipfile.ZipFile(model, "w") as z:
                z.writestr("meta.npy", blob)
        else:
            model.write_bytes(blob)
        x = tmp / "x.npy"
        np.save(x, np.ones((3, 2)))
        rc, err = _run(["phsic", "score", str(model), str(x), str(x), "-o", str(tmp / "s.npy")])
        assert rc == 2, err  # nothing here is a model
        _one_line_or_result(rc, err, "phsic")
        assert str(model) in err


_MSRP_HEADER = b"Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
_MSRP_GOOD = [b"1\t1\t2\tRas binds Raf .\tRaf is bound by Ras .",
              b"0\t3\t4\tThe cell divides .\tA kinase is active .",
              b"1\t5\t6\tMEK activates ERK .\tERK is activated by MEK .",
              b"0\t7\t8\tIt rained today .\tThe protein folds ."]


@SLOW
@given(st.lists(hostile_lines, min_size=1, max_size=2), st.booleans())
def test_cli_paraphrase_on_a_fuzzed_corpus(bad, lenient):
    """``paraphrase`` on an MSRP file with damaged rows: strict is one line naming the file,
    lenient keeps the good rows (a result, or one line when too few rows are left)."""
    with _folder() as tmp:
        train = tmp / "train.txt"
        train.write_bytes(_MSRP_HEADER + b"\n".join(_MSRP_GOOD[:2] + bad + _MSRP_GOOD[2:]) + b"\n")
        test = tmp / "test.txt"
        test.write_bytes(_MSRP_HEADER + b"\n".join(_MSRP_GOOD) + b"\n")
        argv = ["paraphrase", "--train", str(train), "--test", str(test), "--kmax", "2"]
        rc, err = _run(argv + (["--lenient"] if lenient else []))
        _one_line_or_result(rc, err, "paraphrase")


@settings(SLOW, max_examples=40 if _LONG else 6)
@given(st.lists(hostile_lines | json_values.map(lambda v: json.dumps(v).encode()),
                min_size=1, max_size=2))
def test_cli_train_npk_on_fuzzed_records(bad):
    """``train-npk`` on interaction records with damaged lines among good ones: strict is
    one line naming the file; ``--skip-bad`` trains on the good records or says why not."""
    from test_train_npk_cli import planted_records

    good = [json.dumps(r).encode() for r in planted_records(n=30)]
    with _folder() as tmp:
        data = tmp / "d.jsonl"
        data.write_bytes(b"\n".join(good[:15] + bad + good[15:]) + b"\n")
        base = ["train-npk", str(data), "--out", str(tmp / "m.json"), "--alpha", "2",
                "--beta", "5", "--top-fraction", "1.0", "--hashing", "none", "--no-progress",
                "--no-table"]
        rc, err = _run(base)
        _one_line_or_result(rc, err, "train-npk")
        rc, err = _run(base + ["--skip-bad"])
        _one_line_or_result(rc, err, "train-npk")
