"""Fuzzing the PENMAN reader: every good graph is kept, every bad one is reported, alone."""

from __future__ import annotations

import tempfile
from pathlib import Path

import penman
from _fuzz_strategies import FUZZ, damaged, penman_graphs
from hypothesis import given
from hypothesis import strategies as st

from structkernels.amr import AMRFormatError, CandidateExtractor, parse_amr, read_amr
from structkernels.formats.penman import AMR_MODEL


@FUZZ
@given(penman_graphs())
def test_generated_graphs_read_as_the_set_of_their_triples(text):
    g = parse_amr(text)
    pg = penman.decode(text, model=AMR_MODEL)
    edges = {(s, t, r[1:]) for s, r, t in pg.edges()}
    assert sorted(edges) == sorted(g.graph.edges(data="role"))  # no duplicate edges
    assert g.graph.number_of_nodes() == len(pg.instances())
    for u, _v, d in g.graph.edges(data=True):
        # an edge is inverted only if the text states it inverted somewhere
        if d["inverted"]:
            assert f":{d['role']}-of {u}" in text or f":{d['role']}-of ({u} " in text
    x = CandidateExtractor(g, senses=True)
    for cand in x.candidates(interaction_concepts={"bind-01", "activate-01"})[:5]:
        assert x.tree(cand).to_json() == x.tree_json(cand)


@FUZZ
@given(st.lists(penman_graphs(max_nodes=6), min_size=1, max_size=4), st.data())
def test_damaged_corpus_keeps_every_good_graph_and_reports_the_rest(graphs, data):
    bad_at = data.draw(st.sets(st.integers(0, len(graphs) - 1)))
    blocks = []
    for i, text in enumerate(graphs):
        body = f"# ::id g{i} ::snt s{i}\n{text}\n".encode()
        blocks.append(data.draw(damaged(body.decode())) + b"\n" if i in bad_at else body)
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "fuzz.amr"
        f.write_bytes(b"\n".join(blocks))  # a blank line after every block, damaged or not
        try:
            corpus = read_amr(f, on_error="skip", deduplicate=False)
        except AMRFormatError as exc:  # only when nothing at all could be read
            assert "no AMR graph" in str(exc) and str(f) in str(exc)
            assert all(i in bad_at for i in range(len(graphs)))
            return
        good = {f"g{i}" for i in range(len(graphs)) if i not in bad_at}
        assert good <= {g.id for g in corpus}  # a damaged neighbour never costs a good graph
        n_lines = f.read_bytes().count(b"\n") + 1
        for s in corpus.skipped:
            assert s.file == str(f) and 1 <= s.line <= n_lines and s.reason
        if corpus.skipped:
            try:
                read_amr(f)
            except AMRFormatError as exc:
                assert exc.file == str(f) and exc.line is not None
            else:
                raise AssertionError("strict mode accepted what lenient mode skipped")


@FUZZ
@given(st.binary(max_size=300) | st.text(alphabet="()/:\"~#\n abc-01é", max_size=200))
def test_arbitrary_input_raises_only_amr_format_errors(junk):
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "junk.amr"
        f.write_bytes(junk if isinstance(junk, bytes) else junk.encode())
        for mode in ("raise", "skip"):
            try:
                read_amr(f, on_error=mode)
            except AMRFormatError as exc:
                assert exc.file == str(f)
