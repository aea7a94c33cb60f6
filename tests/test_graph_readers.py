"""Readers of DOT, CoNLL-U, spaCy and networkx graphs into the AMR graph model."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structkernels.amr import CandidateExtractor, generate_candidates, read_amr
from structkernels.graphs import (
    GraphFormatError,
    extract_candidates,
    from_networkx,
    parse_conllu,
    parse_dot,
    read_conllu,
    read_dot,
    read_networkx,
    to_dot,
    write_dot,
)

pytest.importorskip("pydot", reason="pydot (extra 'graphs') is not installed")
pytest.importorskip("conllu", reason="conllu (extra 'graphs') is not installed")


@pytest.fixture()
def gdata(repo_root):
    return repo_root / "tests" / "data" / "graphs"


def _edges(G):
    return sorted((u, v, d["role"], d["inverted"]) for u, v, d in G.edges(data=True))


def _nodes(G):
    return {v: (d["concept"], d["name"]) for v, d in G.nodes(data=True)}


def same_graph_and_candidates(g, h):
    """Equal model graphs, and the same candidates with the same paths and trees."""
    assert _edges(g.graph) == _edges(h.graph)
    assert _nodes(g.graph) == _nodes(h.graph)
    assert g.graph.graph["root"] == h.graph.graph["root"]
    cg, ch = generate_candidates(g), extract_candidates(h)
    assert cg == ch
    x, y = CandidateExtractor(g), CandidateExtractor(h)
    assert [x.path(c) for c in cg] == [y.path(c) for c in ch]
    assert [x.tree(c) for c in cg] == [y.tree(c) for c in ch]
    return cg


# ----------------------------------------------------------------------------- DOT, AMR


def test_authors_amr_dot(gdata):
    g = read_dot(gdata / "amr" / "s1.dot")[0]
    G = g.graph
    assert g.id == "s1" and g.sentence.startswith("HER3 binds PI3K")
    assert G.graph["kind"] == "amr" and G.graph["root"] == "b"
    assert "ROOT" not in G  # the TOP edge's source is dropped
    her3 = G.nodes["p HER3"]
    assert her3["collapsed"] and her3["name"] == "HER3" and her3["concept"] == "HER3"
    assert her3["extra"] == {"gold_ind": "0"}
    # ARG0-of from PI3K to phosphorylate is the forward edge p3 -> PI3K, inverted
    assert G.edges["p3", "p2 PI3K", 0] == {"role": "ARG0", "inverted": True}
    x = CandidateExtractor(g)
    paths = {str(x.path(c)) for c in extract_candidates(g)}
    assert "(ARG0, PI3K) (phosphorylate) (phosphorylate) (ARG1, Akt)" in paths


def test_dot_amr_equals_penman(gdata):
    """The hand-written DOT of s2 and its PENMAN give the same graph, candidates and paths."""
    pen = read_amr(gdata / "s2.amr")[0]
    dot = read_dot(gdata / "amr" / "s2.dot")[0]
    object.__setattr__(dot, "id", pen.id)
    cands = same_graph_and_candidates(pen, dot)
    # two interaction nodes (activate, exchange), each reaching the 3 entities:
    # n + C(n,2) + n(n-1) + n C(n-1,2) = 3 + 3 + 6 + 3 candidates each
    assert len(cands) == 30


def test_to_dot_round_trip_and_collapsed():
    from structkernels.amr import parse_amr

    g = parse_amr(
        '# ::id t1 ::snt a "quoted" <i>x</i> back\\slash\n'
        '(b / bind-01 :ARG0 (p / protein :name (n / name :op1 "Sos") :wiki "Q1") '
        ':ARG1 (q / protein :name (m / name :op1 "Ras")) :ARG1-of (x / increase-01))'
    )
    h = parse_dot(to_dot(g), graph_id="t1")
    same_graph_and_candidates(g, h)
    assert h.sentence == g.sentence and h.graph.nodes["p"]["wiki"] == "Q1"
    c = parse_dot(to_dot(g, collapse_names=True))
    assert "n" not in c.graph and c.graph.nodes["p Sos"]["collapsed"]
    assert [x.nodes for x in extract_candidates(c)] == [
        tuple({"p": "p Sos", "q": "q Ras"}.get(v, v) for v in y.nodes) for y in generate_candidates(g)
    ]


def test_write_dot_folder_round_trip(tmp_path, gdata):
    corpus = read_amr(gdata / "s2.amr")
    files = write_dot(corpus, tmp_path / "out")
    back = read_dot(tmp_path / "out")
    assert back.files == files and back[0].id == "s2"
    same_graph_and_candidates(corpus[0], back[0])


def test_dev_corpus_dot_round_trip(shared_data, tmp_path):
    corpus = read_amr(shared_data / "amr" / "bio_amr_v0.8" / "amr-release-dev-bio.txt")
    some = corpus.graphs[:10]
    write_dot(some, tmp_path)
    back = read_dot(tmp_path)
    by_id = {g.id: g for g in back}
    n = 0
    for g in some:
        n += len(same_graph_and_candidates(g, by_id[g.id]))
    assert n > 50


# ----------------------------------------------------------------------------- DOT, dependency


def test_dependency_dot(gdata):
    corpus = read_dot(gdata / "sdg")
    assert [g.id for g in corpus] == ["s1", "s2"]
    G = corpus[0].graph
    assert G.graph["kind"] == "dependency" and G.graph["root"] == "binds2"
    assert G.nodes["HER31"]["index"] == 1 and G.nodes["HER31"]["concept"] == "HER3"
    assert not any(u == v for u, v in G.edges())  # the root self-loop is not an edge
    g2 = corpus[1].graph
    assert g2.edges["activates2", "exchange6", 0]["role"] == "prep_through"


def test_malformed_dot_strict_and_lenient(gdata):
    bad = gdata / "malformed"
    with pytest.raises(GraphFormatError, match=r"syntax\.dot, line 4: .*not a well-formed DOT"):
        read_dot(bad / "syntax.dot")
    with pytest.raises(GraphFormatError, match=r"no_role\.dot, line 5: graph 'no_role': edge 'a -> p Ras'"):
        read_dot(bad / "no_role.dot")
    with pytest.raises(GraphFormatError, match=r"empty\.dot.*empty file"):
        read_dot(bad / "empty.dot")
    with pytest.raises(GraphFormatError, match=r"node 'a': declared twice with different 'label'"):
        read_dot(bad / "two_labels.dot")
    with pytest.raises(GraphFormatError, match=r"no DOT graph could be read \(4 skipped"):
        read_dot(bad, on_error="skip")
    corpus = read_dot([bad, gdata / "amr"], on_error="skip")
    assert len(corpus) == 2
    assert sorted(s.graph_id for s in corpus.skipped) == ["empty", "no_role", "syntax", "two_labels"]
    assert all(s.reason for s in corpus.skipped)


def test_pydot_name_attribute_is_reported():
    with pytest.raises(GraphFormatError, match="pydot cannot build"):
        parse_dot('digraph { a [label=x, name=y]; }')


# ----------------------------------------------------------------------------- CoNLL-U


def test_conllu(gdata):
    corpus = read_conllu(gdata / "parsed.conllu")
    assert [g.id for g in corpus] == ["c1", "c2"]
    G = corpus[0].graph
    assert G.graph["kind"] == "dependency" and G.graph["root"] == "2"
    assert G.nodes["6"]["lemma"] == "phosphorylate" and G.nodes["6"]["pos"] == "VERB"
    assert G.edges["3", "6", 0]["role"] == "acl:relcl"
    assert corpus[1].sentence == "Sos activates Ras through GTP exchange."


def test_conllu_malformed(gdata):
    f = gdata / "malformed.conllu"
    with pytest.raises(GraphFormatError, match=r"line 11: graph 'bad-head': word 3 \('GTP'\) has HEAD 9"):
        read_conllu(f)
    corpus = read_conllu(f, on_error="skip")
    assert [g.id for g in corpus] == ["ok"]
    assert [(s.graph_id, s.line) for s in corpus.skipped] == [
        ("bad-head", 11), ("two-roots", 13), ("bad-id", 21)
    ]
    with pytest.raises(GraphFormatError, match="no HEAD"):
        parse_conllu("1\tRas\tRas\tPROPN\t_\t_\t_\tnsubj\t_\t_\n")


def test_conllu_skips_multiword_and_empty_nodes():
    g = parse_conllu(
        "1-2\tvamonos\t_\t_\t_\t_\t_\t_\t_\t_\n"
        "1\tvamos\tir\tVERB\t_\t_\t0\troot\t_\t_\n"
        "2\tnos\tnosotros\tPRON\t_\t_\t1\tobj\t_\t_\n"
        "2.1\tx\tx\tX\t_\t_\t_\t_\t1:dep\t_\n"
    )
    assert sorted(g.graph) == ["1", "2"] and list(g.graph.edges(data="role")) == [("1", "2", "obj")]


# ----------------------------------------------------------------------------- spaCy


def test_spacy_doc_without_model(gdata):
    pytest.importorskip("spacy", reason="spaCy (extra 'spacy') is not installed")
    from spacy.tokens import Doc
    from spacy.vocab import Vocab

    from structkernels.graphs import from_spacy, read_spacy

    words = ["Sos", "activates", "Ras", "through", "GTP", "exchange", "."]
    doc = Doc(Vocab(), words=words, heads=[1, 1, 1, 5, 5, 1, 1],
              deps=["nsubj", "ROOT", "obj", "case", "compound", "obl", "punct"])
    g = from_spacy(doc, "d")
    conll = read_conllu(gdata / "parsed.conllu")[1]
    assert _edges(g.graph) == _edges(conll.graph)
    assert g.graph.graph["root"] == "2"
    two = Doc(Vocab(), words=["Ras", "binds", ".", "Akt", "binds", "."],
              heads=[1, 1, 1, 4, 4, 4], deps=["nsubj", "ROOT", "punct", "nsubj", "ROOT", "punct"],
              sent_starts=[True, False, False, True, False, False])
    corpus = read_spacy(two)
    assert [h.id for h in corpus] == ["0:0", "0:1"]
    assert list(corpus[1].graph.edges(data="role")) == [("2", "1", "nsubj"), ("2", "3", "punct")]
    unparsed = Doc(Vocab(), words=["Ras", "binds"])
    with pytest.raises(GraphFormatError, match="no dependency label"):
        from_spacy(unparsed)
    assert len(read_spacy([unparsed, doc], on_error="skip").skipped) == 1


# ----------------------------------------------------------------------------- networkx


def test_networkx_named_attributes():
    H = nx.DiGraph(id="h1", sentence="Sos activates Ras")
    H.add_node(0, text="activate-01")
    H.add_node(1, text="protein", ent="Sos")
    H.add_node(2, text="protein", ent="Ras")
    H.add_edge(0, 1, rel="ARG0")
    H.add_edge(0, 2, rel="ARG1")
    g = from_networkx(H, label="text", edge_label="rel", name="ent")
    assert g.id == "h1" and g.graph.graph["root"] == "0" and g.graph.nodes["1"]["name"] == "Sos"
    assert len(extract_candidates(g)) == 5
    H.add_node(3)
    with pytest.raises(GraphFormatError, match=r"graph 'h1': node '3': no node label \(attribute 'text'\)"):
        from_networkx(H, label="text", edge_label="rel")
    with pytest.raises(GraphFormatError, match=r"no graph could be read \(2 skipped\)"):
        read_networkx([H, nx.path_graph(2)], on_error="skip", label="text", edge_label="rel")


def test_networkx_lenient_keeps_good_graphs():
    good = nx.DiGraph()
    good.add_node("a", label="bind-01")
    good.add_node("b", label="protein")
    good.add_edge("a", "b", label="ARG1")
    bad = good.copy()
    bad.add_edge("b", "a")  # no label
    corpus = read_networkx([good, bad], on_error="skip")
    assert len(corpus) == 1 and corpus.skipped[0].line == 1
    assert "edge 'b -> a'" in corpus.skipped[0].reason


def test_read_graphs_infers_formats(tmp_path, gdata):
    import structkernels

    H = nx.DiGraph()
    H.add_node("a", text="bind-01")
    H.add_node("b", text="enzyme")
    H.add_node("c", text="protein")
    H.add_edge("a", "b", rel="ARG0")
    H.add_edge("a", "c", rel="ARG1")
    nx.write_graphml(H, tmp_path / "h.graphml")
    nx.write_gml(H, tmp_path / "h2.gml")
    g = structkernels.read_graphs(tmp_path / "h.graphml", label="text", edge_label="rel")[0]
    assert g.id == "h" and len(extract_candidates(g)) == 5
    g2 = structkernels.read_graphs(tmp_path / "h2.gml", label="text", edge_label="rel")[0]
    assert g2.id == "h2" and sorted(g2.graph.edges(data="role"))[0][2] == "ARG0"
    with pytest.raises(GraphFormatError, match=r"h\.graphml: graph 'h': node 'a': no node label"):
        structkernels.read_graphs(tmp_path / "h.graphml")
    assert structkernels.read_graphs(gdata / "parsed.conllu")[0].graph.graph["kind"] == "dependency"
    assert structkernels.read_graphs(gdata / "s2.amr")[0].id == "s2"
    assert [g.id for g in structkernels.read_graphs(gdata / "amr")] == ["s1", "s2"]
    mixed = structkernels.read_graphs([gdata / "sdg", gdata / "parsed.conllu"])
    assert len(mixed) == 4
    # a folder with an explicit format takes only files of that format (not README.md)
    only = structkernels.read_graphs(gdata, format="conllu", on_error="skip")
    assert [g.id for g in only] == ["ok", "c1", "c2"] and len(only.skipped) == 3
    with pytest.raises(ValueError, match="cannot tell the graph format"):
        structkernels.read_graphs(gdata / "README.md")
    with pytest.raises(FileNotFoundError):
        structkernels.read_graphs(tmp_path / "nope.dot")


@pytest.mark.slow
def test_read_dot_in_parallel_same_result(tmp_path, gdata, monkeypatch):
    import shutil

    import structkernels.formats.dot as dotmod

    for i in range(3):
        shutil.copy(gdata / "amr" / "s1.dot", tmp_path / f"a{i}.dot")
        shutil.copy(gdata / "sdg" / "s2.dot", tmp_path / f"b{i}.dot")
    shutil.copy(gdata / "malformed" / "no_role.dot", tmp_path / "c.dot")
    monkeypatch.setattr(dotmod, "_BATCH", 2)
    serial = read_dot(tmp_path, on_error="skip")
    parallel = read_dot(tmp_path, on_error="skip", n_jobs=2)
    assert [g.id for g in parallel] == [g.id for g in serial]
    assert all(_edges(a.graph) == _edges(b.graph) for a, b in zip(serial, parallel, strict=True))
    assert [str(s) for s in parallel.skipped] == [str(s) for s in serial.skipped]
    with pytest.raises(GraphFormatError, match=r"c\.dot, line 5: graph 'c': edge 'a -> p Ras'"):
        read_dot(tmp_path, n_jobs=2)


_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\u2028\u2029\x85"),
    min_size=1, max_size=12,
).filter(lambda s: s.strip() == s and s.strip())


@settings(max_examples=25, deadline=None)
@given(
    concepts=st.lists(_TEXT, min_size=1, max_size=6),
    edges=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5), _TEXT.filter(lambda r: " " not in r)),
                   max_size=8),
    sentence=st.text(max_size=30).filter(lambda s: "\n" not in s and "\r" not in s and s == s.strip()),
)
def test_to_dot_parse_dot_round_trip_property(concepts, edges, sentence):
    """Any text in concepts, roles and the sentence (quotes, backslashes, <...>) survives DOT."""
    from structkernels.graphs.model import Graph, add_node, new_graph

    G = new_graph("h", "dependency")
    for i, c in enumerate(concepts):
        add_node(G, f"n{i}", c)
    for u, v, role in edges:
        if u < len(concepts) and v < len(concepts) and u != v and role.lower() != "root":
            G.add_edge(f"n{u}", f"n{v}", role=role, inverted=False)
    G.graph["root"] = "n0"
    back = parse_dot(to_dot(Graph(id="h", sentence=sentence, graph=G)), graph_id="h")
    assert _edges(back.graph) == _edges(G)
    assert {v: d["concept"] for v, d in back.graph.nodes(data=True)} == {
        v: d["concept"] for v, d in G.nodes(data=True)
    }
    assert back.sentence == sentence and back.graph.graph["root"] == "n0"
