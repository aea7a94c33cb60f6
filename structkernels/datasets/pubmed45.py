"""Labelled candidates in the PubMed45 record format (Garg et al., 2016) over graph files.

The NPK authors' PubMed45 data lists candidates as JSON records::

    {"path": "amr/sentence_17.dot",
     "interaction_tuple": ["bind", "Sos", "Ras", "GTP"],
     "label": 2}

``path`` names the graph file (any format :func:`~structkernels.read_graphs` reads);
``interaction_tuple`` is ``[type, catalyst, theme]`` or ``[type, catalyst, participant1,
participant2]``, the catalyst ``null`` (or ``""``) when there is none; ``label`` is 1
(valid), 0 (invalid) or 2 (catalyst and theme swapped).  An optional ``id`` names the
record, an optional ``graph_id`` picks one graph of a file holding several.

**Resolving a tuple.**  Each item is matched to nodes of the graph, the first kind that
matches winning: the node key (``"a8 MAPK"``) or its name part (``MAPK``); the entity name;
the concept or word, with or without its sense (``bind-01``/``bind``); the lemma; the
Snowball stem, all case folded.  Among the combinations of matching nodes (distinct,
connected to the interaction node) the one whose candidate subgraph is smallest (sum of
path lengths from the interaction node) is taken; a tie between combinations whose paths
differ is ambiguous.
"""

from __future__ import annotations

import os
from itertools import product
from pathlib import Path as FilePath
from typing import Any

import networkx as nx

from structkernels.datasets.interactions import InteractionDataset, SkippedRecord, split_of
from structkernels.formats._collect import check_on_error
from structkernels.formats.graphs import read_graphs
from structkernels.formats.labels import InteractionFormatError, read_label_records
from structkernels.graphs.candidates import Candidate, CandidateError, CandidateExtractor
from structkernels.graphs.model import Graph, GraphFormatError, concept_label, graph_kind
from structkernels.text.tokenize import stem_word
from structkernels.utils import BadLine, one_line

__all__ = ["load_pubmed45", "resolve_tuple", "SWAPPED_MODES"]

#: ``"negative"``: label 2 becomes 0 with ``swapped`` true; ``"class"``: label 2 is kept.
SWAPPED_MODES = ("negative", "class")


def _tiers(G: nx.MultiDiGraph, item: str) -> list[list[str]]:
    """Nodes matching ``item``, one list per kind of match, in order of preference."""
    low = item.casefold()
    stem = stem_word(low)
    amr = graph_kind(G) == "amr"
    tiers: list[list[str]] = [[], [], [], [], []]  # key, name, concept, lemma, stem
    for v, d in G.nodes(data=True):
        sv = str(v)
        if sv == item or (" " in sv and sv.split(" ", 1)[1].casefold() == low):
            tiers[0].append(v)
        elif d.get("name") and d["name"].casefold() == low:
            tiers[1].append(v)
        elif (c := d["concept"]).casefold() == low or (amr and concept_label(c).casefold() == low):
            tiers[2].append(v)
        elif d.get("lemma") and d["lemma"].casefold() == low:
            tiers[3].append(v)
        elif stem:
            forms = {c.casefold(), concept_label(c).casefold()} if amr else {c.casefold()}
            if d.get("name"):
                forms.add(d["name"].casefold())
            if any(stem_word(f) == stem for f in forms):
                tiers[4].append(v)
    return tiers


def _matches(G: nx.MultiDiGraph, item: Any, what: str, gid: str) -> list[str]:
    if not isinstance(item, str) or not item.strip():
        raise ValueError(f"{what} must be a non-empty string, got {item!r}")
    for tier in _tiers(G, item.strip()):
        if tier:
            return tier
    raise ValueError(f"{what} {item!r} matches no node of graph {gid!r}")


