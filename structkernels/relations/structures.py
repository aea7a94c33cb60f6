"""The structures of a candidate pair, read off its sentence's dependency parse.

:func:`pair_structures` gives one structure per view, each compared by its own kernel:

- ``"path"``: the shortest dependency path from the first entity (in text order) to the
  second, a :class:`~structkernels.Path` of ``(edge, node)`` tuples (an edge walked from
  dependent to head carries ``-of``);
- ``"tree"``: the :class:`~structkernels.Tree` rooted at the entities' lowest common head:
  the path's nodes and each one's direct dependents, in sentence order;
- ``"context"``: a sorted tuple of strings: n-grams (1 to 3) of the path, the words between
  the entities, three before and three after, the path's length and the entities' distance;
- ``"apg"``: the all-paths graph of Airola et al. (2008).

Entity blinding (``blind=True``): the first entity's tokens read ``PROT1``, the second's
``PROT2``, any other entity's ``PROT``; other nodes read their lemma, lower-cased.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import chain
from typing import Any

import networkx as nx

from structkernels.graphs.allpaths import AllPathsSentence
from structkernels.relations.corpus import Entity, EntityPair, RelationFormatError
from structkernels.relations.parse import ParsedSentence
from structkernels.structures import Path, Tree

__all__ = ["VIEWS", "entity_head", "ordered", "pair_structures", "pair_views"]

#: The views :func:`pair_structures` can build.
VIEWS = ("path", "tree", "context", "apg")


def entity_head(G: nx.MultiDiGraph, tokens: Sequence[str]) -> str:
    """The entity's token whose head lies outside the entity (the first such, in sentence order).

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.MultiDiGraph([("3", "1"), ("3", "2")])
    >>> entity_head(G, ["2", "3"])
    '3'
    """
    inside = set(tokens)
    order = sorted(inside, key=int)
    for t in order:
        if not any(u in inside for u, _ in G.in_edges(t)):
            return t
    return order[0]


def ordered(pair: EntityPair) -> tuple[Entity, Entity]:
    """The pair's two entities in text order (start offset, then id)."""
    a, b = pair.e1, pair.e2
    return (a, b) if (a.start, a.id) <= (b.start, b.id) else (b, a)


def _labeller(parsed: ParsedSentence, first: Entity, second: Entity, blind: bool,
              plain: dict[str, str], entity_tokens: dict[str, str]) -> Callable[[str], str]:
    """A node's label: blinded, else its word (kept in ``plain`` for the sentence)."""
    G = parsed.graph.graph
    names = ({**entity_tokens, **dict.fromkeys(parsed.entities[first.id], "PROT1"),
              **dict.fromkeys(parsed.entities[second.id], "PROT2")} if blind else {})

    def label(node: str) -> str:
        if node in names:
            return names[node]
        word = plain.get(node)
        if word is None:
            data = G.nodes[node]
            word = plain[node] = (data.get("lemma") or data["concept"]).lower() or "_"
        return word

    return label


def _step(G: nx.MultiDiGraph, u: str, v: str) -> str:
    """The label of the edge walked from u to v (``-of`` when walked against it)."""
    data = G.get_edge_data(u, v)
    if data:
        return next(iter(data.values()))["role"]
    return next(iter(G.get_edge_data(v, u).values()))["role"] + "-of"


def _meet(G: nx.MultiDiGraph, adjacency: dict[str, list[str]], a: str,
          b: str) -> tuple[dict, dict, str | None]:
    """networkx's ``_bidirectional_pred_succ`` in the undirected view of ``G``, step for step
    (neighbours kept in ``adjacency``): predecessors, successors, where they met (or None)."""
    succ_of, pred_of = G.succ, G.pred

    def neighbours(v: str) -> list[str]:
        around = adjacency[v] = list(set(succ_of[v]) | set(pred_of[v]))
        return around

    pred: dict[str, str | None] = {a: None}
    succ: dict[str, str | None] = {b: None}
    forward, reverse = [a], [b]
    while forward and reverse:
        ahead = len(forward) <= len(reverse)  # grow the smaller side, forward on a tie
        level, seen, other = (forward, pred, succ) if ahead else (reverse, succ, pred)
        grown: list[str] = []
        for v in level:
            for w in adjacency.get(v) or neighbours(v):
                if w not in seen:
                    grown.append(w)
                    seen[w] = v
                if w in other:
                    return pred, succ, w
        forward, reverse = (grown, reverse) if ahead else (forward, grown)
    return pred, succ, None


