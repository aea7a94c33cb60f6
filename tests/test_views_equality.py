"""pair_views (the all-paths parts of a sentence read once for all its pairs) gives, on a
real corpus, the structures of the one-pair-at-a-time construction it replaced."""

from __future__ import annotations

import networkx as nx
import pytest

from structkernels.graphs.allpaths import AllPathsSentence, allpaths_graph, shortest_dependency_path
from structkernels.graphs.model import as_networkx
from structkernels.relations import read_relations
from structkernels.relations.structures import entity_head, ordered, pair_structures, pair_views
from structkernels.structures import LabelledGraph, Path


def _dedupe(labels):
    return tuple(dict.fromkeys(labels))


def reference_allpaths_graph(graph, e1, e2, *, entities=(), blind=True):
    """The all-paths graph as it was built one pair at a time (the paper's weights)."""
    G = as_networkx(graph)
    tokens = sorted(G.nodes, key=lambda u: G.nodes[u]["index"])
    position = {u: i for i, u in enumerate(tokens)}
    first, second = tuple(dict.fromkeys(e1)), tuple(dict.fromkeys(e2))
    others = [tuple(dict.fromkeys(e)) for e in entities]
    path = shortest_dependency_path(G, first, second)
    marks = {}
    if blind:
        for keys in others:
            for u in keys:
                marks[u] = ["PROT"]
        for u in first:
            marks[u] = ["PROT1"]
        for u in second:
            marks[u] = (marks[u] + ["PROT2"]) if marks.get(u) == ["PROT1"] else ["PROT2"]
    base = []
    for u in tokens:
        data = G.nodes[u]
        words = marks.get(u)
        if words is None:
            concept = data.get("concept")
            words = [concept] if isinstance(concept, str) and concept else []
        pos = data.get("pos")
        base.append(_dedupe([*words, *([pos] if isinstance(pos, str) and pos else [])]))
    on_path = set(path)
    steps = {frozenset(pair) for pair in zip(path, path[1:], strict=False)}
    deps = sorted((position[h], position[d], role) for h, d, role in G.edges(data="role"))
    T = len(tokens)
    labels = [_dedupe([*labs, *("IP_" + lab for lab in labs)]) if u in on_path else labs
              for u, labs in zip(tokens, base, strict=True)]
    edges = []
    for d, (h, t, role) in enumerate(deps):
        marked = h != t and frozenset((tokens[h], tokens[t])) in steps
        labels.append((role, "IP_" + role) if marked else (role,))
        w = 0.9 if marked else 0.3
        edges += [(h, T + d, w), (T + d, t, w)]
    pair = [position[u] for u in (*first, *second)]
    lo, hi = min(pair), max(pair)
    offset = T + len(deps)
    for i, labs in enumerate(base):
        prefix = "B_" if i < lo else ("A_" if i > hi else "M_")
        labels.append(tuple(prefix + lab for lab in labs))
        if i + 1 < T:
            edges.append((offset + i, offset + i + 1, 0.9))
    return LabelledGraph(labels, edges)


@pytest.fixture(scope="module")
def lll_parsed(ppi_corpora):
    pytest.importorskip("spacy", reason="parsing needs spaCy (the parse extra)")
    from structkernels.relations.parse import DependencyParser, load_pipeline

    try:
        load_pipeline()
    except (ImportError, ValueError) as exc:
        pytest.skip(f"the English spaCy pipeline is not installed ({exc})")
    corpus = read_relations(ppi_corpora / "LLL-train.xml")
    sentences = [s for s in corpus if len(s.entities) > 1]
    return DependencyParser(cache_dir=False, progress=False).parse(sentences), corpus.pairs()


@pytest.mark.parametrize("blind", [True, False])
def test_pair_views_equal_the_one_pair_construction(lll_parsed, blind):
    parsed, pairs = lll_parsed
    views = pair_views(parsed, pairs, blind=blind)
    by_id = {p.id: p for p in parsed}
    assert len(views) == len(pairs) > 200
    for pair, got in zip(pairs, views, strict=True):
        sentence = by_id[pair.sentence.id]
        first, second = ordered(pair)
        others = [t for e, t in sentence.entities.items() if e not in (first.id, second.id) and t]
        want = reference_allpaths_graph(sentence.graph, sentence.entities[first.id],
                                        sentence.entities[second.id], entities=others,
                                        blind=blind)
        assert got["apg"] == want
        assert got == pair_structures(sentence, pair, blind=blind)


def test_a_sentence_builds_the_graphs_of_allpaths_graph(lll_parsed):
    parsed, _ = lll_parsed
    sentence = next(p for p in parsed if len(p.entities) > 2)
    keys = [t for t in sentence.entities.values() if t]
    shared = AllPathsSentence(sentence.graph)
    for a in keys:
        for b in keys:
            if a is not b:
                assert shared.graph(a, b, entities=[keys[0]]) == allpaths_graph(
                    sentence.graph, a, b, entities=[keys[0]])
                assert shared.graph(a, b, blind=False, other_weight=0.5) == allpaths_graph(
                    sentence.graph, a, b, blind=False, other_weight=0.5)


def reweighted(g, T, D, w_path, w_other, w_linear):
    """The reference graph (the paper's weights) at other weights."""
    edges = [(u, v, w_linear if u >= T + D else (w_path if w == 0.9 else w_other))
             for u, v, w in g.edges]
    return LabelledGraph(g.labels, edges)


