"""read_amr / parse_amr and the networkx graph model."""

from __future__ import annotations

import re

import penman
import pytest

from structkernels.amr import AMRFormatError, parse_amr, read_amr
from structkernels.formats.penman import AMR_MODEL, to_networkx
from structkernels.graphs.model import concept_label

BIO = "amr/bio_amr_v0.8"
SOURCES = [
    "amr/bio_amr_v3.0_partial/amr-release-bio-v3.0.complete_prefix.txt",
    f"{BIO}/amr-release-dev-bio.txt",
    f"{BIO}/amr-release-test-bio.txt",
    f"{BIO}/amr-release-training-bio.complete_prefix.txt",
]
TRUNCATED = f"{BIO}/amr-release-training-bio.TRUNCATED_1MiB.txt"


def _ids(text: str) -> list[str]:
    return re.findall(r"^# ::id (\S+)", text, flags=re.M)


@pytest.mark.slow
def test_all_unique_bio_amr_graphs_load(shared_data):
    files = [shared_data / s for s in SOURCES]
    corpus = read_amr(files, deduplicate=True)
    ids = [i for f in files for i in _ids(f.read_text(encoding="utf-8"))]
    assert len(set(ids)) == 1885
    assert len(corpus) == 1885 and not corpus.skipped
    assert [g.id for g in corpus] == list(dict.fromkeys(ids))
    assert len(corpus.duplicates) == len(ids) - 1885
    for g in corpus:
        assert g.graph.graph["root"] in g.graph and g.sentence
        assert g.graph.number_of_nodes() == len(g.penman.instances())


def test_truncated_file_strict_names_file_line_and_id(shared_data):
    f = shared_data / TRUNCATED
    text = f.read_text(encoding="utf-8")
    last_id = _ids(text)[-1]
    last_line = text.count("\n") + 1  # the file ends mid-graph, without a newline
    with pytest.raises(AMRFormatError) as err:
        read_amr(f)
    e = err.value
    assert e.file == str(f) and e.graph_id == last_id and e.line == last_line
    assert str(f) in str(e) and f"line {last_line}" in str(e) and last_id in str(e)


def test_truncated_file_lenient_skips_exactly_that_graph(shared_data):
    f = shared_data / TRUNCATED
    ids = _ids(f.read_text(encoding="utf-8"))
    corpus = read_amr(f, on_error="skip")
    assert [s.graph_id for s in corpus.skipped] == [ids[-1]]
    assert [g.id for g in corpus] == ids[:-1]
    assert "Unexpected end of input" in corpus.skipped[0].reason
    assert str(corpus.skipped[0]).startswith(f"{f}, line ")


def test_empty_file(tmp_path):
    f = tmp_path / "empty.txt"
    f.write_text("")
    with pytest.raises(AMRFormatError, match="no AMR graph found"):
        read_amr(f)
    with pytest.raises(AMRFormatError, match="no AMR graph"):
        read_amr(f, on_error="skip")


def test_non_amr_text(tmp_path):
    f = tmp_path / "prose.txt"
    f.write_text("This is a sentence.\nAnd another one.\n")
    with pytest.raises(
        AMRFormatError, match=r"prose\.txt, line 1: not a PENMAN graph: expected '\('"
    ):
        read_amr(f)
    with pytest.raises(AMRFormatError, match="no AMR graph could be read.*1 skipped"):
        read_amr(f, on_error="skip")


def test_not_utf8(tmp_path):
    f = tmp_path / "latin1.txt"
    f.write_bytes("(c / caf\xe9)".encode("latin-1"))
    with pytest.raises(AMRFormatError, match="not UTF-8"):
        read_amr(f)


BAD = {
    "dup-var": ("(a / and :op1 (a / protein))", "defined twice"),
    "two": ("(a / and)\n(b / bind-01)", "a second graph in the same block"),
    "junk": ('(a / and :op1 (p / protein :name (n / name :op1 "x)")))\n)', "text after the end"),
    "meta-only": ("", "metadata without a graph"),
    "unbalanced": ("(a / and :op1 (p / protein)", "Unexpected end of input"),
}


