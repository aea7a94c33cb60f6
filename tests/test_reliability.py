"""Regression tests for hostile inputs (issue 16, rows 1-4 and 10): readers keep every good
graph, size parameters are bounded by what the input can use, deep structures need no
recursion."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from structkernels import Path, Tree, kernel
from structkernels.amr import AMRFormatError, CandidateExtractor, parse_amr, read_amr
from structkernels.formats.penman import MAX_DEPTH
from structkernels.kernels.srk.common import (
    MEMORY_BUDGET_ENV,
    MemoryBudgetError,
    memory_budget,
    srk_gram_stack,
    usable_window,
)

GOOD = '# ::id ok{i} ::snt fine\n(b / bind-01 :ARG1 (p / protein :name (n / name :op1 "Ras")))\n'


def _deep(depth: int) -> str:
    """A chain of ``depth`` nested nodes (``depth`` open parentheses)."""
    return "(a0 / protein" + "".join(f" :ARG0 (a{i} / protein" for i in range(1, depth)) + ")" * depth


# ----------------------------------------------------------------- row 1: deep nesting
def test_deep_graph_is_refused_alone_with_file_line_and_id(tmp_path):
    f = tmp_path / "deep.amr"
    f.write_text(f"{GOOD.format(i=1)}\n# ::id deep ::snt x\n{_deep(600)}\n\n{GOOD.format(i=2)}")
    with pytest.raises(AMRFormatError, match="nested 600 levels deep") as err:
        read_amr(f)
    e = err.value
    assert (e.file, e.line, e.graph_id) == (str(f), 5, "deep")
    corpus = read_amr(f, on_error="skip")
    assert [g.id for g in corpus] == ["ok1", "ok2"]
    assert [(s.graph_id, s.line) for s in corpus.skipped] == [("deep", 5)]
    assert "max_depth" in corpus.skipped[0].reason


def test_max_depth_is_a_parameter_and_the_decoder_cannot_crash_the_read(tmp_path):
    assert parse_amr(_deep(MAX_DEPTH)).graph.number_of_nodes() == MAX_DEPTH
    with pytest.raises(AMRFormatError, match="nested 40 levels"):
        parse_amr(_deep(40), max_depth=39)
    with pytest.raises(ValueError, match="max_depth"):
        parse_amr(_deep(2), max_depth=0)
    # beyond what penman's recursive decoder can take: refused cleanly, never a RecursionError
    f = tmp_path / "deeper.amr"
    f.write_text(f"{GOOD.format(i=1)}\n# ::id d ::snt x\n{_deep(3000)}\n")
    corpus = read_amr(f, on_error="skip", max_depth=10**6)
    assert [g.id for g in corpus] == ["ok1"] and corpus.skipped[0].graph_id == "d"
    assert "too deep" in corpus.skipped[0].reason


def test_deep_graph_candidate_tree_without_recursion():
    g = parse_amr(
        "(b / bind-01 :ARG0 (e / enzyme) :ARG1 "
        + "".join(f"(x{i} / and :op1 " for i in range(90))
        + "(p / protein)"
        + ")" * 91
    )
    x = CandidateExtractor(g)
    from structkernels.amr import Candidate

    cand = Candidate("b", "e", ("p",))
    tree = x.tree(cand)
    assert tree.to_json() == x.tree_json(cand)
    assert len(x.path(cand)) == 94


# ------------------------------------------------------------ row 2: one Latin-1 byte
def test_latin1_byte_costs_only_its_graph(tmp_path):
    f = tmp_path / "latin1.amr"
    bad = '# ::id caf ::snt un caf\xe9\n(c / cafe :name (n / name :op1 "caf\xe9"))\n'
    f.write_bytes(
        GOOD.format(i=1).encode() + b"\n" + bad.encode("latin-1") + b"\n" + GOOD.format(i=2).encode()
    )
    with pytest.raises(AMRFormatError, match="not UTF-8") as err:
        read_amr(f)
    e = err.value
    assert (e.file, e.line, e.graph_id) == (str(f), 4, "caf")
    assert "0xe9" in str(e) and "line 4" in str(e)
    corpus = read_amr(f, on_error="skip")
    assert [g.id for g in corpus] == ["ok1", "ok2"]
    assert [(s.graph_id, s.line) for s in corpus.skipped] == [("caf", 4)]


def test_utf8_bom_and_crlf_are_read(tmp_path):
    f = tmp_path / "bom.amr"
    f.write_bytes(b"\xef\xbb\xbf" + (GOOD.format(i=1) + "\n" + GOOD.format(i=2)).replace(
        "\n", "\r\n").encode())
    assert [g.id for g in read_amr(f)] == ["ok1", "ok2"]


# ------------------------------------------------------- row 3: re-entrant inverted role
def test_reentrant_inverted_role_and_its_normal_form_are_one_edge():
    g = parse_amr("(a / activate-01 :ARG0 (p / protein :ARG1-of a) :ARG1 p)").graph
    assert sorted((u, v, d["role"], d["inverted"]) for u, v, d in g.edges(data=True)) == [
        ("a", "p", "ARG0", False),
        ("a", "p", "ARG1", False),  # stated once normally: not inverted
    ]
    g = parse_amr("(a / activate-01 :ARG0 (p / protein :ARG1-of a))").graph
    assert sorted((d["role"], d["inverted"]) for _, _, d in g.edges(data=True)) == [
        ("ARG0", False), ("ARG1", True)]
    g = parse_amr("(p / protein :ARG1-of (a / activate-01) :ARG1-of a)").graph
    assert list(g.edges(data=True)) == [("a", "p", {"role": "ARG1", "inverted": True})]


def test_graph_model_is_the_set_of_penman_triples(shared_data):
    corpus = read_amr(shared_data / "amr/bio_amr_v0.8/amr-release-dev-bio.txt")
    for amr in corpus:
        edges = [(s, t, r[1:]) for s, r, t in amr.penman.edges()]
        assert sorted(set(edges)) == sorted(amr.graph.edges(data="role"))


# --------------------------------------------------------------- row 4: kmax bounds
X3 = [(("a", "b", "c"), ("c", "b", "a")), (("a", "x", "c"), ("c", "y", "a")),
      (("q", "b", "c"), ("c", "b", "q"))]


@pytest.mark.parametrize("name", ["kb-srk", "ps-srk", "pw-srk"])
def test_kmax_beyond_the_sentences_is_the_sentence_length(name):
    G = kernel(name, k=1, kmax=10**6).gram(X3)
    np.testing.assert_allclose(G, kernel(name, k=1, kmax=3).gram(X3), rtol=1e-12)
    assert kernel(name, k=1, kmax=10**9).stack_block(X3).shape == (3, 3, 3)
    S, dx, dy = srk_gram_stack(kernel(name, k=1, kmax=10**5), X3)
    assert S.shape == (3, 3, 3) and dx.shape == dy.shape == (3, 3)
    assert np.all(kernel(name, k=10**6).gram(X3) == 0.0)


def test_usable_window_of_a_cross_block():
    short, long = [(("a",), ("b", "c"))], [(("a",) * 5, ("b",) * 7)]
    assert usable_window(long) == 5 and usable_window(short, long) == 1
    k = kernel("kb-srk", k=1, kmax=50)
    assert k.windows_for(short, long) == [1] and k.windows_for(long) == [1, 2, 3, 4, 5]
    S, dx, dy = srk_gram_stack(k, short + long, long)
    assert S.shape == (5, 2, 1) and dx.shape == (5, 2) and dy.shape == (5, 1)


def test_kmax_gram_memory_is_bounded_in_a_subprocess():
    """``kmax=10**9`` in a Gram: was killed by the OS at 23.9 GB; now under a 3 GB cap."""
    code = textwrap.dedent(
        """
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        from structkernels import kernel
        X = [(("a", "b", "c"), ("c", "b", "a")), (("a", "x", "c"), ("c", "y", "a"))] * 20
        for name in ("kb-srk", "ps-srk", "pw-srk"):
            G = kernel(name, k=1, kmax=10**9).gram(X)
            assert G.shape == (40, 40)
        print("bounded")
        """
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "bounded" in run.stdout, run.stderr[-2000:]


def test_over_budget_is_refused_before_allocating(monkeypatch):
    import random

    rng = random.Random(0)
    X = [(tuple(rng.choice("abcdefgh") for _ in range(30)),
          tuple(rng.choice("abcdefgh") for _ in range(30))) for _ in range(6)]
    monkeypatch.setenv(MEMORY_BUDGET_ENV, "64M")
    assert memory_budget() == 64 << 20
    with pytest.raises(MemoryBudgetError, match=r"kmax=\d+ fits") as err:
        kernel("pw-srk", k=1, kmax=30).gram(X)  # 2**30 wildcard patterns per 30-gram
    assert isinstance(err.value, MemoryError) and isinstance(err.value, ValueError)
    fits = int(str(err.value).split("kmax=")[2].split()[0])
    assert kernel("pw-srk", k=1, kmax=fits).gram(X).shape == (6, 6)
    with pytest.raises(MemoryBudgetError, match="longest sentences"):
        kernel("kb-srk", k=1).gram([(("a",) * 3000, ("b",) * 3000)])
    with pytest.raises(MemoryBudgetError, match="srk_gram_stack"):
        srk_gram_stack(kernel("ps-srk", k=1, kmax=30), X * 400)
    monkeypatch.setenv(MEMORY_BUDGET_ENV, "lots")
    with pytest.raises(ValueError, match=MEMORY_BUDGET_ENV):
        memory_budget()


# ------------------------------------------------------------ row 10: a 500-deep tree
def _chain(depth: int) -> Tree:
    t = Tree("leaf")
    for i in range(depth):
        t = Tree(f"n{i % 3}", [("e", t), (None, Tree("x"))] if i % 2 else [("e", t)])
    return t


def test_deep_tree_json_pickle_equality_and_text_without_recursion():
    t = _chain(5000)
    obj = t.to_json()
    assert Tree.from_json(obj) == t and Tree.from_json(obj) is not t
    assert pickle.loads(pickle.dumps(t)) == t
    assert t != _chain(4999) and hash(t) == hash(Tree.from_json(obj))
    assert str(t).count("(") == 5000 and repr(t).startswith("Tree('n")
    small = Tree("b", [("ARG1", Tree("e", [(None, Tree("x"))])), ("ARG2", Tree("s"))])
    assert eval(repr(small)) == small  # noqa: S307 - repr round trip
    assert str(small) == "(b :ARG1 (e x) :ARG2 s)"
    assert Tree.from_json(json.loads(json.dumps(_chain(250).to_json()))) == _chain(250)


def test_deep_tree_json_errors_name_the_node():
    obj = _chain(600).to_json()
    node = obj
    for _ in range(300):
        node = node["children"][0][1]
    node["children"] = [["e", {"no": "label"}]]
    with pytest.raises(Exception, match="object with a 'label'"):
        Tree.from_json(obj)
    node["children"] = "oops"
    with pytest.raises(Exception, match="must be a list"):
        Tree.from_json(obj)


def test_deep_tree_in_the_tree_kernel_and_long_path_json():
    t = _chain(500)
    assert kernel("tree").value(t, t) > 0
    p = Path([(None, "r")] + [("e", f"n{i}") for i in range(5000)])
    assert Path.from_json(json.loads(json.dumps(p.to_json()))) == p


def test_dataset_tree_builder_without_recursion():
    from functools import partial

    build = partial(Tree.from_json, shared={})  # as the dataset reader builds its trees
    t = _chain(3000)
    assert build(t.to_json()) == t
    assert build(t.to_json()) is build(t.to_json())  # identical subtrees are shared
    with pytest.raises(Exception, match="must be a list"):
        build({"label": "a", "children": {"x": 1}})
