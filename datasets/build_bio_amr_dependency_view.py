#!/usr/bin/env python
"""Build a dependency-parse view of the shipped Bio AMR interaction candidates.

The shipped candidates (``structkernels/data/interactions.jsonl.gz``, built by
``build_bio_amr_interactions.py``) carry an AMR path and a label read off the same gold
AMR, so a kernel on the AMR path is judged on what the labelling rule itself read.  This
script gives each candidate a second structure computed from the sentence text alone:
the path between its interaction word and its entities in a dependency parse.  The AMR
is used only to say *which words* the candidate's nodes are, through the gold token
alignments of the Bio AMR v0.8 alignment release.

Steps
-----
1. **Alignments.**  The graphs of ``alignment-release-{dev,test,training}-bio*.txt`` are
   decoded with :mod:`penman` (the training file is cut at 1 MiB: the graphs past the cut
   have no alignment, and its last ``::id`` no graph: counted, not guessed; a block that
   cannot be decoded is counted too); ``~e.N`` markers give the
   0-based indices of the ``# ::tok`` tokens of a node's concept or of a name's string.
2. **Same graph.**  A candidate's nodes are variables of the graph its record came from
   (Bio AMR v3.0 wins over v0.8 for an id in both, so it may be another annotation of
   the sentence).  A node is used only if, in the aligned graph, the same variable has
   the same concept, the same name and the same edges (role, direction and concept of the
   other end); a graph whose triples are all equal passes every node.
3. **Checked alignments.**  Some graphs of the release are aligned to another tokenisation
   than their ``# ::tok`` line (typically 2 tokens off after each ``<xref ...>`` tag, so
   that ``reduce-01`` points at the ``a`` of ``a strong reduction``).  Every aligned
   string of a graph (names, quoted values) is a checkpoint: *good* when one of its
   tokens' forms (step 5) and the string, lower-cased, contain one another; *shifted*
   when not, but a token up to ``MAX_SHIFT`` places away does.  From the first shifted
   checkpoint on, a graph's alignments are not trusted: only tokens up to the last good
   checkpoint before it are used, and a candidate with a node aligned past it is left
   out (:func:`reliable_limit`).  Nothing is re-aligned.
4. **Node -> tokens.**  The interaction node: the tokens its concept is aligned to.  An
   entity with a ``:name``: the tokens its name strings (``:op1`` ...) are aligned to,
   else those of its own concept.  A node with no aligned token leaves its candidate out.
5. **Tokens -> characters** (:func:`token_spans`).  ``# ::tok`` tokens are found in the
   record's ``sentence`` left to right: a token's surface forms are the token itself,
   then the token with ``@`` removed (``@-@`` is a hyphen written as a token, ``</i>@``
   a tag glued to the next token), then PTB bracket and quote escapes (``-LRB-`` reads
   ``(``, `````/``''`` read ``"``); a form matches where the next non-space character
   of the text starts (*exact*), else it is searched within the next ``WINDOW``
   characters (*skipped*, the text in between left unmatched); a token with no match is
   *unmatched* and the cursor stays.  A form that is empty (a lone ``@``) matches
   nothing.  A node whose token is unmatched leaves its candidate out.  An entity's
   character spans are its tokens' spans, two spans merged when only non-space text
   lies between them (``B @-@ Raf`` aligned to ``B`` and ``Raf`` is the one span
   ``B-Raf``, so that the parser is not made to cut it at the hyphen).
6. **Parse.**  Each sentence is parsed once
   (:class:`~structkernels.relations.parse.DependencyParser`, spaCy ``en_core_web_sm``)
   with every node of every candidate of its graph as an entity, so that each node's
   span is a run of whole tokens; a node's word is :func:`~structkernels.relations.structures.entity_head`
   of its tokens.
7. **Path**, laid out as the AMR view's path (``CandidateExtractor.path_tuples``): the
   catalyst's shortest dependency path read from the catalyst up to the interaction word,
   then, for each participant, the interaction word's shortest path down to it; each run
   of ``(edge, node)`` tuples has the edge walked into the node from the interaction
   side (a dependency label, with ``-of`` when walked from dependent to head, as
   :mod:`structkernels.relations.structures` reads it) and the interaction word's tuple
   has no edge.  One participant: ``trigger -> participant``; two:
   ``trigger -> p1, trigger -> p2``.  Node labels are the lemma lower-cased.  The AMR
   path does not blind its entities (they read their concept, ``protein``), so neither
   does this one: no ``PROT1``/``PROT2``.

Output: ``structkernels/data/interactions_dependency.jsonl.gz`` (gzip, mtime 0, the
same bytes on every run, written atomically), one record per candidate that could be
aligned and parsed, in the order of ``interactions.jsonl.gz``::

    {"id": "a_pmid_2094_2929.10#0",
     "path": [[null, "reduce"], ["nsubj", "treatment"], ["prep", "of"], ["pobj", "line"],
              ["prep", "with"], ["pobj", "u0126"]],
     "tok": {"interaction": [10], "catalyst": null, "participants": [[8]]},
     "heads": {"interaction": 10, "catalyst": null, "participants": [8]}}

``tok``: the ``# ::tok`` indices (0-based) each node was aligned to; ``heads``: the
(1-based) dependency token each path starts or ends at.  The counts (coverage and
alignment failures) are printed as JSON.

Usage::

    python datasets/build_bio_amr_dependency_view.py [--cache-dir DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path as FilePath

import networkx as nx
import penman
from penman import surface
from penman.models.amr import model as AMR_MODEL

from structkernels.relations.parse import DependencyParser
from structkernels.relations.structures import entity_head
from structkernels.structures import Path
from structkernels.utils import atomic_open

HERE = FilePath(__file__).resolve().parent
DATA = HERE.parent / "structkernels" / "data"
CANDIDATES = DATA / "interactions.jsonl.gz"
OUT = DATA / "interactions_dependency.jsonl.gz"
RAW = HERE / "bio-amr-interactions" / "raw"
SHARED = HERE.parent.parent / "shared" / "data" / "amr"
#: The raw graph files of build_bio_amr_interactions.py, in its reading order (first id wins).
SOURCES = [
    "amr-release-bio-v3.0.complete_prefix.txt",
    "amr-release-dev-bio.txt",
    "amr-release-test-bio.txt",
    "amr-release-training-bio.complete_prefix.txt",
]
ALIGNMENTS = [
    "alignment-release-dev-bio.txt",
    "alignment-release-test-bio.txt",
    "alignment-release-training-bio.TRUNCATED_1MiB.txt",
]
#: Farthest token a shifted checkpoint's string is looked for (step 3).
MAX_SHIFT = 6
#: Characters searched ahead of the cursor for a token that does not match at it.
WINDOW = 12
#: PTB escapes of the ``# ::tok`` lines and the text they stand for.
PTB = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}",
       "``": '"', "''": '"', "`": "'"}


# ----------------------------------------------------------------------------- reading
def read_penman(files: Sequence[FilePath], counts: Counter, what: str) -> dict[str, penman.Graph]:
    """Every graph of ``files`` by ``::id`` (the first of an id kept); an undecodable block
    (a release header, the unfinished last graph of a truncated file) is counted."""
    out: dict[str, penman.Graph] = {}
    for file in files:
        text = file.read_text(encoding="utf-8")
        for block in re.split(r"\n[ \t]*\n", text):
            if not any(line.lstrip().startswith("(") for line in block.splitlines()):
                if "# ::id" in block:  # metadata whose graph was cut off (a truncated file)
                    counts[f"{what}_ids_without_graph"] += 1
                continue  # comments only (a release header)
            try:
                g = penman.decode(block, model=AMR_MODEL)
            except Exception:  # noqa: BLE001 - penman raises several kinds on cut text
                counts[f"{what}_undecodable_blocks"] += 1
                continue
            gid = g.metadata.get("id")
            if gid and gid not in out:
                out[gid] = g
    return out


def _unquote(value) -> str:
    s = str(value)
    return s[1:-1] if len(s) >= 2 and s[0] == s[-1] == '"' else s


def _names(g: penman.Graph) -> dict[str, tuple[str, list]]:
    """Each named node's name (its strings joined by spaces) and the name strings' triples."""
    ops: dict[str, list] = {}
    for t in g.attributes():
        if re.fullmatch(r":op\d+", t[1]):
            ops.setdefault(t[0], []).append(t)
    out = {}
    for src, role, tgt in g.edges():
        if role == ":name" and tgt in ops:
            triples = sorted(ops[tgt], key=lambda t: int(t[1][3:]))
            out[src] = (" ".join(_unquote(t[2]) for t in triples), triples)
    return out


def _signature(g: penman.Graph, concepts: dict, names: dict, v: str) -> tuple:
    edges = []
    for src, role, tgt in g.edges():
        if src == v:
            edges.append((role, "out", concepts.get(tgt)))
        if tgt == v:
            edges.append((role, "in", concepts.get(src)))
    return (concepts.get(v), names.get(v, (None,))[0], tuple(sorted(edges, key=repr)))


@dataclass
class AlignedGraph:
    """The alignment graph of one id and how far it agrees with the candidates' graph."""

    graph: penman.Graph
    same: bool
    concepts: dict
    names: dict
    source_concepts: dict
    source_names: dict
    source: penman.Graph
    limit: int | None
    _alignments: dict | None = None

    def agrees(self, v: str) -> bool:
        if self.same:
            return v in self.concepts
        return (v in self.concepts and
                _signature(self.graph, self.concepts, self.names, v)
                == _signature(self.source, self.source_concepts, self.source_names, v))

    def tokens(self, v: str) -> tuple[int, ...]:
        """``# ::tok`` indices of node ``v``: its name strings', else its concept's."""
        if self._alignments is None:
            self._alignments = surface.alignments(self.graph)
        al = self._alignments
        idx: set[int] = set()
        if v in self.names:
            for t in self.names[v][1]:
                if t in al:
                    idx.update(al[t].indices)
        if not idx:
            t = (v, ":instance", self.concepts[v])
            if t in al:
                idx.update(al[t].indices)
        return tuple(sorted(idx))


