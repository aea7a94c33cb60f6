"""spaCy dependency parses (``Doc`` or ``Span`` objects) as dependency graphs.

No spaCy model is needed: a ``Doc`` built from ``words``, ``heads`` and ``deps`` (or parsed
by any pipeline) is read as it is (docs/graphs.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from structkernels.formats._reading import GraphReading
from structkernels.graphs.model import Graph, GraphCorpus, GraphFormatError, add_node, new_graph

__all__ = ["from_spacy", "read_spacy"]


def from_spacy(doc: Any, graph_id: str = "doc") -> Graph:
    """One dependency graph of a spaCy ``Doc`` or sentence ``Span``.

    Parameters
    ----------
    doc : spacy.tokens.Doc or spacy.tokens.Span
        Parsed (every token has a ``dep_``); one sentence (one root).  Use
        :func:`read_spacy` for documents of several sentences.

    Raises
    ------
    GraphFormatError
        A token without a dependency label or a head outside the span, or not exactly one root.

    Examples
    --------
    >>> from spacy.vocab import Vocab  # doctest: +SKIP
    >>> from spacy.tokens import Doc  # doctest: +SKIP
    >>> doc = Doc(Vocab(), words=["Ras", "binds", "GTP"], heads=[1, 1, 1],
    ...           deps=["nsubj", "ROOT", "dobj"])  # doctest: +SKIP
    >>> sorted(from_spacy(doc).graph.edges(data="role"))  # doctest: +SKIP
    [('2', '1', 'nsubj'), ('2', '3', 'dobj')]
    """
    if not hasattr(doc, "__iter__") or not hasattr(doc, "text"):
        raise TypeError(f"expected a spaCy Doc or Span, got {type(doc).__name__}")
    tokens = list(doc)
    if not tokens:
        raise GraphFormatError("an empty Doc", None, None, graph_id)
    offset = tokens[0].i
    G = new_graph(graph_id, "dependency")
    for t in tokens:
        key = str(t.i - offset + 1)
        add_node(G, key, t.text, lemma=t.lemma_ or None, pos=t.pos_ or t.tag_ or None,
                 index=t.i - offset + 1)
    roots = []
    for t in tokens:
        key = str(t.i - offset + 1)
        if not t.dep_:
            raise GraphFormatError(
                "no dependency label: build the Doc with heads and deps, or parse it",
                None, None, graph_id, f"{key} {t.text}")
        if t.head.i == t.i:
            roots.append(key)
            continue
        hk = t.head.i - offset + 1
        if not 1 <= hk <= len(tokens):
            raise GraphFormatError(f"head {t.head.text!r} lies outside the sentence", None, None,
                                   graph_id, f"{key} {t.text}")
        G.add_edge(str(hk), key, role=t.dep_, inverted=False)
    if len(roots) != 1:
        raise GraphFormatError(
            f"{len(roots)} roots ({', '.join(roots) or 'none'}); one sentence has one root",
            None, None, graph_id)
    G.graph["root"] = roots[0]
    return Graph(id=graph_id, sentence=doc.text, graph=G, metadata={})


def read_spacy(docs: Any | Iterable[Any], on_error: str = "raise") -> GraphCorpus:
    """Dependency graphs of every sentence of one or more spaCy ``Doc`` objects.

    Graph ids are ``"<doc>:<sentence>"`` (0-based; ``<doc>`` the Doc's ``user_data["id"]``
    when set).  ``on_error="skip"`` lists bad sentences in ``corpus.skipped`` (``line`` is
    the sentence number)."""
    reading = GraphReading(on_error)
    if hasattr(docs, "sents") or hasattr(docs, "vocab"):
        docs = [docs]
    where: dict[str, tuple[int, int]] = {}
    for d, doc in enumerate(docs):
        given = "id" in getattr(doc, "user_data", {})
        name = str(getattr(doc, "user_data", {}).get("id", d))
        try:
            sents = list(doc.sents)
        except ValueError:  # no sentence boundaries: a Doc without a parse
            sents = [doc]
        for s, span in enumerate(sents):
            gid = f"{name}:{s}"
            try:
                g = from_spacy(span, gid)
                object.__setattr__(g, "id_given", given)
                if reading.ids.claim(g) is not None:  # two Docs with one user_data["id"]
                    d0, s0 = where[gid]
                    raise GraphFormatError(
                        f"duplicate id: sentence {s0} of Doc {d0} has it too (Doc {d})",
                        "<spacy>", s, gid)
                where[g.id] = (d, s)
                reading.graphs.append(g)
            except GraphFormatError as exc:
                reading.skip(exc, "<spacy>", s, gid)
    return reading.corpus("sentence", "<spacy>", [], first=False)
