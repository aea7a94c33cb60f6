"""Candidate generation, subgraphs, paths and trees against by-definition oracles."""

from __future__ import annotations

import itertools
import json

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structkernels import Path, Tree, Vocabulary
from structkernels.amr import (
    ENTITY_CONCEPTS,
    INTERACTION_CONCEPTS,
    Candidate,
    CandidateError,
    CandidateExtractor,
    candidate_path,
    candidate_tree,
    generate_candidates,
    parse_amr,
    read_amr,
)
from structkernels.graphs.model import concept_label

DEV = "amr/bio_amr_v0.8/amr-release-dev-bio.txt"


@pytest.fixture(scope="module")
def dev_graphs(shared_data):
    corpus = read_amr(shared_data / DEV)
    # graphs with at least one candidate, small enough for brute force
    out = [g for g in corpus if generate_candidates(g) and g.graph.number_of_nodes() <= 40]
    return out[:40]


def brute_force_candidates(G):
    """Oracle: all (interaction, catalyst|None, 1-2 participants) by enumeration."""
    inter = [v for v in G if G.nodes[v]["concept"] in INTERACTION_CONCEPTS]
    ents = [v for v in G if G.nodes[v]["concept"] in ENTITY_CONCEPTS]
    U = G.to_undirected()
    out = set()
    for i in inter:
        es = [e for e in ents if nx.has_path(U, i, e)]
        for c in [None, *es]:
            for k in (1, 2):
                for ps in itertools.permutations([e for e in es if e != c], k):
                    out.add((i, c, frozenset(ps)))
    return out


def test_candidates_match_brute_force(dev_graphs):
    for amr in dev_graphs:
        cands = generate_candidates(amr)
        got = [(c.interaction, c.catalyst, frozenset(c.participants)) for c in cands]
        assert len(got) == len(set(got))  # no duplicates
        assert set(got) == brute_force_candidates(amr.graph)
        assert all(c.graph_id == amr.id for c in cands)


def oracle_path(G, cand):
    """Oracle: Table 1 path from networkx shortest paths (checked to be consistent)."""
    U = nx.Graph()
    for u, v, _role in G.edges(data="role"):
        U.add_edge(u, v)

    def steps(target):
        nodes = nx.shortest_path(U, cand.interaction, target)
        out = []
        for a, b in zip(nodes, nodes[1:], strict=False):
            fwd = [r for _, t, r in G.out_edges(a, data="role") if t == b]
            label = (
                fwd[0]
                if fwd
                else [r for s, _, r in G.in_edges(a, data="role") if s == b][0] + "-of"
            )
            out.append((label, concept_label(G.nodes[b]["concept"])))
        return out

    root = (None, concept_label(G.nodes[cand.interaction]["concept"]))
    tuples = []
    if cand.catalyst is not None:
        tuples += list(reversed(steps(cand.catalyst))) + [root]
    for p in cand.participants:
        tuples += [root] + steps(p)
    return tuples


def test_paths_against_shortest_path_oracle(dev_graphs):
    for amr in dev_graphs:
        G = amr.graph
        x = CandidateExtractor(amr)
        for cand in generate_candidates(amr)[:200]:
            ours = x.path(cand)
            ref = oracle_path(G, cand)
            # same length (shortest) and same root tuples; labels may differ only
            # where two shortest paths tie
            assert len(ours) == len(ref)
            assert [k for k, (e, _) in enumerate(ours) if e is None] == [
                k for k, (e, _) in enumerate(ref) if e is None
            ]
            # every step is a real edge of G, walked with the right direction mark
            for label, node in x.route(cand.interaction, cand.participants[0]):
                parent = next(iter(x.subgraph(cand).predecessors(node)))
                if label.endswith("-of") and not G.has_edge(parent, node):
                    assert G.has_edge(node, parent)
                else:
                    roles = {r for _, t, r in G.out_edges(parent, data="role") if t == node}
                    assert label in roles


def test_tree_is_union_of_path_segments(dev_graphs):
    """The tree's root-to-marked-node label sequences are the path's traversals."""
    for amr in dev_graphs:
        x = CandidateExtractor(amr)
        for cand in generate_candidates(amr)[:100]:
            tree, path = x.tree(cand), list(x.path(cand))
            branches = {}

            def walk(t, prefix, out):
                for e, c in t.children:
                    if e == "role":
                        out.setdefault(c.label, []).append(prefix)
                    else:
                        walk(c, prefix + [(e, c.label)], out)

            walk(tree, [], branches)
            roots = [k for k, (e, _) in enumerate(path) if e is None]
            segs = []
            bounds = roots + [len(path)]
            if cand.catalyst is not None:
                cat = path[: roots[0]]
                assert list(reversed(cat)) in branches["catalyst"]
                bounds = bounds[1:]
            for a, b in zip(bounds, bounds[1:], strict=False):
                segs.append(path[a + 1 : b])
            for seg in segs:
                assert seg in branches["domain"]
            assert tree.size == x.subgraph(cand).number_of_nodes() + len(cand.nodes) - 1