def resolve_tuple(graph: Graph | nx.MultiDiGraph, interaction_tuple: Any) -> Candidate:
    """The candidate of a graph that an interaction tuple names (module docstring).

    Raises
    ------
    ValueError
        Naming the item that does not match, or why no single candidate fits.

    Examples
    --------
    >>> from structkernels.amr import parse_amr
    >>> from structkernels.datasets import resolve_tuple
    >>> g = parse_amr('(b / bind-01 :ARG0 (p / protein :name (n / name :op1 "Sos")) '
    ...               ':ARG1 (q / protein :name (m / name :op1 "Ras")))')
    >>> resolve_tuple(g, ["bind", "Sos", "Ras"])
    Candidate(interaction='b', catalyst='p', participants=('q',), graph_id='amr')
    """
    G = graph.graph if isinstance(graph, Graph) else graph
    gid = str(G.graph.get("id"))
    tup = interaction_tuple
    if not isinstance(tup, (list, tuple)) or len(tup) not in (3, 4):
        raise ValueError(f"interaction_tuple must be [type, catalyst, theme] or "
                         f"[type, catalyst, participant1, participant2], got {tup!r}")
    if tup[0] in (None, ""):
        raise ValueError("interaction_tuple has no type (first item is null)")
    inters = _matches(G, tup[0], "interaction type", gid)
    cats: list[str | None] = [None] if tup[1] in (None, "") else _matches(G, tup[1], "catalyst", gid)
    parts = [_matches(G, p, f"participant {i + 1}", gid) for i, p in enumerate(tup[2:])]
    x = CandidateExtractor(G)
    best: list[tuple[int, Candidate]] = []
    for combo in product(inters, cats, *parts):
        i, c, ps = combo[0], combo[1], tuple(combo[2:])
        nodes = [n for n in (i, c, *ps) if n is not None]
        if len(set(nodes)) != len(nodes):
            continue
        reach = x._parents(i)
        if any(n not in reach for n in nodes):
            continue
        cost = sum(x.distance(i, n) for n in nodes[1:])
        best.append((cost, Candidate(i, c, ps, G.graph.get("id"))))
    if not best:
        raise ValueError(f"no connected candidate in graph {gid!r}: the matching nodes of "
                         f"{list(tup)!r} are not linked to one interaction node (or coincide)")
    low = min(cost for cost, _ in best)
    top = [cand for cost, cand in best if cost == low]
    paths = {x.path(cand) for cand in top}
    if len(paths) > 1:
        raise ValueError(f"ambiguous in graph {gid!r}: {len(top)} equally close candidates with "
                         f"different paths, e.g. {[cand.nodes for cand in top[:3]]}")
    return top[0]


def _find_file(ref: str, graphs: FilePath | None, labels_dir: FilePath) -> FilePath | None:
    p = FilePath(ref)
    tries = []
    if p.is_absolute():
        tries.append(p)
    if graphs is not None:
        tries += [graphs / p, graphs / p.name]
    tries.append(labels_dir / p)
    return next((t for t in tries if t.is_file()), None)


