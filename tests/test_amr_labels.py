"""The distant-label rule, case by case, and against a literal re-statement."""

from __future__ import annotations

import pytest

from structkernels.amr import (
    ENTITY_CONCEPTS,
    Candidate,
    CandidateError,
    distant_label,
    generate_candidates,
    parse_amr,
    read_amr,
)
from structkernels.amr.labels import DistantLabeler, fillers

PHOS = "(p / phosphorylate-01 :ARG0 (e / enzyme) :ARG1 (q / protein) :ARG2 (a / amino-acid))"
BIND = "(b / bind-01 :ARG1 (x / protein) :ARG2 (y / small-molecule) :location (c / cell))"
COORD = (
    "(i / inhibit-01 :ARG0 (s / small-molecule) "
    ":ARG1 (a / and :op1 (e / enzyme) :op2 (o / or :op1 (p / protein) :op2 (g / gene))))"
)
INVERSE = "(s / small-molecule :ARG0-of (i / inhibit-01 :ARG1 (e / enzyme)))"


def lab(text, i, c, ps):
    r = distant_label(parse_amr(text), Candidate(i, c, tuple(ps)))
    return r.label, r.swapped


def test_catalyst_and_participant():
    assert lab(PHOS, "p", "e", ["q"]) == (1, False)
    assert lab(PHOS, "p", "q", ["e"]) == (0, True)  # roles swapped
    assert lab(PHOS, "p", None, ["q"]) == (0, False)  # leaves the named catalyst out
    # the rule reads roles only (an amino-acid is no entity, so never a generated participant)
    assert lab(PHOS, "p", "e", ["a"]) == (1, False)
    assert lab(BIND, "b", None, ["c"]) == (0, False)  # :location is no argument


def test_two_participants_without_catalyst():
    assert lab(BIND, "b", None, ["x", "y"]) == (1, False)
    assert lab(BIND, "b", None, ["x"]) == (1, False)
    assert lab(BIND, "b", "x", ["y"]) == (0, False)  # x is not an agent, y not either


def test_coordinations_are_looked_through():
    for ps in (["e"], ["p"], ["g"], ["e", "g"]):
        assert lab(COORD, "i", "s", ps) == (1, False)
    assert lab(COORD, "i", "e", ["s"]) == (0, True)
    assert lab(COORD, "i", "e", ["s", "p"]) == (0, True)
    assert sorted(fillers(parse_amr(COORD).graph, "i", "ARG1")) == ["e", "g", "p"]


def test_inverse_roles_count_as_forward():
    assert lab(INVERSE, "i", "s", ["e"]) == (1, False)
    assert lab(INVERSE, "i", "e", ["s"]) == (0, True)


def test_unknown_node():
    g = parse_amr(PHOS, graph_id="phos")
    with pytest.raises(CandidateError, match="unknown node 'nope'.*'phos'"):
        distant_label(g, Candidate("p", "nope", ("q",)))
    with pytest.raises(CandidateError, match="without an interaction node"):
        DistantLabeler(g)(Candidate(None, "e", ("q",)))


def literal_rule(G, cand):
    """The README's rule, re-stated literally (no caching, sets recomputed)."""

    def fill(node, role):
        out, todo = set(), [v for u, v, r in G.edges(data="role") if u == node and r == role]
        while todo:
            v = todo.pop()
            if G.nodes[v]["concept"] in ("and", "or", "slash"):
                todo += [w for u, w, r in G.edges(data="role") if u == v and r.startswith("op")]
            else:
                out.add(v)
        return out

    agent = fill(cand.interaction, "ARG0")
    theme = fill(cand.interaction, "ARG1") | fill(cand.interaction, "ARG2")

    def positive(c, ps):
        ok = all(p in theme and p not in agent for p in ps)
        if c is None:
            return ok and not any(G.nodes[a]["concept"] in ENTITY_CONCEPTS for a in agent)
        return ok and c in agent

    if positive(cand.catalyst, cand.participants):
        return 1, False
    if cand.catalyst is not None:
        for k, p in enumerate(cand.participants):
            ps = list(cand.participants)
            ps[k] = cand.catalyst
            if positive(p, ps):
                return 0, True
    return 0, False


def test_rule_against_literal_statement_on_real_graphs(shared_data):
    corpus = read_amr(shared_data / "amr/bio_amr_v0.8/amr-release-test-bio.txt")
    n = npos = 0
    for amr in list(corpus)[:150]:
        labeler = DistantLabeler(amr)
        for cand in generate_candidates(amr, max_distance=4):
            got = labeler(cand)
            assert (got.label, got.swapped) == literal_rule(amr.graph, cand)
            n += 1
            npos += got.label
    assert n > 1000 and npos > 10