def _contains(token: str, string: str) -> bool:
    s = string.lower()
    return any(f.lower() in s or s in f.lower() for f in token_forms(token))


def reliable_limit(g: penman.Graph, tokens: Sequence[str],
                   max_shift: int = MAX_SHIFT) -> int | None:
    """The last ``# ::tok`` index whose alignments are trusted (module text, step 3);
    None when every one is (no shifted checkpoint), -1 when none is.

    >>> g = penman.decode('(r / reduce-01~e.1 :ARG0 (p / protein :name (n / name '
    ...                   ':op1 "Ras"~e.0)) :ARG1 (q / protein :name (m / name :op1 "Raf"~e.1)))')
    >>> reliable_limit(g, ["Ras", "reduces", "Raf"])
    0
    """
    checks = []
    for t, a in surface.alignments(g).items():
        if t[1] == ":instance" or not str(t[2]).startswith('"'):
            continue
        string = _unquote(t[2])
        for i in a.indices:
            good = 0 <= i < len(tokens) and _contains(tokens[i], string)
            shifted = not good and any(
                0 <= i + d < len(tokens) and _contains(tokens[i + d], string)
                for d in range(-max_shift, max_shift + 1) if d)
            checks.append((i, good, shifted))
    shifted = [i for i, _, sh in checks if sh]
    if not shifted:
        return None
    first = min(shifted)
    return max((i for i, good, _ in checks if good and i < first), default=-1)


