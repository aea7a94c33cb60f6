"""Candidate interactions in any labelled graph, their nodes found by a :class:`Lexicon`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from structkernels.graphs.candidates import Candidate, CandidateExtractor
from structkernels.graphs.concepts import ENTITY_CONCEPTS, INTERACTION_CONCEPTS
from structkernels.graphs.model import Graph, as_networkx, concept_label, graph_kind
from structkernels.text.tokenize import stem_word

__all__ = ["Lexicon", "MATCH_MODES", "node_forms", "find_interactions", "find_entities",
           "extract_candidates", "candidate_records"]

MATCH_MODES = ("word", "lemma", "stem", "any")


def _fold(s: str, case_sensitive: bool) -> str:
    return s if case_sensitive else s.casefold()


@dataclass(frozen=True)
class Lexicon:
    """How interaction and entity nodes are recognised.

    Parameters
    ----------
    interaction_concepts, entity_concepts : frozenset of str
        AMR concepts (exact, with sense).  Defaults: the AMR concept lists.
    collapsed_names : bool
        Nodes with ``collapsed=True`` (a collapsed name) are entities.
    triggers, entities : frozenset of str
        Words or lemmas of interaction triggers and of entities.
    match : {"word", "lemma", "stem", "any"}
        By which form of a node (its Snowball stem for ``"stem"``) an entry matches it.
    case_sensitive : bool
        True for gene names whose case matters; by default case is folded.

    Examples
    --------
    >>> from structkernels.graphs import Lexicon
    >>> lex = Lexicon.for_dependency(entities={"Ras", "GTP"})
    >>> "bind" in lex.triggers, lex.match
    (True, 'any')
    """

    interaction_concepts: frozenset[str] = INTERACTION_CONCEPTS
    entity_concepts: frozenset[str] = ENTITY_CONCEPTS
    collapsed_names: bool = True
    triggers: frozenset[str] = field(default_factory=frozenset)
    entities: frozenset[str] = field(default_factory=frozenset)
    match: str = "any"
    case_sensitive: bool = False

    def __post_init__(self) -> None:
        if self.match not in MATCH_MODES:
            raise ValueError(f"match must be one of {MATCH_MODES}, got {self.match!r}")
        for name in ("interaction_concepts", "entity_concepts", "triggers", "entities"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise TypeError(f"Lexicon.{name} must be a collection of strings, not a string")
            object.__setattr__(self, name, frozenset(value))

    @classmethod
    def for_dependency(cls, entities: Iterable[str] = (), **kw: Any) -> Lexicon:
        """Triggers = the AMR interaction concepts without sense (``bind``, ``inhibit``...)."""
        kw.setdefault("triggers", {concept_label(c) for c in INTERACTION_CONCEPTS})
        return cls(entities=frozenset(entities), **kw)

    def _keys(self, words: Iterable[str]) -> dict[str, frozenset[str]]:
        folded = frozenset(_fold(w, self.case_sensitive) for w in words)
        return {"word": folded, "stem": frozenset(map(stem_word, folded))}


def node_forms(G: nx.MultiDiGraph, v: Any, case_sensitive: bool = False) -> dict[str, set[str]]:
    """The word, lemma and stem forms by which a node matches a lexicon entry."""
    d = G.nodes[v]
    words: set[str] = set()
    lemmas: set[str] = set()
    if graph_kind(G) == "dependency":
        words.add(d["concept"])
    else:
        if d.get("name"):
            words.add(d["name"])
        if d.get("collapsed"):
            words.add(d["concept"])
        else:
            lemmas.add(concept_label(d["concept"]))
    if d.get("lemma"):
        lemmas.add(d["lemma"])
    words = {_fold(w, case_sensitive) for w in words}
    lemmas = {_fold(w, case_sensitive) for w in lemmas}
    stems = {stem_word(w) for w in words | lemmas}
    return {"word": words, "lemma": lemmas, "stem": stems}


def _matches(forms: dict[str, set[str]], keys: dict[str, frozenset[str]], mode: str) -> bool:
    if mode in ("word", "any") and forms["word"] & keys["word"]:
        return True
    if mode in ("lemma", "any") and forms["lemma"] & keys["word"]:
        return True
    return mode in ("stem", "any") and bool(forms["stem"] & keys["stem"])


def find_interactions(graph: Graph | nx.MultiDiGraph, lexicon: Lexicon | None = None) -> list[str]:
    """Interaction nodes (graph order): AMR interaction concepts or lexicon triggers."""
    return _find(graph, lexicon, "triggers", "interaction_concepts")


def find_entities(graph: Graph | nx.MultiDiGraph, lexicon: Lexicon | None = None) -> list[str]:
    """Entity nodes (graph order): AMR entity concepts, collapsed names or lexicon entities."""
    return _find(graph, lexicon, "entities", "entity_concepts", collapsed=True)


def _find(graph: Graph | nx.MultiDiGraph, lexicon: Lexicon | None, words: str, concepts: str,
          collapsed: bool = False) -> list[str]:
    """The nodes whose AMR concept is in ``lexicon.<concepts>``, that are collapsed names
    (when ``collapsed`` and the lexicon keeps them) or whose forms match ``lexicon.<words>``."""
    G = as_networkx(graph)
    lex = lexicon or (Lexicon.for_dependency() if graph_kind(G) == "dependency" else Lexicon())
    listed = getattr(lex, words)
    keys = lex._keys(listed) if listed else None
    amr, wanted = graph_kind(G) == "amr", getattr(lex, concepts)
    out = []
    for v, d in G.nodes(data=True):
        if (amr and d["concept"] in wanted) or (collapsed and lex.collapsed_names
                                               and d.get("collapsed")):
            out.append(v)
        elif keys is not None and _matches(node_forms(G, v, lex.case_sensitive), keys, lex.match):
            out.append(v)
    return out


def extract_candidates(graph: Graph | nx.MultiDiGraph, lexicon: Lexicon | None = None,
                       max_participants: int = 2, catalysts: bool = True,
                       max_distance: int | None = None) -> list[Candidate]:
    """Every candidate interaction of a graph of any kind.

    The enumeration of :func:`structkernels.amr.generate_candidates`, with interaction and
    entity nodes found by ``lexicon`` (default: :class:`Lexicon` for AMR graphs,
    :meth:`Lexicon.for_dependency` for dependency graphs).

    Examples
    --------
    >>> from structkernels.graphs import parse_conllu, extract_candidates, Lexicon
    >>> g = parse_conllu("1\\tRas\\tRas\\tPROPN\\t_\\t_\\t2\\tnsubj\\t_\\t_\\n"
    ...                  "2\\tbinds\\tbind\\tVERB\\t_\\t_\\t0\\troot\\t_\\t_\\n"
    ...                  "3\\tGTP\\tGTP\\tPROPN\\t_\\t_\\t2\\tobj\\t_\\t_\\n")
    >>> cands = extract_candidates(g, Lexicon.for_dependency(entities={"Ras", "GTP"}))
    >>> from structkernels.amr import CandidateExtractor
    >>> str(CandidateExtractor(g).path(cands[-1]))
    '(obj, GTP) (binds) (binds) (nsubj, Ras)'
    """
    G = as_networkx(graph)
    return CandidateExtractor(G).candidates_from_nodes(
        find_interactions(G, lexicon), find_entities(G, lexicon), max_participants, catalysts,
        max_distance)


def _node_json(G: nx.MultiDiGraph, x: CandidateExtractor, v: str) -> dict[str, Any]:
    d = G.nodes[v]
    out = {"node": v, "concept": d["concept"], "label": x.label(v), "name": d.get("name")}
    if d.get("index") is not None:
        out["index"] = d["index"]
    return out


def candidate_records(graph: Graph, lexicon: Lexicon | None = None, max_participants: int = 2,
                      catalysts: bool = True, max_distance: int | None = None,
                      trees: bool = True) -> list[dict[str, Any]]:
    """Candidate records (the structkernels interaction form, without ``label``).

    One JSON-ready dict per candidate: ``id`` (``"<graph id>#<k>"``), ``graph_id``, ``file``,
    ``kind``, ``sentence``, ``interaction`` (type, node, catalyst, participants), ``path`` and
    ``tree``; with a ``label`` (0/1) added the file loads with
    :func:`structkernels.datasets.load_interactions`.
    """
    if not isinstance(graph, Graph):
        raise TypeError(f"expected a Graph, got {type(graph).__name__}")
    G = graph.graph
    x = CandidateExtractor(G)
    out = []
    cands = extract_candidates(graph, lexicon, max_participants, catalysts, max_distance)
    for k, c in enumerate(cands):
        rec: dict[str, Any] = {
            "id": f"{graph.id}#{k}",
            "graph_id": graph.id,
            "file": graph.file,
            "kind": graph_kind(G),
            "sentence": graph.sentence,
            "interaction": {
                "type": G.nodes[c.interaction]["concept"],
                "node": c.interaction,
                "catalyst": None if c.catalyst is None else _node_json(G, x, c.catalyst),
                "participants": [_node_json(G, x, p) for p in c.participants],
            },
            "path": x.path(c).to_json(),
        }
        if trees:
            rec["tree"] = x.tree_json(c)
        out.append(rec)
    return out
