"""The shipped dependency view of the Bio AMR candidates and the alignment rules that built it.

``structkernels/data/interactions_dependency.jsonl.gz`` is written by
``datasets/build_bio_amr_dependency_view.py``; these tests read the shipped file and call
the script's pure functions on hand examples (no parser, no shared data).
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
from pathlib import Path as FilePath

import networkx as nx
import penman
import pytest
from penman.models.amr import model as AMR_MODEL

from structkernels import Path

ROOT = FilePath(__file__).resolve().parents[1]
DATA = ROOT / "structkernels" / "data"
VIEW = DATA / "interactions_dependency.jsonl.gz"
SCRIPT = ROOT / "datasets" / "build_bio_amr_dependency_view.py"


@pytest.fixture(scope="module")
def build():
    spec = importlib.util.spec_from_file_location("build_bio_amr_dependency_view", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def view() -> list[dict]:
    with gzip.open(VIEW, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


@pytest.fixture(scope="module")
def candidates() -> dict[str, dict]:
    with gzip.open(DATA / "interactions.jsonl.gz", "rt", encoding="utf-8") as fh:
        return {r["id"]: r for r in map(json.loads, fh)}


# ----------------------------------------------------------------- the shipped file
def test_shipped_file_is_reproducible_gzip():
    head = VIEW.read_bytes()[:10]
    assert head[:2] == b"\x1f\x8b"
    assert head[4:8] == b"\x00\x00\x00\x00"  # mtime 0: the same bytes on every build


def test_records_have_the_documented_form(view):
    assert len(view) > 20_000
    for r in view:
        assert set(r) == {"id", "path", "tok", "heads"}
        assert isinstance(r["path"], list) and r["path"]
        for t in r["path"]:
            assert isinstance(t, list) and len(t) == 2
            assert t[0] is None or isinstance(t[0], str)
            assert isinstance(t[1], str) and t[1]
        tok, heads = r["tok"], r["heads"]
        assert set(tok) == set(heads) == {"interaction", "catalyst", "participants"}
        assert tok["interaction"] and all(isinstance(i, int) and i >= 0 for i in tok["interaction"])
        assert isinstance(heads["interaction"], int) and heads["interaction"] >= 1
        assert (tok["catalyst"] is None) == (heads["catalyst"] is None)
        assert 1 <= len(tok["participants"]) == len(heads["participants"]) <= 2
        assert all(p and all(isinstance(i, int) for i in p) for p in tok["participants"])


def test_paths_parse_as_paths(view):
    for r in view:
        p = Path(r["path"])
        assert len(p) == len(r["path"])
        assert Path.from_json(p.to_json()) == p


def test_ids_are_shipped_candidates_in_their_order(view, candidates):
    ids = [r["id"] for r in view]
    assert len(set(ids)) == len(ids)
    assert set(ids) <= set(candidates)
    order = {cid: k for k, cid in enumerate(candidates)}
    assert [order[i] for i in ids] == sorted(order[i] for i in ids)


def test_path_layout_mirrors_the_amr_path(view, candidates):
    """One edgeless interaction tuple per role segment, as in the AMR path; the interaction
    word opens each participant's run and closes the catalyst's."""
    for r in view:
        cand = candidates[r["id"]]
        roots = [k for k, (e, _) in enumerate(r["path"]) if e is None]
        assert len(roots) == sum(e is None for e, _ in cand["path"])
        has_catalyst = cand["interaction"]["catalyst"] is not None
        assert has_catalyst == (r["heads"]["catalyst"] is not None)
        assert len(roots) == len(cand["interaction"]["participants"]) + has_catalyst
        assert has_catalyst or roots[0] == 0
        root_labels = {r["path"][k][1] for k in roots}
        assert len(root_labels) == 1


def test_both_splits_and_labels_are_covered(view, candidates):
    seen = {(candidates[r["id"]]["split"], candidates[r["id"]]["label"]) for r in view}
    assert seen == {("train", 0), ("train", 1), ("test", 0), ("test", 1)}


# ------------------------------------------------------- alignment -> character spans
def test_tokens_to_character_spans_by_hand(build):
    text = "Loss of <i>B-Raf</i> (V600E) reduced ERK1/2 \u201cactivity\u201d."
    toks = ["Loss", "of", "<i>", "B", "@-@", "Raf", "</i>", "-LRB-", "V600E", "-RRB-",
            "reduced", "ERK1", "@/@", "2", "\u201c", "activity", "\u201d", "."]
    spans, counts = build.token_spans(toks, text)
    assert [text[a:b] for a, b in spans] == [
        "Loss", "of", "<i>", "B", "-", "Raf", "</i>", "(", "V600E", ")",
        "reduced", "ERK1", "/", "2", "\u201c", "activity", "\u201d", "."]
    assert counts["exact"] == len(toks) and counts["unmatched"] == 0
    # "B-Raf" aligned to its name's tokens 3 and 5: one character span, not cut at "-"
    assert build.merge_spans([spans[3], spans[5]], text) == ((11, 16),)
    assert text[11:16] == "B-Raf"
    # tokens with space between stay apart
    assert build.merge_spans([spans[0], spans[1]], text) == ((0, 4), (5, 7))


def test_skipped_and_unmatched_tokens_are_counted(build):
    spans, counts = build.token_spans(["Ras", "binds", "Raf", "zzz", "."], "Ras [1] binds Raf.")
    assert spans[:3] == [(0, 3), (8, 13), (14, 17)]
    assert spans[3] is None and spans[4] == (17, 18)
    assert (counts["exact"], counts["skipped"], counts["unmatched"]) == (3, 1, 1)


def test_alignment_to_node_tokens_and_spans(build):
    """A hand graph: the interaction node reads its concept's token, a named entity its
    name strings' tokens, then characters of the sentence."""
    text = "Akt phosphorylates B-Raf."
    amr = ("# ::id t1\n# ::tok Akt phosphorylates B @-@ Raf .\n"
           "(p / phosphorylate-01~e.1 :ARG0 (e / enzyme :name (n / name :op1 \"Akt\"~e.0))"
           " :ARG1 (e2 / enzyme~e.4 :name (n2 / name :op1 \"B-Raf\"~e.2,4)))")
    g = penman.decode(amr, model=AMR_MODEL)
    ag = build.aligned_graph(g, g)
    assert ag.same and ag.limit is None and ag.agrees("e2")
    assert ag.tokens("p") == (1,)
    assert ag.tokens("e") == (0,)
    assert ag.tokens("e2") == (2, 4)  # the name's tokens, not the concept's
    spans, _ = build.token_spans(g.metadata["tok"].split(), text)
    got = {v: build.merge_spans([spans[i] for i in ag.tokens(v)], text) for v in ("p", "e", "e2")}
    assert got == {"p": ((4, 18),), "e": ((0, 3),), "e2": ((19, 24),)}
    assert [text[a:b] for (a, b), in got.values()] == ["phosphorylates", "Akt", "B-Raf"]