def aligned_graph(source: penman.Graph, aligned: penman.Graph) -> AlignedGraph:
    concepts = {s: c for s, _, c in aligned.instances()}
    src_concepts = {s: c for s, _, c in source.instances()}
    limit = reliable_limit(aligned, aligned.metadata.get("tok", "").split())
    return AlignedGraph(aligned, set(aligned.triples) == set(source.triples), concepts,
                        _names(aligned), src_concepts, _names(source), source, limit)


# ------------------------------------------------------------------ tokens -> characters
def token_forms(token: str) -> list[str]:
    """The texts a ``# ::tok`` token may stand for in the sentence, most literal first.

    >>> token_forms("@-@"), token_forms("-LRB-"), token_forms("</i>@")
    (['@-@', '-'], ['-LRB-', '('], ['</i>@', '</i>'])
    """
    forms = [token]
    if "@" in token:
        forms.append(token.replace("@", ""))
    if token in PTB:
        forms.append(PTB[token])
    return [f for i, f in enumerate(forms) if f and f not in forms[:i]]


def token_spans(tokens: Sequence[str], text: str, window: int = WINDOW
                ) -> tuple[list[tuple[int, int] | None], Counter]:
    """Each token's character span in ``text`` (None where it could not be found), and the
    count of ``exact``, ``skipped`` and ``unmatched`` tokens (module text, step 5).

    >>> spans, c = token_spans(["B", "@-@", "Raf", "binds", "-LRB-", "x", "-RRB-"],
    ...                        "B-Raf binds (x)")
    >>> spans, c["exact"]
    ([(0, 1), (1, 2), (2, 5), (6, 11), (12, 13), (13, 14), (14, 15)], 7)
    """
    out: list[tuple[int, int] | None] = []
    counts: Counter = Counter()
    cur = 0
    n = len(text)
    for tok in tokens:
        start = cur
        while start < n and text[start].isspace():
            start += 1
        forms = token_forms(tok)
        found = None
        for f in forms:
            if text.startswith(f, start):
                found = (start, start + len(f))
                counts["exact"] += 1
                break
        if found is None:
            best = None
            for f in forms:
                k = text.find(f, start, start + window + len(f))
                if k >= 0 and (best is None or k < best[0]):
                    best = (k, k + len(f))
            if best is not None:
                found = best
                counts["skipped"] += 1
        if found is None:
            counts["empty" if not forms else "unmatched"] += 1
            out.append(None)
            continue
        out.append(found)
        cur = found[1]
    return out, counts


