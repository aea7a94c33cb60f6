"""Lexicon candidates, PubMed45-format labels and the AMR + dependency views."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structkernels import Normalized, Path, kernel
from structkernels.amr import CandidateExtractor, generate_candidates, parse_amr
from structkernels.datasets import (
    InteractionFormatError,
    combine_views,
    load_pubmed45,
    resolve_tuple,
)
from structkernels.graphs import (
    Lexicon,
    candidate_records,
    extract_candidates,
    find_entities,
    find_interactions,
    parse_conllu,
    read_conllu,
    read_dot,
)
from structkernels.kernels.views import ViewKernel

pytest.importorskip("pydot", reason="pydot (extra 'graphs') is not installed")
pytest.importorskip("conllu", reason="conllu (extra 'graphs') is not installed")


@pytest.fixture()
def gdata(repo_root):
    return repo_root / "tests" / "data" / "graphs"


def test_default_lexicon_reproduces_amr_candidates(shared_data):
    from structkernels.amr import read_amr

    corpus = read_amr(shared_data / "amr" / "bio_amr_v0.8" / "amr-release-test-bio.txt")
    for g in corpus.graphs[:40]:
        assert extract_candidates(g) == generate_candidates(g)


def test_lexicon_on_amr_and_case_rules():
    g = parse_amr(
        '(b / bind-01 :ARG1 (p / protein :name (n / name :op1 "HER3")) '
        ':ARG2 (x / small-molecule :name (m / name :op1 "GTP")) :ARG3 (c / cell))'
    )
    assert find_interactions(g) == ["b"] and find_entities(g) == ["p", "x"]
    # a user lexicon adds the cell as an entity, by word (its concept is not a name)
    lex = Lexicon(entities={"cell"}, match="lemma")
    assert find_entities(g, lex) == ["p", "x", "c"]
    assert find_entities(g, Lexicon(entity_concepts=frozenset(), entities={"her3"})) == ["p"]
    strict = Lexicon(entity_concepts=frozenset(), entities={"her3"}, case_sensitive=True)
    assert find_entities(g, strict) == []
    with pytest.raises(ValueError, match="match must be one of"):
        Lexicon(match="fuzzy")
    with pytest.raises(TypeError, match="not a string"):
        Lexicon(entities="HER3")


def test_dependency_candidates_and_paths(gdata):
    c1 = read_conllu(gdata / "parsed.conllu")[0]
    lex = Lexicon.for_dependency(entities={"HER3", "PI3K", "Akt"})
    # triggers by lemma: binds -> bind, phosphorylates -> phosphorylate
    assert find_interactions(c1, lex) == ["2", "6"]
    assert find_entities(c1, lex) == ["1", "3", "7"]
    x = CandidateExtractor(c1)
    paths = {str(x.path(c)) for c in extract_candidates(c1, lex)}
    assert "(nsubj, HER3) (binds) (binds) (obj, PI3K)" in paths
    assert "(acl:relcl-of, PI3K) (phosphorylates) (phosphorylates) (obj, Akt)" in paths
    # words keep their digits (no PropBank sense to strip): "HER3", "IL-2"
    g = parse_conllu("1\tIL-2\tIL-2\tPROPN\t_\t_\t2\tnsubj\t_\t_\n2\tbinds\tbind\tVERB\t_\t_\t0\troot\t_\t_\n")
    cands = extract_candidates(g, Lexicon.for_dependency(entities={"IL-2"}))
    assert [str(CandidateExtractor(g).path(c)) for c in cands] == ["(binds) (nsubj, IL-2)"]
    # stems without lemmas: the authors' dependency DOT has words only
    sdg = read_dot(gdata / "sdg" / "s1.dot")[0]
    assert find_interactions(sdg, Lexicon.for_dependency(match="stem")) == ["binds2", "phosphorylates6"]
    assert find_interactions(sdg, Lexicon.for_dependency(match="word")) == []


def test_candidate_records_load_as_interactions(gdata, tmp_path):
    from structkernels.datasets import load_interactions

    g = read_dot(gdata / "amr" / "s1.dot")[0]
    recs = candidate_records(g)
    assert len(recs) == len(extract_candidates(g)) and recs[0]["id"] == "s1#0"
    assert {r["kind"] for r in recs} == {"amr"} and all("tree" in r for r in recs)
    f = tmp_path / "c.jsonl"
    f.write_text("".join(json.dumps({**r, "label": i % 2}) + "\n" for i, r in enumerate(recs)))
    data = load_interactions(f)
    assert len(data) == len(recs)
    assert [p.to_json() for p in data.paths] == [r["path"] for r in recs]


def test_resolve_tuple_rules():
    g = parse_amr(
        '(a / and :op1 (b / bind-01 :ARG1 (p / protein :name (n / name :op1 "Ras"))'
        ' :ARG2 (q / protein :name (m / name :op1 "Raf")))'
        ' :op2 (b2 / bind-01 :ARG2 (p2 / protein :name (n2 / name :op1 "Akt"))'
        ' :ARG1 (q2 / protein :name (m2 / name :op1 "Raf"))))'
    )
    # two bind-01 and two "Raf": the closest combination is taken
    c = resolve_tuple(g, ["bind-01", None, "Ras", "Raf"])
    assert (c.interaction, c.participants) == ("b", ("p", "q"))
    c = resolve_tuple(g, ["binding", None, "Akt", "raf"])  # stem, case folded
    assert (c.interaction, c.participants) == ("b2", ("p2", "q2"))
    with pytest.raises(ValueError, match="ambiguous"):  # (ARG2, protein) or (ARG1, protein)
        resolve_tuple(g, ["bind", None, "Raf"])
    # equally close matches with the same path are not ambiguous: the first is taken
    assert resolve_tuple(g, ["bind", None, "Ras"]).interaction == "b"
    with pytest.raises(ValueError, match="catalyst 'Sos' matches no node"):
        resolve_tuple(g, ["bind", "Sos", "Raf"])
    with pytest.raises(ValueError, match="interaction_tuple must be"):
        resolve_tuple(g, ["bind", "Ras"])


def test_pubmed45_labels(gdata):
    with pytest.raises(InteractionFormatError, match=r"labels\.json, line 10 \(record bad-type\): "
                       r"interaction type 'bind' matches no node of graph 's2'"):
        load_pubmed45(gdata / "labels.json")
    data = load_pubmed45(gdata / "labels.json", on_error="skip")
    assert [r["id"] for r in data.records] == [f"r{i}" for i in range(1, 9)]
    assert [(s.line, s.record_id) for s in data.skipped] == [
        (10, "bad-type"), (11, "bad-file"), (12, "bad-label")
    ]
    assert data.labels.tolist() == [1, 1, 0, 0, 1, 0, 1, 0]
    assert data.swapped.tolist() == [False, False, True, False, False, True, False, False]
    assert str(data.paths[1]) == "(ARG0, PI3K) (phosphorylate) (phosphorylate) (ARG1, Akt)"
    assert str(data.paths[2]) == "(ARG1, Akt) (phosphorylate) (phosphorylate) (ARG0, PI3K)"
    kept = load_pubmed45(gdata / "labels.json", on_error="skip", swapped="class")
    assert kept.labels.tolist() == [1, 1, 2, 0, 1, 2, 1, 0]
    # the swapped class is told apart from the valid one by the path direction
    from structkernels import KernelKNNClassifier

    clf = KernelKNNClassifier(kernel="path", n_neighbors=1).fit(kept.paths, kept.labels)
    assert clf.classes_.tolist() == [0, 1, 2]
    assert clf.predict(kept.paths).tolist() == kept.labels.tolist()
    # every record of one graph is in one half
    halves = {}
    for r in data.records:
        halves.setdefault(r["graph_id"], set()).add(r["split"])
    assert all(len(h) == 1 for h in halves.values())


def test_pubmed45_graph_folder_and_jsonl(gdata, tmp_path):
    recs = json.loads((gdata / "labels.json").read_text())[:2]
    for r in recs:
        r["path"] = "/elsewhere/on/their/machine/" + r["path"].split("/")[-1]
    f = tmp_path / "l.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in recs) + "\nnot json\n")
    data = load_pubmed45(f, graphs=gdata / "amr", on_error="skip")
    assert len(data) == 2 and data.skipped[0].line == 3 and "not valid JSON" in data.skipped[0].reason


def test_amr_and_dependency_views(gdata):
    amr = load_pubmed45(gdata / "labels.json", on_error="skip")
    sdg = load_pubmed45(gdata / "labels_sdg.json")
    both = combine_views({"amr": amr, "dependency": sdg})
    assert len(both) == 8 and both.views == ("amr", "dependency")
    assert both.X[0]["amr"] == amr.paths[0] and both.X[0]["dependency"] == sdg.paths[0]
    pk = kernel("path", lam=0.8)
    k_amr, k_dep = ViewKernel(pk, "amr"), ViewKernel(pk, "dependency")
    K_sum = (Normalized(k_amr) + Normalized(k_dep)).gram(both.X)
    K_prod = (Normalized(k_amr) * Normalized(k_dep)).gram(both.X)
    Ka, Kd = Normalized(pk).gram(amr.paths), Normalized(pk).gram(sdg.paths)
    np.testing.assert_allclose(K_sum, Ka + Kd, atol=1e-12)
    np.testing.assert_allclose(K_prod, Ka * Kd, atol=1e-12)
    assert np.linalg.eigvalsh(K_sum).min() > -1e-9
    # a record missing from one view is named, or skipped and listed
    short = sdg.subset(range(7))
    with pytest.raises(ValueError, match="record 'r8' of view 'amr' is missing from view 'dependency'"):
        combine_views({"amr": amr, "dependency": short})
    assert len(combine_views({"amr": amr, "dependency": short}, on_error="skip").skipped) == 1
    with pytest.raises(ValueError, match="item 0 has no view 'tree'"):
        ViewKernel(pk, "tree").gram(both.X)


_LABELS = st.sampled_from(["ARG0", "ARG1", "nsubj", "dobj", "op1"])
_NODES = st.sampled_from(["bind", "protein", "enzyme", "binds", "Ras"])
_PATH = st.lists(st.tuples(_LABELS, _NODES), min_size=1, max_size=5).map(
    lambda ts: Path([(None, ts[0][1]), *ts[1:]])
)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.tuples(_PATH, _PATH), min_size=2, max_size=6))
def test_view_kernels_symmetric_psd_and_equal_to_their_parts(pairs):
    X = [{"amr": a, "dependency": d} for a, d in pairs]
    pk = kernel("path", lam=0.7)
    ka, kd = ViewKernel(pk, "amr"), ViewKernel(pk, "dependency")
    Ka, Kd = pk.gram([a for a, _ in pairs]), pk.gram([d for _, d in pairs])
    for k, expected in ((ka + kd, Ka + Kd), (ka * kd, Ka * Kd)):
        K = k.gram(X)
        np.testing.assert_allclose(K, expected, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(K, K.T, atol=1e-12)
        assert np.linalg.eigvalsh(K).min() > -1e-8 * max(1.0, np.abs(K).max())