@pytest.mark.parametrize("gid", list(BAD))
def test_malformed_graphs_are_named_and_skipped(tmp_path, gid):
    body, msg = BAD[gid]
    good = '# ::id ok ::snt fine\n(b / bind-01 :ARG1 (p / protein :name (n / name :op1 "Ras")))\n'
    f = tmp_path / "c.txt"
    f.write_text(
        f"# header comment\n\n{good}\n# ::id {gid} ::snt bad\n{body}\n\n{good.replace('ok', 'ok2')}"
    )
    with pytest.raises(AMRFormatError, match=msg) as err:
        read_amr(f)
    assert err.value.graph_id == gid and err.value.line >= 6
    corpus = read_amr(f, on_error="skip")
    assert [g.id for g in corpus] == ["ok", "ok2"]
    assert [(s.graph_id, s.line >= 6) for s in corpus.skipped] == [(gid, True)]


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="on_error"):
        read_amr(tmp_path / "x", on_error="ignore")
    with pytest.raises(FileNotFoundError):
        read_amr(tmp_path / "missing.txt")
    with pytest.raises(AMRFormatError, match="expected one AMR graph, found 0"):
        parse_amr("# just a comment")


def test_duplicates_keep_first(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("# ::id x ::snt one\n(p / protein)\n")
    b.write_text("# ::id x ::snt two\n(e / enzyme)\n\n# ::id y\n(g / gene)\n")
    c = read_amr([a, b], deduplicate=True)
    assert [(g.id, g.sentence) for g in c] == [("x", "one"), ("y", "")]
    assert [(d.file, d.graph_id) for d in c.duplicates] == [(str(b), "x")]
    assert len(read_amr([a, b], deduplicate=False)) == 3


def test_graph_model_inverse_roles_constants_names():
    g = parse_amr(
        """(i / inhibit-01
              :ARG0 (s / small-molecule :wiki "Dabrafenib" :name (n / name :op1 "dab" :op2 "x"))
              :ARG1-of (d / depend-01 :polarity -)
              :consist-of (e / enzyme :quant 2))""",
        graph_id="g1",
    )
    G = g.graph
    assert g.id == "g1" and G.graph["root"] == "i"
    assert G.nodes["s"]["name"] == "dab x" and G.nodes["s"]["wiki"] == "Dabrafenib"
    assert G.nodes["n"]["attributes"] == (("op1", "dab"), ("op2", "x"))
    assert G.nodes["d"]["attributes"] == (("polarity", "-"),)
    assert G.nodes["e"]["attributes"] == (("quant", "2"),)
    edges = {(u, v): d for u, v, d in G.edges(data=True)}
    assert edges[("d", "i")] == {"role": "ARG1", "inverted": True}  # :ARG1-of normalised
    assert edges[("i", "s")] == {"role": "ARG0", "inverted": False}
    assert edges[("i", "e")] == {"role": "consist-of", "inverted": False}  # a role of its own


def test_graph_model_matches_penman_triples(shared_data):
    """Oracle: every PENMAN triple is in the model, and nothing else."""
    corpus = read_amr(shared_data / f"{BIO}/amr-release-dev-bio.txt")
    for amr in list(corpus)[:60]:
        pg, G = amr.penman, amr.graph
        assert sorted((v, c) for v, _, c in pg.instances()) == sorted(G.nodes(data="concept"))
        assert sorted((s, t, r[1:]) for s, r, t in pg.edges()) == sorted(G.edges(data="role"))
        attrs = sorted((s, r[1:]) for s, r, _ in pg.attributes())
        assert attrs == sorted((v, r) for v, a in G.nodes(data="attributes") for r, _ in a)


def test_to_networkx_errors():
    with pytest.raises(ValueError, match="has no concept"):
        to_networkx(penman.decode("(a :ARG0 (b / bind-01))", model=AMR_MODEL))


def test_concept_label():
    assert concept_label("bind-01") == "bind"
    assert concept_label("have-org-role-91") == "have-org-role"
    assert concept_label("small-molecule") == "small-molecule"
    assert concept_label("bind-01", senses=True) == "bind-01"
