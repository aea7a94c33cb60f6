"""Candidate biomolecular interactions and the structures read from them.

After Garg et al. (2016) and the nonstationary kernels paper (Sec. 2 and 7, Fig. 1,
Table 1): a candidate pairs an interaction node with entity nodes
(:func:`generate_candidates`); its subgraph is the union of shortest undirected paths from
the interaction node, re-rooted there (edges walked against their direction carry
``-of``); its path and tree are read from that subgraph (:func:`candidate_path`,
:func:`candidate_tree`).  Node labels are AMR concepts without their PropBank sense
(``bind-01`` reads ``bind``) unless ``senses=True``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import networkx as nx

from structkernels.graphs.concepts import ENTITY_CONCEPTS, INTERACTION_CONCEPTS
from structkernels.graphs.model import Graph, as_networkx, concept_label
from structkernels.structures import Path, Tree
from structkernels.utils import StructkernelsError

__all__ = ["CATALYST", "DOMAIN", "ROLE_EDGE", "Candidate", "CandidateError", "CandidateExtractor",
           "candidate_path", "candidate_subgraph", "candidate_tree", "generate_candidates"]

#: Edge label of the child that marks a node's role in a candidate tree.
ROLE_EDGE = "role"
#: Role labels (Fig. 1(b), 1(c): catalyst in yellow, domain in green).
CATALYST = "catalyst"
DOMAIN = "domain"


class CandidateError(StructkernelsError, ValueError):
    """A candidate that does not fit its graph (names the node and the graph)."""


@dataclass(frozen=True)
class Candidate:
    """A hypothesised interaction: ``(interaction, catalyst or None, participants)``, nodes
    of one graph: the interaction node (root of the candidate's subgraph), the catalyst, and
    one or two participant (domain) nodes.

    Examples
    --------
    >>> from structkernels.amr import Candidate
    >>> Candidate("b", "p2", ("e", "s4")).nodes
    ('b', 'p2', 'e', 's4')
    """

    interaction: str
    catalyst: str | None
    participants: tuple[str, ...]
    graph_id: str | None = None

    def __post_init__(self) -> None:
        ps = self.participants
        object.__setattr__(self, "participants", (ps,) if isinstance(ps, str) else tuple(ps))

    @property
    def nodes(self) -> tuple[str, ...]:
        """Interaction, catalyst (if any) and participants."""
        head = (self.interaction,) if self.catalyst is None else (self.interaction, self.catalyst)
        return head + self.participants


class CandidateExtractor:
    """Subgraphs, paths and trees of candidates in one graph.

    A breadth-first tree is computed once per interaction node; ``senses`` keeps PropBank
    sense numbers in node labels (``bind-01`` instead of ``bind``).

    Examples
    --------
    >>> from structkernels.amr import parse_amr, CandidateExtractor, Candidate
    >>> g = parse_amr("(p / phosphorylate-01 :ARG0 (e / enzyme) :ARG1 (q / protein))")
    >>> x = CandidateExtractor(g)
    >>> str(x.path(Candidate("p", "e", ("q",))))
    '(ARG0, enzyme) (phosphorylate) (phosphorylate) (ARG1, protein)'
    """

    def __init__(self, amr: Graph | nx.MultiDiGraph, senses: bool = False):
        self.G = as_networkx(amr)
        self.graph_id = self.G.graph.get("id")
        self.senses = senses
        adj: dict[str, list[tuple[str, str, str, bool]]] = {v: [] for v in self.G}
        for u, v, role in self.G.edges(data="role"):
            if u == v:
                continue
            adj[u].append((v, role, role, False))
            adj[v].append((u, f"{role}-of", role, True))
        self._adj = adj
        self._bfs: dict[str, dict[str, tuple[str, str, str, bool] | None]] = {}
        # words of a dependency graph and collapsed entity names are labels as they are
        # ("IL-2" keeps its number); AMR concepts lose their sense unless senses=True
        verbatim = self.G.graph.get("kind") == "dependency"
        self._labels = {
            v: d["concept"] if verbatim or d.get("collapsed") else concept_label(d["concept"], senses)
            for v, d in self.G.nodes(data=True)
        }

    def label(self, node: str) -> str:
        """Node label used in paths and trees."""
        return self._labels[node]

    def _parents(self, root: str) -> dict[str, tuple[str, str, str, bool] | None]:
        parents = self._bfs.get(root)
        if parents is None:
            parents = {root: None}
            queue = deque([root])
            adj = self._adj
            while queue:
                u = queue.popleft()
                for v, label, role, inverse in adj[u]:
                    if v not in parents:
                        parents[v] = (u, label, role, inverse)
                        queue.append(v)
            self._bfs[root] = parents
        return parents

    def reachable(self, root: str) -> list[str]:
        """Nodes connected to ``root`` (in graph order)."""
        parents = self._parents(root)
        return [v for v in self.G if v in parents]

    def distance(self, root: str, target: str) -> int:
        """Number of edges on the shortest undirected path root -> target."""
        return len(self.route(root, target))

    def route(self, root: str, target: str) -> list[tuple[str, str]]:
        """``(edge as walked, node)`` steps of the shortest path root -> target."""
        parents = self._parents(root)
        if target not in parents:
            raise CandidateError(f"no path from interaction node {root!r} to {target!r} in "
                                 f"graph {self.graph_id!r}")
        steps = []
        v = target
        while v != root:
            u, label, _, _ = parents[v]  # type: ignore[misc]
            steps.append((label, v))
            v = u
        steps.reverse()
        return steps

    def check(self, cand: Candidate) -> None:
        """Raise :class:`CandidateError` unless ``cand`` fits this graph."""
        gid = self.graph_id
        if not isinstance(cand, Candidate):
            raise TypeError(f"expected a Candidate, got {type(cand).__name__}")
        if cand.interaction is None:
            raise CandidateError(f"candidate without an interaction node (graph {gid!r})")
        if not cand.participants:
            raise CandidateError(f"candidate {cand.nodes} has no participant (graph {gid!r})")
        if len(cand.participants) > 2:
            raise CandidateError(f"candidate {cand.nodes} has {len(cand.participants)} "
                                 f"participants; at most 2 (graph {gid!r})")
        roles = [("interaction", cand.interaction), ("catalyst", cand.catalyst)]
        for role, node in roles + [("participant", p) for p in cand.participants]:
            if node not in self.G and not (node is None and role == "catalyst"):
                raise CandidateError(f"unknown {role} node {node!r}: not a variable of graph "
                                     f"{gid!r}")
        if len(set(cand.nodes)) != len(cand.nodes):
            raise CandidateError(f"candidate {cand.nodes} uses a node twice (graph {gid!r})")

    def _routes(self, cand: Candidate) -> list[tuple[str, list[tuple[str, str]]]]:
        self.check(cand)
        out = []
        if cand.catalyst is not None:
            out.append((CATALYST, self.route(cand.interaction, cand.catalyst)))
        for p in cand.participants:
            out.append((DOMAIN, self.route(cand.interaction, p)))
        return out

    def path_tuples(self, cand: Candidate) -> list[tuple[str | None, str]]:
        """The ``(edge, node)`` tuples of :meth:`path` as a plain list."""
        routes = self._routes(cand)  # checks the candidate first
        lab = self._labels
        root = (None, lab[cand.interaction])
        tuples: list[tuple[str | None, str]] = []
        for role, steps in routes:
            seg = [(e, lab[n]) for e, n in steps]
            if role == CATALYST:
                tuples.extend(reversed(seg))
                tuples.append(root)
            else:
                tuples.append(root)
                tuples.extend(seg)
        return tuples

    def path(self, cand: Candidate) -> Path:
        """The candidate's path of ``(edge, node)`` tuples (Table 1)."""
        return Path(self.path_tuples(cand))

    def _children(self, cand: Candidate):
        children: dict[str, list[tuple[str, str]]] = {cand.interaction: []}
        roles: dict[str, str] = {}
        for role, steps in self._routes(cand):
            prev = cand.interaction
            for e, n in steps:
                if n not in children:
                    children[n] = []
                    children[prev].append((e, n))
                prev = n
            roles[steps[-1][1] if steps else cand.interaction] = role
        return children, roles

    def _build(self, cand: Candidate, make):
        """The candidate tree built bottom-up by ``make(label, kids)``, ``kids`` the ``(edge,
        built child)`` pairs and the role mark last.  Iterative: any depth."""
        children, roles = self._children(cand)
        lab = self._labels
        built: dict[str, Any] = {}
        stack = [(cand.interaction, False)]
        while stack:
            v, ready = stack.pop()
            if not ready:
                stack.append((v, True))
                stack.extend((c, False) for _, c in reversed(children[v]))
                continue
            kids = [(e, built.pop(c)) for e, c in children[v]]
            if v in roles:
                kids.append((ROLE_EDGE, make(roles[v], [])))
            built[v] = make(lab[v], kids)
        return built[cand.interaction]

    def tree(self, cand: Candidate) -> Tree:
        """The candidate's subgraph as an ordered tree with role-marked nodes."""
        return self._build(cand, Tree)

    def tree_json(self, cand: Candidate) -> dict[str, Any]:
        """``self.tree(cand).to_json()``, built directly (no Tree objects)."""

        def make(label: str, kids: list) -> dict[str, Any]:
            if not kids:
                return {"label": label}
            return {"label": label, "children": [[e, c] for e, c in kids]}

        return self._build(cand, make)

    def subgraph(self, cand: Candidate) -> nx.DiGraph:
        """The re-rooted subgraph (graph attribute ``root``): node attributes ``concept``,
        ``label``, ``name``, ``role`` (``"catalyst"``, ``"domain"`` or None); edge attributes
        ``label`` (as walked, ``-of`` against the AMR direction), ``role`` and ``inverse``."""
        children, roles = self._children(cand)
        parents = self._parents(cand.interaction)
        T = nx.DiGraph(root=cand.interaction, graph_id=self.graph_id)
        for v in children:
            d = self.G.nodes[v]
            T.add_node(v, concept=d["concept"], label=self._labels[v], name=d.get("name"),
                       role=roles.get(v))
        for u, kids in children.items():
            for _e, c in kids:
                _, label, role, inverse = parents[c]  # type: ignore[misc]
                T.add_edge(u, c, label=label, role=role, inverse=inverse)
        return T

    def candidates(self, interaction_concepts: Iterable[str] = INTERACTION_CONCEPTS,
                   entity_concepts: Iterable[str] = ENTITY_CONCEPTS, max_participants: int = 2,
                   catalysts: bool = True, max_distance: int | None = None) -> list[Candidate]:
        """See :func:`generate_candidates`."""
        inter = frozenset(interaction_concepts)
        ents = frozenset(entity_concepts)
        nodes = self.G.nodes
        return self.candidates_from_nodes([v for v in self.G if nodes[v]["concept"] in inter],
                                          [v for v in self.G if nodes[v]["concept"] in ents],
                                          max_participants, catalysts, max_distance)

    def candidates_from_nodes(self, interactions: Iterable[str], entities: Iterable[str],
                              max_participants: int = 2, catalysts: bool = True,
                              max_distance: int | None = None) -> list[Candidate]:
        """The enumeration of :func:`generate_candidates` from interaction and entity nodes
        the caller chose (e.g. by a lexicon); an entity that is also the interaction node is
        left out of its candidates."""
        if max_participants not in (1, 2):
            raise ValueError(f"max_participants must be 1 or 2, got {max_participants!r}")
        if max_distance is not None and (not isinstance(max_distance, int) or max_distance < 1):
            raise ValueError(f"max_distance must be a positive int or None, got {max_distance!r}")
        inter = set(interactions)
        ents = set(entities)
        for v in inter | ents:
            if v not in self.G:
                raise CandidateError(f"unknown node {v!r}: not a node of graph {self.graph_id!r}")
        out: list[Candidate] = []
        for i in self.G:
            if i not in inter:
                continue
            found = [v for v in self.reachable(i) if v != i and v in ents]
            if max_distance is not None:
                found = [v for v in found if self.distance(i, v) <= max_distance]
            for c in [None, *found] if catalysts else [None]:
                rest = [v for v in found if v != c]
                for k in range(1, max_participants + 1):
                    for ps in combinations(rest, k):
                        out.append(Candidate(i, c, ps, self.graph_id))
        return out


def generate_candidates(amr: Graph | nx.MultiDiGraph,
                        interaction_concepts: Iterable[str] = INTERACTION_CONCEPTS,
                        entity_concepts: Iterable[str] = ENTITY_CONCEPTS,
                        max_participants: int = 2, catalysts: bool = True,
                        max_distance: int | None = None) -> list[Candidate]:
    """Every candidate interaction of a graph (Garg et al., 2016).

    For each interaction node ``i`` and the entity nodes ``E`` connected to it (graph
    order): for ``c`` in ``[None, *E]``, every set of 1 (then 2) participants drawn from
    ``E`` without ``c`` (in :func:`itertools.combinations` order).

    Parameters
    ----------
    interaction_concepts, entity_concepts : iterable of str
        Defaults: :mod:`structkernels.graphs.concepts`.
    catalysts : bool
        Also generate candidates with a catalyst (default True).
    max_distance : int, optional
        Only entities at most this many edges (undirected) from the interaction node.

    Examples
    --------
    >>> from structkernels.amr import parse_amr, generate_candidates
    >>> g = parse_amr("(p / phosphorylate-01 :ARG0 (e / enzyme) :ARG1 (q / protein))")
    >>> [(c.catalyst, c.participants) for c in generate_candidates(g)]
    [(None, ('e',)), (None, ('q',)), (None, ('e', 'q')), ('e', ('q',)), ('q', ('e',))]
    """
    return CandidateExtractor(amr).candidates(interaction_concepts, entity_concepts,
                                              max_participants, catalysts, max_distance)


def _candidate(cand: Candidate | Sequence[Any]) -> Candidate:
    if isinstance(cand, Candidate):
        return cand
    if not isinstance(cand, Sequence) or isinstance(cand, str) or len(cand) != 3:
        raise CandidateError("a candidate is a Candidate or (interaction, catalyst, "
                             f"participants), got {cand!r}")
    return Candidate(cand[0], cand[1], cand[2])


def candidate_subgraph(amr: Graph | nx.MultiDiGraph, cand: Candidate | Sequence[Any]) -> nx.DiGraph:
    """The candidate's re-rooted subgraph (see :meth:`CandidateExtractor.subgraph`)."""
    return CandidateExtractor(amr).subgraph(_candidate(cand))


def candidate_path(amr: Graph | nx.MultiDiGraph, cand: Candidate | Sequence[Any],
                   senses: bool = False) -> Path:
    """The candidate's :class:`~structkernels.Path` in the form of Table 1.

    Examples
    --------
    >>> from structkernels.amr import parse_amr, candidate_path
    >>> g = parse_amr("(b / bind-01 :ARG1 (e / enzyme) :ARG2 (s / small-molecule))")
    >>> str(candidate_path(g, ("b", None, ("e", "s"))))
    '(bind) (ARG1, enzyme) (bind) (ARG2, small-molecule)'
    """
    return CandidateExtractor(amr, senses).path(_candidate(cand))


def candidate_tree(amr: Graph | nx.MultiDiGraph, cand: Candidate | Sequence[Any],
                   senses: bool = False) -> Tree:
    """The candidate's :class:`~structkernels.Tree` (Fig. 1(b), 1(c)), its roles marked.

    Examples
    --------
    >>> from structkernels.amr import parse_amr, candidate_tree
    >>> amr = parse_amr("(p / phosphorylate-01 :ARG0 (e / enzyme) :ARG1 (q / protein))")
    >>> str(candidate_tree(amr, ("p", "e", ("q",))))
    '(phosphorylate :ARG0 (enzyme :role catalyst) :ARG1 (protein :role domain))'
    """
    return CandidateExtractor(amr, senses).tree(_candidate(cand))
