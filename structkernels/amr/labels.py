"""Distant labels for candidate interactions, read off the gold AMR: the Bio AMR corpus has no
public hand labels, so the shipped dataset labels each candidate by a rule on the argument
structure of its interaction node ``I`` (exactly as good as the rule).

On the normalised graph (``(x :ARG0-of (i / ...))`` counts as ``i :ARG0 x``),
``fillers(I, R)`` are the nodes ``x`` with an edge ``I -R-> x``, a coordination (``and``,
``or``, ``slash``) replaced, recursively, by its ``:opN`` children;
``AGENT = fillers(I, ARG0)`` and ``THEME = fillers(I, ARG1) | fillers(I, ARG2)``.  A
candidate ``(I, C, P)`` with catalyst ``C`` (or none) and participants ``P`` is:

1. **positive** (label 1) iff every participant is in ``THEME`` and not in ``AGENT``, and
   either ``C`` is in ``AGENT``, or, with no catalyst, ``AGENT`` holds no entity node (the
   sentence names no catalyst that the candidate would leave out);
2. a **role swap** (label 0, ``swapped=True``, label 2 of the PubMed45 data of Garg et al.):
   not positive, and exchanging the catalyst with a participant gives a positive candidate;
3. otherwise **negative** (label 0, ``swapped=False``).

Entity nodes are those whose concept is in the entity list that generated the candidates
(:data:`~structkernels.graphs.concepts.ENTITY_CONCEPTS` by default).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import networkx as nx

from structkernels.graphs.candidates import Candidate, CandidateError
from structkernels.graphs.concepts import COORDINATION_CONCEPTS, ENTITY_CONCEPTS
from structkernels.graphs.model import Graph, as_networkx

__all__ = ["DistantLabel", "DistantLabeler", "distant_label", "fillers"]


@dataclass(frozen=True)
class DistantLabel:
    """``label`` (1 positive, 0 negative) and ``swapped`` (a role-swapped negative)."""

    label: int
    swapped: bool


def fillers(G: nx.MultiDiGraph, node: str, role: str) -> frozenset[str]:
    """Nodes filling ``role`` of ``node``, looking through coordinations.

    Examples
    --------
    >>> from structkernels.amr import parse_amr
    >>> from structkernels.amr.labels import fillers
    >>> g = parse_amr("(b / bind-01 :ARG1 (a / and :op1 (p / protein) :op2 (q / protein)))")
    >>> sorted(fillers(g.graph, "b", "ARG1"))
    ['p', 'q']
    """
    out: set[str] = set()
    stack = [v for _, v, r in G.out_edges(node, data="role") if r == role]
    seen: set[str] = set()
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if G.nodes[v]["concept"] in COORDINATION_CONCEPTS:
            stack.extend(w for _, w, r in G.out_edges(v, data="role")
                         if r.startswith("op") and r[2:].isdigit())
        else:
            out.add(v)
    return frozenset(out)


def _positive(catalyst: str | None, participants: Iterable[str], agent: frozenset[str],
              theme: frozenset[str], agent_has_entity: bool) -> bool:
    if not all(p in theme and p not in agent for p in participants):
        return False
    if catalyst is None:
        return not agent_has_entity
    return catalyst in agent


def distant_label(amr: Graph | nx.MultiDiGraph, cand: Candidate,
                  entity_concepts: Iterable[str] = ENTITY_CONCEPTS) -> DistantLabel:
    """Label a candidate by the rule of this module.

    Examples
    --------
    >>> from structkernels.amr import parse_amr, Candidate
    >>> from structkernels.amr.labels import distant_label
    >>> g = parse_amr("(p / phosphorylate-01 :ARG0 (e / enzyme) :ARG1 (q / protein))")
    >>> distant_label(g, Candidate("p", "e", ("q",)))
    DistantLabel(label=1, swapped=False)
    >>> distant_label(g, Candidate("p", "q", ("e",)))
    DistantLabel(label=0, swapped=True)
    """
    return DistantLabeler(amr, entity_concepts)(cand)


class DistantLabeler:
    """:func:`distant_label` for many candidates of one graph (roles cached per node).

    Examples
    --------
    >>> from structkernels.amr import parse_amr, Candidate
    >>> from structkernels.amr.labels import DistantLabeler
    >>> g = parse_amr("(b / bind-01 :ARG1 (e / enzyme) :ARG2 (s / small-molecule))")
    >>> DistantLabeler(g)(Candidate("b", None, ("e", "s"))).label
    1
    """

    def __init__(self, amr: Graph | nx.MultiDiGraph,
                 entity_concepts: Iterable[str] = ENTITY_CONCEPTS):
        self.G = as_networkx(amr)
        self.entity_concepts = frozenset(entity_concepts)
        self._roles: dict[str, tuple[frozenset[str], frozenset[str], bool]] = {}

    def roles(self, node: str) -> tuple[frozenset[str], frozenset[str], bool]:
        """``(AGENT, THEME, AGENT holds an entity)`` of an interaction node."""
        got = self._roles.get(node)
        if got is None:
            G = self.G
            agent = fillers(G, node, "ARG0")
            theme = fillers(G, node, "ARG1") | fillers(G, node, "ARG2")
            has = any(G.nodes[v]["concept"] in self.entity_concepts for v in agent)
            got = self._roles[node] = (agent, theme, has)
        return got

    def __call__(self, cand: Candidate) -> DistantLabel:
        gid = self.G.graph.get("id")
        for node in cand.nodes:
            if node is None:
                raise CandidateError(f"candidate without an interaction node (graph {gid!r})")
            if node not in self.G:
                raise CandidateError(f"unknown node {node!r}: not a variable of graph {gid!r}")
        roles = self.roles(cand.interaction)
        if _positive(cand.catalyst, cand.participants, *roles):
            return DistantLabel(1, False)
        if cand.catalyst is not None:
            for k, p in enumerate(cand.participants):
                swapped = cand.participants[:k] + (cand.catalyst,) + cand.participants[k + 1 :]
                if _positive(p, swapped, *roles):
                    return DistantLabel(0, True)
        return DistantLabel(0, False)