def test_json_round_trip_and_encoding(dev_graphs):
    paths, trees = [], []
    for amr in dev_graphs[:10]:
        x = CandidateExtractor(amr)
        for cand in generate_candidates(amr)[:30]:
            paths.append(x.path(cand))
            trees.append(x.tree(cand))
            assert Tree.from_json(x.tree_json(cand)) == trees[-1]
            assert x.path_tuples(cand) == list(paths[-1])
    for p in paths:
        assert Path.from_json(json.dumps(p.to_json())) == p
        assert hash(Path.from_json(p.to_json())) == hash(p)
    for t in trees:
        assert Tree.from_json(json.dumps(t.to_json())) == t
    a, b = Vocabulary(), Vocabulary()
    ea, eb = a.encode_paths(paths), b.encode_paths(paths)
    assert a.labels == b.labels
    for name in ("offsets", "edges", "nodes"):
        np.testing.assert_array_equal(getattr(ea, name), getattr(eb, name))
    ta, tb = a.encode_trees(trees), b.encode_trees(trees)
    for name in ("tree_offsets", "labels", "edges", "child_offsets", "child_index"):
        np.testing.assert_array_equal(getattr(ta, name), getattr(tb, name))
    # decode back through the vocabulary
    lab = a.labels
    for i, p in enumerate(paths[:50]):
        s, e = ea.offsets[i], ea.offsets[i + 1]
        assert [
            (lab[x], lab[y]) for x, y in zip(ea.edges[s:e], ea.nodes[s:e], strict=True)
        ] == list(p)


labels = st.text(alphabet="abcdefgh-0123", min_size=1, max_size=6)
trees_st = st.recursive(
    st.builds(Tree, labels),
    lambda kids: st.builds(
        Tree, labels, st.lists(st.tuples(st.one_of(st.none(), labels), kids), max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), labels), labels), min_size=1, max_size=12))
def test_path_json_round_trip_property(pairs):
    p = Path(pairs)
    assert Path.from_json(json.loads(json.dumps(p.to_json()))) == p


@settings(max_examples=60, deadline=None)
@given(trees_st)
def test_tree_json_round_trip_property(t):
    assert Tree.from_json(json.loads(json.dumps(t.to_json()))) == t


SMALL = "(p / phosphorylate-01 :ARG0 (e / enzyme) :ARG1 (q / protein) :ARG2 (a / amino-acid))"


def test_bad_candidates():
    g = parse_amr(SMALL, graph_id="small")
    x = CandidateExtractor(g)
    with pytest.raises(CandidateError, match="unknown participant node 'zz'.*'small'"):
        x.path(Candidate("p", "e", ("zz",)))
    with pytest.raises(CandidateError, match="unknown catalyst node 'k'"):
        x.tree(Candidate("p", "k", ("q",)))
    with pytest.raises(CandidateError, match="unknown interaction node 'w'"):
        candidate_path(g, ("w", None, ("q",)))
    with pytest.raises(CandidateError, match="without an interaction node"):
        candidate_path(g, (None, "e", ("q",)))
    with pytest.raises(CandidateError, match="uses a node twice"):
        candidate_tree(g, ("p", "q", ("q",)))
    with pytest.raises(CandidateError, match="no participant"):
        x.path(Candidate("p", "e", ()))
    with pytest.raises(CandidateError, match="at most 2"):
        x.path(Candidate("p", None, ("e", "q", "a")))
    with pytest.raises(CandidateError, match=r"\(interaction, catalyst, participants\)"):
        candidate_path(g, "p e q")
    G = g.graph.copy()
    G.add_node("lonely", concept="protein", attributes=(), name=None, wiki=None)
    with pytest.raises(CandidateError, match="no path from interaction node 'p' to 'lonely'"):
        candidate_path(G, ("p", None, ("lonely",)))
    with pytest.raises(ValueError, match="max_participants"):
        generate_candidates(g, max_participants=3)
    with pytest.raises(ValueError, match="max_distance"):
        generate_candidates(g, max_distance=0)


def test_generation_options():
    g = parse_amr(
        "(p / phosphorylate-01 :ARG0 (e / enzyme) :ARG1 (q / protein :part-of (c / cell "
        ":location (o / organ :mod (k / gene)))))"
    )
    n = 3  # e, q, k
    full = generate_candidates(g)
    assert len(full) == n + n * (n - 1) // 2 + n * (n - 1) + n * (n - 1) * (n - 2) // 2
    near = generate_candidates(g, max_distance=2)
    assert {v for c in near for v in c.nodes[1:]} == {"e", "q"}
    assert all(c.catalyst is None for c in generate_candidates(g, catalysts=False))
    assert all(len(c.participants) == 1 for c in generate_candidates(g, max_participants=1))
    assert generate_candidates(g, interaction_concepts={"none-01"}) == []