def merge_spans(spans: Sequence[tuple[int, int]], text: str) -> tuple[tuple[int, int], ...]:
    """Sorted spans, two merged when no whitespace lies between them.

    >>> merge_spans([(2, 5), (0, 1)], "B-Raf x")
    ((0, 5),)
    >>> merge_spans([(0, 1), (6, 7)], "B-Raf x")
    ((0, 1), (6, 7))
    """
    out: list[list[int]] = []
    for a, b in sorted(set(spans)):
        if out and (a <= out[-1][1] or not any(c.isspace() for c in text[out[-1][1]:a])):
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return tuple((a, b) for a, b in out)


# ----------------------------------------------------------------------------- paths
def _step(G: nx.MultiDiGraph, u: str, v: str) -> str:
    data = G.get_edge_data(u, v)
    if data:
        return next(iter(data.values()))["role"]
    return next(iter(G.get_edge_data(v, u).values()))["role"] + "-of"


def _label(G: nx.MultiDiGraph, node: str) -> str:
    d = G.nodes[node]
    return (d.get("lemma") or d["concept"]).lower() or "_"


def dependency_path(G: nx.MultiDiGraph, trigger: str, catalyst: str | None,
                    participants: Sequence[str]) -> Path:
    """The candidate's path in the dependency graph ``G``, laid out as the AMR path
    (module text, step 7)."""
    U = G.to_undirected(as_view=True)
    root = (None, _label(G, trigger))

    def segment(target: str) -> list[tuple[str, str]]:
        nodes = nx.shortest_path(U, trigger, target)
        return [(_step(G, u, v), _label(G, v)) for u, v in zip(nodes[:-1], nodes[1:], strict=True)]

    tuples: list[tuple[str | None, str]] = []
    if catalyst is not None:
        tuples.extend(reversed(segment(catalyst)))
        tuples.append(root)
    for p in participants:
        tuples.append(root)
        tuples.extend(segment(p))
    return Path(tuples)


# ----------------------------------------------------------------------------- build
@dataclass(frozen=True)
class _Entity:
    id: str
    spans: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class _Sentence:
    id: str
    text: str
    entities: tuple[_Entity, ...]