def _shortest(G: nx.MultiDiGraph, a: str, b: str, adjacency: dict[str, list[str]]) -> list[str]:
    """``networkx.shortest_path`` from ``a`` to ``b`` in the undirected view of ``G`` (the
    same path of several; [] when none joins them) by :func:`_meet`."""
    if a == b:
        return [a]
    if a not in G or b not in G:
        return nx.shortest_path(G.to_undirected(as_view=True), a, b)  # its error
    pred, succ, w = _meet(G, adjacency, a, b)
    if w is None:
        return []
    path: list[str] = []
    while w is not None:
        path.append(w)
        w = pred[w]
    path.reverse()
    w = succ[path[-1]]
    while w is not None:
        path.append(w)
        w = succ[w]
    return path


def _tree(G: nx.MultiDiGraph, path: list[str], label) -> Tree:
    on_path = set(path)
    top = entity_head(G, path)  # the one path node whose head is off the path: the LCA

    def build(node: str) -> Tree:  # called on path nodes only
        kids = []
        for child in sorted(G.successors(node), key=int):
            sub = build(child) if child in on_path else Tree(label(child))
            kids.append((_step(G, node, child), sub))
        return Tree(label(node), kids)

    return build(top)


def _context(parsed: ParsedSentence, path: Path, first: str, second: str, label,
             keys: list[str]) -> tuple:
    """The context bag; ``keys``: the token nodes ``"1"`` .. ``"n"`` (kept a sentence)."""
    seq: list[str] = [path[0][1]]
    for edge, node in tuple(path)[1:]:  # (a slice of a Path would be a Path, checked again)
        seq += [edge, node]
    grams = chain(seq, map("|".join, zip(seq, seq[1:], strict=False)),
                  map("|".join, zip(seq, seq[1:], seq[2:], strict=False)))
    feats = set(map("p:".__add__, grams))
    n_tok = len(parsed.token_spans)
    lo, hi = sorted((int(first), int(second)))
    # the words of tokens lo - 3 .. hi + 3 (1-based), the only ones the features read:
    # words[x:y] of the sentence's words is span(x, y), for every x >= start
    start = max(0, lo - 4)
    window = list(map(label, keys[start:min(n_tok, hi + 3)]))

    def span(x: int, y: int) -> list[str]:
        return window[x - start:max(x, y) - start]

    feats.update(map("m:".__add__, span(lo, hi - 1)))
    feats.update(map("b:".__add__, span(start, lo - 1)))
    feats.update(map("a:".__add__, span(hi, hi + 3)))
    feats.add(f"len:{min(len(path), 8)}")
    feats.add(f"dist:{min(hi - lo, 12)}")
    return tuple(sorted(feats))


def pair_structures(parsed: ParsedSentence, pair: EntityPair, *, views: Iterable[str] = VIEWS,
                    blind: bool = True) -> dict[str, Any]:
    """The structures of one candidate pair, one per view (see the module's text).

    Parameters
    ----------
    parsed : ParsedSentence
        The parse of the pair's sentence.
    pair : EntityPair
    views : iterable of str, default all of :data:`VIEWS`
    blind : bool, default True
        Entity blinding (``PROT1``, ``PROT2``, ``PROT``).

    Raises
    ------
    ValueError
        An unknown view, a pair of another sentence, or an entity with no token (a
        :class:`~structkernels.relations.corpus.RelationFormatError` naming the file, line
        and sentence it was read from).

    Examples
    --------
    >>> from structkernels.relations import Entity, Sentence
    >>> from structkernels.relations.parse import ParsedSentence
    >>> from structkernels.graphs.model import Graph, add_node, new_graph
    >>> G = new_graph("s1", "dependency", root="2")
    >>> for k, (w, lemma) in enumerate([("Ras", "ras"), ("binds", "bind"), ("Raf", "raf")], 1):
    ...     add_node(G, str(k), w, lemma=lemma, pos="X", index=k)
    >>> G.add_edge("2", "1", role="nsubj"); G.add_edge("2", "3", role="dobj")
    0
    0
    >>> s = Sentence("s1", "Ras binds Raf", "d1",
    ...              (Entity("e1", ((0, 3),), "Ras"), Entity("e2", ((10, 13),), "Raf")))
    >>> parsed = ParsedSentence("s1", Graph("s1", s.text, G), ((0, 3), (4, 9), (10, 13)),
    ...                         {"e1": ("1",), "e2": ("3",)})
    >>> views = pair_structures(parsed, s.pairs()[0], views=["path", "context"])
    >>> list(views["path"])
    [(None, 'PROT1'), ('nsubj-of', 'bind'), ('dobj', 'PROT2')]
    >>> [f for f in views["context"] if f.startswith("m:")]
    ['m:bind']
    """
    return _structures(parsed, pair, tuple(views), blind, {})


