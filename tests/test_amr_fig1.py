"""Fig. 1 / Table 1 of the nonstationary kernels paper, reproduced from a hand-written AMR."""

from __future__ import annotations

import networkx as nx
import pytest

from structkernels import Path, Tree
from structkernels.amr import (
    Candidate,
    CandidateExtractor,
    candidate_path,
    candidate_subgraph,
    candidate_tree,
    generate_candidates,
    parse_amr,
)

# "Furthermore, GEFs such as Sos have allosteric sites for Ras binding as well as
# sites for GDP/GTP exchange, and it is hard to measure GTP loading on individual
# Ras isoforms in cells." written by hand in PENMAN, following Fig. 1(a).
FIG1 = """
# ::id fig1 ::snt Furthermore, GEFs such as Sos have allosteric sites for Ras binding as well as sites for GDP/GTP exchange, and it is hard to measure GTP loading on individual Ras isoforms in cells.
(a / and
   :op1 (h / have-03
           :ARG0 (p / protein :name (n / name :op1 "GEF")
                    :example (p2 / protein :name (n2 / name :op1 "Sos")))
           :ARG1 (a2 / and
                    :op1 (s / site
                            :mod (a3 / allosteric)
                            :purpose (b / bind-01
                                        :ARG1 (e / enzyme :name (n3 / name :op1 "Ras"))))
                    :op2 (s2 / site
                            :purpose (e2 / exchange-01
                                        :ARG1 (s3 / small-molecule :name (n4 / name :op1 "GTP"))
                                        :ARG2 (s4 / small-molecule :name (n5 / name :op1 "GDP"))))))
   :op2 (h2 / hard-02
           :ARG1 (m / measure-01
                    :ARG1 (l / load-01
                             :ARG1 s3
                             :location (e3 / enzyme :name (n6 / name :op1 "Ras")
                                          :mod (i / individual))
                             :location (c / cell))))
   :mod (f / furthermore))
"""

# Table 1, written as (edge, node) tuples with edges as AMR spells them (the paper
# lower-cases them: arg0, op1-of) and nodes without sense numbers, as in the paper.
POSITIVE = [
    ("example", "protein"),
    ("ARG0", "protein"),
    ("ARG1-of", "have"),
    ("op1-of", "and"),
    ("purpose-of", "site"),
    (None, "bind"),
    (None, "bind"),
    ("ARG1", "enzyme"),
    (None, "bind"),
    ("purpose-of", "site"),
    ("op1-of", "and"),
    ("op2", "site"),
    ("purpose", "exchange"),
    ("ARG1", "small-molecule"),
]
# Table 1's negative path: its last traversal prints "(op2, site) (arg2, small-molecule)",
# skipping the (purpose, exchange) tuple that the subgraph of Fig. 1(c) has; the path
# read from the graph has it.
NEGATIVE = [
    ("ARG1", "enzyme"),
    (None, "bind"),
    (None, "bind"),
    ("purpose-of", "site"),
    ("op1-of", "and"),
    ("op2", "site"),
    ("purpose", "exchange"),
    ("ARG1", "small-molecule"),
    (None, "bind"),
    ("purpose-of", "site"),
    ("op1-of", "and"),
    ("op2", "site"),
    ("purpose", "exchange"),
    ("ARG2", "small-molecule"),
]


@pytest.fixture(scope="module")
def fig1():
    return parse_amr(FIG1)


def test_graph_model(fig1):
    G = fig1.graph
    assert fig1.id == "fig1" and fig1.sentence.startswith("Furthermore, GEFs")
    assert G.nodes["p2"]["name"] == "Sos" and G.nodes["e"]["name"] == "Ras"
    assert G.nodes["b"]["concept"] == "bind-01"
    # re-entrancy: GTP is the ARG1 of both exchange-01 and load-01
    assert {u for u, _ in G.in_edges("s3")} == {"e2", "l"}