def test_another_annotation_of_a_node_is_not_used(build):
    src = penman.decode("(p / phosphorylate-01 :ARG1 (e / enzyme :name (n / name :op1 \"Akt\")))",
                        model=AMR_MODEL)
    other = penman.decode("(p / phosphorylate-01~e.1 :ARG1 (e / protein :name (n / name"
                          " :op1 \"Akt\"~e.0)))", model=AMR_MODEL)
    ag = build.aligned_graph(src, other)
    assert not ag.same
    assert ag.agrees("p") is False  # its ARG1 now ends at a protein
    assert ag.agrees("e") is False


def test_shifted_alignments_are_not_trusted(build):
    # alignments two tokens off after the tag: "Raf"~e.5 points at "of"
    g = penman.decode('(r / reduce-01~e.4 :ARG0 (p / protein :name (n / name :op1 "Ras"~e.0))'
                      ' :ARG1 (q / protein :name (m / name :op1 "Raf"~e.5)))', model=AMR_MODEL)
    toks = ["Ras", "<xref", 'rid="F1">', "a", "strong", "of", "reduction", "of", "Raf"]
    assert build.reliable_limit(g, toks) == 0
    # a name read another way than its token ("MM" for "multiple myeloma") is no shift
    g2 = penman.decode('(d / disease :name (n / name :op1 "multiple"~e.0 :op2 "myeloma"~e.0))',
                       model=AMR_MODEL)
    assert build.reliable_limit(g2, ["MM", "cells"]) is None


def test_dependency_path_layout(build):
    # "Akt phosphorylates Raf in cells": phosphorylates -> Akt (nsubj), -> Raf (dobj)
    G = nx.MultiDiGraph()
    for k, (w, lemma) in enumerate([("Akt", "Akt"), ("phosphorylates", "phosphorylate"),
                                    ("Raf", "Raf"), ("in", "in"), ("cells", "cell")], 1):
        G.add_node(str(k), concept=w, lemma=lemma)
    for h, d, role in [("2", "1", "nsubj"), ("2", "3", "dobj"), ("2", "4", "prep"),
                       ("4", "5", "pobj")]:
        G.add_edge(h, d, role=role)
    assert list(build.dependency_path(G, "2", "1", ["3"])) == [
        ("nsubj", "akt"), (None, "phosphorylate"), (None, "phosphorylate"), ("dobj", "raf")]
    assert list(build.dependency_path(G, "2", None, ["3", "5"])) == [
        (None, "phosphorylate"), ("dobj", "raf"),
        (None, "phosphorylate"), ("prep", "in"), ("pobj", "cell")]
    # walked from dependent to head: "-of"
    assert list(build.dependency_path(G, "5", None, ["1"])) == [
        (None, "cell"), ("pobj-of", "in"), ("prep-of", "phosphorylate"), ("nsubj", "akt")]