def read_candidates(file: FilePath = CANDIDATES) -> list[dict]:
    with gzip.open(file, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def build(cache_dir=None, progress: bool = True,
          shared: FilePath = SHARED, raw: FilePath = RAW) -> tuple[list[dict], dict]:
    counts: Counter = Counter()
    records = read_candidates()
    sources = read_penman([raw / f for f in SOURCES], counts, "source")
    aligned = read_penman([shared / "bio_amr_v0.8" / f for f in ALIGNMENTS], counts, "alignment")
    graphs: dict[str, AlignedGraph] = {}
    for gid in sorted({r["graph_id"] for r in records}):
        if gid in aligned:
            graphs[gid] = aligned_graph(sources[gid], aligned[gid])
    counts["graphs"] = len({r["graph_id"] for r in records})
    counts["graphs_aligned"] = len(graphs)
    counts["graphs_aligned_identical"] = sum(g.same for g in graphs.values())
    counts["graphs_with_shifted_alignments"] = sum(g.limit is not None for g in graphs.values())

    # nodes -> tokens -> character spans, per candidate
    spans_of: dict[tuple[str, str], tuple] = {}  # (graph, node) -> (tok indices, char spans)
    tok_spans: dict[str, list] = {}
    plans: list[tuple[dict, dict]] = []  # (record, {"interaction": node, ...})
    tok_counts: Counter = Counter()
    for r in records:
        counts["candidates"] += 1
        g = graphs.get(r["graph_id"])
        if g is None:
            counts["dropped_graph_not_aligned"] += 1
            continue
        gid = r["graph_id"]
        if gid not in tok_spans:
            toks = g.graph.metadata.get("tok", "").split()
            tok_spans[gid], c = token_spans(toks, r["sentence"])
            tok_counts.update(c)
        it = r["interaction"]
        nodes = [it["node"]] + ([it["catalyst"]["node"]] if it["catalyst"] else []) + [
            p["node"] for p in it["participants"]]
        why = None
        for v in nodes:
            if not g.agrees(v):
                why = "dropped_node_differs_in_aligned_graph"
                break
            key = (gid, v)
            if key not in spans_of:
                idx = g.tokens(v)
                sp = [tok_spans[gid][i] for i in idx if i < len(tok_spans[gid])]
                if not idx:
                    spans_of[key] = (idx, None, "dropped_node_without_alignment")
                elif g.limit is not None and max(idx) > g.limit:
                    spans_of[key] = (idx, None, "dropped_node_aligned_past_a_shift")
                elif len(sp) < len(idx) or any(s is None for s in sp):
                    spans_of[key] = (idx, None, "dropped_token_not_found_in_sentence")
                else:
                    spans_of[key] = (idx, merge_spans(sp, r["sentence"]), None)
            if spans_of[key][2] is not None:
                why = spans_of[key][2]
                break
        if why is not None:
            counts[why] += 1
            continue
        plans.append((r, {"interaction": it["node"],
                          "catalyst": it["catalyst"]["node"] if it["catalyst"] else None,
                          "participants": [p["node"] for p in it["participants"]]}))
    counts["candidates_aligned"] = len(plans)

    # one parse per sentence, every planned node an entity
    ents: dict[str, dict[str, tuple]] = {}
    texts: dict[str, str] = {}
    for r, roles in plans:
        gid = r["graph_id"]
        texts[gid] = r["sentence"]
        for v in [roles["interaction"], roles["catalyst"], *roles["participants"]]:
            if v is not None:
                ents.setdefault(gid, {})[v] = spans_of[(gid, v)][1]
    sentences = [_Sentence(gid, texts[gid], tuple(_Entity(v, s) for v, s in sorted(ents[gid].items())))
                 for gid in sorted(ents)]
    parser = DependencyParser(cache_dir=cache_dir, progress=progress)
    parsed = {p.id: p for p in parser.parse(sentences)}
    counts["sentences_parsed"] = len(parsed)

    out: list[dict] = []
    for r, roles in plans:
        p = parsed[r["graph_id"]]
        G = p.graph.graph
        heads: dict[str, str | None] = {}
        bad = False
        for v in [roles["interaction"], roles["catalyst"], *roles["participants"]]:
            if v is None:
                continue
            toks = p.entities.get(v, ())
            if not toks:
                bad = True
                break
            heads[v] = entity_head(G, toks)
        if bad:
            counts["dropped_node_covers_no_parse_token"] += 1
            continue
        trig = heads[roles["interaction"]]
        cat = heads[roles["catalyst"]] if roles["catalyst"] else None
        parts = [heads[v] for v in roles["participants"]]
        if trig in parts or trig == cat:
            counts["parsed_trigger_shares_head_with_entity"] += 1
        path = dependency_path(G, trig, cat, parts)
        gid = r["graph_id"]
        out.append({
            "id": r["id"],
            "path": [list(t) for t in path],
            "tok": {
                "interaction": list(spans_of[(gid, roles["interaction"])][0]),
                "catalyst": (list(spans_of[(gid, roles["catalyst"])][0])
                             if roles["catalyst"] else None),
                "participants": [list(spans_of[(gid, v)][0]) for v in roles["participants"]],
            },
            "heads": {"interaction": int(trig), "catalyst": None if cat is None else int(cat),
                      "participants": [int(h) for h in parts]},
        })
    counts["candidates_parsed"] = len(out)
    doc = {k: counts[k] for k in sorted(counts)}
    doc["tokens"] = {k: tok_counts[k] for k in ("exact", "skipped", "unmatched", "empty")}
    doc["coverage"] = round(len(out) / max(1, counts["candidates"]), 4)
    kept = {o["id"] for o in out}
    by_split = Counter((r["split"], r["label"]) for r, _ in plans if r["id"] in kept)
    doc["splits"] = {s: {"records": by_split[(s, 0)] + by_split[(s, 1)],
                         "positive": by_split[(s, 1)]} for s in ("train", "test")}
    doc["distinct_paths"] = len({json.dumps(o["path"]) for o in out})
    return out, doc


def write_jsonl_gz(records: list[dict], path: FilePath) -> None:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        for r in records:
            gz.write(json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
            gz.write(b"\n")
    with atomic_open(path, "wb") as fh:
        fh.write(buf.getvalue())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache-dir", type=FilePath, default=None,
                    help="parse cache (default: structkernels' cache folder)")
    ap.add_argument("--out", type=FilePath, default=OUT, help="output file")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    try:
        records, counts = build(cache_dir=args.cache_dir, progress=not args.no_progress)
    except KeyboardInterrupt:
        print("interrupted: nothing written", file=sys.stderr)
        return 130
    write_jsonl_gz(records, args.out)
    counts["seconds"] = round(time.perf_counter() - t0, 2)
    print(json.dumps(counts, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