def test_positive_candidate_path_is_table1(fig1):
    # Sos catalyses binding between Ras and GTP
    cand = Candidate("b", "p2", ("e", "s3"))
    assert candidate_path(fig1, cand) == Path(POSITIVE)
    # written by Table 1's own spelling, lower-cased edges
    paper = (
        "(protein, example) (protein, arg0) (have, arg1-of) (and, op1-of) (site, purpose-of) "
        "(bind) (bind) (arg1, enzyme) (bind) (purpose-of, site) (op1-of, and) (op2, site) "
        "(purpose, exchange) (arg1, small-molecule)"
    )
    ours = []
    path = candidate_path(fig1, cand)
    n_cat = 6  # the catalyst's traversal is printed leaf first, node before edge
    for k, (e, n) in enumerate(path):
        if e is None:
            ours.append(f"({n})")
        elif k < n_cat:
            ours.append(f"({n}, {e.lower()})")
        else:
            ours.append(f"({e.lower()}, {n})")
    assert " ".join(ours) == paper


def test_negative_candidate_path(fig1):
    # Ras catalyses binding between GTP and GDP
    cand = Candidate("b", "e", ("s3", "s4"))
    assert candidate_path(fig1, cand) == Path(NEGATIVE)


def test_both_are_generated(fig1):
    cands = set(generate_candidates(fig1))
    assert Candidate("b", "p2", ("e", "s3"), "fig1") in cands
    assert Candidate("b", "e", ("s3", "s4"), "fig1") in cands


def test_tree_of_fig1b(fig1):
    t = candidate_tree(fig1, Candidate("b", "p2", ("e", "s3")))
    role = lambda r: ("role", Tree(r))  # noqa: E731
    sos = Tree("protein", [role("catalyst")])
    gef = Tree("protein", [("example", sos)])
    have = Tree("have", [("ARG0", gef)])
    gtp = Tree("small-molecule", [role("domain")])
    site2 = Tree("site", [("purpose", Tree("exchange", [("ARG1", gtp)]))])
    and_ = Tree("and", [("ARG1-of", have), ("op2", site2)])
    expected = Tree(
        "bind",
        [
            ("purpose-of", Tree("site", [("op1-of", and_)])),
            ("ARG1", Tree("enzyme", [role("domain")])),
        ],
    )
    assert t == expected
    assert Tree.from_json(t.to_json()) == t


def test_subgraph_is_union_of_shortest_paths(fig1):
    cand = Candidate("b", "p2", ("e", "s3"))
    T = candidate_subgraph(fig1, cand)
    U = nx.Graph(fig1.graph.to_undirected())
    assert nx.is_arborescence(T) and T.graph["root"] == "b"
    for leaf in cand.nodes[1:]:
        route = nx.shortest_path(T, "b", leaf)
        assert len(route) - 1 == nx.shortest_path_length(U, "b", leaf)
    assert T.nodes["p2"]["role"] == "catalyst" and T.nodes["s3"]["role"] == "domain"
    assert T.edges["b", "s"]["label"] == "purpose-of" and T.edges["b", "s"]["inverse"]
    assert set(T) == {"b", "s", "a2", "h", "p", "p2", "e", "s2", "e2", "s3"}


def test_swapped_roles_give_different_structures(fig1):
    x = CandidateExtractor(fig1)
    a, b = Candidate("b", "p2", ("e",)), Candidate("b", "e", ("p2",))
    assert x.path(a) != x.path(b)
    assert x.tree(a) != x.tree(b)
    assert x.subgraph(a).nodes["p2"]["role"] == "catalyst"
    assert x.subgraph(b).nodes["p2"]["role"] == "domain"


def test_senses_kept_on_request(fig1):
    p = candidate_path(fig1, Candidate("b", None, ("e",)), senses=True)
    assert p == Path([(None, "bind-01"), ("ARG1", "enzyme")])