def test_a_sentence_reused_across_pairs_weights_and_blinding(lll_parsed):
    parsed, pairs = lll_parsed
    by_id = {p.id: p for p in parsed}
    settings = [(True, 0.9, 0.3, 0.9), (False, 0.8, 0.5, 0.7), (True, 0.6, 0.3, 0.9),
                (True, 0.9, 0.3, 0.9)]
    sentences: dict = {}
    for n, pair in enumerate(pairs):
        s = by_id[pair.sentence.id]
        first, second = ordered(pair)
        others = [t for e, t in s.entities.items() if e not in (first.id, second.id) and t]
        shared = sentences.setdefault(s.id, AllPathsSentence(s.graph))
        G = as_networkx(s.graph)
        T = len(G)
        D = G.number_of_edges()
        for blind, w_path, w_other, w_linear in settings[n % 2:] + settings[:n % 2]:
            got = shared.graph(s.entities[first.id], s.entities[second.id], entities=others,
                               blind=blind, shortest_path_weight=w_path, other_weight=w_other,
                               linear_weight=w_linear)
            want = reweighted(reference_allpaths_graph(
                s.graph, s.entities[first.id], s.entities[second.id], entities=others,
                blind=blind), T, D, w_path, w_other, w_linear)
            assert got == want
            assert got.labels == want.labels and got.edges == want.edges
            assert got.topological_order == want.topological_order


class ReferenceLabeller:
    """A node's word as the path and context views first read it."""

    def __init__(self, parsed, first, second, blind):
        self.G = parsed.graph.graph
        self.names = {}
        if blind:
            for toks in parsed.entities.values():
                for t in toks:
                    self.names.setdefault(t, "PROT")
            for t in parsed.entities[first.id]:
                self.names[t] = "PROT1"
            for t in parsed.entities[second.id]:
                self.names[t] = "PROT2"

    def __call__(self, node):
        if node in self.names:
            return self.names[node]
        data = self.G.nodes[node]
        return (data.get("lemma") or data["concept"]).lower() or "_"


def reference_path_and_context(parsed, pair, blind):
    """The path and context views as first built: networkx's shortest path in the
    undirected view, every word of the sentence read for the context."""
    first, second = ordered(pair)
    G = parsed.graph.graph
    label = ReferenceLabeller(parsed, first, second, blind)
    ha = entity_head(G, parsed.entities[first.id])
    hb = entity_head(G, parsed.entities[second.id])
    try:
        nodes = [ha] if ha == hb else nx.shortest_path(G.to_undirected(as_view=True), ha, hb)
    except nx.NetworkXNoPath:
        nodes = [ha, hb]
    tuples = [(None, label(nodes[0]))]
    for u, v in zip(nodes[:-1], nodes[1:], strict=True):
        if G.has_edge(u, v):
            edge = next(iter(G.get_edge_data(u, v).values()))["role"]
        elif G.has_edge(v, u):
            edge = next(iter(G.get_edge_data(v, u).values()))["role"] + "-of"
        else:
            edge = "none"
        tuples.append((edge, label(v)))
    seq = [tuples[0][1]]
    for edge, node in tuples[1:]:
        seq += [edge, node]
    feats = set()
    for n in (1, 2, 3):
        for i in range(len(seq) - n + 1):
            feats.add("p:" + "|".join(seq[i:i + n]))
    lo, hi = sorted((int(ha), int(hb)))
    words = [label(str(k)) for k in range(1, len(parsed.token_spans) + 1)]
    feats.update("m:" + w for w in words[lo:hi - 1])
    feats.update("b:" + w for w in words[max(0, lo - 4):lo - 1])
    feats.update("a:" + w for w in words[hi:hi + 3])
    feats.add(f"len:{min(len(tuples), 8)}")
    feats.add(f"dist:{min(hi - lo, 12)}")
    return Path(tuples), tuple(sorted(feats))


@pytest.mark.parametrize("blind", [True, False])
def test_path_and_context_views_equal_the_first_construction(lll_parsed, blind):
    parsed, pairs = lll_parsed
    by_id = {p.id: p for p in parsed}
    views = pair_views(parsed, pairs, views=("path", "context"), blind=blind)
    for pair, got in zip(pairs, views, strict=True):
        path, context = reference_path_and_context(by_id[pair.sentence.id], pair, blind)
        assert tuple(got["path"]) == tuple(path)
        assert got["context"] == context


def test_a_sentences_unchecked_labels_pass_every_check():
    """AllPathsSentence builds its graphs without the labels' check (GraphFrame's
    check_labels=False): words equal to their part of speech or to another's IP_ mark, a
    token of both candidates and of a third entity, blinded or not, still give labels that
    the full checks accept unchanged."""
    from structkernels.graphs.model import add_node, new_graph

    G = new_graph("s1", "dependency", root="2")
    words = [("NN", "NN"), ("binds", "VBZ"), ("IP_NN", "NN"), ("and", "CC"), ("Raf", "NN")]
    for i, (w, p) in enumerate(words, 1):
        add_node(G, str(i), w, pos=p, index=i)
    for h, d, role in [("2", "1", "nsubj"), ("2", "3", "dobj"), ("3", "4", "cc"),
                       ("3", "5", "conj"), ("4", "5", "IP_conj")]:
        G.add_edge(h, d, role=role)
    shared = AllPathsSentence(G)
    for blind in (True, False):
        for a, b, others in [(["1"], ["3"], [["5"]]), (["3"], ["3", "5"], [["3"]]),
                             (["5"], ["1", "2"], [])]:
            g = shared.graph(a, b, entities=others, blind=blind)
            rebuilt = LabelledGraph([list(x) for x in g.labels], [list(e) for e in g.edges])
            assert g.topological_order is not None  # the frame's path, not the full one
            assert rebuilt == g and rebuilt.topological_order == g.topological_order
