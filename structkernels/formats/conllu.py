"""CoNLL-U dependency parses (UD, spaCy, Stanza, UDPipe output), via the ``conllu`` package.

The graph model of a sentence: docs/graphs.md (The formats as read).  A sentence is
malformed when a word has no HEAD or DEPREL, a HEAD names no word of it, a field cannot be
parsed, or it has not exactly one root.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from structkernels.formats._reading import GraphReading, blocks, duplicate_reason
from structkernels.graphs.model import Graph, GraphCorpus, GraphFormatError, add_node, new_graph
from structkernels.utils import one_line, optional_module, split_lines

__all__ = ["read_conllu", "parse_conllu"]


def _sentence(block: list[str], start: int, file: str, fallback_id: str) -> Graph:
    conllu = optional_module("conllu", "reading CoNLL-U needs the conllu package: "
                             "pip install 'structkernels[graphs]'")
    n_comments = next((k for k, ln in enumerate(block) if not ln.startswith("#")), len(block))
    ids = _sent_ids(block)
    gid = (ids[-1] if ids else "") or fallback_id
    try:
        sents = conllu.parse("\n".join(block) + "\n\n")
    except conllu.exceptions.ParseException as exc:
        line = start + n_comments
        for k, ln in enumerate(block):  # the first line whose fields fail to parse
            if ln.startswith("#"):
                continue
            try:
                conllu.parse(ln + "\n\n")
            except conllu.exceptions.ParseException:
                line = start + k
                break
        raise GraphFormatError(f"not a CoNLL-U word line: {one_line(exc, 300)}", file, line,
                               gid) from None
    except Exception as exc:  # the parser must cost this sentence only
        raise GraphFormatError(
            f"the CoNLL-U parser failed: {type(exc).__name__}: {one_line(exc, 200)}",
            file, start + n_comments, gid) from None
    return _build(sents, start, n_comments, file, gid)


def _build(sents, start, n_comments, file, gid) -> Graph:
    if len(sents) != 1:
        raise GraphFormatError(f"expected one sentence, found {len(sents)}", file, start, gid)
    sent = sents[0]
    meta = dict(sent.metadata)
    gid = str(meta.get("sent_id") or gid)
    G = new_graph(gid, "dependency")
    words = []
    for k, tok in enumerate(sent):
        tid = tok["id"]
        line = start + n_comments + k
        if not isinstance(tid, int):
            continue  # multiword token or empty node
        words.append((tok, line))
        pos = tok.get("upos")
        if pos in (None, "_"):
            pos = tok.get("xpos")
        form = tok.get("form")
        if not form:
            raise GraphFormatError(f"word {tid} has no FORM", file, line, gid)
        add_node(G, str(tid), form, lemma=tok.get("lemma"), pos=pos, index=tid)
    if not words:
        raise GraphFormatError("a sentence without words", file, start, gid)
    roots = []
    for tok, line in words:
        head, rel = tok.get("head"), tok.get("deprel")
        if head is None or not isinstance(head, int):
            raise GraphFormatError(f"word {tok['id']} ({tok['form']!r}) has no HEAD (column 7)",
                                   file, line, gid)
        if rel in (None, "_", ""):
            raise GraphFormatError(f"word {tok['id']} ({tok['form']!r}) has no DEPREL (column 8)",
                                   file, line, gid)
        if head == 0:
            roots.append(str(tok["id"]))
            continue
        if str(head) not in G:
            raise GraphFormatError(
                f"word {tok['id']} ({tok['form']!r}) has HEAD {head}, not a word of the sentence",
                file, line, gid,
            )
        G.add_edge(str(head), str(tok["id"]), role=rel, inverted=False)
    if len(roots) != 1:
        raise GraphFormatError(
            f"{len(roots)} words with HEAD 0 ({', '.join(roots) or 'none'}); a tree has one root",
            file, start, gid,
        )
    G.graph["root"] = roots[0]
    text = meta.get("text") or " ".join(tok["form"] for tok, _ in words)
    return Graph(id=gid, sentence=text, graph=G, metadata=meta, file=file, line=start,
                 id_given=bool(meta.get("sent_id")))


def parse_conllu(text: str, graph_id: str = "conllu") -> Graph:
    """One sentence of CoNLL-U text as a dependency graph.

    Examples
    --------
    >>> from structkernels.graphs import parse_conllu
    >>> g = parse_conllu("1\\tRas\\tRas\\tPROPN\\t_\\t_\\t2\\tnsubj\\t_\\t_\\n"
    ...                  "2\\tbinds\\tbind\\tVERB\\t_\\t_\\t0\\troot\\t_\\t_\\n")
    >>> list(g.graph.edges(data="role")), g.graph.graph["root"]
    ([('2', '1', 'nsubj')], '2')
    """
    found = [_sentence(b, s, "<string>", graph_id) for s, b in blocks(split_lines(text))]
    if len(found) != 1:
        raise GraphFormatError(f"expected one CoNLL-U sentence, found {len(found)}", "<string>")
    return found[0]


def read_conllu(path: str | os.PathLike | Sequence[str | os.PathLike],
                on_error: str = "raise") -> GraphCorpus:
    """Read every sentence of one or more CoNLL-U files.

    Parameters
    ----------
    path : path or sequence of paths
        Plain or gzip'd; lines end at ``\\n``, ``\\r\\n`` or ``\\r`` only.
    on_error : {"raise", "skip"}
        ``"raise"``: a malformed sentence (also one holding a line not UTF-8, or a
        ``sent_id`` already read) raises :class:`GraphFormatError` (file, line, sentence
        id); ``"skip"``: it is listed in ``corpus.skipped``, as is an unreadable file or
        the lost end of a truncated ``.gz``.  A sentence without ``sent_id`` gets
        ``<file stem>:<line>`` (``#2`` ... when taken).

    Returns
    -------
    GraphCorpus
        One dependency graph per sentence, in the order read.

    Examples
    --------
    >>> from structkernels.graphs import read_conllu
    >>> corpus = read_conllu("parsed.conllu", on_error="skip")  # doctest: +SKIP
    """
    reading = GraphReading(on_error)
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)

    def decode(file: str, start: int, block: list[str], bad: dict[int, str],
               name: str) -> Graph | None:
        if all(ln.startswith("#") for ln in block):
            return None  # a comment-only header
        stem = name.rsplit(".", 1)[0]
        broken = [k for k in range(start, start + len(block)) if k in bad]
        if broken:
            ids = _sent_ids(block)
            gid = (ids[0] if ids else "") or f"{stem}:{start}"
            raise GraphFormatError(f"not UTF-8 text ({bad[broken[0]]})", file, broken[0], gid)
        g = _sentence(block, start, file, f"{stem}:{start}")
        first = reading.ids.claim(g)
        if first is not None:
            raise GraphFormatError(duplicate_reason(first), file, start, g.id)
        return g

    files = reading.read_blocks(paths, decode, "no CoNLL-U sentence (empty file)")
    return reading.corpus("sentence", paths[0], files)


def _sent_ids(block: list[str]) -> list[str]:
    """The values of the ``# sent_id = ...`` comments that open ``block``."""
    out = []
    for ln in block:
        if not ln.startswith("#"):
            break
        body = ln.lstrip("#").strip()
        if body.startswith("sent_id") and "=" in body:
            out.append(body.split("=", 1)[1].strip())
    return out