def load_pubmed45(
    labels: str | os.PathLike,
    graphs: str | os.PathLike | None = None,
    swapped: str = "negative",
    on_error: str = "raise",
    kind: str = "auto",
) -> InteractionDataset:
    """Load PubMed45-format labels, resolving each tuple in its graph file.

    Parameters
    ----------
    labels : path
        A JSON array of records or JSON Lines (module docstring).
    graphs : folder, optional
        Where the records' ``path`` files are looked for (also by file name alone); the
        labels file's folder otherwise.
    swapped : {"negative", "class"}
        Label 2 (roles swapped) becomes 0 with ``swapped`` true (the paper's binary task),
        or stays class 2.
    on_error : {"raise", "skip"}
        A record that cannot be resolved (file missing, item without a match, no connected
        combination, ambiguous) raises :class:`~structkernels.datasets.InteractionFormatError`
        (file, record, reason) or is listed in ``dataset.skipped``.
    kind : {"auto", "amr", "dependency"}
        Kind of the DOT graphs.

    Returns
    -------
    InteractionDataset
        ``records`` keep the tuple, the graph file, the resolved nodes and a ``split`` by
        graph.

    Examples
    --------
    >>> from structkernels.datasets import load_pubmed45
    >>> data = load_pubmed45("labels.json", graphs="amr-dot/", on_error="skip")  # doctest: +SKIP
    >>> [str(s) for s in data.skipped]  # doctest: +SKIP
    """
    if swapped not in SWAPPED_MODES:
        raise ValueError(f"swapped must be one of {SWAPPED_MODES}, got {swapped!r}")
    check_on_error(on_error)
    lfile = FilePath(os.fspath(labels))
    if not lfile.is_file():
        raise FileNotFoundError(f"no labels file at {lfile}")
    gdir = None if graphs is None else FilePath(os.fspath(graphs))
    if gdir is not None and not gdir.is_dir():
        raise FileNotFoundError(f"no graph folder at {gdir}")
    fname = os.fspath(lfile)
    cache: dict[FilePath, Any] = {}
    records, paths, trees, skipped = [], [], [], []
    for where, rec in read_label_records(lfile):
        rid = rec.get("id") if isinstance(rec, dict) else None
        try:
            if isinstance(rec, BadLine):
                raise ValueError(rec.reason)
            if not isinstance(rec, dict):
                raise ValueError(f"a record is a JSON object, got {type(rec).__name__}")
            for key in ("path", "interaction_tuple", "label"):
                if key not in rec:
                    raise ValueError(f"record has no {key!r}")
            label = rec["label"]
            if isinstance(label, bool) or label not in (0, 1, 2):
                raise ValueError(f"label must be 0, 1 or 2 (roles swapped), got {label!r}")
            if not isinstance(rec["path"], str) or not rec["path"]:
                raise ValueError(f"'path' must name a graph file, got {rec['path']!r}")
            gf = _find_file(rec["path"], gdir, lfile.parent)
            if gf is None:
                raise ValueError(f"graph file {rec['path']!r} not found" + (f" in {gdir}" if gdir else ""))
            if gf not in cache:
                try:
                    opts = {"kind": kind} if gf.suffix.lower() in (".dot", ".gv") else {}
                    cache[gf] = read_graphs(gf, **opts)
                except (GraphFormatError, OSError) as exc:  # OSError: removed while reading
                    cache[gf] = exc
            corpus = cache[gf]
            if isinstance(corpus, Exception):
                raise ValueError(f"graph file unreadable: {one_line(corpus)}")
            if "graph_id" in rec:
                g = corpus.get(str(rec["graph_id"]))
                if g is None:
                    raise ValueError(f"no graph {rec['graph_id']!r} in {gf}")
            elif len(corpus) == 1:
                g = corpus[0]
            else:
                raise ValueError(f"{gf} holds {len(corpus)} graphs; give the record a 'graph_id'")
            cand = resolve_tuple(g, rec["interaction_tuple"])
            x = CandidateExtractor(g.graph)
            p, t = x.path(cand), x.tree(cand)
        except (ValueError, CandidateError, TypeError) as exc:
            bad = SkippedRecord(fname, int(where.split()[1]), rid, one_line(exc))
            if on_error == "raise":
                raise InteractionFormatError(str(bad)) from None
            skipped.append(bad)
            continue
        out = dict(rec)
        out.setdefault("id", f"{lfile.stem}:{where.split()[1]}")
        out.update(graph_id=g.id, graph_file=os.fspath(gf), sentence=g.sentence)
        out["interaction"] = {
            "type": g.graph.nodes[cand.interaction]["concept"],
            "node": cand.interaction,
            "catalyst": None if cand.catalyst is None else {"node": cand.catalyst},
            "participants": [{"node": n} for n in cand.participants],
        }
        del out["path"]
        out["source_path"] = rec["path"]
        out["path"], out["tree"] = p.to_json(), t.to_json()
        if label == 2 and swapped == "negative":
            out["label"], out["swapped"] = 0, True
        else:
            out["swapped"] = label == 2
        out.setdefault("split", split_of(str(g.id)))
        records.append(out)
        paths.append(p)
        trees.append(t)
    if not records and not skipped:
        raise InteractionFormatError(f"{fname}: no records")
    return InteractionDataset(records, paths, trees, fname, skipped)