def _structures(parsed: ParsedSentence, pair: EntityPair, views: tuple[str, ...], blind: bool,
                kept: dict[str, Any]) -> dict[str, Any]:
    """:func:`pair_structures`, what a sentence's pairs share kept in ``kept``."""
    for v in views:
        if v not in VIEWS:
            raise ValueError(f"unknown view {v!r}; the views are {', '.join(VIEWS)}")
    if pair.sentence.id != parsed.id:
        raise ValueError(f"pair {pair.id} is not of sentence {parsed.id}")
    first, second = ordered(pair)
    G = parsed.graph.graph
    if kept.get("graph") is not G or kept.get("parsed") is not parsed:
        kept.clear()  # the pairs of a sentence come together: keep one sentence's
        kept.update(graph=G, parsed=parsed, plain={}, heads={}, adjacency={}, steps={},
                    entity_tokens=dict.fromkeys(chain.from_iterable(parsed.entities.values()),
                                                "PROT"),
                    keys=[str(k) for k in range(1, len(parsed.token_spans) + 1)])
    toks, heads = {}, kept["heads"]  # heads: an entity's tokens -> its head
    for ent in (first, second):
        toks[ent.id] = tuple(parsed.entities.get(ent.id, ()))
        if not toks[ent.id]:  # named where the sentence was read
            raise RelationFormatError(
                f"pair {pair.id}: entity {ent.id} ({ent.text!r}) covers no token",
                pair.sentence.file, pair.sentence.line, pair.sentence.id)
        if toks[ent.id] not in heads:
            heads[toks[ent.id]] = entity_head(G, toks[ent.id])
    ha, hb = heads[toks[first.id]], heads[toks[second.id]]
    label = _labeller(parsed, first, second, blind, kept["plain"], kept["entity_tokens"])
    nodes = _shortest(G, ha, hb, kept["adjacency"])
    if not nodes:  # two trees (a parse that is a forest): join them at their roots
        nodes = [ha, hb]
    tuples = [(None, label(nodes[0]))]
    steps = kept["steps"]  # (u, v) -> the label of the edge walked from u to v
    for u, v in zip(nodes[:-1], nodes[1:], strict=True):
        edge = steps.get((u, v))
        if edge is None:
            edge = steps[u, v] = (_step(G, u, v) if (G.has_edge(u, v) or G.has_edge(v, u))
                                  else "none")
        tuples.append((edge, label(v)))
    path = Path(tuples)
    out: dict[str, Any] = {}
    if "path" in views:
        out["path"] = path
    if "tree" in views:
        out["tree"] = _tree(G, nodes, label)
    if "context" in views:
        out["context"] = _context(parsed, path, ha, hb, label, kept["keys"])
    if "apg" in views:
        others = [t for e, t in parsed.entities.items() if e not in (first.id, second.id) and t]
        sentence = kept.get("apg")
        if sentence is None:
            sentence = kept["apg"] = AllPathsSentence(parsed.graph)
        out["apg"] = sentence.graph(toks[first.id], toks[second.id], entities=others,
                                    blind=blind)
    return out


def pair_views(parsed: Sequence[ParsedSentence], pairs: Sequence[EntityPair], *,
               views: Iterable[str] = VIEWS, blind: bool = True) -> list[dict[str, Any]]:
    """:func:`pair_structures` of every pair, ``parsed`` holding each pair's sentence."""
    by_id = {p.id: p for p in parsed}
    views = tuple(views)
    kept: dict[str, Any] = {}  # what the pairs of a sentence share, read once
    out = []
    for pair in pairs:
        try:
            sentence = by_id[pair.sentence.id]
        except KeyError:
            raise ValueError(f"pair {pair.id}: sentence {pair.sentence.id} was not parsed") from None
        out.append(_structures(sentence, pair, views, blind, kept))
    return out
